//! MPR selection (RFC 3626 §8.3.1, the heuristic without its optional
//! optimisation), over what it reads: the symmetric neighbours with their
//! willingness as [`super::neighbours::Neighbours`] last saw them, and the
//! 2-hop tuples.
//!
//! A moving node's neighbourhood changes between most of its HELLOs, so
//! the set is selected again for nearly every HELLO it sends (about 5,600
//! times in the ATP paper's 100-node, 100 s OLSR run, each over ~1,000
//! tuples). The selection numbers the 2-hop nodes as it meets them and
//! keeps who covers what in flat lists, without sorting the tuples by
//! 2-hop node; step 4 keeps, for every neighbour, how many still-uncovered
//! 2-hop nodes it reaches, lowered as nodes are covered, instead of
//! counting them again for every candidate at every round (issue 28: the
//! sort, the searches and the recount made each selection ~140 k
//! instructions, 3% of that run).

use super::node_set::{NodeIndex, NodeSet};
use super::{WILL_ALWAYS, WILL_NEVER};
use crate::NodeId;
use std::cmp::Reverse;
use std::collections::BTreeSet;

/// The MPR set of `me` (RFC 3626 §8.3.1): `symmetric` are its symmetric
/// neighbours with their willingness, in id order; `two_hop` the 2-hop
/// tuples as (neighbour, 2-hop node), in that order.
pub(super) fn select_mprs(
    me: NodeId,
    symmetric: &[(NodeId, u8)],
    two_hop: impl Iterator<Item = (NodeId, NodeId)>,
) -> BTreeSet<NodeId> {
    // N1: symmetric neighbours that may be chosen, in id order.
    let n1: Vec<(NodeId, u8)> = symmetric.iter().copied().filter(|&(_, w)| w != WILL_NEVER).collect();
    // What each neighbour of N1 covers, as positions in N2 (in one flat
    // list, each neighbour's a slice of it): N2 is the 2-hop nodes reached
    // through N1, less this node and every symmetric neighbour (whatever
    // its willingness), numbered as first met. Both the tuples and N1 are
    // in neighbour order, so one walk finds each tuple's neighbour and
    // fills the neighbours' slices in turn; `ways[j]` counts the
    // neighbours that reach N2's `j`th node. (No sort: ordering ~1,100
    // tuples by 2-hop node was two thirds of a selection.)
    let mut is_symmetric = NodeSet::default();
    symmetric.iter().for_each(|&(n, _)| _ = is_symmetric.insert(n));
    let mut n2 = NodeIndex::default();
    let mut covers: Vec<u32> = Vec::new();
    let mut first = Vec::with_capacity(n1.len() + 1);
    first.push(0);
    let mut ways: Vec<u32> = Vec::new();
    let mut i = 0;
    let mut last = None;
    for (via, two) in two_hop {
        debug_assert!(last < Some((via, two)), "2-hop tuples in (neighbour, 2-hop) order");
        last = Some((via, two));
        while n1.get(i).is_some_and(|&(n, _)| n < via) {
            i += 1;
            first.push(covers.len());
        }
        match n1.get(i) {
            None => break,
            Some(&(n, _)) if n == via && two != me && !is_symmetric.contains(two) => {
                let j = n2.position(two, ways.len() as u32);
                if j as usize == ways.len() {
                    ways.push(0);
                }
                ways[j as usize] += 1;
                covers.push(j);
            }
            Some(_) => {}
        }
    }
    first.resize(n1.len() + 1, covers.len());
    // Who reaches each node of N2, the same way round.
    let mut reached_from = vec![0usize; ways.len() + 1];
    for j in 0..ways.len() {
        reached_from[j + 1] = reached_from[j] + ways[j] as usize;
    }
    let mut by = vec![0u32; covers.len()];
    let mut fill = reached_from.clone();
    for i in 0..n1.len() {
        for &j in &covers[first[i]..first[i + 1]] {
            by[fill[j as usize]] = i as u32;
            fill[j as usize] += 1;
        }
    }
    let covers_of = |i: usize| &covers[first[i]..first[i + 1]];
    let mut selection = Selection {
        uncovered: vec![true; ways.len()],
        left: ways.len(),
        reach: (0..n1.len()).map(|i| covers_of(i).len()).collect(),
        chosen: vec![false; n1.len()],
    };
    let choose = |i: usize, s: &mut Selection| {
        s.chosen[i] = true;
        for &j in covers_of(i) {
            if std::mem::replace(&mut s.uncovered[j as usize], false) {
                s.left -= 1;
                by[reached_from[j as usize]..reached_from[j as usize + 1]]
                    .iter()
                    .for_each(|&k| s.reach[k as usize] -= 1);
            }
        }
    };
    // Step 1: every WILL_ALWAYS neighbour.
    for (i, &(_, w)) in n1.iter().enumerate() {
        if w == WILL_ALWAYS {
            choose(i, &mut selection);
        }
    }
    // Step 3: neighbours that are the only way to some 2-hop node still
    // uncovered.
    let sole: Vec<usize> = (0..n1.len())
        .filter(|&i| covers_of(i).iter().any(|&j| selection.uncovered[j as usize] && ways[j as usize] == 1))
        .collect();
    for i in sole {
        choose(i, &mut selection);
    }
    // Step 4: highest willingness, then most still uncovered reached,
    // then highest degree; lowest id last for determinism.
    while selection.left > 0 {
        let best = (0..n1.len())
            .filter(|&i| !selection.chosen[i] && selection.reach[i] > 0)
            .map(|i| (n1[i].1, selection.reach[i], covers_of(i).len(), Reverse(n1[i].0), i))
            .max();
        let Some((.., i)) = best else { break };
        choose(i, &mut selection);
    }
    n1.iter().zip(selection.chosen).filter(|(_, c)| *c).map(|(&(n, _), _)| n).collect()
}

/// Step 4's state: which 2-hop nodes are still uncovered (and how many),
/// how many of them each neighbour reaches, and who is chosen.
struct Selection {
    uncovered: Vec<bool>,
    left: usize,
    reach: Vec<usize>,
    chosen: Vec<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The heuristic as RFC 3626 §8.3.1 words it, each step counted afresh:
    /// what [`select_mprs`] must equal.
    fn reference(me: NodeId, symmetric: &[(NodeId, u8)], two_hop: &[(NodeId, NodeId)]) -> BTreeSet<NodeId> {
        let n1: Vec<(NodeId, u8)> = symmetric.iter().copied().filter(|&(_, w)| w != WILL_NEVER).collect();
        let is_sym = |n: NodeId| symmetric.iter().any(|&(s, _)| s == n);
        let covers: Vec<BTreeSet<NodeId>> = n1
            .iter()
            .map(|&(v, _)| {
                two_hop.iter().filter(|&&(via, two)| via == v && two != me && !is_sym(two)).map(|t| t.1).collect()
            })
            .collect();
        let n2: BTreeSet<NodeId> = covers.iter().flatten().copied().collect();
        let mut uncovered = n2.clone();
        let mut chosen = vec![false; n1.len()];
        for i in 0..n1.len() {
            if n1[i].1 == WILL_ALWAYS {
                chosen[i] = true;
                covers[i].iter().for_each(|t| _ = uncovered.remove(t));
            }
        }
        let ways = |t: &NodeId| covers.iter().filter(|c| c.contains(t)).count();
        let sole: Vec<usize> =
            (0..n1.len()).filter(|&i| covers[i].iter().any(|t| uncovered.contains(t) && ways(t) == 1)).collect();
        for i in sole {
            chosen[i] = true;
            covers[i].iter().for_each(|t| _ = uncovered.remove(t));
        }
        while !uncovered.is_empty() {
            let best = (0..n1.len())
                .filter(|&i| !chosen[i])
                .map(|i| (n1[i].1, covers[i].intersection(&uncovered).count(), covers[i].len(), Reverse(n1[i].0), i))
                .filter(|k| k.1 > 0)
                .max();
            let Some((.., i)) = best else { break };
            chosen[i] = true;
            covers[i].iter().for_each(|t| _ = uncovered.remove(t));
        }
        n1.iter().zip(chosen).filter(|(_, c)| *c).map(|(&(n, _), _)| n).collect()
    }

    /// Node 0's neighbours 1–3, 2-hop nodes 4–6: 1 alone reaches 4, 2 and
    /// 3 both reach 5 and 6, 3 more willingly; 2 is symmetric too, so its
    /// tuple through 1 does not count.
    #[test]
    fn a_small_neighbourhood_takes_the_sole_way_then_the_most_willing() {
        let symmetric = [(1, 3), (2, 3), (3, 6)];
        let two_hop = [(1, 2), (1, 4), (2, 5), (2, 6), (3, 5), (3, 6)];
        assert_eq!(select_mprs(0, &symmetric, two_hop.into_iter()), BTreeSet::from([1, 3]));
        // With 3 never willing, 2 is the only way to 5 and 6.
        let symmetric = [(1, 3), (2, 3), (3, WILL_NEVER)];
        assert_eq!(select_mprs(0, &symmetric, two_hop.into_iter()), BTreeSet::from([1, 2]));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Any neighbourhood (ids small enough to collide often: tuples to
        /// this node, to symmetric neighbours and through neighbours that
        /// are not symmetric) selects what the heuristic step by step does.
        #[test]
        fn selection_equals_the_heuristic_counted_afresh(
            symmetric in proptest::collection::btree_map(1u32..24, 0u8..=7, 0..12),
            two_hop in proptest::collection::btree_set((0u32..24, 0u32..24), 0..80),
        ) {
            let symmetric: Vec<(NodeId, u8)> = symmetric.into_iter().collect();
            let two_hop: Vec<(NodeId, NodeId)> = two_hop.into_iter().filter(|&(v, t)| v != t).collect();
            prop_assert_eq!(select_mprs(0, &symmetric, two_hop.iter().copied()), reference(0, &symmetric, &two_hop));
        }
    }
}
