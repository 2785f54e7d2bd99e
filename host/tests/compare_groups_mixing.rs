//! `latprobe compare --group` refuses groups whose average means nothing
//! (issue 43, finding 14): a group mixing latprobe's modes, or in-kernel
//! and external sources; the same file listed twice (by any path); a group
//! without a name. Each is one error naming the files.

mod common;

use std::path::{Path, PathBuf};

use common::{p, run, show, stderr, tmp};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel)
}

/// The golden report, copied as `name` with its mode set to `mode`.
fn report(dir: &Path, name: &str, mode: &str) -> PathBuf {
    let mut r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("golden/out/r.json")).unwrap()).unwrap();
    r["config"]["mode"] = mode.into();
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(&r).unwrap()).unwrap();
    path
}

#[test]
fn groups_that_mix_runs_or_count_one_twice_are_refused_naming_the_files() {
    let dir = tmp();
    let d = dir.path();
    let (a1, a2, b1) = (
        report(d, "a1.json", "uart-echo"),
        report(d, "a2.json", "uart-echo"),
        report(d, "b1.json", "uart-echo"),
    );
    let gpio = report(d, "gpio.json", "gpio-echo");
    let ct = fixture("import/cyclictest/ct_t2_h100.json");
    std::os::unix::fs::symlink(&a1, d.join("again.json")).unwrap();
    let again = d.join("again.json");
    // The same set, well formed, is compared.
    let o = run(&["compare", "--group", "a", p(&a1), p(&a2), "--group", "b", p(&b1)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    for (args, want) in [
        (
            vec!["--group", "a", p(&a1), p(&gpio), "--group", "b", p(&b1)],
            ["mixes modes", "a1.json", "gpio.json"],
        ),
        (
            vec!["--group", "a", p(&a1), p(&ct), "--group", "b", p(&b1)],
            ["mixes sources", "a1.json", "ct_t2_h100.json"],
        ),
        (
            vec!["--group", "a", p(&a1), p(&a1), "--group", "b", p(&b1)],
            ["a run counts once", "a1.json", "a1.json"],
        ),
        (
            vec!["--group", "a", p(&a1), p(&a2), "--group", "b", p(&again)],
            ["a run counts once", "again.json", "a1.json"],
        ),
        (vec!["--group", "", p(&a1), "--group", "b", p(&b1)], ["has no name", "--group", "--group"]),
    ] {
        let o = run(&[&["compare"][..], &args].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", show(&o));
        let e = stderr(&o);
        assert_eq!(e.lines().filter(|l| l.starts_with("Error: ")).count(), 1, "{args:?}: {e}");
        for w in want {
            assert!(e.contains(w), "{args:?}: want {w:?} in {e}");
        }
    }
}
