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
        .with_arm_lead(boards::nucleo_f411re::ARM_LEAD_TICKS)
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
    /// Engine task passes so far.
    passes: u64,
    /// Timer interrupts so far.
    timer_irqs: u64,
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
            passes: 0,
            timer_irqs: 0,
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
                // As the boards do: a byte (or a receive error) always runs
                // the engine task, the timer's interrupt when it says so.
                let mut wanted = false;
                while let Some(b) = self.hw.rx_take() {
                    wanted = true;
                    match b {
                        Ok(b) => self.front.on_target_byte(&mut self.hw, b),
                        Err(()) => self.front.on_target_error(),
                    }
                }
                if self.hw.tim_irq() {
                    self.timer_irqs += 1;
                    wanted |= self.front.on_timer_interrupt(&mut self.hw);
                }
                if wanted {
                    self.pend();
                }
                continue;
            }
            if let Some(at) = self.task_at {
                if self.hw.t >= at {
                    self.task_at = None;
                    self.passes += 1;
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
        trigger_ticks: 0,
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
    periodic_uart_run(&mut s, 30, 20);
}

/// Periodic over the target's UART: `bytes` 0x55 bytes a millisecond and
/// 37 ticks apart, a run of `count` edges; each edge its byte's start bit,
/// exactly, none overcaptured.
fn periodic_uart_run(s: &mut Sim, bytes: u64, count: u64) {
    let first = s.hw.t + 2 * MS;
    let starts: Vec<u64> = (0..bytes).map(|k| first + k * MS + k * 37).collect();
    for &t in &starts {
        s.hw.byte_in(t, 0x55);
    }
    let mut c = echo(Mode::Periodic, Stimulus::None(ResponseLine::Uart), count);
    c.timeout_ticks = 0;
    let st = s.measure(c, (bytes + 70) * MS);
    assert_eq!(st.taken, count, "{st:?}");
    let ticks: Vec<u64> = s.host.edges.iter().map(|e| e.tick).collect();
    assert_eq!(ticks, starts[..count as usize]);
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

/// A run's first pass sets its response capture up before it arms the
/// first stimulus; on the Pico that set-up rewrites PIO state for several
/// µs. The loop armed the stimulus against the `now` read before it: with a
/// set-up longer than the arm lead, the compare was written after its tick,
/// no match came, and the first stimulus was forced in software (rp2040js
/// caught it on a UART0-link run). Armed against a `now` read after the
/// set-up, it is planned late instead: a rest, then the compare, exact.
#[test]
fn a_slow_capture_set_up_does_not_make_the_first_stimulus_a_software_one() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.wires.gpio_loopback = true;
    s.hw.target = Target::None;
    let lead = u64::from(nucleo_board().arm_lead_ticks);
    s.hw.setup_ticks = lead + 30 * US;
    let st = s.measure(echo(Mode::Loopback, Stimulus::Edge(Edge::Rising), 5), 50 * MS);
    assert_eq!((st.taken, st.timeouts), (5, 0), "{st:?}");
    assert_eq!(st.anomalies.soft_stimuli, 0, "{:?}", st.anomalies);
    assert!(s.latencies().iter().all(|&l| l == Some(0)), "{:?}", s.latencies());
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

mod edges;
mod queued;
mod quiet_edges;
mod trigger;
