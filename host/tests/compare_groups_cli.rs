//! `latprobe compare --group` from the command line: groups of demo
//! reports, a group of one raw file (block bootstrap), groups of imported
//! cyclictest runs; the Markdown table's shape, the JSON verdict field,
//! the same output for the same seed, and one clear error per mistake.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

const WORDS: [&str; 3] = ["higher by", "lower by", "no difference shown"];
const FIGURES: [&str; 7] = ["avg", "p50", "p90", "p99", "p99.9", "p99.99", "max"];

/// Demo runs: `name1.json` … with a raw file each, `extra` flags added.
fn demos(dir: &Path, name: &str, count: usize, extra: &[&str]) -> Vec<(PathBuf, PathBuf)> {
    ensure_responder();
    (1..=count)
        .map(|i| {
            let out = dir.join(format!("{name}{i}.json"));
            let raw = dir.join(format!("{name}{i}.raw"));
            let o = run(&[
                &[
                    "demo",
                    "--duration",
                    "2s",
                    "-q",
                    "-o",
                    p(&out),
                    "--raw",
                    p(&raw),
                    "--histfile-max-us",
                    "100000",
                ][..],
                extra,
            ]
            .concat());
            assert_eq!(o.status.code(), Some(0), "{}", show(&o));
            (out, raw)
        })
        .collect()
}

/// Each figure's verdict line of a text output holds one of the words, or
/// says why it was not compared.
fn assert_verdict_lines(text: &str) {
    for f in FIGURES {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{f}: ")))
            .unwrap_or_else(|| panic!("no verdict for {f}:\n{text}"));
        assert!(WORDS.iter().any(|w| line.contains(w)) || line.contains("not compared: "), "{line}\n{text}");
    }
}

#[test]
fn groups_of_demo_reports_and_a_raw_run() {
    let dir = tmp();
    let a = demos(dir.path(), "a", 2, &[]);
    let b = demos(dir.path(), "b", 2, &["--interval", "500us"]);
    let json_of = |v: &[(PathBuf, PathBuf)]| v.iter().map(|(j, _)| p(j).to_owned()).collect::<Vec<_>>();
    let (ja, jb) = (json_of(&a), json_of(&b));
    let args = |format: &str| -> Vec<String> {
        let mut v: Vec<String> = ["compare", "--group", "vanilla"].map(String::from).into();
        v.extend(ja.iter().cloned());
        v.push("--group".into());
        v.push("patched".into());
        v.extend(jb.iter().cloned());
        v.extend(["--format".into(), format.into()]);
        v
    };
    let call = |format: &str| {
        let a = args(format);
        let o = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };

    // Text: each group's runs and method, a verdict per figure.
    let text = call("text");
    assert!(text.contains("vanilla (2 runs: a1.json, a2.json): mean over 2 runs"), "{text}");
    assert!(text.contains("patched against vanilla:"), "{text}");
    assert_verdict_lines(&text);
    // Seeded: the same command gives the same output.
    assert_eq!(text, call("text"));

    // Markdown: one table, a header, an alignment row, a row per figure,
    // every row with the same cells.
    let md = call("markdown");
    let rows: Vec<&str> = md.lines().take_while(|l| l.starts_with('|')).collect();
    assert_eq!(rows.len(), 2 + FIGURES.len(), "{md}");
    assert_eq!(rows[0], "| µs | vanilla | patched | patched − vanilla (95 %) | verdict |", "{md}");
    assert_eq!(rows[1], "|:---|---:|---:|---:|:---|");
    for (row, f) in rows[2..].iter().zip(FIGURES) {
        assert!(row.starts_with(&format!("| {f} |")), "{row}");
        assert_eq!(row.matches(" | ").count(), 4, "{row}");
        assert!(WORDS.iter().any(|w| row.contains(w)) || row.contains("not compared"), "{row}");
    }

    // JSON: the verdict per figure as a field, with its numbers.
    let j: serde_json::Value = serde_json::from_str(&call("json")).unwrap();
    assert_eq!(j["kind"], "latprobe-grouped-compare");
    assert_eq!(j["seed"], 1);
    assert_eq!(j["groups"][0]["name"], "vanilla");
    assert_eq!(j["groups"][1]["runs"].as_array().unwrap().len(), 2);
    let figs = &j["pairs"][0]["figures"];
    assert_eq!(j["pairs"][0]["first"], "vanilla");
    for key in ["avg", "p50", "p90", "p99", "p99_9", "p99_99", "max"] {
        let f = &figs[key];
        let v = f["verdict"].as_str().unwrap_or_else(|| panic!("{key}: {f}"));
        match v {
            "higher by" | "lower by" | "no difference shown" => {
                let (d, lo, hi) = (
                    f["diff_ns"].as_f64().unwrap(),
                    f["lo_ns"].as_f64().unwrap(),
                    f["hi_ns"].as_f64().unwrap(),
                );
                assert!(lo <= d && d <= hi, "{key}: {f}");
                assert_eq!(v == "no difference shown", lo <= 0.0 && 0.0 <= hi, "{key}: {f}");
                assert!(f["level"].as_f64().unwrap() >= 0.95, "{key}: {f}");
            }
            "not compared" => assert!(f["reason"].as_str().is_some_and(|r| !r.is_empty()), "{key}: {f}"),
            other => panic!("{key}: verdict {other}"),
        }
        assert!(f["text"].as_str().unwrap().starts_with(&format!("{}: ", key.replace('_', "."))), "{f}");
    }

    // One raw run per group: its samples in blocks.
    let o = run(&["compare", "--group", "A", p(&a[0].1), "--group", "B", p(&b[0].1)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(t.contains("A (1 run: a1.raw): one run: block bootstrap of its raw samples ("), "{t}");
    // The max is never compared from one run: for want of a bound, or,
    // on a machine loaded enough to time a demo sample out, because it is
    // censored.
    assert!(
        t.contains(" blocks of ")
            && (t.contains("max: not compared: one run cannot bound a maximum")
                || t.contains("max: not compared: max is above")
                || t.contains("'s max is above")),
        "{t}"
    );
    assert_verdict_lines(&t);
    // One JSON report: its histogram, said to assume independent samples.
    let o = run(&["compare", "--group", "A", p(&a[0].0), "--group", "B", p(&b[0].0)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("which assumes independent samples"), "{}", show(&o));
}

/// cyclictest for `secs` into `json`, when this machine has it.
fn cyclictest(json: &Path, secs: u64) -> Option<std::process::Child> {
    Command::new("cyclictest")
        .args(["-q", "-i", "1000", "-h", "2000", "-D", &format!("{secs}s")])
        .arg(format!("--json={}", json.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .ok()
}

#[test]
fn imported_cyclictest_runs_take_part_as_groups() {
    let dir = tmp();
    let (c1, c2) = (dir.path().join("ct1.json"), dir.path().join("ct2.json"));
    for c in [&c1, &c2] {
        let Some(mut ct) = cyclictest(c, 2) else {
            // scripts/test installs rt-tests as root; a developer without it sees why.
            eprintln!("SKIPPED: cyclictest is not installed (apt-get install rt-tests)");
            return;
        };
        let o = wait_with_timeout(&mut ct, Duration::from_secs(30));
        assert!(o.status.success(), "cyclictest failed: {}", show(&o));
    }
    let o = run(&["compare", "--group", "first", p(&c1), "--group", "second", p(&c2), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let method = j["groups"][0]["method"].as_str().unwrap();
    assert!(method.contains("bootstrap of its histogram") && method.contains("independent"), "{method}");
    // About 2000 cycles of 1 ms: the median gets an interval.
    let p50 = &j["pairs"][0]["figures"]["p50"];
    assert!(WORDS.contains(&p50["verdict"].as_str().unwrap()), "{p50}");
    // The fixtures' two threads of one cyclictest file: two runs of a group.
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/cyclictest/ct_t2_h100.json");
    let o = run(&["compare", "--group", "threads", p(&fx), "--group", "now", p(&c1)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(t.contains("threads (2 runs: ct_t2_h100.json T0, ct_t2_h100.json T1)"), "{t}");
    assert_verdict_lines(&t);
}

#[test]
fn mistakes_are_one_error_naming_the_fix() {
    let dir = tmp();
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/cyclictest/ct_t2_h100.json");
    let fx = p(&fx);
    let missing = dir.path().join("nope.json");
    let not_json = dir.path().join("junk.json");
    std::fs::write(&not_json, "hello\n").unwrap();
    // The same run again is refused (a run counts once): a copy stands apart.
    let copy = dir.path().join("copy.json");
    std::fs::copy(fx, &copy).unwrap();
    let fx2 = p(&copy);
    for (args, want) in [
        (vec!["compare", "--group", "a", "--group", "b", fx], "--group a has no files"),
        (vec!["compare", "--group", "a", fx], "give a second"),
        (vec!["compare", "--group", "a", fx, "--group", "a", fx], "--group a is given twice"),
        (vec!["compare", "--group", "a", fx, "--group", "b", p(&missing)], "no such file"),
        (vec!["compare", "--group", "a", fx, "--group", "b", p(&not_json)], "junk.json"),
        (
            vec!["compare", "--group", "a", fx, "--group", "b", fx2, "--format", "csv"],
            "with --group give text",
        ),
        (vec!["compare", "--group", "a", fx, "--group", "b", fx2, "--baseline", "1"], "--baseline"),
        (vec!["compare", fx, "--seed", "3"], "apply to groups: give the runs with --group"),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", show(&o));
        let e = stderr(&o);
        assert_eq!(e.lines().filter(|l| l.starts_with("Error: ")).count(), 1, "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: want {want:?} in {e}");
        assert!(!e.contains("panicked"), "{e}");
    }
}
