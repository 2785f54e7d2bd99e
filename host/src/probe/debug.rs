//! The debug probe through probe-rs used as a library: find and open it,
//! attach to the chip without stopping it, flash an image (erase, program,
//! verify, reset) unless the chip already holds it, and read RTT. Each
//! failure a bench produces is turned into one message naming the fix.

use std::io;
use std::io::IsTerminal as _;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use probe_rs::flashing::{DownloadOptions, FlashProgress, ProgressEvent, ProgressOperation};
use probe_rs::probe::list::{Accessibility, Lister};
use probe_rs::probe::{DebugProbeInfo, DebugProbeSelector, Probe};
use probe_rs::{CoreStatus, MemoryInterface as _, Permissions, Session};

use super::elf::FirmwareElf;
use super::{Board, LinkArg, RunProbeArgs, Selector};
use crate::source::rtt::{ControlBlock, RttSource, TargetMemory};
use crate::source::ByteSource;
use crate::Error;

/// What went wrong opening a probe, as far as the user can act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenFailure {
    /// The OS refused access to the USB device.
    Permission,
    /// Another program holds the probe.
    Busy,
    /// Anything else.
    Other,
}

/// Classify an error by the I/O errors in its chain (nusb reports EACCES
/// and EBUSY as io::Error kinds), then by its text.
pub fn classify(e: &(dyn std::error::Error + 'static)) -> OpenFailure {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<io::Error>() {
            match io.kind() {
                io::ErrorKind::PermissionDenied => return OpenFailure::Permission,
                io::ErrorKind::ResourceBusy => return OpenFailure::Busy,
                _ => {}
            }
        }
        let text = err.to_string().to_ascii_lowercase();
        if text.contains("permission denied") || text.contains("access denied") {
            return OpenFailure::Permission;
        }
        if text.contains("busy") || text.contains("claim") {
            return OpenFailure::Busy;
        }
        cur = err.source();
    }
    OpenFailure::Other
}

/// The message for a probe that could not be opened.
pub fn open_error(probe: &str, e: &(dyn std::error::Error + 'static)) -> Error {
    Error::DebugProbe(match classify(e) {
        OpenFailure::Permission => {
            format!("permission denied opening the debug probe {probe}: {}", super::permission_hint())
        }
        OpenFailure::Busy => format!(
            "the debug probe {probe} is busy: another program holds it (probe-rs, OpenOCD, \
             STM32CubeProgrammer, a debugger or another latprobe); close it and retry"
        ),
        OpenFailure::Other => format!("cannot open the debug probe {probe}: {e}"),
    })
}

/// A listed probe, in the form `--probe` takes.
pub fn describe(info: &DebugProbeInfo) -> String {
    let sel = Selector { vid: info.vendor_id, pid: info.product_id, serial: info.serial_number.clone() };
    format!("{} ({sel})", info.identifier)
}

/// Pick the probe `sel` names among `found`, or say why none can be
/// (`wiring`: how the board's probe is connected, for "none found").
/// Pure, so that every message is tested without hardware.
pub fn choose<'a, T>(
    found: &'a [T],
    sel: Option<&Selector>,
    wiring: &str,
    ids: impl Fn(&T) -> (u16, u16, Option<&str>, String),
) -> Result<&'a T, Error> {
    let list = |items: &[&T]| items.iter().map(|t| format!("  {}", ids(t).3)).collect::<Vec<_>>().join("\n");
    let matching: Vec<&T> = found
        .iter()
        .filter(|t| {
            let (vid, pid, serial, _) = ids(t);
            sel.is_none_or(|s| {
                s.vid == vid && s.pid == pid && s.serial.as_deref().is_none_or(|want| serial == Some(want))
            })
        })
        .collect();
    match (matching.as_slice(), sel) {
        ([one], _) => Ok(one),
        ([], None) => Err(Error::DebugProbe(format!(
            "no debug probe found: {wiring}; `latprobe list` shows what is attached"
        ))),
        ([], Some(s)) => Err(Error::DebugProbe(format!(
            "no debug probe matches --probe {s}; attached:\n{}",
            if found.is_empty() { "  (none)".to_string() } else { list(&found.iter().collect::<Vec<_>>()) }
        ))),
        (many, _) => Err(Error::DebugProbe(format!(
            "{} debug probes are attached and {}: choose one with --probe VID:PID:SERIAL:\n{}",
            many.len(),
            sel.map_or_else(|| "none is chosen".to_string(), |s| format!("--probe {s} matches them all")),
            list(many)
        ))),
    }
}

/// How to connect the debug probe of `board`, or of any board latprobe
/// knows.
pub fn wiring(board: Option<&Board>) -> String {
    match board {
        Some(b) => b.wiring.to_string(),
        None => super::BOARDS
            .iter()
            .map(|b| format!("for the {}: {}", b.name, b.wiring))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// Find and open the probe `sel` names (or the only one) for `board`.
pub fn open_probe(sel: Option<&Selector>, board: Option<&Board>) -> Result<(Probe, String), Error> {
    let lister = Lister::new();
    let items = lister.list_all_with_access();
    let item = choose(&items, sel, &wiring(board), |i| {
        (i.info.vendor_id, i.info.product_id, i.info.serial_number.as_deref(), describe(&i.info))
    })?;
    let name = describe(&item.info);
    if item.accessibility == Accessibility::PermissionDenied {
        return Err(Error::DebugProbe(format!(
            "permission denied opening the debug probe {name}: {}",
            super::permission_hint()
        )));
    }
    let probe = lister.open(DebugProbeSelector::from(&item.info)).map_err(|e| open_error(&name, &e))?;
    Ok((probe, name))
}

/// Attach to `chip` without halting or resetting it, and check that the
/// chip is the board's (a wrong chip is named before anything is erased).
pub fn attach(probe: Probe, name: &str, chip: &str, board: Option<&Board>) -> Result<Session, Error> {
    let mut session = probe.attach(chip, Permissions::default()).map_err(|e| match e {
        probe_rs::Error::ChipNotFound(_) => Error::DebugProbe(format!(
            "--chip {chip}: probe-rs does not know this chip (latprobe's boards: {})",
            super::BOARDS.iter().map(|b| format!("{} is {}", b.name, b.chip)).collect::<Vec<_>>().join(", ")
        )),
        e if classify(&e) != OpenFailure::Other => open_error(name, &e),
        e => Error::DebugProbe(format!(
            "the debug probe {name} cannot reach the {chip}: {e}; check that the board is powered: {}",
            wiring(board)
        )),
    })?;
    if let Some(b) = board.filter(|b| b.chip.eq_ignore_ascii_case(chip)) {
        let id = session
            .core(0)
            .and_then(|mut c| c.read_word_32(b.chip_id.address()))
            .map_err(|e| Error::DebugProbe(format!("cannot read the chip id through {name}: {e}")))?;
        b.chip_id.check(b, id)?;
    }
    Ok(session)
}

/// Whether the chip's flash already holds `elf`'s image, byte for byte. A
/// flash that cannot be read is taken as not holding it: an RP2040 whose
/// flash has no valid boot2 (a new Pico, or one in BOOTSEL mode) has no
/// XIP set up, and a read there faults; flashing sets it up.
pub fn holds(session: &mut Session, elf: &FirmwareElf) -> Result<bool, Error> {
    let mut core =
        session.core(0).map_err(|e| Error::DebugProbe(format!("cannot reach the probe's core: {e}")))?;
    for (addr, data) in &elf.image {
        let mut have = vec![0u8; data.len()];
        if let Err(e) = core.read(*addr, &mut have) {
            crate::stderr_line!(
                "latprobe: cannot read the chip's flash at {addr:#010x} to compare ({e}): taken as not holding {}",
                elf.path.display()
            );
            return Ok(false);
        }
        if &have != data {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Erase, program and verify `elf`'s image, with a progress bar on a
/// terminal, then reset the chip so it runs.
pub fn flash(session: &mut Session, elf: &FirmwareElf) -> Result<(), Error> {
    let mut loader = session.target().flash_loader();
    for (addr, data) in &elf.image {
        loader.add_data(*addr, data).map_err(|e| {
            Error::DebugProbe(format!(
                "{} does not fit the chip's flash at {addr:#010x}: {e} (is it built for this board?)",
                elf.path.display()
            ))
        })?;
    }
    let bars = Bars::new();
    let mut options = DownloadOptions::default();
    options.verify = true;
    options.progress = FlashProgress::new(|ev| bars.event(ev));
    loader
        .commit(session, options)
        .map_err(|e| Error::DebugProbe(format!("flashing {} failed: {e}", elf.path.display())))?;
    reset(session)
}

/// Reset the chip and let it run.
pub fn reset(session: &mut Session) -> Result<(), Error> {
    session
        .core(0)
        .and_then(|mut c| c.reset())
        .map_err(|e| Error::DebugProbe(format!("cannot reset the probe board: {e}")))
}

/// Let a halted core run (a previous debugger may have left it halted).
pub fn ensure_running(session: &mut Session) -> Result<(), Error> {
    let mut core = session.core(0).map_err(|e| Error::DebugProbe(format!("cannot reach the core: {e}")))?;
    if matches!(core.status(), Ok(CoreStatus::Halted(_)) | Ok(CoreStatus::LockedUp)) {
        core.run().map_err(|e| Error::DebugProbe(format!("cannot resume the probe board: {e}")))?;
    }
    Ok(())
}

/// Flash `elf` unless the chip already holds it; says which on stderr and
/// returns a note for the report.
pub fn flash_if_needed(session: &mut Session, elf: &FirmwareElf, force: bool) -> Result<String, Error> {
    let crc = elf.image_crc();
    if !force && holds(session, elf)? {
        ensure_running(session)?;
        let note = format!(
            "the probe already held {} (firmware {}, image CRC {crc:#010x}): not flashed",
            elf.path.display(),
            elf.info.firmware_version
        );
        crate::stderr_line!("latprobe: {note}");
        return Ok(note);
    }
    crate::stderr_line!(
        "latprobe: flashing {} ({} bytes, firmware {}, image CRC {crc:#010x})",
        elf.path.display(),
        elf.image_len(),
        elf.info.firmware_version
    );
    flash(session, elf)?;
    Ok(format!(
        "flashed {} (firmware {}, image CRC {crc:#010x})",
        elf.path.display(),
        elf.info.firmware_version
    ))
}

/// Progress of erase, program and verify: bars on a terminal, one line per
/// step elsewhere.
struct Bars {
    tty: bool,
    bar: std::cell::RefCell<Option<ProgressBar>>,
}

impl Bars {
    fn new() -> Self {
        Self { tty: std::io::stderr().is_terminal(), bar: std::cell::RefCell::new(None) }
    }

    fn event(&self, ev: ProgressEvent) {
        let what = |op: ProgressOperation| match op {
            ProgressOperation::Erase => "erase",
            ProgressOperation::Program => "program",
            ProgressOperation::Verify => "verify",
            ProgressOperation::Fill => "read back",
        };
        let mut bar = self.bar.borrow_mut();
        match ev {
            ProgressEvent::AddProgressBar { .. } => {}
            ProgressEvent::Started(op) => {
                if self.tty {
                    let b = ProgressBar::new(0);
                    b.set_style(
                        ProgressStyle::with_template("{msg:9} [{bar:40}] {bytes}/{total_bytes}")
                            .unwrap_or_else(|_| ProgressStyle::default_bar()),
                    );
                    b.set_message(what(op));
                    *bar = Some(b);
                } else {
                    crate::stderr_line!("latprobe: {}…", what(op));
                }
            }
            ProgressEvent::Progress { size, .. } => {
                if let Some(b) = bar.as_ref() {
                    b.inc_length(0);
                    b.inc(size);
                    if b.position() > b.length().unwrap_or(0) {
                        b.set_length(b.position());
                    }
                }
            }
            ProgressEvent::Finished(op) => {
                if let Some(b) = bar.take() {
                    b.finish();
                } else if !self.tty {
                    crate::stderr_line!("latprobe: {} done", what(op));
                }
            }
            ProgressEvent::Failed(op) => {
                if let Some(b) = bar.take() {
                    b.abandon();
                }
                crate::stderr_line!("latprobe: {} failed", what(op));
            }
            _ => {}
        }
    }
}

/// The probe's memory through a probe-rs session, for RTT. The core keeps
/// running: Cortex-M memory is read through the AHB access port.
pub struct SessionMemory {
    session: Session,
}

impl std::fmt::Debug for SessionMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionMemory").finish_non_exhaustive()
    }
}

impl TargetMemory for SessionMemory {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut core = self.session.core(0).map_err(io::Error::other)?;
        core.read(addr, buf).map_err(io::Error::other)
    }

    fn write(&mut self, addr: u64, data: &[u8]) -> io::Result<()> {
        let mut core = self.session.core(0).map_err(io::Error::other)?;
        core.write(addr, data).map_err(io::Error::other)
    }
}

/// The RTT link over `session`: the control block from the ELF's
/// `_SEGGER_RTT` when the chip holds that ELF (then, with `log`, its defmt
/// log is decoded, and printed with `verbose`), else found by scanning RAM.
/// Without `log` the log channel is left unread for the next reader. Waits
/// up to 2 s for the firmware to set the block up (it does so first thing
/// after a reset).
pub fn open_rtt(
    session: Session,
    name: &str,
    elf: Option<&FirmwareElf>,
    ram: (u64, u64),
    log: bool,
    verbose: bool,
) -> Result<RttSource<SessionMemory>, Error> {
    let mut mem = SessionMemory { session };
    let deadline = Instant::now() + Duration::from_secs(2);
    let rtt_err = |e: crate::source::rtt::RttError| Error::DebugProbe(format!("RTT through {name}: {e}"));
    let cb = loop {
        let found = match elf.and_then(|e| e.rtt_addr) {
            Some(addr) => ControlBlock::read(&mut mem, addr).map_err(rtt_err)?,
            None => ControlBlock::scan(&mut mem, ram.0, ram.1).map_err(rtt_err)?,
        };
        if let Some(cb) = found {
            break cb;
        }
        if Instant::now() >= deadline {
            return Err(Error::DebugProbe(match elf.and_then(|e| e.rtt_addr.map(|a| (e, a))) {
                Some((e, addr)) => format!(
                    "RTT control block not found at {addr:#010x} (_SEGGER_RTT of {}): the probe does \
                     not run that firmware or it has stopped; flash it (`latprobe flash`, or add --flash)",
                    e.path.display()
                ),
                None => format!(
                    "RTT control block not found in the probe's RAM ({:#010x}, {} KiB): its firmware \
                     does not use RTT or has not started; flash latprobe's firmware (`latprobe flash`, \
                     or add --flash), or give its ELF with --elf",
                    ram.0,
                    ram.1 / 1024
                ),
            }));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let log: Option<Box<dyn crate::source::rtt::LogSink>> = match elf {
        _ if !log => None,
        Some(e) => Some(Box::new(crate::defmtlog::DefmtLog::new(&e.bytes, &e.path, verbose)?)),
        None => {
            if verbose {
                crate::stderr_line!(
                    "latprobe: the probe's defmt log is not shown: no ELF known for it (--elf)"
                );
            }
            None
        }
    };
    RttSource::new(mem, &cb, format!("rtt:{name}"), log).map_err(rtt_err)
}

/// `run`'s link with the debug probe: flash first with `--flash`, then the
/// serial port or RTT, and with `--flash` the Hello checked against the ELF.
pub fn open_run_link(
    args: &RunProbeArgs,
    port: Option<&str>,
    baud: u32,
) -> Result<(Box<dyn ByteSource>, Vec<String>), Error> {
    let board = super::BOARDS.iter().find(|b| b.chip.eq_ignore_ascii_case(&args.chip));
    let mut notes = Vec::new();
    // The ELF first: a wrong one is refused before any probe is touched.
    let elf = match (board, args.flash) {
        (Some(b), _) => match super::find_elf(b, args.elf.as_deref()) {
            Ok(p) => Some(FirmwareElf::load(&p, b)?),
            Err(e) if args.flash => return Err(e),
            Err(_) => None,
        },
        (None, true) => {
            return Err(Error::DebugProbe(format!(
                "--flash with --chip {}: latprobe has firmware for {} only",
                args.chip,
                super::BOARDS.iter().map(|b| b.chip).collect::<Vec<_>>().join(", ")
            )))
        }
        (None, false) => None,
    };
    let (probe, name) = open_probe(args.probe.as_ref(), board)?;
    let mut session = attach(probe, &name, &args.chip, board)?;
    let mut elf_runs = false;
    if let (true, Some(e)) = (args.flash, &elf) {
        notes.push(flash_if_needed(&mut session, e, false)?);
        elf_runs = true;
    } else if let Some(e) = &elf {
        // Without --flash the ELF is only trusted for the RTT address and
        // the defmt table when the chip holds it.
        elf_runs = holds(&mut session, e)?;
        if !elf_runs {
            crate::stderr_line!(
                "latprobe: the probe does not hold {}: its defmt log is not decoded (add --flash, or --elf the one it runs)",
                e.path.display()
            );
        }
    }
    let trusted = elf.as_ref().filter(|_| elf_runs);
    let mut src: Box<dyn ByteSource> = match args.link {
        LinkArg::Serial => {
            drop(session);
            super::open_after_reset(port.unwrap_or_default(), baud, board)?
        }
        LinkArg::Rtt => {
            let ram = board.map_or((0x2000_0000, 128 * 1024), |b| b.ram);
            Box::new(open_rtt(session, &name, trusted, ram, true, args.verbose)?)
        }
    };
    if let (true, Some(e)) = (args.flash, &elf) {
        let hello = super::await_hello(src.as_mut(), Duration::from_secs(3))?;
        super::check_hello(&hello, &e.info.board, &e.info.firmware_version, e.image_crc(), src.name())?;
    }
    Ok((src, notes))
}
