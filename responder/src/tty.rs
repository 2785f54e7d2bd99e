//! The serial line to the probe: open a tty, put it in raw mode, restore it on drop.

use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::UsageError;

/// Baud rates that `cfsetspeed` takes as `B*` constants on Linux. Arbitrary
/// rates need `termios2`/`BOTHER`, which the probe's UARTs have no use for.
const BAUDS: &[(u32, libc::speed_t)] = &[
    (1200, libc::B1200),
    (2400, libc::B2400),
    (4800, libc::B4800),
    (9600, libc::B9600),
    (19200, libc::B19200),
    (38400, libc::B38400),
    (57600, libc::B57600),
    (115_200, libc::B115200),
    (230_400, libc::B230400),
    (460_800, libc::B460800),
    (500_000, libc::B500000),
    (576_000, libc::B576000),
    (921_600, libc::B921600),
    (1_000_000, libc::B1000000),
    (1_152_000, libc::B1152000),
    (1_500_000, libc::B1500000),
    (2_000_000, libc::B2000000),
    (2_500_000, libc::B2500000),
    (3_000_000, libc::B3000000),
    (3_500_000, libc::B3500000),
    (4_000_000, libc::B4000000),
];

/// The `B*` constant for a numeric baud rate, if Linux has one.
pub fn baud_constant(baud: u32) -> Option<libc::speed_t> {
    BAUDS.iter().find(|(b, _)| *b == baud).map(|(_, c)| *c)
}

fn supported_bauds() -> String {
    let list: Vec<String> = BAUDS.iter().map(|(b, _)| b.to_string()).collect();
    list.join(", ")
}

/// `io::Error`'s text without the trailing " (os error N)", which reads badly
/// in the middle of a sentence.
pub fn os_message(err: &io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// True for the errors a tty gives once the other end has gone away: `EIO`
/// is what a pty slave reports after its master closes, and what a USB serial
/// adapter reports when unplugged.
pub fn is_hangup(err: &io::Error) -> bool {
    err.raw_os_error() == Some(libc::EIO)
}

/// An open tty in raw mode. Dropping it puts the original settings back, so
/// the port is left as we found it however the run ends (short of SIGKILL).
#[derive(Debug)]
pub struct Tty {
    fd: OwnedFd,
    path: PathBuf,
    original: libc::termios,
}

impl Tty {
    /// Opens `path` and configures it as 8N1 raw at `baud`, no flow control,
    /// reads returning as soon as one byte is there.
    pub fn open_raw(path: &Path, baud: u32) -> Result<Tty> {
        let shown = path.display();
        let speed = baud_constant(baud).ok_or_else(|| {
            UsageError(format!("--baud {baud} is not a standard rate (use one of {})", supported_bauds()))
        })?;
        // O_NONBLOCK for the open only: a real serial port without CLOCAL set
        // yet would otherwise block in open() waiting for carrier detect.
        // O_NOCTTY so the probe's line never becomes our controlling terminal
        // (and a byte 0x03 can never turn into a SIGINT for us).
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| {
                let hint = match e.kind() {
                    io::ErrorKind::PermissionDenied => {
                        "check --device, and that this user may open it (e.g. the dialout group)"
                    }
                    _ => "check --device",
                };
                UsageError(format!("cannot open {shown}: {} ({hint})", os_message(&e)))
            })?;
        let fd: OwnedFd = file.into();
        let raw = fd.as_raw_fd();

        let original = get_attr(raw).map_err(|e| {
            if e.raw_os_error() == Some(libc::ENOTTY) {
                UsageError(format!(
                    "{shown} is not a terminal; --device must name a serial port or a pty, \
                     not a file, pipe or socket (check --device)"
                ))
            } else {
                UsageError(format!(
                    "cannot read the settings of {shown}: {} (check --device)",
                    os_message(&e)
                ))
            }
        })?;

        let mut raw_mode = original;
        // SAFETY: `raw_mode` is a valid termios owned by this frame.
        unsafe { libc::cfmakeraw(&mut raw_mode) };
        raw_mode.c_cflag |= libc::CLOCAL | libc::CREAD;
        raw_mode.c_cflag &= !libc::CRTSCTS;
        // cfmakeraw clears IXON only; a leftover IXOFF would make the kernel
        // send XOFF bytes of its own into the measurement.
        raw_mode.c_iflag &= !(libc::IXON | libc::IXOFF | libc::IXANY);
        raw_mode.c_cc[libc::VMIN] = 1;
        raw_mode.c_cc[libc::VTIME] = 0;
        // SAFETY: `raw_mode` is a valid termios; `speed` is a B* constant.
        if unsafe { libc::cfsetspeed(&mut raw_mode, speed) } != 0 {
            let e = io::Error::last_os_error();
            return Err(UsageError(format!("cannot set --baud {baud}: {}", os_message(&e))).into());
        }
        let tty = Tty { fd, path: path.to_path_buf(), original };
        set_attr(raw, &raw_mode).map_err(|e| {
            UsageError(format!("cannot put {shown} in raw mode: {} (check --device)", os_message(&e)))
        })?;

        // tcsetattr succeeds if it applied *any* of the request, so read back
        // what the driver actually took.
        let applied =
            get_attr(raw).map_err(|e| anyhow::anyhow!("cannot read back the settings of {shown}: {e}"))?;
        if applied.c_lflag & (libc::ICANON | libc::ECHO | libc::ISIG) != 0
            || applied.c_iflag & (libc::IXON | libc::ICRNL) != 0
            || applied.c_oflag & libc::OPOST != 0
        {
            anyhow::bail!("{shown} refused raw mode (the driver kept line editing or flow control)");
        }
        // SAFETY: `applied` is a valid termios.
        let got = unsafe { libc::cfgetospeed(&applied) };
        if got != speed {
            return Err(
                UsageError(format!("{shown} does not support --baud {baud} (try another rate)")).into()
            );
        }

        // Bytes that arrived before we were raw would be echoed late and
        // mismatched with the probe's stimuli; start from an empty queue.
        // SAFETY: `raw` is an open tty descriptor owned by `tty`.
        unsafe { libc::tcflush(raw, libc::TCIFLUSH) };

        // Blocking from now on: the echo loop's read must sleep in the kernel
        // and wake on the byte, not spin.
        set_blocking(raw).map_err(|e| anyhow::anyhow!("cannot make {shown} blocking: {e}"))?;
        Ok(tty)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One `read(2)`: up to `buf.len()` bytes, at least one unless the line hung up (0).
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes and the fd is open.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Writes all of `data`. A signal that does not ask us to stop does not
    /// lose the rest: the probe is waiting for every byte. One that does ask
    /// returns `Interrupted`, so a write blocked on a line nobody drains (a
    /// full pty) cannot keep the process from exiting.
    pub fn write_all(&self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            // SAFETY: `data` is valid for reads of `data.len()` bytes and the fd is open.
            let n = unsafe { libc::write(self.fd.as_raw_fd(), data.as_ptr().cast(), data.len()) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted && !crate::signals::stop_requested() {
                    continue;
                }
                return Err(e);
            }
            data = &data[n as usize..];
        }
        Ok(())
    }
}

impl Drop for Tty {
    fn drop(&mut self) {
        // Errors are ignored: after a hang-up the line is gone and there is
        // nothing left to restore.
        let _ = set_attr(self.fd.as_raw_fd(), &self.original);
    }
}

fn get_attr(fd: libc::c_int) -> io::Result<libc::termios> {
    // SAFETY: termios is a plain C struct; all-zero bytes are a valid value.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: `t` is valid for writes; tcgetattr fails cleanly on a bad fd.
    if unsafe { libc::tcgetattr(fd, &mut t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(t)
}

fn set_attr(fd: libc::c_int, t: &libc::termios) -> io::Result<()> {
    // SAFETY: `t` points to a valid termios; tcsetattr fails cleanly on a bad fd.
    if unsafe { libc::tcsetattr(fd, libc::TCSANOW, t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn set_blocking(fd: libc::c_int) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL on an open descriptor have no memory effects.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_common_bauds() {
        assert_eq!(baud_constant(115_200), Some(libc::B115200));
        assert_eq!(baud_constant(9600), Some(libc::B9600));
        assert_eq!(baud_constant(12345), None);
    }

    #[test]
    fn strips_os_error_suffix() {
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(os_message(&e), "No such file or directory");
    }
}
