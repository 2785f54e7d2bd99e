//! A register model of what the Nucleo's [`Tim2`](super::Tim2) drives:
//! TIM2, GPIOA/GPIOB, USART1's transmitter, the bench wires and a target,
//! with the RM0383 semantics the driver relies on (§13.3, §13.4, §8.3).
//! The register words live in the stm32f4 PAC's own register blocks (in
//! RAM) and the model decodes them with the PAC's field readers, so its
//! idea of a bit is ST's SVD's, not the driver's.
//!
//! - SR flags are rc_w0: a write keeps the flags written 1, clears those
//!   written 0. Reading CCRx of a capture channel clears CCxIF; a capture
//!   while CCxIF is set sets CCxOF (CCRx holds the latest).
//! - UIF at each wrap of the free-running counter (ARR + 1 ticks, PSC 0);
//!   UG zeroes the counter and sets UIF.
//! - An output channel (CCxS = 00) sets CCxIF on every match, whatever
//!   OCxM; CH1's OC1REF follows OC1M at a match (active, inactive, toggle)
//!   or at once (forced); PA0 shows OC1REF ^ CC1P with CC1E set and PA0 in
//!   AF1, visible in GPIOA_IDR.
//! - CCMRx is one word seen two ways: CCxS selects the output or input
//!   meaning of each channel's byte; CCxS is writable only with CCxE = 0.
//! - An input channel (CCxS = 01) filters its pin by ICxF (N samples at
//!   f_SAMPLING, RM0383's table, CKD = 00 so f_DTS = f_CK_INT): a change is
//!   validated once the pin has held its new level for N samples, and
//!   the capture latches then, N sampling periods after the edge; a
//!   shorter pulse is never seen. CCxP/CCxNP choose the edges (00 rising,
//!   10 falling, 11 both), CCxE enables the capture.
//! - TIM3, the trigger output's timer: 16 bits, PSC 0, CH1 an output
//!   compare like TIM2's CH1 whose OC1REF shows on PB4 (AF2). In trigger
//!   mode (SMS = 110) on ITR1 (TIM2's TRGO, RM0383 §13.4.3's table) with
//!   TIM2's MMS = 001 (TRGO = CNT_EN), TIM2's CEN starts TIM3 in the same
//!   tick, which RM0383 promises with TIM2's MSM set (§13.3.15); without
//!   MSM the slave lags by a resynchronisation delay RM0383 does not give,
//!   and the model refuses to guess it (it panics).
//! - Every register access advances the clock by `access_ticks`, so edges
//!   land between reads.
//!
//! ```text
//!   PA0 (CH1) ──gpio_loopback──▶ PA1 (CH2)        PA9 (USART1 TX) ──tx_wire──▶ PB10 (CH3)
//!     └──▶ Target::GpioEcho ──▶ PA1                 ├──uart_loopback──▶ PA1 + RX byte
//!                                                   └──▶ Target::UartEcho ──▶ PA1 + RX byte
//! ```
//!
//! The parts: `blocks.rs` the PAC register blocks in RAM (no semantics),
//! `bus.rs` TIM2's register semantics behind [`Bus`](super::Bus),
//! `pins.rs` the lines, capture filters, UART bytes and GPIO registers;
//! this file the model's state, its clock and the compare/overflow events.

#[macro_use]
mod blocks;
mod bus;
mod pins;
pub mod usart2;

use std::boxed::Box;
use std::collections::VecDeque;
use std::vec::Vec;

use latprobe_protocol::Edge;
use stm32f4::stm32f411::tim2::ccmr1_output::OC1M;
use stm32f4::stm32f411::{gpioa, gpiob, tim2, tim3};

use super::{GpioReg, Port, TimReg};

pub use blocks::{filter_of, tim2_block, tim3_block, tim3_poke, tim_poke, tim_ptr, zeroed_block};
use blocks::{tim3_peek, tim_peek};

/// What is wired on the bench.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wires {
    /// PA0 to PA1.
    pub gpio_loopback: bool,
    /// PA9 to PA10 and PA1.
    pub uart_loopback: bool,
    /// PA9 to PB10.
    pub tx_wire: bool,
}

/// What answers the stimulus.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    None,
    /// Answers each PA0 edge of kind `edge` on PA1 `latency` later, with
    /// the same direction; with `pulse`, PA1 returns `pulse` after that.
    GpioEcho {
        edge: Edge,
        latency: u64,
        pulse: Option<u64>,
    },
    /// Echoes each byte on PA1/RX, its start bit `latency` after ours.
    UartEcho {
        latency: u64,
    },
}

/// A line whose level changes at a scheduled time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    Pa1,
    Pa9,
    Pb10,
}

/// A capture input (TI2 from PA1, TI3 from PB10) and its filter.
#[derive(Debug, Clone, Copy, Default)]
struct Input {
    raw: bool,
    changed_at: u64,
    filtered: bool,
}

/// A capture that latched: channel, the edge's tick, the latch's tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latched {
    pub channel: u8,
    pub edge_at: u64,
    pub latch_at: u64,
}

/// How long an unwired PB10 takes to follow a new pull (R_PU/R_PD into the
/// pin's capacitance and a loose wire).
pub const PULL_SETTLE_TICKS: u64 = 500;

/// The model.
#[derive(Debug)]
pub struct Model {
    /// True time, in ticks of f_CK_INT (100 MHz: also core cycles).
    pub t: u64,
    /// Ticks one register access takes.
    pub access_ticks: u64,
    tim: Box<tim2::RegisterBlock>,
    tim3: Box<tim3::RegisterBlock>,
    gpioa: Box<gpioa::RegisterBlock>,
    gpiob: Box<gpiob::RegisterBlock>,
    /// CNT = (t + offset) mod (ARR + 1) while CEN is set.
    offset: u64,
    /// CNT while the counter is stopped.
    held: u32,
    oc1ref: bool,
    /// TIM3's CNT = (t + offset3) mod 2^16 while its CEN is set.
    offset3: u64,
    /// TIM3's CNT while it is stopped.
    held3: u32,
    /// TIM3's OC1REF.
    oc1ref3: bool,
    pa0: bool,
    pb4: bool,
    pa9: bool,
    inputs: [Input; 2],
    /// Pin changes to come: (tick, line, level).
    changes: Vec<(u64, Line, bool)>,
    /// Filter validations to come: (tick, input, the change's tick).
    checks: Vec<(u64, usize, u64)>,
    /// Every PA0 change: (tick, level).
    pub pa0_edges: Vec<(u64, bool)>,
    /// Every PA8 change: (tick, level).
    pub marker_edges: Vec<(u64, bool)>,
    /// Every PB4 change (the trigger output): (tick, level).
    pub trigger_edges: Vec<(u64, bool)>,
    /// Every TIM3 write, in order.
    pub tim3_writes: Vec<(TimReg, u32)>,
    /// Every capture latched.
    pub latched: Vec<Latched>,
    /// Every TIM2 write, in order.
    pub writes: Vec<(TimReg, u32)>,
    /// Every GPIO write, in order.
    pub gpio_writes: Vec<(Port, GpioReg, u32)>,
    pub wires: Wires,
    pub target: Target,
    /// One bit time of the UART lines.
    pub bit: u64,
    /// From a write to an idle transmitter to its start bit.
    pub tx_delay: u64,
    tx_free_at: u64,
    /// Every byte sent on PA9: its start bit's tick and the byte.
    pub sent: Vec<(u64, u8)>,
    /// The level the target drives PA1 to (for echoes).
    response_level: bool,
    rx: VecDeque<(u64, u8)>,
}

const SR_FLAGS: u32 = <tim2::sr::SRrs as stm32f4::Writable>::ZERO_TO_MODIFY_FIELDS_BITMAP;

impl Model {
    /// A model at tick `t0` just out of reset, defaults like the Nucleo
    /// at 100 MHz: an access 2 ticks, a bit 868 ticks (115200 Bd), the
    /// transmitter starting 16 ticks after a write.
    pub fn new(t0: u64) -> Self {
        // SAFETY: PAC register blocks (`zeroed_block`'s condition).
        let (gpioa, gpiob) =
            unsafe { (zeroed_block::<gpioa::RegisterBlock>(), zeroed_block::<gpiob::RegisterBlock>()) };
        gpioa.moder().reset();
        gpioa.pupdr().reset();
        gpioa.ospeedr().reset();
        gpiob.moder().reset();
        gpiob.pupdr().reset();
        gpiob.ospeedr().reset();
        Self {
            t: t0,
            access_ticks: 2,
            tim: tim2_block(),
            tim3: tim3_block(),
            gpioa,
            gpiob,
            offset: 0,
            held: 0,
            oc1ref: false,
            offset3: 0,
            held3: 0,
            oc1ref3: false,
            pa0: false,
            pb4: false,
            pa9: true,
            inputs: [Input::default(); 2],
            changes: Vec::new(),
            checks: Vec::new(),
            pa0_edges: Vec::new(),
            marker_edges: Vec::new(),
            trigger_edges: Vec::new(),
            tim3_writes: Vec::new(),
            latched: Vec::new(),
            writes: Vec::new(),
            gpio_writes: Vec::new(),
            wires: Wires::default(),
            target: Target::None,
            bit: 868,
            tx_delay: 16,
            tx_free_at: 0,
            sent: Vec::new(),
            response_level: false,
            rx: VecDeque::new(),
        }
    }

    /// The GPIOA block.
    pub fn gpioa(&self) -> &gpioa::RegisterBlock {
        &self.gpioa
    }

    /// The GPIOB block.
    pub fn gpiob(&self) -> &gpiob::RegisterBlock {
        &self.gpiob
    }

    /// The last word written to `reg`.
    pub fn last_write(&self, reg: TimReg) -> Option<u32> {
        self.writes.iter().rev().find(|w| w.0 == reg).map(|w| w.1)
    }

    /// The last word written to TIM3's `reg`.
    pub fn last_tim3_write(&self, reg: TimReg) -> Option<u32> {
        self.tim3_writes.iter().rev().find(|w| w.0 == reg).map(|w| w.1)
    }

    /// The TIM3 block.
    pub fn tim3(&self) -> &tim3::RegisterBlock {
        &self.tim3
    }

    /// Wire PA9 to PB10: PB10 follows PA9 from now on.
    pub fn wire_tx(&mut self) {
        self.wires.tx_wire = true;
        let level = self.pa9;
        self.input_change(1, level);
    }

    /// PA1 idles high (a UART line) from now on.
    pub fn uart_response_line(&mut self) {
        self.response_level = true;
        self.inputs[0] = Input { raw: true, changed_at: self.t, filtered: true };
    }

    fn running(&self) -> bool {
        self.tim.cr1().read().cen().bit_is_set()
    }

    fn period(&self) -> u64 {
        u64::from(self.tim.arr().read().bits()) + 1
    }

    /// CNT at the current tick.
    pub fn cnt(&self) -> u32 {
        if self.running() {
            ((self.t + self.offset) % self.period()) as u32
        } else {
            self.held
        }
    }

    fn set_cnt(&mut self, v: u32) {
        let p = self.period();
        self.offset = (u64::from(v) % p + p - self.t % p) % p;
        self.held = v;
    }

    fn running3(&self) -> bool {
        self.tim3.cr1().read().cen().bit_is_set()
    }

    fn period3(&self) -> u64 {
        u64::from(self.tim3.arr().read().bits() & 0xFFFF) + 1
    }

    /// TIM3's CNT at the current tick.
    pub fn cnt3(&self) -> u32 {
        if self.running3() {
            ((self.t + self.offset3) % self.period3()) as u32
        } else {
            self.held3
        }
    }

    fn set_cnt3(&mut self, v: u32) {
        let p = self.period3();
        self.offset3 = (u64::from(v) % p + p - self.t % p) % p;
        self.held3 = v;
    }

    /// TIM2's CEN went 0 to 1 now: TRGO (CNT_EN, with MMS = 001) rises;
    /// a TIM3 in trigger mode on ITR1 starts.
    pub(super) fn tim2_started(&mut self) {
        let mms_enable = self.tim.cr2().read().mms().is_enable();
        let smcr3 = self.tim3.smcr().read();
        if !(mms_enable && smcr3.sms().is_trigger_mode() && smcr3.ts().is_itr1()) || self.running3() {
            return;
        }
        assert!(
            self.tim.smcr().read().msm().is_sync(),
            "model: TIM3 started by TIM2 without TIM2's MSM lags by a resynchronisation delay RM0383 does not give"
        );
        let held = self.held3;
        let cr1 = tim3_peek(&self.tim3, TimReg::Cr1);
        blocks::tim3_poke(&self.tim3, TimReg::Cr1, cr1 | 1);
        self.set_cnt3(held);
        // TIF: the trigger event (§13.4.5).
        let sr = tim3_peek(&self.tim3, TimReg::Sr);
        blocks::tim3_poke(&self.tim3, TimReg::Sr, sr | 1 << 6);
    }

    /// The next tick strictly after now at which TIM3's CNT equals CCR1.
    fn next_match3(&self) -> Option<u64> {
        if !self.running3() || !self.tim3.ccmr1_output().read().cc1s().is_output() {
            return None;
        }
        let p = self.period3();
        let ccr = u64::from(tim3_peek(&self.tim3, TimReg::Ccr1)) % p;
        let cnt = u64::from(self.cnt3());
        Some(self.t + (ccr + p - cnt - 1) % p + 1)
    }

    fn on_match3(&mut self) {
        let sr = tim3_peek(&self.tim3, TimReg::Sr);
        blocks::tim3_poke(&self.tim3, TimReg::Sr, sr | 1 << 1);
        use stm32f4::stm32f411::tim3::ccmr1_output::OC1M as M3;
        match self.tim3.ccmr1_output().read().oc1m().variant() {
            M3::ActiveOnMatch => self.oc1ref3 = true,
            M3::InactiveOnMatch => self.oc1ref3 = false,
            M3::Toggle => self.oc1ref3 = !self.oc1ref3,
            M3::Frozen | M3::ForceActive | M3::ForceInactive => {}
            M3::PwmMode1 | M3::PwmMode2 => panic!("model: PWM modes are not modelled"),
        }
        self.update_pb4();
    }

    /// TIM3's interrupt line: a flag whose interrupt is enabled.
    pub fn tim3_irq(&self) -> bool {
        tim3_peek(&self.tim3, TimReg::Sr) & tim3_peek(&self.tim3, TimReg::Dier) & 0x1F != 0
    }

    /// PB4: TIM3's OC1 (OC1REF ^ CC1P) when CC1E is set and PB4 is TIM3_CH1.
    pub(super) fn update_pb4(&mut self) {
        let ccer = self.tim3.ccer().read();
        let muxed =
            self.gpiob.moder().read().moder4().is_alternate() && self.gpiob.afrl().read().afrl4().is_af2();
        let level = muxed && ccer.cc1e().bit_is_set() && (self.oc1ref3 ^ ccer.cc1p().bit_is_set());
        if level != self.pb4 {
            self.pb4 = level;
            self.trigger_edges.push((self.t, level));
        }
    }

    /// PB4's level.
    pub fn pb4(&self) -> bool {
        self.pb4
    }

    /// TIM3's OC1REF (for the bus's forced modes).
    pub(super) fn set_oc1ref3(&mut self, level: bool) {
        self.oc1ref3 = level;
        self.update_pb4();
    }

    /// Whether channel `n` is an output (CCxS = 00), by the PAC's reading.
    fn is_output(&self, n: u8) -> bool {
        let m1 = self.tim.ccmr1_output().read();
        let m2 = self.tim.ccmr2_output().read();
        match n {
            1 => m1.cc1s().is_output(),
            2 => m1.cc2s().is_output(),
            3 => m2.cc3s().is_output(),
            _ => m2.cc4s().is_output(),
        }
    }

    /// Whether input channel `n` (2 or 3) captures its own TIx.
    fn is_own_input(&self, n: u8) -> bool {
        match n {
            2 => self.tim.ccmr1_input().read().cc2s().is_ti2(),
            _ => self.tim.ccmr2_input().read().cc3s().is_ti3(),
        }
    }

    /// The filter delay of input `i` (0: CH2, 1: CH3), from ICxF as the
    /// PAC decodes it: N sampling periods.
    pub fn filter_ticks(&self, i: usize) -> u64 {
        let f = match i {
            0 => self.tim.ccmr1_input().read().ic2f().variant(),
            _ => self.tim.ccmr2_input().read().ic3f().variant(),
        };
        let (period, n) = filter_of(f);
        period * n
    }

    /// The next tick strictly after now at which CNT equals CCRn.
    fn next_match(&self, n: u8) -> Option<u64> {
        if !self.running() || !self.is_output(n) {
            return None;
        }
        let p = self.period();
        let ccr = u64::from(tim_peek(&self.tim, TimReg::ccr(n))) % p;
        let cnt = u64::from(self.cnt());
        Some(self.t + (ccr + p - cnt - 1) % p + 1)
    }

    fn next_wrap(&self) -> Option<u64> {
        self.running().then(|| self.t + self.period() - u64::from(self.cnt()))
    }

    /// The earliest thing that happens after now (RX bytes included).
    pub fn next_event(&self) -> u64 {
        let mut n = u64::MAX;
        for m in
            (1..=4).filter_map(|ch| self.next_match(ch)).chain(self.next_wrap()).chain(self.next_match3())
        {
            n = n.min(m);
        }
        for &(at, ..) in &self.changes {
            n = n.min(at);
        }
        for &(at, ..) in &self.checks {
            n = n.min(at);
        }
        if let Some(&(at, _)) = self.rx.iter().find(|r| r.0 > self.t) {
            n = n.min(at);
        }
        n
    }

    /// Let time run to `to`, doing what happens on the way in order.
    pub fn advance(&mut self, to: u64) {
        loop {
            let wrap = self.next_wrap();
            let matches: [Option<u64>; 4] = core::array::from_fn(|i| self.next_match(i as u8 + 1));
            let match3 = self.next_match3();
            let mut next = wrap.unwrap_or(u64::MAX).min(match3.unwrap_or(u64::MAX));
            for m in matches.iter().flatten() {
                next = next.min(*m);
            }
            for &(at, ..) in &self.changes {
                next = next.min(at);
            }
            for &(at, ..) in &self.checks {
                next = next.min(at);
            }
            if next > to {
                break;
            }
            self.t = next;
            if wrap == Some(next) {
                self.or_sr(1);
            }
            for (i, m) in matches.iter().enumerate() {
                if *m == Some(next) {
                    self.on_match(i as u8 + 1);
                }
            }
            if match3 == Some(next) {
                self.on_match3();
            }
            while let Some(k) = self.changes.iter().position(|c| c.0 <= next) {
                let (_, line, level) = self.changes.remove(k);
                self.line_change(line, level);
            }
            while let Some(k) = self.checks.iter().position(|c| c.0 <= next) {
                let (_, i, at) = self.checks.remove(k);
                self.validate(i, at);
            }
        }
        self.t = self.t.max(to);
    }

    fn access(&mut self) {
        let to = self.t + self.access_ticks;
        self.advance(to);
    }

    fn or_sr(&mut self, bits: u32) {
        let sr = tim_peek(&self.tim, TimReg::Sr);
        tim_poke(&self.tim, TimReg::Sr, sr | bits);
    }

    /// The timer's interrupt line: a flag whose interrupt is enabled.
    pub fn tim_irq(&self) -> bool {
        tim_peek(&self.tim, TimReg::Sr) & tim_peek(&self.tim, TimReg::Dier) & 0x1F != 0
    }

    fn on_match(&mut self, n: u8) {
        self.or_sr(1 << n);
        if n == 1 {
            match self.tim.ccmr1_output().read().oc1m().variant() {
                OC1M::ActiveOnMatch => self.oc1ref = true,
                OC1M::InactiveOnMatch => self.oc1ref = false,
                OC1M::Toggle => self.oc1ref = !self.oc1ref,
                OC1M::Frozen | OC1M::ForceActive | OC1M::ForceInactive => {}
                OC1M::PwmMode1 | OC1M::PwmMode2 => panic!("model: PWM modes are not modelled"),
            }
            self.update_pa0();
        }
    }

    /// PA0: OC1 (OC1REF ^ CC1P) when CC1E is set and PA0 is TIM2_CH1.
    fn update_pa0(&mut self) {
        let ccer = self.tim.ccer().read();
        let muxed =
            self.gpioa.moder().read().moder0().is_alternate() && self.gpioa.afrl().read().afrl0().is_af1();
        let level = muxed && ccer.cc1e().bit_is_set() && (self.oc1ref ^ ccer.cc1p().bit_is_set());
        if level == self.pa0 {
            return;
        }
        self.pa0 = level;
        let t = self.t;
        self.pa0_edges.push((t, level));
        if self.wires.gpio_loopback {
            self.input_change(0, level);
        }
        if let Target::GpioEcho { edge, latency, pulse } = self.target {
            let answers = match edge {
                Edge::Rising => level,
                Edge::Falling => !level,
                Edge::Toggle => true,
            };
            if answers {
                let to = match edge {
                    Edge::Toggle => !self.response_level,
                    _ => level,
                };
                self.response_level = to;
                self.changes.push((t + latency, Line::Pa1, to));
                if let Some(w) = pulse {
                    self.response_level = !to;
                    self.changes.push((t + latency + w, Line::Pa1, !to));
                }
            }
        }
    }
}
