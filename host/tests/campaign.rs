//! `latprobe campaign plan.toml`: a short demo campaign (two loads × two
//! repeats) on this machine, its folder, manifest, compare table and page;
//! a second call resumes (a finished run is skipped, a missing one runs),
//! and a folder of another plan is refused.

mod common;

use std::os::unix::process::CommandExt as _;
use std::path::Path;

use common::{ensure_responder, json, latprobe, show};

const PLAN: &str = r#"
[campaign]
name = "idle-vs-hackbench"
command = "demo"
args = ["--duration", "1s", "--interval", "2ms"]
repeats = 2

[matrix]
load = ["none", "hackbench:2"]
"#;

fn campaign(plan: &Path) -> std::process::Output {
    latprobe().arg("campaign").arg(plan).output().unwrap()
}

#[test]
fn a_campaign_runs_its_matrix_resumes_and_sets_the_runs_side_by_side() {
    ensure_responder();
    let d = tempfile::tempdir().unwrap();
    let plan = d.path().join("plan.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let o = campaign(&plan);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let dir = d.path().join("idle-vs-hackbench");
    let ids = ["001-none-r1", "002-none-r2", "003-hackbench_2-r1", "004-hackbench_2-r2"];
    for id in ids {
        for f in ["run.json", "run.raw", "run.html"] {
            assert!(dir.join(id).join(f).is_file(), "{id}/{f}: {}", show(&o));
        }
    }
    let r3 = json(&dir.join("003-hackbench_2-r1/run.json"));
    assert_eq!(r3["loads"][0]["name"], "hackbench:2");
    assert!(json(&dir.join("001-none-r1/run.json")).get("loads").is_none());
    let m = json(&dir.join("campaign.json"));
    assert_eq!(m["runs"].as_object().unwrap().len(), 4, "{m:#}");
    assert_eq!(m["runs"]["004-hackbench_2-r2"]["exit_code"], 0);
    let table = std::fs::read_to_string(dir.join("compare.txt")).unwrap();
    let loads = table.lines().find(|l| l.starts_with("loads")).unwrap_or_else(|| panic!("{table}"));
    assert_eq!(
        loads.split_whitespace().collect::<Vec<_>>(),
        ["loads", "none", "none", "hackbench:2", "hackbench:2"]
    );
    assert!(table.contains("load=hackbench:2 r2"), "{table}");
    assert!(std::fs::read_to_string(dir.join("compare.md")).unwrap().starts_with("| |"));
    let page = std::fs::read_to_string(dir.join("index.html")).unwrap();
    for id in ids {
        assert!(page.contains(&format!("href=\"{id}/run.html\"")), "{page}");
    }
    // The grouped comparison: one group per load, its two repeats as its runs.
    let groups = std::fs::read_to_string(dir.join("groups.txt")).unwrap();
    for want in ["load=none", "load=hackbench:2", "2 runs"] {
        assert!(groups.contains(want), "{want}: {groups}");
    }
    assert!(std::fs::read_to_string(dir.join("groups.md")).unwrap().contains('|'));
    assert!(page.contains("By matrix combination"), "{page}");

    // Again: every run is done, none runs.
    let o = campaign(&plan);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.matches("done before, skipped").count(), 4, "{e}");

    // A run whose report is gone (an interrupted campaign) runs again, alone.
    let before = std::fs::metadata(dir.join("001-none-r1/run.json")).unwrap().modified().unwrap();
    std::fs::remove_file(dir.join("003-hackbench_2-r1/run.json")).unwrap();
    let o = campaign(&plan);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.matches("done before, skipped").count(), 3, "{e}");
    assert!(e.contains("[3/4] 003-hackbench_2-r1: latprobe demo"), "{e}");
    assert!(dir.join("003-hackbench_2-r1/run.json").is_file());
    assert_eq!(std::fs::metadata(dir.join("001-none-r1/run.json")).unwrap().modified().unwrap(), before);

    // Another plan in the same folder is refused, naming the way out.
    std::fs::write(&plan, PLAN.replace("repeats = 2", "repeats = 3")).unwrap();
    let o = campaign(&plan);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("another plan: give another --out"), "{}", show(&o));
}

/// Ctrl-C reaches the run under way first (it stops and writes its files,
/// `complete: false`), then the campaign stops: that run is recorded as not
/// complete (so a resume runs it again: `Entry::done`, unit-tested) and no
/// later run starts.
#[test]
fn an_interrupted_campaign_stops_and_its_cut_run_is_run_again() {
    ensure_responder();
    let d = tempfile::tempdir().unwrap();
    let plan = d.path().join("plan.toml");
    std::fs::write(&plan, PLAN.replace("\"1s\"", "\"20s\"").replace("repeats = 2", "repeats = 1")).unwrap();
    let mut child = latprobe()
        .arg("campaign")
        .arg(&plan)
        .process_group(0)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let dir = d.path().join("idle-vs-hackbench");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !dir.join("001-none-r1").is_dir() {
        assert!(std::time::Instant::now() < until, "the first run did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_secs(2));
    // SAFETY: kill(2) on the campaign's own process group, as a terminal's Ctrl-C.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    let o = common::wait_with_timeout(&mut child, std::time::Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("001-none-r1 did not complete") && e.contains("to resume"), "{e}");
    assert!(!e.contains("002-"), "the campaign went on after Ctrl-C: {e}");
    let m = json(&dir.join("campaign.json"));
    assert_eq!(m["runs"]["001-none-r1"]["complete"], false, "{m:#}");
    assert!(m["runs"].get("002-hackbench_2-r1").is_none(), "{m:#}");
}
