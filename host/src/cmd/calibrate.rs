//! `latprobe calibrate`: the probe's own offset and jitter on one line,
//! with the stimulus wired straight back, written to a calibration file
//! that `latprobe run --calibration FILE` subtracts.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::calibration::MIN_SAMPLES;
use crate::link::Link;
use crate::model::RunContext;
use crate::model::{Calibration, LineArg};
use crate::model::{EdgeArg, ModeArg};
use crate::options::{OutputArgs, TimingArgs};
use crate::rawfile::RawWriter;
use crate::session::SessionOptions;
use crate::units::{format_ns, parse_duration_ns, parse_positive_duration};
use crate::{source, timefmt, Error, TOOL_VERSION};

/// `latprobe calibrate` options.
#[derive(Debug, Clone, Args)]
pub struct CalibrateArgs {
    /// The probe's link: a serial device (/dev/ttyACM0), tcp:HOST:PORT or unix:PATH
    #[arg(long, short, value_name = "PORT")]
    pub port: String,
    /// Serial line speed of the probe's link
    #[arg(long, value_name = "N", default_value_t = latprobe_firmware::boards::nucleo_f411re::HOST_BAUD)]
    pub baud: u32,
    /// The line looped back: gpio (PA0 wired to PA1) or uart (PA9 wired to PA10, PA1 and PB10)
    #[arg(long, value_enum, value_name = "LINE")]
    pub line: LineArg,
    /// The stimulus edge of a GPIO loopback (calibrate with the edge the runs use)
    #[arg(long, value_enum, default_value = "rising")]
    pub edge: EdgeArg,
    /// Loopback samples to take (at least 10000)
    #[arg(long, value_name = "N", default_value_t = MIN_SAMPLES, value_parser = crate::options::parse_count, allow_hyphen_values = true)]
    pub count: u64,
    /// Time between stimuli
    #[arg(long, value_name = "DURATION", default_value = "1ms", value_parser = parse_duration_ns, allow_hyphen_values = true)]
    pub interval: u64,
    /// No data from the probe for this long is an error naming the port
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_positive_duration, allow_hyphen_values = true)]
    pub silence_timeout: Duration,
    /// Write the calibration to FILE
    #[arg(long, short, value_name = "FILE", default_value = "latprobe-calibration.json")]
    pub output: PathBuf,
    /// Also write the loopback run's JSON report to FILE
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Refused with the reason: a loopback calibration has no target in its loop
    #[arg(long, value_name = "URL", hide = true)]
    pub target: Option<String>,
}

/// Run `latprobe calibrate`.
pub fn run(args: CalibrateArgs) -> Result<(), crate::Error> {
    if let Some(t) = &args.target {
        return Err(Error::Config(format!(
            "--target {t}: a calibration measures the probe's own loopback (its stimulus wired straight \
             back to its input), so no target is in the loop and nothing runs there; leave --target out, \
             then measure with latprobe run --target {t} --calibration {}",
            args.output.display()
        )));
    }
    if args.count < MIN_SAMPLES {
        return Err(Error::Config(format!(
            "--count {}: a calibration takes at least {MIN_SAMPLES} loopback samples",
            args.count
        )));
    }
    crate::measure::paths::check_output_file("--output", &args.output, "calibration.json")?;
    if let Some(report) = &args.report {
        crate::measure::paths::check_output_file("--report", report, "loopback.json")?;
    }
    let timing = TimingArgs {
        interval: args.interval,
        dither: 0,
        timeout: None,
        guard: None,
        seed: 1,
        count: Some(args.count),
        silence_timeout: args.silence_timeout,
    };
    let mut req = crate::measure::request(ModeArg::Loopback, &timing, None, None, args.edge);
    req.line = Some(args.line);
    req.validate()?;
    let out = OutputArgs {
        trace: None,
        output: args.report.clone(),
        histfile: None,
        histfile_max_us: None,
        raw: None,
        target_meta: None,
        target_log: None,
        show_naive: false,
    };
    if let Some(report) = &args.report {
        let mut set = crate::measure::PathSet::default();
        set.output("--output", &args.output);
        set.output("--report", report);
        set.check()?;
    }
    let ctx = RunContext {
        tool_version: TOOL_VERSION.to_string(),
        source: args.port.clone(),
        started_at: timefmt::now(),
        started_unix_ns: Some(timefmt::now_unix_ns()),
        request: req.clone(),
        histfile_max_us: out.histfile_max_us_for(req.timeout_ns()),
        target: None,
        notes: Vec::new(),
        limits: None,
        command_line: crate::model::command_line(),
        loads: Vec::new(),
        phases: Vec::new(),
    };
    let src = source::open(&args.port, args.baud)?;
    let raw: Option<RawWriter> = None;
    let announce = format!(
        "latprobe: calibrating the {} loopback of the probe on {} ({} samples)",
        args.line.name(),
        args.port,
        args.count
    );
    let opts = SessionOptions {
        stop_wait: crate::measure::stop_wait(&timing, &req),
        request: req,
        silence: args.silence_timeout,
    };
    let report = crate::measure::measure(
        Link::new(src, raw),
        &ctx,
        &opts,
        &out,
        &crate::measure::Delivery::default(),
        None,
        Some(&announce),
        None,
        &mut || {},
    )?;
    let cal = Calibration::from_report(&report, args.line)?;
    cal.write(&args.output)?;
    crate::stdout!(
        "calibration: {} loopback offset {} (median), jitter {} peak to peak ({} .. {}), p99.9 {}, {} samples\n",
        cal.line.name(),
        format_ns(cal.offset_ns),
        format_ns(cal.jitter_ns()),
        format_ns(cal.min_ns),
        format_ns(cal.max_ns),
        format_ns(cal.p99_9_ns),
        cal.samples
    );
    crate::stderr_line!(
        "latprobe: wrote {}: use it with latprobe run --calibration {}",
        args.output.display(),
        args.output.display()
    );
    Ok(())
}
