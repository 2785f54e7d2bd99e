//! The parser and the culprit on a real snapshot: `latprobe-responder
//! --trace` on this project's machine (kernel 6.18, 2 CPUs), captured by
//! `responder/tests/trace.rs` with `LATPROBE_KEEP_SNAPSHOT`. The responder
//! (pid 18740) was pinned to CPU 0 at normal priority, a SCHED_FIFO hog
//! (`latprobe-hog`, pid 18744) spun on CPU 0 for 30 ms, the stimulus went
//! out, and the trigger came 5 ms later while the answer was still out.

use super::*;

const SNAPSHOT: &str = include_str!("../../../tests/fixtures/trace/trace-seq-2.txt");
/// The sidecar's `trigger_seen_mono_ns`.
const TRIGGER_NS: u64 = 43_758_181_637_957;

#[test]
fn every_line_of_a_real_snapshot_parses() {
    let s = parse::parse(SNAPSHOT);
    assert_eq!(s.unparsed, 0);
    assert_eq!(s.tracer.as_deref(), Some("nop"));
    // entries-in-buffer in the header.
    assert_eq!(s.events.len(), SNAPSHOT.lines().filter(|l| !l.starts_with('#')).count());
    let seqs: Vec<(u64, Option<u8>)> = s.markers().iter().map(|m| (m.seq, m.id)).collect();
    assert_eq!(seqs, [(0, Some(1)), (1, Some(2)), (2, Some(3))]);
    assert!(s.events.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
}

#[test]
fn the_hog_that_held_the_responders_cpu_is_the_culprit() {
    let a = analyse(SNAPSHOT, Some(TRIGGER_NS), Some(5_000_000), 40);
    let m = a.last_marker.unwrap();
    assert_eq!((m.seq, m.id, m.pid, m.cpu), (2, Some(3), 18740, 0));
    let w = a.window.as_ref().unwrap();
    assert_eq!((w.start_ns, w.end_ns), (TRIGGER_NS - 5_000_000, TRIGGER_NS));
    assert_eq!(w.start_from, "trigger - threshold");
    assert_eq!(a.findings.responder.cpu, Some(0));
    // The byte never reached it: not woken before the trigger.
    assert_eq!(a.findings.responder.woken_ns, None);
    let c = a.findings.culprit.as_ref().unwrap();
    assert_eq!((c.kind.as_str(), c.name.as_str(), c.cpu), ("task", "latprobe-hog (pid 18744)", 0));
    // It ran the whole window and was still running at the trigger.
    assert!(c.open);
    assert_eq!(c.duration_ns, 5_000_000);
    // The responder's CPU comes first in the excerpt; the timer tick that
    // interrupted the hog is in it.
    assert_eq!(a.excerpt[0].cpu, 0);
    assert!(
        a.excerpt[0].lines.iter().any(|l| l.contains("latprobe-hog-18744 hrtimer_expire_entry")),
        "{:?}",
        a.excerpt[0]
    );
    let irqs: Vec<&Holder> = a.findings.holders.iter().filter(|h| h.kind != "task").collect();
    assert!(irqs.iter().all(|h| h.duration_ns < 1_000_000 && h.cpu == 0), "{irqs:?}");
}

#[test]
fn without_a_threshold_the_window_starts_at_the_last_marker() {
    let a = analyse(SNAPSHOT, Some(TRIGGER_NS), None, 10);
    let w = a.window.unwrap();
    assert_eq!(w.start_from, "last marker");
    assert_eq!(w.start_ns, a.last_marker.unwrap().ts_ns);
    assert!(a.excerpt.iter().all(|c| c.lines.len() <= 10));
    assert!(a.excerpt.iter().any(|c| c.omitted > 0));
}

#[test]
fn a_trigger_just_before_the_trace_names_no_culprit() {
    // The trace re-armed 3 ms after the trigger (an earlier snapshot saved
    // meanwhile): the hog that is in it is not this sample's cause.
    let first = super::parse::parse(SNAPSHOT).events.first().unwrap().ts_ns;
    let a = analyse(SNAPSHOT, Some(first - 3_000_000), Some(5_000_000), 40);
    assert_eq!(a.trace_starts_after_trigger_ns, Some(3_000_000));
    assert_eq!(a.findings.culprit, None, "{:?}", a.findings);
    assert!(!a.findings.holders.is_empty(), "what ran later is still listed");
    // At the trigger: named as before.
    let a = analyse(SNAPSHOT, Some(TRIGGER_NS), Some(5_000_000), 40);
    assert_eq!(a.trace_starts_after_trigger_ns, None);
    assert!(a.findings.culprit.is_some());
}

#[test]
fn a_trigger_off_the_traces_axis_is_not_used() {
    // A trace_clock other than mono: the sidecar's time is meaningless here.
    let a = analyse(SNAPSHOT, Some(5), Some(5_000_000), 40);
    assert_eq!(a.window.as_ref().unwrap().end_from, "last event");
    // Before the trace's first event: said, and nothing named as its cause.
    assert!(a.trace_starts_after_trigger_ns.is_some_and(|d| d > 1_000_000_000), "{a:?}");
    assert_eq!(a.findings.culprit, None);
}

#[test]
fn an_irq_still_running_at_the_trigger_is_open_and_clipped() {
    let text = "\
          <idle>-0       [001] d.h1.   10.000100: irq_handler_entry: irq=36 name=virtio1-req.0
          <idle>-0       [001] d.h1.   10.000110: irq_handler_exit: irq=36 ret=handled
 latprobe-respon-7       [001] ...1.   10.000200: tracing_mark_write: latprobe seq=9
          <idle>-0       [001] d.h1.   10.000300: irq_handler_entry: irq=40 name=eth0
          <idle>-0       [001] ..s1.   10.000250: softirq_entry: vec=1 [action=TIMER]
          <idle>-0       [001] ..s1.   10.000280: softirq_exit: vec=1 [action=TIMER]
";
    let a = analyse(text, Some(10_000_900_000), None, 40);
    let c = a.findings.culprit.unwrap();
    assert_eq!(
        (c.kind.as_str(), c.name.as_str(), c.open, c.duration_ns),
        ("irq", "irq 40 eth0", true, 600_000)
    );
    let soft = a.findings.holders.iter().find(|h| h.kind == "softirq").unwrap();
    assert_eq!((soft.name.as_str(), soft.duration_ns), ("softirq TIMER", 30_000));
    // The irq before the last marker is outside the window.
    assert!(!a.findings.holders.iter().any(|h| h.name.contains("virtio1")));
}

/// A task migrated onto an idle CPU whose switch from the idle task the
/// trace lacks (seen on this machine: `migration/0` wakes the hog with
/// target_cpu=001, and CPU 1's next event is already in the hog's
/// context): the events it logs say it holds the CPU, and it is the
/// culprit all the same.
#[test]
fn a_task_whose_switch_in_was_never_logged_still_holds_its_cpu() {
    let text = "\
   latprobe-respon-700    [001] ...1. 100.000050: tracing_mark_write: latprobe seq=7 id=0x08
   latprobe-respon-700    [001] d..2. 100.000100: sched_switch: prev_comm=latprobe-respon prev_pid=700 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
     migration/0-18      [000] d..5. 100.000300: sched_wakeup: comm=latprobe-hog pid=796 prio=120 target_cpu=001
    latprobe-hog-796     [001] d.h.. 100.000500: hrtimer_expire_entry: hrtimer=00000000a0e008bc function=tick_nohz_handler now=100000500000
    latprobe-hog-796     [001] d.h.. 100.000510: hrtimer_expire_exit: hrtimer=00000000a0e008bc
";
    let snap = parse::parse(text);
    assert_eq!(snap.unparsed, 0);
    let f = attribute::analyse(&snap, 100_000_200_000, 100_002_200_000, Some(700));
    assert_eq!(f.responder.cpu, Some(1));
    let c = f.culprit.expect("a culprit");
    assert_eq!((c.kind.as_str(), c.name.as_str(), c.cpu), ("task", "latprobe-hog (pid 796)", 1));
    assert!(c.open);
    assert_eq!((c.start_ns, c.duration_ns), (100_000_500_000, 1_700_000));
}

/// A task switched in under its parent's name (a fork) that then execs is
/// named as it is now (seen here: `timeout` forks `sh`).
#[test]
fn a_task_that_execs_after_its_switch_in_is_named_as_it_is_now() {
    let text = "   latprobe-respon-700    [001] ...1. 100.000050: tracing_mark_write: latprobe seq=7 id=0x08
         timeout-842     [001] d..2. 100.000100: sched_switch: prev_comm=timeout prev_pid=842 prev_prio=49 prev_state=S ==> next_comm=timeout next_pid=843 next_prio=49
              sh-843     [001] d.h.. 100.000900: hrtimer_expire_entry: hrtimer=0000000063f52dd1 function=tick_nohz_handler now=100000900000
              sh-843     [001] d.h.. 100.000910: hrtimer_expire_exit: hrtimer=0000000063f52dd1
";
    let snap = parse::parse(text);
    let f = attribute::analyse(&snap, 100_000_200_000, 100_002_200_000, Some(700));
    let c = f.culprit.expect("a culprit");
    assert_eq!(c.name, "sh (pid 843)");
}
