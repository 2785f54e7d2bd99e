//! latprobe probe engine: hardware-free scheduling, capture matching, tick extension and batching.
//!
//! The engine never touches a register. A board (an RTIC app on the probe,
//! or the host's virtual probe on a thread with `CLOCK_MONOTONIC` ns as its
//! timer) feeds it events stamped in *extended ticks* (u64) and carries out
//! its requests. This is the same seam as `embassy-time-driver` or an RTIC
//! monotonic: the engine asks "wake me at tick T" and "produce a stimulus at
//! tick T"; the board answers "it is now tick N", "the stimulus happened at
//! tick S", "a capture latched at tick C".
//!
//! ```text
//!            board (thin: registers, ISRs, DMA)                 Engine<Q> (this crate)
//!  ┌─────────────────────────────────────────────┐     ┌───────────────────────────────────────┐
//!  │ host link RX bytes ──────────────────────────┼────▶│ on_host_bytes(bytes, now)             │
//!  │                                              │     │   FrameDecoder → HostMsg → reply      │
//!  │ counter + overflow flag ─▶ TickExtender::now ┼─now─▶                                       │
//!  │ overflow ISR ─▶ TickExtender::on_overflow    │     │                                       │
//!  │ output compare fired ─▶ ::capture(ccr, now) ─┼────▶│ on_stimulus(tick, now)                │
//!  │ input capture latched ─▶ ::capture(ccr, now) ┼────▶│ on_capture(tick, now)  match/timeout  │
//!  │ wake-up compare / sleep expired ─────────────┼────▶│ poll(now)              flush/heartbeat│
//!  │                                              │     │                                       │
//!  │ program stimulus compare at `at`   ◀─────────┼─────│ stimulus_request() -> Option<Req>     │
//!  │ program wake-up compare / sleep    ◀─────────┼─────│ next_deadline()    -> Option<u64>     │
//!  │ UART/DMA/RTT writer                ◀─────────┼─────│ tx_chunk() + tx_done(n) | read_tx(buf)│
//!  └─────────────────────────────────────────────┘     └───────────────────────────────────────┘
//! ```
//!
//! # How a board drives it
//!
//! A board with a hardware timer does not drive the engine by hand: it
//! implements [`hwloop::seam::TimerHw`] with register accesses and runs
//! [`hwloop`] (a [`Front`] in its top-priority interrupts, a [`HwLoop`] in
//! a lower-priority engine task), which follows the steps below and holds
//! every timing decision (read order, capture rules per line, overcapture,
//! soft stimulus ticks, loopback skew), tested on the host against a fake
//! timer. Both `nucleo-f411re` and `qemu` do. The steps are what the loop
//! does, and what a board without a timer (the host's virtual probe) does
//! itself.
//!
//! At start-up: `let mut engine = Engine::<2048>::new(BoardInfo::new("nucleo-f411re",
//! 100_000_000, TimerBits::B32, caps))` (the boot Hello is queued at once) and
//! a [`TickExtender`] for the counter (not needed for a 64-bit clock). Then,
//! on **every** wake-up (any timer interrupt, host-link interrupt, or
//! iteration of a virtual probe's loop), in this order:
//!
//! 1. **now**: `now = ticks.now(counter, overflow_flag)`, reading the counter
//!    *first* and the overflow flag *second*. In the overflow interrupt, call
//!    `ticks.on_overflow()` in the same critical section that clears the flag.
//! 2. **events**, in the order they happened, each with that `now`:
//!    - the requested stimulus happened: `engine.on_stimulus(tick, now)`,
//!      where `tick` is the request's `at` for a hardware output compare
//!      (read back as `ticks.capture(ccr, now)` or simply `req.at`), or the
//!      tick the byte/edge was actually produced by software;
//!    - every response capture latched at or before `now`:
//!      `engine.on_capture(ticks.capture(ccr, now), now)` (in periodic mode
//!      each captured edge or received byte); a UART answer goes with its
//!      byte, `engine.on_response_byte(tick, byte, now)`, `tick` being its
//!      start bit ([`hwloop::pairer::StartBitPairer`] pairs the two on a board
//!      that captures the line and reads the UART);
//!    - host bytes: `engine.on_host_bytes(&buf[..n], now)`, any chunking.
//! 3. **poll**: `engine.poll(now)` (timeouts, batch flushes, heartbeats).
//!    Timeouts are judged against `now`, which is why every capture latched
//!    before `now` must have been delivered first. So call `poll` only from
//!    the context that sees the capture flags (the timer interrupt, the
//!    virtual probe's loop). A context that cannot see them (host-link RX,
//!    a separate overflow interrupt) delivers its own events and does steps
//!    4–5 only; if `next_deadline()` is already due there, it pends the timer
//!    interrupt (`NVIC::pend`) so that `poll` runs in the right place.
//! 4. **requests**:
//!    - `engine.stimulus_request()`: `Some(req)` with an `id` the board has
//!      not armed yet → program the stimulus compare with
//!      `ticks.compare_value(req.at, now)`: `Some(v)` → write `v` to the
//!      compare register (the pin changes at `req.at` in hardware); `None`
//!      with `req.at > now` → too far for the counter, try again after the
//!      next overflow; `None` with `req.at <= now` → produce it in software
//!      now and report the actual tick. A software-timed board (QEMU UART,
//!      virtual probe) waits until `now >= req.at`, writes the byte, and
//!      reports the tick it wrote it. `None` → disarm anything armed (the
//!      run stopped). For `Edge::Rising`/`Falling`, the board returns the
//!      line to idle itself before the next request's `at`.
//!    - `engine.next_deadline()`: program the wake-up compare the same way
//!      (or sleep until it on the host); `None` → no wake-up needed. It
//!      includes a pending stimulus's `at` while that is in the future.
//! 5. **output**: if the link is idle, start sending `engine.tx_chunk()` (DMA
//!    or blocking write) and call `engine.tx_done(n)` when `n` bytes went out;
//!    or copy with `engine.read_tx(&mut buf)`. Bytes are whole frames in
//!    order; drain continuously.
//!
//! A board whose counter wraps must also wake at least once per counter
//! period (the overflow interrupt does that) and repeat step 4 then, since a
//! far request comes within reach only after a wrap. See [`ticks`] for the
//! timing constraints (overflow acknowledged within half a period, captures
//! converted within one period).
//!
//! # Protocol behaviour (what the host sees)
//!
//! - Boot: `Hello`. `Hello` → `Hello`. `Ping{nonce}` → `Heartbeat` with that
//!   nonce. While running, an unsolicited `Heartbeat` (nonce 0) every
//!   `timer_hz` ticks (1 s).
//! - `Configure` → `Configured(config)` or `Error{code}` (rules in
//!   [`engine::validate`]); a refused Configure clears the previous one. `Configure`
//!   or `Start` while running → `Error{Busy}`; `Start` with no accepted config
//!   → `Error{NotConfigured}`; `Stop` while idle → `Error{NotRunning}`. The
//!   accepted config is kept after a run, so `Start` again repeats it.
//! - `Start` → `Started{start_tick, first_seq: 0}`, `start_tick` being
//!   `now + arm_lead_ticks` in echo modes and `now` in periodic mode.
//!   Sequence numbers restart at 0 every run.
//! - Echo modes: stimulus `k` is planned at `start_tick + k·interval +
//!   dither_k` (dither uniform in `0..=dither_ticks` from PCG32 seeded with
//!   `Config::seed`: same seed, same schedule). Stimuli use *slots*: one
//!   without identity (an edge, a fixed byte), so one stimulus is in
//!   flight at a time; nine with [`latprobe_protocol::Stimulus::Identified`],
//!   stimulus `k` sending identity byte `k % 9` in slot `k % 9`, so up to
//!   nine are in flight and the schedule does not wait for answers. A
//!   stimulus is requested no sooner than planned, than `arm_lead_ticks`
//!   after `now`, nor than `guard_ticks` after the sample that last held its
//!   slot ended (its answer, or stimulus + timeout). Each sample carries its
//!   stimulus's actual tick.
//! - Matching: an answer is matched to the stimulus in its slot (by its
//!   byte with identity; the one outstanding without). Within
//!   `timeout_ticks` it is timed exactly; past it the sample is a timeout
//!   (a latency known only to exceed the timeout) and the answer is counted
//!   *late*, never timed. An answer for a slot with nothing outstanding is
//!   never matched to the next stimulus: it is counted as late (no
//!   identity), duplicate (its stimulus was answered), unmatched (identity
//!   never used, or a capture without its byte) or wrong (a byte outside
//!   the alphabet), in [`latprobe_protocol::Anomalies`].
//! - Identity reuse: the target is a tty, so answers come in order. An
//!   identity is reused only once its sample is sent and the answer to a
//!   later stimulus has been heard (then neither its answer nor a duplicate
//!   can still come), or, for a target that stopped answering, a second
//!   after its sample ended (counted as `reclaimed` when it had timed out).
//!   A stimulus whose slot is still held (or its guard not over) when it
//!   is due waits: it *slips*, counted with its delay; a slip of an interval or more re-anchors the schedule there,
//!   so later stimuli keep their spacing.
//! - Samples go out in sequence order: one answered early waits for the
//!   ones before it to be answered or time out.
//! - Stop: no new stimulus; the stimuli in flight are finished (answered or
//!   timed out, at most one timeout later), then `Stopped`. A second Stop
//!   ends the run at once, abandoning what is in flight.
//! - Periodic mode: each capture at or after `start_tick` is an `EdgeStamp`
//!   (earlier ones are counted as late); `count` counts edges.
//! - Batches are sent when full, 50 ms (`timer_hz / 20` ticks) after their
//!   first item, and before `Stopped`. `Stopped{CountReached | HostStop |
//!   Fault}` comes after the last batch and carries the run's totals.
//! - Backpressure: the output queue (`Q` bytes) keeps
//!   [`engine::txq::CONTROL_RESERVE`] bytes for control replies (Hello, Configured,
//!   Started, Error, Stopped). A batch that does not fit is dropped: its
//!   samples add to `dropped` and `overruns` is incremented; a heartbeat
//!   that does not fit adds to `overruns` only. Both travel in every
//!   Heartbeat and in Stopped, and the host sees the sequence gap.
//! - Damaged host frames count in `Heartbeat::rx_bad_frames`; at most one
//!   `Error{BadFrame}` per second is sent about them. An intact frame of
//!   another protocol version → `Error{VersionMismatch}`; intact but not a
//!   `HostMsg` → `Error{BadMessage}`.
//! - Fault: a requested stimulus not reported within `interval + timer_hz`
//!   ticks of its `at` → `Error{Internal}` and `Stopped{Fault}`.
#![no_std]

#[cfg(test)]
extern crate std;

#[macro_use]
mod fmt;

pub mod board;
pub mod boards;
pub mod buildinfo;
pub mod cpu;
pub mod engine;
pub mod hostrx;
pub mod hwloop;
pub mod links;
pub mod ticks;
pub mod uart;

pub use engine::{
    BoardInfo, Engine, EngineStats, RunTotals, StimulusRequest, TriggerRequest, DEFAULT_TX_QUEUE,
    FIRMWARE_VERSION, MAX_BOARD_NAME,
};
pub use hwloop::seam::TimerHw;
pub use hwloop::{Front, HwLoop, LoopConfig, Timer, TimerLock, RX_BURST_ONE_BYTE_DR};
pub use ticks::{TickExtender, TimerBits};
