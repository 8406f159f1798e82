//! What `meshbed sim` prints agrees with what `--json` says: a client
//! walking away from its server over AODV (seed 003 §5.1's walk, faster),
//! with a transfer until `stop_s` and a CBR flow beside it.

use meshbed_sim::{Scenario, SimReport};

fn walk_away() -> SimReport {
    let s = Scenario::from_toml(
        r#"
seed = 1
duration_s = 90.0
[topology]
kind = "explicit"
nodes = [
  { x_m = 0.0, y_m = 0.0 },
  { x_m = 200.0, y_m = 0.0 },
  { x_m = 400.0, y_m = 0.0 },
  { x_m = 600.0, y_m = 0.0 },
  { x_m = 10.0, y_m = 20.0 },
]
[routing]
kind = "aodv"
ss_threshold_dbm = -80.0
[[flows]]
src = 4
dst = 0
protocol = "tcp-newreno"
stop_s = 85.0
start_s = 1.0
[[flows]]
src = 4
dst = 0
traffic = "cbr"
rate_kbps = 16.0
packet_bytes = 200
start_s = 1.0
[mobility]
model = "scripted"
[[mobility.nodes]]
node = 4
waypoints = [[2.0, 700.0, 20.0, 10.0]]
"#,
    )
    .expect("a valid scenario");
    meshbed_sim::run(&s).expect("it runs")
}

/// The words of flow `flow`'s line (the goodput is two, `udp cbr` too).
fn flow_line(table: &str, flow: u32) -> Vec<String> {
    let line = table
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flow "))
        .find(|l| l.split_whitespace().next() == Some(&flow.to_string()))
        .expect("the flow's line");
    line.split_whitespace().map(String::from).collect()
}

#[test]
fn the_table_shows_the_hops_the_packets_took_their_delivery_and_the_verdict_of_the_json() {
    let r = walk_away();
    let (tcp, cbr) = (&r.flows[0], &r.flows[1]);
    // The walk moves the route from the direct link to three relays.
    let hops = |f: &meshbed_sim::FlowResult| f.routing.as_ref().and_then(|r| r.hops_observed).expect("hops observed");
    assert_eq!((hops(tcp).min, hops(tcp).max), (1, 4), "{:?}", tcp.routing);
    assert!(tcp.routing.as_ref().unwrap().path_changes > 0);
    // Counted from the TTL, the hops agree with the N_h the relays stamped.
    let path = tcp.transfer.as_ref().and_then(|t| t.path.as_ref()).expect("datagrams arrived");
    assert_eq!((hops(tcp).min, hops(tcp).max), (path.hop_count_min, path.hop_count_max));
    assert_eq!((hops(cbr).min, hops(cbr).max), (1, 4), "{:?}", cbr.routing);
    // A transfer until stop_s that ran to its stop completed.
    assert!(tcp.completed(), "{:?}", tcp.transfer);

    let table = r.to_table();
    // flow src dst hops protocol sent received pdr goodput(2) delay done time retx
    let t = flow_line(&table, 0);
    assert_eq!((t[3].as_str(), t[4].as_str(), t[7].as_str()), ("1-4", "tcp-newreno", "-"), "{table}");
    assert_eq!((t[11].as_str(), t[12].as_str()), ("yes", format!("{:.3}", tcp.duration_s).as_str()), "{table}");
    assert_eq!(t[13], tcp.retransmissions().to_string(), "{table}");
    assert_eq!(t[9], "Mbit/s", "{table}");
    // flow src dst hops udp cbr sent received pdr goodput(2) delay done time retx
    let c = flow_line(&table, 1);
    let pdr = cbr.delivery_ratio().expect("CBR has a delivery ratio");
    assert!(pdr > 0.5 && pdr < 1.0, "{pdr}");
    assert_eq!(c[8], format!("{:.3}", (pdr * 1000.0).floor() / 1000.0), "{table}");
    assert_eq!((c[3].as_str(), c[10].as_str(), c[12].as_str()), ("1-4", "kbit/s", "-"), "{table}");
    // 16 kbit/s of 200-byte packets, 172 bytes of payload each: not 0.0xx.
    let kbps: f64 = c[9].parse().unwrap();
    assert!((kbps - cbr.goodput_bps / 1e3).abs() < 0.01 && kbps > 10.0, "{table}");
    let delay_ms: f64 = c[11].parse().unwrap();
    assert!((delay_ms - cbr.mean_delay_s.unwrap() * 1e3).abs() < 0.01, "{table}");
}
