//! The AODV engine: the [`RoutingEngine`] that ties the route table, the
//! neighbour table and the discovery queue together. It handles RREQs
//! (RFC 3561 §6.5, §6.6), RREPs and HELLOs (§6.7, §6.9) and RERRs (§6.11),
//! originates and repeats discoveries (§6.3, §6.4), decides per data packet
//! and reacts to link breaks; its control packets wait in an outbox until
//! due.
//!
//! A driver calls, in any order, [`RoutingEngine::handle_control`],
//! [`RoutingEngine::on_frame_heard`], [`RoutingEngine::on_link_failure`] and
//! [`RoutingEngine::route`] as things happen, [`RoutingEngine::handle_timeout`]
//! when [`RoutingEngine::poll_timeout`] is due, and after each of these drains
//! [`RoutingEngine::poll_transmit`] and [`RoutingEngine::poll_event`] and asks
//! for the next deadline again.

use super::neighbours::{hello, Neighbours};
use super::packet::{Message, Rerr, Rrep, Rreq};
use super::queue::{Discovery, RreqCache};
use super::tables::RouteTable;
use super::AodvConfig;
use crate::common::{jitter, seq_newer, HeldPackets, Outbox};
use crate::{DataPacket, Decision, Dest, DropReason, NodeId, RouteEvent, RoutingEngine, RoutingStats, Transmit};
use meshbed_core::{Duration, Instant, StreamRng};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Per-message-type counters (beyond [`RoutingStats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AodvCounters {
    /// RREQs sent, originated and relayed.
    pub rreq_sent: u64,
    pub rrep_sent: u64,
    pub rerr_sent: u64,
    pub hello_sent: u64,
}

/// AODV at one node.
pub struct Aodv {
    node: NodeId,
    config: AodvConfig,
    rng: StreamRng,
    /// This node's sequence number (RFC 3561 §6.1).
    own_seq: u32,
    /// The last RREQ ID this node used (RFC 3561 §6.3).
    rreq_id: u32,
    routes: RouteTable,
    neighbours: Neighbours,
    rreq_seen: RreqCache,
    discoveries: BTreeMap<NodeId, Discovery>,
    held: HeldPackets,
    next_hello: Instant,
    /// Control packets to send, each when due.
    outbox: Outbox<Transmit>,
    events: VecDeque<RouteEvent>,
    stats: RoutingStats,
    counters: AodvCounters,
}

impl Aodv {
    /// AODV at `node`; `rng` is the node's routing stream
    /// ([`crate::node_rng`]), used only for jitter.
    pub fn new(node: NodeId, config: AodvConfig, mut rng: StreamRng) -> Self {
        // The first HELLO at a random point of the first interval, so that
        // nodes started together do not beacon together.
        let first_hello = Instant::ZERO + jitter(&mut rng, config.hello_interval);
        Aodv {
            node,
            config,
            rng,
            own_seq: 0,
            rreq_id: 0,
            routes: RouteTable::new(node),
            neighbours: Neighbours::default(),
            rreq_seen: RreqCache::default(),
            discoveries: BTreeMap::new(),
            held: HeldPackets::default(),
            next_hello: first_hello,
            outbox: Outbox::default(),
            events: VecDeque::new(),
            stats: RoutingStats::default(),
            counters: AodvCounters::default(),
        }
    }

    pub fn config(&self) -> &AodvConfig {
        &self.config
    }

    pub fn counters(&self) -> &AodvCounters {
        &self.counters
    }

    /// The next hop and hop count of the valid route to `dst`, if any.
    pub fn route_to(&self, dst: NodeId) -> Option<(NodeId, u8)> {
        self.routes.route_to(dst)
    }

    /// The smoothed signal strength of `neighbour`, if it was heard.
    pub fn signal_strength_dbm(&self, neighbour: NodeId) -> Option<f64> {
        self.neighbours.signal_strength_dbm(neighbour)
    }

    fn send(&mut self, at: Instant, dest: Dest, msg: &Message) {
        match msg {
            Message::Rreq(_) => self.counters.rreq_sent += 1,
            Message::Rrep(m) if m.is_hello_from(self.node) => self.counters.hello_sent += 1,
            Message::Rrep(_) => self.counters.rrep_sent += 1,
            Message::Rerr(_) => self.counters.rerr_sent += 1,
        }
        self.outbox.push(at, Transmit { dest, bytes: msg.emit() });
    }

    fn send_jittered(&mut self, now: Instant, dest: Dest, msg: &Message) {
        let at = now + jitter(&mut self.rng, self.config.broadcast_jitter);
        self.send(at, dest, msg);
    }

    /// Feeds a frame heard from `from` to the neighbour table and its
    /// signal-strength filter (seed 003 §3.4–3.5); says whether it passes.
    fn hear(&mut self, now: Instant, from: NodeId, rx_power_dbm: f64) -> bool {
        self.neighbours.hear(now, from, rx_power_dbm, self.config.ss_alpha, self.config.ss_threshold_dbm)
    }

    fn invalidate(&mut self, now: Instant, dst: NodeId, dest_seq: Option<u32>) {
        let delete_at = now + self.config.delete_period();
        self.routes.invalidate(dst, dest_seq, delete_at, &mut self.events);
    }

    /// Sends a RERR for `unreachable` to the union of their precursors:
    /// unicast if there is one, broadcast otherwise (RFC 3561 §6.11).
    fn send_rerr(&mut self, now: Instant, unreachable: Vec<(NodeId, u32)>, precursors: BTreeSet<NodeId>) {
        if unreachable.is_empty() || precursors.is_empty() {
            return;
        }
        let msg = Message::Rerr(Rerr { no_delete: false, unreachable });
        if precursors.len() == 1 {
            let to = *precursors.iter().next().expect("one precursor");
            self.send(now, Dest::Unicast(to), &msg);
        } else {
            self.send_jittered(now, Dest::Broadcast, &msg);
        }
    }

    /// The link to `neighbour` is gone (MAC retry limit or missed HELLOs):
    /// every route through it becomes invalid with its sequence number
    /// incremented, and their precursors hear a RERR (RFC 3561 §6.11 (i)).
    fn link_broken(&mut self, now: Instant, neighbour: NodeId) {
        self.neighbours.forget(neighbour);
        self.events.push_back(RouteEvent::LinkBroken { neighbour });
        let mut unreachable = Vec::new();
        let mut precursors = BTreeSet::new();
        for dst in self.routes.valid_through(neighbour) {
            let Some(r) = self.routes.get(dst) else { continue };
            let seq = r.dest_seq.map(|s| s.wrapping_add(1));
            if !r.precursors.is_empty() {
                unreachable.push((dst, seq.unwrap_or(0)));
                precursors.extend(r.precursors.iter().copied());
            }
            self.invalidate(now, dst, seq);
        }
        precursors.remove(&neighbour);
        self.send_rerr(now, unreachable, precursors);
    }

    /// Originates (or repeats) the RREQ for `dst` (RFC 3561 §6.3).
    fn send_rreq(&mut self, now: Instant, dst: NodeId, ttl: u8) {
        // §6.1: the originator increments its own sequence number first.
        self.own_seq = self.own_seq.wrapping_add(1);
        self.rreq_id = self.rreq_id.wrapping_add(1);
        self.rreq_seen.insert((self.node, self.rreq_id), now + self.config.path_discovery_time());
        let msg = Message::Rreq(Rreq {
            ttl,
            hop_count: 0,
            rreq_id: self.rreq_id,
            dest: dst,
            dest_seq: self.routes.dest_seq(dst),
            dest_only: false,
            orig: self.node,
            orig_seq: self.own_seq,
        });
        self.send(now, Dest::Broadcast, &msg);
    }

    fn start_discovery(&mut self, now: Instant, dst: NodeId) {
        if self.discoveries.contains_key(&dst) {
            return;
        }
        self.stats.route_discoveries += 1;
        let d = Discovery::first(now, &self.config);
        self.send_rreq(now, dst, d.ttl);
        self.discoveries.insert(dst, d);
    }

    /// A discovery's wait ran out without a route: widen the ring, repeat,
    /// or give up and drop what was held for it (RFC 3561 §6.3, §6.4).
    fn discovery_timeout(&mut self, now: Instant, dst: NodeId) {
        let Some(mut d) = self.discoveries.remove(&dst) else { return };
        if !d.next_attempt(now, &self.config) {
            for h in self.held.take_for(dst) {
                self.events.push_back(RouteEvent::DropHeld { id: h.id, reason: DropReason::NoRoute });
            }
            return;
        }
        let ttl = d.ttl;
        self.discoveries.insert(dst, d);
        self.send_rreq(now, dst, ttl);
    }

    /// Releases the held packets whose destination has a route now and ends
    /// their discoveries.
    fn release_held(&mut self, now: Instant) {
        if self.held.is_empty() && self.discoveries.is_empty() {
            return;
        }
        let routes = &self.routes;
        self.discoveries.retain(|&d, _| routes.route_to(d).is_none());
        for (h, next_hop) in self.held.take_routable(|dst| routes.route_to(dst).map(|(hop, _)| hop)) {
            self.refresh_for_data(now, h.dst, next_hop, None);
            self.events.push_back(RouteEvent::Release { id: h.id, next_hop, header: None });
        }
    }

    /// RFC 3561 §6.2: a data packet forwarded keeps the routes to its
    /// destination, its next hop, and (back) to its previous hop alive.
    fn refresh_for_data(&mut self, now: Instant, dst: NodeId, next_hop: NodeId, prev_hop: Option<NodeId>) {
        let until = now + self.config.active_route_timeout;
        self.routes.refresh(dst, until);
        self.routes.refresh(next_hop, until);
        if let Some(p) = prev_hop {
            self.routes.refresh(p, until);
        }
    }

    fn on_rreq(&mut self, now: Instant, from: NodeId, m: Rreq) {
        if m.orig == self.node {
            return; // our own RREQ, relayed back
        }
        let key = (m.orig, m.rreq_id);
        if self.rreq_seen.contains(key, now) {
            return; // RFC 3561 §6.5: a RREQ is processed once
        }
        self.rreq_seen.insert(key, now + self.config.path_discovery_time());
        let hop_count = m.hop_count.saturating_add(1);
        // §6.5: the reverse route, with the minimal lifetime
        // 2·NET_TRAVERSAL_TIME − 2·hop_count·NODE_TRAVERSAL_TIME.
        let reverse_life = (self.config.net_traversal_time() * 2)
            .saturating_sub(self.config.node_traversal_time * (2 * hop_count as u64));
        self.routes.update(m.orig, from, hop_count, Some(m.orig_seq), now + reverse_life, &mut self.events);

        if m.dest == self.node {
            // §6.6.1: the destination's sequence number becomes at least the
            // one the RREQ asks for.
            if let Some(s) = m.dest_seq.filter(|&s| seq_newer(s, self.own_seq)) {
                self.own_seq = s;
            }
            let life = self.config.my_route_timeout();
            let rrep = Rrep {
                ttl: self.config.net_diameter,
                hop_count: 0,
                dest: self.node,
                dest_seq: self.own_seq,
                orig: m.orig,
                lifetime_ms: (life.as_nanos() / 1_000_000) as u32,
            };
            self.send(now, Dest::Unicast(from), &Message::Rrep(rrep));
            return;
        }
        // §6.6.2: an intermediate node with a fresh enough route replies.
        let fresh = self.routes.get(m.dest).filter(|r| r.valid && !m.dest_only).and_then(|r| {
            let seq = r.dest_seq?;
            m.dest_seq.is_none_or(|want| !seq_newer(want, seq)).then_some((seq, r.hop_count, r.next_hop, r.lifetime))
        });
        if let Some((seq, hops, next_hop, lifetime)) = fresh {
            self.routes.add_precursor(m.dest, from);
            self.routes.add_precursor(m.orig, next_hop);
            let rrep = Rrep {
                ttl: self.config.net_diameter,
                hop_count: hops,
                dest: m.dest,
                dest_seq: seq,
                orig: m.orig,
                lifetime_ms: ((lifetime - now).as_nanos() / 1_000_000) as u32,
            };
            self.send(now, Dest::Unicast(from), &Message::Rrep(rrep));
            return;
        }
        if m.ttl > 1 {
            let known = self.routes.dest_seq(m.dest);
            let dest_seq = match (m.dest_seq, known) {
                (Some(a), Some(b)) if seq_newer(b, a) => Some(b),
                (None, Some(b)) => Some(b),
                (a, _) => a,
            };
            let fwd = Rreq { ttl: m.ttl - 1, hop_count, dest_seq, ..m };
            self.send_jittered(now, Dest::Broadcast, &Message::Rreq(fwd));
        }
    }

    fn on_rrep(&mut self, now: Instant, from: NodeId, m: Rrep) {
        let life = Duration::from_millis(m.lifetime_ms as u64);
        if m.is_hello_from(from) {
            // A HELLO (§6.9): the route to the neighbour, alive for
            // ALLOWED_HELLO_LOSS · HELLO_INTERVAL.
            self.routes.update(from, from, 1, Some(m.dest_seq), now + life, &mut self.events);
            if self.route_to(from) == Some((from, 1)) {
                self.routes.refresh(from, now + life);
            }
            return;
        }
        // §6.7: the forward route to the destination.
        let hop_count = m.hop_count.saturating_add(1);
        if !self.routes.update(m.dest, from, hop_count, Some(m.dest_seq), now + life, &mut self.events) {
            return;
        }
        if m.orig == self.node || m.ttl <= 1 {
            return;
        }
        let Some((toward_orig, _)) = self.route_to(m.orig) else { return };
        self.routes.add_precursor(m.dest, toward_orig);
        self.routes.add_precursor(m.orig, from);
        self.routes.refresh(m.orig, now + self.config.active_route_timeout);
        let fwd = Rrep { ttl: m.ttl - 1, hop_count, ..m };
        self.send(now, Dest::Unicast(toward_orig), &Message::Rrep(fwd));
    }

    fn on_rerr(&mut self, now: Instant, from: NodeId, m: Rerr) {
        // §6.11 (iii): routes to the listed destinations through the sender
        // become invalid; their precursors are told in turn.
        let mut unreachable = Vec::new();
        let mut precursors = BTreeSet::new();
        for (dst, seq) in m.unreachable {
            let Some(r) = self.routes.get(dst).filter(|r| r.valid && r.next_hop == from) else { continue };
            if !r.precursors.is_empty() {
                unreachable.push((dst, seq));
                precursors.extend(r.precursors.iter().copied());
            }
            self.invalidate(now, dst, Some(seq));
        }
        precursors.remove(&from);
        self.send_rerr(now, unreachable, precursors);
    }

    fn send_hello(&mut self, now: Instant) {
        let hello = hello(self.node, self.own_seq, self.config.neighbour_timeout());
        self.send(now, Dest::Broadcast, &Message::Rrep(hello));
    }
}

impl RoutingEngine for Aodv {
    fn node(&self) -> NodeId {
        self.node
    }

    fn handle_control(&mut self, now: Instant, from: NodeId, rx_power_dbm: f64, bytes: &[u8]) {
        self.stats.control_packets_received += 1;
        // Seed 003 §3.4: "the link strength module first checks the signal
        // strength of the received control packet"; below the threshold the
        // packet is not processed further.
        if !self.hear(now, from, rx_power_dbm) || from == self.node {
            self.stats.control_packets_ignored += 1;
            return;
        }
        let msg = match Message::parse(bytes) {
            Ok(m) => m,
            Err(_) => {
                self.stats.control_packets_ignored += 1;
                return;
            }
        };
        // §6.5/§6.7: any control packet gives a route to its sender.
        if !matches!(&msg, Message::Rrep(m) if m.is_hello_from(from)) {
            self.routes.update(from, from, 1, None, now + self.config.active_route_timeout, &mut self.events);
        }
        match msg {
            Message::Rreq(m) => self.on_rreq(now, from, m),
            Message::Rrep(m) => self.on_rrep(now, from, m),
            Message::Rerr(m) => self.on_rerr(now, from, m),
        }
        self.release_held(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        // HELLO (§6.9); the next one a little early, never late, so that a
        // neighbour never misses ALLOWED_HELLO_LOSS intervals by jitter alone.
        if self.config.hellos && self.next_hello <= now {
            self.send_hello(now);
            let early = jitter(&mut self.rng, self.config.broadcast_jitter);
            self.next_hello = now + self.config.hello_interval.saturating_sub(early).max(Duration::from_nanos(1));
        }
        // Neighbours not heard for ALLOWED_HELLO_LOSS · HELLO_INTERVAL
        // (§6.11); without HELLOs silence says nothing (ns-2's link-layer
        // detection runs neither timer).
        if self.config.hellos {
            for neighbour in self.neighbours.silent(now, self.config.neighbour_timeout()) {
                self.link_broken(now, neighbour);
            }
        }
        // Route lifetimes (§6.11: an expired route becomes invalid, and is
        // deleted DELETE_PERIOD later).
        self.routes.expire(now, now + self.config.delete_period(), &mut self.events);
        self.rreq_seen.purge(now);
        let due: Vec<NodeId> = self.discoveries.iter().filter(|(_, d)| d.deadline <= now).map(|(&d, _)| d).collect();
        for dst in due {
            self.discovery_timeout(now, dst);
        }
        for h in self.held.expire(now, self.config.discovery_buffer_timeout) {
            self.events.push_back(RouteEvent::DropHeld { id: h.id, reason: DropReason::DiscoveryTimeout });
        }
        // A discovery with nothing left to deliver stops.
        let waiting = self.held.destinations();
        self.discoveries.retain(|d, _| waiting.contains(d));
    }

    fn route(&mut self, now: Instant, packet: DataPacket<'_>) -> Decision {
        if let Some((next_hop, _)) = self.route_to(packet.dst) {
            self.refresh_for_data(now, packet.dst, next_hop, packet.prev_hop);
            self.routes.refresh(packet.src, now + self.config.active_route_timeout);
            return Decision::Forward { next_hop, header: None };
        }
        if let Some(prev) = packet.prev_hop {
            // Seed 003 §3.4: a packet not generated here and without a route
            // "is discarded, after sending an RERR to the source"; it goes
            // to the previous hop, which passes it on along its precursors
            // (RFC 3561 §6.11 (ii)).
            let seq = self.routes.dest_seq(packet.dst).unwrap_or(0);
            let rerr = Message::Rerr(Rerr { no_delete: false, unreachable: vec![(packet.dst, seq)] });
            self.send(now, Dest::Unicast(prev), &rerr);
            return Decision::Drop(DropReason::NoRoute);
        }
        if self.config.discovery_buffer_packets == 0 {
            return Decision::Drop(DropReason::BufferOverflow);
        }
        if let Some(old) = self.held.push(now, packet.id, packet.dst, self.config.discovery_buffer_packets) {
            self.events.push_back(RouteEvent::DropHeld { id: old.id, reason: DropReason::BufferOverflow });
        }
        self.start_discovery(now, packet.dst);
        Decision::Hold
    }

    fn on_link_failure(&mut self, now: Instant, neighbour: NodeId) {
        self.stats.link_failures += 1;
        if self.config.link_layer_feedback {
            self.link_broken(now, neighbour);
        }
    }

    fn on_frame_heard(&mut self, now: Instant, neighbour: NodeId, rx_power_dbm: f64) {
        if neighbour != self.node {
            self.hear(now, neighbour, rx_power_dbm);
        }
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.outbox.poll_transmit(now, &mut self.stats)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let neighbour_timeout = self.config.neighbour_timeout();
        let hellos = self.config.hellos;
        let deadlines = [
            hellos.then_some(self.next_hello),
            self.outbox.next_due(),
            // Asked only with HELLOs: without them it is never a deadline.
            hellos.then(|| self.neighbours.next_silence(neighbour_timeout)).flatten(),
            self.routes.next_lifetime(),
            self.discoveries.values().map(|d| d.deadline).min(),
            self.held.next_expiry(self.config.discovery_buffer_timeout),
        ];
        deadlines.into_iter().flatten().min()
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
    use super::super::testing::{engine, events_at, net};
    use super::*;
    use crate::harness::{Fate, Net};
    use proptest::prelude::*;

    #[test]
    fn chain_route_is_discovered_and_packet_delivered_over_every_hop() {
        for n in 2..=7usize {
            let last = n as NodeId - 1;
            let mut net = Net::chain(n, |node| engine(node, &AodvConfig::default()));
            let id = net.send(0, last);
            assert_eq!(net.fate(id), &Fate::Held, "{n} nodes: held while discovering");
            net.run_for(Duration::from_millis(500));
            assert!(
                matches!(net.fate(id), Fate::Delivered { hops, .. } if *hops == last),
                "{n} nodes: {:?}",
                net.fate(id)
            );
            let ev = events_at(&net, 0);
            assert!(ev.iter().any(|(_, e)| *e == RouteEvent::Found { dst: last, next_hop: 1, hop_count: last }));
            assert!(ev.iter().any(|(_, e)| matches!(e, RouteEvent::Release { id: i, next_hop: 1, .. } if *i == id)));
            assert_eq!(net.engines[0].route_to(last), Some((1, last as u8)));
            // The destination learnt the reverse route on the way.
            assert_eq!(net.engines[last as usize].route_to(0), Some((last - 1, last as u8)));
        }
    }

    #[test]
    fn link_break_sends_rerr_to_the_source_and_rediscovery_takes_the_other_path() {
        // Two disjoint three-hop paths 0-1-2-3 and 0-4-5-3.
        let links = [(0, 1), (1, 2), (2, 3), (0, 4), (4, 5), (5, 3)];
        let mut net = net(6, &links, AodvConfig::default());
        let first = net.send(0, 3);
        net.run_for(Duration::from_millis(100));
        assert!(matches!(net.fate(first), Fate::Delivered { hops: 3, .. }));
        let (via, _) = net.engines[0].route_to(3).expect("route");
        let (a, b) = if via == 1 { (1, 2) } else { (4, 5) };
        net.set_link(a, b, false);
        let broken_at = net.now();
        let second = net.send(0, 3);
        net.run_for(Duration::from_millis(50));
        assert_eq!(net.fate(second), &Fate::LostOnLink { from: a, to: b });
        // Two hops of 1 ms to reach the broken link, 1 ms for the MAC to give up.
        assert!(events_at(&net, a)
            .contains(&(broken_at + Duration::from_millis(2), RouteEvent::LinkBroken { neighbour: b })));
        assert_eq!(net.engines[a as usize].counters().rerr_sent, 1);
        assert!(
            events_at(&net, 0).iter().any(|(t, e)| *t > broken_at && *e == RouteEvent::Lost { dst: 3 }),
            "the RERR reached the source"
        );
        assert_eq!(net.engines[0].route_to(3), None);
        let third = net.send(0, 3);
        assert_eq!(net.fate(third), &Fate::Held);
        net.run_for(Duration::from_millis(200));
        assert!(matches!(net.fate(third), Fate::Delivered { hops: 3, .. }), "{:?}", net.fate(third));
        let (now_via, _) = net.engines[0].route_to(3).expect("route again");
        assert_ne!(now_via, via);
        assert!(events_at(&net, 0)
            .iter()
            .any(|(t, e)| *t > broken_at && matches!(e, RouteEvent::Found { dst: 3, .. })));
    }

    #[test]
    fn poll_timeout_always_moves_forward() {
        let mut a = engine(0, &AodvConfig::default());
        let packet = DataPacket { id: 7, src: 0, dst: 5, prev_hop: None, header: &[] };
        assert_eq!(a.route(Instant::ZERO, packet), Decision::Hold);
        let mut last = Instant::ZERO;
        let mut dropped = false;
        for _ in 0..200 {
            let t = a.poll_timeout().expect("HELLOs keep a timer");
            assert!(t >= last);
            a.handle_timeout(t);
            while a.poll_transmit(t).is_some() {}
            while let Some(e) = a.poll_event() {
                dropped |= e == RouteEvent::DropHeld { id: 7, reason: DropReason::NoRoute };
            }
            assert!(a.poll_timeout().expect("timer") > t, "deadline did not advance at {t:?}");
            last = t;
        }
        assert!(dropped);
    }

    proptest! {
        #[test]
        fn random_control_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64), power in -100.0f64..-30.0) {
            let mut a = engine(0, &AodvConfig::default());
            a.handle_control(Instant::from_nanos(1), 1, power, &bytes);
            while a.poll_transmit(Instant::from_nanos(1)).is_some() {}
            let ok = Message::parse(&bytes).is_ok();
            prop_assert_eq!(a.stats().control_packets_ignored, u64::from(!ok));
        }
    }
}
