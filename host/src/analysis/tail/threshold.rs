//! The threshold: chosen by a fixed, documented rule among candidates, so
//! that the same run always gets the same one.
//!
//! **Candidates.** The thresholds with about 1000, 707, 500, …, 44
//! exceedances (each `1/√2` of the one before; the threshold is the next
//! kept latency below them), never more than a tenth of the run's samples
//! (the threshold is at least the run's p90).
//!
//! **Rule.** Each candidate's exceedances are declustered and its cluster
//! maxima fitted. A candidate is *stable* when at least two higher
//! candidates were fitted and each of their shapes agrees with its own:
//! `|ξ_i − ξ_j| ≤ z·√(s_i² − s_j²)`, `s` the standard error read off the
//! 95 % profile interval's width and `z` the two-sided 10 % point of a
//! normal distribution, Bonferroni-corrected over the comparisons (10 %,
//! not 5 %: a threshold slightly too low biases every figure, so the
//! rule leans to refusing it) (above
//! a valid threshold the shape is constant, Coles 2001, §4.3.4; the
//! difference of two nested estimates has variance `s_i² − s_j²`, the
//! comparison Northrop & Coleman, *Extremes* 17, 2014, make with a score
//! test). The **lowest stable candidate** with at least [`MIN_CLUSTERS`]
//! clusters is the threshold: the most data at which the tail is already
//! the same as higher up; where its fit fails the goodness-of-fit test
//! (`checks`), the next stable candidate up is tried. None stable: the
//! fit is refused (threshold instability); none that fits: refused (poor
//! fit).

use super::decluster::{decluster_with, Clusters, Exceedance};
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

/// The candidates over `kept` (the run's worst samples) for a run of
/// `samples`, lowest threshold first, each fitted.
pub fn candidates(kept: &[Exceedance], samples: u64) -> Vec<Candidate> {
    let mut sorted = kept.to_vec();
    sorted.sort_by_key(|e| std::cmp::Reverse(e.key()));
    let mut out: Vec<Candidate> = Vec::new();
    for &k in &LADDER {
        if k >= sorted.len() || (k as u64).saturating_mul(10) > samples {
            continue;
        }
        let at = sorted[k];
        if at.censored {
            continue;
        }
        let u = at.latency_ns;
        if out.last().is_some_and(|c| c.u == u) {
            continue;
        }
        let ex: Vec<Exceedance> = sorted.iter().take_while(|e| e.key() > (false, u)).copied().collect();
        let clusters = decluster_with(&ex, Some(ex.len() as f64 / samples.max(1) as f64));
        let excesses = excesses(&clusters.maxima, u);
        let mle = if clusters.maxima.len() >= MIN_CLUSTERS { fit(&excesses) } else { None };
        let xi = mle.map(|m| xi_interval(&excesses, &m));
        out.push(Candidate {
            u,
            exceedances: ex.len(),
            censored: ex.iter().filter(|e| e.censored).count(),
            clusters,
            excesses,
            mle,
            xi,
        });
    }
    out
}

/// A standard error read off a 95 % interval (either half-width when one
/// end is open; infinite when both are).
fn se(e: &Est) -> f64 {
    match (e.lo, e.hi) {
        (Some(l), Some(h)) => (h - l) / (2.0 * 1.959_964),
        (Some(l), None) => (e.estimate - l) / 1.959_964,
        (None, Some(h)) => (h - e.estimate) / 1.959_964,
        (None, None) => f64::INFINITY,
    }
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
        let sj = se(&ej);
        let z = normal_quantile(1.0 - 0.05 / higher.len() as f64);
        let stable = higher.iter().all(|&i| {
            let ei = c[i].xi.expect("fitted");
            let si = se(&ei);
            let sd = (si * si - sj * sj).max(1e-12).sqrt();
            !sd.is_finite() || (ei.estimate - ej.estimate).abs() <= z * sd
        });
        if stable {
            found.push(j);
        }
    }
    if !found.is_empty() {
        return Ok(found);
    }
    Err(format!(
        "threshold instability: the tail has not settled in this run (its fitted shape changes with the \
         threshold at every candidate, beyond its uncertainty: {}): run longer",
        fitted
            .iter()
            .map(|&i| format!("{} µs: ξ {:.2}", c[i].u as f64 / 1e3, c[i].xi.expect("fitted").estimate))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// The standard normal CDF, from `erfc` (Abramowitz & Stegun 7.1.26 is
/// too coarse in the tail; this is Numerical Recipes 3rd ed. §6.2.2's
/// Chebyshev `erfc`, fractional error below 1.2e-7).
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * crate::analysis::numeric::erfc(-x / std::f64::consts::SQRT_2)
}

/// The standard normal quantile, by bisection of [`normal_cdf`].
pub fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    for _ in 0..100 {
        let m = 0.5 * (lo + hi);
        if normal_cdf(m) < p {
            lo = m;
        } else {
            hi = m;
        }
    }
    0.5 * (lo + hi)
}
