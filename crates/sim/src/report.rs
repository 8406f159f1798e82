//! What a run produces, as a table for people and JSON for scripts.

use crate::driver::Driver;
use crate::net_stats::FlowNet;
use crate::scenario::{Scenario, Traffic, IP_UDP_HEADER_BYTES};
use crate::trace_kind::{RouteLogEvent, RouteLogSide};
use crate::transport::{PathObservation, TraceRecord};
use crate::{Flow, FlowKind, NetCounters, Packet, SimEvent, World};
use meshbed_core::Instant;
use meshbed_proto::Protocol;
use meshbed_radio::{LinkRates, MacCounters, NodeId};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FlowResult {
    pub flow: u32,
    pub src: u32,
    pub dst: u32,
    /// Route length in hops (`None` when there is no route).
    pub hops: Option<u32>,
    /// When the flow starts, seconds.
    pub start_s: f64,
    /// The transport protocol; `None` for UDP traffic. Written as its
    /// scenario name (`atp-default`, ...) or `udp`, as files always had it.
    #[serde(with = "protocol_or_udp")]
    pub protocol: Option<Protocol>,
    /// The UDP traffic kind; `None` for a transport flow.
    pub traffic: Option<Traffic>,
    /// UDP packets, or datagrams the transport sender sent (retransmissions
    /// included).
    pub sent_packets: u64,
    /// Packets that reached the destination node (for a transport flow: the
    /// sender's datagrams, duplicates and retransmissions included).
    pub received_packets: u64,
    /// UDP payload bytes delivered, or for a transport flow the same as
    /// `bytes_delivered` (goodput counts only these).
    pub received_payload_bytes: u64,
    /// Useful bits per second: over the flow's active time for UDP; for a
    /// transport flow `bytes_delivered` over `duration_s`.
    pub goodput_bps: f64,
    /// Mean one-way network delay of the packets counted in `received_packets`.
    pub mean_delay_s: f64,
    pub out_of_order: u64,
    /// The transfer size of a transport flow.
    pub transfer_bytes: Option<u64>,
    /// Application bytes the receiver handed up in order (each checked
    /// against the data sent), or UDP payload bytes.
    pub bytes_delivered: u64,
    /// A transport flow whose sender finished and whose receiver handed up
    /// exactly the data sent. Always false for UDP, which has no transfer.
    pub completed: bool,
    /// Every byte handed up so far equals the data sent (transport only).
    pub verified: bool,
    /// A transport flow stopped by an engine failure or a byte mismatch, as
    /// opposed to one the end of the run cut short.
    pub failed: bool,
    /// Simulated time at which the flow completed.
    pub completion_time_s: Option<f64>,
    /// Transport: start to the sender's `Finished` when complete, start to
    /// the end of the run otherwise. UDP: the active (sending) time.
    pub duration_s: f64,
    /// Segments the transport sender sent again.
    pub retransmissions: u64,
    /// Feedback packets (ATP) or ACKs (TCP) the receiver sent.
    pub feedback_packets: u64,
    /// Why a transport flow did not complete (engine failure, byte mismatch,
    /// or the run ended first); `None` when it completed or for UDP.
    pub error: Option<String>,
    /// Header fields of the sender's datagrams as they reached the
    /// destination node (what the relays wrote on the way).
    pub path: Option<PathObservation>,
    /// Route-failure and re-establishment notices the flow's ends got from
    /// routing (ELFN; only with routing engines).
    pub route_failed_notices: u64,
    pub route_reestablished_notices: u64,
    /// The flow's route history in time order: notices to either end
    /// (`route-failed`, `route-reestablished`) and the moments its packets
    /// reached the destination over a new path (`path-changed`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub route_log: Vec<RouteLogEntry>,
    /// How often the path of the packets reaching the destination changed
    /// from one packet to the next (seed 002 §2.3, Fig. 4b's "different
    /// route").
    pub path_changes: u64,
    /// Route failures at the source after which packets arrived again, and
    /// how many of those arrived over another path than before the failure
    /// (seed 002 §2.3, Fig. 4(b): "about 90% of the time, a different route
    /// is chosen").
    pub routes_recomputed: u64,
    pub routes_new: u64,
    /// UDP: packets received over packets sent; `None` for a transport flow
    /// (whose `received_packets` includes retransmissions).
    pub delivery_ratio: Option<f64>,
    /// The network layer's losses of the flow's packets by cause, and the
    /// route discoveries they waited for.
    pub net: FlowNet,
    /// What the transport sender did that only its protocol has (`None`
    /// for UDP).
    pub sender: Option<SenderDetail>,
    /// With `batch_packets` set on the flow: the bytes of one batch, and the
    /// times, seconds, at which the data handed up first reached 1, 2, ...
    /// batches (seed 004 §IV's batch-means method); empty otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delivery_milestones_s: Vec<f64>,
    /// When the transport feedback (ATP's feedback, TCP's ACKs) left the
    /// receiver and reached the sender, summarised (seed 000 §V.A.2, Fig.
    /// 7b: feedback arriving in clusters); `None` for UDP or with fewer than
    /// three feedback packets arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<FeedbackTiming>,
    /// Engine trace samples (an echo flow's `rtt_s`), kept only when the
    /// flow sets `trace = true`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trace: Vec<TraceRecord>,
    /// Echo traffic (adaptive ping, seed 003 §5.4): requests, losses and
    /// the RTT statistics; `None` for other flows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub echo: Option<EchoResult>,
    /// What routing told the transport ends of their paths and what they
    /// told routing (MTL's cross-layer exchange, seed 004 §III.B); `None`
    /// when nothing was exchanged (static routing, UDP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_info: Option<PathInfoResult>,
}

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

/// A transport flow's cross-layer exchange with routing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PathInfoResult {
    /// Path information delivered to either end (each a change).
    pub updates: u64,
    /// The last delivered to the sender (path to the receiver) and to the
    /// receiver (path back), if any.
    pub sender: Option<PathInfoSample>,
    pub receiver: Option<PathInfoSample>,
    /// `PeerUnresponsive` events the ends passed to their node's routing.
    pub peer_unresponsive_events: u64,
}

/// One delivery of path information (`meshbed_proto::PathInfo`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathInfoSample {
    pub hop_count: u32,
    /// P_max = max over the route's links of 1 − 1/ETX (seed 004 eq. 4).
    pub max_link_loss: f64,
    pub link_rate_bps: u64,
}

impl From<meshbed_proto::PathInfo> for PathInfoSample {
    fn from(p: meshbed_proto::PathInfo) -> Self {
        PathInfoSample { hop_count: p.hop_count, max_link_loss: p.max_link_loss, link_rate_bps: p.link_rate_bps }
    }
}

/// How a flow's feedback packets were spaced when the receiver sent them
/// and when they reached the sender (seed 000 §V.A.2, Fig. 7b: "a cluster
/// of feedback packets received at 0.15 seconds ... occurs because we do
/// not use a priority queue for feedback packets"). Gaps are between
/// consecutive arrivals, each with the gap between the same two packets'
/// departures, so the two sides compare the same packets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FeedbackTiming {
    /// Feedback packets that reached the sender.
    pub packets: u64,
    /// Mean time from the receiver to the sender, seconds.
    pub mean_delay_s: f64,
    /// Coefficient of variation (sd / mean) of the gaps between
    /// consecutive feedback packets as the receiver sent them, and as they
    /// reached the sender: the network clusters feedback when the second is
    /// larger. `None` when the gaps' mean is zero.
    pub sent_gap_cv: Option<f64>,
    pub arrival_gap_cv: Option<f64>,
    /// Share of consecutive arrivals less than [`CLUSTER_GAP_FRACTION`] of
    /// their sending gap apart: feedback held back on the reverse path and
    /// then delivered together with the next one (ack compression).
    pub clustered_share: f64,
}

/// An arrival gap below this fraction of its sending gap counts as
/// clustered: a quarter keeps the epoch-driven spacing of ATP's feedback
/// (E = 40 ms for the aggressive and adaptive variants) clear of
/// contention jitter of a frame or two (~1 ms per 1500-byte frame at 24
/// Mbit/s) while catching Fig. 7b's pile-ups.
pub const CLUSTER_GAP_FRACTION: f64 = 0.25;

impl FeedbackTiming {
    /// The timing of feedback packets, each `(sent_at, arrived_at)`, in
    /// arrival order; `None` for fewer than three (two gaps).
    pub fn of(feedback: &[(Instant, Instant)]) -> Option<FeedbackTiming> {
        if feedback.len() < 3 {
            return None;
        }
        // Whole nanoseconds, exact in an f64 (2^53 ns is 104 days).
        let ns = |later: Instant, earlier: Instant| later.saturating_since(earlier).as_nanos() as f64;
        let (sent, arrived): (Vec<f64>, Vec<f64>) =
            feedback.windows(2).map(|w| (ns(w[1].0, w[0].0), ns(w[1].1, w[0].1))).unzip();
        let cv = |gaps: &[f64]| {
            let m = meshbed_core::stats::sample_stats(gaps);
            (m.mean > 0.0).then(|| m.sd / m.mean)
        };
        let clustered = sent.iter().zip(&arrived).filter(|(s, a)| **a < CLUSTER_GAP_FRACTION * **s).count();
        let delays: Vec<f64> = feedback.iter().map(|&(s, a)| ns(a, s) / 1e9).collect();
        Some(FeedbackTiming {
            packets: feedback.len() as u64,
            mean_delay_s: meshbed_core::stats::sample_stats(&delays).mean,
            sent_gap_cv: cv(&sent),
            arrival_gap_cv: cv(&arrived),
            clustered_share: clustered as f64 / sent.len() as f64,
        })
    }
}

/// An echo flow's requests and round-trip times ([`crate::echo`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EchoResult {
    /// Requests sent.
    pub requests: u64,
    /// Requests given up unanswered after `echo_timeout_s`.
    pub lost: u64,
    /// Replies that came after their request was given up (ignored).
    pub stale_replies: u64,
    /// RTT statistics in seconds over the answered requests (seed 003
    /// Table 4: min, median, max, mean, sd); `None` when none was answered.
    pub rtt_s: Option<meshbed_core::stats::SampleStats>,
    /// Every RTT, seconds, in order (for statistics pooled over runs; not
    /// in the JSON, where `trace = true` gives them as trace samples).
    #[serde(skip)]
    pub rtt_samples_s: Vec<f64>,
}

impl FlowResult {
    /// Its protocol as files name it ([`protocol_name`]: `udp` for UDP).
    pub fn protocol_name(&self) -> &'static str {
        protocol_name(self.protocol)
    }

    /// Flow `flow` of `spec` before anything is measured: the scenario's
    /// description (protocol or UDP traffic, transfer size), `hops` and
    /// `duration_s`, every count zero.
    pub fn blank(flow: u32, spec: &crate::scenario::FlowSpec, hops: Option<u32>, duration_s: f64) -> FlowResult {
        FlowResult {
            flow,
            src: spec.src,
            dst: spec.dst,
            hops,
            start_s: spec.start_s,
            protocol: spec.protocol(),
            traffic: spec.traffic(),
            sent_packets: 0,
            received_packets: 0,
            received_payload_bytes: 0,
            goodput_bps: 0.0,
            mean_delay_s: 0.0,
            out_of_order: 0,
            transfer_bytes: spec.transport().and_then(|t| t.amount.bytes()),
            bytes_delivered: 0,
            completed: false,
            verified: false,
            failed: false,
            completion_time_s: None,
            duration_s,
            retransmissions: 0,
            feedback_packets: 0,
            error: None,
            path: None,
            route_failed_notices: 0,
            route_reestablished_notices: 0,
            route_log: Vec::new(),
            path_changes: 0,
            routes_recomputed: 0,
            routes_new: 0,
            delivery_ratio: None,
            net: FlowNet::default(),
            sender: None,
            batch_bytes: spec.batch_bytes(),
            delivery_milestones_s: Vec::new(),
            feedback: None,
            trace: Vec::new(),
            echo: None,
            path_info: None,
        }
    }
}

/// A transport sender's protocol-specific counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SenderDetail {
    /// ATP: "route failed" notices that sent it back to probing.
    pub route_failure_probes: Option<u64>,
    /// TCP: slow starts, timeouts, RTOs, ELFN standbys.
    pub tcp: Option<TcpDetail>,
}

/// A TCP sender's counts for seed 002 §2 (Figs. 2–3) and TCP-ELFN.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpDetail {
    pub slow_start_entries: u64,
    pub slow_start_time_s: f64,
    pub timeouts: u64,
    pub rtt_samples: u64,
    pub max_rto_s: f64,
    pub elfn_standbys: u64,
    pub elfn_standby_time_s: f64,
    pub elfn_probes: u64,
}

/// One entry of a flow's route history.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RouteLogEntry {
    pub t_s: f64,
    pub side: RouteLogSide,
    pub event: RouteLogEvent,
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

/// A flow's protocol as files name it: the transport's scenario name, or
/// `udp` for UDP traffic (saturated, CBR or echo: [`FlowResult::traffic`]).
pub fn protocol_name(protocol: Option<Protocol>) -> &'static str {
    protocol.map_or("udp", Protocol::name)
}

/// [`FlowResult::protocol`] in files: [`protocol_name`], read back the same.
mod protocol_or_udp {
    use meshbed_proto::Protocol;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(p: &Option<Protocol>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(super::protocol_name(*p))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Protocol>, D::Error> {
        let name = String::deserialize(d)?;
        match name.as_str() {
            "udp" => Ok(None),
            other => other.parse().map(Some).map_err(serde::de::Error::custom),
        }
    }
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

    /// A plain-text table: flows, then MAC counters.
    pub fn to_table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "seed {}  simulated {:.3} s  events {}  trace {}",
            self.seed,
            self.duration_s,
            self.events,
            self.trace_hash_text()
        );
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "{:>4} {:>4} {:>4} {:>4} {:>14} {:>10} {:>10} {:>14} {:>11} {:>8} {:>10} {:>6}",
            "flow",
            "src",
            "dst",
            "hops",
            "protocol",
            "sent",
            "received",
            "goodput Mb/s",
            "delay ms",
            "done",
            "time s",
            "retx"
        );
        for f in &self.flows {
            let hops = f.hops.map_or("-".to_string(), |h| h.to_string());
            let kind = match (f.traffic, f.protocol) {
                (Some(Traffic::Saturated), _) => "udp saturated",
                (Some(Traffic::Cbr), _) => "udp cbr",
                (Some(Traffic::Echo), _) => "udp echo",
                (None, p) => protocol_name(p),
            };
            let (done, time) = match (f.transfer_bytes, f.completed, f.failed) {
                (None, ..) => ("-", "-".to_string()),
                (Some(_), true, _) => ("yes", format!("{:.3}", f.duration_s)),
                (Some(_), false, false) => ("no", "-".to_string()),
                (Some(_), false, true) => ("FAILED", "-".to_string()),
            };
            let retx = if f.transfer_bytes.is_some() { f.retransmissions.to_string() } else { "-".to_string() };
            let _ = writeln!(
                s,
                "{:>4} {:>4} {:>4} {:>4} {:>14} {:>10} {:>10} {:>14.3} {:>11.2} {:>8} {:>10} {:>6}",
                f.flow,
                f.src,
                f.dst,
                hops,
                kind,
                f.sent_packets,
                f.received_packets,
                f.goodput_bps / 1e6,
                f.mean_delay_s * 1e3,
                done,
                time,
                retx
            );
        }
        for f in &self.flows {
            if let Some(e) = &f.error {
                let _ = writeln!(s, "flow {}: {e}", f.flow);
            }
            if let Some(e) = &f.echo {
                let rtt = e.rtt_s.as_ref().map_or("no replies".to_string(), |r| {
                    format!(
                        "{} RTTs, ms min/median/mean/max/sd {:.2}/{:.2}/{:.2}/{:.2}/{:.2}",
                        r.n,
                        r.min * 1e3,
                        r.median * 1e3,
                        r.mean * 1e3,
                        r.max * 1e3,
                        r.sd * 1e3
                    )
                });
                let _ = writeln!(s, "flow {} echo: {} requests, {} lost; {rtt}", f.flow, e.requests, e.lost);
            }
        }
        let m = &self.mac_total;
        let _ = writeln!(s);
        let _ = writeln!(s, "MAC totals (all nodes)");
        let rows: [(&str, u64); 14] = [
            ("data transmission attempts", m.data_tx_attempts),
            ("retransmissions", m.retransmissions),
            ("acknowledged", m.acked),
            ("ACK timeouts", m.ack_timeouts),
            ("RTS sent / CTS sent", m.rts_sent),
            ("CTS timeouts", m.cts_timeouts),
            ("drop: queue overflow", m.drop_queue_overflow),
            ("drop: retry limit", m.drop_retry_limit),
            ("rx lost: collision/corruption", m.rx_collision_or_corruption),
            ("rx lost: receiver busy", m.rx_while_busy),
            ("rx lost: below sensitivity", m.rx_below_sensitivity),
            ("duplicates dropped", m.duplicates_dropped),
            ("delivered to next layer", m.delivered),
            ("broadcasts sent", m.broadcasts_sent),
        ];
        for (name, v) in rows {
            if name.starts_with("RTS") {
                let _ = writeln!(s, "  {:<32} {:>10} / {}", name, v, m.cts_sent);
            } else {
                let _ = writeln!(s, "  {:<32} {:>10}", name, v);
            }
        }
        let n = &self.net_total;
        let _ = writeln!(s, "  {:<32} {:>10}", "forwarded by relays", n.forwarded);
        let _ = writeln!(s, "  {:<32} {:>10}", "drop: no route", n.drops.no_route);
        if let Some(ratio) = self.routing_overhead_ratio {
            let _ = writeln!(s);
            let _ = writeln!(s, "Routing (all nodes)");
            let rows: [(&str, String); 10] = [
                ("control packets / bytes sent", format!("{} / {}", n.control_packets_sent, n.control_bytes_sent)),
                ("overhead: control per delivered", format!("{ratio:.3}")),
                ("link failures (MAC retry limit)", n.link_failures.to_string()),
                ("routes found or changed / lost", format!("{} / {}", n.route_changes, n.routes_lost)),
                ("packets held for discovery", n.held.to_string()),
                ("discoveries: done / failed", format!("{} / {}", n.discoveries.completed, n.discoveries.failed)),
                (
                    "discovery time: mean / max ms",
                    format!(
                        "{} / {:.1}",
                        n.discoveries.mean_s().map_or("-".into(), |m| format!("{:.1}", m * 1e3)),
                        n.discoveries.max_ns as f64 / 1e6
                    ),
                ),
                (
                    "drop: discovery timeout / full",
                    format!("{} / {}", n.drops.discovery_timeout, n.drops.discovery_overflow),
                ),
                ("drop: lost on a broken link", n.drops.retry_limit.to_string()),
                ("drop: TTL expired", n.drops.ttl_expired.to_string()),
            ];
            for (name, v) in rows {
                let _ = writeln!(s, "  {:<32} {:>10}", name, v);
            }
        }
        if !self.rate_histogram.is_empty() {
            let _ = writeln!(s);
            let _ = writeln!(s, "DATA rates per link (attempts/acked at each rate in Mb/s)");
            for l in &self.rate_histogram {
                let _ = write!(s, "  {:>4} -> {:<4} {:<9}", l.tx, l.rx, l.rate_control.name());
                for c in &l.rates {
                    let _ = write!(s, " {}: {}/{}", c.rate_kbps as f64 / 1000.0, c.attempts, c.successes);
                }
                let _ = writeln!(s);
            }
        }
        s
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
    /// The source's route failed: the path packets took before, to compare
    /// with the next packet's (seed 002 Fig. 4(b)).
    pub path_before_failure: Option<u64>,
    /// Routes found again after a failure at the source, and how many of
    /// them took another path than before.
    pub routes_recomputed: u64,
    pub routes_new: u64,
    /// Transport feedback that reached the flow's sender.
    pub feedback: FeedbackArrivals,
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
        if self.last_path.is_some_and(|p| p != pkt.path_hash) {
            self.path_changed_at.push(now);
        }
        if let Some(before) = self.path_before_failure.take() {
            self.routes_recomputed += 1;
            self.routes_new += u64::from(before != pkt.path_hash);
        }
        self.last_path = Some(pkt.path_hash);
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
    let mean_delay_s = if a.packets > 0 { (a.delay_sum_ns / a.packets as u128) as f64 / 1e9 } else { 0.0 };
    let hops = world.router.table.hop_count(f.spec.src, f.spec.dst);
    let mut r = FlowResult::blank(flow, &f.spec, hops, f.stop.saturating_since(f.start).as_secs_f64());
    r.protocol = None;
    r.traffic = f.spec.traffic();
    r.transfer_bytes = None;
    r.received_packets = a.packets;
    r.received_payload_bytes = a.udp_payload_bytes;
    r.mean_delay_s = mean_delay_s;
    r.out_of_order = a.out_of_order;
    r.bytes_delivered = a.udp_payload_bytes;
    r.path_changes = a.path_changed_at.len() as u64;
    r.routes_recomputed = a.routes_recomputed;
    r.routes_new = a.routes_new;
    let path_log = a.path_changed_at.iter().map(|&t| (t, RouteLogSide::Destination, RouteLogEvent::PathChanged));
    r.net = world.net.flows[flow as usize].clone();
    match &f.kind {
        FlowKind::Udp(src) => {
            r.sent_packets = src.sent_packets;
            r.delivery_ratio = (src.sent_packets > 0).then(|| a.packets as f64 / src.sent_packets as f64);
        }
        FlowKind::Echo(p) => {
            // Requests out, requests that reached the destination.
            r.sent_packets = p.requests;
            r.delivery_ratio = (p.requests > 0).then(|| a.packets as f64 / p.requests as f64);
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
            let sender = t.sender_stats();
            r.protocol = Some(t.protocol);
            r.traffic = None;
            r.sent_packets = sender.datagrams_sent;
            r.received_payload_bytes = t.bytes_delivered;
            r.transfer_bytes = f.spec.transport().and_then(|t| t.amount.bytes());
            r.bytes_delivered = t.bytes_delivered;
            r.completed = t.completed_at.is_some();
            r.verified = t.verified();
            r.failed = t.error.is_some() || !r.verified;
            r.completion_time_s = t.completed_at.map(|at| at.as_secs_f64());
            // Start to the sender's Finished; an incomplete flow is charged
            // the whole run from its start.
            r.duration_s = t.completed_at.unwrap_or(end).saturating_since(f.start).as_secs_f64();
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
            if let Some(m) = &f.milestones {
                r.delivery_milestones_s = m.at.iter().map(|at| at.as_secs_f64()).collect();
            }
            r.trace = t.trace.clone();
            r.feedback = FeedbackTiming::of(&a.feedback.times);
            r.sender = Some(t.sender_detail(t.completed_at.unwrap_or(end)));
            r.path_info = (t.path_info_updates > 0 || t.peer_unresponsive_events > 0).then(|| PathInfoResult {
                updates: t.path_info_updates,
                sender: t.path_info[0].map(PathInfoSample::from),
                receiver: t.path_info[1].map(PathInfoSample::from),
                peer_unresponsive_events: t.peer_unresponsive_events,
            });
            r.route_failed_notices = t.route_failed_notices;
            r.route_reestablished_notices = t.route_reestablished_notices;
            r.route_log = t
                .route_log
                .iter()
                .map(|&(at, side, up)| {
                    let side = match side {
                        crate::transport::Side::Sender => RouteLogSide::Sender,
                        crate::transport::Side::Receiver => RouteLogSide::Receiver,
                    };
                    (at, side, if up { RouteLogEvent::RouteReestablished } else { RouteLogEvent::RouteFailed })
                })
                .map(|(at, side, event)| RouteLogEntry { t_s: at.as_secs_f64(), side, event })
                .collect();
        }
    }
    r.route_log.extend(path_log.map(|(at, side, event)| RouteLogEntry { t_s: at.as_secs_f64(), side, event }));
    // Stable: at one instant, notices before the path change they caused.
    r.route_log.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    r.goodput_bps = goodput_bps(r.bytes_delivered, r.duration_s);
    r
}

/// The report of a run of `scenario` that ended at `end`.
pub(crate) fn assemble(
    scenario: &Scenario,
    world: &World,
    driver: &Driver<Packet, SimEvent>,
    end: Instant,
) -> SimReport {
    let flows: Vec<FlowResult> =
        world.flows.iter().enumerate().map(|(i, f)| flow_result(world, i as u32, f, end)).collect();
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
    fn feedback_timing_tells_clustered_arrivals_from_evenly_spaced_ones() {
        let ms = |v: u64| Instant::ZERO + meshbed_core::Duration::from_millis(v);
        // Sent every 40 ms (one epoch). Evenly delayed by 5 ms: no cluster.
        let even: Vec<_> = (0..5).map(|k| (ms(40 * k), ms(40 * k + 5))).collect();
        let t = FeedbackTiming::of(&even).unwrap();
        assert_eq!((t.packets, t.clustered_share), (5, 0.0));
        assert!((t.mean_delay_s - 0.005).abs() < 1e-12);
        assert_eq!((t.sent_gap_cv, t.arrival_gap_cv), (Some(0.0), Some(0.0)));
        // The second and third held back until just after the fourth was
        // sent: arrival gaps 115, 1, 1, 43 ms against 40 ms sending gaps.
        let held = [(ms(0), ms(5)), (ms(40), ms(120)), (ms(80), ms(121)), (ms(120), ms(122)), (ms(160), ms(165))];
        let t = FeedbackTiming::of(&held).unwrap();
        assert_eq!(t.clustered_share, 0.5, "2 of 4 gaps under 10 ms");
        assert_eq!(t.sent_gap_cv, Some(0.0));
        assert!(t.arrival_gap_cv.unwrap() > 1.0, "{:?}", t.arrival_gap_cv);
        assert!(t.mean_delay_s > 0.005);
        // A gap of exactly a quarter is not clustered; one just under is.
        let at = |a: u64| FeedbackTiming::of(&[(ms(0), ms(0)), (ms(40), ms(40)), (ms(80), ms(40 + a))]).unwrap();
        assert_eq!(at(10).clustered_share, 0.0);
        assert_eq!(at(9).clustered_share, 0.5);
        // Two packets give one gap: no statistic.
        assert_eq!(FeedbackTiming::of(&held[..2]), None);
    }
}
