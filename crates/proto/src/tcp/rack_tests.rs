//! RACK-TLP's rules pinned to numbers computed by hand from RFC 8985.

use super::*;

const MSS: u64 = 1000;

fn ms(n: u64) -> Instant {
    Instant::from_nanos(n * 1_000_000)
}

fn dur_ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Segments k = 0..n of MSS bytes, segment k sent at k ms.
fn sent_one_per_ms(n: u64) -> Rack {
    let mut rack = Rack::default();
    for k in 0..n {
        rack.on_transmit(k * MSS, (k + 1) * MSS, ms(k), false);
    }
    rack
}

/// SACKed ranges as the scoreboard would answer `sacked_end`.
fn sacked(ranges: &'static [(u64, u64)]) -> impl Fn(u64) -> Option<u64> {
    move |seq| ranges.iter().find(|&&(s, e)| s <= seq && seq < e).map(|&(_, e)| e)
}

#[test]
fn the_reordering_window_is_a_quarter_of_the_minimum_rtt_capped_at_srtt_and_zero_once_dupthresh_segments_are_sacked() {
    let mut rack = Rack::default();
    rack.on_rtt_sample(dur_ms(40));
    rack.on_rtt_sample(dur_ms(60));
    // §6.2 step 4: min_RTT / 4 = 10 ms, below SRTT.
    assert_eq!(rack.reo_wnd(false, 0, 3, Some(dur_ms(50))), dur_ms(10));
    assert_eq!(rack.reo_wnd(false, 2, 3, Some(dur_ms(50))), dur_ms(10));
    // Capped at SRTT.
    assert_eq!(rack.reo_wnd(false, 0, 3, Some(dur_ms(8))), dur_ms(8));
    // No reordering seen: 0 in recovery, or with DupThresh segments SACKed
    // (RACK then marks as fast as three duplicate ACKs would).
    assert_eq!(rack.reo_wnd(true, 0, 3, Some(dur_ms(50))), Duration::ZERO);
    assert_eq!(rack.reo_wnd(false, 3, 3, Some(dur_ms(50))), Duration::ZERO);
}

#[test]
fn a_segment_is_lost_rtt_plus_the_reordering_window_after_it_was_sent_once_a_later_one_is_delivered() {
    // Segments 0–3 sent at 0, 1, 2, 3 ms; segment 1 (sent at 1 ms) is
    // SACKed at 41 ms: RACK.rtt = 40 ms, RACK.xmit_ts = 1 ms.
    let mut rack = sent_one_per_ms(4);
    rack.on_ack(ms(41), 0, sacked(&[(1000, 2000)]));
    assert_eq!(rack.rtt, dur_ms(40));
    assert_eq!(rack.latest, Some((ms(1), 2000)));
    let reo_wnd = rack.reo_wnd(false, 1, 3, Some(dur_ms(40)));
    assert_eq!(reo_wnd, dur_ms(10));
    // Segment 0 (sent at 0 ms) is due at 0 + 40 + 10 = 50 ms: not yet;
    // segments 2 and 3 were sent after segment 1 and are not judged.
    let (marked, due) = rack.detect_loss(ms(41), reo_wnd);
    assert_eq!((marked, due), (0, Some(ms(50))));
    assert!(!rack.has_lost());
    // At 50 ms (the RACK timer) it is lost.
    let (marked, due) = rack.detect_loss(ms(50), reo_wnd);
    assert_eq!((marked, due), (1, None));
    assert_eq!(rack.next_lost(), Some((0, 1000)));
    // pipe: segments 2 and 3, in flight; 0 lost, 1 delivered.
    assert_eq!(rack.pipe(), 2 * MSS);
}

#[test]
fn with_dupthresh_segments_sacked_and_no_reordering_the_hole_is_lost_at_once() {
    let mut rack = sent_one_per_ms(4);
    rack.on_ack(ms(43), 0, sacked(&[(1000, 4000)]));
    // RACK.xmit_ts = 3 ms (segment 3), RACK.rtt = 40 ms; three SACKed.
    assert_eq!(rack.latest, Some((ms(3), 4000)));
    let reo_wnd = rack.reo_wnd(false, 3, 3, Some(dur_ms(40)));
    assert_eq!(reo_wnd, Duration::ZERO);
    // Segment 0: 0 + 40 + 0 = 40 ms ≤ 43 ms.
    assert_eq!(rack.detect_loss(ms(43), reo_wnd), (1, None));
    assert_eq!(rack.stats.lost_segments, 1);
}

#[test]
fn a_lost_retransmission_is_found_without_a_timeout() {
    // Segment 0 lost; retransmitted at 50 ms after RACK marked it; segment
    // 4, new data sent at 51 ms, is SACKed at 91 ms while the
    // retransmission is lost again.
    let mut rack = sent_one_per_ms(4);
    rack.on_ack(ms(43), 0, sacked(&[(1000, 4000)]));
    rack.detect_loss(ms(43), Duration::ZERO);
    rack.on_transmit(0, 1000, ms(50), true);
    assert!(!rack.has_lost(), "the retransmission is in flight");
    assert_eq!(rack.pipe(), MSS);
    rack.on_transmit(4000, 5000, ms(51), false);
    rack.on_ack(ms(91), 0, sacked(&[(1000, 5000)]));
    assert_eq!(rack.latest, Some((ms(51), 5000)));
    // In recovery without reordering: reo_wnd 0; 50 + 40 ≤ 91.
    let reo_wnd = rack.reo_wnd(true, 4, 3, Some(dur_ms(40)));
    assert_eq!(rack.detect_loss(ms(91), reo_wnd), (1, None));
    assert_eq!(rack.next_lost(), Some((0, 1000)));
    assert_eq!(rack.stats.lost_segments, 2);
}

#[test]
fn reordering_is_seen_when_an_original_arrives_below_the_highest_delivered_end() {
    let mut rack = sent_one_per_ms(3);
    rack.on_ack(ms(42), 0, sacked(&[(2000, 3000)]));
    assert!(!rack.reordering_seen);
    // Segment 0 arrives late (cumulative ACK to 1000): reordering.
    rack.on_ack(ms(45), 1000, sacked(&[(2000, 3000)]));
    assert!(rack.reordering_seen);
    assert_eq!(rack.fack, 3000);
    // Now the window is min_RTT / 4 even in recovery: 40 / 4 = 10 ms.
    assert_eq!(rack.reo_wnd(true, 1, 3, Some(dur_ms(40))), dur_ms(10));
}

#[test]
fn the_delivery_of_a_retransmitted_segment_sooner_than_min_rtt_is_ambiguous_and_ignored() {
    let mut rack = sent_one_per_ms(2);
    rack.on_ack(ms(41), 0, sacked(&[(1000, 2000)]));
    assert_eq!(rack.min_rtt, Some(dur_ms(40)));
    // Segment 0 retransmitted at 45 ms, acknowledged at 46 ms: the ACK is
    // for the original (1 ms < min_RTT); RACK.rtt stays 40 ms.
    rack.on_transmit(0, 1000, ms(45), true);
    rack.on_ack(ms(46), 2000, |_| None);
    assert_eq!(rack.rtt, dur_ms(40));
    assert_eq!(rack.latest, Some((ms(1), 2000)));
    assert_eq!(rack.pipe(), 0);
}

#[test]
fn a_retransmission_cut_at_a_sacked_block_splits_the_segment_records() {
    let mut rack = Rack::default();
    rack.on_transmit(0, 3000, ms(0), false);
    rack.on_transmit(1000, 1500, ms(5), true);
    assert_eq!(rack.sent.len(), 3);
    assert_eq!(
        rack.sent[&1000],
        Sent {
            end: 1500,
            xmit_ts: ms(5),
            retransmitted: true,
            lost: false,
            rexmit_in_flight: false,
            rate: RateSnapshot::default()
        }
    );
    assert_eq!(rack.sent[&1500].xmit_ts, ms(0));
    // A cumulative ACK inside a record delivers the part below it.
    rack.on_ack(ms(50), 700, |_| None);
    assert_eq!(rack.sent.keys().copied().collect::<Vec<_>>(), [700, 1000, 1500]);
    assert_eq!(rack.pipe(), 2300);
}

#[test]
fn on_a_timeout_the_first_segment_and_every_one_sent_an_rtt_ago_are_lost() {
    let mut rack = sent_one_per_ms(3);
    rack.on_ack(ms(40), 0, |_| None);
    rack.rtt = dur_ms(30);
    // At 31.5 ms after... segment 0 (first) lost; segment 1 sent at 1 ms:
    // 1 + 30 = 31 ≤ 31.5 lost; segment 2 sent at 2 ms: 32 > 31.5 not.
    rack.on_timeout(Instant::from_nanos(31_500_000));
    assert!(rack.is_lost(0) && rack.is_lost(1000) && !rack.is_lost(2000));
    assert_eq!(rack.pipe(), MSS);
}

#[test]
fn the_probe_timeout_is_two_srtts_plus_the_delayed_ack_for_a_single_segment() {
    // §7.2: PTO = 2·SRTT; + WCDelAckT (200 ms) with one segment in flight;
    // 1 s without an RTT sample.
    assert_eq!(Rack::pto(Some(dur_ms(30)), 5 * MSS, MSS), dur_ms(60));
    assert_eq!(Rack::pto(Some(dur_ms(30)), MSS, MSS), dur_ms(260));
    assert_eq!(Rack::pto(None, 5 * MSS, MSS), Duration::from_secs(1));
}

#[test]
fn a_probe_episode_ends_with_a_repaired_loss_only_when_the_ack_passes_a_retransmitted_probe() {
    let mut rack = Rack::default();
    // A probe of new data: delivered, no loss.
    rack.on_probe_sent(5000, false);
    assert_eq!(rack.on_ack_for_probe(4000, false), ProbeOutcome::Pending);
    assert_eq!(rack.on_ack_for_probe(5000, false), ProbeOutcome::NoLoss);
    assert_eq!(rack.probe(), None);
    // A retransmitted last segment: an ACK of exactly its end may be the
    // original's; a pure duplicate ACK then says both arrived (no loss).
    rack.on_probe_sent(5000, true);
    assert_eq!(rack.on_ack_for_probe(5000, false), ProbeOutcome::Pending);
    assert_eq!(rack.on_ack_for_probe(5000, true), ProbeOutcome::NoLoss);
    // An ACK beyond it: the probe repaired the loss (§7.4.2).
    rack.on_probe_sent(5000, true);
    assert_eq!(rack.on_ack_for_probe(6000, false), ProbeOutcome::Repaired);
    assert_eq!(rack.stats, RackStats { lost_segments: 0, probes: 3, probes_repaired: 1 });
}
