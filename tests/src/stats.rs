//! Exact percentiles by sorting, nearest-rank definition: the p-th
//! percentile of n values is the value of rank ⌈p·n⌉ (1-based) in ascending
//! order, so it is always one of the values.

/// Percentile points in parts per million (p50 = 500_000).
pub const POINTS: [(&str, u64); 5] =
    [("p50", 500_000), ("p90", 900_000), ("p99", 990_000), ("p99.9", 999_000), ("max", 1_000_000)];

/// The nearest-rank percentile `per_million` of `sorted` (ascending).
pub fn nearest_rank(sorted: &[u64], per_million: u64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len() as u128;
    let rank = (u128::from(per_million) * n).div_ceil(1_000_000).max(1);
    Some(sorted[(rank - 1) as usize])
}

/// The [`POINTS`] of `values` (sorted here).
pub fn summary(values: &[u64]) -> Vec<(&'static str, u64)> {
    let mut v = values.to_vec();
    v.sort_unstable();
    POINTS.iter().map(|&(name, p)| (name, nearest_rank(&v, p).unwrap_or(0))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_textbook_cases() {
        // Wikipedia's example: 15, 20, 35, 40, 50.
        let v = [15, 20, 35, 40, 50];
        assert_eq!(nearest_rank(&v, 50_000), Some(15));
        assert_eq!(nearest_rank(&v, 300_000), Some(20));
        assert_eq!(nearest_rank(&v, 400_000), Some(20));
        assert_eq!(nearest_rank(&v, 500_000), Some(35));
        assert_eq!(nearest_rank(&v, 1_000_000), Some(50));
        assert_eq!(nearest_rank(&v, 0), Some(15));
        assert_eq!(nearest_rank(&[], 500_000), None);
        let hundred: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&hundred, 990_000), Some(99));
        assert_eq!(nearest_rank(&hundred, 999_000), Some(100));
    }
}
