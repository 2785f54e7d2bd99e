//! `latprobe demo`: the whole measurement path on this machine, no hardware.
//! The virtual probe (the real engine on a thread) stimulates the real
//! `latprobe-responder` over a pseudo-terminal, and everything else is what
//! `latprobe run` does with a probe board.

use std::path::PathBuf;

use clap::Args;

use crate::link::Link;
use crate::model::RunContext;
use crate::model::{EdgeArg, ModeArg};
use crate::options::{OutputArgs, TargetArgs, TimingArgs};
use crate::rawfile::RawWriter;
use crate::session::SessionOptions;
use crate::target::load::{Host as LoadHost, Scheduled};
use crate::target::{find_responder, start_local, start_local_with, Line, Remote, Role};
use crate::units::parse_duration_ns;
use crate::virtual_probe::VirtualProbe;
use crate::{timefmt, TOOL_VERSION};

/// The note every demo prints and reports.
pub const VIRTUAL_NOTE: &str = "virtual probe: its timestamps come from this machine's own clock \
    (CLOCK_MONOTONIC, read by software around write() and read()), so this measures this machine's \
    tty path but is not independent of it the way a hardware probe is";

/// `latprobe demo` options.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// How long to measure
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration_ns, allow_hyphen_values = true)]
    pub duration: u64,
    /// The latprobe-responder binary [default: next to latprobe, else on PATH]
    #[arg(long, value_name = "PATH")]
    pub responder: Option<PathBuf>,
    /// Run the responder and the virtual probe's thread at this SCHED_FIFO priority (1-99; a warning if not permitted)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=99))]
    pub priority: Option<u8>,
    /// Send this fixed byte, hex (0x55) or decimal, for every stimulus: identity off, one stimulus in flight [default: identity bytes, up to 9 in flight, late answers timed up to --timeout]
    #[arg(long, value_name = "BYTE", value_parser = super::run::parse_byte)]
    pub byte: Option<u8>,
    /// What to measure: uart-echo (the responder echoes the probe's bytes) or periodic (the responder writes a byte every --interval on its own clock, and logs its own wake-up latency beside the probe's)
    #[arg(long, value_enum, default_value = "uart-echo")]
    pub mode: DemoMode,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub trigger: crate::options::TriggerArgs,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub gates: crate::options::GateArgs,
    /// The demo's responder must see this machine's pseudo-terminal, so its
    /// --target is this machine (`ssh://127.0.0.1`): the SSH path, tested.
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub trace: crate::options::TraceArgs,
}

/// The modes the demo runs: this machine has no GPIO lines to wire, so
/// neither gpio-echo nor a loopback is offered (nor listed in `--help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DemoMode {
    /// The responder echoes the probe's bytes.
    UartEcho,
    /// The responder writes a byte every --interval on its own clock.
    Periodic,
}

impl From<DemoMode> for ModeArg {
    fn from(m: DemoMode) -> Self {
        match m {
            DemoMode::UartEcho => ModeArg::UartEcho,
            DemoMode::Periodic => ModeArg::Periodic,
        }
    }
}

/// The demo's trigger line (`--trigger-above`): a FIFO in the demo's temp
/// dir, written by the virtual probe (one byte `T` per triggered stimulus)
/// and read by whoever waits on it (the responder's `--trigger-fifo`);
/// removed when the demo ends. A board's trigger is a GPIO instead.
#[derive(Debug)]
pub struct TriggerFifo {
    /// Where it is.
    pub path: PathBuf,
}

impl TriggerFifo {
    /// The FIFO, made if `--trigger-above` was given.
    pub fn make(
        args: &crate::options::TriggerArgs,
        stem: &std::path::Path,
    ) -> Result<Option<Self>, crate::Error> {
        if args.trigger_above.is_none() {
            return Ok(None);
        }
        let path = stem.with_extension("trigger");
        mkfifo(&path, "--trigger-above")?;
        crate::stderr_line!(
            "latprobe demo: trigger line: the FIFO {} gets a byte 'T' the moment a stimulus has gone {} \
             unanswered",
            path.display(),
            crate::units::format_ns(args.trigger_above.unwrap_or(0))
        );
        Ok(Some(Self { path }))
    }
}

/// Make a FIFO at `path` (a stale one removed first); `flag` names what
/// asked for it in an error.
fn mkfifo(path: &std::path::Path, flag: &str) -> Result<(), crate::Error> {
    let _ = std::fs::remove_file(path);
    let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()))
        .map_err(|_| crate::Error::Config(format!("{}: a NUL in the temp dir's name", path.display())))?;
    // SAFETY: `c` is a valid NUL-terminated path for the call.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        return Err(crate::Error::io(
            format!("demo {flag}: cannot make the trigger FIFO {}", path.display()),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

impl Drop for TriggerFifo {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Run `latprobe demo`.
pub fn run(args: DemoArgs) -> Result<(), crate::Error> {
    let mode = ModeArg::from(args.mode);
    let req = crate::measure::request(mode, &args.timing, Some(args.duration), args.byte, EdgeArg::Rising);
    let req = crate::measure::request::with_trigger(req, &args.trigger);
    let req =
        if args.timing.count.is_some() { crate::model::Request { duration_ns: None, ..req } } else { req };
    req.validate()?;
    crate::measure::check_periodic_flags(&args.out, mode)?;
    let gates = crate::measure::Delivery::new(&args.gates)?;
    let mut target = crate::measure::check_demo_outputs(&args.out, &gates)?;
    let load_specs = crate::target::load::parse_all(&args.target.loads)?;
    let phases = args.target.load_schedule.as_deref().map(crate::target::load::parse_schedule).transpose()?;
    let phases = phases.unwrap_or_default();
    let remote = match &args.target.url {
        None => None,
        Some(url) => Some(Remote::connect(url, &args.target, args.responder.as_deref())?),
    };
    let bin = match &remote {
        None => find_responder(args.responder.as_deref())?,
        Some(r) => PathBuf::from(&r.responder),
    };

    crate::target::leftovers::remove_dead_demo_files(&std::env::temp_dir());
    let stem = std::env::temp_dir().join(format!("latprobe-demo-{}", std::process::id()));
    let host_stop = args.trace.trace && args.trace.trace_stop == Some(crate::options::TraceStop::Host);
    if host_stop && args.trigger.trigger_above.is_none() {
        return Err(crate::Error::Config(
            "--trace-stop host needs --trigger-above DURATION: the threshold past which the probe flags a              sample, whose arrival stops the trace"
                .into(),
        ));
    }
    let trigger = TriggerFifo::make(&args.trigger, &stem)?;
    let (probe, host_end) = VirtualProbe::start_with(crate::virtual_probe::Options {
        priority: args.priority,
        // --trace-stop host: the probe flags, latprobe writes the FIFO.
        trigger_fifo: trigger.as_ref().filter(|_| !host_stop).map(|t| t.path.clone()),
        trigger_flags_only: host_stop,
    })?;
    let meta = stem.with_extension("target.json");
    // Periodic: the responder's own log, kept where --target-log says, else
    // in a temporary file removed at the end.
    let temp_log = stem.with_extension("target.log");
    let log_path =
        (mode == ModeArg::Periodic).then(|| args.out.target_log.clone().unwrap_or(temp_log.clone()));
    // The loads' files apart from the run's (--load-dir), and room for
    // both checked before anything starts: the log's cap comes from it.
    let loads_base = args.target.load_dir.as_ref().map_or_else(std::env::temp_dir, PathBuf::from);
    let load_dir = loads_base.join(format!("latprobe-demo-{}.loads", std::process::id()));
    let cycles = req.duration_ns.map(|d| d / req.interval_ns.max(1)).or(req.count);
    let log_max = match &remote {
        Some(r) => r.check_room(log_path.is_some(), &load_specs, cycles)?,
        None => crate::target::space::check_local(log_path.as_deref(), &loads_base, &load_specs, cycles)?,
    };
    let role = match &log_path {
        Some(log) => Role::Periodic { interval_ns: req.interval_ns, log: log.clone().into(), log_max },
        None => Role::Uart,
    };
    // A fresh process may have run a demo before (the tests' library
    // callers): only this responder's end may abort this run.
    crate::signals::clear_abort();
    // --trace: the responder's flags, its trigger FIFO, the snapshots' dir.
    let line = trigger.as_ref().map(|t| t.path.as_path());
    let trace =
        demo_trace(&args.trace, &stem, line, &args.trigger, &args.out, &args.gates, &meta, remote.as_ref())?;
    // The demo's target is this machine (over SSH too): latprobe writes the
    // responder's FIFO itself.
    let sink: Option<Box<dyn crate::target::stop::TriggerSink>> = match (&trace, host_stop) {
        (Some(t), true) => Some(Box::new(
            crate::target::stop::HostStop::local(&t.fifo)?.record_in(std::path::Path::new(&t.source.dir))?,
        )),
        _ => None,
    };
    let mut out = args.out.clone();
    out.trace = trace.as_ref().map(|t| t.source.clone());
    let started = match &remote {
        None => match &trace {
            Some(t) => {
                start_local_with(&bin, probe.slave_path(), &meta, args.priority, &role, &t.responder_args)?
            }
            None => start_local(&bin, probe.slave_path(), &meta, args.priority, &role)?,
        },
        Some(r) => r.start_with(
            &Line::Tty { device: probe.slave_path().into(), baud: None },
            args.priority,
            &role,
            trace.as_ref().map_or(&[][..], |t| &t.responder_args),
        )?,
    };
    let responder = started.responder;
    if target.is_none() {
        // The responder's own facts about its machine, when it wrote them.
        target = started.meta.and_then(|t| serde_json::from_slice(&t).ok());
    }
    for refusal in super::responder_refusals(target.as_ref()) {
        crate::stderr_line!("latprobe demo: {refusal}");
    }
    // The loads, on the responder's machine, for the whole measurement.
    let mut loads = match &remote {
        Some(r) => Scheduled::start(
            &load_specs,
            LoadHost::Ssh(r.ssh.clone()),
            r.load_dir.as_deref().unwrap_or(&r.dir),
            &phases,
            args.target.load_may_end,
        )?,
        None => Scheduled::start(
            &load_specs,
            LoadHost::Local,
            &load_dir.to_string_lossy(),
            &phases,
            args.target.load_may_end,
        )?,
    };
    for l in &loads.records {
        crate::stderr_line!("latprobe demo: load {} on {}: {}", l.name, l.on, l.command);
    }

    crate::stderr_line!("latprobe demo: {VIRTUAL_NOTE}.");
    let what = match mode {
        ModeArg::Periodic => "periodic: the responder writes a byte".to_string(),
        _ => format!("uart-echo, {}", crate::report::stimulus_name(req.assumed_stimulus())),
    };
    crate::stderr_line!(
        "latprobe demo: {what}, every {} through {} to {} for {}",
        crate::units::format_ns(req.interval_ns),
        probe.slave_path().display(),
        match &remote {
            Some(r) => format!("{} on {}", r.responder, r.ssh.url()),
            None => bin.display().to_string(),
        },
        req.duration_ns
            .map_or_else(|| format!("{} samples", req.count.unwrap_or(0)), crate::units::format_ns)
    );
    let ctx = RunContext {
        tool_version: TOOL_VERSION.to_string(),
        source: crate::source::ByteSource::name(&host_end).to_string(),
        started_at: timefmt::now(),
        started_unix_ns: Some(timefmt::now_unix_ns()),
        request: req.clone(),
        histfile_max_us: args.out.histfile_max_us_for(req.timeout_ns()),
        target,
        notes: vec![
            VIRTUAL_NOTE.to_string(),
            probe.rt_priority().map_or_else(
                || {
                    "virtual probe thread at normal priority: its own wake-up latency is in the figures"
                        .into()
                },
                |p| format!("virtual probe thread at SCHED_FIFO {p}"),
            ),
        ]
        .into_iter()
        .chain(remote.as_ref().map(|r| format!("the responder ran on {} over SSH", r.ssh.url())))
        .collect(),
        limits: (!gates.limits.is_empty()).then(|| gates.limits.clone()),
        command_line: crate::model::command_line(),
        loads: loads.records.clone(),
        phases,
    };
    let raw = args.out.raw.as_deref().map(|p| RawWriter::create(p, &ctx)).transpose()?;
    let opts = SessionOptions {
        stop_wait: crate::measure::stop_wait(&args.timing, &req),
        request: req,
        silence: args.timing.silence_timeout,
    };
    // Once the run is over, the engine thread ends, then the responder
    // (which flushes its log as it exits), so that its whole log is there
    // to set beside the external figures (periodic).
    let mut probe = Some(probe);
    let mut responder = Some(responder);
    let mut stopped = Ok(());
    let result = crate::measure::measure(
        Link::new(Box::new(host_end), raw),
        &ctx,
        &opts,
        &out,
        &gates,
        log_path.as_deref().map(|p| match args.out.target_log {
            Some(_) => crate::measure::TargetLog::Given(p),
            None => crate::measure::TargetLog::Chosen(p),
        }),
        None,
        sink,
        &mut || {
            loads.stop();
            if let Some(p) = probe.take() {
                stopped = p.stop();
            }
            drop(responder.take());
            // Its whole log, written as it exited, set beside the run here.
            if let (Some(r), Some(local)) = (&remote, &log_path) {
                r.fetch_log(local);
            }
            // Its snapshots and its last metadata, beside the report.
            if let (Some(r), Some(t)) = (&remote, &trace) {
                if let Some(there) = &t.remote_dir {
                    r.fetch_trace(there, std::path::Path::new(&t.source.dir), &r.meta_path(), &t.meta);
                }
            }
        },
    );
    if let Some(p) = probe.take() {
        stopped = p.stop();
    }
    drop(responder);
    drop(trace);
    drop(loads);
    let _ = std::fs::remove_dir_all(&load_dir);
    // The target's directory goes with `remote`.
    drop(remote);
    if args.out.target_log.is_none() {
        let _ = std::fs::remove_file(&temp_log);
    }
    result?;
    stopped?;
    Ok(())
}

/// The demo's side of `--trace`; the FIFO goes when it is dropped.
#[derive(Debug)]
pub struct DemoTrace {
    /// The responder's flags after its role's.
    pub responder_args: Vec<std::ffi::OsString>,
    /// The trigger line on this machine: a FIFO the responder reads (open
    /// read-write, so it never sees an end) and the virtual probe writes
    /// `T` to (a board's probe raises a GPIO edge instead).
    pub fifo: PathBuf,
    /// What the report reads after the run.
    pub source: crate::model::TraceSource,
    /// The responder's metadata, written again at its exit (fetched back
    /// here from an SSH target).
    meta: PathBuf,
    /// Over SSH: the snapshots' directory on the target.
    remote_dir: Option<String>,
}

impl Drop for DemoTrace {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.fifo);
        let _ = std::fs::remove_file(&self.meta);
    }
}

/// Where `--trace` puts the snapshots: `--trace-dir`, else beside the
/// report (`-o` or `--html`) as NAME-trace/, else ./latprobe-trace.
pub(crate) fn trace_dir_for(
    t: &crate::options::TraceArgs,
    out: &OutputArgs,
    gates: &crate::options::GateArgs,
) -> PathBuf {
    t.trace_dir.clone().unwrap_or_else(|| {
        let beside = out.output.as_ref().or(gates.html.as_ref());
        match beside {
            Some(f) => {
                let name = f.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                f.with_file_name(format!("{name}-trace"))
            }
            None => PathBuf::from("latprobe-trace"),
        }
    })
}

/// The trigger FIFO: `line`, the one the virtual probe writes to
/// (`--trigger-above`), else one made in the demo's temporary files
/// (`stem`) that only a test's own bytes reach; the snapshots' directory;
/// and the responder's flags.
#[allow(clippy::too_many_arguments)]
fn demo_trace(
    t: &crate::options::TraceArgs,
    stem: &std::path::Path,
    line: Option<&std::path::Path>,
    trigger: &crate::options::TriggerArgs,
    out: &OutputArgs,
    gates: &crate::options::GateArgs,
    meta: &std::path::Path,
    remote: Option<&Remote>,
) -> Result<Option<DemoTrace>, crate::Error> {
    if !t.trace {
        return Ok(None);
    }
    let dir = trace_dir_for(t, out, gates);
    let fifo = match line {
        Some(l) => l.to_path_buf(),
        None => {
            let fifo = stem.with_extension("trigger");
            mkfifo(&fifo, "--trace")?;
            crate::stderr_line!(
                "latprobe demo: --trace without --trigger-above: nothing raises the trigger but a byte written to {}",
                fifo.display()
            );
            fifo
        }
    };
    // Over SSH (the demo's target is this machine, so the FIFO is shared):
    // the snapshots go in the run's directory there and are fetched back.
    let remote_dir = remote.map(|r| format!("{}/trace", r.dir));
    let mut a: Vec<std::ffi::OsString> = vec![
        "--trace".into(),
        "--trace-dir".into(),
        remote_dir.clone().map_or_else(|| dir.clone().into(), Into::into),
        "--trace-keep".into(),
        t.trace_keep.to_string().into(),
        "--trigger-fifo".into(),
        fifo.clone().into(),
    ];
    if let Some(e) = &t.trace_events {
        a.extend(["--trace-events".into(), e.into()]);
    }
    if let Some(tr) = &t.tracer {
        a.extend(["--tracer".into(), tr.into()]);
    }
    let stop = t.trace_stop.unwrap_or(crate::options::TraceStop::Probe);
    let host = stop == crate::options::TraceStop::Host;
    a.extend(["--trace-buffer-kb".into(), t.buffer_kb(stop).to_string().into()]);
    crate::stderr_line!(
        "latprobe demo: trace: snapshots into {}; trigger FIFO {} ({})",
        dir.display(),
        fifo.display(),
        if host {
            "--trace-stop host: latprobe writes 'T' there when a flagged sample arrives"
        } else {
            "the virtual probe writes 'T' there; a board uses a GPIO edge"
        }
    );
    let source = crate::model::TraceSource {
        dir: dir.display().to_string(),
        threshold_ns: trigger.trigger_above,
        meta: Some(meta.display().to_string()),
        stop: Some(if host { "host" } else { "probe" }.to_string()),
    };
    Ok(Some(DemoTrace { responder_args: a, fifo, source, meta: meta.to_path_buf(), remote_dir }))
}
