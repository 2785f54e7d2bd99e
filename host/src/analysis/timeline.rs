//! Latency over time: a bounded per-second summary of a run, kept in the
//! report so that a spike can be tied to a moment without the raw file.
//!
//! Each second of the probe's clock (from the run's start tick; a sample
//! belongs to the second of its stimulus, a periodic cycle to the second
//! of its edge) gets its sample count, timeouts, largest measured latency
//! and p99. A run of up to [`MAX_ROWS`] seconds keeps one row per second;
//! a longer one merges neighbouring rows in pairs (rows of 2, 4, 8 … s), so
//! a 24-hour run is 2 700 rows of 32 s and its JSON stays under 100 kB.
//! A merged row keeps its exact counts and max, and the *worst* per-second
//! p99 among its seconds (an envelope, not the p99 of the merged samples).
//!
//! ```text
//!   sample (second s) ─▶ current second: hdr histogram ─(s ends)─▶ row s / row_s
//!                                                          (rows > MAX_ROWS: merge pairs)
//! ```

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The most rows a timeline keeps; beyond, rows are merged in pairs.
pub const MAX_ROWS: usize = 3600;

const NS_PER_S: u64 = 1_000_000_000;

/// A p99 among the timeouts: above the timeout, not a number.
const CENSORED: u64 = u64::MAX;

/// The per-second summary as the report keeps it: one column per figure,
/// row `i` covering seconds `[i·row_s, (i+1)·row_s)` of the probe's clock
/// from the run's start.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineReport {
    /// Seconds per row: 1, or a power of two for runs longer than
    /// [`MAX_ROWS`] seconds.
    pub row_s: u64,
    /// Samples (responses and timeouts) per row.
    pub samples: Vec<u64>,
    /// Timeout samples per row.
    pub timeouts: Vec<u64>,
    /// The largest measured latency of the row, ns; `null` when no sample
    /// of the row was measured.
    pub max_ns: Vec<Option<u64>>,
    /// The worst per-second p99 of the row, ns (timeouts ranked above
    /// every response); `null` when it fell among the timeouts (it is then
    /// above the report's `latency_ns.censored_above`) or the row has no
    /// sample.
    pub p99_ns: Vec<Option<u64>>,
}

impl TimelineReport {
    /// Rows.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// No row.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Row `i`'s p99 as a [`crate::analysis::figure::Figure`]: above `timeout_ns`
    /// when censored.
    pub fn p99(&self, i: usize, timeout_ns: u64) -> crate::analysis::figure::Figure {
        use crate::analysis::figure::Figure;
        match (self.samples.get(i), self.p99_ns.get(i)) {
            (Some(&n), Some(&Some(v))) if n > 0 => Figure::Value(v),
            (Some(&n), _) if n > 0 => Figure::Above(timeout_ns),
            _ => Figure::None,
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Row {
    samples: u64,
    timeouts: u64,
    /// Largest measured latency; `None` when none was measured.
    max_ns: Option<u64>,
    /// Worst per-second p99, [`CENSORED`] among the timeouts; `None`
    /// without a closed second.
    p99_ns: Option<u64>,
}

impl Row {
    fn merge(self, o: Row) -> Row {
        Row {
            samples: self.samples + o.samples,
            timeouts: self.timeouts + o.timeouts,
            max_ns: self.max_ns.max(o.max_ns),
            p99_ns: self.p99_ns.max(o.p99_ns),
        }
    }
}

/// Measured latencies of one second kept exactly up to this many; a
/// second with more (faster than a probe runs, e.g. a synthetic stream)
/// goes on in an HdrHistogram (3 significant digits, as the run's own
/// figures), so memory stays bounded.
const EXACT_PER_SECOND: usize = 1 << 16;

/// The live timeline of a run.
#[derive(Debug)]
pub struct TimelineRecorder {
    row_s: u64,
    rows: Vec<Row>,
    /// The second being collected: its measured latencies in `exact` (or
    /// `hist`, past [`EXACT_PER_SECOND`]), its timeouts counted.
    current: Option<u64>,
    exact: Vec<u64>,
    hist: Option<Box<Histogram<u64>>>,
    cur_timeouts: u64,
    cur_max: Option<u64>,
    /// [`TimelineRecorder::push_ticks`]'s last second: its ticks `[lo, hi)`.
    window: (u64, u64, u64),
}

impl Default for TimelineRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl TimelineRecorder {
    /// An empty timeline.
    pub fn new() -> Self {
        Self {
            row_s: 1,
            rows: Vec::new(),
            current: None,
            exact: Vec::new(),
            hist: None,
            cur_timeouts: 0,
            cur_max: None,
            window: (0, 0, 0),
        }
    }

    /// A sample whose stimulus was `at_ns` after the run's start: measured
    /// `Some(latency)`, or a timeout (`None`).
    pub fn push(&mut self, at_ns: u64, latency_ns: Option<u64>) {
        self.push_in_second(at_ns / NS_PER_S, latency_ns);
    }

    /// A sample whose stimulus was `ticks` after the run's start on a timer
    /// of `hz`. The ingest path: a division per second, not per sample.
    #[inline]
    pub fn push_ticks(&mut self, ticks: u64, hz: u64, latency_ns: Option<u64>) {
        let (lo, hi, sec) = self.window;
        let sec = if ticks >= lo && ticks < hi {
            sec
        } else {
            let hz = hz.max(1);
            let sec = ticks / hz;
            let lo = sec.saturating_mul(hz);
            self.window = (lo, lo.saturating_add(hz), sec);
            sec
        };
        self.push_in_second(sec, latency_ns);
    }

    /// A sample whose stimulus was in second `sec` of the run (what
    /// [`TimelineRecorder::push`] computes; the ingest path divides ticks by the
    /// timer's rate instead, without a 128-bit conversion per sample).
    pub fn push_in_second(&mut self, sec: u64, latency_ns: Option<u64>) {
        match self.current {
            Some(c) if c == sec => {}
            Some(c) if sec < c => {
                // A sample of a second already closed (the link reordered
                // it): its counts and max still count; its p99 stays.
                let latency = latency_ns;
                let row =
                    Row { samples: 1, timeouts: u64::from(latency.is_none()), max_ns: latency, p99_ns: None };
                self.fold(sec, row);
                return;
            }
            _ => {
                self.close();
                self.current = Some(sec);
            }
        }
        match latency_ns {
            Some(ns) => {
                self.cur_max = self.cur_max.max(Some(ns));
                if let Some(h) = &mut self.hist {
                    h.saturating_record(ns);
                } else if self.exact.len() < EXACT_PER_SECOND {
                    self.exact.push(ns);
                } else {
                    // Over u32 ticks at 1 ns: the largest latency the wire carries.
                    let mut h =
                        Box::new(Histogram::new_with_max(u64::from(u32::MAX), 3).expect("valid hdr bounds"));
                    h.auto(true);
                    for &v in &self.exact {
                        h.saturating_record(v);
                    }
                    h.saturating_record(ns);
                    self.exact.clear();
                    self.hist = Some(h);
                }
            }
            None => self.cur_timeouts += 1,
        }
    }

    /// `count` timeout samples in the current second (missed periodic
    /// cycles, which have no edge of their own to place them by).
    pub fn push_timeouts_now(&mut self, count: u64) {
        if self.current.is_none() {
            self.current = Some(0);
        }
        self.cur_timeouts += count;
    }

    /// The current second's row, its p99 over every sample of it with the
    /// timeouts ranked above every response.
    fn current_row(&mut self) -> Option<(u64, Row)> {
        let sec = self.current?;
        let measured = self.hist.as_ref().map_or(self.exact.len() as u64, |h| h.len());
        let n = measured + self.cur_timeouts;
        if n == 0 {
            return None;
        }
        let r = crate::analysis::figure::rank(0.99, n);
        let p99 = if r > measured {
            CENSORED
        } else if let Some(h) = &self.hist {
            let mid = (r as f64 - 0.5) / measured as f64;
            h.value_at_quantile(mid).min(self.cur_max.unwrap_or(u64::MAX))
        } else {
            // The r-th smallest, exactly.
            *self.exact.select_nth_unstable((r - 1) as usize).1
        };
        Some((sec, Row { samples: n, timeouts: self.cur_timeouts, max_ns: self.cur_max, p99_ns: Some(p99) }))
    }

    fn close(&mut self) {
        if let Some((sec, row)) = self.current_row() {
            self.fold(sec, row);
        }
        self.exact.clear();
        self.hist = None;
        self.cur_timeouts = 0;
        self.cur_max = None;
        self.current = None;
    }

    fn fold(&mut self, sec: u64, row: Row) {
        let mut i = sec / self.row_s;
        while i >= MAX_ROWS as u64 {
            self.coarsen();
            i = sec / self.row_s;
        }
        let i = i as usize;
        if self.rows.len() <= i {
            self.rows.resize(i + 1, Row::default());
        }
        self.rows[i] = self.rows[i].merge(row);
    }

    /// Double the row width, merging neighbours.
    fn coarsen(&mut self) {
        self.row_s = self.row_s.saturating_mul(2);
        let rows = std::mem::take(&mut self.rows);
        self.rows = rows.chunks(2).map(|c| c.iter().copied().fold(Row::default(), Row::merge)).collect();
    }

    /// The summary so far, the second being collected included.
    pub fn report(&self) -> TimelineReport {
        let mut t =
            TimelineRecorder { row_s: self.row_s, rows: self.rows.clone(), ..TimelineRecorder::new() };
        let mut cur = TimelineRecorder {
            current: self.current,
            exact: self.exact.clone(),
            hist: self.hist.clone(),
            cur_timeouts: self.cur_timeouts,
            cur_max: self.cur_max,
            ..TimelineRecorder::new()
        };
        if let Some((sec, row)) = cur.current_row() {
            t.fold(sec, row);
        }
        TimelineReport {
            row_s: t.row_s,
            samples: t.rows.iter().map(|r| r.samples).collect(),
            timeouts: t.rows.iter().map(|r| r.timeouts).collect(),
            max_ns: t.rows.iter().map(|r| r.max_ns).collect(),
            p99_ns: t.rows.iter().map(|r| r.p99_ns.filter(|&p| p != CENSORED)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = NS_PER_S;

    #[test]
    fn one_row_per_second_with_exact_counts_max_and_p99() {
        let mut t = TimelineRecorder::new();
        // Second 0: 100 samples 1..=100 us; second 2: 99 of 10 us and a timeout.
        for i in 1..=100u64 {
            t.push(i * 1000, Some(i * 1000));
        }
        for i in 0..99u64 {
            t.push(2 * S + i, Some(10_000));
        }
        t.push(2 * S + 500, None);
        let r = t.report();
        assert_eq!(r.row_s, 1);
        assert_eq!(r.samples, vec![100, 0, 100]);
        assert_eq!(r.timeouts, vec![0, 0, 1]);
        assert_eq!(r.max_ns, vec![Some(100_000), None, Some(10_000)]);
        // p99 of 1..=100 us is the 99th smallest, exactly.
        assert_eq!(r.p99_ns[0], Some(99_000));
        assert_eq!(r.p99_ns[1], None);
        // 100 samples, one timeout: rank 99 is the largest response.
        assert_eq!(r.p99_ns[2], Some(10_000));
        // 10 samples with 1 timeout: rank 10 is the timeout: censored.
        let mut t = TimelineRecorder::new();
        for _ in 0..9 {
            t.push(0, Some(5));
        }
        t.push(1, None);
        let r = t.report();
        assert_eq!((r.samples[0], r.p99_ns[0]), (10, None));
        assert!(r.p99(0, 8_000_000).is_censored());
    }

    #[test]
    fn long_runs_merge_rows_and_keep_the_worst_second() {
        let mut t = TimelineRecorder::new();
        // 24 hours, one sample per second; second 50 000 has the spike.
        for sec in 0..86_400u64 {
            let lat = if sec == 50_000 { 900_000 } else { 1_000 + sec % 7 };
            t.push(sec * S, Some(lat));
        }
        let r = t.report();
        assert!(r.len() <= MAX_ROWS, "{} rows", r.len());
        assert_eq!(r.row_s, 32);
        assert_eq!(r.samples.iter().sum::<u64>(), 86_400);
        let spike_row = (50_000 / r.row_s) as usize;
        let worst = r.max_ns.iter().enumerate().max_by_key(|(_, v)| **v).map(|(i, _)| i);
        assert_eq!(worst, Some(spike_row));
        assert_eq!(r.max_ns[spike_row], Some(900_000));
        assert_eq!(r.p99_ns[spike_row], Some(900_000));
        let json = serde_json::to_string(&r).expect("json");
        assert!(json.len() < 100_000, "{} bytes", json.len());
    }

    #[test]
    fn a_second_beyond_the_exact_store_goes_on_in_a_histogram() {
        let mut t = TimelineRecorder::new();
        let n = 3 * EXACT_PER_SECOND as u64;
        for i in 0..n {
            t.push(0, Some(1_000 + i % 1000));
        }
        t.push(0, Some(5_000_000));
        let r = t.report();
        assert_eq!(r.samples[0], n + 1);
        assert_eq!(r.max_ns[0], Some(5_000_000));
        // The 99th percentile of 1000..1999 ns repeated: about 1990 ns.
        let p = r.p99_ns[0].expect("measured");
        assert!((1_988..=1_993).contains(&p), "{p}");
    }

    #[test]
    fn ticks_fall_in_their_second_as_nanoseconds_do() {
        let (mut by_ticks, mut by_ns) = (TimelineRecorder::new(), TimelineRecorder::new());
        let hz = 84_000_000u64;
        let mut tick = 0u64;
        for i in 0..200_000u64 {
            // Irregular steps across second boundaries, and a step back.
            tick = if i % 1_000 == 999 {
                tick.saturating_sub(hz / 1_000)
            } else {
                tick + 1_000 + (i * 7_919) % 30_000
            };
            let lat = (i % 3 != 0).then_some(i % 5_000);
            by_ticks.push_ticks(tick, hz, lat);
            by_ns.push((u128::from(tick) * 1_000_000_000 / u128::from(hz)) as u64, lat);
        }
        assert!(by_ticks.report().len() > 2);
        assert_eq!(by_ticks.report(), by_ns.report());

        // The last tick of each second and the first of the next, each
        // alone in its second's max: a window off by one tick shows here.
        let (mut by_ticks, mut by_ns) = (TimelineRecorder::new(), TimelineRecorder::new());
        for k in 1..40u64 {
            for (tick, lat) in [(k * hz - 1, 2 * k), (k * hz, 2 * k + 1)] {
                by_ticks.push_ticks(tick, hz, Some(lat));
                by_ns.push((u128::from(tick) * 1_000_000_000 / u128::from(hz)) as u64, Some(lat));
            }
        }
        let r = by_ticks.report();
        assert_eq!(r, by_ns.report());
        assert_eq!(r.max_ns[1], Some(4), "second 1 ends with tick 2·hz−1");
    }

    #[test]
    fn a_late_sample_of_a_closed_second_still_counts() {
        let mut t = TimelineRecorder::new();
        t.push(0, Some(10));
        t.push(3 * S, Some(10));
        t.push(S / 2, Some(99_999));
        t.push(S / 2, None);
        let r = t.report();
        assert_eq!(r.samples, vec![3, 0, 0, 1]);
        assert_eq!(r.timeouts, vec![1, 0, 0, 0]);
        assert_eq!(r.max_ns[0], Some(99_999));
    }
}
