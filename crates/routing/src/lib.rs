//! MANET routing as sans-IO engines (issue 11 §2), like the transports'
//! `meshbed_proto::Engine` (STYLE.md "Sans-IO protocol engines"): no
//! sockets, no clock, no simulator types. A driver — the simulator today,
//! an emulator daemon later — feeds an engine what its node hears and what
//! its MAC reports, asks it where each data packet goes, and carries out
//! what it asks for:
//!
//! * control packets in ([`RoutingEngine::handle_control`], with the
//!   received signal strength) and out ([`RoutingEngine::poll_transmit`]:
//!   broadcast or unicast to a neighbour; they cross the same medium as data,
//!   so they contend and can be lost);
//! * timers ([`RoutingEngine::poll_timeout`], [`RoutingEngine::handle_timeout`]);
//! * a decision per data packet ([`RoutingEngine::route`]): forward to a
//!   next hop (with a routing header to carry, for source routing), hold
//!   while a route is discovered (the driver keeps the bytes, the engine the
//!   decision: held packets come back as [`RouteEvent::Release`] or
//!   [`RouteEvent::DropHeld`]), or drop with a [`DropReason`];
//! * MAC feedback: a frame that reached the retry limit is a link break
//!   ([`RoutingEngine::on_link_failure`]); every frame heard carries its
//!   signal strength ([`RoutingEngine::on_frame_heard`]);
//! * events out ([`RoutingEngine::poll_event`]): route found, changed, lost,
//!   link broken — the plumbing of link-failure notification (ELFN);
//! * cross-layer exchange with a transport on the same node (MTL, seed 004
//!   §III.A–B): the quality of the path to a peer out
//!   ([`RoutingEngine::path_info`]), peers that stopped answering in
//!   ([`RoutingEngine::peer_unresponsive`]).

#![forbid(unsafe_code)]

pub mod aodv;
mod common;
pub mod dsr;
pub mod harness;
pub mod olsr;

pub use aodv::{Aodv, AodvConfig};
pub use dsr::{Dsr, DsrConfig};
use meshbed_core::Instant;
pub use olsr::{OlsrConfig, OlsrEngine};

pub type NodeId = u32;

/// The random stream of the routing engine at `node` in a run with `seed`
/// (one stream per component: another node's engine, or any other part of
/// the run, never shifts its draws). Every driver and test builds engines
/// with it.
pub fn node_rng(seed: u64, node: NodeId) -> meshbed_core::rng::StreamRng {
    meshbed_core::stream_rng(seed, meshbed_core::StreamId::new(meshbed_core::StreamKind::Routing, u64::from(node)))
}

/// Where a control packet goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Dest {
    /// Every neighbour in range (no ACK, no retries).
    Broadcast,
    /// One neighbour (acknowledged, retried; a failure comes back as
    /// [`RoutingEngine::on_link_failure`]).
    Unicast(NodeId),
}

/// A control packet the engine wants sent: its destination and its bytes
/// (each protocol's own wire format; the bytes count in airtime).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    pub dest: Dest,
    pub bytes: Vec<u8>,
}

/// A data packet as routing sees it.
#[derive(Copy, Clone, Debug)]
pub struct DataPacket<'a> {
    /// The driver's handle for this packet, echoed in
    /// [`RouteEvent::Release`]/[`RouteEvent::DropHeld`] if it is held.
    pub id: u64,
    pub src: NodeId,
    pub dst: NodeId,
    /// The neighbour it came from (`None` at its source).
    pub prev_hop: Option<NodeId>,
    /// The routing header it carries (empty when the protocol adds none).
    pub header: &'a [u8],
}

/// What happens to a data packet at this node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Send it to `next_hop`; with `header`, replace the packet's routing
    /// header (a source route, salvaged or first attached).
    Forward { next_hop: NodeId, header: Option<Vec<u8>> },
    /// Keep it while a route is discovered; the engine will release or
    /// drop it (by id) through its events.
    Hold,
    /// Drop it.
    Drop(DropReason),
}

/// Why a data packet was dropped by routing.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// No route and the protocol does not discover one (proactive), or
    /// discovery gave up.
    NoRoute,
    /// Held longer than the discovery buffer allows.
    DiscoveryTimeout,
    /// The discovery buffer was full.
    BufferOverflow,
    /// The destination is labelled inaccessible for data exchange: the
    /// transport said it stopped answering and no message of its own has
    /// validated it since (seed 004 §III.B).
    PeerInaccessible,
}

/// What an engine reports.
#[derive(Clone, Debug, PartialEq)]
pub enum RouteEvent {
    /// A route to `dst` became usable (first time, or again after a loss).
    Found { dst: NodeId, next_hop: NodeId, hop_count: u32 },
    /// The route to `dst` now goes through another next hop.
    Changed { dst: NodeId, next_hop: NodeId, hop_count: u32 },
    /// The route to `dst` is gone.
    Lost { dst: NodeId },
    /// The link to `neighbour` broke (MAC retry limit, missed HELLOs).
    LinkBroken { neighbour: NodeId },
    /// A held packet can go now.
    Release { id: u64, next_hop: NodeId, header: Option<Vec<u8>> },
    /// A held packet is dropped.
    DropHeld { id: u64, reason: DropReason },
}

/// Counters every engine keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RoutingStats {
    pub control_packets_sent: u64,
    pub control_bytes_sent: u64,
    pub control_packets_received: u64,
    /// Control packets ignored (malformed, or from a neighbour filtered out).
    pub control_packets_ignored: u64,
    pub route_discoveries: u64,
    pub link_failures: u64,
}

/// What routing knows of its current route to a destination (seed 004
/// §III.B–C): its length and the ETX of each of its links, from this node
/// to the destination.
#[derive(Clone, Debug, PartialEq)]
pub struct PathQuality {
    /// Links on the route.
    pub hop_count: u32,
    /// ETX of each link in route order (1 is a loss-free link; engines that
    /// do not measure link quality report 1 for every link).
    pub link_etx: Vec<f64>,
}

impl PathQuality {
    /// A route of `hop_count` links whose quality is not measured (ETX 1 each).
    pub fn unmeasured(hop_count: u32) -> Self {
        PathQuality { hop_count, link_etx: vec![1.0; hop_count as usize] }
    }

    /// P_max, the loss probability of the route's worst link: the maximum
    /// over its links of p_link = 1 − 1/ETX (seed 004 eqs. 2–4); 0 for a
    /// route of loss-free links.
    pub fn max_link_loss(&self) -> f64 {
        self.link_etx.iter().map(|&etx| 1.0 - 1.0 / etx.max(1.0)).fold(0.0, f64::max)
    }
}

/// A routing protocol at one node.
pub trait RoutingEngine {
    /// The node this engine runs on.
    fn node(&self) -> NodeId;
    /// A control packet from neighbour `from`, received at `rx_power_dbm`.
    fn handle_control(&mut self, now: Instant, from: NodeId, rx_power_dbm: f64, bytes: &[u8]);
    /// The deadline of [`RoutingEngine::poll_timeout`] has passed.
    fn handle_timeout(&mut self, now: Instant);
    /// Where a data packet goes next from this node (its source or a forwarder).
    fn route(&mut self, now: Instant, packet: DataPacket<'_>) -> Decision;
    /// The MAC gave up on a frame to `neighbour`. If it carried a data
    /// packet, the driver holds that packet under its id during this call:
    /// the engine may salvage it with [`RouteEvent::Release`] among its
    /// events; a packet it does not release is lost.
    fn on_link_failure(&mut self, now: Instant, neighbour: NodeId);
    /// Any frame from `neighbour` was heard at `rx_power_dbm` (data included).
    fn on_frame_heard(&mut self, _now: Instant, _neighbour: NodeId, _rx_power_dbm: f64) {}
    /// The next control packet to send, if any.
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit>;
    /// When [`RoutingEngine::handle_timeout`] is next due.
    fn poll_timeout(&self) -> Option<Instant>;
    /// The next event, if any.
    fn poll_event(&mut self) -> Option<RouteEvent>;
    fn stats(&self) -> &RoutingStats;
    /// The quality of the current route to `dst` (MTL's routing module hands
    /// it to the transport module, seed 004 §III.B); `None` without a route.
    /// The default knows no route: engines that keep a routing table
    /// override it.
    fn path_info(&self, _dst: NodeId) -> Option<PathQuality> {
        None
    }
    /// A transport on this node says `peer` stopped answering (seed 004
    /// §III.B): the engine may label it inaccessible for data exchange
    /// until its own control messages settle whether it is still part of
    /// the network. The default ignores it.
    fn peer_unresponsive(&mut self, _now: Instant, _peer: NodeId) {}
}
