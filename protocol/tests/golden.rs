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
                // The last one waited 2 500 ticks for its slot, and the one
                // before it an interval and a half: one instant got no
                // stimulus.
                late_ticks: [0, 0, 150_000, 2_500][i as usize],
                omitted: u32::from(i == 2),
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

/// Protocol 4's probe frames (`tests/golden_v4.txt`, the bytes this file
/// checked in before protocol 5, never re-blessed) still decode through
/// [`decode_probe_message`], as an older raw file holds them: the sample
/// batch with its samples as they were and no wait, every other message
/// as protocol 5 has it. `decode_message` refuses them (another version).
#[test]
fn protocol_4_probe_frames_still_decode() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden_v4.txt");
    let text = std::fs::read_to_string(path).expect("tests/golden_v4.txt is checked in");
    let mut probe_frames = 0;
    for line in text.lines().filter(|l| l.starts_with("probe_")) {
        let (name, h) = line.split_once(' ').unwrap();
        let bytes: Vec<u8> =
            (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap()).collect();
        let mut dec = FrameDecoder::<MAX_FRAME_LEN>::new();
        let frames = common::decode_all(&mut dec, &bytes, &[]);
        assert_eq!(frames[0][0], 4, "{name} is a protocol 4 frame");
        assert_eq!(
            decode_message::<ProbeMsg<'_>>(&frames[0]).err(),
            Some(MessageError::VersionMismatch { ours: PROTOCOL_VERSION, theirs: 4 }),
            "{name}"
        );
        let msg = decode_probe_message(&frames[0]).unwrap_or_else(|e| panic!("{name}: {e}"));
        probe_frames += 1;
        if let ProbeMsg::SampleBatch(b) = msg {
            let got: Vec<Sample> = b.iter().map(Result::unwrap).collect();
            let want: Vec<(u64, u64, Outcome, bool)> = [
                Outcome::Response(5_000),
                Outcome::Timeout,
                Outcome::Response(4_321),
                Outcome::Response(99_999),
            ]
            .into_iter()
            .enumerate()
            .map(|(i, o)| (1000 + i as u64, 7_000_000 + i as u64 * 100_003, o, i == 1 || i == 3))
            .collect();
            let got_plain: Vec<_> =
                got.iter().map(|s| (s.seq, s.stimulus_tick, s.outcome, s.triggered)).collect();
            assert_eq!(got_plain, want);
            assert!(got.iter().all(|s| !s.waited()), "{got:?}");
        }
        if let ProbeMsg::Hello(h) = msg {
            assert_eq!(h.protocol_version, 4);
        }
    }
    assert_eq!(probe_frames, 8);
}

/// A frame of protocol 5 with a sample that waited reads back its wait; a
/// protocol 3 frame is refused as another version, not misread.
#[test]
fn waits_round_trip_and_older_versions_are_refused() {
    let mut b = SampleBatchBuilder::new(1_000, 64);
    let w = Sample {
        seq: 7,
        stimulus_tick: 50_000,
        outcome: Outcome::Response(30),
        triggered: false,
        late_ticks: 20_500,
        omitted: 20,
    };
    b.push(&Sample { seq: 6, stimulus_tick: 29_000, late_ticks: 0, omitted: 0, ..w }).unwrap();
    b.push(&w).unwrap();
    let f = frame(&ProbeMsg::SampleBatch(b.batch()));
    let mut dec = FrameDecoder::<MAX_FRAME_LEN>::new();
    let frames = common::decode_all(&mut dec, &f, &[]);
    let Ok(ProbeMsg::SampleBatch(got)) = decode_probe_message(&frames[0]) else { panic!("a batch") };
    assert_eq!(got.waited, 0b10);
    let got: Vec<Sample> = got.iter().map(Result::unwrap).collect();
    assert_eq!(got[1], w);
    assert!(!got[0].waited());
    let mut old = frames[0].clone();
    old[0] = 3;
    assert_eq!(
        decode_probe_message(&old).err(),
        Some(MessageError::VersionMismatch { ours: PROTOCOL_VERSION, theirs: 3 })
    );
}
