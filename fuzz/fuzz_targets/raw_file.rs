//! A raw file (`--raw`) of arbitrary bytes replayed through the same link,
//! session and analysis as a live run: an error or a report, never a panic.
//! The first byte picks the header (bit 0) and whether the periodic cycles
//! are kept and set beside a target log (bit 1; the seed
//! `periodic_clock_jump` is an edge 2^62 ticks ahead (a damaged stamp)).
#![no_main]

use libfuzzer_sys::fuzz_target;

fn scratch(ext: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new("/dev/shm");
    let dir = if dir.is_dir() { dir.to_path_buf() } else { std::env::temp_dir() };
    dir.join(format!("latprobe-fuzz-{}.{ext}", std::process::id()))
}

fuzz_target!(|data: &[u8]| {
    // One file per process, rewritten each run (in RAM where /dev/shm is).
    let path = scratch("raw");
    // An even first byte gets the header of a real demo recording, so the
    // fuzzer reaches the probe's byte stream; an odd one fuzzes the header.
    let Some((&first, rest)) = data.split_first() else { return };
    let mut bytes = Vec::new();
    if first & 1 == 0 {
        bytes.extend_from_slice(include_bytes!("../seeds/raw_header.bin"));
    }
    bytes.extend_from_slice(rest);
    std::fs::write(&path, &bytes).expect("write");
    if first & 2 != 0 {
        // Bit 1: the `--target-log` path (the cycles kept in a spill file,
        // set beside a small target log), as `latprobe report --target-log`.
        let log = scratch("log");
        if !log.exists() {
            let mut text = String::from("# latprobe-responder periodic log 1\n# interval_ns 1000000\n");
            for k in 0..3_000u64 {
                text += &format!("{k} {}\n", 3_000 + (k * 7919) % 500 * 10);
            }
            std::fs::write(&log, text).expect("write");
        }
        if let Ok(rep) = latprobe::cmd::report::load_with(&path, None, Some(&log)) {
            let _ = latprobe::report::text::summary(&rep);
        }
        return;
    }
    if let Ok(r) = latprobe::session::replay(&path, None) {
        let rep = latprobe::report::build(&r.ctx, &r.state, r.bad_frames, r.ending);
        let _ = latprobe::report::text::summary(&rep);
    }
});
