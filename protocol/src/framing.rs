//! Frames on the wire: `0x00, COBS([version][postcard body][CRC-32 LE]), 0x00`.
//!
//! The leading delimiter costs one byte and buys recovery: when a frame is
//! cut short, the next frame's own leading `0x00` ends the damaged one, so
//! the next intact frame is never lost with it. Empty frames (two zeros in a
//! row) are silently skipped.
//!
//! [`FrameDecoder`] takes bytes in any chunking, needs no allocation, and
//! counts damaged frames and skipped bytes.

use serde::{Deserialize, Serialize};

use crate::{MAX_FRAME_LEN, MAX_RAW_LEN, PROTOCOL_VERSION};

/// CRC-32 (ISO-HDLC, as Ethernet and zlib) over version byte and body.
///
/// The same algorithm everywhere; only the table size differs. The probe
/// keeps the 1 KiB byte-wise table (flash is small, frames are few); the
/// host, which decodes millions of frames on replay, uses the 16 KiB
/// slice-by-16 table, about six times faster.
#[cfg(not(feature = "std"))]
pub const CRC: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
/// CRC-32 (ISO-HDLC, as Ethernet and zlib) over version byte and body; see
/// the `no_std` variant for why the table differs.
#[cfg(feature = "std")]
pub const CRC: crc::Crc<u32, crc::Table<16>> = crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISO_HDLC);

/// Why a message could not be framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EncodeError {
    /// The message body is longer than [`crate::MAX_MESSAGE_LEN`].
    MessageTooLong,
    /// The output buffer is shorter than the frame.
    BufferTooSmall,
}

impl core::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            EncodeError::MessageTooLong => "message longer than MAX_MESSAGE_LEN",
            EncodeError::BufferTooSmall => "output buffer too small for the frame",
        })
    }
}

/// Why bytes between two delimiters were not a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FrameError {
    /// More than [`MAX_FRAME_LEN`] bytes without a delimiter.
    Overflow,
    /// The COBS stuffing was inconsistent.
    Cobs,
    /// Too short to hold a version byte and a CRC.
    TooShort,
    /// The CRC did not match.
    Crc,
}

impl core::fmt::Display for FrameError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            FrameError::Overflow => "frame longer than the maximum",
            FrameError::Cobs => "bad COBS stuffing",
            FrameError::TooShort => "frame too short",
            FrameError::Crc => "CRC mismatch",
        })
    }
}

/// Why an intact frame was not a message of ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MessageError {
    /// The peer speaks another protocol version.
    VersionMismatch {
        /// The version this build speaks.
        ours: u8,
        /// The version in the frame.
        theirs: u8,
    },
    /// The body did not parse as a message.
    Malformed,
}

impl core::fmt::Display for MessageError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            MessageError::VersionMismatch { ours, theirs } => {
                write!(f, "peer speaks protocol version {theirs}, this build speaks {ours}")
            }
            MessageError::Malformed => f.write_str("frame body is not a valid message"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for EncodeError {}
#[cfg(feature = "std")]
impl std::error::Error for FrameError {}
#[cfg(feature = "std")]
impl std::error::Error for MessageError {}

/// Encode `msg` as one complete frame (both delimiters) into `out`; returns
/// the frame's length. Needs no allocation: the raw frame is built on the
/// stack.
pub fn encode_message<T: Serialize + ?Sized>(msg: &T, out: &mut [u8]) -> Result<usize, EncodeError> {
    let mut raw = [0u8; MAX_RAW_LEN];
    raw[0] = PROTOCOL_VERSION;
    let body_len =
        postcard::to_slice(msg, &mut raw[1..MAX_RAW_LEN - 4]).map_err(|_| EncodeError::MessageTooLong)?.len();
    let crc_at = 1 + body_len;
    let crc = CRC.checksum(&raw[..crc_at]);
    raw[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
    encode_raw(&raw[..crc_at + 4], out)
}

/// COBS-stuff `raw` between two delimiters into `out`.
pub fn encode_raw(raw: &[u8], out: &mut [u8]) -> Result<usize, EncodeError> {
    let need = raw.len() + raw.len() / 254 + 3;
    if out.len() < need {
        return Err(EncodeError::BufferTooSmall);
    }
    out[0] = 0;
    let mut code_at = 1;
    let mut w = 2;
    let mut code: u8 = 1;
    for &b in raw {
        if b == 0 {
            out[code_at] = code;
            code_at = w;
            w += 1;
            code = 1;
        } else {
            out[w] = b;
            w += 1;
            code += 1;
            if code == 0xff {
                out[code_at] = code;
                code_at = w;
                w += 1;
                code = 1;
            }
        }
    }
    out[code_at] = code;
    out[w] = 0;
    Ok(w + 1)
}

/// Un-stuff a COBS block (no delimiters) in place; returns the raw length.
fn cobs_decode_in_place(buf: &mut [u8]) -> Result<usize, FrameError> {
    let mut r = 0;
    let mut w = 0;
    while r < buf.len() {
        let code = buf[r] as usize;
        if code == 0 {
            return Err(FrameError::Cobs);
        }
        r += 1;
        let end = r + code - 1;
        if end > buf.len() {
            return Err(FrameError::Cobs);
        }
        buf.copy_within(r..end, w);
        w += code - 1;
        r = end;
        if code != 0xff && r < buf.len() {
            buf[w] = 0;
            w += 1;
        }
    }
    Ok(w)
}

/// Check a raw frame's CRC and version and parse its body. `frame` is what
/// [`FrameDecoder`] yields: version byte and body, CRC already checked.
pub fn decode_message<'a, T: Deserialize<'a>>(frame: &'a [u8]) -> Result<T, MessageError> {
    let (&version, body) = frame.split_first().ok_or(MessageError::Malformed)?;
    if version != PROTOCOL_VERSION {
        return Err(MessageError::VersionMismatch { ours: PROTOCOL_VERSION, theirs: version });
    }
    match postcard::take_from_bytes(body) {
        Ok((msg, [])) => Ok(msg),
        _ => Err(MessageError::Malformed),
    }
}

/// Decode an intact probe frame of this protocol version or of an older
/// one this build still reads ([`OLDEST_READABLE_VERSION`](crate::OLDEST_READABLE_VERSION)
/// on): protocol 4 differs only in its sample batch, which had no `waited`
/// bits ([`SampleBatchV4`](crate::SampleBatchV4)); its samples read with no
/// wait. Anything older is a [`MessageError::VersionMismatch`].
pub fn decode_probe_message(frame: &[u8]) -> Result<crate::ProbeMsg<'_>, MessageError> {
    let (&version, body) = frame.split_first().ok_or(MessageError::Malformed)?;
    if version != 4 {
        return decode_message(frame);
    }
    // postcard: the enum's variant index, a varint (SampleBatch is 3, one
    // byte), then the variant's fields.
    const SAMPLE_BATCH: u8 = 3;
    if body.first() == Some(&SAMPLE_BATCH) {
        return match postcard::take_from_bytes::<crate::SampleBatchV4<'_>>(&body[1..]) {
            Ok((b, [])) => Ok(crate::ProbeMsg::SampleBatch(b.into())),
            _ => Err(MessageError::Malformed),
        };
    }
    match postcard::take_from_bytes(body) {
        Ok((msg, [])) => Ok(msg),
        _ => Err(MessageError::Malformed),
    }
}

/// Counters of a [`FrameDecoder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DecoderStats {
    /// Intact frames yielded.
    pub frames: u64,
    /// Damaged frames dropped.
    pub bad_frames: u64,
    /// Bytes dropped with damaged frames.
    pub skipped_bytes: u64,
}

/// What [`FrameDecoder::feed`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Feed<'d, 'i> {
    /// All input was consumed and no frame is complete yet.
    NeedMore,
    /// An intact frame (version byte and body, CRC stripped); `rest` is the
    /// input not yet consumed.
    Frame {
        /// The frame, for [`decode_message`].
        frame: &'d [u8],
        /// Input after the frame's closing delimiter.
        rest: &'i [u8],
    },
    /// A damaged frame was dropped; `rest` is the input not yet consumed.
    Bad {
        /// What was wrong.
        error: FrameError,
        /// Input after the damaged frame's closing delimiter.
        rest: &'i [u8],
    },
}

/// Streaming frame decoder with a fixed buffer of `N` bytes.
#[derive(Debug, Clone)]
pub struct FrameDecoder<const N: usize = MAX_FRAME_LEN> {
    buf: [u8; N],
    len: usize,
    overflowed: bool,
    stats: DecoderStats,
}

impl<const N: usize> Default for FrameDecoder<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> FrameDecoder<N> {
    /// An empty decoder.
    pub const fn new() -> Self {
        Self {
            buf: [0; N],
            len: 0,
            overflowed: false,
            stats: DecoderStats { frames: 0, bad_frames: 0, skipped_bytes: 0 },
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> DecoderStats {
        self.stats
    }

    /// Bytes held for a frame not yet closed.
    pub fn pending(&self) -> usize {
        self.len
    }

    /// Consume `input` up to the end of the next frame. Call again with
    /// `rest` until it returns [`Feed::NeedMore`].
    pub fn feed<'d, 'i>(&'d mut self, input: &'i [u8]) -> Feed<'d, 'i> {
        let mut i = 0;
        // Copy whole runs up to the next delimiter, not byte by byte: this
        // is the host's hot loop.
        while i < input.len() {
            let run_end = match memchr::memchr(0, &input[i..]) {
                Some(p) => i + p,
                None => input.len(),
            };
            let run = &input[i..run_end];
            if !self.overflowed {
                let room = N - self.len;
                if run.len() <= room {
                    self.buf[self.len..self.len + run.len()].copy_from_slice(run);
                    self.len += run.len();
                } else {
                    self.stats.skipped_bytes += (self.len + run.len()) as u64;
                    self.len = 0;
                    self.overflowed = true;
                }
            } else {
                self.stats.skipped_bytes += run.len() as u64;
            }
            if run_end == input.len() {
                return Feed::NeedMore;
            }
            i = run_end + 1;
            let rest = &input[i..];
            if self.overflowed {
                self.overflowed = false;
                self.stats.bad_frames += 1;
                return Feed::Bad { error: FrameError::Overflow, rest };
            }
            if self.len == 0 {
                continue; // empty frame between two delimiters
            }
            let held = self.len;
            self.len = 0;
            match self.check(held) {
                Ok(raw_len) => {
                    self.stats.frames += 1;
                    return Feed::Frame { frame: &self.buf[..raw_len - 4], rest };
                }
                Err(error) => {
                    self.stats.bad_frames += 1;
                    self.stats.skipped_bytes += held as u64;
                    return Feed::Bad { error, rest };
                }
            }
        }
        Feed::NeedMore
    }

    fn check(&mut self, held: usize) -> Result<usize, FrameError> {
        let raw_len = cobs_decode_in_place(&mut self.buf[..held])?;
        if raw_len < 5 {
            return Err(FrameError::TooShort);
        }
        let (data, crc) = self.buf[..raw_len].split_at(raw_len - 4);
        let want = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if CRC.checksum(data) != want {
            return Err(FrameError::Crc);
        }
        Ok(raw_len)
    }
}
