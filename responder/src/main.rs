//! latprobe-responder: the target-side half of latprobe. It runs on the Linux
//! board under test and answers the probe's stimulus (or produces periodic
//! edges) at RT priority, and writes the facts that decide how its figures read.
//!
//! ```text
//!  probe ──byte──▶ tty ─read─▶ [uart] ─write─▶ tty ──byte──▶ probe          (uart-echo)
//!  probe ──edge──▶ gpiochip ─event─▶ [gpio-echo] ─toggle─▶ gpiochip ──▶ probe (gpio-echo)
//!                  clock_nanosleep(abs) ─▶ [periodic] ─byte or toggle─▶ probe (periodic)
//!                                               └─▶ --log: each cycle's own wake-up latency
//! ```

mod cli;
mod cycles;
mod duration;
mod gpio;
mod guard;
mod meta;
mod rt;
mod signals;
mod trace;
mod tty;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Parser;

use crate::cli::{Cli, Cmd, EdgeArg, LineArgs, RtArgs};
use crate::trace::TraceArgs;

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
        Cmd::Uart { line, rt, trace } => {
            let run_info = meta::RunInfo {
                mode: "uart",
                device: line.device.display().to_string(),
                baud: Some(line.baud),
                period_ns: None,
                byte: None,
                log: None,
            };
            let session = Session::start(Some(&line), &rt, &trace, run_info)?;
            eprintln!(
                "latprobe-responder: ready: echoing on {} at {} baud ({})",
                line.device.display(),
                line.baud,
                session.rt_summary()
            );
            let mut guard = guard::CpuGuard::new();
            let (ended, echoed) = echo(session.tty()?, &mut guard, &session.trace)?;
            session.finish(ended, &format!("echoed {echoed} bytes{}", guard.summary()));
            Ok(())
        }
        Cmd::Periodic { device, baud, gpio, interval, byte, log, log_max, rt, trace } => {
            periodic_cmd(device, baud, gpio, interval, byte, (log, log_max), &rt, &trace)
        }
        Cmd::GpioEcho { chip, input, output, edge, log, rt, trace } => {
            gpio_echo_cmd(&chip, input, output, edge, log, &rt, &trace)
        }
    }
}

/// Create `--log FILE`, buffered.
fn create_log(path: &Path) -> Result<io::BufWriter<std::fs::File>> {
    let f = std::fs::File::create(path)
        .map_err(|e| UsageError(format!("cannot write --log {}: {}", path.display(), tty::os_message(&e))))?;
    Ok(io::BufWriter::with_capacity(1 << 16, f))
}

/// A serial line as the periodic loop's marker: one byte a cycle.
struct TtyMarker<'a> {
    tty: &'a Tty,
    byte: u8,
}

impl cycles::Marker for TtyMarker<'_> {
    fn mark(&mut self) -> io::Result<()> {
        self.tty.write_all(&[self.byte])
    }
}

// The subcommand's own fields, one by one, as clap parsed them.
#[allow(clippy::too_many_arguments)]
fn periodic_cmd(
    device: Option<PathBuf>,
    baud: u32,
    gpio: Option<gpio::LineSpec>,
    interval: Duration,
    byte: u8,
    (log, log_max): (Option<PathBuf>, u64),
    rt: &RtArgs,
    trace: &TraceArgs,
) -> Result<()> {
    let period_ns =
        u64::try_from(interval.as_nanos()).map_err(|_| UsageError("--interval is too long".to_string()))?;
    let mut log_out = log.as_deref().map(create_log).transpose()?;
    let run_info = meta::RunInfo {
        mode: "periodic",
        device: match (&device, &gpio) {
            (Some(d), _) => d.display().to_string(),
            (None, Some(g)) => format!("{}:{}", g.chip.display(), g.line),
            (None, None) => String::new(),
        },
        baud: device.as_ref().map(|_| baud),
        period_ns: Some(period_ns),
        byte: device.as_ref().map(|_| byte),
        log: log.as_ref().map(|p| p.display().to_string()),
    };
    let (session, mut marker): (Session, Box<dyn cycles::Marker>);
    let what;
    match (&device, &gpio) {
        (Some(dev), _) => {
            // 10 bits per byte on an 8N1 line.
            let byte_ns = 10 * 1_000_000_000 / u64::from(baud.max(1));
            if period_ns < byte_ns {
                eprintln!(
                    "warning: --interval {interval:?} is shorter than one byte at {baud} baud ({}us); \
                     bytes will queue and the edges will not follow the schedule",
                    byte_ns / 1000
                );
            }
            let line = LineArgs { device: dev.clone(), baud };
            session = Session::start(Some(&line), rt, trace, run_info)?;
            what = format!("writing 0x{byte:02x} every {interval:?} on {} at {baud} baud", dev.display());
            marker = Box::new(TtyMarker { tty: session.tty()?, byte });
        }
        (None, Some(g)) => {
            // The line first: a wrong chip fails before any RT warning.
            let toggle = gpio::GpioToggle::open(g).map_err(|e| UsageError(format!("{e} (check --gpio)")))?;
            session = Session::start(None, rt, trace, run_info)?;
            what = format!("toggling {}:{} every {interval:?}", g.chip.display(), g.line);
            marker = Box::new(toggle);
        }
        (None, None) => bail!(UsageError("give --device or --gpio".into())),
    }
    let mut clock = cycles::SystemClock;
    let first = cycles::Clock::now(&mut clock)?.saturating_add(period_ns);
    let mut cycle_log = match log_out.take() {
        Some(out) => {
            let real = cycles::realtime_of(&mut clock, first)?;
            Some(
                cycles::CycleLog::start_capped(out, period_ns, first, real, log_max)
                    .context("cannot write --log")?,
            )
        }
        None => None,
    };
    eprintln!("latprobe-responder: ready: {what} ({})", session.rt_summary());
    let mut guard = guard::CpuGuard::new();
    let mut traced = trace::Traced { inner: marker.as_mut(), trace: &session.trace };
    let mut guarded = guard::Guarded { inner: &mut traced, guard: &mut guard };
    let result = cycles::run(
        &mut clock,
        &mut guarded,
        period_ns,
        cycle_log.as_mut(),
        &signals::stop_requested,
        &|e| gpio.is_none() && is_hangup(e),
        None,
        first,
    );
    let flushed = cycle_log.as_mut().map_or(Ok(()), cycles::CycleLog::flush);
    drop(marker);
    let (end, stats) = result.context("the periodic loop failed")?;
    // A log that stopped early (its cap, a full disk) is said, and what it
    // holds is kept: the run itself went on.
    if let Some(why) = cycle_log.as_ref().and_then(cycles::CycleLog::stopped) {
        eprintln!("warning: --log stopped early: {why}; the cycles before it are logged");
    }
    if let Err(e) = flushed {
        eprintln!("warning: cannot write the end of --log: {e}");
    }
    let mut summary = if device.is_some() {
        format!("wrote {} bytes", stats.marked)
    } else {
        format!("toggled the line {} times", stats.marked)
    };
    if stats.caught_up > 0 {
        summary.push_str(&format!(
            ", {} of them more than a period late (served at once, in order)",
            stats.caught_up
        ));
    }
    if stats.skipped > 0 {
        summary.push_str(&format!(", skipped {} periods after stalls too long to catch up", stats.skipped));
    }
    summary.push_str(&guard.summary());
    session.finish(if end == cycles::End::LineGone { Ended::HangUp } else { Ended::Signal }, &summary);
    Ok(())
}

fn gpio_echo_cmd(
    chip: &str,
    input: u32,
    output: u32,
    edge: EdgeArg,
    log: Option<PathBuf>,
    rt: &RtArgs,
    trace: &TraceArgs,
) -> Result<()> {
    use gpiocdev::line::EdgeDetection;
    let chip = gpio::chip_path(chip);
    let mut log_out = log.as_deref().map(create_log).transpose()?;
    let edges = match edge {
        EdgeArg::Rising => EdgeDetection::RisingEdge,
        EdgeArg::Falling => EdgeDetection::FallingEdge,
        EdgeArg::Both => EdgeDetection::BothEdges,
    };
    let in_spec = gpio::LineSpec { chip: chip.clone(), line: input };
    let out_spec = gpio::LineSpec { chip: chip.clone(), line: output };
    let mut edges_in = gpio::GpioEdges::open(&in_spec, edges)
        .map_err(|e| UsageError(format!("{e} (check --chip and --input)")))?;
    let mut toggle = gpio::GpioToggle::open(&out_spec)
        .map_err(|e| UsageError(format!("{e} (check --chip and --output)")))?;
    let run_info = meta::RunInfo {
        mode: "gpio-echo",
        device: format!("{} in {input} out {output}", chip.display()),
        baud: None,
        period_ns: None,
        byte: None,
        log: log.as_ref().map(|p| p.display().to_string()),
    };
    let session = Session::start(None, rt, trace, run_info)?;
    if let Some(l) = log_out.as_mut() {
        gpio::start_echo_log(l).context("cannot write --log")?;
    }
    eprintln!(
        "latprobe-responder: ready: answering edges of {}:{input} on {}:{output} ({})",
        chip.display(),
        chip.display(),
        session.rt_summary()
    );
    let mut clock = cycles::SystemClock;
    let mut guard = guard::CpuGuard::new();
    let mut traced = trace::Traced { inner: &mut toggle, trace: &session.trace };
    let mut guarded = guard::Guarded { inner: &mut traced, guard: &mut guard };
    let stats = gpio::echo(
        &mut edges_in,
        &mut guarded,
        log_out.as_mut(),
        &mut || cycles::Clock::now(&mut clock),
        &signals::stop_requested,
        None,
    )
    .context("gpio-echo failed")?;
    let mut summary = format!("answered {} edges", stats.answered);
    if stats.dropped > 0 {
        summary
            .push_str(&format!(", the kernel dropped {} edges (its event buffer overflowed)", stats.dropped));
    }
    summary.push_str(&guard.summary());
    session.finish(Ended::Signal, &summary);
    Ok(())
}

/// What a serial-line run holds for its whole length.
struct Session {
    tty: Option<Tty>,
    /// Dropped (trigger thread ended, tracefs restored) before the RT guard.
    trace: trace::Trace,
    _rt_guard: RtGuard,
    rt: RtReport,
    /// Written again at the end with the trace's outcome.
    meta: Option<(meta::Metadata, PathBuf)>,
}

impl Session {
    /// Signals, the line, RT set-up, then the metadata, in that order: the
    /// line first so a wrong --device fails before any RT warning clutters the
    /// screen, the metadata last so it records what the run really got.
    fn start(
        line: Option<&LineArgs>,
        rt_args: &RtArgs,
        trace_args: &TraceArgs,
        run_info: meta::RunInfo,
    ) -> Result<Session> {
        signals::install().context("cannot install signal handlers")?;
        if rt_args.exit_with_stdin {
            signals::exit_with_stdin().context("cannot watch stdin (--exit-with-stdin)")?;
        }
        let tty = line.map(|l| Tty::open_raw(&l.device, l.baud)).transpose()?;
        let (guard, report) = rt::setup(rt_args.priority, rt_args.cpu)?;
        for warning in &report.warnings {
            eprintln!("warning: {warning}");
        }
        let trace = trace::Trace::start(trace_args, rt_args.priority)?;
        let mut kept = None;
        if let Some(dest) = &rt_args.metadata {
            let mut meta = meta::collect(Some(run_info), report.clone());
            meta.trace = trace.report();
            write_metadata(&meta, dest)?;
            kept = Some((meta, dest.clone()));
        }
        Ok(Session { tty, trace, _rt_guard: guard, rt: report, meta: kept })
    }

    fn tty(&self) -> Result<&Tty> {
        self.tty.as_ref().context("no serial line")
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
    fn finish(mut self, ended: Ended, summary: &str) {
        let device =
            self.tty.as_ref().map_or_else(|| "the line".to_string(), |t| t.path().display().to_string());
        drop(self.tty.take());
        let traced = self.trace.finish();
        let summary = format!("{summary}{}", self.trace.summary());
        if let (Some((mut meta, dest)), Some(t)) = (self.meta.take(), traced) {
            // stdout had its copy at the start; a file gets the outcome.
            if dest != Path::new("-") {
                meta.trace = Some(t);
                if let Err(e) = write_metadata(&meta, &dest) {
                    eprintln!("warning: cannot write the trace's outcome to --metadata: {e:#}");
                }
            }
        }
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
/// No poll in between, so the wake-up on the byte is the only latency added;
/// the CPU guard looks at the clock after the answer is out.
fn echo(tty: &Tty, guard: &mut guard::CpuGuard, trace: &trace::Trace) -> Result<(Ended, u64)> {
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
            Ok(()) => {
                echoed += n as u64;
                // Each byte is one stimulus's identity, marked after the answer.
                for &b in &buf[..n] {
                    trace.mark(Some(b));
                }
                guard.after_work();
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok((Ended::Signal, echoed)),
            Err(e) if is_hangup(&e) => return Ok((Ended::HangUp, echoed)),
            Err(e) => bail!("writing {} failed: {e}", tty.path().display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::parse_byte;
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
        let parse = |p: &str| Cli::try_parse_from(["r", "periodic", "--device", "/x", "--interval", p]);
        assert!(parse("500us").is_ok());
    }

    #[test]
    fn periodic_takes_a_device_or_a_gpio_line_not_both() {
        let parse =
            |args: &[&str]| Cli::try_parse_from([&["r", "periodic", "--interval", "1ms"][..], args].concat());
        assert!(parse(&["--gpio", "gpiochip0:17"]).is_ok());
        assert!(parse(&["--device", "/x"]).is_ok());
        assert!(parse(&[]).is_err());
        assert!(parse(&["--device", "/x", "--gpio", "gpiochip0:17"]).is_err());
        assert!(parse(&["--gpio", "gpiochip0"]).is_err());
        // The demo's argv, exactly.
        let demo =
            ["r", "periodic", "--device", "/dev/pts/3", "--interval", "1000000ns", "--metadata", "m.json"];
        assert!(Cli::try_parse_from([&demo[..], &["--log", "l.txt", "--priority", "80"]].concat()).is_ok());
    }

    #[test]
    fn gpio_echo_args() {
        let ok = Cli::try_parse_from([
            "r",
            "gpio-echo",
            "--chip",
            "/dev/gpiochip0",
            "--input",
            "5",
            "--output",
            "6",
        ]);
        assert!(ok.is_ok());
        let missing = Cli::try_parse_from(["r", "gpio-echo", "--chip", "/dev/gpiochip0", "--input", "5"]);
        assert!(missing.is_err());
    }
}
