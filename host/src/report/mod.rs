//! Reports: the [`Report`] every output is rendered from, and one module per
//! format (like hyperfine's `export/`): [`text`] (the terminal summary),
//! [`json`] (`--output`), [`histfile`] (`--histfile`, cyclictest's layout),
//! [`junit`] (JUnit XML of the limits and the run), [`lava`]
//! (`lava-test-case` lines of the limits, the headline figures and the run),
//! [`plot`] (SVG and PNG plots: histogram, latency over time, CCDF) and
//! [`html`] (one self-contained page of all of it).
//!
//! A report is built from a [`RunState`] (live, or a replayed raw file) or
//! read back from JSON, so `latprobe report` renders every output again.
//!
//! # JSON schema, `schema_version` 2
//!
//! All times are integer nanoseconds of the probe's clock unless the name
//! says otherwise; absent values are `null`.
//!
//! A timeout is a sample too: a latency known only to exceed the timeout
//! (*censored*). Every figure counts it (README, "The tail is measured,
//! never cut off"); a figure that falls among the timeouts is `null` in `latency_ns`,
//! with the bound in `latency_ns.censored_above`.
//!
//! | field | meaning |
//! |---|---|
//! | `schema_version` | 2; bumped when a field changes meaning or goes away (version 1 files are read and converted, see [`json::read`]) |
//! | `tool_version` | latprobe version that made the report |
//! | `complete` | the run ended as asked (`--count` reached or `--duration` elapsed) and the probe confirmed Stop |
//! | `ended_by` | `count-reached`, `duration-elapsed`, `interrupted` (signal), `failed`, `stream-ended` (replay of a cut file) |
//! | `error` | the error that ended the run, or null |
//! | `source` | the port the bytes came from |
//! | `replayed_from` | the raw file a replay read, else null |
//! | `probe` | the probe's Hello: `protocol_version`, `firmware_version`, `board`, `timer_hz`, `timer_bits`, `capabilities` (bits), `capability_names`, `max_batch` |
//! | `config` | `mode`, `interval_ns`, `dither_ns`, `timeout_ns` (the horizon: answers up to it are timed), `guard_ns`, `count`, `duration_ns`, `seed`, `stimulus` (`identified (9-byte alphabet)`, `byte 0x55`, `edge rising`, `none`), `identity` (answers matched by identity byte, several stimuli in flight; false for a fixed `--byte`, edges, periodic), and `ticks` {`interval`, `dither`, `timeout`, `guard`} as the probe accepted them (ns fields are then converted back from those ticks) |
//! | `started_at`, `ended_at` | wall clock, RFC 3339 UTC |
//! | `command_line` | latprobe's own command line, one string per argument, the program as `latprobe` (`["latprobe", "demo", "--duration", "4s"]`); absent in reports of older versions and in replays of their raw files |
//! | `probe_elapsed_ns` | start to stop on the probe's clock |
//! | `counts` | `samples` (= `responses` + `timeouts`), `responses` (measured), `timeouts` (censored: latency above the timeout), `lost` (sequence numbers never received, whatever the cause), `duplicates` (sample sequence numbers received twice), `out_of_order`, `dropped_by_probe` (of the lost, dropped by the probe's full queue), `overruns`; the probe's anomalies: `late_responses` (answers after their stimulus's timeout, with none outstanding, or faster than the line allows: counted, not timed), `duplicate_answers` (a second answer with the identity of an already answered stimulus), `unmatched` (identity bytes matching no stimulus in flight), `wrong_bytes` (bytes outside the identity alphabet), `slipped` (stimuli sent late because their slot was busy), `slip_max_ns`, `slip_total_ns`, `reclaimed` (identities taken back from timed-out stimuli without proof their answer was not coming), `overcaptures`, `line_errors`, `soft_stimuli` (stimuli timed by the probe's software, not its timer hardware); `bad_frames` (damaged, malformed or other-version frames and undecodable batches), `probe_taken` (the probe's own total, from Stopped), `host_resends` (Stop or Configure sent again after the probe said nothing about the first; absent when 0), `refused` (messages or samples whose contents disagree with the request or the protocol, each said in the notes; absent when 0) |
//! | `latency_ns` | over every sample, timeouts ranked above every response: `measured` (responses), `censored` (timeouts), `censored_above` (the timeout, ns); `min`, `p50`, `p90`, `p99`, `p99_9`, `p99_99` (rank `max(1, ⌈q·samples⌉)`; a measured rank is the HdrHistogram value, 3 significant digits, never below the sample's), `max` (exact): each `null` when it falls among the timeouts (it is then above `censored_above`); `mean` (exact, over the measured only; `null` without responses), `max_measured` (largest measured latency, `null` without responses). The whole field is `null` without samples |
//! | `worst` | the worst *measured* sample: `seq`, `latency_ns`, `at_ns_from_start` (a timeout is worse but has no latency) |
//! | `histogram` | `bin_ns` (1000), `max_us` (bins cover 0..max_us µs), `bins` (sparse `[start_us, count]` pairs of measured latencies, non-empty bins only), `overflows` (latencies ≥ max_us and timeouts: bins + overflows = samples), `overflow_seqs` (sequence numbers of the first 1024 overflows; the rest are only counted) |
//! | `target` | target metadata (`--target-meta FILE`, or the responder's in `demo`), verbatim JSON |
//! | `periodic` | periodic mode only (absent or `null` otherwise). The cycles are the report's samples: `latency_ns`, `histogram` (and the histfile) and `worst` hold each cycle's **wake-up delay against the fitted schedule** (sequence number = cycle, 0 = the first edge's cycle), and `config.timeout_ns` is the horizon (`--timeout`, default 8 intervals): an edge later than that after its cycle's fitted time, and a cycle without an edge, are timeout samples. Fields: `edges`, `lost` (edges lost on the link: their cycles are neither measured nor missed), `duplicates`, `intervals` {`count`, `min_ns`, `max_ns`, `mean_ns`} of raw edge-to-edge intervals; `fit` {`estimator`, `block_edges`, `nominal_period_ns`, `period_ns` (mean fitted period on the probe's clock, a float), `offset_ppm` (how much faster the target's clock runs than the probe's, `nominal / fitted − 1`, float), `drift` {`blocks`, `first_ppm`, `last_ppm`, `min_ppm`, `max_ppm`, `ppm_per_hour` (least-squares slope)}, `zero` (what a delay of 0 means: the earliest edge the fit allows)}; `cycles` (first to last edge's cycle), `missed_periods`, `late_edges`, `fit_conflicts` (edges the fit could not place: 0 in a sound run), `out_of_order`, `clock_jumps` (edges whose tick, or sequence number in periods, is more than a day after the edge before: damaged stamps, left out like lost edges; absent when 0) and `first_clock_jump` {`seq`, `gap_s`}; `naive` {`count`, `p50`, `p90`, `p99`, `p99_9`, `p99_99`, `max`}: the same edges against the nominal schedule (first edge + k × interval), re-zeroed at their earliest, for comparison only; `target_log` (with `--target-log`): `file`, `offset` (target cycle = probe cycle + offset), `alignment`, `correlation`, `log_cycles`, `aligned`, `probe_only`, `missed_but_logged`, `log_outside`, `internal_all`, `internal`, `external`, `difference` (each {`count`, `min`, `mean`, `p50`, `p90`, `p99`, `p99_9`, `p99_99`, `max`}, ns, signed; `difference` = external − internal per cycle), `difference_histogram` (sparse 1 µs `[start_us, count]`), `disagreements` (up to 10 {`cycle`, `target_cycle`, `external_ns`, `internal_ns`, `difference_ns`}, farthest from the median difference first); and a `note`. Reports of latprobe 0.1 have only `edges`, `lost`, `duplicates`, `intervals` and `note`, and read as such |
//! | `timeline` | latency over time, one row per `row_s` seconds of the probe's clock from the start (1 s; for runs longer than 3 600 s a power of two, so that there are at most 3 600 rows): columns `samples`, `timeouts`, `max_ns` (largest measured latency, `null` when none in the row), `p99_ns` (the worst per-second p99 within the row, timeouts ranked above every response; `null` when it fell among the timeouts, i.e. above `latency_ns.censored_above`, or the row is empty). A sample belongs to its stimulus's second, a periodic cycle to its edge's; a missed periodic cycle to the second of the edge before it. `null` without samples; absent in older reports |
//! | `verdicts` | the limits the report was judged against (`--max`, `--percentile`, `--max-timeouts`, `--max-lost`, `--max-late`, `--limits`): each {`name` (`max`, `p99.9`, `timeouts`, `lost`, `late`), `unit` (`ns` or `count`), `limit`, `measured` {`kind`: `value` with `value`, `above` with `bound`, `between` with `low` and `high`, or `nothing`}, `pass`, `margin` (limit − measured, or null), `why` (the failure in words, or null)}; absent when no limit was given |
//! | `notes` | plain-language remarks (e.g. that a virtual probe's clock is this machine's, or what the anomalies mean) |

pub mod histfile;
pub mod html;
pub mod json;
pub mod junit;
pub mod lava;
pub mod plot;
#[cfg(test)]
pub(crate) mod testkit;
pub mod text;

use serde::{Deserialize, Serialize};

use crate::analysis::Quantile;
use crate::model::Ending;
use crate::model::RunContext;
use crate::model::{EndedBy, ModeArg, ProbeHello};
use crate::session::RunState;
use crate::units::format_ns;
use latprobe_protocol::{ticks_to_ns, Anomalies, Stimulus};

/// The schema version written into every JSON report.
pub const SCHEMA_VERSION: u32 = 2;

/// A finished run's report; the source of every output format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// latprobe version.
    pub tool_version: String,
    /// Whether the run ended as asked.
    pub complete: bool,
    /// How it ended.
    pub ended_by: EndedBy,
    /// The error that ended it.
    pub error: Option<String>,
    /// The port.
    pub source: String,
    /// The raw file of a replay.
    pub replayed_from: Option<String>,
    /// The probe's Hello.
    pub probe: Option<ProbeReport>,
    /// The configuration.
    pub config: ConfigReport,
    /// Wall-clock start.
    pub started_at: String,
    /// Wall-clock end.
    pub ended_at: String,
    /// latprobe's own command line (see [`command_line`](crate::model::command_line)); absent in
    /// reports of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_line: Option<Vec<String>>,
    /// Probe-measured run time.
    pub probe_elapsed_ns: Option<u64>,
    /// Counters.
    pub counts: Counts,
    /// Latency statistics over every sample, timeouts censored.
    pub latency_ns: Option<Latency>,
    /// The worst measured sample.
    pub worst: Option<WorstReport>,
    /// The 1 µs histogram.
    pub histogram: HistReport,
    /// Target metadata.
    pub target: Option<serde_json::Value>,
    /// Periodic-mode figures.
    pub periodic: Option<PeriodicReport>,
    /// Latency over time (see [`crate::timeline`]); `null` without
    /// samples, absent in reports of latprobe before 0.3.
    #[serde(default)]
    pub timeline: Option<crate::timeline::TimelineReport>,
    /// The limits this report was judged against (`--max`,
    /// `--percentile`, …, see [`crate::gates`]); absent when none was given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<crate::model::Verdict>,
    /// Remarks.
    pub notes: Vec<String>,
}

/// The probe's Hello in a report: its fields, and the capability names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// The Hello as received.
    #[serde(flatten)]
    pub hello: ProbeHello,
    /// Capability names, for readers of the JSON.
    pub capability_names: Vec<String>,
}

/// Configuration in a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigReport {
    /// Mode.
    pub mode: ModeArg,
    /// Interval.
    pub interval_ns: u64,
    /// Dither.
    pub dither_ns: u64,
    /// Timeout: answers up to it are timed, later ones are timeout samples.
    pub timeout_ns: u64,
    /// Guard.
    pub guard_ns: u64,
    /// Requested count.
    pub count: Option<u64>,
    /// Requested duration.
    pub duration_ns: Option<u64>,
    /// Dither seed.
    pub seed: u64,
    /// The stimulus, e.g. `identified (9-byte alphabet)`, `byte 0x55`,
    /// `edge rising`, `none`.
    pub stimulus: String,
    /// Whether answers are matched by their identity byte (several stimuli
    /// in flight, late answers timed up to the timeout).
    pub identity: bool,
    /// The probe's accepted values in ticks.
    pub ticks: Option<TicksReport>,
    /// The loopback calibration subtracted from every latency
    /// (`--calibration`), as its file says.
    #[serde(default)]
    pub calibration: Option<crate::model::Calibration>,
}

/// Accepted configuration in ticks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TicksReport {
    /// Interval.
    pub interval: u32,
    /// Dither.
    pub dither: u32,
    /// Timeout.
    pub timeout: u32,
    /// Guard.
    pub guard: u32,
}

/// Counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Responses plus timeouts.
    pub samples: u64,
    /// Samples with a response: measured.
    pub responses: u64,
    /// Samples without one: latencies above the timeout.
    pub timeouts: u64,
    /// Sequence numbers never received.
    pub lost: u64,
    /// Sample sequence numbers received twice.
    pub duplicates: u64,
    /// Received late.
    pub out_of_order: u64,
    /// Dropped by the probe's full queue.
    pub dropped_by_probe: u64,
    /// Times the probe's queue was found full.
    pub overruns: u64,
    /// Answers after their stimulus's timeout, with none outstanding, or
    /// faster than the line allows: counted, not timed.
    pub late_responses: u64,
    /// Answers with the identity of a stimulus already answered.
    pub duplicate_answers: u64,
    /// Identity bytes matching no stimulus in flight.
    pub unmatched: u64,
    /// Bytes outside the identity alphabet while identity is on.
    pub wrong_bytes: u64,
    /// Stimuli sent later than their schedule because their slot was busy.
    pub slipped: u64,
    /// The longest of those delays.
    pub slip_max_ns: u64,
    /// Their sum.
    pub slip_total_ns: u64,
    /// Identities taken back from timed-out stimuli without proof that
    /// their answer was not coming.
    pub reclaimed: u64,
    /// Captures the probe's hardware overwrote before they were read.
    pub overcaptures: u64,
    /// Receive errors on the target line.
    pub line_errors: u64,
    /// Stimuli the probe timed in software (good to the write's duration,
    /// not to a tick of its hardware timer).
    #[serde(default)]
    pub soft_stimuli: u64,
    /// Receive errors on the probe's host link (its UART flagged an
    /// overrun, framing or noise error, or its receive buffer was emptied
    /// too late): host bytes were lost on the way in. Written only when
    /// not 0 (reports before protocol 3 have none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub host_rx_errors: u64,
    /// Frames that could not be used.
    pub bad_frames: u64,
    /// The probe's own total.
    pub probe_taken: Option<u64>,
    /// Stop or Configure sent a second time because the probe said nothing
    /// after the first (lost on the link); absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub host_resends: u64,
    /// Messages or samples whose contents disagree with the request or the
    /// protocol (a response beyond the probe's own timeout, a Configured
    /// other than the one sent, a total that is not what arrived, a Stop
    /// latprobe never sent): refused or noted, each said in the notes;
    /// absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refused: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Counts {
    /// Whether the probe counted any anomaly.
    pub fn any_anomaly(&self) -> bool {
        self.late_responses
            + self.duplicate_answers
            + self.unmatched
            + self.wrong_bytes
            + self.slipped
            + self.reclaimed
            + self.overcaptures
            + self.line_errors
            + self.soft_stimuli
            + self.host_rx_errors
            > 0
    }
}

/// Latency statistics over every sample: a figure that falls among the
/// timeouts is `None`, known only to be above `censored_above`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Latency {
    /// Samples with a measured latency (responses).
    pub measured: u64,
    /// Timeout samples: latencies above `censored_above`.
    pub censored: u64,
    /// The timeout.
    pub censored_above: u64,
    /// Exact minimum; `None` when every sample timed out.
    pub min: Option<u64>,
    /// Exact mean of the measured latencies, rounded down; `None` without
    /// responses.
    pub mean: Option<u64>,
    /// Median.
    pub p50: Option<u64>,
    /// 90th percentile.
    pub p90: Option<u64>,
    /// 99th.
    pub p99: Option<u64>,
    /// 99.9th.
    pub p99_9: Option<u64>,
    /// 99.99th.
    pub p99_99: Option<u64>,
    /// Exact maximum; `None` when any sample timed out.
    pub max: Option<u64>,
    /// The largest measured latency; `None` without responses.
    pub max_measured: Option<u64>,
}

impl Latency {
    /// A figure of this table as a [`Quantile`]: `None` is above the bound.
    pub fn figure(&self, v: Option<u64>) -> Quantile {
        match v {
            Some(v) => Quantile::Value(v),
            None if self.measured + self.censored > 0 => Quantile::Above(self.censored_above),
            None => Quantile::None,
        }
    }
}

/// The worst measured sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorstReport {
    /// Sequence number.
    pub seq: u64,
    /// Latency.
    pub latency_ns: u64,
    /// When, from the start.
    pub at_ns_from_start: u64,
}

/// The 1 µs histogram.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistReport {
    /// Bin width, 1000 ns.
    pub bin_ns: u64,
    /// Range in µs.
    pub max_us: u32,
    /// Sparse `[start_us, count]` of measured latencies.
    pub bins: Vec<[u64; 2]>,
    /// Latencies beyond the range, and timeouts.
    pub overflows: u64,
    /// Sequence numbers of the first overflows.
    pub overflow_seqs: Vec<u64>,
}

/// Periodic-mode figures: the fitted schedule, the cycle accounting, the
/// naive figures beside them, and the target's own view when given. The
/// wake-up delays themselves are the report's `latency_ns`, `histogram` and
/// `worst` (a sample per cycle). Every field but the first four is absent
/// in reports of latprobe 0.1, which had no fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeriodicReport {
    /// Edges received.
    pub edges: u64,
    /// Edges never received.
    pub lost: u64,
    /// Edges received twice.
    pub duplicates: u64,
    /// Raw intervals.
    pub intervals: Option<IntervalReport>,
    /// The fitted schedule.
    #[serde(default)]
    pub fit: Option<FitReport>,
    /// Cycles from the first edge's to the last one's.
    #[serde(default)]
    pub cycles: u64,
    /// Cycles without an edge: timeout samples, never merged into the next
    /// cycle's delay.
    #[serde(default)]
    pub missed_periods: u64,
    /// Edges later than the timeout after their cycle's fitted time:
    /// timeout samples.
    #[serde(default)]
    pub late_edges: u64,
    /// Edges whose cycle the fit had to move after their predecessor's (it
    /// lost track of the schedule; 0 in a sound run).
    #[serde(default)]
    pub fit_conflicts: u64,
    /// Edges out of sequence order, not used.
    #[serde(default)]
    pub out_of_order: u64,
    /// Edges more than a day of the probe's clock (or of periods in
    /// sequence numbers) after the edge before
    /// ([`crate::periodic::MAX_GAP_S`]): damaged stamps, not used; absent
    /// when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub clock_jumps: u64,
    /// The first of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_clock_jump: Option<ClockJump>,
    /// The same edges against the nominal schedule.
    #[serde(default)]
    pub naive: Option<NaiveReport>,
    /// The target's own view (`--target-log`).
    #[serde(default)]
    pub target_log: Option<crate::targetlog::TargetLogReport>,
    /// What these figures are.
    #[serde(default)]
    pub note: String,
}

/// The fitted schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitReport {
    /// How it was fitted.
    pub estimator: String,
    /// Edges per fitted block.
    pub block_edges: u64,
    /// The configured period.
    pub nominal_period_ns: u64,
    /// The mean fitted period on the probe's clock, ns (fractional).
    pub period_ns: f64,
    /// How much faster the target's clock runs than the probe's:
    /// `nominal / fitted − 1`, ppm.
    pub offset_ppm: f64,
    /// How the offset changed over the run.
    pub drift: DriftReport,
    /// What a delay of 0 means.
    pub zero: String,
}

/// The offset's drift, from the per-block fits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftReport {
    /// Blocks fitted.
    pub blocks: u64,
    /// First block's offset, ppm.
    pub first_ppm: f64,
    /// Last block's.
    pub last_ppm: f64,
    /// Lowest.
    pub min_ppm: f64,
    /// Highest.
    pub max_ppm: f64,
    /// Least-squares slope, ppm per hour (`null` under two blocks).
    pub ppm_per_hour: Option<f64>,
}

/// Delays against the nominal schedule (first edge + k × interval),
/// re-zeroed at their earliest: what a histogram that trusts the target's
/// clock would show. ns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NaiveReport {
    /// Edges.
    pub count: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th.
    pub p99: u64,
    /// 99.9th.
    pub p99_9: u64,
    /// 99.99th.
    pub p99_99: u64,
    /// Largest.
    pub max: u64,
}

/// Raw edge-to-edge intervals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntervalReport {
    /// How many.
    pub count: u64,
    /// Shortest.
    pub min_ns: u64,
    /// Longest.
    pub max_ns: u64,
    /// Mean.
    pub mean_ns: u64,
}

const PERIODIC_NOTE: &str = "wake-up delays are against the target's own schedule, fitted from its edges \
    on the probe's clock (a lower envelope per block of edges, following drift), so they are free of the \
    target's clock offset; 0 is the earliest edge the fit allows";
const ESTIMATOR: &str = "lower envelope (LP clock-skew fit) per block of edges; each edge given the latest \
    cycle its order allows";
const ZERO: &str = "the earliest edge the fit allows: the target's fastest wake-up plus its write, which \
    the probe cannot see, is in the zero";

/// The stimulus as a report names it.
pub fn stimulus_name(s: Stimulus) -> String {
    match s {
        Stimulus::Identified => "identified (9-byte alphabet)".into(),
        Stimulus::Byte(b) => format!("byte 0x{b:02x}"),
        Stimulus::Edge(e) => format!("edge {}", format!("{e:?}").to_lowercase()),
        Stimulus::None(_) => "none".into(),
    }
}

/// The latency table of `a`: every figure over all samples, censored
/// where it falls among the timeouts; `None` without samples.
pub fn latency_of(a: &crate::analysis::Analysis) -> Option<Latency> {
    (a.samples() > 0).then(|| Latency {
        measured: a.responses,
        censored: a.timeouts,
        censored_above: a.timeout_ns(),
        min: a.min().value(),
        mean: a.mean_ns(),
        p50: a.quantile(0.5).value(),
        p90: a.quantile(0.9).value(),
        p99: a.quantile(0.99).value(),
        p99_9: a.quantile(0.999).value(),
        p99_99: a.quantile(0.9999).value(),
        max: a.max().value(),
        max_measured: a.max_measured_ns(),
    })
}

/// An edge whose tick jumped beyond any outage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockJump {
    /// Its sequence number.
    pub seq: u64,
    /// Its gap after the edge before, in seconds of the probe's clock.
    pub gap_s: f64,
}

/// What the periodic accounting means for the figures.
fn periodic_notes(p: &PeriodicReport, config: &ConfigReport, notes: &mut Vec<String>) {
    let timeout = format_ns(config.timeout_ns);
    if p.missed_periods > 0 {
        notes.push(format!(
            "{} periods had no edge (missed): each is a timeout sample (a delay above {timeout}), never \
             merged into the next cycle's delay",
            p.missed_periods
        ));
    }
    if p.late_edges > 0 {
        notes.push(format!(
            "{} edges came more than the timeout ({timeout}) after their cycle's fitted time: timeout \
             samples, their delay not timed",
            p.late_edges
        ));
    }
    if p.clock_jumps > 0 {
        let first = p.first_clock_jump.as_ref().map_or_else(String::new, |j| {
            format!(" (the first: edge {}, {:.3e} s after the edge before)", j.seq, j.gap_s)
        });
        notes.push(format!(
            "anomaly: {} edges had a tick or sequence number more than a day ({} s of the probe's \
             clock, or as many periods) after the edge before{first}: damaged stamps, no outage a run \
             can have; they are left out like edges lost on the link, not counted as missed periods",
            p.clock_jumps,
            crate::periodic::MAX_GAP_S
        ));
    }
    if p.fit_conflicts > 0 {
        notes.push(format!(
            "{} edges could not be placed where the fit put them (the schedule jumped, or the target \
             skipped deadlines): the delays around them are uncertain",
            p.fit_conflicts
        ));
    }
    if let Some(f) = &p.fit {
        if f.offset_ppm.abs() > 10_000.0 {
            notes.push(format!(
                "the target's period ({:.0} ns) is {:.1} % off the configured --interval ({}): is \
                 --interval the target's period?",
                f.period_ns,
                -f.offset_ppm / 1e4,
                format_ns(f.nominal_period_ns)
            ));
        }
    }
}

/// The periodic section of `a`.
fn periodic_of(a: Option<&crate::analysis::Analysis>) -> PeriodicReport {
    let e = a.map(|a| &a.edges);
    let fit = a.and_then(|a| a.fit.as_ref());
    let hz = a.map_or(1, |a| a.conv().hz());
    let ns_per_tick = 1e9 / f64::from(hz.max(1));
    let fit_report = fit.and_then(|f| {
        let p = f.period_ticks()?;
        let d = &f.drift;
        Some(FitReport {
            estimator: ESTIMATOR.into(),
            block_edges: crate::periodic::BLOCK_EDGES as u64,
            nominal_period_ns: (f.nominal_ticks() * ns_per_tick).round() as u64,
            period_ns: p * ns_per_tick,
            offset_ppm: f.offset_ppm().unwrap_or(0.0),
            drift: DriftReport {
                blocks: d.blocks,
                first_ppm: d.first_ppm,
                last_ppm: d.last_ppm,
                min_ppm: d.min_ppm,
                max_ppm: d.max_ppm,
                ppm_per_hour: d.ppm_per_hour(),
            },
            zero: ZERO.into(),
        })
    });
    let naive = fit.filter(|f| !f.naive.is_empty()).map(|f| {
        let h = &f.naive;
        let q = |q: f64| h.quantile(q).map_or(0, |v| (v - h.min) as u64);
        NaiveReport {
            count: h.len(),
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
            max: (h.max - h.min) as u64,
        }
    });
    PeriodicReport {
        edges: e.map_or(0, |e| e.edges),
        lost: e.map_or(0, |e| e.seq.lost),
        duplicates: e.map_or(0, |e| e.seq.duplicates),
        intervals: e.filter(|e| e.intervals > 0).map(|e| IntervalReport {
            count: e.intervals,
            min_ns: e.min_ns,
            max_ns: e.max_ns,
            mean_ns: (e.sum_ns / u128::from(e.intervals)) as u64,
        }),
        fit: fit_report,
        cycles: a.map_or(0, |a| a.samples()) + fit.map_or(0, |f| f.lost),
        missed_periods: fit.map_or(0, |f| f.missed),
        late_edges: a.map_or(0, |a| a.late_edges),
        fit_conflicts: fit.map_or(0, |f| f.conflicts),
        out_of_order: fit.map_or(0, |f| f.out_of_order),
        clock_jumps: fit.map_or(0, |f| f.clock_jumps),
        first_clock_jump: fit
            .and_then(|f| f.first_jump)
            .map(|(seq, gap)| ClockJump { seq, gap_s: gap as f64 * ns_per_tick / 1e9 }),
        naive,
        target_log: None,
        note: PERIODIC_NOTE.into(),
    }
}

/// The notes the counts call for: what the anomalies mean for the figures.
fn anomaly_notes(c: &Counts, config: &ConfigReport, echo: bool, notes: &mut Vec<String>) {
    let timeout = format_ns(config.timeout_ns);
    if echo && !config.identity && config.stimulus.starts_with("byte") {
        notes.push(format!(
            "identity is off ({}, fixed): one stimulus in flight at a time, and an answer later than the \
             timeout ({timeout}) cannot be told from the next one's: it is counted late, never timed; \
             leave --byte out to time late answers up to 9 intervals",
            config.stimulus
        ));
    }
    if c.late_responses > 0 {
        notes.push(format!(
            "{} late answers (after their stimulus's timeout of {timeout}, with none outstanding, or faster \
             than the line allows) were counted, not timed: a stimulus whose answer came after its timeout \
             is a timeout sample, a latency above {timeout}",
            c.late_responses
        ));
    }
    if c.slipped > 0 {
        let why = if config.identity {
            "waited for a free identity: the target had not yet answered any later stimulus (answers \
             queued about as far behind as the horizon)"
        } else {
            "waited for the previous sample and its guard to end (the probe fell behind its schedule)"
        };
        notes.push(format!(
            "{} stimuli {why}, longest {}, {} in all",
            c.slipped,
            format_ns(c.slip_max_ns),
            format_ns(c.slip_total_ns)
        ));
    }
    if c.reclaimed > 0 {
        notes.push(format!(
            "{} identities were taken back from timed-out stimuli with no proof that their answer was not \
             still coming: an answer later than that could be credited to a newer stimulus with the same \
             identity",
            c.reclaimed
        ));
    }
    if c.duplicate_answers > 0 {
        notes.push(format!(
            "{} answers repeated the identity of a stimulus already answered: counted, not timed (does the \
             target echo twice?)",
            c.duplicate_answers
        ));
    }
    if c.unmatched > 0 {
        notes.push(format!(
            "{} answers matched no stimulus in flight: counted, not timed (an answer after its identity was \
             reused, or one the target made up)",
            c.unmatched
        ));
    }
    if c.wrong_bytes > 0 {
        notes.push(format!(
            "{} answer bytes were outside the identity alphabet: counted, not timed (does the target echo \
             exactly what it receives? Noise on the line?)",
            c.wrong_bytes
        ));
    }
    if c.overcaptures > 0 {
        notes.push(format!(
            "{} captures were overwritten in the probe's hardware before they were read: edges came faster \
             than the probe could take them",
            c.overcaptures
        ));
    }
    if c.host_rx_errors > 0 {
        notes.push(format!(
            "{} receive errors on the probe's host link: bytes from this host were lost on the way in (a \
             Stop or Configure may have needed sending again); check the USB cable and --baud",
            c.host_rx_errors
        ));
    }
    if c.line_errors > 0 {
        notes.push(format!(
            "{} receive errors (framing, noise, overrun) on the target line: check wiring, levels and baud",
            c.line_errors
        ));
    }
    if c.soft_stimuli > 0 {
        notes.push(format!(
            "{} stimuli were timed by the probe's software (the counter read right before the write), not \
             by its timer hardware: their latencies are good to the write's duration, not to a tick (on \
             the Nucleo, wire PB10 to PA9 for hardware stimulus capture)",
            c.soft_stimuli
        ));
    }
}

/// A note when the probe took clearly fewer stimuli than its schedule asks
/// for in the time it ran (an `--interval` shorter than the probe or the
/// target can serve): the run is complete as asked, but not at that rate.
pub fn schedule_note(
    c: &Counts,
    config: &ConfigReport,
    elapsed_ns: Option<u64>,
    echo: bool,
) -> Option<String> {
    let elapsed = elapsed_ns?;
    let taken = c.probe_taken?;
    if !echo || config.interval_ns == 0 {
        return None;
    }
    // Dither delays each stimulus by half of it on average.
    let period = u128::from(config.interval_ns) + u128::from(config.dither_ns / 2);
    let expected = u64::try_from(u128::from(elapsed) / period).unwrap_or(u64::MAX);
    // Short of 10 % and of at least 10 stimuli: a run's ends and rounding
    // never make that much.
    if expected.saturating_sub(taken) < 10 || u128::from(taken) * 10 >= u128::from(expected) * 9 {
        return None;
    }
    Some(format!(
        "the probe could not keep the requested schedule: it took {taken} stimuli in {} where one every {} \
         makes {expected}; the figures are those of the stimuli it did send (raise --interval, or lower \
         --timeout and --guard)",
        format_ns(elapsed),
        format_ns(config.interval_ns)
    ))
}

/// Build the report of `state`, run in `ctx`.
pub fn build(ctx: &RunContext, state: &RunState, bad_frames: u64, end: Ending) -> Report {
    let req = &ctx.request;
    let hz = state.probe.as_ref().map(|p| p.timer_hz);
    let config = match (state.configured, hz) {
        (Some(c), Some(hz)) => ConfigReport {
            mode: req.mode,
            interval_ns: ticks_to_ns(c.interval_ticks.into(), hz),
            dither_ns: ticks_to_ns(c.dither_ticks.into(), hz),
            timeout_ns: ticks_to_ns(c.timeout_ticks.into(), hz),
            guard_ns: ticks_to_ns(c.guard_ticks.into(), hz),
            count: c.count,
            duration_ns: req.duration_ns,
            seed: c.seed,
            stimulus: stimulus_name(c.stimulus),
            identity: c.stimulus.has_identity(),
            ticks: Some(TicksReport {
                interval: c.interval_ticks,
                dither: c.dither_ticks,
                timeout: c.timeout_ticks,
                guard: c.guard_ticks,
            }),
            calibration: req.calibration.clone(),
        },
        _ => ConfigReport {
            mode: req.mode,
            interval_ns: req.interval_ns,
            dither_ns: req.dither_ns,
            timeout_ns: req.timeout_ns(),
            guard_ns: req.guard_ns(),
            count: req.count,
            duration_ns: req.duration_ns,
            seed: req.seed,
            stimulus: stimulus_name(req.assumed_stimulus()),
            identity: req.assumed_stimulus().has_identity(),
            ticks: None,
            calibration: req.calibration.clone(),
        },
    };
    let a = state.analysis.as_ref();
    let (dropped, overruns, an) = match (state.stopped, state.heartbeat) {
        (Some(s), _) => (s.dropped, u64::from(s.overruns), s.anomalies),
        (None, Some(h)) => (h.dropped, u64::from(h.overruns), h.anomalies),
        (None, None) => (0, 0, Anomalies::default()),
    };
    let ns = |ticks: u64| hz.map_or(0, |hz| ticks_to_ns(ticks, hz));
    let counts = Counts {
        samples: a.map_or(0, |a| a.samples()),
        responses: a.map_or(0, |a| a.responses),
        timeouts: a.map_or(0, |a| a.timeouts),
        lost: a.map_or(0, |a| if a.fit.is_some() { a.edges.seq.lost } else { a.seq.lost }),
        duplicates: a.map_or(0, |a| a.seq.duplicates),
        out_of_order: a.map_or(0, |a| a.seq.out_of_order),
        dropped_by_probe: dropped,
        overruns,
        late_responses: an.late,
        duplicate_answers: an.duplicates,
        unmatched: an.unmatched,
        wrong_bytes: an.wrong_bytes,
        slipped: an.slipped,
        slip_max_ns: ns(an.slip_max_ticks),
        slip_total_ns: ns(an.slip_total_ticks),
        reclaimed: an.reclaimed,
        overcaptures: u64::from(an.overcaptures),
        line_errors: u64::from(an.line_errors),
        soft_stimuli: an.soft_stimuli,
        host_rx_errors: u64::from(an.host_rx_errors),
        bad_frames: bad_frames + a.map_or(0, |a| a.bad_batches),
        probe_taken: state.stopped.map(|s| s.taken),
        host_resends: state.resent,
        refused: state.refused + a.map_or(0, |a| a.beyond_timeout),
    };
    let histogram = HistReport {
        bin_ns: 1000,
        max_us: ctx.histfile_max_us,
        bins: a.map_or_else(Vec::new, |a| {
            a.bins.iter().enumerate().filter(|(_, &c)| c > 0).map(|(i, &c)| [i as u64, c]).collect()
        }),
        overflows: a.map_or(0, |a| a.overflows),
        overflow_seqs: a.map_or_else(Vec::new, |a| a.overflow_seqs.clone()),
    };
    let periodic = (req.mode == ModeArg::Periodic).then(|| periodic_of(a));
    let mut notes = ctx.notes.clone();
    if let Some(cal) = &req.calibration {
        notes.push(cal.describe());
        let below = a.map_or(0, |a| a.below_calibration);
        if below > 0 {
            notes.push(format!(
                "{below} measured latencies were faster than the probe's own loopback ever was in its \
                 calibration (they count as 0): the calibration does not fit this bench (another \
                 wire or setup); calibrate again"
            ));
        }
    }
    // What the live session remarked (a Stop never confirmed, a raw file
    // cut short); a replay has them from the raw file's ending.
    notes.extend(state.notes.iter().cloned());
    if let Some(n) = a.map(|a| a.beyond_timeout).filter(|&n| n > 0) {
        notes.push(format!(
            "the probe reported {n} responses later than its own timeout ({}), which no sound probe \
             does: they are counted as timeouts (counts.refused)",
            format_ns(config.timeout_ns)
        ));
    }
    // What the probe itself warned about, as it said it.
    notes.extend(state.probe_logs.iter().map(|l| format!("the probe logged {l}")));
    if state.probe_logs_dropped > 0 {
        notes.push(format!("the probe logged {} more warnings, not kept", state.probe_logs_dropped));
    }
    if state.probe.as_ref().is_some_and(ProbeHello::is_emulated) && notes.is_empty() {
        notes.push(
            "the probe is emulated or virtual: its timestamps do not come from independent hardware".into(),
        );
    }
    anomaly_notes(&counts, &config, req.mode.mode().is_echo(), &mut notes);
    if let Some(p) = &periodic {
        periodic_notes(p, &config, &mut notes);
    }
    notes.extend(schedule_note(&counts, &config, state.probe_elapsed_ns(), req.mode.mode().is_echo()));
    Report {
        schema_version: SCHEMA_VERSION,
        tool_version: ctx.tool_version.clone(),
        complete: end.complete,
        ended_by: end.ended_by,
        error: end.error,
        source: ctx.source.clone(),
        replayed_from: end.replayed_from,
        probe: state
            .probe
            .as_ref()
            .map(|p| ProbeReport { hello: p.clone(), capability_names: p.capability_names() }),
        config,
        started_at: ctx.started_at.clone(),
        ended_at: end.ended_at,
        command_line: ctx.command_line.clone(),
        probe_elapsed_ns: state.probe_elapsed_ns(),
        counts,
        latency_ns: a.and_then(latency_of),
        worst: a.and_then(|a| a.worst).map(|w| WorstReport {
            seq: w.seq,
            latency_ns: w.latency_ns,
            at_ns_from_start: w.at_ns_from_start,
        }),
        histogram,
        target: ctx.target.clone(),
        periodic,
        timeline: a.filter(|a| a.samples() > 0).map(|a| a.timeline.report()),
        verdicts: Vec::new(),
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::Incoming;
    use crate::model::{EdgeArg, Request};
    use latprobe_protocol::{
        Capabilities, Config, Outcome, ProbeInfo, ProbeMsg, Sample, SampleBatchBuilder, StopReason, Stopped,
    };

    /// A run folded from real messages: 1 GHz timer, 1 ms interval, a
    /// 200 µs histogram, timeout 8 ms; `outcome(seq)` for 300 samples.
    pub(super) fn run_of(outcome: impl Fn(u64) -> Outcome) -> Report {
        let request = Request {
            mode: ModeArg::UartEcho,
            interval_ns: 1_000_000,
            dither_ns: 0,
            timeout_ns: None,
            guard_ns: None,
            count: Some(300),
            duration_ns: None,
            seed: 1,
            byte: None,
            edge: EdgeArg::Rising,
            line: None,
            calibration: None,
        };
        let ctx = RunContext {
            tool_version: "test".into(),
            source: "test".into(),
            started_at: "2025-01-01T00:00:00Z".into(),
            request: request.clone(),
            histfile_max_us: 200,
            target: None,
            notes: Vec::new(),
            started_unix_ns: None,
            limits: None,
            command_line: None,
        };
        let hz = 1_000_000_000;
        let config: Config = request.config(hz, Capabilities::UART_ECHO).unwrap();
        assert_eq!((config.timeout_ticks, config.stimulus), (8_000_000, Stimulus::Identified));
        let mut state = RunState::new(200, false);
        let info = ProbeInfo {
            protocol_version: latprobe_protocol::PROTOCOL_VERSION,
            firmware_version: "t",
            board: "t",
            timer_hz: hz,
            timer_bits: 64,
            capabilities: Capabilities::UART_ECHO,
            max_batch: 64,
            target_baud: 0,
            build_id: 0,
        };
        state.on_incoming(Incoming::Message(ProbeMsg::Hello(info)));
        state.on_incoming(Incoming::Message(ProbeMsg::Configured(config)));
        state.on_incoming(Incoming::Message(ProbeMsg::Started { start_tick: 0, first_seq: 0 }));
        let mut b = SampleBatchBuilder::new(config.interval_ticks, 64);
        for seq in 0..300 {
            let s = Sample { seq, stimulus_tick: seq * 1_000_000, outcome: outcome(seq) };
            if b.push(&s).is_err() {
                state.on_incoming(Incoming::Message(ProbeMsg::SampleBatch(b.batch())));
                b.clear();
                b.push(&s).unwrap();
            }
        }
        state.on_incoming(Incoming::Message(ProbeMsg::SampleBatch(b.batch())));
        let timeouts = (0..300).filter(|&s| outcome(s) == Outcome::Timeout).count() as u64;
        let stopped = Stopped {
            reason: StopReason::CountReached,
            end_tick: 300_000_000,
            taken: 300,
            timeouts,
            dropped: 0,
            overruns: 0,
            anomalies: Anomalies::default(),
        };
        state.on_incoming(Incoming::Message(ProbeMsg::Stopped(stopped)));
        let end = Ending {
            ended_by: EndedBy::CountReached,
            complete: true,
            error: None,
            ended_at: "2025-01-01T00:00:01Z".into(),
            replayed_from: None,
        };
        build(&ctx, &state, 0, end)
    }

    /// Responses of 10..=159 µs (150 in range) and 300 µs (out of range),
    /// every 30th sample a timeout.
    pub(super) fn mixed(seq: u64) -> Outcome {
        if seq % 30 == 29 {
            Outcome::Timeout
        } else if seq % 2 == 0 {
            Outcome::Response(300_000)
        } else {
            Outcome::Response(10_000 + seq as u32 * 500)
        }
    }

    #[test]
    fn limits_pass_only_what_the_report_proves() {
        use crate::gates::{evaluate, parse_percentile};
        use crate::model::{Limits, Measured};
        // 10.0 .. 39.9 µs, no timeouts.
        let r = run_of(|seq| Outcome::Response(10_000 + seq as u32 * 100));
        let lim = |max: u64, p: &str| Limits {
            max_ns: Some(max),
            percentiles: vec![parse_percentile(p).unwrap()],
            max_timeouts: Some(0),
            ..Limits::default()
        };
        let v = evaluate(&r, &lim(39_900, "99.5=40us"), None);
        assert!(v.iter().all(|v| v.pass), "{v:?}");
        assert_eq!(v[0].margin, Some(0), "max at the limit passes with no headroom");
        // p99.5 of a JSON report: rank 299 is 39.8 µs, in the 39 µs bin.
        assert_eq!(v[1].measured, Measured::Between { low: 39_000, high: 39_900 });
        let v = evaluate(&r, &lim(39_899, "99.5=39.5us"), None);
        assert!(!v[0].pass && v[0].why.as_deref().unwrap().contains("above the limit"), "{v:?}");
        assert!(!v[1].pass && v[1].why.as_deref().unwrap().contains("cannot be proven"), "{v:?}");
        let v = evaluate(&r, &lim(40_000, "99.5=38us"), None);
        assert!(!v[1].pass && v[1].why.as_deref().unwrap().contains("at least 39us"), "{v:?}");
        // A standard percentile comes from the report's own figure.
        let v = evaluate(&r, &lim(40_000, "99=39.7us"), None);
        assert_eq!(v[1].measured, Measured::Value { value: r.latency_ns.as_ref().unwrap().p99.unwrap() });

        // Timeouts: the max is censored. Below the timeout the limit is
        // certainly broken; above it, it cannot be proven. Both fail.
        let r = run_of(mixed);
        let v = evaluate(&r, &lim(1_000_000, "50=1ms"), None);
        assert_eq!(v[0].measured, Measured::Above { bound: 8_000_000 });
        assert!(!v[0].pass && v[0].why.as_deref().unwrap().contains("so above the limit"), "{v:?}");
        assert!(v[1].pass, "the median is measured: {v:?}");
        assert!(!v[2].pass && v[2].why.as_deref().unwrap().contains("10 samples timed out"), "{v:?}");
        let v = evaluate(&r, &lim(10_000_000, "99.9=20ms"), None);
        assert!(!v[0].pass && v[0].why.as_deref().unwrap().contains("raise --timeout"), "{v:?}");
        assert!(!v[1].pass && v[1].why.as_deref().unwrap().contains("raise --timeout"), "{v:?}");
    }

    #[test]
    fn the_report_keeps_its_timeline() {
        let r = run_of(mixed);
        let t = r.timeline.as_ref().expect("a timeline");
        // 300 samples 1 ms apart: all in the first second.
        assert_eq!((t.row_s, t.samples.clone(), t.timeouts.clone()), (1, vec![300], vec![10]));
        assert_eq!(t.max_ns, vec![Some(300_000)]);
        // Rank 297 of 300 with 10 timeouts on top: censored.
        assert_eq!(t.p99_ns, vec![None]);
        let back: Report = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn histfile_totals_count_every_sample_and_the_timeouts_as_overflows() {
        let r = run_of(mixed);
        assert_eq!((r.counts.samples, r.counts.timeouts), (300, 10));
        let text = histfile::render(&r);
        let p = histfile::parse(&text).unwrap();
        assert_eq!(p.total + p.overflows, 300);
        assert_eq!(p.bins.iter().map(|b| b.1).sum::<u64>(), p.total);
        // Out of range: the 300 µs answers (even seqs) and every timeout
        // (seq ≡ 29 mod 30), in order.
        let over: Vec<u64> = (0..300).filter(|&s| s % 30 == 29 || s % 2 == 0).collect();
        assert_eq!(p.overflow_cycles, over);
        assert_eq!(p.overflows, over.len() as u64);
        assert_eq!(p.max_us, 300);
        assert!(text.contains("the true max is censored (>8000.000 us)"), "{text}");
    }

    #[test]
    fn every_format_shows_the_censored_tail_alike() {
        let r = run_of(mixed);
        let l = r.latency_ns.as_ref().unwrap();
        // 300 samples, 10 timeouts on top: p99 is rank 297 > 290 responses.
        assert_eq!((l.measured, l.censored, l.censored_above), (290, 10, 8_000_000));
        assert_eq!((l.p90, l.p99, l.max, l.max_measured), (Some(300_000), None, None, Some(300_000)));
        let back: Report = serde_json::from_str(&json::to_string(&r)).unwrap();
        assert_eq!(back, r);
        let s = text::summary(&r);
        assert!(s.contains("Max:   >8000"), "{s}");
        assert!(s.contains("10 of 300 samples timed out (>8000.00 µs): percentiles from p99 up"), "{s}");
        // A run without timeouts has nothing censored anywhere.
        let clean = run_of(|seq| Outcome::Response(10_000 + seq as u32));
        let l = clean.latency_ns.as_ref().unwrap();
        assert_eq!((l.censored, l.max, l.max_measured), (0, Some(10_299), Some(10_299)));
        let s = text::summary(&clean);
        assert!(!s.contains('>') && !s.contains("timed out"), "{s}");
        assert!(!histfile::render(&clean).contains("censored"));
    }
}
