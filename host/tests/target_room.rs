//! Room on the target (issue 43, finding 11), on a small tmpfs as the
//! target's TMPDIR (the demo's target is this machine; the tmpfs is mounted
//! in a private mount namespace with `unshare`, so nothing else sees it):
//! `--load dd` there is refused before the run, naming `--load-dir`, and
//! with `--load-dir` elsewhere the periodic run keeps its whole log; a log
//! bigger than the room is capped on the target with a note, and the run
//! goes on to its end instead of dying with a full disk.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::{ensure_responder, json, show, wait_with_timeout};

/// `latprobe ARGS` with a fresh tmpfs of `size` mounted at `mnt` in a
/// mount namespace of its own, as its TMPDIR when `tmpdir`.
fn on_small_tmp(mnt: &Path, size: &str, tmpdir: bool, args: &[&str]) -> Output {
    ensure_responder();
    let exe = env!("CARGO_BIN_EXE_latprobe");
    // SAFETY: geteuid(2) has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut c = Command::new("unshare");
    // Without root, a user namespace gives the right to mount a tmpfs.
    c.arg(if root { "-m" } else { "-rm" });
    c.args(["sh", "-c", "mount -t tmpfs -o size=\"$1\" tmpfs \"$2\" || exit 97; shift 2; exec \"$@\"", "sh"]);
    c.arg(size).arg(mnt).arg(exe).args(args);
    if tmpdir {
        c.env("TMPDIR", mnt);
    }
    c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = c.spawn().expect("unshare (util-linux)");
    let o = wait_with_timeout(&mut child, Duration::from_secs(60));
    assert_ne!(
        o.status.code(),
        Some(97),
        "cannot mount a tmpfs (needs root or user namespaces): {}",
        show(&o)
    );
    o
}

/// dd's 256 MiB cannot fit an 8 MiB TMPDIR: today the periodic run was
/// killed when dd filled it under the responder's log. Now it is refused
/// before anything runs, naming --load-dir; with --load-dir on a roomy
/// filesystem the run keeps its log whole beside dd.
#[test]
fn dd_on_a_small_tmp_is_refused_naming_load_dir_and_runs_with_it() {
    let mnt = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let report = out.path().join("r.json");
    let args = ["demo", "--mode", "periodic", "--duration", "4s", "--interval", "1ms", "--load", "dd", "-o"];
    let mut all: Vec<&str> = args.to_vec();
    all.push(report.to_str().unwrap());
    let o = on_small_tmp(mnt.path(), "8m", true, &all);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("--load dd: its files need") && e.contains("give --load-dir DIR"), "{e}");
    assert!(!report.exists(), "refused before the run");

    let roomy = tempfile::tempdir().unwrap();
    all.extend(["--load-dir", roomy.path().to_str().unwrap()]);
    let o = on_small_tmp(mnt.path(), "8m", true, &all);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&report);
    let t = &r["periodic"]["target_log"];
    assert!(t["aligned"].as_u64().unwrap() > 3_000, "the log is whole beside dd: {t}");
    assert!(t.get("capped_at_cycle").is_none(), "{t}");
    assert_eq!(std::fs::read_dir(roomy.path()).unwrap().count(), 0, "dd's files are gone after the run");
}

/// A log bigger than its room (`--target-log` on a 32 KiB filesystem, 4000
/// cycles of about 11 bytes): today the responder died on the full disk
/// and the run with it. Now the log is capped on the target (half the
/// room), the run goes on to its end, and the report says where the log
/// stopped.
#[test]
fn a_log_bigger_than_its_room_is_capped_and_the_run_goes_on() {
    let mnt = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let report = out.path().join("c.json");
    let log = mnt.path().join("t.log");
    let args = ["demo", "--mode", "periodic", "--duration", "4s", "--interval", "1ms", "--target-log"];
    let mut all: Vec<&str> = args.to_vec();
    all.extend([log.to_str().unwrap(), "-o", report.to_str().unwrap()]);
    let o = on_small_tmp(mnt.path(), "32k", false, &all);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("the target's log is capped at") && e.contains("free space there"), "{e}");
    let r = json(&report);
    assert_eq!(r["complete"], true);
    let t = &r["periodic"]["target_log"];
    let capped = t["capped_at_cycle"].as_u64().unwrap_or_else(|| panic!("no cap said: {t}"));
    let samples = r["counts"]["samples"].as_u64().unwrap();
    assert!(capped > 500 && capped * 2 < samples, "capped at {capped} of {samples}: {t}");
    assert!(t["aligned"].as_u64().unwrap() > 500, "{t}");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("the log reached its cap on the target at its cycle"), "{text}");
}
