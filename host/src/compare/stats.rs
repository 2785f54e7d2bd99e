//! The small numerical kit of the grouped comparison: a seeded generator,
//! Gamma and Beta draws, the normal and Student t distributions, and Holm's
//! step-down. No crate: each piece is a few lines with its source named.

use crate::analysis::numeric::{erfc, SplitMix};

/// The shared SplitMix64 generator (`analysis::numeric`), with a stream
/// per group and run, so a comparison gives the same intervals on every
/// machine and every run.
#[derive(Debug, Clone)]
pub struct Rng(SplitMix);

impl Rng {
    /// The generator for `seed`, mixed with `stream` (which group, which
    /// run), so streams of one seed are unrelated.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut r = Rng(SplitMix(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03)));
        r.next_u64();
        r
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in (0, 1), never 0.
    pub fn uniform(&mut self) -> f64 {
        self.0.uniform()
    }

    /// Uniform in `0..n` (`n > 0`), by Lemire's multiply-shift (its bias
    /// is below 2⁻³² for the block counts used here).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Standard normal, Box–Muller.
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// Gamma(shape, 1): Marsaglia & Tsang, "A simple method for generating
    /// gamma variables", ACM TOMS 26 (2000); shape < 1 by their boost
    /// `G(a) = G(a+1)·U^(1/a)`.
    pub fn gamma(&mut self, shape: f64) -> f64 {
        if shape < 1.0 {
            let u = self.uniform();
            return self.gamma(shape + 1.0) * u.powf(1.0 / shape);
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = (1.0 + c * x).powi(3);
            if v <= 0.0 {
                continue;
            }
            let u = self.uniform();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }

    /// Beta(a, b) as `Ga/(Ga+Gb)`.
    pub fn beta(&mut self, a: f64, b: f64) -> f64 {
        let x = self.gamma(a);
        let y = self.gamma(b);
        x / (x + y)
    }
}

/// The regularized incomplete beta function I_x(a, b), by its continued
/// fraction (modified Lentz), Numerical Recipes, 3rd ed., §6.4.
fn inc_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = (crate::analysis::numeric::ln_gamma(a + b)
        - crate::analysis::numeric::ln_gamma(a)
        - crate::analysis::numeric::ln_gamma(b)
        + a * x.ln()
        + b * (1.0 - x).ln())
    .exp();
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - inc_beta(1.0 - x, b, a);
    }
    let tiny = 1e-300;
    let (mut c, mut d) = (1.0, 1.0 - (a + b) * x / (a + 1.0));
    if d.abs() < tiny {
        d = tiny;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = f64::from(m);
        for num in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + num * d;
            if d.abs() < tiny {
                d = tiny;
            }
            c = 1.0 + num / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    front * h / a
}

/// P(|T| > t) for Student's t with `df` degrees of freedom (`df` infinite:
/// the normal), from `I_{df/(df+t²)}(df/2, 1/2)` (Abramowitz & Stegun
/// 26.7.1 and 26.5.27).
pub fn two_sided_p(t: f64, df: f64) -> f64 {
    let t = t.abs();
    if !df.is_finite() || df > 1e7 {
        return erfc(t / std::f64::consts::SQRT_2);
    }
    inc_beta(df / (df + t * t), df / 2.0, 0.5)
}

/// The `t` with `P(|T| > t) = p` (0 < p < 1), by bisection on
/// [`two_sided_p`]: the half-width of a `1 − p` interval in standard
/// errors.
pub fn t_crit(p: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while two_sided_p(hi, df) > p && hi < 1e9 {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if two_sided_p(mid, df) > p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 * hi.max(1.0) {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// Holm's step-down (S. Holm, "A simple sequentially rejective multiple
/// test procedure", Scand. J. Statistics 6, 1979) at family-wise level
/// `alpha` over `p`: for each test, whether it is rejected and the level
/// its step used (`alpha/(m−k)` at the k-th smallest p, counting from 0;
/// every test after the first one kept gets the level of that step, so
/// its interval at that level holds 0 as its verdict says).
pub fn holm(p: &[f64], alpha: f64) -> Vec<(bool, f64)> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut out = vec![(false, alpha); m];
    let mut stopped: Option<f64> = None;
    for (k, &i) in order.iter().enumerate() {
        let level = alpha / (m - k) as f64;
        match stopped {
            Some(l) => out[i] = (false, l),
            None if p[i] <= level => out[i] = (true, level),
            None => {
                stopped = Some(level);
                out[i] = (false, level);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_critical_values_match_the_tables() {
        // Two-sided 95 % and 99 % points (any table of Student's t).
        for (p, df, t) in [
            (0.05, 2.0, 4.303),
            (0.05, 4.0, 2.776),
            (0.05, 10.0, 2.228),
            (0.01, 10.0, 3.169),
            (0.05, f64::INFINITY, 1.960),
            (0.01, f64::INFINITY, 2.576),
            (0.05 / 7.0, f64::INFINITY, 2.690),
        ] {
            let got = t_crit(p, df);
            assert!((got - t).abs() < 2e-3, "t({p}, {df}) = {got}, want {t}");
        }
    }

    #[test]
    fn holm_rejects_step_by_step_and_stops_at_the_first_kept() {
        let r = holm(&[0.001, 0.04, 0.012, 0.3], 0.05);
        // Sorted: 0.001 ≤ 0.0125 yes; 0.012 ≤ 0.0167 yes; 0.04 ≤ 0.025 no: stop.
        assert_eq!(r[0], (true, 0.0125));
        assert!(r[2].0 && (r[2].1 - 0.05 / 3.0).abs() < 1e-12);
        assert_eq!(r[1], (false, 0.025));
        assert_eq!(r[3], (false, 0.025));
    }

    #[test]
    fn beta_draws_have_the_beta_mean_and_the_generator_is_seeded() {
        let mut r = Rng::new(7, 1);
        let n = 20_000;
        let (a, b) = (3.0, 9.0);
        let mean: f64 = (0..n).map(|_| r.beta(a, b)).sum::<f64>() / f64::from(n);
        assert!((mean - a / (a + b)).abs() < 0.005, "{mean}");
        assert_eq!(Rng::new(7, 1).next_u64(), Rng::new(7, 1).next_u64());
        assert_ne!(Rng::new(7, 1).next_u64(), Rng::new(7, 2).next_u64());
    }
}
