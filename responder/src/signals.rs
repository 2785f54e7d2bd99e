//! SIGINT/SIGTERM/SIGHUP handling: turn a signal into a flag the I/O loops check.
//!
//! The handlers are installed without `SA_RESTART`, so a `read`, `write` or
//! `clock_nanosleep` blocked when the signal lands returns `EINTR` and the loop
//! gets to look at the flag. That keeps the hot path a single blocking system
//! call (no poll, no self-pipe) at the cost of one narrow race: a signal landing
//! between the flag check and the blocking call is seen only at the next byte
//! or period. A second signal always interrupts the call, so Ctrl-C twice
//! always ends the run.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Set when the stop came from stdin closing (`--exit-with-stdin`), not a signal.
static STDIN_CLOSED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(signal: libc::c_int) {
    // Only lock-free atomic stores here: they are async-signal-safe.
    SIGNAL.store(signal, Ordering::Relaxed);
    STOP.store(true, Ordering::SeqCst);
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP. SIGHUP is included so
/// that a responder started over ssh restores the port's termios when the
/// session drops, rather than dying with the port left raw.
pub fn install() -> io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: sigaction is a plain C struct for which all-zero bytes are a
        // valid value (empty mask, no flags, SIG_DFL).
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // No SA_RESTART: blocked calls must return EINTR (see module docs).
        action.sa_flags = 0;
        // SAFETY: `action.sa_mask` is a valid, writable sigset_t owned by us.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // SAFETY: `action` is fully initialised; the handler only touches
        // atomics, which is async-signal-safe; a null old-action pointer is allowed.
        let rc = unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// True once SIGINT, SIGTERM or SIGHUP has arrived.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// `--exit-with-stdin`: stop the run, as SIGTERM does, once stdin reaches
/// its end. A responder started over ssh is then ended by the host closing
/// its side, by the host dying, or by the connection dropping: sshd closes
/// the command's stdin in each case, so the responder never outlives the run.
/// A thread blocks on stdin and, at its end, signals the calling (main)
/// thread with SIGTERM, so that the main loop's blocking call returns EINTR
/// and sees the flag. Call after [`install`].
pub fn exit_with_stdin() -> io::Result<()> {
    // SAFETY: pthread_self has no preconditions; the id names the calling
    // thread, which outlives the watcher (it is the process's main thread).
    // Carried as an integer: musl's pthread_t is a pointer, which is not
    // Send (glibc's is an integer already).
    let main = unsafe { libc::pthread_self() } as usize;
    std::thread::Builder::new().name("stdin-watch".into()).spawn(move || {
        let mut sink = [0u8; 256];
        let mut stdin = io::stdin().lock();
        loop {
            match io::Read::read(&mut stdin, &mut sink) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        STDIN_CLOSED.store(true, Ordering::SeqCst);
        // SAFETY: `main` is a live thread of this process (the main thread
        // runs until the process exits); the handler installed by `install`
        // only stores atomics.
        unsafe { libc::pthread_kill(main as libc::pthread_t, libc::SIGTERM) };
    })?;
    Ok(())
}

/// The name of the signal that asked us to stop, for the summary line.
pub fn stop_signal_name() -> &'static str {
    if STDIN_CLOSED.load(Ordering::SeqCst) {
        return "its stdin closing (--exit-with-stdin)";
    }
    match SIGNAL.load(Ordering::Relaxed) {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}
