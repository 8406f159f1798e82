//! The report as a table for people (`meshbed sim`): one line per flow,
//! then the MAC, network and routing totals and the rates per link. A value
//! nothing measured (a delay the emulator cannot see, a counter of packets
//! the kernel forwarded) is `-`, never a 0 that reads as a measurement; a
//! value that applies to some flows only (a transfer's verdict, UDP's
//! delivery ratio) is `-` for the others, as the JSON leaves it out.

use super::{FlowResult, SimReport};
use crate::net_stats::Loss;
use crate::scenario::Traffic;
use std::fmt::Write;

/// A rate with the unit its size calls for (bit/s, kbit/s, Mbit/s,
/// Gbit/s; SI prefixes, as link rates are given) and four significant
/// digits, so that a 2 kbit/s CBR flow and a 20 Mbit/s transfer both read
/// as what they are.
pub fn rate_text(bps: f64) -> String {
    if !bps.is_finite() || bps < 0.0 {
        return "-".into();
    }
    if bps == 0.0 {
        return "0 bit/s".into();
    }
    // Rounded to four significant digits first, so that 999.96 kbit/s
    // reads 1.000 Mbit/s rather than 1000.0 kbit/s.
    let step = 10f64.powi(bps.log10().floor() as i32 - 3);
    let rounded = (bps / step).round() * step;
    let (scale, unit) = [(1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")]
        .into_iter()
        .find(|&(scale, _)| rounded >= scale)
        .unwrap_or((1.0, "bit/s"));
    let value = rounded / scale;
    let decimals = (3 - value.log10().floor() as i32).max(0) as usize;
    format!("{value:.decimals$} {unit}")
}

/// A ratio in [0, 1] with three decimals, cut rather than rounded: 1.000
/// only when every packet arrived.
fn ratio_text(ratio: Option<f64>) -> String {
    ratio.map_or("-".into(), |r| format!("{:.3}", (r * 1000.0).floor() / 1000.0))
}

/// The hops of a flow's route: the fewest to the most its packets took
/// when its path changed during the run (`1-4`), or the one count.
fn hops_text(f: &FlowResult) -> String {
    match f.routing.as_ref().and_then(|r| r.hops_observed) {
        Some(h) if h.min != h.max => format!("{}-{}", h.min, h.max),
        Some(h) => h.min.to_string(),
        None => f.hops.map_or("-".to_string(), |h| h.to_string()),
    }
}

/// The verdict of a transfer as `--json` gives it (`transfer.completed`,
/// `failed`): `yes` (with its time), `no` (cut short by the end of the
/// run), `FAILED`; a transfer until `stop_s` that ran to its stop
/// completed. `-` for UDP, which has no transfer.
fn done_text(f: &FlowResult) -> (&'static str, String) {
    match &f.transfer {
        None => ("-", "-".into()),
        Some(t) if t.completed => ("yes", format!("{:.3}", f.duration_s)),
        Some(t) if t.failed => ("FAILED", "-".into()),
        Some(_) => ("no", "-".into()),
    }
}

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
            "{:>4} {:>4} {:>4} {:>5} {:>17} {:>10} {:>10} {:>6} {:>13} {:>9} {:>6} {:>9} {:>6}",
            "flow",
            "src",
            "dst",
            "hops",
            "protocol",
            "sent",
            "received",
            "pdr",
            "goodput",
            "delay ms",
            "done",
            "time s",
            "retx"
        );
        for f in &self.flows {
            let kind = match (f.traffic(), &f.kernel_tcp) {
                (Some(Traffic::Saturated), _) => "udp saturated".to_string(),
                (Some(Traffic::Cbr), _) => "udp cbr".to_string(),
                (Some(Traffic::Echo), _) => "udp echo".to_string(),
                // The congestion control is what tells two kernel flows apart.
                (None, Some(k)) => format!("{}/{}", f.protocol_name(), k.congestion_control),
                (None, None) => f.protocol_name().to_string(),
            };
            let (done, time) = done_text(f);
            let retx = f.transfer.as_ref().map_or("-".to_string(), |t| t.retransmissions.to_string());
            let _ = writeln!(
                s,
                "{:>4} {:>4} {:>4} {:>5} {:>17} {:>10} {:>10} {:>6} {:>13} {:>9} {:>6} {:>9} {:>6}",
                f.flow,
                f.src,
                f.dst,
                hops_text(f),
                kind,
                f.sent_packets,
                f.received_packets,
                ratio_text(f.delivery_ratio()),
                rate_text(f.goodput_bps),
                f.mean_delay_s.map_or("-".to_string(), |d| format!("{:.2}", d * 1e3)),
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
        // What the data path's counters hold where someone counted them.
        let counted = |loss: Loss, v: u64| if self.data_path.counts(loss) { v.to_string() } else { "-".into() };
        let forwarded = if self.data_path.counts_forwarded() { n.forwarded.to_string() } else { "-".into() };
        let _ = writeln!(s, "  {:<32} {:>10}", "forwarded by relays", forwarded);
        let _ = writeln!(s, "  {:<32} {:>10}", "drop: no route", counted(Loss::NoRoute, n.drops.no_route));
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
                    format!(
                        "{} / {}",
                        counted(Loss::DiscoveryTimeout, n.drops.discovery_timeout),
                        counted(Loss::DiscoveryOverflow, n.drops.discovery_overflow)
                    ),
                ),
                ("drop: lost on a broken link", counted(Loss::RetryLimit, n.drops.retry_limit)),
                ("drop: TTL expired", counted(Loss::TtlExpired, n.drops.ttl_expired)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{HopRange, RoutingResult};
    use crate::scenario::{Amount, FlowKind, FlowSpec, TransportFlow};
    use crate::{DataPathCounting, NetCounters};
    use meshbed_proto::Protocol;
    use meshbed_radio::MacCounters;

    fn report(flows: Vec<FlowResult>, data_path: DataPathCounting) -> SimReport {
        SimReport {
            seed: 1,
            duration_s: 10.0,
            events: 0,
            trace_hash: None,
            flows,
            mac_total: MacCounters::default(),
            mac_per_node: Vec::new(),
            net_total: NetCounters { forwarded: 7, ..NetCounters::default() },
            net_per_node: Vec::new(),
            data_path,
            routing_overhead_ratio: None,
            rate_histogram: Vec::new(),
        }
    }

    /// The cells of flow `flow`'s line, by column header: columns are
    /// right-aligned, so each cell ends where its header ends.
    fn cells(table: &str, flow: u32) -> std::collections::BTreeMap<&'static str, String> {
        let header = table.lines().find(|l| l.trim_start().starts_with("flow ")).expect("the header");
        let line = table
            .lines()
            .skip_while(|l| *l != header)
            .find(|l| l.split_whitespace().next() == Some(&flow.to_string()))
            .expect("the flow's line");
        let columns =
            ["flow", "src", "dst", "hops", "protocol", "sent", "received", "pdr", "goodput", "delay ms", "done"];
        let mut at = 0;
        let mut out = std::collections::BTreeMap::new();
        for h in columns.into_iter().chain(["time s", "retx"]) {
            let end = header[at..].find(h).expect("a header") + at + h.len();
            out.insert(h, line[at..end].trim().to_string());
            at = end;
        }
        out
    }

    #[test]
    fn rates_take_the_unit_their_size_calls_for_with_four_significant_digits() {
        assert_eq!(rate_text(0.0), "0 bit/s");
        assert_eq!(rate_text(512.0), "512.0 bit/s");
        // broch.toml's CBR: 4 packets/s of 64 bytes.
        assert_eq!(rate_text(2048.0), "2.048 kbit/s");
        assert_eq!(rate_text(1_975.3), "1.975 kbit/s");
        assert_eq!(rate_text(999_499.0), "999.5 kbit/s");
        // Just below 1 Mbit/s rounds up to the next unit, not to 1000.0 kbit/s.
        assert_eq!(rate_text(999_960.0), "1.000 Mbit/s");
        assert_eq!(rate_text(6_307_846.6), "6.308 Mbit/s");
        assert_eq!(rate_text(21_450_000.0), "21.45 Mbit/s");
        assert_eq!(rate_text(1.5e9), "1.500 Gbit/s");
        assert_eq!(rate_text(f64::NAN), "-");
    }

    #[test]
    fn a_delivery_ratio_is_cut_so_that_one_means_every_packet() {
        assert_eq!(ratio_text(Some(1.0)), "1.000");
        assert_eq!(ratio_text(Some(0.99996)), "0.999");
        assert_eq!(ratio_text(Some(0.5)), "0.500");
        assert_eq!(ratio_text(None), "-");
    }

    #[test]
    fn the_flow_line_shows_pdr_hop_range_units_and_the_verdict_of_the_json() {
        // A CBR flow over routing engines whose path grew from 1 to 4 hops.
        let mut cbr = FlowResult::blank(0, &FlowSpec::cbr(4, 0, 2.048, 64), Some(1), 890.0);
        cbr.sent_packets = 3560;
        cbr.received_packets = 3471;
        cbr.goodput_bps = 1_975.3;
        cbr.mean_delay_s = Some(0.01234);
        cbr.udp.as_mut().unwrap().delivery_ratio = Some(3471.0 / 3560.0);
        cbr.routing = Some(RoutingResult { hops_observed: Some(HopRange { min: 1, max: 4 }), ..Default::default() });
        // A transfer until stop_s that ran to its stop: completed, as --json says.
        let spec = FlowSpec {
            src: 4,
            dst: 0,
            start_s: 1.0,
            kind: FlowKind::Transport(TransportFlow::new(Protocol::TcpNewReno, Amount::Until { stop_s: 800.0 })),
        };
        let mut until = FlowResult::blank(1, &spec, Some(1), 799.0);
        let t = until.transfer.as_mut().unwrap();
        (t.completed, t.verified, t.retransmissions) = (true, true, 1313);
        until.goodput_bps = 6_307_846.6;
        until.routing = Some(RoutingResult { hops_observed: Some(HopRange { min: 2, max: 2 }), ..Default::default() });
        // A sized transfer cut short, with nothing received: no delay measured.
        let short = FlowResult::blank(2, &FlowSpec::transfer(0, 2, Protocol::AtpDefault, 5000), Some(2), 10.0);
        let table = report(vec![cbr, until, short], DataPathCounting::Simulator).to_table();

        let c = cells(&table, 0);
        assert_eq!((c["hops"].as_str(), c["pdr"].as_str()), ("1-4", "0.975"), "{table}");
        assert_eq!((c["goodput"].as_str(), c["delay ms"].as_str()), ("1.975 kbit/s", "12.34"), "{table}");
        assert_eq!((c["done"].as_str(), c["time s"].as_str(), c["retx"].as_str()), ("-", "-", "-"), "{table}");
        let c = cells(&table, 1);
        assert_eq!((c["hops"].as_str(), c["pdr"].as_str(), c["goodput"].as_str()), ("2", "-", "6.308 Mbit/s"));
        assert_eq!((c["done"].as_str(), c["time s"].as_str(), c["retx"].as_str()), ("yes", "799.000", "1313"));
        let c = cells(&table, 2);
        assert_eq!((c["hops"].as_str(), c["delay ms"].as_str(), c["goodput"].as_str()), ("2", "-", "0 bit/s"));
        assert_eq!((c["done"].as_str(), c["retx"].as_str()), ("no", "0"), "{table}");
        assert_eq!(counter(&table, "forwarded by relays").as_deref(), Some("7"), "{table}");
    }

    /// The value of a totals line `  name   value`.
    fn counter(table: &str, name: &str) -> Option<String> {
        table.lines().find(|l| l.trim_start().starts_with(name)).map(|l| l[2 + 32..].trim().to_string())
    }

    #[test]
    fn counters_nobody_counted_read_as_a_dash() {
        let line = counter;
        for (counting, forwarded, no_route) in [
            (DataPathCounting::Simulator, "7", "0"),
            (DataPathCounting::RoutingDaemons, "7", "0"),
            (DataPathCounting::Kernel, "-", "-"),
        ] {
            let table = report(Vec::new(), counting).to_table();
            assert_eq!(line(&table, "forwarded by relays").as_deref(), Some(forwarded), "{counting:?}: {table}");
            assert_eq!(line(&table, "drop: no route").as_deref(), Some(no_route), "{counting:?}: {table}");
        }
        // Routing daemons do not see the MAC's losses.
        let mut r = report(Vec::new(), DataPathCounting::RoutingDaemons);
        r.routing_overhead_ratio = Some(0.5);
        let table = r.to_table();
        assert_eq!(line(&table, "drop: lost on a broken link").as_deref(), Some("-"), "{table}");
        assert_eq!(line(&table, "drop: discovery timeout / full").as_deref(), Some("0 / 0"), "{table}");
    }
}
