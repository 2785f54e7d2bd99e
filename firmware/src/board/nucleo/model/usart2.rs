//! USART2's receiver and DMA1 stream 5 as the host link uses them (RM0383
//! §19.3.4, §19.6.1, §9.3.10), down to the order of bus accesses: a byte
//! can complete between two of the CPU's register accesses, and the DMA
//! answers its request only after the access under way. That is the race
//! of an SR-then-DR clear: a byte whose RXNE rises between the CPU's read
//! of SR and its read of DR is taken by the CPU's read, not the DMA's.
//!
//! - RXNE at a byte's stop bit; a byte while RXNE is set sets ORE and is
//!   lost in the shift register.
//! - IDLE once the line stays idle a frame after a byte (not again until
//!   RXNE was set again).
//! - IDLE, ORE, FE, NF and PE are cleared by a read of SR followed by a
//!   read of DR: by any bus master, the DMA's read of DR included.
//! - The DMA (DMAR and EN set) reads DR on RXNE into the ring, counting
//!   NDTR down and reloading it (circular).

use std::vec::Vec;

use crate::hostrx::{bits, Reg, Regs};

/// The chip's receive side, and what happened to each byte.
#[derive(Debug)]
pub struct Usart2 {
    dr: u8,
    rxne: bool,
    /// Flags cleared by SR then DR: IDLE, ORE, FE, NF, PE (SR bit layout).
    flags: u32,
    /// A byte came since the last IDLE.
    idle_armed: bool,
    /// SR was read and no DR read since: the next DR read clears `flags`.
    sr_read: bool,
    pub cr1: u32,
    pub cr3: u32,
    cr: u32,
    ndtr: u32,
    reload: u32,
    /// The ring, in order of the DMA's writes (no wrap needed here).
    pub ring: Vec<u8>,
    /// Bytes the CPU took out of DR before the DMA could (lost to the
    /// ring, counted by no one).
    pub stolen: Vec<u8>,
    /// Bytes lost to an overrun.
    pub overrun: usize,
    /// CPU register accesses so far.
    pub accesses: usize,
    /// A byte that completes just before CPU access number `.0`.
    pub arrive_before: Option<(usize, u8)>,
}

impl Default for Usart2 {
    fn default() -> Self {
        Self::new()
    }
}

impl Usart2 {
    /// Reset values, with UE, TE and RE set as the HAL leaves them.
    pub fn new() -> Self {
        Self {
            dr: 0,
            rxne: false,
            flags: 0,
            idle_armed: false,
            sr_read: false,
            cr1: (1 << 13) | (1 << 3) | (1 << 2),
            cr3: 0,
            cr: 0,
            ndtr: 0,
            reload: 0,
            ring: Vec::new(),
            stolen: Vec::new(),
            overrun: 0,
            accesses: 0,
            arrive_before: None,
        }
    }

    /// A byte's stop bit: RXNE (or ORE), then the DMA's read.
    pub fn arrive(&mut self, b: u8) {
        self.complete(b);
        self.serve_dma();
    }

    fn complete(&mut self, b: u8) {
        if self.rxne {
            self.flags |= bits::sr::ORE;
            self.overrun += 1;
        } else {
            self.dr = b;
            self.rxne = true;
        }
        self.idle_armed = true;
    }

    /// The line stayed idle a frame after the last byte.
    pub fn line_idle(&mut self) {
        if self.idle_armed {
            self.flags |= bits::sr::IDLE;
            self.idle_armed = false;
        }
    }

    /// A framing error on the byte now in DR (FE rises with RXNE).
    pub fn framing_error(&mut self, b: u8) {
        self.flags |= bits::sr::FE;
        self.arrive(b);
    }

    /// A read of DR by any master: takes the byte, completes a clear.
    fn read_dr(&mut self) -> u8 {
        self.rxne = false;
        if self.sr_read {
            self.flags = 0;
        }
        self.sr_read = false;
        self.dr
    }

    fn serve_dma(&mut self) {
        let on = self.cr & bits::cr::EN != 0 && self.cr3 & bits::cr3::DMAR != 0;
        if on && self.rxne {
            let b = self.read_dr();
            self.ring.push(b);
            self.ndtr -= 1;
            if self.ndtr == 0 {
                self.ndtr = self.reload;
            }
        }
    }

    /// USART2's interrupt line (RM0383 §19.4, figure 173).
    pub fn irq_pending(&self) -> bool {
        (self.cr1 & bits::cr1::IDLEIE != 0 && self.flags & bits::sr::IDLE != 0)
            || (self.cr1 & bits::cr1::RXNEIE != 0 && self.rxne)
            || (self.cr3 & bits::cr3::EIE != 0
                && self.cr3 & bits::cr3::DMAR != 0
                && self.flags & (bits::sr::ORE | bits::sr::FE | bits::sr::NF) != 0)
    }

    /// IDLE is up.
    pub fn idle(&self) -> bool {
        self.flags & bits::sr::IDLE != 0
    }

    /// Before a CPU access: the byte scheduled for it completes now.
    fn before_access(&mut self) {
        if let Some((at, b)) = self.arrive_before {
            if at == self.accesses {
                self.arrive_before = None;
                self.complete(b);
            }
        }
        self.accesses += 1;
    }
}

impl Regs for Usart2 {
    fn read(&mut self, reg: Reg) -> u32 {
        self.before_access();
        let v = match reg {
            Reg::UsartSr => {
                self.sr_read = true;
                self.flags | if self.rxne { bits::sr::RXNE } else { 0 }
            }
            Reg::UsartDr => {
                let was = self.rxne;
                let b = self.read_dr();
                if was {
                    self.stolen.push(b);
                }
                u32::from(b)
            }
            Reg::UsartCr1 => self.cr1,
            Reg::UsartCr3 => self.cr3,
            Reg::DmaCr => self.cr,
            Reg::DmaNdtr => self.ndtr,
            Reg::DmaHisr | Reg::DmaPar | Reg::DmaM0ar | Reg::DmaHifcr => 0,
        };
        // The DMA's request is served once the bus is free.
        self.serve_dma();
        v
    }

    fn write(&mut self, reg: Reg, value: u32) {
        self.before_access();
        match reg {
            Reg::UsartCr1 => self.cr1 = value,
            Reg::UsartCr3 => self.cr3 = value,
            Reg::DmaCr => self.cr = value,
            Reg::DmaNdtr => {
                self.ndtr = value;
                self.reload = value;
            }
            _ => {}
        }
        self.serve_dma();
    }
}
