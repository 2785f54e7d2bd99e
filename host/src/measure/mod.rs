//! The live path that `run`, `demo` and `calibrate` share: the request from
//! the flags ([`request()`]), the session over the link with its progress
//! line ([`mod@progress`]), the target's own log beside a periodic run, and the
//! delivery of every output ([`deliver()`]), whose paths are checked before
//! anything is measured ([`mod@paths`]). `report` delivers through the same
//! door.

pub mod deliver;
pub mod paths;
pub mod progress;
pub mod request;

use std::path::Path;
use std::time::Duration;

use crate::link::Link;
use crate::model::{EndedBy, Ending, ModeArg, RawEnding, RunContext};
use crate::options::OutputArgs;
use crate::report::{self as rep, Report};
use crate::session::{self, RunState, SessionOptions};
use crate::{signals, timefmt, Error};

pub use deliver::{deliver, fallback_paths, json_to_stdout, wrote};
pub use paths::{
    check_demo_outputs, check_outputs, check_parent, check_plot_dir, os_message, Delivery, PathSet,
};
use progress::progress_bar;
pub use progress::progress_line;
pub use request::{check_periodic_flags, request, stop_wait};

/// Set the target's own log (`--target-log`) beside the periodic run in
/// `state`, into `r`.
pub fn attach_target_log(
    r: &mut Report,
    state: &mut RunState,
    log: &Path,
    ctx: &RunContext,
) -> Result<(), Error> {
    let interval_ns = r.config.interval_ns;
    let Some(p) = r.periodic.as_mut() else {
        return Err(Error::Input(format!(
            "--target-log {}: only a --mode periodic run has cycles to set it beside",
            log.display()
        )));
    };
    let start_tick = state.started.map(|s| s.start_tick);
    let Some(a) = state.analysis.as_mut() else {
        return Err(Error::Input(format!("--target-log {}: the run has no cycles", log.display())));
    };
    let conv = a.conv();
    // Later edges are timeouts in the run's figures: censored beside the log too.
    let horizon_ns = a.timeout_ns();
    let first = a.fit.as_ref().and_then(|f| f.first_tick());
    let anchor = match (ctx.started_unix_ns, start_tick, first) {
        (Some(unix), Some(st), Some(f)) => Some(crate::analysis::targetlog::Anchor {
            first_edge_unix_ns: unix.saturating_add(conv.ns(f.saturating_sub(st))),
        }),
        _ => None,
    };
    let Some(spill) = a.spill.as_mut() else {
        return Err(Error::Input(format!(
            "--target-log {}: the run's cycles were not kept{}",
            log.display(),
            state.keep_error.as_deref().map_or_else(String::new, |e| format!(" ({e})"))
        )));
    };
    spill.finish().map_err(|e| Error::io("cannot keep the run's cycles", e))?;
    p.target_log = Some(crate::analysis::targetlog::compare(log, spill, interval_ns, horizon_ns, anchor)?);
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

/// The target's own log of a periodic run, and who chose where it is.
#[derive(Debug, Clone, Copy)]
pub enum TargetLog<'a> {
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
pub fn measure(
    mut link: Link,
    ctx: &RunContext,
    opts: &SessionOptions,
    out: &OutputArgs,
    gates: &Delivery,
    target_log: Option<TargetLog<'_>>,
    announce: Option<&str>,
    trigger_sink: Option<Box<dyn crate::target::stop::TriggerSink>>,
    after_run: &mut dyn FnMut(),
) -> Result<Report, Error> {
    let signals = signals::install()?;
    let mut state = RunState::new(ctx.histfile_max_us, ctx.request.mode == ModeArg::Periodic);
    state.trigger_sink = trigger_sink;
    state.calibration = ctx.request.calibration.as_ref().map(|c| (c.offset_ns, c.min_ns));
    state.phases = ctx.phases.iter().map(|p| (p.start_s, p.end_s)).collect();
    state.keep_cycles = target_log.is_some();
    let bar = progress_bar();
    // At most 4 draws a second: indicatif's own limit lets bursts through,
    // and every draw costs the terminal (and a serial console) a line.
    let mut drawn: Option<std::time::Instant> = None;
    let mut announce = announce;
    let result = session::run(&mut link, &mut state, opts, &signals, &mut |s, elapsed| {
        if let Some(text) = announce.take() {
            bar.suspend(|| crate::stderr_line!("{text}"));
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
    if let Some(src) = &out.trace {
        r.trace = Some(rep::trace::load(src, &r));
    }
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
        crate::stderr_line!("latprobe: interrupted: the report holds what arrived (complete: false)");
    }
    // The session's error explains the run; a file error after it is
    // secondary, so say it but return the first.
    // A file error (exit 1) comes before a violated limit (exit 3).
    match (result, raw_result.and(log_result).and(delivered)) {
        (Err(e), Err(second)) => {
            crate::stderr_error!("latprobe: also: {second}");
            Err(e)
        }
        (Err(e), Ok(())) => Err(e),
        (Ok(_), Err(e)) => Err(e),
        (Ok(_), Ok(())) => Ok(r),
    }
}
