//! Samples to statistics, in memory that does not grow with the run:
//! sequence tracking over a fixed window, an HdrHistogram for percentiles,
//! exact min/max/sum/count beside it, the worst case, and 1 µs bins for the
//! cyclictest-style histfile.
//!
//! A timeout is a *censored* sample: a latency known only to exceed the
//! timeout. It stays in the population of every figure (README, "The
//! tail is measured, never cut off"): percentiles rank the timeouts above every
//! measured latency, so a percentile or max that falls among them is
//! [`Quantile::Above`] the timeout, never a smaller number; the 1 µs bins
//! count a timeout as an overflow, so bins + overflows = samples, as in
//! cyclictest. Only the mean and the minimum are over measured latencies,
//! with the censored count beside them. Every tick is converted to
//! nanoseconds with exact integer arithmetic ([`TickConv`]).

use hdrhistogram::Histogram;
use latprobe_protocol::{ticks_to_ns, EdgeBatch, Outcome, SampleBatch};

pub use crate::figure::{rank, Quantile};
use crate::periodic::{CycleEvent, CycleSpill, PeriodicFit};

/// Exact ticks→ns conversion, fast for the common cases: a timer rate that
/// divides 1 GHz is a multiplication, and a 32-bit latency fits u64 even
/// times 10⁹, so only 64-bit tick spans need u128 arithmetic. Always equal
/// to [`ticks_to_ns`].
#[derive(Debug, Clone, Copy)]
pub struct TickConv {
    hz: u32,
    mul: u64,
}

impl TickConv {
    /// For a timer of `hz`.
    pub fn new(hz: u32) -> Self {
        let mul = if hz != 0 && 1_000_000_000 % hz == 0 { 1_000_000_000 / u64::from(hz) } else { 0 };
        Self { hz, mul }
    }

    /// The timer rate.
    pub fn hz(&self) -> u32 {
        self.hz
    }

    /// A 32-bit tick count (a latency) in ns.
    #[inline]
    pub fn ns32(&self, ticks: u32) -> u64 {
        if self.mul != 0 {
            u64::from(ticks) * self.mul
        } else if self.hz == 0 {
            0
        } else {
            // u32::MAX * 10⁹ < u64::MAX: no overflow.
            let hz = u64::from(self.hz);
            (u64::from(ticks) * 1_000_000_000 + hz / 2) / hz
        }
    }

    /// A 64-bit tick span in ns.
    pub fn ns(&self, ticks: u64) -> u64 {
        if self.mul != 0 {
            if let Some(ns) = ticks.checked_mul(self.mul) {
                return ns;
            }
        }
        ticks_to_ns(ticks, self.hz)
    }
}

/// Sequence numbers older than this behind the newest are not remembered:
/// a sample that old is counted as a duplicate and not used.
pub const SEQ_WINDOW: u64 = 4096;

/// What [`SeqTracker::observe`] made of a sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqVerdict {
    /// The next one, or one after a gap (the gap is counted lost).
    New,
    /// Arrived after later ones; it fills a gap counted lost before.
    Late,
    /// Seen before (or too old to tell): not to be used again.
    Duplicate,
}

/// Counts lost, duplicate and out-of-order sequence numbers with a fixed
/// bitmap of the last [`SEQ_WINDOW`] numbers.
#[derive(Debug, Clone)]
pub struct SeqTracker {
    /// The number expected next; once `u64::MAX` was seen it stays there
    /// and `exhausted` says that every number has been passed.
    next: u64,
    exhausted: bool,
    seen: [u64; (SEQ_WINDOW / 64) as usize],
    /// Sequence numbers never received (so far).
    pub lost: u64,
    /// Received more than once.
    pub duplicates: u64,
    /// Received after a later one.
    pub out_of_order: u64,
}

impl SeqTracker {
    /// Expect `first` next.
    pub fn new(first: u64) -> Self {
        Self {
            next: first,
            exhausted: false,
            seen: [0; (SEQ_WINDOW / 64) as usize],
            lost: 0,
            duplicates: 0,
            out_of_order: 0,
        }
    }

    /// The sequence number expected next (`u64::MAX` once that was seen).
    pub fn next(&self) -> u64 {
        self.next
    }

    #[inline]
    fn slot(seq: u64) -> (usize, u64) {
        let i = seq % SEQ_WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    /// Account for `seq`.
    #[inline]
    pub fn observe(&mut self, seq: u64) -> SeqVerdict {
        if seq >= self.next && !self.exhausted {
            let gap = seq - self.next;
            if gap >= SEQ_WINDOW {
                self.seen = [0; (SEQ_WINDOW / 64) as usize];
            } else {
                // The slots of the skipped numbers still hold bits from a
                // window ago: clear them, so a late arrival is recognised.
                for s in self.next..seq {
                    let (w, b) = Self::slot(s);
                    self.seen[w] &= !b;
                }
            }
            self.lost += gap;
            let (w, b) = Self::slot(seq);
            self.seen[w] |= b;
            match seq.checked_add(1) {
                Some(n) => self.next = n,
                None => {
                    self.next = u64::MAX;
                    self.exhausted = true;
                }
            }
            return SeqVerdict::New;
        }
        // How far behind the next expected number (2^64 once exhausted).
        let behind = u128::from(self.next) + u128::from(self.exhausted) - u128::from(seq);
        if behind > u128::from(SEQ_WINDOW) {
            self.duplicates += 1;
            return SeqVerdict::Duplicate;
        }
        let (w, b) = Self::slot(seq);
        if self.seen[w] & b != 0 {
            self.duplicates += 1;
            SeqVerdict::Duplicate
        } else {
            self.seen[w] |= b;
            self.lost = self.lost.saturating_sub(1);
            self.out_of_order += 1;
            SeqVerdict::Late
        }
    }

    /// The probe says numbers up to `end` (exclusive) were taken: any not
    /// seen by now are lost.
    pub fn finish(&mut self, end: u64) {
        if end > self.next && !self.exhausted {
            self.lost += end - self.next;
            self.next = end;
        }
    }
}

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

/// How many overflow sequence numbers the histfile lists (cyclictest lists
/// a bounded number too and counts the rest).
pub const OVERFLOW_SEQS_KEPT: usize = 1024;

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
    pub timeline: crate::timeline::Timeline,
    /// Every counted sample as a row (`report --samples`).
    pub rows: Option<crate::samples::Feed>,
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
        let hist = Histogram::new_with_max(high, 3).unwrap_or_else(|_| {
            // new_with_max only fails for high < 2, excluded above; keep a
            // histogram that auto-resizes rather than panic.
            let mut h = Histogram::new(3).expect("3 significant digits is valid");
            h.auto(true);
            h
        });
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
            timeline: crate::timeline::Timeline::new(),
            rows: None,
            last_edge_seq: None,
            events: Vec::new(),
            overflows: 0,
            overflow_seqs: Vec::new(),
            bad_batches: 0,
            edges: EdgeStats {
                seq: SeqTracker::new(first_seq),
                edges: 0,
                last: None,
                intervals: 0,
                min_ns: u64::MAX,
                max_ns: 0,
                sum_ns: 0,
            },
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
            match s.outcome {
                Outcome::Timeout => self.timed_out(s.seq, s.stimulus_tick),
                Outcome::Response(t)
                    if self.probe_timeout_ns > 0 && self.conv.ns32(t) > self.probe_timeout_ns =>
                {
                    self.beyond_timeout += 1;
                    self.timed_out(s.seq, s.stimulus_tick);
                }
                Outcome::Response(t) => {
                    let raw = self.conv.ns32(t);
                    if raw < self.floor_ns {
                        self.below_calibration += 1;
                    }
                    self.record(s.seq, s.stimulus_tick, raw.saturating_sub(self.offset_ns));
                }
            }
        }
    }

    /// A timeout sample of the stimulus (periodic: the edge) at `tick`.
    fn timed_out(&mut self, seq: u64, tick: u64) {
        self.timeouts += 1;
        self.overflow(seq);
        let ticks = tick.saturating_sub(self.start_tick);
        self.timeline.push_ticks(ticks, self.conv.hz().into(), None);
        if let Some(rows) = &mut self.rows {
            rows.timeout(seq, Some(self.conv.ns(ticks)), self.timeout_ns);
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
    fn record(&mut self, seq: u64, stimulus_tick: u64, ns: u64) {
        self.responses += 1;
        self.sum_ns += u128::from(ns);
        self.min_ns = self.min_ns.min(ns);
        self.last_ns = Some(ns);
        let ticks = stimulus_tick.saturating_sub(self.start_tick);
        self.timeline.push_ticks(ticks, self.conv.hz().into(), Some(ns));
        if let Some(rows) = &mut self.rows {
            rows.measured(seq, self.conv.ns(ticks), ns);
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
                        self.timed_out(cycle, tick);
                    } else {
                        self.record(cycle, tick, ns);
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
                            rows.timeout(c, None, self.timeout_ns);
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
    /// rank among the timeouts is [`Quantile::Above`] the timeout; a
    /// measured one is the histogram's value (within 0.1 %, never below the
    /// sample's, clamped to the exact minimum and maximum).
    pub fn quantile(&self, q: f64) -> Quantile {
        let n = self.samples();
        if n == 0 {
            return Quantile::None;
        }
        let r = rank(q, n);
        if r > self.responses {
            return Quantile::Above(self.timeout_ns);
        }
        // The r-th smallest response: a quantile in the middle of its rank,
        // so float rounding cannot move it to a neighbour.
        let mid = (r as f64 - 0.5) / self.responses as f64;
        Quantile::Value(self.hist.value_at_quantile(mid).clamp(self.min_ns, self.max_ns))
    }

    /// The largest latency: above the timeout when any sample timed out,
    /// else the exact measured maximum.
    pub fn max(&self) -> Quantile {
        if self.timeouts > 0 {
            Quantile::Above(self.timeout_ns)
        } else if self.responses > 0 {
            Quantile::Value(self.max_ns)
        } else {
            Quantile::None
        }
    }

    /// The smallest latency: the exact measured minimum, or above the
    /// timeout when every sample timed out.
    pub fn min(&self) -> Quantile {
        if self.responses > 0 {
            Quantile::Value(self.min_ns)
        } else if self.timeouts > 0 {
            Quantile::Above(self.timeout_ns)
        } else {
            Quantile::None
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
mod tests {
    use super::*;
    use latprobe_protocol::{Sample, SampleBatchBuilder};

    #[test]
    fn tick_conversion_matches_the_protocol() {
        for hz in [1_000_000_000, 100_000_000, 84_000_000, 3_000_000, 32_768, 1] {
            let c = TickConv::new(hz);
            for t in [0u32, 1, 2, 3, 999, 123_456_789, u32::MAX] {
                assert_eq!(c.ns32(t), ticks_to_ns(u64::from(t), hz), "hz {hz} t {t}");
            }
            for t in [0u64, 7, u64::from(u32::MAX) + 1, u64::MAX / 3, u64::MAX] {
                assert_eq!(c.ns(t), ticks_to_ns(t, hz), "hz {hz} t {t}");
            }
        }
    }

    #[test]
    fn sequence_gaps_duplicates_and_late_arrivals() {
        let mut t = SeqTracker::new(10);
        assert_eq!(t.observe(10), SeqVerdict::New);
        assert_eq!(t.observe(13), SeqVerdict::New); // 11, 12 lost
        assert_eq!(t.lost, 2);
        assert_eq!(t.observe(12), SeqVerdict::Late);
        assert_eq!(t.observe(12), SeqVerdict::Duplicate);
        assert_eq!(t.observe(13), SeqVerdict::Duplicate);
        assert_eq!((t.lost, t.out_of_order, t.duplicates), (1, 1, 2));
        t.finish(20); // 14..20 never came
        assert_eq!(t.lost, 7);
        // A number far behind the window is a duplicate, not a late one.
        let mut t = SeqTracker::new(0);
        t.observe(SEQ_WINDOW * 3);
        assert_eq!(t.observe(1), SeqVerdict::Duplicate);
        // A slot reused after a window must not look seen.
        let mut t = SeqTracker::new(0);
        for s in 0..SEQ_WINDOW {
            t.observe(s);
        }
        t.observe(SEQ_WINDOW + 1);
        assert_eq!(t.observe(SEQ_WINDOW), SeqVerdict::Late);
    }

    fn batch_of(samples: &[Sample]) -> SampleBatchBuilder {
        let mut b = SampleBatchBuilder::new(1000, 64);
        for s in samples {
            b.push(s).unwrap();
        }
        b
    }

    #[test]
    fn stats_are_exact_and_timeouts_are_censored_overflows() {
        // 100 MHz: 10 ns ticks; timeout 50 µs.
        let mut a = Analysis::new(100_000_000, 500, 0, 10, 50_000);
        let s = |seq: u64, lat: Option<u32>| Sample {
            seq,
            stimulus_tick: 500 + seq * 1000,
            outcome: lat.map_or(Outcome::Timeout, Outcome::Response),
        };
        let b = batch_of(&[s(0, Some(100)), s(1, None), s(2, Some(250)), s(3, Some(2000))]);
        a.ingest_samples(&b.batch());
        a.ingest_samples(&b.batch()); // the same batch again: all duplicates
        assert_eq!((a.responses, a.timeouts, a.seq.duplicates), (3, 1, 4));
        assert_eq!((a.min_ns, a.max_ns), (1_000, 20_000));
        assert_eq!(a.mean_ns(), Some((1_000 + 2_500 + 20_000) / 3));
        assert_eq!(a.worst, Some(Worst { seq: 3, latency_ns: 20_000, at_ns_from_start: 30_000 }));
        assert_eq!(a.bins[1], 1);
        assert_eq!(a.bins[2], 1);
        // The 20 µs latency is past the 10 µs bins; the timeout too.
        assert_eq!((a.overflows, a.overflow_seqs.clone()), (2, vec![1, 3]));
        assert_eq!(a.bins.iter().sum::<u64>() + a.overflows, a.samples());
        // 4 samples: ranks 1..=3 are measured, rank 4 is the timeout.
        assert_eq!(a.quantile(0.0), Quantile::Value(1_000));
        assert_eq!(a.quantile(0.75), Quantile::Value(20_000));
        assert_eq!(a.quantile(0.76), Quantile::Above(50_000));
        assert_eq!(a.quantile(1.0), Quantile::Above(50_000));
        assert_eq!(a.max(), Quantile::Above(50_000));
        assert_eq!(a.max_measured_ns(), Some(20_000));
        assert_eq!(a.min(), Quantile::Value(1_000));
    }

    /// Feed `(seq, latency ticks or timeout)` in as many batches as needed.
    fn ingest(a: &mut Analysis, samples: impl IntoIterator<Item = (u64, Option<u32>)>) {
        let mut b = SampleBatchBuilder::new(1_000_000, 64);
        for (seq, lat) in samples {
            let s = Sample {
                seq,
                stimulus_tick: seq * 1_000_000,
                outcome: lat.map_or(Outcome::Timeout, Outcome::Response),
            };
            if b.push(&s).is_err() {
                a.ingest_samples(&b.batch());
                b.clear();
                b.push(&s).unwrap();
            }
        }
        a.ingest_samples(&b.batch());
    }

    #[test]
    fn ranks_are_exact_despite_float_quantiles() {
        assert_eq!(rank(0.999, 1000), 999);
        assert_eq!(rank(0.9999, 10_000), 9_999);
        assert_eq!(rank(0.99, 100), 99);
        assert_eq!(rank(0.9, 10), 9);
        assert_eq!(rank(0.5, 3), 2);
        assert_eq!(rank(0.0, 5), 1);
        assert_eq!(rank(1.0, 5), 5);
        assert_eq!(rank(0.5, 1), 1);
        assert_eq!(rank(0.999, u64::MAX), u64::MAX - u64::MAX / 1000);
    }

    #[test]
    fn percentiles_rank_timeouts_above_every_response() {
        // 1 GHz: ticks are ns. Responses of 1..=990 µs, 10 timeouts at 1 ms.
        let mut a = Analysis::new(1_000_000_000, 0, 0, 1000, 1_000_000);
        let lat = |i: u64| (i + 1) as u32 * 1_000;
        ingest(&mut a, (0..1000).map(|i| (i, if i % 100 == 99 { None } else { Some(lat(i - i / 100)) })));
        assert_eq!((a.responses, a.timeouts), (990, 10));
        let mut truth: Vec<u64> = (0..990).map(|i| u64::from(lat(i))).collect();
        truth.sort_unstable();
        for q in [0.0, 0.001, 0.25, 0.5, 0.9, 0.95, 0.98, 0.989, 0.99] {
            let r = rank(q, 1000) as usize;
            let Quantile::Value(v) = a.quantile(q) else { panic!("q {q} must be measured") };
            let t = truth[r - 1];
            // Never below the truth, within HdrHistogram's 0.1 %.
            assert!(v >= t && v <= t + t / 1000, "q {q}: {v} vs truth {t}");
        }
        // The boundary: rank 990 is the largest response, 991 the first timeout.
        assert_eq!(a.quantile(0.99), Quantile::Value(990_000));
        assert_eq!(a.quantile(0.991), Quantile::Above(1_000_000));
        assert_eq!(a.quantile(0.999), Quantile::Above(1_000_000));
        assert_eq!(a.quantile(0.9999), Quantile::Above(1_000_000));
        assert_eq!(a.max(), Quantile::Above(1_000_000));
        assert_eq!(a.max_measured_ns(), Some(990_000));
        assert_eq!(a.worst.map(|w| (w.seq, w.latency_ns)), Some((998, 990_000)));
        assert_eq!(a.mean_ns(), Some(truth.iter().sum::<u64>() / 990));
        // Bins of 1 ms: 1..=990 µs fit, the timeouts overflow.
        assert_eq!(a.overflows, 10);
        assert_eq!(a.overflow_seqs, (0..10).map(|k| k * 100 + 99).collect::<Vec<_>>());
        assert_eq!(a.bins.iter().sum::<u64>() + a.overflows, a.samples());
    }

    #[test]
    fn a_run_of_timeouts_only_has_no_measured_figure() {
        let mut a = Analysis::new(1_000_000_000, 0, 0, 100, 500_000);
        ingest(&mut a, (0..2000).map(|i| (i, None)));
        assert_eq!((a.responses, a.timeouts), (0, 2000));
        for q in [0.0, 0.5, 0.99, 1.0] {
            assert_eq!(a.quantile(q), Quantile::Above(500_000));
        }
        assert_eq!((a.min(), a.max()), (Quantile::Above(500_000), Quantile::Above(500_000)));
        assert_eq!((a.mean_ns(), a.max_measured_ns(), a.worst), (None, None, None));
        // Every timeout is an overflow; the list keeps the first ones.
        assert_eq!(a.overflows, 2000);
        assert_eq!(a.overflow_seqs.len(), OVERFLOW_SEQS_KEPT);
        assert_eq!(a.overflow_seqs[..3], [0, 1, 2]);
        assert_eq!(a.bins.iter().sum::<u64>(), 0);
        // Nothing at all: no figure.
        let empty = Analysis::new(1_000_000_000, 0, 0, 100, 500_000);
        assert_eq!(
            (empty.quantile(0.5), empty.max(), empty.min()),
            (Quantile::None, Quantile::None, Quantile::None)
        );
    }

    #[test]
    fn without_timeouts_the_max_is_the_exact_measured_one() {
        let mut a = Analysis::new(1_000_000_000, 0, 0, 100, 900_000);
        ingest(&mut a, (0..500).map(|i| (i, Some(10_000 + (i as u32 * 7_919) % 80_000))));
        let max = (0..500u32).map(|i| 10_000 + (i * 7_919) % 80_000).max().unwrap();
        assert_eq!(a.timeouts, 0);
        assert_eq!(a.max(), Quantile::Value(u64::from(max)));
        assert_eq!(a.quantile(1.0), Quantile::Value(u64::from(max)));
        assert!(!a.quantile(0.9999).is_censored());
        assert_eq!(a.bins.iter().sum::<u64>() + a.overflows, 500);
    }

    #[test]
    fn sequence_numbers_near_the_end_of_u64_do_not_overflow() {
        let mut t = SeqTracker::new(u64::MAX - 2);
        assert_eq!(t.observe(u64::MAX - 2), SeqVerdict::New);
        assert_eq!(t.observe(u64::MAX), SeqVerdict::New); // MAX - 1 lost
        assert_eq!(t.lost, 1);
        assert_eq!(t.observe(u64::MAX), SeqVerdict::Duplicate);
        assert_eq!(t.observe(u64::MAX - 1), SeqVerdict::Late);
        assert_eq!(t.observe(u64::MAX - 2), SeqVerdict::Duplicate);
        assert_eq!((t.lost, t.duplicates, t.out_of_order), (0, 2, 1));
        t.finish(u64::MAX);
        assert_eq!(t.lost, 0);
        assert_eq!(t.observe(0), SeqVerdict::Duplicate);

        let mut a = Analysis::new(1_000_000_000, 0, u64::MAX - 1, 10, 1_000);
        let mut b = SampleBatchBuilder::new(1000, 64);
        for seq in [u64::MAX - 1, u64::MAX] {
            b.push(&Sample { seq, stimulus_tick: 5, outcome: Outcome::Response(100) }).unwrap();
        }
        a.ingest_samples(&b.batch());
        a.ingest_samples(&b.batch());
        assert_eq!((a.responses, a.seq.duplicates), (2, 2));
        a.finish(u64::MAX, false);
        use latprobe_protocol::{EdgeBatchBuilder, EdgeStamp};
        let mut e = EdgeBatchBuilder::new(64);
        e.push(&EdgeStamp { seq: u64::MAX, tick: 10 }).unwrap();
        a.ingest_edges(&e.batch());
        a.ingest_edges(&e.batch());
        assert_eq!((a.edges.edges, a.edges.seq.duplicates), (1, 1));
    }

    #[test]
    fn edges_are_counted_with_raw_intervals() {
        use latprobe_protocol::{EdgeBatchBuilder, EdgeStamp};
        let mut a = Analysis::new(1_000_000, 0, 0, 10, 0);
        let mut b = EdgeBatchBuilder::new(64);
        for (seq, tick) in [(0u64, 100u64), (1, 1_100), (2, 2_150)] {
            b.push(&EdgeStamp { seq, tick }).unwrap();
        }
        a.ingest_edges(&b.batch());
        let mut b2 = EdgeBatchBuilder::new(64);
        b2.push(&EdgeStamp { seq: 4, tick: 4_100 }).unwrap(); // 3 lost
        a.ingest_edges(&b2.batch());
        let e = &a.edges;
        assert_eq!((e.edges, e.seq.lost, e.intervals), (4, 1, 2));
        assert_eq!((e.min_ns, e.max_ns), (1_000_000, 1_050_000));
        assert_eq!(a.samples(), 0);
    }
}
