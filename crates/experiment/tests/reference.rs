//! The reference of every scenario and experiment key (docs/KEYS.md) and
//! the JSON schema (docs/scenario.schema.json) are generated from the
//! code: the committed files must be what it generates now, every key has
//! a description, and a built-in experiment printed as a commented file
//! (`meshbed experiment show`) is in reading order and reads back as
//! itself.

use meshbed_experiment::builtin;
use meshbed_experiment::spec::reference::{keys_markdown, reference, schema_json};
use meshbed_experiment::Experiment;
use std::path::PathBuf;

fn docs(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs").join(name)
}

/// A committed file that must equal what the code generates; with
/// `MESHBED_BLESS=1` the test writes it instead.
fn check_generated(name: &str, generated: &str, command: &str) {
    let path = docs(name);
    if std::env::var_os("MESHBED_BLESS").is_some() {
        std::fs::write(&path, generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let line = committed.lines().zip(generated.lines()).position(|(a, b)| a != b);
        panic!(
            "docs/{name} differs from what the code generates (first at line {}): regenerate it with `{command} > docs/{name}` (or MESHBED_BLESS=1 cargo test -p meshbed-experiment --test reference)",
            line.map_or_else(|| "the end".to_string(), |l| (l + 1).to_string())
        );
    }
}

#[test]
fn docs_keys_md_is_what_the_code_generates() {
    check_generated("KEYS.md", &keys_markdown(), "meshbed scenario keys");
}

#[test]
fn docs_scenario_schema_json_is_what_the_code_generates() {
    let schema = schema_json();
    // A JSON schema of a table with both files' keys.
    let v: serde_json::Value = serde_json::from_str(&schema).unwrap();
    assert_eq!(v["$schema"], "https://json-schema.org/draft/2020-12/schema");
    for key in ["seed", "topology", "radio", "flows", "experiment"] {
        assert!(v["properties"].get(key).is_some(), "{key} missing");
    }
    check_generated("scenario.schema.json", &schema, "meshbed scenario schema");
}

#[test]
fn every_experiment_key_is_in_the_reference_with_a_description() {
    let r = reference();
    for key in [
        "experiment.name",
        "experiment.description",
        "experiment.repetitions",
        "experiment.sweep[].key",
        "experiment.sweep[].values",
        "experiment.x_axis",
        "experiment.series_axis",
        "experiment.window_s",
        "experiment.batch_means.batch_packets",
        "experiment.batch_means.batches",
        "experiment.batch_means.discard",
    ] {
        let doc = r.docs(key).next().unwrap_or_else(|| panic!("{key} is missing"));
        assert!(!doc.description.is_empty(), "{key}");
    }
    let repetitions = r.docs("experiment.repetitions").next().unwrap();
    assert_eq!((repetitions.default.as_deref(), repetitions.bounds.as_deref()), (Some("10"), Some("1 to 10000")));
    for k in &r.keys {
        assert!(!k.description.trim().is_empty(), "{} has no description", k.path);
    }
    // The [experiment] table comes last, after the scenario's.
    let last_table = r.keys.iter().rev().find(|k| !k.path.contains(['.', '['])).unwrap();
    assert_eq!(last_table.path, "experiment");
}

/// Every key an experiment file can have is in the reference: those of
/// each built-in experiment as printed, and of a file with every optional
/// `[experiment]` key.
#[test]
fn every_key_of_the_built_in_experiments_is_in_the_reference() {
    let r = reference();
    let mut texts: Vec<String> = builtin::NAMES.iter().map(|n| builtin::get(n).unwrap().to_toml()).collect();
    texts.push(
        "duration_s = 10\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"tcp-reno\"\nbytes = 100000\ntrace = true\n\
         [experiment]\nname = \"x\"\ndescription = \"d\"\nrepetitions = 2\nx_axis = \"hops\"\nseries_axis = \"hops\"\nwindow_s = [1.0, 2.0]\nbatch_means = { batch_packets = 10, batches = 3, discard = 1 }\n\
         [[experiment.sweep]]\nkey = \"hops\"\nvalues = [1, 2]\n"
            .into(),
    );
    for text in texts {
        Experiment::from_toml(&text, "x.toml").unwrap();
        let table: toml::Table = toml::from_str(&text).unwrap();
        let mut stack: Vec<(Vec<String>, &toml::Value)> = table.iter().map(|(k, v)| (vec![k.clone()], v)).collect();
        while let Some((path, v)) = stack.pop() {
            assert!(r.normalize(&path).is_some(), "{} is not in the reference", path.join("."));
            match v {
                toml::Value::Table(t) => {
                    stack.extend(t.iter().map(|(k, v)| ([path.clone(), vec![k.clone()]].concat(), v)))
                }
                toml::Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if let toml::Value::Table(t) = item {
                            let at = [path.clone(), vec![format!("[{i}]")]].concat();
                            stack.extend(t.iter().map(|(k, v)| ([at.clone(), vec![k.clone()]].concat(), v)));
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

/// `meshbed experiment show NAME`: every built-in as a commented file in
/// reading order (top-level keys, topology, radio, routing, flows, ...,
/// the experiment last), which reads back as the same experiment.
#[test]
fn a_shown_experiment_is_commented_in_reading_order_and_reads_back() {
    for name in builtin::NAMES {
        let e = builtin::get(name).unwrap();
        let text = e.to_toml();
        let again = Experiment::from_toml(&text, "again.toml").unwrap_or_else(|err| panic!("{name}: {err}\n{text}"));
        // The same experiment: its table, and the same scenario (an empty
        // table whose absence means the same is left out).
        assert_eq!(again.config, e.config, "{name}");
        let scenario = |base: &toml::Table| meshbed_sim::Scenario::from_tree(base.clone()).unwrap();
        assert_eq!(scenario(&again.base), scenario(&e.base), "{name}");
        assert!(text.starts_with(&format!("# meshbed experiment `{name}`")), "{name}: {text}");
        let at = |needle: &str| text.find(needle);
        let order: Vec<usize> = [
            "\nduration_s = ",
            "\n[topology]",
            "\n[radio]",
            "\n[routing]",
            "\n[[flows]]",
            "\n[random_flows]",
            "\n[mobility]",
            "\n[experiment]",
        ]
        .iter()
        .filter_map(|n| at(n))
        .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{name}: out of order: {text}");
        assert!(at("\n[experiment]").is_some() && !text.contains("\n[radio.sinr_threshold_db]\n\n"), "{name}");
        assert!(text.contains("# Runs of every point"), "{name}: the experiment's keys are commented");
    }
}

/// `meshbed experiment list` speaks to users: no issue numbers.
#[test]
fn built_in_descriptions_name_no_issue() {
    for name in builtin::NAMES {
        let d = builtin::get(name).unwrap().config.description;
        assert!(!d.is_empty(), "{name}");
        assert!(!d.to_lowercase().contains("issue"), "{name}: {d}");
    }
}

/// A misspelt key of an experiment file, in `[experiment]` or in its
/// scenario, is reported at its own line and column.
#[test]
fn a_misspelt_key_of_an_experiment_file_is_reported_at_its_line() {
    let file = |experiment: &str, topology: &str| {
        format!(
            "duration_s = 10\n[topology]\nkind = \"chain\"\nnodes = 3\n{topology}\n[experiment]\nname = \"x\"\n{experiment}\n"
        )
    };
    let e = Experiment::from_toml(&file("repetition = 3", "spacing_m = 200"), "e.toml").unwrap_err().to_string();
    assert!(
        e.starts_with("e.toml:8:1: experiment.repetition: unknown key; expected")
            && e.contains("(did you mean `repetitions`?)"),
        "{e}"
    );
    let e = Experiment::from_toml(&file("", "spacing = 200"), "e.toml").unwrap_err().to_string();
    assert!(e.starts_with("e.toml:5:1: topology.spacing: unknown key for kind = \"chain\""), "{e}");
    let e =
        Experiment::from_toml(&file("[[experiment.sweep]]\nkey = \"hops\"\nvalue = [1]", "spacing_m = 200"), "e.toml")
            .unwrap_err()
            .to_string();
    assert!(e.starts_with("e.toml:10:1: experiment.sweep[0].value: unknown key"), "{e}");
}
