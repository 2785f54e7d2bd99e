//! The cyclictest and rtla importers on arbitrary text: an error naming the
//! line, or runs whose figures hold together; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(runs) = latprobe::import::import_str("fuzz", text) {
        for r in &runs {
            assert!(r.overflows <= r.count, "more overflows than samples: {r:?}");
            let _ = r.quantile(0.5);
            let _ = r.quantile(0.9999);
        }
    }
});
