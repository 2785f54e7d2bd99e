//! `--html FILE`: one self-contained HTML file per run: the summary table,
//! the plots as inline SVG, the limits and their verdicts, the target's
//! metadata and the notes. No script, no stylesheet, font or image from
//! anywhere else: it opens offline, from a CI artefact or a mail.
//!
//! The target's metadata (`--target-meta`, e.g. `latprobe-responder
//! metadata`) is a JSON object of nested objects and lists: each object is
//! a table of key/value rows, nested objects are tables inside the cell,
//! lists of plain values one line, `null` a dash. Long values (the kernel
//! command line, a CONFIG_ list) wrap inside the page, never widen it.

use std::fmt::Write as _;
use std::path::Path;

use super::text::us_cell;
use super::{plot, Report};
use crate::analysis::figure::PERCENTILES;
use crate::analysis::Figure;
use crate::units::format_ns;
use crate::Error;

const STYLE: &str = "body{font-family:sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}\
th{background:#f3f3f3}td.l,th.l{text-align:left}.pass{color:#176b17;font-weight:bold}\
.fail{color:#b00020;font-weight:bold}.warn{color:#9a5b00}figure{margin:1em 0}\
figure svg{max-width:100%;height:auto;border:1px solid #eee}pre{background:#f7f7f7;padding:.6em;overflow-x:auto}\
figcaption{font-size:.9em;color:#555}\
table.kv{max-width:100%}table.kv td{overflow-wrap:anywhere;vertical-align:top}\
table.kv th{white-space:nowrap;vertical-align:top}table.kv table.kv{margin:0}\
table.kv table.kv th{background:#fafafa;font-weight:normal}\
.none{color:#888}";

/// Escape text for HTML content and attributes.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// An SVG made by [`plot`], ready to sit inline: without an XML
/// declaration or doctype (not allowed inside HTML).
fn inline_svg(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |at| &svg[at..])
}

/// Render the HTML report of `r`. A plot that cannot be drawn is replaced
/// by a line saying why; the rest of the page is still there.
pub fn render(r: &Report) -> String {
    let mut h = String::new();
    let title = format!("latprobe {} on {}", r.config.mode_name(), r.source);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n",
        esc(&title)
    );
    let _ = writeln!(h, "<h1>{}</h1>", esc(&title));
    verdict_banner(&mut h, r);
    run_table(&mut h, r);
    figures(&mut h, r);
    limits(&mut h, r);
    tail(&mut h, r);
    if let Some(t) = &r.trace {
        super::trace::html(&mut h, t);
    }
    plots(&mut h, r);
    target(&mut h, r);
    if !r.notes.is_empty() {
        h.push_str("<h2 id=\"notes\">Notes</h2><ul>\n");
        for n in &r.notes {
            let _ = writeln!(h, "<li>{}</li>", esc(n));
        }
        h.push_str("</ul>\n");
    }
    let _ = writeln!(
        h,
        "<h2>Summary as printed</h2><pre>{}</pre>\n<p><small>latprobe {} · JSON schema {}</small></p>\
         </body></html>",
        esc(&super::text::summary(r)),
        esc(&r.tool_version),
        r.schema_version
    );
    h
}

/// Write the HTML report of `r` to `path` (`--html`).
pub fn write(r: &Report, path: &Path) -> Result<(), Error> {
    crate::fsout::write(path, render(r).as_bytes())
        .map_err(|e| Error::io(format!("cannot write the HTML report {} (--html)", path.display()), e))
}

fn verdict_banner(h: &mut String, r: &Report) {
    let run = if r.complete {
        "<span class=\"pass\">complete</span>".to_string()
    } else {
        format!("<span class=\"fail\">INCOMPLETE</span> (ended by {})", esc(&kebab(&r.ended_by)))
    };
    let limits = if r.verdicts.is_empty() {
        "no limits given".to_string()
    } else {
        let failed = r.verdicts.iter().filter(|v| !v.pass).count();
        if failed == 0 {
            format!("<span class=\"pass\">all {} limits passed</span>", r.verdicts.len())
        } else {
            format!("<span class=\"fail\">{failed} of {} limits violated</span>", r.verdicts.len())
        }
    };
    let _ = writeln!(h, "<p id=\"verdict\">Run: {run}. Limits: {limits}.</p>");
    if let Some(e) = &r.error {
        let _ = writeln!(h, "<p class=\"fail\">Error: {}</p>", esc(e));
    }
}

fn kebab(e: &crate::model::EndedBy) -> String {
    serde_json::to_value(e).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

fn row(h: &mut String, k: &str, v: &str) {
    let _ = writeln!(h, "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>", esc(k), esc(v));
}

fn run_table(h: &mut String, r: &Report) {
    h.push_str("<h2 id=\"run\">Run</h2><table>\n");
    row(h, "mode", r.config.mode_name());
    row(h, "link", &r.source);
    if let Some(p) = &r.probe {
        row(
            h,
            "probe",
            &format!(
                "{} firmware {}, {} Hz timer",
                p.hello.board, p.hello.firmware_version, p.hello.timer_hz
            ),
        );
    }
    row(h, "stimulus", &r.config.stimulus);
    row(h, "interval", &format_ns(r.config.interval_ns));
    if r.config.dither_ns > 0 {
        row(h, "dither", &format_ns(r.config.dither_ns));
    }
    row(h, "timeout", &format_ns(r.config.timeout_ns));
    row(h, "started", &r.started_at);
    row(h, "ended", &r.ended_at);
    if let Some(e) = r.probe_elapsed_ns {
        row(h, "length (probe clock)", &format_ns(e));
    }
    row(h, "ended by", &kebab(&r.ended_by));
    if let Some(f) = r.replayed_from.as_deref() {
        row(h, "replayed from", f);
    }
    h.push_str("</table>\n");
}

/// The load schedule's phases, a row each with its own figures.
fn phases(h: &mut String, r: &Report) {
    if r.phases.is_empty() {
        return;
    }
    h.push_str("<h3 id=\"phases\">By phase of the load schedule</h3><table id=\"phase-figures\"><tr><th>phase</th><th>from</th><th>to</th><th>samples</th><th>timeouts</th>");
    for p in PERCENTILES {
        let _ = write!(h, "<th>{}</th>", p.name);
    }
    h.push_str("<th>max</th><th>loads running</th></tr>\n");
    for p in &r.phases {
        let end = p.end_s.map_or_else(|| "end".to_owned(), |e| format!("{e} s"));
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{} s</td><td>{}</td><td>{}</td><td>{}</td>",
            esc(&p.name),
            p.start_s,
            esc(&end),
            p.samples,
            p.timeouts
        );
        match &p.latency_ns {
            Some(l) => {
                for (_, v) in l.percentiles().into_iter().chain([(&PERCENTILES[0], l.max)]) {
                    let _ = write!(h, "<td>{} µs</td>", esc(&us_cell(l.figure(v))));
                }
            }
            None => h.push_str(&"<td>-</td>".repeat(PERCENTILES.len() + 1)),
        }
        let loads = match p.loads.as_deref() {
            None => "not watched".to_owned(),
            Some([]) => "none".to_owned(),
            Some(l) => l
                .iter()
                .map(|l| if l.throughout { l.name.clone() } else { format!("{} (part)", l.name) })
                .collect::<Vec<_>>()
                .join(", "),
        };
        let _ = write!(h, "<td>{}</td>", esc(&loads));
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

fn figures(h: &mut String, r: &Report) {
    let label = if r.periodic.is_some() { "Wake-up delay (against the fitted schedule)" } else { "Latency" };
    let _ = writeln!(h, "<h2 id=\"latency\">{label}</h2>");
    match &r.latency_ns {
        None => h.push_str("<p>No samples: no latency figures.</p>\n"),
        Some(l) => {
            h.push_str("<table id=\"figures\"><tr>");
            let figures: Vec<(&str, Option<u64>)> = std::iter::once(("min", l.min))
                .chain(l.percentiles().map(|(p, v)| (p.name, v)))
                .chain([("max", l.max)])
                .collect();
            for (n, _) in &figures {
                let _ = write!(h, "<th>{n}</th>");
            }
            h.push_str("<th>mean (measured)</th></tr>\n<tr>");
            for &(_, v) in &figures {
                let _ = write!(h, "<td>{} µs</td>", esc(&us_cell(l.figure(v))));
            }
            let mean = l.mean.map_or_else(|| "-".to_string(), |m| us_cell(Figure::Value(m)));
            let _ = writeln!(h, "<td>{} µs</td></tr></table>", esc(&mean));
            if l.censored > 0 {
                let _ = writeln!(
                    h,
                    "<p class=\"warn\">{} of {} samples timed out: their latency is known only to exceed {} \
                     (shown as &gt;). They rank above every measured latency.</p>",
                    l.censored,
                    l.measured + l.censored,
                    esc(&format_ns(l.censored_above))
                );
            }
        }
    }
    phases(h, r);
    let c = &r.counts;
    h.push_str("<table id=\"counts\"><tr>");
    let mut cells: Vec<(&str, u64)> = vec![
        ("samples", c.samples),
        ("responses", c.responses),
        ("timeouts", c.timeouts),
        ("lost", c.lost),
        ("late", c.late_responses),
        ("overruns", c.overruns),
    ];
    for (n, v) in [
        ("duplicates", c.duplicates),
        ("bad frames", c.bad_frames),
        ("unmatched", c.unmatched),
        ("wrong bytes", c.wrong_bytes),
        ("slipped", c.slipped),
        ("reclaimed", c.reclaimed),
        ("overcaptures", c.overcaptures),
        ("line errors", c.line_errors),
        ("host-link receive errors", c.host_rx_errors),
    ] {
        if v > 0 {
            cells.push((n, v));
        }
    }
    for (n, _) in &cells {
        let _ = write!(h, "<th>{n}</th>");
    }
    h.push_str("</tr><tr>");
    for (_, v) in &cells {
        let _ = write!(h, "<td>{v}</td>");
    }
    h.push_str("</tr></table>\n");
    if let Some(w) = &r.worst {
        let _ = writeln!(
            h,
            "<p>Worst measured: {} at sample {}, {} after the start.</p>",
            esc(&format_ns(w.latency_ns)),
            w.seq,
            esc(&format_ns(w.at_ns_from_start))
        );
    }
    if let Some(f) = r.periodic.as_ref().and_then(|p| p.fit.as_ref()) {
        let _ = writeln!(
            h,
            "<p>Fitted period {:.3} ns (nominal {}): the target's clock runs {:+.3} ppm against the probe's.</p>",
            f.period_ns,
            esc(&format_ns(f.nominal_period_ns)),
            f.offset_ppm
        );
    }
}

fn limits(h: &mut String, r: &Report) {
    h.push_str("<h2 id=\"limits\">Limits</h2>\n");
    if r.verdicts.is_empty() {
        h.push_str("<p>No limit was given (--max, --percentile, --max-timeouts, --max-lost, --max-late, --limits).</p>\n");
        return;
    }
    h.push_str(
        "<table id=\"verdicts\"><tr><th class=\"l\">limit</th><th>at most</th><th>measured</th><th>margin</th>\
         <th class=\"l\">verdict</th></tr>\n",
    );
    for v in &r.verdicts {
        let verdict = if v.pass {
            "<span class=\"pass\">pass</span>".to_string()
        } else {
            format!("<span class=\"fail\">FAIL</span> {}", esc(v.why.as_deref().unwrap_or("")))
        };
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{verdict}</td></tr>",
            esc(&v.name),
            esc(&v.limit_text()),
            esc(&v.measured_text()),
            esc(&v.margin_text())
        );
    }
    h.push_str("</table>\n");
}

fn plots(h: &mut String, r: &Report) {
    h.push_str("<h2 id=\"plots\">Plots</h2>\n");
    if r.counts.samples == 0 {
        h.push_str("<p>No samples: nothing to plot.</p>\n");
        return;
    }
    let figure = |h: &mut String, id: &str, caption: &str, svg: Result<Option<String>, Error>| match svg {
        Ok(Some(svg)) => {
            let _ = writeln!(
                h,
                "<figure id=\"plot-{id}\">{}<figcaption>{}</figcaption></figure>",
                inline_svg(&svg),
                esc(caption)
            );
        }
        Ok(None) => {
            let _ = writeln!(h, "<p id=\"plot-{id}\">{}: not in this report.</p>", esc(caption));
        }
        Err(e) => {
            let _ = writeln!(
                h,
                "<p id=\"plot-{id}\" class=\"warn\">{}: not drawn: {}</p>",
                esc(caption),
                esc(&e.to_string())
            );
        }
    };
    figure(
        h,
        "histogram",
        "Histogram (log counts, p99 and p99.9 marked); past the axis, the latencies beyond the range at its \
         end and the timeouts at the timeout",
        plot::histogram_svg(r).map(Some),
    );
    figure(
        h,
        "histogram-log",
        "The same histogram on a log latency axis, in 1 µs bins: the body and the tail both readable",
        plot::histogram_log_svg(r).map(Some),
    );
    figure(h, "timeline", "Latency over time: max and p99 per row, timeouts per row", plot::timeline_svg(r));
    figure(
        h,
        "ccdf",
        "Complementary CDF: the share of samples above each latency",
        plot::ccdf_svg(r).map(Some),
    );
    figure(
        h,
        "tail",
        "Tail model: the cluster maxima above the threshold, the fitted generalized Pareto survival with its 95 % \
         band, the limits marked",
        plot::tail_svg(r),
    );
}

/// The tail model: its figures with their intervals, or why it was refused.
fn tail(h: &mut String, r: &Report) {
    h.push_str("<h2 id=\"tail\">Tail model</h2>\n");
    let Some(t) = &r.tail else {
        h.push_str("<p>No tail model in this report.</p>\n");
        return;
    };
    if let Some(why) = &t.refused {
        let _ = writeln!(
            h,
            "<p class=\"warn\" id=\"tail-refused\">Refused: {}. Nothing is extrapolated.</p>",
            esc(why)
        );
    }
    let _ = writeln!(h, "<pre>{}</pre>", esc(&super::tail::text(t)));
    let _ = writeln!(h, "<p><small>{}. Threshold: {}.</small></p>", esc(&t.method), esc(&t.threshold_rule));
}

fn target(h: &mut String, r: &Report) {
    h.push_str("<h2 id=\"target\">Target</h2>\n");
    let Some(t) = &r.target else {
        h.push_str(
            "<p>No target metadata (give --target-meta FILE, e.g. from `latprobe-responder metadata`).</p>\n",
        );
        return;
    };
    match t.as_object() {
        Some(map) => {
            h.push_str("<table id=\"target-meta\" class=\"kv\">\n");
            kv_rows(h, map, 0);
            h.push_str("</table>\n");
        }
        None => {
            let _ = writeln!(h, "<pre>{}</pre>", esc(&serde_json::to_string_pretty(t).unwrap_or_default()));
        }
    }
}

/// How deep metadata nests before the rest is shown as JSON text (a
/// crafted file cannot make the page recurse without end).
const MAX_DEPTH: usize = 8;

/// The most entries a nested map shows unfolded.
const MAX_UNFOLDED: usize = 40;

/// One row per key of `map`.
fn kv_rows(h: &mut String, map: &serde_json::Map<String, serde_json::Value>, depth: usize) {
    for (k, v) in map {
        let _ = write!(h, "<tr><th class=\"l\">{}</th><td class=\"l\">", esc(k));
        value_html(h, v, depth);
        h.push_str("</td></tr>\n");
    }
}

/// A metadata value as readable HTML: text as it is, `null` as a dash,
/// an object as a table of its own, a list of plain values as one line, a
/// list with objects one entry after another.
fn value_html(h: &mut String, v: &serde_json::Value, depth: usize) {
    use serde_json::Value;
    match v {
        Value::Null => h.push_str("<span class=\"none\">–</span>"),
        Value::String(s) => h.push_str(&esc(s)),
        Value::Bool(_) | Value::Number(_) => h.push_str(&esc(&v.to_string())),
        _ if depth >= MAX_DEPTH => h.push_str(&esc(&v.to_string())),
        Value::Object(m) if m.is_empty() => h.push_str("<span class=\"none\">(empty)</span>"),
        // A long map (a kernel's config: thousands of options) is folded,
        // so the page opens on what matters; it unfolds in place.
        Value::Object(m) if m.len() > MAX_UNFOLDED => {
            let _ = write!(h, "<details><summary>{} entries</summary><table class=\"kv\">", m.len());
            kv_rows(h, m, depth + 1);
            h.push_str("</table></details>");
        }
        Value::Object(m) => {
            h.push_str("<table class=\"kv\">");
            kv_rows(h, m, depth + 1);
            h.push_str("</table>");
        }
        Value::Array(a) if a.is_empty() => h.push_str("<span class=\"none\">(none)</span>"),
        Value::Array(a) if a.iter().all(|e| !e.is_object() && !e.is_array()) => {
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    h.push_str(", ");
                }
                value_html(h, e, depth + 1);
            }
        }
        Value::Array(a) => {
            for e in a {
                value_html(h, e, depth + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_nested_map_is_folded_and_a_short_one_is_not() {
        let mut r = crate::report::testkit::run(0);
        let options: serde_json::Map<String, serde_json::Value> =
            (0..=MAX_UNFOLDED).map(|i| (format!("CONFIG_OPT_{i}"), "y".into())).collect();
        r.target = Some(serde_json::json!({
            "kernel_config": { "source": "/proc/config.gz", "options": options },
            "clocksource": { "current": "tsc" },
        }));
        let t = target_section(&r);
        let folded = format!("<details><summary>{} entries</summary>", MAX_UNFOLDED + 1);
        assert_eq!(t.matches(&folded).count(), 1, "{t}");
        assert!(t.contains("<th class=\"l\">CONFIG_OPT_40</th>"), "{t}");
        assert_eq!(t.matches("<details>").count(), 1, "only the long map folds: {t}");
    }

    #[test]
    fn text_is_escaped_and_controls_replaced() {
        assert_eq!(esc("<a href=\"x\">&'\u{1}"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;\u{fffd}");
        assert_eq!(inline_svg("<?xml version=\"1.0\"?>\n<svg a=\"1\"/>"), "<svg a=\"1\"/>");
    }

    /// The target section of `render(r)`.
    fn target_section(r: &Report) -> String {
        let page = render(r);
        let at = page.find("<h2 id=\"target\">").expect("a target section");
        let end = page[at + 1..].find("<h2").map_or(page.len(), |e| at + 1 + e);
        page[at..end].to_owned()
    }

    #[test]
    fn nested_target_metadata_is_rows_of_keys_and_values_never_raw_json() {
        let mut r = crate::report::testkit::run(0);
        let cmdline = format!("console=ttyS0 isolcpus=2,3 {}", "x".repeat(300));
        r.target = Some(serde_json::json!({
            "hostname": "bench-1",
            "uname": {"sysname": "Linux", "release": "6.6.0-rt15"},
            "kernel_cmdline": {"raw": cmdline, "isolcpus": "2,3", "nohz_full": null},
            "preemption": {"model": "PREEMPT_RT", "config": {"CONFIG_PREEMPT_RT": "y", "CONFIG_HZ": 1000}},
            "cpufreq_governors": [{"cpu": 0, "governor": "performance"}, {"cpu": 1, "governor": null}],
            "cpus": [0, 1, 2],
            "warnings": [],
        }));
        let t = target_section(&r);
        // No JSON text: no braces, brackets or quoted keys.
        for raw in ["{", "}", "[", "&quot;"] {
            assert!(!t.contains(raw), "raw JSON ({raw}) in {t}");
        }
        let cell = |k: &str, v: &str| format!("<tr><th class=\"l\">{k}</th><td class=\"l\">{v}</td></tr>");
        assert!(t.contains(&cell("sysname", "Linux")), "{t}");
        assert!(t.contains(&cell("CONFIG_PREEMPT_RT", "y")), "{t}");
        assert!(t.contains(&cell("CONFIG_HZ", "1000")), "{t}");
        assert!(t.contains(&cell("raw", &cmdline)), "{t}");
        assert!(t.contains(&cell("governor", "performance")), "{t}");
        assert!(t.contains(&cell("cpus", "0, 1, 2")), "{t}");
        assert!(t.contains(&cell("nohz_full", "<span class=\"none\">–</span>")), "{t}");
        // Nested objects are tables inside the cell, and every table of
        // the section may wrap its values (the CSS says how).
        assert!(t.contains("<th class=\"l\">uname</th><td class=\"l\"><table class=\"kv\">"), "{t}");
        assert!(STYLE.contains("table.kv td{overflow-wrap:anywhere"));
        assert_eq!(t.matches("<table").count(), t.matches("class=\"kv\"").count(), "{t}");
    }

    #[test]
    fn metadata_nested_without_end_stops_at_a_depth_and_shows_the_rest_as_text() {
        let mut v = serde_json::json!("deep");
        for _ in 0..50 {
            v = serde_json::json!({ "k": v });
        }
        let mut r = crate::report::testkit::run(0);
        r.target = Some(v);
        let t = target_section(&r);
        assert_eq!(t.matches("<table").count(), MAX_DEPTH + 1);
        assert!(t.contains("&quot;deep&quot;"), "the rest as JSON text");
    }
}
