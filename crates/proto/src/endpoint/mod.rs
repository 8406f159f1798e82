//! A receiving endpoint: many connections behind one address, told apart by
//! connection id (quinn-proto's `Endpoint` is the model).
//!
//! The [`Endpoint`] owns the table of connections and every decision about
//! it: which connection a datagram belongs to, whether a SYN opens a new one
//! (within the limits: [`EndpointConfig::max_connections`] in progress,
//! [`EndpointConfig::max_connections_per_peer`] per host and
//! [`EndpointConfig::max_connections_per_prefix`] per address prefix), which
//! one gives way when there is no room (a half-open one first, else the one
//! furthest below [`EndpointConfig::min_rate_bps`] or stalled for
//! [`EndpointConfig::stalled_after`]), when a SYN is refused with a busy RST, which stray datagram is answered with a
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
use crate::wire::{Control, Packet, ProtocolId, Repr, ResetAt, ResetReason, RETRY_TOKEN_LEN};
use meshbed_core::{Duration, Instant};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// A peer's address as the driver knows it. Limits per peer count the
/// connections of one [`PeerAddr::host`] (all ports of an IP address);
/// limits per prefix those of one [`PeerAddr::prefix`] (a network).
pub trait PeerAddr: Copy + Eq + fmt::Debug {
    type Host: Eq;
    type Prefix: Eq;
    fn host(&self) -> Self::Host;
    fn prefix(&self) -> Self::Prefix;
}

impl PeerAddr for SocketAddr {
    type Host = IpAddr;
    /// The /24 of an IPv4 address, the /64 of an IPv6 one (an IPv4-mapped
    /// one counts as IPv4): what one site or one attacker's subnet usually
    /// holds, as rate limiters such as nginx's `limit_conn` are keyed.
    type Prefix = (bool, [u8; 8]);
    fn host(&self) -> IpAddr {
        self.ip()
    }
    fn prefix(&self) -> (bool, [u8; 8]) {
        let v4 = match self.ip() {
            IpAddr::V4(v4) => Some(v4),
            IpAddr::V6(v6) => v6.to_ipv4_mapped(),
        };
        match (v4, self.ip()) {
            (Some(v4), _) => {
                let [a, b, c, _] = v4.octets();
                (true, [a, b, c, 0, 0, 0, 0, 0])
            }
            (None, IpAddr::V6(v6)) => {
                let o = v6.octets();
                (false, [o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7]])
            }
            (None, IpAddr::V4(_)) => unreachable!("an IPv4 address has its octets"),
        }
    }
}

/// The endpoint's limits (docs/PROTOCOLS.md §6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointConfig {
    /// Connections in progress at most; finished ones (lingering) do not count.
    pub max_connections: usize,
    /// Connections in progress from one host at most.
    pub max_connections_per_peer: usize,
    /// Connections in progress from one address prefix (/24, /64) at most.
    pub max_connections_per_prefix: usize,
    /// A connection older than `stalled_after` whose stream grew more slowly
    /// than this on average (bits per second, in order) may be evicted when
    /// a new one finds no room, the slowest first (a minimum body rate, as
    /// Apache's `mod_reqtimeout` and nginx's send/body timeouts enforce):
    /// a trickle cannot hold a slot.
    pub min_rate_bps: u64,
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
            max_connections_per_prefix: 32,
            min_rate_bps: 8_000,
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
    /// SYNs refused because every slot, or the peer's or its prefix's
    /// share, was taken by connections that could not be evicted.
    pub over_capacity: u64,
    /// Connections ended to make room for a new one (half-open or stalled).
    pub evicted: u64,
    /// Finished connections dropped before their linger ended because the
    /// lingering table was full.
    pub lingering_evicted: u64,
    /// Plain SYNs answered with a Retry (their address not yet proven).
    pub retries: u64,
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
pub enum Eviction {
    /// Nothing received after the SYN for `idle`.
    HalfOpen { idle: Duration },
    /// Its stream did not grow for `idle` (at least `stalled_after`).
    Stalled { idle: Duration },
    /// Its stream grew `delivered` bytes in its `age`: below the minimum
    /// rate.
    TooSlow { delivered: u64, age: Duration },
}

impl fmt::Display for Eviction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Eviction::HalfOpen { idle } => {
                write!(f, "evicted for a new transfer: nothing received for {:.1} s after the SYN", idle.as_secs_f64())
            }
            Eviction::Stalled { idle } => {
                write!(f, "evicted for a new transfer: nothing new for {:.1} s", idle.as_secs_f64())
            }
            Eviction::TooSlow { delivered, age } => write!(
                f,
                "evicted for a new transfer: {delivered} bytes in {:.3} s, below the minimum rate",
                age.as_secs_f64()
            ),
        }
    }
}

/// Where an opening SYN comes from, as far as the driver could tell.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Sealed with the receiver's key by this peer instance (its salt):
    /// authenticated, so its address needs no proof; remembered against
    /// replay of the whole connection.
    Sealed([u8; 16]),
    /// Plain, and its address proven by the token it carries.
    Proven,
    /// Plain and unproven: answer with a Retry carrying `token` (what a
    /// SYN from this address and id must carry), keep nothing.
    Unproven { token: [u8; RETRY_TOKEN_LEN] },
    /// Plain, and the driver does not validate addresses.
    Plain,
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
    /// An unproven address ([`Origin::Unproven`]): answered with a Retry if
    /// the budget allows, and nothing kept (no slot, no file): a blind
    /// spoofer of another host's address cannot hold its slots (RFC 9000
    /// §8.1, RFC 4987 §3.6).
    Retry,
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
    at: ResetAt,
    reason: Option<ResetReason>,
    /// A Retry's token.
    token: Option<[u8; RETRY_TOKEN_LEN]>,
    seal: S,
}

/// Resets waiting for [`Endpoint::poll_reset`] at most; more are dropped
/// (they are advisory, and a flood must not grow the queue).
const MAX_PENDING_RESETS: usize = 1024;
/// One reset per connection id and named sequence per this many
/// nanoseconds at most.
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
    /// When a reset last went for (connection id, the sequence it named).
    last_reset: HashMap<(u32, u64), Instant>,
    /// The reason a connection this endpoint reset was given, for the
    /// resets answering its sender's later datagrams (a challenge's answer
    /// carries it too: "out of space" is not lost on the way).
    reset_reasons: HashMap<u32, ResetReason>,
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
            reset_reasons: HashMap::new(),
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
    /// unknown connection `id`. `origin` says whether a SYN's address is
    /// proven (its token, or the seal of a peer instance: the salt its
    /// first datagram carried); `seal` seals a reset to it.
    pub fn handle_new(
        &mut self,
        now: Instant,
        peer: P,
        id: u32,
        repr: &Repr,
        origin: Origin,
        seal: S,
    ) -> Incoming<P, C, S> {
        let instance = match origin {
            Origin::Sealed(instance) => Some(instance),
            _ => None,
        };
        let c = repr.control;
        let opens = repr.opens_connection();
        if !opens && instance.is_some_and(|i| self.opened_set.contains(&(id, i))) {
            // A sealed datagram of a connection this peer instance had, now
            // gone: a straggler or a replay from anywhere. Unanswered: a
            // reset sealed afresh carries a salt the sender no longer
            // accepts, so it could only be reflected at a stranger.
            self.counters.replayed += 1;
            return Incoming::Replayed;
        }
        if !opens {
            self.counters.stray += 1;
            // Feedback and ACKs travel towards senders; only answer data.
            let tcp_ack = repr.protocol == ProtocolId::Tcp
                && repr.payload_len == 0
                && !c.contains(Control::FIN)
                && !c.contains(Control::SYN);
            if !c.contains(Control::SACK_OPT) && !tcp_ack && !c.contains(Control::RST) {
                // Naming the datagram it answers: the sender takes it only
                // if that is the sequence it holds exactly (RFC 5961 §3).
                let reason = self.reset_reasons.get(&id).copied();
                self.queue_reset(now, peer, repr.protocol, id, ResetAt::to_sender(repr.seq), reason, seal, true);
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
        if let Origin::Unproven { token } = origin {
            // Before any state: the address proves itself by sending the
            // token back (a spoofer never sees it).
            self.counters.retries += 1;
            let at = ResetAt::to_sender(repr.seq);
            if self.budget.take(now) && self.resets.len() < MAX_PENDING_RESETS {
                let reset = PendingReset {
                    peer,
                    protocol: repr.protocol,
                    connection_id: id,
                    at,
                    reason: Some(ResetReason::Retry),
                    token: Some(token),
                    seal,
                };
                self.resets.push_back(reset);
            } else {
                self.counters.resets_suppressed += 1;
            }
            return Incoming::Retry;
        }
        let Ok(evicted) = self.make_room(now, peer) else {
            self.counters.over_capacity += 1;
            if !c.contains(Control::RST) {
                let at = ResetAt::to_sender(repr.seq);
                self.queue_reset(now, peer, repr.protocol, id, at, Some(ResetReason::Busy), seal, true);
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
    /// table, the peer's share or its prefix's share is full; `Err` if
    /// nothing could give way.
    #[allow(clippy::type_complexity)]
    fn make_room(&mut self, now: Instant, peer: P) -> Result<Option<(u32, Connection<P, C>, Eviction)>, ()> {
        let (host, prefix) = (peer.host(), peer.prefix());
        let from_peer = self.active.values().filter(|c| c.peer.host() == host).count();
        if from_peer >= self.config.max_connections_per_peer {
            // Only the peer's own connections give way to it.
            return self.evict_one(now, |c| c.host() == host).map(Some).ok_or(());
        }
        let from_prefix = self.active.values().filter(|c| c.peer.prefix() == prefix).count();
        if from_prefix >= self.config.max_connections_per_prefix {
            return self.evict_one(now, |c| c.prefix() == prefix).map(Some).ok_or(());
        }
        if self.active.len() >= self.config.max_connections {
            return self.evict_one(now, |_| true).map(Some).ok_or(());
        }
        Ok(None)
    }

    /// Takes out the connection (of a peer `among` allows) that should go
    /// first: the one furthest below `min_rate_bps`, its rate being what
    /// its stream grew in order over its whole age. No age spares a
    /// connection: a grace period would let an attacker that reconnects
    /// faster than it keep every slot young (measured: a 1 s grace locked a
    /// sender out of a table that 64 reconnecting trickles churned), while
    /// a real transfer's average is above the minimum from its first
    /// segment on. A half-open connection (nothing delivered) and one
    /// stalled for `stalled_after` count as rate 0; ties go to the one idle
    /// longest.
    fn evict_one(&mut self, now: Instant, among: impl Fn(&P) -> bool) -> Option<(u32, Connection<P, C>, Eviction)> {
        let (stalled_after, min_rate_bps) = (self.config.stalled_after, self.config.min_rate_bps);
        let (_, id, eviction) = self
            .active
            .iter()
            .filter(|(_, c)| among(&c.peer))
            .filter_map(|(&id, c)| {
                let delivered = c.engine.engine_ref().stats().bytes_delivered;
                let idle = now.saturating_since(c.last_progress);
                let age = now.saturating_since(c.started);
                let (rate_bps, eviction) = if delivered == 0 {
                    (0, Eviction::HalfOpen { idle })
                } else if idle >= stalled_after {
                    (0, Eviction::Stalled { idle })
                } else {
                    let age_ns = u128::from(age.as_nanos().max(1_000_000));
                    let rate_bps =
                        (u128::from(delivered) * 8 * 1_000_000_000 / age_ns).min(u128::from(u64::MAX)) as u64;
                    (rate_bps, Eviction::TooSlow { delivered, age })
                };
                (rate_bps < min_rate_bps || rate_bps == 0).then_some(((rate_bps, c.last_progress), id, eviction))
            })
            .min_by_key(|(key, id, _)| (*key, *id))?;
        let conn = self.remove(id).expect("listed");
        self.counters.evicted += 1;
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

    /// Answers an opening datagram from `peer` that the driver could not
    /// verify with its key (`repr`, parsed from the clear header) with a
    /// plain RST saying so: stateless, from the same budget as every
    /// answer to a datagram of no connection here, so it reflects nothing
    /// more than they do.
    pub fn refuse_unverified(&mut self, now: Instant, peer: P, repr: &Repr, seal: S) {
        if repr.opens_connection() {
            let at = ResetAt::to_sender(repr.seq);
            let reason = Some(ResetReason::KeyMismatch);
            self.queue_reset(now, peer, repr.protocol, repr.connection_id, at, reason, seal, true);
        }
    }

    /// Queues a reset for `conn` (`connection_id`), a connection this
    /// endpoint had (evicted, or ended by the driver), naming the next byte
    /// it expected: its sender takes the reset if that is exactly where its
    /// acknowledgements stand, and otherwise sends that byte again, which
    /// the reset of a connection no longer here then names (RFC 5961 §3).
    /// At most one per id per 100 ms; plain resets only with `reset_unknown`.
    pub fn reset_connection(
        &mut self,
        now: Instant,
        connection_id: u32,
        conn: &Connection<P, C>,
        reason: Option<ResetReason>,
        seal: S,
    ) {
        let at = ResetAt::to_sender(conn.engine.next_expected());
        if let Some(reason) = reason {
            if self.reset_reasons.len() >= RESET_IDS_REMEMBERED {
                self.reset_reasons.clear();
            }
            self.reset_reasons.insert(connection_id, reason);
        }
        self.queue_reset(now, conn.peer, wire_id(conn.protocol), connection_id, at, reason, seal, false);
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
        at: ResetAt,
        reason: Option<ResetReason>,
        seal: S,
        stateless: bool,
    ) {
        if reason.is_none() && !self.config.reset_unknown {
            return;
        }
        // Per id and named sequence: the answer to a sender's challenge
        // (its oldest unacknowledged sequence, sent again because a reset
        // named another) is never held back by the reset that caused it.
        let key = (connection_id, at.ack);
        let recent = self.last_reset.get(&key).is_some_and(|&t| now.saturating_since(t).as_nanos() < RESET_INTERVAL_NS);
        if recent || self.resets.len() >= MAX_PENDING_RESETS || (stateless && !self.budget.take(now)) {
            self.counters.resets_suppressed += 1;
            return;
        }
        if self.last_reset.len() > RESET_IDS_REMEMBERED {
            self.last_reset.clear();
        }
        self.last_reset.insert(key, now);
        self.resets.push_back(PendingReset { peer, protocol, connection_id, at, reason, token: None, seal });
    }

    /// Writes the next queued reset into `buf` (at least the header, a reason
    /// byte and a Retry token long).
    pub fn poll_reset(&mut self, buf: &mut [u8]) -> Option<ResetTransmit<P, S>> {
        let r = self.resets.pop_front()?;
        let len = match &r.token {
            Some(token) => Repr::emit_retry(buf, r.protocol, r.connection_id, r.at, token),
            None => Repr::emit_reset(buf, r.protocol, r.connection_id, r.at, r.reason),
        };
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
mod tests;
