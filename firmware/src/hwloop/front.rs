//! The top half: the [`Front`] reads the timer at the top priority (every
//! capture and compare flag, *then* `now`) and logs what latched as
//! [`Event`]s with extended ticks, for the engine task to collect as a
//! [`Batch`]. Owns the tick extender (the one place `now` is read), the
//! event log and the flags the engine task has not seen yet. A [`Timer`]
//! pairs it with the board's timer, as one resource.
//!
//! It also owns the trigger output's phase ([`TriggerPhase`]): the engine
//! task arms the compare; the rise is the hardware's; the top half sees
//! the match, logs it and programs the fall 10 µs later; and in
//! one-in-flight modes the answer's capture disarms it here, at the top
//! priority, *in software*: no plain timer stops one channel's compare on
//! another's capture (docs/dev/trigger.md). The disarm is one write (the
//! compare frozen) and one read (the pin's level), a few cycles after the
//! capture's interrupt entry; an answer that latched less than that before
//! the match still lets the pulse out, and the pin's level says so: the
//! pulse is then logged before the answer and its sample is flagged.

use embedded_hal_nb::nb;
use embedded_hal_nb::serial::Read;

use super::seam::{Channel, OutputMode, TimerHw};
use super::LOG_LEN;
use crate::ticks::{TickExtender, TimerBits};

/// What the top half logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A capture on the response line, extended (the filter delay not yet
    /// taken off).
    Response {
        /// Extended tick of the latch.
        tick: u64,
        /// It overwrote an unread capture.
        overcaptured: bool,
    },
    /// A byte read from the target line's UART at extended tick `at`, after
    /// the captures latched before it were logged.
    Byte {
        /// The byte.
        byte: u8,
        /// When it was read.
        at: u64,
    },
    /// A receive error on the target line (framing, noise, overrun).
    LineError,
    /// The trigger pin rose for stimulus `seq` at extended tick `tick` (a
    /// compare match, or forced in software when its tick had passed).
    Trigger {
        /// The stimulus it watched.
        seq: u64,
        /// When it rose.
        tick: u64,
    },
}

/// Where the trigger output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerPhase {
    /// Low, nothing armed.
    Idle,
    /// The compare raises the pin at `at` for stimulus `seq`; with
    /// `by_capture`, the answer's capture disarms it.
    Armed {
        /// The stimulus it watches.
        seq: u64,
        /// Extended tick of the rise.
        at: u64,
        /// Disarm on the response capture (one stimulus in flight).
        by_capture: bool,
    },
    /// High; the compare lowers it at `fall_at`.
    High {
        /// Extended tick of the fall.
        fall_at: u64,
    },
}

/// A stimulus byte the engine task left to the top half
/// ([`super::LoopConfig::top_half_bytes`]): the wake-up interrupt writes it
/// at its tick, so no engine pass runs for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct QueuedByte {
    pub(super) byte: u8,
    /// Its tick: the wake-up compare is set to it.
    pub(super) at: u64,
    /// Open the TX start-bit capture before the write.
    pub(super) capture: bool,
}

/// A queued byte the top half wrote: the `now` read right before the
/// write, and whether the transmitter took it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SentByte {
    pub(super) written: u64,
    pub(super) taken: bool,
}

/// The top half: reads the timer at the top priority and logs what it saw.
/// It holds the tick extender, so it is the one place `now` is read.
///
/// `repr(C)`, in this order: what every interrupt touches first, the log
/// (384 bytes) and the top half's bytes last. Left to the compiler, the
/// log came first and every other field lay past it, beyond the M0+'s
/// immediate offsets (31 bytes for a byte load, 124 for a word): about
/// 60 core cycles a sample more on the Pico, in `service` alone.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct Front {
    pub(super) ext: TickExtender,
    /// The trigger compare's counter width, as a mask (0: no trigger).
    trigger_mask: u64,
    /// The trigger pulse's width, in ticks.
    trigger_width: u64,
    /// The first TX start-bit capture since the channel was opened.
    pub(super) tx_start: Option<(u64, bool)>,
    /// The trigger output.
    trigger: TriggerPhase,
    /// Events in `log`, from its start: `collect` always takes them all,
    /// so the log is a plain array filled from 0, not a ring (no head, no
    /// index wrapped on every push and every take).
    len: usize,
    /// Events lost to a full log.
    lost: u32,
    /// Something was logged for the engine task since it last collected:
    /// an event (or one lost), the stimulus compare's match, a start-bit
    /// capture, the queued byte's write. One flag for `has_events`, asked
    /// up to three times a pass, instead of five fields.
    fresh: bool,
    /// The stimulus compare matched since the engine task last looked.
    stimulus_fired: bool,
    /// The loop set it for this pass ([`super::LoopConfig::top_half_bytes`]
    /// and a UART response line, or [`super::LoopConfig::quiet_edges`] and
    /// an edge stimulus): the timer's interrupt runs the engine task only
    /// when it must ([`Front::on_timer_interrupt`]). Off: on every
    /// interrupt, as before.
    pub(super) quiet: bool,
    /// Quiet, with edge stimuli: an answer's capture (anything logged)
    /// runs the engine task.
    pub(super) answers_pend: bool,
    log: [Event; LOG_LEN],
    /// With `quiet`: when the engine task must run (u64::MAX: not before a
    /// wrap), the loop's next deadline besides the queued byte.
    pub(super) engine_at: u64,
    /// The stimulus byte waiting for its tick.
    pub(super) queued: Option<QueuedByte>,
    /// The queued byte was written: not yet collected.
    pub(super) sent: Option<SentByte>,
}

/// What one `Front::collect` handed over.
#[derive(Debug, Clone)]
pub struct Batch {
    pub(super) events: [Event; LOG_LEN],
    pub(super) len: usize,
    pub(super) lost: u32,
    pub(super) stimulus_fired: bool,
    pub(super) tx_start: Option<(u64, bool)>,
    pub(super) sent: Option<SentByte>,
}

impl Batch {
    pub(super) const fn new() -> Self {
        Self {
            events: [Event::LineError; LOG_LEN],
            len: 0,
            lost: 0,
            stimulus_fired: false,
            tx_start: None,
            sent: None,
        }
    }
}

impl Front {
    /// A front for a counter of `bits`.
    pub const fn new(bits: TimerBits) -> Self {
        Self {
            ext: TickExtender::new(bits),
            log: [Event::LineError; LOG_LEN],
            len: 0,
            lost: 0,
            fresh: false,
            stimulus_fired: false,
            tx_start: None,
            trigger: TriggerPhase::Idle,
            trigger_mask: 0,
            trigger_width: 0,
            quiet: false,
            answers_pend: false,
            queued: None,
            sent: None,
            engine_at: u64::MAX,
        }
    }

    /// Give the front a trigger compare of `bits` and pulses of `width`
    /// ticks (a board with [`crate::hwloop::TriggerOut::Compare`]).
    pub fn set_trigger(&mut self, bits: u8, width: u64) {
        self.trigger_mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        self.trigger_width = width.max(1);
    }

    /// The trigger output's phase.
    pub fn trigger_phase(&self) -> TriggerPhase {
        self.trigger
    }

    /// Engine task, under the lock: arm the trigger compare to raise the
    /// pin at `at` (less than half the compare's counter period ahead) for
    /// stimulus `seq`. A tick that passed while it was written is raised
    /// in software at once (and logged with the tick it rose at).
    pub(super) fn arm_trigger<T: TimerHw>(&mut self, hw: &mut T, seq: u64, at: u64, by_capture: bool) {
        // As for the stimulus (RM0383 §13.3.8): frozen while the value
        // changes, the stale flag cleared, then the match mode.
        hw.set_trigger_output(OutputMode::Frozen);
        hw.set_trigger_disarm(by_capture);
        hw.set_compare(Channel::Trigger, (at & self.trigger_mask) as u32);
        hw.take_compare(Channel::Trigger);
        hw.set_trigger_output(OutputMode::HighOnMatch);
        hw.set_compare_irq(Channel::Trigger, true);
        self.trigger = TriggerPhase::Armed { seq, at, by_capture };
        let now = self.now(hw);
        if now >= at && !hw.compare_pending(Channel::Trigger) {
            // Passed before the compare held it: no match will come.
            self.force_trigger(hw, seq, now);
        }
    }

    /// Raise the trigger in software now (its tick has passed), log it and
    /// program its fall.
    pub(super) fn force_trigger<T: TimerHw>(&mut self, hw: &mut T, seq: u64, now: u64) {
        hw.set_trigger_output(OutputMode::ForceHigh);
        self.rose(hw, seq, now);
    }

    /// The pin rose at `tick` for `seq`: log it, and lower it by the
    /// compare `trigger_width` later (the mode changes the pin only at the
    /// match, so it stays high until then).
    fn rose<T: TimerHw>(&mut self, hw: &mut T, seq: u64, tick: u64) {
        self.push(Event::Trigger { seq, tick });
        let fall_at = tick + self.trigger_width;
        hw.set_trigger_output(OutputMode::LowOnMatch);
        hw.set_compare(Channel::Trigger, (fall_at & self.trigger_mask) as u32);
        hw.take_compare(Channel::Trigger);
        hw.set_compare_irq(Channel::Trigger, true);
        self.trigger = TriggerPhase::High { fall_at };
        // The interrupt came later than the width: the fall's tick has
        // passed and would match only a counter period later (655 µs on a
        // 16-bit counter). Lowered now instead.
        let now = self.now(hw);
        if now >= fall_at && !hw.compare_pending(Channel::Trigger) {
            hw.set_trigger_output(OutputMode::ForceLow);
            hw.set_trigger_output(OutputMode::Frozen);
            hw.set_compare_irq(Channel::Trigger, false);
            self.trigger = TriggerPhase::Idle;
        }
    }

    /// Cancel an armed trigger: frozen first (a later match does nothing),
    /// then the pin read. High: the match came before the freeze, the pulse
    /// is out; it is logged and its fall programmed. Low: disarmed in time.
    /// A pulse already high is left to fall. Returns whether it had risen.
    pub(super) fn disarm_trigger<T: TimerHw>(&mut self, hw: &mut T) -> bool {
        let TriggerPhase::Armed { seq, at, .. } = self.trigger else { return false };
        hw.set_trigger_output(OutputMode::Frozen);
        if hw.trigger_level() {
            self.rose(hw, seq, at);
            return true;
        }
        hw.set_compare_irq(Channel::Trigger, false);
        hw.take_compare(Channel::Trigger);
        self.trigger = TriggerPhase::Idle;
        false
    }

    /// The tick extender (for tests and logs).
    pub fn extender(&self) -> &TickExtender {
        &self.ext
    }

    /// The extended tick now: a pending wrap acknowledged, then the counter
    /// first and the overflow flag second ([`TickExtender::now`]).
    pub fn now<T: TimerHw>(&mut self, hw: &mut T) -> u64 {
        if hw.overflow_pending() {
            hw.clear_overflow();
            self.ext.on_overflow();
        }
        let counter = hw.counter();
        let pending = hw.overflow_pending();
        self.ext.now(u64::from(counter), pending)
    }

    /// The timer interrupt (top priority): log what latched, and write a
    /// queued stimulus byte whose tick has come. Returns whether the
    /// engine task must run: always, unless the loop made the front
    /// `quiet` for this run (a UART response line on a board with
    /// [`super::LoopConfig::top_half_bytes`], or an edge stimulus on one
    /// with [`super::LoopConfig::quiet_edges`]). Then only for a
    /// wrap (a deadline beyond a counter period is planned at it), a byte
    /// the transmitter refused, a log half full, the wake-up at the
    /// engine's own deadline, and with edge stimuli anything logged (an
    /// answer's capture); not for a start-bit capture (its byte's receive
    /// interrupt runs the engine task), the trigger's rise or fall on a
    /// UART line (logged, and seen with the answer), the queued byte's
    /// write, nor the stimulus compare's match (the pin frozen here; the
    /// engine hears of it with the answer, or at its deadline).
    pub fn on_timer_interrupt<T: TimerHw>(&mut self, hw: &mut T) -> bool {
        if !self.quiet {
            self.service(hw);
            hw.take_compare(Channel::Wake);
            return true;
        }
        let (wraps, logged) = (self.ext.overflows(), self.len);
        let now = self.service(hw);
        let woke = hw.take_compare(Channel::Wake);
        // Half the log held (start bits without their bytes: a noisy
        // line): drained now, before it overflows and loses events.
        let filling = self.len >= LOG_LEN / 2;
        // Quiet edges: an answer (or a trigger's edge before it) logged.
        let answered = self.answers_pend && self.len != logged;
        self.ext.overflows() != wraps || filling || answered || (woke && self.on_wake(hw, now))
    }

    /// The wake-up compare matched, quiet: write the queued byte if its
    /// tick has come, then set the compare to what is next (the byte still
    /// queued, or the engine's deadline). Returns whether the engine task
    /// must run now.
    fn on_wake<T: TimerHw>(&mut self, hw: &mut T, now: u64) -> bool {
        if super::TOP_HALF && self.write_due(hw, now) {
            // Refused: the engine task sends it a bit time later.
            return true;
        }
        let next = match (super::TOP_HALF, self.queued) {
            (true, Some(q)) => q.at.min(self.engine_at),
            _ => self.engine_at,
        };
        if next <= now {
            return true;
        }
        let Some(v) = self.ext.compare_value(next, now) else {
            // Beyond one counter period: the engine plans it at the wrap.
            return true;
        };
        hw.set_compare(Channel::Wake, v as u32);
        hw.take_compare(Channel::Wake);
        hw.set_compare_irq(Channel::Wake, true);
        // Passed while it was written: no match until the wrap. The engine
        // task runs (and writes a byte whose tick has passed itself).
        let after = self.now(hw);
        after >= next && !hw.compare_pending(Channel::Wake)
    }

    /// Write the queued byte if its tick has come: the TX start-bit capture
    /// opened first (as [`super::HwLoop`]'s own send does), the `now` read
    /// before the write kept for the engine task (the software tick: the
    /// service's own, a dozen instructions before, unless the capture's
    /// set-up came between). Returns whether the transmitter refused it.
    fn write_due<T: TimerHw>(&mut self, hw: &mut T, now: u64) -> bool {
        let Some(q) = self.queued else { return false };
        if now < q.at {
            return false;
        }
        self.queued = None;
        let written = if q.capture {
            hw.set_capture(Channel::TxStart, Some(super::seam::Polarity::Falling));
            self.tx_start = None;
            self.now(hw)
        } else {
            now
        };
        let taken = hw.send_byte(q.byte);
        if !taken && q.capture {
            hw.set_capture(Channel::TxStart, None);
        }
        self.sent = Some(SentByte { written, taken });
        self.fresh = true;
        !taken
    }

    /// A byte read from the target line's UART (top priority, in its
    /// receive interrupt): the captures latched so far are logged first,
    /// then the byte with a `now` read after them.
    pub fn on_target_byte<T: TimerHw>(&mut self, hw: &mut T, byte: u8) {
        let at = self.service(hw);
        self.push(Event::Byte { byte, at });
    }

    /// A receive error on the target line.
    pub fn on_target_error(&mut self) {
        self.push(Event::LineError);
    }

    /// Read every capture and the stimulus compare's flag, then `now`; log
    /// them. Returns that `now`.
    pub(super) fn service<T: TimerHw>(&mut self, hw: &mut T) -> u64 {
        if hw.overflow_pending() {
            hw.clear_overflow();
            self.ext.on_overflow();
        }
        // Captures and flags first, `now` second (module docs).
        let response = hw.take_capture(Channel::Response);
        if response.is_some() {
            if let TriggerPhase::Armed { by_capture: true, .. } = self.trigger {
                // The answer: disarm before anything else (module docs).
                // A pulse that got out is logged here, before the answer.
                self.disarm_trigger(hw);
            }
        }
        let tx = hw.take_capture(Channel::TxStart);
        if tx.is_some() {
            // Our own byte's data edges are not wanted: the channel stays
            // shut until the next byte is written.
            hw.set_capture(Channel::TxStart, None);
        }
        if hw.take_compare(Channel::Stimulus) {
            // The edge is made. Frozen: the pin keeps its level and the
            // same compare value a counter period later does nothing (a
            // toggle would invert the line every wrap after a run).
            hw.set_output(OutputMode::Frozen);
            hw.set_compare_irq(Channel::Stimulus, false);
            self.stimulus_fired = true;
            self.fresh = true;
        }
        if self.trigger_mask != 0 && hw.take_compare(Channel::Trigger) {
            match self.trigger {
                TriggerPhase::Armed { seq, at, .. } => self.rose(hw, seq, at),
                TriggerPhase::High { .. } => {
                    // The fall is made: frozen, quiet until the next arming.
                    hw.set_trigger_output(OutputMode::Frozen);
                    hw.set_compare_irq(Channel::Trigger, false);
                    self.trigger = TriggerPhase::Idle;
                }
                TriggerPhase::Idle => hw.set_compare_irq(Channel::Trigger, false),
            }
        }
        let counter = hw.counter();
        let pending = hw.overflow_pending();
        let now = self.ext.now(u64::from(counter), pending);
        if let Some(c) = tx {
            if self.tx_start.is_none() {
                self.tx_start = Some((self.ext.capture(u64::from(c.raw), now), c.overcaptured));
                self.fresh = true;
            }
        }
        if let Some(c) = response {
            let tick = self.ext.capture(u64::from(c.raw), now);
            self.push(Event::Response { tick, overcaptured: c.overcaptured });
        }
        now
    }

    /// Whether anything waits for the engine task: logged events, a
    /// stimulus compare that fired, a start-bit capture, the queued byte's
    /// write. (A start-bit capture the engine task dropped since, opening
    /// the channel for its next byte, still counts: one round more.)
    pub(super) fn has_events(&self) -> bool {
        // Never false while something waits (checked in every test pass).
        debug_assert!(
            self.fresh
                || !(self.len > 0
                    || self.lost > 0
                    || self.stimulus_fired
                    || self.tx_start.is_some()
                    || (super::TOP_HALF && self.sent.is_some())),
            "an event without `fresh`"
        );
        self.fresh
    }

    /// Inlined: out of line, the event went through the stack and the
    /// call cost its own prologue, about 10 instructions a sample.
    #[inline(always)]
    fn push(&mut self, e: Event) {
        self.fresh = true;
        // One test for both "full" and the index's bound (`len` never
        // passes `LOG_LEN`: a compare and a branch less than testing each).
        match self.log.get_mut(self.len) {
            Some(slot) => {
                *slot = e;
                self.len += 1;
            }
            None => self.lost = self.lost.saturating_add(1),
        }
    }

    /// Engine task, under the lock: service the timer once more (a capture
    /// whose interrupt is pending is read now), then hand every event over.
    /// Returns the `now` read after the last capture.
    pub(super) fn collect<T: TimerHw>(&mut self, hw: &mut T, out: &mut Batch) -> u64 {
        let now = self.service(hw);
        let n = self.len.min(LOG_LEN);
        // Mostly one event a pass: the first copied inline, the rest (a
        // `memcpy` call, which costs more than one copy) only when there.
        if n > 0 {
            out.events[0] = self.log[0];
        }
        if n > 1 {
            out.events[1..n].copy_from_slice(&self.log[1..n]);
        }
        out.len = n;
        self.len = 0;
        self.fresh = false;
        out.lost = core::mem::take(&mut self.lost);
        out.stimulus_fired = core::mem::take(&mut self.stimulus_fired);
        out.tx_start = self.tx_start.take();
        // Only a quiet front writes bytes.
        if super::TOP_HALF {
            if let Some(sent) = self.sent {
                self.sent = None;
                out.sent = Some(sent);
            }
        }
        now
    }
}

/// [`Timer::on_target_rx`]'s burst for a UART whose data register holds
/// one byte (the STM32F411's USART; QEMU's model of it): one. Nothing
/// moves from the shift register until RXNE is cleared (RM0383 §19.3.3,
/// "Overrun error"; QEMU's `stm32f2xx_usart` offers the next byte only
/// once the data register is read), so a second read in the same
/// interrupt only ever found nothing (about 30 instructions a sample: the
/// HAL's status read and the loop). A byte that completes after the read
/// sets RXNE and the interrupt comes back; an error is cleared by the
/// HAL's read (status, then data), so none can hold it. (A UART with a
/// FIFO, the Pico's, takes bursts.)
pub const RX_BURST_ONE_BYTE_DR: usize = 1;

/// A board's timer with the [`Front`] that reads it: one resource (RTIC:
/// one shared resource), so that the extender's `now()` never interleaves
/// with its `on_overflow()`.
pub struct Timer<H> {
    /// The board's timer and target line.
    pub hw: H,
    /// The front that reads them.
    pub front: Front,
}

impl<H> core::fmt::Debug for Timer<H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Timer").field("front", &self.front).finish_non_exhaustive()
    }
}

impl<H: TimerHw> Timer<H> {
    /// `hw` with a front for a counter of `bits`.
    pub const fn new(hw: H, bits: TimerBits) -> Self {
        Self { hw, front: Front::new(bits) }
    }

    /// The extended tick now ([`Front::now`]).
    pub fn now(&mut self) -> u64 {
        self.front.now(&mut self.hw)
    }

    /// The timer interrupt ([`Front::on_timer_interrupt`]).
    pub fn on_timer_interrupt(&mut self) -> bool {
        self.front.on_timer_interrupt(&mut self.hw)
    }

    /// The target line's receive interrupt: up to `burst` ([`RX_BURST_ONE_BYTE_DR`]
    /// on a UART whose data register holds one byte) reads of its
    /// UART, each byte logged after the captures latched before it
    /// ([`Front::on_target_byte`]), each receive error counted; it stops
    /// at the first `WouldBlock`, so a stuck error flag cannot wedge the
    /// interrupt for longer than `burst` reads.
    pub fn on_target_rx<R: Read<u8>>(&mut self, rx: &mut R, burst: usize) {
        for _ in 0..burst {
            match rx.read() {
                Ok(byte) => self.front.on_target_byte(&mut self.hw, byte),
                Err(nb::Error::WouldBlock) => break,
                Err(nb::Error::Other(_)) => self.front.on_target_error(),
            }
        }
    }
}
