//! The sender's instrumentation for seed 002 §2 (Figs. 2–3): slow-start
//! entries and time, the RTO and RTT samples it traces. The helpers and the
//! 1000-byte MSS are [`super::tests`]'s.

use super::tests::*;
use super::*;
use crate::engine::{Engine, EngineEvent, TraceSample};
use crate::sender_core::SendControl;
use crate::wire::Control;

// ------------------------------------- instrumentation (seed 002 §2, Figs. 2–3)

/// The sender's trace samples other than cwnd and retransmissions.
fn instrumentation_traces(events: Vec<EngineEvent>) -> Vec<TraceSample> {
    events
        .into_iter()
        .filter_map(|e| match e {
            EngineEvent::Trace(t @ (TraceSample::Rto { .. } | TraceSample::RttSample { .. })) => Some(t),
            EngineEvent::Trace(t @ TraceSample::SlowStart { .. }) => Some(t),
            _ => None,
        })
        .collect()
}

#[test]
fn slow_start_entries_and_time_follow_a_scripted_loss_pattern() {
    let mut s = established(TcpVariant::NewReno, config(), 50_000);
    assert_eq!(seqs(&drain(&mut s, ms(100))), vec![seg(0)]);
    ack(&mut s, ms(200), seg(1));
    assert_eq!(seqs(&drain(&mut s, ms(200))), vec![seg(1), seg(2)]);
    // Both are lost: the timer (RTO 250 ms after the second sample) fires,
    // cwnd 1 and ssthresh 2 — slow start begins anew.
    assert_eq!(s.poll_timeout(), Some(ms(450)));
    s.handle_timeout(ms(450));
    assert_eq!(seqs(&drain(&mut s, ms(450))), vec![seg(1)]);
    // Its ACK brings cwnd to ssthresh: congestion avoidance from 550 ms.
    ack(&mut s, ms(550), seg(2));
    assert_eq!((cwnd(&s), s.cc_metrics().ssthresh_segments), (2.0, 2.0));
    assert_eq!(seqs(&drain(&mut s, ms(550))), vec![seg(2), seg(3)]);
    // Both lost again: the backed-off RTO (500 ms) expires.
    assert_eq!(s.poll_timeout(), Some(ms(1_050)));
    s.handle_timeout(ms(1_050));

    let stats = s.tcp_stats(ms(1_550));
    assert_eq!(stats.slow_start_entries, 3);
    assert_eq!(stats.slow_start_time, Duration::from_millis(450 + 500));
    assert_eq!((stats.timeouts, stats.rtt_samples, stats.max_rto), (2, 2, Duration::from_millis(1_000)));
    let rto = |at, rto_ms| TraceSample::Rto { at: ms(at), rto: Duration::from_millis(rto_ms) };
    let rtt = |at| TraceSample::RttSample { at: ms(at), rtt: Duration::from_millis(100) };
    let slow_start = |at, entered| TraceSample::SlowStart { at: ms(at), entered };
    assert_eq!(
        instrumentation_traces(events(&mut s)),
        // The handshake's (RTT 100 ms, RTO 300 ms, slow start entered at
        // 100 ms) were drained by `established`; the counters above include them.
        vec![
            rtt(200),
            rto(200, 250),
            rto(450, 500),
            slow_start(450, true),
            slow_start(550, false),
            rto(1_050, 1_000),
            slow_start(1_050, true),
        ]
    );
    // The open period stops counting when the connection closes.
    let (una, _) = s.control.reset_window();
    s.handle_input(ms(1_100), &datagram(Control::RST, 0, una, &[]));
    assert_eq!(s.tcp_stats(ms(9_000)).slow_start_time, Duration::from_millis(450 + 50));
}

#[test]
fn tahoe_fast_retransmit_restarts_slow_start_and_fast_recovery_is_not_slow_start() {
    let entries = |s: &TcpSender| s.tcp_stats(ms(200)).slow_start_entries;
    let mut tahoe = eight_in_flight_then_dupacks(TcpVariant::Tahoe, 3);
    assert_eq!(entries(&tahoe), 2, "at the handshake, and after the fast retransmit (cwnd 1 < ssthresh 4)");
    assert!(events(&mut tahoe).contains(&EngineEvent::Trace(TraceSample::SlowStart { at: ms(200), entered: true })));
    let mut newreno = eight_in_flight_then_dupacks(TcpVariant::NewReno, 3);
    assert_eq!(entries(&newreno), 1);
    assert!(events(&mut newreno).contains(&EngineEvent::Trace(TraceSample::SlowStart { at: ms(200), entered: false })));
    // A partial ACK deflates cwnd (10 − 3 + 1 = 8 ≥ 4 here, but below
    // ssthresh in general): still recovery, not slow start.
    let s = two_holes(TcpVariant::NewReno);
    assert!(s.cc_metrics().in_recovery);
    assert_eq!(s.tcp_stats(ms(300)).slow_start_time, Duration::from_millis(100));
}

#[test]
fn the_handshake_traces_the_first_rtt_sample_and_rto_and_starts_slow_start() {
    let mut s = TcpSender::new(config(), TcpVariant::NewReno, CONN, vec![0; 10], ms(0));
    drain(&mut s, ms(0));
    assert!(events(&mut s).is_empty(), "nothing is traced before the first sample");
    s.handle_input(ms(100), &datagram(Control::SYN | Control::ACK, 0, 1, &[]));
    let all = events(&mut s);
    assert_eq!(all.first(), Some(&EngineEvent::Connected));
    assert_eq!(
        instrumentation_traces(all),
        vec![
            TraceSample::RttSample { at: ms(100), rtt: Duration::from_millis(100) },
            TraceSample::Rto { at: ms(100), rto: Duration::from_millis(300) },
            TraceSample::SlowStart { at: ms(100), entered: true },
        ]
    );
    let stats = s.tcp_stats(ms(100));
    assert_eq!((stats.slow_start_entries, stats.rtt_samples, stats.max_rto), (1, 1, Duration::from_millis(300)));
}

#[test]
fn every_backoff_traces_the_new_rto() {
    let mut s = established(TcpVariant::Reno, config(), 50_000);
    drain(&mut s, ms(100));
    for at in [400, 1_000, 2_200] {
        assert_eq!(s.poll_timeout(), Some(ms(at)));
        s.handle_timeout(ms(at));
        drain(&mut s, ms(at));
    }
    let rtos: Vec<_> = events(&mut s)
        .into_iter()
        .filter_map(|e| match e {
            EngineEvent::Trace(TraceSample::Rto { at, rto }) => Some((at, rto.as_nanos() / 1_000_000)),
            _ => None,
        })
        .collect();
    // The handshake's 300 ms was drained by `established`.
    assert_eq!(rtos, vec![(ms(400), 600), (ms(1_000), 1_200), (ms(2_200), 2_400)]);
    let stats = s.tcp_stats(ms(2_200));
    assert_eq!((stats.timeouts, stats.max_rto), (3, Duration::from_millis(2_400)));
    assert_eq!(stats.slow_start_entries, 4, "the handshake and every RTO");
}
