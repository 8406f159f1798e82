//! OLSR (RFC 3626) as a sans-IO [`RoutingEngine`], with hop count or the
//! ETX metric of seed 004 §III.B (eq. 1) for route computation.
//!
//! What it keeps (RFC 3626 §4): the link set (link sensing with HELLO,
//! §7), the 2-hop neighbour set (§8.2), the MPR set (§8.3.1 heuristic) and
//! the MPR selector set (§8.4), the topology set learnt from TC messages
//! flooded through MPRs (§9, §3.4 with its duplicate set), and a routing
//! table computed from all of them (§10; here Dijkstra so that summed ETX
//! works as well as hop count).
//!
//! ETX (seed 004 §III.B; De Couto et al., seed 004 ref. [3]): every node
//! broadcasts a probe every `probe_interval`; a probe carries how many
//! probes its sender received from each neighbour in the last `window`.
//! The reverse delivery ratio d_r of a link is what this node received from
//! the neighbour, the forward ratio d_f what the neighbour reports it
//! received from us; link ETX = 1 / (d_f · d_r), a route's metric is the sum
//! over its links. ETX travels in HELLOs (per neighbour) and TCs (per
//! advertised link), as olsrd's link-quality extension carries it.
//!
//! MPR selection stays hop based (§8.3.1) with either metric: MPRs exist to
//! cut flooding, and the hop-based heuristic keeps its guarantee (every
//! 2-hop neighbour reached through an MPR). With ETX the TC advertises every
//! symmetric neighbour (TC_REDUNDANCY 2, RFC 3626 §15.1), not only the MPR
//! selectors, so that every node knows the ETX of every link and Dijkstra
//! can find the best-ETX path, which need not run through MPRs.
//!
//! MTL's routing module (seed 004 §III.B) is this engine with ETX: it hands
//! the transport the hop count and the link ETX of a route
//! ([`RoutingEngine::path_info`], walking the route back from the
//! destination through the last link Dijkstra chose, so the first hop's ETX
//! comes from this node's link set and the others' from the 2-hop and
//! topology sets, as HELLOs and TCs advertised them), and takes from it the
//! peers that stopped answering ([`RoutingEngine::peer_unresponsive`]). Such
//! a peer is labelled inaccessible: data this node originates for it is
//! dropped ([`DropReason::PeerInaccessible`]) until a HELLO or TC that the
//! peer originated arrives (it is still part of the network); if none
//! arrives within `top_hold_time` (the time a TC's information lasts), the
//! peer is taken to have left and is deleted from the routing table until
//! one does.
//!
//! Left out: multiple interfaces (MID), HNA, link hysteresis (§14; the
//! link-layer notification of §13 is in), the optional MPR optimisation
//! step, TCs sent early on a change (§9.3 allows them), forwarding of
//! unknown message types (§3.4: parsed and skipped), and signal strength
//! (heard, not used). One message per HELLO, TC or probe packet; forwarded
//! messages due together are piggybacked (§3.5).
//!
//! Driver order: after constructing, call [`RoutingEngine::poll_transmit`],
//! [`RoutingEngine::poll_event`] until `None` and arm a timer for
//! [`RoutingEngine::poll_timeout`]; after every `handle_*`/`on_*` call do
//! the same. `route` never holds: OLSR is proactive.

use crate::{
    DataPacket, Decision, Dest, DropReason, NodeId, PathQuality, RouteEvent, RoutingEngine, RoutingStats, Transmit,
};
use meshbed_core::{Duration, Instant, StreamRng};
use rand::Rng;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};

/// RFC 3626 §18.2.
pub const HELLO_INTERVAL: Duration = Duration::from_secs(2);
/// RFC 3626 §18.2.
pub const TC_INTERVAL: Duration = Duration::from_secs(5);
/// RFC 3626 §18.3: 3 × HELLO_INTERVAL.
pub const NEIGHB_HOLD_TIME: Duration = Duration::from_secs(6);
/// RFC 3626 §18.3: 3 × TC_INTERVAL.
pub const TOP_HOLD_TIME: Duration = Duration::from_secs(15);
/// RFC 3626 §18.3.
pub const DUP_HOLD_TIME: Duration = Duration::from_secs(30);
/// RFC 3626 §3.5/§18: MAXJITTER = HELLO_INTERVAL / 4.
pub const MAXJITTER: Duration = Duration::from_millis(500);
/// ETX probe period τ = 1 s (De Couto et al., seed 004 ref. [3]; seed 004
/// §III.B says "fixed time intervals" and leaves the value open).
pub const ETX_PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// ETX window w = 10 s (De Couto et al.; seed 004 §III.B's "last x
/// seconds").
pub const ETX_WINDOW: Duration = Duration::from_secs(10);
/// Probes are jittered by up to a tenth of their period so that
/// neighbours do not stay synchronised (De Couto et al. §4).
const ETX_PROBE_JITTER_DIVISOR: u64 = 10;

/// RFC 3626 §18.8.
pub const WILL_NEVER: u8 = 0;
pub const WILL_DEFAULT: u8 = 3;
pub const WILL_ALWAYS: u8 = 7;

/// RFC 3626 §18.5 link types.
const ASYM_LINK: u8 = 1;
const SYM_LINK: u8 = 2;
const LOST_LINK: u8 = 3;
/// RFC 3626 §18.6 neighbour types.
const NOT_NEIGH: u8 = 0;
const SYM_NEIGH: u8 = 1;
const MPR_NEIGH: u8 = 2;

/// RFC 3626 §18.4 message types; the probe takes a type outside the RFC's
/// range, as olsrd's link-quality messages do.
const HELLO_MESSAGE: u8 = 1;
const TC_MESSAGE: u8 = 2;
const PROBE_MESSAGE: u8 = 201;
/// RFC 3626 §3.3.2: TTL 255 for flooded messages, 1 for HELLO (§6.1).
const MAX_TTL: u8 = 255;

/// One unit of link cost is 1/256 ETX, so that hop count (256 per link)
/// and ETX share the same integer Dijkstra; also the wire's metric unit.
pub const METRIC_UNIT: u32 = 256;
/// A link metric that says "not usable" (ETX unknown or infinite).
const METRIC_INFINITE: u16 = u16::MAX;

/// How routes are weighted.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Metric {
    /// RFC 3626 §10: shortest path in hops.
    HopCount,
    /// Seed 004 §III.B: summed link ETX, measured with probes.
    Etx { probe_interval: Duration, window: Duration },
}

/// Protocol parameters (defaults from RFC 3626 §18).
#[derive(Clone, Debug)]
pub struct OlsrConfig {
    pub hello_interval: Duration,
    pub tc_interval: Duration,
    pub neighb_hold_time: Duration,
    pub top_hold_time: Duration,
    pub dup_hold_time: Duration,
    /// Each periodic message goes out `interval − U[0, max_jitter]` after
    /// the previous one (RFC 3626 §18, §3.5).
    pub max_jitter: Duration,
    /// RFC 3626 §18.8: WILL_NEVER … WILL_ALWAYS.
    pub willingness: u8,
    pub metric: Metric,
    /// `true`: TCs are retransmitted only by MPRs (RFC 3626 §3.4.1);
    /// `false`: by every node once (pure flooding, the baseline MPRs
    /// improve on).
    pub mpr_flooding: bool,
    /// RFC 3626 §13: use the MAC's link failures (a frame that reached the
    /// retry limit) to declare a link lost at once, for NEIGHB_HOLD_TIME.
    /// The RFC makes it optional and olsrd leaves it off; off by default
    /// here too: under load a busy link's retry-limit drops are not breaks,
    /// and holding a working link down for 6 s stalls every flow over it
    /// (docs/PROTOCOLS.md). Links are then lost when HELLOs stop.
    pub link_layer_notification: bool,
}

impl Default for OlsrConfig {
    fn default() -> Self {
        OlsrConfig {
            hello_interval: HELLO_INTERVAL,
            tc_interval: TC_INTERVAL,
            neighb_hold_time: NEIGHB_HOLD_TIME,
            top_hold_time: TOP_HOLD_TIME,
            dup_hold_time: DUP_HOLD_TIME,
            max_jitter: MAXJITTER,
            willingness: WILL_DEFAULT,
            metric: Metric::HopCount,
            mpr_flooding: true,
            link_layer_notification: false,
        }
    }
}

impl OlsrConfig {
    /// The defaults with the ETX metric at De Couto et al.'s probe period
    /// and window.
    pub fn etx() -> Self {
        OlsrConfig { metric: Metric::Etx { probe_interval: ETX_PROBE_INTERVAL, window: ETX_WINDOW }, ..Self::default() }
    }
}

// ---------------------------------------------------------------------------
// Wire format
// ---------------------------------------------------------------------------

/// Why a control packet was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("packet shorter than its header or its stated length")]
    Truncated,
    #[error("message size {0} is shorter than the message header or runs past the packet")]
    BadMessageSize(usize),
    #[error("message body of type {0} has a bad length")]
    BadBody(u8),
}

/// RFC 3626 §3.3: packet header = packet length (2) + sequence number (2).
const PACKET_HEADER_LEN: usize = 4;
/// RFC 3626 §3.3.2: type, vtime, size (2), originator (4 here: node ids,
/// not IPv4 addresses), TTL, hop count, message sequence number (2).
const MESSAGE_HEADER_LEN: usize = 12;
/// HELLO: reserved (2), htime, willingness (RFC 3626 §6.1), then a count
/// (2) of neighbour entries.
const HELLO_FIXED_LEN: usize = 6;
/// A HELLO neighbour entry: address (4), link code, link metric (2). A flat
/// list instead of the RFC's link-code groups: one entry per neighbour is
/// what olsrd's LQ HELLO carries too, and the metric rides along.
const HELLO_ENTRY_LEN: usize = 7;
/// TC: ANSN (2), reserved (2) (RFC 3626 §9.1).
const TC_FIXED_LEN: usize = 4;
/// A TC entry: advertised neighbour (4), link metric (2).
const TC_ENTRY_LEN: usize = 6;
/// A probe entry: neighbour (4), probes received from it in the window.
const PROBE_ENTRY_LEN: usize = 5;

/// RFC 3626 §18.3: the scaling constant C of validity times, 1/16 s.
const VTIME_C_NS: u64 = 62_500_000;

/// RFC 3626 §18.3: a time as mantissa a (high nibble) and exponent b (low
/// nibble), value = C·(1 + a/16)·2^b. Rounds down; saturates.
pub fn encode_vtime(t: Duration) -> u8 {
    let ratio = t.as_nanos() / VTIME_C_NS;
    if ratio == 0 {
        return 0;
    }
    let b = (63 - ratio.leading_zeros() as u64).min(15);
    let a = ((16 * t.as_nanos()) / (VTIME_C_NS << b)).saturating_sub(16).min(15);
    ((a as u8) << 4) | b as u8
}

pub fn decode_vtime(v: u8) -> Duration {
    let a = (v >> 4) as u64;
    let b = (v & 0x0f) as u64;
    Duration::from_nanos(VTIME_C_NS * (16 + a) * (1 << b) / 16)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HelloEntry {
    pub neighbour: NodeId,
    /// RFC 3626 §6.1.1: neighbour type << 2 | link type.
    pub link_code: u8,
    pub metric: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    Hello {
        htime: u8,
        willingness: u8,
        neighbours: Vec<HelloEntry>,
    },
    Tc {
        ansn: u16,
        advertised: Vec<(NodeId, u16)>,
    },
    Probe {
        received: Vec<(NodeId, u8)>,
    },
    /// A type this engine does not know (kept so the rest of the packet
    /// still parses; not forwarded).
    Unknown(u8),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub vtime: u8,
    pub originator: NodeId,
    pub ttl: u8,
    pub hop_count: u8,
    pub seq: u16,
    pub body: Body,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub seq: u16,
    pub messages: Vec<Message>,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The entries of a body: `body.len()` must be `fixed + n · entry`.
fn entries(body: &[u8], fixed: usize, entry: usize, kind: u8) -> Result<impl Iterator<Item = &[u8]>, ParseError> {
    if body.len() < fixed || !(body.len() - fixed).is_multiple_of(entry) {
        return Err(ParseError::BadBody(kind));
    }
    Ok(body[fixed..].chunks_exact(entry))
}

impl Packet {
    /// Parses untrusted bytes; every length is checked before it is used.
    pub fn parse(bytes: &[u8]) -> Result<Packet, ParseError> {
        if bytes.len() < PACKET_HEADER_LEN || (be16(bytes, 0) as usize) != bytes.len() {
            return Err(ParseError::Truncated);
        }
        let seq = be16(bytes, 2);
        let mut messages = Vec::new();
        let mut at = PACKET_HEADER_LEN;
        while at < bytes.len() {
            if bytes.len() - at < MESSAGE_HEADER_LEN {
                return Err(ParseError::Truncated);
            }
            let m = &bytes[at..];
            let size = be16(m, 2) as usize;
            if size < MESSAGE_HEADER_LEN || size > m.len() {
                return Err(ParseError::BadMessageSize(size));
            }
            let kind = m[0];
            let body = &m[MESSAGE_HEADER_LEN..size];
            let body = match kind {
                HELLO_MESSAGE => {
                    let neighbours = entries(body, HELLO_FIXED_LEN, HELLO_ENTRY_LEN, kind)?
                        .map(|e| HelloEntry { neighbour: be32(e, 0), link_code: e[4], metric: be16(e, 5) })
                        .collect::<Vec<_>>();
                    if be16(body, 4) as usize != neighbours.len() {
                        return Err(ParseError::BadBody(kind));
                    }
                    Body::Hello { htime: body[2], willingness: body[3], neighbours }
                }
                TC_MESSAGE => {
                    let advertised =
                        entries(body, TC_FIXED_LEN, TC_ENTRY_LEN, kind)?.map(|e| (be32(e, 0), be16(e, 4))).collect();
                    Body::Tc { ansn: be16(body, 0), advertised }
                }
                PROBE_MESSAGE => Body::Probe {
                    received: entries(body, 0, PROBE_ENTRY_LEN, kind)?.map(|e| (be32(e, 0), e[4])).collect(),
                },
                other => Body::Unknown(other),
            };
            messages.push(Message {
                vtime: m[1],
                originator: be32(m, 4),
                ttl: m[8],
                hop_count: m[9],
                seq: be16(m, 10),
                body,
            });
            at += size;
        }
        Ok(Packet { seq, messages })
    }

    pub fn emit(&self) -> Vec<u8> {
        let mut out = vec![0u8; PACKET_HEADER_LEN];
        out[2..4].copy_from_slice(&self.seq.to_be_bytes());
        for m in &self.messages {
            let start = out.len();
            let kind = match m.body {
                Body::Hello { .. } => HELLO_MESSAGE,
                Body::Tc { .. } => TC_MESSAGE,
                Body::Probe { .. } => PROBE_MESSAGE,
                Body::Unknown(k) => k,
            };
            out.extend_from_slice(&[kind, m.vtime, 0, 0]);
            out.extend_from_slice(&m.originator.to_be_bytes());
            out.extend_from_slice(&[m.ttl, m.hop_count]);
            out.extend_from_slice(&m.seq.to_be_bytes());
            match &m.body {
                Body::Hello { htime, willingness, neighbours } => {
                    out.extend_from_slice(&[0, 0, *htime, *willingness]);
                    out.extend_from_slice(&(neighbours.len() as u16).to_be_bytes());
                    for e in neighbours {
                        out.extend_from_slice(&e.neighbour.to_be_bytes());
                        out.push(e.link_code);
                        out.extend_from_slice(&e.metric.to_be_bytes());
                    }
                }
                Body::Tc { ansn, advertised } => {
                    out.extend_from_slice(&ansn.to_be_bytes());
                    out.extend_from_slice(&[0, 0]);
                    for (n, metric) in advertised {
                        out.extend_from_slice(&n.to_be_bytes());
                        out.extend_from_slice(&metric.to_be_bytes());
                    }
                }
                Body::Probe { received } => {
                    for (n, count) in received {
                        out.extend_from_slice(&n.to_be_bytes());
                        out.push(*count);
                    }
                }
                Body::Unknown(_) => {}
            }
            let size = (out.len() - start) as u16;
            out[start + 2..start + 4].copy_from_slice(&size.to_be_bytes());
        }
        let len = out.len() as u16;
        out[0..2].copy_from_slice(&len.to_be_bytes());
        out
    }
}

/// RFC 3626 §19: `s1` is newer than `s2` in 16-bit wrap-around arithmetic.
fn seq_newer(s1: u16, s2: u16) -> bool {
    const HALF: u16 = u16::MAX / 2;
    (s1 > s2 && s1 - s2 <= HALF) || (s2 > s1 && s2 - s1 > HALF)
}

// ---------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------

/// RFC 3626 §4.2.1 link tuple (one interface per node, so also the
/// neighbour tuple of §4.3.1).
#[derive(Clone, Debug)]
struct Link {
    /// L_ASYM_time: until then the neighbour is heard.
    asym_until: Instant,
    /// L_SYM_time: until then the link is symmetric.
    sym_until: Instant,
    /// L_time: until then the tuple is kept (advertised as lost after
    /// the symmetric time).
    until: Instant,
    /// L_LOST_LINK_time (RFC 3626 §13): after a link-layer failure the
    /// link counts as lost until then, whatever HELLOs say.
    lost_until: Option<Instant>,
    willingness: u8,
    /// Symmetric at the last recompute (to report a break once).
    was_sym: bool,
}

impl Link {
    fn is_sym(&self, now: Instant) -> bool {
        self.sym_until > now && self.lost_until.is_none_or(|t| t <= now)
    }
    fn is_heard(&self, now: Instant) -> bool {
        self.asym_until > now && self.lost_until.is_none_or(|t| t <= now)
    }
}

/// RFC 3626 §4.3.2 2-hop tuple, with the metric of the link via → 2-hop
/// that `via` advertised.
#[derive(Clone, Debug)]
struct TwoHop {
    until: Instant,
    metric: u16,
}

/// RFC 3626 §4.4 topology tuple.
#[derive(Clone, Debug)]
struct Topology {
    seq: u16,
    until: Instant,
    metric: u16,
}

/// RFC 3626 §3.4 duplicate tuple.
#[derive(Clone, Debug)]
struct Duplicate {
    until: Instant,
    retransmitted: bool,
}

/// ETX bookkeeping of one neighbour (seed 004 §III.B).
#[derive(Clone, Debug, Default)]
struct ProbeRecord {
    /// When its probes arrived, within the window.
    received_at: VecDeque<Instant>,
    /// How many of our probes it last reported receiving.
    forward_count: u8,
}

/// A routing table entry (RFC 3626 §10).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub next_hop: NodeId,
    pub hop_count: u32,
    /// Summed link cost in [`METRIC_UNIT`]s (hops × 256 with hop count).
    pub metric: u32,
}

#[derive(Copy, Clone, Debug)]
enum Timer {
    Hello = 0,
    Tc = 1,
    Probe = 2,
    /// The earliest expiry in the information sets.
    Expiry = 3,
    /// The earliest jittered retransmission.
    Forward = 4,
}
const TIMER_COUNT: usize = 5;

/// One node's OLSR.
pub struct OlsrEngine {
    node: NodeId,
    config: OlsrConfig,
    rng: StreamRng,
    timers: [Option<Instant>; TIMER_COUNT],
    now: Instant,
    links: BTreeMap<NodeId, Link>,
    /// Keyed by (neighbour, 2-hop neighbour).
    two_hop: BTreeMap<(NodeId, NodeId), TwoHop>,
    mpr_set: BTreeSet<NodeId>,
    mpr_selectors: BTreeMap<NodeId, Instant>,
    /// Keyed by (T_last, T_dest).
    topology: BTreeMap<(NodeId, NodeId), Topology>,
    duplicates: BTreeMap<(NodeId, u16), Duplicate>,
    probes: BTreeMap<NodeId, ProbeRecord>,
    routes: BTreeMap<NodeId, Route>,
    /// Per destination, the last link of its route: the node before it and
    /// the link's cost (walked back by `path_info`).
    last_links: BTreeMap<NodeId, (NodeId, u32)>,
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
    out: VecDeque<Transmit>,
    events: VecDeque<RouteEvent>,
    stats: RoutingStats,
    tc_retransmissions: u64,
    /// Messages to retransmit, each after its own jitter (RFC 3626 §3.5),
    /// keyed by (due time, arrival order).
    forward_queue: BTreeMap<(Instant, u64), Message>,
    forward_count: u64,
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
            links: BTreeMap::new(),
            two_hop: BTreeMap::new(),
            mpr_set: BTreeSet::new(),
            mpr_selectors: BTreeMap::new(),
            topology: BTreeMap::new(),
            duplicates: BTreeMap::new(),
            probes: BTreeMap::new(),
            routes: BTreeMap::new(),
            last_links: BTreeMap::new(),
            inaccessible: BTreeMap::new(),
            advertised: BTreeSet::new(),
            ansn: 0,
            advertised_nonempty_at: None,
            packet_seq: 0,
            message_seq: 0,
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: RoutingStats::default(),
            tc_retransmissions: 0,
            forward_queue: BTreeMap::new(),
            forward_count: 0,
        };
        let jitter = e.config.max_jitter;
        e.timers[Timer::Hello as usize] = Some(Instant::ZERO + e.jitter(jitter));
        e.timers[Timer::Tc as usize] = Some(Instant::ZERO + e.jitter(jitter));
        if let Metric::Etx { probe_interval, .. } = e.config.metric {
            let d = e.jitter(probe_jitter(probe_interval));
            e.timers[Timer::Probe as usize] = Some(Instant::ZERO + d);
        }
        e
    }

    /// The routing table.
    pub fn routes(&self) -> &BTreeMap<NodeId, Route> {
        &self.routes
    }

    pub fn mpr_set(&self) -> &BTreeSet<NodeId> {
        &self.mpr_set
    }

    /// Symmetric 1-hop neighbours now.
    pub fn symmetric_neighbours(&self) -> Vec<NodeId> {
        self.links.iter().filter(|(_, l)| l.is_sym(self.now)).map(|(&n, _)| n).collect()
    }

    /// TC messages this node retransmitted for others (RFC 3626 §3.4.1).
    pub fn tc_retransmissions(&self) -> u64 {
        self.tc_retransmissions
    }

    /// The link ETX to `neighbour` in [`METRIC_UNIT`]s (256 = ETX 1), or
    /// `None` when a delivery ratio is zero.
    pub fn link_etx(&self, neighbour: NodeId) -> Option<u32> {
        let Metric::Etx { probe_interval, window } = self.config.metric else {
            return Some(METRIC_UNIT);
        };
        let expected = (window.as_nanos() / probe_interval.as_nanos().max(1)).max(1) as u32;
        let p = self.probes.get(&neighbour)?;
        // Jittered probes can put one more than `expected` in a window; a
        // delivery ratio is at most 1.
        let d_r = (p.received_at.len() as u32).min(expected);
        let d_f = (p.forward_count as u32).min(expected);
        if d_r == 0 || d_f == 0 {
            return None;
        }
        // Seed 004 eq. (1): ETX = 1 / (d_f · d_r), in 1/256 units.
        Some(METRIC_UNIT * expected * expected / (d_f * d_r))
    }

    fn jitter(&mut self, max: Duration) -> Duration {
        if max.is_zero() {
            return Duration::ZERO;
        }
        Duration::from_nanos(self.rng.gen_range(0..=max.as_nanos()))
    }

    fn link_cost(&self, neighbour: NodeId) -> Option<u32> {
        match self.config.metric {
            Metric::HopCount => Some(METRIC_UNIT),
            Metric::Etx { .. } => self.link_etx(neighbour),
        }
    }

    fn wire_metric(&self, neighbour: NodeId) -> u16 {
        self.link_cost(neighbour).map_or(METRIC_INFINITE, |c| c.min(METRIC_INFINITE as u32 - 1) as u16)
    }

    fn send(&mut self, messages: Vec<Message>) {
        let packet = Packet { seq: self.packet_seq, messages };
        self.packet_seq = self.packet_seq.wrapping_add(1);
        let bytes = packet.emit();
        self.stats.control_packets_sent += 1;
        self.stats.control_bytes_sent += bytes.len() as u64;
        self.out.push_back(Transmit { dest: Dest::Broadcast, bytes });
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
        let now = self.now;
        let neighbours = self
            .links
            .iter()
            .map(|(&n, l)| {
                let (link_type, neigh_type) = if l.is_sym(now) {
                    (SYM_LINK, if self.mpr_set.contains(&n) { MPR_NEIGH } else { SYM_NEIGH })
                } else if l.is_heard(now) {
                    (ASYM_LINK, NOT_NEIGH)
                } else {
                    (LOST_LINK, NOT_NEIGH)
                };
                HelloEntry { neighbour: n, link_code: (neigh_type << 2) | link_type, metric: self.wire_metric(n) }
            })
            .collect();
        let body = Body::Hello {
            htime: encode_vtime(self.config.hello_interval),
            willingness: self.config.willingness,
            neighbours,
        };
        self.originate(self.config.neighb_hold_time, 1, body);
    }

    /// RFC 3626 §9.2–9.3.
    fn send_tc(&mut self) {
        let recent = self.advertised_nonempty_at.is_some_and(|t| self.now < t + self.config.top_hold_time);
        if self.advertised.is_empty() && !recent {
            return;
        }
        let advertised = self.advertised.iter().map(|&n| (n, self.wire_metric(n))).collect();
        self.originate(self.config.top_hold_time, MAX_TTL, Body::Tc { ansn: self.ansn, advertised });
    }

    fn send_probe(&mut self, window: Duration) {
        let received = self
            .probes
            .iter()
            .filter(|(_, p)| !p.received_at.is_empty())
            .map(|(&n, p)| (n, p.received_at.len().min(u8::MAX as usize) as u8))
            .collect();
        self.originate(window, 1, Body::Probe { received });
    }

    /// RFC 3626 §7.1.1 link sensing and §8.1.1, §8.2.1, §8.4.1.
    fn process_hello(&mut self, from: NodeId, vtime: Duration, willingness: u8, neighbours: &[HelloEntry]) {
        let now = self.now;
        let hold = self.config.neighb_hold_time;
        let link = self.links.entry(from).or_insert(Link {
            asym_until: now,
            sym_until: now,
            until: now + vtime,
            lost_until: None,
            willingness,
            was_sym: false,
        });
        link.asym_until = now + vtime;
        link.willingness = willingness;
        if let Some(me) = neighbours.iter().find(|e| e.neighbour == self.node) {
            match me.link_code & 0b11 {
                LOST_LINK => link.sym_until = now,
                SYM_LINK | ASYM_LINK => {
                    link.sym_until = now + vtime;
                    link.until = link.sym_until + hold;
                }
                _ => {}
            }
        }
        link.until = link.until.max(link.asym_until);
        if !link.is_sym(now) {
            return;
        }
        for e in neighbours {
            if e.neighbour == self.node {
                if e.link_code >> 2 == MPR_NEIGH {
                    self.mpr_selectors.insert(from, now + vtime);
                } else {
                    self.mpr_selectors.remove(&from);
                }
                continue;
            }
            let key = (from, e.neighbour);
            match e.link_code >> 2 {
                SYM_NEIGH | MPR_NEIGH => {
                    self.two_hop.insert(key, TwoHop { until: now + vtime, metric: e.metric });
                }
                _ => {
                    self.two_hop.remove(&key);
                }
            }
        }
    }

    /// RFC 3626 §9.5.
    fn process_tc(&mut self, originator: NodeId, vtime: Duration, ansn: u16, advertised: &[(NodeId, u16)]) {
        let from_originator = self.topology.range((originator, 0)..=(originator, NodeId::MAX));
        if from_originator.clone().any(|(_, t)| seq_newer(t.seq, ansn)) {
            return; // out of order: a newer set is known
        }
        let stale: Vec<_> = from_originator.filter(|(_, t)| t.seq != ansn).map(|(&k, _)| k).collect();
        for k in stale {
            self.topology.remove(&k);
        }
        let until = self.now + vtime;
        for &(dest, metric) in advertised {
            self.topology.insert((originator, dest), Topology { seq: ansn, until, metric });
        }
    }

    fn record_probe(&mut self, from: NodeId, received: &[(NodeId, u8)]) {
        let me = self.node;
        let p = self.probes.entry(from).or_default();
        p.received_at.push_back(self.now);
        p.forward_count = received.iter().find(|(n, _)| *n == me).map_or(0, |(_, c)| *c);
    }

    /// One message of a packet from neighbour `from`.
    fn process_message(&mut self, from: NodeId, m: Message) {
        if m.originator == self.node {
            return;
        }
        let vtime = decode_vtime(m.vtime);
        match &m.body {
            // RFC 3626 §6.4: HELLOs (and probes) are never forwarded: one
            // that does not come from its originator is not ours to use.
            Body::Hello { .. } | Body::Probe { .. } if m.originator != from => return,
            Body::Hello { willingness, neighbours, .. } => {
                self.inaccessible.remove(&m.originator);
                self.process_hello(from, vtime, *willingness, neighbours);
                return;
            }
            Body::Probe { received } => {
                self.record_probe(from, received);
                return;
            }
            Body::Unknown(_) => return,
            Body::Tc { .. } => {}
        }
        // RFC 3626 §3.4 / §9.5: only from symmetric neighbours.
        if !self.links.get(&from).is_some_and(|l| l.is_sym(self.now)) {
            return;
        }
        let key = (m.originator, m.seq);
        let seen = self.duplicates.get(&key).cloned();
        if seen.is_none() {
            if let Body::Tc { ansn, advertised } = &m.body {
                // A TC the peer originated validates it (seed 004 §III.B).
                self.inaccessible.remove(&m.originator);
                self.process_tc(m.originator, vtime, *ansn, advertised);
            }
        }
        // RFC 3626 §3.4.1 default forwarding: once, by MPRs of the sender.
        let already = seen.is_some_and(|d| d.retransmitted);
        let relay = if self.config.mpr_flooding { self.mpr_selectors.contains_key(&from) } else { true };
        let retransmit = !already && relay && m.ttl > 1;
        let until = self.now + self.config.dup_hold_time;
        let dup = self.duplicates.entry(key).or_insert(Duplicate { until, retransmitted: false });
        dup.until = until;
        dup.retransmitted |= retransmit;
        if retransmit {
            let fwd = Message { ttl: m.ttl - 1, hop_count: m.hop_count.saturating_add(1), ..m };
            self.tc_retransmissions += 1;
            // RFC 3626 §3.5: forwarding is jittered too, so that the MPRs
            // that got the same message do not all send at once.
            let due = self.now + self.jitter(self.config.max_jitter);
            self.forward_queue.insert((due, self.forward_count), fwd);
            self.forward_count += 1;
            self.timers[Timer::Forward as usize] = self.forward_queue.keys().next().map(|k| k.0);
        }
    }

    /// Drops expired tuples (RFC 3626 §4).
    fn expire(&mut self) {
        let now = self.now;
        self.links.retain(|_, l| l.until > now);
        self.two_hop.retain(|_, t| t.until > now);
        self.mpr_selectors.retain(|_, &mut t| t > now);
        self.topology.retain(|_, t| t.until > now);
        self.duplicates.retain(|_, d| d.until > now);
        if let Metric::Etx { window, .. } = self.config.metric {
            for p in self.probes.values_mut() {
                while p.received_at.front().is_some_and(|&t| t + window <= now) {
                    p.received_at.pop_front();
                }
            }
            self.probes.retain(|_, p| !p.received_at.is_empty());
        }
    }

    /// Brings every derived set up to date after any change: broken links,
    /// 2-hop set, MPRs, advertised set, routes.
    fn recompute(&mut self) {
        let now = self.now;
        let mut broken = Vec::new();
        for (&n, l) in self.links.iter_mut() {
            let sym = l.is_sym(now);
            if l.was_sym && !sym {
                broken.push(n);
            }
            l.was_sym = sym;
        }
        for n in broken {
            self.events.push_back(RouteEvent::LinkBroken { neighbour: n });
        }
        for (&n, l) in self.links.iter() {
            if !l.is_sym(now) {
                self.mpr_selectors.remove(&n);
            }
        }
        // RFC 3626 §8.5: 2-hop tuples only through symmetric neighbours.
        let links = &self.links;
        self.two_hop.retain(|(via, _), _| links.get(via).is_some_and(|l| l.is_sym(now)));
        self.mpr_set = self.select_mprs();
        let advertised: BTreeSet<NodeId> = match self.config.metric {
            Metric::HopCount => self.mpr_selectors.keys().copied().collect(),
            Metric::Etx { .. } => self.symmetric_neighbours().into_iter().collect(),
        };
        if advertised != self.advertised {
            self.ansn = self.ansn.wrapping_add(1);
            self.advertised = advertised;
        }
        if !self.advertised.is_empty() {
            self.advertised_nonempty_at = Some(now);
        }
        self.update_routes();
        self.timers[Timer::Expiry as usize] = self.next_expiry();
    }

    /// RFC 3626 §8.3.1 MPR heuristic (without the optional optimisation).
    fn select_mprs(&self) -> BTreeSet<NodeId> {
        let now = self.now;
        let n1: BTreeMap<NodeId, u8> = self
            .links
            .iter()
            .filter(|(_, l)| l.is_sym(now) && l.willingness != WILL_NEVER)
            .map(|(&n, l)| (n, l.willingness))
            .collect();
        // Who covers what: N2 excludes this node and its symmetric
        // neighbours.
        let mut covers: BTreeMap<NodeId, BTreeSet<NodeId>> = BTreeMap::new();
        for &(via, two) in self.two_hop.keys() {
            if n1.contains_key(&via) && two != self.node && !self.links.get(&two).is_some_and(|l| l.is_sym(now)) {
                covers.entry(via).or_default().insert(two);
            }
        }
        let mut uncovered: BTreeSet<NodeId> = covers.values().flatten().copied().collect();
        let degree: BTreeMap<NodeId, usize> = covers.iter().map(|(&n, s)| (n, s.len())).collect();
        let mut mprs = BTreeSet::new();
        let choose = |n: NodeId, mprs: &mut BTreeSet<NodeId>, uncovered: &mut BTreeSet<NodeId>| {
            mprs.insert(n);
            for two in covers.get(&n).into_iter().flatten() {
                uncovered.remove(two);
            }
        };
        // Step 1: every WILL_ALWAYS neighbour.
        for (&n, &w) in &n1 {
            if w == WILL_ALWAYS {
                choose(n, &mut mprs, &mut uncovered);
            }
        }
        // Step 3: neighbours that are the only way to some 2-hop node.
        let sole: BTreeSet<NodeId> = uncovered
            .iter()
            .filter_map(|two| {
                let mut via = covers.iter().filter(|(_, s)| s.contains(two)).map(|(&n, _)| n);
                let first = via.next();
                if via.next().is_none() {
                    first
                } else {
                    None
                }
            })
            .collect();
        for n in sole {
            choose(n, &mut mprs, &mut uncovered);
        }
        // Step 4: highest willingness, then most still uncovered reached,
        // then highest degree; lowest id last for determinism.
        while !uncovered.is_empty() {
            let best = covers
                .iter()
                .filter(|(n, _)| !mprs.contains(*n))
                .map(|(&n, s)| {
                    let reach = s.intersection(&uncovered).count();
                    (n1[&n], reach, degree[&n], Reverse(n))
                })
                .filter(|k| k.1 > 0)
                .max();
            let Some((_, _, _, Reverse(n))) = best else { break };
            choose(n, &mut mprs, &mut uncovered);
        }
        mprs
    }

    /// Whether `peer` was labelled inaccessible longer than a TC's
    /// information lasts without a message of its own: it has left the
    /// network and is deleted from the routing table (seed 004 §III.B).
    fn has_left(&self, peer: NodeId) -> bool {
        self.inaccessible.get(&peer).is_some_and(|&at| self.now >= at + self.config.top_hold_time)
    }

    /// Dijkstra over symmetric links, 2-hop links and the topology set
    /// (RFC 3626 §10 with link costs: 256 per hop, or link ETX), with each
    /// route's last link (the node before the destination, the link's cost).
    #[allow(clippy::type_complexity)]
    fn compute_routes(&self) -> (BTreeMap<NodeId, Route>, BTreeMap<NodeId, (NodeId, u32)>) {
        let now = self.now;
        let hop = matches!(self.config.metric, Metric::HopCount);
        let edge_cost = |m: u16| -> Option<u32> {
            if hop {
                Some(METRIC_UNIT)
            } else if m == METRIC_INFINITE {
                None
            } else {
                Some(m as u32)
            }
        };
        let mut edges: BTreeMap<NodeId, Vec<(NodeId, u32)>> = BTreeMap::new();
        for (&(via, two), t) in &self.two_hop {
            if let Some(c) = edge_cost(t.metric) {
                edges.entry(via).or_default().push((two, c));
            }
        }
        for (&(last, dest), t) in &self.topology {
            if let Some(c) = edge_cost(t.metric) {
                edges.entry(last).or_default().push((dest, c));
            }
        }
        let mut heap = BinaryHeap::new();
        for (&n, l) in &self.links {
            if l.is_sym(now) {
                if let Some(c) = self.link_cost(n) {
                    heap.push(Reverse((c, 1u32, n, n, self.node, c)));
                }
            }
        }
        // The last two fields only break ties between equal routes, so the
        // routes themselves do not depend on them.
        let mut routes = BTreeMap::new();
        let mut last_links = BTreeMap::new();
        while let Some(Reverse((metric, hop_count, n, next_hop, prev, cost))) = heap.pop() {
            if n == self.node || routes.contains_key(&n) || self.has_left(n) {
                continue;
            }
            routes.insert(n, Route { next_hop, hop_count, metric });
            last_links.insert(n, (prev, cost));
            for &(m, c) in edges.get(&n).into_iter().flatten() {
                if m != self.node && !routes.contains_key(&m) {
                    heap.push(Reverse((metric.saturating_add(c), hop_count + 1, m, next_hop, n, c)));
                }
            }
        }
        (routes, last_links)
    }

    fn update_routes(&mut self) {
        let (new, last_links) = self.compute_routes();
        self.last_links = last_links;
        for (&dst, r) in &new {
            match self.routes.get(&dst) {
                None => self.events.push_back(RouteEvent::Found { dst, next_hop: r.next_hop, hop_count: r.hop_count }),
                Some(old) if old.next_hop != r.next_hop => {
                    self.events.push_back(RouteEvent::Changed { dst, next_hop: r.next_hop, hop_count: r.hop_count })
                }
                _ => {}
            }
        }
        for &dst in self.routes.keys() {
            if !new.contains_key(&dst) {
                self.events.push_back(RouteEvent::Lost { dst });
            }
        }
        self.routes = new;
    }

    fn next_expiry(&self) -> Option<Instant> {
        let now = self.now;
        let link_times = self
            .links
            .values()
            .flat_map(|l| [Some(l.asym_until), Some(l.sym_until), Some(l.until), l.lost_until])
            .flatten();
        link_times
            .chain(self.two_hop.values().map(|t| t.until))
            .chain(self.mpr_selectors.values().copied())
            .chain(self.topology.values().map(|t| t.until))
            .chain(self.inaccessible.values().map(|&at| at + self.config.top_hold_time))
            .filter(|&t| t > now)
            .min()
    }

    fn fire(&mut self, timer: Timer) {
        let now = self.now;
        match timer {
            Timer::Hello => {
                self.send_hello();
                let next = self.config.hello_interval.saturating_sub(self.jitter(self.config.max_jitter));
                self.timers[Timer::Hello as usize] = Some(now + next);
            }
            Timer::Tc => {
                self.send_tc();
                let next = self.config.tc_interval.saturating_sub(self.jitter(self.config.max_jitter));
                self.timers[Timer::Tc as usize] = Some(now + next);
            }
            Timer::Probe => {
                if let Metric::Etx { probe_interval, window } = self.config.metric {
                    self.send_probe(window);
                    let next = probe_interval.saturating_sub(self.jitter(probe_jitter(probe_interval)));
                    self.timers[Timer::Probe as usize] = Some(now + next);
                }
            }
            Timer::Expiry => self.timers[Timer::Expiry as usize] = None,
            Timer::Forward => {
                // Everything due goes out piggybacked in one packet
                // (RFC 3626 §3.5).
                let later = self.forward_queue.split_off(&(now + Duration::from_nanos(1), 0));
                let due = std::mem::replace(&mut self.forward_queue, later);
                if !due.is_empty() {
                    self.send(due.into_values().collect());
                }
                self.timers[Timer::Forward as usize] = self.forward_queue.keys().next().map(|k| k.0);
            }
        }
    }
}

fn probe_jitter(probe_interval: Duration) -> Duration {
    Duration::from_nanos(probe_interval.as_nanos() / ETX_PROBE_JITTER_DIVISOR)
}

impl RoutingEngine for OlsrEngine {
    fn node(&self) -> NodeId {
        self.node
    }

    fn handle_control(&mut self, now: Instant, from: NodeId, _rx_power_dbm: f64, bytes: &[u8]) {
        self.now = self.now.max(now);
        self.stats.control_packets_received += 1;
        let packet = match Packet::parse(bytes) {
            Ok(p) => p,
            Err(_) => {
                self.stats.control_packets_ignored += 1;
                return;
            }
        };
        self.expire();
        for m in packet.messages {
            self.process_message(from, m);
        }
        self.recompute();
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.now = self.now.max(now);
        if self.poll_timeout().is_none_or(|t| t > now) {
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
        match self.routes.get(&packet.dst) {
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
        let hold = self.config.neighb_hold_time;
        if let Some(l) = self.links.get_mut(&neighbour) {
            l.lost_until = Some(now + hold);
            l.until = l.until.max(now + hold);
        }
        self.expire();
        self.recompute();
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.timers.iter().flatten().copied().min()
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
        let route = self.routes.get(&dst)?;
        let mut link_etx = Vec::with_capacity(route.hop_count as usize);
        let mut at = dst;
        while at != self.node {
            // A route's last links lead back here in hop_count steps; the
            // bound only guards against a table that says otherwise.
            if link_etx.len() >= route.hop_count as usize {
                return None;
            }
            let &(prev, cost) = self.last_links.get(&at)?;
            link_etx.push(f64::from(cost) / f64::from(METRIC_UNIT));
            at = prev;
        }
        link_etx.reverse();
        Some(PathQuality { hop_count: route.hop_count, link_etx })
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{Fate, Net};
    use meshbed_core::{stream_rng, StreamId, StreamKind};
    use proptest::prelude::*;

    const SEED: u64 = 4;

    fn make(config: OlsrConfig) -> impl Fn(NodeId) -> OlsrEngine {
        move |n| OlsrEngine::new(n, config.clone(), crate::node_rng(SEED, n))
    }

    fn grid_links(w: u32, h: u32) -> Vec<(NodeId, NodeId)> {
        let mut links = Vec::new();
        for y in 0..h {
            for x in 0..w {
                let n = y * w + x;
                if x + 1 < w {
                    links.push((n, n + 1));
                }
                if y + 1 < h {
                    links.push((n, n + w));
                }
            }
        }
        links
    }

    /// A few HELLO and TC intervals: links turn symmetric after two
    /// HELLOs, TCs cross the network within one TC interval.
    const CONVERGENCE: Duration = Duration::from_secs(20);

    #[test]
    fn hello_packet_on_fixed_bytes() {
        let bytes: [u8; 27] = [
            0,
            27,
            0,
            7, // packet length, packet sequence number
            HELLO_MESSAGE,
            0x86,
            0,
            23,
            0,
            0,
            0,
            9,
            1,
            0,
            0,
            42, // header
            0,
            0,
            0x05,
            3,
            0,
            1, // reserved, htime 2 s, willingness, 1 entry
            0,
            0,
            0,
            4, // neighbour 4
            (MPR_NEIGH << 2) | SYM_LINK,
        ];
        // The entry's metric is missing: refused.
        assert_eq!(Packet::parse(&bytes), Err(ParseError::BadBody(HELLO_MESSAGE)));
        // A packet length that disagrees with the bytes: refused.
        assert_eq!(Packet::parse(&bytes[..26]), Err(ParseError::Truncated));
        let mut full = bytes.to_vec();
        full.extend_from_slice(&[1, 0]); // metric 256 = ETX 1
        full[1] = 29;
        full[7] = 25;
        let p = Packet::parse(&full).expect("valid");
        let want = Packet {
            seq: 7,
            messages: vec![Message {
                vtime: 0x86,
                originator: 9,
                ttl: 1,
                hop_count: 0,
                seq: 42,
                body: Body::Hello {
                    htime: 0x05,
                    willingness: WILL_DEFAULT,
                    neighbours: vec![HelloEntry { neighbour: 4, link_code: (MPR_NEIGH << 2) | SYM_LINK, metric: 256 }],
                },
            }],
        };
        assert_eq!(p, want);
        assert_eq!(want.emit(), full);
        // A count that disagrees with the entries is refused.
        full[21] = 2;
        assert_eq!(Packet::parse(&full), Err(ParseError::BadBody(HELLO_MESSAGE)));
    }

    #[test]
    fn tc_and_probe_round_trip() {
        let p = Packet {
            seq: 65535,
            messages: vec![
                Message {
                    vtime: encode_vtime(TOP_HOLD_TIME),
                    originator: 3,
                    ttl: 255,
                    hop_count: 2,
                    seq: 1,
                    body: Body::Tc { ansn: 9, advertised: vec![(1, 256), (2, METRIC_INFINITE)] },
                },
                Message {
                    vtime: 0,
                    originator: 3,
                    ttl: 1,
                    hop_count: 0,
                    seq: 2,
                    body: Body::Probe { received: vec![(7, 10)] },
                },
            ],
        };
        let bytes = p.emit();
        assert_eq!(bytes.len(), 4 + 12 + 4 + 12 + 12 + 5);
        assert_eq!(Packet::parse(&bytes), Ok(p));
    }

    #[test]
    fn vtime_encodes_the_rfc_hold_times_exactly() {
        // RFC 3626 §18.3: 6 s = C·(1 + 8/16)·2^6, 15 s = C·(1 + 14/16)·2^7.
        assert_eq!(encode_vtime(NEIGHB_HOLD_TIME), 0x86);
        assert_eq!(encode_vtime(TOP_HOLD_TIME), 0xe7);
        assert_eq!(encode_vtime(HELLO_INTERVAL), 0x05);
        for t in [HELLO_INTERVAL, TC_INTERVAL, NEIGHB_HOLD_TIME, TOP_HOLD_TIME, DUP_HOLD_TIME] {
            assert_eq!(decode_vtime(encode_vtime(t)), t);
        }
        // Just under C rounds to the smallest code, just over stays below.
        assert_eq!(encode_vtime(Duration::from_millis(62)), 0);
        assert!(decode_vtime(encode_vtime(Duration::from_millis(70))) <= Duration::from_millis(70));
    }

    #[test]
    fn sequence_numbers_wrap() {
        assert!(seq_newer(1, 0));
        assert!(seq_newer(0, u16::MAX));
        assert!(!seq_newer(0, 1));
        assert!(!seq_newer(5, 5));
    }

    #[test]
    fn chain_of_six_converges_and_delivers_over_five_hops() {
        let mut net = Net::chain(6, make(OlsrConfig::default()));
        net.run_for(CONVERGENCE);
        for a in 0..6u32 {
            let routes = net.engines[a as usize].routes();
            for b in (0..6u32).filter(|&b| b != a) {
                let r = routes.get(&b).unwrap_or_else(|| panic!("{a} has no route to {b}"));
                assert_eq!(r.hop_count, a.abs_diff(b), "{a} → {b}");
                assert_eq!(r.next_hop, if b > a { a + 1 } else { a - 1 });
            }
        }
        // Middle nodes are MPRs of both their neighbours, the ends of none.
        assert_eq!(net.engines[0].mpr_set().iter().copied().collect::<Vec<_>>(), vec![1]);
        assert!(net.engines[5].mpr_set().contains(&4));
        let id = net.send(0, 5);
        net.run_for(Duration::from_millis(100));
        assert!(matches!(net.fate(id), Fate::Delivered { hops: 5, .. }), "{:?}", net.fate(id));
        assert!(net
            .events
            .iter()
            .any(|(_, n, e)| *n == 0 && *e == RouteEvent::Found { dst: 5, next_hop: 1, hop_count: 5 }));
    }

    #[test]
    fn no_route_before_convergence_drops() {
        let mut net = Net::chain(3, make(OlsrConfig::default()));
        let id = net.send(0, 2);
        assert_eq!(net.fate(id), &Fate::Dropped(DropReason::NoRoute));
    }

    fn tc_retransmissions_on_grid(mpr_flooding: bool) -> (u64, u64) {
        let config = OlsrConfig { mpr_flooding, ..OlsrConfig::default() };
        let mut net = Net::new(25, &grid_links(5, 5), make(config));
        net.run_for(Duration::from_secs(60));
        for a in 0..25 {
            assert_eq!(net.engines[a].routes().len(), 24, "node {a} lacks routes (mpr_flooding {mpr_flooding})");
        }
        let retransmitted = net.engines.iter().map(|e| e.tc_retransmissions()).sum();
        (retransmitted, net.control_sent.iter().sum())
    }

    #[test]
    fn mpr_flooding_retransmits_fewer_tcs_than_pure_flooding_on_a_grid() {
        let (mpr, mpr_packets) = tc_retransmissions_on_grid(true);
        let (pure, pure_packets) = tc_retransmissions_on_grid(false);
        assert!(mpr > 0);
        assert!(mpr < pure, "MPR {mpr} vs pure {pure} TC retransmissions");
        assert!(mpr_packets < pure_packets, "MPR {mpr_packets} vs pure {pure_packets} control packets");
    }

    /// 0 – 1 – 2 is the short way, 0 – 3 – 4 – 2 the long one; link 1 – 2
    /// breaks. With link-layer notification node 1 drops the link at the
    /// MAC's failure, without it when HELLOs have been missing for
    /// NEIGHB_HOLD_TIME; either way node 0 reconverges to the long path.
    fn broken_link_reconverges_to_the_other_path(link_layer_notification: bool) {
        let links = [(0, 1), (1, 2), (0, 3), (3, 4), (4, 2)];
        let mut net = Net::new(5, &links, make(OlsrConfig { link_layer_notification, ..OlsrConfig::default() }));
        net.run_for(CONVERGENCE);
        assert_eq!(net.engines[0].routes()[&2], Route { next_hop: 1, hop_count: 2, metric: 2 * METRIC_UNIT });
        net.set_link(1, 2, false);
        let broken_at = net.now();
        let lost = net.send(0, 2);
        net.run_for(Duration::from_millis(10));
        assert_eq!(net.fate(lost), &Fate::LostOnLink { from: 1, to: 2 });
        let broken = |net: &Net<OlsrEngine>| {
            net.events.iter().find(|(_, n, e)| *n == 1 && *e == RouteEvent::LinkBroken { neighbour: 2 }).map(|e| e.0)
        };
        if link_layer_notification {
            // The MAC's failure drops the link at node 1 at once (RFC 3626 §13).
            assert!(broken(&net).is_some_and(|t| t < broken_at + Duration::from_millis(10)));
            assert!(!net.engines[1].symmetric_neighbours().contains(&2));
        } else {
            assert_eq!(broken(&net), None);
            assert!(net.engines[1].symmetric_neighbours().contains(&2));
        }
        net.run_for(NEIGHB_HOLD_TIME + TOP_HOLD_TIME);
        assert!(broken(&net).is_some_and(|t| t <= broken_at + NEIGHB_HOLD_TIME));
        assert_eq!(net.engines[0].routes()[&2].next_hop, 3);
        assert_eq!(net.engines[0].routes()[&2].hop_count, 3);
        assert!(net
            .events
            .iter()
            .any(|(_, n, e)| *n == 0 && matches!(e, RouteEvent::Changed { dst: 2, next_hop: 3, .. })));
        let id = net.send(0, 2);
        net.run_for(Duration::from_millis(100));
        assert!(matches!(net.fate(id), Fate::Delivered { hops: 3, .. }), "{:?}", net.fate(id));
    }

    #[test]
    fn broken_link_reconverges_with_and_without_link_layer_notification() {
        broken_link_reconverges_to_the_other_path(true);
        broken_link_reconverges_to_the_other_path(false);
    }

    #[test]
    fn link_failure_drops_the_link_at_once_with_link_layer_notification() {
        let config = OlsrConfig { link_layer_notification: true, ..OlsrConfig::default() };
        let mut net = Net::chain(3, make(config));
        net.run_for(CONVERGENCE);
        while net.engines[1].poll_event().is_some() {}
        let now = net.now();
        net.engines[1].on_link_failure(now, 2);
        assert!(!net.engines[1].routes().contains_key(&2));
        let events: Vec<_> = std::iter::from_fn(|| net.engines[1].poll_event()).collect();
        assert!(events.contains(&RouteEvent::LinkBroken { neighbour: 2 }));
        assert!(events.contains(&RouteEvent::Lost { dst: 2 }));
        assert_eq!(net.engines[1].stats().link_failures, 1);
    }

    #[test]
    fn without_link_layer_notification_a_mac_failure_is_only_counted() {
        let mut net = Net::chain(3, make(OlsrConfig::default()));
        net.run_for(CONVERGENCE);
        while net.engines[1].poll_event().is_some() {}
        let now = net.now();
        net.engines[1].on_link_failure(now, 2);
        assert_eq!(net.engines[1].routes()[&2].next_hop, 2);
        assert_eq!(net.engines[1].poll_event(), None);
        assert_eq!(net.engines[1].stats().link_failures, 1);
    }

    /// Diamond 0 – {1, 3} – 2 plus a direct 0 – 2 link that is up in only
    /// 40 % of 100 ms slots, drawn at random (a lossy link, emulated by
    /// toggling it; random rather than periodic so that periodic probes do
    /// not alias with it): about 40 % of its probes and HELLOs get through.
    /// Samples, at the start of up slots after warm-up: whether 0 – 2 is a
    /// symmetric link at node 0, and node 0's route to 2. A packet sent
    /// then must arrive.
    fn routes_0_to_2_on_lossy_diamond(config: OlsrConfig) -> Vec<(bool, Route)> {
        const SLOT: Duration = Duration::from_millis(100);
        let links = [(0, 1), (1, 2), (0, 3), (3, 2), (0, 2)];
        let mut net = Net::new(4, &links, make(config));
        let mut loss = stream_rng(SEED, StreamId::new(StreamKind::Experiment, 0));
        let mut seen = Vec::new();
        for slot in 0..600 {
            let up = rand::Rng::gen_bool(&mut loss, 0.4);
            net.set_link(0, 2, up);
            if up && slot >= 300 {
                let direct_sym = net.engines[0].symmetric_neighbours().contains(&2);
                seen.push((direct_sym, net.engines[0].routes().get(&2).cloned().expect("a route to 2")));
                let id = net.send(0, 2);
                net.run_for(Duration::from_millis(10));
                assert!(matches!(net.fate(id), Fate::Delivered { .. }), "{:?}", net.fate(id));
            }
            net.run_until(Instant::ZERO + SLOT * (slot + 1));
        }
        seen
    }

    #[test]
    fn etx_takes_two_good_links_where_hop_count_takes_the_lossy_one() {
        let etx = routes_0_to_2_on_lossy_diamond(OlsrConfig::etx());
        // Even while the direct link is up and symmetric, its ETX (≈ 1/0.4²)
        // loses to two loss-free links (1 + 1).
        assert!(etx.iter().filter(|(sym, _)| *sym).count() >= 10, "{etx:?}");
        assert!(etx.iter().all(|(_, r)| r.hop_count == 2 && r.next_hop != 2), "ETX routes {etx:?}");
        assert!(etx.iter().all(|(_, r)| r.metric == 2 * METRIC_UNIT), "ETX routes {etx:?}");
        // Hop count takes the direct link whenever HELLOs keep it
        // symmetric (a good part of the time; lost HELLOs break it now and
        // then).
        let hops = routes_0_to_2_on_lossy_diamond(OlsrConfig::default());
        assert!(hops.iter().filter(|(sym, _)| *sym).count() >= 10, "{hops:?}");
        for (sym, r) in &hops {
            assert_eq!(*sym, r.next_hop == 2 && r.hop_count == 1, "hop-count routes {hops:?}");
        }
    }

    #[test]
    fn etx_of_a_clean_link_is_one() {
        let mut net = Net::chain(2, make(OlsrConfig::etx()));
        net.run_for(CONVERGENCE);
        assert_eq!(net.engines[0].link_etx(1), Some(METRIC_UNIT));
        assert_eq!(net.engines[0].routes()[&1].metric, METRIC_UNIT);
        // Probes stop: after the window (and the next probe timer, when
        // the engine next looks) the ratios are zero, the link has no ETX
        // and (with HELLOs gone too) no route.
        net.set_link(0, 1, false);
        net.run_for(ETX_WINDOW + ETX_PROBE_INTERVAL);
        assert_eq!(net.engines[0].link_etx(1), None);
        assert!(net.engines[0].routes().is_empty());
    }

    #[test]
    fn poll_timeout_moves_forward() {
        for config in [OlsrConfig::default(), OlsrConfig::etx()] {
            let mut e = make(config)(0);
            let mut last = Instant::ZERO;
            for _ in 0..200 {
                let t = e.poll_timeout().expect("periodic timers");
                assert!(t >= last);
                e.handle_timeout(t);
                while e.poll_transmit(t).is_some() {}
                assert!(e.poll_timeout().expect("periodic timers") > t);
                last = t;
            }
            // An early call is a no-op.
            let before = e.stats().control_packets_sent;
            e.handle_timeout(last);
            assert_eq!(e.stats().control_packets_sent, before);
        }
    }

    fn packet(originator: NodeId, ttl: u8, seq: u16, body: Body) -> Vec<u8> {
        let vtime = encode_vtime(TOP_HOLD_TIME);
        Packet { seq, messages: vec![Message { vtime, originator, ttl, hop_count: 0, seq, body }] }.emit()
    }

    /// Node 0 with a symmetric neighbour 1 that has chosen it as MPR and
    /// has a symmetric neighbour 7.
    fn node_0_with_mpr_selector_1() -> OlsrEngine {
        let mut e = make(OlsrConfig::default())(0);
        let entry =
            |neighbour, neigh_type| HelloEntry { neighbour, link_code: (neigh_type << 2) | SYM_LINK, metric: 256 };
        let hello = Body::Hello {
            htime: encode_vtime(HELLO_INTERVAL),
            willingness: WILL_DEFAULT,
            neighbours: vec![entry(0, MPR_NEIGH), entry(7, SYM_NEIGH)],
        };
        e.handle_control(Instant::ZERO, 1, -60.0, &packet(1, 1, 0, hello));
        assert_eq!(e.symmetric_neighbours(), vec![1]);
        assert_eq!(e.routes()[&7].hop_count, 2);
        e
    }

    fn tc(ansn: u16, advertised: &[NodeId]) -> Body {
        Body::Tc { ansn, advertised: advertised.iter().map(|&n| (n, 256)).collect() }
    }

    #[test]
    fn tc_processing_keeps_the_newest_ansn_and_forwards_once_for_mpr_selectors() {
        let mut e = node_0_with_mpr_selector_1();
        let t = Instant::from_nanos(1_000_000);
        // Packets that carry forwarded messages (from originator 7), and
        // those messages.
        let forwarded = |e: &mut OlsrEngine| {
            let packets: Vec<_> = std::iter::from_fn(|| e.poll_transmit(t))
                .map(|tx| Packet::parse(&tx.bytes).expect("valid").messages)
                .filter(|ms| ms.iter().any(|m| m.originator == 7))
                .collect();
            (packets.len(), packets.concat())
        };
        while e.poll_transmit(t).is_some() {}
        e.handle_control(t, 1, -60.0, &packet(7, 254, 10, tc(5, &[8])));
        assert_eq!(e.routes()[&8], Route { next_hop: 1, hop_count: 3, metric: 3 * METRIC_UNIT });
        // Retransmitted once, after its jitter, with TTL − 1 and hop count + 1.
        let due = e.poll_timeout().expect("forward timer");
        assert!(due <= t + MAXJITTER);
        e.handle_timeout(t + MAXJITTER);
        let (_, fwd_tcs) = forwarded(&mut e);
        assert_eq!(fwd_tcs.len(), 1);
        assert_eq!((fwd_tcs[0].originator, fwd_tcs[0].ttl, fwd_tcs[0].hop_count, fwd_tcs[0].seq), (7, 253, 1, 10));
        // The same message again: neither processed nor retransmitted.
        e.handle_control(t, 1, -60.0, &packet(7, 254, 10, tc(9, &[9])));
        assert!(!e.routes().contains_key(&9));
        // An older ANSN in a new message is ignored (RFC 3626 §9.5 step 2).
        e.handle_control(t, 1, -60.0, &packet(7, 254, 11, tc(4, &[9])));
        assert!(!e.routes().contains_key(&9));
        assert!(e.routes().contains_key(&8));
        // A newer one replaces the old tuples: 8 is lost, 9 found.
        e.handle_control(t, 1, -60.0, &packet(7, 254, 12, tc(6, &[9])));
        assert!(e.routes().contains_key(&9));
        assert!(!e.routes().contains_key(&8));
        let events: Vec<_> = std::iter::from_fn(|| e.poll_event()).collect();
        assert!(events.contains(&RouteEvent::Lost { dst: 8 }));
        e.handle_timeout(t + MAXJITTER + MAXJITTER);
        let (packets, messages) = forwarded(&mut e);
        assert_eq!(packets, 1, "the two new messages piggybacked in one packet");
        let mut seqs: Vec<_> = messages.iter().map(|m| m.seq).collect();
        seqs.sort();
        assert_eq!(seqs, vec![11, 12]);
        // A TTL of 1 is not retransmitted; a TC from a non-neighbour is not
        // processed.
        e.handle_control(t, 1, -60.0, &packet(7, 1, 13, tc(7, &[9, 10])));
        e.handle_control(t, 3, -60.0, &packet(7, 254, 14, tc(8, &[11])));
        assert!(e.routes().contains_key(&10));
        assert!(!e.routes().contains_key(&11));
        e.handle_timeout(t + MAXJITTER * 3);
        assert_eq!(forwarded(&mut e).0, 0);
    }

    /// What node 0 of the chain 0 – 1 – 2 – 3 hears in one second at `t`:
    /// node 1's probe reporting `probes_from_0` of node 0's probes (if
    /// `probe`), node 1's HELLO (0 and 2 symmetric, link 1 – 2 at
    /// `metric_1_2`) and node 2's TC (links 2 – 1 at `metric_1_2`, 2 – 3 at
    /// ETX 1), relayed by node 1; `seq` numbers the TC message.
    fn hear_chain(e: &mut OlsrEngine, t: Instant, seq: u16, metric_1_2: u16, probe: Option<u8>) {
        if let Some(probes_from_0) = probe {
            e.handle_control(t, 1, -60.0, &packet(1, 1, seq, Body::Probe { received: vec![(0, probes_from_0)] }));
        }
        let entry = |neighbour, metric| HelloEntry { neighbour, link_code: (SYM_NEIGH << 2) | SYM_LINK, metric };
        let hello = Body::Hello {
            htime: encode_vtime(HELLO_INTERVAL),
            willingness: WILL_DEFAULT,
            neighbours: vec![entry(0, METRIC_UNIT as u16), entry(2, metric_1_2)],
        };
        e.handle_control(t, 1, -60.0, &packet(1, 1, seq, hello));
        let tc = Body::Tc { ansn: 1, advertised: vec![(1, metric_1_2), (3, METRIC_UNIT as u16)] };
        e.handle_control(t, 1, -60.0, &packet(2, 254, seq, tc));
    }

    /// Node 0 after one ETX window (10 probes of node 1, one a second) of
    /// which it received `probes_from_1`, node 1 reporting `probes_from_0`
    /// of node 0's.
    fn chain_seen_from_0(config: OlsrConfig, probes_from_1: u16, probes_from_0: u8, metric_1_2: u16) -> OlsrEngine {
        let mut e = make(config)(0);
        for k in 0..10u16 {
            let t = Instant::ZERO + Duration::from_millis(500 + 1000 * u64::from(k));
            hear_chain(&mut e, t, k, metric_1_2, (k < probes_from_1).then_some(probes_from_0));
        }
        e
    }

    /// ETX 1/(0.8 · 0.9) in METRIC_UNITs: 256 · 100 / 72, rounded down
    /// as `link_etx` does.
    const ETX_0_8_0_9: u16 = 355;

    #[test]
    fn path_info_gives_the_hop_count_and_each_links_etx_from_the_link_and_topology_sets() {
        // The lossy link is the first hop, measured by node 0's own probes:
        // d_r = 8/10, d_f = 9/10 (seed 004 eq. 1).
        let e = chain_seen_from_0(OlsrConfig::etx(), 8, 9, METRIC_UNIT as u16);
        assert_eq!(e.link_etx(1), Some(u32::from(ETX_0_8_0_9)));
        let q = e.path_info(3).expect("a route to 3");
        let etx = f64::from(ETX_0_8_0_9) / 256.0;
        assert_eq!(q, PathQuality { hop_count: 3, link_etx: vec![etx, 1.0, 1.0] });
        // P_max = 1 − 1/ETX of the worst link (eqs. 2–4): 1 − 0.72.
        assert!((q.max_link_loss() - 0.28).abs() < 0.002, "{}", q.max_link_loss());
        // The lossy link in the middle, as node 1's HELLO and node 2's TC
        // advertise it; node 0's own link is clean.
        let e = chain_seen_from_0(OlsrConfig::etx(), 10, 10, ETX_0_8_0_9);
        assert_eq!(e.link_etx(1), Some(METRIC_UNIT));
        assert_eq!(e.path_info(3).expect("a route to 3").link_etx, vec![1.0, etx, 1.0]);
        assert_eq!(e.path_info(2).expect("a route to 2").link_etx, vec![1.0, etx]);
        assert_eq!(e.path_info(1), Some(PathQuality { hop_count: 1, link_etx: vec![1.0] }));
        assert!((e.path_info(3).unwrap().max_link_loss() - 0.28).abs() < 0.002);
        // No route, no path.
        assert_eq!(e.path_info(7), None);
        // With hop count nothing is measured: every link counts as ETX 1.
        let e = chain_seen_from_0(OlsrConfig::default(), 8, 9, ETX_0_8_0_9);
        let q = e.path_info(3).expect("a route to 3");
        assert_eq!(q, PathQuality::unmeasured(3));
        assert_eq!(q.max_link_loss(), 0.0);
    }

    fn data(src: NodeId, dst: NodeId, prev_hop: Option<NodeId>) -> DataPacket<'static> {
        DataPacket { id: 1, src, dst, prev_hop, header: &[] }
    }

    #[test]
    fn an_unresponsive_peer_is_inaccessible_until_a_tc_of_its_own_arrives() {
        let mut e = chain_seen_from_0(OlsrConfig::etx(), 10, 10, METRIC_UNIT as u16);
        let t = Instant::ZERO + Duration::from_secs(10);
        let forward = Decision::Forward { next_hop: 1, header: None };
        assert_eq!(e.route(t, data(0, 3, None)), forward);
        e.peer_unresponsive(t, 3);
        assert_eq!(e.route(t, data(0, 3, None)), Decision::Drop(DropReason::PeerInaccessible));
        // Only this node's own data: what it forwards for others goes on.
        assert_eq!(e.route(t, data(5, 3, Some(1))), forward);
        // The route itself stays, and so does its quality.
        assert_eq!(e.path_info(3).map(|q| q.hop_count), Some(3));
        // Node 2's TCs do not speak for node 3; node 3's own TC does.
        hear_chain(&mut e, t, 100, METRIC_UNIT as u16, Some(10));
        assert_eq!(e.route(t, data(0, 3, None)), Decision::Drop(DropReason::PeerInaccessible));
        let tc = Body::Tc { ansn: 1, advertised: vec![(2, METRIC_UNIT as u16)] };
        e.handle_control(t, 1, -60.0, &packet(3, 253, 0, tc));
        assert_eq!(e.route(t, data(0, 3, None)), forward);
    }

    #[test]
    fn an_unresponsive_peer_silent_for_a_tc_hold_time_is_deleted_from_the_routing_table() {
        let mut e = chain_seen_from_0(OlsrConfig::etx(), 10, 10, METRIC_UNIT as u16);
        while e.poll_event().is_some() {}
        let labelled_at = Instant::ZERO + Duration::from_secs(10);
        e.peer_unresponsive(labelled_at, 3);
        // The engine asks to wake up when the label's time is up.
        assert!(e.poll_timeout().is_some_and(|t| t <= labelled_at + TOP_HOLD_TIME));
        // Nodes 1 and 2 keep talking (node 2 keeps advertising node 3);
        // node 3 originates nothing.
        let mut seq = 200;
        let mut t = labelled_at;
        let mut lost_at = None;
        while t < labelled_at + TOP_HOLD_TIME + Duration::from_secs(2) {
            t += Duration::from_millis(250);
            while let Some(due) = e.poll_timeout().filter(|&d| d <= t) {
                e.handle_timeout(due);
                while e.poll_transmit(due).is_some() {}
            }
            if seq % 4 == 0 {
                hear_chain(&mut e, t, seq, METRIC_UNIT as u16, Some(10));
            }
            seq += 1;
            if lost_at.is_none() && std::iter::from_fn(|| e.poll_event()).any(|ev| ev == RouteEvent::Lost { dst: 3 }) {
                lost_at = Some(t);
            }
            if t < labelled_at + TOP_HOLD_TIME {
                assert!(e.routes().contains_key(&3), "deleted early, at {t}");
            }
        }
        assert!(lost_at.is_some_and(|at| at >= labelled_at + TOP_HOLD_TIME), "{lost_at:?}");
        assert!(!e.routes().contains_key(&3));
        assert_eq!(e.path_info(3), None);
        assert!(e.routes().contains_key(&2));
        // Node 3 speaks again: validated, routed again.
        let tc = Body::Tc { ansn: 1, advertised: vec![(2, METRIC_UNIT as u16)] };
        e.handle_control(t, 1, -60.0, &packet(3, 253, 0, tc));
        assert_eq!(e.routes()[&3].hop_count, 3);
        assert_eq!(e.route(t, data(0, 3, None)), Decision::Forward { next_hop: 1, header: None });
    }

    #[test]
    fn malformed_packets_are_counted_and_ignored() {
        let mut e = make(OlsrConfig::default())(0);
        e.handle_control(Instant::ZERO, 1, -60.0, &[0, 3, 0]);
        e.handle_control(Instant::ZERO, 1, -60.0, &[0, 16, 0, 0, HELLO_MESSAGE, 0, 0, 12, 0, 0, 0, 1, 1, 0, 0, 0]);
        assert_eq!(e.stats().control_packets_received, 2);
        assert_eq!(e.stats().control_packets_ignored, 2);
        assert!(e.routes().is_empty());
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Packet::parse(&bytes);
            let mut e = make(OlsrConfig::etx())(0);
            e.handle_control(Instant::ZERO, 1, -60.0, &bytes);
        }

        #[test]
        fn mutated_valid_packets_never_panic(at in 0usize..64, value in any::<u8>()) {
            let p = Packet {
                seq: 1,
                messages: vec![Message {
                    vtime: 0x86, originator: 2, ttl: 255, hop_count: 0, seq: 3,
                    body: Body::Tc { ansn: 1, advertised: vec![(0, 256), (5, 300), (6, 1)] },
                }],
            };
            let mut bytes = p.emit();
            let i = at % bytes.len();
            bytes[i] = value;
            // Whatever parses emits back to bytes that parse the same.
            if let Ok(q) = Packet::parse(&bytes) {
                prop_assert_eq!(Packet::parse(&q.emit()), Ok(q));
            }
        }
    }
}
