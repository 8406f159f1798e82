//! BBR's rules, each worked by hand from draft-cardwell-iccrg-bbr-
//! congestion-control-00 and Linux `tcp_bbr.c`. MSS 1000 bytes, an
//! initial window of 10 segments, RTprop 100 ms unless a test says
//! otherwise; every ACK below ends a round trip unless it says otherwise.

use super::*;
use crate::tcp::delivery_rate::RateSample;

const MSS: u64 = 1000;

fn ms(n: u64) -> Instant {
    Instant::from_nanos(n * 1_000_000)
}

fn bbr(seed: u64) -> Bbr {
    Bbr::new(Window::new(10.0, 64.0, 1000.0, MSS), MSS, seed, ms(0))
}

/// An ACK at `now` whose sample measured `bw` bytes/s over 100 ms (so
/// `delivered = bw / 10`), delivering `acked` segments, with `pipe`
/// segments left in flight; `round` says whether it ends a round trip.
struct Acks {
    delivered: u64,
}

impl Acks {
    fn ack(&mut self, now: Instant, bw: u64, acked: u64, pipe: u64, rtt_ms: u64, round: bool) -> BbrAck {
        let prior = if round { self.delivered } else { 0 };
        self.delivered += acked * MSS;
        BbrAck {
            rate: RateSample {
                delivered_bytes: bw / 10,
                interval: Some(Duration::from_millis(100)),
                prior_delivered_bytes: prior,
                acked_sacked_bytes: acked * MSS,
                is_app_limited: false,
                rtt: Some(Duration::from_millis(rtt_ms)),
                prior_in_flight_bytes: (pipe + acked) * MSS,
            },
            delivered_bytes: self.delivered,
            delivered_time: now,
            pipe_bytes: pipe * MSS,
            lost_segments: 0,
            srtt: Some(Duration::from_millis(rtt_ms)),
        }
    }
}

/// Startup on a path of 320 kB/s: 100, 200, 240, 260, 300, 310, 320 kB/s,
/// one sample per round. 240 is short of 1.25 × 200 (count 1), 260 is not
/// (full_bw 260, count 0), then 300, 310 and 320 are all short of 325:
/// the third of them ends Startup, at 700 ms.
fn through_startup(b: &mut Bbr, acks: &mut Acks) -> Instant {
    for (i, bw) in [100_000, 200_000, 240_000, 260_000, 300_000, 310_000].into_iter().enumerate() {
        b.on_bbr_ack(ms(100 * (i as u64 + 1)), &acks.ack(ms(100 * (i as u64 + 1)), bw, 1, 60, 100, true));
        assert_eq!(b.state(), BbrState::Startup, "sample {bw}");
    }
    b.on_bbr_ack(ms(700), &acks.ack(ms(700), 320_000, 1, 60, 100, true));
    ms(700)
}

/// A flow past Startup and Drain (the ACK at 720 ms, with 30 segments
/// in flight, ends Drain), in ProbeBW at a phase `seed` draws.
fn in_probe_bw(seed: u64) -> (Bbr, Acks) {
    let mut b = bbr(seed);
    let mut acks = Acks { delivered: 0 };
    through_startup(&mut b, &mut acks);
    b.on_bbr_ack(ms(720), &acks.ack(ms(720), 320_000, 1, 30, 100, false));
    assert_eq!(b.state(), BbrState::ProbeBw);
    (b, acks)
}

/// An ACK of `ack` with `snd_max` sent, for the recovery hooks.
fn cumulative(ack: u64, snd_max: u64) -> AckSample {
    AckSample {
        ack,
        acked_bytes: 0,
        flight_bytes: snd_max - ack,
        snd_max,
        dupacks: 0,
        srtt: None,
        head_lost: false,
        rtt_sample: None,
    }
}

#[test]
fn the_initial_pacing_rate_is_the_initial_window_per_rtt_at_the_high_gain() {
    let mut b = bbr(1);
    // No RTT yet: 10 segments per 1 ms, × 2.885 × 0.99.
    assert!((b.pacing_rate_bytes_per_s() - 10_000_000.0 * 2.885 * 0.99).abs() < 1e-3);
    assert_eq!((b.pacing_gain(), b.cwnd_gain()), (HIGH_GAIN, HIGH_GAIN));
    let mut acks = Acks { delivered: 0 };
    // The first SRTT (100 ms) sets it to 10 segments per 100 ms at the
    // high gain: 285,615 B/s; a sample of 50 kB/s (142,807.5 B/s at the
    // gain) does not lower it in Startup.
    b.on_bbr_ack(ms(100), &acks.ack(ms(100), 50_000, 1, 9, 100, true));
    assert!((b.pacing_rate_bytes_per_s() - 285_615.0).abs() < 1e-6, "{}", b.pacing_rate_bytes_per_s());
    // 200 kB/s at the gain (571,230 B/s) raises it.
    b.on_bbr_ack(ms(200), &acks.ack(ms(200), 200_000, 1, 9, 100, true));
    assert!((b.pacing_rate_bytes_per_s() - 571_230.0).abs() < 1e-6);
    assert_eq!(b.btl_bw_bytes_per_s(), 200_000.0);
    assert_eq!(b.rt_prop(), Some(Duration::from_millis(100)));
}

#[test]
fn the_bandwidth_filter_is_the_maximum_of_the_last_ten_rounds() {
    let mut f = MaxFilter::default();
    f.update(1, 500.0, 10);
    f.update(2, 300.0, 10);
    f.update(5, 400.0, 10);
    assert_eq!(f.get(), 500.0);
    // Round 11: round 1's sample is ten rounds old and leaves; round 5's
    // 400 is the largest left.
    f.update(11, 100.0, 10);
    assert_eq!(f.get(), 400.0);
    f.update(15, 50.0, 10);
    assert_eq!(f.get(), 100.0);
    f.update(16, 700.0, 10);
    assert_eq!(f.get(), 700.0);
}

#[test]
fn startup_ends_after_three_rounds_below_a_quarter_more_then_drain_empties_the_queue() {
    let mut b = bbr(7);
    let mut acks = Acks { delivered: 0 };
    let at = through_startup(&mut b, &mut acks);
    assert_eq!(b.state(), BbrState::Drain);
    assert_eq!(b.stats.startup_ended_at, Some(at));
    // Drain paces at 320,000 × (1 / 2.885) × 0.99 B/s, below BtlBw.
    let drain_rate = 320_000.0 / 2.885 * 0.99;
    assert!((b.pacing_rate_bytes_per_s() - drain_rate).abs() < 1e-6);
    // One BDP is 320 kB/s × 100 ms = 32 segments. ssthresh records the
    // flight of one BDP when Startup ends, with the quantum of Startup's
    // pacing rate (885 kB/s, above 1.2 Mbit/s: two segments): 32 + 6 =
    // 38. From then on the quantum is Drain's (110 kB/s: one segment),
    // and Drain lasts while more than 32 + 3, rounded up to 36, is in
    // flight.
    assert_eq!(b.window.ssthresh_segments, 38.0);
    b.on_bbr_ack(ms(710), &acks.ack(ms(710), 320_000, 1, 37, 100, false));
    assert_eq!(b.state(), BbrState::Drain);
    b.on_bbr_ack(ms(720), &acks.ack(ms(720), 320_000, 1, 36, 100, false));
    assert_eq!(b.state(), BbrState::ProbeBw);
    assert_eq!(b.cwnd_gain(), CWND_GAIN);
    assert_ne!(b.pacing_gain(), 0.75, "ProbeBW never starts in its draining phase");
}

#[test]
fn probe_bw_starts_at_a_random_phase_other_than_the_draining_one() {
    let mut first_phases = std::collections::BTreeSet::new();
    for seed in 0..64 {
        let mut b = bbr(seed);
        let mut acks = Acks { delivered: 0 };
        through_startup(&mut b, &mut acks);
        b.on_bbr_ack(ms(720), &acks.ack(ms(720), 320_000, 1, 30, 100, false));
        assert_eq!(b.state(), BbrState::ProbeBw);
        first_phases.insert(b.cycle_index);
    }
    // Phases 2–7 and 0 (gain 1.25), never 1 (gain 0.75).
    assert_eq!(first_phases.into_iter().collect::<Vec<_>>(), vec![0, 2, 3, 4, 5, 6, 7]);
}

/// ACKs every 10 ms in ProbeBW with 60 segments in flight before each
/// (more than the 5/4 phase's 40 + 6 + 2, so that phase ends as soon as it
/// is RTprop long): every phase lasts 110 ms, the first ACK more than
/// 100 ms after it began, and the gains go round the cycle in order.
#[test]
fn each_probe_bw_phase_lasts_one_rt_prop_and_the_gains_cycle_in_order() {
    let (mut b, mut acks) = in_probe_bw(3);
    let mut changes = vec![(720, b.cycle_index)];
    for t in (730..=720 + 8 * 110).step_by(10) {
        b.on_bbr_ack(ms(t), &acks.ack(ms(t), 320_000, 1, 59, 100, false));
        if b.cycle_index != changes.last().unwrap().1 {
            changes.push((t, b.cycle_index));
        }
        assert_eq!(b.pacing_gain(), PACING_GAIN_CYCLE[b.cycle_index]);
    }
    let times: Vec<u64> = changes.iter().map(|&(t, _)| t).collect();
    assert_eq!(times, (0..9).map(|k| 720 + 110 * k).collect::<Vec<u64>>());
    let start = changes[0].1;
    let phases: Vec<usize> = changes.iter().map(|&(_, i)| i).collect();
    assert_eq!(phases, (0..9).map(|k| (start + k) % 8).collect::<Vec<usize>>());
}

#[test]
fn the_draining_phase_ends_early_once_the_flight_is_down_to_one_bdp() {
    let (mut b, mut acks) = in_probe_bw(3);
    // Walk to the 3/4 phase with full in-flight figures.
    let mut t = 720;
    while b.cycle_index != 1 {
        t += 10;
        b.on_bbr_ack(ms(t), &acks.ack(ms(t), 320_000, 1, 59, 100, false));
    }
    // 10 ms into the 3/4 phase the flight before the ACK is 36 segments,
    // no more than inflight(1.0) = 32 + 3 × 2 = 38 (the quantum at 3/4 of
    // 320 kB/s is two segments): the phase ends at once, not after RTprop.
    b.on_bbr_ack(ms(t + 10), &acks.ack(ms(t + 10), 320_000, 1, 35, 100, false));
    assert_eq!(b.cycle_index, 2);
}

#[test]
fn probe_bw_cwnd_is_two_bdps_plus_the_quanta_and_grows_by_what_is_acked() {
    let (mut b, mut acks) = in_probe_bw(5);
    // Below the target each ACK adds what it delivered.
    b.set_cwnd(50);
    b.on_bbr_ack(ms(730), &acks.ack(ms(730), 320_000, 3, 30, 100, false));
    assert_eq!(b.cwnd(), 53);
    // The target: 2 × 32 segments, the ACK aggregation allowance, three
    // quanta of two segments (ProbeBW paces above 1.2 Mbit/s), rounded up
    // to even, and two more in the 5/4 phase.
    b.set_cwnd(200);
    b.on_bbr_ack(ms(740), &acks.ack(ms(740), 320_000, 3, 30, 100, false));
    let aggregation = b.ack_aggregation_segments();
    let target = ((64 + aggregation + 6 + 1) & !1) + if b.cycle_index == 0 { 2 } else { 0 };
    assert_eq!(b.cwnd(), target, "capped at the target");
    assert!(target >= 70);
}

#[test]
fn a_burst_of_acks_beyond_btl_bw_earns_its_excess_as_extra_window() {
    let (mut b, mut acks) = in_probe_bw(5);
    b.set_cwnd(60);
    b.extra_acked_bytes = [0, 0];
    b.ack_epoch_stamp = ms(1000);
    b.ack_epoch_acked_bytes = 0;
    // After 30 ms without an ACK, 25 segments at once. Nothing was acked
    // in the epoch, no more than BtlBw's 9,600 bytes expected in 30 ms:
    // the epoch restarts with this ACK, and all 25 segments are extra.
    b.on_bbr_ack(ms(1030), &acks.ack(ms(1030), 320_000, 25, 30, 100, false));
    assert_eq!(b.ack_epoch_stamp, ms(1030));
    assert_eq!(b.extra_acked_bytes[b.extra_acked_index], 25_000);
    assert_eq!(b.ack_aggregation_segments(), 25);
    // 1 ms later 5 more: 30,000 acked against 320 expected.
    b.on_bbr_ack(ms(1031), &acks.ack(ms(1031), 320_000, 5, 30, 100, false));
    assert_eq!(b.extra_acked_bytes[b.extra_acked_index], 29_680);
    assert_eq!(b.ack_aggregation_segments(), 29);
    // 10 more: 39,360 extra, capped at 100 ms at BtlBw (32 segments).
    b.on_bbr_ack(ms(1032), &acks.ack(ms(1032), 320_000, 10, 30, 100, false));
    assert_eq!(b.extra_acked_bytes[b.extra_acked_index], 39_360);
    assert_eq!(b.ack_aggregation_segments(), 32);
}

#[test]
fn rt_prop_not_refreshed_for_ten_seconds_sends_the_flow_to_probe_rtt_and_back() {
    let (mut b, mut acks) = in_probe_bw(9);
    b.set_cwnd(60);
    // RTTs of 120 ms never beat the 100 ms measured at 100 ms (RTprop's
    // stamp: the last sample that lowered it, at 100 ms). At 10,101 ms
    // the filter has expired: RTprop takes the current sample, and
    // ProbeRTT begins, with the window saved and cut to 4 segments.
    b.on_bbr_ack(ms(10_100), &acks.ack(ms(10_100), 320_000, 1, 30, 120, false));
    assert_eq!(b.state(), BbrState::ProbeBw);
    b.on_bbr_ack(ms(10_101), &acks.ack(ms(10_101), 320_000, 1, 30, 120, false));
    assert_eq!(b.state(), BbrState::ProbeRtt);
    assert_eq!(b.stats.probe_rtt_entries, 1);
    assert_eq!(b.rt_prop(), Some(Duration::from_millis(120)));
    assert_eq!((b.cwnd(), b.pacing_gain(), b.cwnd_gain()), (4, 1.0, 1.0));
    // Once at most 4 segments are in flight the 200 ms begin (10,200 ms);
    // they end at 10,400 ms, and also need a round trip to have ended.
    b.on_bbr_ack(ms(10_200), &acks.ack(ms(10_200), 320_000, 1, 4, 120, false));
    b.on_bbr_ack(ms(10_300), &acks.ack(ms(10_300), 320_000, 1, 4, 120, true));
    assert_eq!(b.state(), BbrState::ProbeRtt, "a round, but not 200 ms");
    b.on_bbr_ack(ms(10_401), &acks.ack(ms(10_401), 320_000, 1, 4, 120, false));
    assert_eq!(b.state(), BbrState::ProbeBw);
    // Saved at entry: 61 (the 10,100 ms ACK added one to 60); back, and
    // one more for the segment this ACK delivered.
    assert_eq!(b.cwnd(), 62, "the window from before ProbeRTT is back");
}

#[test]
fn recovery_conserves_packets_for_a_round_trip_then_grows_and_restores_at_its_end() {
    let (mut b, mut acks) = in_probe_bw(2);
    b.set_cwnd(50);
    assert_eq!(b.on_loss_detected(ms(730), &cumulative(50_001, 90_001)).retransmit, Retransmit::Head);
    assert!(b.in_loss_recovery() && b.in_recovery());
    // The ACK that found the loss (2 segments lost, 1 delivered, 30 left
    // in flight): cwnd = in flight + delivered = 31.
    let mut a = acks.ack(ms(730), 320_000, 1, 30, 100, false);
    a.lost_segments = 2;
    b.on_bbr_ack(ms(730), &a);
    assert_eq!(b.cwnd(), 31);
    // Still conserving: max(cwnd, in flight + delivered).
    b.on_bbr_ack(ms(740), &acks.ack(ms(740), 320_000, 1, 29, 100, false));
    assert_eq!(b.cwnd(), 31);
    b.on_bbr_ack(ms(750), &acks.ack(ms(750), 320_000, 2, 31, 100, false));
    assert_eq!(b.cwnd(), 33);
    // A round trip later conservation ends: cwnd grows by what is acked.
    b.on_bbr_ack(ms(840), &acks.ack(ms(840), 320_000, 1, 20, 100, true));
    assert_eq!(b.cwnd(), 34);
    // The cumulative ACK passes the recovery point: the saved 50 is back.
    b.on_ack(ms(850), &cumulative(90_001, 90_001));
    assert!(!b.in_loss_recovery());
    b.on_bbr_ack(ms(850), &acks.ack(ms(850), 320_000, 1, 20, 100, false));
    assert_eq!(b.cwnd(), 51);
}

#[test]
fn a_timeout_leaves_one_segment_and_the_old_window_comes_back_once_repaired() {
    let (mut b, mut acks) = in_probe_bw(2);
    b.set_cwnd(50);
    b.on_retransmission_timeout(ms(1000), 30_000, 60_001, true);
    assert_eq!(b.cwnd(), 1);
    assert!(b.in_loss_recovery() && !b.in_recovery());
    // No packet conservation after a timeout: each ACK adds what it
    // delivered (up to the target).
    b.on_bbr_ack(ms(1100), &acks.ack(ms(1100), 320_000, 1, 0, 100, false));
    assert_eq!(b.cwnd(), 4, "never below the 4-segment floor");
    b.on_bbr_ack(ms(1110), &acks.ack(ms(1110), 320_000, 2, 1, 100, false));
    assert_eq!(b.cwnd(), 6);
    b.on_ack(ms(1200), &cumulative(60_001, 60_001));
    b.on_bbr_ack(ms(1200), &acks.ack(ms(1200), 320_000, 1, 1, 100, false));
    assert_eq!(b.cwnd(), 51, "the saved 50, plus the segment acked");
}

#[test]
fn probe_rtt_holds_the_window_at_four_segments_whatever_is_acked() {
    let mut b = bbr(4);
    let mut acks = Acks { delivered: 0 };
    through_startup(&mut b, &mut acks);
    b.state = BbrState::ProbeRtt;
    b.update_gains();
    b.set_cwnd(40);
    b.on_bbr_ack(ms(800), &acks.ack(ms(800), 320_000, 10, 30, 100, false));
    assert_eq!(b.cwnd(), 4);
    assert_eq!(MIN_PIPE_CWND_SEGMENTS, 4);
}
