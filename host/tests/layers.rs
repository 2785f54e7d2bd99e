//! The host's layers, read from the source: a file that names
//! `crate::a::b` depends on the deepest module file of that path that
//! exists. Two rules, each a test:
//! - no import circle: a set of files that reach one another fails with
//!   the edges that make it;
//! - no import upward: every top-level module has its layer in [`LAYERS`]
//!   (the order `host/src/lib.rs` states), and a module may import its own
//!   layer and the ones below, never one above.
//!
//! Left out, as scaffolding: `tests.rs`, `testkit.rs`, `fake.rs`, `bin/`,
//! and everything after a file's `#[cfg(test)] mod …` block starts. A
//! submodule naming its own ancestor (the `super::` idiom) is not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Circles allowed to exist (files relative to host/src, sorted): none.
/// The last four were taken apart by the model, figure (now
/// analysis/figure), deframe and cmd/options modules; keep it empty.
const KNOWN: &[&[&str]] = &[];

/// The host's layers, bottom first: a module may use its own layer and
/// those below it. A new top-level module must be placed here.
const LAYERS: &[&[&str]] = &[
    // plain data and helpers every layer reads
    &["duration", "units", "model", "error", "out", "fsout", "timefmt", "input", "signals", "options"],
    // bytes and processes: transports, frames, the raw file, the link, the
    // probe tools, the responder here or over SSH
    &["source", "deframe", "rawfile", "link", "defmtlog", "probe", "virtual_probe", "target"],
    // samples to statistics: `analysis` and its children (figure,
    // periodic, timeline, targetlog), the per-sample rows
    &["analysis", "samples"],
    // the session: Hello, Configure, Start, ingest, Stop; replay
    &["session"],
    // in-kernel tools' outputs read
    &["import"],
    // the report of a run, its limits, a calibration made from it
    &["report", "gates", "calibration"],
    // runs side by side, in-kernel documents
    &["compare", "inkernel"],
    // the live path run, demo and calibrate share; the delivery of outputs
    &["measure"],
    // the subcommands
    &["cmd"],
    // the command line: parse and dispatch
    &["cli"],
];

fn layer_of(file: &str) -> Option<usize> {
    let top = file.split('/').next().unwrap().trim_end_matches(".rs");
    LAYERS.iter().position(|l| l.contains(&top))
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let e = edges(&src);
    let mut wrong = Vec::new();
    for (from, tos) in &e {
        if from == "lib.rs" || from == "main.rs" {
            continue;
        }
        let Some(lf) = layer_of(from) else {
            wrong.push(format!("{from}: its module has no layer: place it in LAYERS (host/tests/layers.rs) and in host/src/lib.rs"));
            continue;
        };
        for to in tos {
            match layer_of(to) {
                Some(lt) if lt > lf => wrong.push(format!(
                    "{from} (layer {lf}: {}) imports {to} (layer {lt}: {}): move the shared piece down",
                    LAYERS[lf].join(" "),
                    LAYERS[lt].join(" ")
                )),
                _ => {}
            }
        }
    }
    assert!(wrong.is_empty(), "imports that run up the layers:\n{}", wrong.join("\n"));
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "tests" && n != "bin") {
                walk(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Module path → file, for every product file.
fn modules(src: &Path) -> BTreeMap<Vec<String>, String> {
    let mut files = Vec::new();
    walk(src, &mut files);
    let mut mods = BTreeMap::new();
    for p in files {
        let rel = p.strip_prefix(src).unwrap().to_string_lossy().into_owned();
        let name = p.file_name().unwrap().to_string_lossy();
        if ["tests.rs", "fake.rs", "testkit.rs"].contains(&name.as_ref()) {
            continue;
        }
        let mut parts: Vec<String> = rel.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
        if ["mod", "lib", "main"].contains(&parts.last().unwrap().as_str()) {
            parts.pop();
        }
        mods.insert(parts, rel);
    }
    mods
}

/// The text that counts: comments and the test module cut off.
fn product_text(text: &str) -> String {
    let no_comments: String =
        text.lines().map(|l| l.find("//").map_or(l, |i| &l[..i])).collect::<Vec<_>>().join("\n");
    let cut = no_comments
        .match_indices("#[cfg(test)]")
        .find(|(i, _)| no_comments[i + 12..].trim_start().starts_with("mod "))
        .map_or(no_comments.len(), |(i, _)| i);
    no_comments[..cut].to_owned()
}

fn ident(s: &str) -> usize {
    s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len())
}

/// Every `crate::a::b…` path in `text`, with `crate::a::{b, c::d}` groups
/// expanded one level.
fn paths(text: &str) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        let mut rest = &text[i + 7..];
        let mut base = Vec::new();
        loop {
            let n = ident(rest);
            if n == 0 {
                break;
            }
            base.push(rest[..n].to_owned());
            rest = &rest[n..];
            if let Some(r) = rest.strip_prefix("::") {
                rest = r;
            } else {
                break;
            }
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let item = item.split(" as ").next().unwrap().trim();
                let mut p = base.clone();
                p.extend(item.split("::").filter(|s| !s.is_empty() && *s != "self").map(str::to_owned));
                out.insert(p);
            }
        }
        if !base.is_empty() {
            out.insert(base);
        }
    }
    out
}

fn edges(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(src);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (key, file) in &mods {
        let text = product_text(&std::fs::read_to_string(src.join(file)).unwrap());
        let to = edges.entry(file.clone()).or_default();
        for r in paths(&text) {
            for n in (1..=r.len()).rev() {
                if let Some(g) = mods.get(&r[..n]) {
                    if g != file && key.get(..n) != Some(&r[..n]) {
                        to.insert(g.clone());
                    }
                    break;
                }
            }
        }
    }
    edges
}

/// Strongly connected sets of more than one file (Tarjan).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        e: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        let e = t.e;
        for w in e.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        e: edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v.as_str());
        }
    }
    t.out.sort();
    t.out
}

#[test]
fn no_new_import_circle_in_the_host() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let e = edges(&src);
    let found = circles(&e);
    let known: Vec<Vec<String>> = KNOWN.iter().map(|c| c.iter().map(|s| s.to_string()).collect()).collect();
    let show = |c: &Vec<String>| {
        let inside: BTreeSet<&String> = c.iter().collect();
        let mut s = format!("  {}\n", c.join(" "));
        for f in c {
            let to: Vec<&String> = e[f].iter().filter(|g| inside.contains(g)).collect();
            s.push_str(&format!(
                "    {f} → {}\n",
                to.iter().map(|g| g.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
        s
    };
    let new: Vec<&Vec<String>> = found.iter().filter(|c| !known.contains(c)).collect();
    let gone: Vec<&Vec<String>> = known.iter().filter(|c| !found.contains(c)).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "the host's import circles changed.\nnew or grown (take them apart: move the shared piece down a layer):\n{}\
         known but gone or shrunk (strike or shrink them in KNOWN, host/tests/layers.rs):\n{}",
        new.iter().map(|c| show(c)).collect::<String>(),
        gone.iter().map(|c| format!("  {}\n", c.join(" "))).collect::<String>()
    );
}

/// The firmware's rooms (engine, hwloop, board, …) import one another in
/// no circle either (its `bin/` glue is left out, as the walk leaves out
/// every `bin/`).
#[test]
fn no_import_circle_in_the_firmware() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../firmware/src");
    let e = edges(&src);
    assert!(e.len() > 20, "the firmware's files were not found: {e:?}");
    let found = circles(&e);
    assert!(found.is_empty(), "import circles in firmware/src (take them apart): {found:?}");
}

/// The reader itself: a made-up tree with one circle through a grouped
/// `use`, one edge only in a test module, and a submodule naming its parent.
#[test]
fn the_reader_finds_a_circle_and_ignores_tests_and_parents() {
    let d = tempfile::tempdir().unwrap();
    let w = |p: &str, t: &str| {
        let p = d.path().join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, t).unwrap();
    };
    w("lib.rs", "pub mod a; pub mod b; pub mod c;");
    w("a.rs", "use crate::{b::Thing, c};\n");
    w("b/mod.rs", "pub mod inner;\nuse crate::a::X; // crate::c::Y in a comment\n");
    w("b/inner.rs", "use crate::b::Thing;\n");
    w("c.rs", "pub struct Y;\n#[cfg(test)]\nmod tests { use crate::a::X; }\n");
    let e = edges(d.path());
    assert_eq!(circles(&e), vec![vec!["a.rs".to_string(), "b/mod.rs".to_string()]], "{e:?}");
    assert!(e["c.rs"].is_empty(), "an edge in a test module counted: {e:?}");
    assert!(e["b/inner.rs"].is_empty(), "a submodule naming its parent counted: {e:?}");
}
