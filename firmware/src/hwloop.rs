//! The capture loop: every timing decision of a board with a hardware timer,
//! behind the [`TimerHw`] seam, so that it runs and is tested on the host.
//!
//! ```text
//!   top priority (TIM2, target UART RX)          engine priority (one task, lower)
//!  ┌──────────────────────────────────────┐    ┌──────────────────────────────────────────┐
//!  │ Front: overflow, then every capture  │    │ HwLoop::run                              │
//!  │ and compare flag, *then* `now`;      │    │  1 lock: Front::collect → events, now    │
//!  │ events logged with extended ticks    │──▶ │  2 deliver: stimulus first, then the     │
//!  │ (no engine, no encoding: a few µs)   │    │    captures/bytes in latch order → Engine│
//!  │ pend the engine task                 │    │    (CRC/COBS happen here), poll(now)     │
//!  └──────────────────────────────────────┘    │  3 lock: plan → arm compare/capture/wake │
//!                                              └──────────────────────────────────────────┘
//! ```
//!
//! Why two levels: the capture registers must be read before the next edge
//! overwrites them, so their interrupt is the top priority; batch encoding
//! (postcard, CRC, COBS) takes tens of µs and must not delay it. The
//! [`Front`] does only register reads at the top priority; the [`HwLoop`]
//! drives the engine from a lower priority, taking the timer's lock only
//! for its register accesses ([`TimerLock`]).
//!
//! The rules, each tested through a fake timer (`hwloop/tests.rs`):
//!
//! - **Read order.** Captures and compare flags are read *before* the `now`
//!   they are converted with ([`crate::ticks`]); a capture that latches
//!   between the two is read in the next pass, never placed a counter
//!   period in the past.
//! - **Stimulus before answer.** A stimulus compare that fired is delivered
//!   before the captures of the same pass: its answer can latch before the
//!   interrupt runs.
//! - **Response line per stimulus.** UART (a byte, fixed or identified):
//!   falling edges only, each paired with the byte the UART reads
//!   ([`StartBitPairer`]), so one answer is one start bit. GPIO: only the
//!   answer's polarity (`Rising`, `Falling`; both for `Toggle`), so the
//!   line's return to idle is never an answer. Periodic: the line the
//!   configuration names ([`ResponseLine`]): every edge of a GPIO, or each
//!   UART byte at its start bit as above. It is never guessed from the
//!   edges: a glitch, a break or a byte cut by the start of the run would
//!   decide it wrongly for the whole run.
//! - **Overcapture.** The latest edge of several is never taken for the
//!   first: in UART modes the byte is not timed (the pairer's rule 5), in
//!   echo over GPIO the capture is dropped (the sample times out), in
//!   periodic mode the latest edge is still a true edge and is kept. Each
//!   is counted in `Anomalies::overcaptures`.
//! - **Input filter.** Every capture latches [`LoopConfig::capture_delay_ticks`]
//!   after its edge (the filter's N samples): that delay is subtracted, so
//!   a capture says when the edge happened, like a compare.
//! - **Stimulus tick of a byte.** The hardware capture of its start bit
//!   (`TxStart`) when the board has the wire; without it, the counter read
//!   right before the write (or, with the transmitter still busy, the end
//!   of the byte before), reported at once and counted as soft
//!   ([`Engine::count_soft_stimulus`]). Whether the wire is there is found
//!   out per run: the first byte waits two bit times for its capture.
//! - **Edge stimulus.** OC mode first, then the compare value (RM0383
//!   §13.3.8), the pin frozen after the match (a toggle never repeats a
//!   counter period later), and a compare that passed while it was written
//!   becomes a forced edge timed in software.
//! - **Loopback skew.** In loopback the same edge reaches two capture
//!   channels; one may latch [`LoopConfig::loopback_skew_ticks`] before the
//!   other. Such an answer is placed at its stimulus, never before it.
//!
//! [`Engine::count_soft_stimulus`]: crate::Engine::count_soft_stimulus

use latprobe_protocol::{identity_of, Edge, Mode, ResponseLine, Stimulus, IDENTITY_COUNT};

use crate::capture::{Paired, StartBitPairer};
use crate::engine::Engine;
use crate::seam::{Channel, OutputMode, Polarity, TimerHw};
use crate::ticks::{TickExtender, TimerBits};

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;

/// Events the [`Front`] holds for the engine task at most. A run at a 1 ms
/// interval logs one or two per stimulus; the engine task drains them
/// within its own run time.
pub const LOG_LEN: usize = 16;

/// Rounds of deliver-and-plan per [`HwLoop::run`] before it lets other
/// tasks in and comes back 10 µs later.
const ROUNDS: usize = 4;

/// What a board's timer and lines are like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopConfig {
    /// Rate of the counter, in Hz.
    pub timer_hz: u32,
    /// Width of the counter.
    pub timer_bits: TimerBits,
    /// Baud rate of the target line; 0 when it has no bit timing (QEMU's
    /// UART moves a byte at once).
    pub baud: u32,
    /// The response line is timestamped by input capture. Without (QEMU),
    /// a byte's tick is the counter read when the byte is taken.
    pub response_capture: bool,
    /// The board has a capture channel for its own TX start bit. Whether it
    /// is wired is found out at run time.
    pub tx_capture: bool,
    /// Ticks from an edge at a capture pin to its latch: the input filter
    /// (RM0383 §13.4.7, ICxF: N consecutive samples at f_SAMPLING). Taken
    /// off every capture.
    pub capture_delay_ticks: u32,
    /// In loopback, how many ticks an answer may latch before its stimulus
    /// and still be its answer (two channels see one edge).
    pub loopback_skew_ticks: u32,
}

impl LoopConfig {
    /// One bit time on the target line, in ticks; 0 for a line without
    /// bit timing (`baud` 0: an emulated UART).
    pub const fn bit_ticks(&self) -> u64 {
        if self.baud == 0 {
            0
        } else {
            self.timer_hz as u64 / self.baud as u64
        }
    }

    /// One 8N1 byte (10 bits), in ticks.
    pub const fn byte_ticks(&self) -> u64 {
        10 * self.bit_ticks()
    }

    /// How long after the write a byte's start-bit capture must have come
    /// if the wire is there: the transmitter starts within a bit time of
    /// a write to an idle line; two bit times leave room.
    pub const fn tx_capture_wait(&self) -> u64 {
        2 * self.bit_ticks()
    }
}

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
    ext: TickExtender,
    log: [Event; LOG_LEN],
    head: usize,
    len: usize,
    /// Events lost to a full log.
    lost: u32,
    /// The stimulus compare matched since the engine task last looked.
    stimulus_fired: bool,
    /// The first TX start-bit capture since the channel was opened.
    tx_start: Option<(u64, bool)>,
}

/// What one `Front::collect` handed over.
#[derive(Debug, Clone)]
pub struct Batch {
    events: [Event; LOG_LEN],
    len: usize,
    lost: u32,
    stimulus_fired: bool,
    tx_start: Option<(u64, bool)>,
}

impl Batch {
    const fn new() -> Self {
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
    fn service<T: TimerHw>(&mut self, hw: &mut T) -> u64 {
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
    fn has_events(&self) -> bool {
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
    fn collect<T: TimerHw>(&mut self, hw: &mut T, out: &mut Batch) -> u64 {
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

/// Exclusive access to the [`Front`] and the timer for the time of a
/// closure: an RTIC lock on the board, the plain values in tests.
pub trait TimerLock {
    /// The board's timer.
    type Hw: TimerHw;
    /// Run `f` with the front and the timer, other users kept out.
    fn lock<R>(&mut self, f: impl FnOnce(&mut Front, &mut Self::Hw) -> R) -> R;
}

/// What the response line captures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Nothing (no run).
    Off,
    /// GPIO edges of this polarity, each delivered as it is.
    Edges(Polarity),
    /// UART start bits (falling edges) paired with bytes.
    Uart,
}

/// Whether this run found the TX start-bit wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TxWire {
    Unknown,
    Wired,
    Absent,
}

/// The stimulus the board has in hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Armed {
    Nothing,
    /// The compare makes the edge at `at`.
    Edge {
        at: u64,
        slot: usize,
    },
    /// The byte went out; its start-bit capture is awaited until
    /// `deadline`, else `soft` (the software estimate) is its tick.
    Byte {
        soft: u64,
        deadline: u64,
        slot: usize,
    },
}

/// Counters of the loop itself (logged by the board; the wire does not
/// carry them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LoopStats {
    /// Stimuli timed in software this run (also in the engine's stats).
    pub soft_stimuli: u32,
    /// Answers placed at their stimulus by the loopback skew allowance.
    pub skew_clamped: u32,
    /// Cost of the capture path, in ticks: from the latch of an answer
    /// (for a UART answer: from the read of its byte) to the engine having
    /// queued its sample and polled. The last and the largest this run.
    pub capture_cost_last: u32,
    /// See `capture_cost_last`.
    pub capture_cost_max: u32,
    /// Events lost because the front's log was full.
    pub lost_events: u32,
}

/// The bottom half: drives the engine from the front's events and carries
/// out its requests on the timer (module docs).
#[derive(Debug, Clone)]
pub struct HwLoop {
    cfg: LoopConfig,
    armed: Armed,
    /// Id of the last request handled (armed or produced).
    done_id: Option<u32>,
    tx_wire: TxWire,
    /// When the TX line is free again: the end of the last byte sent.
    tx_free_at: u64,
    line: Line,
    /// What the response capture channel is set to.
    hw_polarity: Option<Polarity>,
    pairer: StartBitPairer,
    /// The run the per-run state belongs to (its start tick).
    run: Option<u64>,
    mode: Option<Mode>,
    identity: bool,
    /// Stimulus tick per slot, for the loopback skew allowance.
    stim_ticks: [Option<u64>; IDENTITY_COUNT],
    /// Tick of the last answer handed to the engine, for the cost figure.
    cost_from: Option<u64>,
    /// The stimulus could not be written: try again at this tick.
    retry_at: Option<u64>,
    /// The scope trigger's level: a stimulus is out, its answer not in.
    marker: bool,
    stats: LoopStats,
}

impl HwLoop {
    /// A loop for a board described by `cfg`.
    pub const fn new(cfg: LoopConfig) -> Self {
        Self {
            cfg,
            armed: Armed::Nothing,
            done_id: None,
            tx_wire: TxWire::Unknown,
            tx_free_at: 0,
            line: Line::Off,
            hw_polarity: None,
            pairer: StartBitPairer::new(cfg.timer_hz, cfg.baud),
            run: None,
            mode: None,
            identity: false,
            stim_ticks: [None; IDENTITY_COUNT],
            cost_from: None,
            retry_at: None,
            marker: false,
            stats: LoopStats {
                soft_stimuli: 0,
                skew_clamped: 0,
                capture_cost_last: 0,
                capture_cost_max: 0,
                lost_events: 0,
            },
        }
    }

    /// The board description.
    pub const fn config(&self) -> &LoopConfig {
        &self.cfg
    }

    /// This run's counters.
    pub const fn stats(&self) -> LoopStats {
        self.stats
    }

    /// Whether the TX start-bit wire answered in this run: `Some(true)`
    /// wired, `Some(false)` absent (stimulus ticks are software ticks),
    /// `None` not known yet.
    pub const fn tx_wired(&self) -> Option<bool> {
        match self.tx_wire {
            TxWire::Unknown => None,
            TxWire::Wired => Some(true),
            TxWire::Absent => Some(false),
        }
    }

    /// The engine task: deliver what the front logged, poll, and carry out
    /// the engine's requests; repeated while something is already due.
    pub fn run<L: TimerLock, const Q: usize>(&mut self, engine: &mut Engine<Q>, timer: &mut L) {
        let mut batch = Batch::new();
        for _ in 0..ROUNDS {
            let now = timer.lock(|front, hw| front.collect(hw, &mut batch));
            self.deliver(engine, &batch, now);
            if !timer.lock(|front, hw| self.plan(engine, front, hw)) {
                return;
            }
        }
        // Still something due after the rounds: come back in 10 µs rather
        // than wait for the next wrap, and let the other tasks in.
        timer.lock(|front, hw| {
            let now = front.now(hw);
            let soon = now + u64::from(self.cfg.timer_hz / 100_000).max(1);
            hw.set_compare(Channel::Wake, soon as u32);
            hw.take_compare(Channel::Wake);
            hw.set_compare_irq(Channel::Wake, true);
        });
    }

    /// Hand a batch to the engine: stimuli first, then answers in latch
    /// order, then `poll(now)`.
    fn deliver<const Q: usize>(&mut self, engine: &mut Engine<Q>, b: &Batch, now: u64) {
        for _ in 0..b.lost {
            // A capture or byte that never reached us: one answer the less.
            engine.count_overcapture();
        }
        self.stats.lost_events = self.stats.lost_events.saturating_add(b.lost);
        if b.stimulus_fired {
            if let Armed::Edge { at, slot } = self.armed {
                self.armed = Armed::Nothing;
                self.stimulus(engine, at, slot, now, false);
            }
        }
        if let Some((raw_tick, overcaptured)) = b.tx_start {
            if let Armed::Byte { soft, slot, .. } = self.armed {
                self.armed = Armed::Nothing;
                self.tx_wire = TxWire::Wired;
                if overcaptured {
                    // A data edge of our byte overwrote its start bit: the
                    // capture is not the start. The software tick is.
                    self.stimulus(engine, soft, slot, now, true);
                } else {
                    let tick = raw_tick.saturating_sub(u64::from(self.cfg.capture_delay_ticks));
                    self.tx_free_at = tick + self.cfg.byte_ticks();
                    self.stimulus(engine, tick, slot, now, false);
                }
            }
        }
        // Before any answer: a byte whose start-bit capture is overdue has
        // its software tick reported, so its answer is never "before" it.
        self.tx_fallback(engine, now);
        for e in &b.events[..b.len] {
            match *e {
                Event::Response { tick, overcaptured } => {
                    let tick = tick.saturating_sub(u64::from(self.cfg.capture_delay_ticks));
                    self.on_capture(engine, tick, overcaptured, now);
                }
                Event::Byte { byte, at } => self.on_byte(engine, byte, at, now),
                Event::LineError => engine.count_line_error(),
            }
        }
        engine.poll(now);
    }

    /// Report a stimulus to the engine and remember its tick for the skew
    /// allowance.
    fn stimulus<const Q: usize>(
        &mut self,
        engine: &mut Engine<Q>,
        tick: u64,
        slot: usize,
        now: u64,
        soft: bool,
    ) {
        self.stim_ticks[slot] = Some(tick);
        self.marker = true;
        engine.on_stimulus(tick, now.max(tick));
        if soft {
            self.stats.soft_stimuli = self.stats.soft_stimuli.saturating_add(1);
            engine.count_soft_stimulus();
        }
    }

    /// Say that stimulus bytes are software-timed for want of the wire, on
    /// RTT and to the user on the serial link.
    fn warn_no_tx_wire<const Q: usize>(&mut self, engine: &mut Engine<Q>, now: u64) {
        warn!("no start-bit capture of the stimulus byte (wire PA9 to PB10): software stimulus ticks");
        engine.log(
            latprobe_protocol::LogLevel::Warn,
            "no start-bit capture of the stimulus byte (wire PA9 to PB10): software stimulus ticks",
            now,
        );
    }

    fn tx_fallback<const Q: usize>(&mut self, engine: &mut Engine<Q>, now: u64) {
        if let Armed::Byte { soft, deadline, slot } = self.armed {
            if now >= deadline {
                if self.tx_wire != TxWire::Absent {
                    self.warn_no_tx_wire(engine, now);
                }
                self.tx_wire = TxWire::Absent;
                self.armed = Armed::Nothing;
                self.stimulus(engine, soft, slot, now, true);
            }
        }
    }

    /// An answer goes to the engine: the cost figure starts at `from`.
    fn answered(&mut self, from: u64) {
        self.cost_from = Some(from);
        self.marker = false;
    }

    /// Loopback: an answer latched up to the skew allowance before its
    /// stimulus is that stimulus's answer, at its tick.
    fn unskew(&mut self, tick: u64, slot: usize) -> u64 {
        if self.mode != Some(Mode::Loopback) {
            return tick;
        }
        match self.stim_ticks[slot] {
            Some(s) if tick < s && s - tick <= u64::from(self.cfg.loopback_skew_ticks) => {
                self.stats.skew_clamped = self.stats.skew_clamped.saturating_add(1);
                s
            }
            _ => tick,
        }
    }

    fn slot_of_byte(&self, byte: u8) -> usize {
        if self.identity {
            identity_of(byte).unwrap_or(0)
        } else {
            0
        }
    }

    fn on_capture<const Q: usize>(
        &mut self,
        engine: &mut Engine<Q>,
        tick: u64,
        overcaptured: bool,
        now: u64,
    ) {
        let periodic = self.mode == Some(Mode::Periodic);
        match self.line {
            Line::Off => {}
            Line::Edges(_) => {
                if overcaptured {
                    engine.count_overcapture();
                    if !periodic {
                        // The answer was the first edge, and it is gone:
                        // the latest is not its time.
                        return;
                    }
                }
                let tick = self.unskew(tick, 0);
                self.answered(tick);
                engine.on_capture(tick, now);
            }
            Line::Uart => {
                if overcaptured {
                    engine.count_overcapture();
                    self.pairer.push_overcaptured(tick);
                } else {
                    self.pairer.push_capture(tick);
                }
            }
        }
    }

    fn on_byte<const Q: usize>(&mut self, engine: &mut Engine<Q>, byte: u8, at: u64, now: u64) {
        if !self.cfg.response_capture {
            // No capture hardware: the byte's read is its tick.
            if self.line == Line::Uart {
                let tick = self.unskew(at, self.slot_of_byte(byte));
                self.answered(at);
                engine.on_response_byte(tick, byte, now);
            }
            return;
        }
        match self.line {
            Line::Uart => match self.pairer.on_byte(byte, at) {
                Paired::Byte { tick, byte } => {
                    let tick = self.unskew(tick, self.slot_of_byte(byte));
                    self.answered(at);
                    engine.on_response_byte(tick, byte, now);
                }
                // Its start bit went unread (counted when that happened).
                Paired::Overwritten => {}
                // Its start bit was never captured.
                Paired::NoStartBit => engine.count_overcapture(),
            },
            // Bytes on a GPIO line mean nothing.
            Line::Edges(_) | Line::Off => {}
        }
    }

    /// Under the lock: set the response line, arm the stimulus and the
    /// wake-up. Returns whether something is already due (run again).
    fn plan<T: TimerHw, const Q: usize>(
        &mut self,
        engine: &mut Engine<Q>,
        front: &mut Front,
        hw: &mut T,
    ) -> bool {
        let now = front.now(hw);
        if let Some(from) = self.cost_from.take() {
            let cost = now.saturating_sub(from).min(u64::from(u32::MAX)) as u32;
            self.stats.capture_cost_last = cost;
            self.stats.capture_cost_max = self.stats.capture_cost_max.max(cost);
        }
        if self.follow_run(engine, hw) {
            self.warn_no_tx_wire(engine, now);
        }
        hw.marker(self.marker && engine.is_running());
        let config = engine.config().copied();
        if !engine.is_running() {
            // Between runs the stimulus line rests at its idle level.
            if let Some(Stimulus::Edge(edge)) = config.map(|c| c.stimulus) {
                hw.set_output(rest(edge));
            }
        }
        match engine.stimulus_request() {
            None => self.disarm(hw),
            Some(req) if self.done_id == Some(req.id) => {}
            Some(req) => {
                let slot = if self.identity { (req.seq % IDENTITY_COUNT as u64) as usize } else { 0 };
                match req.stimulus {
                    Stimulus::Edge(edge) => self.arm_edge(engine, front, hw, req.id, req.at, slot, edge, now),
                    Stimulus::Byte(b) if now >= req.at => self.send(engine, front, hw, req.id, slot, b),
                    Stimulus::Byte(_) | Stimulus::None(_) | Stimulus::Identified => {}
                }
            }
        }
        // Service the timer, not only read it: a start-bit capture that
        // latched while the lock held its interrupt back is taken now, so
        // the fallback below never calls a wired byte unwired (and the rest
        // of the run software-timed). What it logged is delivered next.
        let now = front.service(hw);
        if front.tx_start.is_none() {
            self.tx_fallback(engine, now);
        }
        if front.has_events() {
            return true;
        }
        let mut due = engine.next_deadline();
        let mut earliest = |t: u64| due = Some(due.map_or(t, |d: u64| d.min(t)));
        if let Armed::Byte { deadline, .. } = self.armed {
            earliest(deadline);
        }
        if let Some(t) = self.retry_at {
            earliest(t);
        }
        let Some(due) = due else {
            hw.set_compare_irq(Channel::Wake, false);
            return false;
        };
        if due <= now {
            return true;
        }
        match front.ext.compare_value(due, now) {
            Some(v) => {
                hw.set_compare(Channel::Wake, v as u32);
                hw.take_compare(Channel::Wake);
                hw.set_compare_irq(Channel::Wake, true);
                // Passed while it was written: no match until the wrap.
                let after = front.now(hw);
                after >= due && !hw.compare_pending(Channel::Wake)
            }
            None => {
                // Beyond one counter period: the wrap's interrupt re-plans.
                hw.set_compare_irq(Channel::Wake, false);
                false
            }
        }
    }

    /// Per-run state: reset it when a run starts; set the response line.
    /// Returns whether a run of byte stimuli started and the board's check
    /// found no TX start-bit wire (to be said at once).
    fn follow_run<T: TimerHw, const Q: usize>(&mut self, engine: &mut Engine<Q>, hw: &mut T) -> bool {
        let mut absent_at_start = false;
        let run = engine.run_start();
        if run != self.run {
            self.run = run;
            let c = engine.config().copied();
            self.mode = c.map(|c| c.mode);
            self.identity = c.is_some_and(|c| c.stimulus.has_identity());
            self.stim_ticks = [None; IDENTITY_COUNT];
            if run.is_some() {
                // A wire may have been added or removed between runs: the
                // board checks it now, with the line idle, where it can;
                // else the first byte's capture tells.
                // Only a run of stimulus bytes needs the wire, and only it
                // pays for the check (the Nucleo's takes about 40 µs, well
                // inside the arm lead before the first stimulus).
                let bytes = c.is_some_and(|c| c.stimulus.is_byte());
                let check = bytes && self.cfg.tx_capture && self.cfg.response_capture;
                self.tx_wire = match check.then(|| hw.tx_wire_present()).flatten() {
                    Some(true) => TxWire::Wired,
                    Some(false) => {
                        absent_at_start = true;
                        TxWire::Absent
                    }
                    None => TxWire::Unknown,
                };
                self.stats = LoopStats::default();
            }
            self.set_line(Line::Off);
        }
        let want = match (engine.is_running(), engine.config().map(|c| c.stimulus)) {
            (true, Some(Stimulus::Edge(Edge::Rising))) => Line::Edges(Polarity::Rising),
            (true, Some(Stimulus::Edge(Edge::Falling))) => Line::Edges(Polarity::Falling),
            (true, Some(Stimulus::Edge(Edge::Toggle))) => Line::Edges(Polarity::Both),
            (true, Some(Stimulus::Byte(_) | Stimulus::Identified)) => Line::Uart,
            (true, Some(Stimulus::None(ResponseLine::Gpio))) => Line::Edges(Polarity::Both),
            (true, Some(Stimulus::None(ResponseLine::Uart))) => Line::Uart,
            _ => Line::Off,
        };
        self.set_line(want);
        self.sync_line(hw);
        if self.tx_wire == TxWire::Absent {
            hw.set_capture(Channel::TxStart, None);
        }
        absent_at_start
    }

    /// Change what the response line means; the hardware follows in
    /// [`HwLoop::sync_line`].
    fn set_line(&mut self, line: Line) {
        if line != self.line {
            self.pairer.clear();
            self.line = line;
        }
    }

    /// Make the response capture channel capture what the line needs.
    fn sync_line<T: TimerHw>(&mut self, hw: &mut T) {
        let polarity = match self.line {
            Line::Off => None,
            Line::Edges(p) => Some(p),
            Line::Uart => Some(Polarity::Falling),
        };
        if self.cfg.response_capture && polarity != self.hw_polarity {
            hw.set_capture(Channel::Response, polarity);
            self.hw_polarity = polarity;
        }
    }

    /// Nothing is wanted (the run stopped): cancel what is armed.
    fn disarm<T: TimerHw>(&mut self, hw: &mut T) {
        match self.armed {
            Armed::Edge { .. } => {
                // Frozen: the pin keeps its level, the match does nothing.
                hw.set_output(OutputMode::Frozen);
                hw.set_compare_irq(Channel::Stimulus, false);
            }
            Armed::Byte { .. } => hw.set_capture(Channel::TxStart, None),
            Armed::Nothing => {}
        }
        self.armed = Armed::Nothing;
        self.retry_at = None;
    }

    /// Program the stimulus compare so the hardware makes `edge` at `at`,
    /// or make it in software now if that moment has passed.
    #[allow(clippy::too_many_arguments)]
    fn arm_edge<T: TimerHw, const Q: usize>(
        &mut self,
        engine: &mut Engine<Q>,
        front: &mut Front,
        hw: &mut T,
        id: u32,
        at: u64,
        slot: usize,
        edge: Edge,
        now: u64,
    ) {
        let Some(v) = front.ext.compare_value(at, now) else {
            if at <= now {
                self.done_id = Some(id);
                self.force_edge(engine, front, hw, edge, slot);
            }
            // Else beyond one period: the wrap's interrupt arms it.
            return;
        };
        // RM0383 §13.3.8 (output compare): the mode before the compare
        // value. First the idle level (the pin moves only at the match),
        // and the old value parked a period away (it cannot match while
        // the mode changes); the flag cleared; the match mode; then CCR1.
        // A match can then only happen at `v`, with the right mode.
        hw.set_output(rest(edge));
        hw.set_compare(Channel::Stimulus, (now as u32).wrapping_sub(1));
        hw.take_compare(Channel::Stimulus);
        hw.set_output(match edge {
            Edge::Rising => OutputMode::HighOnMatch,
            Edge::Falling => OutputMode::LowOnMatch,
            Edge::Toggle => OutputMode::ToggleOnMatch,
        });
        hw.set_compare(Channel::Stimulus, v as u32);
        hw.set_compare_irq(Channel::Stimulus, true);
        self.done_id = Some(id);
        self.armed = Armed::Edge { at, slot };
        // The counter passed `at` before CCR1 held it: no match will come.
        let after = front.now(hw);
        if after >= at && !hw.compare_pending(Channel::Stimulus) {
            hw.set_compare_irq(Channel::Stimulus, false);
            self.armed = Armed::Nothing;
            self.force_edge(engine, front, hw, edge, slot);
        }
    }

    /// Make the stimulus edge in software and report the tick read right
    /// before it.
    fn force_edge<T: TimerHw, const Q: usize>(
        &mut self,
        engine: &mut Engine<Q>,
        front: &mut Front,
        hw: &mut T,
        edge: Edge,
        slot: usize,
    ) {
        let high = match edge {
            Edge::Rising => true,
            Edge::Falling => false,
            Edge::Toggle => !hw.output_level(),
        };
        let tick = front.now(hw);
        hw.set_output(if high { OutputMode::ForceHigh } else { OutputMode::ForceLow });
        self.stimulus(engine, tick, slot, tick, true);
    }

    /// Write the stimulus byte; its tick is its start bit's capture when
    /// the wire is there, else the software tick, reported at once.
    fn send<T: TimerHw, const Q: usize>(
        &mut self,
        engine: &mut Engine<Q>,
        front: &mut Front,
        hw: &mut T,
        id: u32,
        slot: usize,
        byte: u8,
    ) {
        let hw_tick = self.cfg.tx_capture && self.cfg.response_capture && self.tx_wire != TxWire::Absent;
        if hw_tick {
            hw.set_capture(Channel::TxStart, Some(Polarity::Falling));
            front.tx_start = None;
        }
        let written = front.now(hw);
        if !hw.send_byte(byte) {
            // The transmitter still holds two bytes: not sent. Again a bit
            // time later (the engine's deadline has passed, it will not
            // wake us for it).
            if hw_tick {
                hw.set_capture(Channel::TxStart, None);
            }
            self.retry_at = Some(written + self.cfg.bit_ticks().max(1));
            return;
        }
        self.retry_at = None;
        // The start bit begins at once on an idle line, or when the byte
        // before has left.
        let soft = written.max(self.tx_free_at);
        self.tx_free_at = soft + self.cfg.byte_ticks();
        self.done_id = Some(id);
        if hw_tick {
            self.armed = Armed::Byte { soft, deadline: soft + self.cfg.tx_capture_wait(), slot };
        } else {
            self.stimulus(engine, soft, slot, written, true);
        }
    }
}

/// The stimulus pin's resting level for `edge`: low before a rising edge,
/// high before a falling one; a toggle keeps its level.
const fn rest(edge: Edge) -> OutputMode {
    match edge {
        Edge::Rising => OutputMode::ForceLow,
        Edge::Falling => OutputMode::ForceHigh,
        Edge::Toggle => OutputMode::Frozen,
    }
}
