//! The block length of one run's block bootstrap, chosen from the run's own
//! serial correlation: D. N. Politis & H. White, "Automatic block-length
//! selection for the dependent bootstrap", Econometric Reviews 23 (2004),
//! with the correction of A. Patton, D. N. Politis & H. White, Econometric
//! Reviews 28 (2009).
//!
//! ```text
//!  samples ─▶ ln(ns) ─▶ segments of 4096 ─▶ lag sums (0..=256) per kept segment
//!                                              └─▶ autocovariance R(k) ─▶ flat-top window ─▶ b
//! ```
//!
//! - **The series.** Each sample enters as the logarithm of its latency in
//!   ns, so one huge spike does not make the whole autocovariance; a
//!   censored sample (a timeout) enters as the largest value seen so far
//!   (it is above every measured one).
//! - **Bounded work.** The autocovariance is summed within segments of
//!   [`SEG`] consecutive samples, for lags up to [`MAX_LAG`]; at most
//!   [`MAX_SEGS`] segments are kept, spread evenly over the run (past that,
//!   every other kept segment is dropped and only every other later one is
//!   taken). A 24-hour run at 1 kHz costs about a second; short runs use
//!   every sample.
//! - **The rule** (PW 2004 §3.2, the 2009 correction's constants): `m̂` is
//!   the smallest lag after which `K_N = max(5, ⌈√log₁₀ n⌉)` autocorrelations
//!   in a row are all within `±2 √(log₁₀ n / n)`; `M = 2 m̂`; with the
//!   flat-top window `λ(t) = 1` for `|t| ≤ ½`, `2(1 − |t|)` to 1, 0 beyond,
//!   `Ĝ = Σ λ(k/M) |k| R(k)` and `ĝ = Σ λ(k/M) R(k)` over `|k| ≤ M`. The
//!   non-overlapping block bootstrap's variance constant is 3/2 of the
//!   moving-block one's `4/3 ĝ²` (S. N. Lahiri, "Theoretical comparisons of
//!   block bootstrap methods", Ann. Statist. 27, 1999), `D = 2 ĝ²`, so
//!   `b = (2 Ĝ² / D)^{1/3} n^{1/3} = (Ĝ/ĝ)^{2/3} n^{1/3}`, at most
//!   `min(3√n, n/3)` (PW's cap).
//! - A dependence longer than [`MAX_LAG`] samples is cut there: `M` is at
//!   most [`MAX_LAG`], which holds an AR(1) up to φ ≈ 0.97.

/// Lags the autocovariance is summed for.
pub const MAX_LAG: usize = 256;
/// Samples per segment.
pub const SEG: usize = 4096;
/// Segments kept at most.
pub const MAX_SEGS: usize = 512;

/// Lag sums of one segment: with them and the run's mean the segment's
/// centred lag products follow exactly.
#[derive(Debug, Clone)]
struct SegSums {
    index: u64,
    len: usize,
    /// `Σ x_t x_{t+k}`.
    prod: Vec<f64>,
    /// `Σ x_t` over `t < len − k`.
    head: Vec<f64>,
    /// `Σ x_{t+k}` over `t < len − k`.
    tail: Vec<f64>,
}

impl SegSums {
    fn of(index: u64, x: &[f64]) -> SegSums {
        let lags = MAX_LAG.min(x.len().saturating_sub(1)) + 1;
        let mut prefix = Vec::with_capacity(x.len() + 1);
        let mut acc = 0.0;
        prefix.push(0.0);
        for &v in x {
            acc += v;
            prefix.push(acc);
        }
        let n = x.len();
        let mut prod = vec![0.0; lags];
        for (k, p) in prod.iter_mut().enumerate() {
            *p = x[..n - k].iter().zip(&x[k..]).map(|(a, b)| a * b).sum();
        }
        let head = (0..lags).map(|k| prefix[n - k]).collect();
        let tail = (0..lags).map(|k| prefix[n] - prefix[k]).collect();
        SegSums { index, len: n, prod, head, tail }
    }
}

/// The autocovariance of a sample stream, in bounded memory and time.
#[derive(Debug, Clone)]
pub struct Autocov {
    current: Vec<f64>,
    seg_index: u64,
    stride: u64,
    kept: Vec<SegSums>,
    max_seen: f64,
    samples: u64,
    max_segs: usize,
}

impl Default for Autocov {
    fn default() -> Self {
        Autocov::keeping(MAX_SEGS)
    }
}

impl Autocov {
    /// One that keeps at most `max_segs` segments.
    fn keeping(max_segs: usize) -> Autocov {
        Autocov {
            current: Vec::with_capacity(SEG),
            seg_index: 0,
            stride: 1,
            kept: Vec::new(),
            max_seen: 0.0,
            samples: 0,
            max_segs,
        }
    }
}

impl Autocov {
    /// Add one sample: its latency in ns, or `None` for a censored one.
    pub fn push(&mut self, latency_ns: Option<u64>) {
        let x = match latency_ns {
            Some(v) => {
                let x = (v as f64 + 1.0).ln();
                self.max_seen = self.max_seen.max(x);
                x
            }
            None => self.max_seen,
        };
        self.samples += 1;
        if self.seg_index % self.stride == 0 {
            self.current.push(x);
        }
        if self.samples % SEG as u64 == 0 {
            self.close_segment();
        }
    }

    fn close_segment(&mut self) {
        if self.current.len() >= 2 {
            self.kept.push(SegSums::of(self.seg_index, &self.current));
            if self.kept.len() > self.max_segs {
                self.stride *= 2;
                let stride = self.stride;
                self.kept.retain(|s| s.index % stride == 0);
            }
        }
        self.current.clear();
        self.seg_index += 1;
    }

    /// Samples seen.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The autocovariance `R(0..=lags)` over the kept segments (divided by
    /// the samples, not the pairs: PW's biased estimate), `None` with fewer
    /// than two samples or no spread.
    fn autocovariance(&self) -> Option<Vec<f64>> {
        let mut segs: Vec<&SegSums> = self.kept.iter().collect();
        let last = (self.current.len() >= 2).then(|| SegSums::of(self.seg_index, &self.current));
        segs.extend(last.as_ref());
        let n: usize = segs.iter().map(|s| s.len).sum();
        if n < 2 {
            return None;
        }
        let mean = segs.iter().map(|s| s.head[0]).sum::<f64>() / n as f64;
        let lags = segs.iter().map(|s| s.prod.len()).max().unwrap_or(1);
        let r = (0..lags)
            .map(|k| {
                segs.iter()
                    .filter(|s| k < s.prod.len())
                    .map(|s| s.prod[k] - mean * (s.head[k] + s.tail[k]) + (s.len - k) as f64 * mean * mean)
                    .sum::<f64>()
                    / n as f64
            })
            .collect::<Vec<f64>>();
        // No spread beyond the sums' rounding: nothing to say.
        (r[0] > 1e-12 * (mean * mean + 1.0)).then_some(r)
    }

    /// The non-overlapping block bootstrap's block length for this stream
    /// (see the module docs), samples, at least 1; 1 when the stream has
    /// no spread or too few samples to say.
    pub fn block_length(&self) -> u64 {
        let n = self.samples;
        let Some(r) = self.autocovariance() else { return 1 };
        politis_white(&r, n)
    }
}

/// The flat-top lag window.
fn flat_top(t: f64) -> f64 {
    let t = t.abs();
    if t <= 0.5 {
        1.0
    } else if t <= 1.0 {
        2.0 * (1.0 - t)
    } else {
        0.0
    }
}

/// Politis and White's block length from the autocovariance `r` (lag 0
/// first) of a stream of `n` samples.
fn politis_white(r: &[f64], n: u64) -> u64 {
    if n < 4 || r[0] <= 0.0 || !r[0].is_finite() {
        return 1;
    }
    let nf = n as f64;
    let log_n = nf.log10().max(1e-9);
    let kn = 5usize.max(log_n.sqrt().ceil() as usize);
    let bound = 2.0 * (log_n / nf).sqrt();
    let lags = r.len() - 1;
    let insignificant = |k: usize| (r[k] / r[0]).abs() < bound;
    // The smallest m after which K_N lags in a row are insignificant; past
    // the lags kept, the longest kept.
    let m_hat = (0..=lags.saturating_sub(kn))
        .find(|&m| (m + 1..=m + kn).all(insignificant))
        .unwrap_or_else(|| (1..=lags).rev().find(|&k| !insignificant(k)).unwrap_or(0));
    let big_m = (2 * m_hat).min(lags);
    if big_m == 0 {
        return 1;
    }
    let (mut g, mut g_abs) = (r[0], 0.0);
    for (k, &rk) in r.iter().enumerate().take(big_m + 1).skip(1) {
        let w = flat_top(k as f64 / big_m as f64);
        g += 2.0 * w * rk;
        g_abs += 2.0 * w * k as f64 * rk;
    }
    if g <= 0.0 {
        return 1;
    }
    let b = (g_abs / g).abs().powf(2.0 / 3.0) * nf.cbrt();
    let cap = (3.0 * nf.sqrt()).min(nf / 3.0);
    (b.min(cap).ceil() as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::Rng;

    fn ar1(phi: f64, n: usize, seed: u64) -> Autocov {
        let mut rng = Rng::new(seed, 3);
        let mut a = Autocov::default();
        let mut z = rng.normal();
        let e = (1.0 - phi * phi).sqrt();
        for _ in 0..n {
            z = phi * z + e * rng.normal();
            a.push(Some((20_000.0 + 10_000.0 * (0.4 * z).exp()) as u64));
        }
        a
    }

    /// For an AR(1), `G/g = 2φ/(1 − φ²)`, so the rule's target is
    /// `(2φ/(1 − φ²))^{2/3} n^{1/3}`: the estimate lands within a factor
    /// of 2 of it (the window's estimate is noisy), and independent
    /// samples get short blocks.
    #[test]
    fn ar1_block_lengths_follow_the_theory() {
        let n = 100_000;
        for phi in [0.5, 0.9, 0.95] {
            let b = ar1(phi, n, 7).block_length() as f64;
            let truth = (2.0 * phi / (1.0 - phi * phi)).powf(2.0 / 3.0) * (n as f64).cbrt();
            assert!(b > truth / 2.0 && b < truth * 2.0, "φ {phi}: {b} against {truth:.0}");
        }
        let b = ar1(0.0, n, 7).block_length();
        assert!(b <= 10, "independent samples: {b}");
    }

    /// The lag sums summed by segment give the autocovariance a direct
    /// sum over the whole series gives, within the segments' cut pairs.
    #[test]
    fn segment_sums_give_the_direct_autocovariance() {
        let a = ar1(0.8, 3 * SEG + 100, 9);
        let r = a.autocovariance().unwrap();
        let mut rng = Rng::new(9, 3);
        let mut z = rng.normal();
        let e = (1.0f64 - 0.64).sqrt();
        let x: Vec<f64> = (0..3 * SEG + 100)
            .map(|_| {
                z = 0.8 * z + e * rng.normal();
                ((20_000.0 + 10_000.0 * (0.4 * z).exp()) as u64 as f64 + 1.0).ln()
            })
            .collect();
        let m = x.iter().sum::<f64>() / x.len() as f64;
        for k in [0usize, 1, 5, 40] {
            let direct = x.iter().zip(&x[k..]).map(|(a, b)| (a - m) * (b - m)).sum::<f64>() / x.len() as f64;
            assert!((r[k] - direct).abs() < 0.03 * r[0], "lag {k}: {} against {direct}", r[k]);
        }
    }

    /// A long stream keeps at most its cap of segments, spread evenly
    /// over it (every `stride`-th), the run's end among them.
    #[test]
    fn long_streams_stay_bounded_and_spread() {
        let cap = 8;
        let mut a = Autocov::keeping(cap);
        for i in 0..(5 * cap * SEG) as u64 {
            a.push(Some(10_000 + (i * 7919) % 1000));
        }
        assert!(a.kept.len() <= cap, "{}", a.kept.len());
        assert!(a.kept.len() > cap / 2, "{}", a.kept.len());
        assert!(a.kept.iter().all(|s| s.index % a.stride == 0));
        let last = a.kept.last().unwrap().index;
        assert!(
            last as usize >= 4 * cap - 1 - a.stride as usize,
            "segments from the run's end are kept: {last}"
        );
    }

    #[test]
    fn degenerate_streams_get_length_one() {
        let mut a = Autocov::default();
        for _ in 0..1000 {
            a.push(Some(5000));
        }
        assert_eq!(a.block_length(), 1);
        assert_eq!(Autocov::default().block_length(), 1);
        let mut c = Autocov::default();
        c.push(None);
        c.push(None);
        assert_eq!(c.block_length(), 1);
    }
}
