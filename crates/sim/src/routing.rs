//! Static next-hop tables.

use crate::scenario::Routing;
use meshbed_radio::{Medium, NodeId, Payload};
use std::cell::RefCell;
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
    /// search from it, started the first time anyone asks for that
    /// destination and carried only as far as the node asked about: a run
    /// asks for its flows' ends and the nodes on their paths, which the
    /// search reaches first (issue 28).
    Shortest { usable: Vec<Vec<usize>>, towards: Vec<RefCell<Option<Towards>>> },
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
                RouteTable { nodes: n, kind: Kind::Shortest { usable, towards: vec![RefCell::new(None); n] } }
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
                let mut search = towards[dst as usize].borrow_mut();
                search.get_or_insert_with(|| Towards::new(usable.len(), dst as usize)).next_hop(usable, node as usize)
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

/// A breadth-first search from one destination over `usable` links,
/// carried on as far as a question needs: a node's next hop is the node it
/// was found from, final once found. The search runs in the same order
/// however often it stops (a node's links whole, in index order, so the
/// lowest-index next hop wins ties), so every answer is the one a whole
/// search gives (tested against it).
#[derive(Clone, Debug)]
struct Towards {
    /// Every node's next hop once found ([`NOT_FOUND`] before; the
    /// destination's is itself).
    next: Vec<NodeId>,
    /// Found, their links not yet followed.
    queue: VecDeque<NodeId>,
}

/// A node the search has not found yet.
const NOT_FOUND: NodeId = NodeId::MAX;

impl Towards {
    fn new(n: usize, dst: usize) -> Towards {
        let mut next = vec![NOT_FOUND; n];
        next[dst] = dst as NodeId;
        Towards { next, queue: VecDeque::from([dst as NodeId]) }
    }

    fn next_hop(&mut self, usable: &[Vec<usize>], node: usize) -> Option<NodeId> {
        while self.next[node] == NOT_FOUND {
            let v = self.queue.pop_front()?;
            for &u in &usable[v as usize] {
                if self.next[u] == NOT_FOUND {
                    self.next[u] = v;
                    self.queue.push_back(u as NodeId);
                }
            }
        }
        Some(self.next[node]).filter(|&hop| hop as usize != node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_core::{stream_rng, StreamId, StreamKind};
    use rand::Rng;

    /// The whole search at once: every node's next hop towards `dst`.
    fn whole_search(usable: &[Vec<usize>], dst: usize) -> Vec<Option<NodeId>> {
        let mut next = vec![None; usable.len()];
        let mut found = vec![false; usable.len()];
        found[dst] = true;
        let mut q = VecDeque::from([dst]);
        while let Some(v) = q.pop_front() {
            for &u in &usable[v] {
                if !found[u] {
                    found[u] = true;
                    next[u] = Some(v as NodeId);
                    q.push_back(u);
                }
            }
        }
        next
    }

    /// Questions in any order, about any node (unreachable ones too), get
    /// the whole search's answers, on random graphs with many equal-length
    /// paths (ties) and several components.
    #[test]
    fn a_search_stopped_and_carried_on_answers_as_the_whole_search() {
        let mut rng = stream_rng(5, StreamId::new(StreamKind::Transport, 0));
        for _ in 0..300 {
            let n = rng.gen_range(1..60);
            let p = rng.gen_range(0.0..0.2);
            let mut usable = vec![Vec::new(); n];
            for a in 0..n {
                for b in a + 1..n {
                    if rng.gen_bool(p) {
                        usable[a].push(b);
                        usable[b].push(a);
                    }
                }
            }
            let dst = rng.gen_range(0..n);
            let want = whole_search(&usable, dst);
            let mut search = Towards::new(n, dst);
            for _ in 0..2 * n {
                let node = rng.gen_range(0..n);
                assert_eq!(search.next_hop(&usable, node), want[node], "node {node} towards {dst}");
            }
        }
    }
}
