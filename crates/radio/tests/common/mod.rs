//! What the MAC tests share: a driver that runs a `Medium` through its
//! public event interface only (`Medium::enqueue`, `Medium::handle`,
//! `Medium::poll_indication`) and keeps everything that came out of it,
//! and test-side timing, randomness and traffic helpers.

#![allow(dead_code)]

use meshbed_core::{Duration, EventQueue, Instant, TimerId};
use meshbed_radio::propagation::SPEED_OF_LIGHT_M_PER_S;
use meshbed_radio::{
    Addr, DropCause, Indication, MacCounters, Medium, NodeId, NodeRadio, Payload, RadioConfig, RadioEvent, RadioTimer,
    Scheduler, Standard, TxReport,
};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug, PartialEq)]
pub struct Pkt {
    pub id: u64,
    pub bytes: u32,
}

/// Packets of this size ask for priority (a routing control packet).
pub const PRIORITY_BYTES: u32 = 77;

impl Payload for Pkt {
    fn msdu_bytes(&self) -> u32 {
        self.bytes
    }
    fn priority(&self) -> bool {
        self.bytes == PRIORITY_BYTES
    }
}

/// The event queue; with `keep_timers`, the radio's timers kept as the
/// queue's (a stale one dropped unrun, as the simulator's driver does),
/// else each a plain event that its generation makes stale.
pub struct Q(EventQueue<RadioEvent>, bool);

impl Scheduler for Q {
    fn schedule(&mut self, at: Instant, event: RadioEvent) {
        self.0.schedule(at, event);
    }
    fn set_timer(&mut self, at: Instant, event: RadioEvent) {
        match event.timer() {
            Some(timer) if self.1 => self.0.set_timer(TimerId(timer.index(event.node())), at, event),
            _ => self.schedule(at, event),
        }
    }
    fn cancel_timer(&mut self, node: NodeId, timer: RadioTimer) {
        if self.1 {
            self.0.cancel_timer(TimerId(timer.index(node)));
        }
    }
}

/// A medium, its event queue, and everything that came out of it.
pub struct Net {
    pub m: Medium<Pkt>,
    pub q: Q,
    pub now: Instant,
    /// Every indication with the time it was produced.
    pub log: Vec<(Instant, Indication<Pkt>)>,
    /// Every event handled, with its time.
    pub events: Vec<(Instant, RadioEvent)>,
    pub next_id: u64,
    /// Nodes kept saturated: destination and MSDU size of their refills.
    pub saturated: BTreeMap<NodeId, (Addr, u32)>,
}

impl Net {
    pub fn new(cfg: &RadioConfig, nodes: &[(f64, f64)], seed: u64) -> Net {
        let radios: Vec<NodeRadio> = nodes.iter().map(|&(x, y)| NodeRadio::at(x, y)).collect();
        Net::with_radios(cfg, &radios, seed)
    }

    pub fn with_radios(cfg: &RadioConfig, radios: &[NodeRadio], seed: u64) -> Net {
        Net {
            m: Medium::new(cfg, radios, seed).expect("valid config"),
            q: Q(EventQueue::new(), false),
            now: Instant::ZERO,
            log: Vec::new(),
            events: Vec::new(),
            next_id: 0,
            saturated: BTreeMap::new(),
        }
    }

    /// Keeps the radio's timers as the queue's from now on (before any
    /// event is scheduled).
    pub fn keep_timers(&mut self) {
        assert!(self.q.0.is_empty(), "before the first event");
        self.q.1 = true;
    }

    pub fn raw_enqueue(&mut self, node: NodeId, dest: Addr, bytes: u32) -> (u64, bool) {
        let id = self.next_id;
        self.next_id += 1;
        let ok = self.m.enqueue(self.now, node, dest, Pkt { id, bytes }, &mut self.q);
        (id, ok)
    }

    pub fn drain(&mut self) {
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
    pub fn run_until(&mut self, t: Instant) {
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
    pub fn send(&mut self, at: Instant, node: NodeId, dest: Addr, bytes: u32) -> (u64, bool) {
        self.run_until(at);
        let r = self.raw_enqueue(node, dest, bytes);
        self.drain();
        r
    }

    /// Fills `node`'s queue at `at` and keeps it full from then on.
    pub fn saturate(&mut self, at: Instant, node: NodeId, dest: Addr, bytes: u32) {
        self.run_until(at);
        let cap = self.m.queue_capacity();
        for _ in 0..=cap {
            self.raw_enqueue(node, dest, bytes);
        }
        self.drain();
        self.saturated.insert(node, (dest, bytes));
    }

    /// Runs a list of `(time, node, dest, bytes)` arrivals, then up to `end`.
    pub fn run_arrivals(&mut self, mut arrivals: Vec<(Instant, NodeId, Addr, u32)>, end: Instant) {
        arrivals.sort_by_key(|a| a.0);
        for (t, n, d, b) in arrivals {
            self.send(t, n, d, b);
        }
        self.run_until(end);
    }

    pub fn counters(&self, node: NodeId) -> &MacCounters {
        self.m.counters(node)
    }

    /// `(time, from, id)` of every delivery to `node`.
    pub fn deliveries(&self, node: NodeId) -> Vec<(Instant, NodeId, u64)> {
        self.log
            .iter()
            .filter_map(|(t, i)| match i {
                Indication::Deliver { node: n, from, payload, .. } if *n == node => Some((*t, *from, payload.id)),
                _ => None,
            })
            .collect()
    }

    /// `(time produced, report)` of every TxReport of `node`.
    pub fn reports(&self, node: NodeId) -> Vec<(Instant, TxReport)> {
        self.log
            .iter()
            .filter_map(|(t, i)| match i {
                Indication::TxReport(r) if r.node == node => Some((*t, *r)),
                _ => None,
            })
            .collect()
    }

    /// `(id, cause)` of every drop at `node`.
    pub fn drops(&self, node: NodeId) -> Vec<(u64, DropCause)> {
        self.log
            .iter()
            .filter_map(|(_, i)| match i {
                Indication::Drop { node: n, payload, cause } if *n == node => Some((payload.id, *cause)),
                _ => None,
            })
            .collect()
    }

    /// Times at which `node` finished putting a frame on the air.
    pub fn tx_ends(&self, node: NodeId) -> Vec<Instant> {
        self.events
            .iter()
            .filter_map(|(t, e)| match e {
                RadioEvent::TxEnd { node: n } if *n == node => Some(*t),
                _ => None,
            })
            .collect()
    }

    /// A compact, comparable record of every indication.
    pub fn trace(&self) -> Vec<(u64, u8, NodeId, u64)> {
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

pub fn ms(x: u64) -> Instant {
    Instant::from_nanos(x * 1_000_000)
}

pub fn prop_delay(d_m: f64) -> Duration {
    Duration::from_nanos((d_m / SPEED_OF_LIGHT_M_PER_S * 1e9).round() as u64)
}

/// Deterministic test-side randomness (splitmix64), independent of the model's streams.
pub struct Mix(pub u64);
impl Mix {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `count` packets from `node` to `dest`, the first at `start`, then every
/// `mean_gap` ± 90% (uniform).
pub fn jittered(
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
pub fn ack_timeout(std: Standard) -> Duration {
    let t = std.timing();
    t.sifs + t.slot + t.preamble_header
}

/// Asserts that no (sender, id) reaches `node`'s upper layer twice.
pub fn assert_no_duplicate_delivery(net: &Net, node: NodeId) -> usize {
    let d = net.deliveries(node);
    let distinct: BTreeSet<(NodeId, u64)> = d.iter().map(|x| (x.1, x.2)).collect();
    assert_eq!(distinct.len(), d.len(), "node {node} got a payload twice");
    d.len()
}
