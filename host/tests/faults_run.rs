//! The fault suite of a run, through the real `latprobe` binary against
//! the scripted fake probe and the virtual probe (`demo`): a probe that
//! sends garbage, resets, confirms another configuration, answers beyond
//! its timeout, miscounts, stops unasked, names itself with escape
//! sequences or never says Hello; a demo responder that dies or exits at
//! once; signals (SIGHUP, Ctrl-C with no Stop confirmed, a suspended
//! demo); a schedule the probe cannot keep; bad flags and calibrations.
//! The files' faults are in `faults_files.rs`; the faults between a probe
//! and the host (a corrupted link, a probe reset, a killed QEMU) in
//! `tests/tests/faults_link.rs`.

mod common;

use std::io::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use latprobe_protocol::{Capabilities, Config, Mode, Outcome, ProbeInfo, ProbeMsg};

// A port that streams only garbage (a baud mismatch) fails within the
// handshake's bound, naming the likely causes.
#[test]
fn a_probe_sending_only_garbage_fails_in_bounded_time_naming_the_baud() {
    let dir = tmp();
    let sock = dir.path().join("noise.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    std::thread::spawn(move || {
        let Ok((mut s, _)) = listener.accept() else { return };
        let mut x = 0x1234_5678u32;
        let mut buf = [0u8; 256];
        loop {
            for b in &mut buf {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *b = x as u8;
            }
            if s.write_all(&buf).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    let out = dir.path().join("r.json");
    let started = Instant::now();
    let o = run_within(
        &[
            "run",
            "--port",
            &format!("unix:{}", sock.display()),
            "--duration",
            "2s",
            "--silence-timeout",
            "1s",
            "-o",
            p(&out),
        ],
        Duration::from_secs(20),
    );
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(started.elapsed() < Duration::from_secs(6), "{:?}", started.elapsed());
    let err = stderr(&o);
    assert!(err.contains("not one latprobe frame") && err.contains("--baud"), "{err}");
    assert!(err.contains("latprobe firmware"), "{err}");
    // The attempt is recorded.
    assert_eq!(json(&out)["ended_by"], "failed");
}

// SIGHUP (a closed terminal, a dropped ssh session) ends the run like
// SIGTERM: Stop sent, every file written, the raw file replays alike.
#[test]
fn sighup_writes_every_file_like_sigterm() {
    let dir = tmp();
    let probe =
        FakeProbe::start(dir.path(), FakeOpts { pace: Duration::from_millis(5), ..FakeOpts::default() });
    let (out, hist, raw) = (dir.path().join("r.json"), dir.path().join("r.hist"), dir.path().join("r.raw"));
    let mut child = latprobe()
        .args(["run", "--port", &probe.port(), "--duration", "30s"])
        .args(["-o", p(&out), "--histfile", p(&hist), "--raw", p(&raw)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    signal(child.id(), libc::SIGHUP);
    let o = wait_with_timeout(&mut child, Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    assert_eq!((r["complete"].as_bool(), r["ended_by"].as_str()), (Some(false), Some("interrupted")), "{r}");
    assert!(r["counts"]["samples"].as_u64().unwrap() > 0);
    assert!(r["counts"]["probe_taken"].is_u64(), "the probe confirmed Stop: {r}");
    assert_counts_add_up(&r);
    assert!(hist.is_file());
    let again = dir.path().join("again.json");
    let o = run(&["report", p(&raw), "-o", p(&again)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let mut b = json(&again);
    let mut a = r;
    for k in ["ended_at", "replayed_from"] {
        a.as_object_mut().unwrap().remove(k);
        b.as_object_mut().unwrap().remove(k);
    }
    assert_eq!(a, b, "the raw file holds the whole run");
}

// --silence-timeout 0 would fail at once: a usage error.
#[test]
fn a_zero_silence_timeout_is_a_usage_error() {
    let o = run_within(&["run", "--port", "unix:/x", "--silence-timeout", "0"], Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("--silence-timeout") && stderr(&o).contains("zero"), "{}", show(&o));
}

// One Ctrl-C with a probe that never confirms Stop: latprobe says it
// waits, then reports `interrupted` (exit 0) with a note, not `failed`.
#[test]
fn one_interrupt_with_a_probe_that_never_confirms_stop_is_still_interrupted() {
    let dir = tmp();
    let probe = FakeProbe::start(
        dir.path(),
        FakeOpts { script: Script::IgnoreStop, pace: Duration::from_millis(5), ..FakeOpts::default() },
    );
    let out = dir.path().join("r.json");
    let mut child = latprobe()
        .args(["run", "--port", &probe.port(), "--silence-timeout", "1s", "-o", p(&out)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    signal(child.id(), libc::SIGINT);
    let o = wait_with_timeout(&mut child, Duration::from_secs(15));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(stderr(&o).contains("stopping: waiting up to 2.008s"), "{}", show(&o));
    let r = json(&out);
    assert_eq!((r["ended_by"].as_str(), r["error"].as_str()), (Some("interrupted"), None), "{r}");
    assert!(notes(&r).contains("did not confirm Stop within 2.008s"), "{}", notes(&r));
    drop(child);
    drop(probe);
}

fn child_pids(pid: u32) -> Vec<u32> {
    let path = format!("/proc/{pid}/task/{pid}/children");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect()
}

// The demo notices its responder dying: the run stops, fails (exit
// 1) and says why; the report holds what arrived.
#[test]
fn a_demo_whose_responder_dies_fails_and_says_so() {
    ensure_responder();
    let dir = tmp();
    let out = dir.path().join("r.json");
    let mut child = latprobe()
        .args(["demo", "--duration", "20s", "-o", p(&out)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    let responder = loop {
        if let Some(&r) = child_pids(child.id()).first() {
            break r;
        }
        assert!(Instant::now() < until, "no responder started");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(1500));
    signal(responder, libc::SIGKILL);
    let o = wait_with_timeout(&mut child, Duration::from_secs(15));
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(stderr(&o).contains("ended during the run, killed by signal 9"), "{}", show(&o));
    let r = json(&out);
    assert_eq!((r["ended_by"].as_str(), r["complete"].as_bool()), (Some("failed"), Some(false)), "{r}");
    assert!(r["error"].as_str().unwrap().contains("responder"), "{r}");
    assert!(r["counts"]["samples"].as_u64().unwrap() > 0);
}

// A schedule the probe cannot keep is reported as such.
#[test]
fn an_impossible_schedule_is_noted() {
    ensure_responder();
    let dir = tmp();
    let out = dir.path().join("r.json");
    let o = run_within(
        &[
            "demo",
            "--duration",
            "1s",
            "--interval",
            "10ns",
            "--timeout",
            "5ns",
            "--guard",
            "1ns",
            "-o",
            p(&out),
        ],
        Duration::from_secs(30),
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    assert!(notes(&r).contains("could not keep the requested schedule"), "{}", notes(&r));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("could not keep the requested schedule"),
        "{}",
        show(&o)
    );
}

#[test]
fn a_negative_duration_and_a_zero_baud_are_named() {
    let o = run(&["run", "--port", "unix:/x", "--interval=-1ms"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("negative"), "{}", show(&o));
    let o = run(&["run", "--port", "/dev/null", "--baud", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("--baud"), "{}", show(&o));
}

// A probe reset mid-run (the fake says its boot Hello again): the run
// stops with a report of what arrived and an error that says so (exit 1);
// see tests/tests/faults_link.rs for QEMU's system_reset and the virtual probe.
#[test]
fn a_probe_reset_mid_run_stops_the_run_and_says_so() {
    let dir = tmp();
    let probe =
        FakeProbe::start(dir.path(), FakeOpts { script: Script::RestartAfter(10), ..FakeOpts::default() });
    let (out, raw) = (dir.path().join("r.json"), dir.path().join("r.raw"));
    let o = run_within(
        &["run", "--port", &probe.port(), "--count", "5000", "-o", p(&out), "--raw", p(&raw)],
        Duration::from_secs(20),
    );
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let r = json(&out);
    assert_eq!(r["ended_by"], "failed");
    let err = r["error"].as_str().unwrap();
    assert!(err.contains("restarted during the measurement") && err.contains("after 320 samples"), "{err}");
    assert_eq!(r["counts"]["samples"], 320);
    // The replay says the same.
    let again = dir.path().join("again.json");
    assert_eq!(run(&["report", p(&raw), "-o", p(&again)]).status.code(), Some(0));
    assert_eq!(json(&again)["error"], r["error"]);
}

// ---- What the probe says, checked against the request; hostile texts,
// bogus calibrations, the demo's responder. ----

/// A run against a fake with `opts`, its report and its output.
fn fake_run(opts: FakeOpts, extra: &[&str]) -> (std::process::Output, Option<serde_json::Value>) {
    let dir = tmp();
    let probe = FakeProbe::start(dir.path(), opts);
    let out = dir.path().join("r.json");
    let port = probe.port();
    let mut args = vec!["run", "--port", &port, "--silence-timeout", "1s", "-o", p(&out)];
    args.extend_from_slice(extra);
    let o = run_within(&args, Duration::from_secs(30));
    drop(probe);
    let r = out.exists().then(|| json(&out));
    (o, r)
}

fn zero_interval(c: Config) -> Config {
    Config { interval_ticks: 0, timeout_ticks: 0, ..c }
}

fn periodic_echo(c: Config) -> Config {
    Config { mode: Mode::Periodic, ..c }
}

// A Configured that is not what was sent (interval and timeout 0, or
// another mode) is refused: exit 1, said, counted; nothing is measured.
#[test]
fn a_configured_other_than_the_one_sent_is_refused() {
    for echo in [zero_interval as fn(Config) -> Config, periodic_echo] {
        let (o, r) = fake_run(FakeOpts { echo, ..FakeOpts::default() }, &["--count", "300"]);
        assert_eq!(o.status.code(), Some(1), "{}", show(&o));
        assert!(stderr(&o).contains("confirmed a configuration"), "{}", show(&o));
        let r = r.expect("a report");
        assert_eq!((r["complete"].as_bool(), r["counts"]["refused"].as_u64()), (Some(false), Some(1)), "{r}");
    }
}

/// Every other sample answered at u32::MAX ticks: far beyond the timeout.
fn beyond_timeout(seq: u64) -> Outcome {
    if seq % 2 == 0 {
        Outcome::Response(u32::MAX)
    } else {
        Outcome::Response(2_000)
    }
}

// A response later than the probe's own timeout is a timeout, counted
// and noted, never a measured latency of 42.9 s.
#[test]
fn a_response_beyond_the_probes_timeout_is_a_timeout() {
    let (o, r) = fake_run(FakeOpts { outcomes: beyond_timeout, ..FakeOpts::default() }, &["--count", "320"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = r.unwrap();
    assert_eq!(r["counts"]["refused"], 160, "{}", r["counts"]);
    assert_eq!(r["counts"]["timeouts"], 160, "{}", r["counts"]);
    assert_eq!(r["latency_ns"]["max_measured"], 20_000, "{}", r["latency_ns"]);
    assert!(notes(&r).contains("160 responses later than its own timeout"), "{}", notes(&r));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("4294967"), "{}", show(&o));
    assert_counts_add_up(&r);
}

// A Stopped whose total is not what arrived is noted and counted.
#[test]
fn a_stopped_total_that_disagrees_with_the_stream_is_noted() {
    // Fewer than arrived: no loss explains it.
    let (o, r) = fake_run(FakeOpts { taken: |t| t - 5, ..FakeOpts::default() }, &["--count", "320"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = r.unwrap();
    assert!(r["counts"]["refused"].as_u64() >= Some(1), "{}", r["counts"]);
    assert!(notes(&r).contains("says it took 315 samples, but 320 arrived"), "{}", notes(&r));
    // More than the count it reached: the extra would be counted lost.
    let (o, r) = fake_run(FakeOpts { taken: |t| t + 5, ..FakeOpts::default() }, &["--count", "320"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = r.unwrap();
    assert_eq!(r["counts"]["refused"], 1, "{}", r["counts"]);
    assert!(notes(&r).contains("reached its count of 320 with 325"), "{}", notes(&r));
}

// A Stopped(HostStop) the host never sent fails the run (exit 1),
// keeping what arrived.
#[test]
fn a_stop_the_host_never_sent_fails_the_run() {
    let (o, r) = fake_run(FakeOpts { script: Script::StopUnasked(3), ..FakeOpts::default() }, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(stderr(&o).contains("Stop latprobe never sent"), "{}", show(&o));
    let r = r.unwrap();
    assert_eq!((r["ended_by"].as_str(), r["counts"]["refused"].as_u64()), (Some("failed"), Some(1)), "{r}");
    assert!(r["counts"]["samples"].as_u64().unwrap() >= 96, "{r}");
}

fn zero_hz() -> ProbeInfo<'static> {
    ProbeInfo { timer_hz: 0, ..hello_info() }
}

// A Hello with a 0 Hz timer is a probe fault, not a tick rule.
#[test]
fn a_hello_with_a_zero_hz_timer_is_a_probe_fault() {
    let (o, _) = fake_run(FakeOpts { hello: zero_hz, ..FakeOpts::default() }, &["--count", "10"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let e = stderr(&o);
    assert!(e.contains("timer of 0 Hz") && e.contains("latprobe flash"), "{}", show(&o));
    assert!(!e.contains("one tick"), "{}", show(&o));
}

// A probe that streams frames but never answers Hello is told so, not
// of a silence of nanoseconds.
#[test]
fn frames_without_a_hello_are_named() {
    let opts = FakeOpts { script: Script::NoHello, pace: Duration::from_millis(20), ..FakeOpts::default() };
    let (o, _) = fake_run(opts, &["--count", "10"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(stderr(&o).contains("never answered Hello"), "{}", show(&o));
}

fn hostile() -> ProbeInfo<'static> {
    ProbeInfo { board: "\x1b[2Jboard\x1b]0;pwned\x07", firmware_version: "1.0\r\x1b[K", ..hello_info() }
}

fn hostile_log() -> Vec<u8> {
    let text = "all fine\r\x1b[Kcomplete: ended by count-reached";
    frame(&ProbeMsg::Log(latprobe_protocol::LogLine {
        level: latprobe_protocol::LogLevel::Warn,
        tick: 0,
        text,
    }))
}

// Control characters from the probe are escaped in the summary; the
// JSON report keeps them as they are.
#[test]
fn escape_sequences_from_the_probe_are_escaped_in_text() {
    let opts = FakeOpts { hello: hostile, after_start: hostile_log, ..FakeOpts::default() };
    let (o, r) = fake_run(opts, &["--count", "320"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains('\x1b') && !out.contains('\r') && !out.contains('\x07'), "{out:?}");
    assert!(out.contains("\\x1b[2Jboard\\x1b]0;pwned\\x07 1.0\\x0d\\x1b[K"), "{out}");
    assert!(out.contains("all fine\\x0d\\x1b[Kcomplete"), "{out}");
    let r = r.unwrap();
    assert_eq!(r["probe"]["board"], "\x1b[2Jboard\x1b]0;pwned\x07", "{}", r["probe"]);
}

// A calibration whose figures cannot be one loopback is refused before
// the run, naming the field.
#[test]
fn a_bogus_calibration_is_refused() {
    let dir = tmp();
    let good = serde_json::json!({
        "kind": "latprobe-calibration", "board": "fake", "firmware_version": "0.0.0-fake",
        "line": "uart", "baud": 0, "timer_hz": 100_000_000, "samples": 10_000,
        "offset_ns": 380, "min_ns": 370, "max_ns": 390, "p99_9_ns": 390,
        "created_at": "2025-01-01T00:00:00Z", "tool_version": "test"
    });
    for (field, value, says) in [
        ("offset_ns", serde_json::json!(u64::MAX), "offset_ns"),
        ("max_ns", serde_json::json!(0), "offset_ns 380 must lie between"),
        ("min_ns", serde_json::json!(500), "must lie between its min_ns 500"),
        ("max_ns", serde_json::json!(5_000_000), "above 1ms"),
    ] {
        let mut c = good.clone();
        c[field] = value;
        let f = dir.path().join("cal.json");
        std::fs::write(&f, c.to_string()).unwrap();
        let o = run_within(
            &["run", "--port", "unix:/nonexistent", "--count", "10", "--calibration", p(&f), "--max", "1us"],
            Duration::from_secs(10),
        );
        assert_eq!(o.status.code(), Some(2), "{field}: {}", show(&o));
        let e = stderr(&o);
        assert!(e.contains(says) && e.contains("latprobe calibrate"), "{field}: {e}");
    }
}

fn periodic_probe() -> ProbeInfo<'static> {
    ProbeInfo { capabilities: Capabilities::UART_ECHO | Capabilities::PERIODIC, ..hello_info() }
}

// A periodic --interval beyond the probe's u32 of ticks is refused
// naming the limit, not clamped.
#[test]
fn a_periodic_interval_beyond_the_tick_limit_is_refused() {
    let opts = FakeOpts { hello: periodic_probe, ..FakeOpts::default() };
    let (o, _) = fake_run(opts, &["--mode", "periodic", "--interval", "50s", "--duration", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let e = stderr(&o);
    assert!(e.contains("--interval 50s is too long") && e.contains("at most 42."), "{}", show(&o));
}

/// A responder script in `dir` with `body` (after `#!/bin/sh`).
fn script(dir: &Path, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt as _;
    let f = dir.join("responder.sh");
    std::fs::write(&f, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    f.to_str().unwrap().to_string()
}

// A responder that dies right after `ready:` fails the demo (exit 1),
// however early it died.
#[test]
fn a_responder_dying_right_after_ready_fails_the_demo() {
    let dir = tmp();
    let r = script(dir.path(), "echo 'ready: fake responder' >&2\nexit 0");
    let out = dir.path().join("r.json");
    let o =
        run_within(&["demo", "--duration", "1s", "--responder", &r, "-o", p(&out)], Duration::from_secs(20));
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(stderr(&o).contains("ended during the run"), "{}", show(&o));
    let r = json(&out);
    assert_eq!(r["complete"], false, "{r}");
}

// A responder that exits at once: its last words, exit 2.
#[test]
fn a_responder_that_exits_at_once_is_quoted() {
    let dir = tmp();
    let r = script(dir.path(), "echo 'responder: cannot open the device: boom' >&2\nexit 3");
    let o = run_within(&["demo", "--duration", "1s", "--responder", &r], Duration::from_secs(20));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let e = stderr(&o);
    assert!(e.contains("exit status: 3") && e.contains("boom") && e.contains("--responder"), "{e}");
}

// A demo responder that writes no periodic log: a note, exit 0, and no
// word of a --target-log the user never gave.
#[test]
fn a_demo_responder_without_a_log_is_a_note() {
    let dir = tmp();
    let r = script(
        dir.path(),
        "while [ $# -gt 0 ]; do [ \"$1\" = --device ] && dev=$2; shift; done\n\
         echo 'ready: fake periodic' >&2\n\
         while :; do printf U > \"$dev\"; sleep 0.01; done",
    );
    let out = dir.path().join("r.json");
    let o = run_within(
        &[
            "demo",
            "--mode",
            "periodic",
            "--interval",
            "10ms",
            "--duration",
            "1s",
            "--responder",
            &r,
            "-o",
            p(&out),
        ],
        Duration::from_secs(20),
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(!stderr(&o).contains("--target-log"), "{}", show(&o));
    let n = notes(&json(&out));
    assert!(n.contains("chosen by the demo") && !n.contains("--target-log"), "{n}");
}

// A demo suspended for more than a second (SIGSTOP, SIGCONT) goes on.
#[test]
fn a_suspended_demo_goes_on() {
    ensure_responder();
    let dir = tmp();
    let out = dir.path().join("r.json");
    let mut child = latprobe()
        .args(["demo", "--duration", "3s", "-o", p(&out)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    signal(child.id(), libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(1500));
    signal(child.id(), libc::SIGCONT);
    let o = wait_with_timeout(&mut child, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    assert_eq!(r["complete"], true, "{r}");
    // The suspension is a slip of at least a second, and said.
    assert!(r["counts"]["slip_max_ns"].as_u64().unwrap() >= 1_000_000_000, "{}", r["counts"]);
    assert!(notes(&r).contains("latprobe did not run for"), "{}", notes(&r));
}

// A silence timeout shorter than two polls is refused, not reported
// as a silence of nanoseconds.
#[test]
fn a_silence_timeout_below_two_polls_is_a_usage_error() {
    let o = run_within(&["demo", "--silence-timeout", "1ns", "--duration", "1s"], Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        stderr(&o).contains("--silence-timeout") && stderr(&o).contains("at least 100ms"),
        "{}",
        show(&o)
    );
}
