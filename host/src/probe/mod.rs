//! The bench side of the probe board: which boards latprobe can flash,
//! where their firmware comes from, how a debug probe is named on the
//! command line, and the errors a user meets on a bench, each naming the
//! fix. The debug probe itself (probe-rs: flash, attach, RTT) is in
//! `debug` and the firmware ELF's checks in `elf`, both behind the
//! default `probe-rs` feature; without it these commands say how to get it.
//!
//! ```text
//!  latprobe flash ─┐                       ┌─▶ probe-rs: erase, program, verify, reset
//!  run --flash ────┼─▶ elf: board? protocol? ┤
//!  run --link rtt ─┘   (before any probe)   └─▶ RTT: source::rtt over the probe's memory
//! ```

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::error::{Error, LinkError};

#[cfg(feature = "probe-rs")]
pub mod debug;
#[cfg(feature = "probe-rs")]
pub mod elf;

/// A board latprobe can flash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Board {
    /// The name in the firmware's Hello and `--board`.
    pub name: &'static str,
    /// probe-rs's name for its chip.
    pub chip: &'static str,
    /// DBGMCU_IDCODE's DEV_ID of that chip (RM0383 §23.6.1), to tell a
    /// wrong chip before erasing it.
    pub dev_id: u16,
    /// What the DEV_ID is called, for the wrong-chip message.
    pub family: &'static str,
    /// The firmware binary's name under `target/thumbv7em-none-eabihf/firmware/`.
    pub elf_name: &'static str,
    /// The command that builds it.
    pub build: &'static str,
    /// The chip's RAM, where an RTT control block may be.
    pub ram: (u64, u64),
}

/// Every board `latprobe flash` knows (the QEMU board is not flashed).
pub const BOARDS: &[Board] = &[Board {
    name: "nucleo-f411re",
    chip: latprobe_firmware::boards::nucleo_f411re::CHIP,
    dev_id: latprobe_firmware::boards::nucleo_f411re::DEV_ID,
    family: "STM32F411xC/E",
    elf_name: "nucleo-f411re",
    build: "cargo fw-nucleo",
    ram: latprobe_firmware::boards::nucleo_f411re::RAM,
}];

/// The board named `name`.
pub fn board(name: &str) -> Result<&'static Board, Error> {
    BOARDS.iter().find(|b| b.name == name).ok_or_else(|| {
        let known: Vec<&str> = BOARDS.iter().map(|b| b.name).collect();
        Error::Config(format!("--board {name}: latprobe flashes {} only", known.join(", ")))
    })
}

/// The udev rule that lets a user (not root) open ST-LINK probes, as the
/// README gives it.
pub const UDEV_RULE: &str = r#"# /etc/udev/rules.d/70-latprobe-stlink.rules: ST-LINK/V2, V2-1, V3 for users at the seat
ATTRS{idVendor}=="0483", ATTRS{idProduct}=="3748|374b|374d|374e|374f|3752|3753|3754|3757", MODE="660", GROUP="plugdev", TAG+="uaccess""#;

/// The fix for "permission denied" on a USB probe.
pub fn permission_hint() -> String {
    "install the udev rule for ST-LINK probes and replug the board (the README's \"USB \
     permissions\" gives the rule: /etc/udev/rules.d/70-latprobe-stlink.rules, then \
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

/// What an ST-LINK with this VID:PID is, if it is one.
pub fn stlink_kind(vid: u16, pid: u16) -> Option<&'static str> {
    (vid == ST_VID).then(|| STLINK_PIDS.iter().find(|(p, _)| *p == pid).map(|(_, n)| *n)).flatten()
}

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
    /// The probe board's chip, as probe-rs names it
    #[arg(long, value_name = "CHIP", default_value = "STM32F411RETx")]
    pub chip: String,
    /// The firmware ELF: flashed with --flash, and the RTT control block and defmt table are read from it [default: the workspace's `cargo fw-nucleo` output]
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
/// given, in order: `$LATPROBE_FIRMWARE_DIR/<board>`; the firmware build of
/// the cargo workspace around the current directory (`$CARGO_TARGET_DIR`
/// or `target/`); the same for the tree this latprobe was built from.
pub fn elf_candidates(board: &Board) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(dir) = std::env::var_os("LATPROBE_FIRMWARE_DIR") {
        out.push(PathBuf::from(dir).join(board.elf_name));
    }
    let tail = Path::new("thumbv7em-none-eabihf").join("firmware").join(board.elf_name);
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
    fn stlinks_are_recognised() {
        assert_eq!(stlink_kind(0x0483, 0x374b), Some("ST-LINK/V2-1"));
        assert_eq!(stlink_kind(0x0483, 0x5740), None);
        assert_eq!(stlink_kind(0x1366, 0x374b), None);
        assert!(UDEV_RULE.contains("374b") && UDEV_RULE.contains("uaccess"));
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
