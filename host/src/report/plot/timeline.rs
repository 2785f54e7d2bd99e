//! Latency over time, from the report's timeline: per row the max and the
//! p99 as lines on a log axis, and below them the timeouts per row as
//! bars. A row's max is censored when the row had a timeout, its p99 when
//! the timeline says so (`null` with samples): such a point is drawn at the
//! timeout with a marker of its own, never on the line as a value.
//!
//! The axis ends where the run ended on the probe's clock
//! (`probe_elapsed_ns`): the last row, usually a part of a second, is drawn
//! with its real width, shaded and labelled with its length and samples,
//! and the title gives the run's real length (`10.015 s`). A report
//! without the probe's run time has whole rows, as its timeline says.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::hist::title;
use super::{
    decade_floor, frame, log_us_label, require_samples, text_at, text_style, us_floor, us_label, Chart,
    DrawResult, Legend, Swatch, BEYOND, INK, LABEL_PX, MEASURED, P99, TEXT_PX, Y_LABEL_AREA,
};

/// The shade of a partial last row.
const SHADE: RGBColor = RGBColor(232, 232, 232);
/// The shade of a load phase (`--load-schedule`).
const LOAD_SHADE: RGBColor = RGBColor(255, 233, 204);
use crate::analysis::timeline::TimelineReport;
use crate::report::Report;
use crate::Error;

/// One row's figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Point {
    /// No sample in the row.
    Gap,
    /// Measured, µs.
    Value(f64),
    /// Above the timeout.
    Above,
}

/// Latency over time of one report.
#[derive(Debug, Clone)]
pub(super) struct TimelineChart {
    t: TimelineReport,
    /// The run's length on the probe's clock, when the report has it.
    elapsed_ns: Option<u64>,
    timeout_ns: u64,
    periodic: bool,
    title: String,
    /// The load schedule's phases: name, start and end (s; `None`: the end).
    phases: Vec<(String, u64, Option<u64>)>,
}

/// Where a phase of the load schedule is drawn: from `x0` to `x1` in the
/// axis's unit, its name, and whether it is a load phase (shaded).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PhaseMark {
    pub x0: f64,
    pub x1: f64,
    pub name: String,
    pub load: bool,
}

/// The phases on an axis of `x_end` units of `div` seconds: each clipped
/// to the axis (a phase that starts after the run ended is not drawn).
pub(super) fn phase_marks(phases: &[(String, u64, Option<u64>)], div: f64, x_end: f64) -> Vec<PhaseMark> {
    phases
        .iter()
        .filter(|(_, start, _)| (*start as f64 / div) < x_end)
        .map(|(name, start, end)| PhaseMark {
            x0: *start as f64 / div,
            x1: end.map_or(x_end, |e| (e as f64 / div).min(x_end)),
            name: name.clone(),
            load: name == "load",
        })
        .collect()
}

impl TimelineChart {
    /// `None` when the report has no timeline (or an empty one).
    pub(super) fn of_report(r: &Report) -> Result<Option<Self>, Error> {
        require_samples(r, "timeline")?;
        let Some(t) = r.timeline.as_ref().filter(|t| !t.is_empty()) else {
            return Ok(None);
        };
        let periodic = r.periodic.is_some() || r.config.mode == crate::model::ModeArg::Periodic;
        let what = if periodic { "Wake-up delay over time" } else { "Latency over time" };
        Ok(Some(Self {
            t: t.clone(),
            elapsed_ns: r.probe_elapsed_ns,
            timeout_ns: r.latency_ns.as_ref().map_or(r.config.timeout_ns, |l| l.censored_above),
            periodic,
            title: title(r, what),
            phases: r.phases.iter().map(|p| (p.name.clone(), p.start_s, p.end_s)).collect(),
        }))
    }
}

/// Each row's max: censored when the row had a timeout (its largest
/// *measured* latency is then not its max).
pub(super) fn max_points(t: &TimelineReport) -> Vec<Point> {
    (0..t.len())
        .map(|i| {
            let n = t.samples[i];
            let timeouts = t.timeouts.get(i).copied().unwrap_or(0);
            match t.max_ns.get(i).copied().flatten() {
                _ if n == 0 => Point::Gap,
                _ if timeouts > 0 => Point::Above,
                Some(v) => Point::Value(v as f64 / 1000.0),
                None => Point::Gap,
            }
        })
        .collect()
}

/// Each row's p99: censored when the timeline says so.
pub(super) fn p99_points(t: &TimelineReport) -> Vec<Point> {
    (0..t.len())
        .map(|i| match t.p99(i, 0) {
            crate::analysis::Figure::Value(v) => Point::Value(v as f64 / 1000.0),
            crate::analysis::Figure::Above(_) => Point::Above,
            crate::analysis::Figure::None => Point::Gap,
        })
        .collect()
}

/// The time unit of an axis spanning `total_s`: (seconds per unit, name).
pub(super) fn time_unit(total_s: u64) -> (f64, &'static str) {
    if total_s <= 20 * 60 {
        (1.0, "s")
    } else if total_s <= 20 * 3600 {
        (60.0, "min")
    } else {
        (3600.0, "h")
    }
}

/// A run's length: `10.015 s` (to the ms), `12.5 min`, `24 h`.
fn duration(total_ns: u64) -> String {
    let (div, unit) = time_unit(total_ns / NS_PER_S);
    let places = if unit == "s" { 3 } else { 1 };
    format!("{} {unit}", crate::units::decimal(total_ns, (div * 1e9) as u64, places))
}

/// A row's length: `15 ms`, `12.5 s`.
fn row_length(ns: u64) -> String {
    if ns < NS_PER_S {
        format!("{} ms", crate::units::decimal(ns, 1_000_000, 3))
    } else {
        format!("{} s", crate::units::decimal(ns, NS_PER_S, 3))
    }
}

const NS_PER_S: u64 = 1_000_000_000;

/// The rows' spans in seconds, `[start, end)`: whole rows of `row_s`, the
/// last one ending at `elapsed_ns` when that falls inside it (a partial
/// last row) or beyond it. Returns the spans and the axis's end.
pub(super) fn row_spans(rows: usize, row_s: u64, elapsed_ns: Option<u64>) -> (Vec<(f64, f64)>, f64) {
    let row = row_s as f64;
    let full = rows as f64 * row;
    let last_start = rows.saturating_sub(1) as f64 * row;
    let end = match elapsed_ns {
        Some(e) if rows > 0 && e as f64 / 1e9 > last_start => e as f64 / 1e9,
        _ => full,
    };
    let spans = (0..rows).map(|i| (i as f64 * row, ((i + 1) as f64 * row).min(end))).collect();
    (spans, end)
}

/// Runs of consecutive measured points, as line segments.
fn segments(xs: &[f64], pts: &[Point], floor: f64) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut cur = Vec::new();
    for (&x, p) in xs.iter().zip(pts) {
        match p {
            Point::Value(v) => cur.push((x, v.max(floor))),
            _ => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

impl Chart for TimelineChart {
    fn name(&self) -> &'static str {
        "timeline"
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let t = &self.t;
        let row_s = t.row_s.max(1);
        let (spans, end_s) = row_spans(t.len(), row_s, self.elapsed_ns);
        let total_ns = (end_s * 1e9).round() as u64;
        let (div, unit) = time_unit(total_ns / NS_PER_S);
        let x_end = end_s / div;
        let xs: Vec<f64> = spans.iter().map(|&(a, b)| (a + b) / 2.0 / div).collect();
        // The last row, when it is shorter than the others.
        let partial = spans.last().copied().filter(|&(a, b)| b - a < row_s as f64 - 1e-9);
        let max = max_points(t);
        let p99 = p99_points(t);
        let timeout_us = self.timeout_ns as f64 / 1000.0;
        let any_above = |pts: &[Point]| pts.contains(&Point::Above);
        let (max_above, p99_above) = (any_above(&max), any_above(&p99));
        let values: Vec<f64> = max
            .iter()
            .chain(&p99)
            .filter_map(|p| match p {
                Point::Value(v) => Some(*v),
                _ => None,
            })
            .collect();
        let lowest = values.iter().copied().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
        let mut highest = values.iter().copied().fold(0.0, f64::max);
        if max_above || p99_above {
            highest = highest.max(timeout_us);
        }
        let floor = if lowest.is_finite() { decade_floor(lowest) } else { 1.0 };
        let top = (highest * 2.5).max(floor * 10.0);
        let max_timeouts = t.timeouts.iter().copied().max().unwrap_or(0);

        let per = if row_s == 1 { "second".to_owned() } else { format!("{row_s} s") };
        let mut legend = vec![
            Legend::new(
                Swatch::Line(MEASURED),
                format!("max per {}", if row_s == 1 { "second" } else { "row" }),
            ),
            Legend::new(
                Swatch::Line(P99),
                if row_s == 1 {
                    "p99 per second".to_owned()
                } else {
                    format!("p99 (worst second of each {per})")
                },
            ),
        ];
        let above = format!(">{} µs", us_floor(self.timeout_ns));
        if max_above {
            legend.push(Legend::new(
                Swatch::TriangleUp(MEASURED),
                format!("max above the timeout ({above}), drawn at it"),
            ));
        }
        if p99_above {
            legend.push(Legend::new(
                Swatch::Ring(P99),
                format!("p99 above the timeout ({above}), drawn at it"),
            ));
        }
        if max_above || p99_above {
            legend.push(Legend::new(
                Swatch::Dashed(BEYOND),
                format!("timeout {} µs", us_floor(self.timeout_ns)),
            ));
        }
        legend.push(Legend::new(
            Swatch::Bar(BEYOND),
            format!("timeouts per {}", if row_s == 1 { "second" } else { "row" }),
        ));
        let marks = phase_marks(&self.phases, div, x_end);
        if marks.iter().any(|m| m.load) {
            legend.push(Legend::new(Swatch::Bar(LOAD_SHADE), "load phase (--load-schedule)".to_owned()));
        }
        if let Some((a, b)) = partial {
            let n = t.samples.last().copied().unwrap_or(0);
            let len = row_length(((b - a) * 1e9).round() as u64);
            legend.push(Legend::new(Swatch::Bar(SHADE), format!("last row {len} ({n} samples)")));
        }
        let area = frame(root, &format!("{}, {}", self.title, duration(total_ns)), &legend)?;
        let (_, h) = area.dim_in_pixel();
        let (upper, lower) = area.split_vertically(h * 68 / 100);

        let mut chart = ChartBuilder::on(&upper)
            .margin_top(8)
            .margin_bottom(4)
            .margin_left(4)
            .margin_right(24)
            .x_label_area_size(24)
            .y_label_area_size(Y_LABEL_AREA)
            .build_cartesian_2d(0f64..x_end, (floor..top).log_scale())?;
        let what = if self.periodic { "wake-up delay" } else { "latency" };
        chart
            .configure_mesh()
            .y_desc(format!("{what} (µs, log scale)"))
            .x_label_formatter(&|v| us_label(*v))
            .y_label_formatter(&|v| log_us_label(*v))
            .label_style(text_style(LABEL_PX, INK))
            .axis_desc_style(text_style(TEXT_PX, INK))
            .light_line_style(WHITE)
            .draw()?;
        // The load phases shaded behind everything, each phase's start a
        // dotted line, its name at the top.
        chart.draw_series(
            marks
                .iter()
                .filter(|m| m.load)
                .map(|m| Rectangle::new([(m.x0, floor), (m.x1, top)], LOAD_SHADE.filled())),
        )?;
        for m in &marks {
            if m.x0 > 0.0 {
                chart.draw_series(std::iter::once(DashedPathElement::new(
                    vec![(m.x0, floor), (m.x0, top)],
                    2,
                    3,
                    INK.stroke_width(1),
                )))?;
            }
            chart.draw_series(std::iter::once(Text::new(
                format!(" {}", m.name),
                (m.x0, top / 1.15),
                text_at(LABEL_PX, INK, HPos::Left, VPos::Top),
            )))?;
        }
        if let Some((a, b)) = partial {
            // The partial last row, shaded across its real width (at
            // least 4 px, so that it can be found).
            let (px_w, _) = chart.plotting_area().dim_in_pixel();
            let x0 = (a / div).min(b / div - 4.0 * x_end / f64::from(px_w.max(1))).max(0.0);
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x0, floor), (b / div, top)],
                SHADE.filled(),
            )))?;
        }
        if max_above || p99_above {
            chart.draw_series(std::iter::once(DashedPathElement::new(
                vec![(0.0, timeout_us), (x_end, timeout_us)],
                6,
                4,
                BEYOND.stroke_width(1),
            )))?;
        }
        for (pts, color) in [(&max, MEASURED), (&p99, P99)] {
            for seg in segments(&xs, pts, floor) {
                if seg.len() == 1 {
                    chart.draw_series(std::iter::once(Circle::new(seg[0], 2, color.filled())))?;
                } else {
                    chart.draw_series(std::iter::once(PathElement::new(seg, color.stroke_width(2))))?;
                }
            }
        }
        let at = |pts: &[Point]| -> Vec<f64> {
            xs.iter().zip(pts).filter(|(_, p)| **p == Point::Above).map(|(x, _)| *x).collect()
        };
        chart.draw_series(
            at(&max).into_iter().map(|x| TriangleMarker::new((x, timeout_us), 6, MEASURED.filled())),
        )?;
        chart.draw_series(
            at(&p99).into_iter().map(|x| Circle::new((x, timeout_us), 5, P99.stroke_width(2))),
        )?;

        let t_top = (max_timeouts as f64 * 1.15).max(1.0);
        let mut bars = ChartBuilder::on(&lower)
            .margin_top(4)
            .margin_bottom(6)
            .margin_left(4)
            .margin_right(24)
            .x_label_area_size(super::X_LABEL_AREA)
            .y_label_area_size(Y_LABEL_AREA)
            .build_cartesian_2d(0f64..x_end, 0f64..t_top)?;
        let rows =
            if row_s == 1 { "one row per second".to_owned() } else { format!("one row per {row_s} s") };
        bars.configure_mesh()
            .x_desc(format!("time since start ({unit}; {rows})"))
            .y_desc(format!("timeouts per {}", if row_s == 1 { "second" } else { "row" }))
            .x_label_formatter(&|v| us_label(*v))
            .y_label_formatter(&|v| if v.fract() == 0.0 { format!("{v:.0}") } else { String::new() })
            .y_labels(4)
            .label_style(text_style(LABEL_PX, INK))
            .axis_desc_style(text_style(TEXT_PX, INK))
            .light_line_style(WHITE)
            .draw()?;
        // A row is narrower than a pixel in a long run, and one timeout
        // lower than a pixel beside hundreds: each bar is at least 2 px
        // wide and high, so that no timeout vanishes from the plot.
        bars.draw_series(
            marks
                .iter()
                .filter(|m| m.load)
                .map(|m| Rectangle::new([(m.x0, 0.0), (m.x1, t_top)], LOAD_SHADE.filled())),
        )?;
        let (px_w, px_h) = bars.plotting_area().dim_in_pixel();
        let min_w = 2.0 * x_end / f64::from(px_w.max(1));
        let min_h = 2.0 * t_top / f64::from(px_h.max(1));
        bars.draw_series(t.timeouts.iter().zip(&spans).filter(|(n, _)| **n > 0).map(|(&n, &(a, b))| {
            let (x0, w) = (a / div, (b - a) / div);
            Rectangle::new([(x0, 0.0), (x0 + w.max(min_w), (n as f64).max(min_h))], BEYOND.filled())
        }))?;
        if max_timeouts == 0 {
            bars.draw_series(std::iter::once(Text::new(
                "no timeouts",
                (x_end / 2.0, t_top / 2.0),
                text_at(TEXT_PX, INK, HPos::Center, VPos::Center),
            )))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tl() -> TimelineReport {
        TimelineReport {
            row_s: 1,
            samples: vec![10, 0, 10, 10],
            timeouts: vec![0, 0, 1, 0],
            max_ns: vec![Some(50_000), None, Some(40_000), Some(30_000)],
            p99_ns: vec![Some(45_000), None, None, Some(29_000)],
        }
    }

    #[test]
    fn a_row_with_a_timeout_has_a_censored_max_never_its_largest_measured() {
        let t = tl();
        assert_eq!(max_points(&t), vec![Point::Value(50.0), Point::Gap, Point::Above, Point::Value(30.0)]);
        assert_eq!(p99_points(&t), vec![Point::Value(45.0), Point::Gap, Point::Above, Point::Value(29.0)]);
        // Lines break at gaps and at censored rows.
        let xs = [0.5, 1.5, 2.5, 3.5];
        assert_eq!(segments(&xs, &max_points(&t), 1.0), vec![vec![(0.5, 50.0)], vec![(3.5, 30.0)]]);
    }

    #[test]
    fn phases_are_marked_where_they_run_and_clipped_to_the_run() {
        let phases = vec![
            ("idle".to_owned(), 0, Some(60)),
            ("load".to_owned(), 60, Some(120)),
            ("idle".to_owned(), 120, Some(600)),
            ("load".to_owned(), 600, None),
        ];
        // A 200 s run in seconds: the third phase ends at the axis, the
        // fourth never began.
        let m = phase_marks(&phases, 1.0, 200.0);
        assert_eq!(m.len(), 3);
        assert_eq!((m[1].x0, m[1].x1, m[1].load), (60.0, 120.0, true));
        assert_eq!((m[2].x0, m[2].x1, m[2].load), (120.0, 200.0, false));
        // In minutes.
        let m = phase_marks(&phases, 60.0, 30.0);
        assert_eq!((m[3].x0, m[3].x1), (10.0, 30.0));
    }

    #[test]
    fn long_runs_count_in_minutes_or_hours() {
        assert_eq!(time_unit(600), (1.0, "s"));
        assert_eq!(time_unit(3600), (60.0, "min"));
        assert_eq!(time_unit(86_400), (3600.0, "h"));
        assert_eq!(duration(86_400 * NS_PER_S), "24 h");
        assert_eq!(duration(90 * NS_PER_S), "90 s");
        assert_eq!(duration(10_015_000_000), "10.015 s");
        assert_eq!(row_length(15_000_000), "15 ms");
    }

    #[test]
    fn the_last_row_ends_where_the_run_did() {
        // 10.015 s: ten whole seconds and 15 ms.
        let (spans, end) = row_spans(11, 1, Some(10_015_000_000));
        assert_eq!(end, 10.015);
        assert_eq!(spans[9], (9.0, 10.0));
        assert_eq!(spans[10], (10.0, 10.015));
        // Unknown, or not inside the last row: whole rows.
        assert_eq!(row_spans(11, 1, None).1, 11.0);
        assert_eq!(row_spans(11, 1, Some(9_500_000_000)).1, 11.0);
        // Merged rows of 32 s.
        let (spans, end) = row_spans(3, 32, Some(70_000_000_000));
        assert_eq!((spans[2], end), ((64.0, 70.0), 70.0));
    }
}
