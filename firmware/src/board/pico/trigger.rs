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
