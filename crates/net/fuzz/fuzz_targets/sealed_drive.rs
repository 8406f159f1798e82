//! What the `sealed_open` fuzz target does with one input; shared with
//! `tests/fuzz_corpus.rs`, which replays the seed corpus through it.
//!
//! The authenticated mode's open path (`recv --psk`, docs/PROTOCOLS.md §6)
//! under an attacker who has no key but sees every sealed datagram, as
//! anyone in radio range does. A `ReceiverCore` with a pre-shared key
//! (writing to a scratch directory) talks to one real sender holding the
//! same key, for the protocol byte 0 picks; the rest of the input is a
//! script of ops, each one byte `op` and a big-endian `u16`:
//!
//! * `op % 6 == 0`: `u16` bytes of the input as a datagram from peer
//!   `op / 6 % 4` (peer 0 is the real sender's address, spoofed);
//! * `op % 6 == 1`: time advances by `u16` ms;
//! * `op % 6 == 2`: the real sender and the receiver exchange sealed
//!   datagrams `u16 % 64` times; what either sends is captured;
//! * `op % 6 == 3`: captured datagram `u16` again, from peer `u16 >> 8`:
//!   a replay (and a sender's datagram is reflected at the sender too);
//! * `op % 6 == 4`: captured datagram `u16` with the byte the next `u16`
//!   picks xored with the byte after it, from peer 0;
//! * `op % 6 == 5`: a plain datagram forged for the real connection, `[control,
//!   seq (u32), payload…]` of `u16` bytes, from peer 0.
//!
//! Oracles besides "no panic":
//! - a captured datagram changed in any byte the seal covers (all but N_h
//!   and D_max, which relays rewrite) never opens, even for a fresh opener;
//! - no transfer but the real sender's ever starts, and it starts once:
//!   replayed SYNs and forgeries from any address start nothing;
//! - what the receiver sends to the real sender opens with the sender's key,
//!   or is a plain reset (a refusal of an unverifiable SYN); what it sends to
//!   anyone else is a plain reset;
//! - when the receiver is dropped the directory holds nothing, or exactly
//!   the real sender's file, byte for byte: no forged byte reaches a file.

#![allow(dead_code)]

use meshbed_core::{Duration, Instant};
use meshbed_net::auth::{Direction, Psk};
use meshbed_net::conn::{connection_id, EngineOptions, Protection};
use meshbed_net::framing::{SinkKind, StreamHeader};
use meshbed_net::recv::{DatagramList, ReceiveOptions, ReceiverCore};
use meshbed_proto::harness::sender_datagram;
use meshbed_proto::wire::{parse_datagram, Control, ProtocolId};
use meshbed_proto::Protocol;
use std::net::SocketAddr;
use std::path::PathBuf;

pub const FILE_LEN: usize = 5000;
pub const FILE_NAME: &str = "sealed.bin";
pub const SENDER_NUMBER: u32 = 0x5ea1;
/// Captured datagrams kept for replays and flips, at most.
const MAX_CAPTURED: usize = 512;
/// Where the seal's N_h (byte 3) and D_max (bytes 28–31) are: relays
/// rewrite them, so the seal leaves them out.
const UNSEALED_BYTES: [usize; 5] = [3, 28, 29, 30, 31];

fn key() -> Psk {
    let bytes: Vec<u8> =
        (0u32..32).map(|i| (i.wrapping_mul(0x9e37_79b9) >> 24) as u8 ^ (i as u8).wrapping_mul(37)).collect();
    Psk::from_bytes(&bytes).expect("a key of 32 distinct-looking bytes")
}

/// The file the real sender sends.
pub fn file_data() -> Vec<u8> {
    (0..FILE_LEN).map(|i| (i * 13 + 5) as u8).collect()
}

fn scratch() -> PathBuf {
    meshbed_proto::harness::scratch_dir("sealed-fuzz", true)
}

/// Removes this thread's scratch directory (the replay test, when done).
pub fn remove_scratch() {
    let _ = std::fs::remove_dir_all(scratch());
}

fn peer(k: usize) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1 + (k % 4) as u8], 4000 + (k % 4) as u16))
}

/// What one input did, for the replay test.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The real sender's file was committed, intact.
    pub committed: bool,
    /// Datagrams the receiver could not authenticate.
    pub unauthenticated: u64,
}

/// Runs one input.
pub fn drive(data: &[u8]) -> Outcome {
    let dir = scratch();
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    for entry in std::fs::read_dir(&dir).expect("scratch readable").flatten() {
        let _ = std::fs::remove_file(entry.path());
    }
    let Some((&selector, mut rest)) = data.split_first() else {
        return Outcome::default();
    };
    let psk = key();
    let mut options = ReceiveOptions::new(peer(0), SinkKind::Directory { dir: dir.clone(), overwrite: false });
    options.psk = Some(psk.clone());
    options.max_connections = 4;
    options.max_connections_per_peer = 2;
    options.timeout = std::time::Duration::from_secs(3);
    options.linger = std::time::Duration::from_secs(1);
    let mut core = ReceiverCore::new(options);

    let protocol = Protocol::ALL[usize::from(selector) % Protocol::ALL.len()];
    let wire = if protocol.is_atp() { ProtocolId::Atp } else { ProtocolId::Tcp };
    let engine_options = EngineOptions {
        timeout: Duration::from_secs(3),
        linger: Duration::from_secs(2),
        atp_min_delay: None,
        datagram_overhead: meshbed_net::auth::OVERHEAD,
        trace: false,
        tcp_tuning: Default::default(),
        end_to_end_delay: false,
    };
    let mut now = Instant::from_nanos(1_000_000);
    let id = connection_id(protocol, SENDER_NUMBER);
    let mut sender = engine_options.sender(protocol, id, now);
    let mut seal = Protection::new(Some(&psk), id, Direction::ToReceiver).expect("random salt");
    let data_bytes = file_data();
    {
        let engine = sender.engine();
        let mut stream = StreamHeader::for_data(FILE_NAME, &data_bytes).expect("a valid name").encode();
        stream.extend_from_slice(&data_bytes);
        assert_eq!(engine.write(&stream), stream.len());
        engine.finish();
        engine.require_commit_token(StreamHeader::for_data(FILE_NAME, &data_bytes).expect("a valid name").sha256);
    }

    let mut captured: Vec<(Direction, Vec<u8>)> = Vec::new();
    let mut to_sender: Vec<Vec<u8>> = Vec::new();
    let mut buf = vec![0u8; 2048];
    let mut ops = 0;
    while rest.len() >= 3 && ops < 512 {
        ops += 1;
        let op = rest[0];
        let arg = usize::from(u16::from_be_bytes([rest[1], rest[2]]));
        rest = &rest[3..];
        let take = |rest: &mut &[u8], n: usize| {
            let n = n.min(rest.len());
            let (bytes, tail) = rest.split_at(n);
            *rest = tail;
            bytes.to_vec()
        };
        match op % 6 {
            0 => {
                let bytes = take(&mut rest, arg);
                core.handle_datagram(now, peer(usize::from(op / 6)), &bytes, false);
            }
            1 => {
                now += Duration::from_millis(arg as u64);
                meshbed_proto::harness::run_due_timer(sender.engine(), now);
            }
            2 => {
                for _ in 0..arg % 64 {
                    let engine = sender.engine();
                    for mut d in to_sender.drain(..) {
                        if let Ok(plain) = seal.open(&mut d) {
                            engine.handle_input(now, plain);
                        }
                    }
                    meshbed_proto::harness::run_due_timer(engine, now);
                    let mut sent = 0;
                    while let Some(t) = engine.poll_transmit(now, &mut buf) {
                        let len = seal.seal(&mut buf, t.len).expect("room for the seal");
                        let datagram = buf[..len].to_vec();
                        core.handle_datagram(now, peer(0), &datagram, false);
                        if captured.len() < MAX_CAPTURED {
                            captured.push((Direction::ToReceiver, datagram));
                        }
                        sent += 1;
                        if sent > 256 {
                            break;
                        }
                    }
                    while engine.poll_event().is_some() {}
                    exchange(&mut core, now, id, &mut to_sender, &mut captured);
                    if let Some(t) = sender.engine_ref().poll_timeout() {
                        now = now.max(t);
                    }
                }
            }
            3 if !captured.is_empty() => {
                let (direction, d) = captured[arg % captured.len()].clone();
                if direction == Direction::ToReceiver {
                    // Reflected at the sender: each direction has its own
                    // key, so the sender's own datagram never opens there.
                    let mut copy = d.clone();
                    assert!(
                        psk.opener(id, Direction::ToSender).open(&mut copy).is_err(),
                        "a sender's datagram reflected at it opens"
                    );
                    to_sender.push(d.clone());
                }
                core.handle_datagram(now, peer(arg >> 8), &d, false);
            }
            4 if !captured.is_empty() && rest.len() >= 3 => {
                let mut d = captured[arg % captured.len()].1.clone();
                let at = usize::from(u16::from_be_bytes([rest[0], rest[1]])) % d.len();
                let flip = rest[2].max(1);
                rest = &rest[3..];
                d[at] ^= flip;
                if !UNSEALED_BYTES.contains(&at) {
                    // Either direction's fresh opener: the datagram is the
                    // sender's or the receiver's.
                    for direction in [Direction::ToReceiver, Direction::ToSender] {
                        let mut copy = d.clone();
                        let opened = psk.opener(id, direction).open(&mut copy);
                        assert!(opened.is_err(), "byte {at} changed by {flip:#04x} and the seal still opens");
                    }
                }
                core.handle_datagram(now, peer(0), &d, false);
            }
            5 => {
                let bytes = take(&mut rest, arg);
                if bytes.len() >= 5 {
                    let seq = u64::from(u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]));
                    let forged = sender_datagram(wire, bytes[0], id, seq, &bytes[5..]);
                    core.handle_datagram(now, peer(0), &forged, false);
                }
            }
            _ => {}
        }
        exchange(&mut core, now, id, &mut to_sender, &mut captured);
    }
    let c = core.counters();
    let unauthenticated = c.unauthenticated;
    drop(core);
    // No forged byte in a file: nothing, or the real file exactly.
    let mut committed = false;
    for entry in std::fs::read_dir(&dir).expect("scratch readable").flatten() {
        let name = entry.file_name().into_string().unwrap_or_default();
        assert_eq!(name, FILE_NAME, "a file the real sender did not send");
        assert!(std::fs::read(entry.path()).expect("readable") == data_bytes, "the committed file differs");
        committed = true;
        let _ = std::fs::remove_file(entry.path());
    }
    Outcome { committed, unauthenticated }
}

/// Polls the receiver and checks what it sends; the real sender's datagrams
/// are queued for it and captured.
fn exchange(
    core: &mut ReceiverCore,
    now: Instant,
    id: u32,
    to_sender: &mut Vec<Vec<u8>>,
    captured: &mut Vec<(Direction, Vec<u8>)>,
) {
    core.poll(now, &mut |_| {});
    let mut out = DatagramList::default();
    let mut rounds = 0;
    while !core.poll_transmit(now, &mut out) {
        rounds += 1;
        assert!(rounds < 1000, "poll_transmit never finishes");
    }
    let c = core.counters();
    let (active, _) = core.transfers();
    let started = c.transfers_completed + c.transfers_failed + active as u64;
    assert!(started <= 1, "{started} transfers started; only the real sender has the key: {c:?}");
    for (to, datagram) in out.datagrams {
        // Sealed by the receiver for the real connection (a fresh opener
        // with the key for its direction opens it), or a plain refusal.
        let mut opened = datagram.clone();
        let sealed = key().opener(id, Direction::ToSender).open(&mut opened).map(|n| opened[..n].to_vec());
        let (plain, is_sealed) = match &sealed {
            Ok(plain) => (plain.as_slice(), true),
            Err(_) => (datagram.as_slice(), false),
        };
        let repr = match parse_datagram(plain) {
            Ok((repr, _)) => repr,
            Err(e) => panic!("the receiver sent a malformed datagram (sealed: {is_sealed}): {e}"),
        };
        if is_sealed {
            assert!(
                to == peer(0) && repr.connection_id == id,
                "a sealed datagram for {to}, connection {:#x}",
                repr.connection_id
            );
        } else {
            assert!(
                repr.control.contains(Control::RST),
                "the receiver sent {to} a plain datagram that is not a refusal: {repr:?}"
            );
        }
        if to == peer(0) && repr.connection_id == id {
            if to_sender.len() < 4096 {
                to_sender.push(datagram.clone());
            }
            if captured.len() < MAX_CAPTURED {
                captured.push((Direction::ToSender, datagram));
            }
        }
    }
}
