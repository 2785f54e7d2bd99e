//! `latprobe flash --board rp2040-pico` on a machine with no debug probe:
//! the UF2 file for BOOTSEL drag-and-drop, decoded here field by field as
//! the UF2 specification lays it out (github.com/microsoft/uf2, README
//! "File format") and compared with the ELF's own load segments, read by
//! hand from its program headers; its boot2 checked with the CRC the
//! RP2040 boot ROM computes (datasheet §2.8.1.3.1), written out here from
//! the datasheet's words; the file compared byte for byte with Microsoft's
//! uf2conv when it is on this machine; and every refusal, made before any
//! probe is touched, naming its fix.

mod fw;

use std::process::{Command, Output};

fn latprobe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_latprobe")).args(args).output().expect("run latprobe")
}

/// Exit 2 and the one `Error:` line.
fn usage_error(args: &[&str]) -> String {
    let out = latprobe(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains("Error: ") || err.contains("error: "), "{err}");
    err
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// The ELF's PT_LOAD segments with file bytes, as (p_paddr, bytes), from
/// the ELF32 header (e_phoff at 0x1c, e_phentsize at 0x2a, e_phnum at
/// 0x2c) and program headers (p_type, p_offset, p_vaddr, p_paddr,
/// p_filesz, …).
fn load_segments(elf: &[u8]) -> Vec<(u32, Vec<u8>)> {
    assert_eq!(&elf[..6], b"\x7fELF\x01\x01", "a little-endian ELF32");
    let (phoff, phentsize, phnum) = (
        le32(elf, 0x1c) as usize,
        u16::from_le_bytes([elf[0x2a], elf[0x2b]]) as usize,
        u16::from_le_bytes([elf[0x2c], elf[0x2d]]) as usize,
    );
    let mut out = Vec::new();
    for i in 0..phnum {
        let ph = &elf[phoff + i * phentsize..];
        let (ty, off, paddr, filesz) =
            (le32(ph, 0), le32(ph, 4) as usize, le32(ph, 12), le32(ph, 16) as usize);
        if ty == 1 && filesz > 0 {
            out.push((paddr, elf[off..off + filesz].to_vec()));
        }
    }
    out
}

/// CRC-32 as RP2040 datasheet §2.8.1.3.1 gives it for boot2: polynomial
/// 0x04c11db7, MSB first (no reflection), initial value 0xffffffff, no
/// final XOR.
fn boot_rom_crc(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &byte in data {
        crc ^= u32::from(byte) << 24;
        for _ in 0..8 {
            crc = if crc & 0x8000_0000 != 0 { (crc << 1) ^ 0x04c1_1db7 } else { crc << 1 };
        }
    }
    crc
}

/// The UF2 file's blocks, each checked against the spec's words; returns
/// (targetAddr, the 256 payload bytes) per block.
fn decode_uf2(file: &[u8]) -> Vec<(u32, Vec<u8>)> {
    assert!(!file.is_empty() && file.len() % 512 == 0, "whole 512-byte blocks: {} bytes", file.len());
    let n = file.len() / 512;
    let mut blocks = Vec::new();
    for (i, b) in file.chunks(512).enumerate() {
        assert_eq!(le32(b, 0), 0x0A32_4655, "block {i}: magicStart0");
        assert_eq!(le32(b, 4), 0x9E5D_5157, "block {i}: magicStart1");
        assert_eq!(le32(b, 8), 0x0000_2000, "block {i}: flags: familyID present, nothing else");
        let (target, size) = (le32(b, 12), le32(b, 16));
        assert_eq!(size, 256, "block {i}: payloadSize");
        assert_eq!(target % 256, 0, "block {i}: a page-aligned targetAddr {target:#x}");
        assert!(
            (0x1000_0000..0x1020_0000).contains(&target),
            "block {i}: {target:#x} is in the Pico's flash"
        );
        assert_eq!(le32(b, 20), i as u32, "block {i}: blockNo");
        assert_eq!(le32(b, 24), n as u32, "block {i}: numBlocks");
        assert_eq!(le32(b, 28), 0xe48b_ff56, "block {i}: familyID of the RP2040");
        assert!(b[32 + 256..508].iter().all(|&x| x == 0), "block {i}: data past the payload is zero");
        assert_eq!(le32(b, 508), 0x0AB1_6F30, "block {i}: magicEnd");
        blocks.push((target, b[32..32 + 256].to_vec()));
    }
    assert!(blocks.windows(2).all(|w| w[0].0 < w[1].0), "blocks in ascending address order, none twice");
    blocks
}

#[test]
fn the_uf2_holds_every_byte_the_elf_loads_and_a_boot2_the_boot_rom_accepts() {
    let elf = fw::pico_elf();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pico.uf2");
    let o = latprobe(
        &["flash", "--board", "rp2040-pico", "--elf", elf.to_str().unwrap(), "--uf2"]
            .iter()
            .copied()
            .chain([out.to_str().unwrap()])
            .collect::<Vec<_>>(),
    );
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{said}{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        said.contains("UF2 family 0xe48bff56") && said.contains("BOOTSEL") && said.contains("picotool"),
        "{said}"
    );
    let file = std::fs::read(&out).unwrap();
    let blocks = decode_uf2(&file);
    assert!(said.contains(&format!("{} blocks", blocks.len())), "{said}");

    let segments = load_segments(&std::fs::read(elf).unwrap());
    assert!(
        segments.iter().all(|(a, _)| *a >= 0x1000_0000),
        "the Pico ELF loads into flash only: {segments:x?}"
    );
    // Every byte every segment loads is in its block, at its offset.
    let page = |addr: u32| blocks.iter().find(|(t, _)| *t == addr & !0xff);
    for (addr, data) in &segments {
        for (i, byte) in data.iter().enumerate() {
            let at = addr + i as u32;
            let (_, payload) = page(at).unwrap_or_else(|| panic!("no block for {at:#010x}"));
            assert_eq!(payload[(at & 0xff) as usize], *byte, "the byte at {at:#010x}");
        }
    }
    // No block that no segment touches, and no byte that none loads but zero.
    for (target, payload) in &blocks {
        for (i, byte) in payload.iter().enumerate() {
            let at = target + i as u32;
            let loaded = segments.iter().any(|(a, d)| (*a..*a + d.len() as u32).contains(&at));
            assert!(loaded || *byte == 0, "{at:#010x} holds {byte:#04x} and no segment loads it");
        }
        assert!(
            segments.iter().any(|(a, d)| *a < target + 256 && a + d.len() as u32 > *target),
            "block {target:#010x} is in no segment"
        );
    }
    // boot2: the first 256 bytes of flash, their last word the boot ROM's CRC
    // of the first 252.
    let (first, boot2) = &blocks[0];
    assert_eq!(*first, 0x1000_0000, "boot2 is the first page of flash");
    assert_eq!(le32(boot2, 252), boot_rom_crc(&boot2[..252]), "boot2's CRC");
    // The datasheet's CRC against its catalogue check value ("123456789").
    assert_eq!(boot_rom_crc(b"123456789"), 0x0376_e6e7);
}

/// The reference: Microsoft's uf2conv (PyPI adafruit-uf2 1.0.0 installs it
/// as `uf2conv`) converting the ELF's flat binary (llvm-objcopy -O binary,
/// as rustup's llvm-tools ship it) at 0x10000000 for the RP2040 family.
/// This ELF's segments are contiguous, so the flat binary is the image
/// and the two files must agree byte for byte.
#[test]
fn the_uf2_is_the_one_microsofts_uf2conv_makes() {
    let uf2conv = std::env::var("LATPROBE_UF2CONV").unwrap_or_else(|_| "uf2conv".into());
    // scripts/test names both (LATPROBE_UF2CONV from its venv,
    // LATPROBE_OBJCOPY from rustup's llvm-tools); by hand, PATH may have them.
    let objcopy = std::env::var("LATPROBE_OBJCOPY")
        .into_iter()
        .chain(["llvm-objcopy".to_string(), "rust-objcopy".to_string()])
        .find(|t| Command::new(t).arg("--version").output().is_ok_and(|o| o.status.success()));
    let has_uf2conv = Command::new(&uf2conv).arg("--help").output().is_ok_and(|o| o.status.success());
    let (Some(objcopy), true) = (objcopy, has_uf2conv) else {
        let why =
            "the reference needs uf2conv (`pip install adafruit-uf2==1.0.0`, or LATPROBE_UF2CONV=PATH) \
                   and llvm-objcopy (`rustup component add llvm-tools`; LATPROBE_OBJCOPY=PATH or on PATH)";
        assert!(std::env::var_os("CI").is_none(), "CI must run this check: {why}");
        eprintln!("SKIPPED: {why}");
        return;
    };
    let elf = fw::pico_elf();
    let dir = tempfile::tempdir().unwrap();
    let (bin, reference, ours) =
        (dir.path().join("pico.bin"), dir.path().join("ref.uf2"), dir.path().join("ours.uf2"));
    let ok = |c: &mut Command| {
        let o = c.output().unwrap();
        assert!(
            o.status.success(),
            "{c:?}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    };
    ok(Command::new(objcopy).args(["-O", "binary"]).arg(elf).arg(&bin));
    ok(Command::new(&uf2conv)
        .args(["-b", "0x10000000", "-f", "0xe48bff56", "-c", "-o"])
        .arg(&reference)
        .arg(&bin));
    ok(Command::new(env!("CARGO_BIN_EXE_latprobe"))
        .args(["flash", "--board", "rp2040-pico", "--elf"])
        .arg(elf)
        .arg("--uf2")
        .arg(&ours));
    let (r, o) = (std::fs::read(&reference).unwrap(), std::fs::read(&ours).unwrap());
    assert_eq!(r.len(), o.len(), "uf2conv wrote {} blocks, latprobe {}", r.len() / 512, o.len() / 512);
    if let Some(at) = r.iter().zip(&o).position(|(a, b)| a != b) {
        panic!("the files differ first in block {} at byte {}", at / 512, at % 512);
    }
}

#[test]
fn a_directory_is_the_bootsel_drive_and_gets_board_uf2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("INFO_UF2.TXT"),
        "UF2 Bootloader v3.0\nModel: Raspberry Pi RP2\nBoard-ID: RPI-RP2\n",
    )
    .unwrap();
    let o = latprobe(&[
        "flash",
        "--board",
        "rp2040-pico",
        "--elf",
        fw::pico_elf().to_str().unwrap(),
        "--uf2",
        dir.path().to_str().unwrap(),
    ]);
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{said}{}", String::from_utf8_lossy(&o.stderr));
    let file = std::fs::read(dir.path().join("rp2040-pico.uf2")).expect("BOARD.uf2 in the drive");
    decode_uf2(&file);
    assert!(said.contains("restarts into the firmware"), "{said}");
}

/// Each refusal names the fix and comes before any probe (its message never
/// mentions one), with and without --uf2.
fn refused(args: &[&str], why: &str, fix: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.uf2");
    let with_uf2: Vec<&str> = args.iter().copied().chain(["--uf2", out.to_str().unwrap()]).collect();
    for a in [args, &with_uf2[..]] {
        let err = usage_error(a);
        assert!(err.contains("refusing to flash") && err.contains(why) && err.contains(fix), "{a:?}: {err}");
        assert!(!err.contains("debug probe"), "{a:?} touched a probe: {err}");
        assert!(!out.exists(), "{a:?} wrote a UF2 of a refused ELF");
    }
}

#[test]
fn an_elf_for_another_board_or_without_boot2_is_refused_naming_the_build() {
    let pico = fw::pico_elf().to_str().unwrap();
    let nucleo = fw::nucleo_elf().to_str().unwrap();
    refused(
        &["flash", "--board", "rp2040-pico", "--elf", nucleo],
        "built for the board nucleo-f411re, not rp2040-pico",
        "cargo fw-pico",
    );
    let err = usage_error(&["flash", "--elf", pico]);
    assert!(
        err.contains("built for the board rp2040-pico, not nucleo-f411re") && err.contains("cargo fw-nucleo"),
        "{err}"
    );
    // A Nucleo ELF whose LATPROBE_BUILD says rp2040-pico: its image is at
    // 0x08000000, not in the Pico's flash.
    let dir = tempfile::tempdir().unwrap();
    // Format 1: the board name is bytes 12..44, NUL-padded.
    let liar = fw::patched(dir.path(), "liar", |b| {
        b[12..44].fill(0);
        b[12..23].copy_from_slice(b"rp2040-pico");
    });
    let liar = liar.to_str().unwrap();
    refused(
        &["flash", "--board", "rp2040-pico", "--elf", liar],
        "outside the rp2040-pico's flash",
        "cargo fw-pico",
    );
    // A Pico ELF whose boot2 CRC is broken.
    let mut bytes = std::fs::read(pico).unwrap();
    let segs = load_segments(&bytes);
    let (_, boot2) = segs.iter().find(|(a, _)| *a == 0x1000_0000).expect("boot2 segment");
    let at = bytes.windows(256).position(|w| w == &boot2[..]).unwrap();
    bytes[at + 10] ^= 0x01;
    let broken = dir.path().join("broken-boot2");
    std::fs::write(&broken, bytes).unwrap();
    refused(
        &["flash", "--board", "rp2040-pico", "--elf", broken.to_str().unwrap()],
        "not the CRC-32 of its first 252 bytes",
        "cargo fw-pico",
    );
}

#[test]
fn uf2_flags_that_cannot_work_are_named() {
    let err = usage_error(&["flash", "--uf2", "/tmp/x.uf2"]);
    assert!(
        err.contains("the nucleo-f411re has no UF2 boot loader") && err.contains("--board rp2040-pico"),
        "{err}"
    );
    let err =
        usage_error(&["flash", "--board", "rp2040-pico", "--uf2", "/tmp/x.uf2", "--probe", "2e8a:000c"]);
    assert!(err.contains("--uf2") && err.contains("--probe"), "clap names the conflict: {err}");
    let pico = fw::pico_elf().to_str().unwrap();
    let err =
        usage_error(&["flash", "--board", "rp2040-pico", "--elf", pico, "--uf2", "/nonexistent/dir/x.uf2"]);
    assert!(err.contains("--uf2 /nonexistent/dir/x.uf2: cannot write it"), "{err}");
}

#[cfg(feature = "probe-rs")]
#[test]
fn the_right_elf_gets_as_far_as_the_probe_and_says_how_to_wire_one() {
    if !probe_rs::probe::list::Lister::new().list_all().is_empty() {
        eprintln!("skipped: a debug probe is attached to this machine");
        return;
    }
    let pico = fw::pico_elf().to_str().unwrap();
    let err = usage_error(&["flash", "--board", "rp2040-pico", "--elf", pico]);
    assert!(
        err.contains("no debug probe found") && err.contains("CMSIS-DAP") && err.contains("SWD"),
        "{err}"
    );
}
