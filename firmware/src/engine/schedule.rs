//! The stimulus schedule: when each stimulus is planned and requested
//! (interval, dither, arm lead, guard, slot), what the board is asked for
//! and its report of the stimulus, slips and re-anchoring, the start and
//! the stop of a run. Owns [`Next`], the schedule anchor, the dither
//! generator and the request ids.

use latprobe_protocol::{
    Anomalies, Config, ProbeMsg, SampleBatchBuilder, Stimulus, StopReason, IDENTITY_ALPHABET, IDENTITY_COUNT,
    MAX_BATCH_COUNT,
};

use super::rng::Pcg32;
use super::txq::Class;
use super::window::Slot;
use super::{Engine, Run, RunTotals, StimulusRequest};

/// The next stimulus, as far as the schedule got.
#[derive(Debug, Clone, Copy)]
pub(super) enum Next {
    /// Nothing to request: periodic mode, the count is sent, or stopping.
    Done,
    /// Stimulus `seq` is planned at `planned`, but its slot is still busy.
    Blocked { seq: u64, planned: u64 },
    /// Requested of the board and not yet reported as produced.
    Armed { req: StimulusRequest },
}

impl<const Q: usize> Engine<Q> {
    /// The stimulus to produce, while one is wanted and not yet reported by
    /// [`Engine::on_stimulus`]. `None` means: nothing (cancel anything armed).
    /// Its `stimulus` is concrete: with identity, the byte of its `seq`.
    pub fn stimulus_request(&self) -> Option<StimulusRequest> {
        self.requested().copied()
    }

    /// [`Engine::stimulus_request`] by reference (no copy of the request).
    pub fn requested(&self) -> Option<&StimulusRequest> {
        match &self.run.as_ref()?.next {
            Next::Armed { req } => Some(req),
            _ => None,
        }
    }

    /// The earliest extended tick at which the board must call
    /// [`Engine::poll`] (a timeout, a batch flush, a heartbeat, a stall
    /// check, an identity to take back) or produce the requested stimulus.
    /// `None`: nothing is pending (idle). A stimulus time already in the
    /// past (at or before the last `now` given) is left out, so a board
    /// never spins on it.
    pub fn next_deadline(&self) -> Option<u64> {
        self.deadline(false)
    }

    /// [`Engine::next_deadline`] for a board whose top half makes the
    /// requested stimulus at its tick without the engine task (a stimulus
    /// byte written from the wake-up interrupt, `LoopConfig::top_half_bytes`):
    /// the stimulus's own tick left out, and in its place the latest tick
    /// by which the engine must hear that it was made: before its timeout
    /// could pass, and two arm leads before the stimulus after it can be
    /// due, so that one is still asked for in time. (The next stimulus is
    /// planned an interval after this one's schedule tick at the soonest:
    /// dither and slips only delay it.) An answer that comes sooner runs
    /// the engine task anyway, and hears of both.
    pub fn next_deadline_stimulus_held(&self) -> Option<u64> {
        self.deadline(true)
    }

    #[inline(always)]
    fn deadline(&self, held: bool) -> Option<u64> {
        // Plain `min`s on a `u64` (the heartbeat is always due some time):
        // this runs on every pass of the engine task.
        let Some(run) = &self.run else { return self.flush_at };
        let mut d = run.heartbeat_at;
        if let Some(f) = self.flush_at {
            d = d.min(f);
        }
        match &run.next {
            Next::Done => {}
            Next::Armed { req } => {
                if held {
                    let lead = u64::from(self.board.arm_lead_ticks);
                    let next = run.sched_tick + u64::from(run.config.interval_ticks);
                    d = d.min(req.at + run.timeout_lag + 1);
                    d = d.min(next.saturating_sub(2 * lead).max(req.at));
                } else if req.at > self.last_now {
                    d = d.min(req.at);
                }
                // Ticks count from boot and the periods are u32s: no sum here comes
                // near 2^64 (5 800 years at 100 MHz), so plain adds.
                d = d.min(req.at + run.stall + 1);
            }
            Next::Blocked { .. } => {
                // Its slot (`next_seq`'s) frees on an answer, a timeout
                // (below), or when its identity may be taken back.
                if let Some(t) = self.reclaim_at(run, run.slots[run.next_slot]) {
                    d = d.min(t.max(self.last_now.saturating_add(1)));
                }
            }
        }
        if run.config.trigger_ticks != 0 {
            if let Some(t) = self.trigger_request() {
                // A software board raises it then; a hardware one has it
                // armed, and the wake-up costs one poll.
                if t.at > self.last_now {
                    d = d.min(t.at);
                }
            }
        }
        // Stimuli are produced in sequence order at rising ticks: the
        // first one still out times out first.
        for i in run.in_flight() {
            if let Slot::Out { tick, .. } = run.slots[i] {
                d = d.min(tick + run.timeout_lag + 1);
                break;
            }
        }
        Some(d)
    }

    /// The requested stimulus happened at extended tick `tick` (equal to the
    /// request's `at` for a hardware compare, later for a software-timed
    /// board). Ignored (counted) if none was requested.
    pub fn on_stimulus(&mut self, tick: u64, now: u64) {
        self.saw(now);
        let Some(run) = self.run.as_mut() else {
            self.stats.spurious_stimuli += 1;
            return;
        };
        let Next::Armed { req } = run.next else {
            self.stats.spurious_stimuli += 1;
            return;
        };
        debug!("stimulus {} at {}", req.seq, tick);
        // Produced an interval or more after it was requested (a software
        // board that did not run: a suspended virtual probe, a host thread
        // descheduled): a slip like a busy slot's, counted, and the
        // schedule re-anchors at it, so the stimuli after it keep their
        // spacing rather than burst to catch up.
        let late = tick.saturating_sub(req.at);
        let interval = u64::from(run.config.interval_ticks);
        // Its wait, for its sample, when its slot held it (the target was
        // behind): from its planned instant to its tick, and the instants
        // that wait skipped. A probe late by itself (a software board that
        // did not run) is no wait of the target's: counted as a slip
        // below, its tick the true one, nothing charged to the target.
        let charged = run.armed_slip != 0 && run.armed_waited;
        let wait = if charged {
            let waited = tick.saturating_sub(run.armed_planned);
            (u32::try_from(waited).unwrap_or(u32::MAX), run.armed_omitted)
        } else {
            (0, 0)
        };
        if late >= interval {
            let a = &mut self.totals.anomalies;
            // One stimulus, one slip: one its slot held when it was planned
            // was counted then, and its delay grows by this.
            if run.armed_slip == 0 {
                a.slipped += 1;
            }
            a.slip_total_ticks = a.slip_total_ticks.saturating_add(late);
            a.slip_max_ticks = a.slip_max_ticks.max(u64::from(run.armed_slip) + late);
            // Re-anchored at it: the next one an interval later.
            run.sched_tick = tick;
        }
        run.sched_tick = run.sched_tick.saturating_add(interval);
        let i = usize::from(req.slot);
        debug_assert_eq!(i, run.slot_of(req.seq));
        run.slots[i] = Slot::Out { seq: req.seq, tick };
        run.waits[i] = wait;
        run.probe_late[i] = if charged {
            0
        } else {
            u32::try_from(tick.saturating_sub(run.armed_planned)).unwrap_or(u32::MAX)
        };
        run.instants += 1 + u64::from(wait.1);
        run.raised &= !(1 << i);
        run.next_seq = req.seq + 1;
        run.next_slot = if i + 1 >= run.window { 0 } else { i + 1 };
        run.next = Next::Done;
        // Pipelined: with identity the next stimulus is planned at once.
        self.plan(now);
    }

    pub(super) fn start(&mut self, config: Config, now: u64) {
        self.totals = RunTotals::default();
        self.samples = SampleBatchBuilder::new(config.interval_ticks, MAX_BATCH_COUNT);
        self.edges.clear();
        self.flush_at = None;
        let periodic = !config.mode.is_echo();
        // Echo: the first stimulus needs the arm lead. Periodic: edges count
        // from now.
        let start_tick =
            if periodic { now } else { now.saturating_add(u64::from(self.board.arm_lead_ticks)) };
        self.run = Some(Run {
            config,
            start_tick,
            periodic,
            window: config.stimulus.window(),
            sched_tick: start_tick,
            next_seq: 0,
            next_slot: 0,
            stall: self.stall_ticks(&config),
            timeout_lag: u64::from(config.timeout_ticks)
                .saturating_add(u64::from(self.board.response_lag_ticks)),
            emit_seq: 0,
            emit_slot: 0,
            slots: [Slot::Free; IDENTITY_COUNT],
            next: Next::Done,
            heard_until: 0,
            heard_tick: 0,
            instants: 0,
            armed_slip: 0,
            armed_planned: 0,
            armed_omitted: 0,
            armed_waited: false,
            waits: [(0, 0); IDENTITY_COUNT],
            probe_late: [0; IDENTITY_COUNT],
            raised: 0,
            rng: Pcg32::new(config.seed),
            heartbeat_at: now.saturating_add(self.board.heartbeat_ticks()),
            stopping: false,
        });
        info!("start at {}", start_tick);
        self.send(&ProbeMsg::Started { start_tick, first_seq: 0 }, Class::Control);
        self.plan(now);
    }

    /// Plan the next stimulus: request it when its slot is free, else mark
    /// it blocked. It is planned at its place in the schedule plus dither
    /// (drawn once per stimulus, in order: the same seed gives the same
    /// schedule), and requested no sooner than that, than the arm lead
    /// after `now`, nor than `guard` after the sample that last held its
    /// slot ended. A stimulus its slot held back past its plan has slipped:
    /// it is counted with its delay; one slipped by an interval or more
    /// re-anchors the schedule, so later stimuli keep their spacing rather
    /// than bunch up to catch up.
    #[inline(always)]
    pub(super) fn plan(&mut self, now: u64) {
        // Already requested (most calls: after each answer and poll): no
        // call, no set-up.
        if let Some(Run { next: Next::Armed { .. }, .. }) = &self.run {
            return;
        }
        self.plan_next(now);
    }

    fn plan_next(&mut self, now: u64) {
        let lead = u64::from(self.board.arm_lead_ticks);
        let reclaim_wait = self.board.heartbeat_ticks();
        let id = self.next_request_id;
        let Some(run) = self.run.as_mut() else { return };
        let was_blocked = matches!(run.next, Next::Blocked { .. });
        let (seq, planned) = match run.next {
            Next::Armed { .. } => return,
            Next::Blocked { seq, planned } => (seq, planned),
            Next::Done => {
                if !run.wants_more() {
                    return;
                }
                let dither_ticks = run.config.dither_ticks;
                let dither = if dither_ticks == 0 { 0 } else { u64::from(run.rng.up_to(dither_ticks)) };
                (run.next_seq, run.sched_tick.saturating_add(dither))
            }
        };
        if !run.wants_more() {
            run.next = Next::Done;
            return;
        }
        // `seq` is `next_seq` (planned, or blocked since).
        let i = run.next_slot;
        debug_assert_eq!(i, run.slot_of(seq));
        // The end of the sample that last held the slot, if the slot is
        // free; and whether it is let go by the probe's own reclaim timer
        // (no later answer heard: the target silent).
        let mut by_timer = false;
        let ended = match run.slots[i] {
            Slot::Free => None,
            Slot::Out { .. } => {
                run.next = Next::Blocked { seq, planned };
                return;
            }
            Slot::Answered { seq: old, .. } | Slot::TimedOut { seq: old, .. } if old >= run.emit_seq => {
                // Resolved but its sample waits behind an earlier one.
                run.next = Next::Blocked { seq, planned };
                return;
            }
            s @ (Slot::Answered { seq: old, tick, .. } | Slot::TimedOut { seq: old, tick }) => {
                let end = match s {
                    Slot::Answered { latency, .. } => tick.saturating_add(u64::from(latency)),
                    _ => tick.saturating_add(run.timeout()),
                };
                if run.window > 1 && run.heard_until <= old + 1 {
                    // No later stimulus answered yet: an in-order target may
                    // still send this identity's answer (or a duplicate).
                    // Hold it, for a second at most.
                    if now < end.saturating_add(reclaim_wait) {
                        run.next = Next::Blocked { seq, planned };
                        return;
                    }
                    if matches!(s, Slot::TimedOut { .. }) {
                        self.totals.anomalies.reclaimed += 1;
                    }
                    by_timer = true;
                }
                Some(end)
            }
        };
        let mut at = planned.max(now.saturating_add(lead));
        let mut held = was_blocked;
        // When the target let the slot go, by its own ticks: the end of
        // the slot's sample and its guard (had the probe sent it on time),
        // or the answer heard after it
        // that freed an identity held for an in-order answer. Not the
        // tick the probe got to it (a probe late to hear an answer is no
        // wait of the target's), nor the probe's reclaim timer (a silent
        // target: its stimuli are timeouts already).
        let mut released = 0;
        if let Some(end) = ended {
            let guarded = end.saturating_add(u64::from(run.config.guard_ticks));
            held |= guarded > at;
            at = at.max(guarded);
            // Less the probe's own lateness in sending that stimulus.
            released = guarded.saturating_sub(u64::from(run.probe_late[i]));
            if was_blocked && run.window > 1 && !by_timer {
                released = released.max(run.heard_tick);
            }
        }
        run.armed_planned = planned;
        run.armed_waited = released > planned && !by_timer;
        account_slip(run, &mut self.totals.anomalies, planned, at, held);
        let stimulus = match run.config.stimulus {
            // The slot is the identity (`slot_of` with nine slots is
            // `identity_index`): no second fold.
            Stimulus::Identified => {
                debug_assert_eq!(run.window, IDENTITY_COUNT);
                Stimulus::Byte(IDENTITY_ALPHABET[i])
            }
            s => s,
        };
        // `i` < the window (at most nine slots): the cast is lossless.
        run.next = Next::Armed { req: StimulusRequest { id, seq, at, stimulus, slot: i as u8 } };
        self.next_request_id = id.wrapping_add(1);
    }

    /// The host's Stop: periodic runs end now; echo runs send no new
    /// stimulus and end once every stimulus in flight has its sample (at
    /// most one timeout later). A second Stop ends the run at once, and
    /// what is still in flight is abandoned.
    pub(super) fn stop(&mut self, now: u64) {
        let Some(run) = self.run.as_mut() else { return };
        if run.periodic || run.stopping {
            self.finish(StopReason::HostStop, now);
            return;
        }
        run.stopping = true;
        run.next = Next::Done;
        self.emit(now);
    }

    /// With identity, when the identity held by `slot` (answered or timed
    /// out, its sample sent) may be taken back without proof that its
    /// answer is not coming: a second after the sample ended.
    fn reclaim_at(&self, run: &Run, slot: Slot) -> Option<u64> {
        if run.window == 1 {
            return None;
        }
        let end = match slot {
            Slot::Answered { tick, latency, .. } => tick.saturating_add(u64::from(latency)),
            Slot::TimedOut { tick, .. } => tick.saturating_add(run.timeout()),
            Slot::Free | Slot::Out { .. } => return None,
        };
        Some(end.saturating_add(self.board.heartbeat_ticks()))
    }
}

/// The armed stimulus's slip and wait, once its request tick `at` is known:
/// a slip is a delay the slot caused (`held`: still held, or its guard),
/// counted with its delay; one of an interval or more re-anchors the
/// schedule, and, when the target held it (`run.armed_waited`), the
/// instants it skipped are its sample's `omitted`.
#[inline]
fn account_slip(run: &mut Run, a: &mut Anomalies, planned: u64, at: u64, held: bool) {
    // A slip is a delay the slot caused (still held, or its guard); a
    // probe merely late to plan is not counted, its stimulus carries
    // its actual tick either way.
    run.armed_slip = 0;
    run.armed_omitted = 0;
    if at > planned && held {
        let slip = at - planned;
        // Saturated: a slip past 2^32 ticks (40 s at 100 MHz) still counts.
        run.armed_slip = u32::try_from(slip).unwrap_or(u32::MAX);
        a.slipped += 1;
        a.slip_total_ticks = a.slip_total_ticks.saturating_add(slip);
        a.slip_max_ticks = a.slip_max_ticks.max(slip);
        let interval = u64::from(run.config.interval_ticks);
        if slip >= interval {
            // The instants `planned + k·interval` up to `at` get no
            // stimulus: counted for its sample (when the target held
            // it), so the host can put each back as a sample (rare:
            // the division costs nothing per sample); never more than
            // the count has left after this stimulus.
            if run.armed_waited {
                let left = run.config.count.map_or(u64::MAX, |n| n.saturating_sub(run.instants + 1));
                let skipped = (slip / interval).min(left);
                run.armed_omitted = u32::try_from(skipped).unwrap_or(u32::MAX);
            }
            run.sched_tick = at;
        }
    }
}
