//! Hardware in the loop: the Nucleo-F411RE on a bench, driven by the real
//! `latprobe run`. These tests are `#[ignore]`d with the reason shown by the
//! test runner, and run only when `LATPROBE_BENCH_PORT` names the probe's
//! port (`bash scripts/test` then adds `--include-ignored` for them):
//!
//! ```sh
//! LATPROBE_BENCH_PORT=/dev/ttyACM0 bash scripts/test
//! ```
//!
//! Bench wiring they expect (README, "Measuring a board"): PA0 wired to PA1
//! (GPIO loopback) and PA9 wired to PA10 and PA1 (UART loopback, with the
//! PB10 wire for the TX start-bit capture). No target is needed: loopback
//! measures the probe's own offset and jitter, which must be tiny.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// The probe's port, or a failure that says how to set it: an ignored test
/// run on purpose without a bench must not pass.
fn bench_port() -> String {
    std::env::var("LATPROBE_BENCH_PORT").unwrap_or_else(|_| {
        panic!("LATPROBE_BENCH_PORT is not set: name the probe's port, e.g. LATPROBE_BENCH_PORT=/dev/ttyACM0")
    })
}

/// `latprobe`, built once with the same cargo and target dir.
fn latprobe() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let status = Command::new(cargo)
        .current_dir(&root)
        .args(["build", "-q", "-p", "latprobe"])
        .status()
        .expect("run cargo build -p latprobe");
    assert!(status.success(), "cargo build -p latprobe failed");
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    target.join("debug/latprobe")
}

/// Run a loopback measurement and return its report.
fn loopback(extra: &[&str], count: u32) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("r.json");
    let count = count.to_string();
    let mut args = vec!["run", "--mode", "loopback", "--interval", "1ms", "--count", &count];
    args.extend_from_slice(extra);
    let port = bench_port();
    let o = Command::new(latprobe())
        .args(&args)
        .args(["--port", &port, "--output"])
        .arg(&out)
        .output()
        .expect("run latprobe");
    assert!(
        o.status.success(),
        "latprobe {args:?} failed: {}\n{}{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&std::fs::read(&out).expect("report written")).expect("report is JSON")
}

fn assert_clean_hardware_run(r: &Value, n: u64) {
    assert_eq!(r["complete"], true, "{r:#}");
    assert_eq!(r["probe"]["board"], "nucleo-f411re");
    assert_eq!(r["probe"]["timer_hz"], 100_000_000);
    let caps = r["probe"]["capability_names"].to_string();
    assert!(caps.contains("hw-capture") && !caps.contains("emulated"), "{caps}");
    let c = &r["counts"];
    assert_eq!(c["samples"], n, "{c:#}");
    assert_eq!(c["timeouts"], 0, "a loopback wire always answers: {c:#}");
    for key in ["lost", "duplicates", "out_of_order", "dropped_by_probe", "overruns", "bad_frames"] {
        assert_eq!(c[key], 0, "counts.{key}: {c:#}");
    }
}

#[test]
#[ignore = "needs the bench: set LATPROBE_BENCH_PORT to the probe's port"]
fn gpio_loopback_is_a_few_ticks_with_no_jitter() {
    let r = loopback(&["--edge", "rising"], 5000);
    assert_clean_hardware_run(&r, 5000);
    // Output compare to input capture on one counter through a wire: the
    // capture filter (8 timer clocks) and synchronisation, a few 10 ns
    // ticks, the same every time.
    let l = &r["latency_ns"];
    let (min, max) = (l["min"].as_u64().unwrap(), l["max"].as_u64().unwrap());
    assert!(max < 1_000, "loopback above 1 µs: {l:#}");
    assert!(max - min <= 20, "hardware timestamps must not jitter by more than 2 ticks: {l:#}");
}

#[test]
#[ignore = "needs the bench: set LATPROBE_BENCH_PORT to the probe's port"]
fn uart_loopback_start_bit_to_start_bit_is_near_zero() {
    let r = loopback(&["--byte", "0x55"], 2000);
    assert_clean_hardware_run(&r, 2000);
    // Our own TX start bit and its loopback on RX are the same edge.
    let l = &r["latency_ns"];
    assert!(l["max"].as_u64().unwrap() < 1_000, "{l:#}");
}
