//! `--target ssh://[user@]host[:port]`: the target driven through the
//! system's OpenSSH client, as git and labgrid drive theirs. The user's own
//! config and agent apply (or `--ssh-config FILE`); latprobe adds only
//! `BatchMode` (never a password prompt in the middle of a run), a connect
//! timeout and keep-alives, so a dropped connection is noticed within
//! seconds.
//!
//! A failure is one [`Error::Target`] naming the host and what to try: the
//! host unreachable, the key refused, the host key unknown, the responder
//! missing or of another version (`--target-install` copies the matching
//! one).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::Error;

/// The responder's name on a target's PATH.
pub const RESPONDER: &str = "latprobe-responder";

/// Where `--target-install` puts the responder, below the remote user's home.
pub const INSTALL_DIR: &str = ".cache/latprobe";

/// Seconds ssh waits for the connection, and between keep-alives (three
/// missed ones end the session: a dropped link is noticed in ~15 s).
const CONNECT_TIMEOUT_S: u32 = 10;
const ALIVE_INTERVAL_S: u32 = 5;

/// A target reached over SSH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    /// `user@`, when given.
    pub user: Option<String>,
    /// The host name or address.
    pub host: String,
    /// `:port`, when given.
    pub port: Option<u16>,
    /// `--ssh-config FILE` (ssh's `-F`), else the user's own.
    pub config: Option<PathBuf>,
}

/// What the target said about itself and its responder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteInfo {
    /// `uname -m`.
    pub machine: String,
    /// The responder's `--version` line, when it ran.
    pub responder_version: Option<String>,
}

impl SshTarget {
    /// Parse `ssh://[user@]host[:port]` (`host` may be `[v6 address]`).
    pub fn parse(url: &str, config: Option<&Path>) -> Result<SshTarget, Error> {
        let bad = |why: &str| {
            Error::Config(format!(
                "--target {url}: {why}: write --target ssh://[user@]host[:port], e.g. ssh://root@192.168.1.20"
            ))
        };
        let rest = url.strip_prefix("ssh://").ok_or_else(|| bad("only ssh:// targets are known"))?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let (user, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) if !u.is_empty() => (Some(u.to_string()), h),
            Some(_) => return Err(bad("the user before @ is empty")),
            None => (None, rest),
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| bad("a [v6 address] lacks its ]"))?;
            (h, after.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        if host.is_empty() || host.contains(['/', ' ']) {
            return Err(bad("no host"));
        }
        // ssh would take either as one of its own options (-oProxyCommand=…
        // runs a command here): refused, as git refuses them.
        if host.starts_with('-') {
            return Err(bad("a host cannot begin with '-' (ssh would read it as an option)"));
        }
        if user.as_deref().is_some_and(|u| u.starts_with('-')) {
            return Err(bad("a user cannot begin with '-' (ssh would read it as an option)"));
        }
        let port = port
            .map(|p| p.parse::<u16>().ok().filter(|&p| p > 0).ok_or_else(|| bad("the port is not 1-65535")))
            .transpose()?;
        if let Some(c) = config {
            check_config(c)?;
        }
        Ok(SshTarget { user, host: host.to_string(), port, config: config.map(Path::to_path_buf) })
    }

    /// `ssh://user@host:port`, as given.
    pub fn url(&self) -> String {
        let user = self.user.as_deref().map(|u| format!("{u}@")).unwrap_or_default();
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        let port = self.port.map(|p| format!(":{p}")).unwrap_or_default();
        format!("ssh://{user}{host}{port}")
    }

    /// The ssh command line a user would type to reach the target, for messages.
    pub fn by_hand(&self) -> String {
        let mut s = String::from("ssh");
        if let Some(c) = &self.config {
            s.push_str(&format!(" -F {}", c.display()));
        }
        if let Some(p) = self.port {
            s.push_str(&format!(" -p {p}"));
        }
        if let Some(u) = &self.user {
            s.push_str(&format!(" {u}@{}", self.host));
        } else {
            s.push_str(&format!(" {}", self.host));
        }
        s
    }

    /// `ssh … -- host <remote>`: `remote` is a shell command on the target.
    /// The `--` ends ssh's options before the destination, so neither the
    /// host nor the command is ever read as one.
    pub fn command(&self, remote: &str) -> Command {
        let mut c = Command::new("ssh");
        if let Some(f) = &self.config {
            c.arg("-F").arg(f);
        }
        c.args([
            "-o",
            "BatchMode=yes",
            "-o",
            &format!("ConnectTimeout={CONNECT_TIMEOUT_S}"),
            "-o",
            &format!("ServerAliveInterval={ALIVE_INTERVAL_S}"),
            "-o",
            "ServerAliveCountMax=3",
            "-T",
        ]);
        if let Some(p) = self.port {
            c.arg("-p").arg(p.to_string());
        }
        if let Some(u) = &self.user {
            c.arg("-l").arg(u);
        }
        c.arg("--").arg(&self.host).arg(remote);
        c
    }

    /// Run `remote` on the target and wait for it. An ssh failure (exit
    /// 255) is the error; the remote command's own status is the caller's.
    pub fn run(&self, remote: &str, input: Option<&[u8]>) -> Result<Output, Error> {
        let mut c = self.command(remote);
        c.stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().map_err(|e| self.no_client(e))?;
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            // A remote command that stops reading early shows in its status.
            let _ = stdin.write_all(bytes);
        }
        let out = child.wait_with_output().map_err(|e| Error::io(format!("ssh to {}", self.url()), e))?;
        if out.status.code() == Some(255) {
            return Err(self.failure(&String::from_utf8_lossy(&out.stderr)));
        }
        Ok(out)
    }

    /// The error for ssh itself failing to start.
    pub fn no_client(&self, e: std::io::Error) -> Error {
        Error::Target(format!(
            "--target {}: cannot run ssh ({e}): install the OpenSSH client (Debian: apt-get install openssh-client)",
            self.url()
        ))
    }

    /// The error for an ssh that exited 255, from what it said.
    pub fn failure(&self, stderr: &str) -> Error {
        let said = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" / ");
        let said = crate::out::clean(&said).into_owned();
        let url = self.url();
        let by_hand = self.by_hand();
        let has = |s: &str| said.to_ascii_lowercase().contains(&s.to_ascii_lowercase());
        Error::Target(if has("permission denied") || has("too many authentication failures") {
            format!(
                "--target {url}: the target refused the key ({said}): check that `{by_hand} true` logs in \
                 without a password (ssh-copy-id installs a key; an ssh-agent or --ssh-config FILE names one)"
            )
        } else if has("host key verification failed") || has("host key for") {
            format!(
                "--target {url}: the target's host key is not known or has changed ({said}): connect once by \
                 hand (`{by_hand}`) to check and accept it"
            )
        } else if has("could not resolve") || has("name or service not known") {
            format!("--target {url}: no such host ({said}): check the name, or give its address")
        } else if has("connection refused")
            || has("timed out")
            || has("no route to host")
            || has("network is unreachable")
        {
            format!(
                "--target {url}: cannot reach the target ({said}): check the address and port, that it is \
                 powered and on the network, and that sshd runs on it"
            )
        } else if has("broken pipe") || has("closed by remote host") || has("connection reset") {
            format!("--target {url}: the SSH connection dropped ({said}): check the network to the target")
        } else if said.is_empty() {
            format!("--target {url}: ssh failed and said nothing: try `{by_hand} true` by hand")
        } else {
            format!("--target {url}: ssh failed ({said}): try `{by_hand} true` by hand")
        })
    }

    /// Log in and look: the target's machine and `responder --version`.
    /// Each answer is a tagged line, so what a login prints (a banner, a
    /// shell startup file's echo) is never taken for one.
    pub fn probe(&self, responder: &str) -> Result<RemoteInfo, Error> {
        let q = quote(responder);
        let out = self.run_framed(
            &format!(
                "printf 'latprobe-machine %s\\n' \"$(uname -m)\"; v=$({q} --version 2>/dev/null) && \
                 printf 'latprobe-version %s\\n' \"$v\""
            ),
            None,
        )?;
        let text = String::from_utf8_lossy(&out.stdout);
        let tagged = |tag: &str| text.lines().find_map(|l| l.strip_prefix(tag)).map(|v| v.trim().to_string());
        let machine = tagged("latprobe-machine ").unwrap_or_default();
        let version = tagged("latprobe-version ").filter(|v| !v.is_empty());
        Ok(RemoteInfo { machine, responder_version: version })
    }

    /// [`SshTarget::run`], with the remote command's stdout only: whatever
    /// the login printed before the command ran (a banner from a shell
    /// startup file) is cut off at a marker line the command prints first.
    pub fn run_framed(&self, remote: &str, input: Option<&[u8]>) -> Result<Output, Error> {
        let mut out = self.run(&format!("printf '%s\\n' {FRAME}; {remote}"), input)?;
        out.stdout = unframe(&out.stdout).to_vec();
        Ok(out)
    }

    /// Check that `responder` on the target is this latprobe's own version.
    pub fn check_responder(&self, responder: &str, info: &RemoteInfo) -> Result<(), Error> {
        let want = format!("{RESPONDER} {}", env!("CARGO_PKG_VERSION"));
        match &info.responder_version {
            Some(v) if *v == want => Ok(()),
            Some(v) => Err(Error::Target(format!(
                "--target {}: {responder} there is `{}`, this latprobe needs `{want}`: give --target-install \
                 to copy the matching one, or --target-responder PATH",
                self.url(),
                crate::out::clean(v)
            ))),
            None => Err(Error::Target(format!(
                "--target {}: {responder} does not run there (not on its PATH, or not built for its {} CPU): \
                 give --target-install to copy the matching one, or --target-responder PATH",
                self.url(),
                info.machine
            ))),
        }
    }

    /// Copy `local` (a responder built for the target's CPU) to
    /// `~/.cache/latprobe/latprobe-responder-<version>` on the target and
    /// return that path (a shell word: `$HOME/…`).
    pub fn install(&self, local: &Path) -> Result<String, Error> {
        let bytes = std::fs::read(local)
            .map_err(|e| Error::Input(format!("--target-install: cannot read {}: {e}", local.display())))?;
        let name = format!("{RESPONDER}-{}", env!("CARGO_PKG_VERSION"));
        let dest = format!("\"$HOME\"/{INSTALL_DIR}/{name}");
        let script = format!(
            "set -e; mkdir -p \"$HOME\"/{INSTALL_DIR}; cat > {dest}.part; chmod 755 {dest}.part; \
             mv -f {dest}.part {dest}"
        );
        let out = self.run(&script, Some(&bytes))?;
        if !out.status.success() {
            return Err(Error::Target(format!(
                "--target {}: cannot install the responder in ~/{INSTALL_DIR} ({}): free some space or give \
                 --target-responder PATH",
                self.url(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(dest)
    }

    /// A fresh directory on the target for this run's files, marked with
    /// this latprobe process ([`owner_mark`]). Directories that runs of
    /// this machine left there (killed before they could remove them) are
    /// removed first, saying so.
    pub fn temp_dir(&self) -> Result<String, Error> {
        self.temp_dir_in(None)
    }

    /// [`SshTarget::temp_dir`] in `base` (a directory there, e.g.
    /// `--load-dir`) instead of the target's TMPDIR.
    pub fn temp_dir_in(&self, base: Option<&str>) -> Result<String, Error> {
        let t = base.map_or_else(|| "\"${TMPDIR:-/tmp}\"".to_string(), quote);
        let script = format!(
            "t={t}; for o in \"$t\"/latprobe.*/owner; do [ -f \"$o\" ] && [ -O \"$o\" ] && \
             printf 'latprobe-left\\t%s\\t%s\\n' \"${{o%/owner}}\" \"$(head -c 200 \"$o\" | tr -d '\\n\\t')\"; done; \
             d=$(mktemp -d \"$t/latprobe.XXXXXX\") || exit 1; printf '%s\\n' {} > \"$d/owner\" || exit 1; \
             printf 'latprobe-dir\\t%s\\n' \"$d\"",
            quote(&owner_mark())
        );
        let out = self.run_framed(&script, None)?;
        let text = String::from_utf8_lossy(&out.stdout);
        let dir = text.lines().find_map(|l| l.strip_prefix("latprobe-dir\t")).unwrap_or_default().to_string();
        if !out.status.success() || !dir.starts_with('/') {
            return Err(Error::Target(format!(
                "--target {}: cannot make a temporary directory {}there ({})",
                self.url(),
                base.map_or_else(String::new, |b| format!("in {} (--load-dir) ", crate::out::clean(b))),
                crate::out::clean(String::from_utf8_lossy(&out.stderr).trim())
            )));
        }
        let left: Vec<(&str, u32)> = text
            .lines()
            .filter_map(|l| l.strip_prefix("latprobe-left\t")?.split_once('\t'))
            .filter(|(d, _)| *d != dir && leftover_dir(d))
            .filter_map(|(d, mark)| Some((d, dead_owner(mark)?)))
            .collect();
        if !left.is_empty() {
            let words: Vec<String> = left.iter().map(|(d, _)| quote(d)).collect();
            let removed = self.run(&format!("rm -rf -- {}", words.join(" ")), None);
            if removed.is_ok_and(|o| o.status.success()) {
                for (d, pid) in left {
                    crate::stderr_line!(
                        "latprobe: removed {} on {}: left by a latprobe run (pid {pid}) that ended without \
                         cleaning up",
                        crate::out::clean(d),
                        self.url()
                    );
                }
            }
        }
        Ok(dir)
    }

    /// The room of each of `dirs`' filesystems on the target (`df -Pk`),
    /// `None` for one it cannot tell.
    pub fn rooms(&self, dirs: &[&str]) -> Result<Vec<Option<super::space::Room>>, Error> {
        let script: Vec<String> = dirs
            .iter()
            .enumerate()
            .map(|(i, d)| {
                format!("printf 'latprobe-df{i}\\t%s\\n' \"$(df -Pk {} 2>/dev/null | tail -n 1)\"", quote(d))
            })
            .collect();
        let out = self.run_framed(&script.join("; "), None)?;
        let text = String::from_utf8_lossy(&out.stdout);
        Ok((0..dirs.len())
            .map(|i| {
                let tag = format!("latprobe-df{i}\t");
                text.lines().find_map(|l| l.strip_prefix(&tag)).and_then(super::space::parse_df)
            })
            .collect())
    }

    /// The bytes of `path` on the target, `None` when it is not there.
    pub fn fetch(&self, path: &str) -> Result<Option<Vec<u8>>, Error> {
        let out = self.run_framed(&format!("cat {}", quote(path)), None)?;
        Ok(out.status.success().then_some(out.stdout))
    }

    /// Copy `path` on the target into `out` as a stream, in bounded pieces
    /// (a log of a day's cycles is never held in memory): how many bytes
    /// came, `None` when it is not there.
    pub fn fetch_into(&self, path: &str, out: &mut dyn std::io::Write) -> Result<Option<u64>, Error> {
        let mut c = self.command(&format!("printf '%s\\n' {FRAME}; cat {}", quote(path)));
        c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = c.spawn().map_err(|e| self.no_client(e))?;
        let stderr = child.stderr.take().map(|mut e| {
            std::thread::spawn(move || {
                let mut said = Vec::new();
                let _ = std::io::Read::read_to_end(&mut std::io::Read::take(&mut e, 64 * 1024), &mut said);
                let _ = std::io::copy(&mut e, &mut std::io::sink());
                said
            })
        });
        let copied = match child.stdout.take() {
            Some(stdout) => copy_unframed(stdout, out),
            None => Ok(None),
        };
        let status = child.wait().map_err(|e| Error::io(format!("ssh to {}", self.url()), e))?;
        let said = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
        if status.code() == Some(255) {
            return Err(self.failure(&String::from_utf8_lossy(&said)));
        }
        let copied = copied.map_err(|e| Error::io(format!("cannot copy {path} from {}", self.url()), e))?;
        Ok(copied.filter(|_| status.success()))
    }

    /// Remove `dir` (one of [`SshTarget::temp_dir`]'s) on the target; best effort.
    pub fn remove_dir(&self, dir: &str) {
        if leftover_dir(dir) {
            let _ = self.run(&format!("rm -rf {}", quote(dir)), None);
        }
    }
}

/// `--ssh-config FILE` must be a regular file (ssh reads it; a FIFO would
/// hang it, a device never end) of at most the input cap, or `/dev/null`
/// (ssh's own way to say "no config").
fn check_config(c: &Path) -> Result<(), Error> {
    let fail = |why: String| Error::Input(format!("--ssh-config {}: {why}", c.display()));
    if c == Path::new("/dev/null") {
        return Ok(());
    }
    if !c.exists() {
        return Err(fail("no such file".into()));
    }
    crate::input::check_regular(c).map_err(|e| fail(format!("cannot read it: {e}")))?;
    if std::fs::metadata(c).is_ok_and(|m| m.len() > crate::input::MAX_INPUT_BYTES) {
        return Err(fail(format!("longer than {}: not an ssh config file", crate::input::cap_text())));
    }
    Ok(())
}

/// The line a framed remote command prints before its own output
/// ([`SshTarget::run_framed`]).
const FRAME: &str = "latprobe-output-begins-8d1f";

/// What follows the first [`FRAME`] line; nothing if it never came (the
/// command did not run).
fn unframe(stdout: &[u8]) -> &[u8] {
    let marker = format!("{FRAME}\n");
    stdout
        .windows(marker.len())
        .position(|w| w == marker.as_bytes())
        .map_or(&[], |i| &stdout[i + marker.len()..])
}

/// Copy what follows the first [`FRAME`] line of `from` into `to`, 64 KiB
/// at a time (a login banner before it is dropped, and at most 64 KiB of
/// it is held): the bytes copied, `None` if the frame never came.
fn copy_unframed(from: impl std::io::Read, to: &mut dyn std::io::Write) -> std::io::Result<Option<u64>> {
    use std::io::BufRead as _;
    let mut r = std::io::BufReader::with_capacity(64 * 1024, from);
    let mut line = Vec::new();
    loop {
        line.clear();
        // A banner line longer than 64 KiB is read in pieces, never whole.
        let n = std::io::Read::take(&mut r, 64 * 1024).read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(None);
        }
        if line == format!("{FRAME}\n").as_bytes() {
            break;
        }
    }
    let mut total = 0u64;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(Some(total));
        }
        to.write_all(buf)?;
        let n = buf.len();
        total += n as u64;
        r.consume(n);
    }
}

/// A run directory of [`SshTarget::temp_dir`]'s making: absolute, named
/// `latprobe.XXXXXX`.
fn leftover_dir(dir: &str) -> bool {
    dir.starts_with('/')
        && !dir.contains("/../")
        && Path::new(dir).file_name().is_some_and(|n| n.to_string_lossy().starts_with("latprobe."))
}

/// This machine and process, as a run directory's `owner` file records
/// them: `host=ID pid=N start=T` (the machine's id, or its name; the
/// process's start time in clock ticks after boot, so that a reused pid is
/// not taken for it).
pub fn owner_mark() -> String {
    let pid = std::process::id();
    format!("host={} pid={pid} start={}", machine_id(), start_time(pid).unwrap_or(0))
}

/// `/etc/machine-id`, else the host name: letters and digits only.
fn machine_id() -> String {
    let read =
        |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let id = read("/etc/machine-id").or_else(|| read("/proc/sys/kernel/hostname")).unwrap_or_default();
    id.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')).collect()
}

/// A process's start time (field 22 of `/proc/PID/stat`), `None` when it
/// is not running.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// The pid of the latprobe process of this machine that made a directory
/// whose `owner` file says `mark`, if it has ended; `None` for another
/// machine's, a running one's, or a mark not understood.
fn dead_owner(mark: &str) -> Option<u32> {
    let field = |k: &str| mark.split_whitespace().find_map(|w| w.strip_prefix(k));
    if field("host=")? != machine_id() {
        return None;
    }
    let pid: u32 = field("pid=")?.parse().ok()?;
    let start: u64 = field("start=")?.parse().ok()?;
    (start_time(pid) != Some(start)).then_some(pid)
}

/// `word` as one POSIX shell word. A word starting `"$HOME"/` keeps that
/// prefix unquoted-expandable (it is [`SshTarget::install`]'s own path).
pub fn quote(word: &str) -> String {
    if let Some(rest) = word.strip_prefix("\"$HOME\"/") {
        return format!("\"$HOME\"/{}", quote(rest));
    }
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b)) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// The responder for a target CPU (`uname -m`): this machine's own for its
/// own CPU (`local`), else the one of an unpacked release bundle
/// (`lib/latprobe/responder/<cpu>/` beside `bin/latprobe`, scripts/dist),
/// else a cross-built one in the workspace's `target/<triple>/release/`
/// (scripts/test builds them), searched upwards from this executable.
pub fn responder_for(machine: &str, local: Option<&Path>) -> Result<PathBuf, Error> {
    let triple = match machine {
        "aarch64" | "arm64" => "aarch64-unknown-linux-gnu",
        m if m.starts_with("armv7") || m == "armv8l" => "armv7-unknown-linux-gnueabihf",
        m if m == std::env::consts::ARCH => {
            return local.map(Path::to_path_buf).ok_or_else(|| {
                Error::Input(format!(
                    "--target-install: no {RESPONDER} for this machine's CPU: build it \
                     (`cargo build --release -p latprobe-responder`) or give --responder PATH"
                ))
            });
        }
        other => {
            return Err(Error::Target(format!(
                "--target-install: latprobe has no responder build for a {other} target: build one for it \
                 and give --target-responder PATH"
            )))
        }
    };
    let exe = std::env::current_exe().ok();
    // An unpacked release bundle (scripts/dist): bin/latprobe beside
    // lib/latprobe/responder/CPU/latprobe-responder, CPU as in the triple.
    let cpu = triple.split('-').next().unwrap_or(triple);
    let bundled = exe
        .as_deref()
        .and_then(|e| e.parent()?.parent())
        .map(|root| root.join("lib/latprobe/responder").join(cpu).join(RESPONDER));
    if let Some(p) = bundled.filter(|p| p.is_file()) {
        return Ok(p);
    }
    let found = exe.iter().flat_map(|e| e.ancestors().skip(1)).find_map(|d| {
        let p = d.join(triple).join("release").join(RESPONDER);
        p.is_file().then_some(p)
    });
    found.ok_or_else(|| {
        Error::Input(format!(
            "--target-install: no {RESPONDER} built for {triple}: build it with `cargo build --release \
             -p latprobe-responder --target {triple}`"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_user_port_and_v6_and_print_back() {
        let t = SshTarget::parse("ssh://root@10.0.0.2:2222", None).unwrap();
        assert_eq!((t.user.as_deref(), t.host.as_str(), t.port), (Some("root"), "10.0.0.2", Some(2222)));
        assert_eq!(t.url(), "ssh://root@10.0.0.2:2222");
        let t = SshTarget::parse("ssh://board", None).unwrap();
        assert_eq!((t.user, t.host.as_str(), t.port), (None, "board", None));
        let t = SshTarget::parse("ssh://[fe80::1]:22", None).unwrap();
        assert_eq!((t.host.as_str(), t.port), ("fe80::1", Some(22)));
        assert_eq!(t.url(), "ssh://[fe80::1]:22");
        for bad in ["board", "ssh://", "ssh://@h", "ssh://h:0", "ssh://h:x", "ssh://h:70000", "tcp://h"] {
            let e = SshTarget::parse(bad, None).unwrap_err().to_string();
            assert!(e.contains("--target") && e.contains("ssh://[user@]host[:port]"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_command_is_batch_mode_with_timeouts_and_one_remote_word() {
        let t = SshTarget::parse("ssh://u@h:2", Some(Path::new("/dev/null"))).unwrap();
        let c = t.command("echo 'a b'");
        let args: Vec<String> = c.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(&args[..2], ["-F", "/dev/null"]);
        assert!(args.contains(&"BatchMode=yes".to_string()));
        assert!(args.iter().any(|a| a.starts_with("ConnectTimeout=")));
        assert_eq!(args[args.len() - 7..], ["-p", "2", "-l", "u", "--", "h", "echo 'a b'"]);
    }

    /// issue 43 (6): `ssh://-oProxyCommand=…` reached ssh as an option.
    #[test]
    fn a_host_or_user_that_looks_like_an_option_is_refused() {
        for bad in
            ["ssh://-oProxyCommand=touch${IFS}x", "ssh://u@-oProxyCommand=x", "ssh://-l@h", "ssh://[-x]:22"]
        {
            let e = SshTarget::parse(bad, None).unwrap_err().to_string();
            assert!(e.contains("cannot begin with '-'") && e.contains("--target"), "{bad}: {e}");
        }
        assert!(SshTarget::parse("ssh://u-1@h-1", None).is_ok());
    }

    #[test]
    fn a_directory_is_left_over_when_its_owner_on_this_machine_has_ended() {
        let me = owner_mark();
        assert_eq!(dead_owner(&me), None, "this process is running: {me}");
        let host = machine_id();
        // A pid that does not run (beyond the kernel's pid_max).
        assert_eq!(dead_owner(&format!("host={host} pid=4194305 start=1")), Some(4194305));
        // This pid, started at another time: a reused pid, the owner is gone.
        let pid = std::process::id();
        assert_eq!(dead_owner(&format!("host={host} pid={pid} start=1")), Some(pid));
        assert_eq!(dead_owner("host=another-machine pid=4194305 start=1"), None);
        assert_eq!(dead_owner("garbage"), None);
        assert!(leftover_dir("/tmp/latprobe.a1B2c3"));
        for bad in ["/", "/tmp", "tmp/latprobe.x", "/tmp/latprobe.x/../..", "/tmp/other"] {
            assert!(!leftover_dir(bad), "{bad}");
        }
        assert_eq!(unframe(format!("Welcome!\n{FRAME}\nx86_64\n").as_bytes()), b"x86_64\n");
        assert_eq!(unframe(b"no marker"), b"");
    }

    /// A reader that hands out at most `piece` bytes a read, and fails if
    /// asked to fill more than 64 KiB at once (bounded pieces, never whole).
    struct Pieces {
        data: Vec<u8>,
        at: usize,
        piece: usize,
    }

    impl std::io::Read for Pieces {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            assert!(buf.len() <= 64 * 1024, "asked for {} bytes at once", buf.len());
            let n = buf.len().min(self.piece).min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn a_fetch_drops_the_banner_and_streams_the_rest_in_pieces() {
        let body: Vec<u8> = (0..300_000u32).flat_map(|i| format!("{i} 5123\n").into_bytes()).collect();
        for piece in [1, 7, 4096, 1 << 20] {
            let mut data = b"Welcome to the board\nlast login: never\n".to_vec();
            data.extend(format!("{FRAME}\n").as_bytes());
            data.extend(&body);
            let mut out = Vec::new();
            let got = copy_unframed(Pieces { data, at: 0, piece }, &mut out).unwrap();
            assert_eq!(got, Some(body.len() as u64));
            assert!(out == body, "piece {piece}: the body differs");
        }
        // No frame: the command never ran; nothing is taken for the file.
        let mut out = Vec::new();
        let none = copy_unframed(Pieces { data: b"banner\n".to_vec(), at: 0, piece: 3 }, &mut out).unwrap();
        assert_eq!((none, out.len()), (None, 0));
    }

    #[test]
    fn words_are_quoted_for_the_remote_shell() {
        assert_eq!(quote("/dev/ttyS1"), "/dev/ttyS1");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("$(reboot)"), "'$(reboot)'");
        assert_eq!(quote("\"$HOME\"/.cache/x y"), "\"$HOME\"/'.cache/x y'");
    }

    #[test]
    fn ssh_failures_name_the_host_and_what_to_try() {
        let t = SshTarget::parse("ssh://root@board:22", None).unwrap();
        let e = |s: &str| t.failure(s).to_string();
        assert!(e("root@board: Permission denied (publickey).").contains("refused the key"));
        assert!(
            e("ssh: connect to host board port 22: Connection refused").contains("cannot reach the target")
        );
        assert!(e("Host key verification failed.").contains("host key"));
        assert!(
            e("ssh: Could not resolve hostname board: Name or service not known").contains("no such host")
        );
        assert!(e("").contains("said nothing"));
        for m in ["x", "Permission denied", "Connection refused"] {
            assert!(e(m).starts_with("--target ssh://root@board:22: "), "{}", e(m));
        }
    }
}
