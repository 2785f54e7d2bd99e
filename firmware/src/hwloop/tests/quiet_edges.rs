//! Edge stimuli with a quiet front (`LoopConfig::quiet_edges`): the
//! stimulus compare's match is logged by the timer's interrupt and the
//! engine hears of it with the answer. The fears: an engine that hears of
//! a stimulus too late to plan the next in time (answers later than the
//! interval, or none), a timeout or a slip that comes out differently, an
//! answer left in the log until a deadline, and a pass saved that changes
//! what the host is told.

use std::format;

use super::*;

/// The Nucleo's loop with or without quiet edges.
fn nucleo(quiet_edges: bool) -> Sim {
    let cfg = LoopConfig { quiet_edges, ..boards::nucleo_f411re::LOOP };
    Sim::new(cfg, nucleo_board(), 1_000_000)
}

fn gpio(edge: Edge, n: u64, interval: u64, timeout: u64) -> Config {
    let mut c = echo(Mode::GpioEcho, Stimulus::Edge(edge), n);
    c.interval_ticks = interval as u32;
    c.timeout_ticks = timeout as u32;
    c
}

/// A 50 µs echo at 1 ms: every latency exact, the stimuli exactly an
/// interval apart, and one engine pass a sample (the answer's), where the
/// loop before took two (the stimulus's match, then the answer). The
/// answer runs the engine task at once: its capture-to-sample cost is the
/// interrupt's latency and the pass, not a wait for the next deadline.
#[test]
fn quiet_edges_run_the_engine_once_a_sample_and_at_the_answer() {
    let n = 300;
    let mut passes = [0; 2];
    for (i, q) in [false, true].into_iter().enumerate() {
        let mut s = nucleo(q);
        s.hw.target = Target::GpioEcho { edge: Edge::Rising, latency: 50 * US, pulse: Some(20 * US) };
        let st = s.measure(gpio(Edge::Rising, n, MS, 500 * US), 2_000 * MS);
        assert_eq!((st.taken, st.timeouts), (n, 0), "quiet {q}: {st:?}");
        assert!(quiet(&st.anomalies), "quiet {q}: {:?}", st.anomalies);
        assert_eq!(st.anomalies.slipped, 0, "quiet {q}: {:?}", st.anomalies);
        assert!(s.latencies().iter().all(|&l| l == Some((50 * US) as u32)), "{:?}", s.latencies());
        let ticks: Vec<u64> = s.host.samples.iter().map(|x| x.stimulus_tick).collect();
        assert!(ticks.windows(2).all(|w| w[1] - w[0] == MS), "quiet {q}: {ticks:?}");
        // From the answer's latch to its sample queued: the interrupt's
        // 40 ticks and the pass's register accesses, well under 5 µs. A
        // front that left the answer to the engine's deadline (the
        // timeout, 500 µs on) would show that wait here.
        let cost = s.lp.stats().capture_cost_max;
        assert!(u64::from(cost) < 5 * US, "quiet {q}: capture to sample {cost} ticks");
        passes[i] = s.passes;
    }
    assert!(passes[0] >= 2 * n, "the match runs the engine: {} passes for {n} samples", passes[0]);
    // One a sample, and a few for the run's start, heartbeats and end.
    assert!(passes[1] <= n + n / 20 + 20, "quiet edges: {} passes for {n} samples", passes[1]);
}

/// What the host is told does not change with quiet edges, on a schedule
/// made to break it: answers at once, a tick after the stimulus, just
/// inside and just past the timeout, later than the interval (one in
/// flight: the next stimulus waits, a slip), none at all; for each edge
/// kind. With the engine task prompt, everything is the same to the tick:
/// every sample, every anomaly, every edge of the stimulus pin. With the
/// engine task 30 µs late, the latencies and timeouts are the same, and
/// the stimuli after a late answer slip no more: quiet, the engine also
/// wakes two arm leads before the next stimulus is due, and may plan it
/// before the late answer's own pass would.
#[test]
fn quiet_edges_change_nothing_the_host_sees() {
    const I: u64 = 200 * US;
    const T: u64 = 180 * US;
    static SCRIPT: [Option<u64>; 12] = [
        Some(0),
        Some(1),
        Some(5 * US),
        None,
        Some(T - 1),
        Some(T + 1),
        Some(150 * US),
        Some(I + 30 * US),
        Some(3 * US),
        None,
        None,
        Some(2 * I),
    ];
    for edge in [Edge::Rising, Edge::Falling, Edge::Toggle] {
        for task_delay in [0, 30 * US] {
            let mut seen = Vec::new();
            for q in [false, true] {
                let mut s = nucleo(q);
                s.task_delay = task_delay;
                if edge == Edge::Falling {
                    s.hw.uart_response_line();
                }
                s.hw.target = Target::GpioEcho { edge, latency: 0, pulse: Some(10 * US) };
                s.hw.script = Some(&SCRIPT);
                let n = 4 * SCRIPT.len() as u64;
                let st = s.measure(gpio(edge, n, I, T), 200 * MS);
                // A count is of scheduled instants: the samples and the
                // instants their waits skipped.
                let omitted: u64 = s.host.samples.iter().map(|x| u64::from(x.omitted)).sum();
                assert_eq!(st.taken + omitted, n, "{edge:?} delay {task_delay} quiet {q}: {st:?}");
                seen.push((s.host.samples.clone(), st.anomalies, st.timeouts, s.hw.pin_edges.clone()));
            }
            let (off, on) = (&seen[0], &seen[1]);
            let case = format!("{edge:?}, the engine task {task_delay} ticks late");
            assert!(off.2 >= 16, "{case}: the schedule's timeouts happened ({})", off.2);
            assert!(off.1.slipped > 0, "{case}: the late answers made slips ({:?})", off.1);
            if task_delay == 0 {
                assert_eq!(on.0, off.0, "{case}: the samples");
                assert_eq!(on.1, off.1, "{case}: the anomalies");
                assert_eq!(on.3, off.3, "{case}: the stimulus pin's edges");
            } else {
                let outcomes = |v: &[Sample]| v.iter().map(|x| (x.seq, x.outcome)).collect::<Vec<_>>();
                assert_eq!(outcomes(&on.0), outcomes(&off.0), "{case}: the latencies");
                let no_slips =
                    |a: &Anomalies| Anomalies { slipped: 0, slip_total_ticks: 0, slip_max_ticks: 0, ..*a };
                assert_eq!(no_slips(&on.1), no_slips(&off.1), "{case}: the anomalies but slips");
                assert!(
                    on.1.slip_total_ticks <= off.1.slip_total_ticks,
                    "{case}: {:?} against {:?}",
                    on.1,
                    off.1
                );
            }
            assert_eq!(on.2, off.2, "{case}: the timeouts");
        }
    }
}

/// No answer ever: the engine hears of each stimulus at its deadline
/// instead (before the timeout, and two arm leads before the next is due),
/// so every sample times out, the stimuli keep their interval, and the
/// engine still runs about once a sample, not once per match and timeout.
#[test]
fn quiet_edges_without_answers_keep_the_schedule() {
    let n = 200;
    let mut s = nucleo(true);
    let st = s.measure(gpio(Edge::Rising, n, MS, 500 * US), 2_000 * MS);
    assert_eq!((st.taken, st.timeouts), (n, n), "{st:?}");
    assert_eq!(st.anomalies.slipped, 0, "{:?}", st.anomalies);
    let ticks: Vec<u64> = s.host.samples.iter().map(|x| x.stimulus_tick).collect();
    assert!(ticks.windows(2).all(|w| w[1] - w[0] == MS), "{ticks:?}");
    assert!(s.passes <= 2 * n + 20, "{} passes for {n} samples", s.passes);
}
