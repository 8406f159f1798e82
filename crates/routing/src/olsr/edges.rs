//! The links OLSR's routing table reads (RFC 3626 §10: symmetric links,
//! 2-hop links, advertised links) as sorted edges, and how they changed
//! since the last read: which nodes' links to read again, and the
//! differences between two reads, found only where they can be (issue 28:
//! reading and comparing every link after each control message was a
//! fifth of a 100-node OLSR run).

use super::packet::METRIC_INFINITE;
use super::{Metric, METRIC_UNIT};
use crate::NodeId;
use std::collections::{BTreeMap, BTreeSet};

/// Where a read of a set's links goes: `edges`, which holds the last read
/// when `kept`, and `replaced`, for the touched nodes' links as they were
/// ([`read_again`]; the 2-hop and the topology set read into it).
#[derive(Debug)]
pub(super) struct ReadInto<'a> {
    pub(super) edges: &'a mut Vec<Edge>,
    pub(super) kept: bool,
    pub(super) replaced: &'a mut Vec<Edge>,
}

/// A set's links, keyed (from, to), read again as edges (from, to, the
/// tuple's `cost`; a link whose cost is `None` left out) into `edges`, in
/// place. With `kept` (`edges` holds the last read), only the links out of
/// the `dirty` nodes are replaced, each node's range spliced, and their
/// links as they were are written to `replaced` (emptied first; sorted):
/// returns the nodes touched, sorted. Without, every link is read and
/// `None` returned. Either way `edges` ends as reading every tuple gives.
/// Shared by the 2-hop and the topology set, which mark the nodes whose
/// links they change (issue 28: reading every tuple after each change
/// was a fifth of a 100-node OLSR run, and copying the untouched links
/// into a new read, ~1,000 of them per change in the ATP paper's network,
/// a twentieth).
pub(super) fn read_again<T>(
    set: &BTreeMap<(NodeId, NodeId), T>,
    into: ReadInto<'_>,
    dirty: BTreeSet<NodeId>,
    cost: impl Fn(&T) -> Option<u32>,
) -> Option<Vec<NodeId>> {
    let ReadInto { edges, kept, replaced } = into;
    let edge = |(&(from, to), t): (&(NodeId, NodeId), &T)| cost(t).map(|c| (from, to, c));
    replaced.clear();
    if !kept {
        edges.clear();
        edges.extend(set.iter().filter_map(edge));
        return None;
    }
    // The dirty nodes in order: each range starts at or after the last.
    let mut lo = 0;
    for &from in &dirty {
        lo += edges[lo..].partition_point(|e| e.0 < from);
        let hi = lo + edges[lo..].partition_point(|e| e.0 == from);
        replaced.extend_from_slice(&edges[lo..hi]);
        let before = edges.len();
        edges.splice(lo..hi, set.range((from, 0)..=(from, NodeId::MAX)).filter_map(edge));
        lo = hi + edges.len() - before;
    }
    Some(dirty.into_iter().collect())
}

/// One part of the links [`super::tables::RoutingTable::follow`] reads, as it changed:
/// `old` and `new`, each sorted, and the nodes whose links out may differ
/// between them (sorted; `None`: any), so that only their ranges are
/// compared. Of the old links only the touched nodes' need be there (what
/// [`read_again`] replaced).
#[derive(Clone, Copy, Debug)]
pub(super) struct PartChange<'a> {
    pub(super) old: &'a [Edge],
    pub(super) new: &'a [Edge],
    pub(super) touched: Option<&'a [NodeId]>,
}

/// The links out of `from` in the sorted `edges`.
fn links_out(edges: &[Edge], from: NodeId) -> &[Edge] {
    let lo = edges.partition_point(|e| e.0 < from);
    let n = edges[lo..].partition_point(|e| e.0 == from);
    &edges[lo..lo + n]
}

/// A link as the routing table reads it: (from, to, cost in
/// [`METRIC_UNIT`]s).
pub(super) type Edge = (NodeId, NodeId, u32);

/// A symmetric neighbour and the cost of the link to it.
pub(super) type FirstHop = (NodeId, u32);

/// The cost of an advertised link of wire metric `m`: one hop, or its ETX;
/// `None` for a link advertised as unusable (ETX with a delivery ratio 0).
/// An ETX is at least 1 (seed 004 eq. 1: the delivery ratios are at most
/// 1): a smaller cost, which no node measures but a damaged or forged HELLO
/// or TC can carry, counts as a loss-free link, so that no link is cheaper
/// than a perfect one and a path's quality never reports an ETX below 1.
pub(super) fn edge_cost(metric: Metric, m: u16) -> Option<u32> {
    match metric {
        Metric::HopCount => Some(METRIC_UNIT),
        Metric::Etx { .. } if m == METRIC_INFINITE => None,
        Metric::Etx { .. } => Some(u32::from(m).max(METRIC_UNIT)),
    }
}

/// The differences between two sorted multisets of links, in order:
/// (`true`, a link of `old` not in `new`) or (`false`, one of `new` not in
/// `old`).
pub(super) fn diff<'a, T: Ord>(old: &'a [T], new: &'a [T]) -> impl Iterator<Item = (bool, &'a T)> + 'a {
    let (mut old, mut new) = (old.iter().peekable(), new.iter().peekable());
    std::iter::from_fn(move || loop {
        match (old.peek(), new.peek()) {
            (None, None) => return None,
            (Some(a), Some(b)) if a == b => {
                old.next();
                new.next();
            }
            (Some(a), Some(b)) if a < b => return old.next().map(|e| (true, e)),
            (Some(_), None) => return old.next().map(|e| (true, e)),
            (_, Some(_)) => return new.next().map(|e| (false, e)),
        }
    })
}

/// [`diff`] of `old` and `new` where only the links out of the `touched`
/// nodes (sorted) may differ; `None`: any may. The same differences in the
/// same order, found in the touched nodes' ranges alone (issue 28: a
/// 100-node network's 2-hop set holds ~570 links, and diffing all of them
/// after each HELLO that changed one node's was a twentieth of an OLSR run).
pub(super) fn diff_in<'a>(
    old: &'a [Edge],
    new: &'a [Edge],
    touched: Option<&'a [NodeId]>,
) -> impl Iterator<Item = (bool, &'a Edge)> + 'a {
    let everything = touched.is_none().then_some((old, new));
    let ranges = touched.into_iter().flatten().map(move |&n| (links_out(old, n), links_out(new, n)));
    everything.into_iter().chain(ranges).flat_map(|(o, n)| diff(o, n))
}

/// Checks a [`read_again`] from `before` to `after` (for the sets'
/// tests): with `kept`, every link that changed is out of a touched node,
/// `replaced` is exactly `before`'s links out of the touched nodes, and
/// comparing them with `after` in the touched ranges finds every
/// difference, in order; without, nothing is reported touched or replaced.
#[cfg(test)]
pub(super) fn check_reread(
    before: &[Edge],
    after: &[Edge],
    kept: bool,
    touched: Option<&[NodeId]>,
    replaced: &[Edge],
) -> Result<(), proptest::test_runner::TestCaseError> {
    use proptest::prelude::*;
    let Some(touched) = touched.filter(|_| kept) else {
        prop_assert!(!kept && touched.is_none() && replaced.is_empty());
        return Ok(());
    };
    for (_, e) in diff(before, after) {
        prop_assert!(touched.contains(&e.0), "{:?} changed untouched", e);
    }
    let expected: Vec<Edge> = before.iter().filter(|e| touched.contains(&e.0)).copied().collect();
    prop_assert_eq!(replaced, &expected[..]);
    let found: Vec<_> = diff_in(replaced, after, Some(touched)).collect();
    prop_assert_eq!(found, diff(before, after).collect::<Vec<_>>());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Up to 40 links among 8 nodes, sorted, duplicates allowed.
    fn links() -> impl Strategy<Value = Vec<Edge>> {
        proptest::collection::vec((0u32..8, 0u32..8, prop_oneof![Just(256u32), Just(512)]), 0..40).prop_map(|mut e| {
            e.sort();
            e
        })
    }

    proptest! {
        /// Comparing only the touched nodes' links out finds the same
        /// differences, in the same order, as comparing everything, when
        /// the links of the others are the same; and misses a change of a
        /// node left out.
        #[test]
        fn diffing_the_touched_nodes_alone_finds_every_difference(
            old in links(),
            new in links(),
            extra in proptest::collection::btree_set(0u32..12, 0..3),
        ) {
            let (mut old, mut new) = (old, new);
            old.sort();
            new.sort();
            let changed: BTreeSet<NodeId> = diff(&old, &new).map(|(_, e)| e.0).collect();
            let touched: Vec<NodeId> = changed.union(&extra).copied().collect();
            let all: Vec<_> = diff(&old, &new).collect();
            prop_assert_eq!(&diff_in(&old, &new, Some(&touched)).collect::<Vec<_>>(), &all);
            prop_assert_eq!(&diff_in(&old, &new, None).collect::<Vec<_>>(), &all);
            if let Some(&first) = changed.iter().next() {
                let without: Vec<NodeId> = touched.iter().copied().filter(|&n| n != first).collect();
                prop_assert!(diff_in(&old, &new, Some(&without)).count() < all.len());
            }
        }
    }
}
