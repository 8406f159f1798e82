//! Why default ATP trails TCP on static chains with MAC retries on: ATP's
//! feedback rate 1/D_avg next to the chain's capacity, and where each
//! relay's stamped delay D comes from.
//!
//! Part 1 runs the simulator: for 1–6 hops on testbed A and testbed B (the
//! `docs/results/*-single-retries.toml` radios) and on the ns-2-style
//! 2 Mbit/s chain (200 m, RTS/CTS, 576-byte packets), the saturated UDP
//! goodput (the chain's capacity), default ATP's goodput and mean 1/D_avg
//! (the rate the feedback asks for) and NewReno's goodput, all in packets/s
//! of the same IP packet size, counted after a warm-up.
//!
//! Part 2 drives the same radio model and ATP engines in a loop of its own
//! (the simulator keeps its relays private) so that every MAC tx report and
//! every stamp can be seen: per node, the queueing part (enqueue → head of
//! line) and the service part (head of line → ACK) of the delay samples,
//! the average D the node stamps, how often η applied, how often the first-
//! sample prior was used, and which node set each packet's D_max. The loop
//! feeds tx reports to the relays exactly as the simulator's driver does
//! (every report of the node, at the time it is drained) and stamps at
//! enqueue time, the source included.
//!
//! Part 3 reruns the loop with counterfactual stamping (η = 1; D from the
//! service part only; no stamp at the source) to show which part of D
//! makes the gap.
//!
//! `cargo run --release -p meshbed-sim --example atp_capacity -- [SECONDS] [SEEDS] [SETTING]`
//! (defaults 60 s, seeds 1–3, every setting; SETTING 0, 1 or 2 runs one).

use meshbed_core::{Duration, EventQueue, Instant};
use meshbed_proto::atp::AtpConfig;
use meshbed_proto::connection::{EngineConfig, ReceiverEngine, SenderEngine};
use meshbed_proto::engine::{Engine, EngineEvent, TraceSample};
use meshbed_proto::relay::{DelayAverage, EtaRule, Stamper};
use meshbed_proto::tcp::TcpConfig;
use meshbed_proto::wire::{self, Control, ProtocolId, HEADER_LEN};
use meshbed_proto::Protocol;
use meshbed_radio::{Addr, Indication, Medium, NodeId, NodeRadio, Payload, RadioConfig, RadioEvent, Scheduler};
use meshbed_sim::scenario::{
    Amount, FlowKind, FlowSpec, Routing, Scenario, Topology, TransportFlow, UdpRate, IP_UDP_HEADER_BYTES,
};
use meshbed_sim::TraceKind;

/// Seconds at the start of every run that are not counted (quick-start,
/// the first epochs).
const WARMUP_S: f64 = 5.0;

/// One chain setting.
struct Setting {
    name: &'static str,
    radio: RadioConfig,
    spacing_m: f64,
    packet_bytes: u32,
}

fn testbed_radio(toml_text: &str) -> (RadioConfig, f64) {
    // The experiment file is a scenario plus an [experiment] table.
    let mut value: toml::Table = toml::from_str(toml_text).expect("a TOML table");
    value.remove("experiment");
    let scenario = Scenario::from_toml(&toml::to_string(&value).expect("serialisable")).expect("a valid scenario");
    let spacing_m = match scenario.topology {
        Topology::Chain { spacing_m, .. } => spacing_m,
        _ => unreachable!("the testbeds are chains"),
    };
    (scenario.radio, spacing_m)
}

fn settings() -> Vec<Setting> {
    let (a, a_spacing) = testbed_radio(include_str!("../../../docs/results/testbed-a-single-retries.toml"));
    let (b, b_spacing) = testbed_radio(include_str!("../../../docs/results/testbed-b-single-retries.toml"));
    vec![
        Setting { name: "testbed A (24 Mbit/s, retries on)", radio: a, spacing_m: a_spacing, packet_bytes: 1500 },
        Setting { name: "testbed B (6 Mbit/s, retries on)", radio: b, spacing_m: b_spacing, packet_bytes: 1500 },
        Setting {
            name: "ns-2 chain (2 Mbit/s, RTS/CTS)",
            radio: RadioConfig::ns2(),
            spacing_m: 200.0,
            packet_bytes: 576,
        },
    ]
}

fn chain(setting: &Setting, hops: u32, seconds: f64, seed: u64, flow: FlowSpec) -> Scenario {
    let mut s = Scenario::chain(hops, setting.spacing_m, seconds);
    s.seed = seed;
    s.radio = setting.radio.clone();
    s.routing = Routing::Static { paths: vec![(0..=hops).collect()] };
    let mut flow = FlowSpec { src: 0, dst: hops, ..flow };
    // Every flow here is UDP or a transfer, each with a packet size.
    if let Some(bytes) = flow.packet_bytes_mut() {
        *bytes = setting.packet_bytes;
    }
    s.flows = vec![flow];
    s
}

/// Application bytes per transport data packet.
fn payload_bytes(packet_bytes: u32) -> f64 {
    f64::from(packet_bytes - IP_UDP_HEADER_BYTES) - HEADER_LEN as f64
}

#[derive(Default)]
struct Part1 {
    capacity_pps: f64,
    atp_pps: f64,
    atp_feedback_pps: f64,
    atp_d_avg_ms: f64,
    atp_rate_pps: f64,
    atp_d_max_ms: f64,
    tcp_pps: f64,
}

/// Packets/s delivered after the warm-up, from the flow's trace.
fn traced_pps(trace: &[meshbed_sim::transport::TraceRecord], payload: f64, seconds: f64) -> f64 {
    let bytes: f64 =
        trace.iter().filter(|r| r.kind == TraceKind::DeliveredBytes && r.t_s >= WARMUP_S).map(|r| r.value).sum();
    bytes / payload / (seconds - WARMUP_S)
}

fn mean_of(trace: &[meshbed_sim::transport::TraceRecord], kind: TraceKind, f: impl Fn(f64) -> f64) -> f64 {
    let v: Vec<f64> = trace.iter().filter(|r| r.kind == kind && r.t_s >= WARMUP_S).map(|r| f(r.value)).collect();
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The sender's rate S = 1/D_s averaged over time after the warm-up (S
/// is traced when it changes).
fn time_mean_rate(trace: &[meshbed_sim::transport::TraceRecord], seconds: f64) -> f64 {
    let mut rate = 0.0;
    let mut at = WARMUP_S;
    let mut sum = 0.0;
    for r in trace.iter().filter(|r| r.kind == TraceKind::DSUs) {
        if r.t_s > at {
            sum += rate * (r.t_s.min(seconds) - at);
            at = r.t_s;
        }
        rate = 1e6 / r.value.max(1e-3);
    }
    sum += rate * (seconds - at);
    sum / (seconds - WARMUP_S)
}

fn part1(setting: &Setting, hops: u32, seconds: f64, seed: u64) -> Part1 {
    let payload = payload_bytes(setting.packet_bytes);
    let udp = chain(setting, hops, seconds, seed, FlowSpec::udp(0, 1, UdpRate::Saturated));
    let udp = meshbed_sim::run(&udp).expect("runs");
    let transport = |protocol: Protocol| {
        let transfer = TransportFlow { trace: true, ..TransportFlow::new(protocol, Amount::Until { stop_s: seconds }) };
        let flow = FlowSpec { src: 0, dst: hops, start_s: 0.0, kind: FlowKind::Transport(transfer) };
        meshbed_sim::run(&chain(setting, hops, seconds, seed, flow)).expect("runs").flows.remove(0)
    };
    let atp = transport(Protocol::AtpDefault);
    let tcp = transport(Protocol::TcpNewReno);
    Part1 {
        capacity_pps: udp.flows[0].received_packets as f64 / seconds,
        atp_pps: traced_pps(&atp.trace, payload, seconds),
        atp_feedback_pps: mean_of(&atp.trace, TraceKind::DAvgReceivedUs, |us| 1e6 / us),
        atp_d_avg_ms: mean_of(&atp.trace, TraceKind::DAvgReceivedUs, |us| us / 1e3),
        atp_rate_pps: time_mean_rate(&atp.trace, seconds),
        atp_d_max_ms: mean_of(&atp.trace, TraceKind::DMaxUs, |us| us / 1e3),
        tcp_pps: traced_pps(&tcp.trace, payload, seconds),
    }
}

// ---------------------------------------------------------------- part 2

#[derive(Clone, Debug)]
struct Pkt {
    bytes: u32,
    datagram: Vec<u8>,
    dst: NodeId,
    /// The last node that raised the datagram's D_max.
    raised_by: Option<NodeId>,
}

impl Payload for Pkt {
    fn msdu_bytes(&self) -> u32 {
        self.bytes
    }
}

#[derive(Copy, Clone, Debug)]
enum Ev {
    Radio(RadioEvent),
    Timer { side: usize, gen: u64 },
}

struct Sched<'a>(&'a mut EventQueue<Ev>);
impl Scheduler for Sched<'_> {
    fn schedule(&mut self, at: Instant, event: RadioEvent) {
        self.0.schedule(at, Ev::Radio(event));
    }
}

/// What one node did after the warm-up.
#[derive(Clone, Debug, Default)]
struct NodeStats {
    reports: u64,
    queue_ns: f64,
    service_ns: f64,
    access_ns: f64,
    retries: u64,
    /// ATP data datagrams stamped.
    stamps: u64,
    stamps_idle: u64,
    stamps_prior: u64,
    d_ns: f64,
    offered_ns: f64,
    /// What η added over D on idle stamps.
    eta_extra_ns: f64,
    /// Data packets whose final D_max this node set.
    bottleneck: u64,
    /// An EWMA (same α) of the service part only, averaged at stamp time.
    service_avg_ns: f64,
}

/// What a node stamps: the simulator's rule (`Relay`: one average of
/// enqueue → tx done) or a counterfactual, to see what each part of D does.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Variant {
    /// As meshbed builds it (the simulator's `Relay`).
    AsBuilt,
    /// η = 1: the idle multiplier never applies.
    NoEta,
    /// D averages only head of line → tx done (no queueing part).
    ServiceOnly,
    /// The source does not stamp (intermediate nodes only, seed 002 §4.1).
    NoSourceStamp,
}

/// One node's stamping state: what `Relay` holds, plus an average of the
/// service part alone.
struct NodeDelay {
    stamper: Stamper,
    total: DelayAverage,
    service: DelayAverage,
}

/// One second of a run, for the time series.
#[derive(Clone, Debug, Default)]
struct Second {
    delivered_bytes: u64,
    d_max_sum_ns: f64,
    data: u64,
    /// The sender's rate S at the end of the second (packets/s).
    rate_pps: f64,
    /// Feedback received in the second: the rate 1/D_avg it carried.
    feedback_pps: Vec<f64>,
    queue_max: Vec<usize>,
    overflow_drops: u64,
    idle_stamps: u64,
}

struct Part2 {
    series: Vec<Second>,
    nodes: Vec<NodeStats>,
    data_at_receiver: u64,
    d_max_ns: f64,
    d_avg_sent_ns: Vec<f64>,
    goodput_pps: f64,
    data_stamped_per_s: f64,
}

struct Loop {
    medium: Medium<Pkt>,
    queue: EventQueue<Ev>,
    relays: Vec<NodeDelay>,
    variant: Variant,
    engines: [Box<dyn EngineBox>; 2],
    ends: [NodeId; 2],
    gens: [u64; 2],
    timer_at: [Option<Instant>; 2],
    hol_at: Vec<Option<Instant>>,
    warm: Instant,
    stats: Vec<NodeStats>,
    d_max_sum_ns: f64,
    data_at_receiver: u64,
    d_avg_sent: Vec<f64>,
    delivered_bytes: u64,
    series: Vec<Second>,
    rate_pps: f64,
}

trait EngineBox {
    fn engine(&mut self) -> &mut dyn Engine;
    fn take_delivered(&mut self) -> usize {
        0
    }
}
impl EngineBox for SenderEngine {
    fn engine(&mut self) -> &mut dyn Engine {
        self.engine_mut()
    }
}
impl EngineBox for ReceiverEngine {
    fn engine(&mut self) -> &mut dyn Engine {
        self.engine_mut()
    }
    fn take_delivered(&mut self) -> usize {
        ReceiverEngine::take_delivered(self).len()
    }
}

impl Loop {
    fn second(&mut self, now: Instant) -> &mut Second {
        let k = now.as_secs_f64() as usize;
        let nodes = self.hol_at.len();
        if self.series.len() <= k {
            self.series.resize(k + 1, Second { queue_max: vec![0; nodes], ..Second::default() });
        }
        let rate = self.rate_pps;
        let sec = &mut self.series[k];
        sec.rate_pps = rate;
        sec
    }

    fn next_hop(&self, node: NodeId, dst: NodeId) -> NodeId {
        if dst > node {
            node + 1
        } else {
            node - 1
        }
    }

    /// The node puts `datagram` into its transmit queue towards `dst`,
    /// stamping it first (as the simulator does, source included).
    fn send(&mut self, now: Instant, node: NodeId, dst: NodeId, mut datagram: Vec<u8>, raised_by: Option<NodeId>) {
        let counted = now >= self.warm;
        let relay = &mut self.relays[node as usize];
        let d_ns = relay.total.current().as_nanos() as f64;
        let service_ns = relay.service.current().as_nanos() as f64;
        let prior = relay.total.samples() == 0;
        let source = if self.variant == Variant::ServiceOnly { &mut relay.service } else { &mut relay.total };
        let outcome = if self.variant == Variant::NoSourceStamp && node == self.ends[0] {
            // Only the channel activity and N_h; D_max is left alone.
            let eta = relay.stamper.eta();
            let mut dummy = Stamper::new(eta, Duration::MAX);
            let mut zero = Duration::ZERO;
            let outcome = dummy.stamp(now, &mut datagram, &mut zero).expect("our own datagrams parse");
            relay.stamper.note_channel_busy(now);
            outcome
        } else {
            relay.stamper.stamp(now, &mut datagram, source).expect("our own datagrams parse")
        };
        let mut raised_by = raised_by;
        if outcome.raised {
            raised_by = Some(node);
        }
        let is_data = outcome.protocol == ProtocolId::Atp && outcome.offered.is_some();
        if is_data && counted {
            let s = &mut self.stats[node as usize];
            let offered = outcome.offered.expect("data").as_nanos() as f64;
            s.stamps += 1;
            s.d_ns += d_ns;
            s.offered_ns += offered;
            s.service_avg_ns += service_ns;
            if outcome.idle {
                s.stamps_idle += 1;
                s.eta_extra_ns += offered - d_ns;
            }
            if prior {
                s.stamps_prior += 1;
            }
        }
        let bytes = IP_UDP_HEADER_BYTES + datagram.len() as u32;
        let next = self.next_hop(node, dst);
        let pkt = Pkt { bytes, datagram, dst, raised_by };
        self.medium.enqueue(now, node, Addr::Unicast(next), pkt, &mut Sched(&mut self.queue));
        let len = self.medium.queue_len(node);
        let sec = self.second(now);
        sec.queue_max[node as usize] = sec.queue_max[node as usize].max(len);
        if is_data && outcome.idle {
            sec.idle_stamps += 1;
        }
    }

    /// Steps 2–4 of the engine calling order for one side.
    fn drive(&mut self, now: Instant, side: usize) {
        let mut buf = vec![0u8; 2304];
        let mut out = Vec::new();
        while let Some(tx) = self.engines[side].engine().poll_transmit(now, &mut buf) {
            out.push(buf[..tx.len].to_vec());
        }
        let (node, peer) = (self.ends[side], self.ends[1 - side]);
        for d in out {
            self.send(now, node, peer, d, None);
        }
        while let Some(ev) = self.engines[side].engine().poll_event() {
            match ev {
                EngineEvent::Trace(TraceSample::DAvgSent { d_avg, .. }) if now >= self.warm => {
                    self.d_avg_sent.push(d_avg.as_nanos() as f64);
                }
                EngineEvent::Trace(TraceSample::Ds { d_s, .. }) => {
                    self.rate_pps = 1e9 / d_s.as_nanos().max(1) as f64;
                    self.second(now);
                }
                EngineEvent::Trace(TraceSample::DAvgReceived { d_avg, .. }) => {
                    let pps = 1e9 / d_avg.as_nanos().max(1) as f64;
                    self.second(now).feedback_pps.push(pps);
                }
                _ => {}
            }
        }
        let got = self.engines[side].take_delivered();
        self.second(now).delivered_bytes += got as u64;
        if now >= self.warm {
            self.delivered_bytes += got as u64;
        }
        let want = self.engines[side].engine().poll_timeout();
        if want != self.timer_at[side] {
            self.gens[side] += 1;
            self.timer_at[side] = want;
            if let Some(at) = want {
                self.queue.schedule(at.max(now), Ev::Timer { side, gen: self.gens[side] });
            }
        }
    }

    fn drain(&mut self, at: Instant) {
        while let Some(ind) = self.medium.poll_indication() {
            match ind {
                Indication::TxReport(r) => {
                    let n = r.node as usize;
                    let hol = self.hol_at[n].take().unwrap_or(r.enqueued_at);
                    if let Some(done) = r.tx_done_at {
                        let service = done.saturating_since(hol).as_nanos() as f64;
                        if at >= self.warm {
                            let s = &mut self.stats[n];
                            s.reports += 1;
                            s.queue_ns += hol.saturating_since(r.enqueued_at).as_nanos() as f64;
                            s.service_ns += service;
                            s.access_ns += r.first_tx_at.map_or(0.0, |f| f.saturating_since(hol).as_nanos() as f64);
                            s.retries += u64::from(r.retries);
                        }
                    }
                    // What `Relay::on_tx_report` does, plus the service-only average.
                    let relay = &mut self.relays[n];
                    relay.stamper.note_channel_busy(at);
                    relay.total.on_tx_report(r.enqueued_at, r.tx_done_at);
                    relay.service.on_tx_report(hol, r.tx_done_at);
                }
                Indication::Dequeued { node } => self.hol_at[node as usize] = Some(at),
                Indication::Deliver { node, payload, .. } => {
                    if node == payload.dst {
                        let side = if node == self.ends[1] { 1 } else { 0 };
                        if side == 1 && at >= self.warm {
                            if let Ok((repr, _)) = wire::parse_datagram(&payload.datagram) {
                                let data =
                                    repr.protocol == ProtocolId::Atp && !repr.control.contains(Control::SACK_OPT);
                                if data {
                                    let sec = self.second(at);
                                    sec.data += 1;
                                    sec.d_max_sum_ns += f64::from(repr.d_max_us) * 1e3;
                                    self.data_at_receiver += 1;
                                    self.d_max_sum_ns += f64::from(repr.d_max_us) * 1e3;
                                    if let Some(b) = payload.raised_by {
                                        self.stats[b as usize].bottleneck += 1;
                                    }
                                }
                            }
                        }
                        self.engines[side].engine().handle_input(at, &payload.datagram);
                        self.drive(at, side);
                    } else {
                        self.send(at, node, payload.dst, payload.datagram, payload.raised_by);
                    }
                }
                Indication::Drop { cause: meshbed_radio::DropCause::QueueOverflow, .. } => {
                    self.second(at).overflow_drops += 1;
                }
                Indication::Drop { .. } => {}
            }
        }
    }
}

fn part2(setting: &Setting, hops: u32, seconds: f64, seed: u64, variant: Variant) -> Part2 {
    let radios: Vec<NodeRadio> = (0..=hops).map(|i| NodeRadio::at(f64::from(i) * setting.spacing_m, 0.0)).collect();
    let medium = Medium::new(&setting.radio, &radios, seed).expect("a valid radio");
    let atp =
        AtpConfig { max_payload: payload_bytes(setting.packet_bytes) as usize, trace: true, ..AtpConfig::default() };
    let relay_config = atp.relay_config();
    let eta = if variant == Variant::NoEta { EtaRule::Fixed(1.0) } else { relay_config.eta };
    let relays = (0..=hops)
        .map(|n| {
            // As the simulator's `Network::new`: a fresh node assumes the
            // one-frame service time of the flow's packets.
            let prior_delay = medium.one_frame_service_time(n, setting.packet_bytes);
            NodeDelay {
                stamper: Stamper::new(eta, relay_config.idle_after),
                total: DelayAverage::new(relay_config.alpha, prior_delay),
                service: DelayAverage::new(relay_config.alpha, prior_delay),
            }
        })
        .collect();
    let config = EngineConfig::new(Protocol::AtpDefault, |_| atp.clone(), TcpConfig::default);
    let start = Instant::ZERO;
    // More than the radio's bit rate could carry in the run.
    let data = vec![0x5a; (seconds * f64::from(setting.radio.data_rate_kbps) * 125.0) as usize];
    let sender = SenderEngine::with_data(&config, 0x1234_5678, data, start);
    let receiver = ReceiverEngine::new(&config, 0x1234_5678, start);
    let nodes = hops as usize + 1;
    let mut l = Loop {
        medium,
        queue: EventQueue::new(),
        relays,
        variant,
        engines: [Box::new(sender), Box::new(receiver)],
        ends: [0, hops],
        gens: [0; 2],
        timer_at: [None; 2],
        hol_at: vec![None; nodes],
        warm: Instant::ZERO + Duration::from_secs_f64(WARMUP_S),
        stats: vec![NodeStats::default(); nodes],
        d_max_sum_ns: 0.0,
        data_at_receiver: 0,
        d_avg_sent: Vec::new(),
        delivered_bytes: 0,
        series: Vec::new(),
        rate_pps: 0.0,
    };
    l.timer_at[0] = Some(start);
    l.gens[0] = 1;
    l.queue.schedule(start, Ev::Timer { side: 0, gen: 1 });
    l.drive(start, 1);
    let end = Instant::ZERO + Duration::from_secs_f64(seconds);
    while let Some(at) = l.queue.peek_time() {
        if at > end {
            break;
        }
        let (at, ev) = l.queue.pop().expect("peeked");
        match ev {
            Ev::Radio(r) => l.medium.handle(at, r, &mut Sched(&mut l.queue)),
            Ev::Timer { side, gen } => {
                if gen == l.gens[side] {
                    l.timer_at[side] = None;
                    l.engines[side].engine().handle_timeout(at);
                    l.drive(at, side);
                }
            }
        }
        l.drain(at);
    }
    let counted_s = seconds - WARMUP_S;
    let data_stamped = l.stats[0].stamps as f64;
    Part2 {
        data_at_receiver: l.data_at_receiver,
        d_max_ns: l.d_max_sum_ns / l.data_at_receiver.max(1) as f64,
        d_avg_sent_ns: l.d_avg_sent,
        goodput_pps: l.delivered_bytes as f64 / payload_bytes(setting.packet_bytes) / counted_s,
        data_stamped_per_s: data_stamped / counted_s,
        nodes: l.stats,
        series: l.series,
    }
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

fn print_nodes(p: &Part2) {
    println!(
        "| node | tx reports | Q ms (enqueue→HOL) | T ms (HOL→ACK) | of which before 1st attempt ms | retries/pkt | data stamps | mean D stamped ms | η applied | η added ms/stamp | prior used | EWMA of T alone ms | sets D_max |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (i, s) in p.nodes.iter().enumerate() {
        let r = s.reports.max(1) as f64;
        let st = s.stamps.max(1) as f64;
        println!(
            "| {i} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {} | {:.3} | {} | {:.3} | {} | {:.3} | {:.1}% |",
            s.reports,
            ms(s.queue_ns / r),
            ms(s.service_ns / r),
            ms(s.access_ns / r),
            s.retries as f64 / r,
            s.stamps,
            ms(s.d_ns / st),
            s.stamps_idle,
            ms(s.eta_extra_ns / st),
            s.stamps_prior,
            ms(s.service_avg_ns / st),
            100.0 * s.bottleneck as f64 / p.data_at_receiver.max(1) as f64
        );
    }
}

fn print_series(p: &Part2, payload: f64, upto: usize) {
    println!("| s | S pkt/s (end) | feedback 1/D_avg pkt/s | goodput pkt/s | mean D_max ms | max queue per node | queue drops | idle stamps |");
    println!("|---|---|---|---|---|---|---|---|");
    for (k, sec) in p.series.iter().enumerate().take(upto) {
        let fb: Vec<String> = sec.feedback_pps.iter().map(|v| format!("{v:.0}")).collect();
        let q: Vec<String> = sec.queue_max.iter().map(|v| v.to_string()).collect();
        println!(
            "| {k} | {:.0} | {} | {:.0} | {:.1} | {} | {} | {} |",
            sec.rate_pps,
            fb.join(", "),
            sec.delivered_bytes as f64 / payload,
            ms(sec.d_max_sum_ns / sec.data.max(1) as f64),
            q.join(" "),
            sec.overflow_drops,
            sec.idle_stamps
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seconds: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(60.0);
    let seeds: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(3);
    let only: Option<usize> = args.get(3).and_then(|a| a.parse().ok());
    println!("{seconds} s per run, the first {WARMUP_S} s not counted, seeds 1..={seeds}");
    for (k, setting) in settings().iter().enumerate() {
        if only.is_some_and(|o| o != k) {
            continue;
        }
        let payload = payload_bytes(setting.packet_bytes);
        println!("\n## {} — {} B packets, {} m spacing\n", setting.name, setting.packet_bytes, setting.spacing_m);
        println!(
            "| hops | capacity (UDP) pkt/s | 1/capacity ms | ATP mean D_max ms | ATP mean D_avg ms | mean of 1/D_avg pkt/s | 1/mean D_avg pkt/s | ATP rate S pkt/s | ATP goodput pkt/s | NewReno pkt/s |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|");
        let mut capacity = Vec::new();
        let mut tcp = Vec::new();
        for hops in 1..=6 {
            let runs: Vec<Part1> = (1..=seeds).map(|s| part1(setting, hops, seconds, s)).collect();
            let m = |f: fn(&Part1) -> f64| runs.iter().map(f).sum::<f64>() / runs.len() as f64;
            let cap = m(|r| r.capacity_pps);
            capacity.push(cap);
            tcp.push(m(|r| r.tcp_pps));
            println!(
                "| {hops} | {cap:.0} | {:.2} | {:.2} | {:.2} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} |",
                1e3 / cap,
                m(|r| r.atp_d_max_ms),
                m(|r| r.atp_d_avg_ms),
                m(|r| r.atp_feedback_pps),
                1e3 / m(|r| r.atp_d_avg_ms),
                m(|r| r.atp_rate_pps),
                m(|r| r.atp_pps),
                m(|r| r.tcp_pps),
            );
        }
        for hops in [1, 3, 6] {
            let p = part2(setting, hops, seconds, 1, Variant::AsBuilt);
            let d_avg = p.d_avg_sent_ns.iter().sum::<f64>() / p.d_avg_sent_ns.len().max(1) as f64;
            println!(
                "\n{hops} hops, per node (seed 1): ATP goodput {:.0} pkt/s, data sent {:.0} pkt/s; at the receiver mean D_max {:.2} ms over {} packets, mean D_avg fed back {:.2} ms\n",
                p.goodput_pps,
                p.data_stamped_per_s,
                ms(p.d_max_ns),
                p.data_at_receiver,
                ms(d_avg),
            );
            print_nodes(&p);
            if hops == 6 {
                println!("\n6 hops, the first 30 s, second by second (seed 1):\n");
                print_series(&p, payload, 30);
            }
        }
        println!(
            "\nCounterfactual stamping, ATP goodput pkt/s (mean of seeds 1..={seeds}), next to capacity and NewReno:\n"
        );
        println!("| hops | capacity | NewReno | as built | η = 1 | D = T only (no queueing) | source does not stamp |");
        println!("|---|---|---|---|---|---|---|");
        for hops in 1..=6u32 {
            let g = |v: Variant| {
                (1..=seeds).map(|s| part2(setting, hops, seconds, s, v).goodput_pps).sum::<f64>() / seeds as f64
            };
            println!(
                "| {hops} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} |",
                capacity[hops as usize - 1],
                tcp[hops as usize - 1],
                g(Variant::AsBuilt),
                g(Variant::NoEta),
                g(Variant::ServiceOnly),
                g(Variant::NoSourceStamp)
            );
        }
    }
}
