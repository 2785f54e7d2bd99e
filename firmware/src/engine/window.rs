//! The in-flight window and matching: each answer (a capture, a byte) is
//! matched to the stimulus in its slot or counted as late, duplicate,
//! unmatched or wrong; resolved samples go out in sequence order; periodic
//! edges are stamped. Owns the slots ([`Slot`]), the highest answer heard
//! and the next sample to send.

use latprobe_protocol::{identity_of, EdgeStamp, Mode, Outcome, Sample, StopReason};

use super::Engine;

/// One slot of the in-flight window: the stimulus that last used it. With
/// identity the window has one slot per identity (slot `seq % 9`); without,
/// one slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    /// Not used yet in this run.
    Free,
    /// Stimulus `seq` happened at `tick`; no answer yet.
    Out { seq: u64, tick: u64 },
    /// Answered `latency` ticks after `tick`.
    Answered { seq: u64, tick: u64, latency: u32 },
    /// No answer within the timeout.
    TimedOut { seq: u64, tick: u64 },
}

impl<const Q: usize> Engine<Q> {
    /// A capture on the response line at extended tick `tick`, with no byte:
    /// a response in `gpio-echo`, GPIO loopback and fixed-byte `uart-echo`;
    /// an edge (or byte) in periodic mode. With identity on, a capture
    /// without its byte cannot be matched and counts as unmatched: use
    /// [`Engine::on_response_byte`]. Deliver every capture latched at or
    /// before `now` before calling [`Engine::poll`] with that `now`, in the
    /// order they were latched.
    pub fn on_capture(&mut self, tick: u64, now: u64) {
        self.on_response(tick, None, now);
    }

    /// An answer byte whose start bit was captured at extended tick `tick`.
    /// With identity on, the byte names the stimulus it answers; otherwise
    /// it is the same as [`Engine::on_capture`].
    pub fn on_response_byte(&mut self, tick: u64, byte: u8, now: u64) {
        self.on_response(tick, Some(byte), now);
    }

    fn on_response(&mut self, tick: u64, byte: Option<u8>, now: u64) {
        self.saw(now);
        let floor = u64::from(self.board.uart_echo_floor_ticks);
        let Some(run) = self.run.as_mut() else {
            self.stats.late_responses += 1;
            return;
        };
        let a = &mut self.totals.anomalies;
        if run.periodic {
            // An edge latched before the Start was handled is not part of
            // the run.
            if tick < run.start_tick {
                self.stats.late_responses += 1;
                return;
            }
            let e = EdgeStamp { seq: run.next_seq, tick };
            run.next_seq += 1;
            self.totals.taken += 1;
            self.record_edge(&e, now);
            self.check_edge_count(now);
            return;
        }
        let identity = run.config.stimulus.has_identity();
        let i = if identity {
            match byte.map(identity_of) {
                None => {
                    a.unmatched += 1;
                    return;
                }
                Some(None) => {
                    a.wrong_bytes += 1;
                    return;
                }
                Some(Some(id)) => id,
            }
        } else {
            0
        };
        match run.slots[i] {
            Slot::Out { seq, tick: stim } => {
                let uart = run.config.mode == Mode::UartEcho;
                if tick < stim || (uart && tick - stim < floor) {
                    // Before the stimulus, or faster than the line allows:
                    // the echo of an earlier stimulus.
                    a.late += 1;
                    self.stats.late_responses += 1;
                    return;
                }
                let latency = tick - stim;
                if seq >= run.heard_until {
                    run.heard_until = seq + 1;
                    run.heard_tick = tick;
                }
                if latency <= run.timeout() {
                    // latency <= timeout_ticks, a u32: the cast is lossless.
                    run.slots[i] = Slot::Answered { seq, tick: stim, latency: latency as u32 };
                } else {
                    // The poll that should have timed it out has not run
                    // yet: it is a timeout, and this answer is late.
                    run.slots[i] = Slot::TimedOut { seq, tick: stim };
                    a.late += 1;
                    self.stats.late_responses += 1;
                }
                self.emit(now);
                self.plan(now);
            }
            Slot::Answered { .. } if identity => a.duplicates += 1,
            Slot::Free if identity => a.unmatched += 1,
            Slot::TimedOut { seq, .. } if identity => {
                // Its answer, after the horizon: counted, not timed; and
                // heard, so earlier identities are free (in order).
                if seq >= run.heard_until {
                    run.heard_until = seq + 1;
                    run.heard_tick = tick;
                }
                a.late += 1;
                self.stats.late_responses += 1;
                self.plan(now);
            }
            // After its timeout; or, one in flight, with none outstanding.
            Slot::Answered { .. } | Slot::TimedOut { .. } | Slot::Free => {
                a.late += 1;
                self.stats.late_responses += 1;
            }
        }
    }

    /// Send every resolved sample whose predecessors are all sent, in
    /// sequence order; end the run when the count is taken or, stopping,
    /// when nothing is left in flight.
    #[inline(always)]
    pub(super) fn emit(&mut self, now: u64) {
        // Nothing to send (most calls): no call.
        let Some(run) = &self.run else { return };
        let ready = match run.slots[run.emit_slot] {
            Slot::Answered { seq, .. } | Slot::TimedOut { seq, .. } => seq == run.emit_seq,
            Slot::Free | Slot::Out { .. } => false,
        };
        if run.periodic || !(ready || run.stopping) {
            return;
        }
        self.emit_ready(now);
    }

    fn emit_ready(&mut self, now: u64) {
        loop {
            let Some(run) = self.run.as_mut() else { return };
            if run.periodic {
                return;
            }
            let seq = run.emit_seq;
            let i = run.emit_slot;
            debug_assert_eq!(i, run.slot_of(seq));
            let outcome = match run.slots[i] {
                Slot::Answered { seq: s, latency, .. } if s == seq => Outcome::Response(latency),
                Slot::TimedOut { seq: s, .. } if s == seq => Outcome::Timeout,
                _ => {
                    // Nothing in flight and stopping: done.
                    if run.stopping && run.emit_seq == run.next_seq {
                        self.finish(StopReason::HostStop, now);
                    }
                    return;
                }
            };
            let stimulus_tick = match run.slots[i] {
                Slot::Answered { tick, .. } | Slot::TimedOut { tick, .. } => tick,
                _ => 0,
            };
            let (late_ticks, omitted) = run.waits[i];
            let triggered = self.triggered(
                i,
                match outcome {
                    Outcome::Response(l) => Some(l),
                    Outcome::Timeout => None,
                },
            );
            let Some(run) = self.run.as_mut() else { return };
            run.emit_seq += 1;
            run.emit_slot = if run.emit_slot + 1 >= run.window { 0 } else { run.emit_slot + 1 };
            self.totals.taken += 1;
            self.totals.omitted += u64::from(omitted);
            // The scheduled instants the samples stand for (their own and
            // the ones their waits skipped): what a count counts.
            let counted = self.totals.taken + self.totals.omitted;
            if outcome == Outcome::Timeout {
                self.totals.timeouts += 1;
            }
            self.record_sample(&Sample { seq, stimulus_tick, outcome, triggered, late_ticks, omitted }, now);
            // The count is of scheduled instants (a waited stimulus's
            // omitted ones included), as the schedule planned them.
            if self.run.as_ref().is_some_and(|r| r.config.count.is_some_and(|n| counted >= n)) {
                self.finish(StopReason::CountReached, now);
                return;
            }
        }
    }

    /// Periodic mode: stop with `CountReached` once the count of edges is taken.
    fn check_edge_count(&mut self, now: u64) {
        if self.run.as_ref().is_some_and(|r| r.config.count.is_some_and(|n| self.totals.taken >= n)) {
            self.finish(StopReason::CountReached, now);
        }
    }
}
