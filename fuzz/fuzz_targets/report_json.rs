//! `latprobe report` on an arbitrary JSON file (reports of schema 1 and 2,
//! in-kernel documents, anything else): an error or a report, never a
//! panic or a runaway allocation; a report it reads renders in every format.
#![no_main]

use libfuzzer_sys::fuzz_target;

fn scratch(ext: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new("/dev/shm");
    let dir = if dir.is_dir() { dir.to_path_buf() } else { std::env::temp_dir() };
    dir.join(format!("latprobe-fuzz-{}.{ext}", std::process::id()))
}

fuzz_target!(|data: &[u8]| {
    // One file per process, rewritten each run (in RAM where /dev/shm is).
    let path = scratch("json");
    std::fs::write(&path, data).expect("write");
    if let Ok(r) = latprobe::report::json::read(&path) {
        let _ = latprobe::report::text::summary(&r);
        let _ = latprobe::report::histfile::render(&r);
        let _ = latprobe::report::json::to_string(&r);
    }
});
