//! The CSV form of the per-sample export: a header line, then one line per
//! row; an absent value is an empty field, the censored flag is 0 or 1.

use std::io::{BufWriter, Write};

use super::{Row, RunInfo, Sink, COLUMNS};

/// Rows as CSV lines.
#[derive(Debug)]
pub struct CsvSink {
    out: BufWriter<std::fs::File>,
    header: bool,
}

impl CsvSink {
    /// Rows into `file`; the header goes before the first.
    pub fn new(file: std::fs::File) -> Self {
        Self { out: BufWriter::with_capacity(1 << 16, file), header: false }
    }

    fn header(&mut self) -> std::io::Result<()> {
        if !self.header {
            self.header = true;
            writeln!(self.out, "{}", COLUMNS.join(","))?;
        }
        Ok(())
    }
}

struct Opt<T>(Option<T>);

impl<T: std::fmt::Display> std::fmt::Display for Opt<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(v) => v.fmt(f),
            None => Ok(()),
        }
    }
}

impl Sink for CsvSink {
    fn row(&mut self, r: &Row) -> std::io::Result<()> {
        self.header()?;
        writeln!(
            self.out,
            "{},{},{},{},{},{},{},{}",
            r.seq,
            Opt(r.time_ns),
            Opt(r.latency_ns),
            u8::from(r.censored()),
            Opt(r.bound_ns),
            Opt(r.byte),
            u8::from(r.triggered),
            r.instant.name()
        )
    }

    fn finish(mut self: Box<Self>, _info: &RunInfo) -> std::io::Result<()> {
        // A run without samples still gets its header.
        self.header()?;
        // Synced by the export's commit (a pipe or a device has nothing to sync).
        self.out.flush()
    }
}
