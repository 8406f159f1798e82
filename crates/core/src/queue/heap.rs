//! The event queue's heap of keys: a binary min-heap of [`Entry`]s ordered
//! by `(time, sequence)`, with the one operation the queue needs most and
//! `std`'s `BinaryHeap` has only in a costly form — putting a new key at
//! the top in place of the earliest ([`KeyHeap::replace_top`]), which is
//! what popping one event of a frame's batch does (issue 28).
//!
//! Through `BinaryHeap::peek_mut` that re-key wrote the new key into the
//! heap and read it back at once with a wider load, which the processor
//! cannot forward from its store buffer: a third of `EventQueue::pop`'s
//! time in the 6-hop UDP chain was that one stall (`perf annotate`, issue
//! 28). Here the entry being placed stays in registers while the hole
//! moves down, and two keys compare as one 128-bit integer, without a
//! branch on the time's equality. Keys are unique (sequence numbers are),
//! so the order of pops is the order of keys, whatever the heap's shape.

use crate::time::Instant;

/// A heap entry: the key and where its event waits. 24 bytes whatever the
/// event's size, so that sifting moves little (the events stay put).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    pub at: Instant,
    pub seq: u64,
    /// Where the event is: see `queue::BATCH` and `queue::TIMER`.
    pub slot: u32,
}

impl Entry {
    /// The order of events: time, then the order they were scheduled.
    #[inline(always)]
    fn key(&self) -> u128 {
        (u128::from(self.at.as_nanos()) << 64) | u128::from(self.seq)
    }
}

/// A binary min-heap of entries, the earliest key at index 0.
#[derive(Debug, Default)]
pub(super) struct KeyHeap {
    entries: Vec<Entry>,
}

impl KeyHeap {
    pub fn with_capacity(capacity: usize) -> Self {
        KeyHeap { entries: Vec::with_capacity(capacity) }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entry with the earliest key.
    #[inline]
    pub fn peek(&self) -> Option<&Entry> {
        self.entries.first()
    }

    #[inline]
    pub fn push(&mut self, entry: Entry) {
        let hole = self.entries.len();
        self.entries.push(entry);
        self.sift_up(hole, entry);
    }

    /// Removes the entry with the earliest key. The last entry takes its
    /// place the way `std`'s heap does it: the hole goes down to a leaf
    /// along the earlier children (one comparison a level), and the last
    /// entry rises from there — it came from the bottom and mostly belongs
    /// near it, which in the larger heaps (hundreds of entries in a
    /// 100-node network) beats stopping early at two comparisons a level.
    #[inline]
    pub fn pop(&mut self) -> Option<Entry> {
        let last = self.entries.pop()?;
        let Some(&top) = self.entries.first() else {
            return Some(last);
        };
        let hole = self.hole_down_from_top(u128::MAX);
        self.sift_up(hole, last);
        Some(top)
    }

    /// Replaces the earliest entry with `entry` (the heap must not be
    /// empty). The next event of a frame's batch is most often still the
    /// earliest, so the hole moves down only while a child is earlier: a
    /// comparison or two.
    #[inline(always)]
    pub fn replace_top(&mut self, entry: Entry) {
        debug_assert!(!self.entries.is_empty());
        let hole = self.hole_down_from_top(entry.key());
        self.entries[hole] = entry;
    }

    /// Moves the hole at the top down along the earlier children while
    /// they are no later than `key` (to a leaf, for `u128::MAX`), and
    /// returns where it stopped.
    #[inline(always)]
    fn hole_down_from_top(&mut self, key: u128) -> usize {
        let n = self.entries.len();
        let mut hole = 0;
        loop {
            let left = 2 * hole + 1;
            if left >= n {
                return hole;
            }
            let child = self.earlier_child(left, n);
            if key < self.entries[child].key() {
                return hole;
            }
            self.entries[hole] = self.entries[child];
            hole = child;
        }
    }

    /// Of the children at `left` and `left + 1` (if below `n`), the one
    /// with the earlier key. Which one it is goes into the index as a
    /// number, not through a branch: it is a coin toss the processor
    /// cannot predict, and a wrong guess at every level of a pop cost more
    /// than the pop's loads (issue 28).
    #[inline(always)]
    fn earlier_child(&self, left: usize, n: usize) -> usize {
        let right = left + 1;
        if right < n {
            left + usize::from(self.entries[right].key() < self.entries[left].key())
        } else {
            left
        }
    }

    /// Moves the hole at `hole` up past every parent with a later key than
    /// `entry`'s, and puts `entry` there.
    #[inline(always)]
    fn sift_up(&mut self, mut hole: usize, entry: Entry) {
        let key = entry.key();
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if self.entries[parent].key() <= key {
                break;
            }
            self.entries[hole] = self.entries[parent];
            hole = parent;
        }
        self.entries[hole] = entry;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever mix of pushes, pops and top replacements, every pop
        /// returns the earliest key held (a sorted reference).
        #[test]
        fn pops_come_out_in_key_order(ops in proptest::collection::vec((0u8..3, 0u64..20), 0..400)) {
            let mut heap = KeyHeap::with_capacity(0);
            let mut reference: Vec<Entry> = Vec::new();
            for (seq, (op, at)) in (0u64..).zip(ops) {
                let entry = Entry { at: Instant::from_nanos(at), seq, slot: seq as u32 };
                match op {
                    0 => {
                        heap.push(entry);
                        reference.push(entry);
                    }
                    1 => {
                        reference.sort_by_key(|e| std::cmp::Reverse(e.key()));
                        prop_assert_eq!(heap.pop(), reference.pop());
                    }
                    _ if !reference.is_empty() => {
                        reference.sort_by_key(|e| std::cmp::Reverse(e.key()));
                        reference.pop();
                        reference.push(entry);
                        heap.replace_top(entry);
                    }
                    _ => {}
                }
                reference.sort_by_key(|e| std::cmp::Reverse(e.key()));
                prop_assert_eq!(heap.peek(), reference.last());
                prop_assert_eq!(heap.len(), reference.len());
            }
        }
    }

    #[test]
    fn time_orders_before_sequence() {
        let mut heap = KeyHeap::with_capacity(4);
        let e = |at, seq| Entry { at: Instant::from_nanos(at), seq, slot: 0 };
        heap.push(e(5, 0));
        heap.push(e(3, 9));
        heap.push(e(3, 2));
        heap.push(e(u64::MAX, 1));
        let order: Vec<_> = std::iter::from_fn(|| heap.pop()).map(|e| (e.at.as_nanos(), e.seq)).collect();
        assert_eq!(order, [(3, 2), (3, 9), (5, 0), (u64::MAX, 1)]);
    }
}
