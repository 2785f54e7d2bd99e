//! `latprobe flash`: put the probe firmware on the board through its debug
//! probe (probe-rs as a library), then wait for its Hello and say what runs.
//!
//! The ELF is checked first (board, protocol version), so a wrong one is
//! refused before any probe is opened. By default it is the workspace's
//! `cargo fw-nucleo` output (`crate::probe::elf_candidates`); a latprobe
//! does not carry a firmware inside it (docs/probe-rs.md says why).

use std::path::PathBuf;

use clap::Args;

use crate::probe::{self, parse_selector, Selector};

/// `latprobe flash` options.
#[derive(Debug, Clone, Args)]
pub struct FlashArgs {
    /// The probe board
    #[arg(long, value_name = "BOARD", default_value = "nucleo-f411re")]
    pub board: String,
    /// The firmware ELF (default: `target/thumbv7em-none-eabihf/firmware/BOARD` of the workspace, as `cargo fw-nucleo` builds it)
    #[arg(long, value_name = "PATH")]
    pub elf: Option<PathBuf>,
    /// The debug probe, as `latprobe list` shows it, when several are attached
    #[arg(long = "probe", value_name = "VID:PID[:SERIAL]", value_parser = parse_selector)]
    pub probe: Option<Selector>,
    /// Flash even when the board already holds this exact image
    #[arg(long)]
    pub force: bool,
    /// Wait for the Hello on this serial port (the board's virtual COM port) rather than over RTT
    #[arg(long, value_name = "PORT")]
    pub port: Option<String>,
    /// Serial speed of --port
    #[arg(long, value_name = "N", default_value_t = latprobe_firmware::boards::nucleo_f411re::HOST_BAUD)]
    pub baud: u32,
}

/// Run `latprobe flash`.
pub fn run(args: FlashArgs) -> Result<(), crate::Error> {
    let board = probe::board(&args.board)?;
    let path = probe::find_elf(board, args.elf.as_deref())?;
    #[cfg(feature = "probe-rs")]
    {
        flash(&args, board, &path)
    }
    #[cfg(not(feature = "probe-rs"))]
    {
        let _ = path;
        Err(probe::without_probe_rs("latprobe flash"))
    }
}

#[cfg(feature = "probe-rs")]
fn flash(args: &FlashArgs, board: &probe::Board, path: &std::path::Path) -> Result<(), crate::Error> {
    use crate::probe::{debug, elf::FirmwareElf};
    use crate::source::ByteSource;

    // Refuse a wrong ELF here, before any probe is touched.
    let elf = FirmwareElf::load(path, board)?;
    let (dbg, name) = debug::open_probe(args.probe.as_ref())?;
    crate::stderr_line!("latprobe: debug probe {name}");
    let mut session = debug::attach(dbg, &name, board.chip, Some(board))?;
    debug::flash_if_needed(&mut session, &elf, args.force)?;
    let mut link: Box<dyn ByteSource> = match &args.port {
        Some(port) => {
            drop(session);
            crate::source::open(port, args.baud)?
        }
        // The log channel is left for `run --link rtt -v`: the boot lines
        // wait there.
        None => Box::new(debug::open_rtt(session, &name, Some(&elf), board.ram, false, false)?),
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
