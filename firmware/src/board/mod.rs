//! Board register layers: what a board's binary hands the capture loop, as
//! register reads and writes behind small bus traits, so that they are
//! tested on the host against a register model (like embassy's
//! `time_driver.rs`, kept apart from the app). The board constants stay in
//! [`crate::boards`]; the binaries keep the RTIC glue.

pub mod nucleo;
pub mod pico;
