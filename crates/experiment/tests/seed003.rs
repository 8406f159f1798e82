//! Seed 003's setting: signal-strength AODV on the testbed chain routes
//! over neighbour links only, and a client walking down the chain keeps its
//! TCP transfer going while AODV moves the route.

use meshbed_experiment::builtin;
use meshbed_sim::scenario::{Amount, Routing, Scenario};

/// The scenario of a built-in experiment's point, by label.
fn point(experiment: &str, label: &str) -> Scenario {
    let e = builtin::get(experiment).unwrap();
    let points = e.points(experiment).unwrap();
    points.into_iter().find(|p| p.label() == label).unwrap_or_else(|| panic!("{experiment}: no point {label}")).scenario
}

/// Hops traversed by the datagrams that reached the server (ATP carries
/// the hop count N_h in every packet).
fn hops_seen(s: &Scenario) -> (u32, u32) {
    let r = meshbed_sim::run(s).unwrap();
    let f = &r.flows[0];
    assert!(f.bytes_delivered > 100_000 && f.verified(), "{f:?}");
    let p = f.transfer.as_ref().and_then(|t| t.path.as_ref()).expect("a path observation");
    (p.hop_count_min, p.hop_count_max)
}

#[test]
fn signal_strength_aodv_on_the_seed003_chain_uses_only_neighbour_links() {
    let mut s = point("seed003-chain", "hops=4 protocol=atp-default");
    s.duration_s = 20.0;
    s.flows[0].transport_mut().unwrap().amount = Amount::Until { stop_s: 20.0 };
    assert_eq!(hops_seen(&s), (4, 4), "every packet over the four neighbour links");
    // Without the filter, AODV takes the weak two-hop links its broadcasts
    // reach at 1 Mbit/s (seed 003 §3.2's reason for the filter).
    let Routing::Aodv { ss_threshold_dbm, .. } = &mut s.routing else { panic!("AODV") };
    *ss_threshold_dbm = None;
    let (min, _) = hops_seen(&s);
    assert!(min < 4, "without the filter some packets skip a relay ({min} hops)");
}

#[test]
fn a_walking_client_keeps_its_tcp_transfer_while_aodv_moves_the_route() {
    let mut s = point("seed003-walk", "hops=4 mobility.speed_mps=1.0 protocol=tcp-newreno");
    // A 30 MB transfer instead of 120 s of netperf (longer than the 49 s walk): it must arrive whole.
    s.flows[0].transport_mut().unwrap().amount = Amount::Bytes(30_000_000);
    s.duration_s = 300.0;
    let r = meshbed_sim::run(&s).unwrap();
    let f = &r.flows[0];
    assert!(f.completed() && f.verified() && !f.failed(), "{f:?}");
    assert_eq!(f.bytes_delivered, 30_000_000);
    // From the direct link to the four hops of the chain's end, over routes
    // AODV discovered as the client walked (it may skip a relay on the way).
    let p = f.transfer.as_ref().and_then(|t| t.path.as_ref()).expect("a path observation");
    assert_eq!((p.hop_count_min, p.hop_count_max), (1, 4), "{p:?}");
    let path_changes = f.routing_or_zero().path_changes;
    assert!(path_changes >= 2, "{path_changes} path changes");
    assert!(r.net_total.discoveries.completed >= 2, "{:?}", r.net_total.discoveries);
}

/// The chain runs ARF: `rates.csv` gives each link's DATA frames per rate,
/// only between neighbours, mostly at 11 Mbit/s (a neighbour is 17 dB
/// above the noise), and the fixed-rate testbed pacing runs write none.
#[test]
fn the_chain_reports_its_rates_per_link() {
    let mut e = builtin::get("seed003-chain").unwrap();
    e.config.sweep = vec![
        meshbed_experiment::spec::Axis { key: "hops".into(), values: vec![toml::Value::Integer(2)] },
        meshbed_experiment::spec::Axis {
            key: "protocol".into(),
            values: vec![toml::Value::String("tcp-newreno".into())],
        },
    ];
    e.base.insert("duration_s".into(), toml::Value::Float(12.0));
    let dir = tempfile::tempdir().unwrap();
    let options = meshbed_experiment::RunOptions { repetitions: Some(1), ..Default::default() };
    meshbed_experiment::execute(&e, &options, dir.path()).unwrap();
    let mut rates = csv::Reader::from_path(dir.path().join("rates.csv")).unwrap();
    let header = rates.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = rates.records().map(Result::unwrap).collect();
    let num = |r: &csv::StringRecord, c: &str| r[col(c)].parse::<u64>().unwrap();
    assert!(rows.iter().all(|r| num(r, "tx").abs_diff(num(r, "rx")) == 1), "neighbours only");
    assert!(rows.iter().all(|r| &r[col("rate_control")] == "arf" && num(r, "successes") <= num(r, "attempts")));
    let at = |rate: u64| rows.iter().filter(|r| num(r, "rate_kbps") == rate).map(|r| num(r, "successes")).sum::<u64>();
    let all: u64 = rows.iter().map(|r| num(r, "successes")).sum();
    assert!(at(11_000) * 10 > all * 9, "{} of {all} frames at 11 Mbit/s", at(11_000));
}
