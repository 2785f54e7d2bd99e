//! Side-by-side tables of latency runs from different sources (latprobe's
//! external probe, cyclictest, rtla timerlat), as text, Markdown, CSV or
//! JSON.
//!
//! Everything here works on the neutral [`Column`]: the caller turns each
//! run into one (an imported file with [`Column::from_imported`]) and
//! [`render`] lays them out. A figure the source does not give is
//! [`Figure::None`] and prints `n/a`; a percentile the source only bounds
//! (it fell among a histogram's overflows) is [`Figure::Above`] and prints
//! `>bound`. Nothing is filled in.
//!
//! ```text
//!  ImportedRun ─from_imported─▶ Column ─┐
//!  latprobe report ───(caller)─▶ Column ─┴─▶ render(columns, format, baseline) ─▶ String
//! ```
//!
//! Groups of runs (`compare --group NAME FILE…`, seed 003's three runs per
//! kernel) go through [`groups`] (each group's figures, each pair's
//! differences and Holm verdicts), resampling a group of one run with
//! [`bootstrap`], and come out of [`grouped`].

pub mod blocklen;
pub mod bootstrap;
pub mod grouped;
pub mod groups;
pub mod kconfig;
mod render;
pub mod stats;

use crate::import::ImportedRun;

pub use render::render;

use crate::analysis::figure::PERCENTILES;
use crate::analysis::Figure;

/// One run, as one column of the table. Latencies are nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// The column's heading.
    pub label: String,
    /// Who measured: `"external probe"` or
    /// `"in-kernel self-measurement (cyclictest 2.40)"`.
    pub source: String,
    /// What was measured (latprobe's mode, or the tool's thread/context).
    pub mode: Option<String>,
    /// The period between samples, when known.
    pub interval_ns: Option<u64>,
    /// All samples taken, including timeouts or overflows.
    pub samples: u64,
    /// Smallest latency.
    pub min: Figure,
    /// Mean latency.
    pub avg: Figure,
    /// When the mean leaves samples out: over how many it is (a probe's
    /// timeouts have no latency, so its mean is over the measured ones, as
    /// the run's summary says). `None`: over every sample.
    pub avg_over: Option<u64>,
    /// Median.
    pub p50: Figure,
    /// 90th percentile.
    pub p90: Figure,
    /// 99th percentile.
    pub p99: Figure,
    /// 99.9th percentile.
    pub p99_9: Figure,
    /// 99.99th percentile.
    pub p99_99: Figure,
    /// Largest latency.
    pub max: Figure,
    /// Samples without a latency inside the measured range: the probe's
    /// timeouts, or a histogram's overflows.
    pub timeouts_or_overflows: u64,
    /// Samples lost on the way, when the source can tell.
    pub lost: Option<u64>,
    /// How finely the source states its latencies, ns: 1 for the probe,
    /// 1000 for a tool that prints whole µs. A table prints a column
    /// stated in whole µs without decimals when every figure is whole,
    /// every other column with two, as the run's summary does.
    pub resolution_ns: u64,
    /// The probe's timeout, when its timeouts are censored at it: a cell
    /// `Above` it is a timeout, any other `Above` a histogram's end.
    pub timeout_ns: Option<u64>,
    /// Facts about the run (kernel release, preemption model, command
    /// line, ...) as `(name, value)`, in the order they should print.
    /// [`render`] prints the ones every column shares once, outside the
    /// table, and the others as rows.
    pub meta: Vec<(String, String)>,
    /// The kernel's build configuration (`CONFIG_` option → value, the
    /// options set), when the run carries the responder's metadata:
    /// [`render`] shows only the options that differ between columns.
    pub kernel_config: Option<std::collections::BTreeMap<String, String>>,
    /// The loads the run ran on its target (`--load`), by name; `None`
    /// when the source cannot tell (an imported tool's output).
    pub loads: Option<Vec<String>>,
}

/// The output format of [`render`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned plain text for a terminal or a mail.
    Text,
    /// A GitHub-flavoured Markdown table (also reads as plain text).
    Markdown,
    /// RFC 4180 CSV, one column per run, latencies in µs with 3 decimals.
    Csv,
    /// JSON, latencies in ns.
    Json,
}

impl Column {
    /// The column for one imported thread or CPU context, headed `label`.
    /// Percentiles come from [`ImportedRun::quantile`] (bin upper edges,
    /// censored among overflows); min, avg and max are the tool's own. A
    /// latprobe histfile read back is the probe's measurement: its source,
    /// mode and lost are the probe's, its timeouts censored at the timeout
    /// (the max too), and its avg over the measured samples.
    pub fn from_imported(run: &ImportedRun, label: &str) -> Column {
        if run.tool == "latprobe" {
            return Self::from_latprobe_histfile(run, label);
        }
        let opt = |v: Option<u64>| v.map_or(Figure::None, Figure::Value);
        let version = run.tool_version.as_deref().map(|v| format!(" {v}")).unwrap_or_default();
        let extra = &run.extra;
        let text = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let sysinfo = |k: &str| extra.get("sysinfo").and_then(|s| s.get(k)).map(text);

        let mut meta = Vec::new();
        let mut push = |k: &str, v: Option<String>| {
            if let Some(v) = v.filter(|v| !v.is_empty()) {
                meta.push((k.to_owned(), v));
            }
        };
        push("kernel release", sysinfo("release"));
        push("kernel version", sysinfo("version"));
        push("preemption model", sysinfo("version").and_then(|v| preemption_model(&v)));
        push(
            "PREEMPT_RT",
            extra.get("sysinfo").and_then(|s| s.get("realtime")).and_then(|r| r.as_u64()).map(|r| {
                if r == 1 {
                    "yes".to_owned()
                } else {
                    "no".to_owned()
                }
            }),
        );
        push("machine", sysinfo("machine"));
        push("host", sysinfo("nodename"));
        push("cmdline", run.cmdline.clone());
        push("file", Some(run.source_file.clone()));
        push("cpu", run.cpu.map(|c| c.to_string()));
        push("duration", extra.get("duration").map(text));
        push("started", extra.get("start_time").map(text));
        push("return code", extra.get("return_code").filter(|r| r.as_i64() != Some(0)).map(text));
        let unit_source = extra.get("time_unit_source").and_then(|v| v.as_str()).unwrap_or("");
        if unit_source.contains("does not say") {
            let unit = extra.get("time_unit").and_then(|v| v.as_str()).unwrap_or("us");
            let warning = extra
                .get("unit_warning")
                .and_then(|v| v.as_str())
                .map_or(String::new(), |w| format!("; {w}"));
            push("time unit", Some(format!("{unit}, assumed ({unit_source}){warning}")));
        }
        push("percentiles", Some(percentile_basis(run)));
        let [p50, p90, p99, p99_9, p99_99] = PERCENTILES.map(|p| run.quantile(p.q));
        Column {
            label: label.to_owned(),
            source: format!("in-kernel self-measurement ({}{version})", run.tool),
            mode: Some(format!("{} {}", run.tool, run.thread)),
            interval_ns: run.interval_ns,
            samples: run.count,
            min: opt(run.min_ns),
            avg: opt(run.avg_ns),
            p50,
            p90,
            p99,
            p99_9,
            p99_99,
            max: opt(run.max_ns),
            timeouts_or_overflows: run.overflows,
            lost: None,
            resolution_ns: run.avg_resolution_ns,
            timeout_ns: None,
            avg_over: None,
            meta,
            kernel_config: None,
            loads: None,
        }
    }

    fn from_latprobe_histfile(run: &ImportedRun, label: &str) -> Column {
        let lp = run.extra.get("latprobe");
        let get = |k: &str| lp.and_then(|l| l.get(k));
        let text = |k: &str| get(k).and_then(|v| v.as_str()).map(str::to_owned);
        let source = match (text("probe"), get("emulated").and_then(|v| v.as_bool()) == Some(true)) {
            (Some(p), emulated) => {
                let board = p.rsplit_once(' ').map_or(p.as_str(), |(b, _)| b).to_owned();
                if emulated {
                    format!("external probe ({board}, emulated)")
                } else {
                    format!("external probe ({board})")
                }
            }
            (None, _) => "external probe".to_owned(),
        };
        let opt = |v: Option<u64>| v.map_or(Figure::None, Figure::Value);
        let censored = run.timeout_ns.filter(|_| run.timeouts > 0);
        let mut meta = Vec::new();
        let mut push = |k: &str, v: Option<String>| {
            if let Some(v) = v.filter(|v| !v.is_empty()) {
                meta.push((k.to_owned(), v));
            }
        };
        push("cmdline", run.cmdline.clone());
        push("file", Some(run.source_file.clone()));
        push("started", text("started"));
        push("percentiles", Some(percentile_basis(run)));
        push("probe firmware", text("probe"));
        let [p50, p90, p99, p99_9, p99_99] = PERCENTILES.map(|p| run.quantile(p.q));
        Column {
            label: label.to_owned(),
            source,
            mode: Some(text("mode").unwrap_or_else(|| "latprobe histfile".to_owned())),
            interval_ns: run.interval_ns,
            samples: run.count,
            min: opt(run.min_ns),
            avg: opt(run.avg_ns),
            avg_over: (run.timeouts > 0).then(|| run.count.saturating_sub(run.timeouts)),
            p50,
            p90,
            p99,
            p99_9,
            p99_99,
            max: match (run.max_ns, censored) {
                (_, Some(t)) => Figure::Above(t),
                (m, None) => opt(m),
            },
            timeouts_or_overflows: run.overflows,
            lost: get("lost").and_then(|v| v.as_u64()),
            resolution_ns: run.avg_resolution_ns,
            timeout_ns: censored,
            meta,
            kernel_config: None,
            loads: None,
        }
    }
}

/// How an imported run's percentiles were found: `bin upper edges (1 µs)`.
fn percentile_basis(run: &ImportedRun) -> String {
    if run.histogram == crate::import::HistogramRange::None {
        "none (no histogram)".to_owned()
    } else {
        format!("bin upper edges ({})", crate::import::bin_width(run.bin_width_ns))
    }
}

/// The preemption model named in a kernel's `uname -v` string.
fn preemption_model(version: &str) -> Option<String> {
    let words: Vec<&str> = version.split_whitespace().collect();
    ["PREEMPT_RT", "PREEMPT_DYNAMIC", "PREEMPT_LAZY", "PREEMPT"]
        .iter()
        .find(|m| words.contains(m))
        .map(|m| (*m).to_owned())
}

impl Column {
    /// The column for a latprobe report (a probe run, live or replayed),
    /// read from `file`, headed `label`. Timeouts are censored samples: a
    /// percentile or the max that falls among them is [`Figure::Above`] the
    /// timeout; the mean is the summary's, over the measured samples
    /// ([`Column::avg_over`] says how many when some timed out).
    pub fn from_report(r: &crate::report::Report, label: &str, file: &str) -> Column {
        let l = r.latency_ns.as_ref();
        let fig = |v: Option<Option<u64>>| match (l, v.flatten()) {
            (_, Some(ns)) => Figure::Value(ns),
            (Some(l), None) if l.measured + l.censored > 0 => Figure::Above(l.censored_above),
            _ => Figure::None,
        };
        let avg = l.and_then(|l| l.mean).map_or(Figure::None, Figure::Value);
        let probe = r.probe.as_ref();
        let source = match probe {
            Some(p) if p.hello.is_emulated() => format!("external probe ({}, emulated)", p.hello.board),
            Some(p) => format!("external probe ({})", p.hello.board),
            None => "external probe".to_owned(),
        };
        let mut meta = Vec::new();
        if let Some(t) = &r.target {
            let get = |path: &[&str]| {
                let mut v = t;
                for k in path {
                    v = v.get(k)?;
                }
                match v {
                    serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
                    serde_json::Value::Null => None,
                    serde_json::Value::String(_) => None,
                    other => Some(other.to_string()),
                }
            };
            let mut push = |k: &str, v: Option<String>| {
                if let Some(v) = v {
                    meta.push((k.to_owned(), v));
                }
            };
            push("kernel release", get(&["uname", "release"]));
            push("kernel version", get(&["uname", "version"]));
            let model = get(&["preemption", "model"]);
            push("preemption model", model.clone());
            // The responder names PREEMPT_RT as the model when the kernel is
            // one (/sys/kernel/realtime, uname -v or its config).
            push("PREEMPT_RT", model.map(|m| if m == "PREEMPT_RT" { "yes" } else { "no" }.to_owned()));
            push("machine", get(&["uname", "machine"]));
            push("host", get(&["hostname"]));
            push("kernel cmdline", get(&["kernel_cmdline", "raw"]));
            push("isolcpus", get(&["kernel_cmdline", "isolcpus"]));
            let governors: Vec<String> = t
                .get("cpufreq_governors")
                .and_then(|g| g.as_array())
                .map(|a| a.iter().filter_map(|g| g.get("governor")?.as_str().map(str::to_owned)).collect())
                .unwrap_or_default();
            let mut uniq = governors.clone();
            uniq.sort();
            uniq.dedup();
            push("governor", (!uniq.is_empty()).then(|| uniq.join(",")));
        }
        if let Some(c) = &r.command_line {
            meta.push(("cmdline".to_owned(), crate::import::shell_words(c)));
        }
        meta.push(("file".to_owned(), file.to_owned()));
        if !r.started_at.is_empty() {
            meta.push(("started".to_owned(), r.started_at.clone()));
        }
        meta.push(("percentiles".to_owned(), "HdrHistogram (3 digits)".to_owned()));
        if let Some(p) = probe {
            meta.push((
                "probe firmware".to_owned(),
                format!("{} {}", p.hello.board, p.hello.firmware_version),
            ));
        }
        Column {
            label: label.to_owned(),
            source,
            mode: Some(r.config.mode_name().to_owned()),
            interval_ns: Some(r.config.interval_ns),
            samples: r.counts.samples,
            min: fig(l.map(|l| l.min)),
            avg,
            avg_over: l.filter(|l| l.censored > 0).map(|l| l.measured),
            p50: fig(l.map(|l| l.p50)),
            p90: fig(l.map(|l| l.p90)),
            p99: fig(l.map(|l| l.p99)),
            p99_9: fig(l.map(|l| l.p99_9)),
            p99_99: fig(l.map(|l| l.p99_99)),
            max: fig(l.map(|l| l.max)),
            timeouts_or_overflows: r.counts.timeouts,
            lost: Some(r.counts.lost),
            resolution_ns: 1,
            timeout_ns: l.filter(|l| l.censored > 0).map(|l| l.censored_above),
            meta,
            kernel_config: r.target.as_ref().and_then(kconfig::of_target),
            loads: Some(r.loads.iter().map(|l| l.name.clone()).collect()),
        }
    }

    /// One column per phase of a report's load schedule (`--load-schedule`),
    /// headed `label` and the phase (`run.json idle 0–60 s`), with the
    /// phase's own figures (as exact as the run's) and its loads: none in
    /// an idle phase. A row `phase` tells them apart. A phase without a
    /// sample has no column.
    pub fn phases_of_report(r: &crate::report::Report, label: &str, file: &str) -> Vec<Column> {
        let whole = Self::from_report(r, label, file);
        r.phases
            .iter()
            .filter_map(|p| {
                let l = p.latency_ns.as_ref()?;
                let span = match p.end_s {
                    Some(e) => format!("{}–{} s", p.start_s, e),
                    None => format!("{} s–end", p.start_s),
                };
                let fig = |v: Option<u64>| l.figure(v);
                let mut c = whole.clone();
                c.label = format!("{label} {} {span}", p.name);
                c.samples = p.samples;
                c.min = fig(l.min);
                c.avg = l.mean.map_or(Figure::None, Figure::Value);
                c.avg_over = (l.censored > 0).then_some(l.measured);
                c.p50 = fig(l.p50);
                c.p90 = fig(l.p90);
                c.p99 = fig(l.p99);
                c.p99_9 = fig(l.p99_9);
                c.p99_99 = fig(l.p99_99);
                c.max = fig(l.max);
                c.timeouts_or_overflows = p.timeouts;
                // Sequence gaps are the run's, not a phase's.
                c.lost = None;
                c.timeout_ns = (l.censored > 0).then_some(l.censored_above);
                c.meta.push(("phase".to_owned(), format!("{} {span}", p.name)));
                if let Some(ran) = &p.loads {
                    // What was watched running in it (a load that ended early is not).
                    c.loads = Some(ran.iter().filter(|l| l.throughout).map(|l| l.name.clone()).collect());
                } else if p.name != "load" {
                    c.loads = Some(Vec::new());
                }
                Some(c)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{testkit, text};

    fn row<'a>(table: &'a str, name: &str) -> &'a str {
        table.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name}:\n{table}"))
    }

    #[test]
    fn a_report_column_prints_its_figures_as_the_summary_does() {
        // Whole µs figures, and a timeout that is not: the summary prints
        // both with two decimals, the bound rounded down.
        let mut r = testkit::run(3);
        let l = r.latency_ns.as_mut().unwrap();
        l.censored_above = 180_999;
        l.min = Some(10_000);
        l.mean = Some(20_000);
        l.p50 = Some(20_000);
        l.p90 = Some(30_000);
        l.p99 = Some(40_000);
        let summary = text::summary(&r);
        let table = render(&[Column::from_report(&r, "run.json", "run.json")], Format::Text, None);
        for (name, figure) in
            [("min µs", "10.00"), ("p50 µs", "20.00"), ("p99.9 µs", ">180.99"), ("max µs", ">180.99")]
        {
            assert!(row(&table, name).ends_with(&format!(" {figure}")), "{name}: {table}");
            assert!(summary.contains(figure), "{figure} not in the summary: {summary}");
        }
        // The avg is the summary's mean over the measured, not a bound.
        assert!(row(&table, "avg µs").ends_with(" 20.00"), "{table}");
        assert!(table.contains("avg of run.json: over the 297 measured samples of 300"), "{table}");
    }

    #[test]
    fn a_scheduled_run_gives_one_column_per_phase_with_the_phase_figures() {
        use crate::report::{Latency, PhaseReport};
        let mut r = testkit::run(0);
        r.loads = vec![crate::model::LoadRecord {
            name: "hackbench".into(),
            command: "hackbench -l 1000".into(),
            on: "this machine".into(),
            ..Default::default()
        }];
        let lat = |p99, censored| Latency {
            measured: 100 - censored,
            censored,
            censored_above: 500_000,
            min: Some(10_000),
            mean: Some(12_000),
            p50: Some(11_000),
            p90: Some(13_000),
            p99,
            p99_9: None,
            p99_99: None,
            max: None,
            max_measured: Some(90_000),
        };
        let ph = |name: &str, start_s, end_s, latency_ns: Option<Latency>| PhaseReport {
            name: name.into(),
            start_s,
            end_s,
            samples: 100,
            timeouts: latency_ns.as_ref().map_or(0, |l| l.censored),
            max_measured_ns: Some(90_000),
            latency_ns,
            loads: None,
        };
        r.phases = vec![
            ph("idle", 0, Some(60), Some(lat(Some(14_000), 0))),
            ph("load", 60, None, Some(lat(None, 2))),
            ph("idle", 120, None, None),
        ];
        let cols = Column::phases_of_report(&r, "k.json", "k.json");
        assert_eq!(cols.len(), 2, "a phase without samples has no column");
        assert_eq!(
            (cols[0].label.as_str(), cols[1].label.as_str()),
            ("k.json idle 0–60 s", "k.json load 60 s–end")
        );
        assert_eq!((cols[0].p99, cols[1].p99), (Figure::Value(14_000), Figure::Above(500_000)));
        assert_eq!((cols[0].timeouts_or_overflows, cols[1].timeouts_or_overflows), (0, 2));
        assert_eq!(cols[0].loads, Some(vec![]), "no load runs in an idle phase");
        assert_eq!(cols[1].loads, Some(vec!["hackbench".to_owned()]));
        let table = render(&cols, Format::Text, None);
        assert!(row(&table, "phase").contains("idle 0–60 s"), "{table}");
        assert!(row(&table, "p99 µs").ends_with(">500.00"), "{table}");
    }

    #[test]
    fn the_report_column_names_its_rt_kernel_file_start_and_command_line() {
        let mut r = testkit::run(0);
        r.command_line = Some(["latprobe", "run", "--label", "a b"].map(String::from).into());
        let c = Column::from_report(&r, "x", "runs/x.json");
        let get = |k: &str| c.meta.iter().find(|(mk, _)| mk == k).map(|(_, v)| v.as_str());
        assert_eq!(get("PREEMPT_RT"), Some("yes"));
        assert_eq!(get("file"), Some("runs/x.json"));
        assert_eq!(get("started"), Some("2025-06-01T12:00:00.000Z"));
        assert_eq!(get("cmdline"), Some("latprobe run --label 'a b'"));
        assert_eq!(get("percentiles"), Some("HdrHistogram (3 digits)"));
    }
}
