//! The plots (`latprobe::report::plot`) of reports with known content: the
//! SVG parses as XML and holds the axis titles, the max label, the
//! overflow label with its counts and one legend entry per series; the PNG
//! decodes to the plot's size and is not blank; what lies beyond the
//! histogram (overflows, timeouts) is drawn, and a censored figure is
//! never drawn as a smaller number. Structure, never pixel equality.
//!
//! `LATPROBE_PLOT_DUMP=DIR` also writes every plot of these tests to DIR,
//! to look at them.

mod plotkit;

use std::path::Path;

use latprobe::analysis::timeline::TimelineReport;
use latprobe::report::plot::{self, HistData};
use plotkit::*;

#[test]
fn the_histogram_shows_the_overflows_and_timeouts_beyond_the_axis_with_their_counts() {
    let r = with_timeouts();
    let svg = plot::histogram_svg(&r).unwrap();
    dump("timeouts-histogram.svg", svg.as_bytes());
    let t = texts(&svg);
    assert_has(&t, &format!("Latency histogram: uart-echo, {} samples", r.counts.samples));
    assert_has(&t, "latency (µs, 1 µs bins)");
    assert_has(&t, "samples per bin (log scale)");
    // 9 measured beyond 200 µs and 3 timeouts above 8000 µs: each group
    // beyond the axis at its own bound.
    assert_has(&t, "≥200 µs: 9 beyond the histogram's range; >8000 µs: 3 timeouts");
    assert!(t.iter().any(|s| s == "9") && t.iter().any(|s| s == "3"), "the bars' counts: {t:#?}");
    // The max is censored: never the largest measured 450 µs.
    assert_has(&t, "max >8000 µs (timeouts)");
    assert!(!has(&t, "450"), "{t:#?}");
    // The overflow bars are there: two red bars (plus the legend's swatch).
    assert_eq!(count_with(&svg, "rect", "fill", BEYOND), 3, "{svg}");
    // The measured bins: 42 bars (plus the legend's swatch).
    assert_eq!(count_with(&svg, "rect", "fill", MEASURED), 43);

    let png = plot::histogram_png(&r).unwrap();
    dump("timeouts-histogram.png", &png);
    let px = assert_png(&png);
    // Without overflows the red is the legend swatch's alone: a plot that
    // dropped the overflow bar would look like this.
    let clean_px = assert_png(&plot::histogram_png(&clean()).unwrap());
    let (red, clean_red) = (count_colour(&px, BEYOND_RGB), count_colour(&clean_px, BEYOND_RGB));
    assert!(red > clean_red + 1000, "overflow bar: {red} red pixels against {clean_red}");
}

#[test]
fn a_clean_histogram_marks_its_max_on_the_axis_and_says_nothing_is_beyond() {
    let svg = plot::histogram_svg(&clean()).unwrap();
    dump("clean-histogram.svg", svg.as_bytes());
    dump("clean-histogram.png", &plot::histogram_png(&clean()).unwrap());
    let t = texts(&svg);
    // Once in the legend, once beside the line.
    assert_eq!(t.iter().filter(|s| s.as_str() == "max 123.4 µs").count(), 2, "{t:#?}");
    assert_has(&t, "≥1000 µs: 0");
    // The axis stops short of the range, and says the rest is empty.
    assert_has(&t, "no sample from 140 to 1000 µs");
    assert!(!has(&t, "timeout"), "{t:#?}");
    assert_eq!(count_with(&svg, "rect", "fill", BEYOND), 1, "only the legend's swatch");
}

#[test]
fn periodic_mode_says_the_samples_are_wake_up_delays_against_the_fitted_schedule() {
    let r = report(Spec { mode: "periodic", bins: bell(), max_measured: Some(60_500), ..Spec::default() });
    for svg in [plot::histogram_svg(&r).unwrap(), plot::ccdf_svg(&r).unwrap()] {
        let t = texts(&svg);
        assert_has(&t, "wake-up delay against the fitted schedule");
        assert!(!t.iter().any(|s| s.starts_with("latency (")), "{t:#?}");
    }
}

#[test]
fn wide_ranges_group_bins_and_say_so_on_the_axis() {
    // Latencies spread over 0..50 ms in a 100 ms range.
    let bins: Vec<[u64; 2]> = (0..50_000u64).step_by(7).map(|us| [us, 1 + us % 3]).collect();
    let r = report(Spec { bins, max_us: 100_000, max_measured: Some(49_996_000), ..Spec::default() });
    let svg = plot::histogram_svg(&r).unwrap();
    let t = texts(&svg);
    assert_has(&t, "latency (µs, bins of 200 µs)");
    let bars = count_with(&svg, "rect", "fill", MEASURED);
    assert!(bars <= 400, "{bars} bars");
}

#[test]
fn the_ccdf_runs_from_1_to_1_over_n_and_shows_the_plateau_beyond_the_range() {
    let r = with_timeouts();
    let n = r.counts.samples;
    let svg = plot::ccdf_svg(&r).unwrap();
    dump("timeouts-ccdf.svg", svg.as_bytes());
    dump("timeouts-ccdf.png", &plot::ccdf_png(&r).unwrap());
    let t = texts(&svg);
    assert_has(&t, "P(latency ≥ x) (log scale)");
    assert_has(
        &t,
        &format!("≥200 µs: 12 of {n} samples, latency known only to be ≥200 µs; 3 timeouts >8000 µs"),
    );
    assert_has(&t, &format!("1/N, N = {n} samples"));
    // The two steps beyond the range are labelled in the panel.
    assert!(t.iter().any(|s| s == "≥200 µs"), "{t:#?}");
    assert!(t.iter().any(|s| s == ">8000 µs"), "{t:#?}");
    // The y axis reaches 1e-3 (N > 1000) and starts at 1.
    assert!(t.iter().any(|s| s == "1e-3") && t.iter().any(|s| s == "1"), "{t:#?}");
    assert_png(&plot::ccdf_png(&r).unwrap());

    // Without overflows the panel says there is nothing beyond.
    let t = texts(&plot::ccdf_svg(&clean()).unwrap());
    assert_has(&t, "≥1000 µs: none");
}

/// A 24-hour timeline as latprobe keeps it: 2 700 rows of 32 s, a spike in
/// row 1 562, rows 2 000..2 010 with timeouts (p99 censored in 2 005), an
/// empty stretch.
fn long_timeline() -> TimelineReport {
    let rows = 2700;
    let mut t = TimelineReport { row_s: 32, ..TimelineReport::default() };
    for i in 0..rows {
        let empty = (100..110).contains(&i);
        let n = if empty { 0 } else { 32_000 };
        let timeouts = if (2000..2010).contains(&i) { 1 + (i == 2005) as u64 * 400 } else { 0 };
        t.samples.push(n);
        t.timeouts.push(if empty { 0 } else { timeouts });
        let max = if i == 1562 { 900_000 } else { 40_000 + (i as u64 * 37) % 20_000 };
        t.max_ns.push((!empty).then_some(max));
        t.p99_ns.push((!empty && i != 2005).then_some(30_000 + (i as u64 * 13) % 5_000));
    }
    t
}

#[test]
fn the_timeline_draws_censored_rows_at_the_timeout_with_their_own_markers() {
    let t = long_timeline();
    let timeouts: u64 = t.timeouts.iter().sum();
    let samples: u64 = t.samples.iter().sum();
    let r = report(Spec {
        bins: vec![[40, samples - timeouts - 1], [900, 1]],
        max_us: 1000,
        timeouts,
        max_measured: Some(900_000),
        timeline: Some(t),
        ..Spec::default()
    });
    let svg = plot::timeline_svg(&r).unwrap().expect("a timeline");
    dump("long-timeline.svg", svg.as_bytes());
    let t = texts(&svg);
    assert_has(&t, "Latency over time: uart-echo");
    assert_has(&t, "24 h");
    assert_has(&t, "time since start (h; one row per 32 s)");
    assert_has(&t, "latency (µs, log scale)");
    assert_has(&t, "timeouts per row");
    for legend in [
        "max per row",
        "p99 (worst second of each 32 s)",
        "max above the timeout (>8000 µs), drawn at it",
        "p99 above the timeout (>8000 µs), drawn at it",
        "timeout 8000 µs",
    ] {
        assert_has(&t, legend);
    }
    // Ten rows with a censored max (triangles), one with a censored p99
    // (a ring); the legend has one of each.
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let triangles = doc
        .descendants()
        .filter(|n| n.has_tag_name("polygon") && n.attribute("fill") == Some(MEASURED))
        .count();
    assert_eq!(triangles, 10 + 1);
    let rings = doc
        .descendants()
        .filter(|n| {
            n.has_tag_name("circle")
                && n.attribute("stroke") == Some("#2CA02C")
                && n.attribute("fill") == Some("none")
        })
        .count();
    assert_eq!(rings, 1 + 1);
    // Ten bars of timeouts (plus the legend's swatch).
    assert_eq!(count_with(&svg, "rect", "fill", BEYOND), 10 + 1);
    let png = plot::timeline_png(&r).unwrap().expect("a timeline");
    dump("long-timeline.png", &png);
    assert_png(&png);
}

#[test]
fn a_short_clean_timeline_counts_in_seconds_and_says_there_were_no_timeouts() {
    let mut tl = TimelineReport { row_s: 1, ..TimelineReport::default() };
    for i in 0..300u64 {
        tl.samples.push(1000);
        tl.timeouts.push(0);
        tl.max_ns.push(Some(50_000 + i * 10));
        tl.p99_ns.push(Some(45_000));
    }
    let r = report(Spec {
        bins: vec![[45, 300_000]],
        timeline: Some(tl),
        max_measured: Some(52_990),
        ..Spec::default()
    });
    let svg = plot::timeline_svg(&r).unwrap().unwrap();
    let t = texts(&svg);
    assert_has(&t, "time since start (s; one row per second)");
    assert_has(&t, "no timeouts");
    assert_has(&t, "p99 per second");
    assert!(!has(&t, "above the timeout"), "{t:#?}");
}

/// A load schedule's phases are on the latency-over-time plot: each
/// phase named where it starts, the load phases shaded in both panels (one
/// rectangle per load phase per panel), the legend saying what the shade is.
#[test]
fn the_timeline_marks_the_load_schedule_phases() {
    let mut tl = TimelineReport { row_s: 1, ..TimelineReport::default() };
    for _ in 0..90u64 {
        tl.samples.push(1000);
        tl.timeouts.push(0);
        tl.max_ns.push(Some(50_000));
        tl.p99_ns.push(Some(45_000));
    }
    let mut r = report(Spec {
        bins: vec![[45, 90_000]],
        timeline: Some(tl),
        max_measured: Some(50_000),
        ..Spec::default()
    });
    let phase = |name: &str, start_s, end_s| latprobe::report::PhaseReport {
        name: name.to_owned(),
        start_s,
        end_s,
        samples: 0,
        timeouts: 0,
        max_measured_ns: None,
        latency_ns: None,
        loads: None,
    };
    r.phases = vec![phase("idle", 0, Some(30)), phase("load", 30, Some(60)), phase("idle", 60, None)];
    let svg = plot::timeline_svg(&r).unwrap().unwrap();
    let t = texts(&svg);
    assert_has(&t, "load phase (--load-schedule)");
    assert_eq!(t.iter().filter(|s| s.trim() == "idle").count(), 2, "{t:#?}");
    assert_eq!(t.iter().filter(|s| s.trim() == "load").count(), 1, "{t:#?}");
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let shaded = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some("#FFE9CC"))
        .count();
    // One per panel, and the legend's swatch.
    assert_eq!(shaded, 3);
    // Without a schedule nothing is shaded or named.
    r.phases.clear();
    let svg = plot::timeline_svg(&r).unwrap().unwrap();
    assert!(!has(&texts(&svg), "load phase"));
}

#[test]
fn a_report_without_a_timeline_has_no_timeline_plot_and_write_all_skips_it() {
    let r = clean();
    assert!(r.timeline.is_none());
    assert_eq!(plot::timeline_svg(&r).unwrap(), None);
    assert_eq!(plot::timeline_png(&r).unwrap(), None);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("new/plots");
    let written = plot::write_all(&r, &out).unwrap();
    let names: Vec<String> =
        written.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(
        names,
        ["histogram.svg", "histogram.png", "histogram-log.svg", "histogram-log.png", "ccdf.svg", "ccdf.png"]
    );
    for p in &written {
        assert!(p.starts_with(&out) && std::fs::metadata(p).unwrap().len() > 1000, "{}", p.display());
    }
}

#[test]
fn write_all_writes_the_timeline_too_and_names_the_directory_when_it_cannot() {
    let mut r = with_timeouts();
    r.timeline = Some(long_timeline());
    let dir = tempfile::tempdir().unwrap();
    let written = plot::write_all(&r, dir.path()).unwrap();
    assert_eq!(written.len(), 8);
    assert!(written.iter().any(|p| p.ends_with("timeline.png")));
    let svg = std::fs::read_to_string(dir.path().join("timeline.svg")).unwrap();
    texts(&svg);
    // A file where the directory should be.
    let file = dir.path().join("histogram.svg");
    let e = plot::write_all(&r, &file).unwrap_err().to_string();
    assert!(e.contains(&file.display().to_string()) && e.contains("--plot"), "{e}");
}

#[test]
fn a_report_without_samples_is_an_error_that_says_so() {
    let r = report(Spec::default());
    assert_eq!(r.counts.samples, 0);
    for e in [
        plot::histogram_svg(&r).unwrap_err(),
        plot::ccdf_svg(&r).unwrap_err(),
        plot::timeline_svg(&r).unwrap_err(),
    ] {
        assert!(e.to_string().contains("no samples"), "{e}");
    }
    let dir = tempfile::tempdir().unwrap();
    let e = plot::write_all(&r, &dir.path().join("p")).unwrap_err().to_string();
    assert!(e.contains("no samples") && e.contains("--plot"), "{e}");
    assert!(!dir.path().join("p").exists(), "nothing written");
}

#[test]
fn every_sample_timed_out_still_plots_with_the_whole_population_beyond() {
    let r = report(Spec { timeouts: 50, ..Spec::default() });
    let t = texts(&plot::histogram_svg(&r).unwrap());
    assert_has(&t, ">8000 µs: 50 timeouts");
    assert_has(&t, "max >8000 µs (timeouts)");
    let t = texts(&plot::ccdf_svg(&r).unwrap());
    assert_has(&t, "≥1000 µs: 50 of 50 samples");
    assert_png(&plot::histogram_png(&r).unwrap());
}

#[test]
fn the_overlay_has_one_outline_and_one_legend_entry_per_run() {
    let a = HistData::from_report(&with_timeouts(), "probe");
    let b = HistData::from_report(&clean(), "probe, quiet");
    // A cyclictest-like run: 2 µs bins, 40 µs range, 5 overflows.
    let c = cyclictest_t0(2000);
    let runs = [a, b, c];
    let svg = plot::overlay_svg(&runs).unwrap();
    dump("overlay.svg", svg.as_bytes());
    dump("overlay.png", &plot::overlay_png(&runs).unwrap());
    let t = texts(&svg);
    assert_has(&t, "Latency histograms compared: 3 runs");
    assert_has(&t, "latency (µs, bins of 2 µs, all runs)");
    assert_has(&t, &format!("probe: {} samples", runs[0].samples()));
    assert_has(&t, "≥200 µs: 9 beyond the histogram's range; >8000 µs: 3 timeouts, max >8000 µs (timeouts)");
    assert_has(&t, "probe, quiet: ");
    assert_has(&t, "cyclictest T0: 138 samples, ≥40 µs: 5 beyond the histogram's range, max 61 µs");
    // Each run's outline in its colour (a step line per stretch of
    // adjacent bins, plus the legend's swatch): the probe runs have their
    // bell and their 123 µs bin, cyclictest its two stretches.
    // (Its max, a thin dashed line, is made of polylines too.)
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let lines = |colour: &str| {
        doc.descendants()
            .filter(|n| {
                n.has_tag_name("polyline")
                    && n.attribute("stroke") == Some(colour)
                    && n.attribute("stroke-width") == Some("2")
            })
            .count()
    };
    for colour in ["#1F77B4", "#FF7F0E", "#2CA02C"] {
        assert_eq!(lines(colour), 2 + 1, "{colour}");
    }
    // No fourth series.
    assert_eq!(lines("#9467BD"), 0);
    assert_png(&plot::overlay_png(&runs).unwrap());
    // Nothing to draw is an error, not an empty plot.
    let empty = HistData { bins: vec![], overflows: 0, ..runs[2].clone() };
    assert!(plot::overlay_svg(&[empty]).unwrap_err().to_string().contains("nothing to plot"));
}

#[test]
fn compare_plot_draws_a_probe_report_beside_cyclictest_threads() {
    let dir = tempfile::tempdir().unwrap();
    let probe = dir.path().join("probe.json");
    std::fs::write(&probe, serde_json::to_string(&with_timeouts()).unwrap()).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/cyclictest");
    let out = dir.path().join("plots");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_latprobe"))
        .arg("compare")
        .arg(&probe)
        .arg(fixtures.join("ct_t2_h100.hist"))
        .arg(fixtures.join("ct_t1_nohist.json"))
        .args(["--label", "probe", "--plot"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    println!("{}\n{stderr}", String::from_utf8_lossy(&o.stdout));
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("has no histogram") && stderr.contains("left out of the plot"), "{stderr}");
    let svg = std::fs::read_to_string(out.join("compare-histogram.svg")).unwrap();
    let t = texts(&svg);
    let legend: Vec<&String> = t.iter().filter(|s| s.contains(" samples, ≥")).collect();
    assert_eq!(legend.len(), 3, "the probe and two cyclictest threads: {t:#?}");
    assert_has(&t, "probe: ");
    assert_png(&std::fs::read(out.join("compare-histogram.png")).unwrap());

    // Nothing to plot is an error naming the flag and the directory.
    let none = dir.path().join("none");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_latprobe"))
        .arg("compare")
        .arg(fixtures.join("ct_t1_nohist.json"))
        .arg("--plot")
        .arg(&none)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("--plot {}: none of the runs has a histogram", none.display())),
        "{stderr}"
    );
    assert!(!none.exists());
}

#[test]
fn a_report_whose_histogram_is_empty_but_counts_say_otherwise_is_an_error_not_a_hang() {
    // Found by fuzzing `report_json`: 1034 samples counted, no bin and no
    // overflow; the CCDF's log axis then began at 1/0 and plotters looped
    // for ever. Every plot (and the HTML page) must answer at once.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fuzz/report-empty-histogram-hang.json");
    let r = latprobe::report::json::read(&path).expect("it reads as a report");
    assert_eq!(r.counts.samples, 1034);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let e = latprobe::report::plot::ccdf_svg(&r).expect_err("nothing to plot").to_string();
        let h = latprobe::report::plot::histogram_svg(&r).expect_err("nothing to plot").to_string();
        let page = latprobe::report::html::render(&r);
        let _ = tx.send((e, h, page));
    });
    let (e, h, page) = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("plots answer, never hang");
    assert!(e.contains("holds none of its 1034 samples"), "{e}");
    assert!(h.contains("holds none"), "{h}");
    assert!(page.contains("not drawn"), "the page says why the plots are missing");
}
