//! A [`Report`] built from a run's state: the figures, the periodic
//! accounting, and the notes that say what they mean.

use super::*;

const PERIODIC_NOTE: &str = "wake-up delays are against the target's own schedule, fitted from its edges \
    on the probe's clock (a lower envelope per block of edges, following drift), so they are free of the \
    target's clock offset; 0 is the earliest edge the fit allows";
const ESTIMATOR: &str = "lower envelope (LP clock-skew fit) per block of edges; each edge given the latest \
    cycle its order allows";
const ZERO: &str = "the earliest edge the fit allows: the target's fastest wake-up plus its write, which \
    the probe cannot see, is in the zero";

/// The stimulus as a report names it.
pub fn stimulus_name(s: Stimulus) -> String {
    match s {
        Stimulus::Identified => "identified (9-byte alphabet)".into(),
        Stimulus::Byte(b) => format!("byte 0x{b:02x}"),
        Stimulus::Edge(e) => format!("edge {}", format!("{e:?}").to_lowercase()),
        Stimulus::None(_) => "none".into(),
    }
}

/// The latency table of `a`: every figure over all samples, censored
/// where it falls among the timeouts; `None` without samples.
pub fn latency_of(a: &crate::analysis::Analysis) -> Option<Latency> {
    (a.samples() > 0).then(|| {
        let [p50, p90, p99, p99_9, p99_99] = PERCENTILES.map(|p| a.quantile(p.q).value());
        Latency {
            measured: a.responses,
            censored: a.timeouts,
            censored_above: a.timeout_ns(),
            min: a.min().value(),
            mean: a.mean_ns(),
            p50,
            p90,
            p99,
            p99_9,
            p99_99,
            max: a.max().value(),
            max_measured: a.max_measured_ns(),
        }
    })
}

/// The schedule view's additions and the service time beside it; `None`
/// when every stimulus went out on its schedule (the two views agree).
pub fn schedule_of(a: &crate::analysis::Analysis) -> Option<ScheduleReport> {
    let v = &a.service;
    if !v.differs() {
        return None;
    }
    let timeout = a.timeout_ns();
    let [p50, p90, p99, p99_9, p99_99] = PERCENTILES.map(|p| v.quantile(p.q, timeout).value());
    let measured = v.hist.len();
    Some(ScheduleReport {
        waited: v.waited,
        omitted: v.omitted,
        omitted_above_timeout: v.omitted_censored,
        omitted_min_ns: (v.omitted_min_ns != u64::MAX).then_some(v.omitted_min_ns),
        longest_gap_ns: v.longest_gap_ns,
        service_ns: Latency {
            measured,
            censored: v.timeouts,
            censored_above: timeout,
            min: (measured > 0).then(|| v.hist.min()),
            mean: (measured > 0).then(|| (v.sum_ns / u128::from(measured)) as u64),
            p50,
            p90,
            p99,
            p99_9,
            p99_99,
            max: (v.timeouts == 0 && measured > 0).then_some(v.max_ns),
            max_measured: (measured > 0).then_some(v.max_ns),
        },
    })
}

/// What the periodic accounting means for the figures.
fn periodic_notes(p: &PeriodicReport, config: &ConfigReport, notes: &mut Vec<String>) {
    let timeout = format_ns(config.timeout_ns);
    if p.missed_periods > 0 {
        notes.push(format!(
            "{} periods had no edge (missed): each is a timeout sample (a delay above {timeout}), never \
             merged into the next cycle's delay",
            p.missed_periods
        ));
    }
    if p.late_edges > 0 {
        notes.push(format!(
            "{} edges came more than the timeout ({timeout}) after their cycle's fitted time: timeout \
             samples, their delay not timed",
            p.late_edges
        ));
    }
    if p.clock_jumps > 0 {
        let first = p.first_clock_jump.as_ref().map_or_else(String::new, |j| {
            format!(" (the first: edge {}, {:.3e} s after the edge before)", j.seq, j.gap_s)
        });
        notes.push(format!(
            "anomaly: {} edges had a tick or sequence number more than a day ({} s of the probe's \
             clock, or as many periods) after the edge before{first}: damaged stamps, no outage a run \
             can have; they are left out like edges lost on the link, not counted as missed periods",
            p.clock_jumps,
            crate::analysis::periodic::MAX_GAP_S
        ));
    }
    if p.fit_conflicts > 0 {
        notes.push(format!(
            "{} edges could not be placed where the fit put them (the schedule jumped, or the target \
             skipped deadlines): the delays around them are uncertain",
            p.fit_conflicts
        ));
    }
    if let Some(f) = &p.fit {
        if f.offset_ppm.abs() > 10_000.0 {
            notes.push(format!(
                "the target's period ({:.0} ns) is {:.1} % off the configured --interval ({}): is \
                 --interval the target's period?",
                f.period_ns,
                -f.offset_ppm / 1e4,
                format_ns(f.nominal_period_ns)
            ));
        }
    }
}

/// The periodic section of `a`.
fn periodic_of(a: Option<&crate::analysis::Analysis>) -> PeriodicReport {
    let e = a.map(|a| &a.edges);
    let fit = a.and_then(|a| a.fit.as_ref());
    let hz = a.map_or(1, |a| a.conv().hz());
    let ns_per_tick = 1e9 / f64::from(hz.max(1));
    let fit_report = fit.and_then(|f| {
        let p = f.period_ticks()?;
        let d = &f.drift;
        Some(FitReport {
            estimator: ESTIMATOR.into(),
            block_edges: crate::analysis::periodic::BLOCK_EDGES as u64,
            nominal_period_ns: (f.nominal_ticks() * ns_per_tick).round() as u64,
            period_ns: p * ns_per_tick,
            offset_ppm: f.offset_ppm().unwrap_or(0.0),
            drift: DriftReport {
                blocks: d.blocks,
                first_ppm: d.first_ppm,
                last_ppm: d.last_ppm,
                min_ppm: d.min_ppm,
                max_ppm: d.max_ppm,
                ppm_per_hour: d.ppm_per_hour(),
            },
            zero: ZERO.into(),
        })
    });
    let naive = fit.filter(|f| !f.naive.is_empty()).map(|f| {
        let h = &f.naive;
        let [p50, p90, p99, p99_9, p99_99] =
            PERCENTILES.map(|p| h.quantile(p.q).map_or(0, |v| (v - h.min) as u64));
        NaiveReport { count: h.len(), p50, p90, p99, p99_9, p99_99, max: (h.max - h.min) as u64 }
    });
    PeriodicReport {
        edges: e.map_or(0, |e| e.edges),
        lost: e.map_or(0, |e| e.seq.lost),
        duplicates: e.map_or(0, |e| e.seq.duplicates),
        intervals: e.filter(|e| e.intervals > 0).map(|e| IntervalReport {
            count: e.intervals,
            min_ns: e.min_ns,
            max_ns: e.max_ns,
            mean_ns: (e.sum_ns / u128::from(e.intervals)) as u64,
        }),
        fit: fit_report,
        cycles: a.map_or(0, |a| a.samples()) + fit.map_or(0, |f| f.lost),
        missed_periods: fit.map_or(0, |f| f.missed),
        late_edges: a.map_or(0, |a| a.late_edges),
        fit_conflicts: fit.map_or(0, |f| f.conflicts),
        out_of_order: fit.map_or(0, |f| f.out_of_order),
        clock_jumps: fit.map_or(0, |f| f.clock_jumps),
        first_clock_jump: fit
            .and_then(|f| f.first_jump)
            .map(|(seq, gap)| ClockJump { seq, gap_s: gap as f64 * ns_per_tick / 1e9 }),
        naive,
        target_log: None,
        note: PERIODIC_NOTE.into(),
    }
}

/// The notes the counts call for: what the anomalies mean for the figures.
fn anomaly_notes(
    c: &Counts,
    config: &ConfigReport,
    echo: bool,
    schedule: Option<&ScheduleReport>,
    notes: &mut Vec<String>,
) {
    let timeout = format_ns(config.timeout_ns);
    if echo && !config.identity && config.stimulus.starts_with("byte") {
        notes.push(format!(
            "identity is off ({}, fixed): one stimulus in flight at a time, and an answer later than the \
             timeout ({timeout}) cannot be told from the next one's: it is counted late, never timed; \
             leave --byte out to time late answers up to 9 intervals",
            config.stimulus
        ));
    }
    if c.late_responses > 0 {
        notes.push(format!(
            "{} late answers (after their stimulus's timeout of {timeout}, with none outstanding, or faster \
             than the line allows) were counted, not timed: a stimulus whose answer came after its timeout \
             is a timeout sample, a latency above {timeout}",
            c.late_responses
        ));
    }
    if let Some(sc) = schedule.filter(|sc| sc.waited < c.slipped) {
        // The rest of the slips were the probe's own: a stimulus it sent an
        // interval or more late with its slot free.
        notes.push(format!(
            "{} of the {} slipped stimuli went out an interval or more late with their slot free: the \
             probe itself was late (a virtual probe's thread not run in time), not the target; their \
             instants are not charged to it",
            c.slipped - sc.waited,
            c.slipped
        ));
    }
    if c.slipped > 0 {
        let why = if config.identity {
            "waited for a free identity: the target had not yet answered any later stimulus (answers \
             queued about as far behind as the horizon)"
        } else {
            "waited for the previous sample and its guard to end (the probe fell behind its schedule)"
        };
        notes.push(format!(
            "{} stimuli {why}, longest {}, {} in all",
            c.slipped,
            format_ns(c.slip_max_ns),
            format_ns(c.slip_total_ns)
        ));
    }
    if c.reclaimed > 0 {
        notes.push(format!(
            "{} identities were taken back from timed-out stimuli with no proof that their answer was not \
             still coming: an answer later than that could be credited to a newer stimulus with the same \
             identity",
            c.reclaimed
        ));
    }
    if c.duplicate_answers > 0 {
        notes.push(format!(
            "{} answers repeated the identity of a stimulus already answered: counted, not timed (does the \
             target echo twice?)",
            c.duplicate_answers
        ));
    }
    if c.unmatched > 0 {
        notes.push(format!(
            "{} answers matched no stimulus in flight: counted, not timed (an answer after its identity was \
             reused, or one the target made up)",
            c.unmatched
        ));
    }
    if c.wrong_bytes > 0 {
        notes.push(format!(
            "{} answer bytes were outside the identity alphabet: counted, not timed (does the target echo \
             exactly what it receives? Noise on the line?)",
            c.wrong_bytes
        ));
    }
    if c.overcaptures > 0 {
        notes.push(format!(
            "{} captures were overwritten in the probe's hardware before they were read: edges came faster \
             than the probe could take them",
            c.overcaptures
        ));
    }
    if c.host_rx_errors > 0 {
        notes.push(format!(
            "{} receive errors on the probe's host link: bytes from this host were lost on the way in (a \
             Stop or Configure may have needed sending again); check the USB cable and --baud",
            c.host_rx_errors
        ));
    }
    if c.line_errors > 0 {
        notes.push(format!(
            "{} receive errors (framing, noise, overrun) on the target line: check wiring, levels and baud",
            c.line_errors
        ));
    }
    if c.soft_stimuli > 0 {
        notes.push(format!(
            "{} stimuli were timed by the probe's software (the counter read right before the write), not \
             by its timer hardware: their latencies are good to the write's duration, not to a tick (on \
             the Nucleo, wire PB10 to PA9 for hardware stimulus capture)",
            c.soft_stimuli
        ));
    }
}

/// A note when the probe's schedule holds clearly fewer instants than asked
/// for in the time it ran (an `--interval` shorter than the probe can
/// serve): the run is complete as asked, but not at that rate. The
/// instants that got no stimulus while the target was behind (`omitted`)
/// are in the schedule, each a sample: a slow target alone is no reason
/// for this note, the schedule view already counts it.
pub fn schedule_note(
    c: &Counts,
    config: &ConfigReport,
    elapsed_ns: Option<u64>,
    echo: bool,
    omitted: u64,
) -> Option<String> {
    let elapsed = elapsed_ns?;
    let taken = c.probe_taken?.saturating_add(omitted);
    if !echo || config.interval_ns == 0 {
        return None;
    }
    // Dither delays each stimulus by half of it on average.
    let period = u128::from(config.interval_ns) + u128::from(config.dither_ns / 2);
    let expected = u64::try_from(u128::from(elapsed) / period).unwrap_or(u64::MAX);
    // Short of 10 % and of at least 10 stimuli: a run's ends and rounding
    // never make that much.
    if expected.saturating_sub(taken) < 10 || u128::from(taken) * 10 >= u128::from(expected) * 9 {
        return None;
    }
    let taken = if omitted > 0 {
        format!("{taken} scheduled instants ({omitted} of them with no stimulus, each a sample)")
    } else {
        format!("{taken} stimuli")
    };
    Some(format!(
        "the probe could not keep the requested schedule: it took {taken} in {} where one every {} \
         makes {expected}; the figures are those of the instants it kept (raise --interval, or lower \
         --timeout and --guard)",
        format_ns(elapsed),
        format_ns(config.interval_ns)
    ))
}

/// Build the report of `state`, run in `ctx`.
pub fn build(ctx: &RunContext, state: &RunState, bad_frames: u64, end: Ending) -> Report {
    let req = &ctx.request;
    let hz = state.probe.as_ref().map(|p| p.timer_hz);
    let config = match (state.configured, hz) {
        (Some(c), Some(hz)) => ConfigReport {
            mode: req.mode,
            interval_ns: ticks_to_ns(c.interval_ticks.into(), hz),
            dither_ns: ticks_to_ns(c.dither_ticks.into(), hz),
            timeout_ns: ticks_to_ns(c.timeout_ticks.into(), hz),
            guard_ns: ticks_to_ns(c.guard_ticks.into(), hz),
            count: c.count,
            duration_ns: req.duration_ns,
            seed: c.seed,
            stimulus: stimulus_name(c.stimulus),
            identity: c.stimulus.has_identity(),
            ticks: Some(TicksReport {
                interval: c.interval_ticks,
                dither: c.dither_ticks,
                timeout: c.timeout_ticks,
                guard: c.guard_ticks,
            }),
            calibration: req.calibration.clone(),
            trigger_ns: (c.trigger_ticks > 0).then(|| ticks_to_ns(c.trigger_ticks.into(), hz)),
        },
        _ => ConfigReport {
            mode: req.mode,
            interval_ns: req.interval_ns,
            dither_ns: req.dither_ns,
            timeout_ns: req.timeout_ns(),
            guard_ns: req.guard_ns(),
            count: req.count,
            duration_ns: req.duration_ns,
            seed: req.seed,
            stimulus: stimulus_name(req.assumed_stimulus()),
            identity: req.assumed_stimulus().has_identity(),
            ticks: None,
            calibration: req.calibration.clone(),
            trigger_ns: req.trigger_ns,
        },
    };
    let a = state.analysis.as_ref();
    let (dropped, overruns, an) = match (state.stopped, state.heartbeat) {
        (Some(s), _) => (s.dropped, u64::from(s.overruns), s.anomalies),
        (None, Some(h)) => (h.dropped, u64::from(h.overruns), h.anomalies),
        (None, None) => (0, 0, Anomalies::default()),
    };
    let ns = |ticks: u64| hz.map_or(0, |hz| ticks_to_ns(ticks, hz));
    let counts = Counts {
        samples: a.map_or(0, |a| a.samples()),
        responses: a.map_or(0, |a| a.responses),
        timeouts: a.map_or(0, |a| a.timeouts),
        lost: a.map_or(0, |a| if a.fit.is_some() { a.edges.seq.lost } else { a.seq.lost }),
        duplicates: a.map_or(0, |a| a.seq.duplicates),
        out_of_order: a.map_or(0, |a| a.seq.out_of_order),
        dropped_by_probe: dropped,
        overruns,
        late_responses: an.late,
        duplicate_answers: an.duplicates,
        unmatched: an.unmatched,
        wrong_bytes: an.wrong_bytes,
        slipped: an.slipped,
        slip_max_ns: ns(an.slip_max_ticks),
        slip_total_ns: ns(an.slip_total_ticks),
        reclaimed: an.reclaimed,
        overcaptures: u64::from(an.overcaptures),
        line_errors: u64::from(an.line_errors),
        soft_stimuli: an.soft_stimuli,
        host_rx_errors: u64::from(an.host_rx_errors),
        bad_frames: bad_frames + a.map_or(0, |a| a.bad_batches),
        probe_taken: state.stopped.map(|s| s.taken),
        host_resends: state.resent,
        refused: state.refused + a.map_or(0, |a| a.beyond_timeout),
        triggered: config.trigger_ns.map(|_| a.map_or(0, |a| a.triggered)),
        triggered_seqs: a.map(|a| a.triggered_seqs.clone()).unwrap_or_default(),
    };
    let histogram = HistReport {
        bin_ns: 1000,
        max_us: ctx.histfile_max_us,
        bins: a.map_or_else(Vec::new, |a| {
            a.bins.iter().enumerate().filter(|(_, &c)| c > 0).map(|(i, &c)| [i as u64, c]).collect()
        }),
        overflows: a.map_or(0, |a| a.overflows),
        overflow_seqs: a.map_or_else(Vec::new, |a| a.overflow_seqs.clone()),
    };
    let periodic = (req.mode == ModeArg::Periodic).then(|| periodic_of(a));
    let mut notes = ctx.notes.clone();
    if let Some(cal) = &req.calibration {
        notes.push(cal.describe());
        let below = a.map_or(0, |a| a.below_calibration);
        if below > 0 {
            notes.push(format!(
                "{below} measured latencies were faster than the probe's own loopback ever was in its \
                 calibration (they count as 0): the calibration does not fit this bench (another \
                 wire or setup); calibrate again"
            ));
        }
    }
    // What the live session remarked (a Stop never confirmed, a raw file
    // cut short); a replay has them from the raw file's ending.
    notes.extend(state.notes.iter().cloned());
    if let Some(n) = a.map(|a| a.beyond_timeout).filter(|&n| n > 0) {
        notes.push(format!(
            "the probe reported {n} responses later than its own timeout ({}), which no sound probe \
             does: they are counted as timeouts (counts.refused)",
            format_ns(config.timeout_ns)
        ));
    }
    // What the probe itself warned about, as it said it.
    notes.extend(state.probe_logs.iter().map(|l| format!("the probe logged {l}")));
    if state.probe_logs_dropped > 0 {
        notes.push(format!("the probe logged {} more warnings, not kept", state.probe_logs_dropped));
    }
    if state.probe.as_ref().is_some_and(ProbeHello::is_emulated) && notes.is_empty() {
        notes.push(
            "the probe is emulated or virtual: its timestamps do not come from independent hardware".into(),
        );
    }
    let schedule = a.and_then(schedule_of);
    anomaly_notes(&counts, &config, req.mode.mode().is_echo(), schedule.as_ref(), &mut notes);
    if let Some(p) = &periodic {
        periodic_notes(p, &config, &mut notes);
    }
    let omitted = a.map_or(0, |a| a.service.omitted);
    notes.extend(schedule_note(
        &counts,
        &config,
        state.probe_elapsed_ns(),
        req.mode.mode().is_echo(),
        omitted,
    ));
    let mut report = Report {
        schema_version: SCHEMA_VERSION,
        tool_version: ctx.tool_version.clone(),
        complete: end.complete,
        ended_by: end.ended_by,
        error: end.error,
        source: ctx.source.clone(),
        replayed_from: end.replayed_from,
        probe: state
            .probe
            .as_ref()
            .map(|p| ProbeReport { hello: p.clone(), capability_names: p.capability_names() }),
        config,
        started_at: ctx.started_at.clone(),
        ended_at: end.ended_at,
        command_line: ctx.command_line.clone(),
        loads: crate::target::load::observed(&ctx.loads),
        phases: phases_with_loads(phases_of(&ctx.phases, a), &crate::target::load::observed(&ctx.loads)),
        probe_elapsed_ns: state.probe_elapsed_ns(),
        counts,
        latency_ns: a.and_then(latency_of),
        schedule,
        worst: a.and_then(|a| a.worst).map(|w| WorstReport {
            seq: w.seq,
            latency_ns: w.latency_ns,
            at_ns_from_start: w.at_ns_from_start,
        }),
        histogram,
        target: ctx.target.clone(),
        periodic,
        timeline: a.filter(|a| a.samples() > 0).map(|a| a.timeline.report()),
        tail: None,
        trace: None,
        verdicts: Vec::new(),
        notes,
    };
    if let Some(a) = a.filter(|a| a.samples() > 0) {
        let limits = ctx.limits.clone().unwrap_or_default();
        report.tail =
            Some(super::tail::compute(&report, a.tail.data(), &limits, super::tail::DEFAULT_HORIZON_NS));
    }
    report
}

/// The schedule's phases with the figures the analysis counted in each.
pub fn phases_of(phases: &[crate::model::Phase], a: Option<&crate::analysis::Analysis>) -> Vec<PhaseReport> {
    let tallies = a.map(|a| a.phases.phases()).unwrap_or_default();
    let timeout = a.map_or(0, |a| a.timeout_ns());
    phases
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let t = tallies.get(i).map(|t| &t.tally).filter(|t| t.samples() > 0);
            PhaseReport {
                name: p.name.clone(),
                start_s: p.start_s,
                end_s: p.end_s,
                samples: t.map_or(0, |t| t.samples()),
                timeouts: t.map_or(0, |t| t.timeouts),
                max_measured_ns: t.and_then(|t| t.max_measured_ns()),
                latency_ns: t.map(|t| tally_latency(t, timeout)),
                loads: None,
            }
        })
        .collect()
}

/// `phases` with the loads that ran in each, as watched (`ran`); left as
/// they are when the loads were not watched (a replay of a raw file).
pub fn phases_with_loads(
    mut phases: Vec<PhaseReport>,
    loads: &[crate::model::LoadRecord],
) -> Vec<PhaseReport> {
    /// A load that started this long after its phase began still ran it whole.
    const START_SLACK_MS: u64 = 1_500;
    if loads.is_empty() || loads.iter().any(|l| l.ran.is_none()) {
        return phases;
    }
    for p in &mut phases {
        let from = p.start_s.saturating_mul(1000);
        let to = p.end_s.map_or(u64::MAX, |e| e.saturating_mul(1000));
        let mut in_phase = Vec::new();
        for l in loads {
            let spans = l.ran.as_deref().unwrap_or_default();
            let overlap = |s: &crate::model::LoadSpan| {
                s.end_ms.unwrap_or(u64::MAX).min(to).saturating_sub(s.start_ms.max(from))
            };
            // A load latprobe stopped at this phase's start took a moment
            // to end: that is no running in it.
            let ran_ms: u64 = spans
                .iter()
                .map(|s| match overlap(s) {
                    o if s.ended.is_none() && s.start_ms < from && o < START_SLACK_MS => 0,
                    o => o,
                })
                .sum();
            if ran_ms == 0 {
                continue;
            }
            // Whole: one span from the phase's start to its end (for the
            // last phase: until latprobe stopped it at the run's end).
            let throughout = spans.iter().any(|s| {
                let end = s.end_ms.unwrap_or(u64::MAX);
                s.start_ms <= from.saturating_add(START_SLACK_MS)
                    && if to == u64::MAX {
                        s.ended.is_none()
                    } else {
                        end >= to.saturating_sub(START_SLACK_MS)
                    }
            });
            in_phase.push(PhaseLoad { name: l.name.clone(), ran_ms, throughout });
        }
        p.loads = Some(in_phase);
    }
    phases
}

/// A tally's figures as the report's latency table.
fn tally_latency(t: &crate::analysis::phases::Tally, timeout_ns: u64) -> Latency {
    let [p50, p90, p99, p99_9, p99_99] = PERCENTILES.map(|p| t.quantile(p.q, timeout_ns).value());
    Latency {
        measured: t.responses,
        censored: t.timeouts,
        censored_above: timeout_ns,
        min: t.min(timeout_ns).value(),
        mean: t.mean_ns(),
        p50,
        p90,
        p99,
        p99_9,
        p99_99,
        max: t.max(timeout_ns).value(),
        max_measured: t.max_measured_ns(),
    }
}
