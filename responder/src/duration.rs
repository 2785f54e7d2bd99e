//! Human-readable durations for command-line options (`500us`, `1ms`, `2s`).

use std::time::Duration;

/// Units accepted after the number. Matched whole and case-sensitively: `MS`
/// or `m` would be guesses (mega? minutes?), and a guessed period is a wrong run.
const UNITS: &[(&str, u128)] =
    &[("ns", 1), ("us", 1_000), ("µs", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000)];

/// Parses `<number><unit>` where the number may have a fraction (`1.5ms`) and
/// the unit is one of `ns`, `us` (or `µs`), `ms`, `s`.
///
/// A bare number is refused: a period of "10" is as likely to mean 10 ms as
/// 10 µs, and guessing wrong silently gives a measurement at the wrong rate.
/// Zero is refused too, because every caller uses the value as a period.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("'{text}' has no unit (write e.g. 500us, 1ms, 2s or 250ns)"))?;
    let (number, unit) = text.split_at(split);
    let scale = UNITS
        .iter()
        .find(|(name, _)| *name == unit.trim())
        .map(|(_, scale)| *scale)
        .ok_or_else(|| format!("'{unit}' is not a unit (use ns, us, ms or s)"))?;
    let nanos = scaled_nanos(number, scale)
        .ok_or_else(|| format!("'{number}' is not a number (write e.g. 500us or 1.5ms)"))?;
    if nanos == 0 {
        return Err(format!("'{text}' is zero or below 1 ns; the period must be positive"));
    }
    let secs = u64::try_from(nanos / 1_000_000_000).map_err(|_| format!("'{text}' is too long"))?;
    // The remainder is below 1e9, so it always fits in u32.
    let sub = (nanos % 1_000_000_000) as u32;
    Ok(Duration::new(secs, sub))
}

/// Integer arithmetic rather than f64, so that `0.1ms` is exactly 100 µs.
fn scaled_nanos(number: &str, scale: u128) -> Option<u128> {
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    if frac_part.contains('.') {
        return None;
    }
    let int: u128 = if int_part.is_empty() { 0 } else { int_part.parse().ok()? };
    let mut nanos = int.checked_mul(scale)?;
    let mut place = scale;
    for digit in frac_part.chars() {
        place /= 10;
        let d = u128::from(digit.to_digit(10)?);
        nanos = nanos.checked_add(d * place)?;
    }
    Some(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_each_unit() {
        assert_eq!(parse_duration("250ns"), Ok(Duration::from_nanos(250)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("500µs"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("1ms"), Ok(Duration::from_millis(1)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
    }

    #[test]
    fn fractions_are_exact() {
        assert_eq!(parse_duration("1.5ms"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_duration("0.1ms"), Ok(Duration::from_micros(100)));
        assert_eq!(parse_duration(".25s"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.000000001s"), Ok(Duration::new(1, 1)));
    }

    #[test]
    fn tolerates_surrounding_and_inner_space() {
        assert_eq!(parse_duration(" 10 ms "), Ok(Duration::from_millis(10)));
    }

    #[test]
    fn refuses_bare_numbers_and_unknown_units() {
        assert!(parse_duration("10").unwrap_err().contains("no unit"));
        assert!(parse_duration("10m").unwrap_err().contains("not a unit"));
        assert!(parse_duration("10MS").unwrap_err().contains("not a unit"));
        assert!(parse_duration("ms").unwrap_err().contains("not a number"));
        assert!(parse_duration("1.2.3ms").unwrap_err().contains("not a number"));
        assert!(parse_duration("-1ms").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn refuses_zero_and_sub_nanosecond() {
        assert!(parse_duration("0ms").unwrap_err().contains("positive"));
        assert!(parse_duration("0.1ns").unwrap_err().contains("positive"));
    }

    #[test]
    fn refuses_overflow_without_panicking() {
        assert!(parse_duration("99999999999999999999999999999999999999999s").is_err());
        assert!(parse_duration("99999999999999999999999s").is_err());
    }
}
