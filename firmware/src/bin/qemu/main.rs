//! `qemu` board: the probe firmware for `qemu-system-arm -machine netduinoplus2`
//! (STM32F405), so that CI runs the real firmware binary end to end. It
//! runs the same capture loop as the Nucleo (`latprobe_firmware::hwloop`)
//! behind the same [`TimerHw`] seam; this file is the adapter and RTIC glue.
//!
//! ```text
//!  host (latprobe run) ══ USART1 ══▶ host_rx ─▶ Engine ─▶ host_tx (EXTI0) ══ USART1 ══▶ host
//!                                                 ▲
//!   priority 3: SysTick (wake), USART2 RX ── Front: bytes logged with the counter read
//!   priority 2: EXTI1 engine task (HwLoop::run) ◀── pend
//!  target (responder) ◀══ USART2 ══ stimulus byte (written by the loop)
//! ```
//!
//! What QEMU 7.2 models, and how it fits the seam (why the same trait and
//! not a sibling: the loop's planning, per-run line state, soft stimulus
//! ticks and byte delivery are the ones the Nucleo uses; only capture and
//! compare are missing, and the seam lets a board say "nothing latched"):
//!
//! - TIM2 counts at 1 GHz / (PSC + 1) of virtual time whatever RCC says, so
//!   PSC = 9 gives the same 100 MHz (10 ns) tick as the Nucleo. It has no
//!   input capture and no output compare, and its update interrupt is not
//!   tied to the counter's wrap (and storms once CNT passes ARR), so the
//!   counter is free-running with every timer interrupt off. The adapter
//!   raises the seam's overflow flag itself when a read is smaller than the
//!   one before; a wake-up at least every 100 ms keeps reads far closer
//!   together than the 43 s wrap period.
//! - No capture channel ([`LOOP`]`.response_capture` is false): an answer's
//!   tick is the counter read in the target line's receive interrupt, and
//!   the stimulus byte's tick the read right before its write (a soft
//!   tick). The Hello says `EMULATED` and not `HW_CAPTURE`: these figures
//!   are not physical. Tests check counts, never timing.
//! - No trigger pin (`--trigger-above`): QEMU models no output compare,
//!   so the capture loop decides in software (`TriggerOut::Software`: the
//!   engine's `trigger_due` when the engine task runs, after the answers)
//!   and the samples are flagged; there is nothing to drive.
//! - The wake-up compare is SysTick as a one-shot alarm: it runs at the
//!   modelled 168 MHz core clock (checked against TIM2 under `-icount
//!   shift=0`).
//! - A UART write is synchronous in QEMU (TXE is always set), and a UART
//!   receives one byte at a time, holding the next back until DR is read,
//!   so nothing is lost on either line as long as the host drains them.
#![no_std]
#![no_main]

#[path = "../common/mod.rs"]
mod common;

use cortex_m::peripheral::{syst::SystClkSource, SYST};
use defmt_semihosting as _;
use latprobe_firmware::boards::qemu::LOOP;
use latprobe_firmware::hwloop::seam::{Capture, Channel, OutputMode, Polarity, TimerHw};
use stm32f4xx_hal::pac::{TIM2, USART2};
use stm32f4xx_hal::serial::Tx;

/// TIM2 prescaler for a 100 MHz tick in QEMU's model.
const TIM2_PSC: u16 = 9;
/// SysTick (core clock) rate of QEMU's netduinoplus2.
const SYSTICK_HZ: u64 = 168_000_000;
/// Longest SysTick one-shot: its 24-bit reload, about 100 ms at 168 MHz.
const MAX_ALARM_CYCLES: u32 = 0x00ff_ffff;
/// SysTick cycles per timer tick as a reduced fraction (168/100 = 42/25).
const ALARM_NUM: u32 = (SYSTICK_HZ / gcd(SYSTICK_HZ, LOOP.timer_hz as u64)) as u32;
/// See [`ALARM_NUM`].
const ALARM_DEN: u32 = (LOOP.timer_hz as u64 / gcd(SYSTICK_HZ, LOOP.timer_hz as u64)) as u32;
/// The most ticks ahead whose cycles are computed: beyond, the longest alarm.
const MAX_ALARM_AHEAD: u32 = MAX_ALARM_CYCLES / ALARM_NUM * ALARM_DEN;
const _: () = assert!((MAX_ALARM_AHEAD as u64) * (ALARM_NUM as u64) <= u32::MAX as u64);

const fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
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

/// Where the CPU's time goes, in TIM2 ticks.
static METER: common::Meter<Tim2Cnt> = common::Meter::new();

/// TIM2's counter, read for the meter alone.
struct Tim2Cnt;

impl common::Counter for Tim2Cnt {
    #[inline(always)]
    fn read() -> u32 {
        // SAFETY: a read of TIM2's CNT register, which `QemuTimer::start` set
        // running before any task or the idle loop runs; reading CNT has no side
        // effect (RM0090 §18.4.10), so it cannot disturb the `QemuTimer` that
        // owns the timer, and the pointer is the PAC's fixed peripheral address.
        unsafe { (*TIM2::ptr()).cnt().read().bits() }
    }
}

/// QEMU's TIM2 counter, SysTick as the wake-up compare and the target
/// line's transmitter: this board's [`TimerHw`].
pub struct QemuTimer {
    tim: TIM2,
    syst: SYST,
    target_tx: Tx<USART2>,
    /// The last counter value read, to see a wrap.
    last: u32,
    /// A wrap was seen and not yet acknowledged: the seam's overflow flag.
    wrapped: bool,
}

impl core::fmt::Debug for QemuTimer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QemuTimer")
            .field("last", &self.last)
            .field("wrapped", &self.wrapped)
            .finish_non_exhaustive()
    }
}

impl QemuTimer {
    /// Start TIM2 free-running at 100 MHz, every interrupt off, and SysTick
    /// as the alarm.
    fn start(tim: TIM2, mut syst: SYST, target_tx: Tx<USART2>) -> Self {
        tim.cr1().write(|w| w.cen().clear_bit());
        tim.dier().reset();
        tim.psc().write(|w| w.psc().set(TIM2_PSC));
        tim.arr().write(|w| w.arr().set(u32::MAX));
        // Load PSC and zero the counter.
        tim.egr().write(|w| w.ug().set_bit());
        tim.sr().reset();
        tim.cr1().write(|w| w.cen().set_bit());
        syst.set_clock_source(SystClkSource::Core);
        syst.enable_interrupt();
        syst.set_reload(MAX_ALARM_CYCLES);
        syst.clear_current();
        // Enabled once: each alarm after is two writes (`alarm`).
        syst.enable_counter();
        Self { tim, syst, target_tx, last: 0, wrapped: false }
    }

    fn read(&mut self) -> u32 {
        let raw = self.tim.cnt().read().bits();
        if raw < self.last {
            self.wrapped = true;
        }
        self.last = raw;
        raw
    }

    /// SysTick fires once after `cycles` (it reloads the same period, and
    /// is set again by every `set_compare` or wake-up). Two writes, the
    /// counter left running: a write to SYST_CVR clears it and COUNTFLAG,
    /// and the counter loads SYST_RVR on the next clock without raising
    /// the exception (ARMv7-M ARM B3.3.1; QEMU's `armv7m_systick.c` does
    /// the same). A reload that fires between the two writes raises the
    /// exception with COUNTFLAG then cleared: `take_compare` says no wake.
    fn alarm(&mut self, cycles: u32) {
        self.syst.set_reload(cycles.clamp(1, MAX_ALARM_CYCLES));
        self.syst.clear_current();
    }
}

impl TimerHw for QemuTimer {
    fn counter(&mut self) -> u32 {
        self.read()
    }

    fn overflow_pending(&mut self) -> bool {
        // No read of its own: the flag is a wrap that a read has seen, and
        // the front reads the counter right before it asks (`Front::now`),
        // so a wrap between two reads is seen by the second, whose value
        // is then in the counter's lower half: placed after the wrap, as
        // the extender's rule wants. (A read here too cost three register
        // reads per `now`, on the hottest path of the loop.)
        self.wrapped
    }

    fn clear_overflow(&mut self) {
        self.wrapped = false;
    }

    fn take_capture(&mut self, _ch: Channel) -> Option<Capture> {
        None
    }

    fn set_capture(&mut self, _ch: Channel, _polarity: Option<Polarity>) {}

    fn take_compare(&mut self, ch: Channel) -> bool {
        if ch != Channel::Wake || !self.syst.has_wrapped() {
            return false;
        }
        // Fired: until the loop sets the next one, the keep-alive period,
        // so the counter is still read often enough to see its wraps.
        self.alarm(MAX_ALARM_CYCLES);
        true
    }

    fn compare_pending(&mut self, _ch: Channel) -> bool {
        false
    }

    fn set_compare(&mut self, ch: Channel, raw: u32) {
        if ch == Channel::Wake {
            let ahead = raw.wrapping_sub(self.read());
            // SysTick cycles from timer ticks in 32 bits (a 64-bit
            // division is a library call): ahead × 42 / 25 for 168 MHz
            // from 100 MHz, and anything past the longest alarm clamped
            // before it could overflow.
            let cycles =
                if ahead > MAX_ALARM_AHEAD { MAX_ALARM_CYCLES } else { ahead * ALARM_NUM / ALARM_DEN };
            self.alarm(cycles);
        }
    }

    fn set_compare_irq(&mut self, ch: Channel, on: bool) {
        if ch == Channel::Wake && !on {
            // No deadline: wake anyway every 100 ms to see the wraps.
            self.alarm(MAX_ALARM_CYCLES);
        }
    }

    fn set_output(&mut self, _mode: OutputMode) {}

    fn output_level(&mut self) -> bool {
        false
    }

    fn send_byte(&mut self, byte: u8) -> bool {
        use embedded_hal_nb::serial::Write as _;
        self.target_tx.write(byte).is_ok()
    }
}

#[rtic::app(device = stm32f4xx_hal::pac, peripherals = true)]
mod app {
    use latprobe_firmware::boards::qemu::{ARM_LEAD_TICKS, LOOP, TIMER_HZ};
    use latprobe_firmware::uart::write_all;
    use latprobe_firmware::{BoardInfo, Engine, HwLoop, Timer, TimerBits, FIRMWARE_VERSION};
    use latprobe_protocol::Capabilities;
    use stm32f4xx_hal::{
        pac::{Interrupt, USART1, USART2},
        prelude::*,
        rcc::Config,
        serial::{self, Rx, Tx},
    };

    use super::common;
    use super::{QemuTimer, BAUD, METER, TX_QUEUE};
    use latprobe_firmware::cpu::Part;

    /// Bytes taken from a UART per interrupt before handing them on; the
    /// bound keeps a stuck error flag from wedging the interrupt.
    const RX_CHUNK: usize = 32;

    #[shared]
    struct Shared {
        engine: Engine<TX_QUEUE>,
        timer: Timer<QemuTimer>,
    }

    #[local]
    struct Local {
        host_rx: Rx<USART1>,
        host_tx: Tx<USART1>,
        host_rx_errors: u32,
        target_rx: Rx<USART2>,
        lp: HwLoop,
        was_running: bool,
        /// The run's CPU cost, logged at its end.
        run_meter: common::RunMeter,
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
        let timer = Timer::new(QemuTimer::start(dp.TIM2, cx.core.SYST, target_tx), LOOP.timer_bits);

        // TRIGGER: decided in software by the capture loop
        // (`TriggerOut::Software`); QEMU models no pin for it.
        let caps =
            Capabilities::UART_ECHO | Capabilities::PERIODIC | Capabilities::EMULATED | Capabilities::TRIGGER;
        // No uart-echo floor: QEMU's UART has no bit timing, an echo can come
        // back faster than a byte would take on a wire.
        let engine =
            Engine::new(BoardInfo::new("qemu", TIMER_HZ, TimerBits::B32, caps).with_arm_lead(ARM_LEAD_TICKS));
        defmt::info!(
            "boot: latprobe-firmware {=str} on qemu (netduinoplus2), timer {=u32} Hz, emulated",
            FIRMWARE_VERSION,
            TIMER_HZ
        );
        // The boot Hello is queued: send it, and plan the first wake-up.
        rtic::pend(Interrupt::EXTI0);
        rtic::pend(Interrupt::EXTI1);
        (
            Shared { engine, timer },
            Local {
                host_rx,
                host_tx,
                host_rx_errors: 0,
                target_rx,
                lp: HwLoop::new(LOOP),
                was_running: false,
                run_meter: common::RunMeter::default(),
            },
        )
    }

    #[idle]
    fn idle(_: idle::Context) -> ! {
        loop {
            METER.sleep();
        }
    }

    /// Target line receive: each byte logged with the counter read when it
    /// is taken (a response in echo modes, an edge in periodic mode).
    #[task(binds = USART2, priority = 3, shared = [timer], local = [target_rx])]
    fn target_rx(mut cx: target_rx::Context) {
        METER.enter(Part::Capture);
        let rx = cx.local.target_rx;
        cx.shared.timer.lock(|t| t.on_target_rx(rx, latprobe_firmware::RX_BURST_ONE_BYTE_DR));
        rtic::pend(Interrupt::EXTI1);
        METER.leave();
    }

    /// The wake-up alarm.
    #[task(binds = SysTick, priority = 3, shared = [timer])]
    fn wake(mut cx: wake::Context) {
        METER.enter(Part::Wake);
        if cx.shared.timer.lock(|t| t.on_timer_interrupt()) {
            rtic::pend(Interrupt::EXTI1);
        }
        METER.leave();
    }

    /// The engine task: the capture loop hands the logged bytes to the
    /// engine, polls it, sends due stimuli and sets the next alarm.
    #[task(binds = EXTI1, priority = 2, shared = [engine, timer], local = [lp, was_running, run_meter])]
    fn engine_task(cx: engine_task::Context) {
        METER.enter(Part::Engine);
        let lp = cx.local.lp;
        let mut timer = cx.shared.timer;
        let mut engine = cx.shared.engine;
        let (output, running) = common::run_engine(lp, &mut engine, &mut timer);
        cx.local.run_meter.pass(&METER, running, || engine.lock(|e| e.totals().taken), "ticks");
        if *cx.local.was_running && !running {
            // Under -icount shift=0 one instruction is 1 ns of virtual time
            // and a tick 10 ns: ticks x 10 = instructions.
            let s = lp.stats();
            defmt::info!(
                "capture path: byte read to sample queued max {=u32} ticks = {=u32} instructions (-icount shift=0), last {=u32} ticks, min {=u32} ticks",
                s.capture_cost_max,
                s.capture_cost_max.saturating_mul(10),
                s.capture_cost_last,
                s.capture_cost_min
            );
        }
        *cx.local.was_running = running;
        if output {
            rtic::pend(Interrupt::EXTI0);
        }
        METER.leave();
    }

    /// Host link receive: frames from `latprobe`, garbage included.
    #[task(binds = USART1, priority = 2, shared = [engine, timer], local = [host_rx, host_rx_errors])]
    fn host_rx(cx: host_rx::Context) {
        METER.enter(Part::HostRx);
        host_rx_body(cx);
        METER.leave();
    }

    fn host_rx_body(cx: host_rx::Context) {
        use rtic::Mutex as _;
        let mut buf = [0u8; RX_CHUNK];
        let (n, errors) = latprobe_firmware::uart::read_burst(cx.local.host_rx, &mut buf);
        *cx.local.host_rx_errors = cx.local.host_rx_errors.wrapping_add(errors);
        let mut timer = cx.shared.timer;
        let mut engine = cx.shared.engine;
        if errors > 0 {
            // To the host, in every Heartbeat and Stopped.
            engine.lock(|e| e.count_host_rx_errors(errors));
        }
        if n == 0 {
            return;
        }
        common::host_bytes(&mut timer, &mut engine, &buf[..n]);
        rtic::pend(Interrupt::EXTI1);
        rtic::pend(Interrupt::EXTI0);
    }

    /// Host link transmit: drain the engine's output queue. Lowest priority:
    /// QEMU's UART write blocks until the host reads.
    #[task(binds = EXTI0, priority = 1, shared = [engine], local = [host_tx])]
    fn host_tx(mut cx: host_tx::Context) {
        METER.enter(Part::HostTx);
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
        METER.leave();
    }
}
