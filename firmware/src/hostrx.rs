//! Host-link receive by DMA into a circular ring: the register set-up of a
//! USART's receive stream, and the reader that takes new bytes out of the
//! ring, sees when the consumer fell a whole ring behind, and never hands
//! the engine a byte the DMA already overwrote.
//!
//! Why: a USART has a one-byte data register. At 921 600 Bd a byte comes
//! every 10.85 µs, and an interrupt at the engine task's priority waits for
//! the engine (tens of µs, batch encoding): the next byte sets ORE and is
//! lost, and the HAL's read after an error drops the byte that waited too.
//! The DMA takes each byte within nanoseconds of RXNE, whatever the CPU
//! does, so the consumer may be late by up to a ring's span.
//!
//! ```text
//!   USART DR ──RXNE──▶ DMA stream (circular, MINC) ──▶ ring[N]   NDTR counts down, reloads
//!                        │ half / complete events
//!                        ▼
//!   event ISR (above the engine) ──halves += 1──┐   also wakes:
//!   USART IDLE (line idle after a burst) ───────┼──▶ consumer: Position{halves, NDTR}
//!                                               │      → RingReader::take → engine
//! ```
//!
//! The absolute write position is `halves · N/2 + (N − NDTR) mod N/2`
//! (corrected for an event not counted yet): with the half events counted
//! exactly, a consumer that is late by more than `N` bytes is *seen* to be
//! (the bytes it missed are counted, never fed stale), which positions alone
//! (the NDTR modulo the ring) cannot tell.
//!
//! Register references are to RM0383 (STM32F411).

/// A register this module reads or writes: one DMA stream's, its
/// controller's flag registers, and the USART's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reg {
    /// DMA_SxCR, the stream's configuration (RM0383 §9.5.5).
    DmaCr,
    /// DMA_SxNDTR, the items left before the wrap (RM0383 §9.5.6).
    DmaNdtr,
    /// DMA_SxPAR, the peripheral address (RM0383 §9.5.7).
    DmaPar,
    /// DMA_SxM0AR, the memory address (RM0383 §9.5.8).
    DmaM0ar,
    /// DMA_HISR, the flags of streams 4–7 (RM0383 §9.5.2).
    DmaHisr,
    /// DMA_HIFCR, their clear register: write 1 to clear (RM0383 §9.5.4).
    DmaHifcr,
    /// USART_SR (RM0383 §19.6.1).
    UsartSr,
    /// USART_DR (RM0383 §19.6.2).
    UsartDr,
    /// USART_CR1 (RM0383 §19.6.4).
    UsartCr1,
    /// USART_CR3 (RM0383 §19.6.6).
    UsartCr3,
}

/// Register access for [`start`], [`dma_events`] and [`usart_events`]: the
/// board implements it with volatile accesses; the tests with a model.
pub trait Regs {
    /// Read `reg` (a read of `UsartDr` has its side effects).
    fn read(&mut self, reg: Reg) -> u32;
    /// Write `value` to `reg` (16-bit USART registers take the low half).
    fn write(&mut self, reg: Reg, value: u32);
}

/// Bit positions, named as the PAC names the fields (checked against
/// `stm32f4::stm32f411` in the tests).
pub mod bits {
    /// DMA_SxCR (RM0383 §9.5.5).
    pub mod cr {
        /// EN: stream enable.
        pub const EN: u32 = 1 << 0;
        /// TEIE: transfer error interrupt enable.
        pub const TEIE: u32 = 1 << 2;
        /// HTIE: half transfer interrupt enable.
        pub const HTIE: u32 = 1 << 3;
        /// TCIE: transfer complete interrupt enable.
        pub const TCIE: u32 = 1 << 4;
        /// DIR (bits 7:6) = 00: peripheral to memory.
        pub const DIR_PERIPHERAL_TO_MEMORY: u32 = 0;
        /// CIRC: circular mode (NDTR reloads at 0, RM0383 §9.3.10).
        pub const CIRC: u32 = 1 << 8;
        /// MINC: memory address incremented after each item.
        pub const MINC: u32 = 1 << 10;
        /// PSIZE (bits 12:11) = 00 and MSIZE (bits 14:13) = 00: bytes.
        pub const PSIZE_MSIZE_BITS8: u32 = 0;
        /// PL = 10: high priority (above stream 6's TX, at low).
        pub const PL_HIGH: u32 = 0b10 << 16;
        /// CHSEL at bits 27:25.
        pub const CHSEL_SHIFT: u32 = 25;
    }
    /// DMA_HISR / DMA_HIFCR, stream 5's flags at bits 6–11 (RM0383 §9.5.2, §9.5.4).
    pub mod hisr5 {
        /// FEIF5: FIFO error (direct mode: not a loss for a peripheral-to-memory stream).
        pub const FEIF: u32 = 1 << 6;
        /// DMEIF5: direct mode error.
        pub const DMEIF: u32 = 1 << 8;
        /// TEIF5: transfer error (the stream is disabled by hardware).
        pub const TEIF: u32 = 1 << 9;
        /// HTIF5: half transfer.
        pub const HTIF: u32 = 1 << 10;
        /// TCIF5: transfer complete (NDTR reached 0 and reloaded).
        pub const TCIF: u32 = 1 << 11;
        /// Every flag of stream 5.
        pub const ALL: u32 = FEIF | DMEIF | TEIF | HTIF | TCIF;
    }
    /// USART_SR (RM0383 §19.6.1).
    pub mod sr {
        /// PE: parity error.
        pub const PE: u32 = 1 << 0;
        /// FE: framing error.
        pub const FE: u32 = 1 << 1;
        /// NF: noise detected.
        pub const NF: u32 = 1 << 2;
        /// ORE: overrun error.
        pub const ORE: u32 = 1 << 3;
        /// IDLE: idle line detected.
        pub const IDLE: u32 = 1 << 4;
        /// RXNE: read data register not empty.
        pub const RXNE: u32 = 1 << 5;
    }
    /// USART_CR1 (RM0383 §19.6.4).
    pub mod cr1 {
        /// IDLEIE: interrupt on IDLE.
        pub const IDLEIE: u32 = 1 << 4;
        /// RXNEIE: interrupt on RXNE (and ORE): off, the DMA takes the bytes.
        pub const RXNEIE: u32 = 1 << 5;
    }
    /// USART_CR3 (RM0383 §19.6.6).
    pub mod cr3 {
        /// EIE: interrupt on FE, ORE or NF when DMAR is set.
        pub const EIE: u32 = 1 << 0;
        /// DMAR: DMA enable receiver.
        pub const DMAR: u32 = 1 << 6;
    }
}

/// USART2_RX is DMA1 stream 5, channel 4 (RM0383 §9.3.3, table 27).
pub const USART2_RX_CHANNEL: u32 = 4;

/// Polls of EN after clearing it before giving up (RM0383 §9.3.17: a
/// stream being disabled reads EN = 1 until its current transfer ends).
const DISABLE_POLLS: u32 = 10_000;

/// The stream's control word: peripheral to memory, bytes, memory
/// increment, circular, high priority, interrupts on half, complete and
/// error; EN not set.
pub const fn stream_cr(channel: u32) -> u32 {
    use bits::cr::*;
    (channel << CHSEL_SHIFT)
        | PL_HIGH
        | PSIZE_MSIZE_BITS8
        | MINC
        | CIRC
        | DIR_PERIPHERAL_TO_MEMORY
        | TCIE
        | HTIE
        | TEIE
}

/// Start receiving into a ring of `len` bytes at `ring_addr` from the data
/// register at `dr_addr`, by the stream on `channel`, in the order of
/// RM0383 §9.3.17 (stream configuration) and §19.3.13 (reception using
/// DMA): stream off, flags cleared, addresses, count, control word, EN;
/// then DMAR and EIE in CR3, IDLEIE on and RXNEIE off in CR1. The USART
/// itself (baud, UE, RE) is set up already. Returns false if the stream
/// would not turn off.
pub fn start<R: Regs>(r: &mut R, channel: u32, dr_addr: u32, ring_addr: u32, len: u16) -> bool {
    use bits::*;
    r.write(Reg::DmaCr, 0);
    let mut polls = 0;
    while r.read(Reg::DmaCr) & cr::EN != 0 {
        polls += 1;
        if polls == DISABLE_POLLS {
            return false;
        }
    }
    r.write(Reg::DmaHifcr, hisr5::ALL);
    r.write(Reg::DmaPar, dr_addr);
    r.write(Reg::DmaM0ar, ring_addr);
    r.write(Reg::DmaNdtr, u32::from(len));
    // FIFO: left in direct mode, its reset state (DMA_SxFCR DMDIS = 0,
    // RM0383 §9.5.10): each byte goes to memory as it comes.
    let word = stream_cr(channel);
    r.write(Reg::DmaCr, word);
    r.write(Reg::DmaCr, word | cr::EN);
    let cr3 = r.read(Reg::UsartCr3);
    r.write(Reg::UsartCr3, cr3 | cr3::DMAR | cr3::EIE);
    let cr1 = r.read(Reg::UsartCr1);
    r.write(Reg::UsartCr1, (cr1 & !cr1::RXNEIE) | cr1::IDLEIE);
    true
}

/// What the stream's interrupt found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DmaEvents {
    /// Half and complete events (each one half of the ring written).
    pub halves: u32,
    /// A transfer error stopped the stream (TEIF, RM0383 §9.3.15).
    pub transfer_error: bool,
}

/// The stream's interrupt: read HISR, clear what was seen (HIFCR is
/// write-1-to-clear, so streams 6 and 7's flags are untouched), and say how
/// many halves were written. Run it above the engine's priority, so that
/// it never sees both flags for one event or misses one: the count must be
/// exact for [`RingReader`] to see a late consumer.
pub fn dma_events<R: Regs>(r: &mut R) -> DmaEvents {
    use bits::hisr5::*;
    let flags = r.read(Reg::DmaHisr) & ALL;
    if flags != 0 {
        r.write(Reg::DmaHifcr, flags);
    }
    DmaEvents {
        halves: u32::from(flags & HTIF != 0) + u32::from(flags & TCIF != 0),
        transfer_error: flags & TEIF != 0,
    }
}

/// What the USART's interrupt found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UsartEvents {
    /// The line went idle after a burst: bytes may wait in the ring.
    pub idle: bool,
    /// Receive errors: overrun, framing, noise, parity (one each).
    pub errors: u32,
}

/// The USART's interrupt: read SR; IDLE and the error flags are cleared by
/// a read of SR followed by a read of DR (RM0383 §19.6.1). When RXNE is
/// set, the DMA is about to read DR (it is served within nanoseconds), and
/// its read completes the sequence: reading DR here would take its byte.
pub fn usart_events<R: Regs>(r: &mut R) -> UsartEvents {
    use bits::sr::*;
    let sr = r.read(Reg::UsartSr);
    let errors = [ORE, FE, NF, PE].iter().filter(|&&f| sr & f != 0).count() as u32;
    if sr & (IDLE | ORE | FE | NF | PE) != 0 && sr & RXNE == 0 {
        let _ = r.read(Reg::UsartDr);
    }
    UsartEvents { idle: sr & IDLE != 0, errors }
}

/// Where the DMA is: the half events counted so far and NDTR, read in that
/// order (an event between the two reads is then seen in NDTR, and the
/// position is corrected for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Half and complete events counted ([`DmaEvents::halves`] summed,
    /// wrapping).
    pub halves: u32,
    /// DMA_SxNDTR: items left before the wrap (RM0383 §9.5.6: it counts
    /// down from the ring's length and, in circular mode, reloads).
    pub ndtr: u32,
}

/// The ring as the reader sees it.
pub trait RingSource {
    /// The DMA's position now: `halves` first, NDTR second.
    fn position(&mut self) -> Position;
    /// The ring's byte at `index` (a volatile read: the DMA writes it).
    fn byte(&mut self, index: usize) -> u8;
}

/// What [`RingReader::take`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// Nothing new.
    Empty,
    /// This many bytes, in order, at the start of the buffer.
    Bytes(usize),
    /// The consumer fell more than a ring behind (before or during the
    /// copy): this many bytes are not delivered, and reading goes on from
    /// where the DMA is now.
    Overrun {
        /// Bytes skipped.
        skipped: u32,
    },
}

/// The consumer's side of a DMA ring of `N` bytes (a power of two, so that
/// the wrapping absolute counts stay consistent with ring indices).
#[derive(Debug)]
pub struct RingReader<const N: usize> {
    /// Bytes taken so far (wrapping).
    read: u32,
    /// Overruns seen.
    overruns: u32,
}

impl<const N: usize> Default for RingReader<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> RingReader<N> {
    const VALID: () = assert!(N.is_power_of_two() && N >= 2 && N <= 32_768, "ring: a power of two");

    /// A reader at the start of a ring the DMA starts to fill now.
    pub const fn new() -> Self {
        let () = Self::VALID;
        Self { read: 0, overruns: 0 }
    }

    /// Overruns seen so far.
    pub fn overruns(&self) -> u32 {
        self.overruns
    }

    /// The DMA's absolute write count (wrapping) at `p`.
    pub fn written(p: Position) -> u32 {
        let n = N as u32;
        let half = n / 2;
        let w = (n - p.ndtr.min(n)) % n;
        let at = (p.halves / 2).wrapping_mul(n).wrapping_add(w);
        // An odd count (the first half written) with the DMA in the first
        // half: the complete event is not counted yet (it came after
        // `halves` was read, or its interrupt has not run yet), so the DMA
        // is a lap further. An even count with the DMA in the second half
        // is the same for the half event, and needs nothing.
        if p.halves % 2 == 1 && w < half {
            at.wrapping_add(n)
        } else {
            at
        }
    }

    /// Copy new bytes (at most `out.len()`) into `out`.
    pub fn take<S: RingSource>(&mut self, src: &mut S, out: &mut [u8]) -> Taken {
        let n = N as u32;
        let before = Self::written(src.position());
        let pending = before.wrapping_sub(self.read);
        if pending > n {
            return self.overrun(before);
        }
        let k = (pending as usize).min(out.len());
        if k == 0 {
            return Taken::Empty;
        }
        for (i, slot) in out[..k].iter_mut().enumerate() {
            *slot = src.byte((self.read as usize).wrapping_add(i) % N);
        }
        // The DMA went on meanwhile: had it written past `read + N`, the
        // first bytes copied were already the next lap's.
        let after = Self::written(src.position());
        if after.wrapping_sub(self.read) > n {
            return self.overrun(after);
        }
        self.read = self.read.wrapping_add(k as u32);
        Taken::Bytes(k)
    }

    fn overrun(&mut self, now: u32) -> Taken {
        let skipped = now.wrapping_sub(self.read);
        self.read = now;
        self.overruns = self.overruns.wrapping_add(1);
        Taken::Overrun { skipped }
    }

    /// Take everything new, in chunks of `buf`, handing each to `sink`;
    /// returns the overruns seen (each also counted in
    /// [`Self::overruns`]). Bounded: a DMA that keeps writing cannot hold
    /// the consumer for more than a few rings.
    pub fn drain<S: RingSource>(&mut self, src: &mut S, buf: &mut [u8], mut sink: impl FnMut(&[u8])) -> u32 {
        let mut overruns = 0;
        let rounds = 2 * N / buf.len().max(1) + 2;
        for _ in 0..rounds {
            match self.take(src, buf) {
                Taken::Empty => break,
                Taken::Bytes(k) => sink(&buf[..k]),
                Taken::Overrun { .. } => overruns += 1,
            }
        }
        overruns
    }
}

#[cfg(test)]
mod tests;
