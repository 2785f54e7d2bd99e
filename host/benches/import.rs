//! Import time of a large cyclictest `--json` file, printed as figures (no
//! harness): 4 threads of `-N -h 250000` with every bin filled, 10⁶ bins
//! in all (the text is built in memory, then parsed as `latprobe import`
//! does). The parse must be linear in the bins: an adversarial review saw a file of
//! 4 × 50 000 bins take 282 s when every bin's line number was looked up.
//!
//! `cargo bench -p latprobe --no-default-features --bench import`. Without
//! `--bench` (as `cargo test --all-targets` runs it) it does a small smoke
//! run only.

use std::time::Instant;

fn file(threads: usize, bins: u64) -> String {
    let mut s = format!(
        "{{\n  \"cmdline:\": \"cyclictest -N -h {bins} --json=x.json\",\n  \"resolution_in_ns\": 1,\n  \
         \"thread\": {{\n"
    );
    for t in 0..threads {
        s += &format!("    \"{t}\": {{\n      \"histogram\": {{\n");
        for b in 0..bins {
            let sep = if b + 1 < bins { "," } else { "" };
            s += &format!("        \"{b}\": {}{sep}\n", 1 + b % 7);
        }
        let cycles: u64 = (0..bins).map(|b| 1 + b % 7).sum();
        let sep = if t + 1 < threads { "," } else { "" };
        s += &format!(
            "      }},\n      \"cycles\": {cycles},\n      \"min\": 0,\n      \"max\": {},\n      \
             \"avg\": 1.0,\n      \"cpu\": {t}\n    }}{sep}\n",
            bins - 1
        );
    }
    s + "  }\n}\n"
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (threads, bins) = if full { (4, 250_000) } else { (2, 1_000) };
    let text = file(threads, bins);
    let t0 = Instant::now();
    let runs = latprobe::import::import_str("bench.json", &text).expect("a valid cyclictest file");
    let took = t0.elapsed();
    let got: usize = runs.iter().map(|r| r.bins_ns.len()).sum();
    assert_eq!(got as u64, threads as u64 * bins);
    println!(
        "import: cyclictest --json, {threads} threads x {bins} bins = {got} bins, {:.1} MB: {:.3} s ({:.0} ns/bin)",
        text.len() as f64 / 1e6,
        took.as_secs_f64(),
        took.as_nanos() as f64 / got as f64
    );
    if !full {
        println!("(smoke run: pass --bench, as `cargo bench` does, for the real figures)");
    }
}
