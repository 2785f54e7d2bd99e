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

/// A probability with its interval: `3.1e-4 (95 %: 1.0e-5–2.2e-3)`,
/// `0.42`, `1`: plain decimals from 0.001 up, so a certainty reads `1`, not
/// `1.00e0`.
pub fn p_interval(i: &Interval) -> String {
    let f = |v: f64| prob(v);
    format!(
        "{} (95 %: {}–{})",
        i.estimate.map_or_else(|| "-".into(), f),
        i.lo.map_or_else(|| "0".into(), f),
        i.hi.map_or_else(|| "1".into(), f)
    )
}

/// A probability as a reader takes it in: `1`, `0.42`, `0.003`, `3.1e-4`.
pub fn prob(v: f64) -> String {
    if !v.is_finite() || v <= 0.0 {
        return "0".into();
    }
    if v >= 0.9995 {
        return "1".into();
    }
    if v >= 0.001 {
        let t = format!("{v:.3}");
        return t.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    format!("{v:.1e}")
}

/// Seconds as `3.2 h`, `41 s`, `12 years`; past ten thousand years, only
/// that (a figure of 10¹⁸ days says nothing more than "never").
fn span(s: f64) -> String {
    const YEAR: f64 = 365.25 * 86_400.0;
    if !s.is_finite() || s >= 10_000.0 * YEAR {
        "over 10 000 years".into()
    } else if s >= 2.0 * YEAR {
        format!("{:.0} years", s / YEAR)
    } else if s >= 86_400.0 * 2.0 {
        format!("{:.1} days", s / 86_400.0)
    } else if s >= 7_200.0 {
        format!("{:.1} h", s / 3_600.0)
    } else if s >= 120.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{s:.0} s")
    }
}

/// How long a run must last to see a level with 95 %: `after 3.2 h (95 %:
/// 1.1–9.0 h)`, or `never, as far as the model says (95 %: from 41 s)`
/// when it has no estimate.
fn span_interval(i: &Interval) -> String {
    let lo = i.lo.map_or_else(|| "?".into(), span);
    match i.estimate {
        Some(e) => format!("after {} (95 %: {lo}–{})", span(e), i.hi.map_or_else(|| "no end".into(), span)),
        None => format!("never, as far as the model says (95 %: from {lo})"),
    }
}

fn limit_line(s: &mut String, l: &LimitTail) {
    let what = format!("{}, {}", format_ns(l.latency_ns), l.name);
    match (&l.exceed_per_hour, &l.run_for_95_s) {
        (Some(p), Some(run)) => {
            let _ = writeln!(
                s,
                "  {what}: exceeded within an hour with probability {}; a run sees it with 95 % {}",
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

/// What each "once per" figure counts: clusters of exceedances, and the
/// samples above the level that come with one.
pub fn counted(t: &TailReport) -> String {
    let per = t.samples_per_cluster.unwrap_or(1.0);
    format!(
        "  (\"once per\" counts clusters of exceedances, not samples: a cluster holds {} samples on average \
         (1 / extremal index), so about {} samples an hour exceed the once-per-hour level)",
        trim2(per),
        trim2(per)
    )
}

/// Two decimals, trailing zeros dropped.
fn trim2(v: f64) -> String {
    let t = format!("{v:.2}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
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
    let _ = writeln!(s, "{}", counted(t));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 42 §6: `1.00e0 (95 %: 1.00e0–1.00e0)` and `7871024796792314880.0
    /// days` were printed; a reader gets `1` and `over 10 000 years`.
    #[test]
    fn probabilities_and_spans_read_plainly() {
        assert_eq!(prob(1.0), "1");
        assert_eq!(prob(0.9999), "1");
        assert_eq!(prob(0.42), "0.42");
        assert_eq!(prob(0.003), "0.003");
        assert_eq!(prob(3.1e-4), "3.1e-4");
        assert_eq!(prob(0.0), "0");
        let i = Interval { estimate: Some(1.0), lo: Some(1.0), hi: Some(1.0) };
        assert_eq!(p_interval(&i), "1 (95 %: 1–1)");
        assert_eq!(span(7.871e18 * 86_400.0), "over 10 000 years");
        assert_eq!(span(f64::INFINITY), "over 10 000 years");
        assert_eq!(span(3.0 * 365.25 * 86_400.0), "3 years");
        assert_eq!(span(41.0), "41 s");
        let never = Interval { estimate: None, lo: Some(41.0), hi: None };
        assert_eq!(span_interval(&never), "never, as far as the model says (95 %: from 41 s)");
    }
}
