//! The target's trace snapshots (`latprobe-responder --trace`): parsing the
//! ftrace text, the window from the stimulus to the trigger, the events in
//! it per CPU, and the heuristic culprit ([`attribute`]).
//!
//! ```text
//!  trace-seq-N.txt ─parse─▶ events ─window [stimulus, trigger]─▶ excerpt per CPU
//!  trace-seq-N.json (trigger time, stop latency) ─┘                └─▶ longest irq/softirq/timer/task
//! ```
//!
//! The window ends at the trigger (the sidecar's CLOCK_MONOTONIC time, on
//! the trace's axis because the responder sets `trace_clock` to mono) and
//! starts at the trigger minus the threshold, or at the last marker (the
//! answer before: the stimulus came after it), whichever is later. A
//! trigger before the trace's first event (the trace re-armed after it, or
//! the window overwritten) is said, and then no culprit is named.

pub mod attribute;
pub mod parse;

use serde::{Deserialize, Serialize};

pub use attribute::{Findings, Holder};

/// The last marker before the trigger: the answer just before the late one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkerSeen {
    pub seq: u64,
    pub id: Option<u8>,
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
}

/// The window the excerpt and the culprit come from, trace clock ns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub start_ns: u64,
    pub end_ns: u64,
    /// What set the start: `trigger - threshold`, `last marker`, `first event`.
    pub start_from: String,
    /// What set the end: `trigger`, `last event`.
    pub end_from: String,
}

/// One CPU's events in the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuExcerpt {
    pub cpu: u32,
    /// `+12.345us task-pid event: details`, time from the window's start;
    /// the last events before the trigger.
    pub lines: Vec<String>,
    /// Earlier events of the window left out (the lines are the last ones,
    /// nearest the trigger).
    pub omitted: usize,
}

/// A snapshot, read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotAnalysis {
    pub events: usize,
    pub markers: usize,
    pub last_marker: Option<MarkerSeen>,
    pub window: Option<Window>,
    /// The responder's CPU first.
    pub excerpt: Vec<CpuExcerpt>,
    pub findings: Findings,
    /// The trigger came this long before the trace's first event: the
    /// trace was cleared after it (re-armed once an earlier snapshot was
    /// saved) or its ring buffer overwrote the window. The cause is not in
    /// the snapshot, so no culprit is named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_starts_after_trigger_ns: Option<u64>,
}

/// Read `text` (a saved `trace` file); `trigger_ns`: the trigger on the
/// trace clock; `threshold_ns`: how long the stimulus had gone unanswered
/// at the trigger; at most `max_lines` lines per CPU.
pub fn analyse(
    text: &str,
    trigger_ns: Option<u64>,
    threshold_ns: Option<u64>,
    max_lines: usize,
) -> SnapshotAnalysis {
    let snap = parse::parse(text);
    let markers = snap.markers();
    let (first, last) = match (snap.events.first(), snap.events.last()) {
        (Some(f), Some(l)) => (f.ts_ns, l.ts_ns),
        _ => {
            return SnapshotAnalysis {
                events: 0,
                markers: 0,
                last_marker: None,
                window: None,
                excerpt: Vec::new(),
                findings: Findings::default(),
                trace_starts_after_trigger_ns: None,
            }
        }
    };
    // A trigger time off the trace's axis (another trace_clock) is not used.
    let (end, end_from) = match trigger_ns.filter(|&t| t >= first && t <= last.saturating_add(1_000_000_000))
    {
        Some(t) => (t, "trigger"),
        None => (last, "last event"),
    };
    let last_marker = markers.iter().rfind(|m| m.ts_ns <= end).map(|m| MarkerSeen {
        seq: m.seq,
        id: m.id,
        ts_ns: m.ts_ns,
        cpu: m.cpu,
        pid: m.pid,
    });
    let by_threshold = threshold_ns.filter(|_| end_from == "trigger").map(|t| end.saturating_sub(t));
    let (start, start_from) = match (by_threshold, last_marker) {
        (Some(s), Some(m)) if m.ts_ns > s => (m.ts_ns, "last marker"),
        (Some(s), _) => (s.max(first), "trigger - threshold"),
        (None, Some(m)) => (m.ts_ns, "last marker"),
        (None, None) => (first, "first event"),
    };
    let window =
        Window { start_ns: start, end_ns: end, start_from: start_from.into(), end_from: end_from.into() };
    let starts_after = trigger_ns.filter(|&t| t < first).map(|t| first - t);
    let mut findings = attribute::analyse(&snap, start, end, last_marker.map(|m| m.pid));
    if starts_after.is_some() {
        // What held the CPU later is no answer to what made this one late.
        findings.culprit = None;
    }
    let mut cpus: Vec<u32> = snap.events.iter().map(|e| e.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    if let Some(c) = findings.responder.cpu {
        cpus.retain(|&x| x != c);
        cpus.insert(0, c);
    }
    let excerpt = cpus
        .into_iter()
        .filter_map(|cpu| {
            let inside: Vec<&parse::Event> =
                snap.events.iter().filter(|e| e.cpu == cpu && e.ts_ns >= start && e.ts_ns <= end).collect();
            if inside.is_empty() {
                return None;
            }
            // The last lines: nearest the trigger, where the cause is in flight.
            let skip = inside.len().saturating_sub(max_lines);
            let lines = inside
                .iter()
                .skip(skip)
                .map(|e| {
                    let dt = e.ts_ns - start;
                    format!(
                        "+{}.{:03}us {}-{} {}: {}",
                        dt / 1000,
                        dt % 1000,
                        e.task,
                        e.pid,
                        e.name,
                        e.details
                    )
                })
                .collect();
            Some(CpuExcerpt { cpu, lines, omitted: skip })
        })
        .collect();
    SnapshotAnalysis {
        events: snap.events.len(),
        markers: markers.len(),
        last_marker,
        window: Some(window),
        excerpt,
        findings,
        trace_starts_after_trigger_ns: starts_after,
    }
}

#[cfg(test)]
mod tests;
