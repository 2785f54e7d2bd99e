//! The live progress line on stderr (a terminal only, never under `--quiet`).

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::report::text::ns_cell;
use crate::session::RunState;

pub(super) fn progress_bar() -> ProgressBar {
    // indicatif would draw escape codes into a log file or a CI pipe; it
    // draws on stderr only, so `-o -`'s JSON on stdout is never touched.
    if !std::io::stderr().is_terminal() || crate::out::quiet() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
    bar.set_style(ProgressStyle::with_template("{msg}").unwrap_or_else(|_| ProgressStyle::default_spinner()));
    bar
}

/// The live progress line: elapsed time against `--duration` (or samples
/// against `--count`), samples, timeouts, lost, and the running p99 and
/// max (`>timeout` when they fall among the timeouts).
pub fn progress_line(
    s: &RunState,
    elapsed: Duration,
    duration_ns: Option<u64>,
    count: Option<u64>,
) -> String {
    let secs = format!("{}s", elapsed.as_secs());
    let clock = match duration_ns {
        Some(d) => format!("{secs}/{}s", d.div_ceil(1_000_000_000)),
        None => secs,
    };
    let Some(a) = &s.analysis else {
        return format!("{clock}  waiting for the first samples");
    };
    let lost = a.seq.lost;
    let samples = match count {
        Some(n) => format!("{}/{n}", a.samples()),
        None => a.samples().to_string(),
    };
    if a.samples() == 0 {
        return format!(
            "{clock}  samples {samples}  timeouts {}  lost {lost}  edges {}",
            a.timeouts, a.edges.edges
        );
    }
    // Timeouts rank above every response: p99 and max are `>timeout` when
    // they fall among them.
    format!(
        "{clock}  samples {samples}  timeouts {}  lost {lost}  p99 {}  max {}",
        a.timeouts,
        ns_cell(a.quantile(0.99)),
        ns_cell(a.max())
    )
}
