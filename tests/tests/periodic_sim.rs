//! The periodic simulation proof: a target whose clock runs ±500 ppm off the
//! probe's and drifts ±2 ppm over the run, with a known wake-up delay per
//! cycle (a body, a tail longer than a period, missed periods), through the
//! real engine on a simulated 32-bit 100 MHz counter, the real framing, and
//! the host's own ingest, fit and report.
//!
//! Asserted: every cycle's delay within 1 tick of the truth (so every
//! percentile), the offset within 0.1 ppm, the drift's range, missed
//! periods counted exactly; and the naive analysis of the same edges (the
//! nominal schedule) off by orders of magnitude, so a report that bypassed
//! the fit would fail here.
//!
//! `LATPROBE_PERIODIC_CYCLES` sets the number of periods (default 10⁷: about
//! a minute per clock in a debug build on the 2-core CI machine; the two
//! run in parallel).

use std::cell::RefCell;
use std::rc::Rc;

use latprobe::analysis::periodic::SpillRecord;
use latprobe::link::{Deframer, Incoming};
use latprobe::model::Ending;
use latprobe::model::{EdgeArg, EndedBy, ModeArg, Request};
use latprobe::report;
use latprobe::session::RunState;
use latprobe_firmware::TimerBits;
use latprobe_protocol::{Config, HostMsg, Mode, Stimulus, StopReason, PROTOCOL_VERSION};
use latprobe_tests::sim::{ClockedTarget, Drain, Sim, SimParams, Sink, Target};
use latprobe_tests::stats::nearest_rank;

const HZ: u32 = 100_000_000;
/// 1 ms in ticks.
const PERIOD: u64 = 100_000;

fn cycles() -> u64 {
    std::env::var("LATPROBE_PERIODIC_CYCLES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000_000)
}

struct Outcome {
    sim: Sim,
    state: Rc<RefCell<RunState>>,
    deframer_bad: u64,
    target: ClockedTarget,
}

fn run(ppm: f64, seed: u64, n: u64) -> Outcome {
    let target = ClockedTarget {
        first: (1 << 32) - 30_000_000,
        nominal: PERIOD as f64,
        ppm,
        drift_ppm: 2.0,
        // One swing over 10⁷ periods (2.8 h): a shorter run sees part of it.
        drift_cycles: 1e7,
        floor: 4_000,
        catch_up: 200,
    };
    let p = SimParams {
        bits: TimerBits::B32,
        hz: HZ,
        start: (1 << 32) - 50_000_000,
        seed,
        isr_delay: 2_000,
        ovf_delay: 500_000_000,
        target: Target::Clocked(target.clone()),
        drain: Drain::Fast,
        byte_lag: 0,
        arm_lead: 0,
    };
    // The engine counts edges: stop after as many as the first `n` cycles
    // will have (the missed ones have none; about 20 per million).
    let edges = n - n / 50_000;
    let config = Config {
        mode: Mode::Periodic,
        interval_ticks: PERIOD as u32,
        dither_ticks: 0,
        timeout_ticks: 8 * PERIOD as u32,
        guard_ticks: 0,
        count: Some(edges),
        seed: 0,
        stimulus: Stimulus::None(latprobe_protocol::ResponseLine::Uart),
        trigger_ticks: 0,
    };
    let mut sim = Sim::new(p);
    let state = Rc::new(RefCell::new(RunState::new(1_000, true)));
    state.borrow_mut().keep_cycles = true;
    let mut deframer = Deframer::new();
    let st = state.clone();
    sim.sink = Some(Sink(Box::new(move |bytes| {
        let mut s = st.borrow_mut();
        deframer.feed(bytes, |inc: Incoming<'_>| s.on_incoming(inc));
        s.stopped.is_some()
    })));
    let t0 = sim.now();
    sim.host_send(t0 + 1_000, &HostMsg::Hello { protocol_version: PROTOCOL_VERSION });
    sim.host_send(t0 + 2_000, &HostMsg::Configure(config));
    sim.host_send(t0 + 3_000, &HostMsg::Start);
    sim.run_to_stop(40 * n + 1_000_000);
    Outcome { sim, state, deframer_bad: 0, target }
}

fn check(o: &Outcome, ppm: f64) {
    let mut state = o.state.borrow_mut();
    state.finalize();
    let stopped = state.stopped.expect("Stopped");
    assert_eq!(stopped.reason, StopReason::CountReached);
    assert_eq!((stopped.dropped, o.deframer_bad), (0, 0));
    let truth = &o.sim.clocked;
    let a = state.analysis.as_mut().expect("analysis");
    let fit = a.fit.as_ref().expect("periodic fit");
    assert_eq!((fit.lost, fit.conflicts, fit.out_of_order), (0, 0, 0));
    let _ = fit;
    let edges = stopped.taken;

    // Cycle by cycle, against the truth (the edges the probe took cover
    // the truth up to the last edge).
    a.spill.as_mut().expect("spill").finish().expect("spill written");
    let a = state.analysis.as_ref().expect("analysis");
    let fit = a.fit.as_ref().expect("periodic fit");
    let mut measured: Vec<u64> = Vec::with_capacity(truth.delay.len());
    let mut truth_ns: Vec<u64> = Vec::with_capacity(truth.delay.len());
    let (mut missed, mut cycles, mut worst_err) = (0u64, 0u64, 0i64);
    // A run of missed cycles is one record: expanded here (they are short).
    let records = a.spill.as_ref().expect("spill").records().flat_map(|r| match r {
        SpillRecord::Edge { cycle, delay_ns } => vec![(cycle, Some(delay_ns))],
        SpillRecord::Missed { first, count } => (first..first + count).map(|c| (c, None)).collect(),
    });
    for (c, d) in records {
        let t = truth.delay[c as usize];
        assert_eq!(c, cycles, "cycles in order, none skipped");
        cycles += 1;
        match d {
            None => {
                assert_eq!(t, u32::MAX, "cycle {c}: counted missed, but it had an edge");
                missed += 1;
                measured.push(u64::MAX);
                truth_ns.push(u64::MAX);
            }
            Some(ns) => {
                assert_ne!(t, u32::MAX, "cycle {c}: a missed period was given an edge");
                let tns = u64::from(t) * 10;
                let err = ns as i64 - tns as i64;
                worst_err = worst_err.max(err.abs());
                // Within two ticks (20 ns) cycle by cycle, plus the ns
                // rounding (a capture floors the edge to its tick, and the
                // envelope's slope over a block is good to a fraction of a
                // tick); the percentiles below are held to one tick.
                assert!(err.abs() <= 21, "cycle {c}: {ns} ns measured, truth {tns} ns");
                measured.push(ns);
                truth_ns.push(tns);
            }
        }
    }
    let truth_missed = truth.delay[..cycles as usize].iter().filter(|&&d| d == u32::MAX).count() as u64;
    assert_eq!(cycles - missed, edges, "every edge is a cycle");
    assert_eq!(missed, truth_missed, "missed periods counted exactly");
    assert_eq!(fit.missed, truth_missed);
    assert!(truth_missed > 0, "the run must have missed periods");
    let late = truth.delay.iter().filter(|&&d| d != u32::MAX && u64::from(d) > PERIOD).count();
    assert!(late > 0, "the run must have delays longer than a period");

    // Every percentile within a tick (missed periods ranked above all).
    measured.sort_unstable();
    truth_ns.sort_unstable();
    for per_million in [0, 500_000, 900_000, 990_000, 999_000, 999_900, 999_990] {
        let m = nearest_rank(&measured, per_million).unwrap();
        let t = nearest_rank(&truth_ns, per_million).unwrap();
        assert!(m.abs_diff(t) <= 11, "p{}: {m} vs truth {t}", per_million as f64 / 1e4);
    }

    // The offset, over the run: the mean period from the truth's deadlines.
    let span = truth.last_deadline - truth.first_deadline;
    let mean_period = span / (truth.delay.len() - 1) as f64;
    let true_ppm = (PERIOD as f64 / mean_period - 1.0) * 1e6;
    let got = fit.offset_ppm().expect("offset");
    assert!((got - true_ppm).abs() < 0.1, "offset {got} ppm, truth {true_ppm}");
    assert!((true_ppm - ppm).abs() < 2.0, "{true_ppm}");
    // The drift: the blocks swing from ppm − 2 to ppm + 2.
    let d = fit.drift.clone();
    assert!((d.min_ppm - truth.ppm_min).abs() < 0.1, "min {} vs {}", d.min_ppm, truth.ppm_min);
    assert!((d.max_ppm - truth.ppm_max).abs() < 0.1, "max {} vs {}", d.max_ppm, truth.ppm_max);
    assert!((d.first_ppm - o.target.ppm_at(1_024.0)).abs() < 0.1, "first block {}", d.first_ppm);

    // The report: its percentiles are the fitted delays (HdrHistogram, 0.1 %).
    let req = Request {
        mode: ModeArg::Periodic,
        interval_ns: 1_000_000,
        dither_ns: 0,
        timeout_ns: None,
        guard_ns: None,
        count: Some(edges),
        duration_ns: None,
        seed: 0,
        byte: None,
        edge: EdgeArg::Rising,
        line: None,
        calibration: None,
        trigger_ns: None,
    };
    let ctx = latprobe::model::RunContext {
        tool_version: "test".into(),
        source: "sim".into(),
        started_at: "2025-01-01T00:00:00Z".into(),
        request: req,
        histfile_max_us: 1_000,
        target: None,
        notes: Vec::new(),
        started_unix_ns: None,
        limits: None,
        command_line: None,
        loads: Vec::new(),
        phases: Vec::new(),
    };
    let end = Ending {
        ended_by: EndedBy::CountReached,
        complete: true,
        error: None,
        ended_at: "2025-01-01T03:00:00Z".into(),
        replayed_from: None,
    };
    let r = report::build(&ctx, &state, 0, end);
    let l = r.latency_ns.as_ref().expect("latency");
    assert_eq!((l.measured, l.censored), (edges, truth_missed));
    let p = r.periodic.as_ref().expect("periodic");
    assert_eq!(p.missed_periods, truth_missed);
    let t50 = nearest_rank(&truth_ns, 500_000).unwrap();
    let t99 = nearest_rank(&truth_ns, 990_000).unwrap();
    let r50 = l.p50.unwrap();
    let r99 = l.p99.unwrap();
    assert!(r50.abs_diff(t50) <= 11 + t50 / 1000, "report p50 {r50} vs truth {t50}");
    assert!(r99.abs_diff(t99) <= 11 + t99 / 1000, "report p99 {r99} vs truth {t99}");
    // The naive analysis of the same edges misses by orders of magnitude:
    // the nominal schedule is mostly clock offset.
    let naive = p.naive.as_ref().expect("naive");
    assert!(naive.p50 > 1_000 * (t50 + 10), "naive p50 {} vs truth {t50}", naive.p50);
    assert!(naive.p99 > 100 * t99, "naive p99 {} vs truth {t99}", naive.p99);
    let f = p.fit.as_ref().expect("fit");
    assert!((f.offset_ppm - true_ppm).abs() < 0.1);
    eprintln!(
        "{ppm:+} ppm, {cycles} cycles: offset {got:.4} ppm (truth {true_ppm:.4}), drift {:.3}..{:.3} \
         (truth {:.3}..{:.3}), {missed} missed, {late} later than a period, worst cycle error {worst_err} ns, \
         p50 {r50} p99 {r99} ns; naive p50 {} ns",
        d.min_ppm, d.max_ppm, truth.ppm_min, truth.ppm_max, naive.p50
    );
}

#[test]
fn a_fast_target_clock_is_fitted_out() {
    let n = cycles();
    let o = run(500.0, 11, n);
    check(&o, 500.0);
}

#[test]
fn a_slow_target_clock_is_fitted_out() {
    let n = cycles();
    let o = run(-500.0, 12, n);
    check(&o, -500.0);
}
