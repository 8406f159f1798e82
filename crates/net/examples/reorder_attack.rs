//! Measures a receiver's memory under the two out-of-order attacks of issue 9
//! item 2, on loopback, and prints the process's peak RSS (VmHWM).
//!
//! ```text
//! cargo run --release -p meshbed-net --example reorder_attack -- hole [CONNS] [MIB]
//! cargo run --release -p meshbed-net --example reorder_attack -- pieces [CONNS] [PIECES]
//! ```
//!
//! * `hole`: for each of CONNS connections (default 3), a SYN, then every
//!   1436-byte packet of MIB MiB (default 300) except the first: a hole at
//!   byte 0 and everything after it.
//! * `pieces`: for each connection a SYN, then PIECES (default 2 000 000)
//!   one-byte packets at every other byte offset after a hole at 0, so that
//!   no two pieces touch.
//!
//! Each connection comes from its own loopback address (127.0.0.2, .3, …) so
//! that a per-peer limit does not hide the receiver-wide one. The receiver
//! discards what it completes; nothing is written to disk.

#[path = "../tests/common/mod.rs"]
mod common;

use meshbed_net::conn::connection_id;
use meshbed_net::{ReceiveOptions, Receiver, ReceiverEvent, SinkKind};
use meshbed_proto::harness::sender_datagram;
use meshbed_proto::wire::{Control, ProtocolId};
use meshbed_proto::Protocol;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const PAYLOAD: usize = 1436;

fn datagram(control: u8, id: u32, seq: u64, payload: &[u8]) -> Vec<u8> {
    sender_datagram(ProtocolId::Atp, control, id, seq, payload)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("hole").to_string();
    let conns: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(3);
    let amount: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(if mode == "hole" { 300 } else { 2_000_000 });

    let mut options = ReceiveOptions::new("127.0.0.1:0".parse().unwrap(), SinkKind::Discard);
    options.timeout = Duration::from_secs(30);
    let mut receiver = Receiver::bind(options).expect("bind");
    let target = receiver.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let before = common::peak_rss_kib();
    let handle = std::thread::spawn(move || {
        let counters = receiver.run(&stop2, &mut |e| {
            if let ReceiverEvent::Ended(r) = e {
                eprintln!("ended: {}", r.to_text().trim_end());
            }
        });
        (counters, receiver.io_counters())
    });

    let mut sent = 0u64;
    for c in 0..conns {
        let from: SocketAddr = format!("127.0.0.{}:0", 2 + c).parse().unwrap();
        let socket = UdpSocket::bind(from).expect("bind attacker");
        let id = connection_id(Protocol::AtpDefault, 0x0a77_0000 + c);
        socket.send_to(&datagram(Control::SYN, id, 0, &[]), target).unwrap();
        // Generated as they go: a list of two million would itself take 32 MB.
        let packets: Box<dyn Iterator<Item = (u64, usize)>> = match mode.as_str() {
            "hole" => {
                let total = amount << 20;
                Box::new((1..total.div_ceil(PAYLOAD as u64)).map(|k| (k * PAYLOAD as u64, PAYLOAD)))
            }
            _ => Box::new((0..amount).map(|k| (2 * k + 1, 1))),
        };
        let chunk = vec![0x5au8; PAYLOAD];
        for (i, (seq, len)) in packets.enumerate() {
            socket.send_to(&datagram(Control::ACK, id, seq, &chunk[..len]), target).unwrap();
            sent += 1;
            // Let the receiver keep up (loopback drops what overflows its buffer).
            if i % 256 == 255 {
                std::thread::sleep(Duration::from_micros(if len == 1 { 300 } else { 2000 }));
            }
        }
    }
    std::thread::sleep(Duration::from_secs(1));
    let peak = common::peak_rss_kib();
    stop.store(true, Ordering::SeqCst);
    let (counters, io) = handle.join().unwrap();
    println!("mode {mode}, {conns} connections, {sent} datagrams sent");
    println!("receiver counters: {:?}", counters.expect("receiver loop"));
    println!("receiver io: {io:?}");
    println!("VmHWM before {} KiB, peak {} KiB ({:.1} MiB)", before, peak, peak as f64 / 1024.0);
}
