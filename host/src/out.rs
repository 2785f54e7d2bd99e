//! Printing that never panics and never costs a file: `print!` and
//! `eprintln!` panic when the other end of a pipe is gone (`latprobe run |
//! head`, a closed terminal after SIGHUP). A summary or a message nobody
//! can read is dropped; the run and its files go on. Under `--quiet`
//! ([`set_quiet`]) only errors print ([`stderr_error!`](crate::stderr_error!)); `stdout!`
//! and `stderr_line!` print nothing.

use std::fmt;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

/// `--quiet`: from now on only errors print.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `--quiet` was given.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Write to stdout, ignoring a closed or broken stdout; nothing under `--quiet`.
pub fn stdout(args: fmt::Arguments<'_>) {
    if quiet() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_fmt(args);
    let _ = out.flush();
}

/// Write output the user asked for on stdout (`-o -`'s JSON, `--lava`'s
/// lines), under `--quiet` too. Unlike [`stdout!`](crate::stdout!), a failure is
/// returned: the output was not delivered.
pub fn data(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Write to stderr, ignoring a closed or broken stderr; nothing under `--quiet`.
pub fn stderr(args: fmt::Arguments<'_>) {
    if quiet() {
        return;
    }
    error_line(args);
}

/// Write to stderr even under `--quiet`: for errors.
pub fn error_line(args: fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// `print!` to stdout, ignoring a broken stdout; nothing under `--quiet`.
#[macro_export]
macro_rules! stdout {
    ($($arg:tt)*) => { $crate::out::stdout(format_args!($($arg)*)) };
}

/// `eprintln!` to stderr, ignoring a broken stderr; nothing under `--quiet`.
#[macro_export]
macro_rules! stderr_line {
    ($($arg:tt)*) => { $crate::out::stderr(format_args!("{}\n", format_args!($($arg)*))) };
}

/// [`stderr_line!`] for an error: printed under `--quiet` too.
#[macro_export]
macro_rules! stderr_error {
    ($($arg:tt)*) => { $crate::out::error_line(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Text a probe, a responder or a file supplied, made safe for a terminal:
/// every control character (C0, DEL, C1: ESC, CR, BEL, the CSI byte 0x9b)
/// is shown as `\xNN`, so a board name or a log line cannot clear the
/// screen, retitle the window or rewrite a summary line. The one helper for
/// every print site of such text; JSON output keeps the data as it is.
pub fn clean(text: &str) -> std::borrow::Cow<'_, str> {
    escape(text, false)
}

/// [`clean`] for a whole rendered block (a table, a summary, an error):
/// its own line breaks (and tabs) stay, every other control character is escaped.
pub fn clean_lines(text: &str) -> std::borrow::Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_newlines: bool) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && !(keep_newlines && matches!(c, '\n' | '\t'));
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut s = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            s.push_str(&format!("\\x{:02x}", u32::from(c)));
        } else {
            s.push(c);
        }
    }
    std::borrow::Cow::Owned(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(clean("fake"), "fake");
        assert_eq!(clean("a\x1b[2Jb\r\x1b[K\x07"), "a\\x1b[2Jb\\x0d\\x1b[K\\x07");
        assert_eq!(clean("\u{9b}31m\n"), "\\x9b31m\\x0a");
        assert_eq!(clean_lines("one\ntwo\x1b]0;t\x07"), "one\ntwo\\x1b]0;t\\x07");
    }
}
