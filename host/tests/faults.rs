//! The fault suite, host half: every fault of issue 10's table (D1–D14) as
//! a user meets it, through the real `latprobe` binary against the scripted
//! fake probe, the virtual probe (`demo`) and crafted files. Each test names
//! its row. The faults between a probe and the host (a corrupted link, a
//! probe reset, a suspended host, a killed QEMU) are in
//! `tests/tests/faults.rs`.

mod common;

use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use latprobe::model::RunContext;
use latprobe::rawfile::RawWriter;
use latprobe_protocol::{
    encode_message, Anomalies, Capabilities, Config, EdgeBatchBuilder, EdgeStamp, Mode, Outcome, ProbeInfo,
    ProbeMsg, Sample, SampleBatchBuilder, Stimulus, StopReason, Stopped, MAX_FRAME_LEN,
};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

fn p(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Run latprobe, failing the test if it takes longer than `limit`.
fn run_within(args: &[&str], limit: Duration) -> std::process::Output {
    let mut child = latprobe().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_with_timeout(&mut child, limit)
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on the pid of our own child.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

fn notes(r: &serde_json::Value) -> String {
    r["notes"]
        .as_array()
        .map_or_else(String::new, |n| n.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>().join("\n"))
}

/// A raw file's context for a hand-made stream (as JSON, so that fields
/// added to the request later take their defaults).
fn context(mode: &str, count: Option<u64>) -> RunContext {
    serde_json::from_value(serde_json::json!({
        "tool_version": "test",
        "source": "crafted",
        "started_at": "2025-01-01T00:00:00Z",
        "request": {
            "mode": mode, "interval_ns": 1_000_000, "dither_ns": 0, "timeout_ns": null,
            "guard_ns": null, "count": count, "duration_ns": null, "seed": 1, "byte": null,
            "edge": "rising"
        },
        "histfile_max_us": 1000,
        "target": null,
        "notes": []
    }))
    .expect("a run context")
}

fn frame(msg: &ProbeMsg<'_>) -> Vec<u8> {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = encode_message(msg, &mut buf).expect("frame");
    buf[..n].to_vec()
}

fn info() -> ProbeInfo<'static> {
    ProbeInfo {
        protocol_version: latprobe_protocol::PROTOCOL_VERSION,
        firmware_version: "crafted",
        board: "crafted",
        timer_hz: 100_000_000,
        timer_bits: 32,
        capabilities: Capabilities::UART_ECHO | Capabilities::PERIODIC,
        max_batch: 64,
        target_baud: 0,
        build_id: 0,
    }
}

fn config(mode: Mode, stimulus: Stimulus) -> Config {
    Config {
        mode,
        interval_ticks: 100_000,
        dither_ticks: 0,
        timeout_ticks: 800_000,
        guard_ticks: 10_000,
        count: None,
        seed: 1,
        stimulus,
    }
}

/// Hand-made echo batches from `first` for `n` samples of 20 µs, skipping
/// the batch of 32 that starts at `skip`.
fn batches(first: u64, n: u64, skip: Option<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut b = SampleBatchBuilder::new(100_000, 32);
    let mut seq = first;
    let end = first + (n - 1);
    loop {
        let s =
            Sample { seq, stimulus_tick: 1_000 + (seq - first) * 100_000, outcome: Outcome::Response(2_000) };
        if b.push(&s).is_err() {
            if Some(b.batch().first_seq) != skip {
                out.extend(frame(&ProbeMsg::SampleBatch(b.batch())));
            }
            b.clear();
            b.push(&s).unwrap();
        }
        if seq == end {
            break;
        }
        seq += 1;
    }
    if !b.is_empty() && Some(b.batch().first_seq) != skip {
        out.extend(frame(&ProbeMsg::SampleBatch(b.batch())));
    }
    out
}

fn stopped(taken: u64) -> ProbeMsg<'static> {
    ProbeMsg::Stopped(Stopped {
        reason: StopReason::CountReached,
        end_tick: 1_000 + taken * 100_000,
        taken,
        timeouts: 0,
        dropped: 0,
        overruns: 0,
        anomalies: Anomalies::default(),
    })
}

fn write_raw(path: &Path, ctx: &RunContext, stream: &[u8]) {
    let mut w = RawWriter::create(path, ctx).unwrap();
    w.append(stream).unwrap();
    w.finish().unwrap();
}

// D1: a directory or an unwritable output is found before the run, and a
// failing output never costs the other one.
#[test]
fn d1_an_output_that_is_a_directory_fails_before_the_run() {
    let dir = tmp();
    let adir = dir.path().join("adir");
    std::fs::create_dir(&adir).unwrap();
    let hist = dir.path().join("h.hist");
    // No probe at all: the check comes first, in well under a second.
    let started = Instant::now();
    let o = run_within(
        &["run", "--port", "unix:/nonexistent", "--count", "10", "-o", p(&adir), "--histfile", p(&hist)],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("--output") && stderr(&o).contains("is a directory"), "{}", show(&o));
    assert!(started.elapsed() < Duration::from_secs(5));
    let o = run_within(&["demo", "--duration", "1s", "--raw", p(&adir)], Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("--raw") && stderr(&o).contains("is a directory"), "{}", show(&o));
}

// D1 and "disk full": an output that fails only when written (a full disk:
// /dev/full) goes to a fallback file that is printed; the other output is
// written where asked; exit 1.
#[test]
fn d1_disk_full_for_the_report_writes_it_to_a_printed_fallback_and_keeps_the_histfile() {
    let dir = tmp();
    let probe = FakeProbe::start(dir.path(), FakeOpts::default());
    let hist = dir.path().join("h.hist");
    let o = run_within(
        &["run", "--port", &probe.port(), "--count", "500", "-o", "/dev/full", "--histfile", p(&hist)],
        Duration::from_secs(30),
    );
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let text = std::fs::read_to_string(&hist).expect("the histfile is written despite the report's failure");
    let h = latprobe::report::histfile::parse(&text).unwrap();
    assert_eq!(h.total + h.overflows, 500);
    let err = stderr(&o);
    assert!(err.contains("/dev/full") && err.contains("No space left on device"), "{err}");
    let fallback = err
        .split_whitespace()
        .find(|w| w.contains("latprobe-") && w.ends_with("full"))
        .unwrap_or_else(|| panic!("no fallback path printed: {err}"));
    let r = json(Path::new(fallback));
    assert_eq!(r["counts"]["samples"], 500);
    assert_eq!(r["complete"], true);
    let _ = std::fs::remove_file(fallback);
    // The summary is still printed.
    assert!(String::from_utf8_lossy(&o.stdout).contains("C:    500"), "{}", show(&o));
}

// D2: two outputs on one path (directly, or through a link), and an output
// on the input, are refused before anything is written.
#[test]
fn d2_two_outputs_on_one_file_or_an_output_on_the_input_are_refused() {
    let dir = tmp();
    let same = dir.path().join("same");
    let o = run_within(
        &["run", "--port", "unix:/nonexistent", "--count", "1", "-o", p(&same), "--raw", p(&same)],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("are the same file"), "{}", show(&o));
    assert!(!same.exists(), "nothing is created");
    // Through a symbolic link, and another spelling of the same path.
    let real = dir.path().join("real.json");
    std::fs::write(&real, "keep").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let spelled = dir.path().join(".").join("real.json");
    let o = run_within(
        &["demo", "--duration", "1s", "-o", p(&link), "--histfile", p(&spelled)],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "keep");
    // `report` must not destroy its own input.
    let probe = FakeProbe::start(dir.path(), FakeOpts::default());
    let raw = dir.path().join("run.raw");
    let o = run(&["run", "--port", &probe.port(), "--count", "100", "--raw", p(&raw)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let before = std::fs::read(&raw).unwrap();
    let o = run_within(&["report", p(&raw), "-o", p(&raw)], Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("is the input"), "{}", show(&o));
    assert_eq!(std::fs::read(&raw).unwrap(), before, "the input is untouched");
    // /dev/null twice is fine: a device is nobody's file.
    let o = run_within(
        &["report", p(&raw), "-o", "/dev/null", "--histfile", "/dev/null"],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
}

// D3: a closed stdout (`| true`) or stderr never costs a file, nor panics.
#[test]
fn d3_a_closed_stdout_or_stderr_costs_no_file() {
    let dir = tmp();
    for closed in ["stdout", "stderr"] {
        let probe = FakeProbe::start(dir.path(), FakeOpts::default());
        let out = dir.path().join(format!("{closed}.json"));
        let hist = dir.path().join(format!("{closed}.hist"));
        let mut child = latprobe()
            .args(["run", "--port", &probe.port(), "--count", "300", "-o", p(&out), "--histfile", p(&hist)])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reading end goes away before latprobe writes anything.
        match closed {
            "stdout" => drop(child.stdout.take()),
            _ => drop(child.stderr.take()),
        }
        let o = wait_with_timeout(&mut child, Duration::from_secs(30));
        assert_eq!(o.status.code(), Some(0), "closed {closed}: {}", show(&o));
        assert_eq!(json(&out)["counts"]["samples"], 300, "closed {closed}");
        assert!(hist.is_file(), "closed {closed}");
        drop(probe);
        std::fs::remove_file(dir.path().join("probe.sock")).unwrap();
    }
}

// D4: a size a file claims is bounded: a JSON histogram range or a raw
// file's histfile range of 4 Gi bins is refused at once.
#[test]
fn d4_a_crafted_histogram_range_is_refused_not_allocated() {
    let dir = tmp();
    let probe = FakeProbe::start(dir.path(), FakeOpts::default());
    let good = dir.path().join("good.json");
    let o = run(&["run", "--port", &probe.port(), "--count", "100", "-o", p(&good)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let mut r = json(&good);
    r["histogram"]["max_us"] = serde_json::json!(4_294_967_295u64);
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r.to_string()).unwrap();
    let hist = dir.path().join("h.hist");
    let o = run_within(&["report", p(&bad), "--histfile", p(&hist)], Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("max_us 4294967295"), "{}", show(&o));
    let mut ctx = context("uart-echo", Some(10));
    ctx.histfile_max_us = u32::MAX;
    let raw = dir.path().join("bad.raw");
    write_raw(&raw, &ctx, &frame(&ProbeMsg::Hello(info())));
    let o = run_within(&["report", p(&raw), "--histfile", p(&hist)], Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("histogram of 4294967295 us"), "{}", show(&o));
}

// D5: a port that streams only garbage (a baud mismatch) fails within the
// handshake's bound, naming the likely causes.
#[test]
fn d5_a_probe_sending_only_garbage_fails_in_bounded_time_naming_the_baud() {
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

// D6: SIGHUP (a closed terminal, a dropped ssh session) ends the run like
// SIGTERM: Stop sent, every file written, the raw file replays alike.
#[test]
fn d6_sighup_writes_every_file_like_sigterm() {
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

// D7 (fixed before this suite): sequence numbers near 2^64 do not overflow
// anywhere between the raw file and the report.
#[test]
fn d7_sequence_numbers_near_the_end_of_u64_replay_sanely() {
    let dir = tmp();
    let first = u64::MAX - 999;
    let mut stream = frame(&ProbeMsg::Hello(info()));
    stream.extend(frame(&ProbeMsg::Configured(config(Mode::UartEcho, Stimulus::Identified))));
    stream.extend(frame(&ProbeMsg::Started { start_tick: 1_000, first_seq: first }));
    // 1000 samples up to u64::MAX, one batch of 32 lost on the way.
    stream.extend(batches(first, 1000, Some(first + 320)));
    stream.extend(frame(&stopped(1000)));
    let raw = dir.path().join("wrap.raw");
    write_raw(&raw, &context("uart-echo", None), &stream);
    let out = dir.path().join("r.json");
    let o = run_within(&["report", p(&raw), "-o", p(&out)], Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    assert_eq!(r["counts"]["samples"], 968, "{}", r["counts"]);
    assert_eq!(r["counts"]["lost"], 32, "{}", r["counts"]);
    assert_eq!(r["counts"]["duplicates"], 0);
    assert_counts_add_up(&r);
}

// D8: --silence-timeout 0 would fail at once: a usage error.
#[test]
fn d8_a_zero_silence_timeout_is_a_usage_error() {
    let o = run_within(&["run", "--port", "unix:/x", "--silence-timeout", "0"], Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("--silence-timeout") && stderr(&o).contains("zero"), "{}", show(&o));
}

// D9: one Ctrl-C with a probe that never confirms Stop: latprobe says it
// waits, then reports `interrupted` (exit 0) with a note, not `failed`.
#[test]
fn d9_one_interrupt_with_a_probe_that_never_confirms_stop_is_still_interrupted() {
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

// D10: a failed run's raw file replays to the same report: `failed`, its
// error, its notes.
#[test]
fn d10_a_replayed_failed_run_says_what_the_live_run_said() {
    let dir = tmp();
    let probe =
        FakeProbe::start(dir.path(), FakeOpts { script: Script::SilentAfter(5), ..FakeOpts::default() });
    let (live, raw) = (dir.path().join("live.json"), dir.path().join("r.raw"));
    let o = run_within(
        &[
            "run",
            "--port",
            &probe.port(),
            "--count",
            "5000",
            "--silence-timeout",
            "1s",
            "-o",
            p(&live),
            "--raw",
            p(&raw),
        ],
        Duration::from_secs(20),
    );
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let again = dir.path().join("again.json");
    let o = run(&["report", p(&raw), "-o", p(&again)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let (mut a, mut b) = (json(&live), json(&again));
    assert_eq!(a["ended_by"], "failed");
    assert!(a["error"].as_str().unwrap().contains("no data from the probe"), "{a}");
    for k in ["ended_at", "replayed_from"] {
        a.as_object_mut().unwrap().remove(k);
        b.as_object_mut().unwrap().remove(k);
    }
    assert_eq!(a, b);
}

// D11: `report` reads input of bounded size: /dev/zero is refused, not
// read until memory is gone.
#[test]
fn d11_report_of_an_endless_input_is_refused() {
    let o = run_within(&["report", "/dev/zero"], Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("longer than 256 MiB"), "{}", show(&o));
}

fn child_pids(pid: u32) -> Vec<u32> {
    let path = format!("/proc/{pid}/task/{pid}/children");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect()
}

// D12: the demo notices its responder dying: the run stops, fails (exit
// 1) and says why; the report holds what arrived.
#[test]
fn d12_a_demo_whose_responder_dies_fails_and_says_so() {
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

// D13: a schedule the probe cannot keep is reported as such.
#[test]
fn d13_an_impossible_schedule_is_noted() {
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

// D14, one cosmetic fault each.
#[test]
fn d14_an_os_error_is_printed_once() {
    let dir = tmp();
    let probe = FakeProbe::start(dir.path(), FakeOpts::default());
    let o = run_within(
        &["run", "--port", &probe.port(), "--count", "1", "--raw", "/dev/full"],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let err = stderr(&o);
    assert_eq!(err.matches("No space left on device").count(), 1, "{err}");
    assert_eq!(err.matches("(os error").count(), 1, "{err}");
}

#[test]
fn d14_empty_and_random_inputs_exit_alike() {
    let dir = tmp();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    let random = dir.path().join("random");
    std::fs::write(
        &random,
        (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    for f in [&empty, &random] {
        let o = run(&["report", p(f)]);
        assert_eq!(o.status.code(), Some(2), "{}: {}", f.display(), show(&o));
        assert!(stderr(&o).contains("neither a latprobe raw file nor a JSON report"), "{}", show(&o));
    }
}

#[test]
fn d14_a_schema_version_of_the_wrong_type_is_named() {
    let dir = tmp();
    let f = dir.path().join("r.json");
    std::fs::write(&f, r#"{"schema_version": "1"}"#).unwrap();
    let o = run(&["report", p(&f)]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains(r#"schema_version "1" (a string"#), "{}", show(&o));
}

#[test]
fn d14_a_negative_duration_and_a_zero_baud_are_named() {
    let o = run(&["run", "--port", "unix:/x", "--interval=-1ms"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("negative"), "{}", show(&o));
    let o = run(&["run", "--port", "/dev/null", "--baud", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("--baud"), "{}", show(&o));
}

#[test]
fn d14_junk_after_a_raw_files_last_frame_is_a_bad_frame() {
    let dir = tmp();
    let mut stream = frame(&ProbeMsg::Hello(info()));
    stream.extend(frame(&ProbeMsg::Configured(config(Mode::UartEcho, Stimulus::Identified))));
    stream.extend(frame(&ProbeMsg::Started { start_tick: 1_000, first_seq: 0 }));
    stream.extend(batches(0, 100, None));
    stream.extend(frame(&stopped(100)));
    stream.extend(std::iter::repeat_n(0xA5u8, 5 << 20));
    let raw = dir.path().join("junk.raw");
    write_raw(&raw, &context("uart-echo", Some(100)), &stream);
    let out = dir.path().join("r.json");
    let o = run(&["report", p(&raw), "-o", p(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    assert_eq!(r["counts"]["samples"], 100);
    assert_eq!(r["counts"]["bad_frames"], 1, "{}", r["counts"]);
}

#[test]
fn d14_a_periodic_run_without_cycles_prints_no_empty_cyclictest_line() {
    let dir = tmp();
    let mut stream = frame(&ProbeMsg::Hello(info()));
    stream.extend(frame(&ProbeMsg::Configured(config(
        Mode::Periodic,
        Stimulus::None(latprobe_protocol::ResponseLine::Uart),
    ))));
    stream.extend(frame(&ProbeMsg::Started { start_tick: 1_000, first_seq: 0 }));
    stream.extend(frame(&stopped(0)));
    let raw = dir.path().join("periodic.raw");
    write_raw(&raw, &context("periodic", None), &stream);
    let o = run(&["report", p(&raw)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(!text.contains("C:"), "{text}");
    assert!(text.contains("no samples"), "{text}");
}

// Disk full while writing raw (a file-size limit: EFBIG): the measurement
// keeps all its data, the report says where the raw file stopped, exit 1.
#[test]
fn disk_full_while_writing_raw_keeps_the_measurement() {
    let dir = tmp();
    let probe = FakeProbe::start(dir.path(), FakeOpts { pace: Duration::ZERO, ..FakeOpts::default() });
    let (out, raw) = (dir.path().join("r.json"), dir.path().join("r.raw"));
    let mut cmd = latprobe();
    cmd.args(["run", "--port", &probe.port(), "--count", "60000", "-o", p(&out), "--raw", p(&raw)]);
    // SAFETY: setrlimit is async-signal-safe; it touches only the child.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit { rlim_cur: 100_000, rlim_max: 100_000 };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let o = wait_with_timeout(&mut child, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let r = json(&out);
    assert_eq!((r["complete"].as_bool(), r["counts"]["samples"].as_u64()), (Some(true), Some(60_000)), "{r}");
    assert!(notes(&r).contains("stopped after"), "{}", notes(&r));
    assert!(stderr(&o).contains("--raw") && stderr(&o).contains("File too large"), "{}", show(&o));
    // What the raw file holds replays: the start of the run.
    let again = dir.path().join("again.json");
    let o = run(&["report", p(&raw), "-o", p(&again)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let b = json(&again);
    assert_eq!(b["complete"], false);
    assert!(b["counts"]["samples"].as_u64().unwrap() < 60_000);
}

// A probe reset mid-run (the fake says its boot Hello again): the run
// stops with a report of what arrived and an error that says so (exit 1);
// see tests/tests/faults.rs for QEMU's system_reset and the virtual probe.
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

// ---- Issue 18: contents checked against the request, hostile texts,
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

// 12: a Configured that is not what was sent (interval and timeout 0, or
// another mode) is refused: exit 1, said, counted; nothing is measured.
#[test]
fn i18_a_configured_other_than_the_one_sent_is_refused() {
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

// 12: a response later than the probe's own timeout is a timeout, counted
// and noted, never a measured latency of 42.9 s.
#[test]
fn i18_a_response_beyond_the_probes_timeout_is_a_timeout() {
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

// 12: a Stopped whose total is not what arrived is noted and counted.
#[test]
fn i18_a_stopped_total_that_disagrees_with_the_stream_is_noted() {
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

// 12: a Stopped(HostStop) the host never sent fails the run (exit 1),
// keeping what arrived.
#[test]
fn i18_a_stop_the_host_never_sent_fails_the_run() {
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

// 16: a Hello with a 0 Hz timer is a probe fault, not a tick rule.
#[test]
fn i18_a_hello_with_a_zero_hz_timer_is_a_probe_fault() {
    let (o, _) = fake_run(FakeOpts { hello: zero_hz, ..FakeOpts::default() }, &["--count", "10"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let e = stderr(&o);
    assert!(e.contains("timer of 0 Hz") && e.contains("latprobe flash"), "{}", show(&o));
    assert!(!e.contains("one tick"), "{}", show(&o));
}

// 16: a probe that streams frames but never answers Hello is told so, not
// of a silence of nanoseconds.
#[test]
fn i18_frames_without_a_hello_are_named() {
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

// 14: control characters from the probe are escaped in the summary; the
// JSON report keeps them as they are.
#[test]
fn i18_escape_sequences_from_the_probe_are_escaped_in_text() {
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

// 13: a calibration whose figures cannot be one loopback is refused before
// the run, naming the field.
#[test]
fn i18_a_bogus_calibration_is_refused() {
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

// 15: a periodic --interval beyond the probe's u32 of ticks is refused
// naming the limit, not clamped.
#[test]
fn i18_a_periodic_interval_beyond_the_tick_limit_is_refused() {
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

// 8: a responder that dies right after `ready:` fails the demo (exit 1),
// however early it died.
#[test]
fn i18_a_responder_dying_right_after_ready_fails_the_demo() {
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

// 11: a responder that exits at once: its last words, exit 2.
#[test]
fn i18_a_responder_that_exits_at_once_is_quoted() {
    let dir = tmp();
    let r = script(dir.path(), "echo 'responder: cannot open the device: boom' >&2\nexit 3");
    let o = run_within(&["demo", "--duration", "1s", "--responder", &r], Duration::from_secs(20));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let e = stderr(&o);
    assert!(e.contains("exit status: 3") && e.contains("boom") && e.contains("--responder"), "{e}");
}

// 10: a demo responder that writes no periodic log: a note, exit 0, and no
// word of a --target-log the user never gave.
#[test]
fn i18_a_demo_responder_without_a_log_is_a_note() {
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

// 9: a demo suspended for more than a second (SIGSTOP, SIGCONT) goes on.
#[test]
fn i18_a_suspended_demo_goes_on() {
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

// 16: a silence timeout shorter than two polls is refused, not reported
// as a silence of nanoseconds.
#[test]
fn i18_a_silence_timeout_below_two_polls_is_a_usage_error() {
    let o = run_within(&["demo", "--silence-timeout", "1ns", "--duration", "1s"], Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        stderr(&o).contains("--silence-timeout") && stderr(&o).contains("at least 100ms"),
        "{}",
        show(&o)
    );
}

/// A periodic run of `n` edges 1 ms apart (the target at the probe's rate,
/// a few µs of jitter) whose edge `bad` carries a tick `jump` ticks ahead:
/// a CRC-valid batch with a nonsensical tick. Also the fuzz seed
/// `fuzz/seeds/raw_file/periodic_clock_jump` (with `jump` 2^62).
pub(crate) fn periodic_stream_with_a_jump(n: u64, bad: u64, jump: u64) -> Vec<u8> {
    periodic_stream(n, bad, jump, 0)
}

/// [`periodic_stream_with_a_jump`], the sequence numbers from `bad` on
/// also `seq_jump` ahead.
fn periodic_stream(n: u64, bad: u64, jump: u64, seq_jump: u64) -> Vec<u8> {
    let mut stream = frame(&ProbeMsg::Hello(info()));
    stream.extend(frame(&ProbeMsg::Configured(config(
        Mode::Periodic,
        Stimulus::None(latprobe_protocol::ResponseLine::Uart),
    ))));
    stream.extend(frame(&ProbeMsg::Started { start_tick: 1_000, first_seq: 0 }));
    let mut b = EdgeBatchBuilder::new(64);
    for seq in 0..n {
        let mut tick = 2_000 + seq * 100_000 + (seq * 7919) % 500;
        if seq == bad {
            tick += jump;
        }
        let e = EdgeStamp { seq: if seq >= bad { seq + seq_jump } else { seq }, tick };
        if b.push(&e).is_err() {
            stream.extend(frame(&ProbeMsg::EdgeBatch(b.batch())));
            b.clear();
            b.push(&e).unwrap();
        }
    }
    stream.extend(frame(&ProbeMsg::EdgeBatch(b.batch())));
    stream.extend(frame(&stopped(n)));
    stream
}

// Issue 18: one CRC-valid edge whose tick jumps 2^43 ticks (a day and
// more at 100 MHz) once made `report --target-log` write 16 bytes per
// "missed" cycle (1.4 GB here, 68 GB for 2^62) and count them all as
// timeouts. Now: an anomaly named in the notes, the cycles around it
// compared with the log, no timeout, no file left in the temp dir. The
// child's file-size limit (64 MiB) keeps a regression from filling the
// disk: it fails instead.
#[test]
fn i18_an_edge_tick_jumping_past_a_day_is_an_anomaly_not_a_flood_of_missed_cycles() {
    let dir = tmp();
    let tmpdir = dir.path().join("tmp");
    std::fs::create_dir(&tmpdir).unwrap();
    let raw = dir.path().join("jump.raw");
    write_raw(&raw, &context("periodic", None), &periodic_stream_with_a_jump(3_000, 1_500, 1 << 43));
    let log = dir.path().join("target.log");
    let mut text = String::from("# latprobe-responder periodic log 1\n# interval_ns 1000000\n");
    for k in 0..3_000u64 {
        text += &format!("{k} {}\n", 3_000 + (k * 7919) % 500 * 10);
    }
    std::fs::write(&log, text).unwrap();
    let out = dir.path().join("r.json");
    let mut cmd = latprobe();
    cmd.args(["report", p(&raw), "--target-log", p(&log), "-o", p(&out)]).env("TMPDIR", &tmpdir);
    // SAFETY: setrlimit is async-signal-safe; it touches only the child.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit { rlim_cur: 64 << 20, rlim_max: 64 << 20 };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // A hang guard, not a measurement.
    let o = wait_with_timeout(&mut child, Duration::from_secs(120));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    let per = &r["periodic"];
    assert_eq!(per["clock_jumps"], 1, "{per}");
    assert_eq!(per["first_clock_jump"]["seq"], 1_500, "{per}");
    assert_eq!(per["missed_periods"], 0, "{per}");
    assert_eq!(r["counts"]["timeouts"], 0, "{}", r["counts"]);
    assert!(
        notes(&r).contains("anomaly: 1 edges had a tick or sequence number more than a day"),
        "{}",
        notes(&r)
    );
    let t = &per["target_log"];
    assert_eq!(t["aligned"], 2_999, "{t}");
    assert_eq!(t["offset"], 0, "{t}");
    let left: Vec<_> = std::fs::read_dir(&tmpdir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "left in the temp dir: {left:?}");
}

// The same for a sequence number: edges from 1500 on numbered 2^62
// ahead overflowed the fit's cycle arithmetic (a panic in a debug build,
// nonsense in a release one). Each is a damaged stamp, named, and the run
// up to it is kept.
#[test]
fn i18_edge_sequence_numbers_jumping_2_62_ahead_are_named_not_a_panic() {
    let dir = tmp();
    let raw = dir.path().join("seq.raw");
    write_raw(&raw, &context("periodic", None), &periodic_stream(3_000, 1_500, 0, 1 << 62));
    let out = dir.path().join("r.json");
    let o = run_within(&["report", p(&raw), "-o", p(&out)], Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    let per = &r["periodic"];
    assert_eq!(
        (per["clock_jumps"].as_u64(), per["missed_periods"].as_u64()),
        (Some(1_500), Some(0)),
        "{per}"
    );
    assert_eq!(r["counts"]["responses"], 1_500, "{}", r["counts"]);
    assert!(notes(&r).contains("anomaly: 1500 edges had a tick or sequence number"), "{}", notes(&r));
}

/// The fuzz seed `fuzz/seeds/raw_file/periodic_clock_jump` is this stream
/// with a 2^62 jump, behind a first byte of 3 (the raw_file target: odd,
/// the file as it is; bit 1, the `--target-log` path). A changed protocol
/// fails here; `LATPROBE_WRITE_SEEDS=1` writes it again.
#[test]
fn i18_the_fuzz_seed_is_the_crafted_clock_jump() {
    let dir = tmp();
    let raw = dir.path().join("seed.raw");
    write_raw(&raw, &context("periodic", None), &periodic_stream_with_a_jump(3_000, 1_500, 1 << 62));
    let mut want = vec![3u8];
    want.extend(std::fs::read(&raw).unwrap());
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/raw_file/periodic_clock_jump");
    if std::env::var_os("LATPROBE_WRITE_SEEDS").is_some() {
        std::fs::write(&seed, &want).unwrap();
    }
    assert!(std::fs::read(&seed).ok() == Some(want), "{} is stale: LATPROBE_WRITE_SEEDS=1", seed.display());
}

// Issue 18: `latprobe report` had no signal handler, so Ctrl-C killed it
// mid-replay (leaving its cycle file in the temp dir). Now it stops
// reading, writes what it read (complete: false, a note) and exits 0, as
// `run` does. The raw file holds a periodic run, then 32 GiB of nothing
// (sparse), so the replay is still reading when the signal comes.
#[test]
fn i18_report_stops_reading_on_a_signal_and_writes_what_it_read() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let dir = tmp();
        let tmpdir = dir.path().join("tmp");
        std::fs::create_dir(&tmpdir).unwrap();
        let raw = dir.path().join("long.raw");
        write_raw(&raw, &context("periodic", None), &periodic_stream_with_a_jump(3_000, 1_500, 0));
        // Past the ending: the replay reads it all as the probe's bytes.
        std::fs::OpenOptions::new().write(true).open(&raw).unwrap().set_len(32 << 30).unwrap();
        let log = dir.path().join("target.log");
        std::fs::write(&log, "# latprobe-responder periodic log 1\n# interval_ns 1000000\n0 5\n1 6\n")
            .unwrap();
        let out = dir.path().join("r.json");
        let mut child = latprobe()
            .args(["report", p(&raw), "--target-log", p(&log), "-o", p(&out)])
            .env("TMPDIR", &tmpdir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1_500));
        signal(child.id(), sig);
        // A hang guard, not a measurement.
        let o = wait_with_timeout(&mut child, Duration::from_secs(60));
        assert_eq!(o.status.code(), Some(0), "signal {sig}: {}", show(&o));
        assert!(stderr(&o).contains("interrupted"), "{}", show(&o));
        let r = json(&out);
        assert_eq!(r["complete"], false, "{r}");
        assert!(notes(&r).contains("latprobe report was interrupted"), "{}", notes(&r));
        assert_eq!(r["periodic"]["edges"], 3_000, "{}", r["periodic"]);
        assert!(r["periodic"]["target_log"].is_object(), "{}", r["periodic"]);
        let left: Vec<_> = std::fs::read_dir(&tmpdir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "left in the temp dir: {left:?}");
    }
}
