//! A serial device (the ST-LINK's virtual COM port, a USB-UART, a pty),
//! through `serialport` without its libudev feature so no system package is
//! needed.

use std::io::{self, Read as _, Write as _};
use std::path::Path;
use std::time::Duration;

use serialport::SerialPort;

use super::{is_timeout, ByteSource, Read};
use crate::error::{Error, LinkError};

/// An open serial device.
pub struct Serial {
    name: String,
    port: Box<dyn SerialPort>,
    timeout: Duration,
}

impl std::fmt::Debug for Serial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serial").field("name", &self.name).finish()
    }
}

pub(super) fn open(name: &str, baud: u32) -> Result<Serial, Error> {
    // serialport's own message for a missing device is a bare "No such file
    // or directory"; say which port and what to do.
    if !Path::new(name).exists() {
        let ports = usb_serial_ports(Path::new("/dev"));
        return Err(Error::Link(LinkError::PortOpen {
            port: name.to_string(),
            reason: missing_port(&ports),
        }));
    }
    // B0 is no rate: on a real line it means "hang up".
    if baud == 0 {
        return Err(Error::Config(format!(
            "--baud 0 is no line speed for {name}: give the probe link's rate"
        )));
    }
    let timeout = Duration::from_millis(100);
    // DTR asserted, as a terminal program does: the Pico sends frames over
    // its CDC port only while DTR is set (a port nobody has open must not
    // hold the probe's output). Linux's cdc_acm raises DTR on open anyway;
    // serialport's default leaves it as the OS left it, so say it.
    let port = serialport::new(name, baud).timeout(timeout).dtr_on_open(true).open().map_err(|e| {
        Error::Link(LinkError::PortOpen { port: name.to_string(), reason: open_failure(name, &e) })
    })?;
    Ok(Serial { name: name.to_string(), port, timeout })
}

/// Why `name` could not be opened as a serial port, saying what it must
/// be: serialport's own text for a file that is no tty (`/dev/null`, a
/// regular file) is a bare "Not a typewriter".
fn open_failure(name: &str, e: &serialport::Error) -> String {
    if !is_a_tty(name) {
        let what = match std::fs::metadata(name) {
            Ok(m) if m.is_dir() => "a directory, not a serial port",
            Ok(m) if m.is_file() => "a regular file, not a serial port",
            _ => "not a serial port (ENOTTY)",
        };
        return format!("{what}; give the probe's tty, e.g. /dev/ttyACM0, see latprobe list");
    }
    match e.kind() {
        serialport::ErrorKind::NoDevice => {
            format!("{e}: the device is gone or busy; check the cable and that no other program holds it")
        }
        _ if e.to_string().contains("ermission denied") => format!("{e}: {}", permission_hint(name)),
        _ => e.to_string(),
    }
}

/// The serial devices a probe shows up as under `dev` (`ttyACM*`, a
/// Pico's or an ST-LINK's CDC port; `ttyUSB*`, a USB-UART; `ttyAMA*`, a
/// Raspberry Pi's UART), sorted; the legacy `ttyS*` placeholders every PC
/// has are left out (`latprobe list` tells real ones apart).
fn usb_serial_ports(dev: &Path) -> Vec<String> {
    let mut ports: Vec<String> = std::fs::read_dir(dev)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| ["ttyACM", "ttyUSB", "ttyAMA"].iter().any(|p| n.starts_with(p)))
        .map(|n| dev.join(n).to_string_lossy().into_owned())
        .collect();
    ports.sort();
    ports
}

/// Why the port is missing, with the serial ports this machine has (never
/// the missing one as an example).
fn missing_port(ports: &[String]) -> String {
    let others = "or tcp:HOST:PORT, or unix:PATH";
    if ports.is_empty() {
        return format!(
            "no such device, and this machine has no USB serial port: plug the probe in (its USB port, \
             not only power) and see `latprobe list`; {others}"
        );
    }
    format!(
        "no such device; the serial ports here are {}: give one of them (`latprobe list` says which is \
         a latprobe board), {others}",
        ports.join(", ")
    )
}

/// What to do about a port `name` that may not be opened: the group that
/// owns it, and whether this user is in it.
fn permission_hint(name: &str) -> String {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(meta) = std::fs::metadata(name) else {
        return "add yourself to the group that owns it or install the udev rule (see the book's \
                first bench)"
            .to_string();
    };
    let gid = meta.gid();
    let group = group_name(gid).unwrap_or_else(|| format!("gid {gid}"));
    let mode = meta.mode() & 0o777;
    if !group_allows(mode) {
        return format!(
            "it is mode {mode:03o}, owned by uid {} and group {group}, and the group may not read and \
             write it: install the udev rule (see the book's first bench) or run as its owner",
            meta.uid()
        );
    }
    if in_group(gid) {
        format!(
            "it belongs to group {group} (mode {mode:03o}) and you are in it, but this login is \
             older than that: log out and in again (or run `newgrp {group}`)"
        )
    } else {
        format!(
            "it belongs to group {group} (mode {mode:03o}): add yourself with `sudo usermod -aG \
             {group} $USER`, then log out and in again"
        )
    }
}

/// Whether a file mode lets its group read and write.
fn group_allows(mode: u32) -> bool {
    mode & 0o060 == 0o060
}

/// The name of group `gid`, from the system's group database.
fn group_name(gid: u32) -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: `grp` and `buf` outlive the call; getgrgid_r writes at most
    // `buf.len()` bytes into `buf` and points `result` at `grp` or null.
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::group = std::ptr::null_mut();
    let rc = unsafe { libc::getgrgid_r(gid, &mut grp, buf.as_mut_ptr(), buf.len(), &mut result) };
    if rc != 0 || result.is_null() || grp.gr_name.is_null() {
        return None;
    }
    // SAFETY: on success gr_name points at a NUL-terminated string in `buf`.
    let name = unsafe { std::ffi::CStr::from_ptr(grp.gr_name) };
    Some(name.to_string_lossy().into_owned())
}

/// Whether this process has `gid` among its groups (effective or
/// supplementary): what the kernel checks when the port is opened.
fn in_group(gid: u32) -> bool {
    // SAFETY: getegid has no preconditions.
    if unsafe { libc::getegid() } == gid {
        return true;
    }
    let mut groups = vec![0 as libc::gid_t; 256];
    // SAFETY: `groups` holds `groups.len()` entries; getgroups writes at
    // most that many and returns how many it wrote (or -1).
    let n = unsafe { libc::getgroups(groups.len() as libc::c_int, groups.as_mut_ptr()) };
    n > 0 && groups[..n as usize].contains(&gid)
}

/// Whether `name` opens as a terminal (opened without becoming the
/// controlling terminal and without waiting for carrier).
fn is_a_tty(name: &str) -> bool {
    use std::os::unix::fs::OpenOptionsExt as _;
    use std::os::unix::io::AsRawFd as _;
    match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK).open(name) {
        // SAFETY: isatty on a descriptor we own and keep open for the call.
        Ok(f) => unsafe { libc::isatty(f.as_raw_fd()) == 1 },
        // Unopenable (permissions): let serialport's error speak.
        Err(_) => true,
    }
}

impl ByteSource for Serial {
    fn read(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Read> {
        if timeout != self.timeout {
            self.port.set_timeout(timeout.max(Duration::from_millis(1)))?;
            self.timeout = timeout;
        }
        match self.port.read(buf) {
            Ok(0) => Ok(Read::Closed),
            Ok(n) => Ok(Read::Data(n)),
            Err(e) if is_timeout(&e) => Ok(Read::Timeout),
            Err(e) => Err(e),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.port.write_all(bytes)?;
        self.port.flush()
    }

    fn name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    /// A missing port is answered with the ports that exist, never with
    /// the missing one as the example.
    #[test]
    fn a_missing_port_lists_the_ports_that_exist() {
        let dev = tempfile::tempdir().unwrap();
        for n in ["ttyACM1", "ttyUSB0", "ttyS0", "null"] {
            std::fs::write(dev.path().join(n), b"").unwrap();
        }
        let ports = usb_serial_ports(dev.path());
        let d = dev.path().display();
        assert_eq!(ports, [format!("{d}/ttyACM1"), format!("{d}/ttyUSB0")]);
        let r = missing_port(&ports);
        assert!(r.contains(&format!("{d}/ttyACM1, {d}/ttyUSB0")), "{r}");
        assert!(!r.contains("ttyACM0"), "{r}");
        let r = missing_port(&[]);
        assert!(
            r.contains("no USB serial port") && r.contains("latprobe list") && !r.contains("ttyACM0"),
            "{r}"
        );
    }

    /// A port that may not be opened names the group that owns it and the
    /// command that adds the user to it; a mode that shuts the group out
    /// says so instead.
    #[test]
    fn a_refused_port_names_its_group() {
        let dir = std::env::temp_dir().join(format!("latprobe-perm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("ttyFAKE");
        std::fs::write(&f, b"").unwrap();
        // gid 65534 is Debian's `nogroup`; a caller not allowed to give the
        // file away (not root) cannot build this case.
        if std::os::unix::fs::chown(&f, None, Some(65534)).is_err() {
            eprintln!("skipped: chown to gid 65534 needs root");
            return;
        }
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o660)).unwrap();
        let want = group_name(65534).unwrap_or_else(|| "gid 65534".into());
        let h = permission_hint(f.to_str().unwrap());
        if in_group(65534) {
            assert!(h.contains(&format!("group {want}")) && h.contains("log out and in"), "{h}");
        } else {
            assert!(h.contains(&format!("sudo usermod -aG {want} $USER")) && h.contains("mode 660"), "{h}");
        }
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        let h = permission_hint(f.to_str().unwrap());
        assert!(h.contains("may not read and write") && h.contains("udev rule"), "{h}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
