//! The trigger: which stimulus's trigger output is armed next, when it is
//! due, what the board reports of it, and whether a sample triggered.
//! Owns the per-slot "raised" bits of the run ([`Run::raised`](super::Run)).
//!
//! ```text
//!   stimulus at S ──▶ trigger_request() = { seq, at: S + trigger_ticks + 1 }
//!                       │ hardware board: output compare at `at`, disarmed by
//!                       │ the answer (the slot leaves `Out`, the request moves on)
//!                       │ software board: trigger_due(now) raises it once now >= at
//!                       ▼
//!   on_trigger(seq) ─▶ raised bit of seq's slot ─▶ emit: Sample::triggered
//! ```
//!
//! The rule: a stimulus triggers when it has gone more than
//! `trigger_ticks` without an answer, so `triggered` is `latency >
//! trigger_ticks` or a timeout (the timeout is above the threshold, see
//! `validate`). A pulse the board reports for a stimulus whose answer
//! latched just before the match (a hardware compare whose disarm came too
//! late) flags its sample too: the flag says the trigger line rose, so the
//! target's trace snapshot of that sequence number is never an orphan.

use super::window::Slot;
use super::Engine;

/// The trigger output the engine wants armed: the earliest stimulus still
/// unanswered whose trigger has not been raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TriggerRequest {
    /// Sequence number of the stimulus it watches.
    pub seq: u64,
    /// The first extended tick at which the stimulus has gone more than
    /// `trigger_ticks` unanswered: raise the trigger line here.
    pub at: u64,
}

impl<const Q: usize> Engine<Q> {
    /// Whether the running measurement has a trigger threshold
    /// (`Config::trigger_ticks`): without one, [`Engine::trigger_request`]
    /// and [`Engine::trigger_due`] are always `None`.
    pub fn has_trigger(&self) -> bool {
        self.run.as_ref().is_some_and(|r| r.config.trigger_ticks > 0)
    }

    /// The trigger to arm (a hardware compare at `at`), if the run has a
    /// threshold and a stimulus is unanswered whose trigger is not raised.
    /// When its answer arrives the request moves on (to the next stimulus
    /// in flight, or `None`): the board then disarms or re-programs its
    /// compare.
    pub fn trigger_request(&self) -> Option<TriggerRequest> {
        let run = self.run.as_ref()?;
        let thr = u64::from(run.config.trigger_ticks);
        if thr == 0 {
            return None;
        }
        let mut best: Option<TriggerRequest> = None;
        for (i, slot) in run.slots[..run.window].iter().enumerate() {
            if let Slot::Out { seq, tick } = *slot {
                if run.raised & (1 << i) == 0 {
                    let at = tick.saturating_add(thr).saturating_add(1);
                    if best.is_none_or(|b| at < b.at) {
                        best = Some(TriggerRequest { seq, at });
                    }
                }
            }
        }
        best
    }

    /// The board raised its trigger output for stimulus `seq` (its compare
    /// matched, or a software board raised it by [`Engine::trigger_due`]).
    /// A report for a stimulus whose sample is already sent (or none at
    /// all) is counted in [`EngineStats::late_triggers`](super::EngineStats::late_triggers), never attached to
    /// another sample.
    pub fn on_trigger(&mut self, seq: u64, now: u64) {
        self.saw(now);
        let Some(run) = self.run.as_mut() else {
            self.stats.late_triggers += 1;
            return;
        };
        let i = run.slot_of(seq);
        let holds = match run.slots[i] {
            Slot::Out { seq: s, .. } | Slot::Answered { seq: s, .. } | Slot::TimedOut { seq: s, .. } => {
                s == seq
            }
            Slot::Free => false,
        };
        if holds && seq >= run.emit_seq {
            run.raised |= 1 << i;
            self.stats.triggers += 1;
        } else {
            self.stats.late_triggers += 1;
        }
    }

    /// A software board's trigger (no compare hardware: the virtual probe,
    /// QEMU): the stimulus whose trigger is due at `now` and not raised
    /// yet, marked raised; the board raises its line for it. Call it after
    /// delivering the answers latched before `now`. Due: unanswered past
    /// its [`TriggerRequest::at`], or resolved as late (answered after the
    /// threshold, or timed out) before the board looked; each stimulus at
    /// most once. Call it again after [`Engine::poll`]: a trigger whose
    /// `at` the poll's `now` has passed is no longer in
    /// [`Engine::next_deadline`] (a board with the compare armed must not
    /// spin on it).
    pub fn trigger_due(&mut self, now: u64) -> Option<u64> {
        self.saw(now);
        let run = self.run.as_ref()?;
        let thr = u64::from(run.config.trigger_ticks);
        if thr == 0 {
            return None;
        }
        let mut due: Option<u64> = None;
        for (i, slot) in run.slots[..run.window].iter().enumerate() {
            let late = match *slot {
                Slot::Out { seq, tick } => (now > tick.saturating_add(thr)).then_some(seq),
                Slot::Answered { seq, latency, .. } => (u64::from(latency) > thr).then_some(seq),
                Slot::TimedOut { seq, .. } => Some(seq),
                Slot::Free => None,
            };
            if let Some(seq) = late {
                if run.raised & (1 << i) == 0 && due.is_none_or(|d| seq < d) {
                    due = Some(seq);
                }
            }
        }
        let seq = due?;
        let run = self.run.as_mut()?;
        let i = run.slot_of(seq);
        run.raised |= 1 << i;
        self.stats.triggers += 1;
        Some(seq)
    }

    /// Whether the sample of slot `i`, resolved as `latency` (`None`: timed
    /// out), triggered: past the threshold, or raised by the board.
    pub(super) fn triggered(&self, i: usize, latency: Option<u32>) -> bool {
        let Some(run) = self.run.as_ref() else { return false };
        let thr = run.config.trigger_ticks;
        thr > 0 && (run.raised & (1 << i) != 0 || latency.is_none_or(|l| l > thr))
    }
}
