//! The stack topology's sensitivity built-ins (issue 15, seed 001 §5.4):
//! the `stack` built-in kept as it was, the sweeps they claim, and the two
//! observations as predicates.

use meshbed_experiment::builtin::{self, stack_sensitivity};
use meshbed_experiment::metrics::stack::{
    middle_gets_a_fifth, middle_periodically_starved, middle_share, starved_time_share,
};
use meshbed_experiment::{run, RunOptions};
use meshbed_sim::scenario::{NodeSpec, Topology};
use toml::Value;

/// The `stack` built-in's nodes as it listed them before the stack kind:
/// senders at x = 0, receivers at 15 m, rows at y = 0, 60 and 30 m.
const LISTED_M: [(f64, f64); 6] = [(0.0, 0.0), (15.0, 0.0), (0.0, 60.0), (15.0, 60.0), (0.0, 30.0), (15.0, 30.0)];

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

#[test]
fn the_stack_builtin_is_unchanged_by_the_stack_kind() {
    let e = builtin::get("stack").unwrap();
    let tahoe = e.points("stack").unwrap().into_iter().find(|p| p.label() == "protocol=tcp-tahoe").unwrap();
    let s = tahoe.scenario;
    assert!(matches!(s.topology, Topology::Stack { flows: 3, .. }), "{:?}", s.topology);
    let bits = |v: Vec<(f64, f64)>| v.into_iter().map(|(x, y)| (x.to_bits(), y.to_bits())).collect::<Vec<_>>();
    let placed: Vec<(f64, f64)> = s.node_radios().iter().map(|n| (n.x_m, n.y_m)).collect();
    assert_eq!(bits(placed), bits(LISTED_M.to_vec()));
    // The same run, to the trace hash, as with the nodes listed one by one.
    let mut listed = s.clone();
    let nodes: Vec<NodeSpec> =
        LISTED_M.iter().map(|&(x_m, y_m)| toml::from_str(&format!("x_m = {x_m:?}\ny_m = {y_m:?}")).unwrap()).collect();
    listed.topology = Topology::Explicit { nodes };
    let a = meshbed_sim::run(&s).unwrap();
    let b = meshbed_sim::run(&listed).unwrap();
    assert_eq!(a.trace_hash, b.trace_hash);
    assert!(a.flows.iter().all(|f| f.bytes_delivered > 0));
}

fn axis_values(e: &meshbed_experiment::Experiment, key: &str) -> Vec<Value> {
    e.config.sweep.iter().find(|a| a.key == key).unwrap_or_else(|| panic!("no axis {key}")).values.clone()
}

#[test]
fn the_sensitivity_builtins_sweep_what_they_claim() {
    let at = builtin::NAMES.iter().position(|&n| n == stack_sensitivity::GEOMETRY).expect("listed");
    assert_eq!(
        builtin::NAMES[at..at + 3],
        [stack_sensitivity::GEOMETRY, stack_sensitivity::GEOMETRY_RETRIES, stack_sensitivity::RADIO]
    );
    let floats = |v: &[f64]| v.iter().map(|&x| Value::Float(x)).collect::<Vec<_>>();
    let protocols = vec![Value::String("tcp-tahoe".into()), Value::String("atp-default".into())];

    // Retries off as the thesis ran them (seed 001 §4.2), and 802.11's
    // default of 7 attempts.
    for (name, retry_limit) in [(stack_sensitivity::GEOMETRY, 0), (stack_sensitivity::GEOMETRY_RETRIES, 6)] {
        let geometry = builtin::get(name).unwrap();
        assert!(geometry.config.repetitions >= 5);
        let spacings = floats(&[15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0]);
        assert_eq!(axis_values(&geometry, "topology.row_spacing_m"), spacings);
        assert_eq!(axis_values(&geometry, "topology.link_m"), floats(&[5.0, 10.0, 15.0, 20.0, 25.0]));
        assert_eq!(axis_values(&geometry, "radio.mac.short_retry_limit"), [Value::Integer(retry_limit)]);
        assert_eq!(axis_values(&geometry, "protocol"), protocols);
        let points = geometry.points(name).unwrap();
        assert_eq!(points.len(), 7 * 5 * 2);
        for p in &points {
            let Topology::Stack { flows: 3, row_spacing_m, link_m } = p.scenario.topology else {
                panic!("{}", p.label())
            };
            assert_eq!(Some(&Value::Float(row_spacing_m)), p.value("topology.row_spacing_m"));
            assert_eq!(Some(&Value::Float(link_m)), p.value("topology.link_m"));
            assert_eq!(p.scenario.radio.tx_power_dbm, 10.0);
            assert_eq!(i64::from(p.scenario.radio.mac.short_retry_limit), retry_limit);
            // The built-in's flows: the middle one last and started last.
            let flows: Vec<_> = p.scenario.flows.iter().map(|f| (f.src, f.dst, f.start_s)).collect();
            assert_eq!(flows, [(0, 1, 0.0), (2, 3, 3.0), (4, 5, 6.0)]);
        }
        assert_eq!(geometry.config.window_s, builtin::get("stack").unwrap().config.window_s);
    }

    let radio = builtin::get(stack_sensitivity::RADIO).unwrap();
    assert!(radio.config.repetitions >= 5);
    assert_eq!(axis_values(&radio, "radio.tx_power_dbm"), floats(&[0.0, 5.0, 10.0, 15.0, 20.0]));
    let retries: Vec<Value> = [0, 1, 3, 6].into_iter().map(Value::Integer).collect();
    assert_eq!(axis_values(&radio, "radio.mac.short_retry_limit"), retries);
    let points = radio.points("radio").unwrap();
    assert_eq!(points.len(), 5 * 4 * 2);
    let stack = builtin::get("stack").unwrap().points("stack").unwrap().remove(0).scenario;
    for p in &points {
        assert_eq!(p.scenario.topology, stack.topology, "{}", p.label());
        assert_eq!(Some(&Value::Float(p.scenario.radio.tx_power_dbm)), p.value("radio.tx_power_dbm"));
    }
    // Goodput over the stack's window, all three flows active.
    assert_eq!(radio.config.window_s, builtin::get("stack").unwrap().config.window_s);
}

#[test]
fn the_observations_on_table_5_1() {
    // Seed 001 Table 5.1 (kbit/s): default ATP 2246, 2483, 546 → 0.23 of
    // the outer flows' mean, "only 1/5".
    let atp = middle_share(&[2246e3, 2483e3, 546e3]).unwrap();
    assert!(close(atp, 546.0 / 2364.5), "{atp}");
    assert!(middle_gets_a_fifth(atp));
    // Tahoe 703, 1184, 480 → 0.51: not a fifth; adaptive 2085, 2410, 875 → 0.39.
    assert!(!middle_gets_a_fifth(middle_share(&[703e3, 1184e3, 480e3]).unwrap()));
    assert!(!middle_gets_a_fifth(middle_share(&[2085e3, 2410e3, 875e3]).unwrap()));
    // Boundary pairs of the factor-1.5 band around 1/5.
    assert!(middle_gets_a_fifth(0.2 / 1.5 + 1e-9) && !middle_gets_a_fifth(0.2 / 1.5 - 1e-9));
    assert!(middle_gets_a_fifth(0.3) && !middle_gets_a_fifth(0.3 + 1e-9));
    // No outer goodput, or no outer flow: no share.
    assert_eq!(middle_share(&[0.0, 0.0, 5e5]), None);
    assert_eq!(middle_share(&[5e5]), None);
    assert_eq!(middle_share(&[]), None);
}

#[test]
fn periodic_starvation_singles_out_the_middle_flow() {
    // Instantaneous goodput below 1 kbit/s counts as starved.
    assert!(close(starved_time_share(&[0.0, 999.0, 1_000.0, 2e6]), 0.5));
    assert_eq!(starved_time_share(&[]), 0.0);
    // A tenth of the time, at least twice the outer flows' share.
    assert!(middle_periodically_starved(0.1, 0.05));
    assert!(!middle_periodically_starved(0.099, 0.0));
    assert!(middle_periodically_starved(0.3, 0.15));
    assert!(!middle_periodically_starved(0.3, 0.151));
}

#[test]
fn the_report_judges_each_point_from_its_runs() {
    let mut e = builtin::get(stack_sensitivity::GEOMETRY).unwrap();
    for a in &mut e.config.sweep {
        match a.key.as_str() {
            "topology.row_spacing_m" => a.values = vec![Value::Float(30.0)],
            "topology.link_m" => a.values = vec![Value::Float(15.0)],
            _ => {}
        }
    }
    let results = run::run(&e, &RunOptions { repetitions: Some(1), jobs: 1, ..Default::default() }).unwrap();
    let summaries = run::summarize(&results);
    let obs = stack_sensitivity::observe(&results);
    assert_eq!(obs.len(), 2);
    for (o, s) in obs.iter().zip(&summaries) {
        assert_eq!(o.setting, "row_spacing_m=30.0 link_m=15.0 short_retry_limit=0");
        // The same windowed goodput as the experiment's own summary.
        assert_eq!(o.per_flow_mean_bps, s.per_flow_mean_bps);
        let g = &o.per_flow_mean_bps;
        assert!(close(o.middle_share.unwrap(), g[2] / ((g[0] + g[1]) / 2.0)));
        assert!((0.0..=1.0).contains(&o.middle_starved_time) && (0.0..=1.0).contains(&o.outer_starved_time));
    }
    assert_eq!(obs[0].protocol, "tcp-tahoe");
    assert_eq!(
        obs[0].holds(),
        Some(middle_periodically_starved(obs[0].middle_starved_time, obs[0].outer_starved_time))
    );
    assert_eq!(obs[1].protocol, "atp-default");
    assert_eq!(obs[1].holds(), Some(middle_gets_a_fifth(obs[1].middle_share.unwrap())));
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let both = yes_no(obs[0].holds().unwrap() && obs[1].holds().unwrap());
    let table = stack_sensitivity::report(&results);
    let row = table.lines().find(|l| l.starts_with("| row_spacing_m=30.0")).unwrap_or_else(|| panic!("{table}"));
    assert!(row.ends_with(&format!(" {both} |")), "{row}");
    assert!(row.contains(&format!("{:.2}", obs[1].middle_share.unwrap())), "{row}");
}
