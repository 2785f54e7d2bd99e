//! The timer seam: what a board's measurement timer and target line must do
//! for the capture loop ([`crate::hwloop`]), as register reads and writes
//! and nothing else. Like `embassy-time-driver`, the trait is small and
//! holds no decision: which channel captures which polarity, in what order
//! registers are read, when a compare is armed and what a capture means are
//! all decided in [`crate::hwloop`], which is tested on the host against a
//! fake timer that behaves like the silicon.
//!
//! ```text
//!   channel    STM32 (nucleo-f411re)      role
//!   Stimulus   TIM2 CH1, PA0, compare     the stimulus edge (OC1M does the edge)
//!   Response   TIM2 CH2, PA1, capture     the answer: an edge, or a UART start bit
//!   TxStart    TIM2 CH3, PB10, capture    our own TX start bit (PA9 wired to PB10)
//!   Wake       TIM2 CH4, no pin, compare  the engine's next deadline
//!   Trigger    TIM3 CH1, PB4, compare     the trigger output (planned: a
//!              16-bit slave of TIM2 counting its low half, docs/dev/trigger.md)
//! ```
//!
//! A board without a channel (QEMU has no capture or compare hardware)
//! implements its method as "nothing latched" and says so in its
//! [`crate::hwloop::LoopConfig`].

/// A channel of the measurement timer, by its role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Channel {
    /// Output compare that makes the stimulus edge on its pin.
    Stimulus,
    /// Input capture on the response line.
    Response,
    /// Input capture of the stimulus UART's own TX line (its start bit).
    TxStart,
    /// Output compare without a pin: the wake-up interrupt.
    Wake,
    /// Output compare on the trigger pin, on a counter that reads the
    /// measurement counter modulo 2^bits ([`crate::hwloop::TriggerOut`]).
    Trigger,
}

/// Which edges an input capture channel latches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Polarity {
    /// Low to high only.
    Rising,
    /// High to low only (a UART start bit).
    Falling,
    /// Both edges.
    Both,
}

/// What the stimulus compare does to its pin (STM32: OC1M).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum OutputMode {
    /// A match changes nothing; the pin keeps its level.
    Frozen,
    /// Drive the pin high now.
    ForceHigh,
    /// Drive the pin low now.
    ForceLow,
    /// Drive the pin high at the match.
    HighOnMatch,
    /// Drive the pin low at the match.
    LowOnMatch,
    /// Invert the pin at the match.
    ToggleOnMatch,
}

/// A latched input capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Capture {
    /// The counter value latched (the hardware's width, not extended).
    pub raw: u32,
    /// The hardware latched another edge before the earlier one was read
    /// (STM32: CCxOF): `raw` is the *latest* edge, the earlier ones are
    /// lost.
    pub overcaptured: bool,
}

/// A board's measurement timer and target line: register accesses only.
///
/// Every method is one or two register accesses; none waits, none decides.
/// Methods on a channel the board does not have do nothing (`take_*`
/// return `None`/`false`).
pub trait TimerHw {
    /// The counter (STM32: CNT).
    fn counter(&mut self) -> u32;
    /// Whether the counter wrapped since [`TimerHw::clear_overflow`]
    /// (STM32: UIF).
    fn overflow_pending(&mut self) -> bool;
    /// Acknowledge the wrap (STM32: clear UIF).
    fn clear_overflow(&mut self);
    /// The capture latched on `ch` since the last call, if any, and clear
    /// its flags (STM32: reading CCRx clears CCxIF; CCxOF is cleared too).
    fn take_capture(&mut self, ch: Channel) -> Option<Capture>;
    /// Capture `polarity` edges on `ch` with its interrupt, or stop
    /// capturing (`None`). Clears any pending capture of `ch`.
    fn set_capture(&mut self, ch: Channel, polarity: Option<Polarity>);
    /// Whether compare `ch` matched since its flag was last cleared, and
    /// clear the flag (STM32: CCxIF).
    fn take_compare(&mut self, ch: Channel) -> bool;
    /// Whether compare `ch` matched, without clearing the flag.
    fn compare_pending(&mut self, ch: Channel) -> bool;
    /// Set the compare value of `ch` (STM32: CCRx).
    fn set_compare(&mut self, ch: Channel, raw: u32);
    /// Enable or disable the interrupt of compare `ch` (STM32: CCxIE).
    fn set_compare_irq(&mut self, ch: Channel, on: bool);
    /// Set what the stimulus compare does to its pin (STM32: OC1M).
    fn set_output(&mut self, mode: OutputMode);
    /// The stimulus pin's level as it is now (STM32: the GPIO's IDR bit).
    fn output_level(&mut self) -> bool;
    /// Set what the trigger compare does to its pin (STM32: TIM3 OC1M);
    /// nothing on a board without one.
    fn set_trigger_output(&mut self, _mode: OutputMode) {}
    /// Whether the trigger armed next may be disarmed by the response
    /// line's next edge in hardware (one stimulus in flight), or only by
    /// the loop (identity bytes: a start bit does not say which stimulus it
    /// answers). Called when the trigger is armed; nothing on a board
    /// whose hardware cannot (the Nucleo: the capture interrupt disarms).
    fn set_trigger_disarm(&mut self, _by_response: bool) {}
    /// The trigger pin's level as it is now (STM32: PB4's IDR bit); `false`
    /// on a board without one.
    fn trigger_level(&mut self) -> bool {
        false
    }
    /// Put one byte into the stimulus UART's transmitter without waiting:
    /// on an idle line its start bit begins at once. `false` if the
    /// transmitter has no room (the loop tries again a bit time later).
    fn send_byte(&mut self, byte: u8) -> bool;
    /// Drive the scope trigger, if the board has one: high from a
    /// stimulus to its answer, as far as the engine task knows (a marker
    /// for eyes, not a timestamp).
    fn marker(&mut self, _high: bool) {}
    /// Whether the TX start-bit wire (Nucleo: PA9 to PB10) is there, from
    /// a check the board makes with the line idle and without touching the
    /// target's line: `None` when the board cannot tell (or has no such
    /// channel), and the capture loop then finds out from the first
    /// stimulus byte. Called at the start of each run, with nothing being
    /// sent.
    fn tx_wire_present(&mut self) -> Option<bool> {
        None
    }
    /// Watch the target UART's RX pin (`true`) or the GPIO response pin
    /// (`false`) with the response capture channel, where a board can
    /// choose (the Pico's PIO reads any pin; the Nucleo's CH2 is wired to
    /// PA1, and the target's TX goes to PA10 and PA1 both). Called when a
    /// run's response line changes, before its capture polarity is set.
    fn response_source(&mut self, _uart: bool) {}
}
