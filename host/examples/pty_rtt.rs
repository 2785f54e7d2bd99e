//! An independent reference for `latprobe demo`: the plain round trip of one
//! byte through a pseudo-terminal and `latprobe-responder`, timed by this
//! program alone, with none of latprobe's engine, protocol or analysis.
//!
//! It writes a byte, waits for its echo (as long as it takes: nothing is
//! cut off), records the round trip, sleeps until the next 1 ms slot, and
//! prints nearest-rank percentiles at the end. Run it right before or after
//! a demo on the same machine and compare the tails:
//!
//! ```text
//! cargo build --release -p latprobe -p latprobe-responder
//! cargo run --release -p latprobe --example pty_rtt -- 20 target/release/latprobe-responder
//! ```
//! Arguments: seconds to run (default 20), the responder (default
//! `target/release/latprobe-responder`).

use std::ffi::CStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let secs: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(20);
    let responder = args.next().unwrap_or_else(|| "target/release/latprobe-responder".into());

    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two fds; the other pointers may be null.
    let rc = unsafe {
        libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null())
    };
    assert_eq!(rc, 0, "openpty failed");
    // SAFETY: openpty succeeded: both fds are fresh and ours.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    // SAFETY: an all-zero termios is valid input to tcgetattr, which fills it.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: valid termios and an open fd, for each call.
    unsafe {
        libc::tcgetattr(slave.as_raw_fd(), &mut t);
        libc::cfmakeraw(&mut t);
        libc::tcsetattr(slave.as_raw_fd(), libc::TCSANOW, &t);
    }
    let mut name = [0 as libc::c_char; 128];
    // SAFETY: `name` is writable for its whole length.
    unsafe { libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()) };
    // SAFETY: ptsname_r wrote a NUL-terminated string.
    let path = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
    let mut child = Command::new(&responder)
        .args(["uart", "--device", &path])
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {responder}: {e}"));
    std::thread::sleep(Duration::from_millis(500));

    let fd = master.as_raw_fd();
    let mut rtts: Vec<u64> = Vec::new();
    let end = Instant::now() + Duration::from_secs(secs);
    let mut next = now_ns();
    let mut buf = [0u8; 64];
    while Instant::now() < end {
        next += 1_000_000;
        let t0 = now_ns();
        // SAFETY: one byte from a valid buffer to an fd we own.
        if unsafe { libc::write(fd, [0x55u8].as_ptr().cast(), 1) } != 1 {
            panic!("write to the pty failed");
        }
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd; wait up to 10 s for the echo.
        let n = unsafe { libc::poll(&mut pfd, 1, 10_000) };
        let t1 = now_ns();
        assert!(n == 1, "no echo within 10 s");
        // SAFETY: reading into a valid buffer from an fd we own.
        unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        rtts.push(t1 - t0);
        let now = now_ns();
        if next > now {
            std::thread::sleep(Duration::from_nanos(next - now));
        } else {
            next = now;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    rtts.sort_unstable();
    let n = rtts.len();
    let rank = |q: f64| rtts[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    let us = |ns: u64| ns as f64 / 1000.0;
    println!(
        "pty round trip via {responder}: {n} samples over {secs} s\n\
         min {:.1} us  p50 {:.1}  p99 {:.1}  p99.9 {:.1}  p99.99 {:.1}  max {:.1} us",
        us(rtts[0]),
        us(rank(0.5)),
        us(rank(0.99)),
        us(rank(0.999)),
        us(rank(0.9999)),
        us(rtts[n - 1])
    );
}
