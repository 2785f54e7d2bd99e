//! Input files read whole (JSON reports, the outputs `import` and
//! `compare` read), bounded: one cap for every such file, so that no input
//! (a damaged file, `/dev/zero`, a 1 GB log) can exhaust memory. Raw files
//! are streamed and need none. An input must be a regular file: a FIFO
//! would hang the read, a device (`/dev/zero`) never end, so either is an
//! error naming the file, found without reading it ([`check_regular`]).

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
    let file = open_regular(path).map_err(ReadError::Io)?;
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

/// What `path` is when it is not a regular file (or a link to one):
/// `Some("a FIFO")`, `Some("a directory")`, …; `None` for a regular file,
/// or for a path that cannot be looked at (its open says why).
pub fn not_regular(path: &Path) -> Option<&'static str> {
    let m = std::fs::metadata(path).ok()?;
    kind(&m.file_type())
}

fn kind(t: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt as _;
    Some(if t.is_file() {
        return None;
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    })
}

/// The error for an input that is not a regular file: "is a FIFO (named
/// pipe), not a regular file: give the file itself".
pub fn not_regular_error(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "it is {what}, not a regular file: give the file itself (copy a pipe's output to a file first)"
        ),
    )
}

/// `Ok` for a regular file (or a link to one) or a path that cannot be
/// looked at; the error of [`not_regular_error`] otherwise. Nothing is
/// opened: a FIFO is not waited on.
pub fn check_regular(path: &Path) -> std::io::Result<()> {
    not_regular(path).map_or(Ok(()), |w| Err(not_regular_error(w)))
}

/// Open `path` for reading if it is a regular file. Opened without
/// blocking (a FIFO put there after the check does not hang the open) and
/// checked again on the open file.
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    check_regular(path)?;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    if let Some(w) = kind(&file.metadata()?.file_type()) {
        return Err(not_regular_error(w));
    }
    Ok(file)
}

/// The text of a small input (`--limits`, `--calibration`,
/// `--target-meta`): a regular file of at most [`MAX_INPUT_BYTES`] of
/// UTF-8. The error says what is wrong, without the file's name: the
/// caller names it with its flag.
pub fn read_text_capped(path: &Path) -> std::io::Result<String> {
    let bytes = read_capped(path).map_err(|e| match e {
        ReadError::Io(e) => e,
        ReadError::TooLong => {
            std::io::Error::new(std::io::ErrorKind::InvalidData, format!("it is longer than {}", cap_text()))
        }
    })?;
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

/// The cap in words, for errors: "256 MiB".
pub fn cap_text() -> String {
    format!("{} MiB", MAX_INPUT_BYTES >> 20)
}
