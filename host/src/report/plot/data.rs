//! The data of the histogram plots: one run's histogram as the plots read
//! it ([`HistData`], from a latprobe report or an imported run) and the
//! groups of samples beyond its axis, each at its own bound ([`Beyond`]).

use super::{us, us_floor, Figure};
use crate::import::{HistogramRange, ImportedRun};
use crate::report::Report;

/// One run's latency histogram as the plots read it, from a latprobe
/// report or from an imported in-kernel run (cyclictest, rtla).
#[derive(Debug, Clone, PartialEq)]
pub struct HistData {
    /// The run's name in a legend.
    pub label: String,
    /// Width of every bin, ns.
    pub bin_ns: u64,
    /// Non-empty bins, `(start ns, count)`, ascending.
    pub bins: Vec<(u64, u64)>,
    /// Where the bins end: samples at or above it are overflows.
    pub range_ns: u64,
    /// Samples beyond the range, the timeouts included.
    pub overflows: u64,
    /// Of the overflows, timeouts: latencies known only to exceed
    /// `timeout_ns`.
    pub timeouts: u64,
    /// The timeout, when the run had one.
    pub timeout_ns: Option<u64>,
    /// The largest latency: a value, above the timeout, or unknown.
    pub max: Figure,
    /// Periodic mode: the samples are wake-up delays against the fitted
    /// schedule.
    pub periodic: bool,
    /// Percentiles to mark, `("p99", value)`: a latprobe report's p99 and
    /// p99.9 (exact, over every sample); empty for an imported run.
    pub percentiles: Vec<(&'static str, Figure)>,
}

impl HistData {
    /// The histogram of a latprobe report.
    pub fn from_report(r: &Report, label: &str) -> HistData {
        let h = &r.histogram;
        let bin_ns = h.bin_ns.max(1);
        let l = r.latency_ns.as_ref();
        let timeout_ns = l.map_or(r.config.timeout_ns, |l| l.censored_above);
        let percentiles = l.map_or_else(Vec::new, |l| {
            [("p99", l.p99), ("p99.9", l.p99_9)]
                .into_iter()
                // A figure missing without timeouts is a damaged report,
                // not a censored figure: left out.
                .filter(|(_, v)| v.is_some() || l.censored > 0)
                .filter_map(|(name, v)| match l.figure(v) {
                    Figure::None => None,
                    f => Some((name, f)),
                })
                .collect()
        });
        let max = match l {
            Some(l) => match l.max {
                Some(v) => Figure::Value(v),
                None if l.measured.saturating_add(l.censored) > 0 => Figure::Above(l.censored_above),
                None => Figure::None,
            },
            None => Figure::None,
        };
        HistData {
            label: label.to_owned(),
            bin_ns,
            bins: h
                .bins
                .iter()
                .filter(|b| b[1] > 0)
                .map(|&[start, n]| (start.saturating_mul(bin_ns), n))
                .collect(),
            range_ns: u64::from(h.max_us).saturating_mul(bin_ns),
            overflows: h.overflows,
            timeouts: r.counts.timeouts,
            timeout_ns: Some(timeout_ns),
            max,
            periodic: r.periodic.is_some() || r.config.mode == crate::model::ModeArg::Periodic,
            percentiles,
        }
    }

    /// The histogram of an imported run; `None` when the tool kept none
    /// (cyclictest without `-h`).
    pub fn from_imported(run: &ImportedRun, label: &str) -> Option<HistData> {
        let range_ns = match run.histogram {
            HistogramRange::None => return None,
            HistogramRange::Exact(end) | HistogramRange::AtLeast(end) => end,
        };
        let mut bins: Vec<(u64, u64)> = run.bins_ns.iter().copied().filter(|b| b.1 > 0).collect();
        bins.sort_unstable();
        Some(HistData {
            label: label.to_owned(),
            bin_ns: run.bin_width_ns.max(1),
            bins,
            range_ns,
            overflows: run.overflows,
            // latprobe's own histfile, imported: its timeouts stand at
            // their timeout, not at the range's end.
            timeouts: run.timeouts.min(run.overflows),
            timeout_ns: run.timeout_ns.filter(|_| run.timeouts > 0),
            max: run.max_ns.map_or(Figure::None, Figure::Value),
            periodic: false,
            percentiles: Vec::new(),
        })
    }

    /// Every sample: the binned ones and the overflows.
    pub fn samples(&self) -> u64 {
        // Saturating: a JSON file's counts are whatever it says.
        self.bins.iter().fold(self.overflows, |a, b| a.saturating_add(b.1))
    }

    /// The end of the last non-empty bin, ns (0 without one).
    pub(super) fn data_end_ns(&self) -> u64 {
        self.bins.last().map_or(0, |&(s, _)| s.saturating_add(self.bin_ns))
    }

    /// The overflows that were measured: beyond the range, not timeouts.
    pub(super) fn measured_over(&self) -> u64 {
        self.overflows.saturating_sub(self.timeouts)
    }

    /// The timeout, when it lies below the range and there were timeouts:
    /// every answer later than it is a timeout, so nothing is measured
    /// between it and the range's end.
    pub(super) fn early_timeout_ns(&self) -> Option<u64> {
        self.timeout_ns.filter(|&t| self.timeouts > 0 && t < self.range_ns)
    }

    /// Where measured latencies end: the range's end, or an earlier
    /// timeout.
    pub(super) fn measured_end_ns(&self) -> u64 {
        self.early_timeout_ns().unwrap_or(self.range_ns)
    }

    /// What lies beyond the axis, each group at its own bound, ascending:
    /// the measured overflows at the range's end (an imported histogram's
    /// only group, shown even when empty when there is no timeout), the
    /// timeouts at the timeout.
    pub(super) fn beyond(&self) -> Vec<Beyond> {
        let mut out = Vec::new();
        let over = self.measured_over();
        if over > 0 || self.timeouts == 0 {
            let text =
                if over == 0 { "0".to_owned() } else { format!("{over} beyond the histogram's range") };
            out.push(Beyond {
                bound_ns: self.range_ns,
                bound: format!("≥{} µs", us_floor(self.range_ns)),
                count: over,
                text,
                timeouts: false,
            });
        }
        if self.timeouts > 0 {
            let t = self.timeout_ns.unwrap_or(self.range_ns);
            let word = if self.timeouts == 1 { "timeout" } else { "timeouts" };
            out.push(Beyond {
                bound_ns: t,
                bound: format!(">{} µs", us_floor(t)),
                count: self.timeouts,
                text: format!("{} {word}", self.timeouts),
                timeouts: true,
            });
        }
        out.sort_by_key(|b| b.bound_ns);
        out
    }

    /// The overflow label, each group at its bound: `>180 µs: 70
    /// timeouts`, `≥200 µs: 9 beyond the histogram's range; >8000 µs: 3
    /// timeouts`, `≥1000 µs: 0`.
    pub(super) fn overflow_label(&self) -> String {
        self.beyond().iter().map(|b| format!("{}: {}", b.bound, b.text)).collect::<Vec<_>>().join("; ")
    }

    /// The max label: `max 123.4 µs`, `max >8000 µs (timeouts)`.
    pub(super) fn max_label(&self) -> Option<String> {
        match self.max {
            Figure::Value(v) => Some(format!("max {} µs", us(v))),
            Figure::Above(b) => Some(format!("max >{} µs (timeouts)", us_floor(b))),
            Figure::None => None,
        }
    }
}

/// One group of samples beyond the axis, drawn as a bar of the panel.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Beyond {
    pub(super) bound_ns: u64,
    /// `≥200 µs` (at or beyond the range's end), `>180 µs` (timeouts).
    pub(super) bound: String,
    pub(super) count: u64,
    /// `9 beyond the histogram's range`, `70 timeouts`.
    pub(super) text: String,
    pub(super) timeouts: bool,
}
