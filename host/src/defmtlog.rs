//! The probe's defmt log, decoded on the host against the firmware's ELF
//! (`defmt-decoder`, the decoder probe-rs and defmt-print use): shown with
//! `-v`, its warnings and errors kept in the report.
//!
//! defmt sends indices into a table that only the ELF holds, so the log
//! can be read only with the very ELF the probe runs: with another one the
//! lines come out wrong or malformed, which is one more reason `run --link
//! rtt` wants the ELF that `latprobe flash` wrote.

use std::path::Path;

use defmt_decoder::{DecodeError, StreamDecoder, Table};
use latprobe_protocol::LogLevel;

use crate::source::rtt::LogSink;
use crate::Error;

/// One decoded log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// `trace` … `error`, or `print` for a `println!`.
    pub level: &'static str,
    /// The formatted message.
    pub text: String,
}

impl Line {
    /// The level as the protocol's, for a warning or an error.
    pub fn kept_level(&self) -> Option<LogLevel> {
        match self.level {
            "warn" => Some(LogLevel::Warn),
            "error" => Some(LogLevel::Error),
            _ => None,
        }
    }
}

/// A stream decoder over an ELF's defmt table.
pub struct DefmtLog {
    decoder: Box<dyn StreamDecoder + Send + Sync>,
    recover: bool,
    verbose: bool,
    malformed: u64,
}

impl std::fmt::Debug for DefmtLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DefmtLog")
            .field("verbose", &self.verbose)
            .field("malformed", &self.malformed)
            .finish()
    }
}

impl DefmtLog {
    /// A decoder for the log of the firmware in `elf` (its bytes, read from
    /// `path`, which only names it in errors). With `verbose`, every line is
    /// printed on stderr as it comes.
    pub fn new(elf: &[u8], path: &Path, verbose: bool) -> Result<Self, Error> {
        let table = Table::parse(elf)
            .map_err(|e| Error::Input(format!("the defmt table of {} cannot be read: {e}", path.display())))?
            .ok_or_else(|| {
                Error::Input(format!(
                    "{} has no defmt table: it is not a latprobe probe firmware",
                    path.display()
                ))
            })?;
        let recover = table.encoding().can_recover();
        // The decoder borrows the table for as long as the link lives,
        // which is the rest of the process: one small table, kept.
        let table: &'static Table = Box::leak(Box::new(table));
        Ok(Self { decoder: table.new_stream_decoder(), recover, verbose, malformed: 0 })
    }

    /// Decode what `bytes` completes.
    pub fn decode(&mut self, bytes: &[u8]) -> Vec<Line> {
        self.decoder.received(bytes);
        let mut lines = Vec::new();
        loop {
            match self.decoder.decode() {
                Ok(frame) => lines.push(Line {
                    level: frame.level().map_or("print", |l| l.as_str()),
                    text: frame.display_message().to_string(),
                }),
                Err(DecodeError::UnexpectedEof) => break,
                Err(DecodeError::Malformed) => {
                    // rzcobs resynchronises at the next frame; a raw stream
                    // cannot, and stays silent rather than print garbage.
                    self.malformed += 1;
                    if !self.recover {
                        break;
                    }
                }
            }
        }
        lines
    }

    /// Frames that could not be decoded (bytes lost while the host was not
    /// reading, or an ELF that is not the one the probe runs).
    pub fn malformed(&self) -> u64 {
        self.malformed
    }
}

impl LogSink for DefmtLog {
    fn feed(&mut self, bytes: &[u8], keep: &mut Vec<(LogLevel, String)>) {
        for line in self.decode(bytes) {
            if self.verbose {
                crate::stderr_line!("probe: {:<5} {}", line.level, crate::out::clean(&line.text));
            }
            if let Some(level) = line.kept_level() {
                keep.push((level, line.text));
            }
        }
    }
}
