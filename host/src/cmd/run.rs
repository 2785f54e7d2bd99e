//! `latprobe run`: measure with a probe board on a serial port, a TCP or a
//! unix socket.

use clap::Args;

use crate::link::Link;
use crate::measure::{request, stop_wait};
use crate::model::RunContext;
use crate::model::{Calibration, LineArg};
use crate::model::{EdgeArg, ModeArg};
use crate::options::{OutputArgs, TimingArgs};
use crate::rawfile::RawWriter;
use crate::session::SessionOptions;
use crate::units::parse_duration_ns;
use crate::{timefmt, TOOL_VERSION};

/// `latprobe run` options.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The probe's link: a serial device (/dev/ttyACM0), tcp:HOST:PORT (ser2net) or unix:PATH (QEMU); not with --link rtt
    #[arg(long, short, value_name = "PORT")]
    pub port: Option<String>,
    /// Serial line speed of the probe's link (the reference board's ST-LINK port runs at 921600)
    #[arg(long, value_name = "N", default_value_t = latprobe_firmware::boards::nucleo_f411re::HOST_BAUD, value_parser = clap::value_parser!(u32).range(1..))]
    pub baud: u32,
    /// What to measure
    #[arg(long, value_enum, default_value = "uart-echo")]
    pub mode: ModeArg,
    /// Stop after this long (the host sends Stop): 10s, 5min
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_ns, allow_hyphen_values = true)]
    pub duration: Option<u64>,
    /// Send this fixed byte, hex (0x55) or decimal, for every stimulus in uart-echo and UART loopback: identity off, one stimulus in flight, an answer after --timeout counted late but never timed; for targets that answer with a constant [default: identity bytes, up to 9 stimuli in flight, late answers timed up to --timeout]
    #[arg(long, value_name = "BYTE", value_parser = parse_byte)]
    pub byte: Option<u8>,
    /// The stimulus edge in gpio-echo and GPIO loopback modes
    #[arg(long, value_enum, default_value = "rising")]
    pub edge: EdgeArg,
    /// The line a loopback measures: gpio (PA0 wired to PA1) or uart (PA9 wired to PA10, PA1 and PB10); required with --mode loopback
    #[arg(long, value_enum, value_name = "LINE")]
    pub line: Option<LineArg>,
    /// Subtract the probe's own offset measured by `latprobe calibrate` (refused for another board, firmware, line or baud)
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub gates: crate::options::GateArgs,
    #[command(flatten)]
    pub probe: crate::probe::RunProbeArgs,
}

/// Parse a byte written as hex (`0x55`) or decimal (`85`).
pub fn parse_byte(text: &str) -> Result<u8, String> {
    let t = text.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => t.parse(),
    };
    parsed.map_err(|_| format!("'{t}' is not a byte: write 0x00-0xff or 0-255"))
}

/// Run `latprobe run`.
pub fn run(args: RunArgs) -> Result<(), crate::Error> {
    let mut req = request(args.mode, &args.timing, args.duration, args.byte, args.edge);
    req.line = args.line;
    req.calibration = args.calibration.as_deref().map(Calibration::read).transpose()?;
    req.validate()?;
    crate::measure::check_periodic_flags(&args.out, req.mode)?;
    let gates = crate::measure::Delivery::new(&args.gates)?;
    let cal: Vec<(&str, &std::path::Path)> =
        args.calibration.iter().map(|p| ("--calibration", p.as_path())).collect();
    let target = crate::measure::check_outputs(&args.out, &gates, &cal)?;
    // With --flash this flashes (or finds the firmware in place) first.
    let (src, link_notes) = crate::probe::open_run_link(&args.probe, args.port.as_deref(), args.baud)?;
    let ctx = RunContext {
        tool_version: TOOL_VERSION.to_string(),
        source: src.name().to_string(),
        started_at: timefmt::now(),
        started_unix_ns: Some(timefmt::now_unix_ns()),
        request: req.clone(),
        histfile_max_us: args.out.histfile_max_us,
        target,
        notes: link_notes,
        limits: (!gates.limits.is_empty()).then(|| gates.limits.clone()),
        command_line: crate::model::command_line(),
    };
    let raw = args.out.raw.as_deref().map(|p| RawWriter::create(p, &ctx)).transpose()?;
    let announce =
        format!("latprobe: measuring {} through the probe on {}", req.mode.mode().name(), ctx.source);
    let opts = SessionOptions {
        stop_wait: stop_wait(&args.timing, &req),
        request: req,
        silence: args.timing.silence_timeout,
    };
    crate::measure::measure(
        Link::new(src, raw),
        &ctx,
        &opts,
        &args.out,
        &gates,
        args.out.target_log.as_deref().map(crate::measure::TargetLog::Given),
        Some(&announce),
        &mut || {},
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;
    use std::time::Duration;

    fn args(extra: &[&str]) -> RunArgs {
        let argv = [&["latprobe", "run", "--port", "/dev/null"][..], extra].concat();
        match crate::cli::Cli::parse_from(argv).command {
            crate::cli::Command::Run(a) => a,
            _ => unreachable!("parsed run"),
        }
    }

    fn wait_of(a: &RunArgs) -> Duration {
        stop_wait(&a.timing, &request(a.mode, &a.timing, a.duration, a.byte, a.edge))
    }

    #[test]
    fn stop_waits_for_the_stimuli_in_flight_too() {
        // The probe lets in-flight stimuli finish before Stopped: the wait
        // is the silence timeout (at least 2 s) plus the timeout.
        assert_eq!(wait_of(&args(&["--interval", "1ms"])), Duration::from_millis(3_008));
        assert_eq!(wait_of(&args(&["--interval", "1s"])), Duration::from_secs(3 + 8));
        assert_eq!(wait_of(&args(&["--byte", "0x55"])), Duration::from_micros(3_000_900));
        assert_eq!(
            wait_of(&args(&["--silence-timeout", "1s", "--timeout", "5ms"])),
            Duration::from_millis(2_005)
        );
        assert_eq!(wait_of(&args(&["--mode", "periodic"])), Duration::from_secs(3));
        assert_eq!(args(&[]).byte, None, "--byte has no default");
        assert_eq!(args(&["--byte", "85"]).byte, Some(0x55));
    }
}
