//! PIO0 as the capture loop's timer ([`TimerHw`]): the clock state machine
//! is the counter, the edge state machines are the capture channels, the
//! stimulus state machine is the compare, and the RP2040's microsecond
//! TIMER's ALARM0 is the wake-up (which needs no tick precision).
//!
//! ```text
//!   Channel    Pico                                   Nucleo equivalent
//!   counter    SM0 (X every 4 clocks; raw = !X)       TIM2 CNT
//!   wrap       a counter read smaller than the last   UIF
//!   Response   SM1 edges of GP3, or GP5 in UART runs  CH2 capture
//!   TxStart    SM2 edges of GP4 (our UART TX pin)     CH3 capture (a wire PA9-PB10)
//!   Stimulus   SM3 toggles GP2 at the target; flag 3  CH1 compare, OC1M
//!   Wake       TIMER ALARM0 (1 µs, rounded up)        CH4 compare
//!   Trigger    PIO1 SM0 toggles GP6 at the target;    TIM3 CH1 compare on PB4
//!              PIO1 flag 0 (its count synchronised
//!              to PIO0's at boot, `program::TRIGGER_SYNC`)
//! ```
//!
//! The trigger is a compare like the stimulus: the capture loop
//! (`TriggerOut::Compare { bits: 32 }`) arms it at `stimulus + threshold +
//! 1` and PIO1 SM0 toggles GP6 at that tick exactly. The rise's target and
//! its fall's (10 µs later) go to PIO1 together, so the width is exact
//! whatever the interrupt latency. In one-in-flight modes PIO1 SM1 disarms
//! it in hardware on the answer's edge (`program::WATCH`: it stops driving
//! the pin); the answer's capture then holds the pad (OUTOVER) in the
//! top-priority interrupt, as the loop alone does with identity bytes. A
//! target the state machine still holds when the trigger is disarmed
//! toggles PIO's level later, behind the held pad; the next arming waits
//! for those toggles before the pad follows PIO again ([`TriggerQueue`],
//! `trig_deferred`), so a stale target never shows.

use super::edges::{wanted, EdgeFifo};
#[cfg(doc)]
use super::edges::{EDGE_BLIND_TICKS, MIN_PULSE_TICKS};
use super::program::{
    clock_tick, mov, stimulus_target, MovDst, MovSrc, PULL_NOBLOCK, STIMULUS_COMPARE, STIMULUS_FLAG,
};
use super::trigger::{Tag, TriggerQueue};
use super::{OutOver, PioBus, Sm};
use crate::hwloop::seam::{Capture, Channel, OutputMode, Polarity, TimerHw};

/// The counter's rate: one tick is two system clocks at 125 MHz.
pub const TICK_HZ: u32 = 62_500_000;
/// A target is taken only if it is at least this far ahead of `now` (2 µs):
/// from the counter read to the word in the FIFO the CPU takes some 60
/// clocks (measured in rp2040js: a target 34 ticks ahead was missed), and
/// the stimulus state machine looks at its FIFO every 4 clocks and
/// compares from 4 clocks later, with X one tick ahead
/// (`program::STIMULUS`). A push held up past its target (a flash fetch, a
/// bus stall) would hold the state machine in its compare loop until the
/// count comes round again (68.7 s), and every later target behind it: it
/// is found and SM3 restarted (`stim_verify` after every push, the arming
/// after, every wake-up; counted in `stim_restarts`).
pub const TARGET_LEAD_TICKS: u32 = 128;
/// A target that reached SM3 this many ticks before its tick is
/// compared in time (checked after every push, `stim_verify`):
/// SM3 sees its TX FIFO within 4 clocks (its idle loop's `mov y, ~status`),
/// compares 8 clocks after that, and a machine still making the last edge
/// (26..31) takes 7 clocks more: 20 clocks from the push to the first
/// compare, 10 ticks, and the compare for the pad's tick `P` is in tick
/// `P - 2` (`program::stimulus_target`). 16, with room.
const VERIFY_TICKS: u32 = 16;
/// Counter reads a wait for a tick takes at most (one read is a few
/// clocks; a wait is for a tick under [`TARGET_LEAD_TICKS`] ahead), so that
/// a stopped clock state machine never hangs the CPU.
const WAIT_READS: u32 = 4096;
/// Words one capture read takes at most: the joined RX FIFO's 8 and as
/// many more as can come while they are read.
const MAX_WORDS: usize = 16;
/// Polls of the clock's FIFO before giving up on a fresh word (one comes
/// every 4 clocks; a poll is a few).
const CLOCK_POLLS: u32 = 1000;
/// Reads of the program counter to find an edge state machine outside a
/// capture (each capture lasts two clocks).
const RESYNC_TRIES: u32 = 16;
/// With no deadline, the alarm still wakes the loop this often (µs), so
/// the counter is read far more often than it wraps (68.7 s).
const KEEP_ALIVE_US: u32 = 100_000;

/// Ticks to whole µs, rounded up, without a division (the M0+ has none in
/// its instruction set): a tick is 16 ns, so µs = ticks × 2 / 125, and
/// 2 / 125 × 2^32 = 68 719 476.736; the multiplier rounded up never gives
/// less than the exact quotient, and is at most one above it.
pub const fn ticks_to_us_ceil(ticks: u32) -> u32 {
    ((ticks as u64 * 68_719_477 + 0xffff_ffff) >> 32) as u32
}

/// `mov y, osr`, forced on SM3 to give it a new target.
const MOV_Y_OSR: u16 = mov(MovDst::Y, false, MovSrc::Osr);

/// The counter `now` is past `tick` (in the half period after it).
const fn passed(now: u32, tick: u32) -> bool {
    now.wrapping_sub(tick).wrapping_sub(1) < u32::MAX / 2
}

/// One edge state machine as a capture channel.
#[derive(Debug, Clone, Copy)]
struct EdgeChannel {
    sm: Sm,
    fifo: EdgeFifo,
    polarity: Option<Polarity>,
}

/// PIO0, the alarm and the target UART's transmitter: the Pico's [`TimerHw`].
#[derive(Debug)]
pub struct PioTimer<B> {
    bus: B,
    /// The last counter value read, to see a wrap.
    last: u32,
    /// A wrap was seen and not yet acknowledged: the seam's overflow flag.
    wrapped: bool,
    response: EdgeChannel,
    tx_start: EdgeChannel,
    /// The stimulus compare's value (CCR1's equivalent).
    stim_at: u32,
    stim_mode: OutputMode,
    /// SM3's count is this many ticks behind PIO0's (each restart forces two
    /// or four instructions on it, one clock each): every target word is
    /// for its tick minus this, so the pad still moves at the tick asked.
    stim_lag: u32,
    /// The newest target handed to SM3 (the tick its pad moves), and the
    /// one before it: SM3 compares the newest if its TX FIFO is empty,
    /// else the one before.
    stim_last: Option<u32>,
    stim_prev: Option<u32>,
    /// Times SM3 was found in its compare loop after its target's tick (a
    /// target that reached it too late: it would wait 68.7 s for X to come
    /// round) and restarted: a board fault, logged by the binary.
    pub stim_restarts: u32,
    /// Reads of the clock that found no fresh word (the state machines are
    /// not running): a board fault, logged by the binary.
    pub clock_faults: u32,
    /// Words the edge state machines lost to a full FIFO.
    pub lost_edges: u32,
    /// Edges that came [`EDGE_BLIND_TICKS`] or fewer ticks after the edge
    /// before on their pin (a pulse or gap of 48 ns or less: such an edge
    /// may be up to two ticks late, [`MIN_PULSE_TICKS`]); a wanted one is
    /// captured as overcaptured.
    pub narrow_edges: u32,
    /// PIO1's count is this many ticks behind PIO0's (wrapping: `u32::MAX`
    /// is a tick ahead), as the boot measured it after the sync
    /// ([`PioBus::trigger_lag`], `trigger::sync_lag`): every trigger target
    /// word is for its tick minus this, so the pulse's edges come at the
    /// ticks asked (to half a tick: an odd lag in clocks is measured as
    /// the whole ticks either side).
    trig_lag: u32,
    /// The trigger compare's value.
    trig_at: u32,
    /// The match mode last asked for.
    trig_mode: OutputMode,
    /// The targets PIO1 holds.
    trig_q: TriggerQueue,
    /// A match mode asked for while stale targets are still to toggle:
    /// applied once they have.
    trig_deferred: Option<OutputMode>,
    /// The trigger being armed may be disarmed by the response's edge in
    /// PIO1 (one stimulus in flight).
    trig_by_response: bool,
    /// The pad follows PIO1 (its override is normal or inverted).
    trig_follow: bool,
    /// A disarm's hold came as PIO1 toggled: the pulse may have got out
    /// (`trigger_level` says so once).
    trig_cut: bool,
    /// Arms refused because PIO1 held too many targets, or one too close
    /// after the last (a board fault: that trigger is not raised).
    pub trigger_faults: u32,
}

/// The trigger pulse's width, as the capture loop programs it (its fall is
/// pushed with its rise).
const TRIGGER_WIDTH_TICKS: u32 = crate::boards::rp2040_pico::LOOP.trigger_width_ticks() as u32;

/// The override that gives `mode` on a pad at `pad` whose PIO level is
/// `pio` (the state machine toggles at its match).
const fn outover_for(mode: OutputMode, pad: bool, pio: bool) -> OutOver {
    // Follow PIO with the inversion that keeps the pad where it is: the
    // state machine's toggle is then the edge.
    let follow = if pad == pio { OutOver::Normal } else { OutOver::Invert };
    let hold = if pad { OutOver::High } else { OutOver::Low };
    match mode {
        OutputMode::Frozen => hold,
        OutputMode::ForceHigh => OutOver::High,
        OutputMode::ForceLow => OutOver::Low,
        OutputMode::ToggleOnMatch => follow,
        // Already at the level the match would make: stay (the toggle
        // would undo it).
        OutputMode::HighOnMatch if pad => hold,
        OutputMode::LowOnMatch if !pad => hold,
        OutputMode::HighOnMatch | OutputMode::LowOnMatch => follow,
    }
}

impl<B: PioBus> PioTimer<B> {
    /// The timer over `bus`, with PIO0 already started (the edge state
    /// machines from the entries their pins' levels gave: `response_high`,
    /// `tx_high`).
    pub fn new(mut bus: B, response_high: bool, tx_high: bool) -> Self {
        let trig_lag = bus.trigger_lag();
        let mut t = Self {
            bus,
            last: 0,
            wrapped: false,
            response: EdgeChannel { sm: Sm::Response, fifo: EdgeFifo::new(response_high), polarity: None },
            tx_start: EdgeChannel { sm: Sm::TxStart, fifo: EdgeFifo::new(tx_high), polarity: None },
            stim_at: 0,
            stim_mode: OutputMode::Frozen,
            stim_lag: 0,
            stim_last: None,
            stim_prev: None,
            stim_restarts: 0,
            clock_faults: 0,
            lost_edges: 0,
            narrow_edges: 0,
            trig_lag,
            trig_at: 0,
            trig_mode: OutputMode::Frozen,
            trig_q: TriggerQueue::new(),
            trig_deferred: None,
            trig_by_response: false,
            trig_follow: false,
            trig_cut: false,
            trigger_faults: 0,
        };
        t.set_output(OutputMode::ForceLow);
        t.set_trigger_output(OutputMode::ForceLow);
        t.keep_alive();
        t.bus.alarm_irq(true);
        t
    }

    /// PIO1's target word for a trigger edge in tick `tick` of PIO0's count.
    fn trig_word(&self, tick: u32) -> u32 {
        stimulus_target(tick.wrapping_sub(self.trig_lag))
    }

    /// The bus, for the binary's own accesses (logs).
    pub fn bus(&mut self) -> &mut B {
        &mut self.bus
    }

    fn channel(&mut self, ch: Channel) -> Option<&mut EdgeChannel> {
        match ch {
            Channel::Response => Some(&mut self.response),
            Channel::TxStart => Some(&mut self.tx_start),
            _ => None,
        }
    }

    /// Every word of an edge channel's FIFO, as what a capture register
    /// would hold: the latest wanted edge, overcaptured if there were
    /// several (or words were lost).
    #[inline]
    fn drain(&mut self, ch: Channel) -> Option<Capture> {
        let sm = match ch {
            Channel::Response => self.response.sm,
            Channel::TxStart => self.tx_start.sm,
            _ => return None,
        };
        // Most reads find nothing: two register reads then, without the
        // words' loop and its stack frame (about four calls a sample, one
        // with words). A word pushed after FLEVEL was read waits for the
        // next call, as one pushed after the loop's last FSTAT would.
        let stalled = self.bus.take_rx_stall(sm);
        if !stalled && self.bus.rx_level(sm) == 0 {
            return None;
        }
        self.drain_words(ch, stalled)
    }

    /// [`Self::drain`] with words to read, or a stall to handle.
    #[inline(never)]
    fn drain_words(&mut self, ch: Channel, stalled: bool) -> Option<Capture> {
        let bus = &mut self.bus;
        let c = match ch {
            Channel::Response => &mut self.response,
            Channel::TxStart => &mut self.tx_start,
            _ => return None,
        };
        let (mut latest, mut any, mut n, mut narrow_latest) = (None, None, 0u32, false);
        for _ in 0..MAX_WORDS {
            let Some(w) = bus.rx(c.sm) else { break };
            let (tick, rise, narrow) = c.fifo.word(w);
            if narrow {
                self.narrow_edges = self.narrow_edges.wrapping_add(1);
            }
            any = Some(tick);
            if wanted(c.polarity, rise) {
                latest = Some(tick);
                narrow_latest = narrow;
                n += 1;
            }
        }
        if stalled {
            // The words read were all pushed before the loss (the FIFO was
            // full and nothing read it): their alternation holds. What
            // comes next is told by where the state machine is.
            self.lost_edges = self.lost_edges.wrapping_add(1);
            for _ in 0..RESYNC_TRIES {
                let pc = bus.addr(c.sm);
                if bus.rx(c.sm).is_none() && c.fifo.resync(pc) {
                    break;
                }
            }
            // The latest edge is a true edge whatever its direction; the
            // loop uses an overcaptured capture only where that is all it
            // needs (periodic, both edges).
            return c.polarity.and(latest.or(any)).map(|raw| Capture { raw, overcaptured: true });
        }
        // An edge in the blind window after the one before may be late:
        // flagged as a capture register written twice would be.
        latest.map(|raw| Capture { raw, overcaptured: n > 1 || narrow_latest })
    }

    /// The alarm, `ahead` ticks from now (rounded up to the next µs, at
    /// least 2 µs: an alarm already passed would wait for the 32-bit µs
    /// wrap, §4.6.4).
    fn alarm_in(&mut self, ahead: u32) {
        let us = ticks_to_us_ceil(ahead).clamp(2, KEEP_ALIVE_US);
        let now = self.bus.micros();
        self.bus.set_alarm(now.wrapping_add(us));
    }

    fn keep_alive(&mut self) {
        let now = self.bus.micros();
        self.bus.set_alarm(now.wrapping_add(KEEP_ALIVE_US));
    }

    /// SM3's target word for a pad edge in tick `tick` of PIO0's count.
    fn stim_word(&self, tick: u32) -> u32 {
        stimulus_target(tick.wrapping_sub(self.stim_lag))
    }

    /// SM3 is in its compare loop (SMn_ADDR).
    fn stim_comparing(&mut self) -> bool {
        (STIMULUS_COMPARE.0..=STIMULUS_COMPARE.1).contains(&self.bus.addr(Sm::Stimulus))
    }

    /// Whether SM3 is stuck, its program counter (read after `now`) in the
    /// compare loop with a target whose tick `now` has passed (it leaves
    /// the loop in the tick before, `program::stimulus_target`), or one
    /// that is not ours: `Some(queued)`, `queued` if a word waits in its
    /// TX FIFO behind the missed one.
    fn stim_stuck(&mut self, now: u32) -> Option<bool> {
        if !self.stim_comparing() {
            return None;
        }
        let queued = !self.bus.tx_empty(Sm::Stimulus);
        match if queued { self.stim_prev } else { self.stim_last } {
            Some(t) if !passed(now, t) => None,
            _ => Some(queued),
        }
    }

    /// Wait until the counter has passed `tick` (bounded: a stopped clock
    /// state machine is a clock fault, not a hang).
    fn wait_past(&mut self, tick: u32) {
        for _ in 0..WAIT_READS {
            if passed(self.counter(), tick) {
                return;
            }
        }
    }

    /// Read SM3's TX FIFO status (FSTAT TXEMPTY) until it is `empty` (a
    /// few reads: a word written is there at the next one, a forced pull
    /// takes it in SM3's next clock).
    fn stim_fifo_until(&mut self, empty: bool) {
        for _ in 0..RESYNC_TRIES {
            if self.bus.tx_empty(Sm::Stimulus) == empty {
                return;
            }
        }
    }

    /// Take SM3 out of its compare loop onto a new target by forced
    /// instructions (SMn_INSTR, §3.5.7): the new target's word into its
    /// TX FIFO, `pull noblock` (OSR = the word) and `mov y, osr`; its
    /// compare goes on with Y = the word. If a word waited behind the
    /// missed target (`queued`), a first `pull noblock` takes it off, and
    /// a last `mov y, osr` (Y unchanged) makes the forced instructions
    /// four. Each takes one of SM3's clocks and leaves its program counter
    /// where it was (none is a jump), wherever in the two-clock loop it
    /// lands: two or four clocks put SM3's count one or two ticks behind
    /// PIO0's, in phase (its decrements stay on the even clocks), and
    /// `stim_lag` moves every later target by as much.
    ///
    /// The new target is `escape` (at least [`TARGET_LEAD_TICKS`] ahead:
    /// the stimulus being armed, or the one that waited), or else a park
    /// target [`TARGET_LEAD_TICKS`] ahead, waited out with the pad held at
    /// its level: its toggle and its flag are dropped, and the pad then
    /// follows the mode asked for from the levels as they are.
    fn stim_restart(&mut self, queued: bool, escape: Option<u32>) {
        if escape.is_none() {
            let pad = self.bus.stimulus_at_pad();
            self.bus.set_outover(if pad { OutOver::High } else { OutOver::Low });
        }
        self.stim_lag = self.stim_lag.wrapping_add(if queued { 2 } else { 1 });
        if queued {
            self.bus.exec(Sm::Stimulus, PULL_NOBLOCK);
            self.stim_fifo_until(true);
        }
        let target = match escape {
            Some(t) => t,
            None => self.counter().wrapping_add(TARGET_LEAD_TICKS),
        };
        let _ = self.bus.tx(Sm::Stimulus, self.stim_word(target));
        // The word in the FIFO (FSTAT) before the forced pull takes it: a
        // `pull noblock` from an empty FIFO would take X instead. And out
        // of it (OSR holds it) before the `mov`.
        self.stim_fifo_until(false);
        self.bus.exec(Sm::Stimulus, PULL_NOBLOCK);
        self.stim_fifo_until(true);
        self.bus.exec(Sm::Stimulus, MOV_Y_OSR);
        if queued {
            self.bus.exec(Sm::Stimulus, MOV_Y_OSR);
        }
        self.stim_prev = None;
        self.stim_last = Some(target);
        if escape.is_none() {
            self.wait_past(target);
            let _ = self.bus.take_flag(STIMULUS_FLAG);
            self.set_output(self.stim_mode);
        }
    }

    /// After a target for `tick` went to SM3: it was in time if the counter
    /// read after the push is [`VERIFY_TICKS`] short of it. Else (the push
    /// was held up: a flash fetch, a bus stall) wait for the tick: matched,
    /// the flag says so; missed, SM3 is stuck, and is restarted onto a park
    /// target and counted. The capture loop's own check then finds the
    /// tick passed with no match and makes the edge in software, in this
    /// very run.
    fn stim_verify(&mut self, tick: u32) {
        let now = self.counter();
        if (VERIFY_TICKS..u32::MAX / 2).contains(&tick.wrapping_sub(now)) {
            return;
        }
        self.wait_past(tick);
        if self.bus.flag(STIMULUS_FLAG) {
            return;
        }
        let now = self.counter();
        if let Some(queued) = self.stim_stuck(now) {
            self.stim_restarts = self.stim_restarts.wrapping_add(1);
            self.stim_restart(queued, None);
        }
    }

    /// Hand the stimulus compare's value to SM3 (`set_compare_irq`). If SM3
    /// still holds an earlier target (in its compare loop, or a word in
    /// its FIFO it does not take), that one is either missed (its tick
    /// passed: counted) or disarmed before its tick (its toggle would come
    /// behind the pad's hold and turn the inversion the pad follows PIO
    /// with): either way it is replaced by this one ([`Self::stim_restart`]).
    fn arm_stimulus(&mut self) {
        let now = self.counter();
        let at = self.stim_at;
        let ahead = at.wrapping_sub(now);
        if ahead < TARGET_LEAD_TICKS {
            while self.stim_at.wrapping_sub(self.counter()) < TARGET_LEAD_TICKS {}
            return;
        }
        if ahead >= u32::MAX / 2 {
            return;
        }
        // A word SM3 is free to take goes within a few clocks.
        let mut queued = true;
        for _ in 0..RESYNC_TRIES {
            queued = !self.bus.tx_empty(Sm::Stimulus);
            if !queued {
                break;
            }
        }
        if self.stim_comparing() {
            if self.stim_stuck(now).is_some() {
                self.stim_restarts = self.stim_restarts.wrapping_add(1);
            }
            self.stim_restart(queued, Some(at));
        } else if queued || !self.bus.tx(Sm::Stimulus, self.stim_word(at)) {
            // Not in its compare loop and not taking its FIFO's word: not
            // running. No match will come; the loop makes the edge.
            return;
        } else {
            self.stim_prev = self.stim_last;
            self.stim_last = Some(at);
        }
        self.stim_verify(at);
    }

    /// At every wake-up (the keep-alive between runs too): SM3 restarted
    /// if it is stuck on a missed target, onto the target queued behind it
    /// if that is still [`TARGET_LEAD_TICKS`] ahead, else onto a park
    /// target; counted.
    fn check_stimulus(&mut self) {
        if !self.stim_comparing() {
            return;
        }
        let now = self.counter();
        let Some(queued) = self.stim_stuck(now) else { return };
        self.stim_restarts = self.stim_restarts.wrapping_add(1);
        let ahead = |t: u32| (TARGET_LEAD_TICKS..u32::MAX / 2).contains(&t.wrapping_sub(now));
        let escape = self.stim_last.filter(|&t| queued && ahead(t));
        self.stim_restart(queued, escape);
    }

    /// Set the pad's override for `mode` from the levels now (kept as it is
    /// when the pad already follows PIO1 to the edge `mode` wants). Whether PIO1
    /// toggled while the pad followed it, between the read and the write
    /// (a few hundred ns of CPU): then a hold may have cut a pulse that had
    /// just risen to a glitch.
    fn apply_trigger_output(&mut self, mode: OutputMode) -> bool {
        let pad = self.bus.trigger_at_pad();
        let to_come = match mode {
            OutputMode::HighOnMatch => !pad,
            OutputMode::LowOnMatch => pad,
            OutputMode::ToggleOnMatch => true,
            _ => false,
        };
        if to_come && self.trig_follow {
            // The pad follows PIO1 already (OUTOVER normal or inverted,
            // §2.19.6.1): PIO1's next toggle is the edge `mode` wants,
            // whichever the inversion, so the override stays as it is. Not
            // chosen again from the levels: PIO1 may toggle between the
            // pad's read and its own (a match racing this call: a rise's
            // interrupt late by most of the width asks for the fall just as
            // PIO1 makes it), and the inversion chosen from those two reads
            // raised the pad again after its fall (rp2040js: a second pulse
            // 456 ns after the first fell, until the loop forced it low).
            return false;
        }
        let pio = self.bus.trigger_from_pio();
        let over = outover_for(mode, pad, pio);
        self.bus.set_trigger_outover(over);
        let moved = self.trig_follow && self.bus.trigger_from_pio() != pio;
        self.trig_follow = matches!(over, OutOver::Normal | OutOver::Invert);
        moved
    }

    /// The deferred mode, once no stale target is left to toggle.
    fn settle_trigger(&mut self) {
        if self.trig_deferred.is_some() && !self.trig_q.any_stale() {
            if let Some(mode) = self.trig_deferred.take() {
                let _ = self.apply_trigger_output(mode);
            }
        }
    }

    /// The trigger's flag cleared, then every target the counter has passed
    /// dropped (the flag first: a toggle after the counter read is then
    /// not lost); whether a live one was among them: the match.
    fn take_trigger(&mut self) -> bool {
        let _ = self.bus.take_trigger_flag();
        if self.trig_q.is_empty() {
            return false;
        }
        let now = self.counter();
        let live = self.trig_q.pop_passed(now);
        self.settle_trigger();
        live
    }

    /// Arm the trigger compare at `trig_at`: want it again if it is held
    /// (the fall pushed with its rise), else push it (as the stimulus's
    /// target word: the same program), with its fall if it is a rise. A
    /// target too close to arm is waited out, so that the loop's check
    /// after arming raises it in software (as for the stimulus).
    fn push_trigger(&mut self) {
        if self.trig_q.revive(self.trig_at) {
            self.settle_trigger();
            return;
        }
        let now = self.counter();
        let ahead = self.trig_at.wrapping_sub(now);
        if (TARGET_LEAD_TICKS..u32::MAX / 2).contains(&ahead) {
            let rise = self.trig_mode == OutputMode::HighOnMatch;
            let fall = self.trig_at.wrapping_add(TRIGGER_WIDTH_TICKS);
            let room = self.trig_q.may_push(self.trig_at, TARGET_LEAD_TICKS)
                && (!rise || self.trig_q.len() + 2 <= super::trigger::DEPTH);
            if room && self.bus.trigger_tx(self.trig_word(self.trig_at)) {
                self.trig_q.push(self.trig_at, Tag::Live);
                if rise {
                    // From here PIO1 SM1 watches the response for this rise.
                    self.bus.trigger_watch(self.trig_by_response);
                }
                if rise && self.bus.trigger_tx(self.trig_word(fall)) {
                    // Wanted once the loop asks for it; a disarm before
                    // the rise makes it stale.
                    self.trig_q.push(fall, Tag::Queued);
                }
            } else {
                self.trigger_faults = self.trigger_faults.wrapping_add(1);
            }
        } else if ahead < TARGET_LEAD_TICKS {
            while self.trig_at.wrapping_sub(self.counter()) < TARGET_LEAD_TICKS {}
        }
    }
}

impl<B: PioBus> TimerHw for PioTimer<B> {
    /// A fresh word of the clock state machine: the words already in its
    /// FIFO (FLEVEL's count, all pushed before that read) are dropped, and
    /// the next one is pushed after it, so it is newer than every capture
    /// read before.
    fn counter(&mut self) -> u32 {
        // The FIFO is full of words pushed before this call (the clock
        // pushes every 4 clocks, `push noblock`): pop the ones FLEVEL
        // counts without testing FSTAT for each (they are there), then wait
        // for one pushed since the first pop.
        for _ in 0..self.bus.rx_level(Sm::Clock) {
            let _ = self.bus.pop(Sm::Clock);
        }
        for _ in 0..CLOCK_POLLS {
            if let Some(w) = self.bus.rx(Sm::Clock) {
                let raw = clock_tick(w);
                if raw < self.last {
                    self.wrapped = true;
                }
                self.last = raw;
                return raw;
            }
        }
        self.clock_faults = self.clock_faults.wrapping_add(1);
        self.last
    }

    fn overflow_pending(&mut self) -> bool {
        self.wrapped
    }

    fn clear_overflow(&mut self) {
        self.wrapped = false;
    }

    fn take_capture(&mut self, ch: Channel) -> Option<Capture> {
        self.drain(ch)
    }

    fn set_capture(&mut self, ch: Channel, polarity: Option<Polarity>) {
        let _ = self.drain(ch);
        if let Some(c) = self.channel(ch) {
            c.polarity = polarity;
        }
    }

    fn take_compare(&mut self, ch: Channel) -> bool {
        match ch {
            Channel::Stimulus => self.bus.take_flag(STIMULUS_FLAG),
            Channel::Trigger => self.take_trigger(),
            Channel::Wake => {
                let fired = self.bus.take_alarm();
                if fired {
                    self.keep_alive();
                    self.check_stimulus();
                }
                fired
            }
            _ => false,
        }
    }

    fn compare_pending(&mut self, ch: Channel) -> bool {
        match ch {
            Channel::Stimulus => self.bus.flag(STIMULUS_FLAG),
            Channel::Trigger => {
                if self.trig_q.is_empty() {
                    return false;
                }
                let now = self.counter();
                self.trig_q.live_passed(now)
            }
            Channel::Wake => self.bus.alarm_fired(),
            _ => false,
        }
    }

    fn set_compare(&mut self, ch: Channel, raw: u32) {
        match ch {
            Channel::Stimulus => self.stim_at = raw,
            Channel::Trigger => self.trig_at = raw,
            Channel::Wake => {
                let ahead = raw.wrapping_sub(self.counter());
                // Passed (more than half a period "ahead"): at once.
                self.alarm_in(if ahead > u32::MAX / 2 { 0 } else { ahead });
            }
            _ => {}
        }
    }

    /// Enabling the stimulus compare hands its value to the state machine
    /// (the value and mode are set by then, `hwloop::arm`). A target
    /// closer than [`TARGET_LEAD_TICKS`] is not handed over: the loop waits
    /// until it has passed, so the loop's check after arming sees a passed
    /// target and makes the edge in software (it never waits for a match
    /// that cannot come).
    fn set_compare_irq(&mut self, ch: Channel, on: bool) {
        match ch {
            Channel::Stimulus => {
                if on {
                    self.arm_stimulus();
                }
                self.bus.flag_irq(STIMULUS_FLAG, on);
            }
            Channel::Trigger => {
                if on {
                    self.push_trigger();
                }
                // On while a deferred mode waits for the stale toggles.
                self.bus.trigger_flag_irq(on || self.trig_deferred.is_some());
            }
            Channel::Wake if !on => self.keep_alive(),
            _ => {}
        }
    }

    fn set_output(&mut self, mode: OutputMode) {
        self.stim_mode = mode;
        let pad = self.bus.stimulus_at_pad();
        let pio = self.bus.stimulus_from_pio();
        self.bus.set_outover(outover_for(mode, pad, pio));
    }

    fn output_level(&mut self) -> bool {
        self.bus.stimulus_at_pad()
    }

    /// A match mode set while earlier (disarmed) targets are still in
    /// flight holds the pad until they have toggled; any other mode
    /// applies at once and ends such a wait.
    fn set_trigger_output(&mut self, mode: OutputMode) {
        let matches =
            matches!(mode, OutputMode::HighOnMatch | OutputMode::LowOnMatch | OutputMode::ToggleOnMatch);
        self.trig_cut = false;
        if mode == OutputMode::Frozen && self.bus.trigger_at_pad() && self.trig_q.has_queued() {
            // Disarmed with the pulse already out (the answer came just
            // after the rise): its fall, held by PIO1, is what comes next
            // and what the loop asks for next. The pad keeps following PIO,
            // so the fall is exact however long the CPU takes to ask.
            return;
        }
        if !matches {
            // Disarmed, forced, or the pulse done: no toggle still to come
            // is wanted.
            self.trig_q.all_stale();
            self.trig_deferred = None;
            self.trig_cut = self.apply_trigger_output(mode) && mode == OutputMode::Frozen;
            // The pad now holds its level by the override, so PIO1 SM1 may
            // drive the pin again if its hardware disarm had let it go
            // (undriven, the pull-down holds it low meanwhile).
            self.bus.trigger_watch(false);
            return;
        }
        self.trig_mode = mode;
        if self.trig_q.any_stale() {
            self.trig_deferred = Some(mode);
            let _ = self.apply_trigger_output(OutputMode::Frozen);
            self.bus.trigger_flag_irq(true);
        } else {
            self.trig_deferred = None;
            let _ = self.apply_trigger_output(mode);
        }
    }

    /// The pad's level; high too, once, after a disarm's hold that came
    /// as PIO1 toggled (the pulse may have got out as a glitch, so the
    /// loop logs it and its sample is flagged).
    fn trigger_level(&mut self) -> bool {
        core::mem::take(&mut self.trig_cut) || self.bus.trigger_at_pad()
    }

    fn set_trigger_disarm(&mut self, by_response: bool) {
        self.trig_by_response = by_response;
    }

    fn send_byte(&mut self, byte: u8) -> bool {
        self.bus.uart_write(byte)
    }

    /// The TX-start state machine reads the TX pin itself: no wire.
    fn tx_wire_present(&mut self) -> Option<bool> {
        Some(true)
    }

    fn response_source(&mut self, uart: bool) {
        self.bus.response_pin(uart);
        // The state machine may see the new pin at the other level than it
        // waited for, and push one edge at once: let it, and drop it.
        for _ in 0..8 {
            let _ = self.bus.addr(Sm::Response);
        }
        let _ = self.drain(Channel::Response);
    }
}

#[cfg(test)]
mod tests;
