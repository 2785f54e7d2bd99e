//! Per-sample export (`latprobe report RUN.raw --samples FILE`): one row per
//! sample, as the analysis counts it, streamed to CSV or Parquet in bounded
//! memory.
//!
//! ```text
//!  raw file ─▶ session replay ─▶ analysis ──(every counted sample)──▶ Sink
//!                                                   └─▶ CSV rows | Parquet row groups
//! ```
//!
//! A row is written where the analysis counts the sample, so the file holds
//! exactly the report's population: a duplicate is not a row, a timeout is a
//! row with no latency (censored: known only to exceed `bound_ns`), and a
//! periodic cycle that missed its edge is a row with neither time nor
//! latency. Rows come in the order the probe sent them (the sequence number
//! says which stimulus or cycle each is).
//!
//! One row per *scheduled instant* (issue 42): a stimulus that waited for
//! its slot is a row timed from its planned instant (`instant` = `late`),
//! and each instant that got no stimulus at all is a row of its own
//! (`instant` = `omitted`, its `time_ns` the instant, its `seq` that of the
//! stimulus that went out after it and stands for it); the rest are `sent`.
//! `latency_ns` is the schedule's view, as every figure counts it
//! ([`crate::analysis`] says why).

mod csv;
#[cfg(feature = "parquet")]
mod parquet;

use std::path::{Path, PathBuf};

use latprobe_protocol::{identity_byte, Stimulus};

use crate::Error;

/// One sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// The stimulus's sequence number (periodic: the cycle).
    pub seq: u64,
    /// The stimulus (periodic: the edge) from the run's start on the probe's
    /// clock, ns; `None` for a periodic cycle whose edge never came.
    pub time_ns: Option<u64>,
    /// The latency (periodic: the delay against the fitted schedule), ns,
    /// after any calibration offset; `None` for a timeout sample.
    pub latency_ns: Option<u64>,
    /// For a timeout sample: the bound its latency is known to exceed, ns.
    pub bound_ns: Option<u64>,
    /// The byte sent as the stimulus (uart-echo; with identity, the
    /// stimulus's identity byte), `None` for an edge or a periodic run.
    pub byte: Option<u8>,
    /// The probe raised its trigger output for this stimulus
    /// (`--trigger-above`): it went the threshold without an answer.
    pub triggered: bool,
    /// What happened at this scheduled instant.
    pub instant: Instant,
}

/// What happened at a scheduled instant (the `instant` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instant {
    /// Its stimulus went out on schedule (`sent`).
    Sent,
    /// Its stimulus waited for its slot; the row is timed from the planned
    /// instant (`late`).
    Late,
    /// No stimulus went out at it (the target was behind); the row is timed
    /// from the instant to the answer of the stimulus sent after it
    /// (`omitted`).
    Omitted,
}

impl Instant {
    /// The column's word.
    pub fn name(self) -> &'static str {
        match self {
            Instant::Sent => "sent",
            Instant::Late => "late",
            Instant::Omitted => "omitted",
        }
    }
}

impl Row {
    /// A timeout sample: its latency is known only to exceed `bound_ns`.
    pub fn censored(&self) -> bool {
        self.latency_ns.is_none()
    }
}

/// The names of a row's columns, in order, for both formats.
pub const COLUMNS: [&str; 8] =
    ["seq", "time_ns", "latency_ns", "censored", "bound_ns", "stimulus_byte", "triggered", "instant"];

/// Where the rows go.
pub trait Sink: std::fmt::Debug + Send {
    /// Write one row.
    fn row(&mut self, row: &Row) -> std::io::Result<()>;
    /// Flush everything and close the file, with what it records about
    /// the run.
    fn finish(self: Box<Self>, info: &RunInfo) -> std::io::Result<()>;
}

/// A sink fed by the analysis: what a row's stimulus byte is, and the first
/// write error (after which rows are counted, not written).
#[derive(Debug)]
pub struct Feed {
    sink: Box<dyn Sink>,
    stimulus: Stimulus,
    rows: u64,
    error: Option<std::io::Error>,
}

impl Feed {
    /// Rows of a run whose stimulus is `stimulus` into `sink`.
    pub fn new(sink: Box<dyn Sink>, stimulus: Stimulus) -> Self {
        Self { sink, stimulus, rows: 0, error: None }
    }

    /// A measured sample at the scheduled instant `time_ns`.
    #[inline]
    pub fn measured(&mut self, seq: u64, time_ns: u64, latency_ns: u64, triggered: bool, instant: Instant) {
        let byte = self.byte(seq);
        self.put(Row {
            seq,
            time_ns: Some(time_ns),
            latency_ns: Some(latency_ns),
            bound_ns: None,
            byte,
            triggered,
            instant,
        });
    }

    /// A timeout sample at `time_ns` (periodic: `None` for a missed cycle),
    /// known only to exceed `bound_ns`.
    #[inline]
    pub fn timeout(
        &mut self,
        seq: u64,
        time_ns: Option<u64>,
        bound_ns: u64,
        triggered: bool,
        instant: Instant,
    ) {
        let byte = self.byte(seq);
        self.put(Row { seq, time_ns, latency_ns: None, bound_ns: Some(bound_ns), byte, triggered, instant });
    }

    fn byte(&self, seq: u64) -> Option<u8> {
        match self.stimulus {
            Stimulus::Byte(b) => Some(b),
            Stimulus::Identified => Some(identity_byte(seq)),
            Stimulus::Edge(_) | Stimulus::None(_) => None,
        }
    }

    fn put(&mut self, row: Row) {
        self.rows += 1;
        if self.error.is_none() {
            if let Err(e) = self.sink.row(&row) {
                self.error = Some(e);
            }
        }
    }

    /// Close the file: the rows fed, or the first error.
    pub fn finish(self, info: &RunInfo) -> std::io::Result<u64> {
        if let Some(e) = self.error {
            return Err(e);
        }
        self.sink.finish(info)?;
        Ok(self.rows)
    }
}

/// The format of `path`, by its name: Parquet for `.parquet`, else CSV.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Comma-separated, a header line, empty fields for absent values.
    Csv,
    /// Apache Parquet, one row group per [`parquet_rows_per_group`] rows.
    Parquet,
}

impl Format {
    /// The format `path`'s name asks for.
    pub fn of(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("parquet") => Format::Parquet,
            _ => Format::Csv,
        }
    }
}

/// What the export's file records about the run (Parquet keeps it as
/// key-value metadata; CSV has no place for it).
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// `latprobe.mode`, `latprobe.timeout_ns`, … in the order written.
    pub pairs: Vec<(String, String)>,
}

/// Rows of one Parquet row group: bounds the memory of an export (about
/// 40 bytes a row while a group is filled).
pub const fn parquet_rows_per_group() -> usize {
    1 << 17
}

/// An export being written by the rules of every output
/// ([`crate::fsout::create`]): a regular file to a temporary file beside it
/// that takes its name only when finished whole ([`Export::commit`]); a
/// pipe or a device written to as it is; a symbolic link followed.
#[derive(Debug)]
pub struct Export {
    path: PathBuf,
    staged: crate::fsout::Staged,
}

impl Export {
    /// Open the sink for `path` (`--samples`), in the format its name says.
    pub fn create(path: &Path) -> Result<(Self, Box<dyn Sink>), Error> {
        let name = path.display();
        if path.is_dir() {
            return Err(Error::Output(format!(
                "--samples {name}: is a directory; give a file, e.g. {}",
                path.join("samples.csv").display()
            )));
        }
        #[cfg(not(feature = "parquet"))]
        if Format::of(path) == Format::Parquet {
            return Err(Error::Config(format!(
                "--samples {name}: this latprobe was built without Parquet (the `parquet` feature): \
                 give a .csv file, or build latprobe with its default features"
            )));
        }
        // A pipe is opened here (waiting for its reader), a regular file
        // as a temporary file beside it.
        let (staged, file) = crate::fsout::create(path).map_err(|e| {
            Error::Output(format!("--samples {name}: cannot write there ({e}): give a writable path"))
        })?;
        let sink: Box<dyn Sink> = match Format::of(path) {
            Format::Csv => Box::new(csv::CsvSink::new(file)),
            #[cfg(feature = "parquet")]
            Format::Parquet => match parquet::ParquetSink::new(file) {
                Ok(s) => Box::new(s),
                Err(cause) => {
                    staged.abandon();
                    return Err(Error::Io { context: format!("--samples {name}"), cause });
                }
            },
            #[cfg(not(feature = "parquet"))]
            Format::Parquet => unreachable!("refused above"),
        };
        Ok((Self { path: path.to_path_buf(), staged }, sink))
    }

    /// The file it writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file was written whole: give it its name. The path as given
    /// (`--samples`'s), for messages.
    pub fn commit(self) -> std::io::Result<PathBuf> {
        self.staged.commit()?;
        Ok(self.path)
    }

    /// The file could not be written whole: remove the part.
    pub fn abandon(self) {
        self.staged.abandon();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use latprobe_protocol::{EdgeBatchBuilder, EdgeStamp};

    use super::*;
    use crate::analysis::Analysis;

    /// Rows kept in memory, shared with the test.
    #[derive(Debug, Clone, Default)]
    struct Keep(Arc<Mutex<Vec<Row>>>);

    impl Sink for Keep {
        fn row(&mut self, row: &Row) -> std::io::Result<()> {
            self.0.lock().unwrap().push(*row);
            Ok(())
        }
        fn finish(self: Box<Self>, _: &RunInfo) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A periodic target on a 1 MHz probe timer, period 1000 ticks: cycles
    /// 300..305 make no edge at all (the target stalled), cycle 700's edge
    /// comes 400 µs late (beyond a 200 µs horizon), the rest wobble by a
    /// few ticks; batch 2 arrives twice.
    #[test]
    fn periodic_rows_include_missed_cycles_and_late_edges_as_censored() {
        let keep = Keep::default();
        let mut a = Analysis::new(1_000_000, 0, 0, 1000, 0);
        a.enable_periodic(1000, 200);
        a.rows =
            Some(Feed::new(Box::new(keep.clone()), Stimulus::None(latprobe_protocol::ResponseLine::Gpio)));
        let mut edges = Vec::new();
        let mut seq = 0u64;
        for cycle in 0..1000u64 {
            if (300..305).contains(&cycle) {
                continue;
            }
            let late = if cycle == 700 { 400 } else { (cycle * 7) % 5 };
            edges.push(EdgeStamp { seq, tick: 5_000 + cycle * 1000 + late });
            seq += 1;
        }
        for (i, chunk) in edges.chunks(50).enumerate() {
            let mut b = EdgeBatchBuilder::new(64);
            for e in chunk {
                b.push(e).unwrap();
            }
            a.ingest_edges(&b.batch());
            if i == 2 {
                a.ingest_edges(&b.batch());
            }
        }
        a.finish_periodic();
        let rows = keep.0.lock().unwrap().clone();
        assert_eq!(rows.len() as u64, a.samples(), "one row per counted sample");
        assert!(a.timeouts >= 6, "5 missed + 1 late: {}", a.timeouts);
        let missed: Vec<_> = rows.iter().filter(|r| r.time_ns.is_none()).collect();
        assert_eq!(missed.len(), 5, "{missed:?}");
        let censored = rows.iter().filter(|r| r.censored()).count() as u64;
        assert_eq!(censored, a.timeouts);
        for r in rows.iter().filter(|r| r.censored()) {
            assert_eq!(r.bound_ns, Some(a.timeout_ns()), "{r:?}");
            assert_eq!(r.latency_ns, None);
        }
        // Every cycle once: 0..1000 with none twice.
        let mut seqs: Vec<u64> = rows.iter().map(|r| r.seq).collect();
        seqs.sort_unstable();
        seqs.dedup();
        assert_eq!(seqs.len(), rows.len(), "a duplicated batch gave duplicate rows");
        assert!(rows.iter().all(|r| r.byte.is_none()));
    }

    #[test]
    fn the_stimulus_byte_is_the_identity_of_the_sequence_number() {
        let keep = Keep::default();
        let mut f = Feed::new(Box::new(keep.clone()), Stimulus::Identified);
        f.measured(10, 5, 7, false, Instant::Sent);
        f.timeout(11, Some(9), 100, true, Instant::Omitted);
        let mut g = Feed::new(Box::new(keep.clone()), Stimulus::Byte(0x55));
        g.measured(3, 1, 2, false, Instant::Late);
        assert_eq!(f.finish(&RunInfo::default()).unwrap(), 2);
        assert_eq!(g.finish(&RunInfo::default()).unwrap(), 1);
        let rows = keep.0.lock().unwrap().clone();
        assert_eq!(rows[0].byte, Some(identity_byte(10)));
        assert_eq!(
            rows[1],
            Row {
                seq: 11,
                time_ns: Some(9),
                latency_ns: None,
                bound_ns: Some(100),
                byte: Some(identity_byte(11)),
                triggered: true,
                instant: Instant::Omitted,
            }
        );
        assert_eq!(rows[2].byte, Some(0x55));
    }

    /// A sink that fails at its second row: the error comes out at the end,
    /// every row is still counted.
    #[derive(Debug)]
    struct Fails(u32);

    impl Sink for Fails {
        fn row(&mut self, _: &Row) -> std::io::Result<()> {
            self.0 += 1;
            if self.0 == 2 {
                return Err(std::io::Error::other("disk full"));
            }
            Ok(())
        }
        fn finish(self: Box<Self>, _: &RunInfo) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_write_error_is_kept_for_the_end() {
        let mut f = Feed::new(Box::new(Fails(0)), Stimulus::Byte(1));
        for s in 0..5 {
            f.measured(s, s, s, false, Instant::Sent);
        }
        assert_eq!(f.finish(&RunInfo::default()).unwrap_err().to_string(), "disk full");
    }
}
