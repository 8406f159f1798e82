//! Fuzz target: untrusted bytes into the wire parser, the relay's stamping and
//! both ATP engines. Nothing may panic. Run with
//! `cargo +nightly fuzz run wire_decode` from `crates/proto`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "drive.rs"]
mod drive;

fuzz_target!(|data: &[u8]| {
    let _ = drive::drive(data);
});
