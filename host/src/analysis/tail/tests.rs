//! The tail model against synthetic data with known tails: estimates in
//! their intervals, the intervals' coverage over 200 data sets per case,
//! and per-hour predictions against a run 20 times longer. Seeded,
//! deterministic; sized to run in seconds in a debug build.

use super::checks::SplitMix;
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
            let body = self.base * (0.5 + 0.3 * rng.uniform());
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
    let s = Sim { xi: 0.1, sigma: 20_000.0, base: 50_000.0, p_tail: 0.004, burst: 1, timeout: 10_000_000 };
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
