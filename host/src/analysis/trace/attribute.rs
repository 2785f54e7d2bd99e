//! What ran inside a snapshot's window, and a guess at the culprit in the
//! spirit of rtla's auto-analysis: the longest irq handler, softirq, timer
//! callback or other task on the responder's CPU between the stimulus and
//! the trigger. A heuristic: it names what took the CPU, not why.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::parse::{parse_switch, parse_wakeup, Event, Snapshot};

/// One thing that held a CPU inside the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// `irq`, `softirq`, `hrtimer` or `task`.
    pub kind: String,
    /// `irq 36 virtio1-req.0`, `softirq TIMER`, `tick_nohz_handler`,
    /// `latprobe-hog (pid 18744)`.
    pub name: String,
    pub cpu: u32,
    /// Start, on the trace clock (clipped to the window), ns.
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Still running when the window ended (the trigger).
    pub open: bool,
}

/// The responder inside the window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponderSeen {
    pub pid: Option<u32>,
    /// The CPU it was woken on (or last marked on).
    pub cpu: Option<u32>,
    /// Its first wake-up in the window.
    pub woken_ns: Option<u64>,
    /// When it next got its CPU after that.
    pub ran_ns: Option<u64>,
}

/// A window's findings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Findings {
    pub responder: ResponderSeen,
    /// On the responder's CPU: the longest irq, softirq and timer callback
    /// and the three longest task slices, longest first.
    pub holders: Vec<Holder>,
    /// The heuristic's pick: the first of `holders`.
    pub culprit: Option<Holder>,
}

/// Pair `*_entry`/`*_exit` and find who ran on which CPU, in `[start, end]`.
pub fn analyse(snap: &Snapshot, start: u64, end: u64, responder_pid: Option<u32>) -> Findings {
    let responder = responder_in(snap, start, end, responder_pid);
    let mut all: Vec<Holder> = Vec::new();
    all.extend(handlers(&snap.events, start, end));
    all.extend(tasks(&snap.events, start, end, responder_pid));
    let cpu = responder.cpu;
    let mut holders: Vec<Holder> = Vec::new();
    for (kind, keep) in [("irq", 1), ("softirq", 1), ("hrtimer", 1), ("task", 3)] {
        let mut of_kind: Vec<&Holder> =
            all.iter().filter(|h| h.kind == kind && cpu.is_none_or(|c| h.cpu == c)).collect();
        of_kind.sort_by_key(|h| (std::cmp::Reverse(h.duration_ns), h.start_ns));
        holders.extend(of_kind.into_iter().take(keep).cloned());
    }
    holders.sort_by_key(|h| std::cmp::Reverse(h.duration_ns));
    let culprit = holders.first().cloned();
    Findings { responder, holders, culprit }
}

fn responder_in(snap: &Snapshot, start: u64, end: u64, pid: Option<u32>) -> ResponderSeen {
    let mut seen = ResponderSeen { pid, ..ResponderSeen::default() };
    let Some(pid) = pid else { return seen };
    // The CPU of its last marker before the window, until a wake-up says otherwise.
    seen.cpu = snap.events.iter().rfind(|e| e.pid == pid && e.ts_ns <= end).map(|e| e.cpu);
    for e in snap.events.iter().filter(|e| e.ts_ns >= start && e.ts_ns <= end) {
        match e.name.as_str() {
            "sched_wakeup" | "sched_waking" if seen.woken_ns.is_none() => {
                if let Some((_, p, cpu)) = parse_wakeup(&e.details) {
                    if p == pid {
                        seen.woken_ns = Some(e.ts_ns);
                        seen.cpu = cpu.or(seen.cpu);
                    }
                }
            }
            "sched_switch"
                if seen.woken_ns.is_some()
                    && seen.ran_ns.is_none()
                    && parse_switch(&e.details).is_some_and(|(_, _, _, next)| next == pid) =>
            {
                seen.ran_ns = Some(e.ts_ns);
            }
            _ => {}
        }
    }
    seen
}

/// irq, softirq and hrtimer callbacks, paired per CPU.
fn handlers(events: &[Event], start: u64, end: u64) -> Vec<Holder> {
    let mut open: HashMap<(u32, &'static str), (u64, String)> = HashMap::new();
    let mut out = Vec::new();
    for e in events.iter().filter(|e| e.ts_ns <= end) {
        let (kind, entry) = match e.name.as_str() {
            "irq_handler_entry" => ("irq", true),
            "irq_handler_exit" => ("irq", false),
            "softirq_entry" => ("softirq", true),
            "softirq_exit" => ("softirq", false),
            "hrtimer_expire_entry" => ("hrtimer", true),
            "hrtimer_expire_exit" => ("hrtimer", false),
            _ => continue,
        };
        if entry {
            open.insert((e.cpu, kind), (e.ts_ns, handler_name(kind, &e.details)));
        } else if let Some((from, name)) = open.remove(&(e.cpu, kind)) {
            push_clipped(&mut out, kind, name, e.cpu, from, e.ts_ns, start, end, false);
        }
    }
    for ((cpu, kind), (from, name)) in open {
        push_clipped(&mut out, kind, name, cpu, from, end, start, end, true);
    }
    out
}

fn handler_name(kind: &str, details: &str) -> String {
    let value = |key: &str| {
        details.split_whitespace().find_map(|w| w.strip_prefix(key).map(|v| v.trim_matches(['[', ']'])))
    };
    match kind {
        "irq" => format!(
            "irq {} {}",
            value("irq=").unwrap_or("?"),
            details.split_once("name=").map_or("", |(_, n)| n.trim())
        ),
        "softirq" => format!("softirq {}", value("[action=").unwrap_or("?")),
        _ => value("function=").unwrap_or("?").to_string(),
    }
}

/// Each CPU's running task between its `sched_switch`es, named as its
/// latest event calls it (a fork's child takes its new name at exec). A switch the
/// trace lacks (seen here: a task migrated onto an idle CPU, its switch
/// from the idle task never logged) shows in the next event the CPU logs
/// under another task: the slice before ends there and the new one starts.
fn tasks(events: &[Event], start: u64, end: u64, responder: Option<u32>) -> Vec<Holder> {
    let mut current: HashMap<u32, (u64, String, u32)> = HashMap::new();
    let mut out = Vec::new();
    let close = |out: &mut Vec<Holder>, cpu: u32, slice: Option<(u64, String, u32)>, at: u64| {
        if let Some((from, name, pid)) = slice {
            if counts_as_task(&name, pid, responder) {
                push_clipped(out, "task", format!("{name} (pid {pid})"), cpu, from, at, start, end, false);
            }
        }
    };
    for e in events.iter().filter(|e| e.ts_ns <= end) {
        if e.name == "sched_switch" {
            let Some((prev, prev_pid, next, next_pid)) = parse_switch(&e.details) else { continue };
            // The switch names the task going out as it is now called.
            let from = current.remove(&e.cpu).map_or(start.min(e.ts_ns), |(f, _, _)| f);
            close(&mut out, e.cpu, Some((from, prev, prev_pid)), e.ts_ns);
            current.insert(e.cpu, (e.ts_ns, next, next_pid));
        } else if current.get(&e.cpu).is_some_and(|c| c.2 != e.pid) {
            let slice = current.remove(&e.cpu);
            close(&mut out, e.cpu, slice, e.ts_ns);
            current.insert(e.cpu, (e.ts_ns, e.task.clone(), e.pid));
        } else if let Some(c) = current.get_mut(&e.cpu).filter(|c| c.1 != e.task && !e.task.starts_with('<'))
        {
            // The task renamed itself (an exec after its fork): its name now.
            c.1.clone_from(&e.task);
        }
    }
    for (cpu, (from, name, pid)) in current {
        if counts_as_task(&name, pid, responder) {
            push_clipped(&mut out, "task", format!("{name} (pid {pid})"), cpu, from, end, start, end, true);
        }
    }
    out
}

/// Not idle, not the responder, not its own trigger thread (which runs
/// because the trigger came).
fn counts_as_task(name: &str, pid: u32, responder: Option<u32>) -> bool {
    pid != 0 && Some(pid) != responder && name != "trace-trigger"
}

#[allow(clippy::too_many_arguments)]
fn push_clipped(
    out: &mut Vec<Holder>,
    kind: &str,
    name: String,
    cpu: u32,
    from: u64,
    to: u64,
    start: u64,
    end: u64,
    open: bool,
) {
    let (a, b) = (from.max(start), to.min(end));
    if b > a {
        out.push(Holder { kind: kind.into(), name, cpu, start_ns: a, duration_ns: b - a, open });
    }
}
