//! A `Pair` harness: drives a sender and a receiver engine in virtual time over
//! a toy channel with delay, loss, reordering and duplication (quinn-proto
//! `tests/util.rs`). Used by the property tests of every protocol and by
//! anyone who wants to try an engine without the radio model.
//!
//! The channel draws from a generator the caller seeds, so a failing case is
//! reproducible from its seed.

use crate::engine::{Engine, EngineEvent};
use meshbed_core::{stream_rng, Duration, Instant, StreamId, StreamKind, StreamRng};
use rand::Rng;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Reproducible pseudo-random bytes for test payloads and files: `len`
/// bytes from the run stream of `seed`, the same on every machine.
pub fn test_bytes(len: usize, seed: u64) -> Vec<u8> {
    use rand::RngCore;
    let mut out = vec![0u8; len];
    stream_rng(seed, StreamId::new(StreamKind::Experiment, 1)).fill_bytes(&mut out);
    out
}

/// The files of a fuzz target's corpus directory, in name order, for the
/// tests that replay a corpus on stable; panics (failing the test) if the
/// directory holds fewer than `at_least` seeds, so a lost corpus is noticed.
pub fn corpus_files(dir: &std::path::Path, at_least: usize) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("the seed corpus directory {}: {e}", dir.display()))
        .map(|entry| entry.expect("a readable directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(files.len() >= at_least, "{}: expected at least {at_least} seeds, found {}", dir.display(), files.len());
    files
}

/// A fresh, empty directory under the system temp dir for one test,
/// removed with what it holds when dropped, so that a run of the tests
/// leaves nothing behind (some write files of tens of MB). Derefs to its
/// path.
pub struct ScratchDir(tempfile::TempDir);

impl ScratchDir {
    /// A new directory whose name starts with `prefix`.
    pub fn new(prefix: &str) -> ScratchDir {
        ScratchDir(tempfile::Builder::new().prefix(prefix).tempdir().expect("a scratch directory"))
    }
}

impl std::ops::Deref for ScratchDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        self.0.path()
    }
}

impl AsRef<std::path::Path> for ScratchDir {
    fn as_ref(&self) -> &std::path::Path {
        self.0.path()
    }
}

/// A scratch directory for the fuzz drivers' files: one per `name`,
/// process and thread (the replay tests run seeds on several threads of one
/// process), emptied the first time this thread asks for it, and made again
/// if something outside removed it. Not created when `create` is false (a
/// driver that makes it itself).
pub fn scratch_dir(name: &str, create: bool) -> std::path::PathBuf {
    use std::cell::RefCell;
    use std::collections::HashSet;
    thread_local! {
        static EMPTIED: RefCell<HashSet<String>> = RefCell::new(HashSet::new());
    }
    let thread = format!("{:?}", std::thread::current().id()).replace(|c: char| !c.is_ascii_alphanumeric(), "");
    let dir = std::env::temp_dir().join(format!("meshbed-{name}-{}-{thread}", std::process::id()));
    if EMPTIED.with(|e| e.borrow_mut().insert(name.to_string())) {
        let _ = std::fs::remove_dir_all(&dir);
    }
    if create {
        std::fs::create_dir_all(&dir).expect("a scratch directory");
    }
    dir
}

/// Runs `engine`'s timer if it is due at `now` (the drivers' step after
/// time moves).
pub fn run_due_timer(engine: &mut dyn Engine, now: Instant) {
    if engine.poll_timeout().is_some_and(|t| t <= now) {
        engine.handle_timeout(now);
    }
}

/// Everything `engine` wants to send at `now`, parsed (a test panics on a
/// datagram the wire format rejects, or on an engine that never stops).
pub fn drain(engine: &mut impl Engine, now: Instant) -> Vec<(crate::wire::Repr, Vec<u8>)> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 2048];
    while let Some(t) = engine.poll_transmit(now, &mut buf) {
        let (repr, data) = crate::wire::parse_datagram(&buf[..t.len]).expect("engine emits valid datagrams");
        out.push((repr, data.to_vec()));
        assert!(out.len() < 10_000, "poll_transmit never returns None");
    }
    out
}

/// `ms` milliseconds after the start of virtual time.
pub fn at_ms(ms: u64) -> Instant {
    Instant::from_nanos(ms * 1_000_000)
}

/// `127.0.0.host:port`: peers for tests of a receiving endpoint, which tells
/// hosts (per-peer limits) and ports (connections) apart.
pub fn loopback_peer(host: u8, port: u16) -> std::net::SocketAddr {
    std::net::SocketAddr::from(([127, 0, 0, host], port))
}

/// A sender's datagram made by hand, for tests and tools that play a peer
/// (hostile or not) byte by byte: `control` flags, `seq`, then `payload`.
/// D_max is 1 ms so that an ATP receiver's feedback carries a usable rate.
pub fn sender_datagram(
    protocol: crate::wire::ProtocolId,
    control: u8,
    connection_id: u32,
    seq: u64,
    payload: &[u8],
) -> Vec<u8> {
    datagram(protocol, control, connection_id, seq, 0, payload)
}

/// Any datagram made by hand (a receiver's feedback or acknowledgement
/// too, forged or not): `control` flags, `seq`, `ack`, D_max 1 ms, then
/// `payload` (data, or a commit token).
pub fn datagram(
    protocol: crate::wire::ProtocolId,
    control: u8,
    connection_id: u32,
    seq: u64,
    ack: u64,
    payload: &[u8],
) -> Vec<u8> {
    let repr = crate::wire::Repr {
        protocol,
        control: crate::wire::Control(control),
        hop_count: 0,
        connection_id,
        seq,
        ack,
        d_max_us: 1000,
        d_s_us: 0,
        sack_blocks: Vec::new(),
        payload_len: payload.len(),
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf);
    buf[repr.header_len()..].copy_from_slice(payload);
    buf
}

/// Impairments of the toy channel, applied independently per datagram and
/// per direction.
#[derive(Clone, Debug)]
pub struct ToyChannel {
    /// One-way base delay.
    pub delay: Duration,
    /// Extra uniformly random delay in `[0, jitter)`; jitter reorders.
    pub jitter: Duration,
    /// Probability that a datagram is lost.
    pub loss: f64,
    /// Probability that a delivered datagram is delivered twice.
    pub duplicate: f64,
    /// Datagrams larger than this are dropped (a path MTU).
    pub max_datagram: usize,
}

impl Default for ToyChannel {
    fn default() -> Self {
        ToyChannel {
            delay: Duration::from_millis(5),
            jitter: Duration::ZERO,
            loss: 0.0,
            duplicate: 0.0,
            max_datagram: 1500,
        }
    }
}

/// Which side of the pair.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Side {
    A,
    B,
}

/// A datagram on the toy channel: (arrival time, sequence for FIFO among
/// equals, destination, bytes).
type InFlight = (Instant, u64, Side, Vec<u8>);

/// Two engines joined by a [`ToyChannel`]; `a` usually sends, `b` receives.
pub struct Pair<A: Engine, B: Engine> {
    pub a: A,
    pub b: B,
    pub channel: ToyChannel,
    pub now: Instant,
    rng: StreamRng,
    in_flight: BinaryHeap<Reverse<InFlight>>,
    seq: u64,
    pub events_a: Vec<EngineEvent>,
    pub events_b: Vec<EngineEvent>,
    buf: Vec<u8>,
}

impl<A: Engine, B: Engine> Pair<A, B> {
    pub fn new(a: A, b: B, channel: ToyChannel, seed: u64) -> Self {
        let buf = vec![0u8; channel.max_datagram.max(65_536)];
        Pair {
            a,
            b,
            channel,
            now: Instant::ZERO,
            rng: stream_rng(seed, StreamId::new(StreamKind::Experiment, 0)),
            in_flight: BinaryHeap::new(),
            seq: 0,
            events_a: Vec::new(),
            events_b: Vec::new(),
            buf,
        }
    }

    fn flush(&mut self, side: Side) {
        loop {
            let now = self.now;
            let t = match side {
                Side::A => self.a.poll_transmit(now, &mut self.buf),
                Side::B => self.b.poll_transmit(now, &mut self.buf),
            };
            let Some(t) = t else { break };
            let bytes = self.buf[..t.len].to_vec();
            let dest = if side == Side::A { Side::B } else { Side::A };
            if bytes.len() > self.channel.max_datagram || self.rng.gen_bool(self.channel.loss) {
                continue;
            }
            let copies = if self.rng.gen_bool(self.channel.duplicate) { 2 } else { 1 };
            for _ in 0..copies {
                let jitter = if self.channel.jitter.is_zero() {
                    0
                } else {
                    self.rng.gen_range(0..self.channel.jitter.as_nanos())
                };
                let at = self.now + self.channel.delay + Duration::from_nanos(jitter);
                self.seq += 1;
                self.in_flight.push(Reverse((at, self.seq, dest, bytes.clone())));
            }
        }
        match side {
            Side::A => self.events_a.extend(std::iter::from_fn(|| self.a.poll_event())),
            Side::B => self.events_b.extend(std::iter::from_fn(|| self.b.poll_event())),
        }
    }

    /// Advances to the next thing that happens (a delivery or a timer).
    /// Returns `false` when nothing is left to happen before `limit`.
    pub fn step(&mut self, limit: Instant) -> bool {
        self.flush(Side::A);
        self.flush(Side::B);
        let next_delivery = self.in_flight.peek().map(|Reverse((t, ..))| *t);
        let candidates = [next_delivery, self.a.poll_timeout(), self.b.poll_timeout()];
        let Some(next) = candidates.into_iter().flatten().min() else { return false };
        if next > limit {
            return false;
        }
        // Time never goes backwards, even if an engine asks for a past deadline.
        self.now = self.now.max(next);
        while let Some(Reverse((t, ..))) = self.in_flight.peek() {
            if *t > self.now {
                break;
            }
            let Reverse((_, _, dest, bytes)) = self.in_flight.pop().unwrap();
            match dest {
                Side::A => self.a.handle_input(self.now, &bytes),
                Side::B => self.b.handle_input(self.now, &bytes),
            }
        }
        if self.a.poll_timeout().is_some_and(|t| t <= self.now) {
            self.a.handle_timeout(self.now);
        }
        if self.b.poll_timeout().is_some_and(|t| t <= self.now) {
            self.b.handle_timeout(self.now);
        }
        true
    }

    /// Runs until both engines are closed or virtual time passes `limit`, or
    /// `max_steps` steps were taken (a guard against an engine that never
    /// advances its deadline). Returns whether both closed.
    pub fn run(&mut self, limit: Instant, max_steps: u64) -> bool {
        let mut steps = 0;
        while !(self.a.is_closed() && self.b.is_closed()) && steps < max_steps {
            if !self.step(limit) {
                break;
            }
            steps += 1;
        }
        self.flush(Side::A);
        self.flush(Side::B);
        self.a.is_closed() && self.b.is_closed()
    }
}

impl<A: Engine, B: Engine + crate::stream::ReceiveStream> Pair<A, B> {
    /// Runs until both engines are closed (or `limit`, or `max_steps`)
    /// while the application at `b` reads as data arrives, so that delivery
    /// order is observed; then a few more steps for the last exchanges.
    /// Returns everything `b` handed up, in order, and the steps taken.
    pub fn transfer(&mut self, limit: Instant, max_steps: u64) -> (Vec<u8>, u64) {
        let mut delivered = Vec::new();
        let mut steps = 0u64;
        while !(self.a.is_closed() && self.b.is_closed()) && steps < max_steps {
            if !self.step(limit) {
                break;
            }
            delivered.extend(self.b.take_delivered());
            steps += 1;
        }
        self.run(limit, 10);
        delivered.extend(self.b.take_delivered());
        (delivered, steps)
    }

    /// Moves `data` from `a` to `b` over the channel ([`Pair::transfer`]) and
    /// checks what every reliable transport must do: both ends closed, every
    /// byte handed up once and in order, the sender finished, the receiver
    /// finished exactly once, and both ends counting every byte. The error
    /// says which rule broke.
    pub fn transfer_exactly_once(&mut self, data: &[u8], limit: Instant, max_steps: u64) -> Result<(), String> {
        let (delivered, steps) = self.transfer(limit, max_steps);
        let len = data.len() as u64;
        let finished_b = self.events_b.iter().filter(|e| **e == EngineEvent::Finished).count();
        let checks = [
            (self.a.is_closed() && self.b.is_closed(), format!("not closed after {steps} steps")),
            (delivered.len() == data.len(), format!("{} bytes handed up of {}", delivered.len(), data.len())),
            (delivered == data, "delivered bytes differ from the data sent".into()),
            (self.events_a.contains(&EngineEvent::Finished), "sender did not finish".into()),
            (finished_b == 1, format!("receiver finished {finished_b} times")),
            (self.a.stats().bytes_delivered == len, format!("sender counts {} bytes", self.a.stats().bytes_delivered)),
            (
                self.b.stats().bytes_delivered == len,
                format!("receiver counts {} bytes", self.b.stats().bytes_delivered),
            ),
        ];
        match checks.into_iter().find(|(ok, _)| !ok) {
            Some((_, why)) => Err(why),
            None => Ok(()),
        }
    }
}
