//! meshbed's discrete-event simulator.
//!
//! A [`Sim`] owns the event queue, the radio [`Medium`], the routing tables
//! and the traffic sources and sinks of a [`Scenario`]. It pops events in
//! `(time, sequence)` order and hands radio events to the model, so a run is a
//! pure function of the scenario and its seed: the same seed gives the same
//! event-trace hash on every machine.

pub mod report;
pub mod routing;
pub mod scenario;

use meshbed_core::{Duration, EventQueue, Instant, TraceHash};
use meshbed_radio::{Addr, DropCause, Indication, MacCounters, Medium, NodeId, Payload, RadioEvent, Scheduler};
pub use report::{FlowResult, SimReport};
use routing::RouteTable;
pub use scenario::{Scenario, ScenarioError, Traffic};
use scenario::IP_UDP_HEADER_BYTES;
use serde::Serialize;

/// A network-layer packet as the simulator carries it.
#[derive(Clone, Debug)]
pub struct Packet {
    pub src: NodeId,
    pub dst: NodeId,
    pub flow: u32,
    pub seq: u64,
    /// IP packet size (the MSDU).
    pub size_bytes: u32,
    pub created_at: Instant,
    /// Hops left before the packet is discarded (a guard against loops in
    /// hand-written static routes).
    pub ttl: u8,
}

impl Payload for Packet {
    fn msdu_bytes(&self) -> u32 {
        self.size_bytes
    }
}

/// The simulator's events: the radio model's, and the traffic sources'.
#[derive(Copy, Clone, Debug)]
enum SimEvent {
    Radio(RadioEvent),
    /// A CBR source emits its next packet.
    CbrTick { flow: u32 },
    /// A saturated source starts (fills its queue).
    SaturatedStart { flow: u32 },
}

struct QueueScheduler<'a>(&'a mut EventQueue<SimEvent>);

impl Scheduler for QueueScheduler<'_> {
    fn schedule(&mut self, at: Instant, event: RadioEvent) {
        self.0.schedule(at, SimEvent::Radio(event));
    }
}

struct FlowState {
    spec: scenario::FlowSpec,
    start: Instant,
    stop: Instant,
    interval: Duration,
    next_seq: u64,
    sent_packets: u64,
    rx_packets: u64,
    rx_payload_bytes: u64,
    first_rx: Option<Instant>,
    last_rx: Option<Instant>,
    delay_sum_ns: u128,
    max_seq_seen: Option<u64>,
    out_of_order: u64,
}

/// Network-layer counters of one node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NetCounters {
    pub forwarded: u64,
    pub no_route: u64,
    pub ttl_expired: u64,
}

/// One simulation run.
pub struct Sim {
    scenario: Scenario,
    queue: EventQueue<SimEvent>,
    medium: Medium<Packet>,
    routes: RouteTable,
    flows: Vec<FlowState>,
    /// Saturated flows by source node, for refilling on dequeue.
    saturated_at: Vec<Vec<u32>>,
    saturated_rr: Vec<usize>,
    net: Vec<NetCounters>,
    end: Instant,
    events: u64,
    trace: TraceHash,
}

impl Sim {
    /// Builds a run; the scenario must already be valid.
    pub fn new(scenario: &Scenario) -> Result<Sim, ScenarioError> {
        scenario.validate()?;
        let radios = scenario.node_radios();
        let medium = Medium::new(&scenario.radio, &radios, scenario.seed).map_err(|e| ScenarioError::Invalid {
            file: String::new(),
            key: format!("radio.{}", e.key),
            value: e.value,
            expected: e.expected,
        })?;
        let routes = RouteTable::build(&scenario.routing, &medium);
        let end = Instant::ZERO + Duration::from_secs_f64(scenario.duration_s);
        let n = medium.node_count();
        let mut queue = EventQueue::new();
        let mut flows = Vec::new();
        let mut saturated_at = vec![Vec::new(); n];
        for (i, f) in scenario.flows.iter().enumerate() {
            let start = Instant::ZERO + Duration::from_secs_f64(f.start_s);
            let stop = f.stop_s.map_or(end, |s| Instant::ZERO + Duration::from_secs_f64(s)).min(end);
            let interval = match (f.traffic, f.rate_kbps) {
                (Traffic::Cbr, Some(r)) => Duration::from_secs_f64(f.packet_bytes as f64 * 8.0 / (r * 1000.0)),
                _ => Duration::ZERO,
            };
            match f.traffic {
                Traffic::Cbr => queue.schedule(start, SimEvent::CbrTick { flow: i as u32 }),
                Traffic::Saturated => {
                    saturated_at[f.src as usize].push(i as u32);
                    queue.schedule(start, SimEvent::SaturatedStart { flow: i as u32 });
                }
            }
            flows.push(FlowState {
                spec: f.clone(),
                start,
                stop,
                interval,
                next_seq: 0,
                sent_packets: 0,
                rx_packets: 0,
                rx_payload_bytes: 0,
                first_rx: None,
                last_rx: None,
                delay_sum_ns: 0,
                max_seq_seen: None,
                out_of_order: 0,
            });
        }
        Ok(Sim {
            scenario: scenario.clone(),
            queue,
            medium,
            routes,
            flows,
            saturated_rr: vec![0; n],
            saturated_at,
            net: vec![NetCounters::default(); n],
            end,
            events: 0,
            trace: TraceHash::default(),
        })
    }

    pub fn medium(&self) -> &Medium<Packet> {
        &self.medium
    }
    pub fn routes(&self) -> &RouteTable {
        &self.routes
    }

    /// Runs to the scenario's end and reports.
    pub fn run(mut self) -> SimReport {
        while let Some(t) = self.queue.peek_time() {
            if t > self.end {
                break;
            }
            let (now, ev) = self.queue.pop().expect("peeked");
            self.events += 1;
            self.trace.write_u64(now.as_nanos());
            match ev {
                SimEvent::Radio(rev) => {
                    self.trace.write_u64(rev.code() << 32 | rev.node() as u64);
                    self.medium.handle(now, rev, &mut QueueScheduler(&mut self.queue));
                }
                SimEvent::CbrTick { flow } => {
                    self.trace.write_u64(100 << 32 | flow as u64);
                    let f = &self.flows[flow as usize];
                    if now < f.stop {
                        let next = now + f.interval;
                        self.originate(now, flow);
                        self.queue.schedule(next, SimEvent::CbrTick { flow });
                    }
                }
                SimEvent::SaturatedStart { flow } => {
                    self.trace.write_u64(101 << 32 | flow as u64);
                    let src = self.flows[flow as usize].spec.src;
                    // Fill the queue; stop if the network layer refuses the
                    // packet (no route), or this would never end.
                    while self.medium.queue_len(src) < self.medium.queue_capacity() {
                        if !self.originate(now, flow) {
                            break;
                        }
                    }
                }
            }
            self.drain_indications(now);
        }
        self.report()
    }

    /// Creates a packet of `flow` at its source and hands it to the MAC.
    /// Returns whether the MAC queued it.
    fn originate(&mut self, now: Instant, flow: u32) -> bool {
        let f = &mut self.flows[flow as usize];
        let pkt = Packet {
            src: f.spec.src,
            dst: f.spec.dst,
            flow,
            seq: f.next_seq,
            size_bytes: f.spec.packet_bytes,
            created_at: now,
            ttl: 64,
        };
        f.next_seq += 1;
        f.sent_packets += 1;
        let src = f.spec.src;
        self.route_out(now, src, pkt)
    }

    /// Hands `pkt` to `node`'s MAC towards its next hop; `false` if dropped.
    fn route_out(&mut self, now: Instant, node: NodeId, mut pkt: Packet) -> bool {
        if pkt.ttl == 0 {
            self.net[node as usize].ttl_expired += 1;
            return false;
        }
        pkt.ttl -= 1;
        match self.routes.next_hop(node, pkt.dst) {
            Some(next) => self.medium.enqueue(now, node, Addr::Unicast(next), pkt, &mut QueueScheduler(&mut self.queue)),
            None => {
                self.net[node as usize].no_route += 1;
                false
            }
        }
    }

    fn drain_indications(&mut self, now: Instant) {
        while let Some(ind) = self.medium.poll_indication() {
            match ind {
                Indication::Deliver { node, payload, .. } => {
                    if payload.dst == node {
                        self.sink(now, payload);
                    } else {
                        self.net[node as usize].forwarded += 1;
                        let _ = self.route_out(now, node, payload);
                    }
                }
                Indication::Dequeued { node } => self.refill(now, node),
                Indication::Drop { cause: DropCause::QueueOverflow | DropCause::RetryLimit, .. } => {}
                Indication::TxReport(_) => {}
            }
        }
    }

    /// A saturated source tops its queue up whenever the MAC takes a packet.
    fn refill(&mut self, now: Instant, node: NodeId) {
        let list = &self.saturated_at[node as usize];
        if list.is_empty() {
            return;
        }
        let k = list.len();
        for i in 0..k {
            let idx = (self.saturated_rr[node as usize] + i) % k;
            let flow = self.saturated_at[node as usize][idx];
            let f = &self.flows[flow as usize];
            if now >= f.start && now < f.stop && self.medium.queue_len(node) < self.medium.queue_capacity() {
                self.saturated_rr[node as usize] = (idx + 1) % k;
                let _ = self.originate(now, flow);
                return;
            }
        }
    }

    fn sink(&mut self, now: Instant, pkt: Packet) {
        let f = &mut self.flows[pkt.flow as usize];
        f.rx_packets += 1;
        f.rx_payload_bytes += (pkt.size_bytes - IP_UDP_HEADER_BYTES) as u64;
        f.first_rx.get_or_insert(now);
        f.last_rx = Some(now);
        f.delay_sum_ns += now.saturating_since(pkt.created_at).as_nanos() as u128;
        match f.max_seq_seen {
            Some(m) if pkt.seq < m => f.out_of_order += 1,
            _ => f.max_seq_seen = Some(pkt.seq),
        }
    }

    fn report(&self) -> SimReport {
        let flows = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let active_s = f.stop.saturating_since(f.start).as_secs_f64();
                FlowResult {
                    flow: i as u32,
                    src: f.spec.src,
                    dst: f.spec.dst,
                    hops: self.routes.hop_count(f.spec.src, f.spec.dst),
                    traffic: f.spec.traffic,
                    sent_packets: f.sent_packets,
                    received_packets: f.rx_packets,
                    received_payload_bytes: f.rx_payload_bytes,
                    goodput_bps: if active_s > 0.0 { f.rx_payload_bytes as f64 * 8.0 / active_s } else { 0.0 },
                    mean_delay_s: if f.rx_packets > 0 {
                        (f.delay_sum_ns / f.rx_packets as u128) as f64 / 1e9
                    } else {
                        0.0
                    },
                    out_of_order: f.out_of_order,
                }
            })
            .collect();
        let per_node: Vec<MacCounters> =
            (0..self.medium.node_count()).map(|n| self.medium.counters(n as NodeId).clone()).collect();
        let mut mac_total = MacCounters::default();
        for c in &per_node {
            mac_total.add(c);
        }
        SimReport {
            seed: self.scenario.seed,
            duration_s: self.scenario.duration_s,
            events: self.events,
            trace_hash: format!("{:016x}", self.trace.finish()),
            flows,
            mac_total,
            mac_per_node: per_node,
            net_per_node: self.net.clone(),
        }
    }
}

/// Runs a scenario to completion.
pub fn run(scenario: &Scenario) -> Result<SimReport, ScenarioError> {
    Ok(Sim::new(scenario)?.run())
}
