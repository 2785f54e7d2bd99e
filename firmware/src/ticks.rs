//! Tick extension: a 16- or 32-bit hardware counter widened to the engine's
//! 64-bit tick by counting overflows, free of the wrap-around race.
//!
//! # The race, and the rule that avoids it
//!
//! A counter wraps; its overflow flag (STM32: `UIF`) is set at that instant,
//! but the overflow interrupt that counts the wrap runs some time later. A
//! value read in between (the live counter, or a capture latched just before
//! or just after the wrap) is ambiguous unless the reader knows whether the
//! wrap it may straddle has been counted yet. The extender resolves it in two
//! steps:
//!
//! 1. [`TickExtender::now`]: read the **counter first, then the overflow
//!    flag** (pending = set and not yet acknowledged by
//!    [`TickExtender::on_overflow`]). If the flag is pending and the counter is
//!    in the lower half of its range, the counter was read after the wrap, so
//!    one more period is added; if it is in the upper half, the wrap happened
//!    between the two reads and is not added.
//! 2. [`TickExtender::capture`]: a captured (or compare) register value is
//!    placed relative to a `now` read *after* it latched: it is the latest tick
//!    at or before `now` whose low bits equal the register.
//!
//! ```text
//!  counter   ... 0xFFFE 0xFFFF 0x0000 0x0001 ...          (16-bit)
//!  UIF                          ^set ........ ^cleared by the overflow ISR
//!  capture A latched at 0xFFFE ─┘   capture B latched at 0x0001
//!  both read later with now(): A = now - 3, B = now - 0, whatever UIF says
//! ```
//!
//! Constraints a board must meet (with a 16-bit counter at 1 MHz the period is
//! 65.5 ms, so half a period is 32.7 ms; at 32 bits and 100 MHz it is 21 s):
//!
//! - the overflow interrupt acknowledges each wrap within **half a counter
//!   period** of it (so at most one wrap is ever pending);
//! - every capture is converted within **one counter period** of its latch,
//!   with a `now` read after it latched;
//! - [`TickExtender::on_overflow`] and the clearing of the flag happen in the
//!   same critical section, and `now()` is never interleaved with them (in
//!   RTIC: the extender is a shared resource locked by every reader).
//!
//! A 64-bit counter (the host's virtual probe, `CLOCK_MONOTONIC` in ns) needs
//! none of this: [`TimerBits::B64`] passes values through unchanged.

/// Width of the hardware counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TimerBits {
    /// A 16-bit counter (most STM32 timers).
    B16,
    /// A 32-bit counter (STM32 TIM2/TIM5).
    B32,
    /// A 64-bit clock: no extension needed (virtual probe).
    B64,
}

impl TimerBits {
    /// The width in bits, as announced in `ProbeInfo::timer_bits`.
    pub const fn bits(self) -> u8 {
        match self {
            TimerBits::B16 => 16,
            TimerBits::B32 => 32,
            TimerBits::B64 => 64,
        }
    }

    /// Mask of the counter's bits.
    pub const fn mask(self) -> u64 {
        match self {
            TimerBits::B16 => 0xffff,
            TimerBits::B32 => 0xffff_ffff,
            TimerBits::B64 => u64::MAX,
        }
    }
}

/// Widens a hardware counter to 64 bits by counting its overflows.
#[derive(Debug, Clone)]
pub struct TickExtender {
    bits: TimerBits,
    /// Wraps acknowledged so far.
    overflows: u64,
}

impl TickExtender {
    /// A fresh extender: tick 0 is the counter's 0 before its first wrap.
    pub const fn new(bits: TimerBits) -> Self {
        Self { bits, overflows: 0 }
    }

    /// The counter width this extender was made for.
    pub const fn timer_bits(&self) -> TimerBits {
        self.bits
    }

    /// Wraps acknowledged so far.
    pub const fn overflows(&self) -> u64 {
        self.overflows
    }

    /// Acknowledge one wrap. Call it from the overflow interrupt, in the same
    /// critical section that clears the overflow flag. A no-op for 64 bits.
    pub fn on_overflow(&mut self) {
        if self.bits != TimerBits::B64 {
            self.overflows += 1;
        }
    }

    /// The extended tick of a live counter read. Read the counter **first**,
    /// then the overflow flag; `overflow_pending` is whether that flag is set
    /// (a wrap happened that [`Self::on_overflow`] has not counted yet).
    /// Bits of `counter` above the timer's width are ignored.
    pub fn now(&self, counter: u64, overflow_pending: bool) -> u64 {
        // One arm per width, so each shift is by a constant: a 64-bit shift
        // by a variable is a dozen instructions on a 32-bit core, and this
        // runs on every counter read.
        match self.bits {
            TimerBits::B64 => counter,
            TimerBits::B32 => self.extend::<32>(counter, overflow_pending),
            TimerBits::B16 => self.extend::<16>(counter, overflow_pending),
        }
    }

    #[inline(always)]
    fn extend<const BITS: u32>(&self, counter: u64, overflow_pending: bool) -> u64 {
        let raw = counter & ((1u64 << BITS) - 1);
        let half = 1u64 << (BITS - 1);
        // Lower half with the flag pending: read after the wrap.
        let wraps = self.overflows + u64::from(overflow_pending && raw < half);
        (wraps << BITS) | raw
    }

    /// The extended tick of a capture (or compare) register value `raw`,
    /// latched at most one counter period before `now` (which must have been
    /// read after the latch, with [`Self::now`]).
    pub fn capture(&self, raw: u64, now: u64) -> u64 {
        let mask = self.bits.mask();
        let back = now.wrapping_sub(raw) & mask;
        now.wrapping_sub(back)
    }

    /// The value to program into a compare register so that it matches at
    /// the extended tick `at`, if `at` is reachable: strictly after `now` and
    /// less than one counter period ahead. `None` when `at` is not after
    /// `now` (the moment has passed: act in software) or too far ahead (check
    /// again after the next overflow; a wrap happens at least once a period).
    pub fn compare_value(&self, at: u64, now: u64) -> Option<u64> {
        let ahead = at.checked_sub(now).filter(|&d| d > 0)?;
        match self.bits {
            TimerBits::B64 => Some(at),
            bits if ahead <= bits.mask() => Some(at & bits.mask()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model of a counter and its overflow interrupt: the truth is `t`, the
    /// board sees `t & mask` and a flag that stays pending until the
    /// (delayed) overflow interrupt acknowledges it.
    struct Model {
        ext: TickExtender,
        mask: u64,
        period: u64,
    }

    impl Model {
        fn new(bits: TimerBits) -> Self {
            Self { ext: TickExtender::new(bits), mask: bits.mask(), period: bits.mask() + 1 }
        }

        /// Extender state as it is at time `t`, when wraps up to
        /// `acked_until` have been acknowledged.
        fn at(&mut self, acked_until: u64) {
            self.ext.overflows = acked_until / self.period;
        }
    }

    /// Every counter read within ±3000 ticks of a wrap, with the overflow
    /// interrupt anywhere from "already ran" to "half a period late".
    #[test]
    fn now_is_exact_around_16_bit_wraps() {
        let mut m = Model::new(TimerBits::B16);
        let half = m.period / 2;
        for wrap in [m.period, 2 * m.period, 77 * m.period] {
            for t in wrap - 3000..wrap + 3000 {
                // Acknowledgement delays after the wrap: 0 (at once) up to
                // just under half a period.
                for delay in [0, 1, 2, 50, 3000, half - 1] {
                    let acked = t >= wrap + delay;
                    m.at(if acked { t } else { wrap - 1 });
                    let pending = t >= wrap && !acked;
                    assert_eq!(m.ext.now(t & m.mask, pending), t, "t={t} delay={delay}");
                }
            }
        }
    }

    /// The wrap falls between reading the counter and reading the flag: the
    /// counter is at the top, the flag already says pending.
    #[test]
    fn wrap_between_counter_and_flag_reads() {
        let mut m = Model::new(TimerBits::B16);
        let wrap = 5 * m.period;
        m.at(wrap - 1);
        for before in 1..=20 {
            let t = wrap - before;
            assert_eq!(m.ext.now(t & m.mask, true), t);
        }
    }

    /// Captures latched just before or just after a wrap, converted any time
    /// later within a period, whether or not the overflow has been counted.
    #[test]
    fn capture_is_exact_around_16_bit_wraps() {
        let mut m = Model::new(TimerBits::B16);
        let wrap = 9 * m.period;
        for c in wrap - 600..wrap + 600 {
            for lag in [0, 1, 7, 599, 1200, 30_000, m.period - 1] {
                let h = c + lag;
                for delay in [0, 3, 800, m.period / 2 - 1] {
                    // Wrap acknowledged if the interrupt ran by `h`.
                    let acked = h >= wrap + delay;
                    m.at(if acked { h } else { wrap - 1 });
                    let pending = h >= wrap && !acked;
                    let now = m.ext.now(h & m.mask, pending);
                    assert_eq!(now, h);
                    assert_eq!(m.ext.capture(c & m.mask, now), c, "c={c} lag={lag} delay={delay}");
                }
            }
        }
    }

    #[test]
    fn now_and_capture_are_exact_around_32_bit_wraps() {
        let mut m = Model::new(TimerBits::B32);
        let wrap = 3 * m.period;
        for t in (wrap - 5000..wrap + 5000).step_by(7) {
            for delay in [0, 100, 1 << 30] {
                let acked = t >= wrap + delay;
                m.at(if acked { t } else { wrap - 1 });
                let pending = t >= wrap && !acked;
                let now = m.ext.now(t & m.mask, pending);
                assert_eq!(now, t);
                for back in [0, 1, 4999, 1 << 31] {
                    let c = t - back;
                    assert_eq!(m.ext.capture(c & m.mask, now), c);
                }
            }
        }
    }

    #[test]
    fn sixty_four_bits_pass_through() {
        let mut e = TickExtender::new(TimerBits::B64);
        e.on_overflow();
        assert_eq!(e.overflows(), 0);
        assert_eq!(e.now(u64::MAX - 1, true), u64::MAX - 1);
        assert_eq!(e.capture(123, 456), 123);
        assert_eq!(e.compare_value(1 << 40, 5), Some(1 << 40));
        assert_eq!(e.compare_value(5, 5), None);
    }

    #[test]
    fn compare_value_only_within_one_period() {
        let mut e = TickExtender::new(TimerBits::B16);
        e.on_overflow();
        let now = 0x1_fff0;
        assert_eq!(e.compare_value(now + 0x20, now), Some(0x10));
        assert_eq!(e.compare_value(now + 0xffff, now), Some((now + 0xffff) & 0xffff));
        assert_eq!(e.compare_value(now + 0x1_0000, now), None);
        assert_eq!(e.compare_value(now, now), None);
        assert_eq!(e.compare_value(now - 1, now), None);
    }
}
