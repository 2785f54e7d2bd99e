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
//! (*censored*). Every figure counts it (the book's concepts/identity-and-censoring.md, "The tail is measured,
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
//! | `schedule` | every scheduled instant is a sample (issue 42; [`crate::analysis`] says the rule): `waited` (stimuli that waited for their slot, timed from their planned instant), `omitted` (instants that got no stimulus while the target was behind, each a sample in `counts.samples`, timed to the answer of the stimulus sent after it), `omitted_above_timeout`, `omitted_min_ns`, `longest_gap_ns` (the longest stretch with no stimulus), `service_ns` (the target's service time from each actual send, as `latency_ns`, one sample per stimulus sent). Absent when every stimulus went out on its schedule, and in older reports |
//! | `worst` | the worst *measured* sample: `seq`, `latency_ns`, `at_ns_from_start` (a timeout is worse but has no latency) |
//! | `histogram` | `bin_ns` (1000), `max_us` (bins cover 0..max_us µs), `bins` (sparse `[start_us, count]` pairs of measured latencies, non-empty bins only), `overflows` (latencies ≥ max_us and timeouts: bins + overflows = samples), `overflow_seqs` (sequence numbers of the first 1024 overflows; the rest are only counted) |
//! | `target` | target metadata (`--target-meta FILE`, or the responder's in `demo`), verbatim JSON |
//! | `periodic` | periodic mode only (absent or `null` otherwise). The cycles are the report's samples: `latency_ns`, `histogram` (and the histfile) and `worst` hold each cycle's **wake-up delay against the fitted schedule** (sequence number = cycle, 0 = the first edge's cycle), and `config.timeout_ns` is the horizon (`--timeout`, default 8 intervals): an edge later than that after its cycle's fitted time, and a cycle without an edge, are timeout samples. Fields: `edges`, `lost` (edges lost on the link: their cycles are neither measured nor missed), `duplicates`, `intervals` {`count`, `min_ns`, `max_ns`, `mean_ns`} of raw edge-to-edge intervals; `fit` {`estimator`, `block_edges`, `nominal_period_ns`, `period_ns` (mean fitted period on the probe's clock, a float), `offset_ppm` (how much faster the target's clock runs than the probe's, `nominal / fitted − 1`, float), `drift` {`blocks`, `first_ppm`, `last_ppm`, `min_ppm`, `max_ppm`, `ppm_per_hour` (least-squares slope)}, `zero` (what a delay of 0 means: the earliest edge the fit allows)}; `cycles` (first to last edge's cycle), `missed_periods`, `late_edges`, `fit_conflicts` (edges the fit could not place: 0 in a sound run), `out_of_order`, `clock_jumps` (edges whose tick, or sequence number in periods, is more than a day after the edge before: damaged stamps, left out like lost edges; absent when 0) and `first_clock_jump` {`seq`, `gap_s`}; `naive` {`count`, `p50`, `p90`, `p99`, `p99_9`, `p99_99`, `max`}: the same edges against the nominal schedule (first edge + k × interval), re-zeroed at their earliest, for comparison only; `target_log` (with `--target-log`): `file`, `offset` (target cycle = probe cycle + offset), `alignment`, `correlation`, `log_cycles`, `aligned`, `probe_only`, `missed_but_logged`, `log_outside`, `internal_all`, `internal`, `external`, `difference` (each {`count`, `min`, `mean`, `p50`, `p90`, `p99`, `p99_9`, `p99_99`, `max`}, ns, signed; `difference` = external − internal per cycle), `difference_histogram` (sparse 1 µs `[start_us, count]`), `disagreements` (up to 10 {`cycle`, `target_cycle`, `external_ns`, `internal_ns`, `difference_ns`}, farthest from the median difference first); and a `note`. Reports of latprobe 0.1 have only `edges`, `lost`, `duplicates`, `intervals` and `note`, and read as such |
//! | `timeline` | latency over time, one row per `row_s` seconds of the probe's clock from the start (1 s; for runs longer than 3 600 s a power of two, so that there are at most 3 600 rows): columns `samples`, `timeouts`, `max_ns` (largest measured latency, `null` when none in the row), `p99_ns` (the worst per-second p99 within the row, timeouts ranked above every response; `null` when it fell among the timeouts, i.e. above `latency_ns.censored_above`, or the row is empty). A sample belongs to its stimulus's second, a periodic cycle to its edge's; a missed periodic cycle to the second of the edge before it. `null` without samples; absent in older reports |
//! | `tail` | the tail model (see [`crate::analysis::tail`]): a peaks-over-threshold fit of a generalized Pareto distribution (GPD) to the cluster maxima above a threshold, timeouts right-censored at the timeout. `threshold_ns` (`null` when none could be chosen), `threshold_rule` and `method` (in words), `exceedances` (samples above the threshold, timeouts included), `censored` (of them, timeouts), `clusters` (after runs declustering), `run_length` (sequence numbers: exceedances at most this far apart are one cluster; 0 = none merged), `extremal_index` (Ferro–Segers), `samples_per_cluster` (1 / `extremal_index`: every "once per" figure counts clusters, so an hour at the once-per-hour level has about this many samples above it; absent in older reports), `shape` (ξ) and `scale_ns` (σ), each `{"estimate", "lo", "hi"}`: the estimate and its 95 % profile-likelihood interval, an end `null` when the data do not bound it; `per_hour`, `per_day`, `per_1e9_samples`: the latency exceeded once per hour, day, 10⁹ samples (ns, same form; `null` when that latency is below the threshold); `limits`: for `--max`, each percentile limit's latency and each `max_exceedance_per_hour` latency, {`name` (`max`, `p99.9 limit`, `exceedance 200us`), `latency_ns`, `exceed_per_hour` (the probability that an hour of running exceeds it at least once), `clusters_per_hour`, `run_for_95_s` (how long a run must be to exceed it with 95 % probability), each in the same form, `note` (how a figure below the threshold was made, or why none)}; `measured_max` (the same for the measured max, or the timeout when samples timed out); `horizon` {`duration_ns` (`--horizon`, default 24 h), `likely_max_ns` (the median of the max of a run that long)}; `horizon_ns`; `checks` {`goodness_of_fit_p` (Anderson–Darling, parametric bootstrap), `halves` {`split_s`, `clusters`, `samples` (first and second half), `rate_p`, `shape_p`}, `level` (each check refuses at or below it)}; `candidates` (every candidate threshold: `threshold_ns`, `exceedances`, `clusters`, `shape`); `curve` (the fitted survival above the threshold at ten latencies, {`latency_ns`, `survival`, `lo`, `hi`}, for the plot); `caveat` (what every extrapolated figure assumes; `null` when refused); **`refused`**: `null`, or why no figure is extrapolated (too few exceedances, threshold instability, poor fit, the halves disagree, all censored): every extrapolated figure is then `null`; `samples` (the run's 1024 worst samples: `seq`, `at_ns`, `latency_ns` columns, `null` latency = timeout) from which `latprobe report` makes the model again. `null` without samples; absent in reports of older versions (they read as before, with no tail model) |
//! | `trace` | the target's trace snapshots (`demo --trace`; see [`trace`] and [`crate::analysis::trace`]); absent without `--trace`. `dir` (where the snapshot files are, beside the report), `enabled` and `reason` (from the responder's metadata: armed, or why not), `triggers`, `stop_latencies_ns` (each trigger seen → `tracing_on` written, the responder's CLOCK_MONOTONIC), `marker_mean_ns`, `marker_max_ns` (the marker's write after each answer), `note` (what the heuristic is), `stop` (`probe`: its trigger line; `host`: latprobe when a flagged sample arrived, `--trace-stop host`), `host_stops` (host stop: the stops sent; flagged samples within 10 ms of one shared it); `snapshots`: each {`file` (`trace-seq-N.txt`), `sidecar` (`trace-seq-N.json`), `trigger` (from 1), `stop_latency_ns`, `edge_to_stop_ns` (GPIO: the kernel's edge timestamp → `tracing_on` written), `trigger_mono_ns`, `last_marker_seq` (the answer before the late one), `answer` (the late answer's place among the answers), `sample_seq` and `sample_latency_ns` (its sample, `null` when timeouts or lost samples make the count ambiguous), `tie` (how it was tied, in words), `trigger_estimated_mono_ns` and `trigger_to_stop_ns` (the threshold's moment on the trace clock from the late answer's marker, `marker − (latency − threshold)`, and from it to `tracing_on` written; only when that marker is in the snapshot, as with the host's stop), `analysis` {`events`, `markers`, `last_marker` {`seq`, `id`, `ts_ns`, `cpu`, `pid`}, `window` {`start_ns`, `end_ns` (trace clock, ns), `start_from`, `end_from`}, `excerpt` (per CPU, the responder's first: `cpu`, `lines` (the last events before the trigger), `omitted` (earlier ones left out)), `findings` {`responder` {`pid`, `cpu`, `woken_ns`, `ran_ns`}, `holders` (on the responder's CPU, the longest `irq`, `softirq` and `hrtimer` and the three longest `task` slices: `kind`, `name`, `cpu`, `start_ns`, `duration_ns`, `open` (still running at the trigger)), `culprit` (the longest of them: a heuristic; `null` when the trace starts after the trigger)}, `trace_starts_after_trigger_ns` (present when the trigger came before the snapshot's first event: the trace was re-armed after it, once an earlier snapshot was saved, or its ring buffer overwrote the window)}, `error`} |
//! | `verdicts` | the limits the report was judged against (`--max`, `--percentile`, `--max-timeouts`, `--max-lost`, `--max-late`, `--limits`): each {`name` (`max`, `p99.9`, `timeouts`, `lost`, `late`, `exceedance 200us`), `unit` (`ns`, `count`, or `probability-e12` for `max_exceedance_per_hour`: limit and measured in units of 10⁻¹², judged on the upper end of the tail model's interval, `measured` `between` its ends; a refused model fails the limit with the reason), `limit`, `measured` {`kind`: `value` with `value`, `above` with `bound`, `between` with `low` and `high`, or `nothing`}, `pass`, `margin` (limit − measured, or null), `why` (the failure in words, or null)}; absent when no limit was given |
//! | `notes` | plain-language remarks (e.g. that a virtual probe's clock is this machine's, or what the anomalies mean) |

pub mod histfile;
pub mod html;
pub mod json;
pub mod junit;
pub mod lava;
pub mod plot;
pub mod tail;
#[cfg(test)]
pub(crate) mod testkit;
pub mod text;
pub mod trace;

mod build;
mod schema;
#[cfg(test)]
mod tests;

pub use build::*;
pub use schema::*;

use serde::{Deserialize, Serialize};

use crate::analysis::figure::{Percentile, PERCENTILES};
use crate::analysis::Figure;
use crate::model::Ending;
use crate::model::RunContext;
use crate::model::{EndedBy, ModeArg, ProbeHello};
use crate::session::RunState;
use crate::units::format_ns;
use latprobe_protocol::{ticks_to_ns, Anomalies, Stimulus};
