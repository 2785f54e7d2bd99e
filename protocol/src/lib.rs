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
///
/// Version 2: uart-echo stimuli carry an identity ([`Stimulus::Identified`],
/// [`IDENTITY_ALPHABET`]), several stimuli may be in flight, Heartbeat
/// and Stopped carry [`Anomalies`] instead of a single late count, and the
/// probe's log lines travel as [`ProbeMsg::Log`].
///
/// Version 3: periodic mode names its line ([`Stimulus::None`] carries a
/// [`ResponseLine`]: the probe no longer guesses it from the first edges),
/// a byte stimulus needs an interval of at least a byte time plus the
/// guard ([`ErrorCode::ShortInterval`]), and [`Anomalies`] (in every
/// Heartbeat and in Stopped) count the probe's host-link receive errors.
pub const PROTOCOL_VERSION: u8 = 3;

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
/// Longest log line a probe sends.
pub const MAX_LOG_TEXT: usize = 96;

/// The identity bytes of [`Stimulus::Identified`], in the order stimuli use
/// them: stimulus `seq` sends `IDENTITY_ALPHABET[seq % 9]`.
///
/// These are the nine bytes whose only falling edge on an 8N1 line is the
/// start bit: sent LSB first, each is a run of 0 bits then a run of 1 bits
/// (0x00, then 0x80 = 0000_0001 on the wire, … 0xFF), so the line goes
/// idle-high → start-bit low → data low … → data high … → stop high, with
/// exactly one high-to-low transition. A probe that captures falling edges
/// on the response line gets exactly one capture per answer byte: its start
/// bit, whatever the byte. Any other byte value has a second falling edge
/// inside it and is no identity.
pub const IDENTITY_ALPHABET: [u8; 9] = [0x00, 0x80, 0xC0, 0xE0, 0xF0, 0xF8, 0xFC, 0xFE, 0xFF];

/// Number of identities: at most this many [`Stimulus::Identified`]
/// stimuli are in flight at once.
pub const IDENTITY_COUNT: usize = IDENTITY_ALPHABET.len();

/// The default horizon of `uart-echo` with identity, in intervals: an answer
/// up to this many intervals late is still matched and timed exactly.
pub const DEFAULT_HORIZON_INTERVALS: u32 = 8;

/// The identity byte of stimulus `seq`.
pub const fn identity_byte(seq: u64) -> u8 {
    IDENTITY_ALPHABET[(seq % IDENTITY_COUNT as u64) as usize]
}

/// The identity (0..9) of an answer byte, or `None` for a byte outside
/// [`IDENTITY_ALPHABET`].
pub const fn identity_of(byte: u8) -> Option<usize> {
    // The alphabet is 0x00 and the bytes of n leading ones (0x80 … 0xFF):
    // a byte is in it when its complement's bits are all contiguous from bit 0.
    let inv = !byte;
    if inv & inv.wrapping_add(1) != 0 {
        return None;
    }
    Some(byte.leading_ones() as usize)
}

/// Measurement modes; see the README, "What is in the repository".
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

/// What a periodic target's line carries: the host says it (`--line`),
/// the probe never guesses it from the edges it sees (a glitch, a break or
/// a byte cut at the start of a run would decide it wrongly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ResponseLine {
    /// A GPIO: every edge, rising and falling, is a periodic event.
    Gpio,
    /// A UART: each byte is one event, timed at its start bit; the byte's
    /// data edges are not events.
    Uart,
}

/// What the probe sends as a stimulus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Stimulus {
    /// An edge on the stimulus GPIO (`gpio-echo`, GPIO `loopback`).
    Edge(Edge),
    /// The same byte on the stimulus UART for every stimulus (`uart-echo`,
    /// UART `loopback`), for targets that answer with a constant: no
    /// identity, so one stimulus is in flight at a time, as with an edge.
    Byte(u8),
    /// No stimulus (`periodic`): the target makes its own edges on the
    /// response line, of this kind.
    None(ResponseLine),
    /// A byte from [`IDENTITY_ALPHABET`] per stimulus (`uart-echo`, UART
    /// `loopback`): stimulus `seq` sends [`identity_byte`]`(seq)`, the
    /// probe pairs each answer with its stimulus by that byte, and up to
    /// [`IDENTITY_COUNT`] stimuli are in flight.
    Identified,
}

impl Stimulus {
    /// Whether answers are matched by identity (several in flight).
    pub const fn has_identity(self) -> bool {
        matches!(self, Stimulus::Identified)
    }

    /// Whether the stimulus is a byte on a UART (fixed or identified).
    pub const fn is_byte(self) -> bool {
        matches!(self, Stimulus::Byte(_) | Stimulus::Identified)
    }

    /// How many stimuli may be in flight at once.
    pub const fn window(self) -> usize {
        if self.has_identity() {
            IDENTITY_COUNT
        } else {
            1
        }
    }
}

/// One 8N1 byte (10 bits) at `baud` on a timer of `timer_hz`, in ticks,
/// rounded up; 0 for a line without bit timing (`baud` 0, an emulated
/// UART).
pub const fn byte_ticks(timer_hz: u32, baud: u32) -> u64 {
    if baud == 0 {
        0
    } else {
        (10 * timer_hz as u64).div_ceil(baud as u64)
    }
}

/// Which timing rule of an echo mode's schedule a configuration breaks
/// ([`timing_fault`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimingFault {
    /// A timeout of 0: no time for an answer.
    NoTimeout,
    /// The timeout reaches the window's span (`window · interval`): a
    /// stimulus's timeout would run into the next use of its slot.
    TimeoutTooLong,
    /// `dither + timeout + guard` exceeds the window's span: a sample and
    /// its guard would not end before its slot is used again.
    Crowded,
}

/// The timing rule of an echo mode, in any one unit (ticks on the probe,
/// nanoseconds on the host before it knows the tick): with `window`
/// stimuli in flight ([`Stimulus::window`]), `0 < timeout < window ·
/// interval` and `dither + timeout + guard <= window · interval`. The
/// probe's `validate` (`BadTimeout`, `BadDither`) and the host (before it
/// sends, naming the flags) apply this one rule, checked in this order.
pub const fn timing_fault(
    window: u64,
    interval: u64,
    dither: u64,
    timeout: u64,
    guard: u64,
) -> Option<TimingFault> {
    let span = interval.saturating_mul(window);
    if timeout == 0 {
        Some(TimingFault::NoTimeout)
    } else if timeout >= span {
        Some(TimingFault::TimeoutTooLong)
    } else if dither.saturating_add(timeout).saturating_add(guard) > span {
        Some(TimingFault::Crowded)
    } else {
        None
    }
}

/// The shortest interval a byte stimulus allows on a target line of
/// `byte_ticks` per byte ([`byte_ticks`]), in ticks: each stimulus byte must
/// have left the transmitter before the next is written, or the probe would
/// open its start-bit capture while the last byte's data edges still shift
/// out. A fixed byte (one in flight) also keeps `guard_ticks` of quiet
/// after it; with identity the guard is per identity (nine intervals on),
/// so one byte time is the limit. No limit for other stimuli. Both the
/// probe (`Configure`, [`ErrorCode::ShortInterval`]) and the host (before
/// it sends, naming the baud) apply this one rule.
pub const fn min_interval_ticks(stimulus: Stimulus, byte_ticks: u64, guard_ticks: u32) -> u64 {
    match stimulus {
        Stimulus::Byte(_) => byte_ticks + guard_ticks as u64,
        Stimulus::Identified => byte_ticks,
        Stimulus::Edge(_) | Stimulus::None(_) => 0,
    }
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
    /// A response later than this after its stimulus is a timeout sample:
    /// a latency known only to exceed it. With one stimulus in flight (an
    /// edge, a fixed byte) it must fit in the interval with dither and
    /// guard; with [`Stimulus::Identified`] it is the horizon and may span
    /// up to [`IDENTITY_COUNT`] intervals less dither and guard.
    pub timeout_ticks: u32,
    /// Minimum quiet time after a sample ends (response or timeout) before
    /// the next stimulus on the same slot: with one in flight, the next
    /// stimulus; with identity, the next one with the same identity.
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
    /// Baud rate of the probe's target UART line (the stimulus bytes and
    /// their echoes), 0 when the line has no bit timing (an emulated or
    /// virtual probe) or the board has no UART line. A calibration of the
    /// UART path holds only for this rate.
    pub target_baud: u32,
    /// CRC-32 (this protocol's, ISO-HDLC) of the firmware image in flash,
    /// from its first to its last loaded byte with gaps as erased flash
    /// (0xFF): the host compares it with an ELF's to tell whether the
    /// probe already runs that exact build. 0 when unknown (an emulated or
    /// virtual probe).
    pub build_id: u32,
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
    /// Answers that were not timed, stimuli that slipped, line faults.
    pub anomalies: Anomalies,
}

/// What happened on the lines besides the samples: answers counted but
/// never timed, stimuli that had to wait, and the board's line faults.
/// Carried in every [`Heartbeat`] and in [`Stopped`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Anomalies {
    /// Answers to a stimulus that had already timed out, answers with no
    /// stimulus outstanding (one in flight at a time), and answers faster
    /// than the line allows (an earlier stimulus's echo).
    pub late: u64,
    /// Answers whose identity's stimulus had already been answered.
    pub duplicates: u64,
    /// Identity bytes that match no stimulus in flight (or an answer with
    /// no byte while identity is on).
    pub unmatched: u64,
    /// Bytes outside [`IDENTITY_ALPHABET`] while identity is on.
    pub wrong_bytes: u64,
    /// Stimuli sent later than their schedule because the slot they need
    /// was still busy: every identity held by an unanswered stimulus, or
    /// (one in flight) the previous sample not yet over.
    pub slipped: u64,
    /// The longest of those delays, in ticks.
    pub slip_max_ticks: u64,
    /// Their sum, in ticks.
    pub slip_total_ticks: u64,
    /// Identities taken back from a timed-out stimulus without proof that
    /// its answer is not coming (no later answer for a whole second): an
    /// answer later than that could be credited to a newer stimulus.
    pub reclaimed: u64,
    /// Captures the hardware overwrote before they were read.
    pub overcaptures: u32,
    /// Receive errors on the target line (framing, noise, overrun).
    pub line_errors: u32,
    /// Stimuli whose tick the board took in software (the counter read
    /// right before the write or the forced edge) instead of by hardware
    /// compare or capture: good to the write's duration, not to a tick.
    pub soft_stimuli: u64,
    /// Receive errors on the host link: the probe's UART flagged an
    /// overrun, framing or noise error, or its receive buffer was not
    /// emptied in time. Host bytes were lost with each (a damaged frame
    /// also counts in `Heartbeat::rx_bad_frames`).
    pub host_rx_errors: u32,
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
    /// Untimed answers, slips and line faults of the run.
    pub anomalies: Anomalies,
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
    /// `timeout_ticks` was zero, or too long for the mode (see
    /// [`Config::timeout_ticks`]).
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
    /// A byte stimulus with an interval shorter than one byte time on the
    /// target line plus the guard: the next byte would be written while the
    /// last one still shifts out, and its start bit could not be told from
    /// the last one's data edges.
    ShortInterval,
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
    /// A line of the probe's own log (a missing wire, overcaptures, a clock
    /// problem), so a user on the serial link sees what RTT would show.
    #[serde(borrow)]
    Log(LogLine<'a>),
}

/// How much a [`LogLine`] matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LogLevel {
    /// For the curious.
    Info,
    /// The figures may be affected: the report should say so.
    Warn,
    /// Something is broken on the probe.
    Error,
}

/// One line of the probe's log, in [`ProbeMsg::Log`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LogLine<'a> {
    /// How much it matters.
    pub level: LogLevel,
    /// The probe's extended tick when it was logged.
    pub tick: u64,
    /// The text, at most [`MAX_LOG_TEXT`] bytes.
    pub text: &'a str,
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
    fn the_timing_rule_at_its_edges() {
        use TimingFault::*;
        // One in flight, interval 1000: timeout in 1..=999, the sum at most 1000.
        assert_eq!(timing_fault(1, 1000, 0, 0, 0), Some(NoTimeout));
        assert_eq!(timing_fault(1, 1000, 0, 1000, 0), Some(TimeoutTooLong));
        assert_eq!(timing_fault(1, 1000, 100, 800, 100), None);
        assert_eq!(timing_fault(1, 1000, 100, 800, 101), Some(Crowded));
        // Nine in flight: the span is nine intervals.
        assert_eq!(timing_fault(9, 1000, 0, 8999, 1), None);
        assert_eq!(timing_fault(9, 1000, 0, 9000, 0), Some(TimeoutTooLong));
        // Sums past u64 saturate, and are crowded, not wrapped into range.
        assert_eq!(timing_fault(1, u64::MAX / 2, u64::MAX, 1, u64::MAX), Some(Crowded));
    }

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

    /// Falling edges of `byte` on an 8N1 line: idle high, start bit low,
    /// data LSB first, stop bit high.
    fn falling_edges(byte: u8) -> usize {
        let mut bits = vec![true, false];
        bits.extend((0..8).map(|i| byte >> i & 1 == 1));
        bits.push(true);
        bits.windows(2).filter(|w| w[0] && !w[1]).count()
    }

    #[test]
    fn the_identity_alphabet_is_exactly_the_bytes_with_one_falling_edge() {
        for b in 0..=255u8 {
            let one_edge = falling_edges(b) == 1;
            assert_eq!(identity_of(b).is_some(), one_edge, "byte {b:#04x}");
            assert_eq!(IDENTITY_ALPHABET.contains(&b), one_edge, "byte {b:#04x}");
        }
        for (i, &b) in IDENTITY_ALPHABET.iter().enumerate() {
            assert_eq!(identity_of(b), Some(i));
        }
        for seq in [0u64, 1, 8, 9, 10, 1_000_001, u64::MAX] {
            assert_eq!(identity_of(identity_byte(seq)), Some((seq % 9) as usize));
        }
        assert!(Stimulus::Identified.has_identity() && Stimulus::Identified.is_byte());
        assert_eq!((Stimulus::Identified.window(), Stimulus::Byte(1).window()), (9, 1));
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
