//! The targets PIO1's trigger state machine holds, in the order it toggles
//! them: the compare's bookkeeping for [`super::PioTimer`]. PIO1 takes its
//! targets one by one from its TX FIFO and toggles the trigger pin at each
//! (the stimulus program), so every target pushed is toggled, armed or
//! not: a disarmed one (the answer came first) still toggles PIO's level,
//! behind a pad held by its override. The queue says which toggles are
//! still to come and which of them are wanted (*live*), so that the pad
//! follows PIO again only once the unwanted (*stale*) ones are past.
//!
//! A toggle is known to be past by time (the counter has passed its tick:
//! the state machine never misses a target pushed
//! [`TARGET_LEAD_TICKS`](super::timer::TARGET_LEAD_TICKS) ahead), not by
//! counting IRQ flags: one flag bit stands for every toggle since it was
//! last cleared, and an interrupt held off past a pulse (10 µs) would merge
//! a rise's flag with its fall's.

use super::edges::EdgeFifo;

/// The most PIO1 may lag PIO0 (either way) after its sync, in ticks: a
/// pad one or two clocks slower than the nominal
/// ([`SYNC_SEEN_CLOCKS`](super::program::SYNC_SEEN_CLOCKS)) leaves half a
/// tick or one; anything more is not a slow pad, and the sync is refused.
pub const MAX_SYNC_LAG_TICKS: u32 = 2;

/// PIO1's lag behind PIO0's count in ticks (wrapping: `u32::MAX` is one
/// tick ahead), from one edge state machine's words while it watched the
/// sync pin at boot: PIO0 raised it at tick `a` and lowered it `width`
/// later, then PIO1 did the same at `b` on its own (synchronised) count.
/// `high` is the level the state machine's own pin had when it was
/// switched to the sync pin (low there): a first fall then, and a last rise
/// when it is switched back. Both edges of each pulse must agree (the same
/// synchroniser and sampling for all four), and the lag must be within
/// [`MAX_SYNC_LAG_TICKS`]; else `None`.
///
/// The words are taken one tick a sample (the edge program's `jmp pin`
/// on every second clock): a lag of an even number of clocks is measured
/// exactly; an odd one as the whole ticks either side, so the trigger is
/// then 8 ns early or late (half a tick, the bound docs/dev/trigger.md states).
pub fn sync_lag(words: &[u32], high: bool, a: u32, b: u32, width: u32) -> Option<u32> {
    let mut fifo = EdgeFifo::new(high);
    let (mut rises, mut falls, mut nr, mut nf) = ([0u32; 2], [0u32; 2], 0, 0);
    let skip = usize::from(high);
    if words.len() != 4 + 2 * skip {
        return None;
    }
    for (i, &w) in words.iter().enumerate() {
        let (tick, rise, _) = fifo.word(w);
        if i < skip || i >= skip + 4 {
            continue;
        }
        if rise {
            rises[nr] = tick;
            nr += 1;
        } else {
            falls[nf] = tick;
            nf += 1;
        }
    }
    let lag = rises[1].wrapping_sub(rises[0]).wrapping_sub(b.wrapping_sub(a));
    let fall_lag = falls[1].wrapping_sub(falls[0]).wrapping_sub(b.wrapping_sub(a));
    let widths = falls[0].wrapping_sub(rises[0]) == width;
    (lag == fall_lag && widths && lag.wrapping_add(MAX_SYNC_LAG_TICKS) <= 2 * MAX_SYNC_LAG_TICKS)
        .then_some(lag)
}

/// What a held target's toggle is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// Wanted: the compare armed now (its toggle is the match).
    Live,
    /// Unwanted: disarmed (or forced in software) after it was pushed.
    Stale,
    /// A pulse's fall, pushed with its rise and wanted once the loop asks
    /// for it ([`TriggerQueue::revive`]).
    Queued,
}

/// Targets PIO1's trigger state machine holds at most: the one it compares
/// and its TX FIFO's four.
pub const DEPTH: usize = 5;

/// The pushed targets, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TriggerQueue {
    ticks: [u32; DEPTH],
    tags: [Tag; DEPTH],
    head: usize,
    len: usize,
}

impl Default for TriggerQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl TriggerQueue {
    /// Nothing pushed.
    pub const fn new() -> Self {
        Self { ticks: [0; DEPTH], tags: [Tag::Stale; DEPTH], head: 0, len: 0 }
    }

    /// Targets not yet toggled.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Nothing left to toggle.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn at(&self, i: usize) -> usize {
        (self.head + i) % DEPTH
    }

    /// The tick of the newest target, if any.
    pub fn last(&self) -> Option<u32> {
        (self.len > 0).then(|| self.ticks[self.at(self.len - 1)])
    }

    /// Whether `tick` may follow the newest target: the state machine
    /// compares in order, so a target earlier than (or too close after)
    /// the one before would be missed, and it would then wait a whole
    /// count period (68.7 s) for it.
    pub fn may_push(&self, tick: u32, lead: u32) -> bool {
        self.len < DEPTH && self.last().is_none_or(|l| (lead..u32::MAX / 2).contains(&tick.wrapping_sub(l)))
    }

    /// Append a target (the caller checked [`Self::may_push`]).
    pub fn push(&mut self, tick: u32, tag: Tag) {
        if self.len == DEPTH {
            return;
        }
        let i = self.at(self.len);
        self.ticks[i] = tick;
        self.tags[i] = tag;
        self.len += 1;
    }

    /// Drop every target the counter `now` has passed; whether one of them
    /// was live (its toggle was a wanted edge).
    pub fn pop_passed(&mut self, now: u32) -> bool {
        let mut live = false;
        while self.len > 0 && (1..u32::MAX / 2).contains(&now.wrapping_sub(self.ticks[self.head])) {
            live |= self.tags[self.head] == Tag::Live;
            self.head = (self.head + 1) % DEPTH;
            self.len -= 1;
        }
        live
    }

    /// Whether the oldest target is live and the counter `now` has passed it.
    pub fn live_passed(&self, now: u32) -> bool {
        self.len > 0
            && self.tags[self.head] == Tag::Live
            && (1..u32::MAX / 2).contains(&now.wrapping_sub(self.ticks[self.head]))
    }

    /// Whether an unwanted toggle is still to come.
    pub fn any_stale(&self) -> bool {
        (0..self.len).any(|i| self.tags[self.at(i)] == Tag::Stale)
    }

    /// Whether a pulse's fall is held (pushed with its rise).
    pub fn has_queued(&self) -> bool {
        (0..self.len).any(|i| self.tags[self.at(i)] == Tag::Queued)
    }

    /// Every target unwanted (the compare was disarmed or forced).
    pub fn all_stale(&mut self) {
        for i in 0..self.len {
            let j = self.at(i);
            self.tags[j] = Tag::Stale;
        }
    }

    /// Want the target at `tick` again, if it is held (a fall queued with
    /// its rise, which a disarm had marked unwanted); whether it was.
    pub fn revive(&mut self, tick: u32) -> bool {
        for i in 0..self.len {
            let j = self.at(i);
            if self.ticks[j] == tick {
                self.tags[j] = Tag::Live;
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words an edge state machine pushes for the sync pin's edges at
    /// these ticks, the first one's level low (capture words: X one tick
    /// after the edge, `program::capture_tick`).
    fn words(ticks: &[u32]) -> std::vec::Vec<u32> {
        ticks.iter().map(|t| !(t + 1)).collect()
    }

    #[test]
    fn the_sync_lag_is_pio1s_edges_against_pio0s() {
        let (a, b, w) = (10_000, 12_000, 200);
        // Its own pin low: just the four edges.
        assert_eq!(sync_lag(&words(&[a + 5, a + 5 + w, b + 5, b + 5 + w]), false, a, b, w), Some(0));
        assert_eq!(sync_lag(&words(&[a + 5, a + 5 + w, b + 6, b + 6 + w]), false, a, b, w), Some(1));
        assert_eq!(
            sync_lag(&words(&[a, a + w, b - 2, b - 2 + w]), false, a, b, w),
            Some(2u32.wrapping_neg())
        );
        // Its own pin high (our idle UART TX): a fall when it is moved to
        // the sync pin, a rise when it is moved back.
        let framed = words(&[a - 300, a + 3, a + 3 + w, b + 4, b + 4 + w, b + 900]);
        assert_eq!(sync_lag(&framed, true, a, b, w), Some(1));
        assert_eq!(sync_lag(&framed[1..5], true, a, b, w), None, "the framing edges missing");
        // Refused: too far, the two edges disagreeing, a pulse not seen whole.
        assert_eq!(sync_lag(&words(&[a, a + w, b + 3, b + 3 + w]), false, a, b, w), None);
        assert_eq!(sync_lag(&words(&[a, a + w, b, b + 1 + w]), false, a, b, w), None);
        assert_eq!(sync_lag(&words(&[a, a + w + 1, b, b + w + 1]), false, a, b, w), None);
    }

    #[test]
    fn targets_pass_in_order_and_say_whether_they_were_wanted() {
        let mut q = TriggerQueue::new();
        assert!(q.may_push(1000, 128));
        q.push(1000, Tag::Stale);
        assert!(!q.may_push(1100, 128), "too close after the one before");
        assert!(!q.may_push(900, 128), "before the one before: it would be missed");
        assert!(q.may_push(1200, 128));
        q.push(1200, Tag::Live);
        q.push(1825, Tag::Queued);
        assert!(q.any_stale());
        assert!(!q.pop_passed(1000), "not passed at its own tick");
        assert!(!q.pop_passed(1001), "the stale one passed");
        assert!(!q.any_stale());
        assert!(!q.live_passed(1200));
        assert!(q.live_passed(1201));
        assert!(q.pop_passed(1300));
        assert!(!q.pop_passed(5000), "a queued fall never asked for is no match");
        assert!(q.is_empty());
    }

    #[test]
    fn a_disarm_makes_all_stale_and_a_queued_fall_can_be_wanted_again() {
        let mut q = TriggerQueue::new();
        q.push(10, Tag::Live);
        q.push(635, Tag::Queued);
        assert!(!q.any_stale(), "a queued fall is not stale");
        assert!(q.has_queued());
        q.all_stale();
        assert!(q.any_stale());
        assert!(q.revive(635));
        assert!(!q.revive(999));
        assert!(!q.pop_passed(11), "the rise was disarmed");
        assert!(q.pop_passed(636), "the fall is wanted");
    }

    #[test]
    fn it_holds_five_and_wraps_the_count() {
        let mut q = TriggerQueue::new();
        for i in 0..5u32 {
            let t = (u32::MAX - 1000).wrapping_add(i * 300);
            assert!(q.may_push(t, 128), "{i}");
            q.push(t, Tag::Live);
        }
        assert!(!q.may_push(u32::MAX.wrapping_add(1000), 128), "full");
        assert_eq!(q.len(), 5);
        assert!(q.pop_passed(199), "past the wrap");
        assert_eq!(q.len(), 1);
    }
}
