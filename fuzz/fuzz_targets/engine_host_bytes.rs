//! The probe engine driven by arbitrary host bytes and board events: never a
//! panic, and everything it sends is whole, decodable frames.
//!
//! The input is a little program: each op byte picks an event (host bytes,
//! a stimulus, a capture with or without a byte, a poll, time passing), so
//! the fuzzer reaches running measurements, not only the decoder.
#![no_main]

use latprobe_firmware::{BoardInfo, Engine, TimerBits};
use latprobe_protocol::{
    decode_message, encode_message, Capabilities, Config, Feed, FrameDecoder, HostMsg, Mode, ProbeMsg,
    Stimulus, PROTOCOL_VERSION,
};
use libfuzzer_sys::fuzz_target;

fn drain(e: &mut Engine<1024>, host: &mut FrameDecoder) {
    let mut buf = [0u8; 300];
    loop {
        let n = e.read_tx(&mut buf);
        if n == 0 {
            return;
        }
        let mut input = &buf[..n];
        loop {
            match host.feed(input) {
                Feed::NeedMore => break,
                Feed::Frame { frame, rest } => {
                    decode_message::<ProbeMsg<'_>>(frame).expect("the engine sends only valid messages");
                    input = rest;
                }
                Feed::Bad { error, .. } => panic!("the engine sent a damaged frame: {error:?}"),
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let caps =
        Capabilities::GPIO_ECHO | Capabilities::UART_ECHO | Capabilities::PERIODIC | Capabilities::LOOPBACK;
    let mut e: Engine<1024> = Engine::new(BoardInfo::new("fuzz", 1_000_000, TimerBits::B64, caps));
    let mut host: FrameDecoder = FrameDecoder::new();
    let mut now = 1_000u64;
    let mut frame = [0u8; 256];
    let mut ops = data.iter().copied();
    while let Some(op) = ops.next() {
        let arg = ops.next().unwrap_or(0);
        match op % 8 {
            0 => {
                // Raw host bytes: up to `arg` of the rest of the input.
                let bytes: Vec<u8> = ops.by_ref().take(usize::from(arg)).collect();
                e.on_host_bytes(&bytes, now);
            }
            1 => {
                // A well-formed Configure built from the input, so runs start.
                let mode =
                    [Mode::GpioEcho, Mode::UartEcho, Mode::Periodic, Mode::Loopback][usize::from(arg % 4)];
                let stimulus = match arg / 4 % 4 {
                    0 => Stimulus::Identified,
                    1 => Stimulus::Byte(arg),
                    2 => Stimulus::Edge(latprobe_protocol::Edge::Rising),
                    _ => Stimulus::None(latprobe_protocol::ResponseLine::Uart),
                };
                let c = Config {
                    mode,
                    interval_ticks: 1000,
                    dither_ticks: u32::from(arg) * 3,
                    timeout_ticks: if stimulus == Stimulus::Identified { 8000 } else { 500 },
                    guard_ticks: 100,
                    count: (arg % 3 != 0).then_some(u64::from(arg) + 1),
                    seed: u64::from(arg),
                    stimulus,
                    trigger_ticks: 0,
                };
                for msg in [
                    HostMsg::Hello { protocol_version: PROTOCOL_VERSION },
                    HostMsg::Configure(c),
                    HostMsg::Start,
                ] {
                    let n = encode_message(&msg, &mut frame).expect("encodes");
                    e.on_host_bytes(&frame[..n], now);
                }
            }
            2 => {
                if let Some(req) = e.stimulus_request() {
                    now = now.max(req.at);
                    e.on_stimulus(now, now);
                }
            }
            3 => e.on_capture(now.saturating_sub(u64::from(arg)), now),
            4 => e.on_response_byte(now.saturating_sub(u64::from(arg) * 7), ops.next().unwrap_or(0), now),
            5 => now += u64::from(arg) * 97,
            6 => {
                if let Some(d) = e.next_deadline() {
                    now = now.max(d);
                }
            }
            _ => {
                let n = encode_message(&HostMsg::Stop, &mut frame).expect("encodes");
                e.on_host_bytes(&frame[..n], now);
            }
        }
        e.poll(now);
        drain(&mut e, &mut host);
    }
});
