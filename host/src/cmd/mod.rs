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
) -> Result<Report, Error> {
    let signals = signals::install()?;
    let mut state = RunState::new(ctx.histfile_max_us, ctx.request.mode == ModeArg::Periodic);
    let bar = progress_bar();
    let result = session::run(&mut link, &mut state, opts, &signals, &mut |s, elapsed| {
        bar.set_message(progress_line(s, elapsed));
        bar.tick();
    });
    bar.finish_and_clear();
    let raw_result = link.finish_raw();
    let (ended_by, error) = match &result {
        Ok(e) => (*e, None),
        Err(e) => (EndedBy::Failed, Some(e.to_string())),
    };
    let complete =
        matches!(ended_by, EndedBy::CountReached | EndedBy::DurationElapsed) && state.stopped.is_some();
    let r = rep::build(
        ctx,
        &state,
        link.bad_frames(),
        Ending { ended_by, complete, error, ended_at: timefmt::now(), replayed_from: None },
    );
    // Before the measurement started there is nothing to summarise; the
    // error says what went wrong, and the files still record the attempt.
    if state.started.is_some() {
        print!("{}", rep::text::summary(&r));
    }
    if ended_by == EndedBy::Interrupted {
        eprintln!("latprobe: interrupted: the report holds what arrived (complete: false)");
    }
    let written = write_outputs(&r, out.output.as_deref(), out.histfile.as_deref());
    // The session's error explains the run; a file error after it is
    // secondary, so say it but return the first.
    match (result, raw_result.and(written)) {
        (Err(e), Err(second)) => {
            eprintln!("latprobe: also: {second}");
            Err(e)
        }
        (Err(e), Ok(())) => Err(e),
        (Ok(_), Err(e)) => Err(e),
        (Ok(_), Ok(())) => Ok(r),
    }
}
