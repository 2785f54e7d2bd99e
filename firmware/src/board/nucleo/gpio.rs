//! The Nucleo's measurement pins, set up by register writes (RM0383 §8.4):
//! mode, output type, speed, pull and alternate function of each, every
//! other pin of the port left as it was. The alternate function numbers
//! are DS10314's (STM32F411xC/E datasheet, table 9), as in stm32f4xx-hal
//! 0.23's pin map (`gpio/alt/f4.rs`: TIM2 CH1/CH2/CH3 on PA0/PA1/PB10 at
//! AF1, USART1 TX/RX on PA9/PA10 at AF7, TIM3 CH1 on PB4 at AF2).
//!
//! ```text
//!   PA0  TIM2_CH1  AF1  push-pull, very high speed   stimulus edge
//!   PA1  TIM2_CH2  AF1  pull-up                      response line
//!   PA8  output         push-pull, very high speed   scope trigger, starts low
//!   PA9  USART1_TX AF7  push-pull, very high speed   target line TX
//!   PA10 USART1_RX AF7  pull-up                      target line RX
//!   PB4  TIM3_CH1  AF2  push-pull, very high speed   trigger output (--trigger-above), idles low
//!   PB10 TIM2_CH3  AF1  pull-up                      TX start-bit wire (from PA9)
//! ```
//!
//! PB4 is NJTRST after reset (AF0, pull-up; RM0383 §8.3.2, §8.4.1, §8.4.4
//! reset values of GPIOB). The ST-LINK on the Nucleo uses SWD only
//! (PA13/PA14), so PB4 is free once it is TIM3_CH1, and its pull-up is
//! taken off: the timer drives it push-pull.
//!
//! Parked first ([`park_outputs`]): at reset PB4 is NJTRST with its
//! pull-up on, and PA0, PA8 and PA9 are floating inputs (RM0383 §8.3.1,
//! §8.4.1, §8.4.4 reset values); `init` waits up to 0.5 s for the HSE
//! before the pins get their functions, and a target input wired to PB4
//! would see its trigger high, PA0's and PA9's float. So the first thing
//! `init` does is drive them at their idle levels as plain outputs;
//! [`configure_pins`] later hands them to their timers and USART.
//!
//! Very high speed (OSPEEDR = 11) on the outputs: the HAL's
//! `into_alternate` leaves them at the reset speed (00, low), whose slow
//! edges depend on the load of the bench wire. Pull-ups on the inputs: a
//! UART line idles high, and an unwired PB10 (next to PA8 on the header)
//! must not float.

use super::{GpioBus, GpioReg, Port};

/// MODER (§8.4.1), two bits a pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// 01: general-purpose output.
    Output = 0b01,
    /// 10: alternate function.
    Alternate = 0b10,
}

/// OSPEEDR (§8.4.3), two bits a pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speed {
    /// 00: low speed (reset value; an input's speed does not matter).
    Low = 0b00,
    /// 11: very high speed.
    VeryHigh = 0b11,
}

/// PUPDR (§8.4.4), two bits a pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pull {
    /// 00: no pull (a pin driven push-pull).
    None = 0b00,
    /// 01: pull-up.
    Up = 0b01,
}

/// One pin's set-up. Output type is push-pull (OTYPER = 0, §8.4.2) for all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinConfig {
    /// Port.
    pub port: Port,
    /// Pin number, 0 to 15.
    pub pin: u8,
    /// Mode.
    pub mode: Mode,
    /// Alternate function number (AFRL/AFRH, §8.4.9, §8.4.10); 0 when the
    /// mode is not alternate.
    pub af: u8,
    /// Output speed.
    pub speed: Speed,
    /// Pull.
    pub pull: Pull,
}

const fn pin(port: Port, pin: u8, mode: Mode, af: u8, speed: Speed, pull: Pull) -> PinConfig {
    PinConfig { port, pin, mode, af, speed, pull }
}

/// The pins this layer owns (module table).
pub const PINS: [PinConfig; 7] = [
    pin(Port::A, 0, Mode::Alternate, 1, Speed::VeryHigh, Pull::None),
    pin(Port::A, 1, Mode::Alternate, 1, Speed::Low, Pull::Up),
    pin(Port::A, 8, Mode::Output, 0, Speed::VeryHigh, Pull::None),
    pin(Port::A, 9, Mode::Alternate, 7, Speed::VeryHigh, Pull::None),
    pin(Port::A, 10, Mode::Alternate, 7, Speed::Low, Pull::Up),
    pin(Port::B, 4, Mode::Alternate, 2, Speed::VeryHigh, Pull::None),
    pin(Port::B, 10, Mode::Alternate, 1, Speed::Low, Pull::Up),
];

/// Read `reg`, set `bits`-wide fields of the pins of `port` from `field`,
/// write it back.
fn update<G: GpioBus>(
    g: &mut G,
    port: Port,
    reg: GpioReg,
    bits: u32,
    field: impl Fn(&PinConfig) -> Option<(u32, u32)>,
) {
    let mut v = g.gpio_read(port, reg);
    for p in PINS.iter().filter(|p| p.port == port) {
        if let Some((index, value)) = field(p) {
            let mask = (1u32 << bits) - 1;
            v = (v & !(mask << (bits * index))) | (value & mask) << (bits * index);
        }
    }
    g.gpio_write(port, reg, v);
}

/// Set up [`PINS`]. Call after the HAL built USART1 (which muxes PA9 and
/// PA10 at low speed, no pull), so that the state left is this one. The
/// ports' clocks must be on (RCC_AHB1ENR).
///
/// Order (RM0383 §8.3.2): output type, speed, pull and alternate function
/// first, the mode last, so that a pin switches straight to its final
/// function; PA8's output is set low before it becomes an output.
pub fn configure_pins<G: GpioBus>(g: &mut G) {
    g.gpio_write(Port::A, GpioReg::Bsrr, 1 << (8 + 16));
    for port in [Port::A, Port::B] {
        update(g, port, GpioReg::Otyper, 1, |p| Some((u32::from(p.pin), 0)));
        update(g, port, GpioReg::Ospeedr, 2, |p| Some((u32::from(p.pin), p.speed as u32)));
        update(g, port, GpioReg::Pupdr, 2, |p| Some((u32::from(p.pin), p.pull as u32)));
        update(g, port, GpioReg::Afrl, 4, |p| (p.pin < 8).then(|| (u32::from(p.pin), u32::from(p.af))));
        update(g, port, GpioReg::Afrh, 4, |p| (p.pin >= 8).then(|| (u32::from(p.pin - 8), u32::from(p.af))));
        update(g, port, GpioReg::Moder, 2, |p| Some((u32::from(p.pin), p.mode as u32)));
    }
}

/// The outputs parked at boot, and the level each is driven at: its idle
/// level (the trigger low as the README says it idles, the UART line
/// high, the stimulus and the scope marker low).
pub const PARKED: [(Port, u8, bool); 4] =
    [(Port::A, 0, false), (Port::A, 8, false), (Port::A, 9, true), (Port::B, 4, false)];

/// Drive the outputs at their idle levels ([`PARKED`]) as push-pull
/// general-purpose outputs with no pull, every other pin left as it was.
/// Call first thing after reset, as soon as the ports' clocks are on
/// (RCC_AHB1ENR, RM0383 §6.3.9) and before any wait.
///
/// Order (RM0383 §8.3.1, §8.4.7): the output level first through BSRR
/// (the output data register drives the pin only once MODER makes it an
/// output), then output type (§8.4.2) and pull (§8.4.4), the mode
/// (§8.4.1) last, so that each pin goes from its reset state straight
/// to its idle level: never high for the trigger, never a start bit on
/// the UART line. stm32f4xx-hal 0.23's `into_push_pull_output_in_state`
/// (gpio/convert.rs) keeps the same order: the level, then OTYPER, then
/// MODER. Speed stays at its reset value (low, §8.4.3) until
/// [`configure_pins`]: nothing switches here.
pub fn park_outputs<G: GpioBus>(g: &mut G) {
    for port in [Port::A, Port::B] {
        let pins = || PARKED.iter().filter(move |p| p.0 == port);
        let (set, reset) =
            pins().fold(
                (0u32, 0u32),
                |(s, r), &(_, n, high)| {
                    if high {
                        (s | 1 << n, r)
                    } else {
                        (s, r | 1 << (n + 16))
                    }
                },
            );
        g.gpio_write(port, GpioReg::Bsrr, set | reset);
        let fields = |reg: GpioReg, value: u32, g: &mut G| {
            let mut v = g.gpio_read(port, reg);
            for &(_, n, _) in pins() {
                let bits = if reg == GpioReg::Otyper { 1 } else { 2 };
                let shift = bits * u32::from(n);
                v = (v & !(((1 << bits) - 1) << shift)) | value << shift;
            }
            g.gpio_write(port, reg, v);
        };
        fields(GpioReg::Otyper, 0, g);
        fields(GpioReg::Pupdr, Pull::None as u32, g);
        fields(GpioReg::Moder, Mode::Output as u32, g);
    }
}
