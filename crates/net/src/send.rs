//! The sending side: one file, one connection at a time, one event loop.

use crate::auth::{Direction, Psk};
use crate::clock::{self, Clock};
use crate::conn::{connection_id, random_u32, EngineOptions, Protection};
use crate::delay::{DelaySource, DelaySpec, EndToEndEstimator, StampCounters, Stamper};
use crate::framing::{hex, FramingError, StreamHeader};
use crate::notice::{EngineNotices, RoutingSeen};
use crate::udp::{BatchSocket, IoCounters, Outbox, RecvBatch, BATCH, MAX_DATAGRAM};
use meshbed_proto::{EngineEvent, FailReason, Protocol, SendStream};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io;
use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration as StdDuration;
use thiserror::Error;

/// Where a transfer's bytes come from.
#[derive(Clone, Debug)]
enum Source {
    /// Bytes in memory (tests, small payloads); shared between attempts.
    Memory(Arc<[u8]>),
    /// A file, read as the sender's window allows.
    File(PathBuf),
    /// `header.size` copies of one byte (benchmarks against a discarding
    /// receiver).
    Pattern(u8),
}

/// A transfer ready to send: its header (name, size, SHA-256) and where its
/// bytes come from. Nothing but the header is held in memory: the stream
/// is read as the engine's window allows (docs/PROTOCOLS.md §6).
#[derive(Clone, Debug)]
pub struct Payload {
    pub header: StreamHeader,
    source: Source,
    /// Whether the receiver must confirm the commit with the SHA-256 it
    /// computed; off only for benchmarks against a discarding receiver.
    confirm: bool,
}

/// How much a file is read (and hashed) at a time.
const READ_CHUNK: usize = 256 << 10;

impl Payload {
    /// Frames `data` under `name`.
    pub fn from_bytes(name: &str, data: &[u8]) -> Result<Self, FramingError> {
        let header = StreamHeader::for_data(name, data)?;
        Ok(Payload { header, source: Source::Memory(Arc::from(data)), confirm: true })
    }

    /// Frames a file under its file name, hashing it first (the header
    /// announces the SHA-256) in bounded memory.
    pub fn from_file(path: &Path) -> Result<Self, FramingError> {
        Self::from_file_with_progress(path, &mut |_, _| {})
    }

    /// [`Payload::from_file`], calling `progress(hashed, total)` as the hash
    /// advances (a large file takes seconds).
    pub fn from_file_with_progress(path: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<Self, FramingError> {
        let io_err = |source| FramingError::Io { what: "reading", path: path.to_path_buf(), source };
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| FramingError::BadName(format!("{}: no UTF-8 file name", path.display())))?;
        crate::framing::check_name(name)?;
        let mut file = open_regular(path)?;
        let size = file.metadata().map_err(io_err)?.len();
        let mut hasher = Sha256::new();
        let mut chunk = vec![0u8; READ_CHUNK];
        let mut hashed = 0u64;
        progress(0, size);
        loop {
            let n = match file.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_err(e)),
            };
            hasher.update(&chunk[..n]);
            hashed += n as u64;
            progress(hashed, size);
        }
        if hashed != size {
            return Err(FramingError::Changed { path: path.to_path_buf(), expected: size, got: hashed });
        }
        let header = StreamHeader { name: name.to_string(), size, sha256: hasher.finalize().into() };
        Ok(Payload { header, source: Source::File(path.to_path_buf()), confirm: true })
    }

    /// A stream of `size` bytes with a header whose hash is not computed,
    /// for benchmarks against a discarding receiver.
    pub fn unchecked(name: &str, size: u64) -> Self {
        let header = StreamHeader { name: name.to_string(), size, sha256: [0; 32] };
        Payload { header, source: Source::Pattern(0x5a), confirm: false }
    }

    /// Bytes on the stream: the header, then the file.
    pub fn stream_len(&self) -> u64 {
        self.header.encoded_len() as u64 + self.header.size
    }

    fn open(&self) -> Result<StreamReader, FramingError> {
        let body = match &self.source {
            Source::Memory(data) => Body::Memory(data.clone()),
            Source::File(path) => Body::File(open_regular(path)?, path.clone()),
            Source::Pattern(byte) => Body::Pattern(*byte),
        };
        Ok(StreamReader {
            header: self.header.encode(),
            header_at: 0,
            size: self.header.size,
            read: 0,
            body,
            chunk: Vec::new(),
            finished: false,
        })
    }
}

/// Opens a file for reading, refusing what is not a regular file (a FIFO
/// would block, a device never ends).
fn open_regular(path: &Path) -> Result<File, FramingError> {
    let io_err = |source| FramingError::Io { what: "opening", path: path.to_path_buf(), source };
    let meta = std::fs::metadata(path).map_err(io_err)?;
    if !meta.is_file() {
        return Err(FramingError::NotAFile(path.to_path_buf()));
    }
    File::open(path).map_err(io_err)
}

enum Body {
    Memory(Arc<[u8]>),
    File(File, PathBuf),
    Pattern(u8),
}

/// One attempt's pass over the stream: header bytes, then the body, fed to
/// the engine as its window allows.
struct StreamReader {
    header: Vec<u8>,
    header_at: usize,
    size: u64,
    /// Body bytes handed to the engine.
    read: u64,
    body: Body,
    chunk: Vec<u8>,
    finished: bool,
}

impl StreamReader {
    /// Writes as much as the engine's window takes, and finishes the stream
    /// after the last byte.
    fn fill(&mut self, engine: &mut dyn SendStream) -> Result<(), FramingError> {
        while !self.finished {
            let room = engine.write_room();
            if room == 0 {
                return Ok(());
            }
            if self.header_at < self.header.len() {
                self.header_at += engine.write(&self.header[self.header_at..]);
                continue;
            }
            let left = self.size - self.read;
            if left == 0 {
                if let Body::File(file, path) = &mut self.body {
                    // A file that grew since it was hashed would arrive cut.
                    let mut probe = [0u8; 1];
                    if matches!(file.read(&mut probe), Ok(n) if n > 0) {
                        let got = self.size + 1;
                        return Err(FramingError::Changed { path: path.clone(), expected: self.size, got });
                    }
                }
                engine.finish();
                self.finished = true;
                return Ok(());
            }
            let want = (room as u64).min(left).min(READ_CHUNK as u64) as usize;
            let n = match &mut self.body {
                Body::Memory(data) => engine.write(&data[self.read as usize..self.read as usize + want]),
                Body::Pattern(byte) => {
                    self.chunk.resize(want, *byte);
                    engine.write(&self.chunk[..want])
                }
                Body::File(file, path) => {
                    self.chunk.resize(READ_CHUNK, 0);
                    let got = loop {
                        match file.read(&mut self.chunk[..want]) {
                            Ok(n) => break n,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                            Err(source) => {
                                return Err(FramingError::Io { what: "reading", path: path.clone(), source })
                            }
                        }
                    };
                    if got == 0 {
                        let got = self.read;
                        return Err(FramingError::Changed { path: path.clone(), expected: self.size, got });
                    }
                    engine.write(&self.chunk[..got])
                }
            };
            self.read += n as u64;
        }
        Ok(())
    }
}

/// How to send.
#[derive(Clone, Debug)]
pub struct SendOptions {
    pub protocol: Protocol,
    pub delay: DelaySpec,
    /// Silence after which an attempt fails (engine idle timeout).
    pub timeout: StdDuration,
    /// Further attempts, each a new connection from the first byte, after a
    /// failed one (peer reset, refused or unreachable).
    pub retries: u32,
    pub retry_delay: StdDuration,
    /// ATP's smallest inter-packet delay; `None`: the preset's 100 µs.
    pub atp_min_delay: Option<StdDuration>,
    /// Local address to bind (default: any, on the peer's address family).
    pub bind: Option<SocketAddr>,
    /// Seal every datagram with this pre-shared key (`--psk`); the receiver
    /// must hold the same key.
    pub psk: Option<Psk>,
    /// The node's routing daemon's notice socket (`--routed`): route
    /// notices and path information reach the engine from it.
    pub routed: Option<PathBuf>,
    /// Keep the engine's trace samples ([`SendReport::trace`]).
    pub trace: bool,
    /// Stop sending at this instant, finished or not: a backlogged sender
    /// measured over a time (the emulator's `stop_s` flows). The report
    /// then says `stopped`, with what the receiver had acknowledged.
    pub stop_at: Option<std::time::Instant>,
}

impl SendOptions {
    pub fn new(protocol: Protocol) -> Self {
        SendOptions {
            protocol,
            delay: DelaySpec::EndToEnd,
            timeout: StdDuration::from_secs(10),
            retries: 0,
            retry_delay: StdDuration::from_millis(500),
            atp_min_delay: None,
            bind: None,
            psk: None,
            routed: None,
            trace: false,
            stop_at: None,
        }
    }
}

/// A progress sample, at most every 100 ms.
#[derive(Clone, Debug)]
pub struct SendProgress {
    /// Stream bytes the receiver acknowledged.
    pub acked: u64,
    pub total: u64,
    pub elapsed: StdDuration,
    pub attempt: u32,
}

/// What a transfer did, for humans (`to_text`) and scripts (JSON).
#[derive(Clone, Debug, Serialize)]
pub struct SendReport {
    pub ok: bool,
    pub error: Option<String>,
    pub protocol: String,
    pub connection_id: String,
    pub peer: String,
    pub file: String,
    pub file_bytes: u64,
    pub sha256: String,
    /// Bytes on the stream: the transfer header plus the file.
    pub stream_bytes: u64,
    pub duration_s: f64,
    /// File bytes per second of the last attempt, in bits.
    pub goodput_bps: f64,
    pub retransmissions: u64,
    pub retransmitted_bytes: u64,
    pub feedback_packets: u64,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    /// Datagrams the engine dropped as malformed, stray or duplicate.
    pub dropped_datagrams: u64,
    /// Datagrams no conforming receiver sends (acknowledging bytes never
    /// sent, a wrong commit confirmation): ignored, and a sign of an attack.
    pub protocol_violations: u64,
    /// With `--psk`: datagrams that failed verification (forged, replayed,
    /// or sealed with another key), dropped before the engine saw them.
    pub unauthenticated: u64,
    pub attempts: u32,
    pub delay_source: String,
    /// End-to-end estimator state (`e2e` source): smoothed and minimum RTT.
    pub srtt_us: Option<f64>,
    pub min_rtt_us: Option<f64>,
    pub stamp: StampCounters,
    pub io: IoCounters,
    /// What the routing daemon told the engine (with `--routed`).
    pub routing: Option<RoutingSeen>,
    /// Ended by [`SendOptions::stop_at`], not finished.
    pub stopped: bool,
    /// File bytes the receiver acknowledged (handed up in order).
    pub acked_file_bytes: u64,
    /// The last attempt's engine trace, with [`SendOptions::trace`].
    #[serde(skip)]
    pub trace: Option<crate::conn::EngineTrace>,
}

impl SendReport {
    pub fn to_text(&self) -> String {
        let status = match &self.error {
            None => "sent".to_string(),
            Some(e) => format!("FAILED: {e}"),
        };
        format!(
            "{status}\n  file          {} ({} bytes, sha256 {})\n  to            {} with {} (connection {})\n  duration      {:.3} s\n  goodput       {:.3} Mbit/s\n  retransmitted {} datagrams ({} bytes)\n  feedback      {} packets\n  datagrams     {} sent, {} received, {} dropped ({} protocol violations)\n  attempts      {}\n  delay source  {}\n",
            self.file,
            self.file_bytes,
            self.sha256,
            self.peer,
            self.protocol,
            self.connection_id,
            self.duration_s,
            self.goodput_bps / 1e6,
            self.retransmissions,
            self.retransmitted_bytes,
            self.feedback_packets,
            self.datagrams_sent,
            self.datagrams_received,
            self.dropped_datagrams,
            self.protocol_violations,
            self.attempts,
            self.delay_source,
        ) + &self.routing.as_ref().map_or(String::new(), |r| {
            format!(
                "  routing       {} route-failed and {} re-established notices, {} path updates{}\n",
                r.route_failed_notices,
                r.route_reestablished_notices,
                r.path_updates,
                r.path.map_or(String::new(), |p| format!(" (last: h = {}, P_max = {:.3})", p.hop_count, p.max_link_loss))
            )
        })
    }
}

/// Why a transfer failed. Every variant still carries the report.
#[derive(Debug, Error)]
pub enum SendError {
    #[error("{0}")]
    Setup(String),
    #[error("{message}")]
    Failed { message: String, report: Box<SendReport> },
}

impl SendError {
    pub fn report(&self) -> Option<&SendReport> {
        match self {
            SendError::Failed { report, .. } => Some(report),
            SendError::Setup(_) => None,
        }
    }
}

/// How one attempt ended.
enum Ending {
    Finished,
    Failed(String),
    /// The receiver refused it for being at its limit: another attempt at
    /// once would only add to its load, so none follows.
    Busy(String),
    /// [`SendOptions::stop_at`] came first.
    Stopped,
}

struct Attempt {
    ending: Ending,
    connection_id: u32,
    duration: StdDuration,
    stats: meshbed_proto::engine::Stats,
    unauthenticated: u64,
    stamper: Stamper,
    io: IoCounters,
    routing: Option<RoutingSeen>,
    trace: Option<crate::conn::EngineTrace>,
}

fn describe_failure(reason: &FailReason, peer: SocketAddr, timeout: StdDuration) -> String {
    match reason {
        FailReason::PeerUnreachable { silent_for } => format!(
            "{peer} unreachable: nothing heard for {:.1} s (--timeout {:.1} s)",
            clock::to_std(*silent_for).as_secs_f64(),
            timeout.as_secs_f64()
        ),
        FailReason::Reset => format!(
            "{peer} reset the connection: the receiver refused the file (name exists without --overwrite, bad name, checksum mismatch) or restarted and lost it; see its log"
        ),
        FailReason::Unconfirmed { waited } => format!(
            "{peer} acknowledged every byte but never confirmed that it committed the file (waited {:.1} s): the acknowledgements may have been forged (--psk prevents that) or the receiver failed to write; see its log",
            clock::to_std(*waited).as_secs_f64()
        ),
        FailReason::Busy => format!("receiver busy: {peer} is at its transfer limit; try again later"),
    }
}

/// How often a sender without a route to its peer asks the kernel again.
const NO_ROUTE_RETRY: StdDuration = StdDuration::from_millis(100);

fn run_attempt(
    payload: &Payload,
    peer: SocketAddr,
    options: &SendOptions,
    attempt: u32,
    progress: &mut dyn FnMut(&SendProgress),
) -> Result<Attempt, SendError> {
    let total = payload.stream_len();
    let mut reader = payload.open().map_err(|e| SendError::Setup(e.to_string()))?;
    let bind = options.bind.unwrap_or_else(|| match peer {
        SocketAddr::V4(_) => SocketAddr::from(([0, 0, 0, 0], 0)),
        SocketAddr::V6(_) => SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 0)),
    });
    let setup = |what: &str, e: io::Error| SendError::Setup(format!("{what}: {e}"));
    let mut socket = BatchSocket::bind(bind).map_err(|e| setup(&format!("binding {bind}"), e))?;
    // No route to the peer yet (a mesh whose routing has not converged, or
    // is repairing): the kernel refuses to connect the socket. That is the
    // routing's delay, not the end of the transfer: wait for a route for up
    // to the silence the engine would tolerate (`timeout`).
    let connecting = std::time::Instant::now();
    loop {
        match socket.connect(peer) {
            Ok(()) => break,
            Err(e)
                if crate::udp::is_no_route(&e)
                    && connecting.elapsed() < options.timeout
                    && options.stop_at.is_none_or(|t| std::time::Instant::now() < t) =>
            {
                std::thread::sleep(NO_ROUTE_RETRY.min(options.timeout));
            }
            Err(e) => return Err(setup(&format!("connecting to {peer}"), e)),
        }
    }
    let engine_options = EngineOptions {
        timeout: clock::from_std(options.timeout),
        linger: clock::from_std(options.timeout),
        atp_min_delay: options.atp_min_delay.map(clock::from_std),
        datagram_overhead: Protection::overhead(options.psk.as_ref()),
        trace: options.routed.is_some() || options.trace,
    };
    let atp = engine_options.atp(options.protocol).unwrap_or_default();
    let relay = atp.relay_config();
    let source = DelaySource::open(&options.delay, relay.alpha).map_err(SendError::Setup)?;
    let mut stamper = Stamper::new(source, relay.eta, relay.idle_after);

    let clock = Clock::new();
    let started = std::time::Instant::now();
    let mut trace = options.trace.then(|| crate::conn::EngineTrace::new(clock.to_real(meshbed_core::Instant::ZERO)));
    let connection_id = connection_id(options.protocol, random_u32());
    let mut conn = engine_options.sender(options.protocol, connection_id, clock.now());
    let mut protection = Protection::new(options.psk.as_ref(), connection_id, Direction::ToReceiver)
        .map_err(|e| SendError::Setup(e.to_string()))?;
    let overhead = engine_options.datagram_overhead;
    let mut scratch = [0u8; MAX_DATAGRAM];
    let mut unauthenticated = 0u64;
    if payload.confirm {
        // Success needs the receiver's proof that it committed these bytes.
        conn.engine().require_commit_token(payload.header.sha256);
    }
    let mut batch = RecvBatch::default();
    let mut outbox = Outbox::default();
    let mut readable = true;
    let mut blocked = false;
    let mut next_progress = started;
    // Read at every turn of the loop, which turns at least every 100 ms
    // (the progress tick): a notice reaches the engine within that.
    let mut notices = match &options.routed {
        Some(path) => Some(EngineNotices::connect(path, peer).map_err(|e| setup("the routing daemon", e))?),
        None => None,
    };
    let refused = |peer: SocketAddr| {
        format!("{peer} refused the datagrams (ICMP port unreachable): is `meshbed recv` listening there?")
    };

    let ending = 'run: loop {
        if options.stop_at.is_some_and(|t| std::time::Instant::now() >= t) {
            break 'run Ending::Stopped;
        }
        let now = clock.now();
        let engine = conn.engine();
        if readable {
            // Bounded so that timers stay on time under a flood.
            for _ in 0..4 {
                let n = match socket.recv_batch(&mut batch) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => break 'run Ending::Failed(refused(peer)),
                    Err(e) => return Err(setup("receiving", e)),
                };
                for i in 0..n {
                    let (_, bytes, _) = batch.get(i);
                    let copy = &mut scratch[..bytes.len()];
                    copy.copy_from_slice(bytes);
                    let Ok(plain) = protection.open(copy) else {
                        unauthenticated += 1;
                        continue;
                    };
                    stamper.on_received(now, plain);
                    engine.handle_input(now, plain);
                }
                if n < BATCH {
                    break;
                }
            }
        }
        if let Some(n) = &mut notices {
            if let Err(e) = n.deliver(engine, now) {
                break 'run Ending::Failed(format!("the routing daemon's notice socket: {e}"));
            }
        }
        if engine.poll_timeout().is_some_and(|t| t <= now) {
            engine.handle_timeout(now);
        }
        // Refill the window with what was acknowledged.
        if let Err(e) = reader.fill(engine) {
            break 'run Ending::Failed(e.to_string());
        }
        // Transmit until the engine has nothing more or the kernel is full.
        if blocked {
            match socket.flush(&mut outbox) {
                Ok(done) => blocked = !done,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => break 'run Ending::Failed(refused(peer)),
                Err(e) => return Err(setup("sending", e)),
            }
        }
        while !blocked {
            let Some(buf) = outbox.next_buf() else {
                match socket.flush(&mut outbox) {
                    Ok(done) => blocked = !done,
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => break 'run Ending::Failed(refused(peer)),
                    Err(e) => return Err(setup("sending", e)),
                }
                continue;
            };
            // Room for the seal after what the engine writes.
            let room = buf.len() - overhead;
            let Some(t) = engine.poll_transmit(now, &mut buf[..room]) else { break };
            let _ = stamper.stamp(now, &mut buf[..t.len]);
            let len = protection.seal(buf, t.len).map_err(|e| SendError::Setup(format!("sealing: {e}")))?;
            outbox.commit(len, None);
        }
        if !blocked {
            match socket.flush(&mut outbox) {
                Ok(done) => blocked = !done,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => break 'run Ending::Failed(refused(peer)),
                Err(e) => return Err(setup("sending", e)),
            }
        }
        while let Some(event) = engine.poll_event() {
            if let Some(n) = &mut notices {
                n.observe(&event).map_err(|e| setup("telling the routing daemon", e))?;
            }
            match event {
                EngineEvent::Finished => break 'run Ending::Finished,
                EngineEvent::Failed(FailReason::Busy) => {
                    break 'run Ending::Busy(describe_failure(&FailReason::Busy, peer, options.timeout))
                }
                EngineEvent::Failed(reason) => {
                    break 'run Ending::Failed(describe_failure(&reason, peer, options.timeout))
                }
                EngineEvent::Trace(sample) => {
                    if let Some(t) = &mut trace {
                        t.push(&sample);
                    }
                }
                EngineEvent::Connected | EngineEvent::PeerUnresponsive => {}
            }
        }
        let real_now = std::time::Instant::now();
        if real_now >= next_progress {
            let acked = engine.stats().bytes_delivered.min(total);
            progress(&SendProgress { acked, total, elapsed: started.elapsed(), attempt });
            next_progress = real_now + StdDuration::from_millis(100);
        }
        let mut deadline = engine.poll_timeout().map(|t| clock.to_real(t)).unwrap_or(next_progress).min(next_progress);
        if blocked {
            // Wait for buffer space, but never spin on a past deadline.
            deadline = deadline.max(real_now + StdDuration::from_millis(1));
        }
        let ready = socket.wait(blocked, Some(deadline)).map_err(|e| setup("waiting on the socket", e))?;
        readable = ready.readable;
    };
    let duration = started.elapsed();
    let stats = conn.engine_ref().stats().clone();
    progress(&SendProgress { acked: stats.bytes_delivered.min(total), total, elapsed: duration, attempt });
    Ok(Attempt {
        ending,
        connection_id,
        duration,
        stats,
        unauthenticated,
        stamper,
        io: socket.counters,
        routing: notices.map(|n| n.seen),
        trace,
    })
}

/// Sends `payload` to a `meshbed recv` at `peer`. `progress` is called at
/// most every 100 ms. On failure the error carries the report.
pub fn send(
    payload: Payload,
    peer: SocketAddr,
    options: &SendOptions,
    progress: &mut dyn FnMut(&SendProgress),
) -> Result<SendReport, SendError> {
    let header = payload.header.clone();
    let stream_bytes = payload.stream_len();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut last = attempt > options.retries;
        let a = run_attempt(&payload, peer, options, attempt, progress)?;
        // A busy receiver is not asked again: the sender reports it at once.
        last |= matches!(a.ending, Ending::Busy(_) | Ending::Stopped);
        let e2e: Option<&EndToEndEstimator> = match &a.stamper.source {
            DelaySource::EndToEnd(e) => Some(e),
            _ => None,
        };
        let error = match &a.ending {
            Ending::Finished => None,
            Ending::Failed(m) | Ending::Busy(m) => Some(m.clone()),
            Ending::Stopped => Some(format!(
                "stopped at the deadline with {} of {stream_bytes} stream bytes acknowledged",
                a.stats.bytes_delivered.min(stream_bytes)
            )),
        };
        let secs = a.duration.as_secs_f64().max(1e-9);
        let report = SendReport {
            ok: error.is_none(),
            error: error.clone(),
            protocol: options.protocol.name().to_string(),
            connection_id: format!("{:08x}", a.connection_id),
            peer: peer.to_string(),
            file: header.name.clone(),
            file_bytes: header.size,
            sha256: hex(&header.sha256),
            stream_bytes,
            duration_s: secs,
            goodput_bps: if error.is_none() { header.size as f64 * 8.0 / secs } else { 0.0 },
            retransmissions: a.stats.retransmissions,
            retransmitted_bytes: a.stats.retransmitted_bytes,
            feedback_packets: a.stats.feedback_packets,
            datagrams_sent: a.stats.datagrams_sent,
            datagrams_received: a.stats.datagrams_received,
            dropped_datagrams: a.stats.dropped_datagrams,
            protocol_violations: a.stats.protocol_violations,
            unauthenticated: a.unauthenticated,
            attempts: attempt,
            delay_source: options.delay.to_string(),
            srtt_us: e2e.and_then(|e| e.srtt()).map(|d| d.as_nanos() as f64 / 1e3),
            min_rtt_us: e2e.and_then(|e| e.min_rtt()).map(|d| d.as_nanos() as f64 / 1e3),
            stamp: a.stamper.counters,
            io: a.io,
            routing: a.routing,
            trace: a.trace,
            stopped: matches!(a.ending, Ending::Stopped),
            acked_file_bytes: a.stats.bytes_delivered.min(stream_bytes).saturating_sub(stream_bytes - header.size),
        };
        match error {
            None => return Ok(report),
            Some(message) if last => {
                let message = if attempt > 1 { format!("{message} (after {attempt} attempts)") } else { message };
                return Err(SendError::Failed { message, report: Box::new(report) });
            }
            Some(_) => std::thread::sleep(options.retry_delay),
        }
    }
}
