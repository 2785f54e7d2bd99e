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

/// A file-size limit (ulimit -f) must be a write error that keeps the
/// measurement and names the file, not a signal that kills latprobe with
/// every file unwritten (`report` and `import` too, not only a run).
pub fn ignore_file_size_limit() {
    // SAFETY: setting SIGXFSZ's disposition to SIG_IGN has no handler code.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
}

/// Install the handlers (once per process) and reset the count to zero.
///
/// An abort is left as it is: a watcher (the demo's responder) may have
/// raised it before the session began, and the run must then fail, not
/// measure a target that is gone. [`clear_abort`] starts afresh.
pub fn install() -> Result<Arc<AtomicUsize>, Error> {
    if let Some(c) = COUNTER.get() {
        c.store(0, Ordering::SeqCst);
        return Ok(c.clone());
    }
    ignore_file_size_limit();
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

/// Forget any abort: called before starting what may raise one (the
/// demo's responder), never after.
pub fn clear_abort() {
    *ABORT.lock().unwrap_or_else(|p| p.into_inner()) = None;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 18, finding 8: the demo's responder may die before the session
    /// installs the handlers; its abort must survive the install.
    #[test]
    fn an_abort_raised_before_install_survives_it() {
        clear_abort();
        abort("the responder ended".into());
        install().unwrap();
        assert_eq!(abort_reason().as_deref(), Some("the responder ended"));
        clear_abort();
        assert_eq!(abort_reason(), None);
    }
}
