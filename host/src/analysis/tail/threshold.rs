//! The threshold: chosen by a fixed, documented rule among candidates, so
//! that the same run always gets the same one.
//!
//! **Candidates.** The thresholds with about 1000, 707, 500, …, 44
//! exceedances (each `1/√2` of the one before; the threshold is the next
//! kept latency below them), never more than a tenth of the run's samples
//! (the threshold is at least the run's p90). Every candidate is
//! declustered with the same run length, the run's ([`run_length`]), so
//! that a cluster is the same thing at every threshold.
//!
//! **Rule.** Each candidate's cluster maxima are fitted. A candidate is
//! *stable* when at least two higher candidates were fitted and its 95 %
//! profile interval of the shape overlaps each of theirs (above a valid
//! threshold the shape is constant, Coles 2001, §4.3.4, so the intervals
//! of valid thresholds share the true shape). The **lowest stable
//! candidate** with at least [`MIN_CLUSTERS`] clusters is the threshold;
//! where its fit fails the goodness-of-fit test (`checks`), the next
//! stable candidate up is tried. None stable: the fit is refused (the
//! tail has not settled); none that fits: refused (poor fit).
//!
//! Why intervals, not point estimates: the highest candidates hold 44 to
//! 88 clusters, and their shape estimates are noisy. A rule that moves up
//! when a point estimate differs (even by a calibrated test) moves on that
//! noise, and a threshold chosen *because* its estimate agrees with a
//! noisy high one inherits that noise: on exactly generalized Pareto data
//! the earlier rule (|ξᵢ − ξⱼ| ≤ z·√(sᵢ² − sⱼ²), Bonferroni at 10 %) left
//! the correct lowest threshold in 8.5–20.5 % of runs and then covered the
//! true shape about half the time. Two 95 % intervals of nested valid
//! thresholds miss each other only when one estimate is off by well over
//! two of its standard errors, so this rule leaves it less often (5.5–8 %
//! of such runs, the goodness of fit's own 1 % included),
//! while a body that bends the low thresholds' shape by more than the
//! intervals' width still moves it up (the coverage table of both rules:
//! `examples/tail_threshold_coverage.rs`; the book's guides/how-long-to-run.md has it). The price is
//! power: a low threshold whose shape is off by less than the intervals'
//! width is kept; the goodness-of-fit test is what still refuses it.

use super::decluster::{decluster_at, decluster_with, Clusters, Exceedance};
use super::gpd::{fit, Excesses, Mle};
use super::profile::{xi_interval, Est};

/// The most exceedances of a candidate threshold.
pub const MAX_EXCEEDANCES: usize = 1000;
/// The fewest cluster maxima a fit is made from.
pub const MIN_CLUSTERS: usize = 40;

/// Candidate exceedance counts, lowest threshold first.
pub const LADDER: [usize; 10] = [1000, 707, 500, 354, 250, 177, 125, 88, 63, 44];

/// One candidate threshold and its fit.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The threshold, ns: exceedances are latencies above it.
    pub u: u64,
    /// Its exceedances, timeouts included.
    pub exceedances: usize,
    /// Of them, timeouts.
    pub censored: usize,
    /// The clusters.
    pub clusters: Clusters,
    /// The cluster maxima's excesses over `u`.
    pub excesses: Excesses,
    /// The fit of those.
    pub mle: Option<Mle>,
    /// Its shape with the profile interval.
    pub xi: Option<Est>,
}

/// The excesses of `maxima` over `u`, a timeout censored at `timeout_ns`.
pub fn excesses(maxima: &[Exceedance], u: u64) -> Excesses {
    let mut e = Excesses::default();
    for m in maxima {
        let v = m.latency_ns.saturating_sub(u) as f64;
        if m.censored {
            e.c.push(v);
        } else {
            e.y.push(v);
        }
    }
    e
}

/// The candidate thresholds over `kept` (the run's worst samples) for a
/// run of `samples`, lowest first, each with its exceedances.
pub fn levels(kept: &[Exceedance], samples: u64) -> Vec<(u64, Vec<Exceedance>)> {
    let mut sorted = kept.to_vec();
    sorted.sort_by_key(|e| std::cmp::Reverse(e.key()));
    let mut levels: Vec<(u64, Vec<Exceedance>)> = Vec::new();
    for &k in &LADDER {
        if k >= sorted.len() || (k as u64).saturating_mul(10) > samples {
            continue;
        }
        let at = sorted[k];
        if at.censored {
            continue;
        }
        let u = at.latency_ns;
        if levels.last().is_some_and(|c| c.0 == u) {
            continue;
        }
        let ex: Vec<Exceedance> = sorted.iter().take_while(|e| e.key() > (false, u)).copied().collect();
        levels.push((u, ex));
    }
    levels
}

/// The candidates over `kept` (the run's worst samples) for a run of
/// `samples`, lowest threshold first, each declustered with the run's
/// [`run_length`] and fitted.
pub fn candidates(kept: &[Exceedance], samples: u64) -> Vec<Candidate> {
    let levels = levels(kept, samples);
    let r = run_length(&levels, samples);
    levels
        .into_iter()
        .map(|(u, ex)| {
            let clusters = decluster_at(&ex, r);
            let excesses = excesses(&clusters.maxima, u);
            let mle = if clusters.maxima.len() >= MIN_CLUSTERS { fit(&excesses) } else { None };
            let xi = mle.map(|m| xi_interval(&excesses, &m));
            Candidate {
                u,
                exceedances: ex.len(),
                censored: ex.iter().filter(|e| e.censored).count(),
                clusters,
                excesses,
                mle,
                xi,
            }
        })
        .collect()
}

/// The run's declustering run length, from the run lengths that each
/// candidate's exceedances give on their own ([`decluster_with`]:
/// Ferro–Segers, used only where the data show clustering): 0 unless more
/// than half the candidates show clustering, else the median of theirs
/// (the lower one). One run length for every threshold: taken threshold
/// by threshold it is noisy (0 at one candidate, 12 or 30 at the next, on
/// the same run), and a cluster that is two at one threshold and one at
/// the next makes the shapes differ for no reason in the data.
pub fn run_length(levels: &[(u64, Vec<Exceedance>)], samples: u64) -> u64 {
    let mut r: Vec<u64> = levels
        .iter()
        .map(|(_, ex)| decluster_with(ex, Some(ex.len() as f64 / samples.max(1) as f64)).run_length)
        .filter(|&r| r > 0)
        .collect();
    if r.len() * 2 <= levels.len() {
        return 0;
    }
    r.sort_unstable();
    r[(r.len() - 1) / 2]
}

/// Whether two 95 % intervals share a value (an open end reaches
/// everything on its side).
fn overlap(a: &Est, b: &Est) -> bool {
    a.lo.is_none_or(|l| b.hi.is_none_or(|h| l <= h)) && b.lo.is_none_or(|l| a.hi.is_none_or(|h| l <= h))
}

/// The lowest stable candidate, or why none is (the tests' view of the
/// rule; `analyse` also needs the goodness of fit, so it takes [`stable`]).
#[cfg(test)]
pub fn choose(c: &[Candidate]) -> Result<usize, String> {
    stable(c).map(|s| s[0])
}

/// Every stable candidate, lowest first (at least one), or why none is.
pub fn stable(c: &[Candidate]) -> Result<Vec<usize>, String> {
    let fitted: Vec<usize> = (0..c.len()).filter(|&i| c[i].xi.is_some()).collect();
    if fitted.is_empty() {
        let best = c.iter().map(|c| c.clusters.maxima.len()).max().unwrap_or(0);
        return Err(format!(
            "too few exceedances: the run is too short for a tail model (its best candidate threshold has \
             {best} clusters of exceedances, a fit needs {MIN_CLUSTERS}): run longer"
        ));
    }
    if fitted.len() < 3 {
        return Err(format!(
            "too few exceedances: the run is too short to check a tail model ({} candidate thresholds \
             could be fitted, the check needs 3): run longer",
            fitted.len()
        ));
    }
    let mut found = Vec::new();
    for (pos, &j) in fitted.iter().enumerate() {
        let higher = &fitted[pos + 1..];
        if higher.len() < 2 {
            break;
        }
        let ej = c[j].xi.expect("fitted");
        let stable = higher.iter().all(|&i| overlap(&ej, &c[i].xi.expect("fitted")));
        if stable {
            found.push(j);
        }
    }
    if !found.is_empty() {
        return Ok(found);
    }
    Err(format!(
        "threshold instability: the tail has not settled in this run (at every candidate threshold the \
         fitted shape's 95 % interval misses a higher one's: {}): run longer",
        fitted
            .iter()
            .map(|&i| format!("{} µs: ξ {:.2}", c[i].u as f64 / 1e3, c[i].xi.expect("fitted").estimate))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}
