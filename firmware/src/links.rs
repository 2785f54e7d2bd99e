//! One engine, several host links: every chunk of frames the engine hands
//! out goes to each link at once, whole or not at all, and no link waits for
//! another. A link that is closed, or open but not read, loses its own
//! chunks (counted), never the others'.
//!
//! ```text
//!   Engine::read_tx ──chunk──┬──▶ RTT up 1        (NoBlockSkip: whole or none)
//!                            ├──▶ UART0's ring    (TxQueue: whole or none)
//!                            └──▶ UsbOut's ring ──▶ CDC IN endpoint, as it takes it
//!                                 (only while DTR is set)
//! ```
//!
//! Before this, the Pico's USB task held a half-sent chunk and retried it
//! until the CDC port took it: a port opened once and then not read (after
//! `latprobe flash`, or a host that stopped) stopped RTT and UART0 with it.

use crate::engine::txq::{Class, TxQueue};

/// A chunk at most this long is taken from the engine at a time.
pub const CHUNK: usize = 64;

/// Hand the engine's frame bytes to every link: `read` fills a chunk (the
/// engine's `read_tx`), `offer` gets each one. Returns the bytes moved.
pub fn fan_out(mut read: impl FnMut(&mut [u8]) -> usize, mut offer: impl FnMut(&[u8])) -> usize {
    let mut chunk = [0u8; CHUNK];
    let mut moved = 0;
    loop {
        let n = read(&mut chunk);
        if n == 0 {
            return moved;
        }
        offer(&chunk[..n]);
        moved += n;
    }
}

/// A serial link's own output ring (USB CDC on the Pico), open while the
/// host says so (DTR: Linux's cdc_acm sets it when a program opens the
/// port, and drops it at close).
#[derive(Debug)]
pub struct LinkOut<const N: usize> {
    ring: TxQueue<N>,
    open: bool,
    dropped: u32,
}

impl<const N: usize> Default for LinkOut<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> LinkOut<N> {
    /// Closed and empty.
    pub const fn new() -> Self {
        Self { ring: TxQueue::new(), open: false, dropped: 0 }
    }

    /// The port's state as the host last said it. Closing drops what waits
    /// (the host that closed will not read it; a host that opens next
    /// starts at a frame boundary) and counts it.
    pub fn set_open(&mut self, open: bool) {
        if self.open && !open {
            self.drop_waiting();
        }
        self.open = open;
    }

    /// Whether the port is open.
    pub const fn is_open(&self) -> bool {
        self.open
    }

    /// A chunk of whole frames: queued whole if the port is open and the
    /// ring has room, counted as dropped if open and full, ignored if
    /// closed (nobody listens on this link).
    pub fn offer(&mut self, chunk: &[u8]) {
        if self.open && !self.ring.push(chunk, Class::Control) {
            self.dropped = self.dropped.saturating_add(chunk.len() as u32);
        }
    }

    /// Give the port what it takes: `write` returns the bytes it accepted
    /// (0 when its buffer is full). Returns whether bytes still wait.
    pub fn drain(&mut self, mut write: impl FnMut(&[u8]) -> usize) -> bool {
        while !self.ring.is_empty() {
            let n = write(self.ring.chunk());
            if n == 0 {
                break;
            }
            self.ring.consume(n);
        }
        !self.ring.is_empty()
    }

    /// Bytes this link has lost since boot.
    pub const fn dropped(&self) -> u32 {
        self.dropped
    }

    /// Bytes waiting for the port.
    pub const fn waiting(&self) -> usize {
        self.ring.len()
    }

    fn drop_waiting(&mut self) {
        self.dropped = self.dropped.saturating_add(self.ring.len() as u32);
        let n = self.ring.len();
        self.ring.consume(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::txq::MIN_QUEUE;
    use std::vec::Vec;

    const N: usize = MIN_QUEUE + 200;

    /// A source of numbered bytes, in frames of 40.
    fn source(total: usize) -> impl FnMut(&mut [u8]) -> usize {
        let mut next = 0usize;
        move |buf: &mut [u8]| {
            let n = buf.len().min(40).min(total - next);
            for (i, b) in buf[..n].iter_mut().enumerate() {
                *b = (next + i) as u8;
            }
            next += n;
            n
        }
    }

    /// A USB host that reads 100 bytes and then stops: the other links
    /// still get every chunk, in order, and USB's loss is counted.
    #[test]
    fn a_link_that_stops_reading_stops_no_other() {
        let (mut rtt, mut uart, mut usb_read) = (Vec::new(), Vec::new(), Vec::new());
        let mut usb = LinkOut::<N>::new();
        usb.set_open(true);
        let mut src = source(10_000);
        for _ in 0..50 {
            fan_out(&mut src, |c| {
                rtt.extend_from_slice(c);
                uart.extend_from_slice(c);
                usb.offer(c);
            });
            usb.drain(|c| {
                let n = c.len().min(100 - usb_read.len());
                usb_read.extend_from_slice(&c[..n]);
                n
            });
        }
        let want: Vec<u8> = (0..10_000).map(|i| i as u8).collect();
        assert_eq!(rtt, want);
        assert_eq!(uart, want);
        assert_eq!(usb_read, want[..100]);
        assert_eq!(usb.dropped() as usize + usb.waiting() + 100, 10_000);
        assert!(usb.dropped() > 0);
    }

    /// Closing drops and counts what waits; a closed port queues nothing
    /// and counts nothing; a port opened again starts empty.
    #[test]
    fn closing_drops_what_waits_and_reopening_starts_clean() {
        let mut usb = LinkOut::<N>::new();
        usb.offer(&[1; 40]);
        assert_eq!((usb.waiting(), usb.dropped()), (0, 0), "closed: not queued, not a loss");
        usb.set_open(true);
        usb.offer(&[2; 40]);
        usb.offer(&[3; 40]);
        assert_eq!(usb.waiting(), 80);
        usb.set_open(false);
        assert_eq!((usb.waiting(), usb.dropped()), (0, 80));
        usb.set_open(true);
        usb.offer(&[4; 40]);
        let mut got = Vec::new();
        assert!(!usb.drain(|c| {
            got.extend_from_slice(c);
            c.len()
        }));
        assert_eq!(got, [4; 40]);
    }

    /// A full ring takes no part of a chunk: the bytes a host reads are
    /// always whole frames.
    #[test]
    fn a_full_ring_takes_whole_chunks_or_none() {
        let mut usb = LinkOut::<N>::new();
        usb.set_open(true);
        let mut offered = 0;
        while usb.waiting() + 64 <= N {
            usb.offer(&[5; 64]);
            offered += 64;
        }
        usb.offer(&[6; 64]);
        assert_eq!(usb.waiting(), offered);
        assert_eq!(usb.dropped(), 64);
    }
}
