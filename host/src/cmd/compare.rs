//! `latprobe compare A B …`: runs side by side (seed 003's table), from
//! latprobe reports, raw files, imported in-kernel documents, or cyclictest
//! and rtla files read on the spot; with `--plot DIR`, their histograms in
//! one plot too (`compare-histogram.svg` and `.png`, and on a log latency
//! axis `compare-histogram-log.svg` and `.png`). With `--group NAME FILE…`
//! (twice or more): groups of runs, each figure's difference per pair with
//! its interval and verdict ([`crate::compare::groups`]).

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
    #[arg(value_name = "FILE", required_unless_present = "group")]
    pub files: Vec<PathBuf>,
    /// `--group NAME FILE…`, each occurrence apart.
    #[command(flatten)]
    pub group: GroupArgs,
    /// With --group: the seed of the bootstrap (the same seed gives the same intervals)
    #[arg(long, value_name = "N", default_value_t = 1, requires = "group")]
    pub seed: u64,
    /// With --group: the difference a "no difference shown" should resolve, to say how many more samples or runs that needs
    #[arg(long, value_name = "DURATION", default_value = "1us", value_parser = crate::units::parse_duration_ns, requires = "group")]
    pub resolve: u64,
    /// With --group: bootstrap resamples of a group of one run (more: steadier intervals, slower)
    #[arg(long, value_name = "N", default_value_t = crate::compare::bootstrap::REPLICATES, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(100..=100_000), requires = "group")]
    pub resamples: usize,
    /// Column headings, in order (repeat the flag; missing ones default to the file name)
    #[arg(long, value_name = "NAME")]
    pub label: Vec<String>,
    /// Give each run with a load schedule (--load-schedule) one column per phase too, after its whole-run column
    #[arg(long)]
    pub phases: bool,
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

/// `--group NAME FILE…`, repeated: one list per occurrence, its name
/// first. (clap's derive joins the values of every occurrence into one
/// list, so this flag is read from the matches by hand.)
#[derive(Debug, Clone, Default)]
pub struct GroupArgs(pub Vec<Vec<String>>);

impl GroupArgs {
    /// Whether any `--group` was given.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl clap::FromArgMatches for GroupArgs {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let groups = match m.get_occurrences::<String>("group") {
            Some(o) => o.map(|v| v.cloned().collect()).collect(),
            None => Vec::new(),
        };
        Ok(GroupArgs(groups))
    }
    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for GroupArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.arg(
            clap::Arg::new("group")
                .long("group")
                .value_names(["NAME", "FILE"])
                .num_args(1..)
                .action(clap::ArgAction::Append)
                .conflicts_with_all(["files", "baseline", "plot", "label"])
                .help(
                    "A group of runs: its name, then its files (repeat for each group, at least two): per figure \
                     each group's value and spread, and each pair's difference with its 95 % interval and verdict",
                ),
        )
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

fn file_label(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// The columns one file gives: one for a probe report or raw file, one per
/// series for an imported or a tool's file.
pub fn columns_of(path: &Path, unit: Option<UnitArg>) -> Result<Vec<Column>, Error> {
    Ok(runs_of(path, unit)?.into_iter().map(|(c, _)| c).collect())
}

/// What one file holds, read once: a latprobe report (from JSON or a
/// replayed raw file), or imported series with their labels.
enum Loaded {
    Report(Box<crate::report::Report>),
    Imported(Vec<(crate::import::ImportedRun, String)>),
}

/// Read `path`; a raw file is replayed with every sample into `rows`.
fn load(
    path: &Path,
    unit: Option<UnitArg>,
    rows: Option<Box<dyn crate::samples::Sink>>,
) -> Result<Loaded, Error> {
    super::import::check_input(path)?;
    if rawfile::is_raw(path) {
        let r = match rows {
            None => super::report::load(path, None)?,
            Some(rows) => {
                let r = crate::session::replay_rows(path, None, false, Some(rows))?;
                crate::report::build(&r.ctx, &r.state, r.bad_frames, r.ending.clone())
            }
        };
        return Ok(Loaded::Report(Box::new(r)));
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
            return Ok(Loaded::Imported(vec![(d.run, d.label)]));
        }
        if value.get("schema_version").is_some() && value.get("counts").is_some() {
            return Ok(Loaded::Report(Box::new(crate::report::json::read(path)?)));
        }
    }
    // Anything else must be a tool's own output (read again, by the
    // importer: the two copies are never held at once); its error names the
    // line.
    drop(text);
    drop(bytes);
    let runs = import_all(&[path.to_path_buf()], unit)?;
    let several = runs.len() > 1;
    Ok(Loaded::Imported(
        runs.into_iter()
            .map(|r| {
                let label = label_of(&r, None, several);
                (r, label)
            })
            .collect(),
    ))
}

/// The runs one file gives, as [`columns_of`] does, each with its
/// histogram for `--plot` (`None` when the tool kept none).
pub fn runs_of(path: &Path, unit: Option<UnitArg>) -> Result<Vec<(Column, Option<HistData>)>, Error> {
    let label = file_label(path);
    let file = path.display().to_string();
    Ok(match load(path, unit, None)? {
        Loaded::Report(r) => {
            vec![(Column::from_report(&r, &label, &file), Some(HistData::from_report(&r, &label)))]
        }
        Loaded::Imported(runs) => runs
            .iter()
            .map(|(r, label)| (Column::from_imported(r, label), HistData::from_imported(r, label)))
            .collect(),
    })
}

/// Run `latprobe compare`.
pub fn run(args: CompareArgs) -> Result<(), crate::Error> {
    if !args.group.is_empty() {
        return run_groups(&args);
    }
    let defaults = (1, 1000, crate::compare::bootstrap::REPLICATES);
    if (args.seed, args.resolve, args.resamples) != defaults {
        return Err(Error::Config(
            "--seed, --resolve and --resamples apply to groups: give the runs with --group NAME FILE…".into(),
        ));
    }
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
        if args.phases {
            if let Loaded::Report(r) = load(f, args.unit, None)? {
                let (label, file) = (file_label(f), f.display().to_string());
                let mut whole = Column::from_report(&r, &label, &file);
                let phases = Column::phases_of_report(&r, &label, &file);
                if !phases.is_empty() {
                    whole.meta.push(("phase".to_owned(), "whole run".to_owned()));
                }
                cols.push(whole);
                hists.push(Some(HistData::from_report(&r, &label)));
                for c in phases {
                    cols.push(c);
                    // A phase has figures, not a histogram of its own.
                    hists.push(None);
                }
                continue;
            }
        }
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

/// `compare --group NAME FILE… --group NAME FILE…`.
fn run_groups(args: &CompareArgs) -> Result<(), Error> {
    use crate::compare::groups::Group;
    let example = "e.g. --group vanilla a1.json a2.json --group patched b1.json b2.json";
    let mut groups: Vec<Group> = Vec::new();
    let mut units = Vec::new();
    let mut seen = Vec::new();
    for g in &args.group.0 {
        let (name, files) = g
            .split_first()
            .ok_or_else(|| Error::Config(format!("--group needs a name and its files: {example}")))?;
        if files.is_empty() {
            return Err(Error::Config(format!(
                "--group {name} has no files: give the group's runs after its name, {example}"
            )));
        }
        if name.trim().is_empty() {
            return Err(Error::Config(format!(
                "--group \"{name}\" has no name: give each group a name before its files, {example}"
            )));
        }
        if groups.iter().any(|x| x.name == *name) {
            return Err(Error::Config(format!(
                "--group {name} is given twice: give each group once, with all its files"
            )));
        }
        let mut runs = Vec::new();
        let mut kinds = Vec::new();
        for f in files {
            once(&mut seen, name, f)?;
            let of_file = group_runs_of(Path::new(f), args.unit, &mut units)?;
            kinds.extend(of_file.iter().map(|r| (f.as_str(), RunKind::of(&r.column))));
            runs.extend(of_file);
        }
        check_alike(name, &kinds)?;
        groups.push(Group { name: name.clone(), runs });
    }
    if groups.len() < 2 {
        return Err(Error::Config(format!(
            "one --group has nothing to be compared with: give a second, {example}"
        )));
    }
    check_units(&units)?;
    let format =
        match args.format {
            FormatArg::Text => Format::Text,
            FormatArg::Markdown => Format::Markdown,
            FormatArg::Json => Format::Json,
            FormatArg::Csv => return Err(Error::Config(
                "--format csv is for the plain side-by-side table: with --group give text, markdown or json"
                    .into(),
            )),
        };
    let c = compare::grouped::compare_groups(groups, args.seed, args.resolve as f64, args.resamples);
    crate::stdout!("{}", crate::out::clean_lines(&compare::grouped::render(&c, format)));
    Ok(())
}

/// A file given once in all the groups: the same run twice (by any path
/// to it) would count as two.
fn once(seen: &mut Vec<(std::path::PathBuf, String, String)>, group: &str, file: &str) -> Result<(), Error> {
    let key = std::fs::canonicalize(file).unwrap_or_else(|_| file.into());
    if let Some((_, g, f)) = seen.iter().find(|s| s.0 == key) {
        return Err(Error::Input(format!(
            "{file} (in --group {group}) is {f} (in --group {g}) again: a run counts once; give each file once"
        )));
    }
    seen.push((key, group.to_owned(), file.to_owned()));
    Ok(())
}

/// What a run measured, as far as a group must agree: who measured (the
/// external probe or an in-kernel tool) and what (latprobe's mode, or the
/// tool).
#[derive(Debug, Clone, PartialEq, Eq)]
struct RunKind {
    in_kernel: bool,
    what: Option<String>,
}

impl RunKind {
    fn of(c: &Column) -> RunKind {
        let in_kernel = c.source.starts_with("in-kernel");
        // An imported tool's mode is "TOOL THREAD": its threads agree.
        let what = c.mode.as_deref().map(|m| {
            if in_kernel {
                m.split_whitespace().next().unwrap_or(m).to_owned()
            } else {
                m.to_owned()
            }
        });
        RunKind { in_kernel, what }
    }

    fn source(&self) -> &'static str {
        if self.in_kernel {
            "an in-kernel self-measurement"
        } else {
            "an external probe's measurement"
        }
    }
}

/// A group's runs measure the same thing the same way: no in-kernel and
/// external sources, no two modes (or tools) averaged together.
fn check_alike(group: &str, kinds: &[(&str, RunKind)]) -> Result<(), Error> {
    let Some((first, k0)) = kinds.first() else { return Ok(()) };
    for (f, k) in kinds {
        if k.in_kernel != k0.in_kernel {
            return Err(Error::Input(format!(
                "--group {group} mixes sources: {first} is {}, {f} {}: their figures do not average; \
                 give each its own group",
                k0.source(),
                k.source()
            )));
        }
        if let (Some(a), Some(b)) = (&k0.what, &k.what) {
            if a != b {
                return Err(Error::Input(format!(
                    "--group {group} mixes modes: {first} measured {a}, {f} {b}: their figures do not \
                     average; give each its own group"
                )));
            }
        }
    }
    Ok(())
}

/// The runs of one file for a group: a raw file's samples in blocks, a
/// report's or an imported run's histogram.
pub(crate) fn group_runs_of(
    path: &Path,
    unit: Option<UnitArg>,
    units: &mut Vec<UnitSeen>,
) -> Result<Vec<crate::compare::groups::Run>, Error> {
    use crate::compare::bootstrap::{BlockSink, Hist, Resample};
    use crate::compare::groups::Run;
    let label = file_label(path);
    let file = path.display().to_string();
    let raw = rawfile::is_raw(path);
    let sink = BlockSink::default();
    let rows: Option<Box<dyn crate::samples::Sink>> = raw.then(|| Box::new(sink.clone()) as _);
    Ok(match load(path, unit, rows)? {
        Loaded::Report(r) => {
            let column = Column::from_report(&r, &label, &file);
            let resample = if raw {
                let builder = sink.0.lock().map(|mut b| std::mem::take(&mut *b)).unwrap_or_default();
                Resample::Blocks(builder.finish())
            } else {
                let h = &r.histogram;
                Resample::Hist(Hist {
                    bins: h.bins.iter().map(|&[start_us, n]| (start_us * h.bin_ns, n)).collect(),
                    bin_ns: h.bin_ns,
                    censored: h.overflows,
                    // The mean is over the measured samples: whole when
                    // every overflow is a timeout.
                    mean_complete: h.overflows == r.counts.timeouts,
                })
            };
            vec![Run { column, resample: Some(resample) }]
        }
        Loaded::Imported(runs) => runs
            .iter()
            .inspect(|(r, label)| {
                if let Some(u) = r.extra.get("time_unit").and_then(|u| u.as_str()) {
                    let source = r.extra.get("time_unit_source").and_then(|v| v.as_str()).unwrap_or("");
                    units.push((label.clone(), u.to_owned(), source.contains("does not say")));
                }
            })
            .map(|(r, label)| Run {
                column: Column::from_imported(r, label),
                resample: (r.histogram != crate::import::HistogramRange::None).then(|| {
                    Resample::Hist(Hist {
                        bins: r.bins_ns.clone(),
                        bin_ns: r.bin_width_ns,
                        censored: r.overflows,
                        // A tool's mean holds its overflows; a latprobe
                        // histfile's is over the measured samples.
                        mean_complete: r.overflows == r.timeouts,
                    })
                }),
            })
            .collect(),
    })
}

/// The unit an imported run's figures were read in, and whether the file
/// said so or it was assumed: `(label, "us", assumed)`.
pub(crate) type UnitSeen = (String, String, bool);

/// A unit assumed for one file (a cyclictest histfile does not say) must
/// agree with the units the other files state.
fn check_units(seen: &[UnitSeen]) -> Result<(), Error> {
    let assumed = seen.iter().find(|u| u.2);
    let stated = seen.iter().find(|u| !u.2);
    if let (Some((a, au, _)), Some((s, su, _))) = (assumed, stated) {
        if au != su {
            return Err(Error::Input(format!(
                "mixed units: {a} was read in {au}, assumed (its file does not say), while {s} states {su}: \
                 give --unit {su} if {a} was written in {su} too"
            )));
        }
    }
    Ok(())
}
