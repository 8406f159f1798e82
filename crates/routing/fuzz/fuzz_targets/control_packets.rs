//! Fuzz target: untrusted bytes into the routing protocols' control packet
//! parsers (AODV, DSR, OLSR), with round trips through their encoders, and
//! a script of forged control packets, data packets with forged headers,
//! link changes, MAC and transport notices and time into the real engines
//! (AODV, DSR, OLSR, OLSR-ETX) on a toy network. Nothing may panic and the
//! engines' decisions must stay sane (see drive.rs). Run with
//! `cargo +nightly fuzz run control_packets` from `crates/routing`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "drive.rs"]
mod drive;

fuzz_target!(|data: &[u8]| {
    let _ = drive::drive(data);
});
