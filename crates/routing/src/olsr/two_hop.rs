//! OLSR's 2-hop neighbour set (RFC 3626 §4.3.2), with what the rest of the
//! engine reads from it kept up to date at each change: the expiry times as
//! a multiset, the neighbours whose tuples changed since the links were
//! last read as edges, and a count of tuples added or removed. In a moving
//! 100-node network the set holds ~570 tuples and changes with most
//! HELLOs; scanning it for any of these after each control message was a
//! tenth to a fifth of an OLSR run (issue 28). Each neighbour's tuples are
//! kept together ([`LinksByNode`]): a HELLO's entries are merged into its
//! sender's in one pass.

use super::edges::{note_until, read_again, LinksByNode, ReadInto};
use super::topology::remove_untils;
use crate::NodeId;
use meshbed_core::{Duration, Instant};
use std::collections::{BTreeMap, BTreeSet};

/// RFC 3626 §4.3.2 2-hop tuple, with the metric of the link via → 2-hop
/// that `via` advertised.
#[derive(Clone, Copy, Debug, PartialEq)]
struct TwoHop {
    until: Instant,
    metric: u16,
}

/// What [`TwoHopSet::insert`] did to the set.
#[cfg(test)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Inserted {
    /// A tuple the set did not hold.
    New,
    /// A held tuple with another advertised metric.
    Recosted,
    /// A held tuple, only its time moved.
    Refreshed,
}

/// What [`TwoHopSet::apply_hello`] did to the set: tuples held (added,
/// re-costed or refreshed), added, re-costed and removed.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Applied {
    pub(super) held: u64,
    pub(super) new: u64,
    pub(super) recosted: u64,
    pub(super) removed: u64,
}

/// The 2-hop set, keyed by (neighbour, 2-hop neighbour).
#[derive(Clone, Debug, Default)]
pub(super) struct TwoHopSet {
    /// Each neighbour's tuples (2-hop neighbour, tuple); the neighbours
    /// some tuple goes through are its keys.
    tuples: LinksByNode<TwoHop>,
    /// The tuples' expiry times (time → tuples).
    untils: BTreeMap<Instant, u32>,
    /// The neighbours whose tuples were added, removed or re-costed since
    /// the links were last read ([`TwoHopSet::edges`]).
    dirty: BTreeSet<NodeId>,
    /// Tuples added or removed, ever.
    changes: u64,
    /// Buffers of [`TwoHopSet::apply_hello`] (empty between calls): the
    /// expiry times a HELLO replaced, each with how many tuples had it; its
    /// entries by 2-hop neighbour; the neighbour's tuples being made.
    replaced_untils: Vec<(Instant, u32)>,
    entries: Vec<(NodeId, Option<u16>)>,
    merged: Vec<(NodeId, TwoHop)>,
}

impl TwoHopSet {
    /// Holds (`via`, `two`) until `until`, advertised with `metric`: one
    /// entry of [`TwoHopSet::apply_hello`], which the tests compare with.
    #[cfg(test)]
    pub(super) fn insert(&mut self, via: NodeId, two: NodeId, until: Instant, metric: u16) -> Inserted {
        super::topology::add_until(&mut self.untils, until);
        let tuples = self.tuples.0.entry(via).or_default();
        let fresh = TwoHop { until, metric };
        let inserted = match tuples.binary_search_by_key(&two, |t| t.0) {
            Err(at) => {
                tuples.insert(at, (two, fresh));
                Inserted::New
            }
            Ok(at) => {
                let old = std::mem::replace(&mut tuples[at].1, fresh);
                remove_untils(&mut self.untils, old.until, 1);
                if old.metric == metric {
                    return Inserted::Refreshed;
                }
                Inserted::Recosted
            }
        };
        if inserted == Inserted::New {
            self.changes += 1;
        }
        self.dirty.insert(via);
        inserted
    }

    /// A HELLO's entries through `via`, in its order: (`two`, `Some(metric)`)
    /// held until `until` as [`TwoHopSet::insert`] holds it, (`two`, `None`)
    /// removed as [`TwoHopSet::remove`] removes it. The same set as those
    /// calls one by one would leave, with the expiry times written once for
    /// the HELLO rather than per entry (issue 28: four tree writes per entry
    /// of each of the ~125,000 HELLOs heard in the ATP paper's network were
    /// a twentieth of an OLSR run). The entries are sorted by 2-hop
    /// neighbour, keeping each one's in their order (they act on its tuple
    /// alone), and merged with `via`'s tuples in one pass.
    pub(super) fn apply_hello(
        &mut self,
        via: NodeId,
        until: Instant,
        entries: impl IntoIterator<Item = (NodeId, Option<u16>)>,
    ) -> Applied {
        let mut applied = Applied::default();
        let (sorted, merged, replaced) = (&mut self.entries, &mut self.merged, &mut self.replaced_untils);
        sorted.extend(entries);
        if !sorted.is_sorted_by_key(|e| e.0) {
            sorted.sort_by_key(|e| e.0); // stable
        }
        let held = self.tuples.0.entry(via).or_default();
        let mut old = held.iter().copied().peekable();
        let mut next = sorted.iter().copied().peekable();
        while let Some(&(two, _)) = next.peek() {
            // The tuples before `two` stay as they are.
            while let Some(kept) = old.next_if(|t| t.0 < two) {
                merged.push(kept);
            }
            let mut tuple = old.next_if(|t| t.0 == two).map(|t| t.1);
            while let Some((_, metric)) = next.next_if(|e| e.0 == two) {
                match metric {
                    Some(metric) => {
                        applied.held += 1;
                        match tuple.replace(TwoHop { until, metric }) {
                            None => applied.new += 1,
                            Some(was) => {
                                note_until(replaced, was.until);
                                if was.metric != metric {
                                    applied.recosted += 1;
                                }
                            }
                        }
                    }
                    None => {
                        if let Some(was) = tuple.take() {
                            note_until(replaced, was.until);
                            applied.removed += 1;
                        }
                    }
                }
            }
            if let Some(t) = tuple {
                merged.push((two, t));
            }
        }
        merged.extend(old);
        // The merged tuples become the neighbour's; its old list, the buffer.
        std::mem::swap(held, merged);
        if held.is_empty() {
            self.tuples.0.remove(&via);
        }
        merged.clear();
        sorted.clear();
        // Counted up before down, so that no count passes through zero.
        if applied.held > 0 {
            *self.untils.entry(until).or_insert(0) += applied.held as u32;
        }
        for (at, n) in replaced.drain(..) {
            remove_untils(&mut self.untils, at, n);
        }
        self.changes += applied.new + applied.removed;
        if applied.new + applied.recosted + applied.removed > 0 {
            self.dirty.insert(via);
        }
        applied
    }

    /// Removes (`via`, `two`); whether the set held it: one entry of
    /// [`TwoHopSet::apply_hello`], which the tests compare with.
    #[cfg(test)]
    pub(super) fn remove(&mut self, via: NodeId, two: NodeId) -> bool {
        let Some(tuples) = self.tuples.0.get_mut(&via) else { return false };
        let Ok(at) = tuples.binary_search_by_key(&two, |t| t.0) else { return false };
        let (_, old) = tuples.remove(at);
        if tuples.is_empty() {
            self.tuples.0.remove(&via);
        }
        remove_untils(&mut self.untils, old.until, 1);
        self.changes += 1;
        self.dirty.insert(via);
        true
    }

    /// Removes every tuple through `via`.
    pub(super) fn remove_via(&mut self, via: NodeId) {
        let Some(tuples) = self.tuples.0.remove(&via) else { return };
        for (_, old) in &tuples {
            remove_untils(&mut self.untils, old.until, 1);
        }
        self.changes += tuples.len() as u64;
        self.dirty.insert(via);
    }

    /// Drops the tuples expired at `now`; whether any was.
    pub(super) fn expire(&mut self, now: Instant) -> bool {
        if self.earliest().is_none_or(|e| e > now) {
            return false;
        }
        let (dirty, changes) = (&mut self.dirty, &mut self.changes);
        self.tuples.0.retain(|&via, tuples| {
            let before = tuples.len();
            tuples.retain(|(_, t)| t.until > now);
            if tuples.len() != before {
                dirty.insert(via);
                *changes += (before - tuples.len()) as u64;
            }
            !tuples.is_empty()
        });
        // The times left are exactly those after `now`.
        self.untils = self.untils.split_off(&(now + Duration::from_nanos(1)));
        true
    }

    /// (neighbour, 2-hop neighbour) of every tuple, in order.
    pub(super) fn keys(&self) -> impl Iterator<Item = (NodeId, NodeId)> + '_ {
        self.tuples.0.iter().flat_map(|(&via, tuples)| tuples.iter().map(move |t| (via, t.0)))
    }

    /// The neighbours some tuple goes through, in order.
    pub(super) fn vias(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.tuples.0.keys().copied()
    }

    /// Counts every tuple added or removed: the same count, the same keys.
    pub(super) fn changes(&self) -> u64 {
        self.changes
    }

    /// The earliest expiry time.
    pub(super) fn earliest(&self) -> Option<Instant> {
        self.untils.keys().next().copied()
    }

    /// The first expiry time after `now`.
    pub(super) fn next_until_after(&self, now: Instant) -> Option<Instant> {
        self.untils.range(now + Duration::from_nanos(1)..).next().map(|(&at, _)| at)
    }

    /// The links from the neighbours to their neighbours as edges
    /// (neighbour, 2-hop neighbour, `cost` of the metric it advertised; a
    /// link whose cost is `None` left out), sorted, read `into` its
    /// buffers as [`read_again`] reads them: with the last read kept, only
    /// the neighbours whose tuples changed since, which it returns.
    pub(super) fn edges(&mut self, into: ReadInto<'_>, cost: impl Fn(u16) -> Option<u32>) -> Option<Vec<NodeId>> {
        read_again(&self.tuples, into, std::mem::take(&mut self.dirty), |t| cost(t.metric))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::olsr::edges::{check_reread, LinkSet, SortedEdges};
    use proptest::prelude::*;

    /// Everything the set keeps, to compare two sets.
    fn state(set: &TwoHopSet) -> String {
        format!("{:?} {:?} {:?} {}", set.tuples, set.untils, set.dirty, set.changes)
    }

    proptest! {
        /// A HELLO's entries applied at once leave the set as inserting
        /// and removing them one by one does (repeated neighbours and
        /// entries that add and then remove a tuple included), and report
        /// what those calls report.
        #[test]
        fn a_hello_applied_at_once_is_its_entries_one_by_one(
            before in proptest::collection::vec((0u32..3, 0u32..6, 1u64..4, 0u16..3), 0..20),
            via in 0u32..3,
            secs in 1u64..5,
            entries in proptest::collection::vec((0u32..6, proptest::option::of(0u16..3)), 0..12),
        ) {
            let mut set = TwoHopSet::default();
            for (v, two, s, metric) in before {
                set.insert(v, two, Instant::ZERO + Duration::from_secs(s), metric);
            }
            let until = Instant::ZERO + Duration::from_secs(secs);
            let mut one_by_one = set.clone();
            let mut expected = Applied::default();
            for &(two, metric) in &entries {
                match metric {
                    Some(m) => {
                        expected.held += 1;
                        match one_by_one.insert(via, two, until, m) {
                            Inserted::New => expected.new += 1,
                            Inserted::Recosted => expected.recosted += 1,
                            Inserted::Refreshed => {}
                        }
                    }
                    None => expected.removed += u64::from(one_by_one.remove(via, two)),
                }
            }
            let applied = set.apply_hello(via, until, entries.iter().copied());
            prop_assert_eq!(applied, expected);
            prop_assert_eq!(state(&set), state(&one_by_one));
        }


        /// After any run of inserts, removals and expiries the kept times
        /// are the tuples' (the earliest, the next after an instant), the
        /// links read again are all of them and every changed one is out of
        /// a touched neighbour, and the count moves exactly when the keys
        /// do.
        #[test]
        fn what_the_set_keeps_is_what_a_scan_of_its_tuples_finds(
            ops in proptest::collection::vec((0u8..4, 0u32..5, 0u32..6, 1u64..5, 0u16..3), 1..60),
        ) {
            let cost = |m: u16| (m > 0).then_some(u32::from(m) * 256);
            let mut set = TwoHopSet::default();
            let (mut edges, mut kept) = (SortedEdges::default(), false);
            for (step, (op, via, two, secs, metric)) in ops.into_iter().enumerate() {
                let now = Instant::ZERO + Duration::from_millis(500 * step as u64);
                let (keys_before, count_before): (Vec<_>, _) = (set.keys().collect(), set.changes());
                match op {
                    0 | 1 => {
                        let was = set.tuples.links().find(|l| (l.0, l.1) == (via, two)).map(|l| l.2.metric);
                        let inserted = set.insert(via, two, now + Duration::from_secs(secs), metric);
                        let expected = match was {
                            None => Inserted::New,
                            Some(m) if m != metric => Inserted::Recosted,
                            Some(_) => Inserted::Refreshed,
                        };
                        prop_assert_eq!(inserted, expected);
                    }
                    2 if two == 0 => set.remove_via(via),
                    2 => {
                        let held = set.keys().any(|k| k == (via, two));
                        prop_assert_eq!(set.remove(via, two), held);
                    }
                    _ => {
                        let due = set.tuples.links().any(|l| l.2.until <= now);
                        prop_assert_eq!(set.expire(now), due);
                        prop_assert!(set.tuples.links().all(|l| l.2.until > now));
                    }
                }
                let untils: Vec<Instant> = set.tuples.links().map(|l| l.2.until).collect();
                prop_assert_eq!(set.earliest(), untils.iter().copied().min());
                prop_assert_eq!(set.next_until_after(now), untils.iter().copied().filter(|&t| t > now).min());
                let keys: Vec<_> = set.keys().collect();
                let mut vias: Vec<NodeId> = keys.iter().map(|k| k.0).collect();
                vias.dedup();
                prop_assert_eq!(set.vias().collect::<Vec<_>>(), vias);
                prop_assert_eq!(set.changes() != count_before, keys != keys_before);
                let mut all = SortedEdges::from(vec![(9, 9, 9)]);
                set.clone().edges(ReadInto { edges: &mut all, kept: false, replaced: &mut Vec::new() }, cost);
                let (before, mut replaced) = (edges.as_slice().to_vec(), vec![(9, 9, 9)]);
                let touched = set.edges(ReadInto { edges: &mut edges, kept, replaced: &mut replaced }, cost);
                prop_assert_eq!(edges.as_slice(), all.as_slice());
                check_reread(&before, &edges, kept, touched.as_deref(), &replaced)?;
                kept = true;
            }
        }
    }
}
