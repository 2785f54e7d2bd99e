//! The comparison table in each format: snapshots of the whole output
//! (`fixtures/compare/`, rewritten with `LATPROBE_UPDATE_SNAPSHOTS=1`), and
//! the rules that must hold whatever the layout: censored cells print
//! `>bound`, unknown ones `n/a`, shared metadata once, ratios only between
//! plain values.

use std::path::{Path, PathBuf};

use latprobe::analysis::Figure;
use latprobe::compare::{render, Column, Format};
use latprobe::import::import_str;

/// Imported under its relative name, so snapshots do not hold this
/// checkout's path.
fn import_fixture(rel: &str) -> Vec<latprobe::import::ImportedRun> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import").join(rel);
    let text = std::fs::read_to_string(&path).expect("fixture readable");
    import_str(rel, &text).unwrap_or_else(|e| panic!("{e}"))
}

/// A latprobe run as the CLI would hand it over (figures from the README's
/// demo).
fn probe_column() -> Column {
    Column {
        label: "latprobe uart".into(),
        source: "external probe".into(),
        mode: Some("uart-echo".into()),
        interval_ns: Some(1_000_000),
        samples: 10_006,
        min: Figure::Value(11_940),
        avg: Figure::Value(43_120),
        avg_over: None,
        p50: Figure::Value(46_980),
        p90: Figure::Value(54_560),
        p99: Figure::Value(60_670),
        p99_9: Figure::Value(184_320),
        p99_99: Figure::Value(480_618),
        max: Figure::Value(480_618),
        timeouts_or_overflows: 33,
        lost: Some(0),
        resolution_ns: 1,
        timeout_ns: None,
        meta: vec![
            ("kernel release".into(), "6.18.44-fc-v595".into()),
            ("preemption model".into(), "PREEMPT_DYNAMIC".into()),
            ("host".into(), "vm".into()),
            ("percentiles".into(), "HdrHistogram (3 digits)".into()),
        ],
        kernel_config: None,
        loads: None,
    }
}

/// Four sources side by side: the probe, a cyclictest thread, a cyclictest
/// thread whose histogram overflowed entirely, an rtla thread.
fn mixed() -> Vec<Column> {
    let ct = import_fixture("cyclictest/ct_t2_h100.json");
    let h2 = import_fixture("cyclictest/ct_t2_h2.json");
    let rtla = import_fixture("rtla/rtla_doc_example.txt");
    vec![
        probe_column(),
        Column::from_imported(&ct[0], "cyclictest T0"),
        Column::from_imported(&h2[1], "cyclictest -h 2"),
        Column::from_imported(&rtla[1], "timerlat cpu0"),
    ]
}

/// Two threads of one cyclictest run: all their metadata is shared.
fn same_run() -> Vec<Column> {
    let hist = import_fixture("cyclictest/ct_t2_h100.json");
    vec![Column::from_imported(&hist[0], "T0"), Column::from_imported(&hist[1], "T1")]
}

fn snapshot(name: &str, actual: &str) {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compare").join(name);
    if std::env::var_os("LATPROBE_UPDATE_SNAPSHOTS").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).expect("write snapshot");
        eprintln!("rewrote {}", path.display());
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!("{} is missing: run with LATPROBE_UPDATE_SNAPSHOTS=1 and review it", path.display())
    });
    assert!(
        expected == actual,
        "{} differs (rerun with LATPROBE_UPDATE_SNAPSHOTS=1 if the change is meant):\n--- expected\n{expected}\n--- actual\n{actual}",
        path.display()
    );
}

#[test]
fn snapshots() {
    let mixed = mixed();
    snapshot("mixed_baseline.txt", &render(&mixed, Format::Text, Some(0)));
    snapshot("mixed_baseline.md", &render(&mixed, Format::Markdown, Some(0)));
    snapshot("mixed_baseline.csv", &render(&mixed, Format::Csv, Some(0)));
    snapshot("mixed_baseline.json", &render(&mixed, Format::Json, Some(0)));
    let same = same_run();
    snapshot("same_run.txt", &render(&same, Format::Text, None));
    snapshot("same_run.md", &render(&same, Format::Markdown, None));
    snapshot("same_run.csv", &render(&same, Format::Csv, None));
    snapshot("same_run.json", &render(&same, Format::Json, None));
}

fn row<'a>(text: &'a str, heading: &str) -> &'a str {
    text.lines().find(|l| l.starts_with(heading)).unwrap_or_else(|| panic!("row {heading} in\n{text}"))
}

#[test]
fn censored_cells_print_their_bound_and_unknown_ones_na() {
    let text = render(&mixed(), Format::Text, None);
    // -h 2: every percentile lies among the overflows, beyond 2 µs.
    let p99 = row(&text, "p99 µs");
    assert!(p99.split_whitespace().any(|c| c == ">2.00"), "{p99}");
    // cyclictest and rtla do not know about lost samples; the probe does.
    let lost: Vec<&str> = row(&text, "lost").split_whitespace().skip(1).collect();
    assert_eq!(lost, ["0", "n/a", "n/a", "n/a"]);
    // rtla prints no period.
    assert!(row(&text, "interval").trim_end().ends_with("n/a"));
    assert!(text.contains(">x = beyond the histogram's range"), "the legend explains '>'");
}

#[test]
fn ratios_to_the_baseline_and_na_when_censored() {
    let cols = mixed();
    let text = render(&cols, Format::Text, Some(0));
    let Figure::Value(base) = cols[0].p99 else { panic!("probe p99") };
    let Figure::Value(ct) = cols[1].p99 else { panic!("cyclictest p99") };
    let expected = format!("({:.2}×)", ct as f64 / base as f64);
    let p99 = row(&text, "p99 µs");
    assert!(p99.contains(&expected), "{p99} should hold {expected}");
    assert!(p99.contains(">2.00 (n/a)"), "no ratio for a censored value: {p99}");
    assert!(!row(&text, "samples").contains('×'), "ratios only on latencies");
    assert!(text.contains("(×) = ratio to the baseline column 'latprobe uart'"));
    // An index past the end is said, not silently used.
    let bad = render(&cols, Format::Text, Some(9));
    assert!(!bad.contains('×') || !row(&bad, "p99 µs").contains('×'));
    assert!(bad.contains("baseline column 9 does not exist"));
}

#[test]
fn shared_metadata_prints_once_differing_metadata_as_rows() {
    let text = render(&same_run(), Format::Text, None);
    assert_eq!(text.matches("6.18.44-fc-v595").count(), 1, "{text}");
    assert!(!text.lines().any(|l| l.starts_with("kernel release")), "not a row when shared");
    assert!(text.contains("common to all columns:\n"));
    // Across sources the kernel release is missing for rtla: a row, n/a there.
    let mixed = render(&mixed(), Format::Text, None);
    let release = row(&mixed, "kernel release");
    assert!(release.trim_end().ends_with("n/a"), "{release}");
    // The two cyclictest threads of different runs started at different times.
    assert!(mixed.lines().any(|l| l.starts_with("started")));
}

#[test]
fn markdown_is_a_well_formed_github_table() {
    let cols = mixed();
    let md = render(&cols, Format::Markdown, Some(0));
    let table: Vec<&str> = md.lines().take_while(|l| l.starts_with('|')).collect();
    assert!(table.len() > 14, "{md}");
    assert_eq!(table[1], "|:---|---:|---:|---:|---:|");
    for line in &table {
        assert!(line.ends_with('|'), "{line}");
        let cells = line.replace("\\|", "").matches('|').count();
        assert_eq!(cells, cols.len() + 2, "{line}");
    }
    // The command line holds no '|' here, but a label with one must not
    // break the table.
    let mut odd = cols.clone();
    odd[0].label = "a|b".into();
    let md = render(&odd, Format::Markdown, None);
    assert!(md.lines().next().expect("header").contains("a\\|b"));
}

/// RFC 4180 fields of one record.
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().expect("field").push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(String::new()),
            (c, _) => fields.last_mut().expect("field").push(c),
        }
    }
    fields
}

#[test]
fn csv_has_one_field_per_column_on_every_row() {
    let cols = mixed();
    let csv = render(&cols, Format::Csv, Some(0));
    assert!(csv.ends_with("\r\n"));
    for line in csv.split("\r\n").filter(|l| !l.is_empty()) {
        assert_eq!(csv_fields(line).len(), cols.len() + 1, "{line}");
    }
    let p99 = csv.split("\r\n").find(|l| l.starts_with("p99_us,")).expect("p99 row");
    assert_eq!(csv_fields(p99)[3], ">2.000");
    let cmdline = csv.split("\r\n").find(|l| l.starts_with("cmdline,")).expect("cmdline row");
    assert_eq!(csv_fields(cmdline)[1], "n/a");
    assert!(csv_fields(cmdline)[2].starts_with("cyclictest -m -p 80"));
    // Commas and quotes are quoted, not taken for separators.
    let mut odd = cols.clone();
    odd[0].label = "a, \"b\"".into();
    let csv = render(&odd, Format::Csv, None);
    let header = csv.split("\r\n").next().expect("header");
    assert!(header.starts_with("metric,\"a, \"\"b\"\"\","), "{header}");
    assert_eq!(csv_fields(header)[1], "a, \"b\"");
}

#[test]
fn json_keeps_censoring_and_unknowns_apart_from_values() {
    let cols = mixed();
    let v: serde_json::Value =
        serde_json::from_str(&render(&cols, Format::Json, Some(0))).expect("valid JSON");
    let c = &v["columns"];
    assert_eq!(c[2]["latency"]["p99"], serde_json::json!({ "above_ns": 2000 }));
    assert_eq!(c[1]["latency"]["min"], serde_json::json!({ "ns": 11000 }));
    assert_eq!(c[1]["lost"], serde_json::Value::Null);
    assert_eq!(c[2]["ratio_to_baseline"]["p99"], serde_json::Value::Null);
    assert_eq!(c[0]["ratio_to_baseline"]["p99"], 1.0);
    assert_eq!(v["baseline"], 0);
    let same: serde_json::Value =
        serde_json::from_str(&render(&same_run(), Format::Json, None)).expect("valid JSON");
    assert_eq!(same["shared_meta"]["kernel release"], "6.18.44-fc-v595");
    assert!(same["columns"][0]["meta"].get("kernel release").is_none());
}

#[test]
fn from_imported_takes_the_tools_figures() {
    let runs = import_fixture("cyclictest/ct_t2_h100.json");
    let col = Column::from_imported(&runs[1], "T1");
    assert_eq!(col.source, "in-kernel self-measurement (cyclictest 2.40)");
    assert_eq!(col.samples, runs[1].count);
    assert_eq!(col.min, Figure::Value(runs[1].min_ns.expect("min")));
    assert_eq!(col.max, Figure::Value(runs[1].max_ns.expect("max")));
    assert_eq!(col.timeouts_or_overflows, 9);
    assert_eq!(col.p99_99, runs[1].quantile(0.9999));
    assert_eq!(col.lost, None);
    let meta = |k: &str| col.meta.iter().find(|(mk, _)| mk == k).map(|(_, v)| v.as_str());
    assert_eq!(meta("preemption model"), Some("PREEMPT_DYNAMIC"));
    assert_eq!(meta("PREEMPT_RT"), Some("no"));
    // A histfile does not say its unit: the column says it was assumed.
    let hist = import_fixture("cyclictest/ct_t2_h100.hist");
    let col = Column::from_imported(&hist[0], "T0");
    assert!(col.meta.iter().any(|(k, v)| k == "time unit" && v.starts_with("us, assumed")));
}

#[test]
fn nothing_to_compare() {
    assert_eq!(render(&[], Format::Text, None), "no runs to compare\n");
    assert_eq!(render(&[], Format::Markdown, Some(0)), "no runs to compare\n");
    let csv = render(&[], Format::Csv, None);
    assert!(csv.starts_with("metric\r\nsamples\r\n") && csv.split("\r\n").all(|l| !l.contains(',')), "{csv}");
    let v: serde_json::Value = serde_json::from_str(&render(&[], Format::Json, None)).expect("valid JSON");
    assert_eq!(v["columns"], serde_json::json!([]));
}
