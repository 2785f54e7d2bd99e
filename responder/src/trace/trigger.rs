//! The trigger thread: waits for the probe's trigger (a GPIO edge through
//! the uAPI v2, or a byte on a FIFO), writes `0` to `tracing_on` at once,
//! then saves the buffer as a snapshot named by the last marker's seq,
//! clears it and re-arms, up to `--trace-keep` snapshots.
//!
//! It runs at SCHED_FIFO one above the answer loop and on every CPU (not
//! pinned with it): a CPU stuck in whatever makes the answer late must not
//! also hold the stop back.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::tracefs::Tracefs;
use super::{Shared, TraceArgs};
use crate::gpio::{self, EdgeInput};
use crate::UsageError;

/// What the thread needs.
#[derive(Debug)]
pub struct Context {
    pub shared: Arc<Shared>,
    /// `None` when tracing could not be armed: triggers are then only
    /// drained and counted (a FIFO writer must never block on us).
    pub fs: Option<Tracefs>,
    pub dir: PathBuf,
    pub keep: u32,
    pub priority: u8,
}

/// Where the trigger comes from.
#[derive(Debug)]
pub enum Source {
    Gpio(gpio::GpioEdges, gpio::LineSpec),
    Fifo(File, PathBuf),
}

impl Source {
    /// The line `args` name, opened; `None` when none is named.
    pub fn open(args: &TraceArgs) -> Result<Option<Source>, UsageError> {
        if let Some(spec) = &args.trigger_gpio {
            let edges = gpio::GpioEdges::open(spec, gpiocdev::line::EdgeDetection::RisingEdge)
                .map_err(|e| UsageError(format!("{e} (check --trigger-gpio)")))?;
            return Ok(Some(Source::Gpio(edges, spec.clone())));
        }
        let Some(path) = &args.trigger_fifo else { return Ok(None) };
        let is_fifo = std::fs::metadata(path).map(|m| m.file_type().is_fifo()).map_err(|e| {
            UsageError(format!(
                "--trigger-fifo {}: {} (make it with mkfifo)",
                path.display(),
                crate::tty::os_message(&e)
            ))
        })?;
        if !is_fifo {
            return Err(UsageError(format!(
                "--trigger-fifo {} is not a FIFO (make it with mkfifo)",
                path.display()
            )));
        }
        // Read and write: the FIFO then never reads as ended when a writer
        // closes, and opening it never waits for one.
        let f = OpenOptions::new().read(true).write(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(
            |e| {
                UsageError(format!(
                    "cannot open --trigger-fifo {}: {}",
                    path.display(),
                    crate::tty::os_message(&e)
                ))
            },
        )?;
        Ok(Some(Source::Fifo(f, path.clone())))
    }

    /// For the metadata.
    pub fn describe(&self) -> String {
        match self {
            Source::Gpio(_, s) => format!("gpio {}:{} rising", s.chip.display(), s.line),
            Source::Fifo(_, p) => format!("fifo {}", p.display()),
        }
    }

    /// The next trigger within `timeout`: `Some(kernel edge timestamp)` (the
    /// timestamp only for a GPIO edge).
    fn wait(&mut self, timeout: Duration) -> io::Result<Option<Option<u64>>> {
        match self {
            Source::Gpio(edges, _) => Ok(edges.next_edge(timeout)?.map(|(_, ts)| Some(ts))),
            Source::Fifo(f, _) => {
                let mut pfd = libc::pollfd { fd: f.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                // SAFETY: one valid pollfd for the duration of the call.
                let rc = unsafe { libc::poll(&mut pfd, 1, timeout.as_millis() as libc::c_int) };
                if rc <= 0 {
                    return Ok(None);
                }
                // One byte at a time: each 'T' is one trigger; anything else
                // (a newline from `echo T >`) is skipped.
                let mut b = [0u8; 1];
                match io::Read::read(f, &mut b) {
                    Ok(1) if b[0] == b'T' => Ok(Some(None)),
                    Ok(_) => Ok(None),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
                    Err(e) => Err(e),
                }
            }
        }
    }
}

/// CLOCK_MONOTONIC, ns (vDSO: no system call).
pub fn monotonic_ns() -> u64 {
    // SAFETY: timespec is plain C data; all-zero bytes are a valid value.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `ts` is valid for writes; CLOCK_MONOTONIC exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The thread's set-up: signals left to the main thread (its blocking read
/// must be the one a Ctrl-C interrupts), SCHED_FIFO, every CPU.
fn setup_thread(priority: u8) -> Option<String> {
    // SAFETY: sigset_t is plain data; the set is initialised by sigemptyset
    // before use, and pthread_sigmask only touches this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    // SAFETY: cpu_set_t is plain data; CPU_SET writes within it; pid 0 is
    // the calling thread.
    unsafe {
        let mut all: libc::cpu_set_t = std::mem::zeroed();
        for cpu in 0..libc::CPU_SETSIZE as usize {
            libc::CPU_SET(cpu, &mut all);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &all);
    }
    // SAFETY: sched_param is plain data; pid 0 is the calling thread.
    let rc = unsafe {
        let mut p: libc::sched_param = std::mem::zeroed();
        p.sched_priority = i32::from(priority);
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &p)
    };
    (rc != 0).then(|| {
        format!(
            "the trigger thread could not get SCHED_FIFO {priority} ({}): a busy target delays the stop",
            crate::tty::os_message(&io::Error::last_os_error())
        )
    })
}

/// The thread's body: until the run ends.
pub fn run(mut source: Source, ctx: &Context) {
    if let Some(w) = setup_thread(ctx.priority) {
        eprintln!("warning: --trace: {w}");
        ctx.shared.report.lock().unwrap_or_else(|p| p.into_inner()).warnings.push(w);
    }
    let tracing_on = ctx.fs.as_ref().and_then(|fs| fs.open_write("tracing_on").ok());
    let mut armed = tracing_on.is_some();
    let mut saved = 0u32;
    let kind = match source {
        Source::Gpio(..) => "gpio",
        Source::Fifo(..) => "fifo",
    };
    while !ctx.shared.quit.load(Ordering::SeqCst) && !crate::signals::stop_requested() {
        let edge_ns = match source.wait(Duration::from_millis(100)) {
            Ok(Some(edge)) => edge,
            Ok(None) => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let msg = format!("the trigger line failed: {e}; no more snapshots");
                eprintln!("warning: --trace: {msg}");
                ctx.shared.report.lock().unwrap_or_else(|p| p.into_inner()).warnings.push(msg);
                return;
            }
        };
        let seen = monotonic_ns();
        let stopped = match (&tracing_on, armed) {
            (Some(f), true) => f.write_at(b"0", 0).is_ok().then(monotonic_ns),
            _ => None,
        };
        let seq = ctx.shared.last_seq.load(Ordering::Acquire);
        let count = {
            let mut r = ctx.shared.report.lock().unwrap_or_else(|p| p.into_inner());
            r.triggers += 1;
            if let Some(t) = stopped {
                r.stop_latencies_ns.push(t - seen);
                if let Some(e) = edge_ns {
                    r.edge_to_stop_ns.push(t.saturating_sub(e));
                }
            }
            r.triggers
        };
        let Some(stopped_at) = stopped else { continue };
        let (Some(fs), Some(on)) = (&ctx.fs, &tracing_on) else { continue };
        let snap = Snapshot { seq, trigger: count, kind, seen, stopped_at, edge_ns };
        match save(fs, &ctx.dir, &snap) {
            Ok(name) => {
                saved += 1;
                ctx.shared.report.lock().unwrap_or_else(|p| p.into_inner()).snapshots.push(name);
            }
            Err(e) => {
                let msg = format!("cannot save a snapshot in {}: {e}", ctx.dir.display());
                eprintln!("warning: --trace: {msg}");
                ctx.shared.report.lock().unwrap_or_else(|p| p.into_inner()).warnings.push(msg);
            }
        }
        if saved >= ctx.keep {
            // Kept enough: the rest of the run goes untraced (and undisturbed).
            armed = false;
            continue;
        }
        let _ = fs.clear_buffer();
        if on.write_at(b"1", 0).is_err() {
            armed = false;
        }
        // Triggers that came while the trace was off (the save above): a
        // stop now would find the buffer just cleared (an empty snapshot,
        // spending --trace-keep). Counted, so the k-th trigger is still the
        // probe's k-th, and not traced.
        let mut missed = 0;
        while missed < 1024 {
            match source.wait(Duration::ZERO) {
                Ok(Some(_)) => missed += 1,
                _ => break,
            }
        }
        if missed > 0 {
            let mut r = ctx.shared.report.lock().unwrap_or_else(|p| p.into_inner());
            r.triggers += missed;
            r.triggers_while_saving += missed;
        }
    }
}

struct Snapshot {
    seq: u64,
    trigger: u64,
    kind: &'static str,
    seen: u64,
    stopped_at: u64,
    edge_ns: Option<u64>,
}

/// `trace-seq-<N>.txt` and its sidecar `trace-seq-<N>.json`; the file name.
///
/// N is the last `latprobe seq=` marker **in the snapshot**, read while it
/// is copied, not the answer loop's count: that count is stored after the
/// marker's write, so a marker refused just after the stop (or recorded
/// just before it) would put the count one off the file. The count is kept
/// as `last_answer_seq`; it names the file only when the snapshot holds no
/// marker.
fn save(fs: &Tracefs, dir: &Path, s: &Snapshot) -> io::Result<String> {
    let partial = dir.join(".trace-seq-partial.txt");
    let copied = File::open(fs.path("trace"))
        .and_then(|src| copy_scanning(io::BufReader::new(src), io::BufWriter::new(File::create(&partial)?)));
    let (bytes, marker) = match copied {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    let answered = (s.seq != u64::MAX).then_some(s.seq);
    let named = marker.or(answered);
    let base = named.map_or_else(|| "trace-seq-none".to_string(), |n| format!("trace-seq-{n}"));
    // Two triggers with no answer in between share a seq.
    let mut stem = base.clone();
    let mut n = 2;
    while dir.join(format!("{stem}.txt")).exists() {
        stem = format!("{base}-{n}");
        n += 1;
    }
    let name = format!("{stem}.txt");
    std::fs::rename(&partial, dir.join(&name))?;
    let report = serde_json::json!({
        "file": name,
        "last_marker_seq": named,
        "marker_in_snapshot": marker.is_some(),
        "last_answer_seq": answered,
        "trigger": s.trigger,
        "source": s.kind,
        "trigger_seen_mono_ns": s.seen,
        "stop_latency_ns": s.stopped_at - s.seen,
        "stopped_mono_ns": s.stopped_at,
        "edge_mono_ns": s.edge_ns,
        "edge_to_stop_ns": s.edge_ns.map(|e| s.stopped_at.saturating_sub(e)),
        "trace_clock": fs.current_choice("trace_clock").ok(),
        "saved_unix_s": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok().map(|d| d.as_secs()),
        "bytes": bytes,
    });
    let text = serde_json::to_string_pretty(&report).map_err(io::Error::other)? + "\n";
    std::fs::write(dir.join(format!("{stem}.json")), text)?;
    Ok(name)
}

/// Copy a trace line by line; the bytes and the last marker's seq.
fn copy_scanning(mut src: impl io::BufRead, mut dst: impl io::Write) -> io::Result<(u64, Option<u64>)> {
    let mut line = Vec::new();
    let (mut bytes, mut last) = (0u64, None);
    loop {
        line.clear();
        let n = src.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        dst.write_all(&line)?;
        bytes += n as u64;
        if let Some(seq) = marker_seq(&line) {
            last = Some(seq);
        }
    }
    dst.flush()?;
    Ok((bytes, last))
}

/// `N` of a `tracing_mark_write: latprobe seq=N` line.
fn marker_seq(line: &[u8]) -> Option<u64> {
    const TAG: &[u8] = b"tracing_mark_write: latprobe seq=";
    let at = line.windows(TAG.len()).position(|w| w == TAG)? + TAG.len();
    let digits = line[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&line[at..at + digits]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "\
# tracer: nop
 latprobe-respon-10 [000] .....  5.000100: tracing_mark_write: latprobe seq=6 id=0x07
 latprobe-respon-10 [000] .....  5.000200: tracing_mark_write: latprobe seq=7 id=0x08
 latprobe-hog-11    [000] d..2.  5.000300: sched_switch: prev_comm=latprobe-respon next_comm=latprobe-hog
 bash-12            [001] .....  5.000400: tracing_mark_write: something seq=99
";

    #[test]
    fn the_last_marker_is_read_from_the_copy() {
        let mut out = Vec::new();
        let (bytes, last) = copy_scanning(TRACE.as_bytes(), &mut out).unwrap();
        assert_eq!(out, TRACE.as_bytes());
        assert_eq!(bytes, TRACE.len() as u64);
        assert_eq!(last, Some(7), "a foreign marker is not ours");
        assert_eq!(copy_scanning(&b"# tracer: nop\n"[..], io::sink()).unwrap().1, None);
        assert_eq!(marker_seq(b"x: tracing_mark_write: latprobe seq=12"), Some(12), "no newline at the end");
        assert_eq!(marker_seq(b"x: tracing_mark_write: latprobe seq="), None);
    }

    /// The race the demo's test found: the answer loop stored seq 8 (its
    /// marker refused after the stop) before the trigger thread read it.
    #[test]
    fn the_file_is_named_by_the_snapshot_not_by_the_answer_count() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("tracing_on"), "0\n").unwrap();
        let fs = Tracefs::open(root.path()).unwrap();
        std::fs::write(root.path().join("trace"), TRACE).unwrap();
        std::fs::write(root.path().join("trace_clock"), "local global [mono]\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let snap = Snapshot { seq: 8, trigger: 1, kind: "fifo", seen: 10, stopped_at: 30, edge_ns: None };
        assert_eq!(save(&fs, dir.path(), &snap).unwrap(), "trace-seq-7.txt");
        assert_eq!(std::fs::read_to_string(dir.path().join("trace-seq-7.txt")).unwrap(), TRACE);
        let side: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("trace-seq-7.json")).unwrap()).unwrap();
        assert_eq!(side["last_marker_seq"], 7);
        assert_eq!(side["last_answer_seq"], 8);
        assert_eq!(side["marker_in_snapshot"], true);
        assert_eq!(side["stop_latency_ns"], 20);
        assert_eq!(side["trace_clock"], "mono");
        // A second trigger, the same snapshot: -2; no marker at all: the count.
        assert_eq!(save(&fs, dir.path(), &snap).unwrap(), "trace-seq-7-2.txt");
        std::fs::write(root.path().join("trace"), "# tracer: nop\n").unwrap();
        assert_eq!(save(&fs, dir.path(), &snap).unwrap(), "trace-seq-8.txt");
        let none = Snapshot { seq: u64::MAX, ..snap };
        assert_eq!(save(&fs, dir.path(), &none).unwrap(), "trace-seq-none.txt");
        assert!(!dir.path().join(".trace-seq-partial.txt").exists(), "the partial copy was left behind");
    }
}
