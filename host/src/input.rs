//! Input files read whole (JSON reports, the outputs `import` and
//! `compare` read), bounded: one cap for every such file, so that no input
//! (a damaged file, `/dev/zero`, a 1 GB log) can exhaust memory. Raw files
//! are streamed and need none.

use std::io::Read as _;
use std::path::Path;

/// The largest file latprobe reads whole: far above any report it writes
/// (a million 1 µs bins are about 20 MB) or any tool's output it imports
/// (cyclictest `--json` of 10⁶ bins is about 21 MB), far below what would
/// exhaust memory.
pub const MAX_INPUT_BYTES: u64 = 256 << 20;

/// Why [`read_capped`] gave nothing.
#[derive(Debug)]
pub enum ReadError {
    /// The file could not be opened or read.
    Io(std::io::Error),
    /// It holds more than [`MAX_INPUT_BYTES`].
    TooLong,
}

/// The bytes of `path` if they are at most [`MAX_INPUT_BYTES`]; reads at
/// most one byte more than the cap, whatever the file's size.
pub fn read_capped(path: &Path) -> Result<Vec<u8>, ReadError> {
    let file = std::fs::File::open(path).map_err(ReadError::Io)?;
    // A regular file says its size: refuse it before reading a byte.
    if file.metadata().is_ok_and(|m| m.is_file() && m.len() > MAX_INPUT_BYTES) {
        return Err(ReadError::TooLong);
    }
    let mut bytes = Vec::new();
    file.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes).map_err(ReadError::Io)?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(ReadError::TooLong);
    }
    Ok(bytes)
}

/// The cap in words, for errors: "256 MiB".
pub fn cap_text() -> String {
    format!("{} MiB", MAX_INPUT_BYTES >> 20)
}
