//! Every output of one fixed raw file, byte for byte: the summary, JSON,
//! histfile, JUnit, LAVA lines, HTML, the per-sample CSV and the plots (SVG
//! as text, PNG by hash). A change of layout must leave them all as they
//! are; a change of behaviour shows here as a diff to review and bless
//! (`LATPROBE_UPDATE_SNAPSHOTS=1 cargo test -p latprobe --test golden`).
//!
//! The raw file (`fixtures/golden/run.raw`) is a recorded run of the fake
//! probe: 2000 samples of uart-echo at 1 ms, a 300 µs timeout, a batch sent
//! twice, one lost, garbage before another, 400 µs answers beyond the
//! timeout, a PREEMPT_RT target's metadata and limits that one figure
//! violates. `record_the_golden_raw_file` (ignored) made it.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden")
}

fn update() -> bool {
    std::env::var_os("LATPROBE_UPDATE_SNAPSHOTS").is_some_and(|v| v == "1")
}

/// FNV-1a, 64 bits: a PNG is compared by its hash, not kept.
fn fnv(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x} {} bytes\n", bytes.len())
}

/// Compare `actual` with the golden file `name`, or rewrite it.
fn check(name: &str, actual: &[u8], failures: &mut Vec<String>) {
    let path = golden().join("out").join(name);
    if update() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    match std::fs::read(&path) {
        Ok(expected) if expected == actual => {}
        Ok(expected) => failures.push(format!(
            "{name} differs:\n--- expected\n{}\n--- actual\n{}",
            String::from_utf8_lossy(&expected),
            String::from_utf8_lossy(actual)
        )),
        Err(_) => failures.push(format!("{} is missing", path.display())),
    }
}

/// A copy of the raw file in `dir`, named `run.raw`, with a fixed
/// modification time (a replay's `ended_at`).
fn raw_copy(dir: &Path) {
    let to = dir.join("run.raw");
    std::fs::copy(golden().join("run.raw"), &to).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&to).unwrap();
    f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_764_590_400)).unwrap();
}

fn in_dir(dir: &Path, args: &[&str]) -> std::process::Output {
    let o = latprobe().args(args).current_dir(dir).output().unwrap();
    assert!(matches!(o.status.code(), Some(0) | Some(3)), "{}", show(&o));
    o
}

#[test]
fn every_output_of_a_fixed_raw_file_is_byte_for_byte_the_same() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    raw_copy(dir);
    let mut failures = Vec::new();
    let o = in_dir(
        dir,
        &[
            "report",
            "run.raw",
            "-o",
            "r.json",
            "--histfile",
            "r.hist",
            "--junit",
            "r.xml",
            "--html",
            "r.html",
            "--plot",
            "plots",
            "--samples",
            "s.csv",
        ],
    );
    check("exit", format!("{:?}\n", o.status.code()).as_bytes(), &mut failures);
    check("summary.txt", &o.stdout, &mut failures);
    check("stderr.txt", &o.stderr, &mut failures);
    for f in ["r.json", "r.hist", "r.xml", "r.html", "s.csv"] {
        check(f, &std::fs::read(dir.join(f)).unwrap(), &mut failures);
    }
    for f in latprobe::report::plot::PLOT_FILES {
        // The tail plot only when the tail model was fitted: this run's is
        // refused (summary.txt says why), so it has none.
        if f.starts_with("tail.") {
            assert!(!dir.join("plots").join(f).exists(), "a tail plot of a refused model");
            continue;
        }
        let bytes = std::fs::read(dir.join("plots").join(f)).unwrap();
        if f.ends_with(".png") {
            check(&format!("plots/{f}.fnv"), fnv(&bytes).as_bytes(), &mut failures);
        } else {
            check(&format!("plots/{f}"), &bytes, &mut failures);
        }
    }
    let o = in_dir(dir, &["report", "run.raw", "--lava"]);
    check("lava.txt", &o.stdout, &mut failures);
    let ct = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/cyclictest/ct_t2_h100.json");
    std::fs::copy(ct, dir.join("ct.json")).unwrap();
    for format in ["text", "markdown", "csv", "json"] {
        let o = in_dir(dir, &["compare", "r.json", "r.hist", "ct.json", "--format", format]);
        check(&format!("compare.{format}"), &o.stdout, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} golden outputs changed (rerun with LATPROBE_UPDATE_SNAPSHOTS=1 if meant):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Makes `fixtures/golden/run.raw` (run it by hand, then bless the outputs).
#[test]
#[ignore = "records the fixture; run by hand with --ignored"]
fn record_the_golden_raw_file() {
    let d = tempfile::tempdir().unwrap();
    let probe = FakeProbe::start(d.path(), FakeOpts { faults: true, ..FakeOpts::default() });
    let meta = d.path().join("target.json");
    let target = serde_json::json!({
        "uname": { "release": "6.12.0-rt5", "version": "#1 SMP PREEMPT_RT", "machine": "aarch64", "nodename": "board-7" },
        "preemption": { "model": "PREEMPT_RT", "source": "/sys/kernel/realtime" },
        "cmdline": "console=ttyS0,115200 isolcpus=1 nohz_full=1 rcu_nocbs=1 threadirqs",
    });
    std::fs::write(&meta, target.to_string()).unwrap();
    let raw = golden().join("run.raw");
    let o = probe.run(&[
        "--count",
        "2000",
        "--interval",
        "1ms",
        "--timeout",
        "300us",
        "--target-meta",
        meta.to_str().unwrap(),
        "--max",
        "350us",
        "--percentile",
        "99=100us",
        "--raw",
        raw.to_str().unwrap(),
    ]);
    assert!(matches!(o.status.code(), Some(0) | Some(3)), "{}", show(&o));
}
