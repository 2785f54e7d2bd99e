//! The tail model against synthetic data with known tails: estimates in
//! their intervals, the intervals' coverage over 200 data sets per case,
//! and per-hour predictions against a run 20 times longer. Seeded,
//! deterministic; sized to run in seconds in a debug build.

use super::checks::{GpdDraw, SplitMix};
use super::*;
use crate::analysis::timeline::TimelineRecorder;

/// Coverage of the shape's and the scale's 95 % intervals over `sets`
/// data sets of `n` excesses of GPD(σ, ξ), censored above `censor` (a
/// survival) when given.
fn coverage(xi: f64, sigma: f64, n: usize, sets: usize, censor: Option<f64>, seed: u64) -> (f64, f64) {
    let mut rng = SplitMix(seed);
    let c = censor.map(|q| super::gpd::excess_at(q, sigma, xi));
    let (mut in_xi, mut in_sigma) = (0, 0);
    for _ in 0..sets {
        let mut e = Excesses::default();
        for _ in 0..n {
            let v = rng.gpd(sigma, xi);
            match c {
                Some(c) if v > c => e.c.push(c),
                _ => e.y.push(v),
            }
        }
        let m = fit(&e).expect("fits");
        let ix = xi_interval(&e, &m);
        let is = sigma_interval(&e, &m);
        assert!(
            ix.contains(m.xi) && is.contains(m.sigma),
            "estimate outside its interval: {m:?} {ix:?} {is:?}"
        );
        in_xi += usize::from(ix.contains(xi));
        in_sigma += usize::from(is.contains(sigma));
    }
    (in_xi as f64 / sets as f64, in_sigma as f64 / sets as f64)
}

fn assert_coverage(name: &str, (cx, cs): (f64, f64)) {
    eprintln!("{name}: coverage shape {cx:.3}, scale {cs:.3}");
    assert!((0.90..=0.99).contains(&cx), "{name}: shape interval coverage {cx}");
    assert!((0.90..=0.99).contains(&cs), "{name}: scale interval coverage {cs}");
}

#[test]
fn shape_minus_0_2_intervals_cover() {
    assert_coverage("xi -0.2", coverage(-0.2, 20_000.0, 200, 200, None, 11));
}

#[test]
fn shape_0_intervals_cover() {
    assert_coverage("xi 0", coverage(0.0, 5_000.0, 200, 200, None, 12));
}

#[test]
fn shape_0_3_intervals_cover() {
    assert_coverage("xi 0.3", coverage(0.3, 8_000.0, 200, 200, None, 13));
}

#[test]
fn censored_at_a_timeout_intervals_cover() {
    // 5 % of the excesses beyond the timeout: censored, not dropped.
    assert_coverage("xi 0.2, 5 % censored", coverage(0.2, 8_000.0, 200, 200, Some(0.05), 14));
}

#[test]
fn censoring_is_neither_dropping_nor_putting_at_the_timeout() {
    let (xi, sigma) = (0.25, 10_000.0);
    let mut rng = SplitMix(5);
    let c = super::gpd::excess_at(0.1, sigma, xi);
    let mut e = Excesses::default();
    for _ in 0..3_000 {
        let v = rng.gpd(sigma, xi);
        if v > c {
            e.c.push(c);
        } else {
            e.y.push(v);
        }
    }
    let m = fit(&e).expect("fits");
    assert!((m.xi - xi).abs() < 0.07 && (m.sigma / sigma - 1.0).abs() < 0.07, "{m:?}");
    // Dropping the timeouts, or putting them at the timeout, thins the tail.
    let dropped = fit(&Excesses { y: e.y.clone(), c: vec![] }).expect("fits");
    let at = fit(&Excesses { y: e.y.iter().copied().chain(e.c.iter().copied()).collect(), c: vec![] })
        .expect("fits");
    assert!(dropped.xi < xi - 0.2 && at.xi < xi - 0.1, "dropped {dropped:?}, at the timeout {at:?}");
}

/// A synthetic run: `n` samples 1 ms apart, each a body latency or (with
/// probability `p_tail`) a tail one `base + GPD(σ, ξ)`; with `burst > 1`
/// a tail event hits `burst` consecutive samples, decaying (clustered
/// spikes); latencies above `timeout` are timeouts.
struct Sim {
    xi: f64,
    sigma: f64,
    base: f64,
    p_tail: f64,
    burst: usize,
    timeout: u64,
    /// The body is `base · (0.5 + body_top · U)`; with `body_top < 0`,
    /// `base · (0.5 + |body_top| · (1 − √U))`, thinning out towards its top.
    body_top: f64,
}

struct Run {
    store: TailStore,
    timeline: TimelineRecorder,
    samples: u64,
    timeouts: u64,
    max: u64,
}

impl Sim {
    fn run(&self, n: u64, seed: u64) -> Run {
        let mut rng = SplitMix(seed);
        let mut r = Run {
            store: TailStore::new(),
            timeline: TimelineRecorder::new(),
            samples: 0,
            timeouts: 0,
            max: 0,
        };
        let mut i = 0u64;
        while i < n {
            let at = i * 1_000_000;
            if rng.uniform() < self.p_tail {
                let peak = self.base + rng.gpd(self.sigma, self.xi);
                for j in 0..self.burst as u64 {
                    if i + j >= n {
                        break;
                    }
                    let v = if j == 0 {
                        peak
                    } else {
                        self.base * 0.8 + (peak - self.base) * 0.5f64.powi(j as i32) * rng.uniform()
                    };
                    self.push(&mut r, i + j, (i + j) * 1_000_000, v);
                }
                i += self.burst as u64;
                continue;
            }
            // A body whose density falls to 0 at its top (a negative
            // `body_top`), or a uniform one.
            let body = if self.body_top < 0.0 {
                self.base * (0.5 - self.body_top * (1.0 - rng.uniform().sqrt()))
            } else {
                self.base * (0.5 + self.body_top * rng.uniform())
            };
            self.push(&mut r, i, at, body);
            i += 1;
        }
        r
    }

    fn push(&self, r: &mut Run, seq: u64, at: u64, v: f64) {
        let v = v.round() as u64;
        r.samples += 1;
        if v > self.timeout {
            r.timeouts += 1;
            r.store.push(seq, at, self.timeout, true);
            r.timeline.push(at, None);
        } else {
            r.max = r.max.max(v);
            r.store.push(seq, at, v, false);
            r.timeline.push(at, Some(v));
        }
    }
}

fn analyse_run(r: &Run, timeout: u64, limits: &[(String, u64)], n: u64) -> TailReport {
    let data = r.store.data();
    let t = r.timeline.report();
    analyse(&TailInput {
        samples: r.samples,
        timeouts: r.timeouts,
        timeout_ns: timeout,
        duration_ns: Some(n * 1_000_000),
        data: &data,
        timeline: Some(&t),
        limits,
        max_measured_ns: Some(r.max),
        horizon_ns: 24 * 3_600_000_000_000,
    })
}

/// The true clusters per hour above `x` of a [`Sim`] with 1 ms samples.
fn true_rate(s: &Sim, x: f64) -> f64 {
    let events_per_hour = 3.6e6 * s.p_tail / (1.0 + s.p_tail * (s.burst as f64 - 1.0));
    events_per_hour * survival(x - s.base, s.sigma, s.xi)
}

#[test]
fn body_plus_tail_is_fitted_above_the_body_and_predicts_a_longer_run() {
    let s = Sim {
        xi: 0.1,
        sigma: 20_000.0,
        base: 50_000.0,
        p_tail: 0.004,
        burst: 1,
        timeout: 10_000_000,
        body_top: 0.3,
    };
    let n = 200_000; // 200 s
    let r = s.run(n, 21);
    let limit = 200_000u64;
    let t = analyse_run(&r, s.timeout, &[("max".into(), limit)], n);
    assert_eq!(t.refused, None, "{t:#?}");
    let u = t.threshold_ns.expect("threshold");
    assert!(u as f64 >= s.base, "threshold {u} in the body");
    let shape = t.shape.expect("shape");
    assert!(shape.lo.unwrap() <= s.xi && s.xi <= shape.hi.unwrap(), "{shape:?}");
    // The scale at threshold u is σ + ξ(u − base) (Coles 2001, eq. 4.9).
    let sigma_u = s.sigma + s.xi * (u as f64 - s.base);
    let scale = t.scale_ns.expect("scale");
    assert!(scale.lo.unwrap() <= sigma_u && sigma_u <= scale.hi.unwrap(), "{scale:?} vs {sigma_u}");
    // Per hour: against the truth, and against a run 20 times longer.
    let l = &t.limits[0];
    let rate = l.clusters_per_hour.expect("rate");
    let truth = true_rate(&s, limit as f64);
    assert!(rate.lo.unwrap() <= truth && truth <= rate.hi.unwrap(), "{rate:?} vs {truth}");
    let long_n = 20 * n;
    let long = s.run(long_n, 99);
    let seen = {
        let d = long.store.data().samples(s.timeout);
        let above: Vec<_> = d.into_iter().filter(|e| e.latency_ns > limit).collect();
        decluster(&above).maxima.len() as f64 / (long_n as f64 / 3.6e6)
    };
    assert!(rate.lo.unwrap() <= seen && seen <= rate.hi.unwrap(), "{rate:?} vs the long run's {seen}");
    let p = l.exceed_per_hour.expect("p");
    assert!(p.lo.unwrap() <= p.estimate.unwrap() && p.estimate.unwrap() <= p.hi.unwrap());
    // The level exceeded once per hour: the true one in its interval.
    let ph = t.per_hour.expect("per hour");
    let events = true_rate(&s, s.base);
    let level = s.base + super::gpd::excess_at(1.0 / events, s.sigma, s.xi);
    assert!(ph.lo.unwrap() <= level && level <= ph.hi.unwrap(), "{ph:?} vs {level}");
    assert!(t.caveat.is_some());
}

/// A case run through the threshold rule (candidates, declustering,
/// fits, stability, goodness of fit) `sets` times: how many were fitted,
/// how many thresholds fell in the body, and the coverage of the shape
/// and of the scale at the chosen threshold, `σ + ξ(u − base)`.
fn rule_coverage(s: &Sim, n: u64, sets: u64, seed: u64) -> (u64, u64, f64, f64) {
    let (mut cx, mut cs, mut chosen, mut below) = (0u64, 0u64, 0u64, 0u64);
    for k in 0..sets {
        let r = s.run(n, seed + k);
        let kept = r.store.data().samples(s.timeout);
        let c = super::threshold::candidates(&kept, r.samples);
        let Ok(stable) = super::threshold::stable(&c) else { continue };
        // As `analyse`: the lowest stable candidate whose fit passes.
        let Some(&j) = stable.iter().find(|&&j| {
            let m = c[j].mle.expect("fitted");
            super::checks::gof_p(&c[j].excesses, &m, k) > super::checks::LEVEL
        }) else {
            continue;
        };
        let c = &c[j];
        let m = c.mle.expect("fitted");
        chosen += 1;
        below += u64::from((c.u as f64) < s.base);
        let sigma_u = s.sigma + s.xi * (c.u as f64 - s.base).max(0.0);
        cx += u64::from(c.xi.expect("shape").contains(s.xi));
        cs += u64::from(sigma_interval(&c.excesses, &m).contains(sigma_u));
    }
    (chosen, below, cx as f64 / chosen.max(1) as f64, cs as f64 / chosen.max(1) as f64)
}

#[test]
fn body_plus_tail_at_the_tail_start_covers() {
    // 200 runs of 4000 samples: a body of 25..40 µs, 5 % in a tail of
    // 50 µs + GPD(0.2, 15 µs); the samples above 50 µs fitted.
    let s = Sim {
        xi: 0.2,
        sigma: 15_000.0,
        base: 50_000.0,
        p_tail: 0.05,
        burst: 1,
        timeout: 100_000_000,
        body_top: 0.3,
    };
    let (mut cx, mut cs) = (0, 0);
    for k in 0..200 {
        let r = s.run(4_000, 2_000 + k);
        let kept = r.store.data().samples(s.timeout);
        let above: Vec<_> = kept.into_iter().filter(|e| e.latency_ns > 50_000).collect();
        let c = decluster_with(&above, Some(above.len() as f64 / r.samples as f64));
        let e = super::threshold::excesses(&c.maxima, 50_000);
        let m = fit(&e).expect("fits");
        cx += usize::from(xi_interval(&e, &m).contains(s.xi));
        cs += usize::from(sigma_interval(&e, &m).contains(s.sigma));
    }
    assert_coverage("body plus tail", (cx as f64 / 200.0, cs as f64 / 200.0));
}

#[test]
fn the_threshold_rule_passes_the_body_by() {
    // 8 % of 5000 samples in the tail: the lowest candidate (500
    // exceedances) reaches into the body, which the rule must pass by.
    // Its intervals' coverage after the choice is printed, not asserted:
    // choosing the threshold from the data costs some of it (about 0.90
    // for the shape and 0.88 for the scale over 200 such runs when this
    // was written), and 200 runs of the rule take minutes in a debug build.
    // On runs this short the rule refuses about one in five (instability
    // or fit): it refuses rather than guesses.
    let s = Sim {
        xi: 0.2,
        sigma: 15_000.0,
        base: 50_000.0,
        p_tail: 0.08,
        burst: 1,
        timeout: 100_000_000,
        body_top: 0.3,
    };
    let (chosen, below, cx, cs) = rule_coverage(&s, 5_000, 30, 1_000);
    eprintln!(
        "threshold rule: {chosen} of 30 fitted, {below} in the body; coverage shape {cx:.3}, scale {cs:.3}"
    );
    assert!(chosen >= 20, "the rule refused {} of 30 sound runs", 30 - chosen);
    assert_eq!(below, 0, "thresholds in the body");
}

/// Clustered spikes, as a queue behind a slow answer makes them: events
/// at random places, each 1–5 consecutive exceedances whose worst is
/// `u + GPD(σ, ξ)`, the others a random share of it.
fn clustered(xi: f64, sigma: f64, events: usize, rng: &mut SplitMix) -> Vec<Exceedance> {
    let mut v = Vec::new();
    let mut seq = 0u64;
    for _ in 0..events {
        seq += 20 + (-rng.uniform().ln() * 2_000.0) as u64;
        let size = 1 + (rng.uniform() * 5.0) as u64;
        let worst = (rng.uniform() * size as f64) as u64;
        let peak = rng.gpd(sigma, xi);
        for j in 0..size {
            let x = if j == worst { peak } else { peak * rng.uniform() * 0.9 };
            let lat = 100_000 + x.round().max(1.0) as u64;
            v.push(Exceedance {
                seq: seq + j,
                at_ns: (seq + j) * 1_000_000,
                latency_ns: lat,
                censored: false,
            });
        }
        seq += size;
    }
    v
}

#[test]
fn clustered_spikes_are_declustered_and_their_intervals_cover() {
    let (xi, sigma) = (0.15, 10_000.0);
    let mut rng = SplitMix(31);
    let (mut cx, mut cs, mut clusters, mut exceedances) = (0, 0, 0usize, 0usize);
    let sets = 200;
    for _ in 0..sets {
        let ex = clustered(xi, sigma, 150, &mut rng);
        let c = decluster(&ex);
        clusters += c.maxima.len();
        exceedances += ex.len();
        let e = super::threshold::excesses(&c.maxima, 100_000);
        let m = fit(&e).expect("fits");
        cx += usize::from(xi_interval(&e, &m).contains(xi));
        cs += usize::from(sigma_interval(&e, &m).contains(sigma));
    }
    let size = exceedances as f64 / clusters as f64;
    eprintln!(
        "clustered: mean cluster size {size:.2} (true 3), coverage shape {}, scale {}",
        cx as f64 / 200.0,
        cs as f64 / 200.0
    );
    assert!((2.6..=3.2).contains(&size), "cluster size {size}");
    assert_coverage("clustered spikes", (cx as f64 / sets as f64, cs as f64 / sets as f64));
}

#[test]
fn clustered_runs_count_clusters_per_hour_not_exceedances() {
    let s = Sim {
        xi: 0.1,
        sigma: 20_000.0,
        base: 50_000.0,
        p_tail: 0.002,
        burst: 4,
        timeout: 10_000_000,
        body_top: 0.3,
    };
    let n = 300_000;
    let r = s.run(n, 41);
    let limit = 150_000u64;
    let t = analyse_run(&r, s.timeout, &[("max".into(), limit)], n);
    assert_eq!(t.refused, None, "{t:#?}");
    // At the chosen threshold (63 µs here, above most of a burst's followers) θ is about 0.9.
    assert!(t.extremal_index.expect("theta") < 0.95 && t.clusters < t.exceedances, "{:?}", t.extremal_index);
    // What the per-hour words count: clusters, each about 1/θ samples.
    let per = t.samples_per_cluster.expect("samples per cluster");
    assert!((per - 1.0 / t.extremal_index.unwrap()).abs() < 1e-12 && per > 1.1, "{per}");
    let text = crate::report::tail::text(&t);
    assert!(text.contains("counts clusters of exceedances, not samples"), "{text}");
    assert!(
        text.contains(&format!("about {:.2}", per).trim_end_matches('0').trim_end_matches('.').to_string()),
        "{text}"
    );
    assert!(t.clusters * 10 < t.exceedances * 9, "{} clusters of {}", t.clusters, t.exceedances);
    let rate = t.limits[0].clusters_per_hour.expect("rate");
    let truth = true_rate(&s, limit as f64);
    assert!(rate.lo.unwrap() <= truth && truth <= rate.hi.unwrap(), "{rate:?} vs {truth}");
}

#[test]
fn a_run_whose_halves_differ_is_refused() {
    // The second half's tail is three times as frequent.
    let mut s = Sim {
        xi: 0.1,
        sigma: 20_000.0,
        base: 50_000.0,
        p_tail: 0.003,
        burst: 1,
        timeout: 10_000_000,
        body_top: 0.3,
    };
    let n = 100_000;
    let mut r = s.run(n, 51);
    s.p_tail = 0.009;
    let second = s.run(n, 52);
    for e in second.store.data().samples(s.timeout) {
        r.store.push(e.seq + n, e.at_ns + n * 1_000_000, e.latency_ns, e.censored);
    }
    let t2 = second.timeline.report();
    for (i, &c) in t2.samples.iter().enumerate() {
        for k in 0..c {
            r.timeline.push((n / 1000 + i as u64) * 1_000_000_000 + k, Some(1));
        }
    }
    r.samples += second.samples;
    let t = analyse_run(&r, s.timeout, &[], 2 * n);
    let why = t.refused.expect("refused");
    assert!(why.starts_with("not stationary"), "{why}");
    assert!(t.per_hour.is_none() && t.caveat.is_none());
}

#[test]
fn too_few_and_poorly_fitting_tails_are_refused_with_the_reason() {
    let s = Sim {
        xi: 0.1,
        sigma: 20_000.0,
        base: 50_000.0,
        p_tail: 0.003,
        burst: 1,
        timeout: 10_000_000,
        body_top: 0.3,
    };
    let r = s.run(600, 61);
    let t = analyse_run(&r, s.timeout, &[("max".into(), 100_000)], 600);
    let why = t.refused.expect("refused");
    assert!(why.starts_with("too few"), "{why}");
    assert!(t.limits.iter().all(|l| l.exceed_per_hour.is_none()));
    // Two tails in one: a ξ = −0.5 one up to 90 µs and a far one at 1 ms.
    let mut r =
        Run { store: TailStore::new(), timeline: TimelineRecorder::new(), samples: 0, timeouts: 0, max: 0 };
    let mut rng = SplitMix(62);
    for i in 0..200_000u64 {
        let v = if rng.uniform() < 0.004 {
            if rng.uniform() < 0.3 {
                1_000_000.0 + rng.gpd(2_000.0, -0.5)
            } else {
                50_000.0 + rng.gpd(80_000.0, -0.5)
            }
        } else {
            30_000.0 * rng.uniform()
        };
        s.push(&mut r, i, i * 1_000_000, v);
    }
    let t = analyse_run(&r, s.timeout, &[], 200_000);
    // Refused, or fitted to the upper tail alone (above 1 ms it is one GPD).
    match &t.refused {
        Some(why) => {
            assert!(why.starts_with("poor fit") || why.starts_with("threshold instability"), "{why}")
        }
        None => assert!(t.threshold_ns.unwrap() >= 1_000_000, "{:?}", t.candidates),
    }
    // A tail of two separate lumps does not pass the goodness of fit.
    let mut rng = SplitMix(9);
    let mut e = Excesses::default();
    for _ in 0..300 {
        let lump = if rng.uniform() < 0.5 { 0.0 } else { 5_000.0 };
        e.y.push(lump + 1_000.0 * rng.uniform());
    }
    let m = fit(&e).expect("fits");
    assert!(super::checks::gof_p(&e, &m, 1) <= super::checks::LEVEL);
}

#[test]
fn the_same_run_gives_the_same_model() {
    let s = Sim {
        xi: 0.1,
        sigma: 20_000.0,
        base: 50_000.0,
        p_tail: 0.004,
        burst: 1,
        timeout: 10_000_000,
        body_top: 0.3,
    };
    let r = s.run(100_000, 71);
    let a = analyse_run(&r, s.timeout, &[("max".into(), 200_000)], 100_000);
    let b = analyse_run(&r, s.timeout, &[("max".into(), 200_000)], 100_000);
    assert_eq!(a, b);
}

/// Runs of `n` samples 1 ms apart whose latencies are exactly
/// `20 µs + GPD(10 µs, ξ)` (every candidate threshold is a correct one),
/// through the candidates and the threshold rule: how many runs left the
/// lowest candidate, and the coverage of the shape's and of the
/// once-per-hour level's 95 % intervals at the chosen threshold, of the
/// runs the rule fitted.
fn exact_gpd_rule(xi: f64, n: u64, sets: u64, seed: u64) -> (u64, u64, f64, f64) {
    let (base, sigma) = (20_000.0, 10_000.0);
    let q: f64 = 1.0 / 3.6e6;
    let truth = base + if xi == 0.0 { -sigma * q.ln() } else { sigma / xi * (q.powf(-xi) - 1.0) };
    let (mut moved, mut fitted, mut cx, mut ch) = (0u64, 0u64, 0u64, 0u64);
    for k in 0..sets {
        let mut rng = SplitMix(seed + k);
        let mut store = TailStore::new();
        for i in 0..n {
            store.push(i, i * 1_000_000, (base + rng.gpd(sigma, xi)).round() as u64, false);
        }
        let c = super::threshold::candidates(&store.data().samples(u64::MAX), n);
        let Ok(j) = super::threshold::choose(&c) else { continue };
        fitted += 1;
        moved += u64::from(j != 0);
        let c = &c[j];
        cx += u64::from(c.xi.expect("fitted").contains(xi));
        let m = c.mle.expect("fitted");
        let model = Model {
            u: c.u,
            e: &c.excesses,
            m,
            clusters: c.clusters.maxima.len() as u64,
            hours: n as f64 / 3.6e6,
        };
        ch += u64::from(model.level(1.0).is_some_and(|l| l.contains(truth)));
    }
    let f = fitted.max(1) as f64;
    (moved, fitted, cx as f64 / f, ch as f64 / f)
}

#[test]
fn the_threshold_rule_stays_at_a_correct_threshold_and_covers() {
    // Issue 42 §3: on exactly generalized Pareto tails the earlier rule
    // (point estimates compared, Bonferroni at 10 %) left the correct
    // lowest threshold in 10-18 % of runs, on noise in the top 44-88
    // samples, and then covered the truth about half the time. The full
    // grid (4 shapes × 10⁴ and 10⁵ samples × 200 runs, through `analyse`)
    // is examples/tail_threshold_coverage.rs; this is the case the issue
    // names (ξ 0.2), 10⁴ samples, in a debug build's time.
    let sets = 100;
    let (moved, fitted, cx, ch) = exact_gpd_rule(0.2, 10_000, sets, 4_200);
    eprintln!("exact GPD ξ 0.2: {fitted} of {sets} fitted, {moved} left the lowest; coverage ξ {cx:.3}, per hour {ch:.3}");
    assert!(fitted >= sets - 2, "the rule refused {} of {sets} exact GPD runs", sets - fitted);
    assert!(moved * 10 <= fitted, "the rule left a correct threshold in {moved} of {fitted} runs");
    assert!(cx >= 0.90 && ch >= 0.90, "coverage ξ {cx}, once per hour {ch}");
}

#[test]
fn the_run_length_is_the_same_at_every_threshold() {
    // Issue 42 §4: taken threshold by threshold, the run length jumped
    // between 0 and 12 across neighbouring candidates of one clean run.
    // Independent exact-GPD runs: every candidate declusters with the
    // run's one run length, and that is 0 in nearly every run; taken alone
    // the candidates disagree in some runs (the jumps this removes).
    let (mut jumps_alone, mut clustered) = (0, 0);
    let sets = 100;
    for k in 0..sets {
        let mut rng = SplitMix(6_100 + k);
        let mut store = TailStore::new();
        for i in 0..10_000u64 {
            store.push(i, i * 1_000_000, (20_000.0 + rng.gpd(10_000.0, 0.2)).round() as u64, false);
        }
        let levels = super::threshold::levels(&store.data().samples(u64::MAX), 10_000);
        let alone: Vec<u64> = levels
            .iter()
            .map(|(_, ex)| decluster_with(ex, Some(ex.len() as f64 / 10_000.0)).run_length)
            .collect();
        let jumps = alone.windows(2).any(|w| w[0] != w[1]);
        jumps_alone += usize::from(jumps);
        let r = super::threshold::run_length(&levels, 10_000);
        clustered += usize::from(r > 0);
        if !jumps && k >= 2 {
            continue; // the fits take the time: the runs that jumped, and two
        }
        let c = super::threshold::candidates(&store.data().samples(u64::MAX), 10_000);
        assert!(
            c.iter().all(|c| c.clusters.run_length == r),
            "run {k}: {:?}",
            c.iter().map(|c| c.clusters.run_length).collect::<Vec<_>>()
        );
    }
    eprintln!("independent runs: {jumps_alone} of {sets} with jumps threshold by threshold; {clustered} declustered as one");
    assert!(jumps_alone > 0, "the jumps this test guards against did not occur: no test");
    assert!(clustered <= 2, "{clustered} of {sets} independent runs declustered");
    // Bursts of 4 consecutive samples: the run's run length joins them.
    let s = Sim {
        xi: 0.1,
        sigma: 20_000.0,
        base: 50_000.0,
        p_tail: 0.002,
        burst: 4,
        timeout: 10_000_000,
        body_top: 0.3,
    };
    let r = s.run(300_000, 41);
    let levels = super::threshold::levels(&r.store.data().samples(s.timeout), r.samples);
    let rl = super::threshold::run_length(&levels, r.samples);
    let alone: Vec<u64> = levels
        .iter()
        .map(|(_, ex)| decluster_with(ex, Some(ex.len() as f64 / r.samples as f64)).run_length)
        .collect();
    assert!((2..=40).contains(&rl), "{rl} {alone:?}");
}

/// A run of `n` samples 1 ms apart: `20 µs + Exp(5 µs)`, and with
/// probability `p_spike` a spike of a second cause, `150 µs + U(0, 50 µs)`
/// (issue 42 §4: one fit of both put the once-per-hour level 1.6 times
/// too high).
fn two_cause_run(n: u64, p_spike: f64, seed: u64) -> Run {
    let sim =
        Sim { xi: 0.0, sigma: 1.0, base: 0.0, p_tail: 0.0, burst: 1, timeout: 10_000_000, body_top: 0.0 };
    let mut r =
        Run { store: TailStore::new(), timeline: TimelineRecorder::new(), samples: 0, timeouts: 0, max: 0 };
    let mut rng = SplitMix(seed);
    for i in 0..n {
        let v = if rng.uniform() < p_spike {
            150_000.0 + 50_000.0 * rng.uniform()
        } else {
            20_000.0 + rng.gpd(5_000.0, 0.0)
        };
        sim.push(&mut r, i, i * 1_000_000, v);
    }
    r
}

#[test]
fn a_second_cause_above_the_tail_is_named_and_one_cause_is_fitted() {
    for seed in 0..4 {
        // 30 spikes in 10⁵ samples, all among the candidates' exceedances.
        let r = two_cause_run(100_000, 3e-4, 800 + seed);
        let t = analyse_run(&r, 10_000_000, &[], 100_000);
        let why = t.refused.clone().unwrap_or_default();
        assert!(why.starts_with("two causes:") && why.contains("find and remove"), "seed {seed}: {why:?}");
        assert!(why.contains("stand apart"), "{why}");
        assert!(t.per_hour.is_none() && t.threshold_ns.is_some());
        // The same body without the spikes: one cause, fitted.
        let r = two_cause_run(100_000, 0.0, 800 + seed);
        let t = analyse_run(&r, 10_000_000, &[], 100_000);
        assert!(
            t.refused.as_deref().is_none_or(|w| !w.starts_with("two causes")),
            "seed {seed}: {:?}",
            t.refused
        );
    }
}

#[test]
fn one_generalized_pareto_tail_is_not_taken_for_two() {
    // 40 sets of 500 exact GPD excesses at each shape the issue names:
    // the second-cause test at 10⁻⁶ per size never fires; 10 spikes far
    // above 490 exponential excesses always do.
    let mut rng = SplitMix(77);
    for xi in [-0.2, 0.0, 0.2, 0.4] {
        for _ in 0..40 {
            let e = Excesses { y: (0..500).map(|_| rng.gpd(10_000.0, xi)).collect(), c: vec![] };
            assert_eq!(super::checks::second_cause(&e), None, "ξ {xi}");
        }
    }
    for _ in 0..20 {
        let mut y: Vec<f64> = (0..490).map(|_| rng.gpd(5_000.0, 0.0)).collect();
        y.extend((0..10).map(|_| 100_000.0 + 50_000.0 * rng.uniform()));
        let s = super::checks::second_cause(&Excesses { y, c: vec![] }).expect("two causes");
        // Named at a size that holds the spikes (the test's power is in
        // the many, each far out; which k says it best is rougher).
        assert!(s.k >= 10 && s.below < 100_000.0, "{s:?}");
    }
}
