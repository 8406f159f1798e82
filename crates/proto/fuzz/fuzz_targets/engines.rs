//! Fuzz target: every protocol's sender and receiver (`Protocol::ALL`,
//! picked by the first byte) under a script of hostile datagrams, honest
//! losses, duplicates and reordering, route notices and time. Nothing may
//! panic, everything emitted must parse, and an honest session must hand up
//! every byte once, in order. Run with `cargo +nightly fuzz run engines`
//! from `crates/proto`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "engines_drive.rs"]
mod engines_drive;

fuzz_target!(|data: &[u8]| {
    let _ = engines_drive::drive(data);
});
