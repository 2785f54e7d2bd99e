//! Engine unit tests with a fake timer: the test is the board, the clock is a
//! plain `u64`, and a host-side decoder reads every byte the engine queues.

use std::string::{String, ToString};
use std::vec::Vec;

use latprobe_protocol::framing::{encode_raw, CRC};
use latprobe_protocol::{
    decode_message, encode_message, Anomalies, Capabilities, Config, Edge, EdgeStamp, ErrorCode, Feed,
    FrameDecoder, Heartbeat, HostMsg, Mode, Outcome, ProbeMsg, ResponseLine, Sample, Stimulus, StopReason,
    Stopped, MAX_BATCH_COUNT, MAX_FRAME_LEN, PROTOCOL_VERSION,
};

use super::txq::CONTROL_RESERVE;
use super::*;
use crate::ticks::{TickExtender, TimerBits};

const HZ: u32 = 1_000_000;
const LEAD: u32 = 10;

const ALL: Capabilities = Capabilities(
    Capabilities::GPIO_ECHO.0
        | Capabilities::UART_ECHO.0
        | Capabilities::PERIODIC.0
        | Capabilities::LOOPBACK.0,
);

/// A probe message with its borrowed parts copied out.
#[derive(Debug, Clone, PartialEq)]
enum Got {
    Hello { board: String, firmware: String, timer_hz: u32, bits: u8, caps: Capabilities, version: u8 },
    Configured(Config),
    Started { start_tick: u64, first_seq: u64 },
    Samples(Vec<Sample>),
    Edges(Vec<EdgeStamp>),
    Heartbeat(Heartbeat),
    Stopped(Stopped),
    Error(ErrorCode, String),
    Log(latprobe_protocol::LogLevel, String),
}

fn own(msg: ProbeMsg<'_>) -> Got {
    match msg {
        ProbeMsg::Hello(i) => Got::Hello {
            board: i.board.to_string(),
            firmware: i.firmware_version.to_string(),
            timer_hz: i.timer_hz,
            bits: i.timer_bits,
            caps: i.capabilities,
            version: i.protocol_version,
        },
        ProbeMsg::Configured(c) => Got::Configured(c),
        ProbeMsg::Started { start_tick, first_seq } => Got::Started { start_tick, first_seq },
        ProbeMsg::SampleBatch(b) => Got::Samples(b.iter().map(|s| s.unwrap()).collect()),
        ProbeMsg::EdgeBatch(b) => Got::Edges(b.iter().map(|s| s.unwrap()).collect()),
        ProbeMsg::Heartbeat(h) => Got::Heartbeat(h),
        ProbeMsg::Stopped(s) => Got::Stopped(s),
        ProbeMsg::Error(e) => Got::Error(e.code, e.detail.to_string()),
        ProbeMsg::Log(l) => Got::Log(l.level, l.text.to_string()),
    }
}

fn board() -> BoardInfo {
    BoardInfo::new("test-board", HZ, TimerBits::B32, ALL).with_arm_lead(LEAD)
}

/// The test as a board: a clock, the engine, and the host's end of the link.
struct Bench<const Q: usize = DEFAULT_TX_QUEUE> {
    e: Engine<Q>,
    now: u64,
    rx: FrameDecoder,
}

impl<const Q: usize> Bench<Q> {
    fn with(board: BoardInfo) -> Self {
        let mut b = Self { e: Engine::new(board), now: 1000, rx: FrameDecoder::new() };
        let boot = b.drain();
        assert!(matches!(boot.as_slice(), [Got::Hello { .. }]), "boot: {boot:?}");
        b
    }

    fn send(&mut self, msg: &HostMsg) {
        let mut buf = [0u8; 256];
        let n = encode_message(msg, &mut buf).unwrap();
        self.e.on_host_bytes(&buf[..n], self.now);
    }

    /// Read everything queued, through the real decoder.
    fn drain(&mut self) -> Vec<Got> {
        let mut bytes = Vec::new();
        loop {
            let c = self.e.tx_chunk();
            if c.is_empty() {
                break;
            }
            bytes.extend_from_slice(c);
            let n = c.len();
            self.e.tx_done(n);
        }
        self.decode(&bytes)
    }

    fn decode(&mut self, bytes: &[u8]) -> Vec<Got> {
        let mut out = Vec::new();
        let mut input = bytes;
        loop {
            match self.rx.feed(input) {
                Feed::NeedMore => break,
                Feed::Frame { frame, rest } => {
                    out.push(own(decode_message::<ProbeMsg>(frame).unwrap()));
                    input = rest;
                }
                Feed::Bad { error, .. } => panic!("engine sent a bad frame: {error:?}"),
            }
        }
        out
    }

    fn ask(&mut self, msg: &HostMsg) -> Vec<Got> {
        self.send(msg);
        self.drain()
    }

    fn configure(&mut self, c: Config) {
        assert_eq!(self.ask(&HostMsg::Configure(c)), [Got::Configured(c)]);
    }

    fn start(&mut self) -> u64 {
        match self.ask(&HostMsg::Start).as_slice() {
            [Got::Started { start_tick, first_seq: 0 }] => *start_tick,
            other => panic!("start: {other:?}"),
        }
    }

    fn poll_at(&mut self, t: u64) {
        self.now = t;
        self.e.poll(t);
    }

    /// Produce the requested stimulus exactly at its tick (hardware
    /// compare), or now if that has passed; returns its tick.
    fn fire(&mut self) -> u64 {
        let req = self.e.stimulus_request().expect("a stimulus is requested");
        // A request already in the past is produced at once, in software.
        self.now = self.now.max(req.at);
        self.e.on_stimulus(self.now, self.now);
        self.e.poll(self.now);
        self.now
    }

    fn respond(&mut self, tick: u64) {
        self.now = self.now.max(tick);
        self.e.on_capture(tick, self.now);
        self.e.poll(self.now);
    }
}

fn bench() -> Bench {
    Bench::with(board())
}

fn echo(count: Option<u64>) -> Config {
    Config {
        mode: Mode::GpioEcho,
        interval_ticks: 1000,
        dither_ticks: 100,
        timeout_ticks: 500,
        guard_ticks: 100,
        count,
        seed: 7,
        stimulus: Stimulus::Edge(Edge::Rising),
        trigger_ticks: 0,
    }
}

fn samples(got: &[Got]) -> Vec<Sample> {
    got.iter()
        .filter_map(|g| if let Got::Samples(s) = g { Some(s.clone()) } else { None })
        .flatten()
        .collect()
}

fn stopped(got: &[Got]) -> Stopped {
    match got.last() {
        Some(Got::Stopped(s)) => *s,
        other => panic!("expected Stopped last, got {other:?}"),
    }
}

// ----- link, handshake, validation -----

#[test]
fn boot_and_hello_describe_the_board() {
    let mut e = Engine::<DEFAULT_TX_QUEUE>::new(BoardInfo::new(
        "a-board-name-much-longer-than-thirty-two-bytes",
        100_000_000,
        TimerBits::B16,
        ALL,
    ));
    let mut b = Bench { e: Engine::new(board()), now: 0, rx: FrameDecoder::new() };
    core::mem::swap(&mut b.e, &mut e);
    let expect = Got::Hello {
        board: "a-board-name-much-longer-than-th".to_string(),
        firmware: env!("CARGO_PKG_VERSION").to_string(),
        timer_hz: 100_000_000,
        bits: 16,
        caps: ALL,
        version: PROTOCOL_VERSION,
    };
    assert_eq!(b.drain(), core::slice::from_ref(&expect));
    assert_eq!(b.ask(&HostMsg::Hello { protocol_version: PROTOCOL_VERSION }), [expect]);
}

#[test]
fn a_boot_note_follows_every_hello() {
    const NOTE: &str = "probe reset by its watchdog: the engine made no progress for 1 s";
    let mut b = bench();
    let note = Got::Log(latprobe_protocol::LogLevel::Warn, NOTE.to_string());
    // Set at boot, after the boot Hello was queued: it follows that Hello.
    b.e.set_boot_note(NOTE);
    assert_eq!(b.drain(), core::slice::from_ref(&note));
    // Every handshake hears it, twice within a second too (the log's
    // repeat filter must not hold back the second), and after the same
    // text went out as an ordinary log line.
    let hello = HostMsg::Hello { protocol_version: PROTOCOL_VERSION };
    for _ in 0..2 {
        let got = b.ask(&hello);
        assert!(matches!(got.as_slice(), [Got::Hello { .. }, n] if *n == note), "{got:?}");
        b.now += 1;
    }
    b.e.log(latprobe_protocol::LogLevel::Warn, NOTE, b.now);
    assert_eq!(b.drain(), core::slice::from_ref(&note));
    let got = b.ask(&hello);
    assert!(matches!(got.as_slice(), [Got::Hello { .. }, n] if *n == note), "{got:?}");
}

#[test]
fn ping_answers_with_its_nonce() {
    let mut b = bench();
    b.now = 4242;
    let got = b.ask(&HostMsg::Ping { nonce: 0xdead_beef });
    let [Got::Heartbeat(h)] = got.as_slice() else { panic!("{got:?}") };
    assert_eq!((h.nonce, h.tick, h.running, h.taken), (0xdead_beef, 4242, false, 0));
}

#[test]
fn every_configure_refusal_reaches_the_host() {
    use ErrorCode::*;
    let g = echo(Some(5));
    let cases = [
        (Config { mode: Mode::Periodic, ..g }, BadStimulus),
        (Config { stimulus: Stimulus::Byte(1), ..g }, BadStimulus),
        (Config { mode: Mode::UartEcho, ..g }, BadStimulus),
        (Config { stimulus: Stimulus::None(ResponseLine::Gpio), mode: Mode::Loopback, ..g }, BadStimulus),
        (Config { count: Some(0), ..g }, ZeroCount),
        (Config { interval_ticks: 0, ..g }, ZeroInterval),
        (Config { timeout_ticks: 0, ..g }, BadTimeout),
        (Config { timeout_ticks: 1000, ..g }, BadTimeout),
        (Config { dither_ticks: 401, ..g }, BadDither),
        (Config { guard_ticks: 401, ..g }, BadDither),
    ];
    let mut b = bench();
    for (c, code) in cases {
        let got = b.ask(&HostMsg::Configure(c));
        assert!(matches!(got.as_slice(), [Got::Error(c, _)] if *c == code), "{code:?}: {got:?}");
    }
    // A board without the mode.
    let mut u = Bench::<DEFAULT_TX_QUEUE>::with(BoardInfo::new(
        "uart-only",
        HZ,
        TimerBits::B16,
        Capabilities::UART_ECHO,
    ));
    let got = u.ask(&HostMsg::Configure(g));
    assert!(matches!(got.as_slice(), [Got::Error(UnsupportedMode, _)]), "{got:?}");
    // Periodic: interval 0 is fine.
    let p =
        Config { mode: Mode::Periodic, interval_ticks: 0, stimulus: Stimulus::None(ResponseLine::Gpio), ..g };
    b.configure(p);
}

#[test]
fn state_errors_busy_not_configured_not_running() {
    use ErrorCode::*;
    let mut b = bench();
    assert!(matches!(b.ask(&HostMsg::Start).as_slice(), [Got::Error(NotConfigured, _)]));
    assert!(matches!(b.ask(&HostMsg::Stop).as_slice(), [Got::Error(NotRunning, _)]));
    b.configure(echo(None));
    // A refused Configure forgets the accepted one.
    let bad = Config { count: Some(0), ..echo(None) };
    assert!(matches!(b.ask(&HostMsg::Configure(bad)).as_slice(), [Got::Error(ZeroCount, _)]));
    assert!(matches!(b.ask(&HostMsg::Start).as_slice(), [Got::Error(NotConfigured, _)]));
    b.configure(echo(None));
    b.start();
    assert!(matches!(b.ask(&HostMsg::Start).as_slice(), [Got::Error(Busy, _)]));
    assert!(matches!(b.ask(&HostMsg::Configure(echo(None))).as_slice(), [Got::Error(Busy, _)]));
    assert!(b.e.is_running());
    let got = b.ask(&HostMsg::Stop);
    assert_eq!(stopped(&got).reason, StopReason::HostStop);
    // The config survives the run: Start repeats it, from seq 0.
    b.start();
}

#[test]
fn version_mismatch_and_malformed_frames_are_answered() {
    let mut b = bench();
    // An intact frame (good CRC) of the next protocol version: a Ping.
    let mut raw = std::vec![PROTOCOL_VERSION + 1, 4, 1];
    raw.extend_from_slice(&CRC.checksum(&raw).to_le_bytes());
    let mut frame = [0u8; 64];
    let n = encode_raw(&raw, &mut frame).unwrap();
    b.e.on_host_bytes(&frame[..n], b.now);
    let got = b.drain();
    assert!(
        matches!(got.as_slice(), [Got::Error(ErrorCode::VersionMismatch, d)]
            if d.contains(&std::format!("frame was v{}", PROTOCOL_VERSION + 1))),
        "{got:?}"
    );
    // Right version, body not a HostMsg (variant 9 does not exist).
    let mut raw = std::vec![PROTOCOL_VERSION, 9];
    raw.extend_from_slice(&CRC.checksum(&raw).to_le_bytes());
    let n = encode_raw(&raw, &mut frame).unwrap();
    b.e.on_host_bytes(&frame[..n], b.now);
    assert!(matches!(b.drain().as_slice(), [Got::Error(ErrorCode::BadMessage, _)]));
    assert_eq!(b.e.stats().rx_version_mismatches, 1);
    assert_eq!(b.e.stats().rx_bad_messages, 1);
}

#[test]
fn garbage_on_the_link_is_counted_never_fatal() {
    let mut b = bench();
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut errors = 0;
    for round in 0..2000u64 {
        let len = (next() % 300) as usize;
        let junk: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        b.now += 1000; // 1 ms per chunk: 2 s in all
        b.e.on_host_bytes(&junk, b.now);
        for g in b.drain() {
            match g {
                Got::Error(ErrorCode::BadFrame, _) => errors += 1,
                // Random bytes can form an intact frame only with a 2^-32
                // CRC chance; anything else decoded is a reply to one.
                other => panic!("round {round}: unexpected {other:?}"),
            }
        }
    }
    // Rate-limited: one report per second of ticks, 2 s elapsed.
    assert!((1..=3).contains(&errors), "{errors} BadFrame errors");
    // The link recovers at the next frame boundary.
    b.e.on_host_bytes(&[0x00], b.now);
    let bad = b.e.stats().rx_bad_frames;
    assert!(bad > 1000, "only {bad} bad frames counted");
    b.drain();
    let got = b.ask(&HostMsg::Ping { nonce: 5 });
    let [Got::Heartbeat(h)] = got.as_slice() else { panic!("{got:?}") };
    assert_eq!((h.nonce, h.rx_bad_frames), (5, bad));
}

#[test]
fn host_frames_in_any_chunking() {
    let mut b = bench();
    let mut buf = [0u8; 256];
    let mut stream = Vec::new();
    for nonce in 0..50u32 {
        let n = encode_message(&HostMsg::Ping { nonce }, &mut buf).unwrap();
        stream.extend_from_slice(&buf[..n]);
    }
    let mut nonces = Vec::new();
    let mut at = 0;
    for size in (1..).cycle() {
        if at >= stream.len() {
            break;
        }
        let end = (at + size % 7).min(stream.len());
        b.e.on_host_bytes(&stream[at..end], b.now);
        at = end;
        for g in b.drain() {
            let Got::Heartbeat(h) = g else { panic!("{g:?}") };
            nonces.push(h.nonce);
        }
    }
    assert_eq!(nonces, (0..50).collect::<Vec<_>>());
    assert_eq!(b.e.stats().rx_bad_frames, 0);
}

// ----- echo measurement -----

#[test]
fn echo_run_measures_and_stops_at_count() {
    let mut b = bench();
    b.configure(echo(Some(100)));
    let start = b.start();
    let mut truth = Vec::new();
    let mut got = Vec::new();
    for k in 0..100u64 {
        let stim = b.fire();
        let lat = 20 + (k * 37) % 400;
        b.respond(stim + lat);
        truth.push(Sample {
            seq: k,
            stimulus_tick: stim,
            outcome: Outcome::Response(lat as u32),
            triggered: false,
            late_ticks: 0,
            omitted: 0,
        });
        got.extend(b.drain());
    }
    assert!(b.e.stimulus_request().is_none());
    assert!(!b.e.is_running());
    assert_eq!(samples(&got), truth);
    assert!(truth[0].stimulus_tick >= start);
    let s = stopped(&got);
    assert_eq!(
        (s.reason, s.taken, s.timeouts, s.dropped, s.overruns),
        (StopReason::CountReached, 100, 0, 0, 0)
    );
    // Stopped is the last message: no batch after it.
    assert_eq!(got.iter().filter(|g| matches!(g, Got::Stopped(_))).count(), 1);
}

#[test]
fn timeout_boundary_and_late_answer() {
    let mut b = bench();
    b.configure(echo(Some(3)));
    b.start();
    // Exactly at the timeout: a response.
    let s0 = b.fire();
    b.respond(s0 + 500);
    // Nothing: the deadline is stimulus + timeout + 1.
    let s1 = b.fire();
    assert_eq!(b.e.next_deadline(), Some(s1 + 501));
    b.poll_at(s1 + 500);
    assert!(b.e.stimulus_request().is_none(), "timed out too early");
    b.poll_at(s1 + 501);
    // The next stimulus waits for timeout + guard.
    let req = b.e.stimulus_request().unwrap();
    assert!(req.at >= s1 + 500 + 100);
    // One tick too late, delivered before any poll: timeout + late.
    let s2 = b.fire();
    b.respond(s2 + 501);
    let got = b.drain();
    assert_eq!(
        samples(&got),
        [
            Sample {
                seq: 0,
                stimulus_tick: s0,
                outcome: Outcome::Response(500),
                triggered: false,
                late_ticks: 0,
                omitted: 0
            },
            Sample {
                seq: 1,
                stimulus_tick: s1,
                outcome: Outcome::Timeout,
                triggered: false,
                late_ticks: 0,
                omitted: 0
            },
            Sample {
                seq: 2,
                stimulus_tick: s2,
                outcome: Outcome::Timeout,
                triggered: false,
                late_ticks: 0,
                omitted: 0
            },
        ]
    );
    let s = stopped(&got);
    assert_eq!((s.taken, s.timeouts), (3, 2));
    assert_eq!(b.e.stats().late_responses, 1);
}

#[test]
fn late_response_is_not_matched_to_the_next_stimulus() {
    let mut b = bench();
    b.configure(echo(Some(2)));
    b.start();
    let s0 = b.fire();
    b.poll_at(s0 + 501); // timeout
                         // The late answer arrives between the timeout and the next stimulus.
    b.respond(s0 + 550);
    assert_eq!(b.e.stats().late_responses, 1);
    let s1 = b.fire();
    // A capture latched before the stimulus but delivered after it (an
    // interrupt that ran late) is not this stimulus's response either.
    b.e.on_capture(s1 - 1, s1 + 5);
    assert_eq!(b.e.stats().late_responses, 2);
    b.respond(s1 + 42);
    let got = b.drain();
    assert_eq!(
        samples(&got),
        [
            Sample {
                seq: 0,
                stimulus_tick: s0,
                outcome: Outcome::Timeout,
                triggered: false,
                late_ticks: 0,
                omitted: 0
            },
            Sample {
                seq: 1,
                stimulus_tick: s1,
                outcome: Outcome::Response(42),
                triggered: false,
                late_ticks: 0,
                omitted: 0
            },
        ]
    );
    // Both are reported to the host, not only counted on the probe.
    assert_eq!(stopped(&got).anomalies.late, 2);
}

#[test]
fn spurious_events_when_idle_or_unarmed_are_counted() {
    let mut b = bench();
    b.e.on_capture(5, b.now);
    b.e.on_stimulus(5, b.now);
    b.configure(echo(None));
    b.start();
    let s0 = b.fire();
    b.e.on_stimulus(s0 + 1, s0 + 1); // twice
    assert_eq!(b.e.stats().spurious_stimuli, 2);
    assert_eq!(b.e.stats().late_responses, 1);
}

/// Stimulus times of the first `n` samples of a run with seed `seed`,
/// the target answering after 50 ticks.
fn schedule(seed: u64, n: u64) -> (u64, Vec<u64>) {
    let mut b = bench();
    b.configure(Config { seed, count: Some(n), ..echo(None) });
    let start = b.start();
    let mut at = Vec::new();
    for _ in 0..n {
        let s = b.fire();
        at.push(s);
        b.respond(s + 50);
    }
    (start, at)
}

#[test]
fn same_seed_same_schedule() {
    let (start_a, a) = schedule(99, 300);
    let (start_b, b) = schedule(99, 300);
    let (start_c, c) = schedule(100, 300);
    assert_eq!((start_a, start_b, start_c), (start_a, start_a, start_a));
    assert_eq!(a, b);
    assert_ne!(a, c);
    // On time, each stimulus sits in its slot: start + k·interval + 0..=dither.
    let mut seen_low = false;
    let mut seen_high = false;
    for (k, &t) in a.iter().enumerate() {
        let d = t - (start_a + k as u64 * 1000);
        assert!(d <= 100, "stimulus {k} dithered by {d}");
        seen_low |= d < 10;
        seen_high |= d > 90;
    }
    assert!(seen_low && seen_high, "dither does not span its range");
}

#[test]
fn guard_pushes_a_late_schedule_later() {
    let mut b = bench();
    let c = Config { dither_ticks: 0, ..echo(None) };
    b.configure(c);
    let start = b.start();
    // A software-timed board produces stimulus 0 late, at slot + 450, and
    // the answer takes 400 more: the response at start + 850 plus the guard
    // (100) is later than slot 1 (start + 1000)? No: 950 < 1000, on time.
    let req = b.e.stimulus_request().unwrap();
    assert_eq!(req.at, start);
    b.now = start + 450;
    b.e.on_stimulus(start + 450, b.now);
    b.respond(start + 850);
    assert_eq!(b.e.stimulus_request().unwrap().at, start + 1000);
    // Stimulus 1 produced 480 late, answered at +470: end at start+1950,
    // guard → start + 2050, after slot 2 (start + 2000): pushed.
    b.now = start + 1480;
    b.e.on_stimulus(start + 1480, b.now);
    b.respond(start + 1950);
    assert_eq!(b.e.stimulus_request().unwrap().at, start + 2050);
    // And after a timeout of a late stimulus: end = stimulus + timeout.
    b.now = start + 2400;
    b.e.on_stimulus(start + 2400, b.now);
    b.poll_at(start + 2901);
    assert_eq!(b.e.stimulus_request().unwrap().at, start + 2900 + 100);
    // The lead: a board that reports `now` far past the slot gets a request
    // no sooner than now + arm lead.
    b.now = start + 3000;
    b.e.on_stimulus(start + 3000, b.now);
    b.now = start + 4500;
    b.e.on_capture(start + 3010, b.now);
    assert_eq!(b.e.stimulus_request().unwrap().at, start + 4500 + u64::from(LEAD));
    let got = b.ask(&HostMsg::Stop);
    let s: Vec<u64> = samples(&got).iter().map(|s| s.stimulus_tick).collect();
    // Samples carry the actual stimulus ticks.
    assert_eq!(s, [start + 450, start + 1480, start + 2400, start + 3000]);
}

#[test]
fn stop_finishes_what_is_in_flight_then_stops() {
    let mut b = bench();
    b.configure(echo(None));
    b.start();
    for _ in 0..10 {
        let s = b.fire();
        b.respond(s + 30);
    }
    let s = b.fire(); // in flight when the host stops: its sample is finished
    let got = b.ask(&HostMsg::Stop);
    assert!(!got.iter().any(|g| matches!(g, Got::Stopped(_))), "{got:?}");
    assert!(b.e.stimulus_request().is_none(), "no new stimulus after Stop");
    b.respond(s + 40);
    let got = b.drain();
    let all = samples(&got);
    assert_eq!(all.len(), 11, "{got:?}");
    let st = stopped(&got);
    assert_eq!((st.reason, st.taken, st.timeouts), (StopReason::HostStop, 11, 0));
    assert_eq!(all.last().unwrap().outcome, Outcome::Response(40));
    assert_eq!(b.e.next_deadline(), None);
    // A stimulus in flight that never gets an answer ends as a timeout.
    b.configure(echo(None));
    b.start();
    let s = b.fire();
    let got = b.ask(&HostMsg::Stop);
    assert!(got.is_empty(), "{got:?}");
    assert_eq!(b.e.next_deadline(), Some(s + 501));
    b.poll_at(s + 501);
    let got = b.drain();
    assert_eq!(
        samples(&got),
        [Sample {
            seq: 0,
            stimulus_tick: s,
            outcome: Outcome::Timeout,
            triggered: false,
            late_ticks: 0,
            omitted: 0
        }]
    );
    assert_eq!(stopped(&got).timeouts, 1);
    // A second Stop does not wait: what is in flight is abandoned.
    b.configure(echo(None));
    b.start();
    b.fire();
    assert!(b.ask(&HostMsg::Stop).is_empty());
    let got = b.ask(&HostMsg::Stop);
    assert_eq!(stopped(&got).taken, 0);
    b.respond(b.now + 30);
    assert_eq!(b.e.stats().late_responses, 1, "the abandoned stimulus's answer is late");
    assert!(b.drain().is_empty());
}

#[test]
fn batches_flush_when_full_and_after_50_ms() {
    let mut b = bench();
    // 200 ticks between stimuli: a full batch takes ~12 ms, under 50 ms.
    b.configure(Config { interval_ticks: 200, timeout_ticks: 50, guard_ticks: 10, ..echo(None) });
    b.start();
    let s = b.fire();
    b.respond(s + 10);
    // One sample: its batch is due 50 ms (50_000 ticks at 1 MHz) later.
    assert!(samples(&b.drain()).is_empty());
    let due = b.now + 50_000;
    assert!(b.e.next_deadline().unwrap() <= due);
    for _ in 0..40 {
        let s = b.fire();
        b.respond(s + 10);
    }
    assert!(samples(&b.drain()).is_empty());
    b.now = due - 1;
    b.e.poll(b.now);
    assert!(samples(&b.drain()).is_empty());
    b.poll_at(due);
    let got = samples(&b.drain());
    assert_eq!(got.len(), 41);
    // A full batch goes at once, long before its deadline.
    let first = b.now;
    let mut made = 0;
    let batch = loop {
        let s = b.fire();
        b.respond(s + 10);
        made += 1;
        let got = samples(&b.drain());
        if !got.is_empty() {
            break got;
        }
    };
    assert!(b.now < first + 50_000);
    assert_eq!(batch.len(), made);
    assert!(made > 40 && made <= usize::from(MAX_BATCH_COUNT), "{made}");
    assert_eq!(batch[0].seq, 41);
}

#[test]
fn heartbeat_every_second_while_running_only() {
    let mut b = bench();
    b.now = 0;
    b.poll_at(5_000_000);
    assert!(b.drain().is_empty());
    assert_eq!(b.e.next_deadline(), None);
    b.configure(Config { count: None, ..echo(None) });
    let t0 = b.now;
    b.start();
    let mut beats = Vec::new();
    // Let every stimulus time out for 3.5 s, polling at each deadline.
    while b.now < t0 + 3_500_000 {
        let d = b.e.next_deadline().unwrap();
        assert!(d > b.now, "deadline {d} at {}", b.now);
        b.now = d;
        if b.e.stimulus_request().is_some_and(|r| r.at == d) {
            b.e.on_stimulus(d, d);
        }
        b.poll_at(d);
        for g in b.drain() {
            if let Got::Heartbeat(h) = g {
                beats.push(h);
            }
        }
    }
    let ticks: Vec<u64> = beats.iter().map(|h| h.tick).collect();
    assert_eq!(ticks, [t0 + 1_000_000, t0 + 2_000_000, t0 + 3_000_000]);
    assert!(beats.iter().all(|h| h.running && h.nonce == 0));
    assert!(beats[2].taken > beats[0].taken);
}

#[test]
fn stall_of_the_board_is_a_fault_not_a_hang() {
    let mut b = bench();
    b.configure(echo(None));
    b.start();
    let req = b.e.stimulus_request().unwrap();
    // The board never reports the stimulus.
    let limit = req.at + 1000 + u64::from(HZ);
    assert!(b.e.next_deadline().unwrap() <= req.at);
    b.poll_at(limit);
    assert!(b.e.is_running());
    b.poll_at(limit + 1);
    let got = b.drain();
    assert!(got.iter().any(|g| matches!(g, Got::Error(ErrorCode::Internal, _))));
    assert_eq!(stopped(&got).reason, StopReason::Fault);
}

#[test]
fn deadline_never_spins_on_a_past_stimulus() {
    let mut b = bench();
    b.configure(echo(None));
    b.start();
    let req = b.e.stimulus_request().unwrap();
    assert_eq!(b.e.next_deadline(), Some(req.at));
    b.poll_at(req.at);
    // Past `at` and not yet reported: the next deadline is later.
    assert!(b.e.next_deadline().unwrap() > req.at);
}

// ----- backpressure -----

#[test]
fn overruns_are_counted_and_match_the_gaps() {
    // The smallest queue, never drained during the run.
    const Q: usize = super::txq::MIN_QUEUE;
    let mut b = Bench::<Q>::with(board());
    b.configure(Config { count: Some(5000), ..echo(None) });
    b.start();
    for k in 0..5000u64 {
        let s = b.fire();
        b.respond(s + 1 + k % 300);
    }
    let got = b.drain();
    let s = stopped(&got);
    let received = samples(&got);
    assert!(s.overruns > 0 && s.dropped > 0);
    assert_eq!(s.taken, 5000);
    assert_eq!(received.len() as u64 + s.dropped, s.taken);
    // The gaps in sequence numbers are exactly the dropped samples.
    let mut gaps = received[0].seq;
    for w in received.windows(2) {
        gaps += w[1].seq - w[0].seq - 1;
    }
    gaps += s.taken - 1 - received.last().unwrap().seq;
    assert_eq!(gaps, s.dropped);
}

#[test]
fn control_replies_survive_a_full_queue() {
    const Q: usize = super::txq::MIN_QUEUE;
    let mut b = Bench::<Q>::with(board());
    b.configure(echo(None));
    b.start();
    // Fill the data budget and keep going: data is dropped from now on.
    for k in 0..3000u64 {
        let s = b.fire();
        b.respond(s + 1 + k % 300);
    }
    assert!(b.e.tx_pending() > Q - CONTROL_RESERVE - MAX_FRAME_LEN);
    // Heartbeats (data) are refused, and counted, while the queue is full.
    let before = b.e.totals().overruns;
    b.send(&HostMsg::Ping { nonce: 1 });
    assert_eq!(b.e.totals().overruns, before + 1);
    // Configure while running, then Stop: both replies fit in the reserve.
    b.send(&HostMsg::Configure(echo(None)));
    b.send(&HostMsg::Stop);
    b.send(&HostMsg::Hello { protocol_version: PROTOCOL_VERSION });
    let got = b.drain();
    let tail: Vec<&Got> = got.iter().filter(|g| !matches!(g, Got::Samples(_))).collect();
    assert!(matches!(tail[0], Got::Error(ErrorCode::Busy, _)), "{tail:?}");
    let Got::Stopped(s) = tail[1] else { panic!("{tail:?}") };
    assert!(matches!(tail[2], Got::Hello { .. }));
    assert_eq!(s.overruns, b.e.totals().overruns);
    assert_eq!(b.e.stats().control_lost, 0);
    assert_eq!(samples(&got).len() as u64 + s.dropped, s.taken);
}

// ----- periodic -----

#[test]
fn periodic_mode_stamps_edges_and_counts_them() {
    let mut b = bench();
    let c = Config {
        mode: Mode::Periodic,
        interval_ticks: 0,
        dither_ticks: 0,
        timeout_ticks: 0,
        guard_ticks: 0,
        count: Some(150),
        seed: 0,
        stimulus: Stimulus::None(ResponseLine::Gpio),
        trigger_ticks: 0,
    };
    b.configure(c);
    let start = b.start();
    assert_eq!(start, b.now);
    assert!(b.e.stimulus_request().is_none());
    // Latched before Start was handled: not part of the run.
    b.e.on_capture(start - 1, b.now);
    assert_eq!(b.e.stats().late_responses, 1);
    let mut truth = Vec::new();
    let mut got = Vec::new();
    for k in 0..150u64 {
        let t = 2000 + k * 1000 + (k * k) % 17;
        b.respond(t);
        truth.push(EdgeStamp { seq: k, tick: t });
        got.extend(b.drain());
    }
    let edges: Vec<EdgeStamp> = got
        .iter()
        .filter_map(|g| if let Got::Edges(e) = g { Some(e.clone()) } else { None })
        .flatten()
        .collect();
    assert_eq!(edges, truth);
    let s = stopped(&got);
    assert_eq!((s.reason, s.taken, s.timeouts), (StopReason::CountReached, 150, 0));
}

// ----- a 16-bit board around its wraps -----

/// A small model of a 16-bit timer board: the truth is `t`; the board only
/// sees `t & 0xffff` and an overflow flag acknowledged `ack_delay` ticks
/// after each wrap; captures are converted `isr_delay` ticks after latching.
#[test]
fn sixteen_bit_board_across_many_wraps() {
    const PERIOD: u64 = 1 << 16;
    let info = BoardInfo::new("wrap", HZ, TimerBits::B16, ALL).with_arm_lead(LEAD);
    let mut e: Engine = Engine::new(info);
    let mut ticks = TickExtender::new(TimerBits::B16);
    let mut acked_wraps = 0u64;
    let mut rx = Bench::<DEFAULT_TX_QUEUE> { e: Engine::new(info), now: 0, rx: FrameDecoder::new() };
    rx.drain();
    let mut host = Vec::new();
    let mut drain = |e: &mut Engine, rx: &mut Bench| {
        let mut buf = [0u8; 512];
        let n = e.read_tx(&mut buf);
        host.extend(rx.decode(&buf[..n]));
    };
    // Board view of time `t`, acknowledging wraps older than `ack_delay`.
    let mut view = |t: u64, ack_delay: u64, ticks: &mut TickExtender| -> u64 {
        while acked_wraps < t / PERIOD && (acked_wraps + 1) * PERIOD + ack_delay <= t {
            ticks.on_overflow();
            acked_wraps += 1;
        }
        let pending = acked_wraps < t / PERIOD;
        ticks.now(t & 0xffff, pending)
    };
    let c = Config {
        interval_ticks: 20_011,
        dither_ticks: 3000,
        timeout_ticks: 9000,
        guard_ticks: 1000,
        count: Some(400),
        ..echo(None)
    };
    let mut buf = [0u8; 256];
    let n = encode_message(&HostMsg::Configure(c), &mut buf).unwrap();
    e.on_host_bytes(&buf[..n], 0);
    let n = encode_message(&HostMsg::Start, &mut buf).unwrap();
    e.on_host_bytes(&buf[..n], 0);
    let mut truth = Vec::new();
    for k in 0..400u64 {
        let req = e.stimulus_request().unwrap();
        // Output compare fires exactly at `at`; the ISR reads CCR later.
        let isr = req.at + k % 50;
        let now = view(isr, (k * 7919) % 30_000, &mut ticks);
        assert_eq!(now, isr);
        e.on_stimulus(ticks.capture(req.at & 0xffff, now), now);
        let lat = (k * 104_729) % 8000 + 1;
        let cap = req.at + lat;
        let h = cap + (k * 31) % 400;
        let now = view(h, (k * 6151) % 30_000, &mut ticks);
        e.on_capture(ticks.capture(cap & 0xffff, now), now);
        e.poll(now);
        truth.push(Sample {
            seq: k,
            stimulus_tick: req.at,
            outcome: Outcome::Response(lat as u32),
            triggered: false,
            late_ticks: 0,
            omitted: 0,
        });
        drain(&mut e, &mut rx);
    }
    drain(&mut e, &mut rx);
    assert!(ticks.overflows() > 100, "only {} wraps", ticks.overflows());
    assert_eq!(samples(&host), truth);
    assert_eq!(stopped(&host).taken, 400);
}

#[test]
fn uart_echo_faster_than_the_line_is_an_earlier_stimulus_echo() {
    // 1 MHz ticks, target line at 100 kBd: 9.5 bit times are 95 ticks.
    let board = BoardInfo::new("test-board", 1_000_000, TimerBits::B32, ALL).with_uart_echo_floor(100_000);
    assert_eq!(board.uart_echo_floor_ticks, 95);
    let mut b: Bench = Bench::with(board);
    let mut c = echo(Some(1));
    c.mode = Mode::UartEcho;
    c.stimulus = Stimulus::Byte(0x55);
    b.configure(c);
    b.start();
    let s0 = b.fire();
    // The previous stimulus's echo, landing just after this one went out:
    // not this stimulus's answer.
    b.respond(s0 + 3);
    // The real answer, one byte time and a little later.
    b.respond(s0 + 120);
    let got = b.drain();
    assert_eq!(
        samples(&got),
        [Sample {
            seq: 0,
            stimulus_tick: s0,
            outcome: Outcome::Response(120),
            triggered: false,
            late_ticks: 0,
            omitted: 0
        }]
    );
    assert_eq!(stopped(&got).anomalies.late, 1);
}

#[test]
fn the_uart_floor_leaves_other_modes_alone() {
    let board = BoardInfo::new("test-board", 1_000_000, TimerBits::B32, ALL).with_uart_echo_floor(100_000);
    let mut b: Bench = Bench::with(board);
    b.configure(echo(Some(1))); // gpio-echo: a 3-tick answer is an answer
    b.start();
    let s0 = b.fire();
    b.respond(s0 + 3);
    let got = b.drain();
    assert_eq!(
        samples(&got),
        [Sample {
            seq: 0,
            stimulus_tick: s0,
            outcome: Outcome::Response(3),
            triggered: false,
            late_ticks: 0,
            omitted: 0
        }]
    );
    assert_eq!(stopped(&got).anomalies.late, 0);
    assert_eq!(BoardInfo::new("b", 1_000_000, TimerBits::B32, ALL).uart_echo_floor_ticks, 0);
}

// ----- identity: several stimuli in flight, answers matched by their byte -----

fn identified(count: Option<u64>) -> Config {
    Config {
        mode: Mode::UartEcho,
        interval_ticks: 1000,
        dither_ticks: 0,
        timeout_ticks: 8000,
        guard_ticks: 100,
        count,
        seed: 7,
        stimulus: Stimulus::Identified,
        trigger_ticks: 0,
    }
}

impl<const Q: usize> Bench<Q> {
    /// Produce the requested stimulus; returns its tick and byte.
    fn fire_byte(&mut self) -> (u64, u8) {
        let req = self.e.stimulus_request().expect("a stimulus is requested");
        let Stimulus::Byte(b) = req.stimulus else { panic!("not a byte: {req:?}") };
        let t = self.fire();
        (t, b)
    }

    fn answer(&mut self, tick: u64, byte: u8) {
        self.now = self.now.max(tick);
        self.e.on_response_byte(tick, byte, self.now);
        self.e.poll(self.now);
    }
}

#[test]
fn identity_keeps_the_schedule_and_times_a_late_answer_exactly() {
    let mut b = bench();
    b.configure(identified(Some(4)));
    let start = b.start();
    // Four stimuli on their schedule, none answered yet.
    let mut sent = Vec::new();
    for k in 0..4u64 {
        let (t, byte) = b.fire_byte();
        assert_eq!(t, start + k * 1000, "stimulus {k} keeps its slot");
        assert_eq!(byte, latprobe_protocol::identity_byte(k));
        sent.push((t, byte));
    }
    assert!(b.e.stimulus_request().is_none(), "count sent");
    // Answers in order; the first 3.5 intervals late, holding the others.
    let first = sent[0].0 + 3500;
    for (k, &(_, byte)) in sent.iter().enumerate() {
        b.answer(first + 10 * k as u64, byte);
    }
    b.poll_at(b.now + 50_000);
    let got = b.drain();
    let s = samples(&got);
    let lat: Vec<Outcome> = s.iter().map(|s| s.outcome).collect();
    assert_eq!(
        lat,
        [Outcome::Response(3500), Outcome::Response(2510), Outcome::Response(1520), Outcome::Response(530)]
    );
    assert_eq!(stopped(&got).anomalies, Anomalies::default());
}

#[test]
fn identity_counts_wrong_unmatched_duplicate_and_late_bytes_without_timing_them() {
    let mut b = bench();
    b.configure(identified(None));
    b.start();
    let (t0, b0) = b.fire_byte();
    b.answer(t0 + 5, 0x55); // not in the alphabet
    b.answer(t0 + 6, latprobe_protocol::identity_byte(3)); // no stimulus with that identity
    b.answer(t0 + 7, b0); // the answer
    b.answer(t0 + 8, b0); // again
    b.e.on_capture(t0 + 9, t0 + 9); // a capture without its byte
    let (t1, _) = b.fire_byte();
    b.poll_at(t1 + 8001); // stimulus 1 times out
    b.answer(t1 + 8002, latprobe_protocol::identity_byte(1)); // its answer, too late
    let got = b.ask(&HostMsg::Stop);
    let got = [got, b.drain()].concat();
    let a = stopped(&got).anomalies;
    assert_eq!((a.wrong_bytes, a.unmatched, a.duplicates, a.late), (1, 2, 1, 1), "{a:?}");
    let s = samples(&got);
    assert_eq!(s[0].outcome, Outcome::Response(7));
    assert_eq!(s[1].outcome, Outcome::Timeout);
}

#[test]
fn samples_go_out_in_order_when_a_later_answer_comes_first() {
    let mut b = bench();
    b.configure(identified(Some(3)));
    b.start();
    let (t0, _b0) = b.fire_byte();
    let (t1, b1) = b.fire_byte();
    let (t2, b2) = b.fire_byte();
    // Stimulus 0 is never answered; 1 and 2 are.
    b.answer(t1 + 100, b1);
    b.answer(t2 + 100, b2);
    assert!(samples(&b.drain()).is_empty(), "1 and 2 wait behind 0");
    b.poll_at(t0 + 8001);
    let got = b.drain();
    let s = samples(&got);
    assert_eq!(s.iter().map(|s| s.seq).collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(
        s.iter().map(|s| s.outcome).collect::<Vec<_>>(),
        [Outcome::Timeout, Outcome::Response(100), Outcome::Response(100)]
    );
    assert_eq!(stopped(&got).reason, StopReason::CountReached);
}

/// Nine identified stimuli out; the tenth waits for identity 0, which
/// times out and is answered late (with 1) at `start + 12 000`: free again.
fn nine_out_then_identity_0_freed_late() -> (Bench, u64) {
    let mut b = bench();
    b.configure(identified(None));
    let start = b.start();
    let mut sent = Vec::new();
    for _ in 0..9 {
        sent.push(b.fire_byte());
    }
    // Stimulus 9 would reuse stimulus 0's identity, which is unanswered.
    b.poll_at(start + 9000);
    assert!(b.e.stimulus_request().is_none(), "identity 0 is still in flight");
    // Stimulus 0 times out; no later answer proves its answer is not coming.
    b.poll_at(sent[0].0 + 8001);
    assert!(b.e.stimulus_request().is_none(), "a timed-out identity is held");
    // The target answers 0 and then 1, both after their horizon: counted,
    // not timed; and in order, nothing more of 0 can come.
    b.answer(start + 12_000, sent[0].1);
    b.answer(start + 12_010, sent[1].1);
    (b, start)
}

#[test]
fn no_identity_free_means_the_next_stimulus_waits_and_the_slip_is_counted() {
    let (mut b, start) = nine_out_then_identity_0_freed_late();
    let req = b.e.stimulus_request().expect("identity 0 is free again");
    assert_eq!(req.seq, 9);
    assert_eq!(req.at, start + 12_010 + LEAD as u64);
    b.fire_byte();
    let got = [b.ask(&HostMsg::Stop), b.drain()].concat();
    let a = b.e.totals().anomalies;
    assert_eq!(a.slipped, 1);
    assert_eq!(a.slip_max_ticks, 3010 + LEAD as u64);
    assert_eq!(a.late, 2, "stimuli 0 and 1 were answered after their timeout");
    // After the slip the schedule keeps its spacing from the slipped one.
    assert!(got.iter().all(|g| !matches!(g, Got::Error(..))));
}

#[test]
fn a_target_that_stopped_answering_gets_its_identities_back_after_a_second() {
    let mut b = bench();
    b.configure(identified(None));
    b.start();
    let mut sent = Vec::new();
    for _ in 0..9 {
        sent.push(b.fire_byte());
    }
    // Nothing answered: identity 0 is held until a second after its timeout.
    let release = sent[0].0 + 8000 + u64::from(HZ);
    let mut t = sent[0].0 + 8001;
    while b.e.stimulus_request().is_none() {
        let d = b.e.next_deadline().expect("a deadline while blocked");
        assert!(d > t - 1, "deadline in the past");
        t = d;
        b.poll_at(t);
    }
    assert_eq!(t, release, "woken exactly when the identity can be taken back");
    assert_eq!(b.e.totals().anomalies.reclaimed, 1);
    assert_eq!(b.e.stimulus_request().unwrap().seq, 9);
}

#[test]
fn a_reused_identity_rejects_an_answer_faster_than_the_line() {
    // 1 MHz ticks, a 10 kBd target line: one byte is 950 ticks (9.5 bits).
    let mut b = Bench::<DEFAULT_TX_QUEUE>::with(board().with_uart_echo_floor(10_000));
    b.configure(Config { interval_ticks: 2000, timeout_ticks: 1500, ..identified(Some(1)) });
    b.start();
    let (t0, b0) = b.fire_byte();
    b.answer(t0 + 900, b0); // faster than the byte can have arrived: not this one's
    b.answer(t0 + 1000, b0);
    let got = b.drain();
    assert_eq!(samples(&got)[0].outcome, Outcome::Response(1000));
    assert_eq!(stopped(&got).anomalies.late, 1);
}

#[test]
fn a_board_that_delivers_late_never_turns_an_answer_in_time_into_a_timeout() {
    let mut b = Bench::<DEFAULT_TX_QUEUE>::with(board().with_response_lag(100));
    b.configure(identified(Some(1)));
    b.start();
    let (t0, b0) = b.fire_byte();
    // Not timed out at timeout + 1: the answer may still be on its way.
    assert_eq!(b.e.next_deadline().map(|d| d.min(t0 + 8101)), Some(t0 + 8101));
    b.poll_at(t0 + 8050);
    assert!(samples(&b.drain()).is_empty());
    // Its start bit was at the timeout exactly: a response, not a timeout.
    b.answer(t0 + 8000, b0);
    assert_eq!(samples(&b.drain())[0].outcome, Outcome::Response(8000));
}

#[test]
fn log_lines_reach_the_host_and_never_crowd_out_control_replies() {
    let mut b = bench();
    b.e.log(latprobe_protocol::LogLevel::Warn, "no start-bit capture on PB10", b.now);
    let got = b.drain();
    assert_eq!(got, [Got::Log(latprobe_protocol::LogLevel::Warn, "no start-bit capture on PB10".into())]);
    // A long line is cut at the limit (on a character boundary).
    let long = "é".repeat(100);
    b.e.log(latprobe_protocol::LogLevel::Info, &long, b.now);
    match b.drain().as_slice() {
        [Got::Log(_, t)] => assert!(t.len() <= latprobe_protocol::MAX_LOG_TEXT && t.starts_with('é')),
        other => panic!("{other:?}"),
    }
    // The same line again within a second is not repeated.
    b.e.log(latprobe_protocol::LogLevel::Warn, "no start-bit capture on PB10", b.now);
    b.e.log(latprobe_protocol::LogLevel::Warn, "no start-bit capture on PB10", b.now + 10);
    assert_eq!(b.drain().len(), 1);
}

/// Issue 18, finding 9: a stimulus produced intervals after its request (a
/// suspended software board) is a slip, counted, and the schedule
/// re-anchors at it: the next stimulus is an interval later, not at once.
#[test]
fn a_stimulus_produced_late_is_a_slip_and_the_schedule_reanchors() {
    let mut b = bench();
    b.configure(identified(None));
    let start = b.start();
    b.fire_byte();
    let req = b.e.stimulus_request().expect("stimulus 1");
    let late = req.at + 5_000;
    b.now = late;
    b.e.on_stimulus(late, late);
    b.e.poll(late);
    let a = b.e.totals().anomalies;
    assert_eq!((a.slipped, a.slip_max_ticks), (1, 5_000));
    let next = b.e.stimulus_request().expect("stimulus 2");
    assert_eq!((next.seq, next.at), (2, late + 1_000), "start {start}");
    assert!(b.drain().iter().all(|g| !matches!(g, Got::Error(..))));
}

/// One stimulus, one slip: held by its slot when planned (counted then)
/// and produced intervals after its request too (a frame's long pass) is
/// still one slipped stimulus, its delay the sum of both.
#[test]
fn a_held_stimulus_produced_late_too_is_one_slip() {
    let (mut b, _) = nine_out_then_identity_0_freed_late();
    let req = b.e.stimulus_request().expect("identity 0 is free again");
    assert_eq!(req.seq, 9);
    let held = 3010 + LEAD as u64;
    let late = req.at + 5_000;
    b.now = late;
    b.e.on_stimulus(late, late);
    b.e.poll(late);
    let a = b.e.totals().anomalies;
    assert_eq!(a.slipped, 1, "one stimulus slipped, counted once");
    assert_eq!(a.slip_max_ticks, held + 5_000);
    assert_eq!(a.slip_total_ticks, held + 5_000);
}

mod trigger;

/// Issue 42 §1: a stall hides in a slip no more. An in-order target that
/// stalls on stimulus 2 for 20 intervals holds every identity; stimulus 11
/// waits for one, and the instants between its plan and its send get no
/// stimulus. Its sample says how late it went out (`late_ticks`, so the
/// host knows its planned instant) and how many instants got none
/// (`omitted`); the samples on schedule say nothing.
/// The stall of [`a_stimulus_that_waited_carries_its_wait_and_the_instants_it_skipped`]
/// in a run of `count` instants: the samples, the stimulus times (start,
/// the planned instant of stimulus 10, its send) and the `Stopped`.
fn stall_run(count: u64) -> (Vec<Sample>, u64, u64, Stopped) {
    let mut b = bench();
    b.configure(identified(Some(count)));
    let start = b.start();
    let mut sent = Vec::new();
    for i in 0..10 {
        sent.push(b.fire_byte());
        if i < 2 {
            let (t, byte) = sent[i];
            b.answer(t + 50, byte);
        }
    }
    let t2 = sent[2].0;
    assert_eq!(t2, start + 2000);
    // Stimulus 10 needs identity 1: answered, but an in-order target may
    // still send it again until a later answer is heard.
    assert!(b.e.stimulus_request().is_none(), "stimulus 10 waits for identity 1");
    b.poll_at(t2 + 8001);
    assert!(b.e.stimulus_request().is_none(), "stimulus 2 timed out, nothing later heard");
    // The stall ends: the target answers 2 and the ones queued behind it.
    let end = t2 + 20_000;
    b.answer(end, sent[2].1);
    let req = b.e.stimulus_request().expect("identity 1 is free again");
    assert_eq!((req.seq, req.at), (10, end + LEAD as u64));
    for (k, &(_, byte)) in sent.iter().enumerate().skip(3) {
        b.answer(end + k as u64, byte);
    }
    let (t10, byte10) = b.fire_byte();
    b.answer(t10 + 50, byte10);
    let got = b.drain();
    (samples(&got), start, t10, stopped(&got))
}

#[test]
fn a_stimulus_that_waited_carries_its_wait_and_the_instants_it_skipped() {
    // 11 stimuli and the 12 instants stimulus 10 skipped: the count.
    let (s, start, t10, st) = stall_run(23);
    assert_eq!(s.len(), 11);
    let planned = start + 10_000;
    assert_eq!(u64::from(s[10].late_ticks), t10 - planned, "timed from its planned instant");
    // Instants planned + 1000·k, k = 1..=12, are at or before its send
    // (12 010 ticks after its plan).
    assert_eq!(t10 - planned, 12_010);
    assert_eq!(s[10].omitted, 12);
    assert!(s[..10].iter().all(|s| !s.waited()), "{s:?}");
    assert_eq!(s[2].outcome, Outcome::Timeout);
    assert_eq!((st.reason, st.taken), (StopReason::CountReached, 11), "11 samples, 12 instants omitted");
    let a = st.anomalies;
    assert_eq!((a.slipped, a.slip_max_ticks), (1, t10 - planned));
}

/// A count is of scheduled instants: a wait that skipped more instants
/// than the count has left carries only those, and the run ends at the
/// count (the host's samples never exceed what the schedule holds).
#[test]
fn omitted_instants_never_exceed_the_count() {
    let (s, _, _, st) = stall_run(15);
    assert_eq!(s.len(), 11);
    assert_eq!(s[10].omitted, 4, "15 instants: 11 stimuli and 4 of the 12 it skipped");
    assert_eq!((st.reason, st.taken), (StopReason::CountReached, 11));
}

/// A stimulus produced an interval or more after its request by a board
/// that did not run (the probe late by itself, not the target) is a slip,
/// but no wait of the target's: its sample carries none.
#[test]
fn a_stimulus_produced_intervals_late_by_the_probe_carries_no_wait() {
    let mut b = bench();
    b.configure(identified(Some(2)));
    b.start();
    let (t0, b0) = b.fire_byte();
    b.answer(t0 + 50, b0);
    let req = b.e.stimulus_request().expect("stimulus 1");
    let late = req.at + 2_500;
    b.now = late;
    b.e.on_stimulus(late, late);
    b.answer(late + 40, latprobe_protocol::identity_byte(1));
    let got = b.drain();
    let s = samples(&got);
    assert_eq!(s[1].outcome, Outcome::Response(40));
    assert!(!s[0].waited() && !s[1].waited(), "{s:?}");
    assert_eq!(stopped(&got).anomalies.slipped, 1);
}

/// A probe late to hear an answer is no wait of the target's: the target
/// answered stimulus 0 long before stimulus 1's planned instant, but the
/// engine got to the capture 4 intervals later (a board busy elsewhere,
/// the rp2040 loopback's start-up). Stimulus 1 went out late, a slip, but
/// its sample carries no wait and no omitted instants.
#[test]
fn an_answer_the_probe_heard_late_charges_the_next_stimulus_no_wait() {
    let mut b = bench();
    b.configure(echo(Some(3)));
    b.start();
    let t0 = b.fire();
    b.now = t0 + 5_000;
    b.e.on_capture(t0 + 10, b.now);
    b.e.poll(b.now);
    let t1 = b.fire();
    assert!(t1 > t0 + 5_000, "stimulus 1 went out after the probe heard answer 0");
    b.respond(t1 + 20);
    let t2 = b.fire();
    b.respond(t2 + 30);
    let got = b.drain();
    let s = samples(&got);
    assert_eq!(s.len(), 3);
    assert_eq!(s[0].outcome, Outcome::Response(10));
    assert!(s.iter().all(|s| !s.waited() && s.omitted == 0), "{s:?}");
    assert_eq!(stopped(&got).taken, 3);
}

/// A stimulus the probe sent late by itself (the rp2040's first one, 96 µs
/// after its plan at a 100 µs interval) and answered at once: the guard
/// after its answer reaches past the next stimulus's plan only because the
/// probe was late, so the next stimulus carries no wait.
#[test]
fn a_stimulus_the_probe_sent_late_holds_the_next_one_for_no_wait_of_the_targets() {
    let mut b = bench();
    b.configure(Config { dither_ticks: 0, ..echo(Some(3)) });
    let start = b.start();
    let req = b.e.stimulus_request().expect("stimulus 0");
    assert_eq!(req.at, start);
    // Produced 950 ticks late (less than the interval: no re-anchoring).
    b.now = start + 950;
    b.e.on_stimulus(b.now, b.now);
    b.respond(start + 955);
    // Its guard ends at start + 1055, past stimulus 1's plan (start + 1000).
    let t1 = b.fire();
    assert_eq!(t1, start + 1055, "the guard still applies");
    b.respond(t1 + 20);
    let t2 = b.fire();
    b.respond(t2 + 30);
    let got = b.drain();
    let s = samples(&got);
    assert_eq!(s.len(), 3);
    assert!(s.iter().all(|s| !s.waited() && s.omitted == 0), "{s:?}");
}
