//! The link layer: bytes from a [`ByteSource`] become probe messages
//! (through the [`Deframer`]), host messages become frames. It counts what
//! it could not read and, with `--raw`, records every received byte before
//! decoding it.

use std::time::Duration;

use latprobe_protocol::{encode_message, HostMsg, MAX_FRAME_LEN};

pub use crate::deframe::{Deframer, Incoming};
use crate::rawfile::RawWriter;
use crate::source::{ByteSource, Read};
use crate::Error;

/// What one [`Link::poll`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Polled {
    /// Bytes arrived (and every frame they completed was handed out).
    Data,
    /// Nothing arrived within the timeout.
    Timeout,
    /// The other end closed.
    Closed,
}

/// A [`ByteSource`] with a [`Deframer`] and an optional raw recording.
pub struct Link {
    source: Box<dyn ByteSource>,
    deframer: Deframer,
    buf: Vec<u8>,
    raw: Option<RawWriter>,
    /// The raw recording that stopped mid-run, and why (the disk filled up, say).
    raw_error: Option<(RawWriter, std::io::Error)>,
    bytes_in: u64,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link").field("port", &self.source.name()).field("bytes_in", &self.bytes_in).finish()
    }
}

impl Link {
    /// A link over `source`, recording into `raw` if given.
    pub fn new(source: Box<dyn ByteSource>, raw: Option<RawWriter>) -> Self {
        Self { source, deframer: Deframer::new(), buf: vec![0; 64 * 1024], raw, raw_error: None, bytes_in: 0 }
    }

    /// The port's name, for messages.
    pub fn name(&self) -> &str {
        self.source.name()
    }

    /// Bytes received so far.
    pub fn bytes_in(&self) -> u64 {
        self.bytes_in
    }

    /// Frames that could not be used.
    pub fn bad_frames(&self) -> u64 {
        self.deframer.bad_frames()
    }

    /// Wait up to `timeout` for bytes; hand every completed message to `on`.
    ///
    /// A raw recording that cannot be written (a full disk) stops being
    /// recorded, and the measurement goes on: see `Link::raw_error`.
    pub fn poll(&mut self, timeout: Duration, on: impl FnMut(Incoming<'_>)) -> Result<Polled, Error> {
        if let Some(raw) = &mut self.raw {
            if let Err(e) = raw.tick() {
                self.drop_raw(e);
            }
        }
        let n = match self.source.read(&mut self.buf, timeout) {
            Ok(Read::Data(n)) => n,
            Ok(Read::Timeout) => return Ok(Polled::Timeout),
            Ok(Read::Closed) => return Ok(Polled::Closed),
            Err(e) => {
                return Err(Error::io(format!("cannot read from the probe on {}", self.source.name()), e))
            }
        };
        self.bytes_in += n as u64;
        if let Some(raw) = &mut self.raw {
            if let Err(e) = raw.append(&self.buf[..n]) {
                self.drop_raw(e);
            }
        }
        self.deframer.feed(&self.buf[..n], on);
        Ok(Polled::Data)
    }

    /// Frame and send one message.
    pub fn send(&mut self, msg: &HostMsg) -> Result<(), Error> {
        let mut frame = [0u8; MAX_FRAME_LEN];
        let n =
            encode_message(msg, &mut frame).map_err(|e| Error::Bug(format!("cannot frame {msg:?}: {e}")))?;
        self.source
            .write_all(&frame[..n])
            .map_err(|e| Error::io(format!("cannot write to the probe on {}", self.source.name()), e))
    }

    /// Write out and sync the raw recording, if any.
    pub fn finish_raw(&mut self) -> Result<(), Error> {
        match &mut self.raw {
            Some(raw) => raw.finish(),
            None => Ok(()),
        }
    }

    /// Write out the raw recording with the run's `ending`, and sync it.
    pub fn finish_raw_with(&mut self, ending: &crate::model::RawEnding) -> Result<(), Error> {
        match &mut self.raw {
            Some(raw) => raw.finish_with(ending),
            None => Ok(()),
        }
    }

    /// Why the raw recording stopped during the run, if it did (the file
    /// then holds the run's start only), with what the file holds: read
    /// back from it here, after the run, not in the middle of it.
    pub fn take_raw_error(&mut self) -> Option<Error> {
        let (raw, cause) = self.raw_error.take()?;
        let (bytes, samples) = raw.held();
        Some(Error::io(
            format!(
                "the raw file {} (--raw) stopped after {bytes} bytes of the stream ({samples} samples)",
                raw.path().display()
            ),
            cause,
        ))
    }

    /// The stream is over: count an unfinished last frame as bad.
    pub fn end_of_stream(&mut self) {
        self.deframer.end_of_stream();
    }

    fn drop_raw(&mut self, e: Error) {
        if let Some(raw) = self.raw.take() {
            let cause = match e {
                Error::Io { cause, .. } => cause,
                other => std::io::Error::other(other.to_string()),
            };
            self.raw_error = Some((raw, cause));
        }
    }
}
