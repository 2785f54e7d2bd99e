//! The latprobe wire contract: the messages probe and host exchange, their
//! framing (COBS + CRC-32) and the compact sample-batch encoding.
//!
//! This crate is an interface document in code. It holds types, size
//! constants and framing, no I/O, and builds `no_std` without allocation so
//! the probe firmware and the host share one definition.
//!
//! ```text
//!  message ──postcard──▶ [version][body][crc32 LE] ──COBS──▶ 0x00 … 0x00 on the wire
//! ```
//!
//! Every tick value is a count of the probe's hardware timer, whose rate the
//! probe announces as [`ProbeInfo::timer_hz`]. Nothing on the wire is a float.
#![cfg_attr(not(any(feature = "std", test)), no_std)]

pub mod batch;
pub mod framing;
mod varint;

use serde::{Deserialize, Serialize};

pub use batch::{
    BatchError, EdgeBatch, EdgeBatchBuilder, EdgeIter, EdgeStamp, Outcome, Sample, SampleBatch,
    SampleBatchBuilder, SampleIter,
};
pub use framing::{
    decode_message, encode_message, DecoderStats, EncodeError, Feed, FrameDecoder, FrameError, MessageError,
};

/// Version of this wire contract. It is the first byte of every frame, so a
/// peer speaking another version is recognised before its body is parsed.
pub const PROTOCOL_VERSION: u8 = 1;

/// Largest frame on the wire, both `0x00` delimiters included.
pub const MAX_FRAME_LEN: usize = 256;
/// Largest un-stuffed frame: version byte, postcard body and CRC.
/// COBS adds one byte per 254, and the two delimiters make up the rest.
pub const MAX_RAW_LEN: usize = MAX_FRAME_LEN - 3;
/// Largest postcard-encoded message body.
pub const MAX_MESSAGE_LEN: usize = MAX_RAW_LEN - 1 - 4;
/// Largest packed sample or edge data carried in one batch. With the batch
/// header (at most 31 bytes) it always fits in [`MAX_MESSAGE_LEN`].
pub const MAX_BATCH_DATA: usize = 200;
/// Largest number of samples or edges in one batch.
pub const MAX_BATCH_COUNT: u16 = 64;
/// Longest error detail text a probe sends.
pub const MAX_ERROR_DETAIL: usize = 48;

/// Measurement modes; see DESIGN.md, "Measurement modes and lines".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Mode {
    /// Output-compare edge out, the target toggles a GPIO back.
    GpioEcho,
    /// A byte out on a UART, the target echoes it.
    UartEcho,
    /// No stimulus: the target toggles a line (or sends a byte) every period
    /// on its own timer and the probe timestamps it.
    Periodic,
    /// The stimulus wired straight back: the probe's own offset and jitter.
    Loopback,
}

impl Mode {
    /// All modes, in wire order.
    pub const ALL: [Mode; 4] = [Mode::GpioEcho, Mode::UartEcho, Mode::Periodic, Mode::Loopback];

    /// The capability bit a board must announce to accept this mode.
    pub const fn capability(self) -> Capabilities {
        match self {
            Mode::GpioEcho => Capabilities::GPIO_ECHO,
            Mode::UartEcho => Capabilities::UART_ECHO,
            Mode::Periodic => Capabilities::PERIODIC,
            Mode::Loopback => Capabilities::LOOPBACK,
        }
    }

    /// Whether the probe sends a stimulus and measures a response.
    pub const fn is_echo(self) -> bool {
        !matches!(self, Mode::Periodic)
    }

    /// The name used on the command line and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Mode::GpioEcho => "gpio-echo",
            Mode::UartEcho => "uart-echo",
            Mode::Periodic => "periodic",
            Mode::Loopback => "loopback",
        }
    }
}

/// What a board can do, as bit flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Capabilities(pub u32);

impl Capabilities {
    /// `gpio-echo` mode.
    pub const GPIO_ECHO: Self = Self(1 << 0);
    /// `uart-echo` mode.
    pub const UART_ECHO: Self = Self(1 << 1);
    /// `periodic` mode.
    pub const PERIODIC: Self = Self(1 << 2);
    /// `loopback` mode.
    pub const LOOPBACK: Self = Self(1 << 3);
    /// Timestamps are taken by hardware input capture / output compare, so
    /// no interrupt latency of the probe enters a figure.
    pub const HW_CAPTURE: Self = Self(1 << 8);
    /// The probe is emulated or virtual (QEMU, the host's virtual probe):
    /// its figures are not physical.
    pub const EMULATED: Self = Self(1 << 9);

    /// No capability.
    pub const fn empty() -> Self {
        Self(0)
    }

    /// Whether every bit of `other` is set here.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// The union of both sets.
    #[must_use]
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl core::ops::BitOr for Capabilities {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        self.union(rhs)
    }
}

/// Which edge the probe drives on its stimulus line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Edge {
    /// Low to high; the line is returned low before the next stimulus.
    Rising,
    /// High to low; the line is returned high before the next stimulus.
    Falling,
    /// Invert the line on every stimulus.
    Toggle,
}

/// What the probe sends as a stimulus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Stimulus {
    /// An edge on the stimulus GPIO (`gpio-echo`, GPIO `loopback`).
    Edge(Edge),
    /// A byte on the stimulus UART (`uart-echo`, UART `loopback`).
    Byte(u8),
    /// No stimulus (`periodic`).
    None,
}

/// A measurement's parameters, all in probe ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Config {
    /// What to measure.
    pub mode: Mode,
    /// Nominal time between stimuli. Must not be zero in echo modes.
    pub interval_ticks: u32,
    /// Each stimulus is delayed by a uniform random `0..=dither_ticks`
    /// so that stimuli do not phase-lock with the target's own tick.
    pub dither_ticks: u32,
    /// A response later than this after its stimulus is a timeout sample.
    /// Must be smaller than the interval.
    pub timeout_ticks: u32,
    /// Minimum quiet time after a response or timeout before the next
    /// stimulus, so that a late answer is never matched to the next one.
    pub guard_ticks: u32,
    /// Number of samples (echo) or edges (periodic) to take; `None` runs
    /// until [`HostMsg::Stop`].
    pub count: Option<u64>,
    /// Seed of the dither generator: the same seed gives the same schedule.
    pub seed: u64,
    /// What the stimulus is.
    pub stimulus: Stimulus,
}

/// Messages from the host to the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HostMsg {
    /// Ask the probe to introduce itself with [`ProbeMsg::Hello`].
    Hello {
        /// The host's [`PROTOCOL_VERSION`].
        protocol_version: u8,
    },
    /// Set the next measurement's parameters; answered by
    /// [`ProbeMsg::Configured`] or [`ProbeMsg::Error`].
    Configure(Config),
    /// Start the configured measurement; answered by [`ProbeMsg::Started`].
    Start,
    /// Stop the running measurement; answered by [`ProbeMsg::Stopped`].
    Stop,
    /// Ask for a [`ProbeMsg::Heartbeat`] now.
    Ping {
        /// Echoed back in the heartbeat.
        nonce: u32,
    },
}

/// The probe's self-description, sent in [`ProbeMsg::Hello`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ProbeInfo<'a> {
    /// The probe's [`PROTOCOL_VERSION`].
    pub protocol_version: u8,
    /// Firmware version string (crate version).
    pub firmware_version: &'a str,
    /// Board name, such as `nucleo-f411re` or `qemu`.
    pub board: &'a str,
    /// Rate of the measurement timer, in Hz.
    pub timer_hz: u32,
    /// Width of the hardware counter in bits (16 or 32; 64 for a virtual
    /// probe). The engine extends it to 64 bits either way.
    pub timer_bits: u8,
    /// Modes and properties of this board.
    pub capabilities: Capabilities,
    /// Most samples or edges the probe puts in one batch.
    pub max_batch: u16,
}

/// Why a measurement ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum StopReason {
    /// The configured count was reached.
    CountReached,
    /// The host sent [`HostMsg::Stop`].
    HostStop,
    /// The probe hit an unrecoverable condition.
    Fault,
}

/// Counters of a running measurement, in [`ProbeMsg::Heartbeat`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Heartbeat {
    /// The probe's extended tick counter when the heartbeat was made.
    pub tick: u64,
    /// The nonce of the [`HostMsg::Ping`] this answers, 0 if unsolicited.
    pub nonce: u32,
    /// Whether a measurement is running.
    pub running: bool,
    /// Samples (echo) or edges (periodic) taken so far.
    pub taken: u64,
    /// Samples or edges dropped because the output queue was full.
    pub dropped: u64,
    /// Times the output queue was found full.
    pub overruns: u32,
    /// Damaged frames received from the host.
    pub rx_bad_frames: u32,
    /// Responses that matched no stimulus: after their stimulus's timeout,
    /// or with none outstanding. Counted, never taken for an answer.
    pub late: u64,
}

/// Totals of a finished measurement, in [`ProbeMsg::Stopped`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Stopped {
    /// Why it ended.
    pub reason: StopReason,
    /// The probe's tick when it ended.
    pub end_tick: u64,
    /// Samples (echo, responses and timeouts) or edges (periodic) taken.
    pub taken: u64,
    /// Of those, timeouts.
    pub timeouts: u64,
    /// Samples or edges dropped because the output queue was full.
    pub dropped: u64,
    /// Times the output queue was found full.
    pub overruns: u32,
    /// Responses that matched no stimulus (see [`Heartbeat::late`]).
    pub late: u64,
}

/// Why the probe refused or failed something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ErrorCode {
    /// A frame from the host failed its CRC or framing.
    BadFrame,
    /// A frame from the host had another protocol version.
    VersionMismatch,
    /// A frame from the host was intact but not a valid message.
    BadMessage,
    /// `interval_ticks` was zero in an echo mode.
    ZeroInterval,
    /// `timeout_ticks` was not smaller than `interval_ticks`, or zero.
    BadTimeout,
    /// `dither_ticks` or `guard_ticks` leave no room in the interval.
    BadDither,
    /// `count` was `Some(0)`.
    ZeroCount,
    /// The board does not have this mode.
    UnsupportedMode,
    /// The stimulus does not fit the mode (a byte for gpio-echo, say).
    BadStimulus,
    /// Start without a valid Configure.
    NotConfigured,
    /// Configure or Start while a measurement runs.
    Busy,
    /// Stop while nothing runs.
    NotRunning,
    /// An internal fault of the probe.
    Internal,
}

/// The probe's answer when it refuses or fails something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ErrorReport<'a> {
    /// What went wrong.
    pub code: ErrorCode,
    /// A short human-readable detail, at most [`MAX_ERROR_DETAIL`] bytes.
    pub detail: &'a str,
}

/// Messages from the probe to the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ProbeMsg<'a> {
    /// The answer to [`HostMsg::Hello`]; also sent once at boot.
    #[serde(borrow)]
    Hello(ProbeInfo<'a>),
    /// The configuration was accepted, as the probe will run it.
    Configured(Config),
    /// The measurement began.
    Started {
        /// The tick the measurement's schedule counts from.
        start_tick: u64,
        /// Sequence number of the first sample or edge.
        first_seq: u64,
    },
    /// Echo-mode samples.
    #[serde(borrow)]
    SampleBatch(SampleBatch<'a>),
    /// Periodic-mode edge timestamps.
    #[serde(borrow)]
    EdgeBatch(EdgeBatch<'a>),
    /// Counters, periodically and in answer to [`HostMsg::Ping`].
    Heartbeat(Heartbeat),
    /// The measurement ended; no batch follows.
    Stopped(Stopped),
    /// Something was refused or failed.
    #[serde(borrow)]
    Error(ErrorReport<'a>),
}

/// Convert probe ticks to nanoseconds, rounded to nearest, in exact integer
/// arithmetic. `timer_hz` of zero yields zero rather than a panic.
pub const fn ticks_to_ns(ticks: u64, timer_hz: u32) -> u64 {
    if timer_hz == 0 {
        return 0;
    }
    let hz = timer_hz as u128;
    let ns = (ticks as u128 * 1_000_000_000 + hz / 2) / hz;
    if ns > u64::MAX as u128 {
        u64::MAX
    } else {
        ns as u64
    }
}

/// Convert nanoseconds to probe ticks, rounded to nearest, in exact integer
/// arithmetic.
pub const fn ns_to_ticks(ns: u64, timer_hz: u32) -> u64 {
    let t = (ns as u128 * timer_hz as u128 + 500_000_000) / 1_000_000_000;
    if t > u64::MAX as u128 {
        u64::MAX
    } else {
        t as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_conversion_is_exact_and_rounds() {
        assert_eq!(ticks_to_ns(1, 100_000_000), 10);
        assert_eq!(ticks_to_ns(5_000, 100_000_000), 50_000);
        // 1 tick at 3 MHz is 333.33 ns: rounds down; 2 ticks 666.67: up.
        assert_eq!(ticks_to_ns(1, 3_000_000), 333);
        assert_eq!(ticks_to_ns(2, 3_000_000), 667);
        assert_eq!(ticks_to_ns(u64::MAX, 1_000_000_000), u64::MAX);
        assert_eq!(ticks_to_ns(7, 0), 0);
        assert_eq!(ns_to_ticks(1_000_000, 100_000_000), 100_000);
        assert_eq!(ns_to_ticks(15, 100_000_000), 2);
    }

    #[test]
    fn every_mode_has_its_own_capability() {
        let mut all = Capabilities::empty();
        for m in Mode::ALL {
            assert!(!all.contains(m.capability()));
            all = all | m.capability();
        }
        assert!(!Mode::Periodic.is_echo());
        assert_eq!(Mode::UartEcho.name(), "uart-echo");
    }
}
