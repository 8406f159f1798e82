//! SACK's rules, each pinned to hand-worked numbers: the scoreboard of RFC
//! 6675 §4 (`IsLost`, `SetPipe`, `NextSeg`), the receiver's blocks (RFC
//! 2018 §4) and a sender repairing two losses of one window in one round
//! trip. MSS 1000, segment `k` at `1 + 1000 k`, as in [`super::super::tests`].

use super::*;
use crate::engine::Engine;
use crate::tcp::tests::{ack, config, data_segment, drain, established, listening, ms, sack_ack, seg, seqs, with_cwnd};
use crate::tcp::{TcpConfig, TcpVariant};
use meshbed_core::Duration;

const MSS: u64 = 1000;

fn board(snd_una: u64, snd_max: u64, blocks: &[(u64, u64)]) -> Scoreboard {
    let mut b = Scoreboard::default();
    let (_, refused) = b.on_ack(snd_una, snd_max, blocks);
    assert_eq!(refused, 0);
    b
}

#[test]
fn blocks_merge_old_ones_are_ignored_and_unsent_ones_refused() {
    let mut b = Scoreboard::default();
    assert_eq!(b.on_ack(seg(0), seg(8), &[(seg(2), seg(3)), (seg(3), seg(4)), (seg(6), seg(7))]), (3000, 0));
    assert_eq!(b.sacked_end(seg(2)), Some(seg(4)), "touching blocks merge");
    // A D-SACK below snd_una changes nothing; a block past snd_max and an
    // empty one are refused.
    assert_eq!(b.on_ack(seg(0), seg(8), &[(0, 1), (seg(7), seg(9)), (seg(5), seg(5))]), (0, 2));
    // The cumulative ACK moves past the first range: it is forgotten.
    assert_eq!(b.on_ack(seg(5), seg(8), &[]), (0, 0));
    assert_eq!((b.sacked_bytes(), b.sacked_end(seg(2))), (1000, None));
}

/// IsLost: more than (DupThresh − 1)·SMSS = 2000 bytes SACKed above, or
/// three SACKed segments however short.
#[test]
fn is_lost_needs_more_than_two_segments_sacked_above() {
    let two = board(seg(0), seg(10), &[(seg(2), seg(3)), (seg(4), seg(5))]);
    assert!(!two.is_lost(seg(0), MSS, 3));
    let two_and_a_byte = board(seg(0), seg(10), &[(seg(2), seg(3)), (seg(4), seg(5) + 1)]);
    assert!(two_and_a_byte.is_lost(seg(0), MSS, 3));
    let three_short = board(seg(0), seg(10), &[(seg(2), seg(2) + 10), (seg(4), seg(4) + 10), (seg(6), seg(6) + 10)]);
    assert!(three_short.is_lost(seg(0), MSS, 3));
    assert!(!three_short.is_lost(seg(3), MSS, 3), "only two above segment 3");
}

/// Ten segments out, 3, 5 and 7 SACKed: the hole [0, 3) has three
/// SACKed above (lost), [4, 5) two, [6, 7) one, [8, 10) none. SetPipe =
/// 0 + 1000 + 1000 + 2000 = 4000; a retransmission of segment 0 adds 1000.
#[test]
fn pipe_counts_unsacked_unlost_bytes_and_retransmissions() {
    let mut b = board(seg(0), seg(10), &[(seg(3), seg(4)), (seg(5), seg(6)), (seg(7), seg(8))]);
    let holes = b.holes(seg(0), seg(10), MSS, 3);
    let lost: Vec<(u64, bool)> = holes.iter().map(|h| (h.start, h.lost)).collect();
    assert_eq!(lost, [(seg(0), true), (seg(4), false), (seg(6), false), (seg(8), false)]);
    assert_eq!(b.pipe(seg(0), seg(10), MSS, 3), 4000);
    b.enter_recovery(seg(0));
    assert_eq!(b.next_lost(seg(0), seg(10), MSS, 3), Some((seg(0), seg(3))));
    b.retransmitted(seg(1));
    assert_eq!(b.pipe(seg(0), seg(10), MSS, 3), 5000);
    assert_eq!(b.next_lost(seg(0), seg(10), MSS, 3), Some((seg(1), seg(3))));
    b.retransmitted(seg(3));
    // Rule 1 has nothing left; rule 3 offers the first unSACKed hole.
    assert_eq!(b.next_lost(seg(0), seg(10), MSS, 3), None);
    assert_eq!(b.next_unsacked(seg(0), seg(10), MSS, 3), Some((seg(4), seg(5))));
}

/// Rule 4: one segment ending at the highest unSACKed byte, once per
/// recovery; a timeout makes every unSACKed byte lost.
#[test]
fn rescue_once_per_recovery_and_a_timeout_loses_everything_unsacked() {
    let mut b = board(seg(0), seg(10), &[(seg(9), seg(10))]);
    b.enter_recovery(seg(0));
    assert_eq!(b.rescue(seg(0), seg(10), MSS, seg(10)), Some((seg(8), seg(9))));
    assert_eq!(b.rescue(seg(0), seg(10), MSS, seg(10)), None);
    let mut b = board(seg(0), seg(4), &[(seg(2), seg(3))]);
    assert_eq!(b.pipe(seg(0), seg(4), MSS, 3), 3000);
    b.on_timeout(seg(0), seg(4));
    assert_eq!(b.pipe(seg(0), seg(4), MSS, 3), 0);
    b.retransmitted(seg(1));
    assert_eq!(b.pipe(seg(0), seg(4), MSS, 3), 1000);
}

fn sack_config() -> TcpConfig {
    TcpConfig { sack: true, ..config() }
}

/// RFC 6675's own loss detection (DupThresh, `IsLost`), RACK-TLP off:
/// what these tests pin ([`super::super::rack_sender_tests`] pins RACK).
fn rfc6675(cwnd: u32) -> TcpConfig {
    TcpConfig { rack_tlp: false, ..with_cwnd(cwnd) }
}

fn blocks_sent(r: &mut crate::tcp::TcpReceiver, now: meshbed_core::Instant) -> Vec<(u64, Vec<(u64, u64)>)> {
    drain(r, now).into_iter().map(|(repr, _)| (repr.ack, repr.sack_blocks)).collect()
}

/// RFC 2018 §4: the block of the segment that triggered the ACK first,
/// then the most recent others; none once nothing is held out of order,
/// and none from a receiver without SACK.
#[test]
fn the_receiver_reports_the_latest_block_first() {
    let mut r = listening(sack_config());
    r.handle_input(ms(1), &data_segment(0, false));
    assert_eq!(blocks_sent(&mut r, ms(1)), [(seg(1), vec![])]);
    r.handle_input(ms(2), &data_segment(2, false));
    r.handle_input(ms(3), &data_segment(3, false));
    r.handle_input(ms(4), &data_segment(5, false));
    // Each ACK is written when polled: all three carry the blocks of now.
    let sent = blocks_sent(&mut r, ms(4));
    assert_eq!(sent.len(), 3);
    assert!(sent.iter().all(|(a, b)| *a == seg(1) && *b == [(seg(5), seg(6)), (seg(2), seg(4))]), "{sent:?}");
    r.handle_input(ms(5), &data_segment(7, false));
    r.handle_input(ms(5), &data_segment(9, false));
    let last = blocks_sent(&mut r, ms(5)).pop().unwrap();
    assert_eq!(last.1, [(seg(9), seg(10)), (seg(7), seg(8)), (seg(5), seg(6))], "at most three");
    // Segment 1 fills the first hole: the ACK moves to 4 and [2, 4) is gone.
    r.handle_input(ms(6), &data_segment(1, false));
    assert_eq!(blocks_sent(&mut r, ms(6)), [(seg(4), vec![(seg(9), seg(10)), (seg(7), seg(8)), (seg(5), seg(6))])]);
    let mut plain = listening(config());
    plain.handle_input(ms(1), &data_segment(2, false));
    assert_eq!(blocks_sent(&mut plain, ms(1)), [(seg(0), vec![])]);
}

/// Eight segments out (cwnd 8), 0 and 3 lost. The first two dupacks SACK
/// one segment each, which leaves the pipe: 8 and 9 go out (limited
/// transmit, RFC 3042, as the pipe gives it). The third enters recovery
/// with ssthresh = cwnd = 10 / 2 = 5 and resends 0; pipe = 1000 (0
/// resent) + 1000 (3) + 5000 (5–9) is over cwnd, and 6's dupack leaves it
/// at 6000. When 7 arrives, 3 has three SACKed above and is lost: pipe
/// drops to 4000 and 3 is resent; 8's dupack lets new segment 10 out. Both
/// holes are repaired in the round trip NewReno needs for the first (it
/// learns of 3 only from the partial ACK); the partial ACK lets 11 out,
/// and the ACK covering the recovery point (10) ends recovery with cwnd 5.
#[test]
fn two_losses_in_a_window_are_resent_in_one_round_trip() {
    let mut s = established(TcpVariant::Sack, rfc6675(8), 20_000);
    assert_eq!(seqs(&drain(&mut s, ms(100))), (0..8).map(seg).collect::<Vec<_>>());
    let a = seg(0);
    sack_ack(&mut s, ms(200), a, &[(seg(1), seg(2))]);
    assert_eq!(seqs(&drain(&mut s, ms(200))), [seg(8)]);
    sack_ack(&mut s, ms(200), a, &[(seg(1), seg(3))]);
    assert_eq!(seqs(&drain(&mut s, ms(200))), [seg(9)]);
    assert!(!s.cc_metrics().in_recovery);
    sack_ack(&mut s, ms(201), a, &[(seg(4), seg(5)), (seg(1), seg(3))]);
    assert_eq!(seqs(&drain(&mut s, ms(201))), [seg(0)]);
    let m = s.cc_metrics();
    assert_eq!((m.cwnd_segments, m.ssthresh_segments, m.in_recovery), (5.0, 5.0, true));
    sack_ack(&mut s, ms(202), a, &[(seg(4), seg(6)), (seg(1), seg(3))]);
    assert!(drain(&mut s, ms(202)).is_empty(), "pipe 6000 > cwnd 5000");
    sack_ack(&mut s, ms(203), a, &[(seg(4), seg(7)), (seg(1), seg(3))]);
    assert_eq!(seqs(&drain(&mut s, ms(203))), [seg(3)]);
    sack_ack(&mut s, ms(204), a, &[(seg(4), seg(8)), (seg(1), seg(3))]);
    assert_eq!(seqs(&drain(&mut s, ms(204))), [seg(10)]);
    // Segment 0's retransmission arrives: a partial ACK, still recovering.
    sack_ack(&mut s, ms(300), seg(3), &[(seg(4), seg(8))]);
    assert!(s.cc_metrics().in_recovery);
    assert_eq!(seqs(&drain(&mut s, ms(300))), [seg(11)]);
    // Everything up to the recovery point is acknowledged.
    sack_ack(&mut s, ms(303), seg(10), &[]);
    let m = s.cc_metrics();
    assert_eq!((m.cwnd_segments, m.in_recovery), (5.0, false));
    assert_eq!(s.stats().retransmissions, 2);
}

/// RFC 6675 §5 step (3): one ACK SACKing three segments makes the first
/// unacknowledged one lost, so recovery starts at the first dupack.
#[test]
fn three_segments_sacked_at_once_start_recovery_at_the_first_dupack() {
    let mut s = established(TcpVariant::Sack, rfc6675(8), 20_000);
    drain(&mut s, ms(100));
    sack_ack(&mut s, ms(200), seg(0), &[(seg(1), seg(4))]);
    assert!(s.cc_metrics().in_recovery);
    assert_eq!(seqs(&drain(&mut s, ms(200)))[0], seg(0));
}

/// After a timeout, go-back-N resends what the receiver does not hold:
/// SACKed segment 2 is stepped over.
#[test]
fn go_back_n_after_a_timeout_skips_sacked_segments() {
    for variant in [TcpVariant::Sack, TcpVariant::Cubic] {
        let mut s = established(variant, rfc6675(4), 20_000);
        assert_eq!(drain(&mut s, ms(100)).len(), 4);
        sack_ack(&mut s, ms(150), seg(0), &[(seg(2), seg(3))]);
        // The SACKed segment left the pipe: one new segment (4) goes.
        assert_eq!(seqs(&drain(&mut s, ms(150))), [seg(4)], "{variant:?}");
        let deadline = s.poll_timeout().unwrap();
        s.handle_timeout(deadline);
        assert_eq!(seqs(&drain(&mut s, deadline)), [seg(0)], "{variant:?}");
        // 0 arrives: ACK 1, 2 still held; cwnd 2 sends 1 and then 3.
        sack_ack(&mut s, deadline + Duration::from_millis(100), seg(1), &[(seg(2), seg(3))]);
        assert_eq!(seqs(&drain(&mut s, deadline + Duration::from_millis(100))), [seg(1), seg(3)], "{variant:?}");
    }
}

/// A hostile receiver's blocks beyond what was sent are refused and
/// counted; the transfer carries on.
#[test]
fn blocks_beyond_what_was_sent_are_protocol_violations() {
    let mut s = established(TcpVariant::Cubic, with_cwnd(2), 20_000);
    drain(&mut s, ms(100));
    sack_ack(&mut s, ms(150), seg(0), &[(seg(5), seg(9)), (u64::MAX - 1, u64::MAX)]);
    assert_eq!(s.stats().protocol_violations, 2);
    assert!(!s.cc_metrics().in_recovery);
    ack(&mut s, ms(200), seg(1));
    assert!(!drain(&mut s, ms(200)).is_empty());
}
