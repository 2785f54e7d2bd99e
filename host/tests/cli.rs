//! Usage errors: exit code 2 and one `Error:` line naming what to fix.

mod common;

use common::*;

fn assert_usage(args: &[&str], needle: &str) {
    let o = run(args);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("Error: "), "{}", show(&o));
    assert_eq!(err.lines().count(), 1, "one line: {}", show(&o));
    assert!(err.contains(needle), "expected '{needle}': {}", show(&o));
}

#[test]
fn a_missing_port_is_exit_2_naming_the_port() {
    assert_usage(&["run", "--port", "/dev/ttyNOPE", "--count", "10"], "/dev/ttyNOPE");
    assert_usage(&["run", "--port", "unix:/nonexistent/probe.sock"], "unix:/nonexistent/probe.sock");
    assert_usage(&["run", "--port", "tcp:127.0.0.1:1"], "tcp:127.0.0.1:1");
}

#[test]
fn bad_flags_name_the_flag() {
    assert_usage(&["run", "--port", "/dev/null", "--interval", "5"], "no unit");
    // One stimulus in flight (a fixed byte, an edge): the timeout fits one interval.
    let fixed = ["run", "--port", "/dev/null", "--interval", "1ms", "--byte", "0x55"];
    assert_usage(
        &[&fixed[..], &["--timeout", "2ms"]].concat(),
        "--timeout 2ms must be shorter than --interval 1ms",
    );
    assert_usage(
        &[&fixed[..], &["--dither", "900us"]].concat(),
        "--dither 900us and --guard 100us leave no time",
    );
    assert_usage(
        &["run", "--port", "/dev/null", "--mode", "gpio-echo", "--timeout", "1ms"],
        "--timeout 1ms must be shorter than --interval 1ms",
    );
    // Identity (uart-echo without --byte): up to nine intervals.
    assert_usage(
        &["run", "--port", "/dev/null", "--interval", "1ms", "--timeout", "9ms"],
        "--timeout 9ms must be shorter than 9 × --interval (9ms)",
    );
    assert_usage(
        &["run", "--port", "/dev/null", "--interval", "1ms", "--timeout", "8ms", "--dither", "1ms"],
        "--dither 1ms + --timeout 8ms + --guard 100us must fit in 9 × --interval (9ms)",
    );
    assert_usage(&["run", "--port", "/dev/null", "--mode", "gpio-echo", "--byte", "0x55"], "--byte 0x55");
    assert_usage(&["run", "--port", "/dev/null", "--mode", "periodic", "--byte", "7"], "--byte 0x07");
    assert_usage(&["run", "--port", "/dev/null", "--byte", "256"], "--byte");
    assert_usage(&["demo", "--interval", "1ms", "--timeout", "9ms"], "--timeout 9ms");
    assert_usage(&["run", "--port", "/dev/null", "--count", "0"], "--count");
    assert_usage(&["run", "--port", "/dev/null", "--count", "5", "--duration", "1s"], "--duration");
    assert_usage(&["run", "--port", "/dev/null", "--output", "/nonexistent/dir/r.json"], "--output");
    assert_usage(&["report", "/nonexistent/file.json"], "/nonexistent/file.json");
}

#[test]
fn help_explains_the_stimulus_and_its_timeout() {
    let o = run(&["run", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in ["identity off, one stimulus in flight", "[default: identity bytes", "8 intervals"] {
        assert!(out.contains(needle), "run --help lacks '{needle}': {out}");
    }
    assert!(!out.contains("[default: 0x55]"), "--byte has no default: {out}");
}

#[test]
fn help_lists_the_exit_codes() {
    let o = run(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Exit codes") && out.contains("3  a limit was violated"), "{out}");
}

/// `-q`'s help speaks of `-o -` only on the commands that have `-o`: a
/// command without it (list, flash, import's -o is a document) does not
/// tell the user about a flag it refuses.
#[test]
fn quiet_help_names_only_flags_the_command_has() {
    for cmd in ["list", "flash", "compare", "import", "calibrate"] {
        let o = run(&[cmd, "--help"]);
        let help = String::from_utf8_lossy(&o.stdout);
        let quiet = help.lines().find(|l| l.contains("--quiet")).unwrap_or_default().to_string();
        assert!(!quiet.contains("-o -"), "{cmd}: {quiet}");
    }
    let o = run(&["run", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.lines().any(|l| l.contains("--output") || l.contains("`-`: stdout")), "{help}");
    assert!(help.contains("`-`: stdout, kept with -q"), "{help}");
}
