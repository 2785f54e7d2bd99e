//! The responder under faults, over a pseudo-terminal: a flood of bytes, a
//! period shorter than its own loop, signals that interrupt its system
//! calls, the line vanishing. Whatever happens it must never hold its CPU
//! (at RT priority that locks up a single-core target): the CPU guard keeps
//! a loop that never blocks to about half its CPU, measured here from
//! `/proc/PID/stat`.

mod common;

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_latprobe-responder");

/// A pty master; the responder opens the slave.
struct Pty {
    master: Option<OwnedFd>,
    slave: PathBuf,
}

impl Pty {
    fn new() -> Pty {
        let (master, slave) = common::open_pty();
        Pty { master: Some(master), slave }
    }

    fn slave(&self) -> &str {
        self.slave.to_str().expect("UTF-8")
    }

    /// A second handle on the master (close-on-exec), for a thread.
    fn handle(&self) -> File {
        let fd = self.master.as_ref().expect("open").as_raw_fd();
        // SAFETY: duplicating an open descriptor we own.
        let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        assert!(dup >= 0);
        // SAFETY: `dup` is a fresh descriptor.
        unsafe { File::from_raw_fd(dup) }
    }

    fn close(&mut self) {
        self.master = None;
    }
}

/// Reads the master as fast as it can until stopped; counts the bytes.
struct Drain {
    stop: Arc<AtomicBool>,
    bytes: Arc<AtomicU64>,
    handle: Option<JoinHandle<()>>,
}

impl Drain {
    fn start(mut f: File) -> Drain {
        let stop = Arc::new(AtomicBool::new(false));
        let bytes = Arc::new(AtomicU64::new(0));
        let (s, b) = (stop.clone(), bytes.clone());
        let handle = std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            while !s.load(Ordering::Relaxed) {
                match f.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        b.fetch_add(n as u64, Ordering::Relaxed);
                    }
                }
            }
        });
        Drain { stop, bytes, handle: Some(handle) }
    }
}

impl Drop for Drain {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // The thread may sit in read(): it ends when the master closes.
        let _ = self.handle.take();
    }
}

struct Responder {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Responder {
    fn spawn(args: &[&str]) -> Responder {
        let mut child = Command::new(BIN)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the responder");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let err = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                sink.lock().expect("lock").push(line);
            }
        });
        let r = Responder { child, lines };
        let until = Instant::now() + Duration::from_secs(10);
        while !r.stderr().iter().any(|l| l.contains(": ready: ")) {
            assert!(Instant::now() < until, "not ready: {:?}", r.stderr());
            std::thread::sleep(Duration::from_millis(20));
        }
        r
    }

    fn stderr(&self) -> Vec<String> {
        self.lines.lock().expect("lock").clone()
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our live child.
        assert_eq!(unsafe { libc::kill(self.pid(), sig) }, 0);
    }

    fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let until = Instant::now() + within;
        loop {
            if let Some(s) = self.child.try_wait().expect("try_wait") {
                std::thread::sleep(Duration::from_millis(50));
                return s;
            }
            assert!(Instant::now() < until, "still running after {within:?}: {:?}", self.stderr());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// CPU time used so far (user + system), ns.
    fn cpu_ns(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).expect("stat");
        // Fields after the command name (which may hold spaces) in parens.
        let rest = &stat[stat.rfind(')').expect("comm") + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
        // SAFETY: sysconf has no memory effects.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
        ticks * 1_000_000_000 / hz
    }

    /// The share of one CPU it used over `window`, percent.
    fn cpu_share_over(&self, window: Duration) -> u64 {
        let (c0, t0) = (self.cpu_ns(), Instant::now());
        std::thread::sleep(window);
        let (c1, t1) = (self.cpu_ns(), Instant::now());
        (c1 - c0) * 100 / (t1 - t0).as_nanos() as u64
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

/// The most of one CPU a loop that never blocks may take: the guard holds
/// it to about half; the rest is the measurement's slack.
const MAX_SHARE: u64 = 70;

/// The CPU-share tests run one at a time: two busy loops measured at once
/// on a 2-core machine would each get less than the guard's threshold, and
/// the guard, rightly, would not trip.
static CPU_TESTS: Mutex<()> = Mutex::new(());

fn cpu_test() -> std::sync::MutexGuard<'static, ()> {
    CPU_TESTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn a_period_shorter_than_the_loop_never_holds_the_cpu() {
    let _one_at_a_time = cpu_test();
    let mut pty = Pty::new();
    let drain = Drain::start(pty.handle());
    // 1 µs: no loop keeps up, so it never sleeps on its schedule.
    let mut r =
        Responder::spawn(&["periodic", "--device", pty.slave(), "--interval", "1us", "--baud", "4000000"]);
    std::thread::sleep(Duration::from_millis(300));
    let share = r.cpu_share_over(Duration::from_millis(1500));
    assert!(share <= MAX_SHARE, "the periodic loop held {share}% of a CPU: {:?}", r.stderr());
    assert!(drain.bytes.load(Ordering::Relaxed) > 0, "it wrote nothing");
    r.signal(libc::SIGTERM);
    assert!(r.wait_exit(Duration::from_secs(5)).success());
    let err = r.stderr().join("\n");
    assert!(err.contains("pauses so that it never holds the CPU"), "{err}");
    assert!(err.contains("so as never to hold the CPU"), "the summary says it paused: {err}");
    drop(drain);
    pty.close();
}

#[test]
fn a_flood_of_bytes_is_echoed_without_holding_the_cpu() {
    let _one_at_a_time = cpu_test();
    let mut pty = Pty::new();
    let drain = Drain::start(pty.handle());
    let mut r = Responder::spawn(&["uart", "--device", pty.slave(), "--baud", "4000000"]);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let mut w = pty.handle();
    let flood = std::thread::spawn(move || {
        let chunk = [0x5au8; 4096];
        while !flag.load(Ordering::Relaxed) {
            if w.write_all(&chunk).is_err() {
                break;
            }
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    let share = r.cpu_share_over(Duration::from_millis(1500));
    stop.store(true, Ordering::Relaxed);
    // The flooder stops while the responder still reads: killed first, it
    // would leave the flooder blocked on a full pty forever.
    let _ = flood.join();
    assert!(share <= MAX_SHARE, "the echo loop held {share}% of a CPU under a flood: {:?}", r.stderr());
    assert!(drain.bytes.load(Ordering::Relaxed) > 100_000, "the flood was not echoed");
    r.signal(libc::SIGTERM);
    assert!(r.wait_exit(Duration::from_secs(5)).success(), "{:?}", r.stderr());
    drop(drain);
    pty.close();
}

#[test]
fn stopped_and_continued_it_echoes_on() {
    // SIGSTOP/SIGCONT interrupt its blocked read (a laptop's suspend, a
    // debugger): the read is taken up again, nothing is lost.
    let mut pty = Pty::new();
    let mut r = Responder::spawn(&["uart", "--device", pty.slave()]);
    let mut m = pty.handle();
    r.signal(libc::SIGSTOP);
    m.write_all(b"\x01\x02\x03").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    r.signal(libc::SIGCONT);
    m.write_all(b"\x04").unwrap();
    let mut got = Vec::new();
    let until = Instant::now() + Duration::from_secs(5);
    let mut buf = [0u8; 16];
    while got.len() < 4 && Instant::now() < until {
        let mut pfd = libc::pollfd { fd: m.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, 100) } > 0 {
            let n = m.read(&mut buf).unwrap();
            got.extend_from_slice(&buf[..n]);
        }
    }
    assert_eq!(got, [1, 2, 3, 4], "{:?}", r.stderr());
    r.signal(libc::SIGTERM);
    assert!(r.wait_exit(Duration::from_secs(5)).success());
    pty.close();
}

#[test]
fn the_line_vanishing_mid_flood_ends_the_run_at_once() {
    let _one_at_a_time = cpu_test();
    // The device goes away (a USB adapter unplugged: EIO, as a pty whose
    // master closed) while the periodic loop writes as fast as it can: it
    // ends, exit 0, saying so, rather than spinning on the error.
    let mut pty = Pty::new();
    let drain = Drain::start(pty.handle());
    let mut r =
        Responder::spawn(&["periodic", "--device", pty.slave(), "--interval", "10us", "--baud", "4000000"]);
    std::thread::sleep(Duration::from_millis(300));
    drop(drain);
    pty.close();
    let status = r.wait_exit(Duration::from_secs(5));
    assert!(status.success(), "{status}: {:?}", r.stderr());
    assert!(r.stderr().iter().any(|l| l.contains("hung up")), "{:?}", r.stderr());
}
