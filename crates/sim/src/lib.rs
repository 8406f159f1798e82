#![forbid(unsafe_code)]
//! meshbed's discrete-event simulator.
//!
//! A [`Sim`] owns the event queue, the radio [`Medium`], the routing tables
//! and the traffic sources and sinks of a [`Scenario`]. It pops events in
//! `(time, sequence)` order and hands radio events to the model, so a run is a
//! pure function of the scenario and its seed: the same seed gives the same
//! event-trace hash on every machine.
//!
//! Transport flows run the sans-IO engines of `meshbed_proto` (see
//! [`transport`]): the sender at the flow's source, the receiver at its
//! destination, each woken by its own timer event and by arriving datagrams,
//! and driven in the engine calling order. Every node has a
//! [`Relay`](meshbed_proto::relay::Relay) that averages the MAC's tx reports
//! and stamps each ATP/TCP datagram the node puts into its transmit queue,
//! the source's own included.

pub mod report;
pub mod routing;
pub mod scenario;
pub mod transport;

use meshbed_core::{Duration, EventQueue, Instant, TraceHash};
use meshbed_proto::engine::EngineEvent;
use meshbed_proto::relay::{Relay, RelayConfig};
use meshbed_radio::config::Resolved;
use meshbed_radio::{phy, Addr, DropCause, Indication, MacCounters, Medium, NodeId, Payload, RadioEvent, Scheduler};
pub use report::{FlowResult, SimReport};
use routing::RouteTable;
use scenario::IP_UDP_HEADER_BYTES;
pub use scenario::{Scenario, ScenarioError, Traffic};
use serde::Serialize;
use transport::{datagram_packet_bytes, RelayClass, Side, Transport};

/// Wake-ups of one engine at one instant after which the simulator decides
/// the engine's deadline does not advance and fails the flow (an engine bug;
/// the engine contract says it cannot happen).
const MAX_WAKEUPS_AT_ONE_INSTANT: u32 = 10_000;
/// How often [`Sim::run_with_progress`] reports: a few times per wall
/// second at the simulator's speed of millions of events per second.
pub const PROGRESS_EVERY_EVENTS: u64 = 1 << 18;
/// Buffer the engines write datagrams into: the largest MSDU minus IP + UDP.
const DATAGRAM_BUF_BYTES: usize = (scenario::MAX_PACKET_BYTES - IP_UDP_HEADER_BYTES) as usize;

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
    /// The ATP/TCP datagram (the UDP payload) of a transport flow; empty for
    /// UDP traffic, whose payload bytes are not modelled.
    pub datagram: Vec<u8>,
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
    CbrTick {
        flow: u32,
    },
    /// A saturated source starts (fills its queue).
    SaturatedStart {
        flow: u32,
    },
    /// A transport engine's timer (`gen` tells a current timer from one
    /// that was moved since: stale ones are skipped).
    Transport {
        flow: u32,
        side: Side,
        gen: u64,
    },
    /// A transport flow that runs for a duration reaches its stop time.
    TransportStop {
        flow: u32,
    },
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
    /// The engines of a transport flow; `None` for UDP.
    transport: Option<Box<Transport>>,
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
    /// `relays[node][class]`: every node's delay average and stamping, one per
    /// relay class, all fed the node's every tx report.
    relays: Vec<Vec<Relay>>,
    tx_buf: Vec<u8>,
    end: Instant,
    events: u64,
    trace: TraceHash,
}

impl Sim {
    /// Builds a run: validates the scenario, builds the radio model and the
    /// routes, and refuses flows the routes cannot carry.
    pub fn new(scenario: &Scenario) -> Result<Sim, ScenarioError> {
        let (medium, routes) = build_network(scenario)?;
        let end = Instant::ZERO + Duration::from_secs_f64(scenario.duration_s);
        let n = medium.node_count();
        let mut queue = EventQueue::new();
        let mut flows = Vec::new();
        let mut saturated_at = vec![Vec::new(); n];
        let mut relay_classes: Vec<RelayClass> = Vec::new();
        for (i, f) in scenario.flows.iter().enumerate() {
            let start = Instant::ZERO + Duration::from_secs_f64(f.start_s);
            let stop = f.stop_s.map_or(end, |s| Instant::ZERO + Duration::from_secs_f64(s)).min(end);
            let interval = match (f.traffic, f.rate_kbps) {
                (Traffic::Cbr, Some(r)) => Duration::from_secs_f64(f.packet_bytes as f64 * 8.0 / (r * 1000.0)),
                _ => Duration::ZERO,
            };
            let transport = match f.transport() {
                Some(protocol) => {
                    let bytes = scenario.sender_data_bytes(i);
                    let mut t = Transport::new(scenario.seed, i as u32, f, protocol, start, bytes);
                    if f.stop_s.is_some() {
                        t.stop_at = Some(stop);
                        queue.schedule(stop, SimEvent::TransportStop { flow: i as u32 });
                    }
                    let class = Transport::relay_class_of(f, protocol);
                    t.relay_class = relay_classes.iter().position(|c| *c == class).unwrap_or_else(|| {
                        relay_classes.push(class);
                        relay_classes.len() - 1
                    });
                    // The first SYN goes out at the sender's first poll_transmit.
                    t.timer_at[Side::Sender as usize] = Some(start);
                    t.timer_gen[Side::Sender as usize] = 1;
                    queue.schedule(start, SimEvent::Transport { flow: i as u32, side: Side::Sender, gen: 1 });
                    Some(Box::new(t))
                }
                None => {
                    match f.traffic {
                        Traffic::Cbr => queue.schedule(start, SimEvent::CbrTick { flow: i as u32 }),
                        Traffic::Saturated => {
                            saturated_at[f.src as usize].push(i as u32);
                            queue.schedule(start, SimEvent::SaturatedStart { flow: i as u32 });
                        }
                    }
                    None
                }
            };
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
                transport,
            });
        }
        let resolved = scenario.radio.resolve().expect("validated");
        let relays = (0..n as NodeId)
            .map(|node| {
                relay_classes
                    .iter()
                    .map(|c| {
                        let prior_delay = one_frame_service_time(&medium, &resolved, node, c.packet_bytes);
                        Relay::new(RelayConfig { prior_delay, ..c.config.clone() })
                    })
                    .collect()
            })
            .collect();
        let mut sim = Sim {
            scenario: scenario.clone(),
            queue,
            medium,
            routes,
            flows,
            saturated_rr: vec![0; n],
            saturated_at,
            net: vec![NetCounters::default(); n],
            relays,
            tx_buf: vec![0; DATAGRAM_BUF_BYTES],
            end,
            events: 0,
            trace: TraceHash::default(),
        };
        for flow in 0..sim.flows.len() {
            if sim.flows[flow].transport.is_some() {
                let start = sim.flows[flow].start;
                sim.rearm(start, flow as u32, Side::Receiver);
            }
        }
        Ok(sim)
    }

    pub fn medium(&self) -> &Medium<Packet> {
        &self.medium
    }
    pub fn routes(&self) -> &RouteTable {
        &self.routes
    }

    /// Runs to the scenario's end and reports.
    pub fn run(self) -> SimReport {
        self.run_with_progress(&mut |_| {})
    }

    /// Runs to the scenario's end, telling `progress` the simulated time
    /// every [`PROGRESS_EVERY_EVENTS`] events (for a progress bar on long
    /// runs; it cannot change the run).
    pub fn run_with_progress(mut self, progress: &mut dyn FnMut(Instant)) -> SimReport {
        while let Some(t) = self.queue.peek_time() {
            if t > self.end {
                break;
            }
            let (now, ev) = self.queue.pop().expect("peeked");
            self.events += 1;
            // A power of two: a mask instead of a division on every event.
            if self.events & (PROGRESS_EVERY_EVENTS - 1) == 0 {
                progress(now);
            }
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
                SimEvent::Transport { flow, side, gen } => {
                    self.trace.write_u64(102 << 32 | (flow as u64) << 1 | side as u64);
                    self.transport_timeout(now, flow, side, gen);
                }
                SimEvent::TransportStop { flow } => {
                    self.trace.write_u64(103 << 32 | flow as u64);
                    self.transport_stop(now, flow);
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
            datagram: Vec::new(),
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
            Some(next) => {
                self.medium.enqueue(now, node, Addr::Unicast(next), pkt, &mut QueueScheduler(&mut self.queue))
            }
            None => {
                self.net[node as usize].no_route += 1;
                false
            }
        }
    }

    fn drain_indications(&mut self, now: Instant) {
        while let Some(ind) = self.medium.poll_indication() {
            match ind {
                Indication::Deliver { node, mut payload, .. } => {
                    if payload.dst == node {
                        if payload.datagram.is_empty() {
                            self.sink(now, payload);
                        } else {
                            self.transport_input(now, node, payload);
                        }
                    } else {
                        self.net[node as usize].forwarded += 1;
                        if !payload.datagram.is_empty() {
                            self.stamp(now, node, payload.flow, &mut payload.datagram);
                        }
                        let _ = self.route_out(now, node, payload);
                    }
                }
                Indication::Dequeued { node } => self.refill(now, node),
                Indication::Drop { cause: DropCause::QueueOverflow | DropCause::RetryLimit, .. } => {}
                // seed 001 §3.1: the node's delay average is fed by every
                // frame the MAC finishes, whatever flow it belongs to.
                Indication::TxReport(r) => {
                    for relay in &mut self.relays[r.node as usize] {
                        relay.on_tx_report(now, r.enqueued_at, r.tx_done_at);
                    }
                }
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

    /// Stamps a transport datagram that `node` is about to queue, with the
    /// node's relay of the flow's class (seed 002 §4.1). The node's other
    /// relays only learn that the channel is in use.
    fn stamp(&mut self, now: Instant, node: NodeId, flow: u32, datagram: &mut [u8]) {
        let Some(t) = self.flows[flow as usize].transport.as_mut() else { return };
        let class = t.relay_class;
        let relays = &mut self.relays[node as usize];
        if let Err(e) = relays[class].stamp(now, datagram) {
            // Our own engines wrote the datagram: a parse failure is a bug.
            t.error.get_or_insert_with(|| format!("node {node} could not stamp a datagram: {e}"));
        }
        for (k, relay) in relays.iter_mut().enumerate() {
            if k != class {
                relay.note_channel_busy(now);
            }
        }
    }

    /// A transport datagram reached the flow's source or destination.
    fn transport_input(&mut self, now: Instant, node: NodeId, pkt: Packet) {
        let f = &mut self.flows[pkt.flow as usize];
        let side = if node == f.spec.dst { Side::Receiver } else { Side::Sender };
        if side == Side::Receiver {
            f.rx_packets += 1;
            f.first_rx.get_or_insert(now);
            f.last_rx = Some(now);
            f.delay_sum_ns += now.saturating_since(pkt.created_at).as_nanos() as u128;
            match f.max_seq_seen {
                Some(m) if pkt.seq < m => f.out_of_order += 1,
                _ => f.max_seq_seen = Some(pkt.seq),
            }
        }
        let Some(t) = f.transport.as_mut() else { return };
        if t.done {
            return;
        }
        if side == Side::Receiver {
            t.observe_at_receiver(&pkt.datagram);
        }
        t.engine(side).handle_input(now, &pkt.datagram);
        self.drive(now, pkt.flow, side);
    }

    /// A flow that runs for a duration has reached its stop time: what the
    /// receiver handed up so far must be a verified prefix of the data; the
    /// flow is then complete and nothing more is driven.
    fn transport_stop(&mut self, now: Instant, flow: u32) {
        let Some(t) = self.flows[flow as usize].transport.as_mut() else { return };
        if t.done {
            return;
        }
        t.take_delivered(now);
        if let Some(at) = t.mismatch_at {
            t.error.get_or_insert_with(|| format!("delivered byte {at} differs from the data sent"));
        } else if t.error.is_none() {
            t.completed_at = Some(now);
        }
        t.done = true;
        t.timer_gen[0] += 1;
        t.timer_gen[1] += 1;
        t.timer_at = [None; 2];
    }

    /// A transport timer event fired.
    fn transport_timeout(&mut self, now: Instant, flow: u32, side: Side, gen: u64) {
        let Some(t) = self.flows[flow as usize].transport.as_mut() else { return };
        if t.done || gen != t.timer_gen[side as usize] {
            return;
        }
        t.timer_at[side as usize] = None;
        if t.same_instant_wakeups.0 == now {
            t.same_instant_wakeups.1 += 1;
        } else {
            t.same_instant_wakeups = (now, 1);
        }
        if t.same_instant_wakeups.1 > MAX_WAKEUPS_AT_ONE_INSTANT {
            t.error.get_or_insert_with(|| {
                format!(
                    "{} woken {MAX_WAKEUPS_AT_ONE_INSTANT} times at {now} without its deadline advancing",
                    side.name()
                )
            });
            t.done = true;
            return;
        }
        t.engine(side).handle_timeout(now);
        self.drive(now, flow, side);
    }

    /// Steps 2–4 of the engine calling order (meshbed_proto::engine) for one
    /// side of a flow, after its input or timeout: transmit until nothing is
    /// left, collect events, hand up received bytes, re-arm the timer.
    fn drive(&mut self, now: Instant, flow: u32, side: Side) {
        let spec = &self.flows[flow as usize].spec;
        let (node, peer) = match side {
            Side::Sender => (spec.src, spec.dst),
            Side::Receiver => (spec.dst, spec.src),
        };
        let mut buf = std::mem::take(&mut self.tx_buf);
        loop {
            let t = self.flows[flow as usize].transport.as_mut().expect("a transport flow");
            let Some(tx) = t.engine(side).poll_transmit(now, &mut buf) else { break };
            let seq = t.next_seq[side as usize];
            t.next_seq[side as usize] += 1;
            let mut datagram = buf[..tx.len].to_vec();
            // The source stamps too, so that N_h counts every hop and a
            // one-hop path carries the first hop's delay (meshbed_proto::relay).
            self.stamp(now, node, flow, &mut datagram);
            let pkt = Packet {
                src: node,
                dst: peer,
                flow,
                seq,
                size_bytes: datagram_packet_bytes(datagram.len()),
                created_at: now,
                ttl: 64,
                datagram,
            };
            let _ = self.route_out(now, node, pkt);
        }
        self.tx_buf = buf;

        let t = self.flows[flow as usize].transport.as_mut().expect("a transport flow");
        while let Some(event) = t.engine(side).poll_event() {
            match event {
                EngineEvent::Finished => {
                    let at = match side {
                        Side::Sender => &mut t.sender_finished_at,
                        Side::Receiver => &mut t.receiver_finished_at,
                    };
                    at.get_or_insert(now);
                }
                EngineEvent::Failed(reason) => {
                    t.error.get_or_insert_with(|| format!("{} failed at {now}: {reason}", side.name()));
                }
                EngineEvent::Trace(sample) => {
                    if t.keep_trace {
                        t.trace.push(transport::TraceRecord::new(side, &sample));
                    }
                }
                EngineEvent::Connected => {}
            }
        }
        if side == Side::Receiver {
            t.take_delivered(now);
        }
        // A flow is complete only when the sender has every byte
        // acknowledged and the receiver handed up exactly the data sent; the
        // receiver's linger is not waited for.
        if let Some(at) = t.mismatch_at {
            t.error.get_or_insert_with(|| format!("delivered byte {at} differs from the data sent"));
        } else if t.bytes_delivered > t.bytes {
            t.error
                .get_or_insert_with(|| format!("{} bytes delivered of a {}-byte transfer", t.bytes_delivered, t.bytes));
        } else if t.sender_finished_at.is_some() && t.error.is_none() {
            if t.bytes_delivered == t.bytes {
                t.completed_at = Some(now);
            } else {
                t.error = Some(format!(
                    "sender finished at {now} but the receiver delivered {} of {} bytes",
                    t.bytes_delivered, t.bytes
                ));
            }
        }
        if t.completed_at.is_some() || t.error.is_some() {
            t.done = true;
            // Invalidate both sides' pending timers: nothing more is driven.
            t.timer_gen[0] += 1;
            t.timer_gen[1] += 1;
            t.timer_at = [None; 2];
            return;
        }
        self.rearm(now, flow, side);
    }

    /// Schedules one side's timer at its engine's next deadline, unless it is
    /// already scheduled there.
    fn rearm(&mut self, now: Instant, flow: u32, side: Side) {
        let t = self.flows[flow as usize].transport.as_mut().expect("a transport flow");
        let want = t.engine(side).poll_timeout();
        let i = side as usize;
        if want == t.timer_at[i] {
            return;
        }
        t.timer_gen[i] += 1;
        t.timer_at[i] = want;
        if let Some(at) = want {
            // Time never goes backwards, even for a deadline already past.
            self.queue.schedule(at.max(now), SimEvent::Transport { flow, side, gen: t.timer_gen[i] });
        }
    }

    fn flow_result(&self, flow: u32, f: &FlowState) -> FlowResult {
        let mean_delay_s = if f.rx_packets > 0 { (f.delay_sum_ns / f.rx_packets as u128) as f64 / 1e9 } else { 0.0 };
        let mut r = FlowResult {
            flow,
            src: f.spec.src,
            dst: f.spec.dst,
            hops: self.routes.hop_count(f.spec.src, f.spec.dst),
            protocol: "udp".to_string(),
            traffic: Some(f.spec.traffic),
            sent_packets: f.sent_packets,
            received_packets: f.rx_packets,
            received_payload_bytes: f.rx_payload_bytes,
            goodput_bps: 0.0,
            mean_delay_s,
            out_of_order: f.out_of_order,
            transfer_bytes: None,
            bytes_delivered: f.rx_payload_bytes,
            completed: false,
            verified: false,
            failed: false,
            completion_time_s: None,
            duration_s: f.stop.saturating_since(f.start).as_secs_f64(),
            retransmissions: 0,
            feedback_packets: 0,
            error: None,
            path: None,
            trace: Vec::new(),
        };
        if let Some(t) = &f.transport {
            let sender = t.sender_stats();
            r.protocol = t.protocol.name().to_string();
            r.traffic = None;
            r.sent_packets = sender.datagrams_sent;
            r.received_payload_bytes = t.bytes_delivered;
            r.transfer_bytes = f.spec.bytes;
            r.bytes_delivered = t.bytes_delivered;
            r.completed = t.completed_at.is_some();
            r.verified = t.verified();
            r.failed = t.error.is_some() || !r.verified;
            r.completion_time_s = t.completed_at.map(|at| at.as_secs_f64());
            // Start to the sender's Finished; an incomplete flow is charged
            // the whole run from its start.
            r.duration_s = t.completed_at.unwrap_or(self.end).saturating_since(f.start).as_secs_f64();
            r.retransmissions = sender.retransmissions;
            r.feedback_packets = t.receiver_stats().feedback_packets;
            r.error = match (&t.error, t.completed_at) {
                (Some(e), _) => Some(e.clone()),
                (None, None) => {
                    Some(format!("incomplete: {} of {} bytes delivered when the run ended", t.bytes_delivered, t.bytes))
                }
                (None, Some(_)) => None,
            };
            r.path = (t.path.datagrams > 0).then(|| t.path.clone());
            r.trace = t.trace.clone();
        }
        if r.duration_s > 0.0 {
            r.goodput_bps = r.bytes_delivered as f64 * 8.0 / r.duration_s;
        }
        r
    }

    fn report(&self) -> SimReport {
        let flows = self.flows.iter().enumerate().map(|(i, f)| self.flow_result(i as u32, f)).collect();
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

/// The service time of one full-size data frame on an idle channel at
/// `node`'s rate: DIFS + CWmin/2 slots + DATA + SIFS + ACK. A node's relay
/// assumes this delay before its first tx report (RelayConfig::prior_delay),
/// so that a fresh path does not start ATP at its rate cap.
fn one_frame_service_time<P: Payload>(
    medium: &Medium<P>,
    radio: &Resolved,
    node: NodeId,
    packet_bytes: u32,
) -> Duration {
    let standard = medium.standard();
    let timing = medium.timing();
    let rate = medium.data_rate_kbps(node);
    let ack_rate = phy::control_rate_kbps(&radio.basic_rates_kbps, rate);
    let mean_backoff = Duration::from_nanos(timing.slot.as_nanos() * radio.cw_min as u64 / 2);
    timing.difs()
        + mean_backoff
        + standard.frame_duration(packet_bytes + phy::DATA_OVERHEAD_BYTES, rate)
        + timing.sifs
        + standard.frame_duration(phy::ACK_BYTES, ack_rate)
}

/// Runs a scenario to completion.
pub fn run(scenario: &Scenario) -> Result<SimReport, ScenarioError> {
    Ok(Sim::new(scenario)?.run())
}

/// Runs a scenario to completion, reporting its simulated time as it goes
/// (see [`Sim::run_with_progress`]).
pub fn run_with_progress(scenario: &Scenario, progress: &mut dyn FnMut(Instant)) -> Result<SimReport, ScenarioError> {
    Ok(Sim::new(scenario)?.run_with_progress(progress))
}

/// Checks what [`Sim::new`] checks beyond [`Scenario::validate`]: that the
/// routes carry every flow. Costs one radio model and route table, not a run.
pub fn check_routes(scenario: &Scenario) -> Result<(), ScenarioError> {
    build_network(scenario).map(|_| ())
}

/// The radio model and the routes of a valid scenario, with every flow
/// routable: a scenario that cannot carry a flow is refused here rather than
/// reported as a flow with zero goodput.
fn build_network(scenario: &Scenario) -> Result<(Medium<Packet>, RouteTable), ScenarioError> {
    scenario.validate()?;
    let radios = scenario.node_radios();
    let invalid = |key: String, value: String, expected: String| ScenarioError::Invalid {
        file: String::new(),
        key,
        value,
        expected,
    };
    let medium = Medium::new(&scenario.radio, &radios, scenario.seed)
        .map_err(|e| invalid(format!("radio.{}", e.key), e.value, e.expected))?;
    let distance = |a: NodeId, b: NodeId| {
        let (a, b) = (&radios[a as usize], &radios[b as usize]);
        libm::hypot(a.x_m - b.x_m, a.y_m - b.y_m)
    };
    if let scenario::Routing::Static { paths } = &scenario.routing {
        for (p, path) in paths.iter().enumerate() {
            for hop in path.windows(2) {
                let (a, b) = (hop[0], hop[1]);
                if !(medium.can_decode(a, b) && medium.can_decode(b, a)) {
                    return Err(invalid(
                        format!("routing.paths[{p}]"),
                        format!("{path:?}"),
                        format!(
                            "consecutive nodes that decode each other's frames: nodes {a} and {b} are {:.0} m apart, out of range",
                            distance(a, b)
                        ),
                    ));
                }
            }
        }
    }
    let routes = RouteTable::build(&scenario.routing, &medium);
    // Shadowing draws each link's loss from the seed: another seed may connect.
    let shadowed = if scenario.radio.shadowing_sigma_db > 0.0 {
        format!(
            "; with radio.shadowing_sigma_db = {} the links depend on the seed, here {}",
            scenario.radio.shadowing_sigma_db, scenario.seed
        )
    } else {
        String::new()
    };
    for (i, f) in scenario.flows.iter().enumerate() {
        // Transport flows need the way back too, for feedback and ACKs.
        let ends = if f.protocol.is_some() { vec![(f.src, f.dst), (f.dst, f.src)] } else { vec![(f.src, f.dst)] };
        for (from, to) in ends {
            if routes.hop_count(from, to).is_some() {
                continue;
            }
            let reached: Vec<String> = (0..medium.node_count() as NodeId)
                .filter(|&d| d != from && routes.hop_count(from, d).is_some())
                .map(|d| d.to_string())
                .collect();
            let reached = match reached.len() {
                0 => "no other node".to_string(),
                1..=8 => format!("only node(s) {}", reached.join(", ")),
                k => format!("only {k} nodes"),
            };
            let (end, value) = if to == f.dst { ("dst", to) } else { ("src", to) };
            return Err(invalid(
                format!("flows[{i}].{end}"),
                value.to_string(),
                format!(
                    "a node with a route from node {from} ({} m away): the routes reach {reached} ({})",
                    distance(from, to).round(),
                    match scenario.routing {
                        scenario::Routing::ShortestPath =>
                            "shortest-path routing uses links whose ends decode each other",
                        scenario::Routing::Static { .. } => "routing.paths install the only routes",
                    }
                ) + &shadowed,
            ));
        }
    }
    Ok((medium, routes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use scenario::{Routing, Topology};

    fn error_of(s: &Scenario) -> String {
        Sim::new(s).err().expect("refused").to_string()
    }

    #[test]
    fn a_flow_without_a_route_is_refused_naming_the_flow_and_the_nodes() {
        // 5000 m apart: no node hears another.
        let far = Scenario::chain(4, 5000.0, 1.0);
        let e = error_of(&far);
        assert!(e.starts_with("flows[0].dst = 4: expected a node with a route from node 0"), "{e}");
        assert!(e.contains("20000 m away") && e.contains("no other node"), "{e}");
        assert!(check_routes(&far).is_err());
        // In range, the same chain runs.
        assert!(check_routes(&Scenario::chain(4, 200.0, 1.0)).is_ok());

        // A static path through nodes out of range of each other.
        let mut s = Scenario::chain(2, 200.0, 1.0);
        s.topology = Topology::Explicit {
            nodes: [(0.0, 0.0), (200.0, 0.0), (5200.0, 0.0)]
                .map(|(x_m, y_m)| scenario::NodeSpec { x_m, y_m, tx_power_dbm: None, data_rate_kbps: None })
                .to_vec(),
        };
        s.routing = Routing::Static { paths: vec![vec![0, 1, 2]] };
        let e = error_of(&s);
        assert!(e.starts_with("routing.paths[0] = [0, 1, 2]: expected"), "{e}");
        assert!(e.contains("nodes 1 and 2 are 5000 m apart"), "{e}");

        // A static path that does not cover a flow.
        let mut s = Scenario::chain(2, 200.0, 1.0);
        s.routing = Routing::Static { paths: vec![vec![0, 1]] };
        let e = error_of(&s);
        assert!(e.starts_with("flows[0].dst = 2") && e.contains("only node(s) 1"), "{e}");
    }

    #[test]
    fn progress_reports_simulated_time_forward_and_changes_nothing() {
        let s = Scenario::chain(2, 200.0, 30.0);
        let mut seen = Vec::new();
        let with = run_with_progress(&s, &mut |t| seen.push(t)).unwrap();
        let without = run(&s).unwrap();
        assert_eq!(with.trace_hash, without.trace_hash);
        assert_eq!(seen.len() as u64, with.events / PROGRESS_EVERY_EVENTS);
        assert!(!seen.is_empty(), "{} events", with.events);
        assert!(seen.windows(2).all(|w| w[0] <= w[1]));
        assert!(*seen.last().unwrap() <= Instant::ZERO + Duration::from_secs_f64(30.0));
    }
}
