//! Behavioural tests of the DCF MAC and PHY model, driven through the public
//! event interface only (`Medium::enqueue`, `Medium::handle`,
//! `Medium::poll_indication`). Here: retries, broadcast, the queue,
//! duplicates and batched completion; the shared channel (carrier sense,
//! timing, determinism, error models) is in `mac_channel.rs`.

mod common;

use meshbed_core::{Duration, Instant};
use meshbed_radio::phy;
use meshbed_radio::{
    Addr, BatchedCompletion, DropCause, ErrorModel, Indication, NodeId, RadioConfig, RadioTimer, Standard, TxOutcome,
};
use std::collections::BTreeSet;

use common::*;

// ------------------------------------------------------------------ 1. retries

#[test]
fn retry_limit_zero_means_exactly_one_attempt() {
    let mut cfg = RadioConfig::default();
    cfg.mac.short_retry_limit = 0;
    let mut net = Net::new(&cfg, &[(0.0, 0.0), (1000.0, 0.0)], 1);
    let (id, ok) = net.send(ms(1), 0, Addr::Unicast(1), 1000);
    assert!(ok);
    net.run_until(ms(100));

    let c = net.counters(0);
    assert_eq!(c.data_tx_attempts, 1, "{c:?}");
    assert_eq!(c.retransmissions, 0, "{c:?}");
    assert_eq!(c.ack_timeouts, 1, "{c:?}");
    assert_eq!(c.drop_retry_limit, 1, "{c:?}");
    assert_eq!(c.acked, 0, "{c:?}");
    assert_eq!(net.drops(0), vec![(id, DropCause::RetryLimit)]);
    assert_eq!(net.tx_ends(0).len(), 1);

    let reports = net.reports(0);
    assert_eq!(reports.len(), 1);
    let r = reports[0].1;
    assert_eq!(r.outcome, TxOutcome::RetryLimit);
    assert_eq!(r.retries, 0, "one attempt is zero retransmissions: {r:?}");
    assert_eq!(r.first_tx_at, Some(ms(1)));
    // Given up when the ACK timeout after the only attempt expired.
    let t_data = Standard::A.frame_duration(1000 + phy::DATA_OVERHEAD_BYTES, 24_000);
    assert_eq!(r.tx_done_at, Some(ms(1) + t_data + ack_timeout(Standard::A)));

    // The far node heard energy it could not decode.
    assert_eq!(net.counters(1).delivered, 0);
    assert_eq!(net.counters(1).rx_below_sensitivity, 1);
    assert_eq!(net.counters(1).acks_sent, 0);
}

#[test]
fn default_retry_limit_gives_seven_attempts_with_doubling_window() {
    let cfg = RadioConfig::default();
    let std = cfg.standard;
    let timing = std.timing();
    let slot = timing.slot.as_nanos();
    let t_data = std.frame_duration(1000 + phy::DATA_OVERHEAD_BYTES, 24_000);
    // Between the end of a failed attempt's ACK timeout and the next attempt:
    // DIFS, then the backoff drawn from the doubled window.
    let fixed = t_data + ack_timeout(std) + timing.difs();
    let cw_after = |k: u32| ((timing.cw_min + 1) << k).saturating_sub(1).min(timing.cw_max) as u64;

    let seeds = 300;
    let mut slots: Vec<Vec<u64>> = vec![Vec::new(); 6];
    for seed in 0..seeds {
        let mut net = Net::new(&cfg, &[(0.0, 0.0), (1000.0, 0.0)], seed);
        let (id, _) = net.send(ms(1), 0, Addr::Unicast(1), 1000);
        net.run_until(ms(200));
        let c = net.counters(0).clone();
        assert_eq!(c.data_tx_attempts, 7, "seed {seed}: {c:?}");
        assert_eq!(c.retransmissions, 6, "seed {seed}: {c:?}");
        assert_eq!(c.ack_timeouts, 7, "seed {seed}: {c:?}");
        assert_eq!(c.drop_retry_limit, 1, "seed {seed}: {c:?}");
        assert_eq!(net.drops(0), vec![(id, DropCause::RetryLimit)]);
        let reports = net.reports(0);
        assert_eq!(reports.len(), 1);
        assert_eq!(reports[0].1.outcome, TxOutcome::RetryLimit);
        assert_eq!(reports[0].1.retries, 6, "seed {seed}: {:?}", reports[0].1);

        let starts: Vec<Instant> = net.tx_ends(0).iter().map(|&e| e - t_data).collect();
        assert_eq!(starts.len(), 7);
        assert_eq!(starts[0], ms(1), "the first attempt finds the medium idle");
        for k in 0..6 {
            let gap = starts[k + 1] - starts[k];
            assert!(gap >= fixed, "seed {seed}, retry {}: gap {gap} < {fixed}", k + 1);
            let extra = (gap - fixed).as_nanos();
            assert_eq!(extra % slot, 0, "seed {seed}: backoff is a whole number of slots");
            let n = extra / slot;
            assert!(
                n <= cw_after(k as u32 + 1),
                "seed {seed}, retry {}: {n} slots > CW {}",
                k + 1,
                cw_after(k as u32 + 1)
            );
            slots[k].push(n);
        }
    }
    let mut prev_mean = 0.0;
    for (k, s) in slots.iter().enumerate() {
        let cw = cw_after(k as u32 + 1);
        let mean = s.iter().sum::<u64>() as f64 / s.len() as f64;
        let max = *s.iter().max().unwrap();
        // Uniform on 0..=CW: mean CW/2 (300 draws: standard error ≈ CW/60).
        assert!((mean - cw as f64 / 2.0).abs() < 0.12 * cw as f64, "retry {}: mean {mean} slots, CW {cw}", k + 1);
        assert!(mean > prev_mean, "retry {}: mean backoff {mean} did not grow from {prev_mean}", k + 1);
        if k > 0 {
            assert!(max > cw_after(k as u32), "retry {}: max {max} never exceeded the previous CW", k + 1);
        }
        prev_mean = mean;
    }
}

// ------------------------------------------------------------------ 2. broadcast

#[test]
fn broadcast_reaches_every_node_in_range_without_acks_or_retries() {
    let cfg = RadioConfig::default();
    let nodes = [(0.0, 0.0), (100.0, 0.0), (0.0, 200.0), (1000.0, 0.0)];
    let mut net = Net::new(&cfg, &nodes, 7);
    let n = 50;
    let mut ids = Vec::new();
    for i in 0..n {
        let (id, ok) = net.send(ms(1 + 2 * i), 0, Addr::Broadcast, 500);
        assert!(ok);
        ids.push(id);
    }
    net.run_until(ms(200));

    for rx in [1, 2] {
        let got: Vec<u64> = net.deliveries(rx).iter().map(|d| d.2).collect();
        assert_eq!(got, ids, "node {rx} in range gets every broadcast once, in order");
        assert!(net.deliveries(rx).iter().all(|d| d.1 == 0));
    }
    assert!(net.deliveries(3).is_empty(), "node 3 is out of range");
    for node in 0..4 {
        let c = net.counters(node);
        assert_eq!(c.acks_sent, 0, "node {node}: {c:?}");
        assert_eq!(c.retransmissions, 0, "node {node}: {c:?}");
        assert_eq!(c.ack_timeouts, 0, "node {node}: {c:?}");
    }
    let c = net.counters(0);
    assert_eq!((c.broadcasts_sent, c.data_tx_attempts, c.acked), (n, n, 0));

    let t_data = Standard::A.frame_duration(500 + phy::DATA_OVERHEAD_BYTES, 24_000);
    let reports = net.reports(0);
    assert_eq!(reports.len(), n as usize);
    for (_, r) in &reports {
        assert_eq!(r.outcome, TxOutcome::Broadcast);
        assert_eq!(r.retries, 0);
        // Done as soon as it is sent.
        assert_eq!(r.tx_done_at, Some(r.first_tx_at.unwrap() + t_data), "{r:?}");
    }
}

#[test]
fn colliding_broadcasts_are_never_retried() {
    // Two saturated broadcasters in range of each other collide in the same
    // slot now and then; a lost broadcast is still sent only once.
    let cfg = RadioConfig::default();
    let mut net = Net::new(&cfg, &[(0.0, 0.0), (100.0, 0.0), (50.0, 50.0)], 3);
    net.saturate(ms(1), 0, Addr::Broadcast, 1000);
    net.saturate(ms(1), 1, Addr::Broadcast, 1000);
    net.run_until(ms(500));
    let mut sent = 0;
    for node in [0, 1] {
        let c = net.counters(node);
        assert_eq!(c.retransmissions, 0, "{c:?}");
        // (at most one still on the air when the run stops)
        assert!(c.data_tx_attempts - c.broadcasts_sent <= 1, "{c:?}");
        let reports = net.reports(node);
        assert_eq!(reports.len() as u64, c.broadcasts_sent);
        assert!(reports.iter().all(|(_, r)| r.outcome == TxOutcome::Broadcast && r.retries == 0));
        sent += c.broadcasts_sent;
    }
    for node in 0..3 {
        assert_eq!(net.counters(node).acks_sent, 0);
    }
    let heard = net.counters(2).delivered;
    assert!(sent > 500, "{sent}");
    assert!(heard < sent, "some same-slot collisions are expected ({heard} of {sent})");
    assert!(heard * 10 > sent * 7, "but most broadcasts get through ({heard} of {sent})");
}

// ------------------------------------------------------------------ 3. queue

#[test]
fn queue_overflow_drops_beyond_head_of_line_plus_capacity() {
    let mut cfg = RadioConfig::default();
    cfg.mac.queue_packets = 50;
    let mut net = Net::new(&cfg, &[(0.0, 0.0), (100.0, 0.0)], 1);
    net.run_until(ms(1));
    let mut accepted = Vec::new();
    let mut rejected = Vec::new();
    for _ in 0..60 {
        let (id, ok) = net.raw_enqueue(0, Addr::Unicast(1), 500);
        if ok {
            accepted.push(id);
        } else {
            rejected.push(id);
        }
    }
    net.drain();
    // The first packet goes straight to the head of the line (off the queue),
    // then 50 fit in the queue: 60 - 1 - 50 = 9 overflow.
    assert_eq!(accepted, (0..51).collect::<Vec<_>>());
    assert_eq!(rejected, (51..60).collect::<Vec<_>>());
    assert_eq!(net.m.queue_len(0), 50);
    let overflow: Vec<u64> = net.drops(0).iter().filter(|d| d.1 == DropCause::QueueOverflow).map(|d| d.0).collect();
    assert_eq!(overflow, rejected);
    assert_eq!(net.counters(0).drop_queue_overflow, 9);
    assert_eq!(net.counters(0).enqueued, 51);

    net.run_until(ms(200));
    let got: Vec<u64> = net.deliveries(1).iter().map(|d| d.2).collect();
    assert_eq!(got, accepted, "every accepted packet is delivered once, in order");
    let dequeued = net.log.iter().filter(|(_, i)| matches!(i, Indication::Dequeued { node: 0 })).count();
    assert_eq!(dequeued, 51);
    assert_eq!(net.m.queue_len(0), 0);
    // Room again: accepted.
    assert!(net.send(ms(201), 0, Addr::Unicast(1), 500).1);
}

/// Priority packets (routing control, ns-2's CMU queue) go ahead of data
/// already queued, in their own order; data keeps its order behind them.
#[test]
fn priority_packets_overtake_queued_data_in_their_own_order() {
    let mut net = Net::new(&RadioConfig::default(), &[(0.0, 0.0), (100.0, 0.0)], 1);
    let mut ids = Vec::new();
    // All enqueued at once: the first data packet goes to the MAC at once,
    // the rest wait in the queue.
    for bytes in [1000, 1000, 1000, PRIORITY_BYTES, 1000, PRIORITY_BYTES] {
        ids.push((net.send(ms(0), 0, Addr::Unicast(1), bytes).0, bytes));
    }
    net.run_until(ms(200));
    let order: Vec<u64> = net.deliveries(1).iter().map(|d| d.2).collect();
    let id = |k: usize| ids[k].0;
    assert_eq!(order, [id(0), id(3), id(5), id(1), id(2), id(4)]);
}

// ------------------------------------------------------------------ 4. duplicates

#[test]
fn lost_acks_cause_retransmissions_that_are_not_delivered_twice() {
    // A sends to B 100 m away. C, 400 m on A's other side, can neither sense
    // nor be sensed by A or B (carrier sense = transmission range = 250 m)
    // and broadcasts long frames back to back. At B, C is 14 dB weaker than
    // A: A's DATA survives. At A, C is only 12 dB weaker than B: the ACK
    // (13 dB threshold at 24 Mbit/s) is lost whenever C is on the air, so A
    // retransmits frames B already has.
    let mut cfg = RadioConfig {
        tx_range_m: Some(250.0),
        cs_range_m: Some(250.0),
        error_model: ErrorModel::Threshold,
        ..Default::default()
    };
    cfg.mac.queue_packets = 200;
    let mut net = Net::new(&cfg, &[(0.0, 0.0), (-100.0, 0.0), (400.0, 0.0)], 11);
    let mut rng = Mix(5);
    // C on the air about a quarter of the time.
    let mut arrivals = jittered(&mut rng, 2, Addr::Broadcast, 1500, ms(1), Duration::from_millis(2), 600);
    arrivals.extend(jittered(&mut rng, 0, Addr::Unicast(1), 500, ms(2), Duration::from_millis(5), 200));
    net.run_arrivals(arrivals, ms(1500));

    let a = net.counters(0).clone();
    let b = net.counters(1).clone();
    assert!(a.retransmissions > 0, "{a:?}");
    assert!(b.duplicates_dropped > 0, "B must have seen retransmitted copies: {b:?}");
    assert_eq!(b.rx_collision_or_corruption, 0, "A's DATA is never corrupted at B: {b:?}");
    let delivered = assert_no_duplicate_delivery(&net, 1);
    assert_eq!(delivered as u64, b.delivered);
    // B got each of A's frames the first time; duplicates are the other copies.
    assert_eq!(delivered, 200, "{a:?}\n{b:?}\n{:?}", net.counters(2));
    assert_eq!(b.acks_sent, b.delivered + b.duplicates_dropped);
    assert_eq!(a.data_tx_attempts, b.acks_sent);
}

#[test]
fn hidden_terminals_with_retries_never_deliver_twice() {
    // Two senders hidden from each other (400 m apart, CS = 250 m) load a
    // common receiver in the middle: collisions, lost ACKs and retries.
    let cfg = RadioConfig { tx_range_m: Some(250.0), cs_range_m: Some(250.0), ..Default::default() };
    let mut net = Net::new(&cfg, &[(-200.0, 0.0), (0.0, 0.0), (200.0, 0.0)], 21);
    let mut rng = Mix(9);
    let mut arrivals = jittered(&mut rng, 0, Addr::Unicast(1), 1000, ms(1), Duration::from_micros(1500), 600);
    arrivals.extend(jittered(&mut rng, 2, Addr::Unicast(1), 1000, ms(1), Duration::from_micros(1500), 600));
    net.run_arrivals(arrivals, ms(3000));
    let (a, r, b) = (net.counters(0).clone(), net.counters(1).clone(), net.counters(2).clone());
    assert!(a.retransmissions + b.retransmissions > 0);
    assert!(r.rx_collision_or_corruption > 0, "{r:?}");
    assert_no_duplicate_delivery(&net, 1);
    // Whatever was ACKed was delivered.
    let got: BTreeSet<(NodeId, u64)> = net.deliveries(1).iter().map(|d| (d.1, d.2)).collect();
    let log_ids = |node: NodeId, outcome: TxOutcome| -> usize {
        net.reports(node).iter().filter(|(_, r)| r.outcome == outcome).count()
    };
    assert!(got.len() >= log_ids(0, TxOutcome::Acked) + log_ids(2, TxOutcome::Acked));
    assert_eq!(a.acked + b.acked, (log_ids(0, TxOutcome::Acked) + log_ids(2, TxOutcome::Acked)) as u64);
}

/// A queue that keeps the radio's access, timeout and NAV events as timers
/// drops the stale ones unrun (issue 28) and changes nothing else: hidden
/// terminals with RTS/CTS (NAVs set and overtaken, backoffs frozen,
/// timeouts) give the same indications at the same times, and the events
/// that run are the plain queue's in the same order, less some of its
/// access and NAV-end events.
#[test]
fn keeping_timers_drops_only_stale_events() {
    let run = |keep_timers: bool| {
        let mut cfg = RadioConfig { tx_range_m: Some(250.0), cs_range_m: Some(250.0), ..Default::default() };
        cfg.mac.rts_threshold_bytes = Some(0);
        // 0 → 1, 2 → 0 and 3 → 1 on a line: 2 hears 0's RTS and data but
        // not 1's CTS and ACK, so only its NAV's end lets it count down
        // again; 3 is hidden from 0.
        let mut net = Net::new(&cfg, &[(0.0, 0.0), (200.0, 0.0), (-200.0, 0.0), (400.0, 0.0)], 5);
        if keep_timers {
            net.keep_timers();
        }
        let mut rng = Mix(3);
        let mut arrivals = jittered(&mut rng, 0, Addr::Unicast(1), 1000, ms(1), Duration::from_micros(1500), 300);
        arrivals.extend(jittered(&mut rng, 2, Addr::Unicast(0), 1000, ms(1), Duration::from_micros(3000), 150));
        arrivals.extend(jittered(&mut rng, 3, Addr::Unicast(1), 500, ms(1), Duration::from_micros(3000), 150));
        net.run_arrivals(arrivals, ms(3000));
        net
    };
    let (plain, kept) = (run(false), run(true));
    assert!(plain.counters(0).retransmissions + plain.counters(3).retransmissions > 0);
    assert!(plain.counters(2).acked > 100, "{:?}", plain.counters(2));
    assert_eq!(kept.trace(), plain.trace(), "the same indications at the same times");
    let mut rest = plain.events.iter();
    for e in &kept.events {
        assert!(rest.any(|p| p == e), "{e:?} ran with timers kept but not in the plain queue's order");
    }
    let dropped = plain.events.len() - kept.events.len();
    assert_eq!(kept.m.stale_events(), 0, "no stale event runs with timers kept");
    assert_eq!(dropped as u64, plain.m.stale_events(), "the events dropped are the plain queue's stale ones");
    let count = |net: &Net, timer: RadioTimer| net.events.iter().filter(|(_, e)| e.timer() == Some(timer)).count();
    assert!(dropped > 0, "some events were stale");
    assert_eq!(count(&plain, RadioTimer::Timeout), count(&kept, RadioTimer::Timeout), "every timeout here runs");
    assert_eq!(
        dropped,
        count(&plain, RadioTimer::Access) - count(&kept, RadioTimer::Access) + count(&plain, RadioTimer::NavEnd)
            - count(&kept, RadioTimer::NavEnd),
        "only access and NAV-end events were dropped"
    );
}

// ------------------------------------------------------------------ 5. batched completion

#[test]
fn batched_completion_reports_only_the_last_of_each_batch() {
    let mut cfg = RadioConfig::default();
    cfg.mac.batched_completion = Some(BatchedCompletion { max_frames: 4 });
    let mut net = Net::new(&cfg, &[(0.0, 0.0), (100.0, 0.0)], 2);
    net.run_until(ms(1));
    for _ in 0..22 {
        assert!(net.raw_enqueue(0, Addr::Unicast(1), 1000).1);
    }
    net.drain();
    net.run_until(ms(500));
    let reports = net.reports(0);
    assert_eq!(reports.len(), 22);
    assert!(reports.iter().all(|(_, r)| r.outcome == TxOutcome::Acked));
    // Packet k (1-based) finishes with 22 - k left in the queue: a batch is
    // reported after 4 frames, or when the queue is empty.
    let mut groups = Vec::new();
    let mut size = 0;
    for (i, (at, r)) in reports.iter().enumerate() {
        size += 1;
        if let Some(done) = r.tx_done_at {
            assert_eq!(done, *at, "the interrupting frame completes when the batch is reported");
            groups.push(size);
            size = 0;
        } else {
            // Held back until the batch is reported together.
            let (flush_at, last) = reports[i..].iter().find(|(_, r)| r.tx_done_at.is_some()).unwrap();
            assert_eq!(at, flush_at);
            assert!(r.first_tx_at.unwrap() < last.first_tx_at.unwrap());
        }
    }
    assert_eq!(size, 0, "the last report carries a completion time");
    assert_eq!(groups, vec![4, 4, 4, 4, 4, 2]);

    // A queue that drains before every new packet: every frame raises TXEOL.
    let mut net = Net::new(&cfg, &[(0.0, 0.0), (100.0, 0.0)], 2);
    for i in 0..20 {
        net.send(ms(1 + 5 * i), 0, Addr::Unicast(1), 1000);
    }
    net.run_until(ms(200));
    let reports = net.reports(0);
    assert_eq!(reports.len(), 20);
    assert!(reports.iter().all(|(at, r)| r.tx_done_at == Some(*at)), "{reports:?}");
}

#[test]
fn without_batching_every_report_is_complete_and_ordered() {
    let cfg = RadioConfig::default();
    let mut net = Net::new(&cfg, &[(0.0, 0.0), (100.0, 0.0), (50.0, 80.0)], 4);
    net.saturate(ms(1), 0, Addr::Unicast(1), 1000);
    net.saturate(ms(1), 2, Addr::Unicast(1), 1000);
    net.run_until(ms(300));
    for node in [0, 2] {
        let reports = net.reports(node);
        assert!(reports.len() > 100);
        for (at, r) in &reports {
            let done = r.tx_done_at.expect("every report has a completion time");
            let first = r.first_tx_at.expect("every unicast was attempted");
            assert_eq!(done, *at);
            assert!(done >= first && first >= r.enqueued_at, "{r:?}");
            if r.outcome == TxOutcome::Acked {
                assert!(done > first);
            }
        }
    }
}
