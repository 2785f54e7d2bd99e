//! The report's tail section: the model of [`crate::analysis::tail`] made
//! from a report's own figures (live, replayed, or read back from JSON,
//! whose `tail.samples` keep what it needs), and its lines in the summary.

use std::fmt::Write as _;

use super::Report;
use crate::analysis::tail::{analyse, Interval, LimitTail, TailData, TailInput, TailReport};
use crate::model::Limits;
use crate::units::format_ns;

/// The horizon without `--horizon`: a day.
pub const DEFAULT_HORIZON_NS: u64 = 24 * 3_600 * 1_000_000_000;

/// The tail model of `r` from its worst samples `data`, for `limits` and a
/// horizon of `horizon_ns`.
pub fn compute(r: &Report, data: TailData, limits: &Limits, horizon_ns: u64) -> TailReport {
    let points = limits.tail_points();
    let timeout_ns = r.latency_ns.as_ref().map_or(r.config.timeout_ns, |l| l.censored_above);
    let duration_ns = r.probe_elapsed_ns.filter(|&d| d > 0).or_else(|| {
        r.timeline
            .as_ref()
            .map(|t| (t.len() as u64).saturating_mul(t.row_s.max(1)).saturating_mul(1_000_000_000))
            .filter(|&d| d > 0)
    });
    let mut t = analyse(&TailInput {
        samples: r.counts.samples,
        timeouts: r.counts.timeouts,
        timeout_ns,
        duration_ns,
        data: &data,
        timeline: r.timeline.as_ref(),
        limits: &points,
        max_measured_ns: r.latency_ns.as_ref().and_then(|l| l.max_measured),
        horizon_ns,
    });
    t.samples = data;
    t
}

/// Make `r`'s tail model again when `limits` or `horizon_ns` ask other
/// questions than it answers (`report --limits`, `--horizon`).
pub fn refresh(r: &mut Report, limits: &Limits, horizon_ns: u64) {
    let Some(t) = &r.tail else { return };
    let points = limits.tail_points();
    let same_points = t.limits.len() == points.len()
        && t.limits.iter().zip(&points).all(|(l, (n, x))| &l.name == n && l.latency_ns == *x);
    let same_horizon = t.horizon_ns == horizon_ns;
    if same_points && same_horizon {
        return;
    }
    let data = t.samples.clone();
    r.tail = Some(compute(r, data, limits, horizon_ns));
}

/// `12.3 µs (95 %: 10.1–15.0 µs)`, an open end as `?` (lower) or
/// `unbounded` (upper).
pub fn ns_interval(i: &Interval) -> String {
    let f = |v: f64| format_ns(v.max(0.0).round() as u64);
    format!(
        "{} (95 %: {}–{})",
        i.estimate.map_or_else(|| "unbounded".into(), f),
        i.lo.map_or_else(|| "?".into(), f),
        i.hi.map_or_else(|| "unbounded".into(), f)
    )
}

/// A probability with its interval: `3.1e-4 (95 %: 1.0e-5–2.2e-3)`.
pub fn p_interval(i: &Interval) -> String {
    let f = |v: f64| format!("{v:.2e}");
    format!(
        "{} (95 %: {}–{})",
        i.estimate.map_or_else(|| "-".into(), f),
        i.lo.map_or_else(|| "0".into(), f),
        i.hi.map_or_else(|| "1".into(), f)
    )
}

/// Seconds as `3.2 h` or `41 s`.
fn span(s: f64) -> String {
    if s >= 86_400.0 * 2.0 {
        format!("{:.1} days", s / 86_400.0)
    } else if s >= 7_200.0 {
        format!("{:.1} h", s / 3_600.0)
    } else if s >= 120.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{s:.0} s")
    }
}

fn span_interval(i: &Interval) -> String {
    format!(
        "{} (95 %: {}–{})",
        i.estimate.map_or_else(|| "never".into(), span),
        i.lo.map_or_else(|| "?".into(), span),
        i.hi.map_or_else(|| "unbounded".into(), span)
    )
}

fn limit_line(s: &mut String, l: &LimitTail) {
    let what = format!("{} ({})", format_ns(l.latency_ns), l.name);
    match (&l.exceed_per_hour, &l.run_for_95_s) {
        (Some(p), Some(run)) => {
            let _ = writeln!(
                s,
                "  P(an hour exceeds {what}): {}; a run sees it with 95 % after {}",
                p_interval(p),
                span_interval(run)
            );
        }
        _ => {
            let _ = writeln!(s, "  {what}: {}", l.note.as_deref().unwrap_or("no figure"));
        }
    }
    if let (Some(n), true) = (&l.note, l.exceed_per_hour.is_some()) {
        let _ = writeln!(s, "    ({n})");
    }
}

/// The tail section of the summary.
pub fn text(t: &TailReport) -> String {
    let mut s = String::new();
    let Some(u) = t.threshold_ns else {
        let _ = writeln!(s, "tail: refused: {}", t.refused.as_deref().unwrap_or("no fit"));
        return s;
    };
    let _ = writeln!(
        s,
        "tail: threshold {} ({} exceedances, {} timeouts, {} clusters, run length {}, extremal index {:.2})",
        format_ns(u),
        t.exceedances,
        t.censored,
        t.clusters,
        t.run_length.unwrap_or(0),
        t.extremal_index.unwrap_or(1.0)
    );
    if let Some(why) = &t.refused {
        let _ = writeln!(s, "  refused: {why}; nothing is extrapolated");
        return s;
    }
    if let (Some(x), Some(sc)) = (&t.shape, &t.scale_ns) {
        let f = |v: Option<f64>, open: &str| v.map_or_else(|| open.to_string(), |v| format!("{v:.3}"));
        let _ = writeln!(
            s,
            "  GPD shape ξ {} (95 %: {}–{}), scale {}",
            f(x.estimate, "-"),
            f(x.lo, "?"),
            f(x.hi, "unbounded"),
            ns_interval(sc)
        );
    }
    for (label, v) in [
        ("once per hour", &t.per_hour),
        ("once per day", &t.per_day),
        ("once per 1e9 samples", &t.per_1e9_samples),
    ] {
        let _ = match v {
            Some(i) => writeln!(s, "  exceeded {label}: {}", ns_interval(i)),
            None => writeln!(s, "  exceeded {label}: below the threshold (the run itself shows it)"),
        };
    }
    if let Some(h) = &t.horizon {
        if let Some(i) = &h.likely_max_ns {
            let _ = writeln!(
                s,
                "  the max of a {} run (median): {}",
                span(h.duration_ns as f64 / 1e9),
                ns_interval(i)
            );
        }
    }
    for l in t.limits.iter().chain(&t.measured_max) {
        limit_line(&mut s, l);
    }
    if let Some(c) = &t.caveat {
        let _ = writeln!(s, "  caveat: {c}");
    }
    s
}
