//! Human durations on the command line to exact integer nanoseconds (the
//! parser lives in [`crate::duration`], shared with the responder), and
//! back for display, in integer arithmetic.

use std::time::Duration;

pub use crate::duration::parse_duration_ns;

/// Like [`parse_duration_ns`] as a [`Duration`], for clap.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    parse_duration_ns(text).map(Duration::from_nanos)
}

/// The shortest `--silence-timeout`: two of the session's 50 ms polls. A
/// shorter one fails a sound probe between two of its frames, and its
/// error could only speak of a silence shorter than one poll.
pub const MIN_SILENCE_NS: u64 = 100_000_000;

/// Like [`parse_duration`], refusing 0 and anything below
/// [`MIN_SILENCE_NS`]: for a limit that would make the run fail at once
/// (`--silence-timeout`).
pub fn parse_positive_duration(text: &str) -> Result<Duration, String> {
    match parse_duration_ns(text)? {
        0 => Err(format!("'{}' is zero: give a time longer than 0, e.g. 3s", text.trim())),
        ns if ns < MIN_SILENCE_NS => Err(format!(
            "'{}' is shorter than {}: latprobe polls its link every 50ms, so a shorter silence would \
             fail a sound probe between two frames; give at least 100ms, e.g. 3s",
            text.trim(),
            format_ns(MIN_SILENCE_NS)
        )),
        ns => Ok(Duration::from_nanos(ns)),
    }
}

/// A nanosecond count in the largest unit that keeps it readable, with up to
/// three decimals, trailing zeros dropped: `1.5ms`, `250ns`, `2s`.
pub fn format_ns(ns: u64) -> String {
    readable(ns, decimal)
}

/// `ns` in the largest unit that keeps it readable, its digits made by
/// `digits(value, unit's ns, 3)` ([`decimal`] or [`decimal_floor`]).
fn readable(ns: u64, digits: fn(u64, u64, u32) -> String) -> String {
    let (div, unit) = if ns >= 1_000_000_000 {
        (1_000_000_000, "s")
    } else if ns >= 1_000_000 {
        (1_000_000, "ms")
    } else if ns >= 1_000 {
        (1_000, "us")
    } else {
        return format!("{ns}ns");
    };
    format!("{}{unit}", digits(ns, div, 3))
}

/// A [`Duration`] as [`format_ns`] does.
pub fn format_duration(d: Duration) -> String {
    format_ns(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// `value / div` with at most `places` decimals (rounded), trailing zeros
/// dropped, in integer arithmetic.
pub fn decimal(value: u64, div: u64, places: u32) -> String {
    let p = 10u128.pow(places);
    trimmed((u128::from(value) * p + u128::from(div) / 2) / u128::from(div), places)
}

/// `scaled / 10^places` as a decimal, trailing zeros dropped.
fn trimmed(scaled: u128, places: u32) -> String {
    let p = 10u128.pow(places);
    let (int, frac) = (scaled / p, scaled % p);
    if frac == 0 {
        return format!("{int}");
    }
    let s = format!("{frac:0width$}", width = places as usize);
    format!("{int}.{}", s.trim_end_matches('0'))
}

/// `value / div` with at most `places` decimals, rounded *down*, trailing
/// zeros dropped: the digits of a bound a figure is known to exceed.
pub fn decimal_floor(value: u64, div: u64, places: u32) -> String {
    trimmed(u128::from(value) * 10u128.pow(places) / u128::from(div), places)
}

/// `ns` in µs with `places` fixed decimals, rounded *down*.
pub fn us_floor(ns: u64, places: u32) -> String {
    let p = 10u128.pow(places);
    let scaled = u128::from(ns) * p / 1000;
    if places == 0 {
        return format!("{scaled}");
    }
    format!("{}.{:0width$}", scaled / p, scaled % p, width = places as usize)
}

/// The one formatter of a censored figure's bound (a timeout, an overflow
/// beyond a histogram): `>` and the bound *rounded down*, in every output,
/// so `>X` never claims a latency the probe did not wait for (a 1 234 567
/// ns timeout is `>1234.56`, never `>1234.57`). Each method is one of the
/// outputs' number styles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Above(pub u64);

impl Above {
    /// µs with `places` fixed decimals: tables (`>1234.56`).
    pub fn us(self, places: u32) -> String {
        format!(">{}", us_floor(self.0, places))
    }

    /// µs with at most `places` decimals, trailing zeros dropped (`>1234.567`).
    pub fn us_trimmed(self, places: u32) -> String {
        format!(">{}", decimal_floor(self.0, 1000, places))
    }

    /// The largest readable unit, as [`format_ns`] (`>1.234ms`).
    pub fn readable(self) -> String {
        format!(">{}", format_ns_floor(self.0))
    }
}

/// [`format_ns`], rounded down.
pub fn format_ns_floor(ns: u64) -> String {
    readable(ns, decimal_floor)
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

    /// A bound prints rounded down in every style, where the plain
    /// formatters round to nearest (issue 42: `>1234.57` for a 1 234 567 ns
    /// timeout claimed more than the probe waited).
    #[test]
    fn a_censored_bound_rounds_down_in_every_style() {
        let b = Above(1_234_567);
        assert_eq!(b.us(2), ">1234.56");
        assert_eq!(b.us(0), ">1234");
        assert_eq!(b.us_trimmed(3), ">1234.567");
        assert_eq!(b.us_trimmed(1), ">1234.5");
        assert_eq!(b.readable(), ">1.234ms");
        assert_eq!(format_ns(1_234_567), "1.235ms", "the plain figure still rounds to nearest");
        assert_eq!(Above(8_000_000).us(2), ">8000.00");
        assert_eq!(Above(8_000_000).readable(), ">8ms");
        assert_eq!(Above(999).readable(), ">999ns");
        assert_eq!(Above(1_999_999_999).readable(), ">1.999s");
    }

    #[test]
    fn zero_is_refused_where_it_cannot_work() {
        assert!(parse_positive_duration("0").unwrap_err().contains("zero"));
        assert!(parse_positive_duration("0s").unwrap_err().contains("zero"));
        assert_eq!(parse_positive_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
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
