//! Everything a finished report becomes: verdicts, files (each tried
//! whatever became of the others, with a fallback path when its own fails),
//! the summary; the first error after all of them.

use std::path::{Path, PathBuf};

use super::paths::{self, os_message, Delivery};
use crate::report::{self as rep, Report};
use crate::Error;

/// The first of `results`' errors, after saying every other one: each
/// output that could not be written is named.
fn first_error(results: Vec<Result<(), Error>>) -> Result<(), Error> {
    let mut errors = results.into_iter().filter_map(Result::err);
    let first = errors.next();
    for e in errors {
        crate::stderr_error!("latprobe: also: {e}");
    }
    first.map_or(Ok(()), Err)
}

/// Write `--output` and `--histfile`: each is tried whatever became of the
/// other, and one that cannot be written where asked (a full disk, a
/// vanished directory) goes to a fallback file, which is printed. Each
/// result apart, for [`first_error`].
fn write_outputs_each(r: &Report, output: Option<&Path>, histfile: Option<&Path>) -> Vec<Result<(), Error>> {
    let json = output.map(|p| {
        if paths::is_stdout(p) {
            json_to_stdout(&rep::json::to_string(r))
        } else {
            write_or_fallback("--output", "report", p, &|q| rep::json::write(r, q))
        }
    });
    let hist =
        histfile.map(|p| write_or_fallback("--histfile", "histogram", p, &|q| rep::histfile::write(r, q)));
    json.into_iter().chain(hist).collect()
}

/// `-o -`: the JSON report on stdout (under `--quiet` too: it is the
/// output asked for).
pub fn json_to_stdout(text: &str) -> Result<(), Error> {
    crate::out::data(text).map_err(|e| Error::io("cannot write the JSON report to stdout (-o -)", e))
}

/// The line every output file gets once written (stderr; not under `--quiet`).
pub fn wrote(p: &Path) {
    crate::stderr_line!("latprobe: wrote {}", p.display());
}

/// Where an output goes when its own path fails: the temporary directory,
/// else the current one, as `latprobe-<pid>-<name>`.
pub fn fallback_paths(p: &Path) -> Vec<PathBuf> {
    let name = p.file_name().map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let name = format!("latprobe-{}-{name}", std::process::id());
    let mut dirs = vec![std::env::temp_dir()];
    if let Ok(cwd) = std::env::current_dir() {
        dirs.push(cwd);
    }
    dirs.into_iter().map(|d| d.join(&name)).filter(|q| q != p).collect()
}

fn write_or_fallback(
    flag: &str,
    what: &str,
    p: &Path,
    write: &dyn Fn(&Path) -> Result<(), Error>,
) -> Result<(), Error> {
    let Err(e) = write(p) else {
        wrote(p);
        return Ok(());
    };
    let cause = match e {
        Error::Io { cause, .. } => cause,
        other => return Err(other),
    };
    for q in fallback_paths(p) {
        if write(&q).is_ok() {
            crate::stderr_error!(
                "latprobe: cannot write the {what} {} ({flag}): {}; it is in {} instead",
                p.display(),
                os_message(&cause),
                q.display()
            );
            return Err(Error::io(
                format!(
                    "cannot write the {what} {} ({flag}); it was written to {} instead",
                    p.display(),
                    q.display()
                ),
                cause,
            ));
        }
    }
    Err(Error::io(
        format!(
            "cannot write the {what} {} ({flag}), nor a copy in {} or the current directory",
            p.display(),
            std::env::temp_dir().display()
        ),
        cause,
    ))
}

/// Everything a finished report becomes, in this order: the verdicts
/// (when limits were given), the files (`--output`, `--histfile`,
/// `--junit`, `--plot`, `--html`: each tried whatever became of the
/// others), then the summary (stdout, or stderr under `--lava`, whose lines
/// then go to stdout). `exact` gives any percentile limit exactly when the
/// run's analysis is at hand. A file that could not be written is returned
/// first (exit 1); else a violated limit ([`Error::Threshold`], exit 3).
pub fn deliver(
    r: &mut Report,
    exact: Option<&crate::analysis::Analysis>,
    output: Option<&Path>,
    histfile: Option<&Path>,
    d: &Delivery,
    summary: Option<&dyn Fn(&Report) -> String>,
) -> Result<(), Error> {
    rep::tail::refresh(r, &d.limits, d.horizon_ns);
    if !d.limits.is_empty() {
        r.verdicts = crate::gates::evaluate(r, &d.limits, exact);
    }
    let r = &*r;
    let mut results = vec![write_outputs_each(r, output, histfile)];
    if let Some(p) = &d.junit {
        results.push(vec![write_or_fallback("--junit", "JUnit report", p, &|q| rep::junit::write(r, q))]);
    }
    if let Some(dir) = d.plot.as_ref().filter(|_| r.counts.samples == 0) {
        // Not an error: the run says what became of it.
        crate::stderr_line!("latprobe: no samples, so no plots in {} (--plot)", dir.display());
    } else if let Some(dir) = &d.plot {
        results.push(vec![match rep::plot::write_all(r, dir) {
            Ok(paths) => {
                crate::stderr_line!("latprobe: wrote {} plots in {}", paths.len(), dir.display());
                Ok(())
            }
            Err(e) => {
                crate::stderr_error!("latprobe: the plots could not be written: {e}");
                Err(e)
            }
        }]);
    }
    if let Some(p) = &d.html {
        results.push(vec![write_or_fallback("--html", "HTML report", p, &|q| rep::html::write(r, q))]);
    }
    // stdout carries the data asked for (`-o -`'s JSON, `--lava`'s lines)
    // alone: the summary then goes to stderr.
    let stdout_taken = d.lava || output.is_some_and(paths::is_stdout);
    if let Some(text) = summary.map(|f| f(r)) {
        if stdout_taken {
            crate::stderr_line!("{}", text.trim_end());
        } else {
            crate::stdout!("{text}");
        }
    }
    if d.lava {
        let lines: String = rep::lava::lines(r).iter().map(|l| format!("{l}\n")).collect();
        // A closed stdout (`| true`) costs nothing else: the files are written.
        let _ = crate::out::data(&lines);
    }
    first_error(results.into_iter().flatten().collect())?;
    match crate::gates::violation_summary(&r.verdicts) {
        Some(v) => Err(Error::Threshold(v)),
        None => Ok(()),
    }
}
