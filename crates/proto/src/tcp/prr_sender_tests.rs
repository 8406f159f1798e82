//! PRR (RFC 6937) in the SACK sender, against RFC 6675's window, worked by
//! hand. As in [`super::rack_sender_tests`]: SRTT 100 ms after the
//! handshake, MSS 1000, segment `k` at `1 + 1000 k`; RACK-TLP on.

use super::tests::{drain, established, ms, sack_ack, seg, seqs, with_cwnd};
use super::*;

fn config(prr: bool) -> TcpConfig {
    TcpConfig { sack: true, rack_tlp: true, prr, ..with_cwnd(10) }
}

/// Ten segments at 100 ms, 0–5 lost, 6–9 SACKed one by one at 200 ms.
/// The first two SACKs empty the pipe of a segment each, so 10 and 11 go
/// out. The third makes 0–5 lost (no reordering seen and three segments
/// SACKed: RACK's reordering window is 0, RFC 8985 §6.2), and recovery
/// begins with 12 segments in flight: ssthresh 6, RecoverFS 12, pipe 3
/// (9, 10, 11). What each ACK lets out:
///
/// | ACK | RFC 6675 (cwnd = ssthresh = 6) | PRR (pipe ≤ ssthresh: SSRB) |
/// |---|---|---|
/// | SACK 6–8, recovery begins | 0 (the head), 1, 2: pipe 3 → 6 | 0 (the head), 1: MIN(6 − 3, MAX(1 − 0, 1) + 1) = 2 |
/// | SACK 6–9 | 3: pipe 5 → 6 | 2, 3: pipe 4 (10, 11, 0, 1), MIN(6 − 4, MAX(2 − 2, 1) + 1) = 2 |
///
/// RFC 6675 refills the pipe to cwnd on recovery's first ACK; PRR lets
/// out no more than slow start would (what was delivered, plus one).
#[test]
fn prr_refills_the_pipe_no_faster_than_slow_start() {
    let run = |prr: bool| {
        let mut s = established(TcpVariant::Sack, config(prr), 40_000);
        assert_eq!(drain(&mut s, ms(100)).len(), 10);
        let mut sent = Vec::new();
        for k in 7..=10 {
            sack_ack(&mut s, ms(200), seg(0), &[(seg(6), seg(k))]);
            sent.push(seqs(&drain(&mut s, ms(200))));
        }
        (sent, s.cc_metrics())
    };
    let (rfc6675, m) = run(false);
    assert!(m.in_recovery);
    assert_eq!((m.cwnd_segments, m.ssthresh_segments), (6.0, 6.0));
    assert_eq!(rfc6675, [vec![seg(10)], vec![seg(11)], vec![seg(0), seg(1), seg(2)], vec![seg(3)]]);
    let (prr, m) = run(true);
    assert_eq!(prr, [vec![seg(10)], vec![seg(11)], vec![seg(0), seg(1)], vec![seg(2), seg(3)]]);
    // The controller's window is untouched: PRR's lives in the sender.
    assert_eq!((m.cwnd_segments, m.ssthresh_segments), (6.0, 6.0));
}

/// Recovery ends when the cumulative ACK passes the recovery point, and
/// PRR with it: the next segments go under the controller's cwnd again.
#[test]
fn prr_ends_with_the_recovery() {
    let mut s = established(TcpVariant::Sack, config(true), 40_000);
    drain(&mut s, ms(100));
    for k in 7..=10 {
        sack_ack(&mut s, ms(200), seg(0), &[(seg(6), seg(k))]);
        drain(&mut s, ms(200));
    }
    assert!(s.control.prr.is_some());
    // Everything up to 11 (the recovery point 12) arrives.
    sack_ack(&mut s, ms(300), seg(12), &[]);
    assert!(!s.cc_metrics().in_recovery);
    assert!(s.control.prr.is_none());
}
