//! The Pico's pads as the probe needs them: drive, slew, pulls and Schmitt
//! for every pin it uses (PADS_BANK0 GPIOx, RP2040 datasheet §2.19.4 and
//! §2.19.6.3), written once at boot by the binary; the rp2040js end-to-end tests read
//! the words back.
//!
//! Out of reset a pad is 4 mA with slow slew, a pull-down and the Schmitt
//! trigger on (0x56). A stimulus edge at 4 mA slow slew rises in some ns
//! that depend on the wire's load, so a loopback calibration would not
//! carry over to a target's input; at 12 mA fast slew the edge is as quick
//! as the pad makes it. Lines that idle high (the UARTs) get a pull-up, so
//! an unwired input reads idle rather than a break.

/// Drive strength (DRIVE, bits 5:4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drive {
    /// 2 mA.
    Ma2 = 0,
    /// 4 mA (reset).
    Ma4 = 1,
    /// 8 mA.
    Ma8 = 2,
    /// 12 mA.
    Ma12 = 3,
}

/// The pad's pull (PUE bit 3, PDE bit 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pull {
    /// Neither.
    None,
    /// Pull-up (about 50 kΩ, §2.19.4).
    Up,
    /// Pull-down (reset).
    Down,
}

/// One pad's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pad {
    /// GPIO number in bank 0.
    pub pin: u8,
    /// Output drive.
    pub drive: Drive,
    /// Fast slew (SLEWFAST, bit 0).
    pub slew_fast: bool,
    /// Pull.
    pub pull: Pull,
    /// Schmitt trigger on the input (SCHMITT, bit 1).
    pub schmitt: bool,
}

impl Pad {
    /// The PADS_BANK0 GPIOx word: input enabled (IE, bit 6: PIO and the
    /// UARTs read the pad), output not disabled (OD, bit 7, clear).
    pub const fn word(&self) -> u32 {
        let pull = match self.pull {
            Pull::None => 0,
            Pull::Up => 1 << 3,
            Pull::Down => 1 << 2,
        };
        (1 << 6) | ((self.drive as u32) << 4) | pull | ((self.schmitt as u32) << 1) | self.slew_fast as u32
    }
}

/// An output whose edge is measured: strongest drive, fastest slew. The
/// pull-down holds the line low (the idle level of GP2 and GP6) while PIO
/// does not drive it.
const fn timed_output(pin: u8) -> Pad {
    Pad { pin, drive: Drive::Ma12, slew_fast: true, pull: Pull::Down, schmitt: true }
}

/// A UART line: it idles high, so pulled up; an input's Schmitt trigger
/// gives a clean edge to PIO's and the UART's samplers.
const fn uart_line(pin: u8, drive: Drive, slew_fast: bool) -> Pad {
    Pad { pin, drive, slew_fast, pull: Pull::Up, schmitt: true }
}

/// Every pad the probe uses (main.rs's pin table).
pub const PADS: [Pad; 8] = [
    // GP0/GP1: UART0, the host link through a debug probe's bridge. Not
    // timed: reset drive and slew.
    uart_line(0, Drive::Ma4, false),
    uart_line(1, Drive::Ma4, false),
    // GP2: the stimulus edge (PIO0 SM3).
    timed_output(2),
    // GP3: the response input, pulled down as the README wires it (a
    // target that is not connected reads low, no edges).
    Pad { pin: 3, drive: Drive::Ma4, slew_fast: false, pull: Pull::Down, schmitt: true },
    // GP4: UART1 TX, the stimulus byte; its start bit is timed by PIO0 SM2
    // at the pad, so it is driven like the stimulus edge.
    uart_line(4, Drive::Ma12, true),
    // GP5: UART1 RX, the target's answer (it idled low on the HAL's
    // pull-down before: a break until the target drives it).
    uart_line(5, Drive::Ma4, false),
    // GP6: the trigger output (PIO1 SM0); released to this pull-down when
    // disarmed (docs/dev/trigger.md).
    timed_output(6),
    // GP25: the LED (also PIO0/PIO1's alignment edge at boot).
    Pad { pin: 25, drive: Drive::Ma4, slew_fast: false, pull: Pull::None, schmitt: true },
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    // rp2040-pac cannot be a dev-dependency beside stm32f4 (both export
    // `DEVICE_PERIPHERALS`), so the anchors are the datasheet's: the reset
    // value 0x56 is IE, 4 mA, pull-down and Schmitt (§2.19.6.3, pico-sdk's
    // pads_bank0.h), and the rp2040js end-to-end test reads back what the
    // firmware wrote (tests/tests/rp2040.rs, `--pad-report`).
    #[test]
    fn words_follow_the_datasheets_fields() {
        let pad = |drive, slew_fast, pull, schmitt| Pad { pin: 0, drive, slew_fast, pull, schmitt }.word();
        assert_eq!(pad(Drive::Ma4, false, Pull::Down, true), 0x56, "the reset value");
        assert_eq!(pad(Drive::Ma12, true, Pull::Down, true), 0x77);
        assert_eq!(pad(Drive::Ma2, false, Pull::Up, false), 0x48);
        assert_eq!(pad(Drive::Ma8, false, Pull::None, false), 0x60);
    }

    #[test]
    fn timed_pins_are_strong_and_fast_and_uart_lines_idle_high() {
        let get = |pin: u8| PADS.iter().find(|p| p.pin == pin).copied().unwrap();
        for pin in [2, 4, 6] {
            let r = get(pin);
            assert_eq!((r.drive, r.slew_fast), (Drive::Ma12, true), "GP{pin}");
        }
        for pin in [0, 1, 4, 5] {
            assert_eq!(get(pin).pull, Pull::Up, "GP{pin}");
        }
        for pin in [2, 3, 6] {
            assert_eq!(get(pin).pull, Pull::Down, "GP{pin} idles low");
        }
        let mut pins: Vec<u8> = PADS.iter().map(|p| p.pin).collect();
        pins.sort_unstable();
        pins.dedup();
        assert_eq!(pins.len(), PADS.len(), "one entry a pin");
    }
}
