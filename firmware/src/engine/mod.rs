//! The probe engine proper, laid out by the state each part owns. See the
//! crate docs for how a board drives it.
//!
//! ```text
//!   board.rs     BoardInfo: the board's facts and the periods derived from them
//!   control.rs   host bytes in → requests (rx decoder, accepted config)
//!   schedule.rs  when each stimulus is requested (Next, anchor, dither, ids)
//!   window.rs    answers matched to slots, samples in order (Slot, heard, emit)
//!   outbox.rs    batches and replies into the output queue (txq.rs)
//!   trigger.rs   the trigger output: what to arm, when due, whether a sample triggered
//!   validate.rs  the rules a Configure must meet     rng.rs  the dither PCG32
//!   mod.rs       the Engine and its run, totals, counters and poll(now)
//! ```

mod board;
mod control;
mod outbox;
pub mod rng;
mod schedule;
mod trigger;
pub mod txq;
pub mod validate;
mod window;

use latprobe_protocol::{
    identity_index, Anomalies, Config, EdgeBatchBuilder, ErrorCode, FrameDecoder, ProbeMsg,
    SampleBatchBuilder, Stimulus, StopReason, Stopped, IDENTITY_COUNT, MAX_BATCH_COUNT,
};

pub use board::{BoardInfo, FIRMWARE_VERSION, MAX_BOARD_NAME};
use rng::Pcg32;
use schedule::Next;
pub use trigger::TriggerRequest;
use txq::{Class, TxQueue};
use window::Slot;

/// Default size of the output queue in bytes.
pub const DEFAULT_TX_QUEUE: usize = 2048;

/// A stimulus the engine wants the board to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StimulusRequest {
    /// Unique per request over the engine's life (wrapping): a board that
    /// sees the same `id` again has already armed it.
    pub id: u32,
    /// Sequence number of the sample this stimulus starts.
    pub seq: u64,
    /// Extended tick at which the stimulus must happen.
    pub at: u64,
    /// What to produce: an edge or a byte (never `Stimulus::None(_)`).
    pub stimulus: Stimulus,
    /// The window slot of `seq`: with identity, its identity's index
    /// (`identity_index(seq)`); without, 0.
    pub slot: u8,
}

/// Totals of the current (or last) measurement, as sent in Stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RunTotals {
    /// Samples (responses and timeouts) or edges taken.
    pub taken: u64,
    /// The scheduled instants the waits of those samples skipped (their
    /// `omitted`, summed; not sent in `Stopped`, the host sums them): a
    /// count run ends when `taken + omitted` reaches the count.
    pub omitted: u64,
    /// Of those, timeouts.
    pub timeouts: u64,
    /// Samples or edges taken but not sent because the output queue was full.
    pub dropped: u64,
    /// Frames (batches, heartbeats) that found the output queue full.
    pub overruns: u32,
    /// Answers not timed, slipped stimuli and line faults.
    pub anomalies: Anomalies,
}

/// Engine counters that the wire does not carry (for logs and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EngineStats {
    /// Damaged frames from the host (also in every Heartbeat).
    pub rx_bad_frames: u32,
    /// Receive errors of the host link, as the board reported them
    /// ([`Engine::count_host_rx_errors`]; also in every Heartbeat).
    pub host_rx_errors: u32,
    /// Intact frames from the host that were not a valid message.
    pub rx_bad_messages: u32,
    /// Frames from the host with another protocol version.
    pub rx_version_mismatches: u32,
    /// Responses with no outstanding stimulus: after the timeout, before the
    /// stimulus, or spurious; in periodic mode, edges latched before the
    /// run's start. Counted, never matched to the next stimulus.
    pub late_responses: u64,
    /// Stimuli reported with none requested.
    pub spurious_stimuli: u64,
    /// Control replies lost because even the reserve was full (only if the
    /// host floods requests without reading).
    pub control_lost: u32,
    /// Frames queued for the host.
    pub tx_frames: u64,
    /// Trigger outputs raised ([`Engine::on_trigger`], [`Engine::trigger_due`]).
    pub triggers: u64,
    /// Trigger reports for a stimulus whose sample was already sent, or
    /// with no run: counted, never attached to another sample.
    pub late_triggers: u64,
}

#[derive(Debug, Clone)]
struct Run {
    config: Config,
    start_tick: u64,
    periodic: bool,
    /// Slots in use: [`Stimulus::window`].
    window: usize,
    /// The schedule's place of stimulus `next_seq` (before its dither):
    /// the anchor plus an interval per stimulus since, kept as `next_seq`
    /// moves on (a multiply per plan was a library call on the M0+), and
    /// re-anchored where a slip of an interval or more happened.
    sched_tick: u64,
    /// Echo: the next stimulus to produce (all before it were produced).
    /// Periodic: the next edge's sequence number.
    next_seq: u64,
    /// `slot_of(next_seq)`, kept as `next_seq` moves on (echo).
    next_slot: usize,
    /// Ticks after a request's `at` by which the board must have reported
    /// it ([`Engine::stall_ticks`]), and a stimulus's timeout with the
    /// board's response lag: both derived once per run, read every pass.
    stall: u64,
    timeout_lag: u64,
    /// The next sample to send; samples go out in sequence order.
    emit_seq: u64,
    /// `slot_of(emit_seq)`, kept as `emit_seq` moves on: emit and the
    /// timeout scans want it on every pass.
    emit_slot: usize,
    slots: [Slot; IDENTITY_COUNT],
    next: Next,
    /// One past the highest sequence number whose answer was heard so far,
    /// in time or late (echo); 0: none yet. With an in-order target nothing
    /// more can come for any earlier stimulus. (A plain `u64` rather than
    /// an `Option` of the highest: kept on every answer, and a 64-bit
    /// `Option` max is about 20 instructions on these cores.)
    heard_until: u64,
    /// The tick of the answer that last raised `heard_until`: when a
    /// stimulus held for an in-order answer (its identity not yet safe to
    /// reuse) was let go by the target.
    heard_tick: u64,
    /// Scheduled instants accounted for: each stimulus produced, plus the
    /// instants its wait skipped (`omitted`). A count run ends after
    /// `count` of them, so its samples (the host makes one per omitted
    /// instant) are the count, however each instant is accounted.
    instants: u64,
    /// The armed stimulus's slip when it was planned (its slot held it):
    /// already counted, so a late production adds only its delay.
    armed_slip: u32,
    /// The armed stimulus's planned instant (its place in the schedule
    /// plus its dither), and the scheduled instants after it that its
    /// slip skipped when it was planned (the schedule re-anchored).
    armed_planned: u64,
    armed_omitted: u32,
    /// The target held the armed stimulus past its plan (its slot let go
    /// after the planned instant, by the target's ticks): its sample
    /// carries the wait.
    armed_waited: bool,
    /// Per slot, the wait of the stimulus in it, for its sample:
    /// `(late_ticks, omitted)` ([`latprobe_protocol::Sample::late_ticks`]),
    /// `(0, 0)` for one that went out on its schedule.
    waits: [(u32, u32); IDENTITY_COUNT],
    /// Per slot, how late the probe alone sent the stimulus in it (its
    /// tick past its planned instant, with no wait of the target's): taken
    /// off its sample's end when the next stimulus asks whether the target
    /// held its slot, so a probe late to send is never the target's wait.
    probe_late: [u32; IDENTITY_COUNT],
    /// Bit `i`: the trigger output was raised for the stimulus in slot `i`
    /// (cleared when the slot takes its next stimulus).
    raised: u16,
    rng: Pcg32,
    heartbeat_at: u64,
    /// The host asked to stop: no new stimulus; the run ends when every
    /// stimulus in flight has its sample.
    stopping: bool,
}

impl Run {
    fn slot_of(&self, seq: u64) -> usize {
        // No division: the window is one slot or one per identity
        // ([`Stimulus::window`]), and `identity_index` folds modulo 9
        // (a 64-bit division is a long library routine on these cores and
        // this runs several times per sample).
        if self.window == 1 {
            0
        } else {
            debug_assert_eq!(self.window, IDENTITY_COUNT);
            identity_index(seq)
        }
    }

    /// The slots of the stimuli in flight (`emit_seq..next_seq`), in
    /// sequence order: the only ones that can be [`Slot::Out`] (a
    /// stimulus before `emit_seq` has its sample sent, one from `next_seq`
    /// on is not produced yet). Usually one or two of the nine, so the
    /// timeout scans look at those only.
    #[inline]
    fn in_flight(&self) -> impl Iterator<Item = usize> {
        let w = self.window;
        let first = self.emit_slot;
        // At most the window (`next_seq - emit_seq` never exceeds it): the
        // difference of the low words, no 64-bit arithmetic.
        let n = ((self.next_seq as u32).wrapping_sub(self.emit_seq as u32) as usize).min(w);
        (first..first + n).map(move |k| if k >= w { k - w } else { k })
    }

    fn timeout(&self) -> u64 {
        u64::from(self.config.timeout_ticks)
    }

    /// Whether stimuli are still wanted: not stopping, the count of
    /// scheduled instants not yet reached.
    fn wants_more(&self) -> bool {
        !self.periodic && !self.stopping && self.config.count.is_none_or(|n| self.instants < n)
    }
}

/// The hardware-free probe engine; `Q` is the output queue size in bytes.
#[derive(Debug)]
pub struct Engine<const Q: usize = DEFAULT_TX_QUEUE> {
    board: BoardInfo,
    rx: FrameDecoder,
    tx: TxQueue<Q>,
    config: Option<Config>,
    run: Option<Run>,
    samples: SampleBatchBuilder,
    edges: EdgeBatchBuilder,
    flush_at: Option<u64>,
    totals: RunTotals,
    stats: EngineStats,
    last_now: u64,
    /// Earliest tick at which another `Error{BadFrame}` may be sent.
    bad_frame_report_at: u64,
    next_request_id: u32,
    /// FNV-1a of the last log line and when it was sent, so a repeated
    /// line is sent at most once a second.
    last_log: Option<u32>,
    last_log_at: u64,
    /// A Warn line sent after every Hello ([`Engine::set_boot_note`]).
    boot_note: Option<&'static str>,
}

impl<const Q: usize> Engine<Q> {
    /// A new engine, idle, with its boot Hello already queued.
    pub fn new(board: BoardInfo) -> Self {
        let mut e = Self {
            board,
            rx: FrameDecoder::new(),
            tx: TxQueue::new(),
            config: None,
            run: None,
            samples: SampleBatchBuilder::new(0, MAX_BATCH_COUNT),
            edges: EdgeBatchBuilder::new(MAX_BATCH_COUNT),
            flush_at: None,
            totals: RunTotals::default(),
            stats: EngineStats::default(),
            last_now: 0,
            bad_frame_report_at: 0,
            next_request_id: 0,
            last_log: None,
            last_log_at: 0,
            boot_note: None,
        };
        e.send_hello();
        e
    }

    /// Something the host must hear about this boot (a reset by the
    /// watchdog): sent as a Warn log line after every Hello from now on,
    /// and at once after the boot Hello already queued. It travels as a
    /// control reply (never dropped behind a full data queue) and is not
    /// held back by the log's repeat filter, so each handshake sees it.
    pub fn set_boot_note(&mut self, note: &'static str) {
        self.boot_note = Some(note);
        self.send_boot_note();
    }

    /// The board description given to [`Engine::new`].
    pub fn board(&self) -> &BoardInfo {
        &self.board
    }

    /// The accepted configuration, if any (kept after a run ends, so Start
    /// runs it again).
    pub fn config(&self) -> Option<&Config> {
        self.config.as_ref()
    }

    /// Whether a measurement runs.
    pub fn is_running(&self) -> bool {
        self.run.is_some()
    }

    /// Totals of the running or last measurement.
    pub fn totals(&self) -> RunTotals {
        self.totals
    }

    /// Counters the wire does not carry.
    pub fn stats(&self) -> EngineStats {
        self.stats
    }

    /// The running measurement's `start_tick` (as sent in `Started`), which
    /// tells one run from the next; `None` while idle.
    pub fn run_start(&self) -> Option<u64> {
        self.run.as_ref().map(|r| r.start_tick)
    }

    /// The board's input capture overwrote a capture before it was read
    /// (counted in [`Anomalies::overcaptures`]).
    pub fn count_overcapture(&mut self) {
        let a = &mut self.totals.anomalies;
        a.overcaptures = a.overcaptures.saturating_add(1);
    }

    /// The stimulus just reported with [`Engine::on_stimulus`] was timed in
    /// software, not by the timer hardware (a board without its TX
    /// start-bit capture wire, or a compare that came too late): counted
    /// in [`Anomalies::soft_stimuli`], which travels in every Heartbeat
    /// and in Stopped.
    pub fn count_soft_stimulus(&mut self) {
        let a = &mut self.totals.anomalies;
        a.soft_stimuli = a.soft_stimuli.saturating_add(1);
    }

    /// `n` receive errors on the host link (the UART's overrun, framing or
    /// noise flags, bytes lost by a receive buffer emptied too late):
    /// counted in [`Anomalies::host_rx_errors`], which travels in every
    /// Heartbeat and in Stopped, so that host bytes lost on the way in are
    /// seen on the host, not only in the probe's log; and since boot in
    /// [`EngineStats::host_rx_errors`].
    pub fn count_host_rx_errors(&mut self, n: u32) {
        self.stats.host_rx_errors = self.stats.host_rx_errors.saturating_add(n);
        let a = &mut self.totals.anomalies;
        a.host_rx_errors = a.host_rx_errors.saturating_add(n);
    }

    /// A receive error on the target line: framing, noise or overrun
    /// (counted in [`Anomalies::line_errors`]).
    pub fn count_line_error(&mut self) {
        let a = &mut self.totals.anomalies;
        a.line_errors = a.line_errors.saturating_add(1);
    }

    /// Do whatever is due at extended tick `now`: timeouts, batch flushes,
    /// heartbeats. Call it when [`Engine::next_deadline`] is reached and
    /// after delivering a group of events.
    pub fn poll(&mut self, now: u64) {
        self.saw(now);
        if let Some(run) = self.run.as_mut() {
            let (timeout, stall) = (run.timeout_lag, run.stall);
            for i in run.in_flight() {
                let slot = &mut run.slots[i];
                if let Slot::Out { seq, tick } = *slot {
                    if now <= tick + timeout {
                        // Later stimuli went out later: none of them is due.
                        break;
                    }
                    *slot = Slot::TimedOut { seq, tick };
                }
            }
            if let Next::Armed { req } = run.next {
                if now > req.at + stall {
                    warn!("stimulus {} requested at {} never reported", req.seq, req.at);
                    self.send_error(ErrorCode::Internal, "board never produced the stimulus");
                    self.finish(StopReason::Fault, now);
                }
            }
            self.emit(now);
            self.plan(now);
        }
        if self.flush_at.is_some_and(|t| t <= now) {
            self.flush();
        }
        if let Some(run) = self.run.as_mut() {
            if run.heartbeat_at <= now {
                let period = self.board.heartbeat_ticks();
                run.heartbeat_at = run.heartbeat_at.saturating_add(period);
                if run.heartbeat_at <= now {
                    // Far behind: one heartbeat now, not a burst of them.
                    run.heartbeat_at = now.saturating_add(period);
                }
                self.send_heartbeat(now, 0);
            }
        }
    }

    pub(super) fn saw(&mut self, now: u64) {
        self.last_now = self.last_now.max(now);
    }

    pub(super) fn stall_ticks(&self, config: &Config) -> u64 {
        u64::from(config.interval_ticks) + self.board.heartbeat_ticks()
    }

    pub(super) fn finish(&mut self, reason: StopReason, now: u64) {
        self.flush();
        self.run = None;
        let t = self.totals;
        info!("stopped: {} taken, {} dropped", t.taken, t.dropped);
        self.send(
            &ProbeMsg::Stopped(Stopped {
                reason,
                end_tick: now,
                taken: t.taken,
                timeouts: t.timeouts,
                dropped: t.dropped,
                overruns: t.overruns,
                anomalies: t.anomalies,
            }),
            Class::Control,
        );
    }
}

#[cfg(test)]
mod tests;
