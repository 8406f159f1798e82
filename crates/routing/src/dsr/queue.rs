//! What DSR keeps while it discovers routes (RFC 4728 §8.2): the
//! discoveries in progress with their exponential backoff (§8.2.1) and the
//! request table that suppresses duplicate requests (§4.3, §8.2.2). The
//! send buffer of data packets waiting for a route (§4.2; ns-2's: at most
//! so many, for at most SendBufferTimeout, the oldest dropped first) is
//! [`crate::common::HeldPackets`], as AODV's discovery buffer is.

use super::DsrConfig;
use crate::NodeId;
use meshbed_core::{Duration, Instant};
use std::collections::{BTreeMap, VecDeque};

/// An ongoing Route Discovery for one target (RFC 4728 §8.2.1).
#[derive(Clone, Debug)]
pub(super) struct Discovery {
    /// Propagating requests sent so far.
    rexmt: u32,
    period: Duration,
    pub(super) next_at: Instant,
}

impl Discovery {
    /// A discovery whose first request goes now, and that request's hop
    /// limit: a non-propagating one (hop limit 0) first if configured, as
    /// ns-2 does, else a propagating one.
    pub(super) fn first(now: Instant, cfg: &DsrConfig) -> (Discovery, u8) {
        if cfg.nonprop_request_first {
            let d = Discovery { rexmt: 0, period: cfg.request_period, next_at: now + cfg.nonprop_request_timeout };
            (d, 0)
        } else {
            let d = Discovery { rexmt: 1, period: backoff(cfg.request_period, cfg), next_at: now + cfg.request_period };
            (d, cfg.discovery_hop_limit)
        }
    }

    /// MaxRequestRexmt propagating requests went unanswered: give up.
    pub(super) fn exhausted(&self, cfg: &DsrConfig) -> bool {
        self.rexmt >= cfg.max_request_rexmt
    }

    /// Another propagating request goes now; the next one after the
    /// current period, which grows.
    pub(super) fn next_request(&mut self, now: Instant, cfg: &DsrConfig) {
        self.rexmt += 1;
        self.next_at = now + self.period;
        self.period = backoff(self.period, cfg);
    }
}

/// RFC 4728 §8.2.1: exponential backoff up to MaxRequestPeriod.
fn backoff(period: Duration, cfg: &DsrConfig) -> Duration {
    let next = period.as_nanos().saturating_mul(cfg.request_backoff_factor);
    Duration::from_nanos(next).min(cfg.max_request_period)
}

/// The request table's duplicate suppression (RFC 4728 §4.3, §8.2.2): per
/// initiator, the (id, target) pairs seen, newest last, and when the entry
/// was last used, for LRU eviction.
#[derive(Clone, Debug, Default)]
pub(super) struct RequestTable {
    initiators: BTreeMap<NodeId, (Instant, VecDeque<(u16, NodeId)>)>,
}

impl RequestTable {
    /// Whether (initiator, id, target) was seen; records it if not. At most
    /// `cfg.request_table_size` initiators (the least recently used one
    /// goes) and `cfg.request_table_ids` ids each (the oldest goes).
    pub(super) fn seen(&mut self, now: Instant, initiator: NodeId, id: u16, target: NodeId, cfg: &DsrConfig) -> bool {
        if !self.initiators.contains_key(&initiator) && self.initiators.len() >= cfg.request_table_size {
            if let Some((&lru, _)) = self.initiators.iter().min_by_key(|(_, (t, _))| *t) {
                self.initiators.remove(&lru);
            }
        }
        let (used, seen) = self.initiators.entry(initiator).or_insert_with(|| (now, VecDeque::new()));
        *used = now;
        if seen.contains(&(id, target)) {
            return true;
        }
        if seen.len() >= cfg.request_table_ids {
            seen.pop_front();
        }
        seen.push_back((id, target));
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{chain, net};
    use super::super::{DsrConfig, SEND_BUFFER_TIMEOUT};
    use crate::harness::Fate;
    use crate::{DropReason, RoutingEngine};
    use meshbed_core::{Duration, Instant};

    #[test]
    fn a_neighbour_is_found_by_the_non_propagating_request_alone() {
        let mut net = chain(3);
        let id = net.send(0, 1);
        net.run_for(Duration::from_secs(1));
        assert!(matches!(net.fate(id), Fate::Delivered { hops: 1, .. }));
        assert_eq!(net.engines[0].stats().route_discoveries, 1);
        // Node 1 did not propagate the ring-0 request.
        assert!(net.engines[1].stats().control_packets_sent <= 1, "only its RREP");
    }

    #[test]
    fn unreachable_destination_is_dropped_after_the_send_buffer_timeout() {
        let mut net = net(4, &[(0, 1), (1, 2)], DsrConfig::default());
        let id = net.send(0, 3);
        net.run_until(Instant::ZERO + SEND_BUFFER_TIMEOUT - Duration::from_millis(1));
        assert_eq!(net.fate(id), &Fate::Held);
        // Ring 0 at 0 s, then propagating requests at 0.03, 0.53, 1.53,
        // 3.53, 7.53, 15.53 and 25.53 s (doubling from 500 ms, cap 10 s).
        assert_eq!(net.engines[0].stats().route_discoveries, 8);
        net.run_until(Instant::ZERO + SEND_BUFFER_TIMEOUT);
        assert_eq!(net.fate(id), &Fate::Dropped(DropReason::DiscoveryTimeout));

        // ns-2's factor 4: 0, 0.03, 0.53, 2.53, 10.53 and 20.53 s.
        let cfg = DsrConfig { request_backoff_factor: 4, ..DsrConfig::default() };
        let mut four = self::net(4, &[(0, 1), (1, 2)], cfg);
        let id = four.send(0, 3);
        four.run_until(Instant::ZERO + SEND_BUFFER_TIMEOUT - Duration::from_millis(1));
        assert_eq!(four.fate(id), &Fate::Held);
        assert_eq!(four.engines[0].stats().route_discoveries, 6);
    }

    #[test]
    fn discovery_gives_up_after_max_request_rexmt() {
        let cfg = DsrConfig { max_request_rexmt: 2, ..DsrConfig::default() };
        let mut net = net(3, &[(0, 1)], cfg);
        let id = net.send(0, 2);
        net.run_until(Instant::from_nanos(1_529_000_000));
        assert_eq!(net.fate(id), &Fate::Held);
        net.run_until(Instant::from_nanos(1_530_000_000));
        assert_eq!(net.fate(id), &Fate::Dropped(DropReason::NoRoute));
        assert_eq!(net.engines[0].stats().route_discoveries, 3);
    }

    #[test]
    fn a_full_send_buffer_drops_its_oldest_packet() {
        let cfg = DsrConfig { send_buffer_size: 2, ..DsrConfig::default() };
        let mut net = net(3, &[(0, 1)], cfg);
        let ids: Vec<u64> = (0..3).map(|_| net.send(0, 2)).collect();
        assert_eq!(net.fate(ids[0]), &Fate::Dropped(DropReason::BufferOverflow));
        assert_eq!(net.fate(ids[1]), &Fate::Held);
        assert_eq!(net.fate(ids[2]), &Fate::Held);
    }
}
