//! The reference of an experiment file: a scenario's keys
//! ([`meshbed_sim::scenario::reference`]) and the `[experiment]` table's,
//! as one JSON schema (`docs/scenario.schema.json`) and one Markdown
//! reference (`docs/KEYS.md`), both printed by `meshbed scenario schema`
//! and `meshbed scenario keys` and checked against the committed files by
//! `tests/reference.rs`.

use super::{Axis, BatchMeans, Experiment, ExperimentConfig};
use meshbed_sim::scenario::reference::{self as scenario, Reference};
use serde_json::Value;
use std::sync::OnceLock;

/// The JSON schema of a scenario file, with the optional `[experiment]`
/// table that makes it an experiment file.
pub fn schema() -> Value {
    let mut schema = scenario::schema();
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut experiment = generator.subschema_for::<ExperimentConfig>().to_value();
    experiment["description"] = Value::String(
        "The experiment: a name, the repetitions and the sweep axes (an experiment file is a scenario with this table; `meshbed experiment run FILE`).".into(),
    );
    let defs = generator.take_definitions(true);
    if let Some(Value::Object(own)) = schema.get_mut("$defs") {
        own.extend(defs);
    }
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert("experiment".into(), experiment);
    }
    schema["title"] = Value::String("meshbed scenario or experiment".into());
    schema["description"] = Value::String(
        "A meshbed scenario file (`meshbed sim FILE`); with an [experiment] table, an experiment file (`meshbed experiment run FILE`). docs/KEYS.md lists every key.".into(),
    );
    scenario::tidy(&mut schema);
    schema
}

/// The schema as the committed `docs/scenario.schema.json` holds it.
pub fn schema_json() -> String {
    serde_json::to_string_pretty(&schema()).expect("a schema serialises") + "\n"
}

/// Every key of a scenario or experiment file, in reading order (built
/// once).
pub fn reference() -> &'static Reference {
    static REFERENCE: OnceLock<Reference> = OnceLock::new();
    REFERENCE.get_or_init(|| {
        let mut texts = scenario::specimen_texts();
        texts.push(experiment_specimen());
        let top: Vec<&str> = scenario::TOP_LEVEL_ORDER.iter().copied().chain(["experiment"]).collect();
        Reference::new(&schema(), &texts, &top, &scenario::SAME_ORDER)
    })
}

/// An `[experiment]` table with every key, as the type writes it.
fn experiment_specimen() -> String {
    let config = ExperimentConfig {
        name: "specimen".into(),
        description: "every key".into(),
        repetitions: 2,
        sweep: vec![Axis { key: "hops".into(), values: vec![toml::Value::Integer(1)] }],
        x_axis: Some("hops".into()),
        series_axis: Some("hops".into()),
        window_s: Some([1.0, 2.0]),
        batch_means: Some(BatchMeans::default()),
        compare_against: None,
    };
    // A struct, so that the table's keys are written in the type's order.
    #[derive(serde::Serialize)]
    struct File<'a> {
        experiment: &'a ExperimentConfig,
    }
    toml::to_string(&File { experiment: &config }).expect("serialisable")
}

/// `docs/KEYS.md`: every key of both files.
pub fn keys_markdown() -> String {
    reference().markdown(
        "Scenario and experiment keys",
        "Every key of a scenario file (`meshbed sim FILE`) and of an experiment file (a scenario with an `[experiment]` table: `meshbed experiment run FILE`), in reading order. Generated from the types that read the files by `meshbed scenario keys`; `meshbed scenario schema` prints the same as a JSON schema (`docs/scenario.schema.json`, for editors). `cargo test -p meshbed-experiment --test reference` fails when either file differs from what the code generates.\n\nA key's bounds are those the file's types check on their own; bounds that depend on other keys (a node number below the node count, a CBR rate at most the source's PHY rate, a start before `duration_s`) are in its description. `meshbed sim` checks them all, and names the file, the key, the value and what was expected. `[]` stands for every entry of an array (`flows[].stop_s` is the `stop_s` of each `[[flows]]` table); a kind in italics (*kind = \"chain\":*) is the kind of table the key belongs to.",
    )
}

impl Experiment {
    /// The experiment as a file in reading order, every key under a
    /// comment saying what it is, the `[experiment]` table last.
    pub fn to_commented_toml(&self) -> String {
        let mut tree = self.base.clone();
        tree.insert("experiment".into(), toml::Value::try_from(&self.config).expect("serialisable"));
        let header = format!(
            "meshbed experiment `{}`: {}\n`meshbed experiment run FILE` runs this file; docs/KEYS.md lists every key.",
            self.config.name, self.config.description
        );
        reference().commented_toml(&header, &tree)
    }
}
