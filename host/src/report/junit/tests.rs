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
    assert_eq!(p.cases[0].4, "the run did not complete as asked (ended by count-reached), 300 samples taken");
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
