//! Stimulus bytes written by the top half (`LoopConfig::top_half_bytes`):
//! the wake-up interrupt writes a byte at its tick and the engine task runs
//! once a sample, for the answer. The fears: a stimulus the engine hears
//! of too late to ask for the next one in time (answers later than the
//! interval, or none), a byte the transmitter refuses, a start-bit capture
//! or a write that wakes the engine for nothing, and timing that moves.

use super::*;

/// The Nucleo's loop with or without the top half's bytes.
fn nucleo(top_half: bool) -> Sim {
    let cfg = LoopConfig { top_half_bytes: top_half, ..boards::nucleo_f411re::LOOP };
    let mut s = Sim::new(cfg, nucleo_board(), 1_000_000);
    s.hw.uart_response_line();
    s.hw.wires.tx_capture = true;
    s
}

fn stimulus_ticks(s: &Sim) -> Vec<u64> {
    s.host.samples.iter().map(|x| x.stimulus_tick).collect()
}

/// With the wire: every latency exact, every stimulus tick its own start
/// bit, the stimuli exactly an interval apart, and one engine pass a
/// sample (the answer's), where the engine-task writes took four (the
/// wake-up, the TX start bit, the answer's start bit, its byte).
#[test]
fn the_top_half_writes_each_byte_and_the_engine_runs_once_a_sample() {
    let n = 300;
    let mut passes = [0; 2];
    for (i, top_half) in [false, true].into_iter().enumerate() {
        let mut s = nucleo(top_half);
        s.hw.target = Target::UartEcho { latency: 100 * US };
        let st = s.measure(echo(Mode::UartEcho, Stimulus::Identified, n), 2_000 * MS);
        assert_eq!((st.taken, st.timeouts), (n, 0), "{st:?}");
        assert!(quiet(&st.anomalies), "{:?}", st.anomalies);
        assert_eq!(st.anomalies.slipped, 0, "{:?}", st.anomalies);
        assert!(s.latencies().iter().all(|&l| l == Some((100 * US) as u32)), "{:?}", s.latencies());
        let starts: Vec<u64> = s.hw.sent.iter().map(|&(t, _)| t).collect();
        let ticks = stimulus_ticks(&s);
        assert_eq!(ticks, starts);
        assert!(ticks.windows(2).all(|w| w[1] - w[0] == MS), "top half {top_half}: {ticks:?}");
        assert_eq!(s.e.totals().anomalies.soft_stimuli, 0);
        passes[i] = s.passes;
    }
    assert!(passes[0] >= 3 * n, "engine-task writes: {} passes for {n} samples", passes[0]);
    // One a sample, and a few for the run's start, heartbeats and end.
    assert!(passes[1] <= n + n / 20 + 20, "top half: {} passes for {n} samples", passes[1]);
}

/// The byte goes out at its tick: the start bit comes the interrupt's
/// latency and the transmitter's start after the schedule, not an engine
/// pass later. The first stimulus is asked for one arm lead after the
/// start; the rest follow at the interval.
#[test]
fn a_top_half_byte_starts_within_the_interrupt_latency_of_its_tick() {
    let lead = u64::from(boards::nucleo_f411re::ARM_LEAD_TICKS);
    let mut behind = [Vec::new(), Vec::new()];
    for (i, top_half) in [false, true].into_iter().enumerate() {
        let mut s = nucleo(top_half);
        s.hw.target = Target::UartEcho { latency: 100 * US };
        s.task_delay = 30 * US;
        s.host_says(&HostMsg::Configure(echo(Mode::UartEcho, Stimulus::Identified, 50)));
        // The schedule: the first stimulus an arm lead after the Start's
        // `now` (read a register access or two after this), then one a
        // millisecond.
        let start = s.hw.t;
        s.host_says(&HostMsg::Start);
        s.run_until(start + 200 * MS);
        let st = s.host.stopped.expect("the run ends");
        assert_eq!((st.taken, st.timeouts), (50, 0), "{st:?}");
        assert!(s.latencies().iter().all(|&l| l == Some((100 * US) as u32)), "{:?}", s.latencies());
        let ticks = stimulus_ticks(&s);
        assert!(ticks.windows(2).all(|w| w[1] - w[0] == MS), "top half {top_half}: {ticks:?}");
        behind[i] = ticks.iter().enumerate().map(|(k, &t)| t - (start + lead + k as u64 * MS)).collect();
    }
    // Written from the interrupt: within its latency (40 ticks), a dozen
    // register accesses (2 each) and the transmitter's start (16) of the
    // tick; from the engine task, its 30 µs delay later at least.
    assert!(behind[1].iter().all(|&b| b <= 40 + 24 + 16 + 10), "top half: {:?}", behind[1]);
    assert!(behind[0].iter().all(|&b| b >= 30 * US), "engine task: {:?}", behind[0]);
}

/// Answers later than the interval (up to two and a half), queued behind
/// a slow one, and missing: the engine hears of each stimulus in time to
/// ask for the next (no slip, the stimuli exactly an interval apart), every
/// answer is credited to its own stimulus, and a missing one times out.
#[test]
fn answers_later_than_the_interval_keep_the_schedule() {
    // Start bits at k ms + latency: in order, and at least a byte (87 µs)
    // apart, as one target line can carry them.
    const SCRIPT: [Option<u64>; 5] =
        [Some(100 * US), Some(2_500 * US), Some(1_600 * US), Some(700 * US), None];
    let n = 200;
    let mut s = nucleo(true);
    s.hw.target = Target::UartEcho { latency: 0 };
    s.hw.script = Some(&SCRIPT);
    let mut c = echo(Mode::UartEcho, Stimulus::Identified, n);
    c.timeout_ticks = (5 * MS) as u32;
    let st = s.measure(c, 2_000 * MS);
    assert_eq!(st.taken, n, "{st:?}");
    assert_eq!(st.timeouts, n / 5, "{st:?}");
    assert!(quiet(&st.anomalies), "{:?}", st.anomalies);
    assert_eq!(st.anomalies.slipped, 0, "{:?}", st.anomalies);
    let want: Vec<Option<u32>> = (0..n as usize).map(|k| SCRIPT[k % 5].map(|l| l as u32)).collect();
    assert_eq!(s.latencies(), want);
    let ticks = stimulus_ticks(&s);
    assert!(ticks.windows(2).all(|w| w[1] - w[0] == MS), "{ticks:?}");
    // Fewer passes than samples plus the wake-ups it needed: one a sample
    // at most for the answers, and one for each stimulus whose answer
    // came after the next was due.
    assert!(s.passes <= 2 * n + 20, "{} passes", s.passes);
}

/// Stimuli every 50 µs, faster than a byte (87 µs): the top half finds
/// the transmitter full and the loop writes the byte itself a bit time
/// later; each byte's tick is still its own start bit.
#[test]
fn a_top_half_byte_the_transmitter_refuses_is_sent_again() {
    let mut s = nucleo(true);
    s.hw.target = Target::UartEcho { latency: 150 * US };
    let mut c = echo(Mode::UartEcho, Stimulus::Identified, 60);
    c.interval_ticks = (50 * US) as u32;
    c.timeout_ticks = (400 * US) as u32;
    let st = s.measure(c, 100 * MS);
    assert_eq!((st.taken, st.timeouts), (60, 0), "{st:?}");
    assert!(quiet(&st.anomalies), "{:?}", st.anomalies);
    assert!(s.latencies().iter().all(|&l| l == Some((150 * US) as u32)), "{:?}", s.latencies());
    let starts: Vec<u64> = s.hw.sent.iter().map(|&(t, _)| t).collect();
    assert_eq!(stimulus_ticks(&s), starts);
    // Back to back on the line: the line, not the loop, set the pace.
    assert!(starts.windows(2).all(|w| w[1] - w[0] <= 10 * BIT + 4 * BIT), "{starts:?}");
}

/// Without the TX start-bit wire: the software tick of each top-half
/// write, every answer timed from it, each counted soft.
#[test]
fn without_the_wire_a_top_half_byte_has_its_write_tick() {
    let mut s = nucleo(true);
    s.hw.wires.tx_capture = false;
    s.hw.target = Target::UartEcho { latency: 85 * US };
    let n = 40;
    let st = s.measure(echo(Mode::UartEcho, Stimulus::Identified, n), 100 * MS);
    assert_eq!((st.taken, st.timeouts), (n, 0), "{st:?}");
    assert!(quiet(&st.anomalies), "{:?}", st.anomalies);
    for (l, &(start, _)) in s.latencies().iter().zip(&s.hw.sent) {
        let l = u64::from(l.unwrap());
        assert!((85 * US..85 * US + 60).contains(&l), "latency {l}, start bit at {start}");
    }
    assert_eq!(s.e.totals().anomalies.soft_stimuli, n);
}

/// The transmitter refuses the top half's write (it has no room: the
/// fake refuses the 5th and the 12th writes): the engine task runs at once
/// and writes the byte a bit time later, not at its next deadline (most
/// of an interval away), and its tick is its own start bit.
#[test]
fn a_byte_the_transmitter_refuses_is_written_a_bit_time_later() {
    let mut s = nucleo(true);
    s.hw.target = Target::UartEcho { latency: 100 * US };
    s.hw.refuse = &[4, 11];
    let st = s.measure(echo(Mode::UartEcho, Stimulus::Identified, 20), 100 * MS);
    assert_eq!((st.taken, st.timeouts), (20, 0), "{st:?}");
    assert!(s.latencies().iter().all(|&l| l == Some((100 * US) as u32)), "{:?}", s.latencies());
    let starts: Vec<u64> = s.hw.sent.iter().map(|&(t, _)| t).collect();
    assert_eq!(stimulus_ticks(&s), starts);
    let gaps: Vec<u64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    for (k, &g) in gaps.iter().enumerate() {
        // The refused byte is the 5th stimulus (k = 4) and the 11th (the
        // 12th write, the retry being one): an interrupt's latency and a
        // retry (a bit time) late; the one after it on time again.
        let late = if k == 3 || k == 9 { g - MS } else { MS.abs_diff(g) };
        assert!(late <= BIT + US, "gap {k}: {g} ticks ({gaps:?})");
    }
    assert!(gaps[3] > MS && gaps[9] > MS, "{gaps:?}");
}

/// Stimuli 45 µs apart on a 921 600 Bd line: the engine must hear of each
/// byte within 5 µs of its write (two arm leads before the next), so the
/// write pends it at once; setting the compare for 5 µs later instead
/// cost a fourth timer interrupt a sample (the write, both start bits,
/// and that one).
#[test]
fn stimuli_a_few_leads_apart_run_the_engine_from_the_write() {
    let cfg = LoopConfig { baud: 921_600, top_half_bytes: true, ..boards::nucleo_f411re::LOOP };
    let mut s = Sim::new(cfg, nucleo_board(), 1_000_000);
    s.hw.uart_response_line();
    s.hw.wires.tx_capture = true;
    s.hw.bit = cfg.bit_ticks();
    s.hw.target = Target::UartEcho { latency: 150 * US };
    let n = 300;
    let mut c = echo(Mode::UartEcho, Stimulus::Identified, n);
    c.interval_ticks = (45 * US) as u32;
    c.timeout_ticks = (400 * US) as u32;
    let st = s.measure(c, 100 * MS);
    assert_eq!((st.taken, st.timeouts), (n, 0), "{st:?}");
    assert!(quiet(&st.anomalies), "{:?}", st.anomalies);
    assert!(s.latencies().iter().all(|&l| l == Some((150 * US) as u32)), "{:?}", s.latencies());
    assert_eq!(st.anomalies.slipped, 0, "{:?}", st.anomalies);
    assert!(s.timer_irqs <= 3 * n + n / 10, "{} timer interrupts for {n} samples", s.timer_irqs);
}

/// A noisy response line: 40 falling edges between each answer and the
/// next stimulus, start bits without bytes. Quiet, their captures do not
/// run the engine task, but the log (16 events) must not overflow: the
/// front runs it once the log is half full, so nothing is lost and every
/// answer is still exact.
#[test]
fn start_bits_without_bytes_do_not_overflow_the_log() {
    let mut s = nucleo(true);
    s.hw.target = Target::UartEcho { latency: 100 * US };
    let n = 20;
    let first = s.hw.t;
    for k in 0..(n + 30) * 40 {
        // 300 to 700 µs after each millisecond's start: clear of the
        // stimulus (at its arm lead) and of its echo (100 µs, 87 µs long).
        let at = first + (k / 40) * MS + 300 * US + (k % 40) * 10 * US;
        s.hw.edge_at(Pin::Response, at, false);
        s.hw.edge_at(Pin::Response, at + 2 * US, true);
    }
    let st = s.measure(echo(Mode::UartEcho, Stimulus::Identified, n), 100 * MS);
    assert_eq!(st.taken, n, "{st:?}");
    assert_eq!(s.lp.stats().lost_events, 0, "{:?}", s.lp.stats());
    assert_eq!(st.anomalies.overcaptures, 0, "{:?}", st.anomalies);
    assert!(s.latencies().iter().all(|&l| l == Some((100 * US) as u32)), "{:?}", s.latencies());
}

/// Periodic over the target's UART: each byte's start bit is logged
/// without a pass, and its byte's receive interrupt runs the engine task,
/// once an edge; each edge its start bit, exactly. The engine task ran
/// twice an edge before (the capture's interrupt, then the byte's).
#[test]
fn periodic_over_uart_runs_the_engine_once_an_edge() {
    let mut passes = [0; 2];
    for (i, top_half) in [false, true].into_iter().enumerate() {
        let mut s = nucleo(top_half);
        periodic_uart_run(&mut s, 230, 200);
        passes[i] = s.passes;
    }
    assert!(passes[0] >= 400, "engine-task writes: {} passes for 200 edges", passes[0]);
    assert!(passes[1] <= 200 + 20, "top half: {} passes for 200 edges", passes[1]);
}
