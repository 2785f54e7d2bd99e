//! The Raspberry Pi Pico's (RP2040's) register layer: PIO0 as the capture
//! loop's [`TimerHw`](crate::hwloop::seam::TimerHw) ([`PioTimer`]), its
//! programs ([`program`]) and the edge words' meaning ([`edges`]).
//! References are to the RP2040 datasheet (build-date 2024-02, §2.19 GPIO,
//! §3 PIO, §4.6 Timer).
//!
//! ```text
//!   bin (RTIC, rp2040-hal, rp2040-pac)         lib (this module, host-tested)
//!   PIO1 SM0 TXF0, IRQ, GPIO6 CTRL   ─┐ (the trigger output)
//!   PIO0 FIFOs, FDEBUG, IRQ, ADDR    ─┤
//!   IO_BANK0 GPIO2 OUTOVER, STATUS   ─┼──▶ PioBus ──▶ PioTimer<B>: TimerHw ──▶ hwloop
//!   TIMER ALARM0, UART1 DR           ─┘
//!   the whole chip: rp2040js (tests/rp2040), someone else's model of it
//! ```
//!
//! No CPU is in the timing path: four state machines count one X in step
//! (a tick is two system clocks, 16 ns at 125 MHz); the edges of the
//! response line and of our own TX pin are X pushed by PIO at the edge, and
//! the stimulus edge is made by PIO when X reaches the target. The CPU
//! reads FIFOs and flags after the fact, like TIM2's capture registers on
//! the Nucleo.

pub mod edges;
pub mod pads;
pub mod program;
pub mod timer;
pub mod trigger;
pub mod uid;

pub use timer::PioTimer;

/// A PIO0 state machine, by its role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Sm {
    /// The clock: X every four system clocks.
    Clock = 0,
    /// The response line's edges.
    Response = 1,
    /// Our own TX pin's edges (the stimulus byte's start bit).
    TxStart = 2,
    /// The stimulus edge.
    Stimulus = 3,
}

/// What the pad of the stimulus pin shows (IO_BANK0 GPIOx_CTRL OUTOVER,
/// §2.19.6.1: 0 the peripheral's output, 1 its inverse, 2 low, 3 high).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum OutOver {
    /// The state machine's level.
    Normal = 0,
    /// The state machine's level, inverted.
    Invert = 1,
    /// Low, whatever the state machine drives.
    Low = 2,
    /// High, whatever the state machine drives.
    High = 3,
}

/// The registers [`PioTimer`] uses, one access each. The board binary
/// implements it with the PAC (field names from Raspberry Pi's SVD).
pub trait PioBus {
    /// Pop the state machine's RX FIFO (RXFn), if it holds a word
    /// (FSTAT RXEMPTY clear).
    fn rx(&mut self, sm: Sm) -> Option<u32>;
    /// Words in the state machine's RX FIFO (FLEVEL RXn).
    fn rx_level(&mut self, sm: Sm) -> u8;
    /// Pop the state machine's RX FIFO (RXFn) without looking at FSTAT:
    /// only for a word `rx_level` counted. (A read of an empty FIFO leaves
    /// it as it is, sets FDEBUG RXUNDER and returns an undefined word,
    /// §3.7 RXF0; the timer is the only reader, always under its lock, so
    /// a counted word is still there.)
    fn pop(&mut self, sm: Sm) -> u32;
    /// Push a word into the state machine's TX FIFO (TXFn); `false` if it
    /// is full (FSTAT TXFULL).
    fn tx(&mut self, sm: Sm, word: u32) -> bool;
    /// The state machine's TX FIFO is empty (FSTAT TXEMPTY).
    fn tx_empty(&mut self, sm: Sm) -> bool;
    /// FDEBUG RXSTALL of the state machine, cleared if set: a `push
    /// noblock` found its RX FIFO full and its word was lost (§3.7, FDEBUG).
    fn take_rx_stall(&mut self, sm: Sm) -> bool;
    /// The state machine's program counter (SMn_ADDR).
    fn addr(&mut self, sm: Sm) -> u8;
    /// Execute `instr` on the state machine at once (SMn_INSTR, §3.5.7):
    /// it takes the machine's next cycle in place of the instruction at
    /// its program counter, which does not advance (but for a `jmp`), so
    /// a non-jump costs the machine one clock of its count.
    fn exec(&mut self, sm: Sm, instr: u16);
    /// PIO IRQ flag `n` (IRQ register), cleared if set (write 1 to clear).
    fn take_flag(&mut self, n: u8) -> bool;
    /// PIO IRQ flag `n`, not cleared.
    fn flag(&mut self, n: u8) -> bool;
    /// Enable or disable PIO IRQ flag `n` on the PIO0_IRQ_0 line (IRQ0_INTE
    /// SMn, bits 8..11).
    fn flag_irq(&mut self, n: u8, on: bool);
    /// The stimulus pin's output override (GPIOx_CTRL OUTOVER).
    fn set_outover(&mut self, mode: OutOver);
    /// The stimulus pin's level from PIO, before the override
    /// (GPIOx_STATUS OUTFROMPERI).
    fn stimulus_from_pio(&mut self) -> bool;
    /// The stimulus pin's level at the pad, after the override
    /// (GPIOx_STATUS OUTTOPAD).
    fn stimulus_at_pad(&mut self) -> bool;
    /// The level of the pin the response state machine watches (SIO
    /// GPIO_IN).
    fn response_level(&mut self) -> bool;
    /// Watch the response line's GPIO pin (`false`) or the target UART's
    /// RX pin (`true`) with the response state machine (EXECCTRL JMP_PIN).
    fn response_pin(&mut self, uart: bool);
    /// The microsecond timer (TIMERAWL, §4.6).
    fn micros(&mut self) -> u32;
    /// Arm ALARM0 at `at` µs (§4.6.4: a write to ALARM0 arms it).
    fn set_alarm(&mut self, at: u32);
    /// The alarm fired (INTR ALARM_0), cleared if set.
    fn take_alarm(&mut self) -> bool;
    /// The alarm fired, not cleared.
    fn alarm_fired(&mut self) -> bool;
    /// Enable or disable the alarm's interrupt (INTE ALARM_0).
    fn alarm_irq(&mut self, on: bool);
    /// Put a byte into the target UART's TX FIFO; `false` if it is full
    /// (UARTFR TXFF).
    fn uart_write(&mut self, byte: u8) -> bool;
    /// PIO1's count's lag behind PIO0's in ticks (wrapping), as measured at
    /// boot after its sync (`trigger::sync_lag`); 0 on a board without the
    /// trigger. Read once, when the timer is made.
    fn trigger_lag(&mut self) -> u32;
    /// Push a target word into PIO1's trigger state machine (PIO1 TXF0);
    /// `false` if its TX FIFO is full. `false` too on a board whose PIO1
    /// trigger did not synchronise (nothing would run it).
    fn trigger_tx(&mut self, word: u32) -> bool;
    /// PIO1 IRQ flag [`program::TRIGGER_FLAG`], cleared if set.
    fn take_trigger_flag(&mut self) -> bool;
    /// PIO1 IRQ flag [`program::TRIGGER_FLAG`], not cleared.
    fn trigger_flag(&mut self) -> bool;
    /// Enable or disable that flag on the PIO1_IRQ_0 line.
    fn trigger_flag_irq(&mut self, on: bool);
    /// The trigger pin's output override (its GPIOx_CTRL OUTOVER).
    fn set_trigger_outover(&mut self, mode: OutOver);
    /// The trigger pin's level from PIO1, before the override.
    fn trigger_from_pio(&mut self) -> bool;
    /// The trigger pin's level at the pad, after the override and with its
    /// output enabled (an undriven pin is held low by its pull-down).
    fn trigger_at_pad(&mut self) -> bool;
    /// PIO1 SM1, the response watcher ([`program::WATCH`]): watch the
    /// response for the trigger just armed (`true`: executes `jmp
    /// WATCH_ARM`), or park it with the trigger pin driven (`false`).
    fn trigger_watch(&mut self, by_response: bool);
}
