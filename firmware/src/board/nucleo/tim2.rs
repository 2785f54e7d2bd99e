//! TIM2 as the capture loop's timer: the [`TimerHw`] of the Nucleo, as
//! register words written and read through a [`Bus`]. Which channel does
//! what is in [`crate::hwloop::seam`]; every decision is in [`crate::hwloop`].
//!
//! ```text
//!   CH1 PA0   output compare: the stimulus edge (OC1M)
//!   CH2 PA1   input capture on TI2, filter N = 8: the response
//!   CH3 PB10  input capture on TI3, filter N = 8: our own TX start bit
//!   CH4 -     output compare, no pin: the wake-up
//!   TIM3 CH1 PB4  output compare on TIM3, TIM2's 16-bit slave: the
//!             trigger output (`--trigger-above`, docs/dev/trigger.md)
//! ```
//!
//! TIM3 counts TIM2's ticks modulo 2^16: both count f_CK_INT (PSC 0, both
//! on APB1), TIM3 in trigger mode (SMS = 110) on ITR1, which is TIM2's
//! TRGO (RM0383 §13.4.3, the "TIMx internal trigger connection" table:
//! for TIM3, ITR0 is TIM1, ITR1 TIM2, ITR2 TIM5, ITR3 TIM4), and TIM2's
//! TRGO is its counter enable (CR2 MMS = 001, §13.4.2). TIM2's CEN thus
//! starts TIM3, and with MSM set in TIM2 (§13.4.3: "the effect of an event
//! on the trigger input is delayed to allow a perfect synchronization
//! between the current timer and its slaves") the two start together from
//! the 0 their UGs left (§13.3.15, "Using one timer to start another
//! timer"). The table and the synchronous start come from RM0383's text
//! and agree with ST's F4 SPL/LL examples that slave TIM3 to TIM2 through
//! ITR1; neither has been seen on a scope here (no bench), so
//! [`Tim2::trigger_in_step`] checks at start that the two counters read in
//! step, and the board announces no trigger when they do not.

use super::{Bus, GpioReg, Port, TimReg};
use crate::hwloop::seam::{Capture, Channel, OutputMode, Polarity, TimerHw};

// ----- bit positions, RM0383 §13.4 (TIM2 to TIM5 registers) -----

/// CR1 CEN, counter enable (§13.4.1). The other CR1 bits stay 0: up,
/// edge-aligned, not one-pulse, ARR not buffered, CKD = 00 (t_DTS = t_CK_INT).
pub const CR1_CEN: u32 = 1 << 0;
/// DIER UIE, update interrupt enable (§13.4.4).
pub const DIER_UIE: u32 = 1 << 0;
/// DIER CCnIE, capture/compare n interrupt enable, n in 1..=4 (§13.4.4).
pub const fn dier_ccie(n: u8) -> u32 {
    1 << n
}
/// SR UIF, update interrupt flag (§13.4.5).
pub const SR_UIF: u32 = 1 << 0;
/// SR CCnIF, capture/compare n interrupt flag, n in 1..=4 (§13.4.5).
pub const fn sr_ccif(n: u8) -> u32 {
    1 << n
}
/// SR CCnOF, capture n overcapture flag, n in 1..=4 (§13.4.5).
pub const fn sr_ccof(n: u8) -> u32 {
    1 << (8 + n)
}
/// SR TIF, trigger interrupt flag (§13.4.5).
pub const SR_TIF: u32 = 1 << 6;
/// Every SR flag: all are rc_w0 (§13.4.5), written 0 to clear and 1 to
/// leave alone; the reserved bits are written 0 (their reset value).
pub const SR_FLAGS: u32 = SR_UIF
    | sr_ccif(1)
    | sr_ccif(2)
    | sr_ccif(3)
    | sr_ccif(4)
    | SR_TIF
    | sr_ccof(1)
    | sr_ccof(2)
    | sr_ccof(3)
    | sr_ccof(4);
/// EGR UG, update generation (§13.4.6): reloads PSC, zeroes the counter
/// and sets UIF (URS = 0).
pub const EGR_UG: u32 = 1 << 0;

/// CCMRx holds two channels, one byte each: CH1/CH3 at bit 0, CH2/CH4 at
/// bit 8 (§13.4.7, §13.4.8). Within a channel's byte:
/// CCxS, bits 1:0: 00 output, 01 input on its own TIx (CC2S = 01: IC2 on
/// TI2; CC3S = 01: IC3 on TI3).
pub const CCS_MASK: u32 = 0b11;
/// CCxS = 00: the channel is an output.
pub const CCS_OUTPUT: u32 = 0b00;
/// CCxS = 01: the channel captures its own input, TIx.
pub const CCS_TI_SAME: u32 = 0b01;
/// Output view: OCxPE, bit 3 (preload enable; 0 = a new CCRx acts at once).
pub const OCPE: u32 = 1 << 3;
/// Output view: OCxM, bits 6:4.
pub const OCM_SHIFT: u32 = 4;
/// OCxM field mask.
pub const OCM_MASK: u32 = 0b111 << OCM_SHIFT;
/// OCxM = 000: frozen, a match does nothing to OCxREF.
pub const OCM_FROZEN: u32 = 0b000;
/// OCxM = 001: OCxREF high on match.
pub const OCM_ACTIVE_ON_MATCH: u32 = 0b001;
/// OCxM = 010: OCxREF low on match.
pub const OCM_INACTIVE_ON_MATCH: u32 = 0b010;
/// OCxM = 011: OCxREF toggles on match.
pub const OCM_TOGGLE: u32 = 0b011;
/// OCxM = 100: OCxREF forced low.
pub const OCM_FORCE_INACTIVE: u32 = 0b100;
/// OCxM = 101: OCxREF forced high.
pub const OCM_FORCE_ACTIVE: u32 = 0b101;
/// Input view: ICxPSC, bits 3:2 (00: every edge captured).
pub const ICPSC_SHIFT: u32 = 2;
/// Input view: ICxF, bits 7:4.
pub const ICF_SHIFT: u32 = 4;
/// ICxF = 0011: f_SAMPLING = f_CK_INT, N = 8: an edge is validated after
/// 8 consecutive samples at its new level, so the capture latches 8 ticks
/// after it ([`crate::boards::nucleo_f411re::CAPTURE_FILTER_TICKS`]).
pub const ICF_FCK_INT_N8: u32 = 0b0011;

/// CCER holds four bits per channel, CHn at bit 4·(n−1) (§13.4.9):
/// CCxE (bit 0): output on / capture on.
pub const CCER_E: u32 = 1 << 0;
/// CCxP (bit 1): output active low; for a capture, with CCxNP, the edge.
pub const CCER_P: u32 = 1 << 1;
/// CCxNP (bit 3): with CCxP, the edge of a capture: 00 rising, 10
/// falling, 11 both (01 reserved).
pub const CCER_NP: u32 = 1 << 3;

/// The shift of channel `n`'s four CCER bits.
const fn ccer_shift(n: u8) -> u32 {
    4 * (n as u32 - 1)
}

/// The CCMR register and the shift of channel `n`'s byte in it.
const fn ccmr_of(n: u8) -> (TimReg, u32) {
    match n {
        1 => (TimReg::Ccmr1, 0),
        2 => (TimReg::Ccmr1, 8),
        3 => (TimReg::Ccmr2, 0),
        _ => (TimReg::Ccmr2, 8),
    }
}

/// CCMR1 at start: CH1 output, no preload, frozen; CH2 input on TI2, no
/// prescaler, filter N = 8.
pub const CCMR1_START: u32 = (CCS_OUTPUT | OCM_FROZEN << OCM_SHIFT)
    | (CCS_TI_SAME | 0b00 << ICPSC_SHIFT | ICF_FCK_INT_N8 << ICF_SHIFT) << 8;
/// CCMR2 at start: CH3 input on TI3, no prescaler, filter N = 8; CH4
/// output, frozen (a compare interrupt only, no pin).
pub const CCMR2_START: u32 = (CCS_TI_SAME | 0b00 << ICPSC_SHIFT | ICF_FCK_INT_N8 << ICF_SHIFT)
    | (CCS_OUTPUT | OCM_FROZEN << OCM_SHIFT) << 8;
/// CCER at start: CH1's output on, active high (PA0 follows OC1REF); the
/// capture channels are opened by the loop.
pub const CCER_START: u32 = CCER_E << ccer_shift(1);

// ----- TIM2 as master, TIM3 as its slave: the trigger output -----

/// TIM2 CR2 MMS = 001 (§13.4.2, bits 6:4): TRGO is CNT_EN, the counter
/// enable.
pub const CR2_MMS_ENABLE: u32 = 0b001 << 4;
/// TIM2 SMCR MSM (§13.4.3, bit 7): master/slave mode, the master's start
/// delayed to keep step with its slaves.
pub const SMCR_MSM: u32 = 1 << 7;
/// TIM3 SMCR SMS = 110 (§13.4.3, bits 2:0): trigger mode, the counter
/// starts at a rising edge of TRGI.
pub const SMCR_SMS_TRIGGER: u32 = 0b110;
/// TIM3 SMCR TS = 001 (§13.4.3, bits 6:4): TRGI is ITR1, TIM2's TRGO.
pub const SMCR_TS_ITR1: u32 = 0b001 << 4;
/// TIM3 SMCR: trigger mode on ITR1.
pub const TIM3_SMCR: u32 = SMCR_SMS_TRIGGER | SMCR_TS_ITR1;
/// TIM3 ARR: the full 16 bits, so TIM3.CNT = TIM2.CNT mod 2^16.
pub const TIM3_ARR: u32 = 0xFFFF;
/// TIM3 CCMR1 at start: CH1 output, no preload, frozen (PB4 low).
pub const TIM3_CCMR1_START: u32 = CCS_OUTPUT | OCM_FROZEN << OCM_SHIFT;
/// TIM3 CCER at start: CH1's output on, active high (PB4 follows OC1REF).
pub const TIM3_CCER_START: u32 = CCER_E;
/// The trigger pin: PB4, TIM3_CH1 (AF2).
const PB4: u32 = 4;

/// The stimulus pin: PA0, TIM2_CH1.
const PA0: u32 = 1 << 0;
/// The scope trigger: PA8 (BSRR: set at bit 8, reset at bit 24).
const PA8: u32 = 8;
/// PB10: TIM2_CH3, the TX start-bit wire's end.
const PB10: u32 = 10;
/// PUPDR codes (RM0383 §8.4.4).
const PUPD_MASK: u32 = 0b11;
/// PUPDR = 10, pull-down.
const PUPD_DOWN: u32 = 0b10;

/// Core cycles the TX-wire check waits for PB10 to follow its pull-down:
/// 20 µs at 100 MHz. The pull-down is 30 to 50 kΩ (DS10314, R_PD) and a
/// bench wire and the pin some tens of pF: τ is 2 µs at most, so the line
/// has settled after 20 µs. With PA9 wired, PA9's push-pull driver wins
/// against the pull at once.
pub const TX_WIRE_SETTLE_CYCLES: u32 = 2_000;

/// The channel number of a role (`seam` module table).
const fn number(ch: Channel) -> u8 {
    match ch {
        Channel::Stimulus => 1,
        Channel::Response => 2,
        Channel::TxStart => 3,
        Channel::Wake => 4,
        // TIM3's CH1, not a TIM2 channel: every method below takes it
        // apart before asking.
        Channel::Trigger => 1,
    }
}

/// OCxM for an output mode (§13.4.7).
const fn ocm_of(mode: OutputMode) -> u32 {
    match mode {
        OutputMode::Frozen => OCM_FROZEN,
        OutputMode::ForceHigh => OCM_FORCE_ACTIVE,
        OutputMode::ForceLow => OCM_FORCE_INACTIVE,
        OutputMode::HighOnMatch => OCM_ACTIVE_ON_MATCH,
        OutputMode::LowOnMatch => OCM_INACTIVE_ON_MATCH,
        OutputMode::ToggleOnMatch => OCM_TOGGLE,
    }
}

/// TIM2 with the target line's transmitter and the scope trigger, over a
/// [`Bus`]: the board passes one over the PAC's registers, the tests a
/// register model.
#[derive(Debug)]
pub struct Tim2<B> {
    bus: B,
    /// What CCMR1 holds: only this driver writes it (hardware never
    /// does), so OC1M changes in one write, not a read and a write, and a
    /// software edge follows its counter read by two accesses.
    ccmr1: u32,
    /// What TIM3's CCMR1 holds (the trigger's OC1M), for the same reason.
    tim3_ccmr1: u32,
    /// TIM2's CNT, TIM3's CNT and TIM2's CNT again, read in that order
    /// once both ran ([`Tim2::trigger_in_step`]).
    step_check: [u32; 3],
}

impl<B: Bus> Tim2<B> {
    /// Start TIM2 free-running over 32 bits at the timer clock, every
    /// channel configured and idle (RM0383 §13.3.1, §13.4). The clock of
    /// TIM2 must be on (RCC_APB1ENR) and the pins configured
    /// ([`super::gpio::configure_pins`]).
    pub fn start(mut bus: B) -> Self {
        // Stopped, no interrupt, every channel off: CCxS is writable only
        // with its channel off (CCxE = 0, §13.4.7).
        bus.tim_write(TimReg::Cr1, 0);
        bus.tim_write(TimReg::Dier, 0);
        bus.tim_write(TimReg::Ccer, 0);
        // Counts f_CK_INT (PSC = 0) over the full 32 bits (§13.4.11, §13.4.12).
        bus.tim_write(TimReg::Psc, 0);
        bus.tim_write(TimReg::Arr, u32::MAX);
        // §13.4.7/§13.4.8: CH1 output frozen, no preload (a new CCR1 acts
        // at once); CH2 and CH3 capture their own pins through the N = 8
        // filter; CH4 output frozen.
        bus.tim_write(TimReg::Ccmr1, CCMR1_START);
        bus.tim_write(TimReg::Ccmr2, CCMR2_START);
        // §13.4.9: CH1's output on, active high.
        bus.tim_write(TimReg::Ccer, CCER_START);
        // §13.4.6: UG loads PSC and zeroes the counter; it sets UIF too,
        // which is cleared before the update interrupt is enabled.
        bus.tim_write(TimReg::Egr, EGR_UG);
        bus.tim_write(TimReg::Sr, SR_FLAGS & !SR_UIF);
        bus.tim_write(TimReg::Dier, DIER_UIE);
        // TIM3, the trigger output's 16-bit slave (module docs), set up
        // stopped like TIM2 above and zeroed by its own UG (§13.4.6); its
        // flags cleared (rc_w0, every flag written 0); then it waits in
        // trigger mode for TIM2's TRGO. TIM3's clock must be on
        // (RCC_APB1ENR TIM3EN) before TIM2 starts (§13.3.15's note: the
        // slave's clock must be enabled before it receives the master's
        // events).
        bus.tim3_write(TimReg::Cr1, 0);
        bus.tim3_write(TimReg::Dier, 0);
        bus.tim3_write(TimReg::Ccer, 0);
        bus.tim3_write(TimReg::Smcr, 0);
        bus.tim3_write(TimReg::Psc, 0);
        bus.tim3_write(TimReg::Arr, TIM3_ARR);
        bus.tim3_write(TimReg::Ccmr1, TIM3_CCMR1_START);
        bus.tim3_write(TimReg::Ccer, TIM3_CCER_START);
        bus.tim3_write(TimReg::Egr, EGR_UG);
        bus.tim3_write(TimReg::Sr, 0);
        bus.tim3_write(TimReg::Smcr, TIM3_SMCR);
        // TIM2 as the master: TRGO = CNT_EN, start delayed for the slave.
        bus.tim_write(TimReg::Cr2, CR2_MMS_ENABLE);
        bus.tim_write(TimReg::Smcr, SMCR_MSM);
        bus.tim_write(TimReg::Cr1, CR1_CEN);
        // Both run now: read them in step (interrupts are not on yet).
        let a = bus.tim_read(TimReg::Cnt);
        let b = bus.tim3_read(TimReg::Cnt);
        let c = bus.tim_read(TimReg::Cnt);
        Self { bus, ccmr1: CCMR1_START, tim3_ccmr1: TIM3_CCMR1_START, step_check: [a, b, c] }
    }

    /// Whether TIM3 counts TIM2's ticks modulo 2^16, as far as three reads
    /// can tell: TIM3's CNT, read between two reads of TIM2's, lies
    /// between their low halves. It catches a TIM3 that did not start (a
    /// wrong TS, its clock off), one that counts another clock or runs
    /// more than the reads' spacing (a few ticks) behind or ahead. It
    /// cannot see an offset smaller than that spacing: a bench check
    /// (docs/dev/trigger.md) measures the pulse against the stimulus edge.
    /// Without it the board announces no trigger.
    pub fn trigger_in_step(&self) -> bool {
        let [a, b, c] = self.step_check;
        let span = c.wrapping_sub(a);
        span < 0x8000 && (b.wrapping_sub(a) & TIM3_ARR) <= span
    }

    /// The three reads [`Tim2::trigger_in_step`] judged (for the boot log).
    pub fn step_check(&self) -> [u32; 3] {
        self.step_check
    }

    /// The bus (the model, in tests).
    pub fn bus(&self) -> &B {
        &self.bus
    }

    /// The bus, mutably.
    pub fn bus_mut(&mut self) -> &mut B {
        &mut self.bus
    }

    /// Clear SR flags `bits` (rc_w0: 0 clears, 1 leaves; §13.4.5).
    fn clear(&mut self, bits: u32) {
        self.bus.tim_write(TimReg::Sr, SR_FLAGS & !bits);
    }

    fn modify(&mut self, reg: TimReg, clear: u32, set: u32) {
        let v = self.bus.tim_read(reg);
        self.bus.tim_write(reg, (v & !clear) | set);
    }
}

impl<B: Bus> TimerHw for Tim2<B> {
    fn counter(&mut self) -> u32 {
        self.bus.tim_read(TimReg::Cnt)
    }

    fn overflow_pending(&mut self) -> bool {
        self.bus.tim_read(TimReg::Sr) & SR_UIF != 0
    }

    fn clear_overflow(&mut self) {
        self.clear(SR_UIF);
    }

    fn take_capture(&mut self, ch: Channel) -> Option<Capture> {
        let n = match ch {
            Channel::Response | Channel::TxStart => number(ch),
            Channel::Stimulus | Channel::Wake | Channel::Trigger => return None,
        };
        if self.bus.tim_read(TimReg::Sr) & sr_ccif(n) == 0 {
            return None;
        }
        // RM0383 §13.4.5: reading CCRx clears CCxIF, and CCxOF is set when
        // a capture occurs while CCxIF is already set. SR is read again
        // after CCRx, so CCxOF covers the captures up to that read.
        let raw = self.bus.tim_read(TimReg::ccr(n));
        let overcaptured = self.bus.tim_read(TimReg::Sr) & sr_ccof(n) != 0;
        if overcaptured {
            self.clear(sr_ccof(n));
        }
        Some(Capture { raw, overcaptured })
    }

    fn set_capture(&mut self, ch: Channel, polarity: Option<Polarity>) {
        let n = match ch {
            Channel::Response | Channel::TxStart => number(ch),
            Channel::Stimulus | Channel::Wake | Channel::Trigger => return,
        };
        // RM0383 §13.4.9 (CCER): CCxP/CCxNP = 0/0 rising, 1/0 falling,
        // 1/1 both edges; changed with the channel off.
        let edge = match polarity {
            Some(Polarity::Rising) | None => 0,
            Some(Polarity::Falling) => CCER_P,
            Some(Polarity::Both) => CCER_P | CCER_NP,
        };
        let s = ccer_shift(n);
        let ccer = self.bus.tim_read(TimReg::Ccer) & !((CCER_E | CCER_P | CCER_NP) << s);
        self.bus.tim_write(TimReg::Ccer, ccer);
        self.bus.tim_write(TimReg::Ccer, ccer | edge << s);
        self.clear(sr_ccif(n) | sr_ccof(n));
        if polarity.is_some() {
            self.bus.tim_write(TimReg::Ccer, ccer | (edge | CCER_E) << s);
            self.modify(TimReg::Dier, 0, dier_ccie(n));
        } else {
            self.modify(TimReg::Dier, dier_ccie(n), 0);
        }
    }

    fn take_compare(&mut self, ch: Channel) -> bool {
        let n = match ch {
            Channel::Stimulus | Channel::Wake => number(ch),
            Channel::Trigger => {
                // TIM3's SR: the same rc_w0 flags as TIM2's (§13.4.5).
                let set = self.bus.tim3_read(TimReg::Sr) & sr_ccif(1) != 0;
                if set {
                    self.bus.tim3_write(TimReg::Sr, SR_FLAGS & !sr_ccif(1));
                }
                return set;
            }
            Channel::Response | Channel::TxStart => return false,
        };
        let set = self.bus.tim_read(TimReg::Sr) & sr_ccif(n) != 0;
        if set {
            self.clear(sr_ccif(n));
        }
        set
    }

    fn compare_pending(&mut self, ch: Channel) -> bool {
        match ch {
            Channel::Stimulus | Channel::Wake => self.bus.tim_read(TimReg::Sr) & sr_ccif(number(ch)) != 0,
            Channel::Trigger => self.bus.tim3_read(TimReg::Sr) & sr_ccif(1) != 0,
            Channel::Response | Channel::TxStart => false,
        }
    }

    fn set_compare(&mut self, ch: Channel, raw: u32) {
        match ch {
            Channel::Stimulus | Channel::Wake => self.bus.tim_write(TimReg::ccr(number(ch)), raw),
            // TIM3's CCR1 is 16 bits (§13.4.13, TIM3: bits 31:16 reserved).
            Channel::Trigger => self.bus.tim3_write(TimReg::Ccr1, raw & TIM3_ARR),
            Channel::Response | Channel::TxStart => {}
        }
    }

    fn set_compare_irq(&mut self, ch: Channel, on: bool) {
        let (tim3, bit) = match ch {
            Channel::Stimulus | Channel::Wake => (false, dier_ccie(number(ch))),
            Channel::Trigger => (true, dier_ccie(1)),
            Channel::Response | Channel::TxStart => return,
        };
        let read = |b: &mut B| if tim3 { b.tim3_read(TimReg::Dier) } else { b.tim_read(TimReg::Dier) };
        let v = read(&mut self.bus);
        let v = if on { v | bit } else { v & !bit };
        if tim3 {
            self.bus.tim3_write(TimReg::Dier, v);
        } else {
            self.bus.tim_write(TimReg::Dier, v);
        }
    }

    fn set_trigger_output(&mut self, mode: OutputMode) {
        // RM0383 §13.4.7 (TIM3_CCMR1 output, OC1M), like `set_output`.
        self.tim3_ccmr1 = (self.tim3_ccmr1 & !OCM_MASK) | ocm_of(mode) << OCM_SHIFT;
        self.bus.tim3_write(TimReg::Ccmr1, self.tim3_ccmr1);
    }

    fn trigger_level(&mut self) -> bool {
        // PB4 in AF2 follows TIM3's OC1 (OC1REF, CC1P = 0); its input data
        // bit is sampled from the pin (RM0383 §8.3.10).
        self.bus.gpio_read(Port::B, GpioReg::Idr) & (1 << PB4) != 0
    }

    fn set_output(&mut self, mode: OutputMode) {
        // RM0383 §13.4.7 (CCMR1 output, OC1M); CCMR1's CH2 half (its
        // capture set-up) is kept.
        let (reg, shift) = ccmr_of(1);
        self.ccmr1 = (self.ccmr1 & !(OCM_MASK << shift)) | ocm_of(mode) << OCM_SHIFT << shift;
        self.bus.tim_write(reg, self.ccmr1);
    }

    fn output_level(&mut self) -> bool {
        // PA0 in AF1 follows OC1 (OC1REF, CC1P = 0); its input data bit is
        // sampled from the pin (RM0383 §8.3.10).
        self.bus.gpio_read(Port::A, GpioReg::Idr) & PA0 != 0
    }

    fn send_byte(&mut self, byte: u8) -> bool {
        self.bus.usart1_write(byte)
    }

    fn marker(&mut self, high: bool) {
        // BSRR: bit n sets pin n, bit n + 16 resets it, one atomic write
        // (RM0383 §8.4.7).
        let bit = if high { 1 << PA8 } else { 1 << (PA8 + 16) };
        self.bus.gpio_write(Port::A, GpioReg::Bsrr, bit);
    }

    /// PA9 idles high as USART1 TX (nothing is being sent, the caller's
    /// promise): PB10's pull-up is swapped for a pull-down for
    /// [`TX_WIRE_SETTLE_CYCLES`]; PB10 still high means PA9 drives it (the
    /// wire is there), low means nothing does. The pull-up is then put
    /// back, and once PB10 has settled again whatever the swing latched on
    /// CH3 (an unwired PB10 falls and rises) is cleared: it is no start
    /// bit.
    fn tx_wire_present(&mut self) -> Option<bool> {
        let pupdr = self.bus.gpio_read(Port::B, GpioReg::Pupdr);
        let other = pupdr & !(PUPD_MASK << (2 * PB10));
        self.bus.gpio_write(Port::B, GpioReg::Pupdr, other | PUPD_DOWN << (2 * PB10));
        self.bus.spin(TX_WIRE_SETTLE_CYCLES);
        let wired = self.bus.gpio_read(Port::B, GpioReg::Idr) & (1 << PB10) != 0;
        self.bus.gpio_write(Port::B, GpioReg::Pupdr, pupdr);
        self.bus.spin(TX_WIRE_SETTLE_CYCLES);
        self.clear(sr_ccif(3) | sr_ccof(3));
        Some(wired)
    }
}
