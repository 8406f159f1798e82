//! Fuzz target: a stored run's file in the result store, as raw bytes, as
//! decompressed content, or as a real stored run with hostile changes,
//! through `Store::load`. Nothing may panic, a damaged entry is stale or
//! corrupt with its file named, and a hit must round-trip. Run with
//! `cargo +nightly fuzz run store_entry` from `crates/experiment`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "store_drive.rs"]
mod store_drive;

fuzz_target!(|data: &[u8]| {
    let _ = store_drive::drive(data);
});
