//! The subcommands, one per file, and the live-measurement path that `run`
//! and `demo` share: session, progress line, summary, output files.

pub mod calibrate;
pub mod compare;
pub mod demo;
pub mod docs;
pub mod flash;
pub mod import;
pub mod list;
pub mod options;
pub(crate) mod paths;
pub mod report;
pub mod run;

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::link::Link;
use crate::model::Ending;
use crate::model::{EndedBy, ModeArg};
use crate::model::{RawEnding, RunContext};
use crate::report::text::ns_cell;
use crate::report::{self as rep, Report};
use crate::session::{self, RunState, SessionOptions};
use crate::{signals, timefmt, Error};
use options::OutputArgs;

pub(crate) use paths::{
    check_demo_outputs, check_outputs, check_parent, check_plot_dir, os_message, Delivery, PathSet,
};

/// `--target-log` and `--show-naive` belong to periodic runs.
pub(crate) fn check_periodic_flags(out: &OutputArgs, mode: ModeArg) -> Result<(), Error> {
    if mode == ModeArg::Periodic {
        return Ok(());
    }
    if let Some(log) = &out.target_log {
        return Err(Error::Usage(format!(
            "--target-log {} applies to --mode periodic only: an echo mode has no target cycles",
            log.display()
        )));
    }
    if out.show_naive {
        return Err(Error::Usage(
            "--show-naive applies to --mode periodic only: an echo mode has no nominal schedule".into(),
        ));
    }
    Ok(())
}

/// The first of `results`' errors, after saying every other one: each
/// output that could not be written is named.
fn first_error(results: Vec<Result<(), Error>>) -> Result<(), Error> {
    let mut errors = results.into_iter().filter_map(Result::err);
    let first = errors.next();
    for e in errors {
        crate::tell_error!("latprobe: also: {e}");
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
pub(crate) fn json_to_stdout(text: &str) -> Result<(), Error> {
    crate::out::data(text).map_err(|e| Error::io("cannot write the JSON report to stdout (-o -)", e))
}

/// The line every output file gets once written (stderr; not under `--quiet`).
pub(crate) fn wrote(p: &Path) {
    crate::tell!("latprobe: wrote {}", p.display());
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
            crate::tell_error!(
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

/// Set the target's own log (`--target-log`) beside the periodic run in
/// `state`, into `r`.
pub(crate) fn attach_target_log(
    r: &mut Report,
    state: &mut RunState,
    log: &Path,
    ctx: &RunContext,
) -> Result<(), Error> {
    let interval_ns = r.config.interval_ns;
    let Some(p) = r.periodic.as_mut() else {
        return Err(Error::Usage(format!(
            "--target-log {}: only a --mode periodic run has cycles to set it beside",
            log.display()
        )));
    };
    let start_tick = state.started.map(|s| s.start_tick);
    let Some(a) = state.analysis.as_mut() else {
        return Err(Error::Usage(format!("--target-log {}: the run has no cycles", log.display())));
    };
    let conv = a.conv();
    let first = a.fit.as_ref().and_then(|f| f.first_tick());
    let anchor = match (ctx.started_unix_ns, start_tick, first) {
        (Some(unix), Some(st), Some(f)) => Some(crate::analysis::targetlog::Anchor {
            first_edge_unix_ns: unix.saturating_add(conv.ns(f.saturating_sub(st))),
        }),
        _ => None,
    };
    let Some(spill) = a.spill.as_mut() else {
        return Err(Error::Usage(format!(
            "--target-log {}: the run's cycles were not kept{}",
            log.display(),
            state.keep_error.as_deref().map_or_else(String::new, |e| format!(" ({e})"))
        )));
    };
    spill.finish().map_err(|e| Error::io("cannot keep the run's cycles", e))?;
    p.target_log = Some(crate::analysis::targetlog::compare(log, spill, interval_ns, anchor)?);
    if let Some(c) = spill.kept_until() {
        r.notes.push(format!(
            "--target-log: the probe's cycles were kept up to cycle {c} only (the {} GiB cap of the \
             cycle file in the temp directory): the comparison covers those, the later log lines count \
             as outside the probe's cycles",
            crate::analysis::periodic::SPILL_CAP_BYTES >> 30
        ));
    }
    Ok(())
}

/// Everything a finished report becomes, in this order: the verdicts
/// (when limits were given), the files (`--output`, `--histfile`,
/// `--junit`, `--plot`, `--html`: each tried whatever became of the
/// others), then the summary (stdout, or stderr under `--lava`, whose lines
/// then go to stdout). `exact` gives any percentile limit exactly when the
/// run's analysis is at hand. A file that could not be written is returned
/// first (exit 1); else a violated limit ([`Error::Threshold`], exit 3).
pub(crate) fn deliver(
    r: &mut Report,
    exact: Option<&crate::analysis::Analysis>,
    output: Option<&Path>,
    histfile: Option<&Path>,
    d: &Delivery,
    summary: Option<&dyn Fn(&Report) -> String>,
) -> Result<(), Error> {
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
        crate::tell!("latprobe: no samples, so no plots in {} (--plot)", dir.display());
    } else if let Some(dir) = &d.plot {
        results.push(vec![match rep::plot::write_all(r, dir) {
            Ok(paths) => {
                crate::tell!("latprobe: wrote {} plots in {}", paths.len(), dir.display());
                Ok(())
            }
            Err(e) => {
                crate::tell_error!("latprobe: the plots could not be written: {e}");
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
            crate::tell!("{}", text.trim_end());
        } else {
            crate::say!("{text}");
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

fn progress_bar() -> ProgressBar {
    // indicatif would draw escape codes into a log file or a CI pipe; it
    // draws on stderr only, so `-o -`'s JSON on stdout is never touched.
    if !std::io::stderr().is_terminal() || crate::out::quiet() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
    bar.set_style(ProgressStyle::with_template("{msg}").unwrap_or_else(|_| ProgressStyle::default_spinner()));
    bar
}

/// The live progress line: elapsed time against `--duration` (or samples
/// against `--count`), samples, timeouts, lost, and the running p99 and
/// max (`>timeout` when they fall among the timeouts).
pub fn progress_line(
    s: &RunState,
    elapsed: Duration,
    duration_ns: Option<u64>,
    count: Option<u64>,
) -> String {
    let secs = format!("{}s", elapsed.as_secs());
    let clock = match duration_ns {
        Some(d) => format!("{secs}/{}s", d.div_ceil(1_000_000_000)),
        None => secs,
    };
    let Some(a) = &s.analysis else {
        return format!("{clock}  waiting for the first samples");
    };
    let lost = a.seq.lost;
    let samples = match count {
        Some(n) => format!("{}/{n}", a.samples()),
        None => a.samples().to_string(),
    };
    if a.samples() == 0 {
        return format!(
            "{clock}  samples {samples}  timeouts {}  lost {lost}  edges {}",
            a.timeouts, a.edges.edges
        );
    }
    // Timeouts rank above every response: p99 and max are `>timeout` when
    // they fall among them.
    format!(
        "{clock}  samples {samples}  timeouts {}  lost {lost}  p99 {}  max {}",
        a.timeouts,
        ns_cell(a.quantile(0.99)),
        ns_cell(a.max())
    )
}

/// The target's own log of a periodic run, and who chose where it is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TargetLog<'a> {
    /// `--target-log FILE`: a log that cannot be used fails the run.
    Given(&'a Path),
    /// A temporary file the demo chose: a log that cannot be used is a note.
    Chosen(&'a Path),
}

impl TargetLog<'_> {
    fn path(&self) -> &Path {
        match self {
            TargetLog::Given(p) | TargetLog::Chosen(p) => p,
        }
    }
}

/// A live measurement over `link`, then the summary on stdout and the
/// output files. The files are written whatever happened; the session's
/// error, if any, is returned after that. `announce` is said once the
/// probe has answered and the measurement started, not before: a port
/// where no probe answers never claims to be measuring.
#[allow(clippy::too_many_arguments)]
pub(crate) fn measure(
    mut link: Link,
    ctx: &RunContext,
    opts: &SessionOptions,
    out: &OutputArgs,
    gates: &Delivery,
    target_log: Option<TargetLog<'_>>,
    announce: Option<&str>,
    after_run: &mut dyn FnMut(),
) -> Result<Report, Error> {
    let signals = signals::install()?;
    let mut state = RunState::new(ctx.histfile_max_us, ctx.request.mode == ModeArg::Periodic);
    state.calibration = ctx.request.calibration.as_ref().map(|c| (c.offset_ns, c.min_ns));
    state.keep_cycles = target_log.is_some();
    let bar = progress_bar();
    // At most 4 draws a second: indicatif's own limit lets bursts through,
    // and every draw costs the terminal (and a serial console) a line.
    let mut drawn: Option<std::time::Instant> = None;
    let mut announce = announce;
    let result = session::run(&mut link, &mut state, opts, &signals, &mut |s, elapsed| {
        if let Some(text) = announce.take() {
            bar.suspend(|| crate::tell!("{text}"));
        }
        if drawn.is_some_and(|t| t.elapsed() < Duration::from_millis(250)) {
            return;
        }
        drawn = Some(std::time::Instant::now());
        bar.set_message(progress_line(s, elapsed, opts.request.duration_ns, opts.request.count));
    });
    bar.finish_and_clear();
    after_run();
    state.finalize();
    link.end_of_stream();
    let (ended_by, error) = match &result {
        Ok(e) => (*e, None),
        Err(e) => (EndedBy::Failed, Some(e.to_string())),
    };
    let raw_error = link.take_raw_error();
    if let Some(e) = &raw_error {
        state.notes.push(format!("{e}: the raw file holds the start of the run only, this report all of it"));
    }
    let complete =
        matches!(ended_by, EndedBy::CountReached | EndedBy::DurationElapsed) && state.stopped.is_some();
    // The raw file ends with how the run ended, so that its replay says so too.
    let raw_ending = RawEnding { ended_by, complete, error: error.clone(), notes: state.notes.clone() };
    let raw_result = raw_error.map_or_else(|| link.finish_raw_with(&raw_ending), Err);
    if let (Ok(()), Some(p)) = (&raw_result, &out.raw) {
        wrote(p);
    }
    let mut r = rep::build(
        ctx,
        &state,
        link.bad_frames(),
        Ending { ended_by, complete, error, ended_at: timefmt::now(), replayed_from: None },
    );
    let log_result = match target_log {
        Some(log) if state.started.is_some() => attach_target_log(&mut r, &mut state, log.path(), ctx),
        _ => Ok(()),
    };
    let log_result = match (log_result, target_log) {
        // A log the demo chose itself: what went wrong with it is a note,
        // and names no flag the user never gave.
        (Err(e), Some(TargetLog::Chosen(path))) => {
            let flag = format!("--target-log {}", path.display());
            let why = e.to_string().replace(&flag, "it").replace("--target-log", "the log");
            r.notes.push(format!(
                "the responder's own log ({}, chosen by the demo) could not be set beside the run: {why}",
                path.display()
            ));
            Ok(())
        }
        (Err(e), _) => {
            r.notes.push(format!("the target's log could not be set beside the run: {e}"));
            Err(e)
        }
        (ok, _) => ok,
    };
    // Before the measurement started there is nothing to summarise; the
    // error says what went wrong, and the files still record the attempt.
    // `deliver` writes the files first: a summary nobody can read (a
    // closed pipe, a hung-up terminal) must never cost them.
    let text = |r: &Report| rep::text::summary_with(r, out.show_naive);
    let summary = state.started.is_some().then_some(&text as &dyn Fn(&Report) -> String);
    let delivered = deliver(
        &mut r,
        state.analysis.as_ref(),
        out.output.as_deref(),
        out.histfile.as_deref(),
        gates,
        summary,
    );
    if ended_by == EndedBy::Interrupted {
        crate::tell!("latprobe: interrupted: the report holds what arrived (complete: false)");
    }
    // The session's error explains the run; a file error after it is
    // secondary, so say it but return the first.
    // A file error (exit 1) comes before a violated limit (exit 3).
    match (result, raw_result.and(log_result).and(delivered)) {
        (Err(e), Err(second)) => {
            crate::tell_error!("latprobe: also: {second}");
            Err(e)
        }
        (Err(e), Ok(())) => Err(e),
        (Ok(_), Err(e)) => Err(e),
        (Ok(_), Ok(())) => Ok(r),
    }
}
