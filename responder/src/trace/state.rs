//! One traced run per tracefs at a time, and a record of tracefs as it was
//! that outlives the run: `--trace` takes an exclusive `flock` on a state
//! file for the run (the kernel drops it when the holder dies, even by
//! SIGKILL, so a dead run cannot keep it) and writes there, before each
//! change, every setting it is about to change and its value before. A
//! clean end empties the file. A run that finds it not empty follows one
//! that was killed mid-run: it puts those settings back first (the true
//! "before"), and unmounts tracefs if that run had mounted it.
//!
//! ```text
//!  pid 1234
//!  mounted 1
//!  set<TAB>tracing_on<TAB>0
//!  set<TAB>events/sched/sched_switch/enable<TAB>0
//! ```

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::tty::os_message;

/// The state file of the tracefs at `root`: in `/run/latprobe-responder/`
/// (or the temporary directory where `/run` is closed), named after the
/// mount's path, so two mounts of tracefs are two files.
pub fn path_for(root: &Path) -> PathBuf {
    let name: String = root
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' })
        .collect();
    let name = format!("trace{name}.state");
    let run = Path::new("/run/latprobe-responder");
    if std::fs::create_dir_all(run).is_ok() && is_writable(run) {
        return run.join(name);
    }
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let dir = std::env::temp_dir().join(format!("latprobe-responder-{uid}"));
    let _ = std::fs::create_dir_all(&dir);
    dir.join(name)
}

fn is_writable(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else { return false };
    // SAFETY: a valid NUL-terminated path; access(2) only looks.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// What a killed run left in the state file.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Left {
    pub pid: Option<u32>,
    pub mounted: bool,
    /// `(file, value before)`, in the order they were first changed.
    pub saved: Vec<(String, String)>,
}

/// A tracefs file name as the state file may hold it: relative, no `..`.
fn plain_name(f: &str) -> bool {
    !f.is_empty() && !f.starts_with('/') && f.split('/').all(|p| !p.is_empty() && p != "." && p != "..")
}

impl Left {
    /// Parse a state file's text; lines not understood are skipped.
    pub fn parse(text: &str) -> Left {
        let mut left = Left::default();
        for line in text.lines() {
            let mut f = line.split('\t');
            match (f.next(), f.next(), f.next()) {
                (Some("set"), Some(file), Some(value)) if plain_name(file) => {
                    left.saved.push((file.to_string(), value.to_string()))
                }
                _ => {
                    if let Some(p) = line.strip_prefix("pid ") {
                        left.pid = p.trim().parse().ok();
                    } else if line == "mounted 1" {
                        left.mounted = true;
                    }
                }
            }
        }
        left
    }

    /// Nothing to put back.
    pub fn is_empty(&self) -> bool {
        self.saved.is_empty() && !self.mounted
    }
}

/// The state file, locked for the run.
#[derive(Debug)]
pub struct State {
    file: File,
    path: PathBuf,
}

impl State {
    /// Lock the state file at `path` for this run; the error says who holds it.
    pub fn lock(path: &Path) -> Result<State, String> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|e| {
                format!("cannot open the trace state file {}: {}", path.display(), os_message(&e))
            })?;
        // SAFETY: flock on a descriptor this File owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let who = Left::parse(&text).pid.map_or_else(String::new, |p| format!(" (pid {p})"));
                return Err(format!(
                    "another traced run{who} holds {}: one traced run per target at a time",
                    path.display()
                ));
            }
            return Err(format!("cannot lock {}: {}", path.display(), os_message(&e)));
        }
        Ok(State { file, path: path.to_path_buf() })
    }

    /// What a killed run left (empty after a clean one).
    pub fn left(&mut self) -> io::Result<Left> {
        let mut text = String::new();
        self.file.rewind()?;
        self.file.read_to_string(&mut text)?;
        Ok(Left::parse(&text))
    }

    /// Record this run's changes so far, on disk before the next change.
    pub fn record(&mut self, mounted: bool, saved: &[(String, String)]) -> io::Result<()> {
        let mut text = format!("pid {}\nmounted {}\n", std::process::id(), u8::from(mounted));
        for (f, v) in saved.iter().filter(|(f, v)| plain_name(f) && !v.contains(['\n', '\t'])) {
            text.push_str(&format!("set\t{f}\t{v}\n"));
        }
        self.file.set_len(0)?;
        self.file.rewind()?;
        self.file.write_all(text.as_bytes())?;
        self.file.sync_data()
    }

    /// Everything is back as it was: nothing for a later run to restore.
    pub fn clear(&mut self) -> io::Result<()> {
        self.file.set_len(0)?;
        self.file.sync_data()
    }

    /// The file's path, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_a_second_lock_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.state");
        let mut s = State::lock(&p).unwrap();
        assert!(s.left().unwrap().is_empty());
        let saved =
            vec![("tracing_on".to_string(), "0".to_string()), ("../x/enable".to_string(), "0".to_string())];
        s.record(true, &saved).unwrap();
        let e = State::lock(&p).unwrap_err();
        assert!(e.contains(&format!("pid {}", std::process::id())) && e.contains("one traced run"), "{e}");
        let left = s.left().unwrap();
        assert_eq!(left.saved, [("tracing_on".to_string(), "0".to_string())], "a path is never kept");
        assert!(left.mounted);
        drop(s);
        // Its holder gone, the lock is free and the record still there.
        let mut again = State::lock(&p).unwrap();
        assert_eq!(again.left().unwrap().pid, Some(std::process::id()));
        again.clear().unwrap();
        assert!(again.left().unwrap().is_empty());
    }
}
