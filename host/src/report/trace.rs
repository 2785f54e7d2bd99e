//! The report's trace section: the responder's snapshots (`--trace`) read
//! from the directory beside the report, each tied to its sample, with the
//! excerpt and the heuristic culprit of [`crate::analysis::trace`], and its
//! lines in the text summary and the HTML.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Report;
use crate::analysis::trace::{analyse, Holder, SnapshotAnalysis};
use crate::model::TraceSource;
use crate::units::format_ns;

/// Lines per CPU kept in the report (the snapshot file has all of them).
pub const EXCERPT_LINES: usize = 40;

/// What every attribution is.
pub const HEURISTIC_NOTE: &str = "heuristic (in the spirit of rtla's auto-analysis): the longest irq \
    handler, softirq, timer callback or other task on the responder's CPU inside the window; it names \
    what held the CPU, not why";

/// The `trace` section of a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceSection {
    /// Where the snapshots are, as given to the responder.
    pub dir: String,
    /// From the responder's metadata: tracing was armed.
    pub enabled: Option<bool>,
    /// Why not.
    pub reason: Option<String>,
    pub triggers: Option<u64>,
    /// Of them, those that came while a snapshot was being saved (counted
    /// for the numbering, not traced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triggers_while_saving: Option<u64>,
    /// Trigger seen → `tracing_on` written, each trigger, ns.
    pub stop_latencies_ns: Vec<u64>,
    /// The marker's write(2) after each answer: mean and max, ns.
    pub marker_mean_ns: Option<u64>,
    pub marker_max_ns: Option<u64>,
    pub snapshots: Vec<SnapshotReport>,
    pub note: String,
    /// Who stopped the trace: `probe` (its trigger line) or `host`
    /// (latprobe, when the flagged sample arrived: `--trace-stop host`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
    /// Host stop: how many stops latprobe sent (flagged samples arriving
    /// within 10 ms of a stop shared it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_stops: Option<u64>,
}

/// One snapshot, tied to its sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotReport {
    /// `trace-seq-N.txt`, in `dir`.
    pub file: String,
    pub sidecar: Option<String>,
    /// Its trigger's number in the run, from 1.
    pub trigger: Option<u64>,
    pub stop_latency_ns: Option<u64>,
    /// GPIO: the kernel's edge timestamp → `tracing_on` written.
    pub edge_to_stop_ns: Option<u64>,
    pub trigger_mono_ns: Option<u64>,
    /// The marker before the trigger (the last answer before the late one).
    pub last_marker_seq: Option<u64>,
    /// The late answer's place among the answers: `last_marker_seq + 1`.
    pub answer: Option<u64>,
    /// The probe's sample of it, where the run lets it be told (no
    /// timeouts or lost samples before it): its seq and latency (`null`
    /// latency: a timeout).
    pub sample_seq: Option<u64>,
    pub sample_latency_ns: Option<u64>,
    pub tie: String,
    pub analysis: Option<SnapshotAnalysis>,
    pub error: Option<String>,
    /// The trigger's moment on the trace clock, estimated from the late
    /// answer's marker: `marker − (latency − threshold)` (the marker is
    /// written a few µs after the answer, so this is a little late).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_estimated_mono_ns: Option<u64>,
    /// From that moment to `tracing_on` written: the whole stop path
    /// (wire: the edge, the thread's wake-up and the write; host: the
    /// rest of the answer's lateness, the batch, the link, SSH).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_to_stop_ns: Option<u64>,
}

/// Read the snapshots of `src` for `r` (its counts and worst samples tie
/// them to samples; its `target` holds the responder's trace section).
pub fn load(src: &TraceSource, r: &Report) -> TraceSection {
    let dir = Path::new(&src.dir);
    let at_exit: Option<serde_json::Value> = src
        .meta
        .as_ref()
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|m| m.get("trace").cloned());
    let meta = at_exit.as_ref().or_else(|| r.target.as_ref().and_then(|t| t.get("trace")));
    let get_u64 = |k: &str| meta.and_then(|m| m.get(k)).and_then(serde_json::Value::as_u64);
    let mut section = TraceSection {
        dir: src.dir.clone(),
        enabled: meta.and_then(|m| m.get("enabled")).and_then(serde_json::Value::as_bool),
        reason: meta.and_then(|m| m.get("reason")).and_then(|v| v.as_str()).map(str::to_string),
        triggers: get_u64("triggers"),
        triggers_while_saving: get_u64("triggers_while_saving").filter(|&n| n > 0),
        stop_latencies_ns: meta
            .and_then(|m| m.get("stop_latencies_ns"))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default(),
        marker_mean_ns: get_u64("marker_mean_ns"),
        marker_max_ns: get_u64("marker_max_ns"),
        snapshots: Vec::new(),
        note: HEURISTIC_NOTE.to_string(),
        stop: src.stop.clone(),
        host_stops: None,
    };
    let mut sidecars: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("trace-seq-"))
        })
        .collect();
    sidecars.sort();
    // --trace-stop host: the sample of each stop latprobe sent, in order.
    let host_stops: Option<Vec<u64>> = std::fs::read_to_string(dir.join(crate::target::stop::STOPS_FILE))
        .ok()
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect());
    section.host_stops = host_stops.as_ref().map(|v| v.len() as u64);
    let by = Tie { host_stop: src.stop.as_deref() == Some("host"), stops: host_stops.as_deref() };
    for side in sidecars {
        section.snapshots.push(snapshot(&side, src.threshold_ns, &by, r));
    }
    section.snapshots.sort_by_key(|s| s.trigger);
    if section.stop_latencies_ns.is_empty() {
        section.stop_latencies_ns = section.snapshots.iter().filter_map(|s| s.stop_latency_ns).collect();
    }
    section
}

/// How a run's snapshots are tied to samples.
struct Tie<'a> {
    /// `--trace-stop host`.
    host_stop: bool,
    /// The sample of each stop latprobe sent (host stop).
    stops: Option<&'a [u64]>,
}

fn snapshot(side: &Path, threshold_ns: Option<u64>, by: &Tie<'_>, r: &Report) -> SnapshotReport {
    let host_stop = by.host_stop;
    let v: serde_json::Value =
        std::fs::read(side).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
    let u = |k: &str| v.get(k).and_then(serde_json::Value::as_u64);
    let file = v.get("file").and_then(|f| f.as_str()).map_or_else(
        || side.with_extension("txt").file_name().unwrap_or_default().to_string_lossy().into(),
        str::to_string,
    );
    let text = std::fs::read_to_string(side.with_file_name(&file));
    let trigger_mono_ns =
        u("trigger_seen_mono_ns").filter(|_| v.get("trace_clock").and_then(|c| c.as_str()) == Some("mono"));
    // The host's stop comes well after the trigger: the window is set once
    // the sample is known (below); the probe's is at the trigger.
    let first_trigger = if host_stop { None } else { trigger_mono_ns };
    let (mut analysis, error) = match &text {
        Ok(t) => (Some(analyse(t, first_trigger, threshold_ns, EXCERPT_LINES)), None),
        Err(e) => (None, Some(format!("cannot read {file}: {e}"))),
    };
    let last_marker_seq =
        u("last_marker_seq").or_else(|| analysis.as_ref().and_then(|a| a.last_marker.map(|m| m.seq)));
    let answer = last_marker_seq.map_or(Some(0), |s| Some(s + 1));
    let latency_of = |seq: Option<u64>| {
        r.tail.as_ref().and_then(|t| {
            let d = &t.samples;
            d.seq.iter().position(|&s| Some(s) == seq).and_then(|i| d.latency_ns.get(i).copied().flatten())
        })
    };
    // The k-th trigger the target saw is the k-th sample the probe flagged
    // (triggers rise in the order of their stimuli, one byte or edge each).
    // With the host's stop, the k-th stop latprobe sent (bursts shared one).
    let seqs = by.stops.unwrap_or(&r.counts.triggered_seqs);
    let by_trigger = u("trigger").and_then(|k| seqs.get(usize::try_from(k).ok()?.checked_sub(1)?));
    // Else: answer k is sample k only when every sample before it was answered.
    let (sample_seq, sample_latency_ns, tie) = if let Some(&seq) = by_trigger {
        (
            Some(seq),
            latency_of(Some(seq)),
            if by.stops.is_some() {
                format!(
                    "by the trigger: the target's trigger {} is latprobe's stop {} (its sample in {})",
                    u("trigger").unwrap_or(0),
                    u("trigger").unwrap_or(0),
                    crate::target::stop::STOPS_FILE
                )
            } else {
                format!(
                    "by the trigger: the target's trigger {} is the probe's triggered sample {} in order",
                    u("trigger").unwrap_or(0),
                    u("trigger").unwrap_or(0)
                )
            },
        )
    } else if r.counts.timeouts == 0 && r.counts.lost == 0 {
        let seq = answer;
        (
            seq,
            latency_of(seq),
            "by the marker's seq: every sample before it was answered, so answer k is sample k".to_string(),
        )
    } else {
        (
            None,
            None,
            format!(
                "answer {} after the marker's seq; the run had {} timeouts and {} lost samples, so its sample \
                 cannot be told by count alone",
                answer.unwrap_or(0),
                r.counts.timeouts,
                r.counts.lost
            ),
        )
    };
    // The trigger's moment, from the late answer's own marker (its seq is
    // the sample's when every answer before it came: the tie above).
    let estimated = match (&text, sample_seq, sample_latency_ns, threshold_ns) {
        (Ok(t), Some(seq), Some(lat), Some(thr)) if lat > thr && trigger_mono_ns.is_some() => {
            crate::analysis::trace::parse::parse(t)
                .markers()
                .iter()
                .find(|m| m.seq == seq)
                .map(|m| m.ts_ns.saturating_sub(lat - thr))
        }
        _ => None,
    };
    let stopped_at = trigger_mono_ns.zip(u("stop_latency_ns")).map(|(a, b)| a + b);
    let trigger_to_stop_ns = estimated.zip(stopped_at).and_then(|(t, s)| s.checked_sub(t));
    if host_stop {
        if let Ok(t) = &text {
            analysis = Some(analyse(t, estimated, threshold_ns, EXCERPT_LINES));
        }
    }
    SnapshotReport {
        trigger_estimated_mono_ns: estimated,
        trigger_to_stop_ns,
        file,
        sidecar: side.file_name().map(|n| n.to_string_lossy().into_owned()),
        trigger: u("trigger"),
        stop_latency_ns: u("stop_latency_ns"),
        edge_to_stop_ns: u("edge_to_stop_ns"),
        trigger_mono_ns,
        last_marker_seq,
        answer,
        sample_seq,
        sample_latency_ns,
        tie,
        analysis,
        error,
    }
}

fn holder_line(h: &Holder) -> String {
    // irq and softirq names say their kind already.
    let what = match h.kind.as_str() {
        "task" => format!("task {}", h.name),
        "hrtimer" => format!("timer {}", h.name),
        _ => h.name.clone(),
    };
    format!(
        "{} on CPU {} for {}{}",
        what,
        h.cpu,
        format_ns(h.duration_ns),
        if h.open { ", still running at the trigger" } else { "" }
    )
}

/// The summary's lines: per snapshot, the tie, the culprit and the excerpt.
pub fn text(t: &TraceSection, excerpt_lines: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\nTarget trace (--trace), snapshots in {}:", t.dir);
    if t.enabled == Some(false) {
        let _ = writeln!(s, "  untraced: {}", t.reason.as_deref().unwrap_or("tracing could not be armed"));
    }
    let stops: Vec<String> = t.stop_latencies_ns.iter().map(|&n| format_ns(n)).collect();
    let _ = writeln!(
        s,
        "  {} triggers{}, {} snapshots; trigger seen to tracing_on 0: {}",
        t.triggers.unwrap_or(t.snapshots.len() as u64),
        t.triggers_while_saving
            .map_or(String::new(), |n| format!(" ({n} while a snapshot was saved: untraced)")),
        t.snapshots.len(),
        if stops.is_empty() { "-".to_string() } else { stops.join(", ") }
    );
    let whole: Vec<String> = t.snapshots.iter().filter_map(|x| x.trigger_to_stop_ns).map(format_ns).collect();
    if t.stop.as_deref() == Some("host") {
        let _ = writeln!(
            s,
            "  stopped by latprobe (--trace-stop host) when a flagged sample arrived{}; threshold to stop: {}",
            match t.host_stops {
                None => String::new(),
                Some(0) => " (no flagged sample arrived: no stop)".to_string(),
                Some(n) => format!(" ({n} stops; flagged samples within 10 ms of a stop shared it)"),
            },
            if whole.is_empty() { "- (no answered sample to time it by)".to_string() } else { whole.join(", ") }
        );
    } else if !whole.is_empty() {
        let _ = writeln!(s, "  threshold to stop, by the late answer's marker: {}", whole.join(", "));
    }
    if let (Some(mean), Some(max)) = (t.marker_mean_ns, t.marker_max_ns) {
        let _ =
            writeln!(s, "  trace marker after each answer: {} mean, {} max", format_ns(mean), format_ns(max));
    }
    for snap in &t.snapshots {
        let _ = write!(s, "  {}", snap.file);
        if let Some(q) = snap.sample_seq {
            let _ = write!(s, ": sample {q}");
            if let Some(l) = snap.sample_latency_ns {
                let _ = write!(s, " ({})", format_ns(l));
            }
        } else if let Some(a) = snap.answer {
            let _ = write!(s, ": answer {a}");
        }
        if let Some(n) = snap.stop_latency_ns {
            let _ = write!(s, ", stopped {} after the trigger", format_ns(n));
        }
        s.push('\n');
        if let Some(e) = &snap.error {
            let _ = writeln!(s, "    {e}");
            continue;
        }
        let Some(a) = &snap.analysis else { continue };
        if let Some(w) = &a.window {
            let _ = writeln!(
                s,
                "    window {} ({} to {}), {} events in the snapshot",
                format_ns(w.end_ns - w.start_ns),
                w.start_from,
                w.end_from,
                a.events
            );
        }
        let r = &a.findings.responder;
        match (r.woken_ns, r.ran_ns) {
            (None, _) => {
                let _ = writeln!(s, "    the responder was not woken in the window");
            }
            (Some(_), None) => {
                let _ = writeln!(s, "    the responder was woken but did not run before the trigger");
            }
            (Some(w), Some(ran)) => {
                let _ = writeln!(s, "    the responder was woken, and ran {} later", format_ns(ran - w));
            }
        }
        match &a.findings.culprit {
            _ if a.trace_starts_after_trigger_ns.is_some() => {
                let _ = writeln!(
                    s,
                    "    likely culprit: not in this snapshot: the trace starts {} after this sample's trigger \
                     (re-armed once an earlier snapshot was saved, or the ring buffer overwrote the window: \
                     --trace-buffer-kb)",
                    format_ns(a.trace_starts_after_trigger_ns.unwrap_or(0))
                );
            }
            Some(c) => {
                let _ = writeln!(s, "    likely culprit (heuristic): {}", holder_line(c));
                for h in a.findings.holders.iter().skip(1).take(3) {
                    let _ = writeln!(s, "      then: {}", holder_line(h));
                }
            }
            None => {
                let _ = writeln!(s, "    likely culprit (heuristic): nothing held the CPU in the window");
            }
        }
        for cpu in &a.excerpt {
            let _ = writeln!(s, "    CPU {}:", cpu.cpu);
            let skip = cpu.lines.len().saturating_sub(excerpt_lines);
            let earlier = cpu.omitted + skip;
            if earlier > 0 {
                let _ = writeln!(s, "      … {earlier} earlier in {}", snap.file);
            }
            for l in cpu.lines.iter().skip(skip) {
                let _ = writeln!(s, "      {l}");
            }
        }
    }
    s
}

/// The HTML section.
pub fn html(h: &mut String, t: &TraceSection) {
    use super::html::esc;
    h.push_str("<h2 id=\"trace\">Target trace</h2>\n");
    let _ = writeln!(h, "<p class=\"note\">Likely culprits are a {}.</p>", esc(HEURISTIC_NOTE));
    let _ = writeln!(h, "<pre>{}</pre>", esc(&text(t, EXCERPT_LINES)));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The snapshots in `dir`, a 5 ms threshold.
    fn source(dir: &Path) -> TraceSource {
        TraceSource { dir: dir.display().to_string(), threshold_ns: Some(5_000_000), meta: None, stop: None }
    }

    #[test]
    fn a_snapshot_beside_the_report_is_tied_read_and_shown() {
        let dir = tempfile::tempdir().unwrap();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/trace");
        for f in ["trace-seq-2.txt", "trace-seq-2.json"] {
            std::fs::copy(fixtures.join(f), dir.path().join(f)).unwrap();
        }
        let mut r = super::super::testkit::run(0);
        let src = source(dir.path());
        let t = load(&src, &r);
        assert_eq!(t.snapshots.len(), 1);
        let s = &t.snapshots[0];
        assert_eq!((s.last_marker_seq, s.answer, s.sample_seq), (Some(2), Some(3), Some(3)));
        assert_eq!(s.stop_latency_ns, Some(22_402));
        let c = s.analysis.as_ref().unwrap().findings.culprit.as_ref().unwrap();
        assert_eq!(c.name, "latprobe-hog (pid 18744)");
        let out = text(&t, 5);
        assert!(out.contains("trace-seq-2.txt: sample 3"), "{out}");
        assert!(
            out.contains("likely culprit (heuristic): task latprobe-hog (pid 18744) on CPU 0 for 5"),
            "{out}"
        );
        assert!(out.contains("the responder was not woken in the window"), "{out}");
        assert!(out.contains("earlier in trace-seq-2.txt"), "{out}");
        // The last lines before the trigger: the trigger thread's wake-up on CPU 1.
        assert!(out.contains("sched_wakeup: comm=trace-trigger"), "{out}");
        // With timeouts, the sample is not guessed.
        r.counts.timeouts = 1;
        let t = load(&src, &r);
        assert_eq!(t.snapshots[0].sample_seq, None);
        assert!(t.snapshots[0].tie.contains("1 timeouts"));
    }

    /// A trigger 3 ms before the snapshot's first event (the trace re-armed
    /// after it): said in the summary, and the hog that ran later is not
    /// named as its cause.
    #[test]
    fn a_snapshot_that_starts_after_its_trigger_names_no_culprit() {
        let dir = tempfile::tempdir().unwrap();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/trace");
        let txt = std::fs::read_to_string(fixtures.join("trace-seq-2.txt")).unwrap();
        std::fs::write(dir.path().join("trace-seq-2.txt"), &txt).unwrap();
        let first = crate::analysis::trace::parse::parse(&txt).events[0].ts_ns;
        let mut side: serde_json::Value =
            serde_json::from_slice(&std::fs::read(fixtures.join("trace-seq-2.json")).unwrap()).unwrap();
        side["trigger_seen_mono_ns"] = (first - 3_000_000).into();
        std::fs::write(dir.path().join("trace-seq-2.json"), side.to_string()).unwrap();
        let r = super::super::testkit::run(0);
        let src = source(dir.path());
        let t = load(&src, &r);
        let a = t.snapshots[0].analysis.as_ref().unwrap();
        assert_eq!(a.trace_starts_after_trigger_ns, Some(3_000_000));
        assert_eq!(a.findings.culprit, None);
        let out = text(&t, 5);
        let said = format!(
            "likely culprit: not in this snapshot: the trace starts {} after this sample's trigger",
            format_ns(3_000_000)
        );
        assert!(out.contains(&said), "{out}");
        assert!(!out.contains("likely culprit (heuristic)"), "{out}");
    }
}
