//! The report as a table for people (`meshbed sim`): one line per flow,
//! then the MAC, network and routing totals and the rates per link.

use super::SimReport;
use crate::scenario::Traffic;
use std::fmt::Write;

impl SimReport {
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
            let kind = match (f.traffic(), &f.kernel_tcp) {
                (Some(Traffic::Saturated), _) => "udp saturated".to_string(),
                (Some(Traffic::Cbr), _) => "udp cbr".to_string(),
                (Some(Traffic::Echo), _) => "udp echo".to_string(),
                // The congestion control is what tells two kernel flows apart.
                (None, Some(k)) => format!("{}/{}", f.protocol_name(), k.congestion_control),
                (None, None) => f.protocol_name().to_string(),
            };
            // Done and retransmissions only for a transfer of a set size
            // (one until `stop_s` never completes).
            let sized = f.transfer.as_ref().filter(|t| t.size_bytes.is_some());
            let (done, time) = match sized {
                None => ("-", "-".to_string()),
                Some(t) if t.completed => ("yes", format!("{:.3}", f.duration_s)),
                Some(t) if !t.failed => ("no", "-".to_string()),
                Some(_) => ("FAILED", "-".to_string()),
            };
            let retx = sized.map_or("-".to_string(), |t| t.retransmissions.to_string());
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
            if let Some(e) = f.error() {
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
