//! `latprobe demo --trace` end to end on this machine's real tracefs: the
//! demo makes the trigger FIFO and hands it to its responder, this test
//! plays the virtual probe's trigger (it writes `T` to the FIFO the demo
//! names; the virtual probe's own trigger, `--trigger-above`, comes with
//! the probe side of issue 24), and the report must name the snapshot, tie
//! it to a sample, show the excerpt and the culprit, and tracefs must be as
//! it was. The late answer itself, with a hog holding the responder's CPU,
//! is `responder/tests/trace.rs`.
//!
//! Needs root and tracefs (mounted if it is not): elsewhere it says it
//! skipped and why.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const TRACEFS: &str = "/sys/kernel/tracing";

fn tracefs_unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: tracefs needs root".into());
    }
    if !Path::new(TRACEFS).join("tracing_on").exists() {
        let o = std::process::Command::new("mount").args(["-t", "tracefs", "nodev", TRACEFS]).output();
        match o {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                return Some(format!("cannot mount tracefs: {}", String::from_utf8_lossy(&o.stderr).trim()))
            }
            Err(e) => return Some(format!("cannot run mount: {e}")),
        }
    }
    None
}

fn state() -> Vec<String> {
    [
        "tracing_on",
        "current_tracer",
        "trace_clock",
        "events/sched/sched_switch/enable",
        "events/irq/irq_handler_entry/enable",
    ]
    .iter()
    .map(|f| std::fs::read_to_string(Path::new(TRACEFS).join(f)).unwrap_or_default().trim().to_string())
    .collect()
}

#[test]
fn demo_trace_saves_a_snapshot_beside_the_report_and_names_it() {
    if let Some(why) = tracefs_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let responder = common::ensure_responder();
    // A responder left from before --trace would not take the flags.
    let help = std::process::Command::new(&responder).args(["uart", "--help"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("--trigger-fifo"),
        "{} is stale: cargo build -p latprobe-responder",
        responder.display()
    );
    let before = state();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let html = dir.path().join("run.html");
    let mut child = common::latprobe()
        .args(["demo", "--duration", "3s", "--trace", "--output"])
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    let fifo = loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the demo names its FIFO");
        seen.push(line.clone());
        if let Some(rest) = line.split_once("trigger FIFO ") {
            break rest.1.split_once(' ').map_or(rest.1, |p| p.0).to_string();
        }
    };
    // Beside --output: run-trace/.
    assert!(
        seen.iter()
            .any(|l| l.contains(&format!("snapshots into {}", dir.path().join("run-trace").display()))),
        "{seen:?}"
    );
    // Into the run, once answers are being marked.
    loop {
        let line =
            rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).expect("the demo starts");
        seen.push(line.clone());
        if line.contains("latprobe demo: uart-echo") {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(1000));
    std::fs::OpenOptions::new().write(true).open(&fifo).unwrap().write_all(b"T").unwrap();
    let out = child.wait_with_output().unwrap();
    seen.extend(rx.try_iter());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{seen:?}");
    assert_eq!(state(), before, "tracefs not restored");
    assert!(!Path::new(&fifo).exists(), "the FIFO was left behind");
    // The report names the snapshot and ties it to a sample.
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let t = &r["trace"];
    assert_eq!(t["enabled"], true, "{t}");
    assert_eq!(t["triggers"], 1, "{t}");
    let snap = &t["snapshots"][0];
    let file = snap["file"].as_str().unwrap();
    assert!(file.starts_with("trace-seq-") && file.ends_with(".txt"), "{file}");
    let seq = snap["last_marker_seq"].as_u64().unwrap();
    // Answer k is sample k when every sample before it was answered; a busy
    // machine may time some out, and then the count alone cannot tell.
    let clean = r["counts"]["timeouts"] == 0 && r["counts"]["lost"] == 0;
    let tied = clean.then_some(seq + 1);
    assert_eq!(snap["sample_seq"].as_u64(), tied, "{snap}");
    let stop = snap["stop_latency_ns"].as_u64().unwrap();
    assert!(stop > 0 && stop < 10_000_000, "{stop}");
    assert_eq!(t["stop_latencies_ns"][0].as_u64(), Some(stop));
    // A real snapshot, beside the report, with the marker and sched events.
    let saved = std::fs::read_to_string(dir.path().join("run-trace").join(file)).unwrap();
    assert!(saved.contains(&format!("tracing_mark_write: latprobe seq={seq} id=0x")), "marker {seq} missing");
    assert!(saved.contains("sched_switch:"));
    assert!(!saved.contains(&format!("latprobe seq={} ", seq + 1)), "the trace ran on past the trigger");
    // Shown in the summary and the HTML.
    assert!(text.contains("Target trace (--trace)"), "{text}");
    assert!(text.contains("likely culprit (heuristic)"), "{text}");
    let shown =
        if clean { format!("{file}: sample {}", seq + 1) } else { format!("{file}: answer {}", seq + 1) };
    assert!(text.contains(&shown), "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h2 id=\"trace\">Target trace</h2>") && page.contains(file));
    eprintln!("stop latency {stop} ns; {}", t["marker_mean_ns"]);
}
