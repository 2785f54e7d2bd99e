//! The probe engine proper: host link in, stimulus schedule, capture matching,
//! batching and the output queue. See the crate docs for how a board drives it.

use core::fmt::Write as _;

use latprobe_protocol::{
    byte_ticks, decode_message, encode_message, identity_byte, identity_of, Anomalies, Capabilities, Config,
    EdgeBatchBuilder, EdgeStamp, ErrorCode, ErrorReport, Feed, FrameDecoder, Heartbeat, HostMsg, LogLevel,
    LogLine, MessageError, Mode, Outcome, ProbeInfo, ProbeMsg, Sample, SampleBatchBuilder, Stimulus,
    StopReason, Stopped, IDENTITY_COUNT, MAX_BATCH_COUNT, MAX_ERROR_DETAIL, MAX_FRAME_LEN, MAX_LOG_TEXT,
    PROTOCOL_VERSION,
};

use crate::rng::Pcg32;
use crate::ticks::TimerBits;
use crate::txq::{Class, TxQueue};
use crate::validate::validate;

/// This firmware's version, as sent in `ProbeInfo::firmware_version`.
pub const FIRMWARE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Longest board name sent in the Hello; longer names are cut (at a
/// character boundary) so the Hello always fits a frame.
pub const MAX_BOARD_NAME: usize = 32;

/// Default size of the output queue in bytes.
pub const DEFAULT_TX_QUEUE: usize = 2048;

/// What a board tells the engine about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoardInfo {
    /// Board name, such as `nucleo-f411re`, `qemu` or `virtual`.
    pub name: &'static str,
    /// Rate of the measurement timer (the extended tick), in Hz.
    pub timer_hz: u32,
    /// Width of the hardware counter.
    pub timer_bits: TimerBits,
    /// Modes and properties of the board.
    pub capabilities: Capabilities,
    /// Firmware version; [`FIRMWARE_VERSION`] unless a board overrides it.
    pub firmware_version: &'static str,
    /// The engine never requests a stimulus less than this many ticks after
    /// the `now` it was given, so the board has time to program its compare.
    pub arm_lead_ticks: u32,
    /// In `uart-echo`, the shortest latency that can be a real answer: an
    /// echo's start bit cannot come before the target has received the
    /// whole stimulus byte (9.5 bit times at the target line's baud). An
    /// earlier capture is a late echo of an earlier stimulus: it is counted
    /// late and the engine keeps waiting. 0 (the default) disables the
    /// check, for lines without real timing (a pty, an emulated UART).
    pub uart_echo_floor_ticks: u32,
    /// The longest a board may take to deliver a response after the tick it
    /// was captured at: a board that pairs a start-bit capture with the
    /// byte the UART reads a byte time later delivers it that late. The
    /// engine judges a stimulus timed out only this long after its
    /// timeout, so an answer in time is never counted late. 0 (the
    /// default) for boards that deliver captures at once.
    pub response_lag_ticks: u32,
    /// Baud rate of the target UART line, sent in the Hello; 0 when the
    /// line has no bit timing (see `ProbeInfo::target_baud`).
    pub target_baud: u32,
    /// CRC-32 of the firmware image in flash, sent in the Hello (see
    /// `ProbeInfo::build_id`); 0 when unknown.
    pub build_id: u32,
}

impl BoardInfo {
    /// A board description with the default arm lead of 100 µs of ticks
    /// (at least one tick).
    pub const fn new(
        name: &'static str,
        timer_hz: u32,
        timer_bits: TimerBits,
        capabilities: Capabilities,
    ) -> Self {
        let lead = timer_hz / 10_000;
        Self {
            name,
            timer_hz,
            timer_bits,
            capabilities,
            firmware_version: FIRMWARE_VERSION,
            arm_lead_ticks: if lead == 0 { 1 } else { lead },
            uart_echo_floor_ticks: 0,
            response_lag_ticks: 0,
            target_baud: 0,
            build_id: 0,
        }
    }

    /// The same board with a response lag (see
    /// [`BoardInfo::response_lag_ticks`]).
    #[must_use]
    pub const fn with_response_lag(mut self, ticks: u32) -> Self {
        self.response_lag_ticks = ticks;
        self
    }

    /// The same board with its target UART line's baud rate, announced in
    /// the Hello.
    #[must_use]
    pub const fn with_target_baud(mut self, baud: u32) -> Self {
        self.target_baud = baud;
        self
    }

    /// The same board with the CRC-32 of its firmware image (see
    /// `ProbeInfo::build_id`).
    #[must_use]
    pub const fn with_build_id(mut self, crc: u32) -> Self {
        self.build_id = crc;
        self
    }

    /// The same board with a `uart-echo` floor (see
    /// [`BoardInfo::uart_echo_floor_ticks`]): for a target line at `baud`,
    /// 9.5 bit times of ticks.
    #[must_use]
    pub const fn with_uart_echo_floor(mut self, baud: u32) -> Self {
        self.uart_echo_floor_ticks = if baud == 0 {
            0
        } else {
            // 9.5 bit times, rounded down: never above the true minimum.
            (self.timer_hz as u64 * 19 / (2 * baud as u64)) as u32
        };
        self
    }

    /// The same board with another arm lead (at least one tick).
    #[must_use]
    pub const fn with_arm_lead(mut self, ticks: u32) -> Self {
        self.arm_lead_ticks = if ticks == 0 { 1 } else { ticks };
        self
    }

    /// Ticks in one second: the heartbeat period.
    pub const fn heartbeat_ticks(&self) -> u64 {
        if self.timer_hz == 0 {
            1
        } else {
            self.timer_hz as u64
        }
    }

    /// Ticks in 50 ms: a batch is sent at most this long after its first
    /// item, so the host's live view stays fresh.
    pub const fn flush_ticks(&self) -> u64 {
        let t = self.timer_hz as u64 / 20;
        if t == 0 {
            1
        } else {
            t
        }
    }
}

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
}

/// Totals of the current (or last) measurement, as sent in Stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RunTotals {
    /// Samples (responses and timeouts) or edges taken.
    pub taken: u64,
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
}

/// One slot of the in-flight window: the stimulus that last used it. With
/// identity the window has one slot per identity (slot `seq % 9`); without,
/// one slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Not used yet in this run.
    Free,
    /// Stimulus `seq` happened at `tick`; no answer yet.
    Out { seq: u64, tick: u64 },
    /// Answered `latency` ticks after `tick`.
    Answered { seq: u64, tick: u64, latency: u32 },
    /// No answer within the timeout.
    TimedOut { seq: u64, tick: u64 },
}

/// The next stimulus, as far as the schedule got.
#[derive(Debug, Clone, Copy)]
enum Next {
    /// Nothing to request: periodic mode, the count is sent, or stopping.
    Done,
    /// Stimulus `seq` is planned at `planned`, but its slot is still busy.
    Blocked { seq: u64, planned: u64 },
    /// Requested of the board and not yet reported as produced.
    Armed { req: StimulusRequest },
}

#[derive(Debug, Clone)]
struct Run {
    config: Config,
    start_tick: u64,
    periodic: bool,
    /// Slots in use: [`Stimulus::window`].
    window: usize,
    /// Schedule anchor: stimulus `base_seq` is planned at `base_tick`, the
    /// next ones an interval apart (plus their dither).
    base_seq: u64,
    base_tick: u64,
    /// Echo: the next stimulus to produce (all before it were produced).
    /// Periodic: the next edge's sequence number.
    next_seq: u64,
    /// The next sample to send; samples go out in sequence order.
    emit_seq: u64,
    slots: [Slot; IDENTITY_COUNT],
    next: Next,
    /// The highest sequence number whose answer was heard so far, in time
    /// or late (echo). With an in-order target nothing more can come for
    /// any earlier stimulus.
    heard_max: Option<u64>,
    rng: Pcg32,
    heartbeat_at: u64,
    /// The host asked to stop: no new stimulus; the run ends when every
    /// stimulus in flight has its sample.
    stopping: bool,
}

impl Run {
    fn slot_of(&self, seq: u64) -> usize {
        (seq % self.window as u64) as usize
    }

    fn timeout(&self) -> u64 {
        u64::from(self.config.timeout_ticks)
    }

    /// Whether stimuli are still wanted: not stopping, count not sent.
    fn wants_more(&self) -> bool {
        !self.periodic && !self.stopping && self.config.count.is_none_or(|n| self.next_seq < n)
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
}

/// A short error detail formatted without allocation.
struct Detail {
    buf: [u8; MAX_ERROR_DETAIL],
    len: usize,
}

impl Detail {
    fn new() -> Self {
        Self { buf: [0; MAX_ERROR_DETAIL], len: 0 }
    }

    fn as_str(&self) -> &str {
        // Only whole `&str`s are ever copied in, cut at char boundaries.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl core::fmt::Write for Detail {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let mut n = s.len().min(self.buf.len() - self.len);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

fn truncate(s: &str, max: usize) -> &str {
    let mut n = s.len().min(max);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    &s[..n]
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
        };
        e.send_hello();
        e
    }

    // ----- what the board asks -----

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

    /// The stimulus to produce, while one is wanted and not yet reported by
    /// [`Engine::on_stimulus`]. `None` means: nothing (cancel anything armed).
    /// Its `stimulus` is concrete: with identity, the byte of its `seq`.
    pub fn stimulus_request(&self) -> Option<StimulusRequest> {
        match self.run.as_ref()?.next {
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
        let mut d = self.flush_at;
        let mut earliest = |t: u64| d = Some(d.map_or(t, |d: u64| d.min(t)));
        if let Some(run) = &self.run {
            earliest(run.heartbeat_at);
            match run.next {
                Next::Done => {}
                Next::Armed { req } => {
                    if req.at > self.last_now {
                        earliest(req.at);
                    }
                    earliest(req.at.saturating_add(self.stall_ticks(&run.config)).saturating_add(1));
                }
                Next::Blocked { seq, .. } => {
                    // Its slot frees on an answer, a timeout (below), or
                    // when its identity may be taken back.
                    if let Some(t) = self.reclaim_at(run, run.slots[run.slot_of(seq)]) {
                        earliest(t.max(self.last_now.saturating_add(1)));
                    }
                }
            }
            let lag = u64::from(self.board.response_lag_ticks);
            for slot in &run.slots[..run.window] {
                if let Slot::Out { tick, .. } = *slot {
                    earliest(tick.saturating_add(run.timeout()).saturating_add(lag).saturating_add(1));
                }
            }
        }
        d
    }

    // ----- output to the host -----

    /// The next bytes to send to the host, contiguous in memory (a DMA can
    /// take them as they are). Empty when nothing waits. Call
    /// [`Engine::tx_done`] with how many were sent.
    pub fn tx_chunk(&self) -> &[u8] {
        self.tx.chunk()
    }

    /// `n` bytes from the front of [`Engine::tx_chunk`] were sent.
    pub fn tx_done(&mut self, n: usize) {
        self.tx.consume(n);
    }

    /// Copy up to `out.len()` waiting bytes into `out`, marking them sent;
    /// returns how many. For blocking writers.
    pub fn read_tx(&mut self, out: &mut [u8]) -> usize {
        self.tx.read(out)
    }

    /// Bytes waiting to be sent.
    pub fn tx_pending(&self) -> usize {
        self.tx.len()
    }

    // ----- events from the board -----

    /// Bytes received from the host, in any chunking. Damaged frames are
    /// counted; nothing here panics on any input.
    pub fn on_host_bytes(&mut self, bytes: &[u8], now: u64) {
        self.saw(now);
        let mut input = bytes;
        loop {
            let (msg, rest) = match self.rx.feed(input) {
                Feed::NeedMore => break,
                Feed::Frame { frame, rest } => (Some(decode_message::<HostMsg>(frame)), rest),
                Feed::Bad { rest, .. } => (None, rest),
            };
            input = rest;
            match msg {
                Some(Ok(msg)) => self.handle(msg, now),
                Some(Err(MessageError::VersionMismatch { theirs, .. })) => {
                    self.stats.rx_version_mismatches = self.stats.rx_version_mismatches.saturating_add(1);
                    let mut d = Detail::new();
                    let _ = write!(d, "probe speaks v{PROTOCOL_VERSION}, frame was v{theirs}");
                    self.send_error_detail(ErrorCode::VersionMismatch, &d);
                }
                Some(Err(MessageError::Malformed)) => {
                    self.stats.rx_bad_messages = self.stats.rx_bad_messages.saturating_add(1);
                    self.send_error(ErrorCode::BadMessage, "intact frame, not a HostMsg");
                }
                None => {
                    self.stats.rx_bad_frames = self.stats.rx_bad_frames.saturating_add(1);
                    // One report per heartbeat period at most: line noise
                    // must not flood the queue with errors.
                    if now >= self.bad_frame_report_at {
                        self.bad_frame_report_at = now.saturating_add(self.board.heartbeat_ticks());
                        self.send_error(ErrorCode::BadFrame, "damaged frame from host dropped");
                    }
                }
            }
        }
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
        if late >= u64::from(run.config.interval_ticks) {
            let a = &mut self.totals.anomalies;
            a.slipped += 1;
            a.slip_total_ticks = a.slip_total_ticks.saturating_add(late);
            a.slip_max_ticks = a.slip_max_ticks.max(late);
            run.base_seq = req.seq;
            run.base_tick = tick;
        }
        let i = run.slot_of(req.seq);
        run.slots[i] = Slot::Out { seq: req.seq, tick };
        run.next_seq = req.seq + 1;
        run.next = Next::Done;
        // Pipelined: with identity the next stimulus is planned at once.
        self.plan(now);
    }

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

    /// The running measurement's `start_tick` (as sent in `Started`), which
    /// tells one run from the next; `None` while idle.
    pub fn run_start(&self) -> Option<u64> {
        self.run.as_ref().map(|r| r.start_tick)
    }

    /// Send a line of the probe's log to the host ([`ProbeMsg::Log`]), cut
    /// to [`latprobe_protocol::MAX_LOG_TEXT`] bytes. It travels as data: a
    /// full queue drops it (counted as an overrun), never a control reply.
    /// The same text again within a second is not repeated, so a board may
    /// call this on every occurrence.
    pub fn log(&mut self, level: LogLevel, text: &str, now: u64) {
        let text = truncate(text, MAX_LOG_TEXT);
        let hash = text.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
        if self.last_log == Some(hash) && now < self.last_log_at.saturating_add(self.board.heartbeat_ticks())
        {
            return;
        }
        self.last_log = Some(hash);
        self.last_log_at = now;
        let msg = ProbeMsg::Log(LogLine { level, tick: now, text });
        if !Self::enqueue(&mut self.tx, &mut self.stats, &msg, Class::Data) {
            self.count_overrun(0);
        }
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
                run.heard_max = Some(run.heard_max.map_or(seq, |m| m.max(seq)));
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
                run.heard_max = Some(run.heard_max.map_or(seq, |m| m.max(seq)));
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

    /// Do whatever is due at extended tick `now`: timeouts, batch flushes,
    /// heartbeats. Call it when [`Engine::next_deadline`] is reached and
    /// after delivering a group of events.
    pub fn poll(&mut self, now: u64) {
        self.saw(now);
        let stall = self.run.as_ref().map(|r| self.stall_ticks(&r.config));
        let lag = u64::from(self.board.response_lag_ticks);
        if let (Some(run), Some(stall)) = (self.run.as_mut(), stall) {
            let timeout = run.timeout().saturating_add(lag);
            for slot in &mut run.slots[..run.window] {
                if let Slot::Out { seq, tick } = *slot {
                    if now > tick.saturating_add(timeout) {
                        *slot = Slot::TimedOut { seq, tick };
                    }
                }
            }
            if let Next::Armed { req } = run.next {
                if now > req.at.saturating_add(stall) {
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

    // ----- internals -----

    fn saw(&mut self, now: u64) {
        self.last_now = self.last_now.max(now);
    }

    fn stall_ticks(&self, config: &Config) -> u64 {
        u64::from(config.interval_ticks) + self.board.heartbeat_ticks()
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

    fn handle(&mut self, msg: HostMsg, now: u64) {
        match msg {
            HostMsg::Hello { .. } => self.send_hello(),
            HostMsg::Ping { nonce } => self.send_heartbeat(now, nonce),
            HostMsg::Configure(config) => {
                if self.run.is_some() {
                    self.send_error(ErrorCode::Busy, "stop the running measurement first");
                    return;
                }
                match validate(
                    &config,
                    self.board.capabilities,
                    byte_ticks(self.board.timer_hz, self.board.target_baud),
                ) {
                    Ok(()) => {
                        self.config = Some(config);
                        self.send(&ProbeMsg::Configured(config), Class::Control);
                    }
                    Err((code, detail)) => {
                        // A refused Configure leaves nothing to Start, so an
                        // old configuration is never run by mistake.
                        self.config = None;
                        self.send_error(code, detail);
                    }
                }
            }
            HostMsg::Start => {
                if self.run.is_some() {
                    self.send_error(ErrorCode::Busy, "already running");
                } else if let Some(config) = self.config {
                    self.start(config, now);
                } else {
                    self.send_error(ErrorCode::NotConfigured, "send a valid Configure first");
                }
            }
            HostMsg::Stop => {
                if self.run.is_some() {
                    self.stop(now);
                } else {
                    self.send_error(ErrorCode::NotRunning, "nothing to stop");
                }
            }
        }
    }

    fn start(&mut self, config: Config, now: u64) {
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
            base_seq: 0,
            base_tick: start_tick,
            next_seq: 0,
            emit_seq: 0,
            slots: [Slot::Free; IDENTITY_COUNT],
            next: Next::Done,
            heard_max: None,
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
    fn plan(&mut self, now: u64) {
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
                let c = run.config;
                let seq = run.next_seq;
                let dither = if c.dither_ticks == 0 { 0 } else { u64::from(run.rng.up_to(c.dither_ticks)) };
                let slot = run
                    .base_tick
                    .saturating_add((seq - run.base_seq).saturating_mul(u64::from(c.interval_ticks)));
                (seq, slot.saturating_add(dither))
            }
        };
        if !run.wants_more() {
            run.next = Next::Done;
            return;
        }
        let i = run.slot_of(seq);
        // The end of the sample that last held the slot, if the slot is free.
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
                if run.window > 1 && run.heard_max.is_none_or(|m| m <= old) {
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
                }
                Some(end)
            }
        };
        let mut at = planned.max(now.saturating_add(lead));
        let mut held = was_blocked;
        if let Some(end) = ended {
            let guarded = end.saturating_add(u64::from(run.config.guard_ticks));
            held |= guarded > at;
            at = at.max(guarded);
        }
        // A slip is a delay the slot caused (still held, or its guard); a
        // probe merely late to plan is not counted, its stimulus carries
        // its actual tick either way.
        if at > planned && held {
            let slip = at - planned;
            let a = &mut self.totals.anomalies;
            a.slipped += 1;
            a.slip_total_ticks = a.slip_total_ticks.saturating_add(slip);
            a.slip_max_ticks = a.slip_max_ticks.max(slip);
            if slip >= u64::from(run.config.interval_ticks) {
                run.base_seq = seq;
                run.base_tick = at;
            }
        }
        let stimulus = match run.config.stimulus {
            Stimulus::Identified => Stimulus::Byte(identity_byte(seq)),
            s => s,
        };
        run.next = Next::Armed { req: StimulusRequest { id, seq, at, stimulus } };
        self.next_request_id = id.wrapping_add(1);
    }

    /// Send every resolved sample whose predecessors are all sent, in
    /// sequence order; end the run when the count is taken or, stopping,
    /// when nothing is left in flight.
    fn emit(&mut self, now: u64) {
        loop {
            let Some(run) = self.run.as_mut() else { return };
            if run.periodic {
                return;
            }
            let seq = run.emit_seq;
            let outcome = match run.slots[run.slot_of(seq)] {
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
            let stimulus_tick = match run.slots[run.slot_of(seq)] {
                Slot::Answered { tick, .. } | Slot::TimedOut { tick, .. } => tick,
                _ => 0,
            };
            run.emit_seq += 1;
            self.totals.taken += 1;
            if outcome == Outcome::Timeout {
                self.totals.timeouts += 1;
            }
            self.record_sample(&Sample { seq, stimulus_tick, outcome }, now);
            if self.run.as_ref().is_some_and(|r| r.config.count.is_some_and(|n| self.totals.taken >= n)) {
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

    /// The host's Stop: periodic runs end now; echo runs send no new
    /// stimulus and end once every stimulus in flight has its sample (at
    /// most one timeout later). A second Stop ends the run at once, and
    /// what is still in flight is abandoned.
    fn stop(&mut self, now: u64) {
        let Some(run) = self.run.as_mut() else { return };
        if run.periodic || run.stopping {
            self.finish(StopReason::HostStop, now);
            return;
        }
        run.stopping = true;
        run.next = Next::Done;
        self.emit(now);
    }

    fn record_sample(&mut self, s: &Sample, now: u64) {
        if self.samples.push(s).is_err() {
            // Full, or a tick the batch cannot code (a board reporting time
            // backwards): send what is there; an empty batch takes anything.
            self.flush();
            if self.samples.push(s).is_err() {
                self.totals.dropped += 1;
                return;
            }
        }
        if self.samples.len() == 1 {
            self.flush_at = Some(now.saturating_add(self.board.flush_ticks()));
        }
        if self.samples.is_full() {
            self.flush();
        }
    }

    fn record_edge(&mut self, e: &EdgeStamp, now: u64) {
        if self.edges.push(e).is_err() {
            self.flush();
            if self.edges.push(e).is_err() {
                self.totals.dropped += 1;
                return;
            }
        }
        if self.edges.len() == 1 {
            self.flush_at = Some(now.saturating_add(self.board.flush_ticks()));
        }
        if self.edges.is_full() {
            self.flush();
        }
    }

    /// Send the pending batch, if any; a batch that does not fit is dropped
    /// and counted (the host sees the gap in sequence numbers).
    fn flush(&mut self) {
        self.flush_at = None;
        if !self.samples.is_empty() {
            let n = u64::from(self.samples.len());
            let ok = Self::enqueue(
                &mut self.tx,
                &mut self.stats,
                &ProbeMsg::SampleBatch(self.samples.batch()),
                Class::Data,
            );
            self.samples.clear();
            if !ok {
                self.count_overrun(n);
            }
        }
        if !self.edges.is_empty() {
            let n = u64::from(self.edges.len());
            let ok = Self::enqueue(
                &mut self.tx,
                &mut self.stats,
                &ProbeMsg::EdgeBatch(self.edges.batch()),
                Class::Data,
            );
            self.edges.clear();
            if !ok {
                self.count_overrun(n);
            }
        }
    }

    fn count_overrun(&mut self, dropped: u64) {
        self.totals.dropped += dropped;
        self.totals.overruns = self.totals.overruns.saturating_add(1);
        debug!("output queue full, {} dropped", dropped);
    }

    fn finish(&mut self, reason: StopReason, now: u64) {
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

    fn send_hello(&mut self) {
        let info = ProbeInfo {
            protocol_version: PROTOCOL_VERSION,
            firmware_version: truncate(self.board.firmware_version, MAX_BOARD_NAME),
            board: truncate(self.board.name, MAX_BOARD_NAME),
            timer_hz: self.board.timer_hz,
            timer_bits: self.board.timer_bits.bits(),
            capabilities: self.board.capabilities,
            max_batch: MAX_BATCH_COUNT,
            target_baud: self.board.target_baud,
            build_id: self.board.build_id,
        };
        self.send(&ProbeMsg::Hello(info), Class::Control);
    }

    fn send_heartbeat(&mut self, now: u64, nonce: u32) {
        let hb = Heartbeat {
            tick: now,
            nonce,
            running: self.run.is_some(),
            taken: self.totals.taken,
            dropped: self.totals.dropped,
            overruns: self.totals.overruns,
            rx_bad_frames: self.stats.rx_bad_frames,
            anomalies: self.totals.anomalies,
        };
        if !Self::enqueue(&mut self.tx, &mut self.stats, &ProbeMsg::Heartbeat(hb), Class::Data) {
            self.count_overrun(0);
        }
    }

    fn send_error(&mut self, code: ErrorCode, detail: &str) {
        warn!("error reply {}", code);
        let detail = truncate(detail, MAX_ERROR_DETAIL);
        self.send(&ProbeMsg::Error(ErrorReport { code, detail }), Class::Control);
    }

    fn send_error_detail(&mut self, code: ErrorCode, detail: &Detail) {
        self.send(&ProbeMsg::Error(ErrorReport { code, detail: detail.as_str() }), Class::Control);
    }

    fn send(&mut self, msg: &ProbeMsg<'_>, class: Class) {
        if !Self::enqueue(&mut self.tx, &mut self.stats, msg, class) {
            self.stats.control_lost = self.stats.control_lost.saturating_add(1);
            self.totals.overruns = self.totals.overruns.saturating_add(1);
        }
    }

    fn enqueue(tx: &mut TxQueue<Q>, stats: &mut EngineStats, msg: &ProbeMsg<'_>, class: Class) -> bool {
        let mut frame = [0u8; MAX_FRAME_LEN];
        // Every message the engine builds fits a frame (batches are bounded
        // by their builders, strings are truncated); a failure is a loss.
        let Ok(n) = encode_message(msg, &mut frame) else { return false };
        let ok = tx.push(&frame[..n], class);
        if ok {
            stats.tx_frames += 1;
        }
        ok
    }
}

#[cfg(test)]
mod tests;
