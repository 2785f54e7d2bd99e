//! CI gates end to end: `run` and `report` with limits against a scripted
//! fake probe; exit codes 0, 3 and the ones that outrank 3 (1: the run
//! failed, 2: a bad limit), the verdicts in the summary, JSON, JUnit and
//! LAVA lines.

mod common;

use std::time::Duration;

use common::*;
use latprobe_protocol::Outcome;

/// 20..50 µs with a 400 µs answer every 500th sample; no timeout.
fn no_timeouts(seq: u64) -> Outcome {
    match fake_outcome(seq) {
        Outcome::Timeout => Outcome::Response(3_000),
        o => o,
    }
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn verdict<'a>(r: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    r["verdicts"].as_array().expect("verdicts").iter().find(|v| v["name"] == name).expect(name)
}

/// `run --count 3000` on a fresh fake probe with `extra` flags.
fn run_with(dir: &std::path::Path, opts: FakeOpts, extra: &[&str]) -> std::process::Output {
    let probe = FakeProbe::start(dir, opts);
    let port = probe.port();
    let args = [&["run", "--port", &port, "--count", "3000"][..], extra].concat();
    run(&args)
}

#[test]
fn limits_that_hold_exit_0_and_each_violated_kind_exits_3_naming_it() {
    let dir = tmp();
    let out = dir.path().join("r.json");
    let opts = FakeOpts { outcomes: no_timeouts, anomalies: Some(Default::default()), ..FakeOpts::default() };
    let all = [
        "--max",
        "500us",
        "--percentile",
        "50=60us",
        "--percentile",
        "99.9=450us",
        "--max-timeouts",
        "0",
        "--max-lost",
        "0",
        "--max-late",
        "0",
    ];
    let o = run_with(dir.path(), opts, &[&all[..], &["-o", out.to_str().unwrap()]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(stdout(&o).contains("limits: all 6 passed"), "{}", show(&o));
    let r = json(&out);
    assert_eq!(r["verdicts"].as_array().unwrap().len(), 6);
    assert_eq!(verdict(&r, "max")["measured"]["value"], 400_000);
    assert_eq!(verdict(&r, "max")["margin"], 100_000);

    // Each kind on its own, violated: exit 3, the limit named in the error
    // line and on a FAIL line with its measured value.
    let cases: [(&str, &[&str], FakeOpts, &str); 5] = [
        ("max", &["--max", "300us"], opts, "400us"),
        ("p50", &["--percentile", "50=20us"], opts, "us"),
        ("timeouts", &["--max-timeouts", "29"], FakeOpts::default(), "30"),
        ("late", &["--max-late", "0"], FakeOpts::default(), "30"),
        ("lost", &["--max-lost", "0"], FakeOpts { faults: true, ..opts }, "32"),
    ];
    for (name, flags, opts, measured) in cases {
        let dir = tmp();
        let out = dir.path().join("r.json");
        let o = run_with(dir.path(), opts, &[flags, &["-o", out.to_str().unwrap()]].concat());
        assert_eq!(o.status.code(), Some(3), "{name}: {}", show(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("Error: 1 of 1 limits violated: {name} (exit code 3)")),
            "{name}: {err}"
        );
        let text = stdout(&o);
        let line = text.lines().find(|l| l.trim_start().starts_with("FAIL")).unwrap_or_default();
        assert!(line.contains(name) && line.contains(measured), "{name}: {text}");
        // The report is written all the same, with the verdict in it.
        let r = json(&out);
        assert_eq!(verdict(&r, name)["pass"], false, "{name}");
        assert_counts_add_up(&r);
    }
}

#[test]
fn a_censored_percentile_is_a_violation_that_says_why() {
    // 1 in 97 samples times out (8 ms): p99.9 and the max fall among them.
    let dir = tmp();
    let out = dir.path().join("r.json");
    let o = run_with(
        dir.path(),
        FakeOpts::default(),
        &["--percentile", "99.9=20ms", "--max", "1ms", "--percentile", "99=1ms", "-o", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    let r = json(&out);
    let p = verdict(&r, "p99.9");
    assert_eq!(p["measured"]["kind"], "above");
    assert!(p["why"].as_str().unwrap().contains("cannot be proven within 20ms"), "{p}");
    assert!(p["why"].as_str().unwrap().contains("raise --timeout"), "{p}");
    let m = verdict(&r, "max");
    assert!(m["why"].as_str().unwrap().contains("so above the limit 1ms"), "{m}");
    // p99 is measured (rank 2970 of 2970 responses): it passes.
    assert_eq!(verdict(&r, "p99")["pass"], true);
    assert!(stdout(&o).contains(">8ms"), "{}", show(&o));
}

#[test]
fn a_failed_run_is_exit_1_even_with_violated_limits_and_still_writes_junit() {
    let dir = tmp();
    let junit = dir.path().join("j.xml");
    let out = dir.path().join("r.json");
    let o = run_with(
        dir.path(),
        FakeOpts { script: Script::SilentAfter(4), ..FakeOpts::default() },
        &[
            "--silence-timeout",
            "500ms",
            "--max",
            "1us",
            "--junit",
            junit.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "exit 1 outranks 3: {}", show(&o));
    assert!(stderr(&o).contains("no data from the probe"), "{}", show(&o));
    assert_eq!(verdict(&json(&out), "max")["pass"], false);
    let x = std::fs::read_to_string(&junit).expect("JUnit written");
    assert!(x.contains("<error"), "the run is an error testcase: {x}");
    assert!(x.contains("<failure"), "the violated max is a failure: {x}");
}

#[test]
fn an_interrupted_run_writes_junit_with_an_error_testcase() {
    let dir = tmp();
    let probe =
        FakeProbe::start(dir.path(), FakeOpts { pace: Duration::from_millis(20), ..FakeOpts::default() });
    let junit = dir.path().join("j.xml");
    let mut child = latprobe()
        .args(["run", "--port", &probe.port(), "--duration", "60s", "--max-lost", "10"])
        .args(["--junit", junit.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: kill(2) on the pid of our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let o = wait_with_timeout(&mut child, Duration::from_secs(10));
    // Interrupted is exit 0 (documented); its limits held.
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let x = std::fs::read_to_string(&junit).expect("JUnit written");
    assert!(x.contains("<error") && x.contains("interrupted"), "{x}");
}

#[test]
fn bad_limits_are_usage_errors_before_the_run() {
    let dir = tmp();
    let bad = dir.path().join("limits.toml");
    std::fs::write(&bad, "max = \"200us\"\nmax_latency = \"1ms\"\n").unwrap();
    let plotfile = dir.path().join("afile");
    std::fs::write(&plotfile, "x").unwrap();
    for (flags, says) in [
        (vec!["--percentile", "100=1us"], "--percentile"),
        (vec!["--percentile", "99.9"], "Q=DURATION"),
        (vec!["--limits", bad.to_str().unwrap()], "line 2"),
        (vec!["--limits", "/nonexistent/limits.toml"], "--limits"),
        (vec!["--plot", plotfile.to_str().unwrap()], "is a file"),
        (vec!["--junit", "/nonexistent/dir/j.xml"], "--junit"),
    ] {
        // No probe at all: the error must come before the port is opened.
        let args = [&["run", "--port", "unix:/nonexistent/probe.sock", "--count", "10"][..], &flags].concat();
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {}", show(&o));
        assert!(stderr(&o).contains(says), "{flags:?}: {}", show(&o));
    }
}

#[test]
fn report_judges_a_saved_run_again_and_keeps_its_verdicts_otherwise() {
    let dir = tmp();
    let (out, raw) = (dir.path().join("r.json"), dir.path().join("r.raw"));
    let opts = FakeOpts { outcomes: no_timeouts, ..FakeOpts::default() };
    let o = run_with(
        dir.path(),
        opts,
        &["--max", "300us", "-o", out.to_str().unwrap(), "--raw", raw.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    let path = out.to_str().unwrap();
    // The saved verdicts, shown again with the same exit code.
    let o = run(&["report", path]);
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    assert!(stdout(&o).contains("FAIL  max"), "{}", show(&o));
    // New limits replace them.
    let o = run(&["report", path, "--max", "1ms"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(stdout(&o).contains("limits: all 1 passed"), "{}", show(&o));
    // A percentile the JSON does not hold: bounded by its 1 µs bins. The
    // raw file gives it exactly.
    let r = json(&out);
    let p99 = r["latency_ns"]["p99"].as_u64().unwrap();
    let limit = format!("99.5={}ns", p99);
    let o = run(&["report", path, "--percentile", &limit]);
    let from_json = stdout(&o);
    let o2 = run(&["report", raw.to_str().unwrap(), "--percentile", &limit]);
    assert!(o2.status.code() == Some(0) || o2.status.code() == Some(3), "{}", show(&o2));
    assert!(from_json.contains("p99.5"), "{from_json}");
    assert!(!stdout(&o2).contains(".."), "the raw file gives one value: {}", show(&o2));
}

#[test]
fn lava_lines_go_to_stdout_and_the_summary_to_stderr() {
    let dir = tmp();
    let o = run_with(
        dir.path(),
        FakeOpts { outcomes: no_timeouts, ..FakeOpts::default() },
        &["--max", "300us", "--max-lost", "0", "--lava"],
    );
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    let out = stdout(&o);
    assert!(!out.trim().is_empty(), "{}", show(&o));
    for line in out.lines() {
        assert!(line.starts_with("lava-test-case "), "only LAVA lines on stdout: {line:?}");
    }
    assert!(out.lines().any(|l| l.contains("max") && l.contains("--result fail")), "{out}");
    assert!(out.lines().any(|l| l.contains("lost") && l.contains("--result pass")), "{out}");
    assert!(stderr(&o).contains("limits: 1 of 2 VIOLATED"), "{}", show(&o));
}
