//! The CI examples in `docs/ci/` (GitHub Actions, LAVA, labgrid/pytest,
//! the limits file) stay true: the book's CI guide
//! (`docs/book/src/guides/ci.md`) shows each verbatim and the README the
//! limits file, the limits file reads, and every flag they give `latprobe`
//! or `latprobe-responder` exists (a renamed flag fails here, not on
//! somebody's bench).

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn docs_ci() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/ci")
}

fn example(name: &str) -> String {
    std::fs::read_to_string(docs_ci().join(name)).unwrap_or_else(|e| panic!("docs/ci/{name}: {e}"))
}

const EXAMPLES: [&str; 6] = [
    "limits.toml",
    "github-actions.yml",
    "lava-latprobe.yaml",
    "test_latency.py",
    "campaign.toml",
    "lava-campaign.yaml",
];

fn repo_file(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_ci_guide_shows_every_example_verbatim() {
    let guide = repo_file("docs/book/src/guides/ci.md");
    for name in EXAMPLES {
        assert!(
            guide.contains(example(name).trim_end()),
            "docs/book/src/guides/ci.md does not show docs/ci/{name} as it is"
        );
    }
}

#[test]
fn the_readme_shows_the_limits_file_verbatim() {
    assert!(
        repo_file("README.md").contains(example("limits.toml").trim_end()),
        "README.md does not show docs/ci/limits.toml as it is"
    );
}

#[test]
fn the_limits_file_reads() {
    let l = latprobe::gates::read_limits_file(&docs_ci().join("limits.toml")).expect("limits.toml reads");
    assert_eq!(l.max_ns, Some(200_000));
    assert_eq!((l.max_timeouts, l.max_lost, l.max_late), (Some(0), Some(0), Some(0)));
    assert_eq!(l.percentiles.len(), 2);
}

/// The `--flags` of the commands in `text` that start with `tool SUB`.
fn flags_of(text: &str, tool: &str, sub: &str) -> Vec<String> {
    let mut flags = Vec::new();
    let start = format!("{tool} {sub}");
    // A Python argument list reads as the command line it makes.
    let text = text.replace("\", \"", " ");
    let text = text.as_str();
    // A command may span lines (a folded YAML scalar, a Python list): take
    // from its start to the end of its block.
    let mut rest = text;
    while let Some(at) = rest.find(&start) {
        let tail = &rest[at + start.len()..];
        let end = ["\n      - ", "\n    - ", "\n    ]", "\n\n", "&"]
            .iter()
            .filter_map(|m| tail.find(m))
            .min()
            .unwrap_or(tail.len());
        for tok in tail[..end].split(|c: char| c.is_whitespace() || c == '"' || c == ',' || c == '\'') {
            if let Some(f) = tok.strip_prefix("--") {
                if !f.is_empty() {
                    flags.push(format!("--{f}"));
                }
            }
        }
        rest = &tail[end..];
    }
    flags
}

fn help(bin: std::process::Command) -> String {
    let mut bin = bin;
    let o = bin.output().expect("run --help");
    assert!(o.status.success(), "{}", show(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn every_flag_the_examples_use_exists() {
    let mut run_help = latprobe();
    run_help.args(["run", "--help"]);
    let run_help = help(run_help);
    let mut resp = std::process::Command::new(ensure_responder());
    resp.args(["uart", "--help"]);
    let resp_help = help(resp);
    let mut checked = 0;
    for name in EXAMPLES {
        let text = example(name);
        for f in flags_of(&text, "latprobe", "run") {
            assert!(
                run_help.contains(&format!("{f} ")) || run_help.contains(&format!("{f}\n")),
                "docs/ci/{name}: latprobe run has no {f}"
            );
            checked += 1;
        }
        for f in flags_of(&text, "latprobe-responder", "uart") {
            assert!(
                resp_help.contains(&format!("{f} ")),
                "docs/ci/{name}: latprobe-responder uart has no {f}"
            );
            checked += 1;
        }
    }
    // The parser found the commands: each example's run line has flags.
    assert!(checked >= 24, "only {checked} flags found: the examples' commands were not parsed");
    // And it would catch a renamed flag.
    assert!(!run_help.contains("--limit-file "), "the test's own premise");
}

/// The campaign plan reads, makes its 12 runs, and every flag it gives
/// `latprobe run` exists; the LAVA campaign job's `report` flags too.
#[test]
fn the_campaign_plan_reads_and_its_flags_exist() {
    let plan =
        latprobe::cmd::campaign::read_plan(&docs_ci().join("campaign.toml")).expect("campaign.toml reads");
    let cells = latprobe::cmd::campaign::cells(&plan);
    assert_eq!(cells.len(), 12);
    let mut run_help = latprobe();
    run_help.args(["run", "--help"]);
    let run_help = help(run_help);
    for f in plan.campaign.args.iter().chain(&cells[11].args).filter(|a| a.starts_with("--")) {
        assert!(run_help.contains(&format!("{f} ")), "docs/ci/campaign.toml: latprobe run has no {f}");
    }
    let mut report_help = latprobe();
    report_help.args(["report", "--help"]);
    let report_help = help(report_help);
    for f in flags_of(&example("lava-campaign.yaml"), "latprobe", "report") {
        assert!(
            report_help.contains(&format!("{f} ")),
            "docs/ci/lava-campaign.yaml: latprobe report has no {f}"
        );
    }
    assert!(example("lava-campaign.yaml").contains("latprobe campaign campaign.toml --out results"));
}
