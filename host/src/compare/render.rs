//! Lays [`Column`]s out in each [`Format`]: first a neutral grid of rows
//! (one per figure, one cell per column), then the format's syntax.

use serde_json::{json, Map, Value};

use super::{Column, Figure, Format};
use crate::analysis::figure::PERCENTILES;

/// The latency rows, in print order: (key, heading, getter); the
/// percentiles named as [`PERCENTILES`] names them.
type Getter = fn(&Column) -> Figure;
const LATENCY_ROWS: [(&str, &str, Getter); 8] = [
    ("min", "min", |c| c.min),
    ("avg", "avg", |c| c.avg),
    (PERCENTILES[0].key, PERCENTILES[0].name, |c| c.p50),
    (PERCENTILES[1].key, PERCENTILES[1].name, |c| c.p90),
    (PERCENTILES[2].key, PERCENTILES[2].name, |c| c.p99),
    (PERCENTILES[3].key, PERCENTILES[3].name, |c| c.p99_9),
    (PERCENTILES[4].key, PERCENTILES[4].name, |c| c.p99_99),
    ("max", "max", |c| c.max),
];

/// Render `columns` side by side. Rows: samples, min, avg, p50, p90, p99,
/// p99.9, p99.99, max, timeouts/overflows, lost, source, mode, interval,
/// then each metadata item whose value differs between columns (or is
/// missing from some); items every column shares print once below the
/// table (CSV repeats them in each column; JSON lists them apart).
///
/// With `baseline` (a column index), every latency cell of the other
/// columns also shows its ratio to the baseline's, `(1.80×)`; a censored or
/// unknown value on either side gives `n/a`. An index past the last column
/// is noted below the table and ignored.
pub fn render(columns: &[Column], format: Format, baseline: Option<usize>) -> String {
    let bad_baseline = baseline.filter(|&b| b >= columns.len());
    let baseline = baseline.filter(|&b| b < columns.len());
    let (mut shared, mut differing) = split_meta(columns);
    // The kernel configs: one shared line, a row per option that differs.
    let (config_line, config_rows) = super::kconfig::rows(columns);
    shared.extend(config_line);
    differing.extend(config_rows);
    // The loads, when any run had one: a row (`none` for a run without).
    let (loads_line, loads_row) = loads(columns);
    shared.extend(loads_line);
    differing.extend(loads_row);
    let mut notes = Vec::new();
    if let Some(b) = bad_baseline {
        notes.push(format!("baseline column {b} does not exist ({} columns): no ratios", columns.len()));
    }
    match format {
        Format::Text => text(columns, baseline, &shared, &differing, &notes),
        Format::Markdown => markdown(columns, baseline, &shared, &differing, &notes),
        Format::Csv => csv(columns, baseline, &shared, &differing),
        Format::Json => json_out(columns, baseline, &shared, &differing),
    }
}

/// The loads row: each column's loads (`none` for a latprobe run without
/// any), when any column ran one; a shared line when every column ran the same.
#[allow(clippy::type_complexity)]
fn loads(columns: &[Column]) -> (Option<(String, String)>, Option<(String, Vec<Option<String>>)>) {
    if !columns.iter().any(|c| c.loads.as_ref().is_some_and(|l| !l.is_empty())) {
        return (None, None);
    }
    let cells: Vec<Option<String>> = columns
        .iter()
        .map(|c| c.loads.as_ref().map(|l| if l.is_empty() { "none".to_owned() } else { l.join(", ") }))
        .collect();
    if cells.iter().all(|c| c.is_some() && *c == cells[0]) {
        return (Some(("loads".to_owned(), cells[0].clone().unwrap_or_default())), None);
    }
    (None, Some(("loads".to_owned(), cells)))
}

/// Metadata keys in first-seen order, split into those every column has
/// with one value, and the rest (with each column's value, if any).
#[allow(clippy::type_complexity)]
fn split_meta(columns: &[Column]) -> (Vec<(String, String)>, Vec<(String, Vec<Option<String>>)>) {
    let mut keys: Vec<&str> = Vec::new();
    for c in columns {
        for (k, _) in &c.meta {
            if !keys.contains(&k.as_str()) {
                keys.push(k);
            }
        }
    }
    let mut shared = Vec::new();
    let mut differing = Vec::new();
    for k in keys {
        let values: Vec<Option<String>> =
            columns.iter().map(|c| c.meta.iter().find(|(mk, _)| mk == k).map(|(_, v)| v.clone())).collect();
        let first = values[0].clone();
        // One column shares everything with itself.
        if columns.len() == 1 || (first.is_some() && values.iter().all(|v| *v == first)) {
            shared.push((k.to_owned(), first.unwrap_or_default()));
        } else {
            differing.push((k.to_owned(), values));
        }
    }
    (shared, differing)
}

/// `ns` as µs with `places` decimals, rounded half up.
fn us(ns: u64, places: u32) -> String {
    let scale = 10u64.pow(3 - places);
    let v = ns / scale + u64::from(ns % scale * 2 >= scale);
    let div = 10u64.pow(places);
    if places == 0 {
        v.to_string()
    } else {
        format!("{}.{:0width$}", v / div, v % div, width = places as usize)
    }
}

fn cell_us(cell: Figure, places: u32) -> String {
    match cell {
        Figure::Value(ns) => us(ns, places),
        // A bound rounded down, as the summary prints it: `>x` never
        // claims more than is known.
        Figure::Above(ns) => format!(">{}", crate::report::text::us_floor(ns, places)),
        Figure::None => "n/a".into(),
    }
}

/// The ratio of `cell` to `base`, when both are plain values.
fn ratio(cell: Figure, base: Figure) -> Option<f64> {
    match (cell, base) {
        (Figure::Value(v), Figure::Value(b)) if b > 0 => Some(v as f64 / b as f64),
        _ => None,
    }
}

fn interval(ns: Option<u64>) -> String {
    match ns {
        None => "n/a".into(),
        Some(ns) if ns % 1_000_000 == 0 && ns > 0 => format!("{} ms", ns / 1_000_000),
        Some(ns) if ns % 1_000 == 0 => format!("{} µs", ns / 1_000),
        Some(ns) => format!("{} µs", us(ns, 3)),
    }
}

/// Decimals for a column's latencies in a table: none when the source
/// states whole µs (cyclictest and rtla) and every figure is whole, else
/// two, as the run's summary prints them.
fn places(c: &Column) -> u32 {
    let whole = c.resolution_ns >= 1000
        && LATENCY_ROWS.iter().all(|(_, _, get)| match get(c) {
            Figure::Value(ns) | Figure::Above(ns) => ns % 1000 == 0,
            Figure::None => true,
        });
    if whole {
        0
    } else {
        2
    }
}

/// Metadata longer than this goes below a table, one line per column, so
/// a command line does not stretch every column.
const LONG_META: usize = 32;

fn is_long(values: &[Option<String>]) -> bool {
    values.iter().flatten().any(|v| v.chars().count() > LONG_META)
}

/// The rows after the latencies that every format has, the first named
/// `censored` (its heading differs between the tables and CSV): timeouts
/// or overflows, lost, source, mode.
fn count_rows(columns: &[Column], censored: &str) -> [(String, Vec<String>); 4] {
    [
        (censored.to_owned(), columns.iter().map(|c| c.timeouts_or_overflows.to_string()).collect()),
        ("lost".to_owned(), columns.iter().map(|c| c.lost.map_or("n/a".into(), |l| l.to_string())).collect()),
        ("source".to_owned(), columns.iter().map(|c| c.source.clone()).collect()),
        ("mode".to_owned(), columns.iter().map(|c| c.mode.clone().unwrap_or_else(|| "n/a".into())).collect()),
    ]
}

/// The grid shared by the text and Markdown tables: (heading, cells).
fn table_rows(
    columns: &[Column],
    baseline: Option<usize>,
    differing: &[(String, Vec<Option<String>>)],
) -> Vec<(String, Vec<String>)> {
    let mut rows = Vec::new();
    rows.push(("samples".to_owned(), columns.iter().map(|c| c.samples.to_string()).collect()));
    for (_, heading, get) in LATENCY_ROWS {
        let cells = columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let v = cell_us(get(c), places(c));
                match baseline {
                    Some(b) if b != i && get(c) != Figure::None => match ratio(get(c), get(&columns[b])) {
                        Some(r) => format!("{v} ({r:.2}×)"),
                        None => format!("{v} (n/a)"),
                    },
                    _ => v,
                }
            })
            .collect();
        rows.push((format!("{heading} µs"), cells));
    }
    rows.extend(count_rows(columns, "timeouts/overflows"));
    rows.push(("interval".to_owned(), columns.iter().map(|c| interval(c.interval_ns)).collect()));
    for (k, values) in differing.iter().filter(|(_, v)| !is_long(v)) {
        rows.push((k.clone(), values.iter().map(|v| v.clone().unwrap_or_else(|| "n/a".into())).collect()));
    }
    rows
}

/// The long differing metadata, listed below a table: (name, [(column
/// label, value)]).
fn long_meta<'a>(
    columns: &'a [Column],
    differing: &'a [(String, Vec<Option<String>>)],
) -> Vec<(&'a str, Vec<(&'a str, &'a str)>)> {
    differing
        .iter()
        .filter(|(_, v)| is_long(v))
        .map(|(k, values)| {
            let per: Vec<(&str, &str)> = columns
                .iter()
                .zip(values)
                .map(|(c, v)| (c.label.as_str(), v.as_deref().unwrap_or("n/a")))
                .collect();
            (k.as_str(), per)
        })
        .collect()
}

/// The notes below a table: the baseline, what a `>x` cell means (the
/// probe's timeout, or a histogram's end), which samples an avg is over.
/// `code` puts `>x` in backticks (Markdown: a line starting with `>` is a
/// blockquote).
fn footer_lines(columns: &[Column], baseline: Option<usize>, notes: &[String], code: bool) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(b) = baseline {
        out.push(format!("(×) = ratio to the baseline column '{}'", columns[b].label));
    }
    let above = |timeout: bool| {
        columns.iter().any(|c| {
            LATENCY_ROWS.iter().any(|(_, _, g)| match g(c) {
                Figure::Above(v) => (Some(v) == c.timeout_ns) == timeout,
                _ => false,
            })
        })
    };
    let x = if code { "`>x`" } else { ">x" };
    if above(true) {
        out.push(format!(
            "{x} = above the probe's timeout x: the samples there timed out, their latency is known only to \
             exceed it"
        ));
    }
    if above(false) {
        out.push(format!(
            "{x} = beyond the histogram's range: the value is at least x, not known more closely"
        ));
    }
    for c in columns {
        if let Some(n) = c.avg_over {
            out.push(format!(
                "avg of {}: over the {n} measured samples of {} (a timeout has no latency), as its summary gives it",
                c.label, c.samples
            ));
        }
    }
    out.extend(notes.iter().cloned());
    out
}

fn text(
    columns: &[Column],
    baseline: Option<usize>,
    shared: &[(String, String)],
    differing: &[(String, Vec<Option<String>>)],
    notes: &[String],
) -> String {
    if columns.is_empty() {
        return "no runs to compare\n".into();
    }
    let rows = table_rows(columns, baseline, differing);
    let width = |s: &str| s.chars().count();
    let head_w = rows.iter().map(|(h, _)| width(h)).max().unwrap_or(0);
    let col_w: Vec<usize> = (0..columns.len())
        .map(|i| rows.iter().map(|(_, c)| width(&c[i])).chain([width(&columns[i].label)]).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    let line = |head: &str, cells: Vec<&str>| {
        let mut l = format!("{head}{}", " ".repeat(head_w - width(head)));
        for (i, c) in cells.iter().enumerate() {
            l.push_str("  ");
            l.push_str(&" ".repeat(col_w[i] - width(c)));
            l.push_str(c);
        }
        l.trim_end().to_owned() + "\n"
    };
    out.push_str(&line("", columns.iter().map(|c| c.label.as_str()).collect()));
    for (h, cells) in &rows {
        out.push_str(&line(h, cells.iter().map(String::as_str).collect()));
    }
    let foot = footer_lines(columns, baseline, notes, false);
    if !foot.is_empty() || !shared.is_empty() {
        out.push('\n');
    }
    for f in foot {
        out.push_str(&f);
        out.push('\n');
    }
    for (k, per) in long_meta(columns, differing) {
        out.push_str(&format!("{k}:\n"));
        for (label, v) in per {
            out.push_str(&format!("  {label}: {v}\n"));
        }
    }
    if !shared.is_empty() {
        out.push_str(if columns.len() > 1 { "common to all columns:\n" } else { "run:\n" });
        for (k, v) in shared {
            out.push_str(&format!("  {k}: {v}\n"));
        }
    }
    out
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn markdown(
    columns: &[Column],
    baseline: Option<usize>,
    shared: &[(String, String)],
    differing: &[(String, Vec<Option<String>>)],
    notes: &[String],
) -> String {
    if columns.is_empty() {
        return "no runs to compare\n".into();
    }
    let rows = table_rows(columns, baseline, differing);
    let mut out = String::from("| |");
    for c in columns {
        out.push_str(&format!(" {} |", md_escape(&c.label)));
    }
    out.push_str("\n|:---|");
    out.push_str(&"---:|".repeat(columns.len()));
    out.push('\n');
    for (h, cells) in &rows {
        out.push_str(&format!("| {} |", md_escape(h)));
        for c in cells {
            out.push_str(&format!(" {} |", md_escape(c)));
        }
        out.push('\n');
    }
    let foot = footer_lines(columns, baseline, notes, true);
    if !foot.is_empty() || !shared.is_empty() {
        out.push('\n');
    }
    for f in foot {
        out.push_str(&md_escape(&f));
        out.push_str("\n\n");
    }
    for (k, per) in long_meta(columns, differing) {
        out.push_str(&format!("{k}:\n\n"));
        for (label, v) in per {
            out.push_str(&format!("- {label}: `{}`\n", v.replace('`', "'")));
        }
        out.push('\n');
    }
    if !shared.is_empty() {
        out.push_str(if columns.len() > 1 { "Common to all columns:\n\n" } else { "Run:\n\n" });
        for (k, v) in shared {
            out.push_str(&format!("- {k}: `{}`\n", v.replace('`', "'")));
        }
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

fn csv(
    columns: &[Column],
    baseline: Option<usize>,
    shared: &[(String, String)],
    differing: &[(String, Vec<Option<String>>)],
) -> String {
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    rows.push(("samples".into(), columns.iter().map(|c| c.samples.to_string()).collect()));
    for (key, _, get) in LATENCY_ROWS {
        rows.push((format!("{key}_us"), columns.iter().map(|c| cell_us(get(c), 3)).collect()));
    }
    rows.push((
        "avg_over_samples".into(),
        columns.iter().map(|c| c.avg_over.unwrap_or(c.samples).to_string()).collect(),
    ));
    rows.extend(count_rows(columns, "timeouts_or_overflows"));
    rows.push((
        "interval_us".into(),
        columns.iter().map(|c| c.interval_ns.map_or("n/a".into(), |ns| us(ns, 3))).collect(),
    ));
    if let Some(b) = baseline {
        for (key, _, get) in LATENCY_ROWS {
            rows.push((
                format!("{key}_ratio"),
                columns
                    .iter()
                    .map(|c| ratio(get(c), get(&columns[b])).map_or("n/a".into(), |r| format!("{r:.2}")))
                    .collect(),
            ));
        }
    }
    for (k, values) in differing {
        rows.push((k.clone(), values.iter().map(|v| v.clone().unwrap_or_else(|| "n/a".into())).collect()));
    }
    // A CSV row must stand alone in a spreadsheet: shared facts repeat.
    for (k, v) in shared {
        rows.push((k.clone(), vec![v.clone(); columns.len()]));
    }
    let mut out = String::from("metric");
    for c in columns {
        out.push(',');
        out.push_str(&csv_field(&c.label));
    }
    out.push_str("\r\n");
    for (h, cells) in rows {
        out.push_str(&csv_field(&h));
        for c in cells {
            out.push(',');
            out.push_str(&csv_field(&c));
        }
        out.push_str("\r\n");
    }
    out
}

fn cell_json(cell: Figure) -> Value {
    match cell {
        Figure::Value(ns) => json!({ "ns": ns }),
        Figure::Above(ns) => json!({ "above_ns": ns }),
        Figure::None => Value::Null,
    }
}

fn json_out(
    columns: &[Column],
    baseline: Option<usize>,
    shared: &[(String, String)],
    differing: &[(String, Vec<Option<String>>)],
) -> String {
    let cols: Vec<Value> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut latency = Map::new();
            let mut ratios = Map::new();
            for (key, _, get) in LATENCY_ROWS {
                latency.insert(key.into(), cell_json(get(c)));
                if let Some(b) = baseline {
                    let r = ratio(get(c), get(&columns[b])).map(|r| (r * 100.0).round() / 100.0);
                    ratios.insert(key.into(), r.map_or(Value::Null, Value::from));
                }
            }
            let mut meta = Map::new();
            for (k, values) in differing {
                meta.insert(k.clone(), values[i].clone().map_or(Value::Null, Value::from));
            }
            json!({
                "label": c.label,
                "source": c.source,
                "mode": c.mode,
                "interval_ns": c.interval_ns,
                "samples": c.samples,
                "latency": latency,
                "avg_over_samples": c.avg_over.unwrap_or(c.samples),
                "timeout_ns": c.timeout_ns,
                "ratio_to_baseline": if baseline.is_some() { Value::Object(ratios) } else { Value::Null },
                "timeouts_or_overflows": c.timeouts_or_overflows,
                "lost": c.lost,
                "meta": meta,
            })
        })
        .collect();
    let shared: Map<String, Value> =
        shared.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))).collect();
    let doc = json!({
        "latency_unit": "ns",
        "baseline": baseline,
        "columns": cols,
        "shared_meta": shared,
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}
