//! `latprobe report RUN.raw --samples FILE`: one row per sample, checked
//! against what the fake probe sent (not against latprobe's own analysis),
//! and the Parquet form read back by pyarrow.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use latprobe_protocol::Outcome;

const COUNT: u64 = 1280;
const INTERVAL_TICKS: u64 = 100_000; // 1 ms at the fake's 100 MHz
const TIMEOUT_NS: u64 = 300_000;

/// A run of the fake probe that sends batch 3 twice, loses batch 5 and puts
/// garbage before batch 7, whose 400 µs answers lie beyond the 300 µs
/// timeout, recorded to a raw file.
fn recorded(dir: &Path) -> PathBuf {
    let probe = FakeProbe::start(dir, FakeOpts { faults: true, ..FakeOpts::default() });
    let raw = dir.join("run.raw");
    let o = probe.run(&[
        "--count",
        &COUNT.to_string(),
        "--interval",
        "1ms",
        "--timeout",
        "300us",
        "--raw",
        p(&raw),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    raw
}

/// The rows the fake's stream must give, from the fake's own rule
/// ([`fake_outcome`]), in CSV form.
fn expected_rows() -> Vec<String> {
    let mut rows = Vec::new();
    for seq in 0..COUNT {
        if seq / BATCH == 5 {
            continue; // lost on the link: no row
        }
        let time = seq * INTERVAL_TICKS * 10;
        let row = match fake_outcome(seq) {
            Outcome::Response(t) if u64::from(t) * 10 <= TIMEOUT_NS => {
                format!("{seq},{time},{},0,,", u64::from(t) * 10)
            }
            _ => format!("{seq},{time},,1,{TIMEOUT_NS},"),
        };
        rows.push(row);
    }
    rows
}

/// The CSV's rows, the stimulus byte column cut off (checked apart), and
/// the last two, `triggered` and `instant`, too: 0 and `sent` on every row
/// (the run had no `--trigger-above`, and its probe never waited).
fn csv_rows(path: &Path) -> (String, Vec<String>, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_string();
    let (mut rows, mut bytes) = (Vec::new(), Vec::new());
    for l in lines {
        let (l, instant) = l.rsplit_once(',').unwrap();
        assert_eq!(instant, "sent", "{l}");
        let (l, triggered) = l.rsplit_once(',').unwrap();
        assert_eq!(triggered, "0", "{l}");
        let (row, byte) = l.rsplit_once(',').unwrap();
        rows.push(format!("{row},"));
        bytes.push(byte.to_string());
    }
    (header, rows, bytes)
}

#[test]
fn every_sample_is_one_row_duplicates_once_lost_none_late_answers_censored() {
    let dir = tmp();
    let raw = recorded(dir.path());
    let csv = dir.path().join("s.csv");
    let rep = dir.path().join("r.json");
    let o = run(&["report", p(&raw), "--samples", p(&csv), "-o", p(&rep)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json(&rep);
    let n = r["counts"]["samples"].as_u64().unwrap();
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!("wrote {} ({n} samples)", csv.display())),
        "{}",
        show(&o)
    );
    let (header, rows, bytes) = csv_rows(&csv);
    assert_eq!(header, "seq,time_ns,latency_ns,censored,bound_ns,stimulus_byte,triggered,instant");
    assert_eq!(rows.len() as u64, n, "one row per sample of the report");
    let mut sorted = rows.clone();
    sorted.sort_by_key(|r| r.split(',').next().unwrap().parse::<u64>().unwrap());
    assert_eq!(sorted, expected_rows());
    // The fake's run confirms whatever stimulus latprobe asked for: the
    // byte column names it the same on every row of a fixed byte, or the
    // identity of each sequence number.
    let stim = r["config"]["stimulus"].as_str().unwrap();
    for (row, b) in rows.iter().zip(&bytes) {
        let seq: u64 = row.split(',').next().unwrap().parse().unwrap();
        if stim.starts_with("identified") {
            assert_eq!(b, &latprobe_protocol::identity_byte(seq).to_string(), "{row}");
        } else {
            assert!(!b.is_empty() || stim.starts_with("edge"), "{stim}: {row},{b}");
        }
    }
}

#[test]
fn samples_need_a_raw_file_and_a_file_path() {
    let dir = tmp();
    let raw = recorded(dir.path());
    let rep = dir.path().join("r.json");
    let o = run(&["report", p(&raw), "-o", p(&rep)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let o = run(&["report", p(&rep), "--samples", p(&dir.path().join("s.csv"))]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--samples needs the raw file of the run"),
        "{}",
        show(&o)
    );
    let o = run(&["report", p(&raw), "--samples", p(dir.path())]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is a directory"), "{}", show(&o));
    // Nothing half-written is left behind.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(!left.iter().any(|n| n.to_string_lossy().ends_with(".part")), "{left:?}");
}

/// The Python with pyarrow and pandas: `LATPROBE_PYTHON` (scripts/test sets
/// it up), else `target/pyenv`.
#[cfg(feature = "parquet")]
fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LATPROBE_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/pyenv/bin/python");
    venv.exists().then_some(venv)
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_read_back_by_pyarrow_equals_the_csv_and_the_report() {
    let Some(py) = python() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must check the Parquet export with pyarrow: scripts/test sets LATPROBE_PYTHON"
        );
        eprintln!(
            "skipped: no Python with pyarrow (set LATPROBE_PYTHON, or run scripts/test, which makes target/pyenv)"
        );
        return;
    };
    let dir = tmp();
    let raw = recorded(dir.path());
    let (csv, pq, rep) = (dir.path().join("s.csv"), dir.path().join("s.parquet"), dir.path().join("r.json"));
    for out in [&csv, &pq] {
        let o = run(&["report", p(&raw), "--samples", p(out), "-o", p(&rep)]);
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    }
    let script = r#"
import json, sys
import pandas as pd, pyarrow.parquet as pq
pqf, csvf, repf = sys.argv[1:4]
t = pq.read_table(pqf)
meta = {k.decode(): v.decode() for k, v in t.schema.metadata.items()}
a = t.to_pandas()
c = pd.read_csv(csvf)
r = json.load(open(repf))
assert list(a.columns) == list(c.columns), (a.columns, c.columns)
assert (a.instant == c.instant).all() and set(a.instant) <= {'sent', 'late', 'omitted'}
for col in (c for c in a.columns if c != 'instant'):
    x, y = a[col], c[col]
    assert x.isna().equals(y.isna()), col
    assert (x[x.notna()].astype('int64').values == y[y.notna()].astype('int64').values).all(), col
assert len(a) == r['counts']['samples'], (len(a), r['counts'])
assert int(a.censored.sum()) == r['counts']['timeouts']
m = a[~a.censored].latency_ns
l = r['latency_ns']
assert int(m.min()) == l['min'] and int(m.max()) == l['max_measured'], (m.min(), m.max(), l)
assert abs(m.mean() - l['mean']) <= 1, (m.mean(), l['mean'])
assert (a[a.censored].bound_ns == l['censored_above']).all()
assert meta['latprobe.samples'] == str(len(a)) and meta['latprobe.timeout_ns'] == str(r['config']['timeout_ns']), meta
print('rows', len(a), 'censored', int(a.censored.sum()), 'columns', ','.join(a.columns))
"#;
    let o = std::process::Command::new(&py).args(["-c", script, p(&pq), p(&csv), p(&rep)]).output().unwrap();
    assert!(o.status.success(), "{}", show(&o));
    eprintln!("{}", String::from_utf8_lossy(&o.stdout));
}

#[cfg(not(feature = "parquet"))]
#[test]
fn without_the_parquet_feature_a_parquet_name_says_to_give_csv() {
    let dir = tmp();
    let raw = recorded(dir.path());
    let o = run(&["report", p(&raw), "--samples", p(&dir.path().join("s.parquet"))]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("give a .csv file"), "{}", show(&o));
}

/// issue 43 (4): `--samples` renamed a temporary file over its path. A
/// FIFO became a regular file (its reader got nothing), a symbolic link was
/// replaced, a device node renamed over. Now it follows the output rules of
/// every other output: a pipe or a device is written to, a link followed.
#[test]
fn samples_to_a_fifo_a_symlink_or_a_device_write_through_them() {
    use std::os::unix::fs::FileTypeExt as _;
    let dir = tmp();
    let raw = recorded(dir.path());
    let plain = dir.path().join("plain.csv");
    let o = run(&["report", p(&raw), "--samples", p(&plain)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let want = std::fs::read_to_string(&plain).unwrap();
    assert!(want.lines().count() > 1000, "{want:.200}");

    // A FIFO: its reader gets every row, and it stays a FIFO.
    let fifo = dir.path().join("pipe.csv");
    let c = std::ffi::CString::new(p(&fifo)).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (tx, rx) = std::sync::mpsc::channel();
    let f2 = fifo.clone();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::read_to_string(&f2).unwrap_or_default());
    });
    let o = run_within(&["report", p(&raw), "--samples", p(&fifo)], std::time::Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");
    let got = rx.recv_timeout(std::time::Duration::from_secs(10)).expect("the FIFO's reader got nothing");
    assert_eq!(got, want);

    // A symbolic link (to a file not there yet): followed, and it stays.
    let link = dir.path().join("link.csv");
    std::os::unix::fs::symlink("real.csv", &link).unwrap();
    let o = run(&["report", p(&raw), "--samples", p(&link)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    assert_eq!(std::fs::read_to_string(dir.path().join("real.csv")).unwrap(), want);

    // A device node (a private /dev/null, never the system's): written
    // through, not renamed over. Needs root for mknod.
    let dev = dir.path().join("null.csv");
    let c = std::ffi::CString::new(p(&dev)).unwrap();
    // SAFETY: a valid NUL-terminated path; makedev of the null device.
    if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } == 0 {
        let o = run(&["report", p(&raw), "--samples", p(&dev)]);
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        assert!(
            std::fs::symlink_metadata(&dev).unwrap().file_type().is_char_device(),
            "the device was replaced"
        );
    } else {
        eprintln!("device case skipped: mknod needs root");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(!left.iter().any(|n| n.to_string_lossy().starts_with('.')), "temporary files left: {left:?}");
}

/// issue 43 (4): on a full disk `--samples` stopped `report` before `-o`
/// and `--histfile`, which would fit: they were neither written nor named.
/// Now they are written, and the export that failed is named (exit 1).
#[test]
fn a_full_disk_for_samples_still_writes_the_other_outputs_and_names_it() {
    use std::os::unix::process::CommandExt as _;
    let dir = tmp();
    // A run long enough that its export (about 28 bytes a row) outgrows its report.
    let probe = FakeProbe::start(dir.path(), FakeOpts::default());
    let raw = dir.path().join("long.raw");
    let o = probe.run(&["--count", "10000", "--interval", "100us", "--raw", p(&raw)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let (json, hist, rows) = (dir.path().join("r.json"), dir.path().join("r.hist"), dir.path().join("s.csv"));
    let o = run(&["report", p(&raw), "-o", p(&json), "--histfile", p(&hist), "--samples", p(&rows)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let size = |f: &Path| std::fs::metadata(f).unwrap().len();
    let fits = size(&json).max(size(&hist)) + 1;
    assert!(size(&rows) > fits, "the export must be the largest: {} vs {fits}", size(&rows));
    let want_counts = common::json(&json)["counts"].clone();
    for f in [&json, &hist, &rows] {
        std::fs::remove_file(f).unwrap();
    }
    // A file-size limit between them: the export fails (EFBIG), the others fit.
    let mut cmd = latprobe();
    cmd.args(["report", p(&raw), "--samples", p(&rows), "-o", p(&json), "--histfile", p(&hist)]);
    // SAFETY: setrlimit is async-signal-safe; it touches only the child.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit { rlim_cur: fits, rlim_max: fits };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--samples") && err.contains(p(&rows)), "the export is not named: {err}");
    assert!(json.is_file(), "-o was not written: {err}");
    assert_eq!(common::json(&json)["counts"], want_counts);
    assert!(hist.is_file(), "--histfile was not written: {err}");
    assert!(!rows.exists(), "a cut export was left at its path");
}

/// issue 43: `report missing.raw --samples x` said the file "is not one"
/// (a raw file) when it is not there at all.
#[test]
fn a_missing_file_with_samples_is_said_to_be_missing() {
    let dir = tmp();
    let missing = dir.path().join("missing.raw");
    let o = run(&["report", p(&missing), "--samples", p(&dir.path().join("x.csv"))]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("{}: no such file", p(&missing))), "{err}");
    assert!(!err.contains("is not one"), "{err}");
}
