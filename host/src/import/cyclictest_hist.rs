//! cyclictest's text histogram: the `--histfile=FILE` file and the `-h N`
//! (or `-H N`) stdout, which may also hold the periodic status lines.
//!
//! ```text
//! # /dev/cpu_dma_latency set to 0us          comments, `policy:` lines,
//! T: 0 ( 4265) P:80 I:500 C:  400 Min: ...   status lines (last one per thread wins)
//! # Histogram
//! 000000 000000\t000000                      one row per bin, from 0, one column per
//! ...                                        thread (+ a sum column with -H)
//! # Total: 000000400 000000399               in-histogram samples (optional: older versions)
//! # Min Latencies: 00011 00012
//! # Avg Latencies: 00015 00020               truncated to whole units
//! # Max Latencies: 00410 00458
//! # Histogram Overflows: 00001 00002
//! # Histogram Overflow at cycle number:
//! # Thread 0: 00209                          listed cycles, then `# N others`
//! # Thread 1: 00003 00042
//! ```
//!
//! The bins, min, avg and max share one unit, µs or (with `-N`) ns, which
//! the file does not state: see [`ImportOptions::cyclictest_unit`].

use serde_json::{Map, Value};

use super::{
    clip, latprobe_hist, strip_escapes, unit_extra, HistogramRange, ImportError, ImportOptions, ImportedRun,
    TimeUnit,
};

/// One `T:` status line.
struct Status {
    line: usize,
    interval_us: u64,
    cycles: u64,
    min: i64,
    avg: i64,
    max: i64,
    /// The unit the width of the `Act:` field shows, if it shows one.
    unit: Option<TimeUnit>,
}

/// A trailer line's numbers and where it was.
struct Summary {
    line: usize,
    values: Vec<u64>,
}

/// The file's non-blank lines, numbered from 1, escapes stripped.
type Lines<'a> = std::iter::Peekable<std::vec::IntoIter<(usize, &'a str)>>;

/// Where errors point: the file's name and the line past its end.
struct At<'a> {
    name: &'a str,
    end_line: usize,
}

impl At<'_> {
    fn err(&self, line: usize, msg: String) -> ImportError {
        ImportError::at(self.name, line, msg)
    }

    /// "expected {what}, found end of file (the file is cut short)".
    fn cut_short(&self, what: &str) -> ImportError {
        self.err(self.end_line, format!("expected {what}, found end of file (the file is cut short)"))
    }
}

/// What comes before `# Histogram`.
struct Preamble {
    comments: Vec<Value>,
    /// The `cyclictest ...` first line, when the output starts with it.
    cmdline: Option<String>,
    /// The last status line of each thread.
    statuses: Vec<(u32, Status)>,
}

/// The summary lines after the rows.
struct Trailer {
    total: Option<Summary>,
    min: Summary,
    avg: Summary,
    max: Summary,
    over: Summary,
    threads: usize,
    /// The rows carry a sum column (`-H`).
    histofall: bool,
}

pub(super) fn parse(
    name: &str,
    text: &str,
    options: &ImportOptions,
) -> Result<Vec<ImportedRun>, ImportError> {
    let lines: Vec<(usize, &str)> =
        text.lines().enumerate().map(|(i, l)| (i + 1, strip_escapes(l).trim_end_matches('\r'))).collect();
    let at = At { name, end_line: lines.len() + 1 };
    let mut it: Lines =
        lines.into_iter().filter(|(_, l)| !l.trim().is_empty()).collect::<Vec<_>>().into_iter().peekable();

    let pre = preamble(&mut it, &at)?;
    let (rows, row_width) = histogram_rows(&mut it, &at)?;
    let tr = trailer(&mut it, &at, row_width)?;
    let cycles_listed = overflow_lists(&mut it, &at, &tr)?;
    let smis = smis_line(it, &at)?;
    // latprobe's own histfile says so in its header.
    let comment_text: Vec<&str> = pre.comments.iter().filter_map(Value::as_str).collect();
    let latprobe = latprobe_hist::header(&comment_text);
    let (unit, unit_source) = file_unit(&pre, latprobe.as_ref(), options, &at)?;
    if let Some((th, s)) = pre.statuses.iter().find(|(th, _)| *th as usize >= tr.threads) {
        return Err(at.err(
            s.line,
            format!("status line for thread {th}, but the histogram has {} threads", tr.threads),
        ));
    }
    let file = File {
        pre: &pre,
        rows: &rows,
        tr: &tr,
        latprobe: latprobe.as_ref(),
        smis: smis.as_ref(),
        unit,
        unit_source,
    };
    let mut runs = Vec::with_capacity(tr.threads);
    for (t, (cycles, others)) in cycles_listed.into_iter().enumerate() {
        runs.push(thread_run(&file, t, cycles, others, options, &at)?);
    }
    Ok(runs)
}

/// Comments, `policy:` lines and status lines, up to `# Histogram`.
fn preamble(it: &mut Lines, at: &At) -> Result<Preamble, ImportError> {
    let mut pre = Preamble { comments: Vec::new(), cmdline: None, statuses: Vec::new() };
    let mut first = true;
    loop {
        let Some((n, line)) = it.next() else {
            let why = if pre.statuses.is_empty() {
                "found end of file"
            } else {
                "found end of file after the status lines (status lines alone cannot show that the \
                 run finished: import the --histfile or --json output)"
            };
            return Err(at.err(at.end_line, format!("expected '# Histogram', {why}")));
        };
        let t = line.trim();
        if t == "# Histogram" {
            return Ok(pre);
        } else if first && t.starts_with("cyclictest ") {
            pre.cmdline = Some(t.to_owned());
        } else if t.starts_with("T:") {
            let (thread, status) = parse_status(t, n).map_err(|m| at.err(n, m))?;
            pre.statuses.retain(|(th, _)| *th != thread);
            pre.statuses.push((thread, status));
        } else if t.starts_with('#') {
            pre.comments.push(Value::from(t));
        } else if !t.starts_with("policy:") {
            return Err(at.err(
                n,
                format!(
                    "expected '# Histogram', a status line 'T: ...' or a '#' comment, found '{}'",
                    clip(t)
                ),
            ));
        }
        first = false;
    }
}

/// The rows of bins, numbered from 0, each with as many columns as the
/// first: the rows and `(columns, the first row's line)`.
#[allow(clippy::type_complexity)]
fn histogram_rows(it: &mut Lines, at: &At) -> Result<(Vec<Vec<u64>>, Option<(usize, usize)>), ImportError> {
    let mut rows: Vec<Vec<u64>> = Vec::new();
    let mut row_width: Option<(usize, usize)> = None;
    while let Some(&(n, line)) = it.peek() {
        if line.trim_start().starts_with('#') {
            break;
        }
        it.next();
        let mut fields = line.split_whitespace();
        let index = fields.next().unwrap_or("");
        let expected = rows.len();
        match index.parse::<u64>() {
            Ok(i) if i == expected as u64 => {}
            Ok(_) => {
                return Err(
                    at.err(n, format!("expected histogram bin {expected:06}, found '{}'", clip(index)))
                )
            }
            Err(_) => {
                return Err(at
                    .err(n, format!("expected a histogram bin number in column 1, found '{}'", clip(index))))
            }
        }
        let mut counts = Vec::new();
        for (k, cell) in fields.enumerate() {
            let v = cell.parse::<u64>().map_err(|_| {
                at.err(n, format!("expected a number of samples in column {}, found '{}'", k + 2, clip(cell)))
            })?;
            counts.push(v);
        }
        match row_width {
            None if counts.is_empty() => {
                return Err(at.err(n, "expected a number of samples in column 2, found end of line".into()))
            }
            None => row_width = Some((counts.len(), n)),
            Some((w, first_line)) if w != counts.len() => {
                return Err(at.err(
                    n,
                    format!("expected {w} sample columns as on line {first_line}, found {}", counts.len()),
                ))
            }
            Some(_) => {}
        }
        rows.push(counts);
    }
    Ok((rows, row_width))
}

/// The summary line `# {label}: N N ...` if it is next (`optional`), or
/// an error saying it is missing.
fn summary_line(
    it: &mut Lines,
    at: &At,
    label: &str,
    optional: bool,
) -> Result<Option<Summary>, ImportError> {
    let prefix = format!("# {label}:");
    match it.peek().copied() {
        Some((n, line)) if line.trim_start().starts_with(&prefix) => {
            it.next();
            let rest = &line.trim_start()[prefix.len()..];
            let mut values = Vec::new();
            for (k, cell) in rest.split_whitespace().enumerate() {
                values.push(cell.parse::<u64>().map_err(|_| {
                    at.err(
                        n,
                        format!("expected a number for thread {k} after '{prefix}', found '{}'", clip(cell)),
                    )
                })?);
            }
            Ok(Some(Summary { line: n, values }))
        }
        _ if optional => Ok(None),
        Some((n, line)) => Err(at.err(n, format!("expected '{prefix}', found '{}'", clip(line.trim())))),
        None => Err(at.cut_short(&format!("'{prefix}'"))),
    }
}

/// `# Total:` (optional), the min, avg and max latencies and the
/// overflows, each with one number per thread (plus the sum column's
/// with `-H`), and the rows' width checked against them.
fn trailer(it: &mut Lines, at: &At, row_width: Option<(usize, usize)>) -> Result<Trailer, ImportError> {
    let total = summary_line(it, at, "Total", true)?;
    let mut required = |label: &str| {
        summary_line(it, at, label, false)?
            .ok_or_else(|| at.err(at.end_line, format!("expected '# {label}:'")))
    };
    let min = required("Min Latencies")?;
    let avg = required("Avg Latencies")?;
    let max = required("Max Latencies")?;
    let over = required("Histogram Overflows")?;

    let threads = min.values.len();
    if threads == 0 {
        return Err(
            at.err(min.line, "expected one minimum per thread after '# Min Latencies:', found none".into())
        );
    }
    let columns = row_width.map_or(threads, |(w, _)| w);
    let histofall = columns == threads + 1;
    if columns != threads && !histofall {
        let (_, first_line) = row_width.unwrap_or((0, min.line));
        return Err(at.err(
            first_line,
            format!("expected {threads} sample columns (one per thread, as '# Min Latencies:' lists), found {columns}"),
        ));
    }
    let with_sum = threads + usize::from(histofall);
    let check_len = |s: &Summary, label: &str, want: usize| -> Result<(), ImportError> {
        if s.values.len() == want {
            Ok(())
        } else {
            Err(at
                .err(s.line, format!("expected {want} numbers after '# {label}:', found {}", s.values.len())))
        }
    };
    check_len(&avg, "Avg Latencies", threads)?;
    check_len(&max, "Max Latencies", with_sum)?;
    check_len(&over, "Histogram Overflows", with_sum)?;
    if let Some(total) = &total {
        check_len(total, "Total", with_sum)?;
    }
    Ok(Trailer { total, min, avg, max, over, threads, histofall })
}

/// `# Histogram Overflow at cycle number:` and one `# Thread t:` line per
/// thread: its listed cycles and the count of `# N others`, which must add
/// up to its overflows.
fn overflow_lists(it: &mut Lines, at: &At, tr: &Trailer) -> Result<Vec<(Vec<u64>, u64)>, ImportError> {
    const HEAD: &str = "# Histogram Overflow at cycle number:";
    match it.next() {
        Some((_, l)) if l.trim() == HEAD => {}
        Some((n, l)) => return Err(at.err(n, format!("expected '{HEAD}', found '{}'", clip(l.trim())))),
        None => return Err(at.cut_short(&format!("'{HEAD}'"))),
    }
    let mut cycles_listed = Vec::with_capacity(tr.threads);
    for t in 0..tr.threads {
        let prefix = format!("# Thread {t}:");
        let (n, line) = match it.next() {
            Some((n, l)) if l.trim_start().starts_with(&prefix) => (n, l),
            Some((n, l)) => return Err(at.err(n, format!("expected '{prefix}', found '{}'", clip(l.trim())))),
            None => return Err(at.cut_short(&format!("'{prefix}'"))),
        };
        let (listed, others) = thread_cycles(&line.trim_start()[prefix.len()..], n, at)?;
        if (listed.len() as u64).saturating_add(others) != tr.over.values[t] {
            return Err(at.err(
                n,
                format!(
                    "thread {t} lists {} overflow cycles and {others} others, but '# Histogram Overflows:' \
                     says {}",
                    listed.len(),
                    tr.over.values[t]
                ),
            ));
        }
        cycles_listed.push((listed, others));
    }
    Ok(cycles_listed)
}

/// One thread's overflow cycles, `N N ... [# K others]`: the cycles listed
/// and K.
fn thread_cycles(rest: &str, n: usize, at: &At) -> Result<(Vec<u64>, u64), ImportError> {
    let mut listed = Vec::new();
    let mut tokens = rest.split_whitespace();
    while let Some(tok) = tokens.next() {
        if tok == "#" {
            let count = tokens.next().unwrap_or("");
            let others = count.parse::<u64>().map_err(|_| {
                at.err(n, format!("expected a number of other overflows after '#', found '{}'", clip(count)))
            })?;
            if tokens.next() != Some("others") || tokens.next().is_some() {
                return Err(at.err(n, format!("expected '# {count} others' to end the line")));
            }
            return Ok((listed, others));
        }
        listed.push(
            tok.parse::<u64>().map_err(|_| {
                at.err(n, format!("expected an overflow cycle number, found '{}'", clip(tok)))
            })?,
        );
    }
    Ok((listed, 0))
}

/// The optional `# SMIs:` line, and nothing after it.
fn smis_line(it: Lines, at: &At) -> Result<Option<Value>, ImportError> {
    let mut smis = None;
    for (n, line) in it {
        let t = line.trim();
        if t.starts_with("# SMIs:") && smis.is_none() {
            smis = Some(Value::from(t["# SMIs:".len()..].trim()));
        } else {
            return Err(
                at.err(n, format!("expected end of file after the overflow lists, found '{}'", clip(t)))
            );
        }
    }
    Ok(smis)
}

/// The figures' unit and what showed it: the status lines' field width,
/// the command line's `-N`, latprobe's header, or the caller; a caller who
/// contradicts the file is refused.
fn file_unit(
    pre: &Preamble,
    latprobe: Option<&latprobe_hist::Header>,
    options: &ImportOptions,
    at: &At,
) -> Result<(TimeUnit, &'static str), ImportError> {
    let mut status_unit = None;
    for (_, s) in &pre.statuses {
        match (status_unit, s.unit) {
            (_, None) => {}
            (None, u) => status_unit = u,
            (Some(a), Some(b)) if a != b => {
                return Err(
                    at.err(s.line, "status lines disagree on their unit (µs and ns field widths)".into())
                )
            }
            _ => {}
        }
    }
    let cmd_unit = pre.cmdline.as_deref().map(|c| {
        if c.split_whitespace().any(|a| a == "-N" || a == "--nsecs") {
            TimeUnit::Nanos
        } else {
            TimeUnit::Micros
        }
    });
    let evidence = status_unit
        .map(|u| (u, "status line field width"))
        .or(cmd_unit.map(|u| (u, "command line")))
        .or(latprobe.and_then(|h| h.unit).map(|u| (u, "latprobe's header")));
    match (options.cyclictest_unit, evidence) {
        (Some(asked), Some((seen, how))) if asked != seen => Err(at.err(
            1,
            format!(
                "the caller says the figures are in {}, but the file's {how} shows {}",
                asked.name(),
                seen.name()
            ),
        )),
        (Some(asked), _) => Ok((asked, "given by the caller")),
        (None, Some((seen, how))) => Ok((seen, how)),
        (None, None) => Ok((TimeUnit::Micros, "cyclictest default (the file does not say)")),
    }
}

/// Everything read from the file, for making each thread's run.
struct File<'a> {
    pre: &'a Preamble,
    rows: &'a [Vec<u64>],
    tr: &'a Trailer,
    latprobe: Option<&'a latprobe_hist::Header>,
    smis: Option<&'a Value>,
    unit: TimeUnit,
    unit_source: &'static str,
}

/// Thread `t`'s run: its bins, checked against the summary lines and its
/// last status line.
///
/// latprobe's own histfile counts its timeouts as overflows (latencies
/// above the timeout) while `Max Latencies` is its largest *measured*
/// one, and says so in a comment before `# Histogram`: those overflows
/// are not beyond the max, and the true max is not known.
fn thread_run(
    f: &File,
    t: usize,
    overflow_cycles: Vec<u64>,
    overflow_others: u64,
    options: &ImportOptions,
    at: &At,
) -> Result<ImportedRun, ImportError> {
    let (tr, u) = (f.tr, f.unit.ns());
    let limit = f.rows.len() as u64;
    let bins: Vec<(u64, u64)> = f
        .rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r[t] > 0)
        .map(|(i, r)| ((i as u64).saturating_mul(u), r[t]))
        .collect();
    let in_hist = bins.iter().fold(0u64, |a, b| a.saturating_add(b.1));
    if let Some(total) = &tr.total {
        if total.values[t] != in_hist {
            return Err(at.err(
                total.line,
                format!(
                    "'# Total:' says {} samples for thread {t}, but its histogram column sums to {in_hist}",
                    total.values[t]
                ),
            ));
        }
    }
    let overflows = tr.over.values[t];
    let count = in_hist.saturating_add(overflows);
    let (tmin, tavg, tmax) = (tr.min.values[t], tr.avg.values[t], tr.max.values[t]);
    let timeouts = f.latprobe.map_or(0, |h| h.timeouts).min(overflows);
    if count > 0 {
        check_against_bins(&bins, u, limit, overflows - timeouts, tmin, tmax, t)
            .map_err(|(which, m)| at.err(if which { tr.max.line } else { tr.min.line }, m))?;
    }
    let status = f.pre.statuses.iter().find(|(th, _)| *th as usize == t).map(|(_, s)| s);
    if let Some(s) = status {
        let as_i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        if s.cycles != count
            || (count > 0 && (s.min != as_i(tmin) || s.avg != as_i(tavg) || s.max != as_i(tmax)))
        {
            return Err(at.err(
                s.line,
                format!(
                    "thread {t}'s last status line (C:{} Min:{} Avg:{} Max:{}) disagrees with the \
                     histogram's summary (C:{count} Min:{tmin} Avg:{tavg} Max:{tmax})",
                    s.cycles, s.min, s.avg, s.max
                ),
            ));
        }
    }
    let lp = f.latprobe;
    Ok(ImportedRun {
        tool: if lp.is_some() { "latprobe" } else { "cyclictest" }.into(),
        tool_version: lp.map(|h| h.version.clone()),
        cmdline: lp
            .and_then(|h| h.command_line.as_deref())
            .map(latprobe_hist::shell_words)
            .or_else(|| f.pre.cmdline.clone()),
        source_file: at.name.to_owned(),
        thread: format!("T{t}"),
        cpu: None,
        interval_ns: status
            .map(|s| s.interval_us.saturating_mul(1000))
            .or_else(|| lp.and_then(|h| h.interval_ns)),
        count,
        min_ns: (count > 0).then(|| tmin.saturating_mul(u)),
        avg_ns: (count > 0).then(|| tavg.saturating_mul(u)),
        // Above the timeout, unknown, when latprobe's timeouts are in it.
        max_ns: (count > 0 && timeouts == 0).then(|| tmax.saturating_mul(u)),
        avg_resolution_ns: u,
        bins_ns: bins,
        bin_width_ns: u,
        overflows,
        overflow_cycles,
        overflow_others,
        histogram: HistogramRange::Exact(limit.saturating_mul(u)),
        timeouts,
        timeout_ns: lp.and_then(|h| h.timeout_ns).filter(|_| timeouts > 0),
        extra: Value::Object(thread_extra(f, t, timeouts, tmin, tmax, options)),
    })
}

/// The `extra` fields of thread `t`'s run: the format, the unit and what
/// showed it, latprobe's header, comments, SMIs, and what latprobe's
/// timeouts mean for the max.
fn thread_extra(
    f: &File,
    t: usize,
    timeouts: u64,
    tmin: u64,
    tmax: u64,
    options: &ImportOptions,
) -> Map<String, Value> {
    let mut extra = Map::new();
    let format = if f.latprobe.is_some() { "latprobe histfile" } else { "cyclictest histogram" };
    extra.insert("format".into(), Value::from(format));
    extra.extend(unit_extra(f.unit, f.unit_source));
    if let Some(w) = unit_warning(options, f.unit, f.unit_source, tmin, t) {
        extra.insert("unit_warning".into(), Value::from(w));
    }
    if let Some(h) = f.latprobe {
        extra.insert("latprobe".into(), h.extra());
    }
    extra.insert("histofall".into(), Value::from(f.tr.histofall));
    if !f.pre.comments.is_empty() {
        extra.insert("comments".into(), Value::from(f.pre.comments.clone()));
    }
    if let Some(s) = f.smis {
        extra.insert("smis".into(), s.clone());
    }
    if timeouts > 0 {
        extra.insert("latprobe_timeouts".into(), Value::from(timeouts));
        extra.insert(
            "max_censored".into(),
            Value::from(format!(
                "{timeouts} of the overflows are latprobe timeouts, above its timeout: the printed max \
                 ({tmax}) is the largest measured latency, the true max is unknown"
            )),
        );
    }
    extra
}

/// A warning when cyclictest's default unit was assumed but the figures
/// are not plausible in it: a minimum of a millisecond or more is what a
/// `-N` (nanosecond) file read as µs looks like.
fn unit_warning(
    options: &ImportOptions,
    unit: TimeUnit,
    source: &str,
    min: u64,
    thread: usize,
) -> Option<String> {
    let assumed = options.cyclictest_unit.is_none() && source.contains("does not say");
    (assumed && unit == TimeUnit::Micros && min >= 1000).then(|| {
        format!(
            "thread {thread}'s min {min} read as µs would be {}, which no timer wake-up takes: if \
             cyclictest ran with -N (nanoseconds), import with --unit ns",
            crate::units::format_ns(min.saturating_mul(1000))
        )
    })
}

/// The summary's min and max must sit where the bins say: both are whole
/// units like the bins, so the lowest non-empty bin is the min (when the
/// min is in range) and, without overflows, the highest is the max. The
/// error says whether the max (`true`) or the min line is at fault.
pub(super) fn check_against_bins(
    bins: &[(u64, u64)],
    unit_ns: u64,
    limit_units: u64,
    overflows: u64,
    min: u64,
    max: u64,
    thread: usize,
) -> Result<(), (bool, String)> {
    if min > max {
        return Err((false, format!("thread {thread}'s min {min} is above its max {max}")));
    }
    if overflows == 0 && max >= limit_units {
        return Err((
            true,
            format!(
                "thread {thread}'s max {max} lies beyond the histogram ({limit_units} bins), but it has no \
                 overflows"
            ),
        ));
    }
    if overflows > 0 && max < limit_units {
        return Err((
            true,
            format!("thread {thread} has {overflows} overflows, but its max {max} lies inside the histogram"),
        ));
    }
    if let (Some(first), Some(last)) = (bins.first(), bins.last()) {
        if min < limit_units && first.0 != min.saturating_mul(unit_ns) {
            return Err((
                false,
                format!("thread {thread}'s min {min} is not its lowest histogram bin {}", first.0 / unit_ns),
            ));
        }
        if overflows == 0 && last.0 != max.saturating_mul(unit_ns) {
            return Err((
                true,
                format!("thread {thread}'s max {max} is not its highest histogram bin {}", last.0 / unit_ns),
            ));
        }
    } else if overflows == 0 {
        return Err((true, format!("thread {thread} has samples but an empty histogram and no overflows")));
    }
    Ok(())
}

/// `T: 0 ( 4265) P:80 I:500 C:    400 Min:     11 Act:   12 Avg:   15 Max:     410`
fn parse_status(line: &str, n: usize) -> Result<(u32, Status), String> {
    const KEYS: [&str; 8] = ["T:", " P:", " I:", " C:", " Min:", " Act:", " Avg:", " Max:"];
    let mut pos = Vec::with_capacity(KEYS.len());
    let mut from = 0;
    for key in KEYS {
        let at = line[from..]
            .find(key)
            .map(|i| i + from)
            .ok_or_else(|| format!("expected '{}' in the status line '{}'", key.trim(), clip(line)))?;
        pos.push((at, at + key.len()));
        from = at + key.len();
    }
    let raw = |k: usize| -> &str {
        let end = if k + 1 < pos.len() {
            pos[k + 1].0
        } else {
            line[pos[k].1..].find(" SMI:").map_or(line.len(), |i| i + pos[k].1)
        };
        &line[pos[k].1..end]
    };
    let num = |k: usize| -> Result<i64, String> {
        let r = raw(k).trim();
        r.parse::<i64>().map_err(|_| {
            format!("expected a number after '{}' in the status line, found '{}'", KEYS[k].trim(), clip(r))
        })
    };
    let thread_raw = raw(0);
    let thread_txt = thread_raw.split('(').next().unwrap_or("").trim();
    let thread = thread_txt
        .parse::<u32>()
        .map_err(|_| format!("expected a thread number after 'T:', found '{}'", clip(thread_txt)))?;
    let nonneg = |k: usize| -> Result<u64, String> {
        u64::try_from(num(k)?)
            .map_err(|_| format!("expected a count after '{}', found a negative number", KEYS[k].trim()))
    };
    // `Act:%5ld` in µs, `Act:%8ld` in ns: a padded field of exactly that
    // width shows the unit.
    let act = raw(5);
    let unit = match act.len() {
        5 if act.starts_with(' ') => Some(TimeUnit::Micros),
        8 if act.starts_with(' ') => Some(TimeUnit::Nanos),
        _ => None,
    };
    Ok((
        thread,
        Status {
            line: n,
            interval_us: nonneg(2)?,
            cycles: nonneg(3)?,
            min: num(4)?,
            avg: num(6)?,
            max: num(7)?,
            unit,
        },
    ))
}
