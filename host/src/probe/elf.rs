//! A probe firmware ELF, checked before any probe is touched: it must be an
//! ARM ELF carrying `LATPROBE_BUILD` (firmware/src/bin/*/main.rs) for the
//! board asked for and this latprobe's protocol version, whose load
//! segments lie in that board's flash (and on the RP2040 begin with a
//! boot2 the boot ROM accepts). It also
//! gives the flash image (to tell whether the probe already holds it), the
//! RTT control block's address and the bytes for the defmt decoder.

use std::path::{Path, PathBuf};

use latprobe_protocol::PROTOCOL_VERSION;
use object::elf::PT_LOAD;
use object::read::elf::{ElfFile32, ProgramHeader as _};
use object::{Object as _, ObjectSection as _, ObjectSymbol as _};

use super::Board;
use crate::Error;

/// The symbol that says what an ELF is.
pub const BUILD_SYMBOL: &str = latprobe_firmware::buildinfo::SYMBOL;
/// The symbol of the RTT control block.
pub const RTT_SYMBOL: &str = "_SEGGER_RTT";

/// `LATPROBE_BUILD`, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildInfo {
    /// The board the firmware drives.
    pub board: String,
    /// The firmware's version.
    pub firmware_version: String,
    /// The protocol it speaks.
    pub protocol_version: u8,
}

impl BuildInfo {
    /// Decode the 64 bytes of format 1 ([`latprobe_firmware::buildinfo`]).
    pub fn parse(b: &[u8]) -> Option<Self> {
        let d = latprobe_firmware::buildinfo::decode(b)?;
        let text = |r: &[u8]| String::from_utf8_lossy(r).into_owned();
        Some(Self { protocol_version: d.protocol, board: text(d.board), firmware_version: text(d.version) })
    }
}

/// A firmware ELF that passed the checks.
#[derive(Debug, Clone)]
pub struct FirmwareElf {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its bytes (the defmt decoder wants them).
    pub bytes: Vec<u8>,
    /// What it says it is.
    pub info: BuildInfo,
    /// Address of `_SEGGER_RTT`.
    pub rtt_addr: Option<u64>,
    /// What goes into flash: (load address, bytes), in address order.
    pub image: Vec<(u64, Vec<u8>)>,
}

impl FirmwareElf {
    /// Read `path` and check that it is latprobe firmware for `board` that
    /// speaks this latprobe's protocol. Every refusal names the file and
    /// the command that builds the right one.
    pub fn load(path: &Path, board: &Board) -> Result<Self, Error> {
        let bytes =
            std::fs::read(path).map_err(|e| Error::Input(format!("cannot read {}: {e}", path.display())))?;
        let refuse = |why: String| {
            Error::Input(format!(
                "refusing to flash {}: {why}; build the {} firmware with `{}` in the latprobe \
                 source tree (or give --elf PATH of one)",
                path.display(),
                board.name,
                board.build
            ))
        };
        let elf = ElfFile32::<object::Endianness>::parse(&*bytes)
            .map_err(|e| refuse(format!("not a 32-bit ELF file ({e})")))?;
        if elf.architecture() != object::Architecture::Arm {
            return Err(refuse(format!("it is built for {:?}, not an ARM Cortex-M", elf.architecture())));
        }
        let info = read_symbol(&elf, BUILD_SYMBOL).and_then(BuildInfo::parse).ok_or_else(|| {
            refuse(format!(
                "it has no {BUILD_SYMBOL}: it is not latprobe probe firmware (or predates `latprobe flash`)"
            ))
        })?;
        if info.board != board.name {
            return Err(refuse(format!("it is built for the board {}, not {}", info.board, board.name)));
        }
        if info.protocol_version != PROTOCOL_VERSION {
            return Err(refuse(format!(
                "its firmware {} speaks protocol version {}, and this latprobe speaks version {PROTOCOL_VERSION}",
                info.firmware_version, info.protocol_version
            )));
        }
        let rtt_addr = elf.symbols().find(|s| s.name() == Ok(RTT_SYMBOL)).map(|s| s.address());
        let endian = elf.endian();
        let mut image = Vec::new();
        for ph in elf.elf_program_headers() {
            if ph.p_type(endian) != PT_LOAD || ph.p_filesz(endian) == 0 {
                continue;
            }
            let data = ph
                .data(endian, &*bytes)
                .map_err(|_| refuse("a load segment lies outside the file".into()))?;
            image.push((u64::from(ph.p_paddr(endian)), data.to_vec()));
        }
        image.sort_by_key(|(a, _)| *a);
        if image.is_empty() {
            return Err(refuse("it has nothing to load".into()));
        }
        let (origin, len) = board.flash;
        if let Some((addr, data)) =
            image.iter().find(|(a, d)| *a < origin || a + d.len() as u64 > origin + len)
        {
            return Err(refuse(format!(
                "its load segment {addr:#010x}..{:#010x} is outside the {}'s flash ({origin:#010x}..{:#010x})",
                addr + data.len() as u64,
                board.name,
                origin + len
            )));
        }
        if let Some(pair) = image.windows(2).find(|w| w[0].0 + w[0].1.len() as u64 > w[1].0) {
            return Err(refuse(format!(
                "its load segments at {:#010x} and {:#010x} overlap",
                pair[0].0, pair[1].0
            )));
        }
        if board.boot2 {
            check_boot2(&image, origin).map_err(refuse)?;
        }
        Ok(Self { path: path.to_path_buf(), bytes, info, rtt_addr, image })
    }

    /// Bytes of the image, all segments together.
    pub fn image_len(&self) -> usize {
        self.image.iter().map(|(_, d)| d.len()).sum()
    }

    /// CRC-32 (the protocol's, ISO-HDLC) of the image from its first to its
    /// last loaded byte, gaps between segments counted as erased flash
    /// (0xFF, which probe-rs leaves there). This is the build id the
    /// firmware could put in its Hello (docs/book/src/internals/probe-rs.md).
    pub fn image_crc(&self) -> u32 {
        let mut digest = latprobe_protocol::framing::CRC.digest();
        let mut at = self.image.first().map_or(0, |(a, _)| *a);
        for (addr, data) in &self.image {
            while at < *addr {
                digest.update(&[0xFF]);
                at += 1;
            }
            digest.update(data);
            at = addr + data.len() as u64;
        }
        digest.finalize()
    }
}

/// The RP2040 boot ROM's check of boot2 (RP2040 datasheet §2.8.1.3.1):
/// the first 256 bytes of flash, whose last 4 are the CRC-32 of the first
/// 252 (polynomial 0x04c11db7, not reflected, initial value 0xffffffff, no
/// final XOR: CRC-32/MPEG-2), little-endian. Without it the chip stays in
/// the boot ROM, which shows up as a USB drive (BOOTSEL) and never runs
/// the firmware.
pub fn boot2_crc(first_252: &[u8]) -> u32 {
    crc::Crc::<u32>::new(&crc::CRC_32_MPEG_2).checksum(first_252)
}

/// Whether `image` starts at `origin` with a whole boot2 whose CRC holds.
pub fn check_boot2(image: &[(u64, Vec<u8>)], origin: u64) -> Result<(), String> {
    let boot2 =
        image.iter().find(|(a, d)| *a <= origin && a + d.len() as u64 >= origin + 256).map(|(a, d)| {
            let at = (origin - a) as usize;
            &d[at..at + 256]
        });
    let Some(boot2) = boot2 else {
        return Err(format!(
            "it has no boot2 in the first 256 bytes of flash ({origin:#010x}): the RP2040 would not boot \
             it (the firmware puts rp2040-boot2's loader in .boot2)"
        ));
    };
    let want = boot2_crc(&boot2[..252]);
    let have = u32::from_le_bytes([boot2[252], boot2[253], boot2[254], boot2[255]]);
    if have != want {
        return Err(format!(
            "its boot2 at {origin:#010x} ends in {have:#010x}, not the CRC-32 of its first 252 bytes \
             ({want:#010x}): the RP2040's boot ROM would refuse it and never run the firmware"
        ));
    }
    Ok(())
}

/// The bytes of the symbol `name`, from the section that holds them.
fn read_symbol<'d>(elf: &ElfFile32<'d, object::Endianness>, name: &str) -> Option<&'d [u8]> {
    let sym = elf.symbols().find(|s| s.name() == Ok(name))?;
    let (addr, size) = (sym.address(), sym.size());
    let section = elf.sections().find(|s| s.address() <= addr && addr + size <= s.address() + s.size())?;
    let data = section.data().ok()?;
    let start = (addr - section.address()) as usize;
    data.get(start..start + size as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot2_is_checked_as_the_boot_rom_checks_it() {
        // CRC-32/MPEG-2's catalogue check value.
        assert_eq!(boot2_crc(b"123456789"), 0x0376_e6e7);
        let mut boot2: Vec<u8> = (0..252u32).map(|i| (i * 13 + 1) as u8).collect();
        boot2.extend_from_slice(&boot2_crc(&boot2).to_le_bytes());
        let rest = vec![0x5A; 64];
        let origin = 0x1000_0000;
        check_boot2(&[(origin, boot2.clone()), (origin + 256, rest.clone())], origin).unwrap();
        // boot2 inside a larger first segment.
        let whole: Vec<u8> = boot2.iter().chain(&rest).copied().collect();
        check_boot2(&[(origin, whole)], origin).unwrap();
        let e = check_boot2(&[(origin + 256, rest.clone())], origin).unwrap_err();
        assert!(e.contains("no boot2") && e.contains("0x10000000"), "{e}");
        let e = check_boot2(&[(origin, boot2[..200].to_vec())], origin).unwrap_err();
        assert!(e.contains("no boot2"), "a short boot2 is none: {e}");
        let mut bad = boot2.clone();
        bad[7] ^= 0x80;
        let e = check_boot2(&[(origin, bad)], origin).unwrap_err();
        assert!(e.contains("not the CRC-32 of its first 252 bytes"), "{e}");
    }
}
