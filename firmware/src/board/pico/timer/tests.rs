//! PioTimer against a model of PIO0's count, its stimulus state machine
//! and PIO1's trigger state machine (the datasheet's semantics).

use super::*;
use crate::board::pico::program::{target_tick, PULL_NOBLOCK, STIMULUS_AT, STIMULUS_COMPARE, STIMULUS_FLAG};
use crate::hwloop::seam::Polarity;
use std::vec::Vec;

/// PIO0's count and PIO1's trigger state machine as the datasheet has
/// them: the clock word is `!now`; PIO1 takes its targets in order and
/// toggles its level at each (`program::STIMULUS`: at the tick the
/// target word names), raising its flag; the pad is that level through
/// the override. Every other register is inert.
#[derive(Debug, Default)]
struct Bus {
    now: u32,
    targets: Vec<u32>,
    pio: bool,
    outover: u8,
    flag: bool,
    /// The trigger pad's edges: (tick, level).
    edges: Vec<(u32, bool)>,
    /// The next read of PIO1's level comes just after its next target's
    /// tick: the toggle lands between the CPU's read of the pad and its
    /// read of PIO1 (a match racing the call that reads them).
    toggle_in_pio_read: bool,
    /// Every read of the clock moves the count on by this many ticks (a
    /// wait for a tick then ends); 0: time moves only by `advance`.
    step: u32,
    /// The wake-up alarm fired (INTR ALARM_0).
    alarm: bool,
    /// PIO0 SM3 (`program::STIMULUS`): the word in Y while it compares,
    /// and the first tick it compares in (a target whose compare tick,
    /// two before the pad's, comes earlier is missed: SM3 stays in its
    /// compare loop); its TX FIFO; OSR; its level; its count's lag behind
    /// PIO0's, in clocks (one a forced instruction, §3.5.7).
    sm3_y: Option<u32>,
    sm3_from: u32,
    sm3_fifo: Vec<u32>,
    sm3_osr: u32,
    sm3_level: bool,
    sm3_lag_clocks: u32,
    /// GP2's override, IRQ flag 3, and GP2's pad edges: (tick, level).
    stim_over: u8,
    flag3: bool,
    stim_edges: Vec<(u32, bool)>,
    /// The next push to SM3 lands this many ticks after it is made (a
    /// flash fetch between the counter read and the FIFO write).
    push_late: u32,
    /// The instructions forced on SM3.
    forced: Vec<u16>,
    /// The response state machine's RX FIFO.
    resp_words: Vec<u32>,
    /// PIO1's count is this many ticks behind PIO0's (its sync), and the
    /// lag the boot measured.
    pio1_lag: u32,
    lag_measured: u32,
}

impl Bus {
    fn pad(&self) -> bool {
        match self.outover {
            1 => !self.pio,
            2 => false,
            3 => true,
            _ => self.pio,
        }
    }
    fn set_pad(&mut self, f: impl FnOnce(&mut Self), tick: u32) {
        let before = self.pad();
        f(self);
        if self.pad() != before {
            self.edges.push((tick, self.pad()));
        }
    }
    fn stim_pad(&self) -> bool {
        match self.stim_over {
            1 => !self.sm3_level,
            2 => false,
            3 => true,
            _ => self.sm3_level,
        }
    }
    fn set_stim(&mut self, f: impl FnOnce(&mut Self), tick: u32) {
        let before = self.stim_pad();
        f(self);
        if self.stim_pad() != before {
            self.stim_edges.push((tick, self.stim_pad()));
        }
    }
    /// The tick GP2 moves in for SM3's word `w`, on PIO0's count.
    fn sm3_pad_tick(&self, w: u32) -> u32 {
        target_tick(w) + self.sm3_lag_clocks / 2
    }
    /// SM3 sits in its compare loop with a target it can no longer meet.
    fn sm3_stuck(&self) -> bool {
        self.sm3_y.is_some_and(|w| self.sm3_pad_tick(w) < self.sm3_from + 2)
    }
    /// SM3's edges before `to`, in order; a stuck SM3 makes none.
    fn advance_stim(&mut self, to: u32) {
        while let Some(w) = self.sm3_y {
            let p = self.sm3_pad_tick(w);
            if self.sm3_stuck() || p >= to {
                break;
            }
            assert_eq!(
                self.sm3_lag_clocks % 2,
                0,
                "SM3's count out of phase (an odd number of forced clocks)"
            );
            self.set_stim(|b| b.sm3_level = !b.sm3_level, p);
            self.flag3 = true;
            self.sm3_y = None;
            if !self.sm3_fifo.is_empty() {
                self.sm3_y = Some(self.sm3_fifo.remove(0));
                self.sm3_from = p + 5;
            }
        }
    }
    /// Time passes to `to`: the targets before it toggle, in order.
    fn advance(&mut self, to: u32) {
        self.advance_stim(to);
        while let Some(&t) = self.targets.first() {
            if t >= to {
                break;
            }
            self.targets.remove(0);
            self.set_pad(|b| b.pio = !b.pio, t);
            self.flag = true;
        }
        self.now = to;
    }
}

impl PioBus for &mut Bus {
    fn rx(&mut self, sm: Sm) -> Option<u32> {
        if sm == Sm::Clock && self.step > 0 {
            let to = self.now + self.step;
            self.advance(to);
        }
        if sm == Sm::Response && !self.resp_words.is_empty() {
            return Some(self.resp_words.remove(0));
        }
        (sm == Sm::Clock).then_some(!self.now)
    }
    fn rx_level(&mut self, sm: Sm) -> u8 {
        if sm == Sm::Response {
            self.resp_words.len() as u8
        } else {
            0
        }
    }
    fn pop(&mut self, _: Sm) -> u32 {
        unreachable!("no FIFO of this bus holds a counted word")
    }
    fn tx(&mut self, sm: Sm, word: u32) -> bool {
        assert_eq!(sm, Sm::Stimulus);
        let to = self.now + core::mem::take(&mut self.push_late);
        self.advance(to);
        if self.sm3_y.is_none() {
            self.sm3_y = Some(word);
            self.sm3_from = self.now + 3;
        } else if self.sm3_fifo.len() < 4 {
            self.sm3_fifo.push(word);
        } else {
            return false;
        }
        true
    }
    fn tx_empty(&mut self, sm: Sm) -> bool {
        sm != Sm::Stimulus || self.sm3_fifo.is_empty()
    }
    fn take_rx_stall(&mut self, _: Sm) -> bool {
        false
    }
    fn addr(&mut self, sm: Sm) -> u8 {
        match sm {
            Sm::Stimulus if self.sm3_y.is_some() => STIMULUS_COMPARE.0,
            Sm::Stimulus => STIMULUS_AT,
            _ => 0,
        }
    }
    fn exec(&mut self, sm: Sm, instr: u16) {
        assert_eq!(sm, Sm::Stimulus);
        self.forced.push(instr);
        self.sm3_lag_clocks += 1;
        if instr == PULL_NOBLOCK {
            // From an empty FIFO it would copy X: never wanted here.
            assert!(!self.sm3_fifo.is_empty(), "a forced pull from an empty FIFO");
            self.sm3_osr = self.sm3_fifo.remove(0);
        } else if instr == MOV_Y_OSR {
            self.sm3_y = Some(self.sm3_osr);
            self.sm3_from = self.now + 1;
        } else {
            panic!("forced {instr:#06x}");
        }
    }
    fn take_flag(&mut self, n: u8) -> bool {
        n == STIMULUS_FLAG && core::mem::take(&mut self.flag3)
    }
    fn flag(&mut self, n: u8) -> bool {
        n == STIMULUS_FLAG && self.flag3
    }
    fn flag_irq(&mut self, _: u8, _: bool) {}
    fn set_outover(&mut self, mode: OutOver) {
        let now = self.now;
        self.set_stim(|b| b.stim_over = mode as u8, now);
    }
    fn stimulus_from_pio(&mut self) -> bool {
        self.sm3_level
    }
    fn stimulus_at_pad(&mut self) -> bool {
        self.stim_pad()
    }
    fn response_level(&mut self) -> bool {
        false
    }
    fn response_pin(&mut self, _: bool) {}
    fn micros(&mut self) -> u32 {
        0
    }
    fn set_alarm(&mut self, _: u32) {}
    fn take_alarm(&mut self) -> bool {
        core::mem::take(&mut self.alarm)
    }
    fn alarm_fired(&mut self) -> bool {
        false
    }
    fn alarm_irq(&mut self, _: bool) {}
    fn uart_write(&mut self, _: u8) -> bool {
        true
    }
    fn trigger_lag(&mut self) -> u32 {
        self.lag_measured
    }
    fn trigger_tx(&mut self, word: u32) -> bool {
        // The word for tick t is `stimulus_target(t)`.
        self.targets.push(target_tick(word) + self.pio1_lag);
        true
    }
    fn take_trigger_flag(&mut self) -> bool {
        core::mem::take(&mut self.flag)
    }
    fn trigger_flag(&mut self) -> bool {
        self.flag
    }
    fn trigger_flag_irq(&mut self, _: bool) {}
    fn set_trigger_outover(&mut self, mode: OutOver) {
        let now = self.now;
        self.set_pad(|b| b.outover = mode as u8, now);
    }
    fn trigger_from_pio(&mut self) -> bool {
        if core::mem::take(&mut self.toggle_in_pio_read) {
            if let Some(&t) = self.targets.first() {
                self.advance(t + 1);
            }
        }
        self.pio
    }
    fn trigger_at_pad(&mut self) -> bool {
        self.pad()
    }
    fn trigger_watch(&mut self, _: bool) {}
}

const W: u32 = TRIGGER_WIDTH_TICKS;

/// The capture loop's arming (`Front::arm_trigger`).
fn arm(t: &mut PioTimer<&mut Bus>, at: u32) {
    t.set_trigger_output(OutputMode::Frozen);
    t.set_compare(Channel::Trigger, at);
    t.take_compare(Channel::Trigger);
    t.set_trigger_output(OutputMode::HighOnMatch);
    t.set_compare_irq(Channel::Trigger, true);
}

/// The loop's fall after a rise (`Front::rose`).
fn fall(t: &mut PioTimer<&mut Bus>, at: u32) {
    t.set_trigger_output(OutputMode::LowOnMatch);
    t.set_compare(Channel::Trigger, at + W);
    t.take_compare(Channel::Trigger);
    t.set_compare_irq(Channel::Trigger, true);
}

/// The loop's fall when its tick passed with no match to come
/// (`Front::rose`): the pin lowered, then frozen.
fn lower_late(t: &mut PioTimer<&mut Bus>) {
    t.set_trigger_output(OutputMode::ForceLow);
    t.set_trigger_output(OutputMode::Frozen);
}

fn timer(bus: &mut Bus) -> PioTimer<&mut Bus> {
    PioTimer::new(bus, false, true)
}

/// A pulse armed for `at` and risen: the clock one past it, the match taken.
fn risen(t: &mut PioTimer<&mut Bus>, at: u32) {
    arm(t, at);
    t.bus().advance(at + 1);
    assert!(t.compare_pending(Channel::Trigger));
    assert!(t.take_compare(Channel::Trigger), "the rise is the match");
}

#[test]
fn a_pulse_rises_at_its_tick_and_falls_a_width_later_whenever_the_cpu_looks() {
    let mut bus = Bus { now: 1000, ..Bus::default() };
    let mut t = timer(&mut bus);
    risen(&mut t, 5000);
    // The CPU comes back late, after the fall's tick: the fall was PIO1's.
    t.bus().advance(5000 + W + 300);
    fall(&mut t, 5000);
    // Its tick passed with no match left to come: the loop lowers the
    // pin (already low) and freezes it (`Front::rose`).
    assert!(!t.compare_pending(Channel::Trigger));
    lower_late(&mut t);
    assert_eq!(t.bus().edges, [(5000, true), (5000 + W, false)]);
}

#[test]
fn a_fall_that_pio1_makes_while_the_loop_asks_for_it_stays_a_fall() {
    // rp2040js: the rise's interrupt came 8 µs late (the CPU in the target
    // byte's interrupt); the loop asked for the fall 170 ns before its
    // tick, and PIO1's toggle landed between the pad's read and PIO1's.
    let mut bus = Bus { now: 1000, ..Bus::default() };
    let mut t = timer(&mut bus);
    risen(&mut t, 5000);
    t.bus().advance(5000 + W - 10);
    t.bus().toggle_in_pio_read = true;
    fall(&mut t, 5000);
    // As `Front::rose` goes on: the fall's tick has passed, no match left.
    if !t.compare_pending(Channel::Trigger) {
        lower_late(&mut t);
    }
    t.bus().advance(9000);
    assert_eq!(t.bus().edges, [(5000, true), (5000 + W, false)], "one pulse, its fall PIO1's");
}

#[test]
fn a_disarm_before_the_tick_hides_both_toggles_and_the_next_pulse_is_exact() {
    let mut bus = Bus { now: 1000, ..Bus::default() };
    let mut t = timer(&mut bus);
    arm(&mut t, 5000);
    t.bus().advance(4900);
    t.set_trigger_output(OutputMode::Frozen);
    assert!(!t.trigger_level(), "disarmed in time");
    t.set_compare_irq(Channel::Trigger, false);
    t.bus().advance(9000);
    assert!(!t.take_compare(Channel::Trigger), "a disarmed target's toggle is no match");
    arm(&mut t, 20_000);
    t.bus().advance(20_001);
    assert!(t.take_compare(Channel::Trigger));
    fall(&mut t, 20_000);
    t.bus().advance(30_000);
    assert!(t.take_compare(Channel::Trigger));
    assert_eq!(t.bus().edges, [(20_000, true), (20_000 + W, false)]);
}

#[test]
fn a_disarm_that_finds_the_pulse_out_keeps_its_exact_fall() {
    let mut bus = Bus { now: 1000, ..Bus::default() };
    let mut t = timer(&mut bus);
    arm(&mut t, 5000);
    // The answer latched just after the rise; its interrupt comes late.
    t.bus().advance(5400);
    t.set_trigger_output(OutputMode::Frozen);
    assert!(t.trigger_level(), "the pulse is out");
    // The loop asks for the fall only after its tick (the CPU was slow):
    // it came from PIO1 all the same, exactly.
    t.bus().advance(5000 + W + 200);
    fall(&mut t, 5000);
    assert!(!t.compare_pending(Channel::Trigger));
    lower_late(&mut t);
    t.bus().advance(9000);
    assert_eq!(t.bus().edges, [(5000, true), (5000 + W, false)]);
}

#[test]
fn an_arming_behind_stale_targets_waits_for_their_toggles() {
    // Identity bytes: disarmed (its answer's byte came), the next
    // stimulus armed while PIO1 still holds the disarmed rise and fall.
    let mut bus = Bus { now: 1000, ..Bus::default() };
    let mut t = timer(&mut bus);
    arm(&mut t, 5000);
    t.bus().advance(4000);
    t.set_trigger_output(OutputMode::Frozen);
    t.set_compare_irq(Channel::Trigger, false);
    arm(&mut t, 17_500);
    assert_eq!(t.bus().targets, [5000, 5000 + W, 17_500, 17_500 + W]);
    // The stale toggles, each seen by the interrupt.
    t.bus().advance(5001);
    assert!(!t.take_compare(Channel::Trigger));
    t.bus().advance(5000 + W + 1);
    assert!(!t.take_compare(Channel::Trigger));
    t.bus().advance(17_501);
    assert!(t.take_compare(Channel::Trigger));
    fall(&mut t, 17_500);
    t.bus().advance(20_000);
    assert!(t.take_compare(Channel::Trigger));
    assert_eq!(t.bus().edges, [(17_500, true), (17_500 + W, false)]);
}

#[test]
fn a_target_before_a_held_one_is_refused_not_missed() {
    let mut bus = Bus { now: 1000, ..Bus::default() };
    let mut t = timer(&mut bus);
    arm(&mut t, 5000);
    t.set_trigger_output(OutputMode::Frozen);
    // Earlier than the held fall: PIO1 would miss it and wait a count period.
    arm(&mut t, 5000 + W - 50);
    assert_eq!(t.trigger_faults, 1);
    assert_eq!(t.bus().targets, [5000, 5000 + W]);
}

/// The capture loop's arming of a rising edge at `at` (`arm_edge`): the
/// rest level, the flag cleared, the match mode, the value, the compare
/// on; then its check: the tick passed with no match, the edge is made in
/// software (`true`).
fn arm_edge(t: &mut PioTimer<&mut Bus>, at: u32) -> bool {
    t.set_output(OutputMode::ForceLow);
    let now = t.counter();
    t.set_compare(Channel::Stimulus, now.wrapping_sub(1));
    t.take_compare(Channel::Stimulus);
    t.set_output(OutputMode::HighOnMatch);
    t.set_compare(Channel::Stimulus, at);
    t.set_compare_irq(Channel::Stimulus, true);
    let after = t.counter();
    if after >= at && !t.compare_pending(Channel::Stimulus) {
        t.set_compare_irq(Channel::Stimulus, false);
        t.set_output(OutputMode::ForceHigh);
        return true;
    }
    false
}

/// Time passes to `to`, then the match's interrupt (`Front`): the pin
/// frozen, the compare off. Whether there was a match.
fn match_by(t: &mut PioTimer<&mut Bus>, to: u32) -> bool {
    t.bus().advance(to);
    let matched = t.take_compare(Channel::Stimulus);
    if matched {
        t.set_output(OutputMode::Frozen);
        t.set_compare_irq(Channel::Stimulus, false);
    }
    matched
}

/// GP2's rises.
fn rises(t: &mut PioTimer<&mut Bus>) -> Vec<u32> {
    t.bus().stim_edges.iter().filter(|e| e.1).map(|e| e.0).collect()
}

fn stim_timer(bus: &mut Bus) -> PioTimer<&mut Bus> {
    bus.now = 1000;
    bus.step = 1;
    PioTimer::new(bus, false, true)
}

#[test]
fn a_stimulus_rises_in_the_tick_asked() {
    let mut bus = Bus::default();
    let mut t = stim_timer(&mut bus);
    for at in [5000, 9001, 20_000] {
        assert!(!arm_edge(&mut t, at), "{at}: armed in time");
        assert!(match_by(&mut t, at + 50), "{at}: matched");
    }
    assert_eq!(rises(&mut t), [5000, 9001, 20_000]);
    assert_eq!((t.stim_restarts, t.bus().forced.len()), (0, 0));
}

#[test]
fn a_push_that_lands_after_its_tick_is_caught_and_every_later_stimulus_is_exact() {
    // The counter read 150 ticks ahead, then the FIFO write was held up
    // 200 ticks (a flash cache miss): SM3 takes the target after its
    // tick and would compare for 68.7 s, with every later target behind.
    let mut bus = Bus::default();
    let mut t = stim_timer(&mut bus);
    let first = 1000 + 150;
    t.bus().push_late = 200;
    assert!(arm_edge(&mut t, first), "missed: the loop makes this edge in software");
    assert_eq!(t.stim_restarts, 1, "counted");
    assert!(!t.bus().sm3_stuck(), "SM3 restarted");
    assert!(!t.compare_pending(Channel::Stimulus), "the park target's flag dropped");
    let soft = t.counter();
    for at in [soft + 1000, soft + 5001, soft + 9000] {
        assert!(!arm_edge(&mut t, at), "{at}: armed in time");
        assert!(match_by(&mut t, at + 50), "{at}: matched");
    }
    let r = rises(&mut t);
    assert_eq!(r[1..], [soft + 1000, soft + 5001, soft + 9000], "each rise in the tick asked: {r:?}");
    assert_eq!(t.bus().forced, [PULL_NOBLOCK, MOV_Y_OSR], "two forced instructions: one tick of lag");
    assert_eq!(t.stim_restarts, 1);
}

#[test]
fn a_stuck_machine_with_a_target_queued_behind_is_restarted_at_a_wake_up_and_the_queued_one_is_exact() {
    // SM3 compares a target (tick 900) it got too late, and the next
    // one (3000) waits in its FIFO: found by the keep-alive's wake-up.
    let mut bus = Bus::default();
    let mut t = stim_timer(&mut bus);
    t.set_output(OutputMode::ForceLow);
    t.set_output(OutputMode::HighOnMatch);
    t.bus().sm3_y = Some(stimulus_target(900));
    t.bus().sm3_from = 950;
    t.bus().sm3_fifo.push(stimulus_target(3000));
    (t.stim_prev, t.stim_last) = (Some(900), Some(3000));
    t.bus().alarm = true;
    assert!(t.take_compare(Channel::Wake));
    assert_eq!(t.stim_restarts, 1);
    assert_eq!(
        t.bus().forced,
        [PULL_NOBLOCK, PULL_NOBLOCK, MOV_Y_OSR, MOV_Y_OSR],
        "the queued word taken off, the target again for the count two ticks behind"
    );
    assert!(match_by(&mut t, 3050));
    let at = t.counter() + 2000;
    assert!(!arm_edge(&mut t, at));
    assert!(match_by(&mut t, at + 50));
    assert_eq!(rises(&mut t), [3000, at]);
}

#[test]
fn a_machine_stuck_between_runs_is_parked_with_the_pad_held() {
    let mut bus = Bus::default();
    let mut t = stim_timer(&mut bus);
    t.set_output(OutputMode::Frozen);
    t.bus().sm3_y = Some(stimulus_target(900));
    t.bus().sm3_from = 950;
    t.stim_last = Some(900);
    t.bus().advance(50_000);
    t.bus().alarm = true;
    assert!(t.take_compare(Channel::Wake));
    assert_eq!(t.stim_restarts, 1);
    assert!(!t.bus().sm3_stuck() && t.bus().sm3_y.is_none(), "the park target made");
    assert!(t.bus().stim_edges.is_empty(), "behind the held pad: {:?}", t.bus().stim_edges);
    assert!(!t.compare_pending(Channel::Stimulus), "its flag dropped");
    let at = t.counter() + 3000;
    assert!(!arm_edge(&mut t, at));
    assert!(match_by(&mut t, at + 50));
    assert_eq!(rises(&mut t), [at]);
    // A wake-up with SM3 idle or comparing a target ahead restarts nothing.
    let next = t.counter() + 3000;
    assert!(!arm_edge(&mut t, next));
    t.bus().alarm = true;
    assert!(t.take_compare(Channel::Wake));
    assert_eq!(t.stim_restarts, 1);
}

#[test]
fn a_target_disarmed_before_its_tick_is_replaced_by_the_next_arming() {
    // The run stopped with a stimulus armed; the next run's first one
    // comes before it: SM3 must not make the old one first.
    let mut bus = Bus::default();
    let mut t = stim_timer(&mut bus);
    assert!(!arm_edge(&mut t, 9000));
    t.set_output(OutputMode::Frozen);
    t.set_compare_irq(Channel::Stimulus, false);
    assert!(!arm_edge(&mut t, 5000));
    assert!(match_by(&mut t, 5050));
    t.bus().advance(12_000);
    assert!(!t.take_compare(Channel::Stimulus), "the old target never toggles");
    assert_eq!(rises(&mut t), [5000]);
    assert_eq!(t.stim_restarts, 0, "replaced, not missed");
}

#[test]
fn an_edge_in_the_blind_window_is_captured_overcaptured_and_counted() {
    // Rising edges wanted; a low glitch 3 ticks wide before the rise at
    // 503: the edge program saw that rise at its first look after the
    // fall's window, maybe up to two ticks late.
    let word = |tick: u32| !(tick + 1);
    let mut bus = Bus::default();
    let mut t = timer(&mut bus);
    t.set_capture(Channel::Response, Some(Polarity::Rising));
    t.bus().resp_words.push(word(100));
    assert_eq!(t.take_capture(Channel::Response), Some(Capture { raw: 100, overcaptured: false }));
    t.bus().resp_words.extend([word(500), word(503)]);
    assert_eq!(t.take_capture(Channel::Response), Some(Capture { raw: 503, overcaptured: true }));
    assert_eq!(t.narrow_edges, 1);
    // 4 ticks after the fall: exact, not flagged.
    t.bus().resp_words.extend([word(900), word(904)]);
    assert_eq!(t.take_capture(Channel::Response), Some(Capture { raw: 904, overcaptured: false }));
    // A narrow high pulse: its rise is exact, its fall (not wanted) is
    // counted.
    t.bus().resp_words.extend([word(1000), word(1050), word(1052)]);
    assert_eq!(t.take_capture(Channel::Response), Some(Capture { raw: 1050, overcaptured: false }));
    assert_eq!(t.narrow_edges, 2);
    t.bus().resp_words.push(word(2000));
    assert_eq!(t.take_capture(Channel::Response), Some(Capture { raw: 2000, overcaptured: false }));
}

#[test]
fn a_trigger_lag_measured_at_boot_moves_pio1s_targets() {
    for lag in [0u32, 1, 2] {
        let mut bus = Bus { now: 1000, pio1_lag: lag, lag_measured: lag, ..Bus::default() };
        let mut t = timer(&mut bus);
        risen(&mut t, 5000);
        t.bus().advance(5000 + W + 300);
        fall(&mut t, 5000);
        t.bus().advance(9000);
        assert_eq!(t.bus().edges, [(5000, true), (5000 + W, false)], "PIO1 {lag} ticks behind");
    }
}

#[test]
fn ticks_to_us_rounds_up_and_is_never_short() {
    for t in [0u32, 1, 62, 63, 125, 62_500, 62_500_000, 6_250_000, 123_457, u32::MAX / 2] {
        let exact = (u64::from(t) * 2).div_ceil(125);
        let got = u64::from(ticks_to_us_ceil(t));
        assert!(got >= exact && got <= exact + 1, "{t}: {got} vs {exact}");
    }
    assert!((1000..=1001).contains(&ticks_to_us_ceil(62_500)));
}
