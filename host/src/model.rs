//! The plain data every layer of the host may read: what the user asked
//! for (request, mode, limits), what the probe said of itself (its Hello),
//! how a run ended, a calibration, a raw file's context, the verdicts of
//! limits. Only definitions and their serde form live here; the behaviour
//! stays with the layer that owns it (`impl Request` in [`crate::session`],
//! the limit rules in [`crate::gates`], …). It imports no other module of
//! the host, so nothing here can make an import circle.

use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

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
    /// Response timeout; `None`: the default of [`Request::timeout_ns_for`].
    pub timeout_ns: Option<u64>,
    /// Quiet time before the next stimulus on a slot; `None`: a tenth of the interval.
    pub guard_ns: Option<u64>,
    /// Samples to take; the probe stops by itself.
    pub count: Option<u64>,
    /// Run time; the host sends Stop after it.
    pub duration_ns: Option<u64>,
    /// Dither seed.
    pub seed: u64,
    /// Stimulus byte in UART modes: `None` sends identity bytes
    /// ([`Stimulus::Identified`](latprobe_protocol::Stimulus::Identified), several stimuli in flight), `Some(b)` the
    /// fixed byte `b` every time (no identity, one in flight).
    pub byte: Option<u8>,
    /// Stimulus edge in GPIO modes.
    pub edge: EdgeArg,
    /// The line a loopback measures, or the line a periodic target toggles
    /// (`--line`); required in loopback mode, and in periodic mode on a
    /// board that captures both kinds.
    #[serde(default)]
    pub line: Option<LineArg>,
    /// The probe's own offset to subtract (`--calibration`), checked
    /// against the probe before the run.
    #[serde(default)]
    pub calibration: Option<Calibration>,
    /// Raise the probe's trigger output when a stimulus has gone this long
    /// unanswered (`--trigger-above`), and flag its sample; `None`: off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_ns: Option<u64>,
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
    /// Baud rate of the probe's target UART line; 0 without bit timing
    /// (absent in reports of protocol 1 probes).
    #[serde(default)]
    pub target_baud: u32,
    /// CRC-32 of the probe's firmware image; 0 when unknown.
    #[serde(default)]
    pub build_id: u32,
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

/// Which line a loopback measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum LineArg {
    /// The GPIO stimulus edge (Nucleo: PA0 wired to PA1).
    Gpio,
    /// The UART stimulus byte (Nucleo: PA9 wired to PA10, PA1 and PB10).
    Uart,
}

/// A calibration file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Calibration {
    /// [`KIND`](crate::calibration::KIND).
    pub kind: String,
    /// The board it was measured on.
    pub board: String,
    /// Its firmware version.
    pub firmware_version: String,
    /// The line looped back.
    pub line: LineArg,
    /// The target line's baud rate (UART; 0 for GPIO or a line without
    /// bit timing).
    pub baud: u32,
    /// The probe's timer rate.
    pub timer_hz: u32,
    /// Loopback samples it was taken from.
    pub samples: u64,
    /// The offset subtracted from every latency: the median loopback
    /// latency, ns.
    pub offset_ns: u64,
    /// The smallest and largest loopback latency, ns: their difference is
    /// the peak-to-peak jitter.
    pub min_ns: u64,
    /// See `min_ns`.
    pub max_ns: u64,
    /// The 99.9th percentile, ns.
    pub p99_9_ns: u64,
    /// When it was measured, RFC 3339 UTC.
    pub created_at: String,
    /// The latprobe version that measured it.
    pub tool_version: String,
}

/// How the live run ended, as recorded at the end of its raw file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawEnding {
    /// How it ended.
    pub ended_by: EndedBy,
    /// Whether as asked.
    pub complete: bool,
    /// The error that ended it.
    pub error: Option<String>,
    /// The session's remarks (an unconfirmed Stop, say).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// What a raw file says about its run besides the bytes: everything the
/// report needs that the probe does not send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunContext {
    /// Version of the latprobe that recorded it.
    pub tool_version: String,
    /// The port the bytes came from.
    pub source: String,
    /// Wall-clock start of the run, RFC 3339 UTC.
    pub started_at: String,
    /// What the user asked for.
    pub request: Request,
    /// Range of the 1 µs histogram.
    pub histfile_max_us: u32,
    /// Target metadata (`--target-meta`), verbatim.
    pub target: Option<serde_json::Value>,
    /// Notes carried into the report (e.g. that the probe was virtual).
    pub notes: Vec<String>,
    /// Wall clock (CLOCK_REALTIME, ns since 1970) just before the
    /// handshake: the coarse anchor that matches a `--target-log`'s cycles
    /// to the probe's (absent in files of older versions).
    #[serde(default)]
    pub started_unix_ns: Option<u64>,
    /// The limits the run was judged by (`--max` …, `--limits`), so that
    /// its replay judges them again; absent without limits (and in files
    /// of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    /// latprobe's own command line ([`command_line`]);
    /// absent in files of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_line: Option<Vec<String>>,
    /// The loads run on the target during the run (`--load`); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loads: Vec<LoadRecord>,
    /// The load schedule (`--load-schedule`): phases from the run's start;
    /// absent without one (the loads then run throughout).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
}

/// Where a run's target trace snapshots are (`--trace`): read into the
/// report's `trace` section after the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceSource {
    /// The snapshot directory, on this machine.
    pub dir: String,
    /// How long a stimulus had gone unanswered when the trigger fired
    /// (`--trigger-above`), when known: the window's start.
    pub threshold_ns: Option<u64>,
    /// The responder's metadata as it rewrites it at its exit, with the
    /// trace's outcome (triggers, stop latencies); else the report's `target`.
    #[serde(default)]
    pub meta: Option<String>,
    /// Who stopped the trace: `probe` (its trigger line) or `host`
    /// (latprobe, when the flagged sample arrived).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
}

/// The most phases a load schedule may have (each phase's figures have a
/// histogram of their own).
pub const MAX_PHASES: usize = 64;

/// One phase of a load schedule: `idle` (no load) or `load` (the loads run).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phase {
    /// `idle` or `load`.
    pub name: String,
    /// Its start, s from the run's start (the host's clock).
    pub start_s: u64,
    /// Its end, s; `None` for the last, which lasts until the run ends.
    pub end_s: Option<u64>,
}

/// A load run on the target during a run (`--load NAME[:ARG]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadRecord {
    /// `hackbench`, `stress-ng:vm`, …
    pub name: String,
    /// The shell command that ran it, in a loop until the run ended.
    pub command: String,
    /// Where: `this machine` or `ssh://…`.
    pub on: String,
    /// When it actually ran, as latprobe watched it: one span per start
    /// (a schedule starts it at each load phase). Absent in reports of
    /// older versions and in replays of a raw file (not watched then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran: Option<Vec<LoadSpan>>,
    /// The live record of its spans while the run goes on (not written).
    #[serde(skip)]
    pub watch: Option<Watch>,
}

/// One stretch a load ran, ms from the loads' start (the schedule's clock).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadSpan {
    /// Its start.
    pub start_ms: u64,
    /// Its end; `None` while it runs.
    pub end_ms: Option<u64>,
    /// Why it ended on its own, before latprobe stopped it (`exit status
    /// 1; it said: …`); `None` when latprobe stopped it (a phase's or the
    /// run's end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
}

/// How the run ended, as the caller knows it.
#[derive(Debug, Clone)]
pub struct Ending {
    /// How.
    pub ended_by: EndedBy,
    /// Whether as asked.
    pub complete: bool,
    /// The error, if any.
    pub error: Option<String>,
    /// Wall clock.
    pub ended_at: String,
    /// The raw file replayed.
    pub replayed_from: Option<String>,
}

/// A percentile limit: the latency at `percent` (0 < p < 100) must not
/// exceed `limit_ns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PercentileLimit {
    /// The percentile, as written (99.9).
    pub percent: f64,
    /// The limit, ns.
    pub limit_ns: u64,
}

/// Every limit of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// The largest latency, ns.
    pub max_ns: Option<u64>,
    /// Percentile limits, in the order given.
    pub percentiles: Vec<PercentileLimit>,
    /// Timeout samples allowed.
    pub max_timeouts: Option<u64>,
    /// Lost samples allowed.
    pub max_lost: Option<u64>,
    /// Late answers allowed.
    pub max_late: Option<u64>,
    /// Per-hour exceedance probabilities allowed (`max_exceedance_per_hour`
    /// in `--limits`), judged on the tail model's upper 95 % end; absent
    /// in files of older versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exceedance_per_hour: Vec<ExceedanceLimit>,
}

/// A limit on how likely an hour of running is to exceed a latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExceedanceLimit {
    /// The latency, ns.
    pub latency_ns: u64,
    /// The largest allowed probability that an hour exceeds it at least once.
    pub per_hour: f64,
}

/// What a limit bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimitUnit {
    /// A latency, ns.
    Ns,
    /// A count of samples or answers.
    Count,
    /// A probability, in units of 10⁻¹² (a per-hour exceedance limit of
    /// 1e-3 is `1000000000`).
    ProbabilityE12,
}

/// What was measured for a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Measured {
    /// Exactly this (a latency figure is HdrHistogram's, within 0.1 %,
    /// never below the sample's).
    Value {
        /// ns or count.
        value: u64,
    },
    /// Only known to be above this: the figure fell among the timeouts
    /// (or beyond a JSON report's histogram range).
    Above {
        /// The bound, ns.
        bound: u64,
    },
    /// Somewhere in `[low, high]`: a JSON report's 1 µs bins.
    Between {
        /// At least this, ns.
        low: u64,
        /// At most this, ns.
        high: u64,
    },
    /// Nothing to judge: no sample arrived.
    Nothing,
}

/// One limit judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// `max`, `p99.9`, `timeouts`, `lost`, `late`.
    pub name: String,
    /// What the numbers count.
    pub unit: LimitUnit,
    /// The limit: the figure must be at most this.
    pub limit: u64,
    /// What was measured.
    pub measured: Measured,
    /// The figure is proven within the limit.
    pub pass: bool,
    /// `limit − measured` when the measured figure is one value: the
    /// headroom (negative: by how much it was exceeded).
    pub margin: Option<i128>,
    /// Why a limit that did not pass failed, in plain words.
    pub why: Option<String>,
}

/// latprobe's own command line, for the report (`command_line`): the
/// arguments as given (not UTF-8 ones lossily), the program named
/// `latprobe` whatever path started it. `run`, `demo` and `calibrate` put
/// it in their [`RunContext`].
pub fn command_line() -> Option<Vec<String>> {
    let mut args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    let first = args.first_mut()?;
    *first = "latprobe".into();
    Some(args)
}

/// The live record of one load's spans, shared by its watchers and the
/// report (`LoadRecord::watch`).
#[derive(Clone, Default)]
pub struct Watch(Arc<Mutex<Vec<LoadSpan>>>);

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Watch").field(&self.spans()).finish()
    }
}

/// A handle, not data: any two compare equal (a record's data is the rest).
impl PartialEq for Watch {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for Watch {}

impl Watch {
    /// Its spans so far.
    pub fn spans(&self) -> Vec<LoadSpan> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn begin(&self, ms: u64) -> usize {
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        v.push(LoadSpan { start_ms: ms, end_ms: None, ended: None });
        v.len() - 1
    }

    pub(crate) fn end(&self, at: usize, ms: u64, ended: Option<String>) {
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = v.get_mut(at) {
            if s.end_ms.is_none() {
                s.end_ms = Some(ms);
                s.ended = ended;
            }
        }
    }
}
