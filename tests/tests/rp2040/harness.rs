//! The rp2040js bench shared by the Pico's end-to-end tests and its
//! throughput figure: the harness's artifacts, one emulated Pico
//! (`node tests/rp2040/run.mjs`) and `latprobe` run against it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use latprobe_tests::firmware;
use serde_json::Value;

/// The firmware's tick: PIO counts one per two 125 MHz clocks.
pub const TICK_NS: i64 = 16;

pub struct Artifacts {
    pub elf: PathBuf,
    pub latprobe: PathBuf,
    pub run_mjs: PathBuf,
}

/// Node, the harness's packages, the ELF and latprobe, once per process;
/// None (after saying why) when node or the packages are missing outside CI.
pub fn artifacts() -> Option<&'static Artifacts> {
    static ARTIFACTS: OnceLock<Option<Artifacts>> = OnceLock::new();
    ARTIFACTS
        .get_or_init(|| {
            let root = firmware::root();
            let harness = root.join("tests/rp2040");
            let node_ok = Command::new("node")
                .arg("--version")
                .output()
                .ok()
                .filter(|o| o.status.success())
                .and_then(|o| String::from_utf8(o.stdout).ok())
                .and_then(|v| v.trim().trim_start_matches('v').split('.').next()?.parse::<u32>().ok())
                .is_some_and(|major| major >= 18);
            let package = harness.join("node_modules/rp2040js/package.json");
            let rp2040js_ok = std::fs::read_to_string(&package)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .is_some_and(|p| p["version"] == "1.4.1");
            let missing = match (node_ok, rp2040js_ok) {
                (true, true) => None,
                (false, _) => {
                    Some("node (18 or later) is not on PATH: sudo apt-get install nodejs".to_string())
                }
                (true, false) => Some(format!(
                    "rp2040js 1.4.1 is not installed in {}: npm ci --prefix tests/rp2040",
                    harness.display()
                )),
            };
            if let Some(why) = missing {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "CI is set and the rp2040js harness cannot run: {why}"
                );
                eprintln!("skipped: the rp2040js end-to-end tests cannot run: {why}");
                return None;
            }
            firmware::cargo_build(&["-q", "-p", "latprobe"]);
            firmware::cargo_build(&[
                "-q",
                "-p",
                "latprobe-firmware",
                "--target",
                "thumbv6m-none-eabi",
                "--profile",
                "firmware",
                "--features",
                "board-rp2040-pico",
                "--bin",
                "rp2040-pico",
            ]);
            let target = firmware::target_dir();
            let a = Artifacts {
                elf: target.join("thumbv6m-none-eabi/firmware/rp2040-pico"),
                latprobe: target.join("debug/latprobe"),
                run_mjs: harness.join("run.mjs"),
            };
            for p in [&a.elf, &a.latprobe, &a.run_mjs] {
                assert!(p.is_file(), "{} is missing", p.display());
            }
            Some(a)
        })
        .as_ref()
}

/// Where silicon is harsher than rp2040js, the harness models it on every
/// run (tests/rp2040/GAPS.md): an instruction fetched from XIP flash once
/// SRAM code has run refuses the run (the image runs from SRAM), a flash
/// cache miss costs 3 µs (a 03h read at clk_sys/4 is about 2-4 µs, §2.6.3),
/// and a pad level reaches PIO and SIO two system clocks late (the input
/// synchroniser, §2.19.4 and §3.5.6.3).
pub const SILICON: [&str; 5] = ["--forbid-xip-fetch", "--xip-miss-ns", "3000", "--input-sync-clocks", "2"];

/// One emulated Pico (`node run.mjs`) in a temporary folder; killed when dropped.
pub struct Pico {
    pub dir: tempfile::TempDir,
    child: Option<Child>,
    /// The host link measured over: the USB CDC's socket, or UART0's.
    link: &'static str,
}

impl Pico {
    /// Start the harness in `mode` with `extra` arguments and, for the echo
    /// modes, `latencies` as its latency file; wait for its socket.
    pub fn start(a: &Artifacts, mode: &str, latencies: Option<&[Option<u64>]>, extra: &[&str]) -> Pico {
        Self::start_on("pico.sock", a, mode, latencies, extra)
    }

    /// The same, measured over the UART0 host link (`--uart0-socket`).
    pub fn start_uart0(a: &Artifacts, mode: &str, extra: &[&str]) -> Pico {
        Self::start_on("uart0.sock", a, mode, None, extra)
    }

    fn start_on(
        link: &'static str,
        a: &Artifacts,
        mode: &str,
        latencies: Option<&[Option<u64>]>,
        extra: &[&str],
    ) -> Pico {
        let dir = tempfile::Builder::new().prefix("latprobe-rp2040-").tempdir().expect("temp dir");
        let d = dir.path();
        let mut cmd = Command::new("node");
        cmd.arg(&a.run_mjs)
            .arg("--elf")
            .arg(&a.elf)
            .arg("--socket")
            .arg(d.join("pico.sock"))
            .args(["--mode", mode, "--max-seconds", "240"])
            .args(SILICON)
            .arg("--pad-report")
            .arg(d.join("pads.json"))
            .args(extra);
        if link != "pico.sock" {
            cmd.arg("--uart0-socket").arg(d.join(link));
        }
        if let Some(list) = latencies {
            let text: String =
                list.iter().map(|l| l.map_or_else(|| "x\n".to_string(), |ns| format!("{ns}\n"))).collect();
            std::fs::write(d.join("latencies.txt"), text).expect("latencies.txt");
            cmd.arg("--latencies").arg(d.join("latencies.txt"));
        }
        cmd.stdin(Stdio::null())
            .stdout(File::create(d.join("harness.out")).expect("harness.out"))
            .stderr(File::create(d.join("harness.err")).expect("harness.err"));
        let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start node: {e}"));
        let mut pico = Pico { dir, child: Some(child), link };
        let until = Instant::now() + Duration::from_secs(30);
        while !pico.sock().exists() {
            if let Some(status) = pico.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!("the harness ended before listening: {status}\n{}", pico.stderr());
            }
            assert!(Instant::now() < until, "the harness's socket never appeared\n{}", pico.stderr());
            thread::sleep(Duration::from_millis(20));
        }
        pico
    }

    fn sock(&self) -> PathBuf {
        self.dir.path().join(self.link)
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("harness.err")).unwrap_or_default()
    }

    /// `latprobe run --port unix:… ARGS -o r.json --raw r.raw`, which must
    /// succeed; then the harness must end by itself (the client closed) with
    /// status 0. Returns the report and the per-sample rows.
    pub fn measure(self, a: &Artifacts, args: &[&str]) -> (Value, Vec<Sample>) {
        let (report, samples, _) = self.measure_with_pads(a, args);
        (report, samples)
    }

    /// [`Pico::measure`], and the pads as the firmware left them (the
    /// harness's `--pad-report`: PADS_BANK0 and IO_BANK0 at the run's end).
    pub fn measure_with_pads(mut self, a: &Artifacts, args: &[&str]) -> (Value, Vec<Sample>, Value) {
        let d = self.dir.path().to_path_buf();
        let port = format!("unix:{}", self.sock().display());
        let mut all = vec!["run", "-q", "--port", &port];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "r.json", "--raw", "r.raw"]);
        let out = run(&a.latprobe, &all, &d, Duration::from_secs(240));
        assert!(
            out.0.success(),
            "latprobe {all:?}: {}\n--- stderr\n{}\n--- harness\n{}",
            out.0,
            out.1,
            self.stderr()
        );
        let status = self.wait(Duration::from_secs(30));
        let log = self.stderr();
        assert!(status.success(), "the harness ended with {status}\n{log}");
        // The emulator's speed, for the test log.
        for line in log.lines().filter(|l| l.contains("speed:")) {
            eprintln!("{line}");
        }
        let report: Value = serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).expect("r.json"))
            .expect("r.json is JSON");
        let rows =
            run(&a.latprobe, &["report", "-q", "r.raw", "--samples", "s.csv"], &d, Duration::from_secs(60));
        assert!(rows.0.success(), "latprobe report --samples: {}", rows.1);
        let samples = parse_samples(&std::fs::read_to_string(d.join("s.csv")).expect("s.csv"));
        let pads = std::fs::read_to_string(d.join("pads.json")).expect("the harness's --pad-report");
        (report, samples, serde_json::from_str(&pads).expect("pads.json is JSON"))
    }

    fn wait(&mut self, limit: Duration) -> ExitStatus {
        let child = self.child.as_mut().expect("running");
        let until = Instant::now() + limit;
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                self.child = None;
                return status;
            }
            assert!(Instant::now() < until, "the harness did not end after its client closed");
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Pico {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Run `bin ARGS` in `dir` within `limit`: its status and stderr.
pub fn run(bin: &Path, args: &[&str], dir: &Path, limit: Duration) -> (ExitStatus, String) {
    let err = dir.join("cmd.err");
    let mut child = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&err).expect("cmd.err"))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
    let until = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{} {args:?} still running after {limit:?}", bin.display());
        }
        thread::sleep(Duration::from_millis(20));
    };
    (status, std::fs::read_to_string(&err).unwrap_or_default())
}

/// One row of `latprobe report --samples`: the stimulus's time on the
/// probe's clock, the latency (None for a timeout).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub seq: u64,
    pub time_ns: i64,
    pub latency_ns: Option<i64>,
    /// The `triggered` column (`--trigger-above`); false without it.
    pub triggered: bool,
}

pub fn parse_samples(csv: &str) -> Vec<Sample> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let col = |name: &str| {
        header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no {name} in {header:?}"))
    };
    let (seq, time, latency) = (col("seq"), col("time_ns"), col("latency_ns"));
    let triggered = header.iter().position(|h| *h == "triggered");
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Sample {
                seq: f[seq].parse().expect("seq"),
                time_ns: f[time].parse().expect("time_ns"),
                latency_ns: f[latency].parse().ok(),
                triggered: triggered.is_some_and(|i| f[i] == "1"),
            }
        })
        .collect()
}
