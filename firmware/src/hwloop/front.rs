//! The top half: the [`Front`] reads the timer at the top priority (every
//! capture and compare flag, *then* `now`) and logs what latched as
//! [`Event`]s with extended ticks, for the engine task to collect as a
//! [`Batch`]. Owns the tick extender (the one place `now` is read), the
//! event log and the flags the engine task has not seen yet. A [`Timer`]
//! pairs it with the board's timer, as one resource.

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
}

/// The top half: reads the timer at the top priority and logs what it saw.
/// It holds the tick extender, so it is the one place `now` is read.
#[derive(Debug, Clone)]
pub struct Front {
    pub(super) ext: TickExtender,
    log: [Event; LOG_LEN],
    head: usize,
    len: usize,
    /// Events lost to a full log.
    lost: u32,
    /// The stimulus compare matched since the engine task last looked.
    stimulus_fired: bool,
    /// The first TX start-bit capture since the channel was opened.
    pub(super) tx_start: Option<(u64, bool)>,
}

/// What one `Front::collect` handed over.
#[derive(Debug, Clone)]
pub struct Batch {
    pub(super) events: [Event; LOG_LEN],
    pub(super) len: usize,
    pub(super) lost: u32,
    pub(super) stimulus_fired: bool,
    pub(super) tx_start: Option<(u64, bool)>,
}

impl Batch {
    pub(super) const fn new() -> Self {
        Self { events: [Event::LineError; LOG_LEN], len: 0, lost: 0, stimulus_fired: false, tx_start: None }
    }
}

impl Front {
    /// A front for a counter of `bits`.
    pub const fn new(bits: TimerBits) -> Self {
        Self {
            ext: TickExtender::new(bits),
            log: [Event::LineError; LOG_LEN],
            head: 0,
            len: 0,
            lost: 0,
            stimulus_fired: false,
            tx_start: None,
        }
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

    /// The timer interrupt (top priority): log what latched. Returns
    /// whether the engine task must run (always: a wrap, a compare or a
    /// capture each need it).
    pub fn on_timer_interrupt<T: TimerHw>(&mut self, hw: &mut T) -> bool {
        self.service(hw);
        // The wake-up compare only needs the engine task to run.
        hw.take_compare(Channel::Wake);
        true
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
        }
        let counter = hw.counter();
        let pending = hw.overflow_pending();
        let now = self.ext.now(u64::from(counter), pending);
        if let Some(c) = tx {
            if self.tx_start.is_none() {
                self.tx_start = Some((self.ext.capture(u64::from(c.raw), now), c.overcaptured));
            }
        }
        if let Some(c) = response {
            let tick = self.ext.capture(u64::from(c.raw), now);
            self.push(Event::Response { tick, overcaptured: c.overcaptured });
        }
        now
    }

    /// Whether anything waits for the engine task: logged events, a
    /// stimulus compare that fired, a start-bit capture.
    pub(super) fn has_events(&self) -> bool {
        self.len > 0 || self.lost > 0 || self.stimulus_fired || self.tx_start.is_some()
    }

    fn push(&mut self, e: Event) {
        if self.len == LOG_LEN {
            self.lost = self.lost.saturating_add(1);
            return;
        }
        self.log[(self.head + self.len) % LOG_LEN] = e;
        self.len += 1;
    }

    /// Engine task, under the lock: service the timer once more (a capture
    /// whose interrupt is pending is read now), then hand every event over.
    /// Returns the `now` read after the last capture.
    pub(super) fn collect<T: TimerHw>(&mut self, hw: &mut T, out: &mut Batch) -> u64 {
        let now = self.service(hw);
        out.len = 0;
        while self.len > 0 {
            out.events[out.len] = self.log[self.head];
            out.len += 1;
            self.head = (self.head + 1) % LOG_LEN;
            self.len -= 1;
        }
        out.lost = core::mem::take(&mut self.lost);
        out.stimulus_fired = core::mem::take(&mut self.stimulus_fired);
        out.tx_start = self.tx_start.take();
        now
    }
}

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

    /// The target line's receive interrupt: up to `burst` reads of its
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
