//! Printing that never panics and never costs a file: `print!` and
//! `eprintln!` panic when the other end of a pipe is gone (`latprobe run |
//! head`, a closed terminal after SIGHUP). A summary or a message nobody
//! can read is dropped; the run and its files go on.

use std::fmt;
use std::io::Write as _;

/// Write to stdout, ignoring a closed or broken stdout.
pub fn stdout(args: fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_fmt(args);
    let _ = out.flush();
}

/// Write to stderr, ignoring a closed or broken stderr.
pub fn stderr(args: fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// `print!` that ignores a broken stdout.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => { $crate::out::stdout(format_args!($($arg)*)) };
}

/// `eprintln!` that ignores a broken stderr.
#[macro_export]
macro_rules! tell {
    ($($arg:tt)*) => { $crate::out::stderr(format_args!("{}\n", format_args!($($arg)*))) };
}
