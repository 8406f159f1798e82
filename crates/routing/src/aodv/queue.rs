//! What AODV keeps while it looks for routes: the discoveries in progress
//! with their TTL and retries (RFC 3561 §6.3, §6.4 expanding ring search),
//! and the RREQs seen, so that each is processed once (RFC 3561 §6.5). The
//! data packets held meanwhile (ns-2 `aodv_rqueue`) are
//! [`crate::common::HeldPackets`], as DSR's send buffer is.

use super::AodvConfig;
use crate::NodeId;
use meshbed_core::Instant;
use std::collections::BTreeMap;

/// A route discovery in progress for one destination.
#[derive(Clone, Debug)]
pub(super) struct Discovery {
    pub(super) ttl: u8,
    /// RREQs sent with TTL = NET_DIAMETER so far beyond the first (RFC 3561 §6.3).
    retries: u32,
    pub(super) deadline: Instant,
}

impl Discovery {
    /// The first RREQ's TTL and wait: TTL_START and its ring traversal
    /// time with expanding ring search, else NET_DIAMETER and the fixed
    /// retry wait.
    pub(super) fn first(now: Instant, c: &AodvConfig) -> Discovery {
        let (ttl, wait) = if c.expanding_ring_search {
            let ttl = c.ttl_start;
            (ttl, c.ring_traversal_time(ttl))
        } else {
            (c.net_diameter, c.rreq_retry_wait)
        };
        Discovery { ttl, retries: 0, deadline: now + wait }
    }

    /// The wait ran out without a route: widen the ring or repeat (true,
    /// with the next TTL and deadline set), or give up (false) (RFC 3561
    /// §6.3, §6.4).
    pub(super) fn next_attempt(&mut self, now: Instant, c: &AodvConfig) -> bool {
        if c.expanding_ring_search && self.ttl < c.net_diameter {
            let next = self.ttl.saturating_add(c.ttl_increment);
            self.ttl = if next > c.ttl_threshold { c.net_diameter } else { next };
            self.deadline = now + c.ring_traversal_time(self.ttl);
        } else if self.retries < c.rreq_retries {
            self.retries += 1;
            self.deadline =
                now + if c.expanding_ring_search { c.ring_traversal_time(self.ttl) } else { c.rreq_retry_wait };
        } else {
            return false;
        }
        true
    }
}

/// The RREQs seen, by (originator, RREQ ID), until when they count as
/// seen: PATH_DISCOVERY_TIME after they were (RFC 3561 §6.5).
#[derive(Clone, Debug, Default)]
pub(super) struct RreqCache {
    seen: BTreeMap<(NodeId, u32), Instant>,
}

impl RreqCache {
    /// Whether the RREQ `key` was seen and still counts at `now`.
    pub(super) fn contains(&self, key: (NodeId, u32), now: Instant) -> bool {
        self.seen.get(&key).is_some_and(|&until| until > now)
    }

    pub(super) fn insert(&mut self, key: (NodeId, u32), until: Instant) {
        self.seen.insert(key, until);
    }

    /// Forgets the RREQs that no longer count at `now`.
    pub(super) fn purge(&mut self, now: Instant) {
        self.seen.retain(|_, &mut until| until > now);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{engine, events_at, net};
    use super::*;
    use crate::harness::{Fate, Net};
    use crate::{DropReason, RouteEvent, RoutingEngine};
    use meshbed_core::Duration;

    #[test]
    fn unreachable_destination_is_retried_then_held_packet_dropped() {
        let config = AodvConfig::default();
        let wait = config.rreq_retry_wait;
        // Node 3 has no links.
        let mut net = net(4, &[(0, 1), (1, 2)], config);
        let t0 = net.now();
        let id = net.send(0, 3);
        net.run_for(Duration::from_secs(2));
        assert_eq!(net.fate(id), &Fate::Dropped(DropReason::NoRoute));
        // 1 + RREQ_RETRIES attempts, each relayed once by 1 and 2.
        for node in 0..3 {
            assert_eq!(net.engines[node].counters().rreq_sent, 3, "node {node}");
        }
        let dropped: Vec<Instant> = events_at(&net, 0)
            .into_iter()
            .filter(|(_, e)| *e == RouteEvent::DropHeld { id, reason: DropReason::NoRoute })
            .map(|(t, _)| t)
            .collect();
        assert_eq!(dropped, vec![t0 + wait * 3]);
        assert_eq!(net.engines[0].stats().route_discoveries, 1);
    }

    #[test]
    fn discovery_buffer_overflow_drops_the_oldest_and_timeout_drops_the_rest() {
        let config = AodvConfig {
            discovery_buffer_packets: 2,
            discovery_buffer_timeout: Duration::from_millis(100),
            ..AodvConfig::default()
        };
        let max_hold = config.discovery_buffer_timeout;
        let mut net = net(3, &[(0, 1)], config);
        let ids: Vec<u64> = (0..3).map(|_| net.send(0, 2)).collect();
        assert_eq!(net.fate(ids[0]), &Fate::Dropped(DropReason::BufferOverflow));
        assert_eq!(net.fate(ids[1]), &Fate::Held);
        assert_eq!(net.fate(ids[2]), &Fate::Held);
        net.run_for(max_hold - Duration::from_nanos(1));
        assert_eq!(net.fate(ids[2]), &Fate::Held, "just inside the buffer timeout");
        net.run_for(Duration::from_nanos(1));
        for &id in &ids[1..] {
            assert_eq!(net.fate(id), &Fate::Dropped(DropReason::DiscoveryTimeout));
        }
        // With nothing left to deliver, the discovery stops: no retry.
        net.run_for(Duration::from_secs(1));
        assert_eq!(net.engines[0].counters().rreq_sent, 1);
    }

    #[test]
    fn each_node_relays_a_rreq_once_on_a_grid() {
        // A 4 × 4 grid and an unreachable node 16.
        let mut links = Vec::new();
        for r in 0..4 {
            for c in 0..4 {
                let n = r * 4 + c;
                if c < 3 {
                    links.push((n, n + 1));
                }
                if r < 3 {
                    links.push((n, n + 4));
                }
            }
        }
        // A NET_DIAMETER just above the grid's (6) bounds the flood should
        // the duplicate cache fail.
        let config = AodvConfig { net_diameter: 8, ..AodvConfig::default() };
        let before_retry = config.rreq_retry_wait - Duration::from_millis(1);
        let mut net = net(17, &links, config);
        net.send(0, 16);
        net.run_for(before_retry);
        for node in 0..16 {
            assert_eq!(net.engines[node].counters().rreq_sent, 1, "node {node}");
        }
    }

    #[test]
    fn expanding_ring_search_widens_the_ttl_until_a_node_answers() {
        for (ers, rreqs) in [(false, 1), (true, 3)] {
            let config = AodvConfig { expanding_ring_search: ers, ..AodvConfig::default() };
            let mut net = Net::chain(6, |node| engine(node, &config));
            // After HELLOs, node 4 knows its neighbour 5 and answers for it.
            net.run_for(Duration::from_secs(2));
            let id = net.send(0, 5);
            net.run_for(Duration::from_secs(1));
            assert!(matches!(net.fate(id), Fate::Delivered { hops: 5, .. }), "{:?}", net.fate(id));
            // TTL 1, 3 (TTL_START, + TTL_INCREMENT) do not reach node 4; TTL 5 does.
            assert_eq!(net.engines[0].counters().rreq_sent, rreqs, "expanding ring search {ers}");
            assert_eq!(net.engines[4].counters().rrep_sent, 1, "node 4 answered for 5");
        }
    }
}
