//! Ticks to nanoseconds: [`TickConv`], exact integer arithmetic, fast for
//! the common timer rates.

use latprobe_protocol::ticks_to_ns;

/// Exact ticks→ns conversion, fast for the common cases: a timer rate that
/// divides 1 GHz is a multiplication, and a 32-bit latency fits u64 even
/// times 10⁹, so only 64-bit tick spans need u128 arithmetic. Always equal
/// to [`ticks_to_ns`].
#[derive(Debug, Clone, Copy)]
pub struct TickConv {
    hz: u32,
    mul: u64,
}

impl TickConv {
    /// For a timer of `hz`.
    pub fn new(hz: u32) -> Self {
        let mul = if hz != 0 && 1_000_000_000 % hz == 0 { 1_000_000_000 / u64::from(hz) } else { 0 };
        Self { hz, mul }
    }

    /// The timer rate.
    pub fn hz(&self) -> u32 {
        self.hz
    }

    /// A 32-bit tick count (a latency) in ns.
    #[inline]
    pub fn ns32(&self, ticks: u32) -> u64 {
        if self.mul != 0 {
            u64::from(ticks) * self.mul
        } else if self.hz == 0 {
            0
        } else {
            // u32::MAX * 10⁹ < u64::MAX: no overflow.
            let hz = u64::from(self.hz);
            (u64::from(ticks) * 1_000_000_000 + hz / 2) / hz
        }
    }

    /// A 64-bit tick span in ns.
    pub fn ns(&self, ticks: u64) -> u64 {
        if self.mul != 0 {
            if let Some(ns) = ticks.checked_mul(self.mul) {
                return ns;
            }
        }
        ticks_to_ns(ticks, self.hz)
    }
}
