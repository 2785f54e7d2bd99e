//! The trigger end to end (`--trigger-above`): the virtual probe (the real
//! engine on a thread) against a fake target on its pty that answers some
//! stimuli late, later than the interval, or never. The test reads the
//! trigger FIFO itself and checks: a byte per triggered stimulus, each
//! written within the threshold plus a small bound of its stimulus; the
//! sample flagged exactly when it went the threshold unanswered; the report
//! counting them; an on-time answer never triggering.

mod common;

use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use latprobe::link::Link;
use latprobe::model::{EdgeArg, EndedBy, Ending, ModeArg, Request, RunContext};
use latprobe::report;
use latprobe::samples::{Row, RunInfo, Sink};
use latprobe::session::{self, RunState, SessionOptions};
use latprobe::virtual_probe::{now_ns, Options, VirtualProbe, TRIGGER_BYTE};

const THRESHOLD_NS: u64 = 800_000;
const COUNT: u64 = 300;

/// How the fake target answers the `i`-th byte: after this delay, or never.
/// On time (100 µs) for most; 3 ms (three intervals: answers queue behind
/// it) for one in ten; 1.2 ms (past the threshold, past the interval) for
/// another one in ten; never for one in fifty (a timeout, 8 ms, past the
/// threshold too). The last stimulus is answered on time.
fn delay(i: u64) -> Option<Duration> {
    match (i % 50, i % 10) {
        (20, _) => None,
        (_, 4) => Some(Duration::from_millis(3)),
        (_, 7) => Some(Duration::from_micros(1200)),
        _ => Some(Duration::from_micros(100)),
    }
}

/// The fake target: echoes every byte after [`delay`], in due order.
fn target(path: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    scheduled_echo(path, stop, delay)
}

/// Make a FIFO at `path`.
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

/// The reader of the trigger line: every byte with the CLOCK_MONOTONIC ns
/// (the virtual probe's tick) right after it was read.
fn reader(path: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<(u8, u64)>> {
    let mut fifo = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        loop {
            let mut fd =
                libc::pollfd { fd: std::os::fd::AsRawFd::as_raw_fd(&fifo), events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut fd, 1, 20) };
            match fifo.read(&mut buf) {
                Ok(n) => {
                    let t = now_ns();
                    got.extend(buf[..n].iter().map(|&b| (b, t)));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("read the trigger FIFO: {e}"),
            }
            if stop.load(Ordering::SeqCst) && fd.revents & libc::POLLIN == 0 {
                return got;
            }
        }
    })
}

/// Rows kept in memory, shared with the test.
#[derive(Debug, Clone, Default)]
struct Keep(Arc<Mutex<Vec<Row>>>);

impl Sink for Keep {
    fn row(&mut self, row: &Row) -> std::io::Result<()> {
        self.0.lock().unwrap().push(*row);
        Ok(())
    }
    fn finish(self: Box<Self>, _: &RunInfo) -> std::io::Result<()> {
        Ok(())
    }
}

fn request(trigger_ns: Option<u64>) -> Request {
    Request {
        mode: ModeArg::UartEcho,
        interval_ns: 1_000_000,
        dither_ns: 0,
        timeout_ns: None,
        guard_ns: None,
        count: Some(COUNT),
        duration_ns: None,
        seed: 1,
        byte: None,
        edge: EdgeArg::Rising,
        line: None,
        calibration: None,
        trigger_ns,
    }
}

fn context(request: &Request) -> RunContext {
    virtual_context(request)
}

fn ending() -> Ending {
    Ending {
        ended_by: EndedBy::CountReached,
        complete: true,
        error: None,
        ended_at: "2025-01-01T00:00:01Z".into(),
        replayed_from: None,
    }
}

#[test]
fn late_answers_raise_the_trigger_within_the_threshold_and_flag_their_samples() {
    let dir = tmp();
    let fifo = dir.path().join("trigger");
    mkfifo(&fifo);
    let stop_reader = Arc::new(AtomicBool::new(false));
    let read = reader(fifo.clone(), stop_reader.clone());
    let (probe, host_end) =
        VirtualProbe::start_with(Options { trigger_fifo: Some(fifo), ..Options::default() })
            .expect("start the virtual probe");
    let stop = Arc::new(AtomicBool::new(false));
    let fake = target(probe.slave_path().to_path_buf(), stop.clone());

    let request = request(Some(THRESHOLD_NS));
    let ctx = context(&request);
    let keep = Keep::default();
    let mut state = RunState::new(ctx.histfile_max_us, false);
    state.rows = Some(Box::new(keep.clone()));
    let mut link = Link::new(Box::new(host_end), None);
    let opts = SessionOptions { request, silence: Duration::from_secs(3), stop_wait: Duration::from_secs(5) };
    let ended = session::run(&mut link, &mut state, &opts, &AtomicUsize::new(0), &mut |_, _| {});
    stop.store(true, Ordering::SeqCst);
    assert_eq!(fake.join().expect("the fake target"), COUNT);
    drop(link);
    probe.stop().expect("the virtual probe stops cleanly");
    std::thread::sleep(Duration::from_millis(50));
    stop_reader.store(true, Ordering::SeqCst);
    let bytes = read.join().expect("the FIFO reader");
    assert_eq!(ended.expect("the run succeeds"), EndedBy::CountReached);
    state.finalize();
    let start = state.started.expect("started").start_tick;

    let rows = keep.0.lock().unwrap().clone();
    assert_eq!(rows.len() as u64, COUNT);
    // The rule, exact for a software trigger: flagged exactly when the
    // stimulus went more than the threshold unanswered.
    for r in &rows {
        let late = r.latency_ns.is_none_or(|l| l > THRESHOLD_NS);
        assert_eq!(r.triggered, late, "{r:?}");
    }
    // By design: every 3 ms, 1.2 ms and silent one; and most on time.
    for r in &rows {
        if delay(r.seq).is_none_or(|d| d.as_nanos() as u64 > THRESHOLD_NS) {
            assert!(r.triggered, "late by design: {r:?}");
        }
    }
    let flagged: Vec<&Row> = rows.iter().filter(|r| r.triggered).collect();
    let designed =
        (0..COUNT).filter(|&i| delay(i).is_none_or(|d| d.as_nanos() as u64 > THRESHOLD_NS)).count();
    assert!(flagged.len() >= designed, "{} flagged, {designed} late by design", flagged.len());
    assert!(rows.len() - flagged.len() >= 150, "on-time answers never trigger: {} flagged", flagged.len());

    // One byte 'T' per triggered stimulus, in order, each within the
    // threshold plus a bound of its stimulus.
    assert!(bytes.iter().all(|&(b, _)| b == TRIGGER_BYTE), "{bytes:?}");
    assert_eq!(bytes.len(), flagged.len(), "a trigger byte per flagged sample");
    let mut after: Vec<u64> = Vec::new();
    for (r, &(_, t)) in flagged.iter().zip(&bytes) {
        let stimulus = start + r.time_ns.expect("an echo sample has its stimulus time");
        let since = t.checked_sub(stimulus).expect("the byte after its stimulus");
        assert!(
            since > THRESHOLD_NS,
            "seq {} triggered {since} ns after its stimulus: before the threshold",
            r.seq
        );
        if since - THRESHOLD_NS > 1_000_000 {
            eprintln!(
                "slow trigger: seq {} latency {:?} byte {since} ns after its stimulus",
                r.seq, r.latency_ns
            );
        }
        after.push(since - THRESHOLD_NS);
    }
    after.sort_unstable();
    let median = after[after.len() / 2];
    let max = *after.last().unwrap();
    eprintln!(
        "trigger bytes past the threshold (probe wake-up + FIFO read): median {} µs, max {} µs over {}",
        median / 1000,
        max / 1000,
        after.len()
    );
    // A loaded two-core machine may delay a thread by milliseconds; the
    // median says what it normally is.
    assert!(median < 2_000_000, "median {median} ns past the threshold");
    assert!(max < 200_000_000, "max {max} ns past the threshold");

    let r = report::build(&ctx, &state, 0, ending());
    assert_eq!(r.counts.triggered, Some(flagged.len() as u64));
    assert_eq!(r.config.trigger_ns, Some(THRESHOLD_NS));
    let j: serde_json::Value = serde_json::from_str(&report::json::to_string(&r)).unwrap();
    assert_counts_add_up(&j);
    assert_eq!(j["counts"]["triggered"], flagged.len() as u64);
    let text = report::text::summary(&r);
    assert!(text.contains(&format!("{} of {COUNT} samples triggered", flagged.len())), "{text}");
}

#[test]
fn a_probe_without_a_trigger_output_refuses_trigger_above_by_name() {
    let (probe, host_end) = VirtualProbe::start(None).expect("start the virtual probe");
    let request = request(Some(THRESHOLD_NS));
    let ctx = context(&request);
    let mut state = RunState::new(ctx.histfile_max_us, false);
    let mut link = Link::new(Box::new(host_end), None);
    let opts = SessionOptions { request, silence: Duration::from_secs(3), stop_wait: Duration::from_secs(5) };
    let e = session::run(&mut link, &mut state, &opts, &AtomicUsize::new(0), &mut |_, _| {})
        .expect_err("no trigger output");
    drop(link);
    probe.stop().expect("the virtual probe stops cleanly");
    let e = e.to_string();
    assert!(e.contains("--trigger-above") && e.contains("no trigger output"), "{e}");
}

#[test]
fn demo_trigger_above_counts_triggers_and_reports_its_threshold() {
    ensure_responder();
    let dir = tmp();
    let out = dir.path().join("r.json");
    // A threshold no pty round trip beats: every sample triggers.
    let o = run(&["demo", "--count", "40", "--trigger-above", "1us", "-o", p(&out)]);
    assert!(o.status.success(), "{}", show(&o));
    let r = json(&out);
    assert_counts_add_up(&r);
    assert_eq!(r["config"]["trigger_ns"], 1000);
    assert_eq!(r["counts"]["triggered"], 40, "{}", r["counts"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("40 of 40 samples triggered"), "{}", show(&o));
    assert!(stderr(&o).contains("trigger line: the FIFO"), "{}", show(&o));
    // Without the flag: no threshold, no count in the report.
    let out2 = dir.path().join("r2.json");
    let o = run(&["demo", "--count", "10", "-o", p(&out2)]);
    assert!(o.status.success(), "{}", show(&o));
    let r = json(&out2);
    assert!(r["counts"].get("triggered").is_none() && r["config"].get("trigger_ns").is_none(), "{r}");
    // A threshold at the timeout is refused, naming both flags.
    let o = run(&["demo", "--count", "10", "--trigger-above", "2ms", "--timeout", "2ms"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("--trigger-above 2ms") && e.contains("--timeout 2ms"), "{e}");
}
