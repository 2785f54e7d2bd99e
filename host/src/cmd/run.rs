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
    pub trigger: crate::options::TriggerArgs,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub gates: crate::options::GateArgs,
    #[command(flatten)]
    pub probe: crate::probe::RunProbeArgs,
    #[command(flatten)]
    pub target: crate::options::TargetArgs,
    /// With --target: the target's serial line wired to the probe (uart-echo; periodic on a UART), e.g. /dev/ttyS1
    #[arg(long, value_name = "PATH", requires = "url")]
    pub target_device: Option<std::path::PathBuf>,
    /// With --target: that line's rate
    #[arg(long, value_name = "N", requires = "url", default_value_t = latprobe_firmware::boards::nucleo_f411re::TARGET_BAUD)]
    pub target_baud: u32,
    /// With --target: the target's GPIO lines wired to the probe: CHIP:INPUT:OUTPUT for gpio-echo (/dev/gpiochip0:17:27), CHIP:OUTPUT for periodic
    #[arg(long, value_name = "CHIP:LINES", requires = "url")]
    pub target_gpio: Option<String>,
    /// With --target: run the responder at this SCHED_FIFO priority (1-99; a warning there if not permitted)
    #[arg(long, value_name = "N", requires = "url", value_parser = clap::value_parser!(u8).range(1..=99))]
    pub target_priority: Option<u8>,
    #[command(flatten)]
    pub trace: crate::options::TraceArgs,
    /// With --trace: the target's GPIO line wired to the probe's trigger output (Nucleo-F411RE: PB4), CHIP:LINE (/dev/gpiochip0:22); the responder stops the trace on its rising edge (--trace-stop probe). Without it latprobe stops the trace itself (--trace-stop host)
    #[arg(long, value_name = "CHIP:LINE", requires = "trace")]
    pub target_trigger_gpio: Option<String>,
}

/// `run --trace`: what the run does for the target's trace.
struct RunTrace {
    /// The responder's flags after its role's.
    responder_args: Vec<std::ffi::OsString>,
    /// The snapshots' directory there.
    remote_dir: String,
    /// What the report reads.
    source: crate::model::TraceSource,
    /// The responder's metadata at its exit, fetched here.
    meta: std::path::PathBuf,
    /// `--trace-stop host`: the stop's line to the target.
    host_stop: Option<crate::target::stop::HostStop>,
}

impl Drop for RunTrace {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.meta);
    }
}

/// `run --trace` checked before anything starts: who stops the trace.
fn trace_stop_of(args: &RunArgs) -> Result<Option<crate::options::TraceStop>, crate::Error> {
    use crate::options::TraceStop;
    let t = &args.trace;
    if !t.trace {
        return Ok(None);
    }
    if args.target.url.is_none() {
        return Err(crate::Error::Config(
            "--trace arms the target's ftrace, which latprobe reaches with --target ssh://[user@]host: give \
             --target (with the line it answers on), or start latprobe-responder --trace there yourself"
                .into(),
        ));
    }
    if args.trigger.trigger_above.is_none() {
        return Err(crate::Error::Config(
            "--trace on a board needs --trigger-above DURATION: the threshold past which the probe raises its \
             trigger and flags the sample"
                .into(),
        ));
    }
    let stop = t.trace_stop.unwrap_or(if args.target_trigger_gpio.is_some() {
        TraceStop::Probe
    } else {
        TraceStop::Host
    });
    match (stop, &args.target_trigger_gpio) {
        (TraceStop::Probe, None) => Err(crate::Error::Config(
            "--trace-stop probe needs --target-trigger-gpio CHIP:LINE: the target's GPIO line wired to the \
             probe's trigger output (Nucleo-F411RE: PB4); or --trace-stop host, where latprobe stops the \
             trace itself"
                .into(),
        )),
        (TraceStop::Host, Some(_)) => Err(crate::Error::Config(
            "--target-trigger-gpio with --trace-stop host: the wire stops the trace sooner; drop \
             --trace-stop host, or drop --target-trigger-gpio"
                .into(),
        )),
        _ => Ok(Some(stop)),
    }
}

/// `run --trace` set up on the target `r` (its FIFO made for
/// `--trace-stop host`).
fn run_trace(
    args: &RunArgs,
    stop: Option<crate::options::TraceStop>,
    remote: Option<&crate::target::Remote>,
) -> Result<Option<RunTrace>, crate::Error> {
    use crate::options::TraceStop;
    let t = &args.trace;
    let (Some(stop), Some(r)) = (stop, remote) else { return Ok(None) };
    let fifo = format!("{}/trigger.fifo", r.dir);
    let trigger_flag: [std::ffi::OsString; 2] = match &args.target_trigger_gpio {
        Some(g) => ["--trigger-gpio".into(), g.into()],
        None => ["--trigger-fifo".into(), fifo.clone().into()],
    };
    let remote_dir = format!("{}/trace", r.dir);
    let mut a: Vec<std::ffi::OsString> = vec![
        "--trace".into(),
        "--trace-dir".into(),
        remote_dir.clone().into(),
        "--trace-keep".into(),
        t.trace_keep.to_string().into(),
    ];
    a.extend(trigger_flag);
    if let Some(e) = &t.trace_events {
        a.extend(["--trace-events".into(), e.into()]);
    }
    if let Some(tr) = &t.tracer {
        a.extend(["--tracer".into(), tr.into()]);
    }
    a.extend(["--trace-buffer-kb".into(), t.buffer_kb(stop).to_string().into()]);
    let dir = crate::cmd::demo::trace_dir_for(t, &args.out, &args.gates);
    let host_stop = match stop {
        TraceStop::Host => Some(crate::target::stop::HostStop::remote(&r.ssh, &fifo)?.record_in(&dir)?),
        TraceStop::Probe => None,
    };
    let meta = std::env::temp_dir().join(format!("latprobe-run-{}.target.json", std::process::id()));
    crate::stderr_line!(
        "latprobe: trace on {}: snapshots into {} after the run; stopped by {}",
        r.ssh.url(),
        dir.display(),
        match stop {
            TraceStop::Probe =>
                format!("the probe's trigger wire on {}", args.target_trigger_gpio.as_deref().unwrap_or("")),
            TraceStop::Host => "latprobe when a flagged sample arrives (--trace-stop host)".to_string(),
        }
    );
    let source = crate::model::TraceSource {
        dir: dir.display().to_string(),
        threshold_ns: args.trigger.trigger_above,
        meta: Some(meta.display().to_string()),
        stop: Some(match stop {
            TraceStop::Probe => "probe".into(),
            TraceStop::Host => "host".into(),
        }),
    };
    Ok(Some(RunTrace { responder_args: a, remote_dir, source, meta, host_stop }))
}

/// The target's end of the measured line, from `--target-device` or
/// `--target-gpio`, as `mode` needs it.
fn target_line(args: &RunArgs) -> Result<crate::target::Line, crate::Error> {
    use crate::target::Line;
    let bad = |m: String| crate::Error::Config(m);
    let gpio = |spec: &str, with_input: bool| -> Result<Line, crate::Error> {
        let want = if with_input {
            "CHIP:INPUT:OUTPUT, e.g. /dev/gpiochip0:17:27"
        } else {
            "CHIP:OUTPUT, e.g. /dev/gpiochip0:27"
        };
        let parts: Vec<&str> = spec.rsplitn(if with_input { 3 } else { 2 }, ':').collect();
        let num = |s: &str| s.parse::<u32>().ok();
        match (with_input, parts.as_slice()) {
            (true, [out, inp, chip]) if !chip.is_empty() => match (num(inp), num(out)) {
                (Some(i), Some(o)) => Ok(Line::Gpio { chip: chip.to_string(), input: Some(i), output: o }),
                _ => Err(bad(format!("--target-gpio {spec}: write {want}"))),
            },
            (false, [out, chip]) if !chip.is_empty() => match num(out) {
                Some(o) => Ok(Line::Gpio { chip: chip.to_string(), input: None, output: o }),
                None => Err(bad(format!("--target-gpio {spec}: write {want}"))),
            },
            _ => Err(bad(format!("--target-gpio {spec}: write {want}"))),
        }
    };
    let tty = |d: &std::path::Path| Line::Tty { device: d.to_path_buf(), baud: Some(args.target_baud) };
    match (args.mode, &args.target_device, &args.target_gpio) {
        (ModeArg::Loopback, ..) => Err(bad(
            "--target with --mode loopback: a loopback measures the probe alone, with no target: drop --target".into(),
        )),
        (ModeArg::UartEcho, Some(d), None) => Ok(tty(d)),
        (ModeArg::GpioEcho, None, Some(g)) => gpio(g, true),
        (ModeArg::Periodic, Some(d), None) => Ok(tty(d)),
        (ModeArg::Periodic, None, Some(g)) => gpio(g, false),
        (_, Some(_), Some(_)) => Err(bad("--target-device and --target-gpio: give the one line the probe is wired to".into())),
        (ModeArg::GpioEcho, ..) => Err(bad(
            "--target with --mode gpio-echo needs --target-gpio CHIP:INPUT:OUTPUT (e.g. /dev/gpiochip0:17:27): the target's lines wired to the probe".into(),
        )),
        (ModeArg::UartEcho, ..) => Err(bad(
            "--target with --mode uart-echo needs --target-device PATH (e.g. /dev/ttyS1): the target's serial line wired to the probe".into(),
        )),
        (ModeArg::Periodic, ..) => Err(bad(
            "--target with --mode periodic needs --target-device PATH (a byte each period) or --target-gpio CHIP:OUTPUT (a toggle)".into(),
        )),
    }
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
    req = crate::measure::request::with_trigger(req, &args.trigger);
    req.line = args.line;
    req.calibration = args.calibration.as_deref().map(Calibration::read).transpose()?;
    req.validate()?;
    crate::measure::check_periodic_flags(&args.out, req.mode)?;
    let gates = crate::measure::Delivery::new(&args.gates)?;
    let cal: Vec<(&str, &std::path::Path)> =
        args.calibration.iter().map(|p| ("--calibration", p.as_path())).collect();
    let line = args.target.url.as_ref().map(|_| target_line(&args)).transpose()?;
    let load_specs = crate::target::load::parse_all(&args.target.loads)?;
    let phases = args.target.load_schedule.as_deref().map(crate::target::load::parse_schedule).transpose()?;
    let phases = phases.unwrap_or_default();
    if !load_specs.is_empty() && line.is_none() {
        return Err(crate::Error::Config(
            "--load runs on the target, which latprobe reaches with --target ssh://[user@]host: give --target \
             (or start the load there yourself)"
                .into(),
        ));
    }
    let trace_stop = trace_stop_of(&args)?;
    let mut target = crate::measure::check_outputs(&args.out, &gates, line.is_some(), &cal)?;
    // With --flash this flashes (or finds the firmware in place) first.
    let (src, mut link_notes) = crate::probe::open_run_link(&args.probe, args.port.as_deref(), args.baud)?;
    // --target: the responder started there, its facts and (periodic) its
    // log fetched back, a temporary file when --target-log names none.
    let temp_log = std::env::temp_dir().join(format!("latprobe-run-{}.target.log", std::process::id()));
    let log_path = (line.is_some() && req.mode == ModeArg::Periodic)
        .then(|| args.out.target_log.clone().unwrap_or(temp_log.clone()));
    let remote = match &args.target.url {
        Some(url) => Some(crate::target::Remote::connect(url, &args.target, None)?),
        None => None,
    };
    let mut trace = run_trace(&args, trace_stop, remote.as_ref())?;
    let mut out = args.out.clone();
    out.trace = trace.as_ref().map(|t| t.source.clone());
    let mut responder = None;
    if let (Some(r), Some(line)) = (&remote, &line) {
        // Room there for the log and the loads' files, before anything starts.
        let cycles = req.duration_ns.map(|d| d / req.interval_ns.max(1)).or(req.count);
        let log_max = r.check_room(req.mode == ModeArg::Periodic, &load_specs, cycles)?;
        let role = match req.mode {
            ModeArg::GpioEcho => crate::target::Role::GpioEcho,
            ModeArg::Periodic => crate::target::Role::Periodic {
                interval_ns: req.interval_ns,
                log: Default::default(),
                log_max,
            },
            _ => crate::target::Role::Uart,
        };
        crate::signals::clear_abort();
        let extra = trace.as_ref().map_or(&[][..], |t| &t.responder_args[..]);
        let started = r.start_with(line, args.target_priority, &role, extra)?;
        if target.is_none() {
            target = started.meta.and_then(|t| serde_json::from_slice(&t).ok());
        }
        for refusal in super::responder_refusals(target.as_ref()) {
            crate::stderr_line!("latprobe: {refusal}");
        }
        link_notes.push(format!("the responder ran on {} over SSH", r.ssh.url()));
        responder = Some(started.responder);
    }
    let mut loads = match &remote {
        Some(r) => crate::target::load::Scheduled::start(
            &load_specs,
            crate::target::load::Host::Ssh(r.ssh.clone()),
            r.load_dir.as_deref().unwrap_or(&r.dir),
            &phases,
            args.target.load_may_end,
        )?,
        None => crate::target::load::Scheduled::start(&[], crate::target::load::Host::Local, "", &[], false)?,
    };
    for l in &loads.records {
        crate::stderr_line!("latprobe: load {} on {}: {}", l.name, l.on, l.command);
    }
    let ctx = RunContext {
        tool_version: TOOL_VERSION.to_string(),
        source: src.name().to_string(),
        started_at: timefmt::now(),
        started_unix_ns: Some(timefmt::now_unix_ns()),
        request: req.clone(),
        histfile_max_us: args.out.histfile_max_us_for(req.timeout_ns()),
        target,
        notes: link_notes,
        limits: (!gates.limits.is_empty()).then(|| gates.limits.clone()),
        command_line: crate::model::command_line(),
        loads: loads.records.clone(),
        phases,
    };
    let raw = args.out.raw.as_deref().map(|p| RawWriter::create(p, &ctx)).transpose()?;
    let announce =
        format!("latprobe: measuring {} through the probe on {}", req.mode.mode().name(), ctx.source);
    let opts = SessionOptions {
        stop_wait: stop_wait(&args.timing, &req),
        request: req,
        silence: args.timing.silence_timeout,
    };
    let sink = trace
        .as_mut()
        .and_then(|t| t.host_stop.take())
        .map(|h| Box::new(h) as Box<dyn crate::target::stop::TriggerSink>);
    let result = crate::measure::measure(
        Link::new(src, raw),
        &ctx,
        &opts,
        &out,
        &gates,
        match (&log_path, &args.out.target_log) {
            (Some(p), None) => Some(crate::measure::TargetLog::Chosen(p)),
            _ => args.out.target_log.as_deref().map(crate::measure::TargetLog::Given),
        },
        Some(&announce),
        sink,
        &mut || {
            // The loads end, the responder ends (writing its log out), then
            // its log comes back, and its trace snapshots.
            loads.stop();
            drop(responder.take());
            if let (Some(r), Some(p)) = (&remote, &log_path) {
                r.fetch_log(p);
            }
            if let (Some(r), Some(t)) = (&remote, &trace) {
                let dir = std::path::Path::new(&t.source.dir);
                let n = r.fetch_trace(&t.remote_dir, dir, &r.meta_path(), &t.meta);
                crate::stderr_line!(
                    "latprobe: trace: {n} snapshot file(s) from {} into {}",
                    r.ssh.url(),
                    dir.display()
                );
            }
        },
    );
    drop(trace);
    drop(loads);
    drop(responder);
    drop(remote);
    if log_path.is_some() && args.out.target_log.is_none() {
        let _ = std::fs::remove_file(&temp_log);
    }
    result?;
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
