//! The periodic fit's unit tests: drift, late wake-ups, missed periods,
//! lost edges, clock jumps, the spill, signed quantiles.
use super::*;

/// Feed `(tick)` edges with contiguous sequence numbers.
fn run(fit: &mut PeriodicFit, ticks: &[u64]) -> Vec<CycleEvent> {
    let mut out = Vec::new();
    for (i, &t) in ticks.iter().enumerate() {
        fit.push(i as u64, t, 0, &mut out);
    }
    fit.finish(&mut out);
    out
}

fn edges(ev: &[CycleEvent]) -> Vec<(u64, f64)> {
    ev.iter()
        .filter_map(|e| match *e {
            CycleEvent::Edge { cycle, delay_ticks, .. } => Some((cycle, delay_ticks)),
            CycleEvent::Missed { .. } => None,
        })
        .collect()
}

/// A target at `ppm` with delays `d(k)` (ticks) and no missed cycle.
fn target(n: u64, period: f64, ppm_fast: f64, d: impl Fn(u64) -> u64) -> Vec<u64> {
    let p = period / (1.0 + ppm_fast * 1e-6);
    let mut last = 0u64;
    (0..n)
        .map(|k| {
            let t = (1_000.0 + p * k as f64).floor() as u64 + d(k);
            // Catch-up: never before the previous edge.
            last = t.max(last + 1);
            last
        })
        .collect()
}

#[test]
fn a_fast_clock_is_fitted_and_the_delays_recovered() {
    let d = |k: u64| if k % 7 == 0 { 0 } else { (k * 7919) % 300 };
    let ticks = target(20_000, 100_000.0, 500.0, d);
    let mut fit = PeriodicFit::new(100_000, 800_000, 100_000_000);
    let ev = run(&mut fit, &ticks);
    let got = edges(&ev);
    assert_eq!(got.len(), 20_000);
    assert_eq!(fit.missed, 0);
    for (k, &(c, delay)) in got.iter().enumerate() {
        assert_eq!(c, k as u64);
        assert!((delay - d(k as u64) as f64).abs() <= 1.0, "cycle {k}: {delay} vs {}", d(k as u64));
    }
    assert!((fit.offset_ppm().unwrap() - 500.0).abs() < 0.05, "{:?}", fit.offset_ppm());
    // The nominal schedule drifts by 10 periods (10 ms) over the run.
    assert!(fit.naive.max - fit.naive.min > 9_000_000, "{:?}", (fit.naive.min, fit.naive.max));
}

#[test]
fn late_wakeups_with_catch_up_and_missed_cycles_are_told_apart() {
    // Cycle 100 wakes 2.5 periods late, 101 and 102 follow at once;
    // cycles 300 and 301 have no edge.
    let p = 100_000u64;
    let mut ticks = Vec::new();
    let mut truth = Vec::new();
    let mut last = 0;
    for k in 0..5_000u64 {
        if k == 300 || k == 301 {
            continue;
        }
        let d = if k % 5 == 0 { 0 } else { 50 + k % 100 };
        let mut t = 10 + k * p + d;
        if k == 100 {
            t = 10 + k * p + 250_000;
        }
        t = t.max(last + 20);
        last = t;
        ticks.push(t);
        truth.push((k, t - (10 + k * p)));
    }
    let mut fit = PeriodicFit::new(p, 8 * p, 100_000_000);
    let ev = run(&mut fit, &ticks);
    assert_eq!(fit.missed, 2);
    assert!(ev.contains(&CycleEvent::Missed { first: 300, count: 2 }), "{:?}", &ev[..0]);
    let got = edges(&ev);
    assert_eq!(got.len(), truth.len());
    for (&(c, d), &(k, td)) in got.iter().zip(&truth) {
        assert_eq!(c, k);
        assert!((d - td as f64).abs() <= 1.0, "cycle {k}: {d} vs {td}");
    }
}

#[test]
fn lost_edges_take_their_cycles_without_being_missed() {
    let p = 1_000u64;
    let mut out = Vec::new();
    let mut fit = PeriodicFit::new(p, 8 * p, 1_000_000);
    for k in 0..3_000u64 {
        if (1_000..1_010).contains(&k) {
            continue; // lost on the link
        }
        let lost = if k == 1_010 { 10 } else { 0 };
        fit.push(k, 5 + k * p + (k % 3), lost, &mut out);
    }
    fit.finish(&mut out);
    assert_eq!((fit.missed, fit.lost, fit.edges), (0, 10, 2_990));
    let got = edges(&out);
    assert_eq!(got[1_000].0, 1_010);
}

#[test]
fn memory_stays_bounded() {
    let mut fit = PeriodicFit::new(1_000, 8_000, 1_000_000);
    let mut out = Vec::new();
    for k in 0..200_000u64 {
        fit.push(k, k * 1_000 + (k % 11), 0, &mut out);
        assert!(fit.pending() <= BLOCK_EDGES + fit.lookahead);
        out.clear();
    }
}

#[test]
fn a_tick_jumping_past_a_day_is_counted_not_placed() {
    // 1 MHz, 1 ms: edge 100 is 2^62 ticks ahead.
    let mut fit = PeriodicFit::new(1_000, 8_000, 1_000_000);
    let mut out = Vec::new();
    let mut lost = 0;
    for k in 0..3_000u64 {
        let t = 5 + k * 1_000 + (k % 3) + if k == 100 { 1 << 62 } else { 0 };
        if fit.check_jump(k, t, 0) {
            lost = 1;
            continue;
        }
        fit.push(k, t, lost, &mut out);
        lost = 0;
    }
    fit.finish(&mut out);
    assert_eq!((fit.clock_jumps, fit.missed, fit.lost, fit.edges), (1, 0, 1, 2_999));
    assert_eq!(fit.first_jump, Some((100, (1 << 62) + 1_001)));
    // A gap of a day is still an outage (missed periods).
    let mut fit = PeriodicFit::new(1_000, 8_000, 1_000_000);
    fit.push(0, 0, 0, &mut out);
    assert!(!fit.check_jump(1, MAX_GAP_S * 1_000_000, 0));
    assert!(fit.check_jump(1, MAX_GAP_S * 1_000_000 + 1, 0));
    // As is a sequence number beyond a day's cycles.
    assert!(!fit.check_jump(1, 2_000, MAX_GAP_S * 1_000));
    assert!(fit.check_jump(1, 2_000, 1 << 62));
}

#[test]
fn a_run_of_missed_cycles_is_one_record_and_the_spill_is_capped() {
    let mut s = CycleSpill::with_cap(16 * 4).unwrap();
    s.write(0, 7);
    s.write_missed(1, 1 << 40);
    s.write((1 << 40) + 1, 9);
    s.write((1 << 40) + 2, 10);
    s.write((1 << 40) + 3, 11);
    s.finish().unwrap();
    let got: Vec<SpillRecord> = s.records().collect();
    assert_eq!(
        got,
        [
            SpillRecord::Edge { cycle: 0, delay_ns: 7 },
            SpillRecord::Missed { first: 1, count: 1 << 40 },
            SpillRecord::Edge { cycle: (1 << 40) + 1, delay_ns: 9 },
            SpillRecord::Edge { cycle: (1 << 40) + 2, delay_ns: 10 },
        ]
    );
    assert_eq!(s.kept_until(), Some((1 << 40) + 3));
    // Two readers, each from the start.
    assert_eq!(s.records().count(), s.records().count());
}

#[test]
fn signed_quantiles() {
    let mut h = SignedHist::new();
    for v in -50..50 {
        h.record(v * 1000);
    }
    assert_eq!(h.quantile(0.0), Some(-50_000));
    assert_eq!(h.quantile(1.0), Some(49_000));
    let med = h.quantile(0.5).unwrap();
    assert!((-1_100..=100).contains(&med), "{med}");
}
