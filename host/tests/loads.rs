//! `--load NAME[:ARG]`: real load generators on the target for the run
//! (the demo's target is this machine), recorded in the report, shown by
//! compare, and never outliving the run, not even a latprobe killed with
//! SIGKILL.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{ensure_responder, json, latprobe, run, show};

/// The processes whose working directory is `dir` or below it (a load's
/// processes all start in their own directory).
fn processes_in(dir: &Path) -> Vec<(u32, String)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            cwd.starts_with(dir).then(|| (pid, comm.trim().to_string()))
        })
        .collect()
}

fn load_dir(latprobe_pid: u32) -> PathBuf {
    std::env::temp_dir().join(format!("latprobe-demo-{latprobe_pid}.loads"))
}

/// `latprobe ARGS` started with its output piped, and the folder its
/// loads run in.
fn spawn(args: &[&std::ffi::OsStr]) -> (std::process::Child, PathBuf) {
    let child = latprobe().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let at = load_dir(child.id());
    (child, at)
}

/// Idle, then under hackbench (rt-tests, which scripts/test installs): the
/// load is recorded with its command, compare shows it as a row, and
/// nothing of it is left afterwards.
#[test]
fn a_demo_under_hackbench_records_the_load_and_compare_shows_it() {
    ensure_responder();
    assert!(
        Command::new("sh").args(["-c", "command -v hackbench"]).output().unwrap().status.success(),
        "hackbench is missing: install rt-tests (scripts/test does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let idle = dir.path().join("idle.json");
    let busy = dir.path().join("busy.json");
    let o = run(&["demo", "--duration", "2s", "--interval", "2ms", "-o", idle.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let child = latprobe()
        .args(["demo", "--duration", "2s", "--interval", "2ms", "--load", "hackbench:4", "-o"])
        .arg(&busy)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let loads_at = load_dir(child.id());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    // Nothing of the load is left, and its directory is gone.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(processes_in(&loads_at), [], "the load outlived its run");
    assert!(!loads_at.exists(), "{} left behind", loads_at.display());
    assert!(String::from_utf8_lossy(&o.stderr).contains("load hackbench:4 on this machine"), "{}", show(&o));
    let r = json(&busy);
    let l = &r["loads"][0];
    assert_eq!(l["name"], "hackbench:4", "{}", r["loads"]);
    assert!(l["command"].as_str().unwrap().contains("hackbench -P -g 4"), "{l}");
    assert_eq!(l["on"], "this machine");
    assert!(json(&idle).get("loads").is_none(), "an idle run records no loads");
    common::assert_counts_add_up(&r);

    let o = run(&["compare", idle.to_str().unwrap(), busy.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let row = text.lines().find(|l| l.starts_with("loads")).unwrap_or_else(|| panic!("no loads row: {text}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells, ["loads", "none", "hackbench:4"], "{text}");
}

/// A load whose tool this machine lacks is one usage error naming the
/// package, before anything runs.
#[test]
fn a_load_whose_tool_is_missing_names_its_package() {
    // An empty PATH but for sh: no load tool can be found.
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/bin/sh", bin.path().join("sh")).unwrap();
    let responder = ensure_responder();
    for (load, package) in [("stress-ng:vm", "stress-ng"), ("iperf3", "iperf3"), ("hackbench", "rt-tests")] {
        let o = latprobe()
            .args(["demo", "--duration", "1s", "--load", load, "--responder"])
            .arg(&responder)
            .env("PATH", bin.path())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{load}: {}", show(&o));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.contains(&format!("apt-get install {package}")) && e.contains(&format!("--load {load}")),
            "{e}"
        );
    }
    let o = run(&["demo", "--load", "make-j8"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("hackbench, stress-ng, dd, iperf3, compile"));
    let o = run(&["run", "--port", "/dev/null", "--load", "dd"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("give --target"), "{}", show(&o));
}

/// Every preset runs its real tool for the run (scripts/test installs
/// stress-ng, iperf3 and rt-tests): the tool's processes are seen in the
/// load's directory while the demo measures, and none is left after it.
#[test]
fn every_preset_runs_its_real_tool_and_stops_with_the_run() {
    ensure_responder();
    for (load, tool) in [
        ("stress-ng:cpu", "stress-ng"),
        ("stress-ng:vm", "stress-ng"),
        ("stress-ng:io", "stress-ng"),
        ("dd", "dd"),
        ("iperf3", "iperf3"),
        ("compile:2", "make"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let report = out.path().join("r.json");
        let args = ["demo", "--duration", "3s", "--interval", "2ms", "--load", load, "-q", "-o"];
        let mut all: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        all.push(report.as_os_str());
        let (child, loads_at) = spawn(&all);
        let t0 = Instant::now();
        let mut seen = Vec::new();
        while t0.elapsed() < Duration::from_millis(2_500)
            && !seen.iter().any(|c: &String| c.starts_with(tool))
        {
            seen.extend(processes_in(&loads_at).into_iter().map(|(_, c)| c));
            std::thread::sleep(Duration::from_millis(50));
        }
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{load}: {}", show(&o));
        assert!(seen.iter().any(|c| c.starts_with(tool)), "{load}: no {tool} process ran, saw {seen:?}");
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(processes_in(&loads_at), [], "{load} outlived its run");
        assert_eq!(json(&report)["loads"][0]["name"], load);
    }
}

/// latprobe killed outright mid-run: the loads end all the same (their
/// shell sees its pipe close and ends the whole group).
#[test]
fn loads_end_when_latprobe_is_killed() {
    ensure_responder();
    let mut child = latprobe()
        .args(["demo", "--duration", "30s", "--load", "hackbench:2", "--load", "dd"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dir = load_dir(child.id());
    let until = Instant::now() + Duration::from_secs(20);
    while !processes_in(&dir).iter().any(|(_, c)| c == "hackbench") {
        assert!(Instant::now() < until, "hackbench did not start in {}", dir.display());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(processes_in(&dir).iter().any(|(_, c)| c == "dd" || c == "sh"), "{:?}", processes_in(&dir));
    child.kill().unwrap();
    child.wait().unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while !processes_in(&dir).is_empty() {
        assert!(Instant::now() < until, "loads outlived latprobe: {:?}", processes_in(&dir));
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--load-schedule idle=3s,load=3s`: no load in the first phase, the load
/// in the second (its processes seen then, not before), each phase's
/// figures in the report and the summary, and together they hold every
/// sample of the run.
#[test]
fn a_load_schedule_runs_the_load_in_its_phase_only_and_reports_each_phase() {
    ensure_responder();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.json");
    let html = dir.path().join("p.html");
    let args = ["demo", "--duration", "6s", "--interval", "2ms", "--load", "hackbench:2", "--load-schedule"];
    let mut all: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    all.extend([
        "idle=3s,load=3s".as_ref(),
        "--html".as_ref(),
        html.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    let (child, loads_at) = spawn(&all);
    let t0 = Instant::now();
    let hackbench = || processes_in(&loads_at).iter().any(|(_, c)| c == "hackbench");
    let mut seen_idle = false;
    let mut seen_load = false;
    while t0.elapsed() < Duration::from_millis(5_500) {
        let e = t0.elapsed();
        if e > Duration::from_millis(500) && e < Duration::from_millis(2_500) {
            assert!(!hackbench(), "hackbench runs in the idle phase ({e:?})");
            seen_idle = true;
        }
        if e > Duration::from_millis(4_000) && hackbench() {
            seen_load = true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(seen_idle && seen_load, "idle phase checked: {seen_idle}, load seen in its phase: {seen_load}");
    let r = json(&out);
    let p = r["phases"].as_array().expect("phases");
    assert_eq!(p.len(), 2, "{p:?}");
    assert_eq!(
        (p[0]["name"].as_str(), p[0]["start_s"].as_u64(), p[0]["end_s"].as_u64()),
        (Some("idle"), Some(0), Some(3))
    );
    assert_eq!((p[1]["name"].as_str(), p[1]["start_s"].as_u64()), (Some("load"), Some(3)));
    assert!(p[1]["end_s"].is_null());
    // What actually ran in each phase, as watched: nothing, then the load
    // for the whole phase.
    assert_eq!(p[0]["loads"], serde_json::json!([]), "{p:?}");
    assert_eq!(p[1]["loads"][0]["name"], "hackbench:2", "{p:?}");
    assert_eq!(p[1]["loads"][0]["throughout"], true, "{p:?}");
    let total: u64 = p.iter().map(|x| x["samples"].as_u64().unwrap()).sum();
    assert_eq!(total, r["counts"]["samples"].as_u64().unwrap(), "the phases hold every sample: {p:?}");
    let timeouts: u64 = p.iter().map(|x| x["timeouts"].as_u64().unwrap()).sum();
    assert_eq!(timeouts, r["counts"]["timeouts"].as_u64().unwrap());
    for x in p {
        let l = &x["latency_ns"];
        assert_eq!(
            l["measured"].as_u64().unwrap() + l["censored"].as_u64().unwrap(),
            x["samples"].as_u64().unwrap(),
            "each phase's figures are over its own samples: {x}"
        );
        assert!(l["p99"].is_u64() || l["censored"].as_u64() > Some(0), "a p99 per phase: {x}");
    }
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("phase idle 0–3 s: ") && text.contains("phase load 3 s to the end: "), "{text}");
    assert!(text.lines().filter(|l| l.starts_with("phase ") && l.contains(", p99 ")).count() == 2, "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    let table = &page[page.find("id=\"phase-figures\"").expect("the page's phase table")..];
    let table = &table[..table.find("</table>").unwrap()];
    assert_eq!(table.matches("<tr><td>").count(), 2, "{table}");
    assert!(table.contains("<td>idle</td><td>0 s</td><td>3 s</td>"), "{table}");
    assert!(table.contains("<td>none</td></tr>") && table.contains("<td>hackbench:2</td></tr>"), "{table}");
}
