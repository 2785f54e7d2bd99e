//! Sequence tracking: which sequence numbers came, were lost, came twice or
//! late, in a fixed window ([`SeqTracker`]).

/// Sequence numbers older than this behind the newest are not remembered:
/// a sample that old is counted as a duplicate and not used.
pub const SEQ_WINDOW: u64 = 4096;

/// What [`SeqTracker::observe`] made of a sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqVerdict {
    /// The next one, or one after a gap (the gap is counted lost).
    New,
    /// Arrived after later ones; it fills a gap counted lost before.
    Late,
    /// Seen before (or too old to tell): not to be used again.
    Duplicate,
}

/// Counts lost, duplicate and out-of-order sequence numbers with a fixed
/// bitmap of the last [`SEQ_WINDOW`] numbers.
#[derive(Debug, Clone)]
pub struct SeqTracker {
    /// The number expected next; once `u64::MAX` was seen it stays there
    /// and `exhausted` says that every number has been passed.
    next: u64,
    exhausted: bool,
    seen: [u64; (SEQ_WINDOW / 64) as usize],
    /// Sequence numbers never received (so far).
    pub lost: u64,
    /// Received more than once.
    pub duplicates: u64,
    /// Received after a later one.
    pub out_of_order: u64,
}

impl SeqTracker {
    /// Expect `first` next.
    pub fn new(first: u64) -> Self {
        Self {
            next: first,
            exhausted: false,
            seen: [0; (SEQ_WINDOW / 64) as usize],
            lost: 0,
            duplicates: 0,
            out_of_order: 0,
        }
    }

    /// The sequence number expected next (`u64::MAX` once that was seen).
    pub fn next(&self) -> u64 {
        self.next
    }

    #[inline]
    fn slot(seq: u64) -> (usize, u64) {
        let i = seq % SEQ_WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    /// Account for `seq`.
    #[inline]
    pub fn observe(&mut self, seq: u64) -> SeqVerdict {
        if seq >= self.next && !self.exhausted {
            let gap = seq - self.next;
            if gap >= SEQ_WINDOW {
                self.seen = [0; (SEQ_WINDOW / 64) as usize];
            } else {
                // The slots of the skipped numbers still hold bits from a
                // window ago: clear them, so a late arrival is recognised.
                for s in self.next..seq {
                    let (w, b) = Self::slot(s);
                    self.seen[w] &= !b;
                }
            }
            self.lost += gap;
            let (w, b) = Self::slot(seq);
            self.seen[w] |= b;
            match seq.checked_add(1) {
                Some(n) => self.next = n,
                None => {
                    self.next = u64::MAX;
                    self.exhausted = true;
                }
            }
            return SeqVerdict::New;
        }
        // How far behind the next expected number (2^64 once exhausted).
        let behind = u128::from(self.next) + u128::from(self.exhausted) - u128::from(seq);
        if behind > u128::from(SEQ_WINDOW) {
            self.duplicates += 1;
            return SeqVerdict::Duplicate;
        }
        let (w, b) = Self::slot(seq);
        if self.seen[w] & b != 0 {
            self.duplicates += 1;
            SeqVerdict::Duplicate
        } else {
            self.seen[w] |= b;
            self.lost = self.lost.saturating_sub(1);
            self.out_of_order += 1;
            SeqVerdict::Late
        }
    }

    /// The probe says numbers up to `end` (exclusive) were taken: any not
    /// seen by now are lost.
    pub fn finish(&mut self, end: u64) {
        if end > self.next && !self.exhausted {
            self.lost += end - self.next;
            self.next = end;
        }
    }
}
