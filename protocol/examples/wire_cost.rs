//! Prints bytes per sample on the wire for realistic batches: 100 MHz ticks,
//! 1 ms interval, latencies 10 µs–1 ms. Run with
//! `cargo run --release -p latprobe-protocol --example wire_cost`.
use latprobe_protocol::*;

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn cost(label: &str, n: u64, dither: u32, latency: &mut dyn FnMut(&mut Rng) -> Outcome) -> f64 {
    const HZ: u64 = 100_000_000;
    let interval = (HZ / 1000) as u32;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut b = SampleBatchBuilder::new(interval, MAX_BATCH_COUNT);
    let mut buf = [0u8; MAX_FRAME_LEN];
    let (mut bytes, mut frames) = (0u64, 0u64);
    let mut flush = |b: &SampleBatchBuilder, bytes: &mut u64, frames: &mut u64| {
        *bytes += encode_message(&ProbeMsg::SampleBatch(b.batch()), &mut buf).unwrap() as u64;
        *frames += 1;
    };
    let mut nominal = 1u64 << 32;
    for seq in 0..n {
        let tick = nominal + if dither > 0 { rng.below(u64::from(dither) + 1) } else { 0 };
        nominal += u64::from(interval);
        let s = Sample {
            seq,
            stimulus_tick: tick,
            outcome: latency(&mut rng),
            triggered: false,
            late_ticks: 0,
            omitted: 0,
        };
        if b.push(&s) == Err(BatchError::Full) {
            flush(&b, &mut bytes, &mut frames);
            b.clear();
            b.push(&s).unwrap();
        }
    }
    flush(&b, &mut bytes, &mut frames);
    let per = bytes as f64 / n as f64;
    println!("{label:<48} {per:5.2} B/sample  ({:.1} samples/frame)", n as f64 / frames as f64);
    per
}

fn main() {
    let n = 1_000_000;
    println!("{n} samples, 100 MHz ticks, 1 ms interval, frames of at most {MAX_FRAME_LEN} B");
    // Log-uniform 10 µs .. 1 ms (1_000 .. 100_000 ticks), 1 % timeouts.
    let mut log_uniform = |r: &mut Rng| {
        if r.below(100) == 0 {
            return Outcome::Timeout;
        }
        let exp = r.below(1 << 16) as f64 / f64::from(1 << 16) * 2.0;
        Outcome::Response((1_000.0 * 10f64.powf(exp)) as u32)
    };
    let a = cost("latency log-uniform 10us..1ms, no dither", n, 0, &mut log_uniform);
    let b = cost("latency log-uniform 10us..1ms, dither 100us", n, 10_000, &mut log_uniform);
    let mut uniform = |r: &mut Rng| Outcome::Response(1_000 + r.below(99_001) as u32);
    let c = cost("latency uniform 10us..1ms, dither 100us", n, 10_000, &mut uniform);
    let worst = a.max(b).max(c);
    println!("worst case above: {worst:.2} B/sample (goal <= 6)");
    if worst > 6.0 {
        eprintln!("goal missed: {worst:.2} B/sample > 6");
        std::process::exit(1);
    }
}
