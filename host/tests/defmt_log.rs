//! The probe's defmt log decoded against the firmware ELF this test builds:
//! log frames are recorded the way the firmware's logger writes them (the
//! interned string's index from the ELF, the arguments, rzcobs, as defmt's
//! own encoder does), then decoded by latprobe's decoder, including across
//! bytes lost while the host was not reading, and carried through the RTT
//! link into the report's warnings.
#![cfg(feature = "probe-rs")]

mod fw;

use latprobe::defmtlog::DefmtLog;
use latprobe::source::rtt::LogSink;
use latprobe_protocol::LogLevel;
use object::{Object as _, ObjectSymbol as _};

/// The index of the defmt string `data` at `level` in the ELF.
fn index(elf: &[u8], level: &str, data: &str) -> u16 {
    let file = object::File::parse(elf).unwrap();
    let tag = format!("\"tag\":\"defmt_{level}\"");
    let data = format!("\"data\":{}", serde_json::to_string(data).unwrap());
    let sym = file
        .symbols()
        .find(|s| s.name().is_ok_and(|n| n.contains(&tag) && n.contains(&data)))
        .unwrap_or_else(|| panic!("no defmt {level} string {data} in the ELF"));
    u16::try_from(sym.address()).unwrap()
}

/// defmt's rzcobs encoder (defmt 1.x, src/encoding/rzcobs.rs), as the
/// firmware runs it: a 0x00 before the first frame, then each frame
/// followed by 0x00.
#[derive(Default)]
struct Rzcobs {
    run: u8,
    zeros: u8,
    started: bool,
    out: Vec<u8>,
}

impl Rzcobs {
    fn frame(&mut self, data: &[u8]) {
        if !self.started {
            self.started = true;
            self.out.push(0);
        }
        for &byte in data {
            if self.run < 7 {
                if byte == 0 {
                    self.zeros |= 1 << self.run;
                } else {
                    self.out.push(byte);
                }
                self.run += 1;
                if self.run == 7 && self.zeros != 0 {
                    self.out.push(self.zeros);
                    self.run = 0;
                    self.zeros = 0;
                }
            } else if byte == 0 {
                self.out.push((self.run - 7) | 0x80);
                self.run = 0;
                self.zeros = 0;
            } else {
                self.out.push(byte);
                self.run += 1;
                if self.run == 134 {
                    self.out.push(0xFF);
                    self.run = 0;
                    self.zeros = 0;
                }
            }
        }
        match self.run {
            0 => {}
            1..=6 => self.out.push((self.zeros | (0xFF << self.run)) & 0x7F),
            _ => self.out.push((self.run - 7) | 0x80),
        }
        self.out.push(0);
        self.run = 0;
        self.zeros = 0;
    }
}

const CLOCKS: &str = "clocks: sysclk {=u32} Hz, TIM2 {=u32} Hz, VOS Scale 1 ready: {=bool}";
const PB10: &str = "no start-bit capture of the stimulus byte (wire PA9 to PB10): software stimulus ticks";

/// A recorded log: the boot's clock line, then the PB10 warning, `n` times.
fn recorded(elf: &[u8], n: usize) -> Vec<u8> {
    let (clocks, warn) = (index(elf, "info", CLOCKS), index(elf, "warn", PB10));
    let mut enc = Rzcobs::default();
    for i in 0..n {
        let mut f = clocks.to_le_bytes().to_vec();
        f.extend(100_000_000u32.to_le_bytes());
        f.extend((100_000_000u32 + i as u32).to_le_bytes());
        f.push(1);
        enc.frame(&f);
        enc.frame(&warn.to_le_bytes());
    }
    enc.out
}

fn decoder(verbose: bool) -> (DefmtLog, Vec<u8>) {
    let path = fw::nucleo_elf();
    let elf = std::fs::read(path).unwrap();
    (DefmtLog::new(&elf, path, verbose).unwrap(), elf)
}

#[test]
fn recorded_frames_decode_against_the_built_firmware() {
    let (mut log, elf) = decoder(false);
    let bytes = recorded(&elf, 3);
    // In pieces of 5 bytes: frames split across reads.
    let lines: Vec<_> = bytes.chunks(5).flat_map(|c| log.decode(c)).collect();
    assert_eq!(lines.len(), 6, "{lines:?}");
    assert_eq!(lines[0].level, "info");
    assert_eq!(lines[0].text, "clocks: sysclk 100000000 Hz, TIM2 100000000 Hz, VOS Scale 1 ready: true");
    assert_eq!(lines[2].text, "clocks: sysclk 100000000 Hz, TIM2 100000001 Hz, VOS Scale 1 ready: true");
    assert_eq!(lines[1].level, "warn");
    assert_eq!(lines[1].text, PB10);
    assert_eq!(lines[1].kept_level(), Some(LogLevel::Warn));
    assert_eq!(lines[0].kept_level(), None);
    assert_eq!(log.malformed(), 0);
}

#[test]
fn bytes_lost_mid_frame_cost_that_frame_only() {
    let (mut log, elf) = decoder(false);
    let mut bytes = recorded(&elf, 4);
    // Cut 6 bytes out of the third frame (the second clock line).
    let starts: Vec<usize> = bytes.iter().enumerate().filter(|(_, &b)| b == 0).map(|(i, _)| i).collect();
    let cut = starts[2] + 3;
    bytes.drain(cut..cut + 6);
    let lines = log.decode(&bytes);
    let clocks = lines.iter().filter(|l| l.text.starts_with("clocks:")).count();
    let warns = lines.iter().filter(|l| l.level == "warn").count();
    assert_eq!((clocks, warns), (3, 4), "{lines:?}");
    assert_eq!(log.malformed(), 1);
}

#[test]
fn warnings_are_kept_and_info_is_not() {
    let (mut log, elf) = decoder(false);
    let mut keep = Vec::new();
    log.feed(&recorded(&elf, 2), &mut keep);
    assert_eq!(keep, vec![(LogLevel::Warn, PB10.to_string()), (LogLevel::Warn, PB10.to_string())]);
}

#[test]
fn an_elf_without_a_defmt_table_is_named() {
    let host_bin = std::path::Path::new(env!("CARGO_BIN_EXE_latprobe"));
    let e = DefmtLog::new(&std::fs::read(host_bin).unwrap(), host_bin, false).unwrap_err().to_string();
    assert!(e.contains("no defmt table") || e.contains("defmt table"), "{e}");
}
