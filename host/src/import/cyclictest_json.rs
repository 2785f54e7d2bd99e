//! cyclictest's `--json=FILE` results (rt-tests 2.x, `"file_version": 1`).
//!
//! ```text
//! { "cmdline:": "cyclictest ... -h 100 --json=x.json",  keys end with a colon
//!   "rt_test_version:": "2.40", "return_code": 0, "sysinfo": {...},
//!   "resolution_in_ns": 0,                                1 with -N
//!   "thread": { "0": { "histogram": {"11": 2, ...},      sparse, in-range bins only
//!                      "cycles": 300, "min": 11, "max": 43, "avg": 22.33,
//!                      "cpu": 0, "node": 0 }, ... } }
//! ```
//!
//! The JSON has no overflow count: overflows are `cycles` minus the
//! histogram's sum, and the histogram's range comes from the command
//! line's `-h`/`-H`. Without `-h` cyclictest keeps no histogram at all.

use serde_json::{Map, Value};

use super::cyclictest_hist::check_against_bins;
use super::{clip, unit_extra, HistogramRange, ImportError, ImportedRun, TimeUnit};

pub(super) fn parse(name: &str, text: &str) -> Result<Vec<ImportedRun>, ImportError> {
    parse_counting(name, text, &std::cell::Cell::new(0))
}

/// The document being read, for errors that point at a line.
struct Doc<'a> {
    name: &'a str,
    text: &'a str,
    scanned: &'a std::cell::Cell<u64>,
}

impl Doc<'_> {
    fn err(&self, line: usize, msg: String) -> ImportError {
        ImportError::at(self.name, line, msg)
    }

    /// The first line at or after `after` that holds `needle` (else
    /// `after`), counting the lines looked at.
    fn line_of(&self, needle: &str, after: usize) -> usize {
        self.text
            .lines()
            .enumerate()
            .skip(after.saturating_sub(1))
            .inspect(|_| self.scanned.set(self.scanned.get() + 1))
            .find(|(_, l)| l.contains(needle))
            .map_or(after.max(1), |(i, _)| i + 1)
    }
}

/// The command line's facts: the unit, the histogram's `-h`, the interval.
struct Command<'a> {
    cmdline: Option<&'a str>,
    args: Vec<&'a str>,
}

/// One thread's figures as the file gives them.
struct Thread<'a> {
    index: u32,
    key: &'a str,
    cycles: u64,
    min: u64,
    max: u64,
    avg: f64,
    /// `(bin, samples)`, ascending, in the file's unit.
    bins: Vec<(u64, u64)>,
    cpu: Option<u32>,
    node: Option<Value>,
}

/// [`parse`], adding to `scanned` every line the search for an error's
/// line number looks at. Line numbers are looked up only for an error:
/// looking one up per histogram bin made a 4-thread file of 50 000 bins
/// each take minutes (every lookup rescans the text).
fn parse_counting(
    name: &str,
    text: &str,
    scanned: &std::cell::Cell<u64>,
) -> Result<Vec<ImportedRun>, ImportError> {
    let doc = Doc { name, text, scanned };
    let root: Value = serde_json::from_str(text)
        .map_err(|e| doc.err(e.line().max(1), format!("expected cyclictest JSON: {e}")))?;
    let Some(root) = root.as_object() else {
        return Err(doc.err(1, "expected a JSON object".into()));
    };
    let Some(threads) = root.get("thread").and_then(Value::as_object) else {
        let found =
            if root.contains_key("thread") { "a 'thread' that is not an object" } else { "no 'thread'" };
        return Err(doc.err(
            doc.line_of("\"thread\"", 1),
            format!("expected cyclictest --json output with a 'thread' object, found {found}"),
        ));
    };
    let cmdline = root.get("cmdline:").and_then(Value::as_str);
    let version = root.get("rt_test_version:").and_then(Value::as_str).map(str::to_owned);
    let args: Vec<&str> = cmdline.map(|c| c.split_whitespace().collect()).unwrap_or_default();
    let cmd = Command { cmdline, args };
    let (unit, unit_source) = file_unit(&doc, root, &cmd)?;
    let u = unit.ns();
    let interval_us = if cmd.cmdline.is_some() {
        match option_value(&cmd.args, "-i", "--interval") {
            Some(v) => v.parse::<u64>().ok(),
            None => Some(1000),
        }
    } else {
        None
    };

    let (keyed, thread_line) = thread_keys(&doc, root, threads)?;
    // The histogram's range: the command line's -h, else the end of the
    // highest bin in any thread (overflows lie beyond it).
    let mut parsed = Vec::with_capacity(keyed.len());
    let mut highest_end = 0;
    for &(index, key, value) in &keyed {
        let th = read_thread(&doc, index, key, value, thread_line)?;
        if let Some(&(last, _)) = th.bins.last() {
            highest_end = highest_end.max(last.saturating_add(1));
        }
        parsed.push(th);
    }
    let range_units = histogram_range(&cmd, highest_end);

    let mut extra = Map::new();
    extra.insert("format".into(), Value::from("cyclictest json"));
    extra.extend(unit_extra(unit, unit_source));
    for key in [
        "file_version",
        "start_time",
        "end_time",
        "return_code",
        "sysinfo",
        "num_threads",
        "resolution_in_ns",
    ] {
        if let Some(v) = root.get(key) {
            extra.insert(key.into(), v.clone());
        }
    }
    let mut runs = Vec::with_capacity(parsed.len());
    for th in parsed {
        let overflows = check_thread(&doc, &th, range_units, u, thread_line)?;
        let mut extra = extra.clone();
        if let Some(node) = th.node {
            extra.insert("node".into(), node);
        }
        let avg_ns = (th.avg * u as f64).round() as u64;
        let (index, cycles) = (th.index, th.cycles);
        runs.push(ImportedRun {
            tool: "cyclictest".into(),
            tool_version: version.clone(),
            cmdline: cmd.cmdline.map(str::to_owned),
            source_file: name.to_owned(),
            thread: format!("T{index}"),
            cpu: th.cpu,
            interval_ns: if index == 0 { interval_us.map(|i| i.saturating_mul(1000)) } else { None },
            count: cycles,
            min_ns: (cycles > 0).then(|| th.min.saturating_mul(u)),
            avg_ns: (cycles > 0).then_some(avg_ns),
            max_ns: (cycles > 0).then(|| th.max.saturating_mul(u)),
            // "%.2f" of the unit.
            avg_resolution_ns: if u == 1 { 1 } else { u / 100 },
            bins_ns: th.bins.iter().map(|&(b, n)| (b.saturating_mul(u), n)).collect(),
            bin_width_ns: u,
            overflows,
            overflow_cycles: Vec::new(),
            overflow_others: 0,
            histogram: match range_units {
                Some(HistogramRange::Exact(h)) => HistogramRange::Exact(h.saturating_mul(u)),
                Some(HistogramRange::AtLeast(h)) => HistogramRange::AtLeast(h.saturating_mul(u)),
                _ => HistogramRange::None,
            },
            timeouts: 0,
            timeout_ns: None,
            extra: Value::Object(extra),
        });
    }
    Ok(runs)
}

/// The figures' unit and what showed it: `resolution_in_ns`, else the
/// command line's `-N`, else cyclictest's default (µs).
fn file_unit(
    doc: &Doc,
    root: &Map<String, Value>,
    cmd: &Command,
) -> Result<(TimeUnit, &'static str), ImportError> {
    Ok(match root.get("resolution_in_ns").and_then(Value::as_u64) {
        Some(1) => (TimeUnit::Nanos, "resolution_in_ns"),
        Some(0) => (TimeUnit::Micros, "resolution_in_ns"),
        Some(other) => {
            return Err(doc.err(
                doc.line_of("\"resolution_in_ns\"", 1),
                format!("expected resolution_in_ns 0 or 1, found {other}"),
            ))
        }
        None if cmd.args.iter().any(|a| *a == "-N" || *a == "--nsecs") => (TimeUnit::Nanos, "command line"),
        None if cmd.cmdline.is_some() => (TimeUnit::Micros, "command line"),
        None => (TimeUnit::Micros, "cyclictest default (the file does not say)"),
    })
}

/// The histogram's range in the file's unit: the command line's `-h`/`-H`
/// exactly, else at least the end of the highest bin (with a histogram
/// flag or any bin), else none.
fn histogram_range(cmd: &Command, highest_end: u64) -> Option<HistogramRange> {
    let hist_arg =
        option_value(&cmd.args, "-h", "--histogram").or_else(|| option_value(&cmd.args, "-H", "--histofall"));
    let hist_flag = cmd.args.iter().any(|a| {
        a.starts_with("-h") && !a.starts_with("--")
            || a.starts_with("--histogram")
            || a.starts_with("-H")
            || a.starts_with("--histofall")
    });
    match hist_arg.map(|v| v.parse::<u64>()) {
        Some(Ok(h)) => Some(HistogramRange::Exact(h)),
        Some(Err(_)) | None if hist_flag || highest_end > 0 => Some(HistogramRange::AtLeast(highest_end)),
        _ => None,
    }
}

/// The threads' keys as numbers, in order, checked against
/// `num_threads`; at least one. With the line of `"thread"`.
#[allow(clippy::type_complexity)]
fn thread_keys<'a>(
    doc: &Doc,
    root: &Map<String, Value>,
    threads: &'a Map<String, Value>,
) -> Result<(Vec<(u32, &'a str, &'a Value)>, usize), ImportError> {
    if let Some(n) = root.get("num_threads").and_then(Value::as_u64) {
        if n != threads.len() as u64 {
            return Err(doc.err(
                doc.line_of("\"num_threads\"", 1),
                format!("num_threads says {n}, but 'thread' holds {}", threads.len()),
            ));
        }
    }
    if threads.is_empty() {
        return Err(doc.err(
            doc.line_of("\"thread\"", 1),
            "expected at least one thread in 'thread', found none: cyclictest measured nothing \
             (rerun it; its -t/-a pick the threads)"
                .into(),
        ));
    }
    let mut keyed = Vec::with_capacity(threads.len());
    let thread_line = doc.line_of("\"thread\"", 1);
    for (key, value) in threads {
        let index = key.parse::<u32>().map_err(|_| {
            doc.err(
                doc.line_of(&format!("\"{key}\""), thread_line),
                format!("expected a thread number as key, found '{}'", clip(key)),
            )
        })?;
        keyed.push((index, key.as_str(), value));
    }
    keyed.sort_by_key(|k| k.0);
    Ok((keyed, thread_line))
}

/// One thread's object: its cycles, min, max, avg, histogram, CPU and node.
fn read_thread<'a>(
    doc: &Doc,
    index: u32,
    key: &'a str,
    value: &Value,
    thread_line: usize,
) -> Result<Thread<'a>, ImportError> {
    let line = || doc.line_of(&format!("\"{key}\""), thread_line);
    let t = value
        .as_object()
        .ok_or_else(|| doc.err(line(), format!("expected thread {index} to be an object")))?;
    let field_line = |k: &str| doc.line_of(&format!("\"{k}\""), line());
    let need_u64 = |k: &str| -> Result<u64, ImportError> {
        match t.get(k) {
            Some(v) => v.as_u64().ok_or_else(|| {
                doc.err(
                    field_line(k),
                    format!(
                        "expected a whole non-negative number for '{k}' of thread {index}, found {}",
                        clip(&v.to_string())
                    ),
                )
            }),
            None => Err(doc.err(
                line(),
                format!("expected '{k}' in thread {index}, found none (the file is incomplete)"),
            )),
        }
    };
    let cycles = need_u64("cycles")?;
    let min = need_u64("min")?;
    let max = need_u64("max")?;
    let avg = match t.get("avg") {
        Some(v) => v.as_f64().filter(|a| a.is_finite() && *a >= 0.0).ok_or_else(|| {
            doc.err(
                field_line("avg"),
                format!("expected a number for 'avg' of thread {index}, found {}", clip(&v.to_string())),
            )
        })?,
        None => {
            return Err(doc.err(
                line(),
                format!("expected 'avg' in thread {index}, found none (the file is incomplete)"),
            ))
        }
    };
    let mut bins = Vec::new();
    match t.get("histogram") {
        None => {}
        Some(Value::Object(h)) => {
            for (k, v) in h {
                let l = || doc.line_of(&format!("\"{k}\""), line());
                let bin = k.parse::<u64>().map_err(|_| {
                    doc.err(l(), format!("expected a histogram bin number, found '{}'", clip(k)))
                })?;
                let n = v.as_u64().ok_or_else(|| {
                    doc.err(
                        l(),
                        format!("expected a number of samples in bin {bin}, found {}", clip(&v.to_string())),
                    )
                })?;
                if n > 0 {
                    bins.push((bin, n));
                }
            }
        }
        Some(other) => {
            return Err(doc.err(
                field_line("histogram"),
                format!("expected 'histogram' to be an object, found {}", clip(&other.to_string())),
            ))
        }
    }
    bins.sort_unstable();
    let cpu = t.get("cpu").and_then(Value::as_i64).and_then(|c| u32::try_from(c).ok());
    Ok(Thread { index, key, cycles, min, max, avg, bins, cpu, node: t.get("node").cloned() })
}

/// A thread's figures checked against its bins and the range; its
/// overflows (the cycles the bins do not hold, when there is a range).
fn check_thread(
    doc: &Doc,
    th: &Thread,
    range_units: Option<HistogramRange>,
    u: u64,
    thread_line: usize,
) -> Result<u64, ImportError> {
    let (index, cycles, min, max) = (th.index, th.cycles, th.min, th.max);
    let line = || doc.line_of(&format!("\"{}\"", th.key), thread_line);
    let in_hist = th.bins.iter().fold(0u64, |a, b| a.saturating_add(b.1));
    let overflows = if range_units.is_some() {
        cycles.checked_sub(in_hist).ok_or_else(|| {
            doc.err(
                line(),
                format!("thread {index}'s histogram holds {in_hist} samples, more than its {cycles} cycles"),
            )
        })?
    } else {
        0
    };
    if cycles == 0 {
        return Ok(overflows);
    }
    match range_units {
        Some(HistogramRange::Exact(h)) => {
            let bins_ns: Vec<(u64, u64)> = th.bins.iter().map(|&(b, n)| (b.saturating_mul(u), n)).collect();
            check_against_bins(&bins_ns, u, h, overflows, min, max, index as usize)
                .map_err(|(_, m)| doc.err(line(), m))?;
        }
        _ => {
            if min > max {
                return Err(doc.err(line(), format!("thread {index}'s min {min} is above its max {max}")));
            }
            if let Some(&(first, _)) = th.bins.first() {
                if first != min {
                    return Err(doc.err(
                        line(),
                        format!("thread {index}'s min {min} is not its lowest histogram bin {first}"),
                    ));
                }
            }
        }
    }
    Ok(overflows)
}

/// The value of `-x V`, `-xV`, `--long=V` or `--long V` in a command line.
fn option_value<'a>(args: &[&'a str], short: &str, long: &str) -> Option<&'a str> {
    let mut found = None;
    for (i, a) in args.iter().enumerate() {
        if *a == short || *a == long {
            found = args.get(i + 1).copied();
        } else if let Some(v) = a.strip_prefix(long).and_then(|r| r.strip_prefix('=')) {
            found = Some(v);
        } else if let Some(v) = a.strip_prefix(short).filter(|v| !v.is_empty() && !a.starts_with("--")) {
            found = Some(v);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `-N -h BINS` file of `threads` threads with `bins` filled bins each.
    fn file(threads: usize, bins: u64) -> String {
        let mut s = format!(
            "{{\n  \"cmdline:\": \"cyclictest -N -h {bins} --json=x.json\",\n  \"resolution_in_ns\": 1,\n  \"thread\": {{\n"
        );
        for t in 0..threads {
            s += &format!("    \"{t}\": {{\n      \"histogram\": {{\n");
            for b in 0..bins {
                let sep = if b + 1 < bins { "," } else { "" };
                s += &format!("        \"{b}\": 1{sep}\n");
            }
            let sep = if t + 1 < threads { "," } else { "" };
            s += &format!(
                "      }},\n      \"cycles\": {bins},\n      \"min\": 0,\n      \"max\": {},\n      \"avg\": 1.0,\n      \"cpu\": {t}\n    }}{sep}\n",
                bins - 1
            );
        }
        s + "  }\n}\n"
    }

    #[test]
    fn the_work_of_finding_lines_does_not_grow_with_the_bins() {
        // Counted, not timed: the lines the line-number search looks at.
        let text = file(4, 5_000);
        let lines = text.lines().count() as u64;
        let scanned = std::cell::Cell::new(0);
        let runs = parse_counting("x.json", &text, &scanned).unwrap();
        assert_eq!(runs.len(), 4);
        assert_eq!(runs[3].bins_ns.len(), 5_000);
        assert!(scanned.get() <= 2 * lines, "{} lines scanned for a file of {lines}", scanned.get());
    }

    #[test]
    fn an_empty_thread_object_is_an_error_naming_the_file() {
        let text = "{\n \"cmdline:\": \"cyclictest -h 10\",\n \"thread\": {}\n}\n";
        let e = parse("empty.json", text).unwrap_err().to_string();
        assert!(e.starts_with("empty.json:3:") && e.contains("found none"), "{e}");
    }
}
