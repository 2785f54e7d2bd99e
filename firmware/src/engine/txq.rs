//! The bounded output queue: a byte ring of whole encoded frames, with room
//! kept back for control replies so that a host that stops draining loses
//! samples (counted) but never a Hello, Configured, Error or Stopped.
//!
//! ```text
//!   [ ........ data frames ........ | reserve: control only ]  (N bytes)
//!   data frame admitted  iff  len + CONTROL_RESERVE <= free
//!   control frame admitted iff len <= free
//! ```
//!
//! Frames are written whole or not at all, so the byte stream the host reads
//! is always a sequence of complete frames (a frame is never cut by a drop).

use latprobe_protocol::MAX_FRAME_LEN;

/// Bytes of the queue only control frames may use. A control frame is at
/// most about 80 bytes (a Hello with a 32-byte board name), so this holds
/// several even when data has filled everything else.
pub const CONTROL_RESERVE: usize = 320;

/// The smallest queue that holds one largest data frame beside the reserve.
pub const MIN_QUEUE: usize = MAX_FRAME_LEN + CONTROL_RESERVE;

/// Which budget a frame is charged to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Batches and heartbeats: dropped (and counted) when the queue is full.
    Data,
    /// Replies the host waits for: may use the reserve.
    Control,
}

/// A ring of `N` bytes holding complete frames.
#[derive(Debug, Clone)]
pub struct TxQueue<const N: usize> {
    buf: [u8; N],
    /// Index of the oldest unsent byte.
    head: usize,
    /// Unsent bytes.
    len: usize,
}

impl<const N: usize> Default for TxQueue<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> TxQueue<N> {
    /// An empty queue.
    pub const fn new() -> Self {
        const { assert!(N >= MIN_QUEUE, "the output queue must hold a frame beside the control reserve") };
        Self { buf: [0; N], head: 0, len: 0 }
    }

    /// Bytes waiting to be sent.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing waits to be sent.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes free.
    pub const fn free(&self) -> usize {
        N - self.len
    }

    /// Append a whole frame if its class's budget allows; `false` if it was
    /// not queued (the caller counts the loss).
    pub fn push(&mut self, frame: &[u8], class: Class) -> bool {
        let reserve = match class {
            Class::Data => CONTROL_RESERVE,
            Class::Control => 0,
        };
        if frame.len() + reserve > self.free() {
            return false;
        }
        let tail = wrap::<N>(self.head + self.len);
        let first = frame.len().min(N - tail);
        self.buf[tail..tail + first].copy_from_slice(&frame[..first]);
        self.buf[..frame.len() - first].copy_from_slice(&frame[first..]);
        self.len += frame.len();
        true
    }

    /// The oldest unsent bytes that are contiguous in memory (all of them
    /// unless they wrap round the end of the ring). Empty when idle.
    pub fn chunk(&self) -> &[u8] {
        let n = self.len.min(N - self.head);
        &self.buf[self.head..self.head + n]
    }

    /// Mark `n` bytes from the front as sent (clamped to what is queued).
    pub fn consume(&mut self, n: usize) {
        let n = n.min(self.len);
        self.head = wrap::<N>(self.head + n);
        self.len -= n;
        if self.len == 0 {
            // Keep frames contiguous as long as possible: fewer DMA chunks.
            self.head = 0;
        }
    }

    /// Copy up to `out.len()` unsent bytes into `out` and mark them sent.
    pub fn read(&mut self, out: &mut [u8]) -> usize {
        let mut done = 0;
        while done < out.len() && !self.is_empty() {
            let chunk = self.chunk();
            let n = chunk.len().min(out.len() - done);
            out[done..done + n].copy_from_slice(&chunk[..n]);
            self.consume(n);
            done += n;
        }
        done
    }
}

/// `i % N` for `i < 2 N` (head and length are each at most `N`): a
/// subtraction, not a division (`N` need not be a power of two, and the
/// M0+ has no divide instruction).
const fn wrap<const N: usize>(i: usize) -> usize {
    if i >= N {
        i - N
    } else {
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: usize = MIN_QUEUE + 100;

    #[test]
    fn frames_come_out_in_order_across_the_wrap() {
        let mut q = TxQueue::<N>::new();
        let mut expect = [0u8; 4096];
        let (mut wrote, mut read) = (0usize, 0usize);
        let mut out = [0u8; 37];
        for round in 0..200u32 {
            let frame: [u8; 61] = core::array::from_fn(|i| (round as usize * 7 + i) as u8);
            if q.push(&frame, Class::Data) {
                for &b in &frame {
                    expect[wrote % 4096] = b;
                    wrote += 1;
                }
            }
            let n = q.read(&mut out[..(round as usize % 37) + 1]);
            for &b in &out[..n] {
                assert_eq!(b, expect[read % 4096]);
                read += 1;
            }
        }
        while !q.is_empty() {
            let c = q.chunk();
            assert_eq!(c[0], expect[read % 4096]);
            read += 1;
            q.consume(1);
        }
        assert_eq!(read, wrote);
    }

    #[test]
    fn data_leaves_the_reserve_to_control() {
        let mut q = TxQueue::<N>::new();
        let frame = [1u8; 50];
        let mut data = 0;
        while q.push(&frame, Class::Data) {
            data += 1;
        }
        assert_eq!(data, (N - CONTROL_RESERVE) / 50);
        assert!(q.free() >= CONTROL_RESERVE);
        let mut control = 0;
        while q.push(&frame, Class::Control) {
            control += 1;
        }
        assert!(control >= CONTROL_RESERVE / 50);
        assert!(q.free() < 50);
    }

    #[test]
    fn consume_is_clamped() {
        let mut q = TxQueue::<N>::new();
        assert!(q.push(&[1, 2, 3], Class::Control));
        q.consume(10);
        assert!(q.is_empty());
        assert!(q.chunk().is_empty());
    }
}
