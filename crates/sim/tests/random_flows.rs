//! `[random_flows]`: N flows between random source/destination pairs, drawn
//! from the seed's own stream (issue 11 §5).

use meshbed_sim::Scenario;

fn scenario(routing: &str, extra: &str) -> String {
    format!(
        r#"
seed = 7
duration_s = 20.0
[topology]
kind = "random"
nodes = 30
width_m = 800.0
height_m = 300.0
[routing]
kind = "{routing}"
[[flows]]
src = 0
dst = 1
traffic = "cbr"
rate_kbps = 2.048
packet_bytes = 64
[random_flows]
count = 12
start_window_s = [1.0, 5.0]
[random_flows.flow]
traffic = "cbr"
rate_kbps = 2.048
packet_bytes = 64
{extra}
"#
    )
}

fn pairs(r: &meshbed_sim::SimReport) -> Vec<(u32, u32, f64)> {
    r.flows.iter().map(|f| (f.src, f.dst, f.start_s)).collect()
}

#[test]
fn random_pairs_are_drawn_per_seed_and_shared_across_routing() {
    let aodv = Scenario::from_toml(&scenario("aodv", "")).unwrap();
    let dsr = Scenario::from_toml(&scenario("dsr", "")).unwrap();
    assert_eq!(aodv.flow_count(), 13);
    let a = meshbed_sim::run(&aodv).unwrap();
    let d = meshbed_sim::run(&dsr).unwrap();
    assert_eq!(a.flows.len(), 13);
    // The listed flow first, then the drawn ones.
    assert_eq!(pairs(&a)[0], (0, 1, 0.0));
    for &(src, dst, start_s) in &pairs(&a)[1..] {
        assert!(src < 30 && dst < 30 && src != dst, "{src} -> {dst}");
        assert!((1.0..5.0).contains(&start_s), "{start_s}");
    }
    let distinct: std::collections::BTreeSet<(u32, u32)> = pairs(&a).iter().map(|p| (p.0, p.1)).collect();
    assert!(distinct.len() >= 10, "{distinct:?}");
    // Same seed, other routing: the same pairs and start times.
    assert_eq!(pairs(&a), pairs(&d));
    assert!(a.flows.iter().all(|f| f.sent_packets > 0), "every drawn flow sends");
    // Another seed (as `--seed` or an experiment's repetition sets it): other pairs.
    let mut other = aodv.clone();
    other.seed = 8;
    let o = meshbed_sim::run(&other).unwrap();
    assert_eq!(o.flows.len(), 13);
    assert_ne!(pairs(&o)[1..], pairs(&a)[1..]);
    assert_eq!(pairs(&o)[0], (0, 1, 0.0));
    // And back: the pairs depend on the seed alone.
    let mut back = other.clone();
    back.seed = 7;
    assert_eq!(pairs(&meshbed_sim::run(&back).unwrap()), pairs(&a));
}

#[test]
fn a_scenario_with_random_flows_survives_a_round_trip_through_toml() {
    let s = Scenario::from_toml(&scenario("dsr", "")).unwrap();
    let text = toml::to_string(&s).unwrap();
    let again = Scenario::from_toml(&text).unwrap();
    assert_eq!(again.flow_count(), 13);
    assert_eq!(pairs(&meshbed_sim::run(&again).unwrap()), pairs(&meshbed_sim::run(&s).unwrap()));
}

#[test]
fn bad_random_flows_name_their_key() {
    let cases = [
        (scenario("dsr", "").replace("count = 12", "count = 0"), "random_flows.count = 0"),
        (scenario("dsr", "").replace("count = 12", "count = 5000"), "random_flows.count = 5000"),
        (scenario("dsr", "").replace("[1.0, 5.0]", "[5.0, 1.0]"), "random_flows.start_window_s = [5, 1]"),
        (
            scenario("dsr", "").replace("[1.0, 5.0]", "[1.0, 25.0]"),
            "random_flows.start_window_s = [1, 25]: expected [a, b] in seconds with 0 <= a < b <= duration_s = 20",
        ),
        (scenario("dsr", "src = 3"), "random_flows.flow.src = 3: expected no value"),
        (
            scenario("dsr", "")
                .replace("rate_kbps = 2.048\npacket_bytes = 64\n\n", "rate_kbps = -1.0\npacket_bytes = 64\n"),
            "random_flows.flow.rate_kbps",
        ),
        (scenario("dsr", "colour = \"red\""), "random_flows.flow.colour: unknown key; expected src, dst, traffic"),
    ];
    for (text, expected) in cases {
        let e = Scenario::from_toml(&text).unwrap_err().to_string();
        assert!(e.contains(expected), "expected {expected:?} in: {e}");
    }
}
