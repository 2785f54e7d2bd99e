//! `rp2040-pico` board: the Raspberry Pi Pico (RP2040 at 125 MHz). PIO0's
//! four state machines count one 62.5 MHz tick in step: they make the
//! stimulus edge when the count reaches its target and push the count at
//! every edge of the response line and of our own TX pin, so no CPU is in
//! the timing path. This file is pins, clocks, USB and RTIC glue: every
//! timing decision is in `latprobe_firmware::hwloop`, behind the
//! [`TimerHw`](latprobe_firmware::TimerHw) seam that
//! `latprobe_firmware::board::pico::PioTimer` implements. References are to
//! the RP2040 datasheet.
//!
//! ```text
//!   GP2  (pin 4)  ── PIO0 SM3 ──▶ stimulus edge (gpio-echo, GPIO loopback)
//!   GP3  (pin 5)  ◀─ PIO0 SM1 ─── response edge; periodic edges
//!   GP4  (pin 6)  UART1 TX ─▶ target RX; PIO0 SM2 times its start bits (no wire)
//!   GP5  (pin 7)  UART1 RX ◀─ target TX; PIO0 SM1 times its start bits in UART runs
//!   GP6  (pin 9)  ── PIO1 SM0 ──▶ trigger out (`--trigger-above`): high 10 µs from stimulus + threshold + 1 tick;
//!                 PIO1 SM1 lets it go on the answer's edge (one stimulus in flight)
//!   USB           CDC ACM: the host link (`latprobe run --port /dev/ttyACM0`)
//!   GP0/GP1       UART0 TX/RX, 921600 Bd: the host link through a debug probe's UART bridge
//!   GP25          LED: on while a measurement runs
//!   RTT (SWD)     up 0 "defmt" log, up 1 "latprobe" frames, down 0 "latprobe" host bytes
//!
//!   priority 3: PIO0_IRQ_0 (edge words, the stimulus flag), PIO1_IRQ_0 (the trigger's edges), TIMER_IRQ_0 (wake-up),
//!               UART1_IRQ (target bytes) ── Front: words, flags, then `now` ──┐ pend
//!   priority 2: SW0_IRQ (engine task: HwLoop::run)                       ◀──┘
//!               USBCTRL_IRQ (USB: host bytes in, frames out to USB, UART0's ring and RTT up 1)
//!               UART0_IRQ (the UART0 host link: bytes in, the ring out)
//!   priority 1: SysTick 100 Hz (RTT down channel: host bytes over SWD)
//! ```
//!
//! USB shares the engine's priority, and wins a tie (the NVIC takes the
//! lower IRQ number, 5 before 26): an engine task busy at a short interval
//! can delay the frames by one of its runs, never starve them.
//!
//! The links carry the same frames and none waits for another
//! (`latprobe_firmware::links`): each chunk goes to RTT up channel 1 and to
//! UART0's 1 KiB ring whole or not at all (RTT's `NoBlockSkip`; the ring
//! drains at 921600 Bd, faster than the engine fills it, about 8 800
//! samples/s), and to USB's own 8 KiB ring while a host has the CDC port
//! open (DTR set: Linux's cdc_acm sets it on open, `latprobe` asserts it
//! too). A USB host that stops reading fills only USB's ring; its later
//! chunks, and what waits when the port closes, are dropped and counted,
//! so a probe read over RTT or UART0 never stalls on a USB port.
//!
//! The image runs from SRAM (ram.rs, memory/rp2040-pico.x): no timing path
//! waits for a flash cache miss. The pads are set first in `init`
//! (`board::pico::pads`); a 1 s watchdog is fed by every engine task pass
//! (SysTick pends one every 100 ms), and a reset by it is told to the host
//! after every Hello.
#![no_std]
#![no_main]

use panic_probe as _;

#[path = "../common/mod.rs"]
mod common;
mod ram;
mod regs;
mod uid;

/// The second-stage boot loader, first in flash (memory/rp2040-pico.x), run
/// by the boot ROM (§2.8.1): W25Q080, the Pico's own (pico-sdk's default
/// `boot2_w25q080`), which sets up quad-I/O continuous reads; it also serves
/// the W25Q16JV fitted to later Picos (same 0xEB command and status
/// registers). The code runs from SRAM (ram.rs), so flash speed matters only
/// for the boot copy.
#[link_section = ".boot2"]
#[used]
pub static BOOT2: [u8; 256] = rp2040_boot2::BOOT_LOADER_W25Q080;

/// Output queue size of the engine, in bytes.
const TX_QUEUE: usize = 2048;
/// RTT up channel 1 ("latprobe", the frames): 45 ms of a full 921600 Bd
/// stream, as on the Nucleo, for a host polling over SWD every 10 ms.
const RTT_FRAMES: usize = 4096;
/// RTT down channel 0 ("latprobe", host bytes): a few Configure frames.
const RTT_HOST: usize = 256;
/// UART0's ring of frame bytes waiting for its transmitter.
const HOST_UART_RING: usize = 1024;
/// USB's ring of frame bytes waiting for the CDC IN endpoint: 50 ms of a
/// full-speed CDC stream's worth of samples, so a host that reads in bursts
/// loses nothing.
const USB_RING: usize = 8192;
/// SysTick interrupts (100 Hz) between the engine passes it pends, which
/// feed the watchdog when no event does.
const KEEPALIVE_TICKS: u8 = 10;
/// The watchdog's period (§4.7): ten keep-alive passes.
const WATCHDOG_US: u32 = 1_000_000;
/// SysTick reload for the 100 Hz poll of the RTT down channel (SysTick
/// counts clk_sys, 125 MHz).
const RTT_POLL_RELOAD: u32 = 125_000_000 / 100 - 1;

/// What this ELF is, for `latprobe flash` to read before it touches a probe
/// (`latprobe_firmware::buildinfo`'s layout).
#[no_mangle]
pub static LATPROBE_BUILD: [u8; latprobe_firmware::buildinfo::LEN] = latprobe_firmware::buildinfo::encode(
    "rp2040-pico",
    latprobe_firmware::FIRMWARE_VERSION,
    latprobe_protocol::PROTOCOL_VERSION,
);

#[rtic::app(device = rp2040_hal::pac, peripherals = true)]
mod app {
    use latprobe_firmware::board::pico::{pads::PADS, uid::SERIAL_LEN, PioTimer};
    use latprobe_firmware::boards::rp2040_pico::{
        ARM_LEAD_TICKS, HOST_BAUD, LOOP, SYS_HZ, TARGET_BAUD, TIMER_HZ,
    };
    use latprobe_firmware::engine::txq::{Class, TxQueue};
    use latprobe_firmware::hwloop::TriggerOut;
    use latprobe_firmware::{BoardInfo, Engine, HwLoop, LoopConfig, Timer, TimerBits, FIRMWARE_VERSION};
    use latprobe_protocol::{Capabilities, LogLevel};
    use rp2040_hal::{
        self as hal,
        clocks::Clock,
        fugit::{ExtU32, RateExtU32},
        gpio::{bank0::Gpio25, FunctionPio0, FunctionPio1, FunctionSioOutput, FunctionUart, Pin, PullDown},
        pac::Interrupt,
        uart::{DataBits, StopBits, UartConfig, UartPeripheral},
        usb::UsbBus,
    };
    use rtt_target::{ChannelMode, DownChannel, UpChannel};
    use usb_device::{class_prelude::UsbBusAllocator, prelude::*};
    use usbd_serial::SerialPort;

    use super::common;
    use super::regs::{self, HostUart, Regs, TargetRx};
    use super::{
        LedExt, HOST_UART_RING, KEEPALIVE_TICKS, RTT_FRAMES, RTT_HOST, RTT_POLL_RELOAD, TX_QUEUE, USB_RING,
        WATCHDOG_US,
    };
    use latprobe_firmware::links::{self, LinkOut};

    /// Bytes taken from the target UART per interrupt at most.
    const RX_BURST: usize = 32;
    /// The Pico's crystal (§2.16).
    const XOSC_HZ: u32 = 12_000_000;

    type Led = Pin<Gpio25, FunctionSioOutput, PullDown>;

    /// What the host is told when PIO0's stimulus machine missed a target
    /// and was restarted (`PioTimer::stim_restarts`).
    const STIM_RESTART_NOTE: &str =
        "PIO0 SM3 (the stimulus) missed its target and was restarted: that stimulus was late or made in software; the next ones are on PIO's count";

    /// What a Hello is followed by after a reset by the watchdog.
    const WATCHDOG_NOTE: &str =
        "probe reset by its watchdog (no engine pass for 1 s): the run before the reset was cut short";

    #[shared]
    struct Shared {
        engine: Engine<TX_QUEUE>,
        timer: Timer<PioTimer<Regs>>,
        /// Frame bytes for UART0's transmitter.
        host_uart_ring: TxQueue<HOST_UART_RING>,
    }

    #[local]
    struct Local {
        target_rx: TargetRx,
        lp: HwLoop,
        led: Led,
        was_running: bool,
        watchdog: hal::Watchdog,
        usb_dev: UsbDevice<'static, UsbBus>,
        serial: SerialPort<'static, UsbBus>,
        /// Frame bytes for the CDC port, and whether a host has it open.
        usb_out: LinkOut<USB_RING>,
        /// USB's dropped bytes as last logged.
        usb_dropped_logged: u32,
        rtt_frames: UpChannel,
        rtt_host: DownChannel,
        host_uart: HostUart,
        host_uart_errors: u32,
        /// SysTick interrupts since the last keep-alive pass.
        keepalive: u8,
        /// `stim_restarts` as last told to the host.
        restarts_told: u32,
    }

    #[init(local = [
        usb_bus: Option<UsbBusAllocator<UsbBus>> = None,
        serial_number: [u8; SERIAL_LEN] = [0; SERIAL_LEN],
    ])]
    fn init(cx: init::Context) -> (Shared, Local) {
        // RTT first, so that a panic during the set-up is logged.
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
        let mut dp = cx.device;
        let mut core = cx.core;
        keep_build_info();
        // §4.7.6 REASON: TIMER is set when the last reset was the watchdog
        // running out (a power-on or RUN-pin reset clears both bits).
        let by_watchdog = dp.WATCHDOG.reason().read().timer().bit_is_set();

        // Pins and pads before the crystal's wait: GP2 and GP6 held low,
        // the UART lines pulled up, from the first microseconds. The pin
        // functions (§2.19.2): GP2 PIO0, GP6 PIO1, GP3 an input (PIO reads
        // any pad), GP0/GP1 UART0, GP4/GP5 UART1.
        let sio = hal::Sio::new(dp.SIO);
        let pins = hal::gpio::Pins::new(dp.IO_BANK0, dp.PADS_BANK0, sio.gpio_bank0, &mut dp.RESETS);
        let host_tx = pins.gpio0.into_function::<FunctionUart>();
        let host_rx = pins.gpio1.into_function::<FunctionUart>();
        let _stim = pins.gpio2.into_function::<FunctionPio0>();
        let _trigger = pins.gpio6.into_function::<FunctionPio1>();
        let _resp = pins.gpio3.into_pull_down_input();
        let tx = pins.gpio4.into_function::<FunctionUart>();
        let rx = pins.gpio5.into_function::<FunctionUart>();
        let led = pins.gpio25.into_push_pull_output();
        set_pads();

        let mut watchdog = hal::Watchdog::new(dp.WATCHDOG);
        let clocks = start_clocks(dp.XOSC, dp.CLOCKS, dp.PLL_SYS, dp.PLL_USB, &mut dp.RESETS, &mut watchdog);
        let peri = clocks.peripheral_clock.freq();
        let Ok(uart) = UartPeripheral::new(dp.UART1, (tx, rx), &mut dp.RESETS)
            .enable(UartConfig::new(TARGET_BAUD.Hz(), DataBits::Eight, None, StopBits::One), peri)
        else {
            defmt::panic!("UART1 at {=u32} Bd", TARGET_BAUD);
        };
        let mut uart = uart;
        uart.enable_rx_interrupt();
        // The HAL's halves are not used: the timer writes the stimulus bytes
        // and `TargetRx` reads the answers, through the registers.
        let _ = uart.split();
        let Ok(host_uart) = UartPeripheral::new(dp.UART0, (host_tx, host_rx), &mut dp.RESETS)
            .enable(UartConfig::new(HOST_BAUD.Hz(), DataBits::Eight, None, StopBits::One), peri)
        else {
            defmt::panic!("UART0 at {=u32} Bd", HOST_BAUD);
        };
        let mut host_uart = host_uart;
        host_uart.enable_rx_interrupt();
        let _ = host_uart.split();

        let (resp_high, tx_high) = regs::start(&dp.RESETS);
        // PIO1's trigger compare, synchronised to PIO0's count by one edge
        // on the LED pin (regs::start_trigger).
        let trigger = regs::start_trigger(&dp.RESETS);
        if !trigger {
            defmt::warn!("trigger: PIO1 did not synchronise with PIO0: no trigger output");
        }
        // TIMER out of reset (§4.6): the wake-up alarm.
        dp.RESETS.reset().modify(|_, w| w.timer().clear_bit());
        while dp.RESETS.reset_done().read().timer().bit_is_clear() {}
        let timer = Timer::new(PioTimer::new(Regs, resp_high, tx_high), LOOP.timer_bits);

        let usb_bus = cx.local.usb_bus.insert(UsbBusAllocator::new(UsbBus::new(
            dp.USBCTRL_REGS,
            dp.USBCTRL_DPRAM,
            clocks.usb_clock,
            true,
            &mut dp.RESETS,
        )));
        let (usb_dev, serial) = usb_device(usb_bus, super::uid::serial_number(cx.local.serial_number));
        let mut engine = new_engine(trigger);
        if by_watchdog {
            defmt::warn!("boot: {=str}", WATCHDOG_NOTE);
            engine.set_boot_note(WATCHDOG_NOTE);
        }
        defmt::info!(
            "boot: latprobe-firmware {=str} on rp2040-pico, timer {=u32} Hz (PIO0), host link USB CDC",
            FIRMWARE_VERSION,
            TIMER_HZ
        );
        start_systick(&mut core.SYST);
        start_watchdog(&mut watchdog);
        rtic::pend(Interrupt::SW0_IRQ);
        (
            Shared { engine, timer, host_uart_ring: TxQueue::new() },
            Local {
                target_rx: TargetRx,
                lp: HwLoop::new(LoopConfig {
                    trigger: if trigger { TriggerOut::Compare { bits: 32 } } else { TriggerOut::None },
                    ..LOOP
                }),
                led,
                was_running: false,
                watchdog,
                usb_dev,
                serial,
                usb_out: LinkOut::new(),
                usb_dropped_logged: 0,
                rtt_frames: rtt.up.1,
                rtt_host: rtt.down.0,
                host_uart: HostUart,
                host_uart_errors: 0,
                keepalive: 0,
                restarts_told: 0,
            },
        )
    }

    /// §2.15/§2.18: XOSC, PLL_SYS to 125 MHz, PLL_USB to 48 MHz; a panic
    /// that names what did not start.
    fn start_clocks(
        xosc: hal::pac::XOSC,
        clocks: hal::pac::CLOCKS,
        pll_sys: hal::pac::PLL_SYS,
        pll_usb: hal::pac::PLL_USB,
        resets: &mut hal::pac::RESETS,
        watchdog: &mut hal::Watchdog,
    ) -> hal::clocks::ClocksManager {
        let Ok(clocks) =
            hal::clocks::init_clocks_and_plls(XOSC_HZ, xosc, clocks, pll_sys, pll_usb, resets, watchdog)
        else {
            defmt::panic!("clocks: the 12 MHz crystal or a PLL did not start");
        };
        let sys = clocks.system_clock.freq().to_Hz();
        if sys != SYS_HZ {
            defmt::panic!("clocks: clk_sys {=u32} Hz, not {=u32}", sys, SYS_HZ);
        }
        clocks
    }

    /// SysTick at 100 Hz from the core clock: the RTT down channel's poll
    /// and the keep-alive engine pass.
    fn start_systick(syst: &mut cortex_m::peripheral::SYST) {
        syst.set_clock_source(cortex_m::peripheral::syst::SystClkSource::Core);
        syst.set_reload(RTT_POLL_RELOAD);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
    }

    /// Keep LATPROBE_BUILD in the image: nothing else reads it.
    fn keep_build_info() {
        // SAFETY: a read of an initialised static.
        let build_protocol = unsafe {
            core::ptr::read_volatile(&super::LATPROBE_BUILD[latprobe_firmware::buildinfo::PROTOCOL_AT])
        };
        debug_assert_eq!(build_protocol, latprobe_protocol::PROTOCOL_VERSION);
    }

    /// The pads of every pin the probe uses (`board::pico::pads`,
    /// §2.19.6.3), written after the HAL's pin set-up (which sets IE and
    /// the pulls it knows of) and never again.
    fn set_pads() {
        // SAFETY: PADS_BANK0's block, at its fixed address. The HAL's `Pins`
        // wrote these pads while converting them and no pin changes its
        // function later, so nothing else writes them; one volatile write a
        // pad, each word within the register's 8 defined bits.
        let pads = unsafe { &*hal::pac::PADS_BANK0::ptr() };
        for pad in &PADS {
            pads.gpio(usize::from(pad.pin)).write(|w| unsafe { w.bits(pad.word()) });
        }
    }

    /// The watchdog (§4.7), fed by every engine task pass. The HAL's
    /// `start` loads twice the period in µs (erratum RP2040-E1: the count
    /// falls by two a tick) and resets everything but the oscillators
    /// (PSM WDSEL); the 1 µs tick comes from `init_clocks_and_plls`.
    fn start_watchdog(watchdog: &mut hal::Watchdog) {
        watchdog.start(WATCHDOG_US.micros());
        // §4.7.6 CTRL PAUSE_DBG0/DBG1/JTAG: a debugger's halt is no hang.
        // Set here because the HAL's `start` and `pause_on_debug` each write
        // CTRL whole (the one clears the other's bits).
        // SAFETY: WATCHDOG's block at its fixed address; one read-modify-
        // write of CTRL in init, before any task runs, keeping ENABLE.
        let wd = unsafe { &*hal::pac::WATCHDOG::ptr() };
        wd.ctrl().modify(|_, w| w.pause_dbg0().set_bit().pause_dbg1().set_bit().pause_jtag().set_bit());
    }

    /// The CDC ACM port: the host link most users plug in.
    /// `serial_number`: the flash's unique ID (uid.rs), so each Pico has its own `/dev/serial/by-id` path.
    fn usb_device(
        usb_bus: &'static UsbBusAllocator<UsbBus>,
        serial_number: &'static str,
    ) -> (UsbDevice<'static, UsbBus>, SerialPort<'static, UsbBus>) {
        let serial = SerialPort::new(usb_bus);
        let strings = StringDescriptors::default()
            .manufacturer("latprobe")
            .product("latprobe probe (rp2040-pico)")
            .serial_number(serial_number);
        let Ok(builder) = UsbDeviceBuilder::new(usb_bus, UsbVidPid(0x16c0, 0x27dd)).strings(&[strings])
        else {
            defmt::panic!("USB: string descriptors");
        };
        // One 64-byte control packet: the 9-byte configuration descriptor is
        // not split (hosts and rp2040js both take it whole).
        let Ok(builder) = builder.max_packet_size_0(64) else {
            defmt::panic!("USB: control packet size");
        };
        (builder.device_class(usbd_serial::USB_CLASS_CDC).build(), serial)
    }

    /// The engine, with what this board can do.
    fn new_engine(trigger: bool) -> Engine<TX_QUEUE> {
        let caps = Capabilities::GPIO_ECHO
            | Capabilities::UART_ECHO
            | Capabilities::PERIODIC
            | Capabilities::LOOPBACK
            | Capabilities::HW_CAPTURE;
        let caps = if trigger { caps | Capabilities::TRIGGER } else { caps };
        Engine::new(
            BoardInfo::new("rp2040-pico", TIMER_HZ, TimerBits::B32, caps)
                .with_arm_lead(ARM_LEAD_TICKS)
                .with_uart_echo_floor(TARGET_BAUD)
                .with_target_baud(TARGET_BAUD)
                .with_response_lag((2 * LOOP.byte_ticks()) as u32),
        )
    }

    #[idle]
    fn idle(_: idle::Context) -> ! {
        loop {
            cortex_m::asm::wfi();
        }
    }

    /// PIO0: an edge word (response or TX start bit) or the stimulus flag.
    #[task(binds = PIO0_IRQ_0, priority = 3, shared = [timer])]
    fn pio0(mut cx: pio0::Context) {
        if cx.shared.timer.lock(|t| t.on_timer_interrupt()) {
            rtic::pend(Interrupt::SW0_IRQ);
        }
    }

    /// PIO1: the trigger's edges (its rise and fall flags).
    #[task(binds = PIO1_IRQ_0, priority = 3, shared = [timer])]
    fn pio1(mut cx: pio1::Context) {
        if cx.shared.timer.lock(|t| t.on_timer_interrupt()) {
            rtic::pend(Interrupt::SW0_IRQ);
        }
    }

    /// The wake-up alarm.
    #[task(binds = TIMER_IRQ_0, priority = 3, shared = [timer])]
    fn wake(mut cx: wake::Context) {
        if cx.shared.timer.lock(|t| t.on_timer_interrupt()) {
            rtic::pend(Interrupt::SW0_IRQ);
        }
    }

    /// Target line receive: each byte logged after the edge words before it.
    #[task(binds = UART1_IRQ, priority = 3, shared = [timer], local = [target_rx])]
    fn target_rx(mut cx: target_rx::Context) {
        let rx = cx.local.target_rx;
        cx.shared.timer.lock(|t| t.on_target_rx(rx, RX_BURST));
        rtic::pend(Interrupt::SW0_IRQ);
    }

    /// The engine task (a spare IRQ, §2.3.2: IRQs 26 to 31 have no
    /// peripheral). Each pass feeds the watchdog.
    #[task(binds = SW0_IRQ, priority = 2, shared = [engine, timer], local = [lp, led, was_running, watchdog, restarts_told])]
    fn engine_task(cx: engine_task::Context) {
        cx.local.watchdog.feed();
        let lp = cx.local.lp;
        let mut timer = cx.shared.timer;
        let mut engine = cx.shared.engine;
        let (output, running) = common::run_engine(lp, &mut engine, &mut timer);
        let restarts = timer.lock(|t| t.hw.stim_restarts);
        if restarts != *cx.local.restarts_told {
            *cx.local.restarts_told = restarts;
            let now = timer.lock(|t| t.now());
            defmt::warn!("PIO0 SM3 missed a stimulus target and was restarted ({=u32} since boot)", restarts);
            engine.lock(|e| e.log(LogLevel::Warn, STIM_RESTART_NOTE, now));
        }
        if *cx.local.was_running && !running {
            let s = lp.stats();
            let (faults, lost, trig, narrow) =
                timer.lock(|t| (t.hw.clock_faults, t.hw.lost_edges, t.hw.trigger_faults, t.hw.narrow_edges));
            defmt::info!(
                "capture path: latch to sample queued max {=u32} ticks (last {=u32}, min {=u32}); {=u32} soft stimulus ticks, {=u32} events lost, {=u32} edge words lost, {=u32} clock faults, {=u32} trigger faults, {=u32} stimulus machine restarts, {=u32} edges narrower than the minimum pulse",
                s.capture_cost_max,
                s.capture_cost_last,
                s.capture_cost_min,
                s.soft_stimuli,
                s.lost_events,
                lost,
                faults,
                trig,
                restarts,
                narrow
            );
        }
        *cx.local.was_running = running;
        if running {
            cx.local.led.set_high_();
        } else {
            cx.local.led.set_low_();
        }
        if output {
            rtic::pend(Interrupt::USBCTRL_IRQ);
        }
    }

    /// USB: enumeration, host bytes into the engine, and the engine's frames
    /// out to every link (`links::fan_out`, see the module docs).
    #[task(binds = USBCTRL_IRQ, priority = 2, shared = [engine, timer, host_uart_ring], local = [usb_dev, serial, usb_out, usb_dropped_logged, rtt_frames])]
    fn usb(cx: usb::Context) {
        let (usb_dev, serial) = (cx.local.usb_dev, cx.local.serial);
        let mut timer = cx.shared.timer;
        let mut engine = cx.shared.engine;
        let mut ring = cx.shared.host_uart_ring;
        if usb_dev.poll(&mut [serial]) {
            let mut buf = [0u8; 64];
            while let Ok(n) = serial.read(&mut buf) {
                if n == 0 {
                    break;
                }
                common::host_bytes(&mut timer, &mut engine, &buf[..n]);
                rtic::pend(Interrupt::SW0_IRQ);
            }
        }
        let usb_out = cx.local.usb_out;
        usb_out.set_open(usb_dev.state() == UsbDeviceState::Configured && serial.dtr());
        let rtt = cx.local.rtt_frames;
        links::fan_out(
            |buf| engine.lock(|e| e.read_tx(buf)),
            |chunk| {
                // Never waits: NoBlockSkip writes all the bytes or none, and
                // so do the rings (their transmitters take it from there).
                rtt.write(chunk);
                if ring.lock(|q| q.push(chunk, Class::Control)) {
                    rtic::pend(Interrupt::UART0_IRQ);
                }
                usb_out.offer(chunk);
            },
        );
        // USB takes what it can; the IN endpoint's completion brings us back.
        usb_out.drain(|bytes| serial.write(bytes).unwrap_or(0));
        let dropped = usb_out.dropped();
        if dropped != *cx.local.usb_dropped_logged {
            defmt::warn!("USB: {=u32} frame bytes dropped (port closed, or not read)", dropped);
            *cx.local.usb_dropped_logged = dropped;
        }
    }

    /// The UART0 host link: host bytes in (into the engine), the ring's
    /// frame bytes out.
    #[task(binds = UART0_IRQ, priority = 2, shared = [engine, timer, host_uart_ring], local = [host_uart, host_uart_errors])]
    fn host_uart(cx: host_uart::Context) {
        let (mut timer, mut engine, mut ring) = (cx.shared.timer, cx.shared.engine, cx.shared.host_uart_ring);
        let mut buf = [0u8; 32];
        loop {
            let (n, errors) = cx.local.host_uart.read(&mut buf);
            if errors > 0 {
                *cx.local.host_uart_errors = cx.local.host_uart_errors.wrapping_add(errors);
                engine.lock(|e| e.count_host_rx_errors(errors));
            }
            if n == 0 {
                break;
            }
            common::host_bytes(&mut timer, &mut engine, &buf[..n]);
            rtic::pend(Interrupt::SW0_IRQ);
            rtic::pend(Interrupt::USBCTRL_IRQ);
        }
        ring.lock(|q| cx.local.host_uart.send(q));
    }

    /// The RTT down channel (host bytes over SWD), polled at 100 Hz; every
    /// tenth tick also runs an engine pass, which feeds the watchdog when
    /// no event has.
    #[task(binds = SysTick, priority = 1, shared = [engine, timer], local = [rtt_host, keepalive])]
    fn rtt_rx(cx: rtt_rx::Context) {
        *cx.local.keepalive += 1;
        if *cx.local.keepalive >= KEEPALIVE_TICKS {
            *cx.local.keepalive = 0;
            rtic::pend(Interrupt::SW0_IRQ);
        }
        let mut buf = [0u8; 64];
        let n = cx.local.rtt_host.read(&mut buf);
        if n == 0 {
            return;
        }
        let (mut timer, mut engine) = (cx.shared.timer, cx.shared.engine);
        common::host_bytes(&mut timer, &mut engine, &buf[..n]);
        rtic::pend(Interrupt::SW0_IRQ);
        rtic::pend(Interrupt::USBCTRL_IRQ);
    }
}

/// Led helpers: the HAL's `OutputPin` returns `Result<(), Infallible>`.
trait LedExt {
    fn set_high_(&mut self);
    fn set_low_(&mut self);
}

impl<P: embedded_hal::digital::OutputPin<Error = core::convert::Infallible>> LedExt for P {
    fn set_high_(&mut self) {
        let Ok(()) = self.set_high();
    }
    fn set_low_(&mut self) {
        let Ok(()) = self.set_low();
    }
}
