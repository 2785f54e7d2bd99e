//! A fault-injecting byte pipe between a probe and the host.
//!
//! ```text
//!  latprobe run --port unix:PIPE ──▶ FaultPipe ──▶ probe  (host → probe: passed as is)
//!                                ◀── faults  ◀──          (probe → host: frame by frame)
//! ```
//!
//! The probe is any [`ByteSource`]: the virtual probe's host end, or QEMU's
//! host-link socket. The probe's stream is cut at its frame delimiters; each
//! sample batch may be dropped, have a bit flipped, be sent twice, be held
//! back behind the next batch, or follow a burst of garbage, by a seeded
//! generator, and the pipe keeps the truth: what it did to which sample,
//! and the probe's own totals from its `Stopped`. Control frames (Hello,
//! Configured, Started, Stopped, heartbeats) always pass intact, so that a
//! run's outcome is known and the host's counts can be compared exactly.
//! The upstream can be swapped mid-run ([`FaultPipe::replace_upstream`]):
//! a probe reset.

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use latprobe::source::{ByteSource, Read as Got};
use latprobe_protocol::{decode_message, Feed, FrameDecoder, ProbeMsg, Stopped};

use crate::rng::SplitMix64 as Rng;

/// What to do to the probe's sample batches, each a probability per batch
/// (at most one fault per batch).
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    /// Seed of the generator.
    pub seed: u64,
    /// Drop the batch.
    pub drop: f64,
    /// Flip one bit inside it (its CRC then fails: the batch is lost).
    pub flip: f64,
    /// Send it twice.
    pub duplicate: f64,
    /// Hold it back behind the next batch.
    pub reorder: f64,
    /// Send a burst of garbage (1 to 200 bytes, no delimiter) before it.
    pub garbage: f64,
}

/// What the pipe did, and what the probe said.
#[derive(Debug, Clone, Default)]
pub struct Truth {
    /// Sample batches seen from the probe.
    pub batches: u64,
    /// Samples in them.
    pub samples: u64,
    /// Samples in dropped batches.
    pub dropped: u64,
    /// Samples in batches with a flipped bit.
    pub flipped: u64,
    /// Batches with a flipped bit.
    pub flipped_batches: u64,
    /// The scheduled instants the samples in dropped or damaged batches
    /// carried as omitted (their waits skipped): lost with them, so the
    /// host cannot count them.
    pub omitted_lost: u64,
    /// Samples sent twice.
    pub duplicated: u64,
    /// Batches held back behind the next one.
    pub reordered: u64,
    /// Garbage bursts sent.
    pub garbage_bursts: u64,
    /// Hello frames from the probe.
    pub hellos: u64,
    /// The probe's `Stopped`, if it came.
    pub stopped: Option<Stopped>,
}

impl Truth {
    /// Samples the host cannot have: dropped or damaged on the way.
    pub fn lost_on_the_link(&self) -> u64 {
        self.dropped + self.flipped
    }
}

type Upstream = Box<dyn ByteSource>;

/// The pipe: listens on a unix socket for `latprobe`, relays to a probe.
pub struct FaultPipe {
    /// Where `latprobe run --port unix:PATH` connects.
    pub sock: PathBuf,
    truth: Arc<Mutex<Truth>>,
    next: Arc<Mutex<Option<Upstream>>>,
    paused: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for FaultPipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultPipe").field("sock", &self.sock).finish()
    }
}

impl FaultPipe {
    /// Listen at `sock`; relay the first client to `upstream`, with `faults`.
    pub fn start(sock: PathBuf, upstream: Upstream, faults: Faults) -> FaultPipe {
        let listener = UnixListener::bind(&sock).expect("bind the fault pipe");
        let truth = Arc::new(Mutex::new(Truth::default()));
        let next = Arc::new(Mutex::new(None));
        let paused = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (t, n, pz, st) = (truth.clone(), next.clone(), paused.clone(), stop.clone());
        let handle = std::thread::spawn(move || {
            listener.set_nonblocking(true).expect("nonblocking listener");
            let client = loop {
                match listener.accept() {
                    Ok((c, _)) => break c,
                    Err(_) if st.load(Ordering::Relaxed) => return,
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            };
            client.set_nonblocking(false).expect("blocking client");
            client.set_read_timeout(Some(Duration::from_millis(1))).expect("read timeout");
            let mut pump = Pump::new(client, upstream, faults, t);
            pump.run(&n, &pz, &st);
        });
        FaultPipe { sock, truth, next, paused, stop, handle: Some(handle) }
    }

    /// `--port` for latprobe.
    pub fn port(&self) -> String {
        format!("unix:{}", self.sock.display())
    }

    /// What happened so far.
    pub fn truth(&self) -> Truth {
        self.truth.lock().expect("truth").clone()
    }

    /// From now on relay to `upstream` (the old one is dropped): the probe
    /// was reset, or replaced.
    pub fn replace_upstream(&self, upstream: Upstream) {
        *self.next.lock().expect("next") = Some(upstream);
    }

    /// Stop reading the probe (its bytes wait in the link, as when the
    /// host is suspended) or go on.
    pub fn pause(&self, paused: bool) {
        self.paused.store(paused, Ordering::Relaxed);
    }
}

impl Drop for FaultPipe {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

struct Pump {
    client: std::os::unix::net::UnixStream,
    upstream: Upstream,
    faults: Faults,
    rng: Rng,
    truth: Arc<Mutex<Truth>>,
    /// Bytes of the current frame so far (no delimiter).
    token: Vec<u8>,
    /// A batch held back, to go after the next one.
    held: Option<Vec<u8>>,
    decoder: FrameDecoder,
}

impl Pump {
    fn new(
        client: std::os::unix::net::UnixStream,
        upstream: Upstream,
        faults: Faults,
        truth: Arc<Mutex<Truth>>,
    ) -> Self {
        Pump {
            client,
            upstream,
            rng: Rng::new(faults.seed),
            faults,
            truth,
            token: Vec::new(),
            held: None,
            decoder: FrameDecoder::new(),
        }
    }

    fn run(&mut self, next: &Mutex<Option<Upstream>>, paused: &AtomicBool, stop: &AtomicBool) {
        let mut buf = vec![0u8; 1 << 16];
        while !stop.load(Ordering::Relaxed) {
            if let Some(up) = next.lock().expect("next").take() {
                self.upstream = up;
                self.token.clear();
            }
            // Host → probe, untouched.
            match self.client.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    if self.upstream.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(_) => return,
            }
            if paused.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            // Probe → host, frame by frame.
            match self.upstream.read(&mut buf, Duration::from_millis(1)) {
                Ok(Got::Data(n)) => {
                    let bytes = buf[..n].to_vec();
                    if !self.feed(&bytes) {
                        return;
                    }
                }
                Ok(Got::Timeout) => {}
                Ok(Got::Closed) | Err(_) => {
                    // The probe went away (killed QEMU): so does the link.
                    if next.lock().expect("next").is_none() {
                        let _ = self.client.shutdown(std::net::Shutdown::Both);
                        return;
                    }
                }
            }
        }
    }

    /// Cut `bytes` into frames and pass each on; false when the host is gone.
    fn feed(&mut self, bytes: &[u8]) -> bool {
        for &b in bytes {
            if b != 0 {
                self.token.push(b);
                continue;
            }
            if self.token.is_empty() {
                continue;
            }
            let token = std::mem::take(&mut self.token);
            if !self.frame(token) {
                return false;
            }
        }
        true
    }

    fn send(&mut self, token: &[u8]) -> bool {
        let mut out = Vec::with_capacity(token.len() + 2);
        out.push(0);
        out.extend_from_slice(token);
        out.push(0);
        self.client.write_all(&out).is_ok()
    }

    fn frame(&mut self, token: Vec<u8>) -> bool {
        // What is it? The real decoder says.
        let mut framed = Vec::with_capacity(token.len() + 1);
        framed.extend_from_slice(&token);
        framed.push(0);
        let kind = match self.decoder.feed(&framed) {
            Feed::Frame { frame, .. } => match decode_message::<ProbeMsg<'_>>(frame) {
                Ok(ProbeMsg::SampleBatch(b)) => {
                    Kind::Batch(u64::from(b.count), b.iter().flatten().map(|s| u64::from(s.omitted)).sum())
                }
                Ok(ProbeMsg::EdgeBatch(b)) => Kind::Batch(u64::from(b.count), 0),
                Ok(ProbeMsg::Stopped(s)) => Kind::Stopped(s),
                Ok(ProbeMsg::Hello(_)) => Kind::Hello,
                _ => Kind::Other,
            },
            _ => Kind::Other,
        };
        let (n, omitted) = match kind {
            Kind::Batch(n, omitted) => (n, omitted),
            other => {
                let mut t = self.truth.lock().expect("truth");
                match other {
                    Kind::Stopped(s) => t.stopped = Some(s),
                    Kind::Hello => t.hellos += 1,
                    _ => {}
                }
                drop(t);
                // A held batch goes first: nothing overtakes a control frame.
                if let Some(h) = self.held.take() {
                    if !self.send(&h) {
                        return false;
                    }
                }
                return self.send(&token);
            }
        };
        let f = self.faults;
        let roll = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let mut t = self.truth.lock().expect("truth");
        t.batches += 1;
        t.samples += n;
        let mut out: Vec<Vec<u8>> = Vec::new();
        let mut garbage = None;
        let mut acc = 0.0;
        let mut hit = |p: f64| {
            acc += p;
            roll < acc
        };
        if hit(f.drop) {
            t.dropped += n;
            t.omitted_lost += omitted;
        } else if hit(f.flip) {
            let mut damaged = token.clone();
            let at = self.rng.range(0, damaged.len() as u64 - 1) as usize;
            let mut bit = self.rng.range(0, 7) as u8;
            // A flip to 0x00 would split the frame: take another bit.
            while damaged[at] ^ (1 << bit) == 0 {
                bit = (bit + 1) % 8;
            }
            damaged[at] ^= 1 << bit;
            t.flipped += n;
            t.flipped_batches += 1;
            t.omitted_lost += omitted;
            out.push(damaged);
        } else if hit(f.duplicate) {
            t.duplicated += n;
            out.push(token.clone());
            out.push(token);
        } else if hit(f.reorder) && self.held.is_none() {
            t.reordered += 1;
            self.held = Some(token);
        } else {
            if hit(f.garbage) {
                t.garbage_bursts += 1;
                let len = self.rng.range(1, 200) as usize;
                garbage = Some((0..len).map(|_| self.rng.range(1, 255) as u8).collect::<Vec<u8>>());
            }
            out.push(token);
        }
        drop(t);
        if let Some(g) = garbage {
            // Garbage with no delimiter: it runs into the next frame's
            // opening delimiter and is one bad frame.
            if self.client.write_all(&g).is_err() {
                return false;
            }
        }
        for frame in out {
            if !self.send(&frame) {
                return false;
            }
            if let Some(h) = self.held.take() {
                if !self.send(&h) {
                    return false;
                }
            }
        }
        true
    }
}

enum Kind {
    /// Samples (or edges), and the omitted instants the samples carry.
    Batch(u64, u64),
    Stopped(Stopped),
    Hello,
    Other,
}
