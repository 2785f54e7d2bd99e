//! The Nucleo's register buses: the lib's [`Bus`] over the real TIM2, GPIOA,
//! GPIOB and USART1 TX (and [`Gpio`], GPIOA/GPIOB alone, for the boot's
//! park), `hostrx`'s over USART2 and DMA1 stream 5 with its ring, and the
//! IWDG for `board::nucleo::iwdg`, as volatile accesses at the offsets the
//! lib names (tested there against the PAC's layout).

use latprobe_firmware::board::nucleo::{Bus, GpioBus, GpioReg, Port, TimReg};
use stm32f4xx_hal::pac::{self, GPIOA, GPIOB, TIM2, TIM3, USART1};
use stm32f4xx_hal::serial::Tx;

/// TIM2 and TIM3 (owned), USART1's transmitter (owned) and the GPIO
/// registers of the lib's pins.
pub struct Regs {
    tim: TIM2,
    tim3: TIM3,
    target_tx: Tx<USART1>,
}

impl core::fmt::Debug for Regs {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Regs").finish_non_exhaustive()
    }
}

impl Regs {
    /// The bus over TIM2 and TIM3 (their clocks on) and USART1's
    /// transmitter.
    pub fn new(tim: TIM2, tim3: TIM3, target_tx: Tx<USART1>) -> Self {
        Self { tim, tim3, target_tx }
    }

    fn tim_addr(&self, reg: TimReg) -> *mut u32 {
        // `TimReg` offsets are inside the 0x400-byte TIM2 block (RM0383
        // §13.4.19), word-aligned.
        let base: *const stm32f4xx_hal::pac::tim2::RegisterBlock = &*self.tim;
        (base as usize + reg.offset()) as *mut u32
    }

    fn tim3_addr(&self, reg: TimReg) -> *mut u32 {
        // TIM3 has TIM2's register map (RM0383 §13.4.19, TIM2 to TIM5):
        // the same offsets, inside its own 0x400-byte block.
        let base: *const stm32f4xx_hal::pac::tim3::RegisterBlock = &*self.tim3;
        (base as usize + reg.offset()) as *mut u32
    }
}

fn gpio_addr(port: Port, reg: GpioReg) -> *mut u32 {
    let base = match port {
        Port::A => GPIOA::ptr() as usize,
        Port::B => GPIOB::ptr() as usize,
    };
    (base + reg.offset()) as *mut u32
}

/// GPIOA's and GPIOB's registers alone: the lib's pin set-up before the
/// timers are taken ([`gpio::park_outputs`](latprobe_firmware::board::nucleo::gpio::park_outputs)
/// in `init`), and [`Regs`]'s GPIO half.
pub struct Gpio;

impl GpioBus for Gpio {
    fn gpio_read(&mut self, port: Port, reg: GpioReg) -> u32 {
        // SAFETY: a word-aligned GPIO register (RM0383 §8.4.11 offsets); a
        // read has no side effect on these registers.
        unsafe { gpio_addr(port, reg).read_volatile() }
    }

    fn gpio_write(&mut self, port: Port, reg: GpioReg, value: u32) {
        // SAFETY: a word-aligned GPIO register. The HAL owns GPIOA/GPIOB's
        // pins but writes their configuration registers only in `init`,
        // between the lib's park and its pin set-up, before any interrupt
        // runs; after it, the lib writes BSRR (PA8, one atomic write that
        // touches no other pin) and PB10's PUPDR field in
        // `tx_wire_present`, under the timer's lock, and nothing else
        // writes GPIOB's PUPDR.
        unsafe { gpio_addr(port, reg).write_volatile(value) }
    }
}

impl GpioBus for Regs {
    fn gpio_read(&mut self, port: Port, reg: GpioReg) -> u32 {
        Gpio.gpio_read(port, reg)
    }

    fn gpio_write(&mut self, port: Port, reg: GpioReg, value: u32) {
        Gpio.gpio_write(port, reg, value)
    }
}

impl Bus for Regs {
    fn tim_read(&mut self, reg: TimReg) -> u32 {
        // SAFETY: a register of TIM2, which `self` owns; reads have no side
        // effect beyond what RM0383 says (CCRx clears CCxIF), which the lib
        // relies on.
        unsafe { self.tim_addr(reg).read_volatile() }
    }

    fn tim_write(&mut self, reg: TimReg, value: u32) {
        // SAFETY: a register of TIM2, which `self` owns (nothing else
        // writes it); the words are the lib's, tested against RM0383.
        unsafe { self.tim_addr(reg).write_volatile(value) }
    }

    fn tim3_read(&mut self, reg: TimReg) -> u32 {
        // SAFETY: a register of TIM3, which `self` owns; the lib reads CNT,
        // SR and DIER, which have no read side effect (RM0383 §13.4).
        unsafe { self.tim3_addr(reg).read_volatile() }
    }

    fn tim3_write(&mut self, reg: TimReg, value: u32) {
        // SAFETY: a register of TIM3, which `self` owns (nothing else
        // writes it); the words are the lib's, tested against RM0383 in the
        // register model.
        unsafe { self.tim3_addr(reg).write_volatile(value) }
    }

    fn usart1_write(&mut self, byte: u8) -> bool {
        use embedded_hal_nb::serial::Write as _;
        self.target_tx.write(byte).is_ok()
    }

    fn spin(&mut self, cycles: u32) {
        cortex_m::asm::delay(cycles);
    }
}

/// Host-link receive ring: 256 bytes are 2.78 ms at 921 600 Bd, against an
/// engine task (the consumer's priority) of at most ~100 µs.
pub(crate) const HOST_RING: usize = 256;

/// The ring DMA1 stream 5 writes: only the DMA writes it, the USART2 task
/// reads it with volatile reads.
pub(crate) struct DmaRing(pub(crate) core::cell::UnsafeCell<[u8; HOST_RING]>);
// SAFETY: the CPU only ever reads the ring (volatile, `HostRing::byte`);
// the one writer is the DMA, and `RingReader` discards what it overtook.
unsafe impl Sync for DmaRing {}
pub(crate) static HOST_RX_RING: DmaRing = DmaRing(core::cell::UnsafeCell::new([0; HOST_RING]));
/// Half/complete events of stream 5, counted at priority 3 (exact).
pub(crate) static HOST_RX_HALVES: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
/// Stream 5 transfer errors, counted at priority 3.
pub(crate) static HOST_RX_DMA_ERRORS: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

/// DMA1 stream 5's events on the host ring: the halves it filled counted
/// (`HostRing::position` reads them), a transfer error kept for the ring's
/// consumer, which the caller pends.
pub(crate) fn host_rx_dma_events() {
    use core::sync::atomic::Ordering;
    let ev = latprobe_firmware::hostrx::dma_events(&mut HostRxRegs);
    HOST_RX_HALVES.fetch_add(ev.halves, Ordering::Release);
    if ev.transfer_error {
        HOST_RX_DMA_ERRORS.fetch_add(1, Ordering::Relaxed);
    }
}

/// USART2 and DMA1 stream 5, for `latprobe_firmware::hostrx`.
pub(crate) struct HostRxRegs;

impl latprobe_firmware::hostrx::Regs for HostRxRegs {
    fn read(&mut self, reg: latprobe_firmware::hostrx::Reg) -> u32 {
        use latprobe_firmware::hostrx::Reg;
        // SAFETY: register reads; stream 5 and USART2's receive side belong
        // to the host-link receive path alone (stream 6 and DR writes are
        // the TX task's, HISR is read-only). DR is never read here: the
        // DMA's reads are the only ones (`UsartWatch`).
        let (dma, usart) = unsafe { (&*pac::DMA1::ptr(), &*pac::USART2::ptr()) };
        let st = dma.st(5);
        match reg {
            Reg::DmaCr => st.cr().read().bits(),
            Reg::DmaNdtr => st.ndtr().read().bits(),
            Reg::DmaPar => st.par().read().bits(),
            Reg::DmaM0ar => st.m0ar().read().bits(),
            Reg::DmaHisr => dma.hisr().read().bits(),
            Reg::DmaHifcr => 0,
            Reg::UsartSr => u32::from(usart.sr().read().bits()),
            // Never asked for: `UsartWatch` reads SR only (a CPU read of DR
            // could take a byte from the DMA), and `hostrx::start` reads no
            // DR. Answer 0 rather than take a byte.
            Reg::UsartDr => 0,
            Reg::UsartCr1 => u32::from(usart.cr1().read().bits()),
            Reg::UsartCr3 => u32::from(usart.cr3().read().bits()),
        }
    }

    fn write(&mut self, reg: latprobe_firmware::hostrx::Reg, v: u32) {
        use latprobe_firmware::hostrx::Reg;
        // SAFETY: as in `read`; HIFCR is write-1-to-clear, so a write of
        // stream 5's flags leaves stream 6's to the TX task. The values are
        // `hostrx`'s, checked against the PAC's fields in its tests.
        let (dma, usart) = unsafe { (&*pac::DMA1::ptr(), &*pac::USART2::ptr()) };
        let st = dma.st(5);
        // SAFETY (each `bits`): a whole register word of documented fields.
        if reg == Reg::DmaCr && v & latprobe_firmware::hostrx::bits::cr::EN != 0 {
            // Nothing the CPU did before may be moved past the enable by
            // the compiler (stm32f4xx-hal 0.23's dma/mod.rs fences the same
            // way). The ring is only the DMA's to write, and the hardware
            // keeps Device-memory stores in order (ARMv7-M ARM B2.1).
            core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        }
        match reg {
            Reg::DmaCr => drop(st.cr().write(|w| unsafe { w.bits(v) })),
            Reg::DmaNdtr => drop(st.ndtr().write(|w| unsafe { w.bits(v) })),
            Reg::DmaPar => drop(st.par().write(|w| unsafe { w.bits(v) })),
            Reg::DmaM0ar => drop(st.m0ar().write(|w| unsafe { w.bits(v) })),
            Reg::DmaHifcr => drop(dma.hifcr().write(|w| unsafe { w.bits(v) })),
            Reg::UsartCr1 => drop(usart.cr1().write(|w| unsafe { w.bits(v as u16) })),
            Reg::UsartCr3 => drop(usart.cr3().write(|w| unsafe { w.bits(v as u16) })),
            Reg::DmaHisr | Reg::UsartSr | Reg::UsartDr => {}
        }
    }
}

/// The ring as its reader sees it.
pub(crate) struct HostRing;

impl latprobe_firmware::hostrx::RingSource for HostRing {
    fn position(&mut self) -> latprobe_firmware::hostrx::Position {
        use latprobe_firmware::hostrx::{Position, Reg, Regs as _};
        // The event count first, NDTR second (`hostrx::Position`).
        let halves = HOST_RX_HALVES.load(core::sync::atomic::Ordering::Acquire);
        Position { halves, ndtr: HostRxRegs.read(Reg::DmaNdtr) }
    }

    fn byte(&mut self, index: usize) -> u8 {
        // SAFETY: `index < HOST_RING` (the reader takes it modulo the
        // ring); a volatile read of memory the DMA may be writing, whose
        // value the reader discards if the DMA overtook it.
        unsafe { core::ptr::read_volatile(HOST_RX_RING.0.get().cast::<u8>().add(index % HOST_RING)) }
    }
}

/// The IWDG, for `board::nucleo::iwdg::start` and the feed.
pub(crate) struct Iwdg;

impl latprobe_firmware::board::nucleo::iwdg::IwdgRegs for Iwdg {
    fn kr(&mut self, key: u32) {
        // SAFETY: the IWDG is this driver's alone (init starts it, the
        // engine task feeds it); KR takes any 16-bit key, and the lib's
        // are RM0383 §17.4.1's (checked against the HAL's in its docs).
        unsafe { (*pac::IWDG::ptr()).kr().write(|w| w.bits(key as u16)) };
    }

    fn pr(&mut self, pr: u32) {
        // SAFETY: as in `kr`; PR's 3 bits (§17.4.2), checked by the lib's
        // tests against the PAC's field.
        unsafe { (*pac::IWDG::ptr()).pr().write(|w| w.bits(pr as u16)) };
    }

    fn rlr(&mut self, rlr: u32) {
        // SAFETY: as in `kr`; RLR's 12 bits (§17.4.3).
        unsafe { (*pac::IWDG::ptr()).rlr().write(|w| w.bits(rlr as u16)) };
    }

    fn sr(&mut self) -> u32 {
        // SAFETY: a read of IWDG_SR has no side effect (§17.4.4).
        u32::from(unsafe { (*pac::IWDG::ptr()).sr().read().bits() })
    }
}
