//! LEB128 varints and zigzag, the building blocks of the packed batch data.

/// Longest LEB128 encoding of a `u64`.
pub(crate) const MAX_LEN: usize = 10;

/// Write `v` as LEB128 at the start of `out`; returns the bytes used, or
/// `None` when `out` is too short (nothing meaningful is left written).
pub(crate) fn write(mut v: u64, out: &mut [u8]) -> Option<usize> {
    let mut i = 0;
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        let slot = out.get_mut(i)?;
        i += 1;
        if v == 0 {
            *slot = byte;
            return Some(i);
        }
        *slot = byte | 0x80;
    }
}

/// Read a LEB128 `u64` from the start of `input`; returns it and the bytes
/// used, or `None` for a truncated or over-long encoding.
#[inline]
pub(crate) fn read(input: &[u8]) -> Option<(u64, usize)> {
    // Most values on the wire are one or two bytes: decide those without
    // entering the loop.
    match input {
        [b0, ..] if b0 & 0x80 == 0 => return Some((u64::from(*b0), 1)),
        [b0, b1, ..] if b1 & 0x80 == 0 => return Some((u64::from(b0 & 0x7f) | u64::from(*b1) << 7, 2)),
        _ => {}
    }
    let mut v: u64 = 0;
    for (i, &b) in input.iter().enumerate().take(MAX_LEN) {
        let part = u64::from(b & 0x7f);
        if i == MAX_LEN - 1 && part > 1 {
            return None; // would overflow 64 bits
        }
        v |= part << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// Bytes `v` takes as LEB128.
#[cfg(test)]
pub(crate) const fn len(v: u64) -> usize {
    let bits = 64 - v.leading_zeros() as usize;
    if bits == 0 {
        1
    } else {
        bits.div_ceil(7)
    }
}

pub(crate) const fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

pub(crate) const fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trip(v: u64) {
            let mut buf = [0u8; MAX_LEN];
            let n = write(v, &mut buf).unwrap();
            prop_assert_eq!(n, len(v));
            prop_assert_eq!(read(&buf[..n]), Some((v, n)));
            // Any shorter prefix is a truncation, never a wrong value.
            prop_assert_eq!(read(&buf[..n - 1]), None);
        }

        #[test]
        fn zigzag_round_trip(v: i64) {
            prop_assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    /// Against a plain LEB128 coder, at every length boundary and around
    /// 2^32, with a buffer of exactly the length and one byte short.
    #[test]
    fn codes_the_same_bytes_as_a_plain_coder_at_every_length_boundary() {
        fn reference(mut v: u64) -> std::vec::Vec<u8> {
            let mut out = std::vec::Vec::new();
            loop {
                let b = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    out.push(b);
                    return out;
                }
                out.push(b | 0x80);
            }
        }
        let mut values = std::vec![0u64, 1, u64::from(u32::MAX), 1 << 32, (1 << 32) + 1, u64::MAX];
        for k in 1..10 {
            let edge = 1u64 << (7 * k);
            values.extend([edge - 1, edge, edge + 1]);
        }
        for v in values {
            let want = reference(v);
            let mut buf = [0u8; MAX_LEN];
            assert_eq!(write(v, &mut buf[..want.len()]), Some(want.len()), "{v}");
            assert_eq!(&buf[..want.len()], &want[..], "{v}");
            assert_eq!(write(v, &mut buf[..want.len() - 1]), None, "{v}: one byte short");
        }
    }

    #[test]
    fn rejects_overlong() {
        assert_eq!(read(&[0xff; 11]), None);
        assert_eq!(read(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]), None);
        assert_eq!(read(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), Some((u64::MAX, 10)));
        assert_eq!(write(300, &mut [0u8; 1]), None);
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
    }
}
