//! The session's unit tests.
use super::*;

fn req(mode: ModeArg, byte: Option<u8>) -> Request {
    Request {
        mode,
        interval_ns: 1_000_000,
        dither_ns: 0,
        timeout_ns: None,
        guard_ns: None,
        count: Some(10),
        duration_ns: None,
        seed: 1,
        byte,
        edge: EdgeArg::Rising,
        line: (mode == ModeArg::Loopback).then_some(LineArg::Uart),
        calibration: None,
        trigger_ns: None,
    }
}

const UART: Capabilities = Capabilities::UART_ECHO;
const GPIO: Capabilities = Capabilities(Capabilities::GPIO_ECHO.0 | Capabilities::LOOPBACK.0);

fn usage(r: Result<impl std::fmt::Debug, Error>) -> String {
    match r {
        Err(Error::Config(m)) => m,
        other => panic!("expected a usage error, got {other:?}"),
    }
}

/// Issue 17, finding 4: a periodic line is named, never guessed. A
/// board that captures both kinds needs `--line`; one with only its
/// UART (QEMU, the virtual probe) takes that; a line the board lacks is
/// refused naming the other.
#[test]
fn periodic_names_its_line() {
    let both = Capabilities(GPIO.0 | UART.0 | Capabilities::PERIODIC.0);
    let p = req(ModeArg::Periodic, None);
    p.validate().unwrap();
    let m = usage(p.config(100_000_000, both));
    assert!(m.contains("--line gpio") && m.contains("--line uart") && m.contains("PA1"), "{m}");
    let uart_only = Capabilities(UART.0 | Capabilities::PERIODIC.0);
    assert_eq!(p.config(1_000_000, uart_only).unwrap().stimulus, Stimulus::None(ResponseLine::Uart));
    let g = Request { line: Some(LineArg::Gpio), ..req(ModeArg::Periodic, None) };
    g.validate().unwrap();
    assert_eq!(g.config(100_000_000, both).unwrap().stimulus, Stimulus::None(ResponseLine::Gpio));
    let m = usage(g.config(1_000_000, uart_only));
    assert!(m.contains("--line uart"), "{m}");
    let u = Request { line: Some(LineArg::Uart), ..req(ModeArg::Periodic, None) };
    assert_eq!(u.config(100_000_000, both).unwrap().stimulus, Stimulus::None(ResponseLine::Uart));
    // Echo modes still have their own line.
    let m = usage(Request { line: Some(LineArg::Gpio), ..req(ModeArg::GpioEcho, None) }.validate());
    assert!(m.contains("has its own line"), "{m}");
}

/// Issue 24: `--trigger-above` goes to the probe in ticks, below the
/// timeout; a probe without a trigger output, a threshold at or past the
/// timeout and a periodic run are refused naming the flags.
#[test]
fn trigger_above_is_checked_against_the_timeout_and_the_probe() {
    let trig = Capabilities(UART.0 | Capabilities::TRIGGER.0);
    let r = Request { trigger_ns: Some(200_000), ..req(ModeArg::UartEcho, None) };
    r.validate().unwrap();
    assert_eq!(r.config(100_000_000, trig).unwrap().trigger_ticks, 20_000);
    assert_eq!(req(ModeArg::UartEcho, None).config(100_000_000, trig).unwrap().trigger_ticks, 0);
    let m = usage(r.config(100_000_000, UART));
    assert!(m.contains("--trigger-above") && m.contains("no trigger output"), "{m}");
    // One in flight: the default timeout is the interval less the guard (900us).
    let fixed = Request { trigger_ns: Some(900_000), byte: Some(0x55), ..r.clone() };
    let m = usage(fixed.validate());
    assert!(m.contains("--trigger-above 900us") && m.contains("--timeout 900us (the default)"), "{m}");
    let given = Request { timeout_ns: Some(150_000), ..r.clone() };
    let m = usage(given.validate());
    assert!(m.contains("--trigger-above 200us must be shorter than --timeout 150us:"), "{m}");
    let periodic = Request { trigger_ns: Some(200_000), ..req(ModeArg::Periodic, None) };
    assert!(usage(periodic.validate()).contains("echo modes"));
    // Shorter than a tick of the probe's timer.
    let tiny = Request { trigger_ns: Some(4), ..r };
    assert!(usage(tiny.config(100_000_000, trig)).contains("--trigger-above 4ns"));
}

/// Issue 17, finding 7: a byte stimulus faster than the target line
/// carries it is refused before Configure, naming the baud and the
/// minimum.
#[test]
fn a_byte_interval_shorter_than_the_line_is_refused_naming_baud_and_minimum() {
    let fixed = Request { interval_ns: 50_000, byte: Some(0x55), ..req(ModeArg::UartEcho, None) };
    let c = fixed.config(100_000_000, UART).unwrap();
    let m = usage(check_byte_rate(&c, 100_000_000, 115_200));
    // 86.81 us a byte, plus the default guard of 5 us.
    assert!(m.contains("115200 Bd") && m.contains("86.81us") && m.contains("91.81us"), "{m}");
    assert!(m.contains("--interval 50us"), "{m}");
    let ok = Request { interval_ns: 100_000, ..fixed.clone() }.config(100_000_000, UART).unwrap();
    check_byte_rate(&ok, 100_000_000, 115_200).unwrap();
    // Identity: one byte time per interval, the guard is per identity.
    let id = Request { interval_ns: 80_000, byte: None, ..fixed.clone() }.config(100_000_000, UART).unwrap();
    let m = usage(check_byte_rate(&id, 100_000_000, 115_200));
    assert!(m.contains("at least 86.81us"), "{m}");
    let id = Request { interval_ns: 90_000, byte: None, ..fixed.clone() }.config(100_000_000, UART).unwrap();
    check_byte_rate(&id, 100_000_000, 115_200).unwrap();
    // No bit timing (QEMU's UART, the virtual probe): no limit.
    check_byte_rate(&c, 100_000_000, 0).unwrap();
}

#[test]
fn default_timeouts_follow_the_window() {
    // Identity: 8 intervals, at most 9 intervals less dither and guard.
    let r = req(ModeArg::UartEcho, None);
    assert_eq!(r.assumed_stimulus(), Stimulus::Identified);
    assert_eq!(r.timeout_ns(), 8_000_000);
    let r = Request { dither_ns: 1_000_000, guard_ns: Some(200_000), ..req(ModeArg::UartEcho, None) };
    assert_eq!(r.timeout_ns(), 7_800_000);
    r.validate().unwrap();
    // One in flight: the interval less dither and guard.
    let r = req(ModeArg::UartEcho, Some(0x55));
    assert_eq!(r.assumed_stimulus(), Stimulus::Byte(0x55));
    assert_eq!(r.timeout_ns(), 900_000);
    assert_eq!(req(ModeArg::GpioEcho, None).timeout_ns(), 900_000);
    // With neither guard nor dither it stays below the interval.
    let r = Request { guard_ns: Some(0), ..req(ModeArg::GpioEcho, None) };
    assert_eq!(r.timeout_ns(), 999_999);
    r.validate().unwrap();
    assert_eq!(req(ModeArg::Periodic, None).timeout_ns(), 0);
    // In ticks, the same rule.
    let c = req(ModeArg::UartEcho, None).config(100_000_000, UART).unwrap();
    assert_eq!((c.timeout_ticks, c.stimulus), (800_000, Stimulus::Identified));
    let c = req(ModeArg::UartEcho, Some(7)).config(100_000_000, UART).unwrap();
    assert_eq!((c.timeout_ticks, c.stimulus), (90_000, Stimulus::Byte(7)));
    let c = Request { guard_ns: Some(0), ..req(ModeArg::GpioEcho, None) }.config(3, GPIO);
    assert!(c.is_err(), "an interval of 0 ticks at 3 Hz: {c:?}");
}

#[test]
fn a_default_timeout_is_clamped_to_the_probe_a_given_one_is_refused() {
    // 1 s at 1 GHz: 8 intervals do not fit u32 ticks; the default is clamped.
    let r = Request { interval_ns: 1_000_000_000, ..req(ModeArg::UartEcho, None) };
    r.validate().unwrap();
    let c = r.config(1_000_000_000, UART).unwrap();
    assert_eq!(c.timeout_ticks, u32::MAX);
    assert_eq!(c.interval_ticks, 1_000_000_000);
    let given = Request { timeout_ns: Some(5_000_000_000), ..r };
    given.validate().unwrap();
    let m = usage(given.config(1_000_000_000, UART));
    assert!(m.contains("--timeout 5s is too long"), "{m}");
}

#[test]
fn bad_timing_names_the_flags_for_the_window() {
    let r = Request { timeout_ns: Some(2_000_000), ..req(ModeArg::UartEcho, None) };
    r.validate().unwrap(); // identity: 2 ms fits 9 intervals
    let m = usage(Request { byte: Some(0x55), ..r.clone() }.validate());
    assert!(m.contains("--timeout 2ms must be shorter than --interval 1ms"), "{m}");
    let m = usage(Request { timeout_ns: Some(9_000_000), ..r.clone() }.validate());
    assert!(m.contains("--timeout 9ms must be shorter than 9 × --interval (9ms)"), "{m}");
    let m = usage(Request { timeout_ns: Some(8_950_000), ..r.clone() }.validate());
    assert!(m.contains("--dither 0ns + --timeout 8.95ms + --guard 100us must fit in 9 × --interval"), "{m}");
    let m = usage(Request { dither_ns: 900_000, ..req(ModeArg::UartEcho, Some(1)) }.validate());
    assert!(m.contains("--dither 900us and --guard 100us leave no time"), "{m}");
    let m = usage(Request { timeout_ns: Some(0), ..r }.validate());
    assert!(m.contains("--timeout must be longer than 0"), "{m}");
}

#[test]
fn byte_fits_only_the_uart_stimulus() {
    let m = usage(req(ModeArg::GpioEcho, Some(0x55)).validate());
    assert!(m.starts_with("--byte 0x55") && m.contains("gpio-echo"), "{m}");
    let m = usage(req(ModeArg::Periodic, Some(0x55)).validate());
    assert!(m.starts_with("--byte 0x55") && m.contains("periodic"), "{m}");
    // A loopback loops the line --line names, and needs it.
    let m = usage(Request { line: None, ..req(ModeArg::Loopback, None) }.validate());
    assert!(m.contains("needs --line gpio (PA0 wired to PA1) or --line uart"), "{m}");
    let lb = req(ModeArg::Loopback, None);
    lb.validate().unwrap();
    assert_eq!(lb.config(1_000_000, UART).unwrap().stimulus, Stimulus::Identified);
    let g = Request { line: Some(LineArg::Gpio), ..req(ModeArg::Loopback, None) };
    g.validate().unwrap();
    let c = g.config(1_000_000, Capabilities(GPIO.0 | UART.0)).unwrap();
    assert_eq!(
        (c.stimulus, c.timeout_ticks),
        (Stimulus::Edge(Edge::Rising), 900),
        "--line gpio on a UART board"
    );
    let m = usage(Request { byte: Some(0x55), ..g.clone() }.validate());
    assert!(m.contains("--line gpio loops an edge"), "{m}");
    let m = usage(Request { line: Some(LineArg::Gpio), ..req(ModeArg::UartEcho, None) }.validate());
    assert!(m.contains("--line chooses the line of a loopback"), "{m}");
    let m = usage(req(ModeArg::Loopback, Some(0x55)).config(1_000_000, GPIO));
    assert!(m.starts_with("--line uart: this probe has no uart line"), "{m}");
    let m = usage(g.config(1_000_000, UART));
    assert!(m.starts_with("--line gpio: this probe has no gpio line"), "{m}");
    // Dither that fits identity's nine intervals but not a GPIO loopback's one.
    let lb = Request { dither_ns: 950_000, ..req(ModeArg::Loopback, None) };
    lb.validate().unwrap();
    lb.config(1_000_000, UART).unwrap();
    let m = usage(Request { line: Some(LineArg::Gpio), ..lb }.validate());
    assert!(m.contains("--dither 950us and --guard 100us leave no time"), "{m}");
}
