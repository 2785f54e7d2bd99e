//! The PIO programs of the Pico, encoded here from the RP2040 datasheet's
//! instruction tables (§3.4, "Instructions"; bits 15:13 the opcode, 12:8
//! delay/side-set, which every instruction here leaves 0). The tests decode
//! every word with the `pio-core` crate (rp-rs's assembler, not this code)
//! and check it is the instruction named here.
//!
//! All four state machines of PIO0 keep one count: X starts at `!0` and is
//! decremented once per two system clocks on every path of every program
//! (a *tick* is two clocks, 16 ns at 125 MHz), so the state machines,
//! started in one CTRL write, hold the same X forever. `raw = !X` is the
//! tick: the counter every capture, compare and `now` is read on.
//!
//! ```text
//!   0..3    clock     SM0  pushes X every 4 clocks (the CPU's `now`)
//!   4..15   edges     SM1  response line, SM2 TX pin: X at every edge, rise and fall alternating
//!   16..31  stimulus  SM3  takes a target, toggles its pin when X reaches it, raises IRQ flag 3
//! ```
//!
//! Every path is balanced: a block of n instructions holds n/2 `jmp x--`,
//! and no instruction waits or stalls (`push noblock`, `pull noblock`,
//! `mov` from STATUS; no `wait`, no blocking FIFO access, no delay), which
//! is what keeps the counts equal.

/// `jmp` conditions (§3.4.2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Cond {
    /// `jmp !y`: Y is zero.
    YZero = 0b011,
    /// `jmp x--`: X non-zero before the decrement (X is decremented always).
    XDec = 0b010,
    /// `jmp x!=y`.
    XNeY = 0b101,
    /// `jmp pin`: the EXECCTRL_JMP_PIN input is high.
    Pin = 0b110,
}

/// `mov` destinations (§3.4.8.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum MovDst {
    /// The OUT pins.
    Pins = 0b000,
    /// Scratch X.
    X = 0b001,
    /// Scratch Y.
    Y = 0b010,
    /// The input shift register.
    Isr = 0b110,
}

/// `mov` sources (§3.4.8.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum MovSrc {
    /// Scratch X.
    X = 0b001,
    /// Zero.
    Null = 0b011,
    /// All-ones when the FIFO selected by EXECCTRL_STATUS_SEL is below
    /// STATUS_N, else all-zeroes.
    Status = 0b101,
    /// The input shift register.
    Isr = 0b110,
    /// The output shift register.
    Osr = 0b111,
}

/// `jmp cond, addr` (§3.4.2: opcode 000, condition 7:5, address 4:0).
pub const fn jmp(cond: Cond, addr: u8) -> u16 {
    ((cond as u16) << 5) | (addr as u16 & 0x1f)
}

/// `in x, 32` (§3.4.4: opcode 010, source 7:5 = X, bit count 4:0 with 32
/// encoded as 0).
pub const IN_X_32: u16 = 0b010 << 13 | 0b001 << 5;

/// `push noblock` (§3.4.6: opcode 100, bit 7 = 0 push, IfFull 0, Block 0).
pub const PUSH_NOBLOCK: u16 = 0b100 << 13;

/// `pull noblock` (§3.4.7: opcode 100, bit 7 = 1 pull, IfEmpty 0, Block
/// 0). From an empty TX FIFO it copies X into OSR.
pub const PULL_NOBLOCK: u16 = 0b100 << 13 | 1 << 7;

/// `mov dst, src` or `mov dst, ~src` (§3.4.8: opcode 101, destination 7:5,
/// operation 4:3 with 01 = invert, source 2:0).
pub const fn mov(dst: MovDst, invert: bool, src: MovSrc) -> u16 {
    0b101 << 13 | (dst as u16) << 5 | (invert as u16) << 3 | src as u16
}

/// `irq nowait n rel` (§3.4.9: opcode 110, Clr 0, Wait 0, index 4:0 with
/// bit 4 = relative: the state machine's number is added modulo 4).
pub const fn irq_rel(n: u8) -> u16 {
    0b110 << 13 | 0x10 | (n as u16 & 0x7)
}

/// `set pindirs, v` (§3.4.10: opcode 111, destination 7:5 = 100).
pub const fn set_pindirs(v: u8) -> u16 {
    0b111 << 13 | 0b100 << 5 | (v as u16 & 0x1f)
}

/// `jmp addr`: an unconditional jump (condition 000), for the entry point.
pub const fn jmp_always(addr: u8) -> u16 {
    addr as u16 & 0x1f
}

/// Where each program lies in PIO0's instruction memory.
pub const CLOCK_AT: u8 = 0;
/// The edge program's first instruction (its rising-edge capture).
pub const EDGES_AT: u8 = 4;
/// The stimulus program's first instruction (its idle loop).
pub const STIMULUS_AT: u8 = 16;

/// SM0, the clock: `in x, 32; push noblock` and two decrements, looping
/// (wrap 0..3). The CPU empties its RX FIFO and waits for the next word:
/// X then is no older than the CPU's read, and newer than anything read
/// before it.
pub const CLOCK: [u16; 4] = [IN_X_32, PUSH_NOBLOCK, jmp(Cond::XDec, 3), jmp(Cond::XDec, 0)];
/// Clock wrap: (bottom, top).
pub const CLOCK_WRAP: (u8, u8) = (0, 3);

/// SM1 and SM2, the edges of one pin (EXECCTRL_JMP_PIN): X pushed at a rise
/// (4, wait-for-low loop 8..9) and at a fall (10, wait-for-high loop
/// 14..15, the wrap). The CPU knows which by alternation, starting from the
/// entry it chose for the pin's level.
pub const EDGES: [u16; 12] = [
    IN_X_32,             // 4  rise: X at the sample
    PUSH_NOBLOCK,        // 5
    jmp(Cond::XDec, 7),  // 6  the two ticks the capture took
    jmp(Cond::XDec, 8),  // 7
    jmp(Cond::XDec, 9),  // 8  high: wait for low
    jmp(Cond::Pin, 8),   // 9  still high
    IN_X_32,             // 10 fall
    PUSH_NOBLOCK,        // 11
    jmp(Cond::XDec, 13), // 12
    jmp(Cond::XDec, 14), // 13
    jmp(Cond::XDec, 15), // 14 low: wait for high (wrap bottom)
    jmp(Cond::Pin, 4),   // 15 high: a rise (wrap top)
];
/// Edge program wrap.
pub const EDGES_WRAP: (u8, u8) = (14, 15);
/// Entry with the pin low: wait for a rise.
pub const EDGES_ENTRY_LOW: u8 = 14;
/// Entry with the pin high: wait for a fall.
pub const EDGES_ENTRY_HIGH: u8 = 8;

/// SM3, the stimulus (OUT pin = the stimulus pin, STATUS_SEL = TX,
/// STATUS_N = 1):
///
/// ```text
///   16..19  idle: count, and look for a target (mov y, ~status: 0 while the TX FIFO is empty)
///   20..23  take it: Y = target, two ticks
///   24..25  compare: until X == Y
///   26..31  fire: toggle our level (kept in ISR), drive it, IRQ flag 3, three ticks
/// ```
///
/// The pin toggles; the CPU decides the pad's level around it with the
/// pin's output override (invert, or forced high or low), so the stimulus
/// SM never needs to be told a level.
pub const STIMULUS: [u16; 16] = [
    jmp(Cond::XDec, 17),                   // 16
    mov(MovDst::Y, true, MovSrc::Status),  // 17 y = 0 if no target waits
    jmp(Cond::XDec, 19),                   // 18
    jmp(Cond::YZero, 16),                  // 19
    PULL_NOBLOCK,                          // 20 the target
    mov(MovDst::Y, false, MovSrc::Osr),    // 21
    jmp(Cond::XDec, 23),                   // 22
    jmp(Cond::XDec, 24),                   // 23
    jmp(Cond::XDec, 25),                   // 24
    jmp(Cond::XNeY, 24),                   // 25
    mov(MovDst::Isr, true, MovSrc::Isr),   // 26 our level, toggled
    mov(MovDst::Pins, false, MovSrc::Isr), // 27 the edge
    irq_rel(0),                            // 28 flag 0 + SM 3 = 3
    jmp(Cond::XDec, 30),                   // 29
    jmp(Cond::XDec, 31),                   // 30
    jmp(Cond::XDec, 16),                   // 31 (wrap top: to 16 either way)
];
/// Stimulus wrap.
pub const STIMULUS_WRAP: (u8, u8) = (16, 31);
/// The stimulus program's compare loop (24 and 25): where SM3 waits for
/// X to reach its target, and where it stays (until X comes round, 68.7 s)
/// if the target reached it after its tick.
pub const STIMULUS_COMPARE: (u8, u8) = (STIMULUS_AT + 8, STIMULUS_AT + 9);

/// The PIO IRQ flag the stimulus raises (`irq 0 rel` on SM3).
pub const STIMULUS_FLAG: u8 = 3;

/// The target word for a stimulus edge whose pad moves in tick `tick`
/// (counted from the stimulus program, a tick being clocks 2t and 2t + 1):
/// in the compare loop X runs one tick ahead of the count (24 decrements
/// on the even clock 2t, 25 compares on the odd clock 2t + 1 with X =
/// !(t + 1)), so the target W = !(m + 1) matches at clock 2m + 1; `mov
/// pins` (27) runs two clocks later, at 2m + 3, and the pad takes the
/// level at the next clock edge, 2m + 4: tick m + 2. So the pad moves in
/// tick `tick` for W = !(tick - 1). (The same words drive PIO1's trigger:
/// its pad moves in the tick named too.)
pub const fn stimulus_target(tick: u32) -> u32 {
    !tick.wrapping_sub(1)
}

/// The tick in which the pad moves for target word `word`: the inverse of
/// [`stimulus_target`].
pub const fn target_tick(word: u32) -> u32 {
    (!word).wrapping_add(1)
}

/// A capture word as a tick: X was read one tick after the sample that saw
/// the edge (the `in` follows the `jmp pin`), so the edge's tick is one
/// less. (The GPIO input synchroniser's two clocks, one tick, come on top:
/// §3.5.6.3, INPUT_SYNC_BYPASS; the capture loop takes them off as
/// `boards::rp2040_pico::CAPTURE_DELAY_TICKS`.)
pub const fn capture_tick(word: u32) -> u32 {
    (!word).wrapping_sub(1)
}

/// A clock word as a tick: the `in` ran in that tick.
pub const fn clock_tick(word: u32) -> u32 {
    !word
}

/// Every instruction word the Pico's PIO0 holds, by address.
pub const fn image() -> [u16; 32] {
    let mut m = [0u16; 32];
    let mut i = 0;
    while i < 4 {
        m[CLOCK_AT as usize + i] = CLOCK[i];
        i += 1;
    }
    i = 0;
    while i < 12 {
        m[EDGES_AT as usize + i] = EDGES[i];
        i += 1;
    }
    i = 0;
    while i < 16 {
        m[STIMULUS_AT as usize + i] = STIMULUS[i];
        i += 1;
    }
    m
}

/// `pull block` (§3.4.7: opcode 100, bit 7 = 1 pull, IfEmpty 0, Block
/// 1): only executed by the CPU (SMx_INSTR) with a word already in the TX
/// FIFO, to load a value before a state machine is enabled.
pub const PULL_BLOCK: u16 = 0b100 << 13 | 1 << 7 | 1 << 5;

/// PIO1's program: the trigger output. PIO0's 32 slots are full, so the
/// trigger is a state machine of PIO1 (SM0) running the stimulus program
/// itself ([`STIMULUS`], at the same addresses 16..31, so its compare and
/// its edge take the very clocks the stimulus's do), with its own pin and
/// its own IRQ flag ([`TRIGGER_FLAG`]). A compare needs the same count as
/// PIO0's, and PIO1 cannot read PIO0's X, nor be enabled in the same CTRL
/// write (each block has its own). So it is synchronised once, at boot, by
/// an edge: [`TRIGGER_SYNC`] at 0 is a one-instruction loop (wrap 0..0)
/// that waits, with X preloaded, until PIO0's stimulus state machine
/// raises the sync pin, and then enters the stimulus program at 16 by a
/// one-clock step at 15 ([`TRIGGER_STEP`]) with PIO0's count
/// (`trigger_sync_x`).
pub const TRIGGER_SYNC: u16 = jmp(Cond::Pin, TRIGGER_STEP_AT);
/// Where the sync loop lies in PIO1.
pub const TRIGGER_SYNC_AT: u8 = 0;
/// The sync loop's wrap (one instruction: it falls through to itself
/// while the pin is low).
pub const TRIGGER_SYNC_WRAP: (u8, u8) = (TRIGGER_SYNC_AT, TRIGGER_SYNC_AT);
/// Where the sync's step lies (unused by the watcher, 1..12).
pub const TRIGGER_STEP_AT: u8 = 15;
/// The sync's step: one clock on the way to the stimulus program, so that
/// with the pin seen [`SYNC_SEEN_CLOCKS`] (odd) after PIO0's `mov pins`,
/// PIO1 enters its loop head on an even clock, in phase with PIO0.
pub const TRIGGER_STEP: u16 = jmp_always(STIMULUS_AT);
/// Clocks from PIO0's `mov pins` on the sync pin to the first PIO1 `jmp
/// pin` that reads it high, nominally: PIO0's output register takes the
/// level at the end of that clock, and PIO1's input passes the pin's
/// 2-flop synchroniser (datasheet §3.5.6.3; not bypassed: a read in the
/// same clock as the pad moves can go metastable). A pad slower than a
/// clock adds one or two (a lag the boot measures, `trigger::sync_lag`).
pub const SYNC_SEEN_CLOCKS: u32 = 3;
/// PIO1 IRQ flag raised by the trigger's edges (`irq 0 rel` on SM0).
pub const TRIGGER_FLAG: u8 = 0;

/// X to preload into PIO1's trigger state machine so that it holds PIO0's
/// count once it leaves the sync loop, when the sync edge is PIO0's
/// stimulus edge for tick `tick` (target W = `stimulus_target(tick)`).
///
/// Counted from the stimulus program: W = !(m + 1) matches at clock 2m +
/// 1, `mov pins` runs at M = 2m + 3 (`stimulus_target`). PIO1's `jmp pin`
/// reads the pin high at M + [`SYNC_SEEN_CLOCKS`] = 2m + 6, its step (15)
/// runs at 2m + 7 and its loop head (16) at 2m + 8, where a state machine
/// in step with PIO0 holds X = !(m + 4) = W - 3 (at clock 2k, !k). Derived
/// clock by clock in a test, which also shows what a pad a clock slower
/// leaves: half a tick (8 ns late), and two clocks, a whole tick.
pub const fn trigger_sync_x(tick: u32) -> u32 {
    stimulus_target(tick).wrapping_sub(3)
}

/// `out y, n` (§3.4.5: opcode 011, destination 7:5 = Y, bit count 4:0).
pub const fn out_y(n: u8) -> u16 {
    0b011 << 13 | 0b010 << 5 | (n as u16 & 0x1f)
}

/// `mov osr, pins` (§3.4.8: source PINS = 000, the IN pins from IN_BASE).
pub const MOV_OSR_PINS: u16 = 0b101 << 13 | 0b111 << 5;

/// Where PIO1's response watcher (SM1) lies: 1..12.
pub const WATCH_AT: u8 = 1;
/// Its parking loop (the CPU's `jmp WATCH_AT` there: not watching).
pub const WATCH_PARK: u8 = WATCH_AT;
/// Its entry to watch the response for the trigger just armed (the CPU
/// executes `jmp WATCH_ARM`, from wherever SM1 is).
pub const WATCH_ARM: u8 = WATCH_AT + 1;
/// Its wrap: 4..4, so that waiting for a rise is one instruction a clock
/// (`jmp pin` falls through to itself), like waiting for a fall (6).
pub const WATCH_WRAP: (u8, u8) = (WATCH_AT + 3, WATCH_AT + 3);

/// PIO1 SM1, the trigger's disarm in hardware (one stimulus in flight).
/// JMP_PIN is the response pin, IN_BASE and SET_BASE the trigger pin. Armed,
/// it drives the trigger pin (SET PINDIRS 1), waits for the response to
/// leave the level it has now, and then, if the trigger pin is still low
/// (the answer came first), stops driving it (SET PINDIRS 0: PIO1's output
/// enable of the pin, which SM0's later toggles do not change, §3.5.6), so
/// the rise never reaches the pad, which its pull-down holds low. If the
/// pulse is already out it is left alone. The CPU's disarm (the capture
/// interrupt) stays behind it. This machine is not in the count's step:
/// it only waits, and the CPU moves it by executed jumps.
///
/// ```text
///   1      park (jmp 1)
///   2      drive the trigger pin
///   3      response high now: wait for low at 6; else for high at 4 (wrap 4..4)
///   7..9   the trigger pin's level into Y (mov osr, pins; out y, 1): low → 11
///   10     the pulse is out: park
///   11..12 stop driving it; park
/// ```
pub const WATCH: [u16; 12] = [
    jmp_always(WATCH_PARK),          // 1
    set_pindirs(1),                  // 2
    jmp(Cond::Pin, WATCH_AT + 5),    // 3 → 6
    jmp(Cond::Pin, WATCH_AT + 6),    // 4 → 7 (rest low: high is the answer; wrap 4..4)
    jmp_always(WATCH_AT + 3),        // 5 → 4 (not reached with the wrap)
    jmp(Cond::Pin, WATCH_AT + 5),    // 6 (rest high: loop while high)
    MOV_OSR_PINS,                    // 7
    out_y(1),                        // 8
    jmp(Cond::YZero, WATCH_AT + 10), // 9 → 11
    jmp_always(WATCH_PARK),          // 10
    set_pindirs(0),                  // 11
    jmp_always(WATCH_PARK),          // 12
];

/// Every instruction word PIO1 holds: the sync loop at 0, the response
/// watcher at 1..12, the sync's step at 15, the stimulus program at
/// 16..31 (13 and 14 unused).
pub const fn trigger_image() -> [u16; 32] {
    let mut m = [0u16; 32];
    m[TRIGGER_SYNC_AT as usize] = TRIGGER_SYNC;
    m[TRIGGER_STEP_AT as usize] = TRIGGER_STEP;
    let mut i = 0;
    while i < 12 {
        m[WATCH_AT as usize + i] = WATCH[i];
        i += 1;
    }
    i = 0;
    while i < 16 {
        m[STIMULUS_AT as usize + i] = STIMULUS[i];
        i += 1;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use pio_core::{
        InstructionOperands as Op, JmpCondition, MovDestination, MovOperation, MovSource, SideSet,
    };
    use std::format;

    fn decode(w: u16) -> Op {
        let i = pio_core::Instruction::decode(w, SideSet::default()).unwrap_or_else(|| panic!("{w:#06x}"));
        assert_eq!(i.delay, 0, "{w:#06x}: no delay (it would stall the count)");
        assert_eq!(i.side_set, None, "{w:#06x}");
        i.operands
    }

    /// `w` decodes (by pio-core) as `want`, and pio-core encodes `want` as `w`.
    fn expect(w: u16, want: Op) {
        assert_eq!(format!("{:?}", decode(w)), format!("{want:?}"), "{w:#06x}");
        assert_eq!(want.encode(), w, "{want:?}");
    }

    fn is_dec(op: &Op) -> bool {
        matches!(op, Op::JMP { condition: JmpCondition::XDecNonZero, .. })
    }

    #[test]
    fn every_word_is_the_instruction_named() {
        let jx = |address| Op::JMP { condition: JmpCondition::XDecNonZero, address };
        let inx = Op::IN { source: pio_core::InSource::X, bit_count: 32 };
        let push = Op::PUSH { if_full: false, block: false };
        expect(CLOCK[0], inx);
        expect(CLOCK[1], push);
        expect(CLOCK[2], jx(3));
        expect(CLOCK[3], jx(0));
        let edges =
            [inx, push, jx(7), jx(8), jx(9), Op::JMP { condition: JmpCondition::PinHigh, address: 8 }];
        for (i, op) in edges.into_iter().enumerate() {
            expect(EDGES[i], op);
        }
        let falls =
            [inx, push, jx(13), jx(14), jx(15), Op::JMP { condition: JmpCondition::PinHigh, address: 4 }];
        for (i, op) in falls.into_iter().enumerate() {
            expect(EDGES[6 + i], op);
        }
        let mv = |destination, op, source| Op::MOV { destination, op, source };
        let stim = [
            jx(17),
            mv(MovDestination::Y, MovOperation::Invert, MovSource::STATUS),
            jx(19),
            Op::JMP { condition: JmpCondition::YIsZero, address: 16 },
            Op::PULL { if_empty: false, block: false },
            mv(MovDestination::Y, MovOperation::None, MovSource::OSR),
            jx(23),
            jx(24),
            jx(25),
            Op::JMP { condition: JmpCondition::XNotEqualY, address: 24 },
            mv(MovDestination::ISR, MovOperation::Invert, MovSource::ISR),
            mv(MovDestination::PINS, MovOperation::None, MovSource::ISR),
            Op::IRQ { clear: false, wait: false, index: 0, index_mode: pio_core::IrqIndexMode::REL },
            jx(30),
            jx(31),
            jx(16),
        ];
        for (i, op) in stim.into_iter().enumerate() {
            expect(STIMULUS[i], op);
        }
        expect(set_pindirs(1), Op::SET { destination: pio_core::SetDestination::PINDIRS, data: 1 });
        expect(
            mov(MovDst::X, true, MovSrc::Null),
            mv(MovDestination::X, MovOperation::Invert, MovSource::NULL),
        );
        expect(
            mov(MovDst::Isr, false, MovSrc::Null),
            mv(MovDestination::ISR, MovOperation::None, MovSource::NULL),
        );
        expect(jmp_always(14), Op::JMP { condition: JmpCondition::Always, address: 14 });
    }

    /// Run a program for 400 clocks with its inputs changing (the pin every
    /// `pin_every` clocks, a target waiting every other idle turn, a match
    /// after a few compares) and check at every return to a loop head that
    /// it took two clocks a decrement: a path that did not would let that
    /// state machine's X drift from the others'.
    fn check_balance(image: &[u16; 32], start: u8, wrap: (u8, u8), heads: &[u8], pin_every: usize) -> usize {
        let (mut pc, mut clocks, mut decs, mut arrivals) = (start, 0usize, 0usize, 0usize);
        let (mut idle_turns, mut compares) = (0usize, 0usize);
        while clocks < 400 {
            let op = decode(image[pc as usize]);
            let level = (clocks / pin_every) % 2 == 1;
            clocks += 1;
            if is_dec(&op) {
                decs += 1;
            }
            let taken = match op {
                Op::JMP { condition: JmpCondition::XDecNonZero | JmpCondition::Always, .. } => true,
                Op::JMP { condition: JmpCondition::PinHigh, .. } => level,
                Op::JMP { condition: JmpCondition::YIsZero, .. } => {
                    idle_turns += 1;
                    idle_turns % 2 == 1
                }
                Op::JMP { condition: JmpCondition::XNotEqualY, .. } => {
                    compares += 1;
                    compares % 5 != 0
                }
                Op::JMP { condition, .. } => panic!("unused condition {condition:?}"),
                _ => false,
            };
            pc = match op {
                Op::JMP { address, .. } if taken => address,
                _ if pc == wrap.1 => wrap.0,
                _ => pc + 1,
            };
            if heads.contains(&pc) {
                arrivals += 1;
                assert_eq!(clocks, 2 * decs, "arriving at {pc} after {clocks} clocks");
            }
        }
        arrivals
    }

    #[test]
    fn every_path_takes_two_clocks_a_decrement() {
        let m = image();
        assert!(check_balance(&m, CLOCK_AT, CLOCK_WRAP, &[CLOCK_AT], 1) > 50);
        for entry in [EDGES_ENTRY_LOW, EDGES_ENTRY_HIGH] {
            for every in [3, 7, 20] {
                assert!(
                    check_balance(&m, entry, EDGES_WRAP, &[EDGES_ENTRY_LOW, EDGES_ENTRY_HIGH], every) > 20
                );
            }
        }
        assert!(check_balance(&m, STIMULUS_AT, STIMULUS_WRAP, &[STIMULUS_AT], 1) > 20);
    }

    #[test]
    fn every_x_decrement_falls_through_where_it_jumps() {
        // At X = 0 `jmp x--` does not jump: the next instruction must be
        // its target (or, at a wrap top, the wrap bottom must be).
        let m = image();
        for (pc, &w) in m.iter().enumerate() {
            if let Op::JMP { condition: JmpCondition::XDecNonZero, address } = decode(w) {
                let fall = match pc as u8 {
                    p if p == CLOCK_WRAP.1 => CLOCK_WRAP.0,
                    p if p == EDGES_WRAP.1 => EDGES_WRAP.0,
                    p if p == STIMULUS_WRAP.1 => STIMULUS_WRAP.0,
                    p => p + 1,
                };
                assert_eq!(address, fall, "jmp x-- at {pc}");
            }
        }
    }

    #[test]
    fn the_trigger_image_is_the_stimulus_program_and_a_sync_loop() {
        let m = trigger_image();
        expect(m[0], Op::JMP { condition: JmpCondition::PinHigh, address: TRIGGER_STEP_AT });
        expect(m[15], Op::JMP { condition: JmpCondition::Always, address: STIMULUS_AT });
        assert_eq!(&m[16..32], &STIMULUS[..]);
        assert_eq!(&m[16..32], &image()[16..32], "the same words at the same addresses as PIO0's");
        expect(PULL_BLOCK, Op::PULL { if_empty: false, block: true });
        expect(
            mov(MovDst::X, false, MovSrc::Osr),
            Op::MOV { destination: MovDestination::X, op: MovOperation::None, source: MovSource::OSR },
        );
        // The same path from the loop head as PIO0's: balanced.
        assert!(check_balance(&m, STIMULUS_AT, STIMULUS_WRAP, &[STIMULUS_AT], 1) > 20);
        assert_eq!(trigger_sync_x(1000), !999u32 - 3);
    }

    #[test]
    fn the_watcher_is_the_instructions_named() {
        let m = trigger_image();
        let j = |address| Op::JMP { condition: JmpCondition::Always, address };
        let jp = |address| Op::JMP { condition: JmpCondition::PinHigh, address };
        let set = |data| Op::SET { destination: pio_core::SetDestination::PINDIRS, data };
        let want = [
            j(1),
            set(1),
            jp(6),
            jp(7),
            j(4),
            jp(6),
            Op::MOV { destination: MovDestination::OSR, op: MovOperation::None, source: MovSource::PINS },
            Op::OUT { destination: pio_core::OutDestination::Y, bit_count: 1 },
            Op::JMP { condition: JmpCondition::YIsZero, address: 11 },
            j(1),
            set(0),
            j(1),
        ];
        for (i, op) in want.into_iter().enumerate() {
            expect(m[1 + i], op);
        }
        assert_eq!(WATCH_ARM, 2);
    }

    /// One state machine, clock by clock, by the datasheet's semantics
    /// (pio-core decodes) for the instructions the stimulus and sync
    /// programs use. X starts at !0, as every state machine's does.
    struct Sim {
        m: [u16; 32],
        pc: u8,
        wrap: (u8, u8),
        x: u32,
        y: u32,
        osr: u32,
        isr: u32,
        fifo: Option<u32>,
    }

    impl Sim {
        fn new(m: [u16; 32], pc: u8, wrap: (u8, u8)) -> Self {
            Self { m, pc, wrap, x: u32::MAX, y: 0, osr: 0, isr: 0, fifo: None }
        }

        /// One clock with the JMP_PIN input at `pin`: the level `mov pins`
        /// drove, if it ran.
        fn step(&mut self, pin: bool) -> Option<bool> {
            let op = decode(self.m[self.pc as usize]);
            let mut next = if self.pc == self.wrap.1 { self.wrap.0 } else { (self.pc + 1) % 32 };
            let mut out = None;
            match op {
                Op::JMP { condition, address } => {
                    let taken = match condition {
                        JmpCondition::XDecNonZero => {
                            let t = self.x != 0;
                            self.x = self.x.wrapping_sub(1);
                            t
                        }
                        JmpCondition::YIsZero => self.y == 0,
                        JmpCondition::XNotEqualY => self.x != self.y,
                        JmpCondition::PinHigh => pin,
                        JmpCondition::Always => true,
                        c => panic!("{c:?}"),
                    };
                    if taken {
                        next = address;
                    }
                }
                // STATUS_N = 1 on the TX FIFO: all-ones while it holds
                // fewer than one word.
                Op::MOV { destination: MovDestination::Y, source: MovSource::STATUS, .. } => {
                    self.y = if self.fifo.is_none() { 0 } else { u32::MAX }
                }
                Op::PULL { .. } => self.osr = self.fifo.take().unwrap_or(self.x),
                Op::MOV { destination: MovDestination::Y, source: MovSource::OSR, .. } => self.y = self.osr,
                Op::MOV { destination: MovDestination::ISR, .. } => self.isr = !self.isr,
                Op::MOV { destination: MovDestination::PINS, .. } => out = Some(self.isr & 1 == 1),
                Op::IRQ { .. } => {}
                op => panic!("{op:?}"),
            }
            self.pc = next;
            out
        }
    }

    /// The clock at which the stimulus program, from its entry with
    /// `word` waiting, runs `mov pins`. Clock c lies in tick c / 2: the
    /// clock state machine's `in x` at clock 4k reads !(2k) (checked in
    /// the test).
    fn mov_pins_clock(word: u32) -> u32 {
        let mut sm = Sim::new(image(), STIMULUS_AT, STIMULUS_WRAP);
        sm.fifo = Some(word);
        for clock in 0..100_000u32 {
            if let Some(level) = sm.step(false) {
                assert!(level, "the edge drives the toggled level");
                return clock;
            }
        }
        panic!("no edge for {word:#x}")
    }

    /// PIO0 SM3 makes the sync edge for `tick` (`mov pins` in clock M);
    /// PIO1 SM0 waits in its sync loop with X = `trigger_sync_x(tick)`
    /// and sees the pin `seen` clocks after M (its synchroniser). At each
    /// return to the loop head (16) a state machine in step with PIO0 has
    /// X = !(c / 2) at clock c (checked for PIO0's): the clocks PIO1 is
    /// behind that, the same at every return.
    fn sync_lag_clocks(seen: u32) -> u32 {
        let tick = 300;
        let mut p0 = Sim::new(image(), STIMULUS_AT, STIMULUS_WRAP);
        p0.fifo = Some(stimulus_target(tick));
        let mut p1 = Sim::new(trigger_image(), TRIGGER_SYNC_AT, TRIGGER_SYNC_WRAP);
        p1.x = trigger_sync_x(tick);
        let mut edge_at = None;
        let mut lags = std::vec::Vec::new();
        for clock in 0..4000u32 {
            if p0.pc == STIMULUS_AT {
                assert_eq!(clock, 2 * !p0.x, "PIO0 SM3 in step at clock {clock}");
            }
            if p1.pc == STIMULUS_AT {
                // In the stimulus program now: its own wrap.
                p1.wrap = STIMULUS_WRAP;
                lags.push(clock.wrapping_sub(2 * !p1.x));
            }
            let pin = edge_at.is_some_and(|m| clock >= m + seen);
            if p0.step(false).is_some() && edge_at.is_none() {
                edge_at = Some(clock);
            }
            let _ = p1.step(pin);
        }
        assert!(lags.len() > 500, "PIO1 left its sync loop");
        assert!(lags.iter().all(|&l| l == lags[0]), "{lags:?}");
        lags[0]
    }

    #[test]
    fn the_pad_moves_in_the_tick_the_target_names() {
        // The clock state machine: `in x` at clock 4k reads !(2k).
        let (mut x, mut pc) = (u32::MAX, CLOCK_AT);
        for clock in 0..64u32 {
            match decode(CLOCK[pc as usize]) {
                Op::IN { .. } => assert_eq!(x, !(clock / 2), "clock {clock}"),
                Op::JMP { condition: JmpCondition::XDecNonZero, .. } => x = x.wrapping_sub(1),
                _ => {}
            }
            pc = (pc + 1) % 4;
        }
        for tick in [40u32, 41, 100, 1001, 4097] {
            // The pad takes `mov pins`'s level at the next clock edge.
            let pad_clock = mov_pins_clock(stimulus_target(tick)) + 1;
            assert_eq!(pad_clock / 2, tick, "target for tick {tick}: the pad moves at clock {pad_clock}");
            assert_eq!(target_tick(stimulus_target(tick)), tick);
        }
    }

    #[test]
    fn pio1_leaves_its_sync_loop_in_step_with_pio0_through_the_synchroniser() {
        // Through the synchroniser (PIO0's output flop moves at the end of
        // `mov pins`'s clock, then two flops: PIO1 reads it 3 clocks
        // after, as the harness's --input-sync-clocks 2 has it), PIO1 is
        // exactly in step.
        assert_eq!(sync_lag_clocks(SYNC_SEEN_CLOCKS), 0);
        // A clock more (a slow pad): half a tick (the bound, 8 ns); two
        // clocks more: one whole tick, which the boot-time measurement
        // finds and corrects (`trigger::sync_lag`).
        assert_eq!(sync_lag_clocks(SYNC_SEEN_CLOCKS + 1), 1);
        assert_eq!(sync_lag_clocks(SYNC_SEEN_CLOCKS + 2), 2);
        // A clock sooner: half a tick early.
        assert_eq!(sync_lag_clocks(SYNC_SEEN_CLOCKS - 1), 1u32.wrapping_neg());
    }

    #[test]
    fn ticks_round_trip() {
        for t in [0u32, 1, 12345, u32::MAX] {
            assert_eq!(clock_tick(!t), t);
            assert_eq!(capture_tick(!(t.wrapping_add(1))), t);
            assert_eq!(!stimulus_target(t), t.wrapping_sub(1));
            assert_eq!(target_tick(stimulus_target(t)), t);
        }
    }
}
