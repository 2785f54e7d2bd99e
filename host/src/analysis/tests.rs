//! The analysis's unit tests: ticks, sequence tracking, exact and
//! censored figures, edges.
use super::*;
use latprobe_protocol::ticks_to_ns;
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
        triggered: false,
        late_ticks: 0,
        omitted: 0,
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
    assert_eq!(a.quantile(0.0), Figure::Value(1_000));
    assert_eq!(a.quantile(0.75), Figure::Value(20_000));
    assert_eq!(a.quantile(0.76), Figure::Above(50_000));
    assert_eq!(a.quantile(1.0), Figure::Above(50_000));
    assert_eq!(a.max(), Figure::Above(50_000));
    assert_eq!(a.max_measured_ns(), Some(20_000));
    assert_eq!(a.min(), Figure::Value(1_000));
}

/// Feed `(seq, latency ticks or timeout)` in as many batches as needed.
fn ingest(a: &mut Analysis, samples: impl IntoIterator<Item = (u64, Option<u32>)>) {
    let mut b = SampleBatchBuilder::new(1_000_000, 64);
    for (seq, lat) in samples {
        let s = Sample {
            seq,
            stimulus_tick: seq * 1_000_000,
            outcome: lat.map_or(Outcome::Timeout, Outcome::Response),
            triggered: false,
            late_ticks: 0,
            omitted: 0,
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
        let Figure::Value(v) = a.quantile(q) else { panic!("q {q} must be measured") };
        let t = truth[r - 1];
        // Never below the truth, within HdrHistogram's 0.1 %.
        assert!(v >= t && v <= t + t / 1000, "q {q}: {v} vs truth {t}");
    }
    // The boundary: rank 990 is the largest response, 991 the first timeout.
    assert_eq!(a.quantile(0.99), Figure::Value(990_000));
    assert_eq!(a.quantile(0.991), Figure::Above(1_000_000));
    assert_eq!(a.quantile(0.999), Figure::Above(1_000_000));
    assert_eq!(a.quantile(0.9999), Figure::Above(1_000_000));
    assert_eq!(a.max(), Figure::Above(1_000_000));
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
        assert_eq!(a.quantile(q), Figure::Above(500_000));
    }
    assert_eq!((a.min(), a.max()), (Figure::Above(500_000), Figure::Above(500_000)));
    assert_eq!((a.mean_ns(), a.max_measured_ns(), a.worst), (None, None, None));
    // Every timeout is an overflow; the list keeps the first ones.
    assert_eq!(a.overflows, 2000);
    assert_eq!(a.overflow_seqs.len(), OVERFLOW_SEQS_KEPT);
    assert_eq!(a.overflow_seqs[..3], [0, 1, 2]);
    assert_eq!(a.bins.iter().sum::<u64>(), 0);
    // Nothing at all: no figure.
    let empty = Analysis::new(1_000_000_000, 0, 0, 100, 500_000);
    assert_eq!((empty.quantile(0.5), empty.max(), empty.min()), (Figure::None, Figure::None, Figure::None));
}

#[test]
fn without_timeouts_the_max_is_the_exact_measured_one() {
    let mut a = Analysis::new(1_000_000_000, 0, 0, 100, 900_000);
    ingest(&mut a, (0..500).map(|i| (i, Some(10_000 + (i as u32 * 7_919) % 80_000))));
    let max = (0..500u32).map(|i| 10_000 + (i * 7_919) % 80_000).max().unwrap();
    assert_eq!(a.timeouts, 0);
    assert_eq!(a.max(), Figure::Value(u64::from(max)));
    assert_eq!(a.quantile(1.0), Figure::Value(u64::from(max)));
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
        b.push(&Sample {
            seq,
            stimulus_tick: 5,
            outcome: Outcome::Response(100),
            triggered: false,
            late_ticks: 0,
            omitted: 0,
        })
        .unwrap();
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

/// Each phase of a schedule gets the exact figures of the samples whose
/// stimulus fell in it, checked against a sort of the same latencies: an
/// idle phase, a loaded one with a heavier tail and timeouts, and a last
/// one until the end; the samples arrive out of order and some twice.
#[test]
fn phase_figures_are_the_exact_ranks_of_their_own_samples() {
    // 1 GHz ticks, sample `seq` at `seq` ms, timeout 500 µs.
    let mut a = Analysis::new(1_000_000_000, 0, 0, 100, 500_000);
    a.set_phases(&[(0, Some(2)), (2, Some(4)), (4, None)]);
    let mut rng = crate::analysis::numeric::SplitMix(7);
    let mut by_phase: [Vec<Option<u64>>; 3] = Default::default();
    let mut feed = Vec::new();
    for seq in 0..6_000u64 {
        let phase = (seq / 2_000) as usize;
        let u = rng.uniform();
        let lat = match phase {
            0 => Some(10_000 + (u * 5_000.0) as u64),
            // Loaded: a heavy tail and 0.5 % timeouts.
            1 if u > 0.995 => None,
            1 => Some(20_000 + (u.powi(8) * 400_000.0) as u64),
            _ => Some(12_000 + (u * 2_000.0) as u64),
        };
        by_phase[phase].push(lat);
        feed.push((seq, lat.map(|l| l as u32)));
    }
    // Adversarial order: reverse each block of 100, send a block twice.
    for c in feed.chunks_mut(100) {
        c.reverse();
    }
    let again: Vec<_> = feed[2_000..2_100].to_vec();
    feed.extend(again);
    ingest(&mut a, feed);
    let phases = a.phases.phases();
    assert_eq!(phases.len(), 3);
    for (i, want) in by_phase.iter().enumerate() {
        let t = &phases[i].tally;
        let mut measured: Vec<u64> = want.iter().flatten().copied().collect();
        measured.sort_unstable();
        let timeouts = want.len() - measured.len();
        assert_eq!((t.responses as usize, t.timeouts as usize), (measured.len(), timeouts), "phase {i}");
        assert_eq!(t.max_measured_ns(), measured.last().copied(), "phase {i}");
        assert_eq!(t.min(500_000), Figure::Value(measured[0]), "phase {i}");
        for q in [0.5, 0.9, 0.99, 0.999, 0.9999] {
            let r = rank(q, want.len() as u64) as usize;
            match t.quantile(q, 500_000) {
                Figure::Value(v) => {
                    let exact = measured[r - 1];
                    assert!(v >= exact && v <= exact + exact / 1000, "phase {i} q {q}: {v} vs exact {exact}");
                }
                Figure::Above(b) => assert!(r > measured.len() && b == 500_000, "phase {i} q {q} censored"),
                Figure::None => panic!("phase {i} q {q}: no figure"),
            }
        }
    }
    // The loaded phase's 0.5 % timeouts put its p99.9 above the timeout;
    // the idle phase's p99.9 is a measured value far below the run's.
    assert!(phases[1].tally.quantile(0.999, 500_000).is_censored());
    assert!(phases[0].tally.quantile(0.999, 500_000).value().unwrap() < 15_001);
    let total: u64 = phases.iter().map(|p| p.tally.samples()).sum();
    assert_eq!(total, a.samples());
}
