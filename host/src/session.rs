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
    ns_to_ticks, Capabilities, Config, Edge, ErrorCode, Heartbeat, HostMsg, Mode, ProbeMsg, Stimulus,
    StopReason, Stopped, PROTOCOL_VERSION,
};
use serde::{Deserialize, Serialize};

use crate::analysis::Analysis;
use crate::link::{Incoming, Link, Polled};
use crate::units::format_ns;
use crate::Error;

/// Measurement mode, as named on the command line and in reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ModeArg {
    /// The probe toggles a GPIO, the target toggles one back.
    GpioEcho,
    /// The probe sends a byte, the target echoes it.
    UartEcho,
    /// The target toggles a line on its own timer; the probe timestamps it.
    Periodic,
    /// The stimulus wired straight back: the probe's own offset and jitter.
    Loopback,
}

impl ModeArg {
    /// The wire mode.
    pub fn mode(self) -> Mode {
        match self {
            ModeArg::GpioEcho => Mode::GpioEcho,
            ModeArg::UartEcho => Mode::UartEcho,
            ModeArg::Periodic => Mode::Periodic,
            ModeArg::Loopback => Mode::Loopback,
        }
    }
}

/// Stimulus edge for GPIO modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum EdgeArg {
    /// Low to high.
    Rising,
    /// High to low.
    Falling,
    /// Invert on every stimulus.
    Toggle,
}

/// What the user asked for, in nanoseconds (the probe's tick rate is not
/// known until its Hello).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// Measurement mode.
    pub mode: ModeArg,
    /// Time between stimuli (or the target's nominal period).
    pub interval_ns: u64,
    /// Random extra delay per stimulus, at most this.
    pub dither_ns: u64,
    /// Response timeout; `None`: half of what the dither leaves of the interval.
    pub timeout_ns: Option<u64>,
    /// Quiet time before the next stimulus; `None`: a tenth of the interval.
    pub guard_ns: Option<u64>,
    /// Samples to take; the probe stops by itself.
    pub count: Option<u64>,
    /// Run time; the host sends Stop after it.
    pub duration_ns: Option<u64>,
    /// Dither seed.
    pub seed: u64,
    /// Stimulus byte in UART modes.
    pub byte: u8,
    /// Stimulus edge in GPIO modes.
    pub edge: EdgeArg,
}

impl Request {
    /// The effective timeout.
    pub fn timeout_ns(&self) -> u64 {
        self.timeout_ns.unwrap_or(self.interval_ns.saturating_sub(self.dither_ns) / 2)
    }

    /// The effective guard time.
    pub fn guard_ns(&self) -> u64 {
        self.guard_ns.unwrap_or(self.interval_ns / 10)
    }

    /// Check what can be checked before talking to a probe.
    pub fn validate(&self) -> Result<(), Error> {
        if self.interval_ns == 0 {
            return Err(Error::Usage("--interval must be longer than 0".into()));
        }
        if self.mode.mode().is_echo() {
            let t = self.timeout_ns();
            if t == 0 {
                return Err(Error::Usage("--timeout must be longer than 0".into()));
            }
            if t >= self.interval_ns {
                return Err(Error::Usage(format!(
                    "--timeout {} must be shorter than --interval {}",
                    format_ns(t),
                    format_ns(self.interval_ns)
                )));
            }
            if self.dither_ns.saturating_add(t).saturating_add(self.guard_ns()) > self.interval_ns {
                return Err(Error::Usage(format!(
                    "--dither {} + --timeout {} + --guard {} must fit in --interval {}",
                    format_ns(self.dither_ns),
                    format_ns(t),
                    format_ns(self.guard_ns()),
                    format_ns(self.interval_ns)
                )));
            }
        }
        if self.count == Some(0) {
            return Err(Error::Usage("--count must be at least 1".into()));
        }
        if self.duration_ns == Some(0) {
            return Err(Error::Usage("--duration must be longer than 0".into()));
        }
        Ok(())
    }

    /// The probe configuration for a timer of `timer_hz`.
    pub fn config(&self, timer_hz: u32, caps: Capabilities) -> Result<Config, Error> {
        let mode = self.mode.mode();
        // In periodic mode the probe sends nothing: only the count matters
        // to it, so the other fields are carried as they are, clamped.
        let echo = mode.is_echo();
        let ticks = |flag: &str, ns: u64| -> Result<u32, Error> {
            let t = ns_to_ticks(ns, timer_hz);
            if !echo {
                return Ok(u32::try_from(t).unwrap_or(u32::MAX));
            }
            if t == 0 && ns > 0 {
                return Err(Error::Usage(format!(
                    "{flag} {} is shorter than one tick of the probe's {timer_hz} Hz timer",
                    format_ns(ns)
                )));
            }
            u32::try_from(t).map_err(|_| {
                Error::Usage(format!(
                    "{flag} {} is too long for the probe: at {timer_hz} Hz it allows at most {}",
                    format_ns(ns),
                    format_ns(latprobe_protocol::ticks_to_ns(u64::from(u32::MAX), timer_hz))
                ))
            })
        };
        let stimulus = match mode {
            Mode::Periodic => Stimulus::None,
            Mode::UartEcho => Stimulus::Byte(self.byte),
            Mode::GpioEcho => Stimulus::Edge(self.edge.edge()),
            // A loopback measures whichever line the board has: UART if it
            // echoes bytes, else the GPIO edge.
            Mode::Loopback if caps.contains(Capabilities::UART_ECHO) => Stimulus::Byte(self.byte),
            Mode::Loopback => Stimulus::Edge(self.edge.edge()),
        };
        Ok(Config {
            mode,
            interval_ticks: ticks("--interval", self.interval_ns)?,
            dither_ticks: ticks("--dither", self.dither_ns)?,
            timeout_ticks: ticks("--timeout", self.timeout_ns())?,
            guard_ticks: ticks("--guard", self.guard_ns())?,
            count: self.count,
            seed: self.seed,
            stimulus,
        })
    }
}

impl EdgeArg {
    /// The wire edge.
    pub fn edge(self) -> Edge {
        match self {
            EdgeArg::Rising => Edge::Rising,
            EdgeArg::Falling => Edge::Falling,
            EdgeArg::Toggle => Edge::Toggle,
        }
    }
}

/// The probe's Hello, owned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeHello {
    /// Protocol version.
    pub protocol_version: u8,
    /// Firmware version.
    pub firmware_version: String,
    /// Board name.
    pub board: String,
    /// Timer rate.
    pub timer_hz: u32,
    /// Counter width.
    pub timer_bits: u8,
    /// Capability bits.
    pub capabilities: u32,
    /// Largest batch.
    pub max_batch: u16,
}

impl ProbeHello {
    /// Whether the probe is emulated or virtual.
    pub fn is_emulated(&self) -> bool {
        Capabilities(self.capabilities).contains(Capabilities::EMULATED)
    }

    /// The capability names.
    pub fn capability_names(&self) -> Vec<String> {
        let c = Capabilities(self.capabilities);
        let mut v: Vec<String> =
            Mode::ALL.iter().filter(|m| c.contains(m.capability())).map(|m| m.name().to_string()).collect();
        if c.contains(Capabilities::HW_CAPTURE) {
            v.push("hw-capture".into());
        }
        if c.contains(Capabilities::EMULATED) {
            v.push("emulated".into());
        }
        v
    }
}

/// The measurement's start, from the probe's Started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartInfo {
    /// The tick the schedule counts from.
    pub start_tick: u64,
    /// The first sequence number.
    pub first_seq: u64,
}

/// Everything the probe told us, folded; shared by live runs and replays.
#[derive(Debug)]
pub struct RunState {
    histfile_max_us: u32,
    periodic: bool,
    /// The probe's Hello.
    pub probe: Option<ProbeHello>,
    /// The configuration the probe accepted.
    pub configured: Option<Config>,
    /// The measurement's start.
    pub started: Option<StartInfo>,
    /// The measurement's end.
    pub stopped: Option<Stopped>,
    /// The latest heartbeat during the measurement.
    pub heartbeat: Option<Heartbeat>,
    /// The latest error the probe reported.
    pub probe_error: Option<(ErrorCode, String)>,
    /// A frame of another protocol version was seen.
    pub other_version: Option<u8>,
    /// The probe said Hello again during the measurement (it restarted).
    pub restarted: bool,
    /// The statistics, from Started on.
    pub analysis: Option<Analysis>,
}

impl RunState {
    /// Nothing heard yet; bins of 1 µs up to `histfile_max_us`.
    pub fn new(histfile_max_us: u32, periodic: bool) -> Self {
        Self {
            histfile_max_us,
            periodic,
            probe: None,
            configured: None,
            started: None,
            stopped: None,
            heartbeat: None,
            probe_error: None,
            other_version: None,
            restarted: false,
            analysis: None,
        }
    }

    fn running(&self) -> bool {
        self.started.is_some() && self.stopped.is_none()
    }

    /// Fold one incoming message. Anything outside the measurement (stale
    /// batches of an earlier run, say) is ignored.
    pub fn on_incoming(&mut self, inc: Incoming<'_>) {
        let msg = match inc {
            Incoming::OtherVersion(v) => {
                self.other_version = Some(v);
                return;
            }
            Incoming::Message(m) => m,
        };
        match msg {
            ProbeMsg::SampleBatch(b) => {
                if self.running() {
                    if let Some(a) = &mut self.analysis {
                        a.ingest_samples(&b);
                    }
                }
            }
            ProbeMsg::EdgeBatch(b) => {
                if self.running() {
                    if let Some(a) = &mut self.analysis {
                        a.ingest_edges(&b);
                    }
                }
            }
            ProbeMsg::Heartbeat(h) => {
                if self.running() {
                    self.heartbeat = Some(h);
                }
            }
            ProbeMsg::Hello(info) => {
                if self.started.is_some() {
                    self.restarted = self.stopped.is_none();
                    return;
                }
                self.probe = Some(ProbeHello {
                    protocol_version: info.protocol_version,
                    firmware_version: info.firmware_version.to_string(),
                    board: info.board.to_string(),
                    timer_hz: info.timer_hz,
                    timer_bits: info.timer_bits,
                    capabilities: info.capabilities.0,
                    max_batch: info.max_batch,
                });
            }
            ProbeMsg::Configured(c) => {
                if self.started.is_none() {
                    self.configured = Some(c);
                }
            }
            ProbeMsg::Started { start_tick, first_seq } => {
                if self.started.is_some() {
                    return;
                }
                // Started before any Hello: a stream joined mid-way. Without
                // the timer rate nothing can be converted, so wait for ours.
                let Some(hello) = &self.probe else { return };
                if self.configured.is_none() {
                    return;
                }
                self.started = Some(StartInfo { start_tick, first_seq });
                self.analysis =
                    Some(Analysis::new(hello.timer_hz, start_tick, first_seq, self.histfile_max_us));
            }
            ProbeMsg::Stopped(s) => {
                if !self.running() {
                    return;
                }
                self.stopped = Some(s);
                if let (Some(a), Some(st)) = (&mut self.analysis, self.started) {
                    a.finish(st.first_seq.saturating_add(s.taken), self.periodic);
                }
            }
            ProbeMsg::Error(e) => self.probe_error = Some((e.code, e.detail.to_string())),
        }
    }

    /// Time the probe measured from start to stop, if both are known.
    pub fn probe_elapsed_ns(&self) -> Option<u64> {
        let (st, sp, a) = (self.started?, self.stopped?, self.analysis.as_ref()?);
        Some(a.conv().ns(sp.end_tick.saturating_sub(st.start_tick)))
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndedBy {
    /// The probe took `--count` samples.
    CountReached,
    /// `--duration` elapsed and the host stopped the probe.
    DurationElapsed,
    /// A signal (Ctrl-C, SIGTERM) stopped the run early.
    Interrupted,
    /// The run failed (see the report's `error`).
    Failed,
    /// A replayed stream ends without the probe's Stopped.
    StreamEnded,
}

/// Options of a live session.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// What to measure.
    pub request: Request,
    /// No byte for this long is an error.
    pub silence: Duration,
    /// How long to wait for Stopped after sending Stop.
    pub stop_wait: Duration,
}

/// Called a few times a second during the measurement.
pub type ProgressFn<'a> = &'a mut dyn FnMut(&RunState, Duration);

const POLL: Duration = Duration::from_millis(50);
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

struct Driver<'a> {
    link: &'a mut Link,
    state: &'a mut RunState,
    opts: &'a SessionOptions,
    signals: &'a AtomicUsize,
    last_data: Instant,
}

impl Driver<'_> {
    fn port(&self) -> String {
        self.link.name().to_string()
    }

    fn send(&mut self, msg: &HostMsg) -> Result<(), Error> {
        self.link.send(msg)
    }

    /// One poll; errors on silence, a closed link or another version.
    fn poll(&mut self) -> Result<(), Error> {
        let state = &mut *self.state;
        match self.link.poll(POLL, |inc| state.on_incoming(inc))? {
            Polled::Data => self.last_data = Instant::now(),
            Polled::Timeout => {}
            Polled::Closed => {
                if self.state.stopped.is_none() {
                    let what = if self.state.started.is_some() {
                        "during the measurement"
                    } else {
                        "before the measurement started"
                    };
                    return Err(Error::Closed { port: self.port(), what: what.into() });
                }
            }
        }
        if let Some(theirs) = self.state.other_version {
            return Err(Error::VersionMismatch { port: self.port(), ours: PROTOCOL_VERSION, theirs });
        }
        if self.last_data.elapsed() >= self.opts.silence {
            return Err(Error::Silent { port: self.port(), waited: self.opts.silence });
        }
        Ok(())
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
            self.poll()?;
            if let Some(msg) = &again {
                if sent.elapsed() >= Duration::from_secs(1) {
                    self.send(msg)?;
                    sent = Instant::now();
                }
            }
        }
    }

    fn refused(&self, code: ErrorCode, detail: String) -> Error {
        let hint = match code {
            ErrorCode::ZeroInterval => "raise --interval",
            ErrorCode::BadTimeout => "make --timeout shorter than --interval",
            ErrorCode::BadDither => "lower --dither or --guard, or raise --interval",
            ErrorCode::ZeroCount => "give --count at least 1",
            ErrorCode::UnsupportedMode => "choose another --mode",
            ErrorCode::BadStimulus => "check --byte or --edge for this --mode",
            ErrorCode::Busy => "the probe is busy with another measurement: reset it",
            _ => "check the flags against the probe's capabilities",
        };
        Error::Refused { port: self.port(), code: format!("{code:?}"), detail, hint: hint.into() }
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
    let mut d = Driver { link, state, opts, signals, last_data: Instant::now() };
    let hello = HostMsg::Hello { protocol_version: PROTOCOL_VERSION };
    d.send(&hello)?;
    if !d.wait(|s| s.probe.is_some(), Some(hello))? {
        return Ok(EndedBy::Interrupted);
    }
    let probe = d.state.probe.clone().expect("waited for it");
    if probe.protocol_version != PROTOCOL_VERSION {
        return Err(Error::VersionMismatch {
            port: d.port(),
            ours: PROTOCOL_VERSION,
            theirs: probe.protocol_version,
        });
    }
    let mode = opts.request.mode.mode();
    if !Capabilities(probe.capabilities).contains(mode.capability()) {
        return Err(Error::Usage(format!(
            "the probe on {} ({}) cannot measure --mode {}; it offers: {}",
            d.port(),
            probe.board,
            mode.name(),
            probe.capability_names().join(", ")
        )));
    }
    let config = opts.request.config(probe.timer_hz, Capabilities(probe.capabilities))?;

    // Configure; a probe still running an earlier measurement (its host
    // died) answers Busy: stop that one and try again. A line-level error
    // (a damaged frame, maybe garbage sent before we came, maybe our own
    // Configure) is no answer: send Configure again.
    let mut stopped_stale = false;
    let mut attempts = 0;
    loop {
        attempts += 1;
        d.state.configured = None;
        d.state.probe_error = None;
        d.send(&HostMsg::Configure(config))?;
        if !d.wait(|s| s.configured.is_some() || s.probe_error.is_some(), None)? {
            return Ok(EndedBy::Interrupted);
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
                    return Err(Error::Probe {
                        port: d.port(),
                        what: format!("it kept reporting {code:?} ({detail}) instead of taking the configuration: check the link's baud rate and wiring"),
                    });
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

    let t0 = Instant::now();
    let duration = opts.request.duration_ns.map(Duration::from_nanos);
    let mut stop_sent: Option<(Instant, EndedBy)> = None;
    let mut last_progress = Instant::now();
    loop {
        d.poll()?;
        if d.state.restarted {
            return Err(Error::Probe { port: d.port(), what: "it restarted during the measurement".into() });
        }
        if let Some(s) = d.state.stopped {
            return match s.reason {
                StopReason::CountReached => Ok(EndedBy::CountReached),
                StopReason::HostStop => Ok(stop_sent.map_or(EndedBy::Interrupted, |(_, why)| why)),
                StopReason::Fault => {
                    let what = d.state.probe_error.as_ref().map_or_else(
                        || "it stopped the measurement with a fault".to_string(),
                        |(c, t)| format!("it stopped the measurement with a fault ({c:?}: {t})"),
                    );
                    Err(Error::Probe { port: d.port(), what })
                }
            };
        }
        let signals = d.signals.load(Ordering::SeqCst);
        match stop_sent {
            None => {
                let why = if signals > 0 {
                    Some(EndedBy::Interrupted)
                } else if duration.is_some_and(|dur| t0.elapsed() >= dur) {
                    Some(EndedBy::DurationElapsed)
                } else {
                    None
                };
                if let Some(why) = why {
                    d.send(&HostMsg::Stop)?;
                    stop_sent = Some((Instant::now(), why));
                }
            }
            Some((at, why)) => {
                if signals > 1 {
                    return Ok(EndedBy::Interrupted);
                }
                if at.elapsed() >= opts.stop_wait {
                    let _ = why;
                    return Err(Error::Probe {
                        port: d.port(),
                        what: format!(
                            "it did not confirm Stop within {}",
                            crate::units::format_duration(opts.stop_wait)
                        ),
                    });
                }
            }
        }
        if last_progress.elapsed() >= PROGRESS_EVERY {
            last_progress = Instant::now();
            progress(d.state, t0.elapsed());
        }
    }
}

/// What a replay of a raw file found.
#[derive(Debug)]
pub struct Replayed {
    /// The recorded run context.
    pub ctx: crate::rawfile::RunContext,
    /// The state after every recorded byte.
    pub state: RunState,
    /// Frames that could not be used.
    pub bad_frames: u64,
    /// How the recorded run ended, as far as the bytes tell.
    pub ending: crate::report::Ending,
}

/// Replay a raw file through the same link and [`RunState`] as a live run.
///
/// What the bytes cannot tell is inferred: `ended_at` is the file's last
/// modification; a probe Stopped by the host counts as `duration-elapsed`
/// (complete) when the probe's own clock covered at least 99 % of the
/// requested `--duration`, else as `interrupted`.
pub fn replay(path: &std::path::Path, histfile_max_us: Option<u32>) -> Result<Replayed, Error> {
    let (mut ctx, source) = crate::rawfile::open(path)?;
    if let Some(m) = histfile_max_us {
        ctx.histfile_max_us = m;
    }
    let mut state = RunState::new(ctx.histfile_max_us, ctx.request.mode == ModeArg::Periodic);
    let mut link = Link::new(Box::new(source), None);
    while link.poll(Duration::ZERO, |inc| state.on_incoming(inc))? != Polled::Closed {}
    let (ended_by, complete, error) = match state.stopped.map(|s| s.reason) {
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
    let ended_at = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map_or_else(|_| ctx.started_at.clone(), crate::timefmt::rfc3339);
    let bad_frames = link.bad_frames();
    Ok(Replayed {
        ctx,
        state,
        bad_frames,
        ending: crate::report::Ending {
            ended_by,
            complete,
            error,
            ended_at,
            replayed_from: Some(path.display().to_string()),
        },
    })
}
