//! The fault suite, link half: faults between a probe and the host, with the
//! real `latprobe run` against the real probe engine (the virtual probe,
//! on a thread of this test, with the real responder on its pty) and the
//! real firmware in QEMU. The fault-injecting pipe (`latprobe_tests::fault_pipe`)
//! damages the probe's batches and keeps the truth, so the host's counts
//! are checked exactly against it and against the probe's own `Stopped`.
//! The files' faults are in `host/tests/faults_files.rs`, a run's other
//! faults (a misbehaving probe or responder, signals, bad flags) in
//! `host/tests/faults_run.rs`.
//!
//! ```text
//!  latprobe run ──unix:pipe.sock──▶ FaultPipe ──▶ virtual probe ──pty──▶ latprobe-responder
//!                                            └──▶ QEMU host.sock (firmware) ──▶ responder
//! ```

#[path = "qemu/harness.rs"]
#[allow(dead_code)]
mod harness;

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use harness::{artifacts, Bench};
use latprobe::source::{ByteSource, Socket};
use latprobe::virtual_probe::VirtualProbe;
use latprobe_tests::fault_pipe::{FaultPipe, Faults, Truth};
use serde_json::Value;

/// The virtual probe on a thread of this test, the responder on its pty.
struct Virtual {
    probe: Option<VirtualProbe>,
    host_end: Option<Socket<UnixStream>>,
    responder: Child,
}

impl Virtual {
    fn start(dir: &Path) -> Virtual {
        let (probe, host_end) = VirtualProbe::start(None).expect("virtual probe");
        let err = dir.join("responder.err");
        let responder = Command::new(&artifacts().responder)
            .args(["uart", "--device"])
            .arg(probe.slave_path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err).expect("responder.err"))
            .spawn()
            .expect("start the responder");
        let until = Instant::now() + Duration::from_secs(20);
        while !std::fs::read_to_string(&err).unwrap_or_default().contains("ready") {
            assert!(Instant::now() < until, "the responder never got ready");
            std::thread::sleep(Duration::from_millis(20));
        }
        Virtual { probe: Some(probe), host_end: Some(host_end), responder }
    }

    /// Start it in `dir` behind a fault pipe (`dir/pipe.sock`) with `faults`.
    fn behind_a_pipe(dir: &Path, faults: Faults) -> (Virtual, FaultPipe) {
        let mut v = Virtual::start(dir);
        let pipe = FaultPipe::start(dir.join("pipe.sock"), v.link(), faults);
        (v, pipe)
    }

    /// The probe's link, for the pipe.
    fn link(&mut self) -> Box<dyn ByteSource> {
        Box::new(self.host_end.take().expect("link taken once"))
    }
}

impl Drop for Virtual {
    fn drop(&mut self) {
        let _ = self.responder.kill();
        let _ = self.responder.wait();
        if let Some(p) = self.probe.take() {
            let _ = p.stop();
        }
    }
}

/// A finished `latprobe` run.
struct Ran {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn show(&self) -> String {
        format!("{}\n--- stdout\n{}--- stderr\n{}", self.status, self.stdout, self.stderr)
    }
}

/// `latprobe ARGS` in `dir`, its output kept in files.
fn spawn(dir: &Path, args: &[&str]) -> Child {
    Command::new(&artifacts().latprobe)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.join("latprobe.out")).expect("out"))
        .stderr(std::fs::File::create(dir.join("latprobe.err")).expect("err"))
        .spawn()
        .expect("start latprobe")
}

/// Wait for `child` at most `limit`: a run still going then is a hang.
fn finish(dir: &Path, mut child: Child, limit: Duration) -> Ran {
    let until = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "latprobe still running after {limit:?}: a hang\n{}",
                std::fs::read_to_string(dir.join("latprobe.err")).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        status,
        stdout: std::fs::read_to_string(dir.join("latprobe.out")).unwrap_or_default(),
        stderr: std::fs::read_to_string(dir.join("latprobe.err")).unwrap_or_default(),
    }
}

fn run(dir: &Path, args: &[&str], limit: Duration) -> Ran {
    finish(dir, spawn(dir, args), limit)
}

fn report(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("no report {}: {e}", path.display()));
    serde_json::from_str(&text).expect("the report is JSON")
}

fn count(r: &Value, key: &str) -> u64 {
    r["counts"][key].as_u64().unwrap_or_else(|| panic!("counts.{key} in {r:#}"))
}

fn kill(pid: u32, sig: i32) {
    // SAFETY: kill(2) on the pid of our own child.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

/// The raw file's replay equals the live report, but for when and where.
fn assert_replays_alike(dir: &Path, live: &Value, raw: &str) {
    let ran = run(dir, &["report", raw, "-o", "again.json"], Duration::from_secs(60));
    assert!(ran.status.success(), "{}", ran.show());
    let (mut a, mut b) = (live.clone(), report(&dir.join("again.json")));
    for k in ["ended_at", "replayed_from"] {
        a.as_object_mut().unwrap().remove(k);
        b.as_object_mut().unwrap().remove(k);
    }
    assert_eq!(a, b, "the replay differs from the live report");
}

/// The scheduled instants that got no stimulus among the report's samples
/// (issue 42 §1: each is a sample; `schedule` is absent when there are none).
fn omitted(r: &Value) -> u64 {
    r["schedule"]["omitted"].as_u64().unwrap_or(0)
}

/// The scheduled instants a count run took: the probe's samples, the
/// omitted instants that arrived with them and those lost with damaged
/// batches (what `--count` counts).
fn instants(r: &Value, t: &Truth) -> u64 {
    count(r, "probe_taken") + omitted(r) + t.omitted_lost
}

/// The host's counts against the pipe's truth and the probe's `Stopped`:
/// every sample the probe took is received or lost, and lost is exactly
/// what the link damaged plus what the probe itself dropped. The report's
/// samples include the omitted instants (issue 42 §1), which the probe
/// never took: samples − omitted + lost = taken.
fn assert_counts_match_the_truth(r: &Value, t: &Truth) {
    let s = t.stopped.expect("the probe's Stopped passed the pipe");
    assert_eq!(count(r, "probe_taken"), s.taken, "{:#}", r["counts"]);
    assert_eq!(count(r, "samples") - omitted(r) + count(r, "lost"), s.taken, "{:#}", r["counts"]);
    assert_eq!(count(r, "lost"), t.lost_on_the_link() + s.dropped, "{:#}\n{t:?}", r["counts"]);
    assert_eq!(count(r, "duplicates"), t.duplicated, "{:#}\n{t:?}", r["counts"]);
    assert_eq!(count(r, "bad_frames"), t.flipped_batches + t.garbage_bursts, "{:#}\n{t:?}", r["counts"]);
    assert_eq!(count(r, "responses") + count(r, "timeouts"), count(r, "samples"));
}

fn every_fault(t: &Truth) {
    assert!(
        t.dropped > 0 && t.flipped > 0 && t.duplicated > 0 && t.reordered > 0 && t.garbage_bursts > 0,
        "the pipe did not try every fault: {t:?}"
    );
}

const FAULTS: Faults =
    Faults { seed: 10, drop: 0.04, flip: 0.04, duplicate: 0.04, reorder: 0.04, garbage: 0.04 };

#[test]
fn the_virtual_probe_through_a_faulty_link_loses_exactly_the_damaged_samples() {
    let _serial = harness::serial();
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let (_v, pipe) = Virtual::behind_a_pipe(d, FAULTS);
    let ran = run(
        d,
        &[
            "run",
            "--port",
            &pipe.port(),
            "--count",
            "8000",
            "--interval",
            "250us",
            "-o",
            "r.json",
            "--raw",
            "r.raw",
        ],
        Duration::from_secs(120),
    );
    assert!(ran.status.success(), "{}", ran.show());
    let r = report(&d.join("r.json"));
    let truth = pipe.truth();
    assert_eq!((r["complete"].as_bool(), instants(&r, &truth)), (Some(true), 8000), "{r:#}");
    every_fault(&truth);
    assert_counts_match_the_truth(&r, &truth);
    assert!(count(&r, "out_of_order") > 0, "held-back batches are out of order: {:#}", r["counts"]);
    assert_replays_alike(d, &r, "r.raw");
}

#[test]
fn the_qemu_firmware_through_a_faulty_link_loses_exactly_the_damaged_samples() {
    let _serial = harness::serial();
    let mut bench = Bench::start();
    bench.responder(&["uart"]);
    let d = bench.dir.path().to_path_buf();
    let port = format!("unix:{}", bench.host_sock().display());
    let until = Instant::now() + Duration::from_secs(20);
    let upstream = loop {
        match latprobe::source::open(&port, 0) {
            Ok(s) => break s,
            Err(e) => assert!(Instant::now() < until, "QEMU's host link: {e}"),
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let pipe = FaultPipe::start(d.join("pipe.sock"), upstream, Faults { seed: 11, ..FAULTS });
    let ran = run(
        &d,
        &[
            "run",
            "--port",
            &pipe.port(),
            "--count",
            "3000",
            "--interval",
            "1ms",
            "-o",
            "r.json",
            "--raw",
            "r.raw",
        ],
        Duration::from_secs(180),
    );
    assert!(ran.status.success(), "{}{}", ran.show(), bench.diagnostics());
    let r = report(&d.join("r.json"));
    let truth = pipe.truth();
    assert_eq!((r["complete"].as_bool(), instants(&r, &truth)), (Some(true), 3000), "{r:#}");
    every_fault(&truth);
    assert_counts_match_the_truth(&r, &truth);
    assert_replays_alike(&d, &r, "r.raw");
    assert!(bench.qemu_alive(), "QEMU ended{}", bench.diagnostics());
}

/// Probe reset: the host sees the new Hello and stops with a report of
/// what arrived (exit 1). It does not resume: the reset took the samples
/// the probe had not sent and its counters, and restarted its clock and
/// sequence (see `restarted_error` in host/src/session.rs).
#[test]
fn a_virtual_probe_restarted_mid_run_stops_the_run_with_a_report() {
    let _serial = harness::serial();
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let (mut v, pipe) = Virtual::behind_a_pipe(d, Faults::default());
    let child = spawn(
        d,
        &[
            "run",
            "--port",
            &pipe.port(),
            "--count",
            "1000000",
            "--interval",
            "500us",
            "-o",
            "r.json",
            "--raw",
            "r.raw",
        ],
    );
    std::thread::sleep(Duration::from_millis(1500));
    // A new engine (with its boot Hello) on the same link; the old one ends.
    let (fresh, fresh_link) = VirtualProbe::start(None).expect("a fresh virtual probe");
    pipe.replace_upstream(Box::new(fresh_link));
    if let Some(old) = v.probe.take() {
        let _ = old.stop();
    }
    let ran = finish(d, child, Duration::from_secs(30));
    assert_eq!(ran.status.code(), Some(1), "{}", ran.show());
    assert!(ran.stderr.contains("restarted during the measurement"), "{}", ran.show());
    let r = report(&d.join("r.json"));
    assert_eq!((r["ended_by"].as_str(), r["complete"].as_bool()), (Some("failed"), Some(false)), "{r:#}");
    assert!(count(&r, "samples") > 100, "what arrived is reported: {:#}", r["counts"]);
    assert_eq!(count(&r, "lost"), 0, "{:#}", r["counts"]);
    assert_replays_alike(d, &r, "r.raw");
    drop(fresh);
}

/// QEMU with the responder on its target line, and a `latprobe run` on its
/// host link (`--count 1000000`, `r.json`, `r.raw`) 3 s under way: the
/// bench, its folder, the port and the run.
fn qemu_run_under_way() -> (Bench, PathBuf, String, Child) {
    let mut bench = Bench::start();
    bench.responder(&["uart"]);
    let d = bench.dir.path().to_path_buf();
    let port = format!("unix:{}", bench.host_sock().display());
    let until = Instant::now() + Duration::from_secs(20);
    while !bench.host_sock().exists() {
        assert!(Instant::now() < until, "no host link socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    let child = spawn(&d, &["run", "--port", &port, "--count", "1000000", "-o", "r.json", "--raw", "r.raw"]);
    std::thread::sleep(Duration::from_secs(3));
    (bench, d, port, child)
}

#[test]
fn qemu_system_reset_mid_run_stops_the_run_with_a_report() {
    let _serial = harness::serial();
    let (mut bench, d, _, child) = qemu_run_under_way();
    let answer = bench.qmp("system_reset");
    assert!(answer.contains("return"), "QMP system_reset: {answer}");
    let ran = finish(&d, child, Duration::from_secs(30));
    assert_eq!(ran.status.code(), Some(1), "{}{}", ran.show(), bench.diagnostics());
    assert!(ran.stderr.contains("restarted during the measurement"), "{}", ran.show());
    let r = report(&d.join("r.json"));
    assert_eq!(r["ended_by"], "failed", "{r:#}");
    assert!(count(&r, "samples") > 0, "{:#}", r["counts"]);
    assert_replays_alike(&d, &r, "r.raw");
    assert!(bench.qemu_alive(), "QEMU ended on the reset{}", bench.diagnostics());
}

/// A laptop suspend: latprobe stopped (SIGSTOP) for 10 s mid-run. The
/// probe's bytes wait in the link meanwhile, and nothing the probe had is
/// lost.
#[test]
fn latprobe_suspended_for_10_s_loses_no_sample() {
    let _serial = harness::serial();
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let (_v, pipe) = Virtual::behind_a_pipe(d, Faults::default());
    let child =
        spawn(d, &["run", "--port", &pipe.port(), "--duration", "14s", "--interval", "1ms", "-o", "r.json"]);
    std::thread::sleep(Duration::from_secs(2));
    kill(child.id(), libc::SIGSTOP);
    std::thread::sleep(Duration::from_secs(10));
    kill(child.id(), libc::SIGCONT);
    let ran = finish(d, child, Duration::from_secs(60));
    assert!(ran.status.success(), "{}", ran.show());
    let r = report(&d.join("r.json"));
    assert_eq!(r["complete"], true, "{r:#}");
    assert_eq!(count(&r, "lost"), 0, "{:#}", r["counts"]);
    assert_eq!(count(&r, "samples") - omitted(&r), count(&r, "probe_taken"), "{:#}", r["counts"]);
    assert_counts_match_the_truth(&r, &pipe.truth());
}

/// SIGINT, SIGTERM and SIGHUP mid-run: Stop, the last batches, every file,
/// a raw file that replays alike; exit 0 with `complete: false`.
#[test]
fn each_stop_signal_mid_run_writes_a_partial_report_that_replays_alike() {
    let _serial = harness::serial();
    for (name, sig) in [("SIGINT", libc::SIGINT), ("SIGTERM", libc::SIGTERM), ("SIGHUP", libc::SIGHUP)] {
        let dir = tempfile::tempdir().expect("temp dir");
        let d = dir.path();
        let (_v, pipe) = Virtual::behind_a_pipe(d, Faults::default());
        let child = spawn(
            d,
            &[
                "run",
                "--port",
                &pipe.port(),
                "--duration",
                "60s",
                "-o",
                "r.json",
                "--histfile",
                "r.hist",
                "--raw",
                "r.raw",
            ],
        );
        std::thread::sleep(Duration::from_millis(1500));
        kill(child.id(), sig);
        let ran = finish(d, child, Duration::from_secs(30));
        assert_eq!(ran.status.code(), Some(0), "{name}: {}", ran.show());
        let r = report(&d.join("r.json"));
        assert_eq!(
            (r["complete"].as_bool(), r["ended_by"].as_str()),
            (Some(false), Some("interrupted")),
            "{name}"
        );
        assert_counts_match_the_truth(&r, &pipe.truth());
        assert!(d.join("r.hist").is_file(), "{name}");
        assert_replays_alike(d, &r, "r.raw");
    }
}

/// QEMU killed mid-run: a clear error naming the port, exit 1, and the
/// files of what arrived.
#[test]
fn a_killed_qemu_is_a_clear_error_and_the_files_are_written() {
    let _serial = harness::serial();
    let (mut bench, d, port, child) = qemu_run_under_way();
    bench.kill_qemu();
    let ran = finish(&d, child, Duration::from_secs(30));
    assert_eq!(ran.status.code(), Some(1), "{}", ran.show());
    assert!(ran.stderr.contains(&port) && ran.stderr.contains("closed"), "{}", ran.show());
    let r = report(&d.join("r.json"));
    assert_eq!(r["ended_by"], "failed", "{r:#}");
    assert!(count(&r, "samples") > 0);
    assert_replays_alike(&d, &r, "r.raw");
}
