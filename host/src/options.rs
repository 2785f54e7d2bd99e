//! The option groups several subcommands share (`--interval` and the
//! timing, the output files, the limits), flattened into each one's
//! arguments, and the parsers they use.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::model::PercentileLimit;
use crate::units::{parse_duration_ns, parse_positive_duration};

/// Stimulus timing, shared by `run` and `demo`.
#[derive(Debug, Clone, Args)]
pub struct TimingArgs {
    /// Time between stimuli (in periodic mode: the target's nominal period): 500us, 1ms, 1.5ms
    #[arg(long, value_name = "DURATION", default_value = "1ms", value_parser = parse_duration_ns, allow_hyphen_values = true)]
    pub interval: u64,
    /// Delay each stimulus by a uniform random extra of up to this, so stimuli do not phase-lock with the target's tick
    #[arg(long, value_name = "DURATION", default_value = "0", value_parser = parse_duration_ns, allow_hyphen_values = true)]
    pub dither: u64,
    /// An answer later than this after its stimulus is a timeout sample, counted as a latency above it [default: with identity bytes (uart-echo without --byte) 8 intervals, at most 9 intervals less --dither and --guard; with one stimulus in flight (--byte, gpio-echo) the interval less --dither and --guard]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_ns, allow_hyphen_values = true)]
    pub timeout: Option<u64>,
    /// Quiet time after a sample ends (answer or timeout) before the next stimulus on its slot: the next stimulus with one in flight, the one 9 later with identity bytes [default: a tenth of the interval]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_ns, allow_hyphen_values = true)]
    pub guard: Option<u64>,
    /// Seed of the dither sequence: the same seed gives the same schedule
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Stop after this many samples (the probe counts them)
    #[arg(long, value_name = "N", conflicts_with = "duration", value_parser = parse_count, allow_hyphen_values = true)]
    pub count: Option<u64>,
    /// No data from the probe for this long is an error naming the port
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_positive_duration, allow_hyphen_values = true)]
    pub silence_timeout: Duration,
}

/// The trigger output, shared by `run` and `demo`.
#[derive(Debug, Clone, Args)]
pub struct TriggerArgs {
    /// Raise the probe's trigger output the moment a stimulus has gone this long without an answer (while the target is still late, so its trace can be stopped with the cause in flight), and flag the sample; must be below --timeout; needs a probe that announces a trigger output (the virtual probe of `demo`: a FIFO; qemu: flags only; Nucleo-F411RE: PB4; Pico: GP6)
    #[arg(long, value_name = "DURATION", value_parser = parse_trigger_ns, allow_hyphen_values = true)]
    pub trigger_above: Option<u64>,
}

/// `--trace`, shared by `run` and `demo`: the target's ftrace, stopped by
/// the trigger while an answer is late, its snapshots beside the report.
#[derive(Debug, Clone, Args)]
pub struct TraceArgs {
    /// Have the responder arm the target's ftrace (root; tracefs is mounted if needed), mark every answer in it, and save a snapshot when the trigger arrives; the report ties each snapshot to its sample and names the likely culprit (a heuristic)
    #[arg(long)]
    pub trace: bool,
    /// Where the snapshots go [default: beside --output or --html, as NAME-trace/, else ./latprobe-trace]
    #[arg(long, value_name = "DIR", requires = "trace")]
    pub trace_dir: Option<PathBuf>,
    /// Keep the first N snapshots (the responder's --trace-keep)
    #[arg(long, value_name = "N", default_value_t = 5, requires = "trace")]
    pub trace_keep: u32,
    /// The events to record, comma-separated (the responder's --trace-events) [default: sched_switch, sched_wakeup, irq_handler_entry/exit, softirq_entry/exit, hrtimer_expire_entry/exit]
    #[arg(long, value_name = "LIST", requires = "trace")]
    pub trace_events: Option<String>,
    /// An ftrace tracer beside the events, e.g. function (the responder's --tracer)
    #[arg(long, value_name = "NAME", requires = "trace")]
    pub tracer: Option<String>,
    /// The ring buffer per CPU on the target, KiB: it must hold the time from the stimulus to the stop (the responder's --trace-buffer-kb) [default: 4096; with --trace-stop host 16384, as the stop comes up to the answer's lateness plus 50 ms later]
    #[arg(long, value_name = "KIB", requires = "trace", value_parser = clap::value_parser!(u32).range(64..))]
    pub trace_buffer_kb: Option<u32>,
    /// Who stops the trace: `probe`, its trigger line (demo: the virtual probe's FIFO; run: the wire to the target's GPIO named by --target-trigger-gpio), or `host`, latprobe itself when a flagged sample reaches it, through a FIFO on the target (over SSH with --target): no wire, but later by the answer's lateness, a batch (up to 50 ms) and the link; the report gives each snapshot's trigger-to-stop time [default: probe in demo and with --target-trigger-gpio, else host]
    #[arg(long, value_name = "WHO", value_enum, requires = "trace")]
    pub trace_stop: Option<TraceStop>,
}

impl TraceArgs {
    /// The responder's `--trace-buffer-kb` for a run stopped by `stop`.
    pub fn buffer_kb(&self, stop: TraceStop) -> u32 {
        self.trace_buffer_kb.unwrap_or(match stop {
            TraceStop::Probe => 4096,
            TraceStop::Host => 16_384,
        })
    }
}

/// `--trace-stop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceStop {
    /// The probe's trigger line.
    Probe,
    /// latprobe, when a flagged sample arrives.
    Host,
}

/// A duration longer than 0, in ns (`--trigger-above`).
fn parse_trigger_ns(text: &str) -> Result<u64, String> {
    match parse_duration_ns(text)? {
        0 => Err("must be longer than 0 (leave --trigger-above out for no trigger)".into()),
        ns => Ok(ns),
    }
}

/// `--count N`: a whole number of samples. A minus sign reaches this
/// parser (`allow_hyphen_values`), so that `--count -1` is named as such
/// rather than taken for an unknown flag `-1`.
pub fn parse_count(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.starts_with("--") {
        return Err(format!("needs a value, found the flag '{t}': give a number of samples, e.g. 10000"));
    }
    t.parse::<u64>().map_err(|_| format!("'{t}' is not a whole number of samples, 1 or more (e.g. 10000)"))
}

/// Output files, shared by `run` and `demo`.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Write the JSON report (schema_version 2) to FILE (`-`: stdout, kept with -q)
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write a cyclictest --histfile style histogram (1 us bins) to FILE
    #[arg(long, value_name = "FILE")]
    pub histfile: Option<PathBuf>,
    /// Range of the 1 us histogram, like cyclictest's -h; longer latencies count as overflows [default: the timeout in whole us, at least 1000]
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub histfile_max_us: Option<u32>,
    /// Record every byte the probe sends to FILE, for `latprobe report FILE` later
    #[arg(long, value_name = "FILE")]
    pub raw: Option<PathBuf>,
    /// Attach this JSON file (e.g. from `latprobe-responder metadata`) to the report as `target`
    #[arg(long, value_name = "FILE")]
    pub target_meta: Option<PathBuf>,
    /// Periodic mode: the target's own per-cycle log (`latprobe-responder periodic --log FILE`), read after the run and set beside the probe's figures cycle by cycle
    #[arg(long, value_name = "FILE")]
    pub target_log: Option<PathBuf>,
    /// Periodic mode: also print the delays measured against the nominal schedule (what a tool trusting the target's clock would show)
    #[arg(long)]
    pub show_naive: bool,
    /// The target's trace snapshots to read into the report (set by
    /// `demo --trace`, not a flag of its own).
    #[arg(skip)]
    pub trace: Option<crate::model::TraceSource>,
}

/// Limits and the outputs CI reads, shared by `run`, `demo` and `report`.
#[derive(Debug, Clone, Default, Args)]
pub struct GateArgs {
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Write JUnit XML to FILE: one testcase per limit and one for the run (labgrid, pytest, Jenkins, GitLab)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Print `lava-test-case` lines on stdout, one per limit and headline figure (the summary then goes to stderr)
    #[arg(long)]
    pub lava: bool,
    /// Write the plots (histogram, latency over time, complementary CDF) as SVG and PNG into DIR
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Write one self-contained HTML report (summary, plots, target, limits, notes) to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// The tail model's horizon: the max a run this long would likely show (its median, with a 95 % interval) [default: 24h]
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration_ns)]
    pub horizon: Option<u64>,
}

/// A duration above 0, in ns (`--horizon`).
pub fn parse_positive_duration_ns(text: &str) -> Result<u64, String> {
    match parse_duration_ns(text)? {
        0 => Err(format!("'{}' is no length of time: give one above 0, e.g. 24h", text.trim())),
        ns => Ok(ns),
    }
}

/// The limit flags, shared by `run`, `demo` and `report`.
#[derive(Debug, Clone, Default, Args)]
pub struct LimitArgs {
    /// Fail (exit 3) when the largest latency exceeds this: 200us
    #[arg(long = "max", value_name = "DURATION", value_parser = parse_duration_ns)]
    pub max: Option<u64>,
    /// Fail (exit 3) when a percentile exceeds a latency: 99.9=100us (repeatable)
    #[arg(long = "percentile", value_name = "Q=DURATION", value_parser = parse_percentile)]
    pub percentile: Vec<PercentileLimit>,
    /// Fail (exit 3) when more than N samples timed out
    #[arg(long, value_name = "N")]
    pub max_timeouts: Option<u64>,
    /// Fail (exit 3) when more than N samples were lost on the way (sequence gaps)
    #[arg(long, value_name = "N")]
    pub max_lost: Option<u64>,
    /// Fail (exit 3) when the probe heard more than N late answers (after their stimulus's timeout)
    #[arg(long, value_name = "N")]
    pub max_late: Option<u64>,
    /// Read limits from a TOML file (max, percentile, max_timeouts, max_lost, max_late, max_exceedance_per_hour); a flag given too wins
    #[arg(long, value_name = "FILE")]
    pub limits: Option<PathBuf>,
}

/// Parse `99.9=100us` (`--percentile`).
pub fn parse_percentile(text: &str) -> Result<PercentileLimit, String> {
    let t = text.trim();
    let Some((q, d)) = t.split_once('=') else {
        return Err(format!("'{t}' is not Q=DURATION: write e.g. 99.9=100us"));
    };
    let percent = parse_percent(q.trim())?;
    let limit_ns = parse_duration_ns(d.trim())?;
    Ok(PercentileLimit { percent, limit_ns })
}

pub fn parse_percent(q: &str) -> Result<f64, String> {
    let q = q.strip_prefix('p').unwrap_or(q);
    match q.parse::<f64>() {
        Ok(p) if p > 0.0 && p < 100.0 => Ok(p),
        _ => Err(format!("'{q}' is not a percentile: give a number above 0 and below 100, e.g. 99.9")),
    }
}

/// `--target ssh://…` and how the responder gets there, shared by `demo`
/// and `run`.
#[derive(Debug, Clone, Default, Args)]
pub struct TargetArgs {
    /// Start the responder on this target over SSH (the system's ssh, with your config and agent, in BatchMode): `ssh://[user@]host[:port]`. Its metadata and logs come back, and it ends with the run
    #[arg(long = "target", value_name = "ssh://[USER@]HOST[:PORT]")]
    pub url: Option<String>,
    /// With --target: ssh's config file (ssh -F FILE) instead of ~/.ssh/config
    #[arg(long, value_name = "FILE", requires = "url")]
    pub ssh_config: Option<PathBuf>,
    /// With --target: the responder on the target [default: latprobe-responder on its PATH]
    #[arg(long, value_name = "PATH", requires = "url")]
    pub target_responder: Option<String>,
    /// With --target: copy this latprobe's own responder (built for the target's CPU) to ~/.cache/latprobe on the target and run that one
    #[arg(long, requires = "url", conflicts_with = "target_responder")]
    pub target_install: bool,
    /// Run this load on the target during the measurement (repeatable; the demo's target is this machine): `NAME[:ARG]`, NAME one of hackbench, stress-ng (ARG cpu, vm or io), dd, iperf3, compile
    #[arg(long = "load", value_name = "NAME[:ARG]")]
    pub loads: Vec<String>,
    /// Run the loads in phases, the OSADL way: idle=60s,load=60s,… from the run's start, the last phase until its end [default: the loads run throughout]
    #[arg(long, value_name = "PHASES", requires = "loads")]
    pub load_schedule: Option<String>,
    /// A load that ends before the run does (or never starts) is a note in the report, not a failed run
    #[arg(long, requires = "loads")]
    pub load_may_end: bool,
    /// Where the loads write their files on the target (dd's 256 MiB, a compile's objects) [default: a directory of their own in the target's TMPDIR, apart from the run's]
    #[arg(long, value_name = "DIR", requires = "loads")]
    pub load_dir: Option<String>,
}

impl OutputArgs {
    /// The histogram's range, µs: `--histfile-max-us`, or by default one
    /// that holds every latency short of the timeout (`timeout_ns` rounded
    /// up to whole µs, at least cyclictest's usual 1000), so that only
    /// timeouts are overflows and an imported histfile of a default run is
    /// not censored below its timeout.
    pub fn histfile_max_us_for(&self, timeout_ns: u64) -> u32 {
        self.histfile_max_us.unwrap_or_else(|| {
            u32::try_from(timeout_ns.div_ceil(1000)).unwrap_or(1_000_000).clamp(1000, 1_000_000)
        })
    }
}
