//! `latprobe flash` and `run --flash`/`--link rtt` on a machine with no
//! debug probe: a wrong ELF is refused before any probe is touched (its
//! message never mentions a probe), a right one gets as far as looking for
//! the probe, and every bench error that needs no hardware reads as the
//! README promises.
#![cfg(feature = "probe-rs")]

mod fw;

use std::path::Path;
use std::process::{Command, Output};

fn latprobe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_latprobe")).args(args).output().expect("run latprobe")
}

/// Exit 2 and the one `Error:` line.
fn usage_error(args: &[&str]) -> String {
    let out = latprobe(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains("Error: "), "{err}");
    err
}

fn refused(elf: &Path, why: &str) {
    let path = elf.to_str().unwrap();
    for args in [
        &["flash", "--elf", path][..],
        &["run", "--flash", "--elf", path, "--port", "/dev/null", "--count", "10"][..],
    ] {
        let err = usage_error(args);
        assert!(err.contains("refusing to flash") && err.contains(why), "{args:?}: {err}");
        assert!(err.contains("cargo fw-nucleo"), "the message gives the build command: {err}");
        // Refused before any probe was looked for.
        assert!(!err.contains("debug probe"), "{args:?} touched a probe: {err}");
    }
}

#[test]
fn a_wrong_elf_is_refused_before_any_probe_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not an ELF").unwrap();
    refused(&text, "not a 32-bit ELF");
    // A host program: an ELF, but not a probe's.
    refused(Path::new(env!("CARGO_BIN_EXE_latprobe")), "not a 32-bit ELF");
    let other_board = fw::patched(dir.path(), "other-board", |b| b[12..25].copy_from_slice(b"blackpill-f41"));
    refused(&other_board, "built for the board blackpill-f41, not nucleo-f411re");
    let other_proto = fw::patched(dir.path(), "other-proto", |b| b[9] = b[9].wrapping_add(1));
    refused(&other_proto, "speaks protocol version");
    let not_ours = fw::patched(dir.path(), "not-ours", |b| b[..8].copy_from_slice(b"NOTLATPR"));
    refused(&not_ours, "not latprobe probe firmware");
}

#[test]
fn the_right_elf_gets_as_far_as_the_probe_and_no_probe_is_named() {
    let elf = fw::nucleo_elf().to_str().unwrap();
    if probe_attached() {
        eprintln!("skipped: a debug probe is attached to this machine");
        return;
    }
    let err = usage_error(&["flash", "--elf", elf]);
    assert!(err.contains("no debug probe found") && err.contains("latprobe list"), "{err}");
    let err = usage_error(&["flash", "--elf", elf, "--probe", "0483:374b:NOSUCH"]);
    assert!(err.contains("no debug probe matches --probe 0483:374b:NOSUCH"), "{err}");
    let err = usage_error(&["run", "--link", "rtt", "--count", "10"]);
    assert!(err.contains("no debug probe found"), "{err}");
}

#[test]
fn link_flags_that_cannot_work_are_named() {
    let err = usage_error(&["run", "--count", "10"]);
    assert!(err.contains("--port") && err.contains("--link rtt"), "{err}");
    let err = usage_error(&["run", "--link", "rtt", "--port", "/dev/ttyACM0", "--count", "10"]);
    assert!(err.contains("drop --port"), "{err}");
    let err = usage_error(&["flash", "--elf", "/nonexistent/fw"]);
    assert!(err.contains("--elf /nonexistent/fw: no such file"), "{err}");
    let err = usage_error(&["flash", "--board", "qemu"]);
    assert!(err.contains("nucleo-f411re"), "{err}");
    let err = usage_error(&["flash", "--probe", "stlink"]);
    assert!(err.contains("VID:PID"), "{err}");
}

fn probe_attached() -> bool {
    !probe_rs::probe::list::Lister::new().list_all().is_empty()
}

mod messages {
    use latprobe::probe::debug::{choose, classify, open_error, OpenFailure};
    use latprobe::probe::{board, parse_selector};
    use probe_rs::probe::{DebugProbeError, ProbeCreationError};

    type Item = (u16, u16, Option<&'static str>);
    fn ids(i: &Item) -> (u16, u16, Option<&str>, String) {
        (i.0, i.1, i.2, format!("ST-Link V2-1 ({:04x}:{:04x}:{})", i.0, i.1, i.2.unwrap_or("")))
    }

    #[test]
    fn several_probes_and_none_chosen_lists_them() {
        let two: Vec<Item> = vec![(0x0483, 0x374b, Some("AAA")), (0x0483, 0x374b, Some("BBB"))];
        let e = choose(&two, None, "plug it in", ids).unwrap_err().to_string();
        assert!(e.contains("2 debug probes are attached and none is chosen"), "{e}");
        assert!(
            e.contains("--probe VID:PID:SERIAL")
                && e.contains("0483:374b:AAA")
                && e.contains("0483:374b:BBB"),
            "{e}"
        );
        let sel = parse_selector("0483:374b").unwrap();
        let e = choose(&two, Some(&sel), "plug it in", ids).unwrap_err().to_string();
        assert!(e.contains("--probe 0483:374b matches them all"), "{e}");
        let sel = parse_selector("0483:374b:BBB").unwrap();
        assert_eq!(choose(&two, Some(&sel), "plug it in", ids).unwrap().2, Some("BBB"));
        let none: Vec<Item> = Vec::new();
        let e = choose(&none, None, "plug it in", ids).unwrap_err().to_string();
        assert!(e.contains("no debug probe found: plug it in;"), "{e}");
    }

    #[test]
    fn permission_and_busy_name_their_fix() {
        let perm = DebugProbeError::ProbeCouldNotBeCreated(ProbeCreationError::Usb(std::io::Error::from(
            std::io::ErrorKind::PermissionDenied,
        )));
        assert_eq!(classify(&perm), OpenFailure::Permission);
        let e = open_error("ST-Link V2-1 (0483:374b)", &perm).to_string();
        assert!(e.contains("udev rule") && e.contains("70-latprobe-stlink.rules"), "{e}");
        let busy = DebugProbeError::Usb(std::io::Error::from(std::io::ErrorKind::ResourceBusy));
        assert_eq!(classify(&busy), OpenFailure::Busy);
        let e = open_error("ST-Link V2-1 (0483:374b)", &busy).to_string();
        assert!(e.contains("is busy") && e.contains("close it"), "{e}");
    }

    #[test]
    fn a_wrong_chip_is_named_with_its_id() {
        let b = board("nucleo-f411re").unwrap();
        b.chip_id.check(b, 0x1000_6431).unwrap();
        let e = b.chip_id.check(b, 0x1000_7413).unwrap_err().to_string();
        assert!(e.contains("wrong chip") && e.contains("0x413") && e.contains("--probe"), "{e}");
        let p = board("rp2040-pico").unwrap();
        p.chip_id.check(p, 0x1000_2927).unwrap();
        let e = p.chip_id.check(p, 0x1000_6431).unwrap_err().to_string();
        assert!(e.contains("wrong chip") && e.contains("SYSINFO CHIP_ID is 0x10006431"), "{e}");
    }
}

mod elf {
    use latprobe::probe::board;
    use latprobe::probe::elf::FirmwareElf;

    #[test]
    fn the_firmware_elf_says_what_it_is_and_where_rtt_lives() {
        let elf = FirmwareElf::load(super::fw::nucleo_elf(), board("nucleo-f411re").unwrap()).unwrap();
        assert_eq!(elf.info.board, "nucleo-f411re");
        assert_eq!(elf.info.protocol_version, latprobe_protocol::PROTOCOL_VERSION);
        let rtt = elf.rtt_addr.expect("_SEGGER_RTT in the ELF");
        assert!((0x2000_0000..0x2002_0000).contains(&rtt), "{rtt:#x}");
        assert_eq!(elf.image[0].0, 0x0800_0000, "the image starts at the flash");
        assert!(elf.image_len() > 16 * 1024 && elf.image_len() < 64 * 1024);
        assert_eq!(elf.image_crc(), elf.image_crc());
    }
}
