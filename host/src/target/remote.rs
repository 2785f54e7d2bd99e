//! The responder started for a run: on this machine (the demo), or on the
//! target over SSH ([`Remote`]), with the metadata it wrote at its start.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::ssh::{self, SshTarget, RESPONDER};
use super::{Line, Named, Responder, Role};
use crate::options::TargetArgs;
use crate::Error;

/// Find the responder: `--responder`, next to this executable, or on PATH.
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

/// A responder started, with the metadata it wrote at its start.
#[derive(Debug)]
pub struct Started {
    /// The process.
    pub responder: Responder,
    /// Its metadata document, as it wrote it.
    pub meta: Option<Vec<u8>>,
}

/// The demo's responder on this machine, on `device`.
pub fn start_local(
    bin: &Path,
    device: &Path,
    meta: &Path,
    priority: Option<u8>,
    role: &Role,
) -> Result<Started, Error> {
    start_local_with(bin, device, meta, priority, role, &[])
}

/// [`start_local`] with more of the responder's flags after the role's
/// (`--trace ...`).
pub fn start_local_with(
    bin: &Path,
    device: &Path,
    meta: &Path,
    priority: Option<u8>,
    role: &Role,
    extra: &[OsString],
) -> Result<Started, Error> {
    let mut cmd = Command::new(bin);
    let line = Line::Tty { device: device.to_path_buf(), baud: None };
    cmd.args(role.argv(&line, meta.as_os_str(), priority));
    cmd.args(extra);
    let named = Named {
        who: format!("the demo's responder {}", bin.display()),
        fix: "give a working one with --responder PATH".into(),
    };
    let responder = Responder::spawn(cmd, &named, false)?;
    let got = std::fs::read(meta).ok();
    let _ = std::fs::remove_file(meta);
    Ok(Started { responder, meta: got })
}

/// The target over SSH: its responder (checked, or installed), and a
/// directory of its own for the run's files there.
#[derive(Debug)]
pub struct Remote {
    /// The target.
    pub ssh: SshTarget,
    /// The responder's path there, a shell word.
    pub responder: String,
    /// The run's directory there (removed when dropped).
    pub dir: String,
    /// The loads' directory there, apart from the run's (in `--load-dir`,
    /// else the target's TMPDIR): dd filling it never touches the run's
    /// log. Removed when dropped; `None` without `--load`.
    pub load_dir: Option<String>,
}

impl Remote {
    /// Log in, check the responder there (or install ours: `local` names
    /// it, else the one beside latprobe), and make the run's directory.
    pub fn connect(url: &str, t: &TargetArgs, local: Option<&Path>) -> Result<Remote, Error> {
        let ssh = SshTarget::parse(url, t.ssh_config.as_deref())?;
        let mut responder = t.target_responder.clone().unwrap_or_else(|| RESPONDER.to_string());
        let mut info = ssh.probe(&responder)?;
        if t.target_install {
            let local = match local {
                Some(p) => Some(find_responder(Some(p))?),
                None => find_responder(None).ok(),
            };
            let bin = ssh::responder_for(&info.machine, local.as_deref())?;
            responder = ssh.install(&bin)?;
            crate::stderr_line!("latprobe: installed {} as {responder} on {}", bin.display(), ssh.url());
            info = ssh.probe(&responder)?;
        }
        ssh.check_responder(&responder, &info)?;
        let dir = ssh.temp_dir()?;
        let load_dir = if t.loads.is_empty() {
            None
        } else {
            match ssh.temp_dir_in(t.load_dir.as_deref()) {
                Ok(d) => Some(d),
                Err(e) => {
                    ssh.remove_dir(&dir);
                    return Err(e);
                }
            }
        };
        Ok(Remote { ssh, responder, dir, load_dir })
    }

    /// Check the room there for the periodic log (`periodic`) and the
    /// loads' files before the run: the log's cap, or an error naming
    /// `--load-dir`.
    pub fn check_room(
        &self,
        periodic: bool,
        specs: &[super::load::LoadSpec],
        cycles: Option<u64>,
    ) -> Result<Option<u64>, Error> {
        let mut dirs = vec![self.dir.as_str()];
        dirs.extend(self.load_dir.as_deref());
        let rooms = self.ssh.rooms(&dirs)?;
        let at = |i: usize| rooms.get(i).cloned().flatten().map(|r| (dirs[i], r));
        let plan = super::space::Plan {
            log: if periodic { at(0) } else { None },
            loads: at(1),
            specs,
            cycles,
            on: self.ssh.url(),
        };
        super::space::check(&plan)
    }

    /// Start the responder there in `role` on `line`, with `--exit-with-stdin`.
    pub fn start(&self, line: &Line, priority: Option<u8>, role: &Role) -> Result<Started, Error> {
        self.start_with(line, priority, role, &[])
    }

    /// [`Remote::start`] with more of the responder's flags after the
    /// role's (`--trace ...`).
    pub fn start_with(
        &self,
        line: &Line,
        priority: Option<u8>,
        role: &Role,
        extra: &[OsString],
    ) -> Result<Started, Error> {
        let meta = self.meta_path();
        let role = match role {
            Role::Periodic { interval_ns, log_max, .. } => Role::Periodic {
                interval_ns: *interval_ns,
                log: format!("{}/target.log", self.dir).into(),
                log_max: *log_max,
            },
            other => other.clone(),
        };
        let words: Vec<String> = role
            .argv(line, meta.as_ref(), priority)
            .iter()
            .chain(extra)
            .map(|w| ssh::quote(&w.to_string_lossy()))
            .collect();
        let remote = format!("exec {} {} --exit-with-stdin", ssh::quote(&self.responder), words.join(" "));
        let named = Named {
            who: format!("the responder on {}", self.ssh.url()),
            fix: "check it over ssh by hand, or give another with --target-responder PATH".into(),
        };
        let responder = Responder::spawn(self.ssh.command(&remote), &named, true)?;
        let meta = self.ssh.fetch(&meta)?;
        Ok(Started { responder, meta })
    }

    /// The responder's metadata there, as it wrote it last (at its exit).
    pub fn meta_path(&self) -> String {
        format!("{}/target.json", self.dir)
    }

    /// Copy the trace snapshots (`trace-seq-*`) of `remote_dir` there into
    /// `local_dir`, and `remote_file` to `local_file`; how many snapshot
    /// files came. A failure is said, and the run goes on.
    pub fn fetch_trace(
        &self,
        remote_dir: &str,
        local_dir: &Path,
        remote_file: &str,
        local_file: &Path,
    ) -> usize {
        let mut fetched = 0;
        let listed = self.ssh.run(&format!("ls -1 {}", ssh::quote(remote_dir)), None);
        let names: Vec<String> = match &listed {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|n| n.starts_with("trace-seq-") && !n.contains('/'))
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        };
        if let Err(e) = std::fs::create_dir_all(local_dir) {
            crate::stderr_error!(
                "latprobe: cannot make {} for the trace snapshots: {e}",
                local_dir.display()
            );
            return 0;
        }
        for n in names {
            match self.ssh.fetch(&format!("{remote_dir}/{n}")) {
                Ok(Some(bytes)) if std::fs::write(local_dir.join(&n), &bytes).is_ok() => fetched += 1,
                _ => crate::stderr_error!(
                    "latprobe: cannot fetch the trace snapshot {n} from {}",
                    self.ssh.url()
                ),
            }
        }
        if let Ok(Some(bytes)) = self.ssh.fetch(remote_file) {
            let _ = std::fs::write(local_file, bytes);
        }
        fetched
    }

    /// Copy the responder's per-cycle log back to `local`, streamed (never
    /// whole in memory) through the output rules; a failure is said.
    pub fn fetch_log(&self, local: &Path) {
        let log = format!("{}/target.log", self.dir);
        let (staged, file) = match crate::fsout::create(local) {
            Ok(s) => s,
            Err(e) => {
                crate::stderr_error!("latprobe: cannot keep the target's log in {}: {e}", local.display());
                return;
            }
        };
        let mut w = std::io::BufWriter::with_capacity(1 << 16, file);
        let got = self.ssh.fetch_into(&log, &mut w);
        let flushed = std::io::Write::flush(&mut w);
        drop(w);
        match (got, flushed) {
            (Ok(Some(_)), Ok(())) => {
                if let Err(e) = staged.commit() {
                    crate::stderr_error!(
                        "latprobe: cannot keep the target's log in {}: {e}",
                        local.display()
                    );
                }
            }
            (Ok(None), _) => {
                staged.abandon();
                crate::stderr_error!("latprobe: the target's log {log} is not there");
            }
            (Err(e), _) => {
                staged.abandon();
                crate::stderr_error!("latprobe: cannot fetch the target's log: {e}");
            }
            (_, Err(e)) => {
                staged.abandon();
                crate::stderr_error!("latprobe: cannot keep the target's log in {}: {e}", local.display());
            }
        }
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        if let Some(d) = &self.load_dir {
            self.ssh.remove_dir(d);
        }
        self.ssh.remove_dir(&self.dir);
    }
}
