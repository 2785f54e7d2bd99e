//! Logging shim: routes `debug!`/`info!`/`warn!` to `defmt` when the `defmt`
//! feature is on, and to nothing otherwise, so the engine builds and tests
//! on the host unchanged (the same idea as embassy's `fmt.rs`).
#![allow(unused_macros)]

#[cfg(feature = "defmt")]
macro_rules! debug {
    ($($arg:tt)*) => { ::defmt::debug!($($arg)*) };
}

#[cfg(feature = "defmt")]
macro_rules! info {
    ($($arg:tt)*) => { ::defmt::info!($($arg)*) };
}

#[cfg(feature = "defmt")]
macro_rules! warn {
    ($($arg:tt)*) => { ::defmt::warn!($($arg)*) };
}

// Without defmt the arguments are still evaluated by reference, so a value
// used only in a log line does not trigger an unused-variable warning.
#[cfg(not(feature = "defmt"))]
macro_rules! debug {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {{ $( let _ = &$arg; )* }};
}

#[cfg(not(feature = "defmt"))]
macro_rules! info {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {{ $( let _ = &$arg; )* }};
}

#[cfg(not(feature = "defmt"))]
macro_rules! warn {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {{ $( let _ = &$arg; )* }};
}
