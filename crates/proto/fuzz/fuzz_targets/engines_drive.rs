//! What the `engines` fuzz target does with one input; shared with
//! `tests/fuzz_corpus.rs`, which replays the seed corpus through it.
//!
//! Byte 0 picks the protocol (`Protocol::ALL[b % ALL.len()]`, so a new
//! protocol gets fuzzed without a change here) and byte 1 the options:
//! bit 0 a streaming sender (an 8 KiB window the application
//! refills) instead of one holding the whole transfer, bit 1 the commit
//! confirmation (the receiver holds the FIN's acknowledgement until it has
//! every byte, the sender requires the token), bit 2 small receive and
//! reorder buffers, bit 3 traces on, bit 4 a reader that starts stalled.
//! The engines come from proto's own constructors ([`EngineConfig::new`],
//! [`SenderEngine`], [`ReceiverEngine`]), as the simulator builds them.
//!
//! 1. The rest of the input is one datagram into a fresh sender and a fresh
//!    receiver of that protocol.
//! 2. It is also a script for a sender/receiver pair: each op is one byte
//!    `op` followed by a big-endian `u16` and, for the datagram ops, that
//!    many bytes:
//!    * `op % 10 == 0`: the bytes into the receiver (hostile);
//!    * `1`: the bytes into the sender (hostile);
//!    * `2`: time advances by `u16 · 100 us`; due timers run;
//!    * `3`: the bytes stamped at a relay, then into the receiver (hostile);
//!    * `4`: the next 16 datagrams on the channel are lost where the `u16`
//!      has a bit set (honest);
//!    * `5`: likewise duplicated (honest);
//!    * `6`: the next `u16 % 8` exchanges deliver in reverse order (honest);
//!    * `7`: a well-formed datagram of the protocol's family made from the
//!      bytes, `[control, seq (u32), ack (u32), payload…]`, into the
//!      receiver (`op / 10` even) or the sender (hostile);
//!    * `8`: routing tells a side (`op / 10` even: the sender) that the
//!      route failed or came back, or the path's quality (honest);
//!    * `9`: the reader stalls or reads `u16` bytes at a time (honest).
//!
//!    After every op the two engines exchange what they want to send (the
//!    sender's datagrams through a relay), with the channel's losses,
//!    duplicates and reordering.
//!
//! Oracles besides "no panic": everything an engine emits parses
//! (`wire::parse_datagram`) and fits the buffer; a deadline that is due
//! moves on after `handle_timeout`; and while no hostile op ran, what the
//! receiver hands up is a prefix of the data, all of it once both sides
//! say `Finished` — every byte exactly once, in order.

#![allow(dead_code)]

use meshbed_core::{Duration, Instant};
use meshbed_proto::connection::{connection_id, wire_id, EngineConfig, ReceiverEngine, SenderEngine};
use meshbed_proto::harness::datagram;
use meshbed_proto::relay::Relay;
use meshbed_proto::tcp::TcpConfig;
use meshbed_proto::wire;
use meshbed_proto::{Engine, EngineEvent, PathInfo, Protocol, RouteNotice};

/// The transfer's length: about 14 full segments.
pub const DATA_LEN: usize = 20_000;
/// The connection number (the protocol goes in the top bits).
pub const CONN_NUMBER: u32 = 0x0102_0304;
/// The streaming sender's window.
const STREAM_WINDOW: usize = 8 << 10;
/// The small buffers of option bit 2.
const SMALL_RECEIVE_BUFFER: u64 = 4 << 10;
const SMALL_REORDER_LIMIT: u64 = 8 << 10;
const COMMIT_TOKEN: [u8; 32] = [0xc7; 32];
const MAX_OPS: usize = 512;

/// The byte at `offset` of the transfer.
pub fn data_byte(offset: usize) -> u8 {
    (offset.wrapping_mul(7).wrapping_add(offset >> 8) % 251) as u8
}

/// What one input did, for the replay test.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub protocol: Option<Protocol>,
    /// Bytes the receiver handed up.
    pub delivered: usize,
    /// Both sides reported `Finished`.
    pub finished: bool,
    /// A side reported `Failed`.
    pub failed: bool,
    /// Some op fed the engines something no honest peer sends.
    pub hostile: bool,
}

/// The two selector bytes for `protocol` with `options` (the bits above).
pub fn selector(protocol: Protocol, options: u8) -> [u8; 2] {
    let index = Protocol::ALL.iter().position(|&p| p == protocol).expect("listed") as u8;
    [index, options]
}

struct Options {
    streaming: bool,
    commit: bool,
    small_buffers: bool,
    trace: bool,
    stalled: bool,
}

fn config(protocol: Protocol, trace: bool) -> EngineConfig {
    let mut config = EngineConfig::new(
        protocol,
        |mut c| {
            c.trace = trace;
            c
        },
        TcpConfig::default,
    );
    if let EngineConfig::Mtl(c) = &mut config {
        c.trace = trace;
    }
    config
}

/// Impairments an honest channel may have; they change the order and count
/// of datagrams, never their bytes.
#[derive(Default)]
struct Channel {
    loss: u16,
    duplicate: u16,
    reversed_exchanges: u16,
}

fn take_bit(mask: &mut u16) -> bool {
    let bit = *mask & 1 != 0;
    *mask >>= 1;
    bit
}

/// Everything `from` wants to send now, checked to parse.
fn transmits(now: Instant, from: &mut dyn Engine, buf: &mut [u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(t) = from.poll_transmit(now, buf) {
        assert!(t.len <= buf.len(), "a transmit longer than its buffer");
        if let Err(e) = wire::parse_datagram(&buf[..t.len]) {
            panic!("an engine emitted a malformed datagram: {e}");
        }
        out.push(buf[..t.len].to_vec());
        if out.len() >= 256 {
            break;
        }
    }
    out
}

/// Runs `engine`'s due timers; a due deadline must move on once it ran
/// and what it wanted to send was taken.
fn run_timers(now: Instant, engine: &mut dyn Engine, out: &mut Vec<Vec<u8>>, buf: &mut [u8]) {
    let mut rounds = 0;
    while engine.poll_timeout().is_some_and(|t| t <= now) {
        rounds += 1;
        assert!(rounds <= 64, "the deadline {:?} stays due at {now:?} after handle_timeout", engine.poll_timeout());
        engine.handle_timeout(now);
        out.extend(transmits(now, engine, buf));
    }
}

struct Session {
    protocol: Protocol,
    options: Options,
    sender: SenderEngine,
    receiver: ReceiverEngine,
    relay: Relay,
    channel: Channel,
    now: Instant,
    /// Bytes the streaming application has written so far.
    written: usize,
    delivered: Vec<u8>,
    read_chunk: usize,
    sender_finished: bool,
    receiver_finished: usize,
    failed: bool,
    token_given: bool,
    hostile: bool,
    buf: Vec<u8>,
}

impl Session {
    fn new(protocol: Protocol, options: Options) -> Session {
        let now = Instant::ZERO;
        let config = config(protocol, options.trace);
        let id = connection_id(protocol, CONN_NUMBER);
        let data: Vec<u8> = (0..DATA_LEN).map(data_byte).collect();
        let mut sender = if options.streaming {
            SenderEngine::streaming(&config, id, STREAM_WINDOW, now)
        } else {
            SenderEngine::with_data(&config, id, data, now)
        };
        let mut receiver = ReceiverEngine::new(&config, id, now);
        if options.commit {
            sender.engine().require_commit_token(COMMIT_TOKEN);
            receiver.engine().hold_fin_ack_for_commit();
        }
        if options.small_buffers {
            receiver.set_receive_buffer(SMALL_RECEIVE_BUFFER);
            receiver.set_reorder_limit(SMALL_REORDER_LIMIT);
        }
        let relay_config = match &config {
            EngineConfig::Atp(c) => c.relay_config(),
            _ => meshbed_proto::atp::AtpConfig::default().relay_config(),
        };
        let read_chunk = if options.stalled { 0 } else { 1 << 16 };
        let mut s = Session {
            protocol,
            options,
            sender,
            receiver,
            relay: Relay::new(relay_config),
            channel: Channel::default(),
            now,
            written: 0,
            delivered: Vec::new(),
            read_chunk,
            sender_finished: false,
            receiver_finished: 0,
            failed: false,
            token_given: false,
            hostile: false,
            buf: vec![0u8; 65_536],
        };
        s.written = if s.options.streaming { 0 } else { DATA_LEN };
        s.refill();
        s
    }

    /// The streaming application writes what the window takes, and
    /// finishes the stream after the last byte.
    fn refill(&mut self) {
        if !self.options.streaming || self.written == DATA_LEN {
            return;
        }
        let engine = self.sender.engine();
        let room = engine.write_room().min(DATA_LEN - self.written);
        let chunk: Vec<u8> = (self.written..self.written + room).map(data_byte).collect();
        let took = engine.write(&chunk);
        assert!(took <= chunk.len());
        self.written += took;
        if self.written == DATA_LEN {
            engine.finish();
        }
    }

    /// The receiving application reads; with the commit confirmation it
    /// gives the token once it holds every byte.
    fn read(&mut self) {
        if self.read_chunk > 0 {
            let mut out = vec![0u8; self.read_chunk.min(1 << 16)];
            loop {
                let n = self.receiver.engine().read(&mut out);
                if n == 0 {
                    break;
                }
                self.delivered.extend_from_slice(&out[..n]);
            }
        }
        if !self.hostile {
            let ok =
                self.delivered.len() <= DATA_LEN && self.delivered.iter().enumerate().all(|(i, &b)| b == data_byte(i));
            assert!(ok, "{}: the receiver handed up bytes that are not the data's prefix", self.protocol);
        }
        if self.options.commit && !self.token_given && self.delivered.len() == DATA_LEN {
            self.receiver.engine().set_commit_token(COMMIT_TOKEN);
            self.token_given = true;
        }
    }

    fn events(&mut self) {
        while let Some(e) = self.sender.engine_mut().poll_event() {
            match e {
                EngineEvent::Finished => self.sender_finished = true,
                EngineEvent::Failed(_) => self.failed = true,
                _ => {}
            }
        }
        while let Some(e) = self.receiver.engine_mut().poll_event() {
            match e {
                EngineEvent::Finished => self.receiver_finished += 1,
                EngineEvent::Failed(_) => self.failed = true,
                _ => {}
            }
        }
    }

    /// Datagrams in flight to one side, through the channel's impairments.
    fn deliver(&mut self, mut datagrams: Vec<Vec<u8>>, to_receiver: bool) {
        if self.channel.reversed_exchanges > 0 {
            datagrams.reverse();
        }
        for mut d in datagrams {
            if take_bit(&mut self.channel.loss) {
                continue;
            }
            let copies = if take_bit(&mut self.channel.duplicate) { 2 } else { 1 };
            if to_receiver {
                self.relay.stamp(self.now, &mut d).expect("an emitted datagram stamps");
                self.relay.on_tx_report(self.now, self.now, Some(self.now));
            }
            for _ in 0..copies {
                if to_receiver {
                    self.receiver.engine_mut().handle_input(self.now, &d);
                } else {
                    self.sender.engine_mut().handle_input(self.now, &d);
                }
            }
        }
    }

    /// One round: the sender's datagrams to the receiver, the receiver's
    /// back, the applications read and write.
    fn exchange(&mut self, mut to_receiver: Vec<Vec<u8>>, mut to_sender: Vec<Vec<u8>>) {
        for _ in 0..2 {
            to_receiver.extend(transmits(self.now, self.sender.engine_mut(), &mut self.buf));
            self.deliver(std::mem::take(&mut to_receiver), true);
            self.read();
            to_sender.extend(transmits(self.now, self.receiver.engine_mut(), &mut self.buf));
            self.deliver(std::mem::take(&mut to_sender), false);
            self.refill();
            self.events();
        }
        self.channel.reversed_exchanges = self.channel.reversed_exchanges.saturating_sub(1);
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        let (mut to_receiver, mut to_sender) = (Vec::new(), Vec::new());
        run_timers(self.now, self.sender.engine_mut(), &mut to_receiver, &mut self.buf);
        run_timers(self.now, self.receiver.engine_mut(), &mut to_sender, &mut self.buf);
        self.exchange(to_receiver, to_sender);
    }

    fn outcome(&mut self) -> Outcome {
        // The application reads what is left, even a stalled one.
        self.read_chunk = 1 << 16;
        self.read();
        let finished = self.sender_finished && self.receiver_finished > 0;
        if finished && !self.hostile {
            assert_eq!(self.delivered.len(), DATA_LEN, "{}: finished without every byte", self.protocol);
            assert_eq!(self.receiver_finished, 1, "{}: the receiver finished more than once", self.protocol);
        }
        Outcome {
            protocol: Some(self.protocol),
            delivered: self.delivered.len(),
            finished,
            failed: self.failed,
            hostile: self.hostile,
        }
    }
}

/// Runs one input.
pub fn drive(data: &[u8]) -> Outcome {
    let [index, bits, ref rest @ ..] = *data else {
        return Outcome::default();
    };
    let mut rest = rest;
    let protocol = Protocol::ALL[usize::from(index) % Protocol::ALL.len()];
    let options = || Options {
        streaming: bits & 1 != 0,
        commit: bits & 2 != 0,
        small_buffers: bits & 4 != 0,
        trace: bits & 8 != 0,
        stalled: bits & 16 != 0,
    };

    // 1. The rest as one datagram into fresh engines.
    {
        let now = Instant::from_nanos(1_000_000);
        let config = config(protocol, options().trace);
        let id = connection_id(protocol, CONN_NUMBER);
        let mut buf = vec![0u8; 65_536];
        let mut r = ReceiverEngine::new(&config, id, now);
        r.engine_mut().handle_input(now, rest);
        let mut s = SenderEngine::with_data(&config, id, vec![0xa5; 5_000], now);
        s.engine_mut().handle_input(now, rest);
        transmits(now, r.engine_mut(), &mut buf);
        transmits(now, s.engine_mut(), &mut buf);
    }

    // 2. The rest as a script.
    let mut s = Session::new(protocol, options());
    s.exchange(Vec::new(), Vec::new());
    let mut ops = 0;
    while rest.len() >= 3 && ops < MAX_OPS {
        ops += 1;
        let op = rest[0];
        let arg = u16::from_be_bytes([rest[1], rest[2]]);
        rest = &rest[3..];
        let mut take = || {
            let n = usize::from(arg).min(rest.len());
            let (bytes, tail) = rest.split_at(n);
            rest = tail;
            bytes.to_vec()
        };
        let now = s.now;
        match op % 10 {
            0 | 1 | 3 | 7 => {
                let mut bytes = take();
                s.hostile = true;
                if op % 10 == 7 {
                    bytes = forged(protocol, &bytes);
                }
                let to_sender = op % 10 == 1 || (op % 10 == 7 && (op / 10) % 2 == 1);
                if op % 10 == 3 {
                    let _ = s.relay.stamp(now, &mut bytes);
                }
                if to_sender {
                    s.sender.engine_mut().handle_input(now, &bytes);
                } else {
                    s.receiver.engine_mut().handle_input(now, &bytes);
                }
                s.exchange(Vec::new(), Vec::new());
            }
            2 => s.advance(Duration::from_micros(u64::from(arg) * 100)),
            4 => s.channel.loss = arg,
            5 => s.channel.duplicate = arg,
            6 => s.channel.reversed_exchanges = arg % 8,
            8 => {
                let side: &mut dyn Engine =
                    if (op / 10) % 2 == 0 { s.sender.engine_mut() } else { s.receiver.engine_mut() };
                match arg % 3 {
                    0 => side.handle_route_notice(now, RouteNotice::Failed),
                    1 => side.handle_route_notice(now, RouteNotice::Reestablished),
                    _ => side.handle_path_info(now, path_info(arg)),
                }
                s.exchange(Vec::new(), Vec::new());
            }
            _ => {
                s.read_chunk = usize::from(arg);
                s.exchange(Vec::new(), Vec::new());
            }
        }
    }
    s.outcome()
}

/// A datagram of `protocol`'s family from `[control, seq (u32), ack (u32),
/// payload…]`, for the script's connection.
fn forged(protocol: Protocol, bytes: &[u8]) -> Vec<u8> {
    let byte = |i: usize| bytes.get(i).copied().unwrap_or(0);
    let word = |at: usize| u64::from(u32::from_be_bytes([byte(at), byte(at + 1), byte(at + 2), byte(at + 3)]));
    let payload = bytes.get(9..).unwrap_or(&[]);
    datagram(wire_id(protocol), byte(0), connection_id(protocol, CONN_NUMBER), word(1), word(5), payload)
}

/// A path as routing reports one: 1 to 16 hops, a loss probability in
/// [0, 0.99), a rate of 1 to 54 Mbit/s.
fn path_info(arg: u16) -> PathInfo {
    PathInfo {
        hop_count: 1 + u32::from(arg >> 2) % 16,
        max_link_loss: f64::from((arg >> 6) % 100) / 101.0,
        link_rate_bps: [1_000_000, 2_000_000, 11_000_000, 54_000_000][usize::from(arg >> 13) % 4],
    }
}
