//! The library's errors. Each one names what the user must change and knows
//! its exit code ([`crate::exit`]), so `main` prints one `Error:` line and
//! exits with the right code.

use std::io;
use std::time::Duration;

use crate::exit;

/// Everything that can end a latprobe command early.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag value or input file that cannot work; the message names it.
    #[error("{0}")]
    Usage(String),
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
    /// The run was measured and reported, and at least one limit
    /// (`--max`, `--percentile`, …) was violated: exit code 3.
    #[error("{0}")]
    Threshold(String),
    /// An I/O error on a file or the link.
    // The OS error is part of the message and deliberately not a `source`:
    // `Error: {:#}` would print its text twice.
    #[error("{context}: {cause}")]
    Io {
        /// What we were doing, naming the file or port.
        context: String,
        /// The OS error.
        cause: io::Error,
    },
}

impl Error {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_)
            | Error::PortOpen { .. }
            | Error::VersionMismatch { .. }
            | Error::Refused { .. }
            | Error::Garbled { .. }
            | Error::NoHello { .. } => exit::USAGE,
            Error::Silent { .. } | Error::Probe { .. } | Error::Closed { .. } | Error::Io { .. } => {
                exit::RUN_FAILED
            }
            Error::Threshold(_) => exit::THRESHOLD,
        }
    }

    /// An I/O error with what we were doing.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io { context: context.into(), cause: source }
    }
}
