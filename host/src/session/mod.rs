//! The session: Hello handshake with a version check, Configure, Start, the
//! ingest loop, and Stop at the end, on a signal, or never (silent probe).
//!
//! [`RunState`] is the pure part: it turns messages into state and samples
//! into [`Analysis`], and is shared by live runs and by replays of raw files,
//! so both give the same report. [`run`] is the live driver around it.
//!
//! ```text
//!  host                         probe
//!  Hello ───────────────────▶
//!        ◀─────────────────── Hello(info)        version and capability check
//!  Configure(ticks) ────────▶
//!        ◀─────────────────── Configured | Error  (Busy: Stop, then retry once)
//!  Start ───────────────────▶
//!        ◀─────────────────── Started, SampleBatch…, Heartbeat…
//!  Stop (duration, signal) ─▶
//!        ◀─────────────────── last batches, Stopped
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use latprobe_protocol::{
    byte_ticks, min_interval_ticks, ns_to_ticks, ticks_to_ns, timing_fault, trigger_fault, Capabilities,
    Config, Edge, ErrorCode, Heartbeat, HostMsg, Mode, ProbeMsg, ResponseLine, Stimulus, StopReason, Stopped,
    TimingFault, TriggerFault, DEFAULT_HORIZON_INTERVALS, PROTOCOL_VERSION,
};

use crate::analysis::Analysis;
use crate::error::{Error, LinkError};
use crate::link::{Incoming, Link, Polled};
use crate::model::LineArg;
use crate::model::{EdgeArg, EndedBy, ModeArg, ProbeHello, Request};
use crate::units::format_ns;

mod replay;
mod request;
mod state;
#[cfg(test)]
mod tests;

pub use replay::*;
pub use request::*;
pub use state::*;

/// Options of a live session.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// What to measure.
    pub request: Request,
    /// No byte for this long is an error.
    pub silence: Duration,
    /// How long to wait for Stopped after sending Stop. The probe lets the
    /// stimuli in flight finish first (answer or timeout), so this includes
    /// the timeout.
    pub stop_wait: Duration,
}

/// Called a few times a second during the measurement.
pub type ProgressFn<'a> = &'a mut dyn FnMut(&RunState, Duration);

const POLL: Duration = Duration::from_millis(50);
/// A poll this much longer than [`POLL`] means the process was stopped.
const SUSPENDED: Duration = Duration::from_secs(1);
/// How much longer than `--silence-timeout` the whole handshake may take.
const HANDSHAKE_EXTRA: Duration = Duration::from_secs(2);
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

struct Driver<'a> {
    link: &'a mut Link,
    state: &'a mut RunState,
    opts: &'a SessionOptions,
    signals: &'a AtomicUsize,
    /// When the last intact frame came: bytes that are no frame (a baud
    /// mismatch streams them without end) do not count as the probe's voice.
    last_frame: Instant,
    /// Bytes received since then.
    bytes_since_frame: u64,
    /// The handshake (Hello to Started) must be over by then.
    handshake_until: Option<Instant>,
    /// When the last poll ended: a much longer gap means this process did
    /// not run (SIGSTOP, a laptop's suspend), which is no silence of the
    /// probe's.
    last_poll: Instant,
}

impl Driver<'_> {
    fn port(&self) -> String {
        self.link.name().to_string()
    }

    fn send(&mut self, msg: &HostMsg) -> Result<(), Error> {
        self.link.send(msg)
    }

    /// One poll; errors on silence (no intact frame for `--silence-timeout`,
    /// however many bytes came), a closed link, another version, or a
    /// handshake that does not end in time.
    fn poll(&mut self) -> Result<(), Error> {
        let state = &mut *self.state;
        let mut frames = 0u64;
        let before = self.link.bytes_in();
        let polled = self.link.poll(POLL, |inc| {
            frames += 1;
            state.on_incoming(inc);
        })?;
        if let Some(what) = self.state.fault.take() {
            return Err(Error::Link(LinkError::Probe { port: self.port(), what }));
        }
        let gap = self.last_poll.elapsed();
        self.last_poll = Instant::now();
        if gap > POLL + SUSPENDED {
            // We were stopped: the probe's bytes waited in the link. The
            // silence (and the handshake's bound) count from now on.
            let lost = gap - POLL;
            self.last_frame = (self.last_frame + lost).min(Instant::now());
            self.handshake_until = self.handshake_until.map(|t| t + lost);
            if self.state.running() {
                // Slips and a short schedule follow from it; say why.
                self.state.notes.push(format!(
                    "latprobe did not run for {} during the measurement (suspended: Ctrl-Z, SIGSTOP, a \
                     machine's sleep): a virtual probe's stimuli of that time slipped, and a probe's \
                     bytes waited in the link",
                    crate::units::format_duration(lost)
                ));
            }
        }
        if frames > 0 {
            self.last_frame = Instant::now();
            self.bytes_since_frame = 0;
        } else {
            self.bytes_since_frame += self.link.bytes_in() - before;
        }
        if polled == Polled::Closed && self.state.stopped.is_none() {
            let what = if self.state.started.is_some() {
                "during the measurement"
            } else {
                "before the measurement started"
            };
            return Err(Error::Link(LinkError::Closed { port: self.port(), what: what.into() }));
        }
        if let Some(theirs) = self.state.other_version {
            return Err(Error::Link(LinkError::VersionMismatch {
                port: self.port(),
                ours: PROTOCOL_VERSION,
                theirs,
            }));
        }
        let quiet = self.last_frame.elapsed();
        let handshake_over = self.handshake_until.is_some_and(|t| Instant::now() >= t);
        if quiet >= self.opts.silence || handshake_over {
            return Err(self.no_frames(quiet, quiet < self.opts.silence));
        }
        Ok(())
    }

    /// The error for a probe that has not said anything usable for `quiet`,
    /// or (`handshake`) that talks but did not finish the handshake in its
    /// bound.
    fn no_frames(&self, quiet: Duration, handshake: bool) -> Error {
        let bytes = self.bytes_since_frame;
        let show = crate::units::format_duration;
        let bound = self.opts.silence + HANDSHAKE_EXTRA;
        match (self.state.started.is_some(), bytes) {
            (false, _) if handshake && self.state.probe.is_none() => Error::Link(LinkError::Probe {
                port: self.port(),
                what: format!(
                    "it sent latprobe frames for {} but never answered Hello: it is busy with another \
                     host's measurement or runs other firmware; reset the probe (or flash it)",
                    show(bound)
                ),
            }),
            (false, _) if handshake => Error::Link(LinkError::Probe {
                port: self.port(),
                what: format!(
                    "it answered Hello but did not take the measurement within {}: reset the probe",
                    show(bound)
                ),
            }),
            (false, 0) if self.state.probe.is_none() => {
                Error::Link(LinkError::NoHello { port: self.port(), waited: self.opts.silence })
            }
            (false, 0) => Error::Link(LinkError::Probe {
                port: self.port(),
                what: format!(
                    "it answered Hello but then said nothing for {} (--silence-timeout {}): reset the probe \
                     (or raise --silence-timeout)",
                    show(quiet),
                    show(self.opts.silence)
                ),
            }),
            (false, _) => Error::Link(LinkError::Garbled { port: self.port(), waited: quiet, bytes }),
            (true, 0) => Error::Link(LinkError::Silent { port: self.port(), waited: quiet }),
            (true, _) => Error::Link(LinkError::Probe {
                port: self.port(),
                what: format!(
                    "no intact frame for {} though {bytes} bytes came: the link is corrupted \
                     (check the cable, the baud rate and that nothing else writes to the port)",
                    crate::units::format_duration(quiet)
                ),
            }),
        }
    }

    /// Poll until `done` (true) or a signal (false); resend `again` every second.
    fn wait(&mut self, done: impl Fn(&RunState) -> bool, again: Option<HostMsg>) -> Result<bool, Error> {
        let mut sent = Instant::now();
        loop {
            if done(self.state) {
                return Ok(true);
            }
            if self.signals.load(Ordering::SeqCst) > 0 {
                return Ok(false);
            }
            if let Some(reason) = crate::signals::abort_reason() {
                return Err(Error::Link(LinkError::Probe { port: self.port(), what: reason }));
            }
            self.poll()?;
            if let Some(msg) = &again {
                if sent.elapsed() >= Duration::from_secs(1) {
                    self.send(msg)?;
                    sent = Instant::now();
                }
            }
        }
    }

    /// Send `msg` again, once, if nothing at all came from the probe since
    /// `sent` and `after` has passed: the first was lost on the link.
    /// Returns whether it did.
    fn resend_if_unheard(&mut self, msg: &HostMsg, sent: Instant, after: Duration) -> Result<bool, Error> {
        if sent.elapsed() < after || self.last_frame > sent {
            return Ok(false);
        }
        let what = match msg {
            HostMsg::Stop => "Stop",
            HostMsg::Configure(_) => "Configure",
            _ => "a message",
        };
        let why = format!("the probe said nothing for {} after {what}", crate::units::format_duration(after));
        self.resend(msg, what, &why)?;
        Ok(true)
    }

    /// Send `msg` (`what`) a second time because `why` shows the first was
    /// lost: counted in `counts.host_resends` and said in a note.
    fn resend(&mut self, msg: &HostMsg, what: &str, why: &str) -> Result<(), Error> {
        self.send(msg)?;
        self.state.resent += 1;
        self.state
            .notes
            .push(format!("{why}, so latprobe sent {what} again (the first was lost on the link)"));
        Ok(())
    }

    fn refused(&self, code: ErrorCode, detail: String) -> Error {
        let hint = match code {
            ErrorCode::ZeroInterval => "raise --interval",
            ErrorCode::BadTimeout => {
                "make --timeout shorter than --interval (one stimulus in flight: --byte, gpio-echo) \
                 or than 9 intervals (identity bytes)"
            }
            ErrorCode::BadDither => "lower --dither, --timeout or --guard, or raise --interval",
            ErrorCode::ZeroCount => "give --count at least 1",
            ErrorCode::UnsupportedMode => "choose another --mode",
            ErrorCode::BadStimulus => "check --byte or --edge for this --mode",
            ErrorCode::ShortInterval => {
                "raise --interval: a stimulus byte must have left the probe's target UART (and --guard \
                 passed) before the next"
            }
            ErrorCode::Busy => "the probe is busy with another measurement: reset it",
            ErrorCode::BadTrigger => "make --trigger-above shorter than --timeout, in an echo mode",
            ErrorCode::NoTrigger => "this probe has no trigger output: leave --trigger-above out",
            _ => "check the flags against the probe's capabilities",
        };
        Error::Link(LinkError::Refused {
            port: self.port(),
            code: format!("{code:?}"),
            detail,
            hint: hint.into(),
        })
    }
}

/// Errors the probe sends about the link rather than in answer to a
/// command: damaged or unreadable frames (garbage on the line, or a stale
/// Stop answered by NotRunning).
fn is_line_noise(code: ErrorCode) -> bool {
    matches!(code, ErrorCode::BadFrame | ErrorCode::BadMessage | ErrorCode::NotRunning)
}

/// Run a measurement over `link`, folding everything into `state`.
///
/// Returns how it ended; on an error `state` still holds what arrived, so
/// the caller writes the report either way. A first signal (counted in
/// `signals`) sends Stop and waits for the last batches; a second one stops
/// waiting.
pub fn run(
    link: &mut Link,
    state: &mut RunState,
    opts: &SessionOptions,
    signals: &AtomicUsize,
    progress: ProgressFn<'_>,
) -> Result<EndedBy, Error> {
    let mut d = Driver {
        link,
        state,
        opts,
        signals,
        last_frame: Instant::now(),
        bytes_since_frame: 0,
        // Hello, Configure (a Busy probe is stopped first, a second) and
        // Start: a probe that cannot finish them in this time never will,
        // and a stream of bytes without a frame must not hang the run.
        handshake_until: Some(Instant::now() + opts.silence + HANDSHAKE_EXTRA),
        last_poll: Instant::now(),
    };
    let hello = HostMsg::Hello { protocol_version: PROTOCOL_VERSION };
    d.send(&hello)?;
    if !d.wait(|s| s.probe.is_some(), Some(hello))? {
        return Ok(EndedBy::Interrupted);
    }
    let probe = d.state.probe.clone().expect("waited for it");
    if probe.protocol_version != PROTOCOL_VERSION {
        return Err(Error::Link(LinkError::VersionMismatch {
            port: d.port(),
            ours: PROTOCOL_VERSION,
            theirs: probe.protocol_version,
        }));
    }
    let mode = opts.request.mode.mode();
    if !Capabilities(probe.capabilities).contains(mode.capability()) {
        return Err(Error::Config(format!(
            "the probe on {} ({}) cannot measure --mode {}; it offers: {}",
            d.port(),
            probe.board,
            mode.name(),
            probe.capability_names().join(", ")
        )));
    }
    let config = opts.request.config(probe.timer_hz, Capabilities(probe.capabilities))?;
    check_byte_rate(&config, probe.timer_hz, probe.target_baud)?;
    if let (Some(cal), Some(line)) = (&opts.request.calibration, Request::line_of(config.stimulus)) {
        cal.check(&probe, line)?;
    }

    // Configure; a probe still running an earlier measurement (its host
    // died) answers Busy: stop that one and try again. A line-level error
    // (a damaged frame, maybe garbage sent before we came, maybe our own
    // Configure) is no answer: send Configure again.
    //
    // A Configure that draws no word at all for half the silence timeout
    // was lost on the link (an idle probe says nothing unasked): it is sent
    // again, once a run. A Configure received twice is harmless: the second
    // replaces the first, and the probe answers both.
    d.state.sent_config = Some(config);
    let mut stopped_stale = false;
    let mut attempts = 0;
    let mut configure_resent = false;
    loop {
        attempts += 1;
        d.state.configured = None;
        d.state.probe_error = None;
        let msg = HostMsg::Configure(config);
        d.send(&msg)?;
        let sent = Instant::now();
        let answered = |s: &RunState| s.configured.is_some() || s.probe_error.is_some();
        while !answered(d.state) {
            if d.signals.load(Ordering::SeqCst) > 0 {
                return Ok(EndedBy::Interrupted);
            }
            if let Some(reason) = crate::signals::abort_reason() {
                return Err(Error::Link(LinkError::Probe { port: d.port(), what: reason }));
            }
            d.poll()?;
            if !configure_resent && !answered(d.state) {
                configure_resent = d.resend_if_unheard(&msg, sent, opts.silence / 2)?;
            }
        }
        match d.state.probe_error.take() {
            None => break,
            Some((ErrorCode::Busy, _)) if !stopped_stale => {
                stopped_stale = true;
                d.send(&HostMsg::Stop)?;
                let until = Instant::now() + Duration::from_secs(1);
                while Instant::now() < until {
                    d.poll()?;
                }
            }
            Some((code, detail)) if is_line_noise(code) => {
                if attempts >= 5 {
                    return Err(Error::Link(LinkError::Probe {
                        port: d.port(),
                        what: format!("it kept reporting {code:?} ({detail}) instead of taking the configuration: check the link's baud rate and wiring"),
                    }));
                }
            }
            Some((code, detail)) => return Err(d.refused(code, detail)),
        }
    }

    d.state.probe_error = None;
    d.send(&HostMsg::Start)?;
    loop {
        if !d.wait(|s| s.started.is_some() || s.probe_error.is_some(), None)? {
            return Ok(EndedBy::Interrupted);
        }
        match d.state.probe_error.take() {
            None => break,
            Some((code, _)) if is_line_noise(code) => {}
            Some((code, detail)) => return Err(d.refused(code, detail)),
        }
    }

    d.handshake_until = None;
    let t0 = Instant::now();
    // The caller hears of the measurement as soon as it has started.
    progress(d.state, Duration::ZERO);
    let duration = opts.request.duration_ns.map(Duration::from_nanos);
    let mut stop_sent: Option<(Instant, EndedBy)> = None;
    let mut stop_resent = false;
    // The probe's tick when Stop went out, estimated from the last
    // heartbeat; past the deadline a probe still running never got it.
    let mut stop_tick_estimate = 0u64;
    let mut stop_deadline_tick: Option<u64> = None;
    let timer_hz = probe.timer_hz;
    // Why the run is being aborted (the demo's responder died): the probe
    // is stopped like on a signal, and the run then fails with this.
    let mut aborting: Option<String> = None;
    let mut last_progress = Instant::now();
    loop {
        d.poll()?;
        if d.state.restarted {
            return Err(Error::Link(LinkError::Probe { port: d.port(), what: restarted_error(d.state) }));
        }
        if let Some(s) = d.state.stopped {
            if let Some(reason) = aborting {
                return Err(Error::Link(LinkError::Probe { port: d.port(), what: reason }));
            }
            return match s.reason {
                StopReason::CountReached => Ok(EndedBy::CountReached),
                StopReason::HostStop => match stop_sent {
                    Some((_, why)) => Ok(why),
                    None => {
                        let what = "it reported the measurement stopped by a Stop latprobe never sent: \
                                    something else writes to the probe's port (close it), or the probe \
                                    misread a damaged frame; the report holds what arrived, rerun"
                            .to_string();
                        d.state.refused += 1;
                        d.state.notes.push(format!("latprobe refused a message of the probe: {what}"));
                        Err(Error::Link(LinkError::Probe { port: d.port(), what }))
                    }
                },
                StopReason::Fault => {
                    let what = d.state.probe_error.as_ref().map_or_else(
                        || "it stopped the measurement with a fault".to_string(),
                        |(c, t)| format!("it stopped the measurement with a fault ({c:?}: {t})"),
                    );
                    Err(Error::Link(LinkError::Probe { port: d.port(), what }))
                }
            };
        }
        let signals = d.signals.load(Ordering::SeqCst);
        // A Stop is sent again, once, only when nothing at all (no batch, no
        // heartbeat, no error) came after it for half the shorter of the
        // silence and Stop waits: then the first was lost. Anything heard
        // means the probe may have it, and a second Stop would end the run
        // at once and abandon the stimuli in flight (firmware/src/lib.rs).
        //
        // The probe can also go on talking with the Stop lost (a damaged
        // frame is counted, and the run goes on): then its own clock says
        // so. A probe that has the Stop finishes the stimuli in flight within
        // one timeout and sends Stopped; a heartbeat that still says
        // `running` later than the probe's tick at the Stop (estimated from
        // the heartbeat before it) plus a timeout plus a second of slack
        // proves it never got it, and the second Stop is then the first it
        // sees.
        if let (Some((at, _)), false) = (stop_sent, stop_resent) {
            stop_resent = d.resend_if_unheard(&HostMsg::Stop, at, opts.silence.min(opts.stop_wait) / 2)?;
            if let (false, Some(limit), Some(h)) = (stop_resent, stop_deadline_tick, d.state.heartbeat) {
                if h.running && h.tick > limit {
                    let why = format!(
                        "the probe went on measuring {} after latprobe's Stop (its heartbeat said so)",
                        format_ns(ticks_to_ns(h.tick.saturating_sub(stop_tick_estimate), timer_hz))
                    );
                    d.resend(&HostMsg::Stop, "Stop", &why)?;
                    stop_resent = true;
                }
            }
        }
        match stop_sent {
            None => {
                if aborting.is_none() {
                    aborting = crate::signals::abort_reason();
                }
                let why = if aborting.is_some() {
                    Some(EndedBy::Failed)
                } else if signals > 0 {
                    Some(EndedBy::Interrupted)
                } else if duration.is_some_and(|dur| t0.elapsed() >= dur) {
                    Some(EndedBy::DurationElapsed)
                } else {
                    None
                };
                if let Some(why) = why {
                    d.send(&HostMsg::Stop)?;
                    stop_sent = Some((Instant::now(), why));
                    if let (Some(h), Some(h_at)) = (d.state.heartbeat, d.state.heartbeat_at) {
                        let since = u64::try_from(h_at.elapsed().as_nanos()).unwrap_or(u64::MAX);
                        stop_tick_estimate = h.tick.saturating_add(ns_to_ticks(since, timer_hz));
                        let slack = ns_to_ticks(1_000_000_000, timer_hz)
                            .saturating_add(u64::from(config.timeout_ticks))
                            .saturating_add(u64::from(config.interval_ticks));
                        stop_deadline_tick = Some(stop_tick_estimate.saturating_add(slack));
                    }
                    if why == EndedBy::Interrupted {
                        crate::stderr_line!(
                            "latprobe: stopping: waiting up to {} for the probe's last samples \
                             (interrupt again to stop waiting)",
                            crate::units::format_duration(opts.stop_wait)
                        );
                    }
                }
            }
            Some((at, why)) => {
                if signals > 1 {
                    d.state.notes.push(
                        "interrupted twice: latprobe stopped waiting for the probe's last samples, so \
                         samples taken after the last batch that arrived are not in the report"
                            .into(),
                    );
                    return Ok(EndedBy::Interrupted);
                }
                if at.elapsed() >= opts.stop_wait {
                    let waited = crate::units::format_duration(opts.stop_wait);
                    if let Some(reason) = aborting {
                        return Err(Error::Link(LinkError::Probe { port: d.port(), what: reason }));
                    }
                    if why == EndedBy::Interrupted {
                        // The user asked to stop, and the run stopped: what
                        // did not come is said, not turned into a failure.
                        d.state.notes.push(format!(
                            "interrupted: the probe did not confirm Stop within {waited}, so samples it \
                             took after the last batch that arrived are not in the report"
                        ));
                        return Ok(EndedBy::Interrupted);
                    }
                    return Err(Error::Link(LinkError::Probe {
                        port: d.port(),
                        what: format!("it did not confirm Stop within {waited}"),
                    }));
                }
            }
        }
        if last_progress.elapsed() >= PROGRESS_EVERY {
            last_progress = Instant::now();
            progress(d.state, t0.elapsed());
        }
    }
}

/// What a probe reset mid-run means, for the error and the report.
///
/// latprobe stops rather than resumes: the reset took the probe's counters
/// and whatever samples it had not sent yet, so how many stimuli went
/// unreported is unknowable, and `samples + lost = taken` could no longer
/// hold; its clock and sequence start again, so a resumed run would be two
/// runs in one report. A reset is a fault of the bench (power, watchdog,
/// someone pressed reset) that CI must see, not smooth over.
fn restarted_error(state: &RunState) -> String {
    let samples = state.analysis.as_ref().map_or(0, Analysis::samples);
    format!(
        "restarted during the measurement (it said Hello again after {samples} samples): the run stops \
         there and the report holds what arrived; samples it took but had not sent before the reset are \
         unknown, so rerun for a complete measurement (check the probe's power and USB cable)"
    )
}
