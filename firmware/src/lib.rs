//! latprobe probe engine: hardware-free scheduling, capture matching, tick extension and batching.
#![no_std]
