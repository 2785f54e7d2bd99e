//! The Parquet form of the per-sample export: the rows in row groups of
//! [`parquet_rows_per_group`], so memory stays bounded however long the
//! run; sequence numbers and times delta-encoded, Snappy-compressed, the
//! run's description as key-value metadata.

use std::sync::Arc;

use parquet::basic::{Compression, Encoding};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, Int32Type, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnPath;

use super::{parquet_rows_per_group, Row, RunInfo, Sink};

const SCHEMA: &str = "message latprobe_samples {
    REQUIRED INT64 seq;
    OPTIONAL INT64 time_ns;
    OPTIONAL INT64 latency_ns;
    REQUIRED BOOLEAN censored;
    OPTIONAL INT64 bound_ns;
    OPTIONAL INT32 stimulus_byte (INTEGER(8,false));
    REQUIRED BOOLEAN triggered;
    REQUIRED BYTE_ARRAY instant (UTF8);
}";

/// One row group's columns, filled row by row.
#[derive(Debug, Default)]
struct Group {
    seq: Vec<i64>,
    time: Opt<i64>,
    latency: Opt<i64>,
    censored: Vec<bool>,
    bound: Opt<i64>,
    byte: Opt<i32>,
    triggered: Vec<bool>,
    instant: Vec<ByteArray>,
}

/// An optional column: the values present, and a definition level per row.
#[derive(Debug)]
struct Opt<T> {
    values: Vec<T>,
    defs: Vec<i16>,
}

impl<T> Default for Opt<T> {
    fn default() -> Self {
        Self { values: Vec::new(), defs: Vec::new() }
    }
}

impl<T> Opt<T> {
    fn push(&mut self, v: Option<T>) {
        self.defs.push(i16::from(v.is_some()));
        self.values.extend(v);
    }

    fn clear(&mut self) {
        self.values.clear();
        self.defs.clear();
    }
}

/// Rows into a Parquet file.
pub struct ParquetSink {
    writer: SerializedFileWriter<std::fs::File>,
    group: Group,
}

impl std::fmt::Debug for ParquetSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetSink").field("rows_in_group", &self.group.seq.len()).finish()
    }
}

fn io(e: ParquetError) -> std::io::Error {
    std::io::Error::other(format!("parquet: {e}"))
}

/// Nanoseconds and sequence numbers fit Parquet's signed INT64 for 292
/// years of run time.
fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl ParquetSink {
    /// A Parquet file in `file`; the run's description goes in at
    /// [`Sink::finish`].
    pub fn new(file: std::fs::File) -> std::io::Result<Self> {
        let schema = Arc::new(parse_message_type(SCHEMA).map_err(io)?);
        let mut props = WriterProperties::builder()
            .set_created_by(format!("latprobe {}", env!("CARGO_PKG_VERSION")))
            .set_compression(Compression::SNAPPY)
            .set_dictionary_enabled(false)
            .set_max_row_group_row_count(Some(parquet_rows_per_group()));
        for col in ["seq", "time_ns", "latency_ns", "bound_ns"] {
            props = props.set_column_encoding(ColumnPath::from(col), Encoding::DELTA_BINARY_PACKED);
        }
        let writer = SerializedFileWriter::new(file, schema, Arc::new(props.build())).map_err(io)?;
        Ok(Self { writer, group: Group::default() })
    }

    fn flush_group(&mut self) -> Result<(), ParquetError> {
        let g = &mut self.group;
        if g.seq.is_empty() {
            return Ok(());
        }
        let mut rg = self.writer.next_row_group()?;
        let mut n = 0;
        while let Some(mut col) = rg.next_column()? {
            match n {
                0 => {
                    col.typed::<Int64Type>().write_batch(&g.seq, None, None)?;
                }
                1 => {
                    col.typed::<Int64Type>().write_batch(&g.time.values, Some(&g.time.defs), None)?;
                }
                2 => {
                    col.typed::<Int64Type>().write_batch(&g.latency.values, Some(&g.latency.defs), None)?;
                }
                3 => {
                    col.typed::<BoolType>().write_batch(&g.censored, None, None)?;
                }
                4 => {
                    col.typed::<Int64Type>().write_batch(&g.bound.values, Some(&g.bound.defs), None)?;
                }
                5 => {
                    col.typed::<Int32Type>().write_batch(&g.byte.values, Some(&g.byte.defs), None)?;
                }
                6 => {
                    col.typed::<BoolType>().write_batch(&g.triggered, None, None)?;
                }
                _ => {
                    col.typed::<ByteArrayType>().write_batch(&g.instant, None, None)?;
                }
            }
            col.close()?;
            n += 1;
        }
        rg.close()?;
        g.seq.clear();
        g.time.clear();
        g.latency.clear();
        g.censored.clear();
        g.bound.clear();
        g.byte.clear();
        g.triggered.clear();
        g.instant.clear();
        Ok(())
    }
}

impl Sink for ParquetSink {
    fn row(&mut self, r: &Row) -> std::io::Result<()> {
        let g = &mut self.group;
        g.seq.push(i64_of(r.seq));
        g.time.push(r.time_ns.map(i64_of));
        g.latency.push(r.latency_ns.map(i64_of));
        g.censored.push(r.censored());
        g.bound.push(r.bound_ns.map(i64_of));
        g.byte.push(r.byte.map(i32::from));
        g.triggered.push(r.triggered);
        g.instant.push(ByteArray::from(r.instant.name()));
        if g.seq.len() >= parquet_rows_per_group() {
            self.flush_group().map_err(io)?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>, info: &RunInfo) -> std::io::Result<()> {
        self.flush_group().map_err(io)?;
        for (k, v) in &info.pairs {
            self.writer.append_key_value_metadata(KeyValue::new(k.clone(), v.clone()));
        }
        // Synced by the export's commit (a pipe or a device has nothing to sync).
        self.writer.into_inner().map_err(io).map(drop)
    }
}
