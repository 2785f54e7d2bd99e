//! `latprobe list` against fake sysfs and /dev trees laid out as Linux lays
//! them out: a Nucleo's ST-LINK virtual COM port (USB interface 2 of
//! 0483:374b), an FTDI cable, a legacy 8250 placeholder and a virtual tty.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{text}\n")).unwrap();
}

/// A USB serial device: `usb` is its device directory name (1-2), `intf`
/// its interface (1-2:1.2), `tty` its node.
fn usb_tty(sys: &Path, usb: &str, ids: (&str, &str), serial: &str, product: &str, intf: &str, tty: &str) {
    let dev = sys.join("devices/pci0000:00/0000:00:14.0/usb1").join(usb);
    write(&dev.join("idVendor"), ids.0);
    write(&dev.join("idProduct"), ids.1);
    write(&dev.join("serial"), serial);
    write(&dev.join("product"), product);
    write(&dev.join("manufacturer"), "Maker");
    let i = dev.join(intf);
    write(&i.join("bInterfaceNumber"), &format!("0{}", &intf[intf.len() - 1..]));
    std::fs::create_dir_all(i.join("tty").join(tty)).unwrap();
    let class = sys.join("class/tty").join(tty);
    std::fs::create_dir_all(&class).unwrap();
    symlink(&i, class.join("device")).unwrap();
}

fn fake_tree() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let (sys, dev) = (d.path().join("sys"), d.path().join("dev"));
    usb_tty(&sys, "1-2", ("0483", "374b"), "066DFF555550", "STM32 STLink", "1-2:1.2", "ttyACM0");
    usb_tty(&sys, "1-3", ("0403", "6001"), "A10KXYZ", "FT232R USB UART", "1-3:1.0", "ttyUSB0");
    // ttyS0: the 8250 driver's placeholder, no hardware behind it.
    let plat = sys.join("devices/platform/serial8250");
    std::fs::create_dir_all(plat.join("tty/ttyS0")).unwrap();
    std::fs::create_dir_all(sys.join("class/tty/ttyS0")).unwrap();
    symlink(&plat, sys.join("class/tty/ttyS0/device")).unwrap();
    // tty0: a virtual console, no device at all.
    std::fs::create_dir_all(sys.join("class/tty/tty0")).unwrap();
    let by_id = dev.join("serial/by-id");
    std::fs::create_dir_all(&by_id).unwrap();
    symlink("../../ttyACM0", by_id.join("usb-STMicroelectronics_STM32_STLink_066DFF555550-if02")).unwrap();
    symlink("../../ttyUSB0", by_id.join("usb-FTDI_FT232R_USB_UART_A10KXYZ-if00-port0")).unwrap();
    d
}

fn list(root: &Path, json: bool) -> String {
    let mut args = vec![
        "list".to_string(),
        "--sys-root".into(),
        root.join("sys").display().to_string(),
        "--dev-root".into(),
        root.join("dev").display().to_string(),
        "--no-debug-probes".into(),
    ];
    if json {
        args.push("--json".into());
    }
    let out = Command::new(env!("CARGO_BIN_EXE_latprobe")).args(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn serial_ports_come_with_their_usb_details_and_the_nucleo_is_flagged() {
    let d = fake_tree();
    let v: Value = serde_json::from_str(&list(d.path(), true)).unwrap();
    let ports = v["serial_ports"].as_array().unwrap();
    let paths: Vec<&str> = ports.iter().map(|p| p["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["/dev/ttyACM0", "/dev/ttyUSB0"], "no 8250 placeholder, no virtual console");
    let acm = &ports[0];
    assert_eq!((acm["vid"].as_u64(), acm["pid"].as_u64()), (Some(0x0483), Some(0x374b)));
    assert_eq!(acm["serial"], "066DFF555550");
    assert_eq!(acm["product"], "STM32 STLink");
    assert_eq!(acm["interface"], 2);
    assert!(acm["by_id"]
        .as_str()
        .unwrap()
        .ends_with("/dev/serial/by-id/usb-STMicroelectronics_STM32_STLink_066DFF555550-if02"));
    assert!(acm["latprobe"].as_str().unwrap().contains("ST-LINK/V2-1 virtual COM port"), "{acm}");
    let ftdi = &ports[1];
    assert_eq!(ftdi["serial"], "A10KXYZ");
    assert!(ftdi["latprobe"].is_null(), "an FTDI cable is no latprobe board");
    // The slim build (no probe-rs) says why it lists no debug probe.
    assert!(v["debug_probes_note"].as_str().unwrap().starts_with("not listed"), "{v}");
}

#[test]
fn the_table_marks_the_board() {
    let d = fake_tree();
    let text = list(d.path(), false);
    let acm = text.lines().find(|l| l.contains("/dev/ttyACM0")).unwrap();
    assert!(acm.starts_with('*') && acm.contains("0483:374b") && acm.contains("066DFF555550"), "{text}");
    assert!(acm.contains("usb-STMicroelectronics_STM32_STLink_066DFF555550-if02"), "{text}");
    let ftdi = text.lines().find(|l| l.contains("/dev/ttyUSB0")).unwrap();
    assert!(ftdi.starts_with(' '), "{text}");
}

#[test]
fn an_empty_machine_lists_nothing_and_says_so() {
    let d = tempfile::tempdir().unwrap();
    let text = list(d.path(), false);
    assert!(text.starts_with("serial ports\n  (none)\n"), "{text}");
}

/// A Pico running latprobe firmware (its own CDC port), a Raspberry Pi
/// Debug Probe (CMSIS-DAP and its UART bridge), a Pico in BOOTSEL mode (no
/// tty: a USB device only), and another V-USB CDC device on the shared
/// 16c0:27dd that is no latprobe board.
fn pico_tree() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let (sys, dev) = (d.path().join("sys"), d.path().join("dev"));
    usb_tty(
        &sys,
        "1-5",
        ("16c0", "27dd"),
        "rp2040-pico",
        "latprobe probe (rp2040-pico)",
        "1-5:1.0",
        "ttyACM0",
    );
    usb_tty(
        &sys,
        "1-6",
        ("2e8a", "000c"),
        "E6614C311B7A5F2E",
        "Debugprobe on Pico (CMSIS-DAP)",
        "1-6:1.1",
        "ttyACM1",
    );
    usb_tty(&sys, "1-7", ("16c0", "27dd"), "0001", "USBasp serial", "1-7:1.0", "ttyACM2");
    let boot = sys.join("devices/pci0000:00/0000:00:14.0/usb1/1-4");
    write(&boot.join("idVendor"), "2e8a");
    write(&boot.join("idProduct"), "0003");
    write(&boot.join("product"), "RP2 Boot");
    std::fs::create_dir_all(boot.join("1-4:1.0")).unwrap();
    let bus = sys.join("bus/usb/devices");
    std::fs::create_dir_all(&bus).unwrap();
    symlink(&boot, bus.join("1-4")).unwrap();
    symlink(boot.join("1-4:1.0"), bus.join("1-4:1.0")).unwrap();
    symlink(sys.join("devices/pci0000:00/0000:00:14.0/usb1/1-6"), bus.join("1-6")).unwrap();
    let by_id = dev.join("serial/by-id");
    std::fs::create_dir_all(&by_id).unwrap();
    symlink("../../ttyACM0", by_id.join("usb-latprobe_latprobe_probe__rp2040-pico__rp2040-pico-if00"))
        .unwrap();
    d
}

#[test]
fn a_pico_its_debug_probe_and_bootsel_are_flagged_with_what_to_do() {
    let d = pico_tree();
    let v: Value = serde_json::from_str(&list(d.path(), true)).unwrap();
    let ports = v["serial_ports"].as_array().unwrap();
    let why = |path: &str| ports.iter().find(|p| p["path"] == path).unwrap()["latprobe"].clone();
    let pico = why("/dev/ttyACM0");
    assert!(
        pico.as_str().unwrap().contains("latprobe firmware (rp2040-pico)")
            && pico.as_str().unwrap().contains("--port /dev/ttyACM0"),
        "{pico}"
    );
    let bridge = why("/dev/ttyACM1");
    assert!(
        bridge.as_str().unwrap().contains("UART0") && bridge.as_str().unwrap().contains("GP0/GP1"),
        "{bridge}"
    );
    assert!(why("/dev/ttyACM2").is_null(), "16c0:27dd with another product string is not latprobe's");
    let boot = v["boot_loaders"].as_array().unwrap();
    assert_eq!(boot.len(), 1, "one BOOTSEL Pico; the interface and the debug probe are none: {boot:?}");
    assert_eq!(
        (boot[0]["usb"].as_str(), boot[0]["vid"].as_u64(), boot[0]["pid"].as_u64()),
        (Some("1-4"), Some(0x2e8a), Some(3))
    );
    let hint = boot[0]["latprobe"].as_str().unwrap();
    assert!(hint.contains("--uf2") && hint.contains("picotool load"), "{hint}");

    let text = list(d.path(), false);
    let line = |needle: &str| {
        text.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle}: {text}"))
    };
    assert!(line("/dev/ttyACM0").starts_with('*') && line("/dev/ttyACM0").contains("16c0:27dd"), "{text}");
    assert!(line("/dev/ttyACM1").starts_with('*'), "{text}");
    assert!(line("/dev/ttyACM2").starts_with(' '), "{text}");
    assert!(text.contains("boot loaders\n* usb 1-4 "), "{text}");
    assert!(line("usb 1-4").contains("2e8a:0003") && line("usb 1-4").contains("RP2 Boot"), "{text}");
    assert!(text.contains("RP2040 in BOOTSEL mode"), "{text}");
    assert!(text.lines().last().unwrap().starts_with("* looks like a latprobe board"), "{text}");
}

#[test]
fn no_boot_loader_section_without_one() {
    let d = fake_tree();
    let text = list(d.path(), false);
    assert!(!text.contains("boot loaders"), "{text}");
    let v: Value = serde_json::from_str(&list(d.path(), true)).unwrap();
    assert_eq!(v["boot_loaders"], serde_json::json!([]));
}
