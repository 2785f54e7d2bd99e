//! The QEMU bench: the real `qemu` firmware ELF in `qemu-system-arm`, the real
//! responder behind a pty, the real `latprobe`, each a child process that a
//! guard kills when the test ends, however it ends.
//!
//! ```text
//!  latprobe run ──unix:host.sock──────────────┐        ┌── target.sock ── socat ── target.pty ── latprobe-responder
//!    (or host.pty ── socat ── host.sock)      ▼        ▼
//!                                   qemu-system-arm -machine netduinoplus2
//!                                      USART1 = host link   USART2 = target line
//!                                      stdout = defmt frames (semihosting) ──▶ defmt.bin ──▶ defmt-decoder
//! ```
//!
//! QEMU waits for a client on each socket in command-line order, the target
//! line's first, so the responder is in place before the host link connects
//! and a run can start.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use latprobe_protocol::{
    decode_message, encode_message, Capabilities, ErrorCode, Feed, FrameDecoder, Heartbeat, HostMsg,
    ProbeMsg, Sample, Stopped, MAX_FRAME_LEN,
};
use latprobe_tests::firmware;

/// What to tell a user whose machine lacks the emulator.
pub const INSTALL_HINT: &str = "install it: apt-get install qemu-system-arm socat";

/// Longest a whole QEMU session may live: `timeout` ends it after that even
/// if this process dies without running its guards.
const QEMU_LIFETIME_S: u32 = 300;

/// The QEMU tests run one at a time: each is timing-sensitive (emulated
/// time against the real responder) and the machine has two cores.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Built artifacts the tests run.
#[derive(Debug)]
pub struct Artifacts {
    /// The `qemu` board's ELF (`--profile firmware`).
    pub elf: PathBuf,
    /// The host CLI.
    pub latprobe: PathBuf,
    /// The target-side responder.
    pub responder: PathBuf,
}

fn on_path(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(tool)).find(|p| p.is_file())
}

/// Check the tools and build the binaries, once per test process. A missing
/// `qemu-system-arm` or `socat` fails the test: these tests never pass by
/// being skipped.
pub fn artifacts() -> &'static Artifacts {
    static ARTIFACTS: OnceLock<Artifacts> = OnceLock::new();
    ARTIFACTS.get_or_init(|| {
        for tool in ["qemu-system-arm", "socat", "timeout"] {
            assert!(on_path(tool).is_some(), "{tool} not found on PATH: {INSTALL_HINT}");
        }
        firmware::cargo_build(&["-p", "latprobe", "-p", "latprobe-responder"]);
        let target_dir = firmware::target_dir();
        let a = Artifacts {
            elf: firmware::elf("qemu"),
            latprobe: target_dir.join("debug/latprobe"),
            responder: target_dir.join("debug/latprobe-responder"),
        };
        for p in [&a.elf, &a.latprobe, &a.responder] {
            assert!(p.is_file(), "{} was not built", p.display());
        }
        a
    })
}

/// A child process killed (with its process group, if it leads one) and
/// reaped when dropped.
#[derive(Debug)]
pub struct Proc {
    name: String,
    child: Child,
    group: bool,
}

impl Proc {
    fn spawn(name: &str, cmd: &mut Command, group: bool) -> Proc {
        if group {
            cmd.process_group(0);
        }
        let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc { name: name.to_string(), child, group }
    }

    /// Its exit status, if it has ended.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Wait up to `limit` for it to end; `None` if it is still running.
    pub fn wait_for(&mut self, limit: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + limit;
        loop {
            if let Some(s) = self.try_wait() {
                return Some(s);
            }
            if Instant::now() >= until {
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Ask it to end (SIGTERM), as a user's Ctrl-C would.
    pub fn terminate(&mut self) {
        if self.try_wait().is_none() {
            signal(self.child.id(), "-TERM", self.group);
        }
    }
}

fn signal(pid: u32, sig: &str, group: bool) {
    let target = if group { format!("-{pid}") } else { pid.to_string() };
    let _ = Command::new("kill").args([sig, "--", &target]).stderr(Stdio::null()).status();
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.try_wait().is_none() {
            // SIGTERM first: `timeout` passes it on to QEMU and reaps it, so
            // no orphan is left; SIGKILL for whatever does not end.
            self.terminate();
            if self.wait_for(Duration::from_secs(3)).is_none() {
                eprintln!("{} did not end on SIGTERM: killing it", self.name);
                signal(self.child.id(), "-KILL", self.group);
                let _ = self.child.kill();
            }
        }
        let _ = self.child.wait();
    }
}

/// A thread that reads a socket and throws the bytes away until stopped:
/// QEMU's guest blocks on a UART nobody drains.
#[derive(Debug)]
pub struct Drain {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<u64>>,
}

impl Drain {
    /// Connect to `sock` and drain it.
    pub fn connect(sock: &Path) -> Drain {
        let mut s = connect(sock);
        s.set_read_timeout(Some(Duration::from_millis(50))).expect("read timeout");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = thread::spawn(move || {
            let mut total = 0u64;
            let mut buf = [0u8; 1024];
            while !flag.load(Ordering::Relaxed) {
                match s.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => total += n as u64,
                    Err(_) => {}
                }
            }
            total
        });
        Drain { stop, handle: Some(handle) }
    }

    /// Stop draining; the number of bytes thrown away.
    pub fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().map_or(0, |h| h.join().unwrap_or(0))
    }
}

impl Drop for Drain {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A target that echoes every byte in order, like a tty, but slowly: every
/// `every`-th byte is held `delay` before it goes back, and the bytes
/// behind it queue up (none overtakes another). Records the bytes it saw.
pub struct SlowEcho {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Vec<u8>>>,
}

impl SlowEcho {
    /// Connect to the target line's socket `sock` and start echoing.
    pub fn connect(sock: &Path, every: usize, delay: Duration) -> SlowEcho {
        let mut s = connect(sock);
        s.set_read_timeout(Some(Duration::from_micros(200))).expect("read timeout");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = thread::spawn(move || {
            let mut seen = Vec::new();
            let mut queue: std::collections::VecDeque<(std::time::Instant, u8)> = Default::default();
            let mut buf = [0u8; 256];
            while !flag.load(Ordering::Relaxed) {
                match s.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        for &b in &buf[..n] {
                            seen.push(b);
                            let hold = if seen.len() % every == 0 { delay } else { Duration::ZERO };
                            let due = std::time::Instant::now() + hold;
                            let due = queue.back().map_or(due, |&(last, _)| due.max(last));
                            queue.push_back((due, b));
                        }
                    }
                    Err(_) => {}
                }
                let now = std::time::Instant::now();
                while queue.front().is_some_and(|&(due, _)| due <= now) {
                    let (_, b) = queue.pop_front().unwrap();
                    if s.write_all(&[b]).is_err() {
                        return seen;
                    }
                }
            }
            seen
        });
        SlowEcho { stop, handle: Some(handle) }
    }

    /// Stop echoing; the bytes the target saw.
    pub fn stop(mut self) -> Vec<u8> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().map_or_else(Vec::new, |h| h.join().unwrap_or_default())
    }
}

impl Drop for SlowEcho {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Connect to a unix socket, retrying while its server is not up yet.
pub fn connect(sock: &Path) -> UnixStream {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        match UnixStream::connect(sock) {
            Ok(s) => return s,
            Err(e) if Instant::now() >= until => panic!("cannot connect to {}: {e}", sock.display()),
            Err(_) => thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn wait_for_path(p: &Path, what: &str) {
    let until = Instant::now() + Duration::from_secs(20);
    while !p.exists() {
        assert!(Instant::now() < until, "{what}: {} never appeared", p.display());
        thread::sleep(Duration::from_millis(20));
    }
}

/// One QEMU session and everything around it, in a temporary folder.
#[derive(Debug)]
pub struct Bench {
    /// Sockets, ptys, logs and reports.
    pub dir: tempfile::TempDir,
    qemu: Proc,
    others: Vec<Proc>,
}

impl Bench {
    /// Start the firmware in QEMU, waiting for its sockets.
    pub fn start() -> Bench {
        Bench::start_with(&[])
    }

    /// [`Bench::start`] with more QEMU arguments (`-d exec,nochain,in_asm
    /// -D FILE`: the instruction profile of the throughput figure).
    pub fn start_with(extra: &[&str]) -> Bench {
        let a = artifacts();
        let dir = tempfile::Builder::new().prefix("latprobe-qemu-").tempdir().expect("temp dir");
        let d = dir.path();
        let mut cmd = Command::new("timeout");
        cmd.args(["--kill-after=5", &QEMU_LIFETIME_S.to_string(), "qemu-system-arm"])
            .args(["-machine", "netduinoplus2", "-display", "none", "-monitor", "none"])
            // QMP, for the fault suite's probe reset (system_reset); never
            // waited for.
            .arg("-qmp")
            .arg(format!("unix:{},server=on,wait=off", d.join("qmp.sock").display()))
            // Deterministic virtual time: one instruction per ns.
            .args(["-icount", "shift=0"])
            .args(["-semihosting-config", "enable=on,target=native"])
            .arg("-chardev")
            .arg(format!("socket,id=target,path={},server=on,wait=on", d.join("target.sock").display()))
            .arg("-chardev")
            .arg(format!("socket,id=host,path={},server=on,wait=on", d.join("host.sock").display()))
            // First -serial is USART1 (host link), second USART2 (target line).
            .args(["-serial", "chardev:host", "-serial", "chardev:target", "-kernel"])
            .arg(&a.elf)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(File::create(d.join("defmt.bin")).expect("defmt.bin"))
            .stderr(File::create(d.join("qemu.err")).expect("qemu.err"));
        let qemu = Proc::spawn("qemu-system-arm", &mut cmd, true);
        let bench = Bench { dir, qemu, others: Vec::new() };
        wait_for_path(&bench.target_sock(), "QEMU's target-line socket");
        bench
    }

    /// QEMU's socket for USART1, the host link.
    pub fn host_sock(&self) -> PathBuf {
        self.dir.path().join("host.sock")
    }

    /// QEMU's socket for USART2, the target line.
    pub fn target_sock(&self) -> PathBuf {
        self.dir.path().join("target.sock")
    }

    /// Bridge a socket to a pty with socat: a program opens the pty as a
    /// real tty. Returns the pty's path.
    pub fn pty_bridge(&mut self, sock: &Path, name: &str) -> PathBuf {
        // QEMU makes a socket only once the one before it has a client.
        wait_for_path(sock, "QEMU's socket");
        let link = self.dir.path().join(format!("{name}.pty"));
        let mut cmd = Command::new("socat");
        cmd.arg(format!("pty,link={},rawer", link.display()))
            .arg(format!("unix-connect:{}", sock.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(self.log(&format!("socat-{name}.err")));
        self.others.push(Proc::spawn("socat", &mut cmd, false));
        wait_for_path(&link, "socat's pty");
        link
    }

    /// Start `latprobe-responder` with `args` on the target line, through a
    /// pty, and wait until it says it is ready.
    pub fn responder(&mut self, args: &[&str]) {
        let target = self.target_sock();
        let pty = self.pty_bridge(&target, "target");
        let err = self.dir.path().join("responder.err");
        let mut cmd = Command::new(&artifacts().responder);
        cmd.arg(args[0])
            .arg("--device")
            .arg(&pty)
            .args(&args[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&err).expect("responder.err"));
        self.others.push(Proc::spawn("latprobe-responder", &mut cmd, false));
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let text = std::fs::read_to_string(&err).unwrap_or_default();
            if text.contains("ready") {
                break;
            }
            assert!(Instant::now() < until, "the responder never got ready:\n{text}");
            thread::sleep(Duration::from_millis(20));
        }
    }

    fn log(&self, name: &str) -> File {
        File::create(self.dir.path().join(name)).expect("log file")
    }

    /// Run `latprobe` with `args` (the port included) to its end, at most
    /// `limit`; a run still going then is a hang and fails the test.
    pub fn latprobe(&self, args: &[&str], limit: Duration) -> Outcome {
        // The host link's socket appears once the target line has a client.
        wait_for_path(&self.host_sock(), "QEMU's host-link socket");
        let out = self.dir.path().join("latprobe.out");
        let err = self.dir.path().join("latprobe.err");
        let mut cmd = Command::new(&artifacts().latprobe);
        cmd.args(args)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(File::create(&out).expect("latprobe.out"))
            .stderr(File::create(&err).expect("latprobe.err"));
        let mut p = Proc::spawn("latprobe", &mut cmd, false);
        let started = Instant::now();
        let status = p.wait_for(limit);
        let elapsed = started.elapsed();
        let stdout = std::fs::read_to_string(&out).unwrap_or_default();
        let stderr = std::fs::read_to_string(&err).unwrap_or_default();
        let Some(status) = status else {
            drop(p);
            panic!(
                "latprobe {args:?} still running after {limit:?}: a hang\n--- stdout\n{stdout}--- stderr\n{stderr}{}",
                self.diagnostics()
            );
        };
        Outcome { status, stdout, stderr, elapsed }
    }

    /// Send one QMP command (`system_reset`, say) and return QEMU's answer.
    #[allow(dead_code)] // the link fault suite's (tests/faults_link.rs)
    pub fn qmp(&self, command: &str) -> String {
        let mut s = connect(&self.dir.path().join("qmp.sock"));
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("read timeout");
        let line = |s: &mut UnixStream| {
            let mut out = Vec::new();
            let mut b = [0u8; 1];
            while s.read(&mut b).map(|n| n == 1).unwrap_or(false) {
                if b[0] == b'\n' {
                    break;
                }
                out.push(b[0]);
            }
            String::from_utf8_lossy(&out).into_owned()
        };
        let _greeting = line(&mut s);
        s.write_all(b"{\"execute\": \"qmp_capabilities\"}\n").expect("qmp");
        let _ = line(&mut s);
        s.write_all(format!("{{\"execute\": \"{command}\"}}\n").as_bytes()).expect("qmp");
        // Events may come before the answer.
        loop {
            let l = line(&mut s);
            if l.is_empty() || l.contains("\"return\"") || l.contains("\"error\"") {
                return l;
            }
        }
    }

    /// Kill QEMU outright (SIGKILL), as a crash would.
    #[allow(dead_code)] // the link fault suite's (tests/faults_link.rs)
    pub fn kill_qemu(&mut self) {
        signal(self.qemu.child.id(), "-KILL", true);
        let _ = self.qemu.wait_for(Duration::from_secs(5));
    }

    /// Whether QEMU is still running (it never ends by itself: a firmware
    /// panic or hard fault ends it through semihosting).
    pub fn qemu_alive(&mut self) -> bool {
        self.qemu.try_wait().is_none()
    }

    /// End QEMU (and with it the sockets) and decode the defmt log.
    pub fn stop_and_read_log(&mut self) -> Vec<String> {
        for p in &mut self.others {
            p.terminate();
        }
        self.qemu.terminate();
        let _ = self.qemu.wait_for(Duration::from_secs(10));
        decode_defmt(&artifacts().elf, &self.dir.path().join("defmt.bin"))
    }

    /// The children's logs, for a failure message.
    pub fn diagnostics(&self) -> String {
        let mut s = String::new();
        for name in ["qemu.err", "responder.err", "socat-target.err", "socat-host.err"] {
            if let Ok(text) = std::fs::read_to_string(self.dir.path().join(name)) {
                if !text.trim().is_empty() {
                    s.push_str(&format!("\n--- {name}\n{text}"));
                }
            }
        }
        let log = decode_defmt(&artifacts().elf, &self.dir.path().join("defmt.bin"));
        s.push_str(&format!("\n--- firmware defmt log so far\n{}", log.join("\n")));
        s
    }
}

/// What a `latprobe` run left.
#[derive(Debug)]
pub struct Outcome {
    /// Its exit status.
    pub status: ExitStatus,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
    /// Wall-clock time it took.
    pub elapsed: Duration,
}

/// Decode a defmt stream (the firmware's semihosting output) against the
/// ELF's defmt table: one line per log message. An empty or broken log
/// comes back empty, and the caller's assertion names what is missing.
pub fn decode_defmt(elf: &Path, log: &Path) -> Vec<String> {
    let elf_bytes = std::fs::read(elf).unwrap_or_else(|e| panic!("read {}: {e}", elf.display()));
    let table = defmt_decoder::Table::parse(&elf_bytes)
        .unwrap_or_else(|e| panic!("defmt table of {}: {e}", elf.display()))
        .unwrap_or_else(|| panic!("{} has no defmt table", elf.display()));
    let bytes = std::fs::read(log).unwrap_or_default();
    let mut decoder = table.new_stream_decoder();
    decoder.received(&bytes);
    let mut lines = Vec::new();
    loop {
        match decoder.decode() {
            Ok(frame) => lines.push(format!("{}: {}", level(&frame), frame.display_message())),
            Err(defmt_decoder::DecodeError::UnexpectedEof) => break,
            Err(defmt_decoder::DecodeError::Malformed) => {
                lines.push("<malformed defmt frame>".to_string());
                if !table.encoding().can_recover() {
                    break;
                }
            }
        }
    }
    lines
}

fn level(frame: &defmt_decoder::Frame<'_>) -> &'static str {
    frame.level().map_or("print", |l| l.as_str())
}

/// A transparent proxy between a client (`latprobe`) and QEMU's host link
/// that sends `garbage` to the firmware once it has booted and before
/// anything of the client's, and records every byte the firmware sends.
#[derive(Debug)]
pub struct Proxy {
    /// Where the client connects.
    pub sock: PathBuf,
    recorded: Arc<Mutex<Vec<u8>>>,
    handle: Option<JoinHandle<()>>,
}

impl Proxy {
    /// Listen at `sock`; on the first client, connect to `upstream`.
    pub fn start(sock: PathBuf, upstream: PathBuf, garbage: Vec<u8>) -> Proxy {
        let listener = UnixListener::bind(&sock).expect("proxy socket");
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let rec = recorded.clone();
        let rec_wait = recorded.clone();
        let handle = thread::spawn(move || {
            let Ok((client, _)) = listener.accept() else { return };
            let mut up = connect(&upstream);
            let (mut up_r, mut client_w) =
                (up.try_clone().expect("clone"), client.try_clone().expect("clone"));
            // Firmware -> client, recorded.
            let back = thread::spawn(move || {
                let mut buf = [0u8; 4096];
                loop {
                    match up_r.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            rec.lock().expect("record").extend_from_slice(&buf[..n]);
                            if client_w.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                    }
                }
            });
            // QEMU's USART drops what arrives before the firmware enables
            // it: inject once the firmware has spoken (its boot Hello), and
            // only then pass on the client's bytes.
            let until = Instant::now() + Duration::from_secs(20);
            while recorded_len(&rec_wait) == 0 && Instant::now() < until {
                thread::sleep(Duration::from_millis(5));
            }
            up.write_all(&garbage).expect("inject garbage");
            // Client -> firmware.
            let mut client_r = client;
            let mut buf = [0u8; 4096];
            loop {
                match client_r.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if up.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                }
            }
            let _ = up.shutdown(std::net::Shutdown::Both);
            let _ = back.join();
        });
        Proxy { sock, recorded, handle: Some(handle) }
    }

    /// Every byte the firmware sent through the proxy so far.
    pub fn recorded(&self) -> Vec<u8> {
        self.recorded.lock().expect("record").clone()
    }
}

fn recorded_len(r: &Mutex<Vec<u8>>) -> usize {
    r.lock().map_or(0, |v| v.len())
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // The thread ends when either side closes; QEMU's end closes with it.
        if let Some(h) = self.handle.take() {
            if h.is_finished() {
                let _ = h.join();
            }
        }
    }
}

/// What the firmware sent, owned (a `ProbeMsg` borrows its frame).
#[derive(Debug, Clone, PartialEq)]
pub enum Got {
    /// `Hello`: board name, timer rate, capability bits.
    Hello { board: String, timer_hz: u32, capabilities: Capabilities },
    /// `Configured`.
    Configured,
    /// `Started`.
    Started { first_seq: u64 },
    /// `SampleBatch`: every sample decoded.
    Samples(Vec<Sample>),
    /// `EdgeBatch`: the number of edges and the first one's sequence.
    Edges { first_seq: u64, count: u16 },
    /// `Heartbeat`.
    Heartbeat(Heartbeat),
    /// `Stopped`.
    Stopped(Stopped),
    /// `Log`: the probe's log line.
    Log(String),
    /// `Error`.
    Error(ErrorCode),
}

/// The host's end of the link written by hand, to send what `latprobe`
/// never would (garbage, hostile configurations) and check every answer.
#[derive(Debug)]
pub struct Client {
    s: UnixStream,
    decoder: FrameDecoder,
    /// Damaged frames and undecodable messages seen.
    pub bad: u64,
}

impl Client {
    /// Connect to QEMU's host-link socket.
    pub fn connect(sock: &Path) -> Client {
        Client { s: connect(sock), decoder: FrameDecoder::new(), bad: 0 }
    }

    /// Send one message, framed.
    pub fn send(&mut self, msg: &HostMsg) {
        let mut frame = [0u8; MAX_FRAME_LEN];
        let n = encode_message(msg, &mut frame).expect("encode");
        self.send_raw(&frame[..n]);
    }

    /// Send bytes as they are.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).expect("write to the host link");
    }

    /// Every message that arrives within `wait`, or until `until` returns
    /// true for one (included).
    pub fn recv_until(&mut self, wait: Duration, mut until: impl FnMut(&Got) -> bool) -> Vec<Got> {
        let deadline = Instant::now() + wait;
        let mut out = Vec::new();
        let mut buf = [0u8; 1024];
        while Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
            self.s.set_read_timeout(Some(left)).expect("read timeout");
            let n = match self.s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(_) => continue,
            };
            let mut input = &buf[..n];
            let mut done = false;
            loop {
                match self.decoder.feed(input) {
                    Feed::NeedMore => break,
                    Feed::Bad { rest, .. } => {
                        self.bad += 1;
                        input = rest;
                    }
                    Feed::Frame { frame, rest } => {
                        input = rest;
                        match decode_message::<ProbeMsg<'_>>(frame).ok().and_then(|m| owned(&m)) {
                            Some(got) => {
                                done |= until(&got);
                                out.push(got);
                            }
                            None => self.bad += 1,
                        }
                    }
                }
            }
            if done {
                break;
            }
        }
        out
    }
}

fn owned(m: &ProbeMsg<'_>) -> Option<Got> {
    Some(match m {
        ProbeMsg::Hello(i) => {
            Got::Hello { board: i.board.to_string(), timer_hz: i.timer_hz, capabilities: i.capabilities }
        }
        ProbeMsg::Configured(_) => Got::Configured,
        ProbeMsg::Started { first_seq, .. } => Got::Started { first_seq: *first_seq },
        ProbeMsg::SampleBatch(b) => Got::Samples(b.iter().collect::<Result<Vec<_>, _>>().ok()?),
        ProbeMsg::EdgeBatch(b) => Got::Edges { first_seq: b.first_seq, count: b.count },
        ProbeMsg::Heartbeat(h) => Got::Heartbeat(*h),
        ProbeMsg::Stopped(s) => Got::Stopped(*s),
        ProbeMsg::Error(e) => Got::Error(e.code),
        ProbeMsg::Log(l) => Got::Log(l.text.to_string()),
    })
}

/// Decode a recorded byte stream from the firmware into messages.
pub fn decode_stream(bytes: &[u8]) -> (Vec<Got>, u64) {
    let mut decoder: FrameDecoder = FrameDecoder::new();
    let mut out = Vec::new();
    let mut bad = 0;
    let mut input = bytes;
    loop {
        match decoder.feed(input) {
            Feed::NeedMore => break,
            Feed::Bad { rest, .. } => {
                bad += 1;
                input = rest;
            }
            Feed::Frame { frame, rest } => {
                input = rest;
                match decode_message::<ProbeMsg<'_>>(frame).ok().and_then(|m| owned(&m)) {
                    Some(g) => out.push(g),
                    None => bad += 1,
                }
            }
        }
    }
    (out, bad)
}
