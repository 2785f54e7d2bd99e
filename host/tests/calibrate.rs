//! `latprobe calibrate` and `run --calibration`: a simulated loopback with a
//! known offset calibrates to that offset, a run with the calibration has a
//! residual median of 0 ticks, and a calibration for another board,
//! firmware or line is refused before anything is measured.

mod common;

use common::*;
use latprobe_protocol::Outcome;

/// The fake probe's loopback: 37, 38 or 39 ticks of 10 ns (median 38).
fn loopback(seq: u64) -> Outcome {
    Outcome::Response(37 + (seq % 3) as u32)
}

fn fake(dir: &std::path::Path) -> FakeProbe {
    FakeProbe::start(
        dir,
        FakeOpts { outcomes: loopback, pace: std::time::Duration::ZERO, ..FakeOpts::default() },
    )
}

#[test]
fn a_known_loopback_offset_calibrates_and_leaves_a_residual_median_of_zero() {
    let dir = tempfile::tempdir().unwrap();
    let cal = dir.path().join("cal.json");
    let probe = fake(dir.path());
    let o = run(&["calibrate", "--port", &probe.port(), "--line", "gpio", "-o", p(&cal)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    drop(probe);
    let c = json(&cal);
    assert_eq!(c["kind"], "latprobe-calibration");
    assert_eq!((c["board"].as_str(), c["line"].as_str()), (Some("fake"), Some("gpio")));
    assert_eq!(c["offset_ns"], 380, "the median loopback latency: {c:#}");
    assert_eq!((c["min_ns"].as_u64(), c["max_ns"].as_u64()), (Some(370), Some(390)), "{c:#}");
    assert!(c["samples"].as_u64().unwrap() >= 10_000, "{c:#}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("offset 380ns"), "{}", show(&o));

    // The same probe measured with the calibration: what is left is 0.
    let dir2 = tempfile::tempdir().unwrap();
    let probe = fake(dir2.path());
    let out = dir2.path().join("r.json");
    let o = probe.run(&["--mode", "gpio-echo", "--count", "10000", "--calibration", p(&cal), "-o", p(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    let l = &r["latency_ns"];
    assert_eq!(l["p50"], 0, "residual median, ticks: {l:#}");
    assert_eq!((l["min"].as_u64(), l["max"].as_u64()), (Some(0), Some(10)), "{l:#}");
    assert_eq!(r["config"]["calibration"]["offset_ns"], 380, "{:#}", r["config"]);
    let notes = r["notes"].to_string();
    assert!(notes.contains("calibrated: 380ns subtracted from every latency"), "{notes}");
    assert!(!notes.contains("faster than the probe"), "jitter is not a misfit: {notes}");
}

#[test]
fn a_calibration_for_another_board_firmware_or_line_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cal = dir.path().join("cal.json");
    let probe = fake(dir.path());
    let o = run(&["calibrate", "--port", &probe.port(), "--line", "gpio", "-o", p(&cal)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    drop(probe);
    let good = json(&cal);
    for (field, value, mode, says) in [
        ("board", "nucleo-f411re", "gpio-echo", "on board nucleo-f411re, this run uses fake"),
        ("firmware_version", "9.9.9", "gpio-echo", "with firmware 9.9.9"),
        ("line", "gpio", "uart-echo", "on the line gpio, this run uses uart"),
    ] {
        let mut c = good.clone();
        c[field] = serde_json::Value::String(value.into());
        let f = dir.path().join(format!("bad-{field}.json"));
        std::fs::write(&f, c.to_string()).unwrap();
        let d = tempfile::tempdir().unwrap();
        let probe = fake(d.path());
        let o = probe.run(&["--mode", mode, "--count", "100", "--calibration", p(&f)]);
        assert_eq!(o.status.code(), Some(2), "{field}: {}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says) && err.contains("latprobe calibrate"), "{field}: {err}");
    }
    // Too few samples, and a loopback without its line, are usage errors.
    let o = run(&["calibrate", "--port", "unix:/nonexistent", "--line", "uart", "--count", "100"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("at least 10000"), "{}", show(&o));
    let o = run(&["run", "--port", "unix:/nonexistent", "--mode", "loopback"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--line gpio"), "{}", show(&o));
    // A loopback has no target: --target is refused with why and what to do.
    let o = run(&["calibrate", "--port", "unix:/nonexistent", "--line", "gpio", "--target", "ssh://dut"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("no target is in the loop") && e.contains("latprobe run --target ssh://dut --calibration"),
        "{e}"
    );
}

/// 10 ticks: faster than the calibrated loopback ever was.
fn too_fast(_: u64) -> Outcome {
    Outcome::Response(10)
}

#[test]
fn latencies_faster_than_the_calibrated_probe_say_the_calibration_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let cal = dir.path().join("cal.json");
    let probe = fake(dir.path());
    let o = run(&["calibrate", "--port", &probe.port(), "--line", "uart", "-o", p(&cal)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    drop(probe);
    let d = tempfile::tempdir().unwrap();
    let probe = FakeProbe::start(d.path(), FakeOpts { outcomes: too_fast, ..FakeOpts::default() });
    let out = d.path().join("r.json");
    let o = probe.run(&["--count", "200", "--calibration", p(&cal), "-o", p(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&out);
    assert_eq!(r["latency_ns"]["max"], 0, "{:#}", r["latency_ns"]);
    let notes = r["notes"].to_string();
    assert!(notes.contains("200 measured latencies were faster than the probe's own loopback"), "{notes}");
}
