//! The messages: [`HostMsg`] (host to probe) and [`ProbeMsg`] (probe to
//! host) with what they carry: the probe's self-description, heartbeats,
//! anomalies, totals, errors and log lines.

use serde::{Deserialize, Serialize};

use crate::{Capabilities, Config, EdgeBatch, SampleBatch};

/// Messages from the host to the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HostMsg {
    /// Ask the probe to introduce itself with [`ProbeMsg::Hello`].
    Hello {
        /// The host's [`PROTOCOL_VERSION`](crate::PROTOCOL_VERSION).
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
    /// The probe's [`PROTOCOL_VERSION`](crate::PROTOCOL_VERSION).
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
    /// Bytes outside [`IDENTITY_ALPHABET`](crate::IDENTITY_ALPHABET) while identity is on.
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
    /// A trigger threshold at or above the timeout, or outside an echo mode
    /// ([`trigger_fault`](crate::trigger_fault)).
    BadTrigger,
    /// A trigger threshold for a board without a trigger output
    /// ([`Capabilities::TRIGGER`]).
    NoTrigger,
}

/// The probe's answer when it refuses or fails something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ErrorReport<'a> {
    /// What went wrong.
    pub code: ErrorCode,
    /// A short human-readable detail, at most [`MAX_ERROR_DETAIL`](crate::MAX_ERROR_DETAIL) bytes.
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
    /// The text, at most [`MAX_LOG_TEXT`](crate::MAX_LOG_TEXT) bytes.
    pub text: &'a str,
}
