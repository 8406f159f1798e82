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

pub mod backend;
pub mod capture;
pub mod driver;
pub mod dynamic;
pub mod echo;
mod forward;
pub mod mobility;
pub mod net_stats;
mod network;
mod packet;
pub mod record;
pub mod report;
pub mod routing;
pub mod scenario;
mod timers;
pub mod trace_kind;
pub mod transport;
pub mod udp;

use backend::ScenarioBackend;
use driver::{Clock, Driver, Host, Network, RelayClass, VirtualClock};
use forward::{is_feedback, route_out, stamp, HeldForwards};
use meshbed_core::{Duration, Instant};
use meshbed_radio::{DropCause, Indication, Medium, NodeId};
pub use net_stats::{DataPathCounting, Discoveries, Drops, FlowNet, NetCounters};
use net_stats::{Loss, NetStats};
pub use network::{build_network, check_routes};
pub use packet::Packet;
use report::Arrivals;
pub use report::{FlowResult, SimReport};
use routing::RouteTable;
pub use scenario::{Scenario, ScenarioError, Traffic};
use std::io;
use timers::schedule_timer;
pub use trace_kind::{RouteLogEvent, RouteLogSide, TraceKind};
use transport::{Side, Timer, Transport};
use udp::UdpSource;

pub use driver::PROGRESS_EVERY_EVENTS;

/// The simulator's own events, queued with the radio model's by the driver.
#[derive(Copy, Clone, Debug)]
pub(crate) enum SimEvent {
    /// A CBR source emits its next packet.
    CbrTick { flow: u32 },
    /// A saturated source starts (fills its queue).
    SaturatedStart { flow: u32 },
    /// An echo source's start or request timeout: it gives an unanswered
    /// request up if its time has come and sends the next if none is
    /// outstanding (a wake-up for a request answered since does nothing).
    Echo { flow: u32 },
    /// A transport engine's timer (`gen` tells a current timer from one
    /// that was moved since: stale ones are skipped).
    Transport { flow: u32, side: Side, gen: u64 },
    /// A transport flow that runs for a duration reaches its stop time.
    TransportStop { flow: u32 },
    /// A routing engine's timer (`gen`: stale ones are skipped).
    RoutingTimer { node: NodeId, gen: u64 },
    /// A relay hands on a packet it held for its flow's
    /// `relay_forwarding_delay_s`, or a destination one it held for
    /// `endpoint_delay_s` (`slot` in [`World::held`]).
    Forward { slot: u32 },
}

/// One flow: its spec, what arrived at its destination, and its source (a
/// UDP source or a transport's engines).
pub(crate) struct Flow {
    pub spec: scenario::FlowSpec,
    pub start: Instant,
    pub stop: Instant,
    pub arrivals: Arrivals,
    pub kind: FlowKind,
    /// An echo flow's RTT samples (`rtt_s`), kept with `trace = true`.
    pub echo_trace: Vec<transport::TraceRecord>,
    /// A transport flow with `batch_packets`: when each batch was delivered.
    pub milestones: Option<report::DeliveryMilestones>,
    /// What it delivered per bin, while the run is recorded ([`record`]).
    pub delivery: Option<record::Delivery>,
}

pub(crate) enum FlowKind {
    Udp(UdpSource),
    Echo(echo::Pinger),
    Transport(Box<Transport>),
}

impl Flow {
    /// Batch boundaries the transport's delivered data crossed by `now`
    /// (and the delivery, while the run is recorded).
    fn record_milestones(&mut self, now: Instant, delivered_bytes: u64) {
        if let Some(m) = &mut self.milestones {
            m.record(now, delivered_bytes);
        }
        if let Some(d) = &mut self.delivery {
            d.record_total(now, delivered_bytes);
        }
    }

    /// A UDP (or echo request) packet reached the sink at `now`.
    fn udp_arrived(&mut self, now: Instant, pkt: &Packet) {
        self.arrivals.record_udp(now, pkt);
        if let Some(d) = &mut self.delivery {
            d.record_total(now, self.arrivals.udp_payload_bytes);
        }
    }

    fn transport_mut(&mut self) -> Option<&mut Transport> {
        match &mut self.kind {
            FlowKind::Transport(t) => Some(t),
            FlowKind::Udp(_) | FlowKind::Echo(_) => None,
        }
    }
}

/// How packets find their next hop: the static table, or routing engines.
pub(crate) struct Router {
    /// Next hops computed once at time zero (static and shortest-path
    /// routing; with engines, only what the report calls a flow's hops).
    pub table: RouteTable,
    pub dynamic: Option<dynamic::Dynamic>,
}

/// The simulated world around the medium: routes, flows, the network layer.
struct World {
    router: Router,
    flows: Vec<Flow>,
    saturated: udp::SaturatedSources,
    net: NetStats,
    /// Each node's PHY data rate, bit/s: the interface bandwidth that path
    /// information carries (seed 004 eqs. 7–8).
    node_rate_bps: Vec<u64>,
    /// Packets relays hold for their flow's forwarding delay, by slot.
    held: HeldForwards,
    /// The flows whose engines read path information (MTL), found once:
    /// the others ignore it, and asking each flow after every route change
    /// was over a tenth of an OLSR run, then 1.3% as a test of each flow's
    /// protocol (issue 28).
    path_info_flows: Vec<u32>,
}

type Net = Network<Packet, SimEvent>;

/// One simulation run.
pub struct Sim {
    scenario: Scenario,
    driver: Driver<Packet, SimEvent>,
    world: World,
    end: Instant,
}

impl Sim {
    /// Builds a run: validates the scenario, refuses what the simulator
    /// cannot run ([`backend::Simulator`]: kernel TCP flows), builds the
    /// radio model and the routes, and refuses flows the routes cannot carry.
    pub fn new(scenario: &Scenario) -> Result<Sim, ScenarioError> {
        // Before the random flows are drawn, so that a drawn flow is named
        // by its template's key (`random_flows.flow.protocol`).
        backend::Simulator.supports(scenario)?;
        let scenario = &*scenario.with_random_flows_drawn()?;
        let seed = scenario.seed;
        if scenario.routing.is_dynamic() {
            let routing = &scenario.routing;
            return Sim::with_routing(scenario, &|node| {
                routing.engine(node, seed).expect("dynamic routing has engines")
            });
        }
        let (medium, routes) = build_network(scenario, true)?;
        Sim::build(scenario, medium, routes, None)
    }

    /// A run whose nodes route with engines from `make(node)` (one per
    /// node) instead of the scenario's static routes. Flows are not refused
    /// for want of a route at time zero: finding one is the engines' job.
    pub fn with_routing(
        scenario: &Scenario,
        make: &dyn Fn(NodeId) -> Box<dyn meshbed_routing::RoutingEngine>,
    ) -> Result<Sim, ScenarioError> {
        backend::Simulator.supports(scenario)?;
        let scenario = &*scenario.with_random_flows_drawn()?;
        let (medium, routes) = build_network(scenario, false)?;
        let engines = (0..medium.node_count() as NodeId).map(make).collect();
        let mut dynamic = dynamic::Dynamic::new(engines);
        // Engines given by the caller with a static kind still get ns-2's
        // priority queue for their control packets.
        dynamic.control_priority = scenario.routing.control_priority() || !scenario.routing.is_dynamic();
        Sim::build(scenario, medium, routes, Some(dynamic))
    }

    fn build(
        scenario: &Scenario,
        medium: Medium<Packet>,
        routes: RouteTable,
        dynamic: Option<dynamic::Dynamic>,
    ) -> Result<Sim, ScenarioError> {
        let end = Instant::ZERO + Duration::from_secs_f64(scenario.duration_s);
        let n = medium.node_count();
        let mut flows = Vec::new();
        let mut relay_classes: Vec<RelayClass> = Vec::new();
        for (i, f) in scenario.flows.iter().enumerate() {
            let start = Instant::ZERO + Duration::from_secs_f64(f.start_s);
            let stop = f.stop_s().map_or(end, |s| Instant::ZERO + Duration::from_secs_f64(s)).min(end);
            let kind = match &f.kind {
                scenario::FlowKind::Transport(flow) => {
                    let bytes = scenario.sender_data_bytes(i);
                    let mut t = Transport::new(scenario.seed, i as u32, flow, start, bytes);
                    let class = Transport::relay_class_of(flow);
                    t.relay_class = relay_classes.iter().position(|c| *c == class).unwrap_or_else(|| {
                        relay_classes.push(class);
                        relay_classes.len() - 1
                    });
                    FlowKind::Transport(Box::new(t))
                }
                scenario::FlowKind::Echo(e) => {
                    let timeout_s = e.timeout_s.unwrap_or(scenario::DEFAULT_ECHO_TIMEOUT_S);
                    FlowKind::Echo(echo::Pinger::new(Duration::from_secs_f64(timeout_s)))
                }
                scenario::FlowKind::Udp(u) => FlowKind::Udp(UdpSource::new(u)),
                // Refused by `Sim::new` and `Sim::with_routing` before this;
                // refused the same way here rather than assumed away.
                scenario::FlowKind::KernelTcp(_) => {
                    let mut refusal = backend::Refusal::new(backend::Simulator.name());
                    backend::refuse_kernel_tcp(&mut refusal, &format!("flows[{i}]"));
                    return Err(refusal.into());
                }
            };
            flows.push(Flow {
                spec: f.clone(),
                start,
                stop,
                arrivals: Arrivals::default(),
                kind,
                echo_trace: Vec::new(),
                milestones: f.batch_bytes().and_then(report::DeliveryMilestones::new),
                delivery: None,
            });
        }
        let mut net = Network::new(medium, &relay_classes);
        let mut saturated = udp::SaturatedSources::new(n);
        // The order in which the first events are queued is part of the run.
        for (i, f) in flows.iter_mut().enumerate() {
            let flow = i as u32;
            match &mut f.kind {
                FlowKind::Transport(t) => {
                    if f.spec.stop_s().is_some() {
                        t.stop_at = Some(f.stop);
                        net.schedule(f.stop, SimEvent::TransportStop { flow });
                    }
                    schedule_timer(&mut net, f.start, flow, Some(t.start(f.start)));
                }
                FlowKind::Echo(_) => net.schedule(f.start, SimEvent::Echo { flow }),
                FlowKind::Udp(_) => match &f.spec.kind {
                    scenario::FlowKind::Udp(u) => match u.rate {
                        scenario::UdpRate::Cbr { .. } => net.schedule(f.start, SimEvent::CbrTick { flow }),
                        scenario::UdpRate::Saturated => {
                            saturated.add(f.spec.src, flow);
                            net.schedule(f.start, SimEvent::SaturatedStart { flow });
                        }
                    },
                    _ => unreachable!("a UDP source is built from a UDP flow"),
                },
            }
        }
        for (i, f) in flows.iter_mut().enumerate() {
            let start = f.start;
            if let Some(t) = f.transport_mut() {
                schedule_timer(&mut net, start, i as u32, t.rearm(Side::Receiver));
            }
        }
        let path_info_flows = (0..flows.len() as u32)
            .filter(|&i| flows[i as usize].spec.protocol().is_some_and(scenario::needs_path_info))
            .collect();
        let mut world = World {
            router: Router { table: routes, dynamic },
            flows,
            saturated,
            net: NetStats::new(n, scenario.flows.len()),
            node_rate_bps: (0..n as NodeId).map(|node| u64::from(scenario.data_rate_kbps(node)) * 1000).collect(),
            held: HeldForwards::default(),
            path_info_flows,
        };
        if let Some(d) = &mut world.router.dynamic {
            d.start(&mut net, &mut world.net, Instant::ZERO);
        }
        Ok(Sim { scenario: scenario.clone(), driver: Driver::new(net), world, end })
    }

    pub fn medium(&self) -> &Medium<Packet> {
        self.driver.net.medium()
    }
    pub fn routes(&self) -> &RouteTable {
        &self.world.router.table
    }

    /// Runs to the scenario's end and reports.
    pub fn run(self) -> SimReport {
        self.run_with_progress(&mut |_| {})
    }

    /// Runs to the scenario's end, telling `progress` the simulated time
    /// every [`PROGRESS_EVERY_EVENTS`] events (for a progress bar on long
    /// runs; it cannot change the run).
    pub fn run_with_progress(mut self, progress: &mut dyn FnMut(Instant)) -> SimReport {
        self.run_to_end(progress)
    }

    fn run_to_end(&mut self, progress: &mut dyn FnMut(Instant)) -> SimReport {
        let mut host = SimHost { world: &mut self.world, clock: VirtualClock::default(), progress, air: None };
        self.driver
            .run(&mut host, Some(self.end))
            .expect("the simulator's clock and hosts cannot fail: they do no I/O and the run has an end");
        report::assemble(&self.scenario, &self.world, &self.driver, self.end)
    }

    /// Runs like [`Sim::run_with_progress`] with the recorder on
    /// ([`record`]): the report is the one the run gives unrecorded (the
    /// same events in the same order), and beside it the flows' paths and
    /// deliveries over time, and the nodes' positions and links in range.
    pub fn run_recorded(mut self, progress: &mut dyn FnMut(Instant)) -> (SimReport, record::Recording) {
        record::start(&mut self.world, self.scenario.duration_s);
        let report = self.run_to_end(progress);
        let links = self.driver.net.medium().links();
        (report, record::finish(&mut self.world, links, &self.scenario.node_radios(), self.scenario.duration_s))
    }

    /// How this run's packets look in a capture (routing control packets on
    /// their protocol's UDP port, or DSR's IP protocol).
    pub fn capture_encoder(&self) -> capture::SimEncoder {
        let control = match self.scenario.routing {
            scenario::Routing::Dsr { .. } => capture::ControlCarrier::Dsr,
            scenario::Routing::Olsr { .. } => capture::ControlCarrier::Udp(capture::OLSR_UDP_PORT),
            _ => capture::ControlCarrier::Udp(capture::AODV_UDP_PORT),
        };
        capture::SimEncoder { control }
    }

    /// Runs like [`Sim::run_with_progress`] and hands every frame sent and
    /// heard to `air` (a capture). The run is the same as without: the
    /// observation draws nothing and schedules nothing. An error from
    /// `air` ends the run.
    pub fn run_observed(
        mut self,
        progress: &mut dyn FnMut(Instant),
        air: &mut dyn capture::AirObserver<Packet>,
    ) -> io::Result<SimReport> {
        self.driver.net.set_observing(true);
        let mut host = SimHost { world: &mut self.world, clock: VirtualClock::default(), progress, air: Some(air) };
        self.driver.run(&mut host, Some(self.end))?;
        Ok(report::assemble(&self.scenario, &self.world, &self.driver, self.end))
    }

    /// Runs and writes one pcap per node into `dir` (`n<i>.pcap`, created
    /// with its parents), as [`capture`] describes.
    pub fn run_with_pcap_dir(
        self,
        dir: &std::path::Path,
        progress: &mut dyn FnMut(Instant),
    ) -> io::Result<(SimReport, capture::CaptureCounts)> {
        let files = capture::create_files(dir, self.medium().node_count())?;
        let mut cap = capture::Capture::new(files, self.capture_encoder(), 0, self.medium().standard())?;
        let report = self.run_observed(progress, &mut cap)?;
        cap.flush()?;
        Ok((report, cap.counts().clone()))
    }
}

/// How long a saturated source whose packet routing held or dropped waits
/// before it offers another (only with routing engines: a static route
/// never appears).
const SATURATED_RETRY: Duration = Duration::from_millis(100);

/// What became of a packet handed to the network layer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Routed {
    /// In the MAC's queue towards its next hop.
    Queued,
    /// Held by routing while it discovers a route.
    Held,
    /// Lost (no route, TTL, a full queue; counted by cause).
    Dropped,
}

/// The world as the driver's host, with the caller's progress callback.
struct SimHost<'a> {
    world: &'a mut World,
    clock: VirtualClock,
    progress: &'a mut dyn FnMut(Instant),
    /// Where frames sent and heard go, when the run is observed.
    air: Option<&'a mut dyn capture::AirObserver<Packet>>,
}

impl Clock for SimHost<'_> {
    const VIRTUAL: bool = true;
    fn now(&mut self) -> Instant {
        self.clock.now()
    }
    fn wait(&mut self, deadline: Option<Instant>) -> io::Result<()> {
        self.clock.wait(deadline)
    }
}

impl Host<Packet> for SimHost<'_> {
    type Event = SimEvent;
    const TAKES_INPUT: bool = false;

    fn trace_code(event: &SimEvent) -> u64 {
        match *event {
            SimEvent::CbrTick { flow } => 100 << 32 | flow as u64,
            SimEvent::SaturatedStart { flow } => 101 << 32 | flow as u64,
            SimEvent::Transport { flow, side, .. } => 102 << 32 | (flow as u64) << 1 | side as u64,
            SimEvent::TransportStop { flow } => 103 << 32 | flow as u64,
            SimEvent::RoutingTimer { node, .. } => 104 << 32 | node as u64,
            SimEvent::Echo { flow } => 105 << 32 | flow as u64,
            SimEvent::Forward { slot } => 106 << 32 | slot as u64,
        }
    }

    fn on_event(&mut self, net: &mut Net, now: Instant, event: SimEvent) -> io::Result<()> {
        let w = &mut *self.world;
        match event {
            SimEvent::CbrTick { flow } => {
                let f = &w.flows[flow as usize];
                if now < f.stop {
                    let FlowKind::Udp(src) = &f.kind else { unreachable!("a CBR tick of a transport flow") };
                    let next = now + src.interval;
                    w.originate(net, now, flow);
                    net.schedule(next, SimEvent::CbrTick { flow });
                }
            }
            SimEvent::SaturatedStart { flow } => {
                let src = w.flows[flow as usize].spec.src;
                // Fill the queue; stop when a packet does not reach it (no
                // route, or held while routing discovers one: the queue
                // would never fill), or this would never end. Released
                // packets leave through the MAC, whose `Dequeued` refills.
                while net.medium().queue_len(src) < net.medium().queue_capacity() {
                    if w.originate(net, now, flow) != Routed::Queued {
                        // With routing engines a route may come (or come
                        // back) later: offer another packet in a while.
                        if w.router.dynamic.is_some() && now + SATURATED_RETRY < w.flows[flow as usize].stop {
                            net.schedule(now + SATURATED_RETRY, SimEvent::SaturatedStart { flow });
                        }
                        break;
                    }
                }
            }
            SimEvent::Transport { flow, side, gen } => {
                w.drive_transport(net, now, flow, side, |t, send| t.on_timeout(now, side, gen, send));
            }
            SimEvent::Echo { flow } => {
                if let FlowKind::Echo(p) = &mut w.flows[flow as usize].kind {
                    p.handle_timeout(now);
                }
                w.ping(net, now, flow);
            }
            SimEvent::TransportStop { flow } => {
                let f = &mut w.flows[flow as usize];
                if let Some(t) = f.transport_mut() {
                    t.on_stop(now);
                    let delivered = t.bytes_delivered;
                    f.record_milestones(now, delivered);
                }
            }
            SimEvent::RoutingTimer { node, gen } => {
                if let Some(d) = &mut w.router.dynamic {
                    d.timer(net, &mut w.net, now, node, gen);
                }
            }
            SimEvent::Forward { slot } => {
                if let Some((node, pkt)) = w.held.take(slot) {
                    w.hand_on(net, now, node, pkt);
                }
            }
        }
        w.notify_route_events(now);
        w.update_path_info(net, now);
        Ok(())
    }

    fn on_air(&mut self, event: meshbed_radio::AirEvent<Packet>) -> io::Result<()> {
        match &mut self.air {
            Some(air) => air.observe(&event),
            None => Ok(()),
        }
    }

    fn on_indication(&mut self, net: &mut Net, now: Instant, ind: Indication<Packet>) -> io::Result<()> {
        let w = &mut *self.world;
        match ind {
            Indication::Deliver { node, from, mut payload, rx_power_mw } => {
                if let Some(d) = &mut w.router.dynamic {
                    d.heard(now, node, from, rx_power_mw);
                    if payload.control {
                        let frame = dynamic::Heard { node, from, rx_power_mw, bytes: &payload.datagram };
                        d.control(net, &mut w.net, now, frame);
                        w.update_path_info(net, now);
                        return Ok(());
                    }
                    payload.prev_hop = Some(from);
                }
                let at_dst = payload.dst == node;
                if !at_dst {
                    w.net.nodes[node as usize].forwarded += 1;
                    payload.path = payload.path.step(node);
                }
                // A relay's hold (`relay_forwarding_delay_s`) or the
                // destination's (`[flows.tcp] endpoint_delay_s`).
                let hold = match w.flows[payload.flow as usize].transport_mut() {
                    Some(t) if !payload.datagram.is_empty() => {
                        if at_dst {
                            t.endpoint_delay
                        } else {
                            t.relay_forwarding_delay
                        }
                    }
                    _ => Duration::ZERO,
                };
                if hold.is_zero() {
                    w.hand_on(net, now, node, payload);
                } else {
                    let slot = w.held.hold(node, payload);
                    net.schedule(now + hold, SimEvent::Forward { slot });
                }
            }
            Indication::Dequeued { node } => {
                // A saturated source tops its queue up whenever the MAC takes a packet.
                if let Some(flow) = w.saturated.next_to_refill(node, net.medium(), &w.flows, now) {
                    let _ = w.originate(net, now, flow);
                }
            }
            Indication::Drop { node, payload, cause: DropCause::RetryLimit } => match &mut w.router.dynamic {
                Some(d) => d.link_failed(net, &mut w.net, now, node, payload),
                None => w.net.lost(node, &payload, Loss::RetryLimit),
            },
            Indication::Drop { node, payload, cause: DropCause::QueueOverflow } => {
                w.net.lost(node, &payload, Loss::QueueOverflow)
            }
            Indication::TxReport(_) => unreachable!("the driver feeds tx reports to the relays"),
        }
        w.notify_route_events(now);
        w.update_path_info(net, now);
        Ok(())
    }

    fn progress(&mut self, now: Instant) {
        (self.progress)(now)
    }
}

impl World {
    /// A relay stamps a transport datagram it forwards (seed 002 §4.1) and
    /// queues it towards its next hop.
    fn forward(&mut self, net: &mut Net, now: Instant, node: NodeId, mut pkt: Packet) {
        if !pkt.datagram.is_empty() {
            if let Some(t) = self.flows[pkt.flow as usize].transport_mut() {
                if let Err(e) = pkt.stamp_datagram(|datagram| stamp(net, now, node, t.relay_class, datagram)) {
                    t.error.get_or_insert(e);
                }
            }
        }
        let _ = route_out(net, &mut self.router, &mut self.net, now, node, pkt);
    }

    /// Turns the routing engines' new route events into notices to the
    /// transport flows they concern (ELFN): a route lost or found at a
    /// flow's end towards its peer.
    fn notify_route_events(&mut self, now: Instant) {
        let Some(d) = &mut self.router.dynamic else { return };
        // Taken, not kept: a long run's events would otherwise pile up.
        for (_, node, ev) in d.events.drain(..) {
            let node = &node;
            let Some((dst, notice)) = dynamic::route_notice(&ev) else { continue };
            let up = notice == meshbed_proto::RouteNotice::Reestablished;
            for f in &mut self.flows {
                let (src, fdst) = (f.spec.src, f.spec.dst);
                if src == *node && fdst == dst && !up {
                    // Seed 002 Fig. 4(b): is the next route the old one?
                    f.arrivals.route_failed();
                }
                let Some(t) = f.transport_mut() else { continue };
                if src == *node && fdst == dst {
                    t.route_notice(now, Side::Sender, up);
                } else if fdst == *node && src == dst {
                    t.route_notice(now, Side::Receiver, up);
                }
            }
        }
    }

    /// Hands each started transport flow's ends what routing at their node
    /// now knows of the path to the peer (MTL's cross-layer input, seed 004
    /// §III.B), when any routing engine may have changed its view: after
    /// every control packet heard, routing timer, link failure or route
    /// event. With OLSR-ETX that is at least once per probe interval (1 s)
    /// while the node has neighbours. Each end gets only changes; the
    /// interface bandwidth is its own node's data rate. Inline, one test
    /// when no flow reads path information; the work out of line.
    #[inline]
    fn update_path_info(&mut self, net: &mut Net, now: Instant) {
        if !self.path_info_flows.is_empty() {
            self.tell_path_info(net, now);
        }
    }

    #[inline(never)]
    fn tell_path_info(&mut self, net: &mut Net, now: Instant) {
        let Some(d) = &mut self.router.dynamic else { return };
        if !d.take_path_changed() {
            return;
        }
        for &i in &self.path_info_flows {
            let f = &mut self.flows[i as usize];
            let (src, dst, start) = (f.spec.src, f.spec.dst, f.start);
            let Some(t) = f.transport_mut() else { continue };
            if now < start {
                continue;
            }
            for (side, node, peer) in [(Side::Sender, src, dst), (Side::Receiver, dst, src)] {
                let info = d.path_info(node, peer).map(|q| dynamic::path_info(&q, self.node_rate_bps[node as usize]));
                schedule_timer(net, now, i, t.path_info(now, side, info));
            }
        }
    }

    /// Creates a packet of UDP `flow` at its source and hands it to the
    /// network layer.
    fn originate(&mut self, net: &mut Net, now: Instant, flow: u32) -> Routed {
        let f = &mut self.flows[flow as usize];
        let FlowKind::Udp(src) = &mut f.kind else { unreachable!("UDP traffic of a transport flow") };
        let pkt = src.next_packet(&f.spec, flow, now);
        route_out(net, &mut self.router, &mut self.net, now, f.spec.src, pkt)
    }

    /// Sends echo `flow`'s next request if none is outstanding and the flow
    /// has not stopped, and schedules the wake-up that gives it up.
    fn ping(&mut self, net: &mut Net, now: Instant, flow: u32) {
        let f = &mut self.flows[flow as usize];
        let FlowKind::Echo(p) = &mut f.kind else { unreachable!("an echo event of another flow") };
        if now >= f.stop {
            return;
        }
        let Some(seq) = p.poll_request(now) else { return };
        if let Some(at) = p.poll_timeout() {
            net.schedule(at, SimEvent::Echo { flow });
        }
        let pkt = Packet::data(f.spec.src, f.spec.dst, flow, seq, f.spec.packet_bytes(), now, Vec::new());
        let _ = route_out(net, &mut self.router, &mut self.net, now, f.spec.src, pkt);
    }

    /// An echo packet reached `node`: a request at the destination is
    /// counted and answered at once with a reply of its size (ICMP echo);
    /// a reply at the source is matched, and the next request leaves.
    fn echo_arrive(&mut self, net: &mut Net, now: Instant, node: NodeId, pkt: Packet) {
        let flow = pkt.flow;
        let f = &mut self.flows[flow as usize];
        let FlowKind::Echo(p) = &mut f.kind else { unreachable!("an echo packet of another flow") };
        if node == f.spec.dst {
            f.udp_arrived(now, &pkt);
            let reply = Packet::data(node, f.spec.src, flow, pkt.seq, pkt.size_bytes, now, Vec::new());
            let _ = route_out(net, &mut self.router, &mut self.net, now, node, reply);
            return;
        }
        if let Some(rtt) = p.on_reply(now, pkt.seq) {
            if f.spec.trace() {
                f.echo_trace.push(transport::TraceRecord {
                    t_s: now.as_secs_f64(),
                    side: Side::Sender,
                    kind: trace_kind::TraceKind::RttS,
                    value: rtt.as_secs_f64(),
                });
            }
            self.ping(net, now, flow);
        }
    }

    /// A packet reached its destination node: a UDP sink, an echo request
    /// or reply, or a transport datagram for the flow's source or destination.
    /// A packet `node` received (and held, if it was to be): up to its
    /// transport at its destination, else on towards it.
    fn hand_on(&mut self, net: &mut Net, now: Instant, node: NodeId, pkt: Packet) {
        if pkt.dst == node {
            self.arrive(net, now, node, pkt);
        } else {
            self.forward(net, now, node, pkt);
        }
    }

    fn arrive(&mut self, net: &mut Net, now: Instant, node: NodeId, pkt: Packet) {
        let f = &mut self.flows[pkt.flow as usize];
        if matches!(f.kind, FlowKind::Echo(_)) {
            return self.echo_arrive(net, now, node, pkt);
        }
        if pkt.datagram.is_empty() {
            f.udp_arrived(now, &pkt);
            return;
        }
        let side = if node == f.spec.dst { Side::Receiver } else { Side::Sender };
        if side == Side::Receiver {
            f.arrivals.record(now, &pkt);
            f.arrivals.symmetry.data(now, pkt.path.step(node));
        } else if is_feedback(&pkt.datagram) {
            f.arrivals.feedback.record(pkt.created_at, now);
            f.arrivals.symmetry.feedback(now, pkt.path.step(node));
        }
        let datagram = pkt.datagram;
        self.drive_transport(net, now, pkt.flow, side, |t, send| t.on_input(now, side, &datagram, send));
    }

    /// Runs one engine step of a transport flow (`step`: an input or a
    /// timeout, see [`transport`]), stamping and routing every datagram it
    /// sends from its node to the peer, and schedules its next timer.
    fn drive_transport(
        &mut self,
        net: &mut Net,
        now: Instant,
        flow: u32,
        side: Side,
        step: impl FnOnce(&mut Transport, &mut dyn FnMut(u64, Vec<u8>) -> Result<(), String>) -> Option<Timer>,
    ) {
        let World { router, flows, net: counters, .. } = self;
        let f = &mut flows[flow as usize];
        let (node, peer) = match side {
            Side::Sender => (f.spec.src, f.spec.dst),
            Side::Receiver => (f.spec.dst, f.spec.src),
        };
        let Some(t) = f.transport_mut() else { return };
        let class = t.relay_class;
        let mut send = |seq: u64, mut datagram: Vec<u8>| {
            // The source stamps too, so that N_h counts every hop and a
            // one-hop path carries the first hop's delay (meshbed_proto::relay).
            let stamped = stamp(net, now, node, class, &mut datagram);
            let size_bytes = transport::datagram_packet_bytes(datagram.len());
            // `[radio.mac] feedback_priority`: feedback goes ahead of data
            // at every node's queue (seed 000 §V.A.2); the wire view says
            // what feedback is.
            let priority = net.medium().config().mac.feedback_priority && is_feedback(&datagram);
            let mut pkt = Packet::data(node, peer, flow, seq, size_bytes, now, datagram);
            pkt.priority = priority;
            let _ = route_out(net, router, counters, now, node, pkt);
            stamped
        };
        let timer = step(t, &mut send);
        let delivered = t.bytes_delivered;
        // MTL's transport module tells its routing module of a peer that
        // stopped answering (seed 004 §III.B).
        let unresponsive = t.take_peer_unresponsive();
        f.record_milestones(now, delivered);
        schedule_timer(net, now, flow, timer);
        if unresponsive {
            if let Some(d) = &mut router.dynamic {
                d.peer_unresponsive(net, counters, now, node, peer);
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
