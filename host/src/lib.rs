//! latprobe, the host half: moves the probe's framed bytes from a transport
//! to a histogram and a report.
//!
//! ```text
//!  source (serial | tcp | unix | replay file | virtual probe)   bytes in/out
//!     └─▶ link     bytes ─▶ frames (deframe) ─▶ ProbeMsg   (+ --raw recording)
//!          └─▶ session  Hello / Configure / Start / ingest / Stop
//!               └─▶ analysis  sequence tracking, histogram, exact stats
//!                    └─▶ report/  text summary, JSON, cyclictest histfile
//! ```
//!
//! The modules in layers, bottom first. A module may use its own layer and
//! those below, never one above, and no set of files imports one another
//! in a circle (`host/tests/layers.rs` reads the source and checks both):
//!
//! | layer | modules |
//! |---|---|
//! | plain data and helpers | [`model`] (request, Hello, endings, calibration, limits: definitions only), [`units`], [`duration`], [`error`], [`out`], [`fsout`], [`timefmt`], [`input`], [`signals`], [`options`] (the flag groups several subcommands share) |
//! | bytes and processes | [`source`], [`deframe`], [`rawfile`], [`link`], [`probe`], [`virtual_probe`] (and `defmtlog`), [`target`] (the responder, here or over SSH) |
//! | statistics | [`analysis`] and its children: [`analysis::figure`] (censored figures, the percentile list), [`analysis::periodic`] (the fitted schedule, the cycle spill), [`analysis::timeline`] (latency per second), [`analysis::targetlog`] (the target's own log beside the probe's view); [`samples`] |
//! | the session | [`session`] |
//! | in-kernel outputs read | [`import`] |
//! | the report | [`report`], [`gates`], [`calibration`] |
//! | runs side by side | [`compare`], [`inkernel`] |
//! | the live path | [`measure`] (request, progress, session, target log, delivery of the outputs and their paths: shared by `run`, `demo`, `calibrate`, and `report`'s delivery) |
//! | subcommands | [`cmd`] |
//! | the command line | [`cli`] |
//!
//! The binary is a thin shell over [`cli::dispatch`], so tests drive the
//! same code.

pub mod analysis;
pub mod calibration;
pub mod cli;
pub mod cmd;
pub mod compare;
#[cfg(feature = "probe-rs")]
pub mod defmtlog;
pub mod deframe;
pub mod duration;
pub mod error;
pub mod fsout;
pub mod gates;
pub mod import;
pub mod inkernel;
pub mod input;
pub mod link;
pub mod measure;
pub mod model;
pub mod options;
pub mod out;
pub mod probe;
pub mod rawfile;
pub mod report;
pub mod samples;
pub mod session;
pub mod signals;
pub mod source;
pub mod target;
pub mod timefmt;
pub mod units;
pub mod virtual_probe;

pub use error::{Error, LinkError};

/// The process exit codes of `latprobe`. They are stable: CI scripts gate
/// on them.
pub mod exit {
    /// The run (or report) finished and every output was written.
    pub const OK: u8 = 0;
    /// The run failed: the probe faulted or fell silent, the link broke, a
    /// file could not be written. Whatever arrived is still reported.
    pub const RUN_FAILED: u8 = 1;
    /// The command line or the set-up it names is wrong: a bad flag, a port
    /// that does not exist, a configuration the probe refuses, a probe that
    /// speaks another protocol version. Retrying unchanged cannot succeed.
    pub const USAGE: u8 = 2;
    /// The run was measured and every output written, and a limit
    /// (`--max`, `--percentile`, `--max-timeouts`, `--max-lost`,
    /// `--max-late`, `--limits`) was violated. A failed run (1) or a usage
    /// error (2) outranks it.
    pub const THRESHOLD: u8 = 3;
}

/// This tool's version, as written into reports and raw files.
pub const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");
