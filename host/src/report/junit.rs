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
//!   (README, "The tail is measured, never cut off"). Without any sample the
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
        Figure::Above(b) => Some(format!(">{}", us(b))),
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
        for (name, v) in [
            ("min_us", l.min),
            ("p50_us", l.p50),
            ("p90_us", l.p90),
            ("p99_us", l.p99),
            ("p99.9_us", l.p99_9),
            ("p99.99_us", l.p99_99),
            ("max_us", l.max),
        ] {
            if let Some(f) = figure(l.figure(v)) {
                push(name, f);
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
mod tests {
    use super::*;
    use crate::report::testkit::{failed, interrupted, judged, run, HOSTILE, MET, VIOLATED};

    /// What a parsed document says.
    struct Parsed {
        suites: (usize, usize, usize),
        suite: (usize, usize, usize, usize),
        props: Vec<(String, String)>,
        /// `(classname, name, kind, type, message, body)`, kind being
        /// `pass`, `failure` or `error`.
        cases: Vec<(String, String, String, String, String, String)>,
        notes: Option<String>,
        time: Option<String>,
        hostname: Option<String>,
    }

    fn el<'a, 'i>(n: roxmltree::Node<'a, 'i>, name: &str) -> Vec<roxmltree::Node<'a, 'i>> {
        n.children().filter(|c| c.has_tag_name(name)).collect()
    }

    fn num(n: roxmltree::Node, a: &str) -> usize {
        n.attribute(a).unwrap_or_else(|| panic!("no {a}")).parse().unwrap()
    }

    fn parse(xml: &str) -> Parsed {
        let doc = roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "testsuites");
        let suites: Vec<_> = root.children().filter(|n| n.is_element()).collect();
        assert_eq!(suites.len(), 1, "one testsuite per run");
        let ts = suites[0];
        assert_eq!(ts.tag_name().name(), "testsuite");
        let props = el(ts, "properties")
            .iter()
            .flat_map(|p| el(*p, "property"))
            .map(|p| (p.attribute("name").unwrap().to_owned(), p.attribute("value").unwrap().to_owned()))
            .collect();
        let cases = el(ts, "testcase")
            .iter()
            .map(|c| {
                let outcome = c.children().find(|n| n.has_tag_name("failure") || n.has_tag_name("error"));
                let out = el(*c, "system-out").first().and_then(|n| n.text()).unwrap_or("").to_owned();
                let (kind, ty, msg, body) = match outcome {
                    Some(o) => (
                        o.tag_name().name().to_owned(),
                        o.attribute("type").unwrap_or("").to_owned(),
                        o.attribute("message").unwrap_or("").to_owned(),
                        o.text().unwrap_or("").to_owned(),
                    ),
                    None => ("pass".into(), String::new(), String::new(), out),
                };
                (
                    c.attribute("classname").unwrap().to_owned(),
                    c.attribute("name").unwrap().to_owned(),
                    kind,
                    ty,
                    msg,
                    body,
                )
            })
            .collect();
        Parsed {
            suites: (num(root, "tests"), num(root, "failures"), num(root, "errors")),
            suite: (num(ts, "tests"), num(ts, "failures"), num(ts, "errors"), num(ts, "skipped")),
            props,
            cases,
            notes: el(ts, "system-out").first().and_then(|n| n.text()).map(str::to_owned),
            time: ts.attribute("time").map(str::to_owned),
            hostname: ts.attribute("hostname").map(str::to_owned),
        }
    }

    fn prop<'a>(p: &'a Parsed, name: &str) -> Option<&'a str> {
        p.props.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The counts agree with the testcases, at both levels.
    fn counts_agree(p: &Parsed) {
        let failures = p.cases.iter().filter(|c| c.2 == "failure").count();
        let errors = p.cases.iter().filter(|c| c.2 == "error").count();
        assert_eq!(p.suite, (p.cases.len(), failures, errors, 0));
        assert_eq!(p.suites, (p.cases.len(), failures, errors));
    }

    #[test]
    fn a_passing_run_has_a_passing_case_per_limit_and_its_figures() {
        let p = parse(&render(&judged(run(0), MET)));
        counts_agree(&p);
        assert_eq!(p.suite, (7, 0, 0, 0));
        let names: Vec<_> = p.cases.iter().map(|c| (c.0.as_str(), c.1.as_str(), c.2.as_str())).collect();
        assert_eq!(
            names,
            [
                ("latprobe.run", "run", "pass"),
                ("latprobe.limits", "max <= 200us", "pass"),
                ("latprobe.limits", "p99 <= 180us", "pass"),
                ("latprobe.limits", "p99.9 <= 190us", "pass"),
                ("latprobe.limits", "timeouts <= 0", "pass"),
                ("latprobe.limits", "lost <= 0", "pass"),
                ("latprobe.limits", "late <= 0", "pass"),
            ][..]
        );
        assert_eq!(p.cases[1].5, "measured: 159.5us\nlimit: <= 200us\nmargin: +40.5us");
        assert!(
            p.cases[0].5.contains("ended_by: count-reached\ncomplete: true\nsamples: 300"),
            "{}",
            p.cases[0].5
        );
        assert_eq!(p.time.as_deref(), Some("0.3"));
        assert_eq!(p.hostname.as_deref(), Some("rt-board"));
        for (k, v) in [
            ("mode", "uart-echo"),
            ("interval_us", "1000"),
            ("timeout_us", "8000"),
            ("board", "nucleo-f411re"),
            ("firmware", "0.1.0"),
            ("samples", "300"),
            ("timeouts", "0"),
            ("min_us", "10"),
            ("p50_us", "84.5"),
            ("p99_us", "158"),
            ("max_us", "159.5"),
            ("target.kernel", "6.6.21-rt26"),
            ("target.preemption", "PREEMPT_RT"),
        ] {
            assert_eq!(prop(&p, k), Some(v), "{k}");
        }
        assert_eq!(p.notes, None);
    }

    #[test]
    fn violated_limits_fail_with_their_texts_and_censored_figures_stay_above_the_timeout() {
        let r = judged(run(10), VIOLATED);
        let xml = render(&r);
        let p = parse(&xml);
        counts_agree(&p);
        // max, p50, p99.9, timeouts and late violated; p90 and lost met.
        assert_eq!(p.suite, (8, 5, 0, 0));
        let failed: Vec<&str> = p.cases.iter().filter(|c| c.2 == "failure").map(|c| c.1.as_str()).collect();
        assert_eq!(failed, ["max <= 200us", "p50 <= 50us", "p99.9 <= 100us", "timeouts <= 0", "late <= 5"]);
        for c in p.cases.iter().filter(|c| c.2 == "failure") {
            assert_eq!(c.3, "threshold");
            let v = r.verdicts.iter().find(|v| case_name(v) == c.1).unwrap();
            assert_eq!(c.4, v.why.clone().unwrap());
            assert!(c.5.starts_with(&c.4), "{}", c.5);
            assert!(c.5.contains(&format!("measured: {}\n", v.measured_text())), "{}", c.5);
            assert!(c.5.contains(&format!("limit: <= {}\n", v.limit_text())), "{}", c.5);
            assert!(c.5.ends_with(&format!("margin: {}", v.margin_text())), "{}", c.5);
        }
        // The censored percentile: above the timeout, never a number.
        let p999 = p.cases.iter().find(|c| c.1 == "p99.9 <= 100us").unwrap();
        assert_eq!(p999.4, "p99.9 falls among the 10 timeouts: above 8ms, so above the limit 100us");
        assert!(p999.5.contains("measured: >8ms\n") && p999.5.ends_with("margin: -"), "{}", p999.5);
        let p50 = p.cases.iter().find(|c| c.1 == "p50 <= 50us").unwrap();
        assert!(p50.5.contains("measured: 84.5us\n") && p50.5.ends_with("margin: -34.5us"), "{}", p50.5);
        for k in ["p99_us", "p99.9_us", "p99.99_us", "max_us"] {
            assert_eq!(prop(&p, k), Some(">8000"), "{k}");
        }
        assert_eq!((prop(&p, "p90_us"), prop(&p, "censored_above_us")), (Some("144.5"), Some("8000")));
        assert_eq!((prop(&p, "timeouts"), prop(&p, "late")), (Some("10"), Some("10")));
        // The run itself completed.
        assert_eq!(p.cases[0].2, "pass");
    }

    #[test]
    fn an_interrupted_run_is_an_error_case_with_its_ending() {
        let p = parse(&render(&judged(interrupted(), MET)));
        counts_agree(&p);
        assert_eq!(p.suite, (7, 0, 1, 0));
        let case = &p.cases[0];
        assert_eq!((case.1.as_str(), case.2.as_str(), case.3.as_str()), ("run", "error", "interrupted"));
        assert_eq!(case.4, "the run was interrupted (a signal stopped it), 300 samples taken");
        assert!(case.5.contains("ended_by: interrupted\ncomplete: false"), "{}", case.5);
        assert!(case.5.contains("judged on the samples taken before the run ended"), "{}", case.5);
        // No probe time: the wall clock's 350 ms.
        assert_eq!(p.time.as_deref(), Some("0.35"));

        // Complete, but not as asked; complete with an error.
        let mut r = run(0);
        r.complete = false;
        let p = parse(&render(&r));
        assert_eq!((p.cases[0].2.as_str(), p.cases[0].3.as_str()), ("error", "incomplete"));
        assert_eq!(
            p.cases[0].4,
            "the run did not complete as asked (ended by count-reached), 300 samples taken"
        );
        let mut r = run(0);
        r.error = Some("cannot write the report out.json (--output): disk full".into());
        let p = parse(&render(&r));
        counts_agree(&p);
        assert_eq!((p.cases[0].2.as_str(), p.cases[0].3.as_str()), ("error", "error"));
        assert_eq!(
            p.cases[0].4,
            "the run ended as asked (count-reached) but with an error, 300 samples taken: cannot write the \
             report out.json (--output): disk full"
        );
    }

    #[test]
    fn a_failed_run_without_limits_still_has_its_error_case_and_hostile_text_survives() {
        let r = failed();
        let xml = render(&r);
        let p = parse(&xml);
        counts_agree(&p);
        assert_eq!(p.suite, (1, 0, 1, 0));
        let run = &p.cases[0];
        assert_eq!((run.0.as_str(), run.2.as_str(), run.3.as_str()), ("latprobe.run", "error", "failed"));
        // What XML can carry comes back exactly (CR and tab too); what it
        // cannot is U+FFFD, one for one.
        let carried: String = HOSTILE.chars().map(|c| if xml_char(c) { c } else { '\u{FFFD}' }).collect();
        assert_eq!(carried.matches('\u{FFFD}').count(), 6);
        assert!(run.4.ends_with(&carried), "{:?}", run.4);
        assert!(run.4.starts_with("the run failed, 300 samples taken: the link to the probe"), "{}", run.4);
        assert!(run.5.contains(&format!("error: the link to the probe on /dev/ttyACM0 closed: {carried}")));
        assert_eq!(p.notes.as_deref(), Some(format!("{carried}\na plain note").as_str()));
        // Nothing raw in the file itself.
        for bad in ['\u{0}', '\u{1b}', '\u{7}', '\u{FFFE}', '\u{FFFF}', '\r'] {
            assert!(!xml.contains(bad), "{bad:?} in the file");
        }
    }

    #[test]
    fn a_complete_run_with_no_limits_has_only_its_run_case() {
        let p = parse(&render(&run(0)));
        counts_agree(&p);
        assert_eq!(p.suite, (1, 0, 0, 0));
        assert_eq!((p.cases[0].1.as_str(), p.cases[0].2.as_str()), ("run", "pass"));
    }

    #[test]
    fn no_sample_and_no_clock_leave_out_what_is_unknown() {
        let mut r = run(0);
        r.latency_ns = None;
        r.counts = crate::report::Counts::default();
        r.probe_elapsed_ns = None;
        r.started_at = "not a time".into();
        r.target = None;
        r.probe = None;
        let r = judged(r, "max = \"1ms\"");
        let xml = render(&r);
        let p = parse(&xml);
        counts_agree(&p);
        assert_eq!(p.suite, (2, 1, 0, 0));
        assert_eq!(p.cases[1].4, "no sample arrived: max cannot be proven within the limit");
        assert_eq!((p.time.as_deref(), p.hostname.as_deref()), (None, None));
        assert!(!xml.contains("timestamp=\"\""));
        for k in ["min_us", "max_us", "board", "target.hostname"] {
            assert_eq!(prop(&p, k), None, "{k}");
        }
    }

    #[test]
    fn escaping_covers_markup_quotes_and_what_xml_forbids() {
        assert_eq!(text("a<b>&c\"'\r\n\t"), "a&lt;b&gt;&amp;c\"'&#13;\n\t");
        assert_eq!(attr("a<b>&c\"'\r\n\t"), "a&lt;b&gt;&amp;c&quot;&apos;&#13;&#10;&#9;");
        assert_eq!(
            text("\u{0}\u{1f}\u{7f}\u{FFFE}\u{FFFF}\u{10000}"),
            "\u{FFFD}\u{FFFD}\u{7f}\u{FFFD}\u{FFFD}\u{10000}"
        );
        assert_eq!(us(8_000_999), "8000.999");
        assert_eq!(us(8_000_000), "8000");
        assert_eq!(us(1_050), "1.05");
    }

    /// Each case rendered, written to a temporary file, and checked with
    /// `xmllint --schema` against the Jenkins xunit plugin's junit-10.xsd.
    #[test]
    fn every_case_validates_against_the_jenkins_junit_schema() {
        let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/junit/junit-10.xsd");
        assert!(xsd.is_file(), "{} is missing", xsd.display());
        let Ok(v) = std::process::Command::new("xmllint").arg("--version").output() else {
            eprintln!(
                "SKIPPED every_case_validates_against_the_jenkins_junit_schema: xmllint is not installed \
                 (apt-get install libxml2-utils); the JUnit output was not validated against {}",
                xsd.display()
            );
            return;
        };
        assert!(v.status.success(), "xmllint --version failed");
        let dir = tempfile::tempdir().unwrap();
        let mut no_limits_no_samples = run(0);
        no_limits_no_samples.latency_ns = None;
        let cases = [
            ("passing", judged(run(0), MET)),
            ("violated-censored", judged(run(10), VIOLATED)),
            ("interrupted", judged(interrupted(), VIOLATED)),
            ("failed-hostile", failed()),
            ("failed-hostile-limits", judged(failed(), VIOLATED)),
            ("no-limits", run(0)),
            ("no-samples", no_limits_no_samples),
        ];
        for (name, r) in cases {
            let path = dir.path().join(format!("{name}.xml"));
            write(&r, &path).unwrap();
            let out = std::process::Command::new("xmllint")
                .arg("--noout")
                .arg("--schema")
                .arg(&xsd)
                .arg(&path)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() && stderr.contains("validates"),
                "{name}: xmllint says\n{stderr}\n{}",
                std::fs::read_to_string(&path).unwrap()
            );
        }
    }

    #[test]
    fn write_names_the_file_and_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("no-such-dir/out.xml");
        let e = write(&run(0), &bad).unwrap_err().to_string();
        assert!(e.contains("out.xml") && e.contains("--junit"), "{e}");
    }
}
