//! Periodic mode: the target's own schedule, fitted from its edges on the
//! probe's clock, and every cycle's wake-up delay against that fit, in
//! memory that does not grow with the run.
//!
//! The target toggles its line every period of *its* clock, which runs some
//! ppm off the probe's and drifts with temperature. A delay measured against
//! the nominal schedule is then mostly clock offset (20 ppm is 72 ms an
//! hour), so the schedule is fitted from the data instead.
//!
//! # The estimator
//!
//! Latency only ever delays an edge, so the schedule is the **lower
//! envelope** of the points (cycle `n`, edge tick `t`), not a least-squares
//! line (the outliers are the very latencies we keep). Over each block of
//! [`BLOCK_EDGES`] edges the fit is the line `t = a + p·n` that lies on or
//! under every point of the block and is as close to them as possible:
//! minimise Σ (tᵢ − a − p·nᵢ) subject to tᵢ ≥ a + p·nᵢ. Its solution is the
//! edge of the points' lower convex hull above the block's mean `n` (the
//! linear-programming clock-skew estimator of Moon, Skelly and Towsley,
//! 1999). Blocks are short (about 2 s at 1 kHz) so that the line follows
//! slow drift: each block has its own period, and the drift is how those
//! periods change over the run.
//!
//! **Zero point.** A delay is `t − (a + p·n)`: 0 is the earliest edge the fit
//! allows, the block's own best-behaved cycles. It is the analogue of
//! cyclictest's latency, except that a constant part (the target's fastest
//! wake-up plus its write) cannot be seen from outside and is in the zero.
//!
//! # Which cycle an edge belongs to
//!
//! Edges come in cycle order, at most one per cycle, never before their
//! cycle's fitted time. Each edge is given the *latest* cycle those rules
//! allow, looking ahead at the edges after it: an edge that could be a
//! cycle late or on time for the next cycle is on time unless the edges
//! after it need that cycle. That is exact for a target that, like
//! `latprobe-responder periodic` and cyclictest, serves every deadline in
//! order however late (after an overrun the deadlines already past are
//! served at once): a wake-up two periods late is followed by two edges in
//! quick succession, which pushes it back to its own cycle. A cycle left
//! without an edge is a **missed period**: counted, a censored sample in
//! every figure, and never merged into the next cycle's delay. (The one
//! ambiguous case: a missed period right after a wake-up later than a whole
//! period is read as the earlier cycle missed, with the smaller delay.)
//! Edges the link lost (sequence gaps) take their cycles without being
//! counted missed.
//!
//! **A jump of the clock.** An edge more than [`MAX_GAP_S`] (a day) of the
//! probe's clock after the previous edge, or more sequence numbers after it
//! than a day holds periods, is no outage a periodic run can
//! have (a silent target line fails the run long before); it is a damaged
//! tick (a CRC-valid batch can still carry one). It is counted
//! ([`PeriodicFit::clock_jumps`], named in the report's notes) and left out
//! like an edge lost on the link: its cycle is neither a delay nor a missed
//! period, and the edges after it are measured against the edge before it.
//! Taken as an edge, one tick 2^62 ahead made 4.6 × 10¹² "missed periods".
//!
//! Memory: a block and its look-ahead (about 2100 edges, 16 bytes each) and
//! the hull of one block; everything else is running sums.

mod signed;
mod spill;

pub use signed::SignedHist;
pub use spill::{CycleSpill, SpillRecord, SPILL_CAP_BYTES, SPILL_RUN};

/// The longest gap between two edges taken as the target's own (an
/// outage), in seconds of the probe's clock: longer is a damaged tick.
pub const MAX_GAP_S: u64 = 86_400;

/// Edges per fitted block.
pub const BLOCK_EDGES: usize = 2048;
/// Edges looked at beyond a block before its cycles are final: more than
/// the longest run of catch-up edges after an overrun up to the horizon.
const LOOKAHEAD_MIN: usize = 64;
/// A final block shorter than this keeps the previous block's line rather
/// than fit a noisy one of its own.
const MIN_FIT_EDGES: usize = BLOCK_EDGES / 4;

/// The line `t = a + p·n`, `t` in ticks after the run's first edge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    /// Tick of cycle 0.
    pub a: f64,
    /// Period in ticks.
    pub p: f64,
}

impl Line {
    fn at(&self, n: i64) -> f64 {
        self.a + self.p * n as f64
    }
}

/// What the fit made of a stretch of cycles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CycleEvent {
    /// Cycle `cycle` had its edge at `tick`, `delay_ticks` after the fit.
    Edge {
        /// Cycle number, 0 being the first edge's cycle.
        cycle: u64,
        /// The edge, in the probe's extended ticks.
        tick: u64,
        /// Delay against the fit, in ticks (≥ 0).
        delay_ticks: f64,
    },
    /// `count` cycles from `first` had no edge (missed periods).
    Missed {
        /// The first of them.
        first: u64,
        /// How many.
        count: u64,
    },
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    tick: u64,
    /// Edges lost on the link between the previous edge and this one.
    lost_before: u64,
}

/// How the fitted period changed over the run (per block).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DriftStats {
    /// Blocks fitted.
    pub blocks: u64,
    /// Offset of the first block, ppm.
    pub first_ppm: f64,
    /// Offset of the last block, ppm.
    pub last_ppm: f64,
    /// Lowest block offset.
    pub min_ppm: f64,
    /// Highest block offset.
    pub max_ppm: f64,
    // Least-squares sums of (hours, ppm) for the slope.
    s_t: f64,
    s_p: f64,
    s_tt: f64,
    s_tp: f64,
}

impl DriftStats {
    fn add(&mut self, hours: f64, ppm: f64) {
        if self.blocks == 0 {
            self.first_ppm = ppm;
            self.min_ppm = ppm;
            self.max_ppm = ppm;
        }
        self.blocks += 1;
        self.last_ppm = ppm;
        self.min_ppm = self.min_ppm.min(ppm);
        self.max_ppm = self.max_ppm.max(ppm);
        self.s_t += hours;
        self.s_p += ppm;
        self.s_tt += hours * hours;
        self.s_tp += hours * ppm;
    }

    /// Least-squares slope of the block offsets over time, ppm per hour
    /// (`None` under two blocks).
    pub fn ppm_per_hour(&self) -> Option<f64> {
        let n = self.blocks as f64;
        let den = n * self.s_tt - self.s_t * self.s_t;
        (self.blocks >= 2 && den > 0.0).then(|| (n * self.s_tp - self.s_t * self.s_p) / den)
    }
}

/// The streaming fit.
#[derive(Debug, Clone)]
pub struct PeriodicFit {
    /// Nominal period in ticks (the configured interval).
    nominal: f64,
    origin: Option<u64>,
    first_seq: u64,
    pending: Vec<Pending>,
    lookahead: usize,
    line: Option<Line>,
    /// Cycle of the last edge whose cycle is final.
    last_cycle: Option<i64>,
    /// The fitted lines' periods, weighted by edges: for the mean period.
    period_sum: f64,
    period_weight: f64,
    /// Per-block offsets.
    pub drift: DriftStats,
    /// Edges given a cycle.
    pub edges: u64,
    /// Missed periods.
    pub missed: u64,
    /// Edges lost on the link (their cycles are not missed).
    pub lost: u64,
    /// Edges the cycle rules could not place where the fit put them (the
    /// fit lost track); each was moved after its predecessor.
    pub conflicts: u64,
    /// Edges that came out of sequence order: not used by the fit.
    pub out_of_order: u64,
    /// Edges more than [`MAX_GAP_S`] (or as many periods of sequence
    /// numbers) after the previous edge: damaged stamps, not used by the fit.
    pub clock_jumps: u64,
    /// The first of them: its sequence number and its gap in ticks.
    pub first_jump: Option<(u64, u64)>,
    /// The last edge taken.
    last_tick: Option<u64>,
    /// [`MAX_GAP_S`] in ticks.
    max_gap_ticks: u64,
    /// The same edges against the nominal schedule (first edge + k × the
    /// configured period, one edge per cycle): what a tool that trusts the
    /// target's clock would report. ns, before re-zeroing at its minimum.
    pub naive: SignedHist,
    ns_per_tick: f64,
}

impl PeriodicFit {
    /// A fit for a nominal period of `nominal_ticks`, on a timer of `hz`,
    /// looking ahead far enough for catch-up runs up to `horizon_ticks`.
    pub fn new(nominal_ticks: u64, horizon_ticks: u64, hz: u32) -> Self {
        let nominal = nominal_ticks.max(1) as f64;
        let burst = (horizon_ticks / nominal_ticks.max(1)).min(1 << 16) as usize;
        Self {
            nominal,
            origin: None,
            first_seq: 0,
            pending: Vec::with_capacity(BLOCK_EDGES + LOOKAHEAD_MIN + burst + 8),
            lookahead: LOOKAHEAD_MIN + burst + 4,
            line: None,
            last_cycle: None,
            period_sum: 0.0,
            period_weight: 0.0,
            drift: DriftStats::default(),
            edges: 0,
            missed: 0,
            lost: 0,
            conflicts: 0,
            out_of_order: 0,
            clock_jumps: 0,
            first_jump: None,
            last_tick: None,
            max_gap_ticks: u64::from(hz.max(1)).saturating_mul(MAX_GAP_S),
            naive: SignedHist::new(),
            ns_per_tick: 1e9 / f64::from(hz.max(1)),
        }
    }

    /// The first edge's tick.
    pub fn first_tick(&self) -> Option<u64> {
        self.origin
    }

    /// The nominal period in ticks.
    pub fn nominal_ticks(&self) -> f64 {
        self.nominal
    }

    /// The current line (after the first block).
    pub fn line(&self) -> Option<Line> {
        self.line
    }

    /// The mean fitted period over the run, in ticks.
    pub fn period_ticks(&self) -> Option<f64> {
        (self.period_weight > 0.0)
            .then(|| self.period_sum / self.period_weight)
            .or_else(|| self.line.map(|l| l.p))
    }

    /// How much faster the target's clock runs than the probe's, in ppm:
    /// `nominal / fitted − 1`.
    pub fn offset_ppm(&self) -> Option<f64> {
        self.period_ticks().map(|p| ppm(self.nominal, p))
    }

    /// Edges waiting for their block (bounded by a block and its look-ahead).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Whether an edge at `tick` (sequence number `seq`) jumps more than
    /// [`MAX_GAP_S`] past the last edge taken: if so it is counted in
    /// [`PeriodicFit::clock_jumps`] and must not be pushed (the caller
    /// treats it as lost on the link).
    /// `lost_before` is its gap in sequence numbers: more edges lost than a
    /// day holds cycles is a damaged sequence number, counted the same way
    /// (taken, it overflowed the cycle arithmetic).
    pub fn check_jump(&mut self, seq: u64, tick: u64, lost_before: u64) -> bool {
        let Some(last) = self.last_tick else { return false };
        let gap = tick.saturating_sub(last);
        let max_lost = (self.max_gap_ticks as f64 / self.nominal) as u64;
        if gap <= self.max_gap_ticks && lost_before <= max_lost {
            return false;
        }
        self.clock_jumps += 1;
        self.first_jump.get_or_insert((seq, gap));
        true
    }

    /// One edge, in sequence order; `lost_before` edges were lost on the
    /// link just before it. Finished cycles are appended to `out`.
    pub fn push(&mut self, seq: u64, tick: u64, lost_before: u64, out: &mut Vec<CycleEvent>) {
        let origin = *self.origin.get_or_insert(tick);
        if self.edges == 0 && self.pending.is_empty() {
            self.first_seq = seq;
        }
        if tick < origin || self.pending.last().is_some_and(|p| tick < p.tick) {
            // Time ran backwards: not an edge this fit can place.
            self.out_of_order += 1;
            return;
        }
        self.lost += lost_before;
        self.last_tick = Some(tick);
        self.pending.push(Pending { tick, lost_before });
        let x = (tick - origin) as f64;
        let k = seq.saturating_sub(self.first_seq) as f64;
        self.naive.record(((x - k * self.nominal) * self.ns_per_tick).round() as i64);
        if self.pending.len() >= BLOCK_EDGES + self.lookahead {
            self.block(BLOCK_EDGES, out);
        }
    }

    /// The run is over: place every edge still waiting.
    pub fn finish(&mut self, out: &mut Vec<CycleEvent>) {
        while !self.pending.is_empty() {
            let n = self.pending.len().min(BLOCK_EDGES);
            // Do not leave a sliver for a last block of its own.
            let n = if self.pending.len() - n < MIN_FIT_EDGES { self.pending.len() } else { n };
            self.block(n, out);
        }
    }

    fn x(&self, i: usize) -> f64 {
        (self.pending[i].tick - self.origin.unwrap_or(0)) as f64
    }

    /// Cycle numbers for every pending edge with `line`: each edge's latest
    /// cycle at or before its time (+`tol`), then no later than the next
    /// edge's allows, then after the last final cycle.
    fn number(&mut self, line: Line, tol: f64, count_conflicts: bool) -> Vec<i64> {
        let len = self.pending.len();
        let mut n: Vec<i64> =
            (0..len).map(|i| ((self.x(i) - line.a + tol) / line.p).floor() as i64).collect();
        for i in (0..len.saturating_sub(1)).rev() {
            let cap = n[i + 1] - 1 - self.pending[i + 1].lost_before as i64;
            n[i] = n[i].min(cap);
        }
        let mut floor = self.last_cycle;
        for (ni, p) in n.iter_mut().zip(&self.pending) {
            if let Some(f) = floor {
                let lo = f + 1 + p.lost_before as i64;
                if *ni < lo {
                    if count_conflicts {
                        self.conflicts += 1;
                    }
                    *ni = lo;
                }
            }
            floor = Some(*ni);
        }
        n
    }

    /// The lower-envelope line of the first `len` pending edges numbered `n`.
    fn fit(&self, n: &[i64], len: usize) -> Option<Line> {
        if len < 2 {
            return None;
        }
        // Block-local coordinates keep the hull arithmetic exact.
        let (n0, x0) = (n[0], self.x(0));
        let mut hull: Vec<(f64, f64)> = Vec::with_capacity(64);
        let mut mean = 0.0;
        for (i, &ni) in n.iter().enumerate().take(len) {
            let pt = ((ni - n0) as f64, self.x(i) - x0);
            mean += pt.0;
            while hull.len() >= 2 {
                let (a, b) = (hull[hull.len() - 2], hull[hull.len() - 1]);
                let cross = (b.0 - a.0) * (pt.1 - a.1) - (b.1 - a.1) * (pt.0 - a.0);
                if cross <= 0.0 {
                    hull.pop();
                } else {
                    break;
                }
            }
            hull.push(pt);
        }
        mean /= len as f64;
        let j = hull.windows(2).position(|w| w[1].0 >= mean)?;
        let (a, b) = (hull[j], hull[j + 1]);
        let p = (b.1 - a.1) / (b.0 - a.0);
        if !(p.is_finite() && p > 0.0) {
            return None;
        }
        let a_local = a.1 - p * a.0;
        Some(Line { a: x0 + a_local - p * n0 as f64, p })
    }

    /// A first line for a run: the median interval, then lower envelopes
    /// over growing prefixes, each numbered with the line before.
    fn bootstrap(&mut self) -> Line {
        let len = self.pending.len();
        let first = len.min(32);
        let mut gaps: Vec<f64> = (1..first)
            .filter(|&i| self.pending[i].lost_before == 0)
            .map(|i| self.x(i) - self.x(i - 1))
            .filter(|&d| d > 0.0)
            .collect();
        gaps.sort_by(f64::total_cmp);
        let p0 = gaps.get(gaps.len() / 2).copied().unwrap_or(self.nominal);
        // Put the edges' usual phase mid-cell, so that the typical edge is
        // far from a cell boundary while the period is still rough.
        let mut phases: Vec<f64> = (0..first).map(|i| self.x(i) - p0 * (self.x(i) / p0).round()).collect();
        phases.sort_by(f64::total_cmp);
        let mid = phases.get(phases.len() / 2).copied().unwrap_or(0.0);
        let mut line = Line { a: mid - p0 / 2.0, p: p0 };
        let mut tol = 0.0;
        let mut upto = 32usize;
        loop {
            let take = upto.min(len);
            let n = self.number(line, tol, false);
            if let Some(l) = self.fit(&n, take) {
                line = l;
            }
            tol = line.p / 4.0;
            if take == len {
                break;
            }
            upto *= 4;
        }
        line
    }

    /// Place the first `len` pending edges: number them (with the edges
    /// after them as look-ahead), fit their block, emit their cycles.
    fn block(&mut self, len: usize, out: &mut Vec<CycleEvent>) {
        let len = len.min(self.pending.len());
        let fresh = self.line.is_none();
        let mut line = match self.line {
            Some(l) => l,
            None => self.bootstrap(),
        };
        let tol = line.p / 64.0;
        let mut n = self.number(line, tol, false);
        if len >= MIN_FIT_EDGES || fresh {
            for _ in 0..3 {
                let Some(l) = self.fit(&n, len) else { break };
                line = l;
                let again = self.number(line, tol, false);
                if again[..len] == n[..len] {
                    break;
                }
                n = again;
            }
        }
        // The final numbering, counting what the rules had to move.
        let mut n = self.number(line, tol, true);
        if self.last_cycle.is_none() {
            // Cycle 0 is the first edge's.
            let shift = n[0];
            for v in &mut n {
                *v -= shift;
            }
            line.a += line.p * shift as f64;
        }
        if len >= MIN_FIT_EDGES || fresh {
            let w = len as f64;
            self.period_sum += line.p * w;
            self.period_weight += w;
            let mid = self.x(len / 2);
            self.drift.add(mid * self.ns_per_tick / 3.6e12, ppm(self.nominal, line.p));
        }
        for (i, &ni) in n.iter().enumerate().take(len) {
            let p = self.pending[i];
            if let Some(last) = self.last_cycle {
                let gap = ni - last - 1 - p.lost_before as i64;
                if gap > 0 {
                    self.missed += gap as u64;
                    out.push(CycleEvent::Missed { first: (last + 1) as u64, count: gap as u64 });
                }
            }
            let delay = (self.x(i) - line.at(ni)).max(0.0);
            out.push(CycleEvent::Edge { cycle: ni.max(0) as u64, tick: p.tick, delay_ticks: delay });
            self.last_cycle = Some(ni);
            self.edges += 1;
        }
        self.pending.drain(..len);
        self.line = Some(line);
    }
}

/// `nominal / fitted − 1` in ppm: how much faster the target's clock runs.
pub fn ppm(nominal: f64, fitted: f64) -> f64 {
    (nominal / fitted - 1.0) * 1e6
}

#[cfg(test)]
mod tests;
