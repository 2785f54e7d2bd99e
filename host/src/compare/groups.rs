//! Groups of runs compared figure by figure (seed 003: three runs of
//! vanilla, three of patched): each group's figures with their spread, and
//! for each pair of groups the difference with a 95 % interval and a
//! verdict that holds with the others of its comparison.
//!
//! ```text
//!  Group { runs: [Run { column, resample }] }
//!    └─ estimate per figure: one run → its figure, SE by resampling it (bootstrap.rs)
//!                            several → mean over runs, SE = sd/√k, df = k − 1
//!  pair (A, B) ─▶ Δ = B − A, SE² = SE_A² + SE_B², Welch–Satterthwaite df
//!    └─▶ p per figure ─▶ Holm over the figures ─▶ Verdict per figure
//! ```
//!
//! **Several runs.** A group's figure is the mean of its runs' figures and
//! its standard error `sd/√k` over the k runs; the interval uses Student's
//! t with the Welch–Satterthwaite degrees of freedom (B. L. Welch, "The
//! generalization of 'Student's' problem when several different population
//! variances are involved", Biometrika 34, 1947). The runs are not
//! resampled with replacement: with three runs per group there are only 20
//! ways to split six runs in two, so no resampling of runs can show a
//! difference at 95 % (a permutation p is at least 2/20), and a run
//! bootstrap's intervals come out too narrow by `√((k−1)/k)` besides
//! (T. Hesterberg, "What teachers should know about the bootstrap", Amer.
//! Statist. 69, 2015). The t interval is exact for normal run-to-run
//! scatter and honest at k = 3.
//!
//! **One run.** The run is resampled ([`super::bootstrap`]): blocks of its
//! samples from a raw file, its histogram as independent samples
//! otherwise. The figure is the run's own; the interval is normal (the
//! bootstrap's standard error, df infinite). A maximum gets no interval
//! from one run: its bootstrap is inconsistent (P. J. Bickel & D. A.
//! Freedman, "Some asymptotic theory for the bootstrap", Ann. Statist. 9,
//! 1981); nor does a quantile with fewer than [`MIN_BEYOND`] samples above
//! it.
//!
//! **Family-wise.** The verdicts of one pair hold their 95 % together:
//! Holm's step-down over the figures compared ([`super::stats::holm`]),
//! each interval printed at the level of its step (so it holds 0 exactly
//! when its verdict is "no difference shown").

use super::bootstrap::{Resample, Stat};
use super::stats::{holm, t_crit, two_sided_p, Rng};
use super::Column;
use crate::analysis::figure::PERCENTILES;
use crate::analysis::Figure;

/// The family-wise error rate of one pair's verdicts.
pub const ALPHA: f64 = 0.05;
/// The fewest samples a single run must have above a quantile for an
/// interval of it from resampling that run.
pub const MIN_BEYOND: f64 = 50.0;

/// The figures compared, in print order: (JSON key, printed name).
pub const FIGURES: [(&str, &str); 7] = [
    ("avg", "avg"),
    (PERCENTILES[0].key, PERCENTILES[0].name),
    (PERCENTILES[1].key, PERCENTILES[1].name),
    (PERCENTILES[2].key, PERCENTILES[2].name),
    (PERCENTILES[3].key, PERCENTILES[3].name),
    (PERCENTILES[4].key, PERCENTILES[4].name),
    ("max", "max"),
];

fn figure_of(c: &Column, f: usize) -> Figure {
    [c.avg, c.p50, c.p90, c.p99, c.p99_9, c.p99_99, c.max][f]
}

fn stat_of(f: usize) -> Option<Stat> {
    match f {
        0 => Some(Stat::Mean),
        1..=5 => Some(Stat::Quantile(PERCENTILES[f - 1].q)),
        _ => None,
    }
}

/// One run of a group: its figures, and how to resample it when it is
/// the group's only run.
#[derive(Debug, Clone)]
pub struct Run {
    /// Its figures, as the plain table shows them.
    pub column: Column,
    /// How its samples are resampled; `None`: they cannot be (no
    /// histogram).
    pub resample: Option<Resample>,
}

/// A named group of runs.
#[derive(Debug, Clone)]
pub struct Group {
    /// `--group NAME`.
    pub name: String,
    /// Its runs.
    pub runs: Vec<Run>,
}

/// One group's figure: over its runs, or from its one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// The figure: one run's, or the mean over the runs, ns.
    pub value: f64,
    /// The spread over the runs (sample standard deviation), ns; `None`
    /// for one run.
    pub spread: Option<f64>,
    /// Its standard error, ns.
    pub se: f64,
    /// Degrees of freedom of `se`: runs − 1; blocks − 1 for a block
    /// bootstrap (as batch means with b batches: B. Schmeiser, "Batch size
    /// effects in the analysis of simulation output", Oper. Res. 30,
    /// 1982); infinite for a histogram's.
    pub df: f64,
    /// Runs, or for one run its samples: what "more" means for it.
    pub units: u64,
    /// Whether `units` counts runs (else samples).
    pub runs: bool,
}

/// A group's figure that cannot be compared, and why.
pub type Refusal = String;

/// Per-group figures: `Ok` with its estimate, or the reason there is none.
/// `seed`: the bootstrap's, with `stream` telling groups apart;
/// `replicates`: resamples of a group of one run.
pub fn estimates(g: &Group, seed: u64, stream: u64, replicates: usize) -> Vec<Result<Estimate, Refusal>> {
    let mut out = Vec::new();
    if g.runs.len() == 1 {
        let run = &g.runs[0];
        let stats: Vec<Stat> = (0..FIGURES.len()).filter_map(stat_of).collect();
        let ses = match &run.resample {
            Some(r) => r.standard_errors(&stats, &mut Rng::new(seed, stream), replicates),
            None => vec![None; stats.len()],
        };
        for f in 0..FIGURES.len() {
            out.push(single(g, run, f, ses.get(f).copied().flatten()));
        }
        return out;
    }
    for (f, (_, name)) in FIGURES.iter().enumerate() {
        let mut values = Vec::new();
        let mut refusal = None;
        for r in &g.runs {
            match figure_of(&r.column, f) {
                Figure::Value(v) => values.push(v as f64),
                Figure::Above(b) => {
                    refusal.get_or_insert(format!(
                        "{}'s {} is above {} µs (censored)",
                        r.column.label,
                        name,
                        crate::units::us_floor(b, 2)
                    ));
                }
                Figure::None => {
                    refusal.get_or_insert(format!("{} has no {name}", r.column.label));
                }
            }
        }
        if let Some(why) = refusal {
            out.push(Err(why));
            continue;
        }
        let k = values.len() as f64;
        let mean = values.iter().sum::<f64>() / k;
        let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
        // A figure stated in whole bins (1 µs for cyclictest's histogram)
        // is known only to its bin: runs that all print 16 µs did not all
        // measure 16.000. Their rounding, uniform over a bin, has an SD of
        // bin/√12 a run: the floor of the spread, so three runs at 16 µs
        // against three at 19 µs are three bins apart, not "no spread".
        let bin = g.runs.iter().map(|r| r.column.resolution_ns).max().unwrap_or(1) as f64;
        let sd_floor = if bin > 1.0 { bin / 12f64.sqrt() } else { 0.0 };
        out.push(Ok(Estimate {
            value: mean,
            spread: Some(sd),
            se: sd.max(sd_floor) / k.sqrt(),
            df: k - 1.0,
            units: k as u64,
            runs: true,
        }));
    }
    out
}

fn single(g: &Group, run: &Run, f: usize, se: Option<f64>) -> Result<Estimate, Refusal> {
    let c = &run.column;
    let value = match figure_of(c, f) {
        Figure::Value(v) => v as f64,
        Figure::Above(b) => {
            return Err(format!(
                "{} is above {} µs (censored) in {}",
                FIGURES[f].1,
                crate::units::us_floor(b, 2),
                c.label
            ))
        }
        Figure::None => return Err(format!("{} has no {}", c.label, FIGURES[f].1)),
    };
    if f == FIGURES.len() - 1 {
        return Err(format!(
            "one run cannot bound a maximum (its bootstrap is inconsistent): give several runs in --group {}",
            g.name
        ));
    }
    let Some(resample) = &run.resample else {
        return Err(format!(
            "{} keeps no histogram or samples to resample: give several runs in --group {}",
            c.label, g.name
        ));
    };
    let n = resample.samples();
    if let Some(Stat::Quantile(q)) = stat_of(f) {
        let beyond = n as f64 * (1.0 - q);
        if beyond < MIN_BEYOND {
            // Rounded down, as a bound: 49.96 is not "50, fewer than 50".
            return Err(format!(
                "{} of {} has {} samples above it, fewer than {MIN_BEYOND}: run longer",
                FIGURES[f].1,
                c.label,
                crate::units::decimal_floor((beyond * 100.0) as u64, 100, 2)
            ));
        }
    }
    match se {
        Some(se) => Ok(Estimate { value, spread: None, se, df: resample.df(), units: n, runs: false }),
        None => Err(format!(
            "{}'s resampling of {} reaches its censored samples (timeouts, or overflows beyond its histogram's range, \
             whose values it does not keep): no interval",
            c.label, FIGURES[f].1
        )),
    }
}

/// What one figure of one pair says.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The second group's figure is higher (`Higher`) or lower than the
    /// first's, by `diff` ns, with the interval `[lo, hi]` of the
    /// difference (second − first).
    Shown {
        /// `true`: higher.
        higher: bool,
        /// Second − first, ns.
        diff: f64,
        /// The interval's ends, ns, at `level`.
        lo: f64,
        /// See `lo`.
        hi: f64,
        /// The confidence of this one interval (Holm's step), e.g. 0.9929.
        level: f64,
    },
    /// The interval holds 0.
    NoDifference {
        /// Second − first, ns.
        diff: f64,
        /// The interval's ends, ns, at `level`.
        lo: f64,
        /// See `lo`.
        hi: f64,
        /// See [`Verdict::Shown`].
        level: f64,
        /// How many more runs or samples per group would make the
        /// interval's half-width `resolve_ns`, and which of the two.
        more: u64,
        /// `"runs"` or `"samples"`.
        more_unit: &'static str,
    },
    /// No comparison: why.
    NotCompared(String),
}

/// One pair of groups, every figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// Index of the first group.
    pub a: usize,
    /// Index of the second.
    pub b: usize,
    /// A verdict per figure of [`FIGURES`].
    pub verdicts: Vec<Verdict>,
}

/// The pair `(a, b)` from the groups' estimates: Holm over the figures
/// both can give. `resolve_ns`: the half-width a "no difference" is asked
/// to reach.
pub fn compare_pair(
    a: usize,
    b: usize,
    ea: &[Result<Estimate, Refusal>],
    eb: &[Result<Estimate, Refusal>],
    resolve_ns: f64,
) -> Pair {
    let mut tested = Vec::new();
    let mut p = Vec::new();
    let mut verdicts: Vec<Verdict> = Vec::new();
    for f in 0..FIGURES.len() {
        match (&ea[f], &eb[f]) {
            (Err(why), _) | (_, Err(why)) => verdicts.push(Verdict::NotCompared(why.clone())),
            (Ok(x), Ok(y)) => {
                let se = (x.se * x.se + y.se * y.se).sqrt();
                let diff = y.value - x.value;
                if se <= 0.0 {
                    verdicts.push(Verdict::NotCompared(
                        "no spread to judge by (identical runs, or one sample per run)".into(),
                    ));
                    continue;
                }
                let df = welch_df(x, y);
                // "More" counts runs where a side has several, else samples.
                let units = match (x.runs, y.runs) {
                    (true, false) => x.units,
                    (false, true) => y.units,
                    _ => x.units.min(y.units),
                };
                tested.push((f, diff, se, df, units, x.runs || y.runs));
                p.push(two_sided_p(diff / se, df));
                verdicts.push(Verdict::NotCompared(String::new()));
            }
        }
    }
    for (&(f, diff, se, df, units, runs), (shown, level)) in tested.iter().zip(holm(&p, ALPHA)) {
        let half = t_crit(level, df) * se;
        let (lo, hi) = (diff - half, diff + half);
        verdicts[f] = if shown {
            Verdict::Shown { higher: diff > 0.0, diff, lo, hi, level: 1.0 - level }
        } else {
            // The standard error falls as 1/√n (n runs, or samples of one
            // run: the central limit theorem, and for quantiles their
            // asymptotic normality, Bahadur 1966), so a half-width h at n
            // becomes resolve at n·(h/resolve)².
            let need = units as f64 * (half / resolve_ns).powi(2);
            let more = (need - units as f64).max(0.0).ceil() as u64;
            Verdict::NoDifference {
                diff,
                lo,
                hi,
                level: 1.0 - level,
                more,
                more_unit: if runs { "runs" } else { "samples" },
            }
        };
    }
    Pair { a, b, verdicts }
}

/// Welch–Satterthwaite degrees of freedom of `SE_x² + SE_y²` (F. E.
/// Satterthwaite, Biometrics Bull. 2, 1946); a bootstrap side (infinite
/// df) adds no term.
fn welch_df(x: &Estimate, y: &Estimate) -> f64 {
    let (vx, vy) = (x.se * x.se, y.se * y.se);
    let term = |v: f64, df: f64| if df.is_finite() && df > 0.0 { v * v / df } else { 0.0 };
    let denom = term(vx, x.df) + term(vy, y.df);
    if denom == 0.0 {
        f64::INFINITY
    } else {
        (vx + vy).powi(2) / denom
    }
}

/// How a group's figure `f` prints when it cannot be compared: one run's
/// figure (`>x` when censored), several runs' mean when each has one,
/// else `n/a`.
pub fn plain(g: &Group, f: usize) -> String {
    let figs: Vec<Figure> = g.runs.iter().map(|r| figure_of(&r.column, f)).collect();
    if let Some(b) = figs.iter().find_map(|x| if let Figure::Above(b) = x { Some(*b) } else { None }) {
        return crate::units::Above(b).us(2);
    }
    let values: Vec<f64> = figs.iter().filter_map(|x| x.value()).map(|v| v as f64).collect();
    if values.is_empty() || values.len() < figs.len() {
        return "n/a".into();
    }
    format!("{:.2}", values.iter().sum::<f64>() / values.len() as f64 / 1000.0)
}

/// ns as `12.34 µs`.
pub fn us(ns: f64) -> String {
    format!("{:.2} µs", ns / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(value: f64, se: f64, df: f64, units: u64, runs: bool) -> Result<Estimate, Refusal> {
        Ok(Estimate { value, spread: None, se, df, units, runs })
    }

    /// A run as an imported histogram states it: every figure `us` whole
    /// µs, at a 1 µs resolution.
    fn binned(label: &str, us: u64) -> Run {
        let v = Figure::Value(us * 1000);
        Run {
            column: Column {
                label: label.into(),
                source: "in-kernel self-measurement (cyclictest 2.40)".into(),
                mode: None,
                interval_ns: None,
                samples: 100_000,
                min: v,
                avg: v,
                avg_over: None,
                p50: v,
                p90: v,
                p99: v,
                p99_9: v,
                p99_99: v,
                max: v,
                timeouts_or_overflows: 0,
                lost: None,
                resolution_ns: 1000,
                timeout_ns: None,
                meta: Vec::new(),
                loads: None,
                kernel_config: None,
            },
            resample: None,
        }
    }

    /// Issue 42 §5: three imported runs at 16 µs against three at 19 µs
    /// were "not compared: no spread to judge by". Three bins apart with
    /// the bin as the floor of the uncertainty is a difference.
    #[test]
    fn identical_binned_runs_three_bins_apart_differ() {
        let group = |name: &str, us: u64| Group {
            name: name.into(),
            runs: (0..3).map(|i| binned(&format!("{name}{i}"), us)).collect(),
        };
        let (a, b) = (estimates(&group("a", 16), 1, 0, 0), estimates(&group("b", 19), 1, 1, 0));
        let p = compare_pair(0, 1, &a, &b, 100.0);
        assert!(matches!(p.verdicts[1], Verdict::Shown { higher: true, .. }), "p50: {:?}", p.verdicts[1]);
        // One bin apart is within the rounding of three runs a side.
        let c = estimates(&group("c", 17), 1, 2, 0);
        let p = compare_pair(0, 1, &a, &c, 100.0);
        assert!(matches!(p.verdicts[1], Verdict::NoDifference { .. }), "p50: {:?}", p.verdicts[1]);
    }

    #[test]
    fn a_clear_shift_is_shown_and_an_unclear_one_says_how_many_more_samples() {
        let a: Vec<_> =
            (0..FIGURES.len()).map(|_| est(10_000.0, 100.0, f64::INFINITY, 10_000, false)).collect();
        let mut b = a.clone();
        // avg: 20 SE higher; p50: 0.5 SE higher; the rest equal.
        b[0] = est(12_829.0, 100.0, f64::INFINITY, 10_000, false);
        b[1] = est(10_070.0, 100.0, f64::INFINITY, 10_000, false);
        let p = compare_pair(0, 1, &a, &b, 100.0);
        let Verdict::Shown { higher: true, diff, lo, hi, level } = p.verdicts[0] else {
            panic!("{:?}", p.verdicts[0])
        };
        assert!((diff - 2829.0).abs() < 1e-9 && lo > 0.0 && hi > lo);
        // First of seven Holm steps: level 1 − 0.05/7.
        assert!((level - (1.0 - 0.05 / 7.0)).abs() < 1e-12, "{level}");
        let Verdict::NoDifference { more, more_unit, lo, hi, .. } = p.verdicts[1] else {
            panic!("{:?}", p.verdicts[1])
        };
        assert_eq!(more_unit, "samples");
        // Half-width h at n = 10 000 samples: resolving 100 ns needs
        // n·(h/100)², so "more" is that less n.
        let h = (hi - lo) / 2.0;
        let want = 10_000.0 * (h / 100.0).powi(2) - 10_000.0;
        assert!((more as f64 - want).abs() <= 1.0, "{more} against {want}");
        assert!(lo < 0.0 && hi > 0.0);
    }

    #[test]
    fn several_runs_count_more_in_runs_and_refusals_pass_through() {
        let a: Vec<_> = (0..FIGURES.len()).map(|_| est(10_000.0, 300.0, 2.0, 3, true)).collect();
        let mut b: Vec<_> = (0..FIGURES.len()).map(|_| est(10_100.0, 300.0, 2.0, 3, true)).collect();
        b[6] = Err("b's max is above 8000.00 µs (censored)".into());
        let p = compare_pair(0, 1, &a, &b, 100.0);
        assert!(
            matches!(p.verdicts[0], Verdict::NoDifference { more_unit: "runs", .. }),
            "{:?}",
            p.verdicts[0]
        );
        assert_eq!(p.verdicts[6], Verdict::NotCompared("b's max is above 8000.00 µs (censored)".into()));
    }
}
