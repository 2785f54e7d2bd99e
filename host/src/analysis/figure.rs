//! Figures that may be censored: the plain values every layer reads, below
//! analysis, import and compare (which all use them and must not use one
//! another for them).
//!
//! - [`Quantile`]: a figure over every sample of a run, timeouts included:
//!   a value, above a bound (it fell among the timeouts), or none (no
//!   samples).
//! - [`Cell`]: a figure as a column of `compare` gives it: a value, above a
//!   bound, or not given by that source.
//! - [`rank`]: which sample a quantile is.

/// A latency figure over every sample, timeouts included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantile {
    /// A measured latency in ns (within the histogram's 0.1 %, never below
    /// the exact value it stands for, never above the exact maximum).
    Value(u64),
    /// The figure falls among the timeouts: a latency known only to exceed
    /// this many ns (the timeout).
    Above(u64),
    /// No samples.
    None,
}

impl Quantile {
    /// The measured value, if the figure is one.
    pub fn value(self) -> Option<u64> {
        match self {
            Quantile::Value(v) => Some(v),
            Quantile::Above(_) | Quantile::None => None,
        }
    }

    /// Whether the figure falls among the timeouts.
    pub fn is_censored(self) -> bool {
        matches!(self, Quantile::Above(_))
    }
}

/// The rank (1-based) of quantile `q` among `n` samples: `max(1, ⌈q·n⌉)`,
/// with `q` taken to 10⁻⁹ so that `0.999 · 1000` is exactly 999.
pub fn rank(q: f64, n: u64) -> u64 {
    const ONE: u128 = 1_000_000_000;
    let ppb = (q.clamp(0.0, 1.0) * ONE as f64).round() as u128;
    let r = (ppb * u128::from(n)).div_ceil(ONE);
    // r <= n, a u64.
    (r as u64).max(1)
}

/// One figure of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// A value in nanoseconds.
    Value(u64),
    /// Censored: the value lies at or beyond this bound (ns) and is not
    /// known more closely, e.g. a percentile that fell among a histogram's
    /// overflows. Printed `>bound`.
    Above(u64),
    /// The source does not give this figure. Printed `n/a`.
    Unknown,
}
