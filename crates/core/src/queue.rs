//! The event queue: ordered by `(time, insertion sequence)`.
//!
//! Simultaneous events run in the order they were scheduled (ns-3
//! `scheduler.h`), which is what makes a run a pure function of its seed.
//! Cancellation is by the caller: components keep a generation counter and
//! ignore stale events, so the queue never has to search.

use crate::time::Instant;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    at: Instant,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: `BinaryHeap` is a max-heap and we want the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.at.cmp(&self.at).then_with(|| other.seq.cmp(&self.seq))
    }
}

/// A min-queue of events keyed by time, FIFO among equal times.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    now: Instant,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(1024), next_seq: 0, now: Instant::ZERO }
    }

    /// The time of the last event popped.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Schedules `event` at `at`. An event in the past is clamped to `now`
    /// (it runs next among those at `now`), so the clock never goes backwards.
    pub fn schedule(&mut self, at: Instant, event: E) {
        let at = at.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { at, seq, event });
    }

    /// Removes and returns the earliest event, advancing `now` to its time.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let e = self.heap.pop()?;
        self.now = e.at;
        Some((e.at, e.event))
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|e| e.at)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_then_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(Instant::from_nanos(20), "c");
        q.schedule(Instant::from_nanos(10), "a");
        q.schedule(Instant::from_nanos(20), "d");
        q.schedule(Instant::from_nanos(10), "b");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, ["a", "b", "c", "d"]);
        assert_eq!(q.now(), Instant::from_nanos(20));
    }

    #[test]
    fn past_events_are_clamped_to_now() {
        let mut q = EventQueue::new();
        q.schedule(Instant::from_nanos(50), 1);
        q.pop();
        q.schedule(Instant::from_nanos(10), 2);
        assert_eq!(q.pop(), Some((Instant::from_nanos(50), 2)));
    }

    /// Interleaved schedules and pops over few distinct times (many ties)
    /// come out exactly as a stable sort by time of what was scheduled.
    #[test]
    fn matches_a_stable_sort_under_interleaving() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut q = EventQueue::new();
        let mut pending: Vec<(u64, u64)> = Vec::new(); // (time, id), in schedule order
        let mut id = 0u64;
        for _ in 0..20_000 {
            if rng.gen_bool(0.55) || pending.is_empty() {
                let at = q.now().as_nanos() + rng.gen_range(0..8u64);
                q.schedule(Instant::from_nanos(at), id);
                pending.push((at, id));
                id += 1;
            } else {
                // The reference: the earliest time, the first scheduled among it.
                let (i, _) = pending.iter().enumerate().min_by_key(|(i, (t, _))| (*t, *i)).unwrap();
                let (t, want) = pending.remove(i);
                assert_eq!(q.pop(), Some((Instant::from_nanos(t), want)));
            }
            assert_eq!(q.len(), pending.len());
        }
    }
}
