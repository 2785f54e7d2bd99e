//! The target's log (`latprobe-responder periodic --log`) read as a
//! stream: its magic line, its header ([`Header`]), then `(cycle, latency
//! ns)` records in increasing cycle order.

use std::io::BufRead as _;
use std::path::Path;

use crate::Error;

/// The log's first line.
pub const MAGIC: &str = "# latprobe-responder periodic log 1";

/// The log's header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    /// `interval_ns`.
    pub interval_ns: Option<u64>,
    /// `cycle0_monotonic_ns`.
    pub cycle0_monotonic_ns: Option<u64>,
    /// `cycle0_realtime_ns`.
    pub cycle0_realtime_ns: Option<u64>,
    /// `# capped: …; cycle N and later are not logged`: the first cycle
    /// the log does not hold (it reached its `--log-max`).
    pub capped_at: Option<u64>,
}

/// A streaming reader of a log: header first, then `(cycle, latency ns)`.
pub(super) struct LogReader {
    path: String,
    lines: std::io::Lines<std::io::BufReader<std::fs::File>>,
    line_no: u64,
    last: Option<u64>,
}

impl LogReader {
    pub(super) fn open(path: &Path) -> Result<(Self, Header), Error> {
        let file = std::fs::File::open(path)
            .map_err(|e| Error::Input(format!("cannot read --target-log {}: {e}", path.display())))?;
        let mut r = Self {
            path: path.display().to_string(),
            lines: std::io::BufReader::with_capacity(1 << 16, file).lines(),
            line_no: 0,
            last: None,
        };
        let first = r.lines.next().transpose().map_err(|e| r.io(e))?.unwrap_or_default();
        r.line_no = 1;
        if first.trim_end() != MAGIC {
            return Err(Error::Input(format!(
                "--target-log {}: line 1 is '{}', expected '{MAGIC}' (the log of `latprobe-responder periodic --log`)",
                r.path,
                first.chars().take(60).collect::<String>()
            )));
        }
        Ok((r, Header::default()))
    }

    fn io(&self, e: std::io::Error) -> Error {
        Error::Input(format!("cannot read --target-log {}: {e}", self.path))
    }

    /// The next record; header lines fill `header` on the way.
    pub(super) fn next(&mut self, header: &mut Header) -> Result<Option<(u64, u64)>, Error> {
        loop {
            let Some(line) = self.lines.next() else { return Ok(None) };
            let line = line.map_err(|e| self.io(e))?;
            self.line_no += 1;
            let t = line.trim();
            if t.is_empty() {
                continue;
            }
            if let Some(rest) = t.strip_prefix('#') {
                let mut it = rest.split_whitespace();
                let key = it.next().unwrap_or("");
                let val = it.next().and_then(|v| v.parse::<u64>().ok());
                match key {
                    "capped:" => {
                        header.capped_at = rest.split_once("; cycle ").and_then(|(_, c)| {
                            c.split_whitespace().next().and_then(|n| n.parse::<u64>().ok())
                        });
                    }
                    "interval_ns" => header.interval_ns = val,
                    "cycle0_monotonic_ns" => header.cycle0_monotonic_ns = val,
                    "cycle0_realtime_ns" => header.cycle0_realtime_ns = val,
                    _ => {}
                }
                continue;
            }
            let mut it = t.split_whitespace();
            let parsed = match (it.next(), it.next(), it.next()) {
                (Some(c), Some(l), None) => c.parse::<u64>().ok().zip(l.parse::<u64>().ok()),
                _ => None,
            };
            let Some((c, l)) = parsed else {
                // A line cut short by the end of a live file is the end.
                if self.lines_left_is_empty() {
                    return Ok(None);
                }
                return Err(Error::Input(format!(
                    "--target-log {} line {}: expected 'CYCLE LATENCY_NS', found '{}'",
                    self.path,
                    self.line_no,
                    t.chars().take(60).collect::<String>()
                )));
            };
            if self.last.is_some_and(|p| c <= p) {
                return Err(Error::Input(format!(
                    "--target-log {} line {}: cycle {c} does not follow cycle {} (cycles must increase)",
                    self.path,
                    self.line_no,
                    self.last.unwrap_or(0)
                )));
            }
            self.last = Some(c);
            return Ok(Some((c, l)));
        }
    }

    fn lines_left_is_empty(&mut self) -> bool {
        // Peeking would need a buffer; a malformed line followed by more
        // lines is an error, the last line of a file may be cut short.
        matches!(self.lines.next(), None | Some(Err(_)))
    }
}

/// The log's header: the lines before its first record.
pub(super) fn read_header(log: &Path) -> Result<Header, Error> {
    let (mut r, mut h) = LogReader::open(log)?;
    let _ = r.next(&mut h)?;
    Ok(h)
}
