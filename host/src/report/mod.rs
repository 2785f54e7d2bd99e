//! Reports: the [`Report`] every output is rendered from, and one module per
//! format (like hyperfine's `export/`): [`text`] (the terminal summary),
//! [`json`] (`--output`), [`histfile`] (`--histfile`, cyclictest's layout).
//!
//! A report is built from a [`RunState`] (live, or a replayed raw file) or
//! read back from JSON, so `latprobe report` renders every output again.
//!
//! # JSON schema, `schema_version` 1
//!
//! All times are integer nanoseconds of the probe's clock unless the name
//! says otherwise; absent values are `null`.
//!
//! | field | meaning |
//! |---|---|
//! | `schema_version` | 1; bumped when a field changes meaning or goes away |
//! | `tool_version` | latprobe version that made the report |
//! | `complete` | the run ended as asked (`--count` reached or `--duration` elapsed) and the probe confirmed Stop |
//! | `ended_by` | `count-reached`, `duration-elapsed`, `interrupted` (signal), `failed`, `stream-ended` (replay of a cut file) |
//! | `error` | the error that ended the run, or null |
//! | `source` | the port the bytes came from |
//! | `replayed_from` | the raw file a replay read, else null |
//! | `probe` | the probe's Hello: `protocol_version`, `firmware_version`, `board`, `timer_hz`, `timer_bits`, `capabilities` (bits), `capability_names`, `max_batch` |
//! | `config` | `mode`, `interval_ns`, `dither_ns`, `timeout_ns`, `guard_ns`, `count`, `duration_ns`, `seed`, `stimulus`, and `ticks` {`interval`, `dither`, `timeout`, `guard`} as the probe accepted them (ns fields are then converted back from those ticks) |
//! | `started_at`, `ended_at` | wall clock, RFC 3339 UTC |
//! | `probe_elapsed_ns` | start to stop on the probe's clock |
//! | `counts` | `samples` (= `responses` + `timeouts`), `responses`, `timeouts`, `lost` (sequence numbers never received, whatever the cause), `duplicates`, `out_of_order`, `dropped_by_probe` (of the lost, dropped by the probe's full queue), `overruns`, `late_responses` (echo answers that matched no stimulus: after their timeout, or with none outstanding), `bad_frames` (damaged, malformed or other-version frames and undecodable batches), `probe_taken` (the probe's own total, from Stopped) |
//! | `latency_ns` | over responses only: `min`, `max`, `mean` (exact), `p50`, `p90`, `p99`, `p99_9`, `p99_99` (HdrHistogram, 3 significant digits); null without responses |
//! | `worst` | `seq`, `latency_ns`, `at_ns_from_start` of the largest latency |
//! | `histogram` | `bin_ns` (1000), `max_us` (bins cover 0..max_us µs), `bins` (sparse `[start_us, count]` pairs, non-empty bins only), `overflows` (latencies ≥ max_us), `overflow_seqs` (sequence numbers of the first 1024 overflows) |
//! | `target` | target metadata (`--target-meta FILE`, or the responder's in `demo`), verbatim JSON |
//! | `periodic` | periodic mode only: `edges`, `lost`, `duplicates`, `intervals` {`count`, `min_ns`, `max_ns`, `mean_ns`} of raw edge-to-edge intervals, and a `note`: the fitted analysis comes in a later issue |
//! | `notes` | plain-language remarks (e.g. that a virtual probe's clock is this machine's) |

pub mod histfile;
pub mod json;
pub mod text;

use serde::{Deserialize, Serialize};

use crate::rawfile::RunContext;
use crate::session::{EndedBy, ModeArg, ProbeHello, RunState};
use latprobe_protocol::{ticks_to_ns, Stimulus};

/// The schema version written into every JSON report.
pub const SCHEMA_VERSION: u32 = 1;

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
    /// Probe-measured run time.
    pub probe_elapsed_ns: Option<u64>,
    /// Counters.
    pub counts: Counts,
    /// Latency statistics.
    pub latency_ns: Option<Latency>,
    /// The worst sample.
    pub worst: Option<WorstReport>,
    /// The 1 µs histogram.
    pub histogram: HistReport,
    /// Target metadata.
    pub target: Option<serde_json::Value>,
    /// Periodic-mode figures.
    pub periodic: Option<PeriodicReport>,
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
    /// Timeout.
    pub timeout_ns: u64,
    /// Guard.
    pub guard_ns: u64,
    /// Requested count.
    pub count: Option<u64>,
    /// Requested duration.
    pub duration_ns: Option<u64>,
    /// Dither seed.
    pub seed: u64,
    /// The stimulus, e.g. `byte 0x55`, `edge rising`, `none`.
    pub stimulus: String,
    /// The probe's accepted values in ticks.
    pub ticks: Option<TicksReport>,
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
    /// Samples with a response.
    pub responses: u64,
    /// Samples without one.
    pub timeouts: u64,
    /// Sequence numbers never received.
    pub lost: u64,
    /// Received twice.
    pub duplicates: u64,
    /// Received late.
    pub out_of_order: u64,
    /// Dropped by the probe's full queue.
    pub dropped_by_probe: u64,
    /// Times the probe's queue was full.
    pub overruns: u64,
    /// Echo responses that matched no stimulus (after their timeout, or
    /// with none outstanding), as the probe counted them.
    #[serde(default)]
    pub late_responses: u64,
    /// Frames that could not be used.
    pub bad_frames: u64,
    /// The probe's own total.
    pub probe_taken: Option<u64>,
}

/// Latency statistics over responses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Latency {
    /// Exact minimum.
    pub min: u64,
    /// Exact maximum.
    pub max: u64,
    /// Exact mean, rounded down.
    pub mean: u64,
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
}

/// The worst sample.
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
    /// Sparse `[start_us, count]`.
    pub bins: Vec<[u64; 2]>,
    /// Latencies beyond the range.
    pub overflows: u64,
    /// Sequence numbers of the first overflows.
    pub overflow_seqs: Vec<u64>,
}

/// Periodic-mode figures: counts and raw intervals only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeriodicReport {
    /// Edges received.
    pub edges: u64,
    /// Edges never received.
    pub lost: u64,
    /// Edges received twice.
    pub duplicates: u64,
    /// Raw intervals.
    pub intervals: Option<IntervalReport>,
    /// What these figures are not.
    pub note: String,
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

const PERIODIC_NOTE: &str = "raw intervals between consecutive edges on the probe's clock, no more: \
    the fitted analysis (period, ppm offset, deviation from the fit) comes in a later release";

fn stimulus_name(s: Stimulus) -> String {
    match s {
        Stimulus::Byte(b) => format!("byte 0x{b:02x}"),
        Stimulus::Edge(e) => format!("edge {}", format!("{e:?}").to_lowercase()),
        Stimulus::None => "none".into(),
    }
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
            ticks: Some(TicksReport {
                interval: c.interval_ticks,
                dither: c.dither_ticks,
                timeout: c.timeout_ticks,
                guard: c.guard_ticks,
            }),
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
            stimulus: match req.mode {
                ModeArg::Periodic => "none".into(),
                ModeArg::GpioEcho => format!("edge {}", format!("{:?}", req.edge).to_lowercase()),
                _ => format!("byte 0x{:02x}", req.byte),
            },
            ticks: None,
        },
    };
    let a = state.analysis.as_ref();
    let (dropped, overruns, late) = match (state.stopped, state.heartbeat) {
        (Some(s), _) => (s.dropped, u64::from(s.overruns), s.late),
        (None, Some(h)) => (h.dropped, u64::from(h.overruns), h.late),
        (None, None) => (0, 0, 0),
    };
    let counts = Counts {
        samples: a.map_or(0, |a| a.samples()),
        responses: a.map_or(0, |a| a.responses),
        timeouts: a.map_or(0, |a| a.timeouts),
        lost: a.map_or(0, |a| a.seq.lost),
        duplicates: a.map_or(0, |a| a.seq.duplicates),
        out_of_order: a.map_or(0, |a| a.seq.out_of_order),
        dropped_by_probe: dropped,
        overruns,
        late_responses: late,
        bad_frames: bad_frames + a.map_or(0, |a| a.bad_batches),
        probe_taken: state.stopped.map(|s| s.taken),
    };
    let latency = a.filter(|a| a.responses > 0).map(|a| Latency {
        min: a.min_ns,
        max: a.max_ns,
        mean: a.mean_ns(),
        p50: a.quantile(0.5),
        p90: a.quantile(0.9),
        p99: a.quantile(0.99),
        p99_9: a.quantile(0.999),
        p99_99: a.quantile(0.9999),
    });
    let histogram = HistReport {
        bin_ns: 1000,
        max_us: ctx.histfile_max_us,
        bins: a.map_or_else(Vec::new, |a| {
            a.bins.iter().enumerate().filter(|(_, &c)| c > 0).map(|(i, &c)| [i as u64, c]).collect()
        }),
        overflows: a.map_or(0, |a| a.overflows),
        overflow_seqs: a.map_or_else(Vec::new, |a| a.overflow_seqs.clone()),
    };
    let periodic = (req.mode == ModeArg::Periodic).then(|| {
        let e = a.map(|a| &a.edges);
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
            note: PERIODIC_NOTE.into(),
        }
    });
    let mut notes = ctx.notes.clone();
    if late > 0 {
        notes.push(format!(
            "{late} responses came after their timeout (or with no stimulus outstanding): counted, not \
             measured; an answer that late can also be taken for the next stimulus's, so raise --timeout \
             or --guard if they matter"
        ));
    }
    if state.probe.as_ref().is_some_and(ProbeHello::is_emulated) && notes.is_empty() {
        notes.push(
            "the probe is emulated or virtual: its timestamps do not come from independent hardware".into(),
        );
    }
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
        probe_elapsed_ns: state.probe_elapsed_ns(),
        counts,
        latency_ns: latency,
        worst: a.and_then(|a| a.worst).map(|w| WorstReport {
            seq: w.seq,
            latency_ns: w.latency_ns,
            at_ns_from_start: w.at_ns_from_start,
        }),
        histogram,
        target: ctx.target.clone(),
        periodic,
        notes,
    }
}
