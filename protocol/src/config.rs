//! What a measurement is configured with: the mode, the board's
//! capabilities, the stimulus and response line, the [`Config`] in probe
//! ticks, and the timing rules both the probe and the host apply to it.

use serde::{Deserialize, Serialize};

use crate::IDENTITY_COUNT;

/// Measurement modes; see the book's internals/repository.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Mode {
    /// Output-compare edge out, the target toggles a GPIO back.
    GpioEcho,
    /// A byte out on a UART, the target echoes it.
    UartEcho,
    /// No stimulus: the target toggles a line (or sends a byte) every period
    /// on its own timer and the probe timestamps it.
    Periodic,
    /// The stimulus wired straight back: the probe's own offset and jitter.
    Loopback,
}

impl Mode {
    /// All modes, in wire order.
    pub const ALL: [Mode; 4] = [Mode::GpioEcho, Mode::UartEcho, Mode::Periodic, Mode::Loopback];

    /// The capability bit a board must announce to accept this mode.
    pub const fn capability(self) -> Capabilities {
        match self {
            Mode::GpioEcho => Capabilities::GPIO_ECHO,
            Mode::UartEcho => Capabilities::UART_ECHO,
            Mode::Periodic => Capabilities::PERIODIC,
            Mode::Loopback => Capabilities::LOOPBACK,
        }
    }

    /// Whether the probe sends a stimulus and measures a response.
    pub const fn is_echo(self) -> bool {
        !matches!(self, Mode::Periodic)
    }

    /// The name used on the command line and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Mode::GpioEcho => "gpio-echo",
            Mode::UartEcho => "uart-echo",
            Mode::Periodic => "periodic",
            Mode::Loopback => "loopback",
        }
    }
}

/// What a board can do, as bit flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Capabilities(pub u32);

impl Capabilities {
    /// `gpio-echo` mode.
    pub const GPIO_ECHO: Self = Self(1 << 0);
    /// `uart-echo` mode.
    pub const UART_ECHO: Self = Self(1 << 1);
    /// `periodic` mode.
    pub const PERIODIC: Self = Self(1 << 2);
    /// `loopback` mode.
    pub const LOOPBACK: Self = Self(1 << 3);
    /// Timestamps are taken by hardware input capture / output compare, so
    /// no interrupt latency of the probe enters a figure.
    pub const HW_CAPTURE: Self = Self(1 << 8);
    /// The probe is emulated or virtual (QEMU, the host's virtual probe):
    /// its figures are not physical.
    pub const EMULATED: Self = Self(1 << 9);
    /// The probe accepts [`Config::trigger_ticks`]: it raises its trigger
    /// output when a stimulus has gone that long unanswered, and flags the
    /// sample ([`Sample::triggered`](crate::Sample::triggered)). A probe
    /// without it refuses a threshold (`ErrorCode::NoTrigger`), and the
    /// host refuses `--trigger-above` before it sends one.
    pub const TRIGGER: Self = Self(1 << 10);

    /// No capability.
    pub const fn empty() -> Self {
        Self(0)
    }

    /// Whether every bit of `other` is set here.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// The union of both sets.
    #[must_use]
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl core::ops::BitOr for Capabilities {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        self.union(rhs)
    }
}

/// Which edge the probe drives on its stimulus line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Edge {
    /// Low to high; the line is returned low before the next stimulus.
    Rising,
    /// High to low; the line is returned high before the next stimulus.
    Falling,
    /// Invert the line on every stimulus.
    Toggle,
}

/// What a periodic target's line carries: the host says it (`--line`),
/// the probe never guesses it from the edges it sees (a glitch, a break or
/// a byte cut at the start of a run would decide it wrongly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ResponseLine {
    /// A GPIO: every edge, rising and falling, is a periodic event.
    Gpio,
    /// A UART: each byte is one event, timed at its start bit; the byte's
    /// data edges are not events.
    Uart,
}

/// What the probe sends as a stimulus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Stimulus {
    /// An edge on the stimulus GPIO (`gpio-echo`, GPIO `loopback`).
    Edge(Edge),
    /// The same byte on the stimulus UART for every stimulus (`uart-echo`,
    /// UART `loopback`), for targets that answer with a constant: no
    /// identity, so one stimulus is in flight at a time, as with an edge.
    Byte(u8),
    /// No stimulus (`periodic`): the target makes its own edges on the
    /// response line, of this kind.
    None(ResponseLine),
    /// A byte from [`IDENTITY_ALPHABET`](crate::IDENTITY_ALPHABET) per stimulus (`uart-echo`, UART
    /// `loopback`): stimulus `seq` sends [`identity_byte`](crate::identity_byte)`(seq)`, the
    /// probe pairs each answer with its stimulus by that byte, and up to
    /// [`IDENTITY_COUNT`] stimuli are in flight.
    Identified,
}

impl Stimulus {
    /// Whether answers are matched by identity (several in flight).
    pub const fn has_identity(self) -> bool {
        matches!(self, Stimulus::Identified)
    }

    /// Whether the stimulus is a byte on a UART (fixed or identified).
    pub const fn is_byte(self) -> bool {
        matches!(self, Stimulus::Byte(_) | Stimulus::Identified)
    }

    /// How many stimuli may be in flight at once.
    pub const fn window(self) -> usize {
        if self.has_identity() {
            IDENTITY_COUNT
        } else {
            1
        }
    }
}

/// One 8N1 byte (10 bits) at `baud` on a timer of `timer_hz`, in ticks,
/// rounded up; 0 for a line without bit timing (`baud` 0, an emulated
/// UART).
pub const fn byte_ticks(timer_hz: u32, baud: u32) -> u64 {
    if baud == 0 {
        0
    } else {
        (10 * timer_hz as u64).div_ceil(baud as u64)
    }
}

/// Which timing rule of an echo mode's schedule a configuration breaks
/// ([`timing_fault`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimingFault {
    /// A timeout of 0: no time for an answer.
    NoTimeout,
    /// The timeout reaches the window's span (`window · interval`): a
    /// stimulus's timeout would run into the next use of its slot.
    TimeoutTooLong,
    /// `dither + timeout + guard` exceeds the window's span: a sample and
    /// its guard would not end before its slot is used again.
    Crowded,
}

/// The timing rule of an echo mode, in any one unit (ticks on the probe,
/// nanoseconds on the host before it knows the tick): with `window`
/// stimuli in flight ([`Stimulus::window`]), `0 < timeout < window ·
/// interval` and `dither + timeout + guard <= window · interval`. The
/// probe's `validate` (`BadTimeout`, `BadDither`) and the host (before it
/// sends, naming the flags) apply this one rule, checked in this order.
pub const fn timing_fault(
    window: u64,
    interval: u64,
    dither: u64,
    timeout: u64,
    guard: u64,
) -> Option<TimingFault> {
    let span = interval.saturating_mul(window);
    if timeout == 0 {
        Some(TimingFault::NoTimeout)
    } else if timeout >= span {
        Some(TimingFault::TimeoutTooLong)
    } else if dither.saturating_add(timeout).saturating_add(guard) > span {
        Some(TimingFault::Crowded)
    } else {
        None
    }
}

/// The shortest interval a byte stimulus allows on a target line of
/// `byte_ticks` per byte ([`byte_ticks`]), in ticks: each stimulus byte must
/// have left the transmitter before the next is written, or the probe would
/// open its start-bit capture while the last byte's data edges still shift
/// out. A fixed byte (one in flight) also keeps `guard_ticks` of quiet
/// after it; with identity the guard is per identity (nine intervals on),
/// so one byte time is the limit. No limit for other stimuli. Both the
/// probe (`Configure`, [`ErrorCode::ShortInterval`](crate::ErrorCode::ShortInterval)) and the host (before
/// it sends, naming the baud) apply this one rule.
pub const fn min_interval_ticks(stimulus: Stimulus, byte_ticks: u64, guard_ticks: u32) -> u64 {
    match stimulus {
        Stimulus::Byte(_) => byte_ticks + guard_ticks as u64,
        Stimulus::Identified => byte_ticks,
        Stimulus::Edge(_) | Stimulus::None(_) => 0,
    }
}

/// Why a trigger threshold does not fit a configuration ([`trigger_fault`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TriggerFault {
    /// A threshold outside an echo mode: nothing is unanswered in periodic mode.
    NotEcho,
    /// A threshold at or above the timeout: the sample times out first, so
    /// the trigger would say nothing the timeout does not.
    NotBelowTimeout,
}

/// The trigger rule, in any one unit: a threshold (0 = off) needs an echo
/// mode and must be below the timeout. Both the probe's `validate`
/// (`BadTrigger`) and the host (before it sends, naming `--trigger-above`
/// and `--timeout`) apply this one rule.
pub const fn trigger_fault(mode: Mode, trigger: u64, timeout: u64) -> Option<TriggerFault> {
    if trigger == 0 {
        None
    } else if !mode.is_echo() {
        Some(TriggerFault::NotEcho)
    } else if trigger >= timeout {
        Some(TriggerFault::NotBelowTimeout)
    } else {
        None
    }
}

/// A measurement's parameters, all in probe ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Config {
    /// What to measure.
    pub mode: Mode,
    /// Nominal time between stimuli. Must not be zero in echo modes.
    pub interval_ticks: u32,
    /// Each stimulus is delayed by a uniform random `0..=dither_ticks`
    /// so that stimuli do not phase-lock with the target's own tick.
    pub dither_ticks: u32,
    /// A response later than this after its stimulus is a timeout sample:
    /// a latency known only to exceed it. With one stimulus in flight (an
    /// edge, a fixed byte) it must fit in the interval with dither and
    /// guard; with [`Stimulus::Identified`] it is the horizon and may span
    /// up to [`IDENTITY_COUNT`] intervals less dither and guard.
    pub timeout_ticks: u32,
    /// Minimum quiet time after a sample ends (response or timeout) before
    /// the next stimulus on the same slot: with one in flight, the next
    /// stimulus; with identity, the next one with the same identity.
    pub guard_ticks: u32,
    /// Number of samples (echo) or edges (periodic) to take; `None` runs
    /// until [`HostMsg::Stop`](crate::HostMsg::Stop).
    pub count: Option<u64>,
    /// Seed of the dither generator: the same seed gives the same schedule.
    pub seed: u64,
    /// What the stimulus is.
    pub stimulus: Stimulus,
    /// Raise the trigger output when a stimulus has gone more than this
    /// many ticks without an answer (the pin rises at `stimulus +
    /// trigger_ticks + 1`, while the target is still late), and flag its
    /// sample; 0 = off. Needs [`Capabilities::TRIGGER`] and an echo mode,
    /// and must be below `timeout_ticks` ([`trigger_fault`]).
    pub trigger_ticks: u32,
}
