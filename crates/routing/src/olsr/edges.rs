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
    pub(super) edges: &'a mut SortedEdges,
    pub(super) kept: bool,
    pub(super) replaced: &'a mut Vec<Edge>,
}

/// Node ids below this have where their links start in a
/// [`SortedEdges`] kept in an array; larger ones (a hostile peer's, or a
/// network of more nodes) are found by binary search. Bounds the array at
/// 16 KiB, and the offsets a replaced range shifts at 4,096.
const INDEXED_IDS: usize = 4096;

/// A set's links, sorted, with where each node's links out start (for ids
/// below [`INDEXED_IDS`]), so that a node's range is two loads rather than
/// two binary searches. (Issue 28: the binary searches of [`read_again`]
/// and [`super::tables::RoutingTable::follow`] over the ~1,000 links of
/// the ATP paper's network were two fifths of updating OLSR's routes.)
#[derive(Clone, Debug)]
pub(super) struct SortedEdges {
    edges: Vec<Edge>,
    /// `starts[n]`, for `n` below `starts.len()`: the first link from a
    /// node at or above `n` (never empty). Links out of the nodes from
    /// `starts.len() - 1` on are found by binary search after the last.
    starts: Vec<u32>,
}

impl Default for SortedEdges {
    fn default() -> Self {
        SortedEdges { edges: Vec::new(), starts: vec![0] }
    }
}

impl SortedEdges {
    /// The links, sorted.
    pub(super) fn as_slice(&self) -> &[Edge] {
        &self.edges
    }

    /// The links out of `from`.
    pub(super) fn links_out(&self, from: NodeId) -> &[Edge] {
        &self.edges[self.range(from)]
    }

    /// How many ids the array covers.
    fn indexed(&self) -> usize {
        self.starts.len() - 1
    }

    fn range(&self, from: NodeId) -> std::ops::Range<usize> {
        let n = from as usize;
        if n < self.indexed() {
            return self.starts[n] as usize..self.starts[n + 1] as usize;
        }
        let tail = self.starts[self.indexed()] as usize;
        let lo = tail + self.edges[tail..].partition_point(|e| e.0 < from);
        lo..lo + self.edges[lo..].partition_point(|e| e.0 == from)
    }

    /// Replaces every link by `edges` (sorted), and indexes them.
    fn reset(&mut self, edges: impl Iterator<Item = Edge>) {
        self.edges.clear();
        self.edges.extend(edges);
        debug_assert!(self.edges.is_sorted());
        self.starts.truncate(1);
        let last = self.edges.iter().rev().map(|e| e.0 as usize).find(|&n| n < INDEXED_IDS);
        self.grow_index(last.map_or(0, |n| n + 1));
    }

    /// Extends the array to cover the ids below `to` (at most
    /// [`INDEXED_IDS`]), walking the links after the last covered once.
    fn grow_index(&mut self, to: usize) {
        let mut i = self.starts[self.indexed()] as usize;
        for n in self.indexed() + 1..=to {
            i += self.edges[i..].iter().take_while(|e| (e.0 as usize) < n).count();
            self.starts.push(i as u32);
        }
    }

    /// Replaces the links out of `from` by `links` (each from `from`,
    /// sorted), appending those they replace to `replaced`.
    fn replace(&mut self, from: NodeId, links: impl Iterator<Item = Edge>, replaced: &mut Vec<Edge>) {
        let n = from as usize;
        if n < INDEXED_IDS && n >= self.indexed() {
            self.grow_index(n + 1);
        }
        let range = self.range(from);
        replaced.extend_from_slice(&self.edges[range.clone()]);
        let before = self.edges.len();
        self.edges.splice(range, links);
        // The ranges of the indexed nodes after `from` move with its end.
        let grown = self.edges.len().wrapping_sub(before) as u32;
        if n < self.indexed() {
            for start in &mut self.starts[n + 1..] {
                *start = start.wrapping_add(grown);
            }
        }
        debug_assert!(self.links_out(from).iter().all(|e| e.0 == from));
    }
}

#[cfg(test)]
impl From<Vec<Edge>> for SortedEdges {
    fn from(edges: Vec<Edge>) -> Self {
        let mut sorted = SortedEdges::default();
        sorted.reset(edges.into_iter());
        sorted
    }
}

/// A set of links keyed (from, to), as [`read_again`] reads it: all of
/// them, or those out of one node, each in order. The 2-hop set keeps its
/// tuples in an ordered map by (from, to); the topology set keeps each
/// originator's together ([`super::topology`]).
pub(super) trait LinkSet {
    type Tuple;
    /// Every link (from, to, tuple), in (from, to) order.
    fn links(&self) -> impl Iterator<Item = (NodeId, NodeId, &Self::Tuple)>;
    /// The links out of `from` (to, tuple), in order.
    fn links_from(&self, from: NodeId) -> impl Iterator<Item = (NodeId, &Self::Tuple)>;
}

/// A set's tuples grouped by the node their links start from: each
/// node's (to, tuple), sorted by `to`, never empty. The 2-hop set and the
/// topology set change one node's links at a time (a HELLO its
/// neighbour's, a TC its originator's), so a change is one lookup and a
/// merge of two short sorted lists, not a tree search per link (issue 28:
/// those searches, in maps keyed (from, to), were a tenth of the ATP
/// paper's 100-node OLSR run).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct LinksByNode<T>(pub(super) BTreeMap<NodeId, Vec<(NodeId, T)>>);

impl<T> Default for LinksByNode<T> {
    fn default() -> Self {
        LinksByNode(BTreeMap::new())
    }
}

impl<T> LinkSet for LinksByNode<T> {
    type Tuple = T;
    fn links(&self) -> impl Iterator<Item = (NodeId, NodeId, &T)> {
        self.0.iter().flat_map(|(&from, links)| links.iter().map(move |(to, t)| (from, *to, t)))
    }
    fn links_from(&self, from: NodeId) -> impl Iterator<Item = (NodeId, &T)> {
        self.0.get(&from).into_iter().flatten().map(|(to, t)| (*to, t))
    }
}

/// Counts one more tuple expiring `at` in `runs` (time, tuples), merging
/// with the last run when it has the same time: one node's tuples mostly
/// share one expiry time (the message that refreshed them all).
pub(super) fn note_until<I: PartialEq>(runs: &mut Vec<(I, u32)>, at: I) {
    match runs.last_mut() {
        Some((t, n)) if *t == at => *n += 1,
        _ => runs.push((at, 1)),
    }
}

/// A set's links read again as edges (from, to, the tuple's `cost`; a
/// link whose cost is `None` left out) into `edges`, in place. With `kept`
/// (`edges` holds the last read), only the links out of the `dirty` nodes
/// are replaced, each node's range spliced, and their links as they were
/// are written to `replaced` (emptied first; sorted): returns the nodes
/// touched, sorted. Without, every link is read and `None` returned.
/// Either way `edges` ends as reading every tuple gives. Shared by the
/// 2-hop and the topology set, which mark the nodes whose links they
/// change (issue 28: reading every tuple after each change was a fifth of
/// a 100-node OLSR run, and copying the untouched links into a new read,
/// ~1,000 of them per change in the ATP paper's network, a twentieth).
pub(super) fn read_again<S: LinkSet>(
    set: &S,
    into: ReadInto<'_>,
    dirty: BTreeSet<NodeId>,
    cost: impl Fn(&S::Tuple) -> Option<u32>,
) -> Option<Vec<NodeId>> {
    let ReadInto { edges, kept, replaced } = into;
    replaced.clear();
    if !kept {
        edges.reset(set.links().filter_map(|(from, to, t)| cost(t).map(|c| (from, to, c))));
        return None;
    }
    // The dirty nodes in order, so that `replaced` is sorted.
    for &from in &dirty {
        edges.replace(from, set.links_from(from).filter_map(|(to, t)| cost(t).map(|c| (from, to, c))), replaced);
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
    pub(super) new: &'a SortedEdges,
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
    new: &'a SortedEdges,
    touched: Option<&'a [NodeId]>,
) -> impl Iterator<Item = (bool, &'a Edge)> + 'a {
    let everything = touched.is_none().then_some((old, new.as_slice()));
    let ranges = touched.into_iter().flatten().map(move |&n| (links_out(old, n), new.links_out(n)));
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
    after: &SortedEdges,
    kept: bool,
    touched: Option<&[NodeId]>,
    replaced: &[Edge],
) -> Result<(), proptest::test_runner::TestCaseError> {
    use proptest::prelude::*;
    let Some(touched) = touched.filter(|_| kept) else {
        prop_assert!(!kept && touched.is_none() && replaced.is_empty());
        return after.check();
    };
    after.check()?;
    for (_, e) in diff(before, after.as_slice()) {
        prop_assert!(touched.contains(&e.0), "{:?} changed untouched", e);
    }
    let expected: Vec<Edge> = before.iter().filter(|e| touched.contains(&e.0)).copied().collect();
    prop_assert_eq!(replaced, &expected[..]);
    let found: Vec<_> = diff_in(replaced, after, Some(touched)).collect();
    prop_assert_eq!(found, diff(before, after.as_slice()).collect::<Vec<_>>());
    Ok(())
}

#[cfg(test)]
impl SortedEdges {
    /// Checks the links are sorted and each node's range is the links out
    /// of it: every node with links, every id the array covers, and the
    /// ids just past it.
    pub(super) fn check(&self) -> Result<(), proptest::test_runner::TestCaseError> {
        use proptest::prelude::*;
        prop_assert!(self.edges.is_sorted());
        prop_assert!(self.indexed() <= INDEXED_IDS && self.starts[0] == 0);
        let past = (self.indexed()..self.indexed() + 2).map(|n| n as NodeId);
        let ids = self.edges.iter().map(|e| e.0).chain((0..self.indexed() as NodeId).chain(past));
        for n in ids {
            let out: Vec<Edge> = self.edges.iter().copied().filter(|e| e.0 == n).collect();
            prop_assert_eq!(self.links_out(n), &out[..], "links out of {}", n);
        }
        Ok(())
    }
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
            let indexed = SortedEdges::from(new.clone());
            prop_assert_eq!(&diff_in(&old, &indexed, Some(&touched)).collect::<Vec<_>>(), &all);
            prop_assert_eq!(&diff_in(&old, &indexed, None).collect::<Vec<_>>(), &all);
            if let Some(&first) = changed.iter().next() {
                let without: Vec<NodeId> = touched.iter().copied().filter(|&n| n != first).collect();
                prop_assert!(diff_in(&old, &indexed, Some(&without)).count() < all.len());
            }
        }

        /// Replacing nodes' links one by one, or all of them, keeps the
        /// links what the same changes give a plain sorted list, hands back
        /// exactly the links replaced, and keeps every node's range right:
        /// ids in the array, past its end, at the limit and far beyond.
        #[test]
        fn the_index_follows_every_replacement(
            ops in proptest::collection::vec(
                (any::<bool>(), proptest::collection::vec((0usize..10, 0u32..5), 0..6)),
                1..30,
            ),
        ) {
            const IDS: [NodeId; 10] = [0, 1, 2, 3, 5, 8, 4094, 4095, 4096, 70_000];
            let mut edges = SortedEdges::default();
            let mut model: Vec<Edge> = Vec::new();
            for (reset, links) in ops {
                if reset {
                    model = links.iter().map(|&(i, to)| (IDS[i], to, 256)).collect();
                    model.sort();
                    edges.reset(model.iter().copied());
                } else {
                    // The links out of one node (the first's), replaced.
                    let from = IDS[links.first().map_or(0, |l| l.0)];
                    let mut new: Vec<Edge> = links.iter().map(|&(_, to)| (from, to, 512)).collect();
                    new.sort();
                    let was: Vec<Edge> = model.iter().copied().filter(|e| e.0 == from).collect();
                    model.retain(|e| e.0 != from);
                    model.extend(new.iter().copied());
                    model.sort();
                    let mut replaced = vec![(9, 9, 9)];
                    edges.replace(from, new.into_iter(), &mut replaced);
                    prop_assert_eq!(&replaced[1..], &was[..]);
                }
                prop_assert_eq!(edges.as_slice(), &model[..]);
                edges.check()?;
            }
        }
    }
}
