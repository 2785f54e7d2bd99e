//! The x axis of the histogram-like plots: how far it goes, how the
//! source bins are grouped on it ([`Axis`]), and its scale, linear or log,
//! with its ticks ([`XScale`], [`TickedX`]).

use super::{decade_floor, us, us_label, HistData};
use crate::analysis::figure::Figure;

/// The smallest of 1, 2, 5 × 10ⁿ that is at least `v` (≥ 1).
pub(super) fn nice_at_least(v: u64) -> u64 {
    let mut p = 1u64;
    loop {
        for m in [1, 2, 5] {
            if let Some(n) = p.checked_mul(m) {
                if n >= v {
                    return n;
                }
            } else {
                return u64::MAX;
            }
        }
        p = p.saturating_mul(10);
    }
}

/// Greatest common divisor.
pub(super) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The most display bins a linear histogram axis gets (about two pixels
/// each); wider ranges group neighbouring bins.
pub(super) const MAX_GROUPS: u64 = 400;
/// The most display bins of the log-x view: its bins narrow towards the
/// tail, and the 1 000 bins of a default 1 µs histogram stay whole.
pub(super) const MAX_LOG_GROUPS: u64 = 20_000;

/// The x axis of a histogram-like plot: `[0, end_ns)` in groups of
/// `group_ns` (a multiple of every source bin width, so that each source
/// bin lies in exactly one group).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Axis {
    pub(super) group_ns: u64,
    pub(super) end_ns: u64,
}

impl Axis {
    /// The axis for `runs`: up to the last non-empty bin (and the max when
    /// it lies in range), rounded up, never past the widest range.
    pub(super) fn of(runs: &[&HistData]) -> Axis {
        Self::of_with(runs, MAX_GROUPS)
    }

    /// The axis of the log-x view: as [`Axis::of`], but in the runs' own
    /// bins unless there are more than [`MAX_LOG_GROUPS`] of them.
    pub(super) fn of_log(runs: &[&HistData]) -> Axis {
        Self::of_with(runs, MAX_LOG_GROUPS)
    }

    pub(super) fn of_with(runs: &[&HistData], max_groups: u64) -> Axis {
        let unit = runs.iter().map(|r| r.bin_ns).fold(1, |a, b| {
            let l = a / gcd(a, b) * b;
            // Pathological widths: give up exactness rather than overflow.
            if l > 1_000_000_000 {
                a.max(b)
            } else {
                l
            }
        });
        // Beyond an early timeout nothing was measured: the axis ends there.
        let range = runs.iter().map(|r| r.measured_end_ns()).max().unwrap_or(0);
        let mut data = runs.iter().map(|r| r.data_end_ns()).max().unwrap_or(0);
        for r in runs {
            if let Figure::Value(v) = r.max {
                if v < r.range_ns {
                    data = data.max(v + 1);
                }
            }
        }
        if data == 0 {
            // Nothing measured in range (every sample timed out): the axis
            // shows the whole, empty range.
            data = range.max(10_000);
        }
        // Round up by a tenth of the span to a 1-2-5 step.
        let step = nice_at_least((data / 10).max(1));
        let mut end = (data + data / 20).div_ceil(step) * step;
        if range > 0 {
            // Close to the range's end, the axis goes all the way, so the
            // panel beyond it follows on directly.
            end = if range <= 2 * data { range.max(data) } else { end.min(range) };
        }
        let group_ns = unit * nice_at_least(end.div_ceil(max_groups).div_ceil(unit).max(1));
        let end_ns = end.div_ceil(group_ns) * group_ns;
        Axis { group_ns, end_ns: end_ns.max(group_ns) }
    }

    pub(super) fn end_us(&self) -> f64 {
        self.end_ns as f64 / 1000.0
    }

    /// The x scale of this axis: linear from 0, or log from the decade
    /// at or below the first non-empty bin of `runs`.
    pub(super) fn scale(&self, runs: &[&HistData], log: bool) -> XScale {
        if !log {
            return XScale { log: false, lo_us: 0.0, hi_us: self.end_us() };
        }
        let first = runs.iter().filter_map(|r| r.bins.first().map(|b| b.0)).min().unwrap_or(0);
        // A little room left of the first bin, at a 1-2-5 value; a bin
        // from 0 starts a decade below its end.
        let lo_us = if first > 0 {
            let v = first as f64 / 1000.0 * 0.8;
            let d = decade_floor(v);
            [5.0, 2.0, 1.0].iter().map(|m| m * d).find(|x| *x <= v).unwrap_or(d)
        } else {
            decade_floor(self.group_ns as f64 / 1000.0) / 10.0
        };
        let hi_us = self.end_us().max(lo_us * 10.0);
        XScale { log: true, lo_us, hi_us }
    }

    /// `bins` summed into this axis's groups: `(group start ns, count)`,
    /// non-empty groups only, ascending; bins past the axis end are left
    /// out (the axis ends past every non-empty bin in range).
    pub(super) fn group(&self, bins: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for &(start, n) in bins {
            if start >= self.end_ns || n == 0 {
                continue;
            }
            let g = start / self.group_ns * self.group_ns;
            match out.last_mut() {
                Some(last) if last.0 == g => last.1 += n,
                _ => out.push((g, n)),
            }
        }
        out
    }

    /// The x axis title's tail: `1 µs bins`, `bins of 10 µs`.
    pub(super) fn bins_text(&self) -> String {
        if self.group_ns == 1000 {
            "1 µs bins".into()
        } else {
            format!("bins of {} µs", us(self.group_ns))
        }
    }
}

/// The x scale of a histogram-like plot, in µs: linear, or log (the chart
/// then runs over log10 of the µs, so one drawing code serves both).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct XScale {
    pub(super) log: bool,
    pub(super) lo_us: f64,
    pub(super) hi_us: f64,
}

impl XScale {
    /// The chart coordinate of `us`.
    pub(super) fn at(&self, us: f64) -> f64 {
        if self.log {
            us.max(self.lo_us).log10()
        } else {
            us
        }
    }

    pub(super) fn ns(&self, ns: u64) -> f64 {
        self.at(ns as f64 / 1000.0)
    }

    pub(super) fn range(&self) -> std::ops::Range<f64> {
        self.at(self.lo_us)..self.at(self.hi_us)
    }

    /// The chart's end.
    pub(super) fn end(&self) -> f64 {
        self.at(self.hi_us)
    }

    /// The label of a tick at chart coordinate `v`.
    pub(super) fn label(&self, v: f64) -> String {
        if self.log {
            // 10^log10(200) is 199.999…: three significant digits.
            let us = 10f64.powf(v);
            let p = 10f64.powf(us.log10().floor() - 2.0);
            us_label((us / p).round() * p)
        } else {
            us_label(v)
        }
    }

    /// The chart's x coordinate, with [`XScale::ticks`].
    pub(super) fn coord(&self) -> TickedX {
        let r = self.range();
        TickedX { lo: r.start, hi: r.end, ticks: self.ticks() }
    }

    /// The ticks, in chart coordinates: a 1-2-5 step of about a tenth of
    /// the axis (linear), or 1, 2 and 5 of every decade (log).
    pub(super) fn ticks(&self) -> Vec<f64> {
        let (lo, hi) = (self.lo_us, self.hi_us);
        if self.log {
            let mut out = Vec::new();
            let mut d = decade_floor(lo);
            while d <= hi * (1.0 + 1e-9) {
                for m in [1.0, 2.0, 5.0] {
                    let v = d * m;
                    if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                        out.push(v.log10());
                    }
                }
                d *= 10.0;
            }
            return out;
        }
        let span = hi - lo;
        if span <= 0.0 {
            return vec![lo];
        }
        let p = decade_floor(span / 10.0);
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * p)
            .find(|s| *s >= span / 10.0 * (1.0 - 1e-9))
            .unwrap_or(p * 10.0);
        let n = (span / step + 1e-9).floor() as u64;
        (0..=n).map(|k| lo + k as f64 * step).collect()
    }
}

/// A linear x coordinate whose ticks are given ([`XScale::ticks`]):
/// plotters' own `WithKeyPoints` has no label formatter over `f64`.
#[derive(Debug, Clone)]
pub(super) struct TickedX {
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) ticks: Vec<f64>,
}

impl plotters::coord::ranged1d::Ranged for TickedX {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    // As plotters' RangedCoordf64 maps.
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        if self.hi == self.lo {
            return (limit.1 - limit.0) / 2;
        }
        let share = (v - self.lo) / (self.hi - self.lo);
        let len = limit.1 - limit.0;
        if len == 0 || !share.is_finite() {
            return if share.is_sign_negative() { limit.0 } else { limit.1 };
        }
        if len > 0 {
            limit.0 + (f64::from(len) * share + 1e-3).floor() as i32
        } else {
            limit.0 + (f64::from(len) * share - 1e-3).ceil() as i32
        }
    }

    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_are_1_2_5_of_each_decade_and_read_as_round_numbers() {
        let x = XScale { log: true, lo_us: 10.0, hi_us: 1000.0 };
        let labels: Vec<String> = x.ticks().into_iter().map(|t| x.label(t)).collect();
        assert_eq!(labels, ["10", "20", "50", "100", "200", "500", "1000"]);
        assert_eq!(x.at(5.0), 1.0, "below the axis: at its start");
        let x = XScale { log: false, lo_us: 0.0, hi_us: 180.0 };
        let labels: Vec<String> = x.ticks().into_iter().map(|t| x.label(t)).collect();
        assert_eq!(labels, ["0", "20", "40", "60", "80", "100", "120", "140", "160", "180"]);
    }
}
