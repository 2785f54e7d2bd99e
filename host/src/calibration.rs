//! Loopback calibration: the probe's own fixed offset and jitter on one
//! line, measured with the stimulus wired straight back
//! (`latprobe calibrate`), kept in a small JSON file, and subtracted from
//! later runs on the same board, firmware and line (`run --calibration`).
//!
//! ```text
//!  calibrate --line gpio|uart ─loopback run─▶ report ─median, spread─▶ calibration.json
//!  run --calibration calibration.json ─check board/firmware/line/baud─▶ every latency − offset
//! ```
//!
//! The offset is the median loopback latency: for a GPIO line the input
//! synchroniser (the firmware already takes off its input filter's fixed
//! delay), for UART the skew between the two captures of the same start bit.
//! A calibration is refused for another board, firmware version, line or
//! target baud rate, since its offset would not hold there.

use std::path::Path;

use crate::model::ProbeHello;
use crate::model::{Calibration, LineArg};
use crate::report::Report;
use crate::units::format_ns;
use crate::Error;

/// What a calibration file says it is.
pub const KIND: &str = "latprobe-calibration";

/// Fewest loopback samples a calibration is taken from.
pub const MIN_SAMPLES: u64 = 10_000;

/// The largest offset a calibration file may hold, ns. A probe's own
/// loopback offset is its input synchroniser (GPIO: tens of ns) or the skew
/// between two captures of one start bit (UART: within one bit time, 833 µs
/// even at 1200 Bd): 1 ms is above every line the probe can loop back, and
/// anything beyond it is a broken wire or an edited file, whose subtraction
/// would turn every latency into 0 and pass every `--max`.
pub const MAX_OFFSET_NS: u64 = 1_000_000;

impl LineArg {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LineArg::Gpio => "gpio",
            LineArg::Uart => "uart",
        }
    }
}

impl Calibration {
    /// The peak-to-peak jitter, ns.
    pub fn jitter_ns(&self) -> u64 {
        self.max_ns.saturating_sub(self.min_ns)
    }

    /// The calibration a finished loopback run gives, or why it gives none.
    pub fn from_report(r: &Report, line: LineArg) -> Result<Self, Error> {
        let probe = r
            .probe
            .as_ref()
            .ok_or_else(|| Error::Report("no probe answered: nothing to calibrate".into()))?;
        let c = &r.counts;
        let wire = match line {
            LineArg::Gpio => "PA0 to PA1",
            LineArg::Uart => "PA9 to PA10, PA1 and PB10",
        };
        if c.timeouts > 0 || c.lost > 0 {
            return Err(Error::Report(format!(
                "the {} loopback left {} of {} stimuli unanswered and lost {}: a wire loops every \
                 stimulus back; check the wire ({wire} on the Nucleo) and run calibrate again",
                line.name(),
                c.timeouts,
                c.samples,
                c.lost
            )));
        }
        if c.samples < MIN_SAMPLES {
            return Err(Error::Report(format!(
                "{} loopback samples are too few to calibrate: give --count {MIN_SAMPLES} or more",
                c.samples
            )));
        }
        let l =
            r.latency_ns.as_ref().ok_or_else(|| Error::Report("no loopback latency was measured".into()))?;
        let need = |v: Option<u64>, what: &str| {
            v.ok_or_else(|| {
                Error::Report(format!("the loopback's {what} is not known: nothing to calibrate"))
            })
        };
        Ok(Self {
            kind: KIND.into(),
            board: probe.hello.board.clone(),
            firmware_version: probe.hello.firmware_version.clone(),
            line,
            baud: if line == LineArg::Uart { probe.hello.target_baud } else { 0 },
            timer_hz: probe.hello.timer_hz,
            samples: c.samples,
            offset_ns: need(l.p50, "median")?,
            min_ns: need(l.min, "minimum")?,
            max_ns: need(l.max, "maximum")?,
            p99_9_ns: need(l.p99_9, "99.9th percentile")?,
            created_at: r.ended_at.clone(),
            tool_version: crate::TOOL_VERSION.into(),
        })
    }

    /// Read a calibration file.
    pub fn read(path: &Path) -> Result<Self, Error> {
        let text = crate::input::read_text_capped(path)
            .map_err(|e| Error::Input(format!("cannot read --calibration {}: {e}", path.display())))?;
        let c: Self = serde_json::from_str(&text).map_err(|e| {
            Error::Input(format!(
                "--calibration {} is not a latprobe calibration file ({e}): make one with latprobe calibrate",
                path.display()
            ))
        })?;
        if c.kind != KIND {
            return Err(Error::Input(format!(
                "--calibration {} is a '{}' file, not a {KIND}",
                path.display(),
                crate::out::clean(&c.kind)
            )));
        }
        c.validate().map_err(|why| {
            Error::Input(format!(
                "--calibration {} is not a usable calibration: {why}; make a new one with latprobe calibrate",
                path.display()
            ))
        })?;
        Ok(c)
    }

    /// The figures must describe one loopback: `min ≤ offset ≤ max`, the
    /// 99.9th percentile between the offset and the maximum, a timer rate,
    /// enough samples, and a maximum within [`MAX_OFFSET_NS`].
    pub fn validate(&self) -> Result<(), String> {
        let (min, off, p999, max) = (self.min_ns, self.offset_ns, self.p99_9_ns, self.max_ns);
        if !(min <= off && off <= max) {
            return Err(format!(
                "its offset_ns {off} must lie between its min_ns {min} and max_ns {max} (the offset is the \
                 median loopback latency)"
            ));
        }
        if !(off <= p999 && p999 <= max) {
            return Err(format!("its p99_9_ns {p999} must lie between offset_ns {off} and max_ns {max}"));
        }
        if max > MAX_OFFSET_NS {
            return Err(format!(
                "its max_ns {} is above {}, more than any probe's own loopback takes (a broken wire, or an \
                 edited file)",
                format_ns(max),
                format_ns(MAX_OFFSET_NS)
            ));
        }
        if self.timer_hz == 0 {
            return Err("its timer_hz is 0".into());
        }
        if self.samples < MIN_SAMPLES {
            return Err(format!("it was taken from {} samples, fewer than {MIN_SAMPLES}", self.samples));
        }
        Ok(())
    }

    /// Write it as pretty JSON.
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        let text = serde_json::to_string_pretty(self).unwrap_or_default() + "\n";
        crate::fsout::write(path, text.as_bytes())
            .map_err(|e| Error::io(format!("cannot write the calibration {} (--output)", path.display()), e))
    }

    /// Whether it holds for `probe` measuring on `line`: the same board,
    /// firmware version, line and (UART) target baud rate.
    pub fn check(&self, probe: &ProbeHello, line: LineArg) -> Result<(), Error> {
        let redo = format!("run latprobe calibrate --line {} again on this probe", line.name());
        let mismatch = |what: &str, file: &str, now: &str| {
            Err(Error::Input(format!(
                "--calibration was measured {what} {file}, this run uses {now}: its offset does not hold; {redo}"
            )))
        };
        if self.board != probe.board {
            return mismatch("on board", &self.board, &probe.board);
        }
        if self.firmware_version != probe.firmware_version {
            return mismatch("with firmware", &self.firmware_version, &probe.firmware_version);
        }
        if self.line != line {
            return mismatch("on the line", self.line.name(), line.name());
        }
        if line == LineArg::Uart && self.baud != probe.target_baud {
            return mismatch("at", &format!("{} Bd", self.baud), &format!("{} Bd", probe.target_baud));
        }
        Ok(())
    }

    /// One line for the summary and the report's notes.
    pub fn describe(&self) -> String {
        format!(
            "calibrated: {} subtracted from every latency (the probe's own {} loopback offset, jitter {} \
             peak to peak over {} samples, measured {} on {} {})",
            format_ns(self.offset_ns),
            self.line.name(),
            format_ns(self.jitter_ns()),
            self.samples,
            self.created_at,
            self.board,
            self.firmware_version
        )
    }
}
