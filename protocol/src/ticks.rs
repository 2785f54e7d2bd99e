//! Ticks of the probe's timer and nanoseconds, converted both ways in exact
//! integer arithmetic.

/// Convert probe ticks to nanoseconds, rounded to nearest, in exact integer
/// arithmetic. `timer_hz` of zero yields zero rather than a panic.
pub const fn ticks_to_ns(ticks: u64, timer_hz: u32) -> u64 {
    if timer_hz == 0 {
        return 0;
    }
    let hz = timer_hz as u128;
    let ns = (ticks as u128 * 1_000_000_000 + hz / 2) / hz;
    if ns > u64::MAX as u128 {
        u64::MAX
    } else {
        ns as u64
    }
}

/// Convert nanoseconds to probe ticks, rounded to nearest, in exact integer
/// arithmetic.
pub const fn ns_to_ticks(ns: u64, timer_hz: u32) -> u64 {
    let t = (ns as u128 * timer_hz as u128 + 500_000_000) / 1_000_000_000;
    if t > u64::MAX as u128 {
        u64::MAX
    } else {
        t as u64
    }
}
