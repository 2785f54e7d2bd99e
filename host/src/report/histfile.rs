//! cyclictest's `--histfile` layout, one column for the one "thread" (the
//! probe), so tools written for cyclictest read ours:
//!
//! ```text
//! # Histogram
//! 000000 000000        one row per 1 µs bin, all bins 0..max_us
//! ...
//! # Total: 000010000   measured latencies inside the bins
//! # Min Latencies: 00012
//! # Avg Latencies: 00015
//! # Max Latencies: 00098
//! # Histogram Overflows: 00003
//! # Histogram Overflow at cycle number:
//! # Thread 0: 01234 05678 # 00001 others
//! ```
//!
//! latprobe's own comment lines come first, each `# latprobe: KEY VALUE`:
//! the counts, `mode`, `interval_ns`, `timeout_ns`, `unit us`, `probe`
//! (board, firmware, timer), `started` and `command_line` (a JSON array),
//! so that `latprobe import` reads the file back as latprobe's (files of
//! older versions have only the first line, the counts and the timeout
//! sentence).
//!
//! Latencies are in whole µs, rounded down (bin `i` holds `[i, i+1)` µs).
//! A timeout is a sample whose latency is above the timeout: it counts as
//! an overflow, its sequence number listed with the others, so `Total` +
//! `Histogram Overflows` = samples, as in cyclictest. Like cyclictest, the
//! overflow list holds the first ones and ends with `# NNNNN others` for
//! the rest. `Min`, `Avg` and `Max Latencies` are over the measured
//! latencies (cyclictest's own max is of what it measured); when samples
//! timed out, latprobe's own `#` comment lines, which come first, say that
//! the true max is censored above the timeout.

use std::fmt::Write as _;
use std::path::Path;

use super::Report;
use crate::Error;

/// `r` in the histfile layout.
pub fn render(r: &Report) -> String {
    let h = &r.histogram;
    let mut counts = vec![0u64; h.max_us as usize];
    for [bin, count] in &h.bins {
        if let Some(c) = counts.get_mut(*bin as usize) {
            // A damaged report's counts must not wrap (json::read refuses
            // them; a report built in memory is saturated).
            *c = c.saturating_add(*count);
        }
    }
    let mut s = String::with_capacity(16 * counts.len() + 512);
    let c = &r.counts;
    let _ = writeln!(s, "# latprobe {}: latencies measured by the probe's clock, 1 us bins", r.tool_version);
    let _ = writeln!(
        s,
        "# latprobe: samples {} responses {} timeouts {} lost {}",
        c.samples, c.responses, c.timeouts, c.lost
    );
    // What `latprobe import` needs to read the file back as latprobe's
    // (cyclictest's readers skip `#` lines before `# Histogram`).
    let _ = writeln!(s, "# latprobe: mode {}", r.config.mode_name());
    let _ = writeln!(s, "# latprobe: interval_ns {}", r.config.interval_ns);
    let _ = writeln!(s, "# latprobe: timeout_ns {}", r.config.timeout_ns);
    let _ = writeln!(s, "# latprobe: unit us");
    if let Some(p) = &r.probe {
        // One line each: a board's name comes from the probe.
        let one_line = |v: &str| crate::out::clean(v).into_owned();
        let _ = writeln!(
            s,
            "# latprobe: probe {} {}, {} Hz timer{}",
            one_line(&p.hello.board),
            one_line(&p.hello.firmware_version),
            p.hello.timer_hz,
            if p.hello.is_emulated() { ", emulated" } else { "" }
        );
    }
    if !r.started_at.is_empty() {
        let _ = writeln!(s, "# latprobe: started {}", r.started_at);
    }
    if let Some(cmd) = &r.command_line {
        let _ = writeln!(s, "# latprobe: command_line {}", serde_json::to_string(cmd).unwrap_or_default());
    }
    let l = r.latency_ns.as_ref();
    if c.timeouts > 0 {
        let bound = crate::report::text::us_floor(l.map_or(r.config.timeout_ns, |l| l.censored_above), 3);
        let _ = writeln!(
            s,
            "# latprobe: the {} timeouts are latencies above {bound} us, counted as overflows; Max \
             Latencies is the largest measured: the true max is censored (>{bound} us)",
            c.timeouts,
        );
    }
    let _ = writeln!(s, "# Histogram");
    for (i, c) in counts.iter().enumerate() {
        let _ = writeln!(s, "{i:06} {c:06}");
    }
    let total = counts.iter().fold(0u64, |a, &c| a.saturating_add(c));
    let us = |v: Option<u64>| v.map_or(0, |v| v / 1000);
    let (min, avg, max) = l.map_or((0, 0, 0), |l| (us(l.min), us(l.mean), us(l.max_measured)));
    let _ = writeln!(s, "# Total: {total:09}");
    let _ = writeln!(s, "# Min Latencies: {min:05}");
    let _ = writeln!(s, "# Avg Latencies: {avg:05}");
    let _ = writeln!(s, "# Max Latencies: {max:05}");
    let _ = writeln!(s, "# Histogram Overflows: {:05}", h.overflows);
    let _ = writeln!(s, "# Histogram Overflow at cycle number:");
    let _ = write!(s, "# Thread 0:");
    for seq in &h.overflow_seqs {
        let _ = write!(s, " {seq:05}");
    }
    let listed = h.overflow_seqs.len() as u64;
    if h.overflows > listed {
        let _ = write!(s, " # {:05} others", h.overflows - listed);
    }
    // cyclictest ends the file with an empty line.
    let _ = writeln!(s);
    let _ = writeln!(s);
    s
}

/// Write `r` to `path` in the histfile layout.
pub fn write(r: &Report, path: &Path) -> Result<(), Error> {
    crate::fsout::write(path, render(r).as_bytes())
        .map_err(|e| Error::io(format!("cannot write the histogram {} (--histfile)", path.display()), e))
}

/// What a histfile says, read back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Bin rows, `(µs, count)`.
    pub bins: Vec<(u64, u64)>,
    /// `# Total:`.
    pub total: u64,
    /// `# Min Latencies:`.
    pub min_us: u64,
    /// `# Avg Latencies:`.
    pub avg_us: u64,
    /// `# Max Latencies:`.
    pub max_us: u64,
    /// `# Histogram Overflows:`.
    pub overflows: u64,
    /// The listed overflow cycle numbers.
    pub overflow_cycles: Vec<u64>,
    /// Overflows not listed (`# NNNNN others`).
    pub overflow_others: u64,
}

/// Parse a histfile of one column (ours or cyclictest's with one thread).
pub fn parse(text: &str) -> Result<Parsed, String> {
    let mut p = Parsed::default();
    let num = |v: &str, line: &str| v.trim().parse::<u64>().map_err(|_| format!("bad number in '{line}'"));
    let mut in_cycles = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            if let Some((key, val)) = rest.split_once(':') {
                match key {
                    "Total" => p.total = num(val, line)?,
                    "Min Latencies" => p.min_us = num(val, line)?,
                    "Avg Latencies" => p.avg_us = num(val, line)?,
                    "Max Latencies" => p.max_us = num(val, line)?,
                    "Histogram Overflows" => p.overflows = num(val, line)?,
                    "Histogram Overflow at cycle number" => in_cycles = true,
                    "Thread 0" if in_cycles => {
                        let (listed, others) = val.split_once('#').unwrap_or((val, ""));
                        for v in listed.split_whitespace() {
                            p.overflow_cycles.push(num(v, line)?);
                        }
                        if let Some(n) = others.trim().strip_suffix("others") {
                            p.overflow_others = num(n, line)?;
                        }
                    }
                    _ => {}
                }
            }
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut it = line.split_whitespace();
        let (Some(bin), Some(count)) = (it.next(), it.next()) else {
            return Err(format!("bad row '{line}'"));
        };
        p.bins.push((num(bin, line)?, num(count, line)?));
    }
    Ok(p)
}
