//! DSR's route cache, a path cache (RFC 4728 §4.1): whole paths from this
//! node, learnt from RREQs, RREPs and the source routes of packets it
//! forwards, each with when it was last used. A path unused for the cache
//! timeout is forgotten; a full cache forgets its least recently used path;
//! a broken link truncates every path that crosses it.

use super::packet::MAX_ROUTE_LEN;
use crate::NodeId;
use meshbed_core::{Duration, Instant};

/// A path in the route cache, starting at this node.
#[derive(Clone, Debug)]
struct CachedPath {
    path: Vec<NodeId>,
    last_used: Instant,
}

/// The paths cached, in the order they were learnt.
#[derive(Clone, Debug)]
pub(super) struct RouteCache {
    node: NodeId,
    timeout: Duration,
    capacity: usize,
    paths: Vec<CachedPath>,
}

impl RouteCache {
    /// The cache of `node`: paths live `timeout` past their last use, at
    /// most `capacity` of them.
    pub(super) fn new(node: NodeId, timeout: Duration, capacity: usize) -> Self {
        RouteCache { node, timeout, capacity, paths: Vec::new() }
    }

    /// The shortest cached path from this node to `dst` (this node first,
    /// `dst` last), or `None`.
    pub(super) fn route(&self, now: Instant, dst: NodeId) -> Option<Vec<NodeId>> {
        self.paths
            .iter()
            .filter(|c| now.saturating_since(c.last_used) < self.timeout)
            .filter_map(|c| c.path.iter().position(|&n| n == dst).map(|i| c.path[..=i].to_vec()))
            .filter(|p| p.len() >= 2)
            .min_by_key(|p| p.len())
    }

    /// Marks every path that begins with `route` as used now.
    pub(super) fn touch(&mut self, now: Instant, route: &[NodeId]) {
        for c in &mut self.paths {
            if c.path.starts_with(route) {
                c.last_used = now;
            }
        }
    }

    /// Adds a path starting at this node (RFC 4728 §4.1 path cache), unless
    /// it repeats a node or is covered by a cached path already (which then
    /// counts as used); says whether it added it.
    pub(super) fn learn(&mut self, now: Instant, path: Vec<NodeId>) -> bool {
        if path.len() < 2 || path.len() > MAX_ROUTE_LEN || path[0] != self.node || has_duplicates(&path) {
            return false;
        }
        if let Some(c) = self.paths.iter_mut().find(|c| c.path.starts_with(&path)) {
            c.last_used = now;
            return false;
        }
        // A longer path supersedes cached prefixes of itself.
        self.paths.retain(|c| !path.starts_with(&c.path));
        let timeout = self.timeout;
        self.paths.retain(|c| now.saturating_since(c.last_used) < timeout);
        if self.paths.len() >= self.capacity {
            if let Some(i) = (0..self.paths.len()).min_by_key(|&i| self.paths[i].last_used) {
                self.paths.remove(i);
            }
        }
        self.paths.push(CachedPath { path, last_used: now });
        true
    }

    /// Truncates every cached path at the link `a` – `b` (either direction,
    /// RFC 4728 §8.3.5).
    pub(super) fn remove_link(&mut self, a: NodeId, b: NodeId) {
        for c in &mut self.paths {
            if let Some(i) = c.path.windows(2).position(|w| (w[0] == a && w[1] == b) || (w[0] == b && w[1] == a)) {
                c.path.truncate(i + 1);
            }
        }
        self.paths.retain(|c| c.path.len() >= 2);
    }
}

/// Whether `path` visits a node twice (a loop).
pub(super) fn has_duplicates(path: &[NodeId]) -> bool {
    path.iter().enumerate().any(|(i, n)| path[..i].contains(n))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{chain, released_path, total_control};
    use crate::harness::Fate;
    use crate::RoutingEngine;
    use meshbed_core::Duration;

    #[test]
    fn second_packet_goes_without_a_new_discovery() {
        let mut net = chain(6);
        let first = net.send(0, 5);
        net.run_for(Duration::from_secs(1));
        assert!(matches!(net.fate(first), Fate::Delivered { hops: 5, .. }));
        let (control, discoveries) = (total_control(&net), net.engines[0].stats().route_discoveries);
        assert!(discoveries >= 1 && control > 0);
        let second = net.send(0, 5);
        assert_eq!(net.fate(second), &Fate::InFlight, "forwarded at once, not held");
        net.run_for(Duration::from_secs(1));
        assert!(matches!(net.fate(second), Fate::Delivered { hops: 5, .. }));
        assert_eq!(total_control(&net), control);
        assert_eq!(net.engines[0].stats().route_discoveries, discoveries);
    }

    #[test]
    fn intermediate_node_replies_from_its_cache() {
        // 0 – 1 – 2 – 3 – 4 – 5: a discovery 0 → 4 teaches 4 the way back to 0.
        let mut net = chain(6);
        let first = net.send(0, 4);
        net.run_for(Duration::from_secs(1));
        assert!(matches!(net.fate(first), Fate::Delivered { hops: 4, .. }));
        let before: Vec<u64> = net.control_sent.clone();
        let id = net.send(5, 0);
        net.run_for(Duration::from_secs(1));
        assert!(matches!(net.fate(id), Fate::Delivered { hops: 5, .. }), "{:?}", net.fate(id));
        assert_eq!(released_path(&net, 5, id), vec![5, 4, 3, 2, 1, 0]);
        // The ring-0 request was answered by 4 from its cache: no
        // propagating request, and nodes 0–3 sent no control packet.
        assert_eq!(net.engines[5].stats().route_discoveries, 1);
        assert_eq!(&net.control_sent[..4], &before[..4]);
        assert_eq!(net.control_sent[4], before[4] + 1, "one RREP");
    }
}
