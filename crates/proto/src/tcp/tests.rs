//! One test per rule: each drives an engine with hand-made datagrams and
//! checks what it sends and how its window moves. MSS is 1000 bytes here so
//! that sequence numbers read easily: segment `k` starts at `1 + 1000 k`.
//! The helpers are shared with [`super::elfn_tests`].

use super::cc::{AckSample, CongestionControl, NewReno, Retransmit, Tahoe, Window};
use super::rtt::RttEstimator;
use super::*;
use crate::engine::{Engine, EngineEvent, FailReason, TraceSample};
use crate::harness::{Pair, ToyChannel};
use crate::wire::{parse_datagram, Control, ProtocolId, Repr};

pub(super) const CONN: u32 = 0x0bad_cafe;
pub(super) const MSS: u64 = 1000;

pub(super) fn ms(ms: u64) -> Instant {
    Instant::from_nanos(ms * 1_000_000)
}

/// RFC 5681's and RFC 6675's loss detection (DupThresh), which these
/// tests pin for every variant: RACK-TLP, the SACK senders' default, has
/// its own ([`super::rack_sender_tests`]).
pub(super) fn config() -> TcpConfig {
    TcpConfig { mss_bytes: MSS as usize, rack_tlp: false, ..TcpConfig::default() }
}

/// Sequence number of segment `k`.
pub(super) fn seg(k: u64) -> u64 {
    1 + k * MSS
}

pub(super) fn datagram(control: u8, seq: u64, ack: u64, payload: &[u8]) -> Vec<u8> {
    // TCP ignores D_max, which the shared builder sets to 1 ms.
    crate::harness::datagram(ProtocolId::Tcp, control, CONN, seq, ack, payload)
}

/// Everything the engine sends now: (header, payload).
pub(super) fn drain<E: Engine>(engine: &mut E, now: Instant) -> Vec<(Repr, Vec<u8>)> {
    let mut buf = vec![0u8; 1500];
    let mut out = Vec::new();
    while let Some(t) = engine.poll_transmit(now, &mut buf) {
        let (repr, data) = parse_datagram(&buf[..t.len]).expect("engines emit valid datagrams");
        out.push((repr, data.to_vec()));
    }
    out
}

pub(super) fn seqs(segments: &[(Repr, Vec<u8>)]) -> Vec<u64> {
    segments.iter().map(|(r, _)| r.seq).collect()
}

pub(super) fn events<E: Engine>(engine: &mut E) -> Vec<EngineEvent> {
    std::iter::from_fn(|| engine.poll_event()).collect()
}

/// A sender past the handshake: SYN at 0, SYN-ACK at 100 ms, so SRTT is
/// 100 ms and the RTO 300 ms. Nothing has been sent yet.
pub(super) fn established(variant: TcpVariant, config: TcpConfig, len: usize) -> TcpSender {
    let data = (0..len).map(|i| i as u8).collect();
    let mut s = TcpSender::new(config, variant, CONN, data, ms(0));
    let syn = drain(&mut s, ms(0));
    assert_eq!(syn.len(), 1);
    assert!(syn[0].0.control.contains(Control::SYN));
    s.handle_input(ms(100), &datagram(Control::SYN | Control::ACK, 0, 1, &[]));
    assert!(events(&mut s).contains(&EngineEvent::Connected));
    s
}

pub(super) fn ack(s: &mut TcpSender, now: Instant, ack: u64) {
    s.handle_input(now, &datagram(Control::ACK, 1, ack, &[]));
}

/// An ACK of `ack` carrying SACK `blocks`.
pub(super) fn sack_ack(s: &mut TcpSender, now: Instant, ack: u64, blocks: &[(u64, u64)]) {
    let plain = datagram(Control::ACK, 1, ack, &[]);
    let (mut repr, _) = parse_datagram(&plain).unwrap();
    repr.sack_blocks = blocks.to_vec();
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf);
    s.handle_input(now, &buf);
}

pub(super) fn cwnd(s: &TcpSender) -> f64 {
    s.cc_metrics().cwnd_segments
}

pub(super) fn with_cwnd(initial_cwnd_segments: u32) -> TcpConfig {
    TcpConfig { initial_cwnd_segments, ..config() }
}

/// A receiver past the handshake.
pub(super) fn listening(config: TcpConfig) -> TcpReceiver {
    let mut r = TcpReceiver::new(config, CONN, ms(0));
    r.handle_input(ms(0), &datagram(Control::SYN, 0, 0, &[]));
    let synack = drain(&mut r, ms(0));
    assert_eq!(synack.len(), 1);
    assert_eq!((synack[0].0.control, synack[0].0.ack), (Control(Control::SYN | Control::ACK), 1));
    r
}

pub(super) fn data_segment(k: u64, fin: bool) -> Vec<u8> {
    let control = if fin { Control::ACK | Control::FIN } else { Control::ACK };
    datagram(control, seg(k), 1, &[k as u8; MSS as usize])
}

pub(super) fn acks_sent(r: &mut TcpReceiver, now: Instant) -> Vec<u64> {
    drain(r, now).iter().map(|(repr, _)| repr.ack).collect()
}

// ---------------------------------------------------------------- windows

#[test]
fn slow_start_adds_one_segment_per_ack_and_doubles_per_round_trip() {
    for variant in TcpVariant::LOSS_BASED {
        let mut s = established(variant, config(), 100_000);
        let mut now = ms(100);
        let mut next = 0;
        for round_trip_burst in [1, 2, 4, 8, 16] {
            let sent = drain(&mut s, now);
            assert_eq!(sent.len(), round_trip_burst, "{variant:?}");
            now += Duration::from_millis(100);
            for _ in 0..sent.len() {
                let before = cwnd(&s);
                next += 1;
                ack(&mut s, now, seg(next));
                assert_eq!(cwnd(&s), before + 1.0, "{variant:?}: +1 segment per ACK in slow start");
            }
        }
    }
}

#[test]
fn congestion_avoidance_adds_one_over_cwnd_per_ack() {
    let config = TcpConfig { initial_cwnd_segments: 4, initial_ssthresh_segments: 2, ..config() };
    let mut s = established(TcpVariant::Reno, config, 100_000);
    assert_eq!(drain(&mut s, ms(100)).len(), 4);
    ack(&mut s, ms(200), seg(1));
    assert_eq!(cwnd(&s), 4.0 + 1.0 / 4.0);
    ack(&mut s, ms(200), seg(2));
    assert_eq!(cwnd(&s), 4.25 + 1.0 / 4.25);
    ack(&mut s, ms(200), seg(3));
    ack(&mut s, ms(200), seg(4));
    // A window's worth of ACKs adds just under one segment.
    assert!(cwnd(&s) > 4.9 && cwnd(&s) < 5.0, "{}", cwnd(&s));
}

#[test]
fn window_growth_stops_at_the_maximum_window() {
    let config = TcpConfig { initial_cwnd_segments: 4, max_cwnd_segments: 5, ..config() };
    let mut s = established(TcpVariant::NewReno, config, 100_000);
    assert_eq!(drain(&mut s, ms(100)).len(), 4);
    for k in 1..=4 {
        ack(&mut s, ms(200), seg(k));
    }
    assert_eq!(cwnd(&s), 5.0);
    assert_eq!(drain(&mut s, ms(200)).len(), 5);
}

#[test]
fn cwnd_changes_are_traced() {
    let mut s = established(TcpVariant::Tahoe, config(), 10_000);
    drain(&mut s, ms(100));
    ack(&mut s, ms(200), seg(1));
    let traced: Vec<f64> = events(&mut s)
        .into_iter()
        .filter_map(|e| match e {
            EngineEvent::Trace(TraceSample::Cwnd { cwnd_segments, .. }) => Some(cwnd_segments),
            _ => None,
        })
        .collect();
    assert_eq!(traced, vec![2.0]);
}

// ------------------------------------------------- fast retransmit/recovery

/// Sends a window of eight segments (cwnd 8) of which segment 0 is lost, and
/// returns the sender after `dupacks` duplicate ACKs.
pub(super) fn eight_in_flight_then_dupacks(variant: TcpVariant, dupacks: usize) -> TcpSender {
    let mut s = established(variant, with_cwnd(8), 20_000);
    assert_eq!(seqs(&drain(&mut s, ms(100))), (0..8).map(seg).collect::<Vec<_>>());
    for _ in 0..dupacks {
        ack(&mut s, ms(200), seg(0));
    }
    s
}

#[test]
fn two_duplicate_acks_do_not_retransmit_three_do() {
    for variant in TcpVariant::LOSS_BASED {
        let mut s = eight_in_flight_then_dupacks(variant, 2);
        assert!(drain(&mut s, ms(200)).is_empty(), "{variant:?}");
        assert_eq!(s.stats().retransmissions, 0);

        ack(&mut s, ms(200), seg(0));
        let sent = drain(&mut s, ms(200));
        assert_eq!(seqs(&sent), vec![seg(0)], "{variant:?}: fast retransmit of the first unacked segment");
        assert_eq!(s.stats().retransmissions, 1);
        assert_eq!(s.stats().retransmitted_bytes, MSS);
        let retransmit = TraceSample::Retransmit { at: ms(200), seq: seg(0), len: MSS as usize };
        assert!(events(&mut s).contains(&EngineEvent::Trace(retransmit)), "{variant:?}");
        // ssthresh = max(FlightSize / 2, 2) with eight segments in flight;
        // CUBIC's β is 0.7 (RFC 9438 §4.6): 5.6.
        let expected = if variant == TcpVariant::Cubic { 5.6 } else { 4.0 };
        assert!((s.cc_metrics().ssthresh_segments - expected).abs() < 1e-9, "{variant:?}");
    }
}

#[test]
fn tahoe_collapses_to_one_segment_after_fast_retransmit_and_slow_starts() {
    let mut s = eight_in_flight_then_dupacks(TcpVariant::Tahoe, 3);
    assert_eq!(cwnd(&s), 1.0);
    assert_eq!(seqs(&drain(&mut s, ms(200))), vec![seg(0)]);
    // The rest of the window's dupacks neither send nor re-trigger anything.
    for _ in 0..4 {
        ack(&mut s, ms(210), seg(0));
    }
    assert!(drain(&mut s, ms(210)).is_empty());
    assert_eq!((cwnd(&s), s.stats().retransmissions), (1.0, 1));
    // The retransmission fills the hole; the receiver held the other seven.
    ack(&mut s, ms(300), seg(8));
    assert_eq!(cwnd(&s), 2.0);
    assert_eq!(seqs(&drain(&mut s, ms(300))), vec![seg(8), seg(9)]);
    assert_eq!(s.stats().retransmissions, 1);
}

#[test]
fn tahoe_goes_back_n_when_the_retransmission_is_acked_alone() {
    let mut s = eight_in_flight_then_dupacks(TcpVariant::Tahoe, 3);
    drain(&mut s, ms(200));
    // Only segment 0 arrives: segments 1.. were lost too.
    ack(&mut s, ms(300), seg(1));
    assert_eq!(seqs(&drain(&mut s, ms(300))), vec![seg(1), seg(2)]);
    assert_eq!(s.stats().retransmissions, 3);
}

#[test]
fn reno_inflates_on_each_dupack_and_deflates_on_the_new_ack() {
    let mut s = eight_in_flight_then_dupacks(TcpVariant::Reno, 3);
    // ssthresh = 8 / 2 = 4; cwnd = ssthresh + 3 for the three dupacks.
    assert_eq!(cwnd(&s), 7.0);
    assert!(s.cc_metrics().in_recovery);
    assert_eq!(seqs(&drain(&mut s, ms(200))), vec![seg(0)]);
    ack(&mut s, ms(201), seg(0));
    assert_eq!(cwnd(&s), 8.0);
    // Eight segments still count as in flight: a window of 8 sends nothing new.
    assert!(drain(&mut s, ms(201)).is_empty());
    ack(&mut s, ms(202), seg(0));
    assert_eq!(cwnd(&s), 9.0);
    assert_eq!(seqs(&drain(&mut s, ms(202))), vec![seg(8)], "inflation lets new data out");
    // The retransmission arrives: everything up to segment 8 is acknowledged.
    ack(&mut s, ms(300), seg(8));
    assert_eq!(cwnd(&s), 4.0, "deflated to ssthresh");
    assert!(!s.cc_metrics().in_recovery);
}

/// Segments 0 and 3 of eight are lost; the six that arrive give six
/// dupacks; after the third the sender retransmits segment 0, and the three
/// further dupacks inflate cwnd to 10, which sends segments 8 and 9.
pub(super) fn two_holes(variant: TcpVariant) -> TcpSender {
    let mut s = eight_in_flight_then_dupacks(variant, 3);
    assert_eq!(seqs(&drain(&mut s, ms(200))), vec![seg(0)]);
    for _ in 0..3 {
        ack(&mut s, ms(201), seg(0));
    }
    assert_eq!(cwnd(&s), 10.0);
    assert_eq!(seqs(&drain(&mut s, ms(201))), vec![seg(8), seg(9)]);
    // The retransmitted segment 0 arrives: the receiver now misses segment 3.
    ack(&mut s, ms(300), seg(3));
    s
}

#[test]
fn newreno_partial_ack_retransmits_the_next_hole_and_stays_in_recovery() {
    let mut s = two_holes(TcpVariant::NewReno);
    assert!(s.cc_metrics().in_recovery);
    // Deflate by the three segments acknowledged, add one back: 10 − 3 + 1.
    assert_eq!(cwnd(&s), 8.0);
    let sent = drain(&mut s, ms(300));
    assert_eq!(seqs(&sent), vec![seg(3), seg(10)], "hole first, then what the window allows");
    assert_eq!(s.stats().retransmissions, 2);
    // The full ACK covers `recover` (everything sent before the loss, up to
    // segment 8): leave recovery with cwnd = min(ssthresh, flight + 1).
    ack(&mut s, ms(400), seg(10));
    assert!(!s.cc_metrics().in_recovery);
    assert_eq!(cwnd(&s), 2.0, "one segment still in flight, ssthresh 4");
}

#[test]
fn reno_leaves_recovery_on_a_partial_ack() {
    let mut s = two_holes(TcpVariant::Reno);
    assert!(!s.cc_metrics().in_recovery);
    assert_eq!(cwnd(&s), 4.0);
    // Seven segments in flight exceed the window of four: the second hole
    // waits for three more dupacks or the timer.
    assert!(drain(&mut s, ms(300)).is_empty());
    assert_eq!(s.stats().retransmissions, 1);
}

#[test]
fn newreno_starts_a_new_recovery_after_a_full_ack() {
    let mut s = two_holes(TcpVariant::NewReno);
    drain(&mut s, ms(300));
    ack(&mut s, ms(400), seg(8)); // full ACK: recover was segment 8
    assert!(!s.cc_metrics().in_recovery);
    let retransmissions = s.stats().retransmissions;
    // Three dupacks at a new hole after the full ACK start a new recovery.
    for _ in 0..3 {
        ack(&mut s, ms(410), seg(8));
    }
    assert!(s.cc_metrics().in_recovery);
    assert_eq!(seqs(&drain(&mut s, ms(410)))[0], seg(8));
    assert_eq!(s.stats().retransmissions, retransmissions + 1);
}

#[test]
fn tahoe_does_not_fast_retransmit_twice_for_one_window() {
    let mut cc = Tahoe::new(Window::new(8.0, 64.0, 64.0, MSS), 3);
    let dupack = |dupacks| AckSample {
        ack: 1,
        acked_bytes: 0,
        flight_bytes: 8 * MSS,
        snd_max: seg(8),
        dupacks,
        srtt: None,
        head_lost: false,
        rtt_sample: None,
    };
    assert_eq!(cc.on_duplicate_ack(ms(0), &dupack(3)).retransmit, Retransmit::GoBackN);
    assert!(cc.metrics().in_recovery);
    // After the go-back-N, old segments of the same window can raise three
    // more dupacks for the same hole; they must not halve again.
    assert_eq!(cc.on_duplicate_ack(ms(1), &dupack(3)).retransmit, Retransmit::None);
    assert_eq!(cc.metrics().ssthresh_segments, 4.0);
}

#[test]
fn newreno_does_not_enter_recovery_below_recover_after_a_timeout() {
    let mut cc = NewReno::new(Window::new(8.0, 64.0, 64.0, MSS), 3);
    // A timeout with eight segments outstanding records recover = segment 8.
    cc.on_retransmission_timeout(ms(0), 8 * MSS, seg(8), true);
    let dupack = |ack| AckSample {
        ack,
        acked_bytes: 0,
        flight_bytes: 4 * MSS,
        snd_max: seg(8),
        dupacks: 3,
        srtt: None,
        head_lost: false,
        rtt_sample: None,
    };
    // RFC 6582 §3.2 step 1: dupacks that do not cover recover come from the
    // segments the go-back-N resent needlessly; they start no recovery.
    assert_eq!(cc.on_duplicate_ack(ms(1), &dupack(seg(4))).retransmit, Retransmit::None);
    assert_eq!((cc.metrics().cwnd_segments, cc.metrics().in_recovery), (1.0, false));
    assert_eq!(cc.on_duplicate_ack(ms(2), &dupack(seg(8))).retransmit, Retransmit::Head);
    assert!(cc.metrics().in_recovery);
}

// ------------------------------------------------------------ timer, RTO

#[test]
fn rto_follows_rfc6298_arithmetic() {
    let g = Duration::from_millis(1);
    let mut rtt = RttEstimator::new(Duration::from_secs(1), Duration::from_millis(1), Duration::from_secs(60), g);
    assert_eq!(rtt.rto(), Duration::from_secs(1), "(2.1) before any sample");
    // (2.2) first sample R = 100 ms: SRTT = 100, RTTVAR = 50, RTO = 100 + 4·50.
    rtt.on_sample(Duration::from_millis(100));
    assert_eq!(rtt.srtt(), Some(Duration::from_millis(100)));
    assert_eq!(rtt.rttvar(), Duration::from_millis(50));
    assert_eq!(rtt.rto(), Duration::from_millis(300));
    // (2.3) R' = 200 ms: RTTVAR = 3/4·50 + 1/4·|100 − 200| = 62.5,
    // SRTT = 7/8·100 + 1/8·200 = 112.5, RTO = 112.5 + 4·62.5 = 362.5.
    rtt.on_sample(Duration::from_millis(200));
    assert_eq!(rtt.rttvar(), Duration::from_micros(62_500));
    assert_eq!(rtt.srtt(), Some(Duration::from_micros(112_500)));
    assert_eq!(rtt.rto(), Duration::from_micros(362_500));
    // R' = 50 ms: RTTVAR = 3/4·62.5 + 1/4·62.5 = 62.5,
    // SRTT = 7/8·112.5 + 1/8·50 = 104.6875, RTO = 104.6875 + 250.
    rtt.on_sample(Duration::from_millis(50));
    assert_eq!(rtt.rttvar(), Duration::from_micros(62_500));
    assert_eq!(rtt.srtt(), Some(Duration::from_nanos(104_687_500)));
    assert_eq!(rtt.rto(), Duration::from_nanos(354_687_500));
}

#[test]
fn rto_has_a_floor_a_granularity_term_and_a_cap() {
    let floor = Duration::from_millis(200);
    let mut rtt = RttEstimator::new(Duration::from_secs(1), floor, Duration::from_secs(60), Duration::from_millis(1));
    rtt.on_sample(Duration::from_millis(10));
    assert_eq!(rtt.rto(), floor, "10 + 4·5 ms is below the minimum");

    let g = Duration::from_millis(50);
    let mut rtt = RttEstimator::new(Duration::from_secs(1), Duration::from_millis(1), Duration::from_secs(60), g);
    rtt.on_sample(Duration::from_millis(10));
    assert_eq!(rtt.rto(), Duration::from_millis(60), "SRTT + max(G, 4·RTTVAR) = 10 + 50");

    let mut rtt = RttEstimator::new(Duration::from_secs(1), floor, Duration::from_secs(60), g);
    let mut expected = Duration::from_secs(1);
    for _ in 0..8 {
        rtt.back_off();
        expected = (expected * 2).min(Duration::from_secs(60));
        assert_eq!(rtt.rto(), expected);
    }
    assert_eq!(rtt.rto(), Duration::from_secs(60));
}

#[test]
fn retransmission_timer_backs_off_exponentially() {
    let mut s = TcpSender::new(config(), TcpVariant::Tahoe, CONN, vec![0; 100], ms(0));
    assert_eq!(drain(&mut s, ms(0)).len(), 1);
    let mut expected_deadline = ms(1_000);
    for (i, rto_ms) in [2_000, 4_000].into_iter().enumerate() {
        assert_eq!(s.poll_timeout(), Some(expected_deadline));
        s.handle_timeout(expected_deadline);
        let sent = drain(&mut s, expected_deadline);
        assert_eq!(sent.len(), 1);
        assert!(sent[0].0.control.contains(Control::SYN), "the SYN is retransmitted");
        assert_eq!(s.stats().retransmissions, i as u64 + 1);
        assert_eq!(s.rtt().rto(), Duration::from_millis(rto_ms));
        expected_deadline += Duration::from_millis(rto_ms);
    }
}

#[test]
fn rto_collapses_the_window_and_goes_back_n() {
    for variant in TcpVariant::LOSS_BASED {
        let mut s = established(variant, with_cwnd(4), 20_000);
        assert_eq!(drain(&mut s, ms(100)).len(), 4);
        let deadline = s.poll_timeout().unwrap();
        assert_eq!(deadline, ms(400), "RTO of 300 ms after the first segment");
        s.handle_timeout(deadline);
        assert_eq!(cwnd(&s), 1.0, "{variant:?}: loss window");
        // max(4 / 2, 2); CUBIC: max(4 · 0.7, 2) (RFC 9438 §4.8).
        let expected = if variant == TcpVariant::Cubic { 2.8 } else { 2.0 };
        assert!((s.cc_metrics().ssthresh_segments - expected).abs() < 1e-9, "{variant:?}: {:?}", s.cc_metrics());
        assert_eq!(seqs(&drain(&mut s, deadline)), vec![seg(0)]);
        assert_eq!(s.rtt().rto(), Duration::from_millis(600), "backed off");
        assert_eq!(s.poll_timeout(), Some(deadline + Duration::from_millis(600)));
        // Only segment 0 made it through: slow start resends 1 and 2.
        ack(&mut s, ms(500), seg(1));
        assert_eq!(seqs(&drain(&mut s, ms(500))), vec![seg(1), seg(2)], "{variant:?}");
        assert_eq!(s.stats().retransmissions, 3);
    }
}

#[test]
fn karn_rule_takes_no_sample_from_a_retransmitted_segment() {
    // The SYN: retransmitted at 1 s, answered at 1.1 s. The answer may be
    // to either copy, so there is no sample and the backed-off RTO stays.
    let mut s = TcpSender::new(config(), TcpVariant::NewReno, CONN, vec![0; 10_000], ms(0));
    drain(&mut s, ms(0));
    s.handle_timeout(ms(1_000));
    drain(&mut s, ms(1_000));
    s.handle_input(ms(1_100), &datagram(Control::SYN | Control::ACK, 0, 1, &[]));
    assert_eq!(s.rtt().srtt(), None);
    assert_eq!(s.rtt().rto(), Duration::from_secs(2));

    // Data: SRTT 100 ms, RTO 300 ms; segment 0 times out and is resent.
    let mut s = established(TcpVariant::NewReno, config(), 10_000);
    drain(&mut s, ms(100));
    s.handle_timeout(ms(400));
    drain(&mut s, ms(400));
    ack(&mut s, ms(450), seg(1));
    assert_eq!(s.rtt().srtt(), Some(Duration::from_millis(100)), "no sample from the resent segment");
    assert_eq!(s.rtt().rto(), Duration::from_millis(600), "the backoff stays until a valid sample");
    // Segments 1 and 2 go out once; their ACK after 100 ms is a valid sample:
    // RTTVAR = 3/4·50 + 0, SRTT = 100, RTO = 100 + 4·37.5 = 250 ms.
    assert_eq!(seqs(&drain(&mut s, ms(450))), vec![seg(1), seg(2)]);
    ack(&mut s, ms(550), seg(3));
    assert_eq!(s.rtt().rttvar(), Duration::from_micros(37_500));
    assert_eq!(s.rtt().rto(), Duration::from_millis(250));
}

#[test]
fn early_timeout_is_a_no_op_and_deadlines_always_move_forward() {
    let mut s = TcpSender::new(config(), TcpVariant::Reno, CONN, vec![0; 10_000], ms(0));
    drain(&mut s, ms(0));
    let first = s.poll_timeout().unwrap();
    s.handle_timeout(first - Duration::from_nanos(1));
    assert!(drain(&mut s, first).is_empty());
    assert_eq!(s.poll_timeout(), Some(first));
    assert_eq!(s.stats().retransmissions, 0);

    // Against a black hole: every handled deadline is followed by a later one
    // until the idle timeout gives up.
    let mut last = Instant::ZERO;
    while let Some(deadline) = s.poll_timeout() {
        assert!(deadline > last, "{deadline:?} after {last:?}");
        s.handle_timeout(deadline);
        drain(&mut s, deadline);
        last = deadline;
    }
    assert!(s.is_closed());

    let mut r = TcpReceiver::new(TcpConfig { delayed_acks: true, ..config() }, CONN, ms(0));
    assert_eq!(r.poll_timeout(), None, "a listening receiver waits indefinitely");
    r.handle_input(ms(0), &datagram(Control::SYN, 0, 0, &[]));
    r.handle_input(ms(10), &data_segment(0, false));
    let mut last = Instant::ZERO;
    while let Some(deadline) = r.poll_timeout() {
        assert!(deadline > last);
        r.handle_timeout(deadline);
        drain(&mut r, deadline);
        last = deadline;
    }
    assert!(r.is_closed());
}

#[test]
fn idle_timeout_fails_exactly_at_the_limit() {
    let cfg = TcpConfig { idle_timeout: Duration::from_secs(10), ..config() };
    let mut s = TcpSender::new(cfg, TcpVariant::Tahoe, CONN, vec![0; 10], ms(0));
    let limit = ms(10_000);
    while let Some(deadline) = s.poll_timeout().filter(|d| *d < limit) {
        s.handle_timeout(deadline);
        drain(&mut s, deadline);
    }
    s.handle_timeout(limit - Duration::from_nanos(1));
    assert!(!s.is_closed(), "just inside the limit");
    s.handle_timeout(limit);
    assert!(s.is_closed(), "at the limit");
    let failed = EngineEvent::Failed(FailReason::PeerUnreachable { silent_for: Duration::from_secs(10) });
    assert!(events(&mut s).contains(&failed));
    assert_eq!(s.poll_timeout(), None);
    assert!(drain(&mut s, limit).is_empty());
}

/// RTOs of at least 6 s, two of them unanswered allowed, 10 s idle time: a
/// backed-off RTO (12 s) outlasts the idle time.
fn six_second_rtos_ten_second_idle() -> TcpConfig {
    TcpConfig {
        initial_rto: Duration::from_secs(6),
        min_rto: Duration::from_secs(6),
        max_unanswered_rtos: 2,
        idle_timeout: Duration::from_secs(10),
        ..config()
    }
}

/// A backed-off RTO longer than the idle time must not make a live peer look
/// unreachable: the sender waits for `max_unanswered_rtos` (here two)
/// unanswered retransmissions.
#[test]
fn idle_timeout_waits_for_two_unanswered_retransmissions() {
    let cfg = six_second_rtos_ten_second_idle();
    let mut s = established(TcpVariant::Reno, cfg, 10_000);
    // Heard at 100 ms (SYN-ACK, which gave an RTT sample: RTO = min 6 s).
    assert!(!drain(&mut s, ms(100)).is_empty());
    let first_rto = s.poll_timeout().unwrap();
    assert_eq!(first_rto, ms(6_100));
    s.handle_timeout(first_rto); // 1st unanswered RTO; backs off to 12 s
    drain(&mut s, first_rto);
    // 10 s after the last word from the peer: only one retransmission unanswered.
    s.handle_timeout(ms(10_100));
    assert!(!s.is_closed(), "one unanswered retransmission is not yet unreachable");
    let second_rto = ms(18_100);
    s.handle_timeout(second_rto - Duration::from_nanos(1));
    assert!(!s.is_closed());
    s.handle_timeout(second_rto); // 2nd unanswered RTO
    drain(&mut s, second_rto);
    assert!(!s.is_closed(), "the second retransmission gets its chance");
    s.handle_timeout(second_rto + Duration::from_nanos(1));
    assert!(s.is_closed(), "two unanswered retransmissions and ten silent seconds: unreachable");
}

/// A driver that wakes late, with the idle check and a backed-off RTO both
/// due: the RTO runs and the idle check comes again after it, at a later
/// instant (found by fuzzing: re-armed at the due RTO, the idle timer ran
/// at the same instant forever). The call runs on a thread so that a
/// regression fails the test instead of hanging it.
#[test]
fn an_idle_check_and_an_rto_due_together_both_run_once() {
    let cfg = six_second_rtos_ten_second_idle();
    let mut s = established(TcpVariant::Reno, cfg, 10_000);
    assert!(!drain(&mut s, ms(100)).is_empty());
    s.handle_timeout(ms(6_100)); // 1st unanswered RTO; the next at 18.1 s
    drain(&mut s, ms(6_100));
    // Woken at 20 s: the idle check (due at 10.1 s) and the RTO (18.1 s).
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        s.handle_timeout(ms(20_000));
        let _ = done.send(s);
    });
    let mut s = finished.recv_timeout(std::time::Duration::from_secs(60)).expect("handle_timeout returned");
    let sent = drain(&mut s, ms(20_000));
    assert!(sent.iter().any(|(r, _)| r.seq == 1), "the RTO ran: the head goes again");
    assert!(!s.is_closed(), "the second retransmission gets its chance");
    assert!(s.poll_timeout().is_some_and(|t| t > ms(20_000)), "every timer moved past now: {:?}", s.poll_timeout());
}

/// The receiver outwaits a sender in exponential backoff: it gives up only
/// after the idle time plus `max_unanswered_rtos` maximum RTOs of silence.
#[test]
fn receiver_outwaits_a_backed_off_sender() {
    let cfg = TcpConfig { idle_timeout: Duration::from_secs(10), ..config() };
    let limit = ms(0) + cfg.idle_timeout + cfg.max_rto * cfg.max_unanswered_rtos as u64;
    let mut r = listening(cfg);
    r.handle_timeout(ms(10_001));
    assert!(!r.is_closed(), "10 s of silence may be a sender in backoff");
    r.handle_timeout(limit - Duration::from_nanos(1));
    assert!(!r.is_closed());
    r.handle_timeout(limit);
    assert!(r.is_closed());
}

#[test]
fn hearing_from_the_peer_restarts_the_idle_timer() {
    let mut s = established(TcpVariant::Reno, config(), 100_000);
    drain(&mut s, ms(100));
    ack(&mut s, ms(9_000), seg(1));
    s.handle_timeout(ms(10_100));
    assert!(!s.is_closed());
}

// ------------------------------------------------------ connection & input

#[test]
fn sender_finishes_only_when_the_fin_is_acknowledged() {
    let mut s = established(TcpVariant::NewReno, with_cwnd(4), 2_500);
    let sent = drain(&mut s, ms(100));
    assert_eq!(seqs(&sent), vec![seg(0), seg(1), seg(2)]);
    assert_eq!(sent[2].1.len(), 500);
    assert!(sent[2].0.control.contains(Control::FIN), "the FIN rides on the last segment");
    ack(&mut s, ms(200), 2_501);
    assert!(!s.is_closed(), "all data but not the FIN");
    assert_eq!(s.stats().bytes_delivered, 2_500);
    ack(&mut s, ms(200), 2_502);
    assert!(s.is_closed());
    assert!(events(&mut s).contains(&EngineEvent::Finished));
    assert_eq!(s.poll_timeout(), None);
}

#[test]
fn reset_fails_the_connection() {
    // Nothing sent yet: snd_una = snd_max = 1, the exact sequence.
    let mut s = established(TcpVariant::Tahoe, config(), 100);
    s.handle_input(ms(150), &datagram(Control::RST, 0, 1, &[]));
    assert!(s.is_closed());
    assert!(events(&mut s).contains(&EngineEvent::Failed(FailReason::Reset)));
    // A receiver expecting byte 1 takes an RST naming 1 as the sender's end.
    let mut r = listening(config());
    r.handle_input(ms(150), &datagram(Control::RST, 1, 0, &[]));
    assert!(events(&mut r).contains(&EngineEvent::Failed(FailReason::Reset)));
}

/// RFC 5961 §3: a sender takes an RST only at exactly `snd_una`; one inside
/// `(snd_una, snd_max]` draws a re-sent head segment (at most one per
/// 100 ms), anything else is ignored. Counted either way.
#[test]
fn a_reset_ends_the_sender_only_at_exactly_snd_una() {
    let mut s = established(TcpVariant::NewReno, with_cwnd(4), 10_000);
    let sent = drain(&mut s, ms(100));
    assert_eq!(seqs(&sent), vec![seg(0), seg(1), seg(2), seg(3)]);
    ack(&mut s, ms(150), seg(1));
    drain(&mut s, ms(150));
    // Outside the window (below snd_una, beyond snd_max, zero): ignored.
    for bad in [0, seg(0), seg(9)] {
        s.handle_input(ms(160), &datagram(Control::RST, 0, bad, &[]));
        assert!(!s.is_closed(), "{bad}");
        assert!(drain(&mut s, ms(160)).is_empty(), "no challenge for {bad}");
    }
    // Inside but not exact: the segment at snd_una goes again, once.
    s.handle_input(ms(170), &datagram(Control::RST, 0, seg(3), &[]));
    assert!(!s.is_closed());
    assert_eq!(seqs(&drain(&mut s, ms(170))), vec![seg(1)]);
    s.handle_input(ms(180), &datagram(Control::RST, 0, seg(2), &[]));
    assert!(drain(&mut s, ms(180)).is_empty(), "one challenge per 100 ms");
    assert_eq!((s.stats().resets_ignored, s.stats().reset_challenges), (5, 1));
    assert!(events(&mut s).iter().all(|e| !matches!(e, EngineEvent::Failed(_))));
    // Exactly snd_una: the connection ends.
    s.handle_input(ms(190), &datagram(Control::RST, 0, seg(1), &[]));
    assert!(events(&mut s).contains(&EngineEvent::Failed(FailReason::Reset)));
}

/// A receiver takes a sender's RST only if it names a sequence at or beyond
/// the next byte it expects and within a window of it.
#[test]
fn a_receiver_takes_a_reset_only_within_its_window() {
    let mut r = listening(config());
    r.handle_input(ms(0), &datagram(Control::SYN, 0, 0, &[]));
    drain(&mut r, ms(0));
    r.handle_input(ms(10), &datagram(Control::ACK, 1, 1, &[]));
    r.handle_input(ms(10), &datagram(Control::ACK, 1, 1, &[7; 500]));
    for bad in [0, 500, 501 + (64 << 20) + 1] {
        r.handle_input(ms(20), &datagram(Control::RST, bad, 0, &[]));
        assert!(!r.is_closed(), "{bad}");
    }
    assert_eq!(r.stats().resets_ignored, 3);
    r.handle_input(ms(30), &datagram(Control::RST, 2_001, 0, &[]));
    assert!(events(&mut r).contains(&EngineEvent::Failed(FailReason::Reset)));
}

#[test]
fn a_busy_reset_fails_the_sender_with_busy_and_other_resets_stay_resets() {
    for (payload, want) in [(&[1u8][..], FailReason::Busy), (&[9], FailReason::Reset), (&[1, 1], FailReason::Reset)] {
        // Refused at the handshake (the SYN is unanswered but for the RST).
        let mut s = TcpSender::new(config(), TcpVariant::NewReno, CONN, vec![0; 100], ms(0));
        drain(&mut s, ms(0));
        s.handle_input(ms(5), &datagram(Control::RST, 0, 0, payload));
        assert_eq!(events(&mut s), vec![EngineEvent::Failed(want)], "{payload:?}");
    }
}

#[test]
fn stray_and_malformed_datagrams_are_counted_and_ignored() {
    let mut s = established(TcpVariant::Reno, config(), 10_000);
    let mut r = listening(config());
    drain(&mut s, ms(100));
    let good = datagram(Control::ACK, 1, seg(1), &[]);
    let mut wrong_conn = good.clone();
    wrong_conn[8] ^= 0xff;
    let mut atp = good.clone();
    atp[0] = ProtocolId::Atp as u8;
    let truncated = good[..20].to_vec();
    let mut bad_flags = good.clone();
    bad_flags[2] |= 0x08;
    for bad in [&wrong_conn, &atp, &truncated, &bad_flags] {
        s.handle_input(ms(150), bad);
        r.handle_input(ms(150), bad);
    }
    assert_eq!(s.stats().dropped_datagrams, 4);
    assert_eq!(r.stats().dropped_datagrams, 4);
    assert!(drain(&mut s, ms(150)).is_empty());
    assert!(drain(&mut r, ms(150)).is_empty());
    assert_eq!(cwnd(&s), 1.0);
    // An ACK for data never sent is refused too.
    ack(&mut s, ms(150), seg(5));
    assert_eq!(s.stats().dropped_datagrams, 5);
    assert_eq!(s.stats().bytes_delivered, 0);
}

#[test]
fn variants_map_to_protocol_names() {
    for variant in TcpVariant::ALL {
        assert_eq!(TcpVariant::from_protocol(variant.protocol()), Some(variant));
    }
    assert_eq!(TcpVariant::from_protocol(Protocol::AtpAdaptive), None);
}

#[test]
fn tcp_pair_transfers_including_an_empty_transfer() {
    for variant in TcpVariant::ALL {
        for len in [0, 1, 1436, 50_000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let s = TcpSender::new(TcpConfig::default(), variant, CONN, data.clone(), Instant::ZERO);
            let r = TcpReceiver::new(TcpConfig::default(), CONN, Instant::ZERO);
            let mut pair = Pair::new(s, r, ToyChannel::default(), 1);
            assert!(pair.run(Instant::from_nanos(60_000_000_000), 100_000), "{variant:?} {len}");
            assert_eq!(pair.b.take_delivered(), data);
            assert_eq!(pair.events_a.first(), Some(&EngineEvent::Connected));
            assert!(pair.events_a.contains(&EngineEvent::Finished));
            assert!(pair.events_b.contains(&EngineEvent::Finished));
            assert_eq!(pair.a.stats().retransmissions, 0, "lossless channel");
        }
    }
}

// ------------------------------------------------------ out-of-order memory

#[test]
fn receiver_holds_tiny_segments_only_up_to_its_reorder_limit() {
    let limit = 100_000;
    let mut r = listening(TcpConfig { max_reorder_bytes: limit, ..config() });
    // One-byte segments at every other byte of the window beyond a hole.
    let window = 64 * MSS;
    for k in 0..window / 2 {
        r.handle_input(ms(10), &datagram(Control::ACK, seg(0) + 1 + 2 * k, 1, &[7]));
    }
    assert!(r.reorder_charge() <= limit, "{}", r.reorder_charge());
    let held = r.buffered_segments() as u64;
    assert_eq!(held, limit / (1 + crate::reorder::PIECE_OVERHEAD));
    assert_eq!(r.stats().dropped_over_buffer_limit, window / 2 - held);
    // Every one was answered with a duplicate ACK all the same.
    assert_eq!(acks_sent(&mut r, ms(10)).len() as u64, (window / 2).min(1024));
}

#[test]
fn overlapping_segments_are_held_once() {
    // Segments [k, window end) for every k: the old per-segment store kept
    // each copy, a quadratic amount of memory in the window.
    let mut r = listening(config());
    let end = seg(64);
    for k in 1..2_000 {
        let start = seg(0) + k;
        r.handle_input(ms(10), &datagram(Control::ACK, start, 1, &vec![1; (end - start) as usize]));
    }
    assert_eq!(r.buffered_segments(), 1);
    assert!(r.reorder_charge() <= end - seg(0) + crate::reorder::PIECE_OVERHEAD, "{}", r.reorder_charge());
    r.set_reorder_limit(0);
    r.handle_input(ms(20), &datagram(Control::ACK, seg(0), 1, &[1]));
    assert_eq!(r.take_delivered().len() as u64, end - seg(0));
}

/// The default gives up only after RFC 1122 §4.2.3.5's R2 (at least 100 s
/// of silence), so that a route outage of a few seconds while nodes move
/// does not end the connection.
#[test]
fn by_default_the_sender_outlasts_a_route_outage_of_a_minute() {
    let mut s = established(TcpVariant::NewReno, config(), 10_000);
    assert!(!drain(&mut s, ms(100)).is_empty());
    let mut now = ms(100);
    while let Some(deadline) = s.poll_timeout().filter(|d| *d < ms(60_100)) {
        s.handle_timeout(deadline);
        drain(&mut s, deadline);
        now = deadline;
    }
    assert!(now > ms(10_000), "several retransmission timeouts went unanswered");
    assert!(!s.is_closed(), "a minute of silence");
    while let Some(deadline) = s.poll_timeout().filter(|d| *d <= ms(1_000_000)) {
        s.handle_timeout(deadline);
        drain(&mut s, deadline);
        if s.is_closed() {
            assert!(deadline >= ms(100_100), "gave up after {deadline:?}");
            return;
        }
    }
    panic!("never gave up");
}
