//! Reads the results of in-kernel latency self-measurements (cyclictest,
//! rtla timerlat) into one neutral [`ImportedRun`] per measured thread, so
//! they can stand next to a latprobe run in a comparison table.
//!
//! ```text
//!  file ─▶ detect ─┬─▶ cyclictest_json   (--json=FILE)
//!                  ├─▶ cyclictest_hist   (--histfile=FILE, -h N stdout with status lines;
//!                  │     └─ latprobe_hist   latprobe's own --histfile: its `# latprobe` header)
//!                  └─▶ rtla              (rtla timerlat hist stdout)
//!                           └─▶ Vec<ImportedRun> ─▶ compare::Column
//! ```
//!
//! Two rules hold for every format:
//!
//! - **Every figure is the tool's own.** Count, min, avg and max come from
//!   the tool's summary lines, never recomputed from the histogram; the
//!   histogram is checked against them (bin sums against totals, overflows
//!   against the range) and a file that disagrees with itself is refused.
//! - **A partial file is an error, not a smaller run.** A file cut before
//!   its last summary line, a cell that is not a number or a row out of
//!   place gives one [`ImportError`] naming the file, the line and what was
//!   expected there.
//!
//! Histogram bins are kept in the tool's own resolution, in nanoseconds:
//! cyclictest fills one bin per whole unit of its output (1 µs, or 1 ns with
//! `-N`: its `hist_array[diff]` is indexed by the same value it prints as
//! min/max), rtla one bin per `--bucket-size` units.

mod cyclictest_hist;
mod cyclictest_json;
mod latprobe_hist;
mod rtla;

pub use latprobe_hist::shell_words;

use std::path::Path;

use crate::analysis::figure::Figure;

/// One measured thread (cyclictest) or one CPU context (rtla) of an
/// imported file. All times are nanoseconds.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ImportedRun {
    /// `"cyclictest"` or `"rtla timerlat"`.
    pub tool: String,
    /// The tool's version when the file states it (cyclictest JSON does).
    pub tool_version: Option<String>,
    /// The command line when the file states it.
    pub cmdline: Option<String>,
    /// The file name as given to the importer.
    pub source_file: String,
    /// Which series of the file this is: `"T0"` (cyclictest thread 0),
    /// `"cpu 3 irq"`, `"cpu 3 thread"`, `"cpu 3 user"` (rtla).
    pub thread: String,
    /// The CPU the series ran on, when the file says.
    pub cpu: Option<u32>,
    /// The timer period of this series, when the file says (cyclictest
    /// status lines `I:`, or thread 0 of a JSON command line's `-i`).
    pub interval_ns: Option<u64>,
    /// Every sample taken: those in the histogram plus the overflows.
    pub count: u64,
    /// The smallest latency, exactly as the tool printed it (None without
    /// samples).
    pub min_ns: Option<u64>,
    /// The mean latency as the tool printed it; the true mean lies within
    /// [`ImportedRun::avg_resolution_ns`] of it.
    pub avg_ns: Option<u64>,
    /// The largest latency, exactly as the tool printed it (None without
    /// samples, or for a latprobe histfile with timeouts, whose true max
    /// lies above its timeout: `extra.max_censored` says so).
    pub max_ns: Option<u64>,
    /// How finely the format states the mean: 1000 when it prints whole
    /// microseconds (truncated), 10 for cyclictest JSON's two decimals of a
    /// µs, 1 for nanosecond formats.
    pub avg_resolution_ns: u64,
    /// The histogram, sparse: `(bin start ns, samples)` for non-empty bins,
    /// in ascending order. Empty when no sample fell inside the range (or
    /// no histogram was kept, see [`ImportedRun::histogram`]).
    pub bins_ns: Vec<(u64, u64)>,
    /// The width of every bin: 1000 for cyclictest's µs histograms, 1 with
    /// `-N`; rtla's bucket size (inferred from the bin starts, see
    /// [`HistogramRange`]).
    pub bin_width_ns: u64,
    /// Samples beyond the histogram's range (counted in `count`, not in any
    /// bin).
    pub overflows: u64,
    /// The cycle numbers of the first overflows, as cyclictest lists them
    /// (empty for formats that do not list them).
    pub overflow_cycles: Vec<u64>,
    /// Overflows cyclictest counted but did not list (`# N others`).
    pub overflow_others: u64,
    /// Where the histogram ends, i.e. from which latency on a sample is an
    /// overflow.
    pub histogram: HistogramRange,
    /// Of the overflows, the probe's timeouts (latprobe's own histfile):
    /// latencies known only to exceed [`ImportedRun::timeout_ns`], ranked
    /// above every other sample. 0 for the in-kernel tools (and in
    /// documents of older versions).
    #[serde(default)]
    pub timeouts: u64,
    /// The timeout the [`ImportedRun::timeouts`] exceeded.
    #[serde(default)]
    pub timeout_ns: Option<u64>,
    /// Format-specific facts kept verbatim (cyclictest JSON's `sysinfo`,
    /// `start_time`, `return_code`; rtla's duration and trailing notes; the
    /// time unit and where it was learnt, under `"time_unit"` and
    /// `"time_unit_source"`).
    pub extra: serde_json::Value,
}

/// The range a run's histogram covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "ns")]
pub enum HistogramRange {
    /// The tool kept no histogram (cyclictest without `-h`): percentiles are
    /// unknown.
    None,
    /// Samples at or above this many ns are overflows; the file (or its
    /// command line) states the range.
    Exact(u64),
    /// The range is not stated (rtla without `--with-zeros`, a cyclictest
    /// JSON whose command line has no `-h`), but overflows lie at or above
    /// this many ns: the end of the last bin the file shows.
    AtLeast(u64),
}

/// The unit of cyclictest's figures, which its histfile does not state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Microseconds (cyclictest's default).
    Micros,
    /// Nanoseconds (`cyclictest -N`).
    Nanos,
}

impl TimeUnit {
    /// Nanoseconds per unit.
    pub fn ns(self) -> u64 {
        match self {
            TimeUnit::Micros => 1000,
            TimeUnit::Nanos => 1,
        }
    }

    fn name(self) -> &'static str {
        match self {
            TimeUnit::Micros => "us",
            TimeUnit::Nanos => "ns",
        }
    }
}

/// How to read files whose format leaves something open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// The unit of a cyclictest histfile or `-h` output. A cyclictest
    /// histfile does not say whether it was written with `-N`; when this is
    /// None the importer looks for evidence in the file (the width of the
    /// status lines' `Act:` field, a command line) and otherwise takes
    /// cyclictest's default, µs, and says so in `extra["time_unit_source"]`.
    /// A file whose own evidence contradicts this is an error.
    pub cyclictest_unit: Option<TimeUnit>,
}

pub use crate::error::ImportError;

impl ImportError {
    pub(crate) fn at(file: &str, line: usize, message: impl Into<String>) -> Self {
        ImportError::Parse { file: file.to_owned(), line, message: message.into() }
    }
}

/// Read `path` and import it, detecting its format; see [`import_str`].
pub fn import_file(path: &Path) -> Result<Vec<ImportedRun>, ImportError> {
    import_file_with(path, &ImportOptions::default())
}

/// [`import_file`] with options.
pub fn import_file_with(path: &Path, options: &ImportOptions) -> Result<Vec<ImportedRun>, ImportError> {
    let name = path.display().to_string();
    let bytes = crate::input::read_capped(path).map_err(|e| match e {
        crate::input::ReadError::Io(source) => ImportError::Io { file: name.clone(), source },
        crate::input::ReadError::TooLong => {
            ImportError::TooLong { file: name.clone(), cap: crate::input::cap_text() }
        }
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|&&b| b == b'\n').count();
        ImportError::at(&name, line, "expected text, found bytes that are not UTF-8")
    })?;
    import_str_with(&name, &text, options)
}

/// Import the text of one file called `name` (used in errors and
/// [`ImportedRun::source_file`]). The format is detected from the content:
/// cyclictest `--json`, cyclictest `--histfile` or `-h` stdout, or
/// `rtla timerlat hist` output. Returns one run per thread or CPU context,
/// in the file's order.
pub fn import_str(name: &str, text: &str) -> Result<Vec<ImportedRun>, ImportError> {
    import_str_with(name, text, &ImportOptions::default())
}

/// [`import_str`] with options.
pub fn import_str_with(
    name: &str,
    text: &str,
    options: &ImportOptions,
) -> Result<Vec<ImportedRun>, ImportError> {
    match detect(text) {
        Some(Format::CyclictestJson) => {
            cyclictest_json::parse(name, text).map_err(|e| latprobes_own(name, text).unwrap_or(e))
        }
        Some(Format::CyclictestHist) => cyclictest_hist::parse(name, text, options),
        Some(Format::Rtla) => rtla::parse(name, text),
        None => {
            let (line, first) = text
                .lines()
                .enumerate()
                .find(|(_, l)| !l.trim().is_empty())
                .map(|(i, l)| (i + 1, l.trim()))
                .unwrap_or((1, ""));
            let found =
                if first.is_empty() { "an empty file".to_owned() } else { format!("'{}'", clip(first)) };
            Err(ImportError::at(
                name,
                line,
                format!(
                    "expected cyclictest --json or --histfile/-h output, or rtla timerlat hist output; \
                     found {found}"
                ),
            ))
        }
    }
}

/// The error for a JSON file latprobe wrote itself (a report, or a
/// document of `latprobe import`), which is not a tool's output to import.
fn latprobes_own(name: &str, text: &str) -> Option<ImportError> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    // (`inkernel` reads this module's runs: its kinds are not named here.)
    let what = if value.get("kind").is_some() && value.get("run").is_some() {
        "a document latprobe import already wrote"
    } else if value.get("schema_version").is_some() && value.get("counts").is_some() {
        "a latprobe report"
    } else {
        return None;
    };
    Some(ImportError::at(
        name,
        1,
        format!(
            "this is {what}, not cyclictest or rtla output: read it with `latprobe report {name}`, or set it \
             beside other runs with `latprobe compare {name} …`"
        ),
    ))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    CyclictestJson,
    CyclictestHist,
    Rtla,
}

fn detect(text: &str) -> Option<Format> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().starts_with('{') {
        return Some(Format::CyclictestJson);
    }
    for line in text.lines().map(strip_escapes) {
        let t = line.trim();
        if t.starts_with("# RTLA timerlat histogram")
            || (t.starts_with("Index") && ["IRQ-", "Thr-", "Usr-"].iter().any(|k| t.contains(k)))
        {
            return Some(Format::Rtla);
        }
        if t == "# Histogram" || t.starts_with("T:") && t.contains(" C:") && t.contains("Max:") {
            return Some(Format::CyclictestHist);
        }
    }
    None
}

/// The line without the cursor-movement escapes (`ESC [ 3 A`) cyclictest
/// puts in front of its refreshed status block.
pub(crate) fn strip_escapes(line: &str) -> &str {
    let mut rest = line;
    while let Some(after) = rest.strip_prefix("\u{1b}[") {
        let end = after.find(|c: char| c.is_ascii_alphabetic()).map_or(after.len(), |i| i + 1);
        rest = &after[end..];
    }
    rest
}

/// A cell or line shortened for an error message.
pub(crate) fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(40).collect();
    if text.chars().count() > 40 {
        out.push('…');
    }
    out
}

impl ImportedRun {
    /// Samples inside the histogram's range.
    pub fn in_histogram(&self) -> u64 {
        self.count.saturating_sub(self.overflows)
    }

    /// The `q` quantile (0 < q ≤ 1) of the latency, from the histogram.
    ///
    /// The sample of rank ⌈q·count⌉ is found in its bin, and the bin's
    /// **upper edge** is returned: the tools truncate each latency to whole
    /// units before binning, so a sample in the bin starting at `s` lay in
    /// `[s, s + width)` and the upper edge never understates it. The result
    /// is clamped to the tool's own `[min, max]`.
    ///
    /// - a rank among the overflows gives [`Figure::Above`] the histogram's
    ///   end, never a number; among latprobe's timeouts (the highest
    ///   ranks), [`Figure::Above`] the timeout;
    /// - no samples, no histogram, or a `q` outside (0, 1] give
    ///   [`Figure::None`].
    pub fn quantile(&self, q: f64) -> Figure {
        if self.count == 0 || !(q > 0.0 && q <= 1.0) || self.histogram == HistogramRange::None {
            return Figure::None;
        }
        // q in parts per million, so 0.999 is exactly 999000: no float
        // rounding decides a rank.
        let ppm = (q * 1e6).round() as u128;
        let rank = (ppm * u128::from(self.count)).div_ceil(1_000_000).max(1) as u64;
        if rank > self.in_histogram() {
            if let Some(t) = self.timeout_ns.filter(|_| rank > self.count.saturating_sub(self.timeouts)) {
                return Figure::Above(t);
            }
            return match self.histogram {
                HistogramRange::Exact(end) => Figure::Above(end),
                HistogramRange::AtLeast(end) if end > 0 => Figure::Above(end),
                _ => Figure::None,
            };
        }
        let mut seen = 0u64;
        for &(start, n) in &self.bins_ns {
            seen += n;
            if seen >= rank {
                let mut v = start.saturating_add(self.bin_width_ns);
                if let Some(max) = self.max_ns {
                    v = v.min(max);
                }
                if let Some(min) = self.min_ns {
                    v = v.max(min);
                }
                return Figure::Value(v);
            }
        }
        // Unreachable for a run built by this module (bins sum to
        // count - overflows), but a hand-built run must not panic.
        Figure::None
    }
}

/// A bin width for a sentence: `1 µs`, `10 µs`, `1 ns`.
pub fn bin_width(ns: u64) -> String {
    if ns >= 1000 && ns % 1000 == 0 {
        format!("{} µs", ns / 1000)
    } else {
        format!("{ns} ns")
    }
}

/// Shared by the parsers: the JSON value of a time unit for `extra`.
fn unit_extra(unit: TimeUnit, source: &str) -> [(String, serde_json::Value); 2] {
    [
        ("time_unit".to_owned(), serde_json::Value::from(unit.name())),
        ("time_unit_source".to_owned(), serde_json::Value::from(source)),
    ]
}
