//! The Nucleo and Pico firmware ELFs for the host's tests, built once per
//! test process with `cargo fw-nucleo`'s and `cargo fw-pico`'s arguments
//! into the target directory (`bash scripts/test` has built them already
//! by then). The build is the
//! end-to-end tests' (`tests/src/firmware.rs`), shared by path: `latprobe`
//! cannot dev-depend on `latprobe-tests`, which depends on it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

#[path = "../../../tests/src/firmware.rs"]
mod firmware;

/// Build (if needed) and return the path of the nucleo-f411re ELF.
pub fn nucleo_elf() -> &'static Path {
    static ELF: OnceLock<PathBuf> = OnceLock::new();
    ELF.get_or_init(|| firmware::elf("nucleo-f411re"))
}

/// Build (if needed) and return the path of the rp2040-pico ELF.
pub fn pico_elf() -> &'static Path {
    static ELF: OnceLock<PathBuf> = OnceLock::new();
    ELF.get_or_init(|| {
        firmware::cargo_build(&[
            "-q",
            "-p",
            "latprobe-firmware",
            "--target",
            "thumbv6m-none-eabi",
            "--profile",
            "firmware",
            "--features",
            "board-rp2040-pico",
            "--bin",
            "rp2040-pico",
        ]);
        let p = firmware::target_dir().join("thumbv6m-none-eabi/firmware/rp2040-pico");
        assert!(p.is_file(), "{} was not built (needs `rustup target add thumbv6m-none-eabi`)", p.display());
        p
    })
}

/// A copy of the Nucleo ELF in `dir` with `patch` applied to the 64 bytes
/// of its LATPROBE_BUILD record.
pub fn patched(dir: &Path, name: &str, patch: impl FnOnce(&mut [u8])) -> PathBuf {
    patched_from(nucleo_elf(), dir, name, patch)
}

/// A copy of `elf` in `dir` with `patch` applied to the 64 bytes of its
/// LATPROBE_BUILD record.
pub fn patched_from(elf: &Path, dir: &Path, name: &str, patch: impl FnOnce(&mut [u8])) -> PathBuf {
    let mut bytes = std::fs::read(elf).unwrap();
    let at = bytes.windows(9).position(|w| w == b"LATPROBE\x01").expect("LATPROBE_BUILD in the ELF");
    patch(&mut bytes[at..at + 64]);
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}
