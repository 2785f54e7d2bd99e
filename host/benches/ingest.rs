//! Ingest throughput and memory, printed as figures (no harness):
//!
//! 1. A framed stream of 10⁷ samples held in memory, made with the real
//!    encoder: the time to merely read it (copy it through a 64 KiB buffer
//!    as the link does and find the frame delimiters), then the time of the
//!    real path (deframe, decode, sequence tracking, histogram, bins), and
//!    the ratio of the two.
//! 2. Peak RSS while 10⁸ samples, generated on the fly and never held,
//!    stream through the same path: memory must not grow with the run.
//! 3. Periodic mode: a 24-hour run at 1 kHz (8.64 × 10⁷ edges of a target
//!    clock 20 ppm fast), generated on the fly, through the same path and
//!    the streaming fit: its peak RSS, and the fit's own buffer.
//! 4. The per-sample export (`report --samples`) of a 24-hour run at 1 kHz
//!    to CSV and to Parquet: rows/s, bytes/row, and the peak RSS, which
//!    must not grow with the run.
//!
//! `cargo bench -p latprobe --bench ingest`. Without `--bench` (as `cargo
//! test --all-targets` runs it) it does a small smoke run only.

use std::hint::black_box;
use std::io::Read as _;
use std::time::Instant;

use latprobe::link::{Deframer, Incoming};
use latprobe::session::RunState;
use latprobe_protocol::{
    encode_message, Capabilities, Config, EdgeBatchBuilder, EdgeStamp, Mode, Outcome, ProbeInfo, ProbeMsg,
    Sample, SampleBatchBuilder, Stimulus, MAX_FRAME_LEN,
};

const HZ: u32 = 100_000_000;
const INTERVAL: u32 = 100_000; // 1 ms

/// A small, fast, deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn frame(msg: &ProbeMsg<'_>, out: &mut Vec<u8>) {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = encode_message(msg, &mut buf).expect("frame");
    out.extend_from_slice(&buf[..n]);
}

fn preamble(out: &mut Vec<u8>) {
    let info = ProbeInfo {
        protocol_version: latprobe_protocol::PROTOCOL_VERSION,
        firmware_version: "bench",
        board: "bench",
        timer_hz: HZ,
        timer_bits: 32,
        capabilities: Capabilities::UART_ECHO,
        max_batch: 64,
        target_baud: 0,
        build_id: 0,
    };
    frame(&ProbeMsg::Hello(info), out);
    let config = Config {
        mode: Mode::UartEcho,
        interval_ticks: INTERVAL,
        dither_ticks: 2_000,
        timeout_ticks: 8 * INTERVAL,
        guard_ticks: 10_000,
        count: None,
        seed: 1,
        stimulus: Stimulus::Identified,
        trigger_ticks: 0,
    };
    frame(&ProbeMsg::Configured(config), out);
    frame(&ProbeMsg::Started { start_tick: 0, first_seq: 0 }, out);
}

/// Generates batches of realistic samples: 5..200 µs latencies with a long
/// tail, dithered stimuli, one timeout in a thousand.
struct Gen {
    rng: Rng,
    seq: u64,
    tick: u64,
    batch: SampleBatchBuilder,
}

impl Gen {
    fn new() -> Self {
        Self {
            rng: Rng(0x9e37_79b9_7f4a_7c15),
            seq: 0,
            tick: 0,
            batch: SampleBatchBuilder::new(INTERVAL, 64),
        }
    }

    /// Append frames for about `n` more samples to `out`.
    fn frames(&mut self, n: u64, out: &mut Vec<u8>) {
        let end = self.seq + n;
        while self.seq < end {
            let r = self.rng.next();
            let outcome = if r % 1000 == 0 {
                Outcome::Timeout
            } else {
                let base = 500 + (r >> 16) % 3_000; // 5..35 µs
                let tail = if (r >> 40) % 100 == 0 { (r >> 8) % 17_000 } else { 0 };
                Outcome::Response((base + tail) as u32)
            };
            let s = Sample {
                seq: self.seq,
                stimulus_tick: self.tick + (r >> 50) % 2_000,
                outcome,
                triggered: false,
                late_ticks: 0,
                omitted: 0,
            };
            if self.batch.push(&s).is_err() {
                frame(&ProbeMsg::SampleBatch(self.batch.batch()), out);
                self.batch.clear();
                self.batch.push(&s).expect("an empty batch takes a sample");
            }
            self.seq += 1;
            self.tick += u64::from(INTERVAL);
        }
    }

    fn flush(&mut self, out: &mut Vec<u8>) {
        if !self.batch.is_empty() {
            frame(&ProbeMsg::SampleBatch(self.batch.batch()), out);
            self.batch.clear();
        }
    }
}

/// A periodic run's preamble: a probe that offers periodic mode, 1 ms.
fn periodic_preamble(out: &mut Vec<u8>) {
    let info = ProbeInfo {
        protocol_version: latprobe_protocol::PROTOCOL_VERSION,
        firmware_version: "bench",
        board: "bench",
        timer_hz: HZ,
        timer_bits: 32,
        capabilities: Capabilities::PERIODIC,
        max_batch: 64,
        target_baud: 0,
        build_id: 0,
    };
    frame(&ProbeMsg::Hello(info), out);
    let config = Config {
        mode: Mode::Periodic,
        interval_ticks: INTERVAL,
        dither_ticks: 0,
        timeout_ticks: 8 * INTERVAL,
        guard_ticks: 0,
        count: None,
        seed: 1,
        stimulus: Stimulus::None(latprobe_protocol::ResponseLine::Uart),
        trigger_ticks: 0,
    };
    frame(&ProbeMsg::Configured(config), out);
    frame(&ProbeMsg::Started { start_tick: 0, first_seq: 0 }, out);
}

/// Stream `n` periodic edges of a target 20 ppm fast (wake-ups of 5..35 µs,
/// one in a hundred up to 200 µs later) through `state`, generated on the
/// fly in chunks.
fn periodic_stream(state: &mut RunState, n: u64) {
    let mut deframer = Deframer::new();
    let mut chunk = Vec::with_capacity(80 * 1024);
    periodic_preamble(&mut chunk);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut batch = EdgeBatchBuilder::new(64);
    let period = f64::from(INTERVAL) / (1.0 + 20e-6);
    let mut last = 0u64;
    for seq in 0..n {
        let r = rng.next();
        let d = 500 + (r >> 16) % 3_000 + if (r >> 40) % 100 == 0 { (r >> 8) % 20_000 } else { 0 };
        let tick = ((1_000.0 + period * seq as f64) as u64 + d).max(last + 1);
        last = tick;
        let e = EdgeStamp { seq, tick };
        if batch.push(&e).is_err() {
            frame(&ProbeMsg::EdgeBatch(batch.batch()), &mut chunk);
            batch.clear();
            batch.push(&e).expect("an empty batch takes an edge");
        }
        if chunk.len() >= 64 * 1024 {
            ingest(state, &mut deframer, &chunk);
            chunk.clear();
        }
    }
    if !batch.is_empty() {
        frame(&ProbeMsg::EdgeBatch(batch.batch()), &mut chunk);
    }
    ingest(state, &mut deframer, &chunk);
    state.finalize();
}

fn ingest(state: &mut RunState, deframer: &mut Deframer, bytes: &[u8]) {
    deframer.feed(bytes, |inc: Incoming<'_>| state.on_incoming(inc));
}

/// getrusage's peak RSS in KiB. It survives execve(2), so a process
/// started by cargo starts with cargo's own peak: see [`vm_hwm_kib`].
fn ru_maxrss_kib() -> i64 {
    // SAFETY: getrusage fills a valid, zeroed rusage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_maxrss // KiB on Linux
}

/// This process image's own peak RSS (VmHWM, KiB), which execve resets.
fn vm_hwm_kib() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("VmHWM:").and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
        })
        .unwrap_or(-1)
}

/// Feed `n` samples, generated on the fly in chunks of 16 384 and never
/// held, through the real path into `state`.
fn stream(state: &mut RunState, n: u64) {
    let mut gen = Gen::new();
    let mut deframer = Deframer::new();
    let mut chunk = Vec::with_capacity(80 * 1024);
    preamble(&mut chunk);
    let mut left = n;
    while left > 0 {
        let k = left.min(16_384);
        gen.frames(k, &mut chunk);
        if k == left {
            gen.flush(&mut chunk);
        }
        ingest(state, &mut deframer, &chunk);
        chunk.clear();
        left -= k;
    }
}

/// Reset the process's peak RSS to its size now (Linux ≥ 4.0); without it
/// the figure that follows is the peak since the start.
fn reset_hwm() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (n_mem, n_stream) = if full { (10_000_000u64, 100_000_000u64) } else { (10_000, 100_000) };

    // 2 first: the peak RSS of the process must not include part 1's buffer.
    let hwm_before = vm_hwm_kib();
    let t = Instant::now();
    let mut state = RunState::new(1000, false);
    stream(&mut state, n_stream);
    let a = state.analysis.as_ref().expect("started");
    assert_eq!(a.samples() + a.seq.lost, n_stream);
    assert_eq!(a.seq.lost, 0);
    let hwm = vm_hwm_kib();
    println!(
        "stream of {n_stream} samples generated on the fly: peak RSS (VmHWM) {:.1} MiB \
         (at start {:.1} MiB), {:.1} s; getrusage ru_maxrss {:.1} MiB (inherits cargo's peak across exec)",
        hwm as f64 / 1024.0,
        hwm_before as f64 / 1024.0,
        t.elapsed().as_secs_f64(),
        ru_maxrss_kib() as f64 / 1024.0
    );
    drop(state);

    // 3: periodic, 24 hours at 1 kHz, fitted in a bounded window.
    let n_edges = if full { 86_400_000u64 } else { 200_000 };
    let t = Instant::now();
    let mut state = RunState::new(1000, true);
    periodic_stream(&mut state, n_edges);
    let a = state.analysis.as_ref().expect("started");
    let fit = a.fit.as_ref().expect("periodic fit");
    assert_eq!((fit.edges, fit.missed, a.samples()), (n_edges, 0, n_edges));
    let ppm = fit.offset_ppm().expect("offset");
    assert!((ppm - 20.0).abs() < 0.01, "offset {ppm} ppm, generated at 20");
    let hwm = vm_hwm_kib();
    println!(
        "periodic: {n_edges} edges (24 h at 1 kHz in the full run) fitted on the fly: peak RSS (VmHWM) \
         {:.1} MiB after both streams, {:.1} s ({:.1} M edges/s); the fit holds at most {} edges \
         ({} KiB) and a few histograms; offset {ppm:.4} ppm (generated at 20)",
        hwm as f64 / 1024.0,
        t.elapsed().as_secs_f64(),
        n_edges as f64 / t.elapsed().as_secs_f64() / 1e6,
        latprobe::analysis::periodic::BLOCK_EDGES + 64 + 8 + 4,
        (latprobe::analysis::periodic::BLOCK_EDGES + 76) * 16 / 1024
    );
    drop(state);

    // 4: the per-sample export (`report --samples`) of a 24-hour run at
    // 1 kHz, generated on the fly: CSV and Parquet, each from a peak reset
    // to the process's size now, so the peak is the export's own.
    let n_rows = if full { 86_400_000u64 } else { 100_000 };
    let dir = tempfile::tempdir().expect("a temporary directory");
    for name in ["samples.csv", "samples.parquet"] {
        let path = dir.path().join(name);
        let (export, sink) = latprobe::samples::Export::create(&path).expect("create the export");
        reset_hwm();
        let hwm_before = vm_hwm_kib();
        let t = Instant::now();
        let mut state = RunState::new(1000, false);
        state.rows = Some(sink);
        stream(&mut state, n_rows);
        let feed = state.analysis.as_mut().and_then(|a| a.rows.take()).expect("the rows' feed");
        let rows = feed.finish(&latprobe::samples::RunInfo::default()).expect("write the export");
        assert_eq!(rows, n_rows);
        let secs = t.elapsed().as_secs_f64();
        let path = export.commit().expect("name the export");
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        println!(
            "export of {n_rows} samples (24 h at 1 kHz in the full run) to {name}: {:.1} s ({:.2} M rows/s), \
             {:.1} MB ({:.2} bytes/row), peak RSS (VmHWM) {:.1} MiB from {:.1} MiB before it",
            secs,
            n_rows as f64 / secs / 1e6,
            size as f64 / 1e6,
            size as f64 / n_rows as f64,
            vm_hwm_kib() as f64 / 1024.0,
            hwm_before as f64 / 1024.0,
        );
        drop(state);
    }

    // 1: the stream in memory.
    let mut stream = Vec::with_capacity((n_mem * 4) as usize);
    preamble(&mut stream);
    let mut gen = Gen::new();
    gen.frames(n_mem, &mut stream);
    gen.flush(&mut stream);
    let mb = stream.len() as f64 / 1e6;
    println!(
        "in-memory stream: {n_mem} samples, {mb:.1} MB of frames ({:.2} bytes/sample)",
        stream.len() as f64 / n_mem as f64
    );

    let mut best_read = f64::MAX;
    let mut best_ingest = f64::MAX;
    for _ in 0..3 {
        // Merely reading: through a 64 KiB buffer as the link does, counting delimiters.
        let t = Instant::now();
        let mut src = &stream[..];
        let mut buf = vec![0u8; 64 * 1024];
        let mut zeros = 0usize;
        loop {
            let n = src.read(&mut buf).expect("read from memory");
            if n == 0 {
                break;
            }
            zeros += buf[..n].iter().filter(|&&b| b == 0).count();
        }
        black_box(zeros);
        best_read = best_read.min(t.elapsed().as_secs_f64());

        // The real path, through the same 64 KiB reads.
        let t = Instant::now();
        let mut state = RunState::new(1000, false);
        let mut deframer = Deframer::new();
        let mut src = &stream[..];
        loop {
            let n = src.read(&mut buf).expect("read from memory");
            if n == 0 {
                break;
            }
            ingest(&mut state, &mut deframer, &buf[..n]);
        }
        let a = state.analysis.as_ref().expect("started");
        assert_eq!(a.samples(), n_mem);
        black_box(a.quantile(0.99));
        best_ingest = best_ingest.min(t.elapsed().as_secs_f64());
    }
    // Where the time goes: framing alone (COBS + CRC), then message decode.
    let mut best_frames = f64::MAX;
    let mut best_decode = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let mut dec: latprobe_protocol::FrameDecoder = latprobe_protocol::FrameDecoder::new();
        let mut rest = &stream[..];
        let mut frames = 0u64;
        loop {
            match dec.feed(rest) {
                latprobe_protocol::Feed::NeedMore => break,
                latprobe_protocol::Feed::Frame { rest: r, .. }
                | latprobe_protocol::Feed::Bad { rest: r, .. } => {
                    frames += 1;
                    rest = r;
                }
            }
        }
        black_box(frames);
        best_frames = best_frames.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let mut deframer = Deframer::new();
        let mut n = 0u64;
        deframer.feed(&stream, |inc| {
            if let Incoming::Message(ProbeMsg::SampleBatch(b)) = inc {
                n += u64::from(b.count);
            }
        });
        black_box(n);
        best_decode = best_decode.min(t.elapsed().as_secs_f64());
    }
    println!("plain read:        {:>8.1} MB/s ({:.3} s)", mb / best_read, best_read);
    println!("  framing only:    {:>8.1} MB/s (COBS + CRC-32, no message decode)", mb / best_frames);
    println!("  + decode:        {:>8.1} MB/s (messages, samples not iterated)", mb / best_decode);
    println!(
        "decode + ingest:   {:>8.1} MB/s ({:.3} s), {:.1} M samples/s",
        mb / best_ingest,
        best_ingest,
        n_mem as f64 / best_ingest / 1e6
    );
    println!("ratio to plain read: {:.1} %", 100.0 * best_read / best_ingest);
    if !full {
        println!("(smoke run: pass --bench, as `cargo bench` does, for the real figures)");
    }
}
