//! Static next-hop tables.

use crate::scenario::Routing;
use meshbed_radio::{Medium, NodeId, Payload};
use std::cell::OnceCell;
use std::collections::VecDeque;

/// Next hops: `next_hop(node, dst)` is the neighbour `node` forwards to
/// for `dst`.
#[derive(Clone, Debug)]
pub struct RouteTable {
    nodes: usize,
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    /// Shortest paths over `usable` links (each node's, in index order).
    /// The next hops towards a destination come from one breadth-first
    /// search, run the first time anyone asks for that destination: a run
    /// asks for its flows' ends, so memory and set-up grow with the links
    /// and the flows, not with the square of the nodes (issue 28).
    Shortest { usable: Vec<Vec<usize>>, towards: Vec<OnceCell<Vec<Option<NodeId>>>> },
    /// `next[node][dst]`, whole (explicit paths, or none).
    Explicit { next: Vec<Vec<Option<NodeId>>> },
}

impl RouteTable {
    /// No routes between `nodes` nodes.
    pub fn empty(nodes: usize) -> RouteTable {
        RouteTable { nodes, kind: Kind::Explicit { next: vec![vec![None; nodes]; nodes] } }
    }

    pub fn build<P: Payload>(routing: &Routing, medium: &Medium<P>) -> RouteTable {
        let n = medium.node_count();
        match routing {
            // With routing engines the table only tells the report how many
            // hops a flow had at time zero.
            Routing::ShortestPath | Routing::Dsr { .. } | Routing::Aodv { .. } | Routing::Olsr { .. } => {
                // A link is usable when each end decodes the other: data goes
                // one way and the MAC ACK the other. Neighbour lists in index
                // order, from the radio's candidates (not every pair).
                let links = medium.links();
                let decodable: Vec<Vec<NodeId>> = (0..n as NodeId).map(|v| links.decodable_from(v)).collect();
                let usable: Vec<Vec<usize>> = (0..n)
                    .map(|v| {
                        let back = |u: &&NodeId| decodable[**u as usize].binary_search(&(v as NodeId)).is_ok();
                        decodable[v].iter().filter(back).map(|&u| u as usize).collect()
                    })
                    .collect();
                RouteTable { nodes: n, kind: Kind::Shortest { usable, towards: vec![OnceCell::new(); n] } }
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
                RouteTable { nodes: n, kind: Kind::Explicit { next } }
            }
        }
    }

    pub fn next_hop(&self, node: NodeId, dst: NodeId) -> Option<NodeId> {
        match &self.kind {
            Kind::Explicit { next } => next[node as usize][dst as usize],
            Kind::Shortest { usable, towards } => {
                towards[dst as usize].get_or_init(|| shortest_towards(usable, dst as usize))[node as usize]
            }
        }
    }

    /// The hop count from `src` to `dst`, if a loop-free route exists.
    pub fn hop_count(&self, src: NodeId, dst: NodeId) -> Option<u32> {
        let mut at = src;
        let mut hops = 0;
        while at != dst {
            at = self.next_hop(at, dst)?;
            hops += 1;
            if hops as usize > self.nodes {
                return None;
            }
        }
        Some(hops)
    }
}

/// Every node's next hop towards `dst` over `usable` links: a breadth-first
/// search from the destination; visiting neighbours in index order makes
/// the lowest-index next hop win ties.
fn shortest_towards(usable: &[Vec<usize>], dst: usize) -> Vec<Option<NodeId>> {
    let n = usable.len();
    let mut next = vec![None; n];
    let mut dist = vec![u32::MAX; n];
    dist[dst] = 0;
    let mut q = VecDeque::from([dst]);
    while let Some(v) = q.pop_front() {
        for &u in &usable[v] {
            if dist[u] == u32::MAX {
                dist[u] = dist[v] + 1;
                next[u] = Some(v as NodeId);
                q.push_back(u);
            }
        }
    }
    next
}
