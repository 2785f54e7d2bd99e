//! tracefs: finding (or mounting) it, and the guard that puts back every
//! setting `--trace` changes.
//!
//! The responder changes only what it names: `tracing_on`, `current_tracer`,
//! `trace_clock`, `buffer_size_kb` and the `enable` file of each event it
//! turns on. [`Restore`] reads each one before the first write and writes it
//! back when dropped, so a run that ends by Ctrl-C, by SIGTERM, by an error
//! or by a panic leaves the kernel's tracing as it found it, and unmounts
//! tracefs if it mounted it. SIGKILL cannot be caught: then the values
//! before are in the state file (the `state` module), and the next traced run
//! puts them back first.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::tty::os_message;

/// Where tracefs lives on every kernel since 4.1.
pub const DEFAULT_ROOT: &str = "/sys/kernel/tracing";

/// A tracefs mount, found or made.
#[derive(Debug, Clone)]
pub struct Tracefs {
    root: PathBuf,
    /// The responder mounted it (it was not mounted before).
    pub mounted_here: bool,
}

impl Tracefs {
    /// The tracefs at `root`, mounting it there when it is not mounted yet
    /// (which needs root). The error says why tracing cannot be used.
    pub fn open(root: &Path) -> Result<Tracefs, String> {
        match fs::metadata(root.join("tracing_on")) {
            Ok(_) => return Tracefs::check(root, false),
            // Mounted, but its directory (0700) is closed to this user:
            // mounting again would fail and say the wrong thing.
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                return Err(format!(
                    "cannot look into {}: {} (tracefs there is for root only: run the responder as root)",
                    root.display(),
                    os_message(&e)
                ))
            }
            Err(_) => {}
        }
        if !root.is_dir() {
            return Err(format!("{} does not exist (a kernel without tracefs?)", root.display()));
        }
        mount_tracefs(root).map_err(|e| {
            format!("tracefs is not mounted at {} and mounting it failed: {}", root.display(), os_message(&e))
        })?;
        Tracefs::check(root, true)
    }

    fn check(root: &Path, mounted_here: bool) -> Result<Tracefs, String> {
        // Writable tracing_on is the whole permission question.
        OpenOptions::new()
            .write(true)
            .open(root.join("tracing_on"))
            .map_err(|e| format!("cannot write {}/tracing_on: {}", root.display(), os_message(&e)))?;
        Ok(Tracefs { root: root.to_path_buf(), mounted_here })
    }

    /// A file under the mount.
    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Read a tracefs file, trimmed.
    pub fn read(&self, name: &str) -> io::Result<String> {
        Ok(fs::read_to_string(self.path(name))?.trim().to_string())
    }

    /// Write a value (O_TRUNC and one write(2), as the shell's `echo >` does).
    pub fn write(&self, name: &str, value: &str) -> io::Result<()> {
        let mut f = OpenOptions::new().write(true).truncate(true).open(self.path(name))?;
        f.write_all(value.as_bytes()).map_err(|e| {
            io::Error::new(e.kind(), format!("writing '{value}' to {}: {}", name, os_message(&e)))
        })
    }

    /// The first event line in the ring buffer (not a `#` header line), if
    /// it holds any: read line by line, so a full buffer is not read whole.
    pub fn first_event(&self) -> Option<String> {
        use std::io::BufRead;
        let f = File::open(self.path("trace")).ok()?;
        io::BufReader::new(f)
            .lines()
            .map_while(Result::ok)
            .take(10_000)
            .find(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| l.trim().chars().take(120).collect())
    }

    /// Empty the ring buffer (as `echo > trace`).
    pub fn clear_buffer(&self) -> io::Result<()> {
        OpenOptions::new().write(true).truncate(true).open(self.path("trace")).map(drop)
    }

    /// Open a file for writing, kept open for the run (`tracing_on`,
    /// `trace_marker`): one write(2) each time, no open on the hot path.
    pub fn open_write(&self, name: &str) -> io::Result<File> {
        OpenOptions::new().write(true).open(self.path(name))
    }

    /// The bracketed choice of a file such as `trace_clock` or
    /// `current_tracer` (which has no brackets).
    pub fn current_choice(&self, name: &str) -> io::Result<String> {
        let text = self.read(name)?;
        Ok(bracketed(&text).unwrap_or(&text).to_string())
    }

    /// An event's directory under `events/`, from `name`, `group/name`,
    /// `group:name` or a whole `group`; `None` for anything but a name
    /// ([`check_event_spec`]) or one this kernel lacks.
    pub fn find_event(&self, spec: &str) -> Option<String> {
        check_event_spec(spec).ok()?;
        let events = self.path("events");
        if let Some((group, name)) = spec.split_once(['/', ':']) {
            let ev = format!("{group}/{name}");
            return events.join(&ev).join("enable").is_file().then_some(ev);
        }
        let groups = fs::read_dir(&events).ok()?;
        let mut found: Vec<String> = groups
            .flatten()
            .filter(|g| g.path().join(spec).join("enable").is_file())
            .map(|g| format!("{}/{spec}", g.file_name().to_string_lossy()))
            .collect();
        found.sort();
        // No event of that name: a group's own `enable` turns on all of it.
        found
            .into_iter()
            .next()
            .or_else(|| events.join(spec).join("enable").is_file().then(|| spec.to_string()))
    }
}

/// An event spec is a name, never a path: `name`, `group/name`,
/// `group:name` or `group`, each part letters, digits, `_`, `-` or `.`
/// (as the kernel's event and group names are), not starting with `.` or
/// `-`. The error says what was refused.
pub fn check_event_spec(spec: &str) -> Result<(), String> {
    let part_ok = |p: &str| {
        !p.is_empty()
            && !p.starts_with(['.', '-'])
            && p.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    let ok = match spec.split_once(['/', ':']) {
        Some((group, name)) => part_ok(group) && part_ok(name),
        None => part_ok(spec),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "'{}' is not an event name: give NAME, GROUP/NAME, GROUP:NAME or GROUP (e.g. sched_switch, \
             sched/sched_switch, sched), as listed under tracefs events/",
            spec.escape_debug()
        ))
    }
}

/// `[mono]` in `local global [mono] boot`.
pub fn bracketed(text: &str) -> Option<&str> {
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    Some(&text[start + 1..end])
}

/// `7 (expanded: 1408)` → `1408`: the size the buffer takes once used, which
/// is what an untouched kernel would have.
pub fn buffer_size_to_restore(text: &str) -> String {
    match text.split_once("(expanded:") {
        Some((_, rest)) => rest.trim_end_matches(')').trim().to_string(),
        None => text.trim().to_string(),
    }
}

/// Unmount what [`mount_tracefs`] mounted.
fn unmount(root: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let target = CString::new(root.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: a valid NUL-terminated path that outlives the call.
    if unsafe { libc::umount(target.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn mount_tracefs(root: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let target = CString::new(root.as_os_str().as_bytes()).map_err(io::Error::other)?;
    let fstype = c"tracefs";
    let source = c"nodev";
    // SAFETY: every pointer is a valid NUL-terminated string that outlives
    // the call; no mount data.
    let rc = unsafe { libc::mount(source.as_ptr(), target.as_ptr(), fstype.as_ptr(), 0, std::ptr::null()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Every setting `--trace` touched, as it was before; written back on drop.
#[derive(Debug)]
pub struct Restore {
    fs: Tracefs,
    /// `(file, value before)`, in the order they were first changed.
    saved: Vec<(String, String)>,
    restored: bool,
    /// The run's lock and the record of `saved` that outlives a SIGKILL.
    state: Option<super::state::State>,
}

impl Restore {
    /// Nothing saved yet, and no state file (tests).
    #[cfg(test)]
    pub fn new(fs: Tracefs) -> Restore {
        Restore { fs, saved: Vec::new(), restored: false, state: None }
    }

    /// A guard holding `state` (locked) for the run: first put
    /// back what a killed run left changed (its problems, if any, and the
    /// killed run's pid and settings count for the warning), then record
    /// every change in it before making it.
    pub fn with_state(
        mut fs: Tracefs,
        mut state: super::state::State,
    ) -> Result<(Restore, Option<String>, Vec<String>), String> {
        let path = state.path().display().to_string();
        let w = |e: io::Error| format!("trace state file {path}: {e}");
        let left = state.left().map_err(w)?;
        let mut problems = Vec::new();
        let note = (!left.is_empty()).then(|| {
            for (file, old) in left.saved.iter().rev() {
                if let Err(e) = fs.write(file, old) {
                    problems.push(format!("cannot restore {file} to '{old}' (left by a killed run): {e}"));
                }
            }
            let who = left.pid.map_or_else(String::new, |p| format!(" (pid {p})"));
            format!(
                "a traced run{who} was killed before it could restore tracefs: put back the {} settings it \
                 had changed{}",
                left.saved.len(),
                if left.mounted { ", and tracefs is unmounted at the end, as it had mounted it" } else { "" }
            )
        });
        // A killed run's mount is this run's to undo.
        fs.mounted_here |= left.mounted;
        state.record(fs.mounted_here, &[]).map_err(w)?;
        Ok((Restore { fs, saved: Vec::new(), restored: false, state: Some(state) }, note, problems))
    }

    /// The mount this guard writes to.
    pub fn fs(&self) -> &Tracefs {
        &self.fs
    }

    /// Write `value` to `file`, remembering the value before the first
    /// change. `before` turns the file's text into what to write back.
    pub fn set(&mut self, file: &str, value: &str, before: fn(&str) -> String) -> io::Result<()> {
        if !self.saved.iter().any(|(f, _)| f == file) {
            let old = fs::read_to_string(self.fs.path(file))?;
            self.saved.push((file.to_string(), before(old.trim())));
            // On disk before the change: a SIGKILL now still leaves the truth.
            if let Some(s) = &mut self.state {
                s.record(self.fs.mounted_here, &self.saved)?;
            }
        }
        self.fs.write(file, value)
    }

    /// Put everything back, last change first; the problems, if any.
    pub fn restore(&mut self) -> Vec<String> {
        self.restored = true;
        let mut problems = Vec::new();
        // tracing_on was saved first, so it is written back last: the old
        // events are back before tracing resumes (if it was on).
        for (file, old) in self.saved.iter().rev() {
            // A cleared `current_tracer` reads `nop`, which is also what to write.
            if let Err(e) = self.fs.write(file, old) {
                problems.push(format!("cannot restore {file} to '{old}': {e}"));
            }
        }
        if self.fs.mounted_here {
            if let Err(e) = unmount(&self.fs.root) {
                problems.push(format!(
                    "cannot unmount tracefs at {} (mounted for this run): {e}",
                    self.fs.root.display()
                ));
            }
        }
        // All back: nothing for the next run to put back. (With a problem
        // the record stays, and the next run tries again.)
        if let Some(s) = self.state.as_mut().filter(|_| problems.is_empty()) {
            if let Err(e) = s.clear() {
                problems.push(format!("cannot empty the trace state file {}: {e}", s.path().display()));
            }
        }
        problems
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        if !self.restored {
            for p in self.restore() {
                eprintln!("warning: --trace: {p}");
            }
        }
    }
}

/// Keep the text as it is.
pub fn as_is(text: &str) -> String {
    text.to_string()
}

/// The bracketed choice, for `trace_clock`.
pub fn choice(text: &str) -> String {
    bracketed(text).unwrap_or(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_and_buffer_sizes() {
        assert_eq!(bracketed("[local] global counter mono"), Some("local"));
        assert_eq!(bracketed("local global [mono] boot"), Some("mono"));
        assert_eq!(bracketed("nop"), None);
        assert_eq!(buffer_size_to_restore("7 (expanded: 1408)"), "1408");
        assert_eq!(buffer_size_to_restore("2048"), "2048");
    }

    /// A fake tracefs in a temporary directory: the guard writes back what
    /// it found, in reverse order, whatever it changed in between.
    #[test]
    fn the_guard_writes_back_what_it_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("tracing_on"), "1\n").unwrap();
        fs::write(root.join("trace_clock"), "[local] global mono\n").unwrap();
        fs::create_dir_all(root.join("events/sched/sched_switch")).unwrap();
        fs::write(root.join("events/sched/sched_switch/enable"), "0\n").unwrap();
        let fs_ = Tracefs::open(root).unwrap();
        assert!(!fs_.mounted_here);
        assert_eq!(fs_.find_event("sched_switch").as_deref(), Some("sched/sched_switch"));
        assert_eq!(fs_.find_event("sched/sched_switch").as_deref(), Some("sched/sched_switch"));
        assert_eq!(fs_.find_event("sched:sched_switch").as_deref(), Some("sched/sched_switch"));
        fs::write(root.join("events/sched/enable"), "0\n").unwrap();
        assert_eq!(fs_.find_event("sched").as_deref(), Some("sched"));
        assert_eq!(fs_.find_event("nosuch"), None);
        for bad in
            ["../sched/sched_switch", "sched/../sched/sched_switch", "..", ".", "/x", "a/b/c", "-x", ""]
        {
            assert!(check_event_spec(bad).is_err(), "{bad}");
            assert_eq!(fs_.find_event(bad), None, "{bad}");
        }
        {
            let mut g = Restore::new(fs_.clone());
            g.set("tracing_on", "0", as_is).unwrap();
            g.set("trace_clock", "mono", choice).unwrap();
            g.set("events/sched/sched_switch/enable", "1", as_is).unwrap();
            g.set("tracing_on", "1", as_is).unwrap();
            assert_eq!(fs::read_to_string(root.join("events/sched/sched_switch/enable")).unwrap(), "1");
        }
        assert_eq!(fs::read_to_string(root.join("tracing_on")).unwrap(), "1");
        assert_eq!(fs::read_to_string(root.join("trace_clock")).unwrap(), "local");
        assert_eq!(fs::read_to_string(root.join("events/sched/sched_switch/enable")).unwrap(), "0");
    }

    #[test]
    fn a_missing_tracefs_says_why() {
        let e = Tracefs::open(Path::new("/nonexistent/tracing")).unwrap_err();
        assert!(e.contains("/nonexistent/tracing does not exist"), "{e}");
    }
}
