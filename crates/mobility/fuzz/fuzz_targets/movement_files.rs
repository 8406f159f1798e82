//! Fuzz target: untrusted text through the ns-2 and BonnMotion movement
//! file readers, and every trajectory they accept evaluated over its whole
//! time span: nothing may panic or hang (run with `-timeout=10`), every
//! position must be finite, within the bounds, and continuous from leg to
//! leg. Run with `cargo +nightly fuzz run movement_files -- -timeout=10`
//! from `crates/mobility`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "drive.rs"]
mod drive;

fuzz_target!(|data: &[u8]| {
    let _ = drive::drive(data);
});
