//! JUnit XML of a run's CI gates (`--junit FILE`), for Jenkins, GitLab and
//! every other CI that reads JUnit: one `<testsuite>` per run, one
//! `<testcase>` per limit, and one for the run itself.
//!
//! The output validates against `junit-10.xsd`, the schema of Jenkins's
//! xunit plugin that pytest checks its own JUnit against (a copy and its
//! provenance are in `host/tests/fixtures/junit/`). Its shape:
//!
//! ```text
//! <testsuites name="latprobe" tests failures errors time>
//!   <testsuite name="latprobe uart-echo" tests failures errors skipped="0"
//!              time timestamp hostname>
//!     <properties>  headline figures, config, probe, target   </properties>
//!     <testcase classname="latprobe.run" name="run">          the run itself
//!       <error type="interrupted|failed|stream-ended|incomplete" message/>  unless complete
//!       <system-out>how it ended, the samples</system-out>
//!     </testcase>
//!     <testcase classname="latprobe.limits" name="p99.9 &lt;= 100us">   one per limit
//!       <failure type="threshold" message="why"/>             when violated
//!       <system-out>measured, limit, margin</system-out>
//!     </testcase>
//!     <system-out>the report's notes</system-out>
//!   </testsuite>
//! </testsuites>
//! ```
//!
//! - `tests` counts every testcase (the run and each limit), `failures`
//!   the violated limits, `errors` the run when it did not complete as
//!   asked (interrupted, failed, a replay cut short) or carries an error;
//!   nothing is skipped. A run without limits still has its `run` case, so
//!   an interrupted or failed run always yields valid JUnit with an error.
//!   The limits of such a run are judged on the samples it took.
//! - `time` is the probe's own run time (`probe_elapsed_ns`), else the
//!   wall clock from `started_at` to `ended_at`, in seconds with three
//!   decimals; absent when neither is known. `timestamp` is `started_at`
//!   (RFC 3339, UTC); `hostname` is the target's, from its metadata
//!   (`--target-meta`), absent without one.
//! - Properties (absent when unknown): `latprobe.version`, `mode`,
//!   `interval_us`, `timeout_us`, `dither_us`, `stimulus`, `source`,
//!   `board`, `firmware`, `ended_by`, `complete`, `samples`, `responses`,
//!   `timeouts`, `lost`, `late`, `censored_above_us`, and the latency
//!   figures over every sample `min_us`, `p50_us`, `p90_us`, `p99_us`,
//!   `p99.9_us`, `p99.99_us`, `max_us`, then `target.hostname`,
//!   `target.kernel`, `target.preemption`. A figure is µs with up to three
//!   decimals (`187.3`). **A figure that falls among the timeouts is
//!   written `>8000`**: known only to exceed the timeout (its bound, in
//!   µs), never a number that could pass for the latency itself
//!   (the book's concepts/identity-and-censoring.md, "The tail is measured, never cut off"). Without any sample the
//!   latency figures are absent.
//! - Text is escaped for XML 1.0 everywhere (`&`, `<`, `>`, quotes; tabs,
//!   newlines and carriage returns as character references in
//!   attributes). Characters XML 1.0 cannot carry at all (control
//!   characters other than tab, newline and CR, U+FFFE, U+FFFF) become
//!   U+FFFD, so a note holding a terminal escape sequence still gives a
//!   well-formed file.

use std::fmt::Write as _;
use std::path::Path;

use super::Report;
use crate::analysis::Figure;
use crate::model::EndedBy;
use crate::model::Verdict;
use crate::units::{decimal, format_ns};
use crate::Error;

/// The classname of the limit testcases.
pub const LIMITS_CLASS: &str = "latprobe.limits";
/// The classname of the run testcase.
pub const RUN_CLASS: &str = "latprobe.run";

/// `r` as a JUnit XML document.
pub fn render(r: &Report) -> String {
    let run_error = run_error(r);
    let tests = 1 + r.verdicts.len();
    let failures = r.verdicts.iter().filter(|v| !v.pass).count();
    let errors = usize::from(run_error.is_some());
    let time = suite_time(r);

    let mut s = String::new();
    s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = write!(
        s,
        "<testsuites name=\"latprobe\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\""
    );
    if let Some(t) = &time {
        let _ = write!(s, " time=\"{t}\"");
    }
    s.push_str(">\n");

    let _ = write!(
        s,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\"",
        attr(&format!("latprobe {}", r.config.mode_name()))
    );
    if let Some(t) = &time {
        let _ = write!(s, " time=\"{t}\"");
    }
    if !r.started_at.is_empty() {
        let _ = write!(s, " timestamp=\"{}\"", attr(&r.started_at));
    }
    if let Some(h) = target_str(r, &["hostname"]) {
        let _ = write!(s, " hostname=\"{}\"", attr(&h));
    }
    s.push_str(">\n");

    s.push_str("    <properties>\n");
    for (name, value) in properties(r) {
        let _ = writeln!(s, "      <property name=\"{}\" value=\"{}\"/>", attr(&name), attr(&value));
    }
    s.push_str("    </properties>\n");

    // The run itself.
    let _ = write!(s, "    <testcase classname=\"{RUN_CLASS}\" name=\"run\"");
    if let Some(t) = &time {
        let _ = write!(s, " time=\"{t}\"");
    }
    s.push_str(">\n");
    if let Some((kind, message)) = &run_error {
        let _ = writeln!(
            s,
            "      <error type=\"{}\" message=\"{}\">{}</error>",
            attr(kind),
            attr(message),
            text(&run_detail(r))
        );
    } else {
        let _ = writeln!(s, "      <system-out>{}</system-out>", text(&run_detail(r)));
    }
    s.push_str("    </testcase>\n");

    // One per limit.
    for v in &r.verdicts {
        let _ = writeln!(s, "    <testcase classname=\"{LIMITS_CLASS}\" name=\"{}\">", attr(&case_name(v)));
        if v.pass {
            let _ = writeln!(s, "      <system-out>{}</system-out>", text(&figures(v)));
        } else {
            let _ = writeln!(
                s,
                "      <failure type=\"threshold\" message=\"{}\">{}</failure>",
                attr(&failure_message(v)),
                text(&format!("{}\n{}", failure_message(v), figures(v)))
            );
        }
        s.push_str("    </testcase>\n");
    }

    if !r.notes.is_empty() {
        let _ = writeln!(s, "    <system-out>{}</system-out>", text(&r.notes.join("\n")));
    }
    s.push_str("  </testsuite>\n</testsuites>\n");
    s
}

/// Write `r` to `path` as JUnit XML.
pub fn write(r: &Report, path: &Path) -> Result<(), Error> {
    crate::fsout::write(path, render(r).as_bytes())
        .map_err(|e| Error::io(format!("cannot write the JUnit report {} (--junit)", path.display()), e))
}

/// The testcase name of a limit: `max <= 200us`, `p99.9 <= 100us`,
/// `timeouts <= 0`.
pub fn case_name(v: &Verdict) -> String {
    format!("{} <= {}", v.name, v.limit_text())
}

/// The `message` of a violated limit: its `why`, or what was measured
/// against what was allowed.
fn failure_message(v: &Verdict) -> String {
    v.why
        .clone()
        .unwrap_or_else(|| format!("{} is {}, above the limit {}", v.name, v.measured_text(), v.limit_text()))
}

/// A limit's figures, one per line.
fn figures(v: &Verdict) -> String {
    format!("measured: {}\nlimit: <= {}\nmargin: {}", v.measured_text(), v.limit_text(), v.margin_text())
}

/// The name a report gives how it ended (its JSON's `ended_by`).
fn ended_by_name(e: EndedBy) -> &'static str {
    match e {
        EndedBy::CountReached => "count-reached",
        EndedBy::DurationElapsed => "duration-elapsed",
        EndedBy::Interrupted => "interrupted",
        EndedBy::Failed => "failed",
        EndedBy::StreamEnded => "stream-ended",
    }
}

/// The run's error testcase, as `(type, message)`: `None` when the run
/// completed as asked without an error.
fn run_error(r: &Report) -> Option<(String, String)> {
    if r.complete && r.error.is_none() {
        return None;
    }
    let ended = ended_by_name(r.ended_by);
    let kind = match r.ended_by {
        // Ended as asked, with an error all the same (an output that could
        // not be written, say).
        _ if r.complete => "error",
        // Counted or timed out, yet not as asked (the probe never
        // confirmed Stop, say): no good ending's name on an error.
        EndedBy::CountReached | EndedBy::DurationElapsed => "incomplete",
        _ => ended,
    };
    let how = match r.ended_by {
        EndedBy::Interrupted => "the run was interrupted (a signal stopped it)".to_string(),
        EndedBy::Failed => "the run failed".to_string(),
        EndedBy::StreamEnded => "the replayed stream ended without the probe's Stopped".to_string(),
        EndedBy::CountReached | EndedBy::DurationElapsed if r.complete => {
            format!("the run ended as asked ({ended}) but with an error")
        }
        EndedBy::CountReached | EndedBy::DurationElapsed => {
            format!("the run did not complete as asked (ended by {ended})")
        }
    };
    let taken = format!("{} samples taken", r.counts.samples);
    let message = match &r.error {
        Some(e) => format!("{how}, {taken}: {e}"),
        None => format!("{how}, {taken}"),
    };
    Some((kind.to_string(), message))
}

/// The run testcase's text: how it ended and what it took.
fn run_detail(r: &Report) -> String {
    let c = &r.counts;
    let mut s = format!(
        "ended_by: {}\ncomplete: {}\nsamples: {} ({} responses, {} timeouts above {}), lost: {}, late: {}",
        ended_by_name(r.ended_by),
        r.complete,
        c.samples,
        c.responses,
        c.timeouts,
        format_ns(r.latency_ns.as_ref().map_or(r.config.timeout_ns, |l| l.censored_above)),
        c.lost,
        c.late_responses
    );
    if let Some(e) = &r.error {
        let _ = write!(s, "\nerror: {e}");
    }
    if !r.verdicts.is_empty() && !r.complete {
        s.push_str("\nthe limits were judged on the samples taken before the run ended");
    }
    s
}

/// Seconds with three decimals (the schema's `SUREFIRE_TIME`).
fn suite_time(r: &Report) -> Option<String> {
    if let Some(ns) = r.probe_elapsed_ns {
        return Some(decimal(ns, 1_000_000_000, 3));
    }
    let start = crate::timefmt::parse_rfc3339_ms(&r.started_at)?;
    let end = crate::timefmt::parse_rfc3339_ms(&r.ended_at)?;
    let ms = u64::try_from(end.checked_sub(start)?).ok()?;
    Some(decimal(ms, 1000, 3))
}

/// µs with up to three decimals: exact, to the ns.
fn us(ns: u64) -> String {
    decimal(ns, 1000, 3)
}

/// A latency figure as a property value: `187.3`, `>8000`, or `None` when
/// there is no sample.
fn figure(q: Figure) -> Option<String> {
    match q {
        Figure::Value(v) => Some(us(v)),
        Figure::Above(b) => Some(crate::units::Above(b).us_trimmed(3)),
        Figure::None => None,
    }
}

/// A string of the target metadata at `path`, if there is one.
fn target_str(r: &Report, path: &[&str]) -> Option<String> {
    let mut v = r.target.as_ref()?;
    for k in path {
        v = v.get(k)?;
    }
    v.as_str().filter(|s| !s.is_empty()).map(str::to_owned)
}

/// The testsuite's properties, in order.
fn properties(r: &Report) -> Vec<(String, String)> {
    let mut p: Vec<(String, String)> = Vec::new();
    let mut push = |k: &str, v: String| p.push((k.to_owned(), v));
    let c = &r.config;
    push("latprobe.version", r.tool_version.clone());
    push("mode", c.mode_name().to_owned());
    push("interval_us", us(c.interval_ns));
    push("timeout_us", us(c.timeout_ns));
    push("dither_us", us(c.dither_ns));
    push("stimulus", c.stimulus.clone());
    push("source", r.source.clone());
    if let Some(probe) = &r.probe {
        push("board", probe.hello.board.clone());
        push("firmware", probe.hello.firmware_version.clone());
    }
    push("ended_by", ended_by_name(r.ended_by).to_owned());
    push("complete", r.complete.to_string());
    let n = &r.counts;
    push("samples", n.samples.to_string());
    push("responses", n.responses.to_string());
    push("timeouts", n.timeouts.to_string());
    push("lost", n.lost.to_string());
    push("late", n.late_responses.to_string());
    if let Some(l) = &r.latency_ns {
        push("censored_above_us", us(l.censored_above));
        let figures = std::iter::once(("min", l.min))
            .chain(l.percentiles().map(|(p, v)| (p.name, v)))
            .chain([("max", l.max)]);
        for (name, v) in figures {
            if let Some(f) = figure(l.figure(v)) {
                push(&format!("{name}_us"), f);
            }
        }
    }
    for (name, path) in [
        ("target.hostname", &["hostname"][..]),
        ("target.kernel", &["uname", "release"][..]),
        ("target.preemption", &["preemption", "model"][..]),
    ] {
        if let Some(v) = target_str(r, path) {
            push(name, v);
        }
    }
    p
}

/// Whether XML 1.0 can carry `c` at all (its `Char` production; Rust's
/// `char` already excludes surrogates).
fn xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{FFFD}' | '\u{10000}'..)
}

/// `s` as XML character data.
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            // A literal CR would be read back as a newline.
            '\r' => out.push_str("&#13;"),
            c if xml_char(c) => out.push(c),
            _ => out.push('\u{FFFD}'),
        }
    }
    out
}

/// `s` as a double-quoted attribute value; whitespace other than the
/// space kept as references, which attribute normalisation leaves alone.
fn attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if xml_char(c) => out.push(c),
            _ => out.push('\u{FFFD}'),
        }
    }
    out
}

#[cfg(test)]
mod tests;
