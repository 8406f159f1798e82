//! RACK-TLP in the SACK sender, each test worked by hand from RFC 8985.
//! The handshake (SYN at 0, SYN-ACK at 100 ms) gives one RTT sample of
//! 100 ms: SRTT 100 ms, RTTVAR 50 ms, RTO 300 ms, and RACK.min_RTT 100 ms,
//! so the reordering window is min_RTT / 4 = 25 ms. MSS 1000, segment `k`
//! at `1 + 1000 k`, as in [`super::tests`].

use super::tests::{ack, drain, established, ms, sack_ack, seg, seqs, with_cwnd};
use super::*;
use crate::engine::Engine;
use crate::wire::Control;

fn rack(cwnd: u32) -> TcpConfig {
    TcpConfig { sack: true, rack_tlp: true, ..with_cwnd(cwnd) }
}

/// Four segments at 100 ms; segment 1 is SACKed at 200 ms (RACK.rtt
/// 100 ms). Segment 0, sent at the same instant but before it, is lost
/// once 100 + 100 + 25 = 225 ms have passed: the RACK timer says so, where
/// RFC 6675 would wait for two more duplicate ACKs. Meanwhile the SACKed
/// segment leaves the pipe and segment 4 goes. At 225 ms recovery starts
/// (ssthresh = 5 segments in flight / 2 = 2.5) with segment 0; the pipe
/// (0 resent, 2, 3, 4: 4000 bytes) holds the rest back.
#[test]
fn a_hole_is_lost_a_quarter_min_rtt_after_the_rtt_of_the_later_segment_sacked() {
    for variant in [TcpVariant::Sack, TcpVariant::Cubic] {
        let mut s = established(variant, rack(4), 20_000);
        assert_eq!(drain(&mut s, ms(100)).len(), 4);
        sack_ack(&mut s, ms(200), seg(0), &[(seg(1), seg(2))]);
        assert_eq!(seqs(&drain(&mut s, ms(200))), [seg(4)], "{variant:?}");
        assert!(!s.cc_metrics().in_recovery);
        assert_eq!(s.poll_timeout(), Some(ms(225)), "{variant:?}: the RACK timer");
        s.handle_timeout(ms(225));
        assert_eq!(seqs(&drain(&mut s, ms(225))), [seg(0)], "{variant:?}");
        let m = s.cc_metrics();
        assert!(m.in_recovery, "{variant:?}");
        if variant == TcpVariant::Sack {
            assert_eq!((m.cwnd_segments, m.ssthresh_segments), (2.5, 2.5));
        }
        assert_eq!(s.tcp_stats(ms(225)).rack_lost_segments, 1);
    }
}

/// The same ACK without RACK (`rack_tlp = false`): RFC 6675 needs three
/// duplicate ACKs (or three SACKed segments) and waits.
#[test]
fn without_rack_one_sacked_segment_starts_nothing() {
    let mut s = established(TcpVariant::Sack, TcpConfig { rack_tlp: false, ..rack(4) }, 20_000);
    drain(&mut s, ms(100));
    sack_ack(&mut s, ms(200), seg(0), &[(seg(1), seg(2))]);
    assert_eq!(seqs(&drain(&mut s, ms(200))), [seg(4)]);
    // The next deadline is the RTO (100 + 300 ms), not a RACK timer.
    assert_eq!(s.poll_timeout(), Some(ms(400)));
}

/// A whole flight lost: no ACK comes back to trigger RACK. The probe
/// timer (2·SRTT = 200 ms after the last segment, before the RTO at
/// 400 ms) sends new segment 4, whatever the window; its SACK at 400 ms
/// makes 0–3 lost (sent at 100 ms: 100 + 100 + 25 ≤ 400). Recovery
/// (ssthresh 2.5) resends 0 at once and 1 as the pipe allows — and the RTO
/// never fires.
#[test]
fn a_probe_of_new_data_finds_a_lost_flight_without_a_timeout() {
    let mut s = established(TcpVariant::Sack, rack(4), 20_000);
    assert_eq!(drain(&mut s, ms(100)).len(), 4);
    assert_eq!(s.poll_timeout(), Some(ms(300)), "the PTO");
    s.handle_timeout(ms(300));
    assert_eq!(seqs(&drain(&mut s, ms(300))), [seg(4)]);
    sack_ack(&mut s, ms(400), seg(0), &[(seg(4), seg(5))]);
    assert_eq!(seqs(&drain(&mut s, ms(400))), [seg(0), seg(1)]);
    let stats = s.tcp_stats(ms(400));
    assert_eq!((stats.timeouts, stats.tlp_probes, stats.rack_lost_segments), (0, 1, 4));
    assert!(s.cc_metrics().in_recovery);
}

/// A lost tail: 4000 bytes (the last segment carries the FIN); 0 and 1
/// arrive, 2 and 3 are lost. The ACK at 200 ms restarts the probe timer:
/// 2·SRTT = 200 ms, before the RTO (200 + 250 ms after the second 100 ms
/// sample). With nothing new to send the probe resends the last segment
/// (3 and the FIN); its SACK makes 2 lost, which is resent at once.
#[test]
fn a_probe_resends_the_last_segment_and_its_sack_exposes_the_lost_tail() {
    // cwnd 5: the FIN's sequence number needs room beside four segments.
    let mut s = established(TcpVariant::Sack, rack(5), 4000);
    assert_eq!(drain(&mut s, ms(100)).len(), 4);
    ack(&mut s, ms(200), seg(2));
    assert!(drain(&mut s, ms(200)).is_empty());
    assert_eq!(s.poll_timeout(), Some(ms(400)), "the PTO");
    s.handle_timeout(ms(400));
    let probe = drain(&mut s, ms(400));
    assert_eq!(seqs(&probe), [seg(3)]);
    assert!(probe[0].0.control.contains(Control::FIN));
    sack_ack(&mut s, ms(500), seg(2), &[(seg(3), seg(4) + 1)]);
    assert_eq!(seqs(&drain(&mut s, ms(500))), [seg(2)]);
    let stats = s.tcp_stats(ms(500));
    assert_eq!((stats.timeouts, stats.tlp_probes, stats.rack_lost_segments), (0, 1, 1));
    assert_eq!(s.stats().retransmissions, 2);
}

/// A retransmission lost again is found by RACK when data sent after it
/// is SACKed (RFC 6675 has no rule for it and waits for the RTO).
#[test]
fn a_lost_retransmission_is_resent_again_without_a_timeout() {
    let mut s = established(TcpVariant::Sack, rack(4), 20_000);
    drain(&mut s, ms(100));
    sack_ack(&mut s, ms(200), seg(0), &[(seg(1), seg(2))]);
    drain(&mut s, ms(200));
    s.handle_timeout(ms(225));
    assert_eq!(seqs(&drain(&mut s, ms(225))), [seg(0)]);
    // Segments 2, 3 and 4 arrive; the resent 0 does not. When 4 (sent at
    // 200 ms) is SACKed at 300 ms, RACK.rtt = 100 ms and RACK.xmit_ts =
    // 200 ms: the retransmission of 0 (225 ms) was sent after it, not yet
    // judged. Segment 5 goes out in the room the SACKs made.
    sack_ack(&mut s, ms(300), seg(0), &[(seg(1), seg(5))]);
    let sent = seqs(&drain(&mut s, ms(300)));
    assert!(!sent.contains(&seg(0)), "{sent:?}");
    // Segment 5's SACK at 340 ms (RACK.xmit_ts = 300 ms, rtt 40 ms): in
    // recovery without reordering the window is 0, and 225 + 40 ≤ 340.
    let five = *sent.first().expect("new data after the SACKs");
    sack_ack(&mut s, ms(340), seg(0), &[(seg(1), five + MSS)]);
    assert_eq!(seqs(&drain(&mut s, ms(340)))[0], seg(0));
    let stats = s.tcp_stats(ms(340));
    assert_eq!((stats.timeouts, stats.rack_lost_segments), (0, 2));
}

const MSS: u64 = super::tests::MSS;

/// After a timeout the first unacknowledged segment goes at once, even
/// when segments sent less than RACK.rtt before it (not marked lost)
/// fill the pipe (RFC 6298 §5.4; Linux `tcp_retransmit_timer`). Eight
/// segments at 100 ms; segment 1's SACK at 250 ms (RACK.rtt 150 ms) lets
/// 8 out and makes 0 lost at 275 ms (100 + 150 + 25): recovery, cwnd 4.5,
/// 0 resent, the RTO restarted to 575 ms. Segments 2–7 are SACKed at
/// 500 ms (RACK.rtt 400 ms), which lets 9 and 10 out. At the RTO, 0 is
/// lost (the first), while 8 (sent at 250 ms), 9 and 10 (500 ms) are
/// younger than RACK.rtt and stay in the pipe, 3000 bytes over the loss
/// window of one segment.
#[test]
fn after_a_timeout_the_head_goes_at_once_whatever_the_pipe() {
    let mut s = established(TcpVariant::Sack, rack(8), 20_000);
    assert_eq!(drain(&mut s, ms(100)).len(), 8);
    sack_ack(&mut s, ms(250), seg(0), &[(seg(1), seg(2))]);
    assert_eq!(seqs(&drain(&mut s, ms(250))), [seg(8)]);
    assert_eq!(s.poll_timeout(), Some(ms(275)), "the RACK timer");
    s.handle_timeout(ms(275));
    assert_eq!(seqs(&drain(&mut s, ms(275))), [seg(0)]);
    sack_ack(&mut s, ms(500), seg(0), &[(seg(1), seg(8))]);
    assert_eq!(seqs(&drain(&mut s, ms(500))), [seg(9), seg(10)]);
    assert_eq!(s.poll_timeout(), Some(ms(575)), "the RTO, 300 ms after the retransmission");
    s.handle_timeout(ms(575));
    assert_eq!(seqs(&drain(&mut s, ms(575))), [seg(0)]);
    assert_eq!(s.tcp_stats(ms(575)).timeouts, 1);
}
