//! An unpacked release bundle (`scripts/dist`) is found from wherever it
//! was unpacked: `bin/latprobe flash` takes the firmware from the bundle's
//! `lib/latprobe/firmware/` before any workspace build. (`scripts/dist`
//! itself flashes a UF2 and runs the demo from a real bundle.)

mod common;

use std::process::Command;

use common::*;

#[test]
fn flash_takes_the_firmware_from_the_bundle_around_the_binary() {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let bundle = dir.path().join("latprobe-0.0.0-test");
    let firmware = bundle.join("lib/latprobe/firmware");
    std::fs::create_dir_all(bundle.join("bin")).unwrap();
    std::fs::create_dir_all(&firmware).unwrap();
    let exe = bundle.join("bin/latprobe");
    std::fs::copy(env!("CARGO_BIN_EXE_latprobe"), &exe).expect("copy latprobe into the bundle");
    // Not an ELF: the error names the file flash picked, so the test sees
    // which one it was without a firmware build.
    std::fs::write(firmware.join("rp2040-pico"), b"not an ELF").unwrap();
    let o = Command::new(&exe)
        .args(["flash", "--board", "rp2040-pico", "--uf2", "out.uf2"])
        .current_dir(dir.path())
        .env_remove("LATPROBE_FIRMWARE_DIR")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("run the bundle's latprobe");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        err.contains(&firmware.join("rp2040-pico").display().to_string()),
        "flash did not take the bundle's firmware: {}",
        show(&o)
    );
    assert!(!dir.path().join("out.uf2").exists(), "a UF2 was written from a bad ELF");
}
