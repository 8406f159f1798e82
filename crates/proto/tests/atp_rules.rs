//! Unit tests pinning every ATP rule to the numbers in the documents
//! (seed 002 §4, seed 001 §2–3, seed 000 §V.A). Each test drives an engine
//! with hand-made datagrams and checks what it sends back.

use meshbed_core::{Duration, Instant};
use meshbed_proto::atp::{rate_adjustment, AtpConfig, AtpReceiver, AtpSender, RatePhase, ReceiverState, SenderState};
use meshbed_proto::engine::TraceSample;
use meshbed_proto::harness::drain;
use meshbed_proto::relay::{EtaRule, Relay, RelayConfig};
use meshbed_proto::wire::{self, Control, ProtocolId, Repr, HEADER_LEN};
use meshbed_proto::{Engine, EngineEvent, FailReason};

const CONN: u32 = 0x00a7_0001;
const MSS: u64 = 1436;

fn ms(x: u64) -> Instant {
    Instant::from_nanos(x * 1_000_000)
}
fn us(x: u64) -> Instant {
    Instant::from_nanos(x * 1_000)
}

fn events(engine: &mut impl Engine) -> Vec<EngineEvent> {
    std::iter::from_fn(|| engine.poll_event()).collect()
}

fn feedback(control: u8, ack: u64, d_avg_us: u32, blocks: &[(u64, u64)]) -> Vec<u8> {
    let repr = Repr {
        protocol: ProtocolId::Atp,
        control: Control(Control::SACK_OPT | Control::ACK | control),
        hop_count: 0,
        connection_id: CONN,
        seq: 0,
        ack,
        d_max_us: d_avg_us,
        d_s_us: 0,
        sack_blocks: blocks.to_vec(),
        payload_len: 0,
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf);
    buf
}

fn data_packet(control: u8, seq: u64, len: usize, d_max_us: u32, d_s_us: u32) -> Vec<u8> {
    let repr = Repr {
        protocol: ProtocolId::Atp,
        control: Control(control),
        hop_count: 2,
        connection_id: CONN,
        seq,
        ack: 0,
        d_max_us,
        d_s_us,
        sack_blocks: vec![],
        payload_len: len,
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf);
    for (i, b) in buf[HEADER_LEN..].iter_mut().enumerate() {
        *b = (seq as usize + i) as u8;
    }
    buf
}

/// A default-preset sender connected at t = 10 ms with D = 10 ms (S = 100
/// packets/s); its SYN went out at t = 0, so the quick-start RTT is 10 ms.
fn connected_sender(config: AtpConfig, len: usize) -> AtpSender {
    let mut s = AtpSender::new(config, CONN, vec![0x5a; len], Instant::ZERO);
    drain(&mut s, Instant::ZERO);
    s.handle_input(ms(10), &feedback(Control::SYN, 0, 10_000, &[]));
    events(&mut s);
    s
}

// ---------------------------------------------------------------- presets

#[test]
fn presets_match_the_documents() {
    let d = AtpConfig::default();
    // seed 001 Table 2.1.
    assert_eq!(d.epoch, Duration::from_secs(1));
    assert_eq!((d.alpha, d.beta, d.eta, d.phi, d.kappa), (0.75, 0.85, 3.0, 0.1, 0.2));
    assert_eq!(d.max_sack_blocks, 20);
    assert_eq!(d.max_payload, 1436);
    assert_eq!(d.feedback_timeout(), Duration::from_millis(1_100));
    assert_eq!(d.sack_more_after(), Duration::from_millis(500));
    // seed 000 §V.A.2.
    let a = AtpConfig::aggressive();
    assert_eq!((a.epoch, a.kappa), (Duration::from_millis(40), 0.5));
    assert!(a.adaptive.is_none());
    // seed 000 §V.A.3.
    let ad = AtpConfig::adaptive();
    assert_eq!((ad.epoch, ad.kappa), (Duration::from_millis(40), 0.5));
    let trig = ad.adaptive.clone().unwrap();
    assert_eq!((trig.drops, trig.consecutive), (2, 10));
    assert_eq!(ad.relay_config().eta, EtaRule::ByHopCount { base: 3.0, per_hop: 0.5 });
    assert_eq!(d.relay_config().eta, EtaRule::Fixed(3.0));
}

// ---------------------------------------------------------------- rate rules

#[test]
fn rate_rule_boundaries() {
    // seed 002 §4.3.2: increase only when R > (1 + φ)·S.
    let s = 100.0;
    assert_eq!(rate_adjustment(0.1, 0.2, s, 110.0).0, RatePhase::Maintain);
    assert_eq!(rate_adjustment(0.1, 0.2, s, 110.000_01).0, RatePhase::Increase);
    assert_eq!(rate_adjustment(0.1, 0.2, s, 100.0).0, RatePhase::Maintain);
    assert_eq!(rate_adjustment(0.1, 0.2, s, 99.999).0, RatePhase::Decrease);
}

#[test]
fn quick_start_sends_a_syn_probe_and_takes_the_answer_as_the_rate() {
    let mut s = AtpSender::new(AtpConfig::default(), CONN, vec![1; 10_000], Instant::ZERO);
    let out = drain(&mut s, Instant::ZERO);
    assert_eq!(out.len(), 1);
    let syn = &out[0].0;
    assert!(syn.control.contains(Control::SYN) && syn.control.contains(Control::SACK_REQ));
    assert_eq!((syn.seq, syn.payload_len, syn.connection_id), (0, 0, CONN));
    // No answer yet: the next probe waits an epoch (seed 002 §4.3.2).
    assert_eq!(s.poll_timeout(), Some(ms(1_000)));
    // The answer's D (no averaging) gives S = 1/D = 1/10 ms = 100 packets/s.
    s.handle_input(ms(10), &feedback(Control::SYN, 0, 10_000, &[]));
    let ev = events(&mut s);
    assert!(ev.contains(&EngineEvent::Connected));
    assert!(ev.contains(&EngineEvent::Trace(TraceSample::Ds { at: ms(10), d_s: Duration::from_millis(10) })));
    assert_eq!(s.state(), SenderState::Established);
    assert!((s.rate_pps() - 100.0).abs() < 1e-9);
    assert_eq!(s.rtt(), Some(Duration::from_millis(10)));
    // Data carries D_s (seed 000 §V.A.3) and is paced one per D_s.
    let out = drain(&mut s, ms(10));
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].0.seq, out[0].0.payload_len, out[0].0.d_s_us), (0, 1436, 10_000));
    assert!(!out[0].0.control.contains(Control::SACK_REQ));
    assert_eq!(s.poll_timeout(), Some(ms(20)));
    assert!(drain(&mut s, ms(20) - Duration::from_nanos(1)).is_empty());
    let out = drain(&mut s, ms(20));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0.seq, MSS);
}

#[test]
fn quick_start_with_zero_delay_uses_the_floor() {
    let mut s = AtpSender::new(AtpConfig::default(), CONN, vec![1; 10], Instant::ZERO);
    drain(&mut s, Instant::ZERO);
    s.handle_input(ms(1), &feedback(Control::SYN, 0, 0, &[]));
    assert_eq!(s.d_s(), AtpConfig::default().min_delay);
}

#[test]
fn feedback_one_and_a_half_times_the_rate_increases_by_kappa() {
    for (config, expect) in [(AtpConfig::default(), 110.0), (AtpConfig::aggressive(), 125.0)] {
        let mut s = connected_sender(config, 100_000);
        // R = 1/(6666.67 us): D is carried in whole microseconds.
        s.handle_input(ms(50), &feedback(0, 0, 6_667, &[]));
        let r = 1e6 / 6_667.0;
        let kappa = if expect == 110.0 { 0.2 } else { 0.5 };
        assert!((s.rate_pps() - (100.0 + kappa * (r - 100.0))).abs() < 1e-6);
        assert!((s.rate_pps() - expect).abs() < 0.01, "{}", s.rate_pps());
    }
}

#[test]
fn feedback_inside_the_threshold_maintains_the_rate() {
    let mut s = connected_sender(AtpConfig::default(), 100_000);
    // R ≈ 105 packets/s, inside [S, 1.1·S].
    s.handle_input(ms(50), &feedback(0, 0, 9_524, &[]));
    assert!((s.rate_pps() - 100.0).abs() < 1e-9);
    // R ≈ 109.9: still kept; R ≈ 110.2: increased.
    s.handle_input(ms(60), &feedback(0, 0, 9_099, &[]));
    assert!((s.rate_pps() - 100.0).abs() < 1e-9);
    s.handle_input(ms(70), &feedback(0, 0, 9_074, &[]));
    assert!(s.rate_pps() > 100.0);
}

#[test]
fn feedback_below_the_rate_drops_to_it() {
    let mut s = connected_sender(AtpConfig::default(), 100_000);
    s.handle_input(ms(50), &feedback(0, 0, 20_000, &[]));
    assert!((s.rate_pps() - 50.0).abs() < 1e-9);
    let ev = events(&mut s);
    assert!(
        ev.contains(&EngineEvent::Trace(TraceSample::DAvgReceived { at: ms(50), d_avg: Duration::from_millis(20) }))
    );
    assert!(ev.contains(&EngineEvent::Trace(TraceSample::Ds { at: ms(50), d_s: Duration::from_millis(20) })));
}

// ---------------------------------------------------------------- missing feedback

#[test]
fn missed_feedback_decreases_twice_then_restarts_quick_start() {
    let config = AtpConfig::default();
    // Tiny transfer so pacing does not matter; feedback expected 1.1 s after connect.
    let mut s = connected_sender(config, 100);
    drain(&mut s, ms(10));
    let first_deadline = ms(10) + Duration::from_millis(1_100);
    assert_eq!(s.poll_timeout().map(|t| t <= first_deadline), Some(true));
    // Early: nothing happens.
    s.handle_timeout(first_deadline - Duration::from_nanos(1));
    assert_eq!(s.missed_feedback(), 0);
    // One missed epoch: multiplicative decrease.
    s.handle_timeout(first_deadline);
    assert_eq!(s.missed_feedback(), 1);
    assert!((s.rate_pps() - 50.0).abs() < 1e-9);
    assert_eq!(s.state(), SenderState::Established);
    // Two: again.
    let second = first_deadline + Duration::from_millis(1_100);
    s.handle_timeout(second);
    assert_eq!(s.missed_feedback(), 2);
    assert!((s.rate_pps() - 25.0).abs() < 1e-9);
    assert_eq!(s.state(), SenderState::Established);
    // Three: quick-start again, a probe now and then one per epoch.
    let third = second + Duration::from_millis(1_100);
    s.handle_timeout(third);
    assert_eq!(s.state(), SenderState::Probing);
    let out = drain(&mut s, third);
    assert_eq!(out.len(), 1);
    assert!(out[0].0.control.contains(Control::SACK_REQ));
    assert!(drain(&mut s, third + Duration::from_millis(999)).is_empty());
    assert_eq!(drain(&mut s, third + Duration::from_millis(1_000)).len(), 1);
    // The answer's rate is taken as is, even a lower one (quick-start).
    let t = third + Duration::from_millis(1_010);
    s.handle_input(t, &feedback(0, 0, 40_000, &[]));
    assert_eq!(s.state(), SenderState::Established);
    assert!((s.rate_pps() - 25.0).abs() < 1e-9);
    assert_eq!(s.missed_feedback(), 0);
}

#[test]
fn probe_rides_on_the_next_in_sequence_data_packet() {
    let mut s = connected_sender(AtpConfig::default(), 100_000);
    drain(&mut s, ms(10)); // segment 0
    for k in 1..=3u64 {
        s.handle_timeout(ms(10) + Duration::from_millis(1_100 * k));
    }
    assert_eq!(s.state(), SenderState::Probing);
    let out = drain(&mut s, ms(3_400));
    assert_eq!(out.len(), 1);
    let (probe, data) = &out[0];
    assert!(probe.control.contains(Control::SACK_REQ));
    assert_eq!((probe.seq, data.len()), (MSS, 1436));
}

#[test]
fn silence_for_the_idle_timeout_fails_the_sender() {
    let config = AtpConfig::default();
    let mut s = AtpSender::new(config.clone(), CONN, vec![1; 10], Instant::ZERO);
    let mut now = Instant::ZERO;
    while !s.is_closed() {
        drain(&mut s, now);
        now = s.poll_timeout().expect("an open sender always has a deadline");
        s.handle_timeout(now);
    }
    assert_eq!(now, Instant::ZERO + config.idle_timeout);
    let ev = events(&mut s);
    assert!(ev.contains(&EngineEvent::Failed(FailReason::PeerUnreachable { silent_for: config.idle_timeout })));
    assert_eq!(s.poll_timeout(), None);
}

// ---------------------------------------------------------------- route failures (ELFN)

/// Seed 002 §4.3.3: a "route failed" notice sends the sender straight into
/// connection initiation: a probe at once, on the next in-sequence packet,
/// then one per epoch and nothing else; the rate is not cut; the answer to a
/// probe sets the rate on the new route.
#[test]
fn route_failure_notice_probes_on_the_next_data_packet_every_epoch() {
    use meshbed_proto::RouteNotice;
    let mut s = connected_sender(AtpConfig::default(), 1_000_000);
    let sent = drain(&mut s, ms(10));
    assert_eq!(sent.len(), 1, "one paced packet at 100 packets/s");
    let rate = s.rate_pps();
    s.handle_route_notice(ms(12), RouteNotice::Failed);
    assert_eq!(s.state(), SenderState::Probing);
    assert!(s.route_down());
    let probing = EngineEvent::Trace(TraceSample::Probing { at: ms(12), entered: true, route_failure: true });
    assert!(events(&mut s).contains(&probing));
    assert_eq!(s.rate_pps(), rate, "no decrease on a route failure (seed 002 §5.2)");
    let probe = drain(&mut s, ms(12));
    assert_eq!(probe.len(), 1);
    assert!(probe[0].0.control.contains(Control::SACK_REQ));
    assert_eq!((probe[0].0.seq, probe[0].1.len()), (MSS, 1436), "the next in-sequence segment");
    // Nothing until the next epoch, then the next probe on the next segment.
    for t in [20, 500, 1_011] {
        assert!(drain(&mut s, ms(t)).is_empty(), "{t} ms");
    }
    assert!(s.poll_timeout().is_some_and(|t| t <= ms(1_012)));
    let second = drain(&mut s, ms(1_012));
    assert_eq!(second.len(), 1);
    assert!(second[0].0.control.contains(Control::SACK_REQ));
    assert_eq!(second[0].0.seq, 2 * MSS);
    // Re-established: the next probe goes at once, not at the next epoch.
    s.handle_route_notice(ms(1_500), RouteNotice::Reestablished);
    assert!(!s.route_down());
    let third = drain(&mut s, ms(1_500));
    assert_eq!(third.len(), 1);
    assert!(third[0].0.control.contains(Control::SACK_REQ));
    // The answer over the new route sets the rate (quick-start), lower or not.
    s.handle_input(ms(1_520), &feedback(0, 0, 40_000, &[]));
    assert_eq!(s.state(), SenderState::Established);
    assert!((s.rate_pps() - 25.0).abs() < 1e-9);
    assert_eq!(s.route_failure_probes(), 1);
    let ended = EngineEvent::Trace(TraceSample::Probing { at: ms(1_520), entered: false, route_failure: false });
    assert!(events(&mut s).contains(&ended));
    assert_eq!(drain(&mut s, ms(1_520)).len(), 1, "paced data again");
}

/// The reactions the text leaves open are parameters: keep sending at the
/// old rate while probing, or ignore the notice altogether.
#[test]
fn route_failure_reaction_is_a_parameter() {
    use meshbed_proto::atp::RouteFailureReaction;
    use meshbed_proto::RouteNotice;
    let config = AtpConfig { route_failure: RouteFailureReaction::ProbeWhileSending, ..AtpConfig::default() };
    let mut s = connected_sender(config, 1_000_000);
    drain(&mut s, ms(10));
    s.handle_route_notice(ms(12), RouteNotice::Failed);
    let first = drain(&mut s, ms(12));
    assert_eq!(first.len(), 1);
    assert!(first[0].0.control.contains(Control::SACK_REQ));
    // Paced at 100 packets/s between probes, without SACK-REQ.
    let mut between = Vec::new();
    let mut t = ms(12);
    while t < ms(500) {
        t = s.poll_timeout().expect("pacing");
        s.handle_timeout(t);
        between.extend(drain(&mut s, t));
    }
    assert!((45..=50).contains(&between.len()), "{} packets", between.len());
    assert!(between.iter().all(|(r, _)| !r.control.contains(Control::SACK_REQ)));

    let config = AtpConfig { route_failure: RouteFailureReaction::Ignore, ..AtpConfig::default() };
    let mut s = connected_sender(config, 1_000_000);
    drain(&mut s, ms(10));
    s.handle_route_notice(ms(12), RouteNotice::Failed);
    assert_eq!(s.state(), SenderState::Established);
    assert_eq!(s.route_failure_probes(), 0);
    let out = drain(&mut s, ms(20));
    assert_eq!(out.len(), 1);
    assert!(!out[0].0.control.contains(Control::SACK_REQ));
}

/// While the route is down, silence is an outage: neither side gives up
/// before `route_outage_timeout`; once it is back, the idle timeout rules.
#[test]
fn a_route_outage_outlasts_the_idle_timeout() {
    use meshbed_proto::RouteNotice;
    let config = AtpConfig::default();
    let mut s = connected_sender(config.clone(), 1_000_000);
    s.handle_route_notice(ms(10), RouteNotice::Failed);
    let mut now = ms(10);
    while now < ms(10) + config.idle_timeout * 3 {
        drain(&mut s, now);
        now = s.poll_timeout().expect("probing");
        s.handle_timeout(now);
    }
    assert!(!s.is_closed(), "30 s of outage");
    // The route is back but the receiver stays silent: 30 s is more than
    // the idle timeout, so the next timer check gives up.
    s.handle_route_notice(now, RouteNotice::Reestablished);
    assert!(s.poll_timeout().is_some_and(|t| t <= now));
    s.handle_timeout(now);
    assert!(s.is_closed());
    assert!(events(&mut s).iter().any(|e| matches!(e, EngineEvent::Failed(FailReason::PeerUnreachable { .. }))));

    let mut r = established_receiver(config.clone());
    r.handle_route_notice(ms(20), RouteNotice::Failed);
    r.handle_timeout(ms(20) + config.idle_timeout * 2);
    assert!(!r.is_closed());
    r.handle_timeout(ms(0) + config.route_outage_timeout * 2);
    assert!(r.is_closed(), "gives up after the outage timeout");
}

// ---------------------------------------------------------------- reliability

#[test]
fn sack_holes_are_retransmitted_before_new_data() {
    let mut s = connected_sender(AtpConfig::default(), 100_000);
    for k in 0..6 {
        assert_eq!(drain(&mut s, ms(10 + 10 * k)).len(), 1);
    }
    // Receiver holds [0, 1436) and [2·1436, 6·1436): segment 1 is a hole.
    let t = ms(100);
    s.handle_input(t, &feedback(0, MSS, 10_000, &[(2 * MSS, 6 * MSS)]));
    assert_eq!(s.bytes_acked(), MSS);
    let out = drain(&mut s, t);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0.seq, MSS, "the hole goes before new data");
    assert!(events(&mut s)
        .iter()
        .any(|e| matches!(e, EngineEvent::Trace(TraceSample::Retransmit { seq, .. }) if *seq == MSS)));
    assert_eq!(s.stats().retransmissions, 1);
    // Then new data (segment 6), not the SACKed ones.
    let out = drain(&mut s, t + Duration::from_millis(10));
    assert_eq!(out[0].0.seq, 6 * MSS);
}

#[test]
fn a_hole_sent_less_than_an_rtt_ago_is_not_sent_again() {
    let mut s = connected_sender(AtpConfig::default(), 100_000);
    for k in 0..3 {
        drain(&mut s, ms(10 + 10 * k)); // segments 0, 1, 2 at 10, 20, 30 ms
    }
    // RTT is 10 ms: at 35 ms segment 2 (sent at 30 ms) cannot have been seen.
    s.handle_input(ms(35), &feedback(0, 0, 10_000, &[(MSS, 2 * MSS)]));
    assert_eq!(s.retransmit_queue_len(), 1, "only segment 0 is queued");
    let out = drain(&mut s, ms(40));
    assert_eq!(out[0].0.seq, 0);
}

#[test]
fn sack_more_retransmits_everything_unacknowledged() {
    let mut s = connected_sender(AtpConfig::default(), 5 * MSS as usize);
    for k in 0..5 {
        drain(&mut s, ms(10 + 10 * k));
    }
    // seed 001 §3.3: SACK-MORE, and the receiver holds only segment 3.
    let t = ms(600);
    s.handle_input(t, &feedback(Control::SACK_MORE, MSS, 10_000, &[(3 * MSS, 4 * MSS)]));
    let mut seqs = Vec::new();
    for k in 0..5 {
        seqs.extend(drain(&mut s, t + Duration::from_millis(10 * k)).iter().map(|(r, _)| r.seq));
    }
    assert_eq!(&seqs[..3], &[MSS, 2 * MSS, 4 * MSS]);
}

#[test]
fn the_sender_finishes_only_when_every_byte_is_acknowledged() {
    let len = 3 * MSS as usize;
    let mut s = connected_sender(AtpConfig::default(), len);
    for k in 0..4 {
        drain(&mut s, ms(10 + 10 * k));
    }
    // The FIN went out after the data.
    assert!(s.stats().datagrams_sent >= 5);
    // The receiver saw the FIN but misses segment 1: no Finished, and the hole
    // (including the tail after the last block) is queued.
    s.handle_input(ms(100), &feedback(Control::FIN, MSS, 10_000, &[(2 * MSS, 3 * MSS)]));
    assert!(!events(&mut s).contains(&EngineEvent::Finished));
    assert!(!s.is_closed());
    let out = drain(&mut s, ms(100));
    assert_eq!(out[0].0.seq, MSS);
    s.handle_input(ms(150), &feedback(Control::FIN, len as u64, 10_000, &[]));
    assert!(events(&mut s).contains(&EngineEvent::Finished));
    assert!(s.is_closed());
    assert_eq!(s.poll_timeout(), None);
    assert_eq!(s.stats().bytes_delivered, len as u64);
}

#[test]
fn stray_and_malformed_datagrams_are_counted_and_ignored() {
    let mut s = connected_sender(AtpConfig::default(), 1000);
    let before = s.rate_pps();
    let mut wrong_conn = feedback(0, 0, 1, &[]);
    wrong_conn[11] ^= 1;
    let mut tcp = feedback(0, 0, 1, &[]);
    tcp[0] = ProtocolId::Tcp as u8;
    s.handle_input(ms(20), &wrong_conn);
    s.handle_input(ms(20), &tcp);
    s.handle_input(ms(20), &[1, 2, 3]);
    s.handle_input(ms(20), &data_packet(0, 0, 10, 1, 1)); // not feedback
    assert_eq!(s.stats().dropped_datagrams, 4);
    assert_eq!(s.rate_pps(), before);
    let mut r = AtpReceiver::new(AtpConfig::default(), CONN, Instant::ZERO);
    r.handle_input(ms(1), &feedback(0, 0, 1, &[]));
    r.handle_input(ms(1), &[0xff; 40]);
    let mut other = data_packet(Control::SYN, 0, 0, 1, 1);
    other[8] = 9;
    r.handle_input(ms(1), &other);
    assert_eq!(r.stats().dropped_datagrams, 3);
    assert_eq!(r.state(), ReceiverState::Listening);
}

// ---------------------------------------------------------------- receiver

fn established_receiver(config: AtpConfig) -> AtpReceiver {
    let mut r = AtpReceiver::new(config, CONN, Instant::ZERO);
    r.handle_input(Instant::ZERO, &data_packet(Control::SYN | Control::SACK_REQ, 0, 0, 5_000, 0));
    drain(&mut r, Instant::ZERO);
    events(&mut r);
    r
}

#[test]
fn the_syn_is_answered_at_once_with_its_own_d_max() {
    let mut r = AtpReceiver::new(AtpConfig::default(), CONN, Instant::ZERO);
    r.handle_input(ms(3), &data_packet(Control::SYN | Control::SACK_REQ, 0, 0, 7_000, 0));
    let out = drain(&mut r, ms(3));
    assert_eq!(out.len(), 1);
    let fb = &out[0].0;
    let want = Control::SYN | Control::ACK | Control::SACK_OPT;
    assert_eq!(fb.control.0 & want, want);
    assert_eq!((fb.d_max_us, fb.ack, fb.connection_id), (7_000, 0, CONN));
    assert!(events(&mut r).contains(&EngineEvent::Connected));
}

#[test]
fn accept_builds_a_receiver_from_the_first_syn() {
    let syn = data_packet(Control::SYN | Control::SACK_REQ, 0, 0, 7_000, 0);
    let mut r = AtpReceiver::accept(AtpConfig::default(), ms(1), &syn).unwrap();
    assert_eq!((r.connection_id(), r.state()), (CONN, ReceiverState::Established));
    assert_eq!(drain(&mut r, ms(1)).len(), 1);
    assert!(AtpReceiver::accept(AtpConfig::default(), ms(1), &feedback(0, 0, 0, &[])).is_none());
    assert!(AtpReceiver::accept(AtpConfig::default(), ms(1), &[1; 10]).is_none());
}

#[test]
fn d_avg_is_an_ewma_with_beta_and_goes_out_each_epoch() {
    let mut r = established_receiver(AtpConfig::default()); // D_avg = 5 ms from the SYN
    r.handle_input(ms(100), &data_packet(0, 0, 1436, 10_000, 10_000));
    r.handle_input(ms(110), &data_packet(0, MSS, 1436, 20_000, 10_000));
    // β = 0.85: 0.85·(0.85·5 + 0.15·10) + 0.15·20 = 7.8875 ms.
    assert_eq!(r.d_avg(), Duration::from_micros(7_888) - Duration::from_nanos(500));
    // Data keeps coming (no SACK-MORE); 0.85·7.8875 + 0.15·20 = 9.704375 ms.
    r.handle_input(ms(550), &data_packet(0, 2 * MSS, 1436, 20_000, 10_000));
    // Nothing before the epoch ends (E = 1 s after the SYN) ...
    r.handle_timeout(ms(1_000) - Duration::from_nanos(1));
    assert!(drain(&mut r, ms(1_000) - Duration::from_nanos(1)).is_empty());
    // ... then feedback with D_avg and the cumulative ack.
    r.handle_timeout(ms(1_000));
    let out = drain(&mut r, ms(1_000));
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].0.d_max_us, out[0].0.ack), (9_704, 3 * MSS));
    assert!(!out[0].0.control.contains(Control::SACK_MORE));
    assert!(events(&mut r).iter().any(|e| matches!(e, EngineEvent::Trace(TraceSample::DAvgSent { .. }))));
    assert_eq!(r.poll_timeout().map(|t| t > ms(1_000)), Some(true));
}

#[test]
fn data_with_sack_req_is_answered_at_once_without_averaging() {
    let mut r = established_receiver(AtpConfig::default());
    r.handle_input(ms(10), &data_packet(0, 0, 100, 9_000, 1_000));
    r.handle_input(ms(20), &data_packet(Control::SACK_REQ, 100, 100, 30_000, 1_000));
    let out = drain(&mut r, ms(20));
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].0.d_max_us, out[0].0.ack), (30_000, 200));
}

#[test]
fn sack_blocks_list_the_first_twenty_holes() {
    let mut r = established_receiver(AtpConfig::default());
    // Segments 1, 3, 5, ..., 51 arrive: 26 holes (0, 2, 4, ...).
    for k in 0..26u64 {
        r.handle_input(ms(10), &data_packet(0, (2 * k + 1) * MSS, 1436, 1_000, 1_000));
    }
    r.handle_timeout(ms(1_000));
    let out = drain(&mut r, ms(1_000));
    let fb = &out[0].0;
    assert_eq!(fb.ack, 0);
    assert_eq!(fb.sack_blocks.len(), 20);
    for (k, &(s, e)) in fb.sack_blocks.iter().enumerate() {
        let k = k as u64;
        assert_eq!((s, e), ((2 * k + 1) * MSS, (2 * k + 2) * MSS));
    }
}

#[test]
fn sack_more_after_half_an_epoch_without_data() {
    let mut r = established_receiver(AtpConfig::default());
    r.handle_input(ms(100), &data_packet(0, 0, 1436, 1_000, 1_000));
    // E/2 = 500 ms after the last data.
    r.handle_timeout(ms(600) - Duration::from_nanos(1));
    assert!(drain(&mut r, ms(600) - Duration::from_nanos(1)).is_empty());
    r.handle_timeout(ms(600));
    let out = drain(&mut r, ms(600));
    assert_eq!(out.len(), 1);
    assert!(out[0].0.control.contains(Control::SACK_MORE));
    // Only once per silence: the next one is the periodic epoch feedback.
    assert_eq!(r.poll_timeout(), Some(ms(1_600)));
    // New data clears the flag.
    r.handle_input(ms(700), &data_packet(0, MSS, 1436, 1_000, 1_000));
    r.handle_timeout(ms(1_150));
    assert!(drain(&mut r, ms(1_150)).is_empty());
}

/// `n` full packets from `seq`, one every `gap_ms` from `from_ms`, each with D_max 5 ms.
fn feed(r: &mut AtpReceiver, seq: u64, n: u64, from_ms: u64, gap_ms: u64) {
    for k in 0..n {
        r.handle_input(ms(from_ms + k * gap_ms), &data_packet(0, seq + k * MSS, MSS as usize, 5_000, 5_000));
    }
}

#[test]
fn flow_control_feeds_back_the_read_rate_of_a_reader_that_falls_behind() {
    // seed 002 §4.2.3. D_avg is 5 ms (200 packets/s); 20 packets arrive in
    // the first epoch and the application reads 10 of them (14 360 bytes)
    // in pieces, never emptying the buffer. The buffer holds 20 packets; a
    // backlog of a quarter of it (5 packets) makes the reader the bottleneck.
    let mut r = established_receiver(AtpConfig::default());
    r.set_receive_buffer(20 * MSS);
    let mut buf = vec![0u8; MSS as usize];
    for k in 0..20 {
        feed(&mut r, k * MSS, 1, 10 + 40 * k, 0);
        if k % 2 == 1 {
            assert_eq!(r.read(&mut buf), MSS as usize);
        }
    }
    assert_eq!(r.readable() as u64, 10 * MSS);
    // The window [0, 1 s]: R_app = 14 360 bytes/s = 10 packets/s, a 100 ms
    // delay per packet, longer than D_avg: the feedback carries it.
    r.handle_timeout(ms(1_000));
    assert_eq!(drain(&mut r, ms(1_000))[0].0.d_max_us, 100_000);
    assert_eq!(r.app_read_limit(), Some(14_360.0));
    // Next epoch: the reader takes 5 packets a second (7 180 bytes/s) and is
    // still 5 packets behind, exactly the share: 200 ms.
    for _ in 0..5 {
        r.read(&mut buf);
    }
    r.handle_timeout(ms(2_000));
    assert_eq!(drain(&mut r, ms(2_000))[0].0.d_max_us, 200_000);
    // One byte less than the share behind: D_avg again.
    r.read(&mut buf[..1]);
    r.handle_timeout(ms(3_000));
    assert_eq!(drain(&mut r, ms(3_000))[0].0.d_max_us, 5_000);
    assert_eq!(r.app_read_limit(), None);
    // Nothing read for an epoch with 5 packets waiting: behind again; then
    // it empties the buffer: it kept up.
    feed(&mut r, 20 * MSS, 1, 3_100, 0);
    r.handle_timeout(ms(4_000));
    assert_eq!(drain(&mut r, ms(4_000))[0].0.d_max_us, (AtpConfig::default().max_delay.as_nanos() / 1_000) as u32);
    r.take_delivered();
    r.handle_timeout(ms(5_000));
    assert_eq!(drain(&mut r, ms(5_000))[0].0.d_max_us, 5_000);
}

#[test]
fn a_reader_that_keeps_up_leaves_d_avg_unchanged() {
    // It takes everything that arrives, one packet per 40 ms (35 900
    // bytes/s, a 40 ms delay per packet, far longer than D_avg): the network
    // is the bottleneck, not the application, and feedback stays D_avg. A
    // buffer of two packets: one unread packet is past the share.
    let mut r = established_receiver(AtpConfig::default());
    r.set_receive_buffer(2 * MSS);
    for k in 0..50 {
        feed(&mut r, k * MSS, 1, 10 + 40 * k, 0);
        assert_eq!(r.take_delivered().len() as u64, MSS);
        if k == 24 {
            r.handle_timeout(ms(1_000));
            assert_eq!(drain(&mut r, ms(1_000))[0].0.d_max_us, 5_000);
        }
    }
    // A packet delivered just before the feedback is not yet read when it
    // goes out: that is not falling behind.
    feed(&mut r, 50 * MSS, 1, 2_000, 0);
    r.handle_timeout(ms(2_000));
    assert_eq!(drain(&mut r, ms(2_000))[0].0.d_max_us, 5_000);
    assert_eq!(r.app_read_limit(), None);
}

#[test]
fn a_reader_that_kept_up_early_but_fell_behind_is_behind() {
    // Its first read empties the buffer; then the sender's burst arrives
    // (13 packets) and its last read in the epoch leaves 9 of them: what
    // counts is where the reader stands at the feedback. It read 5 packets
    // in the epoch, 7 180 bytes/s: a 200 ms delay.
    let mut r = established_receiver(AtpConfig::default());
    r.set_receive_buffer(20 * MSS);
    feed(&mut r, 0, 1, 10, 0);
    assert_eq!(r.take_delivered().len() as u64, MSS);
    feed(&mut r, MSS, 13, 500, 10);
    let mut buf = vec![0u8; 4 * MSS as usize];
    assert_eq!(r.read(&mut buf), 4 * MSS as usize);
    r.handle_timeout(ms(1_000));
    assert_eq!(drain(&mut r, ms(1_000))[0].0.d_max_us, 200_000);
}

#[test]
fn a_stalled_reader_bounds_what_the_receiver_holds() {
    let mut r = established_receiver(AtpConfig::default());
    r.set_receive_buffer(10 * MSS);
    // 30 packets, nothing read: the first 10 fill the buffer, the rest are
    // dropped and counted.
    feed(&mut r, 0, 30, 10, 10);
    assert_eq!(r.readable() as u64, 10 * MSS);
    assert_eq!(r.held_bytes(), 0);
    assert_eq!(r.stats().dropped_over_buffer_limit, 20);
    // Out of order beyond the buffer's end is dropped too; just inside is held.
    let mut r2 = established_receiver(AtpConfig::default());
    r2.set_receive_buffer(10 * MSS);
    feed(&mut r2, 9 * MSS, 1, 10, 0);
    feed(&mut r2, 10 * MSS, 1, 11, 0);
    assert_eq!((r2.held_bytes(), r2.stats().dropped_over_buffer_limit), (MSS, 1));
    // R_app = 0: the feedback asks for the sender's slowest rate.
    r.handle_timeout(ms(1_000));
    let max_delay_us = (AtpConfig::default().max_delay.as_nanos() / 1_000) as u32;
    assert_eq!(drain(&mut r, ms(1_000))[0].0.d_max_us, max_delay_us);
    // Reading one packet makes room for exactly one more.
    let mut buf = vec![0u8; MSS as usize];
    r.read(&mut buf);
    feed(&mut r, 10 * MSS, 2, 1_100, 1);
    assert_eq!(r.readable() as u64, 10 * MSS);
    assert_eq!(r.stats().dropped_over_buffer_limit, 21);
}

#[test]
fn the_receiver_delivers_in_order_and_finishes_after_fin_and_every_byte() {
    let mut r = established_receiver(AtpConfig::default());
    r.handle_input(ms(10), &data_packet(0, 100, 100, 1_000, 1_000));
    r.handle_input(ms(11), &data_packet(Control::FIN, 200, 50, 1_000, 1_000));
    assert_eq!(r.readable(), 0);
    // The FIN is answered at once, with the hole.
    let out = drain(&mut r, ms(11));
    assert!(out[0].0.control.contains(Control::FIN));
    assert_eq!((out[0].0.ack, out[0].0.sack_blocks.clone()), (0, vec![(100, 250)]));
    assert!(!events(&mut r).contains(&EngineEvent::Finished));
    r.handle_input(ms(12), &data_packet(0, 0, 100, 1_000, 1_000));
    // Duplicates are counted and dropped.
    r.handle_input(ms(13), &data_packet(0, 0, 100, 1_000, 1_000));
    assert_eq!(r.stats().dropped_datagrams, 1);
    assert!(events(&mut r).contains(&EngineEvent::Finished));
    let mut buf = [0u8; 1000];
    let n = r.read(&mut buf);
    assert_eq!(n, 250);
    let want: Vec<u8> = (0..250u64).map(|i| i as u8).collect();
    assert_eq!(&buf[..n], &want[..]);
    let out = drain(&mut r, ms(13));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0.ack, 250);
    // Lingers, answering repeated FINs, then closes.
    assert_eq!(r.state(), ReceiverState::Finished);
    r.handle_input(ms(500), &data_packet(Control::FIN, 250, 0, 1_000, 1_000));
    assert_eq!(drain(&mut r, ms(500)).len(), 1);
    let close_at = ms(500) + AtpConfig::default().linger;
    assert_eq!(r.poll_timeout(), Some(close_at));
    r.handle_timeout(close_at);
    assert!(r.is_closed());
    assert_eq!(r.poll_timeout(), None);
}

// ---------------------------------------------------------------- adaptive

/// Sends `n` in-order packets with the given D_max and D_s, returns how many
/// feedback packets came out immediately.
fn immediate_feedbacks(config: AtpConfig, n: u64, d_max_us: u32, d_s_us: u32) -> usize {
    let mut r = established_receiver(config);
    let mut count = 0;
    for k in 0..n {
        r.handle_input(ms(10 + k), &data_packet(0, k * MSS, 1436, d_max_us, d_s_us));
        count += drain(&mut r, ms(10 + k)).len();
    }
    count
}

#[test]
fn adaptive_ten_consecutive_too_slow_or_too_fast_packets_trigger_feedback() {
    let adaptive = AtpConfig::adaptive;
    // D_max > D_s: too fast.
    assert_eq!(immediate_feedbacks(adaptive(), 9, 2_001, 2_000), 0);
    assert_eq!(immediate_feedbacks(adaptive(), 10, 2_001, 2_000), 1);
    // D_max < (1 − φ)·D_s = 1800 us: too slow.
    assert_eq!(immediate_feedbacks(adaptive(), 9, 1_799, 2_000), 0);
    assert_eq!(immediate_feedbacks(adaptive(), 10, 1_799, 2_000), 1);
    // In between, or D_max exactly at either bound: no trigger.
    assert_eq!(immediate_feedbacks(adaptive(), 20, 1_900, 2_000), 0);
    assert_eq!(immediate_feedbacks(adaptive(), 20, 2_000, 2_000), 0);
    assert_eq!(immediate_feedbacks(adaptive(), 20, 1_800, 2_000), 0);
    // Not in the other presets.
    assert_eq!(immediate_feedbacks(AtpConfig::aggressive(), 10, 2_001, 2_000), 0);
}

#[test]
fn adaptive_runs_must_be_consecutive() {
    let mut r = established_receiver(AtpConfig::adaptive());
    let mut count = 0;
    for k in 0..19u64 {
        // Every tenth packet is in range, breaking the run.
        let d_max = if k == 9 { 2_000 } else { 2_500 };
        r.handle_input(ms(1), &data_packet(0, k * MSS, 1436, d_max, 2_000));
        count += drain(&mut r, ms(1)).len();
    }
    assert_eq!(count, 0);
}

#[test]
fn adaptive_two_detected_drops_trigger_feedback_one_does_not() {
    let one = |config: AtpConfig, skipped: u64| {
        let mut r = established_receiver(config);
        r.handle_input(ms(1), &data_packet(0, 0, 1436, 1_900, 2_000));
        r.handle_input(ms(2), &data_packet(0, (1 + skipped) * MSS, 1436, 1_900, 2_000));
        drain(&mut r, ms(2)).len()
    };
    assert_eq!(one(AtpConfig::adaptive(), 1), 0);
    assert_eq!(one(AtpConfig::adaptive(), 2), 1);
    assert_eq!(one(AtpConfig::aggressive(), 2), 0);
    // Two single drops add up.
    let mut r = established_receiver(AtpConfig::adaptive());
    r.handle_input(ms(1), &data_packet(0, 0, 1436, 1_900, 2_000));
    r.handle_input(ms(2), &data_packet(0, 2 * MSS, 1436, 1_900, 2_000));
    assert!(drain(&mut r, ms(2)).is_empty());
    r.handle_input(ms(3), &data_packet(0, 4 * MSS, 1436, 1_900, 2_000));
    assert_eq!(drain(&mut r, ms(3)).len(), 1);
}

// ---------------------------------------------------------------- timers

/// Drives an engine only through its own deadlines and checks each one is
/// later than the last (STYLE.md: a deadline that never advances busy-loops).
fn deadlines_advance(engine: &mut impl Engine, start: Instant, steps: usize) {
    let mut last = start;
    drain(engine, start);
    for _ in 0..steps {
        let Some(t) = engine.poll_timeout() else {
            return;
        };
        assert!(t > last || t == last && last == start, "deadline {t:?} does not move past {last:?}");
        engine.handle_timeout(t);
        drain(engine, t);
        last = t;
        if let Some(next) = engine.poll_timeout() {
            assert!(next > t, "after handle_timeout({t:?}) the deadline is still {next:?}");
        }
    }
}

#[test]
fn poll_timeout_always_moves_forward() {
    for config in [AtpConfig::default(), AtpConfig::aggressive(), AtpConfig::adaptive()] {
        // Sender that never hears back: probes, then fails.
        let mut s = AtpSender::new(config.clone(), CONN, vec![0; 50_000], Instant::ZERO);
        deadlines_advance(&mut s, Instant::ZERO, 100_000);
        assert!(s.is_closed());
        // Connected sender pacing, missing feedback, probing.
        let mut s = connected_sender(config.clone(), 50_000);
        deadlines_advance(&mut s, ms(10), 100_000);
        assert!(s.is_closed());
        // Receiver: epochs, SACK-MORE, then idle failure.
        let mut r = established_receiver(config.clone());
        r.handle_input(us(10), &data_packet(0, 0, 1436, 1_000, 1_000));
        deadlines_advance(&mut r, us(10), 100_000);
        assert!(r.is_closed());
    }
}

// ---------------------------------------------------------------- relay

fn t(msec: u64) -> Instant {
    ms(msec)
}

#[test]
fn relay_ewma_uses_alpha_three_quarters() {
    let mut relay = Relay::new(RelayConfig::default());
    relay.on_tx_report(t(10), t(6), Some(t(10))); // first sample seeds: 4 ms
    assert_eq!(relay.current_delay(), Duration::from_millis(4));
    relay.on_tx_report(t(20), t(12), Some(t(20))); // 8 ms sample
                                                   // 0.75·4 + 0.25·8 = 5 ms (seed 001 eq. 3.1).
    assert_eq!(relay.current_delay(), Duration::from_millis(5));
    assert_eq!(relay.samples(), 2);
}

#[test]
fn relay_skips_batched_reports_without_a_completion_time() {
    let mut relay = Relay::new(RelayConfig::default());
    relay.on_tx_report(t(10), t(6), Some(t(10)));
    relay.on_tx_report(t(11), t(7), None);
    relay.on_tx_report(t(11), t(8), None);
    assert_eq!(relay.current_delay(), Duration::from_millis(4));
    assert_eq!((relay.samples(), relay.skipped_reports()), (1, 2));
    // The batched report still counts as channel activity.
    assert!(!relay.is_idle(t(12)));
}

#[test]
fn relay_stamps_the_maximum_and_counts_the_hop() {
    let mut relay = Relay::new(RelayConfig::default());
    relay.on_tx_report(t(10), t(5), Some(t(10))); // D = 5 ms, busy
    let mut pkt = data_packet(0, 0, 10, 3_000, 1_000);
    let out = relay.stamp(t(11), &mut pkt).unwrap();
    assert!(!out.idle && out.raised);
    assert_eq!((out.hop_count, out.d_max), (3, Duration::from_millis(5)));
    let (repr, _) = wire::parse_datagram(&pkt).unwrap();
    assert_eq!((repr.d_max_us, repr.hop_count, repr.d_s_us), (5_000, 3, 1_000));
    // A larger D_max upstream stays.
    let mut pkt = data_packet(0, 0, 10, 7_000, 1_000);
    let out = relay.stamp(t(12), &mut pkt).unwrap();
    assert!(!out.raised);
    assert_eq!(wire::parse_datagram(&pkt).unwrap().0.d_max_us, 7_000);
    // N_h saturates.
    let mut pkt = data_packet(0, 0, 10, 7_000, 1_000);
    pkt[3] = 255;
    assert_eq!(relay.stamp(t(12), &mut pkt).unwrap().hop_count, 255);
}

#[test]
fn relay_multiplies_by_eta_when_idle() {
    let mut relay = Relay::new(RelayConfig::default());
    relay.on_tx_report(t(10), t(6), Some(t(10))); // D = 4 ms
                                                  // 100 ms of quiet is still busy; 101 ms is idle.
    let mut pkt = data_packet(Control::SYN, 0, 0, 0, 0);
    assert_eq!(relay.stamp(t(110), &mut pkt).unwrap().d_max, Duration::from_millis(4));
    let mut pkt = data_packet(Control::SYN, 0, 0, 0, 0);
    let out = relay.stamp(t(211), &mut pkt).unwrap();
    assert!(out.idle);
    assert_eq!(out.d_max, Duration::from_millis(12), "η = 3");
    // Adaptive: η = 3 + 0.5·(h − 1); the packet arrives with N_h = 2, leaves with 3: η = 4.
    let mut relay = Relay::new(AtpConfig::adaptive().relay_config());
    relay.on_tx_report(t(10), t(6), Some(t(10)));
    let mut pkt = data_packet(Control::SYN, 0, 0, 0, 0);
    let out = relay.stamp(t(500), &mut pkt).unwrap();
    assert_eq!((out.hop_count, out.d_max), (3, Duration::from_millis(16)));
}

#[test]
fn relay_leaves_feedback_and_tcp_delays_alone_but_counts_hops() {
    let mut relay = Relay::new(RelayConfig::default());
    relay.on_tx_report(t(10), t(0), Some(t(10)));
    let mut fb = feedback(0, 0, 2_000, &[(10, 20)]);
    let out = relay.stamp(t(11), &mut fb).unwrap();
    assert_eq!((out.offered, out.hop_count), (None, 1));
    assert_eq!(wire::parse_datagram(&fb).unwrap().0.d_max_us, 2_000);
    let mut tcp = data_packet(Control::ACK, 0, 10, 0, 0);
    tcp[0] = ProtocolId::Tcp as u8;
    let out = relay.stamp(t(12), &mut tcp).unwrap();
    assert_eq!((out.protocol, out.offered, out.hop_count), (ProtocolId::Tcp, None, 3));
    assert_eq!(wire::parse_datagram(&tcp).unwrap().0.d_max_us, 0);
}

#[test]
fn relay_rejects_malformed_datagrams_untouched() {
    let mut relay = Relay::new(RelayConfig::default());
    let mut short = vec![1u8; 20];
    assert!(relay.stamp(t(1), &mut short).is_err());
    assert_eq!(short, vec![1u8; 20]);
    let mut bad_version = data_packet(0, 0, 0, 0, 0);
    bad_version[1] = 9;
    let copy = bad_version.clone();
    assert!(relay.stamp(t(1), &mut bad_version).is_err());
    assert_eq!(bad_version, copy);
}

#[test]
fn a_stamped_syn_sets_the_first_rate_end_to_end() {
    // Sender → relay → receiver: the relay's D (2 ms, busy channel) reaches the
    // sender through the receiver's immediate answer (seed 002 §4.3.1 Fig. 6).
    let config = AtpConfig::default();
    let mut relay = Relay::new(config.relay_config());
    relay.on_tx_report(ms(1), ms(0), Some(ms(2)));
    let mut s = AtpSender::new(config.clone(), CONN, vec![9; 3000], ms(2));
    let mut r = AtpReceiver::new(config, CONN, ms(2));
    let mut buf = vec![0u8; 2048];
    let t = s.poll_transmit(ms(2), &mut buf).unwrap();
    let stamped = relay.stamp(ms(2), &mut buf[..t.len]).unwrap();
    assert_eq!((stamped.hop_count, stamped.d_max), (1, Duration::from_millis(2)));
    r.handle_input(ms(3), &buf[..t.len]);
    let t = r.poll_transmit(ms(3), &mut buf).unwrap();
    s.handle_input(ms(4), &buf[..t.len]);
    assert!((s.rate_pps() - 500.0).abs() < 1e-9);
    assert!(events(&mut r).iter().any(|e| matches!(e,
        EngineEvent::Trace(TraceSample::DMax { d_max, .. }) if *d_max == Duration::from_millis(2))));
}

// ------------------------------------------------------ out-of-order memory

/// Issue 9 item 2: a hole at byte 0 and everything after it. The receiver
/// holds only what its reorder limit allows, counts the rest, and the
/// connection still completes once the hole is filled and the dropped data
/// is sent again.
#[test]
fn a_hole_at_byte_zero_holds_only_up_to_the_reorder_limit_and_the_transfer_survives() {
    let limit = 64 * 1024;
    let mut r = established_receiver(AtpConfig::default());
    r.set_reorder_limit(limit);
    let packets = 400u64; // 574 KB: nine times the limit
    for k in 1..packets {
        r.handle_input(ms(1), &data_packet(0, k * MSS, MSS as usize, 1, 1));
        assert!(r.reorder_charge() <= limit, "charge {} over {limit}", r.reorder_charge());
    }
    let held = r.held_bytes();
    assert!(held > limit / 2 && held <= limit, "{held}");
    let dropped = r.stats().dropped_over_buffer_limit;
    assert_eq!(dropped, packets - 1 - held / MSS, "every packet beyond the limit is counted");
    assert_eq!(r.stats().dropped_datagrams, 0, "not counted as duplicates");
    // The hole fills: everything held comes out, then the rest again.
    r.handle_input(ms(2), &data_packet(0, 0, MSS as usize, 1, 1));
    assert_eq!(r.ack(), MSS + held);
    assert_eq!(r.reorder_charge(), 0);
    for k in r.ack() / MSS..packets {
        let fin = if k == packets - 1 { Control::FIN } else { 0 };
        r.handle_input(ms(3), &data_packet(fin, k * MSS, MSS as usize, 1, 1));
    }
    assert!(events(&mut r).contains(&EngineEvent::Finished));
    let delivered = r.take_delivered();
    assert_eq!(delivered.len() as u64, packets * MSS);
    assert!(delivered.iter().enumerate().all(|(i, &b)| b == i as u8), "every byte in order");
}

/// One-byte pieces at every other offset cannot touch, so none coalesce:
/// each is charged its overhead, and the limit bounds how many are held.
#[test]
fn one_byte_pieces_are_charged_their_overhead() {
    let limit = 256 * 1024;
    let mut r = established_receiver(AtpConfig::default());
    r.set_reorder_limit(limit);
    for k in 0..100_000u64 {
        r.handle_input(ms(1), &data_packet(0, 2 * k + 1, 1, 1, 1));
    }
    assert!(r.reorder_charge() <= limit);
    let pieces = r.held_bytes();
    assert_eq!(pieces, limit / (1 + meshbed_proto::reorder::PIECE_OVERHEAD));
    assert_eq!(r.stats().dropped_over_buffer_limit, 100_000 - pieces);
    // The limit cannot be raised beyond the configuration's.
    r.set_reorder_limit(u64::MAX);
    r.handle_input(ms(2), &data_packet(0, 1_000_001, 1, 1, 1));
    assert_eq!(r.held_bytes(), pieces + 1);
}

#[test]
fn a_busy_reset_fails_the_sender_with_busy_and_other_resets_stay_resets() {
    for (payload, want) in [(&[1u8][..], FailReason::Busy), (&[], FailReason::Reset), (&[7], FailReason::Reset)] {
        let mut s = AtpSender::new(AtpConfig::default(), CONN, vec![0; 100], Instant::ZERO);
        drain(&mut s, Instant::ZERO);
        let mut rst = vec![0u8; HEADER_LEN + payload.len()];
        Repr {
            control: Control(Control::RST),
            payload_len: payload.len(),
            ..wire::parse_datagram(&feedback(0, 0, 1, &[])).unwrap().0
        }
        .emit(&mut rst);
        rst[HEADER_LEN..].copy_from_slice(payload);
        s.handle_input(ms(5), &rst);
        assert!(events(&mut s).contains(&EngineEvent::Failed(want)), "{payload:?}");
    }
}
