//! Behavioural tests of the DCF MAC and PHY model, driven through the public
//! event interface only (`Medium::enqueue`, `Medium::handle`,
//! `Medium::poll_indication`).

use meshbed_core::{Duration, EventQueue, Instant};
use meshbed_radio::phy::{self, control_rate_kbps};
use meshbed_radio::propagation::SPEED_OF_LIGHT_M_PER_S;
use meshbed_radio::{
    Addr, BatchedCompletion, DropCause, ErrorModel, Fading, Indication, MacCounters, Medium, NodeId, NodeRadio,
    Payload, RadioConfig, RadioEvent, Scheduler, Standard, TxOutcome, TxReport,
};
use std::collections::{BTreeMap, BTreeSet};

// ------------------------------------------------------------------ driver

#[derive(Clone, Debug, PartialEq)]
struct Pkt {
    id: u64,
    bytes: u32,
}

/// Packets of this size ask for priority (a routing control packet).
const PRIORITY_BYTES: u32 = 77;

impl Payload for Pkt {
    fn msdu_bytes(&self) -> u32 {
        self.bytes
    }
    fn priority(&self) -> bool {
        self.bytes == PRIORITY_BYTES
    }
}

struct Q(EventQueue<RadioEvent>);

impl Scheduler for Q {
    fn schedule(&mut self, at: Instant, event: RadioEvent) {
        self.0.schedule(at, event);
    }
}

/// A medium, its event queue, and everything that came out of it.
struct Net {
    m: Medium<Pkt>,
    q: Q,
    now: Instant,
    /// Every indication with the time it was produced.
    log: Vec<(Instant, Indication<Pkt>)>,
    /// Every event handled, with its time.
    events: Vec<(Instant, RadioEvent)>,
    next_id: u64,
    /// Nodes kept saturated: destination and MSDU size of their refills.
    saturated: BTreeMap<NodeId, (Addr, u32)>,
}

impl Net {
    fn new(cfg: &RadioConfig, nodes: &[(f64, f64)], seed: u64) -> Net {
        let radios: Vec<NodeRadio> = nodes.iter().map(|&(x, y)| NodeRadio::at(x, y)).collect();
        Net::with_radios(cfg, &radios, seed)
    }

    fn with_radios(cfg: &RadioConfig, radios: &[NodeRadio], seed: u64) -> Net {
        Net {
            m: Medium::new(cfg, radios, seed).expect("valid config"),
            q: Q(EventQueue::new()),
            now: Instant::ZERO,
            log: Vec::new(),
            events: Vec::new(),
            next_id: 0,
            saturated: BTreeMap::new(),
        }
    }

    fn raw_enqueue(&mut self, node: NodeId, dest: Addr, bytes: u32) -> (u64, bool) {
        let id = self.next_id;
        self.next_id += 1;
        let ok = self.m.enqueue(self.now, node, dest, Pkt { id, bytes }, &mut self.q);
        (id, ok)
    }

    fn drain(&mut self) {
        loop {
            let mut refill = Vec::new();
            while let Some(ind) = self.m.poll_indication() {
                if let Indication::Dequeued { node } = ind {
                    if let Some(&(d, b)) = self.saturated.get(&node) {
                        refill.push((node, d, b));
                    }
                }
                self.log.push((self.now, ind));
            }
            if refill.is_empty() {
                break;
            }
            for (n, d, b) in refill {
                self.raw_enqueue(n, d, b);
            }
        }
    }

    /// Runs every event up to and including `t`.
    fn run_until(&mut self, t: Instant) {
        while let Some(at) = self.q.0.peek_time() {
            if at > t {
                break;
            }
            let (at, ev) = self.q.0.pop().expect("peeked");
            self.now = at;
            self.events.push((at, ev));
            self.m.handle(at, ev, &mut self.q);
            self.drain();
        }
        self.now = self.now.max(t);
    }

    /// Hands a packet to `node` at `at` (running the model up to then).
    fn send(&mut self, at: Instant, node: NodeId, dest: Addr, bytes: u32) -> (u64, bool) {
        self.run_until(at);
        let r = self.raw_enqueue(node, dest, bytes);
        self.drain();
        r
    }

    /// Fills `node`'s queue at `at` and keeps it full from then on.
    fn saturate(&mut self, at: Instant, node: NodeId, dest: Addr, bytes: u32) {
        self.run_until(at);
        let cap = self.m.queue_capacity();
        for _ in 0..=cap {
            self.raw_enqueue(node, dest, bytes);
        }
        self.drain();
        self.saturated.insert(node, (dest, bytes));
    }

    /// Runs a list of `(time, node, dest, bytes)` arrivals, then up to `end`.
    fn run_arrivals(&mut self, mut arrivals: Vec<(Instant, NodeId, Addr, u32)>, end: Instant) {
        arrivals.sort_by_key(|a| a.0);
        for (t, n, d, b) in arrivals {
            self.send(t, n, d, b);
        }
        self.run_until(end);
    }

    fn counters(&self, node: NodeId) -> &MacCounters {
        self.m.counters(node)
    }

    /// `(time, from, id)` of every delivery to `node`.
    fn deliveries(&self, node: NodeId) -> Vec<(Instant, NodeId, u64)> {
        self.log
            .iter()
            .filter_map(|(t, i)| match i {
                Indication::Deliver { node: n, from, payload, .. } if *n == node => Some((*t, *from, payload.id)),
                _ => None,
            })
            .collect()
    }

    /// `(time produced, report)` of every TxReport of `node`.
    fn reports(&self, node: NodeId) -> Vec<(Instant, TxReport)> {
        self.log
            .iter()
            .filter_map(|(t, i)| match i {
                Indication::TxReport(r) if r.node == node => Some((*t, *r)),
                _ => None,
            })
            .collect()
    }

    /// `(id, cause)` of every drop at `node`.
    fn drops(&self, node: NodeId) -> Vec<(u64, DropCause)> {
        self.log
            .iter()
            .filter_map(|(_, i)| match i {
                Indication::Drop { node: n, payload, cause } if *n == node => Some((payload.id, *cause)),
                _ => None,
            })
            .collect()
    }

    /// Times at which `node` finished putting a frame on the air.
    fn tx_ends(&self, node: NodeId) -> Vec<Instant> {
        self.events
            .iter()
            .filter_map(|(t, e)| match e {
                RadioEvent::TxEnd { node: n } if *n == node => Some(*t),
                _ => None,
            })
            .collect()
    }

    /// A compact, comparable record of every indication.
    fn trace(&self) -> Vec<(u64, u8, NodeId, u64)> {
        self.log
            .iter()
            .map(|(t, i)| match i {
                Indication::Deliver { node, payload, .. } => (t.as_nanos(), 0, *node, payload.id),
                Indication::TxReport(r) => (t.as_nanos(), 1, r.node, r.retries as u64),
                Indication::Drop { node, payload, .. } => (t.as_nanos(), 2, *node, payload.id),
                Indication::Dequeued { node } => (t.as_nanos(), 3, *node, 0),
            })
            .collect()
    }
}

fn ms(x: u64) -> Instant {
    Instant::from_nanos(x * 1_000_000)
}

fn prop_delay(d_m: f64) -> Duration {
    Duration::from_nanos((d_m / SPEED_OF_LIGHT_M_PER_S * 1e9).round() as u64)
}

/// Deterministic test-side randomness (splitmix64), independent of the model's streams.
struct Mix(u64);
impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `count` packets from `node` to `dest`, the first at `start`, then every
/// `mean_gap` ± 90% (uniform).
fn jittered(
    rng: &mut Mix,
    node: NodeId,
    dest: Addr,
    bytes: u32,
    start: Instant,
    mean_gap: Duration,
    count: usize,
) -> Vec<(Instant, NodeId, Addr, u32)> {
    let g = mean_gap.as_nanos();
    let mut t = start;
    let mut v = Vec::new();
    for _ in 0..count {
        v.push((t, node, dest, bytes));
        t += Duration::from_nanos(g / 10 + rng.below(g * 18 / 10));
    }
    v
}

/// The ACK/CTS timeout the model uses: SIFS + slot + preamble detection.
fn ack_timeout(std: Standard) -> Duration {
    let t = std.timing();
    t.sifs + t.slot + t.preamble_header
}

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

// ------------------------------------------------------------------ 4. duplicates

/// Asserts that no (sender, id) reaches `node`'s upper layer twice.
fn assert_no_duplicate_delivery(net: &Net, node: NodeId) -> usize {
    let d = net.deliveries(node);
    let distinct: BTreeSet<(NodeId, u64)> = d.iter().map(|x| (x.1, x.2)).collect();
    assert_eq!(distinct.len(), d.len(), "node {node} got a payload twice");
    d.len()
}

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
