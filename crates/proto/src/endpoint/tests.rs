//! The endpoint's rules, one test each: demultiplexing, limits, eviction,
//! busy and rate-limited resets, lingering and replay memory.

use super::*;
use crate::connection::{connection_id, EngineConfig};
use crate::engine::EngineEvent;
use crate::harness::{at_ms as at, loopback_peer as peer, sender_datagram};
use crate::tcp::TcpConfig;
use crate::wire::parse_datagram;

type Ep = Endpoint<SocketAddr, (), ()>;

fn id(k: u32) -> u32 {
    connection_id(Protocol::AtpDefault, k)
}
fn endpoint(configure: impl FnOnce(&mut EndpointConfig)) -> Ep {
    let mut config = EndpointConfig::default();
    configure(&mut config);
    Endpoint::new(config)
}

/// What became of one datagram.
#[derive(Debug, PartialEq)]
enum Outcome {
    Malformed,
    Known,
    Stray,
    Replayed,
    Refused,
    Retry,
    /// Accepted, evicting this connection.
    Accepted(Option<(u32, Eviction)>),
}

/// A driver's steps for one datagram, as in the module doc.
fn deliver(ep: &mut Ep, now: Instant, from: SocketAddr, datagram: &[u8], instance: Option<[u8; 16]>) -> Outcome {
    let id = match ep.route(from, datagram) {
        Route::Malformed => return Outcome::Malformed,
        Route::Stray => return Outcome::Stray,
        Route::Known(id) => {
            ep.handle_input(now, id, datagram);
            return Outcome::Known;
        }
        Route::Unknown(id) => id,
    };
    let (repr, _) = parse_datagram(datagram).unwrap();
    let origin = instance.map_or(Origin::Plain, Origin::Sealed);
    match ep.handle_new(now, from, id, &repr, origin, ()) {
        Incoming::Stray => Outcome::Stray,
        Incoming::Replayed => Outcome::Replayed,
        Incoming::Refused => Outcome::Refused,
        Incoming::Retry => Outcome::Retry,
        Incoming::Accept { protocol, evicted, .. } => {
            let evicted = evicted.map(|(victim, conn, why)| {
                ep.reset_connection(now, victim, &conn, Some(ResetReason::Busy), ());
                (victim, why)
            });
            let engine = ReceiverEngine::new(&EngineConfig::new(protocol, |c| c, TcpConfig::default), id, now);
            ep.insert(now, id, from, protocol, engine, ());
            ep.handle_input(now, id, datagram);
            Outcome::Accepted(evicted)
        }
    }
}
fn syn(ep: &mut Ep, now: Instant, from: SocketAddr, k: u32) -> Outcome {
    deliver(ep, now, from, &sender_datagram(ProtocolId::Atp, Control::SYN, id(k), 0, &[]), None)
}
fn data(ep: &mut Ep, now: Instant, from: SocketAddr, k: u32, seq: u64, len: usize, fin: bool) -> Outcome {
    let control = if fin { Control::FIN } else { 0 };
    deliver(ep, now, from, &sender_datagram(ProtocolId::Atp, control, id(k), seq, &vec![7; len]), None)
}
/// The resets queued: (to, connection id, reason).
fn resets(ep: &mut Ep) -> Vec<(SocketAddr, u32, Option<ResetReason>)> {
    let mut buf = [0u8; 1500];
    let mut out = Vec::new();
    while let Some(r) = ep.poll_reset(&mut buf) {
        let (repr, payload) = parse_datagram(&buf[..r.len]).unwrap();
        assert!(repr.control.contains(Control::RST) && repr.connection_id == r.connection_id);
        out.push((r.peer, r.connection_id, ResetReason::from_payload(payload)));
    }
    out
}
/// Ends every active connection whose engine finished and lets it linger,
/// as a driver does.
fn end_finished(ep: &mut Ep) -> Vec<u32> {
    let mut ended = Vec::new();
    for id in ep.active_ids() {
        let conn = ep.active_mut(id).unwrap();
        let mut finished = false;
        while let Some(e) = conn.engine.engine().poll_event() {
            finished |= e == EngineEvent::Finished;
        }
        if finished {
            let conn = ep.remove(id).unwrap();
            ep.linger(id, conn);
            ended.push(id);
        }
    }
    ended
}
const BUSY: Option<ResetReason> = Some(ResetReason::Busy);

#[test]
fn a_full_table_evicts_half_open_then_the_longest_stalled_and_refuses_otherwise() {
    // No minimum rate: half-open and stalled connections only.
    let mut ep = endpoint(|c| {
        c.max_connections = 3;
        c.min_rate_bps = 0;
    });
    let (a, b, c, d, e, f) = (peer(2, 1), peer(3, 1), peer(4, 1), peer(5, 1), peer(6, 1), peer(7, 1));
    for (from, k) in [(a, 1), (b, 2)] {
        assert_eq!(syn(&mut ep, at(0), from, k), Outcome::Accepted(None));
        data(&mut ep, at(0), from, k, 0, 100, false);
    }
    assert_eq!(syn(&mut ep, at(0), c, 3), Outcome::Accepted(None)); // half-open
                                                                    // D takes the half-open C's slot, though A and B are older; C is told busy.
    let half_open = Eviction::HalfOpen { idle: Duration::from_secs(1) };
    assert_eq!(syn(&mut ep, at(1000), d, 4), Outcome::Accepted(Some((id(3), half_open))));
    assert_eq!(resets(&mut ep), vec![(c, id(3), BUSY)]);
    data(&mut ep, at(1000), d, 4, 0, 100, false);
    // Everyone made progress within 5 s: E is refused busy.
    assert_eq!(syn(&mut ep, at(2000), e, 5), Outcome::Refused);
    assert_eq!(resets(&mut ep), vec![(e, id(5), BUSY)]);
    // Its SYN again within 100 ms: refused, not answered again.
    assert_eq!(syn(&mut ep, at(2099), e, 5), Outcome::Refused);
    assert!(resets(&mut ep).is_empty());
    // At 4999 ms nobody has stalled for 5 s yet. At 6000 ms A and B
    // have for 6 s and D for 5 s: A goes (idle longest, lower id than B).
    assert_eq!(syn(&mut ep, at(4999), f, 6), Outcome::Refused);
    let stalled = Eviction::Stalled { idle: Duration::from_secs(6) };
    assert_eq!(syn(&mut ep, at(6000), f, 6), Outcome::Accepted(Some((id(1), stalled))));
    assert_eq!(stalled.to_string(), "evicted for a new transfer: nothing new for 6.0 s");
    let counters = ep.counters();
    assert_eq!((counters.evicted, counters.over_capacity), (2, 3));
    assert_eq!(ep.len(), (3, 0));
}

#[test]
fn one_host_gets_its_share_and_only_its_own_connections_give_way() {
    let mut ep = endpoint(|c| {
        c.max_connections = 10;
        c.max_connections_per_peer = 2;
        c.min_rate_bps = 0;
    });
    // Two ports of one address count as one host.
    let (x1, x2, y) = (peer(2, 1), peer(2, 2), peer(3, 1));
    syn(&mut ep, at(0), y, 9); // another host's half-open connection
    syn(&mut ep, at(0), x1, 1);
    data(&mut ep, at(0), x1, 1, 0, 10, false);
    assert_eq!(syn(&mut ep, at(0), x2, 2), Outcome::Accepted(None)); // just inside the share
    data(&mut ep, at(0), x2, 2, 0, 10, false);
    // Just outside: nothing of X's may go (Y's half-open one does not count).
    assert_eq!(syn(&mut ep, at(1), x1, 3), Outcome::Refused);
    assert_eq!(resets(&mut ep), vec![(x1, id(3), BUSY)]);
    assert_eq!(syn(&mut ep, at(1), y, 4), Outcome::Accepted(None));
    assert_eq!(ep.len(), (4, 0));
}

#[test]
fn stray_datagrams_are_counted_and_only_data_is_answered() {
    let mut ep = endpoint(|_| {});
    let a = peer(2, 1);
    syn(&mut ep, at(0), a, 1);
    // A known id from another address.
    assert_eq!(data(&mut ep, at(0), peer(3, 1), 1, 0, 10, false), Outcome::Stray);
    // Data of an unknown connection: answered with a plain RST.
    assert_eq!(data(&mut ep, at(0), a, 2, 0, 10, false), Outcome::Stray);
    // Feedback and a reset of an unknown connection: not answered.
    let feedback = sender_datagram(ProtocolId::Atp, Control::SACK_OPT, id(3), 0, &[]);
    let rst = sender_datagram(ProtocolId::Atp, Control::RST, id(4), 0, &[]);
    assert_eq!(deliver(&mut ep, at(0), a, &feedback, None), Outcome::Stray);
    assert_eq!(deliver(&mut ep, at(0), a, &rst, None), Outcome::Stray);
    // A SYN whose id names the other protocol family.
    let tcp_syn = sender_datagram(ProtocolId::Tcp, Control::SYN, id(5), 0, &[]);
    assert_eq!(deliver(&mut ep, at(0), a, &tcp_syn, None), Outcome::Stray);
    assert_eq!(deliver(&mut ep, at(0), a, &[0; 10], None), Outcome::Malformed);
    assert_eq!(resets(&mut ep), vec![(a, id(2), None)]);
    assert_eq!(ep.counters().stray, 5);
    // Without reset_unknown the data goes unanswered; busy refusals not.
    let mut quiet = endpoint(|c| {
        c.reset_unknown = false;
        c.max_connections = 0;
    });
    data(&mut quiet, at(0), a, 2, 0, 10, false);
    syn(&mut quiet, at(0), a, 3);
    assert_eq!(resets(&mut quiet), vec![(a, id(3), BUSY)]);
}

#[test]
fn a_flood_of_unknown_datagrams_gets_at_most_the_reset_budget() {
    let mut ep = endpoint(|_| {});
    let flood = |ep: &mut Ep, now: Instant, first: u32| {
        for k in first..first + 10_000 {
            data(ep, now, peer(9, 9), k, 0, 1, false);
        }
        resets(ep).len()
    };
    let burst = STATELESS_RESET_BURST as usize;
    assert_eq!(flood(&mut ep, at(0), 0), burst);
    // One token per 10 ms: none just before, one at 10 ms.
    let refill_ms = STATELESS_RESET_REFILL_NS / 1_000_000;
    assert_eq!(flood(&mut ep, Instant::from_nanos(STATELESS_RESET_REFILL_NS - 1), 10_000), 0);
    assert_eq!(flood(&mut ep, at(refill_ms), 20_000), 1);
    assert_eq!(flood(&mut ep, at(refill_ms * 5), 30_000), 4);
    // A long pause refills the bucket, but not beyond its size.
    assert_eq!(flood(&mut ep, at(60_000), 40_000), burst);
    assert_eq!(ep.counters().resets_suppressed, 5 * 10_000 - 2 * burst as u64 - 5);
    // Busy refusals of SYNs draw from the same budget.
    let mut full = endpoint(|c| c.max_connections = 0);
    for k in 0..1000 {
        syn(&mut full, at(0), peer(9, 9), k);
    }
    assert_eq!(resets(&mut full).len(), burst);
    // A reset of a connection the endpoint had does not.
    let mut roomy = endpoint(|_| {});
    assert_eq!(syn(&mut roomy, at(0), peer(9, 9), 5000), Outcome::Accepted(None));
    let conn = roomy.remove(id(5000)).unwrap();
    full.reset_connection(at(0), id(5000), &conn, Some(ResetReason::Busy), ());
    assert_eq!(resets(&mut full), vec![(peer(9, 9), id(5000), BUSY)]);
}

#[test]
fn a_finished_connection_lingers_outside_the_limit_and_answers_a_repeated_fin() {
    let mut ep = endpoint(|c| {
        c.max_connections = 1;
        c.max_lingering = 2;
    });
    let a = peer(2, 1);
    for k in 0..3 {
        let now = at(10 * u64::from(k));
        assert_eq!(syn(&mut ep, now, a, k), Outcome::Accepted(None), "connection {k}");
        data(&mut ep, now, a, k, 0, 100, true);
        assert_eq!(end_finished(&mut ep), vec![id(k)]);
        while ep.connections_mut().any(|c| c.engine.engine().poll_transmit(now, &mut [0; 1500]).is_some()) {}
    }
    assert_eq!(ep.len(), (0, 2));
    assert_eq!(ep.counters().lingering_evicted, 1);
    // The repeated FIN of connection 2 reaches its lingering engine, which answers.
    assert_eq!(data(&mut ep, at(40), a, 2, 0, 100, true), Outcome::Known);
    let mut buf = [0u8; 1500];
    let answer = ep.connections_mut().find_map(|c| c.engine.engine().poll_transmit(at(40), &mut buf));
    let answer = answer.expect("the lingering connection answers");
    assert_eq!(parse_datagram(&buf[..answer.len]).unwrap().0.connection_id, id(2));
    // Connection 0 was dropped from the full table: its FIN is stray data now.
    assert_eq!(data(&mut ep, at(40), a, 0, 0, 100, true), Outcome::Stray);
    // The linger ends 10 s after the last datagram: connection 1 was
    // last heard at 10 ms, connection 2 at 40 ms.
    let linger = ep.config().linger;
    ep.poll_lingering(at(10) + linger - Duration::from_nanos(1));
    assert_eq!(ep.len().1, 2);
    assert!(ep.next_deadline().is_some_and(|t| t <= at(10) + linger));
    ep.poll_lingering(at(10) + linger);
    assert_eq!(ep.len().1, 1);
    ep.poll_lingering(at(40) + linger);
    assert_eq!(ep.len(), (0, 0));
}

#[test]
fn a_sealed_connection_opened_before_is_not_opened_again() {
    let mut ep = endpoint(|_| {});
    let a = peer(2, 1);
    let syn = sender_datagram(ProtocolId::Atp, Control::SYN, id(1), 0, &[]);
    assert_eq!(deliver(&mut ep, at(0), a, &syn, Some([1; 16])), Outcome::Accepted(None));
    ep.clear();
    assert_eq!(deliver(&mut ep, at(1), a, &syn, Some([1; 16])), Outcome::Replayed);
    // The same id from a new peer instance is a new connection.
    assert_eq!(deliver(&mut ep, at(2), a, &syn, Some([2; 16])), Outcome::Accepted(None));
    assert_eq!(ep.counters().replayed, 1);
}

/// Found by fuzzing the sealed open path: a replayed sealed data datagram
/// of a connection that is gone, from any address, is not answered (a
/// reset sealed afresh would only reach the address the replayer chose);
/// a plain one still draws a reset, as an unknown connection's data does.
#[test]
fn a_sealed_straggler_of_a_gone_connection_is_a_replay_not_answered() {
    let mut ep = endpoint(|_| {});
    let (a, stranger) = (peer(2, 1), peer(9, 9));
    let syn = sender_datagram(ProtocolId::Atp, Control::SYN, id(1), 0, &[]);
    let data = sender_datagram(ProtocolId::Atp, 0, id(1), 0, &[7; 100]);
    assert_eq!(deliver(&mut ep, at(0), a, &syn, Some([1; 16])), Outcome::Accepted(None));
    ep.clear();
    let _ = resets(&mut ep);
    for from in [a, stranger] {
        assert_eq!(deliver(&mut ep, at(1), from, &data, Some([1; 16])), Outcome::Replayed);
    }
    assert_eq!(ep.counters().replayed, 2);
    assert!(resets(&mut ep).is_empty());
    assert_eq!(deliver(&mut ep, at(1), stranger, &data, None), Outcome::Stray);
    assert_eq!(resets(&mut ep).len(), 1);
}

#[test]
fn the_reorder_budget_is_per_connection_and_shared() {
    let (per, total) = (100_000, 150_000);
    let mut ep = endpoint(|c| {
        c.max_reorder_bytes_per_connection = per;
        c.max_reorder_bytes = total;
    });
    let (a, b) = (peer(2, 1), peer(3, 1));
    syn(&mut ep, at(0), a, 1);
    syn(&mut ep, at(0), b, 2);
    for k in 1..200 {
        data(&mut ep, at(1), a, 1, k * 1000, 1000, false);
    }
    let a_held = ep.counters().reorder_bytes;
    assert!(a_held <= per && a_held > per - 2000, "{a_held}");
    for k in 1..200 {
        data(&mut ep, at(1), b, 2, k * 1000, 1000, false);
    }
    let c = ep.counters();
    assert!(c.reorder_bytes <= total && c.reorder_bytes > total - 2000, "{c:?}");
    assert_eq!(c.reorder_peak_bytes, c.reorder_bytes);
    assert!(c.dropped_over_buffer_limit > 200, "{c:?}");
    // A's hole fills: its bytes leave the budget, and B may hold more.
    data(&mut ep, at(2), a, 1, 0, 1000, false);
    assert_eq!(ep.counters().reorder_bytes, c.reorder_bytes - a_held);
    data(&mut ep, at(2), b, 2, 199_000, 1000, false);
    let after = ep.counters().reorder_bytes;
    assert!(after > c.reorder_bytes - a_held && after <= total);
    // Removing B gives its share back too.
    ep.remove(id(2)).unwrap();
    assert_eq!(ep.counters().reorder_bytes, 0);
}

/// The sequence each reset names (RFC 5961 §3): a reset answering a
/// datagram of no connection names that datagram's `seq`; a reset of a
/// connection the endpoint had names the next byte it expected.
#[test]
fn a_reset_names_the_sequence_its_sender_must_hold() {
    let mut ep = endpoint(|_| {});
    let named = |ep: &mut Ep| {
        let mut buf = [0u8; 1500];
        let r = ep.poll_reset(&mut buf).expect("a reset");
        parse_datagram(&buf[..r.len]).unwrap().0.ack
    };
    assert_eq!(data(&mut ep, at(0), peer(1, 1), 7, 4200, 100, false), Outcome::Stray);
    assert_eq!(named(&mut ep), 4200);
    assert_eq!(syn(&mut ep, at(0), peer(1, 1), 8), Outcome::Accepted(None));
    assert_eq!(data(&mut ep, at(1), peer(1, 1), 8, 0, 300, false), Outcome::Known);
    // Out of order: the connection still expects byte 300.
    assert_eq!(data(&mut ep, at(2), peer(1, 1), 8, 600, 100, false), Outcome::Known);
    let conn = ep.remove(id(8)).unwrap();
    ep.reset_connection(at(3), id(8), &conn, None, ());
    assert_eq!(named(&mut ep), 300);
}

/// Issue 26: a trickle cannot hold a slot. Past `stalled_after`, a
/// connection whose stream grew below `min_rate_bps` on average gives way
/// to a new one, the slowest first; one at the minimum rate does not.
#[test]
fn a_full_table_evicts_the_transfer_furthest_below_the_minimum_rate() {
    let mut ep = endpoint(|c| {
        c.max_connections = 3;
        c.min_rate_bps = 8_000;
    });
    let (a, b, c, d) = (peer(2, 1), peer(3, 1), peer(4, 1), peer(5, 1));
    for (from, k) in [(a, 1), (b, 2), (c, 3)] {
        assert_eq!(syn(&mut ep, at(0), from, k), Outcome::Accepted(None));
    }
    // Every second for 10 s: A sends 2000 bytes (16 kbit/s), B 500
    // (4 kbit/s), C 100 (800 bit/s). None ever stalls.
    for t in 0..10u64 {
        for (from, k, len) in [(a, 1, 2_000u64), (b, 2, 500), (c, 3, 100)] {
            data(&mut ep, at(t * 1000), from, k, t * len, len as usize, false);
        }
    }
    // C, the slowest, goes first; then B; A, above the minimum, stays.
    let outcome = syn(&mut ep, at(10_000), d, 4);
    let Outcome::Accepted(Some((victim, eviction))) = outcome else { panic!("{outcome:?}") };
    let ten = Duration::from_secs(10);
    assert_eq!((victim, eviction), (id(3), Eviction::TooSlow { delivered: 1_000, age: ten }));
    // D and E below are new, with 10 kB at once: far above the minimum.
    data(&mut ep, at(10_000), d, 4, 0, 10_000, false);
    let outcome = syn(&mut ep, at(10_000), peer(6, 1), 5);
    assert!(matches!(outcome, Outcome::Accepted(Some((v, Eviction::TooSlow { .. }))) if v == id(2)), "{outcome:?}");
    data(&mut ep, at(10_000), peer(6, 1), 5, 0, 10_000, false);
    // A (16 kbit/s), D and E (80 Mbit/s over their 1 ms) stay: refused.
    assert_eq!(syn(&mut ep, at(10_000), peer(7, 1), 6), Outcome::Refused);
}

/// Addresses of one /24 (IPv4) or /64 (IPv6) share
/// `max_connections_per_prefix`; only their own connections give way.
#[test]
fn one_prefix_gets_its_share_and_only_its_own_connections_give_way() {
    let v4 = |net: u8, host: u8| SocketAddr::from(([10, 0, net, host], 5000));
    assert_eq!(v4(1, 1).prefix(), v4(1, 200).prefix());
    assert_ne!(v4(1, 1).prefix(), v4(2, 1).prefix());
    let v6 = |a: u16, z: u16| SocketAddr::from(([0xfd00, 0, 0, a, 0, 0, 0, z], 5000));
    assert_eq!(v6(1, 1).prefix(), v6(1, 9).prefix());
    assert_ne!(v6(1, 1).prefix(), v6(2, 1).prefix());
    let mapped = SocketAddr::from((std::net::Ipv4Addr::new(10, 0, 1, 7).to_ipv6_mapped(), 5000));
    assert_eq!(mapped.prefix(), v4(1, 1).prefix(), "an IPv4-mapped address is its IPv4 /24");

    let mut ep = endpoint(|c| {
        c.max_connections = 10;
        c.max_connections_per_peer = 2;
        c.max_connections_per_prefix = 3;
        c.min_rate_bps = 0;
    });
    for (k, host) in [(1, 1), (2, 2), (3, 3)] {
        assert_eq!(syn(&mut ep, at(0), v4(1, host), k), Outcome::Accepted(None));
        data(&mut ep, at(0), v4(1, host), k, 0, 10, false);
    }
    // A fourth address of 10.0.1.0/24: refused; another /24 gets in.
    assert_eq!(syn(&mut ep, at(1), v4(1, 4), 4), Outcome::Refused);
    assert_eq!(syn(&mut ep, at(1), v4(2, 4), 5), Outcome::Accepted(None));
    // The /24's own half-open connection gives way to it.
    ep.remove(id(3));
    assert_eq!(syn(&mut ep, at(2), v4(1, 5), 6), Outcome::Accepted(None));
    assert_eq!(
        syn(&mut ep, at(1003), v4(1, 6), 7),
        Outcome::Accepted(Some((id(6), Eviction::HalfOpen { idle: Duration::from_millis(1001) })))
    );
}

/// A trickle that reconnects gives way as soon as its average since its
/// SYN falls below the minimum rate: no age spares it.
#[test]
fn a_fresh_trickle_gives_way_once_its_average_falls_below_the_minimum() {
    let mut ep = endpoint(|c| c.max_connections = 1);
    assert_eq!(syn(&mut ep, at(0), peer(2, 1), 1), Outcome::Accepted(None));
    data(&mut ep, at(0), peer(2, 1), 1, 0, 60, false);
    // 60 bytes in 50 ms: 9.6 kbit/s, above 8 kbit/s.
    assert_eq!(syn(&mut ep, at(50), peer(3, 1), 2), Outcome::Refused);
    // In 100 ms: 4.8 kbit/s.
    let outcome = syn(&mut ep, at(100), peer(3, 1), 3);
    let evicted = Eviction::TooSlow { delivered: 60, age: Duration::from_millis(100) };
    assert_eq!(outcome, Outcome::Accepted(Some((id(1), evicted))));
    assert_eq!(evicted.to_string(), "evicted for a new transfer: 60 bytes in 0.100 s, below the minimum rate");
}
