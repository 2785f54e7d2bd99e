//! The Nucleo-F411RE's register layer: TIM2 as the capture loop's
//! [`TimerHw`](crate::hwloop::seam::TimerHw) ([`Tim2`]), with TIM3 as its
//! 16-bit slave for the trigger output (PB4), the pin set-up
//! ([`gpio`]) and the check of the clock tree read back after the HAL set
//! it ([`rcc`]). References are to RM0383 (STM32F411 reference manual).
//!
//! ```text
//!   bin (RTIC, HAL)                      lib (this module, host-tested)
//!   Regs: TIM2, GPIOA/B, USART1 TX ──▶ Bus / GpioBus ──▶ Tim2<B>: TimerHw ──▶ hwloop
//!                                                      gpio::configure_pins
//!   RCC_CFGR/PLLCFGR/DCKCFGR ─────────────────────────▶ rcc::decode
//!   tests: model::Model (TIM2 + GPIO + USART1 TX + a target, RM0383 semantics)
//! ```
//!
//! Every register is named by its offset in its block ([`TimReg`],
//! [`GpioReg`]); the tests check those offsets and every word written
//! against the stm32f4 PAC's field readers (bit positions from ST's SVD,
//! not from this code).

pub mod gpio;
pub mod iwdg;
pub mod rcc;
pub mod tim2;
pub mod usart2;

#[cfg(test)]
mod model;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_boot;

pub use tim2::Tim2;

/// A register map: an enum of a block's registers, each by its byte
/// offset, with `offset()`. TIM2's and GPIO's maps share this one
/// definition (derives, `repr`, `offset`); only their registers differ.
macro_rules! register_map {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $off:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        #[repr(u8)]
        pub enum $name {
            $($(#[$vmeta])* $variant = $off,)*
        }

        impl $name {
            /// Byte offset in the register block.
            pub const fn offset(self) -> usize {
                self as usize
            }
        }
    };
}

register_map! {
    /// A TIM2 register the driver uses, by its byte offset (RM0383 §13.4.19,
    /// TIM2 to TIM5 register map). TIM3 has the same map (TIM2 to TIM5
    /// share it; its CNT, ARR and CCRx are 16 bits wide), so the trigger
    /// timer's registers are named by it too.
    pub enum TimReg {
        /// Control register 1 (§13.4.1).
        Cr1 = 0x00,
        /// Control register 2 (§13.4.2): MMS, what TRGO carries.
        Cr2 = 0x04,
        /// Slave mode control register (§13.4.3): SMS, TS, MSM.
        Smcr = 0x08,
        /// DMA/interrupt enable register (§13.4.4).
        Dier = 0x0C,
        /// Status register (§13.4.5).
        Sr = 0x10,
        /// Event generation register (§13.4.6).
        Egr = 0x14,
        /// Capture/compare mode register 1, CH1 and CH2 (§13.4.7).
        Ccmr1 = 0x18,
        /// Capture/compare mode register 2, CH3 and CH4 (§13.4.8).
        Ccmr2 = 0x1C,
        /// Capture/compare enable register (§13.4.9).
        Ccer = 0x20,
        /// Counter (§13.4.10).
        Cnt = 0x24,
        /// Prescaler (§13.4.11).
        Psc = 0x28,
        /// Auto-reload register (§13.4.12).
        Arr = 0x2C,
        /// Capture/compare register 1 (§13.4.13).
        Ccr1 = 0x34,
        /// Capture/compare register 2 (§13.4.14).
        Ccr2 = 0x38,
        /// Capture/compare register 3 (§13.4.15).
        Ccr3 = 0x3C,
        /// Capture/compare register 4 (§13.4.16).
        Ccr4 = 0x40,
    }
}

impl TimReg {
    /// CCRn, n in 1..=4.
    pub const fn ccr(n: u8) -> Self {
        match n {
            1 => Self::Ccr1,
            2 => Self::Ccr2,
            3 => Self::Ccr3,
            _ => Self::Ccr4,
        }
    }
}

/// A GPIO port the board layer touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Port {
    /// GPIOA.
    A,
    /// GPIOB.
    B,
}

register_map! {
    /// A GPIO register, by its byte offset (RM0383 §8.4.11, GPIO register map).
    pub enum GpioReg {
        /// Port mode register (§8.4.1).
        Moder = 0x00,
        /// Output type register (§8.4.2).
        Otyper = 0x04,
        /// Output speed register (§8.4.3).
        Ospeedr = 0x08,
        /// Pull-up/pull-down register (§8.4.4).
        Pupdr = 0x0C,
        /// Input data register (§8.4.5).
        Idr = 0x10,
        /// Bit set/reset register (§8.4.7).
        Bsrr = 0x18,
        /// Alternate function low register, pins 0 to 7 (§8.4.9).
        Afrl = 0x20,
        /// Alternate function high register, pins 8 to 15 (§8.4.10).
        Afrh = 0x24,
    }
}

/// 32-bit accesses to the GPIO registers of ports A and B.
pub trait GpioBus {
    /// Read `reg` of `port`.
    fn gpio_read(&mut self, port: Port, reg: GpioReg) -> u32;
    /// Write `value` to `reg` of `port`.
    fn gpio_write(&mut self, port: Port, reg: GpioReg, value: u32);
}

/// Everything [`Tim2`] touches: TIM2's registers, TIM3's (the trigger
/// output, docs/dev/trigger.md), the GPIO registers (PA0 level, PA8 marker,
/// PB10 pull, PB4 level), the target line's transmitter and a bounded busy
/// wait.
pub trait Bus: GpioBus {
    /// Read a TIM2 register (one bus access; reading CCRx of a capture
    /// channel clears its CCxIF).
    fn tim_read(&mut self, reg: TimReg) -> u32;
    /// Write a TIM2 register.
    fn tim_write(&mut self, reg: TimReg, value: u32);
    /// Read a TIM3 register (one bus access).
    fn tim3_read(&mut self, reg: TimReg) -> u32;
    /// Write a TIM3 register.
    fn tim3_write(&mut self, reg: TimReg, value: u32);
    /// Put one byte into USART1's data register if it has room (TXE),
    /// without waiting; `false` if it has none.
    fn usart1_write(&mut self, byte: u8) -> bool;
    /// Busy-wait about `cycles` core cycles (no timer involved).
    fn spin(&mut self, cycles: u32);
}
