//! Fuzz target: experiment files, as raw text and as documents generated
//! from the experiment file's reference with hostile values over the
//! built-in experiments, through `Experiment::from_toml` (which checks every
//! point of the sweep); what is read must write back to itself. Nothing may
//! panic and every error must name its key. Run with
//! `cargo +nightly fuzz run experiment_toml` from `crates/experiment`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "experiment_drive.rs"]
mod experiment_drive;

fuzz_target!(|data: &[u8]| {
    let _ = experiment_drive::drive(data);
});
