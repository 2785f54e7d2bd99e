//! The trigger output on the fake timer: a compare on a 16-bit counter
//! reading the same ticks (the Nucleo's planned TIM3 CH1), armed at
//! stimulus + threshold + 1, disarmed by the answer's capture in the top
//! half. The races: an answer well before, just before (inside the
//! interrupt latency), at and just after the threshold; a timeout; a
//! threshold beyond the 16-bit counter's half period; a duplicated capture.

use super::*;

const THR: u64 = 200 * US;
const WIDTH: u64 = 10 * US;

fn trig_cfg() -> LoopConfig {
    LoopConfig { trigger: TriggerOut::Compare { bits: 16 }, ..boards::nucleo_f411re::LOOP }
}

fn trig_board() -> BoardInfo {
    let lc = boards::nucleo_f411re::LOOP;
    BoardInfo::new("fake-nucleo", HZ, TimerBits::B32, caps() | Capabilities::TRIGGER)
        .with_uart_echo_floor(lc.baud)
        .with_response_lag((2 * lc.byte_ticks()) as u32)
}

/// GPIO echo, one stimulus a millisecond, answers from `script`.
fn gpio_run(script: &'static [Option<u64>], thr: u64, interval: u64, timeout: u64) -> Sim {
    let mut s = Sim::new(trig_cfg(), trig_board(), 1_000_000);
    s.hw.target = Target::GpioEcho { edge: Edge::Rising, latency: 0, pulse: Some(20 * US) };
    s.hw.script = Some(script);
    let n = script.len() as u64;
    let mut c = echo(Mode::GpioEcho, Stimulus::Edge(Edge::Rising), n);
    c.interval_ticks = interval as u32;
    c.timeout_ticks = timeout as u32;
    c.trigger_ticks = thr as u32;
    let st = s.measure(c, (n + 5) * interval);
    assert_eq!(st.taken, n, "{st:?}");
    s
}

/// The rises of the trigger pin, each with its fall `WIDTH` later.
fn pulses(s: &Sim) -> Vec<u64> {
    let e = &s.hw.trigger_edges;
    assert_eq!(e.len() % 2, 0, "a pulse left high: {e:?}");
    e.chunks(2)
        .map(|p| {
            assert!(p[0].1 && !p[1].1, "{p:?}");
            assert_eq!(p[1].0 - p[0].0, WIDTH, "pulse width: {p:?}");
            p[0].0
        })
        .collect()
}

#[test]
fn the_pin_rises_by_the_compare_at_the_first_tick_past_the_threshold() {
    // Before by far (disarmed in time), at the threshold (in time), a tick
    // past it, well after, never (timeout at 500 µs).
    static SCRIPT: [Option<u64>; 5] =
        [Some(THR - 10 * US), Some(THR), Some(THR + 1), Some(THR + 50 * US), None];
    let s = gpio_run(&SCRIPT, THR, MS, 500 * US);
    let flags: Vec<bool> = s.host.samples.iter().map(|x| x.triggered).collect();
    let stims: Vec<u64> = s.host.samples.iter().map(|x| x.stimulus_tick).collect();
    // Latency == threshold: the answer latched (8 ticks after its edge)
    // and its interrupt (40 later) came after the match at THR + 1: the
    // pulse got out before the disarm, and the sample says so.
    assert_eq!(flags, [false, true, true, true, true], "{:?}", s.host.samples);
    assert_eq!(s.latencies()[1], Some(THR as u32), "timed exactly all the same");
    // Every pulse rose exactly at stimulus + threshold + 1, by the compare.
    let want: Vec<u64> = stims[1..].iter().map(|t| t + THR + 1).collect();
    assert_eq!(pulses(&s), want);
    assert_eq!(s.e.stats().triggers, 4);
}

#[test]
fn an_answer_more_than_the_interrupt_latency_before_the_match_disarms_it() {
    // The capture's interrupt runs 40 ticks after its latch, the latch 8
    // after the edge: an edge 100 ticks (1 µs) before the match is in time.
    static SCRIPT: [Option<u64>; 3] = [Some(THR - 100), Some(THR - 30), Some(THR - 100)];
    let s = gpio_run(&SCRIPT, THR, MS, 500 * US);
    let flags: Vec<bool> = s.host.samples.iter().map(|x| x.triggered).collect();
    // 30 ticks before: latch at -22, interrupt at +18: the pulse is out
    // (the bounded software disarm), logged before the answer, flagged.
    assert_eq!(flags, [false, true, false]);
    let stim1 = s.host.samples[1].stimulus_tick;
    assert_eq!(pulses(&s), [stim1 + THR + 1]);
    assert_eq!(s.e.stats().late_triggers, 0, "no pulse reported after its sample");
}

#[test]
fn a_threshold_past_the_16_bit_half_period_is_armed_on_a_wake_up() {
    // 1.5 ms is 150 000 ticks, beyond 2^15: armed later, still exact.
    static SCRIPT: [Option<u64>; 3] = [Some(100 * US), Some(2 * MS), None];
    let s = gpio_run(&SCRIPT, 1_500 * US, 5 * MS, 4 * MS);
    let flags: Vec<bool> = s.host.samples.iter().map(|x| x.triggered).collect();
    assert_eq!(flags, [false, true, true]);
    let stims: Vec<u64> = s.host.samples.iter().map(|x| x.stimulus_tick).collect();
    assert_eq!(pulses(&s), [stims[1] + 1_500 * US + 1, stims[2] + 1_500 * US + 1]);
}

#[test]
fn a_duplicated_capture_and_a_timeout_do_not_confuse_the_next_stimulus() {
    // A 20 µs answer pulse means two edges per answer (rising, then the
    // fall the Rising polarity ignores); a glitch latched twice is a
    // duplicate. Sample 1 times out; sample 2 is in time and clear.
    static SCRIPT: [Option<u64>; 3] = [Some(50 * US), None, Some(60 * US)];
    let mut s = Sim::new(trig_cfg(), trig_board(), 1_000_000);
    s.hw.target = Target::GpioEcho { edge: Edge::Rising, latency: 0, pulse: Some(20 * US) };
    s.hw.script = Some(&SCRIPT);
    let mut c = echo(Mode::GpioEcho, Stimulus::Edge(Edge::Rising), 3);
    c.trigger_ticks = THR as u32;
    s.host_says(&HostMsg::Configure(c));
    s.host_says(&HostMsg::Start);
    // The first answer's edge comes twice (a bounce 5 µs later).
    let t = s.hw.t;
    s.run_until(t + 10 * US);
    let first = s.hw.t + LOOP_LEAD;
    s.hw.edge_at(Pin::Response, first + 55 * US, true);
    s.run_until(t + 20 * MS);
    let st = s.host.stopped.expect("stopped");
    assert_eq!(st.taken, 3);
    assert_eq!(st.anomalies.late, 1, "the bounce is a late answer: {:?}", st.anomalies);
    let flags: Vec<bool> = s.host.samples.iter().map(|x| x.triggered).collect();
    assert_eq!(flags, [false, true, false]);
    let stim1 = s.host.samples[1].stimulus_tick;
    assert_eq!(pulses(&s), [stim1 + THR + 1]);
}

/// Roughly when the first stimulus comes after Start (the arm lead).
const LOOP_LEAD: u64 = 100 * US;

#[test]
fn a_software_trigger_flags_by_the_rule_and_pulses_late_by_the_task() {
    // QEMU's kind of board: no compare; the engine task decides.
    static SCRIPT: [Option<u64>; 4] = [Some(THR - 10 * US), Some(THR + 30 * US), None, Some(THR)];
    let cfg = LoopConfig { trigger: TriggerOut::Software, ..boards::nucleo_f411re::LOOP };
    let mut s = Sim::new(cfg, trig_board(), 1_000_000);
    s.hw.target = Target::GpioEcho { edge: Edge::Rising, latency: 0, pulse: Some(20 * US) };
    s.hw.script = Some(&SCRIPT);
    let mut c = echo(Mode::GpioEcho, Stimulus::Edge(Edge::Rising), 4);
    c.trigger_ticks = THR as u32;
    let st = s.measure(c, 10 * MS);
    assert_eq!(st.taken, 4);
    let flags: Vec<bool> = s.host.samples.iter().map(|x| x.triggered).collect();
    assert_eq!(flags, [false, true, true, false]);
    // Forced high when the task ran, at or after the threshold.
    let rises: Vec<u64> = s.hw.trigger_edges.iter().filter(|e| e.1).map(|e| e.0).collect();
    assert_eq!(rises.len(), 2, "{:?}", s.hw.trigger_edges);
    for (r, x) in rises.iter().zip(&s.host.samples[1..3]) {
        assert!(*r > x.stimulus_tick + THR, "rose at {r} for a stimulus at {}", x.stimulus_tick);
    }
}

#[test]
fn an_interrupt_later_than_the_pulse_width_still_ends_the_pulse_at_once() {
    // The rise is the hardware's, at the threshold; the match's interrupt
    // comes 20 µs later, past the 10 µs fall: the pin is lowered then,
    // not a 16-bit counter period (655 µs) later.
    static SCRIPT: [Option<u64>; 2] = [None, Some(THR + 50 * US)];
    let mut s = Sim::new(trig_cfg(), trig_board(), 1_000_000);
    s.irq_latency = 20 * US;
    s.hw.target = Target::GpioEcho { edge: Edge::Rising, latency: 0, pulse: Some(20 * US) };
    s.hw.script = Some(&SCRIPT);
    let mut c = echo(Mode::GpioEcho, Stimulus::Edge(Edge::Rising), 2);
    c.trigger_ticks = THR as u32;
    let st = s.measure(c, 10 * MS);
    assert_eq!(st.taken, 2);
    let e = &s.hw.trigger_edges;
    assert_eq!(e.len(), 4, "{e:?}");
    for (p, x) in e.chunks(2).zip(&s.host.samples) {
        assert_eq!(p[0], (x.stimulus_tick + THR + 1, true), "the rise is exact: {e:?}");
        let width = p[1].0 - p[0].0;
        assert!(!p[1].1 && (WIDTH..WIDTH + 30 * US).contains(&width), "width {width}: {e:?}");
    }
    assert!(s.host.samples.iter().all(|x| x.triggered));
}
