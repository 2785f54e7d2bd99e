//! The histogram of one run (OSADL style: count on a log axis, the max,
//! p99 and p99.9 marked; on a linear or a log x axis) and the overlay of
//! several runs' histograms for `compare`, each run's range end marked.
//! What lies beyond the axis stands in a panel right of it, as bars with
//! their counts: the measured overflows at the range's end, the timeouts at
//! their own bound (the timeout, which may lie below the range's end).

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::{
    count_label, decade_ceil, frame, require_samples, text_at, text_style, us, us_floor, Axis, Beyond, Chart,
    DrawResult, HistData, Legend, Swatch, XScale, BEYOND, GUIDE, INK, LABEL_PX, MEASURED, P99, P999,
    PANEL_PX, SERIES, TEXT_PX, X_LABEL_AREA, Y_LABEL_AREA,
};
use crate::analysis::figure::Figure;
use crate::report::Report;
use crate::Error;

/// The bottom of a count axis: below 1, so that a bin of 1 shows.
pub(super) const BASE: f64 = 0.5;

/// The histogram of one report.
#[derive(Debug, Clone)]
pub(super) struct Histogram {
    pub(super) data: HistData,
    pub(super) title: String,
    /// The log-x view.
    pub(super) log: bool,
}

impl Histogram {
    pub(super) fn of_report(r: &Report) -> Result<Self, Error> {
        require_samples(r, "histogram")?;
        let data = HistData::from_report(r, "");
        let what = if data.periodic { "Wake-up delay histogram" } else { "Latency histogram" };
        Ok(Self { title: title(r, what), data, log: false })
    }

    /// The same histogram on a log x axis.
    pub(super) fn log_x(mut self) -> Self {
        self.log = true;
        self.title = self.title.replacen(" histogram:", " histogram (log x):", 1);
        self
    }
}

/// `Latency histogram: uart-echo, 300 samples (2025-01-01T00:00:00Z)`.
pub(super) fn title(r: &Report, what: &str) -> String {
    let mut t = format!("{what}: {}, {} samples", r.config.mode_name(), r.counts.samples);
    if !r.started_at.is_empty() {
        t.push_str(&format!(" ({})", r.started_at));
    }
    t
}

/// What the x axis measures.
pub(super) fn x_what(periodic: bool) -> &'static str {
    if periodic {
        "wake-up delay against the fitted schedule"
    } else {
        "latency"
    }
}

/// The y range of a count axis holding `max_count`.
fn count_top(max_count: u64) -> f64 {
    decade_ceil((max_count.max(1) as f64) * 2.0).max(10.0)
}

/// A height `share` of the way down from the top of a log axis.
fn log_height(bottom: f64, top: f64, share: f64) -> f64 {
    let (b, t) = (bottom.log10(), top.log10());
    10f64.powf(t - (t - b) * share)
}

/// The main area (left) and the panel beyond the range (right) of a plot
/// over the histogram's range (the histogram, the CCDF).
pub(super) fn split_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>) {
    let (w, _) = area.dim_in_pixel();
    area.split_horizontally(w.saturating_sub(PANEL_PX))
}

/// The main chart and the panel's, or plotters' error.
type ChartsResult<'a, DB> =
    Result<(MainChart<'a, DB>, CountChart<'a, DB>), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// The log y axis the main chart and the panel share.
pub(super) struct LogY<'s> {
    /// The axis's ends.
    pub bottom: f64,
    pub top: f64,
    /// Its title.
    pub desc: &'s str,
    /// Its labels.
    pub label: fn(f64) -> String,
}

/// The charts of a plot on the areas of [`split_panel`], µs on x, sharing
/// the log y axis `y`, their mesh drawn.
pub(super) fn panel_charts<'a, DB: DrawingBackend>(
    main: &'a DrawingArea<DB, Shift>,
    panel: &'a DrawingArea<DB, Shift>,
    x: &XScale,
    y: &LogY<'_>,
    x_desc: &str,
    panel_desc: &str,
    panel_colour: RGBColor,
) -> ChartsResult<'a, DB> {
    let mut chart = ChartBuilder::on(main)
        .margin_top(8)
        .margin_bottom(6)
        .margin_left(4)
        .margin_right(0)
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(x.coord(), (y.bottom..y.top).log_scale())?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y.desc)
        .x_label_formatter(&|v| x.label(*v))
        .y_label_formatter(&|v| (y.label)(*v))
        .label_style(text_style(LABEL_PX, INK))
        .axis_desc_style(text_style(TEXT_PX, INK))
        .light_line_style(WHITE)
        .draw()?;
    let mut side = ChartBuilder::on(panel)
        .margin_top(8)
        .margin_bottom(6)
        .margin_left(12)
        .margin_right(14)
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(0)
        .build_cartesian_2d(0f64..1f64, (y.bottom..y.top).log_scale())?;
    side.configure_mesh()
        .disable_mesh()
        .x_labels(0)
        .y_labels(0)
        .x_desc(panel_desc)
        .axis_desc_style(text_style(TEXT_PX, panel_colour))
        .draw()?;
    Ok((chart, side))
}

/// The y axis of a count plot.
fn count_axis(top: f64) -> LogY<'static> {
    LogY { bottom: BASE, top, desc: "samples per bin (log scale)", label: count_label }
}

impl Chart for Histogram {
    fn name(&self) -> &'static str {
        "histogram"
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let d = &self.data;
        let axis = if self.log { Axis::of_log(&[d]) } else { Axis::of(&[d]) };
        let xs = axis.scale(&[d], self.log);
        let groups = axis.group(&d.bins);
        let beyond = d.beyond();
        let max_count = groups.iter().map(|g| g.1).chain(beyond.iter().map(|b| b.count)).max().unwrap_or(0);
        let top = count_top(max_count);
        let mut legend = vec![
            Legend::new(Swatch::Bar(MEASURED), format!("measured, samples per bin ({})", axis.bins_text())),
            Legend::new(Swatch::Bar(BEYOND), d.overflow_label()),
        ];
        if let Some(m) = d.max_label() {
            legend.push(Legend::new(Swatch::Dashed(INK), m));
        }
        let marks = percentile_marks(d, &axis);
        legend.extend(marks.iter().map(|m| Legend::new(Swatch::Dashed(m.colour), m.legend.clone())));
        let area = frame(root, &self.title, &legend)?;
        let scale = if self.log { "log scale, " } else { "" };
        let x_desc = format!("{} (µs, {scale}{})", x_what(d.periodic), axis.bins_text());
        let panel_desc = match beyond.as_slice() {
            [one] => one.bound.clone(),
            _ => "beyond the range".to_owned(),
        };
        let (main, panel) = split_panel(&area);
        let (mut chart, mut side) =
            panel_charts(&main, &panel, &xs, &count_axis(top), &x_desc, &panel_desc, BEYOND)?;
        let g = axis.group_ns;
        // A bar of the log view's tail is narrower than a pixel: each is at
        // least 2 px wide, so that no lone sample of the tail vanishes.
        let (px_w, _) = chart.plotting_area().dim_in_pixel();
        let min_w = 2.0 * (xs.end() - xs.range().start) / f64::from(px_w.max(1));
        chart.draw_series(groups.iter().map(|&(s, n)| {
            let x0 = xs.ns(s);
            Rectangle::new([(x0, BASE), (xs.ns(s + g).max(x0 + min_w), n as f64)], MEASURED.filled())
        }))?;
        let cols = draw_beyond(&mut side, &beyond)?;
        let measured_end = d.measured_end_ns();
        if axis.end_ns < measured_end {
            // The axis stops short of where measuring ends: say the rest
            // is empty (at the top, clear of the bars).
            chart.draw_series(std::iter::once(
                EmptyElement::at((xs.end(), top))
                    + Text::new(
                        format!("no sample from {} to {} µs", us(axis.end_ns), us_floor(measured_end)),
                        (-6, 6),
                        text_at(13, GUIDE, HPos::Right, VPos::Top),
                    ),
            ))?;
        }
        for (row, m) in marks.iter().enumerate() {
            let Some(v) = m.at_ns else { continue };
            let x = xs.ns(v);
            chart.draw_series(std::iter::once(DashedPathElement::new(
                vec![(x, BASE), (x, top)],
                3,
                3,
                m.colour.stroke_width(2),
            )))?;
            chart.draw_series(std::iter::once(
                EmptyElement::at((x, top))
                    + Text::new(
                        m.name,
                        (3, 3 + 16 * row as i32),
                        text_at(13, m.colour, HPos::Left, VPos::Top),
                    ),
            ))?;
        }
        let label_y = log_height(BASE, top, 0.12);
        match d.max {
            Figure::Value(v) if v < d.range_ns => {
                let x = xs.ns(v);
                let label = d.max_label().unwrap_or_default();
                chart.draw_series(std::iter::once(DashedPathElement::new(
                    vec![(x, BASE), (x, top)],
                    6,
                    4,
                    INK.stroke_width(2),
                )))?;
                // The label on the side of the line with more room.
                let (x0, x1) = (xs.range().start, xs.end());
                let left = x > x0 + (x1 - x0) * 0.6;
                let (dx, h) = if left { (-6, HPos::Right) } else { (6, HPos::Left) };
                chart.draw_series(std::iter::once(
                    EmptyElement::at((x, label_y))
                        + Text::new(label, (dx, 0), text_at(LABEL_PX, INK, h, VPos::Center)),
                ))?;
            }
            Figure::Value(_) | Figure::Above(_) => {
                // The max lies beyond the axis: marked beside its group in
                // the panel (the timeouts' for a censored max).
                let (label, timeouts) = match d.max {
                    Figure::Above(b) => (format!("max >{} µs", us_floor(b)), true),
                    Figure::Value(v) => (format!("max {} µs", us(v)), false),
                    Figure::None => (String::new(), false),
                };
                let col = beyond.iter().position(|b| b.timeouts == timeouts).unwrap_or(beyond.len() - 1);
                let x = (cols[col].1 + 0.06).min(0.97);
                side.draw_series(std::iter::once(DashedPathElement::new(
                    vec![(x, BASE), (x, top)],
                    6,
                    4,
                    INK.stroke_width(2),
                )))?;
                side.draw_series(std::iter::once(
                    EmptyElement::at((x, log_height(BASE, top, 0.03)))
                        + Text::new(label, (-4, 0), text_at(13, INK, HPos::Right, VPos::Top)),
                ))?;
            }
            Figure::None => {}
        }
        Ok(())
    }
}

/// A percentile mark of the histogram.
struct Mark {
    name: &'static str,
    colour: RGBColor,
    /// Where to draw its line; `None` when it lies beyond the axis or
    /// among the timeouts (then the legend says so, and nothing is drawn
    /// as a number).
    at_ns: Option<u64>,
    legend: String,
}

/// The marks of `d`'s percentiles on `axis`.
fn percentile_marks(d: &HistData, axis: &Axis) -> Vec<Mark> {
    d.percentiles
        .iter()
        .enumerate()
        .filter_map(|(i, &(name, v))| {
            let colour = [P99, P999].get(i).copied().unwrap_or(GUIDE);
            let (at_ns, legend) = match v {
                Figure::Value(v) if v < axis.end_ns => (Some(v), format!("{name} {} µs", us(v))),
                Figure::Value(v) => (None, format!("{name} {} µs (beyond the range)", us(v))),
                Figure::Above(b) => (None, format!("{name} >{} µs (among the timeouts)", us_floor(b))),
                Figure::None => return None,
            };
            Some(Mark { name, colour, at_ns, legend })
        })
        .collect()
}

/// The bars of the panel, one per group beyond the axis, each with its
/// count above it and, when there are several, its bound above that;
/// returns each bar's `(x0, x1)` (of 0..1).
fn draw_beyond<DB: DrawingBackend>(
    side: &mut CountChart<'_, DB>,
    beyond: &[Beyond],
) -> Result<Vec<(f64, f64)>, DrawingAreaErrorKind<DB::ErrorType>> {
    let k = beyond.len().max(1) as f64;
    let mut cols = Vec::new();
    for (i, b) in beyond.iter().enumerate() {
        let x = if beyond.len() == 1 { (0.3, 0.7) } else { ((i as f64 + 0.15) / k, (i as f64 + 0.85) / k) };
        draw_overflow_bar(side, x, b.count, BEYOND, true)?;
        if beyond.len() > 1 {
            let y = if b.count > 0 { b.count as f64 * 1.15 } else { BASE * 1.15 };
            side.draw_series(std::iter::once(
                EmptyElement::at(((x.0 + x.1) / 2.0, y))
                    + Text::new(b.bound.clone(), (0, -17), text_at(12, BEYOND, HPos::Center, VPos::Bottom)),
            ))?;
        }
        cols.push(x);
    }
    Ok(cols)
}

/// The main chart of a plot with a panel: its x ticks are [`XScale::ticks`].
pub(super) type MainChart<'a, DB> = ChartContext<
    'a,
    DB,
    plotters::coord::cartesian::Cartesian2d<
        super::axis::TickedX,
        plotters::coord::combinators::LogCoord<f64>,
    >,
>;

type CountChart<'a, DB> = ChartContext<
    'a,
    DB,
    plotters::coord::cartesian::Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::combinators::LogCoord<f64>,
    >,
>;

/// A bar of the panel from `x0` to `x1` (of 0..1), its count above it;
/// `0` shows as text only, unless `zero` is false (many runs side by side).
fn draw_overflow_bar<DB: DrawingBackend>(
    side: &mut CountChart<'_, DB>,
    (x0, x1): (f64, f64),
    count: u64,
    color: RGBColor,
    zero: bool,
) -> DrawResult<DB> {
    if count > 0 {
        side.draw_series(std::iter::once(Rectangle::new([(x0, BASE), (x1, count as f64)], color.filled())))?;
    } else if !zero {
        return Ok(());
    }
    let y = if count > 0 { count as f64 * 1.15 } else { BASE * 1.15 };
    side.draw_series(std::iter::once(Text::new(
        count.to_string(),
        ((x0 + x1) / 2.0, y),
        text_at(LABEL_PX, INK, HPos::Center, VPos::Bottom),
    )))?;
    Ok(())
}

/// Several runs' histograms in one plot: one outline per run, on one grid
/// of bins (a multiple of every run's bin width), and one bar per run in
/// the panel beyond the ranges.
#[derive(Debug, Clone)]
pub(super) struct Overlay {
    runs: Vec<HistData>,
    /// The log-x view.
    log: bool,
}

impl Overlay {
    pub(super) fn of_runs(runs: &[HistData]) -> Result<Self, Error> {
        if runs.iter().all(|r| r.samples() == 0) {
            return Err(Error::Report(
                "no run has a histogram with samples in it: there is nothing to plot (cyclictest keeps one \
                 with -h N, rtla timerlat hist always does)"
                    .into(),
            ));
        }
        Ok(Self { runs: runs.to_vec(), log: false })
    }

    /// The same overlay on a log x axis.
    pub(super) fn log_x(mut self) -> Self {
        self.log = true;
        self
    }
}

/// The outline of a grouped histogram: one closed step line per run of
/// adjacent groups, from the axis bottom up over each group and down again.
pub(super) fn outline(groups: &[(u64, u64)], group_ns: u64) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut prev_end: Option<u64> = None;
    let x = |ns: u64| ns as f64 / 1000.0;
    for &(s, n) in groups {
        if prev_end != Some(s) {
            if let (Some(pe), Some(seg)) = (prev_end, out.last_mut()) {
                seg.push((x(pe), BASE));
            }
            out.push(vec![(x(s), BASE)]);
        }
        if let Some(seg) = out.last_mut() {
            seg.push((x(s), n as f64));
            seg.push((x(s + group_ns), n as f64));
        }
        prev_end = Some(s + group_ns);
    }
    if let (Some(pe), Some(seg)) = (prev_end, out.last_mut()) {
        seg.push((x(pe), BASE));
    }
    out
}

impl Chart for Overlay {
    fn name(&self) -> &'static str {
        "compare histogram"
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let refs: Vec<&HistData> = self.runs.iter().collect();
        let axis = if self.log { Axis::of_log(&refs) } else { Axis::of(&refs) };
        let grouped: Vec<Vec<(u64, u64)>> = self.runs.iter().map(|r| axis.group(&r.bins)).collect();
        let max_count = grouped
            .iter()
            .flat_map(|g| g.iter().map(|b| b.1))
            .chain(self.runs.iter().map(|r| r.overflows))
            .max()
            .unwrap_or(0);
        let top = count_top(max_count);
        let color = |i: usize| SERIES[i % SERIES.len()];
        let legend: Vec<Legend> = self
            .runs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut t = format!("{}: {} samples, {}", r.label, r.samples(), r.overflow_label());
                if let Some(m) = r.max_label() {
                    t.push_str(&format!(", {m}"));
                }
                Legend::new(Swatch::Line(color(i)), t)
            })
            .collect();
        let log = if self.log { " (log x)" } else { "" };
        let title = format!("Latency histograms compared{log}: {} runs", self.runs.len());
        let area = frame(root, &title, &legend)?;
        let scale = if self.log { "log scale, " } else { "" };
        let x_desc = format!("latency (µs, {scale}{}, all runs)", axis.bins_text());
        let (main, panel) = split_panel(&area);
        let xs = axis.scale(&refs, self.log);
        let (mut chart, mut side) =
            panel_charts(&main, &panel, &xs, &count_axis(top), &x_desc, "beyond each range", BEYOND)?;
        let k = self.runs.len() as f64;
        for (i, (r, groups)) in self.runs.iter().zip(&grouped).enumerate() {
            let c = color(i);
            chart.draw_series(outline(groups, axis.group_ns).into_iter().map(|seg| {
                let seg: Vec<(f64, f64)> = seg.into_iter().map(|(x, y)| (xs.at(x), y)).collect();
                PathElement::new(seg, c.stroke_width(2))
            }))?;
            // Where this run's measuring ends, when the axis goes on: its
            // range's end, or its timeout below it.
            let (end_ns, what) = match r.early_timeout_ns() {
                Some(t) => (t, "timeout"),
                None => (r.range_ns, "range end"),
            };
            if end_ns <= axis.end_ns {
                let x = xs.ns(end_ns);
                chart.draw_series(std::iter::once(DashedPathElement::new(
                    vec![(x, BASE), (x, top)],
                    2,
                    3,
                    c.stroke_width(1),
                )))?;
                chart.draw_series(std::iter::once(
                    EmptyElement::at((x, top))
                        + Text::new(
                            format!("{what} {} µs", us_floor(end_ns)),
                            (-3, 3 + 16 * i as i32),
                            text_at(13, c, HPos::Right, VPos::Top),
                        ),
                ))?;
            }
            if let Figure::Value(v) = r.max {
                if v < r.range_ns {
                    let x = xs.ns(v);
                    chart.draw_series(std::iter::once(DashedPathElement::new(
                        vec![(x, BASE), (x, top)],
                        6,
                        4,
                        c.stroke_width(1),
                    )))?;
                }
            }
            // One bar per run in the panel, in the run's colour.
            let x = ((i as f64 + 0.2) / k, (i as f64 + 0.8) / k);
            draw_overflow_bar(&mut side, x, r.overflows, c, self.runs.len() <= 4)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outline_is_one_step_line_per_run_of_adjacent_groups() {
        let pts = outline(&[(0, 5), (1000, 2), (5000, 1)], 1000);
        assert_eq!(
            pts,
            vec![
                vec![(0.0, BASE), (0.0, 5.0), (1.0, 5.0), (1.0, 2.0), (2.0, 2.0), (2.0, BASE)],
                vec![(5.0, BASE), (5.0, 1.0), (6.0, 1.0), (6.0, BASE)],
            ]
        );
    }
}
