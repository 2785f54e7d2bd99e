//! A serial device (the ST-LINK's virtual COM port, a USB-UART, a pty),
//! through `serialport` without its libudev feature so no system package is
//! needed.

use std::io::{self, Read as _, Write as _};
use std::path::Path;
use std::time::Duration;

use serialport::SerialPort;

use super::{is_timeout, ByteSource, Read};
use crate::Error;

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
        return Err(Error::PortOpen {
            port: name.to_string(),
            reason: "no such device: check --port (a serial device such as /dev/ttyACM0, \
                     or tcp:HOST:PORT, or unix:PATH)"
                .to_string(),
        });
    }
    // B0 is no rate: on a real line it means "hang up".
    if baud == 0 {
        return Err(Error::Usage(format!(
            "--baud 0 is no line speed for {name}: give the probe link's rate"
        )));
    }
    let timeout = Duration::from_millis(100);
    let port = serialport::new(name, baud)
        .timeout(timeout)
        .open()
        .map_err(|e| Error::PortOpen { port: name.to_string(), reason: e.to_string() })?;
    Ok(Serial { name: name.to_string(), port, timeout })
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
