//! The threshold rule's coverage table (issue 42 §3): seeded runs whose
//! latencies are exactly generalized Pareto above 20 µs, each analysed by
//! the whole automatic tail model (candidates, threshold rule, goodness of
//! fit, halves), and how often the 95 % intervals of the shape and of the
//! latency exceeded once per hour hold the truth. Also the refusals and
//! how often the rule leaves the lowest candidate threshold.
//!
//! `cargo run --release -p latprobe --example tail_threshold_coverage -- [SETS] [FIRST_SEED]`
//! (200 sets a case by default: 1600 runs, about 5 minutes of CPU in a
//! release build; the goodness-of-fit bootstrap is most of it).

use latprobe::analysis::tail::{analyse, GpdDraw, SplitMix, TailInput, TailReport, TailStore};
use latprobe::analysis::timeline::TimelineRecorder;

/// Latencies are `BASE + GPD(SIGMA, ξ)` ns, one sample a millisecond.
const BASE: f64 = 20_000.0;
const SIGMA: f64 = 10_000.0;
const SAMPLES_PER_HOUR: f64 = 3.6e6;

/// One seeded run of `n` samples, analysed.
fn run(xi: f64, n: u64, seed: u64) -> TailReport {
    let mut rng = SplitMix(seed);
    let mut store = TailStore::new();
    let mut timeline = TimelineRecorder::new();
    let mut max = 0;
    for i in 0..n {
        let v = (BASE + rng.gpd(SIGMA, xi)).round() as u64;
        max = max.max(v);
        store.push(i, i * 1_000_000, v, false);
        timeline.push(i * 1_000_000, Some(v));
    }
    let data = store.data();
    let t = timeline.report();
    analyse(&TailInput {
        samples: n,
        timeouts: 0,
        timeout_ns: u64::MAX / 4,
        duration_ns: Some(n * 1_000_000),
        data: &data,
        timeline: Some(&t),
        limits: &[],
        max_measured_ns: Some(max),
        horizon_ns: 0,
    })
}

/// The latency a sample exceeds once per hour (independent samples, so
/// a cluster is a sample).
fn true_per_hour(xi: f64) -> f64 {
    let q = 1.0 / SAMPLES_PER_HOUR;
    BASE + if xi.abs() < 1e-12 { -SIGMA * q.ln() } else { SIGMA / xi * (q.powf(-xi) - 1.0) }
}

fn inside(i: &latprobe::analysis::tail::Interval, v: f64) -> bool {
    i.lo.is_none_or(|l| v >= l) && i.hi.is_none_or(|h| v <= h)
}

#[derive(Default)]
struct Tally {
    sets: u64,
    fitted: u64,
    left_lowest: u64,
    xi_in: u64,
    hour_in: u64,
    hour_above: u64,
    at_lowest: u64,
    at_lowest_in: u64,
    moved_in: u64,
    refusals: std::collections::BTreeMap<String, u64>,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sets: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let first: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1);
    let started = std::time::Instant::now();
    println!(
        "| ξ | samples | fitted | left the lowest | coverage ξ | coverage once-per-hour | truth above | ξ cov. at lowest / moved | refused |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for &n in &[10_000u64, 100_000] {
        for &xi in &[-0.2, 0.0, 0.2, 0.4] {
            let mut t = Tally::default();
            let truth = true_per_hour(xi);
            for k in 0..sets {
                let seed = first + k + (n / 1000) * 1_000_003 + ((xi + 1.0) * 10.0) as u64 * 7_919;
                let r = run(xi, n, seed);
                t.sets += 1;
                let lowest = r.candidates.first().map(|c| c.threshold_ns);
                if r.threshold_ns.is_some() && r.threshold_ns != lowest {
                    t.left_lowest += 1;
                }
                if let Some(why) = &r.refused {
                    let key: String = why.split(':').next().unwrap_or("").into();
                    *t.refusals.entry(key).or_default() += 1;
                    continue;
                }
                t.fitted += 1;
                let xi_ok = r.shape.as_ref().is_some_and(|s| inside(s, xi));
                let ph = r.per_hour.expect("per hour");
                t.xi_in += u64::from(xi_ok);
                t.hour_in += u64::from(inside(&ph, truth));
                t.hour_above += u64::from(ph.hi.is_some_and(|h| truth > h));
                if r.threshold_ns == lowest {
                    t.at_lowest += 1;
                    t.at_lowest_in += u64::from(xi_ok);
                } else {
                    t.moved_in += u64::from(xi_ok);
                }
            }
            let f = t.fitted.max(1) as f64;
            let moved = t.fitted - t.at_lowest;
            println!(
                "| {xi} | {n} | {}/{} | {:.1} % | {:.3} | {:.3} | {:.1} % | {:.3} / {} | {} |",
                t.fitted,
                t.sets,
                100.0 * t.left_lowest as f64 / t.sets as f64,
                t.xi_in as f64 / f,
                t.hour_in as f64 / f,
                100.0 * t.hour_above as f64 / f,
                t.at_lowest_in as f64 / t.at_lowest.max(1) as f64,
                if moved == 0 { "-".to_string() } else { format!("{:.3}", t.moved_in as f64 / moved as f64) },
                t.refusals.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
            );
        }
    }
    eprintln!("{} s", started.elapsed().as_secs());
}
