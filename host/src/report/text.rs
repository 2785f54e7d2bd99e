//! The terminal summary: a cyclictest-like line (Min/Avg/Max in µs and the
//! count), a percentile table, and the counters that qualify the figures.

use std::fmt::Write as _;

use super::Report;
use crate::units::{format_ns, us_fixed};

/// The summary of `r`, as printed at the end of a run or by `report`.
pub fn summary(r: &Report) -> String {
    let mut s = String::new();
    let c = &r.counts;
    let probe = r.probe.as_ref().map_or_else(
        || "no probe answered".to_string(),
        |p| format!("{} {}, {} Hz timer", p.hello.board, p.hello.firmware_version, p.hello.timer_hz),
    );
    let _ = writeln!(s, "latprobe {} on {} ({probe})", r.config.mode_name(), r.source);
    let (min, avg, max) =
        r.latency_ns.as_ref().map_or((0, 0, 0), |l| (l.min / 1000, l.mean / 1000, l.max / 1000));
    // cyclictest's own line: `T: 0 ( pid) P:99 I:1000 C: 100000 Min: 3 Act: 5 Avg: 4 Max: 17`,
    // without the thread, priority and "Act" that have no meaning here.
    let _ = writeln!(
        s,
        "I:{} C:{:>7} Min:{:>7} Avg:{:>5} Max:{:>8}  (µs; C counts responses)",
        r.config.interval_ns / 1000,
        c.responses,
        min,
        avg,
        max
    );
    match &r.latency_ns {
        Some(l) => {
            let _ = writeln!(
                s,
                "latency µs  {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
                "min", "p50", "p90", "p99", "p99.9", "p99.99", "max"
            );
            let f = |v| us_fixed(v, 2);
            let _ = writeln!(
                s,
                "            {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
                f(l.min),
                f(l.p50),
                f(l.p90),
                f(l.p99),
                f(l.p99_9),
                f(l.p99_99),
                f(l.max)
            );
        }
        None => {
            let _ = writeln!(s, "no responses: no latency figures");
        }
    }
    let _ = writeln!(
        s,
        "samples {}  responses {}  timeouts {}  lost {}  overruns {}",
        c.samples, c.responses, c.timeouts, c.lost, c.overruns
    );
    if c.duplicates + c.out_of_order + c.dropped_by_probe + c.bad_frames + c.late_responses > 0 {
        let _ = writeln!(
            s,
            "duplicates {}  out of order {}  dropped by probe {}  bad frames {}  late responses {}",
            c.duplicates, c.out_of_order, c.dropped_by_probe, c.bad_frames, c.late_responses
        );
    }
    if let Some(w) = &r.worst {
        let _ = writeln!(
            s,
            "worst {} at sample {}, {} after start",
            format_ns(w.latency_ns),
            w.seq,
            format_ns(w.at_ns_from_start)
        );
    }
    if r.histogram.overflows > 0 {
        let _ = writeln!(
            s,
            "{} latencies above the {} µs histogram range",
            r.histogram.overflows, r.histogram.max_us
        );
    }
    if let Some(p) = &r.periodic {
        let _ = writeln!(s, "periodic: {} edges, {} lost", p.edges, p.lost);
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
        let _ = writeln!(s, "  note: {}", p.note);
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
        let _ = writeln!(s, "note: {n}");
    }
    s
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
