//! The target's side of a run, driven from the host: the responder process
//! (on this machine for `demo`, or over SSH with `--target ssh://…`), the
//! role it plays, and its files fetched back ([`ssh`]).
//!
//! A responder that ends during the run aborts it: nothing answers the
//! stimuli any more, and every later sample would be a timeout of a target
//! that is not there. Over SSH the responder runs with `--exit-with-stdin`
//! and ssh's stdin is a pipe held here: closing it ends the responder,
//! and so does this process dying or the connection dropping (sshd closes
//! the remote stdin), so the responder never outlives the run.

pub mod leftovers;
pub mod load;
mod remote;
pub mod space;
pub mod ssh;
pub mod stop;

pub use remote::{find_responder, start_local, start_local_with, Remote, Started};

use std::ffi::OsString;
use std::io::{BufRead as _, BufReader};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::Error;

/// The target's end of the line the probe measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A serial line: `--device D [--baud B]`.
    Tty {
        /// The tty on the target.
        device: PathBuf,
        /// Its rate; the responder's default (115 200) when `None`.
        baud: Option<u32>,
    },
    /// GPIO lines of one chip: `input` answers (gpio-echo), `output` drives.
    Gpio {
        /// The chip, `/dev/gpiochip0`.
        chip: String,
        /// The input line (gpio-echo only).
        input: Option<u32>,
        /// The output line.
        output: u32,
    },
}

/// What the responder is asked to do, and where it writes.
#[derive(Debug, Clone)]
pub enum Role {
    /// `uart`: echo.
    Uart,
    /// `gpio-echo`: toggle the output on every input edge.
    GpioEcho,
    /// `periodic --interval I --log FILE`.
    Periodic {
        /// The period, ns.
        interval_ns: u64,
        /// Its per-cycle log, on the target.
        log: OsString,
        /// The log's cap, bytes (`--log-max`); the responder's default when `None`.
        log_max: Option<u64>,
    },
}

impl Role {
    /// The responder's argv after its path. Periodic on a tty is exactly
    /// `periodic --device DEV --interval I --metadata META --log FILE
    /// [--log-max BYTES] [--priority N]`, so any responder with that interface can be tried
    /// with `--responder PATH`.
    pub fn argv(&self, line: &Line, meta: &std::ffi::OsStr, priority: Option<u8>) -> Vec<OsString> {
        let mut v: Vec<OsString> = Vec::new();
        let tty = |v: &mut Vec<OsString>| {
            if let Line::Tty { device, baud } = line {
                v.extend(["--device".into(), device.into()]);
                if let Some(b) = baud {
                    v.extend(["--baud".into(), b.to_string().into()]);
                }
            }
        };
        match self {
            Role::Uart => {
                v.push("uart".into());
                tty(&mut v);
                v.extend(["--metadata".into(), meta.into()]);
            }
            Role::GpioEcho => {
                if let Line::Gpio { chip, input, output } = line {
                    v.extend(["gpio-echo".into(), "--chip".into(), chip.into()]);
                    if let Some(i) = input {
                        v.extend(["--input".into(), i.to_string().into()]);
                    }
                    v.extend(["--output".into(), output.to_string().into()]);
                }
                v.extend(["--metadata".into(), meta.into()]);
            }
            Role::Periodic { interval_ns, log, log_max } => {
                v.push("periodic".into());
                tty(&mut v);
                if let Line::Gpio { chip, output, .. } = line {
                    v.extend(["--gpio".into(), format!("{chip}:{output}").into()]);
                }
                v.extend([
                    "--interval".into(),
                    format!("{interval_ns}ns").into(),
                    "--metadata".into(),
                    meta.into(),
                    "--log".into(),
                    log.clone(),
                ]);
                if let Some(m) = log_max {
                    v.extend(["--log-max".into(), m.to_string().into()]);
                }
            }
        }
        if let Some(p) = priority {
            v.extend(["--priority".into(), p.to_string().into()]);
        }
        v
    }
}

/// How a failed start is put: who the responder is, and the flag that gives
/// another one.
#[derive(Debug, Clone)]
pub struct Named {
    /// `the demo's responder /path`, `the responder on ssh://host`.
    pub who: String,
    /// `give a working one with --responder PATH`.
    pub fix: String,
}

/// The responder process (or the ssh carrying it), stopped when dropped.
#[derive(Debug)]
pub struct Responder {
    child: Child,
    /// ssh's stdin, held open for the run: closing it ends the remote
    /// responder (`--exit-with-stdin`).
    stdin: Option<ChildStdin>,
    log: Arc<Mutex<Vec<String>>>,
    /// Set when we stop it: its end is then expected.
    stopping: Arc<AtomicBool>,
}

impl Responder {
    /// Start `cmd` (the responder, or ssh running it), wait for its `ready:`
    /// line on stderr (10 s), and watch it for the rest of the run. With
    /// `hold_stdin` its stdin is a pipe kept open until [`Responder::stop`].
    pub fn spawn(mut cmd: Command, named: &Named, hold_stdin: bool) -> Result<Self, Error> {
        // Its own process group: a Ctrl-C in the terminal reaches latprobe
        // only, which then stops the run first and the responder after.
        cmd.process_group(0)
            .stdin(if hold_stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let who = named.who.clone();
        let mut child = cmd.spawn().map_err(|e| Error::io(format!("cannot start {who}"), e))?;
        let stdin = child.stdin.take();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stopping = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel();
        // Said when its stderr has closed and every line is in `log`.
        let (drained_tx, drained_rx) = mpsc::channel::<()>();
        if let Some(stderr) = child.stderr.take() {
            let log = log.clone();
            let stopping = stopping.clone();
            let pid = child.id();
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
                        "{who} ended during the run, {how}{said}: nothing answers the stimuli any more, so \
                         the run stops here"
                    ));
                }
            });
        }
        let mut r = Self { child, stdin, log, stopping };
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
                    "{} {what}; {said}: fix what it reports (run it by hand with --help), or {}",
                    named.who, named.fix
                )));
            }
        }
    }

    /// Its last stderr lines, joined.
    pub fn last_lines(&self) -> String {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).join(" / ")
    }

    /// The local process's id (the responder, or the ssh carrying it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stop it and reap it; its end is expected. A held stdin is closed
    /// first (the remote responder stops as on SIGTERM, writes its log
    /// out and ssh exits with it); then SIGTERM, then SIGKILL.
    pub fn stop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        if self.stdin.take().is_some() && self.wait_for(Duration::from_secs(5)) {
            return;
        }
        // SAFETY: kill(2) on the pid of our own child, not yet reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        if self.wait_for(Duration::from_secs(2)) {
            return;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether it ended (and was reaped) within `limit`.
    fn wait_for(&mut self, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop();
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
