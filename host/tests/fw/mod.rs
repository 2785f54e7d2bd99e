//! The Nucleo firmware ELF for the host's tests, built once per test
//! process with `cargo fw-nucleo`'s arguments into the target directory
//! (`bash scripts/test` has built it already by then). The build is the
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

/// A copy of the ELF in `dir` with `patch` applied to the 64 bytes of its
/// LATPROBE_BUILD record.
pub fn patched(dir: &Path, name: &str, patch: impl FnOnce(&mut [u8])) -> PathBuf {
    let mut bytes = std::fs::read(nucleo_elf()).unwrap();
    let at = bytes.windows(9).position(|w| w == b"LATPROBE\x01").expect("LATPROBE_BUILD in the ELF");
    patch(&mut bytes[at..at + 64]);
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}
