//! LAVA results of a run: `lava-test-case` command lines for a LAVA test
//! shell (`latprobe ... --lava | sh`, or `eval`), one per limit, one per
//! headline figure and one for the run.
//!
//! ```text
//! lava-test-case latprobe-run --result pass
//! lava-test-case latprobe-limit-max --result fail
//! lava-test-case latprobe-limit-p50 --result fail --measurement 84.5 --units us
//! lava-test-case latprobe-limit-p90 --result pass --measurement 144.5 --units us
//! lava-test-case latprobe-limit-p99.9 --result fail
//! lava-test-case latprobe-limit-timeouts --result fail --measurement 10 --units samples
//! lava-test-case latprobe-limit-lost --result pass --measurement 0 --units samples
//! lava-test-case latprobe-limit-late --result fail --measurement 10 --units answers
//! lava-test-case latprobe-samples --result pass --measurement 300 --units samples
//! lava-test-case latprobe-timeouts --result pass --measurement 10 --units samples
//! lava-test-case latprobe-lost --result pass --measurement 0 --units samples
//! lava-test-case latprobe-p50 --result pass --measurement 84.5 --units us
//! lava-test-case latprobe-p99 --result unknown
//! lava-test-case latprobe-p99.9 --result unknown
//! lava-test-case latprobe-max --result unknown
//! ```
//!
//! (300 samples, 10 of them timeouts above 8 ms, judged against `--max
//! 200us --percentile 50=50us --percentile 90=150us --percentile
//! 99.9=100us --max-timeouts 0 --max-lost 0 --max-late 5`: max and p99.9
//! fall among the timeouts.)
//!
//! # What LAVA accepts
//!
//! LAVA's helper (`lava_dispatcher/lava_test_shell/lava-test-case` in
//! <https://github.com/Linaro/lava>) takes the test case id as its first
//! argument, then only the pairs `--result R`, `--units U` and
//! `--measurement M` (any other argument prints its usage and exits 1;
//! `--result` is required). It writes the id into a directory name
//! (`$LAVA_RESULT_DIR/results/$TEST_CASE_ID`) and prints the values
//! unquoted in a signal, `<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=id RESULT=r
//! UNITS=u MEASUREMENT=m>`, which the dispatcher
//! (`lava_dispatcher/actions/test/shell.py`) matches with
//! `<LAVA_SIGNAL_(\S+) ([^>]+)>`, splits on whitespace, and splits each
//! part on `=` into exactly two pieces. A result is `pass`, `fail`,
//! `skip` or `unknown`; a measurement must parse as a decimal number; the
//! documentation asks for test case names without spaces; the id must be
//! unique within the test run (a duplicate is a job error).
//!
//! So every word here is made of `A-Z a-z 0-9 . _ -` only: no whitespace,
//! `=`, `>`, `/`, quote, glob or other shell character, and nothing needs
//! quoting. Limit names are mapped into that alphabet (`_` for anything
//! else, a `-2` suffix on a repeat).
//!
//! # What each case says
//!
//! - `latprobe-run`: `pass` when the run completed as asked without an
//!   error, else `fail` (interrupted, failed, a replay cut short).
//! - `latprobe-limit-NAME` (`max`, `p99.9`, `timeouts`, `lost`, `late`):
//!   the verdict, with the measured figure in µs (`--units us`) or as a
//!   count (`samples`, or `answers` for late answers). A figure that a
//!   JSON report bounds to a 1 µs bin is given as the bin's upper end,
//!   never below the true figure.
//! - `latprobe-samples`, `latprobe-timeouts`, `latprobe-lost` (counts, in
//!   `samples`) and `latprobe-p50`, `latprobe-p99`, `latprobe-p99.9`,
//!   `latprobe-max` (µs): `pass` with the figure; these cases record, they
//!   do not judge (the limits do).
//! - **A censored figure has no number.** A latency that falls among the
//!   timeouts is only known to exceed the timeout (the book's concepts/identity-and-censoring.md, "The tail is
//!   measured, never cut off"), and a measurement would chart the timeout as if it
//!   were the latency. Its limit case is `--result fail` (it cannot be
//!   proven within any limit) and its headline case `--result unknown`,
//!   both without `--measurement`; so is a headline figure of a run
//!   without samples. The timeout itself is `latprobe-timeouts`' count and
//!   the JSON report's `censored_above`.

use std::collections::HashSet;

use super::Report;
use crate::analysis::Figure;
use crate::model::{LimitUnit, Measured, Verdict};
use crate::units::decimal;

/// The one command every line runs.
pub const HELPER: &str = "lava-test-case";

/// The `lava-test-case` lines of `r`, in order: the run, each limit, the
/// headline figures.
pub fn lines(r: &Report) -> Vec<String> {
    cases(r).iter().map(Case::line).collect()
}

/// A LAVA result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Pass,
    Fail,
    Unknown,
}

impl Outcome {
    fn word(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Unknown => "unknown",
        }
    }
}

/// One `lava-test-case` call.
#[derive(Debug, Clone)]
struct Case {
    name: String,
    result: Outcome,
    /// The figure and its units.
    measurement: Option<(String, &'static str)>,
}

impl Case {
    fn line(&self) -> String {
        let mut s = format!("{HELPER} {} --result {}", self.name, self.result.word());
        if let Some((m, units)) = &self.measurement {
            s.push_str(&format!(" --measurement {m} --units {units}"));
        }
        debug_assert!(s.chars().all(|c| c == ' ' || safe(c)), "unsafe LAVA line: {s}");
        s
    }
}

/// The characters a word of a line may hold.
fn safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// µs with up to three decimals.
fn us(ns: u64) -> String {
    decimal(ns, 1000, 3)
}

fn cases(r: &Report) -> Vec<Case> {
    let mut v = Vec::new();
    let ok = r.complete && r.error.is_none();
    v.push(Case {
        name: "latprobe-run".into(),
        result: if ok { Outcome::Pass } else { Outcome::Fail },
        measurement: None,
    });
    let mut used: HashSet<String> = v.iter().map(|c| c.name.clone()).collect();
    for verdict in &r.verdicts {
        let base: String = format!("latprobe-limit-{}", verdict.name)
            .chars()
            .map(|c| if safe(c) { c } else { '_' })
            .collect();
        let mut name = base.clone();
        let mut n = 1;
        while !used.insert(name.clone()) {
            n += 1;
            name = format!("{base}-{n}");
        }
        v.push(limit_case(name, verdict));
    }
    let c = &r.counts;
    for (name, count) in [("samples", c.samples), ("timeouts", c.timeouts), ("lost", c.lost)] {
        v.push(Case {
            name: format!("latprobe-{name}"),
            result: Outcome::Pass,
            measurement: Some((count.to_string(), "samples")),
        });
    }
    for name in ["p50", "p99", "p99.9", "max"] {
        let q = r.latency_ns.as_ref().map_or(Figure::None, |l| {
            l.figure(match name {
                "p50" => l.p50,
                "p99" => l.p99,
                "p99.9" => l.p99_9,
                _ => l.max,
            })
        });
        v.push(match q {
            Figure::Value(x) => Case {
                name: format!("latprobe-{name}"),
                result: Outcome::Pass,
                measurement: Some((us(x), "us")),
            },
            Figure::Above(_) | Figure::None => {
                Case { name: format!("latprobe-{name}"), result: Outcome::Unknown, measurement: None }
            }
        });
    }
    v
}

fn limit_case(name: String, v: &Verdict) -> Case {
    let figure = match v.measured {
        Measured::Value { value } => Some(value),
        // The bin's upper end: never below the true figure.
        Measured::Between { high, .. } => Some(high),
        // Censored or absent: no number (module doc).
        Measured::Above { .. } | Measured::Nothing => None,
    };
    let measurement = figure.map(|x| match v.unit {
        LimitUnit::Ns => (us(x), "us"),
        LimitUnit::Count => (x.to_string(), if v.name == "late" { "answers" } else { "samples" }),
        LimitUnit::ProbabilityE12 => (format!("{:e}", x as f64 / 1e12), "per-hour"),
    });
    Case { name, result: if v.pass { Outcome::Pass } else { Outcome::Fail }, measurement }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testkit::{failed, interrupted, judged, run, MET, VIOLATED};
    use std::collections::BTreeMap;

    /// What LAVA records of one `lava-test-case` call.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Recorded {
        id: String,
        result: String,
        measurement: Option<String>,
        units: Option<String>,
    }

    /// The arguments of a call, the way LAVA's helper reads them
    /// (`lava_dispatcher/lava_test_shell/lava-test-case`, Linaro/lava
    /// commit 6262809b2bf64901295fd5261c7049bd6a288f1f): the id is `$1`
    /// and must not be empty; then only `--result`, `--units` and
    /// `--measurement`, each followed by its value (anything else is a
    /// usage error); `--result` is required.
    fn helper(argv: &[String]) -> Result<Recorded, String> {
        let (id, mut rest) = match argv {
            [id, rest @ ..] if !id.is_empty() => (id.clone(), rest),
            _ => return Err("usage: no TEST_CASE_ID".into()),
        };
        if rest.first().map(String::as_str) == Some("--shell") {
            return Err("--shell runs a command: not what latprobe writes".into());
        }
        let (mut result, mut units, mut measurement) = (None, None, None);
        while let [flag, tail @ ..] = rest {
            let value = tail.first().cloned();
            match flag.as_str() {
                "--result" => result = value,
                "--units" => units = value,
                "--measurement" => measurement = value,
                other => return Err(format!("usage: unknown argument {other}")),
            }
            rest = tail.get(1..).unwrap_or(&[]);
        }
        let result = result.ok_or("--result must be specified")?;
        Ok(Recorded { id, result, measurement, units })
    }

    /// The signal the helper prints for `rec`, parsed the way the
    /// dispatcher parses it (`lava_dispatcher/actions/test/shell.py`:
    /// `<LAVA_SIGNAL_(\S+) ([^>]+)>`, whitespace split, each part split on
    /// `=` into exactly two), with the checks LAVA applies to its values
    /// (a result in pass/fail/skip/unknown, a decimal measurement).
    fn dispatcher(rec: &Recorded) -> Result<BTreeMap<String, String>, String> {
        let mut data = format!("TEST_CASE_ID={} RESULT={}", rec.id, rec.result);
        if let Some(u) = &rec.units {
            data.push_str(&format!(" UNITS={u}"));
        }
        if let Some(m) = &rec.measurement {
            data.push_str(&format!(" MEASUREMENT={m}"));
        }
        let signal = format!("<LAVA_SIGNAL_TESTCASE {data}>");
        let inner = signal.strip_prefix("<LAVA_SIGNAL_").and_then(|s| s.strip_suffix('>')).unwrap();
        let (name, params) = inner.split_once(' ').ok_or("no params")?;
        if name != "TESTCASE" || params.contains('>') || params.is_empty() {
            return Err(format!("the signal does not match: {signal}"));
        }
        let mut out = BTreeMap::new();
        for p in params.split_whitespace() {
            let parts: Vec<&str> = p.split('=').collect();
            let [k, v] = parts[..] else { return Err(format!("malformed parameter {p}")) };
            out.insert(k.to_lowercase(), v.to_owned());
        }
        if !["pass", "fail", "skip", "unknown"].contains(&out["result"].as_str()) {
            return Err(format!("bad result {}", out["result"]));
        }
        if let Some(m) = out.get("measurement") {
            let (int, frac) = m.split_once('.').unwrap_or((m, "0"));
            let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
            if !(digits(int) && digits(frac)) {
                return Err(format!("measurement {m} is not a plain decimal"));
            }
        }
        // A directory name under $LAVA_RESULT_DIR/results/.
        if rec.id.contains('/') || rec.id == "." || rec.id == ".." {
            return Err(format!("id {} is not a directory name", rec.id));
        }
        Ok(out)
    }

    /// Every line through the helper and the dispatcher; the ids unique.
    fn recorded(lines: &[String]) -> Vec<Recorded> {
        let mut ids = HashSet::new();
        lines
            .iter()
            .map(|l| {
                assert!(l.chars().all(|c| c == ' ' || safe(c)), "a character needs quoting in {l:?}");
                let words: Vec<String> = l.split(' ').map(str::to_owned).collect();
                assert_eq!(words[0], HELPER);
                let rec = helper(&words[1..]).unwrap_or_else(|e| panic!("{l}: {e}"));
                dispatcher(&rec).unwrap_or_else(|e| panic!("{l}: {e}"));
                assert!(ids.insert(rec.id.clone()), "duplicate id {}", rec.id);
                rec
            })
            .collect()
    }

    fn case<'a>(recs: &'a [Recorded], id: &str) -> &'a Recorded {
        recs.iter().find(|r| r.id == id).unwrap_or_else(|| panic!("no case {id} in {recs:#?}"))
    }

    fn is(rec: &Recorded, result: &str, measurement: Option<&str>, units: Option<&str>) {
        assert_eq!(
            (rec.result.as_str(), rec.measurement.as_deref(), rec.units.as_deref()),
            (result, measurement, units),
            "{}",
            rec.id
        );
    }

    #[test]
    fn a_passing_run_records_its_limits_and_figures() {
        let recs = recorded(&lines(&judged(run(0), MET)));
        let ids: Vec<&str> = recs.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "latprobe-run",
                "latprobe-limit-max",
                "latprobe-limit-p99",
                "latprobe-limit-p99.9",
                "latprobe-limit-timeouts",
                "latprobe-limit-lost",
                "latprobe-limit-late",
                "latprobe-samples",
                "latprobe-timeouts",
                "latprobe-lost",
                "latprobe-p50",
                "latprobe-p99",
                "latprobe-p99.9",
                "latprobe-max",
            ]
        );
        is(case(&recs, "latprobe-run"), "pass", None, None);
        is(case(&recs, "latprobe-limit-max"), "pass", Some("159.5"), Some("us"));
        is(case(&recs, "latprobe-limit-p99"), "pass", Some("158"), Some("us"));
        is(case(&recs, "latprobe-limit-late"), "pass", Some("0"), Some("answers"));
        is(case(&recs, "latprobe-samples"), "pass", Some("300"), Some("samples"));
        is(case(&recs, "latprobe-timeouts"), "pass", Some("0"), Some("samples"));
        is(case(&recs, "latprobe-p50"), "pass", Some("84.5"), Some("us"));
        is(case(&recs, "latprobe-p99.9"), "pass", Some("159.5"), Some("us"));
        is(case(&recs, "latprobe-max"), "pass", Some("159.5"), Some("us"));
    }

    #[test]
    fn the_module_doc_shows_what_it_writes() {
        let doc: Vec<&str> = include_str!("lava.rs")
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .filter_map(|l| l.strip_prefix("//! "))
            .filter(|l| l.starts_with(HELPER))
            .collect();
        assert_eq!(lines(&judged(run(10), VIOLATED)), doc);
    }

    #[test]
    fn violated_and_censored_figures_fail_or_are_unknown_without_a_number() {
        let recs = recorded(&lines(&judged(run(10), VIOLATED)));
        is(case(&recs, "latprobe-run"), "pass", None, None);
        // Censored: above the 8 ms timeout, no measurement.
        is(case(&recs, "latprobe-limit-max"), "fail", None, None);
        is(case(&recs, "latprobe-limit-p99.9"), "fail", None, None);
        // Measured, over and under.
        is(case(&recs, "latprobe-limit-p50"), "fail", Some("84.5"), Some("us"));
        is(case(&recs, "latprobe-limit-p90"), "pass", Some("144.5"), Some("us"));
        is(case(&recs, "latprobe-limit-timeouts"), "fail", Some("10"), Some("samples"));
        is(case(&recs, "latprobe-limit-lost"), "pass", Some("0"), Some("samples"));
        is(case(&recs, "latprobe-limit-late"), "fail", Some("10"), Some("answers"));
        is(case(&recs, "latprobe-timeouts"), "pass", Some("10"), Some("samples"));
        is(case(&recs, "latprobe-p50"), "pass", Some("84.5"), Some("us"));
        for id in ["latprobe-p99", "latprobe-p99.9", "latprobe-max"] {
            is(case(&recs, id), "unknown", None, None);
        }
        // No number anywhere is the timeout passed off as a latency.
        assert!(recs.iter().all(|r| r.measurement.as_deref() != Some("8000")), "{recs:#?}");
    }

    #[test]
    fn a_binned_percentile_is_given_as_its_bins_upper_end() {
        // p95 of a JSON report: not a stored figure, bounded by 1 µs bins.
        let r = judged(run(0), "[percentile]\n\"95\" = \"200us\"");
        assert!(matches!(r.verdicts[0].measured, Measured::Between { .. }), "{:?}", r.verdicts[0]);
        let Measured::Between { high, .. } = r.verdicts[0].measured else { unreachable!() };
        let recs = recorded(&lines(&r));
        is(case(&recs, "latprobe-limit-p95"), "pass", Some(us(high).as_str()), Some("us"));
    }

    #[test]
    fn the_run_case_fails_unless_the_run_completed() {
        for r in [interrupted(), failed()] {
            let recs = recorded(&lines(&r));
            is(case(&recs, "latprobe-run"), "fail", None, None);
        }
        // No sample at all: every latency unknown, counts 0.
        let mut r = failed();
        r.latency_ns = None;
        r.counts = crate::report::Counts::default();
        let recs = recorded(&lines(&judged(r, MET)));
        is(case(&recs, "latprobe-limit-max"), "fail", None, None);
        is(case(&recs, "latprobe-samples"), "pass", Some("0"), Some("samples"));
        for id in ["latprobe-p50", "latprobe-p99", "latprobe-p99.9", "latprobe-max"] {
            is(case(&recs, id), "unknown", None, None);
        }
    }

    #[test]
    fn odd_limit_names_are_made_safe_and_unique() {
        let mut r = judged(run(0), MET);
        let mut evil = r.verdicts[0].clone();
        evil.name = "p99 $(touch /tmp/x); `id` >out \"q\" 'q' *?[a] =x /".into();
        r.verdicts.push(evil.clone());
        r.verdicts.push(evil);
        r.verdicts.push(r.verdicts[0].clone());
        let recs = recorded(&lines(&r));
        let odd = "latprobe-limit-p99___touch__tmp_x____id___out__q___q_____a___x__";
        assert!(recs.iter().any(|c| c.id == odd), "{recs:#?}");
        assert!(recs.iter().any(|c| c.id == format!("{odd}-2")), "{recs:#?}");
        assert!(recs.iter().any(|c| c.id == "latprobe-limit-max-2"), "{recs:#?}");
    }

    /// The lines run by a real `sh`, piped in and through `eval`, with a
    /// stub `lava-test-case` first on PATH that records its arguments one
    /// per line: the shell must hand it exactly the words of each line.
    #[test]
    fn a_real_shell_passes_each_word_unchanged() {
        use std::os::unix::fs::PermissionsExt as _;
        use std::process::{Command, Stdio};

        let r = judged(run(10), VIOLATED);
        let lines = lines(&r);
        let dir = tempfile::tempdir().unwrap();
        let stub = dir.path().join(HELPER);
        std::fs::write(
            &stub,
            "#!/bin/sh\n# latprobe test stub: one line per call, its arguments separated by a tab.\n\
             out=\"\"\nfor a in \"$@\"; do out=\"$out$a\t\"; done\nprintf '%s\\n' \"$out\" >> \"$STUB_LOG\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("{}:{}", dir.path().display(), std::env::var("PATH").unwrap_or_default());
        let script = lines.join("\n") + "\n";
        let script_file = dir.path().join("lava.sh");
        std::fs::write(&script_file, &script).unwrap();
        // A file that a glob or a stray redirection would touch.
        std::fs::write(dir.path().join("out"), "").unwrap();

        for how in ["pipe", "eval"] {
            let log = dir.path().join(format!("{how}.log"));
            let mut cmd = Command::new("sh");
            match how {
                "pipe" => cmd.arg("-s").stdin(Stdio::piped()),
                _ => cmd
                    .arg("-c")
                    .arg("eval \"$(cat \"$1\")\"")
                    .arg("sh")
                    .arg(&script_file)
                    .stdin(Stdio::null()),
            };
            let mut child = cmd
                .current_dir(dir.path())
                .env("PATH", &path)
                .env("STUB_LOG", &log)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("sh runs");
            if how == "pipe" {
                use std::io::Write as _;
                child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
            }
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{how}: {}", String::from_utf8_lossy(&out.stderr));
            let got: Vec<Vec<String>> = std::fs::read_to_string(&log)
                .unwrap()
                .lines()
                .map(|l| l.strip_suffix('\t').unwrap_or(l).split('\t').map(str::to_owned).collect())
                .collect();
            let want: Vec<Vec<String>> =
                lines.iter().map(|l| l.split(' ').skip(1).map(str::to_owned).collect()).collect();
            assert_eq!(got, want, "{how}");
            for argv in &got {
                let rec = helper(argv).unwrap();
                dispatcher(&rec).unwrap();
            }
        }
        assert_eq!(std::fs::read_to_string(dir.path().join("out")).unwrap(), "");
    }
}
