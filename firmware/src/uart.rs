//! UART plumbing every board shares (a bounded non-blocking read burst, a
//! write of a whole buffer), written against the embedded-hal-nb and
//! embedded-io traits so that a new board brings only its HAL's
//! implementations of them. (The host's `link` is its deframing; this is
//! not that.)

use embedded_hal_nb::nb;
use embedded_hal_nb::serial::Read;

/// Take the bytes a UART holds now into `buf`, without blocking. Returns how
/// many were read and how many read errors (overrun, framing, noise) were
/// seen. It stops at the first `WouldBlock`, when `buf` is full, or after
/// `2 * buf.len()` attempts, so a stuck error flag cannot wedge the
/// interrupt that calls it.
pub fn read_burst<R: Read<u8>>(rx: &mut R, buf: &mut [u8]) -> (usize, u32) {
    let mut n = 0;
    let mut errors = 0u32;
    for _ in 0..buf.len() * 2 {
        if n == buf.len() {
            break;
        }
        match rx.read() {
            Ok(b) => {
                buf[n] = b;
                n += 1;
            }
            Err(nb::Error::WouldBlock) => break,
            Err(nb::Error::Other(_)) => errors = errors.wrapping_add(1),
        }
    }
    (n, errors)
}

/// Write all of `bytes`, retrying while the writer takes nothing (HALs whose
/// `write` returns 0 rather than block while the data register is full).
pub fn write_all<W: embedded_io::Write>(w: &mut W, mut bytes: &[u8]) -> Result<(), W::Error> {
    while !bytes.is_empty() {
        let n = w.write(bytes)?;
        bytes = &bytes[n..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use embedded_hal_nb::serial::{ErrorKind, ErrorType};

    /// A UART that yields a script of results, then `WouldBlock` forever.
    struct Script<'a>(&'a [Result<u8, bool>], usize);

    impl ErrorType for Script<'_> {
        type Error = ErrorKind;
    }

    impl Read<u8> for Script<'_> {
        fn read(&mut self) -> nb::Result<u8, ErrorKind> {
            let r = match self.0.get(self.1) {
                Some(Ok(b)) => Ok(*b),
                Some(Err(true)) => Err(nb::Error::Other(ErrorKind::Overrun)),
                Some(Err(false)) | None => Err(nb::Error::WouldBlock),
            };
            self.1 += 1;
            r
        }
    }

    #[test]
    fn takes_what_is_there_and_counts_errors() {
        let mut rx = Script(&[Ok(1), Err(true), Ok(2), Ok(3), Err(false), Ok(9)], 0);
        let mut buf = [0u8; 8];
        assert_eq!(read_burst(&mut rx, &mut buf), (3, 1));
        assert_eq!(&buf[..3], &[1, 2, 3]);
        // The byte after WouldBlock is for the next interrupt.
        assert_eq!(read_burst(&mut rx, &mut buf), (1, 0));
        assert_eq!(buf[0], 9);
    }

    #[test]
    fn stops_when_full_and_when_an_error_sticks() {
        let mut rx = Script(&[Ok(1), Ok(2), Ok(3)], 0);
        let mut buf = [0u8; 2];
        assert_eq!(read_burst(&mut rx, &mut buf), (2, 0));
        let stuck = [Err(true); 100];
        let mut rx = Script(&stuck, 0);
        let mut buf = [0u8; 4];
        assert_eq!(read_burst(&mut rx, &mut buf), (0, 8));
    }

    /// A writer that takes at most two bytes a call, and nothing every
    /// other call, like a UART data register.
    struct Slow(std::vec::Vec<u8>, bool);

    impl embedded_io::ErrorType for Slow {
        type Error = core::convert::Infallible;
    }

    impl embedded_io::Write for Slow {
        fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
            self.1 = !self.1;
            let n = if self.1 { buf.len().min(2) } else { 0 };
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    #[test]
    fn write_all_retries_until_everything_is_out() {
        let mut w = Slow(std::vec::Vec::new(), false);
        write_all(&mut w, b"latprobe").unwrap();
        assert_eq!(w.0, b"latprobe");
    }
}
