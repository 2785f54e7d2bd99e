//! From the flags to the [`Request`]: what `run`, `demo` and `calibrate`
//! ask of the probe, the flags only a periodic run takes, and how long to
//! wait after Stop.

use std::time::Duration;

use crate::model::{EdgeArg, ModeArg, Request};
use crate::options::{OutputArgs, TimingArgs, TriggerArgs};
use crate::Error;

/// The request the timing flags describe.
pub fn request(
    mode: ModeArg,
    timing: &TimingArgs,
    duration: Option<u64>,
    byte: Option<u8>,
    edge: EdgeArg,
) -> Request {
    Request {
        mode,
        interval_ns: timing.interval,
        dither_ns: timing.dither,
        timeout_ns: timing.timeout,
        guard_ns: timing.guard,
        count: timing.count,
        duration_ns: duration,
        seed: timing.seed,
        byte,
        edge,
        line: None,
        calibration: None,
        trigger_ns: None,
    }
}

/// The trigger threshold of `run` and `demo` (`--trigger-above`), into
/// the request.
pub fn with_trigger(req: Request, trigger: &TriggerArgs) -> Request {
    Request { trigger_ns: trigger.trigger_above, ..req }
}

/// How long to wait for the last batches and Stopped after Stop: the probe
/// first lets the stimuli in flight finish (answer or timeout), so the
/// request's timeout comes on top.
pub fn stop_wait(timing: &TimingArgs, req: &Request) -> Duration {
    timing.silence_timeout.max(Duration::from_secs(2)) + Duration::from_nanos(req.timeout_ns())
}

/// `--target-log` and `--show-naive` belong to periodic runs.
pub fn check_periodic_flags(out: &OutputArgs, mode: ModeArg) -> Result<(), Error> {
    if mode == ModeArg::Periodic {
        return Ok(());
    }
    if let Some(log) = &out.target_log {
        return Err(Error::Config(format!(
            "--target-log {} applies to --mode periodic only: an echo mode has no target cycles",
            log.display()
        )));
    }
    if out.show_naive {
        return Err(Error::Config(
            "--show-naive applies to --mode periodic only: an echo mode has no nominal schedule".into(),
        ));
    }
    Ok(())
}
