//! `latprobe report` on an arbitrary JSON file (reports of schema 1 and 2,
//! in-kernel documents, anything else): an error or a report, never a
//! panic or a runaway allocation; a report it reads renders in every format
//! (text, histfile, JSON, JUnit, LAVA, HTML with its plots) and is judged
//! against limits of every kind.
#![no_main]

use libfuzzer_sys::fuzz_target;

fn scratch(ext: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new("/dev/shm");
    let dir = if dir.is_dir() { dir.to_path_buf() } else { std::env::temp_dir() };
    dir.join(format!("latprobe-fuzz-{}.{ext}", std::process::id()))
}

fuzz_target!(|data: &[u8]| {
    // One file per process, rewritten each run (in RAM where /dev/shm is).
    let path = scratch("json");
    std::fs::write(&path, data).expect("write");
    if let Ok(r) = latprobe::report::json::read(&path) {
        let _ = latprobe::report::text::summary(&r);
        let _ = latprobe::report::histfile::render(&r);
        let _ = latprobe::report::json::to_string(&r);
        let _ = latprobe::report::junit::render(&r);
        let _ = latprobe::report::lava::lines(&r);
        // Judged against limits of every kind, a percentile off the
        // report's own list included (bounded by its bins).
        let limits = latprobe::model::Limits {
            max_ns: Some(200_000),
            percentiles: vec![
                latprobe::model::PercentileLimit { percent: 99.9, limit_ns: 100_000 },
                latprobe::model::PercentileLimit { percent: 99.5, limit_ns: 100_000 },
            ],
            max_timeouts: Some(0),
            max_lost: Some(0),
            max_late: Some(0),
            // The tail model's limit too: judged on the report's own tail.
            exceedance_per_hour: vec![latprobe::model::ExceedanceLimit { latency_ns: 200_000, per_hour: 1e-3 }],
        };
        let mut judged = r.clone();
        judged.verdicts = latprobe::gates::evaluate(&r, &limits, None);
        let _ = latprobe::report::text::summary(&judged);
        // The HTML page draws every plot (SVG) of the report.
        let _ = latprobe::report::html::render(&judged);
    }
});
