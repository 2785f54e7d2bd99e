//! `latprobe run` and `latprobe report` against a scripted fake probe that
//! speaks the real protocol over a unix socket.

mod common;

use std::time::Duration;

use common::*;
use latprobe::report::histfile;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

#[test]
fn count_run_writes_a_report_whose_counts_add_up() {
    let dir = tmp();
    let probe = FakeProbe::start(dir.path(), FakeOpts::default());
    let out = dir.path().join("r.json");
    let hist = dir.path().join("h.txt");
    let o = run(&[
        "run",
        "--port",
        &probe.port(),
        "--count",
        "3000",
        "--histfile-max-us",
        "100",
        "--output",
        out.to_str().unwrap(),
        "--histfile",
        hist.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    assert_counts_add_up(&r);
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["complete"], true);
    assert_eq!(r["ended_by"], "count-reached");
    assert_eq!(r["counts"]["samples"], 3000);
    assert_eq!(r["counts"]["lost"], 0);
    let timeouts = (0..3000).filter(|&s| fake_outcome(s) == latprobe_protocol::Outcome::Timeout).count();
    assert_eq!(r["counts"]["timeouts"].as_u64(), Some(timeouts as u64));
    // The probe's count of late answers reaches the report, with a note.
    assert_eq!(r["counts"]["late_responses"].as_u64(), Some(timeouts as u64));
    assert!(
        r["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("after their timeout")),
        "{}",
        r["notes"]
    );
    // Exact figures: the fake's latencies are known.
    let lats: Vec<u64> = (0..3000u64)
        .filter_map(|s| match fake_outcome(s) {
            latprobe_protocol::Outcome::Response(t) => Some(u64::from(t) * 10),
            latprobe_protocol::Outcome::Timeout => None,
        })
        .collect();
    assert_eq!(r["latency_ns"]["min"].as_u64(), lats.iter().min().copied());
    assert_eq!(r["latency_ns"]["max"].as_u64(), lats.iter().max().copied());
    assert_eq!(r["latency_ns"]["mean"].as_u64(), Some(lats.iter().sum::<u64>() / lats.len() as u64));
    assert_eq!(r["worst"]["seq"], 250);
    assert_eq!(r["worst"]["at_ns_from_start"], 250 * 1_000_000);
    assert_eq!(r["config"]["ticks"]["interval"], 100_000);
    assert_eq!(r["probe"]["board"], "fake");
    // The 400 µs outliers overflow a 100 µs histogram; cyclictest lists their cycles.
    let overflow_seqs: Vec<u64> = (0..3000).filter(|s| s % 500 == 250).collect();
    assert_eq!(r["histogram"]["overflows"].as_u64(), Some(overflow_seqs.len() as u64));

    let text = std::fs::read_to_string(&hist).unwrap();
    let p = histfile::parse(&text).unwrap();
    assert_eq!(p.bins.len(), 100);
    assert_eq!(p.bins.iter().map(|b| b.1).sum::<u64>(), p.total);
    assert_eq!(p.total + p.overflows, r["counts"]["responses"].as_u64().unwrap());
    assert_eq!(p.overflow_cycles, overflow_seqs);
    assert_eq!(p.min_us, r["latency_ns"]["min"].as_u64().unwrap() / 1000);
    assert_eq!(p.max_us, r["latency_ns"]["max"].as_u64().unwrap() / 1000);
    assert_eq!(p.avg_us, r["latency_ns"]["mean"].as_u64().unwrap() / 1000);
    for line in [
        "# Histogram",
        "# Total:",
        "# Min Latencies:",
        "# Avg Latencies:",
        "# Max Latencies:",
        "# Histogram Overflows:",
        "# Histogram Overflow at cycle number:",
    ] {
        assert!(text.lines().any(|l| l.starts_with(line)), "histfile lacks {line}");
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("Min:") && stdout.contains("p99.99"), "{}", show(&o));
}

#[test]
fn lost_duplicate_and_damaged_frames_are_counted() {
    let dir = tmp();
    let probe = FakeProbe::start(dir.path(), FakeOpts { faults: true, ..FakeOpts::default() });
    let out = dir.path().join("r.json");
    let o = run(&["run", "--port", &probe.port(), "--count", "1280", "--output", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    assert_counts_add_up(&r);
    assert_eq!(r["counts"]["lost"], BATCH, "{}", r["counts"]);
    assert_eq!(r["counts"]["duplicates"], BATCH, "{}", r["counts"]);
    assert_eq!(r["counts"]["bad_frames"], 1, "{}", r["counts"]);
    assert_eq!(r["counts"]["samples"], 1280 - BATCH);
}

#[test]
fn replaying_the_raw_file_gives_the_same_report() {
    let dir = tmp();
    let probe = FakeProbe::start(dir.path(), FakeOpts { faults: true, ..FakeOpts::default() });
    let live = dir.path().join("live.json");
    let raw = dir.path().join("run.raw");
    let meta = dir.path().join("meta.json");
    std::fs::write(&meta, r#"{"kernel": "6.1.0-rt", "cpus": 4}"#).unwrap();
    let o = run(&[
        "run",
        "--port",
        &probe.port(),
        "--count",
        "2000",
        "--output",
        live.to_str().unwrap(),
        "--raw",
        raw.to_str().unwrap(),
        "--target-meta",
        meta.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let replayed = dir.path().join("replayed.json");
    let hist = dir.path().join("h.txt");
    let o = run(&[
        "report",
        raw.to_str().unwrap(),
        "--output",
        replayed.to_str().unwrap(),
        "--histfile",
        hist.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let (mut a, mut b) = (json(&live), json(&replayed));
    assert_eq!(a["target"]["kernel"], "6.1.0-rt");
    assert_eq!(b["replayed_from"], raw.to_str().unwrap());
    // The only fields that may differ: when the run ended (a replay takes the
    // raw file's modification time) and where the replay read from.
    for k in ["ended_at", "replayed_from"] {
        a.as_object_mut().unwrap().remove(k);
        b.as_object_mut().unwrap().remove(k);
    }
    assert_eq!(a, b);
    // A JSON report renders the same outputs again.
    let again = dir.path().join("again.json");
    let hist2 = dir.path().join("h2.txt");
    let o = run(&[
        "report",
        replayed.to_str().unwrap(),
        "--output",
        again.to_str().unwrap(),
        "--histfile",
        hist2.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(json(&again), json(&replayed));
    assert_eq!(std::fs::read_to_string(&hist).unwrap(), std::fs::read_to_string(&hist2).unwrap());

    // A raw file cut short (a crash) reports what it holds, as incomplete.
    let bytes = std::fs::read(&raw).unwrap();
    let cut = dir.path().join("cut.raw");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let cut_json = dir.path().join("cut.json");
    let o = run(&["report", cut.to_str().unwrap(), "--output", cut_json.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let c = json(&cut_json);
    assert_eq!(c["complete"], false);
    assert_eq!(c["ended_by"], "stream-ended");
    let n = c["counts"]["samples"].as_u64().unwrap();
    assert!(n > 0 && n < 2000, "{}", c["counts"]);
}

#[test]
fn a_probe_of_another_protocol_version_is_a_clear_error() {
    let dir = tmp();
    let probe =
        FakeProbe::start(dir.path(), FakeOpts { script: Script::OtherVersion(9), ..FakeOpts::default() });
    let out = dir.path().join("r.json");
    let o = run(&["run", "--port", &probe.port(), "--count", "10", "--output", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(err.contains("protocol version 9") && err.contains("version 1"), "{}", show(&o));
    assert!(err.contains(&probe.path.display().to_string()), "names the port: {}", show(&o));
    assert_eq!(err.lines().filter(|l| l.starts_with("Error:")).count(), 1, "{}", show(&o));
}

#[test]
fn a_silent_probe_is_an_error_naming_the_port_and_the_report_is_written() {
    let dir = tmp();
    let probe =
        FakeProbe::start(dir.path(), FakeOpts { script: Script::SilentAfter(4), ..FakeOpts::default() });
    let out = dir.path().join("r.json");
    let o = run(&[
        "run",
        "--port",
        &probe.port(),
        "--silence-timeout",
        "500ms",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no data from the probe on") && err.contains(&probe.port()), "{}", show(&o));
    let r = json(&out);
    assert_eq!(r["complete"], false);
    assert_eq!(r["ended_by"], "failed");
    assert_eq!(r["counts"]["samples"], 4 * BATCH);
    assert!(r["error"].as_str().unwrap().contains("no data"));
    assert_counts_add_up(&r);
}

#[test]
fn sigint_mid_run_writes_the_report_with_complete_false() {
    let dir = tmp();
    let probe =
        FakeProbe::start(dir.path(), FakeOpts { pace: Duration::from_millis(20), ..FakeOpts::default() });
    let out = dir.path().join("r.json");
    let mut child = latprobe()
        .args(["run", "--port", &probe.port(), "--duration", "60s", "--output", out.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: kill(2) on the pid of our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let o = wait_with_timeout(&mut child, Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    assert_eq!(r["complete"], false);
    assert_eq!(r["ended_by"], "interrupted");
    assert!(r["counts"]["samples"].as_u64().unwrap() > 0);
    assert_counts_add_up(&r);
}

#[test]
fn a_serial_device_works_like_a_socket() {
    // A pty stands in for /dev/ttyACM0: the serialport path, timeouts and all.
    let probe = PtyProbe::start(FakeOpts::default());
    let dir = tmp();
    let out = dir.path().join("r.json");
    let port = probe.slave.to_str().unwrap().to_string();
    let o = run(&["run", "--port", &port, "--count", "500", "--output", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    assert_eq!(r["source"], port.as_str());
    assert_eq!(r["counts"]["samples"], 500);
    assert_counts_add_up(&r);
}

#[test]
fn line_noise_is_not_taken_for_a_refusal() {
    // A probe that reports a damaged frame (garbage before we came) and
    // then accepts the configuration: the run goes on.
    let dir = tmp();
    let probe = FakeProbe::start(dir.path(), FakeOpts { noise: true, ..FakeOpts::default() });
    let out = dir.path().join("r.json");
    let o = run(&["run", "--port", &probe.port(), "--count", "300", "--output", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(json(&out)["counts"]["samples"], 300);
}

#[test]
fn a_refused_configuration_is_exit_2_naming_the_flags() {
    let dir = tmp();
    let probe =
        FakeProbe::start(dir.path(), FakeOpts { script: Script::RefuseConfig, ..FakeOpts::default() });
    let o = run(&["run", "--port", &probe.port(), "--count", "300"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("refused") && err.contains("--dither"), "{}", show(&o));
}
