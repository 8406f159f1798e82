//! The receiving side: one socket, one event loop, any number of concurrent
//! transfers told apart by connection id.
//!
//! [`ReceiverCore`] is everything but the socket and the clock: the files,
//! the seal (`--psk`) and the reports around a sans-IO
//! [`meshbed_proto::endpoint::Endpoint`], which owns the table of transfers,
//! their limits and the refusals. A driver calls, in this order, whenever
//! anything happens:
//! 1. [`ReceiverCore::handle_datagram`] for each datagram that arrived;
//! 2. [`ReceiverCore::poll`]: timers, moving each transfer's delivered bytes
//!    into its [`Sink`] (which commits a complete, verified file), the
//!    engines' events, and the reports of transfers that ended;
//! 3. [`ReceiverCore::poll_transmit`] until it has nothing more to send;
//! 4. [`ReceiverCore::next_deadline`] to learn when to come back.
//!
//! So the acknowledgement of a file's last byte (and the answer to its FIN)
//! leaves only after the file has its final name: a sender that reports
//! success has a committed file behind it. [`Receiver`] runs the core on a
//! UDP socket with the real clock; the fuzz target runs it on plain bytes.
//!
//! Files: this one has the options and the core; `report.rs` what the
//! receiver tells its caller (counters, reports, progress); `transmit.rs`
//! where the core writes datagrams; `socket.rs` the [`Receiver`].
//!
//! Limits (docs/PROTOCOLS.md §6): transfers in progress count against
//! [`ReceiveOptions::max_connections`] and, per IP address and per address
//! prefix, [`ReceiveOptions::max_connections_per_peer`] and
//! [`ReceiveOptions::max_connections_per_prefix`]; finished ones only
//! linger, in a table of their own. A SYN that finds no room evicts a
//! half-open transfer (nothing received yet), else one that stalled
//! (nothing new for [`ReceiveOptions::stalled_after`]) or ran below
//! [`ReceiveOptions::min_rate_bps`], the slowest first; failing that it is
//! refused with a busy RST (`meshbed_proto::endpoint` decides). Out-of-order bytes are charged against a
//! per-transfer and a receiver-wide budget.

use crate::auth::{Direction, Psk};
use crate::clock;
use crate::conn::{EngineOptions, Protection};
use crate::framing::{hex, FramingError, Sink, SinkKind, StreamHeader, StreamKind};
use crate::notice::EngineNotices;
use crate::udp::MAX_DATAGRAM;
use meshbed_core::Instant;
use meshbed_proto::endpoint::{Connection, Endpoint, EndpointConfig, Incoming, Origin, Route};
use meshbed_proto::stream::{ReadLimit, READ_BURST};
use meshbed_proto::wire::{parse_datagram, ResetReason};
use meshbed_proto::{EngineEvent, FailReason};
use std::net::SocketAddr;
use std::time::Duration as StdDuration;

mod report;
mod socket;
mod space;
mod transmit;

pub use report::{ReceiverCounters, ReceiverEvent, TransferProgress, TransferReport};
pub use socket::Receiver;
pub use space::{admit, default_reserve, Claims, FileSystemSpace, SpaceLimits};
pub use transmit::{DatagramList, Transmitter};

/// How to receive.
#[derive(Clone, Debug)]
pub struct ReceiveOptions {
    pub listen: SocketAddr,
    pub sink: SinkKind,
    /// Silence after which a transfer fails.
    pub timeout: StdDuration,
    /// How long a finished transfer stays to answer a sender that missed
    /// the final acknowledgement.
    pub linger: StdDuration,
    /// Stop after this many transfers ended (completed or failed), once the
    /// finished ones have lingered. `None`: run until stopped.
    pub max_transfers: Option<u64>,
    /// Transfers in progress at most; finished ones (lingering) do not count.
    pub max_connections: usize,
    /// Transfers in progress from one IP address at most.
    pub max_connections_per_peer: usize,
    /// Transfers in progress from one /24 (IPv4) or /64 (IPv6) at most.
    pub max_connections_per_prefix: usize,
    /// Below this average rate (bits per second, after `stalled_after`) a
    /// transfer may be evicted when a new one finds no room.
    pub min_rate_bps: u64,
    /// Finished transfers kept to answer repeated FINs; when full, the one
    /// finished longest ago goes first.
    pub max_lingering: usize,
    /// A transfer whose stream has not grown for this long may be evicted
    /// when a new one finds no room.
    pub stalled_after: StdDuration,
    /// Out-of-order bytes one transfer may hold, charged with per-piece
    /// overhead (`meshbed_proto::reorder`); data beyond it is dropped and
    /// counted, and the sender sends it again.
    pub max_reorder_bytes_per_connection: u64,
    /// Out-of-order bytes all transfers together may hold, charged likewise.
    pub max_reorder_bytes: u64,
    /// Answer datagrams of unknown connections with RST (at most one per
    /// connection per 100 ms, and within the endpoint's stateless-reset
    /// budget: `meshbed_proto::endpoint`), so that a sender whose receiver
    /// restarted learns it at once instead of after its timeout. Busy
    /// refusals are sent either way.
    pub reset_unknown: bool,
    /// Accept only datagrams sealed with this pre-shared key, and seal every
    /// answer (`--psk`; docs/PROTOCOLS.md §6).
    pub psk: Option<Psk>,
    /// Room on disk: the reserve left free and the quota per address
    /// (`--reserve`, `--quota-per-peer`).
    pub space: SpaceLimits,
    /// A slow application (`--rate`): each transfer's bytes are taken from
    /// its engine at most this many bits per second, and unread bytes count
    /// against the engine's receive buffer, so ATP's feedback carries the
    /// read rate (seed 002 §4.2.3) and TCP drops what does not fit. MTL
    /// transfers have no flow control and are read as they arrive.
    pub read_rate_bps: Option<u64>,
    /// The node's routing daemon's notice socket (`--routed`): each
    /// transfer subscribes to its sender's route and hands notices and path
    /// information to its engine (read within the loop's 100 ms turn).
    pub routed: Option<std::path::PathBuf>,
    /// Keep each transfer's engine trace ([`TransferReport::trace`]).
    pub trace: bool,
    /// Take reverse test requests (`--allow-reverse`): the request is
    /// reported ([`TransferReport::reverse`]) and the caller sends the
    /// stream ([`crate::reverse`]).
    pub allow_reverse: bool,
    /// Answer a plain SYN from an address not yet proven with a Retry and
    /// keep nothing until its next SYN brings the token back
    /// ([`crate::auth::token`]); sealed SYNs (`psk`) need no proof. On by
    /// default; off costs nothing but lets a blind spoofer open transfers
    /// in another host's name.
    pub validate_addresses: bool,
    /// Accept new transfers from this address only (the client's end of a
    /// reverse test takes its stream from the receiver it asked, nobody
    /// else); datagrams from others count as stray.
    pub only_from: Option<std::net::IpAddr>,
    /// TCP settings that differ from the preset's (the receiver's: its
    /// delayed ACKs).
    pub tcp: crate::conn::TcpTuning,
}

impl ReceiveOptions {
    pub fn new(listen: SocketAddr, sink: SinkKind) -> Self {
        // The limits are the endpoint's (one place for their numbers).
        let limits = EndpointConfig::default();
        ReceiveOptions {
            listen,
            sink,
            timeout: StdDuration::from_secs(10),
            linger: clock::to_std(limits.linger),
            max_transfers: None,
            max_connections: limits.max_connections,
            max_connections_per_peer: limits.max_connections_per_peer,
            max_connections_per_prefix: limits.max_connections_per_prefix,
            min_rate_bps: limits.min_rate_bps,
            max_lingering: limits.max_lingering,
            stalled_after: clock::to_std(limits.stalled_after),
            max_reorder_bytes_per_connection: limits.max_reorder_bytes_per_connection,
            max_reorder_bytes: limits.max_reorder_bytes,
            reset_unknown: limits.reset_unknown,
            psk: None,
            space: SpaceLimits::default(),
            read_rate_bps: None,
            routed: None,
            trace: false,
            allow_reverse: false,
            validate_addresses: true,
            only_from: None,
            tcp: Default::default(),
        }
    }
}

/// A slow application wakes when it may read a datagram's worth again.
const READ_WAKE_BYTES: u64 = 1400;
/// The smallest receive buffer a slow application gets: a few datagrams.
const MIN_READER_BUFFER_BYTES: u64 = 16 * 1024;

/// What the receiver keeps per transfer beyond the endpoint's bookkeeping.
struct Transfer {
    sink: Sink,
    /// Opens the sender's datagrams and seals the answers.
    protection: Protection,
    /// With `--rate`: how fast the application reads, and when it next
    /// wants to (bytes are waiting).
    reader: Option<ReadLimit>,
    read_wake: Option<Instant>,
    /// The engine reported `Finished` (every byte is in).
    engine_finished: bool,
    /// A timed test stream's sender reset the connection: its deadline,
    /// the stream's end (docs/PROTOCOLS.md §6, "Timed tests").
    stopped_by_sender: bool,
    /// The sender's route as the node's routing daemon reports it.
    notices: Option<EngineNotices>,
    /// Bytes of this transfer's file counted against its sender's quota
    /// (its announced size, once the header is in).
    announced: Option<u64>,
    /// The engine's trace samples (`ReceiveOptions::trace`).
    trace: Option<crate::conn::EngineTrace>,
}

/// The receiver without its socket and clock. See the module doc for the
/// calling order.
pub struct ReceiverCore {
    options: ReceiveOptions,
    engine_options: EngineOptions,
    /// The transfers, their limits and refusals.
    endpoint: Endpoint<SocketAddr, Transfer, Protection>,
    /// What the endpoint does not count (its counters are added in
    /// [`ReceiverCore::counters`]).
    counters: ReceiverCounters,
    /// Reports not yet handed to the caller of [`ReceiverCore::poll`].
    reports: Vec<TransferReport>,
    ended: u64,
    /// The real instant engine time counts from (the [`Receiver`]'s clock),
    /// for the trace samples' times.
    pub(crate) trace_origin: std::time::Instant,
    /// File bytes each address committed in this run (its quota's use).
    committed_by_host: std::collections::HashMap<std::net::IpAddr, u64>,
    /// Makes and checks address tokens (`validate_addresses`, plain SYNs).
    tokens: Option<crate::auth::token::AddressTokens>,
}

/// What the sender of a transfer that failed here is told.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Tell {
    /// Nothing: the engine failed (the sender knows, or is gone).
    Nothing,
    /// An RST at once, with this reason: its data was refused.
    Reset(Option<ResetReason>),
}

impl ReceiverCore {
    pub fn new(options: ReceiveOptions) -> Self {
        // Sealed SYNs prove themselves: tokens only for plain ones.
        let options_validate = options.validate_addresses && options.psk.is_none();
        let engine_options = EngineOptions {
            timeout: clock::from_std(options.timeout),
            linger: clock::from_std(options.linger),
            atp_min_delay: None,
            datagram_overhead: Protection::overhead(options.psk.as_ref()),
            trace: options.routed.is_some() || options.trace,
            tcp_tuning: options.tcp,
            end_to_end_delay: false,
        };
        let endpoint = Endpoint::new(EndpointConfig {
            max_connections: options.max_connections,
            max_connections_per_peer: options.max_connections_per_peer,
            max_connections_per_prefix: options.max_connections_per_prefix,
            min_rate_bps: options.min_rate_bps,
            max_lingering: options.max_lingering,
            stalled_after: clock::from_std(options.stalled_after),
            linger: clock::from_std(options.linger),
            max_reorder_bytes_per_connection: options.max_reorder_bytes_per_connection,
            max_reorder_bytes: options.max_reorder_bytes,
            reset_unknown: options.reset_unknown,
        });
        ReceiverCore {
            options,
            engine_options,
            endpoint,
            counters: ReceiverCounters::default(),
            reports: Vec::new(),
            ended: 0,
            trace_origin: std::time::Instant::now(),
            committed_by_host: std::collections::HashMap::new(),
            tokens: (options_validate).then(crate::auth::token::AddressTokens::random),
        }
    }

    pub fn counters(&self) -> ReceiverCounters {
        let e = self.endpoint.counters();
        ReceiverCounters {
            stray: e.stray + self.counters.stray,
            over_capacity: e.over_capacity,
            evicted: e.evicted,
            address_retries: e.retries,
            lingering_evicted: e.lingering_evicted,
            dropped_over_buffer_limit: e.dropped_over_buffer_limit,
            reorder_bytes: e.reorder_bytes,
            reorder_peak_bytes: e.reorder_peak_bytes,
            unauthenticated: self.counters.unauthenticated + e.replayed,
            ..self.counters
        }
    }
    /// Transfers in progress and finished ones lingering.
    pub fn transfers(&self) -> (usize, usize) {
        self.endpoint.len()
    }
    /// Whether `max_transfers` transfers have ended and none is left.
    pub fn is_done(&self) -> bool {
        self.options.max_transfers.is_some_and(|n| self.ended >= n) && self.endpoint.is_empty()
    }

    /// Counts a datagram the socket could not attribute to a sender.
    pub fn count_malformed(&mut self) {
        self.counters.datagrams += 1;
        self.counters.malformed += 1;
    }

    /// One received datagram from `peer`; `truncated` if it did not fit the
    /// receive buffer.
    pub fn handle_datagram(&mut self, now: Instant, peer: SocketAddr, bytes: &[u8], truncated: bool) {
        self.counters.datagrams += 1;
        // The connection id is in the clear, sealed or not.
        let route = if truncated { Route::Malformed } else { self.endpoint.route(peer, bytes) };
        let (id, known) = match route {
            Route::Malformed => {
                self.counters.malformed += 1;
                return;
            }
            Route::Stray => return,
            Route::Known(id) => (id, true),
            Route::Unknown(_) if self.options.only_from.is_some_and(|ip| ip != peer.ip()) => {
                self.counters.stray += 1;
                return;
            }
            Route::Unknown(id) => (id, false),
        };
        // Open the seal (with --psk) before believing anything in it.
        let mut scratch = [0u8; MAX_DATAGRAM];
        let Some(copy) = scratch.get_mut(..bytes.len()) else {
            self.counters.malformed += 1;
            return;
        };
        copy.copy_from_slice(bytes);
        let mut fresh = None;
        let opened = match self.endpoint.get_mut(id) {
            Some(conn) => conn.app.protection.open(copy),
            None => match Protection::new(self.options.psk.as_ref(), id, Direction::ToSender) {
                Ok(p) => fresh.insert(p).open(copy),
                Err(_) => return,
            },
        };
        let Ok(bytes) = opened else {
            self.counters.unauthenticated += 1;
            // A SYN this key does not verify (another key, or none): its
            // sender is told, plainly, that the keys differ.
            if !known {
                if let Ok((repr, _)) = parse_datagram(bytes) {
                    self.endpoint.refuse_unverified(now, peer, &repr, Protection::Plain);
                }
            }
            return;
        };
        let repr = match parse_datagram(bytes) {
            Ok((repr, _)) => repr,
            Err(_) => {
                self.counters.malformed += 1;
                return;
            }
        };
        if known {
            // A SYN with its Retry token again (the sender followed a later
            // Retry, or the network doubled it): the token is not part of
            // the stream, here as when the SYN opened the transfer.
            let bytes = match self.tokens {
                Some(_) if repr.opens_connection() => &bytes[..bytes.len() - repr.payload_len],
                _ => bytes,
            };
            self.endpoint.handle_input(now, id, bytes);
            return;
        }
        let protection = fresh.expect("made for an unknown connection");
        // Where the SYN comes from: sealed by a peer instance, or plain with
        // (or without) the token that proves its address; the token is not
        // part of the stream and the engine never sees it.
        let mut syn = bytes;
        let origin = match (protection.peer_salt(), &self.tokens) {
            (Some(instance), _) => Origin::Sealed(instance),
            (None, None) => Origin::Plain,
            (None, Some(tokens)) => {
                let carried = &bytes[bytes.len() - repr.payload_len..];
                if tokens.check(peer, id, now, carried) {
                    syn = &bytes[..bytes.len() - repr.payload_len];
                    Origin::Proven
                } else {
                    Origin::Unproven { token: tokens.token(peer, id, now) }
                }
            }
        };
        let (protocol, protection, evicted) = match self.endpoint.handle_new(now, peer, id, &repr, origin, protection) {
            Incoming::Accept { protocol, seal, evicted } => (protocol, seal, evicted),
            Incoming::Stray | Incoming::Replayed | Incoming::Refused | Incoming::Retry => return,
        };
        if let Some((victim, mut conn, why)) = evicted {
            // Its sender is told the receiver is busy.
            let protection = std::mem::replace(&mut conn.app.protection, Protection::Plain);
            self.endpoint.reset_connection(now, victim, &conn, Some(ResetReason::Busy), protection);
            self.end(now, victim, conn, Some(why.to_string()));
        }
        let mut engine = self.engine_options.receiver(protocol, id, now);
        if matches!(self.options.sink, SinkKind::Directory { .. } | SinkKind::TimedOnly) {
            // The sender finishes only on a commit confirmation.
            engine.engine().hold_fin_ack_for_commit();
        }
        let reader = self.options.read_rate_bps.zip(engine.reader_receive_buffer()).map(|(rate, buffer)| {
            // Once every byte is in, the sender waits for the commit
            // confirmation, i.e. for the application to read the buffer:
            // at most half the timeout's worth of reading.
            let half_timeout_bytes = (rate as f64 / 8.0 * self.options.timeout.as_secs_f64() / 2.0) as u64;
            engine.set_receive_buffer(buffer.min(half_timeout_bytes.max(MIN_READER_BUFFER_BYTES)));
            ReadLimit::new(now, rate, &[], READ_BURST)
        });
        // A daemon that cannot be reached costs the transfer its notices,
        // not its bytes: counted, and the transfer runs as without one.
        let notices = self.options.routed.as_deref().and_then(|path| match EngineNotices::connect(path, peer) {
            Ok(n) => Some(n),
            Err(_) => {
                self.counters.routed_unreachable += 1;
                None
            }
        });
        let transfer = Transfer {
            sink: Sink::new(self.options.sink.clone()).allowing_reverse(self.options.allow_reverse),
            protection,
            reader,
            read_wake: None,
            engine_finished: false,
            stopped_by_sender: false,
            notices,
            announced: None,
            trace: self.options.trace.then(|| crate::conn::EngineTrace::new(self.trace_origin)),
        };
        self.endpoint.insert(now, id, peer, protocol, engine, transfer);
        self.endpoint.handle_input(now, id, syn);
    }

    /// Reports a transfer that ended (already out of the endpoint's table)
    /// and lets go of it: a failed one's temporary file is removed; a
    /// completed one lingers, unless its sender reset it (a timed test's
    /// end: there is no FIN to answer again).
    fn end(&mut self, now: Instant, id: u32, mut conn: Connection<SocketAddr, Transfer>, error: Option<String>) {
        let ok = error.is_none();
        if !ok {
            self.counters.transfers_failed += 1;
            conn.app.sink.abort();
        } else {
            self.counters.transfers_completed += 1;
        }
        self.ended += 1;
        let report = self.report(now, id, &conn, error);
        self.reports.push(report);
        if ok && !conn.app.stopped_by_sender {
            self.endpoint.linger(id, conn);
        }
    }

    fn report(
        &self,
        now: Instant,
        id: u32,
        conn: &Connection<SocketAddr, Transfer>,
        error: Option<String>,
    ) -> TransferReport {
        let stats = conn.engine.engine_ref().stats();
        let secs = clock::to_std(now.saturating_since(conn.started)).as_secs_f64().max(1e-9);
        let sink = &conn.app.sink;
        let header = sink.header();
        // File bytes, or stream bytes for a discarding sink (no header parsed).
        let useful = if header.is_some() { sink.file_bytes() } else { sink.stream_bytes() };
        TransferReport {
            ok: error.is_none(),
            error: error.clone(),
            connection_id: format!("{id:08x}"),
            peer: conn.peer.to_string(),
            protocol: conn.protocol.name().to_string(),
            file: header.map(|h| h.name.clone()),
            timed: sink.kind() == Some(StreamKind::Timed),
            reverse: sink.reverse_request(),
            path: sink.committed().map(|p| p.display().to_string()),
            file_bytes: sink.file_bytes(),
            stream_bytes: sink.stream_bytes().max(stats.bytes_delivered),
            sha256: header.map(|h| hex(&h.sha256)),
            duration_s: secs,
            goodput_bps: if error.is_none() { useful as f64 * 8.0 / secs } else { 0.0 },
            datagrams_received: stats.datagrams_received,
            feedback_packets: stats.feedback_packets,
            dropped_datagrams: stats.dropped_datagrams,
            dropped_over_buffer_limit: stats.dropped_over_buffer_limit,
            reorder_peak_bytes: conn.reorder_peak_bytes(),
            receiver: self.counters(),
            routing: conn.app.notices.as_ref().map(|n| n.seen.clone()),
            trace: conn.app.trace.clone(),
        }
    }

    /// Runs due timers, moves delivered bytes into the sinks, reads the
    /// engines' events, and hands every report of a transfer that ended to
    /// `on_event`.
    pub fn poll(&mut self, now: Instant, on_event: &mut dyn FnMut(ReceiverEvent)) {
        for id in self.endpoint.active_ids() {
            // A file not yet announced is admitted against what the others
            // claim (only then: the sum runs over every transfer).
            let claims = self.endpoint.active().find(|&(i, _)| i == id).and_then(|(_, c)| {
                (c.app.announced.is_none() && self.options.sink.is_directory()).then(|| self.claims(id, c.peer.ip()))
            });
            let limits = self.options.space;
            let conn = self.endpoint.active_mut(id).expect("listed");
            let engine = conn.engine.engine();
            if let Some(n) = &mut conn.app.notices {
                if n.deliver(engine, now).is_err() {
                    // The daemon went away: the transfer goes on without it.
                    conn.app.notices = None;
                    self.counters.routed_unreachable += 1;
                }
            }
            if engine.poll_timeout().is_some_and(|t| t <= now) {
                engine.handle_timeout(now);
            }
            // Deliver before anything is transmitted: the file is committed
            // before its last byte is acknowledged.
            let delivered = match &mut conn.app.reader {
                None => conn.engine.take_delivered(),
                Some(reader) => {
                    let (got, more) = reader.read(now, conn.engine.engine());
                    conn.app.read_wake = if more { reader.when_allowed(READ_WAKE_BYTES) } else { None };
                    got
                }
            };
            let sink = &mut conn.app.sink;
            let mut failure: Option<(String, Tell)> = None;
            if !delivered.is_empty() {
                let mut admit = |header: &StreamHeader, dir: &std::path::Path| match claims {
                    Some(claims) => {
                        let space = FileSystemSpace::of(dir)
                            .map_err(|e| FramingError::io("reading the free space of", dir, e))?;
                        space::admit(header.size, space, claims, limits).map_err(FramingError::NoSpace)
                    }
                    None => Ok(()),
                };
                let written = sink.write_admitting(&delivered, &mut admit);
                if conn.app.announced.is_none() && sink.kind() == Some(StreamKind::File) {
                    conn.app.announced = sink.header().map(|h| h.size);
                }
                match written {
                    // Committed: the FIN's acknowledgement carries the hash
                    // this receiver computed (the commit confirmation).
                    Ok(true) => {
                        if let Some(sha) = sink.verified_sha256() {
                            conn.engine.engine().set_commit_token(sha);
                        }
                        if let Some(size) = conn.app.announced.filter(|_| sink.committed().is_some()) {
                            *self.committed_by_host.entry(conn.peer.ip()).or_default() += size;
                            // Counted once: no longer a claim in progress.
                            conn.app.announced = Some(0);
                        }
                    }
                    Ok(false) => {}
                    Err(e) => failure = Some((e.to_string(), Tell::Reset(e.reset_reason()))),
                }
            }
            while let Some(event) = conn.engine.engine().poll_event() {
                if let Some(n) = &mut conn.app.notices {
                    let _ = n.observe(&event);
                }
                match event {
                    EngineEvent::Finished => conn.app.engine_finished = true,
                    EngineEvent::Failed(FailReason::Reset) if conn.app.sink.kind() == Some(StreamKind::Timed) => {
                        conn.app.stopped_by_sender = true;
                    }
                    EngineEvent::Failed(reason) => {
                        failure.get_or_insert((reason.to_string(), Tell::Nothing));
                    }
                    EngineEvent::Trace(sample) => {
                        if let Some(t) = &mut conn.app.trace {
                            t.push(&sample);
                        }
                    }
                    _ => {}
                }
            }
            // A slow application may still be reading what the engine has:
            // the transfer ends once it read everything.
            let mut finished = (conn.app.engine_finished && conn.app.read_wake.is_none()) || conn.app.stopped_by_sender;
            let sink = &mut conn.app.sink;
            if finished && failure.is_none() {
                if let Err(e) = sink.finish() {
                    failure = Some((e.to_string(), Tell::Reset(e.reset_reason())));
                }
            }
            if matches!(failure, Some((_, Tell::Nothing))) && sink.is_complete() {
                // The engine gave up after the file was verified and
                // committed (e.g. waiting for a FIN that never came): the
                // file is complete all the same.
                failure = None;
                finished = true;
            }
            if !finished && failure.is_none() {
                continue;
            }
            let mut conn = self.endpoint.remove(id).expect("listed");
            if let Some((_, Tell::Reset(reason))) = failure {
                // Tell the sender at once rather than let it finish or time
                // out: its data was refused. The seal goes with the reset;
                // a finished transfer keeps it to answer from the lingering
                // table.
                let protection = std::mem::replace(&mut conn.app.protection, Protection::Plain);
                self.endpoint.reset_connection(now, id, &conn, reason, protection);
            }
            self.end(now, id, conn, failure.map(|(m, _)| m));
        }
        self.endpoint.poll_lingering(now);
        for report in std::mem::take(&mut self.reports) {
            on_event(ReceiverEvent::Ended(&report));
        }
    }

    /// What the transfers in progress other than `id` claim on the disk, and
    /// what the address `host` has used of its quota.
    fn claims(&self, id: u32, host: std::net::IpAddr) -> Claims {
        let mut claims =
            Claims { promised_bytes: 0, peer_bytes: self.committed_by_host.get(&host).copied().unwrap_or(0) };
        for (_, c) in self.endpoint.active().filter(|&(other, _)| other != id) {
            let Some(size) = c.app.announced else { continue };
            claims.promised_bytes += size.saturating_sub(c.app.sink.file_bytes());
            if c.peer.ip() == host {
                claims.peer_bytes += size;
            }
        }
        claims
    }

    /// Writes what the transfers (and the refusals) want to send into `out`.
    /// Returns false if `out` filled up first: send, then call again.
    pub fn poll_transmit(&mut self, now: Instant, out: &mut dyn Transmitter) -> bool {
        while self.endpoint.has_pending_resets() {
            let Some(buf) = out.buffer() else { return false };
            let mut r = self.endpoint.poll_reset(buf).expect("pending");
            if let Ok(len) = r.seal.seal(buf, r.len) {
                out.commit(len, r.peer);
                self.counters.resets_sent += 1;
            }
        }
        // Room for the seal after what the engines write.
        let overhead = self.engine_options.datagram_overhead;
        for conn in self.endpoint.connections_mut() {
            loop {
                let Some(buf) = out.buffer() else { return false };
                let room = buf.len() - overhead;
                let Some(t) = conn.engine.engine().poll_transmit(now, &mut buf[..room]) else { break };
                let Ok(len) = conn.app.protection.seal(buf, t.len) else { break };
                out.commit(len, conn.peer);
            }
        }
        true
    }

    /// When [`ReceiverCore::poll`] must run next at the latest (an engine
    /// timer or a linger's end), if anything is waiting.
    pub fn next_deadline(&self) -> Option<Instant> {
        let readers = self.endpoint.active().filter_map(|(_, c)| c.app.read_wake);
        self.endpoint.next_deadline().into_iter().chain(readers).min()
    }

    /// The transfers in progress at `now`.
    pub fn progress(&self, now: Instant) -> Vec<TransferProgress> {
        self.endpoint
            .active()
            .map(|(id, c)| TransferProgress {
                connection_id: id,
                peer: c.peer,
                elapsed: clock::to_std(now.saturating_since(c.started)),
                file: c.app.sink.header().map(|h| h.name.clone()),
                received: c.app.sink.file_bytes(),
                total: c.app.sink.header().filter(|_| c.app.sink.kind() == Some(StreamKind::File)).map(|h| h.size),
            })
            .collect()
    }

    /// Abandons every transfer: temporary files of unfinished ones are removed.
    pub fn abandon(&mut self) {
        self.endpoint.clear();
    }
}

#[cfg(test)]
mod tests;
