//! What the `recv_datagrams` fuzz target does with one input; shared with
//! `tests/fuzz_corpus.rs`, which replays the seed corpus through it.
//!
//! 1. The whole input is a stream: it goes through `StreamHeader::decode`,
//!    then into a `Sink` writing to a scratch directory, in pieces whose
//!    sizes the input's first byte picks.
//! 2. The input is also a script for a `ReceiverCore` (no socket, no clock)
//!    writing to the scratch directory with small limits (3 transfers, 2 per
//!    address, 2 lingering, 8 KiB of out-of-order bytes per transfer and
//!    12 KiB in all), so that eviction, refusal and the reorder caps are
//!    reached. Byte 0 picks the options and the sender's protocol; then each
//!    op is one byte `op` followed by a big-endian `u16` and, for the
//!    datagram ops, that many bytes:
//!    * `op % 5 == 0`: the bytes as a datagram from peer `op / 5 % 4`;
//!    * `op % 5 == 1`: time advances by `u16` ms;
//!    * `op % 5 == 2`: a sender datagram made from the bytes: `[control,
//!      k, seq (u32), payload…]`, for the connection id of protocol `k % 6`
//!      and number `k`, from peer `k % 4`;
//!    * `op % 5 == 3`: the real sender (peer 0, a valid 3000-byte file)
//!      and the receiver exchange datagrams `u16 % 64` times;
//!    * `op % 5 == 4`: the bytes as a datagram that arrived truncated.
//!
//!    After every op the receiver polls and transmits.
//!
//! Oracles besides "no panic": everything the receiver sends parses and goes
//! to an address that sent something; at most 3 transfers run and 2 linger;
//! the out-of-order charge stays within 12 KiB; after the receiver is
//! dropped no temporary file is left.

#![allow(dead_code)]

use meshbed_core::{Duration, Instant};
use meshbed_net::conn::{connection_id, EngineOptions};
use meshbed_net::framing::{is_temporary_name, Sink, SinkKind, StreamHeader};
use meshbed_net::recv::{DatagramList, ReceiveOptions, ReceiverCore, ReceiverEvent};
use meshbed_net::send::AddressProof;
use meshbed_proto::harness::sender_datagram;
use meshbed_proto::wire::{parse_datagram, ProtocolId};
use meshbed_proto::{EngineEvent, Protocol};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The file the script's real sender sends, and its name.
pub const SEED_FILE_LEN: usize = 3000;
pub const SEED_FILE_NAME: &str = "seed.bin";
/// The connection number of the script's real sender.
pub const SENDER_NUMBER: u32 = 0x5eed;

/// Room the engine may fill in the 2048-byte buffer: the rest is for the
/// Retry token a SYN may carry.
const MAX_ENGINE_DATAGRAM: usize = 2048 - meshbed_proto::wire::RETRY_TOKEN_LEN;

pub const MAX_ACTIVE: usize = 3;
pub const MAX_LINGERING: usize = 2;
pub const REORDER_PER_CONNECTION: u64 = 8 << 10;
pub const REORDER_TOTAL: u64 = 12 << 10;

/// A scratch directory for this thread (the replay test runs seeds on
/// several threads of one process).
fn scratch() -> PathBuf {
    meshbed_proto::harness::scratch_dir("net-fuzz", true)
}

/// Removes this thread's scratch directory (the replay test, when done).
pub fn remove_scratch() {
    let _ = std::fs::remove_dir_all(scratch());
}

/// Empties the scratch directory, checking that no temporary file is left.
fn clean_scratch(dir: &Path) {
    for entry in std::fs::read_dir(dir).expect("scratch readable") {
        let entry = entry.expect("entry");
        let name = entry.file_name().into_string().unwrap_or_default();
        assert!(!is_temporary_name(&name), "a temporary file outlived its receiver: {name}");
        let _ = std::fs::remove_file(entry.path());
    }
}

fn peer(k: usize) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1 + (k % 4) as u8], 4000 + k as u16))
}

/// The file the real sender sends, framed.
pub fn seed_stream() -> Vec<u8> {
    let data: Vec<u8> = (0..SEED_FILE_LEN).map(|i| (i * 7 + 3) as u8).collect();
    let mut stream =
        meshbed_net::framing::StreamHeader::for_data(SEED_FILE_NAME, &data).expect("a valid name").encode();
    stream.extend_from_slice(&data);
    stream
}

/// Runs one input; returns how many transfers the script's receiver completed.
pub fn drive(data: &[u8]) -> u64 {
    let scratch = scratch();
    // Recreated if something outside removed it (a tmp cleaner, another
    // process): the harness's own precondition, not the receiver's.
    std::fs::create_dir_all(&scratch).expect("a scratch directory");
    let dir = scratch.as_path();
    let selector = data.first().copied().unwrap_or(0);

    // 1. The input as a stream.
    let _ = StreamHeader::decode(data);
    {
        let mut sink = Sink::new(SinkKind::Directory { dir: dir.to_path_buf(), overwrite: selector & 1 != 0 });
        let piece = 1 + usize::from(selector >> 1);
        for chunk in data.chunks(piece) {
            if sink.write(chunk).is_err() {
                break;
            }
        }
        let _ = sink.finish();
    }
    clean_scratch(dir);

    // 2. The input as a script.
    let Some((&selector, mut rest)) = data.split_first() else {
        return 0;
    };
    let mut options =
        ReceiveOptions::new(peer(0), SinkKind::Directory { dir: dir.to_path_buf(), overwrite: selector & 1 != 0 });
    options.max_connections = MAX_ACTIVE;
    options.max_connections_per_peer = 2;
    options.max_lingering = MAX_LINGERING;
    options.stalled_after = std::time::Duration::from_millis(500);
    options.timeout = std::time::Duration::from_secs(2);
    options.linger = std::time::Duration::from_secs(1);
    options.max_reorder_bytes_per_connection = REORDER_PER_CONNECTION;
    options.max_reorder_bytes = REORDER_TOTAL;
    options.reset_unknown = selector & 2 == 0;
    // Address validation (selector bit 7): the raw datagrams' SYNs then
    // draw Retries, and the real sender answers them as `meshbed send`
    // does (`AddressProof`); off, raw SYNs open transfers and reach the
    // deep states.
    options.validate_addresses = selector & 0x80 != 0;
    let mut core = ReceiverCore::new(options);
    let protocol = Protocol::ALL[usize::from(selector >> 2) % Protocol::ALL.len()];
    let engine_options = EngineOptions {
        timeout: Duration::from_secs(2),
        linger: Duration::from_secs(2),
        atp_min_delay: None,
        datagram_overhead: 0,
        trace: false,
        tcp_tuning: Default::default(),
        end_to_end_delay: false,
    };
    let mut now = Instant::from_nanos(1_000_000);
    let sender_id = connection_id(protocol, SENDER_NUMBER);
    let mut sender = engine_options.sender(protocol, sender_id, now);
    {
        // The whole (small) stream fits the window; success needs the
        // receiver's commit confirmation, as in `meshbed send`.
        let engine = sender.engine();
        let stream = seed_stream();
        assert_eq!(engine.write(&stream), stream.len());
        engine.finish();
        let data: Vec<u8> = (0..SEED_FILE_LEN).map(|i| (i * 7 + 3) as u8).collect();
        engine.require_commit_token(StreamHeader::for_data(SEED_FILE_NAME, &data).expect("a valid name").sha256);
    }
    let mut sender_inbox: Vec<Vec<u8>> = Vec::new();
    let mut proof = AddressProof::default();
    let mut connected = false;
    let mut heard_from: Vec<SocketAddr> = Vec::new();
    let mut completed = 0;
    let mut buf = vec![0u8; 2048];
    let mut ops = 0;
    while rest.len() >= 3 && ops < 1024 {
        ops += 1;
        let op = rest[0];
        let arg = usize::from(u16::from_be_bytes([rest[1], rest[2]]));
        rest = &rest[3..];
        let take = |rest: &mut &[u8]| {
            let n = arg.min(rest.len());
            let (bytes, tail) = rest.split_at(n);
            *rest = tail;
            bytes.to_vec()
        };
        match op % 5 {
            0 => {
                let bytes = take(&mut rest);
                let from = peer(usize::from(op / 5));
                heard_from.push(from);
                core.handle_datagram(now, from, &bytes, false);
            }
            1 => {
                now += Duration::from_millis(arg as u64);
                meshbed_proto::harness::run_due_timer(sender.engine(), now);
            }
            2 => {
                let bytes = take(&mut rest);
                if bytes.len() >= 6 {
                    let (control, k) = (bytes[0], usize::from(bytes[1]));
                    let seq = u64::from(u32::from_be_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]));
                    let protocol = Protocol::ALL[k % Protocol::ALL.len()];
                    let wire = if protocol.is_atp() { ProtocolId::Atp } else { ProtocolId::Tcp };
                    let id = connection_id(protocol, k as u32);
                    let from = peer(k);
                    heard_from.push(from);
                    core.handle_datagram(now, from, &sender_datagram(wire, control, id, seq, &bytes[6..]), false);
                }
            }
            3 => {
                for _ in 0..arg % 64 {
                    let engine = sender.engine();
                    for d in sender_inbox.drain(..) {
                        if !proof.on_received(&d, sender_id, connected) {
                            engine.handle_input(now, &d);
                        }
                    }
                    meshbed_proto::harness::run_due_timer(engine, now);
                    heard_from.push(peer(0));
                    if let Some(len) = proof.poll_resend(&mut buf) {
                        core.handle_datagram(now, peer(0), &buf[..len], false);
                    }
                    let mut sent = 0;
                    while let Some(t) = engine.poll_transmit(now, &mut buf[..MAX_ENGINE_DATAGRAM]) {
                        let len = proof.on_transmit(&mut buf, t.len);
                        core.handle_datagram(now, peer(0), &buf[..len], false);
                        sent += 1;
                        if sent > 256 {
                            break;
                        }
                    }
                    while let Some(event) = engine.poll_event() {
                        connected |= matches!(event, EngineEvent::Connected);
                    }
                    completed += exchange(&mut core, now, &heard_from, &mut sender_inbox);
                    // Pacing: let the sender's next deadline come.
                    if let Some(t) = sender.engine_ref().poll_timeout() {
                        now = now.max(t);
                    }
                }
            }
            _ => {
                let bytes = take(&mut rest);
                heard_from.push(peer(usize::from(op / 5)));
                core.handle_datagram(now, peer(usize::from(op / 5)), &bytes, true);
            }
        }
        completed += exchange(&mut core, now, &heard_from, &mut sender_inbox);
        heard_from.sort();
        heard_from.dedup();
    }
    drop(core);
    clean_scratch(dir);
    completed
}

/// Polls the receiver and takes what it sends, checking the oracles;
/// datagrams for peer 0 go to the real sender. Returns transfers completed.
fn exchange(core: &mut ReceiverCore, now: Instant, heard_from: &[SocketAddr], sender_inbox: &mut Vec<Vec<u8>>) -> u64 {
    let mut completed = 0;
    core.poll(now, &mut |event| {
        if let ReceiverEvent::Ended(report) = event {
            completed += u64::from(report.ok);
        }
    });
    let mut out = DatagramList::default();
    let mut rounds = 0;
    while !core.poll_transmit(now, &mut out) {
        rounds += 1;
        assert!(rounds < 1000, "poll_transmit never finishes");
    }
    for (to, datagram) in out.datagrams {
        if let Err(e) = parse_datagram(&datagram) {
            panic!("the receiver sent a malformed datagram: {e}");
        }
        assert!(heard_from.contains(&to), "the receiver sent to {to}, which never sent anything");
        if to == peer(0) && sender_inbox.len() < 4096 {
            sender_inbox.push(datagram);
        }
    }
    let (active, lingering) = core.transfers();
    assert!(active <= MAX_ACTIVE && lingering <= MAX_LINGERING, "{active} active, {lingering} lingering");
    let c = core.counters();
    assert!(c.reorder_bytes <= REORDER_TOTAL && c.reorder_peak_bytes <= REORDER_TOTAL, "{c:?}");
    completed
}
