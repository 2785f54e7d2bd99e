//! `latprobe demo` end to end: the virtual probe (the real engine on a
//! thread) against the real `latprobe-responder` over a pseudo-terminal.
//! No timing assertions: the machine may be loaded; counts must add up.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::*;
use latprobe::report::histfile;

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
        out.to_str().unwrap(),
        "--histfile",
        hist.to_str().unwrap(),
        "--raw",
        raw.to_str().unwrap(),
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

    let p = histfile::parse(&std::fs::read_to_string(&hist).unwrap()).unwrap();
    assert_eq!(p.bins.iter().map(|b| b.1).sum::<u64>(), p.total);
    assert_eq!(p.total + p.overflows, r["counts"]["responses"].as_u64().unwrap());
    assert_eq!(p.max_us, r["latency_ns"]["max"].as_u64().unwrap() / 1000);

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
        .args(["demo", "--duration", "60s", "--output", out.to_str().unwrap()])
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
