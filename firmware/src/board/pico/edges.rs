//! What an edge state machine's words mean. The edge program (`program::EDGES`)
//! pushes X at every rise and every fall of its pin, alternating; it does
//! not say which. [`EdgeFifo`] knows from where the state machine was
//! started (the pin's level then) and from counting, and after words were
//! lost (FDEBUG RXSTALL) from where the state machine is now.

use super::program::{capture_tick, EDGES_AT, EDGES_ENTRY_HIGH, EDGES_ENTRY_LOW};
use crate::hwloop::seam::Polarity;

/// The alternation of one edge state machine's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeFifo {
    next_rise: bool,
}

impl EdgeFifo {
    /// The tracker for a state machine started at `entry_for(level)`.
    pub const fn new(level_high: bool) -> Self {
        Self { next_rise: !level_high }
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

    /// The next word popped: the edge's tick and whether it rose.
    pub fn word(&mut self, w: u32) -> (u32, bool) {
        let rise = self.next_rise;
        self.next_rise = !rise;
        (capture_tick(w), rise)
    }

    /// After words were lost: set what comes next from the state machine's
    /// program counter `pc`, read with its FIFO empty. After a rise's push
    /// (the wait-for-low loop and the decrements before it) a fall comes
    /// next, after a fall's a rise. `false` while it is inside a capture
    /// (the `in` and `push` of either edge: the push may not have happened
    /// yet): read again, two clocks later it is out.
    pub fn resync(&mut self, pc: u8) -> bool {
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
        assert_eq!(high.word(!10), (9, false));
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

    #[test]
    fn polarity_filters() {
        assert!(wanted(Some(Polarity::Both), false));
        assert!(wanted(Some(Polarity::Rising), true));
        assert!(!wanted(Some(Polarity::Rising), false));
        assert!(wanted(Some(Polarity::Falling), false));
        assert!(!wanted(None, true));
    }
}
