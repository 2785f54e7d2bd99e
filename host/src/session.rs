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
    byte_ticks, min_interval_ticks, ns_to_ticks, ticks_to_ns, timing_fault, Capabilities, Config, Edge,
    ErrorCode, Heartbeat, HostMsg, Mode, ProbeMsg, ResponseLine, Stimulus, StopReason, Stopped, TimingFault,
    DEFAULT_HORIZON_INTERVALS, PROTOCOL_VERSION,
};

use crate::analysis::Analysis;
use crate::link::{Incoming, Link, Polled};
use crate::model::LineArg;
use crate::model::{EdgeArg, EndedBy, ModeArg, ProbeHello, Request};
use crate::units::format_ns;
use crate::Error;

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

/// Periodic mode's default horizon, in intervals: an edge later than this
/// after its cycle's fitted time is a timeout sample (like uart-echo's
/// horizon, the same number of intervals: one constant, in the protocol).
pub const PERIODIC_HORIZON_INTERVALS: u32 = DEFAULT_HORIZON_INTERVALS;

/// The default timeout for a window of `window` stimuli in flight, in any
/// unit (ns or ticks), from the interval, dither and guard in that unit.
///
/// One in flight: what the interval leaves after dither and guard. With
/// identity: [`DEFAULT_HORIZON_INTERVALS`] intervals, at most what nine
/// intervals leave after dither and guard. Always below `window` intervals
/// (the probe's rule), 0 when dither and guard leave nothing.
pub fn default_timeout(window: usize, interval: u64, dither: u64, guard: u64) -> u64 {
    let span = interval.saturating_mul(window as u64);
    let room = span.saturating_sub(dither.saturating_add(guard)).min(span.saturating_sub(1));
    if window > 1 {
        room.min(interval.saturating_mul(u64::from(DEFAULT_HORIZON_INTERVALS)))
    } else {
        room
    }
}

/// The probe's timing rules (firmware `validate`) for a window of `window`
/// stimuli in flight, in any unit; `show` formats a value of that unit and
/// `given` says whether the user gave `--timeout`. The error names the flags.
fn check_timing(
    window: usize,
    [interval, dither, timeout, guard]: [u64; 4],
    given: bool,
    show: &dyn Fn(u64) -> String,
) -> Result<(), String> {
    let span = interval.saturating_mul(window as u64);
    let (span_name, why) = if window > 1 {
        (
            format!("{window} × --interval ({})", show(span)),
            format!("identity bytes: up to {window} stimuli in flight"),
        )
    } else {
        (format!("--interval {}", show(interval)), "one stimulus in flight".to_string())
    };
    // The probe's own rule (`validate`), so that nothing it would refuse
    // is sent; only the words are the host's.
    match timing_fault(window as u64, interval, dither, timeout, guard) {
        Some(TimingFault::NoTimeout) if given => Err("--timeout must be longer than 0".into()),
        Some(TimingFault::NoTimeout) => Err(format!(
            "--dither {} and --guard {} leave no time for a response in {span_name} ({why}): \
             lower them, raise --interval, or give --timeout",
            show(dither),
            show(guard)
        )),
        Some(TimingFault::TimeoutTooLong) => {
            Err(format!("--timeout {} must be shorter than {span_name} ({why})", show(timeout)))
        }
        Some(TimingFault::Crowded) => Err(format!(
            "--dither {} + --timeout {} + --guard {} must fit in {span_name} ({why})",
            show(dither),
            show(timeout),
            show(guard)
        )),
        None => Ok(()),
    }
}

impl Request {
    /// The stimulus for a board with `caps`: in UART modes identity bytes
    /// without `--byte`, the fixed byte with it. A loopback measures
    /// whichever line the board has: UART if it echoes bytes, else the
    /// GPIO edge.
    pub fn stimulus(&self, caps: Capabilities) -> Stimulus {
        let uart = self.byte.map_or(Stimulus::Identified, Stimulus::Byte);
        match self.mode.mode() {
            Mode::Periodic => Stimulus::None(match self.line {
                Some(LineArg::Gpio) => ResponseLine::Gpio,
                Some(LineArg::Uart) => ResponseLine::Uart,
                // A board without GPIO capture (QEMU, the virtual probe)
                // has only its UART; `config` refuses the choice for a
                // board with both.
                None if caps.contains(Capabilities::GPIO_ECHO) && !caps.contains(Capabilities::UART_ECHO) => {
                    ResponseLine::Gpio
                }
                None => ResponseLine::Uart,
            }),
            Mode::UartEcho => uart,
            Mode::GpioEcho => Stimulus::Edge(self.edge.edge()),
            Mode::Loopback => match self.line {
                Some(LineArg::Uart) => uart,
                Some(LineArg::Gpio) => Stimulus::Edge(self.edge.edge()),
                // Never reached after `validate` (loopback needs --line);
                // the board's own line otherwise.
                None if caps.contains(Capabilities::UART_ECHO) => uart,
                None => Stimulus::Edge(self.edge.edge()),
            },
        }
    }

    /// The line a calibration must be for: the stimulus's.
    pub fn line_of(stimulus: Stimulus) -> Option<LineArg> {
        match stimulus {
            Stimulus::Edge(_) => Some(LineArg::Gpio),
            Stimulus::Byte(_) | Stimulus::Identified => Some(LineArg::Uart),
            Stimulus::None(_) => None,
        }
    }

    /// The stimulus before the probe is known: a loopback is taken to be a
    /// UART one (the larger window, the longer default timeout).
    pub fn assumed_stimulus(&self) -> Stimulus {
        self.stimulus(Capabilities::UART_ECHO)
    }

    /// Whether the window is known without the probe's capabilities.
    fn window_known(&self) -> bool {
        self.mode != ModeArg::Loopback || self.byte.is_some() || self.line.is_some()
    }

    /// The effective timeout in ns for `window` stimuli in flight:
    /// `--timeout`, else [`default_timeout`].
    pub fn timeout_ns_for(&self, window: usize) -> u64 {
        self.timeout_ns
            .unwrap_or_else(|| default_timeout(window, self.interval_ns, self.dither_ns, self.guard_ns()))
    }

    /// The effective timeout in ns of the [`Request::assumed_stimulus`]
    /// (0 in periodic mode, where nothing times out).
    pub fn timeout_ns(&self) -> u64 {
        if self.mode.mode().is_echo() {
            self.timeout_ns_for(self.assumed_stimulus().window())
        } else {
            0
        }
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
        match (self.mode, self.line) {
            (ModeArg::Loopback, None) => return Err(Error::Usage(
                "--mode loopback needs --line gpio (PA0 wired to PA1) or --line uart (PA9 wired to PA10, \
                     PA1 and PB10): the line the wire loops"
                    .into(),
            )),
            (ModeArg::Loopback, Some(LineArg::Gpio)) if self.byte.is_some() => {
                return Err(Error::Usage(
                    "--byte sets a UART stimulus: --line gpio loops an edge (--edge)".into(),
                ))
            }
            (ModeArg::Loopback | ModeArg::Periodic, Some(_)) | (_, None) => {}
            (mode, Some(_)) => {
                return Err(Error::Usage(format!(
                "--line chooses the line of a loopback or of a periodic target; --mode {} has its own line",
                mode.mode().name()
            )))
            }
        }
        if self.calibration.is_some() && self.mode == ModeArg::Periodic {
            return Err(Error::Usage(
                "--calibration applies to the echo modes: periodic delays are against the fit, with no \
                 probe offset in them"
                    .into(),
            ));
        }
        if let Some(b) = self.byte {
            match self.mode {
                ModeArg::GpioEcho => {
                    return Err(Error::Usage(format!(
                        "--byte 0x{b:02x} sets a UART stimulus: --mode gpio-echo sends an edge (--edge)"
                    )))
                }
                ModeArg::Periodic => {
                    return Err(Error::Usage(format!(
                        "--byte 0x{b:02x} has no use in --mode periodic: the probe sends nothing"
                    )))
                }
                ModeArg::UartEcho | ModeArg::Loopback => {}
            }
        }
        if self.mode.mode().is_echo() && self.window_known() {
            let w = self.assumed_stimulus().window();
            let values = [self.interval_ns, self.dither_ns, self.timeout_ns_for(w), self.guard_ns()];
            check_timing(w, values, self.timeout_ns.is_some(), &format_ns).map_err(Error::Usage)?;
        }
        if self.count == Some(0) {
            return Err(Error::Usage("--count must be at least 1".into()));
        }
        if self.duration_ns == Some(0) {
            return Err(Error::Usage("--duration must be longer than 0".into()));
        }
        Ok(())
    }

    /// The probe configuration for a timer of `timer_hz` on a board with
    /// `caps`. A default timeout is worked out in the probe's ticks (so
    /// rounding cannot break the probe's rules) and clamped to what a u32
    /// of ticks holds; a timeout the user gave is taken as it is.
    pub fn config(&self, timer_hz: u32, caps: Capabilities) -> Result<Config, Error> {
        let mode = self.mode.mode();
        // In periodic mode the probe sends nothing: only the interval and
        // the count matter to it (and the horizon to the host's analysis),
        // so dither and guard are carried as they are, clamped; the
        // interval and a given timeout are refused when they do not fit.
        let echo = mode.is_echo();
        let too_long = |flag: &str, ns: u64| {
            Error::Usage(format!(
                "{flag} {} is too long for the probe: at {timer_hz} Hz it allows at most {}",
                format_ns(ns),
                format_ns(ticks_to_ns(u64::from(u32::MAX), timer_hz))
            ))
        };
        let ticks = |flag: &str, ns: u64| -> Result<u32, Error> {
            let t = ns_to_ticks(ns, timer_hz);
            if !echo && flag != "--interval" && flag != "--timeout" {
                return Ok(u32::try_from(t).unwrap_or(u32::MAX));
            }
            if t == 0 && ns > 0 {
                return Err(Error::Usage(format!(
                    "{flag} {} is shorter than one tick of the probe's {timer_hz} Hz timer",
                    format_ns(ns)
                )));
            }
            u32::try_from(t).map_err(|_| too_long(flag, ns))
        };
        let stimulus = self.stimulus(caps);
        if mode == Mode::Periodic {
            let both = caps.contains(Capabilities::GPIO_ECHO) && caps.contains(Capabilities::UART_ECHO);
            match (self.line, both) {
                (None, true) => return Err(Error::Usage(
                    "--mode periodic needs --line gpio (the target toggles a GPIO; Nucleo: wired to PA1) \
                         or --line uart (the target sends a byte a period; Nucleo: its TX to PA10 and PA1): \
                         this probe captures both, and a guess from the first edges could be wrong for the \
                         whole run"
                        .into(),
                )),
                (Some(LineArg::Gpio), _) if !caps.contains(Capabilities::GPIO_ECHO) => {
                    return Err(Error::Usage(
                        "--line gpio: this probe captures no GPIO edges (its periodic line is a UART); use \
                         --line uart"
                            .into(),
                    ))
                }
                (Some(LineArg::Uart), _) if !caps.contains(Capabilities::UART_ECHO) => {
                    return Err(Error::Usage(
                        "--line uart: this probe has no target UART; use --line gpio".into(),
                    ))
                }
                _ => {}
            }
        }
        if let (Some(b), Stimulus::Edge(_)) = (self.byte, stimulus) {
            return Err(Error::Usage(format!(
                "--byte 0x{b:02x}: this probe loops back GPIO edges only (it cannot echo bytes); \
                 leave --byte out or use --edge"
            )));
        }
        if mode == Mode::Loopback {
            let (needs, name, other) = match stimulus {
                Stimulus::Edge(_) => (Capabilities::GPIO_ECHO, "gpio", "uart"),
                _ => (Capabilities::UART_ECHO, "uart", "gpio"),
            };
            if !caps.contains(needs) {
                return Err(Error::Usage(format!(
                    "--line {name}: this probe has no {name} line to loop back; use --line {other}"
                )));
            }
        }
        let interval = ticks("--interval", self.interval_ns)?;
        let dither = ticks("--dither", self.dither_ns)?;
        let guard = ticks("--guard", self.guard_ns())?;
        let timeout = match self.timeout_ns {
            Some(ns) => ticks("--timeout", ns)?,
            // Periodic: the horizon of the host's analysis (the probe has no
            // use for it): an edge later than this after its cycle's fitted
            // time is a timeout sample.
            None if !echo => {
                u32::try_from(u64::from(interval) * u64::from(PERIODIC_HORIZON_INTERVALS)).unwrap_or(u32::MAX)
            }
            None => {
                let t = default_timeout(
                    stimulus.window(),
                    u64::from(interval),
                    u64::from(dither),
                    u64::from(guard),
                );
                u32::try_from(t).unwrap_or(u32::MAX)
            }
        };
        if echo {
            let show = |t: u64| format_ns(ticks_to_ns(t, timer_hz));
            let values = [interval, dither, timeout, guard].map(u64::from);
            check_timing(stimulus.window(), values, self.timeout_ns.is_some(), &show)
                .map_err(Error::Usage)?;
        }
        Ok(Config {
            mode,
            interval_ticks: interval,
            dither_ticks: dither,
            timeout_ticks: timeout,
            guard_ticks: guard,
            count: self.count,
            seed: self.seed,
            stimulus,
        })
    }
}

/// The probe's rule for a byte stimulus ([`min_interval_ticks`]): each
/// byte has left the transmitter, and a fixed byte's guard has passed,
/// before the next is written. Checked against the probe's target baud
/// before Configure, so the error names the baud and the minimum.
pub fn check_byte_rate(config: &Config, timer_hz: u32, target_baud: u32) -> Result<(), Error> {
    let min = min_interval_ticks(config.stimulus, byte_ticks(timer_hz, target_baud), config.guard_ticks);
    if u64::from(config.interval_ticks) >= min {
        return Ok(());
    }
    let show = |t: u64| format_ns(ticks_to_ns(t, timer_hz));
    let byte = show(byte_ticks(timer_hz, target_baud));
    let (what, fix) = if config.stimulus.has_identity() {
        (format!("one byte time ({byte})"), "raise --interval or the target line's baud")
    } else {
        (
            format!("one byte time ({byte}) plus --guard {}", show(u64::from(config.guard_ticks))),
            "raise --interval, lower --guard, or raise the target line's baud",
        )
    };
    Err(Error::Usage(format!(
        "--interval {} is shorter than {what} on the probe's {target_baud} Bd target line: the next stimulus \
         byte would be written while the last one still shifts out. At {target_baud} Bd the interval must be \
         at least {}: {fix}",
        show(u64::from(config.interval_ticks)),
        show(min)
    )))
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

/// Probe log lines kept in a report; more are counted.
pub const MAX_PROBE_LOGS: usize = 32;

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
    /// When that heartbeat arrived, on the host's clock.
    pub heartbeat_at: Option<Instant>,
    /// The latest error the probe reported.
    pub probe_error: Option<(ErrorCode, String)>,
    /// The probe's warning and error log lines (at most [`MAX_PROBE_LOGS`]),
    /// with the count of any dropped beyond that.
    pub probe_logs: Vec<String>,
    /// Log lines beyond [`MAX_PROBE_LOGS`], counted.
    pub probe_logs_dropped: u64,
    /// The probe's own offset subtracted from every latency and the
    /// calibration loopback's minimum (`--calibration`), ns.
    pub calibration: Option<(u64, u64)>,
    /// A frame of another protocol version was seen.
    pub other_version: Option<u8>,
    /// The probe said Hello again during the measurement (it restarted).
    pub restarted: bool,
    /// Remarks of the live session for the report (an unconfirmed Stop, a
    /// raw file that could not be written); a replay reads them back from
    /// the raw file's ending.
    pub notes: Vec<String>,
    /// Stop and Configure messages sent a second time because the first
    /// drew no word from the probe (see [`run`]).
    pub resent: u64,
    /// The statistics, from Started on.
    pub analysis: Option<Analysis>,
    /// Periodic mode: keep every cycle's delay (for `--target-log`).
    pub keep_cycles: bool,
    /// Periodic mode: why the cycles could not be kept.
    pub keep_error: Option<String>,
    /// The configuration the live session sent: a Configured must echo it
    /// (`None` in a replay, where only its plausibility is checked).
    pub sent_config: Option<Config>,
    /// Messages whose contents disagree with the request or with what the
    /// protocol allows (a Hello with a 0 Hz timer, a Configured other than
    /// the one sent, a Stopped whose total is not what arrived, a Stop
    /// latprobe never sent): refused or noted, each counted here and said
    /// in [`RunState::notes`].
    pub refused: u64,
    /// The refusal the live session must fail on (a replay only notes it).
    pub fault: Option<String>,
    /// Where every counted sample goes as a row (`report --samples`),
    /// handed to the analysis at Started.
    pub rows: Option<Box<dyn crate::samples::Sink>>,
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
            heartbeat_at: None,
            probe_error: None,
            probe_logs: Vec::new(),
            probe_logs_dropped: 0,
            calibration: None,
            other_version: None,
            restarted: false,
            notes: Vec::new(),
            resent: 0,
            analysis: None,
            keep_cycles: false,
            keep_error: None,
            sent_config: None,
            refused: 0,
            fault: None,
            rows: None,
        }
    }

    /// Count and note a message latprobe cannot use, and fail the live
    /// session on it.
    pub fn refuse(&mut self, what: String) {
        self.refused += 1;
        self.notes.push(format!("latprobe refused a message of the probe: {what}"));
        self.fault.get_or_insert(what);
    }

    /// Why a Configured cannot be the probe's answer to this session.
    fn misfit(&self, c: &Config) -> Option<String> {
        let shown = |c: &Config| {
            format!(
                "mode {}, interval {} ticks, timeout {} ticks, dither {}, guard {}, count {:?}, {:?}",
                c.mode.name(),
                c.interval_ticks,
                c.timeout_ticks,
                c.dither_ticks,
                c.guard_ticks,
                c.count,
                c.stimulus
            )
        };
        let fix = "the probe does not run this latprobe's firmware, or something else writes to its port: \
                   flash the probe (latprobe flash) and rerun";
        if let Some(sent) = &self.sent_config {
            if sent != c {
                return Some(format!(
                    "it confirmed a configuration other than the one sent (sent {}; confirmed {}): {fix}",
                    shown(sent),
                    shown(c)
                ));
            }
        }
        let why = if c.interval_ticks == 0 {
            "an interval of 0 ticks"
        } else if c.mode.is_echo() && c.timeout_ticks == 0 {
            "a timeout of 0 ticks"
        } else if (c.mode == Mode::Periodic) != self.periodic {
            "another mode than the run's"
        } else {
            return None;
        };
        Some(format!("it confirmed a configuration with {why} ({}): {fix}", shown(c)))
    }

    /// The run is over, however it ended: place the periodic edges still
    /// waiting for their block. Idempotent.
    pub fn finalize(&mut self) {
        if let Some(a) = &mut self.analysis {
            a.finish_periodic();
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
                    self.heartbeat_at = Some(Instant::now());
                }
            }
            ProbeMsg::Hello(info) => {
                if self.started.is_some() {
                    self.restarted = self.stopped.is_none();
                    return;
                }
                if info.timer_hz == 0 {
                    // Nothing could be converted, and every rule in ticks
                    // would divide by it.
                    self.refuse(format!(
                        "its Hello gives a timer of 0 Hz (board {}, firmware {}): it is not a working \
                         latprobe probe; flash it (latprobe flash)",
                        info.board, info.firmware_version
                    ));
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
                    target_baud: info.target_baud,
                    build_id: info.build_id,
                });
            }
            ProbeMsg::Configured(c) => {
                if self.started.is_none() {
                    match self.misfit(&c) {
                        None => self.configured = Some(c),
                        Some(why) => self.refuse(why),
                    }
                }
            }
            ProbeMsg::Started { start_tick, first_seq } => {
                if self.started.is_some() {
                    return;
                }
                // Started before any Hello: a stream joined mid-way. Without
                // the timer rate nothing can be converted, so wait for ours.
                let Some(hello) = &self.probe else { return };
                let Some(config) = self.configured else { return };
                self.started = Some(StartInfo { start_tick, first_seq });
                // A sample without an answer is a latency above the timeout
                // the probe accepted (periodic mode has none).
                let timeout_ns = if self.periodic {
                    0
                } else {
                    ticks_to_ns(u64::from(config.timeout_ticks), hello.timer_hz)
                };
                let mut a =
                    Analysis::new(hello.timer_hz, start_tick, first_seq, self.histfile_max_us, timeout_ns);
                if let (Some((offset, floor)), false) = (self.calibration, self.periodic) {
                    a.set_calibration(offset, floor);
                }
                if self.periodic {
                    let interval = u64::from(config.interval_ticks);
                    let horizon = match config.timeout_ticks {
                        0 => interval * u64::from(PERIODIC_HORIZON_INTERVALS),
                        t => u64::from(t),
                    };
                    a.enable_periodic(interval, horizon);
                    if self.keep_cycles {
                        match crate::periodic::CycleSpill::create() {
                            Ok(s) => a.spill = Some(s),
                            Err(e) => self.keep_error = Some(format!("cannot keep the cycles: {e}")),
                        }
                    }
                }
                if let Some(sink) = self.rows.take() {
                    a.rows = Some(crate::samples::Feed::new(sink, config.stimulus));
                }
                self.analysis = Some(a);
            }
            ProbeMsg::Stopped(s) => {
                if !self.running() {
                    return;
                }
                self.stopped = Some(s);
                if let (Some(a), Some(st)) = (&mut self.analysis, self.started) {
                    a.finish(st.first_seq.saturating_add(s.taken), self.periodic);
                    // samples + lost = taken is what the report promises:
                    // a total that says otherwise is the probe's error, and
                    // the report counts what arrived.
                    let (arrived, lost) = if self.periodic {
                        (a.edges.edges, a.edges.seq.lost)
                    } else {
                        (a.samples(), a.seq.lost)
                    };
                    let count = self.configured.and_then(|c| c.count);
                    if let (StopReason::CountReached, Some(n)) = (s.reason, count) {
                        if s.taken != n {
                            self.refused += 1;
                            self.notes.push(format!(
                                "the probe's Stopped says it reached its count of {n} with {} taken: its \
                                 total disagrees with the request",
                                s.taken
                            ));
                        }
                    }
                    if arrived.saturating_add(lost) != s.taken {
                        self.refused += 1;
                        self.notes.push(format!(
                            "the probe's Stopped says it took {} {what}, but {arrived} arrived and {lost} \
                             are missing: its total disagrees with its own stream; the report counts \
                             what arrived",
                            s.taken,
                            what = if self.periodic { "edges" } else { "samples" },
                        ));
                    }
                }
            }
            ProbeMsg::Error(e) => self.probe_error = Some((e.code, e.detail.to_string())),
            ProbeMsg::Log(l) => {
                if l.level == latprobe_protocol::LogLevel::Info {
                    return;
                }
                if self.probe_logs.len() < MAX_PROBE_LOGS {
                    let level =
                        if l.level == latprobe_protocol::LogLevel::Error { "error" } else { "warning" };
                    self.probe_logs.push(format!("{level}: {}", l.text));
                } else {
                    self.probe_logs_dropped += 1;
                }
            }
        }
    }

    /// Time the probe measured from start to stop, if both are known.
    pub fn probe_elapsed_ns(&self) -> Option<u64> {
        let (st, sp, a) = (self.started?, self.stopped?, self.analysis.as_ref()?);
        Some(a.conv().ns(sp.end_tick.saturating_sub(st.start_tick)))
    }
}

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
            return Err(Error::Probe { port: self.port(), what });
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
            return Err(Error::Closed { port: self.port(), what: what.into() });
        }
        if let Some(theirs) = self.state.other_version {
            return Err(Error::VersionMismatch { port: self.port(), ours: PROTOCOL_VERSION, theirs });
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
            (false, _) if handshake && self.state.probe.is_none() => Error::Probe {
                port: self.port(),
                what: format!(
                    "it sent latprobe frames for {} but never answered Hello: it is busy with another \
                     host's measurement or runs other firmware; reset the probe (or flash it)",
                    show(bound)
                ),
            },
            (false, _) if handshake => Error::Probe {
                port: self.port(),
                what: format!(
                    "it answered Hello but did not take the measurement within {}: reset the probe",
                    show(bound)
                ),
            },
            (false, 0) if self.state.probe.is_none() => {
                Error::NoHello { port: self.port(), waited: self.opts.silence }
            }
            (false, 0) => Error::Probe {
                port: self.port(),
                what: format!(
                    "it answered Hello but then said nothing for {} (--silence-timeout {}): reset the probe \
                     (or raise --silence-timeout)",
                    show(quiet),
                    show(self.opts.silence)
                ),
            },
            (false, _) => Error::Garbled { port: self.port(), waited: quiet, bytes },
            (true, 0) => Error::Silent { port: self.port(), waited: quiet },
            (true, _) => Error::Probe {
                port: self.port(),
                what: format!(
                    "no intact frame for {} though {bytes} bytes came: the link is corrupted \
                     (check the cable, the baud rate and that nothing else writes to the port)",
                    crate::units::format_duration(quiet)
                ),
            },
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
                return Err(Error::Probe { port: self.port(), what: reason });
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
                return Err(Error::Probe { port: d.port(), what: reason });
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
            return Err(Error::Probe { port: d.port(), what: restarted_error(d.state) });
        }
        if let Some(s) = d.state.stopped {
            if let Some(reason) = aborting {
                return Err(Error::Probe { port: d.port(), what: reason });
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
                        Err(Error::Probe { port: d.port(), what })
                    }
                },
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
                        crate::tell!(
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
                        return Err(Error::Probe { port: d.port(), what: reason });
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
                    return Err(Error::Probe {
                        port: d.port(),
                        what: format!("it did not confirm Stop within {waited}"),
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
        return Err(Error::Usage(format!(
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

#[cfg(test)]
mod tests {
    use super::*;

    fn req(mode: ModeArg, byte: Option<u8>) -> Request {
        Request {
            mode,
            interval_ns: 1_000_000,
            dither_ns: 0,
            timeout_ns: None,
            guard_ns: None,
            count: Some(10),
            duration_ns: None,
            seed: 1,
            byte,
            edge: EdgeArg::Rising,
            line: (mode == ModeArg::Loopback).then_some(LineArg::Uart),
            calibration: None,
        }
    }

    const UART: Capabilities = Capabilities::UART_ECHO;
    const GPIO: Capabilities = Capabilities(Capabilities::GPIO_ECHO.0 | Capabilities::LOOPBACK.0);

    fn usage(r: Result<impl std::fmt::Debug, Error>) -> String {
        match r {
            Err(Error::Usage(m)) => m,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    /// Issue 17, finding 4: a periodic line is named, never guessed. A
    /// board that captures both kinds needs `--line`; one with only its
    /// UART (QEMU, the virtual probe) takes that; a line the board lacks is
    /// refused naming the other.
    #[test]
    fn periodic_names_its_line() {
        let both = Capabilities(GPIO.0 | UART.0 | Capabilities::PERIODIC.0);
        let p = req(ModeArg::Periodic, None);
        p.validate().unwrap();
        let m = usage(p.config(100_000_000, both));
        assert!(m.contains("--line gpio") && m.contains("--line uart") && m.contains("PA1"), "{m}");
        let uart_only = Capabilities(UART.0 | Capabilities::PERIODIC.0);
        assert_eq!(p.config(1_000_000, uart_only).unwrap().stimulus, Stimulus::None(ResponseLine::Uart));
        let g = Request { line: Some(LineArg::Gpio), ..req(ModeArg::Periodic, None) };
        g.validate().unwrap();
        assert_eq!(g.config(100_000_000, both).unwrap().stimulus, Stimulus::None(ResponseLine::Gpio));
        let m = usage(g.config(1_000_000, uart_only));
        assert!(m.contains("--line uart"), "{m}");
        let u = Request { line: Some(LineArg::Uart), ..req(ModeArg::Periodic, None) };
        assert_eq!(u.config(100_000_000, both).unwrap().stimulus, Stimulus::None(ResponseLine::Uart));
        // Echo modes still have their own line.
        let m = usage(Request { line: Some(LineArg::Gpio), ..req(ModeArg::GpioEcho, None) }.validate());
        assert!(m.contains("has its own line"), "{m}");
    }

    /// Issue 17, finding 7: a byte stimulus faster than the target line
    /// carries it is refused before Configure, naming the baud and the
    /// minimum.
    #[test]
    fn a_byte_interval_shorter_than_the_line_is_refused_naming_baud_and_minimum() {
        let fixed = Request { interval_ns: 50_000, byte: Some(0x55), ..req(ModeArg::UartEcho, None) };
        let c = fixed.config(100_000_000, UART).unwrap();
        let m = usage(check_byte_rate(&c, 100_000_000, 115_200));
        // 86.81 us a byte, plus the default guard of 5 us.
        assert!(m.contains("115200 Bd") && m.contains("86.81us") && m.contains("91.81us"), "{m}");
        assert!(m.contains("--interval 50us"), "{m}");
        let ok = Request { interval_ns: 100_000, ..fixed.clone() }.config(100_000_000, UART).unwrap();
        check_byte_rate(&ok, 100_000_000, 115_200).unwrap();
        // Identity: one byte time per interval, the guard is per identity.
        let id =
            Request { interval_ns: 80_000, byte: None, ..fixed.clone() }.config(100_000_000, UART).unwrap();
        let m = usage(check_byte_rate(&id, 100_000_000, 115_200));
        assert!(m.contains("at least 86.81us"), "{m}");
        let id =
            Request { interval_ns: 90_000, byte: None, ..fixed.clone() }.config(100_000_000, UART).unwrap();
        check_byte_rate(&id, 100_000_000, 115_200).unwrap();
        // No bit timing (QEMU's UART, the virtual probe): no limit.
        check_byte_rate(&c, 100_000_000, 0).unwrap();
    }

    #[test]
    fn default_timeouts_follow_the_window() {
        // Identity: 8 intervals, at most 9 intervals less dither and guard.
        let r = req(ModeArg::UartEcho, None);
        assert_eq!(r.assumed_stimulus(), Stimulus::Identified);
        assert_eq!(r.timeout_ns(), 8_000_000);
        let r = Request { dither_ns: 1_000_000, guard_ns: Some(200_000), ..req(ModeArg::UartEcho, None) };
        assert_eq!(r.timeout_ns(), 7_800_000);
        r.validate().unwrap();
        // One in flight: the interval less dither and guard.
        let r = req(ModeArg::UartEcho, Some(0x55));
        assert_eq!(r.assumed_stimulus(), Stimulus::Byte(0x55));
        assert_eq!(r.timeout_ns(), 900_000);
        assert_eq!(req(ModeArg::GpioEcho, None).timeout_ns(), 900_000);
        // With neither guard nor dither it stays below the interval.
        let r = Request { guard_ns: Some(0), ..req(ModeArg::GpioEcho, None) };
        assert_eq!(r.timeout_ns(), 999_999);
        r.validate().unwrap();
        assert_eq!(req(ModeArg::Periodic, None).timeout_ns(), 0);
        // In ticks, the same rule.
        let c = req(ModeArg::UartEcho, None).config(100_000_000, UART).unwrap();
        assert_eq!((c.timeout_ticks, c.stimulus), (800_000, Stimulus::Identified));
        let c = req(ModeArg::UartEcho, Some(7)).config(100_000_000, UART).unwrap();
        assert_eq!((c.timeout_ticks, c.stimulus), (90_000, Stimulus::Byte(7)));
        let c = Request { guard_ns: Some(0), ..req(ModeArg::GpioEcho, None) }.config(3, GPIO);
        assert!(c.is_err(), "an interval of 0 ticks at 3 Hz: {c:?}");
    }

    #[test]
    fn a_default_timeout_is_clamped_to_the_probe_a_given_one_is_refused() {
        // 1 s at 1 GHz: 8 intervals do not fit u32 ticks; the default is clamped.
        let r = Request { interval_ns: 1_000_000_000, ..req(ModeArg::UartEcho, None) };
        r.validate().unwrap();
        let c = r.config(1_000_000_000, UART).unwrap();
        assert_eq!(c.timeout_ticks, u32::MAX);
        assert_eq!(c.interval_ticks, 1_000_000_000);
        let given = Request { timeout_ns: Some(5_000_000_000), ..r };
        given.validate().unwrap();
        let m = usage(given.config(1_000_000_000, UART));
        assert!(m.contains("--timeout 5s is too long"), "{m}");
    }

    #[test]
    fn bad_timing_names_the_flags_for_the_window() {
        let r = Request { timeout_ns: Some(2_000_000), ..req(ModeArg::UartEcho, None) };
        r.validate().unwrap(); // identity: 2 ms fits 9 intervals
        let m = usage(Request { byte: Some(0x55), ..r.clone() }.validate());
        assert!(m.contains("--timeout 2ms must be shorter than --interval 1ms"), "{m}");
        let m = usage(Request { timeout_ns: Some(9_000_000), ..r.clone() }.validate());
        assert!(m.contains("--timeout 9ms must be shorter than 9 × --interval (9ms)"), "{m}");
        let m = usage(Request { timeout_ns: Some(8_950_000), ..r.clone() }.validate());
        assert!(
            m.contains("--dither 0ns + --timeout 8.95ms + --guard 100us must fit in 9 × --interval"),
            "{m}"
        );
        let m = usage(Request { dither_ns: 900_000, ..req(ModeArg::UartEcho, Some(1)) }.validate());
        assert!(m.contains("--dither 900us and --guard 100us leave no time"), "{m}");
        let m = usage(Request { timeout_ns: Some(0), ..r }.validate());
        assert!(m.contains("--timeout must be longer than 0"), "{m}");
    }

    #[test]
    fn byte_fits_only_the_uart_stimulus() {
        let m = usage(req(ModeArg::GpioEcho, Some(0x55)).validate());
        assert!(m.starts_with("--byte 0x55") && m.contains("gpio-echo"), "{m}");
        let m = usage(req(ModeArg::Periodic, Some(0x55)).validate());
        assert!(m.starts_with("--byte 0x55") && m.contains("periodic"), "{m}");
        // A loopback loops the line --line names, and needs it.
        let m = usage(Request { line: None, ..req(ModeArg::Loopback, None) }.validate());
        assert!(m.contains("needs --line gpio (PA0 wired to PA1) or --line uart"), "{m}");
        let lb = req(ModeArg::Loopback, None);
        lb.validate().unwrap();
        assert_eq!(lb.config(1_000_000, UART).unwrap().stimulus, Stimulus::Identified);
        let g = Request { line: Some(LineArg::Gpio), ..req(ModeArg::Loopback, None) };
        g.validate().unwrap();
        let c = g.config(1_000_000, Capabilities(GPIO.0 | UART.0)).unwrap();
        assert_eq!(
            (c.stimulus, c.timeout_ticks),
            (Stimulus::Edge(Edge::Rising), 900),
            "--line gpio on a UART board"
        );
        let m = usage(Request { byte: Some(0x55), ..g.clone() }.validate());
        assert!(m.contains("--line gpio loops an edge"), "{m}");
        let m = usage(Request { line: Some(LineArg::Gpio), ..req(ModeArg::UartEcho, None) }.validate());
        assert!(m.contains("--line chooses the line of a loopback"), "{m}");
        let m = usage(req(ModeArg::Loopback, Some(0x55)).config(1_000_000, GPIO));
        assert!(m.starts_with("--line uart: this probe has no uart line"), "{m}");
        let m = usage(g.config(1_000_000, UART));
        assert!(m.starts_with("--line gpio: this probe has no gpio line"), "{m}");
        // Dither that fits identity's nine intervals but not a GPIO loopback's one.
        let lb = Request { dither_ns: 950_000, ..req(ModeArg::Loopback, None) };
        lb.validate().unwrap();
        lb.config(1_000_000, UART).unwrap();
        let m = usage(Request { line: Some(LineArg::Gpio), ..lb }.validate());
        assert!(m.contains("--dither 950us and --guard 100us leave no time"), "{m}");
    }
}
