//! A timed test stream end to end on loopback: the sender stops at its
//! deadline and succeeds, its receiver learns it from the reset at once.

use crate::{send, Payload, ReceiveOptions, Receiver, ReceiverEvent, SendOptions, SinkKind};
use meshbed_proto::Protocol;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

#[test]
fn a_timed_stream_stops_at_its_deadline_as_a_success_on_both_ends() {
    let dir = std::env::temp_dir().join(format!("meshbed-net-timed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut options =
        ReceiveOptions::new("127.0.0.1:0".parse().unwrap(), SinkKind::Directory { dir: dir.clone(), overwrite: false });
    options.max_transfers = Some(1);
    let mut receiver = Receiver::bind(options).unwrap();
    let addr = receiver.local_addr().unwrap();
    let rx = std::thread::spawn(move || {
        let mut reports = Vec::new();
        receiver
            .run(&AtomicBool::new(false), &mut |e| {
                if let ReceiverEvent::Ended(r) = e {
                    reports.push(r.clone());
                }
            })
            .unwrap();
        reports
    });
    let mut so = SendOptions::new(Protocol::TcpNewReno);
    let t0 = Instant::now();
    so.stop_at = Some(t0 + Duration::from_millis(600));
    let mut samples = Vec::new();
    let report = send(Payload::timed("t").unwrap(), addr, &so, &mut |p| samples.push(p.clone())).unwrap();
    assert!(report.ok && report.stopped && report.timed, "{report:?}");
    assert!(report.acked_file_bytes > 0 && report.file_bytes == report.acked_file_bytes);
    assert!(report.goodput_bps > 0.0);
    let last = samples.last().unwrap();
    assert_eq!(last.acked_file_bytes, report.acked_file_bytes);
    assert_eq!(last.retransmissions, report.retransmissions);
    // The receiver ends at the reset, not at its 10 s silence timeout.
    let reports = rx.join().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert_eq!(reports.len(), 1);
    assert!(reports[0].ok && reports[0].timed, "{:?}", reports[0]);
    assert!(reports[0].file_bytes >= report.acked_file_bytes);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A wake waits a tick (250 µs) unless the engine paces faster than one
/// packet per 100 µs (above anything 802.11a/g carries): then a batch of
/// 32 gaps, within half the pacing burst (1 ms or 64 gaps, the larger);
/// TCP (no pacing gap) waits a tick.
#[test]
fn the_pacing_tick_is_a_batch_of_packets_only_at_high_rates() {
    let us = |n: u64| Some(meshbed_core::Duration::from_micros(n));
    let tick = |gap| super::pacing_tick(gap).as_micros();
    assert_eq!(tick(None), 250, "TCP");
    assert_eq!(tick(us(1_000)), 250, "1,000 packets/s");
    assert_eq!(tick(us(100)), 250, "10,000 packets/s: the floor, not above it");
    assert_eq!(tick(us(99)), 3_168, "10,101 packets/s: 32 gaps");
    assert_eq!(tick(us(50)), 1_600, "20,000 packets/s: 32 gaps");
    assert_eq!(tick(us(20)), 640, "50,000 packets/s: 32 gaps");
    assert_eq!(tick(us(5)), 250, "200,000 packets/s: 32 gaps are under a tick");
}
