//! The host's frame decoder and message/batch decoding on arbitrary bytes in
//! arbitrary chunks: never a panic, and every frame it yields decodes or is
//! refused with an error.
#![no_main]

use latprobe_protocol::{decode_message, Feed, FrameDecoder, ProbeMsg};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the chunk size, so chunk boundaries fall
    // everywhere.
    let Some((&chunk, bytes)) = data.split_first() else { return };
    let chunk = usize::from(chunk).max(1);
    let mut dec: FrameDecoder = FrameDecoder::new();
    for piece in bytes.chunks(chunk) {
        let mut input = piece;
        loop {
            match dec.feed(input) {
                Feed::NeedMore => break,
                Feed::Frame { frame, rest } => {
                    if let Ok(msg) = decode_message::<ProbeMsg<'_>>(frame) {
                        match msg {
                            ProbeMsg::SampleBatch(b) => b.iter().for_each(drop),
                            ProbeMsg::EdgeBatch(b) => b.iter().for_each(drop),
                            _ => {}
                        }
                    }
                    input = rest;
                }
                Feed::Bad { rest, .. } => input = rest,
            }
        }
    }
});
