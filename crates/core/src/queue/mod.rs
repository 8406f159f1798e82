//! The event queue: ordered by `(time, insertion sequence)`.
//!
//! Simultaneous events run in the order they were scheduled (ns-3
//! `scheduler.h`), which is what makes a run a pure function of its seed.
//! Cancellation is by the caller: components keep a generation counter and
//! ignore stale events, so the queue never has to search.
//!
//! A frame on the air reaches every node in range: two events per receiver
//! (first and last energy), a few microseconds apart, scheduled together.
//! [`EventQueue::schedule_batch`] keeps such a group out of the heap: the
//! group is sorted once and the heap holds one entry for it, keyed by its
//! earliest event. Popping that event re-keys the entry in place, which
//! costs a comparison or two while the group's next event is still the
//! earliest of all (the usual case: nothing else happens between a frame's
//! arrivals at its neighbours). Each event of a group keeps the sequence
//! number it would have had alone, so the order of every event is the
//! order of one event at a time, to the bit.
//!
//! A timer ([`EventQueue::set_timer`]) is a slot holding at most one
//! pending event: setting it again replaces the event, which its owner's
//! generation counter would have made stale anyway. A TCP sender moves its
//! retransmission timer on every ACK; each move used to leave its old event
//! in the heap until its time came, and a 6-hop TCP chain kept ~760 entries
//! in the heap instead of ~10 (issue 28). A timer has one heap entry at a
//! time: moved later, the entry stays where it was and is re-keyed when it
//! reaches the top; moved earlier, a new entry is pushed and the old one is
//! dropped when it surfaces. Its event keeps the sequence number a plain
//! [`EventQueue::schedule`] would have given it, so every event that runs
//! runs in the same order as if each move had been a new event.

mod heap;

use crate::time::Instant;
use heap::{Entry, KeyHeap};

/// The slot bit that marks a batch.
const BATCH: u32 = 1 << 31;
/// The slot bit that marks a timer.
const TIMER: u32 = 1 << 30;
/// The slot bits that say what a slot is.
const KIND: u32 = BATCH | TIMER;

/// A timer of an [`EventQueue`]: its owner chooses the numbers (each of
/// its timers one), and the queue keeps slots up to the largest.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TimerId(pub u32);

/// A timer's state.
struct TimerSlot<E> {
    /// The event it will deliver, with its key (time, sequence).
    pending: Option<(Instant, u64, E)>,
    /// The key of the one heap entry that stands for this timer, no later
    /// than `pending`'s; other entries of the timer are left over from an
    /// earlier setting and are dropped when they surface.
    entry: Option<(Instant, u64)>,
}

/// A batch's events, earliest first, and the next to run. Each is taken
/// out of its place as it runs (the batch is cleared when the last has):
/// the medium hands a frame's arrivals in time order, and keeping them
/// latest first, to pop them off the end, cost a reversal of ~200 events
/// per frame, 3% of a 100-node TCP run (issue 28).
struct Batch<E> {
    events: Vec<(Instant, u64, Option<E>)>,
    next: usize,
}

impl<E> Batch<E> {
    fn new() -> Self {
        Batch { events: Vec::new(), next: 0 }
    }

    /// The key of the next event to run.
    #[inline]
    fn next_key(&self) -> Option<(Instant, u64)> {
        self.events.get(self.next).map(|&(at, seq, _)| (at, seq))
    }
}

/// Slots of one kind, reused through a free list.
struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
}

impl<T> Slab<T> {
    fn new() -> Self {
        Slab { items: Vec::new(), free: Vec::new() }
    }

    /// A free slot, or a new one made by `make`.
    fn take(&mut self, make: impl FnOnce() -> T) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            self.items.push(make());
            let slot = u32::try_from(self.items.len() - 1).ok().filter(|&s| s & KIND == 0);
            slot.expect("fewer than 2^30 events pending")
        })
    }
}

/// A min-queue of events keyed by time, FIFO among equal times.
pub struct EventQueue<E> {
    heap: KeyHeap,
    /// Events scheduled one at a time; a free slot holds `None`.
    singles: Slab<Option<E>>,
    /// Batches; a free slot holds an empty batch (its allocation reused).
    batches: Slab<Batch<E>>,
    /// Timers, by [`TimerId`].
    timers: Vec<TimerSlot<E>>,
    next_seq: u64,
    now: Instant,
    len: usize,
    /// The batch the last event popped came from, while it holds more
    /// ([`NO_BATCH`] otherwise): [`EventQueue::next_of_batch`].
    last_batch: u32,
}

/// `last_batch` when the last event popped left no batch behind.
const NO_BATCH: u32 = u32::MAX;

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: KeyHeap::with_capacity(1024),
            singles: Slab::new(),
            batches: Slab::new(),
            timers: Vec::new(),
            next_seq: 0,
            now: Instant::ZERO,
            len: 0,
            last_batch: NO_BATCH,
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
        let seq = self.next_seq;
        self.next_seq += 1;
        self.len += 1;
        let slot = self.singles.take(|| None);
        self.singles.items[slot as usize] = Some(event);
        self.heap.push(Entry { at, seq, slot });
    }

    /// Schedules `events` exactly as calling [`EventQueue::schedule`] on
    /// each in turn would (same clamping, consecutive sequence numbers, so
    /// the same order among themselves and with every other event), with
    /// one heap entry for all of them. Cheapest in time order.
    pub fn schedule_batch(&mut self, events: impl IntoIterator<Item = (Instant, E)>) {
        let slot = self.batches.take(Batch::new);
        let batch = &mut self.batches.items[slot as usize];
        debug_assert!(batch.events.is_empty() && batch.next == 0);
        // Extended, not pushed one by one: an iterator of known length
        // (the medium's arrivals and ends) is written without a capacity
        // test per event (issue 28).
        let (now, first_seq) = (self.now, self.next_seq);
        batch.events.extend(
            events.into_iter().enumerate().map(|(i, (at, event))| (at.max(now), first_seq + i as u64, Some(event))),
        );
        self.next_seq = first_seq + batch.events.len() as u64;
        if batch.events.is_empty() {
            self.batches.free.push(slot);
            return;
        }
        // Earliest first. A caller that hands the events in time order (as
        // the medium does) costs one look, not a sort; sequence numbers
        // are unique, so either way there are no ties to keep.
        if !batch.events.is_sorted_by_key(|e| e.0) {
            batch.events.sort_unstable_by_key(|e| (e.0, e.1));
        }
        let (at, seq) = batch.next_key().expect("not empty");
        self.len += batch.events.len();
        self.heap.push(Entry { at, seq, slot: slot | BATCH });
    }

    /// Sets timer `id` to deliver `event` at `at` (clamped to `now` like
    /// [`EventQueue::schedule`]), replacing the event it held if any.
    pub fn set_timer(&mut self, id: TimerId, at: Instant, event: E) {
        let at = at.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        let i = id.0 as usize;
        assert!(id.0 & KIND == 0, "timer ids below 2^30");
        if i >= self.timers.len() {
            self.timers.resize_with(i + 1, || TimerSlot { pending: None, entry: None });
        }
        let t = &mut self.timers[i];
        if t.pending.replace((at, seq, event)).is_none() {
            self.len += 1;
        }
        // A later setting keeps the entry (re-keyed when it surfaces); an
        // earlier one needs an entry of its own.
        if t.entry.is_none_or(|key| (at, seq) < key) {
            t.entry = Some((at, seq));
            self.heap.push(Entry { at, seq, slot: id.0 | TIMER });
        }
    }

    /// Takes timer `id`'s event away, if it holds one.
    pub fn cancel_timer(&mut self, id: TimerId) {
        if let Some(t) = self.timers.get_mut(id.0 as usize) {
            if t.pending.take().is_some() {
                self.len -= 1;
            }
        }
    }

    /// Drops or re-keys the timer entries at the top of the heap until the
    /// top is an event that will run (or the heap is empty). Inline: with
    /// anything but a timer on top (most pops) it is one test.
    #[inline]
    fn settle(&mut self) {
        if self.heap.peek().is_some_and(|top| top.slot & TIMER != 0) {
            self.settle_timers();
        }
    }

    fn settle_timers(&mut self) {
        while let Some(&top) = self.heap.peek() {
            if top.slot & TIMER == 0 {
                return;
            }
            let t = &mut self.timers[(top.slot & !TIMER) as usize];
            let key = (top.at, top.seq);
            if t.entry != Some(key) {
                // Left over from an earlier setting.
                self.heap.pop();
                continue;
            }
            match t.pending.as_ref().map(|&(at, seq, _)| (at, seq)) {
                Some(pending) if pending == key => return,
                Some((at, seq)) => {
                    // Moved later since the entry was pushed.
                    t.entry = Some((at, seq));
                    self.heap.replace_top(Entry { at, seq, slot: top.slot });
                }
                None => {
                    t.entry = None;
                    self.heap.pop();
                }
            }
        }
    }

    /// Removes and returns the earliest event, advancing `now` to its time.
    /// Inline: the event then reaches the caller's registers, not a return
    /// slot in memory it would wait on (issue 28).
    #[inline]
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        self.settle();
        self.pop_settled()
    }

    /// [`EventQueue::pop`] if the earliest event is due by `horizon`
    /// (`None` otherwise, the event left in place): what a driver's loop
    /// asks after every event, with the timers at the top settled once, not
    /// once for a peek and again for the pop (issue 28).
    #[inline]
    pub fn pop_due(&mut self, horizon: Instant) -> Option<(Instant, E)> {
        self.settle();
        if self.heap.peek().is_some_and(|top| top.at > horizon) {
            self.last_batch = NO_BATCH;
            return None;
        }
        self.pop_settled()
    }

    /// Pops the earliest event once the timers at the top are settled.
    #[inline(always)]
    fn pop_settled(&mut self) -> Option<(Instant, E)> {
        self.last_batch = NO_BATCH;
        let top = *self.heap.peek()?;
        let (at, event) = if top.slot & TIMER != 0 {
            self.heap.pop();
            let t = &mut self.timers[(top.slot & !TIMER) as usize];
            t.entry = None;
            let (_, _, event) = t.pending.take().expect("settled: the timer's event");
            (top.at, event)
        } else if top.slot & BATCH == 0 {
            self.heap.pop();
            self.singles.free.push(top.slot);
            (top.at, self.singles.items[top.slot as usize].take().expect("a pending single"))
        } else {
            let slot = top.slot & !BATCH;
            let batch = &mut self.batches.items[slot as usize];
            let (at, _, event) = &mut batch.events[batch.next];
            let (at, event) = (*at, event.take().expect("a batch's next event is pending"));
            batch.next += 1;
            match batch.next_key() {
                Some((next_at, next_seq)) => {
                    // Re-key in place: a compare or two when the batch's
                    // next event is still the earliest.
                    self.heap.replace_top(Entry { at: next_at, seq: next_seq, slot: top.slot });
                    self.last_batch = slot;
                }
                None => {
                    batch.events.clear();
                    batch.next = 0;
                    self.heap.pop();
                    self.batches.free.push(slot);
                }
            }
            (at, event)
        };
        self.now = at;
        self.len -= 1;
        Some((at, event))
    }

    /// The event that follows the last one popped in its batch, if it came
    /// from one that holds more: most often the next to run (a frame's
    /// arrivals at its receivers, issue 28), so that a caller can fetch
    /// what it will touch while it runs this one. A hint only: other
    /// events may come first.
    /// `ahead` = 0 is the next event of the batch, 1 the one after it.
    #[inline]
    pub fn next_of_batch(&self, ahead: usize) -> Option<&E> {
        let batch = self.batches.items.get(self.last_batch as usize)?;
        batch.events.get(batch.next.checked_add(ahead)?)?.2.as_ref()
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&mut self) -> Option<Instant> {
        self.settle();
        self.heap.peek().map(|e| e.at)
    }

    /// Events pending (each event of a batch counts).
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
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
    fn a_batch_interleaves_with_single_events_by_time_then_schedule_order() {
        let mut q = EventQueue::new();
        let t = Instant::from_nanos;
        q.schedule(t(15), "x");
        q.schedule_batch([(t(20), "b2"), (t(10), "b0"), (t(15), "b1")]);
        q.schedule(t(10), "y");
        q.schedule_batch([]);
        assert_eq!(q.len(), 5);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, ["b0", "y", "x", "b1", "b2"]);
        assert!(q.is_empty());
    }

    /// After a pop from a batch, the batch's next events in the order they
    /// will run; nothing after a single event, a timer's, or a batch's last.
    #[test]
    fn the_next_of_a_batch_is_the_batch_s_next_in_time_order() {
        let mut q = EventQueue::new();
        let t = Instant::from_nanos;
        q.schedule_batch([(t(30), "b2"), (t(10), "b0"), (t(20), "b1")]);
        q.schedule(t(15), "x");
        assert_eq!(q.next_of_batch(0), None, "nothing popped yet");
        assert_eq!(q.pop(), Some((t(10), "b0")));
        assert_eq!((q.next_of_batch(0), q.next_of_batch(1), q.next_of_batch(2)), (Some(&"b1"), Some(&"b2"), None));
        assert_eq!(q.pop(), Some((t(15), "x")));
        assert_eq!(q.next_of_batch(0), None, "a single event has no batch");
        assert_eq!(q.pop(), Some((t(20), "b1")));
        assert_eq!((q.next_of_batch(0), q.next_of_batch(1)), (Some(&"b2"), None));
        assert_eq!(q.pop(), Some((t(30), "b2")));
        assert_eq!(q.next_of_batch(0), None, "the batch is spent");
        // Its slot taken by a new batch: still nothing until a pop from it.
        q.schedule_batch([(t(40), "c0"), (t(50), "c1")]);
        assert_eq!(q.next_of_batch(0), None);
        assert_eq!(q.pop(), Some((t(40), "c0")));
        assert_eq!((q.next_of_batch(0), q.next_of_batch(usize::MAX)), (Some(&"c1"), None));
        // A timer's event popped in between: no hint until the batch's next.
        q.set_timer(TimerId(0), t(45), "timer");
        assert_eq!(q.pop(), Some((t(45), "timer")));
        assert_eq!(q.next_of_batch(0), None, "a timer's event has no batch");
        assert_eq!(q.pop(), Some((t(50), "c1")));
        assert_eq!(q.next_of_batch(0), None);
    }

    #[test]
    fn past_events_are_clamped_to_now() {
        let mut q = EventQueue::new();
        q.schedule(Instant::from_nanos(50), 1);
        q.pop();
        q.schedule(Instant::from_nanos(10), 2);
        assert_eq!(q.pop(), Some((Instant::from_nanos(50), 2)));
    }

    /// Interleaved schedules, batches and pops over few distinct times (many
    /// ties) come out exactly as a stable sort by time of what was
    /// scheduled, one event at a time.
    #[test]
    fn matches_a_stable_sort_under_interleaving() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut q = EventQueue::new();
        let mut pending: Vec<(u64, u64)> = Vec::new(); // (time, id), in schedule order
        let mut id = 0u64;
        for _ in 0..20_000 {
            if rng.gen_bool(0.1) {
                // A batch of 0 to 5 events, like one schedule each.
                let n = rng.gen_range(0..6);
                let batch: Vec<(u64, u64)> =
                    (0..n).map(|k| (q.now().as_nanos() + rng.gen_range(0..8u64), id + k)).collect();
                q.schedule_batch(batch.iter().map(|&(at, id)| (Instant::from_nanos(at), id)));
                pending.extend(batch);
                id += n;
            } else if rng.gen_bool(0.55) || pending.is_empty() {
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
    /// Timers set, moved earlier and later, cancelled and set again, among
    /// plain events and batches, with many ties: what runs is exactly what a
    /// stable sort of every event scheduled would run once each timer's
    /// replaced events are struck out, `peek_time` is the next one's time,
    /// and `pop_due` pops it exactly when it is due by the horizon.
    #[test]
    fn timers_run_as_their_latest_setting_in_schedule_order() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut q = EventQueue::new();
        // (time, id, timer), in schedule order; a replaced or cancelled
        // timer's event is removed from the reference.
        let mut pending: Vec<(u64, u64, Option<u32>)> = Vec::new();
        let mut id = 0u64;
        for _ in 0..40_000 {
            let now = q.now().as_nanos();
            let roll = rng.gen_range(0..100);
            if roll < 25 {
                let at = now + rng.gen_range(0..8u64);
                q.schedule(Instant::from_nanos(at), id);
                pending.push((at, id, None));
                id += 1;
            } else if roll < 30 {
                let n = rng.gen_range(0..4);
                let batch: Vec<(u64, u64)> = (0..n).map(|k| (now + rng.gen_range(0..8u64), id + k)).collect();
                q.schedule_batch(batch.iter().map(|&(at, id)| (Instant::from_nanos(at), id)));
                pending.extend(batch.iter().map(|&(at, id)| (at, id, None)));
                id += n;
            } else if roll < 60 {
                let timer = rng.gen_range(0..6u32);
                let at = now + rng.gen_range(0..12u64);
                q.set_timer(TimerId(timer), Instant::from_nanos(at), id);
                pending.retain(|p| p.2 != Some(timer));
                pending.push((at, id, Some(timer)));
                id += 1;
            } else if roll < 65 {
                let timer = rng.gen_range(0..6u32);
                q.cancel_timer(TimerId(timer));
                pending.retain(|p| p.2 != Some(timer));
            } else if pending.is_empty() {
                assert_eq!(q.peek_time(), None);
                assert_eq!(q.pop(), None);
            } else if roll < 80 {
                // A pop only when due by a horizon around the next time:
                // the event comes out at or before it, stays after it.
                let (i, _) = pending.iter().enumerate().min_by_key(|(i, (t, _, _))| (*t, *i)).unwrap();
                let t = pending[i].0;
                let horizon = (t + rng.gen_range(0..3u64)).saturating_sub(1);
                if horizon >= t {
                    let (_, want, _) = pending.remove(i);
                    assert_eq!(q.pop_due(Instant::from_nanos(horizon)), Some((Instant::from_nanos(t), want)));
                } else {
                    assert_eq!(q.pop_due(Instant::from_nanos(horizon)), None);
                    assert_eq!(q.peek_time(), Some(Instant::from_nanos(t)));
                }
            } else {
                let (i, _) = pending.iter().enumerate().min_by_key(|(i, (t, _, _))| (*t, *i)).unwrap();
                let (t, want, _) = pending.remove(i);
                assert_eq!(q.peek_time(), Some(Instant::from_nanos(t)));
                assert_eq!(q.pop(), Some((Instant::from_nanos(t), want)));
            }
            assert_eq!(q.len(), pending.len());
        }
        // Whatever is left over in the heap never runs.
        while let Some((i, _)) = pending.iter().enumerate().min_by_key(|(i, (t, _, _))| (*t, *i)) {
            let (t, want, _) = pending.remove(i);
            assert_eq!(q.pop(), Some((Instant::from_nanos(t), want)));
        }
        assert_eq!(q.pop(), None);
        assert!(q.is_empty());
    }

    /// A timer moved later on every step (a retransmission timer on every
    /// ACK) keeps one heap entry, not one per move.
    #[test]
    fn a_timer_moved_later_keeps_one_heap_entry() {
        let mut q = EventQueue::new();
        for k in 0..1000u64 {
            q.set_timer(TimerId(3), Instant::from_nanos(1000 + k), k);
            q.schedule(Instant::from_nanos(k), u64::MAX);
            assert_eq!(q.pop(), Some((Instant::from_nanos(k), u64::MAX)));
        }
        assert_eq!(q.heap.len(), 1);
        assert_eq!(q.pop(), Some((Instant::from_nanos(1999), 999)));
        assert_eq!(q.pop(), None);
    }
}
