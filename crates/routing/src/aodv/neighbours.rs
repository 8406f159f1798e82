//! AODV's neighbour table (RFC 3561 §6.9, §6.11) with seed 003's
//! signal-strength filter (§3.2, §3.4, §3.5): per neighbour the smoothed
//! signal strength of every frame heard from it and when it was last heard
//! passing the filter; a neighbour not heard for ALLOWED_HELLO_LOSS ·
//! HELLO_INTERVAL is gone. And the HELLO this node broadcasts so that its
//! neighbours hear it even without traffic.

use super::packet::Rrep;
use crate::NodeId;
use meshbed_core::{Duration, Instant};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
struct Neighbour {
    /// Exponentially weighted moving average of the received signal strength
    /// (seed 003 §3.5).
    ss_avg_dbm: f64,
    /// The last time a frame passing the filter was heard from it.
    last_heard: Option<Instant>,
}

/// The neighbours heard, by id.
#[derive(Clone, Debug, Default)]
pub(super) struct Neighbours {
    neighbours: BTreeMap<NodeId, Neighbour>,
}

impl Neighbours {
    /// Feeds one signal-strength sample into the neighbour's average (seed
    /// 003 §3.5: newest sample weighted by `alpha`) and says whether the
    /// neighbour passes the filter (`threshold_dbm`; `None` passes all); a
    /// passing neighbour counts as heard now (RFC 3561 §6.11: any packet
    /// from a neighbour shows the link is up).
    pub(super) fn hear(
        &mut self,
        now: Instant,
        from: NodeId,
        rx_power_dbm: f64,
        alpha: f64,
        threshold_dbm: Option<f64>,
    ) -> bool {
        let n = match self.neighbours.entry(from) {
            // The first sample is the average.
            Entry::Vacant(v) => v.insert(Neighbour { ss_avg_dbm: rx_power_dbm, last_heard: None }),
            Entry::Occupied(o) => {
                let n = o.into_mut();
                n.ss_avg_dbm = alpha * rx_power_dbm + (1.0 - alpha) * n.ss_avg_dbm;
                n
            }
        };
        // A NaN power never passes a threshold.
        let passes = threshold_dbm.is_none_or(|t| n.ss_avg_dbm >= t);
        if passes {
            n.last_heard = Some(now);
        }
        passes
    }

    /// `neighbour` is not a neighbour until heard again; its
    /// signal-strength average is kept, so one strong frame does not undo
    /// the history (seed 003 §3.5).
    pub(super) fn forget(&mut self, neighbour: NodeId) {
        if let Some(n) = self.neighbours.get_mut(&neighbour) {
            n.last_heard = None;
        }
    }

    /// The smoothed signal strength of `neighbour`, if it was heard.
    pub(super) fn signal_strength_dbm(&self, neighbour: NodeId) -> Option<f64> {
        self.neighbours.get(&neighbour).map(|n| n.ss_avg_dbm)
    }

    /// The neighbours not heard for `timeout` at `now` (RFC 3561 §6.11).
    pub(super) fn silent(&self, now: Instant, timeout: Duration) -> Vec<NodeId> {
        self.neighbours
            .iter()
            .filter(|(_, n)| n.last_heard.is_some_and(|t| t + timeout <= now))
            .map(|(&id, _)| id)
            .collect()
    }

    /// When the first neighbour will have been silent for `timeout`.
    pub(super) fn next_silence(&self, timeout: Duration) -> Option<Instant> {
        self.neighbours.values().filter_map(|n| n.last_heard).min().map(|t| t + timeout)
    }
}

/// The HELLO of `node` (RFC 3561 §6.9): a RREP about itself with its
/// sequence number, hop count 0, TTL 1, alive for `lifetime`
/// (ALLOWED_HELLO_LOSS · HELLO_INTERVAL).
pub(super) fn hello(node: NodeId, own_seq: u32, lifetime: Duration) -> Rrep {
    Rrep {
        ttl: 1,
        hop_count: 0,
        dest: node,
        dest_seq: own_seq,
        orig: node,
        lifetime_ms: (lifetime.as_nanos() / 1_000_000) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{engine, events_at, net};
    use super::super::{AodvConfig, Message, Rreq};
    use crate::harness::Fate;
    use crate::{RouteEvent, RoutingEngine};
    use meshbed_core::{Duration, Instant};

    #[test]
    fn without_link_layer_feedback_a_mac_failure_keeps_the_route_until_hellos_stop() {
        let config = AodvConfig { link_layer_feedback: false, ..AodvConfig::default() };
        let loss = config.neighbour_timeout();
        let mut net = net(3, &[(0, 1), (1, 2)], config);
        let first = net.send(0, 2);
        net.run_for(Duration::from_secs(2));
        assert!(matches!(net.fate(first), Fate::Delivered { hops: 2, .. }));
        // One frame lost to the MAC's retry limit while the link works: no break.
        let now = net.now();
        net.engines[1].on_link_failure(now, 2);
        assert_eq!(net.engines[1].route_to(2), Some((2, 1)));
        assert_eq!(net.engines[1].stats().link_failures, 1);
        assert!(!events_at(&net, 1).iter().any(|(_, e)| matches!(e, RouteEvent::LinkBroken { .. })));
        // The link really goes: HELLOs stop and the route goes with them.
        let down_at = net.now();
        net.set_link(1, 2, false);
        net.run_for(loss + Duration::from_secs(1));
        let broken: Vec<Instant> = events_at(&net, 1)
            .into_iter()
            .filter(|(_, e)| *e == RouteEvent::LinkBroken { neighbour: 2 })
            .map(|(t, _)| t)
            .collect();
        assert_eq!(broken.len(), 1, "{:?}", events_at(&net, 1));
        assert!(broken[0] > down_at && broken[0] <= down_at + loss);
        assert_eq!(net.engines[1].route_to(2), None);
    }

    #[test]
    fn missed_hellos_break_the_link_without_traffic() {
        let config = AodvConfig::default();
        let loss = config.neighbour_timeout();
        let mut net = net(3, &[(0, 1), (1, 2)], config);
        net.run_for(Duration::from_secs(3));
        assert_eq!(net.engines[0].route_to(1), Some((1, 1)), "HELLOs give routes to neighbours");
        assert!(net.engines[0].counters().hello_sent >= 2);
        assert!(!events_at(&net, 0).iter().any(|(_, e)| matches!(e, RouteEvent::LinkBroken { .. })));
        let down_at = net.now();
        net.set_link(0, 1, false);
        net.run_for(Duration::from_secs(4));
        let broken: Vec<Instant> = events_at(&net, 0)
            .into_iter()
            .filter(|(_, e)| *e == RouteEvent::LinkBroken { neighbour: 1 })
            .map(|(t, _)| t)
            .collect();
        assert_eq!(broken.len(), 1);
        // Last HELLO heard at most one interval before the link went down.
        assert!(broken[0] > down_at + loss - Duration::from_secs(1) && broken[0] <= down_at + loss);
        assert!(events_at(&net, 0).contains(&(broken[0], RouteEvent::Lost { dst: 1 })));
        assert_eq!(net.engines[0].route_to(1), None);
        // Node 1 still hears 2.
        assert_eq!(net.engines[1].route_to(2), Some((2, 1)));
    }

    /// Without HELLOs (ns-2's link-layer detection): none is sent, a
    /// silent neighbour is not lost, routes come from discovery, and a link
    /// breaks when the MAC gives up on a frame.
    #[test]
    fn without_hellos_only_the_mac_breaks_a_link() {
        let config = AodvConfig { hellos: false, ..AodvConfig::default() };
        let mut net = net(3, &[(0, 1), (1, 2)], config);
        let first = net.send(0, 2);
        net.run_for(Duration::from_secs(10));
        assert!(matches!(net.fate(first), Fate::Delivered { hops: 2, .. }));
        assert!(net.engines.iter().all(|e| e.counters().hello_sent == 0));
        // Ten silent seconds (five HELLO losses' worth): nothing breaks
        // (the idle route expires, as any AODV route does).
        assert!(!events_at(&net, 1).iter().any(|(_, e)| matches!(e, RouteEvent::LinkBroken { .. })));
        let again = net.send(0, 2);
        net.run_for(Duration::from_secs(1));
        assert!(matches!(net.fate(again), Fate::Delivered { hops: 2, .. }));
        assert_eq!(net.engines[1].route_to(2), Some((2, 1)));
        let now = net.now();
        net.engines[1].on_link_failure(now, 2);
        assert_eq!(net.engines[1].route_to(2), None);
        let events: Vec<RouteEvent> = std::iter::from_fn(|| net.engines[1].poll_event()).collect();
        assert!(events.contains(&RouteEvent::LinkBroken { neighbour: 2 }), "{events:?}");
    }

    fn diamond_hops(ss_threshold_dbm: Option<f64>) -> (u32, u64) {
        let config = AodvConfig { ss_threshold_dbm, ..AodvConfig::default() };
        let mut net = net(3, &[(0, 1), (1, 2), (0, 2)], config);
        net.rx_power_dbm[0][2] = -85.0;
        net.rx_power_dbm[2][0] = -85.0;
        let id = net.send(0, 2);
        net.run_for(Duration::from_millis(200));
        let Fate::Delivered { hops: first, .. } = *net.fate(id) else { panic!("{:?}", net.fate(id)) };
        // HELLOs for a while do not change the choice.
        net.run_for(Duration::from_secs(5));
        let id = net.send(0, 2);
        net.run_for(Duration::from_millis(200));
        let Fate::Delivered { hops, .. } = *net.fate(id) else { panic!("{:?}", net.fate(id)) };
        assert_eq!(hops, first);
        (hops, net.engines[2].stats().control_packets_ignored)
    }

    #[test]
    fn signal_strength_filter_avoids_the_weak_long_link() {
        assert_eq!(diamond_hops(None), (1, 0));
        let (hops, ignored) = diamond_hops(Some(-80.0));
        assert_eq!(hops, 2);
        assert!(ignored > 0);
    }

    #[test]
    fn signal_strength_average_weights_the_newest_sample_by_alpha() {
        let config = AodvConfig { ss_threshold_dbm: Some(-80.0), ..AodvConfig::default() };
        let mut a = engine(0, &config);
        let t = Instant::ZERO;
        a.on_frame_heard(t, 1, -70.0);
        assert_eq!(a.signal_strength_dbm(1), Some(-70.0));
        a.on_frame_heard(t, 1, -90.0);
        assert_eq!(a.signal_strength_dbm(1), Some(-75.0)); // 0.25·−90 + 0.75·−70
                                                           // One weak sample does not filter a strong neighbour: its RREQ counts.
        let rreq = Message::Rreq(Rreq {
            ttl: 5,
            hop_count: 0,
            rreq_id: 1,
            dest: 9,
            dest_seq: None,
            dest_only: false,
            orig: 1,
            orig_seq: 1,
        });
        a.handle_control(t, 1, -90.0, &rreq.emit()); // average −78.75
        assert_eq!(a.stats().control_packets_ignored, 0);
        assert_eq!(a.route_to(1), Some((1, 1)));
        // The next one pulls the average under the threshold (−81.6).
        a.handle_control(t, 1, -90.0, &rreq.emit());
        assert_eq!(a.stats().control_packets_ignored, 1);
    }
}
