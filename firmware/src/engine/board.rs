//! What a board tells the engine about itself ([`BoardInfo`]): its name,
//! timer, capabilities and line facts, and the periods the engine derives
//! from its timer rate (heartbeat, batch flush). Plain data, owned by no run.

use latprobe_protocol::Capabilities;

use crate::ticks::TimerBits;

/// This firmware's version, as sent in `ProbeInfo::firmware_version`.
pub const FIRMWARE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Longest board name sent in the Hello; longer names are cut (at a
/// character boundary) so the Hello always fits a frame.
pub const MAX_BOARD_NAME: usize = 32;

/// What a board tells the engine about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoardInfo {
    /// Board name, such as `nucleo-f411re`, `qemu` or `virtual`.
    pub name: &'static str,
    /// Rate of the measurement timer (the extended tick), in Hz.
    pub timer_hz: u32,
    /// Width of the hardware counter.
    pub timer_bits: TimerBits,
    /// Modes and properties of the board.
    pub capabilities: Capabilities,
    /// Firmware version; [`FIRMWARE_VERSION`] unless a board overrides it.
    pub firmware_version: &'static str,
    /// The engine never requests a stimulus less than this many ticks after
    /// the `now` it was given, so the board has time to program its compare.
    pub arm_lead_ticks: u32,
    /// In `uart-echo`, the shortest latency that can be a real answer: an
    /// echo's start bit cannot come before the target has received the
    /// whole stimulus byte (9.5 bit times at the target line's baud). An
    /// earlier capture is a late echo of an earlier stimulus: it is counted
    /// late and the engine keeps waiting. 0 (the default) disables the
    /// check, for lines without real timing (a pty, an emulated UART).
    pub uart_echo_floor_ticks: u32,
    /// The longest a board may take to deliver a response after the tick it
    /// was captured at: a board that pairs a start-bit capture with the
    /// byte the UART reads a byte time later delivers it that late. The
    /// engine judges a stimulus timed out only this long after its
    /// timeout, so an answer in time is never counted late. 0 (the
    /// default) for boards that deliver captures at once.
    pub response_lag_ticks: u32,
    /// Baud rate of the target UART line, sent in the Hello; 0 when the
    /// line has no bit timing (see `ProbeInfo::target_baud`).
    pub target_baud: u32,
    /// CRC-32 of the firmware image in flash, sent in the Hello (see
    /// `ProbeInfo::build_id`); 0 when unknown.
    pub build_id: u32,
}

impl BoardInfo {
    /// A board description with the default arm lead of 100 µs of ticks
    /// (at least one tick).
    pub const fn new(
        name: &'static str,
        timer_hz: u32,
        timer_bits: TimerBits,
        capabilities: Capabilities,
    ) -> Self {
        let lead = timer_hz / 10_000;
        Self {
            name,
            timer_hz,
            timer_bits,
            capabilities,
            firmware_version: FIRMWARE_VERSION,
            arm_lead_ticks: if lead == 0 { 1 } else { lead },
            uart_echo_floor_ticks: 0,
            response_lag_ticks: 0,
            target_baud: 0,
            build_id: 0,
        }
    }

    /// The same board with a response lag (see
    /// [`BoardInfo::response_lag_ticks`]).
    #[must_use]
    pub const fn with_response_lag(mut self, ticks: u32) -> Self {
        self.response_lag_ticks = ticks;
        self
    }

    /// The same board with its target UART line's baud rate, announced in
    /// the Hello.
    #[must_use]
    pub const fn with_target_baud(mut self, baud: u32) -> Self {
        self.target_baud = baud;
        self
    }

    /// The same board with the CRC-32 of its firmware image (see
    /// `ProbeInfo::build_id`).
    #[must_use]
    pub const fn with_build_id(mut self, crc: u32) -> Self {
        self.build_id = crc;
        self
    }

    /// The same board with a `uart-echo` floor (see
    /// [`BoardInfo::uart_echo_floor_ticks`]): for a target line at `baud`,
    /// 9.5 bit times of ticks.
    #[must_use]
    pub const fn with_uart_echo_floor(mut self, baud: u32) -> Self {
        self.uart_echo_floor_ticks = if baud == 0 {
            0
        } else {
            // 9.5 bit times, rounded down: never above the true minimum.
            (self.timer_hz as u64 * 19 / (2 * baud as u64)) as u32
        };
        self
    }

    /// The same board with another arm lead (at least one tick).
    #[must_use]
    pub const fn with_arm_lead(mut self, ticks: u32) -> Self {
        self.arm_lead_ticks = if ticks == 0 { 1 } else { ticks };
        self
    }

    /// Ticks in one second: the heartbeat period.
    pub const fn heartbeat_ticks(&self) -> u64 {
        if self.timer_hz == 0 {
            1
        } else {
            self.timer_hz as u64
        }
    }

    /// Ticks in 50 ms: a batch is sent at most this long after its first
    /// item, so the host's live view stays fresh.
    pub const fn flush_ticks(&self) -> u64 {
        let t = self.timer_hz as u64 / 20;
        if t == 0 {
            1
        } else {
            t
        }
    }
}
