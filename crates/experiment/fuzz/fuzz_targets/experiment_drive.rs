//! What the `experiment_toml` fuzz target does with one input; shared with
//! `tests/fuzz_corpus.rs`, which replays the seed corpus through it.
//!
//! Byte 0 picks the mode. `b % 4 == 0`: the rest is experiment text, as it
//! is (invalid UTF-8 replaced). Otherwise the rest drives the scenario
//! target's generator (`crates/sim/fuzz/fuzz_targets/hostile_toml.rs`) with
//! the experiment file's reference (a scenario's keys and `[experiment]`'s)
//! from base `b / 4`: a built-in experiment as `meshbed experiment show`
//! writes it. The text goes through `Experiment::from_toml`, which checks
//! every point of the sweep.
//!
//! Oracles besides "no panic": an error names its key (for a generated
//! document, a key of the reference; a point's error as the scenario
//! target checks it); an experiment that is read writes back
//! (`Experiment::to_toml`, what `experiment show` prints) to text that
//! reads to the same configuration and the same points.

#![allow(dead_code)]

use meshbed_experiment::spec::reference::reference;
use meshbed_experiment::{builtin, Experiment, ExperimentError};
use meshbed_sim::ScenarioError;
use std::sync::OnceLock;

#[path = "../../../sim/fuzz/fuzz_targets/hostile_toml.rs"]
pub mod hostile_toml;

/// What the errors name the file.
pub const FILE: &str = "fuzz.toml";
/// Points compared after a round trip, at most (each is built again).
const MAX_POINTS_COMPARED: u64 = 64;

/// The documents the generated ones start from: every built-in experiment.
pub fn bases() -> &'static [String] {
    static BASES: OnceLock<Vec<String>> = OnceLock::new();
    BASES.get_or_init(|| builtin::NAMES.iter().map(|n| builtin::get(n).expect("a built-in").to_toml()).collect())
}

/// What one input did, for the replay test.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub read: bool,
    pub accepted: bool,
    pub error: Option<String>,
}

/// Runs one input.
pub fn drive(data: &[u8]) -> Outcome {
    match hostile_toml::input_text(data, reference(), bases()) {
        Some((text, generated)) => check(&text, generated),
        None => Outcome::default(),
    }
}

/// Reads `text` as an experiment and checks the oracles.
pub fn check(text: &str, generated: bool) -> Outcome {
    match Experiment::from_toml(text, FILE) {
        Ok(e) => {
            let written = e.to_toml();
            let again = Experiment::from_toml(&written, FILE)
                .unwrap_or_else(|err| panic!("an experiment written back does not read: {err}\n{written}"));
            assert!(again.config == e.config, "the [experiment] table written back reads differently:\n{written}");
            // The same points, with the same scenarios (the text may differ:
            // an empty table is not written).
            if e.point_count(FILE).is_ok_and(|n| n <= MAX_POINTS_COMPARED) {
                let (points, points_again) = (e.points(FILE).expect("valid"), again.points(FILE).expect("valid"));
                assert_eq!(points.len(), points_again.len());
                for (p, q) in points.iter().zip(&points_again) {
                    assert!(
                        p.label() == q.label() && p.scenario == q.scenario,
                        "point {} differs written back",
                        p.label()
                    );
                }
            }
            Outcome { read: true, accepted: true, error: None }
        }
        Err(err) => {
            check_error(&err, generated);
            Outcome { read: true, accepted: false, error: Some(err.to_string()) }
        }
    }
}

fn check_error(err: &ExperimentError, generated: bool) {
    let names_a_key = |key: &str| {
        assert!(!key.is_empty(), "an error without its key: {err}");
        if generated {
            let segments = hostile_toml::error_segments(key);
            assert!(reference().normalize(&segments).is_some(), "an error names a key the file has not: {err}");
        }
    };
    match err {
        ExperimentError::Invalid { invalid, .. } => names_a_key(&invalid.key),
        ExperimentError::UnknownKey(e) => match &**e {
            ScenarioError::UnknownKey { key, .. } => assert!(!key.is_empty(), "{err}"),
            other => panic!("an unknown key that is not one: {other}"),
        },
        // A point's scenario error, as the scenario target checks it (its
        // keys are the swept scenario's).
        ExperimentError::Point { error, .. } => match &**error {
            ScenarioError::Invalid { invalid, .. } => assert!(!invalid.key.is_empty(), "{err}"),
            ScenarioError::UnknownKey { key, .. } => assert!(!key.is_empty(), "{err}"),
            _ => {}
        },
        ExperimentError::Parse { message, .. } | ExperimentError::TooLarge { message, .. } => {
            assert!(!message.trim().is_empty(), "an empty error")
        }
        ExperimentError::Io { .. } | ExperimentError::Refused { .. } | ExperimentError::Backend(_) => {}
    }
}
