//! Fuzz target: the authenticated mode's open path (`recv --psk`) under an
//! attacker without the key who sees every sealed datagram: raw datagrams,
//! replays, reflections, flipped bytes and plain forgeries against a
//! receiver and one real sender with the key. Nothing may panic, no changed
//! datagram may open, nothing but the real sender's transfer may start, and
//! no forged byte may reach a file (`sealed_drive.rs` lists the oracles).
//! Run with `cargo +nightly fuzz run sealed_open` from `crates/net`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "sealed_drive.rs"]
mod sealed_drive;

fuzz_target!(|data: &[u8]| {
    let _ = sealed_drive::drive(data);
});
