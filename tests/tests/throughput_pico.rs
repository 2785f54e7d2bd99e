//! A figure, not a timed test: the `rp2040-pico` firmware's core cycles per
//! sample in rp2040js, which counts every instruction's cycles, split by
//! where the cycles went (the function each instruction belongs to).
//!
//! Each mode runs twice, with `SHORT` and `LONG` samples, under the
//! harness's `--profile` (core cycles by instruction address); the figure
//! per sample is the difference of the two over the difference of the
//! samples, so boot, USB enumeration, the handshake and the run's end cancel
//! out. Addresses map to the ELF's function symbols, and a function to a
//! part by its path (an inlined callee counts where it was inlined: RTIC
//! inlines the engine task into `SW0_IRQ`). The exception entries rp2040js
//! stacks in zero cycles are counted at 15 cycles each (the harness adds
//! them, tests/rp2040/GAPS.md), as dispatch. "timer" is the firmware's
//! reads of its PIO clock and capture FIFOs, "builtins" the compiler's
//! memcpy and software division (the M0+ has no divide instruction).
//!
//! Ignored in the plain test run; scripts/test runs it and prints the table:
//! `cargo test -p latprobe-tests --test
//! throughput_pico -- --ignored --nocapture`. It asserts only what must hold whatever
//! the figures: every sample taken and none lost, and the parts adding up
//! to the profile's total.

#[allow(dead_code)]
#[path = "rp2040/harness.rs"]
mod harness;

use std::collections::BTreeMap;

use harness::{artifacts, Artifacts, Pico};
use object::{Object as _, ObjectSymbol as _};

const SHORT: u64 = 500;
const LONG: u64 = 2_500;
/// The system clock: 125 MHz.
const CORE_HZ: u64 = 125_000_000;

/// The parts, in print order, each with the path fragments that pick it
/// (the first part whose fragment a function's path holds). RTIC inlines a
/// task's body into its interrupt handler: the engine task is `SW0_IRQ`.
const PARTS: [(&str, &[&str]); 8] = [
    ("capture", &["hwloop::front", "pico::edges", "PIO0_IRQ"]),
    ("timer", &["pico::timer"]),
    ("encoding", &["postcard", "cobs", "crc", "framing", "batch", "varint", "outbox", "txq", "serde"]),
    (
        "engine",
        &["latprobe_firmware::engine", "latprobe_firmware::hwloop", "latprobe_firmware::ticks", "SW0_IRQ"],
    ),
    ("usb", &["usb_device", "usbd_serial", "rp2040_hal::usb", "USBCTRL"]),
    ("builtins", &["compiler_builtins", "memcpy", "memset", "memmove", "__aeabi"]),
    ("dispatch", &["rtic", "cortex_m", "TIMER_IRQ", "portable_atomic", "critical_section"]),
    ("other", &[""]),
];

/// `_ZN3foo3bar17h0123456789abcdefE` → `foo::bar` (legacy mangling; other
/// names as they are).
fn demangle(name: &str) -> String {
    let Some(mut rest) = name.strip_prefix("_ZN") else { return name.to_owned() };
    let mut parts = Vec::new();
    while let Some(len_end) = rest.find(|c: char| !c.is_ascii_digit()) {
        let Ok(len) = rest[..len_end].parse::<usize>() else { break };
        let Some(seg) = rest.get(len_end..len_end + len) else { break };
        if !(seg.len() == 17 && seg.starts_with('h') && seg[1..].bytes().all(|b| b.is_ascii_hexdigit())) {
            parts.push(seg);
        }
        rest = &rest[len_end + len..];
    }
    parts
        .join("::")
        .replace("$LT$", "<")
        .replace("$GT$", ">")
        .replace("$u20$", " ")
        .replace("$RF$", "&")
        .replace("..", "::")
}

/// The ELF's functions: (start, end, path), by start. Names the linker
/// folded into one body (identical code: the PIO0, PIO1 and alarm
/// interrupts all lock the timer and call `on_timer_interrupt`) are joined
/// with " = ", so the body counts where the first part that names one of
/// them puts it (`PIO0_IRQ`: capture), not where the alphabet does.
fn functions(elf: &[u8]) -> Vec<(u64, u64, String)> {
    let file = object::File::parse(elf).expect("the firmware ELF");
    let mut f: Vec<(u64, u64, String)> = file
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
        .filter_map(|s| {
            // A Thumb function's symbol has bit 0 set.
            let start = s.address() & !1;
            Some((start, start + s.size(), demangle(s.name().ok()?)))
        })
        .collect();
    f.sort();
    f.dedup_by(|b, a| {
        let same = a.0 == b.0 && a.1 == b.1;
        if same {
            a.2 = format!("{} = {}", a.2, b.2);
        }
        same
    });
    f
}

/// Core cycles by function of one run's profile.
type ByFunction = BTreeMap<String, u64>;

/// Core cycles per part of one run's profile, its exception entries, and
/// its cycles by function.
fn profile(text: &str, funcs: &[(u64, u64, String)]) -> (BTreeMap<&'static str, u64>, u64, ByFunction) {
    let mut parts: BTreeMap<&'static str, u64> = PARTS.iter().map(|(p, _)| (*p, 0)).collect();
    let mut by_function = ByFunction::new();
    let mut exceptions = 0;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("# ") {
            let at =
                h.find("exception entries: ").expect("the profile's header") + "exception entries: ".len();
            exceptions = h[at..].split_whitespace().next().unwrap().parse().unwrap();
            continue;
        }
        let (addr, n) = line.split_once(' ').expect("address cycles");
        let addr = u64::from_str_radix(addr.trim_start_matches("0x"), 16).expect("an address");
        let n: u64 = n.parse().expect("cycles");
        let i = funcs.partition_point(|f| f.0 <= addr);
        let path = i.checked_sub(1).map(|i| &funcs[i]).filter(|f| addr < f.1).map_or("", |f| f.2.as_str());
        let part = PARTS.iter().find(|(_, keys)| keys.iter().any(|k| path.contains(k))).unwrap().0;
        *parts.get_mut(part).unwrap() += n;
        *by_function.entry(format!("{part}: {path}")).or_default() += n;
    }
    *parts.get_mut("dispatch").unwrap() += exceptions * 15;
    (parts, exceptions, by_function)
}

/// One run of `count` samples: cycles per part and by function.
fn run(
    a: &Artifacts,
    mode: &str,
    latencies: Option<&[Option<u64>]>,
    args: &[&str],
    count: u64,
) -> (BTreeMap<&'static str, u64>, ByFunction) {
    let out = tempfile::tempdir().expect("a folder for the profile");
    let prof = out.path().join("profile.txt");
    let pico = Pico::start(a, mode, latencies, &["--profile", prof.to_str().expect("a UTF-8 path")]);
    let n = count.to_string();
    let mut all = vec!["--mode", mode, "--count", &n];
    all.extend_from_slice(args);
    let (r, samples) = pico.measure(a, &all);
    assert_eq!(samples.len() as u64, count, "{mode}: every sample");
    for key in ["lost", "dropped_by_probe", "overruns"] {
        assert_eq!(r["counts"][key], 0, "{mode}: {key} in {:#}", r["counts"]);
    }
    let text = std::fs::read_to_string(&prof).expect("the harness's profile");
    let funcs = functions(&std::fs::read(&a.elf).expect("the ELF"));
    let (parts, _, by_function) = profile(&text, &funcs);
    let listed: u64 = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    let (_, exceptions, _) = profile(&text, &[]);
    assert_eq!(parts.values().sum::<u64>(), listed + exceptions * 15, "{mode}: the parts hold every cycle");
    (parts, by_function)
}

fn row(a: &Artifacts, name: &str, mode: &str, latencies: Option<&[Option<u64>]>, args: &[&str]) -> String {
    let (short, short_f) = run(a, mode, latencies, args, SHORT);
    let (long, long_f) = run(a, mode, latencies, args, LONG);
    let per = |p: &str| long[p].saturating_sub(short[p]) / (LONG - SHORT);
    // The functions that cost the most per sample, for whoever cuts them.
    let mut top: Vec<(u64, &String)> = long_f
        .iter()
        .map(|(f, n)| (n.saturating_sub(short_f.get(f).copied().unwrap_or(0)) / (LONG - SHORT), f))
        .collect();
    top.sort_by(|a, b| b.cmp(a));
    eprintln!("{name}: the costliest functions, cycles per sample:");
    for (n, f) in top.iter().take(12) {
        eprintln!("  {n:>6}  {f}");
    }
    let total: u64 = PARTS.iter().map(|(p, _)| per(p)).sum();
    let mut s = format!("{name:<24} {total:>6}");
    for (p, _) in PARTS {
        s.push_str(&format!(" {:>8}", per(p)));
    }
    s.push_str(&format!("   {:>7}", CORE_HZ / total.max(1)));
    s
}

#[test]
#[ignore = "a figure, not a check: scripts/test runs it with --ignored --nocapture and prints its table"]
fn core_cycles_per_sample_by_part_in_rp2040js() {
    let Some(a) = artifacts() else { return };
    let echo: Vec<Option<u64>> = vec![Some(5_000)];
    // A latency like a real target's: the answer never lands inside the
    // pass that armed its stimulus.
    let echo50: Vec<Option<u64>> = vec![Some(50_000)];
    let rows = [
        row(a, "loopback gpio 200us", "loopback", None, &["--line", "gpio", "--interval", "200us"]),
        row(a, "gpio-echo 5us 200us", "gpio-echo", Some(&echo), &["--interval", "200us"]),
        row(a, "gpio-echo 50us 200us", "gpio-echo", Some(&echo50), &["--interval", "200us"]),
    ];
    let mut t = String::from(
        "rp2040-pico firmware, core cycles per sample in rp2040js, by part\nrun                       total",
    );
    for (p, _) in PARTS {
        t.push_str(&format!(" {p:>8}"));
    }
    t.push_str("   samples/s at 125 MHz (CPU only)\n");
    for r in rows {
        t.push_str(&r);
        t.push('\n');
    }
    println!("{t}");
}

/// One step of the interval walk: a GPIO loopback of `count` samples at
/// `interval_us`, its counters, and whether every latency was the offset.
fn step(a: &Artifacts, interval_us: u64, count: u64) -> (serde_json::Value, bool) {
    let interval = format!("{interval_us}us");
    let n = count.to_string();
    let (r, samples) = Pico::start(a, "loopback", None, &[])
        .measure(a, &["--mode", "loopback", "--line", "gpio", "--count", &n, "--interval", &interval]);
    let first = samples.first().and_then(|s| s.latency_ns);
    let exact = samples.len() as u64 == count
        && samples.iter().all(|s| s.latency_ns.is_some() && s.latency_ns == first);
    (r, exact)
}

/// The interval walked down until the probe no longer keeps its schedule:
/// at each step, whether nothing was lost (samples = taken, lost, dropped
/// and overruns 0), whether every latency stayed the loopback's constant,
/// and what the counters say set the limit: stimuli that slipped (the
/// probe: the engine could not arm the next one in time) or samples
/// dropped and queue overruns (the link full). Asserted at every step: nothing is
/// lost and the figures stay exact, whatever the rate.
#[test]
#[ignore = "a figure, not a check: scripts/test runs it with --ignored --nocapture and prints its table"]
fn the_shortest_interval_the_pico_keeps_in_rp2040js() {
    let Some(a) = artifacts() else { return };
    let mut t = String::from(
        "rp2040-pico in rp2040js, GPIO loopback, 1000 samples a step\n\
         interval   slipped  longest slip   dropped  overruns   lost   samples/s   latencies   limit\n",
    );
    let mut kept = None;
    for us in [200, 150, 120, 100, 80, 60, 50, 40] {
        let (r, exact) = step(a, us, 1_000);
        let c = &r["counts"];
        let get = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("counts.{k}: {c:#}"));
        assert_eq!(get("samples"), 1_000, "{us} µs: {c:#}");
        // A count is of scheduled instants: those the probe sent a
        // stimulus for and those a target's stall left without one.
        let omitted = r["schedule"]["omitted"].as_u64().unwrap_or(0);
        assert_eq!(get("probe_taken") + omitted, 1_000, "{us} µs: {c:#}");
        for k in ["lost", "dropped_by_probe", "overruns"] {
            assert_eq!(get(k), 0, "{us} µs: {k} in {c:#}");
        }
        assert!(exact, "{us} µs: a latency other than the loopback's constant");
        let elapsed = r["probe_elapsed_ns"].as_u64().unwrap_or(1).max(1);
        let rate = 1_000 * 1_000_000_000 / elapsed;
        let limit = match (get("slipped"), get("dropped_by_probe") + get("overruns")) {
            (0, 0) => "kept",
            (_, 0) => "the probe (stimuli slipped)",
            _ => "link full",
        };
        if limit == "kept" {
            kept = Some(us);
        }
        t.push_str(&format!(
            "{:>5} µs {:>9} {:>10} µs {:>9} {:>9} {:>6} {:>11} {:>11}   {limit}\n",
            us,
            get("slipped"),
            get("slip_max_ns") / 1000,
            get("dropped_by_probe"),
            get("overruns"),
            get("lost"),
            rate,
            if exact { "exact" } else { "varied" },
        ));
    }
    t.push_str(&format!(
        "shortest interval kept: {}\n",
        kept.map_or_else(|| "none of these".to_owned(), |us| format!("{us} µs"))
    ));
    println!("{t}");
}
