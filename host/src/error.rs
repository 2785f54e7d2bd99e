//! The library's errors, by area: the command line ([`Error::Config`]), the
//! files it names ([`Error::Input`], [`Error::Output`]), the probe's link
//! ([`LinkError`]), the debug probe ([`Error::DebugProbe`]), the target over
//! SSH ([`Error::Target`]), an in-kernel
//! tool's output ([`ImportError`]), a report that cannot be made
//! ([`Error::Report`]), a limit the run broke ([`Error::Threshold`]) and the
//! system's I/O ([`Error::Io`]). Each message names what the user must
//! change. Which exit code an area ends with is one table, in `main`
//! (`latprobe::exit` names the codes).

use std::io;
use std::time::Duration;

/// Everything that can end a latprobe command early, by area.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag's value, or a combination of flags, that cannot work; the
    /// message names the flag and the form it wants.
    #[error("{0}")]
    Config(String),
    /// A file named on the command line for reading (a raw file, a report,
    /// `--limits`, `--calibration`, `--target-log`, `--elf`, …) is missing,
    /// unreadable or not of its kind; the message names the file and the flag.
    #[error("{0}")]
    Input(String),
    /// An output path that cannot be written, found before anything is
    /// measured or rendered; the message names the flag and a path that would do.
    #[error("{0}")]
    Output(String),
    /// The probe's link: the port, the handshake, the run on the wire.
    #[error(transparent)]
    Link(#[from] LinkError),
    /// The debug probe (probe-rs): finding it, the chip, flashing, RTT, the ELF.
    #[error("{0}")]
    DebugProbe(String),
    /// The target driven over SSH (`--target`): unreachable, a key refused,
    /// the responder missing there or of another version.
    #[error("{0}")]
    Target(String),
    /// An in-kernel tool's output (cyclictest, rtla) that cannot be imported.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// A report, plot or comparison that cannot be made from what was given.
    #[error("{0}")]
    Report(String),
    /// The run was measured and reported, and at least one limit
    /// (`--max`, `--percentile`, …) was violated.
    #[error("{0}")]
    Threshold(String),
    /// An I/O error on a file, the link or the system, while working.
    // The OS error is part of the message and deliberately not a `source`:
    // `Error: {:#}` would print its text twice.
    #[error("{context}: {cause}")]
    Io {
        /// What we were doing, naming the file or port.
        context: String,
        /// The OS error.
        cause: io::Error,
    },
    /// Something latprobe itself got wrong; the message says to report it.
    #[error("{0} (a latprobe bug: please report it)")]
    Bug(String),
}

impl Error {
    /// An I/O error with what we were doing.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io { context: context.into(), cause: source }
    }
}

/// What went wrong on the probe's link.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The probe's port could not be opened.
    #[error("--port {port}: {reason}")]
    PortOpen {
        /// The port as given on the command line.
        port: String,
        /// Why, with a hint.
        reason: String,
    },
    /// The probe speaks another protocol version.
    #[error(
        "the probe on {port} speaks protocol version {theirs}, this latprobe speaks version {ours}: \
         flash the probe with firmware from the same latprobe release (or use a matching latprobe)"
    )]
    VersionMismatch {
        /// The port.
        port: String,
        /// Our version.
        ours: u8,
        /// The probe's version.
        theirs: u8,
    },
    /// The probe refused the configuration.
    #[error("the probe on {port} refused the configuration ({code}: {detail}): {hint}")]
    Refused {
        /// The port.
        port: String,
        /// The probe's error code, as its name.
        code: String,
        /// The probe's detail text.
        detail: String,
        /// Which flag to change.
        hint: String,
    },
    /// No byte arrived for too long.
    #[error(
        "no data from the probe on {port} for {}: check that the probe is powered and flashed \
         and that {port} is its link (or raise --silence-timeout)",
        crate::units::format_duration(*waited)
    )]
    Silent {
        /// The port.
        port: String,
        /// How long we waited.
        waited: Duration,
    },
    /// Not a byte came before the probe's Hello: no probe answers on the
    /// port (another device, a probe without firmware, a wrong port). A
    /// set-up error (exit 2): nothing was measured.
    #[error(
        "no Hello came from a probe on {port} within {}: check that {port} is the probe's link (see \
         latprobe list), that the probe is powered and runs latprobe firmware (latprobe flash), and \
         --baud (the link's rate)",
        crate::units::format_duration(*waited)
    )]
    NoHello {
        /// The port.
        port: String,
        /// How long we waited.
        waited: Duration,
    },
    /// The probe reported a failure while running.
    #[error("the probe on {port} failed: {what}")]
    Probe {
        /// The port.
        port: String,
        /// What it said.
        what: String,
    },
    /// The link closed under us.
    #[error("the link to the probe on {port} closed: {what}")]
    Closed {
        /// The port.
        port: String,
        /// In which phase.
        what: String,
    },
    /// The probe's port carries bytes but no latprobe frame: a baud rate
    /// mismatch, another device, or a probe without latprobe firmware.
    #[error(
        "the probe on {port} sent {bytes} bytes in {} but not one latprobe frame: check --baud \
         (it must be the probe link's rate), that {port} is the probe's link and not another device, \
         and that the probe runs latprobe firmware (flash it)",
        crate::units::format_duration(*waited)
    )]
    Garbled {
        /// The port.
        port: String,
        /// How long we listened.
        waited: Duration,
        /// Bytes that came, none of them a frame.
        bytes: u64,
    },
}

/// Why an in-kernel tool's output could not be imported. Displays as
/// `file:line: message`.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file could not be read.
    #[error("{file}: cannot read: {source}")]
    Io {
        /// The file.
        file: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is longer than latprobe reads whole.
    #[error(
        "{file}: longer than {cap}, the most latprobe reads of one file: import a shorter output \
         (cyclictest with a smaller -h, one file per run)"
    )]
    TooLong {
        /// The file.
        file: String,
        /// The cap, in words.
        cap: String,
    },
    /// The file is not what it should be at `line` (1-based).
    #[error("{file}:{line}: {message}")]
    Parse {
        /// The file.
        file: String,
        /// The line where the problem shows (for a missing line: where it
        /// was expected, one past the end for a cut file).
        line: usize,
        /// What was expected there and what was found.
        message: String,
    },
}
