//! From the fit to answers: how often a latency is exceeded, what is
//! exceeded once per hour, day or 10⁹ samples, how long to run to see a
//! latency, and the max a run of some length would likely show.
//!
//! Clusters above the threshold `u` arrive as a Poisson process of rate λ
//! per hour (estimated `n_c / T`), each exceeding `x > u` with the cluster
//! maxima's GPD survival `S(x − u)` (Coles 2001, §4.4.1 and §5.3.2). So
//! clusters above `x` come at `Λ(x) = λ·S(x − u)` per hour, and:
//! - P(at least one in an hour) = `1 − exp(−Λ(x))`;
//! - the level exceeded once per period of `h` hours: `Λ(x) = 1/h`, i.e.
//!   `x = u + σ/ξ·((λh)^ξ − 1)` (Coles eq. 4.13, with `mζ_uθ` the expected
//!   clusters above `u` in the period);
//! - a run of `t` hours sees `x` with 95 % probability when `Λ(x)·t =
//!   ln 20`;
//! - the max of a run of `t` hours is below `x` with probability
//!   `exp(−Λ(x)·t)`: its median is the level with `Λ(x)·t = ln 2`.
//!
//! Intervals: the GPD part is the profile likelihood (see
//! [`super::profile`]); the Poisson uncertainty of λ (a 95 % half-width of
//! `1.96/√n_c` on the log scale) is added to each side in quadrature, on
//! the log scale for rates and as the level's own shift for levels (the two
//! likelihoods share no parameter, so their errors add).

use super::gpd::{excess_at, survival, Excesses, Mle};
use super::profile::{level_interval, log_survival_interval, Est};

/// What a prediction is made from.
#[derive(Debug, Clone)]
pub struct Model<'a> {
    /// The threshold, ns.
    pub u: u64,
    /// The cluster maxima's excesses.
    pub e: &'a Excesses,
    /// Their fit.
    pub m: Mle,
    /// Clusters above the threshold.
    pub clusters: u64,
    /// The run's length, hours.
    pub hours: f64,
}

impl Model<'_> {
    /// Clusters above the threshold per hour.
    pub fn lambda(&self) -> f64 {
        self.clusters as f64 / self.hours
    }

    /// The Poisson half-width of ln λ.
    fn dp(&self) -> f64 {
        1.959_964 / (self.clusters.max(1) as f64).sqrt()
    }

    /// `Λ(x)`, clusters above `x` > u per hour, with its interval.
    pub fn rate(&self, x: f64) -> Est {
        let z = x - self.u as f64;
        let ll = self.lambda().ln();
        let s = log_survival_interval(self.e, &self.m, z);
        let dp = self.dp();
        let est = s.estimate + ll;
        let lo = match s.lo {
            Some(l) if est.is_finite() => Some((est - ((est - (l + ll)).powi(2) + dp * dp).sqrt()).exp()),
            _ => None,
        };
        let hi = s.hi.map(|h| {
            let h = h + ll;
            if est.is_finite() {
                (est + ((h - est).powi(2) + dp * dp).sqrt()).exp()
            } else {
                (h + dp).exp()
            }
        });
        Est { estimate: est.exp(), lo: Some(lo.unwrap_or(0.0)), hi }
    }

    /// The latency exceeded by `per_hour` clusters an hour, with its
    /// interval; `None` when that is not above the threshold (the
    /// threshold itself is exceeded less often).
    pub fn level(&self, per_hour: f64) -> Option<Est> {
        let lam = self.lambda();
        let lq = (per_hour / lam).ln();
        if !(lq < 0.0) {
            return None;
        }
        let g = level_interval(self.e, &self.m, lq)?;
        let dp = self.dp();
        let zq = |lq: f64| excess_at(lq.min(-1e-12).exp(), self.m.sigma, self.m.xi);
        // More clusters per hour: a rarer share of them, a higher level.
        let up = zq(lq - dp) - g.estimate;
        let down = g.estimate - zq(lq + dp);
        let u = self.u as f64;
        Some(Est {
            estimate: u + g.estimate,
            lo: g.lo.map(|l| u + (g.estimate - ((g.estimate - l).powi(2) + down * down).sqrt()).max(0.0)),
            hi: g.hi.map(|h| u + g.estimate + ((h - g.estimate).powi(2) + up * up).sqrt()),
        })
    }

    /// The point estimate of `Λ(x)` alone (plots).
    pub fn rate_estimate(&self, x: f64) -> f64 {
        self.lambda() * survival(x - self.u as f64, self.m.sigma, self.m.xi)
    }
}

/// `P = 1 − exp(−Λ)` of an interval of rates.
pub fn probability(rate: &Est) -> Est {
    let p = |r: f64| -(-r).exp_m1();
    Est { estimate: p(rate.estimate), lo: rate.lo.map(p), hi: Some(rate.hi.map_or(1.0, p)) }
}

/// The hours a run needs to see a cluster above `x` with 95 %
/// probability: `ln 20 / Λ(x)`; an end with rate 0 is open.
pub fn hours_to_see(rate: &Est) -> Est {
    let t = |r: f64| if r > 0.0 { Some(20f64.ln() / r) } else { None };
    Est {
        estimate: t(rate.estimate).unwrap_or(f64::INFINITY),
        lo: rate.hi.and_then(t),
        hi: rate.lo.and_then(t),
    }
}
