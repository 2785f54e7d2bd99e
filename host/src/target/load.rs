//! Named loads on the target for the run (`--load NAME[:ARGS]`): real tools
//! with their arguments recorded, as rteval and the seeds run them
//! (hackbench; stress-ng cpu, vm, io; dd writing files; iperf3 UDP over
//! loopback; a parallel compile). Each runs in its own process group, in a
//! loop until the run ends, under a shell that holds a pipe from latprobe:
//! closing it (the run's end, latprobe dying, the SSH session dropping)
//! ends the whole group, so no load outlives the run.
//!
//! Each load is watched: its shell says when it ends and how (its exit
//! status and the last of what it wrote on stderr), and a preset's loop
//! ends at the first failure of its tool instead of retrying it. A load
//! that ends before latprobe stops it (one that never started, like an
//! iperf3 whose port is taken, or one killed or cut off mid-run) fails the
//! run, which stops there with its files written; with `--load-may-end`
//! it is a note instead. Either way the report says when each load ran
//! ([`crate::model::LoadSpan`]) and which phases had which loads running.
//!
//! A tool the target lacks is one error naming the Debian package.

use std::io::BufRead as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::ssh::{quote, SshTarget};
pub use crate::model::{LoadRecord, LoadSpan, Phase};
use crate::Error;

/// One `--load NAME[:ARGS]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadSpec {
    /// The preset.
    pub name: String,
    /// Its argument, when given.
    pub arg: Option<String>,
}

/// A preset: its tools, the package that has them, the command.
struct Preset {
    name: &'static str,
    tools: &'static [&'static str],
    package: &'static str,
    what: &'static str,
}

const PRESETS: &[Preset] = &[
    Preset {
        name: "hackbench",
        tools: &["hackbench"],
        package: "rt-tests",
        what: "hackbench as rteval runs it: processes on pipes, scheduler and IPC load (ARG: groups, default 10)",
    },
    Preset {
        name: "stress-ng",
        tools: &["stress-ng"],
        package: "stress-ng",
        what: "stress-ng: ARG cpu (default), vm or io, one worker per CPU",
    },
    Preset { name: "dd", tools: &["dd"], package: "coreutils", what: "dd writing 256 MiB files and syncing them (seed 003)" },
    Preset {
        name: "iperf3",
        tools: &["iperf3"],
        package: "iperf3",
        what: "iperf3 UDP over loopback at ARG (default 500M) bits/s (seed 003)",
    },
    Preset {
        name: "compile",
        tools: &["cc", "make"],
        package: "build-essential",
        what: "a parallel C build, make -j ARG (default: the CPUs), like seed 002's make -j8",
    },
];

/// The presets, for `--help` and errors: `name: what`.
pub fn presets() -> String {
    PRESETS.iter().map(|p| format!("{}: {}", p.name, p.what)).collect::<Vec<_>>().join("; ")
}

/// Parse `NAME[:ARG]`.
pub fn parse_load(text: &str) -> Result<LoadSpec, String> {
    let (name, arg) = match text.split_once(':') {
        Some((n, a)) => (n.trim(), Some(a.trim().to_string()).filter(|a| !a.is_empty())),
        None => (text.trim(), None),
    };
    let Some(p) = PRESETS.iter().find(|p| p.name == name) else {
        let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        return Err(format!("'{name}' is no load latprobe knows: give one of {}", names.join(", ")));
    };
    let ok = match (p.name, arg.as_deref()) {
        (_, None) => true,
        ("stress-ng", Some(a)) => ["cpu", "vm", "io"].contains(&a),
        ("hackbench" | "compile", Some(a)) => a.parse::<u32>().is_ok_and(|n| (1..=1024).contains(&n)),
        ("iperf3", Some(a)) => !a.is_empty() && a.bytes().all(|b| b.is_ascii_alphanumeric()),
        _ => false,
    };
    if !ok {
        return Err(format!("'{text}': {}", p.what));
    }
    Ok(LoadSpec { name: name.to_string(), arg })
}

/// Parse every `--load`, the first bad one an error naming it.
pub fn parse_all(texts: &[String]) -> Result<Vec<LoadSpec>, Error> {
    texts.iter().map(|t| parse_load(t).map_err(|e| Error::Config(format!("--load {e}")))).collect()
}

impl LoadSpec {
    fn preset(&self) -> &'static Preset {
        PRESETS.iter().find(|p| p.name == self.name).expect("parsed against PRESETS")
    }

    /// `hackbench`, `stress-ng:vm`.
    pub fn label(&self) -> String {
        match &self.arg {
            Some(a) => format!("{}:{a}", self.name),
            None => self.name.clone(),
        }
    }

    /// The shell command, run in `dir` (a directory of its own): a loop
    /// that ends at the first failure of its tool, or the tool itself.
    pub fn command(&self, dir: &str) -> String {
        let d = quote(dir);
        let a = self.arg.as_deref();
        match self.name.as_str() {
            "hackbench" => format!(
                "while hackbench -P -g {} -l 10000 -s 1000 >/dev/null; do :; done; exit 1",
                a.unwrap_or("10")
            ),
            "stress-ng" => {
                format!("exec stress-ng --{} 0 --timeout 0 --quiet", a.unwrap_or("cpu"))
            }
            "dd" => format!(
                "while dd if=/dev/zero of={d}/dd.bin bs=1M count=256 conv=fdatasync status=none && \
                 rm -f {d}/dd.bin; do :; done; exit 1"
            ),
            // The server must be up (port 5201 free) before the clients run.
            "iperf3" => format!(
                "iperf3 -s -p {IPERF3_PORT} >/dev/null & s=$!; sleep 0.5; \
                 kill -0 $s 2>/dev/null || {{ wait $s; exit 1; }}; \
                 while kill -0 $s 2>/dev/null && iperf3 -c 127.0.0.1 -p {IPERF3_PORT} -u -b {} -t 3600 >/dev/null; \
                 do :; done; exit 1",
                a.unwrap_or("500M")
            ),
            _ => format!(
                "mkdir -p {d}/src && cd {d}/src && for i in $(seq 1 64); do \
                 printf 'int f%s(int x){{int s=0;for(int i=0;i<x;i++)s+=i*%s;return s;}}\\n' $i $i > f$i.c; done && \
                 printf 'all: $(patsubst %%.c,%%.o,$(wildcard *.c))\\n%%.o: %%.c\\n\\tcc -O2 -c $< -o $@\\n' > Makefile && \
                 while make -s -B -j{} >/dev/null; do :; done; exit 1",
                a.map_or_else(|| "$(nproc)".to_string(), str::to_string)
            ),
        }
    }
}

/// The port the iperf3 preset's server listens on.
pub const IPERF3_PORT: u16 = 5201;

/// Where the loads run.
#[derive(Debug, Clone)]
pub enum Host {
    /// This machine (the demo).
    Local,
    /// The target over SSH.
    Ssh(SshTarget),
}

impl Host {
    fn name(&self) -> String {
        match self {
            Host::Local => "this machine".into(),
            Host::Ssh(s) => s.url(),
        }
    }

    /// `sh -c SCRIPT`, here or there.
    fn shell(&self, script: &str) -> Command {
        match self {
            Host::Local => {
                let mut c = Command::new("sh");
                c.arg("-c").arg(script);
                c
            }
            Host::Ssh(s) => s.command(&format!("sh -c {}", quote(script))),
        }
    }
}

/// Check that `host` has the tools of `specs`; one missing is an error
/// naming its package.
pub fn check_tools(specs: &[LoadSpec], host: &Host) -> Result<(), Error> {
    if specs.is_empty() {
        return Ok(());
    }
    let tools: Vec<&str> = specs.iter().flat_map(|s| s.preset().tools.iter().copied()).collect();
    // Tagged lines: what a login prints (a banner) is never taken for a tool.
    let check = tools
        .iter()
        .map(|t| format!("command -v {t} >/dev/null || echo latprobe-missing {t}"))
        .collect::<Vec<_>>();
    let out = host
        .shell(&check.join("; "))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io(format!("cannot check the loads' tools on {}", host.name()), e))?;
    if let (Host::Ssh(s), Some(255)) = (host, out.status.code()) {
        return Err(s.failure(&String::from_utf8_lossy(&out.stderr)));
    }
    let missing: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("latprobe-missing "))
        .map(|t| t.trim().to_string())
        .collect();
    if let Some(t) = missing.first() {
        let spec = specs.iter().find(|s| s.preset().tools.contains(&t.as_str())).expect("a spec's tool");
        return Err(Error::Config(format!(
            "--load {}: {t} is not installed on {}: install it (Debian: apt-get install {}), or drop the load",
            spec.label(),
            host.name(),
            spec.preset().package
        )));
    }
    Ok(())
}

/// Parse `--load-schedule idle=60s,load=60s,…` into phases from the run's
/// start (whole seconds); the last lasts until the run ends.
pub fn parse_schedule(text: &str) -> Result<Vec<Phase>, Error> {
    let bad = |why: String| {
        Error::Config(format!(
            "--load-schedule {text}: {why}: write e.g. --load-schedule idle=60s,load=60s,idle=60s"
        ))
    };
    let mut phases = Vec::new();
    let mut at = 0u64;
    for part in text.split(',') {
        let (name, d) = part.split_once('=').ok_or_else(|| bad(format!("'{part}' is not NAME=DURATION")))?;
        let name = name.trim();
        if name != "idle" && name != "load" {
            return Err(bad(format!("'{name}' is no phase (idle or load)")));
        }
        let ns = crate::units::parse_duration_ns(d.trim()).map_err(|e| bad(e.to_string()))?;
        if ns == 0 {
            return Err(bad(format!(
                "'{}': a phase lasts at least 1s (leave out a phase it should skip)",
                d.trim()
            )));
        }
        if ns % 1_000_000_000 != 0 {
            return Err(bad(format!("'{}': a phase lasts whole seconds", d.trim())));
        }
        let end = at + ns / 1_000_000_000;
        phases.push(Phase { name: name.to_string(), start_s: at, end_s: Some(end) });
        at = end;
    }
    if phases.len() > crate::model::MAX_PHASES {
        return Err(bad(format!(
            "{} phases, more than the {} a report keeps figures for",
            phases.len(),
            crate::model::MAX_PHASES
        )));
    }
    if !phases.iter().any(|p| p.name == "load") {
        return Err(bad("no load phase, so the loads would never run".into()));
    }
    if let Some(last) = phases.last_mut() {
        last.end_s = None;
    }
    Ok(phases)
}

pub use crate::model::Watch;

/// `records` with what their watches saw (`ran`), for the report.
pub fn observed(records: &[LoadRecord]) -> Vec<LoadRecord> {
    records
        .iter()
        .map(|r| LoadRecord {
            ran: r.watch.as_ref().map(Watch::spans).or_else(|| r.ran.clone()),
            watch: None,
            ..r.clone()
        })
        .collect()
}

/// A load that ended within this long of its start never got going.
const START_GRACE_MS: u64 = 2_000;

/// What the loads of a run share: the clock, who they run on, the rule for
/// an early end, and each load's watch.
#[derive(Debug, Clone)]
struct Ctl {
    t0: Instant,
    on: String,
    may_end: bool,
    watches: Vec<Watch>,
}

impl Ctl {
    fn ms(&self) -> u64 {
        u64::try_from(self.t0.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Load `i` (`label`) ended on its own at `ms`, having started at
    /// `start_ms`: fail the run, or (`--load-may-end`) say it.
    fn ended_early(&self, label: &str, start_ms: u64, ms: u64, why: &str) -> String {
        let what = if ms.saturating_sub(start_ms) < START_GRACE_MS {
            format!("did not start (it ended {} after its start)", secs(ms.saturating_sub(start_ms)))
        } else {
            format!("stopped {} after the run's start", secs(ms))
        };
        let port = if label.starts_with("iperf3") && ms.saturating_sub(start_ms) < START_GRACE_MS {
            format!(" (iperf3 needs TCP and UDP port {IPERF3_PORT} free there: see `ss -ltnup 'sport = {IPERF3_PORT}'`)")
        } else {
            String::new()
        };
        let text = format!("the load {label} on {} {what}: {why}{port}", self.on);
        if self.may_end {
            crate::stderr_error!("latprobe: {text}; measuring on without it (--load-may-end)");
        } else {
            crate::signals::abort(format!(
                "{text}: the run would go on without the load it was asked to measure under, so it stops \
                 here (give --load-may-end to measure on and have it noted)"
            ));
        }
        text
    }
}

fn secs(ms: u64) -> String {
    format!("{}.{} s", ms / 1000, (ms % 1000) / 100)
}

/// The loads of a run, on a schedule or throughout: stopped when dropped.
#[derive(Debug)]
pub struct Scheduled {
    /// What the loads run, for the report (with their watches).
    pub records: Vec<LoadRecord>,
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    throughout: Option<Loads>,
}

impl Scheduled {
    /// Check the tools, then run `specs` on `host` in `dir`: throughout
    /// without `phases`, else starting and stopping at each phase's start
    /// (from now, the run's start). Each load is watched; one that ends
    /// on its own fails the run unless `may_end`.
    pub fn start(
        specs: &[LoadSpec],
        host: Host,
        dir: &str,
        phases: &[Phase],
        may_end: bool,
    ) -> Result<Scheduled, Error> {
        check_tools(specs, &host)?;
        let ctl = Ctl {
            t0: Instant::now(),
            on: host.name(),
            may_end,
            watches: vec![Watch::default(); specs.len()],
        };
        let mut records = Loads::records(specs, &host, dir);
        for (r, w) in records.iter_mut().zip(&ctl.watches) {
            r.watch = Some(w.clone());
        }
        if phases.is_empty() || specs.is_empty() {
            let loads = Loads::spawn(specs, &host, dir, &ctl);
            return Ok(Scheduled { records, stop: None, thread: None, throughout: Some(loads) });
        }
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (specs, dir, phases) = (specs.to_vec(), dir.to_string(), phases.to_vec());
        let thread = std::thread::spawn(move || {
            let mut running: Option<Loads> = None;
            for p in &phases {
                match (p.name.as_str(), running.is_some()) {
                    ("load", false) => running = Some(Loads::spawn(&specs, &host, &dir, &ctl)),
                    ("idle", true) => {
                        if let Some(mut l) = running.take() {
                            l.stop();
                        }
                    }
                    _ => {}
                }
                let Some(end) = p.end_s else { break };
                let until = ctl.t0 + Duration::from_secs(end);
                match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    _ => break,
                }
            }
            // The last phase lasts until the run ends (or Stop came early).
            let _ = rx.recv();
            if let Some(mut l) = running.take() {
                l.stop();
            }
        });
        Ok(Scheduled { records, stop: Some(tx), thread: Some(thread), throughout: None })
    }

    /// Stop every load (the schedule too) and wait for them.
    pub fn stop(&mut self) {
        if let Some(l) = &mut self.throughout {
            l.stop();
        }
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Scheduled {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One load started: its shell, the pipe that holds it, its watcher.
#[derive(Debug)]
struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    stopping: Arc<AtomicBool>,
    watcher: Option<std::thread::JoinHandle<()>>,
}

/// The loads of a run, running; stopped (every process of each) when dropped.
#[derive(Debug)]
pub struct Loads {
    running: Vec<Running>,
}

impl Loads {
    /// What `specs` run in `dir` (the commands, without starting them).
    pub fn records(specs: &[LoadSpec], host: &Host, dir: &str) -> Vec<LoadRecord> {
        specs
            .iter()
            .enumerate()
            .map(|(i, s)| LoadRecord {
                name: s.label(),
                command: s.command(&format!("{dir}/load{i}")),
                on: host.name(),
                ..Default::default()
            })
            .collect()
    }

    /// The shell that runs `command` in `sub` in a session and group of
    /// its own, says how it ended (`latprobe-load-ended STATUS STDERR`),
    /// and ends the group when its stdin closes: TERM, a second, KILL.
    fn wrapper(sub: &str, command: &str) -> String {
        format!(
            "mkdir -p {q} && cd {q} || {{ printf 'latprobe-load-ended 1 cannot make %s\\n' {q}; exit 1; }}; \
             exec 3<&0; setsid sh -c {c} </dev/null >/dev/null 2>stderr 3<&- & p=$!; \
             {{ cat <&3 >/dev/null; kill -TERM -$p 2>/dev/null; sleep 1; kill -KILL -$p 2>/dev/null; }} & \
             exec 3<&-; wait $p; s=$?; \
             printf 'latprobe-load-ended %s %s\\n' \"$s\" \"$(tail -c 400 stderr 2>/dev/null | tr '\\n\\t' '  ')\"; \
             wait; cd / && rm -rf {q}",
            q = quote(sub),
            c = quote(command)
        )
    }

    /// Start each of `specs` (their tools checked), each watched.
    fn spawn(specs: &[LoadSpec], host: &Host, dir: &str, ctl: &Ctl) -> Loads {
        let mut loads = Loads { running: Vec::new() };
        for (i, spec) in specs.iter().enumerate() {
            let sub = format!("{dir}/load{i}");
            let mut cmd = host.shell(&Self::wrapper(&sub, &spec.command(&sub)));
            cmd.process_group(0).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
            let watch = ctl.watches[i].clone();
            let start = ctl.ms();
            let at = watch.begin(start);
            let label = spec.label();
            match cmd.spawn() {
                Ok(mut child) => {
                    let stdin = child.stdin.take();
                    let stopping = Arc::new(AtomicBool::new(false));
                    let watcher = child.stdout.take().map(|out| {
                        let (ctl, stopping) = (ctl.clone(), stopping.clone());
                        std::thread::spawn(move || watch_one(out, &ctl, &watch, at, start, &label, &stopping))
                    });
                    loads.running.push(Running { child, stdin, stopping, watcher });
                }
                Err(e) => {
                    let why =
                        ctl.ended_early(&label, start, start, &format!("its shell could not start ({e})"));
                    watch.end(at, start, Some(why));
                }
            }
        }
        loads
    }

    /// Stop every load and wait for each wrapper (it ends its group first)
    /// and its watcher.
    pub fn stop(&mut self) {
        for r in &mut self.running {
            r.stopping.store(true, Ordering::SeqCst);
            drop(r.stdin.take());
        }
        for r in &mut self.running {
            let until = Instant::now() + Duration::from_secs(5);
            while r.child.try_wait().ok().flatten().is_none() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = r.child.kill();
            let _ = r.child.wait();
            if let Some(t) = r.watcher.take() {
                let _ = t.join();
            }
        }
        self.running.clear();
    }
}

/// Read a load's shell until it says how the load ended (or its output
/// closes), and record the span's end: expected when latprobe is stopping
/// it, else an early end ([`Ctl::ended_early`]).
fn watch_one(
    out: std::process::ChildStdout,
    ctl: &Ctl,
    watch: &Watch,
    at: usize,
    start: u64,
    label: &str,
    stopping: &AtomicBool,
) {
    let mut said = None;
    // Tagged lines only: what a login prints (a banner) is never taken for one.
    for line in std::io::BufReader::new(out).lines() {
        let Ok(line) = line else { break };
        if let Some(rest) = line.strip_prefix("latprobe-load-ended ") {
            said = Some(rest.to_string());
            break;
        }
    }
    let ms = ctl.ms();
    if stopping.load(Ordering::SeqCst) {
        watch.end(at, ms, None);
        return;
    }
    let why = match said {
        Some(rest) => {
            let (status, stderr) = rest.split_once(' ').unwrap_or((rest.as_str(), ""));
            let how = match status.parse::<u32>() {
                Ok(s) if s > 128 => format!("killed by signal {}", s - 128),
                Ok(s) => format!("exit status {s}"),
                Err(_) => "it ended".to_string(),
            };
            let stderr = crate::out::clean(stderr.trim()).into_owned();
            if stderr.is_empty() {
                format!("{how}, and it said nothing on stderr")
            } else {
                format!("{how}; it said: {stderr}")
            }
        }
        None => {
            "its shell ended without a word (over --target: the SSH session carrying it dropped)".to_string()
        }
    };
    let why = ctl.ended_early(label, start, ms, &why);
    watch.end(at, ms, Some(why));
}

impl Drop for Loads {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_parse_with_their_arguments_and_bad_ones_name_the_presets() {
        assert_eq!(parse_load("hackbench").unwrap(), LoadSpec { name: "hackbench".into(), arg: None });
        assert_eq!(parse_load("stress-ng:vm").unwrap().label(), "stress-ng:vm");
        assert_eq!(parse_load("compile:8").unwrap().arg.as_deref(), Some("8"));
        assert!(parse_load("stress-ng:disk").unwrap_err().contains("cpu (default), vm or io"));
        assert!(parse_load("compile:lots").is_err());
        let e = parse_load("make").unwrap_err();
        assert!(e.contains("hackbench, stress-ng, dd, iperf3, compile"), "{e}");
    }

    #[test]
    fn a_schedule_is_phases_of_whole_seconds_the_last_until_the_end() {
        let p = parse_schedule("idle=60s,load=2min,idle=30s").unwrap();
        let got: Vec<(&str, u64, Option<u64>)> =
            p.iter().map(|p| (p.name.as_str(), p.start_s, p.end_s)).collect();
        assert_eq!(got, [("idle", 0, Some(60)), ("load", 60, Some(180)), ("idle", 180, None)]);
        for bad in ["idle", "busy=1s", "idle=1.5s", "idle=0s", "load=x", "idle=60s", "idle=1s,idle=2s"] {
            let e = parse_schedule(bad).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("--load-schedule {bad}: ")) && e.contains("idle=60s,load=60s"),
                "{e}"
            );
        }
        // Each phase keeps figures of its own: a schedule has at most 64.
        let long = vec!["idle=1s"; crate::model::MAX_PHASES + 1].join(",");
        let e = parse_schedule(&long).unwrap_err().to_string();
        assert!(e.contains("65 phases, more than the 64"), "{e}");
        assert!(parse_schedule(&vec!["load=1s"; crate::model::MAX_PHASES].join(",")).is_ok());
        // A schedule of idle phases only would record loads that never ran.
        let e = parse_schedule("idle=60s").unwrap_err().to_string();
        assert!(e.contains("no load phase, so the loads would never run"), "{e}");
    }

    #[test]
    fn every_preset_loops_while_its_tool_works_or_execs_it() {
        for p in PRESETS {
            let c = LoadSpec { name: p.name.into(), arg: None }.command("/tmp/x y");
            // A failing tool ends the load (and is seen), never retried for ever.
            assert!(
                (c.contains("while ") && c.ends_with("done; exit 1") && !c.contains("while :"))
                    || c.starts_with("exec "),
                "{}: {c}",
                p.name
            );
            assert!(!c.contains("/tmp/x y") || c.contains("'/tmp/x y'"), "{}: unquoted dir: {c}", p.name);
        }
    }
}
