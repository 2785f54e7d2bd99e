//! The trigger's decision against a fake clock: what is armed, when a
//! software board raises it, which samples are flagged, and the races of a
//! hardware compare (an answer just before, at and just after the
//! threshold; the pulse reported around the answer).

use super::*;

const THR: u32 = 200;

fn trig_board() -> BoardInfo {
    BoardInfo::new("test-board", HZ, TimerBits::B32, ALL | Capabilities::TRIGGER).with_arm_lead(LEAD)
}

fn trig_bench(c: Config) -> (Bench, u64) {
    let mut b = Bench::with(trig_board());
    b.configure(c);
    let start = b.start();
    (b, start)
}

fn gpio(count: u64) -> Config {
    Config { trigger_ticks: THR, ..echo(Some(count)) }
}

fn flags(got: &[Got]) -> Vec<bool> {
    samples(got).iter().map(|s| s.triggered).collect()
}

#[test]
fn an_answer_just_before_at_and_after_the_threshold() {
    // Latency 199 and 200 are in time (the trigger is *above* 200); 201 is
    // late: the request's `at` is the first tick past the threshold.
    for (latency, late) in [(199u64, false), (200, false), (201, true)] {
        let (mut b, _) = trig_bench(gpio(1));
        let t = b.fire();
        let req = b.e.trigger_request().expect("armed once the stimulus is out");
        assert_eq!((req.seq, req.at), (0, t + u64::from(THR) + 1));
        assert!(b.e.next_deadline().is_some_and(|d| d <= req.at), "wakes for the trigger");
        // A software board looks at every tick up to the answer.
        let mut raised = None;
        for now in b.now..=t + latency {
            if let Some(seq) = b.e.trigger_due(now) {
                raised.get_or_insert((seq, now));
            }
        }
        if late {
            assert_eq!(raised, Some((0, req.at)), "raised exactly at `at`");
        } else {
            assert_eq!(raised, None, "latency {latency}");
        }
        b.respond(t + latency);
        assert_eq!(b.e.trigger_request(), None, "the answer disarms it");
        assert_eq!(b.e.trigger_due(b.now), None, "each stimulus at most once");
        let got = b.drain();
        assert_eq!(flags(&got), [late], "latency {latency}: {got:?}");
        assert_eq!(b.e.stats().triggers, u64::from(late));
    }
}

#[test]
fn a_late_answer_seen_before_the_software_looked_still_raises_and_flags() {
    // A software board asleep past `at`: the answer is delivered first, its
    // latency is past the threshold, so the trigger is still owed (once).
    // (The run's last sample ends the run: nothing is owed after it, so
    // a software board also looks before it reads its answers.)
    let (mut b, _) = trig_bench(gpio(2));
    let t = b.fire();
    b.respond(t + 350);
    assert_eq!(b.e.trigger_due(b.now), Some(0));
    assert_eq!(b.e.trigger_due(b.now), None);
    let t1 = b.fire();
    b.respond(t1 + 5);
    assert_eq!(flags(&b.drain()), [true, false]);
}

#[test]
fn a_timeout_triggers_and_is_raised_before_it() {
    let (mut b, _) = trig_bench(gpio(1));
    let t = b.fire();
    assert_eq!(b.e.trigger_due(t + u64::from(THR)), None);
    assert_eq!(b.e.trigger_due(t + u64::from(THR) + 1), Some(0));
    b.poll_at(t + 501); // the 500-tick timeout
    let got = b.drain();
    let s = samples(&got);
    assert_eq!((s[0].outcome, s[0].triggered), (Outcome::Timeout, true));
    // Timed out without a software board looking: still flagged, and owed.
    let (mut b, _) = trig_bench(gpio(1));
    let t = b.fire();
    b.poll_at(t + 501);
    assert_eq!(flags(&b.drain()), [true]);
}

#[test]
fn a_hardware_pulse_around_the_answer_and_a_duplicated_capture() {
    // The compare matched (reported first), then the answer's capture,
    // latched one tick before the match, is delivered: the line did rise,
    // so the sample says so, though its latency is in time.
    let (mut b, _) = trig_bench(gpio(3));
    let t = b.fire();
    let req = b.e.trigger_request().unwrap();
    b.now = req.at;
    b.e.on_trigger(req.seq, b.now);
    assert_eq!(b.e.trigger_request(), None, "raised: nothing more to arm");
    b.respond(t + u64::from(THR));
    // A duplicated capture of the same answer: late, no sample, no flag.
    b.respond(t + u64::from(THR) + 3);
    // The next stimulus starts clear; a pulse reported after its sample went
    // out is counted, never pinned on another sample.
    let t1 = b.fire();
    b.respond(t1 + 10);
    b.e.on_trigger(1, b.now);
    let t2 = b.fire();
    b.respond(t2 + 20);
    let got = b.drain();
    assert_eq!(flags(&got), [true, false, false]);
    assert_eq!((b.e.stats().triggers, b.e.stats().late_triggers), (1, 1));
    assert_eq!(stopped(&got).anomalies.late, 1, "the duplicate");
}

#[test]
fn with_identity_the_earliest_unanswered_is_armed_and_a_queued_answer_keeps_its_own_flag() {
    // Stimulus 0 answered late (past the threshold), 1 and 2 on time but
    // queued behind it; 3 never answered.
    let c = Config { trigger_ticks: THR, timeout_ticks: 2500, ..identified(Some(4)) };
    let (mut b, _) = trig_bench(c);
    let mut sent = Vec::new();
    for _ in 0..3 {
        sent.push(b.fire_byte());
        // Answers are later than an interval here: the first stays armed.
        assert_eq!(b.e.trigger_request().map(|r| r.seq), Some(0));
    }
    let (t0, b0) = sent[0];
    // 0 is late at t0 + 201, before 1 and 2 were even sent (1000 apart).
    assert_eq!(b.e.trigger_due(b.now), Some(0));
    assert_eq!(b.e.trigger_request().map(|r| r.seq), Some(1));
    let (t1, b1) = sent[1];
    let (t2, b2) = sent[2];
    b.answer(t2 + 50, b0); // 0: latency 2050 > 200
    b.answer(t2 + 60, b1); // 1: latency 1060 > 200
                           // 1's trigger had passed unanswered too; 2 answers in time.
    assert_eq!(b.e.trigger_due(b.now), Some(1));
    b.answer(t2 + 70, b2);
    assert_eq!(b.e.trigger_due(b.now), None);
    let (t3, _) = b.fire_byte();
    assert_eq!(b.e.trigger_request().map(|r| (r.seq, r.at)), Some((3, t3 + 201)));
    b.poll_at(t3 + 2501);
    let got = [b.drain(), b.drain()].concat();
    let s = samples(&got);
    let lat: Vec<(Outcome, bool)> = s.iter().map(|s| (s.outcome, s.triggered)).collect();
    assert_eq!(
        lat,
        [
            (Outcome::Response((t2 + 50 - t0) as u32), true),
            (Outcome::Response((t2 + 60 - t1) as u32), true),
            (Outcome::Response(70), false),
            (Outcome::Timeout, true),
        ]
    );
    // Duplicate of 2's answer after the run: no change to any flag.
    assert_eq!(stopped(&got).taken, 4);
}

#[test]
fn no_threshold_no_trigger_and_a_board_without_one_refuses_it() {
    let mut b = bench();
    b.configure(echo(Some(1)));
    b.start();
    let t = b.fire();
    assert_eq!(b.e.trigger_request(), None);
    assert_eq!(b.e.trigger_due(t + 400), None);
    b.poll_at(t + 501);
    assert_eq!(flags(&b.drain()), [false]);
    let mut b = bench();
    let got = b.ask(&HostMsg::Configure(gpio(1)));
    assert!(matches!(got.as_slice(), [Got::Error(ErrorCode::NoTrigger, _)]), "{got:?}");
}
