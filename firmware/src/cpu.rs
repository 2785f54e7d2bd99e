//! Where the probe's CPU time goes: exclusive time per part of the app
//! (each interrupt task, the engine task, the link, sleep), in counter
//! ticks, so that a run can say how much of the CPU a sample costs and
//! which part costs it.
//!
//! Every task calls [`CpuMeter::enter`] first and [`CpuMeter::leave`] last;
//! the idle loop switches between [`Part::Sleep`] (from right before its
//! `WFI`, taken with interrupts masked, to right after it) and
//! [`Part::Other`]. Each call charges the ticks since the last call to the
//! part that ran in between: a preempted task is charged only up to the
//! preemption and again from its return, so the parts are exclusive and
//! add up to the elapsed time exactly (the counter's differences
//! telescope). What no task body holds is [`Part::Other`]: the hardware's
//! exception entry and return, RTIC's dispatch and the idle loop itself.
//! An interrupt's entry before its first read is charged to the part it
//! preempted (a few tens of cycles each).
//!
//! The meter holds no register: the board reads its counter and passes the
//! raw 32-bit value; differences wrap, so a counter read at least once per
//! wrap period (43 s at 100 MHz) is enough.

/// A part of the app.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Part {
    /// Asleep in `WFI`.
    Sleep = 0,
    /// Awake outside every task body: exception entry and return, RTIC
    /// dispatch, the idle loop.
    Other = 1,
    /// The target line's interrupt (capture: the counter read, the byte or
    /// edge logged).
    Capture = 2,
    /// The wake-up (timer) interrupt.
    Wake = 3,
    /// The engine task: matching, tick extension, the schedule, batching,
    /// encoding (postcard, CRC, COBS) into the output queue.
    Engine = 4,
    /// Receiving host bytes (and decoding the host's frames).
    HostRx = 5,
    /// Sending the output queue on the host link (the link driver).
    HostTx = 6,
}

/// How many parts there are.
pub const PARTS: usize = 7;

/// Every part, in [`Part`]'s order.
pub const ALL: [Part; PARTS] =
    [Part::Sleep, Part::Other, Part::Capture, Part::Wake, Part::Engine, Part::HostRx, Part::HostTx];

/// How deep tasks may nest (RTIC priorities 0 to 3 and one to spare).
const DEPTH: usize = 6;

/// Exclusive ticks per part since the meter started.
#[derive(Debug, Clone)]
pub struct CpuMeter {
    ticks: [u64; PARTS],
    current: Part,
    stack: [Part; DEPTH],
    depth: usize,
    last: u32,
    /// Entries deeper than the meter holds, open now: charged to the part outside.
    excess: u32,
    /// Entries ever deeper than the meter holds (six levels; a board with more priority
    /// levels than the meter holds).
    pub too_deep: u32,
}

impl CpuMeter {
    /// A meter whose time starts at counter value `now`, in [`Part::Other`].
    pub const fn new(now: u32) -> Self {
        Self {
            ticks: [0; PARTS],
            current: Part::Other,
            stack: [Part::Other; DEPTH],
            depth: 0,
            last: now,
            excess: 0,
            too_deep: 0,
        }
    }

    #[inline]
    fn charge(&mut self, now: u32) {
        let dt = now.wrapping_sub(self.last);
        self.ticks[self.current as usize] += u64::from(dt);
        self.last = now;
    }

    /// A task body starts (at `now`).
    #[inline]
    pub fn enter(&mut self, part: Part, now: u32) {
        self.charge(now);
        if self.depth == DEPTH {
            self.excess += 1;
            self.too_deep = self.too_deep.saturating_add(1);
            return;
        }
        self.stack[self.depth] = self.current;
        self.depth += 1;
        self.current = part;
    }

    /// The task body that entered last ends (at `now`).
    #[inline]
    pub fn leave(&mut self, now: u32) {
        self.charge(now);
        if self.excess > 0 {
            self.excess -= 1;
        } else if self.depth > 0 {
            self.depth -= 1;
            self.current = self.stack[self.depth];
        }
    }

    /// The bottom level (the idle loop) goes to sleep or wakes: charge the
    /// time so far and go on as `part`.
    #[inline]
    pub fn switch(&mut self, part: Part, now: u32) {
        self.charge(now);
        self.current = part;
    }

    /// The ticks of each part so far, charged up to `now`.
    pub fn ticks(&mut self, now: u32) -> [u64; PARTS] {
        self.charge(now);
        self.ticks
    }
}

/// What one run cost, from two readings of [`CpuMeter::ticks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RunCost {
    /// Exclusive ticks per part over the run.
    pub ticks: [u64; PARTS],
}

impl RunCost {
    /// The difference of two readings: `end` less `start`.
    pub fn between(start: &[u64; PARTS], end: &[u64; PARTS]) -> Self {
        let mut ticks = [0; PARTS];
        for (i, t) in ticks.iter_mut().enumerate() {
            *t = end[i].saturating_sub(start[i]);
        }
        Self { ticks }
    }

    /// Ticks awake (every part but sleep).
    pub fn busy(&self) -> u64 {
        self.ticks.iter().sum::<u64>() - self.ticks[Part::Sleep as usize]
    }

    /// Every tick of the run.
    pub fn elapsed(&self) -> u64 {
        self.ticks.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_tasks_are_charged_exclusively_and_add_up_to_the_elapsed_time() {
        let mut m = CpuMeter::new(1000);
        m.switch(Part::Sleep, 1010); // 10 other (idle loop)
        m.switch(Part::Other, 1110); // 100 asleep
        m.enter(Part::Engine, 1115); // 5 other (dispatch)
        m.enter(Part::Capture, 1150); // 35 engine, then preempted
        m.leave(1170); // 20 capture
        m.leave(1200); // 30 more engine
        m.enter(Part::HostTx, 1204); // 4 other
        m.leave(1244); // 40 host tx
        let t = m.ticks(1250); // 6 other
        assert_eq!(t[Part::Sleep as usize], 100);
        assert_eq!(t[Part::Engine as usize], 65);
        assert_eq!(t[Part::Capture as usize], 20);
        assert_eq!(t[Part::HostTx as usize], 40);
        assert_eq!(t[Part::Other as usize], 10 + 5 + 4 + 6);
        assert_eq!(t.iter().sum::<u64>(), 250);
        let c = RunCost::between(&[0; PARTS], &t);
        assert_eq!((c.busy(), c.elapsed()), (150, 250));
    }

    #[test]
    fn the_counter_may_wrap_between_two_reads() {
        let mut m = CpuMeter::new(u32::MAX - 5);
        m.enter(Part::Wake, u32::MAX - 1); // 4 other
        m.leave(3); // 5 wake, across the wrap
        let t = m.ticks(3);
        assert_eq!((t[Part::Other as usize], t[Part::Wake as usize]), (4, 5));
    }

    #[test]
    fn too_deep_an_entry_is_counted_and_charged_outside() {
        let mut m = CpuMeter::new(0);
        for i in 0..DEPTH as u32 {
            m.enter(Part::Engine, i);
        }
        m.enter(Part::Capture, 100);
        assert_eq!(m.too_deep, 1);
        m.leave(110);
        m.leave(120);
        // The extra entry was charged to the Engine around it, and its
        // leave did not pop a level of the others.
        let t = m.ticks(120);
        assert_eq!((t[Part::Capture as usize], t[Part::Engine as usize]), (0, 120));
    }
}
