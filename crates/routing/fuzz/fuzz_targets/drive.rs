//! What the `control_packets` fuzz target does with one input; shared with
//! `tests/fuzz_corpus.rs`, which replays the seed corpus through it.
//!
//! 1. The whole input is one control packet of each protocol: AODV's
//!    `Message::parse`, DSR's `Control::parse` and `SourceRoute::parse`,
//!    OLSR's `Packet::parse`. What parses must emit back to bytes that parse
//!    to the same value (DSR's format has no spare bits: to the same bytes).
//! 2. The input is also a script for five engines of one protocol on the
//!    harness's toy network (`meshbed_routing::harness::Net`). Byte 0 picks
//!    the protocol (`b % 4`: AODV, DSR, OLSR, OLSR-ETX), the topology
//!    (`b / 4 % 4`: a chain, a star around node 0, a full mesh, a chain with
//!    a shortcut 0 – 3) and, in bit 4, a variant configuration (AODV with a
//!    signal-strength filter, the expanding ring search and HELLOs instead
//!    of link-layer feedback; DSR with small tables and no replies from the
//!    cache; OLSR with link-layer notification and pure flooding). Then each
//!    op is one byte `op` followed by a big-endian `u16` and, for the packet
//!    ops, that many bytes:
//!    * `op % 8 == 0`: the bytes as a control packet to node `op / 8 % 5`
//!      from `op / 40 % 6` (5 stands for a node outside the network; a node
//!      never hears itself, so "from itself" is from it too);
//!    * `1`: the same, but if the bytes parse as the protocol's packet its
//!      node ids are first folded into 0..=5, so forged packets name real
//!      nodes;
//!    * `2`: time advances by `u16` ms (the script ends after 300 s);
//!    * `3`: a data packet from `u16 % 5` to `u16 / 5 % 5`;
//!    * `4`: a data packet arriving at node `op / 8 % 5` from `op / 40 % 6`
//!      with the bytes `[src, dst, routing header…]`;
//!    * `5`: the link between `u16 % 5` and `u16 / 5 % 5` goes up (`u16 / 25`
//!      odd) or down;
//!    * `6`: the signal strength `u16 % 5` hears from `u16 / 5 % 5` becomes
//!      `-100 + (u16 >> 8) / 2` dBm;
//!    * `7`: node `u16 % 5` is told, by `u16 / 5 % 4`: its MAC gave up on a
//!      frame to `u16 / 20 % 6`, a transport says that node stopped
//!      answering, or a frame from it was heard.
//!
//! Oracles besides "no panic", checked on every decision, every control
//! packet and every event the engines make and on their tables after every
//! op: what an engine sends parses as its protocol's packet and is never
//! unicast to itself; no data packet, release or route goes to the node
//! itself as next hop; a DSR header the engine writes parses, names the
//! node and the next hop after it; DSR's cached paths start at the node,
//! end at the destination and visit no node twice; a path's quality has one
//! ETX ≥ 1 per hop; a deadline that is due moves on.

#![allow(dead_code)]

use meshbed_core::{Duration, Instant};
use meshbed_routing::harness::{Fate, Net};
use meshbed_routing::{
    aodv, dsr, node_rng, olsr, Aodv, AodvConfig, DataPacket, Decision, Dest, Dsr, DsrConfig, NodeId, OlsrConfig,
    OlsrEngine, PathQuality, RouteEvent, RoutingEngine, RoutingStats, Transmit,
};

/// Nodes in the toy network; id `NODES` is a node outside it.
pub const NODES: u32 = 5;
const SEED: u64 = 11;
const MAX_OPS: usize = 400;
/// Simulated time a script may take: a few OLSR hold times, enough to
/// converge, break, repair and expire; more only slows the fuzzer down.
const MAX_SIMULATED: Duration = Duration::from_secs(300);

/// The four engines the target drives.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Aodv,
    Dsr,
    Olsr,
    OlsrEtx,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Aodv, Kind::Dsr, Kind::Olsr, Kind::OlsrEtx];
}

/// What one input did, for the replay test.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub kind: Option<Kind>,
    /// Data packets the script sent from a source, and how many arrived.
    pub sent: usize,
    pub delivered: usize,
    /// Control packets every engine sent.
    pub control_sent: u64,
}

/// Part 1: the parsers and their round trips; how many parsed.
pub fn parse_all(bytes: &[u8]) -> usize {
    let mut parsed = 0;
    if let Ok(m) = aodv::Message::parse(bytes) {
        parsed += 1;
        assert_eq!(aodv::Message::parse(&m.emit()).as_ref(), Ok(&m), "AODV: emit does not parse back");
    }
    if let Ok(c) = dsr::Control::parse(bytes) {
        parsed += 1;
        assert_eq!(c.emit(), bytes, "DSR: emit differs from the bytes parsed");
        assert_eq!(c.buffer_len(), bytes.len(), "DSR: buffer_len");
    }
    if let Ok(r) = dsr::SourceRoute::parse(bytes) {
        parsed += 1;
        assert_eq!(r.emit(), bytes, "DSR source route: emit differs from the bytes parsed");
        assert_eq!(r.buffer_len(), bytes.len(), "DSR source route: buffer_len");
    }
    if let Ok(p) = olsr::Packet::parse(bytes) {
        parsed += 1;
        assert_eq!(olsr::Packet::parse(&p.emit()).as_ref(), Ok(&p), "OLSR: emit does not parse back");
    }
    parsed
}

/// One node's engine (five at a time: their sizes do not matter).
#[allow(clippy::large_enum_variant)]
pub enum Engine {
    Aodv(Aodv),
    Dsr(Dsr),
    Olsr(OlsrEngine),
}

/// An engine whose every output is checked (the oracles above).
pub struct Checked {
    engine: Engine,
    node: NodeId,
    /// The instant of the last `handle_timeout` and how often it ran then.
    timeouts_at: (Instant, u32),
}

impl Checked {
    fn new(kind: Kind, variant: bool, node: NodeId) -> Checked {
        let rng = node_rng(SEED, node);
        let engine = match kind {
            Kind::Aodv => {
                let mut c = AodvConfig::default();
                if variant {
                    c.ss_threshold_dbm = Some(-75.0);
                    c.expanding_ring_search = true;
                    c.link_layer_feedback = false;
                }
                Engine::Aodv(Aodv::new(node, c, rng))
            }
            Kind::Dsr => {
                let mut c = DsrConfig::default();
                if variant {
                    c.route_cache_size = 4;
                    c.send_buffer_size = 3;
                    c.request_table_size = 2;
                    c.request_table_ids = 2;
                    c.reply_from_cache = false;
                }
                Engine::Dsr(Dsr::new(node, c, rng))
            }
            Kind::Olsr | Kind::OlsrEtx => {
                let mut c = if kind == Kind::OlsrEtx { OlsrConfig::etx() } else { OlsrConfig::default() };
                if variant {
                    c.link_layer_notification = true;
                    c.mpr_flooding = false;
                }
                Engine::Olsr(OlsrEngine::new(node, c, rng))
            }
        };
        Checked { engine, node, timeouts_at: (Instant::ZERO, 0) }
    }

    fn inner(&self) -> &dyn RoutingEngine {
        match &self.engine {
            Engine::Aodv(e) => e,
            Engine::Dsr(e) => e,
            Engine::Olsr(e) => e,
        }
    }

    fn inner_mut(&mut self) -> &mut dyn RoutingEngine {
        match &mut self.engine {
            Engine::Aodv(e) => e,
            Engine::Dsr(e) => e,
            Engine::Olsr(e) => e,
        }
    }

    /// A next hop the engine chose: never this node.
    fn check_next_hop(&self, next_hop: NodeId, what: &str) {
        assert_ne!(next_hop, self.node, "node {}: {what} to itself", self.node);
    }

    /// A DSR header the engine wrote: a source route through this node, the
    /// next hop after it.
    fn check_header(&self, header: &Option<Vec<u8>>, next_hop: NodeId) {
        if let (Engine::Dsr(_), Some(h)) = (&self.engine, header) {
            let route = dsr::SourceRoute::parse(h).expect("a DSR header the engine wrote parses");
            let at = route.path.iter().position(|&n| n == self.node).expect("the header names this node");
            assert_eq!(route.path.get(at + 1), Some(&next_hop), "the next hop follows this node in its header");
        }
    }

    /// The tables, read through each engine's own inspection methods.
    fn check_tables(&self, now: Instant) {
        for dst in 0..=NODES + 1 {
            if let Some(q) = self.inner().path_info(dst) {
                check_path_quality(&q);
            }
        }
        match &self.engine {
            Engine::Aodv(e) => {
                for dst in 0..=NODES + 1 {
                    if let Some((next_hop, _)) = e.route_to(dst) {
                        self.check_next_hop(next_hop, "an AODV route");
                    }
                }
            }
            Engine::Dsr(e) => {
                for dst in 0..=NODES + 1 {
                    let Some(path) = e.cached_route(now, dst) else { continue };
                    assert_eq!(path.first(), Some(&self.node), "a cached path starts here: {path:?}");
                    assert_eq!(path.last(), Some(&dst), "a cached path ends at its destination: {path:?}");
                    assert!(path.len() >= 2 && path.len() <= dsr::MAX_ROUTE_LEN, "{path:?}");
                    let mut sorted = path.clone();
                    sorted.sort_unstable();
                    sorted.dedup();
                    assert_eq!(sorted.len(), path.len(), "a cached path visits a node twice: {path:?}");
                }
            }
            Engine::Olsr(e) => {
                for (&dst, route) in &e.routes() {
                    assert_ne!(dst, self.node, "an OLSR route to itself");
                    self.check_next_hop(route.next_hop, "an OLSR route");
                    assert!(route.hop_count >= 1, "{route:?}");
                }
                assert!(!e.mpr_set().contains(&self.node), "node {} is its own MPR", self.node);
                assert!(!e.symmetric_neighbours().contains(&self.node), "node {} is its own neighbour", self.node);
            }
        }
    }
}

fn check_path_quality(q: &PathQuality) {
    assert!(q.hop_count >= 1, "{q:?}");
    assert_eq!(q.link_etx.len(), q.hop_count as usize, "one ETX per link: {q:?}");
    assert!(q.link_etx.iter().all(|e| e.is_finite() && *e >= 1.0), "{q:?}");
    let loss = q.max_link_loss();
    assert!((0.0..1.0).contains(&loss), "{q:?}");
}

/// Whether `bytes` parse as `engine`'s protocol's control packet.
fn parses_as(engine: &Engine, bytes: &[u8]) -> bool {
    match engine {
        Engine::Aodv(_) => aodv::Message::parse(bytes).is_ok(),
        Engine::Dsr(_) => dsr::Control::parse(bytes).is_ok(),
        Engine::Olsr(_) => olsr::Packet::parse(bytes).is_ok(),
    }
}

impl RoutingEngine for Checked {
    fn node(&self) -> NodeId {
        self.node
    }
    fn handle_control(&mut self, now: Instant, from: NodeId, rx_power_dbm: f64, bytes: &[u8]) {
        self.inner_mut().handle_control(now, from, rx_power_dbm, bytes);
    }
    fn handle_timeout(&mut self, now: Instant) {
        if self.timeouts_at.0 == now {
            self.timeouts_at.1 += 1;
            assert!(self.timeouts_at.1 < 1000, "node {}: the deadline stays at {now:?}", self.node);
        } else {
            self.timeouts_at = (now, 1);
        }
        self.inner_mut().handle_timeout(now);
    }
    fn route(&mut self, now: Instant, packet: DataPacket<'_>) -> Decision {
        let decision = self.inner_mut().route(now, packet);
        if let Decision::Forward { next_hop, header } = &decision {
            self.check_next_hop(*next_hop, "a data packet forwarded");
            self.check_header(header, *next_hop);
        }
        decision
    }
    fn on_link_failure(&mut self, now: Instant, neighbour: NodeId) {
        self.inner_mut().on_link_failure(now, neighbour);
    }
    fn on_frame_heard(&mut self, now: Instant, neighbour: NodeId, rx_power_dbm: f64) {
        self.inner_mut().on_frame_heard(now, neighbour, rx_power_dbm);
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let t = self.inner_mut().poll_transmit(now)?;
        assert!(parses_as(&self.engine, &t.bytes), "node {}: sent a control packet that does not parse", self.node);
        if let Dest::Unicast(to) = t.dest {
            self.check_next_hop(to, "a control packet unicast");
        }
        Some(t)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.inner().poll_timeout()
    }
    fn poll_event(&mut self) -> Option<RouteEvent> {
        let event = self.inner_mut().poll_event()?;
        match &event {
            RouteEvent::Found { next_hop, hop_count, .. } | RouteEvent::Changed { next_hop, hop_count, .. } => {
                self.check_next_hop(*next_hop, "a route event");
                assert!(*hop_count >= 1, "{event:?}");
            }
            RouteEvent::Release { next_hop, header, .. } => {
                self.check_next_hop(*next_hop, "a held packet released");
                self.check_header(header, *next_hop);
            }
            _ => {}
        }
        Some(event)
    }
    fn stats(&self) -> &RoutingStats {
        self.inner().stats()
    }
    fn path_info(&self, dst: NodeId) -> Option<PathQuality> {
        self.inner().path_info(dst)
    }
    fn peer_unresponsive(&mut self, now: Instant, peer: NodeId) {
        self.inner_mut().peer_unresponsive(now, peer);
    }
}

/// A node id folded into the network (or the one outside it).
fn fold(id: NodeId) -> NodeId {
    id % (NODES + 1)
}

/// The bytes with every node id folded, if they parse as `kind`'s packet.
fn fold_ids(kind: Kind, bytes: &[u8]) -> Option<Vec<u8>> {
    let f = |v: &mut Vec<NodeId>| v.iter_mut().for_each(|n| *n = fold(*n));
    match kind {
        Kind::Aodv => {
            let mut m = aodv::Message::parse(bytes).ok()?;
            match &mut m {
                aodv::Message::Rreq(r) => (r.dest, r.orig) = (fold(r.dest), fold(r.orig)),
                aodv::Message::Rrep(r) => (r.dest, r.orig) = (fold(r.dest), fold(r.orig)),
                aodv::Message::Rerr(r) => r.unreachable.iter_mut().for_each(|(n, _)| *n = fold(*n)),
            }
            Some(m.emit())
        }
        Kind::Dsr => {
            let mut c = dsr::Control::parse(bytes).ok()?;
            match &mut c {
                dsr::Control::Rreq { initiator, target, record, .. } => {
                    (*initiator, *target) = (fold(*initiator), fold(*target));
                    f(record);
                }
                dsr::Control::Rrep { route } => f(route),
                dsr::Control::Rerr { error_source, unreachable, route } => {
                    (*error_source, *unreachable) = (fold(*error_source), fold(*unreachable));
                    f(route);
                }
            }
            Some(c.emit())
        }
        Kind::Olsr | Kind::OlsrEtx => {
            let mut p = olsr::Packet::parse(bytes).ok()?;
            for m in &mut p.messages {
                m.originator = fold(m.originator);
                match &mut m.body {
                    olsr::Body::Hello { neighbours, .. } => {
                        neighbours.iter_mut().for_each(|e| e.neighbour = fold(e.neighbour))
                    }
                    olsr::Body::Tc { advertised, .. } => advertised.iter_mut().for_each(|(n, _)| *n = fold(*n)),
                    olsr::Body::Probe { received } => received.iter_mut().for_each(|(n, _)| *n = fold(*n)),
                    olsr::Body::Unknown(_) => {}
                }
            }
            Some(p.emit())
        }
    }
}

fn topology(shape: u8) -> Vec<(NodeId, NodeId)> {
    let chain: Vec<_> = (1..NODES).map(|i| (i - 1, i)).collect();
    match shape % 4 {
        0 => chain,
        1 => (1..NODES).map(|i| (0, i)).collect(),
        2 => (0..NODES).flat_map(|a| (a + 1..NODES).map(move |b| (a, b))).collect(),
        _ => [chain, vec![(0, 3)]].concat(),
    }
}

/// Runs one input.
pub fn drive(data: &[u8]) -> Outcome {
    let _ = parse_all(data);
    let Some((&selector, mut rest)) = data.split_first() else {
        return Outcome::default();
    };
    let kind = Kind::ALL[usize::from(selector % 4)];
    let variant = selector & 16 != 0;
    let mut net = Net::new(NODES as usize, &topology(selector / 4), |node| Checked::new(kind, variant, node));
    let mut sent = Vec::new();
    let mut ops = 0;
    while rest.len() >= 3 && ops < MAX_OPS && net.now() < Instant::ZERO + MAX_SIMULATED {
        ops += 1;
        let op = rest[0];
        let arg = u32::from(u16::from_be_bytes([rest[1], rest[2]]));
        rest = &rest[3..];
        let mut take = || {
            let n = (arg as usize).min(rest.len());
            let (bytes, tail) = rest.split_at(n);
            rest = tail;
            bytes.to_vec()
        };
        let (a, b) = (arg % NODES, arg / NODES % NODES);
        // The packet ops' node and neighbour (never the node itself).
        let (to, from) = (u32::from(op / 8) % NODES, u32::from(op / 40) % (NODES + 1));
        let from = if from == to { NODES } else { from };
        match op % 8 {
            0 | 1 => {
                let mut bytes = take();
                if op % 8 == 1 {
                    bytes = fold_ids(kind, &bytes).unwrap_or(bytes);
                }
                net.with_engine(to, |e, now| e.handle_control(now, from, -60.0, &bytes));
            }
            2 => net.run_for(Duration::from_millis(u64::from(arg))),
            3 => {
                if b != a {
                    sent.push(net.send(a, b));
                }
            }
            4 => {
                let bytes = take();
                let (src, dst) = (fold(bytes.first().copied().unwrap_or(0).into()), bytes.get(1).copied().unwrap_or(0));
                let header = bytes.get(2..).unwrap_or(&[]).to_vec();
                net.arrive(src, fold(dst.into()) % NODES, to, from, header);
            }
            5 => {
                if a != b {
                    net.set_link(a, b, (arg / (NODES * NODES)) % 2 == 1);
                }
            }
            6 => {
                let dbm = -100.0 + f64::from(arg >> 8) / 2.0;
                net.rx_power_dbm[b as usize][a as usize] = dbm;
            }
            _ => {
                let other = arg / (NODES * 4) % (NODES + 1);
                let dbm = net.rx_power_dbm.get(other as usize).map_or(-90.0, |heard| heard[a as usize]);
                match arg / NODES % 4 {
                    0 | 1 => net.with_engine(a, |e, now| e.on_link_failure(now, other)),
                    2 => net.with_engine(a, |e, now| e.peer_unresponsive(now, other)),
                    _ => net.with_engine(a, |e, now| e.on_frame_heard(now, other, dbm)),
                }
            }
        }
        let now = net.now();
        for e in &net.engines {
            e.check_tables(now);
        }
    }
    let delivered = sent.iter().filter(|id| matches!(net.fate(**id), Fate::Delivered { .. })).count();
    Outcome { kind: Some(kind), sent: sent.len(), delivered, control_sent: net.control_sent.iter().sum() }
}
