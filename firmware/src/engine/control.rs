//! The host's requests: bytes in, deframed and decoded, and what each
//! request does (Hello, Ping, Configure, Start, Stop). Owns the frame
//! decoder, the accepted configuration and the damaged-frame report
//! limit; a run is started and stopped through [`super::schedule`].

use core::fmt::Write as _;

use latprobe_protocol::{
    byte_ticks, decode_message, ErrorCode, Feed, HostMsg, MessageError, ProbeMsg, PROTOCOL_VERSION,
};

use super::outbox::Detail;
use super::txq::Class;
use super::validate::validate;
use super::Engine;

impl<const Q: usize> Engine<Q> {
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
}
