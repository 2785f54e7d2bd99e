//! Delivery: a collected [`Batch`] goes to the engine in the order the
//! rules want (lost events counted, the stimulus first, then every answer
//! in latch order, then `poll(now)`), and a stimulus is reported with its
//! tick: the hardware's, or the software fallback's when the start-bit
//! capture is overdue.

use super::arm::{Armed, TxWire};
use super::front::Event;
use super::HwLoop;
use crate::engine::Engine;

impl HwLoop {
    /// Hand the collected batch to the engine: stimuli first, then answers
    /// in latch order, then `poll(now)`.
    pub(super) fn deliver<const Q: usize>(&mut self, engine: &mut Engine<Q>, now: u64) {
        let (lost, stimulus_fired, tx_start) =
            (self.batch.lost, self.batch.stimulus_fired, self.batch.tx_start);
        for _ in 0..lost {
            // A capture or byte that never reached us: one answer the less.
            engine.count_overcapture();
        }
        self.stats.lost_events = self.stats.lost_events.saturating_add(lost);
        if stimulus_fired {
            if let Armed::Edge { at, slot } = self.armed {
                self.armed = Armed::Nothing;
                self.stimulus(engine, at, slot, now, false);
            }
        }
        if let (true, Some(sent)) = (super::TOP_HALF, self.batch.sent) {
            self.batch.sent = None;
            // Written by the front at its tick: as the loop's own send. A
            // record without its `Queued` belongs to a run that stopped.
            if let Armed::Queued { slot, capture } = self.armed {
                self.armed = Armed::Nothing;
                if sent.taken {
                    self.sent(engine, sent.written, slot, capture, now);
                } else {
                    // The transmitter had no room: the loop sends it itself
                    // a bit time later (the request is not done).
                    self.done_id = None;
                    self.retry_at = Some(sent.written + self.periods.bit_ticks.max(1));
                }
            }
        }
        if let Some((raw_tick, overcaptured)) = tx_start {
            if let Armed::Byte { soft, slot, .. } = self.armed {
                self.armed = Armed::Nothing;
                self.tx_wire = TxWire::Wired;
                if overcaptured {
                    // A data edge of our byte overwrote its start bit: the
                    // capture is not the start. The software tick is.
                    self.stimulus(engine, soft, slot, now, true);
                } else {
                    let tick = raw_tick.saturating_sub(u64::from(self.cfg.capture_delay_ticks));
                    self.tx_free_at = tick + self.periods.byte_ticks;
                    self.stimulus(engine, tick, slot, now, false);
                }
            }
        }
        // Before any answer: a byte whose start-bit capture is overdue has
        // its software tick reported, so its answer is never "before" it.
        self.tx_fallback(engine, now);
        for i in 0..self.batch.len {
            match self.batch.events[i] {
                Event::Response { tick, overcaptured } => {
                    let tick = tick.saturating_sub(u64::from(self.cfg.capture_delay_ticks));
                    self.on_capture(engine, tick, overcaptured, now);
                }
                Event::Byte { byte, at } => self.on_byte(engine, byte, at, now),
                Event::LineError => engine.count_line_error(),
                // Logged before the answer whose capture found it out.
                Event::Trigger { seq, .. } => engine.on_trigger(seq, now),
            }
        }
        engine.poll(now);
    }

    /// Report a stimulus to the engine and remember its tick for the skew
    /// allowance.
    pub(super) fn stimulus<const Q: usize>(
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
    pub(super) fn warn_no_tx_wire<const Q: usize>(&mut self, engine: &mut Engine<Q>, now: u64) {
        warn!("no start-bit capture of the stimulus byte (wire PA9 to PB10): software stimulus ticks");
        engine.log(
            latprobe_protocol::LogLevel::Warn,
            "no start-bit capture of the stimulus byte (wire PA9 to PB10): software stimulus ticks",
            now,
        );
    }

    /// A byte whose start-bit capture is overdue (its deadline passed at
    /// `now`) is reported with its software tick. Returns whether it was.
    #[inline]
    pub(super) fn tx_fallback<const Q: usize>(&mut self, engine: &mut Engine<Q>, now: u64) -> bool {
        let Armed::Byte { soft, deadline, slot } = self.armed else { return false };
        if now < deadline {
            return false;
        }
        if self.tx_wire != TxWire::Absent {
            self.warn_no_tx_wire(engine, now);
        }
        self.tx_wire = TxWire::Absent;
        self.armed = Armed::Nothing;
        self.stimulus(engine, soft, slot, now, true);
        true
    }
}
