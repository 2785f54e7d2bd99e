//! The virtual probe: the real probe engine (`latprobe-firmware`) on a host
//! thread, its timer `CLOCK_MONOTONIC` in ns, its stimulus line a
//! pseudo-terminal, its host link an in-process socket carrying the real
//! framed bytes into the same link code a serial port uses.
//!
//! ```text
//!  latprobe (session) ◀─socketpair─▶ engine thread ──write byte──▶ pty master   (echo modes)
//!                                        ▲                           │ pty slave
//!                                        └──── read echo, stamp ◀────┘ latprobe-responder
//! ```
//!
//! Its timestamps come from this machine's own clock, read by software
//! around `write()` and after `read()`: it measures the tty path of this
//! machine, but it is not independent of it the way a hardware probe is.
//! The stimulus tick is the clock read right before the `write()`, the
//! response tick the clock read right after the `read()` returns. In a
//! periodic run nothing is written, and every byte read is an edge,
//! stamped right after the `read()`.
//!
//! Its trigger output (`--trigger-above`), when it is given a FIFO
//! ([`Options::trigger_fifo`]), is one byte `b'T'` written to that FIFO the
//! moment the engine finds a stimulus unanswered past the threshold
//! ([`Engine::trigger_due`]): the same decision a board makes in software
//! (QEMU), where a Nucleo arms a compare. The FIFO is opened `O_RDWR |
//! O_NONBLOCK`, so the write never blocks, whether or not anyone reads it
//! (a full FIFO loses the byte; the sample is flagged either way). On a
//! board the trigger is a GPIO the responder waits on; here the FIFO stands
//! in for that wire.

use std::ffi::CStr;
use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use latprobe_firmware::{BoardInfo, Engine, TimerBits};
use latprobe_protocol::{identity_byte, Capabilities, Stimulus};

use crate::error::{Error, LinkError};
use crate::source::{pair, Socket};

/// Board name in the virtual probe's Hello.
pub const BOARD: &str = "virtual";
/// The virtual probe's timer: nanoseconds.
pub const TIMER_HZ: u32 = 1_000_000_000;
/// Output queue of the engine: roomier than a microcontroller's, since the
/// host thread may be descheduled for a while.
const TX_QUEUE: usize = 16 * 1024;
/// Longest sleep of the engine loop, so a stop request is seen promptly.
const MAX_SLEEP_NS: u64 = 100_000_000;

/// A running virtual probe.
#[derive(Debug)]
pub struct VirtualProbe {
    slave_path: PathBuf,
    // Held open so the master never reads EIO (hang-up) while the
    // responder has not opened the slave yet, or between two responders.
    _slave: OwnedFd,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<()>>>,
    /// The SCHED_FIFO priority the engine thread runs at, if it got one.
    rt_priority: Option<u8>,
}

/// How to start a [`VirtualProbe`].
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Run the engine thread at this SCHED_FIFO priority, when permitted.
    pub priority: Option<u8>,
    /// The trigger output: a FIFO (made by the caller, e.g. with mkfifo)
    /// that gets one byte `b'T'` per triggered stimulus. With it the probe
    /// announces `Capabilities::TRIGGER`; without it, none.
    pub trigger_fifo: Option<PathBuf>,
    /// Announce `Capabilities::TRIGGER` and flag the samples with no
    /// trigger line at all (`demo --trace-stop host`: latprobe stops the
    /// trace when a flagged sample arrives, as for a board with no wire).
    pub trigger_flags_only: bool,
}

/// The trigger output's byte.
pub const TRIGGER_BYTE: u8 = b'T';

/// Open the trigger FIFO for writing without ever blocking: `O_RDWR` so
/// the open succeeds with no reader, `O_NONBLOCK` so a write to a full
/// FIFO fails instead of waiting.
fn open_trigger(path: &std::path::Path) -> Result<std::fs::File, Error> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| Error::io(format!("virtual probe: cannot open its trigger FIFO {}", path.display()), e))
}

/// Put the calling thread in SCHED_FIFO at `priority`.
fn set_fifo(priority: u8) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: i32::from(priority) };
    // SAFETY: `param` is a valid sched_param for the call; pthread_self()
    // is always a valid handle of the calling thread.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// The current `CLOCK_MONOTONIC` time in ns: the virtual probe's tick.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC exists on
    // every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

fn last_os_error(what: &str) -> Error {
    Error::io(format!("virtual probe: {what}"), io::Error::last_os_error())
}

/// Open a pseudo-terminal with the slave in raw mode (no echo by the line
/// discipline itself, which would answer for the responder).
fn open_pty() -> Result<(OwnedFd, OwnedFd, PathBuf), Error> {
    let (mut master, mut slave): (RawFd, RawFd) = (-1, -1);
    // SAFETY: openpty writes two fds; the name, termios and winsize
    // pointers may be null.
    let rc = unsafe {
        libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null())
    };
    if rc != 0 {
        return Err(last_os_error("cannot open a pseudo-terminal"));
    }
    // SAFETY: openpty succeeded, so both are fresh fds that we own.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    for fd in [master.as_raw_fd(), slave.as_raw_fd()] {
        // SAFETY: fcntl on an fd we own. CLOEXEC: the responder opens the
        // slave by its path, it must not inherit ours.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: as above; the master is read without blocking.
    unsafe {
        let flags = libc::fcntl(master.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(master.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    // SAFETY: an all-zero termios is a valid value to be filled by tcgetattr.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: `t` is valid and the slave fd is open.
    if unsafe { libc::tcgetattr(slave.as_raw_fd(), &mut t) } != 0 {
        return Err(last_os_error("cannot read the pseudo-terminal's settings"));
    }
    // SAFETY: `t` is a valid termios.
    unsafe { libc::cfmakeraw(&mut t) };
    // SAFETY: `t` is valid and the slave fd is open.
    if unsafe { libc::tcsetattr(slave.as_raw_fd(), libc::TCSANOW, &t) } != 0 {
        return Err(last_os_error("cannot put the pseudo-terminal in raw mode"));
    }
    let mut name = [0 as libc::c_char; 128];
    // SAFETY: `name` is writable for its whole length.
    if unsafe { libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()) } != 0 {
        return Err(last_os_error("cannot name the pseudo-terminal"));
    }
    // SAFETY: ptsname_r wrote a NUL-terminated string into `name`.
    let path = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
    Ok((master, slave, PathBuf::from(path)))
}

impl VirtualProbe {
    /// Start the engine thread, at SCHED_FIFO `priority` when given and
    /// permitted (its own wake-ups then add less to the figures; if refused,
    /// one warning says so and it runs anyway). Returns the probe and the
    /// host's end of its link, to be wrapped in a [`crate::link::Link`].
    pub fn start(priority: Option<u8>) -> Result<(Self, Socket<UnixStream>), Error> {
        Self::start_with(Options { priority, ..Options::default() })
    }

    /// [`VirtualProbe::start`] with every option, the trigger output among
    /// them.
    pub fn start_with(options: Options) -> Result<(Self, Socket<UnixStream>), Error> {
        let priority = options.priority;
        let trigger = match options.trigger_fifo.as_deref().map(open_trigger).transpose()? {
            Some(f) => Trigger::Fifo(f),
            None if options.trigger_flags_only => Trigger::FlagsOnly,
            None => Trigger::None,
        };
        let (master, slave, slave_path) = open_pty()?;
        let name = format!("virtual probe (pty {})", slave_path.display());
        let (host_end, probe_end) =
            pair(&name).map_err(|e| Error::io("virtual probe: cannot create its link", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let (rt_tx, rt_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("virtual-probe".into())
            .spawn(move || {
                let _ = rt_tx.send(priority.map(|p| (p, set_fifo(p))));
                engine_loop(master, probe_end, &flag, trigger)
            })
            .map_err(|e| Error::io("virtual probe: cannot start its thread", e))?;
        let rt_priority = match rt_rx.recv() {
            Ok(Some((p, Ok(())))) => Some(p),
            Ok(Some((p, Err(e)))) => {
                crate::stderr_line!(
                    "warning: virtual probe: SCHED_FIFO {p} not permitted ({e}; needs CAP_SYS_NICE or an \
                     rtprio limit): its thread runs at normal priority, and its own wake-ups add to the figures"
                );
                None
            }
            Ok(None) | Err(_) => None,
        };
        Ok((Self { slave_path, _slave: slave, stop, thread: Some(thread), rt_priority }, host_end))
    }

    /// The SCHED_FIFO priority the engine thread got, if any.
    pub fn rt_priority(&self) -> Option<u8> {
        self.rt_priority
    }

    /// The pty slave the responder must open: the probe's "target line".
    pub fn slave_path(&self) -> &std::path::Path {
        &self.slave_path
    }

    /// Stop the engine thread and report how it ended.
    pub fn stop(mut self) -> Result<(), Error> {
        self.join()
    }

    fn join(&mut self) -> Result<(), Error> {
        self.stop.store(true, Ordering::SeqCst);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(Err(e))) => Err(Error::io("virtual probe", e)),
            Some(Err(_)) => Err(Error::Link(LinkError::Probe {
                port: BOARD.into(),
                what: "its engine thread panicked".into(),
            })),
            _ => Ok(()),
        }
    }
}

impl Drop for VirtualProbe {
    fn drop(&mut self) {
        let _ = self.join();
    }
}

/// The board side of the engine seam, in the order lib.rs of the engine
/// prescribes: now, events, poll, requests, output.
/// The virtual probe's trigger output.
#[derive(Debug)]
enum Trigger {
    /// None: no `TRIGGER` announced.
    None,
    /// A byte to this FIFO per triggered stimulus.
    Fifo(std::fs::File),
    /// The samples flagged, no line.
    FlagsOnly,
}

fn engine_loop(
    master: OwnedFd,
    mut host: UnixStream,
    stop: &AtomicBool,
    mut trigger: Trigger,
) -> io::Result<()> {
    // Timer slack (50 µs by default) would make every sleep that much late;
    // the stimulus would still be stamped right, but the schedule would slip.
    // SAFETY: prctl(PR_SET_TIMERSLACK) affects only this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    host.set_nonblocking(true)?;
    // Periodic too: each byte the responder writes is an edge.
    let caps = Capabilities::UART_ECHO | Capabilities::PERIODIC | Capabilities::EMULATED;
    let caps = if matches!(trigger, Trigger::None) { caps } else { caps | Capabilities::TRIGGER };
    let board = BoardInfo::new(BOARD, TIMER_HZ, TimerBits::B64, caps);
    let mut engine: Engine<TX_QUEUE> = Engine::new(board);
    let mut fired: Option<u32> = None;
    let mut buf = [0u8; 4096];
    let mut out = [0u8; 4096];
    let mut master_ok = true;
    while !stop.load(Ordering::SeqCst) {
        // Sleep until the engine's next deadline, a response, or host bytes.
        let now = now_ns();
        let wait = engine.next_deadline().map_or(MAX_SLEEP_NS, |d| d.saturating_sub(now).min(MAX_SLEEP_NS));
        let mut fds = [
            libc::pollfd {
                fd: if master_ok { master.as_raw_fd() } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd { fd: host.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        let ts = libc::timespec { tv_sec: (wait / 1_000_000_000) as _, tv_nsec: (wait % 1_000_000_000) as _ };
        // SAFETY: `fds` and `ts` are valid for the call; no signal mask.
        let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }

        // The trigger before the responses: an answer not read yet gets a
        // tick after this `now`, so it is late by the same rule the
        // trigger applies, and every late sample has its byte first.
        raise_trigger(&mut engine, &mut trigger);
        // Responses first: the echoed bytes, stamped right after the read.
        if fds[0].revents & libc::POLLIN != 0 {
            loop {
                // SAFETY: reading into a valid buffer from an fd we own.
                let n = unsafe { libc::read(master.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                let t = now_ns();
                if n <= 0 {
                    break;
                }
                // Bytes read together were all there by `t`: each is an
                // answer at `t`, the earliest time this board can vouch
                // for, with its byte (the identity, when identity is on).
                // In a periodic run each byte is an edge of the target's.
                let periodic = engine.config().is_some_and(|c| !c.mode.is_echo()) && engine.is_running();
                for &byte in &buf[..n as usize] {
                    if periodic {
                        engine.on_capture(t, t);
                    } else {
                        engine.on_response_byte(t, byte, t);
                    }
                }
            }
        } else if fds[0].revents & (libc::POLLHUP | libc::POLLERR) != 0 {
            // Cannot happen while we hold the slave open; if it does, stop
            // polling the master rather than spin on it.
            master_ok = false;
        }
        // And one the answers just read showed late (read after a sleep
        // past the threshold), at once.
        raise_trigger(&mut engine, &mut trigger);
        // Host bytes.
        if fds[1].revents != 0 {
            loop {
                match host.read(&mut buf) {
                    Ok(0) => return Ok(()), // the host closed the link
                    Ok(n) => engine.on_host_bytes(&buf[..n], now_ns()),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        // The stimulus, if one is due: stamp, write, report. Before the
        // engine's poll: after this process was suspended (Ctrl-Z, SIGSTOP)
        // the due stimulus is older than the engine's stall bound (interval
        // + one second), and a poll first would fault the run as a board
        // that never produced it. Written first, it is reported at its real
        // (late) tick, like a stall: the stimuli behind it wait for their
        // slots and count as slipped, and the schedule re-anchors.
        fire(&mut engine, master.as_raw_fd(), &mut fired);
        engine.poll(now_ns());
        // And the stimulus the poll just planned, if it is due already.
        fire(&mut engine, master.as_raw_fd(), &mut fired);
        // A trigger that fell due during the poll: its tick is behind the
        // engine's `now` now, so `next_deadline` no longer wakes for it.
        raise_trigger(&mut engine, &mut trigger);

        // Output: whole frames, in order, to the host.
        loop {
            let n = engine.read_tx(&mut out);
            if n == 0 {
                break;
            }
            match write_all_blocking(&mut host, &out[..n]) {
                Ok(()) => {}
                // The host closed the link: the run is over.
                Err(e) if matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset) => {
                    return Ok(())
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Write the trigger byte for every stimulus the engine finds due now.
fn raise_trigger<const N: usize>(engine: &mut Engine<N>, trigger: &mut Trigger) {
    while engine.trigger_due(now_ns()).is_some() {
        if let Trigger::Fifo(fifo) = trigger {
            // Non-blocking: a full FIFO (nobody reading) loses the byte, and
            // the sample is flagged all the same.
            let _ = fifo.write(&[TRIGGER_BYTE]);
        }
    }
}

/// Produce the requested stimulus if it is due and not yet produced:
/// stamp, write, report.
fn fire<const N: usize>(engine: &mut Engine<N>, master: RawFd, fired: &mut Option<u32>) {
    let Some(req) = engine.stimulus_request() else { return };
    if *fired == Some(req.id) || now_ns() < req.at {
        return;
    }
    // The engine names the byte of every stimulus: the fixed byte, or this
    // stimulus's identity byte.
    let byte = match req.stimulus {
        Stimulus::Byte(b) => b,
        Stimulus::Identified => identity_byte(req.seq),
        Stimulus::Edge(_) | Stimulus::None(_) => 0x55,
    };
    let t = now_ns();
    // SAFETY: writing one byte from a valid buffer to an fd we own.
    let n = unsafe { libc::write(master, (&byte as *const u8).cast(), 1) };
    if n == 1 {
        *fired = Some(req.id);
        engine.on_stimulus(t, now_ns());
    }
    // A full pty buffer (n < 1): retried next loop; the engine faults the
    // run if it never goes out.
}

fn write_all_blocking(host: &mut UnixStream, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match host.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let mut fd = libc::pollfd { fd: host.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut fd, 1, 100) };
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
