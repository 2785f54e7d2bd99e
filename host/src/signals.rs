//! Ctrl-C and SIGTERM as a counter the session polls: the first asks for a
//! graceful stop (Stop, last batches, report with `complete: false`), the
//! second stops waiting for the probe.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use crate::Error;

static COUNTER: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// Install the handlers (once per process) and reset the count to zero.
pub fn install() -> Result<Arc<AtomicUsize>, Error> {
    if let Some(c) = COUNTER.get() {
        c.store(0, Ordering::SeqCst);
        return Ok(c.clone());
    }
    let counter = Arc::new(AtomicUsize::new(0));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
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
