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
    assert_usage(&["run", "--port", "/dev/null", "--interval", "1ms", "--timeout", "2ms"], "--timeout");
    assert_usage(&["run", "--port", "/dev/null", "--interval", "1ms", "--dither", "900us"], "--dither");
    assert_usage(&["run", "--port", "/dev/null", "--count", "0"], "--count");
    assert_usage(&["run", "--port", "/dev/null", "--count", "5", "--duration", "1s"], "--duration");
    assert_usage(&["run", "--port", "/dev/null", "--output", "/nonexistent/dir/r.json"], "--output");
    assert_usage(&["report", "/nonexistent/file.json"], "/nonexistent/file.json");
}

#[test]
fn help_lists_the_exit_codes() {
    let o = run(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Exit codes") && out.contains("reserved"), "{out}");
}
