//! The event queue: ordered by `(time, insertion sequence)`.
//!
//! Simultaneous events run in the order they were scheduled (ns-3
//! `scheduler.h`), which is what makes a run a pure function of its seed.
//! Cancellation is by the caller: components keep a generation counter and
//! ignore stale events, so the queue never has to search.
//!
//! Layout (issue 28: the heap's sift was a third of a 100-node run): the
//! heap holds only 16-byte keys, four children to a 64-byte cache line (a
//! 4-ary heap), and the events sit in a slab the key points into. The
//! order is exactly `(time, sequence)` whatever the heap's shape, so a
//! run's events and trace hash are those of any other correct priority
//! queue.

use crate::time::Instant;
use dary_heap::QuaternaryHeap;
use slab::Slab;
use std::cmp::Ordering;

/// Bits of a key's `tag` that hold the event's slab slot; the rest hold
/// its insertion sequence.
const SLOT_BITS: u32 = 28;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;
/// The largest sequence a tag can hold before the pending keys are
/// renumbered (2^36 ≈ 69 G events: hours of simulated events).
const SEQ_LIMIT: u64 = 1 << (64 - SLOT_BITS);

/// `(time, sequence)` with the event's slot in the low bits of `tag`:
/// sequences are unique, so comparing tags compares sequences.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    at_ns: u64,
    tag: u64,
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Key {
    // Reversed: the heap is a max-heap and we want the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.at_ns.cmp(&self.at_ns).then_with(|| other.tag.cmp(&self.tag))
    }
}

/// A min-queue of events keyed by time, FIFO among equal times.
pub struct EventQueue<E> {
    heap: QuaternaryHeap<Key>,
    events: Slab<E>,
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
        EventQueue {
            heap: QuaternaryHeap::with_capacity(1024),
            events: Slab::with_capacity(1024),
            next_seq: 0,
            now: Instant::ZERO,
        }
    }

    /// The time of the last event popped.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Schedules `event` at `at`. An event in the past is clamped to `now`
    /// (it runs next among those at `now`), so the clock never goes backwards.
    pub fn schedule(&mut self, at: Instant, event: E) {
        let at = at.max(self.now);
        if self.next_seq == SEQ_LIMIT {
            self.renumber();
        }
        let slot = self.events.insert(event) as u64;
        // 2^28 pending events would hold gigabytes of them; no scenario
        // within the keys' limits comes near it.
        assert!(slot <= SLOT_MASK, "more than 2^28 pending events");
        let tag = (self.next_seq << SLOT_BITS) | slot;
        self.next_seq += 1;
        self.heap.push(Key { at_ns: at.as_nanos(), tag });
    }

    /// Gives the pending keys the sequences 0, 1, … in their order, so that
    /// new sequences fit the tag again; the order is unchanged.
    #[cold]
    fn renumber(&mut self) {
        let mut keys = std::mem::take(&mut self.heap).into_sorted_vec();
        // Sorted ascending by the reversed order: the latest first.
        keys.reverse();
        for (seq, k) in keys.iter_mut().enumerate() {
            k.tag = ((seq as u64) << SLOT_BITS) | (k.tag & SLOT_MASK);
        }
        self.next_seq = keys.len() as u64;
        self.heap = keys.into();
    }

    /// Removes and returns the earliest event, advancing `now` to its time.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let k = self.heap.pop()?;
        let at = Instant::from_nanos(k.at_ns);
        self.now = at;
        let event = self.events.remove((k.tag & SLOT_MASK) as usize);
        Some((at, event))
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|k| Instant::from_nanos(k.at_ns))
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
    use rand::{Rng, SeedableRng};

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
    /// come out exactly as a stable sort by time of what was scheduled
    /// (the reference), slots being reused as events leave.
    #[test]
    fn matches_a_stable_sort_under_interleaving() {
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

    /// Renumbering at the sequence limit keeps the order, ties included.
    #[test]
    fn renumbering_keeps_the_order() {
        let mut q = EventQueue::new();
        q.next_seq = SEQ_LIMIT - 3;
        for (at, e) in [(30, "e"), (10, "a"), (30, "f"), (10, "b"), (20, "c"), (30, "g"), (20, "d")] {
            q.schedule(Instant::from_nanos(at), e);
        }
        assert!(q.next_seq < 16, "renumbered");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, ["a", "b", "c", "d", "e", "f", "g"]);
    }
}
