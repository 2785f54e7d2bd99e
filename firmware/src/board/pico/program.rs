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
/// raises the sync pin, and then enters the stimulus program at 16 with
/// PIO0's count (`trigger_sync_x`).
pub const TRIGGER_SYNC: u16 = jmp(Cond::Pin, STIMULUS_AT);
/// Where the sync loop lies in PIO1.
pub const TRIGGER_SYNC_AT: u8 = 0;
/// The sync loop's wrap (one instruction: it falls through to itself
/// while the pin is low).
pub const TRIGGER_SYNC_WRAP: (u8, u8) = (TRIGGER_SYNC_AT, TRIGGER_SYNC_AT);
/// PIO1 IRQ flag raised by the trigger's edges (`irq 0 rel` on SM0).
pub const TRIGGER_FLAG: u8 = 0;

/// X to preload into PIO1's trigger state machine so that it holds PIO0's
/// count once it leaves the sync loop, when the sync edge is PIO0's
/// stimulus edge for tick `tick` (target `stimulus_target(tick)`).
///
/// Counted from the stimulus program: X equals the target W at the
/// compare (25); the edge (27) is two clocks later and the state machine
/// at 16 is balanced again (2 clocks a decrement from a loop head) one
/// clock after it, where PIO0's count is W - 1 by the balance. PIO1 sees
/// the pin in the edge's clock (rp2040js steps PIO0 before PIO1 in one
/// cycle; on silicon the input synchroniser is bypassed for this pin,
/// `INPUT_SYNC_BYPASS`, datasheet §3.5.6.3) and runs 16 in the next.
pub const fn trigger_sync_x(tick: u32) -> u32 {
    stimulus_target(tick).wrapping_sub(1)
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
/// watcher at 1..12, the stimulus program at 16..31 (13..15 unused).
pub const fn trigger_image() -> [u16; 32] {
    let mut m = [0u16; 32];
    m[TRIGGER_SYNC_AT as usize] = TRIGGER_SYNC;
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
        expect(m[0], Op::JMP { condition: JmpCondition::PinHigh, address: STIMULUS_AT });
        assert_eq!(&m[16..32], &STIMULUS[..]);
        assert_eq!(&m[16..32], &image()[16..32], "the same words at the same addresses as PIO0's");
        expect(PULL_BLOCK, Op::PULL { if_empty: false, block: true });
        expect(
            mov(MovDst::X, false, MovSrc::Osr),
            Op::MOV { destination: MovDestination::X, op: MovOperation::None, source: MovSource::OSR },
        );
        // The same path from the loop head as PIO0's: balanced.
        assert!(check_balance(&m, STIMULUS_AT, STIMULUS_WRAP, &[STIMULUS_AT], 1) > 20);
        assert_eq!(trigger_sync_x(1000), !999u32 - 1);
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

    /// Clock by clock, the stimulus program from its entry with a target
    /// waiting (X = !0 at clock 0, as every state machine starts), by the
    /// datasheet's semantics (pio-core decodes): the clock at which `mov
    /// pins` runs. Clock c lies in tick c / 2: the clock state machine's
    /// `in x` at clock 4k reads !(2k) (checked).
    fn mov_pins_clock(word: u32) -> u32 {
        let m = image();
        let (mut x, mut y, mut osr, mut isr) = (u32::MAX, 0u32, 0u32, 0u32);
        let mut fifo = Some(word);
        let mut pc = STIMULUS_AT;
        for clock in 0..100_000u32 {
            let op = decode(m[pc as usize]);
            let mut next = if pc == STIMULUS_WRAP.1 { STIMULUS_WRAP.0 } else { pc + 1 };
            match op {
                Op::JMP { condition, address } => {
                    let taken = match condition {
                        JmpCondition::XDecNonZero => {
                            let t = x != 0;
                            x = x.wrapping_sub(1);
                            t
                        }
                        JmpCondition::YIsZero => y == 0,
                        JmpCondition::XNotEqualY => x != y,
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
                    y = !(if fifo.is_none() { u32::MAX } else { 0 })
                }
                Op::PULL { .. } => osr = fifo.take().unwrap_or(x),
                Op::MOV { destination: MovDestination::Y, source: MovSource::OSR, .. } => y = osr,
                Op::MOV { destination: MovDestination::ISR, .. } => isr = !isr,
                Op::MOV { destination: MovDestination::PINS, .. } => {
                    assert_eq!(isr, u32::MAX, "the edge drives the toggled level");
                    return clock;
                }
                Op::IRQ { .. } => {}
                op => panic!("{op:?}"),
            }
            pc = next;
        }
        panic!("no edge for {word:#x}")
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
    fn ticks_round_trip() {
        for t in [0u32, 1, 12345, u32::MAX] {
            assert_eq!(clock_tick(!t), t);
            assert_eq!(capture_tick(!(t.wrapping_add(1))), t);
            assert_eq!(!stimulus_target(t), t.wrapping_sub(1));
            assert_eq!(target_tick(stimulus_target(t)), t);
        }
    }
}
