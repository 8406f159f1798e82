//! Unit tests: each equation of seed 004 §III.C.2 pinned to hand-computed
//! numbers, and each EGN rule of §III.C.1 driven with hand-made datagrams.

use super::*;
use crate::engine::{Engine, EngineEvent, FailReason, PathInfo};
use crate::harness::drain;
use crate::wire::{Control, ProtocolId, Repr};
use meshbed_core::{Duration, Instant};

const CONN: u32 = 0xa000_0001;

fn ms(x: u64) -> Instant {
    Instant::from_nanos(x * 1_000_000)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
}

// ---- equations ----

#[test]
fn eq3_link_loss_from_etx() {
    assert!(close(link_loss_from_etx(1.25), 0.2));
    assert!(close(link_loss_from_etx(2.0), 0.5));
    assert_eq!(link_loss_from_etx(1.0), 0.0);
    // No measurement is no loss.
    assert_eq!(link_loss_from_etx(0.5), 0.0);
    assert_eq!(link_loss_from_etx(f64::NAN), 0.0);
}

#[test]
fn eq4_p_max_is_the_worst_link() {
    assert!(close(max_link_loss([1.0, 1.25, 2.0, 1.1]), 0.5));
    assert!(close(max_link_loss([1.25]), 0.2));
    assert_eq!(max_link_loss([]), 0.0);
}

// b = 8 Mbit/s is one byte per microsecond: s_data = 1000 B takes 1000 us,
// s_EGN = 200 B 200 us.
const B: u64 = 8_000_000;

#[test]
fn eq7_queueing_delay() {
    // RTT 20 ms over 5 hops: t_q = ½(4000 − 1200) us = 1400 us.
    assert!(close(queueing_delay_s(0.020, 5, B, 1000, 200), 1400e-6));
    // An RTT below the transmission times alone: clamped at 0.
    assert_eq!(queueing_delay_s(0.001, 5, B, 1000, 200), 0.0);
}

#[test]
fn eq8_fhd_four_hops_and_both_forms_agree() {
    // 4 (t_q + s_data/b) = 4 (1400 + 1000) us = 9600 us.
    let fhd = fhd_s(0.020, 5, B, 1000, 200);
    assert!(close(fhd, 9600e-6));
    // The printed right-hand side, 2 (RTT/h + (s_data − s_EGN)/b).
    assert!(close(fhd, 2.0 * (0.020 / 5.0 + (1000.0 - 200.0) / 1e6)));
    // h = 8 still uses four hops: 2 (2500 + 800) us = 6600 us.
    assert!(close(fhd_s(0.020, 8, B, 1000, 200), 6600e-6));
}

#[test]
fn eq8_paths_shorter_than_four_hops_use_the_h_hop_delay() {
    // h = 2, RTT 8 ms: t_q = ½(4000 − 1200) = 1400 us; 2 (1400 + 1000) us.
    assert!(close(fhd_s(0.008, 2, B, 1000, 200), 4800e-6));
    // h = 1 (no routing module), RTT 4 ms: 1 (1400 + 1000) us.
    assert!(close(fhd_s(0.004, 1, B, 1000, 200), 2400e-6));
    // h = 0 counts as one hop.
    assert!(close(fhd_s(0.004, 0, B, 1000, 200), 2400e-6));
    // Clamped t_q: only the transmission time, 4 × 1000 us.
    assert!(close(fhd_s(0.001, 5, B, 1000, 200), 4000e-6));
}

#[test]
fn eq9_rate_with_p_max() {
    // 1 / (9.6 ms × 1.5) = 1 / 14.4 ms.
    assert!(close(rate_pps(9600e-6, 0.5), 1.0 / 0.0144));
    assert!(close(rate_pps(9600e-6, 0.0), 1.0 / 0.0096));
}

#[test]
fn eq10_ewma_sequence() {
    let a = fhd_average_s(None, 0.010, 0.7);
    assert!(close(a, 0.010));
    let b = fhd_average_s(Some(a), 0.020, 0.7);
    assert!(close(b, 0.013));
    let c = fhd_average_s(Some(b), 0.020, 0.7);
    assert!(close(c, 0.0151));
}

// ---- engines ----

fn config() -> MtlConfig {
    MtlConfig { max_payload: 100, trace: true, ..MtlConfig::default() }
}

/// Runs the engine's own timers from `from` up to `until`, collecting what
/// it sends with the time it sent it.
fn run(engine: &mut impl Engine, from: Instant, until: Instant) -> Vec<(Instant, Repr, Vec<u8>)> {
    let mut out: Vec<_> = drain(engine, from).into_iter().map(|(r, d)| (from, r, d)).collect();
    let mut last = from;
    while let Some(t) = engine.poll_timeout() {
        if t > until {
            break;
        }
        assert!(t >= last, "poll_timeout went backwards");
        last = t;
        engine.handle_timeout(t);
        out.extend(drain(engine, t).into_iter().map(|(r, d)| (t, r, d)));
        assert!(out.len() < 100_000);
    }
    out
}

fn events(engine: &mut impl Engine) -> Vec<EngineEvent> {
    std::iter::from_fn(|| engine.poll_event()).collect()
}

fn sender_packet(control: u8, seq: u64, payload: &[u8]) -> Vec<u8> {
    crate::harness::datagram(ProtocolId::Tcp, control, CONN, seq, 0, payload)
}

fn egn(control: u8, echo_seq: u64, ack: u64, gaps: &[(u64, u64)]) -> Vec<u8> {
    let repr = Repr {
        protocol: ProtocolId::Tcp,
        control: Control(Control::SACK_OPT | control),
        hop_count: 0,
        connection_id: CONN,
        seq: echo_seq,
        ack,
        d_max_us: 0,
        d_s_us: 0,
        sack_blocks: gaps.to_vec(),
        payload_len: 0,
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf);
    buf
}

fn data_seqs(sent: &[(Instant, Repr, Vec<u8>)]) -> Vec<u64> {
    sent.iter().filter(|(_, _, d)| !d.is_empty()).map(|(_, r, _)| r.seq).collect()
}

#[test]
fn a_gap_makes_an_egn_naming_it() {
    let mut r = MtlReceiver::new(config(), CONN, ms(0));
    r.handle_input(ms(0), &sender_packet(Control::SYN | Control::SACK_REQ, 0, &[]));
    let answer = drain(&mut r, ms(0));
    assert_eq!(answer.len(), 1);
    assert!(answer[0].0.control.contains(Control::SACK_OPT | Control::SACK_REQ));
    r.handle_input(ms(1), &sender_packet(0, 0, &[1; 100]));
    assert!(drain(&mut r, ms(1)).is_empty(), "in-order data needs no EGN");
    r.handle_input(ms(2), &sender_packet(0, 200, &[3; 100]));
    let out = drain(&mut r, ms(2));
    assert_eq!(out.len(), 1, "a new gap makes one EGN at once");
    let (repr, _) = &out[0];
    assert!(repr.control.contains(Control::SACK_OPT) && !repr.control.contains(Control::SACK_REQ));
    assert_eq!((repr.ack, repr.sack_blocks.clone()), (100, vec![(100, 200)]));
    assert_eq!(r.stats().feedback_packets, 2);
}

#[test]
fn egns_are_rate_limited_cumulative_and_repeated_while_a_gap_stays_open() {
    let c = MtlConfig {
        egn_min_interval: Duration::from_millis(5),
        egn_repeat_interval: Duration::from_millis(100),
        ..config()
    };
    let mut r = MtlReceiver::new(c, CONN, ms(0));
    r.handle_input(ms(0), &sender_packet(0, 0, &[1; 100]));
    r.handle_input(ms(0), &sender_packet(0, 200, &[1; 100]));
    assert_eq!(drain(&mut r, ms(0)).len(), 1);
    // A second gap 1 ms later waits for the minimum interval ...
    r.handle_input(ms(1), &sender_packet(0, 400, &[1; 100]));
    assert!(drain(&mut r, ms(1)).is_empty());
    assert_eq!(r.poll_timeout(), Some(ms(5)));
    // ... and the EGN then names both gaps.
    let out = run(&mut r, ms(1), ms(5));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].1.sack_blocks, vec![(100, 200), (300, 400)]);
    // Unfilled, the gaps are reported again 100 ms after the last EGN.
    let out = run(&mut r, ms(5), ms(105));
    assert_eq!(out.iter().map(|(t, r, _)| (*t, r.sack_blocks.len())).collect::<Vec<_>>(), vec![(ms(105), 2)]);
    // Filled, nothing more is sent.
    r.handle_input(ms(106), &sender_packet(0, 100, &[1; 100]));
    r.handle_input(ms(106), &sender_packet(0, 300, &[1; 100]));
    assert!(run(&mut r, ms(106), ms(1000)).is_empty());
    assert_eq!(r.ack(), 500);
}

#[test]
fn an_explicit_request_is_answered_at_once_and_reveals_a_tail_gap() {
    let mut r = MtlReceiver::new(config(), CONN, ms(0));
    r.handle_input(ms(0), &sender_packet(0, 0, &[1; 100]));
    // The sender says it sent everything below 300: [100, 300) is missing.
    r.handle_input(ms(1), &sender_packet(Control::SACK_REQ, 300, &[]));
    let out = drain(&mut r, ms(1));
    assert_eq!(out.len(), 1);
    let repr = &out[0].0;
    assert!(repr.control.contains(Control::SACK_REQ));
    assert_eq!((repr.seq, repr.ack, repr.sack_blocks.clone()), (300, 100, vec![(100, 300)]));
}

/// A sender of `len` bytes connected at 10 ms with an RTT sample of 10 ms.
fn connected_sender(c: MtlConfig, len: usize) -> MtlSender {
    let mut s = MtlSender::new(c, CONN, vec![7; len], ms(0));
    let syn = drain(&mut s, ms(0));
    assert!(syn[0].0.control.contains(Control::SYN | Control::SACK_REQ));
    s.handle_input(ms(10), &egn(Control::SACK_REQ, 0, 0, &[]));
    assert_eq!(s.state(), MtlSenderState::Established);
    assert_eq!(s.srtt(), Some(Duration::from_millis(10)));
    s
}

#[test]
fn an_egn_retransmits_exactly_its_gaps_once_per_rtt() {
    let mut s = connected_sender(config(), 1000);
    let sent = run(&mut s, ms(10), ms(200));
    assert_eq!(data_seqs(&sent), (0..10).map(|k| k * 100).collect::<Vec<_>>());
    let t = ms(300);
    s.handle_input(t, &egn(0, 1000, 300, &[(300, 400), (600, 700)]));
    // Paced at the rate (one packet per ≈ 5 ms here).
    let retx = run(&mut s, t, t + Duration::from_millis(15));
    assert_eq!(data_seqs(&retx), vec![300, 600]);
    assert_eq!(s.stats().retransmissions, 2);
    assert_eq!(s.bytes_acked(), 300);
    // The same gaps again before the retransmissions could have arrived
    // (SRTT 10 ms): nothing is sent again.
    let t2 = t + Duration::from_millis(8);
    s.handle_input(t2, &egn(0, 1000, 300, &[(300, 400), (600, 700)]));
    assert!(data_seqs(&run(&mut s, t2, t2 + Duration::from_millis(1))).is_empty());
    // After one RTT they may go again.
    let t3 = t + Duration::from_millis(40);
    s.handle_input(t3, &egn(0, 1000, 300, &[(300, 400)]));
    assert_eq!(data_seqs(&run(&mut s, t3, t3 + Duration::from_millis(1))), vec![300]);
}

#[test]
fn a_full_buffer_holds_a_packet_and_requests_an_egn_which_releases_it() {
    let c = MtlConfig { send_buffer_bytes: 300, ..config() };
    let mut s = connected_sender(c, 1000);
    let sent = run(&mut s, ms(10), ms(200));
    assert_eq!(data_seqs(&sent), vec![0, 100, 200], "the buffer holds three packets");
    assert!(s.is_holding());
    let requests: Vec<_> =
        sent.iter().filter(|(_, r, d)| d.is_empty() && r.control.contains(Control::SACK_REQ)).collect();
    assert!(!requests.is_empty(), "an explicit EGN request");
    assert!(requests.iter().all(|(_, r, _)| r.seq == 300));
    // No EGN came within the buffer's lifetime: the first request goes
    // right after the third packet.
    let third_at = sent.iter().find(|(_, r, d)| r.seq == 200 && !d.is_empty()).unwrap().0;
    assert_eq!(requests[0].0, third_at);
    let t = ms(300);
    s.handle_input(t, &egn(Control::SACK_REQ, 300, 300, &[]));
    assert_eq!(s.buffered_bytes(), 0);
    let after = run(&mut s, t, t);
    assert_eq!(data_seqs(&after), vec![300], "the held packet goes at once");
}

#[test]
fn a_silent_peer_is_reported_once_then_given_up() {
    let c = MtlConfig { unresponsive_after: Duration::from_secs(1), idle_timeout: Duration::from_secs(3), ..config() };
    let mut s = MtlSender::new(c, CONN, vec![1; 500], ms(0));
    let _ = run(&mut s, ms(0), ms(5000));
    let ev = events(&mut s);
    let unresponsive = ev.iter().filter(|e| **e == EngineEvent::PeerUnresponsive).count();
    assert_eq!(unresponsive, 1, "{ev:?}");
    let failed_at = ev.iter().position(|e| matches!(e, EngineEvent::Failed(FailReason::PeerUnreachable { .. })));
    let unresponsive_at = ev.iter().position(|e| *e == EngineEvent::PeerUnresponsive);
    assert!(unresponsive_at < failed_at && failed_at.is_some(), "{ev:?}");
    assert!(s.is_closed());
}

#[test]
fn path_info_sets_h_b_and_p_max() {
    let mut s = connected_sender(config(), 1000);
    let fhd = s.fhd_avg().expect("the SYN gave a sample").as_secs_f64();
    // h = 1, b = 54 Mbit/s, s_data = 164 B, s_EGN = 64 B, RTT 10 ms.
    let expected = fhd_s(0.010, 1, 54_000_000, 164, 64);
    assert!((fhd - expected).abs() < 1e-9, "{fhd} vs {expected}");
    s.handle_path_info(ms(11), PathInfo { hop_count: 5, max_link_loss: 0.5, link_rate_bps: B });
    assert!((s.interval().as_secs_f64() - 1.5 * fhd).abs() < 1e-8);
    // A second sample uses h = 5 and b = 8 Mbit/s (eq. 10 with α = 0.7).
    let sent = run(&mut s, ms(11), ms(12));
    let probe = sent.iter().find(|(_, r, _)| r.control.contains(Control::SACK_REQ)).expect("an RTT probe");
    let (probe_at, probe_seq) = (probe.0, probe.1.seq);
    s.handle_input(probe_at + Duration::from_millis(20), &egn(Control::SACK_REQ, probe_seq, 0, &[]));
    let sample = fhd_s(0.020, 5, B, 164, 64);
    let avg = s.fhd_avg().unwrap().as_secs_f64();
    assert!((avg - (0.7 * fhd + 0.3 * sample)).abs() < 1e-8, "{avg}");
}

#[test]
fn a_transfer_ends_only_when_an_egn_answers_the_fin_with_every_byte() {
    let mut s = connected_sender(config(), 250);
    let sent = run(&mut s, ms(10), ms(100));
    let fin = sent.iter().find(|(_, r, _)| r.control.contains(Control::FIN)).expect("a FIN");
    assert_eq!(fin.1.seq, 250);
    // An answer naming a gap does not finish the transfer.
    s.handle_input(ms(101), &egn(Control::FIN, 250, 100, &[(100, 200)]));
    assert_eq!(s.state(), MtlSenderState::Established);
    s.handle_input(ms(150), &egn(Control::FIN, 250, 250, &[]));
    assert_eq!(s.state(), MtlSenderState::Finished);
    assert!(events(&mut s).contains(&EngineEvent::Finished));
}

#[test]
fn an_egn_about_bytes_never_sent_is_a_violation() {
    let mut s = connected_sender(config(), 1000);
    s.handle_input(ms(11), &egn(0, 0, 900, &[]));
    assert_eq!((s.bytes_acked(), s.stats().protocol_violations), (0, 1));
}

#[test]
fn requests_before_the_answer_leaves_share_one_answer() {
    let mut r = MtlReceiver::new(config(), CONN, ms(0));
    for seq in [0, 100, 200] {
        r.handle_input(ms(1), &sender_packet(Control::SACK_REQ, seq, &[1; 100]));
    }
    let out = drain(&mut r, ms(1));
    assert_eq!(out.len(), 1, "one cumulative answer");
    assert_eq!((out[0].0.seq, out[0].0.ack), (200, 300), "echoing the latest request");
}

/// On a host (`host_resolution`), b grows with what the path delivered
/// and the RTT's share below the host's resolution is no queueing: the
/// rate rises far past the configured b; the sending buffer still bounds
/// what is in flight, so a burst at one instant stops at it.
#[test]
fn on_a_host_the_rate_follows_delivery_and_the_buffer_still_bounds_a_burst() {
    let c = MtlConfig {
        host_resolution: Duration::from_micros(250),
        link_rate_bps: 8_000_000,
        send_buffer_bytes: 2_000,
        // As on a host: what fell due between two wake-ups goes at once.
        pacing_burst: Duration::from_millis(1),
        ..config()
    };
    let plain = 8_000_000.0 / (c.data_packet_bytes() as f64 * 8.0);
    // Round trips of 200 µs, below the host's resolution: no queueing. The
    // SYN's answer only starts SRTT; the first data packet's probe gives FHD.
    let mut s = MtlSender::new(c, CONN, vec![7; 10_000_000], ms(0));
    let _ = drain(&mut s, ms(0));
    let us = |x: u64| Instant::from_nanos(x * 1_000);
    s.handle_input(us(200), &egn(Control::SACK_REQ, 0, 0, &[]));
    assert_eq!(s.fhd_avg(), None, "a host's SYN gives no FHD");
    let first = drain(&mut s, us(200));
    assert!(first[0].0.control.contains(Control::SACK_REQ), "the first data packet probes");
    s.handle_input(us(400), &egn(Control::SACK_REQ, 0, 100, &[]));
    // One packet delivered in 200 µs: b is the configured one or twice that
    // delivery (10,000 packets/s), not more.
    assert!(s.rate_pps() >= plain && s.rate_pps() <= 10_000.0 + 1e-6, "{} pps", s.rate_pps());
    // Twenty packets in flight at most (2,000 bytes of 100-byte packets),
    // however fast the rate: a burst at one instant stops there.
    let burst = drain(&mut s, ms(10));
    assert!(burst.len() <= 22, "{} datagrams at one instant", burst.len());
    // Every 50 µs the receiver acknowledges everything sent: the buffer
    // (2,000 bytes) per 50 µs is 320 Mbit/s, 40 times b, if the rate lets
    // the sender fill it.
    let mut t = ms(10);
    for _ in 0..2_000 {
        t += Duration::from_micros(50);
        let sent_end = s.bytes_acked() + s.buffered_bytes();
        s.handle_input(t, &egn(0, 0, sent_end, &[]));
        let _ = drain(&mut s, t);
    }
    assert!(s.rate_pps() > 10.0 * plain, "rate {} pps against b's {plain}", s.rate_pps());
    assert!(s.bytes_acked() > 500_000, "{} bytes acknowledged in 100 ms", s.bytes_acked());
}

/// A sender whose buffer fills at the very instant an EGN arrives asks for
/// the next EGN once, not in a loop: an EGN at the request's own instant is
/// not its answer.
#[test]
fn a_buffer_filled_at_an_egns_instant_asks_once() {
    // A 100 Gbit/s b and a 1 µs round trip: a packet every half µs.
    let c = MtlConfig {
        send_buffer_bytes: 300,
        link_rate_bps: 100_000_000_000,
        pacing_burst: Duration::from_millis(1),
        ..config()
    };
    let mut s = MtlSender::new(c, CONN, vec![7; 100_000], ms(0));
    let _ = drain(&mut s, ms(0));
    // The SYN's answer: the first packet.
    let answered = Instant::from_nanos(1_000);
    s.handle_input(answered, &egn(Control::SACK_REQ, 0, 0, &[]));
    assert_eq!(data_seqs(&run(&mut s, answered, answered)), vec![0]);
    // Its EGN 400 µs later: what fell due since goes at once (within the
    // 1 ms burst), until the buffer (three packets) is full at that
    // instant; then one request.
    let egn_at = answered + Duration::from_micros(400);
    s.handle_input(egn_at, &egn(0, 0, 100, &[]));
    let out = drain(&mut s, egn_at);
    let requests = out.iter().filter(|(r, d)| d.is_empty() && r.control.contains(Control::SACK_REQ)).count();
    assert_eq!((out.len() - requests, requests), (3, 1));
}

/// On a host the sender asks for an EGN early (`early_request_fill`): the
/// first transmission that fills half the buffer carries SACK-REQ, once
/// until an EGN answers, and the answer lets it ask again at the next half
/// buffer; without it only a full buffer asks (§III.C.1).
#[test]
fn an_early_request_asks_at_half_the_buffer_once_until_answered() {
    let flagged = |out: &[(Instant, Repr, Vec<u8>)]| -> Vec<u64> {
        out.iter()
            .filter(|(_, r, d)| !d.is_empty() && r.control.contains(Control::SACK_REQ))
            .map(|(_, r, _)| r.seq)
            .collect()
    };
    for (fill, first, second) in [(0.5, vec![500], vec![1100]), (0.0, vec![], vec![])] {
        // Ten 100-byte packets fill the buffer; a 100 Gbit/s b paces them
        // within the 1 ms burst.
        let c = MtlConfig {
            send_buffer_bytes: 1_000,
            link_rate_bps: 100_000_000_000,
            pacing_burst: Duration::from_millis(1),
            early_request_fill: fill,
            ..config()
        };
        let mut s = MtlSender::new(c, CONN, vec![7; 100_000], ms(0));
        let _ = drain(&mut s, ms(0));
        let answered = Instant::from_nanos(1_000);
        s.handle_input(answered, &egn(Control::SACK_REQ, 0, 0, &[]));
        assert_eq!(data_seqs(&run(&mut s, answered, answered)), vec![0], "the first packet (an RTT probe)");
        let t = answered + Duration::from_micros(400);
        s.handle_input(t, &egn(Control::SACK_REQ, 0, 100, &[]));
        let out = run(&mut s, t, t + Duration::from_millis(1));
        assert_eq!(data_seqs(&out).len(), 10, "fill {fill}: the buffer's ten packets");
        assert_eq!(flagged(&out), first, "fill {fill}");
        // The answer releases five packets: the next one asks at once.
        let t = t + Duration::from_millis(2);
        s.handle_input(t, &egn(Control::SACK_REQ, 500, 600, &[]));
        let out = run(&mut s, t, t + Duration::from_millis(1));
        assert_eq!(data_seqs(&out), vec![1100, 1200, 1300, 1400, 1500], "fill {fill}");
        assert_eq!(flagged(&out), second, "fill {fill}");
    }
}
