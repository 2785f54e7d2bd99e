//! UF2, the file a boot ROM's USB drive takes (the RP2040's BOOTSEL mode:
//! drag the file onto the RPI-RP2 drive and the chip writes and runs it).
//!
//! The format, from the UF2 specification (github.com/microsoft/uf2,
//! docs/book/src/getting-started/pico.md, the UF2 file): the file is a sequence of 512-byte blocks,
//! each self-contained, all little-endian 32-bit words:
//!
//! ```text
//!   0  magicStart0 0x0A324655 ("UF2\n")     16  payloadSize
//!   4  magicStart1 0x9E5D5157               20  blockNo (from 0)
//!   8  flags                                24  numBlocks (in the file)
//!  12  targetAddr                           28  fileSize or familyID
//!  32  data[476] (payloadSize bytes used, the rest zero)
//! 508  magicEnd    0x0AB16F30
//! ```
//!
//! With flag 0x00002000 ("familyID present") word 28 is the family id;
//! the RP2040's is 0xe48bff56 (utils/uf2families.json there). The RP2040
//! boot ROM takes 256-byte payloads at 256-byte aligned flash addresses
//! (RP2040 datasheet §2.8, "UF2 Format Details"), so each block carries one
//! flash page.

/// First magic word.
pub const MAGIC_START0: u32 = 0x0A32_4655;
/// Second magic word.
pub const MAGIC_START1: u32 = 0x9E5D_5157;
/// Last word of a block.
pub const MAGIC_END: u32 = 0x0AB1_6F30;
/// Flag: word 28 is the family id.
pub const FLAG_FAMILY_ID: u32 = 0x0000_2000;
/// A block's size in the file.
pub const BLOCK: usize = 512;
/// The payload of each block: one RP2040 flash page.
pub const PAGE: usize = 256;

/// The UF2 file of `image` ((load address, bytes), as an ELF's PT_LOAD
/// segments give them): one block per 256-byte page that any segment
/// touches, in address order, the bytes of a page no segment covers left
/// at zero. Every segment must lie in `flash` (origin, length), and no two
/// may overlap; the error says which does not.
pub fn write(image: &[(u64, Vec<u8>)], family: u32, flash: (u64, u64)) -> Result<Vec<u8>, String> {
    let (origin, len) = flash;
    let mut pages: std::collections::BTreeMap<u64, ([u8; PAGE], [bool; PAGE])> = Default::default();
    for (addr, data) in image {
        let end = addr + data.len() as u64;
        if *addr < origin || end > origin + len {
            return Err(format!(
                "the segment {addr:#010x}..{end:#010x} is not in flash ({origin:#010x}..{:#010x}): a UF2 \
                 for the boot ROM holds flash only",
                origin + len
            ));
        }
        for (i, b) in data.iter().enumerate() {
            let at = addr + i as u64;
            let page = at & !(PAGE as u64 - 1);
            let (bytes, set) = pages.entry(page).or_insert(([0; PAGE], [false; PAGE]));
            let off = (at - page) as usize;
            if set[off] {
                return Err(format!("two segments both load the byte at {at:#010x}"));
            }
            bytes[off] = *b;
            set[off] = true;
        }
    }
    let count = u32::try_from(pages.len()).map_err(|_| "too many pages for one UF2 file".to_string())?;
    let mut out = Vec::with_capacity(pages.len() * BLOCK);
    for (n, (page, (bytes, _))) in pages.iter().enumerate() {
        let target = u32::try_from(*page).map_err(|_| format!("{page:#x} is beyond 32-bit addresses"))?;
        let header =
            [MAGIC_START0, MAGIC_START1, FLAG_FAMILY_ID, target, PAGE as u32, n as u32, count, family];
        for w in header {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(bytes);
        out.resize(out.len() + (476 - PAGE), 0);
        out.extend_from_slice(&MAGIC_END.to_le_bytes());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Word `i` of block `n`, read as the spec lays it out.
    fn word(file: &[u8], n: usize, at: usize) -> u32 {
        let o = n * 512 + at;
        u32::from_le_bytes(file[o..o + 4].try_into().unwrap())
    }

    #[test]
    fn blocks_carry_one_page_each_with_the_spec_fields() {
        // Two segments: 300 bytes from the flash origin (a page and a
        // bit), and 10 bytes in the page after a gap of one whole page.
        let a: Vec<u8> = (0..300u32).map(|i| (i * 7) as u8).collect();
        let b = vec![0xAB; 10];
        let file =
            write(&[(0x1000_0000, a.clone()), (0x1000_0304, b.clone())], 0xe48b_ff56, (0x1000_0000, 4096))
                .unwrap();
        // Pages 0x10000000, 0x10000100 and 0x10000300; 0x10000200 is in no segment.
        assert_eq!(file.len(), 3 * 512);
        let targets: Vec<u32> = (0..3).map(|n| word(&file, n, 12)).collect();
        assert_eq!(targets, [0x1000_0000, 0x1000_0100, 0x1000_0300]);
        for n in 0..3 {
            assert_eq!(word(&file, n, 0), 0x0A32_4655, "magicStart0");
            assert_eq!(word(&file, n, 4), 0x9E5D_5157, "magicStart1");
            assert_eq!(word(&file, n, 8), 0x2000, "flags: familyID present");
            assert_eq!(word(&file, n, 16), 256, "payloadSize");
            assert_eq!(word(&file, n, 20), n as u32, "blockNo");
            assert_eq!(word(&file, n, 24), 3, "numBlocks");
            assert_eq!(word(&file, n, 28), 0xe48b_ff56, "familyID");
            assert_eq!(word(&file, n, 508), 0x0AB1_6F30, "magicEnd");
            assert!(file[n * 512 + 32 + 256..n * 512 + 508].iter().all(|&x| x == 0), "data past the payload");
        }
        let data = |n: usize| &file[n * 512 + 32..n * 512 + 32 + 256];
        assert_eq!(data(0), &a[..256]);
        assert_eq!(&data(1)[..44], &a[256..]);
        assert!(data(1)[44..].iter().all(|&x| x == 0));
        assert!(data(2)[..4].iter().all(|&x| x == 0));
        assert_eq!(&data(2)[4..14], &b[..]);
    }

    #[test]
    fn outside_flash_and_overlaps_are_refused() {
        let e = write(&[(0x2000_0000, vec![1; 4])], 1, (0x1000_0000, 4096)).unwrap_err();
        assert!(e.contains("0x20000000") && e.contains("flash only"), "{e}");
        let e = write(&[(0x1000_0ffe, vec![1; 4])], 1, (0x1000_0000, 4096)).unwrap_err();
        assert!(e.contains("not in flash"), "{e}");
        let e = write(&[(0x1000_0000, vec![1; 8]), (0x1000_0004, vec![2; 8])], 1, (0x1000_0000, 4096))
            .unwrap_err();
        assert!(e.contains("0x10000004"), "{e}");
        assert_eq!(write(&[], 1, (0x1000_0000, 4096)).unwrap(), Vec::<u8>::new());
    }
}
