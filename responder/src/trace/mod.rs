//! `--trace`: the target's ftrace, armed for the whole run, with a marker
//! for every answer, stopped by the probe's trigger while an answer is late.
//!
//! ```text
//!  answer loop ─answer─▶ line ─then─▶ trace_marker "latprobe seq=N [id=0xNN]"
//!                                          │ last seq
//!  trigger (GPIO edge or FIFO byte) ─▶ [trigger thread, SCHED_FIFO]
//!        ─▶ tracing_on 0 ─▶ trace → DIR/trace-seq-N.txt + .json ─▶ clear ─▶ tracing_on 1
//! ```
//!
//! The marker goes out right after the answer, never before it, so its cost
//! (one write(2), timed and reported) lands between answers. Tracing that
//! cannot be had (no tracefs, no permission) is one warning: the run goes on
//! untraced and the metadata's `trace` section says why.

mod state;
pub mod tracefs;
mod trigger;

use std::cell::Cell;
use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use clap::Args;
use serde::Serialize;

use crate::gpio;

/// The events armed when `--trace-events` is not given: who ran, who woke,
/// which interrupts and timers fired.
pub const DEFAULT_EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_wakeup",
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "timer/hrtimer_expire_entry",
    "timer/hrtimer_expire_exit",
];

/// The `--trace` options every answering subcommand shares.
#[derive(Debug, Clone, Args)]
pub struct TraceArgs {
    /// Arm the kernel's ftrace for the run, mark every answer in it, and save the trace when a trigger arrives (--trigger-gpio or --trigger-fifo)
    #[arg(long)]
    pub trace: bool,
    /// The events to record, comma-separated (sched_switch, sched/sched_switch, sched:sched_switch, or a whole group: sched) [default: sched_switch, sched_wakeup, irq_handler_entry/exit, softirq_entry/exit, hrtimer_expire_entry/exit]
    #[arg(long, value_name = "LIST", value_delimiter = ',', requires = "trace")]
    pub trace_events: Vec<String>,
    /// An ftrace tracer to run beside the events, e.g. function (where available_tracers lists it)
    #[arg(long, value_name = "NAME", requires = "trace")]
    pub tracer: Option<String>,
    /// The ring buffer's size per CPU, KiB: it holds the last stretch of the run before a trigger
    #[arg(long, value_name = "KIB", default_value_t = 4096, requires = "trace")]
    pub trace_buffer_kb: u32,
    /// Where the snapshots go (created if needed)
    #[arg(long, value_name = "DIR", default_value = "latprobe-trace", requires = "trace")]
    pub trace_dir: PathBuf,
    /// Keep the first N snapshots; later triggers are counted and timed but not saved, and tracing stays off after the Nth
    #[arg(long, value_name = "N", default_value_t = 5, requires = "trace")]
    pub trace_keep: u32,
    /// The probe's trigger output on this GPIO line, CHIP:LINE (rising edge), e.g. /dev/gpiochip0:22
    #[arg(long, value_name = "CHIP:LINE", value_parser = gpio::parse_line_spec, conflicts_with = "trigger_fifo", requires = "trace")]
    pub trigger_gpio: Option<gpio::LineSpec>,
    /// A named pipe the trigger arrives on as a byte 'T' (the demo's virtual probe; a board uses --trigger-gpio)
    #[arg(long, value_name = "PATH", requires = "trace")]
    pub trigger_fifo: Option<PathBuf>,
    /// The tracefs mount [default: /sys/kernel/tracing, mounted if needed]
    #[arg(long, value_name = "DIR", default_value = tracefs::DEFAULT_ROOT, hide = true)]
    pub tracefs: PathBuf,
}

/// The metadata's `trace` section.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TraceReport {
    /// Tracing was armed.
    pub enabled: bool,
    /// Why not, when it was asked for and could not be had.
    pub reason: Option<String>,
    pub tracefs: Option<String>,
    /// The responder mounted tracefs itself.
    pub mounted: bool,
    pub events: Vec<String>,
    /// Asked for but missing on this kernel.
    pub missing_events: Vec<String>,
    pub tracer: Option<String>,
    pub buffer_size_kb: Option<u32>,
    pub trace_clock: Option<String>,
    pub dir: Option<String>,
    pub keep: u32,
    /// `gpio /dev/gpiochip0:22` or `fifo PATH`.
    pub trigger: Option<String>,
    pub triggers: u64,
    /// Triggers that came while a snapshot was being saved (tracing off):
    /// counted, so the numbering stays the probe's, but not traced.
    pub triggers_while_saving: u64,
    pub snapshots: Vec<String>,
    /// Trigger seen → `tracing_on` written, CLOCK_MONOTONIC, ns, each trigger.
    pub stop_latencies_ns: Vec<u64>,
    /// GPIO only: the kernel's edge timestamp → `tracing_on` written, ns.
    pub edge_to_stop_ns: Vec<u64>,
    /// Answers counted (the seq of the next marker).
    pub answers: u64,
    /// Markers written: fewer than the answers while tracing is stopped
    /// (the kernel refuses a marker then).
    pub markers: u64,
    pub marker_failures: u64,
    /// The marker's write(2), timed after the answer: mean and max, ns.
    pub marker_mean_ns: Option<u64>,
    pub marker_max_ns: Option<u64>,
    pub warnings: Vec<String>,
}

/// State the answer loop and the trigger thread share.
#[derive(Debug)]
struct Shared {
    /// The seq of the last marker written; `u64::MAX` before the first.
    last_seq: AtomicU64,
    quit: AtomicBool,
    report: Mutex<TraceReport>,
}

/// An armed trace for the run (or a disarmed one that only counts): drop it
/// to stop the trigger thread and restore tracefs.
#[derive(Debug)]
pub struct Trace {
    shared: Arc<Shared>,
    marker: Option<File>,
    next_seq: Cell<u64>,
    marked: Cell<u64>,
    marker_total_ns: Cell<u64>,
    marker_max_ns: Cell<u64>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Dropped after the thread has ended.
    restore: Option<Arc<Mutex<tracefs::Restore>>>,
}

impl Trace {
    /// Nothing asked for: markers are no-ops.
    pub fn off() -> Trace {
        Trace {
            shared: Arc::new(Shared {
                last_seq: AtomicU64::new(u64::MAX),
                quit: AtomicBool::new(false),
                report: Mutex::new(TraceReport::default()),
            }),
            marker: None,
            next_seq: Cell::new(0),
            marked: Cell::new(0),
            marker_total_ns: Cell::new(0),
            marker_max_ns: Cell::new(0),
            thread: None,
            restore: None,
        }
    }

    /// Arm tracing as `args` say. A trigger line that cannot be opened is an
    /// error naming its flag; tracefs that cannot be had is a warning.
    /// `priority`: the answer loop's SCHED_FIFO priority; the trigger
    /// thread runs one above it.
    pub fn start(args: &TraceArgs, priority: Option<u8>) -> Result<Trace, crate::UsageError> {
        let mut trace = Trace::off();
        if !args.trace {
            if args.trigger_gpio.is_some() || args.trigger_fifo.is_some() {
                return Err(crate::UsageError("--trigger-gpio and --trigger-fifo need --trace".into()));
            }
            return Ok(trace);
        }
        // Names only, before tracefs is touched: a path in a spec would be
        // joined under events/ and could reach any `enable` file.
        for spec in args.trace_events.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
            tracefs::check_event_spec(spec).map_err(|e| crate::UsageError(format!("--trace-events: {e}")))?;
        }
        let source = trigger::Source::open(args)?;
        let mut report = TraceReport { keep: args.trace_keep, ..TraceReport::default() };
        report.trigger = source.as_ref().map(trigger::Source::describe);
        match arm(args, &mut report) {
            Ok(restore) => {
                trace.marker = restore.fs().open_write("trace_marker").ok();
                trace.restore = Some(Arc::new(Mutex::new(restore)));
                report.enabled = true;
            }
            Err(why) => {
                eprintln!("warning: --trace: {why}; the run goes on untraced");
                report.reason = Some(why);
            }
        }
        if source.is_none() {
            report.warnings.push(
                "no trigger (--trigger-gpio or --trigger-fifo): the trace runs and is marked, but nothing \
                 stops it to save a snapshot"
                    .into(),
            );
        }
        *trace.shared.report.lock().unwrap_or_else(|p| p.into_inner()) = report;
        if let Some(source) = source {
            let ctx = trigger::Context {
                shared: trace.shared.clone(),
                fs: trace.restore.as_ref().map(|r| r.lock().unwrap_or_else(|p| p.into_inner()).fs().clone()),
                dir: args.trace_dir.clone(),
                keep: args.trace_keep,
                priority: priority.map_or(90, |p| (p + 1).min(99)),
            };
            trace.thread = Some(
                std::thread::Builder::new()
                    .name("trace-trigger".into())
                    .spawn(move || trigger::run(source, &ctx))
                    .map_err(|e| crate::UsageError(format!("cannot start the trigger thread: {e}")))?,
            );
        }
        Ok(trace)
    }

    /// One answer went out: mark it in the trace (after the answer, never
    /// before). `id`: the stimulus's identity byte (uart-echo).
    pub fn mark(&self, id: Option<u8>) {
        let Some(f) = &self.marker else { return };
        let seq = self.next_seq.get();
        let mut buf = [0u8; 48];
        let len = {
            let mut w = &mut buf[..];
            let _ = match id {
                Some(b) => write!(w, "latprobe seq={seq} id=0x{b:02x}"),
                None => write!(w, "latprobe seq={seq}"),
            };
            48 - w.len()
        };
        let t0 = trigger::monotonic_ns();
        // One write(2): trace_marker takes each write as one event.
        let written = (&mut &*f).write(&buf[..len]);
        let took = trigger::monotonic_ns().saturating_sub(t0);
        // The seq counts answers, marked or not, so that it stays in step
        // with the probe's samples.
        self.shared.last_seq.store(seq, Ordering::Release);
        self.next_seq.set(seq + 1);
        match written {
            Ok(_) => {
                self.marked.set(self.marked.get() + 1);
                self.marker_total_ns.set(self.marker_total_ns.get() + took);
                self.marker_max_ns.set(self.marker_max_ns.get().max(took));
            }
            Err(e) => {
                let mut r = self.shared.report.lock().unwrap_or_else(|p| p.into_inner());
                r.marker_failures += 1;
                if r.marker_failures == 1 {
                    r.warnings.push(format!("a trace marker could not be written (seq {seq}): {e}"));
                }
            }
        }
    }

    /// The `trace` section so far; `None` when `--trace` was not given.
    pub fn report(&self) -> Option<TraceReport> {
        let mut r = self.shared.report.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if !r.enabled && r.reason.is_none() && r.trigger.is_none() {
            return None;
        }
        r.answers = self.next_seq.get();
        r.markers = self.marked.get();
        r.marker_mean_ns = self.marker_total_ns.get().checked_div(r.markers);
        r.marker_max_ns = (r.markers > 0).then(|| self.marker_max_ns.get());
        Some(r)
    }

    /// For the closing line: empty without `--trace`.
    pub fn summary(&self) -> String {
        let Some(r) = self.report() else { return String::new() };
        if !r.enabled {
            return format!(", untraced ({})", r.reason.unwrap_or_default());
        }
        let mut s = format!(", {} answers marked in the trace ({} markers written", r.answers, r.markers);
        if let (Some(mean), Some(max)) = (r.marker_mean_ns, r.marker_max_ns) {
            s.push_str(&format!(", {mean} ns mean, {max} ns max each"));
        }
        s.push(')');
        s.push_str(&format!(", {} triggers, {} snapshots", r.triggers, r.snapshots.len()));
        if let Some(max) = r.stop_latencies_ns.iter().max() {
            s.push_str(&format!(" (trigger to tracing_on 0 at most {max} ns)"));
        }
        s
    }

    /// Stop the trigger thread, then restore tracefs; the final report.
    pub fn finish(&mut self) -> Option<TraceReport> {
        self.shared.quit.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.marker = None;
        if let Some(r) = self.restore.take() {
            let problems = r.lock().unwrap_or_else(|p| p.into_inner()).restore();
            for p in problems {
                eprintln!("warning: --trace: {p}");
                self.shared.report.lock().unwrap_or_else(|p| p.into_inner()).warnings.push(p);
            }
        }
        self.report()
    }
}

impl Drop for Trace {
    fn drop(&mut self) {
        // The guard restores on its own drop; ending the thread first keeps
        // it from re-arming what was just put back.
        self.finish();
    }
}

/// Mount (if needed) and arm; the restore guard holds what was there.
fn arm(args: &TraceArgs, report: &mut TraceReport) -> Result<tracefs::Restore, String> {
    use tracefs::{as_is, buffer_size_to_restore, choice};
    let fs = tracefs::Tracefs::open(&args.tracefs)?;
    report.tracefs = Some(args.tracefs.display().to_string());
    // One traced run per tracefs: the lock (and the record of what was
    // there before) is held by the guard for the run.
    let state = state::State::lock(&state::path_for(&args.tracefs))?;
    let (mut g, note, problems) = tracefs::Restore::with_state(fs, state)?;
    for msg in note.into_iter().chain(problems) {
        eprintln!("warning: --trace: {msg}");
        report.warnings.push(msg);
    }
    let fs = g.fs().clone();
    report.mounted = fs.mounted_here;
    let w = |e: io::Error| e.to_string();
    // Off first (and back last), then a clean buffer.
    g.set("tracing_on", "0", as_is).map_err(w)?;
    if let Some(t) = &args.tracer {
        let available = fs.read("available_tracers").unwrap_or_default();
        if available.split_whitespace().any(|a| a == t) {
            g.set("current_tracer", t, as_is).map_err(w)?;
            report.tracer = Some(t.clone());
        } else {
            let msg =
                format!("this kernel has no tracer '{t}' (available_tracers: {available}); events only");
            eprintln!("warning: --tracer: {msg}");
            report.warnings.push(msg);
        }
    }
    // CLOCK_MONOTONIC timestamps, so the trigger's time sits on the trace's axis.
    if g.set("trace_clock", "mono", choice).is_ok() {
        report.trace_clock = Some("mono".into());
    } else {
        report.trace_clock = fs.current_choice("trace_clock").ok();
    }
    g.set("buffer_size_kb", &args.trace_buffer_kb.to_string(), buffer_size_to_restore).map_err(w)?;
    report.buffer_size_kb = Some(args.trace_buffer_kb);
    let wanted: Vec<String> = if args.trace_events.is_empty() {
        DEFAULT_EVENTS.iter().map(|s| s.to_string()).collect()
    } else {
        args.trace_events.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
    };
    for want in &wanted {
        match fs.find_event(want) {
            Some(ev) => {
                g.set(&format!("events/{ev}/enable"), "1", as_is).map_err(w)?;
                report.events.push(ev);
            }
            None => report.missing_events.push(want.clone()),
        }
    }
    if !report.missing_events.is_empty() {
        let msg =
            format!("this kernel lacks the events {}; recording the rest", report.missing_events.join(", "));
        eprintln!("warning: --trace-events: {msg}");
        report.warnings.push(msg);
    }
    std::fs::create_dir_all(&args.trace_dir)
        .map_err(|e| format!("cannot create --trace-dir {}: {e}", args.trace_dir.display()))?;
    report.dir = Some(args.trace_dir.display().to_string());
    if let Some(first) = fs.first_event() {
        let msg = format!(
            "the trace buffer held events from before this run (first: `{first}`); they are cleared now: to \
             keep such a trace, save {}/trace before --trace",
            args.tracefs.display()
        );
        eprintln!("warning: --trace: {msg}");
        report.warnings.push(msg);
    }
    fs.clear_buffer().map_err(w)?;
    g.set("tracing_on", "1", as_is).map_err(w)?;
    Ok(g)
}

/// A periodic marker or a GPIO output whose every mark or toggle is followed
/// by a trace marker.
pub struct Traced<'a, T: ?Sized> {
    pub inner: &'a mut T,
    pub trace: &'a Trace,
}

impl<T: crate::cycles::Marker + ?Sized> crate::cycles::Marker for Traced<'_, T> {
    fn mark(&mut self) -> io::Result<()> {
        let r = self.inner.mark();
        if r.is_ok() {
            self.trace.mark(None);
        }
        r
    }
}

impl<T: crate::gpio::Toggle + ?Sized> crate::gpio::Toggle for Traced<'_, T> {
    fn toggle(&mut self) -> io::Result<()> {
        let r = self.inner.toggle();
        if r.is_ok() {
            self.trace.mark(None);
        }
        r
    }
}
