//! Checked-in byte vectors: the wire contract must not change silently.
//!
//! If a change to the protocol is intended, bump `PROTOCOL_VERSION`, then
//! regenerate with `LATPROBE_BLESS=1 cargo test -p latprobe-protocol --test
//! golden` and review the diff of `tests/golden.txt`.
mod common;

use common::frame;
use latprobe_protocol::*;

fn cases() -> Vec<(&'static str, Vec<u8>)> {
    let mut samples = SampleBatchBuilder::new(100_000, 64);
    for (i, outcome) in
        [Outcome::Response(5_000), Outcome::Timeout, Outcome::Response(4_321), Outcome::Response(99_999)]
            .into_iter()
            .enumerate()
    {
        let i = i as u64;
        samples
            .push(&Sample {
                seq: 1000 + i,
                stimulus_tick: 7_000_000 + i * 100_000 + i * 3,
                outcome,
                // The timeout and the 99 999-tick answer went past a threshold.
                triggered: i == 1 || i == 3,
            })
            .unwrap();
    }
    let mut edges = EdgeBatchBuilder::new(64);
    for (i, tick) in [1_000_000u64, 1_100_007, 1_199_998, 1_300_001].into_iter().enumerate() {
        edges.push(&EdgeStamp { seq: i as u64, tick }).unwrap();
    }
    vec![
        ("host_hello", frame(&HostMsg::Hello { protocol_version: PROTOCOL_VERSION })),
        (
            "host_configure",
            frame(&HostMsg::Configure(Config {
                mode: Mode::UartEcho,
                interval_ticks: 100_000,
                dither_ticks: 1_000,
                timeout_ticks: 50_000,
                guard_ticks: 10_000,
                count: Some(2000),
                seed: 0x1234_5678,
                stimulus: Stimulus::Byte(0x55),
                trigger_ticks: 20_000,
            })),
        ),
        (
            "host_configure_identified",
            frame(&HostMsg::Configure(Config {
                mode: Mode::UartEcho,
                interval_ticks: 100_000,
                dither_ticks: 0,
                timeout_ticks: 800_000,
                guard_ticks: 10_000,
                count: None,
                seed: 1,
                stimulus: Stimulus::Identified,
                trigger_ticks: 0,
            })),
        ),
        (
            "host_configure_periodic",
            frame(&HostMsg::Configure(Config {
                mode: Mode::Periodic,
                interval_ticks: 100_000,
                dither_ticks: 0,
                timeout_ticks: 800_000,
                guard_ticks: 0,
                count: Some(5000),
                seed: 0,
                stimulus: Stimulus::None(ResponseLine::Gpio),
                trigger_ticks: 0,
            })),
        ),
        ("host_start", frame(&HostMsg::Start)),
        ("host_ping", frame(&HostMsg::Ping { nonce: 0xdead_beef })),
        (
            "probe_hello",
            frame(&ProbeMsg::Hello(ProbeInfo {
                protocol_version: PROTOCOL_VERSION,
                firmware_version: "0.1.0",
                board: "nucleo-f411re",
                timer_hz: 100_000_000,
                timer_bits: 32,
                capabilities: Capabilities::GPIO_ECHO | Capabilities::UART_ECHO | Capabilities::HW_CAPTURE,
                max_batch: 64,
                target_baud: 115_200,
                build_id: 0x1234_abcd,
            })),
        ),
        ("probe_samples", frame(&ProbeMsg::SampleBatch(samples.batch()))),
        ("probe_edges", frame(&ProbeMsg::EdgeBatch(edges.batch()))),
        (
            "probe_stopped",
            frame(&ProbeMsg::Stopped(Stopped {
                reason: StopReason::CountReached,
                end_tick: 1 << 33,
                taken: 2000,
                timeouts: 3,
                dropped: 0,
                overruns: 0,
                anomalies: Anomalies {
                    late: 1,
                    duplicates: 2,
                    unmatched: 3,
                    wrong_bytes: 4,
                    slipped: 5,
                    slip_max_ticks: 250_000,
                    slip_total_ticks: 600_000,
                    reclaimed: 0,
                    overcaptures: 6,
                    line_errors: 7,
                    soft_stimuli: 8,
                    host_rx_errors: 9,
                },
            })),
        ),
        (
            "probe_heartbeat",
            frame(&ProbeMsg::Heartbeat(Heartbeat {
                tick: 1 << 34,
                nonce: 0,
                running: true,
                taken: 12_345,
                dropped: 1,
                overruns: 2,
                rx_bad_frames: 3,
                anomalies: Anomalies { late: 4, line_errors: 5, host_rx_errors: 6, ..Anomalies::default() },
            })),
        ),
        (
            "probe_log",
            frame(&ProbeMsg::Log(LogLine {
                level: LogLevel::Warn,
                tick: 123_456_789,
                text: "no start-bit capture on PB10: software stimulus ticks",
            })),
        ),
        (
            "probe_error",
            frame(&ProbeMsg::Error(ErrorReport {
                code: ErrorCode::BadTimeout,
                detail: "timeout >= interval",
            })),
        ),
        (
            "probe_error_short_interval",
            frame(&ProbeMsg::Error(ErrorReport {
                code: ErrorCode::ShortInterval,
                detail: "need interval >= byte time + guard",
            })),
        ),
    ]
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn frames_match_checked_in_bytes() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden.txt");
    let now: String = cases().iter().map(|(name, bytes)| format!("{name} {}\n", hex(bytes))).collect();
    if std::env::var_os("LATPROBE_BLESS").is_some() {
        std::fs::write(path, &now).unwrap();
    }
    let want = std::fs::read_to_string(path).expect("tests/golden.txt is checked in");
    for (w, n) in want.lines().zip(now.lines()) {
        assert_eq!(n, w, "wire bytes changed; see this file's docs");
    }
    assert_eq!(want.lines().count(), now.lines().count());
}

#[test]
fn golden_frames_decode_back() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden.txt");
    let text = std::fs::read_to_string(path).unwrap();
    for line in text.lines() {
        let (name, h) = line.split_once(' ').unwrap();
        let bytes: Vec<u8> =
            (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap()).collect();
        let mut dec = FrameDecoder::<MAX_FRAME_LEN>::new();
        let frames = common::decode_all(&mut dec, &bytes, &[]);
        assert_eq!(frames.len(), 1, "{name}");
        if name.starts_with("host_") {
            decode_message::<HostMsg>(&frames[0]).unwrap_or_else(|e| panic!("{name}: {e}"));
        } else {
            decode_message::<ProbeMsg<'_>>(&frames[0]).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}
