//! `latprobe import FILE…`: cyclictest and rtla results as latprobe
//! documents, so in-kernel self-measurements sit beside the probe's runs.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::compare::{self, Column, Format};
use crate::import::{self, ImportOptions, ImportedRun, TimeUnit};
use crate::inkernel::InKernelReport;
use crate::Error;

/// The unit of a cyclictest histfile's figures, which the file does not state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UnitArg {
    /// Microseconds (cyclictest's default).
    Us,
    /// Nanoseconds (cyclictest -N).
    Ns,
}

impl UnitArg {
    /// The importer's unit.
    pub fn unit(self) -> TimeUnit {
        match self {
            UnitArg::Us => TimeUnit::Micros,
            UnitArg::Ns => TimeUnit::Nanos,
        }
    }
}

/// `latprobe import` options.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// cyclictest --json / --histfile / -h stdout, rtla timerlat hist output, or latprobe's own --histfile
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Write the document to FILE; with several threads or CPUs, one file each,
    /// named FILE with the series inserted before the extension (run.T0.json, run.T1.json);
    /// from several input files, the input's name first (run.ct-json.T0.json)
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Label of the imported series [default: file name and series]
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// Unit of a cyclictest histfile or -h output whose unit the file does not say (-N: ns)
    #[arg(long, value_name = "UNIT")]
    pub unit: Option<UnitArg>,
}

/// Import every file; one error names the file, the line and what was expected.
pub fn import_all(files: &[PathBuf], unit: Option<UnitArg>) -> Result<Vec<ImportedRun>, Error> {
    let options = ImportOptions { cyclictest_unit: unit.map(UnitArg::unit) };
    let mut runs = Vec::new();
    for f in files {
        check_input(f)?;
        if crate::rawfile::is_raw(f) {
            return Err(Error::Input(format!(
                "{0}: this is a latprobe raw file, not cyclictest or rtla output: read it with `latprobe \
                 report {0}`, or set it beside other runs with `latprobe compare {0} …`",
                f.display()
            )));
        }
        let got = import::import_file_with(f, &options).map_err(Error::Import)?;
        for r in &got {
            if let Some(w) = r.extra.get("unit_warning").and_then(|w| w.as_str()) {
                crate::stderr_line!("latprobe: warning: {}: {}", crate::out::clean(&r.source_file), w);
            }
        }
        runs.extend(got);
    }
    Ok(runs)
}

/// An input file must be a file: a directory, or a path that does not
/// exist, is said as such.
pub fn check_input(f: &Path) -> Result<(), Error> {
    if f.is_dir() {
        return Err(Error::Input(format!(
            "{}: this is a directory; give a file in it (cyclictest --json or --histfile output, rtla timerlat hist \
             output, or a latprobe report)",
            f.display()
        )));
    }
    if !f.exists() {
        return Err(Error::Input(format!("{}: no such file", f.display())));
    }
    // A FIFO or a device exists but is no file to read.
    crate::input::check_regular(f).map_err(|e| Error::Input(format!("{}: cannot read it: {e}", f.display())))
}

/// A label for `run`: `--label` (with the series when there are several),
/// else the file name and the series.
pub fn label_of(run: &ImportedRun, given: Option<&str>, several: bool) -> String {
    let file = Path::new(&run.source_file)
        .file_name()
        .map_or_else(|| run.source_file.clone(), |n| n.to_string_lossy().into_owned());
    match given {
        Some(l) if several => format!("{l} {}", run.thread),
        Some(l) => l.to_owned(),
        None => format!("{file} {}", run.thread),
    }
}

/// `OUT` with `series` put before its extension: `run.json` → `run.T0.json`.
pub fn per_series_path(out: &Path, series: &str) -> PathBuf {
    let tag: String = series
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    let stem = out.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let name = match out.extension() {
        Some(ext) => format!("{stem}.{tag}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{tag}"),
    };
    out.with_file_name(name)
}

/// Where each of `docs` goes under `--output out`: `out` for one, else one
/// file per series; from several input files (`several_files`), whose
/// series may share names (T0 of each), the input's file name comes first:
/// `run.ct-json.T0.json`.
fn output_paths(out: &Path, docs: &[InKernelReport], several_files: bool) -> Vec<PathBuf> {
    if docs.len() == 1 {
        return vec![out.to_path_buf()];
    }
    docs.iter()
        .map(|d| {
            let series = if several_files {
                let file = Path::new(&d.run.source_file)
                    .file_name()
                    .map_or_else(|| d.run.source_file.clone(), |n| n.to_string_lossy().into_owned());
                format!("{file} {}", d.run.thread)
            } else {
                d.run.thread.clone()
            };
            per_series_path(out, &series)
        })
        .collect()
}

/// Run `latprobe import`.
pub fn run(args: ImportArgs) -> Result<(), crate::Error> {
    if let Some(out) = &args.output {
        crate::measure::check_parent("--output", out)?;
    }
    let runs = import_all(&args.files, args.unit)?;
    let several = runs.len() > 1;
    let docs: Vec<InKernelReport> = runs
        .into_iter()
        .map(|r| {
            let label = label_of(&r, args.label.as_deref(), several);
            InKernelReport::new(r, label)
        })
        .collect();
    match &args.output {
        Some(out) => {
            let paths = output_paths(out, &docs, args.files.len() > 1);
            let mut set = crate::measure::PathSet::default();
            for f in &args.files {
                set.input("FILE", f);
            }
            for p in &paths {
                set.output("--output", p);
            }
            set.check().map_err(|e| match e {
                Error::Output(m) if paths.len() > 1 => Error::Output(format!(
                    "{m} (with several series, --output {} gives one file per series)",
                    out.display()
                )),
                other => other,
            })?;
            for (d, path) in docs.iter().zip(&paths) {
                d.write(path)?;
                crate::stdout!(
                    "{}: {} samples → {}\n",
                    crate::out::clean(&d.label),
                    d.run.count,
                    path.display()
                );
            }
        }
        None => {
            let cols: Vec<Column> = docs.iter().map(|d| Column::from_imported(&d.run, &d.label)).collect();
            crate::stdout!("{}", crate::out::clean_lines(&compare::render(&cols, Format::Text, None)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_per_series_keeps_the_extension() {
        assert_eq!(per_series_path(Path::new("out/run.json"), "T0"), PathBuf::from("out/run.T0.json"));
        assert_eq!(per_series_path(Path::new("run"), "cpu 3 irq"), PathBuf::from("run.cpu-3-irq"));
    }
}
