//! The complementary CDF: the share of samples at or above each latency,
//! on a log axis from 1 down to 1/N (N counts every sample, timeouts
//! included). It is computed from the histogram, conservatively: over each
//! bin the curve stays at the share that includes the bin's own samples,
//! and drops at the bin's end, so it never understates the tail. Beyond
//! the histogram's range the share is known only as "at least the range":
//! it is drawn dashed in the panel right of the axis, and where there were
//! timeouts, the share above the timeout (exactly the timeouts: every
//! answer within the timeout was timed) as a second dashed step. A
//! timeout below the range's end is the bound itself: the measured curve
//! ends at it, and the share beyond is "above the timeout", never "at
//! least the range's end".

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::hist::{panel_charts, split_panel, title, x_what, LogY};
use super::{
    frame, prob_label, require_samples, text_at, us_floor, Axis, Chart, DrawResult, HistData, Legend, Swatch,
    XScale, BEYOND, GUIDE, LABEL_PX, MEASURED,
};
use crate::report::Report;
use crate::Error;

/// The complementary CDF of one report.
#[derive(Debug, Clone)]
pub(super) struct Ccdf {
    data: HistData,
    title: String,
}

impl Ccdf {
    pub(super) fn of_report(r: &Report) -> Result<Self, Error> {
        require_samples(r, "complementary CDF")?;
        let data = HistData::from_report(r, "");
        let what = if data.periodic { "Wake-up delay tail (CCDF)" } else { "Latency tail (CCDF)" };
        Ok(Self { title: title(r, what), data })
    }
}

/// The curve's corners, `(x µs, share ≥ x)`, from `(0, 1)` to the end
/// of the last group: a level of `0` means no sample at or above x.
pub(super) fn steps(d: &HistData, axis: &Axis) -> Vec<(f64, f64)> {
    let n = d.samples();
    let mut pts = vec![(0.0, 1.0)];
    if n == 0 {
        return pts;
    }
    let mut remaining = n;
    let share = |k: u64| k as f64 / n as f64;
    for (s, c) in axis.group(&d.bins) {
        let end = s.saturating_add(axis.group_ns) as f64 / 1000.0;
        pts.push((end, share(remaining)));
        remaining -= c.min(remaining);
        pts.push((end, share(remaining)));
    }
    pts
}

impl Chart for Ccdf {
    fn name(&self) -> &'static str {
        "complementary CDF"
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let d = &self.data;
        let n = d.samples();
        let axis = Axis::of(&[d]);
        let pts = steps(d, &axis);
        let floor = 1.0 / n as f64;
        let bottom = floor / 2.0;
        let top = 1.25;
        let beyond = d.overflows as f64 / n as f64;
        // Timeouts beyond the range and the timeout beyond the range: a
        // second, lower step at the timeout.
        let timeout_step = match d.timeout_ns {
            Some(t) if d.timeouts > 0 && t > d.range_ns => Some((t, d.timeouts as f64 / n as f64)),
            _ => None,
        };
        // The bound of what lies beyond: the range's end, or a timeout
        // below it (nothing is measured past an early timeout).
        let early = d.early_timeout_ns();
        let bound = match early {
            Some(t) => format!(">{} µs", us_floor(t)),
            None => format!("≥{} µs", us_floor(d.range_ns)),
        };
        let mut legend = vec![Legend::new(
            Swatch::Line(MEASURED),
            format!("P(latency ≥ x), from the histogram ({})", axis.bins_text()),
        )];
        if d.overflows > 0 && early.is_some() {
            let t = if d.overflows == d.timeouts {
                format!("{bound}: {} of {n} samples, latency known only to be {bound}", d.overflows)
            } else {
                format!(
                    "{bound}: {} of {n} samples ({} timeouts), latency known only to be {bound}",
                    d.overflows, d.timeouts
                )
            };
            legend.push(Legend::new(Swatch::Dashed(BEYOND), t));
        } else if d.overflows > 0 {
            let mut t = format!(
                "≥{} µs: {} of {n} samples, latency known only to be ≥{} µs",
                us_floor(d.range_ns),
                d.overflows,
                us_floor(d.range_ns)
            );
            if let Some((t_ns, _)) = timeout_step {
                t.push_str(&format!("; {} timeouts >{} µs", d.timeouts, us_floor(t_ns)));
            } else if d.timeouts > 0 {
                t.push_str(&format!(" ({} timeouts)", d.timeouts));
            }
            legend.push(Legend::new(Swatch::Dashed(BEYOND), t));
        } else {
            legend.push(Legend::new(Swatch::Dashed(BEYOND), format!("≥{} µs: none", us_floor(d.range_ns))));
        }
        legend.push(Legend::new(Swatch::Dashed(GUIDE), format!("1/N, N = {n} samples")));
        let area = frame(root, &self.title, &legend)?;
        let (main, panel) = split_panel(&area);
        let end = axis.end_us();
        let xs = XScale { log: false, lo_us: 0.0, hi_us: end };
        let y = LogY { bottom, top, desc: "P(latency ≥ x) (log scale)", label: prob_label };
        let x_desc = format!("{} x (µs, {})", x_what(d.periodic), axis.bins_text());
        let (mut chart, mut side) = panel_charts(&main, &panel, &xs, &y, &x_desc, &bound, BEYOND)?;

        // The measured curve; a drop to 0 goes down to the axis bottom,
        // and the curve ends there.
        let mut curve = Vec::with_capacity(pts.len() + 1);
        for &(x, p) in &pts {
            if p <= 0.0 {
                curve.push((x, bottom));
                break;
            }
            curve.push((x, p));
        }
        // No measured sample between the last bin and the range's end (or
        // the early timeout): the share there is exactly the overflows'.
        let known_end = early.map_or(end, |t| end.min(t as f64 / 1000.0));
        if beyond > 0.0 {
            curve.push((known_end, beyond));
        }
        chart.draw_series(std::iter::once(PathElement::new(curve, MEASURED.stroke_width(2))))?;
        if beyond > 0.0 && known_end < end {
            // Past the timeout the share is a bound: dashed.
            chart.draw_series(std::iter::once(DashedPathElement::new(
                vec![(known_end, beyond), (end, beyond)],
                6,
                4,
                BEYOND.stroke_width(2),
            )))?;
        }
        // 1/N across both, the main axis ending at `end`, the panel at 1.
        let one_over_n =
            |x1: f64| DashedPathElement::new(vec![(0.0, floor), (x1, floor)], 3, 4, GUIDE.stroke_width(1));
        chart.draw_series(std::iter::once(one_over_n(end)))?;
        side.draw_series(std::iter::once(one_over_n(1.0)))?;
        if beyond > 0.0 {
            let split = if timeout_step.is_some() { 0.5 } else { 1.0 };
            let mut path = vec![(0.0, beyond), (split, beyond)];
            if let Some((_, p)) = timeout_step {
                path.extend([(split, p), (1.0, p)]);
            }
            side.draw_series(std::iter::once(DashedPathElement::new(path, 6, 4, BEYOND.stroke_width(2))))?;
            let style = text_at(13, BEYOND, HPos::Left, VPos::Bottom);
            side.draw_series(std::iter::once(
                EmptyElement::at((0.0, beyond)) + Text::new(bound.clone(), (2, -3), style),
            ))?;
            if let Some((t_ns, p)) = timeout_step {
                let style = text_at(13, BEYOND, HPos::Right, VPos::Top);
                side.draw_series(std::iter::once(
                    EmptyElement::at((1.0, p)) + Text::new(format!(">{} µs", us_floor(t_ns)), (0, 4), style),
                ))?;
            }
        } else {
            side.draw_series(std::iter::once(Text::new(
                "none",
                (0.5, bottom * 1.5),
                text_at(LABEL_PX, BEYOND, HPos::Center, VPos::Bottom),
            )))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::figure::Figure;

    #[test]
    fn the_curve_ends_at_the_overflows_share_and_drops_by_each_bin() {
        let d = HistData {
            label: String::new(),
            bin_ns: 1000,
            bins: vec![(10_000, 6), (12_000, 1)],
            range_ns: 100_000,
            overflows: 3,
            timeouts: 2,
            timeout_ns: Some(8_000_000),
            max: Figure::Above(8_000_000),
            periodic: false,
            percentiles: Vec::new(),
        };
        let axis = Axis::of(&[&d]);
        let pts = steps(&d, &axis);
        // 10 samples: at 11 µs 4 left (bin 10 counted up to its end), at
        // 13 µs the 3 overflows.
        assert_eq!(pts, vec![(0.0, 1.0), (11.0, 1.0), (11.0, 0.4), (13.0, 0.4), (13.0, 0.3)]);
    }
}
