//! What a new user meets on the command line: errors that name the flag and its form,
//! `-o -` and `--quiet`, completions and the man page, `--version`, and a
//! `wrote FILE` line for every output.

mod common;

use std::os::unix::net::UnixListener;
use std::path::Path;
use std::time::Duration;

use common::*;

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Exit 2 and one `Error:` line holding every needle.
fn assert_usage(args: &[&str], needles: &[&str]) {
    let o = run(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", show(&o));
    let err = stderr(&o);
    assert!(err.starts_with("Error: "), "{}", show(&o));
    assert_eq!(err.lines().count(), 1, "one line: {}", show(&o));
    for n in needles {
        assert!(err.contains(n), "{args:?}: expected '{n}': {}", show(&o));
    }
}

/// A JSON report of a short demo run, made once per test that needs one.
fn demo_report(dir: &Path) -> std::path::PathBuf {
    ensure_responder();
    let p = dir.join("run.json");
    let o = run(&["demo", "--duration", "1s", "--interval", "1ms", "-o", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    p
}

#[test]
fn negative_values_reach_the_parser_and_name_the_flag() {
    let port = ["run", "--port", "/dev/null"];
    let with = |extra: &[&'static str]| [&port[..], extra].concat();
    assert_usage(&with(&["--duration", "-5ms"]), &["--duration", "-5ms", "5s"]);
    assert_usage(&with(&["--interval", "-1ms"]), &["--interval", "-1ms", "500us"]);
    assert_usage(&with(&["--count", "-1"]), &["--count", "-1", "a whole number of samples, 1 or more"]);
    assert_usage(&["demo", "--duration", "-5ms"], &["--duration", "-5ms"]);
    assert_usage(&["demo", "--count", "-1"], &["--count", "-1"]);
    assert_usage(&with(&["--timeout", "-1us"]), &["--timeout", "-1us"]);
    // A flag where the value belongs is named as a missing value, not as a
    // negative duration.
    assert_usage(&with(&["--duration", "--count", "5"]), &["--duration", "needs a value"]);
}

#[test]
fn a_number_and_its_unit_apart_suggest_them_together() {
    assert_usage(&["run", "--port", "/dev/null", "--duration", "5", "s"], &["--duration 5s"]);
    assert_usage(&["demo", "--interval", "1.5", "ms"], &["--interval 1.5ms"]);
    assert_usage(&["demo", "--duration", "5", "min", "--interval", "1ms"], &["--duration 5min"]);
}

#[test]
fn report_of_a_cyclictest_file_points_to_import_and_compare() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/cyclictest");
    for f in ["ct_t2_h100.json", "ct_t2_h100.hist"] {
        let p = fixtures.join(f);
        assert_usage(
            &["report", p.to_str().unwrap()],
            &[f, "cyclictest", "latprobe import", "latprobe compare"],
        );
    }
}

#[test]
fn a_port_that_is_no_serial_port_says_what_it_must_be() {
    assert_usage(
        &["run", "--port", "/dev/null", "--count", "10"],
        &["--port /dev/null: not a serial port (ENOTTY)", "/dev/ttyACM0", "latprobe list"],
    );
    assert!(!stderr(&run(&["run", "--port", "/dev/null"])).contains("Not a typewriter"));
    // Nothing listens on port 1.
    assert_usage(
        &["run", "--port", "tcp:localhost:1", "--count", "10"],
        &["--port tcp:localhost:1: connection refused", "ser2net"],
    );
}

#[test]
fn an_output_that_is_a_directory_suggests_a_file_of_its_kind() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_str().unwrap();
    let run_with = |flag: &'static str| vec!["run", "--port", "/dev/null", flag, dir];
    for (flag, name) in [
        ("--junit", "junit.xml"),
        ("--output", "run.json"),
        ("--histfile", "run.hist"),
        ("--raw", "run.raw"),
        ("--html", "report.html"),
    ] {
        let suggested = format!("{flag} {dir}: is a directory; give a file, e.g. {dir}/{name}");
        assert_usage(&run_with(flag), &[&suggested]);
    }
    let cal = format!("--output {dir}: is a directory; give a file, e.g. {dir}/calibration.json");
    assert_usage(&["calibrate", "--port", "/dev/null", "--line", "gpio", "-o", dir], &[&cal]);
    let rep = format!("--report {dir}: is a directory; give a file, e.g. {dir}/loopback.json");
    assert_usage(&["calibrate", "--port", "/dev/null", "--line", "gpio", "--report", dir], &[&rep]);
}

#[test]
fn demo_help_lists_only_the_modes_it_runs() {
    let o = run(&["demo", "--help"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = stdout(&o);
    let at = out.find("Possible values:").unwrap_or_else(|| panic!("{out}"));
    let modes = &out[at..out[at..].find("\n\n").map_or(out.len(), |e| at + e)];
    assert!(modes.contains("- uart-echo") && modes.contains("- periodic"), "{modes}");
    assert!(!modes.contains("gpio-echo") && !modes.contains("loopback"), "{modes}");
    assert_usage(&["demo", "--mode", "gpio-echo"], &["--mode", "uart-echo", "periodic"]);
}

#[test]
fn a_silent_port_is_exit_2_naming_the_missing_hello() {
    let d = tempfile::tempdir().unwrap();
    let sock = d.path().join("probe.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    // Accept and keep the connection open, never saying a word.
    let keep = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        std::thread::sleep(Duration::from_secs(3));
        drop(s);
    });
    let port = format!("unix:{}", sock.display());
    let o = run(&["run", "--port", &port, "--count", "10", "--silence-timeout", "300ms"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = stderr(&o);
    assert!(err.contains("no Hello") && err.contains("within 300ms"), "{err}");
    assert!(err.contains("latprobe flash") && err.contains("--baud"), "what to check: {err}");
    assert!(!err.contains("measuring"), "nothing measures before a Hello: {err}");
    let help = stdout(&run(&["--help"]));
    assert!(
        help.contains(
            "2  usage or set-up error: a bad flag, a missing port, a port where no probe says Hello"
        ),
        "{help}"
    );
    keep.join().unwrap();
}

#[test]
fn the_measuring_line_follows_the_hello() {
    let d = tempfile::tempdir().unwrap();
    let fake = FakeProbe::start(d.path(), FakeOpts::default());
    let o = run(&["run", "--port", &fake.port(), "--count", "64"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(stderr(&o).contains("latprobe: measuring uart-echo through the probe on"), "{}", show(&o));
}

#[test]
fn a_repeated_percentile_limit_is_an_error_naming_both() {
    assert_usage(
        &["run", "--port", "/dev/null", "--percentile", "99.9=100us", "--percentile", "99.9=200us"],
        &["--percentile 99.9=100us", "--percentile 99.9=200us"],
    );
    let d = tempfile::tempdir().unwrap();
    let limits = d.path().join("limits.toml");
    std::fs::write(&limits, "[percentile]\n\"99.9\" = \"100us\"\n\"p99.9\" = \"200us\"\n").unwrap();
    assert_usage(
        &["run", "--port", "/dev/null", "--limits", limits.to_str().unwrap()],
        &["\"99.9\" and \"p99.9\" limit one percentile twice"],
    );
}

#[test]
fn list_prints_no_legend_when_nothing_is_marked() {
    let d = tempfile::tempdir().unwrap();
    let sys = d.path().join("sys");
    let dev = d.path().join("dev");
    let o = run(&[
        "list",
        "--sys-root",
        sys.to_str().unwrap(),
        "--dev-root",
        dev.to_str().unwrap(),
        "--no-debug-probes",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(!stdout(&o).contains("* looks like"), "{}", show(&o));
}

#[test]
fn the_responder_names_gpio_and_gpio_echo() {
    let responder = ensure_responder();
    let o = std::process::Command::new(&responder).args(["periodic", "--interval", "1ms"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = stderr(&o);
    assert!(err.contains("--device") && err.contains("--gpio"), "{err}");
    let o = std::process::Command::new(&responder).arg("--help").output().unwrap();
    assert!(stdout(&o).contains("gpio-echo"), "{}", show(&o));
}

#[test]
fn json_on_stdout_and_the_summary_on_stderr() {
    let d = tempfile::tempdir().unwrap();
    let report = demo_report(d.path());
    // In a directory of its own: a file called - must not appear.
    let o = latprobe()
        .current_dir(d.path())
        .args(["report", report.to_str().unwrap(), "-o", "-"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&o)));
    assert_eq!(v["schema_version"], 2);
    assert!(stderr(&o).contains("I:"), "the summary on stderr: {}", show(&o));
    // The live path too.
    let o = latprobe().current_dir(d.path()).args(["demo", "--duration", "1s", "-o", "-"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&o)));
    assert_counts_add_up(&v);
    assert!(!d.path().join("-").exists(), "no file called -");
    // One stdout: JSON and LAVA lines cannot share it.
    assert_usage(&["report", report.to_str().unwrap(), "-o", "-", "--lava"], &["-o -", "--lava"]);
    assert_usage(&["report", report.to_str().unwrap(), "--histfile", "-"], &["--histfile -", "./-"]);
}

#[test]
fn quiet_prints_nothing_but_errors() {
    let d = tempfile::tempdir().unwrap();
    let report = demo_report(d.path());
    let out = d.path().join("again.json");
    let o = run(&["report", report.to_str().unwrap(), "--quiet", "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{}", show(&o));
    assert!(out.is_file());
    let o = run(&["demo", "--duration", "1s", "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{}", show(&o));
    // With -o -, the JSON is the only output.
    let o = run(&["report", report.to_str().unwrap(), "-q", "-o", "-"]);
    assert!(o.stderr.is_empty(), "{}", show(&o));
    serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap();
    // compare and import print nothing either.
    let o = run(&["compare", report.to_str().unwrap(), report.to_str().unwrap(), "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{}", show(&o));
    let ct = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/cyclictest/ct_t2_h100.json");
    let imported = d.path().join("ct.json");
    let o = run(&["import", ct.to_str().unwrap(), "-o", imported.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{}", show(&o));
    // An error still prints.
    let o = run(&["report", "/nonexistent.json", "--quiet"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with("Error: "), "{}", show(&o));
}

#[test]
fn every_output_written_is_said_once() {
    let d = tempfile::tempdir().unwrap();
    let report = demo_report(d.path());
    let p = |n: &str| d.path().join(n).display().to_string();
    let (json, hist, junit, html, plots) = (p("a.json"), p("a.hist"), p("a.xml"), p("a.html"), p("plots"));
    let o = run(&[
        "report",
        report.to_str().unwrap(),
        "-o",
        &json,
        "--histfile",
        &hist,
        "--junit",
        &junit,
        "--html",
        &html,
        "--plot",
        &plots,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let err = stderr(&o);
    for f in [&json, &hist, &junit, &html] {
        assert_eq!(err.matches(&format!("latprobe: wrote {f}\n")).count(), 1, "{f}: {err}");
    }
    // The tail plot (2 files) only when the tail model was fitted.
    let n = latprobe::report::plot::PLOT_FILES.len();
    let said = |k: usize| err.contains(&format!("latprobe: wrote {k} plots in {plots}\n"));
    assert!(said(n) || said(n - 2), "{err}");
    let raw = p("b.raw");
    let o = run(&["demo", "--duration", "1s", "--raw", &raw]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(stderr(&o).contains(&format!("latprobe: wrote {raw}\n")), "{}", show(&o));
}

#[test]
fn version_names_the_commit_the_protocol_and_probe_rs() {
    for flag in ["--version", "-V"] {
        let o = run(&[flag]);
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        let out = stdout(&o);
        assert!(out.starts_with(&format!("latprobe {}", env!("CARGO_PKG_VERSION"))), "{out}");
        assert!(out.contains("commit "), "{out}");
        let proto = format!("protocol {}", latprobe_protocol::PROTOCOL_VERSION);
        assert!(out.contains(&proto), "{out}");
        let probe_rs =
            if cfg!(feature = "probe-rs") { "probe-rs: built in" } else { "probe-rs: not built in" };
        assert!(out.contains(probe_rs), "{out}");
    }
}

const SUBCOMMANDS: [&str; 8] = ["run", "report", "demo", "import", "compare", "calibrate", "list", "flash"];

#[test]
fn completions_for_bash_zsh_and_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let o = run(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        let script = stdout(&o);
        assert!(!script.is_empty(), "{shell}");
        for sub in SUBCOMMANDS {
            assert!(script.contains(sub), "{shell} lacks {sub}");
        }
        if shell == "bash" {
            let d = tempfile::tempdir().unwrap();
            let f = d.path().join("latprobe.bash");
            std::fs::write(&f, &script).unwrap();
            let b = std::process::Command::new("bash").arg("-n").arg(&f).output().unwrap();
            assert!(b.status.success(), "bash -n: {}", show(&b));
            assert!(script.contains("complete -F"), "{script}");
        }
    }
    assert_usage(&["completions", "tcsh"], &["tcsh"]);
}

#[test]
fn a_man_page_for_latprobe_and_each_subcommand() {
    let o = run(&["man"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let page = stdout(&o);
    assert!(page.starts_with(".ie") || page.contains(".TH latprobe"), "{page}");
    for sub in SUBCOMMANDS {
        assert!(page.contains(sub), "man lacks {sub}");
    }
    let d = tempfile::tempdir().unwrap();
    let o = run(&["man", d.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let top = std::fs::read_to_string(d.path().join("latprobe.1")).unwrap();
    assert!(top.contains(".TH latprobe 1"), "{top}");
    for sub in SUBCOMMANDS {
        let p = d.path().join(format!("latprobe-{sub}.1"));
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(text.contains(&format!(".TH latprobe-{sub} 1")), "{text}");
        assert!(stderr(&o).contains(&format!("latprobe: wrote {}", p.display())), "{}", show(&o));
    }
    assert_usage(&["man", "/nonexistent/dir"], &["/nonexistent/dir"]);
}
