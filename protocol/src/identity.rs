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
    IDENTITY_ALPHABET[(seq % IDENTITY_COUNT as u64) as usize]
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
