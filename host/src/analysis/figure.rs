//! Figures that may be censored, and the percentiles every output gives:
//! the plain values the statistics hand up to import, compare, the report
//! and its limits.
//!
//! - [`Figure`]: one latency figure as it is known: a value, above a bound
//!   (it fell among the timeouts, or among a histogram's overflows), or
//!   none (no samples, or the source does not give it). A run's quantiles,
//!   a `compare` column's cells and a report's table all use it.
//! - [`PERCENTILES`]: p50, p90, p99, p99.9, p99.99, each with its quantile,
//!   its percent, its printed name and its JSON key.
//! - [`rank`]: which sample a quantile is.

/// A latency figure that may be censored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// A latency in ns. Over a run's samples: within the histogram's
    /// 0.1 %, never below the exact value it stands for, never above the
    /// exact maximum.
    Value(u64),
    /// Censored: a latency known only to exceed this many ns (the timeout,
    /// or the end of a histogram's range) and not known more closely.
    /// Printed `>bound`.
    Above(u64),
    /// No figure: no samples, or the source does not give this one
    /// (`compare` prints `n/a`).
    None,
}

impl Figure {
    /// The measured value, if the figure is one.
    pub fn value(self) -> Option<u64> {
        match self {
            Figure::Value(v) => Some(v),
            Figure::Above(_) | Figure::None => None,
        }
    }

    /// Whether the figure is censored (above a bound).
    pub fn is_censored(self) -> bool {
        matches!(self, Figure::Above(_))
    }
}

/// One of the standard percentiles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentile {
    /// As a quantile: `0.999`.
    pub q: f64,
    /// In percent, as a limit names it: `99.9`.
    pub percent: f64,
    /// As printed: `p99.9`.
    pub name: &'static str,
    /// As a JSON key and a field name: `p99_9`.
    pub key: &'static str,
}

/// The standard percentiles, in print order: every output that lists
/// percentiles lists these.
pub const PERCENTILES: [Percentile; 5] = [
    Percentile { q: 0.5, percent: 50.0, name: "p50", key: "p50" },
    Percentile { q: 0.9, percent: 90.0, name: "p90", key: "p90" },
    Percentile { q: 0.99, percent: 99.0, name: "p99", key: "p99" },
    Percentile { q: 0.999, percent: 99.9, name: "p99.9", key: "p99_9" },
    Percentile { q: 0.9999, percent: 99.99, name: "p99.99", key: "p99_99" },
];

/// The rank (1-based) of quantile `q` among `n` samples: `max(1, ⌈q·n⌉)`,
/// with `q` taken to 10⁻⁹ so that `0.999 · 1000` is exactly 999.
pub fn rank(q: f64, n: u64) -> u64 {
    const ONE: u128 = 1_000_000_000;
    let ppb = (q.clamp(0.0, 1.0) * ONE as f64).round() as u128;
    let r = (ppb * u128::from(n)).div_ceil(ONE);
    // r <= n, a u64.
    (r as u64).max(1)
}
