//! `latprobe campaign` under attack (issue 43): a damaged manifest, a
//! folder two campaigns share, a campaign killed with its run under way,
//! a SIGTERM to the campaign's PID alone, a done run whose files are
//! damaged, and plans that would break every run: each is an error that
//! names the fix before anything runs, or is handled without losing or
//! mixing data.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{ensure_responder, json, latprobe, show, wait_with_timeout};

/// One load, one repeat: a single run of `duration`.
fn plan(dir: &Path, duration: &str) -> PathBuf {
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[campaign]\nname = \"c\"\ncommand = \"demo\"\nargs = [\"--duration\", \"{duration}\", \"--interval\", \
             \"2ms\"]\nrepeats = 1\n[matrix]\nload = [\"none\"]\n"
        ),
    )
    .unwrap();
    plan
}

fn campaign(plan: &Path) -> std::process::Output {
    latprobe().arg("campaign").arg(plan).output().unwrap()
}

fn spawn_campaign(plan: &Path) -> Child {
    latprobe().arg("campaign").arg(plan).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap()
}

fn wait_for(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < until, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The processes whose working directory is `dir` (a campaign's run).
fn processes_in(dir: &Path) -> Vec<u32> {
    let Ok(dir) = std::fs::canonicalize(dir) else { return Vec::new() };
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c == dir))
        .collect()
}

/// The runs (latprobe given `--raw`) working in `dir`, not their responders.
fn runs_in(dir: &Path) -> Vec<u32> {
    let runs: Vec<u32> = processes_in(dir)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == b"--raw"))
        })
        .collect();
    // A run's child caught between fork and exec still shows the run's
    // command line: it is that run, not a second one.
    runs.iter().copied().filter(|pid| !parent_of(*pid).is_some_and(|p| runs.contains(&p))).collect()
}

/// The parent of process `pid`, from /proc.
fn parent_of(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("PPid:")).and_then(|v| v.trim().parse().ok())
}

/// Finding 1: one non-UTF-8 byte in `campaign.json`, or a directory in
/// its place, is an error naming it; no run starts, run 001 is untouched.
#[test]
fn a_damaged_manifest_is_an_error_that_touches_nothing() {
    let d = tempfile::tempdir().unwrap();
    let plan = plan(d.path(), "1s");
    let dir = d.path().join("c");
    let run = dir.join("001-none-r1");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("run.json"), "kept").unwrap();
    let manifest = dir.join("campaign.json");
    std::fs::write(&manifest, b"{\"runs\": {\xff}}").unwrap();
    let o = campaign(&plan);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("campaign.json") && e.contains("not a campaign manifest"), "{e}");
    assert!(!e.contains("[1/1]"), "a run started: {e}");
    assert_eq!(std::fs::read(&manifest).unwrap(), b"{\"runs\": {\xff}}");
    assert_eq!(std::fs::read_to_string(run.join("run.json")).unwrap(), "kept");

    std::fs::remove_file(&manifest).unwrap();
    std::fs::create_dir(&manifest).unwrap();
    let o = campaign(&plan);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("cannot read the campaign's manifest") && e.contains("campaign.json"), "{e}");
    assert!(!e.contains("[1/1]"), "a run started: {e}");
    assert_eq!(std::fs::read_to_string(run.join("run.json")).unwrap(), "kept");
}

/// Finding 2: a second campaign on a folder in use is refused; `kill -9`
/// of the campaign takes its run with it (no orphan goes on writing the
/// folder), the lock goes with the dead holder, the cut run's raw file
/// never stands as `run.raw`, and the resume clears it away, saying so.
#[test]
fn a_campaign_folder_is_locked_and_its_run_dies_with_the_campaign() {
    ensure_responder();
    let d = tempfile::tempdir().unwrap();
    let plan = plan(d.path(), "30s");
    let run = d.path().join("c/001-none-r1");
    let mut first = spawn_campaign(&plan);
    wait_for("the first run did not start", Duration::from_secs(20), || !processes_in(&run).is_empty());
    let o = campaign(&plan);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("another latprobe campaign is running"),
        "{}",
        show(&o)
    );
    std::thread::sleep(Duration::from_secs(1));
    assert!(!run.join("run.raw").exists(), "the raw file is written in place while the run goes on");

    first.kill().unwrap();
    let _ = first.wait();
    wait_for("the run outlived its campaign", Duration::from_secs(15), || processes_in(&run).is_empty());
    assert!(!run.join("run.raw").exists(), "a cut run's raw file stands as run.raw");
    let parts: Vec<_> = std::fs::read_dir(&run)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".part"))
        .collect();
    assert_eq!(parts.len(), 1, "the dead run's raw file, under its campaign's name");

    // The lock went with its holder: a resume runs, and clears the leftover.
    let mut again = spawn_campaign(&plan);
    std::thread::sleep(Duration::from_secs(5));
    common::signal(again.id(), libc::SIGTERM);
    let o = wait_with_timeout(&mut again, Duration::from_secs(30));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!e.contains("another latprobe campaign"), "{e}");
    assert!(e.contains("left by a campaign that did not end"), "{e}");
    assert!(run.join("run.raw").is_file(), "{e}");
}

/// Finding 2: a resume started the moment its campaign is killed waits
/// for the dead campaign's run (told to stop, still writing its files)
/// before it runs the same cell: two runs never work in one folder.
#[test]
fn a_resume_started_at_once_waits_for_the_dead_campaigns_run() {
    ensure_responder();
    let d = tempfile::tempdir().unwrap();
    let plan = plan(d.path(), "30s");
    let run = d.path().join("c/001-none-r1");
    let mut first = spawn_campaign(&plan);
    wait_for("the first run did not start", Duration::from_secs(20), || !runs_in(&run).is_empty());
    std::thread::sleep(Duration::from_secs(1));
    first.kill().unwrap();
    let _ = first.wait();
    let mut again = spawn_campaign(&plan);
    let (until, mut most) = (Instant::now() + Duration::from_secs(6), Vec::new());
    while Instant::now() < until {
        let now = runs_in(&run);
        if now.len() > most.len() {
            most = now;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    common::signal(again.id(), libc::SIGTERM);
    let o = wait_with_timeout(&mut again, Duration::from_secs(30));
    assert!(most.len() <= 1, "runs {most:?} at once in one folder: {}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("001-none-r1: latprobe demo"), "{}", show(&o));
}

/// Finding 12: SIGTERM to the campaign's PID alone (a CI cancellation)
/// reaches the run under way, which stops and writes its files at once.
#[test]
fn a_sigterm_to_the_campaign_stops_its_run_at_once() {
    ensure_responder();
    let d = tempfile::tempdir().unwrap();
    let plan = plan(d.path(), "30s");
    let run = d.path().join("c/001-none-r1");
    let mut child = spawn_campaign(&plan);
    wait_for("the first run did not start", Duration::from_secs(20), || !processes_in(&run).is_empty());
    std::thread::sleep(Duration::from_secs(2));
    let t0 = Instant::now();
    common::signal(child.id(), libc::SIGTERM);
    let o = wait_with_timeout(&mut child, Duration::from_secs(40));
    assert!(t0.elapsed() < Duration::from_secs(12), "the campaign waited for its run: {:?}", t0.elapsed());
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("001-none-r1 did not complete") && e.contains("to resume"), "{e}");
    let r = json(&run.join("run.json"));
    assert_eq!(r["complete"], false, "{r:#}");
}

/// Finding 2, its last part: a run recorded done whose report or raw file
/// no longer loads is run again, and the campaign says why.
#[test]
fn a_done_run_whose_files_no_longer_load_runs_again() {
    ensure_responder();
    let d = tempfile::tempdir().unwrap();
    let plan = plan(d.path(), "1s");
    let o = campaign(&plan);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let run = d.path().join("c/001-none-r1");
    for (file, damage) in [("run.json", &b"{\"complete\": tr"[..]), ("run.raw", &b"LATPROBE-RAX"[..])] {
        std::fs::write(run.join(file), damage).unwrap();
        let o = campaign(&plan);
        assert_eq!(o.status.code(), Some(0), "{file}: {}", show(&o));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.contains(&format!(
                "was done, but its {}",
                if file == "run.json" { "report" } else { "raw file" }
            )),
            "{e}"
        );
        assert!(e.contains("no longer loads") && e.contains("running it again"), "{e}");
        assert_eq!(json(&run.join("run.json"))["complete"], true);
        assert!(latprobe::rawfile::open(&run.join("run.raw")).is_ok());
    }
}

/// Errors that mislead: a plan whose args or matrix would break every run
/// fails before the first run starts, naming the run and the flag; a
/// phase of 0 s is not "whole seconds"; a long name is not blamed on
/// --out; and a campaign whose every run fails at its start says so and
/// gives the resume command with its --out.
#[test]
fn a_plan_that_breaks_every_run_fails_before_the_first() {
    let d = tempfile::tempdir().unwrap();
    let plan = d.path().join("plan.toml");
    let head = "[campaign]\nname = \"c\"\ncommand = \"demo\"\n";
    for (body, want) in [
        ("args = [\"--durration\", \"1s\"]\n", "--durration"),
        ("[matrix]\nload = [\"none\", \"hackbench:0\"]\n", "hackbench:0"),
        ("[matrix]\ninterval = [\"1ms\", \"2 ms\"]\n", "one word"),
        ("[matrix]\ninterval = [\"1ms\", \"2xs\"]\n", "--interval 2xs"),
        ("args = [\"--load\", \"hackbench\", \"--load-schedule\", \"idle=0s,load=5s\"]\n", "at least 1s"),
    ] {
        std::fs::write(&plan, format!("{head}{body}")).unwrap();
        let t0 = Instant::now();
        let o = campaign(&plan);
        assert_eq!(o.status.code(), Some(2), "{body}: {}", show(&o));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(want) && e.contains("plan.toml"), "{body}: want {want}: {e}");
        assert!(!e.contains("to resume") && !e.contains("[1/"), "{body}: a run started: {e}");
        assert!(t0.elapsed() < Duration::from_secs(10), "{body}");
        assert!(!d.path().join("c").exists(), "{body}: the campaign's folder was made");
    }
    std::fs::write(&plan, format!("[campaign]\nname = \"{}\"\ncommand = \"demo\"\n", "n".repeat(300)))
        .unwrap();
    let o = campaign(&plan);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("at most 100") && !e.contains("--out"), "{e}");

    // A run that fails at its start (no such port): the hint says so, with --out.
    let out = d.path().join("elsewhere");
    std::fs::write(
        &plan,
        format!(
            "[campaign]\nname = \"c\"\ncommand = \"run\"\nargs = [\"--port\", \"{}\"]\n",
            d.path().join("no-tty").display()
        ),
    )
    .unwrap();
    let o = latprobe().arg("campaign").arg(&plan).arg("--out").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("every run tried failed at its start"), "{e}");
    assert!(e.contains(&format!("--out {}", out.display())), "{e}");
}
