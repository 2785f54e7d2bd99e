//! Loads are watched for the whole run (issue 43, finding 13): a load that
//! never starts (a tool that exits at once, an iperf3 whose port is taken)
//! or is killed mid-run fails the run, with its files written and the
//! report saying when the load ran and why it ended; with
//! `--load-may-end` it is a note, and each phase of a schedule says which
//! loads actually ran in it.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{ensure_responder, json, latprobe, show, wait_with_timeout};

/// One at a time: the iperf3 test holds port 5201, the others look for
/// processes by their directory.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// A PATH whose `hackbench` says `said` on stderr and exits 1 at once,
/// ahead of the real PATH.
fn failing_hackbench(dir: &Path, said: &str) -> std::ffi::OsString {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let tool = bin.join("hackbench");
    std::fs::write(&tool, format!("#!/bin/sh\necho '{said}' >&2\nexit 1\n")).unwrap();
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut path = bin.into_os_string();
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    path
}

fn demo(args: &[&str], report: &Path) -> Command {
    ensure_responder();
    let mut c = latprobe();
    c.arg("demo").args(args).arg("-o").arg(report);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// A load whose tool exits at once: today's latprobe said the load ran
/// and exited 0. Now the run fails within seconds, not after its 20 s,
/// the error names the load, what it said and `--load-may-end`, and the
/// report (written) shows its one short span and why it ended.
#[test]
fn a_load_that_exits_at_once_fails_the_run_and_the_report_says_so() {
    let _one = lock();
    let dir = tempfile::tempdir().unwrap();
    let path = failing_hackbench(dir.path(), "hackbench: cannot create the pipes");
    let report = dir.path().join("r.json");
    let t0 = Instant::now();
    let mut child = demo(&["--duration", "20s", "--interval", "2ms", "--load", "hackbench:2"], &report)
        .env("PATH", &path)
        .spawn()
        .unwrap();
    let o = wait_with_timeout(&mut child, Duration::from_secs(40));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "a load that never ran is a failed run: {}", show(&o));
    assert!(t0.elapsed() < Duration::from_secs(15), "the run went on without its load: {:?}", t0.elapsed());
    assert!(
        e.contains("the load hackbench:2 on this machine did not start")
            && e.contains("exit status 1")
            && e.contains("cannot create the pipes")
            && e.contains("--load-may-end"),
        "{e}"
    );
    let r = json(&report);
    assert_eq!(r["complete"], false, "{r}");
    let span = &r["loads"][0]["ran"][0];
    assert!(span["ended"].as_str().unwrap().contains("cannot create the pipes"), "{span}");
    assert!(span["end_ms"].as_u64().unwrap() < 5_000, "{span}");

    // --load-may-end: the run measures on, exits 0, and says it.
    let mut child =
        demo(&["--duration", "2s", "--interval", "2ms", "--load", "hackbench:2", "--load-may-end"], &report)
            .env("PATH", &path)
            .spawn()
            .unwrap();
    let o = wait_with_timeout(&mut child, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("load ended early: the load hackbench:2 on this machine did not start"), "{text}");
    let r = json(&report);
    assert_eq!(r["complete"], true);
    assert!(r["loads"][0]["ran"][0]["ended"].is_string(), "{}", r["loads"]);
}

/// The session of this process: a load's processes are in a session of
/// their own (its shell, the wrapper, is in ours).
fn session_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ppid pgrp session …: comm may hold spaces.
    stat[stat.rfind(')')? + 2..].split(' ').nth(3)?.parse().ok()
}

/// The load's own processes under `dir` (not its wrapper shell).
fn load_processes(dir: &Path) -> Vec<(u32, String)> {
    let ours = session_of(std::process::id());
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            (cwd.starts_with(dir) && session_of(pid) != ours).then(|| (pid, comm.trim().to_string()))
        })
        .collect()
}

fn load_dir(latprobe_pid: u32) -> PathBuf {
    std::env::temp_dir().join(format!("latprobe-demo-{latprobe_pid}.loads"))
}

/// Wait for hackbench to run under `dir`, let it run past its start, then
/// SIGKILL every process of the load (not its shell, which must report it).
fn kill_the_load_mid_run(dir: &Path) {
    let until = Instant::now() + Duration::from_secs(20);
    while !load_processes(dir).iter().any(|(_, c)| c == "hackbench") {
        assert!(Instant::now() < until, "hackbench did not start in {}", dir.display());
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(2_500));
    for _ in 0..5 {
        for (pid, _) in load_processes(dir) {
            // SAFETY: kill(2) on a load's process (it may be gone already).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// A load killed mid-run fails the run (today: exit 0, "the load ran");
/// with --load-may-end and a schedule, the phase it died in says it ran
/// part of it, and the idle phase before says no load ran.
#[test]
fn a_load_killed_mid_run_fails_it_and_each_phase_says_what_ran() {
    let _one = lock();
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("k.json");
    let mut child =
        demo(&["--duration", "30s", "--interval", "2ms", "--load", "hackbench:2"], &report).spawn().unwrap();
    kill_the_load_mid_run(&load_dir(child.id()));
    let o = wait_with_timeout(&mut child, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("the load hackbench:2 on this machine stopped") && e.contains("killed by signal 9"),
        "{e}"
    );
    let r = json(&report);
    assert_eq!(r["complete"], false);
    assert!(r["counts"]["samples"].as_u64().unwrap() > 0, "the samples before it are kept");

    let html = dir.path().join("k.html");
    let mut child = demo(
        &[
            "--duration",
            "7s",
            "--interval",
            "2ms",
            "--load",
            "hackbench:2",
            "--load-may-end",
            "--load-schedule",
            "idle=1s,load=6s",
            "--html",
            html.to_str().unwrap(),
        ],
        &report,
    )
    .spawn()
    .unwrap();
    kill_the_load_mid_run(&load_dir(child.id()));
    let o = wait_with_timeout(&mut child, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&report);
    let p = r["phases"].as_array().unwrap();
    assert_eq!(p[0]["loads"], serde_json::json!([]), "no load ran in the idle phase: {p:?}");
    let l = &p[1]["loads"][0];
    assert_eq!((l["name"].as_str(), l["throughout"].as_bool()), (Some("hackbench:2"), Some(false)), "{p:?}");
    let ran = l["ran_ms"].as_u64().unwrap();
    assert!((2_000..5_500).contains(&ran), "it ran from the phase's start until it was killed: {ran} ms");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("phase idle 0–1 s: ") && text.contains("; no load ran"), "{text}");
    assert!(text.contains("; loads running: hackbench:2 ("), "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<td>hackbench:2 (part)</td>"), "the page's phase table says it too");
}

/// iperf3 with port 5201 taken: its server cannot listen, so the load
/// never runs. Today: exit 0 and "load iperf3" in the report; now a failed
/// run that names the port.
#[test]
fn an_iperf3_whose_port_is_taken_never_starts_and_fails_the_run() {
    let _one = lock();
    assert!(
        Command::new("sh").args(["-c", "command -v iperf3"]).output().unwrap().status.success(),
        "iperf3 is missing: install it (apt-get install iperf3; scripts/test does)"
    );
    // Held for the test: whoever holds it, the port is taken.
    let _taken = std::net::TcpListener::bind(("0.0.0.0", 5201));
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("i.json");
    let mut child =
        demo(&["--duration", "20s", "--interval", "2ms", "--load", "iperf3"], &report).spawn().unwrap();
    let o = wait_with_timeout(&mut child, Duration::from_secs(40));
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("the load iperf3 on this machine did not start") && e.contains("port 5201"), "{e}");
    assert!(json(&report)["loads"][0]["ran"][0]["ended"].is_string());
}

/// A schedule with no load phase would record loads that never ran: a
/// usage error before anything runs.
#[test]
fn a_schedule_without_a_load_phase_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let o = demo(&["--load", "hackbench", "--load-schedule", "idle=5s"], &dir.path().join("x.json"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no load phase"), "{}", show(&o));
}
