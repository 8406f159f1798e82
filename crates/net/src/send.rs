//! The sending side: one file, one connection at a time, one event loop.

use crate::clock::{self, Clock};
use crate::conn::{connection_id, random_u32, EngineOptions, SenderEngine};
use crate::delay::{DelaySource, DelaySpec, EndToEndEstimator, StampCounters, Stamper};
use crate::framing::{hex, FramingError, StreamHeader};
use crate::udp::{BatchSocket, IoCounters, Outbox, RecvBatch, BATCH};
use meshbed_proto::{EngineEvent, FailReason, Protocol};
use serde::Serialize;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration as StdDuration;
use thiserror::Error;

/// A framed stream ready to send: the transfer header, then the file.
#[derive(Clone, Debug)]
pub struct Payload {
    pub header: StreamHeader,
    /// Header bytes followed by the file's bytes.
    pub stream: Vec<u8>,
}

impl Payload {
    /// Frames `data` under `name`.
    pub fn from_bytes(name: &str, data: &[u8]) -> Result<Self, FramingError> {
        let header = StreamHeader::for_data(name, data)?;
        let mut stream = header.encode();
        stream.extend_from_slice(data);
        Ok(Payload { header, stream })
    }

    /// Reads a whole file into memory (the engines own the data they send)
    /// and frames it under its file name.
    pub fn from_file(path: &Path) -> Result<Self, FramingError> {
        let io_err = |source| FramingError::Io { what: "reading", path: path.to_path_buf(), source };
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| FramingError::BadName(format!("{}: no UTF-8 file name", path.display())))?;
        crate::framing::check_name(name)?;
        let data = std::fs::read(path).map_err(io_err)?;
        Self::from_bytes(name, &data)
    }

    /// A stream of `size` bytes with a header whose hash is not computed,
    /// for benchmarks against a discarding receiver.
    pub fn unchecked(name: &str, size: usize) -> Self {
        let header = StreamHeader { name: name.to_string(), size: size as u64, sha256: [0; 32] };
        let mut stream = header.encode();
        stream.resize(stream.len() + size, 0x5a);
        Payload { header, stream }
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
    pub attempts: u32,
    pub delay_source: String,
    /// End-to-end estimator state (`e2e` source): smoothed and minimum RTT.
    pub srtt_us: Option<f64>,
    pub min_rtt_us: Option<f64>,
    pub stamp: StampCounters,
    pub io: IoCounters,
}

impl SendReport {
    pub fn to_text(&self) -> String {
        let status = match &self.error {
            None => "sent".to_string(),
            Some(e) => format!("FAILED: {e}"),
        };
        format!(
            "{status}\n  file          {} ({} bytes, sha256 {})\n  to            {} with {} (connection {})\n  duration      {:.3} s\n  goodput       {:.3} Mbit/s\n  retransmitted {} datagrams ({} bytes)\n  feedback      {} packets\n  datagrams     {} sent, {} received, {} dropped\n  attempts      {}\n  delay source  {}\n",
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
            self.attempts,
            self.delay_source,
        )
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
}

struct Attempt {
    ending: Ending,
    connection_id: u32,
    duration: StdDuration,
    stats: meshbed_proto::engine::Stats,
    stamper: Stamper,
    io: IoCounters,
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
        FailReason::Busy => format!("receiver busy: {peer} is at its transfer limit; try again later"),
    }
}

fn run_attempt(
    stream: Vec<u8>,
    peer: SocketAddr,
    options: &SendOptions,
    attempt: u32,
    progress: &mut dyn FnMut(&SendProgress),
) -> Result<Attempt, SendError> {
    let total = stream.len() as u64;
    let bind = options.bind.unwrap_or_else(|| match peer {
        SocketAddr::V4(_) => SocketAddr::from(([0, 0, 0, 0], 0)),
        SocketAddr::V6(_) => SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 0)),
    });
    let setup = |what: &str, e: io::Error| SendError::Setup(format!("{what}: {e}"));
    let mut socket = BatchSocket::bind(bind).map_err(|e| setup(&format!("binding {bind}"), e))?;
    socket.connect(peer).map_err(|e| setup(&format!("connecting to {peer}"), e))?;
    let engine_options = EngineOptions {
        timeout: clock::from_std(options.timeout),
        linger: clock::from_std(options.timeout),
        atp_min_delay: options.atp_min_delay.map(clock::from_std),
    };
    let atp = engine_options.atp(options.protocol).unwrap_or_default();
    let relay = atp.relay_config();
    let source = DelaySource::open(&options.delay, relay.alpha).map_err(SendError::Setup)?;
    let mut stamper = Stamper::new(source, relay.eta, relay.idle_after);

    let clock = Clock::new();
    let started = std::time::Instant::now();
    let connection_id = connection_id(options.protocol, random_u32());
    let mut conn = SenderEngine::new(options.protocol, &engine_options, connection_id, stream, clock.now());
    let mut batch = RecvBatch::default();
    let mut outbox = Outbox::default();
    let mut readable = true;
    let mut blocked = false;
    let mut next_progress = started;
    let refused = |peer: SocketAddr| {
        format!("{peer} refused the datagrams (ICMP port unreachable): is `meshbed recv` listening there?")
    };

    let ending = 'run: loop {
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
                    stamper.on_received(now, bytes);
                    engine.handle_input(now, bytes);
                }
                if n < BATCH {
                    break;
                }
            }
        }
        if engine.poll_timeout().is_some_and(|t| t <= now) {
            engine.handle_timeout(now);
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
            let Some(t) = engine.poll_transmit(now, buf) else { break };
            let _ = stamper.stamp(now, &mut buf[..t.len]);
            outbox.commit(t.len, None);
        }
        if !blocked {
            match socket.flush(&mut outbox) {
                Ok(done) => blocked = !done,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => break 'run Ending::Failed(refused(peer)),
                Err(e) => return Err(setup("sending", e)),
            }
        }
        while let Some(event) = engine.poll_event() {
            match event {
                EngineEvent::Finished => break 'run Ending::Finished,
                EngineEvent::Failed(FailReason::Busy) => {
                    break 'run Ending::Busy(describe_failure(&FailReason::Busy, peer, options.timeout))
                }
                EngineEvent::Failed(reason) => {
                    break 'run Ending::Failed(describe_failure(&reason, peer, options.timeout))
                }
                EngineEvent::Connected | EngineEvent::Trace(_) => {}
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
    Ok(Attempt { ending, connection_id, duration, stats, stamper, io: socket.counters })
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
    let stream_bytes = payload.stream.len() as u64;
    let mut stream = Some(payload.stream);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut last = attempt > options.retries;
        // The engine owns its data: copy only when another attempt may follow.
        let data = if last { stream.take().expect("kept for the last attempt") } else { stream.clone().expect("kept") };
        let a = run_attempt(data, peer, options, attempt, progress)?;
        last |= matches!(a.ending, Ending::Busy(_));
        let e2e: Option<&EndToEndEstimator> = match &a.stamper.source {
            DelaySource::EndToEnd(e) => Some(e),
            _ => None,
        };
        let error = match &a.ending {
            Ending::Finished => None,
            Ending::Failed(m) | Ending::Busy(m) => Some(m.clone()),
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
            attempts: attempt,
            delay_source: options.delay.to_string(),
            srtt_us: e2e.and_then(|e| e.srtt()).map(|d| d.as_nanos() as f64 / 1e3),
            min_rtt_us: e2e.and_then(|e| e.min_rtt()).map(|d| d.as_nanos() as f64 / 1e3),
            stamp: a.stamper.counters,
            io: a.io,
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
