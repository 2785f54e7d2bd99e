//! Shared helpers for latprobe's end-to-end tests.
//!
//! - [`fault_pipe`]: a fault-injecting byte pipe between a probe and the host.
//! - [`firmware`]: builds a board's firmware ELF and the host binaries the
//!   end-to-end tests run (the host's tests share it by path).
//! - [`rng`]: a tiny seeded generator, so every simulated run is reproducible.
//! - [`host`]: the host's end of the link (real `FrameDecoder` and
//!   `decode_message`), collecting what a probe sent.
//! - [`sim`]: a simulated probe board (16- or 32-bit counter, delayed
//!   interrupts, hardware compare and capture) and target (a known latency
//!   distribution) driving the real engine.
//! - [`stats`]: exact nearest-rank percentiles.

pub mod fault_pipe;
pub mod firmware;
pub mod host;
pub mod rng;
pub mod sim;
pub mod stats;
