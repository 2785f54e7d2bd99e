//! [`RunState`]: every message folded into state and samples, shared by
//! live runs and replays.

use super::*;

/// The measurement's start, from the probe's Started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartInfo {
    /// The tick the schedule counts from.
    pub start_tick: u64,
    /// The first sequence number.
    pub first_seq: u64,
}

/// Probe log lines kept in a report; more are counted.
pub const MAX_PROBE_LOGS: usize = 32;

/// Everything the probe told us, folded; shared by live runs and replays.
#[derive(Debug)]
pub struct RunState {
    histfile_max_us: u32,
    periodic: bool,
    /// The probe's Hello.
    pub probe: Option<ProbeHello>,
    /// The configuration the probe accepted.
    pub configured: Option<Config>,
    /// The measurement's start.
    pub started: Option<StartInfo>,
    /// The measurement's end.
    pub stopped: Option<Stopped>,
    /// The latest heartbeat during the measurement.
    pub heartbeat: Option<Heartbeat>,
    /// When that heartbeat arrived, on the host's clock.
    pub heartbeat_at: Option<Instant>,
    /// The latest error the probe reported.
    pub probe_error: Option<(ErrorCode, String)>,
    /// The probe's warning and error log lines (at most [`MAX_PROBE_LOGS`]),
    /// with the count of any dropped beyond that.
    pub probe_logs: Vec<String>,
    /// Log lines beyond [`MAX_PROBE_LOGS`], counted.
    pub probe_logs_dropped: u64,
    /// The probe's own offset subtracted from every latency and the
    /// calibration loopback's minimum (`--calibration`), ns.
    pub calibration: Option<(u64, u64)>,
    /// A frame of another protocol version was seen.
    pub other_version: Option<u8>,
    /// The probe said Hello again during the measurement (it restarted).
    pub restarted: bool,
    /// Remarks of the live session for the report (an unconfirmed Stop, a
    /// raw file that could not be written); a replay reads them back from
    /// the raw file's ending.
    pub notes: Vec<String>,
    /// Stop and Configure messages sent a second time because the first
    /// drew no word from the probe (see [`run`]).
    pub resent: u64,
    /// The statistics, from Started on.
    pub analysis: Option<Analysis>,
    /// Periodic mode: keep every cycle's delay (for `--target-log`).
    pub keep_cycles: bool,
    /// The load schedule's phases `(start_s, end_s)`, counted apart by the
    /// analysis from Started on.
    pub phases: Vec<(u64, Option<u64>)>,
    /// Periodic mode: why the cycles could not be kept.
    pub keep_error: Option<String>,
    /// The configuration the live session sent: a Configured must echo it
    /// (`None` in a replay, where only its plausibility is checked).
    pub sent_config: Option<Config>,
    /// Messages whose contents disagree with the request or with what the
    /// protocol allows (a Hello with a 0 Hz timer, a Configured other than
    /// the one sent, a Stopped whose total is not what arrived, a Stop
    /// latprobe never sent): refused or noted, each counted here and said
    /// in [`RunState::notes`].
    pub refused: u64,
    /// The refusal the live session must fail on (a replay only notes it).
    pub fault: Option<String>,
    /// Where every counted sample goes as a row (`report --samples`),
    /// handed to the analysis at Started.
    pub rows: Option<Box<dyn crate::samples::Sink>>,
    /// Told of every sample the probe flagged `triggered`, as it arrives
    /// (`--trace-stop host`: latprobe stops the target's trace).
    pub trigger_sink: Option<Box<dyn crate::target::stop::TriggerSink>>,
}

impl RunState {
    /// Nothing heard yet; bins of 1 µs up to `histfile_max_us`.
    pub fn new(histfile_max_us: u32, periodic: bool) -> Self {
        Self {
            histfile_max_us,
            periodic,
            probe: None,
            configured: None,
            started: None,
            stopped: None,
            heartbeat: None,
            heartbeat_at: None,
            probe_error: None,
            probe_logs: Vec::new(),
            probe_logs_dropped: 0,
            calibration: None,
            other_version: None,
            restarted: false,
            notes: Vec::new(),
            resent: 0,
            analysis: None,
            keep_cycles: false,
            phases: Vec::new(),
            keep_error: None,
            sent_config: None,
            refused: 0,
            fault: None,
            rows: None,
            trigger_sink: None,
        }
    }

    /// Count and note a message latprobe cannot use, and fail the live
    /// session on it.
    pub fn refuse(&mut self, what: String) {
        self.refused += 1;
        self.notes.push(format!("latprobe refused a message of the probe: {what}"));
        self.fault.get_or_insert(what);
    }

    /// Why a Configured cannot be the probe's answer to this session.
    fn misfit(&self, c: &Config) -> Option<String> {
        let shown = |c: &Config| {
            format!(
                "mode {}, interval {} ticks, timeout {} ticks, dither {}, guard {}, count {:?}, {:?}",
                c.mode.name(),
                c.interval_ticks,
                c.timeout_ticks,
                c.dither_ticks,
                c.guard_ticks,
                c.count,
                c.stimulus
            )
        };
        let fix = "the probe does not run this latprobe's firmware, or something else writes to its port: \
                   flash the probe (latprobe flash) and rerun";
        if let Some(sent) = &self.sent_config {
            if sent != c {
                return Some(format!(
                    "it confirmed a configuration other than the one sent (sent {}; confirmed {}): {fix}",
                    shown(sent),
                    shown(c)
                ));
            }
        }
        let why = if c.interval_ticks == 0 {
            "an interval of 0 ticks"
        } else if c.mode.is_echo() && c.timeout_ticks == 0 {
            "a timeout of 0 ticks"
        } else if (c.mode == Mode::Periodic) != self.periodic {
            "another mode than the run's"
        } else {
            return None;
        };
        Some(format!("it confirmed a configuration with {why} ({}): {fix}", shown(c)))
    }

    /// The run is over, however it ended: place the periodic edges still
    /// waiting for their block. Idempotent.
    pub fn finalize(&mut self) {
        if let Some(a) = &mut self.analysis {
            a.finish_periodic();
        }
    }

    pub(super) fn running(&self) -> bool {
        self.started.is_some() && self.stopped.is_none()
    }

    /// Fold one incoming message. Anything outside the measurement (stale
    /// batches of an earlier run, say) is ignored.
    pub fn on_incoming(&mut self, inc: Incoming<'_>) {
        let msg = match inc {
            Incoming::OtherVersion(v) => {
                self.other_version = Some(v);
                return;
            }
            Incoming::Message(m) => m,
        };
        match msg {
            ProbeMsg::SampleBatch(b) => {
                if self.running() {
                    if let Some(a) = &mut self.analysis {
                        let before = a.triggered;
                        a.ingest_samples(&b);
                        if let Some(sink) = self.trigger_sink.as_mut().filter(|_| a.triggered > before) {
                            // The new flags, in order (a duplicate batch adds none).
                            let fresh = (a.triggered - before) as usize;
                            let known = &a.triggered_seqs;
                            for k in 0..fresh {
                                // The seq, while the first ones are kept.
                                sink.triggered(known.get(before as usize + k).copied().unwrap_or(u64::MAX));
                            }
                        }
                    }
                }
            }
            ProbeMsg::EdgeBatch(b) => {
                if self.running() {
                    if let Some(a) = &mut self.analysis {
                        a.ingest_edges(&b);
                    }
                }
            }
            ProbeMsg::Heartbeat(h) => {
                if self.running() {
                    self.heartbeat = Some(h);
                    self.heartbeat_at = Some(Instant::now());
                }
            }
            ProbeMsg::Hello(info) => {
                if self.started.is_some() {
                    self.restarted = self.stopped.is_none();
                    return;
                }
                if info.timer_hz == 0 {
                    // Nothing could be converted, and every rule in ticks
                    // would divide by it.
                    self.refuse(format!(
                        "its Hello gives a timer of 0 Hz (board {}, firmware {}): it is not a working \
                         latprobe probe; flash it (latprobe flash)",
                        info.board, info.firmware_version
                    ));
                    return;
                }
                self.probe = Some(ProbeHello {
                    protocol_version: info.protocol_version,
                    firmware_version: info.firmware_version.to_string(),
                    board: info.board.to_string(),
                    timer_hz: info.timer_hz,
                    timer_bits: info.timer_bits,
                    capabilities: info.capabilities.0,
                    max_batch: info.max_batch,
                    target_baud: info.target_baud,
                    build_id: info.build_id,
                });
            }
            ProbeMsg::Configured(c) => {
                if self.started.is_none() {
                    match self.misfit(&c) {
                        None => self.configured = Some(c),
                        Some(why) => self.refuse(why),
                    }
                }
            }
            ProbeMsg::Started { start_tick, first_seq } => {
                if self.started.is_some() {
                    return;
                }
                // Started before any Hello: a stream joined mid-way. Without
                // the timer rate nothing can be converted, so wait for ours.
                let Some(hello) = &self.probe else { return };
                let Some(config) = self.configured else { return };
                self.started = Some(StartInfo { start_tick, first_seq });
                // A sample without an answer is a latency above the timeout
                // the probe accepted (periodic mode has none).
                let timeout_ns = if self.periodic {
                    0
                } else {
                    ticks_to_ns(u64::from(config.timeout_ticks), hello.timer_hz)
                };
                let mut a =
                    Analysis::new(hello.timer_hz, start_tick, first_seq, self.histfile_max_us, timeout_ns);
                if let (Some((offset, floor)), false) = (self.calibration, self.periodic) {
                    a.set_calibration(offset, floor);
                }
                if !self.phases.is_empty() {
                    a.set_phases(&self.phases);
                }
                if self.periodic {
                    let interval = u64::from(config.interval_ticks);
                    let horizon = match config.timeout_ticks {
                        0 => interval * u64::from(PERIODIC_HORIZON_INTERVALS),
                        t => u64::from(t),
                    };
                    a.enable_periodic(interval, horizon);
                    if self.keep_cycles {
                        match crate::analysis::periodic::CycleSpill::create() {
                            Ok(s) => a.spill = Some(s),
                            Err(e) => self.keep_error = Some(format!("cannot keep the cycles: {e}")),
                        }
                    }
                }
                if let Some(sink) = self.rows.take() {
                    a.rows = Some(crate::samples::Feed::new(sink, config.stimulus));
                }
                self.analysis = Some(a);
            }
            ProbeMsg::Stopped(s) => {
                if !self.running() {
                    return;
                }
                self.stopped = Some(s);
                if let (Some(a), Some(st)) = (&mut self.analysis, self.started) {
                    a.finish(st.first_seq.saturating_add(s.taken), self.periodic);
                    // samples + lost = taken is what the report promises:
                    // a total that says otherwise is the probe's error, and
                    // the report counts what arrived.
                    let (arrived, lost) = if self.periodic {
                        (a.edges.edges, a.edges.seq.lost)
                    } else {
                        // The instants that got no stimulus are samples
                        // the probe never took.
                        (a.samples() - a.service.omitted, a.seq.lost)
                    };
                    let count = self.configured.and_then(|c| c.count);
                    if let (StopReason::CountReached, Some(n)) = (s.reason, count) {
                        // A count is of scheduled instants: the samples taken
                        // and the instants their waits skipped (echo; those of
                        // a lost sample are not known here, so with samples
                        // lost the total may fall short, never over).
                        let omitted = if self.periodic { 0 } else { a.service.omitted };
                        let instants = s.taken.saturating_add(omitted);
                        if instants > n || (lost == 0 && instants != n) {
                            self.refused += 1;
                            self.notes.push(format!(
                                "the probe's Stopped says it reached its count of {n} with {} taken \
                                 ({omitted} instants omitted): its total disagrees with the request",
                                s.taken
                            ));
                        }
                    }
                    if arrived.saturating_add(lost) != s.taken {
                        self.refused += 1;
                        self.notes.push(format!(
                            "the probe's Stopped says it took {} {what}, but {arrived} arrived and {lost} \
                             are missing: its total disagrees with its own stream; the report counts \
                             what arrived",
                            s.taken,
                            what = if self.periodic { "edges" } else { "samples" },
                        ));
                    }
                }
            }
            ProbeMsg::Error(e) => self.probe_error = Some((e.code, e.detail.to_string())),
            ProbeMsg::Log(l) => {
                if l.level == latprobe_protocol::LogLevel::Info {
                    return;
                }
                if self.probe_logs.len() < MAX_PROBE_LOGS {
                    let level =
                        if l.level == latprobe_protocol::LogLevel::Error { "error" } else { "warning" };
                    self.probe_logs.push(format!("{level}: {}", l.text));
                } else {
                    self.probe_logs_dropped += 1;
                }
            }
        }
    }

    /// Time the probe measured from start to stop, if both are known.
    pub fn probe_elapsed_ns(&self) -> Option<u64> {
        let (st, sp, a) = (self.started?, self.stopped?, self.analysis.as_ref()?);
        Some(a.conv().ns(sp.end_tick.saturating_sub(st.start_tick)))
    }
}
