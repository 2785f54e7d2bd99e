//! The terminal summary: a cyclictest-like line (Min/Avg/Max in µs and the
//! count of samples), a percentile table over every sample with the
//! censored cells as `>bound`, and the counters that qualify the figures.

use std::fmt::Write as _;

use super::Report;
use crate::analysis::Figure;
use crate::out::clean;
pub use crate::units::us_floor;
use crate::units::{format_ns, us_fixed, Above};

/// A figure in µs with two decimals, `>bound` when censored, `-` when absent.
pub fn us_cell(q: Figure) -> String {
    match q {
        Figure::Value(v) => us_fixed(v, 2),
        Figure::Above(b) => Above(b).us(2),
        Figure::None => "-".into(),
    }
}

/// A figure in readable units, `>bound` when censored, `-` when absent.
pub fn ns_cell(q: Figure) -> String {
    match q {
        Figure::Value(v) => format_ns(v),
        Figure::Above(b) => Above(b).readable(),
        Figure::None => "-".into(),
    }
}

/// The summary of `r`, as printed at the end of a run or by `report`.
pub fn summary(r: &Report) -> String {
    summary_with(r, false)
}

/// [`summary`], with the naive periodic figures (against the nominal
/// schedule) when `show_naive`.
pub fn summary_with(r: &Report, show_naive: bool) -> String {
    let mut s = String::new();
    let c = &r.counts;
    let probe = r.probe.as_ref().map_or_else(
        || "no probe answered".to_string(),
        |p| {
            let (board, fw) = (clean(&p.hello.board), clean(&p.hello.firmware_version));
            format!("{board} {fw}, {} Hz timer", p.hello.timer_hz)
        },
    );
    let _ = writeln!(s, "latprobe {} on {} ({probe})", r.config.mode_name(), clean(&r.source));
    if r.config.mode.mode().is_echo() {
        let stim = if r.config.identity {
            format!("{}, late answers timed up to {}", r.config.stimulus, format_ns(r.config.timeout_ns))
        } else {
            format!("{}, identity off: one in flight", r.config.stimulus)
        };
        let _ = writeln!(s, "stimulus {stim}");
    }
    // cyclictest's own line: `T: 0 ( pid) P:99 I:1000 C: 100000 Min: 3 Act: 5 Avg: 4 Max: 17`,
    // without the thread, priority and "Act" that have no meaning here. C
    // counts every sample; Max stays a number, as cyclictest prints it: the
    // largest measured latency, and when the true max is censored (above
    // the timeout) the note says so and the lines below give the bound.
    let whole = |q: Figure| match q {
        Figure::Value(v) => (v / 1000).to_string(),
        Figure::Above(b) => Above(b).us(0),
        Figure::None => "0".into(),
    };
    let (min, avg, max, measured) = match &r.latency_ns {
        Some(l) => (
            whole(l.figure(l.min)),
            l.mean.map_or_else(|| "-".to_string(), |m| (m / 1000).to_string()),
            match (l.figure(l.max), l.max_measured) {
                (Figure::Above(_), Some(m)) => (m / 1000).to_string(),
                (f, _) => whole(f),
            },
            l.measured,
        ),
        None => ("0".into(), "0".into(), "0".into(), 0),
    };
    let avg_note = match (c.timeouts, measured) {
        (0, _) => String::new(),
        (_, 0) => ", none measured".to_string(),
        (t, m) => format!(", Avg and Max over the {m} measured, {t} above the timeout"),
    };
    // Without a sample the line would say nothing but zeros.
    if c.samples > 0 {
        let _ = writeln!(
            s,
            "I:{} C:{:>7} Min:{:>7} Avg:{:>5} Max:{:>8}  (µs; C counts every sample{avg_note})",
            r.config.interval_ns / 1000,
            c.samples,
            min,
            avg,
            max
        );
    }
    match &r.latency_ns {
        Some(l) => {
            let label = if r.periodic.is_some() { "delay µs  " } else { "latency µs" };
            // min, the standard percentiles, max: names over figures.
            let names: Vec<(&str, Option<u64>)> = std::iter::once(("min", l.min))
                .chain(l.percentiles().map(|(p, v)| (p.name, v)))
                .chain([("max", l.max)])
                .collect();
            let _ = write!(s, "{label} ");
            for (n, _) in &names {
                let _ = write!(s, " {n:>9}");
            }
            let _ = write!(s, "\n           ");
            for (_, v) in &names {
                let _ = write!(s, " {:>9}", us_cell(l.figure(*v)));
            }
            s.push('\n');
            if l.censored > 0 {
                let names = &names[..names.len() - 1];
                let first = names.iter().find(|(_, v)| v.is_none()).map(|(n, _)| *n);
                let which = match first {
                    Some("min") => "every figure is censored".to_string(),
                    Some(n) => format!("percentiles from {n} up and the max are censored"),
                    None => "the max is censored".to_string(),
                };
                let _ = writeln!(
                    s,
                    "{} of {} samples timed out (>{} µs): {which}",
                    l.censored,
                    l.measured + l.censored,
                    us_floor(l.censored_above, 2)
                );
            }
        }
        None => {
            let _ = writeln!(s, "no samples: no latency figures");
        }
    }
    if let Some(sc) = &r.schedule {
        schedule_lines(&mut s, sc);
    }
    let _ = writeln!(
        s,
        "samples {}  responses {}  timeouts {}  lost {}  overruns {}",
        c.samples, c.responses, c.timeouts, c.lost, c.overruns
    );
    if c.duplicates + c.out_of_order + c.dropped_by_probe + c.bad_frames > 0 {
        let _ = writeln!(
            s,
            "duplicates {}  out of order {}  dropped by probe {}  bad frames {}",
            c.duplicates, c.out_of_order, c.dropped_by_probe, c.bad_frames
        );
    }
    if let (Some(n), Some(t)) = (c.triggered, r.config.trigger_ns) {
        let _ = writeln!(
            s,
            "{n} of {} samples triggered (unanswered after {}: the probe raised its trigger output)",
            c.samples,
            format_ns(t)
        );
    }
    if c.any_anomaly() {
        // Only what happened: each anomaly that is not zero.
        let mut parts = Vec::new();
        for (name, n) in [
            ("late", c.late_responses),
            ("duplicate answers", c.duplicate_answers),
            ("unmatched", c.unmatched),
            ("wrong bytes", c.wrong_bytes),
        ] {
            if n > 0 {
                parts.push(format!("{name} {n}"));
            }
        }
        if c.slipped > 0 {
            parts.push(format!("slipped {} (longest {})", c.slipped, format_ns(c.slip_max_ns)));
        }
        for (name, n) in [
            ("reclaimed", c.reclaimed),
            ("overcaptures", c.overcaptures),
            ("line errors", c.line_errors),
            ("soft-timed stimuli", c.soft_stimuli),
            ("host-link receive errors", c.host_rx_errors),
        ] {
            if n > 0 {
                parts.push(format!("{name} {n}"));
            }
        }
        let _ = writeln!(s, "anomalies: {}", parts.join("  "));
    }
    if let Some(w) = &r.worst {
        let _ = writeln!(
            s,
            // In the table's own unit and precision: one max, one way.
            "worst measured {} µs at sample {}, {} after start",
            us_fixed(w.latency_ns, 2),
            w.seq,
            format_ns(w.at_ns_from_start)
        );
    }
    for p in &r.phases {
        let span = match p.end_s {
            Some(e) => format!("{}–{} s", p.start_s, e),
            None => format!("{} s to the end", p.start_s),
        };
        let figures = p.latency_ns.as_ref().map_or_else(String::new, |l| {
            let cell = |v: Option<u64>| match v {
                Some(v) => us_fixed(v, 2),
                None => format!(">{}", us_fixed(l.censored_above, 2)),
            };
            format!(
                ", p50 {} µs, p99 {} µs, p99.9 {} µs, max {} µs",
                cell(l.p50),
                cell(l.p99),
                cell(l.p99_9),
                cell(l.max)
            )
        });
        let _ = writeln!(
            s,
            "phase {} {span}: {} samples, {} timeouts{figures}{}",
            p.name,
            p.samples,
            p.timeouts,
            phase_loads(p)
        );
    }
    for l in &r.loads {
        for end in l.ran.iter().flatten().filter_map(|span| span.ended.as_deref()) {
            let _ = writeln!(s, "load ended early: {end}");
        }
    }
    let range_overflows = r.histogram.overflows.saturating_sub(c.timeouts);
    if range_overflows > 0 {
        let _ = writeln!(
            s,
            "{range_overflows} measured latencies above the {} µs histogram range",
            r.histogram.max_us
        );
    }
    if let Some(p) = &r.periodic {
        periodic_section(&mut s, p, show_naive);
    }
    if let Some(t) = &r.tail {
        s.push_str(&super::tail::text(t));
    }
    if let Some(t) = &r.trace {
        s.push_str(&super::trace::text(t, 12));
    }
    if !r.verdicts.is_empty() {
        verdict_section(&mut s, &r.verdicts);
    }
    let ended = format!("{:?}", r.ended_by);
    let _ = writeln!(
        s,
        "{}: ended by {}{}",
        if r.complete { "complete" } else { "INCOMPLETE" },
        kebab(&ended),
        r.probe_elapsed_ns.map_or_else(String::new, |e| format!(" after {} (probe clock)", format_ns(e)))
    );
    for n in &r.notes {
        let _ = writeln!(s, "note: {}", clean(n));
    }
    s
}

/// The limits, one line each: verdict, name, limit, measured, margin, and
/// for a violation why.
fn verdict_section(s: &mut String, verdicts: &[crate::model::Verdict]) {
    let failed = verdicts.iter().filter(|v| !v.pass).count();
    let head = if failed == 0 {
        format!("limits: all {} passed", verdicts.len())
    } else {
        format!("limits: {failed} of {} VIOLATED", verdicts.len())
    };
    let _ = writeln!(s, "{head}");
    for v in verdicts {
        let _ = writeln!(
            s,
            "  {:<4}  {:<9} at most {:>9}  measured {:>11}  margin {:>9}",
            if v.pass { "pass" } else { "FAIL" },
            v.name,
            v.limit_text(),
            v.measured_text(),
            v.margin_text()
        );
        if let Some(why) = &v.why {
            let _ = writeln!(s, "        {why}");
        }
    }
}

/// The periodic lines: the fit, the cycle accounting, the naive figures
/// (when asked), the target's own view (when given).
fn periodic_section(s: &mut String, p: &super::PeriodicReport, show_naive: bool) {
    let _ = writeln!(
        s,
        "periodic: {} edges, {} cycles, {} missed periods, {} late edges, {} lost",
        p.edges, p.cycles, p.missed_periods, p.late_edges, p.lost
    );
    match &p.fit {
        Some(f) => {
            let d = &f.drift;
            let slope = d.ppm_per_hour.map_or_else(String::new, |v| format!(", {v:+.3} ppm/h"));
            let _ = writeln!(
                s,
                "  fitted period {} (nominal {}): the target's clock runs {:+.3} ppm against the probe's",
                ns_frac(f.period_ns),
                format_ns(f.nominal_period_ns),
                f.offset_ppm
            );
            let _ = writeln!(
                s,
                "  drift over {} blocks: {:+.3} → {:+.3} ppm (range {:+.3} … {:+.3}{slope})",
                d.blocks, d.first_ppm, d.last_ppm, d.min_ppm, d.max_ppm
            );
            let _ = writeln!(s, "  delays are against the fit; 0 is the earliest edge the fit allows");
        }
        None if !p.note.is_empty() && p.edges > 0 => {
            let _ = writeln!(s, "  note: {}", clean(&p.note));
        }
        None => {}
    }
    if let Some(i) = &p.intervals {
        let _ = writeln!(
            s,
            "  raw intervals: min {} mean {} max {} ({} intervals)",
            format_ns(i.min_ns),
            format_ns(i.mean_ns),
            format_ns(i.max_ns),
            i.count
        );
    }
    if show_naive {
        match &p.naive {
            Some(n) => {
                let _ = writeln!(
                    s,
                    "  naive, against the nominal schedule (zero at the earliest edge), µs: p50 {} p90 {} p99 {} \
                     p99.9 {} max {}",
                    us_fixed(n.p50, 2),
                    us_fixed(n.p90, 2),
                    us_fixed(n.p99, 2),
                    us_fixed(n.p99_9, 2),
                    us_fixed(n.max, 2)
                );
                let _ = writeln!(
                    s,
                    "  (what a histogram that trusts the target's clock shows: mostly clock offset, not latency)"
                );
            }
            None => {
                let _ = writeln!(s, "  naive: not in this report");
            }
        }
    }
    if let Some(t) = &p.target_log {
        target_log_section(s, t);
    }
}

/// `; loads running: hackbench (whole phase), dd (3.2 s of it)`, `; no
/// load ran`, or nothing when the loads were not watched.
fn phase_loads(p: &crate::report::PhaseReport) -> String {
    match p.loads.as_deref() {
        None => String::new(),
        Some([]) => "; no load ran".to_owned(),
        Some(l) => {
            let each: Vec<String> = l
                .iter()
                .map(|l| {
                    if l.throughout {
                        format!("{} (whole phase)", l.name)
                    } else {
                        format!("{} ({}.{} s of it)", l.name, l.ran_ms / 1000, (l.ran_ms % 1000) / 100)
                    }
                })
                .collect();
            format!("; loads running: {}", each.join(", "))
        }
    }
}

/// External beside internal.
fn target_log_section(s: &mut String, t: &crate::analysis::targetlog::TargetLogReport) {
    let corr = t.correlation.map_or_else(String::new, |c| format!(", correlation {c:.3}"));
    let _ = writeln!(
        s,
        "target's own view ({}): {} cycles aligned (target cycle = probe cycle {:+}, by {}{corr})",
        clean(&t.file),
        t.aligned,
        t.offset,
        t.alignment
    );
    let _ = writeln!(
        s,
        "  log cycles {}  probe only {}  missed but logged {}  log outside the run {}",
        t.log_cycles, t.probe_only, t.missed_but_logged, t.log_outside
    );
    if let (n @ 1.., Some(above)) = (t.censored, t.censored_above_ns) {
        let _ = writeln!(
            s,
            "  {n} cycles in both came later than the timeout (>{} µs): timeouts in the figures above, so \
             censored here too, not compared",
            us_fixed(above, 2)
        );
    }
    if let Some(c) = t.capped_at_cycle {
        let _ = writeln!(
            s,
            "  the log reached its cap on the target at its cycle {c} (--log-max, half the room there): the \
             later cycles are the probe's only"
        );
    }
    let _ = writeln!(
        s,
        "  µs                   {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "min", "avg", "p50", "p90", "p99", "p99.9", "p99.99", "max"
    );
    let us = |v: i64| {
        let a = us_fixed(v.unsigned_abs(), 2);
        if v < 0 {
            format!("-{a}")
        } else {
            a
        }
    };
    for (name, f) in [
        ("internal (whole log)", &t.internal_all),
        ("internal (aligned)  ", &t.internal),
        ("external (aligned)  ", &t.external),
        ("external − internal ", &t.difference),
    ] {
        if let Some(f) = f {
            let _ = writeln!(
                s,
                "  {name} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
                us(f.min),
                us(f.mean),
                us(f.p50),
                us(f.p90),
                us(f.p99),
                us(f.p99_9),
                us(f.p99_99),
                us(f.max)
            );
        }
    }
    for d in t.disagreements.iter().take(5) {
        let _ = writeln!(
            s,
            "  disagree: cycle {} (target {}): external {} µs, internal {} µs, difference {} µs",
            d.cycle,
            d.target_cycle,
            us_fixed(d.external_ns, 2),
            us_fixed(d.internal_ns, 2),
            us(d.difference_ns)
        );
    }
}

/// A fractional ns figure, e.g. `999.500125us`.
fn ns_frac(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.6}ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.6}us", ns / 1e3)
    } else {
        format!("{ns:.3}ns")
    }
}

fn kebab(camel: &str) -> String {
    let mut out = String::new();
    for (i, ch) in camel.chars().enumerate() {
        if ch.is_uppercase() && i > 0 {
            out.push('-');
        }
        out.push(ch.to_ascii_lowercase());
    }
    out
}

impl super::ConfigReport {
    /// The mode as named on the command line.
    pub fn mode_name(&self) -> &'static str {
        self.mode.mode().name()
    }
}

/// Every scheduled instant a sample (issue 42), in a user's words: the
/// stretch with no stimulus, what its instants count as, and the target's
/// service time beside the schedule's figures.
fn schedule_lines(s: &mut String, sc: &super::ScheduleReport) {
    let timeout = format_ns(sc.service_ns.censored_above);
    if sc.omitted > 0 {
        let what = match (sc.omitted_min_ns, sc.omitted_above_timeout) {
            (None, _) => format!("samples above {timeout} (the timeout)"),
            (Some(m), 0) => format!("samples of {} or more", format_ns(m)),
            (Some(m), k) => {
                format!("samples of {} or more, {k} of them above {timeout} (the timeout)", format_ns(m))
            }
        };
        let _ = writeln!(
            s,
            "no stimulus was sent for up to {} while the target was behind; those {} scheduled instants are {what}",
            format_ns(sc.longest_gap_ns),
            sc.omitted
        );
    }
    let (n, verb, pron) =
        if sc.waited == 1 { ("stimulus", "is", "its") } else { ("stimuli", "are", "their") };
    let _ = writeln!(
        s,
        "{} {n} waited for the target and {verb} timed from {pron} planned instant: every figure is what a \
         loop sending on this schedule sees",
        sc.waited
    );
    let l = &sc.service_ns;
    let cells: Vec<String> = [("p50", l.p50), ("p99", l.p99), ("p99.9", l.p99_9), ("max", l.max)]
        .into_iter()
        .map(|(n, v)| format!("{n} {}", us_cell(l.figure(v))))
        .collect();
    let _ = writeln!(
        s,
        "the target's service time (from each actual send, {} stimuli): {} µs",
        l.measured + l.censored,
        cells.join("  ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_censored_bound_is_rounded_down() {
        assert_eq!(us_floor(500_009, 2), "500.00");
        assert_eq!(us_floor(8_000_000, 2), "8000.00");
        assert_eq!(us_floor(1_999, 0), "1");
        assert_eq!(us_cell(Figure::Above(500_009)), ">500.00");
        assert_eq!(us_cell(Figure::Value(11_944)), "11.94");
        assert_eq!(ns_cell(Figure::Above(1_500_000)), ">1.5ms");
        assert_eq!(ns_cell(Figure::None), "-");
    }
}
