//! The JSON report (`--output FILE.json`); its schema is documented in
//! [`super`]. Version 1 reports are read too, converted to version 2.

use std::path::Path;

use serde_json::{json, Map, Value};

use super::{Report, SCHEMA_VERSION};
use crate::analysis::rank;
use crate::units::format_ns;
use crate::Error;

/// `r` as pretty JSON.
pub fn to_string(r: &Report) -> String {
    // Serialising plain structs of numbers and strings cannot fail.
    serde_json::to_string_pretty(r).unwrap_or_default() + "\n"
}

/// Write `r` to `path`.
pub fn write(r: &Report, path: &Path) -> Result<(), Error> {
    crate::fsout::write(path, to_string(r).as_bytes())
        .map_err(|e| Error::io(format!("cannot write the report {} (--output)", path.display()), e))
}

/// The largest JSON document latprobe reads (`latprobe report /dev/zero`
/// must not exhaust memory): the cap of every input read whole.
pub const MAX_REPORT_BYTES: u64 = crate::input::MAX_INPUT_BYTES;

/// The text of `path`, if it is at most [`MAX_REPORT_BYTES`] of UTF-8.
/// Every failure is a usage error naming the file (exit 2): an input that
/// cannot be read is the user's to change, whatever is wrong with it.
pub fn read_text(path: &Path) -> Result<String, Error> {
    use crate::input::ReadError;
    let fail = |what: String| Error::Input(format!("{}: {what}", path.display()));
    let bytes = crate::input::read_capped(path).map_err(|e| match e {
        ReadError::Io(e) => fail(format!("cannot read it: {e}")),
        ReadError::TooLong => fail(format!(
            "longer than {}: neither a latprobe raw file nor a JSON report",
            crate::input::cap_text()
        )),
    })?;
    String::from_utf8(bytes)
        .map_err(|_| fail("neither a latprobe raw file nor a JSON report (it is not UTF-8 text)".into()))
}

/// Read a report written by [`write()`], or by a latprobe of schema
/// version 1 (converted by [`upgrade_v1`]). The file's size and the sizes
/// it claims are bounded.
pub fn read(path: &Path) -> Result<Report, Error> {
    let text = read_text(path)?;
    let mut value: Value = serde_json::from_str(&text).map_err(|e| {
        Error::Input(format!("{} is neither a latprobe raw file nor a JSON report: {e}", path.display()))
    })?;
    let not_a_report = |e: String| Error::Input(format!("{} is not a latprobe report: {e}", path.display()));
    match value.get("schema_version").and_then(Value::as_u64) {
        Some(v) if v == u64::from(SCHEMA_VERSION) => {}
        Some(1) => upgrade_v1(&mut value).map_err(not_a_report)?,
        _ => {
            return Err(Error::Input(format!(
                "{} has schema_version {}, this latprobe reads versions 1 and {SCHEMA_VERSION}",
                path.display(),
                describe_version(value.get("schema_version"))
            )))
        }
    }
    let r: Report = serde_json::from_value(value).map_err(|e| not_a_report(e.to_string()))?;
    // Rendering allocates a bin per µs of the range: a damaged or crafted
    // range must not ask for gigabytes.
    if r.histogram.max_us > crate::rawfile::MAX_HISTFILE_US {
        return Err(not_a_report(format!(
            "its histogram.max_us {} is beyond the {} us latprobe writes",
            r.histogram.max_us,
            crate::rawfile::MAX_HISTFILE_US
        )));
    }
    // Every plot and limit reads the bins: 1 µs wide, inside the range.
    if r.histogram.bin_ns != 1000 {
        return Err(not_a_report(format!(
            "its histogram.bin_ns is {}, latprobe writes 1000",
            r.histogram.bin_ns
        )));
    }
    if let Some([start, _]) = r.histogram.bins.iter().find(|b| b[0] >= u64::from(r.histogram.max_us)) {
        return Err(not_a_report(format!(
            "its histogram has a bin at {start} us, beyond its range max_us {}",
            r.histogram.max_us
        )));
    }
    // The bins hold measured samples: more than the report's samples (or
    // more than a u64, which would wrap the histfile's `# Total:`) is damage.
    let in_bins = r.histogram.bins.iter().try_fold(0u64, |a, b| a.checked_add(b[1]));
    if in_bins.is_none_or(|n| n > r.counts.samples) {
        return Err(not_a_report(format!(
            "its histogram bins hold {} samples, more than its {} samples",
            in_bins.map_or_else(|| "over 2^64".to_string(), |n| n.to_string()),
            r.counts.samples
        )));
    }
    if let Some(t) = &r.timeline {
        let n = t.samples.len();
        if t.row_s == 0 || t.timeouts.len() != n || t.max_ns.len() != n || t.p99_ns.len() != n {
            return Err(not_a_report(
                "its timeline's columns differ in length or its row_s is 0".to_string(),
            ));
        }
        // A row spans a power of two seconds; 2^32 s is past any run (and
        // a larger one would print as seconds no clock reaches).
        if !t.row_s.is_power_of_two() || t.row_s > 1 << 32 {
            return Err(not_a_report(format!(
                "its timeline's row_s is {}, not the power of two seconds up to 2^32 latprobe writes",
                t.row_s
            )));
        }
        if n > crate::analysis::timeline::MAX_ROWS {
            return Err(not_a_report(format!(
                "its timeline has {n} rows, beyond the {} latprobe writes",
                crate::analysis::timeline::MAX_ROWS
            )));
        }
    }
    Ok(r)
}

/// A `schema_version` as found, for the error message.
fn describe_version(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "missing".into(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(t)) => format!("\"{t}\" (a string, where a number belongs)"),
        Some(other) => format!("{other} (where a number belongs)"),
    }
}

/// The counters schema 2 added: version 1 did not carry them.
const V2_COUNTS: [&str; 10] = [
    "duplicate_answers",
    "unmatched",
    "wrong_bytes",
    "slipped",
    "slip_max_ns",
    "slip_total_ns",
    "reclaimed",
    "overcaptures",
    "line_errors",
    "soft_stimuli",
];

/// Convert a schema version 1 report to version 2, in place.
///
/// Version 1 took its latency figures over the responses only and kept the
/// timeouts apart. The conversion keeps what is still true and says what is
/// not known: a percentile whose rank over all samples falls among the
/// timeouts becomes censored (`null`), as does the max when there were
/// timeouts; the other percentiles keep version 1's response-only values,
/// which can be below the true ones, and a note says so with the number of
/// timeouts they left out. The histogram's overflows take in the timeouts
/// (whose sequence numbers version 1 did not keep), so bins + overflows =
/// samples again. The anomaly counters version 1 lacked read 0, and a note
/// says they were not recorded.
pub fn upgrade_v1(v: &mut Value) -> Result<(), String> {
    let obj = v.as_object_mut().ok_or("the top level is not an object")?;
    let get_u64 = |o: &Map<String, Value>, k: &str| o.get(k).and_then(Value::as_u64);
    let config = obj.get_mut("config").and_then(Value::as_object_mut).ok_or("no config")?;
    config.entry("identity").or_insert(Value::Bool(false));
    let timeout_ns = get_u64(config, "timeout_ns").ok_or("no config.timeout_ns")?;
    let counts = obj.get_mut("counts").and_then(Value::as_object_mut).ok_or("no counts")?;
    counts.entry("late_responses").or_insert(json!(0));
    for k in V2_COUNTS {
        counts.entry(k).or_insert(json!(0));
    }
    let responses = get_u64(counts, "responses").ok_or("no counts.responses")?;
    let timeouts = get_u64(counts, "timeouts").ok_or("no counts.timeouts")?;
    let samples = responses + timeouts;

    let old = obj.get("latency_ns").cloned().unwrap_or(Value::Null);
    let latency = match old.as_object() {
        Some(l) => {
            let field = |k: &str| get_u64(l, k).ok_or(format!("no latency_ns.{k}"));
            let max = field("max")?;
            let mut new = json!({
                "measured": responses,
                "censored": timeouts,
                "censored_above": timeout_ns,
                "min": field("min")?,
                "mean": field("mean")?,
                "max": if timeouts > 0 { Value::Null } else { json!(max) },
                "max_measured": max,
            });
            for p in &crate::analysis::figure::PERCENTILES {
                let censored = rank(p.q, samples) > responses;
                new[p.key] = if censored { Value::Null } else { json!(field(p.key)?) };
            }
            new
        }
        None if timeouts > 0 => json!({
            "measured": 0, "censored": timeouts, "censored_above": timeout_ns,
            "min": null, "mean": null, "p50": null, "p90": null, "p99": null, "p99_9": null,
            "p99_99": null, "max": null, "max_measured": null,
        }),
        None => Value::Null,
    };
    obj.insert("latency_ns".into(), latency);

    let hist = obj.get_mut("histogram").and_then(Value::as_object_mut).ok_or("no histogram")?;
    let overflows = get_u64(hist, "overflows").ok_or("no histogram.overflows")?;
    hist.insert("overflows".into(), json!(overflows + timeouts));

    let mut note = "converted from a schema_version 1 report".to_string();
    if timeouts > 0 {
        note += &format!(
            ": its latency figures were over the {responses} responses only and left out the {timeouts} \
             timeouts (latencies above {}); the percentiles that fall among the timeouts and the max are \
             now censored, the others are still version 1's response-only values and can be below the \
             true ones; the histogram's overflows now include the timeouts, whose sequence numbers \
             version 1 did not keep",
            format_ns(timeout_ns)
        );
    } else {
        note += " (no timeouts: its latency figures stand as they were)";
    }
    note += "; version 1 recorded no probe anomalies but late responses: the other anomaly counts read 0";
    let notes = obj.entry("notes").or_insert(json!([]));
    notes.as_array_mut().ok_or("notes is not a list")?.push(Value::String(note));
    obj.insert("schema_version".into(), json!(SCHEMA_VERSION));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_timeline_or_histogram_is_refused_not_plotted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let good = crate::report::tests::run_of(crate::report::tests::mixed);
        write(&good, &path).unwrap();
        assert_eq!(read(&path).unwrap(), good, "the timeline reads back");
        for damage in ["short column", "row_s 0", "row_s u64::MAX", "too many rows"] {
            let mut r = good.clone();
            let t = r.timeline.as_mut().unwrap();
            match damage {
                "short column" => t.p99_ns.clear(),
                "row_s 0" => t.row_s = 0,
                "row_s u64::MAX" => t.row_s = u64::MAX,
                _ => {
                    let n = crate::analysis::timeline::MAX_ROWS + 1;
                    (t.samples, t.timeouts, t.max_ns, t.p99_ns) =
                        (vec![1; n], vec![0; n], vec![None; n], vec![None; n]);
                }
            }
            write(&r, &path).unwrap();
            let e = read(&path).expect_err(damage).to_string();
            assert!(e.contains("timeline"), "{damage}: {e}");
        }
        let mut r = good.clone();
        r.histogram.bin_ns = 0;
        write(&r, &path).unwrap();
        assert!(read(&path).expect_err("bin_ns 0").to_string().contains("bin_ns"));
        let mut r = good.clone();
        r.histogram.bins.push([u64::MAX, 1]);
        write(&r, &path).unwrap();
        assert!(read(&path).expect_err("a bin beyond").to_string().contains("beyond its range"));
        // Three bins of u64::MAX: their sum does not fit, the histfile's
        // `# Total:` would wrap.
        let mut r = good.clone();
        r.histogram.bins = vec![[1, u64::MAX], [2, u64::MAX], [3, u64::MAX]];
        write(&r, &path).unwrap();
        let e = read(&path).expect_err("bins over 2^64").to_string();
        assert!(e.contains("bins hold over 2^64 samples"), "{e}");
        assert!(crate::report::histfile::render(&r).contains(&format!("# Total: {}", u64::MAX)), "saturates");
        let mut r = good.clone();
        r.histogram.bins[0][1] += r.counts.samples;
        write(&r, &path).unwrap();
        assert!(read(&path).expect_err("bins over samples").to_string().contains("more than its"));
    }

    /// A version 1 report as latprobe 0.1 wrote it: 1000 samples, 10
    /// timeouts, figures over the 990 responses only.
    fn v1_report(timeouts: u64) -> Value {
        let responses = 1000 - timeouts;
        json!({
            "schema_version": 1,
            "tool_version": "0.1.0",
            "complete": true,
            "ended_by": "count-reached",
            "error": null,
            "source": "/dev/ttyACM0",
            "replayed_from": null,
            "probe": null,
            "config": {
                "mode": "uart-echo", "interval_ns": 1_000_000, "dither_ns": 0, "timeout_ns": 500_000,
                "guard_ns": 100_000, "count": 1000, "duration_ns": null, "seed": 1,
                "stimulus": "byte 0x55", "ticks": null
            },
            "started_at": "2025-01-01T00:00:00Z",
            "ended_at": "2025-01-01T00:00:01Z",
            "probe_elapsed_ns": 1_000_000_000u64,
            "counts": {
                "samples": 1000, "responses": responses, "timeouts": timeouts, "lost": 0, "duplicates": 0,
                "out_of_order": 0, "dropped_by_probe": 0, "overruns": 0, "late_responses": timeouts,
                "bad_frames": 0, "probe_taken": 1000
            },
            "latency_ns": {
                "min": 10_000, "max": 400_000, "mean": 50_000, "p50": 45_000, "p90": 60_000,
                "p99": 90_000, "p99_9": 300_000, "p99_99": 400_000
            },
            "worst": { "seq": 250, "latency_ns": 400_000, "at_ns_from_start": 250_000_000u64 },
            "histogram": {
                "bin_ns": 1000, "max_us": 1000, "bins": [[10, responses]], "overflows": 0,
                "overflow_seqs": []
            },
            "target": null,
            "periodic": null,
            "notes": []
        })
    }

    #[test]
    fn a_v1_report_is_converted_with_its_timeouts_censored() {
        let mut v = v1_report(10);
        upgrade_v1(&mut v).unwrap();
        let r: Report = serde_json::from_value(v).unwrap();
        assert_eq!(r.schema_version, SCHEMA_VERSION);
        assert!(!r.config.identity);
        let l = r.latency_ns.as_ref().unwrap();
        assert_eq!((l.measured, l.censored, l.censored_above), (990, 10, 500_000));
        // Ranks over 1000 samples: p99 is rank 990 (the last response),
        // p99.9 rank 999 (a timeout).
        assert_eq!((l.p50, l.p90, l.p99), (Some(45_000), Some(60_000), Some(90_000)));
        assert_eq!((l.p99_9, l.p99_99, l.max), (None, None, None));
        assert_eq!((l.min, l.mean, l.max_measured), (Some(10_000), Some(50_000), Some(400_000)));
        assert_eq!(r.histogram.overflows, 10);
        let note = r.notes.last().unwrap();
        assert!(note.contains("990 responses only") && note.contains("10 timeouts"), "{note}");
        assert!(note.contains("above 500us"), "{note}");
        assert_eq!(r.counts.duplicate_answers, 0);
    }

    #[test]
    fn a_v1_report_without_timeouts_keeps_its_figures() {
        let mut v = v1_report(0);
        upgrade_v1(&mut v).unwrap();
        let r: Report = serde_json::from_value(v).unwrap();
        let l = r.latency_ns.unwrap();
        assert_eq!((l.max, l.p99_99, l.censored), (Some(400_000), Some(400_000), 0));
        assert!(r.notes.last().unwrap().contains("stand as they were"));
    }

    #[test]
    fn a_v1_report_of_timeouts_only_is_all_censored() {
        let mut v = v1_report(1000);
        v["latency_ns"] = Value::Null;
        upgrade_v1(&mut v).unwrap();
        let r: Report = serde_json::from_value(v).unwrap();
        let l = r.latency_ns.unwrap();
        assert_eq!((l.measured, l.censored, l.min, l.max, l.p50), (0, 1000, None, None, None));
        assert_eq!(r.histogram.overflows, 1000);
    }
}
