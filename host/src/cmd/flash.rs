//! `latprobe flash`: put the probe firmware on the board through its debug
//! probe (probe-rs as a library), then wait for its Hello and say what runs;
//! or, with `--uf2`, write the firmware as a UF2 file for a boot ROM's USB
//! drive (the Pico's BOOTSEL mode), with no probe at all.
//!
//! The ELF is checked first (board, protocol version, flash range, the
//! RP2040's boot2), so a wrong one is refused before any probe is opened.
//! By default it is the workspace's `cargo fw-nucleo` / `cargo fw-pico`
//! output (`crate::probe::elf_candidates`); a latprobe does not carry a
//! firmware inside it (docs/book/src/internals/probe-rs.md says why).
//!
//! The Hello comes over RTT (the Nucleo), the `--port` given, or, for a
//! board whose host link is its own USB CDC device (the Pico), the port of
//! that device once it has enumerated again after the reset.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::probe::{self, parse_selector, Board, Selector};
use crate::Error;

/// `latprobe flash` options.
#[derive(Debug, Clone, Args)]
pub struct FlashArgs {
    /// The probe board: nucleo-f411re (through its ST-LINK) or rp2040-pico (through a CMSIS-DAP debug probe, or --uf2)
    #[arg(long, value_name = "BOARD", default_value = "nucleo-f411re")]
    pub board: String,
    /// The firmware ELF (default: `target/<its target>/firmware/BOARD` of the workspace, as `cargo fw-nucleo` or `cargo fw-pico` builds it)
    #[arg(long, value_name = "PATH")]
    pub elf: Option<PathBuf>,
    /// Write the firmware as a UF2 file for BOOTSEL drag-and-drop instead of flashing through a debug probe (rp2040-pico); a directory (the RPI-RP2 drive) gets BOARD.uf2
    #[arg(long, value_name = "FILE", conflicts_with_all = ["probe", "force", "port"])]
    pub uf2: Option<PathBuf>,
    /// The debug probe, as `latprobe list` shows it, when several are attached
    #[arg(long = "probe", value_name = "VID:PID[:SERIAL]", value_parser = parse_selector)]
    pub probe: Option<Selector>,
    /// Flash even when the board already holds this exact image
    #[arg(long)]
    pub force: bool,
    /// Wait for the Hello on this serial port (the board's virtual COM port or USB CDC port) rather than over RTT or the port found by its USB ids
    #[arg(long, value_name = "PORT")]
    pub port: Option<String>,
    /// Serial speed of --port
    #[arg(long, value_name = "N", default_value_t = latprobe_firmware::boards::nucleo_f411re::HOST_BAUD)]
    pub baud: u32,
}

/// Run `latprobe flash`.
pub fn run(args: FlashArgs) -> Result<(), Error> {
    let board = probe::board(&args.board)?;
    if let Some(out) = &args.uf2 {
        return write_uf2(board, args.elf.as_deref(), out);
    }
    let path = probe::find_elf(board, args.elf.as_deref())?;
    // Refuse a wrong ELF here, before any probe is touched (and before a
    // latprobe without probe-rs says it cannot flash).
    let elf = probe::elf::FirmwareElf::load(&path, board)?;
    #[cfg(feature = "probe-rs")]
    {
        flash(&args, board, &elf)
    }
    #[cfg(not(feature = "probe-rs"))]
    {
        let _ = elf;
        Err(probe::without_probe_rs("latprobe flash"))
    }
}

/// `--uf2`: the checked ELF's image as UF2 blocks, written to `out` (a
/// file), or as `BOARD.uf2` into `out` (a directory: the boot ROM's drive,
/// which takes the blocks as they are written and then reboots).
fn write_uf2(board: &Board, elf: Option<&Path>, out: &Path) -> Result<(), Error> {
    let Some(family) = board.uf2_family else {
        let uf2: Vec<&str> =
            probe::BOARDS.iter().filter(|b| b.uf2_family.is_some()).map(|b| b.name).collect();
        return Err(Error::Config(format!(
            "--uf2: the {} has no UF2 boot loader: flash it through its debug probe with `latprobe flash \
             --board {}` (without --uf2); UF2 is for --board {}",
            board.name,
            board.name,
            uf2.join(", ")
        )));
    };
    let path = probe::find_elf(board, elf)?;
    let elf = probe::elf::FirmwareElf::load(&path, board)?;
    let bytes = probe::uf2::write(&elf.image, family, board.flash).map_err(|why| {
        Error::Input(format!(
            "cannot make a UF2 file of {}: {why}; rebuild it with `{}`",
            path.display(),
            board.build
        ))
    })?;
    let drive = out.is_dir();
    let target = if drive { out.join(format!("{}.uf2", board.name)) } else { out.to_path_buf() };
    // The boot ROM's drive flashes what is written and reboots when the
    // last block is in: no temporary file and rename there.
    let written = if drive { std::fs::write(&target, &bytes) } else { crate::fsout::write(&target, &bytes) };
    written.map_err(|e| Error::Output(format!("--uf2 {}: cannot write it: {e}", target.display())))?;
    println!(
        "{}: {} blocks of {} (firmware {}, {} bytes, image CRC {:#010x}), UF2 family {family:#010x}",
        target.display(),
        bytes.len() / probe::uf2::BLOCK,
        path.display(),
        elf.info.firmware_version,
        elf.image_len(),
        elf.image_crc()
    );
    if drive {
        println!(
            "the {} writes it to flash and restarts into the firmware; `latprobe list` then shows its port",
            board.name
        );
    } else {
        println!(
            "hold BOOTSEL while plugging the {} in, then copy {} to the RPI-RP2 drive it shows (or \
             `picotool load -x {}`); `latprobe list` then shows its port",
            board.name,
            target.display(),
            target.display()
        );
    }
    Ok(())
}

#[cfg(feature = "probe-rs")]
fn flash(args: &FlashArgs, board: &Board, elf: &probe::elf::FirmwareElf) -> Result<(), Error> {
    use crate::probe::{debug, HostLink};
    use crate::source::ByteSource;

    let (dbg, name) = debug::open_probe(args.probe.as_ref(), Some(board))?;
    crate::stderr_line!("latprobe: debug probe {name}");
    let mut session = debug::attach(dbg, &name, board.chip, Some(board))?;
    debug::flash_if_needed(&mut session, elf, args.force)?;
    let mut link: Box<dyn ByteSource> = match (&args.port, board.host_link) {
        (Some(port), _) => {
            drop(session);
            probe::open_after_reset(port, args.baud, Some(board))?
        }
        // The log channel is left for `run --link rtt -v`: the boot lines
        // wait there.
        (None, HostLink::Rtt) => {
            Box::new(debug::open_rtt(session, &name, Some(elf), board.ram, false, false)?)
        }
        (None, HostLink::UsbCdc { .. }) => {
            drop(session);
            let port = await_cdc_port(board, std::time::Duration::from_secs(5))?;
            probe::open_after_reset(&port, args.baud, Some(board))?
        }
    };
    let hello = probe::await_hello(link.as_mut(), std::time::Duration::from_secs(3))?;
    probe::check_hello(&hello, &elf.info.board, &elf.info.firmware_version, elf.image_crc(), link.name())?;
    println!(
        "{}: board {}, firmware {}, protocol {}, timer {} Hz, build {:#010x} (the ELF's)",
        link.name(),
        crate::out::clean(&hello.board),
        crate::out::clean(&hello.firmware_version),
        hello.protocol_version,
        hello.timer_hz,
        hello.build_id
    );
    Ok(())
}

/// The port of `board`'s own USB CDC device, once it has enumerated after
/// the reset, looked for in /sys for up to `within`.
#[cfg(feature = "probe-rs")]
fn await_cdc_port(board: &Board, within: std::time::Duration) -> Result<String, Error> {
    let deadline = std::time::Instant::now() + within;
    // The port of the firmware that ran before the reset may linger a moment.
    std::thread::sleep(std::time::Duration::from_millis(300));
    loop {
        let ports = super::list::serial_ports(Path::new("/sys"), Path::new("/dev"));
        match cdc_port(&ports, board, std::time::Instant::now() >= deadline) {
            Ok(Some(p)) => return Ok(p),
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(100)),
            Err(e) => return Err(e),
        }
    }
}

/// Among `ports`, the one of `board`'s latprobe firmware: `Ok(None)` while
/// there is none and `last` is false, else an error naming `--port`.
pub fn cdc_port(
    ports: &[super::list::SerialPort],
    board: &Board,
    last: bool,
) -> Result<Option<String>, Error> {
    let ours: Vec<&super::list::SerialPort> = ports
        .iter()
        .filter(|p| match (p.vid, p.pid) {
            (Some(v), Some(i)) => probe::latprobe_cdc_board(v, i, p.product.as_deref()) == Some(board),
            _ => false,
        })
        .collect();
    match ours.as_slice() {
        [one] => Ok(Some(one.path.clone())),
        [] if !last => Ok(None),
        [] => Err(Error::DebugProbe(format!(
            "the {} was flashed, but its USB port did not appear within 5 s: connect the {}'s own USB \
             connector to this machine (the debug probe does not carry the host link), or give the port \
             with --port (`latprobe list` shows it)",
            board.name, board.name
        ))),
        many => Err(Error::DebugProbe(format!(
            "{} {} ports are attached ({}): give the flashed one's with --port",
            many.len(),
            board.name,
            many.iter().map(|p| p.path.as_str()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::super::list::SerialPort;
    use super::*;

    fn port(path: &str, ids: (u16, u16), product: &str) -> SerialPort {
        SerialPort {
            path: path.into(),
            vid: Some(ids.0),
            pid: Some(ids.1),
            serial: None,
            manufacturer: None,
            product: Some(product.into()),
            interface: Some(0),
            by_id: None,
            latprobe: None,
        }
    }

    #[test]
    fn the_picos_port_is_told_by_its_ids_and_product() {
        let pico = probe::board("rp2040-pico").unwrap();
        let ours = port("/dev/ttyACM3", (0x16c0, 0x27dd), "latprobe probe (rp2040-pico)");
        let other = port("/dev/ttyACM0", (0x16c0, 0x27dd), "USBasp serial");
        let stlink = port("/dev/ttyACM1", (0x0483, 0x374b), "STM32 STLink");
        let found = cdc_port(&[other.clone(), stlink.clone(), ours.clone()], pico, false).unwrap();
        assert_eq!(found.as_deref(), Some("/dev/ttyACM3"));
        // Not there yet: wait; at the deadline: say what to do.
        assert_eq!(cdc_port(std::slice::from_ref(&other), pico, false).unwrap(), None);
        let e = cdc_port(&[other], pico, true).unwrap_err().to_string();
        assert!(e.contains("did not appear within 5 s") && e.contains("--port"), "{e}");
        let two = [ours.clone(), port("/dev/ttyACM4", (0x16c0, 0x27dd), "latprobe probe (rp2040-pico)")];
        let e = cdc_port(&two, pico, false).unwrap_err().to_string();
        assert!(e.contains("2 rp2040-pico ports") && e.contains("/dev/ttyACM3, /dev/ttyACM4"), "{e}");
        assert!(e.contains("--port"), "{e}");
    }
}
