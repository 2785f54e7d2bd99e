//! Periodic mode inside the analysis: the edges' own counts and raw
//! intervals ([`EdgeStats`]), and the fitted cycles folded into the
//! analysis's samples (a cycle's delay is a sample, a missed period or a
//! too-late edge a timeout).

use latprobe_protocol::EdgeBatch;

use super::periodic::{CycleEvent, PeriodicFit};
use super::{Analysis, Instant, SeqTracker, SeqVerdict, OVERFLOW_SEQS_KEPT};

/// Periodic-mode edge statistics: counts and raw intervals only.
#[derive(Debug, Clone)]
pub struct EdgeStats {
    /// Sequence accounting of the edges.
    pub seq: SeqTracker,
    /// Edges received.
    pub edges: u64,
    last: Option<(u64, u64)>,
    /// Intervals measured between consecutive edges.
    pub intervals: u64,
    /// Shortest interval.
    pub min_ns: u64,
    /// Longest interval.
    pub max_ns: u64,
    /// Sum of intervals.
    pub sum_ns: u128,
}

impl EdgeStats {
    /// No edge yet; the first expected is `first_seq`.
    pub(super) fn new(first_seq: u64) -> Self {
        Self {
            seq: SeqTracker::new(first_seq),
            edges: 0,
            last: None,
            intervals: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
        }
    }
}

impl Analysis {
    /// Periodic mode: fit the schedule of a target whose nominal period is
    /// `nominal_ticks`; an edge later than `horizon_ticks` after its cycle's
    /// fitted time is a timeout sample, as is a missed period.
    pub fn enable_periodic(&mut self, nominal_ticks: u64, horizon_ticks: u64) {
        self.fit = Some(PeriodicFit::new(nominal_ticks, horizon_ticks, self.conv.hz()));
        self.timeout_ns = self.conv.ns(horizon_ticks);
    }

    /// Fold what the fit finished into the samples.
    fn take_cycles(&mut self) {
        let ns_per_tick = 1e9 / f64::from(self.conv.hz().max(1));
        let events = std::mem::take(&mut self.events);
        for ev in &events {
            match *ev {
                CycleEvent::Edge { cycle, tick, delay_ticks } => {
                    let ns = (delay_ticks * ns_per_tick).round() as u64;
                    if let Some(s) = &mut self.spill {
                        s.write(cycle, ns);
                    }
                    if ns > self.timeout_ns {
                        self.late_edges += 1;
                        self.timed_out(cycle, tick, false);
                    } else {
                        self.record(cycle, tick, ns, false, Instant::Sent);
                    }
                }
                CycleEvent::Missed { first, count } => {
                    self.timeouts += count;
                    self.timeline.push_timeouts_now(count);
                    let listed =
                        (OVERFLOW_SEQS_KEPT.saturating_sub(self.overflow_seqs.len()) as u64).min(count);
                    for c in first..first + listed {
                        self.overflow(c);
                    }
                    self.overflows += count - listed;
                    if let Some(s) = &mut self.spill {
                        s.write_missed(first, count);
                    }
                    if let Some(rows) = &mut self.rows {
                        for c in first..first.saturating_add(count) {
                            rows.timeout(c, None, self.timeout_ns, false, Instant::Sent);
                        }
                    }
                }
            }
        }
        self.events = events;
        self.events.clear();
    }

    /// Ingest one batch of periodic-mode edges.
    pub fn ingest_edges(&mut self, batch: &EdgeBatch<'_>) {
        for e in batch.iter() {
            let e = match e {
                Ok(e) => e,
                Err(_) => {
                    self.bad_batches += 1;
                    break;
                }
            };
            let ed = &mut self.edges;
            let verdict = ed.seq.observe(e.seq);
            if verdict == SeqVerdict::Duplicate {
                continue;
            }
            let mut jumped = false;
            if let Some(fit) = &mut self.fit {
                if verdict != SeqVerdict::New {
                    fit.out_of_order += 1;
                } else {
                    let lost = self.last_edge_seq.map_or(0, |l| e.seq.saturating_sub(l).saturating_sub(1));
                    // A damaged tick or sequence number is left out like an
                    // edge lost on the link (the next edge counts it in its
                    // `lost`).
                    jumped = fit.check_jump(e.seq, e.tick, lost);
                    if !jumped {
                        self.last_edge_seq = Some(e.seq);
                        fit.push(e.seq, e.tick, lost, &mut self.events);
                    }
                }
            }
            ed.edges += 1;
            if jumped {
                // Nor is its gap an interval of the target's.
                continue;
            }
            if let Some((seq, tick)) = ed.last {
                if seq.checked_add(1) == Some(e.seq) && e.tick >= tick {
                    let ns = self.conv.ns(e.tick - tick);
                    ed.intervals += 1;
                    ed.min_ns = ed.min_ns.min(ns);
                    ed.max_ns = ed.max_ns.max(ns);
                    ed.sum_ns += u128::from(ns);
                }
            }
            ed.last = Some((e.seq, e.tick));
        }
        if !self.events.is_empty() {
            self.take_cycles();
        }
    }

    /// Periodic mode: place the edges still waiting for their block (the
    /// run is over). Idempotent.
    pub fn finish_periodic(&mut self) {
        if let Some(fit) = &mut self.fit {
            fit.finish(&mut self.events);
        }
        self.take_cycles();
    }
}
