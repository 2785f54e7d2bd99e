//! Stop and Configure lost on the link: latprobe sends each again once,
//! when the probe said nothing at all after the first, counts it in the
//! report (`counts.host_resends`, a note), and a second loss still ends in
//! the clear error of a silent probe.

mod common;

use std::time::Duration;

use common::*;

/// `latprobe run` against a fake following `script`, for 300 ms.
fn run_against(script: Script) -> (std::process::Output, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let probe = FakeProbe::start(
        dir.path(),
        FakeOpts { script, pace: Duration::from_millis(5), ..FakeOpts::default() },
    );
    let out = dir.path().join("r.json");
    let mut child = latprobe()
        .args(["run", "--port", &probe.port(), "--duration", "300ms", "--silence-timeout", "1s"])
        .args(["-o", out.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let o = wait_with_timeout(&mut child, Duration::from_secs(20));
    let r = json(&out);
    drop(probe);
    (o, r)
}

/// The run resent once and still ended cleanly: exit 0, `duration-elapsed`
/// and complete, one resend counted, and a note that says `note`.
fn assert_resent_once_and_ended_cleanly(o: &std::process::Output, r: &serde_json::Value, note: &str) {
    assert_eq!(o.status.code(), Some(0), "{}", show(o));
    assert_eq!(
        (r["ended_by"].as_str(), r["complete"].as_bool()),
        (Some("duration-elapsed"), Some(true)),
        "{r}"
    );
    assert_eq!(r["counts"]["host_resends"], 1, "{r}");
    assert!(notes(r).contains(note), "{}", notes(r));
}

#[test]
fn a_lost_stop_is_sent_again_and_the_run_ends_cleanly() {
    let (o, r) = run_against(Script::LoseStops(1));
    assert_resent_once_and_ended_cleanly(&o, &r, "sent Stop again");
    assert_counts_add_up(&r);
}

/// The lost Stop of the Nucleo's review: damaged on the way in, so the
/// probe counted a bad frame and went on measuring, heartbeats and all.
/// The old host waited the whole Stop wait and failed ("did not confirm
/// Stop"); the probe's own clock now shows the Stop never arrived, and the
/// second one ends the run cleanly.
#[test]
fn a_lost_stop_is_sent_again_when_the_probe_goes_on_measuring() {
    let (o, r) = run_against(Script::LoseStopsTalking(1));
    assert_resent_once_and_ended_cleanly(&o, &r, "went on measuring");
    assert_counts_add_up(&r);
}

#[test]
fn a_lost_configure_is_sent_again_and_the_run_ends_cleanly() {
    let (o, r) = run_against(Script::LoseConfigures(1));
    assert_resent_once_and_ended_cleanly(&o, &r, "sent Configure again");
}

#[test]
fn two_lost_stops_end_in_the_silent_probe_error() {
    let (o, r) = run_against(Script::LoseStops(2));
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no data from the probe"), "{err}");
    assert_eq!(r["ended_by"].as_str(), Some("failed"), "{r}");
    assert_eq!(r["counts"]["host_resends"], 1, "resent once, not again: {r}");
}

#[test]
fn two_lost_configures_end_in_the_error_of_a_probe_that_does_not_take_the_measurement() {
    let (o, r) = run_against(Script::LoseConfigures(2));
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    // It went quiet after Hello: the silence is named, with its flag
    // (not a bound of the handshake it never hit).
    assert!(
        err.contains("answered Hello but then said nothing for") && err.contains("--silence-timeout"),
        "{err}"
    );
    assert_eq!(r["counts"]["host_resends"], 1, "{r}");
}

#[test]
fn a_normal_run_resends_nothing_and_its_report_has_no_such_field() {
    let (o, r) = run_against(Script::Normal);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(r["counts"].get("host_resends").is_none(), "{r}");
}
