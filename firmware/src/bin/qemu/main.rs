//! `qemu` board: the probe firmware for `qemu-system-arm -machine netduinoplus2`
//! (STM32F405), so that CI runs the real firmware binary end to end.
//!
//! ```text
//!  host (latprobe run) ══ USART1 ══▶ host_rx ─▶ Engine ─▶ host_tx (EXTI0) ══ USART1 ══▶ host
//!                                               │  ▲
//!                   SysTick one-shot ─▶ wake ───┘  │ on_capture(CNT read in the RX interrupt)
//!  target (responder) ◀══ USART2 ══ stimulus byte  └── target_rx ◀══ USART2 ══ echo / periodic byte
//! ```
//!
//! What QEMU 7.2 models, and what this board does about it:
//!
//! - TIM2 counts at 1 GHz / (PSC + 1) of virtual time whatever RCC says, so
//!   PSC = 9 gives the same 100 MHz (10 ns) tick as the Nucleo. It has no
//!   input capture and no output compare, and its update interrupt is not
//!   tied to the counter's wrap (and storms once CNT passes ARR), so the
//!   counter is free-running with every timer interrupt off, and it is
//!   widened to 64 bits in software ([`Clock`]): a wrap is seen as a read
//!   smaller than the previous one. A wake-up at least every 100 ms keeps
//!   reads far closer together than the 43 s wrap period.
//! - Timestamps are the counter read in the target line's receive
//!   interrupt, and the stimulus byte is written in software right after
//!   reading the counter. The Hello says `EMULATED` and not `HW_CAPTURE`:
//!   these figures are not physical. Tests check counts, never timing.
//! - Wake-ups come from SysTick as a one-shot alarm: it runs at the modelled
//!   168 MHz core clock (checked against TIM2 under `-icount shift=0`).
//! - A UART write is synchronous in QEMU (TXE is always set), and a UART
//!   receives one byte at a time, holding the next back until DR is read,
//!   so nothing is lost on either line as long as the host drains them.
#![no_std]
#![no_main]

use defmt_semihosting as _;

/// The measurement timer's rate: TIM2 at 1 GHz / (PSC + 1).
const TIMER_HZ: u32 = 100_000_000;
/// TIM2 prescaler for [`TIMER_HZ`] in QEMU's model.
const TIM2_PSC: u16 = 9;
/// SysTick (core clock) rate of QEMU's netduinoplus2.
const SYSTICK_HZ: u64 = 168_000_000;
/// Output queue size of the engine, in bytes.
const TX_QUEUE: usize = 2048;
/// The host link and the target line: the baud rate does not matter in QEMU,
/// it is set for a plausible register state only.
const BAUD: u32 = 921_600;

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    defmt::error!("panic: {}", defmt::Display2Format(info));
    // End QEMU with a failure code so a test sees the panic at once instead
    // of waiting for its timeout.
    semihosting::process::exit(101)
}

// `unsafe fn` is the signature cortex-m-rt requires of this handler; the
// body does nothing unsafe.
#[cortex_m_rt::exception]
unsafe fn HardFault(_frame: &cortex_m_rt::ExceptionFrame) -> ! {
    // No logging here: the fault may have hit inside the logger.
    semihosting::process::exit(102)
}

/// TIM2's 32-bit counter widened to 64 bits by counting wraps in software.
pub struct Clock {
    tim: stm32f4xx_hal::pac::TIM2,
    last: u32,
    wraps: u64,
}

impl core::fmt::Debug for Clock {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Clock").field("last", &self.last).field("wraps", &self.wraps).finish_non_exhaustive()
    }
}

impl Clock {
    /// Start TIM2 free-running at [`TIMER_HZ`], every interrupt off.
    fn start(tim: stm32f4xx_hal::pac::TIM2) -> Self {
        tim.cr1().write(|w| w.cen().clear_bit());
        tim.dier().reset();
        tim.psc().write(|w| w.psc().set(TIM2_PSC));
        tim.arr().write(|w| w.arr().set(u32::MAX));
        // Load PSC and zero the counter.
        tim.egr().write(|w| w.ug().set_bit());
        tim.sr().reset();
        tim.cr1().write(|w| w.cen().set_bit());
        Self { tim, last: 0, wraps: 0 }
    }

    /// The extended tick now. Callers hold the `clock` lock, so reads are
    /// ordered; one read per wrap period is enough to see every wrap.
    fn now(&mut self) -> u64 {
        let raw = self.tim.cnt().read().bits();
        if raw < self.last {
            self.wraps += 1;
        }
        self.last = raw;
        (self.wraps << 32) | u64::from(raw)
    }
}

#[rtic::app(device = stm32f4xx_hal::pac, peripherals = true)]
mod app {
    use cortex_m::peripheral::{syst::SystClkSource, SCB, SYST};
    use embedded_hal_nb::serial::Read as _;
    use latprobe_firmware::{BoardInfo, Engine, TimerBits, FIRMWARE_VERSION};
    use latprobe_protocol::{Capabilities, Stimulus};
    use stm32f4xx_hal::nb;
    use stm32f4xx_hal::{
        pac::{Interrupt, USART1, USART2},
        prelude::*,
        rcc::Config,
        serial::{self, Rx, Tx},
    };

    use latprobe_firmware::link::write_all;

    use super::{Clock, BAUD, SYSTICK_HZ, TIMER_HZ, TX_QUEUE};

    /// Longest SysTick one-shot: its 24-bit reload, about 100 ms at 168 MHz.
    const MAX_ALARM_CYCLES: u64 = 0x00ff_ffff;
    /// Bytes taken from the host link per interrupt before handing them on.
    const RX_CHUNK: usize = 32;

    #[shared]
    struct Shared {
        engine: Engine<TX_QUEUE>,
        clock: Clock,
        target: Target,
    }

    /// The target line (USART2): stimulus out, echo or periodic bytes in.
    pub struct Target {
        rx: Rx<USART2>,
        tx: Tx<USART2>,
        /// Receive errors (overrun, framing, noise): the byte is lost.
        rx_errors: u32,
    }

    impl core::fmt::Debug for Target {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.debug_struct("Target").field("rx_errors", &self.rx_errors).finish_non_exhaustive()
        }
    }

    #[local]
    struct Local {
        syst: SYST,
        host_rx: Rx<USART1>,
        host_tx: Tx<USART1>,
        host_rx_errors: u32,
    }

    #[init]
    fn init(cx: init::Context) -> (Shared, Local) {
        let dp = cx.device;
        // QEMU models no RCC: the HSI default waits on nothing.
        let mut rcc = dp.RCC.freeze(Config::hsi());
        let gpioa = dp.GPIOA.split(&mut rcc);
        let cfg = serial::Config::default().baudrate(BAUD.bps());
        let host = dp.USART1.serial((gpioa.pa9, gpioa.pa10), cfg, &mut rcc).expect("USART1 config");
        let target = dp.USART2.serial((gpioa.pa2, gpioa.pa3), cfg, &mut rcc).expect("USART2 config");
        let (host_tx, mut host_rx) = host.split();
        let (target_tx, mut target_rx) = target.split();
        host_rx.listen();
        target_rx.listen();

        rcc.apb1enr().modify(|_, w| w.tim2en().set_bit());
        let clock = Clock::start(dp.TIM2);

        let mut syst = cx.core.SYST;
        syst.set_clock_source(SystClkSource::Core);
        syst.enable_interrupt();

        let caps = Capabilities::UART_ECHO | Capabilities::PERIODIC | Capabilities::EMULATED;
        // No uart-echo floor: QEMU's UART has no bit timing, an echo can come
        // back faster than a byte would take on a wire.
        let engine = Engine::new(BoardInfo::new("qemu", TIMER_HZ, TimerBits::B32, caps));
        defmt::info!(
            "boot: latprobe-firmware {=str} on qemu (netduinoplus2), timer {=u32} Hz, emulated",
            FIRMWARE_VERSION,
            TIMER_HZ
        );
        // The boot Hello is queued: send it, and arm the first wake-up.
        rtic::pend(Interrupt::EXTI0);
        SCB::set_pendst();
        (
            Shared { engine, clock, target: Target { rx: target_rx, tx: target_tx, rx_errors: 0 } },
            Local { syst, host_rx, host_tx, host_rx_errors: 0 },
        )
    }

    #[idle]
    fn idle(_: idle::Context) -> ! {
        loop {
            cortex_m::asm::wfi();
        }
    }

    /// Take every byte waiting on the target line, stamping each with the
    /// counter read before its data register. The byte goes with its stamp:
    /// in uart-echo it names the stimulus it answers.
    fn drain_target(engine: &mut Engine<TX_QUEUE>, clock: &mut Clock, target: &mut Target) {
        // QEMU hands over one byte per DR read; the bound keeps a stuck
        // error flag from wedging the interrupt.
        for _ in 0..8 {
            let tick = clock.now();
            match target.rx.read() {
                Ok(byte) => engine.on_response_byte(tick, byte, tick),
                Err(nb::Error::WouldBlock) => break,
                Err(nb::Error::Other(_)) => {
                    target.rx_errors = target.rx_errors.wrapping_add(1);
                    engine.count_line_error();
                }
            }
        }
    }

    /// Target line receive: a response (echo modes) or an edge (periodic).
    #[task(binds = USART2, priority = 3, shared = [engine, clock, target])]
    fn target_rx(cx: target_rx::Context) {
        (cx.shared.engine, cx.shared.clock, cx.shared.target).lock(|engine, clock, target| {
            drain_target(engine, clock, target);
        });
        // Re-plan: a response ends a sample and schedules the next stimulus.
        SCB::set_pendst();
    }

    /// The engine's clock: produce a due stimulus, poll, arm the next
    /// wake-up. Pended by every other task after it fed the engine.
    #[task(binds = SysTick, priority = 3, shared = [engine, clock, target], local = [syst])]
    fn wake(cx: wake::Context) {
        let syst = cx.local.syst;
        syst.disable_counter();
        let (cycles, output) =
            (cx.shared.engine, cx.shared.clock, cx.shared.target).lock(|engine, clock, target| {
                // A few rounds at most: each either finds nothing due or makes
                // progress (a stimulus sent, a timeout or flush done).
                for _ in 0..4 {
                    drain_target(engine, clock, target);
                    if let Some(req) = engine.stimulus_request() {
                        let now = clock.now();
                        if now >= req.at {
                            if let Stimulus::Byte(b) = req.stimulus {
                                // The tick just before the write: the write is
                                // the start bit as far as QEMU is concerned.
                                let tick = clock.now();
                                if write_all(&mut target.tx, &[b]).is_err() {
                                    defmt::warn!("stimulus write failed");
                                }
                                engine.on_stimulus(tick, tick);
                            }
                            // An edge stimulus cannot be requested: the Hello
                            // does not announce GPIO_ECHO, so Configure refuses it.
                        }
                    }
                    let now = clock.now();
                    engine.poll(now);
                    let due = match (engine.next_deadline(), engine.stimulus_request()) {
                        (Some(d), Some(r)) => Some(d.min(r.at)),
                        (d, r) => d.or(r.map(|r| r.at)),
                    };
                    let output = engine.tx_pending() > 0;
                    match due {
                        Some(at) if at <= now => continue,
                        Some(at) => return (((at - now) * SYSTICK_HZ / TIMER_HZ as u64).max(1), output),
                        None => return (MAX_ALARM_CYCLES, output),
                    }
                }
                (1, engine.tx_pending() > 0)
            });
        if output {
            rtic::pend(Interrupt::EXTI0);
        }
        // Never sleep longer than the reload allows: the wake-up also keeps
        // the software counter extension fed.
        syst.set_reload(cycles.min(MAX_ALARM_CYCLES) as u32);
        syst.clear_current();
        syst.enable_counter();
    }

    /// Host link receive: frames from `latprobe`, garbage included.
    #[task(binds = USART1, priority = 2, shared = [engine, clock], local = [host_rx, host_rx_errors])]
    fn host_rx(cx: host_rx::Context) {
        let mut buf = [0u8; RX_CHUNK];
        let (n, errors) = latprobe_firmware::link::read_burst(cx.local.host_rx, &mut buf);
        *cx.local.host_rx_errors = cx.local.host_rx_errors.wrapping_add(errors);
        if n == 0 {
            return;
        }
        (cx.shared.engine, cx.shared.clock).lock(|engine, clock| {
            let now = clock.now();
            engine.on_host_bytes(&buf[..n], now);
        });
        SCB::set_pendst();
        rtic::pend(Interrupt::EXTI0);
    }

    /// Host link transmit: drain the engine's output queue. Lowest priority:
    /// QEMU's UART write blocks until the host reads.
    #[task(binds = EXTI0, priority = 1, shared = [engine], local = [host_tx])]
    fn host_tx(mut cx: host_tx::Context) {
        let mut buf = [0u8; 64];
        loop {
            let n = cx.shared.engine.lock(|e| e.read_tx(&mut buf));
            if n == 0 {
                break;
            }
            if write_all(cx.local.host_tx, &buf[..n]).is_err() {
                defmt::warn!("host link write failed");
            }
        }
    }
}
