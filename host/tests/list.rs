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
