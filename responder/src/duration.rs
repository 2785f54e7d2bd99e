//! Durations for command-line options (`500us`, `1ms`, `2s`, `1min`): the
//! very parser `latprobe` uses (its file is included here), so a duration
//! reads the same on both sides of the wire.

use std::time::Duration;

#[path = "../../host/src/duration.rs"]
mod shared;

/// Parses `<number><unit>` (`ns`, `us`/`µs`, `ms`, `s`, `min`, `h`; the
/// number may have a fraction, `1.5ms`) with latprobe's own parser.
///
/// A bare number is refused: a period of "10" is as likely to mean 10 ms as
/// 10 µs, and guessing wrong silently gives a measurement at the wrong rate.
/// Zero is refused too, because every caller uses the value as a period.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    match shared::parse_duration_ns(text)? {
        0 => Err(format!("'{}' is zero; the period must be positive", text.trim())),
        ns => Ok(Duration::from_nanos(ns)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_each_unit_as_latprobe_does() {
        assert_eq!(parse_duration("250ns"), Ok(Duration::from_nanos(250)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("500µs"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("1ms"), Ok(Duration::from_millis(1)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1min"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1.5ms"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_duration(" 10 ms "), Ok(Duration::from_millis(10)));
    }

    #[test]
    fn refuses_bare_numbers_unknown_units_zero_and_negatives() {
        assert!(parse_duration("10").unwrap_err().contains("no unit"));
        assert!(parse_duration("10m").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("0").unwrap_err().contains("zero"));
        assert!(parse_duration("0ms").unwrap_err().contains("zero"));
        assert!(parse_duration("-1ms").unwrap_err().contains("negative"));
        assert!(parse_duration("0.1ns").unwrap_err().contains("finer than 1 ns"));
        assert!(parse_duration("99999999999999999999999s").is_err());
    }
}
