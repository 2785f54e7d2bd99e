//! What each board is, as constants the board binary, the capture loop and
//! the host share: clocks, baud rates, the input filter's delay.

use crate::hwloop::{LoopConfig, TriggerOut};
use crate::ticks::TimerBits;

/// The reference probe: STM32F411RE at 100 MHz, TIM2 (32 bits) capturing.
pub mod nucleo_f411re {
    use super::{LoopConfig, TimerBits, TriggerOut};

    /// SYSCLK, and TIM2's clock (APB1 at 50 MHz, doubled for its timers):
    /// one tick is one core cycle, 10 ns.
    pub const TIMER_HZ: u32 = 100_000_000;
    /// Host link over the ST-LINK/V2-1 virtual COM port (the host's
    /// default `--baud`).
    pub const HOST_BAUD: u32 = 921_600;
    /// probe-rs's name for the chip (`latprobe flash`).
    pub const CHIP: &str = "STM32F411RETx";
    /// DBGMCU_IDCODE's DEV_ID of the chip (RM0383 §23.6.1): a wrong chip is
    /// told before it is erased.
    pub const DEV_ID: u16 = 0x431;
    /// The chip's SRAM (origin, length; RM0383 §2.3, memory.x), where the
    /// RTT control block lies.
    pub const RAM: (u64, u64) = (0x2000_0000, 128 * 1024);
    /// Target line (USART1): the responder's default.
    pub const TARGET_BAUD: u32 = 115_200;
    /// The input filter of TIM2's capture channels: ICxF = 0011,
    /// f_SAMPLING = f_CK_INT, N = 8 (RM0383 §13.4.7, TIMx_CCMR1 IC1F;
    /// written by `board::nucleo::tim2`). RM0383: a transition is
    /// validated after 8 consecutive samples at its new level, so every
    /// capture latches 8 ticks (80 ns) after its edge; it rejects glitches
    /// shorter than 80 ns on bench wires. The capture loop takes these 8
    /// ticks off every capture ([`LoopConfig::capture_delay_ticks`]).
    /// Whatever else lies between the pin and the latch (the input
    /// resynchroniser and the edge detector) is not given in RM0383: it is
    /// measured by `latprobe calibrate --line gpio`, not assumed here. The
    /// register-model test derives the 8 from the IC2F the driver wrote.
    pub const CAPTURE_FILTER_TICKS: u32 = 8;
    /// Two capture channels seeing one edge (UART loopback: PA9 on PB10
    /// and PA10/PA1) latch up to this many ticks apart: each pin has its
    /// own synchroniser and filter, which settle a clock apart.
    pub const LOOPBACK_SKEW_TICKS: u32 = 2;
    /// How far ahead of its tick the engine asks for a stimulus
    /// ([`crate::BoardInfo::with_arm_lead`]): 20 µs. The engine plans the
    /// next stimulus when the last one is reported, so an interval is
    /// kept only while the report's latency and this lead fit in it; the
    /// engine's default, 100 µs, held every echo mode at 10 000 stimuli a
    /// second at most, whatever the interval asked. A pass of the engine
    /// task is about 1 100 instructions without a sample and 1 700 with
    /// one (`throughput_qemu`), 11 to 17 µs at 100 MHz; the pass
    /// that also codes a batch frame (one sample in 64) is about 10 000
    /// and arms late, which the loop takes: an edge after its 10 µs rest
    /// ([`LoopConfig::late_rest_ticks`]), a byte written late, each timed
    /// as it happened, and the schedule keeps its anchor.
    pub const ARM_LEAD_TICKS: u32 = TIMER_HZ / 50_000;
    /// The capture loop's view of the board.
    pub const LOOP: LoopConfig = LoopConfig {
        timer_hz: TIMER_HZ,
        timer_bits: TimerBits::B32,
        baud: TARGET_BAUD,
        response_capture: true,
        tx_capture: true,
        capture_delay_ticks: CAPTURE_FILTER_TICKS,
        loopback_skew_ticks: LOOPBACK_SKEW_TICKS,
        // TIM3 CH1 on PB4, TIM2's 16-bit slave (board::nucleo::tim2).
        trigger: TriggerOut::Compare { bits: 16 },
        // TIM2's interrupt writes a due stimulus byte (USART1's DR) itself.
        top_half_bytes: true,
        // TIM2's CH1 match is logged by its interrupt; the answer's capture
        // runs the engine task.
        quiet_edges: true,
        // CCR1 and CCMR1 writes: a few cycles.
        compare_setup_ticks: 0,
    };
}

/// The Raspberry Pi Pico (RP2040 at 125 MHz): PIO0 counts, captures and
/// makes the stimulus (`board::pico`).
pub mod rp2040_pico {
    use super::{LoopConfig, TimerBits, TriggerOut};

    /// clk_sys from the 12 MHz crystal through PLL_SYS (RP2040 datasheet
    /// §2.18.2: 12 MHz × 125 / (6 × 2) = 125 MHz, rp2040-hal's default).
    pub const SYS_HZ: u32 = 125_000_000;
    /// The tick: two system clocks (every PIO path decrements X once per
    /// two instructions, `board::pico::program`).
    pub const TIMER_HZ: u32 = SYS_HZ / 2;
    /// Host link over UART0 (GP0/GP1) to a debug probe's bridge; the USB
    /// CDC link has no baud rate.
    pub const HOST_BAUD: u32 = 921_600;
    /// probe-rs's name for the chip (`latprobe flash`).
    pub const CHIP: &str = "RP2040";
    /// The chip's SRAM (SRAM0-5, striped, §2.6.2; memory.x), where the RTT
    /// control block lies.
    pub const RAM: (u64, u64) = (0x2000_0000, 264 * 1024);
    /// Target line (UART1 on GP4/GP5): the responder's default.
    pub const TARGET_BAUD: u32 = 115_200;
    /// How far ahead of its tick the engine asks for a stimulus
    /// ([`crate::BoardInfo::with_arm_lead`]). The engine's default, 100 µs,
    /// held the Pico to about 9 100 samples/s while its CPU was half idle
    /// (`throughput_pico`'s walk). A shorter lead needs a stimulus planned
    /// inside the PIO's set-up to be armed a rest later by the compare
    /// ([`LoopConfig::compare_setup_ticks`]), not made in software: a
    /// 40 µs lead tried before that made loopback latencies vary. With it,
    /// the walk (GPIO loopback, 1 000 samples a step, every latency exact)
    /// reached 19 258 samples/s at 40 µs with a 40 µs lead, 17 678 with
    /// 30 µs, 16 197 with 50 µs and 14 339 with 20 µs: a shorter lead falls
    /// inside the engine's own pass (a sample is about 49 µs of CPU), and
    /// the stimulus is then armed a rest later.
    pub const ARM_LEAD_TICKS: u32 = TIMER_HZ / 25_000;
    /// From an edge at a pin to the tick its capture word names, in
    /// ticks: the 2-flop input synchroniser every GPIO input passes
    /// through before PIO reads it (RP2040 datasheet §3.5.6.3, "the
    /// input synchronisers add two cycles of latency", unless
    /// INPUT_SYNC_BYPASS is set for the pin, which the probe never does
    /// for a capture pin; §2.19.1), two system clocks: one tick. The edge
    /// program's own instructions are already taken off by
    /// `program::capture_tick` (the `in` runs one tick after the `jmp
    /// pin` that saw the level). The capture loop takes this off every
    /// capture ([`LoopConfig::capture_delay_ticks`]), so the GPIO loopback
    /// reads 0 uncalibrated (the stimulus is reported in the tick its pad
    /// moves, `program::stimulus_target`); a UART loopback is unbiased
    /// either way (both start bits pass through a synchroniser). What
    /// lies outside the chip (pads, wires) is for `latprobe calibrate`.
    pub const CAPTURE_DELAY_TICKS: u32 = 1;
    /// Two edge state machines seeing one edge (UART loopback: GP4 read by
    /// SM2, GP5 by SM1) sample it in the same tick; one tick of allowance
    /// for the synchronisers.
    pub const LOOPBACK_SKEW_TICKS: u32 = 1;
    /// The capture loop's view of the board.
    pub const LOOP: LoopConfig = LoopConfig {
        timer_hz: TIMER_HZ,
        timer_bits: TimerBits::B32,
        baud: TARGET_BAUD,
        response_capture: true,
        tx_capture: true,
        capture_delay_ticks: CAPTURE_DELAY_TICKS,
        loopback_skew_ticks: LOOPBACK_SKEW_TICKS,
        trigger: TriggerOut::None,
        // Not yet: the Pico's byte stimuli are written by the engine task
        // (its figures were measured so; docs/dev/throughput.md).
        top_half_bytes: false,
        // PIO0's stimulus flag is logged by its interrupt; the answer's
        // edge word runs the engine task.
        quiet_edges: true,
        // Arming the stimulus (two pad-override writes, the target handed
        // to PIO0 SM0 with a counter read that waits for the clock's push)
        // took about 4.5 µs in rp2040js; a stimulus planned 5 to 6.5 µs
        // ahead then missed its target and was made in software, its
        // latency off the loopback's constant (`throughput_pico`'s walk at
        // 120 µs). 8 µs, with room.
        compare_setup_ticks: TIMER_HZ / 125_000,
    };
}

/// QEMU's netduinoplus2 (STM32F405): no capture or compare hardware; the
/// counter is read in software.
pub mod qemu {
    use super::{LoopConfig, TimerBits, TriggerOut};

    /// TIM2 at 1 GHz / (PSC + 1) of virtual time, PSC = 9.
    pub const TIMER_HZ: u32 = 100_000_000;
    /// The capture loop's view of the board: no capture channel, and a
    /// UART without bit timing (a byte moves at once).
    pub const LOOP: LoopConfig = LoopConfig {
        timer_hz: TIMER_HZ,
        timer_bits: TimerBits::B32,
        baud: 0,
        response_capture: false,
        tx_capture: false,
        capture_delay_ticks: 0,
        loopback_skew_ticks: 0,
        // No compare pins in QEMU: the engine task decides (flags only).
        trigger: TriggerOut::Software,
        // SysTick's interrupt writes a due stimulus byte itself.
        top_half_bytes: true,
        // No edge stimuli.
        quiet_edges: false,
        // No stimulus compare.
        compare_setup_ticks: 0,
    };
    /// The arm lead, as the Nucleo's ([`super::nucleo_f411re::ARM_LEAD_TICKS`]):
    /// the same code on the same 100 MHz timer.
    pub const ARM_LEAD_TICKS: u32 = super::nucleo_f411re::ARM_LEAD_TICKS;
}

#[cfg(test)]
mod tests {
    /// The linker's memory.x and the host's RTT search give one SRAM.
    #[test]
    fn the_nucleo_ram_is_the_linker_scripts() {
        let x =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/memory/nucleo-f411re.x")).unwrap();
        let ram = x.lines().find(|l| l.trim_start().starts_with("RAM")).unwrap();
        let (origin, len) = super::nucleo_f411re::RAM;
        assert!(ram.contains(&std::format!("ORIGIN = {origin:#010x}")), "{ram}");
        assert!(ram.contains(&std::format!("LENGTH = {}K", len / 1024)), "{ram}");
    }
}
