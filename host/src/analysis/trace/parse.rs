//! The ftrace `trace` file's text, as `latprobe-responder --trace` saves it:
//! one event a line, `task-pid [cpu] flags timestamp: event: details`, after
//! `#` header lines.
//!
//! ```text
//!  latprobe-respon-14510   [000] ...1. 43587.970230: tracing_mark_write: latprobe seq=2 id=0x03
//! ```
//!
//! A task's name may hold spaces and dashes (`opt cgu.14-17087`): the pid is
//! after the last dash before ` [`. The flags column is absent when the
//! `irq-info` option is off.

/// One event of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub task: String,
    pub pid: u32,
    pub cpu: u32,
    /// The trace clock's time, ns (CLOCK_MONOTONIC with `trace_clock` mono,
    /// as the responder sets it).
    pub ts_ns: u64,
    pub name: String,
    pub details: String,
    /// The line as it was.
    pub line: String,
}

/// A `latprobe seq=N [id=0xNN]` marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    pub seq: u64,
    pub id: Option<u8>,
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: u32,
}

/// A parsed snapshot.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// In time order.
    pub events: Vec<Event>,
    /// Lines that were neither headers nor events.
    pub unparsed: usize,
    /// The tracer, from `# tracer: nop`.
    pub tracer: Option<String>,
}

impl Snapshot {
    /// The responder's markers, in time order.
    pub fn markers(&self) -> Vec<Marker> {
        self.events
            .iter()
            .filter(|e| e.name == "tracing_mark_write")
            .filter_map(|e| {
                let (seq, id) = parse_marker(&e.details)?;
                Some(Marker { seq, id, ts_ns: e.ts_ns, cpu: e.cpu, pid: e.pid })
            })
            .collect()
    }
}

/// `latprobe seq=12 id=0x03` → `(12, Some(3))`.
pub fn parse_marker(details: &str) -> Option<(u64, Option<u8>)> {
    let rest = details.trim().strip_prefix("latprobe ")?;
    let mut seq = None;
    let mut id = None;
    for word in rest.split_whitespace() {
        if let Some(v) = word.strip_prefix("seq=") {
            seq = v.parse().ok();
        } else if let Some(v) = word.strip_prefix("id=0x") {
            id = u8::from_str_radix(v, 16).ok();
        }
    }
    Some((seq?, id))
}

/// Parse a whole `trace` file.
pub fn parse(text: &str) -> Snapshot {
    let mut s = Snapshot::default();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix('#') {
            if let Some(t) = h.trim().strip_prefix("tracer:") {
                s.tracer = Some(t.trim().to_string());
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(line) {
            Some(e) => s.events.push(e),
            None => s.unparsed += 1,
        }
    }
    // The file is in time order per CPU and merged; a stable sort keeps it.
    s.events.sort_by_key(|e| e.ts_ns);
    s
}

/// One event line, or `None`.
pub fn parse_line(line: &str) -> Option<Event> {
    // ` [ddd] `: the CPU column, the first bracketed number after the task.
    let open = find_cpu_column(line)?;
    let (task_pid, rest) = (&line[..open], &line[open..]);
    let (task, pid) = task_pid.trim().rsplit_once('-')?;
    let pid = pid.parse().ok()?;
    let close = rest.find(']')?;
    let cpu = rest[1..close].trim().parse().ok()?;
    let mut rest = rest[close + 1..].trim_start();
    // The flags column, when there (`dNh3.`): the timestamp ends with ':'.
    if let Some((first, after)) = rest.split_once(' ') {
        if !first.ends_with(':') {
            rest = after.trim_start();
        }
    }
    let (ts, rest) = rest.split_once(": ")?;
    let ts_ns = parse_timestamp(ts.trim())?;
    let (name, details) = match rest.split_once(": ") {
        Some((n, d)) => (n.trim(), d.trim()),
        None => (rest.trim().trim_end_matches(':'), ""),
    };
    Some(Event {
        task: task.trim().to_string(),
        pid,
        cpu,
        ts_ns,
        name: name.to_string(),
        details: details.to_string(),
        line: line.to_string(),
    })
}

fn find_cpu_column(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    let mut from = 0;
    while let Some(i) = line[from..].find(" [") {
        let at = from + i + 1;
        let digits = bytes[at + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 && bytes.get(at + 1 + digits) == Some(&b']') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// `43587.970230` (µs) or `43587.970230123` (ns) seconds → ns.
pub fn parse_timestamp(ts: &str) -> Option<u64> {
    let (secs, frac) = ts.split_once('.').unwrap_or((ts, "0"));
    let secs: u64 = secs.parse().ok()?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns: u64 = format!("{frac:0<9}").parse().ok()?;
    secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// `prev_comm=a prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120`:
/// `(prev_comm, prev_pid, next_comm, next_pid)`. A comm may hold spaces:
/// each value runs to the next ` key=`.
pub fn parse_switch(details: &str) -> Option<(String, u32, String, u32)> {
    let (prev, next) = details.split_once(" ==> ")?;
    let prev_comm = field(prev, "prev_comm", "prev_pid")?;
    let prev_pid = field(prev, "prev_pid", "prev_prio")?.parse().ok()?;
    let next_comm = field(next, "next_comm", "next_pid")?;
    let next_pid = field(next, "next_pid", "next_prio")?.parse().ok()?;
    Some((prev_comm, prev_pid, next_comm, next_pid))
}

/// `comm=a b pid=3 prio=120 target_cpu=001`: `(comm, pid, target_cpu)`.
pub fn parse_wakeup(details: &str) -> Option<(String, u32, Option<u32>)> {
    let comm = field(details, "comm", "pid")?;
    let pid = field(details, "pid", "prio")?.parse().ok()?;
    let cpu = details.rsplit_once("target_cpu=").and_then(|(_, c)| c.trim().parse().ok());
    Some((comm, pid, cpu))
}

/// The value of `key=` up to ` next=`.
fn field(text: &str, key: &str, next: &str) -> Option<String> {
    let start = find_key(text, key)? + key.len() + 1;
    let end = find_key(&text[start..], next).map_or(text.len(), |e| start + e - 1);
    Some(text[start..end].trim().to_string())
}

/// Where `key=` starts, at the start of `text` or after a space.
fn find_key(text: &str, key: &str) -> Option<usize> {
    let pat = format!("{key}=");
    let mut from = 0;
    while let Some(i) = text[from..].find(&pat) {
        let at = from + i;
        if at == 0 || text.as_bytes()[at - 1] == b' ' {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_with_spaces_dashes_and_flags() {
        let e = parse_line(
            "      opt cgu.14-17087   [000] dNh3. 43693.639242: sched_wakeup: comm=a_trigger_while pid=17102 prio=120 target_cpu=000",
        )
        .unwrap();
        assert_eq!((e.task.as_str(), e.pid, e.cpu), ("opt cgu.14", 17087, 0));
        assert_eq!(e.ts_ns, 43_693_639_242_000);
        assert_eq!(e.name, "sched_wakeup");
        assert_eq!(parse_wakeup(&e.details), Some(("a_trigger_while".into(), 17102, Some(0))));
        let m = parse_line(
            " latprobe-respon-14510   [001] ...1. 43587.970230: tracing_mark_write: latprobe seq=2 id=0x03",
        )
        .unwrap();
        assert_eq!((m.task.as_str(), m.pid, m.cpu), ("latprobe-respon", 14510, 1));
        assert_eq!(parse_marker(&m.details), Some((2, Some(3))));
        assert_eq!(parse_marker("latprobe seq=7"), Some((7, None)));
        assert_eq!(parse_marker("something else"), None);
        // Without the irq-info column, and with ns timestamps.
        let e =
            parse_line("  <idle>-0     [003] 100.000000123: irq_handler_entry: irq=36 name=virtio1").unwrap();
        assert_eq!((e.task.as_str(), e.pid, e.cpu, e.ts_ns), ("<idle>", 0, 3, 100_000_000_123));
        assert_eq!(parse_line("# tracer: nop"), None);
        assert_eq!(parse_line("garbage"), None);
    }

    #[test]
    fn switches_with_spaces_in_names() {
        let d = "prev_comm=opt cgu.14 prev_pid=17087 prev_prio=120 prev_state=R ==> next_comm=kworker/u8:2 next_pid=8546 next_prio=120";
        assert_eq!(parse_switch(d), Some(("opt cgu.14".into(), 17087, "kworker/u8:2".into(), 8546)));
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp("1.5"), Some(1_500_000_000));
        assert_eq!(parse_timestamp("42836.425273"), Some(42_836_425_273_000));
        assert_eq!(parse_timestamp("1.1234567890"), None);
        assert_eq!(parse_timestamp("x.1"), None);
    }
}
