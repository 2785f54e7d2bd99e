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

/// Where the CPU's time goes ([`latprobe_firmware::cpu`]): one meter for
/// the whole app, each task and the idle loop touching it inside a critical
/// section, with the board's `counter`, readable from anywhere.
/// (The Pico has none: reading its PIO clock waits for a push, and rp2040js
/// profiles its cycles instead.)
///
/// The meter sits in an `UnsafeCell`, not a `RefCell`: every access is
/// inside `interrupt::free` and none calls back into the meter, so the
/// borrow flag's checks (a dozen instructions on each of the ten or so
/// calls per sample) would guard nothing. The counter is a type, not a
/// function pointer, so its read is inlined into every call.
#[allow(dead_code)]
pub struct Meter<C> {
    m: core::cell::UnsafeCell<latprobe_firmware::cpu::CpuMeter>,
    counter: core::marker::PhantomData<C>,
}

/// The free-running counter a [`Meter`] reads, readable from any context.
pub trait Counter {
    /// Its value now.
    fn read() -> u32;
}

/// The core's cycle counter (DWT CYCCNT), which the board's `init` enables
/// before any task runs (the Nucleo's meter; QEMU models no DWT, and the
/// M0+ has no cycle counter).
#[cfg(feature = "board-nucleo-f411re")]
pub struct CycleCount;

#[cfg(feature = "board-nucleo-f411re")]
impl Counter for CycleCount {
    #[inline(always)]
    fn read() -> u32 {
        cortex_m::peripheral::DWT::cycle_count()
    }
}

// SAFETY: the meter is only reached through `Meter::with` and
// `Meter::sleep`, each inside `cortex_m::interrupt::free` on a single-core
// chip: no other context runs while one holds the `&mut`.
unsafe impl<C> Sync for Meter<C> {}

impl<C> core::fmt::Debug for Meter<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Meter").finish_non_exhaustive()
    }
}

#[allow(dead_code)]
impl<C: Counter> Meter<C> {
    /// A meter reading `C`.
    pub const fn new() -> Self {
        Self {
            m: core::cell::UnsafeCell::new(latprobe_firmware::cpu::CpuMeter::new(0)),
            counter: core::marker::PhantomData,
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut latprobe_firmware::cpu::CpuMeter, u32) -> R) -> R {
        cortex_m::interrupt::free(|_| {
            // SAFETY: interrupts are masked on a single core and `f` does
            // not reach the meter again: this is the only reference.
            let m = unsafe { &mut *self.m.get() };
            f(m, C::read())
        })
    }

    /// A task body starts. Never inlined, so that the instruction profile
    /// (tests/tests/throughput_qemu.rs) can tell the meter's own cost.
    #[inline(never)]
    pub fn enter(&self, part: latprobe_firmware::cpu::Part) {
        self.with(|m, now| m.enter(part, now));
    }

    /// The task body that started last ends (never inlined, as `enter`).
    #[inline(never)]
    pub fn leave(&self) {
        self.with(|m, now| m.leave(now));
    }

    /// The idle loop's sleep: WFI with interrupts masked, so the wake-up is
    /// read before any handler runs (a pending interrupt still wakes the
    /// core, ARMv7-M ARM B1.5.19) and sleep is only the time in WFI.
    pub fn sleep(&self) {
        use latprobe_firmware::cpu::Part;
        cortex_m::interrupt::free(|_| {
            // SAFETY: as in `with`: interrupts masked on a single core, no
            // other reference while this one lives (WFI runs no handler
            // until the mask is lifted).
            let m = unsafe { &mut *self.m.get() };
            m.switch(Part::Sleep, C::read());
            cortex_m::asm::wfi();
            m.switch(Part::Other, C::read());
        });
    }

    /// The ticks of each part so far.
    pub fn ticks(&self) -> [u64; latprobe_firmware::cpu::PARTS] {
        self.with(|m, now| m.ticks(now))
    }
}

/// A run's CPU cost, logged when it ends: the meter read when the engine
/// task first sees the run and when it sees it over.
#[allow(dead_code)]
#[derive(Debug, Default)]
pub struct RunMeter {
    at_start: [u64; latprobe_firmware::cpu::PARTS],
    was_running: bool,
}

#[allow(dead_code)]
impl RunMeter {
    /// After an engine pass: note a start, or log the run's parts at its
    /// end (`taken` samples), in `unit` (`ticks`, `cycles`).
    pub fn pass<C: Counter>(
        &mut self,
        meter: &Meter<C>,
        running: bool,
        taken: impl FnOnce() -> u64,
        unit: &str,
    ) {
        use latprobe_firmware::cpu::{Part, RunCost};
        if running && !self.was_running {
            self.at_start = meter.ticks();
        } else if !running && self.was_running {
            let t = RunCost::between(&self.at_start, &meter.ticks()).ticks;
            // Exclusive time per part over the run, read by the throughput
            // figure (tests/tests/throughput_qemu.rs).
            defmt::info!(
                "cpu: {=u64} taken, {=str} sleep {=u64} other {=u64} capture {=u64} wake {=u64} engine {=u64} host_rx {=u64} host_tx {=u64}",
                taken(),
                unit,
                t[Part::Sleep as usize],
                t[Part::Other as usize],
                t[Part::Capture as usize],
                t[Part::Wake as usize],
                t[Part::Engine as usize],
                t[Part::HostRx as usize],
                t[Part::HostTx as usize]
            );
        }
        self.was_running = running;
    }
}
