//! The raw file (`--raw FILE`): everything the probe sent, verbatim, so a
//! run can be re-analysed later with the same code (`latprobe report FILE`).
//!
//! Format, version 1:
//!
//! ```text
//!  offset  size  content
//!  0       12    magic "LATPROBE-RAW" (ASCII)
//!  12      1     format version, 1
//!  13      4     N, length of the context, u32 little-endian
//!  17      N     the run context as UTF-8 JSON (RunContext: tool_version,
//!                source, started_at, request, histfile_max_us, target, notes,
//!                started_unix_ns, limits)
//!  17+N    ...   the probe→host byte stream exactly as received: COBS frames
//!                with their 0x00 delimiters, garbage and all
//!  end-16-M M     the ending (optional): how the live run ended, as UTF-8
//!                JSON (RawEnding: ended_by, complete, error, notes)
//!  end-16   4     M, u32 little-endian
//!  end-12   12    "LATPROBE-END"
//! ```
//!
//! Only probe→host bytes are kept: the host's own messages follow from the
//! context. The file is append-only and written in blocks (every 64 KiB or
//! every second, whichever comes first), so a crash loses at most the last
//! block; a replay of a cut file reports what it holds, with
//! `complete: false`. The ending is written last, when the run is over, so
//! that a replay says what the live run said (a failure and its error, a
//! Stop the probe never confirmed); a file without it (cut short, or from
//! an older latprobe) is replayed with the ending inferred from its bytes.
//! The context and the ending are bounded ([`MAX_CONTEXT`]), as is the
//! histogram range the context may ask for ([`MAX_HISTFILE_US`]).

use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::model::{RawEnding, RunContext};
use crate::source::ReplaySource;
use crate::Error;

/// The file's first bytes.
pub const MAGIC: &[u8; 12] = b"LATPROBE-RAW";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u8 = 1;
/// Bytes buffered before a block is written.
pub const BLOCK_BYTES: usize = 64 * 1024;
/// Longest time a received byte waits in the buffer.
pub const BLOCK_TIME: Duration = Duration::from_secs(1);
/// Longest context or ending a raw file may claim.
pub const MAX_CONTEXT: u32 = 16 << 20;
/// The last bytes of a file with an ending.
pub const END_MAGIC: &[u8; 12] = b"LATPROBE-END";
/// The largest histogram range latprobe writes (`--histfile-max-us`'s
/// limit); a file claiming more is damaged, and would allocate that much.
pub const MAX_HISTFILE_US: u32 = 1_000_000;

/// Appends received bytes to a raw file in blocks.
#[derive(Debug)]
pub struct RawWriter {
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
    last_write: Instant,
    /// Stream bytes written to the file so far.
    written: u64,
    /// Bytes before the stream: magic, version, context.
    header_len: u64,
}

impl RawWriter {
    /// Create `path` and write its header.
    pub fn create(path: &Path, ctx: &RunContext) -> Result<Self, Error> {
        let fail = |e| Error::io(format!("cannot write the raw file {} (--raw)", path.display()), e);
        let mut file = File::create(path).map_err(fail)?;
        let json = serde_json::to_vec(ctx).map_err(|e| fail(e.into()))?;
        let mut head = Vec::with_capacity(17 + json.len());
        head.extend_from_slice(MAGIC);
        head.push(FORMAT_VERSION);
        head.extend_from_slice(&(json.len() as u32).to_le_bytes());
        head.extend_from_slice(&json);
        file.write_all(&head).map_err(fail)?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
            buf: Vec::with_capacity(BLOCK_BYTES),
            last_write: Instant::now(),
            written: 0,
            header_len: head.len() as u64,
        })
    }

    /// Add received bytes; writes a block when one is full.
    pub fn append(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= BLOCK_BYTES {
            self.write_block()?;
        }
        Ok(())
    }

    /// Write the buffer if it has waited [`BLOCK_TIME`]; call this often.
    pub fn tick(&mut self) -> Result<(), Error> {
        if !self.buf.is_empty() && self.last_write.elapsed() >= BLOCK_TIME {
            self.write_block()?;
        }
        Ok(())
    }

    /// Write what is buffered and sync the file.
    pub fn finish(&mut self) -> Result<(), Error> {
        self.write_block()?;
        self.file.sync_data().map_err(|e| self.fail(e))
    }

    /// Write what is buffered, then the run's `ending`, and sync the file.
    pub fn finish_with(&mut self, ending: &RawEnding) -> Result<(), Error> {
        self.write_block()?;
        let json = serde_json::to_vec(ending).map_err(|e| self.fail(e.into()))?;
        let mut tail = json;
        let len = tail.len() as u32;
        tail.extend_from_slice(&len.to_le_bytes());
        tail.extend_from_slice(END_MAGIC);
        self.file.write_all(&tail).map_err(|e| self.fail(e))?;
        self.file.sync_data().map_err(|e| self.fail(e))
    }

    /// Stream bytes written to the file so far (not those still buffered).
    pub fn written(&self) -> u64 {
        self.written
    }

    /// What the file holds of the stream, read back from it: its bytes and
    /// the samples in its whole frames. Unlike [`RawWriter::written`] this
    /// counts a block the disk cut short. Reads the file once: for the
    /// message of a recording that stopped, not for the hot path.
    pub fn held(&self) -> (u64, u64) {
        let Ok(mut file) = File::open(&self.path) else { return (self.written, 0) };
        let size = file.metadata().map_or(0, |m| m.len());
        if file.seek(SeekFrom::Start(self.header_len)).is_err() {
            return (self.written, 0);
        }
        let mut deframer = crate::deframe::Deframer::new();
        let mut samples = 0u64;
        let mut buf = vec![0u8; BLOCK_BYTES];
        loop {
            match file.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => deframer.feed(&buf[..n], |m| {
                    if let crate::deframe::Incoming::Message(latprobe_protocol::ProbeMsg::SampleBatch(b)) = m
                    {
                        samples += b.iter().filter(Result::is_ok).count() as u64;
                    }
                }),
            }
        }
        (size.saturating_sub(self.header_len), samples)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write_block(&mut self) -> Result<(), Error> {
        self.last_write = Instant::now();
        if self.buf.is_empty() {
            return Ok(());
        }
        let r = self.file.write_all(&self.buf);
        if r.is_ok() {
            self.written += self.buf.len() as u64;
        }
        self.buf.clear();
        r.map_err(|e| self.fail(e))
    }

    fn fail(&self, e: std::io::Error) -> Error {
        Error::io(format!("cannot write the raw file {} (--raw)", self.path.display()), e)
    }
}

/// Whether `path` starts with the raw file magic.
pub fn is_raw(path: &Path) -> bool {
    let mut head = [0u8; 12];
    File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && &head == MAGIC
}

/// Open a raw file: its context, and its byte stream as a link.
pub fn open(path: &Path) -> Result<(RunContext, ReplaySource), Error> {
    open_with_ending(path).map(|(ctx, src, _)| (ctx, src))
}

/// [`open`], with the run's recorded ending if the file has one (the
/// stream then stops before it).
pub fn open_with_ending(path: &Path) -> Result<(RunContext, ReplaySource, Option<RawEnding>), Error> {
    let bad =
        |what: &str| Error::Input(format!("{} is not a usable latprobe raw file: {what}", path.display()));
    let mut file = File::open(path)
        .map_err(|e| Error::Input(format!("cannot read the raw file {}: {e}", path.display())))?;
    let mut head = [0u8; 17];
    file.read_exact(&mut head).map_err(|_| bad("shorter than its header"))?;
    if &head[..12] != MAGIC {
        return Err(bad("it does not start with LATPROBE-RAW"));
    }
    if head[12] != FORMAT_VERSION {
        return Err(bad(&format!(
            "format version {}, this latprobe reads version {FORMAT_VERSION}",
            head[12]
        )));
    }
    let len = u32::from_le_bytes([head[13], head[14], head[15], head[16]]);
    if len > MAX_CONTEXT {
        return Err(bad("its context is implausibly long"));
    }
    let mut json = vec![0u8; len as usize];
    file.read_exact(&mut json).map_err(|_| bad("its context is cut short"))?;
    let ctx: RunContext =
        serde_json::from_slice(&json).map_err(|e| bad(&format!("its context does not parse ({e})")))?;
    if ctx.histfile_max_us > MAX_HISTFILE_US {
        return Err(bad(&format!(
            "its context asks for a histogram of {} us, beyond the {MAX_HISTFILE_US} us latprobe writes",
            ctx.histfile_max_us
        )));
    }
    // The limits are judged again on replay: a crafted percentile must be
    // refused here as `--limits` refuses it.
    if let Some(p) =
        ctx.limits.iter().flat_map(|l| &l.percentiles).find(|p| !(p.percent > 0.0 && p.percent < 100.0))
    {
        return Err(bad(&format!(
            "its context has a percentile limit of {}, not above 0 and below 100",
            p.percent
        )));
    }
    let stream_start = 17 + u64::from(len);
    let (ending, stream_len) = read_ending(&mut file, stream_start);
    file.seek(SeekFrom::Start(stream_start))
        .map_err(|e| Error::Input(format!("cannot read the raw file {}: {e}", path.display())))?;
    let source = match stream_len {
        Some(n) => ReplaySource::limited(path.display().to_string(), file, n),
        None => ReplaySource::new(path.display().to_string(), file),
    };
    Ok((ctx, source, ending))
}

/// The ending at the end of `file` whose stream starts at `stream_start`,
/// and the stream's length, if the file has a readable one. A regular file
/// only: a pipe or device has no end to look at.
fn read_ending(file: &mut File, stream_start: u64) -> (Option<RawEnding>, Option<u64>) {
    let Ok(meta) = file.metadata() else { return (None, None) };
    let size = meta.len();
    if !meta.is_file() || size < stream_start + 16 {
        return (None, None);
    }
    let mut tail = [0u8; 16];
    if file.seek(SeekFrom::Start(size - 16)).is_err() || file.read_exact(&mut tail).is_err() {
        return (None, None);
    }
    if &tail[4..] != END_MAGIC {
        return (None, None);
    }
    let len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if len > u64::from(MAX_CONTEXT) || size < stream_start + 16 + len {
        return (None, None);
    }
    let mut json = vec![0u8; len as usize];
    if file.seek(SeekFrom::Start(size - 16 - len)).is_err() || file.read_exact(&mut json).is_err() {
        return (None, None);
    }
    match serde_json::from_slice::<RawEnding>(&json) {
        Ok(e) => (Some(e), Some(size - 16 - len - stream_start)),
        Err(_) => (None, None),
    }
}
