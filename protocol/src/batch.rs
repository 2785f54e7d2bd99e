//! Packed batches of samples and edges: a header with absolute values, then
//! per item a few varint bytes of deltas, so a sample costs ~4 bytes.
//!
//! Sample data, per sample `i` (the first sample's stimulus is `base_tick`):
//! ```text
//!   i > 0: zigzag(stimulus_i - stimulus_{i-1} - interval_ticks)   varint
//!   all:   0 = timeout, else latency_ticks + 1                      varint
//! ```
//! Edge data, per edge `i` (the first edge is at `base_tick`), with
//! `d_i = tick_i - tick_{i-1}` and `d_0 = 0`:
//! ```text
//!   i > 0: zigzag(d_i - d_{i-1})                                    varint
//! ```
//! A timeout is its own code, never a large latency. Which samples
//! triggered travels in the header, a bit per sample (`triggered`, bit `i`
//! for sample `first_seq + i`; [`MAX_BATCH_COUNT`] is 64): triggers are the
//! rare tail, so a varint of 0 (one byte a batch) is the usual cost, and
//! the flag can never be lost apart from its sample.
//!
//! A stimulus that waited for its slot (protocol 5) is flagged the same
//! way (`waited`, a bit per sample), and only a flagged sample carries,
//! after its latency code,
//! ```text
//!   waited:  late_ticks                                             varint
//!            omitted                                                varint
//! ```
//! so a run whose target keeps up pays one byte a batch for it. (Protocol
//! 4's batch had no `waited`; [`SampleBatchV4`] reads it.)

use serde::{Deserialize, Serialize};

use crate::varint;
use crate::{MAX_BATCH_COUNT, MAX_BATCH_DATA};

/// How an echo sample ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Outcome {
    /// The response came this many ticks after the stimulus.
    Response(u32),
    /// No response within the configured timeout.
    Timeout,
}

/// One echo-mode sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Sample {
    /// Sequence number: one per stimulus, contiguous from `first_seq`.
    pub seq: u64,
    /// The extended tick of the stimulus edge or start bit.
    pub stimulus_tick: u64,
    /// Latency or timeout.
    pub outcome: Outcome,
    /// The probe raised its trigger output for this stimulus: it went
    /// `Config::trigger_ticks` without an answer.
    pub triggered: bool,
    /// How long the stimulus went out after its planned instant because
    /// its slot was still busy (every identity held by an unanswered
    /// stimulus, or one in flight and the last sample not over: the target
    /// was behind): the planned instant is `stimulus_tick - late_ticks`.
    /// 0 for a stimulus its slot did not hold, however late the probe
    /// itself was to send it (that is the probe's, counted as a slip; its
    /// tick is the true one).
    pub late_ticks: u32,
    /// Scheduled instants that got no stimulus because this one waited an
    /// interval or more (the schedule re-anchored at its send): they are
    /// at `planned + k * interval_ticks` for `k` in `1..=omitted`, all at
    /// or before this stimulus's tick. 0 when `late_ticks` is below the
    /// interval.
    pub omitted: u32,
}

impl Sample {
    /// Whether the stimulus waited: it carries `late_ticks` or `omitted`.
    pub fn waited(&self) -> bool {
        self.late_ticks != 0 || self.omitted != 0
    }
}

/// One periodic-mode edge (or byte start) timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EdgeStamp {
    /// Sequence number: one per captured edge.
    pub seq: u64,
    /// The extended tick of the capture.
    pub tick: u64,
}

/// Why a batch could not be built or read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum BatchError {
    /// The batch has no room for this item; send it and start another.
    Full,
    /// The item's sequence number does not follow the batch's last one.
    NotContiguous {
        /// The sequence number the batch expected.
        expected: u64,
        /// The one it got.
        got: u64,
    },
    /// The item's tick is before the previous item's.
    Backwards,
    /// The data ended before `count` items were read.
    Truncated,
    /// Bytes are left after `count` items.
    TrailingData,
    /// A decoded value does not fit its type.
    Overflow,
}

impl core::fmt::Display for BatchError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            BatchError::Full => f.write_str("batch is full"),
            BatchError::NotContiguous { expected, got } => {
                write!(f, "sequence {got} does not follow {expected}")
            }
            BatchError::Backwards => f.write_str("timestamp runs backwards"),
            BatchError::Truncated => f.write_str("batch data truncated"),
            BatchError::TrailingData => f.write_str("bytes left after the last item"),
            BatchError::Overflow => f.write_str("value out of range"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for BatchError {}

/// Echo-mode samples on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SampleBatch<'a> {
    /// Sequence number of the first sample; the rest follow contiguously.
    pub first_seq: u64,
    /// Stimulus tick of the first sample.
    pub base_tick: u64,
    /// The nominal interval the stimulus deltas are coded against.
    pub interval_ticks: u32,
    /// Number of samples in `data`.
    pub count: u16,
    /// Bit `i` set: sample `first_seq + i` triggered (module docs).
    pub triggered: u64,
    /// Bit `i` set: sample `first_seq + i` waited for its slot, and its
    /// `late_ticks` and `omitted` follow its latency code (module docs).
    pub waited: u64,
    /// The packed samples (module docs).
    pub data: &'a [u8],
}

/// A [`SampleBatch`] as protocol 4 sent it: no `waited` bits (no sample
/// of that protocol carries a wait). Read from older raw files only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleBatchV4<'a> {
    /// [`SampleBatch::first_seq`].
    pub first_seq: u64,
    /// [`SampleBatch::base_tick`].
    pub base_tick: u64,
    /// [`SampleBatch::interval_ticks`].
    pub interval_ticks: u32,
    /// [`SampleBatch::count`].
    pub count: u16,
    /// [`SampleBatch::triggered`].
    pub triggered: u64,
    /// [`SampleBatch::data`], without any wait.
    pub data: &'a [u8],
}

impl<'a> From<SampleBatchV4<'a>> for SampleBatch<'a> {
    fn from(b: SampleBatchV4<'a>) -> Self {
        SampleBatch {
            first_seq: b.first_seq,
            base_tick: b.base_tick,
            interval_ticks: b.interval_ticks,
            count: b.count,
            triggered: b.triggered,
            waited: 0,
            data: b.data,
        }
    }
}

/// Periodic-mode edge timestamps on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EdgeBatch<'a> {
    /// Sequence number of the first edge; the rest follow contiguously.
    pub first_seq: u64,
    /// Tick of the first edge.
    pub base_tick: u64,
    /// Number of edges in the batch.
    pub count: u16,
    /// The packed second differences (module docs).
    pub data: &'a [u8],
}

// Worst case of one sample: a 10-byte stimulus delta, a 5-byte latency,
// and a wait's two 5-byte varints.
const MAX_SAMPLE_LEN: usize = varint::MAX_LEN + 5 + 10;

/// `a - b` as an i64, if it is one; in 64-bit arithmetic (an i128 is a
/// long routine on a 32-bit probe).
fn signed_diff(a: u64, b: u64) -> Option<i64> {
    if a >= b {
        i64::try_from(a - b).ok()
    } else {
        0i64.checked_sub_unsigned(b - a)
    }
}

fn encode_sample(
    prev_tick: Option<u64>,
    interval: u32,
    s: &Sample,
    out: &mut [u8],
) -> Result<usize, BatchError> {
    let mut n = 0;
    if let Some(prev) = prev_tick {
        let delta = s.stimulus_tick.checked_sub(prev).ok_or(BatchError::Backwards)?;
        let dev = signed_diff(delta, u64::from(interval)).ok_or(BatchError::Overflow)?;
        n += varint::write(varint::zigzag(dev), &mut out[n..]).ok_or(BatchError::Overflow)?;
    }
    let code = match s.outcome {
        Outcome::Timeout => 0,
        Outcome::Response(t) => u64::from(t) + 1,
    };
    n += varint::write(code, &mut out[n..]).ok_or(BatchError::Overflow)?;
    if s.waited() {
        n += varint::write(u64::from(s.late_ticks), &mut out[n..]).ok_or(BatchError::Overflow)?;
        n += varint::write(u64::from(s.omitted), &mut out[n..]).ok_or(BatchError::Overflow)?;
    }
    Ok(n)
}

/// Fills one [`SampleBatch`] in a fixed buffer, without allocation.
#[derive(Debug, Clone)]
pub struct SampleBatchBuilder {
    buf: [u8; MAX_BATCH_DATA],
    len: usize,
    count: u16,
    max_count: u16,
    first_seq: u64,
    base_tick: u64,
    last_tick: u64,
    interval_ticks: u32,
    triggered: u64,
    waited: u64,
}

impl SampleBatchBuilder {
    /// An empty batch coding stimulus deltas against `interval_ticks`, with
    /// room for at most `max_count` samples (clamped to [`MAX_BATCH_COUNT`]).
    pub const fn new(interval_ticks: u32, max_count: u16) -> Self {
        let max_count =
            if max_count == 0 || max_count > MAX_BATCH_COUNT { MAX_BATCH_COUNT } else { max_count };
        Self {
            buf: [0; MAX_BATCH_DATA],
            len: 0,
            count: 0,
            max_count,
            first_seq: 0,
            base_tick: 0,
            last_tick: 0,
            interval_ticks,
            triggered: 0,
            waited: 0,
        }
    }

    /// Append a sample. On any error the batch is unchanged.
    pub fn push(&mut self, s: &Sample) -> Result<(), BatchError> {
        if self.count >= self.max_count {
            return Err(BatchError::Full);
        }
        let prev = if self.count == 0 {
            None
        } else {
            let expected = self.first_seq + u64::from(self.count);
            if s.seq != expected {
                return Err(BatchError::NotContiguous { expected, got: s.seq });
            }
            Some(self.last_tick)
        };
        let n = if self.buf.len() - self.len >= MAX_SAMPLE_LEN {
            // Room for the longest sample: coded in place (an error leaves
            // `len`, and so the batch, as it was).
            encode_sample(prev, self.interval_ticks, s, &mut self.buf[self.len..])?
        } else {
            let mut tmp = [0u8; MAX_SAMPLE_LEN];
            let n = encode_sample(prev, self.interval_ticks, s, &mut tmp)?;
            if self.len + n > self.buf.len() {
                return Err(BatchError::Full);
            }
            self.buf[self.len..self.len + n].copy_from_slice(&tmp[..n]);
            n
        };
        self.len += n;
        if self.count == 0 {
            self.first_seq = s.seq;
            self.base_tick = s.stimulus_tick;
            self.triggered = 0;
            self.waited = 0;
        }
        // count < max_count <= 64: the shift is in range.
        self.triggered |= u64::from(s.triggered) << self.count;
        self.waited |= u64::from(s.waited()) << self.count;
        self.count += 1;
        self.last_tick = s.stimulus_tick;
        Ok(())
    }

    /// Whether another sample may not fit (a push could return `Full`).
    pub fn is_full(&self) -> bool {
        self.count >= self.max_count || self.buf.len() - self.len < MAX_SAMPLE_LEN
    }

    /// Whether no sample is in the batch.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Number of samples in the batch.
    pub fn len(&self) -> u16 {
        self.count
    }

    /// The batch as a message body.
    pub fn batch(&self) -> SampleBatch<'_> {
        SampleBatch {
            first_seq: self.first_seq,
            base_tick: self.base_tick,
            interval_ticks: self.interval_ticks,
            count: self.count,
            triggered: self.triggered,
            waited: self.waited,
            data: &self.buf[..self.len],
        }
    }

    /// Empty the batch for reuse, keeping interval and capacity.
    pub fn clear(&mut self) {
        self.len = 0;
        self.count = 0;
        self.triggered = 0;
        self.waited = 0;
    }
}

impl<'a> SampleBatch<'a> {
    /// The samples, in order. Yields an error (and then stops) if the data
    /// is malformed.
    pub fn iter(&self) -> SampleIter<'a> {
        SampleIter { batch: *self, pos: 0, index: 0, prev_tick: self.base_tick, failed: false }
    }
}

/// Iterator over a [`SampleBatch`]'s samples.
#[derive(Debug, Clone)]
pub struct SampleIter<'a> {
    batch: SampleBatch<'a>,
    pos: usize,
    index: u16,
    prev_tick: u64,
    failed: bool,
}

impl SampleIter<'_> {
    #[inline]
    fn varint(&mut self) -> Result<u64, BatchError> {
        let (v, n) = varint::read(&self.batch.data[self.pos..]).ok_or(BatchError::Truncated)?;
        self.pos += n;
        Ok(v)
    }

    #[inline]
    fn next_sample(&mut self) -> Result<Sample, BatchError> {
        let tick = if self.index == 0 {
            self.batch.base_tick
        } else {
            let dev = varint::unzigzag(self.varint()?);
            self.prev_tick
                .checked_add(u64::from(self.batch.interval_ticks))
                .and_then(|t| t.checked_add_signed(dev))
                .ok_or(BatchError::Overflow)?
        };
        let outcome = match self.varint()? {
            0 => Outcome::Timeout,
            c => Outcome::Response(u32::try_from(c - 1).map_err(|_| BatchError::Overflow)?),
        };
        let seq = self.batch.first_seq.checked_add(u64::from(self.index)).ok_or(BatchError::Overflow)?;
        // A bit past 63 is never set: such a batch has more samples than a
        // u64 has bits, and none of them is flagged.
        let bit = |mask: u64| mask.checked_shr(u32::from(self.index)).is_some_and(|b| b & 1 == 1);
        let triggered = bit(self.batch.triggered);
        let (late_ticks, omitted) = if bit(self.batch.waited) {
            let late = u32::try_from(self.varint()?).map_err(|_| BatchError::Overflow)?;
            (late, u32::try_from(self.varint()?).map_err(|_| BatchError::Overflow)?)
        } else {
            (0, 0)
        };
        self.prev_tick = tick;
        self.index += 1;
        Ok(Sample { seq, stimulus_tick: tick, outcome, triggered, late_ticks, omitted })
    }
}

impl Iterator for SampleIter<'_> {
    type Item = Result<Sample, BatchError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let r = if self.index >= self.batch.count {
            if self.pos == self.batch.data.len() {
                return None;
            }
            Err(BatchError::TrailingData)
        } else {
            self.next_sample()
        };
        self.failed = r.is_err();
        Some(r)
    }
}

/// Fills one [`EdgeBatch`] in a fixed buffer, without allocation.
#[derive(Debug, Clone)]
pub struct EdgeBatchBuilder {
    buf: [u8; MAX_BATCH_DATA],
    len: usize,
    count: u16,
    max_count: u16,
    first_seq: u64,
    base_tick: u64,
    last_tick: u64,
    last_delta: u64,
}

impl EdgeBatchBuilder {
    /// An empty batch with room for at most `max_count` edges (clamped to
    /// [`MAX_BATCH_COUNT`]).
    pub const fn new(max_count: u16) -> Self {
        let max_count =
            if max_count == 0 || max_count > MAX_BATCH_COUNT { MAX_BATCH_COUNT } else { max_count };
        Self {
            buf: [0; MAX_BATCH_DATA],
            len: 0,
            count: 0,
            max_count,
            first_seq: 0,
            base_tick: 0,
            last_tick: 0,
            last_delta: 0,
        }
    }

    /// Append an edge. On any error the batch is unchanged.
    pub fn push(&mut self, e: &EdgeStamp) -> Result<(), BatchError> {
        if self.count >= self.max_count {
            return Err(BatchError::Full);
        }
        if self.count == 0 {
            self.first_seq = e.seq;
            self.base_tick = e.tick;
            self.last_tick = e.tick;
            self.last_delta = 0;
            self.count = 1;
            return Ok(());
        }
        let expected = self.first_seq + u64::from(self.count);
        if e.seq != expected {
            return Err(BatchError::NotContiguous { expected, got: e.seq });
        }
        let delta = e.tick.checked_sub(self.last_tick).ok_or(BatchError::Backwards)?;
        let dd = signed_diff(delta, self.last_delta).ok_or(BatchError::Overflow)?;
        let mut tmp = [0u8; varint::MAX_LEN];
        let n = varint::write(varint::zigzag(dd), &mut tmp).ok_or(BatchError::Overflow)?;
        if self.len + n > self.buf.len() {
            return Err(BatchError::Full);
        }
        self.buf[self.len..self.len + n].copy_from_slice(&tmp[..n]);
        self.len += n;
        self.count += 1;
        self.last_tick = e.tick;
        self.last_delta = delta;
        Ok(())
    }

    /// Whether another edge may not fit (a push could return `Full`).
    pub fn is_full(&self) -> bool {
        self.count >= self.max_count || self.buf.len() - self.len < varint::MAX_LEN
    }

    /// Whether no edge is in the batch.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Number of edges in the batch.
    pub fn len(&self) -> u16 {
        self.count
    }

    /// The batch as a message body.
    pub fn batch(&self) -> EdgeBatch<'_> {
        EdgeBatch {
            first_seq: self.first_seq,
            base_tick: self.base_tick,
            count: self.count,
            data: &self.buf[..self.len],
        }
    }

    /// Empty the batch for reuse.
    pub fn clear(&mut self) {
        self.len = 0;
        self.count = 0;
    }
}

impl<'a> EdgeBatch<'a> {
    /// The edges, in order. Yields an error (and then stops) if the data is
    /// malformed.
    pub fn iter(&self) -> EdgeIter<'a> {
        EdgeIter { batch: *self, pos: 0, index: 0, prev_tick: self.base_tick, prev_delta: 0, failed: false }
    }
}

/// Iterator over an [`EdgeBatch`]'s edges.
#[derive(Debug, Clone)]
pub struct EdgeIter<'a> {
    batch: EdgeBatch<'a>,
    pos: usize,
    index: u16,
    prev_tick: u64,
    prev_delta: u64,
    failed: bool,
}

impl EdgeIter<'_> {
    fn next_edge(&mut self) -> Result<EdgeStamp, BatchError> {
        let tick = if self.index == 0 {
            self.batch.base_tick
        } else {
            let (v, n) = varint::read(&self.batch.data[self.pos..]).ok_or(BatchError::Truncated)?;
            self.pos += n;
            let delta = i128::from(self.prev_delta) + i128::from(varint::unzigzag(v));
            let delta = u64::try_from(delta).map_err(|_| BatchError::Overflow)?;
            self.prev_delta = delta;
            self.prev_tick.checked_add(delta).ok_or(BatchError::Overflow)?
        };
        let seq = self.batch.first_seq.checked_add(u64::from(self.index)).ok_or(BatchError::Overflow)?;
        self.prev_tick = tick;
        self.index += 1;
        Ok(EdgeStamp { seq, tick })
    }
}

impl Iterator for EdgeIter<'_> {
    type Item = Result<EdgeStamp, BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let r = if self.index >= self.batch.count {
            if self.pos == self.batch.data.len() {
                return None;
            }
            Err(BatchError::TrailingData)
        } else {
            self.next_edge()
        };
        self.failed = r.is_err();
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::signed_diff;

    #[test]
    fn signed_diff_is_the_i128_difference_where_it_fits_an_i64() {
        let edges =
            [0, 1, 2, 1 << 31, 1 << 32, (1 << 63) - 1, 1 << 63, (1 << 63) + 1, u64::MAX - 1, u64::MAX];
        for &a in &edges {
            for &b in &edges {
                let want = i64::try_from(i128::from(a) - i128::from(b)).ok();
                assert_eq!(signed_diff(a, b), want, "{a} - {b}");
            }
        }
    }
}
