//! The Nucleo's register bus: the lib's [`Bus`] over the real TIM2, GPIOA,
//! GPIOB and USART1 TX, as volatile word accesses at the offsets the lib
//! names (tested there against the PAC's layout).

use latprobe_firmware::board::nucleo::{Bus, GpioBus, GpioReg, Port, TimReg};
use stm32f4xx_hal::pac::{GPIOA, GPIOB, TIM2, USART1};
use stm32f4xx_hal::serial::Tx;

/// TIM2 (owned), USART1's transmitter (owned) and the GPIO registers of
/// the lib's pins.
pub struct Regs {
    tim: TIM2,
    target_tx: Tx<USART1>,
}

impl core::fmt::Debug for Regs {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Regs").finish_non_exhaustive()
    }
}

impl Regs {
    /// The bus over TIM2 (its clock on) and USART1's transmitter.
    pub fn new(tim: TIM2, target_tx: Tx<USART1>) -> Self {
        Self { tim, target_tx }
    }

    fn tim_addr(&self, reg: TimReg) -> *mut u32 {
        // `TimReg` offsets are inside the 0x400-byte TIM2 block (RM0383
        // §13.4.19), word-aligned.
        let base: *const stm32f4xx_hal::pac::tim2::RegisterBlock = &*self.tim;
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

impl GpioBus for Regs {
    fn gpio_read(&mut self, port: Port, reg: GpioReg) -> u32 {
        // SAFETY: a word-aligned GPIO register (RM0383 §8.4.11 offsets); a
        // read has no side effect on these registers.
        unsafe { gpio_addr(port, reg).read_volatile() }
    }

    fn gpio_write(&mut self, port: Port, reg: GpioReg, value: u32) {
        // SAFETY: a word-aligned GPIO register. The HAL owns GPIOA/GPIOB's
        // pins but writes their configuration registers only in `init`,
        // before the lib's pin set-up and before any interrupt runs; after
        // it, the lib writes BSRR (PA8, one atomic write that touches no
        // other pin) and PB10's PUPDR field in `tx_wire_present`, under the
        // timer's lock, and nothing else writes GPIOB's PUPDR.
        unsafe { gpio_addr(port, reg).write_volatile(value) }
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

    fn usart1_write(&mut self, byte: u8) -> bool {
        use embedded_hal_nb::serial::Write as _;
        self.target_tx.write(byte).is_ok()
    }

    fn spin(&mut self, cycles: u32) {
        cortex_m::asm::delay(cycles);
    }
}
