//! Ctrl-C, SIGTERM and SIGHUP as a counter the session polls: the first
//! asks for a graceful stop (Stop, last batches, report with `complete:
//! false`), the second stops waiting for the probe. SIGHUP is a closed
//! terminal or ssh session: the run must still write its files.
//!
//! Besides signals, a part of latprobe that watches something the session
//! cannot see (the demo's responder process) can [`abort`] the run with a
//! reason: the session then stops the probe and fails with that reason.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::Error;

static COUNTER: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
static ABORT: Mutex<Option<String>> = Mutex::new(None);

/// The signals that stop a run gracefully.
pub const STOP_SIGNALS: [i32; 3] =
    [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP];

/// Install the handlers (once per process) and reset the count to zero
/// and any abort.
pub fn install() -> Result<Arc<AtomicUsize>, Error> {
    *ABORT.lock().unwrap_or_else(|p| p.into_inner()) = None;
    if let Some(c) = COUNTER.get() {
        c.store(0, Ordering::SeqCst);
        return Ok(c.clone());
    }
    // A file-size limit (ulimit -f) must be a write error that keeps the
    // measurement, not a signal that kills it with every file unwritten.
    // SAFETY: setting SIGXFSZ's disposition to SIG_IGN has no handler code.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    let counter = Arc::new(AtomicUsize::new(0));
    for sig in STOP_SIGNALS {
        let c = counter.clone();
        // SAFETY: the handler only does an atomic add, which is
        // async-signal-safe; it allocates nothing and takes no lock.
        unsafe {
            signal_hook::low_level::register(sig, move || {
                c.fetch_add(1, Ordering::SeqCst);
            })
        }
        .map_err(|e| Error::io("cannot install the Ctrl-C handler", e))?;
    }
    Ok(COUNTER.get_or_init(|| counter).clone())
}

/// Whether a stop signal came since the last [`install`] (false when
/// none was installed): for work that is not a session (`latprobe report`
/// re-reading a raw file).
pub fn requested() -> bool {
    COUNTER.get().is_some_and(|c| c.load(Ordering::SeqCst) > 0)
}

/// Ask the running session to stop the probe and fail with `reason`. The
/// first reason stays.
pub fn abort(reason: String) {
    let mut a = ABORT.lock().unwrap_or_else(|p| p.into_inner());
    if a.is_none() {
        *a = Some(reason);
    }
}

/// Why the run was aborted, if it was.
pub fn abort_reason() -> Option<String> {
    ABORT.lock().unwrap_or_else(|p| p.into_inner()).clone()
}
