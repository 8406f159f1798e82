//! Fuzz target: scenario files, as raw text and as documents generated
//! from the scenario's own reference with hostile values, through
//! `Scenario::from_toml`; what is read must write back to itself and, when
//! small, run briefly. Nothing may panic and every error must name its key.
//! Run with `cargo +nightly fuzz run scenario_toml` from `crates/sim`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "drive.rs"]
mod drive;

fuzz_target!(|data: &[u8]| {
    let _ = drive::drive(data);
});
