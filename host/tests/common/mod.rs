//! Test helpers: a scripted fake probe that speaks the real protocol (frames
//! made with the real encoder) over a unix socket, and runners for the
//! `latprobe` binary.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use latprobe_protocol::framing::{encode_raw, CRC};
use latprobe_protocol::{
    encode_message, Anomalies, Capabilities, Config, ErrorCode, ErrorReport, Feed, FrameDecoder, Heartbeat,
    HostMsg, Outcome, ProbeInfo, ProbeMsg, Sample, SampleBatchBuilder, StopReason, Stopped, MAX_FRAME_LEN,
    MAX_RAW_LEN,
};

/// What the fake probe does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    /// Behave: answer, stream samples, stop on Stop or count.
    Normal,
    /// Answer Hello with a frame of this protocol version, then nothing.
    OtherVersion(u8),
    /// Answer Hello, Configure and Start, send this many batches, then go silent.
    SilentAfter(usize),
    /// Refuse every Configure with BadDither.
    RefuseConfig,
    /// Behave, but never answer Stop (keep streaming).
    IgnoreStop,
    /// Behave, then after this many batches reset: a boot Hello, and
    /// nothing more of the run.
    RestartAfter(usize),
    /// The first this many Stops are lost on the link; until one arrives
    /// the probe says nothing (a run with nothing left to report).
    LoseStops(usize),
    /// The first this many Configures are lost on the link.
    LoseConfigures(usize),
    /// The first this many Stops are lost on the link (damaged: a real
    /// probe counts a bad frame and goes on), and the probe keeps
    /// measuring and sending batches and heartbeats until one arrives.
    LoseStopsTalking(usize),
    /// Behave, then after this many batches report the run stopped by a
    /// Stop the host never sent (`Stopped(HostStop)`), and nothing more.
    StopUnasked(usize),
    /// Never answer Hello, but stream heartbeats (intact frames) every
    /// `pace`, like a probe busy with another host's run.
    NoHello,
}

/// Knobs of the fake.
#[derive(Debug, Clone, Copy)]
pub struct FakeOpts {
    pub script: Script,
    /// Time between batches of [`BATCH`] samples.
    pub pace: Duration,
    /// Send batch 3 twice, skip batch 5, and put garbage before batch 7.
    pub faults: bool,
    /// Report a damaged host frame (Error BadFrame) before answering Configure.
    pub noise: bool,
    /// The outcome of sample `seq`.
    pub outcomes: fn(u64) -> Outcome,
    /// The anomalies the probe reports in heartbeats and Stopped; `None`:
    /// every timeout's answer came late (`late` = timeouts so far).
    pub anomalies: Option<Anomalies>,
    /// The Hello the fake sends (crafted scenarios: a 0 Hz timer, escape
    /// sequences in the board name).
    pub hello: fn() -> ProbeInfo<'static>,
    /// What the fake confirms for a Configure: by default what it got.
    pub echo: fn(Config) -> Config,
    /// The total the fake's Stopped gives for `taken` samples.
    pub taken: fn(u64) -> u64,
    /// Raw bytes sent right after Started (crafted frames).
    pub after_start: fn() -> Vec<u8>,
}

impl Default for FakeOpts {
    fn default() -> Self {
        Self {
            script: Script::Normal,
            pace: Duration::from_millis(2),
            faults: false,
            noise: false,
            outcomes: fake_outcome,
            anomalies: None,
            hello: hello_info,
            echo: |c| c,
            taken: |t| t,
            after_start: Vec::new,
        }
    }
}

/// The fake's latency for sample `seq`, in ticks of 100 MHz, or a timeout.
pub fn fake_outcome(seq: u64) -> Outcome {
    if seq % 97 == 96 {
        Outcome::Timeout
    } else if seq % 500 == 250 {
        Outcome::Response(40_000) // 400 µs
    } else {
        Outcome::Response(2_000 + ((seq * 7_919) % 3_000) as u32) // 20..50 µs
    }
}

pub const FAKE_HZ: u32 = 100_000_000;
/// Samples per batch: small enough that every batch is full to the count.
pub const BATCH: u64 = 32;

/// A fake probe listening on a unix socket.
pub struct FakeProbe {
    pub path: PathBuf,
    handle: Option<JoinHandle<()>>,
}

impl FakeProbe {
    /// Listen in `dir`.
    pub fn start(dir: &Path, opts: FakeOpts) -> Self {
        let path = dir.join("probe.sock");
        let listener = UnixListener::bind(&path).expect("bind the fake probe's socket");
        let handle = std::thread::spawn(move || {
            listener.set_nonblocking(true).unwrap();
            let until = Instant::now() + Duration::from_secs(20);
            let stream = loop {
                match listener.accept() {
                    Ok((s, _)) => break s,
                    Err(_) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                    Err(_) => return,
                }
            };
            stream.set_nonblocking(true).unwrap();
            serve(stream, opts);
        });
        Self { path, handle: Some(handle) }
    }

    /// The `--port` argument.
    pub fn port(&self) -> String {
        format!("unix:{}", self.path.display())
    }

    /// `latprobe run --port` this probe with `args`, to its end.
    pub fn run(&self, args: &[&str]) -> Output {
        let port = self.port();
        run(&[&["run", "--port", &port][..], args].concat())
    }
}

impl Drop for FakeProbe {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn send<S: Write>(s: &mut S, msg: &ProbeMsg<'_>) -> bool {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = encode_message(msg, &mut buf).expect("frame the fake's message");
    s.write_all(&buf[..n]).is_ok()
}

/// A Hello frame whose version byte is `version`, built by hand.
pub fn hello_frame_of_version(version: u8) -> Vec<u8> {
    let info = hello_info();
    let mut raw = [0u8; MAX_RAW_LEN];
    raw[0] = version;
    let body = postcard::to_slice(&ProbeMsg::Hello(info), &mut raw[1..MAX_RAW_LEN - 4]).unwrap().len();
    let crc = CRC.checksum(&raw[..1 + body]);
    raw[1 + body..1 + body + 4].copy_from_slice(&crc.to_le_bytes());
    let mut out = [0u8; MAX_FRAME_LEN];
    let n = encode_raw(&raw[..body + 5], &mut out).unwrap();
    out[..n].to_vec()
}

pub fn hello_info() -> ProbeInfo<'static> {
    ProbeInfo {
        protocol_version: latprobe_protocol::PROTOCOL_VERSION,
        firmware_version: "0.0.0-fake",
        board: "fake",
        timer_hz: FAKE_HZ,
        timer_bits: 32,
        capabilities: Capabilities::UART_ECHO
            | Capabilities::GPIO_ECHO
            | Capabilities::LOOPBACK
            | Capabilities::EMULATED,
        max_batch: 64,
        target_baud: 0,
        build_id: 0,
    }
}

/// A fake probe on a pseudo-terminal: `latprobe` opens the returned slave
/// path as a serial device.
pub struct PtyProbe {
    pub slave: PathBuf,
    _slave_fd: std::fs::File,
    handle: Option<JoinHandle<()>>,
}

impl PtyProbe {
    pub fn start(opts: FakeOpts) -> Self {
        use std::os::fd::FromRawFd;
        let (mut m, mut sl) = (-1, -1);
        let mut name = [0 as libc::c_char; 128];
        // SAFETY: openpty writes two fds and the NUL-terminated slave name
        // into a buffer of 128 bytes (it needs at most ~20).
        let rc =
            unsafe { libc::openpty(&mut m, &mut sl, name.as_mut_ptr(), std::ptr::null(), std::ptr::null()) };
        assert_eq!(rc, 0, "openpty");
        // SAFETY: fresh fds from openpty, owned here; the name is NUL-terminated.
        let (master, slave_fd, slave) = unsafe {
            libc::fcntl(m, libc::F_SETFL, libc::fcntl(m, libc::F_GETFL) | libc::O_NONBLOCK);
            let mut t: libc::termios = std::mem::zeroed();
            libc::tcgetattr(sl, &mut t);
            libc::cfmakeraw(&mut t);
            libc::tcsetattr(sl, libc::TCSANOW, &t);
            (
                std::fs::File::from_raw_fd(m),
                std::fs::File::from_raw_fd(sl),
                PathBuf::from(std::ffi::CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned()),
            )
        };
        let handle = std::thread::spawn(move || serve(master, opts));
        Self { slave, _slave_fd: slave_fd, handle: Some(handle) }
    }
}

impl Drop for PtyProbe {
    fn drop(&mut self) {
        // The pty never reports the other side gone while we hold the slave;
        // the serving thread ends when its writes fail or at process exit.
        let _ = self.handle.take();
    }
}

fn serve<S: Read + Write>(mut s: S, opts: FakeOpts) {
    let mut dec: FrameDecoder = FrameDecoder::new();
    let mut buf = [0u8; 1024];
    let mut config: Option<Config> = None;
    let mut running = false;
    let mut seq = 0u64;
    let mut batch_no = 0usize;
    let mut last_batch = Instant::now();
    let mut last_hb = Instant::now();
    let start_tick = 1_000u64;
    let (mut stops_lost, mut configures_lost) = (0usize, 0usize);
    // A Stop was lost: nothing more until the next one.
    let mut quiet = false;
    loop {
        let mut msgs = Vec::new();
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                let mut rest = &buf[..n];
                loop {
                    match dec.feed(rest) {
                        Feed::NeedMore => break,
                        Feed::Bad { rest: r, .. } => rest = r,
                        Feed::Frame { frame, rest: r } => {
                            if let Ok(m) = latprobe_protocol::decode_message::<HostMsg>(frame) {
                                msgs.push(m);
                            }
                            rest = r;
                        }
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_micros(500))
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
        for m in msgs {
            let ok = match (m, opts.script) {
                (HostMsg::Hello { .. }, Script::NoHello) => true,
                (HostMsg::Hello { .. }, Script::OtherVersion(v)) => {
                    s.write_all(&hello_frame_of_version(v)).is_ok()
                }
                (HostMsg::Hello { .. }, _) => send(&mut s, &ProbeMsg::Hello((opts.hello)())),
                (HostMsg::Configure(_), Script::RefuseConfig) => send(
                    &mut s,
                    &ProbeMsg::Error(ErrorReport {
                        code: ErrorCode::BadDither,
                        detail: "need dither + timeout + guard <= interval",
                    }),
                ),
                (HostMsg::Configure(_), Script::LoseConfigures(n)) if configures_lost < n => {
                    configures_lost += 1;
                    true
                }
                (HostMsg::Stop, Script::LoseStops(n)) if stops_lost < n => {
                    stops_lost += 1;
                    quiet = running;
                    true
                }
                (HostMsg::Stop, Script::LoseStopsTalking(n)) if stops_lost < n => {
                    stops_lost += 1;
                    true
                }
                (HostMsg::Configure(c), _) => {
                    if opts.noise && config.is_none() {
                        let e = ErrorReport {
                            code: ErrorCode::BadFrame,
                            detail: "damaged frame from host dropped",
                        };
                        if !send(&mut s, &ProbeMsg::Error(e)) {
                            return;
                        }
                    }
                    config = Some(c);
                    send(&mut s, &ProbeMsg::Configured((opts.echo)(c)))
                }
                (HostMsg::Start, _) => {
                    running = true;
                    send(&mut s, &ProbeMsg::Started { start_tick, first_seq: 0 })
                        && s.write_all(&(opts.after_start)()).is_ok()
                }
                (HostMsg::Stop, Script::IgnoreStop) => true,
                (HostMsg::Stop, _) => {
                    quiet = false;
                    if running {
                        running = false;
                        send(&mut s, &stopped(StopReason::HostStop, seq, start_tick, config, &opts))
                    } else {
                        true
                    }
                }
                (HostMsg::Ping { .. }, _) => true,
            };
            if !ok {
                return;
            }
        }
        if opts.script == Script::NoHello && last_hb.elapsed() >= opts.pace {
            last_hb = Instant::now();
            if !send(&mut s, &ProbeMsg::Heartbeat(Heartbeat { running: true, ..Default::default() })) {
                return;
            }
        }
        let Some(c) = config else { continue };
        if !running || quiet || last_batch.elapsed() < opts.pace {
            continue;
        }
        if let Script::SilentAfter(n) = opts.script {
            if batch_no >= n {
                continue;
            }
        }
        if let Script::StopUnasked(n) = opts.script {
            if batch_no == n {
                running = false;
                if !send(&mut s, &stopped(StopReason::HostStop, seq, start_tick, config, &opts)) {
                    return;
                }
                continue;
            }
        }
        if let Script::RestartAfter(n) = opts.script {
            if batch_no == n {
                // What a reset probe says first: its boot Hello.
                running = false;
                config = None;
                if !send(&mut s, &ProbeMsg::Hello(hello_info())) {
                    return;
                }
                continue;
            }
        }
        last_batch = Instant::now();
        let mut b = SampleBatchBuilder::new(c.interval_ticks, BATCH as u16);
        let first = seq;
        while !b.is_full() && c.count.is_none_or(|n| seq < n) {
            let outcome = (opts.outcomes)(seq);
            // The trigger's rule (`protocol::trigger_fault`'s docs): a
            // latency above the threshold, or a timeout.
            let triggered = c.trigger_ticks != 0
                && match outcome {
                    Outcome::Timeout => true,
                    Outcome::Response(l) => l > c.trigger_ticks,
                };
            let sample = Sample {
                seq,
                stimulus_tick: start_tick + seq * u64::from(c.interval_ticks),
                outcome,
                triggered,
                late_ticks: 0,
                omitted: 0,
            };
            if b.push(&sample).is_err() {
                break;
            }
            seq += 1;
        }
        let skip = opts.faults && batch_no == 5;
        if opts.faults && batch_no == 7 && s.write_all(&[0x13, 0x37, 0x42, 0x00]).is_err() {
            return;
        }
        if !b.is_empty() && !skip && !send(&mut s, &ProbeMsg::SampleBatch(b.batch())) {
            return;
        }
        if opts.faults && batch_no == 3 && !send(&mut s, &ProbeMsg::SampleBatch(b.batch())) {
            return;
        }
        let _ = first;
        batch_no += 1;
        if last_hb.elapsed() >= Duration::from_millis(200) {
            last_hb = Instant::now();
            let hb = Heartbeat {
                tick: start_tick + seq * 100_000,
                nonce: 0,
                running: true,
                taken: seq,
                anomalies: anomalies(seq, &opts),
                ..Default::default()
            };
            if !send(&mut s, &ProbeMsg::Heartbeat(hb)) {
                return;
            }
        }
        if c.count.is_some_and(|n| seq >= n) {
            running = false;
            if !send(&mut s, &stopped(StopReason::CountReached, seq, start_tick, config, &opts)) {
                return;
            }
        }
    }
}

fn timeouts(taken: u64, opts: &FakeOpts) -> u64 {
    (0..taken).filter(|&s| (opts.outcomes)(s) == Outcome::Timeout).count() as u64
}

fn anomalies(taken: u64, opts: &FakeOpts) -> Anomalies {
    // The fake's default story: every timed-out answer did come, too late.
    opts.anomalies.unwrap_or(Anomalies { late: timeouts(taken, opts), ..Anomalies::default() })
}

fn stopped(
    reason: StopReason,
    taken: u64,
    start_tick: u64,
    c: Option<Config>,
    opts: &FakeOpts,
) -> ProbeMsg<'static> {
    let interval = c.map_or(0, |c| u64::from(c.interval_ticks));
    ProbeMsg::Stopped(Stopped {
        reason,
        end_tick: start_tick + taken * interval,
        taken: (opts.taken)(taken),
        timeouts: timeouts(taken, opts),
        dropped: 0,
        overruns: 0,
        anomalies: anomalies(taken, opts),
    })
}

/// The `latprobe` binary under test.
pub fn latprobe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_latprobe"))
}

/// Run latprobe with `args` and return its output.
pub fn run(args: &[&str]) -> Output {
    latprobe().args(args).output().expect("run latprobe")
}

/// Stdout and stderr, for assertion messages.
pub fn show(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A temporary directory for one test.
pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// A path as a command-line argument.
pub fn p(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// Its standard error, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Run latprobe, failing the test if it takes longer than `limit`.
pub fn run_within(args: &[&str], limit: Duration) -> Output {
    let mut child = latprobe()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start latprobe");
    wait_with_timeout(&mut child, limit)
}

/// Send `sig` to our own child `pid`.
pub fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on the pid of our own child.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

/// A report's notes, one a line.
pub fn notes(r: &serde_json::Value) -> String {
    r["notes"]
        .as_array()
        .map_or_else(String::new, |n| n.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>().join("\n"))
}

/// `msg` framed as the probe sends it.
pub fn frame(msg: &ProbeMsg<'_>) -> Vec<u8> {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = encode_message(msg, &mut buf).expect("frame");
    buf[..n].to_vec()
}

/// Read a JSON file.
pub fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// The counts of a report must add up: samples are responses and timeouts,
/// the histogram holds every sample (a timeout is an overflow), and the
/// latency table counts every sample.
pub fn assert_counts_add_up(r: &serde_json::Value) {
    let c = &r["counts"];
    let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("counts.{k} in {r}"));
    assert_eq!(n("samples"), n("responses") + n("timeouts"), "{c}");
    let bins: u64 = r["histogram"]["bins"].as_array().unwrap().iter().map(|b| b[1].as_u64().unwrap()).sum();
    assert_eq!(bins + r["histogram"]["overflows"].as_u64().unwrap(), n("samples"), "histogram vs samples");
    let l = &r["latency_ns"];
    if n("samples") == 0 {
        assert!(l.is_null(), "{l}");
    } else {
        assert_eq!(l["measured"].as_u64(), Some(n("responses")), "{l}");
        assert_eq!(l["censored"].as_u64(), Some(n("timeouts")), "{l}");
        assert_eq!(l["censored_above"], r["config"]["timeout_ns"], "{l}");
        // A figure is null exactly when it falls among the timeouts.
        assert_eq!(l["max"].is_null(), n("timeouts") > 0, "{l}");
        assert_eq!(l["min"].is_null(), n("responses") == 0, "{l}");
        assert_eq!(l["max_measured"].is_null(), n("responses") == 0, "{l}");
    }
    let p = &r["periodic"];
    if p.is_object() {
        // Periodic: the probe takes edges; a sample is a cycle of the fitted
        // schedule, and a cycle with no edge (or too late an edge) is a
        // timeout. A missed cycle is no lost edge.
        let pn = |k: &str| p[k].as_u64().unwrap_or_else(|| panic!("periodic.{k} in {p}"));
        if let Some(taken) = c["probe_taken"].as_u64() {
            assert_eq!(pn("edges") + pn("lost"), taken, "edges + lost must be what the probe took: {c} {p}");
        }
        if p["fit"].is_object() {
            assert_eq!(n("samples"), pn("cycles"), "a sample per cycle: {c} {p}");
            assert_eq!(n("timeouts"), pn("missed_periods") + pn("late_edges"), "{c} {p}");
        }
    } else if let Some(taken) = c["probe_taken"].as_u64() {
        // Every scheduled instant is a sample (issue 42): the instants that
        // got no stimulus are samples the probe never took.
        let omitted = r["schedule"]["omitted"].as_u64().unwrap_or(0);
        assert_eq!(
            n("samples") - omitted + n("lost"),
            taken,
            "samples - omitted instants + lost must be what the probe took: {c} {}",
            r["schedule"]
        );
    }
}

/// Wait for `child` at most `limit`, then kill it and fail.
pub fn wait_with_timeout(child: &mut std::process::Child, limit: Duration) -> Output {
    let until = Instant::now() + limit;
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let o = collect(child);
            panic!("latprobe did not exit within {limit:?}\n{}", show(&o));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    collect(child)
}

fn collect(child: &mut std::process::Child) -> Output {
    let status = child.wait().expect("wait");
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_end(&mut stdout);
    }
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_end(&mut stderr);
    }
    Output { status, stdout, stderr }
}

/// The `latprobe-responder` binary that `demo` finds next to `latprobe`:
/// built once with the same cargo and target directory if it is not there
/// yet. Never skipped: without it the demo tests fail, saying why.
pub fn ensure_responder() -> PathBuf {
    static BUILD: std::sync::Once = std::sync::Once::new();
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_latprobe"));
    let dir = exe.parent().expect("latprobe has a directory").to_path_buf();
    let responder = dir.join("latprobe-responder");
    BUILD.call_once(|| {
        if responder.is_file() {
            return;
        }
        // <target>/<profile>/latprobe: the same target dir and profile.
        let target = dir.parent().expect("a target directory");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "latprobe-responder"]).env("CARGO_TARGET_DIR", target);
        if dir.file_name().is_some_and(|p| p == "release") {
            cmd.arg("--release");
        }
        let o = cmd.output().expect("run cargo build -p latprobe-responder");
        assert!(o.status.success(), "cargo build -p latprobe-responder failed:\n{}", show(&o));
    });
    assert!(responder.is_file(), "{} missing after building it", responder.display());
    responder
}

/// A target on a pty (the virtual probe's) that echoes every byte after
/// `delay(n)` for the n-th byte it receives, or never (`None`); each byte
/// goes out when it is due, so a quick one overtakes a slow one as on a
/// target that answers each as it can. Returns the bytes received.
#[allow(dead_code)]
pub fn scheduled_echo(
    path: PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    delay: fn(u64) -> Option<Duration>,
) -> JoinHandle<u64> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::thread::spawn(move || {
        let mut tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
            .open(&path)
            .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
        let mut pending: Vec<(Instant, u8)> = Vec::new();
        let mut received = 0u64;
        let mut buf = [0u8; 256];
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            match tty.read(&mut buf) {
                Ok(n) => {
                    let now = Instant::now();
                    for &b in &buf[..n] {
                        if let Some(d) = delay(received) {
                            pending.push((now + d, b));
                        }
                        received += 1;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("read {}: {e}", path.display()),
            }
            let now = Instant::now();
            pending.sort_by_key(|p| p.0);
            while pending.first().is_some_and(|p| p.0 <= now) {
                let (_, b) = pending.remove(0);
                tty.write_all(&[b]).expect("echo");
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        received
    })
}

/// The run context of a test's virtual-probe session for `request`: no
/// target, no limits, no loads.
#[allow(dead_code)]
pub fn virtual_context(request: &latprobe::model::Request) -> latprobe::model::RunContext {
    latprobe::model::RunContext {
        tool_version: latprobe::TOOL_VERSION.into(),
        source: "virtual".into(),
        started_at: "2025-01-01T00:00:00Z".into(),
        request: request.clone(),
        histfile_max_us: 1000,
        target: None,
        notes: Vec::new(),
        started_unix_ns: None,
        limits: None,
        command_line: None,
        loads: Vec::new(),
        phases: Vec::new(),
    }
}
