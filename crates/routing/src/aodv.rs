//! AODV (RFC 3561) as a sans-IO [`RoutingEngine`], with the signal-strength
//! filter of seed 003 (§3.2, §3.4, §3.5): the documents ran AODV-UU (seed 003
//! §3.3), modified to ignore HELLO and control packets from neighbours whose
//! smoothed signal strength is below a threshold, so that routes avoid links
//! at the edge of the coverage range.
//!
//! What it owns: the route table (destination sequence numbers, hop counts,
//! lifetimes, precursor lists), the neighbour table (last heard, smoothed
//! signal strength), the RREQ duplicate cache, the discoveries in progress
//! and the ids of the data packets held for them.
//!
//! A driver calls, in any order, [`RoutingEngine::handle_control`],
//! [`RoutingEngine::on_frame_heard`], [`RoutingEngine::on_link_failure`] and
//! [`RoutingEngine::route`] as things happen, [`RoutingEngine::handle_timeout`]
//! when [`RoutingEngine::poll_timeout`] is due, and after each of these drains
//! [`RoutingEngine::poll_transmit`] and [`RoutingEngine::poll_event`] and asks
//! for the next deadline again.
//!
//! Left out (all optional in RFC 3561): local repair (§6.12), gratuitous RREPs
//! (§6.6.3), RREP-ACK (§5.4), and the TTL of a rediscovery starting from the
//! last known hop count (§6.4).

use crate::{DataPacket, Decision, Dest, DropReason, NodeId, RouteEvent, RoutingEngine, RoutingStats, Transmit};
use meshbed_core::{Duration, Instant, StreamRng};
use rand::Rng;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// AODV's parameters, with the defaults of RFC 3561 §10 unless said otherwise.
#[derive(Clone, Debug, PartialEq)]
pub struct AodvConfig {
    /// ACTIVE_ROUTE_TIMEOUT (RFC 3561 §10: 3000 ms).
    pub active_route_timeout: Duration,
    /// HELLO_INTERVAL (RFC 3561 §10: 1000 ms; seed 003 §3.1: "once per second").
    pub hello_interval: Duration,
    /// ALLOWED_HELLO_LOSS (RFC 3561 §10: 2).
    pub allowed_hello_loss: u32,
    /// NET_DIAMETER in hops (RFC 3561 §10: 35).
    pub net_diameter: u8,
    /// NODE_TRAVERSAL_TIME (RFC 3561 §10: 40 ms).
    pub node_traversal_time: Duration,
    /// RREQ_RETRIES (RFC 3561 §10: 2).
    pub rreq_retries: u32,
    /// The wait before a RREQ is repeated when expanding ring search is off
    /// (seed 003 §5.2: "the time interval before repeating the RREQ was 320
    /// msec"; that is RFC 3561's RING_TRAVERSAL_TIME for a TTL of 2,
    /// 2 · 40 ms · (2 + TIMEOUT_BUFFER)). Fixed, not doubled per retry: the
    /// seed reports one interval.
    pub rreq_retry_wait: Duration,
    /// Data packets held while routes are discovered, at most (ns-2
    /// `aodv_rqueue.h` AODV_RTQ_MAX_LEN: 64); the oldest is dropped first.
    pub discovery_buffer_packets: usize,
    /// How long a data packet may be held (ns-2 `aodv_rqueue.h`
    /// AODV_RTQ_TIMEOUT: 30 s).
    pub discovery_buffer_timeout: Duration,
    /// Expanding ring search (RFC 3561 §6.4); off by default: seed 003 §5.2
    /// reports a fixed retry interval.
    pub expanding_ring_search: bool,
    /// TTL_START (RFC 3561 §10: 1).
    pub ttl_start: u8,
    /// TTL_INCREMENT (RFC 3561 §10: 2).
    pub ttl_increment: u8,
    /// TTL_THRESHOLD (RFC 3561 §10: 7).
    pub ttl_threshold: u8,
    /// TIMEOUT_BUFFER (RFC 3561 §10: 2).
    pub timeout_buffer: u8,
    /// K of DELETE_PERIOD = K · max(ACTIVE_ROUTE_TIMEOUT, HELLO_INTERVAL)
    /// (RFC 3561 §10: 5).
    pub delete_period_k: u32,
    /// Broadcasts this node relays (RREQ, RERR) and its HELLOs wait a uniform
    /// random time below this, so that neighbours that heard the same packet
    /// do not all send at once (ns-2 `aodv.cc` jitters broadcasts by up to
    /// 10 ms; RFC 3561 leaves it open).
    pub broadcast_jitter: Duration,
    /// Seed 003 §3.2/§3.4's HELLO STRENGTH THRESHOLD: control packets from a
    /// neighbour whose smoothed signal strength is below it are not processed.
    /// `None` is plain AODV.
    pub ss_threshold_dbm: Option<f64>,
    /// The weight of the newest sample in the signal-strength average (seed
    /// 003 §3.5: α = 0.25).
    pub ss_alpha: f64,
    /// A frame the MAC gave up on breaks the link to its next hop at once
    /// (RFC 3561 §6.11's link-layer notification; ns-2's AODV, which the
    /// issue's retry-limit detection follows). `false`: links break only
    /// when nothing is heard for ALLOWED_HELLO_LOSS · HELLO_INTERVAL, as
    /// AODV-UU runs by default (seed 003 §3.3's implementation).
    pub link_layer_feedback: bool,
}

impl Default for AodvConfig {
    fn default() -> Self {
        AodvConfig {
            active_route_timeout: Duration::from_millis(3000),
            hello_interval: Duration::from_millis(1000),
            allowed_hello_loss: 2,
            net_diameter: 35,
            node_traversal_time: Duration::from_millis(40),
            rreq_retries: 2,
            rreq_retry_wait: Duration::from_millis(320),
            discovery_buffer_packets: 64,
            discovery_buffer_timeout: Duration::from_secs(30),
            expanding_ring_search: false,
            ttl_start: 1,
            ttl_increment: 2,
            ttl_threshold: 7,
            timeout_buffer: 2,
            delete_period_k: 5,
            broadcast_jitter: Duration::from_millis(10),
            ss_threshold_dbm: None,
            ss_alpha: 0.25,
            link_layer_feedback: true,
        }
    }
}

impl AodvConfig {
    /// NET_TRAVERSAL_TIME = 2 · NODE_TRAVERSAL_TIME · NET_DIAMETER (RFC 3561 §10).
    pub fn net_traversal_time(&self) -> Duration {
        self.node_traversal_time * (2 * self.net_diameter as u64)
    }
    /// PATH_DISCOVERY_TIME = 2 · NET_TRAVERSAL_TIME (RFC 3561 §10): how long
    /// a RREQ stays in the duplicate cache.
    pub fn path_discovery_time(&self) -> Duration {
        self.net_traversal_time() * 2
    }
    /// MY_ROUTE_TIMEOUT = 2 · ACTIVE_ROUTE_TIMEOUT (RFC 3561 §10).
    pub fn my_route_timeout(&self) -> Duration {
        self.active_route_timeout * 2
    }
    /// DELETE_PERIOD (RFC 3561 §10).
    pub fn delete_period(&self) -> Duration {
        let longer = if self.active_route_timeout > self.hello_interval {
            self.active_route_timeout
        } else {
            self.hello_interval
        };
        longer * self.delete_period_k as u64
    }
    /// How long a neighbour stays without being heard:
    /// ALLOWED_HELLO_LOSS · HELLO_INTERVAL (RFC 3561 §6.11).
    pub fn neighbour_timeout(&self) -> Duration {
        self.hello_interval * self.allowed_hello_loss as u64
    }
    /// RING_TRAVERSAL_TIME = 2 · NODE_TRAVERSAL_TIME · (TTL + TIMEOUT_BUFFER)
    /// (RFC 3561 §10).
    pub fn ring_traversal_time(&self, ttl: u8) -> Duration {
        self.node_traversal_time * (2 * (ttl as u64 + self.timeout_buffer as u64))
    }
}

// ---------------------------------------------------------------------------
// Wire format (RFC 3561 §5, node ids in the address fields). There is no IP
// header here, so the IP TTL that AODV reads and decrements (RFC 3561 §6.4,
// §6.5) rides in byte 2, which RFC 3561 reserves (RREQ) or gives to the
// prefix size (RREP, unused here). All integers are big-endian.
// ---------------------------------------------------------------------------

/// Message types (RFC 3561 §5).
const TYPE_RREQ: u8 = 1;
const TYPE_RREP: u8 = 2;
const TYPE_RERR: u8 = 3;
/// RREQ: 1 type, 1 flags, 1 TTL, 1 hop count, 4 RREQ ID, 4+4 destination and
/// its sequence number, 4+4 originator and its sequence number (RFC 3561 §5.1).
pub const RREQ_LEN: usize = 24;
/// RREP: 1 type, 1 flags, 1 TTL, 1 hop count, 4+4 destination and its
/// sequence number, 4 originator, 4 lifetime in ms (RFC 3561 §5.2).
pub const RREP_LEN: usize = 20;
/// RERR: 1 type, 1 flags, 1 reserved, 1 destination count, then 8 bytes per
/// unreachable destination (RFC 3561 §5.3).
pub const RERR_HEADER_LEN: usize = 4;
const RERR_ENTRY_LEN: usize = 8;
/// RREQ flag U: the destination sequence number is unknown (RFC 3561 §5.1).
const RREQ_FLAG_UNKNOWN_SEQ: u8 = 0x08;
/// RREQ flag D: only the destination may reply (RFC 3561 §5.1).
const RREQ_FLAG_DEST_ONLY: u8 = 0x10;
/// RERR flag N: no delete (RFC 3561 §5.3).
const RERR_FLAG_NO_DELETE: u8 = 0x80;

/// Why a control packet could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("empty packet")]
    Empty,
    #[error("unknown AODV message type {0}")]
    UnknownType(u8),
    #[error("{kind} is {got} bytes, expected {expected}")]
    BadLength { kind: &'static str, got: usize, expected: usize },
    #[error("RERR lists no destination")]
    NoDestinations,
}

/// Route Request (RFC 3561 §5.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rreq {
    pub ttl: u8,
    pub hop_count: u8,
    pub rreq_id: u32,
    pub dest: NodeId,
    /// `None`: the U flag (unknown sequence number).
    pub dest_seq: Option<u32>,
    pub dest_only: bool,
    pub orig: NodeId,
    pub orig_seq: u32,
}

/// Route Reply (RFC 3561 §5.2); a HELLO is a RREP about its sender with hop
/// count 0 and TTL 1 (RFC 3561 §6.9).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rrep {
    pub ttl: u8,
    pub hop_count: u8,
    pub dest: NodeId,
    pub dest_seq: u32,
    pub orig: NodeId,
    pub lifetime_ms: u32,
}

impl Rrep {
    /// A HELLO from `sender`: a RREP about itself, hop count 0, TTL 1
    /// (RFC 3561 §6.9).
    pub fn is_hello_from(&self, sender: NodeId) -> bool {
        self.hop_count == 0 && self.dest == sender && self.ttl == 1
    }
}

/// Route Error (RFC 3561 §5.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rerr {
    pub no_delete: bool,
    /// Unreachable destinations and their sequence numbers.
    pub unreachable: Vec<(NodeId, u32)>,
}

/// An AODV control message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    Rreq(Rreq),
    Rrep(Rrep),
    Rerr(Rerr),
}

fn be32(b: &[u8], at: usize) -> u32 {
    // Callers check the length first; `get` keeps even a wrong caller from panicking.
    b.get(at..at + 4).map_or(0, |s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn check_len(kind: &'static str, got: usize, expected: usize) -> Result<(), WireError> {
    if got == expected {
        Ok(())
    } else {
        Err(WireError::BadLength { kind, got, expected })
    }
}

impl Message {
    /// Parses untrusted bytes; never panics.
    pub fn parse(b: &[u8]) -> Result<Message, WireError> {
        let &kind = b.first().ok_or(WireError::Empty)?;
        match kind {
            TYPE_RREQ => {
                check_len("RREQ", b.len(), RREQ_LEN)?;
                let flags = b[1];
                Ok(Message::Rreq(Rreq {
                    ttl: b[2],
                    hop_count: b[3],
                    rreq_id: be32(b, 4),
                    dest: be32(b, 8),
                    dest_seq: (flags & RREQ_FLAG_UNKNOWN_SEQ == 0).then(|| be32(b, 12)),
                    dest_only: flags & RREQ_FLAG_DEST_ONLY != 0,
                    orig: be32(b, 16),
                    orig_seq: be32(b, 20),
                }))
            }
            TYPE_RREP => {
                check_len("RREP", b.len(), RREP_LEN)?;
                Ok(Message::Rrep(Rrep {
                    ttl: b[2],
                    hop_count: b[3],
                    dest: be32(b, 4),
                    dest_seq: be32(b, 8),
                    orig: be32(b, 12),
                    lifetime_ms: be32(b, 16),
                }))
            }
            TYPE_RERR => {
                if b.len() < RERR_HEADER_LEN {
                    return Err(WireError::BadLength { kind: "RERR", got: b.len(), expected: RERR_HEADER_LEN });
                }
                let count = b[3] as usize;
                if count == 0 {
                    return Err(WireError::NoDestinations);
                }
                check_len("RERR", b.len(), RERR_HEADER_LEN + RERR_ENTRY_LEN * count)?;
                let unreachable = (0..count)
                    .map(|i| {
                        let at = RERR_HEADER_LEN + RERR_ENTRY_LEN * i;
                        (be32(b, at), be32(b, at + 4))
                    })
                    .collect();
                Ok(Message::Rerr(Rerr { no_delete: b[1] & RERR_FLAG_NO_DELETE != 0, unreachable }))
            }
            other => Err(WireError::UnknownType(other)),
        }
    }

    /// The bytes of this message. A RERR lists at most 255 destinations (the
    /// count is one byte); the rest are left out.
    pub fn emit(&self) -> Vec<u8> {
        match self {
            Message::Rreq(m) => {
                let mut flags = 0;
                if m.dest_seq.is_none() {
                    flags |= RREQ_FLAG_UNKNOWN_SEQ;
                }
                if m.dest_only {
                    flags |= RREQ_FLAG_DEST_ONLY;
                }
                let mut b = vec![TYPE_RREQ, flags, m.ttl, m.hop_count];
                for v in [m.rreq_id, m.dest, m.dest_seq.unwrap_or(0), m.orig, m.orig_seq] {
                    b.extend_from_slice(&v.to_be_bytes());
                }
                b
            }
            Message::Rrep(m) => {
                let mut b = vec![TYPE_RREP, 0, m.ttl, m.hop_count];
                for v in [m.dest, m.dest_seq, m.orig, m.lifetime_ms] {
                    b.extend_from_slice(&v.to_be_bytes());
                }
                b
            }
            Message::Rerr(m) => {
                let entries = &m.unreachable[..m.unreachable.len().min(u8::MAX as usize)];
                let flags = if m.no_delete { RERR_FLAG_NO_DELETE } else { 0 };
                let mut b = vec![TYPE_RERR, flags, 0, entries.len() as u8];
                for &(dest, seq) in entries {
                    b.extend_from_slice(&dest.to_be_bytes());
                    b.extend_from_slice(&seq.to_be_bytes());
                }
                b
            }
        }
    }
}

/// `a` is newer than `b` in sequence-number arithmetic (RFC 3561 §6.1: the
/// difference as a signed 32-bit integer, so that numbers wrap around).
fn seq_newer(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

// ---------------------------------------------------------------------------
// The engine
// ---------------------------------------------------------------------------

/// A route table entry (RFC 3561 §2).
#[derive(Clone, Debug)]
struct Route {
    /// `None`: no valid destination sequence number (RFC 3561 §6.2).
    dest_seq: Option<u32>,
    valid: bool,
    hop_count: u8,
    next_hop: NodeId,
    /// Valid: when the route expires. Invalid: when it is deleted.
    lifetime: Instant,
    /// Neighbours that forward through this route (RFC 3561 §6.2), who are
    /// told by RERR when it breaks.
    precursors: BTreeSet<NodeId>,
}

#[derive(Clone, Debug)]
struct Neighbour {
    /// Exponentially weighted moving average of the received signal strength
    /// (seed 003 §3.5).
    ss_avg_dbm: f64,
    /// The last time a frame passing the filter was heard from it.
    last_heard: Option<Instant>,
}

#[derive(Clone, Debug)]
struct Discovery {
    ttl: u8,
    /// RREQs sent with TTL = NET_DIAMETER so far beyond the first (RFC 3561 §6.3).
    retries: u32,
    deadline: Instant,
}

#[derive(Clone, Debug)]
struct Held {
    id: u64,
    dst: NodeId,
    since: Instant,
}

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
    routes: BTreeMap<NodeId, Route>,
    neighbours: BTreeMap<NodeId, Neighbour>,
    /// (originator, RREQ ID) seen, until when (RFC 3561 §6.5).
    rreq_seen: BTreeMap<(NodeId, u32), Instant>,
    discoveries: BTreeMap<NodeId, Discovery>,
    held: VecDeque<Held>,
    next_hello: Instant,
    /// Control packets to send, by (due time, insertion order).
    outbox: BTreeMap<(Instant, u64), Transmit>,
    outbox_seq: u64,
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
            routes: BTreeMap::new(),
            neighbours: BTreeMap::new(),
            rreq_seen: BTreeMap::new(),
            discoveries: BTreeMap::new(),
            held: VecDeque::new(),
            next_hello: first_hello,
            outbox: BTreeMap::new(),
            outbox_seq: 0,
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
        self.routes.get(&dst).filter(|r| r.valid).map(|r| (r.next_hop, r.hop_count))
    }

    /// The smoothed signal strength of `neighbour`, if it was heard.
    pub fn signal_strength_dbm(&self, neighbour: NodeId) -> Option<f64> {
        self.neighbours.get(&neighbour).map(|n| n.ss_avg_dbm)
    }

    fn send(&mut self, at: Instant, dest: Dest, msg: &Message) {
        match msg {
            Message::Rreq(_) => self.counters.rreq_sent += 1,
            Message::Rrep(m) if m.is_hello_from(self.node) => self.counters.hello_sent += 1,
            Message::Rrep(_) => self.counters.rrep_sent += 1,
            Message::Rerr(_) => self.counters.rerr_sent += 1,
        }
        self.outbox_seq += 1;
        self.outbox.insert((at, self.outbox_seq), Transmit { dest, bytes: msg.emit() });
    }

    fn send_jittered(&mut self, now: Instant, dest: Dest, msg: &Message) {
        let at = now + jitter(&mut self.rng, self.config.broadcast_jitter);
        self.send(at, dest, msg);
    }

    /// Feeds one signal-strength sample into the neighbour's average (seed
    /// 003 §3.5: newest sample weighted by α) and says whether the neighbour
    /// passes the filter; a passing neighbour counts as heard now (RFC 3561
    /// §6.11: any packet from a neighbour shows the link is up).
    fn hear(&mut self, now: Instant, from: NodeId, rx_power_dbm: f64) -> bool {
        let alpha = self.config.ss_alpha;
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
        let passes = self.config.ss_threshold_dbm.is_none_or(|t| n.ss_avg_dbm >= t);
        if passes {
            n.last_heard = Some(now);
        }
        passes
    }

    /// Creates or updates the route to `dst` if the news is fresher (RFC
    /// 3561 §6.2); says whether it changed the route.
    fn update_route(
        &mut self,
        dst: NodeId,
        next_hop: NodeId,
        hop_count: u8,
        dest_seq: Option<u32>,
        lifetime: Instant,
    ) -> bool {
        if dst == self.node {
            return false;
        }
        let (accept, was_valid, old_next) = match self.routes.get(&dst) {
            None => (true, false, None),
            Some(r) => {
                let accept = match (dest_seq, r.dest_seq) {
                    // A route to a neighbour learnt from any packet of its
                    // own carries no sequence number: always taken (§6.2).
                    (None, _) => true,
                    (Some(_), None) => true,
                    (Some(new), Some(old)) => {
                        seq_newer(new, old) || (new == old && (!r.valid || hop_count < r.hop_count))
                    }
                };
                (accept, r.valid, Some(r.next_hop))
            }
        };
        if !accept {
            return false;
        }
        let r = self.routes.entry(dst).or_insert(Route {
            dest_seq: None,
            valid: false,
            hop_count,
            next_hop,
            lifetime,
            precursors: BTreeSet::new(),
        });
        if dest_seq.is_some() {
            r.dest_seq = dest_seq;
        }
        r.lifetime = if r.valid { r.lifetime.max(lifetime) } else { lifetime };
        r.valid = true;
        r.next_hop = next_hop;
        r.hop_count = hop_count;
        let hop_count = hop_count as u32;
        if !was_valid {
            self.events.push_back(RouteEvent::Found { dst, next_hop, hop_count });
        } else if old_next != Some(next_hop) {
            self.events.push_back(RouteEvent::Changed { dst, next_hop, hop_count });
        }
        true
    }

    /// Keeps a valid route alive until at least `until` (RFC 3561 §6.2).
    fn refresh(&mut self, dst: NodeId, until: Instant) {
        if let Some(r) = self.routes.get_mut(&dst).filter(|r| r.valid) {
            r.lifetime = r.lifetime.max(until);
        }
    }

    fn invalidate(&mut self, now: Instant, dst: NodeId, dest_seq: Option<u32>) {
        let delete_at = now + self.config.delete_period();
        if let Some(r) = self.routes.get_mut(&dst).filter(|r| r.valid) {
            r.valid = false;
            r.lifetime = delete_at;
            if dest_seq.is_some() {
                r.dest_seq = dest_seq;
            }
            self.events.push_back(RouteEvent::Lost { dst });
        }
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
        // Not a neighbour until heard again; its signal-strength average is
        // kept, so one strong frame does not undo the history (seed 003 §3.5).
        if let Some(n) = self.neighbours.get_mut(&neighbour) {
            n.last_heard = None;
        }
        self.events.push_back(RouteEvent::LinkBroken { neighbour });
        let broken: Vec<NodeId> =
            self.routes.iter().filter(|(_, r)| r.valid && r.next_hop == neighbour).map(|(&d, _)| d).collect();
        let mut unreachable = Vec::new();
        let mut precursors = BTreeSet::new();
        for dst in broken {
            let r = &self.routes[&dst];
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
        let dest_seq = self.routes.get(&dst).and_then(|r| r.dest_seq);
        let msg = Message::Rreq(Rreq {
            ttl,
            hop_count: 0,
            rreq_id: self.rreq_id,
            dest: dst,
            dest_seq,
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
        let (ttl, wait) = if self.config.expanding_ring_search {
            let ttl = self.config.ttl_start;
            (ttl, self.config.ring_traversal_time(ttl))
        } else {
            (self.config.net_diameter, self.config.rreq_retry_wait)
        };
        self.send_rreq(now, dst, ttl);
        self.discoveries.insert(dst, Discovery { ttl, retries: 0, deadline: now + wait });
    }

    /// A discovery's wait ran out without a route: widen the ring, repeat,
    /// or give up and drop what was held for it (RFC 3561 §6.3, §6.4).
    fn discovery_timeout(&mut self, now: Instant, dst: NodeId) {
        let Some(mut d) = self.discoveries.remove(&dst) else { return };
        let c = &self.config;
        if c.expanding_ring_search && d.ttl < c.net_diameter {
            let next = d.ttl.saturating_add(c.ttl_increment);
            d.ttl = if next > c.ttl_threshold { c.net_diameter } else { next };
            d.deadline = now + c.ring_traversal_time(d.ttl);
        } else if d.retries < c.rreq_retries {
            d.retries += 1;
            d.deadline = now + if c.expanding_ring_search { c.ring_traversal_time(d.ttl) } else { c.rreq_retry_wait };
        } else {
            let (dropped, kept): (Vec<Held>, Vec<Held>) = self.held.drain(..).partition(|h| h.dst == dst);
            self.held = kept.into();
            for h in dropped {
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
        let found: Vec<NodeId> = self.discoveries.keys().copied().filter(|&d| self.route_to(d).is_some()).collect();
        for dst in found {
            self.discoveries.remove(&dst);
        }
        let mut kept = VecDeque::new();
        while let Some(h) = self.held.pop_front() {
            match self.route_to(h.dst) {
                Some((next_hop, _)) => {
                    self.refresh_for_data(now, h.dst, next_hop, None);
                    self.events.push_back(RouteEvent::Release { id: h.id, next_hop, header: None });
                }
                None => kept.push_back(h),
            }
        }
        self.held = kept;
    }

    /// RFC 3561 §6.2: a data packet forwarded keeps the routes to its
    /// destination, its next hop, and (back) to its previous hop alive.
    fn refresh_for_data(&mut self, now: Instant, dst: NodeId, next_hop: NodeId, prev_hop: Option<NodeId>) {
        let until = now + self.config.active_route_timeout;
        self.refresh(dst, until);
        self.refresh(next_hop, until);
        if let Some(p) = prev_hop {
            self.refresh(p, until);
        }
    }

    fn on_rreq(&mut self, now: Instant, from: NodeId, m: Rreq) {
        if m.orig == self.node {
            return; // our own RREQ, relayed back
        }
        let key = (m.orig, m.rreq_id);
        if self.rreq_seen.get(&key).is_some_and(|&until| until > now) {
            return; // RFC 3561 §6.5: a RREQ is processed once
        }
        self.rreq_seen.insert(key, now + self.config.path_discovery_time());
        let hop_count = m.hop_count.saturating_add(1);
        // §6.5: the reverse route, with the minimal lifetime
        // 2·NET_TRAVERSAL_TIME − 2·hop_count·NODE_TRAVERSAL_TIME.
        let reverse_life = (self.config.net_traversal_time() * 2)
            .saturating_sub(self.config.node_traversal_time * (2 * hop_count as u64));
        self.update_route(m.orig, from, hop_count, Some(m.orig_seq), now + reverse_life);

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
        let fresh = self.routes.get(&m.dest).filter(|r| r.valid && !m.dest_only).and_then(|r| {
            let seq = r.dest_seq?;
            m.dest_seq.is_none_or(|want| !seq_newer(want, seq)).then_some((seq, r.hop_count, r.next_hop, r.lifetime))
        });
        if let Some((seq, hops, next_hop, lifetime)) = fresh {
            if let Some(r) = self.routes.get_mut(&m.dest) {
                r.precursors.insert(from);
            }
            if let Some(r) = self.routes.get_mut(&m.orig) {
                r.precursors.insert(next_hop);
            }
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
            let known = self.routes.get(&m.dest).and_then(|r| r.dest_seq);
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
            self.update_route(from, from, 1, Some(m.dest_seq), now + life);
            if self.route_to(from) == Some((from, 1)) {
                self.refresh(from, now + life);
            }
            return;
        }
        // §6.7: the forward route to the destination.
        let hop_count = m.hop_count.saturating_add(1);
        if !self.update_route(m.dest, from, hop_count, Some(m.dest_seq), now + life) {
            return;
        }
        if m.orig == self.node || m.ttl <= 1 {
            return;
        }
        let Some((toward_orig, _)) = self.route_to(m.orig) else { return };
        if let Some(r) = self.routes.get_mut(&m.dest) {
            r.precursors.insert(toward_orig);
        }
        if let Some(r) = self.routes.get_mut(&m.orig) {
            r.precursors.insert(from);
        }
        self.refresh(m.orig, now + self.config.active_route_timeout);
        let fwd = Rrep { ttl: m.ttl - 1, hop_count, ..m };
        self.send(now, Dest::Unicast(toward_orig), &Message::Rrep(fwd));
    }

    fn on_rerr(&mut self, now: Instant, from: NodeId, m: Rerr) {
        // §6.11 (iii): routes to the listed destinations through the sender
        // become invalid; their precursors are told in turn.
        let mut unreachable = Vec::new();
        let mut precursors = BTreeSet::new();
        for (dst, seq) in m.unreachable {
            let Some(r) = self.routes.get(&dst).filter(|r| r.valid && r.next_hop == from) else { continue };
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
        let life = self.config.neighbour_timeout();
        let hello = Rrep {
            ttl: 1,
            hop_count: 0,
            dest: self.node,
            dest_seq: self.own_seq,
            orig: self.node,
            lifetime_ms: (life.as_nanos() / 1_000_000) as u32,
        };
        self.send(now, Dest::Broadcast, &Message::Rrep(hello));
    }
}

/// A uniform draw in [0, `max`).
fn jitter(rng: &mut StreamRng, max: Duration) -> Duration {
    if max.is_zero() {
        Duration::ZERO
    } else {
        Duration::from_nanos(rng.gen_range(0..max.as_nanos()))
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
            self.update_route(from, from, 1, None, now + self.config.active_route_timeout);
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
        if self.next_hello <= now {
            self.send_hello(now);
            let early = jitter(&mut self.rng, self.config.broadcast_jitter);
            self.next_hello = now + self.config.hello_interval.saturating_sub(early).max(Duration::from_nanos(1));
        }
        // Neighbours not heard for ALLOWED_HELLO_LOSS · HELLO_INTERVAL (§6.11).
        let timeout = self.config.neighbour_timeout();
        let lost: Vec<NodeId> = self
            .neighbours
            .iter()
            .filter(|(_, n)| n.last_heard.is_some_and(|t| t + timeout <= now))
            .map(|(&id, _)| id)
            .collect();
        for neighbour in lost {
            self.link_broken(now, neighbour);
        }
        // Route lifetimes (§6.11: an expired route becomes invalid, and is
        // deleted DELETE_PERIOD later).
        let due: Vec<(NodeId, bool)> =
            self.routes.iter().filter(|(_, r)| r.lifetime <= now).map(|(&d, r)| (d, r.valid)).collect();
        for (dst, valid) in due {
            if valid {
                self.invalidate(now, dst, None);
            } else {
                self.routes.remove(&dst);
            }
        }
        self.rreq_seen.retain(|_, &mut until| until > now);
        let due: Vec<NodeId> = self.discoveries.iter().filter(|(_, d)| d.deadline <= now).map(|(&d, _)| d).collect();
        for dst in due {
            self.discovery_timeout(now, dst);
        }
        let max_hold = self.config.discovery_buffer_timeout;
        while self.held.front().is_some_and(|h| h.since + max_hold <= now) {
            let h = self.held.pop_front().expect("front");
            self.events.push_back(RouteEvent::DropHeld { id: h.id, reason: DropReason::DiscoveryTimeout });
        }
        // A discovery with nothing left to deliver stops.
        let waiting: BTreeSet<NodeId> = self.held.iter().map(|h| h.dst).collect();
        self.discoveries.retain(|d, _| waiting.contains(d));
    }

    fn route(&mut self, now: Instant, packet: DataPacket<'_>) -> Decision {
        if let Some((next_hop, _)) = self.route_to(packet.dst) {
            self.refresh_for_data(now, packet.dst, next_hop, packet.prev_hop);
            self.refresh(packet.src, now + self.config.active_route_timeout);
            return Decision::Forward { next_hop, header: None };
        }
        if let Some(prev) = packet.prev_hop {
            // Seed 003 §3.4: a packet not generated here and without a route
            // "is discarded, after sending an RERR to the source"; it goes
            // to the previous hop, which passes it on along its precursors
            // (RFC 3561 §6.11 (ii)).
            let seq = self.routes.get(&packet.dst).and_then(|r| r.dest_seq).unwrap_or(0);
            let rerr = Message::Rerr(Rerr { no_delete: false, unreachable: vec![(packet.dst, seq)] });
            self.send(now, Dest::Unicast(prev), &rerr);
            return Decision::Drop(DropReason::NoRoute);
        }
        if self.config.discovery_buffer_packets == 0 {
            return Decision::Drop(DropReason::BufferOverflow);
        }
        if self.held.len() >= self.config.discovery_buffer_packets {
            // ns-2 `aodv_rqueue.cc`: a full queue drops its oldest packet.
            let old = self.held.pop_front().expect("full buffer");
            self.events.push_back(RouteEvent::DropHeld { id: old.id, reason: DropReason::BufferOverflow });
        }
        self.held.push_back(Held { id: packet.id, dst: packet.dst, since: now });
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
        if self.outbox.first_key_value()?.0 .0 > now {
            return None;
        }
        let (_, tx) = self.outbox.pop_first()?;
        self.stats.control_packets_sent += 1;
        self.stats.control_bytes_sent += tx.bytes.len() as u64;
        Some(tx)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let neighbour_timeout = self.config.neighbour_timeout();
        let deadlines = [
            Some(self.next_hello),
            self.outbox.keys().next().map(|&(at, _)| at),
            self.neighbours.values().filter_map(|n| n.last_heard).min().map(|t| t + neighbour_timeout),
            self.routes.values().map(|r| r.lifetime).min(),
            self.discoveries.values().map(|d| d.deadline).min(),
            self.held.front().map(|h| h.since + self.config.discovery_buffer_timeout),
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
    use super::*;
    use crate::harness::{Fate, Net};
    use proptest::prelude::*;

    fn engine(node: NodeId, config: &AodvConfig) -> Aodv {
        Aodv::new(node, config.clone(), crate::node_rng(1, node))
    }

    fn net(n: usize, links: &[(NodeId, NodeId)], config: AodvConfig) -> Net<Aodv> {
        Net::new(n, links, |node| engine(node, &config))
    }

    fn events_at(net: &Net<Aodv>, node: NodeId) -> Vec<(Instant, RouteEvent)> {
        net.events.iter().filter(|(_, n, _)| *n == node).map(|(t, _, e)| (*t, e.clone())).collect()
    }

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

    #[test]
    fn unreachable_destination_is_retried_then_held_packet_dropped() {
        let config = AodvConfig::default();
        let wait = config.rreq_retry_wait;
        // Node 3 has no links.
        let mut net = net(4, &[(0, 1), (1, 2)], config);
        let t0 = net.now();
        let id = net.send(0, 3);
        net.run_for(Duration::from_secs(2));
        assert_eq!(net.fate(id), &Fate::Dropped(DropReason::NoRoute));
        // 1 + RREQ_RETRIES attempts, each relayed once by 1 and 2.
        for node in 0..3 {
            assert_eq!(net.engines[node].counters().rreq_sent, 3, "node {node}");
        }
        let dropped: Vec<Instant> = events_at(&net, 0)
            .into_iter()
            .filter(|(_, e)| *e == RouteEvent::DropHeld { id, reason: DropReason::NoRoute })
            .map(|(t, _)| t)
            .collect();
        assert_eq!(dropped, vec![t0 + wait * 3]);
        assert_eq!(net.engines[0].stats().route_discoveries, 1);
    }

    #[test]
    fn discovery_buffer_overflow_drops_the_oldest_and_timeout_drops_the_rest() {
        let config = AodvConfig {
            discovery_buffer_packets: 2,
            discovery_buffer_timeout: Duration::from_millis(100),
            ..AodvConfig::default()
        };
        let max_hold = config.discovery_buffer_timeout;
        let mut net = net(3, &[(0, 1)], config);
        let ids: Vec<u64> = (0..3).map(|_| net.send(0, 2)).collect();
        assert_eq!(net.fate(ids[0]), &Fate::Dropped(DropReason::BufferOverflow));
        assert_eq!(net.fate(ids[1]), &Fate::Held);
        assert_eq!(net.fate(ids[2]), &Fate::Held);
        net.run_for(max_hold - Duration::from_nanos(1));
        assert_eq!(net.fate(ids[2]), &Fate::Held, "just inside the buffer timeout");
        net.run_for(Duration::from_nanos(1));
        for &id in &ids[1..] {
            assert_eq!(net.fate(id), &Fate::Dropped(DropReason::DiscoveryTimeout));
        }
        // With nothing left to deliver, the discovery stops: no retry.
        net.run_for(Duration::from_secs(1));
        assert_eq!(net.engines[0].counters().rreq_sent, 1);
    }

    #[test]
    fn data_keeps_a_route_alive_and_an_idle_route_expires() {
        let config = AodvConfig::default();
        let active = config.active_route_timeout;
        let mut net = net(3, &[(0, 1), (1, 2)], config);
        // A packet a second for ten seconds: longer than the RREP's
        // MY_ROUTE_TIMEOUT, so only refreshes by data keep the route.
        for _ in 0..10 {
            let id = net.send(0, 2);
            net.run_for(Duration::from_secs(1));
            assert!(matches!(net.fate(id), Fate::Delivered { hops: 2, .. }));
        }
        let last_send = net.now() - Duration::from_secs(1);
        assert!(!events_at(&net, 0).iter().any(|(_, e)| *e == RouteEvent::Lost { dst: 2 }));
        assert_eq!(net.engines[0].stats().route_discoveries, 1);
        // Idle: the route lives ACTIVE_ROUTE_TIMEOUT past its last use.
        net.run_until(last_send + active - Duration::from_nanos(1));
        assert_eq!(net.engines[0].route_to(2), Some((1, 2)));
        net.run_until(last_send + active);
        assert_eq!(net.engines[0].route_to(2), None);
        assert!(events_at(&net, 0).contains(&(last_send + active, RouteEvent::Lost { dst: 2 })));
    }

    #[test]
    fn each_node_relays_a_rreq_once_on_a_grid() {
        // A 4 × 4 grid and an unreachable node 16.
        let mut links = Vec::new();
        for r in 0..4 {
            for c in 0..4 {
                let n = r * 4 + c;
                if c < 3 {
                    links.push((n, n + 1));
                }
                if r < 3 {
                    links.push((n, n + 4));
                }
            }
        }
        // A NET_DIAMETER just above the grid's (6) bounds the flood should
        // the duplicate cache fail.
        let config = AodvConfig { net_diameter: 8, ..AodvConfig::default() };
        let before_retry = config.rreq_retry_wait - Duration::from_millis(1);
        let mut net = net(17, &links, config);
        net.send(0, 16);
        net.run_for(before_retry);
        for node in 0..16 {
            assert_eq!(net.engines[node].counters().rreq_sent, 1, "node {node}");
        }
    }

    #[test]
    fn expanding_ring_search_widens_the_ttl_until_a_node_answers() {
        for (ers, rreqs) in [(false, 1), (true, 3)] {
            let config = AodvConfig { expanding_ring_search: ers, ..AodvConfig::default() };
            let mut net = Net::chain(6, |node| engine(node, &config));
            // After HELLOs, node 4 knows its neighbour 5 and answers for it.
            net.run_for(Duration::from_secs(2));
            let id = net.send(0, 5);
            net.run_for(Duration::from_secs(1));
            assert!(matches!(net.fate(id), Fate::Delivered { hops: 5, .. }), "{:?}", net.fate(id));
            // TTL 1, 3 (TTL_START, + TTL_INCREMENT) do not reach node 4; TTL 5 does.
            assert_eq!(net.engines[0].counters().rreq_sent, rreqs, "expanding ring search {ers}");
            assert_eq!(net.engines[4].counters().rrep_sent, 1, "node 4 answered for 5");
        }
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

    #[test]
    fn wire_rreq_rrep_rerr_from_fixed_bytes() {
        let rreq_bytes = [1, 0x08, 35, 2, 0, 0, 0, 9, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 7];
        let rreq =
            Rreq { ttl: 35, hop_count: 2, rreq_id: 9, dest: 4, dest_seq: None, dest_only: false, orig: 1, orig_seq: 7 };
        assert_eq!(Message::parse(&rreq_bytes), Ok(Message::Rreq(rreq.clone())));
        assert_eq!(Message::Rreq(rreq).emit(), rreq_bytes);
        let rrep_bytes = [2, 0, 1, 0, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0, 3, 0, 0, 0x07, 0xd0];
        let hello = Rrep { ttl: 1, hop_count: 0, dest: 3, dest_seq: 5, orig: 3, lifetime_ms: 2000 };
        assert_eq!(Message::parse(&rrep_bytes), Ok(Message::Rrep(hello.clone())));
        assert_eq!(Message::Rrep(hello).emit(), rrep_bytes);
        let rerr_bytes = [3, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 6, 0, 0, 0, 8, 0, 0, 0, 1];
        let rerr = Rerr { no_delete: false, unreachable: vec![(4, 6), (8, 1)] };
        assert_eq!(Message::parse(&rerr_bytes), Ok(Message::Rerr(rerr.clone())));
        assert_eq!(Message::Rerr(rerr).emit(), rerr_bytes);
        // Boundaries: one byte short or long, no destinations, unknown type.
        assert!(matches!(Message::parse(&rreq_bytes[..23]), Err(WireError::BadLength { .. })));
        assert!(matches!(Message::parse(&[&rrep_bytes[..], &[0]].concat()), Err(WireError::BadLength { .. })));
        assert!(matches!(Message::parse(&rerr_bytes[..19]), Err(WireError::BadLength { .. })));
        assert_eq!(Message::parse(&[3, 0, 0, 0]), Err(WireError::NoDestinations));
        assert_eq!(Message::parse(&[4]), Err(WireError::UnknownType(4)));
        assert_eq!(Message::parse(&[]), Err(WireError::Empty));
    }

    #[test]
    fn sequence_numbers_compare_across_wraparound() {
        assert!(seq_newer(1, u32::MAX));
        assert!(!seq_newer(u32::MAX, 1));
        assert!(!seq_newer(5, 5));
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

        #[test]
        fn parse_inverts_emit(ttl: u8, hop_count: u8, id: u32, dest: u32, seq: Option<u32>, orig: u32, oseq: u32,
                              entries in proptest::collection::vec((any::<u32>(), any::<u32>()), 1..10)) {
            let msgs = [
                Message::Rreq(Rreq { ttl, hop_count, rreq_id: id, dest, dest_seq: seq, dest_only: ttl % 2 == 0, orig, orig_seq: oseq }),
                Message::Rrep(Rrep { ttl, hop_count, dest, dest_seq: oseq, orig, lifetime_ms: id }),
                Message::Rerr(Rerr { no_delete: hop_count % 2 == 0, unreachable: entries }),
            ];
            for m in msgs {
                prop_assert_eq!(Message::parse(&m.emit()), Ok(m));
            }
        }
    }
}
