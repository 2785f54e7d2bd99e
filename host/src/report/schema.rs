//! The report's types: what every output is rendered from and what the
//! JSON holds (the schema in the module docs of [`crate::report`]).

use super::*;

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
    /// The loads run on the target during the run (`--load`); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loads: Vec<crate::model::LoadRecord>,
    /// The load schedule's phases with their figures (`--load-schedule`);
    /// absent without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseReport>,
    /// Probe-measured run time.
    pub probe_elapsed_ns: Option<u64>,
    /// Counters.
    pub counts: Counts,
    /// Latency statistics over every sample, timeouts censored.
    pub latency_ns: Option<Latency>,
    /// Where the schedule's view (every figure) and the target's service
    /// time differ: stimuli that waited for their slot, instants that got
    /// no stimulus, and the service time beside (issue 42); absent when
    /// every stimulus went out on its schedule, and in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleReport>,
    /// The worst measured sample.
    pub worst: Option<WorstReport>,
    /// The 1 µs histogram.
    pub histogram: HistReport,
    /// Target metadata.
    pub target: Option<serde_json::Value>,
    /// Periodic-mode figures.
    pub periodic: Option<PeriodicReport>,
    /// Latency over time (see [`crate::analysis::timeline`]); `null` without
    /// samples, absent in reports of latprobe before 0.3.
    #[serde(default)]
    pub timeline: Option<crate::analysis::timeline::TimelineReport>,
    /// The tail model (see [`crate::analysis::tail`]); `null` without
    /// samples, absent in reports of older versions.
    #[serde(default)]
    pub tail: Option<crate::analysis::tail::TailReport>,
    /// The target's trace snapshots (`--trace`, see [`super::trace`]);
    /// absent without `--trace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<super::trace::TraceSection>,
    /// The limits this report was judged against (`--max`,
    /// `--percentile`, …, see [`crate::gates`]); absent when none was given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<crate::model::Verdict>,
    /// Remarks.
    pub notes: Vec<String>,
}

/// Every scheduled instant is a sample (see [`crate::analysis`]): what the
/// schedule view added to the stimuli the probe sent, and the target's
/// service time beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleReport {
    /// Stimuli that waited for their slot (every identity held, or the
    /// last sample not over): timed from their planned instant.
    pub waited: u64,
    /// Scheduled instants that got no stimulus (the target was behind):
    /// each a sample, timed from the instant to the answer of the stimulus
    /// sent after it. In `counts.samples`.
    pub omitted: u64,
    /// Of those, the ones above the timeout (censored samples).
    pub omitted_above_timeout: u64,
    /// The smallest latency among the others; `null` when all are above.
    pub omitted_min_ns: Option<u64>,
    /// The longest wait of a stimulus past its planned instant: the longest
    /// stretch of the schedule with no stimulus sent.
    pub longest_gap_ns: u64,
    /// The target's service time, from each stimulus's actual send (what
    /// the figures were before issue 42): one sample per stimulus sent.
    pub service_ns: Latency,
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
    /// The trigger threshold (`--trigger-above`), as the probe accepted it;
    /// absent when the run had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_ns: Option<u64>,
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
    /// Samples the probe flagged as triggered: its trigger output rose for
    /// them (`--trigger-above`); absent when the run had no threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triggered: Option<u64>,
    /// The sequence numbers of the first 1024 triggered samples, in order
    /// (the target's k-th trigger is the k-th); absent without any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggered_seqs: Vec<u64>,
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
    /// Each of the standard percentiles ([`PERCENTILES`]) with this table's
    /// figure, in that order.
    pub fn percentiles(&self) -> [(&'static Percentile, Option<u64>); 5] {
        let v = [self.p50, self.p90, self.p99, self.p99_9, self.p99_99];
        std::array::from_fn(|i| (&PERCENTILES[i], v[i]))
    }

    /// A figure of this table as a [`Figure`]: `None` is above the bound.
    pub fn figure(&self, v: Option<u64>) -> Figure {
        match v {
            Some(v) => Figure::Value(v),
            None if self.measured + self.censored > 0 => Figure::Above(self.censored_above),
            None => Figure::None,
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
    /// ([`crate::analysis::periodic::MAX_GAP_S`]): damaged stamps, not used; absent
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
    pub target_log: Option<crate::analysis::targetlog::TargetLogReport>,
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

/// An edge whose tick jumped beyond any outage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockJump {
    /// Its sequence number.
    pub seq: u64,
    /// Its gap after the edge before, in seconds of the probe's clock.
    pub gap_s: f64,
}

/// One phase of the load schedule and what the run measured in it: every
/// sample whose stimulus fell in the seconds `[start_s, end_s)` of the
/// probe's clock, with the whole run's figures and censoring rule (the
/// schedule runs on the host's clock from the run's start; the two agree
/// within the handshake, well under a second).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseReport {
    /// `idle` or `load`.
    pub name: String,
    /// Its start, s from the run's start.
    pub start_s: u64,
    /// Its end, s; `null` for the last (until the run ended).
    pub end_s: Option<u64>,
    /// Samples in it.
    pub samples: u64,
    /// Of them, timeouts.
    pub timeouts: u64,
    /// Its largest measured latency, ns.
    pub max_measured_ns: Option<u64>,
    /// Its figures, as exact as the run's (`latency_ns`); `null` when no
    /// sample fell in it.
    #[serde(default)]
    pub latency_ns: Option<Latency>,
    /// The loads that actually ran in it, as latprobe watched them; absent
    /// in reports of older versions and in replays of a raw file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loads: Option<Vec<PhaseLoad>>,
}

/// A load that ran in a phase (`--load-schedule`), as latprobe watched it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseLoad {
    /// The load (`hackbench:4`).
    pub name: String,
    /// How long it ran inside the phase, ms.
    pub ran_ms: u64,
    /// Whether it ran the whole phase (it did not end early in it).
    pub throughout: bool,
}
