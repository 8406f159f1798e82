//! Randomized flows (seed 001 §5.5): every protocol of a repetition runs on
//! the same random pairs, each repetition draws its own, and the summary
//! says so.

use meshbed_experiment::{builtin, run, RunOptions};
use toml::Value;

/// The building's file-transfer experiment, shrunk: 1 and 3 flows of 20 kB,
/// Tahoe and default ATP, 40 s.
fn small_building() -> meshbed_experiment::Experiment {
    let mut e = builtin::get("testbed-random-transfer").unwrap();
    for axis in &mut e.config.sweep {
        match axis.key.as_str() {
            "random_flows.count" => axis.values = vec![Value::Integer(1), Value::Integer(3)],
            "protocol" => axis.values = vec![Value::String("tcp-tahoe".into()), Value::String("atp-default".into())],
            _ => {}
        }
    }
    e.base.insert("duration_s".into(), Value::Float(40.0));
    let r = e.base.get_mut("random_flows").and_then(Value::as_table_mut).unwrap();
    r.get_mut("flow").and_then(Value::as_table_mut).unwrap().insert("bytes".into(), Value::Integer(20_000));
    e
}

#[test]
fn random_pairs_are_the_same_for_every_protocol() {
    let e = small_building();
    let dir = tempfile::tempdir().unwrap();
    let outcome =
        meshbed_experiment::execute(&e, &RunOptions { repetitions: Some(3), ..Default::default() }, dir.path())
            .unwrap();
    let results = &outcome.results;
    assert_eq!(results.runs.len(), 4 * 3);
    // Figs. 5.10-5.12: a CDF per load, the log utility, the starved share.
    for file in ["goodput_cdf_1.png", "goodput_cdf_3.png", "log_utility.png", "starved_share.png", "aggregate.png"] {
        assert!(dir.path().join(file).exists(), "{file} missing");
    }
    assert!(
        outcome.table.contains("the same pair for a flow index in every point of a repetition"),
        "{}",
        outcome.table
    );
    // (seed, flow index) -> the pair every run with that seed drew.
    let pairs_of = |point: usize, seed: u64| -> Vec<(u32, u32)> {
        let r = results.runs.iter().find(|r| r.point == point && r.seed == seed).unwrap();
        r.report.flows.iter().map(|f| (f.src, f.dst)).collect()
    };
    for seed in 1..=3u64 {
        // Points: (1 flow, Tahoe), (1, ATP), (3, Tahoe), (3, ATP).
        let one = pairs_of(0, seed);
        let three = pairs_of(2, seed);
        assert_eq!(one.len(), 1);
        assert_eq!(three.len(), 3);
        assert_eq!(pairs_of(1, seed), one, "seed {seed}: Tahoe and ATP drew different pairs");
        assert_eq!(pairs_of(3, seed), three, "seed {seed}");
        // A load of one flow has the first pair of the larger load.
        assert_eq!(one[0], three[0], "seed {seed}");
        assert!(three.iter().all(|&(s, d)| s != d && s < 20 && d < 20));
    }
    // Each repetition draws its own pairs.
    let all: Vec<Vec<(u32, u32)>> = (1..=3).map(|seed| pairs_of(2, seed)).collect();
    assert!(all[0] != all[1] || all[1] != all[2], "{all:?}");
    let p = run::random_pairs(results).unwrap();
    assert!(p.same_in_every_point);
    assert_eq!(p.pairs, 3 * 3);
    assert_eq!(p.hops.iter().map(|(_, n)| n).sum::<usize>(), 9);
    assert!(p.hops.iter().all(|(h, _)| matches!(h, Some(1..=4))), "{:?}", p.hops);
}

#[test]
fn an_axis_that_changes_the_draw_is_reported() {
    // The number of nodes of a random topology changes which pairs a seed
    // draws: the summary must not claim identical pairs then.
    let text = r#"
duration_s = 2
[topology]
kind = "random"
nodes = 5
width_m = 300
height_m = 300
[random_flows]
count = 3
[random_flows.flow]
traffic = "cbr"
rate_kbps = 10
[experiment]
name = "draws"
repetitions = 1
[[experiment.sweep]]
key = "topology.nodes"
values = [5, 40]
"#;
    let e = meshbed_experiment::Experiment::from_toml(text, "draws.toml").unwrap();
    let results = run::run(&e, &RunOptions { repetitions: Some(2), ..Default::default() }).unwrap();
    let p = run::random_pairs(&results).unwrap();
    assert!(!p.same_in_every_point, "{p:?}");
    assert_eq!(p.pairs, 2 * 3);
}
