//! Strategies shared by the protocol's property tests.
#![allow(dead_code)]

use latprobe_protocol::*;
use proptest::prelude::*;

pub fn mode() -> impl Strategy<Value = Mode> {
    prop::sample::select(Mode::ALL.to_vec())
}

pub fn stimulus() -> impl Strategy<Value = Stimulus> {
    prop_oneof![
        prop::sample::select(vec![Edge::Rising, Edge::Falling, Edge::Toggle]).prop_map(Stimulus::Edge),
        any::<u8>().prop_map(Stimulus::Byte),
        prop::sample::select(vec![ResponseLine::Gpio, ResponseLine::Uart]).prop_map(Stimulus::None),
        Just(Stimulus::Identified),
    ]
}

pub fn anomalies() -> impl Strategy<Value = Anomalies> {
    (any::<[u64; 9]>(), any::<[u32; 3]>()).prop_map(|(v, [overcaptures, line_errors, host_rx_errors])| {
        Anomalies {
            late: v[0],
            duplicates: v[1],
            unmatched: v[2],
            wrong_bytes: v[3],
            slipped: v[4],
            slip_max_ticks: v[5],
            slip_total_ticks: v[6],
            reclaimed: v[7],
            overcaptures,
            line_errors,
            soft_stimuli: v[8],
            host_rx_errors,
        }
    })
}

pub fn config() -> impl Strategy<Value = Config> {
    (
        mode(),
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        any::<Option<u64>>(),
        any::<u64>(),
        stimulus(),
    )
        .prop_map(
            |(mode, interval_ticks, dither_ticks, timeout_ticks, guard_ticks, count, seed, stimulus)| {
                Config {
                    mode,
                    interval_ticks,
                    dither_ticks,
                    timeout_ticks,
                    guard_ticks,
                    count,
                    seed,
                    stimulus,
                    trigger_ticks: 0,
                }
            },
        )
}

pub fn host_msg() -> impl Strategy<Value = HostMsg> {
    prop_oneof![
        any::<u8>().prop_map(|protocol_version| HostMsg::Hello { protocol_version }),
        config().prop_map(HostMsg::Configure),
        Just(HostMsg::Start),
        Just(HostMsg::Stop),
        any::<u32>().prop_map(|nonce| HostMsg::Ping { nonce }),
    ]
}

pub fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![1 => Just(Outcome::Timeout), 9 => any::<u32>().prop_map(Outcome::Response)]
}

/// Contiguous samples with increasing stimulus ticks near `interval`.
pub fn samples(max: usize) -> impl Strategy<Value = (u32, Vec<Sample>)> {
    (
        any::<u64>(),
        1u32..10_000_000,
        0u64..1u64 << 50,
        prop::collection::vec((0u32..1_000_000, outcome()), 1..max),
    )
        .prop_map(|(first_seq, interval, base, items)| {
            let first_seq = first_seq >> 1;
            let mut tick = base;
            let samples = items
                .into_iter()
                .enumerate()
                .map(|(i, (jitter, outcome))| {
                    if i > 0 {
                        tick += u64::from(interval) + u64::from(jitter);
                    }
                    Sample {
                        seq: first_seq + i as u64,
                        stimulus_tick: tick,
                        outcome,
                        triggered: false,
                        late_ticks: 0,
                        omitted: 0,
                    }
                })
                .collect();
            (interval, samples)
        })
}

/// Contiguous edges with increasing ticks, jittered periods.
pub fn edges(max: usize) -> impl Strategy<Value = Vec<EdgeStamp>> {
    (any::<u64>(), 0u64..1u64 << 50, 1u64..100_000_000, prop::collection::vec(0u64..10_000, 1..max)).prop_map(
        |(first_seq, base, period, jitters)| {
            let first_seq = first_seq >> 1;
            let mut tick = base;
            jitters
                .into_iter()
                .enumerate()
                .map(|(i, j)| {
                    if i > 0 {
                        tick += period + j;
                    }
                    EdgeStamp { seq: first_seq + i as u64, tick }
                })
                .collect()
        },
    )
}

/// Encode one message into a fresh frame.
pub fn frame<T: serde::Serialize>(msg: &T) -> Vec<u8> {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = encode_message(msg, &mut buf).expect("message fits a frame");
    buf[..n].to_vec()
}

/// Feed `bytes` in the given chunk sizes; collect intact frames' bytes.
pub fn decode_all(dec: &mut FrameDecoder, bytes: &[u8], chunks: &[usize]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut ci = 0;
    while pos < bytes.len() {
        let n = if chunks.is_empty() { bytes.len() } else { chunks[ci % chunks.len()].max(1) };
        ci += 1;
        let end = (pos + n).min(bytes.len());
        let mut input = &bytes[pos..end];
        pos = end;
        loop {
            match dec.feed(input) {
                Feed::NeedMore => break,
                Feed::Frame { frame, rest } => {
                    out.push(frame.to_vec());
                    input = rest;
                }
                Feed::Bad { rest, .. } => input = rest,
            }
        }
    }
    out
}
