//! [`CycleSpill`]: every cycle's delay kept on disk for `--target-log`, in
//! a nameless temp file of 16-byte records, read back once the run is over.

use std::io::Write as _;

/// Where each cycle's delay goes for `--target-log`: a file of 16-byte
/// records `(cycle u64 LE, value u64 LE)` in cycle order. A value below
/// [`SPILL_RUN`] is an edge's delay in ns; a value with that bit set is a
/// run of missed cycles from `cycle`, its count in the other bits (one
/// record however long the run: a run of 10¹² missed cycles once wrote 16
/// bytes each). Written as the fit finishes blocks, read back once the run
/// is over, at most [`SPILL_CAP_BYTES`] (then the cycles after are not
/// kept and [`CycleSpill::kept_until`] says from which cycle).
///
/// The file lives in the temp directory without a name: it is unlinked as
/// soon as it is made and read through its open handle, so no exit path (a
/// signal, a panic, SIGKILL) can leave it behind.
#[derive(Debug)]
pub struct CycleSpill {
    file: std::fs::File,
    out: Option<std::io::BufWriter<std::fs::File>>,
    cap: u64,
    written: u64,
    /// The first cycle not kept when the cap was reached.
    kept_until: Option<u64>,
    /// The first write error, if any.
    pub error: Option<String>,
}

/// The bit of a spill record's value that marks a run of missed cycles.
pub const SPILL_RUN: u64 = 1 << 63;

/// The most a spill file holds: 2 GiB, 1.3 × 10⁸ cycles (37 hours at
/// 1 kHz).
pub const SPILL_CAP_BYTES: u64 = 2 << 30;

/// One record of a spill file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpillRecord {
    /// Cycle `cycle` had its edge `delay_ns` after the fit.
    Edge {
        /// The cycle.
        cycle: u64,
        /// Its delay, ns.
        delay_ns: u64,
    },
    /// `count` cycles from `first` had no edge.
    Missed {
        /// The first.
        first: u64,
        /// How many (≥ 1).
        count: u64,
    },
}

impl SpillRecord {
    /// The record's first cycle.
    pub fn first(&self) -> u64 {
        match *self {
            SpillRecord::Edge { cycle, .. } => cycle,
            SpillRecord::Missed { first, .. } => first,
        }
    }

    /// One past its last cycle.
    pub fn end(&self) -> u64 {
        match *self {
            SpillRecord::Edge { cycle, .. } => cycle.saturating_add(1),
            SpillRecord::Missed { first, count } => first.saturating_add(count),
        }
    }
}

impl CycleSpill {
    /// A new spill file in the temp directory, of at most [`SPILL_CAP_BYTES`].
    pub fn create() -> std::io::Result<Self> {
        Self::with_cap(SPILL_CAP_BYTES)
    }

    /// A new spill file of at most `cap` bytes.
    pub fn with_cap(cap: u64) -> std::io::Result<Self> {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let k = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("latprobe-cycles-{}-{k}.bin", std::process::id()));
        let file = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path)?;
        // Nameless from here on: removed by the system when the handle closes.
        std::fs::remove_file(&path)?;
        let w = file.try_clone()?;
        Ok(Self {
            file,
            out: Some(std::io::BufWriter::with_capacity(1 << 16, w)),
            cap,
            written: 0,
            kept_until: None,
            error: None,
        })
    }

    fn record(&mut self, cycle: u64, value: u64) {
        if self.written + 16 > self.cap {
            self.kept_until.get_or_insert(cycle);
            self.out = None;
        }
        if let Some(w) = &mut self.out {
            let mut rec = [0u8; 16];
            rec[..8].copy_from_slice(&cycle.to_le_bytes());
            rec[8..].copy_from_slice(&value.to_le_bytes());
            if let Err(e) = w.write_all(&rec) {
                self.error = Some(e.to_string());
                self.out = None;
            }
            self.written += 16;
        }
    }

    /// Append one cycle's delay (at most `SPILL_RUN - 1` ns).
    pub fn write(&mut self, cycle: u64, delay_ns: u64) {
        self.record(cycle, delay_ns.min(SPILL_RUN - 1));
    }

    /// Append a run of `count` missed cycles from `first`: one record.
    pub fn write_missed(&mut self, first: u64, count: u64) {
        let mut first = first;
        let mut left = count;
        while left > 0 {
            let n = left.min(SPILL_RUN - 1);
            self.record(first, SPILL_RUN | n);
            first = first.saturating_add(n);
            left -= n;
        }
    }

    /// The first cycle not kept because the file reached its cap.
    pub fn kept_until(&self) -> Option<u64> {
        self.kept_until
    }

    /// Flush: the records can then be read.
    pub fn finish(&mut self) -> std::io::Result<()> {
        if let Some(w) = &mut self.out {
            w.flush()?;
        }
        match &self.error {
            Some(e) => Err(std::io::Error::other(e.clone())),
            None => Ok(()),
        }
    }

    /// The records written, in order (after [`CycleSpill::finish`]). Each
    /// reader has its own position.
    pub fn records(&self) -> impl Iterator<Item = SpillRecord> + '_ {
        use std::os::unix::fs::FileExt as _;
        let mut buf = vec![0u8; 1 << 16];
        let (mut at, mut len, mut pos) = (0u64, 0usize, 0usize);
        let end = self.written;
        std::iter::from_fn(move || {
            if pos + 16 > len {
                if at >= end {
                    return None;
                }
                let want = (end - at).min(buf.len() as u64) as usize;
                let got = self.file.read_at(&mut buf[..want], at).ok()?;
                if got < 16 {
                    return None;
                }
                let got = got - got % 16;
                at += got as u64;
                (len, pos) = (got, 0);
            }
            let rec = &buf[pos..pos + 16];
            pos += 16;
            let cycle = u64::from_le_bytes(rec[..8].try_into().ok()?);
            let v = u64::from_le_bytes(rec[8..].try_into().ok()?);
            Some(if v & SPILL_RUN != 0 {
                SpillRecord::Missed { first: cycle, count: v & !SPILL_RUN }
            } else {
                SpillRecord::Edge { cycle, delay_ns: v }
            })
        })
    }
}
