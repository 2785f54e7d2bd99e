//! The host's end of the probe link for tests: bytes in any chunking go
//! through the real `FrameDecoder` and `decode_message`, and what the probe
//! said is kept in owned form, with sequence gaps counted as the host would.

use latprobe_protocol::{
    decode_message, EdgeStamp, ErrorCode, Feed, FrameDecoder, Heartbeat, LogLevel, ProbeMsg, Sample, Stopped,
};

/// Everything a probe sent, decoded.
#[derive(Debug, Default)]
pub struct HostSide {
    decoder: FrameDecoder,
    /// Hello messages seen (board name of each).
    pub hellos: Vec<String>,
    /// Accepted configurations.
    pub configured: usize,
    /// `Started` messages: (start_tick, first_seq).
    pub started: Vec<(u64, u64)>,
    /// Echo samples, in arrival order.
    pub samples: Vec<Sample>,
    /// Periodic edges, in arrival order.
    pub edges: Vec<EdgeStamp>,
    /// Heartbeats.
    pub heartbeats: Vec<Heartbeat>,
    /// Error replies.
    pub errors: Vec<(ErrorCode, String)>,
    /// The probe's log lines.
    pub logs: Vec<(LogLevel, String)>,
    /// The `Stopped` message, once seen.
    pub stopped: Option<Stopped>,
    /// Messages after `Stopped` (must stay 0 within a run).
    pub after_stopped: usize,
    /// Items missing from the sequence (the gaps the host sees).
    pub gaps: u64,
    /// Sequence number expected next.
    next_seq: u64,
    /// Batches received.
    pub batches: u64,
    /// Bytes received.
    pub bytes: u64,
}

impl HostSide {
    /// A host that has received nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Damaged frames the decoder dropped (must be 0 on a clean link).
    pub fn bad_frames(&self) -> u64 {
        self.decoder.stats().bad_frames
    }

    /// Items missing between the last one received and the end of a run of
    /// `taken` items (call after `Stopped`).
    pub fn tail_gap(&self, taken: u64) -> u64 {
        taken.saturating_sub(self.next_seq)
    }

    /// Feed bytes from the link, in any chunking.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.bytes += bytes.len() as u64;
        let mut input = bytes;
        loop {
            let (msg, rest) = match self.decoder.feed(input) {
                Feed::NeedMore => break,
                Feed::Bad { rest, .. } => (None, rest),
                Feed::Frame { frame, rest } => {
                    let msg = decode_message::<ProbeMsg>(frame).expect("probe frame decodes");
                    (Some(Self::own(msg)), rest)
                }
            };
            input = rest;
            if let Some(m) = msg {
                self.take(m);
            }
        }
    }

    fn own(msg: ProbeMsg<'_>) -> Owned {
        match msg {
            ProbeMsg::Hello(i) => Owned::Hello(i.board.to_string()),
            ProbeMsg::Configured(_) => Owned::Configured,
            ProbeMsg::Started { start_tick, first_seq } => Owned::Started(start_tick, first_seq),
            ProbeMsg::SampleBatch(b) => {
                Owned::Samples(b.iter().collect::<Result<_, _>>().expect("sample batch decodes"))
            }
            ProbeMsg::EdgeBatch(b) => {
                Owned::Edges(b.iter().collect::<Result<_, _>>().expect("edge batch decodes"))
            }
            ProbeMsg::Heartbeat(h) => Owned::Heartbeat(h),
            ProbeMsg::Stopped(s) => Owned::Stopped(s),
            ProbeMsg::Error(e) => Owned::Error(e.code, e.detail.to_string()),
            ProbeMsg::Log(l) => Owned::Log(l.level, l.text.to_string()),
        }
    }

    fn take(&mut self, m: Owned) {
        if self.stopped.is_some() {
            self.after_stopped += 1;
        }
        match m {
            Owned::Hello(b) => self.hellos.push(b),
            Owned::Configured => self.configured += 1,
            Owned::Started(t, s) => {
                self.started.push((t, s));
                self.next_seq = s;
            }
            Owned::Samples(v) => {
                self.batches += 1;
                self.sequence(v[0].seq, v.len());
                self.samples.extend(v);
            }
            Owned::Edges(v) => {
                self.batches += 1;
                self.sequence(v[0].seq, v.len());
                self.edges.extend(v);
            }
            Owned::Heartbeat(h) => self.heartbeats.push(h),
            Owned::Stopped(s) => self.stopped = Some(s),
            Owned::Error(c, d) => self.errors.push((c, d)),
            Owned::Log(level, text) => self.logs.push((level, text)),
        }
    }

    fn sequence(&mut self, first: u64, n: usize) {
        assert!(first >= self.next_seq, "sequence went backwards: {first} after {}", self.next_seq);
        self.gaps += first - self.next_seq;
        self.next_seq = first + n as u64;
    }
}

enum Owned {
    Hello(String),
    Configured,
    Started(u64, u64),
    Samples(Vec<Sample>),
    Edges(Vec<EdgeStamp>),
    Heartbeat(Heartbeat),
    Stopped(Stopped),
    Error(ErrorCode, String),
    Log(LogLevel, String),
}
