//! Room on the target for what a run writes there, checked before it
//! starts: the periodic log (about 11 bytes a cycle, capped on the target
//! with `--log-max`) and the loads' files (dd's 256 MiB), which live in a
//! directory apart from the run's (`--load-dir`). A load whose files do not
//! fit is an error that names `--load-dir`; the log's cap is set from the
//! room its filesystem has, so a full disk never ends the run.

use std::path::Path;

use super::load::LoadSpec;
use crate::Error;

/// The log's cap when room allows: about 27 hours of cycles at 1 kHz.
pub const LOG_MAX: u64 = 1 << 30;
/// Below this the log is not worth keeping: the run is refused.
const LOG_MIN: u64 = 8 * 1024;
/// Bytes a log line takes, for the estimate (`123456 5123\n` is 12).
const LOG_LINE: u64 = 14;

/// Free room of a directory's filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Room {
    /// Bytes an unprivileged writer may still use.
    pub avail: u64,
    /// Which filesystem (a device id, or a mount point): two directories
    /// with the same one share their room.
    pub fs: String,
}

/// The room of `dir`'s filesystem on this machine (the demo's target).
pub fn local(dir: &Path) -> Option<Room> {
    use std::os::unix::ffi::OsStrExt as _;
    use std::os::unix::fs::MetadataExt as _;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: all-zero bytes are a valid statvfs for statvfs(3) to fill.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid C string and `st` is valid for writes.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let dev = std::fs::metadata(dir).ok()?.dev();
    Some(Room { avail: (st.f_bavail as u64).saturating_mul(st.f_frsize as u64), fs: dev.to_string() })
}

/// The last line of `df -Pk DIR` as [`Room`]: `FS 1024-blocks Used
/// Available Capacity Mounted-on`.
pub fn parse_df(line: &str) -> Option<Room> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let avail = f.get(3)?.parse::<u64>().ok()?.saturating_mul(1024);
    (f.len() >= 6).then(|| Room { avail, fs: f[5..].join(" ") })
}

/// The room the loads' files need: dd's file and a margin, a compile's
/// sources and objects.
pub fn loads_need(specs: &[LoadSpec]) -> u64 {
    specs
        .iter()
        .map(|s| match s.name.as_str() {
            "dd" => 256 * 1024 * 1024 + 16 * 1024 * 1024,
            "compile" => 16 * 1024 * 1024,
            _ => 0,
        })
        .sum()
}

/// What the run will write on the target, and where.
#[derive(Debug, Clone)]
pub struct Plan<'a> {
    /// The periodic log's directory and its room (`None`: not periodic).
    pub log: Option<(&'a str, Room)>,
    /// The loads' directory and its room.
    pub loads: Option<(&'a str, Room)>,
    /// The loads.
    pub specs: &'a [LoadSpec],
    /// Cycles the run is expected to have (duration / interval), if known.
    pub cycles: Option<u64>,
    /// Where: `this machine`, `ssh://…`.
    pub on: String,
}

/// Check the plan: an error naming `--load-dir` when the loads' files do
/// not fit; else the log's cap (`None`: not periodic), with a warning when
/// the log will stop before the run's end.
pub fn check(p: &Plan<'_>) -> Result<Option<u64>, Error> {
    let need = loads_need(p.specs);
    if let Some((dir, room)) = &p.loads {
        if need > 0 && room.avail < need {
            return Err(Error::Config(format!(
                "--load {}: its files need {} in {dir} on {}, which has {} free: give --load-dir DIR on a \
                 filesystem with room there (or drop the load)",
                p.specs
                    .iter()
                    .filter(|s| loads_need(std::slice::from_ref(s)) > 0)
                    .map(LoadSpec::label)
                    .collect::<Vec<_>>()
                    .join(", "),
                mib(need),
                p.on,
                mib(room.avail)
            )));
        }
    }
    let Some((dir, room)) = &p.log else { return Ok(None) };
    let shared = p.loads.as_ref().is_some_and(|(_, l)| l.fs == room.fs);
    let avail = room.avail.saturating_sub(if shared { need } else { 0 });
    // Half the room: the rest is for the run's other files (trace
    // snapshots) and whatever else the target writes meanwhile.
    let cap = (avail / 2).min(LOG_MAX);
    let fix = if shared { "give --load-dir DIR on another filesystem, or " } else { "" };
    if cap < LOG_MIN {
        return Err(Error::Config(format!(
            "the periodic log on {} needs room in {dir}, which has {} free{}: {fix}free some space there",
            p.on,
            mib(room.avail),
            if shared { format!(" ({} of it for the loads' files)", mib(need)) } else { String::new() }
        )));
    }
    if let Some(c) = p.cycles.filter(|c| c.saturating_mul(LOG_LINE) > cap) {
        crate::stderr_error!(
            "latprobe: warning: the target's log is capped at {} (half of the room in {dir} on {}): it will \
             stop at about cycle {} of {c}, and the later cycles are measured by the probe only; {fix}free \
             space there to keep it all",
            mib(cap),
            p.on,
            cap / LOG_LINE
        );
    }
    Ok(Some(cap))
}

/// [`check`] for the demo, whose target is this machine: the log at
/// `log` (periodic), the loads' directory made in `loads_base`.
pub fn check_local(
    log: Option<&Path>,
    loads_base: &Path,
    specs: &[LoadSpec],
    cycles: Option<u64>,
) -> Result<Option<u64>, Error> {
    if !specs.is_empty() && !loads_base.is_dir() {
        return Err(Error::Config(format!(
            "--load-dir {}: no such directory: give one that exists",
            loads_base.display()
        )));
    }
    let log_dir = log.map(|l| match l.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    });
    let log_name = log_dir.as_ref().map(|d| d.display().to_string());
    let loads_name = loads_base.display().to_string();
    let plan = Plan {
        log: log_dir.as_deref().and_then(local).map(|r| (log_name.as_deref().unwrap_or("."), r)),
        loads: if specs.is_empty() { None } else { local(loads_base).map(|r| (loads_name.as_str(), r)) },
        specs,
        cycles,
        on: "this machine".into(),
    };
    check(&plan)
}

fn mib(b: u64) -> String {
    if b >= 1 << 20 {
        format!("{} MiB", b >> 20)
    } else {
        format!("{} KiB", b >> 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(avail: u64, fs: &str) -> Room {
        Room { avail, fs: fs.into() }
    }

    #[test]
    fn df_lines_parse_with_spaces_in_the_mount_point() {
        assert_eq!(parse_df("tmpfs 4096 12 4084 1% /mnt/a b"), Some(room(4084 * 1024, "/mnt/a b")));
        assert_eq!(parse_df("Filesystem 1024-blocks Used Available Capacity Mounted on"), None);
        assert_eq!(parse_df(""), None);
    }

    #[test]
    fn dd_on_a_small_filesystem_names_load_dir_and_the_log_cap_is_half_the_room() {
        let dd = vec![crate::target::load::parse_load("dd").unwrap()];
        let small = room(8 << 20, "tmp");
        let p = Plan {
            log: Some(("/tmp/latprobe.x", small.clone())),
            loads: Some(("/tmp/latprobe.y", small.clone())),
            specs: &dd,
            cycles: Some(1000),
            on: "this machine".into(),
        };
        let e = check(&p).unwrap_err().to_string();
        assert!(
            e.contains("give --load-dir DIR") && e.contains("/tmp/latprobe.y") && e.contains("8 MiB free"),
            "{e}"
        );
        // Loads elsewhere: the log gets half of its own room.
        let big = room(10 << 30, "home");
        let p = Plan { loads: Some(("/home/x", big.clone())), ..p };
        assert_eq!(check(&p).unwrap(), Some(4 << 20));
        // Sharing a filesystem, the loads' need comes off first; the cap
        // never passes LOG_MAX.
        let p = Plan { log: Some(("/home/l", big.clone())), ..p };
        assert_eq!(check(&p).unwrap(), Some(LOG_MAX));
        let p = Plan {
            log: Some(("/home/l", room(300 << 20, "home"))),
            loads: Some(("/home/x", room(300 << 20, "home"))),
            ..p
        };
        assert_eq!(check(&p).unwrap(), Some(((300 << 20) - loads_need(&dd)) / 2));
        // No room for a log worth keeping: refused, naming the fix.
        let p = Plan { log: Some(("/tmp/l", room(12 << 10, "t"))), loads: None, specs: &[], ..p };
        assert!(check(&p).unwrap_err().to_string().contains("free some space there"));
    }
}
