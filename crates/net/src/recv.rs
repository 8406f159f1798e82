//! The receiving side: one socket, one event loop, any number of concurrent
//! transfers told apart by connection id.
//!
//! Each loop iteration: take every waiting datagram and hand it to its
//! connection (or open one on a SYN), run due timers, move each
//! connection's delivered bytes into its [`Sink`] (which commits a complete,
//! verified file), read the engines' events, and only then let the engines
//! transmit. So the acknowledgement of a file's last byte (and the answer to
//! its FIN) leaves only after the file has its final name: a sender that
//! reports success has a committed file behind it.

use crate::auth::{Direction, Psk};
use crate::clock::{self, Clock};
use crate::conn::{protocol_of, wire_matches, EngineOptions, Protection, ReceiverEngine};
use crate::framing::{hex, Sink, SinkKind};
use crate::udp::{BatchSocket, IoCounters, Outbox, RecvBatch, BATCH, MAX_DATAGRAM};
use meshbed_core::Instant;
use meshbed_proto::wire::{parse_datagram, Control, Packet, ProtocolId, Repr};
use meshbed_proto::{EngineEvent, Protocol};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration as StdDuration;

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
    /// Concurrent transfers at most; further SYNs are dropped (counted).
    pub max_connections: usize,
    /// Answer datagrams of unknown connections with RST (at most one per
    /// connection per 100 ms), so that a sender whose receiver restarted
    /// learns it at once instead of after its timeout.
    pub reset_unknown: bool,
    /// Accept only datagrams sealed with this pre-shared key, and seal every
    /// answer (`--psk`; docs/PROTOCOLS.md §6).
    pub psk: Option<Psk>,
}

impl ReceiveOptions {
    pub fn new(listen: SocketAddr, sink: SinkKind) -> Self {
        ReceiveOptions {
            listen,
            sink,
            timeout: StdDuration::from_secs(10),
            linger: StdDuration::from_secs(10),
            max_transfers: None,
            max_connections: 64,
            reset_unknown: true,
            psk: None,
        }
    }
}

/// Receiver-wide datagram counters.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReceiverCounters {
    pub datagrams: u64,
    /// Would not parse (truncated header, bad version, flags, SACK length…),
    /// or longer than any engine datagram.
    pub malformed: u64,
    /// Well-formed but for no connection here (unknown id and not a SYN, or a
    /// known id from another address), or a SYN whose id names no protocol
    /// or the other protocol family.
    pub stray: u64,
    /// SYNs dropped because `max_connections` transfers were running.
    pub over_capacity: u64,
    pub resets_sent: u64,
    /// With `--psk`: datagrams that failed verification (forged, replayed,
    /// another key), dropped before any engine saw them.
    pub unauthenticated: u64,
    pub transfers_completed: u64,
    pub transfers_failed: u64,
}

/// One ended transfer.
#[derive(Clone, Debug, Serialize)]
pub struct TransferReport {
    pub ok: bool,
    pub error: Option<String>,
    pub connection_id: String,
    pub peer: String,
    pub protocol: String,
    pub file: Option<String>,
    /// The committed file, when `ok` and writing to a directory.
    pub path: Option<String>,
    pub file_bytes: u64,
    pub stream_bytes: u64,
    pub sha256: Option<String>,
    pub duration_s: f64,
    pub goodput_bps: f64,
    pub datagrams_received: u64,
    pub feedback_packets: u64,
    /// Datagrams this connection's engine dropped: duplicates, beyond the
    /// window or the FIN, or malformed for it.
    pub dropped_datagrams: u64,
    /// The receiver's counters when this transfer ended.
    pub receiver: ReceiverCounters,
}

impl TransferReport {
    pub fn to_text(&self) -> String {
        let what = self.file.as_deref().unwrap_or("(no header)");
        match &self.error {
            None => format!(
                "received {} ({} bytes, sha256 {}) from {} with {} in {:.3} s: {:.3} Mbit/s, {} datagrams, {} feedback, {} dropped{}\n",
                self.path.as_deref().unwrap_or(what),
                self.file_bytes,
                self.sha256.as_deref().unwrap_or("-"),
                self.peer,
                self.protocol,
                self.duration_s,
                self.goodput_bps / 1e6,
                self.datagrams_received,
                self.feedback_packets,
                self.dropped_datagrams,
                self.counters_note(),
            ),
            Some(e) => format!(
                "FAILED {what} from {} with {} (connection {}) after {} bytes: {e}{}\n",
                self.peer,
                self.protocol,
                self.connection_id,
                self.file_bytes,
                self.counters_note()
            ),
        }
    }

    fn counters_note(&self) -> String {
        let c = &self.receiver;
        if c.malformed + c.stray + c.over_capacity == 0 {
            String::new()
        } else {
            format!(
                " (receiver so far: {} malformed, {} stray, {} over capacity)",
                c.malformed, c.stray, c.over_capacity
            )
        }
    }
}

/// A transfer in progress, for progress displays.
#[derive(Clone, Debug)]
pub struct TransferProgress {
    pub connection_id: u32,
    pub peer: SocketAddr,
    pub file: Option<String>,
    pub received: u64,
    pub total: Option<u64>,
}

/// What the receiver tells its caller.
pub enum ReceiverEvent<'a> {
    /// Every ~200 ms while transfers run.
    Progress(&'a [TransferProgress]),
    /// A transfer ended.
    Ended(&'a TransferReport),
}

struct Conn {
    engine: ReceiverEngine,
    protocol: Protocol,
    peer: SocketAddr,
    sink: Sink,
    /// Opens the sender's datagrams and seals the answers.
    protection: Protection,
    started: std::time::Instant,
    last_input: Instant,
    /// Committed and reported; kept to answer repeated FINs until the linger.
    finished: bool,
}

/// A bound receiver. [`Receiver::run`] is its event loop.
pub struct Receiver {
    socket: BatchSocket,
    options: ReceiveOptions,
    engine_options: EngineOptions,
    clock: Clock,
    conns: BTreeMap<u32, Conn>,
    counters: ReceiverCounters,
    last_reset: HashMap<u32, Instant>,
    ended: u64,
}

impl Receiver {
    pub fn bind(options: ReceiveOptions) -> io::Result<Self> {
        if let SinkKind::Directory { dir, .. } = &options.sink {
            if !dir.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("output directory `{}` does not exist", dir.display()),
                ));
            }
        }
        let socket = BatchSocket::bind(options.listen)?;
        let engine_options = EngineOptions {
            timeout: clock::from_std(options.timeout),
            linger: clock::from_std(options.linger),
            atp_min_delay: None,
            datagram_overhead: Protection::overhead(options.psk.as_ref()),
        };
        Ok(Receiver {
            socket,
            options,
            engine_options,
            clock: Clock::new(),
            conns: BTreeMap::new(),
            counters: ReceiverCounters::default(),
            last_reset: HashMap::new(),
            ended: 0,
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }
    pub fn counters(&self) -> ReceiverCounters {
        self.counters
    }
    pub fn io_counters(&self) -> IoCounters {
        self.socket.counters
    }

    fn queue_reset(
        &mut self,
        outbox: &mut Outbox,
        now: Instant,
        repr: &Repr,
        peer: SocketAddr,
        protection: &mut Protection,
    ) {
        if !self.options.reset_unknown || repr.control.contains(Control::RST) {
            return;
        }
        let recent =
            self.last_reset.get(&repr.connection_id).is_some_and(|&t| now.saturating_since(t).as_nanos() < 100_000_000);
        if recent {
            return;
        }
        if self.last_reset.len() > 4096 {
            self.last_reset.clear();
        }
        self.last_reset.insert(repr.connection_id, now);
        let rst = Repr {
            protocol: repr.protocol,
            control: Control(Control::RST),
            hop_count: 0,
            connection_id: repr.connection_id,
            seq: 0,
            ack: 0,
            d_max_us: 0,
            d_s_us: 0,
            sack_blocks: Vec::new(),
            payload_len: 0,
        };
        if let Some(buf) = outbox.next_buf() {
            let len = rst.buffer_len();
            rst.emit(&mut buf[..len]);
            if let Ok(len) = protection.seal(buf, len) {
                outbox.commit(len, Some(peer));
                self.counters.resets_sent += 1;
            }
        }
    }

    /// One received datagram.
    fn dispatch(&mut self, outbox: &mut Outbox, now: Instant, peer: SocketAddr, bytes: &[u8], truncated: bool) {
        self.counters.datagrams += 1;
        // The connection id is in the clear, sealed or not.
        let id = match Packet::new_checked(bytes) {
            Ok(packet) if !truncated => packet.connection_id(),
            _ => {
                self.counters.malformed += 1;
                return;
            }
        };
        let known = self.conns.get(&id).map(|conn| conn.peer == peer);
        if known == Some(false) {
            self.counters.stray += 1;
            return;
        }
        // Open the seal (with --psk) before believing anything in it.
        let mut scratch = [0u8; MAX_DATAGRAM];
        let copy = &mut scratch[..bytes.len()];
        copy.copy_from_slice(bytes);
        let mut fresh = None;
        let opened = match self.conns.get_mut(&id) {
            Some(conn) => conn.protection.open(copy),
            None => match Protection::new(self.options.psk.as_ref(), id, Direction::ToSender) {
                Ok(p) => fresh.insert(p).open(copy),
                Err(_) => return,
            },
        };
        let Ok(bytes) = opened else {
            self.counters.unauthenticated += 1;
            return;
        };
        let repr = match parse_datagram(bytes) {
            Ok((repr, _)) => repr,
            Err(_) => {
                self.counters.malformed += 1;
                return;
            }
        };
        if let Some(conn) = self.conns.get_mut(&id) {
            conn.last_input = now;
            conn.engine.engine().handle_input(now, bytes);
            return;
        }
        let mut protection = fresh.expect("made for an unknown connection");
        let c = repr.control;
        let opens = c.contains(Control::SYN) && !c.contains(Control::ACK) && !c.contains(Control::SACK_OPT);
        if !opens {
            self.counters.stray += 1;
            // Feedback and ACKs travel towards senders; only answer data.
            let tcp_ack = repr.protocol == ProtocolId::Tcp
                && repr.payload_len == 0
                && !c.contains(Control::FIN)
                && !c.contains(Control::SYN);
            if !c.contains(Control::SACK_OPT) && !tcp_ack {
                self.queue_reset(outbox, now, &repr, peer, &mut protection);
            }
            return;
        }
        let Some(protocol) = protocol_of(repr.connection_id).filter(|&p| wire_matches(p, repr.protocol)) else {
            self.counters.stray += 1;
            return;
        };
        if self.conns.len() >= self.options.max_connections {
            self.counters.over_capacity += 1;
            return;
        }
        let mut engine = ReceiverEngine::new(protocol, &self.engine_options, repr.connection_id, now);
        if matches!(self.options.sink, SinkKind::Directory { .. }) {
            // The sender finishes only on a commit confirmation.
            engine.engine().hold_fin_ack_for_commit();
        }
        engine.engine().handle_input(now, bytes);
        let sink = Sink::new(self.options.sink.clone(), repr.connection_id);
        let conn = Conn {
            engine,
            protocol,
            peer,
            sink,
            protection,
            started: std::time::Instant::now(),
            last_input: now,
            finished: false,
        };
        self.conns.insert(repr.connection_id, conn);
    }

    fn report(&mut self, id: u32, error: Option<String>) -> TransferReport {
        if error.is_some() {
            self.counters.transfers_failed += 1;
        } else {
            self.counters.transfers_completed += 1;
        }
        self.ended += 1;
        let conn = &self.conns[&id];
        let stats = conn.engine.engine_ref().stats();
        let secs = conn.started.elapsed().as_secs_f64().max(1e-9);
        let header = conn.sink.header();
        // File bytes, or stream bytes for a discarding sink (no header parsed).
        let useful = if header.is_some() { conn.sink.file_bytes() } else { conn.sink.stream_bytes() };
        TransferReport {
            ok: error.is_none(),
            error: error.clone(),
            connection_id: format!("{id:08x}"),
            peer: conn.peer.to_string(),
            protocol: conn.protocol.name().to_string(),
            file: header.map(|h| h.name.clone()),
            path: conn.sink.committed().map(|p| p.display().to_string()),
            file_bytes: conn.sink.file_bytes(),
            stream_bytes: conn.sink.stream_bytes().max(stats.bytes_delivered),
            sha256: header.map(|h| hex(&h.sha256)),
            duration_s: secs,
            goodput_bps: if error.is_none() { useful as f64 * 8.0 / secs } else { 0.0 },
            datagrams_received: stats.datagrams_received,
            feedback_packets: stats.feedback_packets,
            dropped_datagrams: stats.dropped_datagrams,
            receiver: self.counters,
        }
    }

    /// Runs until `stop` is set or `max_transfers` transfers have ended and
    /// lingered. Transfers still running at a stop are abandoned: their
    /// temporary files are removed.
    pub fn run(&mut self, stop: &AtomicBool, on_event: &mut dyn FnMut(ReceiverEvent)) -> io::Result<ReceiverCounters> {
        let mut batch = RecvBatch::default();
        let mut outbox = Outbox::default();
        let mut readable = true;
        let mut blocked = false;
        let mut next_progress = std::time::Instant::now();
        let linger = clock::from_std(self.options.linger);
        let overhead = self.engine_options.datagram_overhead;
        let mut ids: Vec<u32> = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let done = self.options.max_transfers.is_some_and(|n| self.ended >= n) && self.conns.is_empty();
            if done {
                break;
            }
            let now = self.clock.now();
            if readable {
                for _ in 0..4 {
                    let n = match self.socket.recv_batch(&mut batch) {
                        Ok(n) => n,
                        // An ICMP error about an earlier send (a vanished
                        // sender); the engines' timeouts handle it.
                        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                        Err(e) => return Err(e),
                    };
                    for i in 0..n {
                        let (addr, bytes, truncated) = batch.get(i);
                        match addr {
                            Some(addr) => self.dispatch(&mut outbox, now, addr, bytes, truncated),
                            None => self.counters.malformed += 1,
                        }
                    }
                    if n < BATCH {
                        break;
                    }
                }
            }
            ids.clear();
            ids.extend(self.conns.keys().copied());
            let mut skipped = false;
            for &id in &ids {
                let conn = self.conns.get_mut(&id).expect("listed");
                let engine = conn.engine.engine();
                if engine.poll_timeout().is_some_and(|t| t <= now) {
                    engine.handle_timeout(now);
                }
                // Deliver before anything is transmitted: the file is
                // committed before its last byte is acknowledged.
                let delivered = conn.engine.take_delivered();
                let mut failure: Option<(String, bool)> = None;
                if !delivered.is_empty() {
                    match conn.sink.write(&delivered) {
                        // Committed: the FIN's acknowledgement, sent below,
                        // carries the hash this receiver computed.
                        Ok(true) => {
                            if let Some(sha) = conn.sink.verified_sha256() {
                                conn.engine.engine().set_commit_token(sha);
                            }
                        }
                        Ok(false) => {}
                        Err(e) => failure = Some((e.to_string(), true)),
                    }
                }
                let mut finished_now = false;
                while let Some(event) = conn.engine.engine().poll_event() {
                    match event {
                        EngineEvent::Finished if !conn.finished => finished_now = true,
                        EngineEvent::Failed(reason) if !conn.finished => {
                            failure.get_or_insert((reason.to_string(), false));
                        }
                        _ => {}
                    }
                }
                if finished_now && failure.is_none() {
                    match conn.sink.finish() {
                        Ok(()) => conn.finished = true,
                        Err(e) => failure = Some((e.to_string(), true)),
                    }
                }
                if matches!(failure, Some((_, false))) && conn.sink.is_complete() {
                    // The engine gave up after the file was verified and
                    // committed (e.g. waiting for a FIN that never came):
                    // the file is complete all the same.
                    failure = None;
                    finished_now = true;
                    conn.finished = true;
                }
                if finished_now && conn.finished {
                    let report = self.report(id, None);
                    on_event(ReceiverEvent::Ended(&report));
                }
                if let Some((message, reset)) = failure {
                    let report = self.report(id, Some(message));
                    on_event(ReceiverEvent::Ended(&report));
                    let mut conn = self.conns.remove(&id).expect("listed");
                    conn.sink.abort();
                    if reset {
                        // Tell the sender at once rather than let it finish
                        // or time out: its data was refused.
                        let protocol = if conn.protocol.is_atp() { ProtocolId::Atp } else { ProtocolId::Tcp };
                        let repr = Repr {
                            protocol,
                            control: Control(0),
                            hop_count: 0,
                            connection_id: id,
                            seq: 0,
                            ack: 0,
                            d_max_us: 0,
                            d_s_us: 0,
                            sack_blocks: Vec::new(),
                            payload_len: 0,
                        };
                        self.queue_reset(&mut outbox, now, &repr, conn.peer, &mut conn.protection);
                    }
                    continue;
                }
                let conn = self.conns.get_mut(&id).expect("listed");
                let closed = conn.engine.engine_ref().is_closed();
                if conn.finished && (now >= conn.last_input + linger || (closed && conn.protocol.is_atp())) {
                    self.conns.remove(&id);
                    continue;
                }
                if blocked {
                    // Its datagrams wait for the next round (no timer says so).
                    skipped = true;
                    continue;
                }
                let peer = conn.peer;
                loop {
                    let Some(buf) = outbox.next_buf() else {
                        blocked = !self.socket.flush(&mut outbox).or_else(ignore_refused)?;
                        if blocked {
                            break;
                        }
                        continue;
                    };
                    // Room for the seal after what the engine writes.
                    let room = buf.len() - overhead;
                    let Some(t) = conn.engine.engine().poll_transmit(now, &mut buf[..room]) else { break };
                    let Ok(len) = conn.protection.seal(buf, t.len) else { break };
                    outbox.commit(len, Some(peer));
                }
            }
            blocked = !self.socket.flush(&mut outbox).or_else(ignore_refused)?;

            let real_now = std::time::Instant::now();
            if real_now >= next_progress && !self.conns.is_empty() {
                let list: Vec<TransferProgress> = self
                    .conns
                    .iter()
                    .filter(|(_, c)| !c.finished)
                    .map(|(&id, c)| TransferProgress {
                        connection_id: id,
                        peer: c.peer,
                        file: c.sink.header().map(|h| h.name.clone()),
                        received: c.sink.file_bytes(),
                        total: c.sink.header().map(|h| h.size),
                    })
                    .collect();
                on_event(ReceiverEvent::Progress(&list));
                next_progress = real_now + StdDuration::from_millis(200);
            }
            // Sleep until the earliest engine deadline or linger end, at most
            // 100 ms so that `stop` is noticed.
            let mut deadline = real_now + StdDuration::from_millis(100);
            for c in self.conns.values() {
                let t = if c.finished { Some(c.last_input + linger) } else { c.engine.engine_ref().poll_timeout() };
                if let Some(t) = t {
                    deadline = deadline.min(self.clock.to_real(t));
                }
            }
            if blocked {
                deadline = deadline.max(real_now + StdDuration::from_millis(1));
            } else if skipped {
                deadline = real_now;
            }
            readable = self.socket.wait(blocked, Some(deadline))?.readable;
        }
        // Abandon what is still running: Sink::drop removes temporary files.
        self.conns.clear();
        Ok(self.counters)
    }
}

fn ignore_refused(e: io::Error) -> io::Result<bool> {
    if e.kind() == io::ErrorKind::ConnectionRefused {
        Ok(true)
    } else {
        Err(e)
    }
}
