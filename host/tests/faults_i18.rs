//! Issue 18, data silently destroyed: every path a command reads or writes
//! is checked against every other before anything is measured or written;
//! an output is whole at its path or absent (a full disk); a bad `--plot`
//! directory is found before the run; a raw file's replay judges the limits
//! of its run; a dangling symbolic link as an output is followed.

mod common;

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::*;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

fn p(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
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

// 4: the plot files of `--plot DIR` are outputs too.
#[test]
fn i18_4_plot_files_collide_with_other_outputs() {
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

// 4: a limits file or a calibration is an input.
#[test]
fn i18_4_limits_and_calibration_inputs_are_not_overwritten() {
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
    let o =
        run(&["run", "--port", &probe.port(), "--count", "10", "--limits", p(&good), "--junit", p(&good)]);
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
    let o = run(&[
        "run",
        "--port",
        &probe.port(),
        "--mode",
        "gpio-echo",
        "--count",
        "10",
        "--calibration",
        p(&cal),
        "-o",
        p(&cal),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("--calibration") && stderr(&o).contains("--output"), "{}", show(&o));
    assert_eq!(std::fs::read(&cal).unwrap(), before);

    // calibrate's two outputs.
    let c = dir.path().join("c.json");
    std::fs::write(&c, "keep").unwrap();
    let o = run(&["calibrate", "--port", &probe.port(), "--line", "gpio", "-o", p(&c), "--report", p(&c)]);
    refused(&o, ["--output", "--report"], &c);
}

// 4: import must not replace its input, nor one series' file with another's.
#[test]
fn i18_4_import_keeps_its_inputs_and_gives_each_series_its_own_file() {
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
/// `faults.rs`' raw test) and `TMPDIR` at `tmpdir`.
fn run_limited(args: &[&str], limit: u64, tmpdir: &Path, cwd: &Path) -> std::process::Output {
    let mut cmd = latprobe();
    cmd.args(args).env("TMPDIR", tmpdir).current_dir(cwd);
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

// 5: a full disk leaves no broken file at a requested path, nor a broken
// fallback; every output that could not be written is named.
#[test]
fn i18_5_a_full_disk_leaves_whole_files_or_none() {
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

// 5: a raw file cut by a full disk says how much it holds.
#[test]
fn i18_5_a_cut_raw_file_says_the_bytes_and_samples_it_holds() {
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

// 6: a --plot directory that cannot be made is found before the run.
#[test]
fn i18_6_a_bad_plot_directory_fails_before_the_run() {
    let dir = tmp();
    let probe = FakeProbe::start(dir.path(), FakeOpts::default());
    let o = run(&["run", "--port", &probe.port(), "--count", "100", "--plot", "/proc/latprobe-plots"]);
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

// 7: a raw file's replay judges its run's limits, unless given new ones.
#[test]
fn i18_7_a_raw_replay_judges_the_runs_limits() {
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

// 16: a dangling symbolic link as an output is followed: its target is written.
#[test]
fn i18_16_a_dangling_symlink_output_writes_its_target() {
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
