//! [`SignedHist`]: signed figures in ns (the naive analysis against the
//! nominal schedule, a difference of two views), as two histograms.

/// Signed figures in ns (the naive analysis), kept as two histograms.
#[derive(Debug, Clone)]
pub struct SignedHist {
    neg: hdrhistogram::Histogram<u64>,
    pos: hdrhistogram::Histogram<u64>,
    /// Smallest value.
    pub min: i64,
    /// Largest value.
    pub max: i64,
}

impl Default for SignedHist {
    fn default() -> Self {
        Self::new()
    }
}

impl SignedHist {
    /// Empty.
    pub fn new() -> Self {
        let h = || {
            let mut h = hdrhistogram::Histogram::new(3).expect("3 significant digits is valid");
            h.auto(true);
            h
        };
        Self { neg: h(), pos: h(), min: i64::MAX, max: i64::MIN }
    }

    /// Add a value.
    pub fn record(&mut self, v: i64) {
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        if v < 0 {
            if self.neg.record(v.unsigned_abs()).is_err() {
                self.neg.saturating_record(v.unsigned_abs());
            }
        } else if self.pos.record(v as u64).is_err() {
            self.pos.saturating_record(v as u64);
        }
    }

    /// How many values.
    pub fn len(&self) -> u64 {
        self.neg.len() + self.pos.len()
    }

    /// Whether no value was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value at quantile `q` (nearest rank, within the histograms' 0.1 %).
    pub fn quantile(&self, q: f64) -> Option<i64> {
        let n = self.len();
        if n == 0 {
            return None;
        }
        let r = crate::analysis::figure::rank(q, n);
        let nn = self.neg.len();
        let v = if r <= nn {
            // Rank r among the negatives counts from the most negative.
            let k = nn - r + 1;
            -(self.neg.value_at_quantile((k as f64 - 0.5) / nn as f64) as i64)
        } else {
            let k = r - nn;
            self.pos.value_at_quantile((k as f64 - 0.5) / self.pos.len() as f64) as i64
        };
        Some(v.clamp(self.min, self.max))
    }
}
