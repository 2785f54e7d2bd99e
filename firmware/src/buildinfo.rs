//! `LATPROBE_BUILD`: the 64 bytes in every probe image that say what it is,
//! written by the board binaries and read by `latprobe flash` before it
//! touches a probe (an image for another board or protocol is refused
//! there). One home for the layout, used by both sides.
//!
//! Format 1: `LATPROBE`, the format (1), the protocol version, 2 reserved,
//! the board name (32 bytes, NUL-padded), the firmware version (16 bytes,
//! NUL-padded), 4 reserved.

/// The symbol the image keeps the block under.
pub const SYMBOL: &str = "LATPROBE_BUILD";
/// Its length.
pub const LEN: usize = 64;
const MAGIC: [u8; 8] = *b"LATPROBE";
const FORMAT: u8 = 1;
const BOARD: (usize, usize) = (12, 32);
const VERSION: (usize, usize) = (44, 16);
/// Where the protocol version sits (the board binary reads it back so the
/// block stays in the image).
pub const PROTOCOL_AT: usize = 9;

/// The block for `board`'s firmware `version` speaking `protocol`; a name
/// too long for its field is a build error (const evaluation).
pub const fn encode(board: &str, version: &str, protocol: u8) -> [u8; LEN] {
    let mut out = [0u8; LEN];
    let mut i = 0;
    while i < MAGIC.len() {
        out[i] = MAGIC[i];
        i += 1;
    }
    out[8] = FORMAT;
    out[PROTOCOL_AT] = protocol;
    let (board, version) = (board.as_bytes(), version.as_bytes());
    assert!(board.len() <= BOARD.1 && version.len() <= VERSION.1, "LATPROBE_BUILD fields too long");
    i = 0;
    while i < board.len() {
        out[BOARD.0 + i] = board[i];
        i += 1;
    }
    i = 0;
    while i < version.len() {
        out[VERSION.0 + i] = version[i];
        i += 1;
    }
    out
}

/// A block read back: the protocol version, the board name and the
/// firmware version (their bytes up to the first NUL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded<'a> {
    /// The protocol the image speaks.
    pub protocol: u8,
    /// The board name's bytes.
    pub board: &'a [u8],
    /// The firmware version's bytes.
    pub version: &'a [u8],
}

/// Read a block of format 1, or `None` for anything else.
pub fn decode(b: &[u8]) -> Option<Decoded<'_>> {
    if b.len() < LEN || b[..8] != MAGIC || b[8] != FORMAT {
        return None;
    }
    let field = |(at, len): (usize, usize)| {
        let r = &b[at..at + len];
        &r[..r.iter().position(|&c| c == 0).unwrap_or(r.len())]
    };
    Some(Decoded { protocol: b[PROTOCOL_AT], board: field(BOARD), version: field(VERSION) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_reads_back_as_written() {
        let b = encode("nucleo-f411re", "0.1.0", 3);
        assert_eq!(&b[..8], b"LATPROBE");
        let d = decode(&b).unwrap();
        assert_eq!((d.protocol, d.board, d.version), (3, &b"nucleo-f411re"[..], &b"0.1.0"[..]));
        // Full-length fields have no NUL, and still read back whole.
        let long = encode("b".repeat(32).leak(), "v".repeat(16).leak(), 1);
        let d = decode(&long).unwrap();
        assert_eq!((d.board.len(), d.version.len()), (32, 16));
        // Another format, a short block, or no magic: nothing.
        let mut other = b;
        other[8] = 2;
        assert_eq!(decode(&other), None);
        assert_eq!(decode(&b[..63]), None);
        assert_eq!(decode(&[0u8; 64]), None);
    }
}
