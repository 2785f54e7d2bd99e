//! The generalized Pareto distribution of the excesses over a threshold:
//! its censored log-likelihood, the maximum-likelihood fit, and the two
//! small one-dimensional searches (maximum, crossing) every fit and
//! profile here is made of. No optimizer crate: every search is over one
//! parameter, where a grid and a golden section are robust against the
//! likelihood's hard edges (the support `1 + ξy/σ > 0`) and cheap.

/// The shape range searched: below −1 the likelihood is unbounded (Coles
/// 2001, §4.3.2: the MLE does not exist for ξ < −1); above, no latency
/// tail is that heavy and the search would only find noise.
pub const XI_MIN: f64 = -1.0;
/// The largest shape searched.
pub const XI_MAX: f64 = 4.0;

/// Excesses over a threshold `u` (`x − u`, ns as f64): measured ones, and
/// right-censored ones (a timeout: the excess is known only to exceed its
/// value).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Excesses {
    /// Measured excesses, each > 0.
    pub y: Vec<f64>,
    /// Censored excesses: the latency exceeded `u + c`.
    pub c: Vec<f64>,
}

impl Excesses {
    /// Measured and censored together.
    pub fn len(&self) -> usize {
        self.y.len() + self.c.len()
    }

    /// No excess at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The largest value, measured or censored.
    pub fn vmax(&self) -> f64 {
        self.y.iter().chain(&self.c).fold(0.0, |m, &v| m.max(v))
    }
}

/// The GPD survival function `S(z) = (1 + ξz/σ)^(−1/ξ)` (Coles 2001,
/// eq. 4.2; the exponential `exp(−z/σ)` at ξ = 0), 0 beyond the upper
/// end point of a ξ < 0 tail.
pub fn survival(z: f64, sigma: f64, xi: f64) -> f64 {
    if z <= 0.0 {
        return 1.0;
    }
    if xi.abs() < 1e-9 {
        return (-z / sigma).exp();
    }
    let t = 1.0 + xi * z / sigma;
    if t <= 0.0 {
        0.0
    } else {
        (-(t.ln()) / xi).exp()
    }
}

/// The GPD's quantile of survival `q`: the excess `z` with `S(z) = q`,
/// `σ/ξ · (q^(−ξ) − 1)` (Coles 2001, eq. 4.12 with `ζ_u·m = 1/q`).
pub fn excess_at(q: f64, sigma: f64, xi: f64) -> f64 {
    let lq = q.ln();
    if xi.abs() < 1e-9 {
        -sigma * lq
    } else {
        sigma / xi * (-xi * lq).exp_m1()
    }
}

/// The scale `σ` that puts survival `exp(lq)` at excess `z` for shape ξ:
/// Coles 2001, §4.3.3's reparametrisation of the likelihood by a return
/// level, `σ = ξz / (q^(−ξ) − 1)` (`z / −ln q` at ξ = 0). `lq < 0`.
pub fn sigma_for(z: f64, lq: f64, xi: f64) -> f64 {
    if xi.abs() < 1e-9 {
        z / -lq
    } else {
        xi * z / (-xi * lq).exp_m1()
    }
}

/// The log-likelihood of `(σ, ξ)` for excesses `e`: Coles 2001, eq. 4.10
/// for the measured ones, `−k ln σ − (1 + 1/ξ) Σ ln(1 + ξy/σ)` (eq. 4.11,
/// `−k ln σ − Σy/σ`, at ξ = 0), plus the right-censored ones' log
/// survival `Σ ln S(c) = −(1/ξ) Σ ln(1 + ξc/σ)`: the standard likelihood
/// of right-censored data, each censored point contributing `P(X > c)`
/// (Klein & Moeschberger, *Survival Analysis*, 2003, §3.5, eq. 3.5.1).
/// `−∞` outside the support.
pub fn loglik(e: &Excesses, sigma: f64, xi: f64) -> f64 {
    if !(sigma > 0.0) || !sigma.is_finite() || !xi.is_finite() {
        return f64::NEG_INFINITY;
    }
    let k = e.y.len() as f64;
    if xi.abs() < 1e-9 {
        let s: f64 = e.y.iter().chain(&e.c).sum();
        return -k * sigma.ln() - s / sigma;
    }
    let a = xi / sigma;
    let mut sy = 0.0;
    for &y in &e.y {
        let t = a * y;
        if t <= -1.0 {
            return f64::NEG_INFINITY;
        }
        sy += t.ln_1p();
    }
    let mut sc = 0.0;
    for &c in &e.c {
        let t = a * c;
        if t <= -1.0 {
            return f64::NEG_INFINITY;
        }
        sc += t.ln_1p();
    }
    -k * sigma.ln() - (1.0 + 1.0 / xi) * sy - sc / xi
}

/// A maximum-likelihood fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mle {
    /// Scale, in the excesses' unit.
    pub sigma: f64,
    /// Shape.
    pub xi: f64,
    /// The log-likelihood there.
    pub ll: f64,
}

/// `Σ ln(1 + τv) / τ` over `vs`, with its limit `Σ v` as τ → 0.
fn log_sum_over_tau(vs: &[f64], tau: f64) -> f64 {
    vs.iter()
        .map(|&v| {
            let t = tau * v;
            if t.abs() < 1e-8 {
                v * (1.0 - t / 2.0)
            } else {
                t.ln_1p() / tau
            }
        })
        .sum()
}

/// The maximum-likelihood fit of `e`, or `None` when there is nothing to
/// fit (no measured excess) or no maximum with ξ in `[XI_MIN, XI_MAX]`.
///
/// The two-parameter maximisation is reduced to one: with `τ = ξ/σ`, the
/// likelihood is maximised over ξ for fixed τ in closed form, `ξ(τ) = (A +
/// B)/k` with `A = Σ ln(1 + τy)`, `B = Σ ln(1 + τc)` (setting
/// `∂ℓ/∂ξ = 0`), leaving the profile `ℓ*(τ) = −k ln(ξ(τ)/τ) − A − k`
/// (Grimshaw, *Computing maximum likelihood estimates for the generalized
/// Pareto distribution*, Technometrics 35, 1993, extended here by the
/// censored term `B`). That is searched on a grid in `ln(1 + τ·max)` and
/// refined by a golden section.
pub fn fit(e: &Excesses) -> Option<Mle> {
    fit_to(e, 57, 40)
}

/// [`fit`] with a coarser search (`n` grid points, `iters` golden steps):
/// the goodness-of-fit bootstrap's refits, where 1e-4 in ξ is plenty.
pub fn fit_to(e: &Excesses, n: usize, iters: usize) -> Option<Mle> {
    let k = e.y.len() as f64;
    if e.y.is_empty() {
        return None;
    }
    let vmax = e.vmax();
    if !(vmax > 0.0) {
        return None;
    }
    let at = |g: f64| -> f64 {
        // r = τ·vmax ∈ (−1, ∞), g = ln(1 + r).
        let tau = g.exp_m1() / vmax;
        let m = log_sum_over_tau(&e.y, tau) + log_sum_over_tau(&e.c, tau);
        let sigma = m / k;
        let xi = tau * sigma;
        if !(sigma > 0.0) || !(XI_MIN..=XI_MAX).contains(&xi) {
            return f64::NEG_INFINITY;
        }
        let a: f64 = e.y.iter().map(|&y| (tau * y).ln_1p()).sum();
        -k * sigma.ln() - a - k
    };
    let (g, _) = maximize(at, -14.0, 14.0, n, iters)?;
    let tau = g.exp_m1() / vmax;
    let sigma = (log_sum_over_tau(&e.y, tau) + log_sum_over_tau(&e.c, tau)) / k;
    let xi = tau * sigma;
    // ℓ* is ℓ itself at (σ(τ), ξ(τ)); the direct form is the one profiles use.
    let ll = loglik(e, sigma, xi);
    ll.is_finite().then_some(Mle { sigma, xi, ll })
}

/// The maximum of `f` over `[lo, hi]`: the best of `n` evenly spaced
/// points, then a golden-section search (Kiefer 1953; Press et al.,
/// *Numerical Recipes*, 3rd ed., §10.2) of `iters` steps between its two
/// neighbours. `f` may be `−∞` (outside a support); `None` when it is
/// nowhere finite.
pub fn maximize(f: impl Fn(f64) -> f64, lo: f64, hi: f64, n: usize, iters: usize) -> Option<(f64, f64)> {
    let n = n.max(3);
    let step = (hi - lo) / (n - 1) as f64;
    let mut best = (lo, f64::NEG_INFINITY);
    let mut best_i = 0;
    for i in 0..n {
        let x = lo + step * i as f64;
        let v = f(x);
        if v > best.1 {
            best = (x, v);
            best_i = i;
        }
    }
    if !best.1.is_finite() {
        return None;
    }
    let (mut a, mut b) =
        (lo + step * best_i.saturating_sub(1) as f64, lo + step * (best_i + 1).min(n - 1) as f64);
    const R: f64 = 0.618_033_988_749_894_9;
    let mut x1 = b - R * (b - a);
    let mut x2 = a + R * (b - a);
    let (mut f1, mut f2) = (f(x1), f(x2));
    for _ in 0..iters {
        if f1 >= f2 {
            b = x2;
            x2 = x1;
            f2 = f1;
            x1 = b - R * (b - a);
            f1 = f(x1);
        } else {
            a = x1;
            x1 = x2;
            f1 = f2;
            x2 = a + R * (b - a);
            f2 = f(x2);
        }
    }
    for (x, v) in [(x1, f1), (x2, f2)] {
        if v > best.1 {
            best = (x, v);
        }
    }
    Some(best)
}

/// Where `g` (positive at `x0`) first falls to 0 or below going from `x0`
/// by `step` (its sign is the direction), steps doubling, never past
/// `bound`: then a bracketed regula falsi (the Illinois variant, Dowell &
/// Jarratt 1971) to a relative width of about 1e-5. `None` when `g` stays
/// positive up to `bound`: the interval is open on that side.
pub fn crossing(g: impl Fn(f64) -> f64, x0: f64, step: f64, bound: f64) -> Option<f64> {
    let dir = step.signum();
    let past = |x: f64| (x - bound) * dir >= 0.0;
    let (mut a, mut ga) = (x0, g(x0));
    if !(ga > 0.0) {
        return Some(x0);
    }
    let mut h = step;
    let (mut b, mut gb);
    loop {
        b = x0 + h;
        if past(b) {
            b = bound;
        }
        gb = g(b);
        if !(gb > 0.0) {
            break;
        }
        if b == bound {
            return None;
        }
        a = b;
        ga = gb;
        h *= 2.0;
    }
    if gb == f64::NEG_INFINITY || gb.is_nan() {
        // Outside the support: bisect until finite, then go on.
        for _ in 0..60 {
            let m = 0.5 * (a + b);
            let gm = g(m);
            if gm > 0.0 {
                a = m;
                ga = gm;
            } else {
                b = m;
                gb = gm;
                if gm.is_finite() {
                    break;
                }
            }
        }
        if !gb.is_finite() {
            return Some(0.5 * (a + b));
        }
    }
    let mut side = 0i8;
    for _ in 0..60 {
        let m = (a * gb - b * ga) / (gb - ga);
        let m = if m.is_finite() && (m - a) * (m - b) < 0.0 { m } else { 0.5 * (a + b) };
        let gm = g(m);
        if gm > 0.0 {
            a = m;
            ga = gm;
            if side == 1 {
                gb /= 2.0;
            }
            side = 1;
        } else {
            b = m;
            gb = gm;
            if side == -1 {
                ga /= 2.0;
            }
            side = -1;
        }
        if (b - a).abs() <= 1e-5 * (a.abs() + b.abs()).max(1e-6) || gm == 0.0 {
            break;
        }
    }
    Some(if ga.abs() < gb.abs() { a } else { b })
}
