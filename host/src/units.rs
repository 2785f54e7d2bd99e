//! Human durations on the command line (`500us`, `1ms`, `1.5ms`, `2s`) to
//! exact integer nanoseconds, and back for display. No floats: `1.5ms` is
//! 1 500 000 ns exactly, and a value finer than 1 ns is an error, not a
//! rounding.

use std::time::Duration;

/// Parse a duration with a unit (`ns`, `us`/`µs`, `ms`, `s`, `min`, `h`) to
/// nanoseconds. A bare `0` is accepted; any other number needs a unit.
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t == "0" {
        return Ok(0);
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

/// Like [`parse_duration_ns`] as a [`Duration`], for clap.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    parse_duration_ns(text).map(Duration::from_nanos)
}

/// A nanosecond count in the largest unit that keeps it readable, with up to
/// three decimals, trailing zeros dropped: `1.5ms`, `250ns`, `2s`.
pub fn format_ns(ns: u64) -> String {
    let (div, unit) = if ns >= 1_000_000_000 {
        (1_000_000_000, "s")
    } else if ns >= 1_000_000 {
        (1_000_000, "ms")
    } else if ns >= 1_000 {
        (1_000, "us")
    } else {
        return format!("{ns}ns");
    };
    format!("{}{unit}", decimal(ns, div, 3))
}

/// A [`Duration`] as [`format_ns`] does.
pub fn format_duration(d: Duration) -> String {
    format_ns(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// `value / div` with at most `places` decimals (rounded), trailing zeros
/// dropped, in integer arithmetic.
pub fn decimal(value: u64, div: u64, places: u32) -> String {
    let p = 10u128.pow(places);
    let scaled = (u128::from(value) * p + u128::from(div) / 2) / u128::from(div);
    let int = scaled / p;
    let frac = scaled % p;
    if frac == 0 {
        return format!("{int}");
    }
    let s = format!("{frac:0width$}", width = places as usize);
    format!("{int}.{}", s.trim_end_matches('0'))
}

/// Microseconds with a fixed number of decimals, for aligned tables.
pub fn us_fixed(ns: u64, places: u32) -> String {
    let p = 10u128.pow(places);
    let scaled = (u128::from(ns) * p + 500) / 1000;
    if places == 0 {
        return format!("{scaled}");
    }
    format!("{}.{:0width$}", scaled / p, scaled % p, width = places as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_exactly() {
        assert_eq!(parse_duration_ns("500us"), Ok(500_000));
        assert_eq!(parse_duration_ns("1ms"), Ok(1_000_000));
        assert_eq!(parse_duration_ns("2s"), Ok(2_000_000_000));
        assert_eq!(parse_duration_ns("250ns"), Ok(250));
        assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration_ns("0.001ms"), Ok(1_000));
        assert_eq!(parse_duration_ns(".5s"), Ok(500_000_000));
        assert_eq!(parse_duration_ns("10µs"), Ok(10_000));
        assert_eq!(parse_duration_ns("1min"), Ok(60_000_000_000));
        assert_eq!(parse_duration_ns("0"), Ok(0));
        assert_eq!(parse_duration_ns("1.000ns"), Ok(1));
    }

    #[test]
    fn rejects_what_it_cannot_represent() {
        assert!(parse_duration_ns("5").unwrap_err().contains("no unit"));
        assert!(parse_duration_ns("1.5ns").unwrap_err().contains("finer than 1 ns"));
        assert!(parse_duration_ns("1x").unwrap_err().contains("unknown unit"));
        assert!(parse_duration_ns("ms").is_err());
        assert!(parse_duration_ns("1.2.3ms").is_err());
        assert!(parse_duration_ns("99999999999999999999s").unwrap_err().contains("too long"));
        assert!(parse_duration_ns("20000000000s").unwrap_err().contains("too long"));
        assert!(parse_duration_ns("-1ms").is_err());
    }

    #[test]
    fn formats_readably() {
        assert_eq!(format_ns(1_500_000), "1.5ms");
        assert_eq!(format_ns(250), "250ns");
        assert_eq!(format_ns(2_000_000_000), "2s");
        assert_eq!(format_ns(12_345), "12.345us");
        assert_eq!(decimal(1, 3, 3), "0.333");
        assert_eq!(us_fixed(12_345, 1), "12.3");
        assert_eq!(us_fixed(999, 0), "1");
    }
}
