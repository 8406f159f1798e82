//! Static next-hop tables.

use crate::scenario::Routing;
use meshbed_radio::{Medium, NodeId, Payload};
use std::collections::VecDeque;

/// `next[node][dst]`: the neighbour `node` forwards to for `dst`.
#[derive(Clone, Debug)]
pub struct RouteTable {
    next: Vec<Vec<Option<NodeId>>>,
}

impl RouteTable {
    /// No routes between `nodes` nodes.
    pub fn empty(nodes: usize) -> RouteTable {
        RouteTable { next: vec![vec![None; nodes]; nodes] }
    }

    pub fn build<P: Payload>(routing: &Routing, medium: &Medium<P>) -> RouteTable {
        let n = medium.node_count();
        match routing {
            // With routing engines the table only tells the report how many
            // hops a flow had at time zero.
            Routing::ShortestPath | Routing::Dsr { .. } | Routing::Aodv { .. } | Routing::Olsr { .. } => {
                // A link is usable when each end decodes the other: data goes
                // one way and the MAC ACK the other.
                // Neighbour lists in index order, built once: the BFS below
                // then costs O(links) per destination instead of O(n²).
                let mut usable: Vec<Vec<usize>> = vec![Vec::new(); n];
                for (v, list) in usable.iter_mut().enumerate() {
                    for u in 0..n {
                        if u != v
                            && medium.can_decode(u as NodeId, v as NodeId)
                            && medium.can_decode(v as NodeId, u as NodeId)
                        {
                            list.push(u);
                        }
                    }
                }
                let mut next = vec![vec![None; n]; n];
                for dst in 0..n {
                    // BFS from the destination; visiting neighbours in index
                    // order makes the lowest-index next hop win ties.
                    let mut dist = vec![u32::MAX; n];
                    dist[dst] = 0;
                    let mut q = VecDeque::from([dst]);
                    while let Some(v) = q.pop_front() {
                        for &u in &usable[v] {
                            if dist[u] == u32::MAX {
                                dist[u] = dist[v] + 1;
                                next[u][dst] = Some(v as NodeId);
                                q.push_back(u);
                            }
                        }
                    }
                }
                RouteTable { next }
            }
            Routing::Static { paths } => {
                let mut next = vec![vec![None; n]; n];
                for path in paths {
                    for (i, &a) in path.iter().enumerate() {
                        for (j, &b) in path.iter().enumerate() {
                            if i < j {
                                next[a as usize][b as usize] = Some(path[i + 1]);
                            } else if i > j {
                                next[a as usize][b as usize] = Some(path[i - 1]);
                            }
                        }
                    }
                }
                RouteTable { next }
            }
        }
    }

    pub fn next_hop(&self, node: NodeId, dst: NodeId) -> Option<NodeId> {
        self.next[node as usize][dst as usize]
    }

    /// The hop count from `src` to `dst`, if a loop-free route exists.
    pub fn hop_count(&self, src: NodeId, dst: NodeId) -> Option<u32> {
        let mut at = src;
        let mut hops = 0;
        while at != dst {
            at = self.next_hop(at, dst)?;
            hops += 1;
            if hops as usize > self.next.len() {
                return None;
            }
        }
        Some(hops)
    }
}
