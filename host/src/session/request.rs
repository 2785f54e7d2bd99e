//! What the user asked for, checked against the probe's rules and
//! turned into the probe's Configure; the Hello read back.

use super::*;

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
            return Err(Error::Config("--interval must be longer than 0".into()));
        }
        match (self.mode, self.line) {
            (ModeArg::Loopback, None) => return Err(Error::Config(
                "--mode loopback needs --line gpio (PA0 wired to PA1) or --line uart (PA9 wired to PA10, \
                     PA1 and PB10): the line the wire loops"
                    .into(),
            )),
            (ModeArg::Loopback, Some(LineArg::Gpio)) if self.byte.is_some() => {
                return Err(Error::Config(
                    "--byte sets a UART stimulus: --line gpio loops an edge (--edge)".into(),
                ))
            }
            (ModeArg::Loopback | ModeArg::Periodic, Some(_)) | (_, None) => {}
            (mode, Some(_)) => {
                return Err(Error::Config(format!(
                "--line chooses the line of a loopback or of a periodic target; --mode {} has its own line",
                mode.mode().name()
            )))
            }
        }
        if self.calibration.is_some() && self.mode == ModeArg::Periodic {
            return Err(Error::Config(
                "--calibration applies to the echo modes: periodic delays are against the fit, with no \
                 probe offset in them"
                    .into(),
            ));
        }
        if let Some(b) = self.byte {
            match self.mode {
                ModeArg::GpioEcho => {
                    return Err(Error::Config(format!(
                        "--byte 0x{b:02x} sets a UART stimulus: --mode gpio-echo sends an edge (--edge)"
                    )))
                }
                ModeArg::Periodic => {
                    return Err(Error::Config(format!(
                        "--byte 0x{b:02x} has no use in --mode periodic: the probe sends nothing"
                    )))
                }
                ModeArg::UartEcho | ModeArg::Loopback => {}
            }
        }
        if self.mode.mode().is_echo() && self.window_known() {
            let w = self.assumed_stimulus().window();
            let values = [self.interval_ns, self.dither_ns, self.timeout_ns_for(w), self.guard_ns()];
            check_timing(w, values, self.timeout_ns.is_some(), &format_ns).map_err(Error::Config)?;
        }
        if let Some(t) = self.trigger_ns {
            check_trigger(self.mode.mode(), t, self.timeout_ns(), self.timeout_ns.is_some(), &format_ns)?;
        }
        if self.count == Some(0) {
            return Err(Error::Config("--count must be at least 1".into()));
        }
        if self.duration_ns == Some(0) {
            return Err(Error::Config("--duration must be longer than 0".into()));
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
            Error::Config(format!(
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
                return Err(Error::Config(format!(
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
                (None, true) => return Err(Error::Config(
                    "--mode periodic needs --line gpio (the target toggles a GPIO; Nucleo: wired to PA1) \
                         or --line uart (the target sends a byte a period; Nucleo: its TX to PA10 and PA1): \
                         this probe captures both, and a guess from the first edges could be wrong for the \
                         whole run"
                        .into(),
                )),
                (Some(LineArg::Gpio), _) if !caps.contains(Capabilities::GPIO_ECHO) => {
                    return Err(Error::Config(
                        "--line gpio: this probe captures no GPIO edges (its periodic line is a UART); use \
                         --line uart"
                            .into(),
                    ))
                }
                (Some(LineArg::Uart), _) if !caps.contains(Capabilities::UART_ECHO) => {
                    return Err(Error::Config(
                        "--line uart: this probe has no target UART; use --line gpio".into(),
                    ))
                }
                _ => {}
            }
        }
        if let (Some(b), Stimulus::Edge(_)) = (self.byte, stimulus) {
            return Err(Error::Config(format!(
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
                return Err(Error::Config(format!(
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
                .map_err(Error::Config)?;
        }
        let trigger = match self.trigger_ns {
            None => 0,
            Some(ns) => {
                if !caps.contains(Capabilities::TRIGGER) {
                    return Err(Error::Config(
                        "--trigger-above: this probe has no trigger output (its Hello does not announce \
                         one): leave --trigger-above out, or use a probe with one: the virtual probe (latprobe \
                         demo, a FIFO), the qemu board (flags only), the Nucleo-F411RE (PB4) or the Pico (GP6); \
                         a board withholds it when its trigger timer did not start in step at boot (its \
                         log says so)"
                            .into(),
                    ));
                }
                let t = ticks("--trigger-above", ns)?;
                let show = |t: u64| format_ns(ticks_to_ns(t, timer_hz));
                check_trigger(mode, t.into(), timeout.into(), self.timeout_ns.is_some(), &show)?;
                t
            }
        };
        Ok(Config {
            mode,
            interval_ticks: interval,
            dither_ticks: dither,
            timeout_ticks: timeout,
            guard_ticks: guard,
            count: self.count,
            seed: self.seed,
            stimulus,
            trigger_ticks: trigger,
        })
    }
}

/// The probe's trigger rule ([`trigger_fault`]) in any unit, the error
/// naming `--trigger-above` and `--timeout`.
fn check_trigger(
    mode: Mode,
    trigger: u64,
    timeout: u64,
    given: bool,
    show: &dyn Fn(u64) -> String,
) -> Result<(), Error> {
    match trigger_fault(mode, trigger, timeout) {
        None => Ok(()),
        Some(TriggerFault::NotEcho) => Err(Error::Config(
            "--trigger-above applies to the echo modes: in --mode periodic no stimulus waits for an answer"
                .into(),
        )),
        Some(TriggerFault::NotBelowTimeout) => Err(Error::Config(format!(
            "--trigger-above {} must be shorter than --timeout {}{}: a stimulus that long unanswered is a \
             timeout sample already, so the trigger would say nothing more; lower --trigger-above or raise \
             --timeout",
            show(trigger),
            show(timeout),
            if given { "" } else { " (the default)" }
        ))),
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
    Err(Error::Config(format!(
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
        if c.contains(Capabilities::TRIGGER) {
            v.push("trigger".into());
        }
        v
    }
}
