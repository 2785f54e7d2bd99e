//! Arming: under the timer's lock, the engine's requests are carried out
//! on the timer: the stimulus edge by output compare (or forced in
//! software when its moment has passed), the stimulus byte written with
//! its start-bit capture opened, and the wake-up compare at the next
//! deadline. Owns what is armed ([`Armed`]), whether the TX start-bit
//! wire answered ([`TxWire`]), the TX line's free time and the retry.

use latprobe_protocol::{Edge, Stimulus};

use super::front::{Front, QueuedByte};
use super::seam::{Channel, OutputMode, Polarity, TimerHw};
use super::{HwLoop, TriggerOut, TriggerPhase};
use crate::engine::{Engine, StimulusRequest};

/// Whether this run found the TX start-bit wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TxWire {
    Unknown,
    Wired,
    Absent,
}

/// The stimulus the board has in hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Armed {
    Nothing,
    /// The compare makes the edge at `at`.
    Edge {
        at: u64,
        slot: usize,
    },
    /// The byte waits in the front for its tick (`Front::queued`): the
    /// wake-up interrupt writes it; `capture`: with its start-bit capture.
    Queued {
        slot: usize,
        capture: bool,
    },
    /// The byte went out; its start-bit capture is awaited until
    /// `deadline`, else `soft` (the software estimate) is its tick.
    Byte {
        soft: u64,
        deadline: u64,
        slot: usize,
    },
}

/// What carrying out the engine's requests works on, under the timer's
/// lock: the engine, the front that reads the timer, the timer, and the
/// `now` read when planning began. One value instead of an argument list.
struct Ctx<'a, T, const Q: usize> {
    engine: &'a mut Engine<Q>,
    front: &'a mut Front,
    hw: &'a mut T,
    now: u64,
}

impl HwLoop {
    /// Under the lock: set the response line, arm the stimulus and the
    /// wake-up. Returns whether something is already due (run again).
    pub(super) fn plan<T: TimerHw, const Q: usize>(
        &mut self,
        engine: &mut Engine<Q>,
        front: &mut Front,
        hw: &mut T,
    ) -> bool {
        // The run's line first: a run's first pass sets its capture up,
        // which on the Pico rewrites PIO state for several µs. The `now`
        // the stimulus is armed against is read after it (read before, it
        // made a run's first stimulus a software one in rp2040js: its
        // compare was written after its tick).
        let absent = self.follow_run(engine, hw);
        front.quiet = self.quiet;
        front.answers_pend = self.answers_pend;
        hw.marker(self.marker && engine.is_running());
        if !engine.is_running() {
            // Between runs the stimulus line rests at its idle level.
            if let Some(Stimulus::Edge(edge)) = engine.config().map(|c| c.stimulus) {
                hw.set_output(rest(edge));
            }
        }
        let now = front.now(hw);
        let cx = &mut Ctx { engine, front, hw, now };
        if let Some(from) = self.cost_from.take() {
            let cost = now.saturating_sub(from).min(u64::from(u32::MAX)) as u32;
            self.stats.capture_cost_last = cost;
            self.stats.capture_cost_max = self.stats.capture_cost_max.max(cost);
            if self.stats.capture_cost_min == 0 || cost < self.stats.capture_cost_min {
                self.stats.capture_cost_min = cost;
            }
        }
        if absent {
            self.warn_no_tx_wire(cx.engine, now);
        }
        // By reference: most passes find it armed already (its id done),
        // and a copy of the request is not needed for that.
        match cx.engine.requested() {
            None => self.disarm(cx.hw, cx.front),
            Some(req) if self.done_id == Some(req.id) => {
                // Queued, and its tick came while the lock held the wake-up
                // back: written here (the front has not written it).
                if let (true, Armed::Queued { slot, .. }) = (super::TOP_HALF, self.armed) {
                    let (id, at) = (req.id, req.at);
                    if now >= at {
                        if let Some(q) = cx.front.queued.take() {
                            self.armed = Armed::Nothing;
                            self.send(cx, id, slot, q.byte);
                        }
                    }
                }
            }
            Some(&req) => {
                let slot = usize::from(req.slot);
                match req.stimulus {
                    Stimulus::Edge(edge) => self.arm_edge(cx, req, slot, edge),
                    Stimulus::Byte(b) if now >= req.at => self.send(cx, req.id, slot, b),
                    Stimulus::Byte(b) if super::TOP_HALF && self.quiet => {
                        self.queue(cx, req.id, req.at, slot, b)
                    }
                    Stimulus::Byte(_) | Stimulus::None(_) | Stimulus::Identified => {}
                }
            }
        }
        self.plan_trigger(cx);
        // Held: the stimulus is the top half's to produce (a queued byte, or
        // a quiet edge's compare), and the engine hears of it later.
        let held = (super::TOP_HALF && matches!(self.armed, Armed::Queued { .. }))
            || (self.answers_pend && matches!(self.armed, Armed::Edge { .. }));
        let mut due = if held { cx.engine.next_deadline_stimulus_held() } else { cx.engine.next_deadline() };
        let mut earliest = |t: u64| due = Some(due.map_or(t, |d: u64| d.min(t)));
        if let Armed::Byte { deadline, .. } = self.armed {
            earliest(deadline);
        }
        if let Some(t) = self.retry_at {
            earliest(t);
        }
        if let Some(t) = self.trigger_wake {
            earliest(t);
        }
        if self.quiet {
            // The wake-up interrupt runs the engine task at this tick, and
            // for the queued byte only writes it.
            cx.front.engine_at = due.unwrap_or(u64::MAX);
        }
        if super::TOP_HALF && self.quiet {
            if let Some(q) = cx.front.queued {
                // Due within 10 µs of the byte (stimuli a few arm leads
                // apart): the write pends the engine task at once rather
                // than set the compare for a second interrupt.
                if cx.front.engine_at < q.at + self.periods.soon {
                    cx.front.engine_at = q.at;
                }
                due = Some(due.map_or(q.at, |d| d.min(q.at)));
            }
        }
        // The wake-up compare, set from the `now` planning began with (a
        // deadline that passed since is caught below, by the `now` read
        // after the compare was written).
        let wake = match due {
            None => {
                cx.hw.set_compare_irq(Channel::Wake, false);
                None
            }
            Some(d) if d <= cx.now => return true,
            Some(d) => match cx.front.ext.compare_value(d, cx.now) {
                Some(v) => {
                    cx.hw.set_compare(Channel::Wake, v as u32);
                    cx.hw.take_compare(Channel::Wake);
                    cx.hw.set_compare_irq(Channel::Wake, true);
                    Some(d)
                }
                None => {
                    // Beyond one counter period: the wrap's interrupt re-plans.
                    cx.hw.set_compare_irq(Channel::Wake, false);
                    None
                }
            },
        };
        // Then service the timer, not only read it: a start-bit capture
        // that latched while the lock held its interrupt back is taken now,
        // so the fallback never calls a wired byte unwired (and the rest of
        // the run software-timed). What it logged is delivered next round.
        // Its `now`, read after the compare was written, also tells whether
        // the deadline passed while it was written: no match until the wrap.
        let now = cx.front.service(cx.hw);
        if cx.front.tx_start.is_none() && self.tx_fallback(cx.engine, now) {
            return true;
        }
        if cx.front.has_events() {
            return true;
        }
        wake.is_some_and(|d| now >= d && !cx.hw.compare_pending(Channel::Wake))
    }

    /// The trigger compare follows the engine's [`Engine::trigger_request`]:
    /// armed for the stimulus it names (when within half the compare's
    /// counter period: else a wake-up comes back for it), disarmed when it
    /// names another or none, raised in software at once when its tick
    /// passed before it could be armed. A pulse still high holds the
    /// compare until it falls (10 µs): the next arming waits for that.
    fn plan_trigger<T: TimerHw, const Q: usize>(&mut self, cx: &mut Ctx<'_, T, Q>) {
        self.trigger_wake = None;
        let bits = match self.cfg.trigger {
            TriggerOut::None => return,
            TriggerOut::Software => return self.soft_trigger(cx),
            TriggerOut::Compare { bits } => bits,
        };
        cx.front.set_trigger(bits, self.periods.trigger_width_ticks);
        let want = cx.engine.trigger_request();
        let phase = cx.front.trigger_phase();
        if let TriggerPhase::Armed { seq, at, .. } = phase {
            if want.is_some_and(|w| w.seq == seq && w.at == at) {
                return;
            }
            cx.front.disarm_trigger(cx.hw);
        }
        let Some(w) = want else { return };
        if cx.front.trigger_phase() != TriggerPhase::Idle || cx.front.has_events() {
            // High: its fall's interrupt runs this again. Events the engine
            // has not seen (the pulse that just rose for `w.seq`, or its
            // answer): the next round delivers them, then plans (forcing
            // `w` now would raise a second pulse).
            return;
        }
        let now = cx.front.now(cx.hw);
        let half = 1u64 << (bits.clamp(2, 63) - 1);
        if w.at <= now {
            cx.front.force_trigger(cx.hw, w.seq, now);
        } else if w.at - now < half {
            // One stimulus in flight: its answer's capture disarms it.
            cx.front.arm_trigger(cx.hw, w.seq, w.at, !self.identity && self.cfg.response_capture);
        } else {
            self.trigger_wake = Some(w.at - half / 2);
        }
    }

    /// [`TriggerOut::Software`]: every trigger due now raised (the answers
    /// latched so far are delivered before this runs), the pin forced
    /// high and lowered `trigger_width` later.
    fn soft_trigger<T: TimerHw, const Q: usize>(&mut self, cx: &mut Ctx<'_, T, Q>) {
        if self.soft_fall.is_none() && !cx.engine.has_trigger() {
            // No threshold and no pulse to lower: not even a counter read.
            return;
        }
        let now = cx.front.now(cx.hw);
        // An answer logged since this round collected (its byte read at top
        // priority) may be the one a stimulus waits for: decide once it is
        // delivered, in the next round (`plan` asks for one while the front
        // has events). Deciding now flagged an answer logged before the
        // threshold (QEMU, about one run in five). Under the lock, `now` and
        // the front agree: a byte read later is stamped later.
        while !cx.front.has_events() && cx.engine.trigger_due(now).is_some() {
            cx.hw.set_trigger_output(OutputMode::ForceHigh);
            self.soft_fall = Some(now + self.periods.trigger_width_ticks);
        }
        match self.soft_fall {
            Some(f) if now >= f => {
                cx.hw.set_trigger_output(OutputMode::ForceLow);
                self.soft_fall = None;
            }
            Some(f) => self.trigger_wake = Some(f),
            None => {}
        }
    }

    /// Nothing is wanted (the run stopped): cancel what is armed.
    fn disarm<T: TimerHw>(&mut self, hw: &mut T, front: &mut Front) {
        match self.armed {
            // Not written yet: never will be. (Written: its record is
            // collected and dropped, no stimulus being wanted.)
            Armed::Queued { .. } => front.queued = None,
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

    /// Program the stimulus compare so the hardware makes `edge` (the
    /// request's) at `req.at`, or make it in software now if that moment
    /// has passed.
    fn arm_edge<T: TimerHw, const Q: usize>(
        &mut self,
        cx: &mut Ctx<'_, T, Q>,
        req: StimulusRequest,
        slot: usize,
        edge: Edge,
    ) {
        let (id, mut now) = (req.id, cx.now);
        // Planned late (its tick has passed, or is too close to arm the
        // compare for: less than half the rest ahead): the line may still
        // be at the active level the last stimulus left it at, and an edge
        // forced now would then be no edge at all. So it rests now, and the
        // edge comes a short rest later, by the compare like any stimulus.
        let setup = u64::from(self.cfg.compare_setup_ticks);
        let at = if req.at <= now + self.periods.late_rest_ticks / 2 + setup {
            cx.hw.set_output(rest(edge));
            now = cx.front.now(cx.hw);
            now + self.periods.late_rest_ticks + setup
        } else {
            req.at
        };
        let Some(v) = cx.front.ext.compare_value(at, now) else {
            // Beyond one period: the wrap's interrupt arms it.
            return;
        };
        // RM0383 §13.3.8 (output compare): the mode before the compare
        // value. First the idle level (the pin moves only at the match),
        // and the old value parked a period away (it cannot match while
        // the mode changes); the flag cleared; the match mode; then CCR1.
        // A match can then only happen at `v`, with the right mode.
        cx.hw.set_output(rest(edge));
        cx.hw.set_compare(Channel::Stimulus, (now as u32).wrapping_sub(1));
        cx.hw.take_compare(Channel::Stimulus);
        cx.hw.set_output(match edge {
            Edge::Rising => OutputMode::HighOnMatch,
            Edge::Falling => OutputMode::LowOnMatch,
            Edge::Toggle => OutputMode::ToggleOnMatch,
        });
        cx.hw.set_compare(Channel::Stimulus, v as u32);
        cx.hw.set_compare_irq(Channel::Stimulus, true);
        self.done_id = Some(id);
        self.armed = Armed::Edge { at, slot };
        // The counter passed `at` before CCR1 held it: no match will come.
        let after = cx.front.now(cx.hw);
        if after >= at && !cx.hw.compare_pending(Channel::Stimulus) {
            cx.hw.set_compare_irq(Channel::Stimulus, false);
            self.armed = Armed::Nothing;
            self.force_edge(cx, edge, slot);
        }
    }

    /// Make the stimulus edge in software and report the tick read right
    /// before it.
    fn force_edge<T: TimerHw, const Q: usize>(&mut self, cx: &mut Ctx<'_, T, Q>, edge: Edge, slot: usize) {
        let high = match edge {
            Edge::Rising => true,
            Edge::Falling => false,
            Edge::Toggle => !cx.hw.output_level(),
        };
        let tick = cx.front.now(cx.hw);
        cx.hw.set_output(if high { OutputMode::ForceHigh } else { OutputMode::ForceLow });
        self.stimulus(cx.engine, tick, slot, tick, true);
    }

    /// Whether a stimulus byte's tick is its start bit's capture: the
    /// board has the channel and the wire was not found absent.
    fn hw_tick(&self) -> bool {
        self.cfg.tx_capture && self.cfg.response_capture && self.tx_wire != TxWire::Absent
    }

    /// Leave the stimulus byte to the front, which writes it from the
    /// wake-up interrupt at `at` (the compare is set to it in `plan`); the
    /// engine hears of it in its next pass (`deliver`).
    fn queue<T: TimerHw, const Q: usize>(
        &mut self,
        cx: &mut Ctx<'_, T, Q>,
        id: u32,
        at: u64,
        slot: usize,
        byte: u8,
    ) {
        let capture = self.hw_tick();
        cx.front.queued = Some(QueuedByte { byte, at, capture });
        self.done_id = Some(id);
        self.armed = Armed::Queued { slot, capture };
    }

    /// Write the stimulus byte; its tick is its start bit's capture when
    /// the wire is there, else the software tick, reported at once.
    fn send<T: TimerHw, const Q: usize>(&mut self, cx: &mut Ctx<'_, T, Q>, id: u32, slot: usize, byte: u8) {
        let hw_tick = self.hw_tick();
        if hw_tick {
            cx.hw.set_capture(Channel::TxStart, Some(Polarity::Falling));
            cx.front.tx_start = None;
        }
        let written = cx.front.now(cx.hw);
        if !cx.hw.send_byte(byte) {
            // The transmitter still holds two bytes: not sent. Again a bit
            // time later (the engine's deadline has passed, it will not
            // wake us for it).
            if hw_tick {
                cx.hw.set_capture(Channel::TxStart, None);
            }
            self.retry_at = Some(written + self.periods.bit_ticks.max(1));
            return;
        }
        self.done_id = Some(id);
        self.sent(cx.engine, written, slot, hw_tick, written);
    }

    /// A stimulus byte was written at `written` (here, or by the front):
    /// its start-bit capture awaited, or its software tick reported.
    pub(super) fn sent<const Q: usize>(
        &mut self,
        engine: &mut Engine<Q>,
        written: u64,
        slot: usize,
        hw_tick: bool,
        now: u64,
    ) {
        self.retry_at = None;
        // The start bit begins at once on an idle line, or when the byte
        // before has left.
        let soft = written.max(self.tx_free_at);
        self.tx_free_at = soft + self.periods.byte_ticks;
        if hw_tick {
            self.armed = Armed::Byte { soft, deadline: soft + self.periods.tx_capture_wait, slot };
        } else {
            self.stimulus(engine, soft, slot, now, true);
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
