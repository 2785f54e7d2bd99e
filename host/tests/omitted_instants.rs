//! Issue 42 §1, the host's rule on its own: a stimulus that waited is timed
//! from its planned instant, and every instant that got no stimulus is a
//! sample timed to the answer of the stimulus sent after it; the instants
//! above the timeout, counted in bulk, add up in every tally (the
//! timeline's seconds, the histogram's overflows, the export's rows) as
//! one at a time would.

use std::sync::{Arc, Mutex};

use latprobe::analysis::Analysis;
use latprobe::samples::{Feed, Instant, Row, RunInfo, Sink};
use latprobe_protocol::{Outcome, Sample, SampleBatchBuilder, Stimulus};

#[derive(Debug, Clone, Default)]
struct Keep(Arc<Mutex<Vec<Row>>>);

impl Sink for Keep {
    fn row(&mut self, row: &Row) -> std::io::Result<()> {
        self.0.lock().unwrap().push(*row);
        Ok(())
    }
    fn finish(self: Box<Self>, _: &RunInfo) -> std::io::Result<()> {
        Ok(())
    }
}

/// A 1 MHz probe, 1 ms interval, 4 ms timeout. Stimulus 3 waited
/// 2 500 500 ticks (2.5 s: a stall across two second boundaries) and
/// 2 500 instants got none; it was answered 30 µs after its send. The
/// last 4 instants are within 4 ms of that answer and measured, the other
/// 2 496 and the stimulus itself are timeouts; the stimuli before and after
/// went out on schedule.
#[test]
fn a_long_stall_s_instants_add_up_everywhere() {
    let keep = Keep::default();
    let mut a = Analysis::new(1_000_000, 0, 0, 10, 4_000_000);
    a.rows = Some(Feed::new(Box::new(keep.clone()), Stimulus::Identified));
    let late = 2_500_500u32;
    let mut b = SampleBatchBuilder::new(1_000, 64);
    for seq in 0..6u64 {
        let waited = seq == 3;
        let shift = if seq >= 3 { u64::from(late) } else { 0 };
        b.push(&Sample {
            seq,
            stimulus_tick: 1_000 * seq + shift,
            outcome: Outcome::Response(30),
            triggered: false,
            late_ticks: if waited { late } else { 0 },
            omitted: if waited { 2_500 } else { 0 },
        })
        .unwrap();
    }
    a.ingest_samples(&b.batch());
    let rows = keep.0.lock().unwrap().clone();
    // 6 stimuli and 2 500 instants: one row, one sample each.
    assert_eq!(a.samples(), 2_506);
    assert_eq!(rows.len(), 2_506);
    // Stimulus 3 from its plan (3 ms): 2 500.53 ms, above the timeout.
    // Instant k (3 ms + k ms) is answered 2 500.53 - k ms after it: k =
    // 2 497..=2 500 are within 4 ms (3.53, 2.53, 1.53, 0.53 ms).
    assert_eq!((a.service.omitted, a.service.omitted_censored), (2_500, 2_496));
    assert_eq!(a.timeouts, 2_497);
    assert_eq!(a.service.omitted_min_ns, 530_000);
    assert_eq!(a.responses, 5 + 4);
    assert_eq!(a.bins.iter().sum::<u64>() + a.overflows, a.samples());
    let t = a.timeline.report();
    assert_eq!(t.samples.iter().sum::<u64>(), a.samples(), "{t:?}");
    assert_eq!(t.timeouts.iter().sum::<u64>(), a.timeouts);
    // Seconds 0, 1 and 2 of the schedule: the instants fall in each.
    assert_eq!(t.samples.len(), 3);
    assert_eq!(t.samples[1], 1_000, "{t:?}");
    // The rows: every instant once, in order, said what it was.
    let kinds = |k: Instant| rows.iter().filter(|r| r.instant == k).count();
    assert_eq!((kinds(Instant::Sent), kinds(Instant::Late), kinds(Instant::Omitted)), (5, 1, 2_500));
    let omitted: Vec<&Row> = rows.iter().filter(|r| r.instant == Instant::Omitted).collect();
    assert_eq!(omitted.iter().filter(|r| r.censored()).count(), 2_496);
    for (k, r) in omitted.iter().enumerate() {
        assert_eq!(r.time_ns, Some((4 + k as u64) * 1_000_000), "{r:?}");
        assert_eq!(r.seq, 3, "the stimulus sent after them stands for them");
    }
    assert_eq!(omitted.last().unwrap().latency_ns, Some(530_000));
    // The service time: the six stimuli, 30 µs each.
    assert_eq!((a.service.samples(), a.service.timeouts, a.service.max_ns), (6, 0, 30_000));
}
