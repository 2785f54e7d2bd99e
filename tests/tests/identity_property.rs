//! Property: whatever the target does (answers late or never, answers twice,
//! bytes that are no identity in between), the engine never times an answer
//! against the wrong stimulus.
//!
//! The target model is a tty: answers come in stimulus order (a duplicate
//! right after its original), at any latency up to 12 intervals; foreign
//! bytes (outside the identity alphabet) arrive at any time. The oracle is
//! the target's own record: a sample's latency must land exactly on the
//! arrival of *its* stimulus's first answer, and a timeout must be a
//! stimulus with no answer within the horizon. Every byte delivered during
//! the run is accounted for exactly once: timed, late, duplicate, unmatched
//! or wrong.

use std::collections::BTreeMap;

use latprobe_firmware::{BoardInfo, Engine, TimerBits};
use latprobe_protocol::{
    encode_message, identity_byte, Capabilities, Config, HostMsg, Mode, Outcome, Stimulus, IDENTITY_ALPHABET,
    PROTOCOL_VERSION,
};
use latprobe_tests::host::HostSide;
use proptest::prelude::*;

const I: u64 = 1_000; // interval, ticks of a 1 MHz timer

/// What the target does with stimulus k.
#[derive(Debug, Clone)]
struct Reply {
    dropped: bool,
    latency: u64,
    duplicates: u8,
}

fn reply() -> impl Strategy<Value = Reply> {
    (
        prop::bool::weighted(0.1),
        // Mostly fast, sometimes past the interval, sometimes past the horizon.
        prop_oneof![6 => 1..200u64, 3 => 200..3 * I, 2 => 3 * I..12 * I],
        prop_oneof![8 => Just(0u8), 1 => 1..3u8],
    )
        .prop_map(|(dropped, latency, duplicates)| Reply { dropped, latency, duplicates })
}

fn foreign_byte() -> impl Strategy<Value = u8> {
    any::<u8>().prop_filter("not an identity", |b| !IDENTITY_ALPHABET.contains(b))
}

fn send(e: &mut Engine, msg: &HostMsg, now: u64) {
    let mut buf = [0u8; 256];
    let n = encode_message(msg, &mut buf).unwrap();
    e.on_host_bytes(&buf[..n], now);
}

fn drain(e: &mut Engine, host: &mut HostSide) {
    let mut buf = [0u8; 512];
    loop {
        let n = e.read_tx(&mut buf);
        if n == 0 {
            break;
        }
        host.feed(&buf[..n]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn no_answer_is_ever_timed_against_another_stimulus(
        replies in prop::collection::vec(reply(), 20..120),
        foreign in prop::collection::vec((0..150 * I, foreign_byte()), 0..40),
        timeout in 1..(85 * I / 10),
        dither_share in 0u64..=100,
        seed: u64,
    ) {
        let n = replies.len() as u64;
        let guard = 100;
        let dither = (9 * I - timeout - guard) * dither_share / 100;
        let config = Config {
            mode: Mode::UartEcho,
            interval_ticks: I as u32,
            dither_ticks: dither as u32,
            timeout_ticks: timeout as u32,
            guard_ticks: guard as u32,
            count: Some(n),
            seed,
            stimulus: Stimulus::Identified,
            trigger_ticks: 0,
        };
        let caps = Capabilities::UART_ECHO | Capabilities::EMULATED;
        let mut e: Engine = Engine::new(BoardInfo::new("prop", 1_000_000, TimerBits::B64, caps));
        let mut host = HostSide::new();
        let mut now = 10;
        send(&mut e, &HostMsg::Hello { protocol_version: PROTOCOL_VERSION }, now);
        send(&mut e, &HostMsg::Configure(config), now);
        send(&mut e, &HostMsg::Start, now);
        let t0 = now;

        // Bytes on the response line: time → bytes, in order.
        let mut line: BTreeMap<(u64, u64), u8> = BTreeMap::new();
        let mut order = 0u64;
        for (t, b) in &foreign {
            line.insert((t0 + t, order), *b);
            order += 1;
        }
        let mut fired: Vec<u64> = Vec::new();
        let mut first_answer: Vec<Option<u64>> = Vec::new();
        let mut last_on_line = 0u64;
        let mut delivered_running = 0u64;
        for _ in 0..1_000_000 {
            if host.stopped.is_some() {
                break;
            }
            // The next event: a requested stimulus, a byte, or a deadline.
            let req = e.stimulus_request();
            let t_req = req.map(|r| r.at.max(now));
            let t_byte = line.keys().next().map(|k| k.0.max(now));
            let t_dead = e.next_deadline().map(|d| d.max(now));
            let t = [t_req, t_byte, t_dead].into_iter().flatten().min().expect("something pending");
            now = t;
            if t_byte == Some(t) {
                let (&key, &b) = line.iter().next().unwrap();
                line.remove(&key);
                e.on_response_byte(key.0, b, now);
                delivered_running += 1;
            } else if t_req == Some(t) {
                let r = req.unwrap();
                let k = r.seq as usize;
                prop_assert_eq!(k, fired.len(), "stimuli in order");
                prop_assert_eq!(r.stimulus, Stimulus::Byte(identity_byte(r.seq)));
                e.on_stimulus(now, now);
                fired.push(now);
                let rep = &replies[k];
                if rep.dropped {
                    first_answer.push(None);
                } else {
                    // In order: never before the previous byte on the line.
                    let at = (now + rep.latency).max(last_on_line + 1);
                    first_answer.push(Some(at));
                    line.insert((at, order), identity_byte(r.seq));
                    order += 1;
                    last_on_line = at;
                    for _ in 0..rep.duplicates {
                        last_on_line += 1;
                        line.insert((last_on_line, order), identity_byte(r.seq));
                        order += 1;
                    }
                }
            }
            e.poll(now);
            drain(&mut e, &mut host);
        }
        let stopped = host.stopped.expect("the run ends");
        // A count is of scheduled instants (issue 42 §1): the samples and
        // the instants their waits for an identity left without a stimulus.
        let omitted: u64 = host.samples.iter().map(|s| u64::from(s.omitted)).sum();
        prop_assert_eq!(stopped.taken, host.samples.len() as u64);
        prop_assert_eq!(stopped.taken + omitted, n);
        let mut timed = 0u64;
        for s in &host.samples {
            let k = s.seq as usize;
            prop_assert_eq!(s.stimulus_tick, fired[k]);
            match s.outcome {
                Outcome::Response(l) => {
                    timed += 1;
                    prop_assert_eq!(Some(fired[k] + u64::from(l)), first_answer[k], "seq {} timed against another answer", k);
                }
                Outcome::Timeout => prop_assert!(
                    first_answer[k].is_none_or(|a| a - fired[k] > timeout),
                    "seq {} timed out though answered in time", k
                ),
            }
        }
        // The last byte delivered may have been the one that ended the run.
        let a = stopped.anomalies;
        prop_assert_eq!(timed + a.late + a.duplicates + a.unmatched + a.wrong_bytes, delivered_running, "{:?}", a);
        let foreign_delivered = foreign.iter().filter(|(t, _)| t0 + t <= now).count() as u64;
        prop_assert!(a.wrong_bytes <= foreign_delivered);
    }
}
