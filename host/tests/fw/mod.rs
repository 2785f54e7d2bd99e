//! The Nucleo firmware ELF for the host's tests, built once per test
//! process with `cargo fw-nucleo`'s arguments into the workspace's target
//! directory (`bash scripts/test` has built it already by then).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("host/ is in the workspace").to_path_buf()
}

/// Build (if needed) and return the path of the nucleo-f411re ELF.
pub fn nucleo_elf() -> &'static Path {
    static ELF: OnceLock<PathBuf> = OnceLock::new();
    ELF.get_or_init(|| {
        let root = root();
        let target_dir =
            std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .current_dir(&root)
            .env("CARGO_TARGET_DIR", &target_dir)
            .args([
                "build",
                "-q",
                "-p",
                "latprobe-firmware",
                "--target",
                "thumbv7em-none-eabihf",
                "--profile",
                "firmware",
                "--features",
                "board-nucleo-f411re",
                "--bin",
                "nucleo-f411re",
            ])
            .status()
            .expect("run cargo to build the nucleo firmware");
        assert!(
            status.success(),
            "building the nucleo-f411re firmware failed (needs `rustup target add thumbv7em-none-eabihf`)"
        );
        target_dir.join("thumbv7em-none-eabihf/firmware/nucleo-f411re")
    })
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
