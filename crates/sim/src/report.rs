//! What a run produces, as a table for people and JSON for scripts.

use crate::scenario::Traffic;
use crate::NetCounters;
use meshbed_radio::MacCounters;
use serde::Serialize;
use std::fmt::Write;

#[derive(Clone, Debug, Serialize)]
pub struct FlowResult {
    pub flow: u32,
    pub src: u32,
    pub dst: u32,
    /// Route length in hops (`None` when there is no route).
    pub hops: Option<u32>,
    pub traffic: Traffic,
    pub sent_packets: u64,
    pub received_packets: u64,
    /// UDP payload bytes delivered (goodput counts only these).
    pub received_payload_bytes: u64,
    /// Payload bits per second over the flow's active time.
    pub goodput_bps: f64,
    pub mean_delay_s: f64,
    pub out_of_order: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SimReport {
    /// The run seed: the same seed reproduces the run bit for bit.
    pub seed: u64,
    pub duration_s: f64,
    /// Events executed.
    pub events: u64,
    /// FNV-1a hash of the event trace (time, kind, node of every event).
    pub trace_hash: String,
    pub flows: Vec<FlowResult>,
    pub mac_total: MacCounters,
    pub mac_per_node: Vec<MacCounters>,
    pub net_per_node: Vec<NetCounters>,
}

impl SimReport {
    /// A plain-text table: flows, then MAC counters.
    pub fn to_table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "seed {}  simulated {:.3} s  events {}  trace {}", self.seed, self.duration_s, self.events, self.trace_hash);
        let _ = writeln!(s);
        let _ = writeln!(s, "{:>4} {:>4} {:>4} {:>4} {:>10} {:>10} {:>10} {:>14} {:>11}", "flow", "src", "dst", "hops", "traffic", "sent", "received", "goodput Mb/s", "delay ms");
        for f in &self.flows {
            let hops = f.hops.map_or("-".to_string(), |h| h.to_string());
            let traffic = match f.traffic {
                Traffic::Saturated => "saturated",
                Traffic::Cbr => "cbr",
            };
            let _ = writeln!(
                s,
                "{:>4} {:>4} {:>4} {:>4} {:>10} {:>10} {:>10} {:>14.3} {:>11.2}",
                f.flow, f.src, f.dst, hops, traffic, f.sent_packets, f.received_packets, f.goodput_bps / 1e6, f.mean_delay_s * 1e3
            );
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
        let no_route: u64 = self.net_per_node.iter().map(|c| c.no_route).sum();
        let fwd: u64 = self.net_per_node.iter().map(|c| c.forwarded).sum();
        let _ = writeln!(s, "  {:<32} {:>10}", "forwarded by relays", fwd);
        let _ = writeln!(s, "  {:<32} {:>10}", "drop: no route", no_route);
        s
    }
}
