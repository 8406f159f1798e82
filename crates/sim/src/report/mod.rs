//! What a run produces, as a table for people and JSON for scripts: one
//! [`FlowResult`] per flow (in parts, `result.rs`), the run's counters
//! ([`SimReport`]), the text table (`table.rs`), and here how the
//! simulator fills them in at the end of a run.

mod hint;
mod result;
mod table;

pub use result::{
    EchoResult, FeedbackTiming, FlowProtocol, FlowResult, HopRange, KernelTcpResult, PathInfoResult, PathInfoSample,
    RouteLogEntry, RoutingResult, SenderDetail, SenderPacing, TcpDetail, TransferResult, UdpResult,
    CLUSTER_GAP_FRACTION,
};

use crate::driver::Driver;
use crate::scenario::{Scenario, IP_UDP_HEADER_BYTES};
use crate::trace_kind::{RouteLogEvent, RouteLogSide};
use crate::transport::Transport;
use crate::{DataPathCounting, Flow, FlowKind, NetCounters, Packet, SimEvent, World};
use meshbed_core::Instant;
use meshbed_radio::{LinkRates, MacCounters, NodeId};
use serde::{Deserialize, Serialize};

/// Goodput: useful bits per second, `bytes · 8 / duration_s`, and 0 for a
/// flow that had no time (a zero or negative duration). The one formula
/// the simulator's report, the emulator's and the experiment layer's
/// summaries all use, so that their numbers agree to the bit.
pub fn goodput_bps(bytes: u64, duration_s: f64) -> f64 {
    if duration_s > 0.0 {
        bytes as f64 * 8.0 / duration_s
    } else {
        0.0
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SimReport {
    /// The run seed: the same seed reproduces the run bit for bit.
    pub seed: u64,
    pub duration_s: f64,
    /// Events executed.
    pub events: u64,
    /// FNV-1a hash of the event trace (time, kind, node of every event);
    /// `None` for a run that does not repeat bit for bit (the emulator's,
    /// in wall-clock time). Written as 16 hex digits, or null.
    #[serde(with = "hex_hash")]
    pub trace_hash: Option<u64>,
    pub flows: Vec<FlowResult>,
    pub mac_total: MacCounters,
    pub mac_per_node: Vec<MacCounters>,
    pub net_total: NetCounters,
    pub net_per_node: Vec<NetCounters>,
    /// Who counted the data packets in `net_total` and `net_per_node`
    /// (`forwarded`, `drops`): which of those counts are measurements.
    pub data_path: DataPathCounting,
    /// Routing control packets sent (every hop counted) per data packet
    /// delivered to its flow's destination (seed 003 §5.3's overhead ratio;
    /// Broch et al.'s normalised routing load). `None` without routing
    /// engines or with nothing delivered.
    pub routing_overhead_ratio: Option<f64>,
    /// Per link, the DATA attempts and successes at each rate (issue 13);
    /// empty, and left out of the JSON, unless some node runs rate control.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rate_histogram: Vec<LinkRates>,
}

/// A trace hash as people and files read it: 16 hex digits (as the result
/// store, the CSV files and Python have always had it), or null.
mod hex_hash {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(hash: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match hash {
            Some(h) => s.serialize_str(&format!("{h:016x}")),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(text) => u64::from_str_radix(&text, 16)
                .map(Some)
                .map_err(|_| D::Error::custom(format!("trace_hash = {text:?}: expected 16 hex digits"))),
            None => Ok(None),
        }
    }
}

impl SimReport {
    /// The trace hash as 16 hex digits, or `-` for a run without one.
    pub fn trace_hash_text(&self) -> String {
        self.trace_hash.map_or_else(|| "-".into(), |h| format!("{h:016x}"))
    }
}

/// What reached a flow's destination node: UDP packets, or the transport
/// sender's datagrams (duplicates and retransmissions included).
#[derive(Clone, Debug, Default)]
pub(crate) struct Arrivals {
    pub packets: u64,
    /// UDP payload bytes (a transport flow counts its bytes after verification).
    pub udp_payload_bytes: u64,
    pub first_at: Option<Instant>,
    pub last_at: Option<Instant>,
    pub delay_sum_ns: u128,
    pub max_seq_seen: Option<u64>,
    pub out_of_order: u64,
    /// The path fingerprint of the last packet, and when it changed.
    pub last_path: Option<u64>,
    pub path_changed_at: Vec<Instant>,
    /// The fewest and most hops the packets took.
    pub hops: Option<HopRange>,
    /// The source's route failed: the path packets took before, to compare
    /// with the next packet's (seed 002 Fig. 4(b)).
    pub path_before_failure: Option<u64>,
    /// Routes found again after a failure at the source, and how many of
    /// them took another path than before.
    pub routes_recomputed: u64,
    pub routes_new: u64,
    /// Transport feedback that reached the flow's sender.
    pub feedback: FeedbackArrivals,
    /// Whether the data and its feedback take the same path (seed 002
    /// §2.5 (ii)).
    pub symmetry: PathSymmetry,
}

/// Whether a transport flow's feedback comes back along its data's path
/// (seed 002 §2.5 (ii): "the chances of a connection stalling increase
/// when different paths are used" for data and ACKs): the last data
/// packet's path (destination included) against the reverse of the last
/// feedback packet's, compared whenever either arrives; each change of the
/// answer is kept for the route log (`paths-symmetric`,
/// `paths-asymmetric`).
#[derive(Clone, Debug, Default)]
pub(crate) struct PathSymmetry {
    data_path: Option<u64>,
    feedback_path_reversed: Option<u64>,
    symmetric: Option<bool>,
    /// When the answer changed (the first is when both paths were first
    /// known), where it was seen, and the new answer.
    pub changes: Vec<(Instant, RouteLogSide, bool)>,
}

impl PathSymmetry {
    /// A data packet arrived at the destination over `path` (the
    /// destination stepped on).
    pub(crate) fn data(&mut self, now: Instant, path: crate::net_stats::PathPrint) {
        self.data_path = Some(path.forward());
        self.compare(now, RouteLogSide::Destination);
    }

    /// A feedback packet arrived at the source over `path` (the source
    /// stepped on).
    pub(crate) fn feedback(&mut self, now: Instant, path: crate::net_stats::PathPrint) {
        self.feedback_path_reversed = Some(path.reversed());
        self.compare(now, RouteLogSide::Sender);
    }

    fn compare(&mut self, now: Instant, side: RouteLogSide) {
        let (Some(data), Some(feedback)) = (self.data_path, self.feedback_path_reversed) else { return };
        let symmetric = data == feedback;
        if self.symmetric != Some(symmetric) {
            self.symmetric = Some(symmetric);
            self.changes.push((now, side, symmetric));
        }
    }
}

/// When each feedback packet left the receiver and reached the sender, in
/// arrival order (for [`FeedbackTiming`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct FeedbackArrivals {
    pub times: Vec<(Instant, Instant)>,
}

impl FeedbackArrivals {
    pub(crate) fn record(&mut self, sent_at: Instant, arrived_at: Instant) {
        self.times.push((sent_at, arrived_at));
    }
}

impl Arrivals {
    /// A packet of the flow reached its destination node at `now`.
    pub(crate) fn record(&mut self, now: Instant, pkt: &Packet) {
        self.packets += 1;
        self.first_at.get_or_insert(now);
        self.last_at = Some(now);
        self.delay_sum_ns += now.saturating_since(pkt.created_at).as_nanos() as u128;
        match self.max_seq_seen {
            Some(m) if pkt.seq < m => self.out_of_order += 1,
            _ => self.max_seq_seen = Some(pkt.seq),
        }
        if self.last_path.is_some_and(|p| p != pkt.path.forward()) {
            self.path_changed_at.push(now);
        }
        self.hops = Some(HopRange::with(self.hops, pkt.hops_taken()));
        if let Some(before) = self.path_before_failure.take() {
            self.routes_recomputed += 1;
            self.routes_new += u64::from(before != pkt.path.forward());
        }
        self.last_path = Some(pkt.path.forward());
    }

    /// The flow's source lost its route: the next packet to arrive shows
    /// which route the recomputation chose. (A second failure before any
    /// packet arrives keeps the first comparison.)
    pub(crate) fn route_failed(&mut self) {
        if self.path_before_failure.is_none() {
            self.path_before_failure = self.last_path;
        }
    }

    /// A UDP packet reached its sink: counted, and its payload too.
    pub(crate) fn record_udp(&mut self, now: Instant, pkt: &Packet) {
        self.record(now, pkt);
        self.udp_payload_bytes += (pkt.size_bytes - IP_UDP_HEADER_BYTES) as u64;
    }
}

/// When a flow's delivered data reached each whole number of batches
/// (seed 004 §IV: "split the output ... in 11 batches, each 5,000 packets").
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DeliveryMilestones {
    /// Bytes per batch (never zero).
    batch_bytes: u64,
    /// `at[k]`: the first instant with at least (k + 1) batches delivered.
    pub at: Vec<Instant>,
}

impl DeliveryMilestones {
    /// `None` for a batch of zero bytes (a flow without full data packets).
    pub(crate) fn new(batch_bytes: u64) -> Option<DeliveryMilestones> {
        (batch_bytes > 0).then(|| DeliveryMilestones { batch_bytes, at: Vec::new() })
    }

    /// The flow has handed up `delivered_bytes` in all by `now`: every batch
    /// boundary crossed since the last call is stamped `now`.
    pub(crate) fn record(&mut self, now: Instant, delivered_bytes: u64) {
        let reached = delivered_bytes / self.batch_bytes;
        while (self.at.len() as u64) < reached {
            self.at.push(now);
        }
    }
}

/// One flow's result at the end of a run that ended at `end`.
fn flow_result(world: &World, flow: u32, f: &Flow, end: Instant) -> FlowResult {
    let a = &f.arrivals;
    let hops = world.router.table.hop_count(f.spec.src, f.spec.dst);
    let mut r = FlowResult::blank(flow, &f.spec, hops, f.stop.saturating_since(f.start).as_secs_f64());
    r.received_packets = a.packets;
    r.mean_delay_s = (a.packets > 0).then(|| (a.delay_sum_ns / a.packets as u128) as f64 / 1e9);
    r.out_of_order = a.out_of_order;
    r.bytes_delivered = a.udp_payload_bytes;
    r.net = world.net.flows[flow as usize].clone();
    // Packets received over packets (requests) sent.
    let ratio = |sent: u64| (sent > 0).then(|| a.packets as f64 / sent as f64);
    let mut routing = RoutingResult {
        path_changes: a.path_changed_at.len() as u64,
        routes_recomputed: a.routes_recomputed,
        routes_new: a.routes_new,
        hops_observed: a.hops,
        ..RoutingResult::default()
    };
    match &f.kind {
        FlowKind::Udp(src) => {
            r.sent_packets = src.sent_packets;
            r.udp.as_mut().expect("a UDP flow has UDP traffic").delivery_ratio = ratio(src.sent_packets);
        }
        FlowKind::Echo(p) => {
            // Requests out, requests that reached the destination.
            r.sent_packets = p.requests;
            r.udp.as_mut().expect("an echo flow is UDP traffic").delivery_ratio = ratio(p.requests);
            r.trace = f.echo_trace.clone();
            let rtts_s: Vec<f64> = p.rtts.iter().map(|d| d.as_secs_f64()).collect();
            r.echo = Some(EchoResult {
                requests: p.requests,
                lost: p.lost,
                stale_replies: p.stale_replies,
                rtt_s: (!p.rtts.is_empty()).then(|| meshbed_core::stats::sample_stats(&rtts_s)),
                rtt_samples_s: rtts_s,
            });
        }
        FlowKind::Transport(t) => {
            r.sent_packets = t.sender_stats().datagrams_sent;
            r.bytes_delivered = t.bytes_delivered;
            // Start to the sender's Finished; an incomplete flow is charged
            // the whole run from its start.
            r.duration_s = t.completed_at.unwrap_or(end).saturating_since(f.start).as_secs_f64();
            r.trace = t.trace.clone();
            let blank = r.transfer.take().expect("a transport flow has a transfer");
            r.transfer = Some(transfer_result(blank, f, t, end));
            routing.route_failed_notices = t.route_failed_notices;
            routing.route_reestablished_notices = t.route_reestablished_notices;
            routing.route_log = t
                .route_log
                .iter()
                .map(|&(at, side, up)| {
                    let side = match side {
                        crate::transport::Side::Sender => RouteLogSide::Sender,
                        crate::transport::Side::Receiver => RouteLogSide::Receiver,
                    };
                    let event = if up { RouteLogEvent::RouteReestablished } else { RouteLogEvent::RouteFailed };
                    RouteLogEntry { t_s: at.as_secs_f64(), side, event }
                })
                .collect();
        }
    }
    routing.route_log.extend(a.path_changed_at.iter().map(|&at| RouteLogEntry {
        t_s: at.as_secs_f64(),
        side: RouteLogSide::Destination,
        event: RouteLogEvent::PathChanged,
    }));
    // Static routes are what the file wrote: only routing engines' paths
    // are reported (the routing part is left out without them).
    let engines = world.router.dynamic.is_some();
    routing.route_log.extend(a.symmetry.changes.iter().filter(|_| engines).map(|&(at, side, symmetric)| {
        RouteLogEntry {
            t_s: at.as_secs_f64(),
            side,
            event: if symmetric { RouteLogEvent::PathsSymmetric } else { RouteLogEvent::PathsAsymmetric },
        }
    }));
    // Stable: at one instant, notices before the path change they caused.
    routing.route_log.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    // Without routing engines no route fails or changes: the part is left
    // out rather than written as zeros.
    debug_assert!(
        world.router.dynamic.is_some()
            || routing == RoutingResult { hops_observed: routing.hops_observed, ..RoutingResult::default() },
        "{routing:?}"
    );
    r.routing = world.router.dynamic.is_some().then_some(routing);
    r.goodput_bps = goodput_bps(r.bytes_delivered, r.duration_s);
    r
}

/// A transport flow's transfer at the end of a run that ended at `end`:
/// `blank` (its size and batch size) with what its ends did.
fn transfer_result(blank: TransferResult, f: &Flow, t: &Transport, end: Instant) -> TransferResult {
    let verified = t.verified();
    TransferResult {
        completed: t.completed_at.is_some(),
        verified,
        failed: t.error.is_some() || !verified,
        completion_time_s: t.completed_at.map(|at| at.as_secs_f64()),
        retransmissions: t.sender_stats().retransmissions,
        feedback_packets: t.receiver_stats().feedback_packets,
        error: match (&t.error, t.completed_at) {
            (Some(e), _) => Some(e.clone()),
            (None, None) => {
                Some(format!("incomplete: {} of {} bytes delivered when the run ended", t.bytes_delivered, t.bytes))
            }
            (None, Some(_)) => None,
        },
        path: (t.path.datagrams > 0).then(|| t.path.clone()),
        sender: Some(t.sender_detail(t.completed_at.unwrap_or(end))),
        delivery_milestones_s: f
            .milestones
            .as_ref()
            .map_or_else(Vec::new, |m| m.at.iter().map(|at| at.as_secs_f64()).collect()),
        feedback: FeedbackTiming::of(&f.arrivals.feedback.times),
        path_info: (t.path_info_updates > 0 || t.peer_unresponsive_events > 0).then(|| PathInfoResult {
            updates: t.path_info_updates,
            sender: t.path_info[0].map(PathInfoSample::from),
            receiver: t.path_info[1].map(PathInfoSample::from),
            peer_unresponsive_events: t.peer_unresponsive_events,
        }),
        ..blank
    }
}

/// The report of a run of `scenario` that ended at `end`.
pub(crate) fn assemble(
    scenario: &Scenario,
    world: &World,
    driver: &Driver<Packet, SimEvent>,
    end: Instant,
) -> SimReport {
    // A transfer that delivered nothing for want of a route says so.
    let flows: Vec<FlowResult> = world
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| hint::no_route(scenario, world, flow_result(world, i as u32, f, end), end))
        .collect();
    let medium = driver.net.medium();
    let per_node: Vec<MacCounters> = (0..medium.node_count()).map(|n| medium.counters(n as NodeId).clone()).collect();
    let mut mac_total = MacCounters::default();
    for c in &per_node {
        mac_total.add(c);
    }
    let mut net_total = NetCounters::default();
    for c in &world.net.nodes {
        net_total.add(c);
    }
    let delivered: u64 = flows.iter().map(|f| f.received_packets).sum();
    let routing_overhead_ratio = (world.router.dynamic.is_some() && delivered > 0)
        .then(|| net_total.control_packets_sent as f64 / delivered as f64);
    SimReport {
        seed: scenario.seed,
        duration_s: scenario.duration_s,
        events: driver.events(),
        trace_hash: Some(driver.trace_hash()),
        flows,
        mac_total,
        mac_per_node: per_node,
        net_total,
        net_per_node: world.net.nodes.clone(),
        data_path: DataPathCounting::Simulator,
        routing_overhead_ratio,
        rate_histogram: medium.rate_histogram(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milestones_stamp_each_batch_boundary_once_at_the_delivery_that_crossed_it() {
        assert_eq!(DeliveryMilestones::new(0), None);
        let mut m = DeliveryMilestones::new(100).unwrap();
        let t = |s: u64| Instant::ZERO + meshbed_core::Duration::from_secs(s);
        m.record(t(1), 99);
        assert!(m.at.is_empty(), "one byte short of a batch");
        m.record(t(2), 100);
        m.record(t(3), 150);
        // One delivery crossing two boundaries stamps both.
        m.record(t(4), 310);
        assert_eq!(m.at, vec![t(2), t(4), t(4)]);
    }

    #[test]
    fn symmetry_is_logged_when_both_paths_are_known_and_each_time_it_changes() {
        use crate::net_stats::PathPrint;
        let print = |nodes: &[u32]| nodes[1..].iter().fold(PathPrint::start(nodes[0]), |p, &n| p.step(n));
        let t = |ms: u64| Instant::ZERO + meshbed_core::Duration::from_millis(ms);
        let mut s = PathSymmetry::default();
        s.data(t(1), print(&[0, 1, 2]));
        assert!(s.changes.is_empty(), "no feedback yet");
        s.feedback(t(2), print(&[2, 1, 0]));
        s.data(t(3), print(&[0, 1, 2]));
        // The ACKs take another relay: asymmetric until the data follows.
        s.feedback(t(4), print(&[2, 3, 0]));
        s.feedback(t(5), print(&[2, 3, 0]));
        s.data(t(6), print(&[0, 3, 2]));
        use RouteLogSide::{Destination, Sender};
        assert_eq!(s.changes, vec![(t(2), Sender, true), (t(4), Sender, false), (t(6), Destination, true)]);
    }
}
