//! Routing that reacts: the simulator's side of `meshbed_routing`'s engines
//! (issue 11 §2, §3). One engine per node; this module carries out what
//! they ask — control packets through the same 802.11 medium as data (so
//! they contend and can be lost), their timers, held packets and their
//! release — and feeds them what the medium reports: control packets with
//! their received power, every frame heard, and a frame that reached the
//! MAC's retry limit (a link failure; the packet is then offered to routing
//! again, which may salvage it). The rules themselves live in the engines.
//!
//! It also carries the cross-layer exchange of MTL (seed 004 §III.A–B)
//! between a node's engine and the transports on that node: the quality of
//! the path to a peer out ([`Dynamic::path_info`], read again whenever the
//! engine may have changed its view, [`Dynamic::take_path_changed`]) and a
//! peer that stopped answering in ([`Dynamic::peer_unresponsive`]).

use crate::net_stats::{Loss, NetStats};
use crate::{Net, Packet, Routed, SimEvent};
use meshbed_core::Instant;
use meshbed_proto::{PathInfo, RouteNotice};
use meshbed_radio::{Addr, NodeId};
use meshbed_routing::{DataPacket, Decision, Dest, DropReason, PathQuality, RouteEvent, RoutingEngine};
use std::collections::HashMap;

/// The flow number control packets carry (they belong to no flow).
pub const CONTROL_FLOW: u32 = u32::MAX;

/// What a route event at a node tells a transport end on that node whose
/// peer is the returned destination (ELFN, seed 002 §2.4, §4.3): a lost
/// route is [`RouteNotice::Failed`], a found one
/// [`RouteNotice::Reestablished`]; a route that only changed its next hop
/// is no notice. The one rule the simulator and the routing daemon
/// (`meshbed routed`, which passes notices to `meshbed send`/`recv`) apply.
pub fn route_notice(event: &RouteEvent) -> Option<(NodeId, RouteNotice)> {
    match *event {
        RouteEvent::Lost { dst } => Some((dst, RouteNotice::Failed)),
        RouteEvent::Found { dst, .. } => Some((dst, RouteNotice::Reestablished)),
        _ => None,
    }
}

/// Path information for a transport (MTL, seed 004 §III.B–C) from routing's
/// view of the route, with the node's interface bandwidth `link_rate_bps`.
pub fn path_info(quality: &PathQuality, link_rate_bps: u64) -> PathInfo {
    PathInfo { hop_count: quality.hop_count, max_link_loss: quality.max_link_loss(), link_rate_bps }
}

/// A control packet as a node received it.
pub(crate) struct Heard<'a> {
    pub node: NodeId,
    pub from: NodeId,
    pub rx_power_mw: f64,
    pub bytes: &'a [u8],
}

/// Every node's engine and what the simulator keeps for them.
pub struct Dynamic {
    engines: Vec<Box<dyn RoutingEngine>>,
    /// Data packets an engine holds while it discovers a route, by (node, id).
    held: HashMap<(NodeId, u64), Packet>,
    timer_at: Vec<Option<Instant>>,
    timer_gen: Vec<u64>,
    next_id: u64,
    /// Route events not yet turned into transport notices, with their time
    /// and node (ELFN's plumbing).
    pub(crate) events: Vec<(Instant, NodeId, RouteEvent)>,
    /// Control packets go ahead of data in the interface queue (ns-2's CMU
    /// priority queue, which the documents' ns-2 runs used).
    pub control_priority: bool,
    /// An engine heard a control packet, fired a timer, lost a link, was
    /// told of an unresponsive peer or reported an event since the last
    /// [`Dynamic::take_path_changed`]: its routes or link qualities may
    /// have changed.
    path_changed: bool,
    /// The flows' paths, told every decision carried out for their data
    /// while a run is recorded ([`crate::record`]); `None` otherwise.
    pub(crate) paths: Option<Box<crate::record::PathRecorder>>,
}

impl Dynamic {
    pub fn new(engines: Vec<Box<dyn RoutingEngine>>) -> Self {
        let n = engines.len();
        Dynamic {
            engines,
            held: HashMap::new(),
            timer_at: vec![None; n],
            timer_gen: vec![0; n],
            next_id: 1,
            events: Vec::new(),
            control_priority: true,
            path_changed: false,
            paths: None,
        }
    }

    pub fn engine(&self, node: NodeId) -> &dyn RoutingEngine {
        &*self.engines[node as usize]
    }

    /// Lets every engine start (first HELLOs, timers).
    pub(crate) fn start(&mut self, net: &mut Net, stats: &mut NetStats, now: Instant) {
        for node in 0..self.engines.len() as NodeId {
            self.flush(net, stats, now, node);
        }
    }

    /// What `node`'s engine knows of its route to `dst` (seed 004 §III.B).
    pub(crate) fn path_info(&self, node: NodeId, dst: NodeId) -> Option<PathQuality> {
        self.engines[node as usize].path_info(dst)
    }

    /// Whether any engine's routes or link qualities may have changed since
    /// the last call (then path information is worth reading again).
    pub(crate) fn take_path_changed(&mut self) -> bool {
        std::mem::take(&mut self.path_changed)
    }

    /// A transport at `node` says `peer` stopped answering (MTL's transport
    /// module to its routing module, seed 004 §III.B).
    pub(crate) fn peer_unresponsive(
        &mut self,
        net: &mut Net,
        stats: &mut NetStats,
        now: Instant,
        node: NodeId,
        peer: NodeId,
    ) {
        self.engines[node as usize].peer_unresponsive(now, peer);
        self.path_changed = true;
        self.flush(net, stats, now, node);
    }

    /// A data packet at `node` (its source or a forwarder): where it goes.
    pub(crate) fn route(
        &mut self,
        net: &mut Net,
        stats: &mut NetStats,
        now: Instant,
        node: NodeId,
        mut pkt: Packet,
    ) -> Routed {
        if pkt.id == 0 {
            pkt.id = self.next_id;
            self.next_id += 1;
        }
        let decision = self.engines[node as usize].route(
            now,
            DataPacket { id: pkt.id, src: pkt.src, dst: pkt.dst, prev_hop: pkt.prev_hop, header: &pkt.routing_header },
        );
        if let Some(paths) = &mut self.paths {
            let next_hop = match &decision {
                Decision::Forward { next_hop, .. } => Some(*next_hop),
                Decision::Hold | Decision::Drop(_) => None,
            };
            paths.decided(now, node, &pkt, next_hop);
        }
        let routed = match decision {
            Decision::Forward { next_hop, header } => match forward(net, now, node, pkt, next_hop, header) {
                true => Routed::Queued,
                false => Routed::Dropped,
            },
            Decision::Hold => {
                stats.held(now, node, &pkt);
                self.held.insert((node, pkt.id), pkt);
                Routed::Held
            }
            Decision::Drop(reason) => {
                stats.lost(node, &pkt, loss(reason));
                Routed::Dropped
            }
        };
        self.flush(net, stats, now, node);
        routed
    }

    /// A control packet reached `frame.node` from `frame.from`.
    pub(crate) fn control(&mut self, net: &mut Net, stats: &mut NetStats, now: Instant, frame: Heard<'_>) {
        let Heard { node, from, rx_power_mw, bytes } = frame;
        self.engines[node as usize].handle_control(now, from, mw_to_dbm(rx_power_mw), bytes);
        self.path_changed = true;
        self.flush(net, stats, now, node);
    }

    /// Any frame from `from` was heard at `node`.
    pub(crate) fn heard(&mut self, now: Instant, node: NodeId, from: NodeId, rx_power_mw: f64) {
        self.engines[node as usize].on_frame_heard(now, from, mw_to_dbm(rx_power_mw));
    }

    /// `node`'s MAC gave up on `pkt` (retry limit): the link to its next hop
    /// broke. While the engine hears of it, a data packet is held under its
    /// id, so that the engine may salvage it (`RouteEvent::Release`, DSR's
    /// packet salvaging); one it does not release is lost.
    pub(crate) fn link_failed(&mut self, net: &mut Net, stats: &mut NetStats, now: Instant, node: NodeId, pkt: Packet) {
        stats.nodes[node as usize].link_failures += 1;
        let key = (node, pkt.id);
        let neighbour = pkt.next_hop;
        if let Some(paths) = &mut self.paths {
            paths.link_broke(now, node, neighbour);
        }
        if !pkt.control && pkt.id != 0 {
            self.held.insert(key, pkt);
        }
        self.engines[node as usize].on_link_failure(now, neighbour);
        self.path_changed = true;
        self.flush(net, stats, now, node);
        if let Some(pkt) = self.held.remove(&key) {
            stats.lost(node, &pkt, Loss::RetryLimit);
        }
    }

    /// `node`'s timer event of generation `gen` fired.
    pub(crate) fn timer(&mut self, net: &mut Net, stats: &mut NetStats, now: Instant, node: NodeId, gen: u64) {
        if gen != self.timer_gen[node as usize] {
            return;
        }
        self.timer_at[node as usize] = None;
        if self.engines[node as usize].poll_timeout().is_some_and(|t| t <= now) {
            self.engines[node as usize].handle_timeout(now);
            self.path_changed = true;
        }
        self.flush(net, stats, now, node);
    }

    /// Carries out what `node`'s engine asks for: control packets, held
    /// packets released or dropped, events, its next timer.
    fn flush(&mut self, net: &mut Net, stats: &mut NetStats, now: Instant, node: NodeId) {
        let c = &mut stats.nodes[node as usize];
        while let Some(tx) = self.engines[node as usize].poll_transmit(now) {
            c.control_packets_sent += 1;
            c.control_bytes_sent += tx.bytes.len() as u64;
            let (addr, dst) = match tx.dest {
                Dest::Broadcast => (Addr::Broadcast, node),
                Dest::Unicast(to) => (Addr::Unicast(to), to),
            };
            let mut pkt = Packet::data(
                node,
                dst,
                CONTROL_FLOW,
                0,
                crate::scenario::IP_UDP_HEADER_BYTES + tx.bytes.len() as u32,
                now,
                tx.bytes,
            );
            pkt.control = true;
            pkt.priority = self.control_priority;
            pkt.next_hop = dst;
            net.enqueue(now, node, addr, pkt);
        }
        while let Some(ev) = self.engines[node as usize].poll_event() {
            self.path_changed = true;
            match &ev {
                RouteEvent::Release { id, next_hop, header } => {
                    if let Some(pkt) = self.held.remove(&(node, *id)) {
                        stats.released(now, node, &pkt);
                        if let Some(paths) = &mut self.paths {
                            paths.decided(now, node, &pkt, Some(*next_hop));
                        }
                        forward(net, now, node, pkt, *next_hop, header.clone());
                    }
                }
                RouteEvent::DropHeld { id, reason } => {
                    if let Some(pkt) = self.held.remove(&(node, *id)) {
                        let still_held = self.held.iter().any(|(&(n, _), p)| n == node && p.dst == pkt.dst);
                        stats.dropped_held(node, &pkt, loss(*reason), still_held);
                    }
                }
                RouteEvent::Found { .. } | RouteEvent::Changed { .. } => stats.nodes[node as usize].route_changes += 1,
                RouteEvent::Lost { .. } => stats.nodes[node as usize].routes_lost += 1,
                RouteEvent::LinkBroken { .. } => {}
            }
            self.events.push((now, node, ev));
        }
        let want = self.engines[node as usize].poll_timeout().map(|t| t.max(now));
        if let Some(at) = want {
            if want != self.timer_at[node as usize] {
                self.timer_at[node as usize] = want;
                self.timer_gen[node as usize] += 1;
                let id = crate::timers::host_timer(self.engines.len(), crate::timers::HostTimer::Routing { node });
                net.set_timer(id, at, SimEvent::RoutingTimer { node, gen: self.timer_gen[node as usize] });
            }
        }
    }
}

/// Sends a data packet to `next_hop`, with a new routing header if given
/// (its bytes count in the packet's size, hence in airtime).
fn forward(
    net: &mut Net,
    now: Instant,
    node: NodeId,
    mut pkt: Packet,
    next_hop: NodeId,
    header: Option<Vec<u8>>,
) -> bool {
    if let Some(h) = header {
        pkt.size_bytes = pkt.size_bytes - pkt.routing_header.len() as u32 + h.len() as u32;
        pkt.routing_header = h.into_boxed_slice();
    }
    pkt.next_hop = next_hop;
    net.enqueue(now, node, Addr::Unicast(next_hop), pkt)
}

/// The network layer's loss cause of a routing drop (one mapping for the simulator
/// and the routing daemon).
pub fn loss(reason: DropReason) -> Loss {
    match reason {
        DropReason::NoRoute => Loss::NoRoute,
        DropReason::DiscoveryTimeout => Loss::DiscoveryTimeout,
        DropReason::BufferOverflow => Loss::DiscoveryOverflow,
        // A peer labelled inaccessible has no usable route for this node's
        // data (seed 004 §III.B): counted with the no-route drops.
        DropReason::PeerInaccessible => Loss::NoRoute,
    }
}

fn mw_to_dbm(mw: f64) -> f64 {
    meshbed_radio::propagation::mw_to_dbm(mw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;
    use meshbed_routing::{PathQuality, RoutingStats, Transmit};
    use std::cell::RefCell;
    use std::rc::Rc;

    /// Who was told which peer stopped answering, and when.
    type Told = Rc<RefCell<Vec<(Instant, NodeId, NodeId)>>>;

    /// An engine that knows a one-hop route to every other node and
    /// records what it is told of unresponsive peers.
    struct Recorder {
        node: NodeId,
        told: Told,
        stats: RoutingStats,
    }

    impl RoutingEngine for Recorder {
        fn node(&self) -> NodeId {
            self.node
        }
        fn handle_control(&mut self, _: Instant, _: NodeId, _: f64, _: &[u8]) {}
        fn handle_timeout(&mut self, _: Instant) {}
        fn route(&mut self, _: Instant, packet: DataPacket<'_>) -> Decision {
            Decision::Forward { next_hop: packet.dst, header: None }
        }
        fn on_link_failure(&mut self, _: Instant, _: NodeId) {}
        fn poll_transmit(&mut self, _: Instant) -> Option<Transmit> {
            None
        }
        fn poll_timeout(&self) -> Option<Instant> {
            None
        }
        fn poll_event(&mut self) -> Option<RouteEvent> {
            None
        }
        fn stats(&self) -> &RoutingStats {
            &self.stats
        }
        fn path_info(&self, dst: NodeId) -> Option<PathQuality> {
            (dst != self.node).then(|| PathQuality::unmeasured(1))
        }
        fn peer_unresponsive(&mut self, now: Instant, peer: NodeId) {
            self.told.borrow_mut().push((now, self.node, peer));
        }
    }

    #[test]
    fn an_unresponsive_peer_reaches_the_nodes_routing_and_path_info_is_read_again() {
        let (medium, _) =
            crate::build_network::<crate::Packet>(&Scenario::chain(2, 200.0, 1.0), false).expect("a valid chain");
        let mut net: Net = crate::Network::new(medium, &[]);
        let mut stats = NetStats::new(3, 1);
        let told = Told::default();
        let engines = (0..3)
            .map(|node| {
                Box::new(Recorder { node, told: told.clone(), stats: RoutingStats::default() })
                    as Box<dyn RoutingEngine>
            })
            .collect();
        let mut d = Dynamic::new(engines);
        assert!(!d.take_path_changed());
        let now = Instant::ZERO + meshbed_core::Duration::from_secs(3);
        d.peer_unresponsive(&mut net, &mut stats, now, 2, 0);
        assert_eq!(*told.borrow(), vec![(now, 2, 0)]);
        // Told once, read once.
        assert!(d.take_path_changed());
        assert!(!d.take_path_changed());
        assert_eq!(d.path_info(2, 0), Some(PathQuality::unmeasured(1)));
        assert_eq!(d.path_info(1, 1), None);
    }
}
