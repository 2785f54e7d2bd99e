//! Plots of a report, each as SVG text and as PNG bytes: the latency
//! histogram (OSADL style), latency over time (from the report's
//! `timeline`) and the complementary CDF; and, for `compare --plot`, the
//! histograms of several runs in one plot.
//!
//! ```text
//!  Report ─▶ HistData / TimelineReport ─▶ figure.draw(DrawingArea) ─┬─ SVGBackend ─▶ String
//!  ImportedRun ─▶ HistData ──────────────┘                          └─ BitMapBackend ─▶ RGB ─png─▶ bytes
//! ```
//!
//! The tail is never cut off (the book's concepts/identity-and-censoring.md, "The tail is measured, never cut
//! off"): the samples beyond the histogram's range and the timeouts
//! (latencies known only to exceed the timeout) are drawn in a panel of their own right of the axis, each group
//! as a bar labelled with its own bound and count (`≥1000 µs: 2 beyond the
//! histogram's range`, `>180 µs: 70 timeouts`): a timeout below the range
//! is never drawn at the range's end. A max or p99 that fell among the
//! timeouts is drawn *at* the timeout with a marker of its own and
//! labelled `>timeout`, never as a smaller number. The histogram marks
//! p99 and p99.9, and comes in two views: linear x (OSADL style; wide
//! ranges group the 1 µs bins, and the axis title says how wide) and log x
//! (`histogram-log`: 1 µs bins, the body and the tail both readable).
//!
//! A report without samples has nothing to plot: every function here then
//! returns [`Error::Report`] saying so (and [`write_all`] writes nothing).
//! [`timeline_svg`] returns `None` for a report without a timeline (those
//! of latprobe before 0.3).
//!
//! The SVG is a standalone document (`<svg xmlns=…>`, no XML declaration,
//! no ids), so it can also be put inline in an HTML page as it is; its text
//! is set in the reader's `sans-serif`. Text in the PNG is rasterised from
//! a subset of DejaVu Sans embedded in the binary (`host/assets/`): no
//! system font or library is needed at build or run time.

mod axis;
mod ccdf;
mod data;
mod hist;
mod tail;
mod timeline;

#[cfg(test)]
use axis::{nice_at_least, MAX_GROUPS};
use axis::{Axis, XScale};
use data::Beyond;
pub use data::HistData;

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::analysis::figure::Figure;
use crate::report::Report;
use crate::Error;

/// Width and height of every plot, pixels (the SVG's user units).
pub const SIZE: (u32, u32) = (1000, 600);

/// The histogram as SVG. An error when the report has no samples.
pub fn histogram_svg(r: &Report) -> Result<String, Error> {
    svg(&hist::Histogram::of_report(r)?)
}

/// The histogram as PNG bytes. An error when the report has no samples.
pub fn histogram_png(r: &Report) -> Result<Vec<u8>, Error> {
    png(&hist::Histogram::of_report(r)?)
}

/// The histogram on a log x axis as SVG: the body and the tail both
/// readable. An error when the report has no samples.
pub fn histogram_log_svg(r: &Report) -> Result<String, Error> {
    svg(&hist::Histogram::of_report(r)?.log_x())
}

/// [`histogram_log_svg`] as PNG bytes.
pub fn histogram_log_png(r: &Report) -> Result<Vec<u8>, Error> {
    png(&hist::Histogram::of_report(r)?.log_x())
}

/// Latency over time as SVG; `None` when the report has no timeline
/// (reports of latprobe before 0.3). An error when it has no samples.
pub fn timeline_svg(r: &Report) -> Result<Option<String>, Error> {
    timeline::TimelineChart::of_report(r)?.map(|f| svg(&f)).transpose()
}

/// Latency over time as PNG bytes; see [`timeline_svg`].
pub fn timeline_png(r: &Report) -> Result<Option<Vec<u8>>, Error> {
    timeline::TimelineChart::of_report(r)?.map(|f| png(&f)).transpose()
}

/// The complementary CDF as SVG. An error when the report has no samples.
pub fn ccdf_svg(r: &Report) -> Result<String, Error> {
    svg(&ccdf::Ccdf::of_report(r)?)
}

/// The complementary CDF as PNG bytes. An error when the report has no
/// samples.
pub fn ccdf_png(r: &Report) -> Result<Vec<u8>, Error> {
    png(&ccdf::Ccdf::of_report(r)?)
}

/// The tail model's plot as SVG; `None` without a fitted model.
pub fn tail_svg(r: &Report) -> Result<Option<String>, Error> {
    tail::TailChart::of_report(r).map(|c| svg(&c)).transpose()
}

/// Several runs' histograms in one plot, as SVG (`compare --plot`). An
/// error when no run has a histogram with samples in it.
pub fn overlay_svg(runs: &[HistData]) -> Result<String, Error> {
    svg(&hist::Overlay::of_runs(runs)?)
}

/// [`overlay_svg`] as PNG bytes.
pub fn overlay_png(runs: &[HistData]) -> Result<Vec<u8>, Error> {
    png(&hist::Overlay::of_runs(runs)?)
}

/// The overlay on a log x axis, as SVG.
pub fn overlay_log_svg(runs: &[HistData]) -> Result<String, Error> {
    svg(&hist::Overlay::of_runs(runs)?.log_x())
}

/// [`overlay_log_svg`] as PNG bytes.
pub fn overlay_log_png(runs: &[HistData]) -> Result<Vec<u8>, Error> {
    png(&hist::Overlay::of_runs(runs)?.log_x())
}

/// Every file [`write_all`] may write into its directory (the timeline
/// only for a run that has one), for the same-file check of `--plot`.
pub const PLOT_FILES: [&str; 10] = [
    "histogram.svg",
    "histogram.png",
    "histogram-log.svg",
    "histogram-log.png",
    "timeline.svg",
    "timeline.png",
    "ccdf.svg",
    "ccdf.png",
    "tail.svg",
    "tail.png",
];
/// The files of [`write_overlay`].
pub const OVERLAY_FILES: [&str; 4] = [
    "compare-histogram.svg",
    "compare-histogram.png",
    "compare-histogram-log.svg",
    "compare-histogram-log.png",
];

/// Write every plot of `r` into `dir` (created when missing):
/// `histogram.svg`, `histogram.png`, `histogram-log.svg`,
/// `histogram-log.png`, `timeline.svg` and `timeline.png` (when the report
/// has a timeline), `ccdf.svg`, `ccdf.png`, `tail.svg` and `tail.png`
/// (when the tail model was fitted). Returns the
/// paths written. Every plot is drawn before the first file is written, so
/// a report that cannot be plotted (no samples) leaves `dir` untouched.
pub fn write_all(r: &Report, dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let named = |e: Error| match e {
        Error::Report(m) => Error::Report(format!("cannot plot into {} (--plot): {m}", dir.display())),
        Error::Io { context, cause } => {
            Error::io(format!("cannot plot into {} (--plot): {context}", dir.display()), cause)
        }
        other => other,
    };
    let hist = hist::Histogram::of_report(r).map_err(named)?;
    let hist_log = hist.clone().log_x();
    let ccdf = ccdf::Ccdf::of_report(r).map_err(named)?;
    let tl = timeline::TimelineChart::of_report(r).map_err(named)?;
    let mut files: Vec<(&str, Vec<u8>)> = vec![
        ("histogram.svg", svg(&hist).map_err(named)?.into_bytes()),
        ("histogram.png", png(&hist).map_err(named)?),
        ("histogram-log.svg", svg(&hist_log).map_err(named)?.into_bytes()),
        ("histogram-log.png", png(&hist_log).map_err(named)?),
    ];
    if let Some(tl) = &tl {
        files.push(("timeline.svg", svg(tl).map_err(named)?.into_bytes()));
        files.push(("timeline.png", png(tl).map_err(named)?));
    }
    files.push(("ccdf.svg", svg(&ccdf).map_err(named)?.into_bytes()));
    files.push(("ccdf.png", png(&ccdf).map_err(named)?));
    if let Some(t) = tail::TailChart::of_report(r) {
        files.push(("tail.svg", svg(&t).map_err(named)?.into_bytes()));
        files.push(("tail.png", png(&t).map_err(named)?));
    }
    write_files(dir, "--plot", &files)
}

/// Write the overlay of `runs` into `dir` (created when missing) as
/// `compare-histogram.svg` and `.png`, and on a log x axis as
/// `compare-histogram-log.svg` and `.png`; `flag` names the option that
/// gave `dir`, for errors. Returns the paths written.
pub fn write_overlay(runs: &[HistData], dir: &Path, flag: &str) -> Result<Vec<PathBuf>, Error> {
    let fig = hist::Overlay::of_runs(runs)
        .map_err(|e| Error::Output(format!("cannot plot into {} ({flag}): {e}", dir.display())))?;
    let log = fig.clone().log_x();
    let files = [
        ("compare-histogram.svg", svg(&fig)?.into_bytes()),
        ("compare-histogram.png", png(&fig)?),
        ("compare-histogram-log.svg", svg(&log)?.into_bytes()),
        ("compare-histogram-log.png", png(&log)?),
    ];
    write_files(dir, flag, &files)
}

fn write_files(dir: &Path, flag: &str, files: &[(&str, Vec<u8>)]) -> Result<Vec<PathBuf>, Error> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io(format!("cannot create the plot directory {} ({flag})", dir.display()), e))?;
    let mut written = Vec::new();
    for (name, bytes) in files {
        let path = dir.join(name);
        crate::fsout::write(&path, bytes)
            .map_err(|e| Error::io(format!("cannot write the plot {} ({flag})", path.display()), e))?;
        written.push(path);
    }
    Ok(written)
}

/// The samples of `r`, or the error every plot gives without any.
/// Every plot is drawn from the histogram (bins and overflows), so that is
/// what must hold samples, whatever `counts` says (a damaged or crafted
/// JSON file may disagree; an empty histogram once made the CCDF's log
/// axis start at 1/0 and plotters loop for ever, found by fuzzing:
/// `host/tests/fixtures/fuzz/report-empty-histogram-hang.json`).
fn require_samples(r: &Report, what: &str) -> Result<(), Error> {
    let held = r.histogram.bins.iter().fold(r.histogram.overflows, |a, b| a.saturating_add(b[1]));
    if held == 0 {
        let why = if r.counts.samples == 0 {
            "the report has no samples".to_string()
        } else {
            format!("the report's histogram holds none of its {} samples", r.counts.samples)
        };
        return Err(Error::Report(format!("{why}: there is no {what} to plot")));
    }
    Ok(())
}

// ---- rendering ----------------------------------------------------------

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A plot that can be drawn on any plotters backend.
trait Chart {
    /// What it is, for errors: `histogram`.
    fn name(&self) -> &'static str;
    /// Draw it on `root` (of [`SIZE`]).
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

/// The embedded font (see `host/assets/README.md`).
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans-subset.ttf");

/// The family every text of a plot is set in; in a PNG, the embedded font.
const FAMILY: &str = "sans-serif";

/// Register the embedded font as `sans-serif` (and its bold) with
/// plotters, once. plotters' text layout needs it for SVG too.
fn fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // An invalid font shows later as "font unavailable" from plotters;
        // the tests prove the embedded one loads.
        let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT);
        let _ = plotters::style::register_font(FAMILY, FontStyle::Bold, FONT);
    });
}

fn draw_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::io(format!("cannot draw the {what} plot"), std::io::Error::other(e.to_string()))
}

fn svg(fig: &impl Chart) -> Result<String, Error> {
    fonts();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        fig.draw(&root).and_then(|()| root.present()).map_err(|e| draw_error(fig.name(), e))?;
    }
    Ok(out)
}

fn png(fig: &impl Chart) -> Result<Vec<u8>, Error> {
    fonts();
    let (w, h) = SIZE;
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        fig.draw(&root).and_then(|()| root.present()).map_err(|e| draw_error(fig.name(), e))?;
    }
    let mut out = Vec::new();
    let mut enc = ::png::Encoder::new(&mut out, w, h);
    enc.set_color(::png::ColorType::Rgb);
    enc.set_depth(::png::BitDepth::Eight);
    // Plots are flat colours: the best compression costs a few ms and halves the file.
    enc.set_compression(::png::Compression::High);
    let encode = |e: ::png::EncodingError| draw_error(fig.name(), format!("PNG encoding: {e}"));
    let mut writer = enc.write_header().map_err(encode)?;
    writer.write_image_data(&rgb).map_err(encode)?;
    writer.finish().map_err(encode)?;
    Ok(out)
}

// ---- style --------------------------------------------------------------

/// Measured latencies (bars, curves).
const MEASURED: RGBColor = RGBColor(31, 119, 180);
/// Overflows and timeouts: what lies beyond the measured range.
const BEYOND: RGBColor = RGBColor(214, 39, 40);
/// The timeline's p99, the histogram's p99 mark.
const P99: RGBColor = RGBColor(44, 160, 44);
/// The histogram's p99.9 mark.
const P999: RGBColor = RGBColor(148, 103, 189);
/// Marks (the max).
const INK: RGBColor = RGBColor(0, 0, 0);
/// Reference lines.
const GUIDE: RGBColor = RGBColor(127, 127, 127);
/// One colour per run of an overlay (matplotlib's tab10, red left out: it
/// means "beyond the range" here).
const SERIES: [RGBColor; 9] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

const TITLE_PX: u32 = 22;
const TEXT_PX: u32 = 15;
const LABEL_PX: u32 = 14;
/// Width of the panel right of the axis that holds what lies beyond it.
const PANEL_PX: u32 = 150;
const X_LABEL_AREA: u32 = 48;
const Y_LABEL_AREA: u32 = 78;

fn text_style(px: u32, color: RGBColor) -> TextStyle<'static> {
    TextStyle { font: (FAMILY, px).into_font(), color: color.to_backend_color(), pos: Pos::default() }
}

fn text_at(px: u32, color: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    text_style(px, color).pos(Pos::new(h, v))
}

/// The plot's title, then its legend; returns the area left for the chart.
fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    legend: &[Legend],
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let area = root.titled(title, text_style(TITLE_PX, INK))?;
    draw_legend(&area, legend)
}

/// The swatch of a legend entry.
#[derive(Debug, Clone, Copy)]
enum Swatch {
    Line(RGBColor),
    Dashed(RGBColor),
    Bar(RGBColor),
    TriangleUp(RGBColor),
    Ring(RGBColor),
}

/// One legend entry.
#[derive(Debug, Clone)]
struct Legend {
    swatch: Swatch,
    text: String,
}

impl Legend {
    fn new(swatch: Swatch, text: impl Into<String>) -> Self {
        Self { swatch, text: text.into() }
    }
}

const LEGEND_ROW: i32 = 20;
const SWATCH_PX: i32 = 26;

/// Draw the legend in rows across the top of `area` (left-aligned with
/// the chart's axis); returns the area below it. A legend outside the
/// chart never hides a bar or a line.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[Legend],
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    let style = text_at(LABEL_PX, INK, HPos::Left, VPos::Center);
    let (width, _) = area.dim_in_pixel();
    let left = Y_LABEL_AREA as i32;
    let right = width as i32 - 10;
    let mut places = Vec::new();
    let (mut x, mut row) = (left, 0);
    for e in entries {
        let (tw, _) = area.estimate_text_size(&e.text, &style)?;
        let w = SWATCH_PX + 6 + tw as i32;
        if x > left && x + w > right {
            x = left;
            row += 1;
        }
        places.push((x, row));
        x += w + 22;
    }
    let rows = if entries.is_empty() { 0 } else { row + 1 };
    for (e, &(x, row)) in entries.iter().zip(&places) {
        let y = 4 + row * LEGEND_ROW + LEGEND_ROW / 2;
        let (x0, x1) = (x, x + SWATCH_PX);
        let mid = (x0 + x1) / 2;
        match e.swatch {
            Swatch::Line(c) => area.draw(&PathElement::new(vec![(x0, y), (x1, y)], c.stroke_width(2)))?,
            Swatch::Dashed(c) => {
                area.draw(&DashedPathElement::new(vec![(x0, y), (x1, y)], 5, 4, c.stroke_width(2)))?
            }
            Swatch::Bar(c) => area.draw(&Rectangle::new([(x0 + 4, y - 6), (x1 - 4, y + 6)], c.filled()))?,
            Swatch::TriangleUp(c) => area.draw(&TriangleMarker::new((mid, y), 6, c.filled()))?,
            Swatch::Ring(c) => area.draw(&Circle::new((mid, y), 5, c.stroke_width(2)))?,
        }
        area.draw_text(&e.text, &style, (x1 + 6, y))?;
    }
    let used = (rows * LEGEND_ROW + if rows > 0 { 8 } else { 0 }) as u32;
    Ok(area.split_vertically(used).1)
}

// ---- numbers ------------------------------------------------------------

/// `ns` in µs with at most one decimal, rounded: `123.4`, `1000`.
fn us(ns: u64) -> String {
    crate::units::decimal(ns, 1000, 1)
}

/// `ns` in µs with at most one decimal, rounded down: a bound a figure is
/// known to be above is never printed higher than it is.
fn us_floor(ns: u64) -> String {
    crate::units::decimal_floor(ns, 1000, 1)
}

/// A count axis label: `1`, `10`, `1k`, `10M`; empty between powers of ten.
fn count_label(v: f64) -> String {
    if v < 1.0 {
        return String::new();
    }
    let e = v.log10();
    if (e - e.round()).abs() > 1e-6 {
        return String::new();
    }
    match e.round() as i32 {
        0 => "1".into(),
        1 => "10".into(),
        2 => "100".into(),
        3 => "1k".into(),
        4 => "10k".into(),
        5 => "100k".into(),
        6 => "1M".into(),
        7 => "10M".into(),
        8 => "100M".into(),
        n => format!("1e{n}"),
    }
}

/// A µs axis label: `0`, `250`, `1.5`; whole numbers without decimals.
fn us_label(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// A log-axis label in µs at powers of ten only: `1`, `10`, `1000`,
/// `0.1`.
fn log_us_label(v: f64) -> String {
    if v <= 0.0 {
        return String::new();
    }
    let e = v.log10();
    if (e - e.round()).abs() > 1e-6 {
        return String::new();
    }
    let e = e.round() as i32;
    if e >= 0 {
        format!("{}", 10u64.pow(e as u32))
    } else {
        format!("{:.*}", (-e) as usize, 10f64.powi(e))
    }
}

/// A probability axis label at powers of ten: `1`, `0.1`, `0.01`, `1e-3`.
fn prob_label(v: f64) -> String {
    if v <= 0.0 || v > 1.0 + 1e-9 {
        return String::new();
    }
    let e = v.log10();
    if (e - e.round()).abs() > 1e-6 {
        return String::new();
    }
    match e.round() as i32 {
        0 => "1".into(),
        -1 => "0.1".into(),
        -2 => "0.01".into(),
        n => format!("1e{n}"),
    }
}

/// The power of ten at or below `v` (> 0).
fn decade_floor(v: f64) -> f64 {
    10f64.powf(v.log10().floor())
}

/// The power of ten at or above `v` (> 0).
fn decade_ceil(v: f64) -> f64 {
    10f64.powf(v.log10().ceil())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(bin_ns: u64, bins: &[(u64, u64)], range_ns: u64) -> HistData {
        HistData {
            label: "t".into(),
            bin_ns,
            bins: bins.to_vec(),
            range_ns,
            overflows: 0,
            timeouts: 0,
            timeout_ns: None,
            max: Figure::None,
            periodic: false,
            percentiles: Vec::new(),
        }
    }

    #[test]
    fn the_embedded_font_loads() {
        assert!(FONT.len() < 200_000, "{} bytes", FONT.len());
        assert!(plotters::style::register_font("latprobe-test", FontStyle::Normal, FONT).is_ok());
    }

    #[test]
    fn numbers_are_rounded_as_the_text_report_does() {
        assert_eq!(us(123_449), "123.4");
        assert_eq!(us(123_450), "123.5");
        assert_eq!(us(1_000_000), "1000");
        // A bound is rounded down: >8000.0 µs, not >8000.1.
        assert_eq!(us_floor(8_000_099), "8000");
        assert_eq!(us_floor(8_000_199), "8000.1");
        assert_eq!(nice_at_least(1), 1);
        assert_eq!(nice_at_least(3), 5);
        assert_eq!(nice_at_least(11), 20);
        assert_eq!(nice_at_least(u64::MAX), u64::MAX);
        assert_eq!(count_label(1000.0), "1k");
        assert_eq!(count_label(2000.0), "");
        assert_eq!(prob_label(0.001), "1e-3");
        assert_eq!(log_us_label(0.1), "0.1");
        assert_eq!(log_us_label(1000.0), "1000");
        assert_eq!(us_label(12.5), "12.5");
    }

    #[test]
    fn the_axis_ends_past_the_data_and_groups_wide_ranges() {
        // Data to 153 µs in a 1000 µs range: 1 µs bins, the axis stops
        // short of the empty rest of the range.
        let r = run(1000, &[(10_000, 5), (152_000, 1)], 1_000_000);
        let a = Axis::of(&[&r]);
        assert_eq!(a.group_ns, 1000);
        assert!(a.end_ns >= 153_000 && a.end_ns <= 200_000, "{a:?}");
        // Data across a 100 ms range: grouped, at most MAX_GROUPS groups.
        let r = run(1000, &[(0, 5), (99_000_000, 1)], 100_000_000);
        let a = Axis::of(&[&r]);
        assert!(a.end_ns / a.group_ns <= MAX_GROUPS, "{a:?}");
        assert_eq!(a.end_ns, 100_000_000);
        assert_eq!(a.group(&r.bins), vec![(0, 5), (99_000_000 / a.group_ns * a.group_ns, 1)]);
        // 1 µs and 3 µs bins together: groups are whole multiples of both.
        let b = run(3000, &[(30_000, 2)], 300_000);
        let a = Axis::of(&[&run(1000, &[(1_000, 1)], 1_000_000), &b]);
        assert_eq!(a.group_ns % 3000, 0);
        // Nothing in range: the whole range.
        let a = Axis::of(&[&run(1000, &[], 500_000)]);
        assert_eq!(a.end_ns, 500_000);
    }
}
