//! Samples to statistics, in memory that does not grow with the run:
//! sequence tracking over a fixed window, an HdrHistogram for percentiles,
//! exact min/max/sum/count beside it, the worst case, and 1 µs bins for the
//! cyclictest-style histfile.
//!
//! Timeouts are counted, never mixed into the latencies. Every tick is
//! converted to nanoseconds with exact integer arithmetic ([`TickConv`]).

use hdrhistogram::Histogram;
use latprobe_protocol::{ticks_to_ns, EdgeBatch, Outcome, SampleBatch};

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
    next: u64,
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
        Self { next: first, seen: [0; (SEQ_WINDOW / 64) as usize], lost: 0, duplicates: 0, out_of_order: 0 }
    }

    /// The sequence number expected next.
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
        if seq >= self.next {
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
            self.next = seq + 1;
            return SeqVerdict::New;
        }
        if self.next - seq > SEQ_WINDOW {
            self.duplicates += 1;
            return SeqVerdict::Duplicate;
        }
        let (w, b) = Self::slot(seq);
        if self.seen[w] & b != 0 {
            self.duplicates += 1;
            SeqVerdict::Duplicate
        } else {
            self.seen[w] |= b;
            self.lost -= 1;
            self.out_of_order += 1;
            SeqVerdict::Late
        }
    }

    /// The probe says numbers up to `end` (exclusive) were taken: any not
    /// seen by now are lost.
    pub fn finish(&mut self, end: u64) {
        if end > self.next {
            self.lost += end - self.next;
            self.next = end;
        }
    }
}

/// The worst sample.
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
#[derive(Debug, Clone)]
pub struct Analysis {
    conv: TickConv,
    start_tick: u64,
    first_seq: u64,
    /// Sequence accounting of the samples.
    pub seq: SeqTracker,
    hist: Histogram<u64>,
    /// Samples with a response.
    pub responses: u64,
    /// Samples that timed out.
    pub timeouts: u64,
    /// Smallest latency (meaningless while `responses == 0`).
    pub min_ns: u64,
    /// Largest latency.
    pub max_ns: u64,
    /// Sum of latencies.
    pub sum_ns: u128,
    /// The worst sample.
    pub worst: Option<Worst>,
    /// The latest latency, for a live display.
    pub last_ns: Option<u64>,
    /// Latencies per 1 µs bin, from 0.
    pub bins: Vec<u64>,
    /// Latencies beyond the last bin.
    pub overflows: u64,
    /// Sequence numbers of the first [`OVERFLOW_SEQS_KEPT`] overflows.
    pub overflow_seqs: Vec<u64>,
    /// Batches whose data did not decode (samples before the damage are used).
    pub bad_batches: u64,
    /// Periodic-mode edges.
    pub edges: EdgeStats,
}

impl Analysis {
    /// A run on a timer of `timer_hz`, starting at `start_tick` with sample
    /// `first_seq`, binning latencies up to `histfile_max_us`.
    pub fn new(timer_hz: u32, start_tick: u64, first_seq: u64, histfile_max_us: u32) -> Self {
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
            responses: 0,
            timeouts: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
            worst: None,
            last_ns: None,
            bins: vec![0; histfile_max_us as usize],
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
                Outcome::Timeout => self.timeouts += 1,
                Outcome::Response(t) => self.record(s.seq, s.stimulus_tick, self.conv.ns32(t)),
            }
        }
    }

    #[inline]
    fn record(&mut self, seq: u64, stimulus_tick: u64, ns: u64) {
        self.responses += 1;
        self.sum_ns += u128::from(ns);
        self.min_ns = self.min_ns.min(ns);
        self.last_ns = Some(ns);
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
            None => {
                self.overflows += 1;
                if self.overflow_seqs.len() < OVERFLOW_SEQS_KEPT {
                    self.overflow_seqs.push(seq);
                }
            }
        }
    }

    /// Ingest one batch of periodic-mode edges.
    pub fn ingest_edges(&mut self, batch: &EdgeBatch<'_>) {
        for e in batch.iter() {
            let e = match e {
                Ok(e) => e,
                Err(_) => {
                    self.bad_batches += 1;
                    return;
                }
            };
            let ed = &mut self.edges;
            if ed.seq.observe(e.seq) == SeqVerdict::Duplicate {
                continue;
            }
            ed.edges += 1;
            if let Some((seq, tick)) = ed.last {
                if e.seq == seq + 1 && e.tick >= tick {
                    let ns = self.conv.ns(e.tick - tick);
                    ed.intervals += 1;
                    ed.min_ns = ed.min_ns.min(ns);
                    ed.max_ns = ed.max_ns.max(ns);
                    ed.sum_ns += u128::from(ns);
                }
            }
            ed.last = Some((e.seq, e.tick));
        }
    }

    /// The probe took sequence numbers up to `end` (exclusive).
    pub fn finish(&mut self, end: u64, periodic: bool) {
        if periodic {
            self.edges.seq.finish(end);
        } else {
            self.seq.finish(end);
        }
    }

    /// The latency at quantile `q` (0..=1), within 0.1 %, never above the
    /// exact maximum nor below the exact minimum.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.responses == 0 {
            return 0;
        }
        self.hist.value_at_quantile(q).clamp(self.min_ns, self.max_ns)
    }

    /// Mean latency in ns, rounded down.
    pub fn mean_ns(&self) -> u64 {
        if self.responses == 0 {
            0
        } else {
            (self.sum_ns / u128::from(self.responses)) as u64
        }
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
    fn stats_are_exact_and_timeouts_kept_apart() {
        let mut a = Analysis::new(100_000_000, 500, 0, 10);
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
        assert_eq!(a.mean_ns(), (1_000 + 2_500 + 20_000) / 3);
        assert_eq!(a.worst, Some(Worst { seq: 3, latency_ns: 20_000, at_ns_from_start: 30_000 }));
        assert_eq!(a.bins[1], 1);
        assert_eq!(a.bins[2], 1);
        assert_eq!((a.overflows, a.overflow_seqs.clone()), (1, vec![3]));
        assert_eq!(a.quantile(1.0), 20_000);
        assert_eq!(a.quantile(0.0), 1_000);
    }

    #[test]
    fn edges_are_counted_with_raw_intervals() {
        use latprobe_protocol::{EdgeBatchBuilder, EdgeStamp};
        let mut a = Analysis::new(1_000_000, 0, 0, 10);
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
