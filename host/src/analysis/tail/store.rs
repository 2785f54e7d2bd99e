//! The run's worst samples, in bounded memory: the [`TAIL_KEPT`] largest
//! latencies (a timeout ranks above every measured latency) with their
//! sequence numbers and times, whatever the run's length. Every threshold
//! the tail fit tries lies at or above the smallest kept sample, so every
//! exceedance of it is here, with the order declustering needs.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use super::decluster::Exceedance;

/// How many of the worst samples a run keeps: 24 bytes each in memory, a
/// few tens of kB in the JSON report. The fit's lowest candidate
/// threshold has [`super::threshold::MAX_EXCEEDANCES`] exceedances, so one
/// more is kept to place it.
pub const TAIL_KEPT: usize = 1024;

/// A kept sample in the heap: `((timeout, latency), seq, at_ns)`.
type Entry = ((bool, u64), u64, u64);

/// The worst samples of a live run.
#[derive(Debug, Clone, Default)]
pub struct TailStore {
    heap: BinaryHeap<Reverse<Entry>>,
    /// The smallest kept key once full: a sample at or below it is not kept.
    floor: Option<(bool, u64)>,
}

impl TailStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A measured sample (`censored == false`) or a timeout (its latency is
    /// the timeout).
    #[inline]
    pub fn push(&mut self, seq: u64, at_ns: u64, latency_ns: u64, censored: bool) {
        let key = (censored, latency_ns);
        if self.floor.is_some_and(|f| key <= f) {
            return;
        }
        self.heap.push(Reverse((key, seq, at_ns)));
        if self.heap.len() > TAIL_KEPT {
            self.heap.pop();
        }
        if self.heap.len() == TAIL_KEPT {
            self.floor = self.heap.peek().map(|Reverse((k, _, _))| *k);
        }
    }

    /// A measured sample whose time is computed only when it is kept (the
    /// ingest path: most samples are not).
    #[inline]
    pub fn push_with(&mut self, seq: u64, latency_ns: u64, at_ns: impl FnOnce() -> u64) {
        if self.floor.is_some_and(|f| (false, latency_ns) <= f) {
            return;
        }
        self.push(seq, at_ns(), latency_ns, false);
    }

    /// The kept samples as the report keeps them.
    pub fn data(&self) -> TailData {
        let mut v: Vec<_> = self.heap.iter().map(|Reverse(x)| *x).collect();
        v.sort_by_key(|&(_, seq, _)| seq);
        TailData {
            seq: v.iter().map(|x| x.1).collect(),
            at_ns: v.iter().map(|x| x.2).collect(),
            latency_ns: v.iter().map(|x| (!x.0 .0).then_some(x.0 .1)).collect(),
        }
    }
}

/// The worst samples of a run, in sequence order, as the report's
/// `tail.samples` keeps them (one column per field).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TailData {
    /// Sequence numbers.
    pub seq: Vec<u64>,
    /// Stimulus times, ns from the run's start.
    pub at_ns: Vec<u64>,
    /// Latencies, ns; `null` for a timeout (above the report's
    /// `latency_ns.censored_above`).
    pub latency_ns: Vec<Option<u64>>,
}

impl TailData {
    /// The samples, a timeout at `timeout_ns`. Columns of unequal length
    /// (a damaged file) are cut to the shortest.
    pub fn samples(&self, timeout_ns: u64) -> Vec<Exceedance> {
        self.seq
            .iter()
            .zip(&self.at_ns)
            .zip(&self.latency_ns)
            .map(|((&seq, &at_ns), l)| Exceedance {
                seq,
                at_ns,
                latency_ns: l.unwrap_or(timeout_ns),
                censored: l.is_none(),
            })
            .collect()
    }

    /// Samples kept.
    pub fn len(&self) -> usize {
        self.seq.len().min(self.at_ns.len()).min(self.latency_ns.len())
    }

    /// None kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_worst_with_timeouts_first_in_bounded_memory() {
        let mut s = TailStore::new();
        for i in 0..200_000u64 {
            let v = (i * 7919) % 100_003;
            s.push(i, i * 10, v, i % 50_000 == 7);
        }
        let d = s.data();
        assert_eq!(d.len(), TAIL_KEPT);
        assert_eq!(d.latency_ns.iter().filter(|l| l.is_none()).count(), 4);
        let mut kept: Vec<u64> = d.latency_ns.iter().flatten().copied().collect();
        kept.sort_unstable();
        // The largest measured values of the stream, exactly.
        let mut all: Vec<u64> =
            (0..200_000u64).filter(|i| i % 50_000 != 7).map(|i| (i * 7919) % 100_003).collect();
        all.sort_unstable();
        assert_eq!(kept, all[all.len() - (TAIL_KEPT - 4)..].to_vec());
        assert!(d.seq.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(d.samples(5).iter().filter(|e| e.censored).count(), 4);
    }
}
