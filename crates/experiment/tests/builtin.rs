//! Every built-in experiment runs end to end at reduced repetitions, and the
//! testbed link settings give the qualities the built-ins claim.

use meshbed_experiment::{builtin, run, RunOptions};

#[test]
fn every_builtin_experiment_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    for name in builtin::NAMES {
        let e = builtin::get(name).unwrap();
        // Shrink for CI: one repetition; the testbeds at 1 and 3 hops only.
        let mut e = e.clone();
        if let Some(h) = e.config.sweep.iter_mut().find(|a| a.key == "hops") {
            h.values = vec![toml::Value::Integer(1), toml::Value::Integer(3)];
        }
        // Every other axis but the protocols at its two ends: the pipeline
        // is what is tested here, not the curves between them (every
        // protocol still runs in every built-in that has it).
        for axis in &mut e.config.sweep {
            if axis.values.len() > 2 && !axis.key.contains("protocol") {
                axis.values = vec![axis.values[0].clone(), axis.values[axis.values.len() - 1].clone()];
            }
        }
        // Batch means over 100-packet batches, the transfers shrunk with
        // them (seed 004's are 80 MB).
        if let Some(b) = &mut e.config.batch_means {
            let shrink = |bytes: &mut toml::Value, from: u32| {
                if let Some(n) = bytes.as_integer() {
                    *bytes = toml::Value::Integer(n * 100 / i64::from(from));
                }
            };
            let from = std::mem::replace(&mut b.batch_packets, 100);
            for f in e.base.get_mut("flows").and_then(toml::Value::as_array_mut).into_iter().flatten() {
                if let Some(bytes) = f.get_mut("bytes") {
                    shrink(bytes, from);
                }
            }
            if let Some(bytes) = e.base.get_mut("random_flows").and_then(|r| r.get_mut("flow")?.get_mut("bytes")) {
                shrink(bytes, from);
            }
        }
        // The mobile network: 20 m/s, 5 flows, 20 s.
        for axis in &mut e.config.sweep {
            match axis.key.as_str() {
                "mobility.max_speed_mps" => axis.values = vec![toml::Value::Float(20.0)],
                "random_flows.count" => axis.values = vec![toml::Value::Integer(5)],
                _ => {}
            }
        }
        if e.base.contains_key("mobility") {
            e.base.insert("duration_s".into(), toml::Value::Float(20.0));
            if let Some(toml::Value::Table(r)) = e.base.get_mut("random_flows") {
                r.insert("flow".into(), {
                    let mut f = r["flow"].as_table().unwrap().clone();
                    f.insert("stop_s".into(), toml::Value::Float(20.0));
                    toml::Value::Table(f)
                });
            }
        }
        // The building's random transfers: 100 kB, a minute (not the
        // seed 004 grid, whose transfers are sized by its batch means).
        if !e.base.contains_key("mobility") && e.config.batch_means.is_none() {
            if let Some(toml::Value::Table(r)) = e.base.get_mut("random_flows") {
                let f = r.get_mut("flow").and_then(toml::Value::as_table_mut).unwrap();
                if f.contains_key("bytes") {
                    f.insert("bytes".into(), toml::Value::Integer(100_000));
                    e.base.insert("duration_s".into(), toml::Value::Float(60.0));
                }
            }
        }
        let out = dir.path().join(name);
        let outcome = meshbed_experiment::execute(&e, &RunOptions { repetitions: Some(1), ..Default::default() }, &out)
            .unwrap_or_else(|err| panic!("{name}: {err:#}"));
        let points = outcome.results.points.len();
        assert_eq!(outcome.results.runs.len(), points, "{name}");
        assert!(outcome.table.contains("goodput"), "{name}");
        for file in ["flows.csv", "summary.csv", "summary.txt", "experiment.toml", "goodput_cdf.svg"] {
            let p = out.join(file);
            assert!(p.metadata().map(|m| m.len() > 0).unwrap_or(false), "{name}: {file} missing or empty");
        }
        // The figure is a picture with something drawn on it, not a file.
        assert_png_draws_something(&out.join("goodput_cdf.png"), name);
        // Every run moved data: a built-in whose runs deliver nothing is
        // broken, whatever files it leaves.
        for r in &outcome.results.runs {
            let delivered: u64 = r.report.flows.iter().map(|f| f.bytes_delivered).sum();
            assert!(delivered > 0, "{name}: point {} rep {} delivered nothing", r.point, r.rep);
        }
        // The summary has a finite goodput for every point.
        let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
        let header: Vec<&str> = summary.lines().next().unwrap().split(',').collect();
        let col = header.iter().position(|c| c.starts_with("goodput")).unwrap_or_else(|| panic!("{name}: {header:?}"));
        for line in summary.lines().skip(1) {
            let cell = line.split(',').nth(col).unwrap_or("");
            assert!(cell.parse::<f64>().is_ok_and(f64::is_finite), "{name}: goodput cell {cell:?} in {line}");
        }
        // Seed 002's mobile network: its aggregate throughput (Fig. 11) and
        // §2's TCP and route figures.
        if e.base.contains_key("random_flows") && e.base.contains_key("mobility") {
            for file in ["aggregate.png", "slow_start_share.png", "link_loss_share.png"] {
                assert!(out.join(file).exists(), "{name}: {file} missing");
            }
            let summary = std::fs::read_to_string(out.join("summary.txt")).unwrap();
            assert!(summary.contains("seed 002 §2"), "{name}: {summary}");
        }
        // One CSV row per flow per run, plus the header.
        let rows = std::fs::read_to_string(out.join("flows.csv")).unwrap().lines().count() - 1;
        let flows: usize = outcome.results.points.iter().map(|p| p.scenario.flow_count()).sum();
        assert_eq!(rows, flows, "{name}");
        // No transport flow's bytes ever disagree with what was sent (UDP
        // and echo packets carry no bytes to verify).
        let verified =
            |f: &meshbed_sim::FlowResult| f.protocol == meshbed_sim::report::FlowProtocol::Udp || f.verified();
        assert!(outcome.results.runs.iter().all(|r| r.report.flows.iter().all(verified)), "{name}");
        // The experiment file it wrote runs again to the same points.
        let again = meshbed_experiment::Experiment::from_file(&out.join("experiment.toml")).unwrap();
        assert_eq!(again.points("again").unwrap().len(), points, "{name}");
    }
}

/// A PNG that decodes, has a size, and shows more than a blank canvas (at
/// least a few distinct colours: axes, labels and data).
fn assert_png_draws_something(path: &std::path::Path, name: &str) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{name}: {}: {e}", path.display()));
    let mut reader = png::Decoder::new(std::io::BufReader::new(file)).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert!(info.width >= 200 && info.height >= 150, "{name}: {}x{}", info.width, info.height);
    let pixel = info.color_type.samples();
    let colours: std::collections::HashSet<&[u8]> = buf[..info.buffer_size()].chunks(pixel).collect();
    assert!(colours.len() >= 3, "{name}: {} draws {} colours", path.display(), colours.len());
}

#[test]
fn the_same_seeds_give_the_same_results() {
    let mut e = builtin::get("stack").unwrap();
    e.config.sweep[0].values.truncate(2);
    let opts = RunOptions { repetitions: Some(2), jobs: 2, ..Default::default() };
    let a = run::run(&e, &opts).unwrap();
    let b = run::run(&e, &RunOptions { jobs: 1, ..opts.clone() }).unwrap();
    let hashes = |r: &meshbed_experiment::Results| r.runs.iter().map(|x| x.report.trace_hash).collect::<Vec<_>>();
    assert_eq!(hashes(&a), hashes(&b), "thread count must not change results");
    assert_eq!(a.runs[0].seed, 1);
    assert_eq!(a.runs[1].seed, 2);
}

/// Testbed A's links are lossy and testbed B's reliable: single-link frame
/// loss with MAC retries off, measured with a saturated UDP flow.
#[test]
fn testbed_link_quality() {
    use meshbed_sim::scenario::{FlowSpec, Routing, Scenario, Topology};
    let loss = |radio: meshbed_radio::RadioConfig, spacing_m: f64| {
        let s = Scenario {
            seed: 1,
            duration_s: 5.0,
            radio,
            topology: Topology::Chain { nodes: 2, spacing_m },
            routing: Routing::Static { paths: vec![vec![0, 1]] },
            flows: vec![FlowSpec { src: 0, dst: 1, ..FlowSpec::default() }],
            mobility: None,
            random_flows: None,
        };
        let r = meshbed_sim::run(&s).unwrap();
        1.0 - r.mac_total.acked as f64 / r.mac_total.data_tx_attempts as f64
    };
    let a = loss(builtin::testbed_a_radio(), builtin::TESTBED_A_SPACING_M);
    let b = loss(builtin::testbed_b_radio(), builtin::TESTBED_B_SPACING_M);
    println!("single-link frame loss: testbed A {:.1}%, testbed B {:.2}%", a * 100.0, b * 100.0);
    assert!((0.03..0.15).contains(&a), "testbed A should be lossy: {a}");
    assert!(b < 0.01, "testbed B should be reliable: {b}");
}

/// The ATP paper's AODV network runs ns-2's AODV as the paper did (seed
/// 002 §5.1; issue 28): no HELLOs (links break on MAC failures only, ns-2's
/// AODV_LINK_LAYER_DETECTION) and an expanding ring search.
#[test]
fn the_atp_paper_aodv_builtin_runs_ns2_aodv() {
    let e = builtin::get("atp-paper-mobile-aodv").unwrap();
    let routing = e.base["routing"].as_table().expect("a [routing] table");
    assert_eq!(routing["kind"].as_str(), Some("aodv"));
    assert_eq!(routing["hello"].as_bool(), Some(false));
    assert_eq!(routing["expanding_ring_search"].as_bool(), Some(true));
    assert_eq!(routing["link_layer_feedback"].as_bool(), Some(true));
}
