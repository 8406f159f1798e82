//! The sender against forged acknowledgements and large files (issue 9):
//! success only on the receiver's commit confirmation, and files streamed
//! through a bounded window rather than held in memory.

mod common;

use common::*;
use meshbed_net::conn::SEND_WINDOW_BYTES;
use meshbed_net::{send, Payload, SendOptions};
use meshbed_proto::wire::{parse_datagram, Control, ProtocolId};
use meshbed_proto::Protocol;
use std::time::Duration;

fn options(protocol: Protocol) -> SendOptions {
    let mut o = SendOptions::new(protocol);
    o.timeout = Duration::from_secs(5);
    o
}

/// An on-path attacker who, for every tenth data datagram it sees, tells the
/// sender that the whole stream (`stream_len` bytes) and the FIN arrived.
fn forge_final_ack(stream_len: u64) -> Forger {
    let mut seen = 0u64;
    Box::new(move |bytes: &[u8]| {
        let (repr, payload) = parse_datagram(bytes).ok()?;
        if payload.is_empty() {
            return None;
        }
        seen += 1;
        if !seen.is_multiple_of(10) {
            return None;
        }
        let (control, ack) = match repr.protocol {
            ProtocolId::Atp => (Control::SACK_OPT | Control::ACK | Control::FIN, stream_len),
            // TCP: the FIN occupies one sequence number after the data.
            ProtocolId::Tcp => (Control::ACK, stream_len + 2),
        };
        Some(meshbed_proto::harness::datagram(repr.protocol, control, repr.connection_id, 1, ack, &[]))
    })
}

/// Sends through a lossy shim with `forger` on the path. The only
/// acceptable outcomes: success with the file committed byte for byte, or a
/// loud failure with nothing wrong committed. Returns what happened.
fn send_past_forger(tag: &str, protocol: Protocol, seed: u64, forger: fn(u64) -> Forger) -> Result<u64, String> {
    let dir = temp_dir(&format!("{tag}-{protocol}"));
    let data = content(300_000, seed);
    let payload = Payload::from_bytes("f.bin", &data).unwrap();
    let stream_len = payload.stream_len();
    let receiver = RunningReceiver::start(receive_options(&dir));
    let shim = Shim::start(receiver.addr, Impairments { seed, loss: 0.1, ..Impairments::default() });
    shim.set_forger(forger(stream_len));
    let mut o = options(protocol);
    o.timeout = Duration::from_secs(2);
    // A hang is a failure too: the sender must end by itself.
    let (tx, rx) = std::sync::mpsc::channel();
    let to = shim.addr;
    std::thread::spawn(move || {
        let _ = tx.send(send(payload, to, &o, &mut |_| {}).map_err(|e| e.to_string()));
    });
    let result = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| panic!("{protocol}: the sender hung"));
    drop(shim);
    drop(receiver);
    let committed = dir.join("f.bin").exists().then(|| std::fs::read(dir.join("f.bin")).unwrap());
    match result {
        Ok(report) => {
            assert!(committed.as_deref() == Some(&data[..]), "{protocol}: success without the file committed");
            Ok(report.protocol_violations)
        }
        Err(m) => {
            assert!(m.contains("never confirmed") || m.contains("unreachable"), "{protocol}: {m}");
            assert!(committed.is_none() || committed.as_deref() == Some(&data[..]), "{protocol}: a wrong file");
            Err(m)
        }
    }
}

#[test]
fn a_forged_final_ack_never_ends_a_transfer_in_success() {
    for (i, protocol) in [Protocol::AtpAdaptive, Protocol::TcpNewReno].into_iter().enumerate() {
        // The forgeries were noticed: ignored and counted (an ack beyond what
        // was sent), or believed and then unconfirmed (within what was sent).
        match send_past_forger("forged", protocol, 40 + i as u64, forge_final_ack) {
            Ok(violations) => assert!(violations > 0, "{protocol}: the forged acks were seen and counted"),
            Err(m) => assert!(m.contains("never confirmed"), "{protocol}: {m}"),
        }
    }
}

/// An attacker who waits for the sender's FIN (everything sent, some of it
/// lost on the way) and then claims that all of it arrived.
fn forge_ack_of_the_fin(stream_len: u64) -> Forger {
    let mut inner = forge_final_ack(stream_len);
    Box::new(move |bytes: &[u8]| {
        let (repr, _) = parse_datagram(bytes).ok()?;
        if !repr.control.contains(Control::FIN) {
            return None;
        }
        // Reuse the final-ack forgery on a copy that looks like data.
        let mut as_data = bytes.to_vec();
        as_data.push(0);
        (0..10).find_map(|_| inner(&as_data))
    })
}

#[test]
fn an_ack_forged_after_the_fin_fails_loudly_instead_of_hanging() {
    // The forged ack is within what was sent, so it is believed and the
    // bytes are released; the lost ones can then never be sent again. The
    // sender must not wait forever: without the receiver's confirmation it
    // gives up after the idle time, loudly (asserted in send_past_forger).
    for (i, protocol) in [Protocol::AtpAdaptive, Protocol::TcpNewReno].into_iter().enumerate() {
        let _ = send_past_forger("forged-fin", protocol, 60 + i as u64, forge_ack_of_the_fin);
    }
}

#[test]
fn a_file_larger_than_the_window_streams_from_disk() {
    // Three windows' worth, so the window is refilled many times.
    let dir = temp_dir("stream-in");
    let src = temp_dir("stream-src");
    let data = content(3 * SEND_WINDOW_BYTES + 12_345, 77);
    let path = src.join("big.bin");
    std::fs::write(&path, &data).unwrap();
    let mut hashed = Vec::new();
    let payload = Payload::from_file_with_progress(&path, &mut |done, total| hashed.push((done, total))).unwrap();
    assert_eq!(hashed.last(), Some(&(data.len() as u64, data.len() as u64)), "hashing reports its progress");
    assert!(hashed.len() > 2, "progress comes in steps, not only at the end");
    let receiver = RunningReceiver::start(receive_options(&dir));
    let report = send(payload, receiver.addr, &options(Protocol::TcpNewReno), &mut |_| {}).unwrap();
    let reports = receiver.wait_for(1, Duration::from_secs(10));
    assert!(reports[0].ok);
    assert_eq!(report.file_bytes, data.len() as u64);
    assert!(std::fs::read(dir.join("big.bin")).unwrap() == data);
}

#[test]
fn a_file_that_changes_while_sent_fails_loudly() {
    let dir = temp_dir("changed-in");
    let src = temp_dir("changed-src");
    let path = src.join("moving.bin");
    std::fs::write(&path, content(200_000, 5)).unwrap();
    let payload = Payload::from_file(&path).unwrap();
    // Truncated after hashing: the sender cannot deliver what it announced.
    std::fs::write(&path, content(1000, 5)).unwrap();
    let receiver = RunningReceiver::start(receive_options(&dir));
    let err = send(payload, receiver.addr, &options(Protocol::AtpAdaptive), &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("changed while being sent"), "{err}");
    drop(receiver);
    assert!(names(&dir).iter().all(|n| n != "moving.bin"), "nothing committed under the final name");
}

#[test]
fn what_is_not_a_regular_file_is_refused() {
    let err = Payload::from_file(std::path::Path::new("/dev/zero")).unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
}

/// A plain (unsealed) datagram of the connection `like` belongs to.
fn plain(like: &[u8], control: u8, seq: u64, ack: u64, payload: &[u8]) -> Option<Vec<u8>> {
    let p = meshbed_proto::wire::Packet::new_checked(like).ok()?;
    let protocol = if p.protocol_raw() == 1 { ProtocolId::Atp } else { ProtocolId::Tcp };
    Some(meshbed_proto::harness::datagram(protocol, control, p.connection_id(), seq, ack, payload))
}

fn psk_options(protocol: Protocol, key: &[u8]) -> SendOptions {
    let mut o = options(protocol);
    o.psk = Some(meshbed_net::auth::Psk::from_bytes(key).unwrap());
    o
}

#[test]
fn with_a_psk_injected_data_acks_and_resets_are_dropped_and_counted() {
    const KEY: &[u8] = b"c0ffee00d15ea5e5a1b2c3d4e5f60718293a4b5c6d7e8f901122334455667788";
    for (i, protocol) in [Protocol::AtpAdaptive, Protocol::TcpNewReno].into_iter().enumerate() {
        let dir = temp_dir(&format!("psk-{protocol}"));
        let data = content(300_000, 80 + i as u64);
        let payload = Payload::from_bytes("secret.bin", &data).unwrap();
        let stream_len = payload.stream_len();
        let mut ro = receive_options(&dir);
        ro.psk = Some(meshbed_net::auth::Psk::from_bytes(KEY).unwrap());
        let receiver = RunningReceiver::start(ro);
        let shim = Shim::start(receiver.addr, Impairments { seed: 5, loss: 0.05, ..Impairments::default() });
        // Towards the sender: resets, and acknowledgements of everything
        // with a FIN (and for ATP even the right commit token).
        let mut n = 0u32;
        let token = meshbed_net::framing::StreamHeader::for_data("secret.bin", &data).unwrap().sha256;
        shim.set_forger(Box::new(move |bytes: &[u8]| {
            n += 1;
            match n % 3 {
                0 => plain(bytes, Control::RST, 0, 0, &[]),
                1 => plain(bytes, Control::SACK_OPT | Control::ACK | Control::FIN, 0, stream_len, &token),
                _ => plain(bytes, Control::ACK, 0, stream_len + 2, &token),
            }
        }));
        // Towards the receiver: garbage at the start of the stream, and resets.
        let mut m = 0u32;
        shim.set_forger_to_receiver(Box::new(move |bytes: &[u8]| {
            m += 1;
            if m.is_multiple_of(2) {
                plain(bytes, Control::RST, 0, 0, &[])
            } else {
                plain(bytes, 0, 1, 1, &[0xee; 1000])
            }
        }));
        let report = send(payload, shim.addr, &psk_options(protocol, KEY), &mut |_| {})
            .unwrap_or_else(|e| panic!("{protocol}: {e}"));
        let reports = receiver.wait_for(1, Duration::from_secs(10));
        assert!(reports[0].ok, "{protocol}: {:?}", reports[0].error);
        assert!(std::fs::read(dir.join("secret.bin")).unwrap() == data, "{protocol}: content differs");
        assert!(report.unauthenticated > 0, "{protocol}: forgeries towards the sender counted");
        assert_eq!(report.protocol_violations, 0, "{protocol}: no forgery reached the engine");
        assert!(reports[0].receiver.unauthenticated > 0, "{protocol}: forgeries towards the receiver counted");
    }
}

const ONE: &[u8; 64] = b"1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809";
const TWO: &[u8; 64] = b"f0e1d2c3b4a5968778695a4b3c2d1e0ff0e1d2c3b4a5968778695a4b3c2d1e0f";

/// Issue 26: a key mismatch is reported as one, at the end that can tell:
/// two different keys (the receiver says so, plainly; the sender reports it
/// without believing it), a sender with a key and a receiver without (the
/// sender sees answers that do not verify), a sender without a key and a
/// receiver with one (the receiver's plain RST ends the attempt). Nothing
/// is written in any case.
#[test]
fn a_wrong_key_or_no_key_moves_nothing_and_says_key_mismatch() {
    let cases = [
        (Some(&ONE[..]), Some(&TWO[..]), "says it could not verify"),
        (Some(ONE), None, "do not verify with this key"),
        (None, Some(ONE), "holds a pre-shared key and could not verify"),
    ];
    for (sender_key, receiver_key, expected) in cases {
        let dir = temp_dir("psk-wrong");
        let mut ro = receive_options(&dir);
        ro.psk = receiver_key.map(|k| meshbed_net::auth::Psk::from_bytes(k).unwrap());
        let receiver = RunningReceiver::start(ro);
        let mut o = options(Protocol::AtpAdaptive);
        o.timeout = Duration::from_secs(1);
        o.psk = sender_key.map(|k| meshbed_net::auth::Psk::from_bytes(k).unwrap());
        let err = send(Payload::from_bytes("x.bin", b"abc").unwrap(), receiver.addr, &o, &mut |_| {}).unwrap_err();
        let err = err.to_string();
        assert!(err.contains("key mismatch") && err.contains(expected), "{sender_key:?} {receiver_key:?}: {err}");
        drop(receiver);
        assert!(names(&dir).is_empty(), "nothing written");
    }
}

/// Issue 26, without `--psk`: an attacker who does not know where the
/// sender's acknowledgements stand answers data with RSTs (below, inside and
/// beyond the window) and busy RSTs. Only an RST at exactly the oldest
/// unacknowledged sequence ends a sender (RFC 5961 §3), so every transfer
/// completes, the file intact, and the forgeries are counted.
#[test]
fn blind_resets_and_busy_refusals_do_not_end_a_transfer_without_a_key() {
    for (i, protocol) in [Protocol::AtpAdaptive, Protocol::TcpNewReno, Protocol::Mtl].into_iter().enumerate() {
        let dir = temp_dir(&format!("blind-rst-{protocol}"));
        let data = content(300_000, 90 + i as u64);
        let receiver = RunningReceiver::start(receive_options(&dir));
        let shim = Shim::start(receiver.addr, Impairments { seed: 7, loss: 0.02, ..Impairments::default() });
        let mut n = 0u64;
        shim.set_forger(Box::new(move |bytes: &[u8]| {
            let (repr, payload) = parse_datagram(bytes).ok()?;
            n += 1;
            // Inside the window but off any segment boundary, far beyond
            // it, and a busy refusal naming a guess.
            let end = repr.seq + payload.len() as u64;
            match n % 3 {
                0 => plain(bytes, Control::RST, 0, end + 1, &[]),
                1 => plain(bytes, Control::RST, 0, end + (1 << 40), &[]),
                _ => plain(bytes, Control::RST, 0, 12_345, &[1]),
            }
        }));
        let report = send(Payload::from_bytes("f.bin", &data).unwrap(), shim.addr, &options(protocol), &mut |_| {})
            .unwrap_or_else(|e| panic!("{protocol}: {e}"));
        assert_eq!(report.attempts, 1, "{protocol}");
        assert!(report.resets_ignored > 100, "{protocol}: {}", report.resets_ignored);
        let reports = receiver.wait_for(1, Duration::from_secs(10));
        assert!(reports[0].ok, "{protocol}: {:?}", reports[0].error);
        assert!(std::fs::read(dir.join("f.bin")).unwrap() == data, "{protocol}: content differs");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Issue 26, without `--psk`: an on-path attacker answers the first SYN
/// with a busy RST naming it exactly. Busy is advisory: the sender backs off
/// and asks again, and the transfer completes on its second attempt (it
/// used to end at once, blaming the receiver, whatever `--retries` said).
#[test]
fn a_forged_busy_refusal_costs_a_backoff_not_the_transfer() {
    let dir = temp_dir("forged-busy");
    let data = content(20_000, 95);
    let receiver = RunningReceiver::start(receive_options(&dir));
    let shim = Shim::start(receiver.addr, Impairments { seed: 3, ..Impairments::default() });
    let mut forged = false;
    shim.set_forger(Box::new(move |bytes: &[u8]| {
        let (repr, _) = parse_datagram(bytes).ok()?;
        if forged || !repr.control.contains(Control::SYN) {
            return None;
        }
        forged = true;
        plain(bytes, Control::RST, 0, repr.seq, &[1])
    }));
    let mut o = options(Protocol::AtpAdaptive);
    o.retry_delay = Duration::from_millis(100);
    let report = send(Payload::from_bytes("f.bin", &data).unwrap(), shim.addr, &o, &mut |_| {})
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.attempts, 2);
    // The failed first attempt is in the report of the transfer that
    // completed, with its reason.
    assert_eq!(report.failed_attempts.len(), 1, "{:?}", report.failed_attempts);
    let first = &report.failed_attempts[0];
    assert_eq!(first.attempt, 1);
    assert!(first.error.contains("busy"), "{first}");
    assert!(report.to_text().contains("failed        attempt 1"), "{}", report.to_text());
    assert!(std::fs::read(dir.join("f.bin")).unwrap() == data);
    std::fs::remove_dir_all(&dir).unwrap();
}
