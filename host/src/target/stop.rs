//! `--trace-stop host`: latprobe itself stops the target's trace when a
//! flagged sample reaches it, for a bench with no wire from the probe's
//! trigger output to a target GPIO.
//!
//! ```text
//!  probe ─batch (a flagged sample)─▶ session ─TriggerSink─▶ HostStop ─'T'─▶ FIFO on the target
//!                                                            local: the FIFO itself      │
//!                                                            SSH:   `cat > FIFO` there   ▼
//!                                                                       responder's trigger thread
//! ```
//!
//! One byte `T` per flagged sample, in the order the samples arrive (the
//! probe sends them in order), except that flagged samples arriving within
//! [`MIN_GAP`] of the last stop share it: the answers queued behind one
//! late answer come in one batch, and a second stop right after the first
//! would find the buffer the responder has just cleared (an empty
//! snapshot, spending `--trace-keep`). Each stop's sample is written to
//! [`STOPS_FILE`] in the snapshots' directory, one seq a line: the report
//! ties the target's k-th trigger to its k-th line. The stop comes
//! later than the wire's: after the answer (or the timeout), the batch that
//! carries it (the probe sends one at most 50 ms after its first sample),
//! the link and, over SSH, the network. The trace's ring buffer still holds
//! the window then when it is big enough (`--trace-buffer-kb` on the
//! responder); the report estimates each snapshot's trigger-to-stop time
//! from the late answer's marker.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::time::{Duration, Instant};

use super::ssh::{self, SshTarget};
use crate::Error;

/// What the session calls for every sample the probe flagged.
pub trait TriggerSink: std::fmt::Debug + Send {
    /// Sample `seq` was flagged (`triggered`); called once per sample, in
    /// the order they arrive.
    fn triggered(&mut self, seq: u64);
}

/// Where the bytes go.
#[derive(Debug)]
enum Line {
    /// The FIFO on this machine (the demo's target).
    Local(std::fs::File),
    /// `cat > FIFO` on the target, its stdin ours.
    Remote { child: Child, stdin: ChildStdin, url: String },
}

/// Flagged samples within this of the last stop share it.
pub const MIN_GAP: Duration = Duration::from_millis(10);

/// The stops' samples, one seq a line, in the snapshots' directory.
pub const STOPS_FILE: &str = "host-stops.txt";

/// The host's trace stop: one byte `T` per flagged sample (bursts share).
#[derive(Debug)]
pub struct HostStop {
    line: Line,
    /// Bytes written.
    pub sent: u64,
    /// Flagged samples that shared an earlier stop.
    pub shared: u64,
    /// When the last stop went.
    last: Option<Instant>,
    /// Where each stop's sample is written ([`STOPS_FILE`]).
    record: Option<PathBuf>,
    /// The first write that failed (said once; the run goes on).
    pub failed: Option<String>,
}

/// The trigger byte the responder's FIFO reader counts.
const TRIGGER: &[u8] = b"T";

impl HostStop {
    /// Write to the FIFO `fifo` on this machine, opened read-write and
    /// non-blocking: the open never waits for the responder, and a write
    /// never blocks the session (a full FIFO loses the byte, and says so).
    pub fn local(fifo: &Path) -> Result<HostStop, Error> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(fifo)
            .map_err(|e| {
                Error::io(format!("--trace-stop host: cannot open the trigger FIFO {}", fifo.display()), e)
            })?;
        Ok(HostStop::on(Line::Local(f)))
    }

    /// Make the FIFO `fifo` on the target (its run directory) and keep a
    /// `cat > FIFO` running there whose stdin is ours. The FIFO is made
    /// before the responder opens it (its `--trigger-fifo`).
    pub fn remote(ssh: &SshTarget, fifo: &str) -> Result<HostStop, Error> {
        let q = ssh::quote(fifo);
        let made = ssh.run(&format!("mkfifo -m 600 {q}"), None)?;
        if !made.status.success() {
            return Err(Error::Config(format!(
                "--trace-stop host: cannot make the trigger FIFO {fifo} on {}: {}; or wire the probe's trigger \
                 output to a target GPIO and give --target-trigger-gpio CHIP:LINE",
                ssh.url(),
                String::from_utf8_lossy(&made.stderr).trim()
            )));
        }
        // `exec 3<>` opens it read-write (never waits for a reader); cat
        // passes each byte on as it reads it (no buffering of its own).
        let mut c = ssh.command(&format!("exec 3<>{q}; exec cat >&3"));
        c.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null());
        let mut child = c.spawn().map_err(|e| ssh.no_client(e))?;
        let stdin =
            child.stdin.take().ok_or_else(|| Error::Config("ssh: no stdin to write the stop to".into()))?;
        Ok(HostStop::on(Line::Remote { child, stdin, url: ssh.url() }))
    }

    fn on(line: Line) -> HostStop {
        HostStop { line, sent: 0, shared: 0, last: None, record: None, failed: None }
    }

    /// Write each stop's sample to [`STOPS_FILE`] in `dir` (made if need
    /// be; a stale file is replaced).
    pub fn record_in(mut self, dir: &Path) -> Result<HostStop, Error> {
        let path = dir.join(STOPS_FILE);
        std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&path, b""))
            .map_err(|e| Error::io(format!("--trace-stop host: cannot write {}", path.display()), e))?;
        self.record = Some(path);
        Ok(self)
    }

    /// Send one trigger.
    fn send(&mut self) {
        let r = match &mut self.line {
            Line::Local(f) => f.write_all(TRIGGER),
            Line::Remote { stdin, .. } => stdin.write_all(TRIGGER).and_then(|()| stdin.flush()),
        };
        match r {
            Ok(()) => self.sent += 1,
            Err(e) if self.failed.is_none() => {
                let to = match &self.line {
                    Line::Local(_) => "the trigger FIFO".to_string(),
                    Line::Remote { url, .. } => format!("the trigger FIFO on {url}"),
                };
                let msg = format!("--trace-stop host: cannot write the stop to {to}: {e}; no more snapshots");
                crate::stderr_line!("warning: {msg}");
                self.failed = Some(msg);
            }
            Err(_) => {}
        }
    }
}

impl TriggerSink for HostStop {
    fn triggered(&mut self, seq: u64) {
        if self.last.is_some_and(|t| t.elapsed() < MIN_GAP) {
            self.shared += 1;
            return;
        }
        self.last = Some(Instant::now());
        self.send();
        if let Some(p) = &self.record {
            let line = format!("{seq}\n");
            let _ = std::fs::OpenOptions::new()
                .append(true)
                .open(p)
                .and_then(|mut f| f.write_all(line.as_bytes()));
        }
    }
}

impl Drop for HostStop {
    fn drop(&mut self) {
        if let Line::Remote { child, .. } = &mut self.line {
            // Its stdin closes with us; cat then ends. Do not wait on a
            // stuck connection.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
