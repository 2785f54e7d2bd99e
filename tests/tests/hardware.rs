//! Hardware in the loop: the Nucleo-F411RE on a bench, driven by the real
//! `latprobe run`. These tests are `#[ignore]`d with the reason shown by the
//! test runner, and run only when `LATPROBE_BENCH_PORT` names the probe's
//! port (`bash scripts/test` then adds `--include-ignored` for them). They
//! follow docs/book/src/getting-started/first-bench-nucleo.md step by step.
//!
//! ```sh
//! LATPROBE_BENCH_PORT=/dev/ttyACM0 LATPROBE_BENCH_WIRING=gpio bash scripts/test
//! LATPROBE_BENCH_PORT=/dev/ttyACM0 LATPROBE_BENCH_WIRING=uart bash scripts/test
//! ```
//!
//! The Raspberry Pi Pico's bench is `tests/tests/hardware_pico.rs`.
//!
//! One loopback is wired at a time, never both: PA0 (TIM2 CH1, push-pull,
//! resting low) and PA9 (USART1 TX, idle high) must never share a node, or
//! the two outputs fight through PA1. `LATPROBE_BENCH_WIRING` says which:
//!
//! ```text
//!   gpio:  PA0 (A0) ──────────────── PA1 (A1)                 nothing on PA9
//!   uart:  PA9 (D8) ──┬───────────── PA10 (D2)   USART1 RX    nothing on PA0
//!                     ├───────────── PA1 (A1)    TIM2 CH2: the answer's start bit
//!                     └───────────── PB10 (D6)   TIM2 CH3: our own start bit
//! ```
//!
//! A test for the other wiring says that it was skipped and why on stderr
//! (rewire and run again); with no wiring named, every test fails and says
//! how to name it. No target is needed: loopback measures the probe's own
//! offset and jitter, which must be tiny.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A loopback wiring of the bench.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wiring {
    Gpio,
    Uart,
}

/// The probe's port, or a failure that says how to set it: an ignored test
/// run on purpose without a bench must not pass.
fn bench_port() -> String {
    std::env::var("LATPROBE_BENCH_PORT").unwrap_or_else(|_| {
        panic!("LATPROBE_BENCH_PORT is not set: name the probe's port, e.g. LATPROBE_BENCH_PORT=/dev/ttyACM0")
    })
}

/// Whether the bench is wired for `want`; if not, say so and skip.
fn wired_for(want: Wiring) -> bool {
    let have = match std::env::var("LATPROBE_BENCH_WIRING").as_deref() {
        Ok("gpio") => Wiring::Gpio,
        Ok("uart") => Wiring::Uart,
        other => panic!(
            "LATPROBE_BENCH_WIRING is {other:?}: set it to gpio or uart, the loopback wired now \
             (docs/book/src/getting-started/first-bench-nucleo.md; never both at once: PA0 and PA9 would short through PA1)"
        ),
    };
    if have != want {
        eprintln!(
            "SKIPPED: this test needs the {want:?} loopback and the bench is wired for {have:?}: \
             rewire (docs/book/src/getting-started/first-bench-nucleo.md) and run again with LATPROBE_BENCH_WIRING={}",
            if want == Wiring::Gpio { "gpio" } else { "uart" }
        );
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

/// Run a loopback measurement; its report and the wall time it took.
fn loopback(extra: &[&str], count: u32) -> (Value, Duration) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("r.json");
    let count = count.to_string();
    let mut args = vec!["run", "--mode", "loopback", "--interval", "1ms", "--count", &count];
    args.extend_from_slice(extra);
    let port = bench_port();
    let t0 = Instant::now();
    let o = Command::new(latprobe())
        .args(&args)
        .args(["--port", &port, "--output"])
        .arg(&out)
        .output()
        .expect("run latprobe");
    let wall = t0.elapsed();
    assert!(
        o.status.success(),
        "latprobe {args:?} failed: {}\n{}{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let r = serde_json::from_slice(&std::fs::read(&out).expect("report written")).expect("report is JSON");
    (r, wall)
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

fn min_max(r: &Value) -> (u64, u64) {
    let l = &r["latency_ns"];
    (
        l["min"].as_u64().unwrap_or_else(|| panic!("{l:#}")),
        l["max"].as_u64().unwrap_or_else(|| panic!("{l:#}")),
    )
}

/// Step 1: the clock. 10 000 stimuli 1 ms apart take 10 s of the probe's
/// ticks; the host's wall clock must agree (it also pays the handshake and
/// the report, under a second). A probe left on the 16 MHz HSI, or at a
/// PLL setting other than 100 MHz, is off by seconds.
#[test]
#[ignore = "needs the bench: set LATPROBE_BENCH_PORT to the probe's port"]
fn step1_the_timer_runs_at_100_mhz() {
    if !wired_for(Wiring::Gpio) {
        return;
    }
    let (r, wall) = loopback(&["--line", "gpio", "--edge", "toggle"], 10_000);
    assert_clean_hardware_run(&r, 10_000);
    let probe = Duration::from_nanos(r["probe_elapsed_ns"].as_u64().unwrap_or_else(|| panic!("{r:#}")));
    eprintln!("clock check: probe says {probe:?}, wall clock {wall:?}");
    assert!(probe >= Duration::from_millis(9_990), "the probe counted {probe:?} for 10 000 ms of stimuli");
    assert!(probe <= wall && wall - probe < Duration::from_millis(1_500), "probe {probe:?}, wall {wall:?}");
}

/// Step 2: GPIO loopback. Output compare to input capture on one counter
/// through a wire: the filter's 8 ticks are taken off by the firmware, the
/// synchroniser's one or two remain. The compare and the capture run on one
/// clock, so the spread is at most one tick: the pin-to-pin delay (output
/// driver, wire, input Schmitt trigger: a few ns) is fixed, but where it
/// ends against the 10 ns sampling edge is not. A delay that sits on that
/// edge is sampled in one tick or the next as temperature, supply and
/// noise move it by picoseconds, so one board shows N..N+1 where another
/// shows N every time. Two ticks or more is a defect.
#[test]
#[ignore = "needs the bench: set LATPROBE_BENCH_PORT to the probe's port"]
fn step2_gpio_loopback_is_a_few_ticks_within_one_tick() {
    if !wired_for(Wiring::Gpio) {
        return;
    }
    for edge in ["rising", "falling", "toggle"] {
        let (r, _) = loopback(&["--line", "gpio", "--edge", edge], 5000);
        assert_clean_hardware_run(&r, 5000);
        let (min, max) = min_max(&r);
        eprintln!("gpio loopback, {edge}: {min}..{max} ns");
        assert!(max <= 50, "{edge}: loopback above 5 ticks: {:#}", r["latency_ns"]);
        assert!(
            max - min <= 10,
            "{edge}: hardware timestamps spread by more than one tick: {:#}",
            r["latency_ns"]
        );
        let a = &r["anomalies"];
        if a.is_object() {
            assert_eq!(a["late"], 0, "{edge}: the return edge must never answer (defect 8): {a:#}");
        }
    }
}

/// Step 3: UART loopback. Our own TX start bit (CH3, PB10) and its loopback
/// (CH2, PA1) are the same edge: 0 to 2 ticks (the two channels' skew),
/// never a timeout, with identity bytes and with a fixed byte.
#[test]
#[ignore = "needs the bench: set LATPROBE_BENCH_PORT to the probe's port"]
fn step3_uart_loopback_start_bit_to_start_bit_is_near_zero() {
    if !wired_for(Wiring::Uart) {
        return;
    }
    for extra in [&["--line", "uart"][..], &["--line", "uart", "--byte", "0x55"][..]] {
        let (r, _) = loopback(extra, 2000);
        assert_clean_hardware_run(&r, 2000);
        let (min, max) = min_max(&r);
        eprintln!("uart loopback {extra:?}: {min}..{max} ns");
        assert!(max <= 30, "{extra:?}: {:#}", r["latency_ns"]);
    }
}

/// Step 4: calibration of the wired line: `latprobe calibrate` over 10 000
/// loopback samples, then a run with it, whose median must be 0.
#[test]
#[ignore = "needs the bench: set LATPROBE_BENCH_PORT to the probe's port"]
fn step4_calibration_leaves_a_residual_median_of_zero() {
    let port = bench_port();
    let line = match std::env::var("LATPROBE_BENCH_WIRING").as_deref() {
        Ok("gpio") => "gpio",
        Ok("uart") => "uart",
        other => panic!("LATPROBE_BENCH_WIRING is {other:?}: set it to gpio or uart (docs/book/src/getting-started/first-bench-nucleo.md)"),
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let cal = dir.path().join("cal.json");
    let o = Command::new(latprobe())
        .args(["calibrate", "--port", &port, "--line", line, "--output"])
        .arg(&cal)
        .output()
        .expect("run latprobe calibrate");
    assert!(o.status.success(), "calibrate: {}", String::from_utf8_lossy(&o.stderr));
    eprintln!("{}", String::from_utf8_lossy(&o.stdout));
    let (r, _) = loopback(&["--line", line, "--calibration", cal.to_str().unwrap()], 2000);
    assert_clean_hardware_run(&r, 2000);
    assert_eq!(r["latency_ns"]["p50"], 0, "{:#}", r["latency_ns"]);
}

/// Step 5: the cost of the capture path, from the firmware's defmt log
/// (`cargo run-nucleo > nucleo.log` keeps it; probe-rs prints it). The
/// firmware logs one line per run: cycles from a capture's latch to its
/// sample in the queue (TIM2 ticks, which are core cycles at 100 MHz),
/// and the engine task's longest run (DWT).
#[test]
#[ignore = "needs the bench: set LATPROBE_BENCH_PORT to the probe's port"]
fn step5_capture_path_cost_is_printed() {
    let _ = bench_port();
    let path = std::env::var("LATPROBE_BENCH_DEFMT_LOG").unwrap_or_else(|_| {
        panic!(
            "LATPROBE_BENCH_DEFMT_LOG is not set: name the file the firmware's defmt log goes to \
             (`cargo run-nucleo 2>&1 | tee nucleo.log`), after a run of the steps above"
        )
    });
    let log = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("capture path:")).collect();
    assert!(!lines.is_empty(), "no `capture path:` line in {path}: run a measurement first");
    for l in &lines {
        eprintln!("{l}");
    }
    let last = lines.last().unwrap();
    let max: u64 = last
        .split("queued max ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("cannot read the figure in: {last}"));
    // 100 µs: a capture path slower than that could not keep up with a
    // UART answer per byte time at 115200 Bd.
    assert!(max < 10_000, "capture path of {max} cycles: {last}");
}

/// Step 0: `latprobe flash` through the board's own ST-LINK, then 1000
/// loopback samples over each link: the virtual COM port (`run --flash`,
/// which finds the firmware in place and does not flash again) and RTT
/// through the debug probe (`run --link rtt`), both clean. Needs
/// LATPROBE_BENCH_PROBE=VID:PID[:SERIAL] as `latprobe list` shows it.
#[test]
#[ignore = "needs the bench: set LATPROBE_BENCH_PROBE (VID:PID[:SERIAL]) and LATPROBE_BENCH_PORT"]
fn step0_flash_then_loopback_over_the_serial_link_and_rtt() {
    let Ok(probe) = std::env::var("LATPROBE_BENCH_PROBE") else {
        eprintln!(
            "SKIPPED: flashing needs the debug probe named: set LATPROBE_BENCH_PROBE=VID:PID[:SERIAL] \
             (`latprobe list` shows it, e.g. 0483:374b:066DFF…)"
        );
        return;
    };
    let port = bench_port();
    let line = match std::env::var("LATPROBE_BENCH_WIRING").as_deref() {
        Ok("uart") => "uart",
        _ => "gpio",
    };
    let exe = latprobe();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(&root)
        .args(["fw-nucleo", "-q"])
        .status()
        .expect("run cargo fw-nucleo");
    assert!(status.success(), "cargo fw-nucleo failed");
    let o =
        Command::new(&exe).args(["flash", "--probe", &probe]).current_dir(&root).output().expect("run flash");
    let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "latprobe flash failed:\n{said}");
    assert!(said.contains("board nucleo-f411re") && said.contains("timer 100000000 Hz"), "{said}");
    eprintln!("{said}");
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, link) in
        [("serial", vec!["--flash", "--port", port.as_str()]), ("rtt", vec!["--link", "rtt", "-v"])]
    {
        let out = dir.path().join(format!("{name}.json"));
        let o = Command::new(&exe)
            .current_dir(&root)
            .args(["run", "--probe", &probe, "--mode", "loopback", "--line", line, "--interval", "1ms"])
            .args(["--count", "1000"])
            .args(&link)
            .arg("--output")
            .arg(&out)
            .output()
            .expect("run latprobe");
        let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "{name}: latprobe run failed:\n{said}");
        let r: Value = serde_json::from_slice(&std::fs::read(&out).expect("report")).expect("JSON");
        assert_clean_hardware_run(&r, 1000);
        if name == "rtt" {
            assert!(said.contains("probe: info  boot: latprobe-firmware"), "-v shows the defmt log:\n{said}");
        } else {
            assert!(said.contains("not flashed"), "run --flash after flash must find it in place:\n{said}");
        }
        eprintln!("{name}: {:#}", r["latency_ns"]);
    }
}

/// Step 6: the trigger output (PB4, TIM3 as TIM2's slave). The firmware
/// announces it only when TIM3 read in step with TIM2 at boot, so a run
/// with `--trigger-above` is refused on a board where the slave timer did
/// not start as RM0383 says. A GPIO loopback answers in a few ticks: a 10
/// µs threshold never fires, and the timestamps stay exact with it armed.
/// (The pulse itself, PA0's edge to PB4's rise, needs a scope:
/// docs/dev/trigger.md.)
#[test]
#[ignore = "needs the bench: set LATPROBE_BENCH_PORT to the probe's port"]
fn step6_the_trigger_output_is_there_and_quiet_on_a_loopback() {
    if !wired_for(Wiring::Gpio) {
        return;
    }
    let (r, _) = loopback(&["--line", "gpio", "--edge", "rising", "--trigger-above", "10us"], 2000);
    assert_clean_hardware_run(&r, 2000);
    let caps = r["probe"]["capability_names"].to_string();
    assert!(caps.contains("trigger"), "the boot check withheld the trigger (see the defmt log): {caps}");
    assert_eq!(r["config"]["trigger_ns"], 10_000, "{:#}", r["config"]);
    assert_eq!(r["counts"]["triggered"], 0, "a loopback is never 10 us late: {:#}", r["counts"]);
    let (min, max) = min_max(&r);
    assert_eq!(max - min, 0, "armed compares must not disturb the capture: {:#}", r["latency_ns"]);
}
