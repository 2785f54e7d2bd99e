//! The plots tell the tail as it is. A timeout is drawn at its
//! own bound (`>180 µs: 70 timeouts`), never at the histogram's range end;
//! an imported histogram's overflows stay at the range end and say so;
//! p99 and p99.9 are marked; a log-x view spreads the body and the tail;
//! each run of an overlay has its range end marked; the timeline's last,
//! partial second is drawn with its real width and the title gives the
//! run's real length.

mod plotkit;

use latprobe::analysis::timeline::TimelineReport;
use latprobe::report::plot::{self, HistData};
use plotkit::*;

/// Every `<text>` with its position and fill.
struct Label {
    x: f64,
    y: f64,
    fill: String,
    text: String,
}

fn labels(svg: &str) -> Vec<Label> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| Label {
            x: n.attribute("x").unwrap().parse().unwrap(),
            y: n.attribute("y").unwrap().parse().unwrap(),
            fill: n.attribute("fill").unwrap_or("").to_owned(),
            text: n.text().unwrap_or("").trim().to_owned(),
        })
        .collect()
}

/// The pixel x of an x-axis value `v` (µs, seconds), interpolated between
/// two tick labels `a` and `b` of one row (the lowest such row: the x
/// axis, not the count axis's labels); `at` maps values to the axis's
/// scale (`log10` for a log axis).
fn x_of(svg: &str, a: &str, b: &str, at: impl Fn(f64) -> f64) -> impl Fn(f64) -> f64 {
    let ls = labels(svg);
    let (la, lb) = ls
        .iter()
        .filter(|l| l.text == a)
        .flat_map(|la| ls.iter().filter(|l| l.text == b && (l.y - la.y).abs() < 1.0).map(move |lb| (la, lb)))
        .max_by(|p, q| p.0.y.total_cmp(&q.0.y))
        .unwrap_or_else(|| panic!("no ticks {a} and {b} in one row"));
    let (xa, xb) = (la.x, lb.x);
    let (va, vb) = (at(a.parse().unwrap()), at(b.parse().unwrap()));
    move |v| xa + (at(v) - va) / (vb - va) * (xb - xa)
}

/// `(x, width)` of every rect filled with `fill`.
fn rects(svg: &str, fill: &str) -> Vec<(f64, f64)> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some(fill))
        .map(|n| (n.attribute("x").unwrap().parse().unwrap(), n.attribute("width").unwrap().parse().unwrap()))
        .collect()
}

/// A uart-echo run with `--byte` at 200 µs: timeout 180 µs, inside the
/// 1000 µs histogram; 70 timeouts.
fn short_timeout(timeout_ns: u64) -> latprobe::report::Report {
    report(Spec {
        bins: bell(),
        max_us: 1000,
        timeouts: 70,
        timeout_ns,
        max_measured: Some(60_400),
        ..Spec::default()
    })
}

#[test]
fn a_timeout_below_the_range_is_drawn_at_its_own_bound_never_at_the_range_end() {
    for (timeout_ns, bound) in [(180_000, ">180 µs"), (900_000, ">900 µs")] {
        let r = short_timeout(timeout_ns);
        let n = r.counts.samples;
        let svgs = [plot::histogram_svg(&r).unwrap(), plot::histogram_log_svg(&r).unwrap()];
        for svg in &svgs {
            let t = texts(svg);
            assert_has(&t, &format!("{bound}: 70 timeouts"));
            assert!(t.iter().any(|s| s == bound), "the panel's bar is labelled with its bound: {t:#?}");
            assert!(!has(&t, "1000 µs"), "the range end is not where the timeouts are: {t:#?}");
        }
        dump(&format!("short-timeout-{timeout_ns}-histogram.svg"), svgs[0].as_bytes());
        let svg = plot::ccdf_svg(&r).unwrap();
        dump(&format!("short-timeout-{timeout_ns}-ccdf.svg"), svg.as_bytes());
        dump(&format!("short-timeout-{timeout_ns}-ccdf.png"), &plot::ccdf_png(&r).unwrap());
        dump(&format!("short-timeout-{timeout_ns}-histogram.png"), &plot::histogram_png(&r).unwrap());
        let t = texts(&svg);
        assert_has(&t, &format!("{bound}: 70 of {n} samples, latency known only to be {bound}"));
        assert!(!has(&t, "1000 µs"), "{t:#?}");
        assert!(t.iter().any(|s| s == bound), "{t:#?}");
    }
}

#[test]
fn a_timeout_above_the_range_keeps_the_measured_overflows_and_the_timeouts_apart() {
    // 9 measured at or beyond 200 µs, 3 timeouts above 8000 µs.
    let r = with_timeouts();
    let svg = plot::histogram_svg(&r).unwrap();
    let t = texts(&svg);
    assert_has(&t, "≥200 µs: 9 beyond the histogram's range; >8000 µs: 3 timeouts");
    for bar in ["≥200 µs", ">8000 µs", "9", "3"] {
        assert!(t.iter().any(|s| s == bar), "no bar label {bar:?}: {t:#?}");
    }
    // Two bars in the panel, plus the legend's swatch.
    assert_eq!(count_with(&svg, "rect", "fill", BEYOND), 2 + 1, "{svg}");
    let t = texts(&plot::ccdf_svg(&r).unwrap());
    assert_has(&t, "≥200 µs: 12 of");
    assert_has(&t, "3 timeouts >8000 µs");
}

#[test]
fn an_imported_histograms_overflows_stay_at_the_range_end_and_say_so() {
    let ct = cyclictest_t0(1000);
    let t = texts(&plot::overlay_svg(&[ct]).unwrap());
    assert_has(&t, "≥40 µs: 5 beyond the histogram's range");
}

#[test]
fn the_histogram_marks_p99_and_p99_9_where_they_are() {
    let mut bins = bell();
    bins.push([123, 1]);
    let r = report(Spec {
        bins: bins.clone(),
        max_measured: Some(123_400),
        p99: Some(52_000),
        p99_9: Some(58_000),
        ..Spec::default()
    });
    for (svg, log) in
        [(plot::histogram_svg(&r).unwrap(), false), (plot::histogram_log_svg(&r).unwrap(), true)]
    {
        dump(&format!("percentiles-{log}.svg"), svg.as_bytes());
        let png = if log { plot::histogram_log_png(&r) } else { plot::histogram_png(&r) };
        dump(&format!("percentiles-{log}.png"), &png.unwrap());
        let ls = labels(&svg);
        let t: Vec<String> = ls.iter().map(|l| l.text.clone()).collect();
        assert_has(&t, "p99 52 µs");
        assert_has(&t, "p99.9 58 µs");
        // Each marked by a label beside a vertical line at its value.
        let x = if log {
            Box::new(x_of(&svg, "10", "100", f64::log10)) as Box<dyn Fn(f64) -> f64>
        } else {
            Box::new(x_of(&svg, "0", "100", |v| v))
        };
        let doc = roxmltree::Document::parse(&svg).unwrap();
        for (v, name) in [(52.0, "p99"), (58.0, "p99.9")] {
            let px = x(v);
            let line = doc.descendants().filter(|n| n.has_tag_name("polyline")).any(|n| {
                let pts: Vec<(f64, f64)> = n
                    .attribute("points")
                    .unwrap()
                    .split_whitespace()
                    .map(|p| {
                        let (a, b) = p.split_once(',').unwrap();
                        (a.parse().unwrap(), b.parse().unwrap())
                    })
                    .collect();
                pts.len() == 2 && (pts[0].0 - px).abs() <= 1.5 && (pts[1].0 - px).abs() <= 1.5
            });
            assert!(line, "no line for {name} at x {px}");
            assert!(ls.iter().any(|l| l.text == name && (l.x - px).abs() < 8.0), "no label {name} at x {px}");
        }
    }
    // Among the timeouts: said, never drawn as a number.
    let r = report(Spec { bins, timeouts: 40, timeout_ns: 180_000, p99: None, ..Spec::default() });
    let t = texts(&plot::histogram_svg(&r).unwrap());
    assert_has(&t, "p99 >180 µs (among the timeouts)");
}

#[test]
fn the_log_x_view_spreads_a_body_squeezed_into_the_left_of_the_linear_axis() {
    // A bell at 20..60 µs and a tail to 900 µs, in 1 µs bins.
    let mut bins = bell();
    bins.extend([[300, 2], [899, 1]]);
    let r = report(Spec { bins, max_measured: Some(899_500), ..Spec::default() });
    let lin = plot::histogram_svg(&r).unwrap();
    let log = plot::histogram_log_svg(&r).unwrap();
    dump("spread-linear.svg", lin.as_bytes());
    dump("spread-log.svg", log.as_bytes());
    dump("spread-log.png", &plot::histogram_log_png(&r).unwrap());
    // The body, 20..61 µs, as a share of the axis from 0 (linear) or
    // 10 µs (log) to the tail's 900 µs.
    let xl = x_of(&lin, "0", "100", |v| v);
    let xg = x_of(&log, "10", "100", f64::log10);
    let wl = (xl(61.0) - xl(20.0)) / (xl(900.0) - xl(0.0));
    let wg = (xg(61.0) - xg(20.0)) / (xg(900.0) - xg(10.0));
    assert!(wl < 0.06, "linear: the body takes {wl}");
    assert!(wg > 0.15, "log: the body takes {wg}");
    let t = texts(&log);
    assert_has(&t, "latency (µs, log scale, 1 µs bins)");
    for tick in ["10", "100", "1000"] {
        assert!(t.iter().any(|s| s == tick), "tick {tick}: {t:#?}");
    }
    // The linear view groups 1 µs bins into wider ones, and says so.
    assert_has(&texts(&lin), "latency (µs, bins of 5 µs)");
    assert_png(&plot::histogram_log_png(&r).unwrap());
    // Both are written by --plot.
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = plot::write_all(&r, dir.path())
        .unwrap()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.contains(&"histogram-log.svg".into()) && names.contains(&"histogram-log.png".into()),
        "{names:?}"
    );
    for n in &names {
        assert!(plot::PLOT_FILES.contains(&n.as_str()), "{n} not in PLOT_FILES");
    }
}

#[test]
fn each_run_of_the_overlay_has_its_range_end_marked() {
    let probe = HistData::from_report(&with_timeouts(), "probe");
    let ct = cyclictest_t0(2000);
    let runs = [probe, ct];
    let svg = plot::overlay_svg(&runs).unwrap();
    dump("overlay-range-ends.svg", svg.as_bytes());
    dump("overlay-range-ends.png", &plot::overlay_png(&runs).unwrap());
    let ls = labels(&svg);
    let x = x_of(&svg, "0", "100", |v| v);
    // cyclictest's range ends at 40 µs, inside the axis: marked there in
    // its colour (the second series'); the probe's at 200 µs, the axis end.
    let mark = ls
        .iter()
        .find(|l| l.text == "range end 40 µs")
        .unwrap_or_else(|| panic!("no mark: {:#?}", ls.iter().map(|l| &l.text).collect::<Vec<_>>()));
    assert_eq!(mark.fill, "#FF7F0E");
    assert!((mark.x - x(40.0)).abs() < 8.0, "at {} for {}", mark.x, x(40.0));
    assert!(ls.iter().any(|l| l.text == "range end 200 µs" && l.fill == "#1F77B4"));
}

/// A 10.015 s run: ten full seconds and a last row of 16 samples, one of
/// them a timeout.
fn partial_timeline() -> TimelineReport {
    let mut t = TimelineReport { row_s: 1, ..TimelineReport::default() };
    for i in 0..11u64 {
        let last = i == 10;
        t.samples.push(if last { 16 } else { 1000 });
        t.timeouts.push(u64::from(last));
        t.max_ns.push(Some(50_000 + i * 100));
        t.p99_ns.push(Some(45_000));
    }
    t
}

#[test]
fn the_last_partial_second_is_drawn_with_its_real_width_and_the_title_gives_the_real_length() {
    let r = report(Spec {
        bins: vec![[45, 10_015]],
        timeouts: 1,
        max_measured: Some(51_000),
        timeline: Some(partial_timeline()),
        elapsed_ns: Some(10_015_000_000),
        ..Spec::default()
    });
    let svg = plot::timeline_svg(&r).unwrap().unwrap();
    dump("partial-timeline.svg", svg.as_bytes());
    dump("partial-timeline.png", &plot::timeline_png(&r).unwrap().unwrap());
    let t = texts(&svg);
    assert!(t[0].ends_with(", 10.015 s"), "{:?}", t[0]);
    assert_has(&t, "last row 15 ms (16 samples)");
    // The last row's censored max sits in the middle of its 15 ms, not of
    // a whole second: the triangle's centre against the ticks 0 and 10.
    let x = x_of(&svg, "0", "10", |v| v);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let tri: Vec<f64> = doc
        .descendants()
        .filter(|n| n.has_tag_name("polygon") && n.attribute("fill") == Some(MEASURED))
        .map(|n| {
            let xs: Vec<f64> = n
                .attribute("points")
                .unwrap()
                .split_whitespace()
                .map(|p| p.split_once(',').unwrap().0.parse().unwrap())
                .collect();
            xs.iter().sum::<f64>() / xs.len() as f64
        })
        .collect();
    // The legend's and the row's.
    assert_eq!(tri.len(), 2, "{tri:?}");
    let at = tri[1];
    assert!((at - x(10.0075)).abs() < 3.0, "at {at}, the row's middle is {}", x(10.0075));
    // The axis ends at the run's end: its last tick, 10 s, is within 2 %
    // of the plot's width from the end of the bars' axis.
    let bars = rects(&svg, BEYOND);
    let last_bar = bars.last().unwrap();
    assert!((last_bar.0 - x(10.0)).abs() < 1.5, "the last row's bar starts at 10 s");
    // Drawn narrower than a full second (at least 2 px, so it shows).
    assert!(
        last_bar.1 < (x(1.0) - x(0.0)) / 4.0,
        "bar width {} of a second's {}",
        last_bar.1,
        x(1.0) - x(0.0)
    );

    // Without the probe's run time the rows are whole, as before.
    let mut r2 = r.clone();
    r2.probe_elapsed_ns = None;
    let t = texts(&plot::timeline_svg(&r2).unwrap().unwrap());
    assert!(t[0].ends_with(", 11 s"), "{:?}", t[0]);
    assert!(!has(&t, "last row"), "{t:#?}");
}

#[test]
fn the_overlay_has_a_log_x_view_too_and_compare_plot_writes_it() {
    let ct = cyclictest_t0(1000);
    let runs = [HistData::from_report(&with_timeouts(), "probe"), ct];
    let svg = plot::overlay_log_svg(&runs).unwrap();
    dump("overlay-log.svg", svg.as_bytes());
    dump("overlay-log.png", &plot::overlay_log_png(&runs).unwrap());
    let t = texts(&svg);
    assert_has(&t, "latency (µs, log scale, 1 µs bins, all runs)");
    for tick in ["10", "20", "50", "100"] {
        assert!(t.iter().any(|s| s == tick), "tick {tick}: {t:#?}");
    }
    // Both range ends are marked on the log axis too.
    assert!(t.iter().any(|s| s == "range end 40 µs") && t.iter().any(|s| s == "range end 200 µs"), "{t:#?}");
    assert_png(&plot::overlay_log_png(&runs).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = plot::write_overlay(&runs, dir.path(), "--plot")
        .unwrap()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, plot::OVERLAY_FILES);
    assert!(names.contains(&"compare-histogram-log.svg".to_owned()), "{names:?}");
}
