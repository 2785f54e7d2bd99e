//! `nucleo-f411re` board: the reference probe. STM32F411RE at 100 MHz, TIM2
//! (32 bits, 10 ns ticks) drives the stimulus by output compare and
//! timestamps every answer by input capture on the same counter, so no
//! interrupt latency enters a figure. This file is pins, clocks, DMA and
//! RTIC glue: every timing decision is in `latprobe_firmware::hwloop`,
//! behind the [`TimerHw`] seam implemented here with register accesses.
//! Register references are to RM0383.
//!
//! ```text
//!            TIM2 @ 100 MHz (PSC 0, ARR 0xFFFF_FFFF)
//!   CH1 PA0 (A0) ── output compare ──▶ stimulus edge (gpio-echo / GPIO loopback)
//!   CH2 PA1 (A1) ◀─ input capture ──── response edge or RX start bit; periodic edges
//!   CH3 PB10 (D6) ◀─ input capture ─── our own TX start bit (uart-echo stimulus)
//!   CH4 (no pin)  ── compare ─────────▶ wake-up: the engine's next deadline
//!   update (wrap) ────────────────────▶ TickExtender::on_overflow
//!   TIM3 CH1 PB4 (D5) ── compare ─────▶ trigger output (`--trigger-above`): TIM3
//!                 counts TIM2's ticks mod 2^16 (its slave, started by TIM2's CEN)
//!
//!   USART1 PA9 (D8) TX ─▶ target RX     PA10 (D2) RX ◀─ target TX   (target line)
//!   USART2 PA2/PA3 ═ ST-LINK virtual COM port, 921600 Bd (host link): TX by DMA1 stream 6,
//!                    RX by DMA1 stream 5 (circular) into a 256-byte ring (`latprobe_firmware::hostrx`)
//!   RTT (SWD, the same ST-LINK): up 0 "defmt" log, up 1 "latprobe" frames, down 0 "latprobe" host bytes
//!   LD2 PA5: on while a measurement runs    PA8 (D7): scope trigger, high from stimulus to answer
//!   IWDG 1 s (LSI), fed by every engine pass; a reset by it is told after every Hello
//!
//!   priority 3: TIM2, TIM3, USART1 RX ── Front: read captures, then `now`; log ──┐ pend
//!               DMA1 stream 5 (host RX ring: count the half/complete events, pend USART2)
//!   priority 2: EXTI1 (engine task: HwLoop::run; feeds the IWDG), USART2 (host ◀──┘
//!               RX ring consumer: IDLE, errors, and the pends), SysTick 1 kHz
//!               (RTT down channel: host link over SWD; pends USART2, and EXTI1
//!               every 100 ms)
//!   priority 1: DMA1 stream 6 (host link TX; the same bytes to RTT up 1)
//! ```
//!
//! The engine (and its batch encoding: postcard, CRC, COBS) runs at
//! priority 2, so the capture interrupts are never held up by it.
//!
//! Both host links carry the same frames and neither waits for the other:
//! the UART sends whatever the engine queued whether or not anything reads
//! the virtual COM port, and each chunk goes to RTT up channel 1 in
//! `NoBlockSkip` mode, whole or (when the host does not read RTT fast
//! enough, or not at all) not at all; the host's decoder counts the frames
//! a skipped chunk cut, and the sequence numbers the samples it lost. Host
//! bytes from either link go into the one engine: drive a probe from one
//! host at a time.
#![no_std]
#![no_main]

use panic_probe as _;

mod boot;
mod bus;
#[path = "../common/mod.rs"]
mod common;

/// Output queue size of the engine, in bytes.
const TX_QUEUE: usize = 2048;
/// Largest chunk the host-link DMA sends at once.
const DMA_CHUNK: usize = 256;
/// RTT up channel 1 ("latprobe", the frames): 45 ms of a full 921600 Bd
/// stream, so a host polling over SWD every 10 ms never falls behind.
const RTT_FRAMES: usize = 4096;
/// RTT down channel 0 ("latprobe", host bytes): a few Configure frames.
const RTT_HOST: usize = 256;
/// SysTick reload for its 1 kHz tick (SysTick counts the 100 MHz core
/// clock): the RTT down channel's poll, the host ring's watch (a burst
/// that ended while `UsartWatch` had IDLEIE off waits at most this), and
/// every [`FEED_TICKS`] an engine pass.
const SYSTICK_RELOAD: u32 = 100_000_000 / 1000 - 1;
/// SysTick ticks between the engine passes it pends: an idle probe's
/// engine runs (and feeds the 1 s watchdog) every 100 ms.
const FEED_TICKS: u32 = 100;

/// What this ELF is, for `latprobe flash` to read before it touches a probe
/// (the layout is `latprobe_firmware::buildinfo`'s, which the host reads
/// too): an ELF built for another board or protocol is refused there, not
/// discovered after flashing.
#[no_mangle]
pub static LATPROBE_BUILD: [u8; latprobe_firmware::buildinfo::LEN] = latprobe_firmware::buildinfo::encode(
    "nucleo-f411re",
    latprobe_firmware::FIRMWARE_VERSION,
    latprobe_protocol::PROTOCOL_VERSION,
);

/// CRC-32 (the protocol's) of this firmware's image in flash: from the
/// vector table at the start of flash (memory.x, RM0383 §3.3) to the end of
/// `.data`'s load image, as the host computes it from the ELF
/// (`FirmwareElf::image_crc`), so the Hello tells which build runs.
fn image_crc() -> u32 {
    extern "C" {
        static __sidata: u8;
        static __sdata: u8;
        static __edata: u8;
    }
    const FLASH_START: usize = 0x0800_0000;
    // Only the addresses of these cortex-m-rt linker symbols are taken,
    // never their contents (addr_of! of an extern static is safe).
    let (sidata, sdata, edata) = (
        core::ptr::addr_of!(__sidata) as usize,
        core::ptr::addr_of!(__sdata) as usize,
        core::ptr::addr_of!(__edata) as usize,
    );
    let end = sidata + (edata - sdata);
    // SAFETY: flash is memory-mapped and always readable; [FLASH_START, end)
    // is this firmware's own image (vector table to the end of .data's load
    // copy), inside the 512 KiB of flash memory.x declares, and nothing
    // writes flash while the firmware runs.
    let image = unsafe { core::slice::from_raw_parts(FLASH_START as *const u8, end - FLASH_START) };
    latprobe_protocol::framing::CRC.checksum(image)
}

/// Where the CPU's time goes, in core cycles (DWT CYCCNT, enabled in `init`;
/// reading it has no side effect, ARMv7-M ARM C1.8.8).
static METER: common::Meter<common::CycleCount> = common::Meter::new();

#[rtic::app(device = stm32f4xx_hal::pac, peripherals = true)]
mod app {
    use cortex_m::peripheral::DWT;
    use latprobe_firmware::boards::nucleo_f411re::{ARM_LEAD_TICKS, HOST_BAUD, LOOP, TARGET_BAUD, TIMER_HZ};
    use latprobe_firmware::{BoardInfo, Engine, HwLoop, Timer, TimerBits, FIRMWARE_VERSION};
    use latprobe_protocol::Capabilities;
    use stm32f4xx_hal::{
        gpio::{Output, PA5},
        pac::{self, Interrupt, DMA1, USART1, USART2},
        prelude::*,
        rcc::Enable,
        serial::{self, Rx},
    };

    use rtt_target::{ChannelMode, DownChannel, UpChannel};

    use latprobe_firmware::board::nucleo::usart2::UsartWatch;
    use latprobe_firmware::board::nucleo::{gpio, iwdg, Tim2};

    use super::boot;
    use super::bus::{host_rx_dma_events, HostRing, HostRxRegs, Iwdg, Regs, HOST_RING, HOST_RX_DMA_ERRORS};
    use super::common;
    use super::{DMA_CHUNK, FEED_TICKS, METER, RTT_FRAMES, RTT_HOST, SYSTICK_RELOAD, TX_QUEUE};
    use core::sync::atomic::Ordering;
    use latprobe_firmware::cpu::Part;
    use latprobe_firmware::hostrx::RingReader;

    /// Bytes taken from a UART per interrupt at most: a stuck error flag
    /// must not wedge the interrupt.
    const RX_BURST: usize = 32;

    #[shared]
    struct Shared {
        engine: Engine<TX_QUEUE>,
        timer: Timer<Tim2<Regs>>,
    }

    #[local]
    struct Local {
        host_ring: RingReader<HOST_RING>,
        host_watch: UsartWatch,
        host_rx_errors: u32,
        target_rx: Rx<USART1>,
        dma: DMA1,
        led: PA5<Output>,
        lp: HwLoop,
        costs: Costs,
        rtt_frames: UpChannel,
        rtt_host: DownChannel,
    }

    /// DWT cycle counts of the two halves of the capture path, per run.
    #[derive(Debug, Default)]
    pub struct Costs {
        engine_task_max: u32,
        was_running: bool,
        /// The run's CPU by part, logged at its end.
        run_meter: common::RunMeter,
    }

    #[init]
    fn init(cx: init::Context) -> (Shared, Local) {
        let dp = cx.device;
        let mut core = cx.core;
        let mut rcc = dp.RCC.constrain();
        // The outputs first, before RTT and before any wait: PB4 must not
        // sit high on its NJTRST pull-up, nor PA0 and PA9 float, for the
        // HSE wait's up to 0.5 s.
        let (gpioa, _gpiob) = boot::park_pins(dp.GPIOA, dp.GPIOB, &mut rcc);
        // RTT next, so that a panic during the clock set-up is logged.
        let rtt = rtt_target::rtt_init! {
            up: {
                0: { size: 1024, mode: ChannelMode::NoBlockSkip, name: "defmt" }
                1: { size: RTT_FRAMES, mode: ChannelMode::NoBlockSkip, name: "latprobe" }
            }
            down: {
                0: { size: RTT_HOST, mode: ChannelMode::NoBlockSkip, name: "latprobe" }
            }
        };
        rtt_target::set_defmt_channel(rtt.up.0);
        // Keep LATPROBE_BUILD in the image: nothing else reads it, and the
        // linker drops what nothing reads.
        // SAFETY: a read of an initialised static.
        let build_protocol = unsafe {
            core::ptr::read_volatile(&super::LATPROBE_BUILD[latprobe_firmware::buildinfo::PROTOCOL_AT])
        };
        debug_assert_eq!(build_protocol, latprobe_protocol::PROTOCOL_VERSION);
        // The cycle counter for the capture-path figures.
        core.DCB.enable_trace();
        core.DWT.enable_cycle_counter();
        // What reset the chip, before anything could clear it.
        let by_watchdog = boot::take_reset_cause(&rcc);

        let mut rcc = boot::clocks(&dp.PWR, rcc);
        boot::debug_and_io(&dp.DBGMCU, &dp.SYSCFG, &mut rcc);

        let led = gpioa.pa5.into_push_pull_output();
        let host = dp
            .USART2
            .serial((gpioa.pa2, gpioa.pa3), serial::Config::default().baudrate(HOST_BAUD.bps()), &mut rcc)
            .expect("USART2 at HOST_BAUD");
        let target = dp
            .USART1
            .serial((gpioa.pa9, gpioa.pa10), serial::Config::default().baudrate(TARGET_BAUD.bps()), &mut rcc)
            .expect("USART1 at TARGET_BAUD");
        let (_host_tx, _host_rx): (serial::Tx<USART2>, Rx<USART2>) = host.split();
        let (target_tx, mut target_rx) = target.split();
        target_rx.listen();
        boot::host_link_dma(&mut rcc);

        pac::TIM2::enable(&mut rcc);
        // TIM3's clock before TIM2 starts it (RM0383 §13.3.15's note).
        pac::TIM3::enable(&mut rcc);
        let mut regs = Regs::new(dp.TIM2, dp.TIM3, target_tx);
        // After the HAL's USART1 set-up (PA9/PA10 at low speed, no pull):
        // the pins end as the lib's tests check them.
        gpio::configure_pins(&mut regs);
        let (timer, trigger_ok) = start_timers(regs);
        let mut engine = engine(trigger_ok);
        if by_watchdog {
            defmt::warn!("{=str}", iwdg::BOOT_NOTE);
            engine.set_boot_note(iwdg::BOOT_NOTE);
        }
        defmt::info!(
            "boot: latprobe-firmware {=str} on nucleo-f411re, timer {=u32} Hz, host link {=u32} Bd",
            FIRMWARE_VERSION,
            TIMER_HZ,
            HOST_BAUD
        );
        boot::start_watchdog();
        // SysTick: the RTT down channel (which raises no interrupt), the
        // host ring's watch, and an engine pass every 100 ms (the feed).
        core.SYST.set_clock_source(cortex_m::peripheral::syst::SystClkSource::Core);
        core.SYST.set_reload(SYSTICK_RELOAD);
        core.SYST.clear_current();
        core.SYST.enable_interrupt();
        core.SYST.enable_counter();
        rtic::pend(Interrupt::DMA1_STREAM6);
        rtic::pend(Interrupt::EXTI1);
        (
            Shared { engine, timer },
            Local {
                host_ring: RingReader::new(),
                host_watch: UsartWatch::new(),
                host_rx_errors: 0,
                target_rx,
                dma: dp.DMA1,
                led,
                lp: HwLoop::new(LOOP),
                costs: Costs::default(),
                rtt_frames: rtt.up.1,
                rtt_host: rtt.down.0,
            },
        )
    }

    /// TIM2 started, TIM3 in step with it or not (no trigger output then).
    fn start_timers(regs: Regs) -> (Timer<Tim2<Regs>>, bool) {
        let hw = Tim2::start(regs);
        let ([a, b, c], trigger_ok) = (hw.step_check(), hw.trigger_in_step());
        if trigger_ok {
            defmt::info!("trigger: TIM3 in step with TIM2 (TIM2 {=u32}, TIM3 {=u32}, TIM2 {=u32})", a, b, c);
        } else {
            defmt::warn!(
                "trigger: TIM3 not in step with TIM2 (TIM2 {=u32}, TIM3 {=u32}, TIM2 {=u32}): no trigger output",
                a,
                b,
                c
            );
        }
        (Timer::new(hw, LOOP.timer_bits), trigger_ok)
    }

    /// The engine, with the board's facts; the trigger only when TIM3
    /// started in step.
    fn engine(trigger_ok: bool) -> Engine<TX_QUEUE> {
        let caps = Capabilities::GPIO_ECHO
            | Capabilities::UART_ECHO
            | Capabilities::PERIODIC
            | Capabilities::LOOPBACK
            | Capabilities::HW_CAPTURE;
        // PB4 (TIM3 CH1), `--trigger-above`: only when TIM3 started in step.
        let caps = if trigger_ok { caps | Capabilities::TRIGGER } else { caps };
        // A uart-echo answer faster than one byte at the target line's baud
        // is an earlier stimulus's late echo; a UART answer reaches the engine
        // up to a byte time and the task's delay after its start-bit capture.
        Engine::new(
            BoardInfo::new("nucleo-f411re", TIMER_HZ, TimerBits::B32, caps)
                .with_uart_echo_floor(TARGET_BAUD)
                .with_target_baud(TARGET_BAUD)
                .with_build_id(super::image_crc())
                .with_arm_lead(ARM_LEAD_TICKS)
                .with_response_lag((2 * LOOP.byte_ticks()) as u32),
        )
    }

    #[idle]
    fn idle(_: idle::Context) -> ! {
        loop {
            METER.sleep();
        }
    }

    /// TIM2: wrap, stimulus compare, captures, wake-up: read and logged, a
    /// due stimulus byte written; the engine task pended when it must run.
    #[task(binds = TIM2, priority = 3, shared = [timer])]
    fn tim2(cx: tim2::Context) {
        timer_interrupt(cx.shared.timer);
    }

    /// TIM3: the trigger's compare (its rise and fall), for TIM2's top half.
    #[task(binds = TIM3, priority = 3, shared = [timer])]
    fn tim3(cx: tim3::Context) {
        timer_interrupt(cx.shared.timer);
    }

    /// Either timer's interrupt: the front logs what latched and says
    /// whether the engine task must run.
    fn timer_interrupt(mut timer: impl rtic::Mutex<T = Timer<Tim2<Regs>>>) {
        METER.enter(Part::Capture);
        if timer.lock(|t| t.on_timer_interrupt()) {
            rtic::pend(Interrupt::EXTI1);
        }
        METER.leave();
    }

    /// Target line receive (USART1): each answer byte logged after the
    /// start-bit captures latched before it, with the `now` read after them.
    #[task(binds = USART1, priority = 3, shared = [timer], local = [target_rx])]
    fn target_rx(mut cx: target_rx::Context) {
        METER.enter(Part::Capture);
        let rx = cx.local.target_rx;
        cx.shared.timer.lock(|t| t.on_target_rx(rx, latprobe_firmware::RX_BURST_ONE_BYTE_DR));
        rtic::pend(Interrupt::EXTI1);
        METER.leave();
    }

    /// The engine task: the capture loop hands the logged events to the
    /// engine, polls it and carries out its requests on TIM2.
    #[task(binds = EXTI1, priority = 2, shared = [engine, timer], local = [lp, led, costs])]
    fn engine_task(cx: engine_task::Context) {
        METER.enter(Part::Engine);
        let lp = cx.local.lp;
        let costs = cx.local.costs;
        let mut timer = cx.shared.timer;
        let mut engine = cx.shared.engine;
        let start = DWT::cycle_count();
        let (output, running) = common::run_engine(lp, &mut engine, &mut timer);
        // The engine made progress: the watchdog is fed (RM0383 §17.4.1).
        iwdg::IwdgRegs::kr(&mut Iwdg, iwdg::key::RELOAD);
        let cycles = DWT::cycle_count().wrapping_sub(start);
        if running {
            if !costs.was_running {
                costs.engine_task_max = 0;
            }
            costs.engine_task_max = costs.engine_task_max.max(cycles);
        } else if costs.was_running {
            // TIM2 counts at SYSCLK: its ticks are core cycles.
            let s = lp.stats();
            defmt::info!(
                "capture path: latch to sample queued max {=u32} cycles (last {=u32}, min {=u32}); engine task max {=u32} cycles (DWT); {=u32} soft stimulus ticks, {=u32} skew-clamped, {=u32} events lost",
                s.capture_cost_max,
                s.capture_cost_last,
                s.capture_cost_min,
                costs.engine_task_max,
                s.soft_stimuli,
                s.skew_clamped,
                s.lost_events
            );
        }
        costs.was_running = running;
        costs.run_meter.pass(&METER, running, || engine.lock(|e| e.totals().taken), "cycles");
        if running {
            cx.local.led.set_high();
        } else {
            cx.local.led.set_low();
        }
        if output {
            rtic::pend(Interrupt::DMA1_STREAM6);
        }
        METER.leave();
    }

    /// Host link receive, the ring's events (DMA1 stream 5): counted at
    /// once, above the engine, so that a consumer held up is seen to fall a
    /// ring behind (`hostrx::RingReader`); the consumer is pended.
    #[task(binds = DMA1_STREAM5, priority = 3)]
    fn host_rx_dma(_: host_rx_dma::Context) {
        METER.enter(Part::HostRx);
        host_rx_dma_events();
        rtic::pend(Interrupt::USART2);
        METER.leave();
    }

    /// Host link receive (USART2, from the ST-LINK VCP), the ring's
    /// consumer: on IDLE (a burst ended), on a USART error, pended by the
    /// ring's events and by every SysTick (the watch's pass). At the engine's priority: the DMA takes each byte
    /// within nanoseconds, so the ring (2.78 ms) waits for it.
    #[task(binds = USART2, priority = 2, shared = [engine, timer], local = [host_ring, host_watch, host_rx_errors])]
    fn host_rx(cx: host_rx::Context) {
        METER.enter(Part::HostRx);
        host_rx_drain(cx);
        METER.leave();
    }

    fn host_rx_drain(cx: host_rx::Context) {
        let (mut timer, mut engine) = (cx.shared.timer, cx.shared.engine);
        // SR only, never DR: the DMA's next read clears IDLE and the errors
        // (`UsartWatch`), so no byte can be taken from under the DMA.
        let mut errors = cx.local.host_watch.poll(&mut HostRxRegs).errors;
        errors += HOST_RX_DMA_ERRORS.swap(0, Ordering::Relaxed);
        let mut buf = [0u8; RX_BURST];
        errors += cx.local.host_ring.drain(&mut HostRing, &mut buf, |bytes| {
            host_bytes(&mut timer, &mut engine, bytes);
        });
        if errors > 0 {
            report_rx_errors(&mut engine, cx.local.host_rx_errors, errors);
        }
    }

    /// The host link's receive errors (USART errors, ring overruns, DMA
    /// errors): the one place they reach the engine, which counts them in
    /// `Anomalies::host_rx_errors` (every Heartbeat and Stopped).
    fn report_rx_errors(engine: &mut impl rtic::Mutex<T = Engine<TX_QUEUE>>, total: &mut u32, new: u32) {
        *total = total.wrapping_add(new);
        engine.lock(|e| e.count_host_rx_errors(new));
        defmt::warn!("host link: {=u32} receive errors ({=u32} so far)", new, *total);
    }

    /// Bytes from the host, by either link: stamped with `now`, fed to the
    /// engine, then the engine task (to re-plan) and the sender pended.
    fn host_bytes(
        mut timer: impl rtic::Mutex<T = Timer<Tim2<Regs>>>,
        mut engine: impl rtic::Mutex<T = Engine<TX_QUEUE>>,
        bytes: &[u8],
    ) {
        common::host_bytes(&mut timer, &mut engine, bytes);
        rtic::pend(Interrupt::EXTI1);
        rtic::pend(Interrupt::DMA1_STREAM6);
    }

    /// SysTick, 1 kHz. Host link over RTT: host bytes from down channel 0
    /// go to the engine exactly as USART2's do. The USART2 ring's consumer
    /// is pended (its `UsartWatch` pass), and every `FEED_TICKS` the engine
    /// task: an idle probe's engine runs, and feeds the watchdog, every
    /// 100 ms.
    #[task(binds = SysTick, priority = 2, shared = [engine, timer], local = [rtt_host, ticks: u32 = 0])]
    fn rtt_rx(cx: rtt_rx::Context) {
        METER.enter(Part::HostRx);
        let mut buf = [0u8; RX_BURST];
        let n = cx.local.rtt_host.read(&mut buf);
        if n > 0 {
            host_bytes(cx.shared.timer, cx.shared.engine, &buf[..n]);
        }
        rtic::pend(Interrupt::USART2);
        *cx.local.ticks += 1;
        if *cx.local.ticks == FEED_TICKS {
            *cx.local.ticks = 0;
            rtic::pend(Interrupt::EXTI1);
        }
        METER.leave();
    }

    /// Host link transmit: DMA1 stream 6 sends the engine's output in chunks
    /// copied to a buffer of this task, and the same chunk goes to RTT up
    /// channel 1 (whole, or skipped when the host does not read RTT). Runs
    /// on the stream's completion and whenever another task queued output
    /// (pended).
    #[task(binds = DMA1_STREAM6, priority = 1, shared = [engine], local = [dma, rtt_frames, buf: [u8; DMA_CHUNK] = [0; DMA_CHUNK]])]
    fn host_tx(cx: host_tx::Context) {
        METER.enter(Part::HostTx);
        host_tx_send(cx);
        METER.leave();
    }

    fn host_tx_send(mut cx: host_tx::Context) {
        use rtic::Mutex as _;
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
        // Never waits: NoBlockSkip writes all n bytes or none.
        cx.local.rtt_frames.write(&buf[..n]);
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
        // The copy into `buf` must be done before the stream may read it:
        // no compiler reordering past the enable (RM0383 §9.3.17 enables
        // the stream last; stm32f4xx-hal 0.23's dma/mod.rs fences the same
        // way before its enables). The Cortex-M4 itself does not reorder
        // its memory transfers and has no data cache (ARM AN321), so no
        // DMB is needed beside it.
        core::sync::atomic::compiler_fence(Ordering::SeqCst);
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
