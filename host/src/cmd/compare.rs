//! `latprobe compare A B …`: runs side by side (seed 003's table), from
//! latprobe reports, raw files, imported in-kernel documents, or cyclictest
//! and rtla files read on the spot; with `--plot DIR`, their histograms in
//! one plot too (`compare-histogram.svg` and `.png`, and on a log latency
//! axis `compare-histogram-log.svg` and `.png`).

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::import::{import_all, label_of, UnitArg};
use crate::compare::{self, Column, Format};
use crate::inkernel::{self, InKernelReport};
use crate::report::plot::{self, HistData};
use crate::{rawfile, Error};

/// Output format of `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Aligned text for a terminal.
    Text,
    /// A GitHub table, to paste into a mailing-list post or a PR.
    Markdown,
    /// RFC 4180 CSV, latencies in µs.
    Csv,
    /// JSON, latencies in ns.
    Json,
}

/// `latprobe compare` options.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Runs: latprobe JSON reports, raw files, `latprobe import` documents, cyclictest or rtla files
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Column headings, in order (repeat the flag; missing ones default to the file name)
    #[arg(long, value_name = "NAME")]
    pub label: Vec<String>,
    /// Output format
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub format: FormatArg,
    /// Add each column's ratio to column N (1 = the first)
    #[arg(long, value_name = "N")]
    pub baseline: Option<usize>,
    /// Unit of a cyclictest histfile whose unit the file does not say (-N: ns)
    #[arg(long, value_name = "UNIT")]
    pub unit: Option<UnitArg>,
    /// Also draw the runs' histograms in one plot: DIR/compare-histogram.svg and .png, and on a log latency axis DIR/compare-histogram-log.svg and .png (DIR is created)
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
}

fn file_label(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// The columns one file gives: one for a probe report or raw file, one per
/// series for an imported or a tool's file.
pub fn columns_of(path: &Path, unit: Option<UnitArg>) -> Result<Vec<Column>, Error> {
    Ok(runs_of(path, unit)?.into_iter().map(|(c, _)| c).collect())
}

/// The runs one file gives, as [`columns_of`] does, each with its
/// histogram for `--plot` (`None` when the tool kept none).
pub fn runs_of(path: &Path, unit: Option<UnitArg>) -> Result<Vec<(Column, Option<HistData>)>, Error> {
    super::import::check_input(path)?;
    let label = file_label(path);
    let file = path.display().to_string();
    let of_report = |r: &crate::report::Report| {
        vec![(Column::from_report(r, &label, &file), Some(HistData::from_report(r, &label)))]
    };
    if rawfile::is_raw(path) {
        let r = super::report::load(path, None)?;
        return Ok(of_report(&r));
    }
    let bytes = crate::input::read_capped(path).map_err(|e| match e {
        crate::input::ReadError::Io(e) => Error::io(format!("cannot read {}", path.display()), e),
        crate::input::ReadError::TooLong => Error::Input(format!(
            "{}: longer than {}, the most latprobe reads of one file: compare a shorter output \
             (a JSON report, a raw file, or a tool's histogram with fewer bins)",
            path.display(),
            crate::input::cap_text()
        )),
    })?;
    // Not UTF-8: no JSON document; the importer names the line.
    let text = String::from_utf8_lossy(&bytes);
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) {
        if inkernel::is_in_kernel(&value) {
            let d: InKernelReport = serde_json::from_value(value).map_err(|e| {
                Error::Input(format!("{} is not a latprobe in-kernel document: {e}", path.display()))
            })?;
            return Ok(vec![(
                Column::from_imported(&d.run, &d.label),
                HistData::from_imported(&d.run, &d.label),
            )]);
        }
        if value.get("schema_version").is_some() && value.get("counts").is_some() {
            let r = crate::report::json::read(path)?;
            return Ok(of_report(&r));
        }
    }
    // Anything else must be a tool's own output (read again, by the
    // importer: the two copies are never held at once); its error names the
    // line.
    drop(text);
    drop(bytes);
    let runs = import_all(&[path.to_path_buf()], unit)?;
    let several = runs.len() > 1;
    Ok(runs
        .iter()
        .map(|r| {
            let label = label_of(r, None, several);
            (Column::from_imported(r, &label), HistData::from_imported(r, &label))
        })
        .collect())
}

/// Run `latprobe compare`.
pub fn run(args: CompareArgs) -> Result<(), crate::Error> {
    if let Some(dir) = &args.plot {
        // Before anything is read: a file given as the directory, or a
        // plot that would replace one of the runs, is refused.
        crate::measure::check_plot_dir("--plot", dir)?;
        let mut set = crate::measure::PathSet::default();
        for f in &args.files {
            set.input("FILE", f);
        }
        set.plot_dir("--plot", dir, &plot::OVERLAY_FILES);
        set.check()?;
    }
    let mut cols = Vec::new();
    let mut hists = Vec::new();
    for f in &args.files {
        for (c, h) in runs_of(f, args.unit)? {
            cols.push(c);
            hists.push(h);
        }
    }
    if args.label.len() > cols.len() {
        return Err(Error::Config(format!(
            "{} --label given for {} columns: drop the extra ones",
            args.label.len(),
            cols.len()
        )));
    }
    for ((c, h), l) in cols.iter_mut().zip(hists.iter_mut()).zip(&args.label) {
        c.label = l.clone();
        if let Some(h) = h {
            h.label = l.clone();
        }
    }
    let baseline = match args.baseline {
        None => None,
        Some(n) if (1..=cols.len()).contains(&n) => Some(n - 1),
        Some(n) => {
            return Err(Error::Config(format!(
                "--baseline {n}: there are {} columns, give 1 to {}",
                cols.len(),
                cols.len()
            )))
        }
    };
    let format = match args.format {
        FormatArg::Text => Format::Text,
        FormatArg::Markdown => Format::Markdown,
        FormatArg::Csv => Format::Csv,
        FormatArg::Json => Format::Json,
    };
    // Labels and metadata come from the files compared.
    crate::stdout!("{}", crate::out::clean_lines(&compare::render(&cols, format, baseline)));
    if let Some(dir) = &args.plot {
        plot_runs(&cols, hists, dir)?;
    }
    Ok(())
}

/// `--plot DIR`: the histograms of the runs that have one, in one plot.
fn plot_runs(cols: &[Column], hists: Vec<Option<HistData>>, dir: &Path) -> Result<(), Error> {
    for (c, h) in cols.iter().zip(&hists) {
        if h.is_none() {
            crate::stderr_line!(
                "latprobe: {} has no histogram (cyclictest keeps one with -h N): left out of the plot",
                c.label
            );
        }
    }
    let runs: Vec<HistData> = hists.into_iter().flatten().collect();
    if runs.is_empty() {
        return Err(Error::Report(format!(
            "--plot {}: none of the runs has a histogram to plot (cyclictest keeps one with -h N)",
            dir.display()
        )));
    }
    for p in plot::write_overlay(&runs, dir, "--plot")? {
        crate::stderr_line!("latprobe: wrote {}", p.display());
    }
    Ok(())
}
