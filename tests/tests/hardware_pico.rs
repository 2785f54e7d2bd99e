//! Hardware in the loop: the Raspberry Pi Pico on a bench, driven by the
//! real `latprobe`, step by step as docs/book/src/getting-started/first-bench-pico.md lays out.
//! These tests are `#[ignore]`d with the reason the test runner shows; on a
//! bench `bash scripts/test` runs them when `LATPROBE_BENCH_PICO_PORT`
//! names the Pico's USB CDC port (and `LATPROBE_BENCH_PICO_PROBE` its
//! CMSIS-DAP debug probe, for the flash step):
//!
//! ```sh
//! LATPROBE_BENCH_PICO_PORT=/dev/ttyACM0 LATPROBE_BENCH_PICO_WIRING=gpio bash scripts/test   # GP2 wired to GP3
//! LATPROBE_BENCH_PICO_PORT=/dev/ttyACM0 LATPROBE_BENCH_PICO_WIRING=uart bash scripts/test   # GP4 wired to GP5
//! ```
//!
//! A test for the other wiring says it was skipped and why; with no wiring
//! named, the loopback tests fail and say how to name it. The same steps run
//! in rp2040js in CI (`tests/tests/rp2040.rs`), where the figures are the
//! emulator's: a board that differs shows which model is wrong.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// One 62.5 MHz PIO tick, in ns.
const TICK_NS: u64 = 16;

/// The Pico's CDC port, or a failure that says how to set it.
fn pico_port() -> String {
    std::env::var("LATPROBE_BENCH_PICO_PORT").unwrap_or_else(|_| {
        panic!("LATPROBE_BENCH_PICO_PORT is not set: name the Pico's port, e.g. LATPROBE_BENCH_PICO_PORT=/dev/ttyACM0")
    })
}

/// Whether the bench is wired for `want` (`gpio` or `uart`); if not, say so.
fn wired_for(want: &str) -> bool {
    let have = std::env::var("LATPROBE_BENCH_PICO_WIRING").unwrap_or_default();
    assert!(
        have == "gpio" || have == "uart",
        "LATPROBE_BENCH_PICO_WIRING is {have:?}: set it to gpio (GP2 wired to GP3) or uart (GP4 wired to GP5), \
         the loopback wired now (docs/book/src/getting-started/first-bench-pico.md)"
    );
    if have != want {
        eprintln!("SKIPPED: this test needs the {want} loopback and the bench is wired for {have}: rewire and run again");
    }
    have == want
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

/// A loopback run on the Pico: its report, checked to be a clean hardware
/// run of `count` samples (nothing lost, no timeout, no stimulus made in
/// software, PIO's timer).
fn loopback(line: &str, interval: &str, count: u32) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("r.json");
    let n = count.to_string();
    let args = ["run", "--mode", "loopback", "--line", line, "--interval", interval, "--count", &n];
    let o = Command::new(latprobe())
        .args(args)
        .args(["--port", &pico_port(), "--output"])
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
    let r: Value = serde_json::from_slice(&std::fs::read(&out).expect("report written")).expect("JSON");
    assert_eq!(r["complete"], true, "{r:#}");
    assert_eq!(r["probe"]["board"], "rp2040-pico");
    assert_eq!(r["probe"]["timer_hz"], 62_500_000);
    let caps = r["probe"]["capability_names"].to_string();
    assert!(caps.contains("hw-capture") && !caps.contains("emulated"), "{caps}");
    let c = &r["counts"];
    assert_eq!(c["samples"], u64::from(count), "{c:#}");
    for key in [
        "timeouts",
        "lost",
        "duplicates",
        "out_of_order",
        "dropped_by_probe",
        "overruns",
        "bad_frames",
        "soft_stimuli",
    ] {
        assert_eq!(c[key], 0, "counts.{key}: {c:#}");
    }
    r
}

fn min_max(r: &Value) -> (u64, u64) {
    let l = &r["latency_ns"];
    (
        l["min"].as_u64().unwrap_or_else(|| panic!("{l:#}")),
        l["max"].as_u64().unwrap_or_else(|| panic!("{l:#}")),
    )
}

/// Step 1: GPIO loopback (GP2 wired to GP3). The edge is made and timed by
/// PIO on one count: every latency is the same whole number of ticks, a
/// few at most (2 in rp2040js, 3 expected on silicon with the input
/// synchroniser's two clocks).
#[test]
#[ignore = "needs the Pico bench: set LATPROBE_BENCH_PICO_PORT and LATPROBE_BENCH_PICO_WIRING=gpio"]
fn pico_step1_gpio_loopback_is_a_few_ticks_with_no_jitter() {
    if !wired_for("gpio") {
        return;
    }
    let r = loopback("gpio", "1ms", 10_000);
    let (min, max) = min_max(&r);
    eprintln!("GPIO loopback: min {min} ns, max {max} ns");
    assert_eq!(min, max, "zero jitter: one count makes and times the edge");
    assert_eq!(min % TICK_NS, 0, "on the tick");
    assert!(min <= 4 * TICK_NS, "{min} ns: more than 4 ticks between pad and pad");
}

/// Step 2: UART loopback (GP4 wired to GP5): start bit to start bit, both
/// timed by PIO, within two ticks of 0.
#[test]
#[ignore = "needs the Pico bench: set LATPROBE_BENCH_PICO_PORT and LATPROBE_BENCH_PICO_WIRING=uart"]
fn pico_step2_uart_loopback_start_bit_to_start_bit_is_near_zero() {
    if !wired_for("uart") {
        return;
    }
    let r = loopback("uart", "2ms", 5_000);
    let (min, max) = min_max(&r);
    eprintln!("UART loopback: min {min} ns, max {max} ns");
    assert!(max <= 2 * TICK_NS, "{max} ns: the two start bits are more than two ticks apart");
}

/// Step 3: the schedule the probe keeps. In rp2040js it keeps 120 µs; the
/// board must too, with nothing lost and every latency still one value.
#[test]
#[ignore = "needs the Pico bench: set LATPROBE_BENCH_PICO_PORT and LATPROBE_BENCH_PICO_WIRING=gpio"]
fn pico_step3_a_120us_schedule_is_kept_with_nothing_lost() {
    if !wired_for("gpio") {
        return;
    }
    let r = loopback("gpio", "120us", 20_000);
    let (min, max) = min_max(&r);
    assert_eq!(min, max, "every latency one value at 120 µs too");
    eprintln!("120 µs: {:#}", r["counts"]);
}

/// The Pico: `latprobe flash --board rp2040-pico` through a CMSIS-DAP debug
/// probe (the Raspberry Pi Debug Probe, or a Pico running debugprobe)
/// wired to its SWD pins, the Pico's own USB plugged into this machine.
/// flash finds the Pico's USB CDC port by its ids once it has enumerated
/// after the reset and prints the Hello: board rp2040-pico, the PIO tick
/// of 62.5 MHz. With LATPROBE_BENCH_PICO_PORT (its port, as `latprobe
/// list` shows it) a second flash waits on that port and finds the image
/// in place.
#[test]
#[ignore = "needs the bench: set LATPROBE_BENCH_PICO_PROBE (VID:PID[:SERIAL] of the Pico's CMSIS-DAP probe)"]
fn pico_flash_then_hello() {
    let Ok(probe) = std::env::var("LATPROBE_BENCH_PICO_PROBE") else {
        eprintln!(
            "SKIPPED: flashing the Pico needs its CMSIS-DAP debug probe named: set \
             LATPROBE_BENCH_PICO_PROBE=VID:PID[:SERIAL] (`latprobe list` shows it, e.g. 2e8a:000c:E6614C31…)"
        );
        return;
    };
    let exe = latprobe();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(&root)
        .args(["fw-pico", "-q"])
        .status()
        .expect("run cargo fw-pico");
    assert!(status.success(), "cargo fw-pico failed (needs `rustup target add thumbv6m-none-eabi`)");
    let flash = |extra: &[&str]| {
        let o = Command::new(&exe)
            .args(["flash", "--board", "rp2040-pico", "--probe", &probe])
            .args(extra)
            .current_dir(&root)
            .output()
            .expect("run latprobe flash");
        let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "latprobe flash --board rp2040-pico {extra:?} failed:\n{said}");
        eprintln!("{said}");
        said
    };
    let said = flash(&["--force"]);
    assert!(said.contains("board rp2040-pico") && said.contains("timer 62500000 Hz"), "{said}");
    assert!(said.contains("flashing"), "--force programs the chip:\n{said}");
    if let Ok(port) = std::env::var("LATPROBE_BENCH_PICO_PORT") {
        let said = flash(&["--port", &port]);
        assert!(said.contains("already held") && said.contains("board rp2040-pico"), "{said}");
    } else {
        eprintln!(
            "(no second flash over --port: set LATPROBE_BENCH_PICO_PORT to the Pico's CDC port for it)"
        );
    }
}
