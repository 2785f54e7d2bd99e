//! `nucleo-f411re` board: the reference probe. STM32F411RE at 100 MHz, TIM2
//! (32 bits, 10 ns ticks) drives the stimulus by output compare and
//! timestamps every answer by input capture on the same counter, so no
//! interrupt latency enters a figure. Register references are to RM0383.
//!
//! ```text
//!            TIM2 @ 100 MHz (PSC 0, ARR 0xFFFF_FFFF)
//!   CH1 PA0 (A0) ── output compare ──▶ stimulus edge (gpio-echo / GPIO loopback)
//!   CH2 PA1 (A1) ◀─ input capture ──── response edge or RX start bit; periodic edges
//!   CH3 PB10 (D6) ◀─ input capture ─── our own TX start bit (uart-echo stimulus)
//!   CH4 (no pin)  ── compare ─────────▶ wake-up: the engine's next deadline
//!   update (wrap) ────────────────────▶ TickExtender::on_overflow
//!
//!   USART1 PA9 (D8) TX ─▶ target RX     PA10 (D2) RX ◀─ target TX   (target line)
//!   USART2 PA2/PA3 ═ ST-LINK virtual COM port, 921600 Bd, TX by DMA1 stream 6 (host link)
//!   LD2 PA5: on while a measurement runs    PA8 (D7): scope trigger, high from stimulus to answer
//! ```
//!
//! In `uart-echo` the probe writes the byte in software when the wake-up
//! compare fires; the stimulus tick is the hardware capture of its start bit
//! on CH3 (PA9 wired to PB10) and the response tick the capture of the
//! echo's start bit on CH2 (PA10 wired to PA1). Without the CH3 wire the
//! tick read just before the write is used (and a warning logged once).
#![no_std]
#![no_main]

use defmt_rtt as _;
use panic_probe as _;

use embedded_hal::digital::OutputPin;
use latprobe_firmware::capture::StartBitPairer;
use latprobe_firmware::TickExtender;
use stm32f4xx_hal::pac::TIM2;

/// SYSCLK, and TIM2's clock (APB1 at 50 MHz, doubled for its timers).
const SYSCLK_HZ: u32 = 100_000_000;
/// Host link over the ST-LINK/V2-1 virtual COM port. 921600 Bd from the
/// 50 MHz APB1 is 925 926 Bd (+0.47 %), well inside a UART's tolerance.
const HOST_BAUD: u32 = 921_600;
/// Target line: the responder's default.
const TARGET_BAUD: u32 = 115_200;
/// One 8N1 byte on the target line, in ticks.
const TARGET_BYTE_TICKS: u64 = 10 * SYSCLK_HZ as u64 / TARGET_BAUD as u64;
/// Output queue size of the engine, in bytes.
const TX_QUEUE: usize = 2048;
/// Largest chunk the host-link DMA sends at once.
const DMA_CHUNK: usize = 256;

/// Drive an `embedded-hal` pin, ignoring the error a GPIO cannot have.
fn set<P: OutputPin>(pin: &mut P, high: bool) {
    let _ = if high { pin.set_high() } else { pin.set_low() };
}

/// What is armed on TIM2 for the current stimulus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Armed {
    Nothing,
    /// Output compare on CH1 will make the edge at `at`.
    Edge {
        at: u64,
    },
    /// The byte was written at `written` (the tick read just before);
    /// waiting for its start bit's capture on CH3.
    Byte {
        written: u64,
    },
}

/// TIM2 and everything that reads or programs it. One RTIC resource, so the
/// extender's `now()` never interleaves with `on_overflow()`.
pub struct Timer {
    tim: TIM2,
    ext: TickExtender,
    armed: Armed,
    /// Id of the last request handled (armed or produced).
    done_id: Option<u32>,
    /// Whether the response line (CH2) is capturing.
    capturing: bool,
    /// Falling edges only and one capture per byte (the UART's start bit).
    uart_line: bool,
    /// A CH3 capture has been missing once: logged, not repeated.
    warned_no_tx_capture: bool,
    /// UART answers: start-bit captures on CH2 waiting for their byte.
    pairer: StartBitPairer,
}

impl core::fmt::Debug for Timer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Timer")
            .field("armed", &self.armed)
            .field("capturing", &self.capturing)
            .finish_non_exhaustive()
    }
}

impl Timer {
    /// TIM2 free-running over 32 bits at the timer clock (RM0383 §13.4).
    fn start(tim: TIM2) -> Self {
        tim.cr1().reset();
        tim.dier().reset();
        tim.psc().write(|w| w.psc().set(0));
        tim.arr().write(|w| w.arr().set(u32::MAX));
        // CH1: output, no preload, held low until a stimulus is armed.
        // CH2: input capture on TI2, filter fCK_INT N=8 (80 ns, constant).
        tim.ccmr1_output().write(|w| w.cc1s().output().oc1pe().disabled().oc1m().force_inactive());
        tim.ccmr1_input().modify(|_, w| w.cc2s().ti2().ic2f().fck_int_n8().ic2psc().no_prescaler());
        // CH3: input capture on TI3, same filter. CH4: output frozen, no pin:
        // a compare interrupt only.
        tim.ccmr2_input().write(|w| w.cc3s().ti3().ic3f().fck_int_n8().ic3psc().no_prescaler());
        tim.ccmr2_output().modify(|_, w| w.cc4s().output().oc4m().frozen());
        // CH1 output on (PA0 in AF1 follows OC1REF), active high. CH3 on its
        // falling edge (a start bit), enabled per stimulus.
        tim.ccer().write(|w| w.cc1e().set_bit().cc1p().clear_bit().cc3p().set_bit().cc3np().clear_bit());
        // UG loads PSC and zeroes the counter; it also sets UIF.
        tim.egr().write(|w| w.ug().set_bit());
        tim.sr().write(|w| w.uif().clear_bit());
        tim.dier().write(|w| w.uie().set_bit());
        tim.cr1().write(|w| w.cen().set_bit());
        Self {
            tim,
            ext: TickExtender::new(latprobe_firmware::TimerBits::B32),
            armed: Armed::Nothing,
            done_id: None,
            capturing: false,
            uart_line: false,
            warned_no_tx_capture: false,
            pairer: StartBitPairer::new(SYSCLK_HZ, TARGET_BAUD),
        }
    }

    /// The extended tick now: counter first, overflow flag second.
    fn now(&self) -> u64 {
        let cnt = self.tim.cnt().read().bits();
        let pending = self.tim.sr().read().uif().bit_is_set();
        self.ext.now(u64::from(cnt), pending)
    }

    /// Count a pending wrap, clearing its flag in the same critical section
    /// (we hold the resource; TIM2's interrupt is the highest priority).
    fn take_overflow(&mut self) {
        if self.tim.sr().read().uif().bit_is_set() {
            self.tim.sr().write(|w| w.uif().clear_bit());
            self.ext.on_overflow();
        }
    }

    /// Start or stop capturing on the response line (CH2). `uart`: falling
    /// edges, one per byte; otherwise both edges.
    fn capture_response(&mut self, on: bool, uart: bool) {
        if on == self.capturing && uart == self.uart_line {
            return;
        }
        self.capturing = on;
        self.uart_line = uart;
        self.pairer.clear();
        self.tim.ccer().modify(|_, w| w.cc2e().clear_bit());
        if on {
            // CC2P/CC2NP = 1/1: both edges; 1/0: falling (RM0383 §13.4.9).
            self.tim.ccer().modify(|_, w| w.cc2p().set_bit().cc2np().bit(!uart));
            self.tim.sr().write(|w| w.cc2if().clear_bit().cc2of().clear_bit());
            self.tim.ccer().modify(|_, w| w.cc2e().set_bit());
        }
        self.tim.dier().modify(|_, w| w.cc2ie().bit(on));
    }

    /// Read a pending CH2 capture, if any: its raw value and whether the
    /// hardware overwrote an earlier one (CC2OF, RM0383 §13.4.5). Call it
    /// before reading `now`, so the capture is known to precede `now`.
    fn take_response_capture(&mut self) -> Option<(u32, bool)> {
        if self.tim.sr().read().cc2if().bit_is_clear() {
            return None;
        }
        // Reading CCR2 clears CC2IF.
        let raw = self.tim.ccr2().read().bits();
        let over = self.tim.sr().read().cc2of().bit_is_set();
        if over {
            self.tim.sr().write(|w| w.cc2of().clear_bit());
        }
        Some((raw, over))
    }

    /// Hand a CH2 capture (read before `now`) on: in UART modes to the
    /// start-bit pairer, which waits for its byte; else to the engine.
    fn deliver_response_capture<const Q: usize>(
        &mut self,
        engine: &mut latprobe_firmware::Engine<Q>,
        capture: Option<(u32, bool)>,
        now: u64,
    ) {
        let Some((raw, over)) = capture else { return };
        if over {
            engine.count_overcapture();
        }
        let tick = self.ext.capture(u64::from(raw), now);
        if self.uart_line {
            self.pairer.push_capture(tick);
        } else {
            engine.on_capture(tick, now);
        }
    }
}

#[rtic::app(device = stm32f4xx_hal::pac, peripherals = true)]
mod app {
    use latprobe_firmware::capture::Paired;
    use latprobe_firmware::{BoardInfo, Engine, TimerBits, FIRMWARE_VERSION};
    use latprobe_protocol::{Capabilities, Edge, Stimulus};
    use stm32f4xx_hal::{
        gpio::{Output, PA5, PA8},
        nb,
        pac::{self, Interrupt, DMA1, USART1, USART2},
        prelude::*,
        rcc::{Config, Enable},
        serial::{self, Rx, Tx},
    };

    use super::{
        set, Armed, Timer, DMA_CHUNK, HOST_BAUD, SYSCLK_HZ, TARGET_BAUD, TARGET_BYTE_TICKS, TX_QUEUE,
    };

    /// Bytes taken from a UART per interrupt at most: a stuck error flag
    /// must not wedge the interrupt.
    const RX_BURST: usize = 32;

    #[shared]
    struct Shared {
        engine: Engine<TX_QUEUE>,
        timer: Timer,
        /// The scope trigger (PA8): high from a stimulus to its answer.
        trigger: PA8<Output>,
    }

    #[local]
    struct Local {
        host_rx: Rx<USART2>,
        host_rx_errors: u32,
        target_rx: Rx<USART1>,
        target_tx: Tx<USART1>,
        dma: DMA1,
        led: PA5<Output>,
    }

    #[init]
    fn init(cx: init::Context) -> (Shared, Local) {
        let dp = cx.device;
        // 8 MHz from the ST-LINK's MCO into OSC_IN (HSE bypass), PLL to
        // 100 MHz; APB1 at its 50 MHz maximum, so its timers run at 100 MHz.
        let mut rcc = dp.RCC.freeze(
            Config::hse(8.MHz())
                .bypass_hse_oscillator()
                .sysclk(SYSCLK_HZ.Hz())
                .hclk(SYSCLK_HZ.Hz())
                .pclk1(50.MHz())
                .pclk2(SYSCLK_HZ.Hz()),
        );
        let clocks = rcc.clocks;
        if clocks.sysclk().raw() != SYSCLK_HZ || clocks.timclk1().raw() != SYSCLK_HZ {
            defmt::panic!(
                "clock tree: sysclk {} Hz, TIM2 {} Hz",
                clocks.sysclk().raw(),
                clocks.timclk1().raw()
            );
        }

        let gpioa = dp.GPIOA.split(&mut rcc);
        let gpiob = dp.GPIOB.split(&mut rcc);
        // TIM2_CH1/CH2 on PA0/PA1, TIM2_CH3 on PB10: AF1 (DS10314 table 9).
        let _ch1 = gpioa.pa0.into_alternate::<1>();
        let _ch2 = gpioa.pa1.into_alternate::<1>();
        let _ch3 = gpiob.pb10.into_alternate::<1>();
        let led = gpioa.pa5.into_push_pull_output();
        let trigger = gpioa.pa8.into_push_pull_output();

        let host = dp
            .USART2
            .serial((gpioa.pa2, gpioa.pa3), serial::Config::default().baudrate(HOST_BAUD.bps()), &mut rcc)
            .expect("USART2 at HOST_BAUD");
        let target = dp
            .USART1
            .serial((gpioa.pa9, gpioa.pa10), serial::Config::default().baudrate(TARGET_BAUD.bps()), &mut rcc)
            .expect("USART1 at TARGET_BAUD");
        let (_host_tx, mut host_rx) = host.split();
        let (target_tx, mut target_rx) = target.split();
        host_rx.listen();
        target_rx.listen();

        // Host-link TX by DMA: USART2_TX is DMA1 stream 6 channel 4 (RM0383
        // table 27). The USART requests a transfer whenever TXE is set.
        DMA1::enable(&mut rcc);
        // SAFETY: USART2 is configured above and owned by `host_rx`/`_host_tx`;
        // setting DMAT in CR3 only lets the DMA write DR, which nothing else
        // does (the Tx half is dropped here, never used).
        unsafe { (*USART2::ptr()).cr3().modify(|_, w| w.dmat().set_bit()) };

        pac::TIM2::enable(&mut rcc);
        let timer = Timer::start(dp.TIM2);

        let caps = Capabilities::GPIO_ECHO
            | Capabilities::UART_ECHO
            | Capabilities::PERIODIC
            | Capabilities::LOOPBACK
            | Capabilities::HW_CAPTURE;
        // A uart-echo answer faster than one byte at the target line's baud
        // is an earlier stimulus's late echo, not this one's answer.
        // A UART answer reaches the engine when its byte is read, up to a
        // byte time and the interrupt's delay after its start-bit capture.
        let engine = Engine::new(
            BoardInfo::new("nucleo-f411re", SYSCLK_HZ, TimerBits::B32, caps)
                .with_uart_echo_floor(TARGET_BAUD)
                .with_response_lag((2 * TARGET_BYTE_TICKS) as u32),
        );
        defmt::info!(
            "boot: latprobe-firmware {=str} on nucleo-f411re, timer {=u32} Hz, host link {=u32} Bd",
            FIRMWARE_VERSION,
            SYSCLK_HZ,
            HOST_BAUD
        );
        rtic::pend(Interrupt::DMA1_STREAM6);
        rtic::pend(Interrupt::TIM2);
        (
            Shared { engine, timer, trigger },
            Local { host_rx, host_rx_errors: 0, target_rx, target_tx, dma: dp.DMA1, led },
        )
    }

    #[idle]
    fn idle(_: idle::Context) -> ! {
        loop {
            cortex_m::asm::wfi();
        }
    }

    /// TIM2: wrap, stimulus compare, captures, wake-up. Also pended by the
    /// other tasks after they fed the engine, to re-plan.
    #[task(binds = TIM2, priority = 3, shared = [engine, timer, trigger], local = [target_tx, led])]
    fn tim2(cx: tim2::Context) {
        let target_tx = cx.local.target_tx;
        let led = cx.local.led;
        let (output, running) =
            (cx.shared.engine, cx.shared.timer, cx.shared.trigger).lock(|engine, t, trigger| {
                // Snapshot the flags first: every capture in it latched
                // before the `now` read below, as TickExtender::capture needs.
                t.take_overflow();
                let sr = t.tim.sr().read();
                // Captures first, `now` second: every capture read is then
                // known to have latched before `now` (TickExtender::capture).
                let response = t.take_response_capture();
                let now = t.now();
                if sr.cc1if().bit_is_set() {
                    t.tim.sr().write(|w| w.cc1if().clear_bit());
                    if let Armed::Edge { at, .. } = t.armed {
                        // The pin changed at the compare: `at` exactly.
                        t.armed = Armed::Nothing;
                        t.tim.dier().modify(|_, w| w.cc1ie().clear_bit());
                        set(trigger, true);
                        engine.on_stimulus(at, now);
                    }
                }
                if sr.cc3if().bit_is_set() {
                    // Reading CCR3 clears CC3IF; the rest of the byte's
                    // edges are not wanted: CH3 off until the next byte.
                    let raw = t.tim.ccr3().read().bits();
                    t.tim.ccer().modify(|_, w| w.cc3e().clear_bit());
                    t.tim.dier().modify(|_, w| w.cc3ie().clear_bit());
                    t.tim.sr().write(|w| w.cc3of().clear_bit());
                    if let Armed::Byte { .. } = t.armed {
                        t.armed = Armed::Nothing;
                        set(trigger, true);
                        engine.on_stimulus(t.ext.capture(u64::from(raw), now), now);
                    }
                }
                if response.is_some() {
                    set(trigger, false);
                }
                t.deliver_response_capture(engine, response, now);
                if sr.cc4if().bit_is_set() {
                    t.tim.sr().write(|w| w.cc4if().clear_bit());
                }
                engine.poll(now);
                plan(engine, t, target_tx, now);
                (engine.tx_pending() > 0, engine.is_running())
            });
        set(led, running);
        if output {
            rtic::pend(Interrupt::DMA1_STREAM6);
        }
    }

    /// Carry out the engine's requests: arm the stimulus, the response
    /// capture and the next wake-up. A few rounds at most: each either
    /// finds nothing due or makes progress.
    fn plan(engine: &mut Engine<TX_QUEUE>, t: &mut Timer, target_tx: &mut Tx<USART1>, mut now: u64) {
        use embedded_hal_nb::serial::Write as _;
        for _ in 0..4 {
            // The response line captures during every run: echo responses,
            // loopback, periodic edges.
            let uart = engine.config().is_some_and(|c| c.stimulus.is_byte());
            t.capture_response(engine.is_running(), uart);
            if !engine.is_running() {
                // Between runs the stimulus line rests at its idle level.
                if let Some(Stimulus::Edge(edge)) = engine.config().map(|c| c.stimulus) {
                    idle_line(t, edge);
                }
            }

            match engine.stimulus_request() {
                None => disarm(t),
                Some(req) if t.done_id == Some(req.id) => {}
                Some(req) => match req.stimulus {
                    Stimulus::Edge(edge) => arm_edge(engine, t, req.id, req.at, edge, now),
                    Stimulus::Byte(b) if now >= req.at => {
                        // Open CH3 for our own start bit, then write.
                        t.tim.sr().write(|w| w.cc3if().clear_bit().cc3of().clear_bit());
                        t.tim.ccer().modify(|_, w| w.cc3e().set_bit());
                        t.tim.dier().modify(|_, w| w.cc3ie().set_bit());
                        let written = t.now();
                        if nb::block!(target_tx.write(b)).is_err() {
                            defmt::warn!("target line write failed");
                        }
                        t.done_id = Some(req.id);
                        t.armed = Armed::Byte { written };
                    }
                    Stimulus::Byte(_) | Stimulus::None | Stimulus::Identified => {}
                },
            }
            // No CH3 capture two byte times after the write: PB10 is not
            // wired to PA9. Fall back to the tick read before the write.
            if let Armed::Byte { written, .. } = t.armed {
                if now >= written + 2 * TARGET_BYTE_TICKS {
                    if !t.warned_no_tx_capture {
                        t.warned_no_tx_capture = true;
                        defmt::warn!(
                            "no start-bit capture on PB10 (wire it to PA9): software stimulus ticks"
                        );
                    }
                    t.armed = Armed::Nothing;
                    t.tim.ccer().modify(|_, w| w.cc3e().clear_bit());
                    engine.on_stimulus(written, now);
                    engine.poll(now);
                    continue;
                }
            }
            let mut due = engine.next_deadline();
            if let Armed::Byte { written, .. } = t.armed {
                let fallback = written + 2 * TARGET_BYTE_TICKS;
                due = Some(due.map_or(fallback, |d| d.min(fallback)));
            }
            let Some(due) = due else {
                t.tim.dier().modify(|_, w| w.cc4ie().clear_bit());
                return;
            };
            if due <= now {
                engine.poll(now);
                now = t.now();
                continue;
            }
            match t.ext.compare_value(due, now) {
                Some(v) => {
                    t.tim.ccr4().write(|w| w.ccr().set(v as u32));
                    t.tim.sr().write(|w| w.cc4if().clear_bit());
                    t.tim.dier().modify(|_, w| w.cc4ie().set_bit());
                    // Passed while we wrote it: no match until the wrap.
                    let after = t.now();
                    if after >= due && t.tim.sr().read().cc4if().bit_is_clear() {
                        engine.poll(after);
                        now = after;
                        continue;
                    }
                    return;
                }
                // Beyond one counter period: the wrap's interrupt re-plans.
                None => {
                    t.tim.dier().modify(|_, w| w.cc4ie().clear_bit());
                    return;
                }
            }
        }
        // Still something due after the rounds: come back in 10 µs rather
        // than wait for the wrap.
        let soon = t.now() + 1_000;
        t.tim.ccr4().write(|w| w.ccr().set(soon as u32));
        t.tim.sr().write(|w| w.cc4if().clear_bit());
        t.tim.dier().modify(|_, w| w.cc4ie().set_bit());
    }

    /// Put the stimulus line at its resting level for `edge`.
    fn idle_line(t: &mut Timer, edge: Edge) {
        match edge {
            Edge::Rising => {
                t.tim.ccmr1_output().modify(|_, w| w.oc1m().force_inactive());
            }
            Edge::Falling => {
                t.tim.ccmr1_output().modify(|_, w| w.oc1m().force_active());
            }
            Edge::Toggle => {}
        }
    }

    /// Nothing is wanted (the run stopped): cancel the pending compare and
    /// capture. Between runs `plan` rests the line at its idle level.
    fn disarm(t: &mut Timer) {
        if let Armed::Edge { .. } | Armed::Byte { .. } = t.armed {
            // Frozen: OC1REF keeps its level, the pending match does nothing.
            t.tim.ccmr1_output().modify(|_, w| w.oc1m().frozen());
            t.tim.dier().modify(|_, w| w.cc1ie().clear_bit().cc3ie().clear_bit());
            t.tim.ccer().modify(|_, w| w.cc3e().clear_bit());
            t.armed = Armed::Nothing;
        }
    }

    /// Program CH1 so the hardware makes `edge` at tick `at` (RM0383
    /// §13.3.8, output compare mode), or make it in software now if that
    /// moment has passed.
    fn arm_edge(engine: &mut Engine<TX_QUEUE>, t: &mut Timer, id: u32, at: u64, edge: Edge, now: u64) {
        let Some(v) = t.ext.compare_value(at, now) else {
            if at <= now {
                // Too late for the hardware: the software-timed fallback.
                force_edge(t, edge);
                t.done_id = Some(id);
                engine.on_stimulus(now, now);
            }
            // Else beyond one period: the wrap's interrupt arms it.
            return;
        };
        // Back to the idle level first, then the compare: OC1REF changes
        // only at the match.
        match edge {
            Edge::Toggle => {
                t.tim.ccmr1_output().modify(|_, w| w.oc1m().frozen());
            }
            _ => idle_line(t, edge),
        }
        t.tim.ccr1().write(|w| w.ccr().set(v as u32));
        t.tim.sr().write(|w| w.cc1if().clear_bit());
        t.tim.ccmr1_output().modify(|_, w| match edge {
            Edge::Rising => w.oc1m().active_on_match(),
            Edge::Falling => w.oc1m().inactive_on_match(),
            Edge::Toggle => w.oc1m().toggle(),
        });
        t.tim.dier().modify(|_, w| w.cc1ie().set_bit());
        t.done_id = Some(id);
        t.armed = Armed::Edge { at };
        // The counter passed `at` while CCR1 was written: no match will
        // come. Make the edge now and report when it really happened.
        let after = t.now();
        if after >= at && t.tim.sr().read().cc1if().bit_is_clear() {
            force_edge(t, edge);
            t.armed = Armed::Nothing;
            t.tim.dier().modify(|_, w| w.cc1ie().clear_bit());
            engine.on_stimulus(after, after);
        }
    }

    /// Make the stimulus edge in software through OC1M's force modes.
    fn force_edge(t: &mut Timer, edge: Edge) {
        // PA0 follows OC1REF; its input data bit tells the current level.
        // SAFETY: a read of GPIOA's input data register has no side effect.
        let high = unsafe { (*pac::GPIOA::ptr()).idr().read().idr0().bit_is_set() };
        let active = match edge {
            Edge::Rising => true,
            Edge::Falling => false,
            Edge::Toggle => !high,
        };
        t.tim
            .ccmr1_output()
            .modify(|_, w| if active { w.oc1m().force_active() } else { w.oc1m().force_inactive() });
    }

    /// Host link receive (USART2, from the ST-LINK VCP).
    #[task(binds = USART2, priority = 2, shared = [engine, timer], local = [host_rx, host_rx_errors])]
    fn host_rx(cx: host_rx::Context) {
        let mut buf = [0u8; RX_BURST];
        let (n, errors) = latprobe_firmware::link::read_burst(cx.local.host_rx, &mut buf);
        *cx.local.host_rx_errors = cx.local.host_rx_errors.wrapping_add(errors);
        if n == 0 {
            return;
        }
        (cx.shared.engine, cx.shared.timer).lock(|engine, t| {
            t.take_overflow();
            let now = t.now();
            engine.on_host_bytes(&buf[..n], now);
        });
        rtic::pend(Interrupt::TIM2);
        rtic::pend(Interrupt::DMA1_STREAM6);
    }

    /// Target line receive (USART1): the answer bytes. Each is paired with
    /// its start bit's capture on CH2 (latprobe_firmware::capture), so the
    /// engine gets the byte, which names the stimulus it answers, with the
    /// hardware timestamp of its first edge.
    #[task(binds = USART1, priority = 2, shared = [engine, timer], local = [target_rx])]
    fn target_rx(cx: target_rx::Context) {
        use embedded_hal_nb::serial::Read as _;
        let rx = cx.local.target_rx;
        (cx.shared.engine, cx.shared.timer).lock(|engine, t| {
            for _ in 0..RX_BURST {
                match rx.read() {
                    Ok(byte) => {
                        // TIM2 cannot run inside this lock: take a start-bit
                        // capture it has not serviced yet, then `now`.
                        t.take_overflow();
                        let capture = t.take_response_capture();
                        let now = t.now();
                        t.deliver_response_capture(engine, capture, now);
                        if !t.uart_line {
                            continue; // periodic over a GPIO: bytes mean nothing
                        }
                        match t.pairer.on_byte(byte, now) {
                            Paired::Byte { tick, byte } => engine.on_response_byte(tick, byte, now),
                            // Its start bit was overwritten before it was read.
                            Paired::NoStartBit => engine.count_overcapture(),
                        }
                    }
                    Err(nb::Error::WouldBlock) => break,
                    Err(nb::Error::Other(_)) => engine.count_line_error(),
                }
            }
        });
        // Re-plan: an answer can end a sample and free an identity.
        rtic::pend(Interrupt::TIM2);
    }

    /// Host link transmit: DMA1 stream 6 sends the engine's output in chunks
    /// copied to a buffer of this task. Runs on the stream's completion and
    /// whenever another task queued output (pended).
    #[task(binds = DMA1_STREAM6, priority = 1, shared = [engine], local = [dma, buf: [u8; DMA_CHUNK] = [0; DMA_CHUNK]])]
    fn host_tx(mut cx: host_tx::Context) {
        let dma = cx.local.dma;
        let st = dma.st(6);
        if st.cr().read().en().bit_is_set() {
            return; // still sending: its completion comes back here
        }
        // Clear every flag of stream 6 (RM0383 §9.5.4, HIFCR).
        dma.hifcr().write(|w| {
            w.ctcif6().set_bit().chtif6().set_bit().cteif6().set_bit().cdmeif6().set_bit().cfeif6().set_bit()
        });
        let buf = cx.local.buf;
        let n = cx.shared.engine.lock(|e| e.read_tx(&mut buf[..]));
        if n == 0 {
            return;
        }
        // Stream configuration, RM0383 §9.3.17: peripheral and memory
        // addresses, count, then the control word with EN last.
        // SAFETY: USART2's DR address is a fixed peripheral register; taking
        // it reads nothing.
        let dr = unsafe { (*USART2::ptr()).dr().as_ptr() } as u32;
        // SAFETY: the stream (disabled, checked above) will write DR only:
        // PAR is USART2's data register, the transfer's only destination.
        st.par().write(|w| unsafe { w.pa().bits(dr) });
        // SAFETY: the DMA reads `buf[..n]`, this task's static local, until
        // it raises the completion interrupt, which runs this task again;
        // the task writes `buf` only above, while the stream is disabled.
        st.m0ar().write(|w| unsafe { w.m0a().bits(buf.as_ptr() as u32) });
        st.ndtr().write(|w| w.ndt().set(n as u16));
        st.cr().write(|w| {
            w.chsel().set(4);
            w.dir().memory_to_peripheral();
            w.minc().incremented();
            w.pinc().fixed();
            w.psize().bits8();
            w.msize().bits8();
            w.tcie().enabled();
            w.teie().enabled();
            w.en().enabled()
        });
    }
}
