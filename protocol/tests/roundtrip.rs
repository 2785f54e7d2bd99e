//! Every message survives encode → frame → decode unchanged.
mod common;

use common::*;
use latprobe_protocol::*;
use proptest::prelude::*;

fn round_trip_host(msg: HostMsg) {
    let bytes = frame(&msg);
    assert!(bytes.len() <= MAX_FRAME_LEN);
    let mut dec = FrameDecoder::<MAX_FRAME_LEN>::new();
    let frames = decode_all(&mut dec, &bytes, &[]);
    assert_eq!(frames.len(), 1);
    assert_eq!(decode_message::<HostMsg>(&frames[0]), Ok(msg));
}

fn round_trip_probe(msg: ProbeMsg<'_>) {
    let bytes = frame(&msg);
    assert!(bytes.len() <= MAX_FRAME_LEN, "{} bytes", bytes.len());
    let mut dec = FrameDecoder::<MAX_FRAME_LEN>::new();
    let frames = decode_all(&mut dec, &bytes, &[]);
    assert_eq!(frames.len(), 1);
    assert_eq!(decode_message::<ProbeMsg<'_>>(&frames[0]), Ok(msg));
}

proptest! {
    #[test]
    fn host_messages(msg in host_msg()) {
        round_trip_host(msg);
    }

    #[test]
    fn hello(fw in "[ -~]{0,24}", board in "[a-z0-9-]{0,24}", hz: u32, bits: u8, caps: u32, max_batch: u16, v: u8, target_baud: u32, build_id: u32) {
        round_trip_probe(ProbeMsg::Hello(ProbeInfo {
            protocol_version: v,
            firmware_version: &fw,
            board: &board,
            timer_hz: hz,
            timer_bits: bits,
            capabilities: Capabilities(caps),
            max_batch,
            target_baud,
            build_id,
        }));
    }

    #[test]
    fn configured(c in config()) {
        round_trip_probe(ProbeMsg::Configured(c));
    }

    #[test]
    fn started(start_tick: u64, first_seq: u64) {
        round_trip_probe(ProbeMsg::Started { start_tick, first_seq });
    }

    #[test]
    fn heartbeat(tick: u64, nonce: u32, running: bool, taken: u64, dropped: u64, overruns: u32, rx_bad_frames: u32, anomalies in anomalies()) {
        round_trip_probe(ProbeMsg::Heartbeat(Heartbeat { tick, nonce, running, taken, dropped, overruns, rx_bad_frames, anomalies }));
    }

    #[test]
    fn stopped(r in 0..3u8, end_tick: u64, taken: u64, timeouts: u64, dropped: u64, overruns: u32, anomalies in anomalies()) {
        let reason = [StopReason::CountReached, StopReason::HostStop, StopReason::Fault][r as usize];
        round_trip_probe(ProbeMsg::Stopped(Stopped { reason, end_tick, taken, timeouts, dropped, overruns, anomalies }));
    }

    #[test]
    fn log(level in 0usize..3, tick: u64, text in "[ -~]{0,96}") {
        let level = [LogLevel::Info, LogLevel::Warn, LogLevel::Error][level];
        round_trip_probe(ProbeMsg::Log(LogLine { level, tick, text: &text }));
    }

    #[test]
    fn error(code in 0usize..13, detail in "[ -~]{0,48}") {
        let codes = [
            ErrorCode::BadFrame, ErrorCode::VersionMismatch, ErrorCode::BadMessage, ErrorCode::ZeroInterval,
            ErrorCode::BadTimeout, ErrorCode::BadDither, ErrorCode::ZeroCount, ErrorCode::UnsupportedMode,
            ErrorCode::BadStimulus, ErrorCode::NotConfigured, ErrorCode::Busy, ErrorCode::NotRunning,
            ErrorCode::Internal,
        ];
        round_trip_probe(ProbeMsg::Error(ErrorReport { code: codes[code], detail: &detail }));
    }

    /// Samples pushed until the batch is full come back exactly, and the
    /// full batch still fits one frame.
    #[test]
    fn sample_batches((interval, samples) in samples(200), max in 1u16..=MAX_BATCH_COUNT) {
        let mut b = SampleBatchBuilder::new(interval, max);
        let mut pushed = Vec::new();
        for s in &samples {
            match b.push(s) {
                Ok(()) => pushed.push(*s),
                Err(BatchError::Full) => break,
                Err(e) => panic!("{e}"),
            }
        }
        prop_assert!(!pushed.is_empty());
        prop_assert!(b.len() <= max);
        let batch = b.batch();
        let back: Result<Vec<Sample>, _> = batch.iter().collect();
        prop_assert_eq!(back.unwrap(), pushed);
        round_trip_probe(ProbeMsg::SampleBatch(batch));
    }

    #[test]
    fn edge_batches(edges in edges(200)) {
        let mut b = EdgeBatchBuilder::new(MAX_BATCH_COUNT);
        let mut pushed = Vec::new();
        for e in &edges {
            match b.push(e) {
                Ok(()) => pushed.push(*e),
                Err(BatchError::Full) => break,
                Err(e) => panic!("{e}"),
            }
        }
        let batch = b.batch();
        let back: Result<Vec<EdgeStamp>, _> = batch.iter().collect();
        prop_assert_eq!(back.unwrap(), pushed);
        round_trip_probe(ProbeMsg::EdgeBatch(batch));
    }

    /// Arbitrary batch bytes never panic the iterators.
    #[test]
    fn garbage_batch_data_never_panics(data in prop::collection::vec(any::<u8>(), 0..64), count: u16, base: u64, iv: u32) {
        let sb = SampleBatch { first_seq: u64::MAX - 3, base_tick: base, interval_ticks: iv, count, triggered: 0, waited: 0, data: &data };
        let _ = sb.iter().count();
        let eb = EdgeBatch { first_seq: u64::MAX - 3, base_tick: base, count, data: &data };
        let _ = eb.iter().count();
    }
}

#[test]
fn triggered_flags_travel_per_sample_for_a_byte_a_batch() {
    let flag = |i: u64| i % 7 == 3 || i == 63;
    let mut b = SampleBatchBuilder::new(1000, 64);
    for i in 0..64u64 {
        let s = Sample {
            seq: 10 + i,
            stimulus_tick: 5 + i * 1000,
            outcome: Outcome::Response(3),
            triggered: flag(i),
            late_ticks: 0,
            omitted: 0,
        };
        b.push(&s).unwrap();
    }
    let batch = b.batch();
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = encode_message(&ProbeMsg::SampleBatch(batch), &mut buf).unwrap();
    assert!(n <= MAX_FRAME_LEN);
    let got: Vec<bool> = batch.iter().map(|s| s.unwrap().triggered).collect();
    assert_eq!(got, (0..64).map(flag).collect::<Vec<_>>());
    // Nothing triggered: the bits cost one byte over a batch without them.
    let plain = |t: bool| {
        let mut b = SampleBatchBuilder::new(1000, 64);
        b.push(&Sample {
            seq: 0,
            stimulus_tick: 0,
            outcome: Outcome::Timeout,
            triggered: t,
            late_ticks: 0,
            omitted: 0,
        })
        .unwrap();
        let mut buf = [0u8; MAX_FRAME_LEN];
        encode_message(&ProbeMsg::SampleBatch(b.batch()), &mut buf).unwrap()
    };
    assert_eq!(plain(false), plain(true));
    // A cleared builder forgets the flags.
    b.clear();
    b.push(&Sample {
        seq: 0,
        stimulus_tick: 0,
        outcome: Outcome::Timeout,
        triggered: false,
        late_ticks: 0,
        omitted: 0,
    })
    .unwrap();
    assert_eq!(b.batch().triggered, 0);
}

#[test]
fn builder_refuses_gaps_and_backwards_ticks() {
    let mut b = SampleBatchBuilder::new(100, 8);
    b.push(&Sample {
        seq: 5,
        stimulus_tick: 1000,
        outcome: Outcome::Response(7),
        triggered: false,
        late_ticks: 0,
        omitted: 0,
    })
    .unwrap();
    assert_eq!(
        b.push(&Sample {
            seq: 7,
            stimulus_tick: 1100,
            outcome: Outcome::Timeout,
            triggered: false,
            late_ticks: 0,
            omitted: 0
        }),
        Err(BatchError::NotContiguous { expected: 6, got: 7 })
    );
    assert_eq!(
        b.push(&Sample {
            seq: 6,
            stimulus_tick: 999,
            outcome: Outcome::Timeout,
            triggered: false,
            late_ticks: 0,
            omitted: 0
        }),
        Err(BatchError::Backwards)
    );
    assert_eq!(b.len(), 1);
    for i in 0..7 {
        b.push(&Sample {
            seq: 6 + i,
            stimulus_tick: 1100 + 100 * i,
            outcome: Outcome::Timeout,
            triggered: false,
            late_ticks: 0,
            omitted: 0,
        })
        .unwrap();
    }
    assert!(b.is_full());
    assert_eq!(
        b.push(&Sample {
            seq: 13,
            stimulus_tick: 9000,
            outcome: Outcome::Timeout,
            triggered: false,
            late_ticks: 0,
            omitted: 0
        }),
        Err(BatchError::Full)
    );
    b.clear();
    assert!(b.is_empty());
}

#[test]
fn timeout_is_distinct_from_every_latency() {
    let mut b = SampleBatchBuilder::new(10, 4);
    b.push(&Sample {
        seq: 0,
        stimulus_tick: 0,
        outcome: Outcome::Response(u32::MAX),
        triggered: false,
        late_ticks: 0,
        omitted: 0,
    })
    .unwrap();
    b.push(&Sample {
        seq: 1,
        stimulus_tick: 10,
        outcome: Outcome::Timeout,
        triggered: false,
        late_ticks: 0,
        omitted: 0,
    })
    .unwrap();
    b.push(&Sample {
        seq: 2,
        stimulus_tick: 20,
        outcome: Outcome::Response(0),
        triggered: false,
        late_ticks: 0,
        omitted: 0,
    })
    .unwrap();
    let v: Vec<_> = b.batch().iter().map(|s| s.unwrap().outcome).collect();
    assert_eq!(v, [Outcome::Response(u32::MAX), Outcome::Timeout, Outcome::Response(0)]);
}

#[test]
fn malformed_batches_are_errors() {
    let sb = SampleBatch {
        first_seq: 0,
        base_tick: 0,
        interval_ticks: 1,
        count: 2,
        triggered: 0,
        waited: 0,
        data: &[1],
    };
    let v: Vec<_> = sb.iter().collect();
    assert_eq!(v[1], Err(BatchError::Truncated));
    let sb = SampleBatch {
        first_seq: 0,
        base_tick: 0,
        interval_ticks: 1,
        count: 1,
        triggered: 0,
        waited: 0,
        data: &[1, 1],
    };
    let v: Vec<_> = sb.iter().collect();
    assert_eq!(
        v,
        [
            Ok(Sample {
                seq: 0,
                stimulus_tick: 0,
                outcome: Outcome::Response(0),
                triggered: false,
                late_ticks: 0,
                omitted: 0
            }),
            Err(BatchError::TrailingData)
        ]
    );
}
