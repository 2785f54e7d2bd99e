//! The tail fit against a reference implementation: scipy's
//! `genpareto.fit(data, floc=0)` fits the same excesses to within 1 % of
//! our shape and scale. scipy comes from PyPI (scripts/test installs it
//! into target/pyenv); without it the test fails under `CI` and otherwise
//! says that it skipped and why.

use std::path::{Path, PathBuf};
use std::process::Command;

use latprobe::analysis::tail::{fit, Excesses, GpdDraw, SplitMix};

/// `LATPROBE_PYTHON` (scripts/test sets it), else `target/pyenv`, else
/// the system's `python3`: the first that imports scipy.
fn python_with_scipy() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/pyenv/bin/python");
    let candidates =
        std::env::var_os("LATPROBE_PYTHON").map(PathBuf::from).into_iter().chain([venv, "python3".into()]);
    candidates.into_iter().find(|py| {
        Command::new(py).args(["-c", "import scipy.stats"]).output().is_ok_and(|o| o.status.success())
    })
}

#[test]
fn scipy_fits_the_same_excesses_to_within_one_percent() {
    let Some(py) = python_with_scipy() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must cross-check the tail fit with scipy: scripts/test installs it into target/pyenv"
        );
        eprintln!(
            "skipped: no Python with scipy (run scripts/test, which installs it into target/pyenv, or set \
             LATPROBE_PYTHON to a Python that has it)"
        );
        return;
    };
    let dir = tempfile::tempdir().expect("tmp");
    for (i, (xi, sigma)) in [(-0.2, 30_000.0), (0.1, 5_000.0), (0.35, 12_000.0)].into_iter().enumerate() {
        let mut rng = SplitMix(100 + i as u64);
        let y: Vec<f64> = (0..800).map(|_| rng.gpd(sigma, xi)).collect();
        let f = dir.path().join(format!("excesses-{i}.txt"));
        std::fs::write(&f, y.iter().map(|v| format!("{v:.6}\n")).collect::<String>()).expect("write");
        // Read back the file's own text, so both fit the same numbers.
        let y: Vec<f64> = std::fs::read_to_string(&f).unwrap().lines().map(|l| l.parse().unwrap()).collect();
        let ours = fit(&Excesses { y, c: vec![] }).expect("fits");
        let script = "import sys, numpy as np\nfrom scipy.stats import genpareto\n\
                      d = np.loadtxt(sys.argv[1])\nc, loc, s = genpareto.fit(d, floc=0)\nprint(c, s)\n";
        let o = Command::new(&py).args(["-c", script]).arg(&f).output().expect("python runs");
        assert!(o.status.success(), "scipy failed: {}", String::from_utf8_lossy(&o.stderr));
        let out = String::from_utf8_lossy(&o.stdout);
        let v: Vec<f64> = out.split_whitespace().map(|t| t.parse().unwrap()).collect();
        let (xi_s, sigma_s) = (v[0], v[1]);
        let dxi = (ours.xi - xi_s).abs() / xi_s.abs();
        let dsigma = (ours.sigma - sigma_s).abs() / sigma_s;
        eprintln!(
            "true ξ {xi} σ {sigma}: ours ξ {:.5} σ {:.2}, scipy ξ {xi_s:.5} σ {sigma_s:.2}: relative differences \
             {:.1e} and {:.1e}",
            ours.xi,
            ours.sigma,
            dxi,
            dsigma
        );
        assert!(dxi < 0.01 && dsigma < 0.01, "ours {ours:?}, scipy ξ {xi_s} σ {sigma_s}");
    }
}
