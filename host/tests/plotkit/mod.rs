//! Helpers of the plot tests (`plots.rs`, `plots_tail.rs`): reports with
//! known content, the texts of an SVG, PNG decoding.
#![allow(dead_code)]

use std::io::Cursor;
use std::path::Path;

use latprobe::analysis::timeline::TimelineReport;
use latprobe::analysis::Figure;
use latprobe::report::plot::{self, HistData};
use latprobe::report::Report;
use serde_json::json;

/// What a test report holds.
pub struct Spec {
    pub mode: &'static str,
    /// Sparse 1 µs bins `[start_us, count]`.
    pub bins: Vec<[u64; 2]>,
    pub max_us: u32,
    /// Measured latencies at or beyond `max_us`.
    pub measured_over: u64,
    pub timeouts: u64,
    pub timeout_ns: u64,
    /// The largest measured latency.
    pub max_measured: Option<u64>,
    pub timeline: Option<TimelineReport>,
    /// The report's p99 and p99.9 (`None`: among the timeouts, or unset).
    pub p99: Option<u64>,
    pub p99_9: Option<u64>,
    /// The probe's run time.
    pub elapsed_ns: Option<u64>,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            mode: "uart-echo",
            bins: Vec::new(),
            max_us: 1000,
            measured_over: 0,
            timeouts: 0,
            timeout_ns: 8_000_000,
            max_measured: None,
            timeline: None,
            p99: None,
            p99_9: None,
            elapsed_ns: None,
        }
    }
}

pub fn report(s: Spec) -> Report {
    let binned: u64 = s.bins.iter().map(|b| b[1]).sum();
    let measured = binned + s.measured_over;
    let samples = measured + s.timeouts;
    let latency = (samples > 0).then(|| {
        json!({
            "measured": measured, "censored": s.timeouts, "censored_above": s.timeout_ns,
            "min": s.bins.first().map(|b| b[0] * 1000), "mean": s.max_measured.map(|m| m / 2),
            "p50": null, "p90": null, "p99": s.p99, "p99_9": s.p99_9, "p99_99": null,
            "max": if s.timeouts > 0 { None } else { s.max_measured },
            "max_measured": s.max_measured,
        })
    });
    let periodic = (s.mode == "periodic")
        .then(|| json!({"edges": samples, "lost": 0, "duplicates": 0, "intervals": null}));
    let v = json!({
        "schema_version": 2, "tool_version": "test", "complete": true, "ended_by": "count-reached",
        "error": null, "source": "test", "replayed_from": null, "probe": null,
        "config": {
            "mode": s.mode, "interval_ns": 1_000_000, "dither_ns": 0, "timeout_ns": s.timeout_ns,
            "guard_ns": 100_000, "count": samples, "duration_ns": null, "seed": 1,
            "stimulus": "identified (9-byte alphabet)", "identity": true, "ticks": null,
        },
        "started_at": "2025-01-01T00:00:00Z", "ended_at": "2025-01-01T00:05:00Z",
        "probe_elapsed_ns": s.elapsed_ns,
        "counts": {
            "samples": samples, "responses": measured, "timeouts": s.timeouts, "lost": 0, "duplicates": 0,
            "out_of_order": 0, "dropped_by_probe": 0, "overruns": 0, "late_responses": 0,
            "duplicate_answers": 0, "unmatched": 0, "wrong_bytes": 0, "slipped": 0, "slip_max_ns": 0,
            "slip_total_ns": 0, "reclaimed": 0, "overcaptures": 0, "line_errors": 0, "bad_frames": 0,
            "probe_taken": samples,
        },
        "latency_ns": latency, "worst": null,
        "histogram": {
            "bin_ns": 1000, "max_us": s.max_us, "bins": s.bins,
            "overflows": s.measured_over + s.timeouts, "overflow_seqs": [],
        },
        "target": null, "periodic": periodic, "timeline": s.timeline, "notes": [],
    });
    serde_json::from_value(v).expect("a valid report")
}

/// 20..=60 µs, a bell of 3 679 samples.
pub fn bell() -> Vec<[u64; 2]> {
    (20..=60u64).map(|us| [us, 1 + 400 / (1 + (us as i64 - 40).unsigned_abs().pow(2) / 8)]).collect()
}

/// A report with a measured tail to 123.4 µs, 12 overflows of which 3
/// timeouts (so the max is censored).
pub fn with_timeouts() -> Report {
    let mut bins = bell();
    bins.push([123, 1]);
    report(Spec {
        bins,
        max_us: 200,
        measured_over: 9,
        timeouts: 3,
        max_measured: Some(450_000),
        ..Spec::default()
    })
}

/// A clean report: no overflow, max 123.4 µs.
pub fn clean() -> Report {
    let mut bins = bell();
    bins.push([123, 1]);
    report(Spec { bins, max_us: 1000, max_measured: Some(123_400), ..Spec::default() })
}

pub fn dump(name: &str, bytes: &[u8]) {
    if let Some(dir) = std::env::var_os("LATPROBE_PLOT_DUMP") {
        let dir = Path::new(&dir);
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// The trimmed contents of every `<text>` of an SVG, which must parse.
pub fn texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("not XML: {e}\n{svg}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.tag_name().namespace(), Some("http://www.w3.org/2000/svg"));
    assert_eq!(root.attribute("width"), Some("1000"));
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_owned())
        .collect()
}

pub fn has(texts: &[String], needle: &str) -> bool {
    texts.iter().any(|t| t.contains(needle))
}

pub fn assert_has(texts: &[String], needle: &str) {
    assert!(has(texts, needle), "no text with {needle:?} in {texts:#?}");
}

/// Elements of a tag whose `attr` is `value` (e.g. rects filled red).
pub fn count_with(svg: &str, tag: &str, attr: &str, value: &str) -> usize {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants().filter(|n| n.has_tag_name(tag) && n.attribute(attr) == Some(value)).count()
}

pub const MEASURED: &str = "#1F77B4";
pub const BEYOND: &str = "#D62728";
pub const BEYOND_RGB: [u8; 3] = [214, 39, 40];

/// A decoded PNG: (width, height, RGB pixels).
pub fn decode(png: &[u8]) -> (u32, u32, Vec<[u8; 3]>) {
    let dec = png::Decoder::new(Cursor::new(png));
    let mut reader = dec.read_info().expect("PNG header");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("PNG data");
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let px = buf[..info.buffer_size()].chunks(3).map(|c| [c[0], c[1], c[2]]).collect();
    (info.width, info.height, px)
}

/// Decodes to the plot's size, with a meaningful share of ink and several
/// colours; returns the pixels.
pub fn assert_png(png: &[u8]) -> Vec<[u8; 3]> {
    let (w, h, px) = decode(png);
    assert_eq!((w, h), plot::SIZE);
    let ink = px.iter().filter(|p| **p != [255, 255, 255]).count();
    assert!(ink * 100 > px.len(), "only {ink} of {} pixels drawn", px.len());
    let mut colours: Vec<[u8; 3]> = px.clone();
    colours.sort_unstable();
    colours.dedup();
    assert!(colours.len() >= 5, "{} colours", colours.len());
    px
}

pub fn count_colour(px: &[[u8; 3]], c: [u8; 3]) -> usize {
    px.iter().filter(|p| **p == c).count()
}

/// A cyclictest-like run, as `import` gives it: bins of `bin_ns` holding
/// 133 samples at 10, 12 and 30 µs, 5 overflows beyond its 40 µs range,
/// max 61 µs (138 samples in all).
pub fn cyclictest_t0(bin_ns: u64) -> HistData {
    HistData {
        label: "cyclictest T0".into(),
        bin_ns,
        bins: vec![(10_000, 50), (12_000, 80), (30_000, 3)],
        range_ns: 40_000,
        overflows: 5,
        timeouts: 0,
        timeout_ns: None,
        max: Figure::Value(61_000),
        periodic: false,
        percentiles: Vec::new(),
    }
}
