//! `rtla timerlat hist` output, as printed by the kernel's
//! `tools/tracing/rtla/src/timerlat_hist.c`.
//!
//! ```text
//! # RTLA timerlat histogram
//! # Time unit is microseconds (us)           or nanoseconds (ns) with -n
//! # Duration:   0 00:10:00
//! Index   IRQ-000   Thr-000   Usr-000 ...     IRQ unless --no-irq, Thr unless
//! 0        276489         0 ...               --no-thread, Usr with -u/-U;
//! 1        318327     35487 ...               "%-6d" then "%9d " per column;
//! ...                                         all-zero rows skipped unless --with-zeros
//! over:         0         0 ...
//! count:   600002    600002 ...
//! min:          0         1 ...               "-" for a column without samples
//! avg:          0         5 ...               sum / count, truncated
//! max:         16        36 ...
//! ALL:        IRQ       Thr                   newer versions: all CPUs together
//! count: ...  min: ...  avg: ...  max: ...
//! ```
//!
//! The output states neither the bucket size nor the number of entries. The
//! bin width is taken as the greatest common divisor of the printed bin
//! starts: every start is a multiple of the bucket size, so this is the
//! bucket size or a multiple of it, and an upper edge computed with it never
//! understates. The range is known exactly only with `--with-zeros` (every
//! bin printed); otherwise overflows are only known to lie beyond the last
//! printed bin.
//!
//! `--no-header`, `--no-index` and `--no-summary` outputs are refused: the
//! first two lose which column is which, the last cannot be told from a file
//! cut after its `over:` line.

use serde_json::{Map, Value};

use super::{clip, unit_extra, HistogramRange, ImportError, ImportedRun, TimeUnit};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Irq,
    Thread,
    User,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Irq => "irq",
            Kind::Thread => "thread",
            Kind::User => "user",
        }
    }

    fn from_label(label: &str) -> Option<Kind> {
        match label {
            "IRQ" => Some(Kind::Irq),
            "Thr" => Some(Kind::Thread),
            "Usr" => Some(Kind::User),
            _ => None,
        }
    }
}

/// A footer line's cells: `None` for rtla's `-` (no samples).
struct Footer {
    line: usize,
    values: Vec<Option<u64>>,
}

/// The file's non-blank lines, numbered from 1.
type Lines<'a> = std::iter::Peekable<std::vec::IntoIter<(usize, &'a str)>>;

/// The comment lines and the `Index ...` header.
struct Header {
    unit: TimeUnit,
    unit_source: &'static str,
    duration: Option<String>,
    comments: Vec<Value>,
    /// Each column's context and CPU.
    columns: Vec<(Kind, u32)>,
}

/// The per-CPU footer lines.
struct Footers {
    over: Footer,
    count: Footer,
    min: Footer,
    avg: Footer,
    max: Footer,
}

pub(super) fn parse(name: &str, text: &str) -> Result<Vec<ImportedRun>, ImportError> {
    let lines: Vec<(usize, &str)> =
        text.lines().enumerate().map(|(i, l)| (i + 1, l.trim_end_matches('\r'))).collect();
    let end_line = lines.len() + 1;
    let err = |line: usize, msg: String| ImportError::at(name, line, msg);
    let mut it: Lines =
        lines.into_iter().filter(|(_, l)| !l.trim().is_empty()).collect::<Vec<_>>().into_iter().peekable();

    let head = header(&mut it, name, end_line)?;
    let rows = histogram_rows(&mut it, name, end_line, head.columns.len())?;
    let feet = footers(&mut it, name, end_line, head.columns.len())?;
    let all = all_cpus(&mut it, name, end_line, &head.columns, &feet)?;
    let notes: Vec<Value> = it.map(|(_, l)| Value::from(l.trim())).collect();

    // Bin width and range, shared by all columns.
    let g = rows.iter().fold(0, |g, (i, _)| gcd(g, *i));
    let with_zeros = rows.iter().any(|(_, cells)| cells.iter().all(|&c| c == 0));
    let u = head.unit.ns();
    let table_max = feet.max.values.iter().flatten().copied().max().unwrap_or(0);
    let bin_width = if g > 0 { g } else { table_max.saturating_add(1) };
    let range = match rows.last() {
        Some((last, _)) if with_zeros => {
            HistogramRange::Exact(last.saturating_add(bin_width).saturating_mul(u))
        }
        Some((last, _)) => HistogramRange::AtLeast(last.saturating_add(1).saturating_mul(u)),
        None => HistogramRange::AtLeast(0),
    };

    let mut extra = Map::new();
    extra.insert("format".into(), Value::from("rtla timerlat hist"));
    extra.extend(unit_extra(head.unit, head.unit_source));
    if let Some(d) = &head.duration {
        extra.insert("duration".into(), Value::from(d.as_str()));
    }
    if !all.is_empty() {
        extra.insert("all_cpus".into(), Value::Object(all));
    }
    if !head.comments.is_empty() {
        extra.insert("comments".into(), Value::from(head.comments.clone()));
    }
    if !notes.is_empty() {
        extra.insert("notes".into(), Value::from(notes));
    }
    let mut runs = Vec::with_capacity(head.columns.len());
    for (c, &(kind, cpu)) in head.columns.iter().enumerate() {
        let bins: Vec<(u64, u64)> =
            rows.iter().filter(|(_, cells)| cells[c] > 0).map(|(i, cells)| (*i, cells[c])).collect();
        let label = format!("cpu {cpu} {}", kind.name());
        let (n, lo, mean, hi, overflows) =
            check_column(&feet, c, &bins, bin_width, &label).map_err(|(l, m)| err(l, m))?;
        let mut extra = extra.clone();
        extra.insert("context".into(), Value::from(kind.name()));
        runs.push(ImportedRun {
            tool: "rtla timerlat".into(),
            tool_version: None,
            cmdline: None,
            source_file: name.to_owned(),
            thread: label,
            cpu: Some(cpu),
            interval_ns: None,
            count: n,
            min_ns: lo.filter(|_| n > 0).map(|v| v.saturating_mul(u)),
            avg_ns: mean.filter(|_| n > 0).map(|v| v.saturating_mul(u)),
            max_ns: hi.filter(|_| n > 0).map(|v| v.saturating_mul(u)),
            avg_resolution_ns: u,
            bins_ns: bins.iter().map(|&(i, k)| (i.saturating_mul(u), k)).collect(),
            bin_width_ns: bin_width.saturating_mul(u),
            overflows,
            overflow_cycles: Vec::new(),
            overflow_others: 0,
            histogram: range,
            timeouts: 0,
            timeout_ns: None,
            extra: Value::Object(extra),
        });
    }
    Ok(runs)
}

/// The comment lines (`# Time unit is ...`, `# Duration: ...`, others
/// kept) up to the `Index IRQ-000 Thr-000 ...` header.
fn header(it: &mut Lines, name: &str, end_line: usize) -> Result<Header, ImportError> {
    let err = |line: usize, msg: String| ImportError::at(name, line, msg);
    let mut unit = None;
    let mut duration = None;
    let mut comments = Vec::new();
    let columns: Vec<(Kind, u32)> = loop {
        let Some((n, line)) = it.next() else {
            return Err(err(
                end_line,
                "expected the 'Index IRQ-000 Thr-000 ...' header, found end of file".into(),
            ));
        };
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("# Time unit is ") {
            unit = Some(match rest {
                "microseconds (us)" => TimeUnit::Micros,
                "nanoseconds (ns)" => TimeUnit::Nanos,
                _ => {
                    return Err(err(
                        n,
                        format!("expected 'microseconds (us)' or 'nanoseconds (ns)', found '{}'", clip(rest)),
                    ))
                }
            });
        } else if let Some(rest) = t.strip_prefix("# Duration:") {
            duration = Some(rest.trim().to_owned());
        } else if t.starts_with('#') {
            comments.push(Value::from(t));
        } else if let Some(rest) = t.strip_prefix("Index") {
            break column_labels(rest).map_err(|m| err(n, m))?;
        } else {
            return Err(err(
                n,
                format!(
                    "expected the 'Index IRQ-000 Thr-000 ...' header (rtla --no-header and --no-index output \
                     cannot be imported), found '{}'",
                    clip(t)
                ),
            ));
        }
    };
    let (unit, unit_source) = match unit {
        Some(u) => (u, "header"),
        None => (TimeUnit::Micros, "rtla default (the file does not say)"),
    };
    Ok(Header { unit, unit_source, duration, comments, columns })
}

/// The header's column labels after `Index`: `IRQ-000`, `Thr-001`, ...
fn column_labels(rest: &str) -> Result<Vec<(Kind, u32)>, String> {
    let mut cols = Vec::new();
    for label in rest.split_whitespace() {
        let parsed =
            label.split_once('-').and_then(|(k, cpu)| Some((Kind::from_label(k)?, cpu.parse::<u32>().ok()?)));
        cols.push(parsed.ok_or_else(|| {
            format!("expected a column label like IRQ-000, Thr-000 or Usr-000, found '{}'", clip(label))
        })?);
    }
    if cols.is_empty() {
        return Err("expected column labels after 'Index', found none".into());
    }
    Ok(cols)
}

/// The rows up to `over:`: each a bin above the last, with one count per
/// column.
#[allow(clippy::type_complexity)]
fn histogram_rows(
    it: &mut Lines,
    name: &str,
    end_line: usize,
    width: usize,
) -> Result<Vec<(u64, Vec<u64>)>, ImportError> {
    let err = |line: usize, msg: String| ImportError::at(name, line, msg);
    let mut rows: Vec<(u64, Vec<u64>)> = Vec::new();
    loop {
        let Some(&(n, line)) = it.peek() else {
            return Err(err(end_line, "expected 'over:', found end of file (the file is cut short)".into()));
        };
        let t = line.trim();
        if t.starts_with("over:") {
            return Ok(rows);
        }
        it.next();
        let mut fields = t.split_whitespace();
        let index_txt = fields.next().unwrap_or("");
        let index = index_txt.parse::<u64>().map_err(|_| {
            err(n, format!("expected a histogram bin (or 'over:'), found '{}'", clip(index_txt)))
        })?;
        if let Some((prev, _)) = rows.last() {
            if index <= *prev {
                return Err(err(n, format!("expected a bin above {prev}, found {index}")));
            }
        }
        let mut cells = Vec::with_capacity(width);
        for (k, cell) in fields.enumerate() {
            cells.push(cell.parse::<u64>().map_err(|_| {
                err(n, format!("expected a number of samples in column {}, found '{}'", k + 2, clip(cell)))
            })?);
        }
        if cells.len() != width {
            return Err(err(
                n,
                format!("expected {width} sample columns as the header names, found {}", cells.len()),
            ));
        }
        rows.push((index, cells));
    }
}

/// `over:`, `count:`, `min:`, `avg:` and `max:`, one value per column.
fn footers(it: &mut Lines, name: &str, end_line: usize, width: usize) -> Result<Footers, ImportError> {
    let feet = Footers {
        over: footer(name, end_line, it, "over", false)?,
        count: footer(name, end_line, it, "count", false)?,
        min: footer(name, end_line, it, "min", true)?,
        avg: footer(name, end_line, it, "avg", true)?,
        max: footer(name, end_line, it, "max", true)?,
    };
    for f in [&feet.over, &feet.count, &feet.min, &feet.avg, &feet.max] {
        if f.values.len() != width {
            return Err(ImportError::at(
                name,
                f.line,
                format!("expected {width} values as the header names, found {}", f.values.len()),
            ));
        }
    }
    Ok(feet)
}

/// The optional all-CPU block (`ALL: IRQ Thr ...` and its four lines),
/// checked against the per-CPU figures: each context's summary, or none.
fn all_cpus(
    it: &mut Lines,
    name: &str,
    end_line: usize,
    columns: &[(Kind, u32)],
    feet: &Footers,
) -> Result<Map<String, Value>, ImportError> {
    let err = |line: usize, msg: String| ImportError::at(name, line, msg);
    let mut all = Map::new();
    if !it.peek().is_some_and(|(_, l)| l.trim_start().starts_with("ALL:")) {
        return Ok(all);
    }
    let (n, line) = it.next().unwrap_or_default();
    let mut kinds = Vec::new();
    for label in line.trim_start()["ALL:".len()..].split_whitespace() {
        kinds.push(Kind::from_label(label).ok_or_else(|| {
            err(n, format!("expected IRQ, Thr or Usr after 'ALL:', found '{}'", clip(label)))
        })?);
    }
    let sums = [
        footer(name, end_line, it, "count", false)?,
        footer(name, end_line, it, "min", true)?,
        footer(name, end_line, it, "avg", true)?,
        footer(name, end_line, it, "max", true)?,
    ];
    for f in &sums {
        if f.values.len() != kinds.len() {
            return Err(err(
                f.line,
                format!("expected {} values as 'ALL:' names, found {}", kinds.len(), f.values.len()),
            ));
        }
    }
    for (j, kind) in kinds.iter().enumerate() {
        let of_kind: Vec<usize> = (0..columns.len()).filter(|&c| columns[c].0 == *kind).collect();
        let total = of_kind.iter().filter_map(|&c| feet.count.values[c]).fold(0u64, u64::saturating_add);
        let lo = of_kind.iter().filter_map(|&c| feet.min.values[c]).min();
        let hi = of_kind.iter().filter_map(|&c| feet.max.values[c]).max();
        let stated = (sums[0].values[j], sums[1].values[j], sums[3].values[j]);
        if stated.0 != Some(total) || (total > 0 && (stated.1 != lo || stated.2 != hi)) {
            return Err(err(
                sums[0].line,
                format!(
                    "the ALL {} summary (count {:?}, min {:?}, max {:?}) disagrees with the per-CPU columns \
                     (count {total}, min {lo:?}, max {hi:?})",
                    kind.name(),
                    stated.0,
                    stated.1,
                    stated.2
                ),
            ));
        }
        all.insert(
            kind.name().into(),
            serde_json::json!({
                "count": stated.0, "min": stated.1, "avg": sums[2].values[j], "max": stated.2,
            }),
        );
    }
    Ok(all)
}

/// Column `c`'s count, min, avg, max and overflows, checked against its
/// bins: the count is the bins plus `over:`, and the min and max sit in
/// the first and (without overflows) the last bin. An error is its line
/// and message.
#[allow(clippy::type_complexity)]
fn check_column(
    feet: &Footers,
    c: usize,
    bins: &[(u64, u64)],
    bin_width: u64,
    label: &str,
) -> Result<(u64, Option<u64>, Option<u64>, Option<u64>, u64), (usize, String)> {
    let in_hist = bins.iter().fold(0u64, |a, b| a.saturating_add(b.1));
    let overflows = feet.over.values[c].unwrap_or(0);
    let n = feet.count.values[c].unwrap_or(0);
    if n != in_hist.saturating_add(overflows) {
        return Err((
            feet.count.line,
            format!("count says {n} for {label}, but its bins hold {in_hist} and over: {overflows}"),
        ));
    }
    let (lo, mean, hi) = (feet.min.values[c], feet.avg.values[c], feet.max.values[c]);
    if n > 0 {
        let (Some(lo), Some(_), Some(hi)) = (lo, mean, hi) else {
            return Err((
                feet.min.line,
                format!("expected min, avg and max for {label}, which has {n} samples, found '-'"),
            ));
        };
        let bad = lo > hi
            || bins.first().is_some_and(|&(first, _)| first > lo || lo >= first.saturating_add(bin_width))
            || (overflows == 0
                && bins.last().is_some_and(|&(last, _)| last > hi || hi >= last.saturating_add(bin_width)))
            || (overflows == 0 && bins.is_empty());
        if bad {
            return Err((
                feet.max.line,
                format!("min {lo} and max {hi} of {label} do not fit its histogram bins"),
            ));
        }
    }
    Ok((n, lo, mean, hi, overflows))
}

/// The next footer line, `label:` then one value per column.
fn footer<'a>(
    name: &str,
    end_line: usize,
    it: &mut impl Iterator<Item = (usize, &'a str)>,
    label: &str,
    dash_ok: bool,
) -> Result<Footer, ImportError> {
    let err = |line: usize, msg: String| ImportError::at(name, line, msg);
    let prefix = format!("{label}:");
    let (n, line) = match it.next() {
        Some((n, l)) if l.trim_start().starts_with(&prefix) => (n, l),
        Some((n, l)) => return Err(err(n, format!("expected '{prefix}', found '{}'", clip(l.trim())))),
        None => {
            let more = if label == "count" { " (rtla --no-summary output cannot be imported)" } else { "" };
            return Err(err(
                end_line,
                format!("expected '{prefix}', found end of file (the file is cut short){more}"),
            ));
        }
    };
    let mut values = Vec::new();
    for (k, cell) in line.trim_start()[prefix.len()..].split_whitespace().enumerate() {
        if dash_ok && cell == "-" {
            values.push(None);
            continue;
        }
        values.push(Some(cell.parse::<u64>().map_err(|_| {
            err(n, format!("expected a number in column {} of '{prefix}', found '{}'", k + 2, clip(cell)))
        })?));
    }
    Ok(Footer { line: n, values })
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
