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
        return Err(Error::Link(LinkError::PortOpen {
            port: name.to_string(),
            reason: "no such device: give the probe's serial device (e.g. /dev/ttyACM0, see \
                     latprobe list), or tcp:HOST:PORT, or unix:PATH"
                .to_string(),
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
        _ if e.to_string().contains("ermission denied") => format!(
            "{e}: add yourself to the group that owns it (often dialout) or install the README's udev rule"
        ),
        _ => e.to_string(),
    }
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
