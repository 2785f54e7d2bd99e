//! `latprobe report FILE`: rebuild the summary and every output from a JSON
//! report, or re-analyse a raw file with the same ingest code as a live run.

use std::path::PathBuf;

use clap::Args;

use crate::report::{self, Report};
use crate::{rawfile, session};

/// `latprobe report` options.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// A JSON report (--output) or a raw file (--raw) of an earlier run
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Write the JSON report to FILE (`-`: stdout, kept with -q)
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write a cyclictest --histfile style histogram to FILE
    #[arg(long, value_name = "FILE")]
    pub histfile: Option<PathBuf>,
    /// Range of the 1 us histogram when re-analysing a raw file [default: the recorded run's]
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub histfile_max_us: Option<u32>,
    /// Write one row per sample (sequence, time, latency or empty for a timeout, censored flag, bound, stimulus byte) to FILE: CSV, or Parquet when FILE ends in .parquet; needs the raw file (--raw) of the run
    #[arg(long, value_name = "FILE")]
    pub samples: Option<PathBuf>,
    /// Periodic runs: set the target's own per-cycle log (`latprobe-responder periodic --log FILE`) beside the probe's figures; needs the raw file (--raw) of the run
    #[arg(long, value_name = "FILE")]
    pub target_log: Option<PathBuf>,
    /// Periodic runs: also print the delays measured against the nominal schedule
    #[arg(long)]
    pub show_naive: bool,
    /// Limits given here replace the ones the report was judged with; without any, a JSON report keeps its own and a raw file is judged by its run's
    #[command(flatten)]
    pub gates: crate::options::GateArgs,
}

/// Load or rebuild the report in `file`.
pub fn load(file: &std::path::Path, histfile_max_us: Option<u32>) -> Result<Report, crate::Error> {
    load_with(file, histfile_max_us, None)
}

/// [`load`], with the target's own log set beside a periodic run
/// (`--target-log`, raw files only).
pub fn load_with(
    file: &std::path::Path,
    histfile_max_us: Option<u32>,
    target_log: Option<&std::path::Path>,
) -> Result<Report, crate::Error> {
    load_state(file, histfile_max_us, target_log).map(|(r, _)| r)
}

/// [`load_state`] of a raw file, writing every sample as a row into
/// `rows` (`--samples`).
fn load_rows(
    file: &std::path::Path,
    histfile_max_us: Option<u32>,
    target_log: Option<&std::path::Path>,
    rows: Option<Box<dyn crate::samples::Sink>>,
) -> Result<(Report, Option<session::RunState>), crate::Error> {
    if rows.is_none() {
        return load_state(file, histfile_max_us, target_log);
    }
    replay_report(file, histfile_max_us, target_log, rows).map(|(r, s)| (r, Some(s)))
}

/// [`load_with`], with the replayed run's state when `file` is a raw file
/// (its analysis gives any percentile exactly).
pub fn load_state(
    file: &std::path::Path,
    histfile_max_us: Option<u32>,
    target_log: Option<&std::path::Path>,
) -> Result<(Report, Option<session::RunState>), crate::Error> {
    check_input_file(file)?;
    if rawfile::is_raw(file) {
        replay_report(file, histfile_max_us, target_log, None).map(|(r, s)| (r, Some(s)))
    } else {
        if let Some(log) = target_log {
            return Err(crate::Error::Input(format!(
                "--target-log {} needs the raw file of the run (--raw): a JSON report keeps no per-cycle delays",
                log.display()
            )));
        }
        if histfile_max_us.is_some() {
            return Err(crate::Error::Input(
                "--histfile-max-us applies to raw files only: a JSON report keeps its own bins".into(),
            ));
        }
        report::json::read(file).map(|r| (r, None))
    }
}

/// `report FILE`'s file must be there and be a regular file: a FIFO would
/// hang the read and a device never end. Checked before it is opened.
fn check_input_file(file: &std::path::Path) -> Result<(), crate::Error> {
    if !file.exists() {
        return Err(crate::Error::Input(format!(
            "{}: no such file: give a JSON report (--output) or a raw file (--raw) of a run",
            file.display()
        )));
    }
    crate::input::check_regular(file)
        .map_err(|e| crate::Error::Input(format!("{}: cannot read it: {e}", file.display())))
}

/// The report of raw file `file`, replayed (rows into `rows`).
fn replay_report(
    file: &std::path::Path,
    histfile_max_us: Option<u32>,
    target_log: Option<&std::path::Path>,
    rows: Option<Box<dyn crate::samples::Sink>>,
) -> Result<(Report, session::RunState), crate::Error> {
    let mut r = session::replay_rows(file, histfile_max_us, target_log.is_some(), rows)?;
    let mut rep = report::build(&r.ctx, &r.state, r.bad_frames, r.ending.clone());
    // The run's own limits, judged again as a JSON report keeps its
    // verdicts; limits given to `report` replace them (`deliver`).
    if let Some(limits) = r.ctx.limits.as_ref().filter(|l| !l.is_empty()) {
        rep.verdicts = crate::gates::evaluate(&rep, limits, r.state.analysis.as_ref());
    }
    if let Some(log) = target_log {
        crate::measure::attach_target_log(&mut rep, &mut r.state, log, &r.ctx)?;
    }
    Ok((rep, r.state))
}

/// What a per-sample export records about its run (Parquet metadata).
fn run_info(r: &Report, raw: &std::path::Path) -> crate::samples::RunInfo {
    let mut pairs = vec![
        ("latprobe.version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
        ("latprobe.raw_file".to_string(), raw.display().to_string()),
        ("latprobe.mode".to_string(), r.config.mode.mode().name().to_string()),
        ("latprobe.stimulus".to_string(), r.config.stimulus.clone()),
        ("latprobe.interval_ns".to_string(), r.config.interval_ns.to_string()),
        ("latprobe.timeout_ns".to_string(), r.config.timeout_ns.to_string()),
        ("latprobe.started_at".to_string(), r.started_at.clone()),
        ("latprobe.samples".to_string(), r.counts.samples.to_string()),
        ("latprobe.timeouts".to_string(), r.counts.timeouts.to_string()),
        ("latprobe.lost".to_string(), r.counts.lost.to_string()),
        ("latprobe.complete".to_string(), r.complete.to_string()),
    ];
    if let Some(p) = &r.probe {
        pairs.push(("latprobe.board".to_string(), p.hello.board.clone()));
        pairs.push(("latprobe.timer_hz".to_string(), p.hello.timer_hz.to_string()));
    }
    crate::samples::RunInfo { pairs }
}

/// Finish the `--samples` export of the replayed `state`: every sample the
/// report counts is a row, or the file is not written.
fn finish_samples(
    export: crate::samples::Export,
    state: Option<&mut session::RunState>,
    r: &Report,
    raw: &std::path::Path,
) -> Result<(), crate::Error> {
    let info = run_info(r, raw);
    let path = export.path().display().to_string();
    let Some(state) = state else {
        export.abandon();
        return Err(crate::Error::Bug(format!("--samples {path}: the raw file's replay kept no state")));
    };
    let written = match (state.analysis.as_mut().and_then(|a| a.rows.take()), state.rows.take()) {
        (Some(feed), _) => feed.finish(&info),
        // The measurement never started: a file of no rows.
        (None, Some(sink)) => sink.finish(&info).map(|()| 0),
        (None, None) => Ok(0),
    };
    let rows = match written {
        Ok(n) => n,
        Err(cause) => {
            export.abandon();
            return Err(crate::Error::Io { context: format!("--samples {path}: writing the rows"), cause });
        }
    };
    if rows != r.counts.samples {
        export.abandon();
        return Err(crate::Error::Bug(format!(
            "--samples {path}: {rows} rows for the report's {} samples, so the file was not written",
            r.counts.samples
        )));
    }
    let path = export
        .commit()
        .map_err(|cause| crate::Error::Io { context: format!("--samples {path}: naming the file"), cause })?;
    crate::stderr_line!("latprobe: wrote {} ({rows} samples)", path.display());
    Ok(())
}

/// An in-kernel document (`latprobe import`), if `file` is one.
fn in_kernel(file: &std::path::Path) -> Option<crate::inkernel::InKernelReport> {
    if rawfile::is_raw(file) {
        return None;
    }
    let text = report::json::read_text(file).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    if !crate::inkernel::is_in_kernel(&value) {
        return None;
    }
    serde_json::from_value(value).ok()
}

/// The error for `file` when it is another tool's output that `import`
/// reads (cyclictest, rtla): `report` renders latprobe's own files only.
fn other_tool(file: &std::path::Path) -> Option<crate::Error> {
    if rawfile::is_raw(file) {
        return None;
    }
    let runs = crate::import::import_file(file).ok()?;
    let tool = runs.first().map_or("cyclictest", |r| r.tool.as_str());
    let f = file.display();
    Some(crate::Error::Input(format!(
        "{f} is {tool} output, not a latprobe report or raw file: `latprobe import {f} -o FILE.json` \
         turns it into a latprobe document, `latprobe compare {f} RUN.json` sets it beside a run"
    )))
}

/// Run `latprobe report`.
pub fn run(args: ReportArgs) -> Result<(), crate::Error> {
    // Outputs checked before anything is read: none may be an input.
    let mut set = crate::measure::PathSet::default();
    let to_stdout = args.output.as_deref().is_some_and(crate::measure::paths::is_stdout);
    for (flag, p) in
        [("--output", &args.output), ("--histfile", &args.histfile), ("--samples", &args.samples)]
    {
        if let Some(p) = p.as_deref().filter(|_| !(flag == "--output" && to_stdout)) {
            crate::measure::check_parent(flag, p)?;
            set.output(flag, p);
        }
    }
    let gates = crate::measure::Delivery::new(&args.gates)?;
    crate::measure::paths::check_stdout(args.output.as_deref(), &gates)?;
    gates.add_to(&mut set);
    set.input("FILE", &args.file);
    if let Some(log) = &args.target_log {
        set.input("--target-log", log);
    }
    set.check()?;
    // A missing file is said as such, before --samples asks what it is.
    check_input_file(&args.file)?;
    if args.samples.is_some() && !rawfile::is_raw(&args.file) {
        return Err(crate::Error::Config(format!(
            "--samples needs the raw file of the run (`latprobe run --raw FILE`): {} is not one, and a \
             report or an imported histogram keeps no per-sample figures",
            args.file.display()
        )));
    }
    if let Some(d) = in_kernel(&args.file) {
        let g = &args.gates;
        if !gates.limits.is_empty() || g.junit.is_some() || g.lava || g.plot.is_some() || g.html.is_some() {
            return Err(crate::Error::Config(format!(
                "{} is an imported in-kernel run: limits, --junit, --lava, --plot and --html apply to \
                 latprobe runs; `latprobe compare {} --plot DIR` draws its histogram",
                args.file.display(),
                args.file.display()
            )));
        }
        if args.histfile.is_some() || args.histfile_max_us.is_some() {
            return Err(crate::Error::Config(format!(
                "{} is an imported in-kernel run: it keeps the tool's own histogram, drop --histfile",
                args.file.display()
            )));
        }
        match &args.output {
            Some(_) if to_stdout => {
                crate::measure::json_to_stdout(
                    &(serde_json::to_string_pretty(&d).unwrap_or_default() + "\n"),
                )?;
            }
            Some(out) => {
                d.write(out)?;
                crate::measure::wrote(out);
            }
            None => {}
        }
        let summary = crate::out::clean_lines(&crate::inkernel::summary(&d)).into_owned();
        if to_stdout {
            crate::stderr_line!("{}", summary.trim_end());
        } else {
            crate::stdout!("{summary}");
        }
        return Ok(());
    }
    // Ctrl-C, SIGTERM, SIGHUP as in `run`: the re-reading of a raw file
    // stops where it is, the outputs of what was read are written
    // (`complete: false`), and every temporary file goes with the state.
    crate::signals::install()?;
    let export = match &args.samples {
        Some(p) => {
            let (export, sink) = crate::samples::Export::create(p)?;
            Some((export, sink))
        }
        None => None,
    };
    let (export, sink) = match export {
        Some((e, s)) => (Some(e), Some(s)),
        None => (None, None),
    };
    let (mut r, mut state) =
        match load_rows(&args.file, args.histfile_max_us, args.target_log.as_deref(), sink) {
            Ok(v) => v,
            Err(e) => {
                if let Some(x) = export {
                    x.abandon();
                }
                return Err(other_tool(&args.file).unwrap_or(e));
            }
        };
    // A --samples that cannot be written (a full disk) costs no other
    // output: -o and --histfile are still tried, then it is named.
    let samples = match export {
        Some(x) => finish_samples(x, state.as_mut(), &r, &args.file),
        None => Ok(()),
    };
    if crate::signals::requested() {
        crate::stderr_line!("latprobe: interrupted: the report holds what was read (complete: false)");
    }
    let exact = state.as_ref().and_then(|s| s.analysis.as_ref());
    // `deliver` writes the files before printing the summary: a closed
    // stdout must not cost them.
    let summary = |r: &Report| report::text::summary_with(r, args.show_naive);
    let delivered = crate::measure::deliver(
        &mut r,
        exact,
        args.output.as_deref(),
        args.histfile.as_deref(),
        &gates,
        Some(&summary),
    );
    first_of(samples, delivered)
}

/// The `--samples` export's error first (a file not written, exit 1), the
/// other outputs' said after it; else theirs.
fn first_of(
    samples: Result<(), crate::Error>,
    delivered: Result<(), crate::Error>,
) -> Result<(), crate::Error> {
    match (samples, delivered) {
        (Err(e), Err(also)) => {
            crate::stderr_error!("latprobe: also: {also}");
            Err(e)
        }
        (Err(e), Ok(())) | (Ok(()), Err(e)) => Err(e),
        (Ok(()), Ok(())) => Ok(()),
    }
}
