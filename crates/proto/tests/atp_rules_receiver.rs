//! Unit tests pinning the ATP receiver's rules to the numbers in the
//! documents (seed 002 §4, seed 001 §2–3, seed 000 §V.A): feedback, flow
//! control, the adaptive triggers and its out-of-order memory. Each test
//! drives a receiver with hand-made datagrams and checks what it sends back.

mod common;

use meshbed_core::{Duration, Instant};
use meshbed_proto::atp::{AtpConfig, AtpReceiver, ReceiverState};
use meshbed_proto::engine::TraceSample;
use meshbed_proto::harness::drain;
use meshbed_proto::wire::{Control, FeedbackEcho, Packet};
use meshbed_proto::{Engine, EngineEvent};

use common::*;

// ---------------------------------------------------------------- receiver

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
    // D_s: the last data arrived 450 ms before this feedback went.
    assert_eq!(out[0].0.d_s_us, 450_000);
    assert!(!out[0].0.control.contains(Control::SACK_MORE));
    assert!(events(&mut r).iter().any(|e| matches!(e, EngineEvent::Trace(TraceSample::DAvgSent { .. }))));
    assert_eq!(r.poll_timeout().map(|t| t > ms(1_000)), Some(true));
}

/// A host's sender numbers its data in `ack`, which ATP data leaves unused
/// (meshbed-net's `delay`); the feedback's `seq` echoes the newest arrival's
/// number, with D_s the time since it, and counts the packets received, so
/// the sender can time that arrival and the arrival rate whatever the SACK
/// blocks leave out. The documents' senders leave `ack` zero, and so the
/// number echoed is zero in the simulator.
#[test]
fn feedback_echoes_the_number_of_the_newest_arrival() {
    let numbered = |seq: u64, number: u64| {
        let mut p = data_packet(0, seq, 1436, 1_000, 1_000);
        Packet::new_unchecked(&mut p[..]).set_ack(number);
        p
    };
    let mut r = established_receiver(AtpConfig::default());
    r.handle_input(ms(100), &data_packet(0, 0, 1436, 1_000, 1_000));
    r.handle_timeout(ms(1_000));
    let out = drain(&mut r, ms(1_000));
    let echo = FeedbackEcho::from_seq(out[0].0.seq);
    assert_eq!((out.len(), echo.transmission, echo.arrivals), (1, 0, 1), "unnumbered data: no number echoed");
    // Number 7 leaves a hole; number 8, the repair, arrives last, out of
    // sequence order.
    r.handle_input(ms(1_100), &numbered(2 * MSS, 7));
    r.handle_input(ms(1_200), &numbered(MSS, 8));
    r.handle_timeout(ms(2_000));
    let out = drain(&mut r, ms(2_000));
    let fb = &out.last().unwrap().0;
    let echo = FeedbackEcho::from_seq(fb.seq);
    assert_eq!((fb.ack, echo.transmission, echo.arrivals, fb.d_s_us), (3 * MSS, 8, 3, 800_000));
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
    // The trace counts every range held, the 6 the blocks leave out too
    // (what judges seed 002 §4.2.2's "most if not all of the losses").
    let ranges: Vec<usize> = events(&mut r)
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Trace(TraceSample::SackRanges { ranges, .. }) => Some(*ranges),
            _ => None,
        })
        .collect();
    assert_eq!(ranges, vec![26]);
    // Fewer ranges than blocks: the trace says how many were sent.
    let mut r = established_receiver(AtpConfig::default());
    for k in 0..3u64 {
        r.handle_input(ms(10), &data_packet(0, (2 * k + 1) * MSS, 1436, 1_000, 1_000));
    }
    r.handle_timeout(ms(1_000));
    let out = drain(&mut r, ms(1_000));
    assert_eq!(out[0].0.sack_blocks.len(), 3);
    assert!(events(&mut r).iter().any(|e| matches!(e, EngineEvent::Trace(TraceSample::SackRanges { ranges: 3, .. }))));
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
