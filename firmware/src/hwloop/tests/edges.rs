//! The capture loop on the fake timer, continued: loopback skew, edge
//! polarity, the compare's order, late stimuli, the cross-check with the
//! Pico, the wrap, QEMU's board and the Nucleo review's findings.

use super::*;

// ----- defect 7: loopback skew -----

/// UART loopback: CH3 (PB10) latches one tick after CH2 (PA1) sees the
/// same edge. The old board fed the engine a response one tick before its
/// stimulus: `tick >= stim` failed, counted late, every sample timed out.
/// Now the answer is placed at its stimulus: latency 0.
#[test]
fn uart_loopback_with_a_tick_of_channel_skew_is_zero_not_late() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.uart_response_line();
    s.hw.wires = Wires { uart_loopback: true, tx_capture: true, gpio_loopback: false };
    s.hw.skew = [0, 1];
    let st = s.measure(echo(Mode::Loopback, Stimulus::Identified, 20), 100 * MS);
    assert_eq!((st.taken, st.timeouts), (20, 0), "{st:?}");
    assert!(quiet(&st.anomalies), "{:?}", st.anomalies);
    assert!(s.latencies().iter().all(|&l| l == Some(0)));
    assert_eq!(s.lp.stats().skew_clamped, 20);
}

// ----- defect 8: gpio-echo Rising/Falling -----

/// A target that answers a rising edge with a 20 µs pulse. The old board
/// captured both edges: the pulse's falling edge came as a second answer,
/// one late response per sample (and, with a slow pulse, the return edge
/// could answer the next stimulus). Now only rising edges are captured.
#[test]
fn gpio_echo_rising_captures_only_the_answer_polarity() {
    for edge in [Edge::Rising, Edge::Falling] {
        let mut s = Sim::nucleo(1_000_000);
        if edge == Edge::Falling {
            // The target's line idles high for a falling answer.
            s.hw.uart_response_line();
        }
        s.hw.target = Target::GpioEcho { edge, latency: 70 * US, pulse: Some(20 * US) };
        let st = s.measure(echo(Mode::GpioEcho, Stimulus::Edge(edge), 10), 100 * MS);
        assert_eq!((st.taken, st.timeouts), (10, 0), "{edge:?} {st:?}");
        assert!(quiet(&st.anomalies), "{edge:?} {:?}", st.anomalies);
        assert!(s.latencies().iter().all(|&l| l == Some((70 * US) as u32)), "{edge:?} {:?}", s.latencies());
    }
}

// ----- defect 9: compare order, toggle after the run, the input filter -----

/// After a Toggle run the old board left OC1M at "toggle on match": PA0
/// inverted again every counter period (42.9 s) for ever. Now the pin is
/// frozen at the match: nothing moves after the run.
#[test]
fn toggle_never_moves_the_pin_after_the_run() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.target = Target::GpioEcho { edge: Edge::Toggle, latency: 30 * US, pulse: None };
    let st = s.measure(echo(Mode::GpioEcho, Stimulus::Edge(Edge::Toggle), 3), 100 * MS);
    assert_eq!(st.taken, 3);
    let edges = s.hw.pin_edges.len();
    assert_eq!(edges, 3);
    let t = s.hw.t;
    s.host.stopped = None;
    s.run_until(t + 3 * (1 << 32));
    assert_eq!(s.hw.pin_edges.len(), edges, "{:?}", &s.hw.pin_edges[edges..]);
}

/// Slow register writes and a short arm lead: `at` comes while the
/// compare is being programmed. The old order wrote CCR1 first and OC1M
/// after: a match between the two set CC1IF without moving the pin, and
/// the board reported `at` for an edge that never happened. Now every
/// reported stimulus tick is when the pin moved (or, made in software,
/// the counter read right before it moved).
#[test]
fn every_reported_edge_tick_is_when_the_pin_moved() {
    for lead in 1u32..=80 {
        let board = nucleo_board().with_arm_lead(lead);
        let mut s = Sim::new(boards::nucleo_f411re::LOOP, board, 1_000_000);
        s.hw.access_ticks = 3;
        s.hw.wires.gpio_loopback = true;
        let st = s.measure(echo(Mode::Loopback, Stimulus::Edge(Edge::Toggle), 8), 100 * MS);
        assert_eq!((st.taken, st.timeouts), (8, 0), "lead {lead}: {st:?}");
        for (smp, &(moved, _)) in s.host.samples.iter().zip(&s.hw.pin_edges) {
            let d = moved - smp.stimulus_tick;
            assert!(d <= 2 * s.hw.access_ticks, "lead {lead}: reported {} moved {moved}", smp.stimulus_tick);
        }
        assert_eq!(s.hw.pin_edges.len(), 8);
    }
}

/// A stimulus planned late (the engine task ran after its tick, here every
/// time: the task is 1.5 intervals late) still makes an edge. The old loop
/// forced the active level at once, without the rest before it: the pin
/// was still high from the stimulus before, so no edge came, and every
/// late stimulus timed out (found in rp2040js with the Pico's firmware at
/// a 120 µs interval, where the engine falls behind its schedule).
#[test]
fn a_stimulus_planned_late_rests_the_line_and_still_makes_its_edge() {
    // An arm lead of one tick and slow register accesses: the plan's `now`
    // is past the tick the engine asked for.
    let board = nucleo_board().with_arm_lead(1);
    let mut s = Sim::new(boards::nucleo_f411re::LOOP, board, 1_000_000);
    s.hw.access_ticks = 5;
    s.hw.wires.gpio_loopback = true;
    // The task runs 200 µs after each pend, at a 100 µs interval: every
    // stimulus is behind its schedule, asked for one tick after the
    // engine's poll, and planned a few accesses later.
    s.task_delay = 200 * US;
    let mut config = echo(Mode::Loopback, Stimulus::Edge(Edge::Rising), 10);
    config.interval_ticks = (100 * US) as u32;
    config.timeout_ticks = (50 * US) as u32;
    let st = s.measure(config, 200 * MS);
    assert_eq!((st.taken, st.timeouts), (10, 0), "{st:?}");
    let rises = s.hw.pin_edges.iter().filter(|&&(_, high)| high).count();
    assert_eq!(rises, 10, "one rising edge per stimulus: {:?}", s.hw.pin_edges);
    // Every rise follows a fall: the line rested first.
    for pair in s.hw.pin_edges.windows(2) {
        assert_ne!(pair[0].1, pair[1].1, "{:?}", s.hw.pin_edges);
    }
    // And the rest before each late edge lasted the documented 10 µs at least.
    let rest = boards::nucleo_f411re::LOOP.late_rest_ticks();
    for pair in s.hw.pin_edges.windows(2).filter(|p| p[1].1) {
        assert!(pair[1].0 - pair[0].0 >= rest, "{:?}", s.hw.pin_edges);
    }
}

/// The cross-check file (`tests/fixtures/crosscheck-gpio.txt`) as ns,
/// `None` for `x`.
fn crosscheck_schedule() -> &'static [Option<u64>] {
    let text = include_str!("../../../../tests/fixtures/crosscheck-gpio.txt");
    let list: std::vec::Vec<Option<u64>> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| if l == "x" { None } else { Some(l.parse().expect("a latency in ns")) })
        .collect();
    std::boxed::Box::leak(list.into_boxed_slice())
}

/// The cross-check with the Pico in rp2040js: the same latency file, here
/// through the Nucleo's fake-timer loop (10 ns ticks), gives every latency
/// back exactly and a timeout for each `x`; `tests/tests/rp2040.rs` asserts
/// the same of the real Pico firmware in someone else's model of its chip.
#[test]
fn the_crosscheck_schedule_comes_back_exactly_through_the_fake_timer() {
    let schedule = crosscheck_schedule();
    assert!(schedule.len() >= 10 && schedule.contains(&None));
    let mut s = Sim::nucleo(1_000_000);
    s.hw.target = Target::GpioEcho { edge: Edge::Rising, latency: 0, pulse: Some(20 * US) };
    let ticks: std::vec::Vec<Option<u64>> = schedule.iter().map(|l| l.map(|ns| ns / 10)).collect();
    s.hw.script = Some(std::boxed::Box::leak(ticks.into_boxed_slice()));
    let n = 2 * schedule.len() as u64;
    let mut config = echo(Mode::GpioEcho, Stimulus::Edge(Edge::Rising), n);
    config.interval_ticks = (200 * US) as u32;
    config.timeout_ticks = (180 * US) as u32;
    let st = s.measure(config, 100 * MS);
    let x = (0..n as usize).filter(|i| schedule[i % schedule.len()].is_none()).count() as u64;
    assert_eq!((st.taken, st.timeouts), (n, x), "{st:?}");
    assert!(quiet(&st.anomalies), "{:?}", st.anomalies);
    let got = s.latencies();
    for (i, l) in got.iter().enumerate() {
        let want = schedule[i % schedule.len()].map(|ns| (ns / 10) as u32);
        assert_eq!(*l, want, "sample {i}");
    }
}

// The input filter's delay is tested through the Nucleo's register layer
// (`board::nucleo::tests::an_edge_at_a_known_tick_gives_exactly_its_latency`):
// there the model derives it from the ICxF the driver wrote (decoded by the
// PAC), not from the constant the loop subtracts, as this fake's filter is.

// ----- the wrap, a late interrupt -----

/// Stimuli and answers on both sides of a counter wrap, with every
/// interrupt 30 µs late (the overflow's too): exact.
#[test]
fn captures_around_a_wrap_with_late_interrupts_are_exact() {
    let wrap = 3u64 << 32;
    let mut s = Sim::nucleo(wrap - 6 * MS);
    s.irq_latency = 30 * US;
    s.hw.target = Target::GpioEcho { edge: Edge::Toggle, latency: 333, pulse: None };
    let st = s.measure(echo(Mode::GpioEcho, Stimulus::Edge(Edge::Toggle), 12), 100 * MS);
    assert_eq!((st.taken, st.timeouts), (12, 0), "{st:?}");
    assert!(s.latencies().iter().all(|&l| l == Some(333)), "{:?}", s.latencies());
    let ticks: Vec<u64> = s.host.samples.iter().map(|x| x.stimulus_tick).collect();
    assert!(ticks.first().unwrap() < &wrap && ticks.last().unwrap() > &wrap, "{ticks:?}");
    // And the reported ticks are the true ones: when the pin moved.
    let moved: Vec<u64> = s.hw.pin_edges.iter().map(|&(t, _)| t).collect();
    assert_eq!(ticks, moved);
}

/// A UART answer whose start bit latches just before the wrap and whose
/// byte is read after it.
#[test]
fn a_start_bit_before_the_wrap_and_its_byte_after_it() {
    let wrap = 1u64 << 32;
    let mut s = Sim::nucleo(wrap - 3 * MS);
    s.hw.uart_response_line();
    s.hw.wires.tx_capture = true;
    s.hw.target = Target::UartEcho { latency: 200 * US };
    let st = s.measure(echo(Mode::UartEcho, Stimulus::Identified, 8), 100 * MS);
    assert_eq!((st.taken, st.timeouts), (8, 0), "{st:?}");
    assert!(s.latencies().iter().all(|&l| l == Some((200 * US) as u32)));
}

// ----- QEMU: the same loop without capture hardware -----

/// QEMU's board: no capture channels, a UART without bit timing. The
/// byte's read is its tick; the stimulus tick is the read before the
/// write, reported at once.
#[test]
fn qemu_board_times_bytes_by_their_read() {
    let board =
        BoardInfo::new("fake-qemu", HZ, TimerBits::B32, Capabilities::UART_ECHO | Capabilities::PERIODIC);
    let mut s = Sim::new(boards::qemu::LOOP, board, 1_000_000);
    s.hw.uart_response_line();
    s.hw.target = Target::UartEcho { latency: 40 * US };
    let st = s.measure(echo(Mode::UartEcho, Stimulus::Identified, 20), 100 * MS);
    assert_eq!((st.taken, st.timeouts), (20, 0), "{st:?}");
    for l in s.latencies() {
        // Start to start is 40 µs; the read comes 9.5 bit times after the
        // echo's start and the soft tick a little before the write.
        let l = u64::from(l.unwrap());
        assert!((40 * US + 19 * BIT / 2..40 * US + 19 * BIT / 2 + 200).contains(&l), "{l}");
    }
    assert_eq!(s.e.totals().anomalies.soft_stimuli, 20);
}

// ----- the Nucleo review: what its first day on a bench would have shown -----

/// Finding 4. The old loop took the periodic line's kind from the first
/// edge with no byte behind it: a glitch before the first byte (the
/// target's TX out of reset, a break, noise) made it "GPIO" for the whole
/// run, and every data edge of every later byte became a periodic edge
/// (`--count 20` ended inside the third byte, its stamps bit edges). Now
/// the configuration names the line: over a noisy UART, with a glitch, a
/// framing error and a run that starts in the middle of a byte, every
/// stamp is a start bit, exactly.
#[test]
fn periodic_over_a_noisy_uart_stamps_only_start_bits() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.uart_response_line();
    let t = s.hw.t;
    // A byte already shifting in when the run starts (its start bit and
    // first data edge before the capture is opened).
    let cut = t - 2 * BIT;
    s.hw.byte_in(cut, 0x55);
    // A glitch 1 µs wide, no byte: the UART filters it.
    s.hw.edge_at(Pin::Response, t + MS / 2, false);
    s.hw.edge_at(Pin::Response, t + MS / 2 + US, true);
    // A framing error: the UART flags the line, no byte.
    s.hw.line_error_at(t + MS);
    let first = t + 2 * MS;
    let starts: Vec<u64> = (0..30).map(|k| first + k * MS + k * 41).collect();
    for &x in &starts {
        s.hw.byte_in(x, 0x55);
    }
    let mut c = echo(Mode::Periodic, Stimulus::None(ResponseLine::Uart), 20);
    c.timeout_ticks = 0;
    let st = s.measure(c, 100 * MS);
    assert_eq!(st.taken, 20, "{st:?}");
    let ticks: Vec<u64> = s.host.edges.iter().map(|e| e.tick).collect();
    assert_eq!(ticks, starts[..20], "every stamp a start bit");
    assert_eq!(st.anomalies.line_errors, 1, "{:?}", st.anomalies);
}

/// Finding 4, the other side: a periodic GPIO line is never taken for a
/// UART, whatever the UART receiver reads meanwhile (PA10 unwired or
/// picking up noise), and every edge counts.
#[test]
fn periodic_over_gpio_ignores_stray_bytes() {
    let mut s = Sim::nucleo(1_000_000);
    let first = s.hw.t + 2 * MS;
    let times: Vec<u64> = (0..12).map(|k| first + k * 500 * US + k * 7).collect();
    for (k, &t) in times.iter().enumerate() {
        s.hw.edge_at(Pin::Response, t, k % 2 == 0);
    }
    s.hw.rx_noise_at(first + 100 * US, 0xF0);
    let mut c = echo(Mode::Periodic, Stimulus::None(ResponseLine::Gpio), 10);
    c.timeout_ticks = 0;
    let st = s.measure(c, 100 * MS);
    assert_eq!(st.taken, 10);
    let ticks: Vec<u64> = s.host.edges.iter().map(|e| e.tick).collect();
    assert_eq!(ticks, times[..10]);
}

/// Finding 5. An unwired PB10 picked up an edge (PA8's trigger next to it)
/// right after the first stimulus byte was written: the old loop took it
/// for the byte's start bit, "found" the wire, and timed the stimulus by
/// that garbage tick (here 150 ticks early; worse with the channel open on
/// every later byte). Now the board checks the wire at run start (PB10
/// pulled down with PA9 idle high): absent, the channel is never opened,
/// the stimulus ticks are software ticks, each counted.
#[test]
fn the_tx_wire_is_checked_at_start_not_taken_from_a_stray_edge() {
    let mut s = Sim::nucleo(1_000_000);
    s.hw.uart_response_line();
    s.hw.wire_check = true;
    s.hw.wires.tx_capture = false;
    s.hw.target = Target::UartEcho { latency: 150 * US };
    s.host_says(&HostMsg::Configure(echo(Mode::UartEcho, Stimulus::Byte(0x55), 5)));
    s.host_says(&HostMsg::Start);
    while s.hw.sent.is_empty() {
        let t = s.hw.t + 5;
        s.run_until(t);
    }
    // Right after the first byte's write: a stray falling edge on PB10.
    let stray = s.hw.t + 200;
    s.hw.edge_at(Pin::TxStart, stray, false);
    let end = s.hw.t + 100 * MS;
    s.run_until(end);
    let st = s.host.stopped.expect("the run ends");
    assert_eq!((st.taken, st.timeouts), (5, 0), "{st:?}");
    assert_eq!(s.lp.tx_wired(), Some(false));
    assert_eq!(st.anomalies.soft_stimuli, 5, "{:?}", st.anomalies);
    assert!(s.host.samples[0].stimulus_tick < stray, "the first stimulus is not timed by the stray edge");
    assert_eq!(s.host.logs.len(), 1, "the missing wire is said once, at the start: {:?}", s.host.logs);
    assert!(s.host.logs[0].contains("PB10"), "{:?}", s.host.logs);
    // Each soft tick is the counter read right before the write, a few
    // accesses before the start bit: never a stray edge's.
    let starts: Vec<u64> = s.hw.sent.iter().map(|&(t, _)| t).collect();
    for (x, start) in s.host.samples.iter().zip(&starts) {
        assert!(x.stimulus_tick <= *start && start - x.stimulus_tick < 40, "{} vs {start}", x.stimulus_tick);
    }
    // And with the wire there, the check says so: hardware ticks from the
    // first byte on.
    let mut s = Sim::nucleo(1_000_000);
    s.hw.uart_response_line();
    s.hw.wire_check = true;
    s.hw.wires.tx_capture = true;
    s.hw.target = Target::UartEcho { latency: 150 * US };
    let st = s.measure(echo(Mode::UartEcho, Stimulus::Byte(0x55), 5), 100 * MS);
    assert_eq!((st.taken, st.anomalies.soft_stimuli), (5, 0), "{st:?}");
    assert!(s.latencies().iter().all(|&l| l == Some((150 * US) as u32)), "{:?}", s.latencies());
}

/// Finding 6. The byte's start-bit capture latched, but the engine task
/// had collected just before it and spent longer than the two bit times
/// of the capture's deadline before it planned: the old `plan()` read
/// `now` without servicing the timer, found the deadline passed, called
/// the wire absent, and closed the channel with the capture still in it.
/// Every stimulus of the run was then software-timed. Both ways the
/// capture can wait: its interrupt ran between the two locks (it sits in
/// the front), or the lock held it back (it sits in the timer).
#[test]
fn a_start_bit_capture_waiting_at_plan_time_is_not_dropped() {
    for interrupt_ran in [true, false] {
        let mut s = Sim::nucleo(1_000_000);
        s.hw.uart_response_line();
        s.hw.wires.tx_capture = true;
        s.hw.target = Target::UartEcho { latency: 150 * US };
        // The transmitter starts half a bit after the write (within a bit
        // time on an idle line): the start bit latches after the task ran.
        s.hw.tx_delay = BIT / 2;
        // 0xF0: its only falling edge is the start bit, so a capture read
        // late is not overcaptured by a data edge (0x55's would be, and
        // rightly go untimed).
        s.host_says(&HostMsg::Configure(echo(Mode::UartEcho, Stimulus::Byte(0xF0), 5)));
        s.host_says(&HostMsg::Start);
        // Run until the first byte is written.
        while s.hw.sent.is_empty() {
            let t = s.hw.t + 5;
            s.run_until(t);
        }
        // The engine task collects (nothing yet), then spends 3 bit times
        // on its delivery; the start bit latches meanwhile.
        let now = s.front.collect(&mut s.hw, &mut s.lp.batch);
        s.lp.deliver(&mut s.e, now);
        let t = s.hw.t + 3 * BIT;
        s.hw.advance(t);
        if interrupt_ran {
            s.front.on_timer_interrupt(&mut s.hw);
        }
        s.lp.plan(&mut s.e, &mut s.front, &mut s.hw);
        s.pend();
        let end = s.hw.t + 100 * MS;
        s.run_until(end);
        let st = s.host.stopped.expect("the run ends");
        assert_eq!((st.taken, st.timeouts), (5, 0), "{st:?}");
        assert_eq!(st.anomalies.soft_stimuli, 0, "interrupt ran {interrupt_ran}: {:?}", st.anomalies);
        assert_eq!(s.lp.tx_wired(), Some(true));
        assert!(s.host.logs.is_empty(), "{:?}", s.host.logs);
        assert!(s.latencies().iter().all(|&l| l == Some((150 * US) as u32)), "{:?}", s.latencies());
    }
}

/// The target line's receive burst both boards run in their interrupt
/// (`Timer::on_target_rx`): each byte logged with a `now`, each receive
/// error counted, and it stops at the first `WouldBlock` or after `burst`
/// reads, so the byte after either is for the next interrupt.
#[test]
fn the_target_receive_burst_logs_bytes_and_errors_and_stops_when_empty() {
    use embedded_hal_nb::nb;
    use embedded_hal_nb::serial::{ErrorKind, ErrorType, Read};

    /// A UART with a script of reads: a byte, an error, or `WouldBlock`.
    struct Script(Vec<Option<Result<u8, ()>>>);
    impl ErrorType for Script {
        type Error = ErrorKind;
    }
    impl Read<u8> for Script {
        fn read(&mut self) -> nb::Result<u8, ErrorKind> {
            match self.0.remove(0) {
                Some(Ok(b)) => Ok(b),
                Some(Err(())) => Err(nb::Error::Other(ErrorKind::FrameFormat)),
                None => Err(nb::Error::WouldBlock),
            }
        }
    }

    let mut t = Timer::new(Fake::new(5 * MS), TimerBits::B32);
    let mut rx = Script(std::vec![Some(Ok(0x41)), Some(Err(())), Some(Ok(0x42)), None, Some(Ok(0x43))]);
    t.on_target_rx(&mut rx, 8);
    let mut b = Batch::new();
    t.front.collect(&mut t.hw, &mut b);
    let got: Vec<_> = b.events[..b.len]
        .iter()
        .map(|e| match *e {
            Event::Byte { byte, at } => {
                assert!(at >= 5 * MS, "{at}");
                Some(byte)
            }
            Event::LineError => None,
            Event::Response { .. } | Event::Trigger { .. } => panic!("no capture was armed"),
        })
        .collect();
    assert_eq!(got, [Some(0x41), None, Some(0x42)]);
    assert_eq!(rx.0.len(), 1, "the byte after WouldBlock is left");
    // At most `burst` reads.
    let mut rx = Script(std::vec![Some(Ok(1)), Some(Ok(2)), Some(Ok(3))]);
    t.on_target_rx(&mut rx, 2);
    t.front.collect(&mut t.hw, &mut b);
    assert_eq!(b.len, 2);
    assert_eq!(rx.0.len(), 1);
}

/// A board whose compare takes microseconds to arm (the Pico: register
/// accesses of 0.6 µs here, and a target closer than 2 µs is not handed
/// to its state machine: the board waits it out, unmatched). Over arm
/// leads from 10 to 14 µs some stimuli are planned just past the loop's
/// late threshold and miss their compare while it is armed: made in
/// software, their latencies off. With the board's set-up in the
/// threshold (`compare_setup_ticks`) each is armed a rest later by the
/// compare, and every latency is exact.
#[test]
fn a_compare_slow_to_arm_never_turns_a_stimulus_into_a_software_edge() {
    let mut soft = [0; 2];
    for (i, setup) in [0u32, 800].into_iter().enumerate() {
        for lead in (10 * US..14 * US).step_by(20) {
            let cfg = LoopConfig { compare_setup_ticks: setup, ..boards::nucleo_f411re::LOOP };
            let mut s = Sim::new(cfg, nucleo_board().with_arm_lead(lead as u32), 1_000_000);
            s.hw.access_ticks = 60;
            s.hw.target_lead = 2 * US;
            s.hw.target = Target::GpioEcho { edge: Edge::Rising, latency: 30 * US, pulse: Some(20 * US) };
            let mut c = echo(Mode::GpioEcho, Stimulus::Edge(Edge::Rising), 20);
            c.interval_ticks = (200 * US) as u32;
            c.timeout_ticks = (150 * US) as u32;
            let st = s.measure(c, 100 * MS);
            assert_eq!((st.taken, st.timeouts), (20, 0), "lead {lead}: {st:?}");
            let n = s.e.totals().anomalies.soft_stimuli;
            let exact = s.latencies().iter().all(|&l| l == Some((30 * US) as u32));
            // A software edge is the only way a latency is off here.
            assert_eq!(exact, n == 0, "lead {lead}: {n} soft, {:?}", s.latencies());
            soft[i] += n;
        }
    }
    assert!(soft[0] > 0, "the sweep never hit the window: it tests nothing");
    assert_eq!(soft[1], 0, "with the set-up in the threshold: {} software edges", soft[1]);
}
