//! OLSR's 2-hop neighbour set (RFC 3626 §4.3.2), with what the rest of the
//! engine reads from it kept up to date at each change: the expiry times as
//! a multiset, the neighbours whose tuples changed since the links were
//! last read as edges, and a count of tuples added or removed. In a moving
//! 100-node network the set holds ~570 tuples and changes with most
//! HELLOs; scanning it for any of these after each control message was a
//! tenth to a fifth of an OLSR run (issue 28).

use super::edges::{read_again, ReadInto};
use super::topology::remove_until;
use crate::NodeId;
use meshbed_core::{Duration, Instant};
use std::collections::{BTreeMap, BTreeSet};

/// RFC 3626 §4.3.2 2-hop tuple, with the metric of the link via → 2-hop
/// that `via` advertised.
#[derive(Clone, Debug)]
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
    tuples: BTreeMap<(NodeId, NodeId), TwoHop>,
    /// The tuples' expiry times (time → tuples).
    untils: BTreeMap<Instant, u32>,
    /// The neighbours whose tuples were added, removed or re-costed since
    /// the links were last read ([`TwoHopSet::edges`]).
    dirty: BTreeSet<NodeId>,
    /// Tuples added or removed, ever.
    changes: u64,
    /// The neighbours the tuples go through, with how many each.
    vias: BTreeMap<NodeId, u32>,
    /// The expiry times a batch replaced, each with how many tuples had it
    /// (a buffer of [`TwoHopSet::apply_hello`]'s, empty between calls).
    replaced_untils: Vec<(Instant, u32)>,
}

fn forget_via(vias: &mut BTreeMap<NodeId, u32>, via: NodeId) {
    if let Some(n) = vias.get_mut(&via) {
        *n -= 1;
        if *n == 0 {
            vias.remove(&via);
        }
    }
}

impl TwoHopSet {
    /// Holds (`via`, `two`) until `until`, advertised with `metric`: one
    /// entry of [`TwoHopSet::apply_hello`], which the tests compare with.
    #[cfg(test)]
    pub(super) fn insert(&mut self, via: NodeId, two: NodeId, until: Instant, metric: u16) -> Inserted {
        super::topology::add_until(&mut self.untils, until);
        let inserted = match self.tuples.insert((via, two), TwoHop { until, metric }) {
            None => Inserted::New,
            Some(old) => {
                remove_until(&mut self.untils, old.until);
                if old.metric == metric {
                    return Inserted::Refreshed;
                }
                Inserted::Recosted
            }
        };
        if inserted == Inserted::New {
            self.changes += 1;
            *self.vias.entry(via).or_insert(0) += 1;
        }
        self.dirty.insert(via);
        inserted
    }

    /// A HELLO's entries through `via`, in its order: (`two`, `Some(metric)`)
    /// held until `until` as [`TwoHopSet::insert`] holds it, (`two`, `None`)
    /// removed as [`TwoHopSet::remove`] removes it. The same set as those
    /// calls one by one would leave, with the expiry times and the counts
    /// of tuples per neighbour written once for the HELLO rather than per
    /// entry (issue 28: four tree writes per entry of each of the ~125,000
    /// HELLOs heard in the ATP paper's network were a twentieth of an OLSR
    /// run).
    pub(super) fn apply_hello(
        &mut self,
        via: NodeId,
        until: Instant,
        entries: impl IntoIterator<Item = (NodeId, Option<u16>)>,
    ) -> Applied {
        let mut applied = Applied::default();
        let mut replaced = std::mem::take(&mut self.replaced_untils);
        let mut note_replaced = |at: Instant| match replaced.last_mut() {
            Some((t, n)) if *t == at => *n += 1,
            _ => replaced.push((at, 1)),
        };
        for (two, metric) in entries {
            match metric {
                Some(metric) => {
                    applied.held += 1;
                    match self.tuples.insert((via, two), TwoHop { until, metric }) {
                        None => applied.new += 1,
                        Some(old) => {
                            note_replaced(old.until);
                            if old.metric != metric {
                                applied.recosted += 1;
                            }
                        }
                    }
                }
                None => {
                    if let Some(old) = self.tuples.remove(&(via, two)) {
                        note_replaced(old.until);
                        applied.removed += 1;
                    }
                }
            }
        }
        // Counted up before down, so that no count passes through zero.
        if applied.held > 0 {
            *self.untils.entry(until).or_insert(0) += applied.held as u32;
        }
        for &(at, n) in &replaced {
            if let Some(count) = self.untils.get_mut(&at) {
                *count -= n;
                if *count == 0 {
                    self.untils.remove(&at);
                }
            }
        }
        replaced.clear();
        self.replaced_untils = replaced;
        if applied.new != applied.removed {
            // Every tuple removed was held before or added here: no underflow.
            let count = self.vias.entry(via).or_insert(0);
            *count = (u64::from(*count) + applied.new - applied.removed) as u32;
            if *count == 0 {
                self.vias.remove(&via);
            }
        }
        self.changes += applied.new + applied.removed;
        if applied.new + applied.recosted + applied.removed > 0 {
            self.dirty.insert(via);
        }
        applied
    }

    /// Removes (`via`, `two`); whether the set held it.
    pub(super) fn remove(&mut self, via: NodeId, two: NodeId) -> bool {
        let Some(old) = self.tuples.remove(&(via, two)) else { return false };
        remove_until(&mut self.untils, old.until);
        self.changes += 1;
        forget_via(&mut self.vias, via);
        self.dirty.insert(via);
        true
    }

    /// Removes every tuple through `via`.
    pub(super) fn remove_via(&mut self, via: NodeId) {
        let doomed: Vec<NodeId> =
            self.tuples.range((via, NodeId::MIN)..=(via, NodeId::MAX)).map(|(&(_, t), _)| t).collect();
        for two in doomed {
            self.remove(via, two);
        }
    }

    /// Drops the tuples expired at `now`; whether any was.
    pub(super) fn expire(&mut self, now: Instant) -> bool {
        if self.earliest().is_none_or(|e| e > now) {
            return false;
        }
        let (dirty, changes, vias) = (&mut self.dirty, &mut self.changes, &mut self.vias);
        self.tuples.retain(|&(via, _), t| {
            let keep = t.until > now;
            if !keep {
                dirty.insert(via);
                *changes += 1;
                forget_via(vias, via);
            }
            keep
        });
        // The times left are exactly those after `now`.
        self.untils = self.untils.split_off(&(now + Duration::from_nanos(1)));
        true
    }

    /// (neighbour, 2-hop neighbour) of every tuple, in order.
    pub(super) fn keys(&self) -> impl Iterator<Item = (NodeId, NodeId)> + '_ {
        self.tuples.keys().copied()
    }

    /// The neighbours some tuple goes through, in order.
    pub(super) fn vias(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.vias.keys().copied()
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
    use crate::olsr::edges::{check_reread, SortedEdges};
    use proptest::prelude::*;

    /// Everything the set keeps, to compare two sets.
    fn state(set: &TwoHopSet) -> String {
        format!("{:?} {:?} {:?} {} {:?}", set.tuples, set.untils, set.dirty, set.changes, set.vias)
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
                        let was = set.tuples.get(&(via, two)).map(|t| t.metric);
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
                        let held = set.tuples.contains_key(&(via, two));
                        prop_assert_eq!(set.remove(via, two), held);
                    }
                    _ => {
                        let due = set.tuples.values().any(|t| t.until <= now);
                        prop_assert_eq!(set.expire(now), due);
                        prop_assert!(set.tuples.values().all(|t| t.until > now));
                    }
                }
                let untils: Vec<Instant> = set.tuples.values().map(|t| t.until).collect();
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
