//! The DSR engine: the [`RoutingEngine`] that ties the route cache, the
//! send buffer and discoveries, and the maintenance buffer together. It
//! answers and relays requests (RFC 4728 §8.2), learns from replies and
//! the source routes it forwards, attaches source routes to what this node
//! originates (§8.1), and on a link break removes the link, sends a route
//! error and salvages (§8.3).
//!
//! The order of calls is the one of every [`RoutingEngine`]: feed input
//! (`handle_control`, `route`, `on_link_failure`, `handle_timeout` once
//! `poll_timeout` has passed), then drain `poll_transmit` and `poll_event`,
//! then ask `poll_timeout` again.

use super::maintenance::{MaintenanceBuffer, Sent};
use super::packet::{Control, SourceRoute, MAX_ROUTE_LEN};
use super::queue::{Discovery, RequestTable};
use super::tables::{has_duplicates, RouteCache};
use super::DsrConfig;
use crate::common::{jitter, HeldPackets, Outbox};
use crate::{DataPacket, Decision, Dest, DropReason, NodeId, RouteEvent, RoutingEngine, RoutingStats, Transmit};
use meshbed_core::{Instant, StreamRng};
use std::collections::{BTreeMap, VecDeque};

/// DSR at one node. A driver feeds it input (`handle_control`, `route`,
/// `on_link_failure`, `on_frame_heard`, and `handle_timeout` once
/// `poll_timeout` has passed), then drains `poll_transmit` and `poll_event`
/// (carrying out `Release`/`DropHeld` by packet id), then asks
/// `poll_timeout` again.
pub struct Dsr {
    node: NodeId,
    cfg: DsrConfig,
    rng: StreamRng,
    cache: RouteCache,
    discoveries: BTreeMap<NodeId, Discovery>,
    next_request_id: u16,
    request_table: RequestTable,
    /// The send buffer (RFC 4728 §4.2).
    send_buffer: HeldPackets,
    maintenance: MaintenanceBuffer,
    /// The route this node, as a source, last used per destination, for
    /// Found/Changed/Lost events.
    active: BTreeMap<NodeId, Vec<NodeId>>,
    /// Control packets to send, each when due (rebroadcasts after their
    /// jitter).
    outbox: Outbox<Transmit>,
    events: VecDeque<RouteEvent>,
    stats: RoutingStats,
}

impl Dsr {
    /// `rng` is this node's routing stream, [`crate::node_rng`].
    pub fn new(node: NodeId, cfg: DsrConfig, rng: StreamRng) -> Self {
        Dsr {
            node,
            cache: RouteCache::new(node, cfg.route_cache_timeout, cfg.route_cache_size),
            cfg,
            rng,
            discoveries: BTreeMap::new(),
            next_request_id: 0,
            request_table: RequestTable::default(),
            send_buffer: HeldPackets::default(),
            maintenance: MaintenanceBuffer::default(),
            active: BTreeMap::new(),
            outbox: Outbox::default(),
            events: VecDeque::new(),
            stats: RoutingStats::default(),
        }
    }

    pub fn config(&self) -> &DsrConfig {
        &self.cfg
    }

    /// The shortest cached path from this node to `dst` (this node first,
    /// `dst` last), or `None`.
    pub fn cached_route(&self, now: Instant, dst: NodeId) -> Option<Vec<NodeId>> {
        self.cache.route(now, dst)
    }

    /// Adds a path starting at this node to the route cache; a new path may
    /// be the route a held packet waits for.
    fn learn(&mut self, now: Instant, path: Vec<NodeId>) {
        if self.cache.learn(now, path) {
            self.release_held(now);
        }
    }

    /// Learns both directions of `route` as seen from this node: the part
    /// after it, and the part before it reversed (links are bidirectional
    /// under 802.11's DATA/ACK, as ns-2's DSR assumes).
    fn learn_both_ways(&mut self, now: Instant, route: &[NodeId]) {
        if let Some(i) = route.iter().position(|&n| n == self.node) {
            self.learn(now, route[i..].to_vec());
            self.learn(now, route[..=i].iter().rev().copied().collect());
        }
    }

    /// Truncates every cached path at the link `a` – `b` (either direction,
    /// RFC 4728 §8.3.5), then tells the source side what changed.
    fn remove_link(&mut self, now: Instant, a: NodeId, b: NodeId) {
        self.cache.remove_link(a, b);
        self.check_active(now);
    }

    /// Found/Changed/Lost for the destinations this node sends to.
    fn check_active(&mut self, now: Instant) {
        let dsts: Vec<NodeId> = self.active.keys().copied().collect();
        for dst in dsts {
            match self.cached_route(now, dst) {
                None => {
                    self.active.remove(&dst);
                    self.events.push_back(RouteEvent::Lost { dst });
                }
                Some(route) => self.note_route(dst, &route),
            }
        }
    }

    fn note_route(&mut self, dst: NodeId, route: &[NodeId]) {
        let (next_hop, hop_count) = (route[1], route.len() as u32 - 1);
        match self.active.insert(dst, route.to_vec()) {
            None => self.events.push_back(RouteEvent::Found { dst, next_hop, hop_count }),
            Some(old) if old != route => self.events.push_back(RouteEvent::Changed { dst, next_hop, hop_count }),
            Some(_) => {}
        }
    }

    fn send(&mut self, at: Instant, dest: Dest, c: &Control) {
        self.outbox.push(at, Transmit { dest, bytes: c.emit() });
    }

    /// Sends a request for `target` (RFC 4728 §8.2.1).
    fn send_request(&mut self, now: Instant, target: NodeId, hop_limit: u8) {
        self.next_request_id = self.next_request_id.wrapping_add(1);
        let id = self.next_request_id;
        self.stats.route_discoveries += 1;
        let rreq = Control::Rreq { id, hop_limit, initiator: self.node, target, record: Vec::new() };
        self.send(now, Dest::Broadcast, &rreq);
    }

    fn start_discovery(&mut self, now: Instant, target: NodeId) {
        if self.discoveries.contains_key(&target) {
            return;
        }
        let (d, hop_limit) = Discovery::first(now, &self.cfg);
        self.send_request(now, target, hop_limit);
        self.discoveries.insert(target, d);
    }

    fn handle_rreq(
        &mut self,
        now: Instant,
        id: u16,
        hop_limit: u8,
        initiator: NodeId,
        target: NodeId,
        record: Vec<NodeId>,
    ) {
        if initiator == self.node || record.contains(&self.node) {
            return; // our own request, or a loop
        }
        let mut route = Vec::with_capacity(record.len() + 2);
        route.push(initiator);
        route.extend_from_slice(&record);
        route.push(self.node);
        if has_duplicates(&route) || route.len() > MAX_ROUTE_LEN {
            return;
        }
        // The record, reversed, is a route back to the initiator.
        self.learn(now, route.iter().rev().copied().collect());
        let back = route[route.len() - 2];
        if target == self.node {
            // The target answers every copy (RFC 4728 §8.2.2; ns-2 does),
            // so the initiator and the nodes on the way learn several routes.
            self.send(now, Dest::Unicast(back), &Control::Rrep { route });
            return;
        }
        if self.request_table.seen(now, initiator, id, target, &self.cfg) {
            return;
        }
        if self.cfg.reply_from_cache {
            if let Some(cached) = self.cached_route(now, target) {
                let mut full = route.clone();
                full.extend_from_slice(&cached[1..]);
                if !has_duplicates(&full) && full.len() <= MAX_ROUTE_LEN {
                    // RFC 4728 §8.2.3: reply instead of propagating.
                    self.send(now, Dest::Unicast(back), &Control::Rrep { route: full });
                    return;
                }
            }
        }
        if hop_limit == 0 || record.len() + 3 > MAX_ROUTE_LEN {
            return; // non-propagating, or out of hops
        }
        let mut record = record;
        record.push(self.node);
        let c = Control::Rreq { id, hop_limit: hop_limit - 1, initiator, target, record };
        let due = now + jitter(&mut self.rng, self.cfg.broadcast_jitter);
        self.send(due, Dest::Broadcast, &c);
    }

    fn handle_rrep(&mut self, now: Instant, route: Vec<NodeId>) {
        let Some(i) = route.iter().position(|&n| n == self.node) else {
            self.stats.control_packets_ignored += 1;
            return;
        };
        if has_duplicates(&route) {
            self.stats.control_packets_ignored += 1;
            return;
        }
        self.learn_both_ways(now, &route);
        if i == 0 {
            let target = route[route.len() - 1];
            self.discoveries.remove(&target);
            self.release_held(now);
        } else {
            self.send(now, Dest::Unicast(route[i - 1]), &Control::Rrep { route });
        }
    }

    fn handle_rerr(&mut self, now: Instant, error_source: NodeId, unreachable: NodeId, route: Vec<NodeId>) {
        self.remove_link(now, error_source, unreachable);
        if let Some(i) = route.iter().position(|&n| n == self.node) {
            if let Some(&next) = route.get(i + 1) {
                self.send(now, Dest::Unicast(next), &Control::Rerr { error_source, unreachable, route });
            }
        }
    }

    /// Releases every held packet that now has a route.
    fn release_held(&mut self, now: Instant) {
        let mut i = 0;
        // One at a time: a packet released touches the cache, which may
        // give the next its route.
        while let Some(dst) = self.send_buffer.get(i).map(|h| h.dst) {
            if let Some(route) = self.cached_route(now, dst) {
                let h = self.send_buffer.remove(i).expect("in range");
                self.discoveries.remove(&dst);
                let (next_hop, header) = self.originate(now, h.id, h.dst, route);
                self.events.push_back(RouteEvent::Release { id: h.id, next_hop, header: Some(header) });
            } else {
                i += 1;
            }
        }
    }

    /// Sends a packet of ours along `route`: its next hop and header.
    fn originate(&mut self, now: Instant, id: u64, dst: NodeId, route: Vec<NodeId>) -> (NodeId, Vec<u8>) {
        self.cache.touch(now, &route);
        self.note_route(dst, &route);
        let next_hop = route[1];
        let sr = SourceRoute { salvage: 0, path: route };
        let header = sr.emit();
        self.remember_sent(now, id, self.node, dst, next_hop, sr);
        (next_hop, header)
    }

    fn remember_sent(&mut self, now: Instant, id: u64, src: NodeId, dst: NodeId, next_hop: NodeId, route: SourceRoute) {
        let sent = Sent { id, src, dst, next_hop, route, at: now };
        self.maintenance.remember(sent, self.cfg.maintenance_window);
    }

    fn hold(&mut self, now: Instant, id: u64, dst: NodeId) {
        if let Some(old) = self.send_buffer.push(now, id, dst, self.cfg.send_buffer_size) {
            self.events.push_back(RouteEvent::DropHeld { id: old.id, reason: DropReason::BufferOverflow });
        }
        self.start_discovery(now, dst);
    }

    /// A packet that had been sent over the broken link: re-sent by its
    /// source, or salvaged by a forwarder (RFC 4728 §8.3.6).
    fn salvage(&mut self, now: Instant, s: Sent) {
        let i = s.route.path.iter().position(|&n| n == self.node).unwrap_or(0);
        if s.src == self.node && i == 0 {
            match self.cached_route(now, s.dst) {
                Some(route) => {
                    let (next_hop, header) = self.originate(now, s.id, s.dst, route);
                    self.events.push_back(RouteEvent::Release { id: s.id, next_hop, header: Some(header) });
                }
                None => self.hold(now, s.id, s.dst),
            }
            return;
        }
        // RERR to the node that wrote the source route, along its reverse.
        if i > 0 {
            let back: Vec<NodeId> = s.route.path[..=i].iter().rev().copied().collect();
            let next = back[1];
            let c = Control::Rerr { error_source: self.node, unreachable: s.next_hop, route: back };
            self.send(now, Dest::Unicast(next), &c);
        }
        if s.route.salvage >= self.cfg.max_salvage_count {
            return;
        }
        if let Some(route) = self.cached_route(now, s.dst) {
            self.cache.touch(now, &route);
            let next_hop = route[1];
            let sr = SourceRoute { salvage: s.route.salvage + 1, path: route };
            let header = sr.emit();
            self.remember_sent(now, s.id, s.src, s.dst, next_hop, sr);
            self.events.push_back(RouteEvent::Release { id: s.id, next_hop, header: Some(header) });
        }
    }

    fn due_discovery(&mut self, now: Instant) {
        let due: Vec<NodeId> = self.discoveries.iter().filter(|(_, d)| d.next_at <= now).map(|(&t, _)| t).collect();
        for target in due {
            let Some(mut d) = self.discoveries.remove(&target) else { continue };
            if !self.send_buffer.holds_for(target) {
                continue; // nothing waits for it any more
            }
            if d.exhausted(&self.cfg) {
                // RFC 4728 §8.2.1: give up; the packets waiting are dropped.
                for h in self.send_buffer.take_for(target) {
                    self.events.push_back(RouteEvent::DropHeld { id: h.id, reason: DropReason::NoRoute });
                }
                continue;
            }
            self.send_request(now, target, self.cfg.discovery_hop_limit);
            d.next_request(now, &self.cfg);
            self.discoveries.insert(target, d);
        }
    }
}

impl RoutingEngine for Dsr {
    fn node(&self) -> NodeId {
        self.node
    }

    fn handle_control(&mut self, now: Instant, from: NodeId, _rx_power_dbm: f64, bytes: &[u8]) {
        self.stats.control_packets_received += 1;
        let Ok(c) = Control::parse(bytes) else {
            self.stats.control_packets_ignored += 1;
            return;
        };
        // The link we heard it over is a cached route of one hop.
        self.learn(now, vec![self.node, from]);
        match c {
            Control::Rreq { id, hop_limit, initiator, target, record } => {
                self.handle_rreq(now, id, hop_limit, initiator, target, record)
            }
            Control::Rrep { route } => self.handle_rrep(now, route),
            Control::Rerr { error_source, unreachable, route } => {
                self.handle_rerr(now, error_source, unreachable, route)
            }
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        // RFC 4728 §8.2 SendBufferTimeout.
        for h in self.send_buffer.expire(now, self.cfg.send_buffer_timeout) {
            self.events.push_back(RouteEvent::DropHeld { id: h.id, reason: DropReason::DiscoveryTimeout });
        }
        self.due_discovery(now);
    }

    fn route(&mut self, now: Instant, packet: DataPacket<'_>) -> Decision {
        if packet.prev_hop.is_none() && packet.header.is_empty() {
            // We are the source (RFC 4728 §8.1.1).
            return match self.cached_route(now, packet.dst) {
                Some(route) => {
                    let (next_hop, header) = self.originate(now, packet.id, packet.dst, route);
                    Decision::Forward { next_hop, header: Some(header) }
                }
                None => {
                    self.hold(now, packet.id, packet.dst);
                    Decision::Hold
                }
            };
        }
        let Ok(sr) = SourceRoute::parse(packet.header) else {
            return Decision::Drop(DropReason::NoRoute);
        };
        let Some(i) = sr.path.iter().position(|&n| n == self.node) else {
            return Decision::Drop(DropReason::NoRoute);
        };
        let Some(&next_hop) = sr.path.get(i + 1) else {
            return Decision::Drop(DropReason::NoRoute);
        };
        if has_duplicates(&sr.path) {
            return Decision::Drop(DropReason::NoRoute);
        }
        // RFC 4728 §8.1.4: a forwarder may cache the route it carries.
        self.learn_both_ways(now, &sr.path);
        self.remember_sent(now, packet.id, packet.src, packet.dst, next_hop, sr);
        Decision::Forward { next_hop, header: None }
    }

    fn on_link_failure(&mut self, now: Instant, neighbour: NodeId) {
        self.stats.link_failures += 1;
        self.events.push_back(RouteEvent::LinkBroken { neighbour });
        self.remove_link(now, self.node, neighbour);
        // One report is one frame the MAC gave up on. Its packet is the
        // oldest one handed to this neighbour that is not known to have got
        // through (the MAC sends in order); salvaging one per report keeps
        // packets already delivered from being sent twice.
        if let Some(s) = self.maintenance.take_unconfirmed(now, neighbour, self.cfg.maintenance_window) {
            self.salvage(now, s);
        }
    }

    fn on_frame_heard(&mut self, now: Instant, neighbour: NodeId, _rx_power_dbm: f64) {
        // Hearing the neighbour is the passive acknowledgement of RFC 4728
        // §8.3.2 as far as we can take it: what we handed it before now got
        // through (the MAC sends in order), so it is not salvaged later.
        self.maintenance.confirm(now, neighbour);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.outbox.poll_transmit(now, &mut self.stats)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let held = self.send_buffer.next_expiry(self.cfg.send_buffer_timeout);
        let disc = self.discoveries.values().map(|d| d.next_at);
        self.outbox.next_due().into_iter().chain(held).chain(disc).min()
    }

    fn poll_event(&mut self) -> Option<RouteEvent> {
        self.events.pop_front()
    }

    fn stats(&self) -> &RoutingStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{chain, dsr, released_path};
    use super::*;
    use crate::harness::Fate;
    use meshbed_core::Duration;
    use proptest::prelude::*;

    #[test]
    fn chain_holds_discovers_and_delivers_along_the_full_source_route() {
        for hops in 1..=6u32 {
            let n = hops as usize + 1;
            let mut net = chain(n);
            let dst = hops as NodeId;
            let id = net.send(0, dst);
            assert_eq!(net.fate(id), &Fate::Held, "{hops} hops");
            net.run_for(Duration::from_secs(1));
            assert!(
                matches!(net.fate(id), Fate::Delivered { hops: h, .. } if *h == hops),
                "{hops} hops: {:?}",
                net.fate(id)
            );
            assert_eq!(released_path(&net, 0, id), (0..=dst).collect::<Vec<_>>());
            assert!(net
                .events
                .iter()
                .any(|(_, n, e)| *n == 0 && *e == RouteEvent::Found { dst, next_hop: 1, hop_count: hops }));
            // The forwarders learnt the route from the packet and the RREP.
            for f in 1..dst {
                assert_eq!(net.engines[f as usize].cached_route(net.now(), dst), Some((f..=dst).collect()));
            }
        }
    }

    #[test]
    fn poll_timeout_always_moves_forward() {
        let mut e = dsr(0, &DsrConfig::default());
        assert_eq!(
            e.route(Instant::ZERO, DataPacket { id: 1, src: 0, dst: 9, prev_hop: None, header: &[] }),
            Decision::Hold
        );
        e.handle_control(
            Instant::ZERO,
            5,
            -60.0,
            &Control::Rreq { id: 1, hop_limit: 3, initiator: 5, target: 8, record: vec![] }.emit(),
        );
        let mut steps = 0;
        while let Some(t) = e.poll_timeout() {
            e.handle_timeout(t);
            while e.poll_transmit(t).is_some() {}
            while e.poll_event().is_some() {}
            assert!(e.poll_timeout().is_none_or(|next| next > t), "stuck at {t}");
            steps += 1;
            assert!(steps < 100);
        }
        // An early timeout is a no-op.
        e.handle_timeout(Instant::ZERO);
        assert!(e.poll_transmit(Instant::ZERO).is_none());
    }

    #[derive(Clone, Debug)]
    enum Op {
        Control(NodeId, Control),
        Data(NodeId, NodeId, Option<NodeId>, Vec<NodeId>),
        LinkFailure(NodeId),
        Heard(NodeId),
        Wait(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        let id = || 0u32..6;
        let ids = || proptest::collection::vec(0u32..6, 0..6);
        let control = prop_oneof![
            (any::<u16>(), 0u8..3, id(), id(), ids()).prop_map(|(id, hop_limit, initiator, target, record)| {
                Control::Rreq { id, hop_limit, initiator, target, record }
            }),
            (id(), id(), ids()).prop_map(|(a, b, rest)| Control::Rrep { route: [vec![a, b], rest].concat() }),
            (id(), id(), id(), ids()).prop_map(|(error_source, unreachable, first, rest)| Control::Rerr {
                error_source,
                unreachable,
                route: [vec![first], rest].concat()
            }),
        ];
        prop_oneof![
            (id(), control).prop_map(|(from, c)| Op::Control(from, c)),
            (id(), id(), proptest::option::of(id()), ids()).prop_map(|(s, d, p, path)| Op::Data(s, d, p, path)),
            id().prop_map(Op::LinkFailure),
            id().prop_map(Op::Heard),
            (0u64..40_000).prop_map(Op::Wait),
        ]
    }

    proptest! {
        #[test]
        fn random_control_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64), from in 0u32..4) {
            let mut e = dsr(0, &DsrConfig::default());
            let parsed = Control::parse(&bytes);
            e.handle_control(Instant::ZERO, from, -60.0, &bytes);
            if parsed.is_err() {
                prop_assert_eq!(e.stats().control_packets_ignored, 1);
            }
            while e.poll_transmit(Instant::ZERO).is_some() {}
        }

        #[test]
        fn random_source_route_headers_never_panic(header in proptest::collection::vec(any::<u8>(), 0..64), prev in 0u32..4) {
            let mut e = dsr(1, &DsrConfig::default());
            let d = e.route(Instant::ZERO, DataPacket { id: 1, src: 0, dst: 2, prev_hop: Some(prev), header: &header });
            if SourceRoute::parse(&header).is_err() {
                prop_assert_eq!(d, Decision::Drop(DropReason::NoRoute));
            }
            e.on_link_failure(Instant::ZERO, 2);
            while e.poll_transmit(Instant::ZERO).is_some() {}
        }

        /// Well-formed but arbitrary input in any order (small node ids so
        /// that routes meet): no panic, and the deadline always moves on.
        #[test]
        fn arbitrary_input_sequences_never_panic(ops in proptest::collection::vec(op(), 0..40)) {
            let mut e = dsr(0, &DsrConfig::default());
            let mut now = Instant::ZERO;
            for (i, op) in ops.into_iter().enumerate() {
                now += Duration::from_millis(7);
                match op {
                    Op::Control(from, c) => e.handle_control(now, from, -60.0, &c.emit()),
                    Op::Data(src, dst, prev, path) => {
                        let header = if path.is_empty() { Vec::new() } else { SourceRoute { salvage: 0, path }.emit() };
                        let p = DataPacket { id: i as u64, src, dst, prev_hop: prev, header: &header };
                        e.route(now, p);
                    }
                    Op::LinkFailure(n) => e.on_link_failure(now, n),
                    Op::Heard(n) => e.on_frame_heard(now, n, -60.0),
                    Op::Wait(ms) => {
                        now += Duration::from_millis(ms);
                        if e.poll_timeout().is_some_and(|t| t <= now) {
                            // As a driver does: a timeout, then the packets
                            // it sent, then the next deadline.
                            e.handle_timeout(now);
                            while e.poll_transmit(now).is_some() {}
                            prop_assert!(e.poll_timeout().is_none_or(|t| t > now));
                        }
                    }
                }
                while e.poll_transmit(now).is_some() {}
                while e.poll_event().is_some() {}
            }
        }
    }
}
