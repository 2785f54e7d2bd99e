//! The host link's USART2 interrupt without a CPU read of DR: the IDLE
//! flag (a burst ended) and the error flags watched, and cleared by the
//! DMA's own reads.
//!
//! Why: IDLE, ORE, FE, NF and PE are cleared by a read of USART_SR
//! followed by a read of USART_DR (RM0383 §19.6.1), and stm32f4xx-hal
//! 0.23's `clear_idle_interrupt` does just that. With DMA1 stream 5 taking
//! every byte out of DR, a byte whose RXNE rises between the CPU's two
//! reads is taken by the CPU's read of DR: the DMA never sees it, the ring
//! misses it, and nothing counts it. No register tells afterwards whether
//! that read took a new byte.
//!
//! So the CPU reads SR only. The DMA's next read of DR (the next byte)
//! completes the sequence and clears the flags. Until then a flag stays
//! set, and its interrupt would fire again at once: so the watch turns
//! IDLEIE (CR1, §19.6.4) and EIE (CR3, §19.6.6) off when it sees a flag
//! up, and on again at the first pass that sees every flag clear. The
//! ring's consumer runs it on every pass: on USART2's interrupt, on the
//! stream's half and complete events, and at every SysTick (1 ms), which
//! also takes whatever a burst left in the ring while the watch was off.
//! A byte is never lost to the watch; what it costs is the wake-up of a
//! burst that ends while it is off (at most a SysTick period). Should a
//! DMA read not clear the flags on some silicon, the watch stays off and
//! the SysTick pass still takes every byte (an error flag that then stays
//! up is counted again at each pass that finds new bytes).
//!
//! ```text
//!   armed ──SR shows IDLE/ORE/FE/NF/PE──▶ off (IDLEIE, EIE cleared; errors counted)
//!     ▲                                    │
//!     └──── a pass sees SR's flags clear ◀─┘ (the DMA's read of DR cleared them)
//! ```

use crate::hostrx::{bits, Reg, Regs, UsartEvents};

/// The flags that a read of SR then DR clears, and that raise USART2's
/// interrupt through IDLEIE or EIE.
const WATCHED: u32 = bits::sr::IDLE | bits::sr::ORE | bits::sr::FE | bits::sr::NF | bits::sr::PE;
const ERRORS: [u32; 4] = [bits::sr::ORE, bits::sr::FE, bits::sr::NF, bits::sr::PE];

/// The watch over USART2's receive flags (module docs).
#[derive(Debug, Default)]
pub struct UsartWatch {
    /// The flags seen up at the last pass (each error counted once while
    /// it stays up); 0: IDLEIE and EIE are on.
    seen: u32,
    /// DMA_SxNDTR at the last pass: an IDLE still up with NDTR moved since
    /// is a new one (the DMA's first read after that pass cleared the old).
    ndtr: u32,
}

impl UsartWatch {
    /// A watch over a USART whose IDLEIE and EIE `hostrx::start` turned on.
    pub const fn new() -> Self {
        Self { seen: 0, ndtr: 0 }
    }

    /// Whether IDLEIE and EIE are on.
    pub fn armed(&self) -> bool {
        self.seen == 0
    }

    /// One pass: read SR (never DR), count the errors newly up, and turn
    /// the interrupts off while a flag is up, on once all are clear.
    pub fn poll<R: Regs>(&mut self, r: &mut R) -> UsartEvents {
        let flags = r.read(Reg::UsartSr) & WATCHED;
        let ndtr = r.read(Reg::DmaNdtr);
        let moved = core::mem::replace(&mut self.ndtr, ndtr) != ndtr;
        // Bytes came since the last pass: the flags up now rose since.
        let new = if moved { flags } else { flags & !self.seen };
        let errors = ERRORS.iter().filter(|&&f| new & f != 0).count() as u32;
        match (self.seen == 0, flags == 0) {
            (true, false) => self.set_interrupts(r, false),
            (false, true) => self.set_interrupts(r, true),
            _ => {}
        }
        self.seen = flags;
        UsartEvents { idle: new & bits::sr::IDLE != 0, errors }
    }

    /// IDLEIE (RM0383 §19.6.4) and EIE (§19.6.6) on or off, every other
    /// bit kept.
    fn set_interrupts<R: Regs>(&mut self, r: &mut R, on: bool) {
        let cr1 = r.read(Reg::UsartCr1) & !bits::cr1::IDLEIE;
        r.write(Reg::UsartCr1, if on { cr1 | bits::cr1::IDLEIE } else { cr1 });
        let cr3 = r.read(Reg::UsartCr3) & !bits::cr3::EIE;
        r.write(Reg::UsartCr3, if on { cr3 | bits::cr3::EIE } else { cr3 });
    }
}
