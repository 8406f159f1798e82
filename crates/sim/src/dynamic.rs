//! Routing that reacts: the simulator's side of `meshbed_routing`'s engines
//! (issue 11 §2, §3). One engine per node; this module carries out what
//! they ask — control packets through the same 802.11 medium as data (so
//! they contend and can be lost), their timers, held packets and their
//! release — and feeds them what the medium reports: control packets with
//! their received power, every frame heard, and a frame that reached the
//! MAC's retry limit (a link failure; the packet is then offered to routing
//! again, which may salvage it). The rules themselves live in the engines.

use crate::net_stats::{Loss, NetStats};
use crate::{Net, Packet, Routed, SimEvent};
use meshbed_core::Instant;
use meshbed_radio::{Addr, NodeId};
use meshbed_routing::{DataPacket, Decision, Dest, DropReason, RouteEvent, RoutingEngine};
use std::collections::HashMap;

/// The flow number control packets carry (they belong to no flow).
pub const CONTROL_FLOW: u32 = u32::MAX;

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
        if !pkt.control && pkt.id != 0 {
            self.held.insert(key, pkt);
        }
        self.engines[node as usize].on_link_failure(now, neighbour);
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
            match &ev {
                RouteEvent::Release { id, next_hop, header } => {
                    if let Some(pkt) = self.held.remove(&(node, *id)) {
                        stats.released(now, node, &pkt);
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
                net.schedule(at, SimEvent::RoutingTimer { node, gen: self.timer_gen[node as usize] });
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
        pkt.routing_header = h;
    }
    pkt.next_hop = next_hop;
    net.enqueue(now, node, Addr::Unicast(next_hop), pkt)
}

fn loss(reason: DropReason) -> Loss {
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
