//! Frames to messages: the probe's bytes, deframed (COBS, CRC, version)
//! and decoded into [`ProbeMsg`]s, with counters of what could not be read.
//! No I/O: the live link and the raw file's reader both feed it.

use latprobe_protocol::{
    decode_probe_message, Feed, FrameDecoder, MessageError, ProbeMsg, MAX_ERROR_DETAIL, MAX_LOG_TEXT,
    MAX_RAW_LEN,
};

/// One thing the link read.
#[derive(Debug)]
pub enum Incoming<'a> {
    /// A message of our protocol version.
    Message(ProbeMsg<'a>),
    /// An intact frame of another protocol version.
    OtherVersion(u8),
}

/// Frames to messages, with counters; no I/O. The hot path of every run and
/// replay, so it borrows messages straight from the decoder's buffer.
#[derive(Debug, Default)]
pub struct Deframer {
    decoder: FrameDecoder,
    malformed: u64,
    other_version: u64,
    /// Bytes since the last delimiter: an unfinished frame, or garbage.
    tail: u64,
    /// Unfinished frames at the end of a stream.
    cut: u64,
}

impl Deframer {
    /// A fresh decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decode every frame completed by `bytes` and hand each to `on`.
    pub fn feed(&mut self, mut bytes: &[u8], mut on: impl FnMut(Incoming<'_>)) {
        // From the end: in a sound stream the last delimiter is a few
        // bytes back, so this costs next to nothing.
        match bytes.iter().rposition(|&b| b == 0) {
            Some(p) => self.tail = (bytes.len() - p - 1) as u64,
            None => self.tail += bytes.len() as u64,
        }
        loop {
            match self.decoder.feed(bytes) {
                Feed::NeedMore => return,
                Feed::Bad { rest, .. } => bytes = rest,
                Feed::Frame { frame, rest } => {
                    // This protocol, or an older one still read (a raw
                    // file's: its samples without waits).
                    match decode_probe_message(frame) {
                        // Longer than the protocol allows: the decoder's
                        // buffer has slack, the protocol none.
                        Ok(_) if frame.len() + 4 > MAX_RAW_LEN => self.malformed += 1,
                        Ok(msg) if !within_limits(&msg) => self.malformed += 1,
                        Ok(msg) => on(Incoming::Message(msg)),
                        Err(MessageError::VersionMismatch { theirs, .. }) => {
                            self.other_version += 1;
                            on(Incoming::OtherVersion(theirs));
                        }
                        Err(MessageError::Malformed) => self.malformed += 1,
                    }
                    bytes = rest;
                }
            }
        }
    }

    /// The stream is over: bytes after its last delimiter (a frame cut
    /// short, or junk) are one bad frame. Idempotent.
    pub fn end_of_stream(&mut self) {
        if self.tail > 0 {
            self.tail = 0;
            self.cut += 1;
        }
    }

    /// Frames that were damaged, malformed or of another version, and a
    /// stream's unfinished end.
    pub fn bad_frames(&self) -> u64 {
        self.decoder.stats().bad_frames + self.malformed + self.other_version + self.cut
    }
}

/// Whether a message's texts keep the protocol's limits: a log line of at
/// most [`MAX_LOG_TEXT`] bytes, an error detail of at most
/// [`MAX_ERROR_DETAIL`], and no NUL in either (a probe's C string cut short).
fn within_limits(msg: &ProbeMsg<'_>) -> bool {
    let fits = |text: &str, max: usize| text.len() <= max && !text.contains('\0');
    match msg {
        ProbeMsg::Log(l) => fits(l.text, MAX_LOG_TEXT),
        ProbeMsg::Error(e) => fits(e.detail, MAX_ERROR_DETAIL),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latprobe_protocol::framing::{encode_raw, CRC};
    use latprobe_protocol::{LogLevel, LogLine, PROTOCOL_VERSION};

    /// A frame of `msg` however long, built by hand (the encoder refuses
    /// what the protocol does not allow).
    fn frame_of(msg: &ProbeMsg<'_>) -> Vec<u8> {
        let mut raw = vec![0u8; 2048];
        raw[0] = PROTOCOL_VERSION;
        let body = postcard::to_slice(msg, &mut raw[1..2000]).unwrap().len();
        let crc = CRC.checksum(&raw[..1 + body]);
        raw[1 + body..5 + body].copy_from_slice(&crc.to_le_bytes());
        let mut out = vec![0u8; 4096];
        let n = encode_raw(&raw[..5 + body], &mut out).unwrap();
        out.truncate(n);
        out
    }

    fn heard(bytes: &[u8]) -> (u64, u64) {
        let mut d = Deframer::new();
        let mut n = 0;
        d.feed(bytes, |_| n += 1);
        (n, d.bad_frames())
    }

    fn log(text: &str) -> ProbeMsg<'_> {
        ProbeMsg::Log(LogLine { level: LogLevel::Warn, tick: 0, text })
    }

    /// Issue 18, finding 12: frames longer than the protocol's 256 bytes
    /// (the decoder's buffer has slack) and log texts over the limit or
    /// holding a NUL are refused and counted as bad frames.
    #[test]
    fn oversized_frames_and_bad_log_texts_are_refused() {
        assert_eq!(heard(&frame_of(&log("fine"))), (1, 0));
        let max = "x".repeat(MAX_LOG_TEXT);
        assert_eq!(heard(&frame_of(&log(&max))), (1, 0));
        assert_eq!(heard(&frame_of(&log(&format!("{max}y")))), (0, 1));
        assert_eq!(heard(&frame_of(&log("cut\0short"))), (0, 1));
        // A Hello with a long board name: 256 bytes on the wire are the
        // protocol's limit, 257 and 258 are over it.
        let hello = |board: &str| {
            frame_of(&ProbeMsg::Hello(latprobe_protocol::ProbeInfo {
                protocol_version: PROTOCOL_VERSION,
                firmware_version: "1",
                board,
                timer_hz: 1_000_000,
                timer_bits: 32,
                capabilities: latprobe_protocol::Capabilities::UART_ECHO,
                max_batch: 64,
                target_baud: 0,
                build_id: 0,
            }))
        };
        for (len, ok) in [(256, true), (257, false), (258, false)] {
            let f = (1..300)
                .map(|n| hello(&"b".repeat(n)))
                .find(|f| f.len() == len)
                .unwrap_or_else(|| panic!("no Hello of {len} bytes"));
            let want = if ok { (1, 0) } else { (0, 1) };
            assert_eq!(heard(&f), want, "a frame of {len} bytes");
        }
    }
}
