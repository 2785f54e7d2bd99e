//! CI gates: latency and count limits (`--max`, `--percentile`,
//! `--max-timeouts`, `--max-lost`, `--max-late`, `--limits FILE`), judged
//! against a [`Report`] into one [`Verdict`] per limit. A violated limit
//! makes the command exit 3 ([`crate::exit::THRESHOLD`]); JUnit, LAVA and
//! HTML render the same verdicts.
//!
//! A limit passes only when the figure is *proven* within it. A figure
//! that falls among the timeouts is only known to exceed the timeout
//! (the book's concepts/identity-and-censoring.md, "The tail is measured, never cut off"), so it cannot prove any limit
//! and is a violation whose text says why and what to change.

use std::path::Path;

use serde::Deserialize;

use crate::analysis::{rank, Analysis, Figure};
use crate::model::{LimitUnit, Limits, Measured, PercentileLimit, Verdict};
pub use crate::options::{parse_percent, parse_percentile, LimitArgs};
use crate::report::Report;
use crate::units::{format_ns, parse_duration_ns};
use crate::Error;

/// The name of a percentile: `p99.9`.
pub fn percentile_name(percent: f64) -> String {
    // Up to six decimals, trailing zeros dropped: 99.99 stays 99.99.
    let s = format!("{percent:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("p{s}")
}

impl Limits {
    /// No limit at all: no verdict, no exit 3.
    pub fn is_empty(&self) -> bool {
        self.max_ns.is_none()
            && self.percentiles.is_empty()
            && self.max_timeouts.is_none()
            && self.max_lost.is_none()
            && self.max_late.is_none()
            && self.exceedance_per_hour.is_empty()
    }

    /// The latencies the tail model reports on for these limits: `--max`,
    /// each percentile limit's latency (unless already named) and each
    /// `max_exceedance_per_hour` latency, with their names.
    pub fn tail_points(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = self.max_ns.map(|m| ("max".to_string(), m)).into_iter().collect();
        for p in &self.percentiles {
            if !v.iter().any(|(_, x)| *x == p.limit_ns) {
                v.push((format!("{} limit", percentile_name(p.percent)), p.limit_ns));
            }
        }
        for e in &self.exceedance_per_hour {
            v.push((exceedance_name(e.latency_ns), e.latency_ns));
        }
        v
    }
}

/// The name of a per-hour exceedance limit: `exceedance 200us`.
pub fn exceedance_name(latency_ns: u64) -> String {
    format!("exceedance {}", format_ns(latency_ns))
}

/// The TOML file's layout (`--limits FILE`):
///
/// ```toml
/// max = "200us"
/// max_timeouts = 0
/// max_lost = 0
/// max_late = 0
/// [percentile]
/// "99" = "80us"
/// "99.9" = "100us"
/// [max_exceedance_per_hour]
/// "200us" = 1e-3
/// ```
///
/// (`max_exceedance_per_hour = { "200us" = 1e-3 }` is the same table
/// inline: the probability that an hour of running exceeds 200 µs at
/// least once, from the tail model, must be at most 1e-3 at the upper end
/// of its 95 % interval.)
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsFile {
    max: Option<String>,
    #[serde(default)]
    percentile: std::collections::BTreeMap<String, String>,
    max_timeouts: Option<u64>,
    max_lost: Option<u64>,
    max_late: Option<u64>,
    #[serde(default)]
    max_exceedance_per_hour: std::collections::BTreeMap<String, f64>,
}

/// The keys a `--limits` file may have, for its errors.
const KEYS: &str = "keys: max, max_timeouts, max_lost, max_late, [percentile], [max_exceedance_per_hour]";

/// Read a `--limits` file.
pub fn read_limits_file(path: &Path) -> Result<Limits, Error> {
    let text = crate::input::read_text_capped(path)
        .map_err(|e| Error::Input(format!("cannot read --limits {}: {e}", path.display())))?;
    parse_limits_toml(&text).map_err(|e| Error::Input(format!("--limits {}: {e}", path.display())))
}

/// Parse the text of a `--limits` file.
pub fn parse_limits_toml(text: &str) -> Result<Limits, String> {
    let f: LimitsFile = toml::from_str(text).map_err(|e| {
        let msg = e.message().to_string();
        match e.span() {
            Some(span) => {
                let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                format!("line {line}: {msg} ({KEYS})")
            }
            None => format!("{msg} ({KEYS})"),
        }
    })?;
    let max_ns =
        f.max.as_deref().map(|d| parse_duration_ns(d).map_err(|e| format!("max: {e}"))).transpose()?;
    let mut percentiles = Vec::new();
    for (q, d) in &f.percentile {
        let percent = parse_percent(q.trim()).map_err(|e| format!("[percentile]: {e}"))?;
        let limit_ns = parse_duration_ns(d).map_err(|e| format!("[percentile] \"{q}\": {e}"))?;
        if let Some((other, _)) =
            f.percentile.iter().find(|(o, _)| *o < q && parse_percent(o.trim()) == Ok(percent))
        {
            return Err(format!(
                "[percentile] \"{other}\" and \"{q}\" limit one percentile twice: give each percentile once"
            ));
        }
        percentiles.push(PercentileLimit { percent, limit_ns });
    }
    percentiles.sort_by(|a, b| a.percent.total_cmp(&b.percent));
    let mut exceedance_per_hour = Vec::new();
    for (d, &p) in &f.max_exceedance_per_hour {
        let latency_ns =
            parse_duration_ns(d).map_err(|e| format!("[max_exceedance_per_hour] \"{d}\": {e}"))?;
        if !(p > 0.0 && p < 1.0) {
            return Err(format!(
                "[max_exceedance_per_hour] \"{d}\" = {p}: give a probability per hour above 0 and below 1, e.g. 1e-3"
            ));
        }
        if exceedance_per_hour.iter().any(|e: &crate::model::ExceedanceLimit| e.latency_ns == latency_ns) {
            return Err(format!(
                "[max_exceedance_per_hour] \"{d}\" names a latency given twice: give each latency once"
            ));
        }
        exceedance_per_hour.push(crate::model::ExceedanceLimit { latency_ns, per_hour: p });
    }
    exceedance_per_hour.sort_by_key(|e| e.latency_ns);
    Ok(Limits {
        exceedance_per_hour,
        max_ns,
        percentiles,
        max_timeouts: f.max_timeouts,
        max_lost: f.max_lost,
        max_late: f.max_late,
    })
}

impl LimitArgs {
    /// The limits these flags give: the file's, each overridden by a flag
    /// given too (a percentile by the same percentile).
    pub fn resolve(&self) -> Result<Limits, Error> {
        let mut l = match &self.limits {
            Some(p) => read_limits_file(p)?,
            None => Limits::default(),
        };
        if self.max.is_some() {
            l.max_ns = self.max;
        }
        let shown = |p: &PercentileLimit| {
            format!("--percentile {}={}", p.percent, crate::units::format_ns(p.limit_ns))
        };
        for (i, p) in self.percentile.iter().enumerate() {
            if let Some(q) = self.percentile[..i].iter().find(|q| q.percent == p.percent) {
                return Err(Error::Config(format!(
                    "{} and {} limit one percentile twice: give each percentile once",
                    shown(q),
                    shown(p)
                )));
            }
        }
        for p in &self.percentile {
            l.percentiles.retain(|q| q.percent != p.percent);
            l.percentiles.push(p.clone());
        }
        l.max_timeouts = self.max_timeouts.or(l.max_timeouts);
        l.max_lost = self.max_lost.or(l.max_lost);
        l.max_late = self.max_late.or(l.max_late);
        Ok(l)
    }
}

/// A figure as a limit's measurement: `Between` only ever comes from a
/// JSON report's bins (`percentile_of`), never from a figure.
impl From<Figure> for Measured {
    fn from(f: Figure) -> Self {
        match f {
            Figure::Value(value) => Measured::Value { value },
            Figure::Above(bound) => Measured::Above { bound },
            Figure::None => Measured::Nothing,
        }
    }
}

impl Measured {
    /// The single figure to print and plot: the value, the bound (`>`), the
    /// upper end of a range.
    pub fn headline(self) -> Option<u64> {
        match self {
            Measured::Value { value } => Some(value),
            Measured::Above { bound } => Some(bound),
            Measured::Between { high, .. } => Some(high),
            Measured::Nothing => None,
        }
    }
}

impl Verdict {
    /// `<= 200us` or `<= 3`.
    pub fn limit_text(&self) -> String {
        self.fmt(self.limit)
    }

    /// The measured figure as text: `187.3us`, `>8ms`, `12us..13us`, `-`.
    pub fn measured_text(&self) -> String {
        match self.measured {
            Measured::Value { value } => self.fmt(value),
            Measured::Above { bound } => match self.unit {
                LimitUnit::Ns => crate::units::Above(bound).readable(),
                _ => format!(">{}", self.fmt(bound)),
            },
            Measured::Between { low, high } => format!("{}..{}", self.fmt(low), self.fmt(high)),
            Measured::Nothing => "-".into(),
        }
    }

    /// The margin as text: `+12.7us` headroom, `-3us` over.
    pub fn margin_text(&self) -> String {
        match self.margin {
            None => "-".into(),
            Some(m) => {
                let sign = if m < 0 { "-" } else { "+" };
                let abs = u64::try_from(m.unsigned_abs()).unwrap_or(u64::MAX);
                format!("{sign}{}", self.fmt(abs))
            }
        }
    }

    fn fmt(&self, v: u64) -> String {
        match self.unit {
            LimitUnit::Ns => format_ns(v),
            LimitUnit::Count => v.to_string(),
            LimitUnit::ProbabilityE12 => format!("{:.2e}/h", v as f64 / 1e12),
        }
    }
}

/// Judge `r` against `limits`. `exact`, when the run's analysis is at hand
/// (a live run, a replayed raw file), gives any percentile to HdrHistogram's
/// precision; without it (a JSON report) a percentile is taken from the
/// report's own fields or else bounded by its 1 µs bins.
pub fn evaluate(r: &Report, limits: &Limits, exact: Option<&Analysis>) -> Vec<Verdict> {
    let mut v = Vec::new();
    if let Some(limit) = limits.max_ns {
        let measured = r.latency_ns.as_ref().map_or(Measured::Nothing, |l| l.figure(l.max).into());
        v.push(latency_verdict("max".into(), limit, measured, r));
    }
    for p in &limits.percentiles {
        let measured = percentile_of(r, p.percent, exact);
        v.push(latency_verdict(percentile_name(p.percent), p.limit_ns, measured, r));
    }
    for e in &limits.exceedance_per_hour {
        v.push(exceedance_verdict(r, e));
    }
    let c = &r.counts;
    for (name, limit, value, what) in [
        ("timeouts", limits.max_timeouts, c.timeouts, "samples timed out"),
        ("lost", limits.max_lost, c.lost, "samples were lost on the way"),
        ("late", limits.max_late, c.late_responses, "answers came after their stimulus's timeout"),
    ] {
        let Some(limit) = limit else { continue };
        let pass = value <= limit;
        v.push(Verdict {
            name: name.into(),
            unit: LimitUnit::Count,
            limit,
            measured: Measured::Value { value },
            pass,
            margin: Some(i128::from(limit) - i128::from(value)),
            why: (!pass).then(|| format!("{value} {what}, more than the {limit} allowed")),
        });
    }
    v
}

/// A probability in the verdicts' unit, 10⁻¹².
fn e12(p: f64) -> u64 {
    (p.clamp(0.0, 1.0) * 1e12).round() as u64
}

/// A per-hour exceedance limit, judged on the upper end of the tail
/// model's 95 % interval; no model (refused, or a report without one)
/// cannot prove it.
fn exceedance_verdict(r: &Report, e: &crate::model::ExceedanceLimit) -> Verdict {
    let name = exceedance_name(e.latency_ns);
    let limit = e12(e.per_hour);
    let fail = |why: String| Verdict {
        name: name.clone(),
        unit: LimitUnit::ProbabilityE12,
        limit,
        measured: Measured::Nothing,
        pass: false,
        margin: None,
        why: Some(why),
    };
    let Some(t) = &r.tail else {
        return fail(format!(
            "{name}: this report has no tail model (made by an older latprobe, or no samples): the \
             probability per hour cannot be proven within {:e}",
            e.per_hour
        ));
    };
    if let Some(why) = &t.refused {
        return fail(format!(
            "{name}: the tail model was refused ({why}), so the probability per hour of exceeding {} cannot \
             be proven within {:e}",
            format_ns(e.latency_ns),
            e.per_hour
        ));
    }
    let Some(p) = t.limits.iter().find(|l| l.latency_ns == e.latency_ns).and_then(|l| l.exceed_per_hour)
    else {
        let note = t.limits.iter().find(|l| l.latency_ns == e.latency_ns).and_then(|l| l.note.clone());
        return fail(format!(
            "{name}: the tail model gives no probability for {}{}",
            format_ns(e.latency_ns),
            note.map_or_else(String::new, |n| format!(" ({n})"))
        ));
    };
    let (lo, hi) = (p.lo.unwrap_or(0.0), p.hi.unwrap_or(1.0));
    let pass = hi <= e.per_hour;
    Verdict {
        name: name.clone(),
        unit: LimitUnit::ProbabilityE12,
        limit,
        measured: Measured::Between { low: e12(lo), high: e12(hi) },
        pass,
        margin: None,
        why: (!pass).then(|| {
            format!(
                "the probability that an hour exceeds {} is {:.2e} (95 %: {:.2e} to {:.2e}): its upper end is \
                 above the limit {:e}{}",
                format_ns(e.latency_ns),
                p.estimate.unwrap_or(0.0),
                lo,
                hi,
                e.per_hour,
                if lo <= e.per_hour { " (run longer to narrow the interval)" } else { "" }
            )
        }),
    }
}

fn latency_verdict(name: String, limit: u64, measured: Measured, r: &Report) -> Verdict {
    let timeout = r.latency_ns.as_ref().map_or(r.config.timeout_ns, |l| l.censored_above);
    let (pass, why) = match measured {
        Measured::Value { value } => (
            value <= limit,
            (value > limit)
                .then(|| format!("{name} is {}, above the limit {}", format_ns(value), format_ns(limit))),
        ),
        Measured::Above { bound } if bound == timeout && r.counts.timeouts > 0 => (
            false,
            Some(if limit <= bound {
                format!(
                    "{name} falls among the {} timeouts: above {}, so above the limit {}",
                    r.counts.timeouts,
                    format_ns(bound),
                    format_ns(limit)
                )
            } else {
                format!(
                    "{name} falls among the {} timeouts, known only to be above {}: it cannot be proven \
                     within {} (raise --timeout above the limit so that such answers are timed)",
                    r.counts.timeouts,
                    format_ns(bound),
                    format_ns(limit)
                )
            }),
        ),
        Measured::Above { bound } => (
            false,
            Some(format!(
                "{name} is beyond the JSON report's histogram range, above {}: it cannot be proven within {} \
                 (re-run `latprobe report` on the run's raw file, or record with a larger --histfile-max-us)",
                format_ns(bound),
                format_ns(limit)
            )),
        ),
        Measured::Between { low, high } => (
            high <= limit,
            (high > limit).then(|| {
                if low > limit {
                    format!("{name} is at least {}, above the limit {}", format_ns(low), format_ns(limit))
                } else {
                    format!(
                        "{name} lies between {} and {} in the JSON report's 1 us bins: it cannot be proven \
                         within {} (re-run `latprobe report` on the run's raw file for the exact figure)",
                        format_ns(low),
                        format_ns(high),
                        format_ns(limit)
                    )
                }
            }),
        ),
        Measured::Nothing => {
            (false, Some(format!("no sample arrived: {name} cannot be proven within the limit")))
        }
    };
    let margin = match measured {
        Measured::Value { value } => Some(i128::from(limit) - i128::from(value)),
        _ => None,
    };
    Verdict { name, unit: LimitUnit::Ns, limit, measured, pass, margin, why }
}

/// The latency at `percent` over every sample.
fn percentile_of(r: &Report, percent: f64, exact: Option<&Analysis>) -> Measured {
    if let Some(a) = exact {
        return a.quantile(percent / 100.0).into();
    }
    let Some(l) = &r.latency_ns else { return Measured::Nothing };
    // One of the report's own fields.
    if let Some((_, v)) = l.percentiles().into_iter().find(|(p, _)| p.percent == percent) {
        return l.figure(v).into();
    }
    // Another percentile of a JSON report: bounded by the 1 µs bins.
    let n = l.measured.saturating_add(l.censored);
    if n == 0 {
        return Measured::Nothing;
    }
    let rk = rank(percent / 100.0, n);
    if rk > l.measured {
        return Measured::Above { bound: l.censored_above };
    }
    let bin_ns = r.histogram.bin_ns.max(1);
    let mut seen = 0u64;
    // Saturating throughout: the bins of a JSON file are whatever it says.
    for [start, count] in &r.histogram.bins {
        seen = seen.saturating_add(*count);
        if seen >= rk {
            let low = start.saturating_mul(bin_ns).max(l.min.unwrap_or(0));
            let high = start.saturating_add(1).saturating_mul(bin_ns).saturating_sub(1);
            let high = high.min(l.max_measured.unwrap_or(u64::MAX)).max(low);
            return if low == high {
                Measured::Value { value: low }
            } else {
                Measured::Between { low, high }
            };
        }
    }
    // Measured, but beyond the bins: between the range's end and the
    // largest measured latency.
    let low = u64::from(r.histogram.max_us).saturating_mul(1000);
    match l.max_measured {
        Some(high) if high >= low => Measured::Between { low, high },
        _ => Measured::Above { bound: low },
    }
}

/// The verdicts' one-line outcome for the exit code and the error line:
/// `None` when every limit passed.
pub fn violation_summary(verdicts: &[Verdict]) -> Option<String> {
    let failed: Vec<&str> = verdicts.iter().filter(|v| !v.pass).map(|v| v.name.as_str()).collect();
    if failed.is_empty() {
        return None;
    }
    Some(format!(
        "{} of {} limits violated: {} (exit code 3)",
        failed.len(),
        verdicts.len(),
        failed.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_flags_parse_and_name_themselves() {
        let p = parse_percentile("99.9=100us").expect("valid");
        assert_eq!((p.percent, p.limit_ns), (99.9, 100_000));
        assert_eq!(parse_percentile("p99=1ms").expect("p prefix").percent, 99.0);
        for bad in ["100=1us", "0=1us", "-1=1us", "99.9", "x=1us", "99=fast"] {
            assert!(parse_percentile(bad).is_err(), "{bad} accepted");
        }
        assert_eq!(percentile_name(99.9), "p99.9");
        assert_eq!(percentile_name(99.99), "p99.99");
        assert_eq!(percentile_name(50.0), "p50");
    }

    #[test]
    fn a_limits_file_reads_and_flags_override_it() {
        let text =
            "max = \"200us\"\nmax_timeouts = 0\n[percentile]\n\"99.9\" = \"100us\"\n\"99\" = \"80us\"\n";
        let l = parse_limits_toml(text).expect("valid");
        assert_eq!(l.max_ns, Some(200_000));
        assert_eq!(l.max_timeouts, Some(0));
        assert_eq!(l.max_lost, None);
        let ps: Vec<(f64, u64)> = l.percentiles.iter().map(|p| (p.percent, p.limit_ns)).collect();
        assert_eq!(ps, vec![(99.0, 80_000), (99.9, 100_000)]);

        let dir = tempfile::tempdir().expect("tmp");
        let f = dir.path().join("limits.toml");
        std::fs::write(&f, text).expect("write");
        let args = LimitArgs {
            max: Some(150_000),
            percentile: vec![parse_percentile("99.9=90us").expect("valid")],
            limits: Some(f),
            ..LimitArgs::default()
        };
        let l = args.resolve().expect("resolves");
        assert_eq!(l.max_ns, Some(150_000), "the flag wins");
        assert_eq!(l.max_timeouts, Some(0), "the file's stays");
        assert!(l.exceedance_per_hour.is_empty());
        let p999: Vec<u64> = l.percentiles.iter().filter(|p| p.percent == 99.9).map(|p| p.limit_ns).collect();
        assert_eq!(p999, vec![90_000], "one p99.9, the flag's");
    }

    #[test]
    fn a_bad_limits_file_names_the_line_and_the_keys() {
        let e = parse_limits_toml("max = \"200us\"\nmax_latency = \"1ms\"\n").expect_err("unknown key");
        assert!(e.contains("line 2") && e.contains("max_latency") && e.contains("max_timeouts"), "{e}");
        let e = parse_limits_toml("max = \"fast\"\n").expect_err("bad duration");
        assert!(e.starts_with("max:"), "{e}");
        let e = parse_limits_toml("[percentile]\n\"100\" = \"1us\"\n").expect_err("bad percentile");
        assert!(e.contains("[percentile]"), "{e}");
        let e = parse_limits_toml("max_lost = -1\n").expect_err("negative count");
        assert!(e.contains("line 1"), "{e}");
    }
}
