//! The capture loop: every timing decision of a board with a hardware timer,
//! behind the [`TimerHw`] seam, so that it runs and is tested on the host.
//!
//! ```text
//!   top priority (TIM2, target UART RX)          engine priority (one task, lower)
//!  ┌──────────────────────────────────────┐    ┌──────────────────────────────────────────┐
//!  │ Front: overflow, then every capture  │    │ HwLoop::run                              │
//!  │ and compare flag, *then* `now`;      │    │  1 lock: Front::collect → events, now    │
//!  │ events logged with extended ticks    │──▶ │  2 deliver: stimulus first, then the     │
//!  │ (no engine, no encoding: a few µs);  │    │    captures/bytes in latch order → Engine│
//!  │ a queued stimulus byte written;      │    │    (CRC/COBS happen here), poll(now)     │
//!  │ pend the engine task (when it must)  │    │  3 lock: plan → arm compare/capture/wake │
//!  └──────────────────────────────────────┘    │    (or queue the byte for the top half)  │
//!                                              └──────────────────────────────────────────┘
//! ```
//!
//! Why two levels: the capture registers must be read before the next edge
//! overwrites them, so their interrupt is the top priority; batch encoding
//! (postcard, CRC, COBS) takes tens of µs and must not delay it. The
//! [`Front`] does only register accesses at the top priority (a queued
//! stimulus byte is one more write); the [`HwLoop`]
//! drives the engine from a lower priority, taking the timer's lock only
//! for its register accesses ([`TimerLock`]).
//!
//! The rules, each tested through a fake timer (`hwloop/tests/`):
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
//!   configuration names ([`ResponseLine`](latprobe_protocol::ResponseLine)): every edge of a GPIO, or each
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
//! - **Byte stimulus from the top half** ([`LoopConfig::top_half_bytes`]:
//!   the Nucleo, QEMU). A byte planned ahead is queued in the [`Front`];
//!   the wake-up interrupt writes it at its tick, as the engine task
//!   would (the capture opened first, the `now` before the write kept),
//!   and the engine hears of it in its next pass: the answer's, or at the
//!   latest before the byte's timeout and two arm leads before the next
//!   stimulus can be due ([`Engine::next_deadline_stimulus_held`]). A
//!   byte whose tick passed under the lock is written by the engine task;
//!   one the transmitter refuses runs the engine task at once, which
//!   writes it a bit time later. On a UART response line (echo with byte
//!   stimuli, periodic over a UART) the timer's interrupt runs the engine
//!   task only when it must (`Front::on_timer_interrupt`): one pass a
//!   sample instead of two (QEMU) or four (the Nucleo: the wake-up, both
//!   start bits, the byte), one an edge in periodic mode instead of two.
//! - **Edge stimulus.** OC mode first, then the compare value (RM0383
//!   §13.3.8), the pin frozen after the match (a toggle never repeats a
//!   counter period later), and a compare that passed while it was written
//!   becomes a forced edge timed in software. With
//!   [`LoopConfig::quiet_edges`] (no trigger in the run) the match does not
//!   run the engine task: the answer's capture does, or the engine's
//!   deadline without the stimulus's tick, and the engine hears of both in
//!   one pass.
//! - **Loopback skew.** In loopback the same edge reaches two capture
//!   channels; one may latch [`LoopConfig::loopback_skew_ticks`] before the
//!   other. Such an answer is placed at its stimulus, never before it.
//!
//!
//! The parts, by what each owns:
//!
//! ```text
//!   seam.rs     TimerHw: the board's timer and target line, register accesses only
//!   front.rs    Front: the tick extender and the event log (top priority); Timer
//!   deliver.rs  a Batch to the engine in order; stimulus ticks, soft fallback
//!   line.rs     the response line (Line, capture polarity, pairer), per-run state
//!   pairer.rs   StartBitPairer: a UART byte paired with its start-bit capture
//!   arm.rs      the requests carried out (Armed, TxWire, compares, byte writes)
//!   mod.rs      LoopConfig, LoopStats, TimerLock and HwLoop::run
//! ```
//!
//! [`Engine::count_soft_stimulus`]: crate::Engine::count_soft_stimulus

mod arm;
mod deliver;
mod front;
mod line;
pub mod pairer;
pub mod seam;

use latprobe_protocol::{Mode, IDENTITY_COUNT};

use crate::engine::Engine;
use crate::ticks::TimerBits;
use arm::{Armed, TxWire};
pub use front::TriggerPhase;
use line::Line;
use pairer::StartBitPairer;
use seam::{Channel, Polarity, TimerHw};

pub use front::{Batch, Event, Front, Timer, RX_BURST_ONE_BYTE_DR};

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;

/// Events the [`Front`] holds for the engine task at most. A run at a 1 ms
/// interval logs one or two per stimulus; the engine task drains them
/// within its own run time.
pub const LOG_LEN: usize = 16;

/// Whether this build has the top half's byte writes
/// ([`LoopConfig::top_half_bytes`]): every build but the Pico's. The Pico's
/// engine task writes its bytes itself (its boards ask for nothing else),
/// and compiled out, the top half's tests cost its passes nothing; its
/// figures were measured so (docs/dev/throughput.md).
pub(crate) const TOP_HALF: bool = !cfg!(feature = "board-rp2040-pico");

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
    /// The trigger output (`--trigger-above`).
    pub trigger: TriggerOut,
    /// Stimulus bytes are written by the top half: the wake-up interrupt
    /// writes a byte at its tick ([`Front::on_timer_interrupt`]), and the
    /// engine task runs once a sample (for the answer) instead of twice.
    /// With it, on a UART response line, the timer's interrupt runs the
    /// engine task only when it must: not for a start-bit capture (its
    /// byte's receive interrupt does) nor for the byte's write. The board
    /// pends the engine task only when `on_timer_interrupt` says so.
    pub top_half_bytes: bool,
    /// An edge stimulus's match does not run the engine task: the timer's
    /// interrupt logs it (the pin frozen, the compare's interrupt off) and
    /// runs the engine task only for an answer's capture, a wrap, a log
    /// half full or the engine's own deadline, which leaves out the
    /// stimulus's tick while it is armed
    /// ([`Engine::next_deadline_stimulus_held`]). The engine hears of the
    /// stimulus with its answer: one pass a sample instead of two, whatever
    /// the latency. Not in a run with a trigger (`--trigger-above`): the
    /// engine asks for the trigger once it has heard of its stimulus. The
    /// board pends the engine task only when `on_timer_interrupt` says so.
    pub quiet_edges: bool,
    /// How long arming the stimulus compare takes on this board, from the
    /// `now` it is armed against to the compare holding its value: a
    /// stimulus closer than this and half the late rest is armed a rest
    /// later instead ([`LoopConfig::late_rest_ticks`]), by the compare, so
    /// it never misses its tick and turns into a software edge. A plain
    /// timer's register writes take a few cycles (0 here); the Pico's
    /// PIO set-up takes microseconds.
    pub compare_setup_ticks: u32,
}

/// A board's trigger output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerOut {
    /// None: the board announces no `TRIGGER`.
    None,
    /// Decided in software when the engine task runs
    /// ([`Engine::trigger_due`], after the answers are delivered), the pin
    /// (if any) forced high, and low again 10 µs later: late by the task's
    /// latency. QEMU's board, which models no compare pins, so its trigger
    /// drives nothing a test can see: its samples are flagged all the same.
    Software,
    /// [`Channel::Trigger`], an output compare whose counter reads the
    /// measurement counter modulo 2^`bits` (Nucleo, planned: TIM3, 16 bits,
    /// started with TIM2 by its TRGO). It rises in hardware at the
    /// request's tick; the answer's capture disarms it in the top half, in
    /// one-in-flight modes (module docs of `front`).
    Compare {
        /// Width of the trigger compare's counter.
        bits: u8,
    },
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

    /// How long the stimulus line rests before the edge of a stimulus
    /// planned late (its tick passed before it could be armed): 10 µs, so
    /// that a target sees a low (or high) phase of a length its edge
    /// detector can take before the edge, and so that the compare can
    /// still be armed in time on the slowest board (the Pico's M0+ takes
    /// about 4.5 µs from the rest to the word in its PIO's FIFO, and wants
    /// the target 2 µs ahead of that).
    pub const fn late_rest_ticks(&self) -> u64 {
        let t = self.timer_hz as u64 / 100_000;
        if t == 0 {
            1
        } else {
            t
        }
    }

    /// How long the trigger pulse stays high: 10 µs.
    pub const fn trigger_width_ticks(&self) -> u64 {
        self.late_rest_ticks()
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

/// The periods [`LoopConfig`] derives, computed once in [`HwLoop::new`]:
/// each is a 64-bit division, a library routine on these cores, and the
/// loop needs them on every stimulus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Periods {
    bit_ticks: u64,
    byte_ticks: u64,
    tx_capture_wait: u64,
    late_rest_ticks: u64,
    trigger_width_ticks: u64,
    /// 10 µs, at least a tick: how soon [`HwLoop::run`] comes back.
    soon: u64,
}

impl Periods {
    const fn of(cfg: &LoopConfig) -> Self {
        let soon = cfg.timer_hz as u64 / 100_000;
        Self {
            bit_ticks: cfg.bit_ticks(),
            byte_ticks: cfg.byte_ticks(),
            tx_capture_wait: cfg.tx_capture_wait(),
            late_rest_ticks: cfg.late_rest_ticks(),
            trigger_width_ticks: cfg.trigger_width_ticks(),
            soon: if soon == 0 { 1 } else { soon },
        }
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
    /// The smallest this run (0: none yet): a pass that queued a sample
    /// and built no frame. The largest is usually a pass that also coded
    /// a whole batch frame (every 64th sample, and the run's last).
    pub capture_cost_min: u32,
    /// Events lost because the front's log was full.
    pub lost_events: u32,
}

/// The bottom half: drives the engine from the front's events and carries
/// out its requests on the timer (module docs).
#[derive(Debug, Clone)]
pub struct HwLoop {
    cfg: LoopConfig,
    periods: Periods,
    armed: Armed,
    /// Id of the last request handled (armed or produced).
    done_id: Option<u32>,
    tx_wire: TxWire,
    /// When the TX line is free again: the end of the last byte sent.
    tx_free_at: u64,
    line: Line,
    /// The line the running measurement wants ([`HwLoop::follow_run`]).
    run_line: Line,
    /// What the response capture channel is set to.
    hw_polarity: Option<Polarity>,
    /// This run's bytes go by the top half ([`LoopConfig::top_half_bytes`]
    /// and a UART response line), or its edge stimuli are quiet
    /// ([`LoopConfig::quiet_edges`]): the front is quiet.
    quiet: bool,
    /// Quiet edges: an answer's capture runs the engine task.
    answers_pend: bool,
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
    /// The trigger compare is too far ahead to arm, or a software pulse
    /// is to fall: come back then.
    trigger_wake: Option<u64>,
    /// A software trigger pulse is high until this tick.
    soft_fall: Option<u64>,
    /// What the last `Front::collect` handed over. Kept here, not built per
    /// pass: a fresh one (its 16 events set, then moved) cost about 500
    /// instructions a pass, more than the pass's own work.
    batch: Batch,
    stats: LoopStats,
}

impl HwLoop {
    /// A loop for a board described by `cfg`.
    pub const fn new(cfg: LoopConfig) -> Self {
        Self {
            cfg,
            periods: Periods::of(&cfg),
            armed: Armed::Nothing,
            done_id: None,
            tx_wire: TxWire::Unknown,
            tx_free_at: 0,
            line: Line::Off,
            run_line: Line::Off,
            hw_polarity: None,
            quiet: false,
            answers_pend: false,
            pairer: StartBitPairer::new(cfg.timer_hz, cfg.baud),
            run: None,
            mode: None,
            identity: false,
            stim_ticks: [None; IDENTITY_COUNT],
            cost_from: None,
            retry_at: None,
            marker: false,
            trigger_wake: None,
            soft_fall: None,
            batch: Batch::new(),
            stats: LoopStats {
                soft_stimuli: 0,
                skew_clamped: 0,
                capture_cost_last: 0,
                capture_cost_max: 0,
                capture_cost_min: 0,
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
        for _ in 0..ROUNDS {
            let batch = &mut self.batch;
            let now = timer.lock(|front, hw| front.collect(hw, batch));
            self.deliver(engine, now);
            if !timer.lock(|front, hw| self.plan(engine, front, hw)) {
                return;
            }
        }
        // Still something due after the rounds: come back in 10 µs rather
        // than wait for the next wrap, and let the other tasks in.
        timer.lock(|front, hw| {
            let now = front.now(hw);
            let soon = now + self.periods.soon;
            front.engine_at = soon;
            hw.set_compare(Channel::Wake, soon as u32);
            hw.take_compare(Channel::Wake);
            hw.set_compare_irq(Channel::Wake, true);
        });
    }
}
