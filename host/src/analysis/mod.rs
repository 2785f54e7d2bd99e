//! Samples to statistics, in memory that does not grow with the run:
//! sequence tracking over a fixed window, an HdrHistogram for percentiles,
//! exact min/max/sum/count beside it, the worst case, and 1 µs bins for the
//! cyclictest-style histfile.
//!
//! A timeout is a *censored* sample: a latency known only to exceed the
//! timeout. It stays in the population of every figure (the book's concepts/identity-and-censoring.md, "The
//! tail is measured, never cut off"): percentiles rank the timeouts above every
//! measured latency, so a percentile or max that falls among them is
//! [`Figure::Above`] the timeout, never a smaller number; the 1 µs bins
//! count a timeout as an overflow, so bins + overflows = samples, as in
//! cyclictest. Only the mean and the minimum are over measured latencies,
//! with the censored count beside them. Every tick is converted to
//! nanoseconds with exact integer arithmetic ([`TickConv`]).
//!
//! **Every scheduled instant is a sample** (coordinated omission, issue
//! 42). A control loop sends on its schedule whether or not the target is
//! behind; the probe, with every identity held (or one in flight and the
//! last sample not over), waits, and the stimuli it holds back are exactly
//! the ones that would have met the stall. So the figures are taken on the
//! schedule's clock, as wrk2 and HdrHistogram correct for it:
//!
//! - a stimulus that waited for its slot (the probe's `late_ticks`) is
//!   timed from its *planned* instant: its latency is the wait plus the
//!   target's answer time, what a loop that queued its message then sees;
//! - a scheduled instant that got no stimulus at all (the probe's
//!   `omitted`: the schedule re-anchored past it) is a sample too, timed
//!   from that instant to the answer of the stimulus that went out after
//!   it: that stimulus stands for every message the loop would have queued
//!   behind the stall. It is measured, not invented: the answer came then,
//!   and an in-order target answers nothing queued behind the stall
//!   sooner than it answered the one in front (so the figure is never
//!   below the lower bound "from the instant to when the stall ended").
//!   Where that answer is a timeout, or the wait takes the latency past the
//!   timeout, the instant is a timeout sample (censored, above the
//!   timeout), like any other.
//!
//! Every figure, the tail model, the histfile, gates and `compare` use this
//! schedule view. The target's own service time (from the probe's actual
//! send, what the probe measured before issue 42) is kept beside it in
//! [`Analysis::service`], and reported where the two differ.
//!
//! The statistics room, by the state each part owns:
//!
//! | module | owns |
//! |---|---|
//! | this one | [`Analysis`]: one run's counts, histogram, exact figures, bins, worst case |
//! | `tick` | [`TickConv`]: ticks to ns |
//! | `seq` | [`SeqTracker`]: lost, duplicate and late sequence numbers |
//! | `edges` | [`EdgeStats`] and periodic mode's cycles folded into the samples |
//! | [`figure`] | [`Figure`], a censored figure; [`figure::PERCENTILES`]; [`rank`] |
//! | [`periodic`] | the fitted schedule of a periodic target, its cycle spill |
//! | [`timeline`] | latency per second of the run |
//! | [`phases`] | the figures of each phase of a load schedule |
//! | [`targetlog`] | the target's own log set beside the probe's view |
//! | [`tail`] | the run's worst samples kept, and the tail model made from them |
//! | [`trace`] | the target's trace snapshots: parsed, windowed, the culprit guessed |

use hdrhistogram::Histogram;
use latprobe_protocol::{Outcome, SampleBatch};

pub use crate::samples::Instant;

mod edges;
pub mod figure;
pub mod numeric;
pub mod periodic;
pub mod phases;
mod seq;
pub mod tail;
pub mod targetlog;
mod tick;
pub mod timeline;
pub mod trace;

pub use edges::EdgeStats;
pub use figure::{rank, Figure};
use periodic::{CycleEvent, CycleSpill, PeriodicFit};
pub use seq::{SeqTracker, SeqVerdict, SEQ_WINDOW};
pub use tick::TickConv;

/// The worst measured sample (a timeout is worse, but has no latency).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Worst {
    /// Its sequence number.
    pub seq: u64,
    /// Its latency.
    pub latency_ns: u64,
    /// Its stimulus, from the start of the measurement.
    pub at_ns_from_start: u64,
}

/// The target's service time (from the probe's actual send of each
/// stimulus) beside the schedule view every figure uses, and what the
/// schedule view added: the stimuli that waited and the instants that got
/// no stimulus (module docs).
#[derive(Debug)]
pub struct ServiceView {
    /// Service latencies of the measured stimuli (after calibration).
    pub hist: Histogram<u64>,
    /// Stimuli that timed out (censored in both views).
    pub timeouts: u64,
    /// The largest service latency.
    pub max_ns: u64,
    /// Their sum, for the mean.
    pub sum_ns: u128,
    /// Stimuli that waited for their slot: timed from their planned
    /// instant in the schedule view.
    pub waited: u64,
    /// Scheduled instants that got no stimulus: each a sample in the
    /// schedule view, none here.
    pub omitted: u64,
    /// Of those, the ones that are timeout samples (their stimulus timed
    /// out, or the wait took them past the timeout).
    pub omitted_censored: u64,
    /// The smallest latency among the measured omitted instants (ns);
    /// `u64::MAX` while there is none.
    pub omitted_min_ns: u64,
    /// The longest stretch of scheduled time with no stimulus: the longest
    /// wait of a stimulus past its planned instant (ns).
    pub longest_gap_ns: u64,
}

impl ServiceView {
    fn new(high_ns: u64) -> Self {
        Self {
            hist: phases::histogram(high_ns),
            timeouts: 0,
            max_ns: 0,
            sum_ns: 0,
            waited: 0,
            omitted: 0,
            omitted_censored: 0,
            omitted_min_ns: u64::MAX,
            longest_gap_ns: 0,
        }
    }

    /// Whether the schedule view differs from the service time at all.
    pub fn differs(&self) -> bool {
        self.waited + self.omitted > 0
    }

    /// Stimuli sent (each one service sample).
    pub fn samples(&self) -> u64 {
        self.hist.len() + self.timeouts
    }

    /// The service latency at quantile `q`, timeouts ranked on top (as
    /// [`Analysis::quantile`]), above `timeout_ns` among them.
    pub fn quantile(&self, q: f64, timeout_ns: u64) -> Figure {
        let min = if self.hist.is_empty() { 0 } else { self.hist.min() };
        phases::censored_quantile(&self.hist, self.hist.len(), self.timeouts, min, self.max_ns, timeout_ns, q)
    }
}

/// How many overflow sequence numbers the histfile lists (cyclictest lists
/// a bounded number too and counts the rest).
pub const OVERFLOW_SEQS_KEPT: usize = 1024;

/// Everything measured in one run.
#[derive(Debug)]
pub struct Analysis {
    conv: TickConv,
    start_tick: u64,
    first_seq: u64,
    /// Sequence accounting of the samples.
    pub seq: SeqTracker,
    /// Histogram of the measured latencies (responses only).
    hist: Histogram<u64>,
    /// A sample without a response is a latency above this (ns).
    timeout_ns: u64,
    /// The probe's own offset subtracted from every measured latency
    /// (`--calibration`), ns.
    offset_ns: u64,
    /// Below this raw latency (the calibration loopback's own minimum) a
    /// latency is faster than the probe's own path ever was.
    floor_ns: u64,
    /// Measured latencies below the calibration loopback's minimum: faster
    /// than the probe itself, so the calibration does not fit this bench.
    /// (Below the offset but above that minimum is the probe's jitter: the
    /// corrected latency is then taken as 0.)
    pub below_calibration: u64,
    /// Responses the probe reported later than its own timeout: no sound
    /// probe sends one (it reports a timeout then), so each is taken as a
    /// timeout, counted here, and noted in the report.
    pub beyond_timeout: u64,
    /// Samples the probe flagged as triggered (`--trigger-above`): its
    /// trigger output rose for them.
    pub triggered: u64,
    /// Sequence numbers of the first [`OVERFLOW_SEQS_KEPT`] triggered
    /// samples, in order: the target's k-th trigger is the k-th of them
    /// (the trace snapshots are tied to their samples by it).
    pub triggered_seqs: Vec<u64>,
    /// The probe's timeout before any calibration, ns (0: none).
    probe_timeout_ns: u64,
    /// Samples with a response: measured latencies.
    pub responses: u64,
    /// Samples that timed out: latencies above the timeout (censored).
    pub timeouts: u64,
    /// Smallest measured latency (meaningless while `responses == 0`).
    pub min_ns: u64,
    /// Largest measured latency; the max of all samples is above the
    /// timeout when there are timeouts (see [`Analysis::max`]).
    pub max_ns: u64,
    /// Sum of measured latencies.
    pub sum_ns: u128,
    /// The worst measured sample.
    pub worst: Option<Worst>,
    /// The latest latency, for a live display.
    pub last_ns: Option<u64>,
    /// Measured latencies per 1 µs bin, from 0.
    pub bins: Vec<u64>,
    /// Latencies beyond the last bin, and timeouts: bins + overflows =
    /// samples.
    pub overflows: u64,
    /// Sequence numbers of the first [`OVERFLOW_SEQS_KEPT`] overflows; the
    /// rest are counted in `overflows` only.
    pub overflow_seqs: Vec<u64>,
    /// Batches whose data did not decode (samples before the damage are used).
    pub bad_batches: u64,
    /// Periodic-mode edges.
    pub edges: EdgeStats,
    /// Periodic mode: the fitted schedule. Its cycles are this analysis's
    /// samples (sequence number = cycle, latency = wake-up delay against the
    /// fit); a missed period, or an edge later than the timeout after its
    /// cycle, is a timeout sample.
    pub fit: Option<PeriodicFit>,
    /// Periodic mode: edges later than the timeout after their cycle's
    /// fitted time (timeout samples, their delay not used).
    pub late_edges: u64,
    /// Periodic mode: every cycle's delay, for `--target-log`.
    pub spill: Option<CycleSpill>,
    /// Latency over time: per-second counts, max and p99.
    pub timeline: timeline::TimelineRecorder,
    /// The figures of each phase of the load schedule (none without one).
    pub phases: phases::PhaseTallies,
    /// Every counted sample as a row (`report --samples`).
    pub rows: Option<crate::samples::Feed>,
    /// The run's worst samples with their sequence numbers and times
    /// (bounded), for the tail model.
    pub tail: tail::TailStore,
    /// The target's service time beside the schedule view (module docs).
    pub service: ServiceView,
    last_edge_seq: Option<u64>,
    events: Vec<CycleEvent>,
}

impl Analysis {
    /// A run on a timer of `timer_hz`, starting at `start_tick` with sample
    /// `first_seq`, binning latencies up to `histfile_max_us`, where a
    /// sample without a response is a latency above `timeout_ns`.
    pub fn new(
        timer_hz: u32,
        start_tick: u64,
        first_seq: u64,
        histfile_max_us: u32,
        timeout_ns: u64,
    ) -> Self {
        let conv = TickConv::new(timer_hz);
        // The largest latency the wire can carry: a u32 of ticks.
        let high = conv.ns32(u32::MAX).max(2);
        let hist = phases::histogram(high);
        Self {
            conv,
            start_tick,
            first_seq,
            seq: SeqTracker::new(first_seq),
            hist,
            timeout_ns,
            offset_ns: 0,
            floor_ns: 0,
            below_calibration: 0,
            beyond_timeout: 0,
            triggered: 0,
            triggered_seqs: Vec::new(),
            probe_timeout_ns: timeout_ns,
            responses: 0,
            timeouts: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
            worst: None,
            last_ns: None,
            bins: vec![0; histfile_max_us as usize],
            fit: None,
            late_edges: 0,
            spill: None,
            timeline: timeline::TimelineRecorder::new(),
            phases: phases::PhaseTallies::default(),
            rows: None,
            tail: tail::TailStore::new(),
            service: ServiceView::new(high),
            last_edge_seq: None,
            events: Vec::new(),
            overflows: 0,
            overflow_seqs: Vec::new(),
            bad_batches: 0,
            edges: EdgeStats::new(first_seq),
        }
    }

    /// The tick converter.
    pub fn conv(&self) -> TickConv {
        self.conv
    }

    /// The first sequence number of the run.
    pub fn first_seq(&self) -> u64 {
        self.first_seq
    }

    /// Samples received (responses and timeouts).
    pub fn samples(&self) -> u64 {
        self.responses + self.timeouts
    }

    /// Subtract the probe's own offset `offset_ns` (a loopback
    /// calibration) from every measured latency. A timeout sample's raw
    /// latency exceeded the timeout, so its corrected one exceeds the
    /// timeout less the offset: the censoring bound moves with it.
    /// `floor_ns` is the calibration loopback's smallest latency: a raw
    /// latency below it is counted in [`Analysis::below_calibration`].
    pub fn set_calibration(&mut self, offset_ns: u64, floor_ns: u64) {
        self.timeout_ns = self.timeout_ns.saturating_sub(offset_ns.saturating_sub(self.offset_ns));
        self.offset_ns = offset_ns;
        self.floor_ns = floor_ns;
    }

    /// Count the samples of each phase `(start_s, end_s)` of a load
    /// schedule apart as well, by their stimulus's time from the start.
    pub fn set_phases(&mut self, spans: &[(u64, Option<u64>)]) {
        self.phases = phases::PhaseTallies::new(spans, self.conv.ns32(u32::MAX));
    }

    /// The calibration offset subtracted from every latency (ns).
    pub fn calibration_ns(&self) -> u64 {
        self.offset_ns
    }

    /// The timeout: every timeout sample is a latency above it (ns).
    pub fn timeout_ns(&self) -> u64 {
        self.timeout_ns
    }

    /// Ingest one batch of echo samples.
    pub fn ingest_samples(&mut self, batch: &SampleBatch<'_>) {
        for s in batch.iter() {
            let s = match s {
                Ok(s) => s,
                Err(_) => {
                    self.bad_batches += 1;
                    return;
                }
            };
            if self.seq.observe(s.seq) == SeqVerdict::Duplicate {
                continue;
            }
            if s.triggered {
                self.triggered += 1;
                if self.triggered_seqs.len() < OVERFLOW_SEQS_KEPT {
                    self.triggered_seqs.push(s.seq);
                }
            }
            let outcome = match s.outcome {
                Outcome::Response(t)
                    if self.probe_timeout_ns > 0 && self.conv.ns32(t) > self.probe_timeout_ns =>
                {
                    self.beyond_timeout += 1;
                    Outcome::Timeout
                }
                o => o,
            };
            if let Outcome::Response(t) = outcome {
                let raw = self.conv.ns32(t);
                if raw < self.floor_ns {
                    self.below_calibration += 1;
                }
                let ns = raw.saturating_sub(self.offset_ns);
                self.service.hist.saturating_record(ns);
                self.service.max_ns = self.service.max_ns.max(ns);
                self.service.sum_ns += u128::from(ns);
            } else {
                self.service.timeouts += 1;
            }
            if !s.waited() {
                match outcome {
                    Outcome::Timeout => self.timed_out(s.seq, s.stimulus_tick, s.triggered),
                    Outcome::Response(t) => {
                        let ns = self.conv.ns32(t).saturating_sub(self.offset_ns);
                        self.record(s.seq, s.stimulus_tick, ns, s.triggered, Instant::Sent);
                    }
                }
                continue;
            }
            self.ingest_waited(&s, outcome, batch.interval_ticks);
        }
    }

    /// A stimulus that waited `late_ticks` past its planned instant, and the
    /// `omitted` instants after that plan that got no stimulus: each a
    /// sample on the schedule's clock, timed to this stimulus's answer
    /// (module docs). Rare (a stall), so none of this is on the hot path;
    /// the instants above the timeout (the earliest ones: the latency falls
    /// with each later instant) are counted in bulk, so an interval far
    /// shorter than the target's answers (millions of instants a stall)
    /// costs a few operations a second of them, not one per instant.
    fn ingest_waited(&mut self, s: &latprobe_protocol::Sample, outcome: Outcome, interval_ticks: u32) {
        let planned = s.stimulus_tick.saturating_sub(u64::from(s.late_ticks));
        let step = u64::from(interval_ticks).max(1);
        let n = u64::from(s.omitted);
        self.service.waited += 1;
        self.service.omitted += n;
        self.service.longest_gap_ns = self.service.longest_gap_ns.max(self.conv.ns(u64::from(s.late_ticks)));
        // The answer's tick, if one came in time (the service latency).
        let answer = match outcome {
            Outcome::Response(t) => Some(s.stimulus_tick.saturating_add(u64::from(t))),
            Outcome::Timeout => None,
        };
        let at = |k: u64| planned.saturating_add(k.saturating_mul(step));
        // From the instant to the answer, as the probe's raw latency was
        // (the calibration then takes off the probe's own path); `None`:
        // above the timeout.
        let latency = |a: &Self, k: u64| {
            let ns = a.conv.ns(answer?.saturating_sub(at(k)));
            (a.probe_timeout_ns == 0 || ns <= a.probe_timeout_ns).then(|| ns.saturating_sub(a.offset_ns))
        };
        // The first instant (0: the stimulus itself) not above the timeout:
        // a binary search, the latency falling with k.
        let (mut lo, mut hi) = (0, n + 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if latency(self, mid).is_some() {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let first_measured = lo;
        if first_measured > 0 {
            self.timed_out_as(s.seq, planned, s.triggered, Instant::Late);
            if first_measured > 1 {
                self.timed_out_run(s.seq, at(1), first_measured - 1, step);
            }
        }
        for k in first_measured..=n {
            let ns = latency(self, k).unwrap_or(self.timeout_ns);
            if k == 0 {
                self.record(s.seq, planned, ns, s.triggered, Instant::Late);
            } else {
                self.service.omitted_min_ns = self.service.omitted_min_ns.min(ns);
                self.record(s.seq, at(k), ns, false, Instant::Omitted);
            }
        }
    }

    /// `count` omitted instants from `first` every `step` ticks, all above
    /// the timeout: as many timeout samples, counted a second at a time
    /// (one row each in the export, which asks for them).
    fn timed_out_run(&mut self, seq: u64, first: u64, count: u64, step: u64) {
        self.service.omitted_censored += count;
        self.timeouts += count;
        self.overflows += count;
        let room = OVERFLOW_SEQS_KEPT.saturating_sub(self.overflow_seqs.len());
        let kept = usize::try_from(count).map_or(room, |c| c.min(room));
        self.overflow_seqs.extend(std::iter::repeat_n(seq, kept));
        let hz = u64::from(self.conv.hz()).max(1);
        let rel = |tick: u64| tick.saturating_sub(self.start_tick);
        // A second at a time: the instants of second `sec` are k in
        // [k0, k1).
        let mut k0 = 0;
        while k0 < count {
            let t0 = rel(first.saturating_add(k0.saturating_mul(step)));
            let end = (t0 / hz).saturating_add(1).saturating_mul(hz);
            let k1 = (k0 + (end - t0).div_ceil(step)).min(count);
            self.timeline.push_ticks(t0, hz, None);
            self.timeline.push_timeouts_now(k1 - k0 - 1);
            k0 = k1;
        }
        // The tail keeps at most TAIL_KEPT of them (they tie); the phases
        // and the export want each.
        let kept = count.min(tail::TAIL_KEPT as u64);
        for k in 0..kept {
            let ns = self.conv.ns(rel(first.saturating_add(k.saturating_mul(step))));
            self.tail.push(seq, ns, self.timeout_ns, true);
        }
        if !self.phases.is_empty() || self.rows.is_some() {
            for k in 0..count {
                let ns = self.conv.ns(rel(first.saturating_add(k.saturating_mul(step))));
                if !self.phases.is_empty() {
                    self.phases.timeout(ns);
                }
                if let Some(rows) = &mut self.rows {
                    rows.timeout(seq, Some(ns), self.timeout_ns, false, Instant::Omitted);
                }
            }
        }
    }

    /// A timeout sample of the stimulus (periodic: the edge) at `tick`.
    fn timed_out(&mut self, seq: u64, tick: u64, triggered: bool) {
        self.timed_out_as(seq, tick, triggered, Instant::Sent);
    }

    /// [`Analysis::timed_out`] of a scheduled instant of kind `kind`.
    fn timed_out_as(&mut self, seq: u64, tick: u64, triggered: bool, kind: Instant) {
        self.timeouts += 1;
        self.overflow(seq);
        let ticks = tick.saturating_sub(self.start_tick);
        self.timeline.push_ticks(ticks, self.conv.hz().into(), None);
        if !self.phases.is_empty() {
            self.phases.timeout(self.conv.ns(ticks));
        }
        self.tail.push(seq, self.conv.ns(ticks), self.timeout_ns, true);
        if let Some(rows) = &mut self.rows {
            rows.timeout(seq, Some(self.conv.ns(ticks)), self.timeout_ns, triggered, kind);
        }
    }

    /// A sample beyond the bins: a latency past the range, or a timeout.
    #[inline]
    fn overflow(&mut self, seq: u64) {
        self.overflows += 1;
        if self.overflow_seqs.len() < OVERFLOW_SEQS_KEPT {
            self.overflow_seqs.push(seq);
        }
    }

    #[inline]
    fn record(&mut self, seq: u64, stimulus_tick: u64, ns: u64, triggered: bool, kind: Instant) {
        self.responses += 1;
        self.sum_ns += u128::from(ns);
        self.min_ns = self.min_ns.min(ns);
        self.last_ns = Some(ns);
        let ticks = stimulus_tick.saturating_sub(self.start_tick);
        self.timeline.push_ticks(ticks, self.conv.hz().into(), Some(ns));
        if !self.phases.is_empty() {
            self.phases.measured(self.conv.ns(ticks), ns);
        }
        self.tail.push_with(seq, ns, || self.conv.ns(ticks));
        if let Some(rows) = &mut self.rows {
            rows.measured(seq, self.conv.ns(ticks), ns, triggered, kind);
        }
        if ns > self.max_ns || self.worst.is_none() {
            self.max_ns = self.max_ns.max(ns);
            self.worst = Some(Worst {
                seq,
                latency_ns: ns,
                at_ns_from_start: self.conv.ns(stimulus_tick.saturating_sub(self.start_tick)),
            });
        }
        self.hist.saturating_record(ns);
        let bin = ns / 1000;
        match self.bins.get_mut(bin as usize) {
            Some(c) => *c += 1,
            None => self.overflow(seq),
        }
    }

    /// The probe took sequence numbers up to `end` (exclusive).
    pub fn finish(&mut self, end: u64, periodic: bool) {
        if periodic {
            self.edges.seq.finish(end);
            self.finish_periodic();
        } else {
            self.seq.finish(end);
        }
    }

    /// The latency at quantile `q` (0..=1) over every sample, timeouts
    /// ranked above every response: the sample of rank `max(1, ⌈q·N⌉)`. A
    /// rank among the timeouts is [`Figure::Above`] the timeout; a
    /// measured one is the histogram's value (within 0.1 %, never below the
    /// sample's, clamped to the exact minimum and maximum).
    pub fn quantile(&self, q: f64) -> Figure {
        phases::censored_quantile(
            &self.hist,
            self.responses,
            self.timeouts,
            self.min_ns,
            self.max_ns,
            self.timeout_ns,
            q,
        )
    }

    /// The largest latency: above the timeout when any sample timed out,
    /// else the exact measured maximum.
    pub fn max(&self) -> Figure {
        if self.timeouts > 0 {
            Figure::Above(self.timeout_ns)
        } else if self.responses > 0 {
            Figure::Value(self.max_ns)
        } else {
            Figure::None
        }
    }

    /// The smallest latency: the exact measured minimum, or above the
    /// timeout when every sample timed out.
    pub fn min(&self) -> Figure {
        if self.responses > 0 {
            Figure::Value(self.min_ns)
        } else if self.timeouts > 0 {
            Figure::Above(self.timeout_ns)
        } else {
            Figure::None
        }
    }

    /// The largest measured latency, if any response came.
    pub fn max_measured_ns(&self) -> Option<u64> {
        (self.responses > 0).then_some(self.max_ns)
    }

    /// Mean of the measured latencies in ns, rounded down; the timeouts
    /// ([`Analysis::timeouts`]) are not in it.
    pub fn mean_ns(&self) -> Option<u64> {
        (self.responses > 0).then(|| (self.sum_ns / u128::from(self.responses)) as u64)
    }
}

#[cfg(test)]
mod tests;
