//! A recorded raw file (see [`crate::rawfile`]) played back as a link: the
//! probe's bytes come from the file, the host's go nowhere, and the end of
//! the file is the link closing.

use std::fs::File;
use std::io::{self, Read as _, Take};
use std::time::Duration;

use super::{ByteSource, Read};

/// The stream part of a raw file, positioned after its header.
#[derive(Debug)]
pub struct ReplaySource {
    name: String,
    file: Take<File>,
}

impl ReplaySource {
    /// Replay `file` (already past the header) under `name`, to its end.
    pub fn new(name: String, file: File) -> Self {
        Self { name, file: file.take(u64::MAX) }
    }

    /// Replay the next `len` bytes of `file` only (the stream before the
    /// raw file's recorded ending).
    pub fn limited(name: String, file: File, len: u64) -> Self {
        Self { name, file: file.take(len) }
    }
}

impl ByteSource for ReplaySource {
    fn read(&mut self, buf: &mut [u8], _timeout: Duration) -> io::Result<Read> {
        loop {
            match self.file.read(buf) {
                Ok(0) => return Ok(Read::Closed),
                Ok(n) => return Ok(Read::Data(n)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn write_all(&mut self, _bytes: &[u8]) -> io::Result<()> {
        Ok(())
    }

    fn name(&self) -> &str {
        &self.name
    }
}
