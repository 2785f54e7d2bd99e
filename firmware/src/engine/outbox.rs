//! The output to the host: batches of samples and edges (sent when full,
//! after 50 ms, or before Stopped), control replies, heartbeats and log
//! lines, encoded into the output queue ([`super::txq`]) that the board
//! drains. Owns the queue, the batch builders, the flush deadline and the
//! log line repeat filter; counts what did not fit.

use latprobe_protocol::{
    encode_message, EdgeStamp, ErrorCode, ErrorReport, Heartbeat, LogLevel, LogLine, ProbeInfo, ProbeMsg,
    Sample, MAX_BATCH_COUNT, MAX_ERROR_DETAIL, MAX_FRAME_LEN, MAX_LOG_TEXT, PROTOCOL_VERSION,
};

use super::board::MAX_BOARD_NAME;
use super::txq::{Class, TxQueue};
use super::{Engine, EngineStats};

/// A short error detail formatted without allocation.
pub(super) struct Detail {
    buf: [u8; MAX_ERROR_DETAIL],
    len: usize,
}

impl Detail {
    pub(super) fn new() -> Self {
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

    /// The boot note, if any, as a Warn line after a Hello
    /// ([`Engine::set_boot_note`]).
    pub(super) fn send_boot_note(&mut self) {
        if let Some(note) = self.boot_note {
            let text = truncate(note, MAX_LOG_TEXT);
            let msg = ProbeMsg::Log(LogLine { level: LogLevel::Warn, tick: self.last_now, text });
            self.send(&msg, Class::Control);
        }
    }

    pub(super) fn record_sample(&mut self, s: &Sample, now: u64) {
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

    pub(super) fn record_edge(&mut self, e: &EdgeStamp, now: u64) {
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
    pub(super) fn flush(&mut self) {
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

    pub(super) fn count_overrun(&mut self, dropped: u64) {
        self.totals.dropped += dropped;
        self.totals.overruns = self.totals.overruns.saturating_add(1);
        debug!("output queue full, {} dropped", dropped);
    }

    pub(super) fn send_hello(&mut self) {
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
        self.send_boot_note();
    }

    pub(super) fn send_heartbeat(&mut self, now: u64, nonce: u32) {
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

    pub(super) fn send_error(&mut self, code: ErrorCode, detail: &str) {
        warn!("error reply {}", code);
        let detail = truncate(detail, MAX_ERROR_DETAIL);
        self.send(&ProbeMsg::Error(ErrorReport { code, detail }), Class::Control);
    }

    pub(super) fn send_error_detail(&mut self, code: ErrorCode, detail: &Detail) {
        self.send(&ProbeMsg::Error(ErrorReport { code, detail: detail.as_str() }), Class::Control);
    }

    pub(super) fn send(&mut self, msg: &ProbeMsg<'_>, class: Class) {
        if !Self::enqueue(&mut self.tx, &mut self.stats, msg, class) {
            self.stats.control_lost = self.stats.control_lost.saturating_add(1);
            self.totals.overruns = self.totals.overruns.saturating_add(1);
        }
    }

    pub(super) fn enqueue(
        tx: &mut TxQueue<Q>,
        stats: &mut EngineStats,
        msg: &ProbeMsg<'_>,
        class: Class,
    ) -> bool {
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
