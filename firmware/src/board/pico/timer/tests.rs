//! PioTimer against a model of PIO0's count and PIO1's trigger state
//! machine (the datasheet's semantics).

use super::*;
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
    /// Time passes to `to`: the targets before it toggle, in order.
    fn advance(&mut self, to: u32) {
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
        (sm == Sm::Clock).then_some(!self.now)
    }
    fn rx_level(&mut self, _: Sm) -> u8 {
        0
    }
    fn pop(&mut self, _: Sm) -> u32 {
        unreachable!("no FIFO of this bus holds a counted word")
    }
    fn tx(&mut self, _: Sm, _: u32) -> bool {
        true
    }
    fn tx_empty(&mut self, _: Sm) -> bool {
        true
    }
    fn take_rx_stall(&mut self, _: Sm) -> bool {
        false
    }
    fn addr(&mut self, _: Sm) -> u8 {
        0
    }
    fn take_flag(&mut self, _: u8) -> bool {
        false
    }
    fn flag(&mut self, _: u8) -> bool {
        false
    }
    fn flag_irq(&mut self, _: u8, _: bool) {}
    fn set_outover(&mut self, _: OutOver) {}
    fn stimulus_from_pio(&mut self) -> bool {
        false
    }
    fn stimulus_at_pad(&mut self) -> bool {
        false
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
        false
    }
    fn alarm_fired(&mut self) -> bool {
        false
    }
    fn alarm_irq(&mut self, _: bool) {}
    fn uart_write(&mut self, _: u8) -> bool {
        true
    }
    fn trigger_tx(&mut self, word: u32) -> bool {
        // The word for tick t is `stimulus_target(t)`.
        self.targets.push(crate::board::pico::program::target_tick(word));
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

#[test]
fn ticks_to_us_rounds_up_and_is_never_short() {
    for t in [0u32, 1, 62, 63, 125, 62_500, 62_500_000, 6_250_000, 123_457, u32::MAX / 2] {
        let exact = (u64::from(t) * 2).div_ceil(125);
        let got = u64::from(ticks_to_us_ceil(t));
        assert!(got >= exact && got <= exact + 1, "{t}: {got} vs {exact}");
    }
    assert!((1000..=1001).contains(&ticks_to_us_ceil(62_500)));
}
