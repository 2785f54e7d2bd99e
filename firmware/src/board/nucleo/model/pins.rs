//! The model's pins and lines: PA1, PA9 and PB10 changing at scheduled
//! times, the capture inputs' filters, the bytes on the UART lines, the
//! received bytes, PB10's pull when no wire drives it, and the GPIO
//! registers (IDR, BSRR, MODER and the rest) as [`GpioBus`].

use super::blocks::{tim_peek, tim_poke};
use super::{Latched, Line, Model, PULL_SETTLE_TICKS};
use crate::board::nucleo::{GpioBus, GpioReg, Port, TimReg};

impl Model {
    pub(super) fn line_change(&mut self, line: Line, level: bool) {
        match line {
            Line::Pa1 => self.input_change(0, level),
            Line::Pa9 => {
                self.pa9 = level;
                if self.wires.tx_wire {
                    self.input_change(1, level);
                }
            }
            Line::Pb10 => {
                if !self.wires.tx_wire {
                    self.input_change(1, level);
                }
            }
        }
    }

    /// A capture input's pin takes `level` now: its filter starts.
    pub(super) fn input_change(&mut self, i: usize, level: bool) {
        let t = self.t;
        let inp = &mut self.inputs[i];
        if inp.raw == level {
            return;
        }
        inp.raw = level;
        inp.changed_at = t;
        let d = self.filter_ticks(i);
        self.checks.push((t + d, i, t));
    }

    /// N samples after a change: if the pin held its level, the filter's
    /// output changes and the edge detector sees it.
    pub(super) fn validate(&mut self, i: usize, changed_at: u64) {
        let inp = &mut self.inputs[i];
        if inp.changed_at != changed_at || inp.raw == inp.filtered {
            return;
        }
        inp.filtered = inp.raw;
        let rising = inp.filtered;
        let n = i as u8 + 2;
        if self.is_output(n) || !self.is_own_input(n) {
            return;
        }
        let ccer = self.tim.ccer().read();
        let (e, p, np) = match n {
            2 => (ccer.cc2e().bit_is_set(), ccer.cc2p().bit_is_set(), ccer.cc2np().bit_is_set()),
            _ => (ccer.cc3e().bit_is_set(), ccer.cc3p().bit_is_set(), ccer.cc3np().bit_is_set()),
        };
        let wanted = match (p, np) {
            (false, false) => rising,
            (true, false) => !rising,
            (true, true) => true,
            (false, true) => panic!("model: CC{n}P/CC{n}NP = 0/1 is reserved"),
        };
        if !e || !wanted {
            return;
        }
        let cnt = self.cnt();
        let sr = tim_peek(&self.tim, TimReg::Sr);
        let of = if sr & (1 << n) != 0 { 1 << (8 + n) } else { 0 };
        tim_poke(&self.tim, TimReg::Sr, sr | 1 << n | of);
        tim_poke(&self.tim, TimReg::ccr(n), cnt);
        self.latched.push(Latched { channel: n, edge_at: changed_at, latch_at: self.t });
    }

    /// Schedule the edges of a byte on `line`, start bit at `start`.
    pub(super) fn byte_edges(&mut self, line: Line, start: u64, byte: u8) {
        let mut prev = true;
        for i in 0..10u64 {
            let level = match i {
                0 => false,
                9 => true,
                _ => byte >> (i - 1) & 1 == 1,
            };
            if level != prev {
                self.changes.push((start + i * self.bit, line, level));
            }
            prev = level;
        }
    }

    /// A byte arrives on PA1 and USART1 RX with its start bit at `start`;
    /// RXNE comes 9.5 bit times later.
    pub fn byte_in(&mut self, start: u64, byte: u8) {
        self.byte_edges(Line::Pa1, start, byte);
        let ready = start + 19 * self.bit / 2;
        let i = self.rx.iter().position(|&(at, _)| at > ready).unwrap_or(self.rx.len());
        self.rx.insert(i, (ready, byte));
    }

    /// An edge on PA1 at tick `at` (a target's answer).
    pub fn pa1_edge_at(&mut self, at: u64, rising: bool) {
        self.changes.push((at, Line::Pa1, rising));
    }

    /// USART1 has a received byte (RXNE).
    pub fn rx_ready(&self) -> bool {
        self.rx.front().is_some_and(|&(at, _)| at <= self.t)
    }

    /// Read USART1's DR (one access).
    pub fn rx_take(&mut self) -> Option<u8> {
        self.access();
        if self.rx_ready() {
            self.rx.pop_front().map(|(_, b)| b)
        } else {
            None
        }
    }

    /// PB10's level when nothing drives it: its pull's (none: it keeps
    /// what it had).
    pub(super) fn pb10_pull_level(&self) -> Option<bool> {
        let p = self.gpiob.pupdr().read();
        if p.pupdr10().is_pull_up() {
            Some(true)
        } else if p.pupdr10().is_pull_down() {
            Some(false)
        } else {
            None
        }
    }

    pub(super) fn idr(&self, port: Port) -> u32 {
        match port {
            Port::A => {
                let odr8 = self.gpioa.moder().read().moder8().is_output()
                    && self.gpioa.odr().read().odr8().bit_is_set();
                u32::from(self.pa0)
                    | u32::from(self.inputs[0].raw) << 1
                    | u32::from(odr8) << 8
                    | u32::from(self.pa9) << 9
            }
            Port::B => u32::from(self.pb4()) << 4 | u32::from(self.inputs[1].raw) << 10,
        }
    }
}

impl GpioBus for Model {
    fn gpio_read(&mut self, port: Port, reg: GpioReg) -> u32 {
        self.access();
        if reg == GpioReg::Idr {
            return self.idr(port);
        }
        // SAFETY: a word of our own block in RAM (see `tim_poke`).
        unsafe {
            match port {
                Port::A => gpio_ptr!(self.gpioa, reg).read_volatile(),
                Port::B => gpio_ptr!(self.gpiob, reg).read_volatile(),
            }
        }
    }

    fn gpio_write(&mut self, port: Port, reg: GpioReg, value: u32) {
        self.access();
        self.gpio_writes.push((port, reg, value));
        assert_ne!(reg, GpioReg::Idr, "model: IDR is read-only");
        if reg == GpioReg::Bsrr {
            // Set wins over reset (RM0383 §8.4.7).
            let (set, reset) = (value & 0xFFFF, value >> 16);
            let odr = match port {
                Port::A => self.gpioa.odr().as_ptr(),
                Port::B => self.gpiob.odr().as_ptr(),
            };
            // SAFETY: a word of our own block in RAM (see `tim_poke`).
            let before = unsafe { odr.read_volatile() };
            let after = (before | set) & !(reset & !set);
            // SAFETY: as above.
            unsafe { odr.write_volatile(after) };
            if port == Port::A && (before ^ after) & (1 << 8) != 0 {
                self.marker_edges.push((self.t, after & (1 << 8) != 0));
            }
            return;
        }
        // SAFETY: a word of our own block in RAM (see `tim_poke`).
        unsafe {
            match port {
                Port::A => gpio_ptr!(self.gpioa, reg).write_volatile(value),
                Port::B => gpio_ptr!(self.gpiob, reg).write_volatile(value),
            }
        }
        match port {
            Port::A => self.update_pa0(),
            Port::B if reg == GpioReg::Pupdr => {
                if let Some(level) = self.pb10_pull_level() {
                    let at = self.t + PULL_SETTLE_TICKS;
                    self.changes.push((at, Line::Pb10, level));
                }
            }
            Port::B => self.update_pb4(),
        }
    }
}
