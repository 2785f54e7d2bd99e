//! The periodic loop and its per-cycle log, behind small seams (a clock, a
//! line to mark, a log writer) so that it is tested without real time,
//! a tty or GPIO.
//!
//! Each cycle: sleep until the cycle's deadline on an absolute
//! `CLOCK_MONOTONIC` schedule (`clock_nanosleep(TIMER_ABSTIME)`, as
//! cyclictest does), read the clock, mark the line (one byte, or one GPIO
//! toggle), log `cycle latency_ns` where the latency is the wake-up time
//! minus the deadline: the number cyclictest would report.
//!
//! Deadlines are one period apart from the *previous deadline*, never from
//! the previous wake-up, so lateness does not accumulate. After an overrun
//! the deadlines already past are served at once, in order, each with its
//! own (large) latency: every cycle gets its mark, so the probe can tell a
//! wake-up later than a period (followed by marks in quick succession) from
//! a missed one. Only a stall longer than [`MAX_CATCH_UP`] periods skips
//! deadlines, and the log says so in a `# skipped` line.
//!
//! # The log format (version 1)
//!
//! ```text
//! # latprobe-responder periodic log 1
//! # interval_ns 1000000
//! # cycle0_monotonic_ns 81234567000
//! # cycle0_realtime_ns 1735689600123456789
//! # columns: cycle latency_ns
//! 0 5123
//! 1 4870
//! # skipped 20000 cycles from 2 (a stall longer than 10000 periods)
//! 20002 3311
//! ```
//!
//! Text, one line per cycle, written through a 64 KiB buffer and flushed at
//! the end (and every second), so a reader can follow it while it grows; a
//! last line may be cut short. The log is bounded (`--log-max`, 1 GiB by
//! default; a `# max_bytes` header line says the cap): at the cap a last
//! `# capped: …` line says from which cycle on nothing is logged, and a
//! write that fails (a full disk) ends the log where it is. Either way the
//! loop goes on marking: the run is not lost for its log. `cycle0_realtime_ns` is cycle 0's deadline
//! on the wall clock, which `latprobe` uses to find which of its own cycles
//! is which.

use std::io::{self, Write};

/// Overruns longer than this many periods skip deadlines instead of
/// catching up.
pub const MAX_CATCH_UP: u64 = 10_000;

/// The first line of the log.
pub const LOG_MAGIC: &str = "# latprobe-responder periodic log 1";

/// Time, and sleeping until a time.
pub trait Clock {
    /// `CLOCK_MONOTONIC` now, ns.
    fn now(&mut self) -> io::Result<u64>;
    /// `CLOCK_REALTIME` now, ns since 1970.
    fn realtime(&mut self) -> io::Result<u64>;
    /// Sleep until `deadline` (monotonic ns); `Interrupted` on a signal.
    fn sleep_until(&mut self, deadline: u64) -> io::Result<()>;
}

/// The line the loop marks once per cycle.
pub trait Marker {
    /// One mark: a byte, or a toggle.
    fn mark(&mut self) -> io::Result<()>;
}

/// What ended the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// A stop was requested (signal).
    Stop,
    /// The line hung up (its error).
    LineGone,
}

/// Counts of a periodic run.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Cycles marked.
    pub marked: u64,
    /// Cycles served late by more than a period (caught up).
    pub caught_up: u64,
    /// Deadlines skipped after a stall longer than [`MAX_CATCH_UP`] periods.
    pub skipped: u64,
    /// Largest latency, ns.
    pub max_latency_ns: u64,
}

/// The largest log by default (`--log-max`): about 27 hours of cycles at 1 kHz.
pub const DEFAULT_LOG_MAX: u64 = 1 << 30;

/// The per-cycle log, bounded: at its cap it ends with a `# capped` line
/// and logs no more; a write that fails (a full disk) ends it too. Either
/// way the loop goes on marking, and what was logged stays.
#[derive(Debug)]
pub struct CycleLog<W: Write> {
    out: W,
    last_flush: u64,
    /// Bytes written so far, the header's included.
    written: u64,
    /// The cap, bytes.
    max: u64,
    /// Why logging stopped, when it did.
    stopped: Option<String>,
}

/// Room kept under the cap for the `# capped` line.
const NOTE_ROOM: u64 = 160;

impl<W: Write> CycleLog<W> {
    /// Start a log: the header, for a schedule whose cycle 0 is due at
    /// `cycle0` (monotonic ns) = `cycle0_realtime` (wall clock ns).
    #[cfg(test)]
    pub fn start(out: W, interval_ns: u64, cycle0: u64, cycle0_realtime: u64) -> io::Result<Self> {
        Self::start_capped(out, interval_ns, cycle0, cycle0_realtime, DEFAULT_LOG_MAX)
    }

    /// Start a log of at most `max` bytes: the header, for a schedule whose
    /// cycle 0 is due at `cycle0` (monotonic ns) = `cycle0_realtime` (wall
    /// clock ns).
    pub fn start_capped(
        mut out: W,
        interval_ns: u64,
        cycle0: u64,
        cycle0_realtime: u64,
        max: u64,
    ) -> io::Result<Self> {
        let header = format!(
            "{LOG_MAGIC}\n# interval_ns {interval_ns}\n# cycle0_monotonic_ns {cycle0}\n\
             # cycle0_realtime_ns {cycle0_realtime}\n# max_bytes {max}\n# columns: cycle latency_ns\n"
        );
        out.write_all(header.as_bytes())?;
        Ok(Self { out, last_flush: cycle0, written: header.len() as u64, max, stopped: None })
    }

    /// Why logging stopped before the end (its cap, a write that failed).
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    /// Write `line` unless logging has stopped; a failed write stops it.
    fn put(&mut self, line: &str, cycle: u64) {
        if self.stopped.is_some() {
            return;
        }
        if self.written + line.len() as u64 + NOTE_ROOM > self.max {
            let note = format!(
                "# capped: the log reached its --log-max of {} bytes; cycle {cycle} and later are not logged\n",
                self.max
            );
            let wrote = self.out.write_all(note.as_bytes()).and_then(|()| self.out.flush());
            self.stopped = Some(match wrote {
                Ok(()) => format!("it reached its --log-max of {} bytes at cycle {cycle}", self.max),
                Err(e) => format!("it reached its --log-max of {} bytes at cycle {cycle} ({e})", self.max),
            });
            return;
        }
        match self.out.write_all(line.as_bytes()) {
            Ok(()) => self.written += line.len() as u64,
            Err(e) => self.stopped = Some(format!("cannot write it at cycle {cycle}: {e}")),
        }
    }

    fn cycle(&mut self, cycle: u64, latency_ns: u64, now: u64) {
        self.put(&format!("{cycle} {latency_ns}\n"), cycle);
        if self.stopped.is_none() && now.saturating_sub(self.last_flush) >= 1_000_000_000 {
            self.last_flush = now;
            if let Err(e) = self.out.flush() {
                self.stopped = Some(format!("cannot write it at cycle {cycle}: {e}"));
            }
        }
    }

    fn skipped(&mut self, from: u64, count: u64) {
        let line =
            format!("# skipped {count} cycles from {from} (a stall longer than {MAX_CATCH_UP} periods)\n");
        self.put(&line, from);
    }

    /// Flush what is buffered (tried even after a failed write: what is
    /// buffered is whole lines, in order).
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Run the periodic loop until `stop()` says so or the line fails;
/// `line_gone` tells a hang-up (the end) from another error (a failure).
#[allow(clippy::too_many_arguments)]
pub fn run<C: Clock, M: Marker + ?Sized, W: Write>(
    clock: &mut C,
    marker: &mut M,
    period_ns: u64,
    mut log: Option<&mut CycleLog<W>>,
    stop: &dyn Fn() -> bool,
    line_gone: &dyn Fn(&io::Error) -> bool,
    max_cycles: Option<u64>,
    first_deadline: u64,
) -> io::Result<(End, Stats)> {
    let mut stats = Stats::default();
    let mut next = first_deadline;
    let mut cycle = 0u64;
    loop {
        if stop() || max_cycles.is_some_and(|m| stats.marked >= m) {
            return Ok((End::Stop, stats));
        }
        match clock.sleep_until(next) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        let woke = clock.now()?;
        match marker.mark() {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok((End::Stop, stats)),
            Err(e) if line_gone(&e) => return Ok((End::LineGone, stats)),
            Err(e) => return Err(e),
        }
        let latency = woke.saturating_sub(next);
        stats.marked += 1;
        stats.max_latency_ns = stats.max_latency_ns.max(latency);
        if latency >= period_ns {
            stats.caught_up += 1;
        }
        if let Some(l) = log.as_deref_mut() {
            l.cycle(cycle, latency, woke);
        }
        cycle += 1;
        next = next.saturating_add(period_ns);
        let behind = woke.saturating_sub(next) / period_ns.max(1);
        if behind > MAX_CATCH_UP {
            // A stall too long to serve in a burst: skip to the present.
            if let Some(l) = log.as_deref_mut() {
                l.skipped(cycle, behind);
            }
            stats.skipped += behind;
            cycle += behind;
            next = next.saturating_add(behind * period_ns);
        }
    }
}

/// The real clock: `CLOCK_MONOTONIC`, `clock_nanosleep(TIMER_ABSTIME)`.
#[derive(Debug, Default)]
pub struct SystemClock;

fn clock_ns(id: libc::clockid_t) -> io::Result<u64> {
    // SAFETY: timespec is plain C data; all-zero bytes are a valid value
    // (built this way because 32-bit musl pads it with a private field).
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `ts` is valid for writes.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

impl Clock for SystemClock {
    fn now(&mut self) -> io::Result<u64> {
        clock_ns(libc::CLOCK_MONOTONIC)
    }

    fn realtime(&mut self) -> io::Result<u64> {
        clock_ns(libc::CLOCK_REALTIME)
    }

    fn sleep_until(&mut self, deadline_ns: u64) -> io::Result<()> {
        // SAFETY: as in clock_ns.
        let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
        // time_t is 32 bits on older 32-bit ARM ABIs; a monotonic clock does
        // not reach 2^31 s (68 years of uptime).
        ts.tv_sec = (deadline_ns / 1_000_000_000) as libc::time_t;
        ts.tv_nsec = (deadline_ns % 1_000_000_000) as _;
        // SAFETY: `ts` is a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut())
        };
        // clock_nanosleep returns the error number rather than setting errno.
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(())
    }
}

/// Cycle 0's deadline on the wall clock: the two clocks read back to back.
pub fn realtime_of<C: Clock>(clock: &mut C, monotonic: u64) -> io::Result<u64> {
    let m = clock.now()?;
    let r = clock.realtime()?;
    Ok((r as i128 + monotonic as i128 - m as i128).max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulated time: a sleep ends at its deadline plus the next injected
    /// wake-up delay; marks take 1 µs.
    struct FakeClock {
        t: u64,
        delays: Vec<u64>,
        i: usize,
    }

    impl Clock for FakeClock {
        fn now(&mut self) -> io::Result<u64> {
            Ok(self.t)
        }
        fn realtime(&mut self) -> io::Result<u64> {
            Ok(self.t + 1_700_000_000_000_000_000)
        }
        fn sleep_until(&mut self, d: u64) -> io::Result<()> {
            if d > self.t {
                let extra = self.delays.get(self.i).copied().unwrap_or(0);
                self.i += 1;
                self.t = d + extra;
            }
            Ok(())
        }
    }

    struct Marks(u64);

    impl Marker for Marks {
        fn mark(&mut self) -> io::Result<()> {
            self.0 += 1;
            Ok(())
        }
    }

    #[test]
    fn every_cycle_is_marked_and_logged_in_order_even_after_an_overrun() {
        // 1 ms period; cycle 3 wakes 2.5 ms late: cycles 4 and 5 are served
        // at once (their deadlines are past), cycle 6 is on time again.
        let mut clock =
            FakeClock { t: 0, delays: vec![10_000, 12_000, 9_000, 2_500_000, 8_000, 11_000], i: 0 };
        let mut marks = Marks(0);
        let mut buf = Vec::new();
        let mut log = CycleLog::start(&mut buf, 1_000_000, 1_000_000, 42).unwrap();
        let (end, stats) =
            run(&mut clock, &mut marks, 1_000_000, Some(&mut log), &|| false, &|_| false, Some(8), 1_000_000)
                .unwrap();
        log.flush().unwrap();
        assert_eq!(end, End::Stop);
        assert_eq!((stats.marked, marks.0), (8, 8));
        assert_eq!(stats.caught_up, 2, "cycles 3 and 4 are more than a period late");
        let text = String::from_utf8(buf).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines,
            ["0 10000", "1 12000", "2 9000", "3 2500000", "4 1500000", "5 500000", "6 8000", "7 11000"]
        );
        assert!(text.starts_with(LOG_MAGIC));
        assert!(
            text.contains("# interval_ns 1000000\n# cycle0_monotonic_ns 1000000\n# cycle0_realtime_ns 42\n")
        );
    }

    #[test]
    fn a_stall_beyond_the_catch_up_limit_skips_and_says_so() {
        let stall = (MAX_CATCH_UP + 5) * 1_000;
        let mut clock = FakeClock { t: 0, delays: vec![0, stall, 0], i: 0 };
        let mut marks = Marks(0);
        let mut buf = Vec::new();
        let mut log = CycleLog::start(&mut buf, 1_000, 1_000, 0).unwrap();
        let (_, stats) =
            run(&mut clock, &mut marks, 1_000, Some(&mut log), &|| false, &|_| false, Some(4), 1_000)
                .unwrap();
        log.flush().unwrap();
        assert_eq!(stats.skipped, MAX_CATCH_UP + 4);
        let text = String::from_utf8(buf).unwrap();
        assert!(text.contains(&format!("# skipped {} cycles from 2", MAX_CATCH_UP + 4)), "{text}");
        assert!(text.lines().any(|l| l.starts_with(&format!("{} ", MAX_CATCH_UP + 6))), "{text}");
    }

    #[test]
    fn a_capped_log_ends_with_a_note_and_the_loop_goes_on() {
        let mut clock = FakeClock { t: 0, delays: vec![], i: 0 };
        let mut marks = Marks(0);
        let mut buf = Vec::new();
        let mut log = CycleLog::start_capped(&mut buf, 1_000, 1_000, 0, 1_000).unwrap();
        let (_, stats) =
            run(&mut clock, &mut marks, 1_000, Some(&mut log), &|| false, &|_| false, Some(500), 1_000)
                .unwrap();
        log.flush().unwrap();
        assert_eq!(stats.marked, 500, "the cap stops the log, not the marks");
        let why = log.stopped().unwrap().to_string();
        let text = String::from_utf8(buf).unwrap();
        assert!(text.len() <= 1_000, "{} bytes past the 1000-byte cap", text.len());
        let last = text.lines().last().unwrap();
        let logged = text.lines().filter(|l| !l.starts_with('#')).count();
        assert!(
            last == format!(
                "# capped: the log reached its --log-max of 1000 bytes; cycle {logged} and later are not logged"
            ),
            "{last}"
        );
        assert!(why.contains(&format!("at cycle {logged}")) && logged > 50, "{why}: {logged} cycles");
        assert!(text.contains("# max_bytes 1000\n"));
    }

    #[test]
    fn a_log_write_that_fails_ends_the_log_not_the_loop() {
        /// A disk that takes `room` bytes, then is full.
        struct Full(usize);
        impl Write for Full {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                if self.0 == 0 {
                    return Err(io::Error::from_raw_os_error(libc::ENOSPC));
                }
                let n = b.len().min(self.0);
                self.0 -= n;
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut clock = FakeClock { t: 0, delays: vec![], i: 0 };
        let mut marks = Marks(0);
        let mut log = CycleLog::start(Full(300), 1_000, 1_000, 0).unwrap();
        let r = run(&mut clock, &mut marks, 1_000, Some(&mut log), &|| false, &|_| false, Some(100), 1_000);
        assert_eq!(r.unwrap().1.marked, 100, "a full disk does not end the run");
        assert!(log.stopped().unwrap().contains("cannot write it at cycle"), "{:?}", log.stopped());
    }

    #[test]
    fn a_line_that_hangs_up_ends_the_run_cleanly() {
        struct Gone;
        impl Marker for Gone {
            fn mark(&mut self) -> io::Result<()> {
                Err(io::Error::from_raw_os_error(libc::EIO))
            }
        }
        let mut clock = FakeClock { t: 0, delays: vec![], i: 0 };
        let r = run::<_, _, Vec<u8>>(&mut clock, &mut Gone, 1_000, None, &|| false, &|_| true, None, 1_000);
        assert_eq!(r.unwrap().0, End::LineGone);
        let r = run::<_, _, Vec<u8>>(&mut clock, &mut Gone, 1_000, None, &|| false, &|_| false, None, 1_000);
        assert!(r.is_err());
    }
}
