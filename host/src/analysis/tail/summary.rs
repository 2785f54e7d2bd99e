//! [`analyse`]: a run's tail model as the report keeps it, [`TailReport`]
//! (the JSON's `tail`, documented with the schema in `crate::report`).

use serde::{Deserialize, Serialize};

use super::checks::{gof_p, halves, second_cause, LEVEL};
use super::decluster::decluster_with;
use super::gpd::{XI_MAX, XI_MIN};
use super::predict::{hours_to_see, probability, Model};
use super::profile::{log_survival_interval, sigma_interval, Est};
use super::store::TailData;
use super::threshold::{candidates, stable, MIN_CLUSTERS};
use crate::analysis::timeline::TimelineReport;

/// How the tail is modelled, in the report's words.
pub const METHOD: &str =
    "peaks over threshold: a generalized Pareto distribution fitted by maximum likelihood \
    to the cluster maxima above the threshold (runs declustering, Ferro-Segers run length), timeouts \
    right-censored at the timeout; 95 % profile-likelihood intervals, the cluster count's Poisson \
    uncertainty added (Coles 2001, ch. 4-5)";

/// The threshold rule, in the report's words (see `threshold`).
pub const RULE: &str =
    "the lowest of the candidate thresholds with about 1000, 707, 500, ... 44 exceedances (at \
    most a tenth of the samples) whose shape's 95 % interval overlaps every higher candidate's (at least \
    two higher ones), with at least 40 clusters, and whose fit passes the goodness-of-fit test (else the \
    next such one up)";

/// What every extrapolated figure assumes.
pub const CAVEAT: &str =
    "extrapolated from this run's worst latencies: it assumes that the conditions of the run \
    (load, configuration, the target's state, what ran beside it) hold over the whole period and that \
    latency spikes come in independent clusters as they did here; it is no guarantee, and a rarer cause \
    of latency that this run never met is not in it";

/// An estimate with its 95 % interval: `null` at an end that the data do
/// not bound (or an estimate that is infinite).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The estimate.
    pub estimate: Option<f64>,
    /// The lower end of the 95 % interval.
    pub lo: Option<f64>,
    /// The upper end.
    pub hi: Option<f64>,
}

impl Interval {
    fn of(e: Est) -> Self {
        let f = |v: f64| v.is_finite().then_some(v);
        Interval { estimate: f(e.estimate), lo: e.lo.and_then(f), hi: e.hi.and_then(f) }
    }

    fn scaled(e: Est, k: f64) -> Self {
        Self::of(Est { estimate: e.estimate * k, lo: e.lo.map(|v| v * k), hi: e.hi.map(|v| v * k) })
    }
}

/// What the model says of one latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitTail {
    /// Where it comes from: `max` (`--max`), `exceedance 200us`
    /// (`max_exceedance_per_hour`), `measured max`.
    pub name: String,
    /// The latency, ns.
    pub latency_ns: u64,
    /// The probability that an hour of running exceeds it at least once.
    pub exceed_per_hour: Option<Interval>,
    /// The expected clusters above it per hour.
    pub clusters_per_hour: Option<Interval>,
    /// How long a run must be to exceed it with 95 % probability, s.
    pub run_for_95_s: Option<Interval>,
    /// How the figures were made when not from the model, or why none.
    pub note: Option<String>,
}

/// The max a run of the horizon's length would likely show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HorizonTail {
    /// The horizon (`--horizon`), ns.
    pub duration_ns: u64,
    /// The median of that run's max, ns.
    pub likely_max_ns: Option<Interval>,
}

/// The halves' stationarity check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HalvesReport {
    /// Where the halves meet, s from the start.
    pub split_s: u64,
    /// Clusters in each half.
    pub clusters: [u64; 2],
    /// Samples in each half (from the timeline).
    pub samples: [u64; 2],
    /// The binomial test's p-value of the clusters' split.
    pub rate_p: f64,
    /// The likelihood-ratio test's p-value of one tail for both halves;
    /// `null` with fewer than 15 clusters in a half.
    pub shape_p: Option<f64>,
}

/// The checks behind the fit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TailChecks {
    /// The goodness-of-fit test's bootstrap p-value (Anderson-Darling).
    pub goodness_of_fit_p: Option<f64>,
    /// The halves' check; `null` without a timeline of at least 2 rows.
    pub halves: Option<HalvesReport>,
    /// The level each test refuses at.
    pub level: f64,
}

/// One candidate threshold of the rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateReport {
    /// The threshold, ns.
    pub threshold_ns: u64,
    /// Its exceedances.
    pub exceedances: u64,
    /// Its clusters.
    pub clusters: u64,
    /// Its shape, `null` when not fitted (too few clusters).
    pub shape: Option<Interval>,
}

/// A point of the fitted tail: the probability that a cluster maximum
/// exceeds `latency_ns`, given it exceeds the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// The latency, ns.
    pub latency_ns: f64,
    /// The fitted survival.
    pub survival: f64,
    /// Its 95 % interval's low end.
    pub lo: f64,
    /// Its high end.
    pub hi: f64,
}

/// The report's `tail`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailReport {
    /// How it was modelled ([`METHOD`]).
    pub method: String,
    /// How the threshold was chosen ([`RULE`]).
    pub threshold_rule: String,
    /// The threshold, ns; `null` when none could be chosen.
    pub threshold_ns: Option<u64>,
    /// Samples above it, timeouts included.
    pub exceedances: u64,
    /// Of them, timeouts (right-censored at the timeout).
    pub censored: u64,
    /// Their clusters.
    pub clusters: u64,
    /// The runs declustering's run length, sequence numbers.
    pub run_length: Option<u64>,
    /// The extremal index (Ferro-Segers intervals estimator).
    pub extremal_index: Option<f64>,
    /// Samples above a level per cluster above it, on average: 1 / the
    /// extremal index. Every "once per" figure counts clusters, so an hour
    /// at the once-per-hour level holds about this many samples above it.
    /// Absent in reports of older versions.
    #[serde(default)]
    pub samples_per_cluster: Option<f64>,
    /// The GPD shape ξ.
    pub shape: Option<Interval>,
    /// The GPD scale σ, ns.
    pub scale_ns: Option<Interval>,
    /// The latency exceeded once per hour, ns.
    pub per_hour: Option<Interval>,
    /// Once per day, ns.
    pub per_day: Option<Interval>,
    /// Once per 10⁹ samples, ns.
    pub per_1e9_samples: Option<Interval>,
    /// The limits' latencies.
    pub limits: Vec<LimitTail>,
    /// The measured max (the timeout when samples timed out).
    pub measured_max: Option<LimitTail>,
    /// The horizon's likely max.
    pub horizon: Option<HorizonTail>,
    /// The horizon asked for (`--horizon`), ns.
    #[serde(default)]
    pub horizon_ns: u64,
    /// The checks.
    pub checks: TailChecks,
    /// The candidate thresholds, lowest first.
    pub candidates: Vec<CandidateReport>,
    /// The fitted tail for the plot.
    pub curve: Vec<CurvePoint>,
    /// What the extrapolation assumes ([`CAVEAT`]); `null` when refused.
    pub caveat: Option<String>,
    /// `null`, or why no tail figure is given.
    pub refused: Option<String>,
    /// The run's worst samples the model is made from.
    pub samples: TailData,
}

/// What [`analyse`] is given: the run's figures and what to ask.
#[derive(Debug, Clone)]
pub struct TailInput<'a> {
    /// Samples (responses and timeouts).
    pub samples: u64,
    /// Timeouts.
    pub timeouts: u64,
    /// The timeout, ns.
    pub timeout_ns: u64,
    /// The run's length on the probe's clock, ns.
    pub duration_ns: Option<u64>,
    /// The worst samples.
    pub data: &'a TailData,
    /// The per-second timeline (for the halves).
    pub timeline: Option<&'a TimelineReport>,
    /// Latencies to report on, each with its name.
    pub limits: &'a [(String, u64)],
    /// The largest measured latency.
    pub max_measured_ns: Option<u64>,
    /// The horizon, ns.
    pub horizon_ns: u64,
}

const NS_PER_H: f64 = 3.6e12;

/// Samples a cluster holds on average: 1 / θ.
fn per_cluster(theta: f64) -> Option<f64> {
    (theta > 0.0 && theta.is_finite()).then(|| 1.0 / theta.min(1.0))
}

/// The tail model of a run: the fit and its answers, or the refusal.
pub fn analyse(i: &TailInput<'_>) -> TailReport {
    let mut r = TailReport {
        method: METHOD.into(),
        threshold_rule: RULE.into(),
        threshold_ns: None,
        exceedances: 0,
        censored: 0,
        clusters: 0,
        run_length: None,
        extremal_index: None,
        samples_per_cluster: None,
        shape: None,
        scale_ns: None,
        per_hour: None,
        per_day: None,
        per_1e9_samples: None,
        limits: Vec::new(),
        measured_max: None,
        horizon: None,
        horizon_ns: i.horizon_ns,
        checks: TailChecks { level: LEVEL, ..TailChecks::default() },
        candidates: Vec::new(),
        curve: Vec::new(),
        caveat: None,
        refused: None,
        samples: i.data.clone(),
    };
    if let Err(why) = fill(i, &mut r) {
        r.refused = Some(why);
        r.caveat = None;
        r.per_hour = None;
        r.per_day = None;
        r.per_1e9_samples = None;
        r.horizon = None;
        r.curve.clear();
        for l in r.limits.iter_mut().chain(r.measured_max.as_mut()) {
            l.exceed_per_hour = None;
            l.clusters_per_hour = None;
            l.run_for_95_s = None;
        }
    }
    r
}

fn fill(i: &TailInput<'_>, r: &mut TailReport) -> Result<(), String> {
    let hours = match i.duration_ns {
        Some(d) if d > 0 => d as f64 / NS_PER_H,
        _ => return Err("the run's length on the probe's clock is unknown, so no rate per hour".into()),
    };
    let kept = i.data.samples(i.timeout_ns);
    if i.timeouts as usize >= kept.len() && !kept.is_empty() {
        return Err(format!(
            "{} of the {} samples timed out, as many as the tail keeps: the tail is all censored (raise \
             --timeout so that the slow answers are timed)",
            i.timeouts, i.samples
        ));
    }
    let cands = candidates(&kept, i.samples);
    r.candidates = cands
        .iter()
        .map(|c| CandidateReport {
            threshold_ns: c.u,
            exceedances: c.exceedances as u64,
            clusters: c.clusters.maxima.len() as u64,
            shape: c.xi.map(Interval::of),
        })
        .collect();
    let stable = stable(&cands);
    if let Err(e) = &stable {
        if cands.is_empty() {
            return Err(format!(
                "too few samples: {} (the tail fit needs at least {} clusters of exceedances above the \
                 run's p90; run longer)",
                i.samples, MIN_CLUSTERS
            ));
        }
        if e.starts_with("too few") {
            return Err(e.clone());
        }
    }
    // A second cause above the tail bends every candidate's fit (the
    // stability and the goodness of fit would only say "not settled" or
    // "poor fit"): where the run is long enough to check a tail at all,
    // it is named first, at the lowest fitted candidate.
    if let Some(low) = cands.iter().find(|c| c.mle.is_some()) {
        if let Some(s) = second_cause(&low.excesses) {
            set_threshold(r, low);
            return Err(second_cause_words(&s, low.u, low.clusters.maxima.len()));
        }
    }
    let stable = stable?;
    let (j, p) = choose(i, &cands, &stable, r)?;
    let c = &cands[j];
    let m = c.mle.expect("a chosen candidate is fitted");
    r.checks.goodness_of_fit_p = Some(p);
    set_threshold(r, c);
    r.shape = c.xi.map(Interval::of);
    r.scale_ns = Some(Interval::of(sigma_interval(&c.excesses, &m)));
    let model = Model { u: c.u, e: &c.excesses, m, clusters: r.clusters, hours };
    // The figures for the latencies asked about, made before any check so
    // that a refusal still lists them (without figures).
    let max_latency = if i.timeouts > 0 { Some(i.timeout_ns) } else { i.max_measured_ns };
    r.limits = i.limits.iter().map(|(n, x)| limit_tail(&model, &kept, i.samples, n, *x)).collect();
    r.measured_max = max_latency.map(|x| {
        let name = if i.timeouts > 0 { "measured max (above the timeout)" } else { "measured max" };
        limit_tail(&model, &kept, i.samples, name, x)
    });

    if let Some(t) = i.timeline.filter(|t| t.len() >= 2) {
        let mid = t.len() / 2;
        let split_s = (mid as u64).saturating_mul(t.row_s.max(1));
        let s = (t.samples[..mid].iter().sum::<u64>(), t.samples[mid..].iter().sum::<u64>());
        let h = halves(&c.clusters.maxima, c.u, &m, split_s.saturating_mul(1_000_000_000), s);
        r.checks.halves = Some(HalvesReport {
            split_s,
            clusters: [h.clusters.0, h.clusters.1],
            samples: [s.0, s.1],
            rate_p: h.rate_p,
            shape_p: h.shape_p,
        });
        if h.rate_p < LEVEL || h.shape_p.is_some_and(|p| p < LEVEL) {
            return Err(format!(
                "not stationary: the run's halves disagree (before {split_s} s: {} clusters in {} samples; \
                 after: {} in {}; rate p = {:.4}, tail shape p = {}): the conditions changed during the run",
                h.clusters.0,
                s.0,
                h.clusters.1,
                s.1,
                h.rate_p,
                h.shape_p.map_or_else(|| "not tested".into(), |p| format!("{p:.4}"))
            ));
        }
    }
    let per_1e9 = i.samples as f64 / hours / 1e9;
    r.per_hour = model.level(1.0).map(Interval::of);
    r.per_day = model.level(1.0 / 24.0).map(Interval::of);
    r.per_1e9_samples = model.level(per_1e9).map(Interval::of);
    let th = i.horizon_ns as f64 / NS_PER_H;
    r.horizon = (th > 0.0).then(|| HorizonTail {
        duration_ns: i.horizon_ns,
        likely_max_ns: model.level(2f64.ln() / th).map(Interval::of),
    });
    r.curve = curve(&model, &kept, i.limits);
    r.caveat = Some(CAVEAT.into());
    Ok(())
}

/// The threshold among the `stable` candidates: the lowest whose fit
/// passes the goodness of fit, its index and p-value; or the refusal (a
/// second cause, or no fit), with the threshold it was judged at in `r`.
fn choose(
    i: &TailInput<'_>,
    cands: &[super::threshold::Candidate],
    stable: &[usize],
    r: &mut TailReport,
) -> Result<(usize, f64), String> {
    // The lowest stable candidate whose fit passes the goodness of fit.
    let mut first = None;
    let mut chosen = None;
    for &j in stable {
        let c = &cands[j];
        let m = c.mle.expect("a stable candidate is fitted");
        if m.xi <= XI_MIN + 1e-3 || m.xi >= XI_MAX - 1e-3 {
            first.get_or_insert((j, None));
            continue;
        }
        let p = gof_p(&c.excesses, &m, i.samples ^ c.u.rotate_left(17));
        first.get_or_insert((j, Some(p)));
        if p > LEVEL {
            chosen = Some((j, p));
            break;
        }
    }
    let Some(chosen) = chosen else {
        let (j, p) = first.expect("at least one stable candidate");
        let c = &cands[j];
        set_threshold(r, c);
        r.checks.goodness_of_fit_p = p;
        let m = c.mle.expect("fitted");
        return Err(match p {
            None => format!(
                "poor fit: the shape of the fit above {} is at the edge of its range (ξ = {:.2}): the tail is \
                 no generalized Pareto one (a hard upper end, or lumps)",
                crate::units::format_ns(c.u),
                m.xi
            ),
            Some(p) => format!(
                "poor fit: the generalized Pareto distribution does not fit the {} cluster maxima above {} \
                 (Anderson-Darling bootstrap p = {p:.3}), nor at any higher stable threshold: the tail has more \
                 than one cause, or the latencies are too coarse",
                c.clusters.maxima.len(),
                crate::units::format_ns(c.u)
            ),
        });
    };
    Ok(chosen)
}

/// The chosen (or refused) threshold's counts into `r`.
fn set_threshold(r: &mut TailReport, c: &super::threshold::Candidate) {
    r.threshold_ns = Some(c.u);
    r.exceedances = c.exceedances as u64;
    r.censored = c.censored as u64;
    r.clusters = c.clusters.maxima.len() as u64;
    r.run_length = Some(c.clusters.run_length);
    r.extremal_index = Some(c.clusters.theta);
    r.samples_per_cluster = per_cluster(c.clusters.theta);
}

/// The refusal of a tail with a second cause, in a user's words.
fn second_cause_words(s: &super::checks::SecondCause, u: u64, clusters: usize) -> String {
    let from = crate::units::format_ns(u + s.from.floor() as u64);
    let below = crate::units::format_ns(u + s.below.round() as u64);
    format!(
        "two causes: the {k} worst of the {clusters} latency spikes above {ut} (from {from} up) stand apart \
         from the rest, whose tail ends about {below}; they are a second, rarer cause (a stall, an interrupt, \
         another load), and one fit of both would misplace every per-hour figure (test p = {p}): find and \
         remove what makes the latencies above {below}, or run long enough to see {MIN_CLUSTERS} or more of them \
         so that their own tail can be fitted",
        k = s.k,
        ut = crate::units::format_ns(u),
        p = if s.ln_p < -690.0 { "below 1e-300".to_string() } else { format!("{:.1e}", s.ln_p.exp()) }
    )
}

/// The model's figures for latency `x`; below the threshold, the run's own
/// clusters above `x` (no extrapolation).
fn limit_tail(model: &Model<'_>, kept: &[super::Exceedance], samples: u64, name: &str, x: u64) -> LimitTail {
    let mut l = LimitTail {
        name: name.into(),
        latency_ns: x,
        exceed_per_hour: None,
        clusters_per_hour: None,
        run_for_95_s: None,
        note: None,
    };
    let rate = if x > model.u {
        model.rate(x as f64)
    } else {
        let complete = kept.len() as u64 >= samples;
        if !complete && kept.iter().all(|e| e.key() > (false, x)) {
            l.note = Some(format!(
                "far below the tail: more than {} samples exceed it, so it is exceeded all the time",
                kept.len()
            ));
            return l;
        }
        let above: Vec<_> = kept.iter().filter(|e| e.key() > (false, x)).copied().collect();
        let n = decluster_with(&above, Some(above.len() as f64 / samples.max(1) as f64)).maxima.len() as f64;
        l.note = Some(format!(
            "below the threshold: counted from the run's own {n} clusters above it, not extrapolated"
        ));
        let lam = n / model.hours;
        let d = 1.959_964 / n.max(1.0).sqrt();
        Est {
            estimate: lam,
            lo: Some(if n > 0.0 { lam * (-d).exp() } else { 0.0 }),
            hi: Some(lam.max(3.0 / model.hours) * d.exp()),
        }
    };
    l.exceed_per_hour = Some(Interval::of(probability(&rate)));
    l.clusters_per_hour = Some(Interval::of(rate));
    l.run_for_95_s = Some(Interval::scaled(hours_to_see(&rate), 3600.0));
    l
}

/// The fitted survival over the threshold at a few latencies from the
/// threshold to past the largest kept latency and limit.
fn curve(model: &Model<'_>, kept: &[super::Exceedance], limits: &[(String, u64)]) -> Vec<CurvePoint> {
    let u = model.u as f64;
    let top =
        kept.iter().map(|e| e.latency_ns).chain(limits.iter().map(|l| l.1)).fold(u, |m, v| m.max(v as f64));
    let span = (top - u).max(1.0) * 1.25;
    (1..=10)
        .map(|k| {
            let x = u + span * k as f64 / 10.0;
            let s = log_survival_interval(model.e, &model.m, x - u);
            CurvePoint {
                latency_ns: x,
                survival: s.estimate.exp(),
                lo: s.lo.map_or(0.0, f64::exp),
                hi: s.hi.map_or(1.0, f64::exp),
            }
        })
        .collect()
}
