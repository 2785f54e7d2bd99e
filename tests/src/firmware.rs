//! Building what the end-to-end tests run: a board's firmware ELF (with
//! `cargo fw-qemu`'s or `cargo fw-nucleo`'s arguments) and host binaries,
//! into the target directory the test itself was built in, once per test
//! process and board.
//!
//! Std only and free of this crate's other modules: the host's tests,
//! which cannot depend on this crate (it depends on theirs), include this
//! file with `#[path = "../../../tests/src/firmware.rs"]`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::Mutex;

/// The workspace root (every crate's manifest is one level below it).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the crate is in the workspace").to_path_buf()
}

/// The target directory this test binary was built in (`CARGO_TARGET_DIR`
/// or the workspace's `target/`), so the nested builds share it.
pub fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        let dir = PathBuf::from(dir);
        return if dir.is_absolute() { dir } else { root().join(dir) };
    }
    // <target>/debug/deps/<test>-<hash>
    let exe = std::env::current_exe().expect("test binary path");
    exe.ancestors().nth(3).expect("test binary under <target>/<profile>/deps").to_path_buf()
}

/// `cargo build ARGS` in the workspace, into [`target_dir`]; fails the
/// test, naming the arguments, if it fails.
pub fn cargo_build(args: &[&str]) {
    let status = cargo(args);
    assert!(status.success(), "cargo build {args:?} failed: {status}");
}

fn cargo(args: &[&str]) -> ExitStatus {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    Command::new(cargo)
        .current_dir(root())
        .env("CARGO_TARGET_DIR", target_dir())
        .arg("build")
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo build {args:?}: {e}"))
}

/// Build (if needed) and return the ELF of `board` (`qemu` or
/// `nucleo-f411re`): feature `board-BOARD`, binary `BOARD`, profile
/// `firmware`. Built once per test process and board.
pub fn elf(board: &str) -> PathBuf {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, p)) = built.iter().find(|(b, _)| b == board) {
        return p.clone();
    }
    let feature = format!("board-{board}");
    let status = cargo(&[
        "-q",
        "-p",
        "latprobe-firmware",
        "--target",
        "thumbv7em-none-eabihf",
        "--profile",
        "firmware",
        "--features",
        &feature,
        "--bin",
        board,
    ]);
    assert!(
        status.success(),
        "building the {board} firmware failed: {status} (needs `rustup target add thumbv7em-none-eabihf`)"
    );
    let p = target_dir().join("thumbv7em-none-eabihf/firmware").join(board);
    assert!(p.is_file(), "{} was not built", p.display());
    built.push((board.to_string(), p.clone()));
    p
}
