//! `compare --group`'s verdicts on synthetic data with a known answer
//! (seeded, so every run of this file sees the same trials):
//!
//! The raw-sample (block bootstrap) trials use 300 resamples instead of
//! the default 1000 to keep this file fast in a debug build: fewer
//! resamples only add Monte Carlo noise to each standard error, so what
//! holds here holds at least as well at the default.
//!
//! - **False positives.** Two groups drawn from one distribution must show
//!   "no difference" on every figure in at least 95 % of trials: Holm's
//!   family-wise 95 % over the figures, for each way a group is read
//!   (several runs; one run's histogram; one run's raw samples in blocks).
//! - **Clustering.** Spikes that come in bursts break the histogram's
//!   independence assumption; the block bootstrap of the raw samples
//!   keeps the false-positive rate, resampling the same samples one by
//!   one does not (so the block rule is load-bearing): bursts of 8 slow
//!   samples, one burst start per 100 samples.
//! - **Serial correlation.** A body that wanders slowly (an AR(1) process
//!   under the lognormal, φ = 0, 0.5, 0.9, 0.95) makes neighbouring
//!   samples alike over tens of samples: the block length is chosen from
//!   the run's own autocorrelation (Politis & White 2004, corrected 2009),
//!   and one raw run against another of the same process still shows "no
//!   difference" in at least 94 % of trials at every φ.
//! - **Power.** A shift of every sample by k standard errors of the
//!   difference at the best-resolved figure (the median here) is found
//!   ("higher by" on some figure, "lower by" on none) in the share of
//!   trials the theory allows. One run: at 4 SE at least 90 %, at 3 SE at
//!   least half (for one figure under Holm over five its expectation is
//!   about 66 %, Φ(3 − 2.58); even a lone two-sided 95 % interval finds
//!   3 SE in only 85 %, Φ(3 − 1.96), so "90 % at 3 SE" cannot be had).
//!   Eight runs per group: the runs' own scatter is the standard error,
//!   so Student's t with about 14 degrees of freedom: at 6 SE at least
//!   90 %, at 4 SE at least 65 %.

use latprobe::analysis::figure::{rank, PERCENTILES};
use latprobe::analysis::Figure;
use latprobe::compare::bootstrap::{BlockBuilder, Hist, Resample, REPLICATES};
use latprobe::compare::grouped::compare_groups;
use latprobe::compare::groups::{Group, Run, Verdict};
use latprobe::compare::stats::Rng;
use latprobe::compare::Column;

/// A latency-like sample: 20 µs + lognormal body (median 10 µs) + a rare
/// exponential spike (0.5 %, mean 100 µs), ns.
fn latency(rng: &mut Rng) -> u64 {
    let body = 10_000.0 * (0.4 * rng.normal()).exp();
    let spike = if rng.uniform() < 0.005 { -100_000.0 * rng.uniform().ln() } else { 0.0 };
    (20_000.0 + body + spike) as u64
}

/// The table column of `samples`, its figures exact.
fn column(label: &str, samples: &[u64]) -> Column {
    let mut s = samples.to_vec();
    s.sort_unstable();
    let n = s.len() as u64;
    let q = |p: f64| Figure::Value(s[rank(p, n) as usize - 1]);
    Column {
        label: label.into(),
        source: "synthetic".into(),
        mode: None,
        interval_ns: None,
        samples: n,
        min: Figure::Value(s[0]),
        avg: Figure::Value(s.iter().sum::<u64>() / n),
        avg_over: None,
        p50: q(PERCENTILES[0].q),
        p90: q(PERCENTILES[1].q),
        p99: q(PERCENTILES[2].q),
        p99_9: q(PERCENTILES[3].q),
        p99_99: q(PERCENTILES[4].q),
        max: Figure::Value(s[s.len() - 1]),
        timeouts_or_overflows: 0,
        lost: None,
        resolution_ns: 1,
        timeout_ns: None,
        meta: Vec::new(),
        kernel_config: None,
        loads: None,
    }
}

/// `samples` as a JSON report keeps them: a 1 µs histogram.
fn hist(samples: &[u64]) -> Resample {
    let mut bins = std::collections::BTreeMap::new();
    for &v in samples {
        *bins.entry(v / 1000 * 1000).or_insert(0u64) += 1;
    }
    Resample::Hist(Hist { bins: bins.into_iter().collect(), bin_ns: 1000, censored: 0, mean_complete: true })
}

/// `samples` as a raw file's sequence, in blocks.
fn blocks(samples: &[u64]) -> Resample {
    let mut b = BlockBuilder::default();
    for &v in samples {
        b.push(Some(v));
    }
    Resample::Blocks(b.finish())
}

#[derive(Clone, Copy, PartialEq)]
enum Read {
    /// Several runs per group.
    Runs(usize),
    /// One run, its histogram.
    Histogram,
    /// One run, its raw samples.
    Raw,
}

/// One group of `read`'s shape, each run `n` samples from `draw`, shifted
/// by `shift` ns.
fn group(name: &str, read: Read, n: usize, shift: u64, draw: &mut dyn FnMut() -> u64) -> Group {
    let runs = match read {
        Read::Runs(k) => k,
        _ => 1,
    };
    let runs = (0..runs)
        .map(|i| {
            let s: Vec<u64> = (0..n).map(|_| draw() + shift).collect();
            // Several runs are judged by their scatter, not resampled.
            let resample = match read {
                Read::Raw => Some(blocks(&s)),
                Read::Histogram => Some(hist(&s)),
                Read::Runs(_) => None,
            };
            Run { column: column(&format!("{name}{i}"), &s), resample }
        })
        .collect();
    Group { name: name.into(), runs }
}

/// Per trial: (any "higher by", any "lower by").
fn trials(read: Read, n: usize, count: usize, shift: u64, clustered: bool, seed: u64) -> Vec<(bool, bool)> {
    let mut rng = Rng::new(seed, 99);
    (0..count)
        .map(|t| {
            let mut burst = 0u32;
            let mut draw = || {
                if clustered {
                    // A stall: 8 consecutive samples late together.
                    if burst == 0 && rng.uniform() < 0.01 {
                        burst = 8;
                    }
                    if burst > 0 {
                        burst -= 1;
                        return 20_000 + 60_000 + (10_000.0 * rng.uniform()) as u64;
                    }
                    return 20_000 + (10_000.0 * (0.4 * rng.normal()).exp()) as u64;
                }
                latency(&mut rng)
            };
            let a = group("A", read, n, 0, &mut draw);
            let b = group("B", read, n, shift, &mut draw);
            let replicates = if read == Read::Raw { 300 } else { REPLICATES };
            let c = compare_groups(vec![a, b], t as u64 + 1, 1000.0, replicates);
            let v = &c.pairs[0].verdicts;
            (
                v.iter().any(|v| matches!(v, Verdict::Shown { higher: true, .. })),
                v.iter().any(|v| matches!(v, Verdict::Shown { higher: false, .. })),
            )
        })
        .collect()
}

/// Per trial: (any "higher by", any "lower by") for two raw runs of `n`
/// samples whose body follows an AR(1) process with coefficient `phi`
/// (unit marginal variance, so every φ gives the same distribution).
fn ar1_trials(phi: f64, n: usize, count: usize, seed: u64) -> Vec<(bool, bool)> {
    let mut rng = Rng::new(seed, 17);
    let innovation = (1.0 - phi * phi).sqrt();
    (0..count)
        .map(|t| {
            let mut z = rng.normal();
            let mut draw = || {
                z = phi * z + innovation * rng.normal();
                20_000 + (10_000.0 * (0.4 * z).exp()) as u64
            };
            let a = group("A", Read::Raw, n, 0, &mut draw);
            let b = group("B", Read::Raw, n, 0, &mut draw);
            let c = compare_groups(vec![a, b], t as u64 + 1, 1000.0, 300);
            let v = &c.pairs[0].verdicts;
            (
                v.iter().any(|v| matches!(v, Verdict::Shown { higher: true, .. })),
                v.iter().any(|v| matches!(v, Verdict::Shown { higher: false, .. })),
            )
        })
        .collect()
}

#[test]
fn serially_correlated_runs_keep_the_false_verdict_rate() {
    for phi in [0.0, 0.5, 0.9, 0.95] {
        let count = 200;
        let t = ar1_trials(phi, 4000, count, 5);
        let fp = rate(&t, |x| x.0 || x.1);
        eprintln!("false verdicts, one raw run, AR(1) φ = {phi}: {fp:.3} of {count}");
        assert!(fp <= 0.06, "AR(1) φ = {phi}: a difference shown in {fp} of trials");
    }
}

fn rate(t: &[(bool, bool)], f: impl Fn(&(bool, bool)) -> bool) -> f64 {
    t.iter().filter(|x| f(x)).count() as f64 / t.len() as f64
}

/// The standard deviation of one group's figure at `f` over many groups
/// drawn alike (independent samples): the true standard error, by
/// simulation.
fn true_se(runs: usize, n: usize, reps: usize, f: impl Fn(&Column) -> f64) -> f64 {
    let mut rng = Rng::new(12345, 7);
    let values: Vec<f64> = (0..reps)
        .map(|_| {
            (0..runs)
                .map(|_| {
                    let s: Vec<u64> = (0..n).map(|_| latency(&mut rng)).collect();
                    f(&column("x", &s))
                })
                .sum::<f64>()
                / runs as f64
        })
        .collect();
    let m = values.iter().sum::<f64>() / values.len() as f64;
    (values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64).sqrt()
}

fn p50(c: &Column) -> f64 {
    c.p50.value().unwrap() as f64
}

#[test]
fn one_distribution_shows_no_difference_in_95_percent_of_trials() {
    for (read, n, count) in
        [(Read::Runs(3), 500, 300), (Read::Runs(8), 200, 200), (Read::Histogram, 5000, 300)]
    {
        let t = trials(read, n, count, 0, false, 1);
        let fp = rate(&t, |x| x.0 || x.1);
        eprintln!("false positives, {}: {fp:.3} of {count}", name(read));
        assert!(fp <= 0.05, "{}: a difference shown in {fp} of trials", name(read));
    }
}

#[test]
fn clustered_spikes_need_the_block_bootstrap() {
    let t = trials(Read::Raw, 2000, 150, 0, true, 2);
    let fp = rate(&t, |x| x.0 || x.1);
    eprintln!("false positives, one raw run, clustered: {fp:.3} of 150");
    assert!(fp <= 0.05, "block bootstrap: a difference shown in {fp} of trials");
    // The same samples resampled one by one (a histogram) understate the
    // spread of the tail figures and show differences that are not there.
    let t = trials(Read::Histogram, 2000, 200, 0, true, 2);
    let naive = rate(&t, |x| x.0 || x.1);
    eprintln!("false positives, one histogram, clustered: {naive:.3} of 200");
    assert!(naive > 2.0 * fp.max(0.02), "independent resampling of clustered data: {naive} against {fp}");
}

#[test]
fn a_shift_of_a_few_standard_errors_is_found() {
    // One run: Holm's first step at 0.05/5 (z = 2.58): 4 SE is found in
    // about 92 %, 3 SE in about 66 %. Eight runs: Welch's t with about 14
    // degrees of freedom (t = 3.2 at that level): about 78 % at 4 SE,
    // 99 % at 6 SE.
    let one_run = [(4.0, 0.9), (3.0, 0.5)];
    let runs = [(6.0, 0.9), (4.0, 0.65)];
    for (read, n, count, cases) in [
        (Read::Histogram, 5000, 100, one_run),
        (Read::Raw, 2000, 50, one_run),
        (Read::Runs(8), 200, 80, runs),
    ] {
        // The best-resolved figure here is the median.
        let runs = if let Read::Runs(k) = read { k } else { 1 };
        let se = true_se(runs, n, 100, p50) * std::f64::consts::SQRT_2;
        for (k, want) in cases {
            let t = trials(read, n, count, (k * se) as u64, false, 3);
            let found = rate(&t, |x| x.0 && !x.1);
            eprintln!("shift {k} SE ({:.0} ns), {}: found in {found:.3} of {count}", k * se, name(read));
            assert!(found >= want, "{}: {k} SE found in only {found}", name(read));
            // Calling a shift up "lower" is a false positive too.
            let wrong = rate(&t, |x| x.1);
            assert!(wrong <= 0.05, "{}: a shift up called lower in {wrong} of trials", name(read));
        }
    }
}

fn name(read: Read) -> String {
    match read {
        Read::Runs(k) => format!("{k} runs per group"),
        Read::Histogram => "one run's histogram".into(),
        Read::Raw => "one run's raw samples".into(),
    }
}
