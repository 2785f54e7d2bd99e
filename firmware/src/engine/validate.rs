//! Validation of a host's `Configure`: every rule a configuration must meet
//! before the engine runs it, each mapped to one `ErrorCode`.
//!
//! Rules, checked in this order (the first failure is reported):
//!
//! | rule | code |
//! |---|---|
//! | the board announces the mode's capability bit; `loopback` also needs the bit of the line it loops (`GPIO_ECHO` for an edge, `UART_ECHO` for a byte) | `UnsupportedMode` |
//! | periodic: the board can capture the line it names (`None(Gpio)` needs `GPIO_ECHO`, `None(Uart)` needs `UART_ECHO`) | `UnsupportedMode` |
//! | stimulus fits the mode: `Edge` for gpio-echo; `Byte` or `Identified` for uart-echo; any of the three for loopback; `None` for periodic | `BadStimulus` |
//! | `count` is not `Some(0)` | `ZeroCount` |
//! | echo modes: `interval_ticks > 0` | `ZeroInterval` |
//! | echo modes: `timeout_ticks > 0`; one in flight (`Edge`, `Byte`): `timeout_ticks < interval_ticks`; `Identified`: `timeout_ticks < 9 · interval_ticks` | `BadTimeout` |
//! | echo modes: `dither_ticks + timeout_ticks + guard_ticks <= w · interval_ticks`, `w` = 1, or 9 for `Identified` | `BadDither` |
//! | a byte stimulus on a line with bit timing: `interval_ticks >=` [`min_interval_ticks`] (a byte time, plus `guard_ticks` for a fixed byte) | `ShortInterval` |
//! | `trigger_ticks > 0`: the board announces `TRIGGER` | `NoTrigger` |
//! | `trigger_ticks > 0`: an echo mode, and `trigger_ticks < timeout_ticks` ([`trigger_fault`]) | `BadTrigger` |
//!
//! The last rule is what makes the guard free when the target keeps up: a
//! stimulus is at most `dither` late against its slot, its sample ends at
//! most `timeout` after it, and the next stimulus on the same slot (the next
//! one with one in flight, the one `w` later with identity) is planned `w`
//! intervals after it, so it is never pushed unless the probe fell behind or
//! (identity) the target is answering later than the timeout.
//!
//! In `periodic` mode the probe sends nothing, so `interval_ticks`,
//! `dither_ticks`, `timeout_ticks` and `guard_ticks` are unused and may be
//! anything (0 included).

use latprobe_protocol::{
    min_interval_ticks, timing_fault, trigger_fault, Capabilities, Config, ErrorCode, Mode, ResponseLine,
    Stimulus, TimingFault, TriggerFault,
};

/// A refusal: the code and a short detail (at most `MAX_ERROR_DETAIL` bytes).
pub type Refusal = (ErrorCode, &'static str);

/// Check `config` against the rules above for a board with `caps` whose
/// target line takes `byte_ticks` per byte (0: no bit timing).
pub fn validate(config: &Config, caps: Capabilities, byte_ticks: u64) -> Result<(), Refusal> {
    if !caps.contains(config.mode.capability()) {
        return Err((ErrorCode::UnsupportedMode, "this board lacks the mode"));
    }
    let stimulus_ok = match (config.mode, config.stimulus) {
        (Mode::GpioEcho, Stimulus::Edge(_)) => true,
        (Mode::UartEcho, Stimulus::Byte(_) | Stimulus::Identified) => true,
        (Mode::Periodic, Stimulus::None(line)) => {
            let (needs, why) = match line {
                ResponseLine::Gpio => (Capabilities::GPIO_ECHO, "periodic gpio needs gpio capture"),
                ResponseLine::Uart => (Capabilities::UART_ECHO, "periodic uart needs a target uart"),
            };
            if !caps.contains(needs) {
                return Err((ErrorCode::UnsupportedMode, why));
            }
            true
        }
        (Mode::Loopback, Stimulus::Edge(_)) => {
            if !caps.contains(Capabilities::GPIO_ECHO) {
                return Err((ErrorCode::UnsupportedMode, "edge loopback needs gpio-echo"));
            }
            true
        }
        (Mode::Loopback, Stimulus::Byte(_) | Stimulus::Identified) => {
            if !caps.contains(Capabilities::UART_ECHO) {
                return Err((ErrorCode::UnsupportedMode, "byte loopback needs uart-echo"));
            }
            true
        }
        _ => false,
    };
    if !stimulus_ok {
        return Err((
            ErrorCode::BadStimulus,
            match config.mode {
                Mode::GpioEcho => "gpio-echo needs an Edge stimulus",
                Mode::UartEcho => "uart-echo needs a Byte or Identified",
                Mode::Periodic => "periodic needs stimulus None",
                Mode::Loopback => "loopback needs an Edge or a byte",
            },
        ));
    }
    if config.count == Some(0) {
        return Err((ErrorCode::ZeroCount, "count must be None or at least 1"));
    }
    if config.trigger_ticks > 0 && !caps.contains(Capabilities::TRIGGER) {
        return Err((ErrorCode::NoTrigger, "this board has no trigger output"));
    }
    if trigger_fault(config.mode, config.trigger_ticks.into(), config.timeout_ticks.into())
        == Some(TriggerFault::NotEcho)
    {
        return Err((ErrorCode::BadTrigger, "a trigger needs an echo mode"));
    }
    if !config.mode.is_echo() {
        return Ok(());
    }
    if config.interval_ticks == 0 {
        return Err((ErrorCode::ZeroInterval, "interval_ticks must not be 0"));
    }
    let w = config.stimulus.window() as u64;
    let (iv, dither, timeout, guard) = (
        u64::from(config.interval_ticks),
        u64::from(config.dither_ticks),
        u64::from(config.timeout_ticks),
        u64::from(config.guard_ticks),
    );
    match timing_fault(w, iv, dither, timeout, guard) {
        Some(TimingFault::NoTimeout | TimingFault::TimeoutTooLong) => {
            return Err((
                ErrorCode::BadTimeout,
                if w == 1 {
                    "need 0 < timeout_ticks < interval_ticks"
                } else {
                    "need 0 < timeout < 9 intervals"
                },
            ));
        }
        Some(TimingFault::Crowded) => {
            return Err((
                ErrorCode::BadDither,
                if w == 1 {
                    "need dither + timeout + guard <= interval"
                } else {
                    "need dither + timeout + guard <= 9 intervals"
                },
            ));
        }
        None => {}
    }
    if trigger_fault(config.mode, config.trigger_ticks.into(), config.timeout_ticks.into()).is_some() {
        return Err((ErrorCode::BadTrigger, "need trigger_ticks < timeout_ticks"));
    }
    if u64::from(config.interval_ticks) < min_interval_ticks(config.stimulus, byte_ticks, config.guard_ticks)
    {
        return Err((
            ErrorCode::ShortInterval,
            if config.stimulus.has_identity() {
                "need interval >= one byte time"
            } else {
                "need interval >= byte time + guard"
            },
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use latprobe_protocol::{byte_ticks, Edge, MAX_ERROR_DETAIL};

    const ALL: Capabilities = Capabilities(
        Capabilities::GPIO_ECHO.0
            | Capabilities::UART_ECHO.0
            | Capabilities::PERIODIC.0
            | Capabilities::LOOPBACK.0,
    );

    fn good() -> Config {
        Config {
            mode: Mode::GpioEcho,
            interval_ticks: 1000,
            dither_ticks: 100,
            timeout_ticks: 500,
            guard_ticks: 400,
            count: Some(10),
            seed: 1,
            stimulus: Stimulus::Edge(Edge::Rising),
            trigger_ticks: 0,
        }
    }

    fn code(c: Config, caps: Capabilities) -> Option<ErrorCode> {
        code_at(c, caps, 0)
    }

    fn code_at(c: Config, caps: Capabilities, byte_ticks: u64) -> Option<ErrorCode> {
        validate(&c, caps, byte_ticks).err().map(|(code, detail)| {
            assert!(detail.len() <= MAX_ERROR_DETAIL, "detail too long: {detail}");
            code
        })
    }

    #[test]
    fn a_trigger_needs_the_capability_an_echo_mode_and_room_below_the_timeout() {
        use ErrorCode::*;
        let trig = ALL | Capabilities::TRIGGER;
        let g = Config { trigger_ticks: 499, ..good() };
        assert_eq!(code(g, trig), None);
        assert_eq!(code(g, ALL), Some(NoTrigger));
        assert_eq!(code(Config { trigger_ticks: 500, ..g }, trig), Some(BadTrigger));
        assert_eq!(code(Config { trigger_ticks: u32::MAX, ..g }, trig), Some(BadTrigger));
        let periodic = Config { mode: Mode::Periodic, stimulus: Stimulus::None(ResponseLine::Gpio), ..g };
        assert_eq!(code(periodic, trig), Some(BadTrigger));
        // Off is off, on any board.
        assert_eq!(code(Config { trigger_ticks: 0, ..g }, ALL), None);
    }

    #[test]
    fn accepts_exactly_filled_interval() {
        assert_eq!(code(good(), ALL), None);
        assert_eq!(code(Config { count: None, ..good() }, ALL), None);
    }

    #[test]
    fn every_rule_has_its_code() {
        use ErrorCode::*;
        let g = good();
        assert_eq!(code(g, Capabilities::UART_ECHO), Some(UnsupportedMode));
        assert_eq!(code(Config { stimulus: Stimulus::Byte(7), ..g }, ALL), Some(BadStimulus));
        assert_eq!(
            code(Config { stimulus: Stimulus::None(ResponseLine::Gpio), ..g }, ALL),
            Some(BadStimulus)
        );
        let uart = Config { mode: Mode::UartEcho, stimulus: Stimulus::Byte(0x55), ..g };
        assert_eq!(code(uart, ALL), None);
        assert_eq!(code(Config { stimulus: Stimulus::Edge(Edge::Toggle), ..uart }, ALL), Some(BadStimulus));
        assert_eq!(code(Config { count: Some(0), ..g }, ALL), Some(ZeroCount));
        assert_eq!(code(Config { interval_ticks: 0, ..g }, ALL), Some(ZeroInterval));
        assert_eq!(code(Config { timeout_ticks: 0, ..g }, ALL), Some(BadTimeout));
        assert_eq!(code(Config { timeout_ticks: 1000, ..g }, ALL), Some(BadTimeout));
        assert_eq!(code(Config { guard_ticks: 401, ..g }, ALL), Some(BadDither));
        assert_eq!(code(Config { dither_ticks: 101, ..g }, ALL), Some(BadDither));
        // No overflow when the three sum past u32.
        let huge =
            Config { interval_ticks: u32::MAX, timeout_ticks: u32::MAX - 1, dither_ticks: u32::MAX, ..g };
        assert_eq!(code(huge, ALL), Some(BadDither));
    }

    #[test]
    fn identity_spans_nine_intervals() {
        use ErrorCode::*;
        let id = Config {
            mode: Mode::UartEcho,
            stimulus: Stimulus::Identified,
            interval_ticks: 1000,
            dither_ticks: 0,
            timeout_ticks: 8000,
            guard_ticks: 1000,
            ..good()
        };
        assert_eq!(code(id, ALL), None);
        assert_eq!(code(Config { guard_ticks: 1001, ..id }, ALL), Some(BadDither));
        assert_eq!(code(Config { timeout_ticks: 9000, guard_ticks: 0, ..id }, ALL), Some(BadTimeout));
        assert_eq!(code(Config { timeout_ticks: 0, ..id }, ALL), Some(BadTimeout));
        assert_eq!(code(Config { mode: Mode::Loopback, ..id }, ALL), None);
        assert_eq!(code(Config { mode: Mode::GpioEcho, ..id }, ALL), Some(BadStimulus));
        // A fixed byte keeps one in flight: the timeout must fit one interval.
        assert_eq!(code(Config { stimulus: Stimulus::Byte(0x55), ..id }, ALL), Some(BadTimeout));
    }

    #[test]
    fn loopback_needs_the_line_it_loops() {
        let lb = Config { mode: Mode::Loopback, ..good() };
        assert_eq!(code(lb, ALL), None);
        assert_eq!(code(Config { stimulus: Stimulus::Byte(1), ..lb }, ALL), None);
        let no_gpio = Capabilities::LOOPBACK | Capabilities::UART_ECHO;
        assert_eq!(code(lb, no_gpio), Some(ErrorCode::UnsupportedMode));
        assert_eq!(code(Config { stimulus: Stimulus::Byte(1), ..lb }, no_gpio), None);
        assert_eq!(
            code(Config { stimulus: Stimulus::None(ResponseLine::Gpio), ..lb }, ALL),
            Some(ErrorCode::BadStimulus)
        );
    }

    #[test]
    fn periodic_ignores_the_echo_timing_fields() {
        let p = Config {
            mode: Mode::Periodic,
            interval_ticks: 0,
            dither_ticks: 9,
            timeout_ticks: 0,
            guard_ticks: 9,
            stimulus: Stimulus::None(ResponseLine::Gpio),
            ..good()
        };
        assert_eq!(code(p, ALL), None);
        assert_eq!(code(p, Capabilities::GPIO_ECHO), Some(ErrorCode::UnsupportedMode));
        // The line it names must be one the board captures (QEMU: UART only).
        let qemu = Capabilities::UART_ECHO | Capabilities::PERIODIC;
        assert_eq!(code(p, qemu), Some(ErrorCode::UnsupportedMode));
        assert_eq!(code(Config { stimulus: Stimulus::None(ResponseLine::Uart), ..p }, qemu), None);
        assert_eq!(code(Config { stimulus: Stimulus::Byte(1), ..p }, ALL), Some(ErrorCode::BadStimulus));
        assert_eq!(code(Config { count: Some(0), ..p }, ALL), Some(ErrorCode::ZeroCount));
    }

    #[test]
    fn a_byte_stimulus_needs_a_byte_time_per_interval() {
        use ErrorCode::*;
        // 115200 Bd on a 100 MHz timer: 8681 ticks a byte (86.8 us).
        let byte = byte_ticks(100_000_000, 115_200);
        assert_eq!(byte, 8681);
        let fixed = Config {
            mode: Mode::UartEcho,
            stimulus: Stimulus::Byte(0x55),
            interval_ticks: 10_000,
            dither_ticks: 0,
            timeout_ticks: 8_000,
            guard_ticks: 1_000,
            ..good()
        };
        // 8681 + 1000 <= 10000: accepted; one tick less interval than that: refused.
        assert_eq!(code_at(fixed, ALL, byte), None);
        assert_eq!(
            code_at(Config { interval_ticks: 9_680, timeout_ticks: 7_000, ..fixed }, ALL, byte),
            Some(ShortInterval)
        );
        assert_eq!(code_at(Config { interval_ticks: 9_681, timeout_ticks: 7_000, ..fixed }, ALL, byte), None);
        // The fault of the review: a 50 us interval at 115200 Bd.
        let short = Config { interval_ticks: 5_000, timeout_ticks: 4_000, guard_ticks: 500, ..fixed };
        assert_eq!(code_at(short, ALL, byte), Some(ShortInterval));
        assert_eq!(code_at(Config { mode: Mode::Loopback, ..short }, ALL, byte), Some(ShortInterval));
        // Identity: the guard is per identity, one byte time per interval.
        let id =
            Config { stimulus: Stimulus::Identified, interval_ticks: 8_681, timeout_ticks: 60_000, ..fixed };
        assert_eq!(code_at(id, ALL, byte), None);
        assert_eq!(code_at(Config { interval_ticks: 8_680, ..id }, ALL, byte), Some(ShortInterval));
        // No bit timing (QEMU): no limit; an edge never has one.
        assert_eq!(code_at(short, ALL, 0), None);
        let edge = Config { mode: Mode::GpioEcho, stimulus: Stimulus::Edge(Edge::Rising), ..short };
        assert_eq!(code_at(edge, ALL, byte), None);
    }
}
