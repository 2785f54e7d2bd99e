//! What a killed `demo` left on this machine: its files and directories in
//! the temporary directory, `latprobe-demo-PID.*` (the trigger FIFO, the
//! responder's metadata and log, the loads' files, trace snapshots). A
//! later demo removes those whose process no longer runs, saying so.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// The prefix of a demo's temporary files, followed by its pid and a dot.
pub const DEMO_PREFIX: &str = "latprobe-demo-";

/// The demo leftovers in `dir` whose process has ended: this user's
/// `latprobe-demo-PID.*` entries whose PID does not run (a running one's,
/// even another user's, are never touched). Each with its pid.
pub fn dead_demo_files(dir: &Path) -> Vec<(PathBuf, u32)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    // SAFETY: getuid has no preconditions.
    let me = unsafe { libc::getuid() };
    let mut found: Vec<(PathBuf, u32)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let (pid, _) = name.strip_prefix(DEMO_PREFIX)?.split_once('.')?;
            let pid: u32 =
                pid.parse().ok().filter(|p: &u32| pid.bytes().all(|b| b.is_ascii_digit()) && *p > 0)?;
            let owned = e.metadata().is_ok_and(|m| m.uid() == me);
            let ended = pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists();
            (owned && ended).then(|| (e.path(), pid))
        })
        .collect();
    found.sort();
    found
}

/// Remove what killed demos left in `dir` (the temporary directory),
/// saying what went; best effort.
pub fn remove_dead_demo_files(dir: &Path) {
    for (p, pid) in dead_demo_files(dir) {
        let is_dir = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir());
        let removed = if is_dir { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
        if removed.is_ok() {
            crate::stderr_line!(
                "latprobe: removed {}: left by a demo (pid {pid}) that ended without cleaning up",
                p.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_ended_demos_files_are_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // Beyond the kernel's pid_max: never running.
        let dead = 4_194_305u32;
        let me = std::process::id();
        for name in [
            format!("{DEMO_PREFIX}{dead}.target.json"),
            format!("{DEMO_PREFIX}{me}.target.json"),
            format!("{DEMO_PREFIX}1.trigger"),
            format!("{DEMO_PREFIX}x{dead}.log"),
            format!("latprobe-{dead}-r.json"),
        ] {
            std::fs::write(d.join(name), "x").unwrap();
        }
        std::fs::create_dir_all(d.join(format!("{DEMO_PREFIX}{dead}.loads/sub"))).unwrap();
        let found: Vec<String> = dead_demo_files(d)
            .into_iter()
            .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(found, [format!("{DEMO_PREFIX}{dead}.loads"), format!("{DEMO_PREFIX}{dead}.target.json")]);
        remove_dead_demo_files(d);
        assert!(dead_demo_files(d).is_empty());
        assert!(d.join(format!("{DEMO_PREFIX}{me}.target.json")).exists());
        assert!(d.join(format!("{DEMO_PREFIX}1.trigger")).exists(), "pid 1 runs");
    }
}
