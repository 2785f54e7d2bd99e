//! A grouped comparison ([`compare_groups`]) and its outputs: text,
//! a Markdown table to paste into a mailing-list reply, and JSON.
//!
//! JSON (`latprobe compare --group … --format json`), the public field
//! names:
//!
//! ```text
//! { "kind": "latprobe-grouped-compare", "latency_unit": "ns",
//!   "seed", "replicates", "family_alpha": 0.05, "resolve_ns",
//!   "groups": [ { "name", "runs": [ { "label", "samples" } ], "method",
//!                 "figures": { "<key>": { "value_ns", "spread_ns", "se_ns", "df" }
//!                                      | { "refused": "why" } } } ],
//!   "pairs":  [ { "first", "second",
//!                 "figures": { "<key>": { "verdict": "higher by" | "lower by"
//!                                           | "no difference shown" | "not compared",
//!                                         "diff_ns", "lo_ns", "hi_ns", "level",
//!                                         "more", "more_unit", "reason", "text" } } } ] }
//! ```
//!
//! `<key>` is `avg`, `p50`, `p90`, `p99`, `p99_9`, `p99_99`, `max`;
//! `diff_ns` is second − first; `lo_ns`/`hi_ns` its interval at `level`
//! (Holm's step, together 95 %); `more`/`more_unit` (`runs` or
//! `samples`) only with "no difference shown"; `reason` only with "not
//! compared"; `text` is the verdict as the text output prints it.

use serde_json::{json, Map, Value};

use super::bootstrap::Resample;
use super::groups::{
    compare_pair, estimates, plain, us, Estimate, Group, Pair, Refusal, Verdict, ALPHA, FIGURES,
};
use super::Format;

/// Every group's figures and every pair's verdicts.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The groups, as given.
    pub groups: Vec<Group>,
    /// Per group, per figure of [`FIGURES`].
    pub estimates: Vec<Vec<Result<Estimate, Refusal>>>,
    /// Each pair of groups, in order (1 with 2, 1 with 3, 2 with 3, …).
    pub pairs: Vec<Pair>,
    /// The bootstrap's seed.
    pub seed: u64,
    /// The half-width a "no difference shown" is asked to reach, ns.
    pub resolve_ns: f64,
    /// Bootstrap resamples per run of a group of one.
    pub replicates: usize,
}

/// Compare `groups` pairwise, bootstrap seeded by `seed` with
/// `replicates` resamples ([`super::bootstrap::REPLICATES`] unless asked).
pub fn compare_groups(groups: Vec<Group>, seed: u64, resolve_ns: f64, replicates: usize) -> Comparison {
    let estimates: Vec<_> =
        groups.iter().enumerate().map(|(i, g)| estimates(g, seed, i as u64, replicates)).collect();
    let mut pairs = Vec::new();
    for a in 0..groups.len() {
        for b in a + 1..groups.len() {
            pairs.push(compare_pair(a, b, &estimates[a], &estimates[b], resolve_ns));
        }
    }
    Comparison { groups, estimates, pairs, seed, resolve_ns, replicates }
}

/// How a group's figures and standard errors were found.
pub fn method(g: &Group, replicates: usize) -> String {
    if g.runs.len() > 1 {
        return format!("mean over {} runs, ± their standard deviation; interval: Welch's t", g.runs.len());
    }
    match &g.runs[0].resample {
        Some(Resample::Blocks(b)) => format!(
            "one run: block bootstrap of its raw samples ({} blocks of {} samples, the length from its serial correlation, {replicates} resamples)",
            b.count(),
            b.block_len
        ),
        Some(Resample::Hist(_)) => format!(
            "one run: bootstrap of its histogram ({replicates} resamples), which assumes independent samples"
        ),
        None => "one run without a histogram: nothing to resample".into(),
    }
}

fn num(ns: f64) -> String {
    format!("{:.2}", ns / 1000.0)
}

/// A group's figure: `mean ± sd` over its runs, `value (se x)` for one
/// run, or the plain figure when it is not compared.
fn cell(c: &Comparison, g: usize, f: usize) -> String {
    match &c.estimates[g][f] {
        Ok(Estimate { value, spread: Some(sd), .. }) => format!("{} ± {}", num(*value), num(*sd)),
        Ok(Estimate { value, se, .. }) => format!("{} (se {})", num(*value), num(*se)),
        Err(_) => plain(&c.groups[g], f),
    }
}

/// The verdict of figure `f` as one line: `p99.9: patched higher by 9.40
/// µs (95 %: 6.10–12.80 µs)`.
pub fn verdict_text(c: &Comparison, p: &Pair, f: usize) -> String {
    let (name, second, first) = (FIGURES[f].1, &c.groups[p.b].name, &c.groups[p.a].name);
    match &p.verdicts[f] {
        Verdict::Shown { higher: true, diff, lo, hi, .. } => {
            format!("{name}: {second} higher by {} (95 %: {}–{} µs)", us(*diff), num(*lo), num(*hi))
        }
        Verdict::Shown { diff, lo, hi, .. } => {
            format!("{name}: {second} lower by {} (95 %: {}–{} µs)", us(-diff), num(-hi), num(-lo))
        }
        Verdict::NoDifference { diff, lo, hi, more, more_unit, .. } => {
            let base = format!(
                "{name}: no difference shown ({second} − {first} = {}, 95 %: {} to {} µs)",
                us(*diff),
                num(*lo),
                num(*hi)
            );
            if *more == 0 {
                format!("{base}; any difference is within ±{}", us((hi - lo) / 2.0))
            } else {
                format!(
                    "{base}; resolving {} at {name} needs about {more} more {more_unit} per group",
                    us(c.resolve_ns)
                )
            }
        }
        Verdict::NotCompared(why) => format!("{name}: not compared: {why}"),
    }
}

fn verdict_word(v: &Verdict) -> &'static str {
    match v {
        Verdict::Shown { higher: true, .. } => "higher by",
        Verdict::Shown { .. } => "lower by",
        Verdict::NoDifference { .. } => "no difference shown",
        Verdict::NotCompared(_) => "not compared",
    }
}

fn diff_cell(v: &Verdict) -> String {
    match v {
        Verdict::Shown { diff, lo, hi, .. } | Verdict::NoDifference { diff, lo, hi, .. } => {
            format!("{:+.2} ({} to {})", diff / 1000.0, num(*lo), num(*hi))
        }
        Verdict::NotCompared(_) => "n/a".into(),
    }
}

fn header_lines(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    for g in &c.groups {
        let labels: Vec<&str> = g.runs.iter().map(|r| r.column.label.as_str()).collect();
        let runs = if g.runs.len() == 1 { "1 run".to_owned() } else { format!("{} runs", g.runs.len()) };
        out.push(format!("{} ({runs}: {}): {}", g.name, labels.join(", "), method(g, c.replicates)));
    }
    out
}

fn footer(c: &Comparison) -> String {
    let mut s = format!(
        "Differences are second − first. The verdicts of each pair hold together at 95 % (Holm over \
         its figures compared); each interval is printed at the level of its Holm step. Bootstrap \
         seed {}, {} resamples per run.",
        c.seed, c.replicates
    );
    if c.groups.iter().any(|g| g.runs.len() == 1) {
        s.push_str(
            " A group of one run has only that run's own noise in its interval: the scatter from run to \
             run (a reboot, another load) shows only with several runs per group.",
        );
    }
    s
}

/// Render `c` as `format` (CSV is refused by the caller).
pub fn render(c: &Comparison, format: Format) -> String {
    match format {
        Format::Json => json_out(c),
        Format::Markdown => markdown(c),
        Format::Text | Format::Csv => text(c),
    }
}

fn text(c: &Comparison) -> String {
    let mut out = String::new();
    for l in header_lines(c) {
        out.push_str(&format!("{l}\n"));
    }
    out.push('\n');
    let mut rows: Vec<Vec<String>> =
        vec![std::iter::once("µs".to_owned()).chain(c.groups.iter().map(|g| g.name.clone())).collect()];
    for (f, (_, name)) in FIGURES.iter().enumerate() {
        rows.push(
            std::iter::once((*name).to_owned()).chain((0..c.groups.len()).map(|g| cell(c, g, f))).collect(),
        );
    }
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    for r in &rows {
        let mut line = String::new();
        for (i, cellv) in r.iter().enumerate() {
            let pad = widths[i] - cellv.chars().count();
            if i == 0 {
                line.push_str(&format!("{cellv}{}", " ".repeat(pad)));
            } else {
                line.push_str(&format!("  {}{cellv}", " ".repeat(pad)));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    for p in &c.pairs {
        out.push_str(&format!("\n{} against {}:\n", c.groups[p.b].name, c.groups[p.a].name));
        for f in 0..FIGURES.len() {
            out.push_str(&format!("  {}\n", verdict_text(c, p, f)));
        }
    }
    out.push('\n');
    out.push_str(&footer(c));
    out.push('\n');
    out
}

fn md(s: &str) -> String {
    s.replace('|', "\\|")
}

fn markdown(c: &Comparison) -> String {
    let mut out = String::new();
    for p in &c.pairs {
        let (a, b) = (&c.groups[p.a].name, &c.groups[p.b].name);
        out.push_str(&format!(
            "| µs | {} | {} | {} − {} (95 %) | verdict |\n|:---|---:|---:|---:|:---|\n",
            md(a),
            md(b),
            md(b),
            md(a)
        ));
        for (f, (_, name)) in FIGURES.iter().enumerate() {
            let v = &p.verdicts[f];
            let word = match v {
                Verdict::Shown { diff, .. } => format!("{b} {} {}", verdict_word(v), us(diff.abs())),
                Verdict::NoDifference { .. } => verdict_word(v).to_owned(),
                Verdict::NotCompared(why) => format!("not compared: {why}"),
            };
            out.push_str(&format!(
                "| {name} | {} | {} | {} | {} |\n",
                cell(c, p.a, f),
                cell(c, p.b, f),
                diff_cell(v),
                md(&word)
            ));
        }
        out.push('\n');
    }
    for l in header_lines(c) {
        out.push_str(&format!("- {}\n", md(&l)));
    }
    out.push('\n');
    out.push_str(&footer(c));
    out.push('\n');
    out
}

fn json_out(c: &Comparison) -> String {
    let groups: Vec<Value> = c
        .groups
        .iter()
        .zip(&c.estimates)
        .map(|(g, est)| {
            let mut figures = Map::new();
            for (f, (key, _)) in FIGURES.iter().enumerate() {
                figures.insert(
                    (*key).into(),
                    match &est[f] {
                        Ok(e) => json!({
                            "value_ns": e.value,
                            "spread_ns": e.spread,
                            "se_ns": e.se,
                            "df": if e.df.is_finite() { Value::from(e.df) } else { Value::Null },
                        }),
                        Err(why) => json!({ "refused": why }),
                    },
                );
            }
            json!({
                "name": g.name,
                "runs": g.runs.iter().map(|r| json!({ "label": r.column.label, "samples": r.column.samples })).collect::<Vec<_>>(),
                "method": method(g, c.replicates),
                "figures": figures,
            })
        })
        .collect();
    let pairs: Vec<Value> = c
        .pairs
        .iter()
        .map(|p| {
            let mut figures = Map::new();
            for (f, (key, _)) in FIGURES.iter().enumerate() {
                let v = &p.verdicts[f];
                let mut o = json!({ "verdict": verdict_word(v), "text": verdict_text(c, p, f) });
                match v {
                    Verdict::Shown { diff, lo, hi, level, .. } => {
                        o["diff_ns"] = json!(diff);
                        o["lo_ns"] = json!(lo);
                        o["hi_ns"] = json!(hi);
                        o["level"] = json!(level);
                    }
                    Verdict::NoDifference { diff, lo, hi, level, more, more_unit } => {
                        o["diff_ns"] = json!(diff);
                        o["lo_ns"] = json!(lo);
                        o["hi_ns"] = json!(hi);
                        o["level"] = json!(level);
                        o["more"] = json!(more);
                        o["more_unit"] = json!(more_unit);
                    }
                    Verdict::NotCompared(why) => o["reason"] = json!(why),
                }
                figures.insert((*key).into(), o);
            }
            json!({ "first": c.groups[p.a].name, "second": c.groups[p.b].name, "figures": figures })
        })
        .collect();
    let doc = json!({
        "kind": "latprobe-grouped-compare",
        "latency_unit": "ns",
        "seed": c.seed,
        "replicates": c.replicates,
        "family_alpha": ALPHA,
        "resolve_ns": c.resolve_ns,
        "groups": groups,
        "pairs": pairs,
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}
