//! The checks a fit must pass before anything is extrapolated from it:
//! goodness of fit (an Anderson–Darling statistic calibrated by a
//! parametric bootstrap) and stationarity (the run's first and second
//! halves have the same cluster rate and the same tail), each a test at
//! the 1 % level; and a second cause (the worst few latencies stand apart
//! from the rest of the tail, [`second_cause`]), a test at 10⁻⁶.

use super::decluster::Exceedance;
use super::gpd::{fit, fit_to, loglik, maximize, survival, Excesses, Mle};
use super::threshold::excesses;

/// The level of each check: a p-value at or below it refuses the fit
/// (the bootstrap's smallest p-value, `1/(B + 1)`, is this level).
pub const LEVEL: f64 = 0.01;
/// Bootstrap samples of the goodness-of-fit test.
pub const BOOTSTRAP: usize = 99;
/// The fewest clusters per half for the halves' shape test.
pub const MIN_PER_HALF: usize = 15;

/// A GPD(σ, ξ) variate from the shared generator, by inversion.
pub trait GpdDraw {
    /// A GPD(σ, ξ) variate.
    fn gpd(&mut self, sigma: f64, xi: f64) -> f64;
}

pub use crate::analysis::numeric::SplitMix;

impl GpdDraw for SplitMix {
    /// Coles 2001, eq. 4.2 solved for the variate.
    fn gpd(&mut self, sigma: f64, xi: f64) -> f64 {
        let u = self.uniform();
        if xi.abs() < 1e-12 {
            -sigma * u.ln()
        } else {
            sigma / xi * (u.powf(-xi) - 1.0)
        }
    }
}

/// The Anderson–Darling statistic `A² = n ∫ (F_n − F)² / (F(1 − F)) dF`
/// (Anderson & Darling 1954) of `e` against GPD(σ, ξ), the integral taken
/// up to `F(c)` when excesses are censored at `c` (every timeout has the
/// same bound, so `F_n` is exact below it: the right-censored form of
/// Pettitt & Stephens, *Technometrics* 18, 1976). Between two data points
/// `F_n = a` and `∫ (a − t)²/(t(1 − t)) dt = a² ln(t₂/t₁) − (1 − a)²
/// ln((1 − t₂)/(1 − t₁)) − (t₂ − t₁)`.
pub fn anderson_darling(e: &Excesses, sigma: f64, xi: f64) -> f64 {
    let n = e.len() as f64;
    let clamp = |t: f64| t.clamp(1e-12, 1.0 - 1e-12);
    let mut t: Vec<f64> = e.y.iter().map(|&y| clamp(1.0 - survival(y, sigma, xi))).collect();
    t.sort_by(f64::total_cmp);
    let end = match e.c.iter().copied().reduce(f64::min) {
        Some(c) => clamp(1.0 - survival(c, sigma, xi)),
        None => 1.0,
    };
    let seg = |a: f64, t1: f64, t2: f64| -> f64 {
        if t2 <= t1 {
            return 0.0;
        }
        let l1 = if a == 0.0 { 0.0 } else { a * a * (t2 / t1).ln() };
        let l2 = if a == 1.0 { 0.0 } else { (1.0 - a) * (1.0 - a) * ((1.0 - t2) / (1.0 - t1)).ln() };
        l1 - l2 - (t2 - t1)
    };
    let mut sum = 0.0;
    let mut prev = 0.0;
    for (i, &ti) in t.iter().enumerate() {
        let ti = ti.min(end);
        sum += seg(i as f64 / n, prev, ti);
        prev = ti;
    }
    sum += seg(t.len() as f64 / n, prev, end);
    n * sum
}

/// The bootstrap p-value of the fit `m` of `e`: the share of data sets
/// drawn from the fitted GPD (censored as `e` is), each fitted again, whose
/// A² is at least the data's, `(1 + #≥) / (B + 1)`, B the data sets
/// that could be fitted (Davison & Hinkley,
/// *Bootstrap Methods*, 1997, eq. 4.11).
pub fn gof_p(e: &Excesses, m: &Mle, seed: u64) -> f64 {
    let a_obs = anderson_darling(e, m.sigma, m.xi);
    let c = e.c.iter().copied().reduce(f64::min);
    let n = e.len();
    let mut rng = SplitMix(seed);
    let (mut at_least, mut used) = (0usize, 0usize);
    for _ in 0..BOOTSTRAP {
        let mut b = Excesses::default();
        for _ in 0..n {
            let v = rng.gpd(m.sigma, m.xi);
            match c {
                Some(c) if v > c => b.c.push(c),
                _ => b.y.push(v),
            }
        }
        // A data set with no fit in the shape's range is left out.
        let Some(f) = fit_to(&b, 29, 24) else { continue };
        used += 1;
        if anderson_darling(&b, f.sigma, f.xi) >= a_obs {
            at_least += 1;
        }
    }
    (1 + at_least) as f64 / (used + 1) as f64
}

/// The exact two-sided binomial test of `k` successes in `n` trials of
/// probability `p`: the total probability of outcomes no likelier than
/// `k` (the "minimum likelihood" p-value, as R's `binom.test`).
pub fn binomial_p(k: u64, n: u64, p: f64) -> f64 {
    if n == 0 || !(0.0..=1.0).contains(&p) {
        return 1.0;
    }
    if p <= 0.0 || p >= 1.0 {
        let expected = if p <= 0.0 { 0 } else { n };
        return if k == expected { 1.0 } else { 0.0 };
    }
    let ln_pmf = |i: u64| {
        let (i, n) = (i as f64, n as f64);
        crate::analysis::numeric::ln_gamma(n + 1.0)
            - crate::analysis::numeric::ln_gamma(i + 1.0)
            - crate::analysis::numeric::ln_gamma(n - i + 1.0)
            + i * p.ln()
            + (n - i) * (1.0 - p).ln()
    };
    let at = ln_pmf(k) + 1e-7;
    let total: f64 = (0..=n).map(ln_pmf).filter(|&l| l <= at).map(f64::exp).sum();
    total.min(1.0)
}

/// What the halves check found.
#[derive(Debug, Clone, PartialEq)]
pub struct Halves {
    /// Clusters in the first half and the second.
    pub clusters: (u64, u64),
    /// Samples in each half.
    pub samples: (u64, u64),
    /// The binomial test of the clusters' split against the samples'.
    pub rate_p: f64,
    /// The likelihood-ratio test of one GPD against one per half
    /// (`χ²₂`, so `p = exp(−LR/2)`); `None` with fewer than
    /// [`MIN_PER_HALF`] clusters in a half.
    pub shape_p: Option<f64>,
}

/// Compare the clusters (by their start) before and after `mid_ns`,
/// `samples` being the run's samples in each half: the same rate of
/// clusters per sample, and the same tail (a likelihood-ratio test, 2
/// degrees of freedom: Coles 2001, §2.6.6, "deviance statistic").
pub fn halves(maxima: &[Exceedance], u: u64, all: &Mle, mid_ns: u64, samples: (u64, u64)) -> Halves {
    let (a, b): (Vec<Exceedance>, Vec<Exceedance>) = maxima.iter().partition(|m| m.at_ns < mid_ns);
    let k = (a.len() as u64, b.len() as u64);
    let share = samples.0 as f64 / (samples.0 + samples.1).max(1) as f64;
    let rate_p = binomial_p(k.0, k.0 + k.1, share);
    let shape_p = if a.len() >= MIN_PER_HALF && b.len() >= MIN_PER_HALF {
        let (ea, eb) = (excesses(&a, u), excesses(&b, u));
        match (fit(&ea), fit(&eb)) {
            (Some(fa), Some(fb)) => {
                // The pooled fit's likelihood, split over the halves.
                let pooled = loglik(&ea, all.sigma, all.xi) + loglik(&eb, all.sigma, all.xi);
                let lr = (2.0 * (fa.ll + fb.ll - pooled)).max(0.0);
                Some((-lr / 2.0).exp())
            }
            _ => None,
        }
    } else {
        None
    };
    Halves { clusters: k, samples, rate_p, shape_p }
}

/// The level of the second-cause test, for each of its sizes ([`TOP`]):
/// a second cause stands apart by far more than this, and a level this
/// strict keeps a single heavy tail from being taken for two.
pub const SECOND_CAUSE_LEVEL: f64 = 1e-6;
/// How many of the worst cluster maxima the second-cause test sets apart
/// (at most a quarter of them).
pub const TOP: [usize; 15] = [2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64];

/// A second cause of latency above the tail: the `k` worst cluster maxima
/// stand apart from the rest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SecondCause {
    /// How many of the worst maxima stand apart.
    pub k: usize,
    /// The excess below them (the `k + 1`-th largest).
    pub below: f64,
    /// The smallest of them, an excess.
    pub from: f64,
    /// The test's p-value, its natural logarithm (it can be below any
    /// `f64`).
    pub ln_p: f64,
}

/// `ln P(Γ(k, 1) > t)` for a whole `k`: `−t + ln Σ_{j<k} t^j/j!`, the
/// sum taken in logarithms so that a spike far out still orders.
fn ln_gamma_upper(k: usize, t: f64) -> f64 {
    if !(t > 0.0) {
        return 0.0;
    }
    if !t.is_finite() {
        return f64::NEG_INFINITY;
    }
    let terms: Vec<f64> =
        (0..k).map(|j| j as f64 * t.ln() - crate::analysis::numeric::ln_gamma(j as f64 + 1.0)).collect();
    let top = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (-t + top + terms.iter().map(|l| (l - top).exp()).sum::<f64>().ln()).min(0.0)
}

/// Whether the worst few cluster maxima stand apart from the rest of the
/// tail: a rarer second cause (a stall, an interrupt) on top of the one
/// the tail is made of. One generalized Pareto fit of both makes the
/// first cause's tail look heavy and puts its levels where neither cause
/// is (and the shapes of the thresholds disagree, as the spikes are a
/// larger share higher up).
///
/// For each `k` of [`TOP`], the tail is fitted with the `k` worst
/// right-censored at the `k + 1`-th, `c`: the likelihood of all of them
/// under one GPD, with nothing taken from where the worst lie beyond `c`.
/// Under one GPD each of the `k` has a conditional survival `S(y)/S(c)`,
/// uniform, so `T = −Σ ln(S(y)/S(c))` is Γ(k, 1) (the excesses over an
/// order statistic of a GPD sample are GPD: Reiss & Thomas, *Statistical
/// Analysis of Extreme Values*, 2007, §2.1). The shape is only estimated,
/// and a shape estimated too light makes a single tail's top look apart:
/// so `T` is taken under a heavier one, three standard errors above the
/// estimate (`(1 + ξ)/√n`, Coles 2001, §4.3.1) and at least 0 (no upper
/// end), the scale refitted. A `k` whose `P(Γ(k, 1) > T)` is below
/// [`SECOND_CAUSE_LEVEL`] names a second cause; of those, the one with
/// the widest gap below its worst (the largest ratio of the `k`-th
/// largest to the `k + 1`-th) says how many they are. Not tried on
/// censored maxima (a timeout is already a cause apart).
pub fn second_cause(e: &Excesses) -> Option<SecondCause> {
    if !e.c.is_empty() {
        return None;
    }
    let mut y = e.y.clone();
    y.sort_by(|a, b| b.total_cmp(a));
    let mut best: Option<(SecondCause, f64)> = None;
    for k in TOP.into_iter().filter(|&k| 4 * k <= y.len()) {
        let c = y[k];
        let rest = Excesses { y: y[k..].to_vec(), c: vec![c; k] };
        let Some(m) = fit(&rest) else { continue };
        let xi = (m.xi + 3.0 * (1.0 + m.xi) / ((y.len() - k) as f64).sqrt()).max(0.0);
        let Some((ls, _)) =
            maximize(|ls| loglik(&rest, ls.exp(), xi), (m.sigma * 1e-3).ln(), (m.sigma * 1e3).ln(), 25, 40)
        else {
            continue;
        };
        let sigma = ls.exp();
        let s_c = survival(c, sigma, xi);
        if !(s_c > 0.0) {
            continue;
        }
        let t: f64 = y[..k]
            .iter()
            .map(|&v| {
                let s = survival(v, sigma, xi) / s_c;
                if s > 0.0 {
                    -s.ln()
                } else {
                    f64::INFINITY
                }
            })
            .sum();
        let lp = ln_gamma_upper(k, t);
        let gap = y[k - 1] / c;
        if lp < SECOND_CAUSE_LEVEL.ln() && best.is_none_or(|(_, g)| gap > g) {
            best = Some((SecondCause { k, below: c, from: y[k - 1], ln_p: lp }, gap));
        }
    }
    best.map(|b| b.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomial_and_gamma_agree_with_known_values() {
        // ln Γ(10) = ln 362880.
        assert!((crate::analysis::numeric::ln_gamma(10.0) - 362_880f64.ln()).abs() < 1e-10);
        assert!((crate::analysis::numeric::ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-10);
        // R: binom.test(2, 20, 0.5)$p.value = 0.0004024506
        assert!((binomial_p(2, 20, 0.5) - 0.000_402_450_6).abs() < 1e-9);
        // R: binom.test(7, 10, 0.5)$p.value = 0.34375
        assert!((binomial_p(7, 10, 0.5) - 0.343_75).abs() < 1e-9);
    }

    #[test]
    fn anderson_darling_is_small_for_a_fitting_sample_and_large_for_a_wrong_one() {
        let mut r = SplitMix(3);
        let e = Excesses { y: (0..300).map(|_| r.gpd(10.0, 0.1)).collect(), c: vec![] };
        let m = fit(&e).expect("fits");
        assert!(anderson_darling(&e, m.sigma, m.xi) < 2.0);
        // Uniform data are no GPD with ξ = 0.5.
        let u = Excesses { y: (1..=300).map(f64::from).collect(), c: vec![] };
        assert!(anderson_darling(&u, 20.0, 0.5) > 10.0);
        assert!(gof_p(&e, &m, 1) > 0.05);
    }
}
