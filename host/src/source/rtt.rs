//! The RTT link: the probe's frames read from its RAM through a debug probe
//! (SEGGER RTT), host bytes written back the same way, and the defmt log on
//! another channel beside them.
//!
//! ```text
//!  probe RAM            _SEGGER_RTT control block
//!   up 0 "defmt"    ring ──read──▶ LogSink (defmt decoder: -v lines; warnings)
//!   up 1 "latprobe" ring ──read──▶ ByteSource::read ──▶ the serial path's Deframer
//!   down 0 "latprobe" ring ◀─write── ByteSource::write_all (Hello, Configure, …)
//! ```
//!
//! Everything here works on a [`TargetMemory`]: the debug probe's memory
//! access on the bench (`crate::probe`), a byte array in the tests. So the
//! ring arithmetic (a read that wraps, a writer that skipped chunks while
//! the host fell behind, a corrupt pointer) is tested without hardware.
//!
//! The firmware writes each chunk of frames to its up ring whole or not at
//! all (`NoBlockSkip`), so a host that falls behind loses whole chunks: the
//! decoder counts the frames a gap cut and resynchronises at the next
//! delimiter, and the session counts the samples lost from the sequence
//! numbers, exactly as on a serial line that dropped bytes. Warnings the log
//! decoder finds are handed to the session as [`ProbeMsg::Log`] frames,
//! slipped in at frame boundaries, so they reach the report like the ones
//! the probe sends itself.

use std::collections::VecDeque;
use std::io;
use std::time::{Duration, Instant};

use latprobe_protocol::{encode_message, LogLevel, LogLine, ProbeMsg, MAX_FRAME_LEN, MAX_LOG_TEXT};

use super::{ByteSource, Read};

/// The id at the start of an RTT control block.
pub const RTT_ID: &[u8; 16] = b"SEGGER RTT\0\0\0\0\0\0";
/// Size of the control block's header: id, then the up and down counts.
const HEADER_LEN: u64 = 24;
/// Size of one channel descriptor: name, buffer, size, write, read, flags.
const DESC_LEN: u64 = 24;
/// More channels than any firmware declares: a corrupt block.
const MAX_CHANNELS: u32 = 16;
/// The frame channels' name, up and down.
pub const FRAME_CHANNEL: &str = "latprobe";
/// How long `read` sleeps between polls of an idle ring: 2 ms is 184 bytes
/// at 921600 Bd, far below the firmware's 4 KiB ring.
const POLL: Duration = Duration::from_millis(2);

/// Word and byte access to the probe's memory while it runs.
pub trait TargetMemory: Send {
    /// Read `buf.len()` bytes at `addr`.
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Write `data` at `addr`.
    fn write(&mut self, addr: u64, data: &[u8]) -> io::Result<()>;

    /// A little-endian u32 at `addr`.
    fn read_u32(&mut self, addr: u64) -> io::Result<u32> {
        let mut b = [0u8; 4];
        self.read(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Write a little-endian u32 at `addr`.
    fn write_u32(&mut self, addr: u64, v: u32) -> io::Result<()> {
        self.write(addr, &v.to_le_bytes())
    }
}

/// Why the RTT link could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum RttError {
    /// No control block where it was looked for.
    #[error("{0}")]
    NotFound(String),
    /// A control block without the channel latprobe needs.
    #[error("{0}")]
    NoChannel(String),
    /// A descriptor whose pointers make no sense.
    #[error("the RTT control block at {addr:#010x} is corrupt: {what}")]
    Corrupt {
        /// The control block's address.
        addr: u64,
        /// What is wrong.
        what: String,
    },
    /// The debug probe failed.
    #[error("reading the probe's memory: {0}")]
    Io(#[from] io::Error),
}

/// One ring buffer of the control block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    /// Its number among the up (or down) channels.
    pub number: usize,
    /// Its name, if the firmware gave one.
    pub name: Option<String>,
    /// Address of its descriptor.
    desc: u64,
    /// Address of its buffer.
    buffer: u64,
    /// Its size in bytes.
    pub size: u32,
}

impl Channel {
    fn write_ptr_addr(&self) -> u64 {
        self.desc + 12
    }
    fn read_ptr_addr(&self) -> u64 {
        self.desc + 16
    }
}

/// A control block: where it is and what channels it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlBlock {
    /// Its address in the probe's RAM.
    pub addr: u64,
    /// Target to host rings.
    pub up: Vec<Channel>,
    /// Host to target rings.
    pub down: Vec<Channel>,
}

impl ControlBlock {
    /// Read the control block at `addr`. `Ok(None)` when the id is not
    /// there (yet: the firmware writes it early in `init`).
    pub fn read(mem: &mut dyn TargetMemory, addr: u64) -> Result<Option<Self>, RttError> {
        let mut header = [0u8; HEADER_LEN as usize];
        mem.read(addr, &mut header)?;
        if &header[..16] != RTT_ID {
            return Ok(None);
        }
        let word = |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
        let (n_up, n_down) = (word(16), word(20));
        if n_up > MAX_CHANNELS || n_down > MAX_CHANNELS {
            return Err(RttError::Corrupt { addr, what: format!("{n_up} up and {n_down} down channels") });
        }
        let mut channels = Vec::new();
        for i in 0..(n_up + n_down) as u64 {
            let desc = addr + HEADER_LEN + i * DESC_LEN;
            let mut d = [0u8; DESC_LEN as usize];
            mem.read(desc, &mut d)?;
            let w = |j: usize| u32::from_le_bytes([d[j], d[j + 1], d[j + 2], d[j + 3]]);
            let number = if i < n_up as u64 { i as usize } else { (i - n_up as u64) as usize };
            let name = match w(0) {
                0 => None,
                p => Some(read_name(mem, p as u64)?),
            };
            channels.push(Channel { number, name, desc, buffer: w(4) as u64, size: w(8) });
        }
        let down = channels.split_off(n_up as usize);
        Ok(Some(Self { addr, up: channels, down }))
    }

    /// Find a control block by its id in `[start, start + len)`, read in
    /// blocks (`scan` of the issue: no ELF at hand).
    pub fn scan(mem: &mut dyn TargetMemory, start: u64, len: u64) -> Result<Option<Self>, RttError> {
        const BLOCK: u64 = 4096;
        let mut buf = vec![0u8; (BLOCK + RTT_ID.len() as u64) as usize];
        let mut at = start;
        while at < start + len {
            let n = (BLOCK + RTT_ID.len() as u64).min(start + len - at) as usize;
            mem.read(at, &mut buf[..n])?;
            let hits: Vec<usize> = buf[..n]
                .windows(RTT_ID.len())
                .enumerate()
                .filter(|(_, w)| *w == RTT_ID)
                .map(|(i, _)| i)
                .collect();
            for i in hits {
                // A copy of the id may sit elsewhere (a string on the stack):
                // take the first one that reads as a block.
                match Self::read(mem, at + i as u64) {
                    Ok(Some(cb)) => return Ok(Some(cb)),
                    Ok(None) | Err(RttError::Corrupt { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            at += BLOCK;
        }
        Ok(None)
    }

    /// The up channel named `name`.
    pub fn up_named(&self, name: &str) -> Option<&Channel> {
        self.up.iter().find(|c| c.name.as_deref() == Some(name))
    }

    /// The down channel named `name`.
    pub fn down_named(&self, name: &str) -> Option<&Channel> {
        self.down.iter().find(|c| c.name.as_deref() == Some(name))
    }

    /// The channels, for messages: `up 0 "defmt", up 1 "latprobe", down 0 …`.
    pub fn describe(&self) -> String {
        let one = |dir: &str, c: &Channel| match &c.name {
            Some(n) => format!("{dir} {} \"{n}\"", c.number),
            None => format!("{dir} {}", c.number),
        };
        let all: Vec<String> =
            self.up.iter().map(|c| one("up", c)).chain(self.down.iter().map(|c| one("down", c))).collect();
        if all.is_empty() {
            "no channels".into()
        } else {
            all.join(", ")
        }
    }
}

fn read_name(mem: &mut dyn TargetMemory, addr: u64) -> io::Result<String> {
    let mut b = [0u8; 32];
    mem.read(addr, &mut b)?;
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    Ok(String::from_utf8_lossy(&b[..end]).into_owned())
}

/// Move what the target wrote to `ch` (an up ring) into `out`, at most
/// `max` bytes, and hand the space back to the target. Handles the wrap: the
/// bytes from the read pointer to the end of the buffer, then from its start.
pub fn read_up(
    mem: &mut dyn TargetMemory,
    ch: &Channel,
    out: &mut Vec<u8>,
    max: usize,
) -> Result<usize, RttError> {
    let write = mem.read_u32(ch.write_ptr_addr())?;
    let read = mem.read_u32(ch.read_ptr_addr())?;
    check_ptrs(ch, write, read)?;
    let (write, read, size) = (write as usize, read as usize, ch.size as usize);
    let avail = if write >= read { write - read } else { size - read + write };
    let take = avail.min(max);
    if take == 0 {
        return Ok(0);
    }
    let first = take.min(size - read);
    let start = out.len();
    out.resize(start + take, 0);
    mem.read(ch.buffer + read as u64, &mut out[start..start + first])?;
    if take > first {
        mem.read(ch.buffer, &mut out[start + first..])?;
    }
    mem.write_u32(ch.read_ptr_addr(), ((read + take) % size) as u32)?;
    Ok(take)
}

/// Throw away what waits in the up ring `ch` (stale frames of an earlier
/// session), so the link starts at the target's present.
pub fn skip_up(mem: &mut dyn TargetMemory, ch: &Channel) -> Result<(), RttError> {
    let write = mem.read_u32(ch.write_ptr_addr())?;
    let read = mem.read_u32(ch.read_ptr_addr())?;
    check_ptrs(ch, write, read)?;
    mem.write_u32(ch.read_ptr_addr(), write)?;
    Ok(())
}

/// Write as much of `data` as the down ring `ch` has room for; returns how
/// much. One byte of the ring always stays free (RTT's full/empty rule).
pub fn write_down(mem: &mut dyn TargetMemory, ch: &Channel, data: &[u8]) -> Result<usize, RttError> {
    let write = mem.read_u32(ch.write_ptr_addr())?;
    let read = mem.read_u32(ch.read_ptr_addr())?;
    check_ptrs(ch, write, read)?;
    let (write, read, size) = (write as usize, read as usize, ch.size as usize);
    let free = if read > write { read - write - 1 } else { size - write + read - 1 };
    let n = free.min(data.len());
    if n == 0 {
        return Ok(0);
    }
    let first = n.min(size - write);
    mem.write(ch.buffer + write as u64, &data[..first])?;
    if n > first {
        mem.write(ch.buffer, &data[first..n])?;
    }
    mem.write_u32(ch.write_ptr_addr(), ((write + n) % size) as u32)?;
    Ok(n)
}

fn check_ptrs(ch: &Channel, write: u32, read: u32) -> Result<(), RttError> {
    if ch.size < 2 || write >= ch.size || read >= ch.size {
        return Err(RttError::Corrupt {
            addr: ch.desc,
            what: format!(
                "channel {} has size {}, write offset {write}, read offset {read} (did the probe reset? attach again)",
                ch.number, ch.size
            ),
        });
    }
    Ok(())
}

/// Where the log channel's bytes go: a defmt decoder on the bench. It
/// prints what it should and returns the warnings and errors to keep.
pub trait LogSink: Send {
    /// Decode `bytes`; push each warning or error line to `keep`.
    fn feed(&mut self, bytes: &[u8], keep: &mut Vec<(LogLevel, String)>);
}

/// The RTT link as a [`ByteSource`]: frames from up channel "latprobe", host
/// bytes to down channel "latprobe", the log from up channel 0 (when it is
/// another channel) into a [`LogSink`].
pub struct RttSource<M> {
    mem: M,
    name: String,
    frames: Channel,
    host: Channel,
    log: Option<(Channel, Box<dyn LogSink>)>,
    /// ProbeMsg::Log frames to slip in at the next frame boundary.
    inject: VecDeque<Vec<u8>>,
    /// The rest of a log frame being handed out.
    pending: VecDeque<u8>,
    /// Whether the last byte handed out ended a frame (or none was yet).
    at_boundary: bool,
    scratch: Vec<u8>,
    /// How much a single poll takes from the frame ring at most.
    max_read: usize,
}

impl<M> std::fmt::Debug for RttSource<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RttSource").field("name", &self.name).field("frames", &self.frames).finish()
    }
}

impl<M: TargetMemory> RttSource<M> {
    /// The link over the control block `cb`: its up and down channels named
    /// "latprobe", and the log on up channel 0 when `log` is given. What
    /// waits in the frame ring is dropped first (an earlier session's).
    pub fn new(
        mut mem: M,
        cb: &ControlBlock,
        name: impl Into<String>,
        log: Option<Box<dyn LogSink>>,
    ) -> Result<Self, RttError> {
        let missing = |what: &str| {
            RttError::NoChannel(format!(
                "the probe's RTT control block at {:#010x} has no {what} channel \"{FRAME_CHANNEL}\" \
                 (it has {}): the probe runs firmware without latprobe's RTT link; flash this \
                 latprobe's firmware (`latprobe flash`) or use the serial link (--port)",
                cb.addr,
                cb.describe()
            ))
        };
        let frames = cb.up_named(FRAME_CHANNEL).ok_or_else(|| missing("up"))?.clone();
        let host = cb.down_named(FRAME_CHANNEL).ok_or_else(|| missing("down"))?.clone();
        skip_up(&mut mem, &frames)?;
        let log = match (log, cb.up.first()) {
            (Some(sink), Some(ch)) if ch.number != frames.number => Some((ch.clone(), sink)),
            _ => None,
        };
        Ok(Self {
            mem,
            name: name.into(),
            frames,
            host,
            log,
            inject: VecDeque::new(),
            pending: VecDeque::new(),
            at_boundary: true,
            scratch: Vec::new(),
            max_read: usize::MAX,
        })
    }

    /// Take at most `n` bytes from the frame ring per poll (tests: a reader
    /// that falls behind).
    pub fn with_max_read(mut self, n: usize) -> Self {
        self.max_read = n.max(1);
        self
    }

    /// The memory, back (tests: the fake target's state).
    pub fn memory(&mut self) -> &mut M {
        &mut self.mem
    }

    /// Drain the log ring into the sink; queue its warnings as frames.
    fn poll_log(&mut self) -> Result<(), RttError> {
        let Some((ch, sink)) = &mut self.log else { return Ok(()) };
        self.scratch.clear();
        if read_up(&mut self.mem, ch, &mut self.scratch, usize::MAX)? == 0 {
            return Ok(());
        }
        let mut keep = Vec::new();
        sink.feed(&self.scratch, &mut keep);
        for (level, text) in keep {
            self.inject.push_back(log_frame(level, &text));
        }
        Ok(())
    }
}

/// A [`ProbeMsg::Log`] frame carrying `text` (cut to what a probe may send).
pub fn log_frame(level: LogLevel, text: &str) -> Vec<u8> {
    let mut end = text.len().min(MAX_LOG_TEXT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let msg = ProbeMsg::Log(LogLine { level, tick: 0, text: &text[..end] });
    let mut frame = [0u8; MAX_FRAME_LEN];
    // A log line of at most MAX_LOG_TEXT bytes always fits a frame.
    let n = encode_message(&msg, &mut frame).unwrap_or(0);
    frame[..n].to_vec()
}

impl<M: TargetMemory> ByteSource for RttSource<M> {
    fn read(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Read> {
        let deadline = Instant::now() + timeout;
        loop {
            self.poll_log().map_err(to_io)?;
            // A log frame goes out whole, between two frames of the ring.
            if self.pending.is_empty() && self.at_boundary {
                if let Some(frame) = self.inject.pop_front() {
                    self.pending.extend(frame);
                }
            }
            if !self.pending.is_empty() {
                let n = buf.len().min(self.pending.len());
                for (b, p) in buf.iter_mut().zip(self.pending.drain(..n)) {
                    *b = p;
                }
                return Ok(Read::Data(n));
            }
            self.scratch.clear();
            let max = buf.len().min(self.max_read);
            let n = read_up(&mut self.mem, &self.frames, &mut self.scratch, max).map_err(to_io)?;
            if n > 0 {
                buf[..n].copy_from_slice(&self.scratch[..n]);
                self.at_boundary = buf[n - 1] == 0;
                return Ok(Read::Data(n));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(Read::Timeout);
            }
            std::thread::sleep(POLL.min(deadline - now));
        }
    }

    fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        // The firmware empties its 256-byte ring every 10 ms: a frame fits
        // at once, and a second waits at most a poll.
        let deadline = Instant::now() + Duration::from_secs(1);
        while !bytes.is_empty() {
            let n = write_down(&mut self.mem, &self.host, bytes).map_err(to_io)?;
            bytes = &bytes[n..];
            if n == 0 {
                if Instant::now() >= deadline {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the probe does not empty its RTT down channel: is the firmware running?",
                    ));
                }
                std::thread::sleep(POLL);
            }
        }
        Ok(())
    }

    fn name(&self) -> &str {
        &self.name
    }
}

fn to_io(e: RttError) -> io::Error {
    match e {
        RttError::Io(e) => e,
        other => io::Error::other(other.to_string()),
    }
}
