//! Records the git commit latprobe is built from, for `latprobe --version`:
//! `git rev-parse --short HEAD`, with `-dirty` when tracked files differ
//! from it. Outside a git checkout (a crate tarball, no git installed) the
//! commit is `unknown`: this script never fails the build.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git").args(args).output().ok()?;
    if !o.status.success() {
        return None;
    }
    Some(String::from_utf8(o.stdout).ok()?.trim().to_string())
}

fn main() {
    // The package's own sources are watched as cargo would without this
    // script; the git files below make a commit or a checkout re-run it.
    for p in ["build.rs", "Cargo.toml", "src"] {
        println!("cargo:rerun-if-changed={p}");
    }
    let commit = match git(&["rev-parse", "--short", "HEAD"]) {
        Some(head) if !head.is_empty() => {
            // `git diff --quiet` exits 1 when tracked files differ.
            let dirty = Command::new("git")
                .args(["diff", "--quiet", "HEAD", "--"])
                .status()
                .is_ok_and(|s| s.code() == Some(1));
            if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
                let dir = PathBuf::from(dir);
                for f in ["HEAD", "index"].map(|f| dir.join(f)).iter().filter(|f| f.exists()) {
                    println!("cargo:rerun-if-changed={}", f.display());
                }
                // A branch's ref moves on a commit; a worktree keeps its
                // refs in the common directory.
                if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
                    let common = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
                        .map_or_else(|| dir.clone(), PathBuf::from);
                    // A ref that is only in packed-refs has no file of its
                    // own: watching a missing file would re-run every build.
                    let watched = [common.join(&r), common.join("packed-refs")];
                    for f in watched.iter().filter(|f| f.exists()) {
                        println!("cargo:rerun-if-changed={}", f.display());
                    }
                }
            }
            if dirty {
                format!("{head}-dirty")
            } else {
                head
            }
        }
        _ => "unknown".to_string(),
    };
    println!("cargo:rustc-env=LATPROBE_GIT_COMMIT={commit}");
}
