//! `latprobe campaign plan.toml`: a matrix of runs on one bench (loads,
//! intervals, modes, repeats; the kernel is the bench's, not switched
//! here), each run's files in a folder of its own, a manifest, and at the
//! end one compare table (text and Markdown), a grouped comparison with
//! one group per matrix combination and its repeats as the group's runs
//! (`compare --group`: `groups.txt`, `groups.md`), and one HTML page
//! linking every run's report. An interrupted campaign resumes where it stopped:
//! a run whose manifest entry is done and whose report (and raw file) still
//! load is skipped. The folder is locked while a campaign runs in it, and
//! its runs die with it (`campaign/runner.rs`); the whole plan is checked before the
//! first run ([`check_cells`]).
//!
//! Each run is this latprobe again (`latprobe demo …` or `latprobe run …`),
//! so a run behaves exactly as it does by hand; its exit code is recorded
//! (3, a broken limit, is a finished run).
//!
//! ```toml
//! [campaign]
//! name = "idle-vs-hackbench"
//! command = "demo"              # or "run"
//! args = ["--duration", "10s"]  # given to every run
//! repeats = 3
//!
//! [matrix]                      # every combination, each `repeats` times
//! load = ["none", "hackbench"]  # --load (none: no load)
//! interval = ["1ms"]            # --interval
//! mode = ["uart-echo"]          # --mode
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::report::html::esc;
use crate::Error;

mod runner;

/// `latprobe campaign` options.
#[derive(Debug, Clone, Args)]
pub struct CampaignArgs {
    /// The plan (TOML: `[campaign]` name, command, args, repeats; `[matrix]` load, interval, mode)
    #[arg(value_name = "PLAN.toml")]
    pub plan: PathBuf,
    /// The campaign's folder [default: the plan's name beside the plan]; an interrupted campaign in it resumes
    #[arg(long, short, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// The plan file.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// `[campaign]`.
    pub campaign: Head,
    /// `[matrix]`.
    #[serde(default)]
    pub matrix: Matrix,
}

/// `[campaign]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Head {
    /// The campaign's name (its folder's, by default).
    pub name: String,
    /// `demo` or `run`.
    pub command: String,
    /// Flags every run gets.
    #[serde(default)]
    pub args: Vec<String>,
    /// How many times each combination runs.
    #[serde(default = "one")]
    pub repeats: u32,
}

fn one() -> u32 {
    1
}

/// `[matrix]`: each list a dimension; an empty one is left out.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    /// `--load` values; `none` runs without.
    #[serde(default)]
    pub load: Vec<String>,
    /// `--interval` values.
    #[serde(default)]
    pub interval: Vec<String>,
    /// `--mode` values.
    #[serde(default)]
    pub mode: Vec<String>,
}

/// One run of the matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// `002-hackbench-1ms-uart-echo-r1`: its folder's name.
    pub id: String,
    /// The matrix values, by dimension.
    pub values: BTreeMap<String, String>,
    /// The repeat, from 1.
    pub repeat: u32,
    /// latprobe's arguments for it (after the program).
    pub args: Vec<String>,
}

/// `campaign.json` in the folder.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Manifest {
    /// The plan, as it was read (a resume must find the same).
    pub plan: Option<Plan>,
    /// The runs done or tried, by id.
    pub runs: BTreeMap<String, Entry>,
}

/// One run in the manifest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Entry {
    /// Its cell.
    pub cell: Cell,
    /// latprobe's exit code (0 and 3 are finished runs).
    pub exit_code: Option<i32>,
    /// Its report, relative to the folder, when written.
    pub report: Option<String>,
    /// Whether the run measured all it was asked for (an interrupted run,
    /// Ctrl-C reaching it first, is not done: a resume runs it again).
    #[serde(default)]
    pub complete: bool,
    /// When it ended.
    pub ended_at: String,
}

impl Entry {
    fn done(&self, dir: &Path) -> bool {
        self.complete
            && matches!(self.exit_code, Some(0 | 3))
            && self.report.as_ref().is_some_and(|r| dir.join(r).is_file())
    }

    /// Why a run recorded done cannot be used after all: its report, or
    /// its raw file when there is one, no longer loads.
    fn damaged(&self, dir: &Path) -> Option<String> {
        let report = dir.join(self.report.as_deref()?);
        if let Err(e) = crate::cmd::report::load(&report, None) {
            return Some(format!("its report {} no longer loads ({e})", report.display()));
        }
        let raw = report.with_file_name("run.raw");
        if raw.exists() {
            if let Err(e) = crate::rawfile::open(&raw) {
                return Some(format!("its raw file {} no longer loads ({e})", raw.display()));
            }
        }
        None
    }
}

/// Read and check a plan.
pub fn read_plan(path: &Path) -> Result<Plan, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Input(format!("cannot read the campaign plan {}: {e}", path.display())))?;
    let plan: Plan = toml::from_str(&text).map_err(|e| {
        Error::Input(format!(
            "{}: {}: a plan has [campaign] name, command (demo or run), args, repeats and [matrix] load, interval, mode",
            path.display(),
            e.message()
        ))
    })?;
    let bad = |m: String| Err(Error::Input(format!("{}: {m}", path.display())));
    if !["demo", "run"].contains(&plan.campaign.command.as_str()) {
        return bad(format!("command = \"{}\": a campaign runs demo or run", plan.campaign.command));
    }
    if plan.campaign.repeats == 0 || plan.campaign.repeats > 1000 {
        return bad(format!("repeats = {}: give 1 to 1000", plan.campaign.repeats));
    }
    check_names(&plan).map_err(|m| Error::Input(format!("{}: {m}", path.display())))?;
    let m = &plan.matrix;
    let taken = [
        ("--output", true),
        ("-o", true),
        ("--raw", true),
        ("--html", true),
        ("--load", !m.load.is_empty()),
        ("--interval", !m.interval.is_empty()),
        ("--mode", !m.mode.is_empty()),
    ];
    for (flag, _) in taken.iter().filter(|(_, t)| *t) {
        if plan.campaign.args.iter().any(|a| a == flag || a.starts_with(&format!("{flag}="))) {
            return bad(format!(
                "args has {flag}: the campaign sets each run's -o, --raw and --html, and the matrix's dimensions \
                 (load, interval, mode) set their flags"
            ));
        }
    }
    check_count(&plan).map_err(|m| Error::Input(format!("{}: {m}", path.display())))?;
    Ok(plan)
}

/// The most runs a plan may make (its combinations times its repeats):
/// more is a typo, not a bench's work, and is refused before any cell is
/// built.
pub const MAX_RUNS: u64 = 10_000;
/// The longest campaign name: it names a folder.
const MAX_NAME: usize = 100;
/// The longest matrix value: it is part of each run's folder name.
const MAX_VALUE: usize = 64;

/// The name and every matrix value become parts of paths: each one
/// component inside the campaign's folder (or its parent, for the name),
/// never `.`, `..`, a hidden name or a path.
fn check_names(plan: &Plan) -> Result<(), String> {
    let name = &plan.campaign.name;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) {
        return Err(format!("name = \"{name}\": letters, digits, - _ . only (it names a folder)"));
    }
    if name.starts_with('.') {
        return Err(format!(
            "name = \"{name}\": it names a folder, and one starting with . is this folder, its parent or a \
             hidden one: start it with a letter or a digit"
        ));
    }
    if name.len() > MAX_NAME {
        return Err(format!(
            "name = \"{name}\" is {} characters: give at most {MAX_NAME} (it names a folder)",
            name.len()
        ));
    }
    for (dim, values) in
        [("load", &plan.matrix.load), ("interval", &plan.matrix.interval), ("mode", &plan.matrix.mode)]
    {
        for v in values {
            let why = if v.is_empty() || v.contains(char::is_whitespace) {
                "one word each"
            } else if v.contains(['/', '\\']) || v.starts_with('.') || v.contains(char::is_control) {
                "it is part of each run's folder name: no /, \\, control characters or leading ."
            } else if v.len() > MAX_VALUE {
                "it is part of each run's folder name: give at most 64 characters"
            } else {
                continue;
            };
            return Err(format!("[matrix] {dim} value \"{v}\": {why}"));
        }
    }
    Ok(())
}

/// At most [`MAX_RUNS`] runs, counted without building them.
fn check_count(plan: &Plan) -> Result<(), String> {
    let m = &plan.matrix;
    let mut n = u64::from(plan.campaign.repeats);
    let mut parts = Vec::new();
    for (dim, values) in [("load", &m.load), ("interval", &m.interval), ("mode", &m.mode)] {
        if !values.is_empty() {
            n = n.saturating_mul(values.len() as u64);
            parts.push(format!("{} {dim}s", values.len()));
        }
    }
    parts.push(format!("{} repeats", plan.campaign.repeats));
    if n > MAX_RUNS {
        return Err(format!(
            "{} makes {n} runs, more than the {MAX_RUNS} a campaign runs: split it into smaller plans",
            parts.join(" × ")
        ));
    }
    Ok(())
}

/// Check every run's command line as latprobe will read it (its flags,
/// their values, its loads and load schedule) before the first run
/// starts: a typo in a plan fails in a second, not hours in.
pub fn check_cells(path: &Path, cells: &[Cell], read: ReadArgs) -> Result<(), Error> {
    for cell in cells.iter().filter(|c| c.repeat == 1) {
        let mut argv = vec!["latprobe".to_string()];
        argv.extend(cell.args.iter().cloned());
        argv.extend(RUN_OUTPUTS.iter().map(|s| (*s).to_string()));
        let bad = |why: String| {
            Error::Input(format!(
                "{}: run {} (latprobe {}): {why}: fix the plan's args or [matrix]",
                path.display(),
                cell.id,
                cell.args.join(" ")
            ))
        };
        let Some(target) = read(&argv).map_err(bad)? else {
            return Err(bad("a campaign runs demo or run".into()));
        };
        crate::target::load::parse_all(&target.loads).map_err(|e| bad(e.to_string()))?;
        if let Some(s) = &target.load_schedule {
            crate::target::load::parse_schedule(s).map_err(|e| bad(e.to_string()))?;
        }
    }
    Ok(())
}

/// A run's command line (`latprobe ARGS…`) read as latprobe reads it: the
/// target's options of a `demo` or `run`, `None` for another command, or
/// the usage error in words. The command line's parser lives above the
/// subcommands (`cli`), which hands this reader down.
pub type ReadArgs = fn(&[String]) -> Result<Option<crate::options::TargetArgs>, String>;

/// The outputs the campaign gives each run, in its own folder (the raw
/// file is renamed from [`runner::raw_part_name`] when the run is over).
const RUN_OUTPUTS: [&str; 7] = ["-q", "-o", "run.json", "--raw", "run.raw", "--html", "run.html"];

/// Every run of `plan`, in order: each combination, then its repeats.
pub fn cells(plan: &Plan) -> Vec<Cell> {
    let dims: Vec<(&str, &Vec<String>)> =
        [("load", &plan.matrix.load), ("interval", &plan.matrix.interval), ("mode", &plan.matrix.mode)]
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .collect();
    let mut combos: Vec<BTreeMap<String, String>> = vec![BTreeMap::new()];
    for (dim, values) in &dims {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.insert(dim.to_string(), v.clone());
                    c
                })
            })
            .collect();
    }
    let mut out = Vec::new();
    for combo in &combos {
        for repeat in 1..=plan.campaign.repeats {
            let n = out.len() + 1;
            let words: Vec<&str> = dims.iter().map(|(d, _)| combo[*d].as_str()).collect();
            let id = format!(
                "{n:03}-{}r{repeat}",
                words.iter().map(|w| format!("{}-", w.replace(':', "_"))).collect::<String>()
            );
            let mut args = vec![plan.campaign.command.clone()];
            args.extend(plan.campaign.args.iter().cloned());
            for (dim, v) in combo {
                match (dim.as_str(), v.as_str()) {
                    ("load", "none") => {}
                    (d, v) => args.extend([format!("--{d}"), v.to_string()]),
                }
            }
            out.push(Cell { id, values: combo.clone(), repeat, args });
        }
    }
    out
}

fn label(cell: &Cell) -> String {
    let mut l = vec![group_name(cell)];
    l.push(format!("r{}", cell.repeat));
    l.join(" ")
}

/// The matrix combination of a cell, its repeats' group: `load=none interval=1ms`.
fn group_name(cell: &Cell) -> String {
    let l: Vec<String> = cell.values.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if l.is_empty() {
        "all".to_owned()
    } else {
        l.join(" ")
    }
}

/// The grouped comparison of the runs done (`compare --group`), one group
/// per matrix combination with its repeats as its runs: each run's raw
/// file when it is there (its samples resampled in blocks when a group has
/// one run), else its report. `None` with fewer than two combinations.
fn grouped(dir: &Path, done: &[&Entry]) -> Result<Option<crate::compare::grouped::Comparison>, Error> {
    use crate::compare::groups::Group;
    let mut groups: Vec<Group> = Vec::new();
    let mut units = Vec::new();
    for e in done {
        let name = group_name(&e.cell);
        let report = dir.join(e.report.clone().unwrap_or_default());
        let raw = report.with_file_name("run.raw");
        let file = if raw.is_file() { raw } else { report };
        let mut runs = crate::cmd::compare::group_runs_of(&file, None, &mut units)?;
        for r in &mut runs {
            r.column.label = label(&e.cell);
        }
        match groups.iter_mut().find(|g| g.name == name) {
            Some(g) => g.runs.extend(runs),
            None => groups.push(Group { name, runs }),
        }
    }
    if groups.len() < 2 {
        return Ok(None);
    }
    Ok(Some(crate::compare::grouped::compare_groups(
        groups,
        1,
        1000.0,
        crate::compare::bootstrap::REPLICATES,
    )))
}

/// Run `latprobe campaign`.
pub fn run(args: CampaignArgs, read: ReadArgs) -> Result<(), Error> {
    let plan = read_plan(&args.plan)?;
    let cells = cells(&plan);
    check_cells(&args.plan, &cells, read)?;
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| args.plan.parent().unwrap_or(Path::new(".")).join(&plan.campaign.name));
    std::fs::create_dir_all(&dir).map_err(|e| {
        Error::Output(match &args.out {
            Some(_) => format!("--out {}: cannot make the campaign's folder: {e}", dir.display()),
            None => format!(
                "{}: cannot make the campaign's folder (the plan's name beside the plan): {e}: give --out DIR",
                dir.display()
            ),
        })
    })?;
    let lock = runner::lock(&dir)?;
    let manifest_path = dir.join("campaign.json");
    let mut manifest = read_manifest(&manifest_path)?;
    if manifest.plan.as_ref().is_some_and(|p| *p != plan) {
        return Err(Error::Input(format!(
            "{} holds a campaign of another plan: give another --out, or remove the folder to start again",
            dir.display()
        )));
    }
    manifest.plan = Some(plan.clone());
    let resume = match &args.out {
        Some(o) => format!("latprobe campaign {} --out {}", args.plan.display(), o.display()),
        None => format!("latprobe campaign {}", args.plan.display()),
    };
    let tried = run_cells(&cells, &dir, &manifest_path, &mut manifest, &lock)?;
    let done: Vec<&Entry> = cells
        .iter()
        .filter_map(|c| manifest.runs.get(&c.id))
        .filter(|e| e.done(&dir) && e.damaged(&dir).is_none())
        .collect();
    let left = cells.len() - done.len();
    let refused = !tried.is_empty() && tried.iter().all(|c| *c == Some(2));
    let next = if refused {
        format!(
            "every run tried failed at its start (exit 2, a usage or set-up error: see each run's error above): \
             fix what it names, then run `{resume}` again"
        )
    } else {
        format!("run `{resume}` again to resume")
    };
    if done.is_empty() {
        return Err(Error::Report(format!(
            "no run of the campaign in {} is done: nothing to compare yet; {next}",
            dir.display()
        )));
    }
    summarize(&dir, &done)?;
    if left > 0 {
        return Err(Error::Report(format!(
            "{left} of {} runs are not done (interrupted or failed): {next}",
            cells.len()
        )));
    }
    Ok(())
}

/// `campaign.json`: none (a new campaign) only when it is not there; any
/// other failure to read it is an error that names it and touches nothing.
fn read_manifest(path: &Path) -> Result<Manifest, Error> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Manifest::default()),
        Err(e) => {
            return Err(Error::Input(format!(
                "cannot read the campaign's manifest {}: {e}: it records which runs are done; \
                 make it readable, or give another --out",
                path.display()
            )))
        }
    };
    std::str::from_utf8(&text)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(t).map_err(|e| e.to_string()))
        .map_err(|e| {
            Error::Input(format!(
                "{}: not a campaign manifest ({e}): it records which runs are done; repair it, \
                 or give another --out",
                path.display()
            ))
        })
}

/// Run every cell not done yet, recording each in the manifest as it
/// ends; stop at a stop signal (forwarded to the run under way). The exit
/// codes of the runs tried.
fn run_cells(
    cells: &[Cell],
    dir: &Path,
    manifest_path: &Path,
    manifest: &mut Manifest,
    lock: &runner::FolderLock,
) -> Result<Vec<Option<i32>>, Error> {
    let interrupts = crate::signals::install()?;
    let exe = std::env::current_exe().map_err(|e| Error::io("cannot find this latprobe's executable", e))?;
    let mut tried = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        let at = format!("[{}/{}] {}", i + 1, cells.len(), cell.id);
        if let Some(e) = manifest.runs.get(&cell.id).filter(|e| e.done(dir)) {
            match e.damaged(dir) {
                None => {
                    crate::stderr_line!("latprobe campaign: {at} done before, skipped");
                    continue;
                }
                Some(why) => {
                    crate::stderr_line!("latprobe campaign: {at} was done, but {why}: running it again")
                }
            }
        }
        if crate::signals::requested() {
            break;
        }
        let entry = run_cell(&exe, cell, dir, &at, &interrupts, lock)?;
        tried.push(entry.exit_code);
        manifest.runs.insert(cell.id.clone(), entry);
        let text = serde_json::to_string_pretty(&manifest).unwrap_or_default() + "\n";
        crate::fsout::write(manifest_path, text.as_bytes())
            .map_err(|e| Error::io(format!("cannot write {}", manifest_path.display()), e))?;
        // A stop signal was forwarded to the run (it stops and writes its
        // files); the campaign stops after it.
        if interrupts.load(std::sync::atomic::Ordering::SeqCst) > 0 || crate::signals::requested() {
            break;
        }
    }
    Ok(tried)
}

/// Run one cell in its folder, its raw file put in place when it ends.
fn run_cell(
    exe: &Path,
    cell: &Cell,
    dir: &Path,
    at: &str,
    interrupts: &std::sync::atomic::AtomicUsize,
    lock: &runner::FolderLock,
) -> Result<Entry, Error> {
    let run_dir = dir.join(&cell.id);
    std::fs::create_dir_all(&run_dir)
        .map_err(|e| Error::Output(format!("cannot make {}: {e}", run_dir.display())))?;
    runner::remove_leftovers(&run_dir);
    crate::stderr_line!("latprobe campaign: {at}: latprobe {}", cell.args.join(" "));
    let part = runner::raw_part_name();
    let mut argv = cell.args.clone();
    argv.extend(RUN_OUTPUTS.iter().map(|a| if *a == "run.raw" { part.clone() } else { (*a).to_string() }));
    let status = runner::run_child(exe, &argv, &run_dir, interrupts, lock)?;
    runner::settle_raw(&run_dir)?;
    let report = run_dir.join("run.json");
    let complete = std::fs::read_to_string(&report)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|r| r["complete"] == true);
    let entry = Entry {
        cell: cell.clone(),
        exit_code: status.code(),
        report: report.is_file().then(|| format!("{}/run.json", cell.id)),
        complete,
        ended_at: crate::timefmt::now(),
    };
    if !entry.done(dir) {
        crate::stderr_error!(
            "latprobe campaign: {} {} (exit {}); its files are in {}",
            cell.id,
            if entry.report.is_some() && !complete { "did not complete" } else { "failed" },
            status.code().map_or("by a signal".to_string(), |c| c.to_string()),
            run_dir.display()
        );
    }
    Ok(entry)
}

/// `compare.txt`, `compare.md` and `index.html` of the runs done.
fn summarize(dir: &Path, done: &[&Entry]) -> Result<(), Error> {
    let columns: Vec<crate::compare::Column> = done
        .iter()
        .map(|e| {
            let file = e.report.clone().unwrap_or_default();
            let r = crate::cmd::report::load(&dir.join(&file), None)?;
            Ok(crate::compare::Column::from_report(&r, &label(&e.cell), &file))
        })
        .collect::<Result<_, Error>>()?;
    let mut written = Vec::new();
    for (name, format) in
        [("compare.txt", crate::compare::Format::Text), ("compare.md", crate::compare::Format::Markdown)]
    {
        let text = crate::compare::render(&columns, format, None);
        let p = dir.join(name);
        crate::fsout::write(&p, text.as_bytes())
            .map_err(|e| Error::io(format!("cannot write {}", p.display()), e))?;
        written.push(p);
    }
    let md = crate::compare::render(&columns, crate::compare::Format::Text, None);
    crate::stdout!("{md}");
    let groups = grouped(dir, done)?;
    let mut groups_text = String::new();
    if let Some(c) = &groups {
        for (name, format) in
            [("groups.txt", crate::compare::Format::Text), ("groups.md", crate::compare::Format::Markdown)]
        {
            let text = crate::compare::grouped::render(c, format);
            if format == crate::compare::Format::Text {
                groups_text = text.clone();
            }
            let p = dir.join(name);
            crate::fsout::write(&p, text.as_bytes())
                .map_err(|e| Error::io(format!("cannot write {}", p.display()), e))?;
            written.push(p);
        }
        crate::stdout!("\n{groups_text}");
    }
    let mut h = String::from(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>latprobe campaign</title>\
         <style>body{font-family:sans-serif;margin:2em}pre{font-size:12px}</style></head><body>\n\
         <h1>latprobe campaign</h1>\n<ul>\n",
    );
    for e in done {
        let _ = writeln!(
            h,
            "<li><a href=\"{id}/run.html\">{l}</a> (exit {c})</li>",
            id = esc(&e.cell.id),
            l = esc(&label(&e.cell)),
            c = e.exit_code.unwrap_or(-1)
        );
    }
    let _ = writeln!(h, "</ul>\n<h2>Side by side</h2>\n<pre>{}</pre>", esc(&md));
    if !groups_text.is_empty() {
        let _ = writeln!(
            h,
            "<h2>By matrix combination (repeats as a group)</h2>\n<pre>{}</pre>",
            esc(&groups_text)
        );
    }
    let _ = writeln!(h, "</body></html>");
    let p = dir.join("index.html");
    crate::fsout::write(&p, h.as_bytes())
        .map_err(|e| Error::io(format!("cannot write {}", p.display()), e))?;
    written.push(p);
    for p in written {
        crate::measure::wrote(&p);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Result<Plan, Error> {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("p.toml");
        std::fs::write(&p, text).unwrap();
        read_plan(&p)
    }

    #[test]
    fn the_matrix_gives_every_combination_times_the_repeats_in_order() {
        let p = plan(
            "[campaign]\nname = \"c\"\ncommand = \"demo\"\nargs = [\"--duration\", \"1s\"]\nrepeats = 2\n\
             [matrix]\nload = [\"none\", \"hackbench:4\"]\ninterval = [\"1ms\", \"2ms\"]\n",
        )
        .unwrap();
        let c = cells(&p);
        assert_eq!(c.len(), 8);
        assert_eq!(c[0].id, "001-none-1ms-r1");
        assert_eq!(c[0].args, ["demo", "--duration", "1s", "--interval", "1ms"]);
        assert_eq!(c[1].id, "002-none-1ms-r2");
        assert_eq!(c[4].id, "005-hackbench_4-1ms-r1");
        assert_eq!(c[4].args, ["demo", "--duration", "1s", "--interval", "1ms", "--load", "hackbench:4"]);
        assert_eq!(label(&c[7]), "interval=2ms load=hackbench:4 r2");
    }

    #[test]
    fn a_run_is_done_only_complete_with_its_report_and_exit_0_or_3() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("r")).unwrap();
        std::fs::write(d.path().join("r/run.json"), "{}").unwrap();
        let cell = Cell { id: "r".into(), values: BTreeMap::new(), repeat: 1, args: Vec::new() };
        let e = |exit_code, complete, report: Option<&str>| Entry {
            cell: cell.clone(),
            exit_code,
            report: report.map(str::to_string),
            complete,
            ended_at: String::new(),
        };
        assert!(e(Some(0), true, Some("r/run.json")).done(d.path()));
        assert!(e(Some(3), true, Some("r/run.json")).done(d.path()));
        assert!(!e(Some(0), false, Some("r/run.json")).done(d.path()), "interrupted");
        assert!(!e(Some(1), true, Some("r/run.json")).done(d.path()), "failed");
        assert!(!e(Some(0), true, Some("r/gone.json")).done(d.path()), "report gone");
        assert!(!e(None, true, Some("r/run.json")).done(d.path()), "killed by a signal");
    }

    #[test]
    fn a_bad_plan_names_what_to_change() {
        let e = |t: &str| plan(t).unwrap_err().to_string();
        assert!(e("[campaign]\nname = \"c\"\ncommand = \"calibrate\"\n").contains("demo or run"));
        assert!(e("[campaign]\nname = \"c\"\ncommand = \"demo\"\nrepeats = 0\n").contains("1 to 1000"));
        assert!(e("[campaign]\nname = \"a/b\"\ncommand = \"demo\"\n").contains("names a folder"));
        assert!(e("[campaign]\nname = \"c\"\ncommand = \"demo\"\nargs = [\"-o\", \"x.json\"]\n")
            .contains("-o, --raw"));
        let with_interval =
            "[campaign]\nname = \"c\"\ncommand = \"demo\"\nargs = [\"--interval\", \"1ms\"]\n";
        assert!(plan(with_interval).is_ok(), "--interval is the plan's own when the matrix has none");
        assert!(
            e(&format!("{with_interval}[matrix]\ninterval = [\"2ms\"]\n")).contains("args has --interval")
        );
        assert!(e("[campaign]\nname = \"c\"\ncommand = \"demo\"\n[matrix]\nkernel = [\"a\"]\n")
            .contains("kernel"));
    }

    #[test]
    fn names_and_values_that_would_leave_the_folder_are_refused() {
        let e = |t: &str| plan(t).unwrap_err().to_string();
        for name in [".", "..", ".hidden"] {
            let t = format!("[campaign]\nname = \"{name}\"\ncommand = \"demo\"\n");
            assert!(e(&t).contains("starting with ."), "{name}: {}", e(&t));
        }
        for v in ["/../../x", "..", "a\\\\b", "x/y", ".x"] {
            let t = format!("[campaign]\nname = \"c\"\ncommand = \"demo\"\n[matrix]\nmode = [\"{v}\"]\n");
            assert!(e(&t).contains("part of each run's folder name"), "{v}: {}", e(&t));
        }
        let long = format!(
            "[campaign]\nname = \"c\"\ncommand = \"demo\"\n[matrix]\nload = [\"{}\"]\n",
            "x".repeat(65)
        );
        assert!(e(&long).contains("at most 64"));
        // What is allowed stays one path component inside the folder.
        let p = plan("[campaign]\nname = \"c.1\"\ncommand = \"demo\"\n[matrix]\nload = [\"hackbench:4\"]\n")
            .unwrap();
        assert!(cells(&p)
            .iter()
            .all(|c| Path::new(&c.id).components().count() == 1 && !c.id.starts_with('.')));
    }

    #[test]
    fn a_plan_of_too_many_runs_is_refused_before_any_cell_is_built() {
        let values = |n: usize| (0..n).map(|i| format!("\"v{i}\"")).collect::<Vec<_>>().join(",");
        let text = |n: usize, repeats: u32| {
            format!(
                "[campaign]\nname = \"c\"\ncommand = \"demo\"\nrepeats = {repeats}\n\
                 [matrix]\nload = [{}]\ninterval = [{}]\nmode = [{}]\n",
                values(n),
                values(n),
                values(n)
            )
        };
        let e = plan(&text(1000, 1000)).unwrap_err().to_string();
        assert!(e.contains("1000000000000 runs") && e.contains("split it"), "{e}");
        assert!(e.contains("1000 loads × 1000 intervals × 1000 modes × 1000 repeats"), "{e}");
        assert!(plan(&text(10, 100)).is_err(), "10 001 and more are refused");
        assert_eq!(cells(&plan(&text(10, 10)).unwrap()).len(), 10_000, "10 000 is the most");
    }
}
