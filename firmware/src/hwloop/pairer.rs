//! Pairing a UART answer byte with the capture of its start bit, for boards
//! that timestamp the response line by input capture on falling edges while
//! the UART receives the same line.
//!
//! ```text
//!  RX line ‾‾‾\_start_/‾‾…‾‾\_/‾‾ stop ‾‾‾\_start_ …
//!             ▲ capture       ▲ data edge    ▲ next byte's capture
//!             └──────── 9.5 bit times ────────▶ RXNE: the byte is read
//! ```
//!
//! A byte of [`latprobe_protocol::IDENTITY_ALPHABET`] has exactly one falling
//! edge, its start bit, so captures and bytes come one to one. Any other
//! byte has more falling edges inside it, and a glitch can leave a capture
//! with no byte. The rules, so neither can shift the pairing:
//!
//! 1. A capture older than two byte times when a byte is read belongs to no
//!    byte (a glitch the UART filtered, or a byte lost to an overrun): it is
//!    dropped and counted.
//! 2. The byte's start bit is the oldest capture left.
//! 3. Captures less than 9.5 bit times after that start bit are edges inside
//!    the same byte: dropped (not counted: they are expected).
//! 4. No capture left for a byte: its start bit was not captured (the
//!    capture was lost): the byte cannot be timed and is counted.
//! 5. A capture that overwrote an unread one (overcapture,
//!    [`StartBitPairer::push_overcaptured`]) is the *latest* of several
//!    edges: the earlier ones, this byte's start bit perhaps among them,
//!    are gone. It is never taken for a start bit: the byte it reaches
//!    first is not timed ([`Paired::Overwritten`]), and the edges less
//!    than 9.5 bit times after it go with it. An overcapture costs at most
//!    two untimed bytes, never a byte timed by a data-bit edge.
//! 6. A start bit latches at least 9 bit times before its byte can be read
//!    (the receiver sets RXNE at the stop bit, 9.5 bit times after the
//!    start bit's edge: RM0383 §19.3.3, "Character reception"). When the
//!    oldest capture left is later than that, this byte's start bit was not
//!    captured (a periodic run that opened the channel in the middle of a
//!    byte, or a start bit lost): the byte is not timed, and the captures
//!    more than a bit time before its read go with it (they are its data
//!    edges; the next byte's start bit comes after its stop bit, so it is
//!    kept while the read is less than 1.5 bit times late).
//!
//! Time here is extended ticks; the queue holds a few captures, enough for
//! the edges of one byte and the next byte's start bit.

/// Captures held at most: the 4 falling edges of the worst byte (0x55 has
/// 5 with its start bit) plus the next start bit, and some slack.
const QUEUE: usize = 8;

/// What [`StartBitPairer::on_byte`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paired {
    /// The byte and the tick of its start bit.
    Byte {
        /// Extended tick of the start bit's falling edge.
        tick: u64,
        /// The byte received.
        byte: u8,
    },
    /// No capture for this byte: it cannot be timed.
    NoStartBit,
    /// This byte's start bit may have been overwritten by a later edge
    /// (rule 5): it cannot be timed. The overcapture was counted when it
    /// was read.
    Overwritten,
}

/// Pairs received bytes with start-bit captures (module docs).
#[derive(Debug, Clone)]
pub struct StartBitPairer {
    /// Capture ticks, and whether each overwrote an unread capture.
    queue: [(u64, bool); QUEUE],
    head: usize,
    len: usize,
    bit_ticks_x2: u64,
    /// Captures that belonged to no byte (rule 1), and captures pushed out
    /// of a full queue.
    pub orphan_captures: u32,
    /// Bytes without a start-bit capture (rule 4).
    pub untimed_bytes: u32,
}

impl StartBitPairer {
    /// For a line at `baud` and a timer of `timer_hz`.
    pub const fn new(timer_hz: u32, baud: u32) -> Self {
        let bit_ticks_x2 = if baud == 0 { 0 } else { 2 * timer_hz as u64 / baud as u64 };
        Self {
            queue: [(0, false); QUEUE],
            head: 0,
            len: 0,
            bit_ticks_x2,
            orphan_captures: 0,
            untimed_bytes: 0,
        }
    }

    /// Forget every capture (between runs, or when the line changes).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Captures waiting for their byte.
    pub fn pending(&self) -> usize {
        self.len
    }

    /// A falling edge on the response line, captured at `tick`. Captures
    /// must come in the order they were latched.
    pub fn push_capture(&mut self, tick: u64) {
        self.push(tick, false);
    }

    /// A falling edge captured at `tick` that overwrote one or more
    /// captures before they were read (rule 5).
    pub fn push_overcaptured(&mut self, tick: u64) {
        self.push(tick, true);
    }

    fn push(&mut self, tick: u64, overcaptured: bool) {
        if self.len == QUEUE {
            // Full: the oldest can belong to no byte any more.
            self.pop();
            self.orphan_captures = self.orphan_captures.saturating_add(1);
        }
        self.queue[(self.head + self.len) % QUEUE] = (tick, overcaptured);
        self.len += 1;
    }

    /// A byte was read from the UART at extended tick `now`. Deliver every
    /// capture latched before the byte's stop bit first (a board reads its
    /// capture flags before the UART's data register).
    pub fn on_byte(&mut self, byte: u8, now: u64) -> Paired {
        // 2 byte times = 20 bits.
        let stale_before = now.saturating_sub(10 * self.bit_ticks_x2);
        while self.len > 0 && self.queue[self.head].0 < stale_before {
            self.pop();
            self.orphan_captures = self.orphan_captures.saturating_add(1);
        }
        // Rule 6: no capture early enough to be this byte's start bit.
        let earliest_read = |start: u64| start.saturating_add(9 * self.bit_ticks_x2 / 2);
        // (An overcaptured edge is rule 5's: it is already never timed.)
        let (oldest, oldest_overcaptured) = self.queue[self.head];
        if self.len > 0 && !oldest_overcaptured && earliest_read(oldest) > now {
            let own_edges_before = now.saturating_sub(self.bit_ticks_x2 / 2);
            while self.len > 0 && self.queue[self.head].0 < own_edges_before {
                self.pop();
            }
            self.untimed_bytes = self.untimed_bytes.saturating_add(1);
            return Paired::NoStartBit;
        }
        let Some((start, overcaptured)) = self.pop() else {
            self.untimed_bytes = self.untimed_bytes.saturating_add(1);
            return Paired::NoStartBit;
        };
        // 9.5 bit times after the start bit: past every data edge of this
        // byte, before the next byte's start bit (at 10 bit times or later).
        // After an overcaptured edge: past every data edge of the byte it
        // may belong to.
        let inside = start.saturating_add(19 * self.bit_ticks_x2 / 4);
        while self.len > 0 && self.queue[self.head].0 < inside {
            self.pop();
        }
        if overcaptured {
            self.untimed_bytes = self.untimed_bytes.saturating_add(1);
            return Paired::Overwritten;
        }
        Paired::Byte { tick: start, byte }
    }

    fn pop(&mut self) -> Option<(u64, bool)> {
        if self.len == 0 {
            return None;
        }
        let t = self.queue[self.head];
        self.head = (self.head + 1) % QUEUE;
        self.len -= 1;
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    const HZ: u32 = 100_000_000;
    const BAUD: u32 = 115_200;
    const BIT: u64 = HZ as u64 / BAUD as u64; // 868 ticks

    /// The falling edges of `byte` sent with its start bit at `t0`.
    fn edges(byte: u8, t0: u64) -> Vec<u64> {
        let mut level = [true, false].to_vec();
        level.extend((0..8).map(|i| byte >> i & 1 == 1));
        level.push(true);
        (1..level.len()).filter(|&i| level[i - 1] && !level[i]).map(|i| t0 + (i as u64 - 1) * BIT).collect()
    }

    /// The byte is read 9.5 bit times after its start, plus `isr` ticks.
    fn read_at(t0: u64, isr: u64) -> u64 {
        t0 + 19 * BIT / 2 + isr
    }

    #[test]
    fn every_byte_gets_its_own_start_bit_even_with_data_edges() {
        let mut p = StartBitPairer::new(HZ, BAUD);
        let bytes = [0x00u8, 0x55, 0xFF, 0x01, 0xAA, 0x80, 0x00];
        // Back to back: each byte starts right after the previous stop bit;
        // the interrupt reads each byte half a bit time after RXNE.
        let mut t0 = 1_000_000;
        for &b in &bytes {
            for e in edges(b, t0) {
                p.push_capture(e);
            }
            assert_eq!(p.on_byte(b, read_at(t0, BIT / 2)), Paired::Byte { tick: t0, byte: b });
            assert_eq!(p.pending(), 0);
            t0 += 10 * BIT;
        }
        assert_eq!((p.orphan_captures, p.untimed_bytes), (0, 0));
        assert_eq!(edges(0x55, 0).len(), 5, "the model sees 0x55's data edges");
    }

    #[test]
    fn a_late_interrupt_sees_the_next_start_bit_and_keeps_it_for_the_next_byte() {
        let mut p = StartBitPairer::new(HZ, BAUD);
        let t0 = 5_000;
        for e in edges(0x55, t0).into_iter().chain(edges(0x00, t0 + 10 * BIT)) {
            p.push_capture(e);
        }
        assert_eq!(p.on_byte(0x55, read_at(t0, 3 * BIT)), Paired::Byte { tick: t0, byte: 0x55 });
        assert_eq!(p.pending(), 1, "the next byte's start bit waits");
        assert_eq!(
            p.on_byte(0x00, read_at(t0 + 10 * BIT, 10)),
            Paired::Byte { tick: t0 + 10 * BIT, byte: 0x00 }
        );
        assert_eq!((p.orphan_captures, p.untimed_bytes), (0, 0));
    }

    #[test]
    fn a_glitch_without_a_byte_does_not_shift_the_pairing() {
        let mut p = StartBitPairer::new(HZ, BAUD);
        p.push_capture(1_000); // a glitch the UART never turned into a byte
        let t0 = 1_000 + 50 * BIT;
        p.push_capture(t0);
        assert_eq!(p.on_byte(0xC0, read_at(t0, 100)), Paired::Byte { tick: t0, byte: 0xC0 });
        assert_eq!(p.orphan_captures, 1);
    }

    /// 0x55 (4 falling data edges): the interrupt comes after the start
    /// bit and the first data edge both latched, so the capture read holds
    /// the data edge, one bit time... two bit times late. The old board
    /// code paired that capture with the byte (a latency 2 bit times too
    /// long); now the byte is not timed, and the next byte is timed right.
    #[test]
    fn an_overcaptured_data_edge_is_never_a_start_bit() {
        let mut p = StartBitPairer::new(HZ, BAUD);
        let t0 = 1_000_000;
        let e = edges(0x55, t0);
        p.push_overcaptured(e[1]); // start bit overwritten by the data edge
        for &x in &e[2..] {
            p.push_capture(x);
        }
        assert_eq!(p.on_byte(0x55, read_at(t0, 50)), Paired::Overwritten);
        let t1 = t0 + 10 * BIT;
        for x in edges(0x55, t1) {
            p.push_capture(x);
        }
        assert_eq!(p.on_byte(0x55, read_at(t1, 50)), Paired::Byte { tick: t1, byte: 0x55 });
        assert_eq!((p.orphan_captures, p.untimed_bytes), (0, 1));
    }

    #[test]
    fn a_byte_whose_start_bit_was_lost_is_not_timed() {
        let mut p = StartBitPairer::new(HZ, BAUD);
        assert_eq!(p.on_byte(0xF0, 1_000_000), Paired::NoStartBit);
        assert_eq!(p.untimed_bytes, 1);
        // A full queue drops its oldest capture and counts it.
        for i in 0..(QUEUE as u64 + 3) {
            p.push_capture(2_000_000 + i);
        }
        assert_eq!((p.pending(), p.orphan_captures), (QUEUE, 3));
    }

    /// A periodic run opens the channel in the middle of a 0x55: its first
    /// captures are data edges. The old pairer took the first of them for
    /// the start bit (one or more bit times late); now the cut byte is not
    /// timed, and the next byte is timed at its own start bit.
    #[test]
    fn a_byte_cut_by_the_start_of_capture_is_not_timed_by_a_data_edge() {
        let mut p = StartBitPairer::new(HZ, BAUD);
        let t0 = 1_000_000;
        // The start bit and the first data edge fell before the channel opened.
        for x in edges(0x55, t0).into_iter().skip(2) {
            p.push_capture(x);
        }
        assert_eq!(p.on_byte(0x55, read_at(t0, 20)), Paired::NoStartBit);
        assert_eq!(p.pending(), 0, "the cut byte's data edges go with it");
        let t1 = t0 + 10 * BIT;
        for x in edges(0x55, t1) {
            p.push_capture(x);
        }
        assert_eq!(p.on_byte(0x55, read_at(t1, 20)), Paired::Byte { tick: t1, byte: 0x55 });
        assert_eq!(p.untimed_bytes, 1);
        // Read a bit time late: the next byte's start bit has latched already
        // and is kept for it.
        let mut p = StartBitPairer::new(HZ, BAUD);
        let (a, b) = (2_000_000, 2_000_000 + 10 * BIT);
        for x in edges(0x55, a).into_iter().skip(1).chain(edges(0x00, b)) {
            p.push_capture(x);
        }
        assert_eq!(p.on_byte(0x55, read_at(a, BIT)), Paired::NoStartBit);
        assert_eq!(p.on_byte(0x00, read_at(b, 10)), Paired::Byte { tick: b, byte: 0x00 });
    }
}
