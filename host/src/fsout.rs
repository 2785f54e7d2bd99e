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
    let dest = target(path);
    let existing = std::fs::metadata(&dest);
    match &existing {
        _ if special(&dest) => return std::fs::write(&dest, bytes),
        Ok(m) if !m.is_file() && !m.is_dir() => return std::fs::write(&dest, bytes),
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
    let mut f = match std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && existing.is_ok() => {
            return std::fs::write(&dest, bytes);
        }
        Err(e) => return Err(e),
    };
    let result = (|| {
        if let Ok(m) = &existing {
            // Keep the replaced file's mode (a shared report stays shared).
            f.set_permissions(m.permissions())?;
        }
        f.write_all(bytes)?;
        // Data on disk before the name points at it: after a crash the
        // path holds the old file or the new one, not an empty one.
        f.sync_data()?;
        std::fs::rename(&tmp, &dest)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
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
