//! A receiving endpoint: many connections behind one address, told apart by
//! connection id (quinn-proto's `Endpoint` is the model).
//!
//! The [`Endpoint`] owns the table of connections and every decision about
//! it: which connection a datagram belongs to, whether a SYN opens a new one
//! (within the limits: [`EndpointConfig::max_connections`] in progress,
//! [`EndpointConfig::max_connections_per_peer`] per host), which one gives
//! way when there is no room (a half-open one first, else one stalled for
//! [`EndpointConfig::stalled_after`], the one idle longest first), when a
//! SYN is refused with a busy RST, which stray datagram is answered with a
//! reset, how the out-of-order memory budget is shared, and how long a
//! finished connection lingers to answer repeated FINs (docs/PROTOCOLS.md §6).
//!
//! It does no I/O and reads no clock: the driver owns the socket, the files
//! and the seal (`--psk`), and passes `now` in. It keeps, per connection,
//! the receiving engine and an opaque `C` of the driver's (its file, its
//! seal); resets carry an opaque `S` the driver seals them with.
//!
//! A driver calls, for each datagram from `peer`:
//! 1. [`Endpoint::route`]: malformed, stray, a known connection, or an
//!    unknown one;
//! 2. after opening the datagram (with `--psk`): for a known connection
//!    [`Endpoint::handle_input`]; for an unknown one [`Endpoint::handle_new`],
//!    and on [`Incoming::Accept`] it ends the evicted connection if any, then
//!    [`Endpoint::insert`]s the new one and calls `handle_input`;
//!
//! and whenever anything happened: the engines' timers and events
//! ([`Endpoint::active_mut`]); [`Endpoint::remove`] and, if it completed,
//! [`Endpoint::linger`] for each connection that ended;
//! [`Endpoint::poll_lingering`]; [`Endpoint::poll_reset`] until `None`, then
//! each connection's `poll_transmit` ([`Endpoint::connections_mut`]);
//! finally [`Endpoint::next_deadline`] to learn when to come back.

use crate::connection::{protocol_of, wire_id, wire_matches, ReceiverEngine};
use crate::engine::Protocol;
use crate::wire::{Control, Packet, ProtocolId, Repr, ResetReason};
use meshbed_core::{Duration, Instant};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// A peer's address as the driver knows it. Limits per peer count the
/// connections of one [`PeerAddr::host`] (all ports of an IP address).
pub trait PeerAddr: Copy + Eq + fmt::Debug {
    type Host: Eq;
    fn host(&self) -> Self::Host;
}

impl PeerAddr for SocketAddr {
    type Host = IpAddr;
    fn host(&self) -> IpAddr {
        self.ip()
    }
}

/// The endpoint's limits (docs/PROTOCOLS.md §6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointConfig {
    /// Connections in progress at most; finished ones (lingering) do not count.
    pub max_connections: usize,
    /// Connections in progress from one host at most.
    pub max_connections_per_peer: usize,
    /// Finished connections kept to answer repeated FINs; when full, the one
    /// heard from least recently goes first.
    pub max_lingering: usize,
    /// A connection whose stream has not grown for this long may be evicted
    /// when a new one finds no room.
    pub stalled_after: Duration,
    /// How long a finished connection lingers after its last datagram.
    pub linger: Duration,
    /// Out-of-order bytes one connection may hold, charged with per-piece
    /// overhead ([`crate::reorder`]).
    pub max_reorder_bytes_per_connection: u64,
    /// Out-of-order bytes all connections together may hold, charged likewise.
    pub max_reorder_bytes: u64,
    /// Answer datagrams of unknown connections with RST (rate-limited), so
    /// that a sender whose receiver restarted learns it at once instead of
    /// after its timeout. Busy refusals are sent either way.
    pub reset_unknown: bool,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            max_connections: 64,
            max_connections_per_peer: 8,
            max_lingering: 256,
            stalled_after: Duration::from_secs(5),
            linger: Duration::from_secs(10),
            max_reorder_bytes_per_connection: 4 << 20,
            max_reorder_bytes: 64 << 20,
            reset_unknown: true,
        }
    }
}

/// What the endpoint decided and counted.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointCounters {
    /// Well-formed but for no connection here (unknown id and not a SYN, or a
    /// known id from another address), or a SYN whose id names no protocol
    /// or the other protocol family.
    pub stray: u64,
    /// SYNs refused because every slot, or the peer's share, was taken by
    /// connections that could not be evicted.
    pub over_capacity: u64,
    /// Connections ended to make room for a new one (half-open or stalled).
    pub evicted: u64,
    /// Finished connections dropped before their linger ended because the
    /// lingering table was full.
    pub lingering_evicted: u64,
    /// SYNs of a sealed connection opened before (same id, same peer
    /// instance): a recording replayed whole.
    pub replayed: u64,
    /// Resets not sent because of the per-id interval, the stateless-reset
    /// budget or a full queue.
    pub resets_suppressed: u64,
    /// Data datagrams dropped because holding them would have exceeded a
    /// reorder limit.
    pub dropped_over_buffer_limit: u64,
    /// What the out-of-order bytes of all connections are charged now, and
    /// at most so far.
    pub reorder_bytes: u64,
    pub reorder_peak_bytes: u64,
}

/// One connection in the table: its engine, its bookkeeping, and the
/// driver's state `app`.
pub struct Connection<P, C> {
    pub peer: P,
    pub protocol: Protocol,
    pub engine: ReceiverEngine,
    pub started: Instant,
    pub last_input: Instant,
    /// When the stream last grew in order (the SYN's arrival before that).
    pub last_progress: Instant,
    /// What its out-of-order bytes were charged after the last input.
    reorder_charge: u64,
    reorder_peak: u64,
    pub app: C,
}

impl<P, C> Connection<P, C> {
    /// The most its out-of-order bytes were charged.
    pub fn reorder_peak_bytes(&self) -> u64 {
        self.reorder_peak
    }
}

/// Where [`Endpoint::route`] sends a datagram.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// Too short for the header: no connection id.
    Malformed,
    /// A known connection id from another address (counted stray).
    Stray,
    /// A connection in progress or lingering.
    Known(u32),
    /// No connection here has this id.
    Unknown(u32),
}

/// Why a connection was evicted for a new one.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Eviction {
    /// Stalled (its stream did not grow for `stalled_after`), rather than
    /// half-open (nothing received after the SYN).
    pub stalled: bool,
    /// Since its stream last grew (or since the SYN).
    pub idle: Duration,
}

impl fmt::Display for Eviction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let idle = self.idle.as_secs_f64();
        if self.stalled {
            write!(f, "evicted for a new transfer: nothing new for {idle:.1} s")
        } else {
            write!(f, "evicted for a new transfer: nothing received for {idle:.1} s after the SYN")
        }
    }
}

/// What became of a datagram for an unknown connection.
// Returned once per new connection and taken apart at once: the evicted
// connection travels inline rather than through an allocation.
#[allow(clippy::large_enum_variant)]
pub enum Incoming<P, C, S> {
    /// Not a connection-opening SYN, or one naming no protocol of its wire
    /// family: counted stray, answered with a reset if the budget allows.
    Stray,
    /// A sealed connection opened before, replayed.
    Replayed,
    /// No room: refused, answered with a busy RST if the budget allows.
    Refused,
    /// Room was made: the driver ends `evicted` (already out of the table;
    /// its sender should get a busy RST through [`Endpoint::reset_connection`]),
    /// then builds the engine for `protocol` and [`Endpoint::insert`]s it,
    /// with `seal`.
    Accept { protocol: Protocol, seal: S, evicted: Option<(u32, Connection<P, C>, Eviction)> },
}

/// A reset [`Endpoint::poll_reset`] wrote, for the driver to seal and send.
pub struct ResetTransmit<P, S> {
    pub peer: P,
    pub connection_id: u32,
    /// Bytes written at the start of the buffer.
    pub len: usize,
    pub seal: S,
}

struct PendingReset<P, S> {
    peer: P,
    protocol: ProtocolId,
    connection_id: u32,
    reason: Option<ResetReason>,
    seal: S,
}

/// Resets waiting for [`Endpoint::poll_reset`] at most; more are dropped
/// (they are advisory, and a flood must not grow the queue).
const MAX_PENDING_RESETS: usize = 1024;
/// One reset per connection id per this many nanoseconds at most.
const RESET_INTERVAL_NS: u64 = 100_000_000;
/// Ids the per-id interval remembers before it forgets them all (a flood of
/// fresh ids must not grow the map; the budget below still holds then).
const RESET_IDS_REMEMBERED: usize = 4096;
/// Sealed connections remembered against whole-connection replay.
const REMEMBERED_CONNECTIONS: usize = 65_536;

/// Resets answering datagrams of no connection here (stray data, refused
/// SYNs) draw from a token bucket, so that a flood of forged datagrams with
/// fresh ids (the per-id interval does not slow those) cannot turn the
/// endpoint into a reflector aimed at a spoofed source. quinn-proto allows
/// one stateless reset per 20 ms; a meshbed receiver that restarts in the
/// middle of [`EndpointConfig::max_connections`] (64) transfers must tell
/// each sender at once, so the bucket holds 64 resets and refills one per
/// 10 ms: at most 64 + 100/s resets, 36-byte headers (plus the seal with
/// `--psk`), about 5 kB/s sustained. A reset is never longer than the
/// datagram that caused it (both carry the full header, and both are sealed
/// or neither), so it amplifies nothing. Resets of connections the endpoint
/// had (an evicted transfer, a refused file) do not draw from it: there are
/// at most as many as connections.
const STATELESS_RESET_BURST: u32 = 64;
const STATELESS_RESET_REFILL_NS: u64 = 10_000_000;

/// The stateless-reset token bucket.
#[derive(Clone, Debug)]
struct ResetBudget {
    tokens: u32,
    /// Up to when refills were counted; `None` before the first reset.
    refilled_to: Option<Instant>,
}

impl ResetBudget {
    fn new() -> Self {
        ResetBudget { tokens: STATELESS_RESET_BURST, refilled_to: None }
    }
    /// Takes a token if there is one.
    fn take(&mut self, now: Instant) -> bool {
        let since = self.refilled_to.get_or_insert(now);
        let refills = now.saturating_since(*since).as_nanos() / STATELESS_RESET_REFILL_NS;
        if refills > 0 {
            let room = u64::from(STATELESS_RESET_BURST - self.tokens);
            self.tokens += refills.min(room) as u32;
            // A full bucket does not save up refills; otherwise keep the
            // fraction of an interval already waited.
            *since = if self.tokens == STATELESS_RESET_BURST {
                now
            } else {
                *since + Duration::from_nanos(refills * STATELESS_RESET_REFILL_NS)
            };
        }
        let ok = self.tokens > 0;
        self.tokens -= u32::from(ok);
        ok
    }
}

/// A receiving endpoint's connection table. See the module doc for the
/// calling order.
pub struct Endpoint<P, C, S> {
    config: EndpointConfig,
    /// Connections in progress.
    active: BTreeMap<u32, Connection<P, C>>,
    /// Finished connections answering repeated FINs until their linger ends.
    lingering: BTreeMap<u32, Connection<P, C>>,
    counters: EndpointCounters,
    last_reset: HashMap<u32, Instant>,
    budget: ResetBudget,
    resets: VecDeque<PendingReset<P, S>>,
    /// The (connection id, peer instance) of the last
    /// [`REMEMBERED_CONNECTIONS`] sealed connections opened.
    opened: VecDeque<(u32, [u8; 16])>,
    opened_set: HashSet<(u32, [u8; 16])>,
}

impl<P: PeerAddr, C, S> Endpoint<P, C, S> {
    pub fn new(config: EndpointConfig) -> Self {
        Endpoint {
            config,
            active: BTreeMap::new(),
            lingering: BTreeMap::new(),
            counters: EndpointCounters::default(),
            last_reset: HashMap::new(),
            budget: ResetBudget::new(),
            resets: VecDeque::new(),
            opened: VecDeque::new(),
            opened_set: HashSet::new(),
        }
    }

    pub fn config(&self) -> &EndpointConfig {
        &self.config
    }
    pub fn counters(&self) -> EndpointCounters {
        self.counters
    }
    /// Connections in progress and finished ones lingering.
    pub fn len(&self) -> (usize, usize) {
        (self.active.len(), self.lingering.len())
    }
    pub fn is_empty(&self) -> bool {
        self.active.is_empty() && self.lingering.is_empty()
    }

    /// The connection `datagram` from `peer` belongs to, by the connection
    /// id in the clear header (sealed or not).
    pub fn route(&mut self, peer: P, datagram: &[u8]) -> Route {
        let Ok(packet) = Packet::new_checked(datagram) else { return Route::Malformed };
        let id = packet.connection_id();
        match self.get(id) {
            Some(c) if c.peer != peer => {
                self.counters.stray += 1;
                Route::Stray
            }
            Some(_) => Route::Known(id),
            None => Route::Unknown(id),
        }
    }

    fn get(&self, id: u32) -> Option<&Connection<P, C>> {
        self.lingering.get(&id).or_else(|| self.active.get(&id))
    }
    /// A connection in progress or lingering.
    pub fn get_mut(&mut self, id: u32) -> Option<&mut Connection<P, C>> {
        match self.lingering.get_mut(&id) {
            Some(c) => Some(c),
            None => self.active.get_mut(&id),
        }
    }

    /// Feeds a datagram (opened and parsed) to known connection `id`: a
    /// lingering one's engine answers it; one in progress gets it with its
    /// share of the reorder budget: its own limit, or what the others leave
    /// of the endpoint's.
    pub fn handle_input(&mut self, now: Instant, id: u32, datagram: &[u8]) {
        if let Some(conn) = self.lingering.get_mut(&id) {
            conn.last_input = now;
            conn.engine.engine().handle_input(now, datagram);
            return;
        }
        let total = self.counters.reorder_bytes;
        let Some(conn) = self.active.get_mut(&id) else { return };
        let others = total - conn.reorder_charge;
        let limit =
            self.config.max_reorder_bytes_per_connection.min(self.config.max_reorder_bytes.saturating_sub(others));
        conn.engine.set_reorder_limit(limit);
        let stats = conn.engine.engine_ref().stats();
        let (delivered, over_limit) = (stats.bytes_delivered, stats.dropped_over_buffer_limit);
        conn.engine.engine().handle_input(now, datagram);
        let stats = conn.engine.engine_ref().stats();
        conn.last_input = now;
        if stats.bytes_delivered > delivered {
            conn.last_progress = now;
        }
        let c = &mut self.counters;
        c.dropped_over_buffer_limit += stats.dropped_over_buffer_limit - over_limit;
        conn.reorder_charge = conn.engine.reorder_charge();
        conn.reorder_peak = conn.reorder_peak.max(conn.reorder_charge);
        c.reorder_bytes = others + conn.reorder_charge;
        c.reorder_peak_bytes = c.reorder_peak_bytes.max(c.reorder_bytes);
    }

    /// Decides about a datagram (opened and parsed: `repr`) from `peer` for
    /// unknown connection `id`. `instance` identifies the peer instance of a
    /// sealed connection (the salt its first datagram carried); `seal` seals
    /// a reset to it.
    pub fn handle_new(
        &mut self,
        now: Instant,
        peer: P,
        id: u32,
        repr: &Repr,
        instance: Option<[u8; 16]>,
        seal: S,
    ) -> Incoming<P, C, S> {
        let c = repr.control;
        let opens = c.contains(Control::SYN) && !c.contains(Control::ACK) && !c.contains(Control::SACK_OPT);
        if !opens {
            self.counters.stray += 1;
            // Feedback and ACKs travel towards senders; only answer data.
            let tcp_ack = repr.protocol == ProtocolId::Tcp
                && repr.payload_len == 0
                && !c.contains(Control::FIN)
                && !c.contains(Control::SYN);
            if !c.contains(Control::SACK_OPT) && !tcp_ack && !c.contains(Control::RST) {
                self.queue_reset(now, peer, repr.protocol, id, None, seal, true);
            }
            return Incoming::Stray;
        }
        if instance.is_some_and(|i| self.opened_set.contains(&(id, i))) {
            self.counters.replayed += 1;
            return Incoming::Replayed;
        }
        let Some(protocol) = protocol_of(id).filter(|&p| wire_matches(p, repr.protocol)) else {
            self.counters.stray += 1;
            return Incoming::Stray;
        };
        let Ok(evicted) = self.make_room(now, peer) else {
            self.counters.over_capacity += 1;
            if !c.contains(Control::RST) {
                self.queue_reset(now, peer, repr.protocol, id, Some(ResetReason::Busy), seal, true);
            }
            return Incoming::Refused;
        };
        if let Some(instance) = instance {
            if self.opened.len() >= REMEMBERED_CONNECTIONS {
                if let Some(old) = self.opened.pop_front() {
                    self.opened_set.remove(&old);
                }
            }
            self.opened.push_back((id, instance));
            self.opened_set.insert((id, instance));
        }
        Incoming::Accept { protocol, seal, evicted }
    }

    /// Adds connection `id` that [`Endpoint::handle_new`] accepted.
    pub fn insert(&mut self, now: Instant, id: u32, peer: P, protocol: Protocol, engine: ReceiverEngine, app: C) {
        let conn = Connection {
            peer,
            protocol,
            engine,
            started: now,
            last_input: now,
            last_progress: now,
            reorder_charge: 0,
            reorder_peak: 0,
            app,
        };
        self.active.insert(id, conn);
    }

    /// Makes room for a new connection from `peer`, evicting one if the
    /// table or the peer's share is full; `Err` if nothing could give way.
    #[allow(clippy::type_complexity)]
    fn make_room(&mut self, now: Instant, peer: P) -> Result<Option<(u32, Connection<P, C>, Eviction)>, ()> {
        let host = peer.host();
        let from_peer = self.active.values().filter(|c| c.peer.host() == host).count();
        if from_peer >= self.config.max_connections_per_peer {
            // Only the peer's own connections give way to it.
            return self.evict_one(now, Some(peer)).map(Some).ok_or(());
        }
        if self.active.len() >= self.config.max_connections {
            return self.evict_one(now, None).map(Some).ok_or(());
        }
        Ok(None)
    }

    /// Takes out the connection (of `peer`'s host, if given) that should go
    /// first: a half-open one (nothing delivered after the SYN), else one
    /// stalled for `stalled_after`, the one idle longest first.
    fn evict_one(&mut self, now: Instant, of: Option<P>) -> Option<(u32, Connection<P, C>, Eviction)> {
        let stalled_after = self.config.stalled_after;
        let (stalled, _, id) = self
            .active
            .iter()
            .filter(|(_, c)| match of {
                Some(p) => p.host() == c.peer.host(),
                None => true,
            })
            .filter_map(|(&id, c)| {
                let half_open = c.engine.engine_ref().stats().bytes_delivered == 0;
                let idle = now.saturating_since(c.last_progress);
                (half_open || idle >= stalled_after).then_some((!half_open, c.last_progress, id))
            })
            .min()?;
        let conn = self.remove(id).expect("listed");
        self.counters.evicted += 1;
        let eviction = Eviction { stalled, idle: now.saturating_since(conn.last_progress) };
        Some((id, conn, eviction))
    }

    /// Takes connection `id` in progress out of the table (it ended or is
    /// abandoned): its out-of-order bytes leave the budget.
    pub fn remove(&mut self, id: u32) -> Option<Connection<P, C>> {
        let mut conn = self.active.remove(&id)?;
        self.counters.reorder_bytes -= conn.reorder_charge;
        conn.reorder_charge = 0;
        Some(conn)
    }

    /// Keeps `conn`, which completed, to answer repeated FINs until its
    /// linger ends. When the table is full, the one heard from least
    /// recently goes.
    pub fn linger(&mut self, id: u32, conn: Connection<P, C>) {
        if self.lingering.len() >= self.config.max_lingering {
            let oldest = self.lingering.iter().min_by_key(|(_, c)| c.last_input).map(|(&id, _)| id);
            if let Some(oldest) = oldest {
                self.lingering.remove(&oldest);
                self.counters.lingering_evicted += 1;
            }
        }
        if self.config.max_lingering > 0 {
            self.lingering.insert(id, conn);
        }
    }

    /// Runs the lingering connections' timers and drops those whose linger
    /// ended (or, for ATP, whose engine closed).
    pub fn poll_lingering(&mut self, now: Instant) {
        let linger = self.config.linger;
        self.lingering.retain(|_, conn| {
            let engine = conn.engine.engine();
            if engine.poll_timeout().is_some_and(|t| t <= now) {
                engine.handle_timeout(now);
            }
            while engine.poll_event().is_some() {}
            let closed = engine.is_closed();
            !(now >= conn.last_input + linger || (closed && conn.protocol.is_atp()))
        });
    }

    /// Queues a reset for `connection_id` at `peer`, a connection this
    /// endpoint had (evicted, or ended by the driver). At most one per id
    /// per 100 ms; plain resets only with `reset_unknown`.
    pub fn reset_connection(
        &mut self,
        now: Instant,
        peer: P,
        protocol: Protocol,
        connection_id: u32,
        reason: Option<ResetReason>,
        seal: S,
    ) {
        self.queue_reset(now, peer, wire_id(protocol), connection_id, reason, seal, false);
    }

    /// `stateless`: answers a datagram of no connection here, so draws from
    /// the budget.
    #[allow(clippy::too_many_arguments)]
    fn queue_reset(
        &mut self,
        now: Instant,
        peer: P,
        protocol: ProtocolId,
        connection_id: u32,
        reason: Option<ResetReason>,
        seal: S,
        stateless: bool,
    ) {
        if reason.is_none() && !self.config.reset_unknown {
            return;
        }
        let recent = self
            .last_reset
            .get(&connection_id)
            .is_some_and(|&t| now.saturating_since(t).as_nanos() < RESET_INTERVAL_NS);
        if recent || self.resets.len() >= MAX_PENDING_RESETS || (stateless && !self.budget.take(now)) {
            self.counters.resets_suppressed += 1;
            return;
        }
        if self.last_reset.len() > RESET_IDS_REMEMBERED {
            self.last_reset.clear();
        }
        self.last_reset.insert(connection_id, now);
        self.resets.push_back(PendingReset { peer, protocol, connection_id, reason, seal });
    }

    /// Writes the next queued reset into `buf` (at least the header long).
    pub fn poll_reset(&mut self, buf: &mut [u8]) -> Option<ResetTransmit<P, S>> {
        let r = self.resets.pop_front()?;
        let len = Repr::emit_reset(buf, r.protocol, r.connection_id, r.reason);
        Some(ResetTransmit { peer: r.peer, connection_id: r.connection_id, len, seal: r.seal })
    }
    pub fn has_pending_resets(&self) -> bool {
        !self.resets.is_empty()
    }

    /// Ids of the connections in progress, in id order.
    pub fn active_ids(&self) -> Vec<u32> {
        self.active.keys().copied().collect()
    }
    pub fn active_mut(&mut self, id: u32) -> Option<&mut Connection<P, C>> {
        self.active.get_mut(&id)
    }
    /// The connections in progress.
    pub fn active(&self) -> impl Iterator<Item = (u32, &Connection<P, C>)> {
        self.active.iter().map(|(&id, c)| (id, c))
    }
    /// Every connection, in progress then lingering: what a driver polls for
    /// datagrams to send.
    pub fn connections_mut(&mut self) -> impl Iterator<Item = &mut Connection<P, C>> {
        self.active.values_mut().chain(self.lingering.values_mut())
    }

    /// When the driver must come back at the latest (an engine timer or a
    /// linger's end), if anything is waiting.
    pub fn next_deadline(&self) -> Option<Instant> {
        let linger = self.config.linger;
        let active = self.active.values().filter_map(|c| c.engine.engine_ref().poll_timeout());
        let lingering = self.lingering.values().map(|c| {
            let end = c.last_input + linger;
            c.engine.engine_ref().poll_timeout().map_or(end, |t| t.min(end))
        });
        active.chain(lingering).min()
    }

    /// Drops every connection.
    pub fn clear(&mut self) {
        self.active.clear();
        self.lingering.clear();
        self.counters.reorder_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::{connection_id, EngineConfig};
    use crate::engine::EngineEvent;
    use crate::harness::{at_ms as at, loopback_peer as peer, sender_datagram};
    use crate::tcp::TcpConfig;
    use crate::wire::parse_datagram;

    type Ep = Endpoint<SocketAddr, (), ()>;

    fn id(k: u32) -> u32 {
        connection_id(Protocol::AtpDefault, k)
    }
    fn endpoint(configure: impl FnOnce(&mut EndpointConfig)) -> Ep {
        let mut config = EndpointConfig::default();
        configure(&mut config);
        Endpoint::new(config)
    }

    /// What became of one datagram.
    #[derive(Debug, PartialEq)]
    enum Outcome {
        Malformed,
        Known,
        Stray,
        Replayed,
        Refused,
        /// Accepted, evicting this connection.
        Accepted(Option<(u32, Eviction)>),
    }

    /// A driver's steps for one datagram, as in the module doc.
    fn deliver(ep: &mut Ep, now: Instant, from: SocketAddr, datagram: &[u8], instance: Option<[u8; 16]>) -> Outcome {
        let id = match ep.route(from, datagram) {
            Route::Malformed => return Outcome::Malformed,
            Route::Stray => return Outcome::Stray,
            Route::Known(id) => {
                ep.handle_input(now, id, datagram);
                return Outcome::Known;
            }
            Route::Unknown(id) => id,
        };
        let (repr, _) = parse_datagram(datagram).unwrap();
        match ep.handle_new(now, from, id, &repr, instance, ()) {
            Incoming::Stray => Outcome::Stray,
            Incoming::Replayed => Outcome::Replayed,
            Incoming::Refused => Outcome::Refused,
            Incoming::Accept { protocol, evicted, .. } => {
                let evicted = evicted.map(|(victim, conn, why)| {
                    ep.reset_connection(now, conn.peer, conn.protocol, victim, Some(ResetReason::Busy), ());
                    (victim, why)
                });
                let engine = ReceiverEngine::new(&EngineConfig::new(protocol, |c| c, TcpConfig::default), id, now);
                ep.insert(now, id, from, protocol, engine, ());
                ep.handle_input(now, id, datagram);
                Outcome::Accepted(evicted)
            }
        }
    }
    fn syn(ep: &mut Ep, now: Instant, from: SocketAddr, k: u32) -> Outcome {
        deliver(ep, now, from, &sender_datagram(ProtocolId::Atp, Control::SYN, id(k), 0, &[]), None)
    }
    fn data(ep: &mut Ep, now: Instant, from: SocketAddr, k: u32, seq: u64, len: usize, fin: bool) -> Outcome {
        let control = if fin { Control::FIN } else { 0 };
        deliver(ep, now, from, &sender_datagram(ProtocolId::Atp, control, id(k), seq, &vec![7; len]), None)
    }
    /// The resets queued: (to, connection id, reason).
    fn resets(ep: &mut Ep) -> Vec<(SocketAddr, u32, Option<ResetReason>)> {
        let mut buf = [0u8; 1500];
        let mut out = Vec::new();
        while let Some(r) = ep.poll_reset(&mut buf) {
            let (repr, payload) = parse_datagram(&buf[..r.len]).unwrap();
            assert!(repr.control.contains(Control::RST) && repr.connection_id == r.connection_id);
            out.push((r.peer, r.connection_id, ResetReason::from_payload(payload)));
        }
        out
    }
    /// Ends every active connection whose engine finished and lets it linger,
    /// as a driver does.
    fn end_finished(ep: &mut Ep) -> Vec<u32> {
        let mut ended = Vec::new();
        for id in ep.active_ids() {
            let conn = ep.active_mut(id).unwrap();
            let mut finished = false;
            while let Some(e) = conn.engine.engine().poll_event() {
                finished |= e == EngineEvent::Finished;
            }
            if finished {
                let conn = ep.remove(id).unwrap();
                ep.linger(id, conn);
                ended.push(id);
            }
        }
        ended
    }
    const BUSY: Option<ResetReason> = Some(ResetReason::Busy);

    #[test]
    fn a_full_table_evicts_half_open_then_the_longest_stalled_and_refuses_otherwise() {
        let mut ep = endpoint(|c| c.max_connections = 3);
        let (a, b, c, d, e, f) = (peer(2, 1), peer(3, 1), peer(4, 1), peer(5, 1), peer(6, 1), peer(7, 1));
        for (from, k) in [(a, 1), (b, 2)] {
            assert_eq!(syn(&mut ep, at(0), from, k), Outcome::Accepted(None));
            data(&mut ep, at(0), from, k, 0, 100, false);
        }
        assert_eq!(syn(&mut ep, at(0), c, 3), Outcome::Accepted(None)); // half-open
                                                                        // D takes the half-open C's slot, though A and B are older; C is told busy.
        let half_open = Eviction { stalled: false, idle: Duration::from_secs(1) };
        assert_eq!(syn(&mut ep, at(1000), d, 4), Outcome::Accepted(Some((id(3), half_open))));
        assert_eq!(resets(&mut ep), vec![(c, id(3), BUSY)]);
        data(&mut ep, at(1000), d, 4, 0, 100, false);
        // Everyone made progress within 5 s: E is refused busy.
        assert_eq!(syn(&mut ep, at(2000), e, 5), Outcome::Refused);
        assert_eq!(resets(&mut ep), vec![(e, id(5), BUSY)]);
        // Its SYN again within 100 ms: refused, not answered again.
        assert_eq!(syn(&mut ep, at(2099), e, 5), Outcome::Refused);
        assert!(resets(&mut ep).is_empty());
        // At 4999 ms nobody has stalled for 5 s yet. At 6000 ms A and B
        // have for 6 s and D for 5 s: A goes (idle longest, lower id than B).
        assert_eq!(syn(&mut ep, at(4999), f, 6), Outcome::Refused);
        let stalled = Eviction { stalled: true, idle: Duration::from_secs(6) };
        assert_eq!(syn(&mut ep, at(6000), f, 6), Outcome::Accepted(Some((id(1), stalled))));
        assert_eq!(stalled.to_string(), "evicted for a new transfer: nothing new for 6.0 s");
        let counters = ep.counters();
        assert_eq!((counters.evicted, counters.over_capacity), (2, 3));
        assert_eq!(ep.len(), (3, 0));
    }

    #[test]
    fn one_host_gets_its_share_and_only_its_own_connections_give_way() {
        let mut ep = endpoint(|c| {
            c.max_connections = 10;
            c.max_connections_per_peer = 2;
        });
        // Two ports of one address count as one host.
        let (x1, x2, y) = (peer(2, 1), peer(2, 2), peer(3, 1));
        syn(&mut ep, at(0), y, 9); // another host's half-open connection
        syn(&mut ep, at(0), x1, 1);
        data(&mut ep, at(0), x1, 1, 0, 10, false);
        assert_eq!(syn(&mut ep, at(0), x2, 2), Outcome::Accepted(None)); // just inside the share
        data(&mut ep, at(0), x2, 2, 0, 10, false);
        // Just outside: nothing of X's may go (Y's half-open one does not count).
        assert_eq!(syn(&mut ep, at(1), x1, 3), Outcome::Refused);
        assert_eq!(resets(&mut ep), vec![(x1, id(3), BUSY)]);
        assert_eq!(syn(&mut ep, at(1), y, 4), Outcome::Accepted(None));
        assert_eq!(ep.len(), (4, 0));
    }

    #[test]
    fn stray_datagrams_are_counted_and_only_data_is_answered() {
        let mut ep = endpoint(|_| {});
        let a = peer(2, 1);
        syn(&mut ep, at(0), a, 1);
        // A known id from another address.
        assert_eq!(data(&mut ep, at(0), peer(3, 1), 1, 0, 10, false), Outcome::Stray);
        // Data of an unknown connection: answered with a plain RST.
        assert_eq!(data(&mut ep, at(0), a, 2, 0, 10, false), Outcome::Stray);
        // Feedback and a reset of an unknown connection: not answered.
        let feedback = sender_datagram(ProtocolId::Atp, Control::SACK_OPT, id(3), 0, &[]);
        let rst = sender_datagram(ProtocolId::Atp, Control::RST, id(4), 0, &[]);
        assert_eq!(deliver(&mut ep, at(0), a, &feedback, None), Outcome::Stray);
        assert_eq!(deliver(&mut ep, at(0), a, &rst, None), Outcome::Stray);
        // A SYN whose id names the other protocol family.
        let tcp_syn = sender_datagram(ProtocolId::Tcp, Control::SYN, id(5), 0, &[]);
        assert_eq!(deliver(&mut ep, at(0), a, &tcp_syn, None), Outcome::Stray);
        assert_eq!(deliver(&mut ep, at(0), a, &[0; 10], None), Outcome::Malformed);
        assert_eq!(resets(&mut ep), vec![(a, id(2), None)]);
        assert_eq!(ep.counters().stray, 5);
        // Without reset_unknown the data goes unanswered; busy refusals not.
        let mut quiet = endpoint(|c| {
            c.reset_unknown = false;
            c.max_connections = 0;
        });
        data(&mut quiet, at(0), a, 2, 0, 10, false);
        syn(&mut quiet, at(0), a, 3);
        assert_eq!(resets(&mut quiet), vec![(a, id(3), BUSY)]);
    }

    #[test]
    fn a_flood_of_unknown_datagrams_gets_at_most_the_reset_budget() {
        let mut ep = endpoint(|_| {});
        let flood = |ep: &mut Ep, now: Instant, first: u32| {
            for k in first..first + 10_000 {
                data(ep, now, peer(9, 9), k, 0, 1, false);
            }
            resets(ep).len()
        };
        let burst = STATELESS_RESET_BURST as usize;
        assert_eq!(flood(&mut ep, at(0), 0), burst);
        // One token per 10 ms: none just before, one at 10 ms.
        let refill_ms = STATELESS_RESET_REFILL_NS / 1_000_000;
        assert_eq!(flood(&mut ep, Instant::from_nanos(STATELESS_RESET_REFILL_NS - 1), 10_000), 0);
        assert_eq!(flood(&mut ep, at(refill_ms), 20_000), 1);
        assert_eq!(flood(&mut ep, at(refill_ms * 5), 30_000), 4);
        // A long pause refills the bucket, but not beyond its size.
        assert_eq!(flood(&mut ep, at(60_000), 40_000), burst);
        assert_eq!(ep.counters().resets_suppressed, 5 * 10_000 - 2 * burst as u64 - 5);
        // Busy refusals of SYNs draw from the same budget.
        let mut full = endpoint(|c| c.max_connections = 0);
        for k in 0..1000 {
            syn(&mut full, at(0), peer(9, 9), k);
        }
        assert_eq!(resets(&mut full).len(), burst);
        // A reset of a connection the endpoint had does not.
        full.reset_connection(at(0), peer(9, 9), Protocol::AtpDefault, id(5000), Some(ResetReason::Busy), ());
        assert_eq!(resets(&mut full), vec![(peer(9, 9), id(5000), BUSY)]);
    }

    #[test]
    fn a_finished_connection_lingers_outside_the_limit_and_answers_a_repeated_fin() {
        let mut ep = endpoint(|c| {
            c.max_connections = 1;
            c.max_lingering = 2;
        });
        let a = peer(2, 1);
        for k in 0..3 {
            let now = at(10 * u64::from(k));
            assert_eq!(syn(&mut ep, now, a, k), Outcome::Accepted(None), "connection {k}");
            data(&mut ep, now, a, k, 0, 100, true);
            assert_eq!(end_finished(&mut ep), vec![id(k)]);
            while ep.connections_mut().any(|c| c.engine.engine().poll_transmit(now, &mut [0; 1500]).is_some()) {}
        }
        assert_eq!(ep.len(), (0, 2));
        assert_eq!(ep.counters().lingering_evicted, 1);
        // The repeated FIN of connection 2 reaches its lingering engine, which answers.
        assert_eq!(data(&mut ep, at(40), a, 2, 0, 100, true), Outcome::Known);
        let mut buf = [0u8; 1500];
        let answer = ep.connections_mut().find_map(|c| c.engine.engine().poll_transmit(at(40), &mut buf));
        let answer = answer.expect("the lingering connection answers");
        assert_eq!(parse_datagram(&buf[..answer.len]).unwrap().0.connection_id, id(2));
        // Connection 0 was dropped from the full table: its FIN is stray data now.
        assert_eq!(data(&mut ep, at(40), a, 0, 0, 100, true), Outcome::Stray);
        // The linger ends 10 s after the last datagram: connection 1 was
        // last heard at 10 ms, connection 2 at 40 ms.
        let linger = ep.config().linger;
        ep.poll_lingering(at(10) + linger - Duration::from_nanos(1));
        assert_eq!(ep.len().1, 2);
        assert!(ep.next_deadline().is_some_and(|t| t <= at(10) + linger));
        ep.poll_lingering(at(10) + linger);
        assert_eq!(ep.len().1, 1);
        ep.poll_lingering(at(40) + linger);
        assert_eq!(ep.len(), (0, 0));
    }

    #[test]
    fn a_sealed_connection_opened_before_is_not_opened_again() {
        let mut ep = endpoint(|_| {});
        let a = peer(2, 1);
        let syn = sender_datagram(ProtocolId::Atp, Control::SYN, id(1), 0, &[]);
        assert_eq!(deliver(&mut ep, at(0), a, &syn, Some([1; 16])), Outcome::Accepted(None));
        ep.clear();
        assert_eq!(deliver(&mut ep, at(1), a, &syn, Some([1; 16])), Outcome::Replayed);
        // The same id from a new peer instance is a new connection.
        assert_eq!(deliver(&mut ep, at(2), a, &syn, Some([2; 16])), Outcome::Accepted(None));
        assert_eq!(ep.counters().replayed, 1);
    }

    #[test]
    fn the_reorder_budget_is_per_connection_and_shared() {
        let (per, total) = (100_000, 150_000);
        let mut ep = endpoint(|c| {
            c.max_reorder_bytes_per_connection = per;
            c.max_reorder_bytes = total;
        });
        let (a, b) = (peer(2, 1), peer(3, 1));
        syn(&mut ep, at(0), a, 1);
        syn(&mut ep, at(0), b, 2);
        for k in 1..200 {
            data(&mut ep, at(1), a, 1, k * 1000, 1000, false);
        }
        let a_held = ep.counters().reorder_bytes;
        assert!(a_held <= per && a_held > per - 2000, "{a_held}");
        for k in 1..200 {
            data(&mut ep, at(1), b, 2, k * 1000, 1000, false);
        }
        let c = ep.counters();
        assert!(c.reorder_bytes <= total && c.reorder_bytes > total - 2000, "{c:?}");
        assert_eq!(c.reorder_peak_bytes, c.reorder_bytes);
        assert!(c.dropped_over_buffer_limit > 200, "{c:?}");
        // A's hole fills: its bytes leave the budget, and B may hold more.
        data(&mut ep, at(2), a, 1, 0, 1000, false);
        assert_eq!(ep.counters().reorder_bytes, c.reorder_bytes - a_held);
        data(&mut ep, at(2), b, 2, 199_000, 1000, false);
        let after = ep.counters().reorder_bytes;
        assert!(after > c.reorder_bytes - a_held && after <= total);
        // Removing B gives its share back too.
        ep.remove(id(2)).unwrap();
        assert_eq!(ep.counters().reorder_bytes, 0);
    }
}
