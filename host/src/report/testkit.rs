//! Reports for the format tests (JUnit, LAVA): a plausible `uart-echo` run
//! built field by field, with or without timeouts, judged against limits
//! by [`crate::gates::evaluate`] the way `latprobe report` judges a JSON
//! report.

use super::{ConfigReport, Counts, HistReport, Latency, ProbeReport, Report, SCHEMA_VERSION};
use crate::gates::{evaluate, parse_limits_toml};
use crate::model::{EndedBy, ModeArg, ProbeHello};

/// 300 samples every 1 ms, timeout 8 ms; sample `i` answered after
/// 10 µs + i × 0.5 µs, or, with `timeouts`, the last `timeouts` samples
/// unanswered (latencies above 8 ms).
pub(crate) fn run(timeouts: u64) -> Report {
    let samples = 300u64;
    let responses = samples - timeouts;
    let lat = |i: u64| 10_000 + i * 500;
    // rank max(1, ⌈q·samples⌉); a rank above the responses falls among
    // the timeouts.
    let at = |q: f64| {
        let rank = ((q * samples as f64).ceil() as u64).max(1);
        (rank <= responses).then(|| lat(rank - 1))
    };
    let latency = Latency {
        measured: responses,
        censored: timeouts,
        censored_above: 8_000_000,
        min: (responses > 0).then(|| lat(0)),
        mean: (responses > 0).then(|| (0..responses).map(lat).sum::<u64>() / responses),
        p50: at(0.5),
        p90: at(0.9),
        p99: at(0.99),
        p99_9: at(0.999),
        p99_99: at(0.9999),
        max: (timeouts == 0).then(|| lat(responses - 1)),
        max_measured: (responses > 0).then(|| lat(responses - 1)),
    };
    let bins = (0..responses).map(|i| lat(i) / 1000).fold(Vec::<[u64; 2]>::new(), |mut v, us| {
        match v.last_mut() {
            Some([start, count]) if *start == us => *count += 1,
            _ => v.push([us, 1]),
        }
        v
    });
    Report {
        schema_version: SCHEMA_VERSION,
        tool_version: "0.1.0".into(),
        complete: true,
        ended_by: EndedBy::CountReached,
        error: None,
        source: "/dev/ttyACM0".into(),
        replayed_from: None,
        probe: Some(ProbeReport {
            hello: ProbeHello {
                protocol_version: 2,
                firmware_version: "0.1.0".into(),
                board: "nucleo-f411re".into(),
                timer_hz: 100_000_000,
                timer_bits: 32,
                capabilities: 0,
                max_batch: 64,
                target_baud: 115_200,
                build_id: 0,
            },
            capability_names: vec!["uart-echo".into()],
        }),
        config: ConfigReport {
            mode: ModeArg::UartEcho,
            interval_ns: 1_000_000,
            dither_ns: 0,
            timeout_ns: 8_000_000,
            guard_ns: 0,
            count: Some(samples),
            duration_ns: None,
            seed: 1,
            stimulus: "identified (9-byte alphabet)".into(),
            identity: true,
            ticks: None,
            calibration: None,
            trigger_ns: None,
        },
        started_at: "2025-06-01T12:00:00.000Z".into(),
        ended_at: "2025-06-01T12:00:00.350Z".into(),
        command_line: None,
        loads: Vec::new(),
        phases: Vec::new(),
        probe_elapsed_ns: Some(300_250_000),
        counts: Counts {
            samples,
            responses,
            timeouts,
            late_responses: timeouts,
            probe_taken: Some(samples),
            ..Counts::default()
        },
        latency_ns: Some(latency),
        schedule: None,
        worst: None,
        histogram: HistReport { bin_ns: 1000, max_us: 200, bins, overflows: timeouts, overflow_seqs: vec![] },
        target: Some(serde_json::json!({
            "hostname": "rt-board",
            "uname": { "release": "6.6.21-rt26", "machine": "aarch64" },
            "preemption": { "model": "PREEMPT_RT" },
        })),
        periodic: None,
        timeline: None,
        tail: None,
        trace: None,
        verdicts: Vec::new(),
        notes: Vec::new(),
    }
}

/// `r` judged against the limits of a `--limits` file's text.
pub(crate) fn judged(mut r: Report, limits_toml: &str) -> Report {
    let limits = parse_limits_toml(limits_toml).expect("test limits parse");
    r.verdicts = evaluate(&r, &limits, None);
    r
}

/// Limits that [`run`]`(0)` meets: max, two percentiles and every count.
pub(crate) const MET: &str = r#"
max = "200us"
max_timeouts = 0
max_lost = 0
max_late = 0
[percentile]
"99" = "180us"
"99.9" = "190us"
"#;

/// Limits that [`run`]`(10)` violates: p99.9 and max fall among the
/// timeouts (censored), p50 is measured and above its limit, the timeouts
/// and late answers are over; p90 and lost pass.
pub(crate) const VIOLATED: &str = r#"
max = "200us"
max_timeouts = 0
max_lost = 0
max_late = 5
[percentile]
"50" = "50us"
"90" = "150us"
"99.9" = "100us"
"#;

/// Text a note or an error might carry from a device or a file name:
/// markup, entities, quotes, control characters, a lone CR, non-ASCII,
/// noncharacters XML forbids, and a CDATA end.
pub(crate) const HOSTILE: &str =
    "<b>&amp; \"quoted\" 'single' ]]> \u{1b}[31mred\u{1b}[0m \u{0}nul \u{7}bell \r\n tab\tµs \u{FFFE}\u{FFFF} ok";

/// A run that failed part-way with a hostile error, and hostile notes.
pub(crate) fn failed() -> Report {
    let mut r = run(0);
    r.complete = false;
    r.ended_by = EndedBy::Failed;
    r.error = Some(format!("the link to the probe on /dev/ttyACM0 closed: {HOSTILE}"));
    r.notes = vec![HOSTILE.into(), "a plain note".into()];
    r
}

/// A run stopped by a signal (Ctrl-C) before its count.
pub(crate) fn interrupted() -> Report {
    let mut r = run(0);
    r.complete = false;
    r.ended_by = EndedBy::Interrupted;
    r.probe_elapsed_ns = None;
    r
}
