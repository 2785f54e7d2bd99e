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

use crate::analysis::figure::PERCENTILES;
use crate::analysis::Figure;
use crate::import::{HistogramRange, ImportedRun};
use crate::units::us_fixed;
use crate::Error;

/// The `kind` of an in-kernel document.
pub const KIND: &str = "in-kernel";

/// The `kind` of a document of latprobe's own histfile imported back: the
/// same layout, but the probe measured it.
pub const KIND_EXTERNAL: &str = "imported-external";

/// What every in-kernel document says it is.
pub const MEASUREMENT: &str = "in-kernel self-measurement: the target timed itself";

/// What a document of latprobe's own histfile says it is.
pub const MEASUREMENT_EXTERNAL: &str =
    "external probe measurement: latprobe's histfile, timed by the probe's clock";

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
        let external = run.tool == "latprobe";
        Self {
            schema_version: crate::report::SCHEMA_VERSION,
            kind: if external { KIND_EXTERNAL } else { KIND }.into(),
            measurement: if external { MEASUREMENT_EXTERNAL } else { MEASUREMENT }.into(),
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

/// Whether a parsed JSON document is one `latprobe import` wrote: an
/// in-kernel one, or latprobe's own histfile imported back.
pub fn is_in_kernel(value: &serde_json::Value) -> bool {
    matches!(value.get("kind").and_then(serde_json::Value::as_str), Some(KIND | KIND_EXTERNAL))
}

/// A figure as the run's summary prints it: µs with two decimals,
/// `>bound` (rounded down) when censored, `n/a` when unknown.
fn cell(c: Figure) -> String {
    match c {
        Figure::Value(ns) => us_fixed(ns, 2),
        Figure::Above(ns) => format!(">{}", crate::report::text::us_floor(ns, 2)),
        Figure::None => "n/a".into(),
    }
}

/// The terminal summary of an imported document: who measured, the
/// tool's own count, min, avg and max, and the percentiles of its
/// histogram (bin upper edges), in µs as a run's summary prints them.
pub fn summary(r: &InKernelReport) -> String {
    let run = &r.run;
    let mut s = String::new();
    let version = run.tool_version.as_deref().map(|v| format!(" {v}")).unwrap_or_default();
    let _ = writeln!(s, "{} — {}{version} {} from {}", r.label, run.tool, run.thread, run.source_file);
    let _ = writeln!(s, "{}", r.measurement);
    if let Some(c) = &run.cmdline {
        let _ = writeln!(s, "command: {c}");
    }
    let col = crate::compare::Column::from_imported(run, &r.label);
    let _ = writeln!(s, "samples {}  overflows {}", run.count, run.overflows);
    let percentiles = [col.p50, col.p90, col.p99, col.p99_9, col.p99_99];
    let mut figures = vec![("min", col.min), ("avg", col.avg)];
    figures.extend(PERCENTILES.iter().map(|p| p.name).zip(percentiles));
    figures.push(("max", col.max));
    let mut head = String::from("latency µs");
    let mut row = String::from("          ");
    for (name, c) in figures {
        let _ = write!(head, "  {name:>9}");
        let _ = write!(row, "  {:>9}", cell(c));
    }
    let _ = writeln!(s, "{head}");
    let _ = writeln!(s, "{row}");
    let _ = writeln!(
        s,
        "percentiles from the histogram: bin upper edges ({})",
        crate::import::bin_width(run.bin_width_ns)
    );
    if let Some(n) = col.avg_over {
        let _ =
            writeln!(s, "avg over the {n} measured samples: the {} timeouts have no latency", run.count - n);
    }
    if run.timeouts > 0 {
        if let Some(t) = run.timeout_ns {
            let _ = writeln!(
                s,
                "{} samples timed out: latencies above the probe's timeout ({} µs), censored",
                run.timeouts,
                crate::report::text::us_floor(t, 2)
            );
        }
    }
    let beyond = run.overflows.saturating_sub(run.timeouts);
    match run.histogram {
        HistogramRange::None => {
            let _ = writeln!(s, "no histogram in the file: percentiles unknown");
        }
        HistogramRange::Exact(end) | HistogramRange::AtLeast(end) if beyond > 0 => {
            let _ = writeln!(
                s,
                "{beyond} samples beyond the histogram's end ({} µs): percentiles among them are censored",
                crate::report::text::us_floor(end, 2)
            );
        }
        _ => {}
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_prints_figures_in_us_as_a_runs_summary_does() {
        let text = include_str!("../tests/fixtures/import/cyclictest/ct_t2_h100.json");
        let run = crate::import::import_str("ct.json", text).unwrap().remove(0);
        let s = summary(&InKernelReport::new(run, "ct".into()));
        let table =
            s.lines().skip_while(|l| !l.starts_with("latency µs")).nth(1).unwrap_or_else(|| panic!("{s}"));
        // min 11, avg 15.69, max 410 µs as cyclictest printed them.
        let cells: Vec<&str> = table.split_whitespace().collect();
        assert_eq!((cells[0], cells[1], cells[7]), ("11.00", "15.69", "410.00"), "{s}");
        assert!(s.contains("bin upper edges (1 µs)") && s.contains(MEASUREMENT), "{s}");
    }
}
