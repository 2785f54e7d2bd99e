//! A raw file (`--raw`) of arbitrary bytes replayed through the same link,
//! session and analysis as a live run: an error or a report, never a panic.
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
    if let Ok(r) = latprobe::session::replay(&path, None) {
        let rep = latprobe::report::build(&r.ctx, &r.state, r.bad_frames, r.ending);
        let _ = latprobe::report::text::summary(&rep);
    }
});
