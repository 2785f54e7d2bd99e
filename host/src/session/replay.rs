//! A raw file read back through the same [`RunState`] as a live run.

use super::*;

/// What a replay of a raw file found.
#[derive(Debug)]
pub struct Replayed {
    /// The recorded run context.
    pub ctx: crate::model::RunContext,
    /// The state after every recorded byte.
    pub state: RunState,
    /// Frames that could not be used.
    pub bad_frames: u64,
    /// How the recorded run ended, as far as the bytes tell.
    pub ending: crate::model::Ending,
}

/// Replay a raw file through the same link and [`RunState`] as a live run.
///
/// What the bytes cannot tell is inferred: `ended_at` is the file's last
/// modification; a probe Stopped by the host counts as `duration-elapsed`
/// (complete) when the probe's own clock covered at least 99 % of the
/// requested `--duration`, else as `interrupted`.
pub fn replay(path: &std::path::Path, histfile_max_us: Option<u32>) -> Result<Replayed, Error> {
    replay_with(path, histfile_max_us, false)
}

/// [`replay`], keeping every periodic cycle's delay when `keep_cycles`
/// (for `--target-log`).
pub fn replay_with(
    path: &std::path::Path,
    histfile_max_us: Option<u32>,
    keep_cycles: bool,
) -> Result<Replayed, Error> {
    replay_rows(path, histfile_max_us, keep_cycles, None)
}

/// [`replay_with`], writing every counted sample as a row into `rows`
/// (`report --samples`): the rows' feed is left in the analysis
/// ([`Analysis::rows`](crate::analysis::Analysis::rows)) for the caller to
/// finish. No Started in the file: no rows, and `rows` is dropped.
pub fn replay_rows(
    path: &std::path::Path,
    histfile_max_us: Option<u32>,
    keep_cycles: bool,
    rows: Option<Box<dyn crate::samples::Sink>>,
) -> Result<Replayed, Error> {
    let (mut ctx, source, recorded) = crate::rawfile::open_with_ending(path)?;
    if let Some(m) = histfile_max_us {
        ctx.histfile_max_us = m;
    }
    let mut state = RunState::new(ctx.histfile_max_us, ctx.request.mode == ModeArg::Periodic);
    state.calibration = ctx.request.calibration.as_ref().map(|c| (c.offset_ns, c.min_ns));
    state.phases = ctx.phases.iter().map(|p| (p.start_s, p.end_s)).collect();
    state.keep_cycles = keep_cycles;
    state.rows = rows;
    let mut link = Link::new(Box::new(source), None);
    // A stop signal (`latprobe report` installs the handlers) ends the
    // reading where it is: the report holds what was read.
    let mut interrupted = false;
    while link.poll(Duration::ZERO, |inc| state.on_incoming(inc))? != Polled::Closed {
        if crate::signals::requested() {
            interrupted = true;
            break;
        }
    }
    link.end_of_stream();
    state.finalize();
    // A recording of a probe of another protocol version (an older
    // latprobe's raw file) has no frame this build can read.
    if let (Some(theirs), None) = (state.other_version, &state.probe) {
        return Err(Error::Input(format!(
            "{} was recorded from a probe of protocol version {theirs}; this latprobe reads version \
             {PROTOCOL_VERSION}: use the JSON report of that run, or the latprobe that recorded it",
            path.display()
        )));
    }
    let inferred = match state.stopped.map(|s| s.reason) {
        Some(StopReason::CountReached) => (EndedBy::CountReached, true, None),
        Some(StopReason::HostStop) => {
            let covered = match (ctx.request.duration_ns, state.probe_elapsed_ns()) {
                (Some(want), Some(got)) => got >= want - want / 100,
                _ => false,
            };
            if covered {
                (EndedBy::DurationElapsed, true, None)
            } else {
                (EndedBy::Interrupted, false, None)
            }
        }
        Some(StopReason::Fault) => {
            (EndedBy::Failed, false, Some("the probe stopped the measurement with a fault".to_string()))
        }
        None => (EndedBy::StreamEnded, false, None),
    };
    // The live run's own ending, when it lived to write one: a replay then
    // says what the live run said.
    let (ended_by, mut complete, error) = match recorded {
        Some(e) => {
            state.notes = e.notes;
            (e.ended_by, e.complete, e.error)
        }
        None => inferred,
    };
    if interrupted {
        complete = false;
        state.notes.push(format!(
            "latprobe report was interrupted (a stop signal) while reading {}: the figures hold only \
             the part read before it; run `latprobe report` again for the whole file",
            path.display()
        ));
    }
    let ended_at = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map_or_else(|_| ctx.started_at.clone(), crate::timefmt::rfc3339);
    let bad_frames = link.bad_frames();
    Ok(Replayed {
        ctx,
        state,
        bad_frames,
        ending: crate::model::Ending {
            ended_by,
            complete,
            error,
            ended_at,
            replayed_from: Some(path.display().to_string()),
        },
    })
}
