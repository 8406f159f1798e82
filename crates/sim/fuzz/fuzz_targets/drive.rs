//! What the `scenario_toml` fuzz target does with one input; shared with
//! `tests/fuzz_corpus.rs`, which replays the seed corpus through it.
//!
//! Byte 0 picks the mode. `b % 4 == 0`: the rest is scenario text, as it
//! is (invalid UTF-8 replaced). Otherwise the rest drives
//! [`hostile_toml::document`]: base `b / 4` (a specimen with every key, or
//! one of the examples) with changes drawn from the scenario's reference —
//! keys set to hostile values (at and past their bounds, NaN, infinities,
//! huge, negative, zero, the wrong type, very long strings), removed, or
//! unknown keys added. The text goes through `Scenario::from_toml`.
//!
//! Oracles besides "no panic":
//! * an error names what is wrong: an invalid value its key (for a
//!   generated document, a key of the reference), an unknown key its path;
//! * a scenario that is read writes back (`toml::to_string`, as the result
//!   store and the experiment layer write it) to text that reads to the
//!   same scenario;
//! * a small one (at most 12 nodes and 6 flows, transfers of at most 4 MB,
//!   every flow starting in the first 2.3 s) runs until 0.2 simulated
//!   seconds after its last flow starts, and reports every flow.

#![allow(dead_code)]

use meshbed_sim::scenario::reference::{specimen_texts, Reference};
use meshbed_sim::scenario::{Amount, FlowKind};
use meshbed_sim::{Scenario, ScenarioError};
use std::sync::OnceLock;

#[path = "hostile_toml.rs"]
pub mod hostile_toml;

/// The simulated time a scenario that is read runs for after its last flow
/// starts, and the latest it runs until (else it does not run).
pub const RUN_S: f64 = 0.2;
const RUN_LATEST_S: f64 = 2.5;
const RUN_MAX_NODES: u32 = 12;
const RUN_MAX_FLOWS: usize = 6;
const RUN_MAX_BYTES: u64 = 4 << 20;

/// Scenario files of the examples directory that need no other file.
pub const EXAMPLES: [&str; 6] = [
    include_str!("../../../../examples/chain.toml"),
    include_str!("../../../../examples/broch.toml"),
    include_str!("../../../../examples/olsr-etx.toml"),
    include_str!("../../../../examples/random-waypoint.toml"),
    include_str!("../../../../examples/aodv-random-waypoint.toml"),
    include_str!("../../../../examples/walk-away.toml"),
];

/// The scenario file's reference (built once).
pub fn reference() -> &'static Reference {
    static REFERENCE: OnceLock<Reference> = OnceLock::new();
    REFERENCE.get_or_init(Reference::scenario)
}

/// The documents the generated ones start from: the examples, then the
/// specimens (which between them have every key).
pub fn bases() -> &'static [String] {
    static BASES: OnceLock<Vec<String>> = OnceLock::new();
    BASES.get_or_init(|| EXAMPLES.iter().map(|t| t.to_string()).chain(specimen_texts()).collect())
}

/// What one input did, for the replay test.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The text went through `from_toml` (a generated document may not be
    /// made when the bytes run out).
    pub read: bool,
    pub accepted: bool,
    /// The scenario ran (0.2 s).
    pub ran: bool,
    /// The error, as the user sees it.
    pub error: Option<String>,
}

/// Runs one input.
pub fn drive(data: &[u8]) -> Outcome {
    match hostile_toml::input_text(data, reference(), bases()) {
        Some((text, generated)) => check(&text, generated),
        None => Outcome::default(),
    }
}

/// Reads `text` as a scenario and checks the oracles; `generated`: the
/// text came from the reference, so its errors name the reference's keys.
pub fn check(text: &str, generated: bool) -> Outcome {
    match Scenario::from_toml(text) {
        Ok(scenario) => {
            let written = toml::to_string(&scenario).expect("a scenario that was read serialises");
            let again = Scenario::from_toml(&written)
                .unwrap_or_else(|e| panic!("a scenario written back does not read: {e}\n{written}"));
            assert!(again == scenario, "a scenario written back reads differently:\n{written}");
            Outcome { read: true, accepted: true, ran: run_briefly(&scenario), error: None }
        }
        Err(e) => {
            check_error(&e, generated);
            Outcome { read: true, error: Some(e.to_string()), ..Outcome::default() }
        }
    }
}

/// The error names what is wrong.
pub fn check_error(e: &ScenarioError, generated: bool) {
    match e {
        ScenarioError::Invalid { invalid, .. } => {
            assert!(!invalid.key.is_empty() && !invalid.expected.is_empty(), "an error without its key: {e}");
            if generated {
                let segments = hostile_toml::error_segments(&invalid.key);
                assert!(reference().normalize(&segments).is_some(), "an error names a key the file has not: {e}");
            }
        }
        ScenarioError::UnknownKey { key, .. } => assert!(!key.is_empty(), "{e}"),
        ScenarioError::Parse { message, .. } => assert!(!message.trim().is_empty(), "an empty parse error"),
        ScenarioError::Io { .. } | ScenarioError::Refused { .. } => {}
    }
}

/// Runs a small scenario for [`RUN_S`]; whether it ran.
fn run_briefly(scenario: &Scenario) -> bool {
    let small_transfers = scenario.flows.iter().all(|f| match &f.kind {
        FlowKind::Transport(t) => matches!(t.amount, Amount::Bytes(b) if b <= RUN_MAX_BYTES),
        _ => true,
    });
    let moves_by_file = matches!(
        scenario.mobility,
        Some(meshbed_sim::mobility::MobilitySpec::Ns2 { .. } | meshbed_sim::mobility::MobilitySpec::Bonnmotion { .. })
    );
    if scenario.node_count() > RUN_MAX_NODES
        || scenario.flow_count() > RUN_MAX_FLOWS
        || !small_transfers
        || moves_by_file
        || scenario.random_flows.is_some()
    {
        return false;
    }
    // Until RUN_S after the last flow starts, if that is soon.
    let until = scenario.flows.iter().map(|f| f.start_s).fold(0.0, f64::max) + RUN_S;
    if until > RUN_LATEST_S {
        return false;
    }
    let mut short = scenario.clone();
    short.duration_s = short.duration_s.min(until);
    // A flow that stops after the shortened end is refused: not run.
    let Ok(report) = meshbed_sim::run(&short) else { return false };
    assert_eq!(report.flows.len(), short.flow_count(), "a flow missing from the report");
    true
}
