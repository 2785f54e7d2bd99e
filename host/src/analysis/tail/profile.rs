//! Profile-likelihood 95 % intervals (Coles 2001, §2.6.6 and §4.3.3): a
//! value of a parameter is in the interval when the likelihood maximised
//! over the other parameter with it held fixed is within `χ²₁(0.95)/2 =
//! 1.92` of the maximum. For the shape ξ, the scale σ, and any return
//! level (the likelihood reparametrised by the level, Coles §4.3.3), which
//! also gives the survival at a fixed latency: the same curve read the
//! other way.

use super::gpd::{crossing, excess_at, loglik, maximize, sigma_for, survival, Excesses, Mle, XI_MAX, XI_MIN};

/// Half the 95 % point of χ² with 1 degree of freedom: the drop of the
/// log-likelihood at a 95 % profile interval's ends (Coles 2001, §2.6.6).
pub const HALF_CHI2_95: f64 = 3.841_458_820_694_124 / 2.0;

/// An estimate with its 95 % interval; an end that is `None` is open: the
/// data do not bound it within the searched range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Est {
    /// The maximum-likelihood estimate.
    pub estimate: f64,
    /// The lower end, `None` when unbounded.
    pub lo: Option<f64>,
    /// The upper end, `None` when unbounded.
    pub hi: Option<f64>,
}

impl Est {
    /// Whether `v` lies in the interval (an open end includes everything).
    pub fn contains(&self, v: f64) -> bool {
        self.lo.is_none_or(|l| v >= l) && self.hi.is_none_or(|h| v <= h)
    }
}

/// `max_σ ℓ(σ, ξ)`: the profile of the shape (searched in ln σ within
/// `10^±4` of `sigma_hat`, and above `−ξ·max` where ξ < 0).
pub fn prof_xi(e: &Excesses, xi: f64, sigma_hat: f64) -> f64 {
    let floor = if xi < 0.0 { -xi * e.vmax() * (1.0 + 1e-12) } else { 0.0 };
    let lo = (sigma_hat * 1e-4).max(floor).ln();
    let hi = (sigma_hat * 1e4).max(floor * 10.0).ln();
    maximize(|ls| loglik(e, ls.exp(), xi), lo, hi, 13, 24).map_or(f64::NEG_INFINITY, |(_, v)| v)
}

/// `max_ξ ℓ(σ, ξ)`: the profile of the scale.
pub fn prof_sigma(e: &Excesses, sigma: f64) -> f64 {
    let lo = XI_MIN.max(-sigma / e.vmax().max(f64::MIN_POSITIVE));
    maximize(|xi| loglik(e, sigma, xi), lo, XI_MAX, 16, 24).map_or(f64::NEG_INFINITY, |(_, v)| v)
}

/// `max ℓ` over the fits whose survival at excess `z` is `exp(lq)`: the
/// profile of a return level (Coles 2001, §4.3.3: σ written in terms of
/// the level and ξ, [`sigma_for`], maximised over ξ).
pub fn prof_level(e: &Excesses, z: f64, lq: f64) -> f64 {
    if !(z > 0.0) || !(lq < 0.0) {
        return f64::NEG_INFINITY;
    }
    maximize(|xi| loglik(e, sigma_for(z, lq, xi), xi), XI_MIN, XI_MAX, 16, 24)
        .map_or(f64::NEG_INFINITY, |(_, v)| v)
}

/// The shape with its profile interval.
pub fn xi_interval(e: &Excesses, m: &Mle) -> Est {
    let g = |xi: f64| prof_xi(e, xi, m.sigma) - (m.ll - HALF_CHI2_95);
    Est {
        estimate: m.xi,
        lo: crossing(g, m.xi, -0.05, XI_MIN).filter(|&x| x > XI_MIN),
        hi: crossing(g, m.xi, 0.05, XI_MAX).filter(|&x| x < XI_MAX),
    }
}

/// The scale with its profile interval (searched in ln σ).
pub fn sigma_interval(e: &Excesses, m: &Mle) -> Est {
    let g = |ls: f64| prof_sigma(e, ls.exp()) - (m.ll - HALF_CHI2_95);
    let l0 = m.sigma.ln();
    Est {
        estimate: m.sigma,
        lo: crossing(g, l0, -0.05, l0 - 12.0).filter(|&x| x > l0 - 12.0).map(f64::exp),
        hi: crossing(g, l0, 0.05, l0 + 12.0).filter(|&x| x < l0 + 12.0).map(f64::exp),
    }
}

/// The excess exceeded with survival `exp(lq)` (a return level over the
/// threshold, Coles 2001, eq. 4.12), with its profile interval (searched in
/// ln z). `None` when the fit puts no excess there.
pub fn level_interval(e: &Excesses, m: &Mle, lq: f64) -> Option<Est> {
    let z = excess_at(lq.exp(), m.sigma, m.xi);
    if !(z > 0.0) || !z.is_finite() {
        return None;
    }
    let g = |lz: f64| prof_level(e, lz.exp(), lq) - (m.ll - HALF_CHI2_95);
    let l0 = z.ln();
    Some(Est {
        estimate: z,
        lo: crossing(g, l0, -0.02, l0 - 30.0).filter(|&x| x > l0 - 30.0).map(f64::exp),
        hi: crossing(g, l0, 0.02, l0 + 15.0).filter(|&x| x < l0 + 15.0).map(f64::exp),
    })
}

/// The log survival `ln S(z)` at excess `z` > 0, with its profile interval:
/// the return-level profile read at a fixed level. A fit whose tail ends
/// below `z` (ξ < 0) has survival 0 there: the estimate is `−∞` and the
/// interval is searched up from `exp(−700)`.
pub fn log_survival_interval(e: &Excesses, m: &Mle, z: f64) -> Est {
    let s = survival(z, m.sigma, m.xi);
    let floor = -700.0;
    let l0 = if s > 0.0 { s.ln().max(floor) } else { floor };
    let g = |lq: f64| prof_level(e, z, lq) - (m.ll - HALF_CHI2_95);
    let top = -1e-12;
    let lo = if l0 <= floor { None } else { crossing(g, l0, -0.1, floor).filter(|&x| x > floor) };
    let hi = if g(l0) > 0.0 { crossing(g, l0, 0.1, top).filter(|&x| x < top) } else { Some(l0) };
    Est { estimate: if s > 0.0 { s.ln() } else { f64::NEG_INFINITY }, lo, hi }
}
