//! The live progress line: on a terminal it shows the elapsed time against
//! `--duration` (or the samples against `--count`), samples, timeouts,
//! lost, the running p99 and max, redrawn at most 4 times a second; when
//! stderr is not a terminal it is not drawn at all.

mod common;

use std::io::Read as _;
use std::os::fd::FromRawFd as _;
use std::time::{Duration, Instant};

use common::*;

/// Run `latprobe args` with stderr on a pseudo-terminal; what it drew there.
fn on_a_terminal(args: &[&str]) -> (Option<i32>, String, Duration) {
    let (mut m, mut s) = (-1, -1);
    // SAFETY: openpty writes two fresh fds; no name buffer is asked for.
    let rc =
        unsafe { libc::openpty(&mut m, &mut s, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(rc, 0, "openpty");
    // SAFETY: the fds are fresh from openpty and owned here from now on.
    let (mut master, slave) = unsafe { (std::fs::File::from_raw_fd(m), std::fs::File::from_raw_fd(s)) };
    let started = Instant::now();
    let mut child = latprobe()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(slave)
        .spawn()
        .expect("spawn latprobe");
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        // EIO once the child (the slave's last holder) has gone.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&all).into_owned()
    });
    let status = child.wait().expect("wait");
    let took = started.elapsed();
    (status.code(), reader.join().expect("reader"), took)
}

#[test]
fn a_terminal_shows_progress_at_most_4_times_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let probe =
        FakeProbe::start(dir.path(), FakeOpts { pace: Duration::from_millis(20), ..FakeOpts::default() });
    let (code, drawn, took) = on_a_terminal(&["run", "--port", &probe.port(), "--duration", "3s"]);
    assert_eq!(code, Some(0), "{drawn}");
    let lines: Vec<&str> =
        drawn.split(['\r', '\n']).filter(|l| l.contains("samples ") && l.contains("lost ")).collect();
    assert!(!lines.is_empty(), "no progress drawn: {drawn:?}");
    let last = lines.last().unwrap();
    for part in ["/3s", "samples ", "timeouts ", "lost ", "p99 ", "max "] {
        assert!(last.contains(part), "{part:?} missing from {last:?}");
    }
    // 1 in 97 samples times out: the running max is censored.
    assert!(lines.iter().any(|l| l.contains("max >8ms")), "{lines:?}");
    // At most 4 draws a second (plus the first and the clear).
    let limit = (took.as_secs_f64() * 4.0).ceil() as usize + 2;
    assert!(lines.len() <= limit, "{} draws in {took:?}: {lines:?}", lines.len());
}

#[test]
fn a_count_run_shows_samples_against_the_count() {
    let dir = tempfile::tempdir().unwrap();
    let probe =
        FakeProbe::start(dir.path(), FakeOpts { pace: Duration::from_millis(20), ..FakeOpts::default() });
    let (code, drawn, _) = on_a_terminal(&["run", "--port", &probe.port(), "--count", "2000"]);
    assert_eq!(code, Some(0), "{drawn}");
    assert!(drawn.contains("/2000"), "{drawn:?}");
}

#[test]
fn no_progress_when_stderr_is_not_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let probe =
        FakeProbe::start(dir.path(), FakeOpts { pace: Duration::from_millis(20), ..FakeOpts::default() });
    let o = probe.run(&["--duration", "2s"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains('\x1b') && !err.contains('\r'), "escape codes in a pipe: {err:?}");
    assert!(!err.contains("/2s") && !err.contains("p99 "), "progress in a pipe: {err:?}");
}
