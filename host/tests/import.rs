//! Importing cyclictest and rtla timerlat results: every fixture's figures
//! against what the tool itself printed, the quantile rules, and one clear
//! error per kind of damage. Fixture provenance: fixtures/import/README.md.

use std::path::{Path, PathBuf};

use latprobe::analysis::Figure;
use latprobe::import::{
    import_file, import_file_with, import_str, HistogramRange, ImportError, ImportOptions, ImportedRun,
    TimeUnit,
};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import").join(rel)
}

fn import(rel: &str) -> Vec<ImportedRun> {
    import_file(&fixture(rel)).unwrap_or_else(|e| panic!("{rel} should import: {e}"))
}

fn import_unit(rel: &str, unit: TimeUnit) -> Vec<ImportedRun> {
    import_file_with(&fixture(rel), &ImportOptions { cyclictest_unit: Some(unit) })
        .unwrap_or_else(|e| panic!("{rel} should import: {e}"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(fixture(rel)).expect("fixture readable")
}

/// What cyclictest printed for one thread: count, min, avg (truncated to
/// whole units), max, in the run's unit.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Printed {
    count: u64,
    min: u64,
    avg: u64,
    max: u64,
}

/// The last `T:` status line of each thread, read with nothing but string
/// splitting (independent of the importer's parser).
fn printed_status(text: &str) -> Vec<Printed> {
    let mut last: Vec<(usize, Printed)> = Vec::new();
    for line in text.lines() {
        let Some(at) = line.find("T:") else { continue };
        let line = &line[at..];
        let field = |key: &str| -> u64 {
            let rest = &line[line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len()..];
            rest.split_whitespace().next().expect("value").parse().expect("number")
        };
        let thread: usize =
            line[2..].split_whitespace().next().expect("thread").parse().expect("thread number");
        let p = Printed { count: field("C:"), min: field("Min:"), avg: field("Avg:"), max: field("Max:") };
        last.retain(|(t, _)| *t != thread);
        last.push((thread, p));
    }
    last.sort_by_key(|(t, _)| *t);
    last.into_iter().map(|(_, p)| p).collect()
}

/// The `# Total/Min/Avg/Max/Histogram Overflows` trailer, per thread.
fn printed_trailer(text: &str) -> Vec<Printed> {
    let values = |prefix: &str| -> Vec<u64> {
        let line = text.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}"));
        line[prefix.len()..].split_whitespace().map(|v| v.parse().expect("number")).collect()
    };
    let (total, min, avg, max, over) = (
        values("# Total:"),
        values("# Min Latencies:"),
        values("# Avg Latencies:"),
        values("# Max Latencies:"),
        values("# Histogram Overflows:"),
    );
    (0..min.len())
        .map(|t| Printed { count: total[t] + over[t], min: min[t], avg: avg[t], max: max[t] })
        .collect()
}

/// The tool's figures must come through: count and min/max exactly, avg
/// within the printed truncation (the JSON's two decimals may round up to
/// the next whole unit).
fn assert_matches(runs: &[ImportedRun], printed: &[Printed], unit_ns: u64, what: &str) {
    assert_eq!(runs.len(), printed.len(), "{what}: one run per printed thread");
    for (run, p) in runs.iter().zip(printed) {
        assert_eq!(run.count, p.count, "{what} {}: count", run.thread);
        assert_eq!(run.min_ns, Some(p.min * unit_ns), "{what} {}: min", run.thread);
        assert_eq!(run.max_ns, Some(p.max * unit_ns), "{what} {}: max", run.thread);
        let avg = run.avg_ns.expect("avg");
        assert!(
            avg >= p.avg * unit_ns && avg <= (p.avg + 1) * unit_ns,
            "{what} {}: avg {avg} ns against printed {} units of {unit_ns} ns",
            run.thread,
            p.avg
        );
        if run.histogram != HistogramRange::None {
            let in_bins: u64 = run.bins_ns.iter().map(|b| b.1).sum();
            assert_eq!(in_bins + run.overflows, run.count, "{what} {}: bins + overflows = count", run.thread);
        }
    }
}

// ---------------------------------------------------------------- cyclictest

#[test]
fn histfile_two_threads_matches_the_status_lines_of_its_run() {
    let runs = import("cyclictest/ct_t2_h100.hist");
    assert_matches(&runs, &printed_status(&read("cyclictest/ct_t2_h100.stdout")), 1000, "histfile");
    assert_matches(&runs, &printed_trailer(&read("cyclictest/ct_t2_h100.hist")), 1000, "histfile trailer");
    assert_eq!(runs[0].thread, "T0");
    assert_eq!(runs[1].thread, "T1");
    assert_eq!(runs[0].histogram, HistogramRange::Exact(100_000));
    assert_eq!(runs[0].bin_width_ns, 1000);
    assert_eq!(runs[0].avg_resolution_ns, 1000);
    // The overflow list: 3 and 9 overflows, all listed.
    assert_eq!((runs[0].overflows, runs[0].overflow_cycles.len() as u64, runs[0].overflow_others), (3, 3, 0));
    assert_eq!(runs[1].overflows, 9);
    assert_eq!(runs[0].extra["time_unit_source"], "cyclictest default (the file does not say)");
}

#[test]
fn json_and_histfile_of_one_run_agree() {
    let hist = import("cyclictest/ct_t2_h100.hist");
    let json = import("cyclictest/ct_t2_h100.json");
    assert_matches(&json, &printed_status(&read("cyclictest/ct_t2_h100.stdout")), 1000, "json");
    for (h, j) in hist.iter().zip(&json) {
        assert_eq!((h.count, h.min_ns, h.max_ns, h.overflows), (j.count, j.min_ns, j.max_ns, j.overflows));
        assert_eq!(h.bins_ns, j.bins_ns, "{}", h.thread);
        assert_eq!(h.histogram, j.histogram, "-h 100 from the JSON command line");
        // The histfile's avg is truncated to whole µs, the JSON's has 2 decimals.
        let (ha, ja) = (h.avg_ns.expect("avg"), j.avg_ns.expect("avg"));
        assert!(ha <= ja && ja < ha + 1000, "{ha} vs {ja}");
    }
    let j = &json[0];
    assert_eq!(j.tool_version.as_deref(), Some("2.40"));
    assert!(j.cmdline.as_deref().is_some_and(|c| c.contains("-h 100")));
    assert_eq!(j.avg_resolution_ns, 10);
    assert_eq!(j.interval_ns, Some(500_000), "thread 0 runs at -i 500");
    assert_eq!(json[1].interval_ns, None, "thread 1's interval depends on -d: not claimed");
    assert_eq!(j.cpu, Some(0));
    assert_eq!(j.extra["sysinfo"]["release"], "6.18.44-fc-v595");
    assert_eq!(j.extra["return_code"], 0);
}

#[test]
fn stdout_with_status_lines_and_histogram_imports_and_is_checked_against_them() {
    let text = read("cyclictest/ct_t2_h100_status.stdout");
    assert!(text.contains("\u{1b}[4A"), "the fixture keeps cyclictest's cursor escapes");
    let runs = import("cyclictest/ct_t2_h100_status.stdout");
    assert_matches(&runs, &printed_status(&text), 1000, "status lines");
    assert_matches(&runs, &printed_trailer(&text), 1000, "trailer");
    assert_eq!(runs[0].interval_ns, Some(500_000));
    assert_eq!(runs[0].extra["time_unit_source"], "status line field width");
}

#[test]
fn quiet_stdout_one_thread() {
    let text = read("cyclictest/ct_t1_h100_quiet.stdout");
    let runs = import("cyclictest/ct_t1_h100_quiet.stdout");
    assert_matches(&runs, &printed_trailer(&text), 1000, "-q -h 100");
    assert_eq!(runs[0].count, 2000);
    assert_eq!(runs[0].overflows, 1);
    assert_eq!(runs[0].overflow_cycles, vec![54]);
    assert_eq!(runs[0].extra["comments"][0], "# /dev/cpu_dma_latency set to 0us");
}

#[test]
fn histofall_sum_column_is_dropped_not_taken_for_a_thread() {
    let text = read("cyclictest/ct_t2_H100_quiet.stdout");
    let runs = import("cyclictest/ct_t2_H100_quiet.stdout");
    assert_eq!(runs.len(), 2);
    assert_matches(&runs, &printed_trailer(&text), 1000, "-H 100");
    assert_eq!(runs[0].extra["histofall"], true);
}

#[test]
fn nanosecond_runs_where_every_sample_overflows_take_their_figures_from_the_summary() {
    // cyclictest -N bins by the same unit it prints: ns. With -h 100 every
    // sample (> 100 ns) is an overflow and every count is zero.
    let printed = printed_status(&read("cyclictest/ct_t2_N_h100.stdout"));
    let hist = import_unit("cyclictest/ct_t2_N_h100.hist", TimeUnit::Nanos);
    assert_matches(&hist, &printed, 1, "-N histfile");
    assert_matches(&hist, &printed_trailer(&read("cyclictest/ct_t2_N_h100.hist")), 1, "-N trailer");
    let json = import("cyclictest/ct_t2_N_h100.json");
    assert_matches(&json, &printed, 1, "-N json");
    for run in hist.iter().chain(&json) {
        assert!(run.bins_ns.is_empty());
        assert_eq!(run.overflows, run.count);
        assert_eq!(run.histogram, HistogramRange::Exact(100));
        assert_eq!(run.bin_width_ns, 1);
        assert_eq!(run.avg_resolution_ns, 1);
        assert_eq!(run.quantile(0.5), Figure::Above(100));
    }
    // 100 cycles listed, the rest counted as "others".
    assert_eq!((hist[0].overflow_cycles.len(), hist[0].overflow_others), (100, 300));
    assert_eq!(json[0].extra["time_unit_source"], "resolution_in_ns");
}

#[test]
fn nanosecond_json_with_its_histogram_in_range() {
    let text = read("cyclictest/ct_t1_N_h60000.stdout-excerpt");
    let runs = import("cyclictest/ct_t1_N_h60000.json");
    assert_matches(&runs, &printed_status(&text), 1, "-N -h 60000 json");
    assert_matches(&runs, &printed_trailer(&text), 1, "-N -h 60000 trailer");
    let r = &runs[0];
    assert_eq!(r.overflows, 0);
    assert_eq!(r.histogram, HistogramRange::Exact(60_000));
    assert_eq!(r.bins_ns.first().map(|b| b.0), r.min_ns, "1 ns bins: the lowest bin is the min");
    assert_eq!(r.quantile(1.0), Figure::Value(r.max_ns.expect("max")), "the top percentile clamps to max");
}

#[test]
fn the_stripped_excerpt_is_not_a_histogram() {
    // The excerpt keeps cyclictest's summary but not its 60000 rows: a file
    // like that must not pass for a run with an empty histogram.
    let e = import_file(&fixture("cyclictest/ct_t1_N_h60000.stdout-excerpt")).expect_err("rows missing");
    assert!(e.to_string().contains("'# Total:' says 300 samples for thread 0"), "{e}");
}

#[test]
fn everything_overflows_with_h2() {
    let printed = printed_status(&read("cyclictest/ct_t2_h2.stdout"));
    let hist = import("cyclictest/ct_t2_h2.hist");
    let json = import("cyclictest/ct_t2_h2.json");
    assert_matches(&hist, &printed, 1000, "-h 2 histfile");
    assert_matches(&json, &printed, 1000, "-h 2 json");
    for run in hist.iter().chain(&json) {
        assert_eq!(run.overflows, 400);
        assert_eq!(run.histogram, HistogramRange::Exact(2000));
        for q in [0.5, 0.9, 0.99, 0.999, 0.9999] {
            assert_eq!(run.quantile(q), Figure::Above(2000), "{} q={q}", run.thread);
        }
    }
    assert_eq!((hist[0].overflow_cycles.clone(), hist[0].overflow_others), (vec![0, 1], 398));
}

#[test]
fn json_without_histogram_has_figures_but_no_percentiles() {
    let runs = import("cyclictest/ct_t1_nohist.json");
    assert_matches(&runs, &printed_status(&read("cyclictest/ct_t1_nohist.stdout")), 1000, "no -h");
    assert_eq!(runs[0].histogram, HistogramRange::None);
    assert_eq!(runs[0].overflows, 0, "no histogram is not 400 overflows");
    assert_eq!(runs[0].quantile(0.99), Figure::None);
}

#[test]
fn the_unit_given_by_the_caller_must_not_contradict_the_file() {
    let e = import_file_with(
        &fixture("cyclictest/ct_t2_h100_status.stdout"),
        &ImportOptions { cyclictest_unit: Some(TimeUnit::Nanos) },
    )
    .expect_err("status lines show µs");
    assert!(e.to_string().contains("the caller says the figures are in ns"), "{e}");
}

#[test]
fn status_lines_alone_are_refused() {
    let e = import_file(&fixture("cyclictest/ct_t2_h100.stdout")).expect_err("no histogram");
    let msg = e.to_string();
    assert!(msg.contains("expected '# Histogram'") && msg.contains("status lines alone"), "{msg}");
}

// ---------------------------------------------------------------------- rtla

/// rtla's own footer (`count:`, `min:`, `avg:`, `max:`), per column.
fn rtla_footer(text: &str) -> Vec<Printed> {
    let row = |key: &str| -> Vec<u64> {
        let line = text.lines().find(|l| l.starts_with(key)).unwrap_or_else(|| panic!("{key}"));
        line[key.len()..].split_whitespace().map(|v| v.parse().expect("number")).collect()
    };
    let (count, min, avg, max) = (row("count:"), row("min:"), row("avg:"), row("max:"));
    (0..count.len()).map(|c| Printed { count: count[c], min: min[c], avg: avg[c], max: max[c] }).collect()
}

#[test]
fn rtla_documented_example() {
    let text = read("rtla/rtla_doc_example.txt");
    let runs = import("rtla/rtla_doc_example.txt");
    assert_matches(&runs, &rtla_footer(&text), 1000, "rtla doc example");
    let labels: Vec<&str> = runs.iter().map(|r| r.thread.as_str()).collect();
    assert_eq!(labels[..4], ["cpu 0 irq", "cpu 0 thread", "cpu 1 irq", "cpu 1 thread"]);
    assert_eq!(runs[9].cpu, Some(4));
    assert!(runs.iter().all(|r| r.tool == "rtla timerlat" && r.overflows == 0 && r.bin_width_ns == 1000));
    // The range is not printed: overflows would lie beyond the last row (58 µs).
    assert_eq!(runs[0].histogram, HistogramRange::AtLeast(59_000));
    assert_eq!(runs[0].extra["duration"], "0 00:10:00");
    // Thread on CPU 0: p50 (rank 300 001) falls in bin 6 (cumulative 331 965).
    assert_eq!(runs[1].quantile(0.5), Figure::Value(7_000), "upper edge of the 6 µs bin");
}

#[test]
fn rtla_no_irq_columns() {
    let text = read("rtla/rtla_no_irq.txt");
    let runs = import("rtla/rtla_no_irq.txt");
    assert_matches(&runs, &rtla_footer(&text), 1000, "--no-irq");
    assert_eq!(runs.iter().map(|r| r.thread.as_str()).collect::<Vec<_>>(), ["cpu 0 thread", "cpu 1 thread"]);
    // The same series as in the full output.
    let full = import("rtla/rtla_doc_example.txt");
    assert_eq!(runs[1].bins_ns, full[3].bins_ns);
}

#[test]
fn rtla_user_columns_and_all_block() {
    let text = read("rtla/rtla_user_all.txt");
    let runs = import("rtla/rtla_user_all.txt");
    let per_cpu: String = text.split("ALL:").next().expect("per-CPU part").to_owned();
    assert_matches(&runs, &rtla_footer(&per_cpu), 1000, "-u");
    assert_eq!(runs[2].thread, "cpu 0 user");
    assert_eq!(runs[2].extra["all_cpus"]["user"]["count"], 1_200_004);
    assert_eq!(runs[2].extra["notes"][0], "1234 (0.10%) events missed, results might not be accurate");
}

#[test]
fn rtla_all_block_that_disagrees_is_refused() {
    let text =
        read("rtla/rtla_user_all.txt").replace("count:  1200004   1200004", "count:  1200004   1200003");
    let e = import_str("u.txt", &text).expect_err("ALL count off by one");
    assert!(e.to_string().starts_with("u.txt:"), "{e}");
    assert!(e.to_string().contains("the ALL thread summary"), "{e}");
}

#[test]
fn rtla_nanoseconds_with_zeros_has_an_exact_range() {
    let text = read("rtla/rtla_ns_with_zeros.txt");
    let runs = import("rtla/rtla_ns_with_zeros.txt");
    assert_matches(&runs, &rtla_footer(&text), 1, "-n");
    let thr = &runs[1];
    assert_eq!(thr.bin_width_ns, 1000, "-b 1000 in ns, from the bin starts");
    assert_eq!(thr.histogram, HistogramRange::Exact(30_000), "--with-zeros printed all 30 entries");
    assert_eq!(thr.overflows, 4);
    assert_eq!(thr.quantile(1.0), Figure::Above(30_000));
    assert_eq!(thr.avg_resolution_ns, 1);
}

// ------------------------------------------------------------------ quantile

fn synthetic(bins: &[(u64, u64)], overflows: u64, min: u64, max: u64) -> ImportedRun {
    let in_hist: u64 = bins.iter().map(|b| b.1).sum();
    ImportedRun {
        tool: "cyclictest".into(),
        tool_version: None,
        cmdline: None,
        source_file: "synthetic".into(),
        thread: "T0".into(),
        cpu: None,
        interval_ns: None,
        count: in_hist + overflows,
        min_ns: Some(min),
        avg_ns: Some(min),
        max_ns: Some(max),
        avg_resolution_ns: 1000,
        bins_ns: bins.to_vec(),
        bin_width_ns: 1000,
        overflows,
        overflow_cycles: vec![],
        overflow_others: 0,
        histogram: HistogramRange::Exact(100_000),
        timeouts: 0,
        timeout_ns: None,
        extra: serde_json::Value::Null,
    }
}

#[test]
fn quantile_is_the_upper_edge_of_its_bin_clamped_to_min_and_max() {
    // 1000 samples: 990 in bin 10 µs, 9 in bin 20 µs, 1 in bin 50 µs.
    let run = synthetic(&[(10_000, 990), (20_000, 9), (50_000, 1)], 0, 10_000, 50_000);
    assert_eq!(run.quantile(0.5), Figure::Value(11_000));
    assert_eq!(run.quantile(0.99), Figure::Value(11_000), "rank 990 is the last of bin 10");
    assert_eq!(run.quantile(0.991), Figure::Value(21_000), "rank 991 is the first of bin 20");
    assert_eq!(run.quantile(0.999), Figure::Value(21_000), "rank 999 exactly, no float rounding up");
    assert_eq!(run.quantile(1.0), Figure::Value(50_000), "the upper edge 51 µs clamps to max");
    // The min clamps from below only when a bin starts below it (never for
    // a whole-unit min), so check it on a bin that ends above max.
    let tight = synthetic(&[(10_000, 10)], 0, 10_000, 10_400);
    assert_eq!(tight.quantile(0.5), Figure::Value(10_400));
}

#[test]
fn quantile_among_overflows_is_censored_never_a_number() {
    let run = synthetic(&[(10_000, 998)], 2, 10_000, 300_000);
    assert_eq!(run.quantile(0.998), Figure::Value(11_000));
    assert_eq!(run.quantile(0.999), Figure::Above(100_000));
    assert_eq!(run.quantile(1.0), Figure::Above(100_000));
    let mut unbounded = run.clone();
    unbounded.histogram = HistogramRange::AtLeast(0);
    assert_eq!(unbounded.quantile(0.999), Figure::None);
}

#[test]
fn quantile_without_samples_or_out_of_range_is_unknown() {
    let mut run = synthetic(&[], 0, 0, 0);
    run.min_ns = None;
    run.max_ns = None;
    assert_eq!(run.quantile(0.5), Figure::None);
    let run = synthetic(&[(10_000, 5)], 0, 10_000, 10_000);
    assert_eq!(run.quantile(0.0), Figure::None);
    assert_eq!(run.quantile(1.5), Figure::None);
    assert_eq!(run.quantile(f64::NAN), Figure::None);
}

// -------------------------------------------------------------- bad input

fn error_of(rel: &str) -> String {
    match import_file(&fixture(rel)) {
        Ok(runs) => panic!("{rel} imported {} runs, expected an error", runs.len()),
        Err(e) => e.to_string(),
    }
}

/// The message starts with the file's path and the line.
fn assert_error(rel: &str, line: usize, contains: &str) {
    let msg = error_of(rel);
    let path = fixture(rel).display().to_string();
    assert!(msg.starts_with(&format!("{path}:{line}: ")), "{rel}: wrong place in '{msg}'");
    assert!(msg.contains(contains), "{rel}: '{msg}' should say '{contains}'");
}

#[test]
fn non_numeric_cell() {
    assert_error("damaged/ct_bad_cell.hist", 17, "expected a number of samples in column 2, found 'x'");
    assert_error("damaged/rtla_bad_cell.txt", 10, "expected a number of samples in column 3, found '4e291'");
}

#[test]
fn cut_histfile_is_an_error_not_a_shorter_run() {
    let lines = read("damaged/ct_cut_before_max.hist").lines().count();
    assert_error(
        "damaged/ct_cut_before_max.hist",
        lines + 1,
        "expected '# Max Latencies:', found end of file",
    );
    let lines = read("damaged/ct_no_trailer.hist").lines().count();
    assert_error("damaged/ct_no_trailer.hist", lines + 1, "expected '# Min Latencies:', found end of file");
}

#[test]
fn histogram_that_disagrees_with_its_total() {
    assert_error(
        "damaged/ct_total_mismatch.hist",
        102,
        "says 397 samples for thread 0, but its histogram column sums to 398",
    );
}

#[test]
fn cut_or_incomplete_json() {
    let msg = error_of("damaged/ct_cut.json");
    assert!(msg.contains("ct_cut.json:") && msg.contains("expected cyclictest JSON"), "{msg}");
    assert_error("damaged/ct_no_max.json", 19, "expected 'max' in thread 0");
}

#[test]
fn rtla_without_its_summary() {
    let lines = read("damaged/rtla_cut_after_over.txt").lines().count();
    assert_error("damaged/rtla_cut_after_over.txt", lines + 1, "expected 'count:', found end of file");
}

#[test]
fn unknown_format() {
    assert_error("damaged/unknown.txt", 1, "expected cyclictest --json or --histfile/-h output, or rtla");
    let e = import_str("empty.txt", "").expect_err("empty");
    assert_eq!(e.to_string().split(": ").next(), Some("empty.txt:1"));
}

#[test]
fn unreadable_file_names_it() {
    let e = import_file(Path::new("/nonexistent/run.hist")).expect_err("missing");
    assert!(matches!(e, ImportError::Io { .. }));
    assert!(e.to_string().starts_with("/nonexistent/run.hist: cannot read"), "{e}");
}

/// Cutting a good file anywhere must give an error or a consistent
/// import, never a panic; cutting it before its last required line must
/// always be an error.
#[test]
fn every_prefix_of_every_fixture_is_handled() {
    // (fixture, the start of its last required line: rtla's ALL block and
    // trailing notes are optional, older versions do not print them)
    for (rel, last_required) in [
        ("cyclictest/ct_t2_h100.hist", "# Thread 1:"),
        ("cyclictest/ct_t2_h100.json", "}"),
        ("cyclictest/ct_t2_h100_status.stdout", "# Thread 1:"),
        ("cyclictest/ct_t2_h2.hist", "# Thread 1:"),
        ("rtla/rtla_user_all.txt", "max:"),
        ("rtla/rtla_ns_with_zeros.txt", "max:"),
    ] {
        let text = read(rel);
        let last = if last_required == "}" { text.rfind('}') } else { text.find(last_required) };
        let last = last.expect("marker in fixture");
        for cut in (0..text.len()).filter(|&i| text.is_char_boundary(i)) {
            let result = import_str(rel, &text[..cut]);
            if cut <= last {
                assert!(result.is_err(), "{rel} cut at byte {cut} imported");
            }
            if let Ok(runs) = result {
                for r in runs {
                    let in_bins: u64 = r.bins_ns.iter().map(|b| b.1).sum();
                    assert_eq!(in_bins + r.overflows, r.count, "{rel} cut at {cut}");
                }
            }
        }
    }
}

/// A latprobe histfile of 20 samples in a 100 µs range: 10 measured
/// inside, 8 measured beyond the range (gpio-echo's timeout lies above it)
/// and 2 timeouts above 500 µs; `new_header` adds the `# latprobe:` lines.
fn latprobe_histfile(new_header: bool) -> String {
    let mut s = String::from("# latprobe 0.1.0: latencies measured by the probe's clock, 1 us bins\n");
    s.push_str("# latprobe: samples 20 responses 18 timeouts 2 lost 1\n");
    if new_header {
        s.push_str(
            "# latprobe: mode gpio-echo\n# latprobe: interval_ns 1000000\n# latprobe: timeout_ns 500000\n",
        );
        s.push_str("# latprobe: unit us\n# latprobe: probe nucleo-f411re 0.1.0, 100000000 Hz timer\n");
        s.push_str("# latprobe: started 2026-01-01T00:00:00.000Z\n");
        s.push_str("# latprobe: command_line [\"latprobe\",\"run\",\"--mode\",\"gpio-echo\"]\n");
    }
    s.push_str(
        "# latprobe: the 2 timeouts are latencies above 500.000 us, counted as overflows; Max Latencies is \
         the largest measured: the true max is censored (>500.000 us)\n# Histogram\n",
    );
    for i in 0..100 {
        s.push_str(&format!("{i:06} {:06}\n", if (10..20).contains(&i) { 1 } else { 0 }));
    }
    s.push_str(
        "# Total: 000000010\n# Min Latencies: 00010\n# Avg Latencies: 00150\n# Max Latencies: 00420\n",
    );
    s.push_str("# Histogram Overflows: 00010\n# Histogram Overflow at cycle number:\n");
    s.push_str("# Thread 0: 00010 00011 00012 00013 00014 00015 00016 00017 00018 00019\n");
    s
}

#[test]
fn latprobes_histfile_censors_its_timeouts_at_the_timeout_and_the_rest_at_the_range() {
    for new_header in [true, false] {
        let runs = import_str("run.hist", &latprobe_histfile(new_header)).unwrap_or_else(|e| panic!("{e}"));
        let r = &runs[0];
        assert_eq!((r.tool.as_str(), r.tool_version.as_deref()), ("latprobe", Some("0.1.0")), "{new_header}");
        assert_eq!(
            (r.count, r.overflows, r.timeouts, r.timeout_ns),
            (20, 10, 2, Some(500_000)),
            "{new_header}"
        );
        assert_eq!(r.extra["time_unit_source"], "latprobe's header", "{new_header}");
        assert_eq!(r.quantile(0.5), Figure::Value(20_000));
        // Ranks 11..=18 are measured beyond the range, 19 and 20 timed out.
        assert_eq!(r.quantile(0.9), Figure::Above(100_000), "{new_header}");
        assert_eq!(r.quantile(0.95), Figure::Above(500_000), "{new_header}");
        assert_eq!(r.quantile(1.0), Figure::Above(500_000), "{new_header}");
        let c = latprobe::compare::Column::from_imported(r, "run.hist");
        assert_eq!(c.max, Figure::Above(500_000), "{new_header}");
        assert_eq!((c.avg, c.avg_over, c.lost), (Figure::Value(150_000), Some(18), Some(1)), "{new_header}");
        assert!(c.source.starts_with("external probe"), "{}", c.source);
        if new_header {
            assert_eq!(c.source, "external probe (nucleo-f411re)");
            assert_eq!((c.mode.as_deref(), c.interval_ns), (Some("gpio-echo"), Some(1_000_000)));
            assert_eq!(r.cmdline.as_deref(), Some("latprobe run --mode gpio-echo"));
        }
        // Both bounds explained, neither line a Markdown blockquote.
        let md = latprobe::compare::render(&[c], latprobe::compare::Format::Markdown, None);
        assert!(
            md.contains("`>x` = above the probe's timeout") && md.contains("`>x` = beyond the histogram"),
            "{md}"
        );
        assert!(!md.lines().any(|l| l.starts_with('>')), "{md}");
    }
}

#[test]
fn a_latprobe_report_or_import_document_is_not_taken_for_cyclictest() {
    let report = r#"{"schema_version": 2, "tool_version": "0.1.0", "counts": {"samples": 1}}"#;
    let e = import_str("run.json", report).unwrap_err().to_string();
    assert!(e.contains("a latprobe report") && e.contains("`latprobe report run.json`"), "{e}");
    let doc = r#"{"schema_version": 2, "kind": "in-kernel", "run": {}}"#;
    let e = import_str("doc.json", doc).unwrap_err().to_string();
    assert!(e.contains("latprobe import already wrote") && e.contains("latprobe compare doc.json"), "{e}");
}
