//! `latprobe list`: what is attached. Serial ports (read from sysfs, so no
//! libudev is needed) with their USB ids, serial number, product and
//! `/dev/serial/by-id` name, and the debug probes probe-rs finds. An
//! ST-LINK's virtual COM port and its debug probe share a USB serial number,
//! which pairs a port with its probe: that pair is a latprobe board. A
//! Pico running latprobe firmware is its own USB CDC port (16c0:27dd with
//! its product string); a CMSIS-DAP debug probe (2e8a:000c) flashes one,
//! and a Pico in BOOTSEL mode (2e8a:0003, read from the USB devices in
//! sysfs: it has no port) takes the UF2 file.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use crate::probe::{latprobe_cdc_board, pico_kind, stlink_kind, PicoKind};
use crate::Error;

/// `latprobe list` options.
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// Read serial ports from this sysfs instead of /sys (tests)
    #[arg(long, value_name = "DIR", default_value = "/sys", hide = true)]
    pub sys_root: PathBuf,
    /// Read /dev/serial/by-id under this directory instead of /dev (tests)
    #[arg(long, value_name = "DIR", default_value = "/dev", hide = true)]
    pub dev_root: PathBuf,
    /// Do not ask probe-rs for debug probes (tests)
    #[arg(long, hide = true)]
    pub no_debug_probes: bool,
}

/// One serial port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SerialPort {
    /// `/dev/ttyACM0`.
    pub path: String,
    /// USB vendor id, when it is a USB device.
    pub vid: Option<u16>,
    /// USB product id.
    pub pid: Option<u16>,
    /// USB serial number.
    pub serial: Option<String>,
    /// USB manufacturer string.
    pub manufacturer: Option<String>,
    /// USB product string.
    pub product: Option<String>,
    /// USB interface number (an ST-LINK/V2-1's VCP is interface 2).
    pub interface: Option<u8>,
    /// Its `/dev/serial/by-id/…` name.
    pub by_id: Option<String>,
    /// Why it looks like a latprobe board's link, if it does.
    pub latprobe: Option<String>,
}

/// One debug probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DebugProbe {
    /// probe-rs's name for it.
    pub identifier: String,
    /// USB vendor id.
    pub vid: u16,
    /// USB product id.
    pub pid: u16,
    /// USB serial number.
    pub serial: Option<String>,
    /// `--probe` for it.
    pub selector: String,
    /// Whether this user may open it (else: the udev rule).
    pub accessible: bool,
    /// Why it looks like a latprobe board's probe, if it does.
    pub latprobe: Option<String>,
}

/// A boot ROM's USB device (a Pico in BOOTSEL mode): no port, no debug
/// probe, but it takes a UF2 file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BootLoader {
    /// Its sysfs name (`1-4`: bus 1, port 4).
    pub usb: String,
    /// USB vendor id.
    pub vid: u16,
    /// USB product id.
    pub pid: u16,
    /// USB product string.
    pub product: Option<String>,
    /// What to do with it.
    pub latprobe: String,
}

/// What `list` found.
#[derive(Debug, Clone, Serialize)]
pub struct Listing {
    /// Serial ports.
    pub serial_ports: Vec<SerialPort>,
    /// Boot loaders waiting for a UF2 file (a Pico in BOOTSEL mode).
    pub boot_loaders: Vec<BootLoader>,
    /// Debug probes (empty when not listed).
    pub debug_probes: Vec<DebugProbe>,
    /// Why debug probes were not listed, if they were not.
    pub debug_probes_note: Option<String>,
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

fn hex_file(p: &Path) -> Option<u16> {
    read_trim(p).and_then(|s| u16::from_str_radix(&s, 16).ok())
}

/// The serial ports under `sys/class/tty`, with USB details from the USB
/// device above each, and by-id names from `dev/serial/by-id`. A tty with
/// no device, or a legacy 8250 placeholder (ttyS0…31 with nothing behind
/// them), is no port.
pub fn serial_ports(sys: &Path, dev: &Path) -> Vec<SerialPort> {
    let by_id = by_id_names(&dev.join("serial").join("by-id"));
    let Ok(entries) = std::fs::read_dir(sys.join("class").join("tty")) else { return Vec::new() };
    let mut ports = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let device_link = entry.path().join("device");
        let Ok(device) = std::fs::canonicalize(&device_link) else { continue };
        let driver = std::fs::canonicalize(device_link.join("driver"))
            .ok()
            .and_then(|d| d.file_name().map(|f| f.to_string_lossy().into_owned()));
        let is_8250 =
            device.file_name().is_some_and(|f| f == "serial8250") || driver.as_deref() == Some("serial8250");
        if is_8250 {
            continue;
        }
        let mut port = SerialPort {
            path: format!("/dev/{name}"),
            vid: None,
            pid: None,
            serial: None,
            manufacturer: None,
            product: None,
            interface: None,
            by_id: by_id.iter().find(|(_, target)| *target == name).map(|(link, _)| link.clone()),
            latprobe: None,
        };
        // The interface directory has bInterfaceNumber; the USB device
        // above it has idVendor.
        port.interface = device
            .ancestors()
            .find_map(|d| read_trim(&d.join("bInterfaceNumber")))
            .and_then(|s| u8::from_str_radix(&s, 16).ok());
        if let Some(usb) = device.ancestors().find(|d| d.join("idVendor").is_file()) {
            port.vid = hex_file(&usb.join("idVendor"));
            port.pid = hex_file(&usb.join("idProduct"));
            port.serial = read_trim(&usb.join("serial"));
            port.manufacturer = read_trim(&usb.join("manufacturer"));
            port.product = read_trim(&usb.join("product"));
        }
        if let (Some(vid), Some(pid)) = (port.vid, port.pid) {
            port.latprobe = port_kind(vid, pid, port.product.as_deref(), &port.path);
        }
        ports.push(port);
    }
    ports.sort_by(|a, b| a.path.cmp(&b.path));
    ports
}

/// Why a serial port with these USB ids looks like a latprobe board's link.
fn port_kind(vid: u16, pid: u16, product: Option<&str>, path: &str) -> Option<String> {
    if let Some(kind) = stlink_kind(vid, pid) {
        return Some(format!("{kind} virtual COM port: a Nucleo's host link"));
    }
    if let Some(b) = latprobe_cdc_board(vid, pid, product) {
        return Some(format!("latprobe firmware ({}): its host link (USB CDC), --port {path}", b.name));
    }
    (pico_kind(vid, pid) == Some(PicoKind::DebugProbe)).then(|| {
        "CMSIS-DAP debug probe's UART bridge: a Pico's UART0 host link when wired to GP0/GP1 \
         (--baud 921600); the Pico's own USB port needs no bridge"
            .to_string()
    })
}

/// What a debug probe with these USB ids is for, if latprobe uses it.
pub fn debug_probe_kind(vid: u16, pid: u16, selector: &str) -> Option<String> {
    if let Some(k) = stlink_kind(vid, pid) {
        return Some(format!("{k}: flashes a Nucleo (`latprobe flash --probe {selector}`)"));
    }
    (pico_kind(vid, pid) == Some(PicoKind::DebugProbe)).then(|| {
        format!(
            "CMSIS-DAP debug probe: flashes a Pico wired to its SWD pins \
             (`latprobe flash --board rp2040-pico --probe {selector}`)"
        )
    })
}

/// The USB devices under `sys/bus/usb/devices` that are a boot ROM waiting
/// for a UF2 file (interfaces, `1-4:1.0`, have no idVendor and are passed).
pub fn boot_loaders(sys: &Path) -> Vec<BootLoader> {
    let Ok(entries) = std::fs::read_dir(sys.join("bus").join("usb").join("devices")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let d = e.path();
        let (Some(vid), Some(pid)) = (hex_file(&d.join("idVendor")), hex_file(&d.join("idProduct"))) else {
            continue;
        };
        if pico_kind(vid, pid) == Some(PicoKind::Bootsel) {
            out.push(BootLoader {
                usb: e.file_name().to_string_lossy().into_owned(),
                vid,
                pid,
                product: read_trim(&d.join("product")),
                latprobe: "RP2040 in BOOTSEL mode: copy the firmware onto its RPI-RP2 drive with \
                           `latprobe flash --board rp2040-pico --uf2 /media/$USER/RPI-RP2`, or write \
                           `latprobe flash --board rp2040-pico --uf2 latprobe.uf2` and `picotool load -x \
                           latprobe.uf2`"
                    .to_string(),
            });
        }
    }
    out.sort_by(|a, b| a.usb.cmp(&b.usb));
    out
}

/// `(by-id path, tty name)` for every link in `dir`.
fn by_id_names(dir: &Path) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out = Vec::new();
    for e in entries.flatten() {
        if let Ok(target) = std::fs::read_link(e.path()) {
            if let Some(t) = target.file_name() {
                out.push((e.path().display().to_string(), t.to_string_lossy().into_owned()));
            }
        }
    }
    out
}

/// The debug probes probe-rs sees.
#[cfg(feature = "probe-rs")]
pub fn debug_probes() -> Vec<DebugProbe> {
    use probe_rs::probe::list::{Accessibility, Lister};
    Lister::new()
        .list_all_with_access()
        .into_iter()
        .map(|i| {
            let sel = crate::probe::Selector {
                vid: i.info.vendor_id,
                pid: i.info.product_id,
                serial: i.info.serial_number.clone(),
            };
            DebugProbe {
                identifier: i.info.identifier.clone(),
                vid: i.info.vendor_id,
                pid: i.info.product_id,
                serial: i.info.serial_number.clone(),
                selector: sel.to_string(),
                accessible: i.accessibility == Accessibility::Accessible,
                latprobe: debug_probe_kind(i.info.vendor_id, i.info.product_id, &sel.to_string()),
            }
        })
        .collect()
}

/// Pair each ST-LINK probe with the port of the same USB serial number.
fn pair(l: &mut Listing) {
    for p in &mut l.debug_probes {
        let Some(serial) = &p.serial else { continue };
        if let Some(port) = l.serial_ports.iter_mut().find(|s| s.serial.as_ref() == Some(serial)) {
            // A CMSIS-DAP probe's UART bridge is a host link only when
            // wired to the Pico's UART0: not paired.
            if p.latprobe.is_some() && stlink_kind(p.vid, p.pid).is_some() {
                port.latprobe = Some(format!(
                    "{}; its debug probe is --probe {}",
                    port.latprobe.as_deref().unwrap_or("a probe's port"),
                    p.selector
                ));
                p.latprobe = Some(format!(
                    "{}; its host link is --port {}",
                    p.latprobe.as_deref().unwrap_or(""),
                    port.path
                ));
            }
        }
    }
}

/// What is attached, under `sys` and `dev`; debug probes too unless told not.
pub fn listing(sys: &Path, dev: &Path, probes: bool) -> Listing {
    let serial_ports = serial_ports(sys, dev);
    #[cfg(feature = "probe-rs")]
    let (debug_probes, debug_probes_note) =
        if probes { (debug_probes(), None) } else { (Vec::new(), Some("not listed".to_string())) };
    #[cfg(not(feature = "probe-rs"))]
    let (debug_probes, debug_probes_note) = {
        let _ = probes;
        (Vec::new(), Some("not listed: this latprobe was built without probe-rs".to_string()))
    };
    let mut l = Listing { serial_ports, boot_loaders: boot_loaders(sys), debug_probes, debug_probes_note };
    pair(&mut l);
    l
}

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("-")
}

fn ids(vid: Option<u16>, pid: Option<u16>) -> String {
    match (vid, pid) {
        (Some(v), Some(p)) => format!("{v:04x}:{p:04x}"),
        _ => "-".into(),
    }
}

/// The table `list` prints.
pub fn render(l: &Listing) -> String {
    let mut out = String::from("serial ports\n");
    if l.serial_ports.is_empty() {
        out.push_str("  (none)\n");
    } else {
        out.push_str(&format!(
            "  {:<14} {:<10} {:<26} {:<24} {}\n",
            "PORT", "VID:PID", "SERIAL", "PRODUCT", "BY-ID"
        ));
    }
    for p in &l.serial_ports {
        out.push_str(&format!(
            "{} {:<14} {:<10} {:<26} {:<24} {}\n",
            if p.latprobe.is_some() { "*" } else { " " },
            p.path,
            ids(p.vid, p.pid),
            opt(&p.serial),
            opt(&p.product),
            p.by_id.as_deref().map_or("-", |b| b.rsplit('/').next().unwrap_or(b))
        ));
        if let Some(why) = &p.latprobe {
            out.push_str(&format!("    {why}\n"));
        }
    }
    // Only when there is one: a machine without a Pico in BOOTSEL mode
    // lists as it always did.
    if !l.boot_loaders.is_empty() {
        out.push_str("boot loaders\n");
    }
    for b in &l.boot_loaders {
        out.push_str(&format!(
            "* {:<14} {:<10} {}\n    {}\n",
            format!("usb {}", b.usb),
            format!("{:04x}:{:04x}", b.vid, b.pid),
            opt(&b.product),
            b.latprobe
        ));
    }
    out.push_str("debug probes\n");
    if let Some(note) = &l.debug_probes_note {
        out.push_str(&format!("  ({note})\n"));
    } else if l.debug_probes.is_empty() {
        out.push_str("  (none)\n");
    }
    for p in &l.debug_probes {
        out.push_str(&format!(
            "{} {:<30} {:<10} {}{}\n",
            if p.latprobe.is_some() { "*" } else { " " },
            p.identifier,
            format!("{:04x}:{:04x}", p.vid, p.pid),
            opt(&p.serial),
            if p.accessible { "" } else { "  (permission denied: see the README's udev rule)" }
        ));
        if let Some(why) = &p.latprobe {
            out.push_str(&format!("    {why}\n"));
        }
    }
    // The legend explains a mark: without one it would only puzzle.
    let marked = l.serial_ports.iter().any(|p| p.latprobe.is_some())
        || l.debug_probes.iter().any(|p| p.latprobe.is_some())
        || !l.boot_loaders.is_empty();
    if marked {
        out.push_str(
            "* looks like a latprobe board or its probe (an ST-LINK: Nucleo-F411RE; latprobe's USB port, \
             a CMSIS-DAP probe or BOOTSEL: Raspberry Pi Pico)\n",
        );
    }
    out
}

/// Run `latprobe list`.
pub fn run(args: ListArgs) -> Result<(), crate::Error> {
    let l = listing(&args.sys_root, &args.dev_root, !args.no_debug_probes);
    if args.json {
        let text =
            serde_json::to_string_pretty(&l).map_err(|e| Error::Bug(format!("cannot print JSON: {e}")))?;
        crate::stdout!("{text}\n");
    } else {
        // Serial numbers and product names are what the USB devices say.
        crate::stdout!("{}", crate::out::clean_lines(&render(&l)));
    }
    Ok(())
}
