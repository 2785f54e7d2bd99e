//! Facts about the target that decide how its latency figures read: kernel,
//! preemption model, boot parameters, governors, RT throttling, load, and the
//! RT settings this run actually got. Written as JSON for the host.
//!
//! Every fact is best effort: a file the board lacks becomes `null`, never an
//! error, because a missing fact must not stop a measurement.

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::rt::RtReport;

/// Bumped whenever a field changes meaning or goes away (adding one does not).
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
pub struct Metadata {
    pub schema_version: u32,
    pub responder_version: &'static str,
    /// Wall-clock time of writing, for matching the file to a host run; the
    /// measurement itself never uses the target's clock.
    pub written_unix_s: Option<u64>,
    pub run: Option<RunInfo>,
    pub hostname: Option<String>,
    pub uname: Option<Uname>,
    pub preemption: Preemption,
    pub kernel_cmdline: Option<KernelCmdline>,
    pub num_cpus: Option<usize>,
    pub cpus_online: Option<String>,
    pub cpufreq_governors: Vec<CpuGovernor>,
    pub rt_throttling: RtThrottling,
    pub loadavg: Option<LoadAvg>,
    pub rt: RtReport,
    /// The kernel's build configuration: every option set (`=y`, `=m`, a
    /// value), so that two runs' kernels can be told apart option by option.
    pub kernel_config: Option<KernelConfig>,
    /// The clock source the kernel keeps time with, and the others it could use.
    pub clocksource: Option<Clocksource>,
    /// `--trace`: armed or why not, events, snapshots, stop latencies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::trace::TraceReport>,
}

/// The options a kernel was built with, from `/proc/config.gz` or
/// `/boot/config-$(uname -r)`. An option that "is not set" is left out (an
/// absent option reads the same), so a distribution kernel keeps ~9 000
/// entries; past [`MAX_CONFIG_OPTIONS`] the rest are cut and `truncated` says so.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelConfig {
    /// Where it was read.
    pub source: String,
    /// `CONFIG_NAME` to its value as the file writes it (`y`, `m`, `"text"`, `1000`).
    pub options: BTreeMap<String, String>,
    /// More options were set than the bound keeps.
    pub truncated: bool,
}

/// The most options [`KernelConfig`] keeps (a distribution kernel sets ~9 000).
pub const MAX_CONFIG_OPTIONS: usize = 20_000;
/// The longest value kept; a longer one is cut (a path or a command line at most).
const MAX_CONFIG_VALUE: usize = 512;

/// `/sys/devices/system/clocksource/clocksource0`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Clocksource {
    pub current: String,
    pub available: Vec<String>,
}

/// What this responder run does, so the host can check it against its own config.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    pub mode: &'static str,
    /// The serial line, or the GPIO line(s) as CHIP:LINE.
    pub device: String,
    /// `None` for GPIO lines.
    pub baud: Option<u32>,
    pub period_ns: Option<u64>,
    pub byte: Option<u8>,
    /// The per-cycle or per-edge log (`--log`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Uname {
    pub sysname: String,
    pub nodename: String,
    pub release: String,
    pub version: String,
    pub machine: String,
}

#[derive(Debug, Default, PartialEq, Serialize)]
pub struct Preemption {
    /// `PREEMPT_RT`, `PREEMPT_DYNAMIC`, `PREEMPT`, ... or null when nothing says.
    pub model: Option<String>,
    /// Where `model` came from.
    pub source: Option<String>,
    /// Contents of /sys/kernel/realtime ("1" on PREEMPT_RT kernels).
    pub sys_kernel_realtime: Option<String>,
    /// The mode a PREEMPT_DYNAMIC kernel runs in: `none`, `voluntary`,
    /// `full` or `lazy`. PREEMPT_DYNAMIC alone says little, since it may
    /// well be running as `none`.
    pub dynamic_mode: Option<String>,
    /// debugfs, the `preempt=` boot parameter, or the config's default.
    pub dynamic_mode_source: Option<String>,
    /// CONFIG_PREEMPT* options from /proc/config.gz or /boot/config-*.
    pub config: Option<BTreeMap<String, String>>,
    pub config_source: Option<String>,
}

#[derive(Debug, Default, PartialEq, Serialize)]
pub struct KernelCmdline {
    pub raw: String,
    pub isolcpus: Option<String>,
    pub nohz_full: Option<String>,
    pub rcu_nocbs: Option<String>,
    pub irqaffinity: Option<String>,
    /// The boot-time model of a PREEMPT_DYNAMIC kernel.
    pub preempt: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct CpuGovernor {
    pub cpu: usize,
    pub governor: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct RtThrottling {
    /// -1 means throttling is off; otherwise RT tasks get this much of each period.
    pub sched_rt_runtime_us: Option<i64>,
    pub sched_rt_period_us: Option<i64>,
}

#[derive(Debug, PartialEq, Serialize)]
pub struct LoadAvg {
    pub one: f64,
    pub five: f64,
    pub fifteen: f64,
    pub raw: String,
}

/// Gathers everything from the running system.
pub fn collect(run: Option<RunInfo>, rt: RtReport) -> Metadata {
    let uname = uname();
    let cmdline = read_trimmed("/proc/cmdline").map(|raw| parse_cmdline(&raw));
    let config = kernel_config(uname.as_ref());
    Metadata {
        schema_version: SCHEMA_VERSION,
        responder_version: env!("CARGO_PKG_VERSION"),
        written_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_secs()),
        run,
        hostname: uname.as_ref().map(|u| u.nodename.clone()),
        preemption: preemption(uname.as_ref(), cmdline.as_ref(), config.as_ref()),
        uname,
        kernel_cmdline: cmdline,
        num_cpus: online_cpus(),
        cpus_online: read_trimmed("/sys/devices/system/cpu/online"),
        cpufreq_governors: governors(),
        rt_throttling: RtThrottling {
            sched_rt_runtime_us: read_trimmed("/proc/sys/kernel/sched_rt_runtime_us")
                .and_then(|s| s.parse().ok()),
            sched_rt_period_us: read_trimmed("/proc/sys/kernel/sched_rt_period_us")
                .and_then(|s| s.parse().ok()),
        },
        loadavg: read_trimmed("/proc/loadavg").and_then(|s| parse_loadavg(&s)),
        rt,
        kernel_config: config.map(|(text, source)| parse_kernel_config(&text, source)),
        clocksource: clocksource(Path::new("/sys/devices/system/clocksource/clocksource0")),
        trace: None,
    }
}

/// Writes `meta` to `dest`, or to stdout when `dest` is `-`. A file is
/// written beside its final name and renamed, so a host polling for it never
/// reads half a document.
pub fn write(meta: &Metadata, dest: &Path) -> Result<()> {
    let mut json = serde_json::to_string_pretty(meta).context("cannot encode metadata")?;
    json.push('\n');
    if dest == Path::new("-") {
        let mut out = io::stdout().lock();
        return match out.write_all(json.as_bytes()).and_then(|()| out.flush()) {
            // The reader is gone (`| head`): nobody is left to tell.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
            r => r.context("cannot write metadata to stdout"),
        };
    }
    write_file(dest, json.as_bytes()).with_context(|| format!("cannot write metadata to {}", dest.display()))
}

/// Write `bytes` to `dest` by the host's output rules: a regular file (or
/// none) is written to a temporary file beside it and renamed into place,
/// so it is whole or as it was; a symbolic link is followed (the link
/// stays); a device, a FIFO, and anything under `/dev` or `/proc`
/// (`/dev/stdout`) is written to as it is, never renamed over.
pub fn write_file(dest: &Path, bytes: &[u8]) -> io::Result<()> {
    let dest = follow_links(dest);
    let special = dest.starts_with("/dev") || dest.starts_with("/proc");
    let existing = fs::metadata(&dest);
    if special || existing.as_ref().is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let mut f = fs::OpenOptions::new().write(true).create(true).truncate(true).open(&dest)?;
        return f.write_all(bytes).and_then(|()| f.flush());
    }
    let name = dest.file_name().map_or_else(|| "metadata".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dest.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_data()?;
        fs::rename(&tmp, &dest)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// `p` with every symbolic link in its last component followed, even to a
/// file not there yet (at most 40, the kernel's own limit). A path under
/// `/dev` or `/proc` is kept as it is: `/proc/self/fd/1` reads back as
/// `pipe:[N]`, which is no path.
fn follow_links(p: &Path) -> std::path::PathBuf {
    let mut cur = p.to_path_buf();
    for _ in 0..40 {
        if cur.starts_with("/dev") || cur.starts_with("/proc") {
            break;
        }
        let Ok(to) = fs::read_link(&cur) else { break };
        cur = match cur.parent() {
            Some(d) if to.is_relative() => d.join(to),
            _ => to,
        };
    }
    cur
}

fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn uname() -> Option<Uname> {
    // SAFETY: utsname is a plain C struct of char arrays; all-zero is valid.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is valid for writes.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let field = |chars: &[libc::c_char]| {
        // SAFETY: uname NUL-terminates each field within its array, and the
        // zeroed initialisation guarantees a NUL even if it did not.
        unsafe { CStr::from_ptr(chars.as_ptr()) }.to_string_lossy().into_owned()
    };
    Some(Uname {
        sysname: field(&u.sysname),
        nodename: field(&u.nodename),
        release: field(&u.release),
        version: field(&u.version),
        machine: field(&u.machine),
    })
}

fn online_cpus() -> Option<usize> {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).ok().filter(|&n| n > 0)
}

fn preemption(
    uname: Option<&Uname>,
    cmdline: Option<&KernelCmdline>,
    kernel_config: Option<&(String, String)>,
) -> Preemption {
    let realtime = read_trimmed("/sys/kernel/realtime");
    let (config, config_source) = match kernel_config {
        Some((text, source)) => (Some(parse_preempt_config(text)), Some(source.clone())),
        None => (None, None),
    };
    let (model, source) = if realtime.as_deref() == Some("1") {
        (Some("PREEMPT_RT".to_string()), Some("/sys/kernel/realtime"))
    } else if let Some(m) = uname.and_then(|u| model_from_uname_version(&u.version)) {
        (Some(m), Some("uname -v"))
    } else if let Some(m) = config.as_ref().and_then(model_from_config) {
        (Some(m), Some("kernel config"))
    } else {
        (None, None)
    };
    let (dynamic_mode, dynamic_mode_source) = if model.as_deref() == Some("PREEMPT_DYNAMIC") {
        dynamic_mode(cmdline, config.as_ref())
    } else {
        (None, None)
    };
    Preemption {
        model,
        source: source.map(str::to_string),
        sys_kernel_realtime: realtime,
        dynamic_mode,
        dynamic_mode_source,
        config,
        config_source,
    }
}

/// The kernel config as text, with where it came from. /proc/config.gz is
/// gunzipped by `zcat` when the board has it, rather than pulling a
/// decompressor into a binary that is cross-compiled for small boards.
fn kernel_config(uname: Option<&Uname>) -> Option<(String, String)> {
    if Path::new("/proc/config.gz").exists() {
        let out = Command::new("zcat")
            .arg("/proc/config.gz")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success());
        if let Some(out) = out {
            return Some((String::from_utf8_lossy(&out.stdout).into_owned(), "/proc/config.gz".to_string()));
        }
    }
    let boot = format!("/boot/config-{}", uname?.release);
    fs::read_to_string(&boot).ok().map(|text| (text, boot))
}

/// Every option `text` sets (`CONFIG_NAME=value`), bounded; comments and
/// "is not set" lines are left out.
pub fn parse_kernel_config(text: &str, source: String) -> KernelConfig {
    let mut options = BTreeMap::new();
    let mut truncated = false;
    for line in text.lines() {
        let Some((name, value)) = line.trim().split_once('=') else { continue };
        if !name.starts_with("CONFIG_") || name.contains(char::is_whitespace) {
            continue;
        }
        if options.len() == MAX_CONFIG_OPTIONS {
            truncated = true;
            break;
        }
        let mut value = value.to_string();
        if value.len() > MAX_CONFIG_VALUE {
            let mut end = MAX_CONFIG_VALUE;
            while !value.is_char_boundary(end) {
                end -= 1;
            }
            value.truncate(end);
            value.push('…');
        }
        options.insert(name.to_string(), value);
    }
    KernelConfig { source, options, truncated }
}

/// The clock source in `dir` (`current_clocksource`, `available_clocksource`).
pub fn clocksource(dir: &Path) -> Option<Clocksource> {
    let current = read_trimmed(dir.join("current_clocksource"))?;
    let available = read_trimmed(dir.join("available_clocksource"))
        .map(|a| a.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    Some(Clocksource { current, available })
}

/// `CONFIG_PREEMPT*` options; "is not set" lines become `n`.
pub fn parse_preempt_config(text: &str) -> BTreeMap<String, String> {
    let mut options = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("# ") {
            if let Some(name) = rest.strip_suffix(" is not set") {
                if name.starts_with("CONFIG_PREEMPT") {
                    options.insert(name.to_string(), "n".to_string());
                }
            }
        } else if let Some((name, value)) = line.split_once('=') {
            if name.starts_with("CONFIG_PREEMPT") {
                options.insert(name.to_string(), value.to_string());
            }
        }
    }
    options
}

fn model_from_config(config: &BTreeMap<String, String>) -> Option<String> {
    let on = |name: &str| config.get(name).map(String::as_str) == Some("y");
    [
        ("CONFIG_PREEMPT_RT", "PREEMPT_RT"),
        ("CONFIG_PREEMPT_DYNAMIC", "PREEMPT_DYNAMIC"),
        ("CONFIG_PREEMPT", "PREEMPT"),
        ("CONFIG_PREEMPT_VOLUNTARY", "PREEMPT_VOLUNTARY"),
        ("CONFIG_PREEMPT_NONE", "PREEMPT_NONE"),
    ]
    .iter()
    .find(|(option, _)| on(option))
    .map(|(_, model)| model.to_string())
}

/// The model from `uname -v` ("#1 SMP PREEMPT_RT ..."). The kernel prints
/// one PREEMPT* word, RT taking precedence over DYNAMIC over plain PREEMPT;
/// newer kernels may spell RT with dynamic as `PREEMPT_{RT,(full)}`.
/// No PREEMPT word means none or voluntary, which uname cannot tell apart.
pub fn model_from_uname_version(version: &str) -> Option<String> {
    let words: Vec<&str> = version.split_whitespace().filter(|w| w.starts_with("PREEMPT")).collect();
    if words.iter().any(|w| w.starts_with("PREEMPT_RT") || w.contains("{RT")) {
        return Some("PREEMPT_RT".to_string());
    }
    words.first().map(|w| w.to_string())
}

/// Best source first: debugfs shows the live mode (it can be changed at run
/// time) but is often not mounted; then the boot parameter; then the
/// build-time default, which the config marks as the one `=y` choice.
fn dynamic_mode(
    cmdline: Option<&KernelCmdline>,
    config: Option<&BTreeMap<String, String>>,
) -> (Option<String>, Option<String>) {
    if let Some(mode) = read_trimmed("/sys/kernel/debug/sched/preempt").and_then(|s| parse_dynamic_mode(&s)) {
        return (Some(mode), Some("/sys/kernel/debug/sched/preempt".to_string()));
    }
    if let Some(mode) = cmdline.and_then(|c| c.preempt.clone()) {
        return (Some(mode), Some("preempt= boot parameter".to_string()));
    }
    let default = config.and_then(|c| {
        [
            ("CONFIG_PREEMPT_NONE", "none"),
            ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
            ("CONFIG_PREEMPT", "full"),
            ("CONFIG_PREEMPT_LAZY", "lazy"),
        ]
        .iter()
        .find(|(option, _)| c.get(*option).map(String::as_str) == Some("y"))
        .map(|(_, mode)| mode.to_string())
    });
    match default {
        Some(mode) => (Some(mode), Some("kernel config default".to_string())),
        None => (None, None),
    }
}

/// debugfs shows the choices with the active one in parentheses:
/// `none voluntary (full) lazy`.
pub fn parse_dynamic_mode(text: &str) -> Option<String> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('(').and_then(|w| w.strip_suffix(')')))
        .map(str::to_string)
}

/// The raw command line plus the parameters that shape RT latency. Parsing
/// stops at `--`, after which the words belong to init, not the kernel; a
/// repeated parameter keeps its last value, as the kernel does.
pub fn parse_cmdline(raw: &str) -> KernelCmdline {
    let mut cmdline = KernelCmdline { raw: raw.to_string(), ..KernelCmdline::default() };
    for word in raw.split_whitespace() {
        if word == "--" {
            break;
        }
        let Some((key, value)) = word.split_once('=') else {
            continue;
        };
        let value = Some(value.trim_matches('"').to_string());
        match key {
            "isolcpus" => cmdline.isolcpus = value,
            "nohz_full" => cmdline.nohz_full = value,
            "rcu_nocbs" => cmdline.rcu_nocbs = value,
            "irqaffinity" => cmdline.irqaffinity = value,
            "preempt" => cmdline.preempt = value,
            _ => {}
        }
    }
    cmdline
}

pub fn parse_loadavg(text: &str) -> Option<LoadAvg> {
    let mut words = text.split_whitespace();
    let mut next = || words.next().and_then(|w| w.parse::<f64>().ok());
    Some(LoadAvg { one: next()?, five: next()?, fifteen: next()?, raw: text.trim().to_string() })
}

fn governors() -> Vec<CpuGovernor> {
    let Ok(entries) = fs::read_dir("/sys/devices/system/cpu") else {
        return Vec::new();
    };
    let mut cpus: Vec<usize> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name().to_str().and_then(|n| n.strip_prefix("cpu")).and_then(|n| n.parse().ok())
        })
        .collect();
    cpus.sort_unstable();
    cpus.into_iter()
        .map(|cpu| CpuGovernor {
            cpu,
            governor: read_trimmed(format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_config_keeps_every_set_option_and_no_comment() {
        let text = "#\n# Automatically generated file; DO NOT EDIT.\n#\nCONFIG_NO_HZ_IDLE=y\n\
                    # CONFIG_NO_HZ_FULL is not set\nCONFIG_HZ=1000\nCONFIG_LOCALVERSION=\"-rt\"\n\
                    CONFIG_USB_STORAGE=m\n  CONFIG_INDENTED=y  \nNOT_CONFIG=y\n";
        let c = parse_kernel_config(text, "/boot/config-test".into());
        let got: Vec<(&str, &str)> = c.options.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            got,
            [
                ("CONFIG_HZ", "1000"),
                ("CONFIG_INDENTED", "y"),
                ("CONFIG_LOCALVERSION", "\"-rt\""),
                ("CONFIG_NO_HZ_IDLE", "y"),
                ("CONFIG_USB_STORAGE", "m"),
            ]
        );
        assert_eq!(c.source, "/boot/config-test");
        assert!(!c.truncated);
    }

    #[test]
    fn a_kernel_config_is_bounded_in_options_and_value_length() {
        let mut text = String::new();
        for i in 0..MAX_CONFIG_OPTIONS + 5 {
            text.push_str(&format!("CONFIG_OPT_{i:05}=y\n"));
        }
        let c = parse_kernel_config(&text, "x".into());
        assert_eq!(c.options.len(), MAX_CONFIG_OPTIONS);
        assert!(c.truncated);
        let long = format!("CONFIG_CMDLINE=\"{}\"\n", "é".repeat(MAX_CONFIG_VALUE));
        let c = parse_kernel_config(&long, "x".into());
        let v = &c.options["CONFIG_CMDLINE"];
        assert!(v.len() <= MAX_CONFIG_VALUE + '…'.len_utf8() && v.ends_with('…'), "{v}");
    }

    #[test]
    fn the_clocksource_is_read_with_its_alternatives() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(clocksource(dir.path()), None);
        fs::write(dir.path().join("current_clocksource"), "tsc\n").unwrap();
        fs::write(dir.path().join("available_clocksource"), "tsc hpet acpi_pm \n").unwrap();
        let c = clocksource(dir.path()).unwrap();
        assert_eq!(c.current, "tsc");
        assert_eq!(c.available, ["tsc", "hpet", "acpi_pm"]);
    }

    #[test]
    fn uname_version_models() {
        let m = |v| model_from_uname_version(v);
        assert_eq!(m("#1 SMP PREEMPT_RT Debian 6.1.69-1 (2023-12-30)").as_deref(), Some("PREEMPT_RT"));
        assert_eq!(m("#1 SMP PREEMPT_DYNAMIC @0").as_deref(), Some("PREEMPT_DYNAMIC"));
        assert_eq!(m("#1 SMP PREEMPT Thu Jan 1 00:00:00 UTC 2024").as_deref(), Some("PREEMPT"));
        assert_eq!(m("#1 SMP PREEMPT_{RT,(full)} Mon").as_deref(), Some("PREEMPT_RT"));
        assert_eq!(m("#1 SMP Thu Jan 1 00:00:00 UTC 2024"), None);
    }

    #[test]
    fn cmdline_params_and_init_args() {
        let c = parse_cmdline(
            "console=ttyS0 isolcpus=nohz,domain,2-3 nohz_full=2-3 rcu_nocbs=2-3 \
             irqaffinity=0-1 preempt=full isolcpus=3 -- nohz_full=9",
        );
        assert_eq!(c.isolcpus.as_deref(), Some("3"), "last one wins");
        assert_eq!(c.nohz_full.as_deref(), Some("2-3"), "init args ignored");
        assert_eq!(c.rcu_nocbs.as_deref(), Some("2-3"));
        assert_eq!(c.irqaffinity.as_deref(), Some("0-1"));
        assert_eq!(c.preempt.as_deref(), Some("full"));
        assert!(c.raw.starts_with("console=ttyS0"));

        let none = parse_cmdline("quiet splash");
        assert_eq!(none.isolcpus, None);
        assert_eq!(none.nohz_full, None);
    }

    #[test]
    fn preempt_config_lines() {
        let cfg = parse_preempt_config(
            "CONFIG_HZ=250\n# CONFIG_PREEMPT_NONE is not set\nCONFIG_PREEMPT_RT=y\n\
             CONFIG_PREEMPT_COUNT=y\n# CONFIG_SLUB is not set\n",
        );
        assert_eq!(cfg.get("CONFIG_PREEMPT_RT").map(String::as_str), Some("y"));
        assert_eq!(cfg.get("CONFIG_PREEMPT_NONE").map(String::as_str), Some("n"));
        assert!(!cfg.contains_key("CONFIG_HZ"));
        assert!(!cfg.contains_key("CONFIG_SLUB"));
        assert_eq!(model_from_config(&cfg).as_deref(), Some("PREEMPT_RT"));

        let voluntary = parse_preempt_config("CONFIG_PREEMPT_VOLUNTARY=y\n");
        assert_eq!(model_from_config(&voluntary).as_deref(), Some("PREEMPT_VOLUNTARY"));
    }

    #[test]
    fn dynamic_mode_in_parentheses() {
        assert_eq!(parse_dynamic_mode("none voluntary (full) lazy\n").as_deref(), Some("full"));
        assert_eq!(parse_dynamic_mode("none voluntary full"), None);
    }

    #[test]
    fn loadavg_fields() {
        let l = parse_loadavg("0.52 0.58 1.50 1/389 12345\n").expect("parses");
        assert_eq!((l.one, l.five, l.fifteen), (0.52, 0.58, 1.5));
        assert_eq!(parse_loadavg("garbage"), None);
    }

    #[test]
    fn collect_never_fails_and_says_linux() {
        let meta = collect(None, RtReport::none());
        assert_eq!(meta.schema_version, 1);
        assert_eq!(meta.uname.as_ref().map(|u| u.sysname.as_str()), Some("Linux"));
        let json = serde_json::to_value(&meta).expect("serialises");
        assert!(json["rt"]["achieved"].is_null());
    }
}
