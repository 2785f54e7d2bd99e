//! The streaming decoder never panics and recovers every intact frame that
//! follows garbage, truncation, bit flips or any chunking.
mod common;

use common::*;
use latprobe_protocol::*;
use proptest::prelude::*;

/// A varied stream of real frames: heartbeats and sample batches.
fn frames(n: usize, salt: u64) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let i = i as u64;
            if i % 3 == 0 {
                frame(&ProbeMsg::Heartbeat(Heartbeat {
                    tick: salt.wrapping_mul(i + 1),
                    nonce: i as u32,
                    running: true,
                    taken: i,
                    dropped: 0,
                    overruns: 0,
                    rx_bad_frames: 0,
                    anomalies: Anomalies { late: i, ..Anomalies::default() },
                }))
            } else {
                let mut b = SampleBatchBuilder::new(100_000, 64);
                for k in 0..(i % 40 + 1) {
                    let lat = (salt.wrapping_add(k * 7919) % 100_000) as u32;
                    let outcome = if lat % 17 == 0 { Outcome::Timeout } else { Outcome::Response(lat) };
                    b.push(&Sample {
                        seq: i * 100 + k,
                        stimulus_tick: 1 << 40 | (k * 100_003),
                        outcome,
                        triggered: false,
                        late_ticks: 0,
                        omitted: 0,
                    })
                    .unwrap();
                }
                frame(&ProbeMsg::SampleBatch(b.batch()))
            }
        })
        .collect()
}

fn chunks() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..300, 1..20)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Any chunking yields exactly the frames sent, in order.
    #[test]
    fn any_chunking(salt: u64, n in 1usize..30, ch in chunks()) {
        let fs = frames(n, salt);
        let stream: Vec<u8> = fs.concat();
        let mut dec = FrameDecoder::<MAX_FRAME_LEN>::new();
        let got = decode_all(&mut dec, &stream, &ch);
        let want: Vec<Vec<u8>> = fs.iter().map(|f| decode_all(&mut FrameDecoder::<MAX_FRAME_LEN>::new(), f, &[]).remove(0)).collect();
        prop_assert_eq!(got, want);
        prop_assert_eq!(dec.stats().bad_frames, 0);
        prop_assert_eq!(dec.stats().skipped_bytes, 0);
    }

    /// Random garbage never panics, and a frame sent after it is recovered.
    #[test]
    fn garbage_then_frame(garbage in prop::collection::vec(any::<u8>(), 0..2000), salt: u64, ch in chunks()) {
        let fs = frames(4, salt);
        let mut stream = garbage.clone();
        stream.extend(fs.concat());
        let mut dec = FrameDecoder::<MAX_FRAME_LEN>::new();
        let got = decode_all(&mut dec, &stream, &ch);
        // Garbage may by chance hold a valid frame (CRC-32 makes that
        // vanishingly rare); the real frames must all be the last ones.
        prop_assert!(got.len() >= 4);
        let tail = &got[got.len() - 4..];
        for (g, f) in tail.iter().zip(&fs) {
            let mut one = FrameDecoder::<MAX_FRAME_LEN>::new();
            prop_assert_eq!(g, &decode_all(&mut one, f, &[])[0]);
        }
        for g in &got {
            // Every intact frame parses or is a typed error: no panic.
            let _ = decode_message::<ProbeMsg<'_>>(g);
        }
        if !garbage.is_empty() && got.len() == 4 {
            prop_assert!(dec.stats().skipped_bytes > 0 || garbage.iter().all(|&b| b == 0));
        }
    }

    /// Frames cut short anywhere: every intact frame after the cut survives.
    #[test]
    fn truncation(salt: u64, n in 2usize..20, victim_frac in 0.0f64..1.0, cut_frac in 0.0f64..1.0, ch in chunks()) {
        let fs = frames(n, salt);
        let victim = ((n as f64 * victim_frac) as usize).min(n - 1);
        let mut stream = Vec::new();
        for (i, f) in fs.iter().enumerate() {
            if i == victim {
                // Keep at most len-2 bytes: losing only the closing delimiter
                // leaves an intact frame that the next one's opening delimiter
                // closes, which is recovery, not damage.
                let keep = ((f.len() as f64 * cut_frac) as usize).min(f.len() - 2);
                stream.extend_from_slice(&f[..keep]);
            } else {
                stream.extend_from_slice(f);
            }
        }
        let mut dec = FrameDecoder::<MAX_FRAME_LEN>::new();
        let got = decode_all(&mut dec, &stream, &ch);
        let want: Vec<Vec<u8>> = fs
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != victim)
            .map(|(_, f)| decode_all(&mut FrameDecoder::<MAX_FRAME_LEN>::new(), f, &[]).remove(0))
            .collect();
        prop_assert_eq!(got, want);
    }

    /// A bit flipped anywhere loses at most the frame it hit: every other
    /// frame comes through, and the damaged one is counted, never yielded.
    #[test]
    fn bit_flips(salt: u64, n in 2usize..20, flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4), ch in chunks()) {
        let fs = frames(n, salt);
        let mut bounds = Vec::new();
        let mut stream = Vec::new();
        for f in &fs {
            bounds.push((stream.len(), stream.len() + f.len()));
            stream.extend_from_slice(f);
        }
        let mut hit = vec![false; n];
        for (idx, bit) in &flips {
            let pos = idx.index(stream.len());
            stream[pos] ^= 1 << bit;
            for (i, &(s, e)) in bounds.iter().enumerate() {
                if pos >= s && pos < e {
                    hit[i] = true;
                }
            }
        }
        let mut dec = FrameDecoder::<MAX_FRAME_LEN>::new();
        let got = decode_all(&mut dec, &stream, &ch);
        let originals: Vec<Vec<u8>> =
            fs.iter().map(|f| decode_all(&mut FrameDecoder::<MAX_FRAME_LEN>::new(), f, &[]).remove(0)).collect();
        // What comes out is the originals in order, minus some hit ones: a
        // flip that only touched a delimiter can leave its frame intact.
        let mut next = 0;
        for g in &got {
            loop {
                prop_assert!(next < n, "decoder yielded a frame that was never sent");
                next += 1;
                if &originals[next - 1] == g {
                    break;
                }
                prop_assert!(hit[next - 1], "intact frame {} lost", next - 1);
            }
        }
        for (i, &h) in hit.iter().enumerate().skip(next) {
            prop_assert!(h, "intact frame {} lost at the end", i);
        }
        // A frame lost is either counted as bad or, when the flip hit the
        // stream's final delimiter, still held waiting for its end.
        if got.len() < n {
            prop_assert!(dec.stats().bad_frames >= 1 || dec.pending() > 0, "a dropped frame must be counted");
        }
    }
}

#[test]
fn oversized_run_is_counted_and_recovered() {
    let mut stream = vec![0x55u8; 5000];
    let f = frame(&HostMsg::Start);
    stream.extend_from_slice(&f);
    let mut dec = FrameDecoder::<MAX_FRAME_LEN>::new();
    let got = decode_all(&mut dec, &stream, &[7]);
    assert_eq!(got.len(), 1);
    assert_eq!(decode_message::<HostMsg>(&got[0]), Ok(HostMsg::Start));
    let s = dec.stats();
    assert_eq!(s.bad_frames, 1);
    assert_eq!(s.skipped_bytes, 5000);
    assert_eq!(s.frames, 1);
}

#[test]
fn version_mismatch_is_typed() {
    // Re-frame a valid body under another version byte, with a valid CRC.
    let f = frame(&HostMsg::Stop);
    let mut dec = FrameDecoder::<MAX_FRAME_LEN>::new();
    let mut raw = decode_all(&mut dec, &f, &[]).remove(0);
    raw[0] = PROTOCOL_VERSION + 1;
    let crc = framing::CRC.checksum(&raw);
    raw.extend_from_slice(&crc.to_le_bytes());
    let mut out = [0u8; MAX_FRAME_LEN];
    let n = framing::encode_raw(&raw, &mut out).unwrap();
    let got = decode_all(&mut dec, &out[..n], &[]);
    assert_eq!(
        decode_message::<HostMsg>(&got[0]),
        Err(MessageError::VersionMismatch { ours: PROTOCOL_VERSION, theirs: PROTOCOL_VERSION + 1 })
    );
}

#[test]
fn intact_frame_of_nonsense_is_malformed_not_a_panic() {
    let mut raw = vec![PROTOCOL_VERSION, 0xee, 0xff, 0x01];
    let crc = framing::CRC.checksum(&raw);
    raw.extend_from_slice(&crc.to_le_bytes());
    let mut out = [0u8; MAX_FRAME_LEN];
    let n = framing::encode_raw(&raw, &mut out).unwrap();
    let mut dec = FrameDecoder::<MAX_FRAME_LEN>::new();
    let got = decode_all(&mut dec, &out[..n], &[]);
    assert_eq!(decode_message::<HostMsg>(&got[0]), Err(MessageError::Malformed));
    assert_eq!(decode_message::<ProbeMsg<'_>>(&got[0]), Err(MessageError::Malformed));
}

#[test]
fn largest_messages_fit_a_frame() {
    let big = "x".repeat(MAX_ERROR_DETAIL);
    let f = frame(&ProbeMsg::Error(ErrorReport { code: ErrorCode::Internal, detail: &big }));
    assert!(f.len() <= MAX_FRAME_LEN);
    let data = [0xffu8; MAX_BATCH_DATA];
    let msg = ProbeMsg::SampleBatch(SampleBatch {
        first_seq: u64::MAX,
        base_tick: u64::MAX,
        interval_ticks: u32::MAX,
        count: u16::MAX,
        triggered: u64::MAX,
        waited: u64::MAX,
        data: &data,
    });
    assert!(frame(&msg).len() <= MAX_FRAME_LEN);
    let mut out = [0u8; MAX_FRAME_LEN];
    let too_big = [0u8; MAX_MESSAGE_LEN + 1];
    assert_eq!(
        encode_message(
            &ProbeMsg::EdgeBatch(EdgeBatch { first_seq: 0, base_tick: 0, count: 0, data: &too_big }),
            &mut out
        ),
        Err(EncodeError::MessageTooLong)
    );
    assert_eq!(encode_message(&HostMsg::Start, &mut out[..4]), Err(EncodeError::BufferTooSmall));
}

#[test]
fn cobs_edge_cases_round_trip() {
    // Runs of 253, 254 and 255 non-zero bytes and all-zero bodies exercise
    // the COBS block boundaries.
    for len in [0usize, 1, 252, 253, 254, 255, 300] {
        for fill in [0u8, 1, 0xff] {
            let data = vec![fill; len.min(MAX_BATCH_DATA)];
            let msg = ProbeMsg::EdgeBatch(EdgeBatch { first_seq: 1, base_tick: 2, count: 3, data: &data });
            let f = frame(&msg);
            let mut dec = FrameDecoder::<MAX_FRAME_LEN>::new();
            let got = decode_all(&mut dec, &f, &[]);
            assert_eq!(decode_message::<ProbeMsg<'_>>(&got[0]), Ok(msg));
        }
    }
    // Raw blocks straight through the stuffing, beyond message limits.
    for len in [253usize, 254, 255] {
        let raw: Vec<u8> = (0..len).map(|i| (i % 255 + 1) as u8).collect();
        let mut out = [0u8; 600];
        let n = framing::encode_raw(&raw, &mut out).unwrap();
        assert_eq!(out[0], 0);
        assert_eq!(out[n - 1], 0);
        assert!(out[1..n - 1].iter().all(|&b| b != 0));
    }
}
