//! Durations on the command line (`250ns`, `500us`, `1.5ms`, `2s`, `1min`,
//! `1h`) to exact integer nanoseconds, without floats: `1.5ms` is 1 500 000
//! ns exactly, and a value finer than 1 ns is an error, not a rounding.
//!
//! `latprobe-responder` includes this very file (by path), so the two tools
//! read a duration alike: keep it free of any dependency and of anything
//! but the parser.

/// Parse a duration with a unit (`ns`, `us`/`µs`, `ms`, `s`, `min`, `h`) to
/// nanoseconds. A bare `0` is accepted; any other number needs a unit.
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t == "0" {
        return Ok(0);
    }
    // A flag where the value belongs (`--duration --count 5`): the flags
    // take values with a minus sign, so that a negative one is named here.
    if t.starts_with("--") || (t.starts_with('-') && t[1..].starts_with(|c: char| c.is_ascii_alphabetic())) {
        return Err(format!("needs a value, found the flag '{t}': give a duration, e.g. 5s, 500us, 1.5ms"));
    }
    if t.starts_with('-') {
        return Err(format!("'{t}' is negative: a duration counts forward, e.g. 5s, 500us, 1.5ms, 2min"));
    }
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    if unit.is_empty() {
        return Err(format!("'{t}' has no unit: write e.g. 250ns, 500us, 1.5ms, 2s"));
    }
    let mult: u64 = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return Err(format!("'{t}': unknown unit '{unit}' (use ns, us, ms, s, min or h)")),
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if (int.is_empty() && frac.is_empty()) || frac.contains('.') {
        return Err(format!("'{t}' is not a number with a unit: write e.g. 500us or 1.5ms"));
    }
    let too_long = || format!("'{t}' is too long");
    let mut ns: u64 = if int.is_empty() {
        0
    } else {
        int.parse::<u64>().map_err(|_| too_long())?.checked_mul(mult).ok_or_else(too_long)?
    };
    let mut scale = mult;
    for d in frac.bytes() {
        let d = u64::from(d - b'0');
        if scale % 10 != 0 {
            if d != 0 {
                return Err(format!("'{t}' is finer than 1 ns"));
            }
            continue;
        }
        scale /= 10;
        ns = ns.checked_add(d * scale).ok_or_else(too_long)?;
    }
    Ok(ns)
}

#[cfg(test)]
mod tests {
    use super::parse_duration_ns;

    #[test]
    fn parses_units_exactly() {
        assert_eq!(parse_duration_ns("500us"), Ok(500_000));
        // A negative one is refused without promising that 0 is taken
        // (most flags need more than 0 and say so themselves).
        let e = parse_duration_ns("-1s").unwrap_err();
        assert!(e.contains("negative") && !e.contains("0 or more"), "{e}");
        assert_eq!(parse_duration_ns("1ms"), Ok(1_000_000));
        assert_eq!(parse_duration_ns("2s"), Ok(2_000_000_000));
        assert_eq!(parse_duration_ns("250ns"), Ok(250));
        assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration_ns("0.001ms"), Ok(1_000));
        assert_eq!(parse_duration_ns(".5s"), Ok(500_000_000));
        assert_eq!(parse_duration_ns("10µs"), Ok(10_000));
        assert_eq!(parse_duration_ns(" 10 ms "), Ok(10_000_000));
        assert_eq!(parse_duration_ns("1min"), Ok(60_000_000_000));
        assert_eq!(parse_duration_ns("2h"), Ok(7_200_000_000_000));
        assert_eq!(parse_duration_ns("0"), Ok(0));
        assert_eq!(parse_duration_ns("0ms"), Ok(0));
        assert_eq!(parse_duration_ns("1.000ns"), Ok(1));
    }

    #[test]
    fn rejects_what_it_cannot_represent() {
        assert!(parse_duration_ns("5").unwrap_err().contains("no unit"));
        assert!(parse_duration_ns("1.5ns").unwrap_err().contains("finer than 1 ns"));
        assert!(parse_duration_ns("1x").unwrap_err().contains("unknown unit"));
        assert!(parse_duration_ns("10m").unwrap_err().contains("unknown unit"));
        assert!(parse_duration_ns("10MS").unwrap_err().contains("unknown unit"));
        assert!(parse_duration_ns("ms").is_err());
        assert!(parse_duration_ns("").is_err());
        assert!(parse_duration_ns("1.2.3ms").is_err());
        assert!(parse_duration_ns("99999999999999999999s").unwrap_err().contains("too long"));
        assert!(parse_duration_ns("20000000000s").unwrap_err().contains("too long"));
        // A minus sign is named as such, not taken for an unknown unit.
        assert!(
            parse_duration_ns("-1ms").unwrap_err().contains("negative"),
            "{:?}",
            parse_duration_ns("-1ms")
        );
        assert!(parse_duration_ns(" -0.5s").unwrap_err().contains("negative"));
        assert!(parse_duration_ns("--count").unwrap_err().contains("needs a value"));
        assert!(parse_duration_ns("-q").unwrap_err().contains("needs a value"));
    }
}
