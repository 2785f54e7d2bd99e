//! In-kernel self-measurements (cyclictest, rtla timerlat) as latprobe
//! documents, so that `latprobe report` and `latprobe compare` read them
//! beside the probe's own reports.
//!
//! `latprobe import` writes one document per thread or CPU context: JSON
//! with the same `schema_version` as a probe report and `"kind":
//! "in-kernel"`. It holds the imported series as the tool reported it (its
//! min, avg, max and histogram, its overflows, its command line and
//! version), never figures the tool did not give: percentiles are computed
//! from its histogram when shown, and one that falls among the overflows is
//! printed as censored.
//!
//! ```text
//!  cyclictest / rtla file ─import─▶ ImportedRun ─▶ InKernelReport (JSON) ─▶ report, compare
//! ```

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::compare::Cell;
use crate::import::{HistogramRange, ImportedRun};
use crate::units::format_ns;
use crate::Error;

/// The `kind` of an in-kernel document.
pub const KIND: &str = "in-kernel";

/// What every in-kernel document says it is.
pub const MEASUREMENT: &str = "in-kernel self-measurement: the target timed itself";

/// One imported series as a latprobe document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InKernelReport {
    /// [`crate::report::SCHEMA_VERSION`].
    pub schema_version: u32,
    /// [`KIND`].
    pub kind: String,
    /// [`MEASUREMENT`].
    pub measurement: String,
    /// The latprobe version that imported it.
    pub tool_version: String,
    /// The label given with `--label`, or the file and series.
    pub label: String,
    /// The series as the tool reported it.
    pub run: ImportedRun,
}

impl InKernelReport {
    /// The document for `run`, labelled `label`.
    pub fn new(run: ImportedRun, label: String) -> Self {
        Self {
            schema_version: crate::report::SCHEMA_VERSION,
            kind: KIND.into(),
            measurement: MEASUREMENT.into(),
            tool_version: crate::TOOL_VERSION.into(),
            label,
            run,
        }
    }

    /// Write it as pretty JSON to `path`.
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        let text = serde_json::to_string_pretty(self).unwrap_or_default() + "\n";
        crate::fsout::write(path, text.as_bytes()).map_err(|e| {
            Error::io(format!("cannot write the imported report {} (--output)", path.display()), e)
        })
    }
}

/// Whether a parsed JSON document is an in-kernel one.
pub fn is_in_kernel(value: &serde_json::Value) -> bool {
    value.get("kind").and_then(serde_json::Value::as_str) == Some(KIND)
}

fn cell(c: Cell) -> String {
    match c {
        Cell::Value(ns) => format_ns(ns),
        Cell::Above(ns) => format!(">{}", format_ns(ns)),
        Cell::Unknown => "n/a".into(),
    }
}

/// The terminal summary of an in-kernel document.
pub fn summary(r: &InKernelReport) -> String {
    let run = &r.run;
    let mut s = String::new();
    let version = run.tool_version.as_deref().map(|v| format!(" {v}")).unwrap_or_default();
    let _ = writeln!(s, "{} — {}{version} {} from {}", r.label, run.tool, run.thread, run.source_file);
    let _ = writeln!(s, "{MEASUREMENT}");
    if let Some(c) = &run.cmdline {
        let _ = writeln!(s, "command: {c}");
    }
    let opt = |v: Option<u64>| v.map_or_else(|| "n/a".to_string(), format_ns);
    let _ = writeln!(
        s,
        "samples {}  min {}  avg {}  max {}  overflows {}",
        run.count,
        opt(run.min_ns),
        opt(run.avg_ns),
        opt(run.max_ns),
        run.overflows
    );
    let qs = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999), ("p99.99", 0.9999)];
    let cells: Vec<String> = qs.iter().map(|(n, q)| format!("{n} {}", cell(run.quantile(*q)))).collect();
    let _ = writeln!(s, "{}  (from the histogram: bin upper edges)", cells.join("  "));
    match run.histogram {
        HistogramRange::None => {
            let _ = writeln!(s, "no histogram in the file: percentiles unknown");
        }
        HistogramRange::Exact(end) | HistogramRange::AtLeast(end) if run.overflows > 0 => {
            let _ = writeln!(
                s,
                "{} samples beyond the histogram's end ({}): percentiles among them are censored",
                run.overflows,
                format_ns(end)
            );
        }
        _ => {}
    }
    s
}
