//! Output files written whole or not at all: each is written to a
//! temporary file in its own directory, synced, and renamed into place, so
//! a full disk or a crash leaves the old file (or none) at the path, never
//! a cut one. A symbolic link as an output (even a dangling one) is
//! followed: its target is written and the link stays. A device or a pipe,
//! and any path under `/dev` or `/proc` (`/dev/null`, `/dev/stdout`, which
//! may lead to a shell's redirection), is written directly: it has no
//! directory to rename in. So is an existing file in a directory latprobe
//! may not create files in (a writable file in someone else's directory).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Symbolic links followed before giving up (the kernel's own limit is 40).
const MAX_LINKS: usize = 40;

/// The file that writing to `p` writes: `p` with every symbolic link in its
/// last component followed, even when the link's target does not exist yet.
/// A link loop (or a chain longer than 40) is returned as is, and fails
/// when written.
pub fn target(p: &Path) -> PathBuf {
    let mut cur = p.to_path_buf();
    for _ in 0..MAX_LINKS {
        if special(&cur) {
            return cur;
        }
        let Ok(to) = std::fs::read_link(&cur) else { return cur };
        cur = if to.is_absolute() { to } else { cur.parent().map_or_else(|| to.clone(), |d| d.join(&to)) };
    }
    cur
}

/// A path under `/dev` or `/proc`: devices, and a process's own files.
fn special(p: &Path) -> bool {
    p.starts_with("/dev") || p.starts_with("/proc")
}

/// Write `bytes` to `path` whole, or leave `path` as it was.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let (staged, mut f) = create(path)?;
    match f.write_all(bytes) {
        Ok(()) => staged.commit().map(drop),
        Err(e) => {
            staged.abandon();
            Err(e)
        }
    }
}

/// An output being written as a stream (a per-sample export): to a
/// temporary file beside its target that takes the target's name only at
/// [`Staged::commit`], or, for a device, a pipe or a file latprobe cannot
/// create beside, to the path itself. The same rules as [`write()`].
#[derive(Debug)]
pub struct Staged {
    /// The file the output becomes (links followed).
    dest: PathBuf,
    /// The temporary file and a handle on it (to sync it before the
    /// rename); `None` when written in place.
    temp: Option<(PathBuf, std::fs::File)>,
}

/// Open the output `path` for writing: the handle to write to, and the
/// [`Staged`] that names it when done.
pub fn create(path: &Path) -> std::io::Result<(Staged, std::fs::File)> {
    let dest = target(path);
    let existing = std::fs::metadata(&dest);
    let in_place = |dest: PathBuf| {
        let f = std::fs::File::create(&dest)?;
        Ok((Staged { dest, temp: None }, f))
    };
    match &existing {
        _ if special(&dest) => return in_place(dest),
        Ok(m) if !m.is_file() && !m.is_dir() => return in_place(dest),
        _ => {}
    }
    let dir = dest.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = dest.file_name().map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    static SERIAL: AtomicU32 = AtomicU32::new(0);
    let tmp = dir.join(format!(
        ".{name}.latprobe-{}-{}.tmp",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed)
    ));
    let f = match std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && existing.is_ok() => {
            return in_place(dest);
        }
        Err(e) => return Err(e),
    };
    let kept = (|| {
        if let Ok(m) = &existing {
            // Keep the replaced file's mode (a shared report stays shared).
            f.set_permissions(m.permissions())?;
        }
        f.try_clone()
    })();
    match kept {
        Ok(handle) => Ok((Staged { dest, temp: Some((tmp, handle)) }, f)),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

impl Staged {
    /// Everything was written: give the output its name (the file it was
    /// written to, links followed). Data is on disk before the name points
    /// at it: after a crash the path holds the old file or the new one.
    pub fn commit(self) -> std::io::Result<PathBuf> {
        let Some((tmp, f)) = self.temp else { return Ok(self.dest) };
        let result = f.sync_data().and_then(|()| std::fs::rename(&tmp, &self.dest));
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map(|()| self.dest)
    }

    /// The output could not be written whole: remove the temporary file
    /// (what went to a device or a pipe is gone already).
    pub fn abandon(self) {
        if let Some((tmp, _)) = self.temp {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_and_follows_dangling_links() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.txt");
        write(&f, b"one").unwrap();
        write(&f, b"two").unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"two");
        let link = dir.path().join("l");
        std::os::unix::fs::symlink("b.txt", &link).unwrap();
        write(&link, b"three").unwrap();
        assert_eq!(std::fs::read(dir.path().join("b.txt")).unwrap(), b"three");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        write(Path::new("/dev/null"), b"x").unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 3, "no temporary file left: {names:?}");
    }
}
