//! `latprobe demo` end to end: the virtual probe (the real engine on a
//! thread) against the real `latprobe-responder` over a pseudo-terminal.
//! No timing assertions: the machine may be loaded; counts must add up.

mod common;

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use latprobe::link::Link;
use latprobe::model::Ending;
use latprobe::model::{EdgeArg, EndedBy, ModeArg, Request};
use latprobe::report::{self, histfile};
use latprobe::session::{self, RunState, SessionOptions};
use latprobe::virtual_probe::VirtualProbe;

#[test]
fn demo_measures_this_machine_and_its_outputs_agree() {
    ensure_responder();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo.json");
    let hist = dir.path().join("demo.hist");
    let raw = dir.path().join("demo.raw");
    let o = run(&[
        "demo",
        "--duration",
        "2s",
        "--interval",
        "1ms",
        "--priority",
        "10",
        "--output",
        p(&out),
        "--histfile",
        p(&hist),
        "--raw",
        p(&raw),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("this machine's own clock"), "says the clock is local: {}", show(&o));

    let r = json(&out);
    assert_counts_add_up(&r);
    assert_eq!(r["complete"], true, "{}", show(&o));
    assert_eq!(r["ended_by"], "duration-elapsed");
    assert!(r["counts"]["samples"].as_u64().unwrap() > 0, "{}", r["counts"]);
    assert_eq!(r["counts"]["lost"], 0, "{}", r["counts"]);
    assert_eq!(r["counts"]["bad_frames"], 0, "{}", r["counts"]);
    assert_eq!(r["probe"]["board"], "virtual");
    assert_eq!(r["probe"]["timer_hz"], 1_000_000_000);
    assert!(r["notes"][0].as_str().unwrap().contains("own clock"));
    // The probe thread's priority is said: granted, or refused with a warning.
    let rt = r["notes"][1].as_str().unwrap();
    let warned = stderr.contains("warning: virtual probe: SCHED_FIFO 10 not permitted");
    if warned {
        assert!(rt.contains("normal priority"), "{rt}");
    } else {
        assert_eq!(rt, "virtual probe thread at SCHED_FIFO 10", "{}", show(&o));
    }
    assert!(
        r["target"]["responder_version"].is_string(),
        "the responder's metadata is attached: {}",
        r["target"]
    );

    // Without --byte the demo runs with identity bytes.
    assert_eq!(r["config"]["identity"], true, "{}", r["config"]);
    assert_eq!(r["config"]["timeout_ns"], 8_000_000, "{}", r["config"]);

    let p = histfile::parse(&std::fs::read_to_string(&hist).unwrap()).unwrap();
    assert_eq!(p.bins.iter().map(|b| b.1).sum::<u64>(), p.total);
    assert_eq!(p.total + p.overflows, r["counts"]["samples"].as_u64().unwrap());
    assert_eq!(p.max_us, r["latency_ns"]["max_measured"].as_u64().unwrap() / 1000);

    // The raw file replays to the same report.
    let replayed = dir.path().join("replayed.json");
    let o = run(&["report", raw.to_str().unwrap(), "--output", replayed.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let (mut a, mut b) = (r, json(&replayed));
    for k in ["ended_at", "replayed_from"] {
        a.as_object_mut().unwrap().remove(k);
        b.as_object_mut().unwrap().remove(k);
    }
    assert_eq!(a, b);
}

#[test]
fn sigint_during_demo_writes_an_incomplete_report() {
    ensure_responder();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo.json");
    let mut child = latprobe()
        .args(["demo", "--duration", "60s", "--output", p(&out)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the measurement runs (the banner is printed after the
    // responder is ready), then a little more.
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let o = wait_with_timeout(&mut child, Duration::from_secs(15));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    assert_eq!(r["complete"], false, "{}", show(&o));
    assert_eq!(r["ended_by"], "interrupted");
    assert_eq!(r["counts"]["lost"], 0);
    assert_counts_add_up(&r);
}

#[test]
fn demo_without_a_responder_says_how_to_build_it() {
    let o = run(&["demo", "--duration", "1s", "--responder", "/nonexistent/latprobe-responder"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--responder"), "{}", show(&o));
}

#[test]
fn demo_with_a_fixed_byte_keeps_one_stimulus_in_flight() {
    ensure_responder();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo.json");
    let o = run(&["demo", "--count", "300", "--byte", "0x55", "--output", p(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    assert_counts_add_up(&r);
    // 300 stimuli, and (a loaded machine) any instant a slow answer left
    // without one: each a sample too.
    let omitted = r["schedule"]["omitted"].as_u64().unwrap_or(0);
    assert_eq!(r["counts"]["samples"].as_u64(), Some(300 + omitted));
    assert_eq!(
        (r["config"]["identity"].as_bool(), r["config"]["stimulus"].as_str()),
        (Some(false), Some("byte 0x55"))
    );
    assert_eq!(r["config"]["timeout_ns"], 900_000);
    assert!(r["notes"].to_string().contains("identity is off"), "{}", r["notes"]);
}

/// How the fake target answers the `i`-th byte it receives: after this
/// delay, or never.
fn late_target_delay(i: u64) -> Option<Duration> {
    if i % 250 == 249 {
        None
    } else if i % 20 == 19 {
        Some(Duration::from_millis(3))
    } else {
        Some(Duration::from_micros(200))
    }
}

/// A target on the virtual probe's pty that echoes every byte after
/// [`late_target_delay`]: later than the interval for one in twenty, never
/// for one in 250. Bytes answered late overtake none: each goes out when due.
fn late_target(path: std::path::PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    scheduled_echo(path, stop, late_target_delay)
}

#[test]
fn a_target_answering_later_than_the_interval_is_timed_and_its_tail_censored() {
    // The virtual probe (the real engine) against a target that answers
    // one stimulus in twenty 3 ms late (three intervals) and one in 250
    // never. With identity the late answers are timed exactly; the silent
    // ones are timeouts at the top of every figure.
    let (probe, host_end) = VirtualProbe::start(None).expect("start the virtual probe");
    let stop = Arc::new(AtomicBool::new(false));
    let target = late_target(probe.slave_path().to_path_buf(), stop.clone());
    let request = Request {
        mode: ModeArg::UartEcho,
        interval_ns: 1_000_000,
        dither_ns: 0,
        timeout_ns: None,
        guard_ns: None,
        count: Some(1000),
        duration_ns: None,
        seed: 1,
        byte: None,
        edge: EdgeArg::Rising,
        line: None,
        calibration: None,
        trigger_ns: None,
    };
    let ctx = virtual_context(&request);

    let mut state = RunState::new(ctx.histfile_max_us, false);
    let mut link = Link::new(Box::new(host_end), None);
    let opts = SessionOptions { request, silence: Duration::from_secs(3), stop_wait: Duration::from_secs(5) };
    let signals = AtomicUsize::new(0);
    let ended = session::run(&mut link, &mut state, &opts, &signals, &mut |_, _| {});
    stop.store(true, Ordering::SeqCst);
    let received = target.join().expect("the fake target");
    drop(link);
    probe.stop().expect("the virtual probe stops cleanly");
    assert_eq!(ended.expect("the run succeeds"), EndedBy::CountReached);
    assert_eq!(received, 1000, "every stimulus reached the target");

    let r = report::build(
        &ctx,
        &state,
        0,
        Ending {
            ended_by: EndedBy::CountReached,
            complete: true,
            error: None,
            ended_at: ctx.started_at.clone(),
            replayed_from: None,
        },
    );
    let j: serde_json::Value = serde_json::from_str(&report::json::to_string(&r)).unwrap();
    assert_counts_add_up(&j);
    let c = &r.counts;
    // 1000 stimuli, and (a loaded machine) any instant a slow answer left
    // without one: each a sample too.
    let omitted = r.schedule.as_ref().map_or(0, |s| s.omitted);
    assert_eq!((c.samples - omitted, c.lost, c.wrong_bytes, c.unmatched), (1000, 0, 0, 0), "{c:?}");
    // The four silent stimuli at least (a loaded machine may add more).
    assert!(c.timeouts >= 4, "{c:?}");
    assert_eq!(r.config.timeout_ns, 8_000_000);
    let l = r.latency_ns.as_ref().expect("latency figures");
    // 48 answers came 3 ms late (seq 499 and 999 were silent): the largest
    // measured latency and p99 (rank 990 of 1000, above the 948 prompt
    // answers) are beyond the 1 ms interval, timed, not cut off.
    let max_measured = l.max_measured.expect("measured samples");
    assert!(max_measured >= 3_000_000, "{l:?}");
    // (On a loaded machine more than 1 % may time out: p99 is then
    // censored, above 8 ms, which is no cut-off either.)
    assert!(l.p99.is_none_or(|p| p >= 3_000_000), "{l:?}");
    let w = r.worst.as_ref().unwrap();
    // (Which sample is worst is the machine's business: a loaded one may
    // delay a prompt answer further.)
    assert_eq!(w.latency_ns, max_measured, "{w:?}");
    // The tail past the measured: p99.9 (rank 999) and the max fall among
    // the timeouts, censored above the 8 ms timeout.
    assert_eq!((l.p99_9, l.max, l.censored_above), (None, None, 8_000_000), "{l:?}");

    let text = report::text::summary(&r);
    let table = text.lines().skip_while(|l| !l.starts_with("latency µs")).nth(1).unwrap();
    let cells: Vec<&str> = table.split_whitespace().collect();
    assert_eq!(cells[4..], [">8000.00", ">8000.00", ">8000.00"], "{text}");
    assert!(
        text.contains(&format!("{} of {} samples timed out (>8000.00 µs)", c.timeouts, c.samples)),
        "{text}"
    );
    let hist = histfile::render(&r);
    let p = histfile::parse(&hist).unwrap();
    assert_eq!(p.total + p.overflows, c.samples);
    assert_eq!(p.max_us, max_measured / 1000);
    assert!(p.max_us >= 3000, "{hist}");
    // The 3 ms answers overflow a 1000 us histogram, as do the timeouts.
    assert!(p.overflows >= 48 + c.timeouts, "{hist}");
}

/// `demo --mode periodic`: the responder's own bytes are the edges, its own
/// log is set beside them cycle by cycle, and the raw file replays to the
/// same fit, with the log again through `report --target-log`.
#[test]
fn demo_periodic_fits_this_machines_schedule_and_sets_the_targets_log_beside_it() {
    ensure_responder();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.json");
    let raw = dir.path().join("p.raw");
    let log = dir.path().join("target.log");
    let o = run(&[
        "demo",
        "--mode",
        "periodic",
        "--duration",
        "3s",
        "--interval",
        "2ms",
        "--output",
        p(&out),
        "--raw",
        p(&raw),
        "--target-log",
        p(&log),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("fitted period") && stdout.contains("ppm"), "{stdout}");
    assert!(!stdout.contains("naive"), "naive figures only with --show-naive: {stdout}");
    assert!(stdout.contains("external − internal"), "{stdout}");
    let r = json(&out);
    assert_counts_add_up(&r);
    assert_eq!(r["config"]["mode"], "periodic");
    let p = &r["periodic"];
    let edges = p["edges"].as_u64().unwrap();
    assert!(edges > 500, "{p:#}");
    // One clock on both sides (CLOCK_MONOTONIC): the fit finds no offset
    // to speak of, and a period of 2 ms.
    let f = &p["fit"];
    assert!((f["period_ns"].as_f64().unwrap() - 2e6).abs() < 2e6 * 2e-4, "{f:#}");
    assert!(f["offset_ppm"].as_f64().unwrap().abs() < 200.0, "{f:#}");
    assert_eq!(r["counts"]["samples"].as_u64().unwrap(), p["cycles"].as_u64().unwrap());
    assert_eq!(r["latency_ns"]["min"], 0, "0 is the earliest edge the fit allows");
    // The responder's log: one line per cycle, aligned with the probe's.
    let t = &p["target_log"];
    // Edges later than the timeout are censored beside the log, as in the figures.
    let censored = t["censored"].as_u64().unwrap_or(0);
    assert!(t["aligned"].as_u64().unwrap() + censored + 5 >= edges, "{t:#}");
    assert!(t["internal"]["count"].as_u64().unwrap() > 0, "{t:#}");
    assert_eq!(t["disagreements"].as_array().unwrap().len(), 10, "{t:#}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.starts_with("# latprobe-responder periodic log 1\n# interval_ns 2000000\n"), "{text:.200}");

    // The raw file replays to the same fit, and takes the log again.
    let again = dir.path().join("again.json");
    let o = run(&[
        "report",
        raw.to_str().unwrap(),
        "--target-log",
        log.to_str().unwrap(),
        "--show-naive",
        "-o",
        again.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("naive, against the nominal schedule"),
        "{}",
        show(&o)
    );
    let a = json(&again);
    assert_eq!(a["periodic"]["fit"], r["periodic"]["fit"]);
    assert_eq!(a["latency_ns"], r["latency_ns"]);
    assert_eq!(a["periodic"]["target_log"]["aligned"], t["aligned"]);
    // A JSON report keeps no cycles: --target-log on it is a usage error.
    let o = run(&["report", out.to_str().unwrap(), "--target-log", log.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--target-log"), "{}", show(&o));
    // The flags are periodic-only.
    let o = run(&["demo", "--duration", "1s", "--show-naive"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--show-naive applies to --mode periodic"));
}

/// issue 43 (8): a `kill -9` of a demo left `latprobe-demo-PID.*` in the
/// temporary directory for ever. The next demo removes what a demo that no
/// longer runs left there, saying so.
#[test]
fn a_killed_demos_temporary_files_are_removed_by_the_next_demo() {
    ensure_responder();
    let dir = tempfile::tempdir().unwrap();
    let tmpdir = dir.path().join("tmp");
    std::fs::create_dir(&tmpdir).unwrap();
    let mut child = latprobe()
        .args(["demo", "--duration", "60s", "--mode", "periodic", "--interval", "2ms"])
        .env("TMPDIR", &tmpdir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mine = |d: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!("latprobe-demo-{pid}.")))
            .collect();
        v.sort();
        v
    };
    // The responder writes its metadata (and the periodic log) there first.
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while mine(&tmpdir).is_empty() {
        assert!(std::time::Instant::now() < until, "the demo made no temporary file");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    let left = mine(&tmpdir);
    assert!(!left.is_empty());
    // The responder it started ends with it (its stdin closes).
    std::thread::sleep(Duration::from_millis(500));
    let o = latprobe().args(["demo", "--duration", "1s"]).env("TMPDIR", &tmpdir).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(mine(&tmpdir), Vec::<String>::new(), "left: {left:?}\n{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("left by a demo (pid {pid})")), "{err}");
}
