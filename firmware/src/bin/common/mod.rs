//! RTIC glue both board apps share (each includes this file with
//! `#[path]`): the timer's RTIC lock as the capture loop wants it, the
//! engine task's run, and host bytes into the engine. What differs per
//! board (pins, clocks, which interrupts to pend) stays in its `main.rs`.

use latprobe_firmware::{Engine, Front, HwLoop, Timer, TimerHw, TimerLock};

/// The RTIC lock on the timer, as the capture loop wants it.
pub struct Locked<'a, M>(pub &'a mut M);

impl<H: TimerHw, M: rtic::Mutex<T = Timer<H>>> TimerLock for Locked<'_, M> {
    type Hw = H;
    fn lock<R>(&mut self, f: impl FnOnce(&mut Front, &mut H) -> R) -> R {
        self.0.lock(|t| f(&mut t.front, &mut t.hw))
    }
}

/// The engine task's work: the capture loop hands the logged events to
/// the engine, polls it and carries out its requests, taking the timer's
/// lock only for its register accesses. Returns whether output waits and
/// whether a measurement runs.
pub fn run_engine<H: TimerHw, const Q: usize>(
    lp: &mut HwLoop,
    engine: &mut impl rtic::Mutex<T = Engine<Q>>,
    timer: &mut impl rtic::Mutex<T = Timer<H>>,
) -> (bool, bool) {
    engine.lock(|e| {
        lp.run(e, &mut Locked(timer));
        (e.tx_pending() > 0, e.is_running())
    })
}

/// Bytes from the host: stamped with `now` and fed to the engine. The
/// caller then pends the engine task (to re-plan) and its sender.
pub fn host_bytes<H: TimerHw, const Q: usize>(
    timer: &mut impl rtic::Mutex<T = Timer<H>>,
    engine: &mut impl rtic::Mutex<T = Engine<Q>>,
    bytes: &[u8],
) {
    let now = timer.lock(|t| t.now());
    engine.lock(|e| e.on_host_bytes(bytes, now));
}
