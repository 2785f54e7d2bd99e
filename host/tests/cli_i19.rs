//! Issue 19, the command line: errors that name the flag and its form.

mod common;

use std::os::unix::net::UnixListener;
use std::path::Path;
use std::time::Duration;

use common::*;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

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
