//! A fake timer that does what the silicon does (RM0383 §13.3, TIM2-5):
//! a free-running counter with its update flag, input capture channels
//! with a filter delay, a per-channel skew, polarity, CCxIF and CCxOF
//! (overcapture keeps the *latest* edge), compare channels whose flag is
//! set on every match whatever the output mode, and an output mode that
//! acts on the pin only at a match (or at once when forced). Around it:
//! the wires of the bench, a UART whose bytes have all their edges, and a
//! target that answers. Every register access costs time, so an edge can
//! land between two reads; an interrupt runs some time after its flag.
//!
//! ```text
//!   Stimulus (CH1) pin ──gpio_loopback──▶ Response (CH2)
//!        └──────────▶ Target::GpioEcho ─▶ Response
//!   Trigger (TIM3 CH1, a counter of `trigger_bits` reading the same
//!   ticks) pin ──▶ trigger_edges
//!   UART TX ──tx_capture──▶ TxStart (CH3)
//!        ├──uart_loopback──▶ Response + RX byte
//!        └──────────▶ Target::UartEcho ─▶ Response + RX byte
//! ```

use std::collections::VecDeque;
use std::vec::Vec;

use latprobe_protocol::Edge;

use crate::hwloop::seam::{Capture, Channel, OutputMode, Polarity, TimerHw};

/// A capture pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pin {
    Response = 0,
    TxStart = 1,
}

/// What is wired on the bench.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wires {
    /// PA0 to PA1.
    pub gpio_loopback: bool,
    /// PA9 to PA10 and PA1.
    pub uart_loopback: bool,
    /// PA9 to PB10.
    pub tx_capture: bool,
}

/// What answers the stimulus.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    None,
    /// Answers each stimulus edge of kind `edge` on the response line
    /// `latency` later, with the same direction; with `pulse`, the line
    /// goes back to idle `pulse` after that.
    GpioEcho {
        edge: Edge,
        latency: u64,
        pulse: Option<u64>,
    },
    /// Echoes each byte, its start bit `latency` after the stimulus's.
    UartEcho {
        latency: u64,
    },
}

#[derive(Debug, Clone, Copy, Default)]
struct Cap {
    polarity: Option<Polarity>,
    flag: bool,
    of: bool,
    ccr: u32,
}

#[derive(Debug, Clone, Copy, Default)]
struct Cmp {
    ccr: u32,
    flag: bool,
    irq: bool,
    next: Option<u64>,
}

/// An edge reaching a capture channel's filter output at `at`.
#[derive(Debug, Clone, Copy)]
struct Latch {
    at: u64,
    pin: Pin,
    rising: bool,
}

/// The fake timer, its pins, a UART and a target.
#[derive(Debug)]
pub struct Fake {
    /// True time, in ticks.
    pub t: u64,
    period: u64,
    /// Time one register access takes.
    pub access_ticks: u64,
    /// Ticks a response capture's set-up takes besides its access (the
    /// Pico rewrites PIO state for several µs): 0 for a plain timer.
    pub setup_ticks: u64,
    /// A stimulus compare enabled closer to its match than this is not
    /// handed over (the Pico's PIO target lead): the board waits until
    /// the match has passed, so the loop sees a missed compare. 0 for a
    /// plain timer.
    pub target_lead: u64,
    /// Edge to latch: the input filter (N samples).
    pub filter: u64,
    /// Extra latch delay per capture pin (synchroniser skew).
    pub skew: [u64; 2],
    /// One bit time of the UART lines.
    pub bit: u64,
    /// From a write to an idle transmitter to its start bit.
    pub tx_delay: u64,
    pub wires: Wires,
    pub target: Target,
    /// With a `GpioEcho` or `UartEcho` target: each answering stimulus
    /// takes the next latency of this list instead (cycled; `None`: no
    /// answer).
    pub script: Option<&'static [Option<u64>]>,
    script_at: usize,
    /// Refuse these writes (0-based counts of `send_byte` calls), as a
    /// transmitter with no room would.
    pub refuse: &'static [usize],
    writes: usize,
    uif: bool,
    cap: [Cap; 2],
    cmp: [Cmp; 3],
    mode: OutputMode,
    /// The trigger compare's counter width: it reads `t mod 2^bits`.
    pub trigger_bits: u32,
    trigger_mode: OutputMode,
    /// The trigger pin.
    pub trigger_pin: bool,
    /// Every change of the trigger pin: (tick, new level).
    pub trigger_edges: Vec<(u64, bool)>,
    /// The stimulus pin.
    pub pin: bool,
    /// Every change of the stimulus pin: (tick, new level).
    pub pin_edges: Vec<(u64, bool)>,
    /// The response line's level as the target drives it.
    response_level: bool,
    latches: Vec<Latch>,
    /// What the UART's RX will have, and when: a byte, or a receive error.
    rx: VecDeque<(u64, Result<u8, ()>)>,
    tx_free_at: u64,
    /// Every byte sent: its start bit's tick and the byte.
    pub sent: Vec<(u64, u8)>,
    /// Right after the next counter read, latch an edge (rising?) on this
    /// pin, a tick later: a capture that lands inside an interrupt, after
    /// its `now` was read.
    pub hook: Option<(Pin, bool)>,
    /// The board checks the TX start-bit wire at run start (as the Nucleo
    /// does with PB10's pull-down): `tx_wire_present` tells the truth.
    pub wire_check: bool,
}

const fn cap_index(ch: Channel) -> Option<usize> {
    match ch {
        Channel::Response => Some(0),
        Channel::TxStart => Some(1),
        _ => None,
    }
}

const fn cmp_index(ch: Channel) -> Option<usize> {
    match ch {
        Channel::Stimulus => Some(0),
        Channel::Wake => Some(1),
        Channel::Trigger => Some(2),
        _ => None,
    }
}

impl Fake {
    /// A 32-bit timer at tick `t0`, with 10 ns-tick-like defaults: an
    /// access costs 2 ticks, the filter 8, a bit 868 (115200 Bd at
    /// 100 MHz), the transmitter starts 16 ticks after a write.
    pub fn new(t0: u64) -> Self {
        Self {
            t: t0,
            period: 1 << 32,
            access_ticks: 2,
            setup_ticks: 0,
            target_lead: 0,
            filter: 8,
            skew: [0, 0],
            bit: 868,
            tx_delay: 16,
            wires: Wires::default(),
            target: Target::None,
            script: None,
            script_at: 0,
            refuse: &[],
            writes: 0,
            uif: false,
            cap: [Cap::default(); 2],
            cmp: [Cmp::default(); 3],
            mode: OutputMode::Frozen,
            trigger_bits: 16,
            trigger_mode: OutputMode::Frozen,
            trigger_pin: false,
            trigger_edges: Vec::new(),
            pin: false,
            pin_edges: Vec::new(),
            response_level: false,
            latches: Vec::new(),
            rx: VecDeque::new(),
            tx_free_at: 0,
            sent: Vec::new(),
            hook: None,
            wire_check: false,
        }
    }

    /// The response line idles high (a UART line).
    pub fn uart_response_line(&mut self) {
        self.response_level = true;
    }

    fn counter_at(&self, t: u64) -> u32 {
        (t % self.period) as u32
    }

    /// The next time after `t` at which a counter of `period` equals `ccr`.
    fn next_match_in(period: u64, t: u64, ccr: u32) -> u64 {
        let d = (u64::from(ccr) % period + period - t % period) % period;
        t + if d == 0 { period } else { d }
    }

    fn trigger_period(&self) -> u64 {
        1u64 << self.trigger_bits
    }

    /// The earliest thing that will happen after now.
    pub fn next_event(&self) -> u64 {
        let mut n = (self.t / self.period + 1) * self.period;
        for l in &self.latches {
            n = n.min(l.at);
        }
        for c in &self.cmp {
            if let Some(m) = c.next {
                n = n.min(m);
            }
        }
        if let Some(&(at, _)) = self.rx.front() {
            if at > self.t {
                n = n.min(at);
            }
        }
        n
    }

    /// Let time run to `to`, doing what happens on the way in order.
    pub fn advance(&mut self, to: u64) {
        loop {
            let next = self.next_event();
            if next > to {
                break;
            }
            self.t = next;
            if next % self.period == 0 {
                self.uif = true;
            }
            let mut i = 0;
            while i < self.latches.len() {
                if self.latches[i].at == next {
                    let l = self.latches.remove(i);
                    self.latch(l.pin, l.rising);
                } else {
                    i += 1;
                }
            }
            for k in 0..3 {
                if self.cmp[k].next == Some(next) {
                    let period = if k == 2 { self.trigger_period() } else { self.period };
                    self.cmp[k].next = Some(next + period);
                    self.cmp[k].flag = true;
                    if k == 0 {
                        self.on_match();
                    }
                    if k == 2 {
                        self.on_trigger_match();
                    }
                }
            }
        }
        self.t = self.t.max(to);
    }

    fn latch(&mut self, pin: Pin, rising: bool) {
        let t = self.t;
        let c = &mut self.cap[pin as usize];
        let wanted = match c.polarity {
            None => false,
            Some(Polarity::Both) => true,
            Some(Polarity::Rising) => rising,
            Some(Polarity::Falling) => !rising,
        };
        if wanted {
            if c.flag {
                c.of = true;
            }
            c.flag = true;
            c.ccr = (t % self.period) as u32;
        }
    }

    fn on_match(&mut self) {
        match self.mode {
            OutputMode::HighOnMatch => self.drive(true),
            OutputMode::LowOnMatch => self.drive(false),
            OutputMode::ToggleOnMatch => self.drive(!self.pin),
            OutputMode::Frozen | OutputMode::ForceHigh | OutputMode::ForceLow => {}
        }
    }

    fn on_trigger_match(&mut self) {
        match self.trigger_mode {
            OutputMode::HighOnMatch => self.drive_trigger(true),
            OutputMode::LowOnMatch => self.drive_trigger(false),
            OutputMode::ToggleOnMatch => self.drive_trigger(!self.trigger_pin),
            OutputMode::Frozen | OutputMode::ForceHigh | OutputMode::ForceLow => {}
        }
    }

    fn drive_trigger(&mut self, level: bool) {
        if level != self.trigger_pin {
            self.trigger_pin = level;
            self.trigger_edges.push((self.t, level));
        }
    }

    /// The stimulus pin takes `level` now.
    fn drive(&mut self, level: bool) {
        if level == self.pin {
            return;
        }
        self.pin = level;
        let t = self.t;
        self.pin_edges.push((t, level));
        if self.wires.gpio_loopback {
            self.edge_at(Pin::Response, t, level);
        }
        if let Target::GpioEcho { edge, latency, pulse } = self.target {
            let answers = match edge {
                Edge::Rising => level,
                Edge::Falling => !level,
                Edge::Toggle => true,
            };
            let latency = match self.script {
                Some(list) if answers && !list.is_empty() => {
                    let l = list[self.script_at % list.len()];
                    self.script_at += 1;
                    l
                }
                _ => Some(latency),
            };
            if let (true, Some(latency)) = (answers, latency) {
                let to = match edge {
                    Edge::Toggle => !self.response_level,
                    _ => level,
                };
                self.response_level = to;
                self.edge_at(Pin::Response, t + latency, to);
                if let Some(w) = pulse {
                    self.response_level = !to;
                    self.edge_at(Pin::Response, t + latency + w, !to);
                }
            }
        }
    }

    /// An edge reaches `pin` at `at`: it latches after the filter and skew.
    pub fn edge_at(&mut self, pin: Pin, at: u64, rising: bool) {
        self.latches.push(Latch { at: at + self.filter + self.skew[pin as usize], pin, rising });
    }

    /// A byte's edges on `pin` with its start bit at `start`.
    pub fn byte_edges(&mut self, pin: Pin, start: u64, byte: u8) {
        let mut prev = true;
        for i in 0..10u64 {
            let level = match i {
                0 => false,
                9 => true,
                _ => byte >> (i - 1) & 1 == 1,
            };
            if level != prev {
                self.edge_at(pin, start + i * self.bit, level);
            }
            prev = level;
        }
    }

    /// A byte arrives on the response line (and the UART's RX) with its
    /// start bit at `start`; the UART has it 9.5 bit times later.
    pub fn byte_in(&mut self, start: u64, byte: u8) {
        self.byte_edges(Pin::Response, start, byte);
        let ready = start + 19 * self.bit / 2;
        self.rx_at(ready, Ok(byte));
    }

    fn rx_at(&mut self, ready: u64, what: Result<u8, ()>) {
        let i = self.rx.iter().position(|&(at, _)| at > ready).unwrap_or(self.rx.len());
        self.rx.insert(i, (ready, what));
    }

    /// The UART flags a receive error (framing, noise) at `at`; no byte.
    pub fn line_error_at(&mut self, at: u64) {
        self.rx_at(at, Err(()));
    }

    /// The UART reads `byte` at `at` with no edge on the capture pin (its
    /// RX pin is another wire: PA10 picking up noise while PA1 is the
    /// line).
    pub fn rx_noise_at(&mut self, at: u64, byte: u8) {
        self.rx_at(at, Ok(byte));
    }

    /// A byte is ready in the UART's RX.
    pub fn rx_ready(&self) -> bool {
        self.rx.front().is_some_and(|&(at, _)| at <= self.t)
    }

    /// Read the UART's RX (one access).
    pub fn rx_take(&mut self) -> Option<Result<u8, ()>> {
        self.access();
        if self.rx_ready() {
            self.rx.pop_front().map(|(_, b)| b)
        } else {
            None
        }
    }

    /// The timer's interrupt line: a flag with its interrupt enabled.
    pub fn tim_irq(&self) -> bool {
        self.uif
            || self.cap.iter().any(|c| c.flag && c.polarity.is_some())
            || self.cmp.iter().any(|c| c.flag && c.irq)
    }

    fn access(&mut self) {
        let to = self.t + self.access_ticks;
        self.advance(to);
    }
}

impl TimerHw for Fake {
    fn counter(&mut self) -> u32 {
        self.access();
        let value = self.counter_at(self.t);
        if let Some((pin, rising)) = self.hook.take() {
            let to = self.t + 1;
            self.advance(to);
            self.latch(pin, rising);
        }
        value
    }

    fn overflow_pending(&mut self) -> bool {
        self.access();
        self.uif
    }

    fn clear_overflow(&mut self) {
        self.access();
        self.uif = false;
    }

    fn take_capture(&mut self, ch: Channel) -> Option<Capture> {
        self.access();
        let c = &mut self.cap[cap_index(ch)?];
        if !c.flag {
            return None;
        }
        let got = Capture { raw: c.ccr, overcaptured: c.of };
        c.flag = false;
        c.of = false;
        Some(got)
    }

    fn set_capture(&mut self, ch: Channel, polarity: Option<Polarity>) {
        self.access();
        if ch == Channel::Response && polarity.is_some() {
            let to = self.t + self.setup_ticks;
            self.advance(to);
        }
        if let Some(i) = cap_index(ch) {
            self.cap[i] = Cap { polarity, ..Cap::default() };
        }
    }

    fn take_compare(&mut self, ch: Channel) -> bool {
        self.access();
        cmp_index(ch).is_some_and(|i| core::mem::take(&mut self.cmp[i].flag))
    }

    fn compare_pending(&mut self, ch: Channel) -> bool {
        self.access();
        cmp_index(ch).is_some_and(|i| self.cmp[i].flag)
    }

    fn set_compare(&mut self, ch: Channel, raw: u32) {
        self.access();
        if let Some(i) = cmp_index(ch) {
            let period = if i == 2 { self.trigger_period() } else { self.period };
            self.cmp[i].ccr = raw;
            self.cmp[i].next = Some(Self::next_match_in(period, self.t, raw));
        }
    }

    fn set_compare_irq(&mut self, ch: Channel, on: bool) {
        self.access();
        if ch == Channel::Stimulus && on && self.target_lead > 0 {
            if let Some(at) = self.cmp[0].next {
                if at < self.t + self.target_lead {
                    // Too close to hand over: wait it out, unmatched.
                    self.cmp[0].next = None;
                    self.advance(at + 1);
                }
            }
        }
        if let Some(i) = cmp_index(ch) {
            self.cmp[i].irq = on;
        }
    }

    fn set_output(&mut self, mode: OutputMode) {
        self.access();
        self.mode = mode;
        match mode {
            OutputMode::ForceHigh => self.drive(true),
            OutputMode::ForceLow => self.drive(false),
            _ => {}
        }
    }

    fn output_level(&mut self) -> bool {
        self.access();
        self.pin
    }

    fn set_trigger_output(&mut self, mode: OutputMode) {
        self.access();
        self.trigger_mode = mode;
        match mode {
            OutputMode::ForceHigh => self.drive_trigger(true),
            OutputMode::ForceLow => self.drive_trigger(false),
            _ => {}
        }
    }

    fn trigger_level(&mut self) -> bool {
        self.access();
        self.trigger_pin
    }

    fn tx_wire_present(&mut self) -> Option<bool> {
        self.access();
        self.wire_check.then_some(self.wires.tx_capture)
    }

    fn send_byte(&mut self, byte: u8) -> bool {
        self.access();
        self.writes += 1;
        if self.refuse.contains(&(self.writes - 1)) {
            return false;
        }
        // One byte shifting out and one waiting in the data register: full.
        if self.sent.last().is_some_and(|&(start, _)| start > self.t) {
            return false;
        }
        let start = (self.t + self.tx_delay).max(self.tx_free_at);
        self.tx_free_at = start + 10 * self.bit;
        self.sent.push((start, byte));
        if self.wires.tx_capture {
            self.byte_edges(Pin::TxStart, start, byte);
        }
        if self.wires.uart_loopback {
            self.byte_in(start, byte);
        }
        if let Target::UartEcho { latency } = self.target {
            // With a script, each byte takes its next entry (`None`: no echo).
            let latency = match self.script {
                Some(list) if !list.is_empty() => {
                    let l = list[self.script_at % list.len()];
                    self.script_at += 1;
                    l
                }
                _ => Some(latency),
            };
            if let Some(latency) = latency {
                self.byte_in(start + latency, byte);
            }
        }
        true
    }
}
