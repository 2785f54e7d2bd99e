//! The capture loop on the fake timer: one test per defect found in the board code before it, each
//! saying what the board code before the loop did (and so why it failed).
//!
//! The simulation runs the two halves the way the board's RTIC app does:
//! an interrupt (`Front`) runs `irq_latency` after its flag, the engine
//! task (`HwLoop::run`) after the interrupts, `task_delay` later.

use std::vec::Vec;

use latprobe_protocol::{
    decode_message, encode_message, Anomalies, Capabilities, Config, Edge, EdgeStamp, Feed, FrameDecoder,
    HostMsg, Mode, Outcome, ProbeMsg, ResponseLine, Sample, Stimulus, Stopped,
};

use super::fake::{Fake, Pin, Target, Wires};
use super::*;
use crate::boards;
use crate::engine::BoardInfo;
use crate::ticks::TickExtender;

const HZ: u32 = 100_000_000;
/// One bit at 115200 Bd, in ticks (as `LoopConfig::bit_ticks`).
const BIT: u64 = HZ as u64 / 115_200;
const US: u64 = 100;
const MS: u64 = 100_000;

fn caps() -> Capabilities {
    Capabilities::GPIO_ECHO
        | Capabilities::UART_ECHO
        | Capabilities::PERIODIC
        | Capabilities::LOOPBACK
        | Capabilities::HW_CAPTURE
}

/// The Nucleo's board description, as its binary builds it.
fn nucleo_board() -> BoardInfo {
    let lc = boards::nucleo_f411re::LOOP;
    BoardInfo::new("fake-nucleo", HZ, TimerBits::B32, caps())
        .with_uart_echo_floor(lc.baud)
        .with_response_lag((2 * lc.byte_ticks()) as u32)
}

struct Locked<'a> {
    front: &'a mut Front,
    hw: &'a mut Fake,
}

impl TimerLock for Locked<'_> {
    type Hw = Fake;
    fn lock<R>(&mut self, f: impl FnOnce(&mut Front, &mut Fake) -> R) -> R {
        f(self.front, self.hw)
    }
}

#[derive(Debug, Default)]
struct Host {
    samples: Vec<Sample>,
    edges: Vec<EdgeStamp>,
    stopped: Option<Stopped>,
    errors: usize,
    logs: Vec<std::string::String>,
}

struct Sim {
    hw: Fake,
    front: Front,
    lp: HwLoop,
    e: Engine<4096>,
    irq_latency: u64,
    task_delay: u64,
    task_at: Option<u64>,
    rx: FrameDecoder,
    host: Host,
}

impl Sim {
    fn new(cfg: LoopConfig, board: BoardInfo, t0: u64) -> Self {
        let mut s = Self {
            hw: Fake::new(t0),
            front: Front::new(cfg.timer_bits),
            lp: HwLoop::new(cfg),
            e: Engine::new(board),
            irq_latency: 40,
            task_delay: 0,
            task_at: None,
            rx: FrameDecoder::new(),
            host: Host::default(),
        };
        // Boot: the counter was started at 0 and has been counted so far.
        for _ in 0..t0 >> 32 {
            s.front.ext.on_overflow();
        }
        s.hw.filter = u64::from(cfg.capture_delay_ticks);
        s.pend();
        s
    }

    fn nucleo(t0: u64) -> Self {
        Self::new(boards::nucleo_f411re::LOOP, nucleo_board(), t0)
    }

    fn pend(&mut self) {
        if self.task_at.is_none() {
            self.task_at = Some(self.hw.t + self.task_delay);
        }
    }

    /// The host link's receive task: `now`, then the engine.
    fn host_says(&mut self, msg: &HostMsg) {
        let mut buf = [0u8; 256];
        let n = encode_message(msg, &mut buf).unwrap();
        let now = self.front.now(&mut self.hw);
        self.e.on_host_bytes(&buf[..n], now);
        self.pend();
    }

    fn drain(&mut self) {
        let mut buf = [0u8; 512];
        loop {
            let n = self.e.read_tx(&mut buf);
            if n == 0 {
                break;
            }
            let mut input = &buf[..n];
            loop {
                match self.rx.feed(input) {
                    Feed::NeedMore => break,
                    Feed::Frame { frame, rest } => {
                        match decode_message::<ProbeMsg>(frame).unwrap() {
                            ProbeMsg::SampleBatch(b) => {
                                self.host.samples.extend(b.iter().map(|s| s.unwrap()))
                            }
                            ProbeMsg::EdgeBatch(b) => self.host.edges.extend(b.iter().map(|s| s.unwrap())),
                            ProbeMsg::Stopped(s) => self.host.stopped = Some(s),
                            ProbeMsg::Error(_) => self.host.errors += 1,
                            ProbeMsg::Log(l) => self.host.logs.push(l.text.into()),
                            _ => {}
                        }
                        input = rest;
                    }
                    Feed::Bad { error, .. } => panic!("bad frame: {error:?}"),
                }
            }
        }
    }

    /// Run the MCU until `end` or until the run stopped.
    fn run_until(&mut self, end: u64) {
        while self.hw.t < end {
            if self.hw.tim_irq() || self.hw.rx_ready() {
                let entry = self.hw.t + self.irq_latency;
                self.hw.advance(entry);
                while let Some(b) = self.hw.rx_take() {
                    match b {
                        Ok(b) => self.front.on_target_byte(&mut self.hw, b),
                        Err(()) => self.front.on_target_error(),
                    }
                }
                if self.hw.tim_irq() {
                    self.front.on_timer_interrupt(&mut self.hw);
                }
                self.pend();
                continue;
            }
            if let Some(at) = self.task_at {
                if self.hw.t >= at {
                    self.task_at = None;
                    let mut l = Locked { front: &mut self.front, hw: &mut self.hw };
                    self.lp.run(&mut self.e, &mut l);
                    self.drain();
                    if self.host.stopped.is_some() {
                        return;
                    }
                    continue;
                }
            }
            let mut next = self.hw.next_event().min(end);
            if let Some(at) = self.task_at {
                next = next.min(at);
            }
            self.hw.advance(next.max(self.hw.t + 1));
        }
    }

    fn measure(&mut self, config: Config, limit: u64) -> Stopped {
        self.host_says(&HostMsg::Configure(config));
        self.host_says(&HostMsg::Start);
        let end = self.hw.t + limit;
        self.run_until(end);
        self.host
            .stopped
            .unwrap_or_else(|| panic!("no Stopped by {end}: {} samples", self.host.samples.len()))
    }

    fn latencies(&self) -> Vec<Option<u32>> {
        self.host
            .samples
            .iter()
            .map(|s| match s.outcome {
                Outcome::Response(l) => Some(l),
                Outcome::Timeout => None,
            })
            .collect()
    }
}

fn echo(mode: Mode, stimulus: Stimulus, count: u64) -> Config {
    Config {
        mode,
        interval_ticks: (MS) as u32,
        dither_ticks: 0,
        timeout_ticks: (500 * US) as u32,
        guard_ticks: 0,
        count: Some(count),
        seed: 1,
        stimulus,
    }
}

fn quiet(a: &Anomalies) -> bool {
    a.late == 0 && a.unmatched == 0 && a.duplicates == 0 && a.wrong_bytes == 0 && a.overcaptures == 0
}

// ----- defect 1: no PB10 wire -----

/// Without the TX capture wire the old board reported the stimulus only
/// two byte times (174 µs) after the write, for every byte. An 85 µs echo
/// (just above the 9.5-bit floor) is read 82 µs after its start bit, at
/// 167 µs: "before" its stimulus was reported, so it was counted late and
/// every sample timed out.
/// Now the first byte of the run waits two bit times for its capture and
/// every later one is reported at once with the tick read before the
/// write: every answer is timed, and each soft tick is counted.
#[test]
fn without_the_tx_capture_wire_fast_answers_are_timed_with_soft_ticks() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.uart_response_line();
    s.hw.target = Target::UartEcho { latency: 85 * US };
    let n = 20;
    let st = s.measure(echo(Mode::UartEcho, Stimulus::Identified, n), 100 * MS);
    assert_eq!((st.taken, st.timeouts), (n, 0), "{st:?}");
    assert!(quiet(&st.anomalies), "{:?}", st.anomalies);
    // Start bit to start bit, from a software tick: the true latency plus
    // the time from the counter read to the start bit (a few accesses and
    // the transmitter's start), never less than the true one.
    for (l, &(start, _)) in s.latencies().iter().zip(&s.hw.sent) {
        let l = u64::from(l.unwrap());
        assert!((85 * US..85 * US + 60).contains(&l), "latency {l}, start bit at {start}");
    }
    assert_eq!(s.e.totals().anomalies.soft_stimuli, n);
    assert_eq!(s.lp.tx_wired(), Some(false));
    // The user on the serial link is told which wire is missing, once.
    assert_eq!(s.host.logs.len(), 1, "{:?}", s.host.logs);
    assert!(s.host.logs[0].contains("wire PA9 to PB10"), "{:?}", s.host.logs);
}

/// With the wire, the start bit's capture is the stimulus tick: exact.
#[test]
fn with_the_tx_capture_wire_uart_echo_is_exact() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.uart_response_line();
    s.hw.wires.tx_capture = true;
    s.hw.target = Target::UartEcho { latency: 100 * US };
    let st = s.measure(echo(Mode::UartEcho, Stimulus::Identified, 20), 100 * MS);
    assert_eq!((st.taken, st.timeouts), (20, 0));
    assert!(quiet(&st.anomalies), "{:?}", st.anomalies);
    assert!(s.latencies().iter().all(|&l| l == Some((100 * US) as u32)), "{:?}", s.latencies());
    assert_eq!(s.e.totals().anomalies.soft_stimuli, 0);
    assert_eq!(s.lp.tx_wired(), Some(true));
    assert!(s.host.logs.is_empty(), "{:?}", s.host.logs);
}

/// Stimuli every 50 µs, faster than a byte (87 µs): the transmitter
/// fills up and a write is refused; the loop writes again a bit time
/// later instead of blocking in the timer's lock, and each byte's tick is
/// its own start bit.
#[test]
fn stimuli_faster_than_the_line_wait_for_the_transmitter() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.uart_response_line();
    s.hw.wires.tx_capture = true;
    s.hw.target = Target::UartEcho { latency: 150 * US };
    let mut c = echo(Mode::UartEcho, Stimulus::Identified, 40);
    c.interval_ticks = (50 * US) as u32;
    c.timeout_ticks = (400 * US) as u32;
    let st = s.measure(c, 100 * MS);
    assert_eq!((st.taken, st.timeouts), (40, 0), "{st:?}");
    assert!(quiet(&st.anomalies), "{:?}", st.anomalies);
    assert!(s.latencies().iter().all(|&l| l == Some((150 * US) as u32)), "{:?}", s.latencies());
    let starts: Vec<u64> = s.hw.sent.iter().map(|&(t, _)| t).collect();
    let ticks: Vec<u64> = s.host.samples.iter().map(|x| x.stimulus_tick).collect();
    assert_eq!(ticks, starts);
}

// ----- defect 2: periodic over UART -----

/// The old board captured both edges in periodic mode: a 0x55 byte is 10
/// edges, so `--count 20` ended after two bytes with bit edges for
/// stamps. Now each byte is one edge, its start bit, exactly.
#[test]
fn periodic_over_uart_counts_one_edge_per_byte_at_its_start_bit() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.uart_response_line();
    let first = s.hw.t + 2 * MS;
    let starts: Vec<u64> = (0..30).map(|k| first + k * MS + k * 37).collect();
    for &t in &starts {
        s.hw.byte_in(t, 0x55);
    }
    let mut c = echo(Mode::Periodic, Stimulus::None(ResponseLine::Uart), 20);
    c.timeout_ticks = 0;
    let st = s.measure(c, 100 * MS);
    assert_eq!(st.taken, 20, "{st:?}");
    let ticks: Vec<u64> = s.host.edges.iter().map(|e| e.tick).collect();
    assert_eq!(ticks, starts[..20]);
    assert_eq!(st.anomalies.overcaptures, 0);
}

/// Periodic over a GPIO: every edge, both polarities, each exact.
#[test]
fn periodic_over_gpio_counts_every_edge() {
    let mut s = Sim::nucleo(1_000_000);
    let first = s.hw.t + 2 * MS;
    let times: Vec<u64> = (0..12).map(|k| first + k * 500 * US + k * 3).collect();
    for (k, &t) in times.iter().enumerate() {
        s.hw.edge_at(Pin::Response, t, k % 2 == 0);
    }
    let mut c = echo(Mode::Periodic, Stimulus::None(ResponseLine::Gpio), 10);
    c.timeout_ticks = 0;
    let st = s.measure(c, 100 * MS);
    assert_eq!(st.taken, 10);
    let ticks: Vec<u64> = s.host.edges.iter().map(|e| e.tick).collect();
    assert_eq!(ticks, times[..10]);
}

// ----- defect 3: read order, overcapture, encoding off the top priority -----

/// A capture that latches inside the interrupt, a tick after its `now`
/// was read (the hook). The old board read `now` first and CCR2 after: it
/// read that capture in the same pass, with a counter value just *above*
/// `now`'s, which `TickExtender::capture` places a whole period (42.9 s)
/// in the past, before its stimulus: counted late, the sample timed out.
/// Now the captures are read before `now`: this one stays latched for the
/// next pass, which reads it with a later `now`: exact.
#[test]
fn a_capture_latched_inside_the_interrupt_keeps_its_tick() {
    // What the old order did with such a capture:
    let ext = TickExtender::new(TimerBits::B32);
    let now = 5_000;
    assert_eq!(ext.capture(now + 1, now + (1 << 32)), now + 1, "read after now: a period back");

    let mut s = Sim::nucleo(1_000_000);
    // GPIO loopback, toggle: each stimulus's own edge answers it. The
    // hook replaces the loopback's latch on the first stimulus.
    s.hw.wires.gpio_loopback = true;
    s.hw.target = Target::None;
    s.host_says(&HostMsg::Configure(echo(Mode::Loopback, Stimulus::Edge(Edge::Toggle), 5)));
    s.host_says(&HostMsg::Start);
    // Run to just before the first compare's interrupt, then arm the hook
    // so that the capture lands inside the interrupt, between the reads.
    let req = loop {
        s.run_until(s.hw.t + 10);
        if let Some(r) = s.e.stimulus_request() {
            if s.hw.pin_edges.is_empty() && s.hw.t + 200 > r.at {
                break r;
            }
        }
    };
    s.hw.wires.gpio_loopback = false;
    s.hw.hook = Some((Pin::Response, true));
    s.run_until(req.at + 20 * US);
    s.hw.wires.gpio_loopback = true;
    s.run_until(s.hw.t + 20 * MS);
    let st = s.host.stopped.expect("stopped");
    assert_eq!((st.taken, st.timeouts, st.anomalies.late), (5, 0, 0), "{st:?}");
    let l = s.latencies();
    // The hooked capture latched during the interrupt: its latency is the
    // interrupt's entry and a few accesses, small and positive.
    assert!(l[0].is_some_and(|l| l < 200), "{l:?}");
    assert!(l[1..].iter().all(|&l| l == Some(0)), "{l:?}");
}

/// The same for the TX start-bit capture (CH3), which the old board also
/// read after `now`: latched inside the interrupt, a tick after `now`, it
/// is read in the next pass and keeps its tick (the old order placed it
/// 42.9 s back).
#[test]
fn a_tx_capture_latched_inside_the_interrupt_keeps_its_tick() {
    let t0 = 7 * MS;
    let mut hw = Fake::new(t0);
    let mut front = Front::new(TimerBits::B32);
    hw.set_capture(Channel::TxStart, Some(Polarity::Falling));
    hw.hook = Some((Pin::TxStart, false));
    front.on_timer_interrupt(&mut hw);
    assert!(front.tx_start.is_none(), "latched after `now`: not read in this pass");
    front.on_timer_interrupt(&mut hw);
    let (tick, over) = front.tx_start.expect("read in the next pass");
    assert!(!over);
    assert!(tick > t0 && tick <= hw.t, "tick {tick} outside {t0}..={}", hw.t);
}

/// 0x55 has four falling data edges. With the interrupt late by more than
/// two bit times, CCR2 holds a data edge and CC2OF is set: the start bit
/// is gone. The old board paired that data edge with the byte: a latency
/// 2 (or 4, 6, 8) bit times too long, reported as exact. Now the byte is
/// not timed (its sample times out) and the overcapture is counted; no
/// latency is ever a data edge's.
#[test]
fn an_overcaptured_uart_answer_is_never_timed_by_a_data_edge() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.uart_response_line();
    s.hw.wires.tx_capture = true;
    s.hw.target = Target::UartEcho { latency: 100 * US };
    s.irq_latency = 2 * BIT + BIT / 2;
    let st = s.measure(echo(Mode::UartEcho, Stimulus::Byte(0x55), 10), 100 * MS);
    assert_eq!(st.taken, 10);
    assert!(st.anomalies.overcaptures >= 10, "{:?}", st.anomalies);
    for l in s.latencies().into_iter().flatten() {
        assert_eq!(u64::from(l), 100 * US, "a data edge timed an answer");
    }
}

/// The identity bytes have one falling edge each: a late interrupt (three
/// bit times) overwrites nothing and every answer is exact.
#[test]
fn identity_answers_are_exact_with_a_late_interrupt() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.uart_response_line();
    s.hw.wires.tx_capture = true;
    s.hw.target = Target::UartEcho { latency: 150 * US };
    s.irq_latency = 3 * BIT;
    let st = s.measure(echo(Mode::UartEcho, Stimulus::Identified, 30), 100 * MS);
    assert_eq!((st.taken, st.timeouts), (30, 0));
    assert!(quiet(&st.anomalies), "{:?}", st.anomalies);
    assert!(s.latencies().iter().all(|&l| l == Some((150 * US) as u32)));
}

/// GPIO echo with two answer edges before the interrupt (a target that
/// answered twice within the interrupt's delay): the old board took the
/// latest edge as the answer. Now the capture is dropped and counted:
/// the latest of several edges is not the answer's time.
#[test]
fn an_overcaptured_gpio_answer_is_not_timed() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.target = Target::GpioEcho { edge: Edge::Toggle, latency: 50 * US, pulse: Some(3 * US) };
    s.irq_latency = 5 * US;
    let st = s.measure(echo(Mode::GpioEcho, Stimulus::Edge(Edge::Toggle), 5), 100 * MS);
    assert_eq!(st.taken, 5);
    assert_eq!(st.anomalies.overcaptures, 5, "{:?}", st.anomalies);
    assert!(s.latencies().iter().all(Option::is_none), "{:?}", s.latencies());
}

/// The engine (and its CRC/COBS) runs in the engine task, not in the
/// capture interrupt: with that task held off for 400 µs at a time, the
/// interrupts keep logging and every answer is still exact.
#[test]
fn a_late_engine_task_loses_no_timing() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.uart_response_line();
    s.hw.wires.tx_capture = true;
    s.hw.target = Target::UartEcho { latency: 120 * US };
    s.task_delay = 400 * US;
    let st = s.measure(echo(Mode::UartEcho, Stimulus::Identified, 30), 200 * MS);
    assert_eq!((st.taken, st.timeouts), (30, 0), "{st:?}");
    assert!(quiet(&st.anomalies), "{:?}", st.anomalies);
    assert!(s.latencies().iter().all(|&l| l == Some((120 * US) as u32)));
}

// ----- defect 7: loopback skew -----

/// UART loopback: CH3 (PB10) latches one tick after CH2 (PA1) sees the
/// same edge. The old board fed the engine a response one tick before its
/// stimulus: `tick >= stim` failed, counted late, every sample timed out.
/// Now the answer is placed at its stimulus: latency 0.
#[test]
fn uart_loopback_with_a_tick_of_channel_skew_is_zero_not_late() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.uart_response_line();
    s.hw.wires = Wires { uart_loopback: true, tx_capture: true, gpio_loopback: false };
    s.hw.skew = [0, 1];
    let st = s.measure(echo(Mode::Loopback, Stimulus::Identified, 20), 100 * MS);
    assert_eq!((st.taken, st.timeouts), (20, 0), "{st:?}");
    assert!(quiet(&st.anomalies), "{:?}", st.anomalies);
    assert!(s.latencies().iter().all(|&l| l == Some(0)));
    assert_eq!(s.lp.stats().skew_clamped, 20);
}

// ----- defect 8: gpio-echo Rising/Falling -----

/// A target that answers a rising edge with a 20 µs pulse. The old board
/// captured both edges: the pulse's falling edge came as a second answer,
/// one late response per sample (and, with a slow pulse, the return edge
/// could answer the next stimulus). Now only rising edges are captured.
#[test]
fn gpio_echo_rising_captures_only_the_answer_polarity() {
    for edge in [Edge::Rising, Edge::Falling] {
        let mut s = Sim::nucleo(1_000_000);
        if edge == Edge::Falling {
            // The target's line idles high for a falling answer.
            s.hw.uart_response_line();
        }
        s.hw.target = Target::GpioEcho { edge, latency: 70 * US, pulse: Some(20 * US) };
        let st = s.measure(echo(Mode::GpioEcho, Stimulus::Edge(edge), 10), 100 * MS);
        assert_eq!((st.taken, st.timeouts), (10, 0), "{edge:?} {st:?}");
        assert!(quiet(&st.anomalies), "{edge:?} {:?}", st.anomalies);
        assert!(s.latencies().iter().all(|&l| l == Some((70 * US) as u32)), "{edge:?} {:?}", s.latencies());
    }
}

// ----- defect 9: compare order, toggle after the run, the input filter -----

/// After a Toggle run the old board left OC1M at "toggle on match": PA0
/// inverted again every counter period (42.9 s) for ever. Now the pin is
/// frozen at the match: nothing moves after the run.
#[test]
fn toggle_never_moves_the_pin_after_the_run() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.target = Target::GpioEcho { edge: Edge::Toggle, latency: 30 * US, pulse: None };
    let st = s.measure(echo(Mode::GpioEcho, Stimulus::Edge(Edge::Toggle), 3), 100 * MS);
    assert_eq!(st.taken, 3);
    let edges = s.hw.pin_edges.len();
    assert_eq!(edges, 3);
    let t = s.hw.t;
    s.host.stopped = None;
    s.run_until(t + 3 * (1 << 32));
    assert_eq!(s.hw.pin_edges.len(), edges, "{:?}", &s.hw.pin_edges[edges..]);
}

/// Slow register writes and a short arm lead: `at` comes while the
/// compare is being programmed. The old order wrote CCR1 first and OC1M
/// after: a match between the two set CC1IF without moving the pin, and
/// the board reported `at` for an edge that never happened. Now every
/// reported stimulus tick is when the pin moved (or, made in software,
/// the counter read right before it moved).
#[test]
fn every_reported_edge_tick_is_when_the_pin_moved() {
    for lead in 1u32..=80 {
        let board = nucleo_board().with_arm_lead(lead);
        let mut s = Sim::new(boards::nucleo_f411re::LOOP, board, 1_000_000);
        s.hw.access_ticks = 3;
        s.hw.wires.gpio_loopback = true;
        let st = s.measure(echo(Mode::Loopback, Stimulus::Edge(Edge::Toggle), 8), 100 * MS);
        assert_eq!((st.taken, st.timeouts), (8, 0), "lead {lead}: {st:?}");
        for (smp, &(moved, _)) in s.host.samples.iter().zip(&s.hw.pin_edges) {
            let d = moved - smp.stimulus_tick;
            assert!(d <= 2 * s.hw.access_ticks, "lead {lead}: reported {} moved {moved}", smp.stimulus_tick);
        }
        assert_eq!(s.hw.pin_edges.len(), 8);
    }
}

/// A stimulus planned late (the engine task ran after its tick, here every
/// time: the task is 1.5 intervals late) still makes an edge. The old loop
/// forced the active level at once, without the rest before it: the pin
/// was still high from the stimulus before, so no edge came, and every
/// late stimulus timed out (found in rp2040js with the Pico's firmware at
/// a 120 µs interval, where the engine falls behind its schedule).
#[test]
fn a_stimulus_planned_late_rests_the_line_and_still_makes_its_edge() {
    // An arm lead of one tick and slow register accesses: the plan's `now`
    // is past the tick the engine asked for.
    let board = nucleo_board().with_arm_lead(1);
    let mut s = Sim::new(boards::nucleo_f411re::LOOP, board, 1_000_000);
    s.hw.access_ticks = 5;
    s.hw.wires.gpio_loopback = true;
    // The task runs 200 µs after each pend, at a 100 µs interval: every
    // stimulus is behind its schedule, asked for one tick after the
    // engine's poll, and planned a few accesses later.
    s.task_delay = 200 * US;
    let mut config = echo(Mode::Loopback, Stimulus::Edge(Edge::Rising), 10);
    config.interval_ticks = (100 * US) as u32;
    config.timeout_ticks = (50 * US) as u32;
    let st = s.measure(config, 200 * MS);
    assert_eq!((st.taken, st.timeouts), (10, 0), "{st:?}");
    let rises = s.hw.pin_edges.iter().filter(|&&(_, high)| high).count();
    assert_eq!(rises, 10, "one rising edge per stimulus: {:?}", s.hw.pin_edges);
    // Every rise follows a fall: the line rested first.
    for pair in s.hw.pin_edges.windows(2) {
        assert_ne!(pair[0].1, pair[1].1, "{:?}", s.hw.pin_edges);
    }
    // And the rest before each late edge lasted the documented 10 µs at least.
    let rest = boards::nucleo_f411re::LOOP.late_rest_ticks();
    for pair in s.hw.pin_edges.windows(2).filter(|p| p[1].1) {
        assert!(pair[1].0 - pair[0].0 >= rest, "{:?}", s.hw.pin_edges);
    }
}

/// The cross-check file (`tests/fixtures/crosscheck-gpio.txt`) as ns,
/// `None` for `x`.
fn crosscheck_schedule() -> &'static [Option<u64>] {
    let text = include_str!("../../../tests/fixtures/crosscheck-gpio.txt");
    let list: std::vec::Vec<Option<u64>> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| if l == "x" { None } else { Some(l.parse().expect("a latency in ns")) })
        .collect();
    std::boxed::Box::leak(list.into_boxed_slice())
}

/// The cross-check with the Pico in rp2040js: the same latency file, here
/// through the Nucleo's fake-timer loop (10 ns ticks), gives every latency
/// back exactly and a timeout for each `x`; `tests/tests/rp2040.rs` asserts
/// the same of the real Pico firmware in someone else's model of its chip.
#[test]
fn the_crosscheck_schedule_comes_back_exactly_through_the_fake_timer() {
    let schedule = crosscheck_schedule();
    assert!(schedule.len() >= 10 && schedule.contains(&None));
    let mut s = Sim::nucleo(1_000_000);
    s.hw.target = Target::GpioEcho { edge: Edge::Rising, latency: 0, pulse: Some(20 * US) };
    let ticks: std::vec::Vec<Option<u64>> = schedule.iter().map(|l| l.map(|ns| ns / 10)).collect();
    s.hw.script = Some(std::boxed::Box::leak(ticks.into_boxed_slice()));
    let n = 2 * schedule.len() as u64;
    let mut config = echo(Mode::GpioEcho, Stimulus::Edge(Edge::Rising), n);
    config.interval_ticks = (200 * US) as u32;
    config.timeout_ticks = (180 * US) as u32;
    let st = s.measure(config, 100 * MS);
    let x = (0..n as usize).filter(|i| schedule[i % schedule.len()].is_none()).count() as u64;
    assert_eq!((st.taken, st.timeouts), (n, x), "{st:?}");
    assert!(quiet(&st.anomalies), "{:?}", st.anomalies);
    let got = s.latencies();
    for (i, l) in got.iter().enumerate() {
        let want = schedule[i % schedule.len()].map(|ns| (ns / 10) as u32);
        assert_eq!(*l, want, "sample {i}");
    }
}

// The input filter's delay is tested through the Nucleo's register layer
// (`board::nucleo::tests::an_edge_at_a_known_tick_gives_exactly_its_latency`):
// there the model derives it from the ICxF the driver wrote (decoded by the
// PAC), not from the constant the loop subtracts, as this fake's filter is.

// ----- the wrap, a late interrupt -----

/// Stimuli and answers on both sides of a counter wrap, with every
/// interrupt 30 µs late (the overflow's too): exact.
#[test]
fn captures_around_a_wrap_with_late_interrupts_are_exact() {
    let wrap = 3u64 << 32;
    let mut s = Sim::nucleo(wrap - 6 * MS);
    s.irq_latency = 30 * US;
    s.hw.target = Target::GpioEcho { edge: Edge::Toggle, latency: 333, pulse: None };
    let st = s.measure(echo(Mode::GpioEcho, Stimulus::Edge(Edge::Toggle), 12), 100 * MS);
    assert_eq!((st.taken, st.timeouts), (12, 0), "{st:?}");
    assert!(s.latencies().iter().all(|&l| l == Some(333)), "{:?}", s.latencies());
    let ticks: Vec<u64> = s.host.samples.iter().map(|x| x.stimulus_tick).collect();
    assert!(ticks.first().unwrap() < &wrap && ticks.last().unwrap() > &wrap, "{ticks:?}");
    // And the reported ticks are the true ones: when the pin moved.
    let moved: Vec<u64> = s.hw.pin_edges.iter().map(|&(t, _)| t).collect();
    assert_eq!(ticks, moved);
}

/// A UART answer whose start bit latches just before the wrap and whose
/// byte is read after it.
#[test]
fn a_start_bit_before_the_wrap_and_its_byte_after_it() {
    let wrap = 1u64 << 32;
    let mut s = Sim::nucleo(wrap - 3 * MS);
    s.hw.uart_response_line();
    s.hw.wires.tx_capture = true;
    s.hw.target = Target::UartEcho { latency: 200 * US };
    let st = s.measure(echo(Mode::UartEcho, Stimulus::Identified, 8), 100 * MS);
    assert_eq!((st.taken, st.timeouts), (8, 0), "{st:?}");
    assert!(s.latencies().iter().all(|&l| l == Some((200 * US) as u32)));
}

// ----- QEMU: the same loop without capture hardware -----

/// QEMU's board: no capture channels, a UART without bit timing. The
/// byte's read is its tick; the stimulus tick is the read before the
/// write, reported at once.
#[test]
fn qemu_board_times_bytes_by_their_read() {
    let board =
        BoardInfo::new("fake-qemu", HZ, TimerBits::B32, Capabilities::UART_ECHO | Capabilities::PERIODIC);
    let mut s = Sim::new(boards::qemu::LOOP, board, 1_000_000);
    s.hw.uart_response_line();
    s.hw.target = Target::UartEcho { latency: 40 * US };
    let st = s.measure(echo(Mode::UartEcho, Stimulus::Identified, 20), 100 * MS);
    assert_eq!((st.taken, st.timeouts), (20, 0), "{st:?}");
    for l in s.latencies() {
        // Start to start is 40 µs; the read comes 9.5 bit times after the
        // echo's start and the soft tick a little before the write.
        let l = u64::from(l.unwrap());
        assert!((40 * US + 19 * BIT / 2..40 * US + 19 * BIT / 2 + 200).contains(&l), "{l}");
    }
    assert_eq!(s.e.totals().anomalies.soft_stimuli, 20);
}

// ----- the Nucleo review: what its first day on a bench would have shown -----

/// Finding 4. The old loop took the periodic line's kind from the first
/// edge with no byte behind it: a glitch before the first byte (the
/// target's TX out of reset, a break, noise) made it "GPIO" for the whole
/// run, and every data edge of every later byte became a periodic edge
/// (`--count 20` ended inside the third byte, its stamps bit edges). Now
/// the configuration names the line: over a noisy UART, with a glitch, a
/// framing error and a run that starts in the middle of a byte, every
/// stamp is a start bit, exactly.
#[test]
fn periodic_over_a_noisy_uart_stamps_only_start_bits() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.uart_response_line();
    let t = s.hw.t;
    // A byte already shifting in when the run starts (its start bit and
    // first data edge before the capture is opened).
    let cut = t - 2 * BIT;
    s.hw.byte_in(cut, 0x55);
    // A glitch 1 µs wide, no byte: the UART filters it.
    s.hw.edge_at(Pin::Response, t + MS / 2, false);
    s.hw.edge_at(Pin::Response, t + MS / 2 + US, true);
    // A framing error: the UART flags the line, no byte.
    s.hw.line_error_at(t + MS);
    let first = t + 2 * MS;
    let starts: Vec<u64> = (0..30).map(|k| first + k * MS + k * 41).collect();
    for &x in &starts {
        s.hw.byte_in(x, 0x55);
    }
    let mut c = echo(Mode::Periodic, Stimulus::None(ResponseLine::Uart), 20);
    c.timeout_ticks = 0;
    let st = s.measure(c, 100 * MS);
    assert_eq!(st.taken, 20, "{st:?}");
    let ticks: Vec<u64> = s.host.edges.iter().map(|e| e.tick).collect();
    assert_eq!(ticks, starts[..20], "every stamp a start bit");
    assert_eq!(st.anomalies.line_errors, 1, "{:?}", st.anomalies);
}

/// Finding 4, the other side: a periodic GPIO line is never taken for a
/// UART, whatever the UART receiver reads meanwhile (PA10 unwired or
/// picking up noise), and every edge counts.
#[test]
fn periodic_over_gpio_ignores_stray_bytes() {
    let mut s = Sim::nucleo(1_000_000);
    let first = s.hw.t + 2 * MS;
    let times: Vec<u64> = (0..12).map(|k| first + k * 500 * US + k * 7).collect();
    for (k, &t) in times.iter().enumerate() {
        s.hw.edge_at(Pin::Response, t, k % 2 == 0);
    }
    s.hw.rx_noise_at(first + 100 * US, 0xF0);
    let mut c = echo(Mode::Periodic, Stimulus::None(ResponseLine::Gpio), 10);
    c.timeout_ticks = 0;
    let st = s.measure(c, 100 * MS);
    assert_eq!(st.taken, 10);
    let ticks: Vec<u64> = s.host.edges.iter().map(|e| e.tick).collect();
    assert_eq!(ticks, times[..10]);
}

/// Finding 5. An unwired PB10 picked up an edge (PA8's trigger next to it)
/// right after the first stimulus byte was written: the old loop took it
/// for the byte's start bit, "found" the wire, and timed the stimulus by
/// that garbage tick (here 150 ticks early; worse with the channel open on
/// every later byte). Now the board checks the wire at run start (PB10
/// pulled down with PA9 idle high): absent, the channel is never opened,
/// the stimulus ticks are software ticks, each counted.
#[test]
fn the_tx_wire_is_checked_at_start_not_taken_from_a_stray_edge() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.uart_response_line();
    s.hw.wire_check = true;
    s.hw.wires.tx_capture = false;
    s.hw.target = Target::UartEcho { latency: 150 * US };
    s.host_says(&HostMsg::Configure(echo(Mode::UartEcho, Stimulus::Byte(0x55), 5)));
    s.host_says(&HostMsg::Start);
    while s.hw.sent.is_empty() {
        let t = s.hw.t + 5;
        s.run_until(t);
    }
    // Right after the first byte's write: a stray falling edge on PB10.
    let stray = s.hw.t + 200;
    s.hw.edge_at(Pin::TxStart, stray, false);
    let end = s.hw.t + 100 * MS;
    s.run_until(end);
    let st = s.host.stopped.expect("the run ends");
    assert_eq!((st.taken, st.timeouts), (5, 0), "{st:?}");
    assert_eq!(s.lp.tx_wired(), Some(false));
    assert_eq!(st.anomalies.soft_stimuli, 5, "{:?}", st.anomalies);
    assert!(s.host.samples[0].stimulus_tick < stray, "the first stimulus is not timed by the stray edge");
    assert_eq!(s.host.logs.len(), 1, "the missing wire is said once, at the start: {:?}", s.host.logs);
    assert!(s.host.logs[0].contains("PB10"), "{:?}", s.host.logs);
    // Each soft tick is the counter read right before the write, a few
    // accesses before the start bit: never a stray edge's.
    let starts: Vec<u64> = s.hw.sent.iter().map(|&(t, _)| t).collect();
    for (x, start) in s.host.samples.iter().zip(&starts) {
        assert!(x.stimulus_tick <= *start && start - x.stimulus_tick < 40, "{} vs {start}", x.stimulus_tick);
    }
    // And with the wire there, the check says so: hardware ticks from the
    // first byte on.
    let mut s = Sim::nucleo(1_000_000);
    s.hw.uart_response_line();
    s.hw.wire_check = true;
    s.hw.wires.tx_capture = true;
    s.hw.target = Target::UartEcho { latency: 150 * US };
    let st = s.measure(echo(Mode::UartEcho, Stimulus::Byte(0x55), 5), 100 * MS);
    assert_eq!((st.taken, st.anomalies.soft_stimuli), (5, 0), "{st:?}");
    assert!(s.latencies().iter().all(|&l| l == Some((150 * US) as u32)), "{:?}", s.latencies());
}

/// Finding 6. The byte's start-bit capture latched, but the engine task
/// had collected just before it and spent longer than the two bit times
/// of the capture's deadline before it planned: the old `plan()` read
/// `now` without servicing the timer, found the deadline passed, called
/// the wire absent, and closed the channel with the capture still in it.
/// Every stimulus of the run was then software-timed. Both ways the
/// capture can wait: its interrupt ran between the two locks (it sits in
/// the front), or the lock held it back (it sits in the timer).
#[test]
fn a_start_bit_capture_waiting_at_plan_time_is_not_dropped() {
    for interrupt_ran in [true, false] {
        let mut s = Sim::nucleo(1_000_000);
        s.hw.uart_response_line();
        s.hw.wires.tx_capture = true;
        s.hw.target = Target::UartEcho { latency: 150 * US };
        // The transmitter starts half a bit after the write (within a bit
        // time on an idle line): the start bit latches after the task ran.
        s.hw.tx_delay = BIT / 2;
        // 0xF0: its only falling edge is the start bit, so a capture read
        // late is not overcaptured by a data edge (0x55's would be, and
        // rightly go untimed).
        s.host_says(&HostMsg::Configure(echo(Mode::UartEcho, Stimulus::Byte(0xF0), 5)));
        s.host_says(&HostMsg::Start);
        // Run until the first byte is written.
        while s.hw.sent.is_empty() {
            let t = s.hw.t + 5;
            s.run_until(t);
        }
        // The engine task collects (nothing yet), then spends 3 bit times
        // on its delivery; the start bit latches meanwhile.
        let mut b = Batch::new();
        let now = s.front.collect(&mut s.hw, &mut b);
        s.lp.deliver(&mut s.e, &b, now);
        let t = s.hw.t + 3 * BIT;
        s.hw.advance(t);
        if interrupt_ran {
            s.front.on_timer_interrupt(&mut s.hw);
        }
        s.lp.plan(&mut s.e, &mut s.front, &mut s.hw);
        s.pend();
        let end = s.hw.t + 100 * MS;
        s.run_until(end);
        let st = s.host.stopped.expect("the run ends");
        assert_eq!((st.taken, st.timeouts), (5, 0), "{st:?}");
        assert_eq!(st.anomalies.soft_stimuli, 0, "interrupt ran {interrupt_ran}: {:?}", st.anomalies);
        assert_eq!(s.lp.tx_wired(), Some(true));
        assert!(s.host.logs.is_empty(), "{:?}", s.host.logs);
        assert!(s.latencies().iter().all(|&l| l == Some((150 * US) as u32)), "{:?}", s.latencies());
    }
}

/// The target line's receive burst both boards run in their interrupt
/// (`Timer::on_target_rx`): each byte logged with a `now`, each receive
/// error counted, and it stops at the first `WouldBlock` or after `burst`
/// reads, so the byte after either is for the next interrupt.
#[test]
fn the_target_receive_burst_logs_bytes_and_errors_and_stops_when_empty() {
    use embedded_hal_nb::nb;
    use embedded_hal_nb::serial::{ErrorKind, ErrorType, Read};

    /// A UART with a script of reads: a byte, an error, or `WouldBlock`.
    struct Script(Vec<Option<Result<u8, ()>>>);
    impl ErrorType for Script {
        type Error = ErrorKind;
    }
    impl Read<u8> for Script {
        fn read(&mut self) -> nb::Result<u8, ErrorKind> {
            match self.0.remove(0) {
                Some(Ok(b)) => Ok(b),
                Some(Err(())) => Err(nb::Error::Other(ErrorKind::FrameFormat)),
                None => Err(nb::Error::WouldBlock),
            }
        }
    }

    let mut t = Timer::new(Fake::new(5 * MS), TimerBits::B32);
    let mut rx = Script(std::vec![Some(Ok(0x41)), Some(Err(())), Some(Ok(0x42)), None, Some(Ok(0x43))]);
    t.on_target_rx(&mut rx, 8);
    let mut b = Batch::new();
    t.front.collect(&mut t.hw, &mut b);
    let got: Vec<_> = b.events[..b.len]
        .iter()
        .map(|e| match *e {
            Event::Byte { byte, at } => {
                assert!(at >= 5 * MS, "{at}");
                Some(byte)
            }
            Event::LineError => None,
            Event::Response { .. } => panic!("no capture was armed"),
        })
        .collect();
    assert_eq!(got, [Some(0x41), None, Some(0x42)]);
    assert_eq!(rx.0.len(), 1, "the byte after WouldBlock is left");
    // At most `burst` reads.
    let mut rx = Script(std::vec![Some(Ok(1)), Some(Ok(2)), Some(Ok(3))]);
    t.on_target_rx(&mut rx, 2);
    t.front.collect(&mut t.hw, &mut b);
    assert_eq!(b.len, 2);
    assert_eq!(rx.0.len(), 1);
}
