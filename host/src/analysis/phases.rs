//! Figures per phase of a load schedule (`--load-schedule idle=60s,load=60s`):
//! every sample counted in the phase its stimulus fell in, by the probe's
//! clock from the run's start, with the same histogram, exact minimum,
//! maximum and mean, and the same censoring rule as the whole run's
//! figures ([`super::Analysis::quantile`]): a phase's p99 is as exact as the
//! run's, not a per-second approximation.
//!
//! A phase's bounds are whole seconds of the host's clock from the run's
//! start; the probe's clock starts within the handshake of it (well under
//! a second), so a sample within that margin of a boundary may be counted
//! in the neighbouring phase. A schedule has at most [`MAX_PHASES`] phases,
//! each with its own histogram (about 200 KiB).

use hdrhistogram::Histogram;

use super::figure::{rank, Figure};

pub use crate::model::MAX_PHASES;

/// The counts and histogram of one population of samples, with timeouts
/// ranked above every measured latency.
#[derive(Debug, Clone)]
pub struct Tally {
    hist: Histogram<u64>,
    /// Samples with a measured latency.
    pub responses: u64,
    /// Timeout samples (latencies above the timeout).
    pub timeouts: u64,
    /// Smallest measured latency (`u64::MAX` without responses).
    pub min_ns: u64,
    /// Largest measured latency.
    pub max_ns: u64,
    /// Sum of the measured latencies.
    pub sum_ns: u128,
}

/// The histogram every tally uses: up to `high_ns`, 3 significant digits.
pub(crate) fn histogram(high_ns: u64) -> Histogram<u64> {
    Histogram::new_with_max(high_ns.max(2), 3).unwrap_or_else(|_| {
        // new_with_max only fails for high < 2, excluded above; keep a
        // histogram that auto-resizes rather than panic.
        let mut h = Histogram::new(3).expect("3 significant digits is valid");
        h.auto(true);
        h
    })
}

/// The latency at quantile `q` of `responses` measured latencies in `hist`
/// (exact `min`/`max`) and `timeouts` samples above `timeout_ns`: the
/// sample of rank `max(1, ⌈q·N⌉)`, [`Figure::Above`] the timeout when that
/// rank falls among the timeouts. One rule for the run and each phase.
pub(crate) fn censored_quantile(
    hist: &Histogram<u64>,
    responses: u64,
    timeouts: u64,
    min_ns: u64,
    max_ns: u64,
    timeout_ns: u64,
    q: f64,
) -> Figure {
    let n = responses + timeouts;
    if n == 0 {
        return Figure::None;
    }
    let r = rank(q, n);
    if r > responses {
        return Figure::Above(timeout_ns);
    }
    // The r-th smallest response: a quantile in the middle of its rank,
    // so float rounding cannot move it to a neighbour.
    let mid = (r as f64 - 0.5) / responses as f64;
    Figure::Value(hist.value_at_quantile(mid).clamp(min_ns, max_ns))
}

impl Tally {
    /// Empty, for latencies up to `high_ns`.
    pub fn new(high_ns: u64) -> Self {
        Self { hist: histogram(high_ns), responses: 0, timeouts: 0, min_ns: u64::MAX, max_ns: 0, sum_ns: 0 }
    }

    /// Samples counted.
    pub fn samples(&self) -> u64 {
        self.responses + self.timeouts
    }

    /// Count a measured latency.
    pub fn measured(&mut self, ns: u64) {
        self.responses += 1;
        self.sum_ns += u128::from(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        self.hist.saturating_record(ns);
    }

    /// Count a timeout sample.
    pub fn timeout(&mut self) {
        self.timeouts += 1;
    }

    /// The latency at quantile `q`, timeouts above `timeout_ns`.
    pub fn quantile(&self, q: f64, timeout_ns: u64) -> Figure {
        censored_quantile(&self.hist, self.responses, self.timeouts, self.min_ns, self.max_ns, timeout_ns, q)
    }

    /// The largest latency: above the timeout when any sample timed out.
    pub fn max(&self, timeout_ns: u64) -> Figure {
        match (self.timeouts, self.responses) {
            (t, _) if t > 0 => Figure::Above(timeout_ns),
            (_, r) if r > 0 => Figure::Value(self.max_ns),
            _ => Figure::None,
        }
    }

    /// The smallest latency: measured, or above the timeout when all timed out.
    pub fn min(&self, timeout_ns: u64) -> Figure {
        match (self.responses, self.timeouts) {
            (r, _) if r > 0 => Figure::Value(self.min_ns),
            (_, t) if t > 0 => Figure::Above(timeout_ns),
            _ => Figure::None,
        }
    }

    /// Mean of the measured latencies, rounded down.
    pub fn mean_ns(&self) -> Option<u64> {
        (self.responses > 0).then(|| (self.sum_ns / u128::from(self.responses)) as u64)
    }

    /// The largest measured latency, if any.
    pub fn max_measured_ns(&self) -> Option<u64> {
        (self.responses > 0).then_some(self.max_ns)
    }
}

/// One phase's span, ns of the probe's clock from the run's start, and its
/// figures.
#[derive(Debug, Clone)]
pub struct PhaseTally {
    /// Its start.
    pub start_ns: u64,
    /// Its end (exclusive); `None` for the last.
    pub end_ns: Option<u64>,
    /// Its samples.
    pub tally: Tally,
}

/// The phases of a run, in order, each counting the samples of its span.
#[derive(Debug, Clone, Default)]
pub struct PhaseTallies {
    phases: Vec<PhaseTally>,
}

impl PhaseTallies {
    /// Phases from `(start_s, end_s)` spans, in order, for latencies up to
    /// `high_ns`; only the first [`MAX_PHASES`] are kept.
    pub fn new(spans: &[(u64, Option<u64>)], high_ns: u64) -> Self {
        let phases = spans
            .iter()
            .take(MAX_PHASES)
            .map(|&(s, e)| PhaseTally {
                start_ns: s.saturating_mul(1_000_000_000),
                end_ns: e.map(|e| e.saturating_mul(1_000_000_000)),
                tally: Tally::new(high_ns),
            })
            .collect();
        Self { phases }
    }

    /// The phase a stimulus `at_ns` from the start fell in, if any.
    fn at(&mut self, at_ns: u64) -> Option<&mut Tally> {
        // Phases are in order and contiguous: the last one starting at or
        // before the stimulus, if the stimulus is before its end.
        let i = self.phases.partition_point(|p| p.start_ns <= at_ns).checked_sub(1)?;
        let p = &mut self.phases[i];
        p.end_ns.is_none_or(|e| at_ns < e).then_some(&mut p.tally)
    }

    /// Count a measured latency of the stimulus at `at_ns`.
    pub fn measured(&mut self, at_ns: u64, ns: u64) {
        if let Some(t) = self.at(at_ns) {
            t.measured(ns);
        }
    }

    /// Count a timeout of the stimulus at `at_ns`.
    pub fn timeout(&mut self, at_ns: u64) {
        if let Some(t) = self.at(at_ns) {
            t.timeout();
        }
    }

    /// The phases, in order.
    pub fn phases(&self) -> &[PhaseTally] {
        &self.phases
    }

    /// Whether there are none (no schedule).
    pub fn is_empty(&self) -> bool {
        self.phases.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_land_in_the_phase_of_their_stimulus() {
        let mut p = PhaseTallies::new(&[(0, Some(2)), (2, Some(5)), (5, None)], 1_000_000_000);
        p.measured(0, 10);
        p.measured(1_999_999_999, 20);
        p.measured(2_000_000_000, 30);
        p.timeout(4_999_999_999);
        p.measured(5_000_000_000, 40);
        p.measured(99_000_000_000, 50);
        let t: Vec<_> = p.phases().iter().map(|p| (p.tally.responses, p.tally.timeouts)).collect();
        assert_eq!(t, vec![(2, 0), (1, 1), (2, 0)]);
        assert_eq!(p.phases()[0].tally.max_ns, 20);
        assert_eq!(p.phases()[2].tally.min_ns, 40);
    }

    #[test]
    fn a_phase_percentile_among_its_timeouts_is_censored() {
        let mut t = Tally::new(1_000_000);
        for ns in 1..=98 {
            t.measured(ns * 1000);
        }
        t.timeout();
        t.timeout();
        // 100 samples: p99 is rank 99, a timeout; p90 rank 90 is 90 µs.
        assert_eq!(t.quantile(0.99, 500_000), Figure::Above(500_000));
        // Within the histogram's 0.1 %, never below the sample.
        let p90 = t.quantile(0.9, 500_000).value().unwrap();
        assert!((90_000..=90_090).contains(&p90), "{p90}");
        assert_eq!(t.max(500_000), Figure::Above(500_000));
        assert_eq!(t.max_measured_ns(), Some(98_000));
    }

    #[test]
    fn a_schedule_beyond_the_cap_keeps_the_first_phases() {
        let spans: Vec<_> = (0..100).map(|i| (i, Some(i + 1))).collect();
        assert_eq!(PhaseTallies::new(&spans, 1000).phases().len(), MAX_PHASES);
    }
}
