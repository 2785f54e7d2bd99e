//! The dither generator: PCG32 (XSH RR) with unbiased integer range
//! reduction, so the same `Config::seed` always gives the same schedule on
//! every board and on the host, without floating point.

/// PCG32 (O'Neill's `pcg32`, XSH RR output, 64-bit state).
#[derive(Debug, Clone)]
pub struct Pcg32 {
    state: u64,
    inc: u64,
}

const MULTIPLIER: u64 = 6_364_136_223_846_793_005;
/// Stream selector; any odd constant. Fixed so that only the seed matters.
const STREAM: u64 = 0xda3e_39cb_94b9_5bdb;

impl Pcg32 {
    /// A generator seeded as `pcg32_srandom(seed, STREAM)` does.
    pub const fn new(seed: u64) -> Self {
        let inc = (STREAM << 1) | 1;
        let mut state = 0u64.wrapping_mul(MULTIPLIER).wrapping_add(inc);
        state = state.wrapping_add(seed);
        state = state.wrapping_mul(MULTIPLIER).wrapping_add(inc);
        Self { state, inc }
    }

    /// The next 32 uniformly distributed bits.
    pub fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.state = old.wrapping_mul(MULTIPLIER).wrapping_add(self.inc);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        let rot = (old >> 59) as u32;
        xorshifted.rotate_right(rot)
    }

    /// A uniform value in `0..=max`, without bias: Lemire's multiply-shift
    /// with rejection of the short last interval.
    pub fn up_to(&mut self, max: u32) -> u32 {
        if max == u32::MAX {
            return self.next_u32();
        }
        let span = max + 1;
        let mut m = u64::from(self.next_u32()) * u64::from(span);
        if (m as u32) < span {
            // 2^32 mod span: the values below it would over-represent
            // some outputs, so they are drawn again.
            let threshold = span.wrapping_neg() % span;
            while (m as u32) < threshold {
                m = u64::from(self.next_u32()) * u64::from(span);
            }
        }
        (m >> 32) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_other_seed_other_stream() {
        let mut a = Pcg32::new(42);
        let mut b = Pcg32::new(42);
        let mut c = Pcg32::new(43);
        let xs: [u32; 16] = core::array::from_fn(|_| a.next_u32());
        let ys: [u32; 16] = core::array::from_fn(|_| b.next_u32());
        let zs: [u32; 16] = core::array::from_fn(|_| c.next_u32());
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn up_to_stays_in_range_and_covers_it() {
        let mut r = Pcg32::new(7);
        let mut seen = [0u32; 11];
        for _ in 0..11_000 {
            let v = r.up_to(10);
            seen[v as usize] += 1;
        }
        // Each of 11 values expected 1000 times; a fair generator stays well
        // within ±20 % at this count.
        for (v, &n) in seen.iter().enumerate() {
            assert!((800..1200).contains(&n), "value {v} drawn {n} times");
        }
        assert_eq!(r.up_to(0), 0);
        let _ = r.up_to(u32::MAX);
    }

    #[test]
    fn up_to_is_unbiased_for_awkward_span() {
        // span 3 * 2^30: naive `x % span` would draw the low third twice as
        // often as the rest.
        let mut r = Pcg32::new(99);
        let span = 3u32 << 30;
        let mut low = 0u32;
        let n = 30_000;
        for _ in 0..n {
            if r.up_to(span - 1) < span / 3 {
                low += 1;
            }
        }
        assert!((9_000..11_000).contains(&low), "low third drawn {low} of {n}");
    }
}
