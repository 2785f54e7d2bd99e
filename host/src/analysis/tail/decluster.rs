//! Latency spikes come in clusters (a slow answer holds up the ones queued
//! behind it; a stall hits several cycles), so the exceedances of a
//! threshold are not independent. They are declustered by the runs
//! method with a run length chosen from the data, and only each cluster's
//! maximum is fitted, so that the per-hour figures count clusters (Coles
//! 2001, §5.3.2) and the intervals are not overconfident.
//!
//! - The extremal index θ (the reciprocal of the mean cluster size in the
//!   limit) is estimated by Ferro & Segers' intervals estimator (*Inference
//!   for clusters of extreme values*, JRSS B 65, 2003, eq. 4), from the
//!   gaps between exceedances' sequence numbers alone.
//! - The run length follows from it (Ferro & Segers 2003, §5): of the
//!   `N − 1` gaps, the `C − 1 = ⌊θ·N⌋` largest separate clusters; the run
//!   length `r` is the largest gap left inside a cluster. Exceedances whose
//!   sequence numbers differ by at most `r` are in one cluster; where gaps
//!   tie at the cut, fewer clusters are taken (a gap equal to `r` never
//!   separates).
//! - Only where the data show clustering: θ's estimate is noisy, and with
//!   independent exceedances a θ below 1 would merge the closest pairs,
//!   whose maxima are no longer GPD. So the run length is used only when
//!   gaps of at most `r` are more frequent than independent exceedances
//!   make them (a gap is at most `r` with probability `1 − (1 − p)^r`,
//!   `p` = exceedances per sample; a one-sided binomial test at 1 %);
//!   otherwise `r = 0` and every exceedance is its own cluster.
//! - One run length for the run: the tail model declusters every
//!   candidate threshold with one run length, the median of those that
//!   show clustering when most do, else 0 (`threshold::run_length`,
//!   [`decluster_at`]); one threshold's alone jumps (0 at one, 12 at the
//!   next, on the same clean run).

/// One sample above the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exceedance {
    /// Its sequence number.
    pub seq: u64,
    /// Its stimulus, ns from the run's start.
    pub at_ns: u64,
    /// Its latency, ns (a timeout: the timeout).
    pub latency_ns: u64,
    /// A timeout: the latency only exceeds `latency_ns`.
    pub censored: bool,
}

impl Exceedance {
    /// The order of badness: a timeout above any measured latency.
    pub fn key(&self) -> (bool, u64) {
        (self.censored, self.latency_ns)
    }
}

/// The clusters of a threshold's exceedances.
#[derive(Debug, Clone, PartialEq)]
pub struct Clusters {
    /// Each cluster's worst exceedance, in sequence order.
    pub maxima: Vec<Exceedance>,
    /// The run length `r` (sequence numbers).
    pub run_length: u64,
    /// The intervals estimate of the extremal index.
    pub theta: f64,
}

/// Ferro & Segers' intervals estimator of θ from the sorted sequence
/// numbers `seqs` of the exceedances (2003, eq. 4): with gaps `T_i`,
/// `θ = min(1, 2(ΣT)² / ((N−1)ΣT²))` when every gap is at most 2, else
/// `θ = min(1, 2(Σ(T−1))² / ((N−1)Σ(T−1)(T−2)))`. 1 with fewer than two.
pub fn ferro_segers(seqs: &[u64]) -> f64 {
    if seqs.len() < 2 {
        return 1.0;
    }
    let n1 = (seqs.len() - 1) as f64;
    let gaps = seqs.windows(2).map(|w| w[1].saturating_sub(w[0]) as f64);
    let theta = if gaps.clone().all(|t| t <= 2.0) {
        let (s, s2) = gaps.fold((0.0, 0.0), |(s, s2), t| (s + t, s2 + t * t));
        2.0 * s * s / (n1 * s2)
    } else {
        let (s, s2) = gaps.fold((0.0, 0.0), |(s, s2), t| (s + (t - 1.0), s2 + (t - 1.0) * (t - 2.0)));
        if s2 <= 0.0 {
            1.0
        } else {
            2.0 * s * s / (n1 * s2)
        }
    };
    if theta.is_finite() {
        theta.min(1.0)
    } else {
        1.0
    }
}

/// Decluster `ex` (any order): the clusters and their maxima.
pub fn decluster(ex: &[Exceedance]) -> Clusters {
    decluster_with(ex, None)
}

/// Whether `short` of the `gaps` gaps being at most `r` is more than
/// independent exceedances with `p` per sample give (one-sided binomial
/// test at 1 %).
fn clustered_beyond_chance(short: u64, gaps: u64, r: u64, p: f64) -> bool {
    let q = 1.0 - (1.0 - p.clamp(0.0, 1.0)).powf(r as f64);
    if q >= 1.0 {
        return false;
    }
    // P(X ≥ short) for X ~ Bin(gaps, q).
    let ln = |i: u64| {
        let (i, n) = (i as f64, gaps as f64);
        crate::analysis::numeric::ln_gamma(n + 1.0)
            - crate::analysis::numeric::ln_gamma(i + 1.0)
            - crate::analysis::numeric::ln_gamma(n - i + 1.0)
            + i * q.max(1e-300).ln()
            + (n - i) * (1.0 - q).ln()
    };
    let tail: f64 = (short..=gaps).map(|i| ln(i).exp()).sum();
    tail < 0.01
}

/// [`decluster`] over a run in which the exceedances are `per_sample` of
/// the samples (`None`: taken from their sequence numbers' span).
pub fn decluster_with(ex: &[Exceedance], per_sample: Option<f64>) -> Clusters {
    let mut ex = ex.to_vec();
    ex.sort_by_key(|e| e.seq);
    let seqs: Vec<u64> = ex.iter().map(|e| e.seq).collect();
    let theta = ferro_segers(&seqs);
    let n = ex.len();
    let mut gaps: Vec<u64> = seqs.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_unstable_by(|a, b| b.cmp(a));
    // C − 1 separating gaps, the largest ones; a tie at the cut separates
    // none of the tied gaps.
    let mut sep = ((theta * n as f64).floor() as usize).min(n.saturating_sub(1));
    let mut run_length = if sep >= gaps.len() {
        0
    } else {
        while sep > 0 && gaps[sep - 1] == gaps[sep] {
            sep -= 1;
        }
        gaps[sep]
    };
    if run_length > 0 {
        let span = seqs.last().map_or(0, |l| l - seqs[0]).saturating_add(1);
        let p = per_sample.unwrap_or(n as f64 / span as f64);
        let short = gaps.iter().filter(|&&g| g <= run_length).count() as u64;
        if !clustered_beyond_chance(short, gaps.len() as u64, run_length, p) {
            run_length = 0;
        }
    }
    decluster_at(&ex, run_length)
}

/// Decluster `ex` (any order) with run length `r`: exceedances whose
/// sequence numbers differ by at most `r` are one cluster. θ is still
/// the Ferro–Segers estimate of these exceedances.
pub fn decluster_at(ex: &[Exceedance], r: u64) -> Clusters {
    let mut ex = ex.to_vec();
    ex.sort_by_key(|e| e.seq);
    let seqs: Vec<u64> = ex.iter().map(|e| e.seq).collect();
    let theta = ferro_segers(&seqs);
    let mut maxima: Vec<Exceedance> = Vec::new();
    let mut last_seq: Option<u64> = None;
    for e in ex {
        match (maxima.last_mut(), last_seq) {
            (Some(m), Some(prev)) if e.seq - prev <= r => {
                if e.key() > m.key() {
                    // The cluster keeps its start time: the halves check
                    // places a cluster where it began.
                    *m = Exceedance { at_ns: m.at_ns, ..e };
                }
            }
            _ => maxima.push(e),
        }
        last_seq = Some(e.seq);
    }
    Clusters { maxima, run_length: r, theta }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(seq: u64, v: u64) -> Exceedance {
        Exceedance { seq, at_ns: seq * 1000, latency_ns: v, censored: false }
    }

    #[test]
    fn spread_out_exceedances_are_their_own_clusters() {
        let e: Vec<_> = (0..50u64).map(|i| ex(i * 97 + (i * i) % 31, 100 + i)).collect();
        let c = decluster(&e);
        assert!(c.theta > 0.9, "{}", c.theta);
        assert!(c.maxima.len() >= 45, "{}", c.maxima.len());
    }

    #[test]
    fn bursts_of_five_are_five_times_fewer_clusters() {
        // 40 bursts of 5 consecutive samples at random places (geometric
        // gaps, as independent bursts have), bursts at least 10 apart.
        let mut e = Vec::new();
        let mut rng = super::super::checks::SplitMix(4);
        let mut at = 0u64;
        for b in 0..40u64 {
            at += 10 + (-rng.uniform().ln() * 1000.0) as u64;
            for j in 0..5u64 {
                e.push(ex(at + j, 100 + j + b));
            }
        }
        let c = decluster(&e);
        // θ·N clusters: a few bursts that fell close together merge.
        assert!(
            (34..=40).contains(&c.maxima.len()),
            "{} clusters, theta {} r {}",
            c.maxima.len(),
            c.theta,
            c.run_length
        );
        assert!(c.run_length >= 4, "a burst is one cluster");
        assert!((c.theta - 0.2).abs() < 0.1, "{}", c.theta);
        // Each cluster's maximum is its last burst's worst sample.
        assert!(c.maxima.iter().all(|m| e.iter().any(|x| x.seq == m.seq && m.latency_ns == x.latency_ns)));
        assert!(c
            .maxima
            .iter()
            .all(|m| e.iter().filter(|x| x.seq > m.seq && x.seq <= m.seq + 4).count() == 0));
        // A cluster starts where its first exceedance was.
        assert_eq!(c.maxima[0].at_ns, e[0].at_ns);
    }
}
