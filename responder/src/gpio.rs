//! GPIO through the Linux GPIO character device, uAPI v2 (`gpiocdev`, pure
//! Rust over ioctl: nothing to link). Two jobs:
//!
//! - `periodic --gpio CHIP:LINE`: the line the periodic loop toggles once
//!   per cycle ([`GpioToggle`], a [`crate::cycles::Marker`]).
//! - `gpio-echo --chip CHIP --input L --output L`: wait for an edge on the
//!   input, toggle the output at once ([`echo`]), and log the kernel's
//!   timestamp of each edge so the in-kernel view can be set beside the
//!   probe's.
//!
//! The loops work on two small traits ([`EdgeInput`], [`Toggle`]), so they
//! are tested without GPIO hardware; the gpiocdev-backed types are the only
//! code that needs a chip.
//!
//! # The gpio-echo log (version 1)
//!
//! ```text
//! # latprobe-responder gpio-echo log 1
//! # clock CLOCK_MONOTONIC
//! # columns: event kernel_ns answered_ns
//! 0 81234567000 81234571250
//! ```
//!
//! `event` counts the input's edges from 0 (the kernel's sequence number,
//! so an edge the kernel dropped leaves a gap), `kernel_ns` is the kernel's
//! timestamp of the edge, `answered_ns` the clock read right after the
//! output was toggled: `answered_ns − kernel_ns` is the in-kernel view of
//! the latency the probe measures from outside.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use gpiocdev::line::{EdgeDetection, EventClock, Value};
use gpiocdev::Request;

/// A GPIO line named on the command line: `/dev/gpiochip0:17`, or
/// `gpiochip0:17` (under `/dev`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineSpec {
    /// The chip's device.
    pub chip: PathBuf,
    /// The line's offset on it.
    pub line: u32,
}

/// Parse `CHIP:LINE`.
pub fn parse_line_spec(text: &str) -> Result<LineSpec, String> {
    let (chip, line) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("'{text}' is not CHIP:LINE (write e.g. /dev/gpiochip0:17)"))?;
    let line =
        line.parse::<u32>().map_err(|_| format!("'{line}' is not a line offset (a number, e.g. 17)"))?;
    Ok(LineSpec { chip: chip_path(chip), line })
}

/// `gpiochip0` → `/dev/gpiochip0`; a path stays as it is.
pub fn chip_path(chip: &str) -> PathBuf {
    if chip.contains('/') {
        PathBuf::from(chip)
    } else {
        PathBuf::from("/dev").join(chip)
    }
}

/// An output line to toggle.
pub trait Toggle {
    /// Invert the line.
    fn toggle(&mut self) -> io::Result<()>;
}

/// An input line's edges.
pub trait EdgeInput {
    /// The next edge within `timeout`: `(kernel sequence number, kernel
    /// timestamp ns)`, or `None` when none came.
    fn next_edge(&mut self, timeout: Duration) -> io::Result<Option<(u64, u64)>>;
}

fn gpio_err(what: String, e: gpiocdev::Error) -> io::Error {
    io::Error::other(format!("{what}: {e}"))
}

/// A requested output line, toggled by the periodic loop or the echo.
#[derive(Debug)]
pub struct GpioToggle {
    req: Request,
    value: Value,
}

impl GpioToggle {
    /// Request `spec` as an output, inactive.
    pub fn open(spec: &LineSpec) -> io::Result<Self> {
        let req = Request::builder()
            .on_chip(&spec.chip)
            .with_consumer("latprobe-responder")
            .with_line(spec.line)
            .as_output(Value::Inactive)
            .request()
            .map_err(|e| {
                gpio_err(format!("cannot request {}:{} as an output", spec.chip.display(), spec.line), e)
            })?;
        Ok(Self { req, value: Value::Inactive })
    }
}

impl Toggle for GpioToggle {
    fn toggle(&mut self) -> io::Result<()> {
        let v = self.value.not();
        self.req.set_lone_value(v).map_err(|e| gpio_err("cannot set the output line".into(), e))?;
        self.value = v;
        Ok(())
    }
}

impl crate::cycles::Marker for GpioToggle {
    fn mark(&mut self) -> io::Result<()> {
        self.toggle()
    }
}

/// A requested input line with edge detection, timestamps on
/// `CLOCK_MONOTONIC`.
#[derive(Debug)]
pub struct GpioEdges {
    req: Request,
}

impl GpioEdges {
    /// Request `spec` as an input with `edges` detected.
    pub fn open(spec: &LineSpec, edges: EdgeDetection) -> io::Result<Self> {
        let req = Request::builder()
            .on_chip(&spec.chip)
            .with_consumer("latprobe-responder")
            .with_line(spec.line)
            .as_input()
            .with_edge_detection(edges)
            .with_event_clock(EventClock::Monotonic)
            .request()
            .map_err(|e| {
                gpio_err(
                    format!(
                        "cannot request {}:{} as an input with edge events",
                        spec.chip.display(),
                        spec.line
                    ),
                    e,
                )
            })?;
        Ok(Self { req })
    }
}

impl EdgeInput for GpioEdges {
    fn next_edge(&mut self, timeout: Duration) -> io::Result<Option<(u64, u64)>> {
        let ready =
            self.req.wait_edge_event(timeout).map_err(|e| gpio_err("waiting for an edge".into(), e))?;
        if !ready {
            return Ok(None);
        }
        let ev = self.req.read_edge_event().map_err(|e| gpio_err("reading an edge".into(), e))?;
        Ok(Some((u64::from(ev.line_seqno).saturating_sub(1), ev.timestamp_ns)))
    }
}

/// Counts of a gpio-echo run.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EchoStats {
    /// Edges answered.
    pub answered: u64,
    /// Edges the kernel dropped (gaps in its sequence numbers).
    pub dropped: u64,
}

/// The first line of the gpio-echo log.
pub const ECHO_LOG_MAGIC: &str = "# latprobe-responder gpio-echo log 1";

/// Write the gpio-echo log's header.
pub fn start_echo_log<W: Write>(out: &mut W) -> io::Result<()> {
    writeln!(out, "{ECHO_LOG_MAGIC}")?;
    writeln!(out, "# clock CLOCK_MONOTONIC")?;
    writeln!(out, "# columns: event kernel_ns answered_ns")
}

/// Answer every edge of `input` with a toggle of `output`, at once; log
/// each to `log`. Ends when `stop()` says so (checked at least every
/// 100 ms) or `max` edges were answered.
pub fn echo<I: EdgeInput, T: Toggle, W: Write>(
    input: &mut I,
    output: &mut T,
    mut log: Option<&mut W>,
    now: &mut dyn FnMut() -> io::Result<u64>,
    stop: &dyn Fn() -> bool,
    max: Option<u64>,
) -> io::Result<EchoStats> {
    let mut stats = EchoStats::default();
    let mut expect: Option<u64> = None;
    while !stop() && max.is_none_or(|m| stats.answered < m) {
        let (seq, kernel_ns) = match input.next_edge(Duration::from_millis(100)) {
            Ok(Some(e)) => e,
            Ok(None) => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        // Answer first, account after: nothing in between.
        output.toggle()?;
        let answered = now()?;
        stats.answered += 1;
        if let Some(x) = expect {
            stats.dropped += seq.saturating_sub(x);
        }
        expect = Some(seq + 1);
        if let Some(l) = log.as_deref_mut() {
            writeln!(l, "{seq} {kernel_ns} {answered}")?;
        }
    }
    if let Some(l) = log {
        l.flush()?;
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    #[test]
    fn line_specs() {
        assert_eq!(
            parse_line_spec("/dev/gpiochip0:17"),
            Ok(LineSpec { chip: PathBuf::from("/dev/gpiochip0"), line: 17 })
        );
        assert_eq!(parse_line_spec("gpiochip2:5").unwrap().chip, PathBuf::from("/dev/gpiochip2"));
        assert!(parse_line_spec("gpiochip0").unwrap_err().contains("CHIP:LINE"));
        assert!(parse_line_spec("gpiochip0:x").unwrap_err().contains("line offset"));
    }

    /// Edges from a script; time is shared with the output, which records
    /// when it was toggled.
    struct Script {
        edges: Vec<Option<(u64, u64)>>,
        clock: Rc<RefCell<u64>>,
    }

    impl EdgeInput for Script {
        fn next_edge(&mut self, _: Duration) -> io::Result<Option<(u64, u64)>> {
            if self.edges.is_empty() {
                return Ok(None);
            }
            let e = self.edges.remove(0);
            if let Some((_, ts)) = e {
                // The responder wakes 3 µs after the kernel stamped the edge.
                *self.clock.borrow_mut() = ts + 3_000;
            }
            Ok(e)
        }
    }

    struct Out {
        toggles: Vec<u64>,
        clock: Rc<RefCell<u64>>,
    }

    impl Toggle for Out {
        fn toggle(&mut self) -> io::Result<()> {
            let mut c = self.clock.borrow_mut();
            *c += 1_000;
            self.toggles.push(*c);
            Ok(())
        }
    }

    #[test]
    fn every_edge_is_answered_at_once_and_logged_with_its_kernel_timestamp() {
        let clock = Rc::new(RefCell::new(0u64));
        let mut input = Script {
            edges: vec![Some((0, 1_000_000)), None, Some((1, 2_000_000)), Some((4, 3_000_000))],
            clock: clock.clone(),
        };
        let mut out = Out { toggles: Vec::new(), clock: clock.clone() };
        let mut log = Vec::new();
        start_echo_log(&mut log).unwrap();
        let c2 = clock.clone();
        let stats =
            echo(&mut input, &mut out, Some(&mut log), &mut || Ok(*c2.borrow()), &|| false, Some(3)).unwrap();
        assert_eq!(stats, EchoStats { answered: 3, dropped: 2 });
        assert_eq!(out.toggles, [1_004_000, 2_004_000, 3_004_000]);
        let text = String::from_utf8(log).unwrap();
        assert!(text.starts_with(ECHO_LOG_MAGIC));
        let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(rows, ["0 1000000 1004000", "1 2000000 2004000", "4 3000000 3004000"]);
    }

    #[test]
    fn a_missing_chip_is_an_error_naming_it() {
        let spec = LineSpec { chip: PathBuf::from("/nonexistent/gpiochip9"), line: 3 };
        let e = GpioToggle::open(&spec).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/gpiochip9:3"), "{e}");
        let e = GpioEdges::open(&spec, EdgeDetection::BothEdges).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/gpiochip9:3"), "{e}");
    }
}
