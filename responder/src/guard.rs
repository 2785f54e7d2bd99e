//! The CPU guard: a responder at SCHED_FIFO that never blocks (a flood of
//! bytes on the line, a period shorter than its own loop, edges faster
//! than it can answer) would hold its CPU for as long as that lasts, and on
//! a single-core target with RT throttling off
//! (`sched_rt_runtime_us = -1`, common on tuned RT boards) nothing else
//! would ever run again: not ssh, not the kernel's own threads.
//!
//! So every loop reports each unit of work to a [`CpuGuard`]. Once per
//! window (100 ms of wall time) it compares the thread's CPU time with the
//! wall time: above half, it sleeps long enough to bring the share back to
//! half (at most 200 ms at once), and says so once. A responder answering a
//! probe at any sane rate uses a tiny fraction of its CPU and never sees
//! the guard; one that trips it is past what it can answer anyway, and the
//! probe counts those stimuli late or timed out, as they are.
//!
//! The check reads `CLOCK_MONOTONIC` (vDSO, no system call) after each unit
//! of work, and the thread's CPU clock once per window, after the answer
//! has gone out: the answer's latency never includes it.

use std::io;

/// The window over which the CPU share is measured.
pub const WINDOW_NS: u64 = 100_000_000;
/// The largest share of a window the loop may keep its CPU busy, percent.
pub const MAX_SHARE_PERCENT: u64 = 50;
/// The longest single pause.
pub const MAX_PAUSE_NS: u64 = 200_000_000;

/// The clocks and the sleep the guard needs.
pub trait CpuClock {
    /// Wall time (`CLOCK_MONOTONIC`), ns.
    fn wall(&mut self) -> u64;
    /// This thread's CPU time, ns.
    fn cpu(&mut self) -> u64;
    /// Sleep `ns` (a signal may end it early).
    fn pause(&mut self, ns: u64);
}

/// The real clocks.
#[derive(Debug, Default)]
pub struct ThreadClock;

fn clock_ns(id: libc::clockid_t) -> u64 {
    // SAFETY: timespec is plain C data; all-zero bytes are a valid value.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `ts` is valid for writes; both clocks exist on every Linux.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl CpuClock for ThreadClock {
    fn wall(&mut self) -> u64 {
        clock_ns(libc::CLOCK_MONOTONIC)
    }

    fn cpu(&mut self) -> u64 {
        clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
    }

    fn pause(&mut self, ns: u64) {
        // SAFETY: as in clock_ns.
        let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
        ts.tv_sec = (ns / 1_000_000_000) as libc::time_t;
        ts.tv_nsec = (ns % 1_000_000_000) as _;
        // SAFETY: `ts` is a valid relative timespec; no remainder wanted.
        unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ts, std::ptr::null_mut()) };
    }
}

/// Watches one loop's CPU share; see the module docs.
#[derive(Debug)]
pub struct CpuGuard<C: CpuClock = ThreadClock> {
    clock: C,
    window_wall: u64,
    window_cpu: u64,
    /// Pauses taken.
    pub pauses: u64,
    /// Their total, ns.
    pub paused_ns: u64,
    /// Said so once already.
    warned: bool,
}

impl CpuGuard<ThreadClock> {
    /// A guard on the calling thread.
    pub fn new() -> Self {
        Self::with_clock(ThreadClock)
    }
}

impl<C: CpuClock> CpuGuard<C> {
    /// A guard on `clock`.
    pub fn with_clock(mut clock: C) -> Self {
        let (window_wall, window_cpu) = (clock.wall(), clock.cpu());
        Self { clock, window_wall, window_cpu, pauses: 0, paused_ns: 0, warned: false }
    }

    /// One unit of work is done (a byte echoed, a period marked, an edge
    /// answered). Returns the pause taken, if the loop held its CPU for more
    /// than [`MAX_SHARE_PERCENT`] of the last window.
    pub fn after_work(&mut self) -> Option<u64> {
        let wall = self.clock.wall();
        let elapsed = wall.saturating_sub(self.window_wall);
        if elapsed < WINDOW_NS {
            return None;
        }
        let cpu = self.clock.cpu();
        let used = cpu.saturating_sub(self.window_cpu);
        self.window_wall = wall;
        self.window_cpu = cpu;
        if used.saturating_mul(100) <= elapsed.saturating_mul(MAX_SHARE_PERCENT) {
            return None;
        }
        // used / (elapsed + pause) = the largest share allowed.
        let pause =
            (used.saturating_mul(100) / MAX_SHARE_PERCENT).saturating_sub(elapsed).clamp(1, MAX_PAUSE_NS);
        if !self.warned {
            self.warned = true;
            eprintln!(
                "warning: latprobe-responder was busy {}% of the last {} ms without blocking (a flood of \
                 input, or a period shorter than its own loop): it pauses so that it never holds the CPU \
                 at RT priority; stimuli meanwhile are answered late",
                used * 100 / elapsed.max(1),
                elapsed / 1_000_000
            );
        }
        self.clock.pause(pause);
        self.pauses += 1;
        self.paused_ns += pause;
        self.window_wall = self.clock.wall();
        self.window_cpu = self.clock.cpu();
        Some(pause)
    }

    /// For the summary line: empty if the guard never paused.
    pub fn summary(&self) -> String {
        if self.pauses == 0 {
            return String::new();
        }
        format!(
            ", paused {} times ({} ms in all) so as never to hold the CPU",
            self.pauses,
            self.paused_ns / 1_000_000
        )
    }
}

/// A periodic marker or a GPIO output whose every mark or toggle is
/// reported to a guard.
pub struct Guarded<'a, T: ?Sized, C: CpuClock = ThreadClock> {
    /// The marker or output.
    pub inner: &'a mut T,
    /// The guard.
    pub guard: &'a mut CpuGuard<C>,
}

impl<T: crate::cycles::Marker + ?Sized, C: CpuClock> crate::cycles::Marker for Guarded<'_, T, C> {
    fn mark(&mut self) -> io::Result<()> {
        let r = self.inner.mark();
        self.guard.after_work();
        r
    }
}

impl<T: crate::gpio::Toggle + ?Sized, C: CpuClock> crate::gpio::Toggle for Guarded<'_, T, C> {
    fn toggle(&mut self) -> io::Result<()> {
        let r = self.inner.toggle();
        self.guard.after_work();
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulated clocks: `busy` of every ns of wall time is this thread's
    /// CPU (percent); a pause advances the wall only.
    struct Sim {
        wall: u64,
        cpu: u64,
        paused: Vec<u64>,
    }

    impl CpuClock for &mut Sim {
        fn wall(&mut self) -> u64 {
            self.wall
        }
        fn cpu(&mut self) -> u64 {
            self.cpu
        }
        fn pause(&mut self, ns: u64) {
            self.paused.push(ns);
            self.wall += ns;
        }
    }

    fn work(sim: &mut Sim, ns: u64, busy_percent: u64) {
        sim.wall += ns;
        sim.cpu += ns * busy_percent / 100;
    }

    #[test]
    fn a_loop_that_never_blocks_is_held_to_half_its_cpu() {
        let mut sim = Sim { wall: 0, cpu: 0, paused: Vec::new() };
        let mut g = CpuGuard::with_clock(&mut sim);
        // 1 s of a loop at 100 %: 10 µs per unit of work.
        for _ in 0..100_000 {
            work(&mut *g.clock, 10_000, 100);
            g.after_work();
        }
        let (pauses, paused) = (g.pauses, g.paused_ns);
        assert!(pauses >= 4, "{pauses} pauses");
        // Over the whole time, the CPU share is held to about half.
        let share = sim.cpu * 100 / sim.wall;
        assert!((45..=55).contains(&share), "share {share}% (paused {paused} ns, {:?})", sim.paused);
        assert!(sim.paused.iter().all(|&p| p <= MAX_PAUSE_NS));
    }

    #[test]
    fn a_responder_at_a_sane_rate_never_pauses() {
        let mut sim = Sim { wall: 0, cpu: 0, paused: Vec::new() };
        let mut g = CpuGuard::with_clock(&mut sim);
        // 1 kHz for 10 s, 20 µs of work per stimulus: 2 % busy.
        for _ in 0..10_000 {
            work(&mut *g.clock, 1_000_000, 2);
            assert_eq!(g.after_work(), None);
        }
        // Half busy is allowed too: the guard is for a loop that never blocks.
        for _ in 0..10_000 {
            work(&mut *g.clock, 1_000_000, 50);
            assert_eq!(g.after_work(), None);
        }
        assert_eq!(g.summary(), "");
    }
}
