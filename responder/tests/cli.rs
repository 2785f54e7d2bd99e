//! End-to-end tests of the built responder over a pseudo-terminal pair: the
//! test holds the master (playing the probe), the responder opens the slave.
//!
//! Every read has a deadline, so a broken responder fails a test rather than
//! hanging it, and every child is killed if a test panics.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_latprobe-responder");

/// A pty pair ([`common::open_pty`]).
struct Pty {
    master: Option<OwnedFd>,
    slave: PathBuf,
}

impl Pty {
    fn new() -> Pty {
        let (master, slave) = common::open_pty();
        Pty { master: Some(master), slave }
    }

    fn fd(&self) -> i32 {
        self.master.as_ref().expect("master is open").as_raw_fd()
    }

    fn slave_str(&self) -> &str {
        self.slave.to_str().expect("UTF-8")
    }

    /// The slave's termios: on Linux, mode ioctls on a pty master act on its slave.
    fn slave_termios(&self) -> libc::termios {
        // SAFETY: termios is plain data; all-zero is valid.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: `t` is valid for writes and the fd is open.
        assert_eq!(unsafe { libc::tcgetattr(self.fd(), &mut t) }, 0, "tcgetattr");
        t
    }

    fn write(&self, data: &[u8]) {
        // SAFETY: `data` is valid for reads of its length.
        let n = unsafe { libc::write(self.fd(), data.as_ptr().cast(), data.len()) };
        assert_eq!(n, data.len() as isize, "write to pty master");
    }

    /// Reads until `want` bytes arrived or `timeout` passed.
    fn read_until(&self, want: usize, timeout: Duration) -> Vec<u8> {
        let deadline = Instant::now() + timeout;
        let mut got = Vec::new();
        while got.len() < want {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !self.readable(left) {
                break;
            }
            let mut buf = [0u8; 1024];
            // SAFETY: `buf` is valid for writes of its length.
            let n = unsafe { libc::read(self.fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            got.extend_from_slice(&buf[..n as usize]);
        }
        got
    }

    /// Everything that arrives during `window`.
    fn collect_for(&self, window: Duration) -> Vec<u8> {
        self.read_until(usize::MAX, window)
    }

    fn readable(&self, timeout: Duration) -> bool {
        let mut pfd = libc::pollfd { fd: self.fd(), events: libc::POLLIN, revents: 0 };
        let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: `pfd` is one valid pollfd.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        rc > 0 && pfd.revents & libc::POLLIN != 0
    }

    fn close_master(&mut self) {
        self.master = None;
    }
}

/// A running responder with its stderr collected line by line.
struct Responder {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    ready: mpsc::Receiver<()>,
    stdout: Option<JoinHandle<Vec<u8>>>,
}

impl Responder {
    fn spawn(args: &[&str]) -> Responder {
        Self::spawn_cmd(command(args)).expect("spawn responder")
    }

    fn spawn_cmd(mut cmd: Command) -> std::io::Result<Responder> {
        cmd.stdin(Stdio::null());
        Self::spawn_with_stdin(cmd)
    }

    /// [`Responder::spawn_cmd`] with `cmd`'s own stdin (a pipe the test holds).
    fn spawn_with_stdin(mut cmd: Command) -> std::io::Result<Responder> {
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, ready) = mpsc::channel();
        let stderr = child.stderr.take().expect("stderr piped");
        let sink = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if line.contains(": ready: ") {
                    let _ = tx.send(());
                }
                sink.lock().expect("lock").push(line);
            }
        });
        let mut out = child.stdout.take().expect("stdout piped");
        let stdout = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = out.read_to_end(&mut buf);
            buf
        });
        Ok(Responder { child, lines, ready, stdout: Some(stdout) })
    }

    fn stderr(&self) -> Vec<String> {
        self.lines.lock().expect("lock").clone()
    }

    /// Waits for the "ready" line, which the responder prints once the line
    /// is raw: bytes written earlier would meet the pty's cooked defaults.
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.ready.recv_timeout(Duration::from_millis(50)).is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                std::thread::sleep(Duration::from_millis(50));
                panic!("responder exited with {status} before ready; stderr: {:?}", self.stderr());
            }
        }
        panic!("responder not ready in 10 s; stderr: {:?}", self.stderr());
    }

    fn signal(&self, signal: i32) {
        // SAFETY: kill has no memory effects; the pid is our live child.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, signal) }, 0);
    }

    fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                // Let the reader thread take the last stderr lines.
                std::thread::sleep(Duration::from_millis(50));
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("responder still running {within:?} later; stderr: {:?}", self.stderr());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stdout, complete once the process has exited.
    fn stdout(&mut self) -> Vec<u8> {
        self.stdout.take().expect("stdout taken once").join().expect("stdout thread")
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    cmd
}

fn run(args: &[&str]) -> (ExitStatus, String, String) {
    let out = command(args).stdin(Stdio::null()).output().expect("run responder");
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| {
        panic!("not JSON ({e}): {}", String::from_utf8_lossy(bytes).chars().take(400).collect::<String>())
    })
}

/// `--exit-with-stdin`: while stdin stays open the responder echoes on;
/// when it closes (the host's ssh session ending) it stops as on SIGTERM,
/// restoring the line, and says why. Without the flag a closed stdin
/// changes nothing.
#[test]
fn exit_with_stdin_stops_when_stdin_closes_and_not_before() {
    let pty = Pty::new();
    let mut cmd = command(&["uart", "--device", pty.slave_str(), "--exit-with-stdin"]);
    cmd.stdin(Stdio::piped());
    let mut r = Responder::spawn_with_stdin(cmd).expect("spawn");
    let stdin = r.child.stdin.take().expect("stdin piped");
    r.wait_ready();
    std::thread::sleep(Duration::from_millis(300));
    pty.write(b"abc");
    assert_eq!(pty.read_until(3, Duration::from_secs(2)), b"abc", "it echoes while stdin is open");
    assert!(r.child.try_wait().expect("try_wait").is_none(), "{:?}", r.stderr());
    drop(stdin);
    let status = r.wait_exit(Duration::from_secs(2));
    assert_eq!(status.code(), Some(0), "stderr: {:?}", r.stderr());
    assert!(r.stderr().iter().any(|l| l.contains("stdin closing")), "{:?}", r.stderr());
    let after = pty.slave_termios();
    assert_ne!(after.c_lflag & libc::ICANON, 0, "the line's settings are restored");

    // Without the flag, stdin at its end (/dev/null) is no reason to stop.
    let mut r = Responder::spawn(&["uart", "--device", pty.slave_str()]);
    r.wait_ready();
    std::thread::sleep(Duration::from_millis(300));
    assert!(r.child.try_wait().expect("try_wait").is_none(), "{:?}", r.stderr());
    r.signal(libc::SIGTERM);
    assert_eq!(r.wait_exit(Duration::from_secs(2)).code(), Some(0));
}

#[test]
fn echoes_all_256_byte_values_untouched_then_exits_on_sigterm() {
    let pty = Pty::new();
    // The pty starts cooked; if it did not, this test could not tell raw mode
    // from no mode at all.
    let before = pty.slave_termios();
    assert_ne!(before.c_lflag & libc::ICANON, 0);
    assert_ne!(before.c_lflag & libc::ECHO, 0);
    assert_ne!(before.c_lflag & libc::ISIG, 0);
    assert_ne!(before.c_iflag & libc::ICRNL, 0);
    assert_ne!(before.c_iflag & libc::IXON, 0);
    assert_ne!(before.c_oflag & libc::ONLCR, 0);

    let mut r = Responder::spawn(&["uart", "--device", pty.slave_str()]);
    r.wait_ready();

    let all: Vec<u8> = (0..=255u8).collect();
    pty.write(&all);
    let got = pty.read_until(all.len(), Duration::from_secs(3));
    assert_eq!(
        got.len(),
        all.len(),
        "got {} of 256 bytes back; missing values: {:?}",
        got.len(),
        all.iter().filter(|b| !got.contains(b)).collect::<Vec<_>>()
    );
    assert_eq!(got, all, "bytes changed on the way (CR/LF or flow control?)");
    // Nothing extra: a local echo of the line discipline would double bytes.
    let extra = pty.collect_for(Duration::from_millis(200));
    assert!(extra.is_empty(), "unexpected extra bytes: {extra:?}");

    // Twice more, in small writes, to catch a responder that only survives one read.
    for chunk in [b"\r\n\x03\x1a".as_slice(), b"\x11\x13\x7f\x00"] {
        pty.write(chunk);
        assert_eq!(pty.read_until(4, Duration::from_secs(2)), chunk);
    }

    r.signal(libc::SIGTERM);
    let status = r.wait_exit(Duration::from_secs(2));
    assert_eq!(status.code(), Some(0), "stderr: {:?}", r.stderr());
    let stderr = r.stderr();
    assert!(stderr.iter().any(|l| l.contains("echoed 264 bytes")), "summary missing: {stderr:?}");

    let after = pty.slave_termios();
    assert_eq!(after.c_lflag, before.c_lflag, "termios not restored");
    assert_eq!(after.c_iflag, before.c_iflag, "termios not restored");
    assert_eq!(after.c_oflag, before.c_oflag, "termios not restored");
}

#[test]
fn sigint_ends_the_run_too() {
    let pty = Pty::new();
    let mut r = Responder::spawn(&["uart", "--device", pty.slave_str()]);
    r.wait_ready();
    r.signal(libc::SIGINT);
    let status = r.wait_exit(Duration::from_secs(2));
    assert_eq!(status.code(), Some(0), "stderr: {:?}", r.stderr());
    assert!(r.stderr().iter().any(|l| l.contains("echoed 0 bytes")));
}

#[test]
fn exits_cleanly_when_the_line_hangs_up() {
    let mut pty = Pty::new();
    let mut r = Responder::spawn(&["uart", "--device", pty.slave_str()]);
    r.wait_ready();
    pty.write(b"ping");
    assert_eq!(pty.read_until(4, Duration::from_secs(2)), b"ping");
    pty.close_master();
    let status = r.wait_exit(Duration::from_secs(2));
    assert_eq!(status.code(), Some(0), "signal {:?}, stderr: {:?}", status.signal(), r.stderr());
    let stderr = r.stderr();
    assert!(stderr.iter().any(|l| l.contains("hung up") && l.contains("echoed 4 bytes")), "{stderr:?}");
}

#[test]
fn periodic_writes_one_byte_per_period() {
    let pty = Pty::new();
    let mut r = Responder::spawn(&["periodic", "--device", pty.slave_str(), "--period", "10ms"]);
    r.wait_ready();
    let got = pty.collect_for(Duration::from_millis(300));
    // 30 expected; wide bounds for a loaded CI machine, narrow enough to
    // catch a unit error (1 or 300) or a missing sleep (thousands).
    assert!((15..=45).contains(&got.len()), "{} bytes in 300 ms at a 10 ms period", got.len());
    assert!(got.iter().all(|&b| b == 0x55), "default byte is 0x55: {got:?}");

    r.signal(libc::SIGTERM);
    let status = r.wait_exit(Duration::from_secs(2));
    assert_eq!(status.code(), Some(0), "stderr: {:?}", r.stderr());
    assert!(r.stderr().iter().any(|l| l.contains("wrote ") && l.contains(" bytes")), "{:?}", r.stderr());
}

#[test]
fn periodic_logs_its_own_wake_up_latency_per_cycle() {
    let pty = Pty::new();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cycles.log");
    let log_s = log.to_str().unwrap();
    // The argv of `latprobe demo --mode periodic`, exactly.
    let mut r = Responder::spawn(&[
        "periodic",
        "--device",
        pty.slave_str(),
        "--interval",
        "5000000ns",
        "--metadata",
        dir.path().join("m.json").to_str().unwrap(),
        "--log",
        log_s,
    ]);
    r.wait_ready();
    let got = pty.collect_for(Duration::from_millis(200));
    r.signal(libc::SIGTERM);
    let status = r.wait_exit(Duration::from_secs(2));
    assert_eq!(status.code(), Some(0), "stderr: {:?}", r.stderr());
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("# latprobe-responder periodic log 1"));
    assert!(text.contains("# interval_ns 5000000\n"), "{text}");
    assert!(text.contains("# cycle0_monotonic_ns ") && text.contains("# cycle0_realtime_ns "), "{text}");
    let rows: Vec<(u64, u64)> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let mut it = l.split_whitespace().map(|v| v.parse::<u64>().unwrap());
            (it.next().unwrap(), it.next().unwrap())
        })
        .collect();
    // One line per byte written, cycles counted from 0 without a gap.
    assert!(rows.len() >= got.len() && !rows.is_empty(), "{} rows, {} bytes", rows.len(), got.len());
    assert!(rows.iter().enumerate().all(|(i, &(c, _))| c == i as u64), "{rows:?}");
    // Wake-up latencies: positive, and (on any machine) under a period.
    assert!(rows.iter().all(|&(_, l)| l < 5_000_000), "{rows:?}");
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("m.json")).unwrap()).unwrap();
    assert_eq!(meta["run"]["mode"], "periodic");
    assert_eq!(meta["run"]["log"], log_s);
}

#[test]
fn periodic_refuses_an_unwritable_log_and_a_missing_gpio_chip() {
    let pty = Pty::new();
    let out = Command::new(env!("CARGO_BIN_EXE_latprobe-responder"))
        .args([
            "periodic",
            "--device",
            pty.slave_str(),
            "--interval",
            "1ms",
            "--log",
            "/nonexistent/dir/x.log",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("Error: ") && err.contains("--log /nonexistent/dir/x.log"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_latprobe-responder"))
        .args(["periodic", "--gpio", "/nonexistent/gpiochip7:3", "--interval", "1ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/gpiochip7:3") && err.contains("--gpio"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_latprobe-responder"))
        .args(["gpio-echo", "--chip", "/nonexistent/gpiochip7", "--input", "1", "--output", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/gpiochip7:1") && err.contains("--input"), "{err}");
}

#[test]
fn periodic_writes_the_chosen_byte_and_stops_on_hang_up() {
    let mut pty = Pty::new();
    let mut r =
        Responder::spawn(&["periodic", "--device", pty.slave_str(), "--period", "2ms", "--byte", "0xA5"]);
    r.wait_ready();
    let got = pty.read_until(5, Duration::from_secs(2));
    assert_eq!(got, [0xA5; 5]);
    pty.close_master();
    let status = r.wait_exit(Duration::from_secs(2));
    assert_eq!(status.code(), Some(0), "stderr: {:?}", r.stderr());
    assert!(r.stderr().iter().any(|l| l.contains("hung up")), "{:?}", r.stderr());
}

/// The kernel config in the metadata is the one the kernel exposes, read
/// here by zcat and grep (not by the responder's code): every `CONFIG_` line
/// that sets an option, none that "is not set"; and the clock source is sysfs's.
#[test]
fn metadata_carries_the_kernel_config_and_clocksource_as_the_system_reports_them() {
    let (status, stdout, stderr) = run(&["metadata"]);
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    let meta = json(stdout.as_bytes());
    let cs = std::path::Path::new("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    match std::fs::read_to_string(cs) {
        Ok(c) => assert_eq!(meta["clocksource"]["current"], c.trim(), "{}", meta["clocksource"]),
        Err(_) => assert!(meta["clocksource"].is_null(), "{}", meta["clocksource"]),
    }
    let release = meta["uname"]["release"].as_str().expect("release").to_string();
    let (reader, source) = if std::path::Path::new("/proc/config.gz").exists() {
        ("zcat /proc/config.gz".to_string(), "/proc/config.gz".to_string())
    } else if std::path::Path::new(&format!("/boot/config-{release}")).exists() {
        (format!("cat /boot/config-{release}"), format!("/boot/config-{release}"))
    } else {
        eprintln!("skipped: this machine exposes no kernel config (/proc/config.gz, /boot/config-{release})");
        assert!(meta["kernel_config"].is_null(), "{}", meta["kernel_config"]);
        return;
    };
    let out = std::process::Command::new("sh")
        .args(["-c", &format!("{reader} | grep -E '^CONFIG_[A-Za-z0-9_]+='")])
        .output()
        .expect("sh");
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    let kc = &meta["kernel_config"];
    assert_eq!(kc["source"], source.as_str());
    assert_eq!(kc["truncated"], false);
    let options = kc["options"].as_object().expect("options");
    assert_eq!(options.len(), lines.len(), "one entry per CONFIG_ line that sets an option");
    for l in &lines {
        let (k, v) = l.split_once('=').unwrap();
        assert_eq!(options[k], v, "{k}");
    }
    assert!(options.keys().all(|k| k.starts_with("CONFIG_")));
}

/// issue 43 (15): `metadata -o /dev/full` wrote `/dev/full.tmp` and
/// renamed it over the device, exit 0. The test never names the system's
/// /dev/full: it makes its own full device (and FIFO and link) in a
/// temporary directory, so a broken responder replaces only those.
#[test]
fn metadata_output_writes_through_a_device_a_fifo_or_a_link_and_a_full_one_fails() {
    use std::os::unix::fs::FileTypeExt as _;
    let dir = temp_dir("meta-special");
    let full = dir.join("full");
    let c = std::ffi::CString::new(full.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; makedev of the full device.
    if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 7)) } == 0 {
        let (status, _, stderr) = run(&["metadata", "-o", full.to_str().unwrap()]);
        assert_ne!(status.code(), Some(0), "a full device took the metadata: {stderr}");
        assert!(
            stderr.contains("No space left on device") && stderr.contains(full.to_str().unwrap()),
            "{stderr}"
        );
        assert!(
            std::fs::symlink_metadata(&full).unwrap().file_type().is_char_device(),
            "the device was replaced"
        );
    } else {
        eprintln!("device case skipped: mknod needs root");
    }
    // A FIFO: its reader gets the JSON, and it stays a FIFO.
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (tx, rx) = mpsc::channel();
    let f2 = fifo.clone();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::read(&f2).unwrap_or_default());
    });
    let (status, _, stderr) = run(&["metadata", "-o", fifo.to_str().unwrap()]);
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");
    let got = rx.recv_timeout(Duration::from_secs(10)).expect("the FIFO's reader got nothing");
    assert_eq!(json(&got)["schema_version"], 1);
    // A link to a file not there yet: followed, and it stays a link.
    let link = dir.join("link.json");
    std::os::unix::fs::symlink("real.json", &link).unwrap();
    let (status, _, stderr) = run(&["metadata", "-o", link.to_str().unwrap()]);
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    assert_eq!(json(&std::fs::read(dir.join("real.json")).unwrap())["schema_version"], 1);
    let _ = std::fs::remove_dir_all(dir);
}

/// issue 43 (15): stdout on a full device is an error; a reader that goes
/// away (`| head -c 10`) ends the responder quietly.
#[test]
fn metadata_to_a_full_stdout_fails_and_to_a_closed_pipe_ends_quietly() {
    // The system's /dev/full opened for writing only: nothing is renamed.
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let out = command(&["metadata"]).stdin(Stdio::null()).stdout(full).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("stdout") && stderr.contains("No space left on device"), "{stderr}");

    // A pipe whose reader has gone already, as `| head` after it read its fill.
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both are ours, just made, and each is owned once.
    let (reader, writer) = unsafe {
        use std::os::fd::FromRawFd as _;
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    };
    drop(reader);
    let out = command(&["metadata"]).stdin(Stdio::null()).stdout(Stdio::from(writer)).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.is_empty(), "a closed pipe is not an error to print: {stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

#[test]
fn metadata_subcommand_prints_target_facts() {
    let (status, stdout, stderr) = run(&["metadata"]);
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    let meta = json(stdout.as_bytes());
    assert_eq!(meta["schema_version"], 1);
    assert_eq!(meta["uname"]["sysname"], "Linux");
    assert!(meta["uname"]["release"].is_string());
    assert!(meta["loadavg"]["one"].is_number(), "{}", meta["loadavg"]);
    assert!(meta["num_cpus"].as_u64().unwrap_or(0) >= 1);
    assert!(meta["kernel_cmdline"]["raw"].is_string());
    assert!(meta["preemption"].is_object());
    assert!(meta["cpufreq_governors"].is_array());
    assert!(meta["rt_throttling"]["sched_rt_period_us"].is_number());
    assert!(meta["rt"]["requested"]["priority"].is_null());
    assert!(meta["rt"]["achieved"].is_null());
    assert!(meta["run"].is_null());

    let dir = temp_dir("meta-out");
    let file = dir.join("target.json");
    let (status, stdout, stderr) = run(&["metadata", "--output", file.to_str().expect("UTF-8")]);
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    assert!(stdout.is_empty(), "--output must keep stdout empty");
    let meta = json(&std::fs::read(&file).expect("metadata file written"));
    assert_eq!(meta["schema_version"], 1);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn metadata_file_is_written_at_start_of_a_run() {
    let pty = Pty::new();
    let dir = temp_dir("meta-run");
    let file = dir.join("run.json");
    let mut r = Responder::spawn(&[
        "uart",
        "--device",
        pty.slave_str(),
        "--baud",
        "9600",
        "--metadata",
        file.to_str().expect("UTF-8"),
    ]);
    r.wait_ready();
    // Present while the run is still going: the host picks it up at start.
    let meta = json(&std::fs::read(&file).expect("metadata written before ready"));
    assert_eq!(meta["run"]["mode"], "uart");
    assert_eq!(meta["run"]["device"], pty.slave_str());
    assert_eq!(meta["run"]["baud"], 9600);
    assert_eq!(meta["rt"]["requested"]["mlockall"], true);
    assert!(meta["rt"]["achieved"]["mlockall"].is_boolean());
    assert!(meta["rt"]["achieved"]["priority_applied"].is_null());
    r.signal(libc::SIGTERM);
    assert_eq!(r.wait_exit(Duration::from_secs(2)).code(), Some(0));
    let _ = std::fs::remove_dir_all(dir);
}

/// `/proc/PID/stat` fields 40 (rt_priority) and 41 (policy).
fn sched_of(pid: i32) -> (i64, i64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // The command name may hold spaces; fields restart after its ')'.
    let rest = &stat[stat.rfind(')').expect("comm") + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    (fields[40 - 3].parse().expect("rt_priority"), fields[41 - 3].parse().expect("policy"))
}

fn affinity_of(pid: i32) -> Vec<u64> {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is valid for writes of the size passed.
    let rc = unsafe { libc::sched_getaffinity(pid, std::mem::size_of_val(&set), &mut set) };
    assert_eq!(rc, 0, "sched_getaffinity");
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: the index is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .map(|c| c as u64)
        .collect()
}

/// Whatever this machine permits, the run goes on and the metadata says
/// what the kernel really applied, checked from outside the process.
#[test]
fn priority_and_cpu_are_recorded_as_achieved() {
    let pty = Pty::new();
    let mut r = Responder::spawn(&[
        "uart",
        "--device",
        pty.slave_str(),
        "--priority",
        "99",
        "--cpu",
        "0",
        "--metadata",
        "-",
    ]);
    r.wait_ready();
    let (rt_priority, policy) = sched_of(r.pid());
    let affinity = affinity_of(r.pid());
    pty.write(b"x");
    assert_eq!(pty.read_until(1, Duration::from_secs(2)), b"x");
    r.signal(libc::SIGTERM);
    assert_eq!(r.wait_exit(Duration::from_secs(2)).code(), Some(0));
    let stderr = r.stderr();
    let meta = json(&r.stdout());
    let achieved = &meta["rt"]["achieved"];

    assert_eq!(meta["rt"]["requested"]["priority"], 99);
    assert_eq!(meta["rt"]["requested"]["cpu"], 0);
    let applied = achieved["priority_applied"].as_bool().expect("priority_applied is a bool when requested");
    let fifo_warnings = stderr.iter().filter(|l| l.starts_with("warning: SCHED_FIFO 99")).count();
    if applied {
        assert_eq!((policy, rt_priority), (i64::from(libc::SCHED_FIFO), 99));
        assert_eq!(achieved["sched_policy"], "SCHED_FIFO");
        assert_eq!(achieved["sched_priority"], 99);
        assert_eq!(fifo_warnings, 0, "{stderr:?}");
    } else {
        assert_eq!(policy, i64::from(libc::SCHED_OTHER));
        assert_eq!(achieved["sched_policy"], "SCHED_OTHER");
        assert_eq!(fifo_warnings, 1, "one warning line: {stderr:?}");
    }
    let recorded: Vec<u64> =
        achieved["affinity"].as_array().expect("affinity list").iter().filter_map(|v| v.as_u64()).collect();
    assert_eq!(recorded, affinity, "metadata affinity vs the kernel's");
    if achieved["affinity_applied"] == true {
        assert_eq!(affinity, [0]);
    }
}

/// Dropped to an unprivileged user with no rtprio or memlock allowance,
/// every RT request is refused: one warning each, the run still works, and
/// the metadata says so.
#[test]
fn unprivileged_run_warns_once_per_refusal_and_still_echoes() {
    let pty = Pty::new();
    // SAFETY: geteuid has no memory effects.
    let is_root = unsafe { libc::geteuid() } == 0;
    if is_root {
        // grantpt gave the slave to root, mode 0620; nobody must open it.
        std::fs::set_permissions(&pty.slave, std::fs::Permissions::from_mode(0o666)).expect("chmod slave");
    }
    let mut cmd = command(&["uart", "--device", pty.slave_str(), "--priority", "99", "--metadata", "-"]);
    // SAFETY: the closure runs between fork and exec and calls only
    // setrlimit, setgroups, setgid and setuid, which are async-signal-safe
    // system calls; it allocates nothing and touches no locks.
    unsafe {
        cmd.pre_exec(move || {
            let zero = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            for resource in [libc::RLIMIT_RTPRIO, libc::RLIMIT_MEMLOCK] {
                if libc::setrlimit(resource, &zero) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if is_root
                && (libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(65534) != 0
                    || libc::setuid(65534) != 0)
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut r = match Responder::spawn_cmd(cmd) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            eprintln!(
                "SKIPPED unprivileged_run_warns_once_per_refusal_and_still_echoes: \
                 user 65534 cannot execute {BIN}: {e}"
            );
            return;
        }
        Err(e) => panic!("spawn: {e}"),
    };
    r.wait_ready();
    pty.write(b"ok");
    assert_eq!(pty.read_until(2, Duration::from_secs(2)), b"ok");
    r.signal(libc::SIGTERM);
    assert_eq!(r.wait_exit(Duration::from_secs(2)).code(), Some(0));

    let stderr = r.stderr();
    let count =
        |needle: &str| stderr.iter().filter(|l| l.starts_with("warning: ") && l.contains(needle)).count();
    assert_eq!(count("SCHED_FIFO 99 not permitted"), 1, "{stderr:?}");
    assert_eq!(count("CAP_SYS_NICE"), 1, "names the capability: {stderr:?}");
    assert_eq!(count("mlockall"), 1, "{stderr:?}");
    assert_eq!(count("/dev/cpu_dma_latency"), 1, "{stderr:?}");

    let meta = json(&r.stdout());
    let achieved = &meta["rt"]["achieved"];
    assert_eq!(achieved["priority_applied"], false);
    assert_eq!(achieved["sched_policy"], "SCHED_OTHER");
    assert_eq!(achieved["mlockall"], false);
    assert_eq!(achieved["cpu_dma_latency"], false);
    assert_eq!(meta["rt"]["warnings"].as_array().map(Vec::len), Some(3), "{}", meta["rt"]["warnings"]);
}

#[test]
fn missing_device_is_a_usage_error_naming_path_and_flag() {
    let (status, stdout, stderr) = run(&["uart", "--device", "/dev/ttyLATPROBE_NONE"]);
    assert_eq!(status.code(), Some(2), "stderr: {stderr}");
    assert!(stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("Error: "), "{stderr}");
    assert!(stderr.contains("/dev/ttyLATPROBE_NONE"), "{stderr}");
    assert!(stderr.contains("--device"), "{stderr}");

    let (status, _, stderr) = run(&["periodic", "--device", "/nope", "--period", "1ms"]);
    assert_eq!(status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains("/nope") && stderr.contains("--device"));
}

#[test]
fn non_tty_device_is_refused_clearly() {
    let dir = temp_dir("not-tty");
    let file = dir.join("plain-file");
    std::fs::write(&file, b"").expect("create file");
    for device in ["/dev/null", file.to_str().expect("UTF-8")] {
        let (status, _, stderr) = run(&["uart", "--device", device]);
        assert_eq!(status.code(), Some(2), "{device}: {stderr}");
        assert!(stderr.starts_with("Error: "), "{stderr}");
        assert!(stderr.contains("not a terminal"), "{stderr}");
        assert!(stderr.contains("--device"), "{stderr}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_options_are_usage_errors() {
    let pty = Pty::new();
    let dev = pty.slave_str();
    for (args, needle) in [
        (vec!["periodic", "--device", dev, "--period", "10"], "unit"),
        (vec!["periodic", "--device", dev, "--period", "0ms"], "positive"),
        (vec!["periodic", "--device", dev, "--period", "1ms", "--byte", "300"], "--byte"),
        (vec!["uart", "--device", dev, "--priority", "100"], "--priority"),
        (vec!["uart", "--device", dev, "--baud", "12345"], "--baud"),
        (vec!["uart", "--device", dev, "--cpu", "100000"], "--cpu"),
        (vec!["uart"], "--device"),
    ] {
        let (status, _, stderr) = run(&args);
        assert_eq!(status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("Error: "), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?} should name {needle}: {stderr}");
    }
}

#[test]
fn help_says_what_it_is() {
    let (status, stdout, _) = run(&["--help"]);
    assert_eq!(status.code(), Some(0));
    assert!(stdout.contains("target-side half of latprobe"), "{stdout}");
    for sub in ["uart", "periodic", "metadata"] {
        assert!(stdout.contains(sub), "{stdout}");
    }
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "latprobe-responder-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}
