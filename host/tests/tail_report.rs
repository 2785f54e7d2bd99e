//! The tail model in the report: the JSON's `tail` round trip, an old
//! report without it still loading, the text and HTML sections, the plot,
//! `--horizon`, and the `max_exceedance_per_hour` limits judged on the
//! interval's upper end (a refused model failing them with the reason).

use std::path::Path;

use latprobe::analysis::tail::TailStore;
use latprobe::analysis::tail::{GpdDraw, SplitMix};
use latprobe::analysis::timeline::TimelineRecorder;
use latprobe::gates::{evaluate, parse_limits_toml};
use latprobe::model::{LimitUnit, Limits, Measured};
use latprobe::report::{self, Report};

/// The golden raw file's report, its samples replaced by a synthetic run
/// of 200 s at 1 kHz: a body of 25..40 µs, 0.4 % of the samples 50 µs +
/// GPD(ξ 0.1, σ 20 µs); its tail model made for `limits`.
fn fitted(limits: &Limits) -> Report {
    let raw = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden/run.raw");
    let mut r = latprobe::cmd::report::load(&raw, None).expect("the golden raw file loads");
    let mut rng = SplitMix(7);
    let (mut store, mut tl, mut max) = (TailStore::new(), TimelineRecorder::new(), 0u64);
    let n = 200_000u64;
    for i in 0..n {
        let v = if rng.uniform() < 0.004 {
            50_000.0 + rng.gpd(20_000.0, 0.1)
        } else {
            25_000.0 + 15_000.0 * rng.uniform()
        };
        let v = v.round() as u64;
        max = max.max(v);
        store.push(i, i * 1_000_000, v, false);
        tl.push(i * 1_000_000, Some(v));
    }
    r.counts.samples = n;
    r.counts.responses = n;
    r.counts.timeouts = 0;
    r.probe_elapsed_ns = Some(n * 1_000_000);
    r.timeline = Some(tl.report());
    let l = r.latency_ns.as_mut().expect("latency");
    l.measured = n;
    l.censored = 0;
    l.censored_above = 10_000_000;
    l.max_measured = Some(max);
    r.tail = Some(report::tail::compute(&r, store.data(), limits, report::tail::DEFAULT_HORIZON_NS));
    r
}

const LIMITS: &str = "max = \"200us\"\n[max_exceedance_per_hour]\n\"200us\" = 1e-3\n\"2ms\" = 0.1\n";

#[test]
fn per_hour_limits_are_judged_on_the_upper_end_and_a_refusal_fails_them() {
    let limits = parse_limits_toml(LIMITS).expect("limits parse");
    assert_eq!(limits.exceedance_per_hour.len(), 2);
    let r = fitted(&limits);
    let t = r.tail.as_ref().expect("tail");
    assert_eq!(t.refused, None, "{t:#?}");
    let v = evaluate(&r, &limits, None);
    let by = |n: &str| v.iter().find(|v| v.name == n).unwrap_or_else(|| panic!("no verdict {n}: {v:?}"));
    let (near, far) = (by("exceedance 200us"), by("exceedance 2ms"));
    assert_eq!(near.unit, LimitUnit::ProbabilityE12);
    assert!(!near.pass, "200 µs is exceeded about every minute: {near:?}");
    assert!(near.why.as_deref().unwrap().contains("upper end"), "{near:?}");
    assert!(far.pass, "{far:?}");
    let Measured::Between { low, high } = far.measured else { panic!("{far:?}") };
    assert!(low <= high && high <= far.limit, "{far:?}");
    // The upper end decides, not the estimate.
    let p = t.limits.iter().find(|l| l.latency_ns == 2_000_000).unwrap().exceed_per_hour.unwrap();
    let between = (p.estimate.unwrap() + p.hi.unwrap()) / 2.0;
    let tight = parse_limits_toml(&format!("[max_exceedance_per_hour]\n\"2ms\" = {between:e}\n")).unwrap();
    let v = evaluate(&r, &tight, None);
    assert!(!v[0].pass, "a limit between the estimate and the upper end fails: {v:?}");

    // A refused model proves nothing, and says why.
    let mut refused = r.clone();
    refused.tail.as_mut().unwrap().refused = Some("too few exceedances: run longer".into());
    let v = evaluate(&refused, &limits, None);
    let far = v.iter().find(|v| v.name == "exceedance 2ms").unwrap();
    assert!(!far.pass && far.why.as_deref().unwrap().contains("refused (too few exceedances"), "{far:?}");
    // A report without a model (an older latprobe's) too.
    let mut old = r.clone();
    old.tail = None;
    let v = evaluate(&old, &limits, None);
    assert!(v
        .iter()
        .filter(|v| v.name.starts_with("exceedance"))
        .all(|v| !v.pass && v.why.as_deref().unwrap().contains("no tail model")));
}

#[test]
fn a_bad_per_hour_limit_names_the_fix() {
    for (toml, want) in [
        ("[max_exceedance_per_hour]\n\"200us\" = 1.5\n", "above 0 and below 1"),
        ("[max_exceedance_per_hour]\n\"fast\" = 1e-3\n", "[max_exceedance_per_hour] \"fast\""),
        ("max_exceedance_per_hour = 3\n", "max_exceedance_per_hour"),
    ] {
        let e = parse_limits_toml(toml).expect_err(toml);
        assert!(e.contains(want), "{toml}: {e}");
    }
}

#[test]
fn the_tail_round_trips_through_json_and_old_reports_load_without_it() {
    let limits = parse_limits_toml(LIMITS).unwrap();
    let r = fitted(&limits);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.json");
    report::json::write(&r, &f).unwrap();
    let text = std::fs::read_to_string(&f).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let t = &v["tail"];
    for k in ["threshold_ns", "exceedances", "refused"] {
        assert!(t.get(k).is_some(), "tail.{k} missing");
    }
    for k in ["shape", "scale_ns", "per_hour"] {
        for e in ["estimate", "lo", "hi"] {
            assert!(t[k][e].is_number(), "tail.{k}.{e}: {}", t[k]);
        }
    }
    assert!(t["refused"].is_null());
    let back = report::json::read(&f).unwrap();
    assert_eq!(report::json::to_string(&back), report::json::to_string(&r));
    assert_eq!(back.tail.as_ref().unwrap().threshold_ns, r.tail.as_ref().unwrap().threshold_ns);

    // A report of an older latprobe has no `tail`: it loads, without one.
    let mut old = v.clone();
    old.as_object_mut().unwrap().remove("tail");
    let g = dir.path().join("old.json");
    std::fs::write(&g, serde_json::to_string(&old).unwrap()).unwrap();
    let old = report::json::read(&g).expect("an old report loads");
    assert!(old.tail.is_none());
    assert!(!report::text::summary(&old).contains("tail:"));
}

#[test]
fn the_summary_and_the_page_show_the_model_its_intervals_and_caveat() {
    let limits = parse_limits_toml(LIMITS).unwrap();
    let r = fitted(&limits);
    let s = report::text::summary(&r);
    for want in [
        "tail: threshold",
        "GPD shape",
        "exceeded once per hour",
        "once per day",
        "200us, ",
        "exceeded within an hour with probability",
        "caveat: extrapolated",
    ] {
        assert!(s.contains(want), "summary lacks {want:?}:\n{s}");
    }
    let h = report::html::render(&r);
    assert!(h.contains("<h2 id=\"tail\">") && h.contains("id=\"plot-tail\"") && h.contains("caveat"), "{h}");
    let svg = report::plot::tail_svg(&r).unwrap().expect("a fitted model has a tail plot");
    assert!(svg.contains("Tail model") && svg.contains("2000.0 µs"), "the limits are marked");
    // Refused: said in both, no plot.
    let mut refused = r.clone();
    refused.tail.as_mut().unwrap().refused = Some("not stationary: the halves disagree".into());
    assert!(report::text::summary(&refused).contains("refused: not stationary"));
    assert!(report::html::render(&refused).contains("tail-refused"));
    assert!(report::plot::tail_svg(&refused).unwrap().is_none());
}

#[test]
fn the_horizon_is_asked_again_from_the_kept_samples() {
    let limits = parse_limits_toml(LIMITS).unwrap();
    let mut r = fitted(&limits);
    let day = r.tail.as_ref().unwrap().horizon.clone().unwrap();
    report::tail::refresh(&mut r, &limits, 7 * report::tail::DEFAULT_HORIZON_NS);
    let week = r.tail.as_ref().unwrap().horizon.clone().unwrap();
    assert_eq!(week.duration_ns, 7 * day.duration_ns);
    let (d, w) =
        (day.likely_max_ns.unwrap().estimate.unwrap(), week.likely_max_ns.unwrap().estimate.unwrap());
    assert!(w > d, "a week's max {w} is above a day's {d}");
    // New limits get their figures too.
    let other = parse_limits_toml("[max_exceedance_per_hour]\n\"300us\" = 1e-2\n").unwrap();
    report::tail::refresh(&mut r, &other, 7 * report::tail::DEFAULT_HORIZON_NS);
    assert_eq!(r.tail.as_ref().unwrap().limits[0].latency_ns, 300_000);
}
