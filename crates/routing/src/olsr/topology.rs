//! OLSR's topology set (RFC 3626 §4.4, §9.5): the links TC messages
//! advertise, newest ANSN per originator, with what the routing table reads
//! from it kept at each change (a version, the originators whose links
//! changed, the expiry times as a multiset).

use super::edges::{read_again, ReadInto};
use crate::common::seq_newer;
use crate::NodeId;
use meshbed_core::{Duration, Instant};
use std::collections::{BTreeMap, BTreeSet};

/// RFC 3626 §4.4 topology tuple.
#[derive(Clone, Debug)]
struct Topology {
    seq: u16,
    until: Instant,
    metric: u16,
}

/// The topology set, keyed by (T_last, T_dest).
#[derive(Clone, Debug, Default)]
pub(super) struct TopologySet {
    tuples: BTreeMap<(NodeId, NodeId), Topology>,
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
}

pub(super) fn add_until(untils: &mut BTreeMap<Instant, u32>, at: Instant) {
    *untils.entry(at).or_insert(0) += 1;
}

pub(super) fn remove_until(untils: &mut BTreeMap<Instant, u32>, at: Instant) {
    if let Some(n) = untils.get_mut(&at) {
        *n -= 1;
        if *n == 0 {
            untils.remove(&at);
        }
    }
}

impl TopologySet {
    /// A TC of `originator` at `now` (RFC 3626 §9.5): ignored if a newer
    /// ANSN is known; else it replaces the originator's older tuples.
    pub(super) fn process_tc(
        &mut self,
        now: Instant,
        originator: NodeId,
        vtime: Duration,
        ansn: u16,
        advertised: &[(NodeId, u16)],
    ) {
        let from_originator = self.tuples.range((originator, 0)..=(originator, NodeId::MAX));
        if from_originator.clone().any(|(_, t)| seq_newer(t.seq, ansn)) {
            return; // out of order: a newer set is known
        }
        let before = self.links_of(originator);
        let stale: Vec<_> = from_originator.filter(|(_, t)| t.seq != ansn).map(|(&k, _)| k).collect();
        for k in stale {
            if let Some(t) = self.tuples.remove(&k) {
                remove_until(&mut self.untils, t.until);
            }
        }
        let until = now + vtime;
        for &(dest, metric) in advertised {
            if let Some(old) = self.tuples.insert((originator, dest), Topology { seq: ansn, until, metric }) {
                remove_until(&mut self.untils, old.until);
            }
            add_until(&mut self.untils, until);
        }
        if self.links_of(originator) != before {
            self.links_version += 1;
            self.dirty.insert(originator);
        }
    }

    /// The links `originator` advertises: (T_dest, metric), in order.
    fn links_of(&self, originator: NodeId) -> Vec<(NodeId, u16)> {
        self.tuples.range((originator, 0)..=(originator, NodeId::MAX)).map(|(&(_, dest), t)| (dest, t.metric)).collect()
    }

    /// Drops expired tuples (RFC 3626 §4.4).
    pub(super) fn expire(&mut self, now: Instant) {
        if self.untils.first_key_value().is_none_or(|(&at, _)| at > now) {
            return; // nothing due
        }
        let dirty = &mut self.dirty;
        self.tuples.retain(|&(last, _), t| {
            let keep = t.until > now;
            if !keep {
                dirty.insert(last);
            }
            keep
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
    use crate::olsr::edges::{check_reread, SortedEdges};
    use proptest::prelude::*;

    proptest! {
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
