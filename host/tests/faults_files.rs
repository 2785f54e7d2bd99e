//! The fault suite of the files a command reads and writes, through the
//! real `latprobe` binary against the scripted fake probe, the virtual
//! probe (`demo`) and crafted files. No data is ever silently destroyed:
//! every path a command reads or writes is checked against every other
//! before anything is measured or written (two outputs on one file, an
//! output on an input, the files `--plot DIR` writes, a directory, a
//! dangling link); an output is whole at its path or absent (a full disk,
//! a closed stdout); a crafted or endless input is refused, not allocated;
//! a raw file replays to the live run's report, its limits and its faults
//! included, and a crafted stream in one (sequence numbers near 2^64, a
//! clock jumping past a day) is read sanely. A run's other faults (a
//! misbehaving probe or responder, signals, bad flags) are in
//! `faults_run.rs`; the faults between a probe and the host (a corrupted
//! link, a probe reset, a killed QEMU) in `tests/tests/faults_link.rs`.

mod common;

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use latprobe::model::RunContext;
use latprobe::rawfile::RawWriter;
use latprobe_protocol::{
    Anomalies, Capabilities, Config, EdgeBatchBuilder, EdgeStamp, Mode, Outcome, ProbeInfo, ProbeMsg, Sample,
    SampleBatchBuilder, Stimulus, StopReason, Stopped,
};

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
        trigger_ticks: 0,
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
        let s = Sample {
            seq,
            stimulus_tick: 1_000 + (seq - first) * 100_000,
            outcome: Outcome::Response(2_000),
            triggered: false,
            late_ticks: 0,
            omitted: 0,
        };
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

/// `cmd` with a file-size limit of `limit` bytes (a full disk: writes
/// beyond it fail with EFBIG).
fn limit_file_size(cmd: &mut std::process::Command, limit: u64) {
    // SAFETY: setrlimit is async-signal-safe; it touches only the child.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit { rlim_cur: limit, rlim_max: limit };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

// A directory or an unwritable output is found before the run, and a
// failing output never costs the other one.
#[test]
fn an_output_that_is_a_directory_fails_before_the_run() {
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

// Disk full for the report: an output that fails only when written (a full disk:
// /dev/full) goes to a fallback file that is printed; the other output is
// written where asked; exit 1.
#[test]
fn disk_full_for_the_report_writes_it_to_a_printed_fallback_and_keeps_the_histfile() {
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

// Two outputs on one path (directly, or through a link), and an output
// on the input, are refused before anything is written.
#[test]
fn two_outputs_on_one_file_or_an_output_on_the_input_are_refused() {
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
    let o = probe.run(&["--count", "100", "--raw", p(&raw)]);
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

// A closed stdout (`| true`) or stderr never costs a file, nor panics.
#[test]
fn a_closed_stdout_or_stderr_costs_no_file() {
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

// A size a file claims is bounded: a JSON histogram range or a raw
// file's histfile range of 4 Gi bins is refused at once.
#[test]
fn a_crafted_histogram_range_is_refused_not_allocated() {
    let dir = tmp();
    let probe = FakeProbe::start(dir.path(), FakeOpts::default());
    let good = dir.path().join("good.json");
    let o = probe.run(&["--count", "100", "-o", p(&good)]);
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

// Sequence numbers near 2^64 do not overflow
// anywhere between the raw file and the report.
#[test]
fn sequence_numbers_near_the_end_of_u64_replay_sanely() {
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

// A failed run's raw file replays to the same report: `failed`, its
// error, its notes.
#[test]
fn a_replayed_failed_run_says_what_the_live_run_said() {
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

// `report` reads input of bounded size: /dev/zero is refused (a device is
// no file: at once, without reading it), not read until memory is gone.
#[test]
fn report_of_an_endless_input_is_refused() {
    let o = run_within(&["report", "/dev/zero"], Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("/dev/zero") && stderr(&o).contains("character device"), "{}", show(&o));
}

// An OS error is said once, not twice.
#[test]
fn an_os_error_is_printed_once() {
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
fn empty_and_random_inputs_exit_alike() {
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
fn a_schema_version_of_the_wrong_type_is_named() {
    let dir = tmp();
    let f = dir.path().join("r.json");
    std::fs::write(&f, r#"{"schema_version": "1"}"#).unwrap();
    let o = run(&["report", p(&f)]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains(r#"schema_version "1" (a string"#), "{}", show(&o));
}

#[test]
fn junk_after_a_raw_files_last_frame_is_a_bad_frame() {
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
fn a_periodic_run_without_cycles_prints_no_empty_cyclictest_line() {
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
    limit_file_size(&mut cmd, 100_000);
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

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import").join(rel)
}

/// Exit 2, naming both flags, and `kept` still holds "keep".
fn refused(o: &std::process::Output, flags: [&str; 2], kept: &Path) {
    assert_eq!(o.status.code(), Some(2), "{}", show(o));
    let err = stderr(o);
    assert!(err.contains(flags[0]) && err.contains(flags[1]), "{flags:?}: {}", show(o));
    assert_eq!(std::fs::read_to_string(kept).unwrap(), "keep", "{} was overwritten", kept.display());
}

/// A JSON report and the raw file of a short run on the fake probe.
fn recorded(dir: &Path, extra: &[&str]) -> (PathBuf, PathBuf, std::process::Output) {
    // The probe's socket in a directory of its own: a test may start another.
    let sock = dir.join("recorder");
    std::fs::create_dir_all(&sock).unwrap();
    let probe = FakeProbe::start(&sock, FakeOpts::default());
    let (out, raw) = (dir.join("r.json"), dir.join("run.raw"));
    let port = probe.port();
    let args =
        [&["run", "--port", &port, "--count", "200", "-o", p(&out), "--raw", p(&raw)][..], extra].concat();
    let o = run(&args);
    (out, raw, o)
}

// The plot files of `--plot DIR` are outputs too.
#[test]
fn plot_files_collide_with_other_outputs() {
    let dir = tmp();
    let plots = dir.path().join("plots");
    std::fs::create_dir(&plots).unwrap();
    let timeline = plots.join("timeline.svg");
    let ccdf = plots.join("ccdf.png");
    std::fs::write(&timeline, "keep").unwrap();
    std::fs::write(&ccdf, "keep").unwrap();
    let probe = FakeProbe::start(dir.path(), FakeOpts::default());
    let port = probe.port();
    let o = run(&["run", "--port", &port, "--count", "100", "--plot", p(&plots), "--raw", p(&timeline)]);
    refused(&o, ["--plot", "--raw"], &timeline);
    let o = run(&["run", "--port", &port, "--count", "100", "--plot", p(&plots), "-o", p(&ccdf)]);
    refused(&o, ["--plot", "--output"], &ccdf);
    // A plot directory that does not exist yet is checked too.
    let new = dir.path().join("new-plots");
    let inside = new.join("histogram.svg");
    let o = run(&["run", "--port", &port, "--count", "100", "--plot", p(&new), "--html", p(&inside)]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
}

// A limits file or a calibration is an input.
#[test]
fn limits_and_calibration_inputs_are_not_overwritten() {
    let dir = tmp();
    // A valid limits file, which must come out unchanged.
    let good = dir.path().join("good.toml");
    std::fs::write(&good, "max = \"1s\"\n").unwrap();
    let (report, _, o) = recorded(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let o = run(&["report", p(&report), "--limits", p(&good), "-o", p(&good)]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("--limits") && stderr(&o).contains("--output"), "{}", show(&o));
    assert_eq!(std::fs::read_to_string(&good).unwrap(), "max = \"1s\"\n");
    let o = run(&["report", p(&report), "--limits", p(&good), "--junit", p(&good)]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("--limits") && stderr(&o).contains("--junit"), "{}", show(&o));
    assert_eq!(std::fs::read_to_string(&good).unwrap(), "max = \"1s\"\n");
    let probe = FakeProbe::start(dir.path(), FakeOpts::default());
    let o = probe.run(&["--count", "10", "--limits", p(&good), "--junit", p(&good)]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert_eq!(std::fs::read_to_string(&good).unwrap(), "max = \"1s\"\n");

    // A calibration, made on a fake loopback of 370 to 390 ns.
    fn loopback(seq: u64) -> latprobe_protocol::Outcome {
        latprobe_protocol::Outcome::Response(37 + (seq % 3) as u32)
    }
    let sub = dir.path().join("loop");
    std::fs::create_dir(&sub).unwrap();
    let probe =
        FakeProbe::start(&sub, FakeOpts { outcomes: loopback, pace: Duration::ZERO, ..FakeOpts::default() });
    let cal = dir.path().join("cal.json");
    let o = run(&["calibrate", "--port", &probe.port(), "--line", "gpio", "-o", p(&cal)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let before = std::fs::read(&cal).unwrap();
    let o = probe.run(&["--mode", "gpio-echo", "--count", "10", "--calibration", p(&cal), "-o", p(&cal)]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("--calibration") && stderr(&o).contains("--output"), "{}", show(&o));
    assert_eq!(std::fs::read(&cal).unwrap(), before);

    // calibrate's two outputs.
    let c = dir.path().join("c.json");
    std::fs::write(&c, "keep").unwrap();
    let o = run(&["calibrate", "--port", &probe.port(), "--line", "gpio", "-o", p(&c), "--report", p(&c)]);
    refused(&o, ["--output", "--report"], &c);
}

// Import must not replace its input, nor one series' file with another's.
#[test]
fn import_keeps_its_inputs_and_gives_each_series_its_own_file() {
    let dir = tmp();
    let a = dir.path().join("a.json");
    std::fs::copy(fixture("cyclictest/ct_t1_nohist.json"), &a).unwrap();
    let before = std::fs::read(&a).unwrap();
    let o = run(&["import", p(&a), "-o", p(&a)]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("--output") && stderr(&o).contains("FILE"), "{}", show(&o));
    assert_eq!(std::fs::read(&a).unwrap(), before);

    // Two inputs with the same series (T0, T1) into one -o.
    let multi = dir.path().join("multi.json");
    let json_in = fixture("cyclictest/ct_t2_h100.json");
    let hist_in = fixture("cyclictest/ct_t2_h100.hist");
    let o = run(&["import", p(&json_in), p(&hist_in), "-o", p(&multi)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let written: Vec<&str> = out.lines().filter_map(|l| l.split("→ ").nth(1)).collect();
    assert_eq!(written.len(), 4, "{out}");
    let mut distinct = written.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 4, "each series has its own file: {out}");
    for w in written {
        assert_eq!(json(Path::new(w))["kind"], "in-kernel", "{w}");
    }
}

/// Run latprobe with a file-size limit of `limit` bytes (a full disk, as in
/// `disk_full_while_writing_raw_keeps_the_measurement`) and `TMPDIR` at
/// `tmpdir`.
fn run_limited(args: &[&str], limit: u64, tmpdir: &Path, cwd: &Path) -> std::process::Output {
    let mut cmd = latprobe();
    cmd.args(args).env("TMPDIR", tmpdir).current_dir(cwd);
    limit_file_size(&mut cmd, limit);
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_with_timeout(&mut child, Duration::from_secs(60))
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

// A full disk leaves no broken file at a requested path, nor a broken
// fallback; every output that could not be written is named.
#[test]
fn a_full_disk_leaves_whole_files_or_none() {
    let dir = tmp();
    let (report, _, o) = recorded(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let outs = dir.path().join("outs");
    let tmpd = dir.path().join("tmp");
    let cwd = dir.path().join("cwd");
    for d in [&outs, &tmpd, &cwd] {
        std::fs::create_dir(d).unwrap();
    }
    let (o_json, o_hist, o_html) = (outs.join("r.json"), outs.join("h.hist"), outs.join("r.html"));
    // An earlier histfile at the path stays as it was: the old file or the
    // new one, never a cut one.
    std::fs::write(&o_hist, "keep").unwrap();
    // A report of a few KB, a histfile of 1000 lines, an HTML page with
    // plots: each larger than 2 KiB.
    let o = run_limited(
        &["report", p(&report), "-o", p(&o_json), "--histfile", p(&o_hist), "--html", p(&o_html)],
        2048,
        &tmpd,
        &cwd,
    );
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let err = stderr(&o);
    for flag in ["--output", "--histfile", "--html"] {
        assert!(err.contains(flag), "{flag} is not named: {err}");
    }
    assert_eq!(names(&outs), vec!["h.hist".to_string()], "broken files left: {err}");
    assert_eq!(std::fs::read_to_string(&o_hist).unwrap(), "keep");
    for d in [&tmpd, &cwd] {
        assert_eq!(names(d), Vec::<String>::new(), "broken files left in {}: {err}", d.display());
    }
}

// A raw file cut by a full disk says how much it holds.
#[test]
fn a_cut_raw_file_says_the_bytes_and_samples_it_holds() {
    let dir = tmp();
    let probe = FakeProbe::start(dir.path(), FakeOpts { pace: Duration::ZERO, ..FakeOpts::default() });
    let (out, raw) = (dir.path().join("r.json"), dir.path().join("r.raw"));
    let o = run_limited(
        &["run", "--port", &probe.port(), "--count", "60000", "-o", p(&out), "--raw", p(&raw)],
        100_000,
        dir.path(),
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let head = std::fs::read(&raw).unwrap();
    let ctx_len = u32::from_le_bytes([head[13], head[14], head[15], head[16]]) as usize;
    let held = head.len() - 17 - ctx_len;
    let again = dir.path().join("again.json");
    let o2 = run(&["report", p(&raw), "-o", p(&again)]);
    assert_eq!(o2.status.code(), Some(0), "{}", show(&o2));
    let samples = json(&again)["counts"]["samples"].as_u64().unwrap();
    assert!(samples > 0);
    let r = json(&out);
    let notes = r["notes"].to_string();
    let expect = format!("stopped after {held} bytes of the stream ({samples} samples)");
    assert!(notes.contains(&expect), "want {expect:?} in {notes}");
}

// A --plot directory that cannot be made is found before the run.
#[test]
fn a_bad_plot_directory_fails_before_the_run() {
    let dir = tmp();
    let probe = FakeProbe::start(dir.path(), FakeOpts::default());
    let o = probe.run(&["--count", "100", "--plot", "/proc/latprobe-plots"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("--plot /proc/latprobe-plots"), "{}", show(&o));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("C:"), "no run: {}", show(&o));
    // compare --plot FILE names the fix.
    let (report, _, o) = recorded(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let file = dir.path().join("afile");
    std::fs::write(&file, "keep").unwrap();
    let o = run(&["compare", p(&report), "--plot", p(&file)]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("give a directory"), "{}", show(&o));
    assert!(!stderr(&o).contains("os error 17"), "{}", show(&o));
}

// A raw file's replay judges its run's limits, unless given new ones.
#[test]
fn a_raw_replay_judges_the_runs_limits() {
    let dir = tmp();
    let (_, raw, o) = recorded(dir.path(), &["--max", "1ns"]);
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    let again = dir.path().join("again.json");
    let o = run(&["report", p(&raw), "-o", p(&again)]);
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    let v = json(&again)["verdicts"].clone();
    assert_eq!(v.as_array().map(Vec::len), Some(1), "{v}");
    let o = run(&["report", p(&raw), "--max-timeouts", "100"]);
    assert_eq!(o.status.code(), Some(0), "new limits win: {}", show(&o));
    // A crafted percentile limit in a raw file's context is refused, as
    // --limits refuses it, not judged.
    let ctx: latprobe::model::RunContext = serde_json::from_value(serde_json::json!({
        "tool_version": "test", "source": "crafted", "started_at": "2025-01-01T00:00:00Z",
        "request": {
            "mode": "uart-echo", "interval_ns": 1_000_000, "dither_ns": 0, "timeout_ns": null,
            "guard_ns": null, "count": 10, "duration_ns": null, "seed": 1, "byte": null, "edge": "rising"
        },
        "histfile_max_us": 1000, "target": null, "notes": [],
        "limits": {
            "max_ns": null, "percentiles": [{"percent": 150.0, "limit_ns": 1}],
            "max_timeouts": null, "max_lost": null, "max_late": null
        }
    }))
    .unwrap();
    let crafted = dir.path().join("crafted.raw");
    let mut w = latprobe::rawfile::RawWriter::create(&crafted, &ctx).unwrap();
    w.finish().unwrap();
    drop(w);
    let o = run(&["report", p(&crafted)]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("percentile limit of 150"), "{}", show(&o));
}

// A dangling symbolic link as an output is followed: its target is written.
#[test]
fn a_dangling_symlink_output_writes_its_target() {
    let dir = tmp();
    let (report, _, o) = recorded(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let target = dir.path().join("target.json");
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let o = run(&["report", p(&report), "-o", p(&link)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays");
    assert_eq!(json(&target)["counts"]["samples"], 200);
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

// One CRC-valid edge whose tick jumps 2^43 ticks (a day and
// more at 100 MHz) once made `report --target-log` write 16 bytes per
// "missed" cycle (1.4 GB here, 68 GB for 2^62) and count them all as
// timeouts. Now: an anomaly named in the notes, the cycles around it
// compared with the log, no timeout, no file left in the temp dir. The
// child's file-size limit (64 MiB) keeps a regression from filling the
// disk: it fails instead.
#[test]
fn an_edge_tick_jumping_past_a_day_is_an_anomaly_not_a_flood_of_missed_cycles() {
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
    limit_file_size(&mut cmd, 64 << 20);
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
fn edge_sequence_numbers_jumping_2_62_ahead_are_named_not_a_panic() {
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
fn the_fuzz_seed_is_the_crafted_clock_jump() {
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

// `latprobe report` had no signal handler, so Ctrl-C killed it
// mid-replay (leaving its cycle file in the temp dir). Now it stops
// reading, writes what it read (complete: false, a note) and exits 0, as
// `run` does. The raw file holds a periodic run, then 32 GiB of nothing
// (sparse), so the replay is still reading when the signal comes.
#[test]
fn report_stops_reading_on_a_signal_and_writes_what_it_read() {
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

/// `cmd`, run with its address space capped at 2 GiB, at most `limit` long:
/// an input read without a cap (`/dev/zero`) ends in an allocation failure,
/// not in the machine's memory running out.
fn run_capped(args: &[&str], limit: Duration) -> std::process::Output {
    let mut cmd = latprobe();
    cmd.args(args);
    // SAFETY: setrlimit is async-signal-safe; it touches only the child.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit { rlim_cur: 2 << 30, rlim_max: 2 << 30 };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_with_timeout(&mut child, limit)
}

/// issue 43 (10): `--limits`, `--calibration` and `--target-meta` read
/// `/dev/zero` until memory ran out; `--limits`, `report FILE`, `import`
/// and `--ssh-config` on a FIFO hung for ever (and `import FIFO` said "no
/// such file"). A FIFO or a device where a file is expected is an error
/// naming the file and what it is, at once.
#[test]
fn a_fifo_or_a_device_as_an_input_is_an_error_naming_it_at_once() {
    let dir = tmp();
    let (report, _, o) = recorded(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let fifo = dir.path().join("in.fifo");
    let c = std::ffi::CString::new(p(&fifo)).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let f = p(&fifo);
    let r = p(&report);
    let hist = dir.path().join("h.hist");
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["report", f], f, "FIFO"),
        (vec!["import", f, "-o", p(&hist)], f, "FIFO"),
        (vec!["report", r, "--limits", f], f, "FIFO"),
        (vec!["report", r, "--limits", "/dev/zero"], "/dev/zero", "character device"),
        (
            vec!["run", "--port", "unix:/nonexistent", "--calibration", "/dev/zero"],
            "/dev/zero",
            "character device",
        ),
        (
            vec!["run", "--port", "unix:/nonexistent", "--target-meta", "/dev/zero"],
            "/dev/zero",
            "character device",
        ),
        (vec!["demo", "--target", "ssh://127.0.0.1:9", "--ssh-config", f], f, "FIFO"),
    ];
    for (args, file, what) in cases {
        let o = run_capped(&args, Duration::from_secs(20));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", show(&o));
        assert!(
            err.contains(file) && err.contains(what) && err.contains("not a regular file"),
            "{args:?}: {err}"
        );
    }
    assert!(!hist.exists());
    // A regular file past the cap (sparse: no disk taken) is refused by its size.
    let big = dir.path().join("big.toml");
    std::fs::File::create(&big).unwrap().set_len((256 << 20) + 1).unwrap();
    for flag in ["--limits", "--target-meta"] {
        let args = ["run", "--port", "unix:/nonexistent", flag, p(&big)];
        let o = run_capped(&args, Duration::from_secs(20));
        assert_eq!(o.status.code(), Some(2), "{flag}: {}", show(&o));
        assert!(
            stderr(&o).contains("longer than 256 MiB") && stderr(&o).contains(p(&big)),
            "{flag}: {}",
            show(&o)
        );
    }
}
