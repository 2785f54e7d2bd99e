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
//!
//! The parts, each re-exported here at the crate root: `config` (the mode,
//! capabilities, stimulus and [`Config`], with the timing rules), `message`
//! ([`HostMsg`], [`ProbeMsg`] and what they carry), `identity` (the
//! identity alphabet), `ticks` (ticks and ns), [`batch`] (the packed
//! samples and edges) and [`framing`] (COBS, CRC, the frame decoder).
#![cfg_attr(not(any(feature = "std", test)), no_std)]

pub mod batch;
mod config;
pub mod framing;
mod identity;
mod message;
mod ticks;
mod varint;

pub use batch::{
    BatchError, EdgeBatch, EdgeBatchBuilder, EdgeIter, EdgeStamp, Outcome, Sample, SampleBatch,
    SampleBatchBuilder, SampleBatchV4, SampleIter,
};
pub use config::{
    byte_ticks, min_interval_ticks, timing_fault, trigger_fault, Capabilities, Config, Edge, Mode,
    ResponseLine, Stimulus, TimingFault, TriggerFault,
};
pub use framing::{
    decode_message, decode_probe_message, encode_message, DecoderStats, EncodeError, Feed, FrameDecoder,
    FrameError, MessageError,
};
pub use identity::{
    identity_byte, identity_index, identity_of, DEFAULT_HORIZON_INTERVALS, IDENTITY_ALPHABET, IDENTITY_COUNT,
};
pub use message::{
    Anomalies, ErrorCode, ErrorReport, Heartbeat, HostMsg, LogLevel, LogLine, ProbeInfo, ProbeMsg,
    StopReason, Stopped,
};
pub use ticks::{ns_to_ticks, ticks_to_ns};

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
///
/// Version 4: the trigger. [`Config::trigger_ticks`] (0 = off) asks a
/// probe with [`Capabilities::TRIGGER`] to raise its trigger output when a
/// stimulus has gone that long unanswered; a [`SampleBatch`] carries
/// `triggered`, a bit per sample (one byte per batch when none triggered,
/// rather than a bit in every sample's varint or a message per trigger);
/// [`ErrorCode::BadTrigger`] and [`ErrorCode::NoTrigger`] refuse a
/// threshold.
///
/// Version 5: every scheduled instant is accounted for. A [`Sample`] whose
/// stimulus waited for its slot carries how late it went out
/// (`late_ticks`) and how many scheduled instants before it got no
/// stimulus (`omitted`); a [`SampleBatch`] flags them with `waited`, a bit
/// per sample, like `triggered` (one byte per batch when none waited).
/// Nothing else changed: [`decode_probe_message`] still reads protocol 4's
/// probe messages (an older raw file), their samples without a wait.
pub const PROTOCOL_VERSION: u8 = 5;

/// The oldest protocol version whose probe messages
/// [`decode_probe_message`] reads.
pub const OLDEST_READABLE_VERSION: u8 = 4;

/// Largest frame on the wire, both `0x00` delimiters included.
pub const MAX_FRAME_LEN: usize = 256;
/// Largest un-stuffed frame: version byte, postcard body and CRC.
/// COBS adds one byte per 254, and the two delimiters make up the rest.
pub const MAX_RAW_LEN: usize = MAX_FRAME_LEN - 3;
/// Largest postcard-encoded message body.
pub const MAX_MESSAGE_LEN: usize = MAX_RAW_LEN - 1 - 4;
/// Largest packed sample or edge data carried in one batch. With the batch
/// header (at most 51 bytes: the `triggered` and `waited` bits add up to
/// 20) it always fits in [`MAX_MESSAGE_LEN`]. (196 since protocol 5, whose
/// `waited` bits took 4 bytes of the 200 before.)
pub const MAX_BATCH_DATA: usize = 196;
/// Largest number of samples or edges in one batch.
pub const MAX_BATCH_COUNT: u16 = 64;
/// Longest error detail text a probe sends.
pub const MAX_ERROR_DETAIL: usize = 48;
/// Longest log line a probe sends.
pub const MAX_LOG_TEXT: usize = 96;

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
    }

    #[test]
    fn the_identity_index_is_the_sequence_number_modulo_nine_without_a_division() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let edges = (0..4096u64).chain((0..64).flat_map(|b| {
            let p = 1u64 << b;
            [p - 1, p, p + 1, u64::MAX - p]
        }));
        for seq in edges.chain(
            core::iter::from_fn(|| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                Some(x)
            })
            .take(100_000),
        ) {
            assert_eq!(identity_index(seq), (seq % 9) as usize, "seq {seq}");
        }
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
