//! TCP (`tcp:HOST:PORT`, a bench port exported by ser2net) and unix sockets
//! (`unix:PATH`, a UART exported by QEMU) carrying the probe's raw bytes.

use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use super::{is_timeout, ByteSource, Read};
use crate::error::{Error, LinkError};

/// A connected stream socket.
#[derive(Debug)]
pub struct Socket<S> {
    name: String,
    stream: S,
    timeout: Option<Duration>,
}

/// What the two stream types share.
pub trait Stream: io::Read + io::Write + Send {
    /// Set the read timeout.
    fn set_timeout(&self, t: Duration) -> io::Result<()>;
}

impl Stream for TcpStream {
    fn set_timeout(&self, t: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(t))
    }
}

impl Stream for UnixStream {
    fn set_timeout(&self, t: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(t))
    }
}

pub(super) fn open_tcp(name: &str, addr: &str) -> Result<Socket<TcpStream>, Error> {
    let fail = |reason: String| Error::Link(LinkError::PortOpen { port: name.to_string(), reason });
    let addrs: Vec<_> =
        addr.to_socket_addrs().map_err(|e| fail(format!("{e}: write --port tcp:HOST:PORT")))?.collect();
    let mut last = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, Duration::from_secs(5)) {
            Ok(stream) => {
                // Frames are small and latency matters more than packing.
                let _ = stream.set_nodelay(true);
                return Ok(Socket { name: name.to_string(), stream, timeout: None });
            }
            Err(e) => last = Some(e),
        }
    }
    Err(fail(last.map_or_else(|| "the address resolves to nothing".to_string(), |e| tcp_failure(&e))))
}

/// Why a TCP connection failed, with what to check: a refusal means no
/// program listens on that port of that host.
fn tcp_failure(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => {
            "connection refused: is the probe bridge (ser2net/socat) listening there?".to_string()
        }
        io::ErrorKind::TimedOut => {
            "no answer within 5 s: check the host name, the port and that a firewall lets it through"
                .to_string()
        }
        _ => format!("{}: check the host and port (tcp:HOST:PORT)", os_text(e)),
    }
}

/// An OS error's text without Rust's " (os error N)" suffix.
fn os_text(e: &io::Error) -> String {
    let text = e.to_string();
    text.find(" (os error").map_or(text.clone(), |at| text[..at].to_string())
}

pub(super) fn open_unix(name: &str, path: &str) -> Result<Socket<UnixStream>, Error> {
    UnixStream::connect(path).map(|stream| Socket { name: name.to_string(), stream, timeout: None }).map_err(
        |e| {
            Error::Link(LinkError::PortOpen {
                port: name.to_string(),
                reason: format!("{}: check that the socket exists and something listens on it", os_text(&e)),
            })
        },
    )
}

impl<S: Stream> ByteSource for Socket<S> {
    fn read(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Read> {
        let timeout = timeout.max(Duration::from_millis(1));
        if self.timeout != Some(timeout) {
            self.stream.set_timeout(timeout)?;
            self.timeout = Some(timeout);
        }
        match self.stream.read(buf) {
            Ok(0) => Ok(Read::Closed),
            Ok(n) => Ok(Read::Data(n)),
            Err(e) if is_timeout(&e) => Ok(Read::Timeout),
            Err(e) => Err(e),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// An in-process link: a connected socket pair whose first end is a
/// [`ByteSource`] named `name` and whose second end the caller gives to a
/// probe living in this process (the virtual probe), so its bytes take the
/// same path as a serial port's.
pub fn pair(name: &str) -> io::Result<(Socket<UnixStream>, UnixStream)> {
    let (a, b) = UnixStream::pair()?;
    Ok((Socket { name: name.to_string(), stream: a, timeout: None }, b))
}
