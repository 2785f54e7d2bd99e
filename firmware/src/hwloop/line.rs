//! The response line: what it captures in this run ([`Line`]: GPIO edges
//! of one polarity, or UART start bits paired with their bytes), the
//! per-run state reset when a run starts, and what each capture or byte
//! means for the engine (overcaptures, loopback skew). Owns the line, the
//! capture channel's polarity and the start-bit pairer.

use latprobe_protocol::{identity_of, Edge, Mode, ResponseLine, Stimulus, IDENTITY_COUNT};

use super::arm::TxWire;
use super::pairer::Paired;
use super::seam::{Channel, Polarity, TimerHw};
use super::{HwLoop, LoopStats};
use crate::engine::Engine;

/// What the response line captures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Line {
    /// Nothing (no run).
    Off,
    /// GPIO edges of this polarity, each delivered as it is.
    Edges(Polarity),
    /// UART start bits (falling edges) paired with bytes.
    Uart,
}

impl HwLoop {
    /// Per-run state: reset it when a run starts; set the response line.
    /// Returns whether a run of byte stimuli started and the board's check
    /// found no TX start-bit wire (to be said at once).
    pub(super) fn follow_run<T: TimerHw, const Q: usize>(
        &mut self,
        engine: &mut Engine<Q>,
        hw: &mut T,
    ) -> bool {
        let mut absent_at_start = false;
        let run = engine.run_start();
        // Only a run's first pass sets the line and the channel up: on every
        // later pass of the same run they are as it wants them, and nothing
        // else changes them.
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
            // What the line captures follows from the run alone (running,
            // and its stimulus): found once per run, not on every pass.
            self.run_line = match (engine.is_running(), c.map(|c| c.stimulus)) {
                (true, Some(Stimulus::Edge(Edge::Rising))) => Line::Edges(Polarity::Rising),
                (true, Some(Stimulus::Edge(Edge::Falling))) => Line::Edges(Polarity::Falling),
                (true, Some(Stimulus::Edge(Edge::Toggle))) => Line::Edges(Polarity::Both),
                (true, Some(Stimulus::Byte(_) | Stimulus::Identified)) => Line::Uart,
                (true, Some(Stimulus::None(ResponseLine::Gpio))) => Line::Edges(Polarity::Both),
                (true, Some(Stimulus::None(ResponseLine::Uart))) => Line::Uart,
                _ => Line::Off,
            };
            self.set_line(self.run_line);
            // Quiet on a UART response line: its start bits wait for their
            // bytes (echo with byte stimuli, or periodic over a UART). Quiet
            // too with edge stimuli: their answers' captures run the engine.
            // Not with a trigger: the engine asks for it once it has heard
            // of its stimulus, so that pass must come at the match.
            let bytes = super::TOP_HALF && self.cfg.top_half_bytes && self.run_line == Line::Uart;
            let edges = self.cfg.quiet_edges
                && matches!(self.run_line, Line::Edges(_))
                && matches!(c, Some(c) if matches!(c.stimulus, Stimulus::Edge(_)) && c.trigger_ticks == 0);
            self.quiet = bytes || edges;
            self.answers_pend = edges;
            self.sync_line(hw);
        }
        if self.tx_wire == TxWire::Absent {
            hw.set_capture(Channel::TxStart, None);
        }
        absent_at_start
    }

    /// Change what the response line means; the hardware follows in
    /// [`HwLoop::sync_line`].
    pub(super) fn set_line(&mut self, line: Line) {
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
            if polarity.is_some() {
                hw.response_source(self.line == Line::Uart);
            }
            hw.set_capture(Channel::Response, polarity);
            self.hw_polarity = polarity;
        }
    }

    /// An answer goes to the engine: the cost figure starts at `from`.
    pub(super) fn answered(&mut self, from: u64) {
        self.cost_from = Some(from);
        self.marker = false;
    }

    /// Loopback: an answer latched up to the skew allowance before its
    /// stimulus is that stimulus's answer, at its tick. `byte`: a UART
    /// answer's, whose identity names the slot (looked up only in loopback).
    #[inline(always)]
    fn unskew(&mut self, tick: u64, byte: Option<u8>) -> u64 {
        if self.mode != Some(Mode::Loopback) {
            return tick;
        }
        let slot = byte.map_or(0, |b| self.slot_of_byte(b));
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

    pub(super) fn on_capture<const Q: usize>(
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
                let tick = self.unskew(tick, None);
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

    pub(super) fn on_byte<const Q: usize>(&mut self, engine: &mut Engine<Q>, byte: u8, at: u64, now: u64) {
        if !self.cfg.response_capture {
            // No capture hardware: the byte's read is its tick.
            if self.line == Line::Uart {
                let tick = self.unskew(at, Some(byte));
                self.answered(at);
                engine.on_response_byte(tick, byte, now);
            }
            return;
        }
        match self.line {
            Line::Uart => match self.pairer.on_byte(byte, at) {
                Paired::Byte { tick, byte } => {
                    let tick = self.unskew(tick, Some(byte));
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
}
