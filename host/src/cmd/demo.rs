//! `latprobe demo`: the whole measurement path on this machine, no hardware.
//! The virtual probe (the real engine on a thread) stimulates the real
//! `latprobe-responder` over a pseudo-terminal, and everything else is what
//! `latprobe run` does with a probe board.

use std::io::{BufRead as _, BufReader};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;

use crate::link::Link;
use crate::model::RunContext;
use crate::model::{EdgeArg, ModeArg};
use crate::options::{OutputArgs, TimingArgs};
use crate::rawfile::RawWriter;
use crate::session::SessionOptions;
use crate::units::parse_duration_ns;
use crate::virtual_probe::VirtualProbe;
use crate::{timefmt, Error, TOOL_VERSION};

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
    pub out: OutputArgs,
    #[command(flatten)]
    pub gates: crate::options::GateArgs,
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

const RESPONDER: &str = "latprobe-responder";

/// Find the responder: `--responder`, next to this executable, or on PATH.
pub fn find_responder(given: Option<&Path>) -> Result<PathBuf, Error> {
    if let Some(p) = given {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(Error::Input(format!("--responder {}: no such file", p.display())))
        };
    }
    let beside = std::env::current_exe().ok().and_then(|e| e.parent().map(|d| d.join(RESPONDER)));
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(RESPONDER));
    beside.into_iter().chain(on_path).find(|p| p.is_file()).ok_or_else(|| {
        Error::Input(format!(
            "cannot find {RESPONDER} next to latprobe or on PATH: build it with \
             `cargo build --release -p latprobe-responder`, or give --responder PATH"
        ))
    })
}

/// The responder process, stopped (SIGTERM, then SIGKILL) when dropped.
/// If it ends by itself during the run, the run is aborted: nothing
/// answers the stimuli any more, and every later sample would be a timeout
/// of a target that is not there.
struct Responder {
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
    /// Set when we stop it: its end is then expected.
    stopping: Arc<AtomicBool>,
}

/// What the responder is asked to do.
#[derive(Debug, Clone)]
enum Role {
    /// `uart`: echo.
    Uart,
    /// `periodic --interval I --log FILE`.
    Periodic { interval_ns: u64, log: PathBuf },
}

impl Role {
    /// The responder's argv after its path. Periodic is exactly
    /// `periodic --device DEV --interval I --metadata META --log FILE
    /// [--priority N]`, so any responder with that interface can be tried
    /// with `--responder PATH`.
    fn argv(&self, device: &Path, meta: &Path, priority: Option<u8>) -> Vec<std::ffi::OsString> {
        let mut v: Vec<std::ffi::OsString> = Vec::new();
        match self {
            Role::Uart => {
                v.extend(["uart".into(), "--device".into(), device.into(), "--metadata".into(), meta.into()]);
            }
            Role::Periodic { interval_ns, log } => {
                v.extend([
                    "periodic".into(),
                    "--device".into(),
                    device.into(),
                    "--interval".into(),
                    format!("{interval_ns}ns").into(),
                    "--metadata".into(),
                    meta.into(),
                    "--log".into(),
                    log.into(),
                ]);
            }
        }
        if let Some(p) = priority {
            v.extend(["--priority".into(), p.to_string().into()]);
        }
        v
    }
}

impl Responder {
    fn spawn(
        bin: &Path,
        device: &Path,
        meta: &Path,
        priority: Option<u8>,
        role: &Role,
    ) -> Result<Self, Error> {
        let mut cmd = Command::new(bin);
        cmd.args(role.argv(device, meta, priority));
        // Its own process group: a Ctrl-C in the terminal reaches latprobe
        // only, which then stops the run first and the responder after.
        cmd.process_group(0).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child =
            cmd.spawn().map_err(|e| Error::io(format!("cannot start the responder {}", bin.display()), e))?;
        let log = Arc::new(Mutex::new(Vec::new()));
        let stopping = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel();
        // Said when its stderr has closed and every line is in `log`.
        let (drained_tx, drained_rx) = mpsc::channel::<()>();
        if let Some(stderr) = child.stderr.take() {
            let log = log.clone();
            let stopping = stopping.clone();
            let pid = child.id();
            let bin = bin.display().to_string();
            // Drain its stderr for as long as it runs (so it never blocks on
            // a full pipe), keeping the last lines for an error message.
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if line.contains("ready:") {
                        let _ = ready_tx.send(());
                    }
                    let mut l = log.lock().unwrap_or_else(|p| p.into_inner());
                    if l.len() >= 20 {
                        l.remove(0);
                    }
                    l.push(line);
                }
                // Its stderr closed: it has ended (or is ending).
                let _ = drained_tx.send(());
                if !stopping.load(Ordering::SeqCst) {
                    let how = exit_of(pid);
                    let last = log.lock().unwrap_or_else(|p| p.into_inner()).join(" / ");
                    let said = if last.is_empty() { String::new() } else { format!(" (it said: {last})") };
                    crate::signals::abort(format!(
                        "the responder {bin} ended during the run, {how}{said}: nothing answers the stimuli \
                         any more, so the run stops here"
                    ));
                }
            });
        }
        let mut r = Self { child, log, stopping };
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            if ready_rx.recv_timeout(Duration::from_millis(50)).is_ok() {
                return Ok(r);
            }
            let exited = r.child.try_wait().ok().flatten();
            if exited.is_some() || Instant::now() >= until {
                let what = exited
                    .map_or_else(|| "did not get ready within 10 s".to_string(), |s| format!("exited ({s})"));
                // A set-up failure, not the run's: its end raises no abort,
                // and what it said is read to the end before it is quoted.
                r.stopping.store(true, Ordering::SeqCst);
                r.stop();
                let _ = drained_rx.recv_timeout(Duration::from_secs(2));
                let last = r.last_lines();
                let said = if last.is_empty() {
                    "it said nothing on stderr".to_string()
                } else {
                    format!("it said: {last}")
                };
                return Err(Error::Input(format!(
                    "the demo's responder {} {what}; {said}: fix what it reports (run it by hand with \
                     --help), or give a working one with --responder PATH",
                    bin.display(),
                )));
            }
        }
    }

    fn last_lines(&self) -> String {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).join(" / ")
    }
}

/// How process `pid` (our child) ended, without reaping it; waits up to a
/// second for it to be over.
fn exit_of(pid: u32) -> String {
    let until = Instant::now() + Duration::from_secs(1);
    loop {
        // SAFETY: an all-zero siginfo_t is a valid value for waitid to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid on our own child with WNOWAIT leaves it for
        // Child::wait to reap; `info` is valid for writes.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: waitid filled `info` for a child that changed state.
        let (got, status) = unsafe { (info.si_pid(), info.si_status()) };
        if rc == 0 && got != 0 {
            return match info.si_code {
                libc::CLD_EXITED => format!("exit status {status}"),
                _ => format!("killed by signal {status}"),
            };
        }
        if rc != 0 || Instant::now() >= until {
            return "its output closed".into();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Responder {
    /// Stop it (SIGTERM, then SIGKILL) and reap it; its end is expected.
    fn stop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        // SAFETY: kill(2) on the pid of our own child, not yet reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run `latprobe demo`.
pub fn run(args: DemoArgs) -> Result<(), crate::Error> {
    let mode = ModeArg::from(args.mode);
    let req = crate::measure::request(mode, &args.timing, Some(args.duration), args.byte, EdgeArg::Rising);
    let req =
        if args.timing.count.is_some() { crate::model::Request { duration_ns: None, ..req } } else { req };
    req.validate()?;
    crate::measure::check_periodic_flags(&args.out, mode)?;
    let gates = crate::measure::Delivery::new(&args.gates)?;
    let mut target = crate::measure::check_demo_outputs(&args.out, &gates)?;
    let bin = find_responder(args.responder.as_deref())?;

    let (probe, host_end) = VirtualProbe::start(args.priority)?;
    let stem = std::env::temp_dir().join(format!("latprobe-demo-{}", std::process::id()));
    let meta = stem.with_extension("target.json");
    // Periodic: the responder's own log, kept where --target-log says, else
    // in a temporary file removed at the end.
    let temp_log = stem.with_extension("target.log");
    let role = match mode {
        ModeArg::Periodic => Role::Periodic {
            interval_ns: req.interval_ns,
            log: args.out.target_log.clone().unwrap_or_else(|| temp_log.clone()),
        },
        _ => Role::Uart,
    };
    let log_path = match &role {
        Role::Periodic { log, .. } => Some(log.clone()),
        Role::Uart => None,
    };
    // A fresh process may have run a demo before (the tests' library
    // callers): only this responder's end may abort this run.
    crate::signals::clear_abort();
    let responder = Responder::spawn(&bin, probe.slave_path(), &meta, args.priority, &role)?;
    if target.is_none() {
        // The responder's own facts about this machine, when it wrote them.
        target = std::fs::read_to_string(&meta).ok().and_then(|t| serde_json::from_str(&t).ok());
    }
    let _ = std::fs::remove_file(&meta);

    crate::tell!("latprobe demo: {VIRTUAL_NOTE}.");
    let what = match mode {
        ModeArg::Periodic => "periodic: the responder writes a byte".to_string(),
        _ => format!("uart-echo, {}", crate::report::stimulus_name(req.assumed_stimulus())),
    };
    crate::tell!(
        "latprobe demo: {what}, every {} through {} to {} for {}",
        crate::units::format_ns(req.interval_ns),
        probe.slave_path().display(),
        bin.display(),
        req.duration_ns
            .map_or_else(|| format!("{} samples", req.count.unwrap_or(0)), crate::units::format_ns)
    );
    let ctx = RunContext {
        tool_version: TOOL_VERSION.to_string(),
        source: crate::source::ByteSource::name(&host_end).to_string(),
        started_at: timefmt::now(),
        started_unix_ns: Some(timefmt::now_unix_ns()),
        request: req.clone(),
        histfile_max_us: args.out.histfile_max_us,
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
        ],
        limits: (!gates.limits.is_empty()).then(|| gates.limits.clone()),
        command_line: crate::model::command_line(),
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
        &args.out,
        &gates,
        log_path.as_deref().map(|p| match args.out.target_log {
            Some(_) => crate::measure::TargetLog::Given(p),
            None => crate::measure::TargetLog::Chosen(p),
        }),
        None,
        &mut || {
            if let Some(p) = probe.take() {
                stopped = p.stop();
            }
            drop(responder.take());
        },
    );
    if let Some(p) = probe.take() {
        stopped = p.stop();
    }
    drop(responder);
    if args.out.target_log.is_none() {
        let _ = std::fs::remove_file(&temp_log);
    }
    result?;
    stopped?;
    Ok(())
}
