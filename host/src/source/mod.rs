//! Transports: where the probe's bytes come from and where ours go. Every
//! kind of link (serial device, TCP, unix socket, recorded raw file, the
//! virtual probe) is a [`ByteSource`]; nothing above this layer knows which.

mod serial;
mod socket;

pub mod replay;
pub mod rtt;

use std::io;
use std::time::Duration;

use crate::Error;

pub use replay::ReplaySource;
pub use socket::{pair, Socket};

/// What one [`ByteSource::read`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// This many bytes were read into the buffer.
    Data(usize),
    /// Nothing arrived within the timeout.
    Timeout,
    /// The other end closed: no more bytes will come.
    Closed,
}

/// A bidirectional byte link to a probe.
pub trait ByteSource: Send {
    /// Read what is available, waiting at most `timeout` for the first byte.
    fn read(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Read>;
    /// Send all of `bytes` to the probe.
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// The port as the user named it, for messages.
    fn name(&self) -> &str;
}

/// Open a probe port: `tcp:HOST:PORT`, `unix:PATH`, or a serial device path.
///
/// A port that does not exist or refuses the connection is a usage error
/// (exit 2) naming the port.
pub fn open(port: &str, baud: u32) -> Result<Box<dyn ByteSource>, Error> {
    if let Some(addr) = port.strip_prefix("tcp:") {
        return socket::open_tcp(port, addr).map(|s| Box::new(s) as Box<dyn ByteSource>);
    }
    if let Some(path) = port.strip_prefix("unix:") {
        return socket::open_unix(port, path).map(|s| Box::new(s) as Box<dyn ByteSource>);
    }
    serial::open(port, baud).map(|s| Box::new(s) as Box<dyn ByteSource>)
}

/// Whether an I/O error only means "nothing yet".
fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted)
}
