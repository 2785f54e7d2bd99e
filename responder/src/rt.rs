//! Real-time set-up in the manner of cyclictest: affinity, locked memory,
//! cpu_dma_latency and SCHED_FIFO, each degrading to a warning when refused.
//!
//! A board without the capability still gets measured; the metadata records
//! what was actually achieved so that a report can say "this run was not RT"
//! instead of the numbers silently meaning something else.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};

use anyhow::Result;
use serde::Serialize;

use crate::tty::os_message;
use crate::UsageError;

/// What the command line asked for.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RtRequest {
    /// SCHED_FIFO priority, 1..=99.
    pub priority: Option<u8>,
    /// The single CPU to pin to.
    pub cpu: Option<usize>,
    pub mlockall: bool,
    /// The value held in /dev/cpu_dma_latency, in microseconds.
    pub cpu_dma_latency_us: Option<i32>,
}

/// What the kernel granted, read back rather than assumed.
#[derive(Debug, Clone, Serialize)]
pub struct RtAchieved {
    pub sched_policy: String,
    pub sched_priority: i32,
    /// `None` when no priority was requested.
    pub priority_applied: Option<bool>,
    /// The CPUs this process may run on after set-up.
    pub affinity: Vec<usize>,
    /// `None` when no CPU was requested.
    pub affinity_applied: Option<bool>,
    pub mlockall: bool,
    pub cpu_dma_latency: bool,
}

/// The `rt` section of the metadata.
#[derive(Debug, Clone, Serialize)]
pub struct RtReport {
    pub requested: RtRequest,
    /// `None` for the standalone `metadata` subcommand, which sets nothing up.
    pub achieved: Option<RtAchieved>,
    pub warnings: Vec<String>,
}

impl RtReport {
    /// The report of a process that requested nothing.
    pub fn none() -> RtReport {
        RtReport { requested: RtRequest::default(), achieved: None, warnings: Vec::new() }
    }
}

/// Holds what must stay held for the whole run: the PM QoS request lasts only
/// while /dev/cpu_dma_latency stays open.
#[derive(Debug)]
pub struct RtGuard {
    _cpu_dma_latency: Option<File>,
}

/// Applies `priority` and `cpu` (either may be absent), always locks memory
/// and holds cpu_dma_latency at 0. Refusals become warnings in the report;
/// only a CPU that does not exist at all is an error, since pinning to it
/// can never work and the user meant something else.
pub fn setup(priority: Option<u8>, cpu: Option<usize>) -> Result<(RtGuard, RtReport)> {
    let requested = RtRequest { priority, cpu, mlockall: true, cpu_dma_latency_us: Some(0) };
    let mut warnings = Vec::new();

    // Affinity first, so that everything after (page locking, the RT switch)
    // already happens on the CPU the run will use.
    let affinity_applied = match cpu {
        None => None,
        Some(cpu) => {
            check_cpu_exists(cpu)?;
            match set_affinity(cpu) {
                Ok(()) => Some(true),
                Err(e) => {
                    warnings.push(format!(
                        "cannot pin to CPU {cpu}: {} (the CPU may be offline or outside this \
                         process's cpuset); running on any CPU",
                        os_message(&e)
                    ));
                    Some(false)
                }
            }
        }
    };

    let mlocked = match lock_memory() {
        Ok(()) => true,
        Err(e) => {
            let why = match e.raw_os_error() {
                Some(libc::EPERM) | Some(libc::ENOMEM) | Some(libc::EAGAIN) => {
                    "not permitted (needs CAP_IPC_LOCK or a large enough memlock limit, see ulimit -l)"
                        .to_string()
                }
                _ => format!("failed: {}", os_message(&e)),
            };
            warnings.push(format!("mlockall {why}; page faults may add latency"));
            false
        }
    };

    let dma = match hold_cpu_dma_latency() {
        Ok(file) => Some(file),
        Err(e) => {
            let why = match e.kind() {
                io::ErrorKind::NotFound => "absent (kernel without PM QoS)".to_string(),
                io::ErrorKind::PermissionDenied => "not permitted (needs root)".to_string(),
                _ => format!("failed: {}", os_message(&e)),
            };
            warnings
                .push(format!("/dev/cpu_dma_latency {why}; deep CPU idle states may add wake-up latency"));
            None
        }
    };

    // The RT switch last, so the set-up above does not run at RT priority.
    let priority_applied = match priority {
        None => None,
        Some(prio) => match set_fifo(prio) {
            Ok(()) => Some(true),
            Err(e) => {
                let why = match e.raw_os_error() {
                    Some(libc::EPERM) => "not permitted (needs CAP_SYS_NICE or an rtprio limit)".to_string(),
                    _ => format!("failed: {}", os_message(&e)),
                };
                warnings.push(format!("SCHED_FIFO {prio} {why}; running at normal priority"));
                Some(false)
            }
        },
    };

    let (sched_policy, sched_priority) = current_policy();
    let achieved = RtAchieved {
        sched_policy,
        sched_priority,
        priority_applied,
        affinity: current_affinity().unwrap_or_default(),
        affinity_applied,
        mlockall: mlocked,
        cpu_dma_latency: dma.is_some(),
    };
    let report = RtReport { requested, achieved: Some(achieved), warnings };
    Ok((RtGuard { _cpu_dma_latency: dma }, report))
}

fn check_cpu_exists(cpu: usize) -> Result<()> {
    // SAFETY: sysconf has no memory effects.
    let configured = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    let setsize = libc::CPU_SETSIZE as usize;
    let limit = if configured > 0 { (configured as usize).min(setsize) } else { setsize };
    if cpu >= limit {
        let range = if limit == 1 { "CPU 0".to_string() } else { format!("CPUs 0-{}", limit - 1) };
        return Err(
            UsageError(format!("--cpu {cpu} does not exist: this board has {range} (check --cpu)")).into()
        );
    }
    Ok(())
}

fn set_affinity(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` < CPU_SETSIZE (checked by check_cpu_exists), so CPU_SET stays in bounds.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn current_affinity() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is valid for writes of the size passed.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: the index is below CPU_SETSIZE.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

fn lock_memory() -> io::Result<()> {
    // SAFETY: mlockall only changes paging of our own address space.
    if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn hold_cpu_dma_latency() -> io::Result<File> {
    let mut file = OpenOptions::new().write(true).open("/dev/cpu_dma_latency")?;
    // The kernel takes a raw native-endian s32 here (it also parses ASCII,
    // but the binary form is the documented one).
    file.write_all(&0i32.to_ne_bytes())?;
    Ok(file)
}

fn set_fifo(priority: u8) -> io::Result<()> {
    let mut param = zeroed_sched_param();
    param.sched_priority = i32::from(priority);
    // SAFETY: `param` is a valid sched_param; pid 0 means the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn current_policy() -> (String, i32) {
    // SAFETY: pid 0 means the calling thread; no memory is passed.
    let policy = unsafe { libc::sched_getscheduler(0) };
    let mut param = zeroed_sched_param();
    // SAFETY: `param` is valid for writes.
    let rc = unsafe { libc::sched_getparam(0, &mut param) };
    let name = match policy & !libc::SCHED_RESET_ON_FORK {
        libc::SCHED_OTHER => "SCHED_OTHER",
        libc::SCHED_FIFO => "SCHED_FIFO",
        libc::SCHED_RR => "SCHED_RR",
        libc::SCHED_BATCH => "SCHED_BATCH",
        libc::SCHED_IDLE => "SCHED_IDLE",
        _ => "unknown",
    };
    (name.to_string(), if rc == 0 { param.sched_priority } else { -1 })
}

/// Built field by field because musl's `sched_param` has extra private
/// fields, so a struct literal that builds for glibc fails for musl boards.
fn zeroed_sched_param() -> libc::sched_param {
    // SAFETY: sched_param is plain C data; all-zero bytes are a valid value.
    unsafe { std::mem::zeroed() }
}
