//! `--trace` end to end on this machine's real tracefs: the built responder
//! echoes over a pty (the test plays the probe), a SCHED_FIFO hog on the
//! responder's CPU makes one answer really late, and the test writes the
//! trigger byte `T` to the FIFO while that answer is out (as the demo's
//! virtual probe does; a board's probe raises a GPIO edge instead). The
//! snapshot must hold the marker and the sched events, and tracefs must be
//! as it was afterwards.
//!
//! Needs root and tracefs (mounted here if it is not): elsewhere each test
//! prints that it skipped and why. The tests that touch tracefs take one
//! lock, so they never run at once.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_latprobe-responder");
const TRACEFS: &str = "/sys/kernel/tracing";
const EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_wakeup",
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "timer/hrtimer_expire_entry",
    "timer/hrtimer_expire_exit",
];

static TRACEFS_LOCK: Mutex<()> = Mutex::new(());

/// Why tracefs cannot be used here, or `None` when it can (mounting it).
fn tracefs_unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: tracefs needs root".into());
    }
    if !Path::new(TRACEFS).join("tracing_on").exists() {
        let out = Command::new("mount").args(["-t", "tracefs", "nodev", TRACEFS]).output();
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                return Some(format!("cannot mount tracefs: {}", String::from_utf8_lossy(&o.stderr).trim()))
            }
            Err(e) => return Some(format!("cannot run mount: {e}")),
        }
    }
    None
}

macro_rules! need_tracefs {
    () => {
        if let Some(why) = tracefs_unavailable() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

/// What the responder may change, as text, to compare before and after.
fn tracefs_state() -> Vec<(String, String)> {
    let mut files: Vec<String> = ["tracing_on", "current_tracer", "trace_clock", "buffer_size_kb"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    files.extend(EVENTS.iter().map(|e| format!("events/{e}/enable")));
    files
        .into_iter()
        .map(|f| {
            let v = std::fs::read_to_string(Path::new(TRACEFS).join(&f)).unwrap_or_default();
            (f, v.trim().to_string())
        })
        .collect()
}

/// Puts tracefs back as it was if a test fails half-way (the responder is
/// then killed, and a killed responder cannot restore it).
struct PutBack(Vec<(String, String)>);

impl Drop for PutBack {
    fn drop(&mut self) {
        for (f, v) in self.0.iter().rev() {
            // trace_clock reads `[local] global ...`: write the bracketed one.
            let v = match (v.find('['), v.find(']')) {
                (Some(a), Some(b)) if a < b => &v[a + 1..b],
                _ => v,
            };
            let _ = std::fs::write(Path::new(TRACEFS).join(f), v);
        }
    }
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

struct Responder {
    child: Child,
    lines: std::sync::Arc<Mutex<Vec<String>>>,
}

impl Responder {
    fn spawn(args: &[&str]) -> Responder {
        let mut child = Command::new(BIN)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the responder");
        let stderr = child.stderr.take().unwrap();
        let lines = std::sync::Arc::new(Mutex::new(Vec::new()));
        let (tx, ready) = mpsc::channel();
        let l2 = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains(": ready: ") {
                    let _ = tx.send(());
                }
                l2.lock().unwrap().push(line);
            }
        });
        let r = Responder { child, lines };
        if ready.recv_timeout(Duration::from_secs(10)).is_err() {
            panic!("the responder never said ready: {:?}", r.lines.lock().unwrap());
        }
        r
    }

    /// SIGTERM and wait: its stderr.
    fn stop(mut self) -> Vec<String> {
        // SAFETY: the child's pid, which we have not reaped.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "the responder did not end on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(100));
        self.lines.lock().unwrap().clone()
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        // SIGTERM first, so that a responder left by a failing test still
        // restores tracefs; SIGKILL only if it does not end.
        // SAFETY: the child's pid, not reaped yet.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(3);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn write_fd(fd: &OwnedFd, data: &[u8]) {
    // SAFETY: `data` is valid for reads of its length.
    let n = unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) };
    assert_eq!(n, data.len() as isize);
}

/// One byte back from the master within `timeout`.
fn read_byte(fd: &OwnedFd, timeout: Duration) -> Option<u8> {
    let mut pfd = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    if unsafe { libc::poll(&mut pfd, 1, timeout.as_millis() as i32) } <= 0 {
        return None;
    }
    let mut b = [0u8; 1];
    // SAFETY: `b` is valid for one byte.
    (unsafe { libc::read(fd.as_raw_fd(), b.as_mut_ptr().cast(), 1) } == 1).then_some(b[0])
}

/// A SCHED_FIFO 50 thread on `cpu` that spins for `ns`: the responder (at
/// normal priority, pinned there) cannot answer until it ends.
/// Pin the calling thread to `cpu` at SCHED_FIFO `priority`.
fn pin_fifo(cpu: usize, priority: i32) {
    // SAFETY: plain data; pid 0 is this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set), 0);
        let mut p: libc::sched_param = std::mem::zeroed();
        p.sched_priority = priority;
        let rc = libc::sched_setscheduler(0, libc::SCHED_FIFO, &p);
        assert_eq!(rc, 0, "SCHED_FIFO: {}", std::io::Error::last_os_error());
    }
}

/// Puts the calling thread back to SCHED_OTHER on every CPU (with
/// `--test-threads=1` the test runs on the harness's own thread).
struct Unpin;

impl Drop for Unpin {
    fn drop(&mut self) {
        // SAFETY: plain data; pid 0 is this thread.
        unsafe {
            let p: libc::sched_param = std::mem::zeroed();
            libc::sched_setscheduler(0, libc::SCHED_OTHER, &p);
            let mut all: libc::cpu_set_t = std::mem::zeroed();
            for cpu in 0..libc::CPU_SETSIZE as usize {
                libc::CPU_SET(cpu, &mut all);
            }
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &all);
        }
    }
}

fn hog(cpu: usize, ns: u64) -> std::thread::JoinHandle<()> {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::Builder::new()
        .name("latprobe-hog".into())
        .spawn(move || {
            pin_fifo(cpu, 50);
            // SAFETY: no preconditions.
            assert_eq!(unsafe { libc::sched_getcpu() }, cpu as i32);
            tx.send(()).unwrap();
            let start = Instant::now();
            while start.elapsed() < Duration::from_nanos(ns) {
                std::hint::spin_loop();
            }
        })
        .unwrap();
    // Spinning on `cpu` at SCHED_FIFO before the stimulus goes out.
    rx.recv().unwrap();
    h
}

#[test]
fn a_trigger_while_an_answer_is_late_saves_a_snapshot_with_the_marker_and_restores_tracefs() {
    let _lock = TRACEFS_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    need_tracefs!();
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipped: one CPU: the hog on the responder's CPU would hold the test's probe too");
        return;
    }
    let before = tracefs_state();
    let _put_back = PutBack(before.clone());
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("trigger");
    mkfifo(&fifo);
    let trace_dir = dir.path().join("trace");
    let meta = dir.path().join("meta.json");
    let (master, slave) = common::open_pty();
    // This thread plays the probe: on CPU 1, ahead of anything else there,
    // so its 5 ms to the trigger are 5 ms however busy the machine is.
    pin_fifo(1, 40);
    let _unpin = Unpin;
    let r = Responder::spawn(&[
        "uart",
        "--device",
        slave.to_str().unwrap(),
        "--cpu",
        "0",
        "--metadata",
        meta.to_str().unwrap(),
        "--trace",
        "--trigger-fifo",
        fifo.to_str().unwrap(),
        "--trace-dir",
        trace_dir.to_str().unwrap(),
    ]);
    // Armed: tracing on, the events on, the clock CLOCK_MONOTONIC.
    let read = |f: &str| std::fs::read_to_string(Path::new(TRACEFS).join(f)).unwrap().trim().to_string();
    assert_eq!(read("tracing_on"), "1");
    assert_eq!(read("events/sched/sched_switch/enable"), "1");
    assert!(read("trace_clock").contains("[mono]"), "{}", read("trace_clock"));
    for id in 1..=3u8 {
        write_fd(&master, &[id]);
        assert_eq!(read_byte(&master, Duration::from_secs(2)), Some(id));
    }
    // Their markers follow the answers: let the last one out.
    std::thread::sleep(Duration::from_millis(50));
    // The late one: the hog holds CPU 0 for 30 ms; the stimulus goes out
    // 1 ms into it, the trigger 5 ms after the stimulus, while the answer is
    // still out.
    let h = hog(0, 30_000_000);
    write_fd(&master, &[4]);
    let sent = Instant::now();
    std::thread::sleep(Duration::from_millis(5));
    let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    f.write_all(b"T").unwrap();
    let late = read_byte(&master, Duration::from_secs(2));
    let took = sent.elapsed();
    h.join().unwrap();
    assert_eq!(late, Some(4));
    assert!(
        took >= Duration::from_millis(5),
        "the answer was not late ({took:?}): the hog did not hold CPU 0"
    );
    // The snapshot is saved by the trigger thread; give it a moment.
    let deadline = Instant::now() + Duration::from_secs(5);
    let sidecar = loop {
        let found = std::fs::read_dir(&trace_dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "json"));
        if let Some(p) = found {
            break p;
        }
        assert!(Instant::now() < deadline, "no snapshot in {}", trace_dir.display());
        std::thread::sleep(Duration::from_millis(20));
    };
    let snap = sidecar.with_extension("txt");
    let lines = r.stop();
    let text = std::fs::read_to_string(&snap).unwrap();
    // LATPROBE_KEEP_SNAPSHOT=FILE keeps it (the host's fixture came so).
    if let Ok(keep) = std::env::var("LATPROBE_KEEP_SNAPSHOT") {
        std::fs::copy(&snap, &keep).unwrap();
        std::fs::copy(&sidecar, std::path::Path::new(&keep).with_extension("json")).unwrap();
    }
    assert_eq!(snap.file_name().unwrap(), "trace-seq-2.txt", "the trigger came after the late answer");
    assert!(text.contains("tracing_mark_write: latprobe seq=2 id=0x03"), "{text:.2000}");
    assert!(text.contains("sched_switch:"), "no sched_switch in the snapshot");
    assert!(text.contains("latprobe-hog"), "the hog is not in the snapshot");
    // The late answer's marker came after the stop: not in this snapshot.
    assert!(!text.contains("latprobe seq=3"), "the trace was not stopped at the trigger");
    let side: serde_json::Value = serde_json::from_slice(&std::fs::read(&sidecar).unwrap()).unwrap();
    assert_eq!(side["last_marker_seq"], 2);
    assert_eq!(side["source"], "fifo");
    let stop_ns = side["stop_latency_ns"].as_u64().unwrap();
    assert!(stop_ns < 10_000_000, "stop took {stop_ns} ns");
    eprintln!("trigger seen -> tracing_on 0: {stop_ns} ns");
    // The metadata was written again at the end, with the outcome.
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    assert_eq!(m["trace"]["enabled"], true, "{}", m["trace"]);
    assert_eq!(m["trace"]["triggers"], 1);
    assert_eq!(m["trace"]["snapshots"][0], "trace-seq-2.txt");
    // Four answers; the late one's marker is refused if it went out while
    // the snapshot was being saved (tracing off).
    assert_eq!(m["trace"]["answers"], 4);
    assert!(lines.iter().any(|l| l.contains("4 answers marked in the trace")), "{lines:?}");
    // And tracefs is as it was.
    assert_eq!(tracefs_state(), before);
}

#[test]
fn the_first_n_triggers_are_kept_and_later_ones_counted() {
    let _lock = TRACEFS_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    need_tracefs!();
    let before = tracefs_state();
    let _put_back = PutBack(before.clone());
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("trigger");
    mkfifo(&fifo);
    let trace_dir = dir.path().join("trace");
    let meta = dir.path().join("meta.json");
    let (master, slave) = common::open_pty();
    let r = Responder::spawn(&[
        "uart",
        "--device",
        slave.to_str().unwrap(),
        "--metadata",
        meta.to_str().unwrap(),
        "--trace",
        "--trace-events",
        "sched_switch,no_such_event",
        "--trace-keep",
        "2",
        "--trigger-fifo",
        fifo.to_str().unwrap(),
        "--trace-dir",
        trace_dir.to_str().unwrap(),
    ]);
    let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    for _ in 0..3 {
        write_fd(&master, &[7]);
        assert_eq!(read_byte(&master, Duration::from_secs(2)), Some(7));
        // The marker follows the answer: let it out before the trigger.
        std::thread::sleep(Duration::from_millis(50));
        f.write_all(b"T\n").unwrap();
        std::thread::sleep(Duration::from_millis(300));
    }
    let lines = r.stop();
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    let t = &m["trace"];
    assert_eq!(t["triggers"], 3, "{t}");
    assert_eq!(t["snapshots"], serde_json::json!(["trace-seq-0.txt", "trace-seq-1.txt"]), "{t}");
    assert_eq!(t["events"], serde_json::json!(["sched/sched_switch"]));
    assert_eq!(t["missing_events"], serde_json::json!(["no_such_event"]));
    assert!(!trace_dir.join("trace-seq-2.txt").exists());
    assert!(lines.iter().any(|l| l.contains("no_such_event")), "{lines:?}");
    assert_eq!(tracefs_state(), before);
}

#[test]
fn without_tracefs_one_warning_and_the_run_goes_on_untraced() {
    let dir = tempfile::tempdir().unwrap();
    let meta = dir.path().join("meta.json");
    let fifo = dir.path().join("trigger");
    mkfifo(&fifo);
    let (master, slave) = common::open_pty();
    let r = Responder::spawn(&[
        "uart",
        "--device",
        slave.to_str().unwrap(),
        "--metadata",
        meta.to_str().unwrap(),
        "--trace",
        "--tracefs",
        "/nonexistent/tracing",
        "--trigger-fifo",
        fifo.to_str().unwrap(),
    ]);
    write_fd(&master, &[9]);
    assert_eq!(read_byte(&master, Duration::from_secs(2)), Some(9));
    // The trigger is still drained (a writer never blocks), and counted.
    let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    f.write_all(b"T").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let lines = r.stop();
    let warnings: Vec<&String> = lines.iter().filter(|l| l.starts_with("warning: --trace")).collect();
    assert_eq!(warnings.len(), 1, "{lines:?}");
    assert!(warnings[0].contains("untraced"), "{warnings:?}");
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    assert_eq!(m["trace"]["enabled"], false);
    assert!(m["trace"]["reason"].as_str().unwrap().contains("/nonexistent/tracing"), "{}", m["trace"]);
    assert_eq!(m["trace"]["triggers"], 1);
}

/// issue 43 (5): `--trace-events ../../x/evil` was joined under `events/`
/// and the responder wrote `1` into `x/evil/enable`. A spec that is not an
/// event name is a usage error before tracefs is touched (here a fake one,
/// so the test needs no root).
#[test]
fn a_trace_event_that_is_a_path_is_refused_before_tracefs_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tracing");
    std::fs::create_dir_all(root.join("events/sched/sched_switch")).unwrap();
    for (f, v) in
        [("tracing_on", "1"), ("trace_clock", "[local] mono"), ("buffer_size_kb", "7"), ("trace", "")]
    {
        std::fs::write(root.join(f), v).unwrap();
    }
    std::fs::write(root.join("events/sched/sched_switch/enable"), "0").unwrap();
    let evil = dir.path().join("x/evil");
    std::fs::create_dir_all(&evil).unwrap();
    std::fs::write(evil.join("enable"), "0").unwrap();
    let (_m, slave) = common::open_pty();
    for spec in
        ["../../x/evil", "sched/../../../x/evil", "sched:../../../x/evil", "sched_switch,../../x/evil"]
    {
        let mut child = Command::new(BIN)
            .args(["uart", "--device", slave.to_str().unwrap(), "--trace", "--tracefs"])
            .arg(&root)
            .args(["--trace-events", spec])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A responder that took the spec runs until stopped: give it a moment.
        let deadline = Instant::now() + Duration::from_secs(3);
        while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Read while it may still run: a SIGTERM'd responder puts it back.
        let evil_enable = std::fs::read_to_string(evil.join("enable")).unwrap();
        // SAFETY: the child's pid, not reaped yet.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(evil_enable, "0", "{spec}: {err}");
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert!(err.contains("--trace-events") && err.contains("is not an event name"), "{spec}: {err}");
        // Not touched at all: tracing_on is still what it was.
        assert_eq!(std::fs::read_to_string(root.join("tracing_on")).unwrap(), "1", "{spec}");
    }
}

/// issue 43: an unprivileged responder said tracefs "is not mounted" when
/// it is, in a directory closed to it (0700, as the kernel mounts it). It
/// now says the directory is closed to it. Run as `nobody` on a fake
/// tracefs, so it needs root to switch user (skipped elsewhere).
#[test]
fn an_unprivileged_responder_is_told_tracefs_is_closed_to_it_not_missing() {
    use std::os::unix::fs::PermissionsExt as _;
    use std::os::unix::process::CommandExt as _;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: not root, cannot run the responder as another user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = dir.path().join("tracing");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("tracing_on"), "1").unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700)).unwrap();
    let meta = dir.path().join("meta");
    std::fs::create_dir(&meta).unwrap();
    std::fs::set_permissions(&meta, std::fs::Permissions::from_mode(0o777)).unwrap();
    let meta = meta.join("m.json");
    let (master, slave) = common::open_pty();
    let c = std::ffi::CString::new(slave.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; the pty is ours to hand over.
    unsafe { libc::chown(c.as_ptr(), 65534, 65534) };
    // A copy nobody may run: the build's own target dir can sit in a
    // folder only root enters (a CI clone in a 0700 mktemp folder).
    let bin = dir.path().join("latprobe-responder");
    std::fs::copy(BIN, &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut child = Command::new(&bin)
        .args(["uart", "--device", slave.to_str().unwrap(), "--metadata", meta.to_str().unwrap(), "--trace"])
        .arg("--tracefs")
        .arg(&root)
        .uid(65534)
        .gid(65534)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains(": ready: ") {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let ready = rx.recv_timeout(Duration::from_secs(10)).is_ok();
    write_fd(&master, &[7]);
    let answered = read_byte(&master, Duration::from_secs(5));
    // SAFETY: the child's pid, not reaped yet.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap();
    let err = reader.join().unwrap();
    assert!(ready, "{err}");
    assert_eq!(answered, Some(7), "{err}");
    assert!(!err.contains("not mounted"), "{err}");
    assert!(err.contains("cannot look into") && err.contains("root only"), "{err}");
}

#[test]
fn a_trigger_flag_without_trace_or_a_missing_fifo_is_a_usage_error() {
    let out =
        Command::new(BIN).args(["uart", "--device", "/x", "--trigger-fifo", "/tmp/none"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let dir = tempfile::tempdir().unwrap();
    let (_m, slave) = common::open_pty();
    let missing: PathBuf = dir.path().join("nofifo");
    let out = Command::new(BIN)
        .args(["uart", "--device", slave.to_str().unwrap(), "--trace", "--tracefs", "/nonexistent"])
        .arg("--trigger-fifo")
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--trigger-fifo") && err.contains("mkfifo"), "{err}");
}

#[test]
fn periodic_marks_every_cycle_and_a_trigger_saves_them() {
    let _lock = TRACEFS_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    need_tracefs!();
    let before = tracefs_state();
    let _put_back = PutBack(before.clone());
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("trigger");
    mkfifo(&fifo);
    let trace_dir = dir.path().join("trace");
    let (master, slave) = common::open_pty();
    let r = Responder::spawn(&[
        "periodic",
        "--device",
        slave.to_str().unwrap(),
        "--interval",
        "2ms",
        "--trace",
        "--trace-events",
        "sched_switch",
        "--trigger-fifo",
        fifo.to_str().unwrap(),
        "--trace-dir",
        trace_dir.to_str().unwrap(),
    ]);
    // Drain the marks (an undrained pty would block the responder).
    let mut marks = 0;
    let until = Instant::now() + Duration::from_millis(300);
    while Instant::now() < until {
        if read_byte(&master, Duration::from_millis(50)).is_some() {
            marks += 1;
        }
    }
    assert!(marks > 20, "{marks} marks");
    std::fs::OpenOptions::new().write(true).open(&fifo).unwrap().write_all(b"T").unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let snap = loop {
        let found = std::fs::read_dir(&trace_dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "json"));
        if let Some(p) = found {
            break p.with_extension("txt");
        }
        assert!(Instant::now() < deadline, "no snapshot");
        let _ = read_byte(&master, Duration::from_millis(20));
    };
    r.stop();
    let text = std::fs::read_to_string(&snap).unwrap();
    // Periodic has no identity byte: `latprobe seq=N` alone, from 0.
    assert!(text.contains("tracing_mark_write: latprobe seq=0\n"), "{text:.1500}");
    assert!(!text.contains(" id=0x"));
    assert_eq!(tracefs_state(), before);
}

/// A fake tracefs in `dir` (no root needed): tracing off, one event, an
/// empty buffer unless `buffer` says otherwise.
fn fake_tracefs(dir: &Path, buffer: &str) -> PathBuf {
    let root = dir.join("tracing");
    std::fs::create_dir_all(root.join("events/sched/sched_switch")).unwrap();
    for (f, v) in [
        ("tracing_on", "0"),
        ("trace_clock", "[local] mono"),
        ("buffer_size_kb", "7"),
        ("trace", buffer),
        ("trace_marker", ""),
        ("events/sched/sched_switch/enable", "0"),
    ] {
        std::fs::write(root.join(f), v).unwrap();
    }
    root
}

fn read(root: &Path, f: &str) -> String {
    std::fs::read_to_string(root.join(f)).unwrap().trim().to_string()
}

/// The responder's trace state file for `root` (`/run/latprobe-responder`,
/// or the temporary directory), removed when the test ends.
struct StateFile(Vec<PathBuf>);

impl StateFile {
    fn of(root: &Path) -> StateFile {
        let name: String = root
            .to_string_lossy()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' })
            .collect();
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let name = format!("trace{name}.state");
        StateFile(vec![
            Path::new("/run/latprobe-responder").join(&name),
            std::env::temp_dir().join(format!("latprobe-responder-{uid}")).join(&name),
        ])
    }
}

impl Drop for StateFile {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn traced(slave: &Path, root: &Path) -> Responder {
    Responder::spawn(&[
        "uart",
        "--device",
        slave.to_str().unwrap(),
        "--trace",
        "--tracefs",
        root.to_str().unwrap(),
        "--trace-events",
        "sched_switch",
    ])
}

/// issue 43 (7): after a SIGKILL'd responder every later run saved the
/// armed state as "before" and put it back, so tracing stayed on. The state
/// before is on disk before each change; the next run restores it first.
#[test]
fn after_a_killed_traced_run_the_next_one_restores_the_true_state() {
    let dir = tempfile::tempdir().unwrap();
    let root = fake_tracefs(dir.path(), "");
    let _state = StateFile::of(&root);
    let (_m, slave) = common::open_pty();
    let mut a = traced(&slave, &root);
    assert_eq!(
        (read(&root, "tracing_on"), read(&root, "events/sched/sched_switch/enable")),
        ("1".into(), "1".into())
    );
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    // Reaped: its pid is no longer ours to signal on drop.
    std::mem::forget(a);
    assert_eq!(read(&root, "tracing_on"), "1", "a SIGKILL leaves it armed");
    let (_m2, slave2) = common::open_pty();
    let lines = traced(&slave2, &root).stop();
    assert_eq!(read(&root, "tracing_on"), "0", "{lines:?}");
    assert_eq!(read(&root, "events/sched/sched_switch/enable"), "0", "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("was killed before it could restore tracefs")), "{lines:?}");
}

/// issue 43 (7): two overlapping traced runs: the first one's restore
/// disarmed the second mid-run. One traced run per tracefs: the second
/// goes on untraced, saying who holds it.
#[test]
fn a_second_traced_run_at_once_goes_on_untraced_naming_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let root = fake_tracefs(dir.path(), "");
    let _state = StateFile::of(&root);
    let (_m, slave) = common::open_pty();
    let a = traced(&slave, &root);
    let (_m2, slave2) = common::open_pty();
    let b = traced(&slave2, &root);
    let b_lines = b.stop();
    assert!(
        b_lines
            .iter()
            .any(|l| l.contains("another traced run") && l.contains(&format!("pid {}", a.child.id()))),
        "{b_lines:?}"
    );
    assert_eq!(read(&root, "tracing_on"), "1", "the first run is still armed");
    let a_lines = a.stop();
    assert_eq!(read(&root, "tracing_on"), "0", "{a_lines:?}");
}

/// issue 43 (7): `--trace` wiped a trace already in the buffer without a
/// word. It says so first.
#[test]
fn a_trace_already_in_the_buffer_is_warned_of_before_it_is_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let root =
        fake_tracefs(dir.path(), "# tracer: nop\n#\n  bash-12 [000] d..1 100.000: sched_switch: prev=bash\n");
    let _state = StateFile::of(&root);
    let (_m, slave) = common::open_pty();
    let lines = traced(&slave, &root).stop();
    assert!(
        lines.iter().any(|l| l.contains("held events from before this run") && l.contains("bash-12")),
        "{lines:?}"
    );
}

/// issue 43 (7): the responder mounted tracefs and never unmounted it. A
/// mount it made is undone at its end (here a second mount of tracefs, on a
/// temporary directory, so the system's own stays as it is).
#[test]
fn tracefs_the_responder_mounted_is_unmounted_at_its_end() {
    let _lock = TRACEFS_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    need_tracefs!();
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("tracing");
    std::fs::create_dir(&mnt).unwrap();
    let _state = StateFile::of(&mnt);
    let mounted = || {
        std::fs::read_to_string("/proc/self/mounts")
            .unwrap()
            .contains(&format!(" {} tracefs ", mnt.display()))
    };
    let (_m, slave) = common::open_pty();
    let lines = Responder::spawn(&[
        "uart",
        "--device",
        slave.to_str().unwrap(),
        "--trace",
        "--tracefs",
        mnt.to_str().unwrap(),
    ])
    .stop();
    let still = mounted();
    if still {
        let _ = Command::new("umount").arg(&mnt).status();
    }
    assert!(lines.iter().any(|l| l.contains("ready")), "{lines:?}");
    assert!(!still, "tracefs left mounted at {}: {lines:?}", mnt.display());
}
