//! DSR, the Dynamic Source Routing protocol, as the ATP paper ran it (seed
//! 002 §2, §5.1: ns-2's DSR agent under 802.11b with random waypoint
//! movement), with RFC 4728 for what the paper leaves open. Deterministic,
//! no I/O: the driver passes `now` in and carries out what the engine asks.
//!
//! * Route discovery (RFC 4728 §8.2): a Route Request (RREQ) floods with the
//!   route record accumulated hop by hop; the target (or, as ns-2 does by
//!   default, a node with a cached route) answers with a Route Reply (RREP)
//!   unicast back along the reverse of the record. As ns-2, the first request
//!   is non-propagating (neighbours only), then propagating requests back off
//!   exponentially.
//! * The route cache is a path cache (RFC 4728 §4.1): whole paths from this
//!   node, learnt from RREQs, RREPs and the source routes of packets it
//!   forwards.
//! * Data packets carry the whole source route in their routing header
//!   ([`SourceRoute`]); it counts in airtime because the driver carries it.
//! * Route maintenance (RFC 4728 §8.3) from link-layer failure: the link
//!   leaves the cache, a Route Error (RERR) goes back to the node that wrote
//!   the source route, and the node that saw the break salvages the packet
//!   over another cached route (RFC 4728 §8.3.6), at most `max_salvage_count`
//!   times.
//!
//! Driver contract for salvaging: the engine remembers the packets it
//! forwarded to each neighbour for `maintenance_window` (RFC 4728 §4.5's
//! maintenance buffer; a frame heard from the neighbour confirms what was
//! sent to it before). Each [`RoutingEngine::on_link_failure`] report for
//! that neighbour stands for one failed frame: the oldest unconfirmed packet
//! is re-sent by id with [`RouteEvent::Release`] (a new next hop and
//! header), as if it had been held. A driver keeps the bytes of a data
//! packet whose frame failed until it has reported the failure, and reports
//! one failure per failed frame. The RERR goes to the node that wrote the
//! source route (the source, or the last salvaging node), not always to the
//! original source as RFC 4728 §8.3.4 asks.
//!
//! Left out: gratuitous route replies and automatic route shortening
//! (§3.4.3), reply-storm prevention (§8.2.5), passive acknowledgements
//! beyond the frame-heard hint, flow state (§3.5), caching overheard routes
//! (§3.3.1; the driver reports no promiscuous reception).
//!
//! The order of calls is the one of every [`RoutingEngine`]: feed input
//! (`handle_control`, `route`, `on_link_failure`, `handle_timeout` once
//! `poll_timeout` has passed), then drain `poll_transmit` and `poll_event`,
//! then ask `poll_timeout` again.

use crate::{DataPacket, Decision, Dest, DropReason, NodeId, RouteEvent, RoutingEngine, RoutingStats, Transmit};
use meshbed_core::{Duration, Instant, StreamRng};
use rand::Rng;
use std::collections::{BTreeMap, VecDeque};

/// RFC 4728 §9 DiscoveryHopLimit: the largest hop limit of a propagating RREQ.
pub const DISCOVERY_HOP_LIMIT: u8 = 255;
/// RFC 4728 §9 BroadcastJitter: rebroadcast RREQs wait uniformly up to this.
pub const BROADCAST_JITTER: Duration = Duration::from_millis(10);
/// RFC 4728 §9 RouteCacheTimeout: a path unused this long is forgotten.
pub const ROUTE_CACHE_TIMEOUT: Duration = Duration::from_secs(300);
/// RFC 4728 §9 SendBufferTimeout (ns-2's `send_timeout`, 30 s).
pub const SEND_BUFFER_TIMEOUT: Duration = Duration::from_secs(30);
/// ns-2 dsragent `SEND_BUF_SIZE`: packets held while discovering.
pub const SEND_BUFFER_SIZE: usize = 64;
/// RFC 4728 §9 RequestTableSize: initiators remembered for duplicate suppression.
pub const REQUEST_TABLE_SIZE: usize = 64;
/// RFC 4728 §9 RequestTableIds: request ids remembered per initiator.
pub const REQUEST_TABLE_IDS: usize = 16;
/// RFC 4728 §9 MaxRequestRexmt: propagating RREQs for one target before giving up.
pub const MAX_REQUEST_REXMT: u32 = 16;
/// RFC 4728 §9 RequestPeriod: wait after the first propagating RREQ (doubles).
pub const REQUEST_PERIOD: Duration = Duration::from_millis(500);
/// RFC 4728 §9 MaxRequestPeriod: the cap of the exponential backoff.
pub const MAX_REQUEST_PERIOD: Duration = Duration::from_secs(10);
/// RFC 4728 §9 NonpropRequestTimeout: wait after the non-propagating RREQ
/// (ns-2 sends this TTL-0 ring first).
pub const NONPROP_REQUEST_TIMEOUT: Duration = Duration::from_millis(30);
/// RFC 4728 §9 MaxSalvageCount: how often one packet may be salvaged.
pub const MAX_SALVAGE_COUNT: u8 = 15;
/// How long a packet handed to a neighbour counts as unconfirmed and is
/// salvaged if the link to it breaks (RFC 4728 §4.5 maintenance buffer).
/// Our own bound: longer than the 802.11 retry sequence (7 tries of a
/// 1500-byte frame at 1 Mb/s with backoff, ~100 ms) so the failed frame is
/// still there when the MAC gives up.
pub const MAINTENANCE_WINDOW: Duration = Duration::from_millis(200);
/// Paths kept in the route cache: ns-2's path cache (`MobiCache`) keeps 30
/// primary and 64 secondary routes; we keep one list of the same total.
pub const ROUTE_CACHE_SIZE: usize = 94;
/// How much the wait between propagating requests grows: RFC 4728 §8.2.1
/// doubles it. (ns-2's `BackOffTest` waits 2^(2n) periods, a factor 4.)
pub const REQUEST_BACKOFF_FACTOR: u64 = 2;

/// DSR parameters; [`Default`] gives the RFC 4728 §9 / ns-2 values above.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DsrConfig {
    pub discovery_hop_limit: u8,
    pub broadcast_jitter: Duration,
    pub route_cache_timeout: Duration,
    pub route_cache_size: usize,
    pub send_buffer_timeout: Duration,
    pub send_buffer_size: usize,
    pub request_table_size: usize,
    pub request_table_ids: usize,
    pub max_request_rexmt: u32,
    pub request_period: Duration,
    pub max_request_period: Duration,
    pub request_backoff_factor: u64,
    /// Send a non-propagating RREQ first (ns-2 does; RFC 4728 §8.2.1 MAY).
    pub nonprop_request_first: bool,
    pub nonprop_request_timeout: Duration,
    pub max_salvage_count: u8,
    pub maintenance_window: Duration,
    /// Intermediate nodes answer RREQs from their cache (RFC 4728 §8.2.3;
    /// ns-2's `dsragent_reply_from_cache_on_request`, on by default).
    pub reply_from_cache: bool,
}

impl Default for DsrConfig {
    fn default() -> Self {
        DsrConfig {
            discovery_hop_limit: DISCOVERY_HOP_LIMIT,
            broadcast_jitter: BROADCAST_JITTER,
            route_cache_timeout: ROUTE_CACHE_TIMEOUT,
            route_cache_size: ROUTE_CACHE_SIZE,
            send_buffer_timeout: SEND_BUFFER_TIMEOUT,
            send_buffer_size: SEND_BUFFER_SIZE,
            request_table_size: REQUEST_TABLE_SIZE,
            request_table_ids: REQUEST_TABLE_IDS,
            max_request_rexmt: MAX_REQUEST_REXMT,
            request_period: REQUEST_PERIOD,
            max_request_period: MAX_REQUEST_PERIOD,
            request_backoff_factor: REQUEST_BACKOFF_FACTOR,
            nonprop_request_first: true,
            nonprop_request_timeout: NONPROP_REQUEST_TIMEOUT,
            max_salvage_count: MAX_SALVAGE_COUNT,
            maintenance_window: MAINTENANCE_WINDOW,
            reply_from_cache: true,
        }
    }
}

// ---------------------------------------------------------------------------
// Wire format, modelled on RFC 4728 §6 options: one type byte, then fixed
// fields, then a one-byte count of 32-bit addresses (big-endian).
// ---------------------------------------------------------------------------

/// The most addresses a route can hold: the one-byte count of the wire
/// format (RFC 4728 §6.2's Opt Data Len bounds a route record the same way).
pub const MAX_ROUTE_LEN: usize = u8::MAX as usize;

/// Option types (RFC 4728 §6.2, §6.3, §6.4, §6.7 assign 1, 2, 3, 96).
const TYPE_RREQ: u8 = 1;
const TYPE_RREP: u8 = 2;
const TYPE_RERR: u8 = 3;
const TYPE_SOURCE_ROUTE: u8 = 96;

/// Why bytes are not a DSR packet.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("truncated")]
    Truncated,
    #[error("unknown option type {0}")]
    UnknownType(u8),
    #[error("trailing bytes")]
    Trailing,
    #[error("route too short")]
    RouteTooShort,
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn u8(&mut self) -> Result<u8, WireError> {
        let (&b, rest) = self.bytes.split_first().ok_or(WireError::Truncated)?;
        self.bytes = rest;
        Ok(b)
    }
    fn u16(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes([self.u8()?, self.u8()?]))
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes([self.u8()?, self.u8()?, self.u8()?, self.u8()?]))
    }
    fn addrs(&mut self) -> Result<Vec<NodeId>, WireError> {
        let n = self.u8()? as usize;
        if self.bytes.len() < 4 * n {
            return Err(WireError::Truncated);
        }
        (0..n).map(|_| self.u32()).collect()
    }
    fn end(self) -> Result<(), WireError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(WireError::Trailing)
        }
    }
}

fn put_addrs(out: &mut Vec<u8>, addrs: &[NodeId]) {
    // Routes are bounded by the hop limit (≤ 255) when built; a longer one
    // could only come from a bug, and is cut rather than mis-encoded.
    let n = addrs.len().min(MAX_ROUTE_LEN);
    out.push(n as u8);
    for a in &addrs[..n] {
        out.extend_from_slice(&a.to_be_bytes());
    }
}

/// A DSR control packet (RFC 4728 §6.2–6.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control {
    /// Route Request: `initiator` looks for `target`; `record` holds the
    /// nodes it crossed after the initiator (RFC 4728 §6.2).
    Rreq { id: u16, hop_limit: u8, initiator: NodeId, target: NodeId, record: Vec<NodeId> },
    /// Route Reply: the whole route, initiator first and target last; it
    /// travels back towards the initiator (RFC 4728 §6.3).
    Rrep { route: Vec<NodeId> },
    /// Route Error: the link `error_source` → `unreachable` broke; `route`
    /// is the way back, from the error source to the node being told
    /// (RFC 4728 §6.4).
    Rerr { error_source: NodeId, unreachable: NodeId, route: Vec<NodeId> },
}

impl Control {
    pub fn parse(bytes: &[u8]) -> Result<Control, WireError> {
        let mut r = Reader { bytes };
        let c = match r.u8()? {
            TYPE_RREQ => Control::Rreq {
                id: r.u16()?,
                hop_limit: r.u8()?,
                initiator: r.u32()?,
                target: r.u32()?,
                record: r.addrs()?,
            },
            TYPE_RREP => {
                let route = r.addrs()?;
                if route.len() < 2 {
                    return Err(WireError::RouteTooShort);
                }
                Control::Rrep { route }
            }
            TYPE_RERR => {
                let (error_source, unreachable) = (r.u32()?, r.u32()?);
                let route = r.addrs()?;
                if route.is_empty() {
                    return Err(WireError::RouteTooShort);
                }
                Control::Rerr { error_source, unreachable, route }
            }
            t => return Err(WireError::UnknownType(t)),
        };
        r.end()?;
        Ok(c)
    }

    pub fn emit(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.buffer_len());
        match self {
            Control::Rreq { id, hop_limit, initiator, target, record } => {
                out.push(TYPE_RREQ);
                out.extend_from_slice(&id.to_be_bytes());
                out.push(*hop_limit);
                out.extend_from_slice(&initiator.to_be_bytes());
                out.extend_from_slice(&target.to_be_bytes());
                put_addrs(&mut out, record);
            }
            Control::Rrep { route } => {
                out.push(TYPE_RREP);
                put_addrs(&mut out, route);
            }
            Control::Rerr { error_source, unreachable, route } => {
                out.push(TYPE_RERR);
                out.extend_from_slice(&error_source.to_be_bytes());
                out.extend_from_slice(&unreachable.to_be_bytes());
                put_addrs(&mut out, route);
            }
        }
        out
    }

    pub fn buffer_len(&self) -> usize {
        match self {
            Control::Rreq { record, .. } => 1 + 2 + 1 + 4 + 4 + 1 + 4 * record.len(),
            Control::Rrep { route } => 1 + 1 + 4 * route.len(),
            Control::Rerr { route, .. } => 1 + 4 + 4 + 1 + 4 * route.len(),
        }
    }
}

/// The source-route header of a data packet (RFC 4728 §6.7): the whole
/// path from the node that wrote it (the source, or a salvaging node) to
/// the destination, and how often the packet was salvaged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceRoute {
    pub salvage: u8,
    pub path: Vec<NodeId>,
}

impl SourceRoute {
    pub fn parse(bytes: &[u8]) -> Result<SourceRoute, WireError> {
        let mut r = Reader { bytes };
        let t = r.u8()?;
        if t != TYPE_SOURCE_ROUTE {
            return Err(WireError::UnknownType(t));
        }
        let salvage = r.u8()?;
        let path = r.addrs()?;
        r.end()?;
        if path.len() < 2 {
            return Err(WireError::RouteTooShort);
        }
        Ok(SourceRoute { salvage, path })
    }

    pub fn emit(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.buffer_len());
        out.push(TYPE_SOURCE_ROUTE);
        out.push(self.salvage);
        put_addrs(&mut out, &self.path);
        out
    }

    pub fn buffer_len(&self) -> usize {
        3 + 4 * self.path.len()
    }
}

// ---------------------------------------------------------------------------
// The engine.
// ---------------------------------------------------------------------------

/// A path in the route cache, starting at this node.
#[derive(Clone, Debug)]
struct CachedPath {
    path: Vec<NodeId>,
    last_used: Instant,
}

/// An ongoing Route Discovery for one target (RFC 4728 §8.2.1).
#[derive(Clone, Debug)]
struct Discovery {
    /// Propagating requests sent so far.
    rexmt: u32,
    period: Duration,
    next_at: Instant,
}

#[derive(Clone, Debug)]
struct Held {
    id: u64,
    dst: NodeId,
    since: Instant,
}

/// A packet recently handed to a neighbour (RFC 4728 §4.5 maintenance buffer).
#[derive(Clone, Debug)]
struct Sent {
    id: u64,
    src: NodeId,
    dst: NodeId,
    next_hop: NodeId,
    route: SourceRoute,
    at: Instant,
}

/// DSR at one node. A driver feeds it input (`handle_control`, `route`,
/// `on_link_failure`, `on_frame_heard`, and `handle_timeout` once
/// `poll_timeout` has passed), then drains `poll_transmit` and `poll_event`
/// (carrying out `Release`/`DropHeld` by packet id), then asks
/// `poll_timeout` again.
pub struct Dsr {
    node: NodeId,
    cfg: DsrConfig,
    rng: StreamRng,
    cache: Vec<CachedPath>,
    discoveries: BTreeMap<NodeId, Discovery>,
    next_request_id: u16,
    /// Per initiator: the (id, target) pairs seen, newest last, and when the
    /// entry was last used (for LRU eviction, RFC 4728 §4.3).
    request_table: BTreeMap<NodeId, (Instant, VecDeque<(u16, NodeId)>)>,
    send_buffer: VecDeque<Held>,
    maintenance: VecDeque<Sent>,
    /// The route this node, as a source, last used per destination, for
    /// Found/Changed/Lost events.
    active: BTreeMap<NodeId, Vec<NodeId>>,
    /// Rebroadcasts waiting out their jitter.
    jittered: Vec<(Instant, Transmit)>,
    transmits: VecDeque<Transmit>,
    events: VecDeque<RouteEvent>,
    stats: RoutingStats,
}

impl Dsr {
    /// `rng` is this node's routing stream, [`crate::node_rng`].
    pub fn new(node: NodeId, cfg: DsrConfig, rng: StreamRng) -> Self {
        Dsr {
            node,
            cfg,
            rng,
            cache: Vec::new(),
            discoveries: BTreeMap::new(),
            next_request_id: 0,
            request_table: BTreeMap::new(),
            send_buffer: VecDeque::new(),
            maintenance: VecDeque::new(),
            active: BTreeMap::new(),
            jittered: Vec::new(),
            transmits: VecDeque::new(),
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
        self.cache
            .iter()
            .filter(|c| now.saturating_since(c.last_used) < self.cfg.route_cache_timeout)
            .filter_map(|c| c.path.iter().position(|&n| n == dst).map(|i| c.path[..=i].to_vec()))
            .filter(|p| p.len() >= 2)
            .min_by_key(|p| p.len())
    }

    fn touch_route(&mut self, now: Instant, route: &[NodeId]) {
        for c in &mut self.cache {
            if c.path.starts_with(route) {
                c.last_used = now;
            }
        }
    }

    /// Adds a path starting at this node (RFC 4728 §4.1 path cache), unless
    /// it repeats a node or is covered by a cached path already.
    fn learn(&mut self, now: Instant, path: Vec<NodeId>) {
        if path.len() < 2 || path.len() > MAX_ROUTE_LEN || path[0] != self.node || has_duplicates(&path) {
            return;
        }
        if let Some(c) = self.cache.iter_mut().find(|c| c.path.starts_with(&path)) {
            c.last_used = now;
            return;
        }
        // A longer path supersedes cached prefixes of itself.
        self.cache.retain(|c| !path.starts_with(&c.path));
        let timeout = self.cfg.route_cache_timeout;
        self.cache.retain(|c| now.saturating_since(c.last_used) < timeout);
        if self.cache.len() >= self.cfg.route_cache_size {
            if let Some(i) = (0..self.cache.len()).min_by_key(|&i| self.cache[i].last_used) {
                self.cache.remove(i);
            }
        }
        self.cache.push(CachedPath { path, last_used: now });
        self.release_held(now);
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
        for c in &mut self.cache {
            if let Some(i) = c.path.windows(2).position(|w| (w[0] == a && w[1] == b) || (w[0] == b && w[1] == a)) {
                c.path.truncate(i + 1);
            }
        }
        self.cache.retain(|c| c.path.len() >= 2);
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

    fn send(&mut self, dest: Dest, c: &Control) {
        self.transmits.push_back(Transmit { dest, bytes: c.emit() });
    }

    /// Sends a request for `target` (RFC 4728 §8.2.1).
    fn send_request(&mut self, target: NodeId, hop_limit: u8) {
        self.next_request_id = self.next_request_id.wrapping_add(1);
        let id = self.next_request_id;
        self.stats.route_discoveries += 1;
        self.send(Dest::Broadcast, &Control::Rreq { id, hop_limit, initiator: self.node, target, record: Vec::new() });
    }

    fn start_discovery(&mut self, now: Instant, target: NodeId) {
        if self.discoveries.contains_key(&target) {
            return;
        }
        let d = if self.cfg.nonprop_request_first {
            self.send_request(target, 0);
            Discovery { rexmt: 0, period: self.cfg.request_period, next_at: now + self.cfg.nonprop_request_timeout }
        } else {
            self.send_request(target, self.cfg.discovery_hop_limit);
            let period = self.cfg.request_period.as_nanos().saturating_mul(self.cfg.request_backoff_factor);
            let period = Duration::from_nanos(period).min(self.cfg.max_request_period);
            Discovery { rexmt: 1, period, next_at: now + self.cfg.request_period }
        };
        self.discoveries.insert(target, d);
    }

    /// Whether (initiator, id, target) was seen; records it if not
    /// (RFC 4728 §8.2.2 duplicate suppression).
    fn remember_request(&mut self, now: Instant, initiator: NodeId, id: u16, target: NodeId) -> bool {
        if !self.request_table.contains_key(&initiator) && self.request_table.len() >= self.cfg.request_table_size {
            if let Some((&lru, _)) = self.request_table.iter().min_by_key(|(_, (t, _))| *t) {
                self.request_table.remove(&lru);
            }
        }
        let ids = self.cfg.request_table_ids;
        let (used, seen) = self.request_table.entry(initiator).or_insert_with(|| (now, VecDeque::new()));
        *used = now;
        if seen.contains(&(id, target)) {
            return true;
        }
        if seen.len() >= ids {
            seen.pop_front();
        }
        seen.push_back((id, target));
        false
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
            self.send(Dest::Unicast(back), &Control::Rrep { route });
            return;
        }
        if self.remember_request(now, initiator, id, target) {
            return;
        }
        if self.cfg.reply_from_cache {
            if let Some(cached) = self.cached_route(now, target) {
                let mut full = route.clone();
                full.extend_from_slice(&cached[1..]);
                if !has_duplicates(&full) && full.len() <= MAX_ROUTE_LEN {
                    // RFC 4728 §8.2.3: reply instead of propagating.
                    self.send(Dest::Unicast(back), &Control::Rrep { route: full });
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
        let jitter_ns = self.rng.gen_range(0..=self.cfg.broadcast_jitter.as_nanos());
        self.jittered
            .push((now + Duration::from_nanos(jitter_ns), Transmit { dest: Dest::Broadcast, bytes: c.emit() }));
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
            self.send(Dest::Unicast(route[i - 1]), &Control::Rrep { route });
        }
    }

    fn handle_rerr(&mut self, now: Instant, error_source: NodeId, unreachable: NodeId, route: Vec<NodeId>) {
        self.remove_link(now, error_source, unreachable);
        if let Some(i) = route.iter().position(|&n| n == self.node) {
            if let Some(&next) = route.get(i + 1) {
                self.send(Dest::Unicast(next), &Control::Rerr { error_source, unreachable, route });
            }
        }
    }

    /// Releases every held packet that now has a route.
    fn release_held(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.send_buffer.len() {
            let dst = self.send_buffer[i].dst;
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
        self.touch_route(now, &route);
        self.note_route(dst, &route);
        let next_hop = route[1];
        let sr = SourceRoute { salvage: 0, path: route };
        let header = sr.emit();
        self.remember_sent(now, id, self.node, dst, next_hop, sr);
        (next_hop, header)
    }

    fn remember_sent(&mut self, now: Instant, id: u64, src: NodeId, dst: NodeId, next_hop: NodeId, route: SourceRoute) {
        let window = self.cfg.maintenance_window;
        while self.maintenance.front().is_some_and(|s| now.saturating_since(s.at) > window) {
            self.maintenance.pop_front();
        }
        self.maintenance.push_back(Sent { id, src, dst, next_hop, route, at: now });
    }

    fn hold(&mut self, now: Instant, id: u64, dst: NodeId) {
        if self.send_buffer.len() >= self.cfg.send_buffer_size {
            if let Some(old) = self.send_buffer.pop_front() {
                self.events.push_back(RouteEvent::DropHeld { id: old.id, reason: DropReason::BufferOverflow });
            }
        }
        self.send_buffer.push_back(Held { id, dst, since: now });
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
            self.send(Dest::Unicast(next), &c);
        }
        if s.route.salvage >= self.cfg.max_salvage_count {
            return;
        }
        if let Some(route) = self.cached_route(now, s.dst) {
            self.touch_route(now, &route);
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
            if !self.send_buffer.iter().any(|h| h.dst == target) {
                continue; // nothing waits for it any more
            }
            if d.rexmt >= self.cfg.max_request_rexmt {
                // RFC 4728 §8.2.1: give up; the packets waiting are dropped.
                let (gone, kept): (Vec<_>, Vec<_>) = self.send_buffer.drain(..).partition(|h| h.dst == target);
                self.send_buffer = kept.into();
                for h in gone {
                    self.events.push_back(RouteEvent::DropHeld { id: h.id, reason: DropReason::NoRoute });
                }
                continue;
            }
            self.send_request(target, self.cfg.discovery_hop_limit);
            d.rexmt += 1;
            d.next_at = now + d.period;
            // RFC 4728 §8.2.1: exponential backoff up to MaxRequestPeriod.
            let next = d.period.as_nanos().saturating_mul(self.cfg.request_backoff_factor);
            d.period = Duration::from_nanos(next).min(self.cfg.max_request_period);
            self.discoveries.insert(target, d);
        }
    }
}

fn has_duplicates(path: &[NodeId]) -> bool {
    path.iter().enumerate().any(|(i, n)| path[..i].contains(n))
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
        // Jittered rebroadcasts whose time has come.
        let mut i = 0;
        while i < self.jittered.len() {
            if self.jittered[i].0 <= now {
                let (_, t) = self.jittered.remove(i);
                self.transmits.push_back(t);
            } else {
                i += 1;
            }
        }
        // RFC 4728 §8.2 SendBufferTimeout.
        let timeout = self.cfg.send_buffer_timeout;
        while let Some(pos) = self.send_buffer.iter().position(|h| now.saturating_since(h.since) >= timeout) {
            let h = self.send_buffer.remove(pos).expect("in range");
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
        let window = self.cfg.maintenance_window;
        while self.maintenance.front().is_some_and(|s| now.saturating_since(s.at) > window) {
            self.maintenance.pop_front();
        }
        if let Some(i) = self.maintenance.iter().position(|s| s.next_hop == neighbour) {
            let s = self.maintenance.remove(i).expect("in range");
            self.salvage(now, s);
        }
    }

    fn on_frame_heard(&mut self, now: Instant, neighbour: NodeId, _rx_power_dbm: f64) {
        // Hearing the neighbour is the passive acknowledgement of RFC 4728
        // §8.3.2 as far as we can take it: what we handed it before now got
        // through (the MAC sends in order), so it is not salvaged later.
        self.maintenance.retain(|s| s.next_hop != neighbour || s.at >= now);
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit> {
        let t = self.transmits.pop_front()?;
        self.stats.control_packets_sent += 1;
        self.stats.control_bytes_sent += t.bytes.len() as u64;
        Some(t)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let jitter = self.jittered.iter().map(|(t, _)| *t);
        let held = self.send_buffer.iter().map(|h| h.since + self.cfg.send_buffer_timeout);
        let disc = self.discoveries.values().map(|d| d.next_at);
        jitter.chain(held).chain(disc).min()
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

    const SEED: u64 = 7;

    fn dsr(node: NodeId, cfg: &DsrConfig) -> Dsr {
        Dsr::new(node, cfg.clone(), crate::node_rng(SEED, node))
    }

    fn net(n: usize, links: &[(NodeId, NodeId)], cfg: DsrConfig) -> Net<Dsr> {
        Net::new(n, links, |node| dsr(node, &cfg))
    }

    fn chain(n: usize) -> Net<Dsr> {
        let links: Vec<_> = (1..n as NodeId).map(|i| (i - 1, i)).collect();
        net(n, &links, DsrConfig::default())
    }

    fn total_control(net: &Net<Dsr>) -> u64 {
        net.control_sent.iter().sum()
    }

    /// The source route node `node` released packet `id` with.
    fn released_path(net: &Net<Dsr>, node: NodeId, id: u64) -> Vec<NodeId> {
        let header = net
            .events
            .iter()
            .find_map(|(_, n, e)| match e {
                RouteEvent::Release { id: i, header: Some(h), .. } if *n == node && *i == id => Some(h.clone()),
                _ => None,
            })
            .expect("released");
        SourceRoute::parse(&header).expect("valid header").path
    }

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
    fn a_neighbour_is_found_by_the_non_propagating_request_alone() {
        let mut net = chain(3);
        let id = net.send(0, 1);
        net.run_for(Duration::from_secs(1));
        assert!(matches!(net.fate(id), Fate::Delivered { hops: 1, .. }));
        assert_eq!(net.engines[0].stats().route_discoveries, 1);
        // Node 1 did not propagate the ring-0 request.
        assert!(net.engines[1].stats().control_packets_sent <= 1, "only its RREP");
    }

    #[test]
    fn second_packet_goes_without_a_new_discovery() {
        let mut net = chain(6);
        let first = net.send(0, 5);
        net.run_for(Duration::from_secs(1));
        assert!(matches!(net.fate(first), Fate::Delivered { hops: 5, .. }));
        let (control, discoveries) = (total_control(&net), net.engines[0].stats().route_discoveries);
        assert!(discoveries >= 1 && control > 0);
        let second = net.send(0, 5);
        assert_eq!(net.fate(second), &Fate::InFlight, "forwarded at once, not held");
        net.run_for(Duration::from_secs(1));
        assert!(matches!(net.fate(second), Fate::Delivered { hops: 5, .. }));
        assert_eq!(total_control(&net), control);
        assert_eq!(net.engines[0].stats().route_discoveries, discoveries);
    }

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
    fn unreachable_destination_is_dropped_after_the_send_buffer_timeout() {
        let mut net = net(4, &[(0, 1), (1, 2)], DsrConfig::default());
        let id = net.send(0, 3);
        net.run_until(Instant::ZERO + SEND_BUFFER_TIMEOUT - Duration::from_millis(1));
        assert_eq!(net.fate(id), &Fate::Held);
        // Ring 0 at 0 s, then propagating requests at 0.03, 0.53, 1.53,
        // 3.53, 7.53, 15.53 and 25.53 s (doubling from 500 ms, cap 10 s).
        assert_eq!(net.engines[0].stats().route_discoveries, 8);
        net.run_until(Instant::ZERO + SEND_BUFFER_TIMEOUT);
        assert_eq!(net.fate(id), &Fate::Dropped(DropReason::DiscoveryTimeout));

        // ns-2's factor 4: 0, 0.03, 0.53, 2.53, 10.53 and 20.53 s.
        let cfg = DsrConfig { request_backoff_factor: 4, ..DsrConfig::default() };
        let mut four = self::net(4, &[(0, 1), (1, 2)], cfg);
        let id = four.send(0, 3);
        four.run_until(Instant::ZERO + SEND_BUFFER_TIMEOUT - Duration::from_millis(1));
        assert_eq!(four.fate(id), &Fate::Held);
        assert_eq!(four.engines[0].stats().route_discoveries, 6);
    }

    #[test]
    fn discovery_gives_up_after_max_request_rexmt() {
        let cfg = DsrConfig { max_request_rexmt: 2, ..DsrConfig::default() };
        let mut net = net(3, &[(0, 1)], cfg);
        let id = net.send(0, 2);
        net.run_until(Instant::from_nanos(1_529_000_000));
        assert_eq!(net.fate(id), &Fate::Held);
        net.run_until(Instant::from_nanos(1_530_000_000));
        assert_eq!(net.fate(id), &Fate::Dropped(DropReason::NoRoute));
        assert_eq!(net.engines[0].stats().route_discoveries, 3);
    }

    #[test]
    fn a_full_send_buffer_drops_its_oldest_packet() {
        let cfg = DsrConfig { send_buffer_size: 2, ..DsrConfig::default() };
        let mut net = net(3, &[(0, 1)], cfg);
        let ids: Vec<u64> = (0..3).map(|_| net.send(0, 2)).collect();
        assert_eq!(net.fate(ids[0]), &Fate::Dropped(DropReason::BufferOverflow));
        assert_eq!(net.fate(ids[1]), &Fate::Held);
        assert_eq!(net.fate(ids[2]), &Fate::Held);
    }

    #[test]
    fn intermediate_node_replies_from_its_cache() {
        // 0 – 1 – 2 – 3 – 4 – 5: a discovery 0 → 4 teaches 4 the way back to 0.
        let mut net = chain(6);
        let first = net.send(0, 4);
        net.run_for(Duration::from_secs(1));
        assert!(matches!(net.fate(first), Fate::Delivered { hops: 4, .. }));
        let before: Vec<u64> = net.control_sent.clone();
        let id = net.send(5, 0);
        net.run_for(Duration::from_secs(1));
        assert!(matches!(net.fate(id), Fate::Delivered { hops: 5, .. }), "{:?}", net.fate(id));
        assert_eq!(released_path(&net, 5, id), vec![5, 4, 3, 2, 1, 0]);
        // The ring-0 request was answered by 4 from its cache: no
        // propagating request, and nodes 0–3 sent no control packet.
        assert_eq!(net.engines[5].stats().route_discoveries, 1);
        assert_eq!(&net.control_sent[..4], &before[..4]);
        assert_eq!(net.control_sent[4], before[4] + 1, "one RREP");
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

    #[test]
    fn wire_formats_on_fixed_bytes() {
        let rreq = [1, 0, 7, 3, 0, 0, 0, 1, 0, 0, 0, 9, 2, 0, 0, 0, 2, 0, 0, 0, 3];
        let c = Control::Rreq { id: 7, hop_limit: 3, initiator: 1, target: 9, record: vec![2, 3] };
        assert_eq!(Control::parse(&rreq), Ok(c.clone()));
        assert_eq!(c.emit(), rreq);
        assert_eq!(c.buffer_len(), rreq.len());
        let rrep = [2, 2, 0, 0, 0, 1, 0, 0, 0, 2];
        assert_eq!(Control::parse(&rrep), Ok(Control::Rrep { route: vec![1, 2] }));
        let rerr = [3, 0, 0, 0, 2, 0, 0, 0, 3, 2, 0, 0, 0, 2, 0, 0, 0, 1];
        let c = Control::Rerr { error_source: 2, unreachable: 3, route: vec![2, 1] };
        assert_eq!(Control::parse(&rerr), Ok(c.clone()));
        assert_eq!(c.emit(), rerr);
        let sr = [96, 1, 2, 0, 0, 0, 4, 0, 0, 0, 5];
        let s = SourceRoute { salvage: 1, path: vec![4, 5] };
        assert_eq!(SourceRoute::parse(&sr), Ok(s.clone()));
        assert_eq!(s.emit(), sr);
        assert_eq!(s.buffer_len(), sr.len());
        assert_eq!(Control::parse(&rreq[..rreq.len() - 1]), Err(WireError::Truncated));
        assert_eq!(Control::parse(&[rrep.as_slice(), &[0]].concat()), Err(WireError::Trailing));
        assert_eq!(Control::parse(&[2, 1, 0, 0, 0, 1]), Err(WireError::RouteTooShort));
        assert_eq!(Control::parse(&[4]), Err(WireError::UnknownType(4)));
        assert_eq!(SourceRoute::parse(&[]), Err(WireError::Truncated));
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
                            e.handle_timeout(now);
                            prop_assert!(e.poll_timeout().is_none_or(|t| t > now));
                        }
                    }
                }
                while e.poll_transmit(now).is_some() {}
                while e.poll_event().is_some() {}
            }
        }

        #[test]
        fn control_packets_round_trip(id: u16, hop_limit: u8, a: u32, b: u32, record in proptest::collection::vec(any::<u32>(), 0..20)) {
            for c in [
                Control::Rreq { id, hop_limit, initiator: a, target: b, record: record.clone() },
                Control::Rrep { route: [vec![a, b], record.clone()].concat() },
                Control::Rerr { error_source: a, unreachable: b, route: [vec![a], record.clone()].concat() },
            ] {
                prop_assert_eq!(Control::parse(&c.emit()), Ok(c.clone()));
            }
            let s = SourceRoute { salvage: hop_limit, path: [vec![a, b], record].concat() };
            prop_assert_eq!(SourceRoute::parse(&s.emit()), Ok(s));
        }
    }
}
