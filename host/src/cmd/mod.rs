//! The subcommands, one per file, and the live-measurement path that `run`
//! and `demo` share: session, progress line, summary, output files.

pub mod compare;
pub mod demo;
pub mod import;
pub mod report;
pub mod run;

use std::io::IsTerminal as _;
use std::path::Path;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::{Cli, Command, OutputArgs};
use crate::link::Link;
use crate::rawfile::RunContext;
use crate::report::text::ns_cell;
use crate::report::{self as rep, Ending, Report};
use crate::session::{self, EndedBy, ModeArg, RunState, SessionOptions};
use crate::units::format_duration;
use crate::{signals, timefmt, Error};

/// Run the parsed command line.
pub fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Report(args) => report::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Import(args) => import::run(args),
        Command::Compare(args) => compare::run(args),
    }
}

/// Check output paths and read `--target-meta` before a run starts, so a
/// typo fails in a second rather than after an hour's measurement.
pub(crate) fn check_outputs(out: &OutputArgs) -> Result<Option<serde_json::Value>, Error> {
    for (flag, path) in [("--output", &out.output), ("--histfile", &out.histfile), ("--raw", &out.raw)] {
        if let Some(p) = path {
            check_parent(flag, p)?;
        }
    }
    out.target_meta.as_deref().map(read_target_meta).transpose()
}

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

pub(crate) fn check_parent(flag: &str, p: &Path) -> Result<(), Error> {
    let parent = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(Error::Usage(format!(
            "{flag} {}: the directory {} does not exist",
            p.display(),
            parent.display()
        )));
    }
    Ok(())
}

fn read_target_meta(p: &Path) -> Result<serde_json::Value, Error> {
    let text = std::fs::read_to_string(p)
        .map_err(|e| Error::Usage(format!("cannot read --target-meta {}: {e}", p.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::Usage(format!("--target-meta {} is not JSON: {e}", p.display())))
}

/// Write `--output` and `--histfile`.
pub(crate) fn write_outputs(r: &Report, output: Option<&Path>, histfile: Option<&Path>) -> Result<(), Error> {
    if let Some(p) = output {
        rep::json::write(r, p)?;
    }
    if let Some(p) = histfile {
        rep::histfile::write(r, p)?;
    }
    Ok(())
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
        (Some(unix), Some(st), Some(f)) => Some(crate::targetlog::Anchor {
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
    let path = spill.finish().map_err(|e| Error::io("cannot keep the run's cycles", e))?.to_path_buf();
    p.target_log = Some(crate::targetlog::compare(log, &path, interval_ns, anchor)?);
    Ok(())
}

fn progress_bar() -> ProgressBar {
    // indicatif would draw escape codes into a log file or a CI pipe.
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg}").unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar
}

/// The live progress line.
pub fn progress_line(s: &RunState, elapsed: Duration) -> String {
    let Some(a) = &s.analysis else {
        return format!("{} waiting for the first samples", format_duration(elapsed));
    };
    let lost = a.seq.lost;
    let elapsed = format_duration(Duration::from_secs(elapsed.as_secs()));
    if a.samples() == 0 {
        return format!(
            "{elapsed}  samples {}  timeouts {}  lost {lost}  edges {}",
            a.samples(),
            a.timeouts,
            a.edges.edges
        );
    }
    // Timeouts rank above every response: p99 and max are `>timeout` when
    // they fall among them.
    format!(
        "{elapsed}  samples {}  timeouts {}  lost {lost}  p99 {}  max {}",
        a.samples(),
        a.timeouts,
        ns_cell(a.quantile(0.99)),
        ns_cell(a.max())
    )
}

/// A live measurement over `link`, then the summary on stdout and the
/// output files. The files are written whatever happened; the session's
/// error, if any, is returned after that.
pub(crate) fn measure(
    mut link: Link,
    ctx: &RunContext,
    opts: &SessionOptions,
    out: &OutputArgs,
    target_log: Option<&Path>,
    after_run: &mut dyn FnMut(),
) -> Result<Report, Error> {
    let signals = signals::install()?;
    let mut state = RunState::new(ctx.histfile_max_us, ctx.request.mode == ModeArg::Periodic);
    state.keep_cycles = target_log.is_some();
    let bar = progress_bar();
    let result = session::run(&mut link, &mut state, opts, &signals, &mut |s, elapsed| {
        bar.set_message(progress_line(s, elapsed));
        bar.tick();
    });
    bar.finish_and_clear();
    after_run();
    state.finalize();
    let raw_result = link.finish_raw();
    let (ended_by, error) = match &result {
        Ok(e) => (*e, None),
        Err(e) => (EndedBy::Failed, Some(e.to_string())),
    };
    let complete =
        matches!(ended_by, EndedBy::CountReached | EndedBy::DurationElapsed) && state.stopped.is_some();
    let mut r = rep::build(
        ctx,
        &state,
        link.bad_frames(),
        Ending { ended_by, complete, error, ended_at: timefmt::now(), replayed_from: None },
    );
    let log_result = match target_log {
        Some(log) if state.started.is_some() => attach_target_log(&mut r, &mut state, log, ctx),
        _ => Ok(()),
    };
    if let Err(e) = &log_result {
        r.notes.push(format!("the target's log could not be set beside the run: {e}"));
    }
    // Before the measurement started there is nothing to summarise; the
    // error says what went wrong, and the files still record the attempt.
    if state.started.is_some() {
        print!("{}", rep::text::summary_with(&r, out.show_naive));
    }
    if ended_by == EndedBy::Interrupted {
        eprintln!("latprobe: interrupted: the report holds what arrived (complete: false)");
    }
    let written = write_outputs(&r, out.output.as_deref(), out.histfile.as_deref());
    // The session's error explains the run; a file error after it is
    // secondary, so say it but return the first.
    match (result, raw_result.and(written).and(log_result)) {
        (Err(e), Err(second)) => {
            eprintln!("latprobe: also: {second}");
            Err(e)
        }
        (Err(e), Ok(())) => Err(e),
        (Ok(_), Err(e)) => Err(e),
        (Ok(_), Ok(())) => Ok(r),
    }
}
