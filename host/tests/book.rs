//! The user's book (`docs/book/`) cannot drift from the tools or break:
//! its command reference is every subcommand's `--help` as the binaries
//! print it (`LATPROBE_UPDATE_SNAPSHOTS=1` rewrites it), every page is in
//! its `SUMMARY.md`, and every relative link in the book, the README and
//! the contributor's notebook (`docs/dev/`) names a file that exists, and
//! a heading there when it has a `#fragment`; the udev rules they give are
//! the ones latprobe prints.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

const REFERENCE: &str = "docs/book/src/reference/commands.md";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn help_of(bin: &Path, args: &[&str]) -> String {
    let o = Command::new(bin).args(args).arg("--help").env("NO_COLOR", "1").output().expect("run --help");
    assert!(o.status.success(), "{} {args:?} --help: {}", bin.display(), show(&o));
    String::from_utf8(o.stdout).expect("help is UTF-8")
}

/// The subcommands a `--help` lists under `Commands:` (not `help`).
fn subcommands(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = help.lines().skip_while(|l| l.trim_end() != "Commands:").skip(1);
    while let Some(l) = lines.next().filter(|l| l.starts_with("  ")) {
        // A description wrapped onto the next line is indented further.
        if l.starts_with("   ") {
            continue;
        }
        let name = l.split_whitespace().next().unwrap_or_default();
        if name != "help" {
            out.push(name.to_string());
        }
    }
    out
}

fn section(out: &mut String, title: &str, help: &str) {
    out.push_str(&format!("\n## `{title}`\n\n```text\n{}\n```\n", help.trim_end()));
}

/// The reference page: both tools, the top level and every subcommand.
fn render_reference() -> String {
    let mut out = String::from(
        "# Every command and flag\n\n\
         This page is generated from the tools themselves: it is what `latprobe \
         --help`, `latprobe SUBCOMMAND --help` and the same for `latprobe-responder` \
         print. A test (`host/tests/book.rs`) fails when it differs from the binaries; \
         `LATPROBE_UPDATE_SNAPSHOTS=1 cargo test -p latprobe --test book` rewrites it. \
         The same text is in the man pages (`latprobe man DIR`).\n",
    );
    let latprobe = PathBuf::from(env!("CARGO_BIN_EXE_latprobe"));
    let responder = ensure_responder();
    for (name, bin) in [("latprobe", latprobe), ("latprobe-responder", responder)] {
        let top = help_of(&bin, &[]);
        section(&mut out, name, &top);
        let subs = subcommands(&top);
        assert!(subs.len() >= 4, "{name} --help lists only {subs:?} under Commands:");
        for sub in subs {
            section(&mut out, &format!("{name} {sub}"), &help_of(&bin, &[&sub]));
        }
    }
    out
}

#[test]
fn the_command_reference_is_what_the_binaries_print() {
    let want = render_reference();
    let path = repo().join(REFERENCE);
    if std::env::var_os("LATPROBE_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &want).expect("write the command reference");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want {
        let line = have.lines().zip(want.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "{REFERENCE} is not what the binaries print (first difference at line {}: {:?} against {:?}): \
             run LATPROBE_UPDATE_SNAPSHOTS=1 cargo test -p latprobe --test book and commit it",
            line + 1,
            have.lines().nth(line).unwrap_or("<end>"),
            want.lines().nth(line).unwrap_or("<end>"),
        );
    }
}

#[test]
fn the_reference_lists_every_subcommand_and_flag() {
    // The generator's own premise: a subcommand or flag the tools have is
    // in the page (a parser that found no subcommands would pass above).
    let page = render_reference();
    for sub in ["run", "report", "demo", "campaign", "import", "compare", "calibrate", "list", "flash"] {
        assert!(page.contains(&format!("## `latprobe {sub}`")), "no section for latprobe {sub}");
    }
    for sub in ["uart", "gpio-echo", "periodic", "metadata"] {
        assert!(
            page.contains(&format!("## `latprobe-responder {sub}`")),
            "no section for latprobe-responder {sub}"
        );
    }
    for flag in ["--trigger-above", "--histfile-max-us", "--limits", "--target-install", "--exit-with-stdin"]
    {
        assert!(page.contains(flag), "the reference does not mention {flag}");
    }
}

/// Markdown files under `dir` (recursively), as paths relative to the repository.
fn markdown_under(dir: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![repo().join(dir)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.expect("a directory entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The text outside fenced code blocks and inline code spans.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop `code spans` (a backtick run opens and the same run closes).
        let mut rest = line;
        while let Some(at) = rest.find('`') {
            out.push_str(&rest[..at]);
            let run = rest[at..].chars().take_while(|&c| c == '`').count();
            let after = &rest[at + run..];
            match after.find(&"`".repeat(run)) {
                Some(end) => rest = &after[end + run..],
                None => {
                    rest = after;
                    break;
                }
            }
        }
        out.push_str(rest);
        out.push('\n');
    }
    out
}

/// The targets of `[text](target)` links in markdown prose.
fn links(text: &str) -> Vec<String> {
    let p = prose(text);
    let mut out = Vec::new();
    let mut rest = p.as_str();
    while let Some(at) = rest.find("](") {
        let tail = &rest[at + 2..];
        let end = tail.find(')').unwrap_or(tail.len());
        let target = tail[..end].split_whitespace().next().unwrap_or_default();
        out.push(target.to_string());
        rest = &tail[end..];
    }
    out
}

/// The anchors of a markdown file's headings, as mdBook and GitHub make
/// them: lower case, spaces to `-`, only letters, digits, `-` and `_` kept.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let id: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        out.insert(id);
    }
    out
}

/// Every broken relative link in `files`: `file: target (why)`.
fn broken_links(files: &[PathBuf]) -> Vec<String> {
    let mut broken = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let name = file.strip_prefix(repo()).unwrap_or(file).display().to_string();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                continue;
            }
            let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let resolved = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
            if !resolved.exists() {
                broken.push(format!("{name}: {target} (no such file)"));
                continue;
            }
            if !fragment.is_empty() && resolved.extension().is_some_and(|x| x == "md") {
                let there = std::fs::read_to_string(&resolved).unwrap_or_default();
                if !anchors(&there).contains(fragment) {
                    broken.push(format!("{name}: {target} (no heading #{fragment} there)"));
                }
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_resolves() {
    let mut files = markdown_under("docs/book/src");
    files.extend(markdown_under("docs/dev"));
    files.push(repo().join("README.md"));
    let broken = broken_links(&files);
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_check_finds_a_broken_link() {
    // Its own premise, on a scratch page: a missing file, a missing
    // heading and a good link with its heading.
    let dir = tempfile::tempdir().expect("a scratch directory");
    let page = dir.path().join("page.md");
    std::fs::write(
        &page,
        "# A page\n\n## Its part\n\n[good](page.md#its-part) [gone](missing.md) [nowhere](#no-such-part)\n\
         `[in code](missing-too.md)`\n```\n[in a fence](missing-three.md)\n```\n",
    )
    .unwrap();
    let broken = broken_links(&[page]);
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(broken[0].contains("missing.md") && broken[1].contains("#no-such-part"), "{broken:?}");
}

#[test]
fn every_page_is_in_the_summary() {
    let src = repo().join("docs/book/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).expect("docs/book/src/SUMMARY.md");
    let listed: BTreeSet<PathBuf> =
        links(&summary).into_iter().filter(|l| !l.is_empty()).map(|l| src.join(l)).collect();
    for page in markdown_under("docs/book/src") {
        if page.file_name().is_some_and(|n| n == "SUMMARY.md") {
            continue;
        }
        assert!(listed.contains(&page), "{} is not in docs/book/src/SUMMARY.md", page.display());
    }
    for page in &listed {
        assert!(page.is_file(), "SUMMARY.md lists {}, which does not exist", page.display());
    }
}

#[test]
fn the_readme_and_the_board_pages_give_the_udev_rules_the_tool_prints() {
    // latprobe's permission errors send the user to these rules.
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    for (rule, page) in [
        (latprobe::probe::UDEV_RULE, "docs/book/src/getting-started/nucleo.md"),
        (latprobe::probe::UDEV_RULE_PICO, "docs/book/src/getting-started/pico.md"),
    ] {
        assert!(readme.contains(rule), "README.md does not give the rule latprobe prints:\n{rule}");
        let text = std::fs::read_to_string(repo().join(page)).expect("the board's page");
        assert!(text.contains(rule), "{page} does not give the rule latprobe prints:\n{rule}");
    }
}

/// A word that reads as a git commit hash: 7 to 40 hex digits, letters and
/// digits both (so a number such as `1000000000` does not match).
fn looks_like_a_commit(word: &str) -> bool {
    (7..=40).contains(&word.len())
        && word.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        && word.chars().any(|c| c.is_ascii_digit())
        && word.chars().any(|c| c.is_ascii_alphabetic())
}

#[test]
fn the_readme_stays_short_and_names_no_commit() {
    // The README is the door: the rest is in the book, and figures that
    // need a commit to be read belong in docs/dev/.
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(lines <= 300, "README.md has {lines} lines: move the detail into docs/book/ (at most 300)");
    let hashes: Vec<&str> =
        readme.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| looks_like_a_commit(w)).collect();
    assert!(hashes.is_empty(), "README.md names commits {hashes:?}: put such figures in docs/dev/");
    assert!(
        looks_like_a_commit("9ac74c2") && !looks_like_a_commit("1000000000") && !looks_like_a_commit("0x55")
    );
}
