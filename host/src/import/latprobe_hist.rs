//! latprobe's own histfile ([`crate::report::histfile`]) read back: the
//! `# latprobe` comment lines before `# Histogram` say that the probe
//! measured it, by its own clock, and what cyclictest's layout cannot say:
//! the mode, the interval, the unit, the probe, when it started, the
//! command line, and which overflows are timeouts, above which timeout.
//!
//! ```text
//! # latprobe 0.1.0: latencies measured by the probe's clock, 1 us bins      every version
//! # latprobe: samples 3000 responses 2970 timeouts 30 lost 0               every version
//! # latprobe: mode uart-echo                                               newer files
//! # latprobe: interval_ns 1000000
//! # latprobe: timeout_ns 500000
//! # latprobe: unit us
//! # latprobe: probe virtual 0.1.0, 1000000000 Hz timer, emulated
//! # latprobe: started 2026-12-01T11:22:10.463Z
//! # latprobe: command_line ["latprobe","run","--count","3000"]
//! # latprobe: the 30 timeouts are latencies above 500.000 us, ...          with timeouts, every version
//! ```
//!
//! A file of an older version has only the first, second and last kinds:
//! its unit (`1 us bins`), its timeouts and their bound still come from
//! them.

use serde_json::{Map, Value};

use super::TimeUnit;

/// What the `# latprobe` lines of a histfile say.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Header {
    /// The latprobe version that wrote it.
    pub version: String,
    /// The unit of the bins and figures.
    pub unit: Option<TimeUnit>,
    /// Timeout samples (counted among the overflows).
    pub timeouts: u64,
    /// Their bound: each is a latency above it.
    pub timeout_ns: Option<u64>,
    /// The stimulus interval.
    pub interval_ns: Option<u64>,
    /// Samples lost on the link.
    pub lost: Option<u64>,
    /// The measurement mode (`uart-echo`, …).
    pub mode: Option<String>,
    /// Board and firmware.
    pub probe: Option<String>,
    /// Whether the probe said it is emulated or virtual.
    pub emulated: bool,
    /// The probe's timer frequency.
    pub timer_hz: Option<u64>,
    /// When the run started (RFC 3339).
    pub started: Option<String>,
    /// latprobe's command line.
    pub command_line: Option<Vec<String>>,
}

/// The header of a latprobe histfile, from its `#` comments before
/// `# Histogram`; `None` when the first is not latprobe's.
pub(super) fn header(comments: &[&str]) -> Option<Header> {
    let first = comments.first()?.strip_prefix("# latprobe ")?;
    let (version, rest) = first.split_once(':')?;
    if !rest.contains("measured by the probe's clock") {
        return None;
    }
    let mut h = Header { version: version.trim().to_owned(), ..Header::default() };
    if rest.contains("1 us bins") {
        h.unit = Some(TimeUnit::Micros);
    }
    for c in &comments[1..] {
        let Some(line) = c.strip_prefix("# latprobe: ") else { continue };
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        let num = || value.trim().parse::<u64>().ok();
        match key {
            "samples" => {
                // `samples N responses N timeouts N lost N`
                let words: Vec<&str> = line.split_whitespace().collect();
                let after = |k: &str| {
                    words.iter().position(|w| *w == k).and_then(|i| words.get(i + 1)?.parse::<u64>().ok())
                };
                h.timeouts = h.timeouts.max(after("timeouts").unwrap_or(0));
                h.lost = after("lost");
            }
            "the" => {
                // `the N timeouts are latencies above X us, …`
                if let Some((n, rest)) = value.split_once(" timeouts are latencies above ") {
                    h.timeouts = n.trim().parse().unwrap_or(h.timeouts);
                    if h.timeout_ns.is_none() {
                        h.timeout_ns = rest.split_whitespace().next().and_then(us_to_ns);
                    }
                }
            }
            "mode" => h.mode = Some(value.trim().to_owned()).filter(|m| !m.is_empty()),
            "interval_ns" => h.interval_ns = num(),
            "timeout_ns" => h.timeout_ns = num().or(h.timeout_ns),
            "unit" => {
                h.unit = match value.trim() {
                    "us" => Some(TimeUnit::Micros),
                    "ns" => Some(TimeUnit::Nanos),
                    _ => h.unit,
                }
            }
            "probe" => {
                let mut parts = value.split(", ");
                h.probe = parts.next().map(str::to_owned);
                for p in parts {
                    if p == "emulated" {
                        h.emulated = true;
                    } else if let Some(hz) = p.strip_suffix(" Hz timer") {
                        h.timer_hz = hz.trim().parse().ok();
                    }
                }
            }
            "started" => h.started = Some(value.trim().to_owned()).filter(|v| !v.is_empty()),
            "command_line" => h.command_line = serde_json::from_str(value).ok(),
            _ => {}
        }
    }
    Some(h)
}

/// `180.000` (µs, up to 3 decimals) in ns.
fn us_to_ns(text: &str) -> Option<u64> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns: u64 = if frac.is_empty() { 0 } else { format!("{frac:0<3}").parse().ok()? };
    whole.parse::<u64>().ok()?.checked_mul(1000)?.checked_add(frac_ns)
}

/// A command line as one string a shell would read back: arguments with
/// spaces or quotes are single-quoted.
pub fn shell_words(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            let plain =
                !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Header {
    /// The facts for [`super::ImportedRun::extra`]`["latprobe"]`.
    pub(super) fn extra(&self) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.insert(k.to_owned(), v);
            }
        };
        put("version", Some(Value::from(self.version.clone())));
        put("mode", self.mode.clone().map(Value::from));
        put("lost", self.lost.map(Value::from));
        put("probe", self.probe.clone().map(Value::from));
        put("emulated", Some(Value::from(self.emulated)));
        put("timer_hz", self.timer_hz.map(Value::from));
        put("started", self.started.clone().map(Value::from));
        put("command_line", self.command_line.clone().map(Value::from));
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_in_us_with_three_decimals_is_exact_ns() {
        assert_eq!(us_to_ns("180.000"), Some(180_000));
        assert_eq!(us_to_ns("0.5"), Some(500));
        assert_eq!(us_to_ns("12"), Some(12_000));
        assert_eq!(us_to_ns("1.2345"), None);
        assert_eq!(us_to_ns("x"), None);
    }

    #[test]
    fn an_old_header_gives_the_unit_and_the_timeouts() {
        let h = header(&[
            "# latprobe 0.1.0: latencies measured by the probe's clock, 1 us bins",
            "# latprobe: samples 300 responses 297 timeouts 3 lost 1",
            "# latprobe: the 3 timeouts are latencies above 8000.000 us, counted as overflows",
        ])
        .unwrap();
        assert_eq!(
            (h.unit, h.timeouts, h.timeout_ns, h.lost),
            (Some(TimeUnit::Micros), 3, Some(8_000_000), Some(1))
        );
        assert_eq!(h.mode, None);
        assert!(header(&["# /dev/cpu_dma_latency set to 0us"]).is_none());
    }

    #[test]
    fn a_command_line_reads_back_in_a_shell() {
        let args: Vec<String> = ["latprobe", "run", "--label", "a b", "it's"].map(String::from).into();
        assert_eq!(shell_words(&args), "latprobe run --label 'a b' 'it'\\''s'");
    }
}
