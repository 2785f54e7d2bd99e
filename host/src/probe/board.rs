//! The boards `latprobe flash` knows, and how each is told on a bench: the
//! Rust target its firmware is built for, the chip-identity register read
//! before anything is erased, its flash, how its firmware talks to the
//! host after a reset, and the USB ids of what a user plugs in (ST-LINKs,
//! CMSIS-DAP probes, a Pico in BOOTSEL mode or running latprobe).

use crate::error::Error;

/// How a debug probe tells the chip it reaches before erasing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChipId {
    /// STM32 DBGMCU_IDCODE at 0xE004_2000: DEV_ID in bits 11:0 (RM0383
    /// §23.6.1).
    Stm32DevId {
        /// The DEV_ID of the board's chip.
        dev_id: u16,
        /// What that DEV_ID is called, for the wrong-chip message.
        family: &'static str,
    },
    /// RP2040 SYSINFO CHIP_ID at 0x4000_0000 (RP2040 datasheet §2.21):
    /// MANUFACTURER in bits 11:0, PART in bits 27:12, REVISION in 31:28.
    Rp2040ChipId {
        /// MANUFACTURER (0x927, Raspberry Pi).
        manufacturer: u16,
        /// PART (0x0002, the RP2040).
        part: u16,
    },
}

impl ChipId {
    /// The address of the 32-bit register to read.
    pub fn address(&self) -> u64 {
        match self {
            ChipId::Stm32DevId { .. } => 0xE004_2000,
            ChipId::Rp2040ChipId { .. } => 0x4000_0000,
        }
    }

    /// Whether `word`, read at [`ChipId::address`], is `board`'s chip; if
    /// not, the message says what was found and how to pick the right probe.
    pub fn check(&self, board: &Board, word: u32) -> Result<(), Error> {
        let pick = format!("choose the probe of the {} board with --probe (`latprobe list`)", board.name);
        match *self {
            ChipId::Stm32DevId { dev_id, family } => {
                let dev = (word & 0xFFF) as u16;
                if dev != dev_id {
                    return Err(Error::DebugProbe(format!(
                        "wrong chip: the debug probe reaches an STM32 with DEV_ID {dev:#05x}, and a {} has a \
                         {family} (DEV_ID {dev_id:#05x}): {pick}",
                        board.name
                    )));
                }
            }
            ChipId::Rp2040ChipId { manufacturer, part } => {
                let (m, p) = ((word & 0xFFF) as u16, ((word >> 12) & 0xFFFF) as u16);
                if (m, p) != (manufacturer, part) {
                    return Err(Error::DebugProbe(format!(
                        "wrong chip: the debug probe reaches a chip whose SYSINFO CHIP_ID is {word:#010x} \
                         (MANUFACTURER {m:#05x}, PART {p:#06x}), and a {} has an RP2040 (MANUFACTURER \
                         {manufacturer:#05x}, PART {part:#06x}): {pick}",
                        board.name
                    )));
                }
            }
        }
        Ok(())
    }
}

/// How a board's firmware reaches the host once it runs: where `latprobe
/// flash` waits for its Hello.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostLink {
    /// An RTT channel "latprobe" through the debug probe (and the
    /// ST-LINK's virtual COM port, with `--port`).
    Rtt,
    /// Its own USB CDC ACM device, which enumerates anew after every reset
    /// (its RTT carries the frames too, on up channel 1, for `run --link
    /// rtt`; `flash` reads the Hello on the USB port).
    UsbCdc {
        /// USB vendor id.
        vid: u16,
        /// USB product id.
        pid: u16,
        /// The product string.
        product: &'static str,
    },
}

/// A board latprobe can flash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Board {
    /// The name in the firmware's Hello and `--board`.
    pub name: &'static str,
    /// probe-rs's name for its chip (`probe-rs chip list`).
    pub chip: &'static str,
    /// The chip-identity check made before erasing.
    pub chip_id: ChipId,
    /// The Rust target triple its firmware ELF is built for.
    pub target: &'static str,
    /// The firmware binary's name under `target/<target>/firmware/`.
    pub elf_name: &'static str,
    /// The command that builds it.
    pub build: &'static str,
    /// The chip's RAM, where an RTT control block may be.
    pub ram: (u64, u64),
    /// The flash the image goes to (origin, length).
    pub flash: (u64, u64),
    /// The UF2 family id of its boot ROM, when it has a UF2 boot loader.
    pub uf2_family: Option<u32>,
    /// Whether the first 256 bytes of flash are an RP2040 boot2, checked by
    /// its CRC before flashing (RP2040 datasheet §2.8.1.3.1).
    pub boot2: bool,
    /// Where `latprobe flash` waits for the Hello.
    pub host_link: HostLink,
    /// How its debug probe is connected, for "no probe" and "cannot reach".
    pub wiring: &'static str,
}

/// The Raspberry Pi Pico's USB CDC link (firmware/src/bin/rp2040-pico).
pub const PICO_CDC: HostLink =
    HostLink::UsbCdc { vid: 0x16c0, pid: 0x27dd, product: "latprobe probe (rp2040-pico)" };

/// The RP2040's UF2 family id (github.com/microsoft/uf2, utils/uf2families.json).
pub const RP2040_FAMILY: u32 = 0xe48b_ff56;

/// Every board `latprobe flash` knows (the QEMU board is not flashed).
pub const BOARDS: &[Board] = &[
    Board {
        name: "nucleo-f411re",
        chip: latprobe_firmware::boards::nucleo_f411re::CHIP,
        chip_id: ChipId::Stm32DevId {
            dev_id: latprobe_firmware::boards::nucleo_f411re::DEV_ID,
            family: "STM32F411xC/E",
        },
        target: "thumbv7em-none-eabihf",
        elf_name: "nucleo-f411re",
        build: "cargo fw-nucleo",
        ram: latprobe_firmware::boards::nucleo_f411re::RAM,
        // RM0383 §3.3: 512 KiB of main memory at 0x0800_0000.
        flash: (0x0800_0000, 512 * 1024),
        uf2_family: None,
        boot2: false,
        host_link: HostLink::Rtt,
        wiring: "plug the Nucleo in by its ST-LINK USB connector (CN1) with a data cable, and keep \
                 the ST-LINK jumpers (CN2) on",
    },
    Board {
        name: "rp2040-pico",
        chip: latprobe_firmware::boards::rp2040_pico::CHIP,
        chip_id: ChipId::Rp2040ChipId { manufacturer: 0x927, part: 0x0002 },
        target: "thumbv6m-none-eabi",
        elf_name: "rp2040-pico",
        build: "cargo fw-pico",
        ram: latprobe_firmware::boards::rp2040_pico::RAM,
        // XIP flash at 0x1000_0000 (RP2040 datasheet §2.6.3); the Pico's
        // W25Q16JV holds 2 MiB (Pico datasheet §2.1).
        flash: (0x1000_0000, 2 * 1024 * 1024),
        uf2_family: Some(RP2040_FAMILY),
        boot2: true,
        host_link: PICO_CDC,
        wiring: "wire a CMSIS-DAP debug probe (the Raspberry Pi Debug Probe, or a second Pico running \
                 debugprobe) to the Pico's SWD pins (SWCLK, GND, SWDIO), plug the probe in with a data \
                 cable and power the Pico by its own USB",
    },
];

/// The board named `name`.
pub fn board(name: &str) -> Result<&'static Board, Error> {
    BOARDS.iter().find(|b| b.name == name).ok_or_else(|| {
        let known: Vec<&str> = BOARDS.iter().map(|b| b.name).collect();
        Error::Config(format!("--board {name}: latprobe flashes {} only", known.join(", ")))
    })
}

/// The udev rules that let a user (not root) open the debug probes and
/// the Pico, as the README gives them.
pub const UDEV_RULE: &str = r#"# /etc/udev/rules.d/70-latprobe-stlink.rules: ST-LINK/V2, V2-1, V3 for users at the seat
ATTRS{idVendor}=="0483", ATTRS{idProduct}=="3748|374b|374d|374e|374f|3752|3753|3754|3757", MODE="660", GROUP="plugdev", TAG+="uaccess""#;

/// The Pico's udev rule: the CMSIS-DAP debug probe (debugprobe), the Pico
/// in BOOTSEL mode (for picotool) and its latprobe firmware's CDC port.
pub const UDEV_RULE_PICO: &str = r#"# /etc/udev/rules.d/70-latprobe-pico.rules: Raspberry Pi Debug Probe / debugprobe, RP2040 BOOTSEL, latprobe's Pico
ATTRS{idVendor}=="2e8a", ATTRS{idProduct}=="000c|0003", MODE="660", GROUP="plugdev", TAG+="uaccess"
ATTRS{idVendor}=="16c0", ATTRS{idProduct}=="27dd", ATTRS{product}=="latprobe probe (rp2040-pico)", MODE="660", GROUP="plugdev", TAG+="uaccess""#;

/// The fix for "permission denied" on a USB probe.
pub fn permission_hint() -> String {
    "install the udev rules for debug probes and replug the board (the README's \"USB \
     permissions\" gives them: /etc/udev/rules.d/70-latprobe-stlink.rules for ST-LINKs, \
     70-latprobe-pico.rules for a Pico's CMSIS-DAP probe, then \
     `sudo udevadm control --reload && sudo udevadm trigger`), or run as root"
        .to_string()
}

/// USB ids of ST-LINK probes: the ones on Nucleo and Discovery boards look
/// like a latprobe board in `latprobe list`.
pub const STLINK_PIDS: &[(u16, &str)] = &[
    (0x3748, "ST-LINK/V2"),
    (0x374b, "ST-LINK/V2-1"),
    (0x374d, "STLINK-V3 loader"),
    (0x374e, "STLINK-V3"),
    (0x374f, "STLINK-V3"),
    (0x3752, "ST-LINK/V2-1"),
    (0x3753, "STLINK-V3"),
    (0x3754, "STLINK-V3"),
    (0x3757, "STLINK-V3PWR"),
];

/// ST's USB vendor id.
pub const ST_VID: u16 = 0x0483;

/// Raspberry Pi's USB vendor id.
pub const RPI_VID: u16 = 0x2e8a;

/// What an ST-LINK with this VID:PID is, if it is one.
pub fn stlink_kind(vid: u16, pid: u16) -> Option<&'static str> {
    (vid == ST_VID).then(|| STLINK_PIDS.iter().find(|(p, _)| *p == pid).map(|(_, n)| *n)).flatten()
}

/// A Raspberry Pi USB device `latprobe list` explains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PicoKind {
    /// A CMSIS-DAP probe running debugprobe (the Raspberry Pi Debug Probe,
    /// or a Pico flashed with debugprobe): flashes a Pico over SWD.
    DebugProbe,
    /// An RP2040 in BOOTSEL mode: its boot ROM's USB drive and PICOBOOT.
    Bootsel,
}

/// What a Raspberry Pi device with this VID:PID is, if `list` knows it.
pub fn pico_kind(vid: u16, pid: u16) -> Option<PicoKind> {
    match (vid, pid) {
        (RPI_VID, 0x000c) => Some(PicoKind::DebugProbe),
        (RPI_VID, 0x0003) => Some(PicoKind::Bootsel),
        _ => None,
    }
}

/// The board whose latprobe firmware is this USB CDC device, if one is.
pub fn latprobe_cdc_board(vid: u16, pid: u16, product: Option<&str>) -> Option<&'static Board> {
    BOARDS.iter().find(|b| match b.host_link {
        HostLink::UsbCdc { vid: v, pid: p, product: name } => (v, p) == (vid, pid) && product == Some(name),
        HostLink::Rtt => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_knows_both_boards_by_their_own_facts() {
        let n = board("nucleo-f411re").unwrap();
        assert_eq!((n.chip, n.target, n.flash.0), ("STM32F411RETx", "thumbv7em-none-eabihf", 0x0800_0000));
        assert_eq!(n.chip_id.address(), 0xE004_2000);
        assert_eq!(n.uf2_family, None);
        let p = board("rp2040-pico").unwrap();
        // probe-rs 0.32's targets/RP2040.yaml: `name: RP2040`.
        assert_eq!((p.chip, p.target, p.build), ("RP2040", "thumbv6m-none-eabi", "cargo fw-pico"));
        assert_eq!(p.chip_id.address(), 0x4000_0000);
        assert_eq!(p.uf2_family, Some(0xe48bff56));
        assert!(p.boot2 && !n.boot2);
        assert_eq!(p.ram, (0x2000_0000, 264 * 1024));
        let e = board("pico").unwrap_err().to_string();
        assert!(e.contains("nucleo-f411re") && e.contains("rp2040-pico"), "{e}");
    }

    #[test]
    fn chip_ids_are_read_as_the_manuals_lay_them_out() {
        let n = board("nucleo-f411re").unwrap();
        n.chip_id.check(n, 0x1000_6431).unwrap();
        let e = n.chip_id.check(n, 0x1000_7413).unwrap_err().to_string();
        assert!(e.contains("DEV_ID 0x413") && e.contains("--probe"), "{e}");
        let p = board("rp2040-pico").unwrap();
        // REVISION 2 (B2), PART 0x0002, MANUFACTURER 0x927.
        p.chip_id.check(p, 0x2000_2927).unwrap();
        p.chip_id.check(p, 0x1000_2927).unwrap();
        // An RP2350's CHIP_ID: PART 0x0004.
        let e = p.chip_id.check(p, 0x2000_4927).unwrap_err().to_string();
        assert!(e.contains("PART 0x0004") && e.contains("0x20004927") && e.contains("--probe"), "{e}");
        // An STM32's DEV_ID register read as a CHIP_ID.
        assert!(p.chip_id.check(p, 0x1000_6431).is_err());
    }

    #[test]
    fn usb_devices_are_recognised() {
        assert_eq!(stlink_kind(0x0483, 0x374b), Some("ST-LINK/V2-1"));
        assert_eq!(stlink_kind(0x0483, 0x5740), None);
        assert_eq!(stlink_kind(0x1366, 0x374b), None);
        assert_eq!(pico_kind(0x2e8a, 0x000c), Some(PicoKind::DebugProbe));
        assert_eq!(pico_kind(0x2e8a, 0x0003), Some(PicoKind::Bootsel));
        assert_eq!(pico_kind(0x2e8a, 0x000a), None, "a Pico SDK program's stdio is no probe");
        let pico = latprobe_cdc_board(0x16c0, 0x27dd, Some("latprobe probe (rp2040-pico)")).unwrap();
        assert_eq!(pico.name, "rp2040-pico");
        // 16c0:27dd is a shared id (V-USB's CDC): the product string decides.
        assert_eq!(latprobe_cdc_board(0x16c0, 0x27dd, Some("USBasp serial")), None);
        assert_eq!(latprobe_cdc_board(0x16c0, 0x27dd, None), None);
        assert!(UDEV_RULE.contains("374b") && UDEV_RULE.contains("uaccess"));
        assert!(UDEV_RULE_PICO.contains("000c|0003") && UDEV_RULE_PICO.contains("27dd"));
    }
}
