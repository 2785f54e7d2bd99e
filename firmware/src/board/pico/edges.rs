//! What an edge state machine's words mean. The edge program (`program::EDGES`)
//! pushes X at every rise and every fall of its pin, alternating; it does
//! not say which. [`EdgeFifo`] knows from where the state machine was
//! started (the pin's level then) and from counting, and after words were
//! lost (FDEBUG RXSTALL) from where the state machine is now.

use super::program::{capture_tick, EDGES_AT, EDGES_ENTRY_HIGH, EDGES_ENTRY_LOW};
use crate::hwloop::seam::Polarity;

/// Ticks the edge program is blind after each edge it sees: the `jmp
/// pin` that saw it is followed by the capture (`in`, `push`) and three
/// decrements before the next `jmp pin`, six clocks where the wait loops
/// look every two (derived from `program::EDGES` in a test). An edge
/// within this many ticks of the one before is seen at the first look
/// after the window: its tick is at most two late (16 ns a tick).
pub const EDGE_BLIND_TICKS: u32 = 3;

/// The narrowest pulse (and the shortest gap between any two edges of one
/// pin) measured to the tick: 3 ticks, 48 ns. A capture whose edge came
/// [`EDGE_BLIND_TICKS`] or fewer after the edge before is flagged as
/// overcaptured (the capture loop then treats it as the Nucleo's filter
/// treats a capture register written twice) and counted: the edge may be
/// late (a narrower pulse), or exact (one of just 48 ns), and the words
/// cannot tell which. A pulse under one tick (16 ns) can fall between two
/// looks and not be seen at all.
pub const MIN_PULSE_TICKS: u32 = EDGE_BLIND_TICKS;

/// The alternation of one edge state machine's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeFifo {
    next_rise: bool,
    /// The tick of the last word popped, if known (not across a loss).
    last: Option<u32>,
}

impl EdgeFifo {
    /// The tracker for a state machine started at `entry_for(level)`.
    pub const fn new(level_high: bool) -> Self {
        Self { next_rise: !level_high, last: None }
    }

    /// Where to start the state machine for a pin at `level_high`: waiting
    /// for the edge that can come next.
    pub const fn entry_for(level_high: bool) -> u8 {
        if level_high {
            EDGES_ENTRY_HIGH
        } else {
            EDGES_ENTRY_LOW
        }
    }

    /// The next word popped: the edge's tick, whether it rose, and whether
    /// it came within [`EDGE_BLIND_TICKS`] of the edge before (narrow: its
    /// tick may be late).
    pub fn word(&mut self, w: u32) -> (u32, bool, bool) {
        let rise = self.next_rise;
        self.next_rise = !rise;
        let tick = capture_tick(w);
        let narrow = self.last.is_some_and(|l| tick.wrapping_sub(l) <= EDGE_BLIND_TICKS);
        self.last = Some(tick);
        (tick, rise, narrow)
    }

    /// After words were lost: set what comes next from the state machine's
    /// program counter `pc`, read with its FIFO empty. After a rise's push
    /// (the wait-for-low loop and the decrements before it) a fall comes
    /// next, after a fall's a rise. `false` while it is inside a capture
    /// (the `in` and `push` of either edge: the push may not have happened
    /// yet): read again, two clocks later it is out.
    pub fn resync(&mut self, pc: u8) -> bool {
        self.last = None;
        match pc.wrapping_sub(EDGES_AT) {
            2..=5 => self.next_rise = false,
            8..=11 => self.next_rise = true,
            _ => return false,
        }
        true
    }
}

/// Whether an edge is one `polarity` captures.
pub const fn wanted(polarity: Option<Polarity>, rise: bool) -> bool {
    match polarity {
        None => false,
        Some(Polarity::Both) => true,
        Some(Polarity::Rising) => rise,
        Some(Polarity::Falling) => !rise,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::pico::program::EDGES;

    #[test]
    fn words_alternate_from_the_level_at_start() {
        let mut low = EdgeFifo::new(false);
        assert!(low.word(!5).1);
        assert!(!low.word(!9).1);
        assert!(low.word(!12).1);
        let mut high = EdgeFifo::new(true);
        assert_eq!(high.word(!10), (9, false, false));
        assert_eq!(EdgeFifo::entry_for(false), EDGES_ENTRY_LOW);
        assert_eq!(EdgeFifo::entry_for(true), EDGES_ENTRY_HIGH);
    }

    #[test]
    fn resync_reads_the_program_counter_by_the_programs_layout() {
        // The regions are where the program's pushes are: after the first
        // push (index 1) up to the second `in` (index 6), a rise was last.
        let push_rise = EDGES_AT + 1;
        let in_fall = EDGES_AT + 6;
        assert_eq!(EDGES[1], crate::board::pico::program::PUSH_NOBLOCK);
        assert_eq!(EDGES[7], crate::board::pico::program::PUSH_NOBLOCK);
        let mut f = EdgeFifo::new(false);
        for pc in push_rise + 1..in_fall {
            assert!(f.resync(pc), "{pc}");
            assert!(!f.next_rise, "{pc}: a fall comes next");
        }
        for pc in in_fall + 2..EDGES_AT + 12 {
            assert!(f.resync(pc), "{pc}");
            assert!(f.next_rise, "{pc}: a rise comes next");
        }
        for pc in [EDGES_AT, EDGES_AT + 1, in_fall, in_fall + 1, 0, 3, 16, 31] {
            assert!(!f.resync(pc), "{pc}: inside a capture or not the edge program");
        }
    }

    /// Clocks from a `jmp pin` to the next one, following the program
    /// from `pc` with the pin at `level` throughout.
    fn clocks_to_next_look(mut pc: u8, level: bool) -> u32 {
        use crate::board::pico::program::{Cond, EDGES_WRAP};
        for clocks in 1..20 {
            let w = EDGES[(pc - EDGES_AT) as usize];
            let jmp_pin = |c: Cond| w & 0xe0e0 == crate::board::pico::program::jmp(c, 0) & 0xe0e0;
            let next = if w >> 13 == 0 {
                let taken = if jmp_pin(Cond::Pin) { level } else { true };
                if taken {
                    (w & 0x1f) as u8
                } else if pc == EDGES_WRAP.1 {
                    EDGES_WRAP.0
                } else {
                    pc + 1
                }
            } else {
                pc + 1
            };
            if w >> 13 == 0 && jmp_pin(Cond::Pin) && clocks > 1 {
                return clocks - 1;
            }
            pc = next;
        }
        panic!("no jmp pin after {pc}")
    }

    #[test]
    fn the_blind_window_is_the_edge_programs() {
        // Waiting, the program looks every two clocks (one tick) ...
        assert_eq!(clocks_to_next_look(EDGES_ENTRY_LOW + 1, false), 2, "low, waiting for a rise");
        assert_eq!(clocks_to_next_look(EDGES_ENTRY_HIGH + 1, true), 2, "high, waiting for a fall");
        // ... and after the look that saw an edge, the next is this many
        // clocks later: the window in ticks is one look in each two clocks
        // missed.
        let rise = clocks_to_next_look(EDGES_ENTRY_LOW + 1, true);
        let fall = clocks_to_next_look(EDGES_ENTRY_HIGH + 1, false);
        assert_eq!((rise, fall), (6, 6));
        assert_eq!(EDGE_BLIND_TICKS, rise / 2);
    }

    #[test]
    fn an_edge_in_the_blind_window_is_narrow() {
        let mut f = EdgeFifo::new(false);
        assert_eq!(f.word(!101), (100, true, false), "the first edge: nothing before it");
        assert_eq!(f.word(!104), (103, false, true), "3 ticks after: maybe late");
        assert_eq!(f.word(!108), (107, true, false), "4 ticks after: exact");
        assert!(f.resync(EDGES_AT + 3));
        assert!(!f.word(!109).2, "nothing known before a loss");
    }

    #[test]
    fn polarity_filters() {
        assert!(wanted(Some(Polarity::Both), false));
        assert!(wanted(Some(Polarity::Rising), true));
        assert!(!wanted(Some(Polarity::Rising), false));
        assert!(wanted(Some(Polarity::Falling), false));
        assert!(!wanted(None, true));
    }
}
