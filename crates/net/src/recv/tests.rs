//! The receiver core's rules, driven with datagrams in memory: sealed
//! connections, slow readers, limits.

use super::*;
use crate::conn::connection_id;
use meshbed_proto::harness::{at_ms as at, loopback_peer as peer, sender_datagram};
use meshbed_proto::wire::{Control, ProtocolId};
use meshbed_proto::Protocol;

fn id(k: u32) -> u32 {
    connection_id(Protocol::AtpDefault, k)
}
/// A receiver core; its peers here are scripted datagrams that never read a
/// Retry, so address validation is off unless a test turns it on.
fn core(configure: impl FnOnce(&mut ReceiveOptions)) -> ReceiverCore {
    let mut o = ReceiveOptions::new(peer(1, 1), SinkKind::Discard);
    o.validate_addresses = false;
    configure(&mut o);
    ReceiverCore::new(o)
}

/// A plain SYN from an unproven address gets a Retry and opens nothing;
/// the same SYN carrying the Retry's token opens the transfer, and the
/// engine never sees the token.
#[test]
fn a_plain_syn_opens_a_transfer_only_with_the_token_of_its_address() {
    let mut c = core(|o| o.validate_addresses = true);
    let a = peer(2, 1);
    let syn = sender_datagram(ProtocolId::Atp, Control::SYN, id(1), 0, &[]);
    c.handle_datagram(at(0), a, &syn, false);
    let (_, sent) = step(&mut c, at(0));
    assert_eq!(c.transfers(), (0, 0), "nothing kept before the proof");
    let (to, retry) = sent.iter().find(|(_, d)| parse_datagram(d).unwrap().0.control.contains(Control::RST)).unwrap();
    assert_eq!(*to, a);
    let token = meshbed_proto::wire::retry_token(parse_datagram(retry).unwrap().1).expect("a Retry with a token");
    // A wrong token, or the right one from another port: another Retry.
    for (from, t) in [(a, [0u8; 16]), (peer(2, 2), token)] {
        c.handle_datagram(at(1), from, &[&syn[..], &t[..]].concat(), false);
        assert_eq!(c.transfers(), (0, 0));
    }
    c.handle_datagram(at(2), a, &[&syn[..], &token[..]].concat(), false);
    assert_eq!(c.transfers(), (1, 0), "proven: opened");
    assert_eq!(c.counters().stray, 0);
}
/// The SYN with its token may come again once the transfer is open (the
/// sender followed a second Retry, answering a SYN it had sent again, or
/// the network doubled it): the token is never taken as the stream's first
/// bytes. (Three parallel streams on a loaded machine met this: the
/// receiver read the token as a header and reset the stream.)
#[test]
fn a_syn_with_its_token_again_after_the_opening_is_not_stream_data() {
    let (_, dir) = directory_core("syn-again");
    let mut c = {
        let mut o = ReceiveOptions::new(peer(1, 1), SinkKind::Directory { dir: dir.clone(), overwrite: false });
        o.validate_addresses = true;
        ReceiverCore::new(o)
    };
    let a = peer(2, 9);
    let syn = sender_datagram(ProtocolId::Atp, Control::SYN, id(1), 0, &[]);
    c.handle_datagram(at(0), a, &syn, false);
    let (_, sent) = step(&mut c, at(0));
    let retry = &sent.iter().find(|(_, d)| parse_datagram(d).unwrap().0.control.contains(Control::RST)).unwrap().1;
    let token = meshbed_proto::wire::retry_token(parse_datagram(retry).unwrap().1).unwrap();
    let with_token = [&syn[..], &token[..]].concat();
    c.handle_datagram(at(1), a, &with_token, false);
    assert_eq!(c.transfers(), (1, 0));
    step(&mut c, at(1));
    // The same SYN and token again, then the stream.
    c.handle_datagram(at(2), a, &with_token, false);
    let stream = timed_stream(1000);
    c.handle_datagram(at(3), a, &sender_datagram(ProtocolId::Atp, 0, id(1), 0, &stream), false);
    let (reports, _) = step(&mut c, at(3));
    assert!(reports.is_empty(), "the transfer goes on: {reports:?}");
    let rst = sender_datagram(ProtocolId::Atp, Control::RST, id(1), stream.len() as u64, &[]);
    c.handle_datagram(at(4), a, &rst, false);
    let (reports, _) = step(&mut c, at(4));
    assert!(reports.len() == 1 && reports[0].ok && reports[0].file_bytes == 1000, "{reports:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_sealed_connection_replayed_whole_is_not_opened_again() {
    let key = Psk::random().unwrap();
    let mut c = core(|o| o.psk = Some(key.clone()));
    let mut sender = Protection::new(Some(&key), id(1), Direction::ToReceiver).unwrap();
    let mut sealed = sender_datagram(ProtocolId::Atp, Control::SYN, id(1), 0, &[]);
    let len = sealed.len();
    sealed.resize(len + crate::auth::OVERHEAD, 0);
    let n = sender.seal(&mut sealed, len).unwrap();
    sealed.truncate(n);
    c.handle_datagram(at(0), peer(2, 5000), &sealed, false);
    assert_eq!(c.transfers().0, 1, "the sealed SYN opens a transfer");
    // The receiver forgets the transfer; a recording of it comes back.
    c.abandon();
    c.handle_datagram(at(1000), peer(2, 5000), &sealed, false);
    assert_eq!(c.transfers(), (0, 0), "the replayed SYN opened nothing");
    assert_eq!(c.counters().unauthenticated, 1);
    // An unsealed SYN is refused too.
    syn(&mut c, at(2000), peer(3, 5000), 2);
    assert_eq!(c.transfers().0, 0);
    assert_eq!(c.counters().unauthenticated, 2);
}

fn syn(core: &mut ReceiverCore, now: Instant, from: SocketAddr, k: u32) {
    core.handle_datagram(now, from, &sender_datagram(ProtocolId::Atp, Control::SYN, id(k), 0, &[]), false);
}
fn data(core: &mut ReceiverCore, now: Instant, from: SocketAddr, k: u32, seq: u64, len: usize, fin: bool) {
    let control = if fin { Control::FIN } else { 0 };
    core.handle_datagram(now, from, &sender_datagram(ProtocolId::Atp, control, id(k), seq, &vec![7; len]), false);
}
/// Polls and returns (reports, datagrams sent).
fn step(core: &mut ReceiverCore, now: Instant) -> (Vec<TransferReport>, Vec<(SocketAddr, Vec<u8>)>) {
    let mut reports = Vec::new();
    core.poll(now, &mut |e| {
        if let ReceiverEvent::Ended(r) = e {
            reports.push(r.clone());
        }
    });
    let mut out = DatagramList::default();
    assert!(core.poll_transmit(now, &mut out));
    (reports, out.datagrams)
}
fn busy_refusals(sent: &[(SocketAddr, Vec<u8>)]) -> Vec<(SocketAddr, u32)> {
    sent.iter()
        .filter_map(|(to, d)| {
            let (repr, payload) = parse_datagram(d).unwrap();
            let busy =
                repr.control.contains(Control::RST) && ResetReason::from_payload(payload) == Some(ResetReason::Busy);
            busy.then_some((*to, repr.connection_id))
        })
        .collect()
}

#[test]
fn finished_transfers_linger_outside_the_limit_in_a_bounded_table() {
    let mut core = core(|o| {
        o.max_connections = 2;
        o.max_lingering = 3;
    });
    for k in 0..5 {
        let now = at(10 * u64::from(k));
        syn(&mut core, now, peer(2, 9), k);
        data(&mut core, now, peer(2, 9), k, 0, 100, true);
        let (reports, sent) = step(&mut core, now);
        assert!(reports.len() == 1 && reports[0].ok, "transfer {k}: {reports:?}");
        assert!(busy_refusals(&sent).is_empty());
    }
    let c = core.counters();
    assert_eq!((c.transfers_completed, c.over_capacity, c.lingering_evicted), (5, 0, 2));
    assert_eq!(core.transfers(), (0, 3));
    // A lingering transfer still answers its sender's repeated FIN.
    data(&mut core, at(60), peer(2, 9), 4, 0, 100, true);
    let (_, sent) = step(&mut core, at(60));
    assert!(sent.iter().any(|(_, d)| parse_datagram(d).unwrap().0.connection_id == id(4)));
}

#[test]
fn a_full_table_evicts_half_open_then_stalled_transfers_and_refuses_otherwise() {
    // No minimum rate: half-open and stalled transfers only (the endpoint's
    // tests cover the rate).
    let mut core = core(|o| {
        o.max_connections = 3;
        o.stalled_after = StdDuration::from_secs(5);
        o.min_rate_bps = 0;
    });
    let (a, b, c, d, e, f) = (peer(2, 1), peer(3, 1), peer(4, 1), peer(5, 1), peer(6, 1), peer(7, 1));
    for (from, k) in [(a, 1), (b, 2)] {
        syn(&mut core, at(0), from, k);
        data(&mut core, at(0), from, k, 0, 100, false);
    }
    syn(&mut core, at(0), c, 3); // half-open
    step(&mut core, at(0));
    // D takes C's slot; C's sender is told the receiver is busy.
    syn(&mut core, at(1000), d, 4);
    let (reports, sent) = step(&mut core, at(1000));
    assert_eq!(reports.len(), 1);
    assert!(reports[0].error.as_deref().unwrap().contains("evicted"), "{reports:?}");
    assert_eq!(reports[0].connection_id, format!("{:08x}", id(3)));
    assert_eq!(busy_refusals(&sent), vec![(c, id(3))]);
    data(&mut core, at(1000), d, 4, 0, 100, false);
    // Everyone is making progress: E is refused.
    syn(&mut core, at(2000), e, 5);
    let (reports, sent) = step(&mut core, at(2000));
    assert!(reports.is_empty());
    assert_eq!(busy_refusals(&sent), vec![(e, id(5))]);
    assert_eq!(core.counters().over_capacity, 1);
    // Its SYN again within 100 ms: refused again, but not answered again.
    syn(&mut core, at(2050), e, 5);
    assert!(busy_refusals(&step(&mut core, at(2050)).1).is_empty());
    // A and B stalled (nothing new for 6 s; D for 5 s): A goes first.
    syn(&mut core, at(6000), f, 6);
    let (reports, sent) = step(&mut core, at(6000));
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].connection_id, format!("{:08x}", id(1)));
    assert!(reports[0].error.as_deref().unwrap().contains("nothing new for 6.0 s"), "{reports:?}");
    assert_eq!(busy_refusals(&sent), vec![(a, id(1))]);
    let counters = core.counters();
    assert_eq!((counters.evicted, counters.over_capacity, counters.transfers_failed), (2, 2, 2));
    assert_eq!(core.transfers(), (3, 0));
}

/// A timed test stream's header and its first `len` generated bytes.
fn timed_stream(len: usize) -> Vec<u8> {
    let header = crate::framing::StreamHeader { name: "timed-test".into(), size: 1 << 62, sha256: [0; 32] };
    let mut stream = header.encode_as(StreamKind::Timed);
    let at = stream.len();
    stream.resize(at + len, 0);
    crate::generated::fill(0, &mut stream[at..]);
    stream
}

fn directory_core(tag: &str) -> (ReceiverCore, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("meshbed-net-recv-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sink = SinkKind::Directory { dir: dir.clone(), overwrite: false };
    let mut o = ReceiveOptions::new(peer(1, 1), sink);
    o.validate_addresses = false;
    (ReceiverCore::new(o), dir)
}

#[test]
fn a_timed_stream_ended_by_its_senders_reset_is_a_success_that_writes_nothing() {
    let (mut core, dir) = directory_core("timed");
    let from = peer(2, 7);
    syn(&mut core, at(0), from, 1);
    let stream = timed_stream(1000);
    core.handle_datagram(at(1), from, &sender_datagram(ProtocolId::Atp, 0, id(1), 0, &stream), false);
    let (reports, _) = step(&mut core, at(1));
    assert!(reports.is_empty());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "no temporary file for a timed stream");
    let rst = sender_datagram(ProtocolId::Atp, Control::RST, id(1), stream.len() as u64, &[]);
    core.handle_datagram(at(2), from, &rst, false);
    let (reports, sent) = step(&mut core, at(2));
    assert_eq!(reports.len(), 1);
    let r = &reports[0];
    assert!(r.ok && r.timed && r.path.is_none(), "{r:?}");
    assert_eq!(r.file_bytes, 1000);
    assert!(r.to_text().contains("timed test stream") && r.to_text().contains("1000 bytes"), "{}", r.to_text());
    assert!(sent.is_empty(), "nothing answers a reset");
    // Nothing lingers: a `--count` receiver may exit at once.
    assert_eq!(core.transfers(), (0, 0));
    assert_eq!(core.counters().transfers_completed, 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_wrong_byte_in_a_timed_stream_fails_it_and_resets_the_sender() {
    let (mut core, dir) = directory_core("timed-bad");
    let from = peer(2, 8);
    syn(&mut core, at(0), from, 1);
    let mut stream = timed_stream(500);
    let at_byte = stream.len() - 500 + 321;
    stream[at_byte] ^= 1;
    core.handle_datagram(at(1), from, &sender_datagram(ProtocolId::Atp, 0, id(1), 0, &stream), false);
    let (reports, sent) = step(&mut core, at(1));
    assert_eq!(reports.len(), 1);
    let e = reports[0].error.as_deref().unwrap();
    assert!(e.contains("byte 321 of the timed test stream"), "{e}");
    assert!(sent.iter().any(|(to, d)| *to == from && parse_datagram(d).unwrap().0.control.contains(Control::RST)));
    // A file stream's reset is still a failure.
    syn(&mut core, at(10), from, 2);
    let file = crate::framing::StreamHeader { name: "f".into(), size: 100, sha256: [0; 32] }.encode();
    core.handle_datagram(at(10), from, &sender_datagram(ProtocolId::Atp, 0, id(2), 0, &file), false);
    assert!(step(&mut core, at(10)).0.is_empty());
    let rst = sender_datagram(ProtocolId::Atp, Control::RST, id(2), file.len() as u64, &[]);
    core.handle_datagram(at(11), from, &rst, false);
    let (reports, _) = step(&mut core, at(11));
    assert!(reports.len() == 1 && !reports[0].ok, "{reports:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
