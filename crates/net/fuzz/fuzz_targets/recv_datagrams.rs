//! Fuzz target: untrusted bytes into the receiver, beyond the wire decoder:
//! the transfer header and a file sink, and a script of datagrams, time and
//! a real sender driving a socket-free `ReceiverCore`. Nothing may panic,
//! every datagram the receiver sends must parse, its limits must hold and no
//! temporary file may outlive it. Run with
//! `cargo +nightly fuzz run recv_datagrams` from `crates/net`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "drive.rs"]
mod drive;

fuzz_target!(|data: &[u8]| {
    let _ = drive::drive(data);
});
