//! Shared helpers for latprobe's end-to-end tests.
