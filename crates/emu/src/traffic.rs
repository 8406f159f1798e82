//! Running a scenario on the emulator instead of the simulator, from the
//! same file: the experiment layer's hook ([`run_scenario`]), and the
//! emulator's speed and accuracy bench ([`bench`]).
//!
//! The emulation is built from the scenario by the simulator's own network
//! builder (`meshbed_sim::build_network`): the same medium, positions and
//! route table, the same refusal of a flow without a route.
//! UDP flows (saturated and CBR) run as a paced sender thread inside the
//! source's namespace and a counting receiver thread inside the
//! destination's, real sockets on the real stacks. A saturated source sends
//! at its node's PHY data rate, which is more than the MAC can take, so its
//! MAC queue stays full as the simulator's saturated source keeps it (the
//! excess is dropped at the queue, as in the simulator). Goodput counts UDP
//! payload bytes over the flow's active time, as the simulator does.
//!
//! A transport flow runs as a real transfer ([`start_transfer`]:
//! `meshbed-net`'s sender and receiver in the two namespaces, the relays
//! stamping on the way): one of `bytes` counts only if the file that
//! arrived equals the data; one until `stop_s` sends the simulator's
//! backlog and is stopped then, counting what the receiver acknowledged
//! (and checking what it wrote). What the emulator cannot run as written
//! (per-flow engine settings, DSR, echo...) is refused before anything
//! starts ([`Emulator`], `crate::support`).
//!
//! The report is the simulator's ([`SimReport`], one [`FlowResult`] per
//! flow), so that tables, experiment rows and figures treat both backends
//! alike, plus the medium's timing ([`LoopSummary`]).

use crate::kernel_tcp::start_kernel_tcp;
use crate::plumbing::{self, Emulation, NodeRouting, Result};
use crate::realtime::{EthFrame, LoopSummary, MediumLoop, TapBackend};
use crate::support::Emulator;
use crate::sys;
use crate::transfer::{start_transfer, TransferOutcome};
use meshbed_core::{Duration, Instant};
use meshbed_radio::{MacCounters, Medium, NodeId};
use meshbed_sim::backend::ScenarioBackend;
use meshbed_sim::routing::RouteTable;
use meshbed_sim::scenario::{FlowKind, UdpRate, IP_UDP_HEADER_BYTES};
use meshbed_sim::{FlowResult, Scenario, SimReport};
use serde::Serialize;
use std::net::{SocketAddrV4, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// How an emulation runs.
#[derive(Clone, Debug)]
pub struct EmuOptions {
    /// The `meshbed` binary, to start its daemons in every node: `relay`
    /// (ATP's stamping) always, `routed` when the scenario's routing is
    /// dynamic (without it such a scenario is refused).
    pub daemon_exe: Option<PathBuf>,
    /// Spin instead of sleeping for waits shorter than this.
    pub spin: Duration,
    /// Run the medium thread at real-time priority (SCHED_FIFO 10).
    pub realtime: bool,
    /// Start `meshbed relay` in every node (with `daemon_exe`). Off, a
    /// forwarded datagram crosses the kernel alone, as a kernel TCP
    /// segment always does, instead of netfilter's queue and the user-space
    /// daemon (100–200 µs, docs/RESULTS.md's Linux anchor): a sensitivity
    /// check of that timing. ATP flows need the relays' D_max stamping and
    /// are refused without them ([`Emulator::supports_without_relays`]).
    pub relays: bool,
}

impl Default for EmuOptions {
    fn default() -> Self {
        EmuOptions { daemon_exe: None, spin: Duration::ZERO, realtime: true, relays: true }
    }
}

/// What a stopped emulation measured.
pub struct Stopped {
    pub summary: LoopSummary,
    /// Every node's MAC counters.
    pub mac: Vec<MacCounters>,
    /// Every node's routing daemon's report, when they ran.
    pub routers: Vec<Option<crate::routers::RouterReport>>,
}

/// What the medium thread returns: its summary and every node's MAC counters.
type MediumOutcome = (LoopSummary, Vec<MacCounters>);

/// An emulation with its medium running on a thread of this process.
pub struct Running {
    pub emulation: Emulation,
    /// The routes the namespaces were given (the simulator's).
    pub routes: RouteTable,
    /// Each node's PHY data rate.
    pub data_rate_kbps: Vec<u32>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<std::io::Result<MediumOutcome>>>,
}

/// Builds the scenario's medium and routes through the simulator's one
/// network builder ([`meshbed_sim::build_network`]: the same positions,
/// radio and route checks), after the emulator's check of what it can run
/// ([`Emulator`]): the network alone for `meshbed emu SCENARIO`, which runs
/// programs rather than the file's flows (`with_flows` false), or the
/// network and its flows, each of which must have a route.
pub fn build_medium(scenario: &Scenario, with_flows: bool) -> Result<(Medium<EthFrame>, RouteTable)> {
    scenario.validate()?;
    if with_flows {
        Emulator.supports(scenario)?;
    } else {
        Emulator.supports_network(scenario)?;
    }
    Ok(meshbed_sim::build_network(scenario, with_flows)?)
}

impl Running {
    /// Creates the emulation and starts its medium (and relays, if asked).
    pub fn start(scenario: &Scenario, options: &EmuOptions) -> Result<Running> {
        let (medium, routes) = build_medium(scenario, true)?;
        if scenario.routing.is_dynamic() && options.daemon_exe.is_none() {
            return Err(plumbing::EmuError::Other(format!(
                "routing.kind = \"{}\" needs the nodes' routing daemons, and no meshbed binary was given to start them",
                scenario.routing.kind_name()
            )));
        }
        let mut emulation = Emulation::create(&medium, NodeRouting::for_scenario(scenario, &routes))?;
        let data_rate_kbps = (0..medium.node_count() as NodeId).map(|n| medium.data_rate_kbps(n)).collect();
        let mut medium_loop = MediumLoop::new(medium, emulation.id(), Some(emulation.dir()))
            .map_err(|err| plumbing::EmuError::Io { what: "exporting delays".into(), err })?;
        let mut backend = TapBackend::new(emulation.take_taps());
        backend.set_spin(options.spin);
        if let Some(exe) = &options.daemon_exe {
            if options.relays {
                emulation.start_relays(exe)?;
            }
            crate::routers::start_routing(&mut emulation, &mut medium_loop, scenario, exe)?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let realtime = options.realtime;
        let thread = std::thread::spawn(move || {
            if realtime {
                // Best effort: without it the loop still runs, only later.
                let _ = sys::set_realtime_priority(10);
            }
            medium_loop.run(&mut backend, None, &|| stop2.load(Ordering::Relaxed))?;
            let n = medium_loop.medium().node_count();
            let counters = (0..n as NodeId).map(|i| medium_loop.medium().counters(i).clone()).collect();
            Ok((medium_loop.stats.summary(), counters))
        });
        Ok(Running { emulation, routes, data_rate_kbps, stop, thread: Some(thread) })
    }

    /// Node `node`'s namespace.
    pub fn netns(&self, node: NodeId) -> &str {
        &self.emulation.state.nodes[node as usize].netns
    }

    /// Stops the routing daemons (while the medium still runs, so that
    /// they exit cleanly), then the medium, and tears everything down.
    pub fn stop(mut self) -> Result<Stopped> {
        let routers = self.emulation.stop_routers();
        self.stop.store(true, Ordering::Relaxed);
        let r = self.thread.take().expect("running").join();
        self.emulation.teardown();
        match r {
            Ok(Ok((summary, mac))) => Ok(Stopped { summary, mac, routers }),
            Ok(Err(err)) => Err(plumbing::EmuError::Io { what: "the medium loop".into(), err }),
            Err(_) => Err(plumbing::EmuError::Other("the medium loop panicked".into())),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What [`run_scenario`] returns: the simulator's report of the run (with no
/// trace hash: wall-clock runs do not repeat bit for bit) and
/// the medium's timing.
#[derive(Clone, Debug, Serialize)]
pub struct EmuReport {
    pub run: SimReport,
    pub medium: LoopSummary,
}

impl EmuReport {
    pub fn to_table(&self) -> String {
        let mut s = format!(
            "emulated {:.1} s: {} radio events, {} frames delivered ({:.0}/s)\n",
            self.medium.elapsed_s,
            self.medium.counters.events,
            self.medium.counters.frames_delivered,
            self.medium.delivered_frames_per_s
        );
        s += &format!(
            "timing error: events p50 {:.0} µs p99 {:.0} µs max {:.0} µs; frame deliveries p50 {:.0} µs p99 {:.0} µs max {:.0} µs\n\n",
            self.medium.event_lateness.p50_us,
            self.medium.event_lateness.p99_us,
            self.medium.event_lateness.max_us,
            self.medium.delivery_lateness.p50_us,
            self.medium.delivery_lateness.p99_us,
            self.medium.delivery_lateness.max_us
        );
        let fwd = &self.medium.forwarding_delay;
        if fwd.count > 0 {
            s.insert_str(
                s.len() - 1,
                &format!(
                    "relays forwarded {} packets: reception end to the medium p50 {:.0} µs p99 {:.0} µs max {:.0} µs\n",
                    fwd.count, fwd.p50_us, fwd.p99_us, fwd.max_us
                ),
            );
        }
        s + &self.run.to_table()
    }
}

/// The UDP port of flow `flow`.
pub(crate) fn flow_port(flow: usize) -> u16 {
    9000 + flow as u16
}

#[derive(Default)]
struct FlowCounters {
    sent: AtomicU64,
    received: AtomicU64,
    bytes: AtomicU64,
}

/// Runs `scenario` on the emulator for its `duration_s` of wall-clock time
/// and reports per-flow goodput, the medium's timing error and the MAC
/// counters. Needs root. The experiment layer calls this where it would
/// call `meshbed_sim::run`.
pub fn run_scenario(scenario: &Scenario, options: &EmuOptions) -> Result<EmuReport> {
    // Refused before the random flows are drawn, so that a drawn flow's
    // key is its template's (`random_flows.flow.trace`).
    scenario.validate()?;
    if options.relays {
        Emulator.supports(scenario)?;
    } else {
        Emulator.supports_without_relays(scenario)?;
    }
    let scenario = &*scenario.with_random_flows_drawn()?;
    let running = Running::start(scenario, options)?;
    let t0 = std::time::Instant::now();
    let end = std::time::Duration::from_secs_f64(scenario.duration_s);
    let stop = Arc::new(AtomicBool::new(false));
    let counters: Vec<Arc<FlowCounters>> = scenario.flows.iter().map(|_| Arc::default()).collect();
    let mut threads = Vec::new();
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let transfers: Vec<Option<std::thread::JoinHandle<TransferOutcome>>> = scenario
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| match f.transport().map(|t| (t.protocol, t.amount)) {
            Some((protocol, amount)) => Some(start_transfer(&running, scenario, i, protocol, amount, t0)),
            // The kernel's TCP reports as a transfer too (`crate::kernel_tcp`).
            None => f.kernel_tcp().map(|k| start_kernel_tcp(&running, scenario, i, k, t0)),
        })
        .collect();
    for (i, f) in scenario.flows.iter().enumerate() {
        let FlowKind::Udp(udp) = &f.kind else {
            // Transfers run above; echo flows were refused (`Emulator::supports`).
            continue;
        };
        let dst_addr = SocketAddrV4::new(plumbing::node_addr(f.dst), flow_port(i));
        // Receiver.
        let (ns, c, stop2, errs) =
            (running.netns(f.dst).to_string(), counters[i].clone(), stop.clone(), errors.clone());
        threads.push(std::thread::spawn(move || {
            let r = (|| -> std::io::Result<()> {
                sys::enter_netns(&ns)?;
                let sock = UdpSocket::bind(dst_addr)?;
                sock.set_read_timeout(Some(std::time::Duration::from_millis(50)))?;
                let mut buf = vec![0u8; 65_536];
                while !stop2.load(Ordering::Relaxed) {
                    if let Ok(n) = sock.recv(&mut buf) {
                        c.received.fetch_add(1, Ordering::Relaxed);
                        c.bytes.fetch_add(n as u64, Ordering::Relaxed);
                    }
                }
                Ok(())
            })();
            if let Err(e) = r {
                errs.lock().expect("not poisoned").push(format!("receiver: {e}"));
            }
        }));
        // Sender, paced.
        let rate_bps = match udp.rate {
            UdpRate::Cbr { rate_kbps } => rate_kbps * 1e3,
            UdpRate::Saturated => f64::from(running.data_rate_kbps[f.src as usize]) * 1e3,
        };
        let interval = std::time::Duration::from_secs_f64(f64::from(udp.packet_bytes) * 8.0 / rate_bps.max(1.0));
        let payload = (udp.packet_bytes - IP_UDP_HEADER_BYTES) as usize;
        let start = std::time::Duration::from_secs_f64(f.start_s);
        let stop_at =
            std::time::Duration::from_secs_f64(udp.stop_s.unwrap_or(scenario.duration_s).min(scenario.duration_s));
        let (ns, c, stop2, errs) =
            (running.netns(f.src).to_string(), counters[i].clone(), stop.clone(), errors.clone());
        threads.push(std::thread::spawn(move || {
            let r = (|| -> std::io::Result<()> {
                sys::enter_netns(&ns)?;
                let sock = UdpSocket::bind("0.0.0.0:0")?;
                let mut buf = vec![0x5au8; payload];
                let mut k: u64 = 0;
                while !stop2.load(Ordering::Relaxed) {
                    let due = start + interval * k as u32;
                    if due >= stop_at {
                        break;
                    }
                    let el = t0.elapsed();
                    if el < due {
                        std::thread::sleep(due - el);
                        continue;
                    }
                    buf[..8.min(payload)].copy_from_slice(&k.to_be_bytes()[..8.min(payload)]);
                    // A full socket buffer loses the packet, as a full queue would.
                    if sock.send_to(&buf, dst_addr).is_ok() {
                        c.sent.fetch_add(1, Ordering::Relaxed);
                    }
                    k += 1;
                }
                Ok(())
            })();
            if let Err(e) = r {
                errs.lock().expect("not poisoned").push(format!("sender: {e}"));
            }
        }));
    }
    while t0.elapsed() < end && !sys::stop_requested() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    // Transfers end by themselves (complete, or failed after their bounded
    // timeout); the medium keeps running until they have.
    let outcomes: Vec<Option<TransferOutcome>> = transfers
        .into_iter()
        .map(|t| t.map(|h| h.join().unwrap_or_else(|_| TransferOutcome::failed("transfer thread panicked"))))
        .collect();
    let routes = running.routes.clone();
    let Stopped { summary: medium, mac: per_node, routers } = running.stop()?;
    let errors = errors.lock().expect("not poisoned").clone();
    if !errors.is_empty() {
        return Err(plumbing::EmuError::Other(errors.join("; ")));
    }
    let mut mac_total = MacCounters::default();
    for c in &per_node {
        mac_total.add(c);
    }
    let flows: Vec<FlowResult> = scenario
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let c = &counters[i];
            let duration_s = f.stop_s().unwrap_or(scenario.duration_s).min(scenario.duration_s) - f.start_s;
            let bytes = c.bytes.load(Ordering::Relaxed);
            let mut r = FlowResult::blank(i as u32, f, routes.hop_count(f.src, f.dst), duration_s);
            r.sent_packets = c.sent.load(Ordering::Relaxed);
            r.received_packets = c.received.load(Ordering::Relaxed);
            r.bytes_delivered = bytes;
            // Not measured on the emulator: the stacks' packets carry no send
            // time, so the delay stays `None` (FlowResult::blank).
            r.goodput_bps = meshbed_sim::report::goodput_bps(bytes, duration_s);
            // Every transport flow moves `bytes` (`Emulator::supports`), so
            // every one has an outcome; UDP flows have none.
            if let (Some(o), Some(t)) = (&outcomes[i], &mut r.transfer) {
                r.sent_packets = o.datagrams_sent;
                r.received_packets = o.datagrams_received;
                r.bytes_delivered = o.bytes_delivered;
                r.goodput_bps = o.goodput_bps;
                r.duration_s = o.duration_s;
                t.completed = o.verified;
                t.verified = o.verified;
                t.failed = !o.verified;
                t.error = o.error.clone();
                t.failed_attempts = o.failed_attempts.clone();
                t.sender_pacing = o.pacing.clone();
                // The notices either end heard (as the simulator counts
                // them), and ATP's re-probes on them (seed 002 §4.3.3).
                if o.routing_sender.is_some() || o.routing_receiver.is_some() {
                    let ends = [&o.routing_sender, &o.routing_receiver];
                    let seen = |f: fn(&meshbed_net::notice::RoutingSeen) -> u64| {
                        ends.iter().filter_map(|e| e.as_ref()).map(f).sum::<u64>()
                    };
                    r.routing = Some(meshbed_sim::report::RoutingResult {
                        route_failed_notices: seen(|e| e.route_failed_notices),
                        route_reestablished_notices: seen(|e| e.route_reestablished_notices),
                        ..Default::default()
                    });
                    if let (Some(s), true) = (&o.routing_sender, f.protocol().is_some_and(|p| p.is_atp())) {
                        t.sender = Some(meshbed_sim::report::SenderDetail {
                            route_failure_probes: Some(s.route_failure_probes),
                            tcp: None,
                        });
                    }
                }
                t.retransmissions = o.retransmissions;
                t.feedback_packets = o.feedback_packets;
                r.trace = o.trace.clone();
                // Simulated time, as the simulator reports it.
                t.completion_time_s = o.verified.then_some(f.start_s + o.duration_s);
                if let Some((acked, finished_s)) = o.after_end {
                    // As the simulator: the run ends at duration_s, and a
                    // transfer not done by then is incomplete (not failed).
                    let active_s = (scenario.duration_s - f.start_s).max(0.0);
                    t.completed = false;
                    t.failed = false;
                    t.completion_time_s = None;
                    r.bytes_delivered = acked;
                    r.duration_s = active_s;
                    r.goodput_bps = meshbed_sim::report::goodput_bps(acked, active_s);
                    t.error = Some(format!(
                        "not finished by duration_s = {} s ({})",
                        scenario.duration_s,
                        match finished_s {
                            Some(s) if o.verified => format!("it finished at {s:.1} s, every byte verified"),
                            Some(s) => format!("it finished at {s:.1} s"),
                            None => "stopped then, every byte received by then verified".to_string(),
                        }
                    ));
                }
            }
            r
        })
        .collect();
    // The routing daemons' counters are the simulator's network-layer
    // counters of their node; without daemons nothing counted them.
    let net_per_node: Vec<meshbed_sim::NetCounters> =
        routers.iter().map(|r| r.as_ref().map(|r| r.net.clone()).unwrap_or_default()).collect();
    let mut net_total = meshbed_sim::NetCounters::default();
    net_per_node.iter().for_each(|c| net_total.add(c));
    if scenario.routing.is_dynamic() && routers.iter().any(Option::is_none) {
        return Err(plumbing::EmuError::Other("a routing daemon wrote no report (see its log)".into()));
    }
    let delivered: u64 = flows.iter().map(|f: &FlowResult| f.received_packets).sum();
    let routing_overhead_ratio =
        if scenario.routing.is_dynamic() { net_total.control_per_delivered(delivered) } else { None };
    let run = SimReport {
        seed: scenario.seed,
        duration_s: scenario.duration_s,
        events: medium.counters.events,
        // Wall-clock runs do not repeat bit for bit.
        trace_hash: None,
        flows,
        mac_total,
        mac_per_node: per_node,
        net_total,
        net_per_node,
        // The kernel forwards, unless AODV's daemons hold the data path.
        data_path: meshbed_routed::data_path_counting(&scenario.routing),
        routing_overhead_ratio,
        rate_histogram: Vec::new(),
    };
    Ok(EmuReport { run, medium })
}

/// One line of [`bench`].
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    pub workload: String,
    pub sim_goodput_kbps: f64,
    pub emu_goodput_kbps: f64,
    /// (emu − sim) / sim.
    pub goodput_error: f64,
    pub sim_frames_per_s: f64,
    pub emu_frames_per_s: f64,
    pub delivery_lateness: crate::realtime::LatenessSummary,
    pub event_lateness: crate::realtime::LatenessSummary,
}

/// Runs `scenario` in the simulator and on the emulator and compares the
/// aggregate goodput of its flows and the frames delivered per second.
pub fn compare(workload: &str, scenario: &Scenario, options: &EmuOptions) -> Result<BenchRow> {
    let sim = meshbed_sim::run(scenario).map_err(|e| plumbing::EmuError::Other(e.to_string()))?;
    let emu = run_scenario(scenario, options)?;
    let sim_g = sim.flows.iter().map(|f| f.goodput_bps).sum::<f64>() / 1e3;
    let emu_g = emu.run.flows.iter().map(|f| f.goodput_bps).sum::<f64>() / 1e3;
    Ok(BenchRow {
        workload: workload.to_string(),
        sim_goodput_kbps: sim_g,
        emu_goodput_kbps: emu_g,
        goodput_error: if sim_g > 0.0 { (emu_g - sim_g) / sim_g } else { 0.0 },
        sim_frames_per_s: sim.mac_total.delivered as f64 / scenario.duration_s,
        emu_frames_per_s: emu.medium.delivered_frames_per_s,
        delivery_lateness: emu.medium.delivery_lateness.clone(),
        event_lateness: emu.medium.event_lateness.clone(),
    })
}

/// The emulator's accuracy and speed: the saturated 6-hop 802.11a 24 Mbit/s
/// chain (the simulator bench's workload) emulated and simulated, then
/// one-hop saturated flows at 54 Mbit/s with shrinking packets, which raise
/// the frame rate until the medium can no longer keep up with real time
/// (its goodput falls below the simulator's and its lateness grows).
pub fn bench(seconds: f64, options: &EmuOptions) -> Result<Vec<BenchRow>> {
    let mut rows = Vec::new();
    let mut chain = Scenario::chain(6, 200.0, seconds);
    chain.radio.data_rate_kbps = 24_000;
    rows.push(compare("6-hop chain, 24 Mbit/s, 1500 B saturated UDP", &chain, options)?);
    for bytes in [1500u32, 500, 200, 100] {
        let mut one = Scenario::chain(1, 200.0, seconds);
        one.radio.data_rate_kbps = 54_000;
        // 54 Mbit/s needs the receiver nearer than 200 m at the default
        // power to decode at 21 dB SINR; 50 m keeps the link clean.
        one.topology = meshbed_sim::scenario::Topology::Chain { nodes: 2, spacing_m: 50.0 };
        if let Some(packet_bytes) = one.flows[0].packet_bytes_mut() {
            *packet_bytes = bytes;
        }
        rows.push(compare(&format!("1 hop, 54 Mbit/s, {bytes} B saturated UDP"), &one, options)?);
    }
    // One link's DCF caps it near 5 000 frames/s; independent links far
    // apart (no interference) multiply the frame rate the medium must carry.
    for pairs in [4u32, 8, 16] {
        rows.push(compare(
            &format!("{pairs} separate 1-hop links, 54 Mbit/s, 100 B"),
            &parallel_links(pairs, 100, seconds),
            options,
        )?);
    }
    Ok(rows)
}

/// `pairs` one-hop links 50 m long, 5 km apart (far below each other's
/// interference floor), each with a saturated UDP flow of `bytes`-byte
/// packets at 54 Mbit/s.
pub fn parallel_links(pairs: u32, bytes: u32, seconds: f64) -> Scenario {
    use meshbed_sim::scenario::{FlowSpec, NodeSpec, Topology, UdpRate};
    let mut s = Scenario::chain(1, 50.0, seconds);
    s.radio.data_rate_kbps = 54_000;
    let node = |x_m: f64| NodeSpec::at(x_m, 0.0);
    s.topology = Topology::Explicit {
        nodes: (0..pairs).flat_map(|k| [node(k as f64 * 5_000.0), node(k as f64 * 5_000.0 + 50.0)]).collect(),
    };
    s.flows = (0..pairs)
        .map(|k| {
            let mut f = FlowSpec::udp(2 * k, 2 * k + 1, UdpRate::Saturated);
            if let Some(packet_bytes) = f.packet_bytes_mut() {
                *packet_bytes = bytes;
            }
            f
        })
        .collect();
    s
}

/// Time as the medium sees it, for callers that need one (the CLI).
pub fn instant_from(d: std::time::Duration) -> Instant {
    Instant::from_nanos(d.as_nanos() as u64)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every key the emulator cannot run is refused by name, together, before
    /// anything is built (no namespace is made: these run without root).
    pub(crate) fn refused_keys(text: &str) -> Vec<String> {
        let s = Scenario::from_toml(text).unwrap();
        match build_medium(&s, true) {
            Err(crate::EmuError::Refused(r)) => r.unsupported.into_iter().map(|u| u.key).collect(),
            Err(e) => panic!("refused for another reason: {e}"),
            Ok(_) => Vec::new(),
        }
    }

    pub(crate) const CHAIN: &str = "duration_s = 3.0\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n";

    #[test]
    fn dsr_is_refused_naming_routing_kind_and_aodv_and_olsr_run_as_daemons() {
        let text = format!("{CHAIN}[routing]\nkind = \"dsr\"\n[[flows]]\nsrc = 0\ndst = 2\n");
        assert_eq!(refused_keys(&text), ["routing.kind"]);
        let msg = run_scenario(&Scenario::from_toml(&text).unwrap(), &EmuOptions::default()).err().unwrap().to_string();
        assert!(msg.starts_with("the emulator cannot run routing.kind = \"dsr\" ("), "{msg}");
        assert!(msg.contains("source route"), "{msg}");
        assert!(msg.ends_with("nothing was started"), "{msg}");
        for kind in ["aodv", "olsr"] {
            let text = format!("{CHAIN}[routing]\nkind = \"{kind}\"\n[[flows]]\nsrc = 0\ndst = 2\n");
            assert!(refused_keys(&text).is_empty(), "{kind}");
            // Without the meshbed binary there is no daemon to start: refused
            // before a namespace is made (this runs without root).
            let msg =
                run_scenario(&Scenario::from_toml(&text).unwrap(), &EmuOptions::default()).err().unwrap().to_string();
            assert!(msg.contains(&format!("routing.kind = \"{kind}\" needs the nodes' routing daemons")), "{msg}");
        }
        // Tables computed at time zero run.
        assert!(refused_keys(&format!("{CHAIN}[[flows]]\nsrc = 0\ndst = 2\n")).is_empty());
    }

    #[test]
    fn every_mobility_model_runs() {
        for table in [
            "model = \"random-waypoint\"\nwidth_m = 500.0\nheight_m = 100.0\nmin_speed_mps = 1.0\nmax_speed_mps = 5.0\n",
            "model = \"walk\"\nnode = 2\nfrom_x_m = 0.0\nfrom_y_m = 10.0\nspeed_mps = 1.0\n",
            "model = \"scripted\"\n[[mobility.nodes]]\nnode = 1\nwaypoints = [[1.0, 100.0, 50.0, 2.0]]\n",
        ] {
            let text = format!("{CHAIN}[[flows]]\nsrc = 0\ndst = 2\n[mobility]\n{table}");
            assert!(refused_keys(&text).is_empty(), "{table}");
        }
    }

    #[test]
    fn each_ignored_flow_key_is_refused_by_name_and_all_are_listed() {
        let cases = [
            ("protocol = \"atp-default\"\nbytes = 2000000000", "flows[0].bytes"),
            ("protocol = \"tcp-reno\"\nbytes = 1000\npacket_bytes = 600", "flows[0].packet_bytes"),
            ("protocol = \"atp-default\"\nbytes = 1000\n[flows.atp]\nkappa = 0.5", "flows[0].atp"),
            ("protocol = \"tcp-newreno\"\nbytes = 1000\n[flows.tcp]\nmax_cwnd_segments = 8", "flows[0].tcp.max_cwnd_segments"),
            (
                "protocol = \"tcp-cubic\"\nbytes = 1000\n[flows.tcp]\ninitial_cwnd_segments = 10\nhystart = false",
                "flows[0].tcp.hystart",
            ),
            (
                "protocol = \"mtl\"\nbytes = 1000\n[flows.mtl]\nalpha = 0.5\n[routing]\nkind = \"olsr\"\nmetric = \"etx\"",
                "flows[0].mtl",
            ),
            ("protocol = \"tcp-tahoe\"\nbytes = 100000\nbatch_packets = 10", "flows[0].batch_packets"),
            ("protocol = \"tcp-tahoe\"\nbytes = 1000\nread_rate_bps = 200000", "flows[0].read_rate_bps"),
            (
                "protocol = \"tcp-tahoe\"\nbytes = 1000\nread_rate_bps = 200000\nreceive_buffer_bytes = 100000",
                "flows[0].receive_buffer_bytes",
            ),
            ("traffic = \"echo\"", "flows[0].traffic"),
        ];
        for (keys, want) in cases {
            let text = format!("{CHAIN}[[flows]]\nsrc = 0\ndst = 2\n{keys}\n");
            let got = refused_keys(&text);
            assert!(got.iter().any(|k| k == want), "{keys}: refused {got:?}, expected {want}");
        }
        // Several at once: every one is named, in the file's order, each once.
        let text = format!(
            "{CHAIN}[routing]\nkind = \"dsr\"\n[radio.mac]\nfeedback_priority = true\n\
             [[flows]]\nsrc = 0\ndst = 2\ntraffic = \"echo\"\n\
             [[flows]]\nsrc = 2\ndst = 0\nprotocol = \"atp-default\"\nbytes = 100000\nbatch_packets = 10\n\
             [mobility]\nmodel = \"random-waypoint\"\nwidth_m = 500.0\nheight_m = 100.0\nmin_speed_mps = 1.0\nmax_speed_mps = 5.0\n"
        );
        assert_eq!(
            refused_keys(&text),
            ["routing.kind", "radio.mac.feedback_priority", "flows[0].traffic", "flows[1].batch_packets"]
        );
    }

    /// Linux's initial window, delayed ACKs and delayed-ACK timer run on
    /// the emulator (issue 27's anchor: the engine set as the kernel is);
    /// they reach the runtime's options, and a flow without them gets the
    /// presets'.
    #[test]
    fn the_initial_window_and_delayed_acks_run_and_reach_the_runtime() {
        let text = format!(
            "{CHAIN}[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"tcp-cubic\"\nbytes = 1000\n\
             [flows.tcp]\ninitial_cwnd_segments = 10\ndelayed_acks = true\ndelayed_ack_timeout_s = 0.04\n"
        );
        assert!(refused_keys(&text).is_empty(), "{:?}", refused_keys(&text));
        let s = Scenario::from_toml(&text).unwrap();
        let FlowKind::Transport(t) = &s.flows[0].kind else { panic!("a transport flow") };
        let tuning = crate::support::tcp_tuning(&t.settings);
        let ms40 = meshbed_core::Duration::from_millis(40);
        assert_eq!((tuning.initial_cwnd_segments, tuning.delayed_acks), (Some(10), Some(true)));
        assert_eq!(tuning.delayed_ack_timeout, Some(ms40));
        let mut tcp = meshbed_proto::tcp::TcpConfig::default();
        tuning.apply(&mut tcp);
        assert_eq!((tcp.initial_cwnd_segments, tcp.delayed_acks, tcp.delayed_ack_timeout), (10, true, ms40));
        let plain = Scenario::from_toml(&format!(
            "{CHAIN}[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"tcp-cubic\"\nbytes = 1000\n"
        ))
        .unwrap();
        let FlowKind::Transport(t) = &plain.flows[0].kind else { panic!("a transport flow") };
        assert_eq!(crate::support::tcp_tuning(&t.settings), Default::default());
    }

    #[test]
    fn a_transport_flow_with_a_trace_runs_with_both_engines_tracing() {
        let text =
            format!("{CHAIN}[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"atp-adaptive\"\nbytes = 1000\ntrace = true\n");
        assert!(refused_keys(&text).is_empty());
    }

    #[test]
    fn a_transport_flow_until_stop_s_runs_while_its_backlog_fits_in_memory() {
        let until = |stop_s: f64, rate: &str| {
            format!(
                "duration_s = 5000.0\n[radio]\nstandard = \"802.11a\"\ndata_rate_kbps = {rate}\n[topology]\nkind = \"chain\"\n\
                 nodes = 3\nspacing_m = 200.0\n[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"tcp-newreno\"\nstop_s = {stop_s:?}\n"
            )
        };
        // 24 Mbit/s for 300 s is 900 MB of backlog; for 400 s, 1.2 GB.
        assert!(refused_keys(&until(300.0, "24000")).is_empty());
        assert_eq!(refused_keys(&until(400.0, "24000")), ["flows[0].stop_s"]);
    }

    #[test]
    fn a_drawn_flow_is_refused_by_its_template_key() {
        let text = format!(
            "{CHAIN}[random_flows]\ncount = 3\n[random_flows.flow]\nprotocol = \"tcp-reno\"\nbytes = 100000\nbatch_packets = 10\n"
        );
        assert_eq!(refused_keys(&text), ["random_flows.flow.batch_packets"]);
    }

    #[test]
    fn the_network_alone_ignores_flow_keys_but_not_dsr() {
        let s = Scenario::from_toml(&format!(
            "{CHAIN}[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"atp-default\"\nbytes = 1000\ntrace = true\n"
        ))
        .unwrap();
        assert!(build_medium(&s, false).is_ok());
        let mut olsr = s.clone();
        olsr.routing = meshbed_sim::scenario::Routing::olsr(true);
        assert!(build_medium(&olsr, false).is_ok());
        let mut dsr = s.clone();
        dsr.routing = meshbed_sim::scenario::Routing::dsr();
        assert!(matches!(build_medium(&dsr, false), Err(crate::EmuError::Refused(_))));
    }

    #[test]
    fn a_flow_without_a_route_is_refused_as_the_simulator_refuses_it() {
        let far = Scenario::chain(2, 5000.0, 1.0);
        let err = build_medium(&far, true).err().unwrap().to_string();
        assert_eq!(err, meshbed_sim::check_routes(&far).unwrap_err().to_string());
        assert!(err.starts_with("flows[0].dst = 2: expected a node with a route"), "{err}");
    }
}
