//! A deterministic simulated probe board and target that drive the real
//! engine through the real framing, with the truth kept for comparison.
//!
//! ```text
//!  truth time t ─┬─▶ counter = t mod 2^bits ─▶ TickExtender ─┐
//!                │   overflow flag, ISR delayed 0..ovf_delay   │ now, ticks
//!                │                                             ▼
//!   host script ─┼─ bytes (random chunks) ──────────▶ Engine ──▶ tx bytes ─▶ HostSide
//!                │                                   ▲   │       (fast, or slow drain)
//!   target ◀─────┴─ stimulus (output compare fires) ─┘   └─ stimulus_request / next_deadline
//!     └─ answer latched by input capture at s + latency, read by a CC interrupt
//!        delayed 0..isr_delay, which converts it with TickExtender::capture
//! ```
//!
//! The board follows the recipe of the firmware crate's docs to the letter:
//! the timer (CC) interrupt reads `now` (counter, then flag), reports the
//! fired compare, delivers every capture latched by then, polls, and
//! re-arms; the overflow interrupt (separate, lower priority, delayed up to
//! `ovf_delay`) only acknowledges the wrap and re-arms; the host-link RX
//! handler only delivers bytes and re-arms. A compare fires where the
//! hardware would: at the first tick after programming whose low bits
//! match, so a board error would show up as a wrong stimulus tick.
//!
//! Simulated time is the extended tick itself: the counter starts at
//! `start` (below one period) and tick `t` reads `t mod 2^bits`.

use std::collections::VecDeque;

use latprobe_firmware::{BoardInfo, Engine, TickExtender, TimerBits};
use latprobe_protocol::{encode_message, Capabilities, HostMsg, Outcome};

use crate::host::HostSide;
use crate::rng::SplitMix64;

/// What the target did with one stimulus (the truth of a sample).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Answered this many ticks after the stimulus, within the timeout.
    Response(u64),
    /// Answered this many ticks after the stimulus, after the timeout: a
    /// timeout sample, and a late response the engine must not match to
    /// anything (nor time).
    Late(u64),
    /// Never answered.
    Missed,
}

impl Answer {
    /// The sample outcome the probe must report for this answer.
    pub fn outcome(self) -> Outcome {
        match self {
            Answer::Response(l) => Outcome::Response(u32::try_from(l).expect("latency fits u32")),
            Answer::Late(_) | Answer::Missed => Outcome::Timeout,
        }
    }
}

/// A simulated target.
#[derive(Debug, Clone)]
pub enum Target {
    /// The latency distribution of [`realistic_answer`].
    Realistic {
        /// Timer rate, to turn the distribution's nanoseconds into ticks.
        hz: u32,
        /// The run's timeout, in ticks.
        timeout: u64,
        /// The run's guard, in ticks.
        guard: u64,
    },
    /// Uniform latency in `lo..=hi` ticks, `missed_ppm` per million unanswered.
    Uniform {
        /// Shortest latency.
        lo: u64,
        /// Longest latency.
        hi: u64,
        /// Unanswered stimuli per million.
        missed_ppm: u64,
    },
    /// A UART target that echoes every stimulus byte in order, like a tty:
    /// an answer cannot overtake the one before it, so a slow answer holds
    /// back the ones queued behind it. Latencies from [`uart_tail_answer`]
    /// (body, tail up to 10 intervals, a few never sent); consecutive
    /// answers are at least `byte_ticks` apart on the line.
    InOrderUart {
        /// Timer rate.
        hz: u32,
        /// The run's interval, in ticks.
        interval: u64,
        /// The run's timeout (horizon), in ticks.
        timeout: u64,
        /// One byte on the target line, in ticks.
        byte_ticks: u64,
    },
    /// An in-order target (like a tty) that answers every stimulus
    /// `latency` ticks after it, except stimulus number `stall_at` (0 from
    /// the first), which it holds for `stall` ticks: the answers queued
    /// behind it come after it, `byte_ticks` apart (issue 42's stall).
    Stalling {
        /// The usual latency.
        latency: u64,
        /// Which stimulus stalls.
        stall_at: u64,
        /// How long its answer takes.
        stall: u64,
        /// One byte on the target line, in ticks.
        byte_ticks: u64,
        /// The run's timeout (horizon), in ticks.
        timeout: u64,
    },
    /// A periodic target on its own clock: see [`ClockedTarget`].
    Clocked(ClockedTarget),
    /// No echo: an edge every `period` ticks ± `jitter`, from `first`.
    Periodic {
        /// First edge.
        first: u64,
        /// Nominal period.
        period: u64,
        /// Largest deviation each way.
        jitter: u64,
    },
}

/// A periodic target whose clock runs `ppm` fast against the probe's, with
/// a sinusoidal drift of `drift_ppm` (one full swing over `drift_cycles`),
/// and a known wake-up delay per cycle (probe ticks):
///
/// | share per million cycles | delay above `floor` |
/// |---|---|
/// | 20 | missed: no edge (only after a cycle that was not late) |
/// | 50 | tail longer than a period: 1.05 to 3.5 periods |
/// | 5 000 | 5 000 to 200 000 ticks |
/// | 30 000 | exactly 0 (the fastest wake-up) |
/// | the rest | 0 to 3 000, skewed low |
///
/// Like `latprobe-responder periodic`, it serves every deadline in order:
/// after an overrun the deadlines already past are marked at once, each
/// `catch_up` ticks after the previous mark. Deadlines: `first` + the sum of
/// the periods so far (compensated summation, in f64 ticks); an edge is
/// latched at the integer tick `floor(deadline) + delay`, or later when
/// catching up.
#[derive(Debug, Clone)]
pub struct ClockedTarget {
    /// Cycle 0's deadline.
    pub first: u64,
    /// The nominal period in probe ticks (the target's at 0 ppm).
    pub nominal: f64,
    /// How much faster the target's clock runs.
    pub ppm: f64,
    /// Amplitude of the drift.
    pub drift_ppm: f64,
    /// Cycles of one drift swing.
    pub drift_cycles: f64,
    /// The fastest wake-up.
    pub floor: u64,
    /// Ticks between marks when catching up.
    pub catch_up: u64,
}

/// What a [`Sink`] calls with the probe's bytes: true once it saw `Stopped`.
pub type SinkFn = dyn FnMut(&[u8]) -> bool;

/// A consumer of the probe's bytes (see [`Sim::sink`]).
pub struct Sink(pub Box<SinkFn>);

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sink")
    }
}

/// What the clocked target did, cycle by cycle (kept compactly: 10⁷
/// cycles are 40 MB).
#[derive(Debug, Default)]
pub struct ClockedTruth {
    /// Per cycle: the delay above the floor in ticks against
    /// `floor(deadline)`, or `u32::MAX` for a missed period.
    pub delay: Vec<u32>,
    /// Missed periods.
    pub missed: u64,
    /// The first and the latest deadline (f64 ticks).
    pub first_deadline: f64,
    /// The latest deadline.
    pub last_deadline: f64,
    /// The offset (ppm) at each cycle is `ppm + drift_ppm·sin(2πk/drift_cycles)`.
    pub ppm_min: f64,
    /// Largest offset over the cycles.
    pub ppm_max: f64,
    // Running state.
    next: f64,
    comp: f64,
    last_edge: Option<u64>,
    prev_late: bool,
}

impl ClockedTarget {
    /// The offset at cycle `k`, ppm.
    pub fn ppm_at(&self, k: f64) -> f64 {
        self.ppm + self.drift_ppm * (2.0 * std::f64::consts::PI * k / self.drift_cycles).sin()
    }

    /// Cycle after cycle until one has an edge: its tick (the truth is
    /// appended to `t`).
    fn next_edge(&self, rng: &mut SplitMix64, t: &mut ClockedTruth) -> u64 {
        loop {
            let k = t.delay.len() as u64;
            if k == 0 {
                t.next = self.first as f64;
                t.first_deadline = t.next;
                t.ppm_min = f64::MAX;
                t.ppm_max = f64::MIN;
            }
            let deadline = t.next;
            t.last_deadline = deadline;
            let ppm = self.ppm_at(k as f64);
            t.ppm_min = t.ppm_min.min(ppm);
            t.ppm_max = t.ppm_max.max(ppm);
            // Kahan: 10⁷ additions must not wander by a tick.
            let p = self.nominal / (1.0 + ppm * 1e-6);
            let y = p - t.comp;
            let sum = t.next + y;
            t.comp = (sum - t.next) - y;
            t.next = sum;

            let r = rng.range(0, 999_999);
            let missed = r < 20 && !t.prev_late;
            let d = if r < 70 {
                (self.nominal * (1.05 + rng.range(0, 2_450) as f64 / 1_000.0)) as u64
            } else if r < 5_070 {
                rng.range(5_000, 200_000)
            } else if r < 35_070 {
                0
            } else {
                rng.range(0, 3_000).min(rng.range(0, 3_000))
            };
            let base = deadline.floor() as u64;
            let mut at = base + self.floor + d;
            if let Some(prev) = t.last_edge {
                at = at.max(prev + self.catch_up);
            }
            t.last_edge = Some(at);
            let above = at - base - self.floor;
            t.prev_late = above as f64 >= self.nominal * 0.5;
            if missed {
                t.missed += 1;
                t.delay.push(u32::MAX);
                continue;
            }
            t.delay.push(u32::try_from(above).expect("delay fits u32"));
            return at;
        }
    }
}

fn ns_to_ticks(ns: u64, hz: u32) -> u64 {
    ns * u64::from(hz) / 1_000_000_000
}

/// One answer of the realistic target (per million stimuli):
///
/// | share | answer |
/// |---|---|
/// | 2 000 | missed: never answered (timeout sample) |
/// | 500 | late: after the timeout, before the guard ends (timeout sample, late response) |
/// | 1 000 | outlier: 10 ms ± 0.2 ms (measured: the timeout is longer) |
/// | 100 | exactly the timeout (the boundary: still a response) |
/// | 50 000 | tail: 60 µs to 2 ms, skewed towards the low end |
/// | the rest | body: 42–58 µs, triangular around 50 µs |
pub fn realistic_answer(rng: &mut SplitMix64, hz: u32, timeout: u64, guard: u64) -> Answer {
    let r = rng.range(0, 999_999);
    let ns = if r < 2_000 {
        return Answer::Missed;
    } else if r < 2_500 {
        // Strictly inside (timeout, timeout + guard): before the next stimulus.
        return Answer::Late(timeout + rng.range(1, guard - 1));
    } else if r < 3_500 {
        rng.range(9_800_000, 10_200_000)
    } else if r < 3_600 {
        return Answer::Response(timeout);
    } else if r < 53_600 {
        60_000 + rng.range(0, 1_940_000).min(rng.range(0, 1_940_000))
    } else {
        42_000 + rng.range(0, 8_000) + rng.range(0, 8_000)
    };
    Answer::Response(ns_to_ticks(ns, hz).max(1))
}

/// The latency the in-order UART target intends for one stimulus, before
/// queueing behind earlier answers (per million stimuli):
///
/// | share | latency |
/// |---|---|
/// | 2 000 | never answered |
/// | 5 000 | tail: 1 to 10 intervals, uniform (beyond 8, past the horizon) |
/// | 50 000 | 60 µs to 2 ms, skewed towards the low end |
/// | the rest | body: 42–58 µs, triangular around 50 µs |
pub fn uart_tail_answer(rng: &mut SplitMix64, hz: u32, interval: u64) -> Option<u64> {
    let r = rng.range(0, 999_999);
    let ns = if r < 2_000 {
        return None;
    } else if r < 7_000 {
        return Some(rng.range(interval, 10 * interval));
    } else if r < 57_000 {
        60_000 + rng.range(0, 1_940_000).min(rng.range(0, 1_940_000))
    } else {
        42_000 + rng.range(0, 8_000) + rng.range(0, 8_000)
    };
    Some(ns_to_ticks(ns, hz).max(1))
}

/// How the host drains the probe's output.
#[derive(Debug, Clone, Copy)]
pub enum Drain {
    /// Everything, in random chunks, after every board event.
    Fast,
    /// At most `bytes` every `every` ticks: a link slower than the probe.
    Slow {
        /// Ticks between reads.
        every: u64,
        /// Bytes per read.
        bytes: usize,
    },
}

/// Parameters of a simulated run.
#[derive(Debug, Clone)]
pub struct SimParams {
    /// Counter width.
    pub bits: TimerBits,
    /// Tick rate.
    pub hz: u32,
    /// Counter value at boot (the extended tick the simulation starts at).
    pub start: u64,
    /// Seed of everything random in the simulation.
    pub seed: u64,
    /// Largest entry delay of the timer (CC) interrupt, in ticks.
    pub isr_delay: u64,
    /// Largest delay of the overflow interrupt (under half a period).
    pub ovf_delay: u64,
    /// The target.
    pub target: Target,
    /// The host's draining.
    pub drain: Drain,
    /// Ticks from a response's capture until the board can deliver it (a
    /// UART byte is read a byte time after its start bit is captured); the
    /// board announces it as its response lag.
    pub byte_lag: u64,
    /// The board's arm lead ([`BoardInfo::with_arm_lead`]), in ticks; 0:
    /// [`BoardInfo::new`]'s (100 µs).
    pub arm_lead: u32,
}

/// Counters of what the simulation exercised.
#[derive(Debug, Clone, Copy, Default)]
pub struct SimCounters {
    /// Timer (CC) interrupts run.
    pub cc_isrs: u64,
    /// Overflow interrupts run.
    pub ovf_isrs: u64,
    /// Stimuli the board had to produce in software (request already past).
    pub software_stimuli: u64,
    /// Captures converted while a wrap was pending, latched before it.
    pub race_before_wrap: u64,
    /// Captures converted while a wrap was pending, latched after it.
    pub race_after_wrap: u64,
    /// Times the counter wrapped between reading it and reading the flag.
    pub wrap_between_reads: u64,
}

#[derive(Debug, Clone, Copy)]
struct Compare {
    fire: u64,
    ccr: u64,
    fired: bool,
    /// The byte a UART stimulus sends.
    byte: Option<u8>,
}

/// A response latched by input capture: its tick, the byte (UART), and
/// when the board can first deliver it.
#[derive(Debug, Clone, Copy)]
struct Latch {
    tick: u64,
    byte: Option<u8>,
    visible: u64,
}

/// The simulated board, target and host.
#[derive(Debug)]
pub struct Sim {
    /// The engine under test.
    pub engine: Engine,
    /// What the host received.
    pub host: HostSide,
    /// Truth: stimulus tick and answer, one per stimulus produced (index = seq).
    pub truth: Vec<(u64, Answer)>,
    /// Truth of periodic mode: every edge tick ([`Target::Periodic`]).
    pub truth_edges: Vec<u64>,
    /// Truth of the clocked target, cycle by cycle ([`Target::Clocked`]).
    pub clocked: ClockedTruth,
    /// Where the probe's bytes go instead of [`HostSide`] (which keeps every
    /// item: too much for 10⁷ of them); it returns true once it has seen
    /// `Stopped`.
    pub sink: Option<Sink>,
    sink_stopped: bool,
    /// What was exercised.
    pub counters: SimCounters,
    p: SimParams,
    ticks: TickExtender,
    mask: u64,
    period: u64,
    t: u64,
    acked: u64,
    ovf_delay_now: u64,
    rng: SplitMix64,
    oc: Option<Compare>,
    armed: Option<u32>,
    wake: Option<u64>,
    latches: VecDeque<Latch>,
    /// The in-order UART target's last answer on the line.
    last_answer: Option<u64>,
    isr_delay_now: Option<u64>,
    next_edge: Option<u64>,
    to_probe: VecDeque<(u64, Vec<u8>)>,
    next_drain: u64,
}

impl Sim {
    /// A board that has just booted at tick `p.start`.
    pub fn new(p: SimParams) -> Self {
        let caps = Capabilities::GPIO_ECHO
            | Capabilities::UART_ECHO
            | Capabilities::PERIODIC
            | Capabilities::LOOPBACK
            | Capabilities::HW_CAPTURE
            | Capabilities::EMULATED;
        let lag = u32::try_from(p.byte_lag).expect("byte lag fits u32");
        let mut board = BoardInfo::new("sim", p.hz, p.bits, caps).with_response_lag(lag);
        if p.arm_lead != 0 {
            board = board.with_arm_lead(p.arm_lead);
        }
        let engine = Engine::new(board);
        let mask = p.bits.mask();
        assert!(p.bits != TimerBits::B64, "the simulation models a wrapping counter");
        assert!(p.start <= mask);
        assert!(p.ovf_delay <= mask / 2, "overflow ISR must run within half a period");
        let mut rng = SplitMix64::new(p.seed);
        let ovf_delay_now = rng.range(0, p.ovf_delay);
        let mut clocked = ClockedTruth::default();
        let next_edge = match &p.target {
            Target::Periodic { first, .. } => Some(*first),
            Target::Clocked(c) => Some(c.next_edge(&mut rng, &mut clocked)),
            _ => None,
        };
        let next_drain = p.start;
        let mut sim = Self {
            engine,
            host: HostSide::new(),
            truth: Vec::new(),
            truth_edges: Vec::new(),
            clocked,
            sink: None,
            sink_stopped: false,
            counters: SimCounters::default(),
            ticks: TickExtender::new(p.bits),
            mask,
            period: mask + 1,
            t: p.start,
            acked: 0,
            ovf_delay_now,
            rng,
            oc: None,
            armed: None,
            wake: None,
            latches: VecDeque::new(),
            last_answer: None,
            isr_delay_now: None,
            next_edge,
            to_probe: VecDeque::new(),
            next_drain,
            p,
        };
        sim.after_handler();
        sim
    }

    /// Simulated time now.
    pub fn now(&self) -> u64 {
        self.t
    }

    /// The host sends `msg` at tick `at`, its bytes split into random chunks
    /// arriving a few ticks apart.
    pub fn host_send(&mut self, at: u64, msg: &HostMsg) {
        let mut buf = [0u8; 256];
        let n = encode_message(msg, &mut buf).expect("host message encodes");
        let mut at = at.max(self.to_probe.back().map_or(0, |b| b.0));
        let mut i = 0;
        while i < n {
            let len = (self.rng.range(1, 8) as usize).min(n - i);
            self.to_probe.push_back((at, buf[i..i + len].to_vec()));
            i += len;
            at += self.rng.range(0, 3);
        }
    }

    /// Run until the host has its `Stopped` and the probe has nothing left
    /// to send, or panic after `max_events` events.
    pub fn run_to_stop(&mut self, max_events: u64) {
        for _ in 0..max_events {
            let stopped = self.host.stopped.is_some() || self.sink_stopped;
            if stopped && !self.engine.is_running() && self.engine.tx_pending() == 0 {
                return;
            }
            self.step();
        }
        panic!("simulation did not stop within {max_events} events (t = {})", self.t);
    }

    /// Run until tick `until`.
    pub fn run_until(&mut self, until: u64) {
        while self.next_event_time() <= until {
            self.step();
        }
        self.t = self.t.max(until);
    }

    fn next_event_time(&mut self) -> u64 {
        self.next_event().0
    }

    /// The next event: its time and kind, ties broken so that hardware
    /// (compare fires, edges) happens before the interrupts that see it.
    fn next_event(&mut self) -> (u64, Ev) {
        let mut best = (u64::MAX, Ev::Idle);
        let mut consider = |t: Option<u64>, ev: Ev| {
            if let Some(t) = t {
                if (t, ev as u8) < (best.0, best.1 as u8) {
                    best = (t, ev);
                }
            }
        };
        consider(self.oc.filter(|o| !o.fired).map(|o| o.fire), Ev::CompareFires);
        consider(self.next_edge, Ev::Edge);
        consider(Some((self.acked + 1) * self.period + self.ovf_delay_now), Ev::OverflowIsr);
        let first_flag = [self.oc.map(|o| o.fire), self.latches.front().map(|l| l.visible), self.wake]
            .into_iter()
            .flatten()
            .min();
        if let Some(f) = first_flag {
            let d = *self.isr_delay_now.get_or_insert_with(|| self.rng.range(0, self.p.isr_delay));
            consider(Some((f + d).max(self.t)), Ev::TimerIsr);
        }
        consider(self.to_probe.front().map(|c| c.0.max(self.t)), Ev::HostRx);
        if let Drain::Slow { .. } = self.p.drain {
            consider(Some(self.next_drain), Ev::SlowDrain);
        }
        best
    }

    /// Process the next event.
    pub fn step(&mut self) {
        let (t, ev) = self.next_event();
        assert!(t >= self.t, "time ran backwards: {t} < {}", self.t);
        self.t = t;
        match ev {
            Ev::Idle => panic!("nothing left to simulate"),
            Ev::CompareFires => self.compare_fires(),
            Ev::Edge => self.edge(),
            Ev::OverflowIsr => self.overflow_isr(),
            Ev::TimerIsr => self.timer_isr(),
            Ev::HostRx => self.host_rx(),
            Ev::SlowDrain => self.slow_drain(),
        }
    }

    /// The board's view of the time: counter first, then the flag, read one
    /// tick later (the worst case of two register reads), so a wrap can
    /// fall between the two reads.
    fn board_now(&mut self) -> u64 {
        let pending = (self.t + 1) / self.period > self.acked;
        if pending && self.t / self.period == self.acked {
            self.counters.wrap_between_reads += 1;
        }
        let now = self.ticks.now(self.t & self.mask, pending);
        assert_eq!(now, self.t, "tick extension lost the time");
        now
    }

    fn compare_fires(&mut self) {
        let o = self.oc.as_mut().expect("armed compare");
        o.fired = true;
        let s = o.fire;
        let answer = match self.p.target {
            Target::Realistic { hz, timeout, guard } => realistic_answer(&mut self.rng, hz, timeout, guard),
            Target::Uniform { lo, hi, missed_ppm } => {
                if self.rng.chance(missed_ppm) {
                    Answer::Missed
                } else {
                    Answer::Response(self.rng.range(lo, hi))
                }
            }
            Target::InOrderUart { hz, interval, timeout, byte_ticks } => {
                match uart_tail_answer(&mut self.rng, hz, interval) {
                    None => Answer::Missed,
                    Some(l) => {
                        // Queued behind the previous answer on the line.
                        let at = self.last_answer.map_or(s + l, |prev| (s + l).max(prev + byte_ticks));
                        self.last_answer = Some(at);
                        if at - s <= timeout {
                            Answer::Response(at - s)
                        } else {
                            Answer::Late(at - s)
                        }
                    }
                }
            }
            Target::Stalling { latency, stall_at, stall, byte_ticks, timeout } => {
                let l = if self.truth.len() as u64 == stall_at { stall } else { latency };
                let at = self.last_answer.map_or(s + l, |prev| (s + l).max(prev + byte_ticks));
                self.last_answer = Some(at);
                if at - s <= timeout {
                    Answer::Response(at - s)
                } else {
                    Answer::Late(at - s)
                }
            }
            Target::Periodic { .. } | Target::Clocked(_) => Answer::Missed,
        };
        let byte = o.byte;
        if let Answer::Response(l) | Answer::Late(l) = answer {
            self.latch(s + l, byte);
        }
        self.truth.push((s, answer));
    }

    fn edge(&mut self) {
        let e = self.next_edge.expect("edge scheduled");
        self.latch(e, None);
        if let Target::Clocked(c) = &self.p.target {
            self.next_edge = Some(c.next_edge(&mut self.rng, &mut self.clocked));
            return;
        }
        self.truth_edges.push(e);
        if let Target::Periodic { period, jitter, first } = self.p.target {
            let k = self.truth_edges.len() as u64;
            let nominal = first + k * period;
            self.next_edge = Some(nominal - jitter + self.rng.range(0, 2 * jitter));
        }
    }

    fn latch(&mut self, c: u64, byte: Option<u8>) {
        assert!(self.latches.back().is_none_or(|b| b.tick <= c), "captures out of order");
        self.latches.push_back(Latch { tick: c, byte, visible: c + self.p.byte_lag });
    }

    fn timer_isr(&mut self) {
        self.counters.cc_isrs += 1;
        self.isr_delay_now = None;
        let h = self.t;
        let now = self.board_now();
        if let Some(o) = self.oc.filter(|o| o.fired && o.fire <= h) {
            self.oc = None;
            self.engine.on_stimulus(self.ticks.capture(o.ccr, now), now);
        }
        let pending_wrap = (h / self.period > self.acked).then_some((self.acked + 1) * self.period);
        while let Some(&l) = self.latches.front().filter(|l| l.visible <= h) {
            self.latches.pop_front();
            let c = l.tick;
            match pending_wrap {
                Some(w) if c < w => self.counters.race_before_wrap += 1,
                Some(_) => self.counters.race_after_wrap += 1,
                None => {}
            }
            let tick = self.ticks.capture(c & self.mask, now);
            match l.byte {
                Some(b) => self.engine.on_response_byte(tick, b, now),
                None => self.engine.on_capture(tick, now),
            }
        }
        if self.wake.is_some_and(|w| w <= h) {
            self.wake = None;
        }
        self.engine.poll(now);
        self.apply(now);
        self.after_handler();
    }

    fn overflow_isr(&mut self) {
        self.counters.ovf_isrs += 1;
        self.ticks.on_overflow();
        self.acked += 1;
        self.ovf_delay_now = self.rng.range(0, self.p.ovf_delay);
        let now = self.board_now();
        self.apply(now);
        self.after_handler();
    }

    fn host_rx(&mut self) {
        let (_, bytes) = self.to_probe.pop_front().expect("host bytes");
        let now = self.board_now();
        self.engine.on_host_bytes(&bytes, now);
        self.apply(now);
        self.after_handler();
    }

    fn slow_drain(&mut self) {
        if let Drain::Slow { every, bytes } = self.p.drain {
            let mut buf = vec![0u8; bytes];
            let n = self.engine.read_tx(&mut buf);
            self.deliver(&buf[..n]);
            self.next_drain += every;
        }
    }

    /// Step 4 of the board recipe: arm the stimulus compare and the wake-up.
    fn apply(&mut self, now: u64) {
        match self.engine.stimulus_request() {
            Some(req) if self.armed != Some(req.id) => {
                self.armed = Some(req.id);
                let byte = match req.stimulus {
                    latprobe_protocol::Stimulus::Byte(b) => Some(b),
                    _ => None,
                };
                match self.ticks.compare_value(req.at, now) {
                    Some(ccr) => {
                        let fire = now + (ccr.wrapping_sub(now) & self.mask);
                        self.oc = Some(Compare { fire, ccr, fired: false, byte });
                    }
                    None if req.at <= now => {
                        self.counters.software_stimuli += 1;
                        self.oc = Some(Compare { fire: now, ccr: now & self.mask, fired: false, byte });
                    }
                    None => {
                        // Too far for the counter: armed after a later wrap.
                        self.armed = None;
                        self.oc = None;
                    }
                }
            }
            Some(_) => {}
            None => {
                self.armed = None;
                // A compare that fired is reported by the timer ISR anyway.
                self.oc = self.oc.filter(|o| o.fired);
            }
        }
        self.wake = match self.engine.next_deadline() {
            None => None,
            Some(d) => match self.ticks.compare_value(d, now) {
                Some(ccr) => Some(now + (ccr.wrapping_sub(now) & self.mask)),
                // Due already: pend the timer interrupt.
                None if d <= now => Some(now),
                None => None,
            },
        };
    }

    fn deliver(&mut self, bytes: &[u8]) {
        match &mut self.sink {
            Some(sink) => self.sink_stopped |= (sink.0)(bytes),
            None => self.host.feed(bytes),
        }
    }

    fn after_handler(&mut self) {
        if let Drain::Fast = self.p.drain {
            let mut buf = [0u8; 128];
            loop {
                let want = self.rng.range(1, buf.len() as u64) as usize;
                let n = self.engine.read_tx(&mut buf[..want]);
                if n == 0 {
                    break;
                }
                let bytes = buf;
                self.deliver(&bytes[..n]);
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    CompareFires = 0,
    Edge = 1,
    OverflowIsr = 2,
    TimerIsr = 3,
    HostRx = 4,
    SlowDrain = 5,
    Idle = 6,
}
