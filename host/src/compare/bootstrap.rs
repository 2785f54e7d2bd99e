//! The standard error of one run's figures, by resampling the run itself:
//! what a group of one run has instead of a spread over runs.
//!
//! ```text
//!  raw file ─replay─▶ Row ─▶ BlockSink ─▶ Blocks (sparse histogram per block)
//!                                           └─▶ non-overlapping block bootstrap ─▶ SE
//!  JSON report / imported histogram ─▶ Hist ─▶ i.i.d. bootstrap (order statistics) ─▶ SE
//! ```
//!
//! - **Blocks** (a raw file's sample sequence): the non-overlapping block
//!   bootstrap (E. Carlstein, "The use of subseries values for estimating
//!   the variance of a general statistic from a stationary sequence", Ann.
//!   Statist. 14, 1986; S. N. Lahiri, *Resampling Methods for Dependent
//!   Data*, 2003, ch. 2): whole blocks of consecutive samples are drawn with
//!   replacement, so spikes that cluster (a stall holding up the answers
//!   queued behind it) stay together. **Block length**: chosen from the
//!   run's own autocorrelation by Politis and White's rule (2004, with the
//!   2009 correction; [`super::blocklen`]), which grows with the serial
//!   dependence as `n^(1/3)` (the order that minimises the error of a
//!   block-bootstrap variance: P. Hall, J. L. Horowitz & B.-Y. Jing, "On
//!   blocking rules for the bootstrap with dependent data", Biometrika 82,
//!   1995); at least [`MIN_BLOCK`] samples (longer than the probe's 9
//!   stimuli in flight), and long enough that there are at most
//!   [`MAX_BLOCKS`] blocks; the length is the first multiple of the
//!   builder's 32·2ᵏ that meets all three. The last rule bounds memory and
//!   time: a 24 h run at 1 kHz (86.4 million samples) becomes 660 blocks
//!   of 131 072 samples, each kept as a sparse histogram on a logarithmic
//!   grid of 64 bins per octave (under 1.6 % wide), never as samples: at
//!   most 2 × 1024 blocks of at most 2304 bins (6 bytes each), under
//!   30 MB, and a resample costs one pass over the blocks' bins. The
//!   sequence is streamed once from the raw file's replay: blocks start
//!   at [`MIN_BLOCK`] samples and neighbours merge in pairs whenever there
//!   are twice [`MAX_BLOCKS`].
//! - **Hist** (a JSON report's 1 µs histogram, an imported cyclictest or
//!   rtla histogram): no order is kept, so the samples are taken as
//!   **independent** and resampled one by one. The bootstrap `q`-quantile
//!   of `n` draws is the empirical quantile function at the `k`-th order
//!   statistic of `n` uniforms, `k = ⌈q·n⌉`, which is Beta(k, n+1−k): one
//!   draw per replicate, whatever `n`. The mean's bootstrap standard error
//!   is `sd/√n` exactly (Efron & Tibshirani, *An Introduction to the
//!   Bootstrap*, 1993, §5.2), so it needs no draws.
//!
//! Within a bin a quantile is placed by linear interpolation (the bin's
//! samples taken as spread evenly), so that an error smaller than a bin
//! still shows. A replicate that lands among the censored samples
//! (timeouts, overflows) has no value and counts as infinite: the
//! standard error is half the spread of the middle 68.3 % of the
//! replicates (± one standard deviation of a normal), so a few such
//! replicates do not matter, and a figure whose replicates reach the
//! censored samples more often gets no standard error, said plainly,
//! rather than a bound taken as a value.

use std::sync::{Arc, Mutex};

use super::stats::Rng;
use crate::analysis::figure::rank;

/// Bootstrap replicates per run, unless asked otherwise (`--resamples`).
pub const REPLICATES: usize = 1000;
/// The shortest block, samples.
pub const MIN_BLOCK: u64 = 32;
/// The most blocks a run is cut into.
pub const MAX_BLOCKS: usize = 1024;

/// Sub-bins per octave of the block histograms' grid.
const SUB: u64 = 64;

/// The grid bin of `v` ns: exact below 128 ns, then 64 bins per octave.
fn grid(v: u64) -> u16 {
    if v < 2 * SUB {
        return v as u16;
    }
    let e = 63 - u64::from(v.leading_zeros());
    let shift = e - 6;
    (SUB * shift + (v >> shift)) as u16
}

/// The range `[lo, hi)` ns of grid bin `i`.
fn grid_range(i: u16) -> (f64, f64) {
    let i = u64::from(i);
    if i < 2 * SUB {
        return (i as f64, (i + 1) as f64);
    }
    let shift = i / SUB - 1;
    let m = i - SUB * shift;
    ((m << shift) as f64, ((m + 1) << shift) as f64)
}

/// Grid bins up to about 2⁴¹ ns (36 minutes), for the tests.
#[cfg(test)]
const GRID_BINS: usize = (SUB * 36) as usize;

/// A figure one run's resampling can give a standard error for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    /// The mean of the measured samples.
    Mean,
    /// A quantile, `0 < q < 1`, over every sample (censored ones ranked
    /// above all).
    Quantile(f64),
}

/// One block of consecutive samples.
#[derive(Debug, Clone, Default)]
struct Block {
    /// Sparse `(grid bin, samples)`, ascending.
    bins: Vec<(u16, u32)>,
    sum_ns: f64,
    measured: u64,
    censored: u64,
}

impl Block {
    fn merge(&mut self, other: Block) {
        let mut out = Vec::with_capacity(self.bins.len() + other.bins.len());
        let (mut a, mut b) = (self.bins.iter().peekable(), other.bins.iter().peekable());
        loop {
            match (a.peek(), b.peek()) {
                (Some(&&(i, n)), Some(&&(j, m))) if i == j => {
                    out.push((i, n + m));
                    a.next();
                    b.next();
                }
                (Some(&&x), Some(&&y)) => {
                    if x.0 < y.0 {
                        out.push(x);
                        a.next();
                    } else {
                        out.push(y);
                        b.next();
                    }
                }
                (Some(&&x), None) => {
                    out.push(x);
                    a.next();
                }
                (None, Some(&&y)) => {
                    out.push(y);
                    b.next();
                }
                (None, None) => break,
            }
        }
        self.bins = out;
        self.sum_ns += other.sum_ns;
        self.measured += other.measured;
        self.censored += other.censored;
    }

    fn len(&self) -> u64 {
        self.measured + self.censored
    }
}

/// A run's sample sequence as blocks, built by [`BlockBuilder`].
#[derive(Debug, Clone)]
pub struct Blocks {
    blocks: Vec<Block>,
    /// Samples per block (the last may hold fewer).
    pub block_len: u64,
    /// Samples in all.
    pub samples: u64,
}

/// Cuts a stream of samples into blocks in bounded memory.
#[derive(Debug, Clone)]
pub struct BlockBuilder {
    done: Vec<Block>,
    current: Block,
    /// Samples per block now.
    len: u64,
    samples: u64,
    /// The sequence's autocovariance, for the block length.
    acf: super::blocklen::Autocov,
}

impl Default for BlockBuilder {
    fn default() -> Self {
        Self {
            done: Vec::new(),
            current: Block::default(),
            len: MIN_BLOCK,
            samples: 0,
            acf: super::blocklen::Autocov::default(),
        }
    }
}

impl BlockBuilder {
    /// Add one sample: its latency in ns, or `None` for a censored one.
    pub fn push(&mut self, latency_ns: Option<u64>) {
        self.acf.push(latency_ns);
        let b = &mut self.current;
        match latency_ns {
            Some(v) => {
                let g = grid(v);
                match b.bins.binary_search_by_key(&g, |&(i, _)| i) {
                    Ok(k) => b.bins[k].1 += 1,
                    Err(k) => b.bins.insert(k, (g, 1)),
                }
                b.sum_ns += v as f64;
                b.measured += 1;
            }
            None => b.censored += 1,
        }
        self.samples += 1;
        if self.current.len() >= self.len {
            self.done.push(std::mem::take(&mut self.current));
            if self.done.len() >= 2 * MAX_BLOCKS {
                self.halve();
            }
        }
    }

    /// Merge neighbouring blocks in pairs: half as many, twice as long.
    fn halve(&mut self) {
        self.regroup(2);
    }

    /// Merge each `r` neighbouring blocks into one: `r` times as long.
    fn regroup(&mut self, r: u64) {
        let old = std::mem::take(&mut self.done);
        let mut it = old.into_iter();
        while let Some(mut a) = it.next() {
            for b in it.by_ref().take(r as usize - 1) {
                a.merge(b);
            }
            self.done.push(a);
        }
        self.len *= r;
    }

    /// The blocks, at the length the rule in the module docs gives.
    pub fn finish(mut self) -> Blocks {
        if self.current.len() > 0 {
            self.done.push(std::mem::take(&mut self.current));
        }
        let n = self.samples;
        let want = self.acf.block_length().max(MIN_BLOCK);
        while self.done.len() > MAX_BLOCKS {
            self.halve();
        }
        let r = want.div_ceil(self.len);
        if r > 1 {
            self.regroup(r);
        }
        Blocks { blocks: self.done, block_len: self.len, samples: n }
    }

    /// The block length the run's autocorrelation asks for (before the
    /// floor, the cap on blocks and the builder's granularity).
    pub fn wanted_block_len(&self) -> u64 {
        self.acf.block_length()
    }
}

/// A [`crate::samples::Sink`] that feeds a [`BlockBuilder`] from a raw
/// file's replay; the builder is shared so the caller takes it back.
#[derive(Debug, Clone, Default)]
pub struct BlockSink(pub Arc<Mutex<BlockBuilder>>);

impl crate::samples::Sink for BlockSink {
    fn row(&mut self, row: &crate::samples::Row) -> std::io::Result<()> {
        if let Ok(mut b) = self.0.lock() {
            b.push(row.latency_ns);
        }
        Ok(())
    }
    fn finish(self: Box<Self>, _: &crate::samples::RunInfo) -> std::io::Result<()> {
        Ok(())
    }
}

/// A histogram resampled as independent samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Hist {
    /// `(bin start ns, samples)`, ascending.
    pub bins: Vec<(u64, u64)>,
    /// The width of every bin, ns.
    pub bin_ns: u64,
    /// Samples above every bin (timeouts, overflows): ranked highest, no
    /// value.
    pub censored: u64,
    /// Whether the bins hold every sample the run's mean is over (a
    /// probe's timeouts are outside its mean; a histogram's overflows are
    /// inside a tool's): without them the mean gets no standard error.
    pub mean_complete: bool,
}

/// How one run is resampled.
#[derive(Debug, Clone)]
pub enum Resample {
    /// Blocks of its sample sequence (a raw file).
    Blocks(Blocks),
    /// Its histogram, as independent samples.
    Hist(Hist),
}

impl Resample {
    /// The bootstrap standard error of each of `stats`, ns, with
    /// `replicates` replicates from `rng`; `None` where more than about
    /// one replicate in six fell among the censored samples.
    pub fn standard_errors(&self, stats: &[Stat], rng: &mut Rng, replicates: usize) -> Vec<Option<f64>> {
        match self {
            Resample::Hist(h) => stats.iter().map(|s| h.standard_error(*s, rng, replicates)).collect(),
            Resample::Blocks(b) => b.standard_errors(stats, rng, replicates),
        }
    }

    /// The degrees of freedom of its standard errors: blocks − 1 for
    /// blocks, infinite for independent samples.
    pub fn df(&self) -> f64 {
        match self {
            Resample::Hist(_) => f64::INFINITY,
            Resample::Blocks(b) => b.blocks.len().saturating_sub(1) as f64,
        }
    }

    /// Samples in the run.
    pub fn samples(&self) -> u64 {
        match self {
            Resample::Hist(h) => h.bins.iter().map(|b| b.1).sum::<u64>() + h.censored,
            Resample::Blocks(b) => b.samples,
        }
    }
}

#[cfg(test)]
fn sd(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

impl Hist {
    fn standard_error(&self, stat: Stat, rng: &mut Rng, replicates: usize) -> Option<f64> {
        let measured: u64 = self.bins.iter().map(|b| b.1).sum();
        let n = measured + self.censored;
        if measured < 2 {
            return None;
        }
        let half = self.bin_ns as f64 / 2.0;
        match stat {
            Stat::Mean if !self.mean_complete => None,
            Stat::Mean => {
                let m = self.bins.iter().map(|&(s, c)| (s as f64 + half) * c as f64).sum::<f64>()
                    / measured as f64;
                let var =
                    self.bins.iter().map(|&(s, c)| (s as f64 + half - m).powi(2) * c as f64).sum::<f64>()
                        / (measured - 1) as f64;
                Some((var / measured as f64).sqrt())
            }
            Stat::Quantile(q) => {
                let k = rank(q, n) as f64;
                let mut cum = Vec::with_capacity(self.bins.len());
                let mut total = 0u64;
                for &(_, c) in &self.bins {
                    total += c;
                    cum.push(total);
                }
                let mut values = Vec::with_capacity(replicates);
                for _ in 0..replicates {
                    // The k-th of n uniforms, as a position among the
                    // samples ranked 0..n.
                    let pos = rng.beta(k, n as f64 + 1.0 - k) * n as f64;
                    values.push(self.at(&cum, pos));
                }
                robust_sd(values)
            }
        }
    }

    /// The value at continuous rank position `pos` (0..n), interpolated
    /// within its bin (`cum`: the samples up to each bin); infinite among
    /// the censored.
    fn at(&self, cum: &[u64], pos: f64) -> f64 {
        let i = cum.partition_point(|&c| (c as f64) <= pos);
        let Some(&(start, c)) = self.bins.get(i) else { return f64::INFINITY };
        let before = if i == 0 { 0 } else { cum[i - 1] };
        start as f64 + self.bin_ns as f64 * (pos - before as f64) / c as f64
    }
}

impl Blocks {
    /// How many blocks.
    pub fn count(&self) -> usize {
        self.blocks.len()
    }

    fn standard_errors(&self, stats: &[Stat], rng: &mut Rng, replicates: usize) -> Vec<Option<f64>> {
        let nb = self.blocks.len();
        if nb < 2 {
            return vec![None; stats.len()];
        }
        // Only the grid bins some block uses are scanned.
        let lo =
            self.blocks.iter().filter_map(|b| b.bins.first()).map(|b| usize::from(b.0)).min().unwrap_or(0);
        let hi =
            self.blocks.iter().filter_map(|b| b.bins.last()).map(|b| usize::from(b.0) + 1).max().unwrap_or(0);
        let mut acc = vec![0u64; hi.saturating_sub(lo)];
        let mut reps: Vec<Vec<f64>> = vec![Vec::with_capacity(replicates); stats.len()];
        for _ in 0..replicates {
            acc.iter_mut().for_each(|a| *a = 0);
            let (mut sum, mut measured, mut censored) = (0.0, 0u64, 0u64);
            for _ in 0..nb {
                let b = &self.blocks[rng.below(nb)];
                for &(i, c) in &b.bins {
                    acc[usize::from(i) - lo] += u64::from(c);
                }
                sum += b.sum_ns;
                measured += b.measured;
                censored += b.censored;
            }
            let n = measured + censored;
            let ranks: Vec<u64> = stats
                .iter()
                .map(|s| match *s {
                    Stat::Quantile(q) => rank(q, n),
                    Stat::Mean => 0,
                })
                .collect();
            let values = quantiles_in(&acc, lo, &ranks, measured);
            for (s, stat) in stats.iter().enumerate() {
                reps[s].push(match *stat {
                    Stat::Mean if measured > 0 => sum / measured as f64,
                    Stat::Mean => f64::INFINITY,
                    Stat::Quantile(_) => values[s],
                });
            }
        }
        reps.into_iter().map(robust_sd).collect()
    }
}

/// The samples of 1-based ranks `ranks` (ascending where not 0; 0 is
/// skipped) in the dense grid histogram `acc` (bin `lo` first), each
/// interpolated within its bin, in one pass; infinite among the censored.
fn quantiles_in(acc: &[u64], lo: usize, ranks: &[u64], measured: u64) -> Vec<f64> {
    let mut out = vec![f64::INFINITY; ranks.len()];
    let mut order: Vec<usize> = (0..ranks.len()).filter(|&i| ranks[i] > 0 && ranks[i] <= measured).collect();
    order.sort_by_key(|&i| ranks[i]);
    let mut next = order.into_iter().peekable();
    let mut before = 0u64;
    for (i, &c) in acc.iter().enumerate() {
        while let Some(&j) = next.peek() {
            let k = ranks[j];
            if c == 0 || before + c < k {
                break;
            }
            let (a, b) = grid_range((i + lo) as u16);
            out[j] = a + (b - a) * (k - before) as f64 / c as f64;
            next.next();
        }
        if next.peek().is_none() {
            break;
        }
        before += c;
    }
    out
}

/// The spread of bootstrap replicates as a standard error: half the
/// distance between their 15.87th and 84.13th percentiles (± one standard
/// deviation of a normal), which a few wild or censored (infinite)
/// replicates do not move; `None` when the upper one is censored.
fn robust_sd(mut reps: Vec<f64>) -> Option<f64> {
    if reps.len() < 2 {
        return None;
    }
    reps.sort_by(f64::total_cmp);
    let at = |p: f64| reps[((p * (reps.len() - 1) as f64).round() as usize).min(reps.len() - 1)];
    let (lo, hi) = (at(0.158_655), at(0.841_345));
    hi.is_finite().then(|| (hi - lo) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_is_contiguous_and_fine() {
        for v in [0u64, 1, 127, 128, 129, 255, 256, 1000, 45_678, 1 << 30, (1 << 39) + 12345] {
            let (lo, hi) = grid_range(grid(v));
            assert!(lo <= v as f64 && (v as f64) < hi, "{v}: [{lo}, {hi})");
            assert!(hi - lo <= (v as f64 / 64.0).max(1.0), "{v}: [{lo}, {hi}) too wide");
        }
        for i in 0..(GRID_BINS as u16 - 1) {
            assert_eq!(grid_range(i).1, grid_range(i + 1).0, "bin {i}");
        }
    }

    #[test]
    fn blocks_follow_the_length_rule_and_stay_bounded() {
        for n in [10u64, 1000, 100_000, 3_000_000] {
            let mut b = BlockBuilder::default();
            let mut rng = Rng::new(n, 1);
            for i in 0..n {
                b.push(if i % 997 == 0 { None } else { Some(10_000 + (rng.uniform() * 300.0) as u64) });
            }
            let want = b.wanted_block_len().max(MIN_BLOCK);
            let blocks = b.finish();
            assert_eq!(blocks.samples, n);
            assert_eq!(blocks.blocks.iter().map(Block::len).sum::<u64>(), n, "no sample lost");
            assert!(blocks.block_len >= want, "{n}: {} against {want}", blocks.block_len);
            assert!(blocks.blocks.len() <= MAX_BLOCKS, "{n}: {} blocks", blocks.blocks.len());
            // The first length that meets the rules, not a longer one.
            let need = want.max(n.div_ceil(MAX_BLOCKS as u64));
            assert!(
                blocks.block_len == MIN_BLOCK || blocks.block_len < 2 * need,
                "{n}: {}",
                blocks.block_len
            );
        }
    }

    /// A sequence whose neighbours are alike over tens of samples (an
    /// AR(1) with φ = 0.95) gets blocks several times the floor; the same
    /// values shuffled get the floor.
    #[test]
    fn serial_dependence_lengthens_the_blocks() {
        let mut rng = Rng::new(4, 0);
        let mut z = 0.0;
        let values: Vec<u64> = (0..20_000)
            .map(|_| {
                z = 0.95 * z + (1.0f64 - 0.95 * 0.95).sqrt() * rng.normal();
                (20_000.0 + 10_000.0 * (0.4 * z).exp()) as u64
            })
            .collect();
        let mut b = BlockBuilder::default();
        values.iter().for_each(|&v| b.push(Some(v)));
        let dependent = b.finish().block_len;
        let mut shuffled = values.clone();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, rng.below(i + 1));
        }
        let mut b = BlockBuilder::default();
        shuffled.iter().for_each(|&v| b.push(Some(v)));
        let independent = b.finish().block_len;
        assert_eq!(independent, MIN_BLOCK);
        assert!(dependent >= 4 * MIN_BLOCK, "φ 0.95: blocks of {dependent}");
    }

    /// Samples in clusters (each value repeated 20 times): the block
    /// bootstrap sees the clustering that an independent resampling
    /// would miss, so its standard error of the mean is about √20 larger.
    #[test]
    fn block_bootstrap_sees_clustering() {
        let mut rng = Rng::new(1, 0);
        let mut b = BlockBuilder::default();
        let mut iid = Vec::new();
        for _ in 0..2000 {
            let v = 10_000 + (rng.uniform() * 10_000.0) as u64;
            for _ in 0..20 {
                b.push(Some(v));
            }
            iid.push(v as f64);
        }
        let blocks = b.finish();
        let se = blocks.standard_errors(&[Stat::Mean], &mut Rng::new(2, 0), REPLICATES)[0].unwrap();
        // True SE of the mean: sd/sqrt(2000 clusters).
        let truth = sd(&iid) / (2000f64).sqrt();
        assert!((se / truth - 1.0).abs() < 0.25, "block SE {se} against {truth}");
    }

    #[test]
    fn histogram_quantile_se_matches_the_asymptotic_formula() {
        // Uniform on [0, 1 ms) in 1 µs bins, n = 100 000: the SE of the
        // median is sqrt(q(1-q)/n)/f = 0.5/sqrt(n) · 1 ms.
        let n_bins = 1000u64;
        let h = Hist {
            bins: (0..n_bins).map(|i| (i * 1000, 100)).collect(),
            bin_ns: 1000,
            censored: 0,
            mean_complete: true,
        };
        let se = h.standard_error(Stat::Quantile(0.5), &mut Rng::new(3, 0), REPLICATES).unwrap();
        let truth = 0.5 / (100_000f64).sqrt() * 1e6;
        assert!((se / truth - 1.0).abs() < 0.1, "{se} against {truth}");
        // A tool's mean holds overflows the bins do not keep: no SE.
        let tool = Hist { mean_complete: false, ..h.clone() };
        assert_eq!(tool.standard_error(Stat::Mean, &mut Rng::new(3, 0), REPLICATES), None);
        assert!(h.standard_error(Stat::Mean, &mut Rng::new(3, 0), REPLICATES).is_some());
        // Among the censored: no SE.
        let c = Hist { bins: vec![(0, 10), (1000, 10)], bin_ns: 1000, censored: 80, mean_complete: false };
        assert_eq!(c.standard_error(Stat::Quantile(0.5), &mut Rng::new(3, 0), REPLICATES), None);
    }
}
