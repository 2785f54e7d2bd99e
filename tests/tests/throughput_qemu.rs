//! A figure, not a timed test: where the `qemu` firmware's CPU goes per
//! sample, in instructions, under `qemu-system-arm -icount shift=0` (one
//! instruction is 1 ns of virtual time, a TIM2 tick 10 ns: ticks × 10 =
//! instructions, deterministic up to where the interrupts fall).
//!
//! The firmware's meter (`latprobe_firmware::cpu`) charges every tick of a
//! run to exactly one part: asleep in WFI, a task body (capture interrupt,
//! wake-up interrupt, engine task, host receive, host send), or "other"
//! (exception entry and return, RTIC dispatch, the idle loop). It logs the
//! run's ticks per part at its end; this test runs each mode at a steady
//! rate, reads that line and prints instructions per sample and the CPU's
//! busy share. It asserts only what must hold whatever the figures are:
//! every sample taken and sent, the parts adding up to the run's length on
//! the probe's clock, and the parts that must run having run.
//!
//! Ignored in the plain test run; scripts/test runs it and prints the table:
//! `cargo test -p latprobe-tests --test
//! throughput_qemu -- --ignored --nocapture`. (QEMU's UARTs have no bit timing: the
//! host link here is as fast as the host reads it, so these are the CPU's
//! figures, not the 921 600 Bd link's.)

// The bench uses only a part of the QEMU tests' harness.
#[allow(dead_code)]
#[path = "qemu/harness.rs"]
mod harness;

use std::time::Duration;

use harness::{Bench, SlowEcho};
use serde_json::Value;

/// Instructions per TIM2 tick under `-icount shift=0` with PSC = 9.
const INSTRUCTIONS_PER_TICK: u64 = 10;
/// The parts, in the order of the firmware's log line.
const PARTS: [&str; 7] = ["sleep", "other", "capture", "wake", "engine", "host_rx", "host_tx"];

/// The run's ticks per part and the samples taken, from the firmware's
/// `cpu:` log line.
fn cpu_line(log: &[String]) -> (u64, [u64; 7]) {
    let line = log
        .iter()
        .rev()
        .find(|l| l.contains("cpu: "))
        .unwrap_or_else(|| panic!("no cpu: line in the firmware's log:\n{}", log.join("\n")));
    let words: Vec<&str> = line.split_whitespace().filter(|w| *w != "ticks").collect();
    let at = |name: &str| -> u64 {
        let i = words.iter().position(|w| *w == name).unwrap_or_else(|| panic!("no {name} in {line}"));
        words[i + 1].parse().unwrap_or_else(|_| panic!("{name} in {line}"))
    };
    let taken_at = words.iter().position(|w| *w == "taken,").unwrap_or_else(|| panic!("{line}"));
    let taken = words[taken_at - 1].parse().unwrap();
    (taken, PARTS.map(at))
}

fn run(bench: &Bench, args: &[&str]) -> Value {
    let out = bench.latprobe(args, Duration::from_secs(300));
    assert!(out.status.success(), "latprobe {args:?}: {}\n{}{}", out.status, out.stderr, bench.diagnostics());
    let text = std::fs::read_to_string(bench.dir.path().join("r.json")).expect("r.json");
    serde_json::from_str(&text).expect("report JSON")
}

/// One mode at a steady rate: the figures per sample.
fn measure(name: &str, mode: &str, interval: &str, count: u64, extra: &[&str]) -> String {
    let _serial = harness::serial();
    let mut bench = Bench::start();
    let echo =
        (mode == "uart-echo").then(|| SlowEcho::connect(&bench.target_sock(), usize::MAX, Duration::ZERO));
    if mode == "periodic" {
        bench.responder(&["periodic", "--interval", interval]);
    }
    let n = count.to_string();
    let mut args =
        vec!["run", "--port", "", "--mode", mode, "--interval", interval, "--count", &n, "-o", "r.json"];
    let port = format!("unix:{}", bench.host_sock().display());
    args[2] = &port;
    args.extend_from_slice(extra);
    let r = run(&bench, &args);
    if let Some(e) = echo {
        e.stop();
    }
    let log = bench.stop_and_read_log();
    let (taken, ticks) = cpu_line(&log);
    assert_eq!(taken, count, "{name}: the probe took every sample");
    assert_eq!(r["counts"]["lost"], 0, "{name}: {:#}", r["counts"]);
    assert_eq!(r["counts"]["dropped_by_probe"], 0, "{name}: {:#}", r["counts"]);
    let elapsed: u64 = ticks.iter().sum();
    // The run on the probe's clock, Started to Stopped, against the meter's
    // run (engine task at Started to engine task after Stopped): the same
    // span within a few engine passes.
    let probe_ns = r["probe_elapsed_ns"].as_u64().expect("probe_elapsed_ns");
    let meter_ns = elapsed * 10;
    assert!(
        meter_ns.abs_diff(probe_ns) < probe_ns / 100 + 2_000_000,
        "{name}: the parts add up to {meter_ns} ns, the run lasted {probe_ns} ns"
    );
    for (i, part) in PARTS.iter().enumerate() {
        if ["engine", "host_tx", "wake"].contains(part) || (*part == "capture" && mode != "loopback") {
            assert!(ticks[i] > 0, "{name}: {part} never ran: {ticks:?}");
        }
    }
    let busy = elapsed - ticks[0];
    let per = |t: u64| t * INSTRUCTIONS_PER_TICK / taken.max(1);
    let mut row = format!("{name:<28} {:>6} ", per(busy));
    for t in &ticks[1..] {
        row.push_str(&format!("{:>8}", per(*t)));
    }
    // The Nucleo's core at 100 MHz, about one instruction a cycle, at the
    // 921 600 Bd link's rate of about 21 000 samples a second.
    row.push_str(&format!("   {:>5.0} %", per(busy) as f64 * 21_000.0 / 100e6 * 100.0));
    row
}

#[test]
#[ignore = "a figure, not a check: scripts/test runs it with --ignored --nocapture and prints its table"]
fn instructions_per_sample_by_part_under_icount() {
    let rows = [
        measure("uart-echo identified 500us", "uart-echo", "500us", 10_000, &[]),
        measure("uart-echo --byte 0x55 500us", "uart-echo", "500us", 10_000, &["--byte", "0x55"]),
        measure("periodic 1ms", "periodic", "1ms", 5_000, &[]),
    ];
    let mut t = String::from(
        "qemu firmware, instructions per sample (-icount shift=0), by part\n\
         run                          busy    other capture    wake  engine host_rx host_tx   CPU at 21 000/s, 100 MHz\n",
    );
    for r in rows {
        t.push_str(&r);
        t.push('\n');
    }
    println!("{t}");
}
