//! The bench side of the probe board: which boards latprobe can flash
//! (`board`: the table, chip ids, USB ids, udev rules), where their
//! firmware comes from, how a debug probe is named on the command line,
//! and the errors a user meets on a bench, each naming the fix. The debug
//! probe itself (probe-rs: flash, attach, RTT) is in `debug`, behind the
//! default `probe-rs` feature (without it these commands say how to get
//! it); the firmware ELF's checks are in `elf` and the UF2 file for a boot
//! ROM's USB drive in `uf2`, which need no probe.
//!
//! ```text
//!  latprobe flash ─┐                                ┌─▶ probe-rs: erase, program, verify, reset
//!  run --flash ────┼─▶ elf: board? protocol? flash? ┼─▶ RTT: source::rtt over the probe's memory
//!  run --link rtt ─┘   boot2? (before any probe)    └─▶ uf2: blocks for BOOTSEL (flash --uf2)
//! ```

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::error::{Error, LinkError};

mod board;
#[cfg(feature = "probe-rs")]
pub mod debug;
pub mod elf;
pub mod uf2;

pub use board::*;

/// `--probe VID:PID[:SERIAL]`, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// USB vendor id.
    pub vid: u16,
    /// USB product id.
    pub pid: u16,
    /// USB serial number, when several probes share the ids.
    pub serial: Option<String>,
}

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04x}:{:04x}", self.vid, self.pid)?;
        if let Some(s) = &self.serial {
            write!(f, ":{s}")?;
        }
        Ok(())
    }
}

/// Parse `VID:PID[:SERIAL]` (hex ids, as `latprobe list` prints them).
pub fn parse_selector(text: &str) -> Result<Selector, String> {
    let bad = || {
        format!("'{text}' is not VID:PID[:SERIAL] (hex, e.g. 0483:374b or 0483:374b:066DFF…, as `latprobe list` prints)")
    };
    let mut parts = text.splitn(3, ':');
    let hex = |s: Option<&str>| s.and_then(|s| u16::from_str_radix(s.trim_start_matches("0x"), 16).ok());
    let vid = hex(parts.next()).ok_or_else(bad)?;
    let pid = hex(parts.next()).ok_or_else(bad)?;
    let serial = parts.next().filter(|s| !s.is_empty()).map(str::to_string);
    Ok(Selector { vid, pid, serial })
}

/// Which link `run` measures over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LinkArg {
    /// The serial device, TCP or unix socket of --port.
    Serial,
    /// RTT through the debug probe (probe-rs): no serial port needed.
    Rtt,
}

/// `run`'s debug-probe options: the link, flashing first, the log.
#[derive(Debug, Clone, Args)]
pub struct RunProbeArgs {
    /// The probe's link: serial (the --port device or socket) or rtt (through the debug probe, with the probe's defmt log beside)
    #[arg(long, value_enum, default_value = "serial")]
    pub link: LinkArg,
    /// Flash the probe first (skipped when it already holds this exact firmware), check its Hello, then measure
    #[arg(long)]
    pub flash: bool,
    /// The debug probe, as `latprobe list` shows it, when several are attached
    #[arg(long = "probe", value_name = "VID:PID[:SERIAL]", value_parser = parse_selector)]
    pub probe: Option<Selector>,
    /// The probe board's chip, as probe-rs names it (RP2040 for the Raspberry Pi Pico)
    #[arg(long, value_name = "CHIP", default_value = "STM32F411RETx")]
    pub chip: String,
    /// The firmware ELF: flashed with --flash, and the RTT control block and defmt table are read from it [default: the workspace's `cargo fw-nucleo` (or, for --chip RP2040, `cargo fw-pico`) output]
    #[arg(long, value_name = "PATH")]
    pub elf: Option<PathBuf>,
    /// Show the probe's defmt log (with --link rtt) as it comes
    #[arg(long, short)]
    pub verbose: bool,
}

impl RunProbeArgs {
    /// Whether anything here needs the debug probe.
    pub fn needs_probe(&self) -> bool {
        self.flash || self.link == LinkArg::Rtt
    }
}

/// Where the firmware ELF of `board` is looked for when `--elf` is not
/// given, in order: `$LATPROBE_FIRMWARE_DIR/<board>`; an unpacked release
/// bundle's `lib/latprobe/firmware/<board>` (beside `bin/latprobe`); the firmware build of
/// the cargo workspace around the current directory (`$CARGO_TARGET_DIR`
/// or `target/`); the same for the tree this latprobe was built from.
pub fn elf_candidates(board: &Board) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(dir) = std::env::var_os("LATPROBE_FIRMWARE_DIR") {
        out.push(PathBuf::from(dir).join(board.elf_name));
    }
    // An unpacked release bundle (scripts/dist): bin/latprobe beside
    // lib/latprobe/firmware/BOARD, wherever it was unpacked.
    if let Some(root) = std::env::current_exe().ok().and_then(|e| Some(e.parent()?.parent()?.to_path_buf())) {
        let p = root.join("lib/latprobe/firmware").join(board.elf_name);
        if p.is_file() {
            out.push(p);
        }
    }
    let tail = Path::new(board.target).join("firmware").join(board.elf_name);
    let target_dir = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from);
    let mut roots = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        if let Some(ws) = cwd.ancestors().find(|d| d.join("firmware").join("Cargo.toml").is_file()) {
            roots.push(ws.to_path_buf());
        }
    }
    // host/ of the tree this binary was built from.
    if let Some(ws) = Path::new(env!("CARGO_MANIFEST_DIR")).parent() {
        roots.push(ws.to_path_buf());
    }
    if let Some(t) = &target_dir {
        let t = if t.is_absolute() { t.clone() } else { roots.first().map_or(t.clone(), |r| r.join(t)) };
        out.push(t.join(&tail));
    }
    for r in roots {
        let p = r.join("target").join(&tail);
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// The ELF to use: `--elf`, else the first candidate that exists, else an
/// error that lists where it looked and gives the build command.
pub fn find_elf(board: &Board, explicit: Option<&Path>) -> Result<PathBuf, Error> {
    if let Some(p) = explicit {
        if !p.is_file() {
            return Err(Error::Input(format!("--elf {}: no such file", p.display())));
        }
        return Ok(p.to_path_buf());
    }
    let candidates = elf_candidates(board);
    if let Some(p) = candidates.iter().find(|p| p.is_file()) {
        return Ok(p.clone());
    }
    let looked: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    Err(Error::Input(format!(
        "no {} firmware ELF found (looked at {}): build it in the latprobe source tree with `{}`, \
         or give --elf PATH",
        board.name,
        looked.join(", "),
        board.build
    )))
}

/// Open `port` after `board` was reset. A board whose host link is its own
/// USB device (the Pico) leaves the bus at the reset and enumerates again,
/// so its port is opened after a moment and retried for up to 5 s; any
/// other port is opened at once.
pub fn open_after_reset(
    port: &str,
    baud: u32,
    board: Option<&Board>,
) -> Result<Box<dyn crate::source::ByteSource>, Error> {
    use std::time::{Duration, Instant};
    let Some(b) = board.filter(|b| matches!(b.host_link, HostLink::UsbCdc { .. })) else {
        return crate::source::open(port, baud);
    };
    // The node of the firmware that ran before the reset may linger a moment.
    std::thread::sleep(Duration::from_millis(300));
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match crate::source::open(port, baud) {
            Ok(src) => return Ok(src),
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => {
                return Err(Error::DebugProbe(format!(
                    "{port} did not come back within 5 s of the {}'s reset ({e}): connect the {}'s own USB \
                     connector to this machine, and check the port with `latprobe list`",
                    b.name, b.name
                )))
            }
        }
    }
}

/// What `flash` and `run --flash` say when this latprobe has no probe-rs.
pub fn without_probe_rs(what: &str) -> Error {
    Error::Config(format!(
        "{what} needs the debug probe, and this latprobe was built without probe-rs: \
         build it with the default features (`cargo install --path host` or \
         `cargo build --release -p latprobe`, without --no-default-features)"
    ))
}

/// Open the link `run` measures over, flashing first with `--flash`: the
/// serial device or socket of `port`, or RTT through the debug probe.
/// Returns the link and notes for the report.
pub fn open_run_link(
    args: &RunProbeArgs,
    port: Option<&str>,
    baud: u32,
) -> Result<(Box<dyn crate::source::ByteSource>, Vec<String>), Error> {
    if args.link == LinkArg::Serial && port.is_none() {
        return Err(Error::Config(
            "give the probe's link: --port /dev/ttyACM0 (its virtual COM port; `latprobe list` shows it), \
             tcp:HOST:PORT or unix:PATH, or --link rtt"
                .into(),
        ));
    }
    if args.link == LinkArg::Rtt {
        if let Some(p) = port {
            return Err(Error::Config(format!(
                "--port {p} and --link rtt: RTT goes through the debug probe; drop --port, or use --link serial"
            )));
        }
    }
    if !args.needs_probe() {
        return Ok((crate::source::open(port.unwrap_or_default(), baud)?, Vec::new()));
    }
    #[cfg(feature = "probe-rs")]
    {
        debug::open_run_link(args, port, baud)
    }
    #[cfg(not(feature = "probe-rs"))]
    {
        Err(without_probe_rs(if args.flash { "--flash" } else { "--link rtt" }))
    }
}

/// The probe's Hello, owned.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HelloInfo {
    /// Board name.
    pub board: String,
    /// Firmware version.
    pub firmware_version: String,
    /// Protocol version.
    pub protocol_version: u8,
    /// Timer rate, ticks per second.
    pub timer_hz: u32,
    /// CRC-32 of the firmware image in flash (0: the probe does not say).
    pub build_id: u32,
}

/// Say Hello on `src` until the probe answers, for at most `timeout`.
pub fn await_hello(
    src: &mut dyn crate::source::ByteSource,
    timeout: std::time::Duration,
) -> Result<HelloInfo, Error> {
    use latprobe_protocol::{encode_message, HostMsg, ProbeMsg, MAX_FRAME_LEN, PROTOCOL_VERSION};
    use std::time::{Duration, Instant};

    use crate::link::{Deframer, Incoming};
    use crate::source::Read;

    let mut frame = [0u8; MAX_FRAME_LEN];
    let n = encode_message(&HostMsg::Hello { protocol_version: PROTOCOL_VERSION }, &mut frame)
        .map_err(|e| Error::Bug(format!("cannot frame Hello: {e}")))?;
    let deadline = Instant::now() + timeout;
    let mut deframer = Deframer::new();
    let mut buf = vec![0u8; 4096];
    let mut next_hello = Instant::now();
    let mut found: Option<Result<HelloInfo, Error>> = None;
    while Instant::now() < deadline {
        if Instant::now() >= next_hello {
            src.write_all(&frame[..n])
                .map_err(|e| Error::io(format!("cannot write to the probe on {}", src.name()), e))?;
            // The probe may still be booting after a reset: ask again.
            next_hello = Instant::now() + Duration::from_millis(500);
        }
        let got = src
            .read(&mut buf, Duration::from_millis(100))
            .map_err(|e| Error::io(format!("cannot read from the probe on {}", src.name()), e))?;
        let Read::Data(len) = got else { continue };
        let port = src.name().to_string();
        deframer.feed(&buf[..len], |inc| match inc {
            Incoming::Message(ProbeMsg::Hello(h)) if found.is_none() => {
                found = Some(Ok(HelloInfo {
                    board: h.board.to_string(),
                    firmware_version: h.firmware_version.to_string(),
                    protocol_version: h.protocol_version,
                    timer_hz: h.timer_hz,
                    build_id: h.build_id,
                }));
            }
            Incoming::OtherVersion(theirs) if found.is_none() => {
                found = Some(Err(Error::Link(LinkError::VersionMismatch {
                    port: port.clone(),
                    ours: PROTOCOL_VERSION,
                    theirs,
                })));
            }
            _ => {}
        });
        if let Some(r) = found.take() {
            return r;
        }
    }
    Err(Error::DebugProbe(format!(
        "no Hello from the probe on {} within {} s: the firmware does not run, or that link is not \
         this probe's (`latprobe list`)",
        src.name(),
        timeout.as_secs()
    )))
}

/// The Hello must come from the firmware just flashed: same board and
/// version.
pub fn check_hello(
    hello: &HelloInfo,
    board: &str,
    firmware_version: &str,
    image_crc: u32,
    port: &str,
) -> Result<(), Error> {
    if hello.build_id != 0 && hello.build_id != image_crc {
        return Err(Error::DebugProbe(format!(
            "the probe on {port} runs a build with image CRC {:#010x}, not the ELF's {image_crc:#010x}: \
             flash it (latprobe flash --force), or {port} is another probe's link (`latprobe list`)",
            hello.build_id
        )));
    }
    if hello.board != board || hello.firmware_version != firmware_version {
        return Err(Error::DebugProbe(format!(
            "the probe on {port} says it is {} firmware {}, not the {board} firmware {firmware_version} \
             just flashed: {port} is another probe's link (`latprobe list` pairs ports and probes)",
            hello.board, hello.firmware_version
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse_as_list_prints_them() {
        assert_eq!(parse_selector("0483:374b"), Ok(Selector { vid: 0x483, pid: 0x374b, serial: None }));
        let s = parse_selector("0483:374B:066DFF:x").unwrap();
        assert_eq!(s.serial.as_deref(), Some("066DFF:x"));
        assert_eq!(s.to_string(), "0483:374b:066DFF:x");
        assert!(parse_selector("stlink").unwrap_err().contains("VID:PID"));
        assert!(parse_selector("0483").is_err());
    }

    #[test]
    fn a_missing_elf_names_the_build_command() {
        let b = board("nucleo-f411re").unwrap();
        let e = find_elf(b, Some(Path::new("/nonexistent/fw.elf"))).unwrap_err().to_string();
        assert!(e.contains("--elf /nonexistent/fw.elf"), "{e}");
        assert!(board("qemu").unwrap_err().to_string().contains("nucleo-f411re"));
    }

    #[test]
    fn the_link_flags_name_what_is_missing() {
        let args = RunProbeArgs {
            link: LinkArg::Serial,
            flash: false,
            probe: None,
            chip: "STM32F411RETx".into(),
            elf: None,
            verbose: false,
        };
        let e = open_run_link(&args, None, 921_600).err().unwrap().to_string();
        assert!(e.contains("--port") && e.contains("--link rtt"), "{e}");
        let rtt = RunProbeArgs { link: LinkArg::Rtt, ..args };
        let e = open_run_link(&rtt, Some("/dev/ttyACM0"), 921_600).err().unwrap().to_string();
        assert!(e.contains("drop --port"), "{e}");
    }
}
