//! `latprobe run` and `latprobe report` against a scripted fake probe that
//! speaks the real protocol over a unix socket.

mod common;

use std::time::Duration;

use common::*;
use latprobe::report::histfile;
use latprobe_protocol::{Anomalies, Outcome, PROTOCOL_VERSION};

#[test]
fn count_run_writes_a_report_whose_counts_add_up() {
    let dir = tmp();
    let probe = FakeProbe::start(dir.path(), FakeOpts::default());
    let out = dir.path().join("r.json");
    let hist = dir.path().join("h.txt");
    let o = probe.run(&[
        "--count",
        "3000",
        "--histfile-max-us",
        "100",
        "--output",
        p(&out),
        "--histfile",
        p(&hist),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    assert_counts_add_up(&r);
    assert_eq!(r["schema_version"], 2);
    assert_eq!(r["complete"], true);
    assert_eq!(r["ended_by"], "count-reached");
    assert_eq!(r["counts"]["samples"], 3000);
    assert_eq!(r["counts"]["lost"], 0);
    let timeouts = (0..3000).filter(|&s| fake_outcome(s) == Outcome::Timeout).count() as u64;
    assert_eq!(timeouts, 30);
    assert_eq!(r["counts"]["timeouts"].as_u64(), Some(timeouts));
    // The probe's count of late answers reaches the report, with a note.
    assert_eq!(r["counts"]["late_responses"].as_u64(), Some(timeouts));
    assert!(
        r["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("30 late answers")),
        "{}",
        r["notes"]
    );
    // Without --byte: identity, and the default timeout of 8 intervals.
    assert_eq!(r["config"]["identity"], true);
    assert_eq!(r["config"]["stimulus"], "identified (9-byte alphabet)");
    assert_eq!(r["config"]["timeout_ns"], 8_000_000);
    // Exact figures: the fake's latencies are known.
    let lats: Vec<u64> = (0..3000u64)
        .filter_map(|s| match fake_outcome(s) {
            Outcome::Response(t) => Some(u64::from(t) * 10),
            Outcome::Timeout => None,
        })
        .collect();
    let l = &r["latency_ns"];
    assert_eq!((l["measured"].as_u64(), l["censored"].as_u64()), (Some(2970), Some(30)));
    assert_eq!(l["censored_above"], 8_000_000);
    assert_eq!(l["min"].as_u64(), lats.iter().min().copied());
    assert_eq!(l["max_measured"].as_u64(), lats.iter().max().copied());
    assert_eq!(l["mean"].as_u64(), Some(lats.iter().sum::<u64>() / lats.len() as u64));
    // Ranks over 3000 samples, the 30 timeouts on top: p99 is rank 2970,
    // the largest response (a 400 µs outlier); p99.9 and the max are
    // among the timeouts.
    assert_eq!(l["p99"], 400_000, "{l}");
    assert!(l["p99_9"].is_null() && l["p99_99"].is_null() && l["max"].is_null(), "{l}");
    assert_eq!(r["worst"]["seq"], 250);
    assert_eq!(r["worst"]["at_ns_from_start"], 250 * 1_000_000);
    assert_eq!(r["config"]["ticks"]["interval"], 100_000);
    assert_eq!(r["config"]["ticks"]["timeout"], 800_000);
    assert_eq!(r["probe"]["board"], "fake");
    // The 400 µs outliers overflow a 100 µs histogram, and so does every
    // timeout; cyclictest lists their cycles.
    let overflow_seqs: Vec<u64> =
        (0..3000).filter(|&s| s % 500 == 250 || fake_outcome(s) == Outcome::Timeout).collect();
    assert_eq!(r["histogram"]["overflows"].as_u64(), Some(overflow_seqs.len() as u64));

    let text = std::fs::read_to_string(&hist).unwrap();
    let p = histfile::parse(&text).unwrap();
    assert_eq!(p.bins.len(), 100);
    assert_eq!(p.bins.iter().map(|b| b.1).sum::<u64>(), p.total);
    assert_eq!(p.total + p.overflows, 3000);
    assert_eq!(p.overflow_cycles, overflow_seqs);
    assert_eq!(p.overflow_others, 0);
    assert_eq!(p.min_us, l["min"].as_u64().unwrap() / 1000);
    assert_eq!(p.max_us, l["max_measured"].as_u64().unwrap() / 1000);
    assert_eq!(p.avg_us, l["mean"].as_u64().unwrap() / 1000);
    assert!(
        text.contains("# latprobe: the 30 timeouts are latencies above 8000.000 us, counted as overflows"),
        "{text}"
    );
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
    // C counts every sample; the censored cells say so.
    // Max stays a number, as cyclictest prints it: the largest measured,
    // said to be so, with the censored max on the lines below.
    assert!(
        stdout.contains("C:   3000")
            && stdout.contains("Max:     400  (µs; C counts every sample, Avg and Max over the"),
        "{}",
        show(&o)
    );
    let table = stdout.lines().skip_while(|l| !l.starts_with("latency µs")).nth(1).unwrap();
    let cells: Vec<&str> = table.split_whitespace().collect();
    assert_eq!(cells[3..], ["400.00", ">8000.00", ">8000.00", ">8000.00"], "{table}");
    assert!(
        stdout.contains(
            "30 of 3000 samples timed out (>8000.00 µs): percentiles from p99.9 up and the max are censored"
        ),
        "{}",
        show(&o)
    );
    assert!(stdout.contains("worst measured 400.00 µs at sample 250, 250ms after start"), "{}", show(&o));
}

#[test]
fn lost_duplicate_and_damaged_frames_are_counted() {
    let dir = tmp();
    let probe = FakeProbe::start(dir.path(), FakeOpts { faults: true, ..FakeOpts::default() });
    let out = dir.path().join("r.json");
    let o = probe.run(&["--count", "1280", "--output", p(&out)]);
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
    let o =
        probe.run(&["--count", "2000", "--output", p(&live), "--raw", p(&raw), "--target-meta", p(&meta)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let replayed = dir.path().join("replayed.json");
    let hist = dir.path().join("h.txt");
    let o = run(&["report", p(&raw), "--output", p(&replayed), "--histfile", p(&hist)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let (mut a, mut b) = (json(&live), json(&replayed));
    assert_eq!(a["target"]["kernel"], "6.1.0-rt");
    assert_eq!(b["replayed_from"], p(&raw));
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
    let o = run(&["report", p(&replayed), "--output", p(&again), "--histfile", p(&hist2)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(json(&again), json(&replayed));
    assert_eq!(std::fs::read_to_string(&hist).unwrap(), std::fs::read_to_string(&hist2).unwrap());

    // A raw file cut short (a crash) reports what it holds, as incomplete.
    let bytes = std::fs::read(&raw).unwrap();
    let cut = dir.path().join("cut.raw");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let cut_json = dir.path().join("cut.json");
    let o = run(&["report", p(&cut), "--output", p(&cut_json)]);
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
    let o = probe.run(&["--count", "10", "--output", p(&out)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        err.contains("protocol version 9") && err.contains(&format!("version {PROTOCOL_VERSION}")),
        "{}",
        show(&o)
    );
    assert!(err.contains(&probe.path.display().to_string()), "names the port: {}", show(&o));
    assert_eq!(err.lines().filter(|l| l.starts_with("Error:")).count(), 1, "{}", show(&o));
}

#[test]
fn a_silent_probe_is_an_error_naming_the_port_and_the_report_is_written() {
    let dir = tmp();
    let probe =
        FakeProbe::start(dir.path(), FakeOpts { script: Script::SilentAfter(4), ..FakeOpts::default() });
    let out = dir.path().join("r.json");
    let o = probe.run(&["--silence-timeout", "500ms", "--output", p(&out)]);
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
        .args(["run", "--port", &probe.port(), "--duration", "60s", "--output", p(&out)])
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
    let o = run(&["run", "--port", &port, "--count", "500", "--output", p(&out)]);
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
    let o = probe.run(&["--count", "300", "--output", p(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(json(&out)["counts"]["samples"], 300);
}

#[test]
fn a_refused_configuration_is_exit_2_naming_the_flags() {
    let dir = tmp();
    let probe =
        FakeProbe::start(dir.path(), FakeOpts { script: Script::RefuseConfig, ..FakeOpts::default() });
    let o = probe.run(&["--count", "300"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("refused") && err.contains("--dither"), "{}", show(&o));
}

fn all_timeouts(_seq: u64) -> Outcome {
    Outcome::Timeout
}

#[test]
fn a_run_of_timeouts_only_is_censored_in_every_format() {
    // A target that never answers: 2000 samples, every one a timeout.
    let dir = tmp();
    let probe = FakeProbe::start(dir.path(), FakeOpts { outcomes: all_timeouts, ..FakeOpts::default() });
    let (out, hist) = (dir.path().join("r.json"), dir.path().join("h.txt"));
    let o =
        probe.run(&["--count", "2000", "--interval", "500us", "--output", p(&out), "--histfile", p(&hist)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    assert_counts_add_up(&r);
    let l = &r["latency_ns"];
    assert_eq!((l["measured"].as_u64(), l["censored"].as_u64()), (Some(0), Some(2000)), "{l}");
    // 8 intervals of 500 µs.
    assert_eq!(l["censored_above"], 4_000_000);
    for k in ["min", "mean", "p50", "p90", "p99", "p99_9", "p99_99", "max", "max_measured"] {
        assert!(l[k].is_null(), "{k} must be null: {l}");
    }
    assert!(r["worst"].is_null());
    assert_eq!(r["histogram"]["overflows"], 2000);
    assert_eq!(r["histogram"]["overflow_seqs"].as_array().unwrap().len(), 1024);
    assert!(r["histogram"]["bins"].as_array().unwrap().is_empty());

    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("C:   2000 Min:  >4000") && stdout.contains("none measured"), "{}", show(&o));
    assert!(stdout.contains("Avg:    -"), "no mean without a measured sample: {}", show(&o));
    let table = stdout.lines().skip_while(|l| !l.starts_with("latency µs")).nth(1).unwrap();
    assert_eq!(table.split_whitespace().collect::<Vec<_>>(), [">4000.00"; 7], "{table}");
    assert!(
        stdout.contains("2000 of 2000 samples timed out (>4000.00 µs): every figure is censored"),
        "{}",
        show(&o)
    );
    assert!(!stdout.contains("worst"), "no measured sample, no worst: {}", show(&o));

    // The histfile: nothing in the bins, every sample an overflow, the
    // list capped like cyclictest's with the rest counted.
    let text = std::fs::read_to_string(&hist).unwrap();
    let p = histfile::parse(&text).unwrap();
    assert_eq!((p.total, p.overflows), (0, 2000));
    assert_eq!(p.overflow_cycles, (0..1024).collect::<Vec<u64>>());
    assert_eq!(p.overflow_others, 2000 - 1024);
    assert!(text.contains(" # 00976 others\n"), "{text}");
    assert_eq!((p.min_us, p.avg_us, p.max_us), (0, 0, 0));
    assert!(text.contains("the true max is censored (>4000.000 us)"), "{text}");

    // `report` renders the same from the JSON.
    let hist2 = dir.path().join("h2.txt");
    let o2 = run(&["report", out.to_str().unwrap(), "--histfile", hist2.to_str().unwrap()]);
    assert_eq!(o2.status.code(), Some(0), "{}", show(&o2));
    assert_eq!(std::fs::read_to_string(&hist2).unwrap(), text);
    assert!(String::from_utf8_lossy(&o2.stdout).contains("every figure is censored"));
}

#[test]
fn a_fixed_byte_turns_identity_off_and_anomalies_reach_every_output() {
    let dir = tmp();
    let anomalies = Anomalies {
        late: 9,
        duplicates: 5,
        unmatched: 6,
        wrong_bytes: 4,
        slipped: 3,
        slip_max_ticks: 12_345,
        slip_total_ticks: 20_000,
        reclaimed: 2,
        overcaptures: 7,
        line_errors: 8,
        soft_stimuli: 10,
        host_rx_errors: 11,
    };
    let probe = FakeProbe::start(dir.path(), FakeOpts { anomalies: Some(anomalies), ..FakeOpts::default() });
    let out = dir.path().join("r.json");
    let o = probe.run(&["--count", "500", "--byte", "0x55", "--output", p(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    assert_counts_add_up(&r);
    assert_eq!(r["config"]["identity"], false);
    assert_eq!(r["config"]["stimulus"], "byte 0x55");
    // One in flight: the interval less the guard.
    assert_eq!(r["config"]["timeout_ns"], 900_000);
    let c = &r["counts"];
    let got: Vec<u64> = [
        "late_responses",
        "duplicate_answers",
        "unmatched",
        "wrong_bytes",
        "slipped",
        "slip_max_ns",
        "slip_total_ns",
        "reclaimed",
        "overcaptures",
        "line_errors",
        "soft_stimuli",
        "host_rx_errors",
    ]
    .iter()
    .map(|k| c[k].as_u64().unwrap_or_else(|| panic!("counts.{k}: {c}")))
    .collect();
    assert_eq!(got, [9, 5, 6, 4, 3, 123_450, 200_000, 2, 7, 8, 10, 11], "{c}");
    let notes: Vec<&str> = r["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    let has = |needle: &str| notes.iter().any(|n| n.contains(needle));
    assert!(has("identity is off (byte 0x55, fixed)"), "{notes:?}");
    assert!(has("9 late answers"), "{notes:?}");
    assert!(
        has("3 stimuli waited for the previous sample and its guard to end") && has("longest 123.45us"),
        "{notes:?}"
    );
    assert!(has("2 identities were taken back") && has("credited to a newer stimulus"), "{notes:?}");
    assert!(has("5 answers repeated the identity"), "{notes:?}");
    assert!(has("6 answers matched no stimulus"), "{notes:?}");
    assert!(has("4 answer bytes were outside the identity alphabet"), "{notes:?}");
    assert!(has("7 captures were overwritten") && has("8 receive errors"), "{notes:?}");
    assert!(has("10 stimuli were timed by the probe's software"), "{notes:?}");
    assert!(has("11 receive errors on the probe's host link"), "{notes:?}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(
            "anomalies: late 9  duplicate answers 5  unmatched 6  wrong bytes 4  slipped 3 (longest \
             123.45us)  reclaimed 2  overcaptures 7  line errors 8  soft-timed stimuli 10  host-link receive \
             errors 11"
        ),
        "{}",
        show(&o)
    );
    assert!(stdout.contains("stimulus byte 0x55, identity off: one in flight"), "{}", show(&o));
}

#[test]
fn identity_slips_are_explained_as_a_target_answering_about_the_horizon_late() {
    let dir = tmp();
    let anomalies =
        Anomalies { slipped: 4, slip_max_ticks: 250_000, slip_total_ticks: 600_000, ..Anomalies::default() };
    let probe = FakeProbe::start(dir.path(), FakeOpts { anomalies: Some(anomalies), ..FakeOpts::default() });
    let out = dir.path().join("r.json");
    let o = probe.run(&["--count", "300", "--output", p(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    let notes = r["notes"].to_string();
    assert!(
        notes.contains(
            "4 stimuli waited for a free identity: the target had not yet answered any later stimulus"
        ) && notes.contains("longest 2.5ms"),
        "{notes}"
    );
    assert!(!notes.contains("identity is off"), "{notes}");
}

/// A report as latprobe wrote it with schema_version 1: 1000 samples, 10
/// timeouts above 500 µs, latency figures over the 990 responses only.
const V1_REPORT: &str = r#"{
  "schema_version": 1, "tool_version": "0.1.0", "complete": true, "ended_by": "count-reached",
  "error": null, "source": "/dev/ttyACM0", "replayed_from": null, "probe": null,
  "config": { "mode": "uart-echo", "interval_ns": 1000000, "dither_ns": 0, "timeout_ns": 500000,
    "guard_ns": 100000, "count": 1000, "duration_ns": null, "seed": 1, "stimulus": "byte 0x55",
    "ticks": null },
  "started_at": "2025-01-01T00:00:00Z", "ended_at": "2025-01-01T00:00:01Z", "probe_elapsed_ns": 1000000000,
  "counts": { "samples": 1000, "responses": 990, "timeouts": 10, "lost": 0, "duplicates": 0,
    "out_of_order": 0, "dropped_by_probe": 0, "overruns": 0, "late_responses": 10, "bad_frames": 0,
    "probe_taken": 1000 },
  "latency_ns": { "min": 10000, "max": 400000, "mean": 50000, "p50": 45000, "p90": 60000, "p99": 90000,
    "p99_9": 300000, "p99_99": 400000 },
  "worst": { "seq": 250, "latency_ns": 400000, "at_ns_from_start": 250000000 },
  "histogram": { "bin_ns": 1000, "max_us": 1000, "bins": [[45, 989], [400, 1]], "overflows": 0,
    "overflow_seqs": [] },
  "target": null, "periodic": null, "notes": []
}"#;

#[test]
fn a_version_1_report_is_still_read_and_converted() {
    let dir = tmp();
    let v1 = dir.path().join("v1.json");
    std::fs::write(&v1, V1_REPORT).unwrap();
    let (out, hist) = (dir.path().join("v2.json"), dir.path().join("h.txt"));
    let o = run(&["report", p(&v1), "--output", p(&out), "--histfile", p(&hist)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    assert_eq!(r["schema_version"], 2);
    assert_counts_add_up(&r);
    let l = &r["latency_ns"];
    // Kept: what lies among the responses (p99 is rank 990 of 1000).
    assert_eq!(
        (l["p50"].as_u64(), l["p99"].as_u64(), l["max_measured"].as_u64()),
        (Some(45_000), Some(90_000), Some(400_000))
    );
    // Censored: what falls among the 10 timeouts.
    assert!(l["p99_9"].is_null() && l["p99_99"].is_null() && l["max"].is_null(), "{l}");
    assert_eq!(l["censored_above"], 500_000);
    let note = r["notes"][0].as_str().unwrap();
    assert!(note.contains("over the 990 responses only and left out the 10 timeouts"), "{note}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("10 of 1000 samples timed out (>500.00 µs)"), "{}", show(&o));
    let p = histfile::parse(&std::fs::read_to_string(&hist).unwrap()).unwrap();
    assert_eq!((p.total, p.overflows, p.overflow_others), (990, 10, 10));
    // Another version is refused, naming both.
    let v9 = dir.path().join("v9.json");
    std::fs::write(&v9, V1_REPORT.replace("\"schema_version\": 1", "\"schema_version\": 9")).unwrap();
    let o = run(&["report", v9.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("schema_version 9, this latprobe reads versions 1 and 2")
    );
}

#[test]
fn a_raw_file_of_another_protocol_version_is_a_clear_error() {
    use latprobe::model::RunContext;
    use latprobe::model::{EdgeArg, ModeArg, Request};
    use latprobe::rawfile::RawWriter;
    let dir = tmp();
    let raw = dir.path().join("old.raw");
    let ctx = RunContext {
        tool_version: "0.0.1".into(),
        source: "/dev/ttyACM0".into(),
        started_at: "2025-01-01T00:00:00Z".into(),
        request: Request {
            mode: ModeArg::UartEcho,
            interval_ns: 1_000_000,
            dither_ns: 0,
            timeout_ns: None,
            guard_ns: None,
            count: Some(10),
            duration_ns: None,
            seed: 1,
            byte: Some(0x55),
            edge: EdgeArg::Rising,
            line: None,
            calibration: None,
            trigger_ns: None,
        },
        histfile_max_us: 1000,
        target: None,
        notes: Vec::new(),
        started_unix_ns: None,
        limits: None,
        command_line: None,
        loads: Vec::new(),
        phases: Vec::new(),
    };
    let mut w = RawWriter::create(&raw, &ctx).unwrap();
    w.append(&hello_frame_of_version(1)).unwrap();
    w.finish().unwrap();
    drop(w);
    let o = run(&["report", p(&raw)]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let want = format!("protocol version 1; this latprobe reads version {PROTOCOL_VERSION}");
    assert!(err.contains(&want), "{}", show(&o));
}
