//! Stimulus identities: the nine bytes with a single falling edge on an
//! 8N1 line ([`IDENTITY_ALPHABET`]), which stimulus sends which, and which
//! identity an answer byte is.

/// The identity bytes of [`Stimulus::Identified`](crate::Stimulus::Identified), in the order stimuli use
/// them: stimulus `seq` sends `IDENTITY_ALPHABET[seq % 9]`.
///
/// These are the nine bytes whose only falling edge on an 8N1 line is the
/// start bit: sent LSB first, each is a run of 0 bits then a run of 1 bits
/// (0x00, then 0x80 = 0000_0001 on the wire, … 0xFF), so the line goes
/// idle-high → start-bit low → data low … → data high … → stop high, with
/// exactly one high-to-low transition. A probe that captures falling edges
/// on the response line gets exactly one capture per answer byte: its start
/// bit, whatever the byte. Any other byte value has a second falling edge
/// inside it and is no identity.
pub const IDENTITY_ALPHABET: [u8; 9] = [0x00, 0x80, 0xC0, 0xE0, 0xF0, 0xF8, 0xFC, 0xFE, 0xFF];

/// Number of identities: at most this many [`Stimulus::Identified`](crate::Stimulus::Identified)
/// stimuli are in flight at once.
pub const IDENTITY_COUNT: usize = IDENTITY_ALPHABET.len();

/// The default horizon of `uart-echo` with identity, in intervals: an answer
/// up to this many intervals late is still matched and timed exactly.
pub const DEFAULT_HORIZON_INTERVALS: u32 = 8;

/// The identity byte of stimulus `seq`.
pub const fn identity_byte(seq: u64) -> u8 {
    IDENTITY_ALPHABET[identity_index(seq)]
}

/// `seq % IDENTITY_COUNT`: the identity (and the probe's window slot) of
/// stimulus `seq`, without a division. A 64-bit division is a library
/// routine on a 32-bit core (about 100 instructions on the M4, hundreds of
/// cycles on the M0+, which has no divide instruction at all) and this
/// runs several times per sample. 2^6 = 64 = 7 · 9 + 1, so every power of
/// 2^6 is 1 modulo 9, and a number is congruent to the sum of its digits
/// in any base 2^(6k): fold 24-bit digits, then 12-bit, then 6-bit ones,
/// then subtract.
pub const fn identity_index(seq: u64) -> usize {
    const { assert!(IDENTITY_COUNT == 9, "identity_index folds modulo 9") };
    // Three 24-bit digits: below 3 · 2^24.
    let s = (seq & 0xff_ffff) + ((seq >> 24) & 0xff_ffff) + (seq >> 48);
    let s = s as u32;
    // 12-bit digits: below 2^12 + 3 · 2^12.
    let s = (s & 0xfff) + (s >> 12);
    // 6-bit digits, twice: below 64 + 256, then below 64 + 5.
    let s = (s & 0x3f) + (s >> 6);
    let mut s = (s & 0x3f) + (s >> 6);
    // s < 72.
    if s >= 36 {
        s -= 36;
    }
    if s >= 18 {
        s -= 18;
    }
    if s >= 9 {
        s -= 9;
    }
    s as usize
}

/// The identity (0..9) of an answer byte, or `None` for a byte outside
/// [`IDENTITY_ALPHABET`].
pub const fn identity_of(byte: u8) -> Option<usize> {
    // The alphabet is 0x00 and the bytes of n leading ones (0x80 … 0xFF):
    // a byte is in it when its complement's bits are all contiguous from bit 0.
    let inv = !byte;
    if inv & inv.wrapping_add(1) != 0 {
        return None;
    }
    Some(byte.leading_ones() as usize)
}
