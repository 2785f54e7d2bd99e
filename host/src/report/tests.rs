//! The report's unit tests.
use super::*;
use crate::link::Incoming;
use crate::model::{EdgeArg, Request};
use latprobe_protocol::{
    Capabilities, Config, Outcome, ProbeInfo, ProbeMsg, Sample, SampleBatchBuilder, StopReason, Stopped,
};

/// A run folded from real messages: 1 GHz timer, 1 ms interval, a
/// 200 µs histogram, timeout 8 ms; `outcome(seq)` for 300 samples.
pub(super) fn run_of(outcome: impl Fn(u64) -> Outcome) -> Report {
    run_with(&[], outcome)
}

/// [`run_of`], with `after_hello` arriving right after the probe's Hello
/// (where a probe's boot note comes).
fn run_with(after_hello: &[ProbeMsg<'_>], outcome: impl Fn(u64) -> Outcome) -> Report {
    run_waiting(after_hello, outcome, |_| (0, 0))
}

/// [`run_with`], stimulus `seq` sent `wait(seq).0` ns after its planned
/// instant `seq` ms (later ones keep the schedule it re-anchored at), with
/// `wait(seq).1` instants before it that got no stimulus.
fn run_waiting(
    after_hello: &[ProbeMsg<'_>],
    outcome: impl Fn(u64) -> Outcome,
    wait: impl Fn(u64) -> (u32, u32),
) -> Report {
    // A count is of scheduled instants: the 300 stimuli and the instants
    // their waits left without one.
    let instants = 300 + (0..300).map(|seq| u64::from(wait(seq).1)).sum::<u64>();
    let request = Request {
        mode: ModeArg::UartEcho,
        interval_ns: 1_000_000,
        dither_ns: 0,
        timeout_ns: None,
        guard_ns: None,
        count: Some(instants),
        duration_ns: None,
        seed: 1,
        byte: None,
        edge: EdgeArg::Rising,
        line: None,
        calibration: None,
        trigger_ns: None,
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
        loads: Vec::new(),
        phases: Vec::new(),
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
    for &m in after_hello {
        state.on_incoming(Incoming::Message(m));
    }
    state.on_incoming(Incoming::Message(ProbeMsg::Configured(config)));
    state.on_incoming(Incoming::Message(ProbeMsg::Started { start_tick: 0, first_seq: 0 }));
    let mut b = SampleBatchBuilder::new(config.interval_ticks, 64);
    let mut shift = 0;
    for seq in 0..300 {
        let (late_ticks, omitted) = wait(seq);
        shift += u64::from(late_ticks);
        let s = Sample {
            seq,
            stimulus_tick: seq * 1_000_000 + shift,
            outcome: outcome(seq),
            triggered: false,
            late_ticks,
            omitted,
        };
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
    // cyclictest's line keeps Max a number (the largest measured) and
    // says what it is; the censored max is said on its own line.
    assert!(s.contains("Max:     300  (µs; C counts every sample, Avg and Max over the 290 measured, 10 above the timeout)"), "{s}");
    assert!(s.contains("10 of 300 samples timed out (>8000.00 µs): percentiles from p99 up"), "{s}");
    // A run without timeouts has nothing censored anywhere.
    let clean = run_of(|seq| Outcome::Response(10_000 + seq as u32));
    let l = clean.latency_ns.as_ref().unwrap();
    assert_eq!((l.censored, l.max, l.max_measured), (0, Some(10_299), Some(10_299)));
    let s = text::summary(&clean);
    assert!(!s.contains('>') && !s.contains("timed out"), "{s}");
    assert!(!histfile::render(&clean).contains("censored"));
}

#[test]
fn a_probe_warning_after_its_hello_is_a_note_of_the_report_and_its_text() {
    use latprobe_protocol::{LogLevel, LogLine};
    // The firmware's boot note after a watchdog reset (Engine::set_boot_note).
    let note = "probe reset by its watchdog: its engine stalled for about 1 s; a run it was in was cut short";
    let log = |level, text| ProbeMsg::Log(LogLine { level, tick: 0, text });
    let r = run_with(&[log(LogLevel::Warn, note), log(LogLevel::Info, "an info line")], mixed);
    let want = format!("the probe logged warning: {note}");
    assert!(r.notes.contains(&want), "{:?}", r.notes);
    assert!(!r.notes.iter().any(|n| n.contains("an info line")), "{:?}", r.notes);
    assert!(text::summary(&r).contains(&format!("note: {want}")), "{}", text::summary(&r));
}

/// Issue 42 §1 in the report: stimulus 100 stalls (a timeout), stimulus
/// 109 waits 12.01 ms for its identity and 12 instants get no stimulus.
/// The figures count 312 samples (the 12 instants timed to 109's answer,
/// 4 of them past the 8 ms timeout, and 109 itself from its plan: 12.03
/// ms), so p99 is censored; the service time beside it is the prompt
/// 20 µs answers; the summary says it in words.
#[test]
fn a_stall_s_instants_are_samples_and_the_service_time_stands_beside() {
    let r = run_waiting(
        &[],
        |seq| if seq == 100 { Outcome::Timeout } else { Outcome::Response(20_000) },
        |seq| if seq == 109 { (12_010_000, 12) } else { (0, 0) },
    );
    assert_eq!((r.counts.samples, r.counts.timeouts), (312, 6), "{:?}", r.counts);
    assert!(r.notes.iter().all(|n| !n.contains("disagrees")), "{:?}", r.notes);
    let l = r.latency_ns.as_ref().unwrap();
    // (The histogram's figures are within 0.1 % of the sample's.)
    assert!(l.p90.is_some_and(|v| v < 20_100) && l.p99.is_none(), "{l:?}");
    let sc = r.schedule.as_ref().expect("the views differ");
    assert_eq!((sc.waited, sc.omitted, sc.omitted_above_timeout), (1, 12, 4));
    assert_eq!((sc.omitted_min_ns, sc.longest_gap_ns), (Some(30_000), 12_010_000));
    assert_eq!((sc.service_ns.measured, sc.service_ns.censored), (299, 1));
    assert!(sc.service_ns.p99.is_some_and(|v| v < 20_100), "{:?}", sc.service_ns);
    let text = text::summary(&r);
    assert!(
        text.contains("no stimulus was sent for up to 12.01ms while the target was behind; those 12 scheduled instants are samples of 30us or more, 4 of them above 8ms (the timeout)"),
        "{text}"
    );
    assert!(
        text.contains("1 stimulus waited for the target and is timed from its planned instant"),
        "{text}"
    );
    assert!(
        text.contains("the target's service time (from each actual send, 300 stimuli): p50 20."),
        "{text}"
    );
    // The JSON keeps it, and reads back.
    let j = json::to_string(&r);
    let back: Report = serde_json::from_str(&j).unwrap();
    assert_eq!(back.schedule, r.schedule);
}
