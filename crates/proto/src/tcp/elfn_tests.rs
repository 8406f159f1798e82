//! TCP-ELFN, rule by rule (Holland & Vaidya 1999, as seed 002 §2.4 describes
//! it: "the state of the TCP sender is frozen till a new route is
//! computed"). The helpers and the 1000-byte MSS are [`super::tests`]'s; after
//! `established` the SRTT is 100 ms and the RTO 300 ms.

use super::tests::{
    ack, acks_sent, cwnd, data_segment, drain, established, events, listening, ms, seg, seqs, with_cwnd, CONN, MSS,
};
use super::*;
use crate::connection::{EngineConfig, SenderEngine};
use crate::engine::{Engine, EngineEvent, RouteNotice, TraceSample};
use crate::wire::Control;

/// An ELFN sender's settings: a window of four segments.
fn elfn_config() -> TcpConfig {
    TcpConfig { elfn: true, ..with_cwnd(4) }
}

/// An ELFN sender with segments 0–3 in flight (sent at 100 ms, so the
/// retransmission timer is due at 400 ms).
fn four_in_flight() -> TcpSender {
    let mut s = established(TcpVariant::NewReno, elfn_config(), 50_000);
    assert_eq!(seqs(&drain(&mut s, ms(100))), (0..4).map(seg).collect::<Vec<_>>());
    assert_eq!(s.poll_timeout(), Some(ms(400)));
    s
}

/// Runs every timer due up to `until`, checking that deadlines move forward,
/// and returns what was sent at each wake-up.
fn run_timers(s: &mut TcpSender, mut now: Instant, until: Instant) -> Vec<(Instant, Vec<u64>)> {
    let mut sent = Vec::new();
    while let Some(at) = s.poll_timeout().filter(|&at| at <= until) {
        assert!(at > now, "deadline {at:?} does not move past {now:?}");
        now = at;
        s.handle_timeout(now);
        sent.push((now, seqs(&drain(s, now))));
    }
    sent
}

fn standby_trace(at: Instant, entered: bool) -> EngineEvent {
    EngineEvent::Trace(TraceSample::Standby { at, entered })
}

#[test]
fn a_failure_notice_stops_the_timer_and_only_a_probe_goes_out_per_interval() {
    let mut s = four_in_flight();
    s.handle_route_notice(ms(150), RouteNotice::Failed);
    assert!(s.in_standby());
    assert!(events(&mut s).contains(&standby_trace(ms(150), true)));
    // Neither the RTO (400 ms) nor the idle timer: the first probe, 2 s on.
    assert_eq!(s.poll_timeout(), Some(ms(2_150)));
    assert!(drain(&mut s, ms(150)).is_empty());
    s.handle_timeout(ms(400));
    assert!(drain(&mut s, ms(400)).is_empty(), "the old RTO instant passes without a retransmission");
    for k in 1..=5u64 {
        let due = ms(150 + 2_000 * k);
        assert_eq!(s.poll_timeout(), Some(due));
        let early = due - Duration::from_millis(1);
        s.handle_timeout(early);
        assert!(drain(&mut s, early).is_empty(), "probe {k} early");
        s.handle_timeout(due);
        let sent = drain(&mut s, due);
        assert_eq!(seqs(&sent), vec![seg(0)], "probe {k}: the first unacknowledged segment, once");
        assert_eq!(sent[0].1.len(), MSS as usize);
        assert!(drain(&mut s, due + Duration::from_millis(500)).is_empty());
    }
    let stats = s.tcp_stats(ms(10_150));
    assert_eq!((stats.elfn_probes, stats.timeouts, stats.elfn_standbys), (5, 0, 1));
    assert_eq!(stats.elfn_standby_time, Duration::from_secs(10));
    assert_eq!(s.stats().retransmissions, 5, "a probe resends data");
}

#[test]
fn duplicate_acks_in_standby_change_nothing() {
    let mut s = four_in_flight();
    s.handle_route_notice(ms(150), RouteNotice::Failed);
    for _ in 0..3 {
        ack(&mut s, ms(200), seg(0));
    }
    assert!(drain(&mut s, ms(200)).is_empty(), "no fast retransmit while frozen");
    assert!(s.in_standby());
    assert_eq!((cwnd(&s), s.cc_metrics().in_recovery), (4.0, false));
    assert_eq!(s.poll_timeout(), Some(ms(2_150)));
}

#[test]
fn a_long_standby_neither_times_out_nor_backs_off_nor_gives_up() {
    // Boundary pair: without the notice, the same silence ends the connection
    // (5 s idle limit, no retransmission allowance) well within 30 s.
    let config = TcpConfig { idle_timeout: Duration::from_secs(5), max_unanswered_rtos: 0, ..elfn_config() };
    for notice in [false, true] {
        let mut s = established(TcpVariant::NewReno, config.clone(), 50_000);
        drain(&mut s, ms(100));
        if notice {
            s.handle_route_notice(ms(150), RouteNotice::Failed);
        }
        let end = ms(30_150);
        let sent = run_timers(&mut s, ms(150), end);
        let failed = events(&mut s).iter().any(|e| matches!(e, EngineEvent::Failed(_)));
        if !notice {
            assert!(failed && s.is_closed(), "plain silence gives up");
            continue;
        }
        assert!(!failed && !s.is_closed(), "a route outage is not a dead peer");
        let probes: Vec<_> = sent.iter().filter(|(_, seqs)| !seqs.is_empty()).collect();
        assert_eq!(probes.len(), 15);
        assert!(probes.iter().all(|(_, seqs)| seqs == &vec![seg(0)]));
        assert_eq!(s.rtt().rto(), Duration::from_millis(300), "no backoff");
        assert_eq!(cwnd(&s), 4.0);
        let stats = s.tcp_stats(end);
        assert_eq!((stats.timeouts, stats.elfn_probes), (0, 15));
        assert_eq!(stats.elfn_standby_time, Duration::from_secs(30));
    }
}

#[test]
fn reestablishment_restores_the_window_and_the_rto_and_rearms_the_timer() {
    // A loss in a window of eight: fast recovery with cwnd 7, ssthresh 4.
    let mut s = established(TcpVariant::NewReno, TcpConfig { elfn: true, ..with_cwnd(8) }, 20_000);
    assert_eq!(drain(&mut s, ms(100)).len(), 8);
    for _ in 0..3 {
        ack(&mut s, ms(200), seg(0));
    }
    assert_eq!(seqs(&drain(&mut s, ms(200))), vec![seg(0)]);
    let (frozen, rto) = (s.cc_metrics(), s.rtt().rto());
    assert_eq!((frozen.cwnd_segments, frozen.ssthresh_segments, frozen.in_recovery), (7.0, 4.0, true));

    s.handle_route_notice(ms(250), RouteNotice::Failed);
    assert_eq!(run_timers(&mut s, ms(250), ms(10_000)).len(), 4, "probes at 2.25, 4.25, 6.25, 8.25 s");
    s.handle_route_notice(ms(10_000), RouteNotice::Reestablished);
    assert!(!s.in_standby());
    assert!(events(&mut s).contains(&standby_trace(ms(10_000), false)));
    assert_eq!(s.cc_metrics(), frozen);
    assert_eq!(s.rtt().rto(), rto);
    assert_eq!(s.poll_timeout(), Some(ms(10_000) + rto), "the retransmission timer runs again, old RTO");
    // The head goes out at once; eight in flight exceed the window of 7.
    assert_eq!(seqs(&drain(&mut s, ms(10_000))), vec![seg(0)]);
    // The receiver held segments 1–7: the full ACK ends recovery and data
    // flows again, cwnd = min(ssthresh, flight + 1) = 2.
    ack(&mut s, ms(10_100), seg(8));
    assert!(!s.cc_metrics().in_recovery);
    assert_eq!(seqs(&drain(&mut s, ms(10_100))), vec![seg(8), seg(9)]);
    assert_eq!(s.poll_timeout(), Some(ms(10_100) + rto));
}

#[test]
fn a_backed_off_rto_is_restored_as_it_was_at_the_failure() {
    let mut s = four_in_flight();
    s.handle_timeout(ms(400));
    assert_eq!(seqs(&drain(&mut s, ms(400))), vec![seg(0)]);
    let (frozen, rto) = (s.cc_metrics(), s.rtt().rto());
    assert_eq!((rto, frozen.cwnd_segments), (Duration::from_millis(600), 1.0));
    s.handle_route_notice(ms(500), RouteNotice::Failed);
    run_timers(&mut s, ms(500), ms(7_000));
    s.handle_route_notice(ms(7_000), RouteNotice::Reestablished);
    assert_eq!((s.cc_metrics(), s.rtt().rto()), (frozen, rto));
    assert_eq!(s.poll_timeout(), Some(ms(7_600)));
    assert_eq!(s.tcp_stats(ms(7_000)).timeouts, 1, "the one before the failure");
}

#[test]
fn an_ack_of_new_data_in_standby_ends_it() {
    let mut s = four_in_flight();
    s.handle_route_notice(ms(150), RouteNotice::Failed);
    assert_eq!(run_timers(&mut s, ms(150), ms(2_150)), vec![(ms(2_150), vec![seg(0)])]);
    // The receiver had all four: the probe's answer acknowledges them.
    ack(&mut s, ms(2_200), seg(4));
    assert!(!s.in_standby());
    assert!(events(&mut s).contains(&standby_trace(ms(2_200), false)));
    assert_eq!(cwnd(&s), 5.0, "the frozen window of 4, opened by this ACK");
    assert_eq!(s.rtt().rto(), Duration::from_millis(300), "the probe is not timed");
    let stats = s.tcp_stats(ms(2_200));
    assert_eq!((stats.rtt_samples, stats.elfn_standby_time), (1, Duration::from_millis(2_050)));
    assert_eq!(seqs(&drain(&mut s, ms(2_200))), (4..9).map(seg).collect::<Vec<_>>());
    assert_eq!(s.poll_timeout(), Some(ms(2_500)));
}

#[test]
fn a_second_failure_notice_keeps_the_first_standby() {
    let mut s = four_in_flight();
    s.handle_route_notice(ms(150), RouteNotice::Failed);
    s.handle_route_notice(ms(1_000), RouteNotice::Failed);
    assert_eq!(s.poll_timeout(), Some(ms(2_150)), "the probe schedule is not restarted");
    assert_eq!(s.tcp_stats(ms(1_000)).elfn_standbys, 1);
    // Re-establishment without a failure, or a second one, changes nothing.
    s.handle_route_notice(ms(3_000), RouteNotice::Reestablished);
    let after = (s.cc_metrics(), s.poll_timeout());
    s.handle_route_notice(ms(3_001), RouteNotice::Reestablished);
    assert_eq!((s.cc_metrics(), s.poll_timeout()), after);
}

/// A scripted outage: the route fails at 150 ms and comes back at 5 s, the
/// retransmission timer fires meanwhile, then everything is acknowledged.
/// Returns what the sender did at every step, with or without the notices.
fn outage_script(variant: TcpVariant, config: TcpConfig, notices: bool) -> (Vec<String>, u64) {
    fn record(log: &mut Vec<String>, s: &mut TcpSender, now: Instant) {
        log.push(format!("{now:?}: {:?} {:?} {:?}", seqs(&drain(s, now)), events(s), s.poll_timeout()));
    }
    let mut log = Vec::new();
    let mut s = established(variant, config, 50_000);
    record(&mut log, &mut s, ms(100));
    if notices {
        s.handle_route_notice(ms(150), RouteNotice::Failed);
    }
    record(&mut log, &mut s, ms(150));
    while let Some(at) = s.poll_timeout().filter(|&at| at <= ms(5_000)) {
        s.handle_timeout(at);
        record(&mut log, &mut s, at);
    }
    if notices {
        s.handle_route_notice(ms(5_000), RouteNotice::Reestablished);
    }
    record(&mut log, &mut s, ms(5_000));
    ack(&mut s, ms(5_100), seg(4));
    record(&mut log, &mut s, ms(5_100));
    (log, s.tcp_stats(ms(5_100)).timeouts)
}

#[test]
fn plain_tcp_ignores_route_notices() {
    for variant in TcpVariant::ALL {
        let (with, timeouts) = outage_script(variant, with_cwnd(4), true);
        assert_eq!(with, outage_script(variant, with_cwnd(4), false).0, "{variant:?}");
        assert!(timeouts >= 3, "{variant:?}: the script's outage does time out plain TCP ({timeouts})");
    }
    // Boundary: with ELFN the same script goes differently.
    let elfn = TcpConfig { elfn: true, ..with_cwnd(4) };
    assert_ne!(
        outage_script(TcpVariant::NewReno, elfn.clone(), true).0,
        outage_script(TcpVariant::NewReno, elfn, false).0
    );
}

#[test]
fn the_receiver_ignores_route_notices() {
    let config = TcpConfig { elfn: true, ..with_cwnd(4) };
    let mut notified = listening(config.clone());
    let mut control = listening(config);
    notified.handle_route_notice(ms(10), RouteNotice::Failed);
    for r in [&mut notified, &mut control] {
        r.handle_input(ms(20), &data_segment(0, false));
    }
    assert_eq!(acks_sent(&mut notified, ms(20)), vec![seg(1)]);
    assert_eq!(acks_sent(&mut control, ms(20)), vec![seg(1)]);
    assert_eq!(notified.poll_timeout(), control.poll_timeout());
}

#[test]
fn the_protocol_name_decides_elfn() {
    let asks_for_elfn = || TcpConfig { elfn: true, ..TcpConfig::default() };
    for protocol in [Protocol::TcpTahoe, Protocol::TcpReno, Protocol::TcpNewReno] {
        let EngineConfig::Tcp { config, .. } = EngineConfig::new(protocol, |c| c, asks_for_elfn) else {
            panic!("{protocol}: not TCP");
        };
        assert!(!config.elfn, "{protocol}");
    }
    let EngineConfig::Tcp { variant, config } = EngineConfig::new(Protocol::TcpNewRenoElfn, |c| c, TcpConfig::default)
    else {
        panic!("tcp-newreno-elfn: not TCP");
    };
    assert!(variant == TcpVariant::NewReno && config.elfn);
    assert_eq!(config.elfn_probe_interval, Duration::from_secs(2), "Holland & Vaidya's interval");
    assert_eq!("tcp-newreno-elfn".parse::<Protocol>(), Ok(Protocol::TcpNewRenoElfn));
}

#[test]
fn a_failure_during_the_handshake_probes_with_the_syn() {
    let mut buf = [0u8; 1500];
    for (protocol, frozen) in [(Protocol::TcpNewReno, false), (Protocol::TcpNewRenoElfn, true)] {
        let config = EngineConfig::new(protocol, |c| c, TcpConfig::default);
        let mut sender = SenderEngine::with_data(&config, CONN, vec![1; 10], ms(0));
        let e = sender.engine_mut();
        e.handle_route_notice(ms(0), RouteNotice::Failed);
        assert_eq!(e.poll_transmit(ms(0), &mut buf).is_none(), frozen, "{protocol}");
        if frozen {
            assert_eq!(e.poll_timeout(), Some(ms(2_000)));
            e.handle_timeout(ms(2_000));
            let t = e.poll_transmit(ms(2_000), &mut buf).expect("the SYN as probe");
            let (repr, _) = crate::wire::parse_datagram(&buf[..t.len]).unwrap();
            assert_eq!(repr.control, Control(Control::SYN));
        }
    }
}
