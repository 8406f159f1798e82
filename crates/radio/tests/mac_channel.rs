//! Behavioural tests of the DCF MAC and PHY model on a shared channel:
//! carrier sense, RTS/CTS, exact timing, determinism and the error
//! models, driven through the public event interface only
//! (`Medium::enqueue`, `Medium::handle`, `Medium::poll_indication`).

mod common;

use meshbed_core::Duration;
use meshbed_radio::phy::{self, control_rate_kbps};
use meshbed_radio::{Addr, ErrorModel, Fading, Indication, NodeId, RadioConfig, Standard, TxOutcome};

use common::*;

// ------------------------------------------------------------------ 6. carrier sense

#[test]
fn carrier_sense_prevents_overlap_except_same_slot_collisions() {
    // S1 → R1 and S2 → R2; S1 and S2 are 300 m apart: beyond the
    // transmission range (no decoding, no NAV) but well inside the 550 m
    // carrier-sense range. At R1, S2 is only 12 dB below S1, so an overlap
    // would corrupt the frame.
    let cfg = RadioConfig { error_model: ErrorModel::Threshold, ..Default::default() };
    let nodes = [(0.0, 0.0), (-100.0, 0.0), (300.0, 0.0), (400.0, 0.0)];
    let (s1, r1, s2, r2) = (0, 1, 2, 3);
    let mut net = Net::new(&cfg, &nodes, 5);
    let mut rng = Mix(77);
    let bytes = 1000;
    // Each sender offers about a third of the channel.
    let mut arrivals = jittered(&mut rng, s1, Addr::Unicast(r1), bytes, ms(1), Duration::from_micros(1300), 1500);
    arrivals.extend(jittered(&mut rng, s2, Addr::Unicast(r2), bytes, ms(1), Duration::from_micros(1300), 1500));
    net.run_arrivals(arrivals, ms(4000));

    let t_data = Standard::A.frame_duration(bytes + phy::DATA_OVERHEAD_BYTES, 24_000);
    let iv = |n| net.tx_ends(n).into_iter().map(|e| (e - t_data, e)).collect::<Vec<_>>();
    let (a, b) = (iv(s1), iv(s2));
    let sense_delay = prop_delay(300.0);
    let mut overlaps = 0;
    for &(sa, ea) in &a {
        for &(sb, eb) in &b {
            if sa < eb && sb < ea {
                overlaps += 1;
                let d = if sa > sb { sa - sb } else { sb - sa };
                assert!(d <= sense_delay, "DATA frames overlap without starting in the same slot: {sa:?} vs {sb:?}");
            }
        }
    }
    let (c1, c2) = (net.counters(s1).clone(), net.counters(s2).clone());
    let attempts = c1.data_tx_attempts + c2.data_tx_attempts;
    let failed = c1.ack_timeouts + c2.ack_timeouts;
    assert!(attempts >= 3000, "{attempts}");
    assert!(overlaps > 0, "with this load some same-slot collisions are expected");
    assert!((failed as f64) < 0.10 * attempts as f64, "{failed} of {attempts} attempts failed");
    assert_eq!(net.counters(r1).delivered + net.counters(r2).delivered, 3000, "retries recover everything");
    assert_eq!(failed, overlaps as u64 * 2, "every failure is one of the two frames of a same-slot collision");
}

#[test]
fn interferer_beyond_carrier_sense_range_corrupts_frames() {
    // Carrier sense = transmission range = 250 m. S → R over 100 m; I is
    // 300 m from R (so R cannot lock onto it) and 400 m from S (neither
    // senses the other); I's signal is only 9.5 dB below S's at R.
    let cfg = RadioConfig { tx_range_m: Some(250.0), cs_range_m: Some(250.0), ..Default::default() };
    let nodes = [(-100.0, 0.0), (0.0, 0.0), (300.0, 0.0), (450.0, 0.0)];
    let (s, r, i, j) = (0, 1, 2, 3);

    let run = |with_interferer: bool| {
        let mut net = Net::new(&cfg, &nodes, 8);
        if with_interferer {
            net.saturate(ms(1), i, Addr::Unicast(j), 1000);
        }
        let mut rng = Mix(3);
        net.run_arrivals(jittered(&mut rng, s, Addr::Unicast(r), 1000, ms(2), Duration::from_millis(2), 200), ms(1000));
        net
    };
    let quiet = run(false);
    assert_eq!(quiet.counters(r).rx_collision_or_corruption, 0);
    assert_eq!(quiet.counters(s).retransmissions, 0);
    assert_eq!(quiet.deliveries(r).len(), 200);

    let net = run(true);
    let (cs, cr) = (net.counters(s), net.counters(r));
    assert!(cr.rx_collision_or_corruption > 0, "{cr:?}");
    assert!(cs.ack_timeouts > 0 && cs.retransmissions > 0, "{cs:?}");
    // R never locked onto the interferer's frames: they are below sensitivity.
    assert_eq!(cr.rx_while_busy, 0, "{cr:?}");
}

#[test]
fn carrier_sense_sums_faint_signals_unless_the_floor_is_at_carrier_sense() {
    // A and B, on either side of X, each reach X at 0.6 of the carrier-sense
    // threshold and do not sense each other. By default X senses the sum of
    // what is on the air, so while both send it waits. With the floor at
    // carrier sense (ns-2's rule, the `ns2-54g` preset) neither signal is
    // modelled at X and it sends through their overlaps.
    let base = RadioConfig { tx_range_m: Some(250.0), cs_range_m: Some(250.0), ..Default::default() };
    let r = base.resolve().unwrap();
    let f = base.standard.frequency_hz();
    let faint_dbm = r.cs_threshold_dbm + 10.0 * 0.6f64.log10();
    let d = base.propagation.distance_for_loss_m(base.tx_power_dbm - faint_dbm, f);
    let nodes = [(-d, 0.0), (0.0, 0.0), (d, 0.0)];
    let (a, x, b) = (0, 1, 2);
    let bytes = 1000;
    let t_data = Standard::A.frame_duration(bytes + phy::DATA_OVERHEAD_BYTES, 24_000);
    let run = |at_carrier_sense: bool| {
        let cfg = RadioConfig { interference_floor_at_carrier_sense: at_carrier_sense, ..base.clone() };
        let mut net = Net::new(&cfg, &nodes, 21);
        for n in [a, x, b] {
            net.saturate(ms(1), n, Addr::Broadcast, bytes);
        }
        net.run_until(ms(500));
        let starts = |n| net.tx_ends(n).into_iter().map(|e| e - t_data).collect::<Vec<_>>();
        let (sa, sx, sb) = (starts(a), starts(x), starts(b));
        // X's frames begun well after both A's and B's had reached it
        // (a microsecond of light from d) and before either ended.
        let margin = Duration::from_micros(2);
        let inside_both = sx
            .iter()
            .filter(|&&s| {
                let on = |starts: &[meshbed_core::Instant]| starts.iter().any(|&o| o + margin < s && s < o + t_data);
                on(&sa) && on(&sb)
            })
            .count();
        (inside_both, sx.len())
    };
    let (summed, sent) = run(false);
    assert_eq!(summed, 0, "X began {summed} of {sent} frames while A and B together were above the threshold");
    assert!(sent > 200, "X is not starved: {sent} frames");
    let (discarded, sent) = run(true);
    assert!(discarded > 20, "with the floor at carrier sense X ignores A and B: {discarded} of {sent}");
}

#[test]
fn rts_cts_nav_protects_data_from_a_hidden_station() {
    // S1 → R1 while S2 is in range of R1 but hidden from S1 (400 m apart,
    // carrier sense = transmission range). R1's CTS sets S2's NAV, so S2
    // stays quiet while S1's DATA is on the air at R1.
    let mut cfg = RadioConfig { tx_range_m: Some(250.0), cs_range_m: Some(250.0), ..Default::default() };
    cfg.mac.rts_threshold_bytes = Some(0);
    let nodes = [(-200.0, 0.0), (0.0, 0.0), (200.0, 0.0), (400.0, 0.0)];
    let (s1, r1, s2, r2) = (0, 1, 2, 3);
    let mut net = Net::new(&cfg, &nodes, 13);
    net.saturate(ms(1), s1, Addr::Unicast(r1), 1000);
    net.saturate(ms(1), s2, Addr::Unicast(r2), 1000);
    net.run_until(ms(1000));
    let c1 = net.counters(s1);
    assert!(c1.rts_sent > 0 && net.counters(r1).cts_sent > 0);
    // With RTS/CTS the long DATA frames of S1 are protected: nearly every
    // DATA attempt that followed a CTS is ACKed.
    assert!(c1.acked > 100, "{c1:?}");
    assert!(c1.data_tx_attempts - c1.acked <= c1.data_tx_attempts / 10, "{c1:?}");
    assert_no_duplicate_delivery(&net, r1);
}

// ------------------------------------------------------------------ 7. timing

#[test]
fn single_exchange_on_idle_medium_has_exact_timing() {
    for (std, rate) in [(Standard::A, 24_000), (Standard::B, 11_000), (Standard::G, 54_000)] {
        let cfg = RadioConfig { standard: std, data_rate_kbps: rate, ..Default::default() };
        let d = 150.0;
        let mut net = Net::new(&cfg, &[(0.0, 0.0), (d, 0.0)], 1);
        let t = ms(1);
        let bytes = 1000;
        net.send(t, 0, Addr::Unicast(1), bytes);
        net.run_until(ms(50));

        let t_data = std.frame_duration(bytes + phy::DATA_OVERHEAD_BYTES, rate);
        let ctrl = control_rate_kbps(std.default_basic_rates_kbps(), rate);
        let t_ack = std.frame_duration(phy::ACK_BYTES, ctrl);
        let prop = prop_delay(d);
        let sifs = std.timing().sifs;

        let reports = net.reports(0);
        assert_eq!(reports.len(), 1, "{std:?}");
        let r = reports[0].1;
        assert_eq!(r.outcome, TxOutcome::Acked);
        assert_eq!(r.retries, 0);
        assert_eq!(r.enqueued_at, t);
        assert_eq!(r.first_tx_at, Some(t), "{std:?}: DATA goes at once on a medium idle > DIFS");
        let done = t + t_data + prop + sifs + t_ack + prop;
        assert_eq!(r.tx_done_at, Some(done), "{std:?}");
        assert_eq!(net.deliveries(1), vec![(t + t_data + prop, 0, 0)], "{std:?}");
        assert_eq!(net.tx_ends(0), vec![t + t_data]);
        assert_eq!(net.tx_ends(1), vec![t + t_data + prop + sifs + t_ack]);
        let c = net.counters(0);
        assert_eq!((c.data_tx_attempts, c.acked, c.ack_timeouts), (1, 1, 0), "{std:?}");
    }
}

#[test]
fn second_packet_waits_for_post_backoff() {
    // A packet enqueued while the previous one is still in the MAC goes after
    // DIFS plus a backoff of at most CWmin slots after the ACK.
    let cfg = RadioConfig::default();
    let timing = cfg.standard.timing();
    for seed in 0..50 {
        let mut net = Net::new(&cfg, &[(0.0, 0.0), (100.0, 0.0)], seed);
        net.send(ms(1), 0, Addr::Unicast(1), 1000);
        net.send(ms(1), 0, Addr::Unicast(1), 1000);
        net.run_until(ms(50));
        let reports = net.reports(0);
        assert_eq!(reports.len(), 2);
        // The ACK ends at the sender at tx_done_at; the medium there is idle from then.
        let idle = reports[0].1.tx_done_at.unwrap();
        let start = reports[1].1.first_tx_at.unwrap();
        let extra = start - (idle + timing.difs());
        assert!(start >= idle + timing.difs(), "seed {seed}");
        assert_eq!(extra.as_nanos() % timing.slot.as_nanos(), 0, "seed {seed}");
        assert!(extra.as_nanos() / timing.slot.as_nanos() <= timing.cw_min as u64, "seed {seed}");
    }
}

// ------------------------------------------------------------------ 8. determinism

fn busy_run(seed: u64, fading: Fading) -> Vec<(u64, u8, NodeId, u64)> {
    let cfg = RadioConfig { fading, ..Default::default() };
    let nodes = [(0.0, 0.0), (150.0, 0.0), (300.0, 0.0), (150.0, 150.0), (450.0, 100.0)];
    let mut net = Net::new(&cfg, &nodes, seed);
    net.saturate(ms(1), 0, Addr::Unicast(1), 1000);
    net.saturate(ms(1), 2, Addr::Unicast(1), 1000);
    net.saturate(ms(1), 4, Addr::Unicast(2), 700);
    let mut rng = Mix(1);
    net.run_arrivals(jittered(&mut rng, 3, Addr::Broadcast, 200, ms(1), Duration::from_millis(3), 50), ms(200));
    net.trace()
}

#[test]
fn same_seed_same_indications_other_seed_other_indications() {
    let a = busy_run(42, Fading::Rayleigh);
    let b = busy_run(42, Fading::Rayleigh);
    assert!(a.len() > 500, "{}", a.len());
    assert_eq!(a, b);
    let c = busy_run(43, Fading::Rayleigh);
    assert_ne!(a, c);
    // The fading draws matter too: same seed, no fading, another trace.
    assert_ne!(a, busy_run(42, Fading::None));
}

// ------------------------------------------------------------------ 9. error models

/// Sends 100 isolated frames over a link whose SNR is `offset_db` from the
/// 24 Mbit/s threshold; returns how many the receiver delivered.
fn frames_through(error_model: ErrorModel, offset_db: f64, seed: u64) -> (u64, Net) {
    let mut cfg = RadioConfig {
        error_model,
        tx_range_m: None,
        cs_range_m: None,
        rx_sensitivity_dbm: Some(-95.0),
        cs_threshold_dbm: Some(-96.0),
        interference_floor_dbm: -110.0,
        ..Default::default()
    };
    cfg.mac.short_retry_limit = 0;
    let noise = cfg.resolve().unwrap().noise_dbm;
    let target_rx = noise + cfg.sinr_threshold_for(24_000) + offset_db;
    let loss = cfg.tx_power_dbm - target_rx;
    let d = cfg.propagation.distance_for_loss_m(loss, cfg.standard.frequency_hz());
    let mut net = Net::new(&cfg, &[(0.0, 0.0), (d, 0.0)], seed);
    assert!((net.m.mean_rx_dbm(0, 1) - target_rx).abs() < 1e-6);
    for i in 0..100 {
        net.send(ms(1 + 2 * i), 0, Addr::Unicast(1), 1000);
    }
    net.run_until(ms(300));
    (net.counters(1).delivered, net)
}

#[test]
fn threshold_model_is_a_step_at_the_rate_threshold() {
    let (above, net) = frames_through(ErrorModel::Threshold, 1.0, 1);
    assert_eq!(above, 100);
    assert_eq!(net.counters(0).acked, 100, "the ACK (also 24 Mbit/s) gets through as well");
    assert_eq!(net.counters(1).rx_collision_or_corruption, 0);

    let (below, net) = frames_through(ErrorModel::Threshold, -1.0, 1);
    assert_eq!(below, 0);
    assert_eq!(net.counters(1).rx_collision_or_corruption, 100);
    assert_eq!(net.counters(0).drop_retry_limit, 100);
}

#[test]
fn curve_model_is_smooth_around_the_threshold() {
    // 1 dB below the threshold: BER ×10 → about 2/3 of 1036-byte frames lost.
    let (below, _) = frames_through(ErrorModel::default(), -1.0, 1);
    assert!(below > 10 && below < 60, "{below}");
    // 1 dB above: BER ÷10 → about 1% lost.
    let (above, _) = frames_through(ErrorModel::default(), 1.0, 1);
    assert!(above >= 90, "{above}");
    let (far_above, _) = frames_through(ErrorModel::default(), 6.0, 1);
    assert_eq!(far_above, 100);
}

/// A delivery carries the power the frame was received at: the link's mean
/// power without fading, and a different one frame by frame with it.
#[test]
fn deliveries_report_the_received_power() {
    let powers = |fading: Fading| {
        let cfg = RadioConfig { fading, ..RadioConfig::default() };
        let mut net = Net::new(&cfg, &[(0.0, 0.0), (100.0, 0.0)], 3);
        for k in 0..5 {
            net.send(ms(k * 10), 0, Addr::Unicast(1), 500);
        }
        net.run_until(ms(100));
        let mean_mw = 10f64.powf(net.m.mean_rx_dbm(0, 1) / 10.0);
        let got: Vec<f64> = net
            .log
            .iter()
            .filter_map(|(_, i)| match i {
                Indication::Deliver { node: 1, rx_power_mw, .. } => Some(*rx_power_mw / mean_mw),
                _ => None,
            })
            .collect();
        assert_eq!(got.len(), 5);
        got
    };
    assert!(powers(Fading::None).iter().all(|r| (r - 1.0).abs() < 1e-9));
    let faded = powers(Fading::Rayleigh);
    assert!(faded.iter().any(|r| (r - 1.0).abs() > 0.01), "{faded:?}");
}
