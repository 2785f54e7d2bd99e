//! `latprobe list`: what is attached. Serial ports (read from sysfs, so no
//! libudev is needed) with their USB ids, serial number, product and
//! `/dev/serial/by-id` name, and the debug probes probe-rs finds. An
//! ST-LINK's virtual COM port and its debug probe share a USB serial number,
//! which pairs a port with its probe: that pair is a latprobe board.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use crate::probe::stlink_kind;
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

/// What `list` found.
#[derive(Debug, Clone, Serialize)]
pub struct Listing {
    /// Serial ports.
    pub serial_ports: Vec<SerialPort>,
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
            if let Some(kind) = stlink_kind(vid, pid) {
                port.latprobe = Some(format!("{kind} virtual COM port: a Nucleo's host link"));
            }
        }
        ports.push(port);
    }
    ports.sort_by(|a, b| a.path.cmp(&b.path));
    ports
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
                latprobe: stlink_kind(i.info.vendor_id, i.info.product_id)
                    .map(|k| format!("{k}: flashes a Nucleo (`latprobe flash --probe {sel}`)")),
            }
        })
        .collect()
}

/// Pair each ST-LINK probe with the port of the same USB serial number.
fn pair(l: &mut Listing) {
    for p in &mut l.debug_probes {
        let Some(serial) = &p.serial else { continue };
        if let Some(port) = l.serial_ports.iter_mut().find(|s| s.serial.as_ref() == Some(serial)) {
            if p.latprobe.is_some() {
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
    let mut l = Listing { serial_ports, debug_probes, debug_probes_note };
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
        || l.debug_probes.iter().any(|p| p.latprobe.is_some());
    if marked {
        out.push_str("* looks like a latprobe board (an ST-LINK: Nucleo-F411RE)\n");
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
