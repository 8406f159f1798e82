//! The OLSR engine: the [`RoutingEngine`] that ties the neighbourhood, the
//! topology set, the flooding bookkeeping and the routing table together.
//! It originates HELLOs, TCs and ETX probes on their timers, processes
//! each message of a packet heard, recomputes MPRs and routes after every
//! change, and keeps the peers a transport reported unresponsive (seed 004
//! §III.B).
//!
//! Driver order: after constructing, call [`RoutingEngine::poll_transmit`],
//! [`RoutingEngine::poll_event`] until `None` and arm a timer for
//! [`RoutingEngine::poll_timeout`]; after every `handle_*`/`on_*` call do
//! the same. `route` never holds: OLSR is proactive.

use super::edges::{edge_cost, Edge, PartChange, ReadInto, SortedEdges};
use super::neighbours::{probe_jitter, Neighbours};
use super::packet::{
    decode_vtime, encode_vtime, Body, Message, MessageView, Packet, PacketView, HELLO_MESSAGE, MAX_TTL, PROBE_MESSAGE,
    TC_MESSAGE,
};
use super::queue::DuplicateSet;
use super::tables::{Route, RoutingTable};
use super::topology::TopologySet;
use super::{Metric, OlsrConfig};
use crate::common::{jitter, Outbox};
use crate::{
    DataPacket, Decision, Dest, DropReason, NodeId, PathQuality, RouteEvent, RoutingEngine, RoutingStats, Transmit,
};
use meshbed_core::{Duration, Instant, StreamRng};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

#[derive(Copy, Clone, Debug)]
enum Timer {
    Hello = 0,
    Tc = 1,
    Probe = 2,
    /// The earliest expiry in the information sets.
    Expiry = 3,
    /// The earliest forwarded message due (`forward_queue`).
    Forward = 4,
}
const TIMER_COUNT: usize = 5;

/// Everything the routing table is computed from (RFC 3626 §10): the
/// symmetric first hops with their cost and the 2-hop links with theirs
/// (from the neighbour set, read at its `neighbours_version`), the topology
/// links with theirs (read at `topology_version`), each in key order, and
/// the peers that have left. The links are read again in place.
#[derive(Debug, Default)]
struct RouteInputs {
    first_hops: Vec<(NodeId, u32)>,
    two_hop_edges: SortedEdges,
    neighbours_version: (u64, u64),
    topology_edges: SortedEdges,
    topology_version: u64,
    left: Vec<NodeId>,
}

/// What a read of [`RouteInputs`] replaced, for the routing table to follow
/// the change: the first hops as they were, and each part's links out of
/// the nodes it touched as they were. Buffers kept so that reads do not
/// allocate (contents meaningless between reads).
#[derive(Debug, Default)]
struct Replaced {
    first_hops: Vec<(NodeId, u32)>,
    two_hop_edges: Vec<Edge>,
    topology_edges: Vec<Edge>,
}

/// One node's OLSR.
pub struct OlsrEngine {
    node: NodeId,
    config: OlsrConfig,
    rng: StreamRng,
    timers: [Option<Instant>; TIMER_COUNT],
    now: Instant,
    neighbours: Neighbours,
    topology: TopologySet,
    duplicates: DuplicateSet,
    routes: RoutingTable,
    /// What the routing table was last computed from, and the versions of
    /// the neighbour and topology sets then: while neither moved, the
    /// inputs cannot have changed and are not read again to be compared.
    route_inputs: Option<RouteInputs>,
    /// What the last read of the inputs replaced.
    replaced: Replaced,
    /// Set by [`OlsrEngine::recompute`] to the next time at which a tuple
    /// changes or expires (`Some(None)`: none pending), cleared by a write
    /// that no recompute follows: while it holds and nothing is written,
    /// a recompute would find everything as it left it (see
    /// `handle_control`).
    settled_until: Option<Option<Instant>>,
    /// Peers a transport reported unresponsive, with when (seed 004
    /// §III.B); cleared by a HELLO or TC the peer originated.
    inaccessible: BTreeMap<NodeId, Instant>,
    /// RFC 3626 §9: the advertised neighbour set and its sequence number.
    advertised: BTreeSet<NodeId>,
    ansn: u16,
    /// When the advertised set was last non-empty (§9.3: empty TCs are
    /// still sent for TOP_HOLD_TIME to withdraw the old ones).
    advertised_nonempty_at: Option<Instant>,
    packet_seq: u16,
    message_seq: u16,
    /// Control packets to send, each when due.
    outbox: Outbox<Transmit>,
    events: VecDeque<RouteEvent>,
    stats: RoutingStats,
    tc_retransmissions: u64,
    /// Messages to retransmit, each after its own jitter (RFC 3626 §3.5);
    /// what is due together goes out piggybacked in one packet.
    forward_queue: Outbox<Message>,
}

impl OlsrEngine {
    /// `rng` is this node's routing stream ([`crate::node_rng`]).
    /// The first HELLO, TC and probe go out after a jitter from time zero.
    pub fn new(node: NodeId, config: OlsrConfig, rng: StreamRng) -> Self {
        let mut e = OlsrEngine {
            node,
            config,
            rng,
            timers: [None; TIMER_COUNT],
            now: Instant::ZERO,
            neighbours: Neighbours::default(),
            topology: TopologySet::default(),
            duplicates: DuplicateSet::default(),
            routes: RoutingTable::default(),
            route_inputs: None,
            replaced: Replaced::default(),
            settled_until: None,
            inaccessible: BTreeMap::new(),
            advertised: BTreeSet::new(),
            ansn: 0,
            advertised_nonempty_at: None,
            packet_seq: 0,
            message_seq: 0,
            outbox: Outbox::default(),
            events: VecDeque::new(),
            stats: RoutingStats::default(),
            tc_retransmissions: 0,
            forward_queue: Outbox::default(),
        };
        let max_jitter = e.config.max_jitter;
        e.timers[Timer::Hello as usize] = Some(Instant::ZERO + jitter(&mut e.rng, max_jitter));
        e.timers[Timer::Tc as usize] = Some(Instant::ZERO + jitter(&mut e.rng, max_jitter));
        if let Metric::Etx { probe_interval, .. } = e.config.metric {
            let d = jitter(&mut e.rng, probe_jitter(probe_interval));
            e.timers[Timer::Probe as usize] = Some(Instant::ZERO + d);
        }
        e
    }

    /// The routing table (a copy, by destination).
    pub fn routes(&self) -> BTreeMap<NodeId, Route> {
        self.routes.routes()
    }

    /// The route to `dst`.
    pub fn route_to(&self, dst: NodeId) -> Option<&Route> {
        self.routes.route(dst)
    }

    pub fn mpr_set(&self) -> &BTreeSet<NodeId> {
        self.neighbours.mpr_set()
    }

    /// Symmetric 1-hop neighbours now.
    pub fn symmetric_neighbours(&self) -> Vec<NodeId> {
        self.neighbours.symmetric(self.now)
    }

    /// TC messages this node retransmitted for others (RFC 3626 §3.4.1).
    pub fn tc_retransmissions(&self) -> u64 {
        self.tc_retransmissions
    }

    /// The link ETX to `neighbour` in [`METRIC_UNIT`](super::METRIC_UNIT)s
    /// (256 = ETX 1), or `None` when a delivery ratio is zero.
    pub fn link_etx(&self, neighbour: NodeId) -> Option<u32> {
        self.neighbours.link_etx(self.config.metric, neighbour)
    }

    fn send(&mut self, messages: Vec<Message>) {
        let packet = Packet { seq: self.packet_seq, messages };
        self.packet_seq = self.packet_seq.wrapping_add(1);
        let bytes = packet.emit();
        self.outbox.push(self.now, Transmit { dest: Dest::Broadcast, bytes });
    }

    fn originate(&mut self, vtime: Duration, ttl: u8, body: Body) {
        let m = Message {
            vtime: encode_vtime(vtime),
            originator: self.node,
            ttl,
            hop_count: 0,
            seq: self.message_seq,
            body,
        };
        self.message_seq = self.message_seq.wrapping_add(1);
        self.send(vec![m]);
    }

    /// RFC 3626 §6.2: one entry per link with its link and neighbour type.
    fn send_hello(&mut self) {
        let body = Body::Hello {
            htime: encode_vtime(self.config.hello_interval),
            willingness: self.config.willingness,
            neighbours: self.neighbours.hello_entries(self.now, self.config.metric),
        };
        self.originate(self.config.neighb_hold_time, 1, body);
    }

    /// RFC 3626 §9.2–9.3.
    fn send_tc(&mut self) {
        let recent = self.advertised_nonempty_at.is_some_and(|t| self.now < t + self.config.top_hold_time);
        if self.advertised.is_empty() && !recent {
            return;
        }
        let metric = self.config.metric;
        let advertised = self.advertised.iter().map(|&n| (n, self.neighbours.wire_metric(metric, n))).collect();
        self.originate(self.config.top_hold_time, MAX_TTL, Body::Tc { ansn: self.ansn, advertised });
    }

    fn send_probe(&mut self, window: Duration) {
        let received = self.neighbours.probe_report();
        self.originate(window, 1, Body::Probe { received });
    }

    /// One message of a packet from neighbour `from`.
    /// Processes one message; returns whether it may have written the
    /// sets a recompute reads (neighbours, topology, inaccessible peers):
    /// a duplicate, an ignored message or a forwarding decision does not.
    /// A TC's body is copied out only when it is new or to be forwarded:
    /// most copies a node hears are neither.
    fn process_message(&mut self, from: NodeId, m: MessageView<'_>) -> bool {
        let originator = m.originator();
        if originator == self.node {
            return false;
        }
        let vtime = decode_vtime(m.vtime());
        match m.kind() {
            // RFC 3626 §6.4: HELLOs (and probes) are never forwarded: one
            // that does not come from its originator is not ours to use.
            HELLO_MESSAGE | PROBE_MESSAGE if originator != from => return false,
            TC_MESSAGE => {}
            _ => match m.body() {
                Body::Hello { willingness, neighbours, .. } => {
                    self.inaccessible.remove(&originator);
                    let hold = self.config.neighb_hold_time;
                    self.neighbours.process_hello(self.now, self.node, hold, from, vtime, willingness, &neighbours);
                    return true;
                }
                Body::Probe { received } => {
                    self.neighbours.record_probe(self.now, self.node, from, &received);
                    return true;
                }
                Body::Tc { .. } | Body::Unknown(_) => return false,
            },
        }
        // RFC 3626 §3.4 / §9.5: only from symmetric neighbours.
        if !self.neighbours.is_symmetric(self.now, from) {
            return false;
        }
        // RFC 3626 §3.4.1 default forwarding: once, by MPRs of the sender.
        let relay = if self.config.mpr_flooding { self.neighbours.is_mpr_selector(from) } else { true };
        let until = self.now + self.config.dup_hold_time;
        let ttl = m.ttl();
        let (seen, retransmit) = self.duplicates.see(self.now, originator, m.seq(), until, |seen| {
            let already = seen.unwrap_or(false);
            !already && relay && ttl > 1
        });
        if seen.is_none() || retransmit {
            let m = m.message();
            if seen.is_none() {
                if let Body::Tc { ansn, advertised } = &m.body {
                    // A TC the peer originated validates it (seed 004 §III.B).
                    self.inaccessible.remove(&originator);
                    self.topology.process_tc(self.now, originator, vtime, *ansn, advertised);
                }
            }
            if retransmit {
                let fwd = Message { ttl: m.ttl - 1, hop_count: m.hop_count.saturating_add(1), ..m };
                self.tc_retransmissions += 1;
                // RFC 3626 §3.5: forwarding is jittered too, so that the
                // MPRs that got the same message do not all send at once.
                let due = self.now + jitter(&mut self.rng, self.config.max_jitter);
                self.forward_queue.push(due, fwd);
                self.timers[Timer::Forward as usize] = self.forward_queue.next_due();
            }
        }
        seen.is_none()
    }

    /// Drops expired tuples (RFC 3626 §4).
    fn expire(&mut self) {
        let now = self.now;
        self.neighbours.expire(now, self.config.metric);
        self.topology.expire(now);
        self.duplicates.expire(now);
    }

    /// Brings every derived set up to date after any change: broken links,
    /// 2-hop set, MPRs, advertised set, routes.
    fn recompute(&mut self) {
        let now = self.now;
        for n in self.neighbours.update(now, self.node) {
            self.events.push_back(RouteEvent::LinkBroken { neighbour: n });
        }
        // Compared in place, collected only when it changed (most control
        // packets leave it as it was).
        let same = match self.config.metric {
            Metric::HopCount => self.advertised.iter().copied().eq(self.neighbours.mpr_selectors()),
            Metric::Etx { .. } => self.advertised.iter().copied().eq(self.neighbours.symmetric_at(now)),
        };
        if !same {
            self.ansn = self.ansn.wrapping_add(1);
            self.advertised = match self.config.metric {
                Metric::HopCount => self.neighbours.mpr_selectors().collect(),
                Metric::Etx { .. } => self.neighbours.symmetric_at(now).collect(),
            };
        }
        if !self.advertised.is_empty() {
            self.advertised_nonempty_at = Some(now);
        }
        self.update_routes();
        self.timers[Timer::Expiry as usize] = self.next_expiry();
        self.settled_until = Some(self.timers[Timer::Expiry as usize]);
    }

    /// Recomputes the routing table from the symmetric links, the 2-hop
    /// set and the topology set, without the peers that have left — only
    /// when one of them changed since the last computation (RFC 3626 §10:
    /// the table is recomputed "when a change is detected"), and then only
    /// by following the changed links from the table where that is exact
    /// ([`RoutingTable::follow`]). Most
    /// control packets only refresh what is known; recomputing on each of
    /// them made OLSR two orders of magnitude slower per event than AODV
    /// (issue 28). The same inputs give the same routes and no events, so
    /// skipping changes nothing.
    fn update_routes(&mut self) {
        let now = self.now;
        let metric = self.config.metric;
        // A peer labelled inaccessible longer than a TC's information lasts
        // without a message of its own has left the network and is deleted
        // from the routing table (seed 004 §III.B).
        let hold = self.config.top_hold_time;
        let left: Vec<NodeId> =
            self.inaccessible.iter().filter(|(_, &at)| now >= at + hold).map(|(&peer, _)| peer).collect();
        let (neighbours_version, topology_version) = (self.neighbours.version(), self.topology.links_version());
        let old = self.route_inputs.as_ref();
        let fresh_neighbours = old.is_none_or(|o| o.neighbours_version != neighbours_version);
        let fresh_topology = old.is_none_or(|o| o.topology_version != topology_version);
        // (`left` is nearly always empty: compared without a call.)
        let same_left = |o: &RouteInputs| o.left.len() == left.len() && o.left.iter().zip(&left).all(|(a, b)| a == b);
        if !fresh_neighbours && !fresh_topology && old.is_some_and(same_left) {
            return;
        }
        let kept = old.is_some();
        let follows = old.is_some_and(|o| o.left == left);
        let mut inputs = self.route_inputs.take().unwrap_or_default();
        inputs.left = left;
        (inputs.neighbours_version, inputs.topology_version) = (neighbours_version, topology_version);
        // Only the part whose set moved is read again, and of it only the
        // links out of the nodes whose links changed, in place (each set
        // iterates in key order, so each part is sorted as `follow` needs);
        // the other part stays as it was, touched nowhere.
        let cost = |m| edge_cost(metric, m);
        let replaced = &mut self.replaced;
        let untouched: Option<Vec<NodeId>> = Some(Vec::new());
        let two_hop_touched = if fresh_neighbours {
            let first_hops = self.neighbours.first_hops(now, metric, std::mem::take(&mut replaced.first_hops));
            replaced.first_hops = std::mem::replace(&mut inputs.first_hops, first_hops);
            let into = ReadInto { edges: &mut inputs.two_hop_edges, kept, replaced: &mut replaced.two_hop_edges };
            self.neighbours.two_hop_edges(into, cost)
        } else {
            replaced.first_hops.clone_from(&inputs.first_hops);
            replaced.two_hop_edges.clear();
            untouched.clone()
        };
        let topology_touched = if fresh_topology {
            let into = ReadInto { edges: &mut inputs.topology_edges, kept, replaced: &mut replaced.topology_edges };
            self.topology.edges(into, cost)
        } else {
            replaced.topology_edges.clear();
            untouched
        };
        let has_left = |peer: NodeId| inputs.left.binary_search(&peer).is_ok();
        let parts = [&inputs.two_hop_edges, &inputs.topology_edges];
        // A fresh part is compared with its old self in the ranges that
        // changed (a link that moved from one part to the other reads as
        // lost and gained, and is followed as such); a kept part has not
        // changed. Departed peers take a fresh computation.
        if follows {
            let changes = [
                PartChange { old: &replaced.two_hop_edges, new: parts[0], touched: two_hop_touched.as_deref() },
                PartChange { old: &replaced.topology_edges, new: parts[1], touched: topology_touched.as_deref() },
            ];
            let first_hops = (&replaced.first_hops[..], &inputs.first_hops[..]);
            self.routes.follow(self.node, first_hops, changes, has_left, &mut self.events);
        } else {
            let parts = parts.map(SortedEdges::as_slice);
            self.routes.compute(self.node, &inputs.first_hops, parts, has_left, &mut self.events);
        }
        self.route_inputs = Some(inputs);
    }

    fn next_expiry(&mut self) -> Option<Instant> {
        let now = self.now;
        self.neighbours
            .next_time_after(now)
            .into_iter()
            .chain(self.topology.next_expiry(now))
            .chain(self.inaccessible.values().map(|&at| at + self.config.top_hold_time))
            .filter(|&t| t > now)
            .min()
    }

    /// The earliest of the timers.
    fn next_timer(&self) -> Option<Instant> {
        self.timers.iter().flatten().copied().min()
    }

    fn fire(&mut self, timer: Timer) {
        let now = self.now;
        match timer {
            Timer::Hello => {
                self.send_hello();
                let next = self.config.hello_interval.saturating_sub(jitter(&mut self.rng, self.config.max_jitter));
                self.timers[Timer::Hello as usize] = Some(now + next);
            }
            Timer::Tc => {
                self.send_tc();
                let next = self.config.tc_interval.saturating_sub(jitter(&mut self.rng, self.config.max_jitter));
                self.timers[Timer::Tc as usize] = Some(now + next);
            }
            Timer::Probe => {
                if let Metric::Etx { probe_interval, window } = self.config.metric {
                    self.send_probe(window);
                    let next = probe_interval.saturating_sub(jitter(&mut self.rng, probe_jitter(probe_interval)));
                    self.timers[Timer::Probe as usize] = Some(now + next);
                }
            }
            Timer::Expiry => self.timers[Timer::Expiry as usize] = None,
            Timer::Forward => {
                // Everything due goes out piggybacked in one packet
                // (RFC 3626 §3.5).
                let due = self.forward_queue.take_due(now);
                if !due.is_empty() {
                    self.send(due);
                }
                self.timers[Timer::Forward as usize] = self.forward_queue.next_due();
            }
        }
    }
}

impl RoutingEngine for OlsrEngine {
    fn node(&self) -> NodeId {
        self.node
    }

    fn handle_control(&mut self, now: Instant, from: NodeId, _rx_power_dbm: f64, bytes: &[u8]) {
        self.now = self.now.max(now);
        self.stats.control_packets_received += 1;
        let packet = match PacketView::new(bytes) {
            Ok(p) => p,
            Err(_) => {
                self.stats.control_packets_ignored += 1;
                return;
            }
        };
        // Settled: the last recompute followed every write, and no tuple
        // has changed or expired since (every time a tuple changes at is
        // in the expiry time, and every recompute comes after an expiry
        // at its own time). Then if no message writes the sets — most
        // packets carry only TCs seen already (issue 28: 1.2 M of the
        // ATP paper's 1.44 M in the OLSR run) — a recompute would find
        // what it left: the same links, MPRs, advertised set, routes and
        // expiry time. With ETX, costs also age out of the probe window,
        // at times the expiry time does not hold: never settled.
        let settled = self.config.metric == Metric::HopCount
            && self.settled_until.is_some_and(|until| until.is_none_or(|t| self.now < t));
        self.expire();
        let mut wrote = false;
        for m in packet.messages() {
            wrote |= self.process_message(from, m);
        }
        if settled && !wrote {
            // The one thing a recompute writes from the clock alone.
            if !self.advertised.is_empty() {
                self.advertised_nonempty_at = Some(self.now);
            }
            return;
        }
        self.recompute();
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.now = self.now.max(now);
        if self.next_timer().is_none_or(|t| t > now) {
            return; // early: nothing due
        }
        self.expire();
        // MPRs and neighbour types in HELLOs reflect the expired state.
        self.recompute();
        for timer in [Timer::Hello, Timer::Tc, Timer::Probe, Timer::Expiry, Timer::Forward] {
            if self.timers[timer as usize].is_some_and(|t| t <= now) {
                self.fire(timer);
            }
        }
        self.recompute();
    }

    /// Data this node originates for a peer labelled inaccessible is
    /// dropped (seed 004 §III.B: inaccessible "for data exchange"); packets
    /// it forwards for others are not its transport's business.
    fn route(&mut self, _now: Instant, packet: DataPacket<'_>) -> Decision {
        if packet.prev_hop.is_none() && self.inaccessible.contains_key(&packet.dst) {
            return Decision::Drop(DropReason::PeerInaccessible);
        }
        match self.routes.route(packet.dst) {
            Some(r) => Decision::Forward { next_hop: r.next_hop, header: None },
            None => Decision::Drop(DropReason::NoRoute),
        }
    }

    /// RFC 3626 §13 (with `link_layer_notification`): a link-layer failure
    /// makes the link lost at once, for NEIGHB_HOLD_TIME, whatever HELLOs
    /// say meanwhile.
    fn on_link_failure(&mut self, now: Instant, neighbour: NodeId) {
        self.now = self.now.max(now);
        self.stats.link_failures += 1;
        if !self.config.link_layer_notification {
            return;
        }
        self.neighbours.link_failure(now, neighbour, self.config.neighb_hold_time);
        self.expire();
        self.recompute();
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.outbox.poll_transmit(now, &mut self.stats)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.next_timer().into_iter().chain(self.outbox.next_due()).min()
    }

    fn poll_event(&mut self) -> Option<RouteEvent> {
        self.events.pop_front()
    }

    fn stats(&self) -> &RoutingStats {
        &self.stats
    }

    /// Walks the route back from `dst` through each destination's last
    /// link: the first hop's cost is this node's own link ETX, the others'
    /// what their HELLOs and TCs advertised (with hop count, 1 per link).
    fn path_info(&self, dst: NodeId) -> Option<PathQuality> {
        self.routes.path_info(self.node, dst)
    }

    /// Seed 004 §III.B: labels `peer` inaccessible (from the first notice
    /// until it is validated) and wakes up when TCs should have settled it.
    fn peer_unresponsive(&mut self, now: Instant, peer: NodeId) {
        self.now = self.now.max(now);
        if peer == self.node {
            return;
        }
        self.inaccessible.entry(peer).or_insert(self.now);
        self.timers[Timer::Expiry as usize] = self.next_expiry();
        // Written with no recompute after it.
        self.settled_until = None;
    }
}

#[cfg(test)]
mod tests;
