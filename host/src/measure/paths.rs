//! The paths a command reads and writes, checked before it runs: each
//! output writable and no directory, no two outputs one file, no output an
//! input; and the limits and CI outputs ([`Delivery`]) resolved up front.

use std::path::{Path, PathBuf};

use crate::model::Limits;
use crate::options::{GateArgs, OutputArgs};
use crate::report as rep;
use crate::Error;

/// Check output paths and read `--target-meta` before a run starts, so a
/// typo fails in a second rather than after an hour's measurement: each
/// output must be writable and not a directory, no two may be one file, and
/// none may be an input (`--target-meta`, `--target-log`, `--limits`, and
/// `inputs`, such as `--calibration`).
/// `target_log_written`: the run fetches the target's own log into
/// `--target-log` (`run --target`), which is then an output, not an input.
pub fn check_outputs(
    out: &OutputArgs,
    gates: &Delivery,
    target_log_written: bool,
    inputs: &[(&str, &Path)],
) -> Result<Option<serde_json::Value>, Error> {
    check_output_set(out, gates, target_log_written, inputs)
}

/// [`check_outputs`] for `demo`, where the responder writes `--target-log`.
pub fn check_demo_outputs(out: &OutputArgs, gates: &Delivery) -> Result<Option<serde_json::Value>, Error> {
    check_output_set(out, gates, true, &[])
}

fn check_output_set(
    out: &OutputArgs,
    gates: &Delivery,
    target_log_written: bool,
    inputs: &[(&str, &Path)],
) -> Result<Option<serde_json::Value>, Error> {
    let mut set = PathSet::default();
    check_stdout(out.output.as_deref(), gates)?;
    for (flag, path) in [("--output", &out.output), ("--histfile", &out.histfile), ("--raw", &out.raw)] {
        if let Some(p) = path.as_deref().filter(|p| !(flag == "--output" && is_stdout(p))) {
            check_parent(flag, p)?;
            set.output(flag, p);
        }
    }
    gates.add_to(&mut set);
    if let Some(p) = &out.target_log {
        if target_log_written {
            check_parent("--target-log", p)?;
            set.output("--target-log", p);
        } else {
            set.input("--target-log", p);
        }
    }
    if let Some(p) = &out.target_meta {
        set.input("--target-meta", p);
    }
    for (flag, p) in inputs {
        set.input(flag, p);
    }
    set.check()?;
    out.target_meta.as_deref().map(read_target_meta).transpose()
}

/// `-o -` takes stdout for the JSON: `--lava`'s lines cannot share it.
pub fn check_stdout(output: Option<&Path>, gates: &Delivery) -> Result<(), Error> {
    if output.is_some_and(is_stdout) && gates.lava {
        return Err(Error::Config(
            "-o - and --lava both write to stdout: write the JSON report to a file (-o run.json) \
             or drop --lava"
                .into(),
        ));
    }
    Ok(())
}

/// What makes two paths one file: an existing regular file is its device
/// and inode (so hard and symbolic links are caught), a new one its
/// canonical directory and name (a dangling symbolic link: its target's).
/// Devices and pipes (`/dev/null`) are never the same file as anything.
#[derive(Debug, PartialEq, Eq)]
enum FileKey {
    Inode(u64, u64),
    New(PathBuf),
}

fn file_key(p: &Path) -> Option<FileKey> {
    use std::os::unix::fs::MetadataExt as _;
    match std::fs::metadata(p) {
        Ok(m) if m.is_file() => Some(FileKey::Inode(m.dev(), m.ino())),
        Ok(_) => None,
        Err(_) => Some(FileKey::New(canonical_new(&crate::fsout::target(p)))),
    }
}

/// `p`, which does not exist, with its nearest existing ancestor
/// canonicalized (a `--plot` directory that is still to be made, say).
fn canonical_new(p: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut cur = p;
    loop {
        let dir = if cur.as_os_str().is_empty() { Path::new(".") } else { cur };
        if let Ok(c) = std::fs::canonicalize(dir) {
            return rest.iter().rev().fold(c, |acc: PathBuf, n| acc.join(n));
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                cur = parent;
            }
            _ => return p.to_path_buf(),
        }
    }
}

/// Every file a command reads or writes, by the flag that names it: no two
/// outputs may be one file, and no output may be an input (the second
/// write would silently replace the first, or the input). Checked before
/// anything is measured or written.
#[derive(Debug, Default)]
pub struct PathSet {
    /// Flag, the path as shown, the file, and whether it is written.
    entries: Vec<(String, String, PathBuf, bool)>,
}

impl PathSet {
    /// A file the command reads.
    pub fn input(&mut self, flag: &str, p: &Path) {
        self.entries.push((flag.into(), p.display().to_string(), p.to_path_buf(), false));
    }

    /// A file the command writes.
    pub fn output(&mut self, flag: &str, p: &Path) {
        self.entries.push((flag.into(), p.display().to_string(), p.to_path_buf(), true));
    }

    /// The files `names` that `--plot DIR` (`flag`) writes into `dir`.
    pub fn plot_dir(&mut self, flag: &str, dir: &Path, names: &[&str]) {
        for n in names {
            let p = dir.join(n);
            let shown = format!("{} (its {n})", dir.display());
            self.entries.push((flag.into(), shown, p, true));
        }
    }

    /// Refuse (exit 2) two outputs on one file, or an output on an input.
    pub fn check(&self) -> Result<(), Error> {
        let keys: Vec<Option<FileKey>> = self.entries.iter().map(|e| file_key(&e.2)).collect();
        for (i, (fa, pa, _, out_a)) in self.entries.iter().enumerate() {
            for (j, (fb, pb, _, out_b)) in self.entries.iter().enumerate().skip(i + 1) {
                if keys[i].is_none() || keys[i] != keys[j] || !(*out_a || *out_b) {
                    continue;
                }
                return Err(Error::Output(match (out_a, out_b) {
                    (true, true) => {
                        format!("{fa} {pa} and {fb} {pb} are the same file: give each output its own file")
                    }
                    (true, false) => format!(
                        "{fa} {pa} is the input {fb} {pb}: writing it would destroy the input; \
                         write the output to another file"
                    ),
                    _ => format!(
                        "{fb} {pb} is the input {fa} {pa}: writing it would destroy the input; \
                         write the output to another file"
                    ),
                }));
            }
        }
        Ok(())
    }
}

/// An OS error's text without Rust's " (os error N)" suffix.
pub fn os_message(e: &std::io::Error) -> String {
    let text = e.to_string();
    text.find(" (os error").map_or(text.clone(), |at| text[..at].to_string())
}

/// `p` can be written as output `flag`: its directory exists, it is not a
/// directory, and it can be opened for writing (created, if new: the test
/// file is removed again). Nothing is truncated.
pub fn check_parent(flag: &str, p: &Path) -> Result<(), Error> {
    check_output_file(flag, p, example_name(flag))
}

/// A file name of the kind output `flag` writes, for an error's example.
fn example_name(flag: &str) -> &'static str {
    match flag {
        "--output" => "run.json",
        "--histfile" => "run.hist",
        "--raw" => "run.raw",
        "--junit" => "junit.xml",
        "--html" => "report.html",
        "--target-log" => "target.log",
        _ => "out",
    }
}

/// Whether `p` is `-`, the standard output.
pub fn is_stdout(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// [`check_parent`], the error naming `example` as a file `flag` could take
/// when `p` is a directory.
pub fn check_output_file(flag: &str, p: &Path, example: &str) -> Result<(), Error> {
    if p.as_os_str().is_empty() {
        return Err(Error::Output(format!("{flag} needs a file name")));
    }
    if is_stdout(p) {
        return Err(Error::Output(format!(
            "{flag} -: only the JSON report (-o - of run, demo and report) goes to stdout; \
             for a file named -, write ./-"
        )));
    }
    let parent = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(Error::Output(format!(
            "{flag} {}: the directory {} does not exist",
            p.display(),
            parent.display()
        )));
    }
    if p.is_dir() {
        return Err(Error::Output(format!(
            "{flag} {}: is a directory; give a file, e.g. {}",
            p.display(),
            p.join(example).display()
        )));
    }
    let cannot = |e: std::io::Error| {
        Error::Output(format!("{flag} {}: cannot write it: {} (check the path)", p.display(), os_message(&e)))
    };
    // A symbolic link is followed, a dangling one too: its target is what
    // gets written (`fsout`).
    let link = p;
    let p = &crate::fsout::target(p);
    let parent = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(Error::Output(format!(
            "{flag} {} is a symbolic link to {}, whose directory {} does not exist: \
             fix the link or give another file",
            link.display(),
            p.display(),
            parent.display()
        )));
    }
    if std::fs::metadata(p).is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_fifo(&m.file_type())) {
        // Opening a FIFO to try it would wait for a reader, then give that
        // reader an early end of file: only the permission is checked.
        use std::os::unix::ffi::OsStrExt as _;
        let c = std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(std::io::Error::other)
            .map_err(cannot)?;
        // SAFETY: a valid NUL-terminated path; access(2) only looks.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
            return Err(cannot(std::io::Error::last_os_error()));
        }
    } else if p.exists() {
        std::fs::OpenOptions::new().append(true).open(p).map_err(cannot)?;
    } else {
        std::fs::OpenOptions::new().write(true).create_new(true).open(p).map_err(cannot)?;
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

fn read_target_meta(p: &Path) -> Result<serde_json::Value, Error> {
    let text = crate::input::read_text_capped(p)
        .map_err(|e| Error::Input(format!("cannot read --target-meta {}: {e}", p.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::Input(format!("--target-meta {} is not JSON: {e}", p.display())))
}

/// A command's limits and CI outputs (`--max` …, `--junit`, `--lava`,
/// `--plot`, `--html`), read and checked before it runs so that a typo in
/// a limits file fails in a second, not after an hour's measurement.
#[derive(Debug, Clone, Default)]
pub struct Delivery {
    /// The limits to judge the report against.
    pub limits: Limits,
    /// `--limits FILE`, an input.
    pub limits_file: Option<PathBuf>,
    /// `--junit FILE`.
    pub junit: Option<PathBuf>,
    /// `--lava`: `lava-test-case` lines on stdout, the summary on stderr.
    pub lava: bool,
    /// `--plot DIR`.
    pub plot: Option<PathBuf>,
    /// `--html FILE`.
    pub html: Option<PathBuf>,
    /// `--horizon`: the tail model's horizon, ns.
    pub horizon_ns: u64,
}

impl Delivery {
    /// Resolve the limits (reading `--limits`) and check the output paths.
    pub fn new(g: &GateArgs) -> Result<Self, Error> {
        let limits = g.limits.resolve()?;
        for (flag, p) in [("--junit", &g.junit), ("--html", &g.html)] {
            if let Some(p) = p {
                check_parent(flag, p)?;
            }
        }
        if let Some(dir) = &g.plot {
            check_plot_dir("--plot", dir)?;
        }
        Ok(Self {
            limits,
            limits_file: g.limits.limits.clone(),
            junit: g.junit.clone(),
            lava: g.lava,
            plot: g.plot.clone(),
            html: g.html.clone(),
            horizon_ns: g.horizon.unwrap_or(crate::report::tail::DEFAULT_HORIZON_NS),
        })
    }

    /// Its files, into `set`: `--limits` read, `--junit`, `--html` and the
    /// plots of `--plot` written.
    pub fn add_to(&self, set: &mut PathSet) {
        if let Some(p) = &self.limits_file {
            set.input("--limits", p);
        }
        if let Some(p) = &self.junit {
            set.output("--junit", p);
        }
        if let Some(p) = &self.html {
            set.output("--html", p);
        }
        if let Some(dir) = &self.plot {
            set.plot_dir("--plot", dir, &rep::plot::PLOT_FILES);
        }
    }
}

/// `--plot DIR` (`flag`) can hold the plots: a directory it can write in,
/// or a new one it can create (created here and removed again; the plots
/// create it).
pub fn check_plot_dir(flag: &str, dir: &Path) -> Result<(), Error> {
    if dir.as_os_str().is_empty() {
        return Err(Error::Output(format!("{flag} needs a directory name")));
    }
    let cannot = |e: std::io::Error| {
        Error::Output(format!(
            "{flag} {}: cannot write the plots there: {} (give a directory you can write in)",
            dir.display(),
            os_message(&e)
        ))
    };
    if dir.exists() {
        if !dir.is_dir() {
            return Err(Error::Output(format!(
                "{flag} {} is a file: give a directory for the plots (it is created if missing)",
                dir.display()
            )));
        }
        let probe = dir.join(format!(".latprobe-write-check-{}", std::process::id()));
        std::fs::OpenOptions::new().write(true).create_new(true).open(&probe).map_err(cannot)?;
        let _ = std::fs::remove_file(&probe);
        return Ok(());
    }
    let parent = dir.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(Error::Output(format!(
            "{flag} {}: the directory {} does not exist (the plot directory itself is created, not its parents)",
            dir.display(),
            parent.display()
        )));
    }
    // A read-only parent, or /proc, refuses only when asked.
    std::fs::create_dir(dir).map_err(cannot)?;
    let _ = std::fs::remove_dir(dir);
    Ok(())
}
