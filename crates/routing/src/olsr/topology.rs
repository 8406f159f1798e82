//! OLSR's topology set (RFC 3626 §4.4, §9.5): the links TC messages
//! advertise, newest ANSN per originator, with what the routing table reads
//! from it kept at each change (a version, the originators whose links
//! changed, the expiry times as a multiset).
//!
//! Each originator's tuples are kept together ([`LinksByNode`]): a TC
//! replaces or refreshes one originator's links, merged in one pass.

use super::edges::{note_until, read_again, LinksByNode, ReadInto};
use crate::common::seq_newer;
use crate::NodeId;
use meshbed_core::{Duration, Instant};
use std::collections::{BTreeMap, BTreeSet};

/// RFC 3626 §4.4 topology tuple, without its T_last and T_dest (the keys
/// it is kept under).
#[derive(Clone, Copy, Debug)]
struct Topology {
    seq: u16,
    until: Instant,
    metric: u16,
}

/// The topology set, keyed by (T_last, T_dest).
#[derive(Clone, Debug, Default)]
pub(super) struct TopologySet {
    /// Each originator's tuples (T_dest, tuple).
    tuples: LinksByNode<Topology>,
    /// Bumped whenever the advertised links (T_last, T_dest, metric)
    /// change, not when a TC only refreshes them: the routing table is
    /// recomputed only then (RFC 3626 §10: "when a change is detected").
    links_version: u64,
    /// The originators whose advertised links changed since the links were
    /// last read as edges ([`TopologySet::edges`]): only their ranges are
    /// read again (issue 28: reading every tuple after each change was a
    /// fifth of a 100-node OLSR run).
    dirty: BTreeSet<NodeId>,
    /// The tuples' expiry times, as a multiset (time → tuples), so that the
    /// next expiry is found, and an `expire` with nothing due skipped,
    /// without a scan of the set.
    untils: BTreeMap<Instant, u32>,
    /// Buffers of [`TopologySet::process_tc`] (empty between calls): the
    /// advertised links sorted, the originator's tuples being made, and
    /// the expiry times of the tuples replaced, each with how many had it.
    advertised: Vec<(NodeId, u16)>,
    merged: Vec<(NodeId, Topology)>,
    replaced_untils: Vec<(Instant, u32)>,
}

#[cfg(test)]
pub(super) fn add_until(untils: &mut BTreeMap<Instant, u32>, at: Instant) {
    *untils.entry(at).or_insert(0) += 1;
}

/// Takes `n` tuples expiring `at` out of the multiset.
pub(super) fn remove_untils(untils: &mut BTreeMap<Instant, u32>, at: Instant, n: u32) {
    if let Some(count) = untils.get_mut(&at) {
        *count = count.saturating_sub(n);
        if *count == 0 {
            untils.remove(&at);
        }
    }
}

impl TopologySet {
    /// A TC of `originator` at `now` (RFC 3626 §9.5): ignored if a newer
    /// ANSN is known; else it replaces the originator's tuples of older
    /// ANSNs, and holds each advertised link (T_dest, metric) until
    /// `now + vtime` (a T_dest advertised twice: the last entry counts),
    /// keeping the originator's other tuples of this ANSN as they were.
    pub(super) fn process_tc(
        &mut self,
        now: Instant,
        originator: NodeId,
        vtime: Duration,
        ansn: u16,
        advertised: &[(NodeId, u16)],
    ) {
        let held = self.tuples.0.get(&originator).map_or(&[][..], Vec::as_slice);
        if held.iter().any(|(_, t)| seq_newer(t.seq, ansn)) {
            return; // out of order: a newer set is known
        }
        let until = now + vtime;
        // The advertised links by T_dest (a stable sort: the entries of a
        // repeated T_dest keep their order, and the last is kept).
        let fresh = &mut self.advertised;
        fresh.clear();
        fresh.extend_from_slice(advertised);
        fresh.sort_by_key(|&(dest, _)| dest);
        fresh.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                *earlier = *later;
            }
            same
        });
        // Merge the held tuples of this ANSN with the advertised links,
        // which replace them; tuples of older ANSNs go.
        let (merged, replaced) = (&mut self.merged, &mut self.replaced_untils);
        merged.clear();
        let (mut old, mut new) = (held.iter().peekable(), fresh.iter().peekable());
        loop {
            let take_new = match (old.peek(), new.peek()) {
                (None, None) => break,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some((o, _)), Some((n, _))) => n <= o,
            };
            if take_new {
                let &(dest, metric) = new.next().expect("peeked");
                if let Some((_, t)) = old.next_if(|(o, _)| *o == dest) {
                    note_until(replaced, t.until);
                }
                merged.push((dest, Topology { seq: ansn, until, metric }));
            } else {
                let &(dest, t) = old.next().expect("peeked");
                if t.seq == ansn {
                    merged.push((dest, t));
                } else {
                    note_until(replaced, t.until);
                }
            }
        }
        let changed = !held.iter().map(|(d, t)| (d, t.metric)).eq(merged.iter().map(|(d, t)| (d, t.metric)));
        // Counted up before down, so that no count passes through zero.
        if !fresh.is_empty() {
            *self.untils.entry(until).or_insert(0) += fresh.len() as u32;
        }
        for (at, n) in replaced.drain(..) {
            remove_untils(&mut self.untils, at, n);
        }
        // The merged list becomes the originator's; its old list, the buffer.
        if merged.is_empty() {
            if let Some(old) = self.tuples.0.remove(&originator) {
                *merged = old;
            }
        } else {
            let slot = self.tuples.0.entry(originator).or_default();
            std::mem::swap(slot, merged);
        }
        merged.clear();
        if changed {
            self.links_version += 1;
            self.dirty.insert(originator);
        }
    }

    /// Drops expired tuples (RFC 3626 §4.4).
    pub(super) fn expire(&mut self, now: Instant) {
        if self.untils.first_key_value().is_none_or(|(&at, _)| at > now) {
            return; // nothing due
        }
        let dirty = &mut self.dirty;
        self.tuples.0.retain(|&last, tuples| {
            let before = tuples.len();
            tuples.retain(|(_, t)| t.until > now);
            if tuples.len() != before {
                dirty.insert(last);
            }
            !tuples.is_empty()
        });
        // The times left are exactly those after `now`.
        self.untils = self.untils.split_off(&(now + Duration::from_nanos(1)));
        self.links_version += 1;
    }

    /// The first expiry after `now`.
    pub(super) fn next_expiry(&self, now: Instant) -> Option<Instant> {
        self.untils.range(now + Duration::from_nanos(1)..).next().map(|(&at, _)| at)
    }

    /// Changes with the advertised links (see the field).
    pub(super) fn links_version(&self) -> u64 {
        self.links_version
    }

    /// The advertised links as edges (T_last, T_dest, `cost` of the
    /// metric; a link whose cost is `None` left out), sorted, read `into`
    /// its buffers as [`read_again`] reads them: with the last read kept,
    /// only the originators whose links changed since, which it returns.
    /// Either way, the edges are what reading every tuple gives.
    pub(super) fn edges(&mut self, into: ReadInto<'_>, cost: impl Fn(u16) -> Option<u32>) -> Option<Vec<NodeId>> {
        read_again(&self.tuples, into, std::mem::take(&mut self.dirty), |t| cost(t.metric))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::olsr::edges::{check_reread, LinkSet, SortedEdges};
    use proptest::prelude::*;

    /// The set as a map keyed (T_last, T_dest), a tree search per link:
    /// RFC 3626 §9.5 step by step, what the set kept by originator must
    /// do.
    #[derive(Default)]
    struct Reference {
        tuples: BTreeMap<(NodeId, NodeId), Topology>,
        version: u64,
    }

    impl Reference {
        fn links_of(&self, originator: NodeId) -> Vec<(NodeId, u16)> {
            self.tuples.range((originator, 0)..=(originator, NodeId::MAX)).map(|(&(_, d), t)| (d, t.metric)).collect()
        }

        fn process_tc(
            &mut self,
            now: Instant,
            originator: NodeId,
            vtime: Duration,
            ansn: u16,
            advertised: &[(NodeId, u16)],
        ) {
            let from = self.tuples.range((originator, 0)..=(originator, NodeId::MAX));
            if from.clone().any(|(_, t)| seq_newer(t.seq, ansn)) {
                return;
            }
            let before = self.links_of(originator);
            let stale: Vec<_> = from.filter(|(_, t)| t.seq != ansn).map(|(&k, _)| k).collect();
            for k in stale {
                self.tuples.remove(&k);
            }
            for &(dest, metric) in advertised {
                self.tuples.insert((originator, dest), Topology { seq: ansn, until: now + vtime, metric });
            }
            if self.links_of(originator) != before {
                self.version += 1;
            }
        }

        fn expire(&mut self, now: Instant) {
            let before = self.tuples.len();
            self.tuples.retain(|_, t| t.until > now);
            if self.tuples.len() != before {
                self.version += 1;
            }
        }
    }

    proptest! {
        /// Kept by originator, the set holds what the map keyed (T_last,
        /// T_dest) holds after any run of TCs (new, refreshing, of older
        /// or newer ANSNs across the wrap, with repeated and unsorted
        /// destinations, empty) and expiries; its version moves exactly
        /// when the advertised links change, and its expiry times are
        /// exactly its tuples'.
        #[test]
        fn the_set_kept_by_originator_is_the_set_keyed_by_link(
            ops in proptest::collection::vec(
                (0u32..5, prop_oneof![0u16..4, 65_533u16..=65_535], 1u64..5,
                 proptest::collection::vec((0u32..7, 0u16..3), 0..6), 0u8..4),
                1..60,
            ),
        ) {
            let mut set = TopologySet::default();
            let mut reference = Reference::default();
            for (step, (originator, ansn, vtime_s, advertised, expire)) in ops.into_iter().enumerate() {
                let now = Instant::ZERO + Duration::from_millis(700 * step as u64);
                let version = set.links_version();
                if expire == 0 {
                    set.expire(now);
                    reference.expire(now);
                    // An expiry with a tuple due bumps the version whether
                    // or not a link is gone for good: compared below only
                    // as "at least as often".
                    prop_assert!(set.links_version() >= version);
                } else {
                    let reference_version = reference.version;
                    let vtime = Duration::from_secs(vtime_s);
                    set.process_tc(now, originator, vtime, ansn, &advertised);
                    reference.process_tc(now, originator, vtime, ansn, &advertised);
                    prop_assert_eq!(set.links_version() - version, reference.version - reference_version);
                }
                let held: Vec<_> = set.tuples.links().map(|(l, d, t)| (l, d, t.seq, t.until, t.metric)).collect();
                let want: Vec<_> =
                    reference.tuples.iter().map(|(&(l, d), t)| (l, d, t.seq, t.until, t.metric)).collect();
                prop_assert_eq!(&held, &want);
                prop_assert!(set.tuples.0.values().all(|tuples| !tuples.is_empty()));
                let mut untils: BTreeMap<Instant, u32> = BTreeMap::new();
                want.iter().for_each(|&(_, _, _, until, _)| *untils.entry(until).or_insert(0) += 1);
                prop_assert_eq!(&set.untils, &untils);
                prop_assert!(set.merged.is_empty() && set.replaced_untils.is_empty());
            }
        }

        /// Reading the topology's edges again only for the originators
        /// whose links changed gives what reading every tuple gives, after
        /// any run of TCs (new, refreshing, out of order) and expiries.
        #[test]
        fn edges_read_again_only_where_changed_are_all_the_edges(
            ops in proptest::collection::vec(
                (0u32..6, 0u16..4, 1u64..4, proptest::collection::vec((0u32..8, 0u16..3), 0..4), any::<bool>()),
                1..40,
            ),
        ) {
            // Metric 0 stands for a link advertised as unusable.
            let cost = |m: u16| (m > 0).then_some(u32::from(m) * 256);
            let mut topology = TopologySet::default();
            let (mut edges, mut kept) = (SortedEdges::default(), false);
            for (step, (originator, ansn, vtime_s, mut advertised, expire)) in ops.into_iter().enumerate() {
                let now = Instant::ZERO + Duration::from_secs(step as u64);
                if expire {
                    topology.expire(now);
                } else {
                    advertised.sort();
                    advertised.dedup_by_key(|a| a.0);
                    topology.process_tc(now, originator, Duration::from_secs(vtime_s), ansn, &advertised);
                }
                let mut all = SortedEdges::from(vec![(9, 9, 9)]);
                topology.clone().edges(ReadInto { edges: &mut all, kept: false, replaced: &mut Vec::new() }, cost);
                let (before, mut replaced) = (edges.as_slice().to_vec(), vec![(9, 9, 9)]);
                let touched = topology.edges(ReadInto { edges: &mut edges, kept, replaced: &mut replaced }, cost);
                prop_assert_eq!(edges.as_slice(), all.as_slice());
                prop_assert!(edges.as_slice().is_sorted());
                // Whatever changed since the last read is touched.
                check_reread(&before, &edges, kept, touched.as_deref(), &replaced)?;
                kept = true;
            }
        }

    }
}
