//! TIM2's registers as the driver sees them through [`Bus`]: every read
//! and write with its RM0383 semantics (rc_w0 flags, CCRx reads clearing
//! CCxIF, CCxS writable only with CCxE clear, UG), USART1's transmitter
//! and the busy wait.

use stm32f4::stm32f411::tim2::ccmr1_output::OC1M;

use super::blocks::{tim3_peek, tim3_poke, tim_peek, tim_poke};
use super::{Line, Model, Target, SR_FLAGS};
use crate::board::nucleo::{Bus, TimReg};

impl Bus for Model {
    fn tim_read(&mut self, reg: TimReg) -> u32 {
        self.access();
        match reg {
            TimReg::Cnt => self.cnt(),
            TimReg::Ccr1 | TimReg::Ccr2 | TimReg::Ccr3 | TimReg::Ccr4 => {
                let n = reg.offset() as u8 / 4 - 12;
                let v = tim_peek(&self.tim, reg);
                if !self.is_output(n) {
                    // Reading CCRx of a capture channel clears CCxIF.
                    let sr = tim_peek(&self.tim, TimReg::Sr);
                    tim_poke(&self.tim, TimReg::Sr, sr & !(1 << n));
                }
                v
            }
            _ => tim_peek(&self.tim, reg),
        }
    }

    fn tim_write(&mut self, reg: TimReg, v: u32) {
        self.access();
        self.writes.push((reg, v));
        match reg {
            TimReg::Cr1 => {
                assert_eq!(v & !1, 0, "model: only CEN of CR1 is modelled (up-counting, CKD 00)");
                let was = self.running();
                if was && v & 1 == 0 {
                    self.held = self.cnt();
                }
                tim_poke(&self.tim, reg, v);
                if !was && v & 1 != 0 {
                    let held = self.held;
                    self.set_cnt(held);
                    self.tim2_started();
                }
            }
            TimReg::Cr2 => {
                assert_eq!(v & !(0b111 << 4), 0, "model: only MMS of CR2 is modelled");
                tim_poke(&self.tim, reg, v);
            }
            TimReg::Smcr => {
                assert_eq!(v & !(1 << 7), 0, "model: TIM2 as a master only (MSM); no slave mode");
                tim_poke(&self.tim, reg, v);
            }
            TimReg::Sr => {
                assert_eq!(v & !SR_FLAGS, 0, "model: SR reserved bits written 1: {v:#x}");
                let sr = tim_peek(&self.tim, reg);
                tim_poke(&self.tim, reg, sr & v);
            }
            TimReg::Egr => {
                assert_eq!(v, 1, "model: only UG of EGR is modelled");
                self.set_cnt(0);
                self.or_sr(1);
            }
            TimReg::Ccmr1 | TimReg::Ccmr2 => {
                let old = tim_peek(&self.tim, reg);
                let ccer = tim_peek(&self.tim, TimReg::Ccer);
                let first = if reg == TimReg::Ccmr1 { 1 } else { 3 };
                for (k, shift) in [(first, 0), (first + 1, 8)] {
                    if (old ^ v) >> shift & 0b11 != 0 {
                        assert_eq!(ccer >> (4 * (k - 1)) & 1, 0, "model: CC{k}S written with CC{k}E set");
                    }
                }
                tim_poke(&self.tim, reg, v);
                if reg == TimReg::Ccmr1 && self.is_output(1) {
                    match self.tim.ccmr1_output().read().oc1m().variant() {
                        OC1M::ForceActive => self.oc1ref = true,
                        OC1M::ForceInactive => self.oc1ref = false,
                        OC1M::PwmMode1 | OC1M::PwmMode2 => panic!("model: PWM modes are not modelled"),
                        _ => {}
                    }
                    self.update_pa0();
                }
            }
            TimReg::Ccer => {
                tim_poke(&self.tim, reg, v);
                self.update_pa0();
            }
            TimReg::Cnt => self.set_cnt(v),
            TimReg::Psc => {
                assert_eq!(v, 0, "model: counts f_CK_INT, PSC must be 0");
                tim_poke(&self.tim, reg, v);
            }
            TimReg::Arr => {
                assert_ne!(v, 0, "model: ARR 0 stops the counter");
                let cnt = self.cnt();
                tim_poke(&self.tim, reg, v);
                self.set_cnt(cnt);
            }
            TimReg::Ccr1 | TimReg::Ccr2 | TimReg::Ccr3 | TimReg::Ccr4 => {
                let n = reg.offset() as u8 / 4 - 12;
                assert!(self.is_output(n), "model: CCR{n} is read-only in input mode");
                tim_poke(&self.tim, reg, v);
            }
            TimReg::Dier => tim_poke(&self.tim, reg, v),
        }
    }

    fn tim3_read(&mut self, reg: TimReg) -> u32 {
        self.access();
        match reg {
            TimReg::Cnt => self.cnt3(),
            _ => tim3_peek(&self.tim3, reg),
        }
    }

    fn tim3_write(&mut self, reg: TimReg, v: u32) {
        self.access();
        self.tim3_writes.push((reg, v));
        match reg {
            TimReg::Cr1 => {
                assert_eq!(v & !1, 0, "model: only CEN of TIM3's CR1 is modelled");
                let was = self.tim3.cr1().read().cen().bit_is_set();
                if was && v & 1 == 0 {
                    self.held3 = self.cnt3();
                }
                tim3_poke(&self.tim3, reg, v);
                if !was && v & 1 != 0 {
                    let held = self.held3;
                    self.set_cnt3(held);
                }
            }
            TimReg::Smcr => {
                assert_eq!(v & !0x77, 0, "model: only SMS and TS of TIM3's SMCR are modelled");
                tim3_poke(&self.tim3, reg, v);
            }
            TimReg::Dier => {
                assert_eq!(v & !(1 << 1), 0, "model: only CC1IE of TIM3's DIER is modelled");
                tim3_poke(&self.tim3, reg, v);
            }
            TimReg::Sr => {
                assert_eq!(v & !SR_FLAGS, 0, "model: TIM3 SR reserved bits written 1: {v:#x}");
                let sr = tim3_peek(&self.tim3, reg);
                tim3_poke(&self.tim3, reg, sr & v);
            }
            TimReg::Egr => {
                assert_eq!(v, 1, "model: only UG of TIM3's EGR is modelled");
                self.set_cnt3(0);
                let sr = tim3_peek(&self.tim3, TimReg::Sr);
                tim3_poke(&self.tim3, TimReg::Sr, sr | 1);
            }
            TimReg::Ccmr1 => {
                let old = tim3_peek(&self.tim3, reg);
                if (old ^ v) & 0b11 != 0 {
                    assert_eq!(
                        tim3_peek(&self.tim3, TimReg::Ccer) & 1,
                        0,
                        "model: TIM3 CC1S written with CC1E set"
                    );
                }
                assert_eq!(v & 0xFF00, 0, "model: TIM3's CH2 is not used");
                tim3_poke(&self.tim3, reg, v);
                use stm32f4::stm32f411::tim3::ccmr1_output::OC1M as M3;
                if self.tim3.ccmr1_output().read().cc1s().is_output() {
                    match self.tim3.ccmr1_output().read().oc1m().variant() {
                        M3::ForceActive => self.set_oc1ref3(true),
                        M3::ForceInactive => self.set_oc1ref3(false),
                        M3::PwmMode1 | M3::PwmMode2 => panic!("model: PWM modes are not modelled"),
                        _ => {}
                    }
                }
            }
            TimReg::Ccer => {
                assert_eq!(v & !0b1011, 0, "model: only CH1's CCER bits of TIM3 are modelled");
                tim3_poke(&self.tim3, reg, v);
                self.update_pb4();
            }
            TimReg::Psc => {
                assert_eq!(v, 0, "model: TIM3 counts f_CK_INT, PSC must be 0");
                tim3_poke(&self.tim3, reg, v);
            }
            TimReg::Arr => {
                assert_eq!(v, 0xFFFF, "model: TIM3 over its full 16 bits only");
                tim3_poke(&self.tim3, reg, v);
            }
            TimReg::Ccr1 => {
                assert!(v <= 0xFFFF, "model: TIM3's CCR1 is 16 bits, {v:#x} written");
                tim3_poke(&self.tim3, reg, v);
            }
            TimReg::Cnt => self.set_cnt3(v),
            TimReg::Cr2 | TimReg::Ccmr2 | TimReg::Ccr2 | TimReg::Ccr3 | TimReg::Ccr4 => {
                panic!("model: TIM3's {reg:?} is not modelled")
            }
        }
    }

    fn usart1_write(&mut self, byte: u8) -> bool {
        self.access();
        // One byte shifting out and one waiting in DR: no room.
        if self.sent.last().is_some_and(|&(start, _)| start > self.t) {
            return false;
        }
        let muxed =
            self.gpioa.moder().read().moder9().is_alternate() && self.gpioa.afrh().read().afrh9().is_af7();
        let start = (self.t + self.tx_delay).max(self.tx_free_at);
        self.tx_free_at = start + 10 * self.bit;
        self.sent.push((start, byte));
        if !muxed {
            // USART1 TX does not reach the pin.
            return true;
        }
        self.byte_edges(Line::Pa9, start, byte);
        if self.wires.uart_loopback {
            self.byte_in(start, byte);
        }
        if let Target::UartEcho { latency } = self.target {
            self.byte_in(start + latency, byte);
        }
        true
    }

    fn spin(&mut self, cycles: u32) {
        let to = self.t + u64::from(cycles);
        self.advance(to);
    }
}
