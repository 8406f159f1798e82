//! Timers as a fixed table of deadlines indexed by an engine's timer enum
//! (STYLE.md "Timers"; quinn-proto `connection/timer.rs`): the next wake-up
//! is the earliest deadline, and expired timers are handed out in a fixed
//! order, so that timers due at the same instant always run in that order.

use meshbed_core::Instant;
use std::marker::PhantomData;

/// The most timers one engine has (TCP's six, with room to spare): the
/// table is a fixed array, so that it needs no count from its enum.
const MAX_TIMERS: usize = 8;

/// An engine's timer enum, indexing a [`TimerTable`].
///
/// An enum lists its variants once more in [`TimerId::ALL`]; a generic
/// cannot enumerate an enum's variants, and a slot's number is derived from
/// that list, so the two cannot disagree about numbering (a variant left out
/// of it panics at its first use, in any test that arms it).
pub(crate) trait TimerId: Copy + PartialEq + std::fmt::Debug + 'static {
    /// Every timer, in the order [`TimerTable::take_expired`] hands them out.
    const ALL: &'static [Self];
    /// The timer's slot in the table: its place in [`TimerId::ALL`].
    fn index(self) -> usize {
        Self::ALL.iter().position(|&t| t == self).expect("a timer is listed in its enum's ALL")
    }
}

/// A fixed table of deadlines indexed by a timer enum (quinn-proto
/// `connection/timer.rs`); the next wake-up is the earliest.
#[derive(Clone, Debug)]
pub(crate) struct TimerTable<T> {
    deadlines: [Option<Instant>; MAX_TIMERS],
    timer: PhantomData<T>,
}

impl<T: TimerId> Default for TimerTable<T> {
    fn default() -> Self {
        debug_assert!(T::ALL.len() <= MAX_TIMERS, "at most {MAX_TIMERS} timers");
        TimerTable { deadlines: [None; MAX_TIMERS], timer: PhantomData }
    }
}

impl<T: TimerId> TimerTable<T> {
    /// Arms `timer` at `at`, or disarms it for `None`.
    pub(crate) fn set(&mut self, timer: T, at: impl Into<Option<Instant>>) {
        self.deadlines[timer.index()] = at.into();
    }
    pub(crate) fn stop(&mut self, timer: T) {
        self.deadlines[timer.index()] = None;
    }
    pub(crate) fn get(&self, timer: T) -> Option<Instant> {
        self.deadlines[timer.index()]
    }
    /// Whether `timer` is armed and due at or before `now`.
    pub(crate) fn is_expired(&self, timer: T, now: Instant) -> bool {
        self.get(timer).is_some_and(|at| at <= now)
    }
    pub(crate) fn stop_all(&mut self) {
        self.deadlines = [None; MAX_TIMERS];
    }
    pub(crate) fn next(&self) -> Option<Instant> {
        self.deadlines.iter().flatten().min().copied()
    }
    /// Disarms and returns the first timer (in [`TimerId::ALL`] order) due at
    /// or before `now`. Handlers only re-arm timers for strictly later
    /// instants, so draining this in a loop terminates.
    pub(crate) fn take_expired(&mut self, now: Instant) -> Option<T> {
        let timer = T::ALL.iter().copied().find(|&t| self.is_expired(t, now))?;
        self.stop(timer);
        Some(timer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Copy, Clone, Debug, PartialEq, Eq)]
    enum Timer {
        Late,
        Early,
    }
    impl TimerId for Timer {
        // Handed out in this order, not the declaration's.
        const ALL: &'static [Timer] = &[Timer::Early, Timer::Late];
    }

    #[test]
    fn expired_timers_come_out_in_list_order_and_disarmed() {
        let mut t = TimerTable::<Timer>::default();
        let at = |ns| Instant::from_nanos(ns);
        t.set(Timer::Late, at(5));
        t.set(Timer::Early, at(5));
        assert_eq!((t.next(), t.take_expired(at(4))), (Some(at(5)), None));
        assert_eq!(t.take_expired(at(5)), Some(Timer::Early));
        assert_eq!(t.take_expired(at(9)), Some(Timer::Late));
        assert_eq!((t.take_expired(at(9)), t.next()), (None, None));
    }
}
