//! latprobe-responder: the target-side half of latprobe. It runs on the Linux
//! board under test and answers the probe's stimulus (or produces periodic
//! edges) at RT priority, and writes the facts that decide how its figures read.
//!
//! ```text
//!  probe ──byte──▶ tty ─read─▶ [uart] ─write─▶ tty ──byte──▶ probe   (uart-echo)
//!                  clock_nanosleep(abs) ─▶ [periodic] ─write─▶ tty ──▶ probe
//! ```

mod duration;
mod meta;
mod rt;
mod signals;
mod tty;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::rt::{RtGuard, RtReport};
use crate::tty::{is_hangup, Tty};

/// A mistake in the command line or the set-up it names (a wrong device, a
/// rate the port lacks): exit code 2, so a CI script can tell "fix your
/// config" from "the run broke".
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

const EXIT_RUNTIME: u8 = 1;
const EXIT_USAGE: u8 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "latprobe-responder",
    version,
    about = "The target-side half of latprobe: answers the probe's stimulus on the Linux board under test",
    long_about = "The target-side half of latprobe.\n\n\
        Runs on the Linux board under test. A latprobe probe (a Cortex-M board) sends \
        stimuli and timestamps the answers with its own timer, so every latency figure \
        comes from the probe's clock, not this board's. This program gives the answers: \
        it echoes bytes on a serial line (uart), or writes one byte every period on its \
        own timer (periodic), at SCHED_FIFO priority with memory locked and \
        /dev/cpu_dma_latency held at 0. What the board refuses becomes a warning, and \
        --metadata records what was achieved, with the kernel facts that matter."
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Echo every byte received on a serial line straight back (uart-echo mode)
    Uart {
        #[command(flatten)]
        line: LineArgs,
        #[command(flatten)]
        rt: RtArgs,
    },
    /// Write one byte every period on a serial line, timed by this board (periodic mode)
    Periodic {
        #[command(flatten)]
        line: LineArgs,
        /// Time between bytes, with a unit: 250ns, 500us, 1ms, 2s
        #[arg(long, value_name = "DURATION", value_parser = duration::parse_duration)]
        period: Duration,
        /// The byte to write, hex (0x55) or decimal (85)
        #[arg(long, value_name = "BYTE", default_value = "0x55", value_parser = parse_byte)]
        byte: u8,
        #[command(flatten)]
        rt: RtArgs,
    },
    /// Print this board's facts (kernel, preemption, boot parameters...) as JSON
    Metadata {
        /// Write to FILE instead of stdout
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
struct LineArgs {
    /// The serial line to the probe, e.g. /dev/ttyS1 or /dev/ttyUSB0
    #[arg(long, value_name = "PATH")]
    device: PathBuf,
    /// Line speed in baud (8N1, no flow control)
    #[arg(long, value_name = "N", default_value_t = 115_200)]
    baud: u32,
}

#[derive(Debug, Args)]
struct RtArgs {
    /// Run as SCHED_FIFO at this priority (1-99); a warning if not permitted
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=99))]
    priority: Option<u8>,
    /// Pin to this CPU; a warning if not permitted
    #[arg(long, value_name = "N")]
    cpu: Option<usize>,
    /// Write the board's facts and the RT settings achieved as JSON to FILE ("-" for stdout) at start
    #[arg(long, value_name = "FILE")]
    metadata: Option<PathBuf>,
}

fn parse_byte(text: &str) -> Result<u8, String> {
    let text = text.trim();
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| format!("'{text}' is not a byte (write 0x00-0xff or 0-255)"))
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return clap_exit(err),
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("Error: {err:#}");
            if err.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::from(EXIT_RUNTIME)
            }
        }
    }
}

/// Help and version go to stdout as clap prints them; a usage error becomes
/// the same single `Error:` line as every other error.
fn clap_exit(err: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(err.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = err.print();
        return ExitCode::SUCCESS;
    }
    if err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = err.print();
        return ExitCode::from(EXIT_USAGE);
    }
    let rendered = err.render().to_string();
    let first_paragraph: Vec<&str> =
        rendered.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
    let text = first_paragraph.join(" ");
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    eprintln!("Error: {text} (see --help)");
    ExitCode::from(EXIT_USAGE)
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Cmd::Metadata { output } => {
            let meta = meta::collect(None, RtReport::none());
            let dest = output.unwrap_or_else(|| PathBuf::from("-"));
            meta::write(&meta, &dest).map_err(|e| UsageError(format!("{e:#} (check --output)")))?;
            Ok(())
        }
        Cmd::Uart { line, rt } => {
            let run_info = meta::RunInfo {
                mode: "uart",
                device: line.device.display().to_string(),
                baud: line.baud,
                period_ns: None,
                byte: None,
            };
            let session = Session::start(&line, &rt, run_info)?;
            eprintln!(
                "latprobe-responder: ready: echoing on {} at {} baud ({})",
                line.device.display(),
                line.baud,
                session.rt_summary()
            );
            let (ended, echoed) = echo(&session.tty)?;
            session.finish(ended, &format!("echoed {echoed} bytes"));
            Ok(())
        }
        Cmd::Periodic { line, period, byte, rt } => {
            let period_ns = u64::try_from(period.as_nanos())
                .map_err(|_| UsageError("--period is too long".to_string()))?;
            let run_info = meta::RunInfo {
                mode: "periodic",
                device: line.device.display().to_string(),
                baud: line.baud,
                period_ns: Some(period_ns),
                byte: Some(byte),
            };
            // 10 bits per byte on an 8N1 line.
            let byte_ns = 10 * 1_000_000_000 / u64::from(line.baud.max(1));
            if period_ns < byte_ns {
                eprintln!(
                    "warning: --period {period:?} is shorter than one byte at {} baud ({}us); \
                     bytes will queue and the edges will not follow the schedule",
                    line.baud,
                    byte_ns / 1000
                );
            }
            let session = Session::start(&line, &rt, run_info)?;
            eprintln!(
                "latprobe-responder: ready: writing 0x{byte:02x} every {period:?} on {} at {} baud ({})",
                line.device.display(),
                line.baud,
                session.rt_summary()
            );
            let (ended, stats) = periodic(&session.tty, period_ns, byte)?;
            let mut summary = format!("wrote {} bytes", stats.written);
            if stats.skipped > 0 {
                summary.push_str(&format!(
                    ", skipped {} periods that were already over when their turn came",
                    stats.skipped
                ));
            }
            session.finish(ended, &summary);
            Ok(())
        }
    }
}

/// What a serial-line run holds for its whole length.
struct Session {
    tty: Tty,
    _rt_guard: RtGuard,
    rt: RtReport,
}

impl Session {
    /// Signals, the line, RT set-up, then the metadata, in that order: the
    /// line first so a wrong --device fails before any RT warning clutters the
    /// screen, the metadata last so it records what the run really got.
    fn start(line: &LineArgs, rt_args: &RtArgs, run_info: meta::RunInfo) -> Result<Session> {
        signals::install().context("cannot install signal handlers")?;
        let tty = Tty::open_raw(&line.device, line.baud)?;
        let (guard, report) = rt::setup(rt_args.priority, rt_args.cpu)?;
        for warning in &report.warnings {
            eprintln!("warning: {warning}");
        }
        if let Some(dest) = &rt_args.metadata {
            let meta = meta::collect(Some(run_info), report.clone());
            write_metadata(&meta, dest)?;
        }
        Ok(Session { tty, _rt_guard: guard, rt: report })
    }

    fn rt_summary(&self) -> String {
        let Some(a) = &self.rt.achieved else {
            return "no RT set-up".to_string();
        };
        let policy = if a.sched_policy == "SCHED_OTHER" {
            "normal priority".to_string()
        } else {
            format!("{} {}", a.sched_policy, a.sched_priority)
        };
        let cpus = match a.affinity.as_slice() {
            [one] => format!("CPU {one}"),
            all => format!("{} CPUs", all.len()),
        };
        let mlock = if a.mlockall { "memory locked" } else { "memory not locked" };
        let dma = if a.cpu_dma_latency { "cpu_dma_latency 0" } else { "cpu_dma_latency not held" };
        format!("{policy}, {cpus}, {mlock}, {dma}")
    }

    /// Restores the line before saying so.
    fn finish(self, ended: Ended, summary: &str) {
        let device = self.tty.path().display().to_string();
        drop(self.tty);
        match ended {
            Ended::Signal => {
                eprintln!("latprobe-responder: {summary} (stopped by {})", signals::stop_signal_name())
            }
            Ended::HangUp => {
                eprintln!("latprobe-responder: {device} hung up; {summary}")
            }
        }
    }
}

fn write_metadata(meta: &meta::Metadata, dest: &Path) -> Result<()> {
    meta::write(meta, dest).map_err(|e| UsageError(format!("{e:#} (check --metadata)")).into())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Signal,
    HangUp,
}

/// The uart-echo loop: one blocking read, one write of whatever it returned.
/// No poll in between, so the wake-up on the byte is the only latency added.
fn echo(tty: &Tty) -> Result<(Ended, u64)> {
    let mut buf = [0u8; 4096];
    let mut echoed = 0u64;
    loop {
        if signals::stop_requested() {
            return Ok((Ended::Signal, echoed));
        }
        let n = match tty.read(&mut buf) {
            Ok(0) => return Ok((Ended::HangUp, echoed)),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if is_hangup(&e) => return Ok((Ended::HangUp, echoed)),
            Err(e) => {
                bail!("reading {} failed: {e}", tty.path().display())
            }
        };
        match tty.write_all(&buf[..n]) {
            Ok(()) => echoed += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok((Ended::Signal, echoed)),
            Err(e) if is_hangup(&e) => return Ok((Ended::HangUp, echoed)),
            Err(e) => bail!("writing {} failed: {e}", tty.path().display()),
        }
    }
}

#[derive(Debug, Default)]
struct PeriodicStats {
    written: u64,
    skipped: u64,
}

/// The periodic loop. Wake-ups are absolute times on CLOCK_MONOTONIC, each
/// one period after the previous *deadline* (not after the previous wake-up),
/// so lateness never accumulates into drift. When a wake-up is more than a
/// whole period late, the deadlines already past are skipped rather than
/// written in a burst: the host fits a regular grid of edges, and a gap is
/// honest where a burst would look like several on-time edges.
fn periodic(tty: &Tty, period_ns: u64, byte: u8) -> Result<(Ended, PeriodicStats)> {
    let mut stats = PeriodicStats::default();
    let mut next = monotonic_ns()?.saturating_add(period_ns);
    loop {
        if signals::stop_requested() {
            return Ok((Ended::Signal, stats));
        }
        match sleep_until(next) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => bail!("clock_nanosleep failed: {e}"),
        }
        match tty.write_all(&[byte]) {
            Ok(()) => stats.written += 1,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok((Ended::Signal, stats)),
            Err(e) if is_hangup(&e) => return Ok((Ended::HangUp, stats)),
            Err(e) => bail!("writing {} failed: {e}", tty.path().display()),
        }
        next = next.saturating_add(period_ns);
        let now = monotonic_ns()?;
        if now > next {
            let behind = (now - next) / period_ns;
            next = next.saturating_add(behind * period_ns);
            stats.skipped += behind;
        }
    }
}

fn monotonic_ns() -> Result<u64> {
    let mut ts = zeroed_timespec();
    // SAFETY: `ts` is valid for writes.
    if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) } != 0 {
        bail!("clock_gettime failed: {}", io::Error::last_os_error());
    }
    // CLOCK_MONOTONIC is never negative.
    Ok(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Built field by field because 32-bit musl with 64-bit time pads timespec
/// with a private field, so a struct literal would not build for those boards.
fn zeroed_timespec() -> libc::timespec {
    // SAFETY: timespec is plain C data; all-zero bytes are a valid value.
    unsafe { std::mem::zeroed() }
}

fn sleep_until(deadline_ns: u64) -> io::Result<()> {
    let mut ts = zeroed_timespec();
    // time_t is 32 bits on older 32-bit ARM ABIs; a monotonic clock does not
    // reach 2^31 s (68 years of uptime).
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn bytes_in_hex_or_decimal() {
        assert_eq!(parse_byte("0x55"), Ok(0x55));
        assert_eq!(parse_byte("0XfF"), Ok(0xff));
        assert_eq!(parse_byte("85"), Ok(85));
        assert!(parse_byte("256").is_err());
        assert!(parse_byte("0x100").is_err());
        assert!(parse_byte("U").is_err());
    }

    #[test]
    fn priority_range_is_enforced() {
        let parse = |p: &str| Cli::try_parse_from(["r", "uart", "--device", "/x", "--priority", p]);
        assert!(parse("1").is_ok());
        assert!(parse("99").is_ok());
        assert!(parse("0").is_err());
        assert!(parse("100").is_err());
    }

    #[test]
    fn periodic_needs_a_unit() {
        let parse = |p: &str| Cli::try_parse_from(["r", "periodic", "--device", "/x", "--period", p]);
        assert!(parse("1ms").is_ok());
        assert!(parse("1").is_err());
    }
}
