//! Puts the enabled board's `memory.x` where cortex-m-rt's `link.x` finds it.
//!
//! Each board has its own file under `memory/`; the board feature picks it.
//! Without a board feature (the engine on the host, or the lib alone for the
//! probe target) nothing is emitted: nothing is linked for the probe then.

use std::{env, fs, path::PathBuf};

const BOARDS: &[(&str, &str)] = &[
    ("CARGO_FEATURE_BOARD_NUCLEO_F411RE", "memory/nucleo-f411re.x"),
    ("CARGO_FEATURE_BOARD_QEMU", "memory/qemu.x"),
    ("CARGO_FEATURE_BOARD_RP2040_PICO", "memory/rp2040-pico.x"),
];

fn main() {
    for (_, file) in BOARDS {
        println!("cargo:rerun-if-changed={file}");
    }
    let enabled: Vec<&str> =
        BOARDS.iter().filter(|(f, _)| env::var_os(f).is_some()).map(|(_, file)| *file).collect();
    let file = match enabled.as_slice() {
        [] => return,
        [one] => *one,
        _ => panic!("enable at most one board-* feature of latprobe-firmware, not {enabled:?}"),
    };
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::copy(file, out.join("memory.x")).unwrap_or_else(|e| panic!("copy {file} to OUT_DIR: {e}"));
    println!("cargo:rustc-link-search={}", out.display());
}
