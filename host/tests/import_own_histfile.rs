//! latprobe's own histfile imports as latprobe's (an external
//! probe measurement, its timeouts censored at the timeout), compare's rows
//! say what the report says, the report records latprobe's command line,
//! an `-N` histfile read as µs is warned about, and a wrong kind of file
//! is named for what it is.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import").join(rel)
}

/// A fake-probe run of 3000 samples with a 500 µs timeout (30 timeouts,
/// every answer far below it) and a 1000 µs histfile: its JSON report and
/// its histfile.
fn fake_run(dir: &Path) -> (PathBuf, PathBuf, Vec<String>) {
    let probe = FakeProbe::start(dir, FakeOpts::default());
    let out = dir.join("run.json");
    let hist = dir.join("run.hist");
    let port = probe.port();
    // What the responder writes about a PREEMPT_RT target.
    let meta = dir.join("target.json");
    let target = serde_json::json!({
        "uname": { "release": "6.12.0-rt5", "version": "#1 SMP PREEMPT_RT", "machine": "aarch64" },
        "preemption": { "model": "PREEMPT_RT", "source": "/sys/kernel/realtime" },
    });
    std::fs::write(&meta, target.to_string()).unwrap();
    let args: Vec<String> = [
        "run",
        "--port",
        port.as_str(),
        "--count",
        "3000",
        "--timeout",
        "500us",
        "-o",
        out.to_str().unwrap(),
        "--histfile",
        hist.to_str().unwrap(),
        "--target-meta",
        meta.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run(&refs);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    (out, hist, args)
}

fn compare_json(files: &[&Path]) -> serde_json::Value {
    let mut args = vec!["compare"];
    args.extend(files.iter().map(|p| p.to_str().unwrap()));
    args.extend(["--format", "json"]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&o)))
}

fn compare_text(files: &[&Path], format: &str) -> String {
    let mut args = vec!["compare"];
    args.extend(files.iter().map(|p| p.to_str().unwrap()));
    args.extend(["--format", format]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// The histfile as latprobe 0.1 wrote it before the `# latprobe:` lines: only the first
/// line, the counts and the timeout sentence of its own comments.
fn old_histfile(text: &str) -> String {
    text.lines()
        .filter(|l| {
            !l.starts_with("# latprobe: ")
                || l.starts_with("# latprobe: samples ")
                || l.starts_with("# latprobe: the ")
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn latprobes_histfile_imports_as_latprobes_with_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (out, hist, _) = fake_run(dir.path());
    let r = json(&out);
    assert_eq!(r["counts"]["timeouts"], 30, "{r:#}");
    assert_eq!(r["latency_ns"]["censored_above"], 500_000);
    let old = dir.path().join("old.hist");
    std::fs::write(&old, old_histfile(&std::fs::read_to_string(&hist).unwrap())).unwrap();

    for h in [&hist, &old] {
        let c = compare_json(&[&out, h]);
        let (rep, imp) = (&c["columns"][0], &c["columns"][1]);
        for k in ["p99_99", "p99_9", "max"] {
            assert_eq!(
                imp["latency"][k],
                serde_json::json!({ "above_ns": 500_000 }),
                "{}: {k}: {c:#}",
                h.display()
            );
            assert_eq!(imp["latency"][k], rep["latency"][k], "{}: {k}", h.display());
        }
        let source = imp["source"].as_str().unwrap();
        assert!(source.contains("external probe") && !source.contains("in-kernel"), "{source}");
        assert!(!imp["mode"].as_str().unwrap().contains("cyclictest"), "{c:#}");
        assert_eq!(imp["lost"], 0, "the histfile says how many were lost: {c:#}");
        let text = compare_text(&[&out, h], "text");
        assert!(!text.contains("assumed") && !text.contains("cyclictest"), "{}:\n{text}", h.display());
    }
    // The new header says the mode, the interval and the probe.
    let c = compare_json(&[&out, &hist]);
    assert_eq!(c["columns"][1]["mode"], c["columns"][0]["mode"], "{c:#}");
    assert_eq!(c["columns"][1]["interval_ns"], c["columns"][0]["interval_ns"], "{c:#}");
    assert_eq!(c["columns"][1]["source"], c["columns"][0]["source"], "{c:#}");

    // Imported to a document: latprobe's, not an in-kernel self-measurement.
    let doc = dir.path().join("doc.json");
    let o = run(&["import", hist.to_str().unwrap(), "-o", doc.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let d = json(&doc);
    assert_eq!(d["run"]["tool"], "latprobe", "{d:#}");
    assert!(!d["measurement"].as_str().unwrap().contains("self-measurement"), "{d:#}");
    let o = run(&["report", doc.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(!s.contains("self-measurement") && s.contains("external probe"), "{s}");
    assert!(s.contains(">500.00"), "the max above the timeout: {s}");
}

#[test]
fn compares_rows_say_what_the_report_says() {
    let dir = tempfile::tempdir().unwrap();
    let (out, hist, args) = fake_run(dir.path());
    let r = json(&out);
    let measured = r["latency_ns"]["measured"].as_u64().unwrap();
    let mean = r["latency_ns"]["mean"].as_u64().unwrap();
    let ct = fixture("cyclictest/ct_t2_h100.json");
    let text = compare_text(&[&out, &hist, &ct], "text");
    let row = |name: &str| -> String {
        text.lines()
            .find(|l| l.split("  ").next() == Some(name))
            .unwrap_or_else(|| panic!("no row '{name}':\n{text}"))
            .to_owned()
    };
    // Avg: the summary's mean over the measured, said as such.
    let avg = row("avg µs");
    let mean_us = format!("{}.{:02}", mean / 1000, (mean % 1000 + 5) / 10);
    assert!(avg.split_whitespace().nth(2) == Some(mean_us.as_str()), "{mean_us}: {avg}\n{text}");
    assert!(!avg.contains('>'), "{avg}");
    assert!(text.contains(&format!("over the {measured} measured")), "{text}");
    // The legend names the timeout; the percentiles say how they were found.
    assert!(text.lines().any(|l| l.contains(">x") && l.contains("timeout")), "{text}");
    assert!(text.contains("bin upper edges") && text.contains("HdrHistogram"), "{text}");
    // What the report has is shown for it (a row, or below the table).
    let c = compare_json(&[&out, &hist, &ct]);
    for name in ["started", "file", "PREEMPT_RT", "cmdline"] {
        let v = &c["columns"][0]["meta"][name];
        assert!(v.is_string(), "{name}: {v} in {:#}", c["columns"][0]["meta"]);
        assert!(text.lines().any(|l| l.starts_with(name)), "{name}:\n{text}");
    }
    assert_eq!(c["columns"][0]["meta"]["file"], out.to_str().unwrap());
    assert_eq!(c["columns"][0]["meta"]["started"], r["started_at"]);
    assert_eq!(c["columns"][0]["meta"]["PREEMPT_RT"], "yes");
    // The report records latprobe's own command line, and compare shows it.
    assert_eq!(r["command_line"][0], "latprobe", "{:#}", r["command_line"]);
    let recorded: Vec<String> = r["command_line"]
        .as_array()
        .unwrap_or_else(|| panic!("no command_line in the report"))
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(recorded[1..], args[..]);
    assert!(text.contains("latprobe run --port"), "{text}");

    // Markdown: no line that renders as a blockquote.
    let md = compare_text(&[&out, &hist, &ct], "markdown");
    assert!(!md.lines().any(|l| l.starts_with('>')), "{md}");
}

#[test]
fn an_old_report_without_a_command_line_still_loads() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _, _) = fake_run(dir.path());
    let mut r = json(&out);
    r.as_object_mut().unwrap().remove("command_line");
    let old = dir.path().join("old.json");
    std::fs::write(&old, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
    for args in [vec!["report", old.to_str().unwrap()], vec!["compare", old.to_str().unwrap()]] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", show(&o));
    }
}

#[test]
fn a_nanosecond_histfile_read_as_microseconds_is_warned_about() {
    let ns = fixture("cyclictest/ct_t2_N_h100.hist");
    let us = fixture("cyclictest/ct_t2_h100.hist");
    let o = run(&["import", ns.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--unit ns") && err.contains("7178"), "{}", show(&o));
    assert!(err.contains("7.178ms") && !err.contains("  "), "{err}");
    let o = run(&["compare", ns.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("--unit ns"), "{}", show(&o));
    for args in [vec!["import", ns.to_str().unwrap(), "--unit", "ns"], vec!["import", us.to_str().unwrap()]] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        assert!(!String::from_utf8_lossy(&o.stderr).contains("--unit"), "{args:?}: {}", show(&o));
    }
}

#[test]
fn a_wrong_kind_of_file_is_named_for_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _, _) = fake_run(dir.path());
    let o = run(&["import", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("latprobe report") && err.contains("latprobe compare"), "{err}");
    assert!(!err.contains("thread"), "{err}");
    for cmd in ["import", "compare"] {
        let o = run(&[cmd, dir.path().to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("is a directory") && !err.contains("no such file"), "{cmd}: {err}");
    }
}

/// The overlay of a run and its own histfile draws the histfile's timeouts
/// at its timeout (`>500 µs`), as the run's, not at the 1000 µs range end.
#[test]
fn the_overlay_draws_an_imported_histfiles_timeouts_at_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (out, hist, _) = fake_run(dir.path());
    let plots = dir.path().join("plots");
    let o =
        run(&["compare", out.to_str().unwrap(), hist.to_str().unwrap(), "--plot", plots.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let svg = std::fs::read_to_string(plots.join("compare-histogram.svg")).unwrap();
    let legend = svg.lines().find(|l| l.starts_with("run.hist")).unwrap_or_else(|| panic!("{svg}"));
    assert!(legend.contains("&gt;500 µs: 30 timeouts"), "{legend}");
    assert!(!legend.contains("1000 µs"), "{legend}");
}

/// One sample in a hundred at 3 ms, none past the 5 ms timeout.
fn three_ms_tail(seq: u64) -> latprobe_protocol::Outcome {
    if seq % 100 == 0 {
        latprobe_protocol::Outcome::Response(300_000)
    } else {
        latprobe_protocol::Outcome::Response(2_000)
    }
}

/// The histfile's default range holds the timeout: a run whose answers
/// reach 3 ms under a 5 ms timeout writes them into bins, not overflows,
/// so importing it is not censored at 1000 µs (cyclictest's usual -h); a
/// range given with --histfile-max-us is kept.
#[test]
fn the_default_histfile_range_holds_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let probe = FakeProbe::start(dir.path(), FakeOpts { outcomes: three_ms_tail, ..FakeOpts::default() });
    let port = probe.port();
    let hist = dir.path().join("run.hist");
    let h = hist.to_str().unwrap();
    let o = run(&["run", "--port", &port, "--count", "1000", "--timeout", "5ms", "--histfile", h]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let text = std::fs::read_to_string(&hist).unwrap();
    assert!(text.contains("# Histogram Overflows: 00000"), "{text:.2000}");
    assert!(
        text.lines().any(|l| l.starts_with("003000")),
        "the 3 ms bin: {:.300}",
        &text[text.len().saturating_sub(300)..]
    );
    drop(probe);
    let second = dir.path().join("second");
    std::fs::create_dir(&second).unwrap();
    let probe = FakeProbe::start(&second, FakeOpts { outcomes: three_ms_tail, ..FakeOpts::default() });
    let port = probe.port();
    let o = run(&[
        "run",
        "--port",
        &port,
        "--count",
        "1000",
        "--timeout",
        "5ms",
        "--histfile",
        h,
        "--histfile-max-us",
        "1000",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let text = std::fs::read_to_string(&hist).unwrap();
    assert!(text.contains("# Histogram Overflows: 00010"), "{text:.2000}");
}
