//! `[experiment] compare_against`: each protocol against a reference over
//! the same seeds, checked against the runs themselves.

use meshbed_experiment::{builtin, Experiment, RunOptions};
use toml::Value;

/// Testbed B's single flow, shrunk: 2 hops, 300 kB, three TCPs.
fn small() -> Experiment {
    let mut e = builtin::get("testbed-b-single").unwrap();
    for axis in &mut e.config.sweep {
        match axis.key.as_str() {
            "hops" => axis.values = vec![Value::Integer(2), Value::Integer(3)],
            "protocol" => {
                axis.values = ["tcp-newreno", "tcp-sack", "tcp-cubic"].map(|p| Value::String(p.into())).to_vec()
            }
            _ => {}
        }
    }
    e.config.compare_against = Some("tcp-newreno".into());
    let flows = e.base.get_mut("flows").and_then(Value::as_array_mut).unwrap();
    flows[0].as_table_mut().unwrap().insert("bytes".into(), Value::Integer(300_000));
    e
}

#[test]
fn each_protocol_is_compared_with_the_reference_run_of_the_same_seed() {
    let e = small();
    let dir = tempfile::tempdir().unwrap();
    let outcome =
        meshbed_experiment::execute(&e, &RunOptions { repetitions: Some(4), ..Default::default() }, dir.path())
            .unwrap();
    let r = &outcome.results;
    let paired = meshbed_experiment::run::paired_ratios(r);
    // Two hops and three hops, each for tcp-sack and tcp-cubic.
    let labels: Vec<&str> = paired.iter().map(|p| p.point.as_str()).collect();
    assert_eq!(
        labels,
        [
            "hops=2 protocol=tcp-sack",
            "hops=2 protocol=tcp-cubic",
            "hops=3 protocol=tcp-sack",
            "hops=3 protocol=tcp-cubic"
        ]
    );
    for p in &paired {
        assert_eq!((p.pairs, p.zero_pairs, p.reference.as_str()), (4, 0, "tcp-newreno"), "{p:?}");
        // The geometric mean of the per-seed ratios, from the runs.
        let point = r.points.iter().find(|q| q.label() == p.point).unwrap();
        let hops = point.value("hops").unwrap();
        let base = r
            .points
            .iter()
            .find(|q| {
                q.value("hops") == Some(hops) && q.value("protocol").and_then(Value::as_str) == Some("tcp-newreno")
            })
            .unwrap();
        let goodput = |point: usize, rep: u32| {
            let run = r.runs.iter().find(|x| x.point == point && x.rep == rep).unwrap();
            assert_eq!(run.seed, u64::from(rep) + 1, "repetition k runs seed k + 1 on both sides");
            run.report.flows[0].goodput_bps
        };
        let logs: Vec<f64> = (0..4).map(|rep| (goodput(point.index, rep) / goodput(base.index, rep)).ln()).collect();
        let gm = (logs.iter().sum::<f64>() / 4.0).exp();
        assert!((p.ratio - gm).abs() < 1e-9 * gm, "{p:?} vs {gm}");
        assert!(p.ci95_low <= p.ratio && p.ratio <= p.ci95_high, "{p:?}");
    }
    assert!(outcome.headline.contains("Goodput against tcp-newreno over the same seeds"), "{}", outcome.headline);
    let csv = std::fs::read_to_string(dir.path().join("paired.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5, "{csv}");
    assert!(dir.path().join("paired.parquet").exists());
}

#[test]
fn a_reference_that_is_not_a_value_of_the_axis_is_refused() {
    let mut text = small().to_toml();
    text = text.replace("compare_against = \"tcp-newreno\"", "compare_against = \"tcp-vegas\"");
    let e = Experiment::from_toml(&text, "x.toml").unwrap_err().to_string();
    assert!(
        e.contains("x.toml")
            && e.contains("experiment.compare_against")
            && e.contains("tcp-vegas")
            && e.contains("one of tcp-newreno, tcp-sack, tcp-cubic"),
        "{e}"
    );
}
