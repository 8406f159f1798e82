//! DSR's maintenance buffer (RFC 4728 §4.5, §8.3): the data packets this
//! node handed to a neighbour lately, until they are confirmed (any frame
//! heard from that neighbour afterwards: the MAC sends in order) or the
//! maintenance window has passed. A frame the MAC gave up on stands for the
//! oldest unconfirmed packet to that neighbour, which the engine then
//! salvages (RFC 4728 §8.3.6).

use super::packet::SourceRoute;
use crate::NodeId;
use meshbed_core::{Duration, Instant};
use std::collections::VecDeque;

/// A packet recently handed to a neighbour.
#[derive(Clone, Debug)]
pub(super) struct Sent {
    pub(super) id: u64,
    pub(super) src: NodeId,
    pub(super) dst: NodeId,
    pub(super) next_hop: NodeId,
    pub(super) route: SourceRoute,
    pub(super) at: Instant,
}

/// The packets sent and not yet confirmed, oldest first.
#[derive(Clone, Debug, Default)]
pub(super) struct MaintenanceBuffer {
    sent: VecDeque<Sent>,
}

impl MaintenanceBuffer {
    /// Forgets what was sent longer than `window` before `now`.
    fn prune(&mut self, now: Instant, window: Duration) {
        while self.sent.front().is_some_and(|s| now.saturating_since(s.at) > window) {
            self.sent.pop_front();
        }
    }

    /// Remembers a packet sent now (`s.at`), after forgetting what is older
    /// than `window`.
    pub(super) fn remember(&mut self, s: Sent, window: Duration) {
        self.prune(s.at, window);
        self.sent.push_back(s);
    }

    /// Something was heard from `neighbour` at `now`: what was handed to it
    /// before got through.
    pub(super) fn confirm(&mut self, now: Instant, neighbour: NodeId) {
        self.sent.retain(|s| s.next_hop != neighbour || s.at >= now);
    }

    /// The MAC gave up on a frame to `neighbour` at `now`: the oldest
    /// packet handed to it within `window` and not confirmed, taken out.
    pub(super) fn take_unconfirmed(&mut self, now: Instant, neighbour: NodeId, window: Duration) -> Option<Sent> {
        self.prune(now, window);
        let i = self.sent.iter().position(|s| s.next_hop == neighbour)?;
        self.sent.remove(i)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{chain, dsr, net, released_path};
    use super::super::{Control, DsrConfig, SourceRoute, MAX_SALVAGE_COUNT};
    use crate::harness::Fate;
    use crate::{DataPacket, Decision, Dest, RouteEvent, RoutingEngine};
    use meshbed_core::{Duration, Instant};

    #[test]
    fn link_break_sends_rerr_salvages_over_the_cached_alternative_and_reroutes() {
        // A diamond: 0 – 1, then 1 – 2 – 4 and 1 – 3 – 4.
        let mut net = net(5, &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4)], DsrConfig::default());
        let first = net.send(0, 4);
        net.run_for(Duration::from_secs(1));
        assert!(matches!(net.fate(first), Fate::Delivered { hops: 3, .. }));
        let used = released_path(&net, 0, first);
        let (via, other) = (used[2], if used[2] == 2 { 3 } else { 2 });
        // Node 1 heard both RREPs (the target answers every copy).
        assert_eq!(net.engines[1].cached_route(net.now(), 4).map(|r| r.len()), Some(3));
        let discoveries = net.engines[0].stats().route_discoveries;

        net.set_link(1, via, false);
        let events_before = net.events.len();
        let second = net.send(0, 4);
        net.run_for(Duration::from_secs(1));
        // Salvaged at 1 over `other`: the lost hop counts, so four hops.
        assert!(matches!(net.fate(second), Fate::Delivered { hops: 4, .. }), "{:?}", net.fate(second));
        let new_events = &net.events[events_before..];
        assert!(new_events.iter().any(|(_, n, e)| *n == 1 && *e == RouteEvent::LinkBroken { neighbour: via }));
        let salvaged = new_events.iter().find_map(|(_, n, e)| match e {
            RouteEvent::Release { id, header: Some(h), .. } if *n == 1 && *id == second => Some(h.clone()),
            _ => None,
        });
        let salvaged = SourceRoute::parse(&salvaged.expect("salvaged by node 1")).expect("valid");
        assert_eq!(salvaged, SourceRoute { salvage: 1, path: vec![1, other, 4] });
        // The RERR reached the source, whose route changed.
        assert!(net.engines[1].stats().control_packets_sent >= 1);
        assert!(new_events
            .iter()
            .any(|(_, n, e)| *n == 0 && *e == RouteEvent::Changed { dst: 4, next_hop: 1, hop_count: 3 }));
        assert_eq!(net.engines[0].cached_route(net.now(), 4), Some(vec![0, 1, other, 4]));

        // Later packets take the new route without a discovery.
        let third = net.send(0, 4);
        net.run_for(Duration::from_secs(1));
        assert!(matches!(net.fate(third), Fate::Delivered { hops: 3, .. }));
        assert_eq!(net.engines[0].stats().route_discoveries, discoveries);
    }

    #[test]
    fn break_without_alternative_loses_the_route_and_rediscovers() {
        let mut net = chain(4);
        let first = net.send(0, 3);
        net.run_for(Duration::from_secs(1));
        assert!(matches!(net.fate(first), Fate::Delivered { hops: 3, .. }));
        net.set_link(1, 2, false);
        let second = net.send(0, 3);
        net.run_for(Duration::from_secs(1));
        assert_eq!(net.fate(second), &Fate::LostOnLink { from: 1, to: 2 }, "nothing to salvage over");
        assert!(net.events.iter().any(|(_, n, e)| *n == 0 && *e == RouteEvent::Lost { dst: 3 }));
        assert_eq!(net.engines[0].cached_route(net.now(), 3), None);
        // The link comes back: the next packet starts a new discovery.
        net.set_link(1, 2, true);
        let before = net.engines[0].stats().route_discoveries;
        let third = net.send(0, 3);
        assert_eq!(net.fate(third), &Fate::Held);
        net.run_for(Duration::from_secs(1));
        assert!(matches!(net.fate(third), Fate::Delivered { hops: 3, .. }));
        assert!(net.engines[0].stats().route_discoveries > before);
    }

    #[test]
    fn one_failure_report_salvages_one_unconfirmed_packet() {
        let ms = |n| Instant::ZERO + Duration::from_millis(n);
        let mut e = dsr(1, &DsrConfig::default());
        for route in [vec![0, 1, 2, 4], vec![0, 1, 3, 4]] {
            e.handle_control(ms(0), 2, -60.0, &Control::Rrep { route }.emit());
        }
        while e.poll_transmit(ms(0)).is_some() {}
        let header = SourceRoute { salvage: 0, path: vec![0, 1, 2, 4] }.emit();
        let packet = |id| DataPacket { id, src: 0, dst: 4, prev_hop: Some(0), header: &header };
        let forward_to_2 = Decision::Forward { next_hop: 2, header: None };
        assert_eq!(e.route(ms(1), packet(10)), forward_to_2);
        // Node 2 is heard after packet 10 went: 10 got through.
        e.on_frame_heard(ms(2), 2, -60.0);
        assert_eq!(e.route(ms(3), packet(11)), forward_to_2);
        assert_eq!(e.route(ms(4), packet(12)), forward_to_2);
        while e.poll_event().is_some() {}

        e.on_link_failure(ms(5), 2);
        let events: Vec<_> = std::iter::from_fn(|| e.poll_event()).collect();
        let salvaged = SourceRoute { salvage: 1, path: vec![1, 3, 4] }.emit();
        assert_eq!(
            events,
            vec![
                RouteEvent::LinkBroken { neighbour: 2 },
                RouteEvent::Release { id: 11, next_hop: 3, header: Some(salvaged.clone()) },
            ]
        );
        let rerr = e.poll_transmit(ms(5)).expect("a RERR");
        assert_eq!(rerr.dest, Dest::Unicast(0));
        assert_eq!(
            Control::parse(&rerr.bytes),
            Ok(Control::Rerr { error_source: 1, unreachable: 2, route: vec![1, 0] })
        );
        // The second report is packet 12's; packet 10 is never sent again.
        e.on_link_failure(ms(6), 2);
        assert!(std::iter::from_fn(|| e.poll_event())
            .any(|ev| ev == RouteEvent::Release { id: 12, next_hop: 3, header: Some(salvaged.clone()) }));
        e.on_link_failure(ms(7), 2);
        assert!(!std::iter::from_fn(|| e.poll_event()).any(|ev| matches!(ev, RouteEvent::Release { .. })));
    }

    #[test]
    fn salvage_stops_at_max_salvage_count() {
        let mut e = dsr(1, &DsrConfig::default());
        for route in [vec![0, 1, 2, 4], vec![0, 1, 3, 4]] {
            e.handle_control(Instant::ZERO, 2, -60.0, &Control::Rrep { route }.emit());
        }
        for (salvage, resent) in [(MAX_SALVAGE_COUNT - 1, true), (MAX_SALVAGE_COUNT, false)] {
            let header = SourceRoute { salvage, path: vec![0, 1, 2, 4] }.emit();
            let p = DataPacket { id: 5, src: 0, dst: 4, prev_hop: Some(0), header: &header };
            assert!(matches!(e.route(Instant::ZERO, p), Decision::Forward { next_hop: 2, .. }));
            e.on_link_failure(Instant::ZERO, 2);
            let released = std::iter::from_fn(|| e.poll_event()).any(|ev| matches!(ev, RouteEvent::Release { .. }));
            assert_eq!(released, resent, "salvage count {salvage}");
            // Learn the 1 – 2 link again for the next round.
            e.handle_control(Instant::ZERO, 2, -60.0, &Control::Rrep { route: vec![0, 1, 2, 4] }.emit());
        }
    }
}
