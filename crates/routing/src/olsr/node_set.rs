//! A set of node ids asked about once per link ([`NodeSet`]: a bit per id
//! below [`DENSE_IDS`], an ordered set beyond), numbers given to node ids
//! as they are met ([`NodeIndex`]) and a map from node ids ([`NodeMap`]):
//! a slot per id below it, an ordered map beyond.
//!
//! Ids number a network's nodes from 0 (in the simulator and, through the
//! address list, on real hosts), so every member of any network of fewer
//! than 65,536 nodes is one bit; a TC can still carry any id (a hostile
//! peer's), so larger ones are kept in a [`BTreeSet`], and the bits never
//! take more than 8 KiB (an index's slots 256 KiB, a routing table's
//! 1.5 MiB). (Issue 28: finding the nodes routed through a lost
//! link, and asking of every link whether it ends at one of them, by sorts
//! and binary searches was a twentieth of the ATP paper's OLSR run.)

use crate::NodeId;
use std::collections::{BTreeMap, BTreeSet};

/// Ids below this are one bit each.
pub(super) const DENSE_IDS: NodeId = 1 << 16;

#[derive(Clone, Debug, Default)]
pub(super) struct NodeSet {
    /// Bit `n % 64` of word `n / 64`: id `n` (below `DENSE_IDS`).
    bits: Vec<u64>,
    /// The members from `DENSE_IDS` on.
    large: BTreeSet<NodeId>,
}

impl NodeSet {
    /// Adds `n`; `false` if it was there.
    pub fn insert(&mut self, n: NodeId) -> bool {
        if n < DENSE_IDS {
            let (word, bit) = ((n / 64) as usize, 1u64 << (n % 64));
            if word >= self.bits.len() {
                self.bits.resize(word + 1, 0);
            }
            let added = self.bits[word] & bit == 0;
            self.bits[word] |= bit;
            added
        } else {
            self.large.insert(n)
        }
    }

    #[inline]
    pub fn contains(&self, n: NodeId) -> bool {
        if n < DENSE_IDS {
            self.bits.get((n / 64) as usize).is_some_and(|w| w & (1 << (n % 64)) != 0)
        } else {
            self.large.contains(&n)
        }
    }

    /// The members in id order.
    pub fn iter(&self) -> impl Iterator<Item = NodeId> + '_ {
        let dense = self.bits.iter().enumerate().flat_map(|(w, &word)| {
            let mut word = word;
            std::iter::from_fn(move || {
                (word != 0).then(|| {
                    let bit = word.trailing_zeros();
                    word &= word - 1;
                    w as NodeId * 64 + bit
                })
            })
        });
        dense.chain(self.large.iter().copied())
    }
}

/// Numbers for node ids, given in the order they are asked for.
#[derive(Clone, Debug, Default)]
pub(super) struct NodeIndex {
    /// Slot `n`: id `n`'s number plus one (0: none yet), below `DENSE_IDS`.
    dense: Vec<u32>,
    large: BTreeMap<NodeId, u32>,
}

impl NodeIndex {
    /// `n`'s number: the one it was given, or else `next` (given it now).
    pub fn position(&mut self, n: NodeId, next: u32) -> u32 {
        if n < DENSE_IDS {
            if n as usize >= self.dense.len() {
                self.dense.resize(n as usize + 1, 0);
            }
            let slot = &mut self.dense[n as usize];
            if *slot == 0 {
                *slot = next + 1;
            }
            *slot - 1
        } else {
            *self.large.entry(n).or_insert(next)
        }
    }
}

/// A map from node ids, in id order: a slot per id below [`DENSE_IDS`],
/// an ordered map beyond. The routing table reads a route or two for every
/// link it follows; a sorted list's binary search for each was a fifth of
/// following a change (issue 28).
#[derive(Clone, Debug)]
pub(super) struct NodeMap<V> {
    dense: Vec<Option<V>>,
    large: BTreeMap<NodeId, V>,
}

impl<V> Default for NodeMap<V> {
    fn default() -> Self {
        NodeMap { dense: Vec::new(), large: BTreeMap::new() }
    }
}

impl<V> NodeMap<V> {
    #[inline]
    pub fn get(&self, n: NodeId) -> Option<&V> {
        if n < DENSE_IDS {
            self.dense.get(n as usize)?.as_ref()
        } else {
            self.large.get(&n)
        }
    }

    pub fn contains_key(&self, n: NodeId) -> bool {
        self.get(n).is_some()
    }

    /// Puts `v` at `n`, returning what was there.
    pub fn insert(&mut self, n: NodeId, v: V) -> Option<V> {
        if n < DENSE_IDS {
            if n as usize >= self.dense.len() {
                self.dense.resize_with(n as usize + 1, || None);
            }
            self.dense[n as usize].replace(v)
        } else {
            self.large.insert(n, v)
        }
    }

    pub fn remove(&mut self, n: NodeId) -> Option<V> {
        if n < DENSE_IDS {
            self.dense.get_mut(n as usize)?.take()
        } else {
            self.large.remove(&n)
        }
    }

    /// Every entry, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (NodeId, &V)> + '_ {
        let dense = self.dense.iter().enumerate().filter_map(|(n, v)| Some((n as NodeId, v.as_ref()?)));
        dense.chain(self.large.iter().map(|(&n, v)| (n, v)))
    }
}

impl<V> FromIterator<(NodeId, V)> for NodeMap<V> {
    fn from_iter<I: IntoIterator<Item = (NodeId, V)>>(entries: I) -> Self {
        let mut map = NodeMap::default();
        for (n, v) in entries {
            map.insert(n, v);
        }
        map
    }
}

/// The same entries (however many empty slots either keeps).
impl<V: PartialEq> PartialEq for NodeMap<V> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Ids on both sides of the dense range (and at its edges) are
        /// members exactly when inserted, listed in order once each.
        #[test]
        fn a_node_set_is_a_set(
            ids in proptest::collection::vec(
                prop_oneof![0u32..200, (DENSE_IDS - 70)..(DENSE_IDS + 70), Just(NodeId::MAX)], 0..60),
            asks in proptest::collection::vec(
                prop_oneof![0u32..200, (DENSE_IDS - 70)..(DENSE_IDS + 70), Just(NodeId::MAX)], 0..60),
        ) {
            let mut set = NodeSet::default();
            let mut reference = BTreeSet::new();
            for &n in &ids {
                prop_assert_eq!(set.insert(n), reference.insert(n));
            }
            for n in asks.iter().chain(&ids) {
                prop_assert_eq!(set.contains(*n), reference.contains(n));
            }
            prop_assert_eq!(set.iter().collect::<Vec<_>>(), reference.iter().copied().collect::<Vec<_>>());
            prop_assert!(set.bits.len() <= (DENSE_IDS / 64) as usize);
        }

        /// Each id keeps the number it was first given; a new id takes
        /// the number offered.
        #[test]
        fn a_node_index_numbers_ids_as_met(
            ids in proptest::collection::vec(
                prop_oneof![0u32..200, (DENSE_IDS - 70)..(DENSE_IDS + 70), Just(NodeId::MAX)], 0..60),
        ) {
            let mut index = NodeIndex::default();
            let mut reference: BTreeMap<NodeId, u32> = BTreeMap::new();
            for &n in &ids {
                let next = reference.len() as u32;
                let expected = *reference.entry(n).or_insert(next);
                prop_assert_eq!(index.position(n, next), expected);
            }
            prop_assert!(index.dense.len() <= DENSE_IDS as usize);
        }

        /// Inserts and removals on both sides of the dense range read back
        /// as an ordered map's, in order, and maps with the same entries
        /// are equal whatever slots they grew.
        #[test]
        fn a_node_map_is_an_ordered_map(
            ops in proptest::collection::vec(
                (any::<bool>(), prop_oneof![0u32..200, (DENSE_IDS - 70)..(DENSE_IDS + 70), Just(NodeId::MAX)], any::<u8>()),
                0..80),
        ) {
            let mut map = NodeMap::default();
            let mut reference = BTreeMap::new();
            for &(insert, n, v) in &ops {
                if insert {
                    prop_assert_eq!(map.insert(n, v), reference.insert(n, v));
                } else {
                    prop_assert_eq!(map.remove(n), reference.remove(&n));
                }
                prop_assert_eq!(map.get(n), reference.get(&n));
                prop_assert_eq!(map.contains_key(n), reference.contains_key(&n));
            }
            let listed: Vec<(NodeId, u8)> = map.iter().map(|(n, &v)| (n, v)).collect();
            prop_assert_eq!(&listed, &reference.iter().map(|(&n, &v)| (n, v)).collect::<Vec<_>>());
            let rebuilt: NodeMap<u8> = listed.iter().copied().collect();
            prop_assert!(rebuilt == map);
            prop_assert!(map.dense.len() <= DENSE_IDS as usize);
        }

    }
}
