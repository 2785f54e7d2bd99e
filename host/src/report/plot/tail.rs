//! The tail plot: above the tail model's threshold, the empirical CCDF of
//! the cluster maxima (the share of clusters whose worst latency is above
//! x, a timeout drawn at the timeout as "above"), the fitted generalized
//! Pareto survival with its 95 % profile-likelihood band, and the limits
//! the model was asked about, each marked. Drawn only when the model was
//! fitted: a refused model has no curve to show.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::{
    frame, prob_label, text_at, Chart, DrawResult, Legend, Swatch, BEYOND, GUIDE, LABEL_PX, MEASURED, P99,
    X_LABEL_AREA, Y_LABEL_AREA,
};
use crate::analysis::tail::{decluster_with, TailReport};
use crate::report::Report;

/// The tail plot of one report.
#[derive(Debug, Clone)]
pub(super) struct TailChart {
    title: String,
    /// `(x µs, share of clusters above x)` of the cluster maxima, sorted.
    empirical: Vec<(f64, f64)>,
    /// Censored maxima (timeouts) and where they are known to lie above.
    censored: Option<(f64, f64)>,
    /// `(x µs, fitted, lo, hi)`.
    curve: Vec<(f64, f64, f64, f64)>,
    /// `(name, µs)`.
    limits: Vec<(String, f64)>,
    threshold_us: f64,
}

impl TailChart {
    /// The chart of `r`, `None` without a fitted tail model.
    pub(super) fn of_report(r: &Report) -> Option<Self> {
        let t: &TailReport = r.tail.as_ref()?;
        if t.refused.is_some() || t.curve.is_empty() {
            return None;
        }
        let u = t.threshold_ns?;
        let timeout = r.latency_ns.as_ref().map_or(r.config.timeout_ns, |l| l.censored_above);
        let above: Vec<_> = t.samples.samples(timeout).into_iter().filter(|e| e.key() > (false, u)).collect();
        let per_sample = above.len() as f64 / r.counts.samples.max(1) as f64;
        let maxima = decluster_with(&above, Some(per_sample)).maxima;
        let n = maxima.len().max(1) as f64;
        let mut xs: Vec<f64> =
            maxima.iter().filter(|m| !m.censored).map(|m| m.latency_ns as f64 / 1e3).collect();
        xs.sort_by(f64::total_cmp);
        let cens = maxima.iter().filter(|m| m.censored).count();
        // Share above each measured maximum: the ones after it, and the timeouts.
        let empirical = xs
            .iter()
            .enumerate()
            .map(|(i, &x)| (x, (xs.len() - 1 - i + cens) as f64 / n))
            .filter(|&(_, p)| p > 0.0)
            .collect();
        let us = |ns: f64| ns / 1e3;
        Some(Self {
            title: format!("Tail model: {} cluster maxima above {:.1} µs", maxima.len(), us(u as f64)),
            empirical,
            censored: (cens > 0).then(|| (us(timeout as f64), cens as f64 / n)),
            curve: t.curve.iter().map(|c| (us(c.latency_ns), c.survival, c.lo, c.hi)).collect(),
            limits: t.limits.iter().map(|l| (l.name.clone(), us(l.latency_ns as f64))).collect(),
            threshold_us: us(u as f64),
        })
    }
}

impl Chart for TailChart {
    fn name(&self) -> &'static str {
        "tail plot"
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let mut legend = vec![
            Legend::new(Swatch::Ring(MEASURED), "measured: share of clusters whose max is above x"),
            Legend::new(Swatch::Line(P99), "fitted generalized Pareto survival"),
            Legend::new(Swatch::Dashed(P99), "its 95 % profile-likelihood band"),
        ];
        if self.censored.is_some() {
            legend.push(Legend::new(Swatch::TriangleUp(BEYOND), "timeouts: above the timeout"));
        }
        if !self.limits.is_empty() {
            legend.push(Legend::new(Swatch::Dashed(GUIDE), "limits"));
        }
        let area = frame(root, &self.title, &legend)?;
        let top_x = self
            .curve
            .iter()
            .map(|c| c.0)
            .chain(self.limits.iter().map(|l| l.1))
            .chain(self.censored.map(|c| c.0))
            .fold(self.threshold_us, f64::max);
        let lo_x = self.threshold_us;
        let hi_x = top_x.max(lo_x + 1.0);
        let floor = self
            .empirical
            .iter()
            .map(|e| e.1)
            .chain(self.curve.iter().map(|c| c.1))
            .filter(|&p| p > 0.0)
            .fold(1.0f64, f64::min)
            .max(1e-12);
        let bottom = 10f64.powf(floor.log10().floor() - 1.0);
        let mut chart = ChartBuilder::on(&area)
            .margin(8)
            .x_label_area_size(X_LABEL_AREA)
            .y_label_area_size(Y_LABEL_AREA)
            .build_cartesian_2d(lo_x..hi_x, (bottom..1.25).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("latency x (µs)")
            .y_desc("P(cluster max > x | > threshold) (log)")
            .y_label_formatter(&|v| prob_label(*v))
            .label_style(text_at(LABEL_PX, BLACK, HPos::Center, VPos::Top))
            .draw()?;
        let clip = |p: f64| p.max(bottom);
        let band_hi: Vec<(f64, f64)> = self.curve.iter().map(|c| (c.0, clip(c.3))).collect();
        let band_lo: Vec<(f64, f64)> = self.curve.iter().map(|c| (c.0, clip(c.2))).collect();
        let fitted: Vec<(f64, f64)> =
            std::iter::once((lo_x, 1.0)).chain(self.curve.iter().map(|c| (c.0, clip(c.1)))).collect();
        for band in [band_hi, band_lo] {
            chart.draw_series(std::iter::once(DashedPathElement::new(band, 5, 4, P99.stroke_width(1))))?;
        }
        chart.draw_series(std::iter::once(PathElement::new(fitted, P99.stroke_width(2))))?;
        chart.draw_series(
            self.empirical.iter().map(|&(x, p)| Circle::new((x, p), 3, MEASURED.stroke_width(1))),
        )?;
        if let Some((x, p)) = self.censored {
            chart.draw_series(std::iter::once(TriangleMarker::new((x, p), 6, BEYOND.filled())))?;
        }
        for (name, x) in &self.limits {
            chart.draw_series(std::iter::once(DashedPathElement::new(
                vec![(*x, bottom), (*x, 1.25)],
                4,
                4,
                GUIDE.stroke_width(1),
            )))?;
            chart.draw_series(std::iter::once(Text::new(
                format!("{name} {x:.1} µs"),
                (*x, 1.0),
                text_at(LABEL_PX, GUIDE, HPos::Left, VPos::Top),
            )))?;
        }
        Ok(())
    }
}
