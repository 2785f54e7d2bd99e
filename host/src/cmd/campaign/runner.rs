//! How a campaign runs its runs and keeps its folder its own: a lock on
//! the folder that a dead holder cannot keep (`flock` on `.campaign.lock`,
//! released by the kernel when the campaign's process ends, however it
//! ends), each run a child that dies with the campaign (SIGTERM when the
//! campaign's process goes, so it still writes its files), in a process
//! group of its own to which the campaign forwards every stop signal it
//! gets (a CI cancellation signals the campaign's PID alone), and the
//! run's raw file written under a name of the campaign's own and renamed
//! into place when the run is over, whole or not at all. The lock file
//! names the run under way, so that a campaign taking over from a dead one
//! waits for that run (told to stop) to end before running in its folder.

use std::os::unix::io::AsRawFd as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::Error;

/// The lock file in a campaign's folder.
pub const LOCK_FILE: &str = ".campaign.lock";

/// The campaign's hold on its folder: kept open for the campaign's life.
#[derive(Debug)]
pub struct FolderLock {
    _file: std::fs::File,
    path: PathBuf,
}

impl FolderLock {
    /// Record the run under way (`run PID`), for a campaign that finds
    /// this one dead: its run, told to stop, may still be ending.
    fn record(&self, run: Option<u32>) {
        let run = run.map(|r| format!("run {r}\n")).unwrap_or_default();
        let _ = std::fs::write(&self.path, format!("campaign {}\n{run}", std::process::id()));
    }
}

/// How long a dead campaign's run is given to stop (it got SIGTERM when
/// its campaign died, and writes its files first).
const ORPHAN_WAIT: Duration = Duration::from_secs(30);

/// Wait for the run a dead campaign recorded in its lock file, if it is
/// still in `dir` (its working directory inside it: not a PID reused).
fn wait_for_orphan(dir: &Path, recorded: &str) -> Result<(), Error> {
    let Some(pid) = recorded.lines().find_map(|l| l.strip_prefix("run ")?.trim().parse::<u32>().ok()) else {
        return Ok(());
    };
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let alive = || std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c.starts_with(&dir));
    if !alive() {
        return Ok(());
    }
    crate::stderr_line!(
        "latprobe campaign: run {pid} of a campaign that ended is still stopping in {}: waiting for it",
        dir.display()
    );
    let until = std::time::Instant::now() + ORPHAN_WAIT;
    while alive() {
        if std::time::Instant::now() > until {
            return Err(Error::Input(format!(
                "{}: run {pid} of a campaign that ended is still running in this folder: wait for it to end \
                 (or end it: kill {pid}), then resume",
                dir.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// Lock `dir` for this campaign, or say that another holds it.
pub fn lock(dir: &Path) -> Result<FolderLock, Error> {
    let path = dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error::Output(format!("cannot open the campaign's lock {}: {e}", path.display())))?;
    // SAFETY: flock(2) on a descriptor this File owns and keeps open; it
    // touches no memory. Opened close-on-exec (Rust's default), so the
    // runs do not inherit it and the lock ends with this process.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        return Err(if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Error::Input(format!(
                "{}: another latprobe campaign is running in this folder: wait for it to end, or give another --out",
                dir.display()
            ))
        } else {
            Error::Output(format!("cannot lock the campaign's folder ({}): {e}", path.display()))
        });
    }
    let recorded = std::fs::read_to_string(&path).unwrap_or_default();
    wait_for_orphan(dir, &recorded)?;
    let lock = FolderLock { _file: file, path };
    lock.record(None);
    Ok(lock)
}

/// The name this campaign's runs write their raw file under until it is
/// whole: `run.raw.PID.part`.
pub fn raw_part_name() -> String {
    format!("run.raw.{}.part", std::process::id())
}

/// Remove what a dead campaign's run left in `run_dir` (its raw file
/// under its own name, never renamed into place), saying so. Only called
/// with the folder locked, so no live campaign writes them.
pub fn remove_leftovers(run_dir: &Path) {
    let mine = raw_part_name();
    let Ok(entries) = std::fs::read_dir(run_dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("run.raw.") && name.ends_with(".part") && name != mine {
            let p = e.path();
            if std::fs::remove_file(&p).is_ok() {
                crate::stderr_line!(
                    "latprobe campaign: removed {}, left by a campaign that did not end",
                    p.display()
                );
            }
        }
    }
}

/// Put the raw file a run wrote under [`raw_part_name`] into place as
/// `run.raw`: synced, then renamed (the old `run.raw` stays until then).
pub fn settle_raw(run_dir: &Path) -> Result<Option<PathBuf>, Error> {
    let part = run_dir.join(raw_part_name());
    if !part.exists() {
        return Ok(None);
    }
    let raw = run_dir.join("run.raw");
    std::fs::File::open(&part)
        .and_then(|f| f.sync_all())
        .and_then(|()| std::fs::rename(&part, &raw))
        .map_err(|e| Error::io(format!("cannot put {} in place as {}", part.display(), raw.display()), e))?;
    Ok(Some(raw))
}

/// Run `exe args` in `dir` and wait for it, forwarding to it each stop
/// signal the campaign gets (counted by `interrupts`) as a SIGTERM.
pub fn run_child(
    exe: &Path,
    args: &[String],
    dir: &Path,
    interrupts: &AtomicUsize,
    lock: &FolderLock,
) -> Result<ExitStatus, Error> {
    let parent = std::process::id() as libc::pid_t;
    let mut cmd = Command::new(exe);
    // Its own process group, so that a terminal's Ctrl-C reaches it once
    // (forwarded), not twice; no terminal input, which a background group
    // may not read.
    cmd.args(args).current_dir(dir).process_group(0).stdin(std::process::Stdio::null());
    // SAFETY: runs in the forked child before exec and calls only
    // async-signal-safe functions (prctl, getppid), allocating nothing.
    // PR_SET_PDEATHSIG makes the kernel send SIGTERM to the run when the
    // campaign's thread that forked it ends; the getppid check closes the
    // window where the campaign ended before the prctl.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(std::io::Error::other("the campaign ended before its run started"));
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| Error::io(format!("cannot start {}", exe.display()), e))?;
    lock.record(Some(child.id()));
    let mut forwarded = 0;
    loop {
        if let Some(status) =
            child.try_wait().map_err(|e| Error::io(format!("cannot wait for {}", exe.display()), e))?
        {
            lock.record(None);
            return Ok(status);
        }
        while forwarded < interrupts.load(Ordering::SeqCst) {
            // SAFETY: kill(2) on the run this campaign started and has not
            // yet reaped, so its PID is still its own.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            forwarded += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
