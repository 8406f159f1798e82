//! RFC 3626 §8.3.1: the MPR set, chosen from the symmetric neighbours so
//! that every strict 2-hop neighbour is reached through one of them.

use super::{WILL_ALWAYS, WILL_NEVER};
use crate::NodeId;
use std::cmp::Reverse;
use std::collections::BTreeSet;

/// The state of a selection: what each candidate reaches, what is still
/// uncovered, and how many uncovered nodes each candidate reaches.
struct Cover {
    /// Per candidate (index into N1), the 2-hop nodes (indices into N2)
    /// it reaches.
    covers: Vec<Vec<usize>>,
    /// Per 2-hop node, the candidates that reach it.
    reached_by: Vec<Vec<usize>>,
    uncovered: Vec<bool>,
    /// How many 2-hop nodes are uncovered.
    left: usize,
    /// Per candidate, how many uncovered 2-hop nodes it reaches.
    reach: Vec<usize>,
    chosen: Vec<bool>,
}

impl Cover {
    fn choose(&mut self, i: usize) {
        self.chosen[i] = true;
        for &j in &self.covers[i] {
            if std::mem::replace(&mut self.uncovered[j], false) {
                self.left -= 1;
                for &k in &self.reached_by[j] {
                    self.reach[k] -= 1;
                }
            }
        }
    }
}

/// RFC 3626 §8.3.1 MPR heuristic (without the optional optimisation),
/// over what it reads (the symmetric neighbours as `update` last saw them,
/// in id order, and the 2-hop tuples as (via, 2-hop) pairs).
/// The sets are sorted vectors indexed by position, not maps: this runs
/// whenever a moving node's neighbourhood changes (issue 28: its map
/// lookups were a tenth of a 100-node OLSR run). Each candidate's count of
/// the uncovered 2-hop nodes it reaches is kept as nodes are covered,
/// instead of counted afresh over its whole list at every choice (issue
/// 28: the selection was 2.3% of the ATP paper's OLSR run); the choices
/// are the same (a test compares them with the counting version).
pub(super) fn select_mprs(
    me: NodeId,
    symmetric: &[(NodeId, u8)],
    two_hop: impl Iterator<Item = (NodeId, NodeId)>,
) -> BTreeSet<NodeId> {
    // N1: symmetric neighbours that may be chosen, in id order.
    let n1: Vec<(NodeId, u8)> = symmetric.iter().copied().filter(|&(_, w)| w != WILL_NEVER).collect();
    let symmetric: Vec<NodeId> = symmetric.iter().map(|&(n, _)| n).collect();
    // Who covers what: N2 excludes this node and its symmetric neighbours.
    let mut covers: Vec<Vec<NodeId>> = vec![Vec::new(); n1.len()];
    for (via, two) in two_hop {
        if let Ok(i) = n1.binary_search_by_key(&via, |&(n, _)| n) {
            if two != me && symmetric.binary_search(&two).is_err() {
                covers[i].push(two);
            }
        }
    }
    let mut n2: Vec<NodeId> = covers.iter().flatten().copied().collect();
    n2.sort_unstable();
    n2.dedup();
    let at = |two: &NodeId| n2.binary_search(two).expect("every covered node is in N2");
    let covers: Vec<Vec<usize>> = covers.iter().map(|c| c.iter().map(at).collect()).collect();
    let mut reached_by: Vec<Vec<usize>> = vec![Vec::new(); n2.len()];
    for (i, c) in covers.iter().enumerate() {
        c.iter().for_each(|&j| reached_by[j].push(i));
    }
    let mut cover = Cover {
        reach: covers.iter().map(Vec::len).collect(),
        covers,
        reached_by,
        uncovered: vec![true; n2.len()],
        left: n2.len(),
        chosen: vec![false; n1.len()],
    };
    // Step 1: every WILL_ALWAYS neighbour.
    for (i, &(_, w)) in n1.iter().enumerate() {
        if w == WILL_ALWAYS {
            cover.choose(i);
        }
    }
    // Step 3: neighbours that are the only way to some 2-hop node still
    // uncovered.
    let c = &cover;
    let sole: Vec<usize> = (0..n1.len())
        .filter(|&i| c.covers[i].iter().any(|&j| c.uncovered[j] && c.reached_by[j].len() == 1))
        .collect();
    for i in sole {
        cover.choose(i);
    }
    // Step 4: highest willingness, then most still uncovered reached,
    // then highest degree; lowest id last for determinism.
    while cover.left > 0 {
        let best = (0..n1.len())
            .filter(|&i| !cover.chosen[i] && cover.reach[i] > 0)
            .map(|i| (n1[i].1, cover.reach[i], cover.covers[i].len(), Reverse(n1[i].0), i))
            .max();
        let Some((.., i)) = best else { break };
        cover.choose(i);
    }
    n1.iter().zip(cover.chosen).filter(|(_, c)| *c).map(|(&(n, _), _)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;


    /// The selection as it was before the reach counts (each candidate's
    /// uncovered 2-hop nodes counted afresh at every choice): the reference.
    fn select_mprs_reference(
        me: NodeId,
        symmetric: &[(NodeId, u8)],
        two_hop: impl Iterator<Item = (NodeId, NodeId)>,
    ) -> BTreeSet<NodeId> {
        // N1: symmetric neighbours that may be chosen, in id order.
        let n1: Vec<(NodeId, u8)> = symmetric.iter().copied().filter(|&(_, w)| w != WILL_NEVER).collect();
        let symmetric: Vec<NodeId> = symmetric.iter().map(|&(n, _)| n).collect();
        // Who covers what: N2 excludes this node and its symmetric
        // neighbours. The 2-hop set is in (via, 2-hop) order, so each
        // neighbour's list is sorted.
        let mut covers: Vec<Vec<NodeId>> = vec![Vec::new(); n1.len()];
        for (via, two) in two_hop {
            if let Ok(i) = n1.binary_search_by_key(&via, |&(n, _)| n) {
                if two != me && symmetric.binary_search(&two).is_err() {
                    covers[i].push(two);
                }
            }
        }
        let mut n2: Vec<NodeId> = covers.iter().flatten().copied().collect();
        n2.sort_unstable();
        n2.dedup();
        let at = |two: &NodeId| n2.binary_search(two).expect("every covered node is in N2");
        let covers: Vec<Vec<usize>> = covers.iter().map(|c| c.iter().map(at).collect()).collect();
        let mut uncovered = vec![true; n2.len()];
        let mut chosen = vec![false; n1.len()];
        let choose = |i: usize, chosen: &mut [bool], uncovered: &mut [bool]| {
            chosen[i] = true;
            covers[i].iter().for_each(|&j| uncovered[j] = false);
        };
        // Step 1: every WILL_ALWAYS neighbour.
        for (i, &(_, w)) in n1.iter().enumerate() {
            if w == WILL_ALWAYS {
                choose(i, &mut chosen, &mut uncovered);
            }
        }
        // Step 3: neighbours that are the only way to some 2-hop node still
        // uncovered.
        let mut ways = vec![0u32; n2.len()];
        covers.iter().flatten().for_each(|&j| ways[j] += 1);
        let sole: Vec<usize> = (0..n1.len()).filter(|&i| covers[i].iter().any(|&j| uncovered[j] && ways[j] == 1)).collect();
        for i in sole {
            choose(i, &mut chosen, &mut uncovered);
        }
        // Step 4: highest willingness, then most still uncovered reached,
        // then highest degree; lowest id last for determinism.
        while uncovered.contains(&true) {
            let best = (0..n1.len())
                .filter(|&i| !chosen[i])
                .map(|i| {
                    let reach = covers[i].iter().filter(|&&j| uncovered[j]).count();
                    (n1[i].1, reach, covers[i].len(), Reverse(n1[i].0), i)
                })
                .filter(|k| k.1 > 0)
                .max();
            let Some((.., i)) = best else { break };
            choose(i, &mut chosen, &mut uncovered);
        }
        n1.iter().zip(chosen).filter(|(_, c)| *c).map(|(&(n, _), _)| n).collect()
    }

    /// RFC 3626 §8.3.1 step 4 ranks by the uncovered nodes reached, then
    /// by degree: after node 1 (reaching 10–13) only 14 and 15 are left,
    /// which node 5 reaches both of and node 7 (of degree 4) one.
    #[test]
    fn reach_comes_before_degree() {
        let symmetric: Vec<(NodeId, u8)> = (1..=7).map(|n| (n, 3)).collect();
        let covers: [(NodeId, &[NodeId]); 7] = [
            (1, &[10, 11, 12, 13]),
            (2, &[10, 11]),
            (3, &[12, 14]),
            (4, &[13, 14]),
            (5, &[14, 15]),
            (6, &[15]),
            (7, &[10, 11, 12, 14]),
        ];
        let two_hop = covers.iter().flat_map(|&(via, twos)| twos.iter().map(move |&two| (via, two)));
        assert_eq!(select_mprs(0, &symmetric, two_hop), BTreeSet::from([1, 5]));
    }

    proptest! {
        /// The same MPRs as counting each candidate's uncovered 2-hop
        /// nodes afresh at every choice, over random neighbourhoods: any
        /// willingness (WILL_NEVER and WILL_ALWAYS among them), 2-hop nodes
        /// that are also neighbours or the node itself, reached through
        /// one neighbour or many.
        #[test]
        fn the_same_choices_as_counting_afresh(
            willingness in proptest::collection::btree_map(1..30u32, 0..8u8, 0..25),
            two_hop in proptest::collection::btree_set((1..30u32, 0..45u32), 0..200),
        ) {
            let symmetric: Vec<(NodeId, u8)> = willingness.into_iter().collect();
            let fast = select_mprs(0, &symmetric, two_hop.iter().copied());
            let reference = select_mprs_reference(0, &symmetric, two_hop.iter().copied());
            prop_assert_eq!(fast, reference);
        }
    }
}
