//! Transfers over loopback through the impairment shim: every transfer ends
//! byte-identical, or fails loudly with nothing that looks complete.
//! No timing is asserted; timeouts are short only to keep the suite quick.

mod common;

use common::*;
use meshbed_net::framing::is_temporary_name;
use meshbed_net::{send, DelaySpec, Payload, SendOptions};
use meshbed_proto::Protocol;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

fn options(protocol: &str) -> SendOptions {
    let mut o = SendOptions::new(protocol.parse::<Protocol>().unwrap());
    o.timeout = Duration::from_secs(5);
    o
}

/// Sends `data` as `name` through a shim with `imp` to a fresh receiver in
/// `dir`; returns the sender's result and the receiver's reports.
fn transfer_through(
    dir: &std::path::Path,
    name: &str,
    data: &[u8],
    protocol: &str,
    imp: Impairments,
) -> (Result<meshbed_net::SendReport, meshbed_net::SendError>, Vec<meshbed_net::TransferReport>) {
    let receiver = RunningReceiver::start(receive_options(dir));
    let shim = Shim::start(receiver.addr, imp);
    let result = send(Payload::from_bytes(name, data).unwrap(), shim.addr, &options(protocol), &mut |_| {});
    let reports = receiver.wait_for(1, Duration::from_secs(10));
    (result, reports)
}

fn assert_identical(dir: &std::path::Path, name: &str, data: &[u8]) {
    assert_eq!(names(dir), vec![name.to_string()], "only the final name is visible");
    assert!(std::fs::read(dir.join(name)).unwrap() == data, "{name}: content differs");
}

#[test]
fn lossy_reordering_duplicating_link_delivers_identical_files() {
    // The three run side by side; TCP, whose timeouts back off under 20%
    // loss, gets a smaller file to keep the suite short.
    let cases = [("atp-adaptive", 300_000), ("atp-default", 310_000), ("tcp-newreno", 200_000)];
    let threads: Vec<_> = cases
        .into_iter()
        .enumerate()
        .map(|(i, (protocol, len))| {
            std::thread::spawn(move || {
                let dir = temp_dir(&format!("lossy-{protocol}"));
                let data = content(len, i as u64);
                let imp = Impairments { seed: 11 + i as u64, loss: 0.2, duplicate: 0.05, reorder: 0.1, blackout: None };
                let (result, reports) = transfer_through(&dir, "data.bin", &data, protocol, imp);
                let report = result.unwrap_or_else(|e| panic!("{protocol}: {e}"));
                assert!(report.retransmissions > 0, "{protocol}: 20% loss must cause retransmissions");
                assert_eq!(reports.len(), 1);
                assert!(reports[0].ok, "{protocol}: {:?}", reports[0].error);
                assert_eq!(reports[0].file_bytes, data.len() as u64);
                assert!(reports[0].dropped_datagrams > 0, "{protocol}: duplicates are counted");
                assert_identical(&dir, "data.bin", &data);
                std::fs::remove_dir_all(&dir).unwrap();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// The send report says how the loop kept ATP's pacing: ATP waits for its
/// inter-packet slots, so the loop wakes at engine deadlines, each a
/// measured lateness (the simulator's senders are never late: what the
/// emulator-vs-simulator comparison needs, issue 24).
#[test]
fn the_send_report_measures_how_late_the_paced_sender_woke() {
    let dir = temp_dir("pacing");
    let data = content(400_000, 5);
    let imp = Impairments { seed: 3, loss: 0.0, duplicate: 0.0, reorder: 0.0, blackout: None };
    let (result, _) = transfer_through(&dir, "paced.bin", &data, "atp-default", imp);
    let report = result.unwrap();
    let p = &report.pacing;
    assert!(p.deadline_wakes > 0, "{p:?}");
    let (p50, p99) = (p.late_p50_us.unwrap(), p.late_p99_us.unwrap());
    assert!(p50 <= p99 && p99 <= p.late_max_us, "{p:?}");
    assert!(p.sending_wakes > 0 && p.burst_datagrams >= 2 * p.burst_wakes && p.max_burst >= 1, "{p:?}");
    assert!(report.to_text().contains("wake-ups at the engine's deadlines"), "{}", report.to_text());
    assert_identical(&dir, "paced.bin", &data);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn two_second_blackout_mid_transfer_completes() {
    for protocol in ["atp-adaptive", "tcp-newreno"] {
        let dir = temp_dir(&format!("blackout-{protocol}"));
        let data = content(400_000, 3);
        let imp = Impairments { seed: 5, blackout: Some((200_000, Duration::from_secs(2))), ..Default::default() };
        let receiver = RunningReceiver::start(receive_options(&dir));
        let shim = Shim::start(receiver.addr, imp);
        let result = send(Payload::from_bytes("b.bin", &data).unwrap(), shim.addr, &options(protocol), &mut |_| {});
        assert!(shim.blackout_happened());
        result.unwrap_or_else(|e| panic!("{protocol}: {e}"));
        receiver.wait_for(1, Duration::from_secs(5));
        assert_identical(&dir, "b.bin", &data);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn malformed_and_stray_datagrams_are_counted_and_the_transfer_completes() {
    let dir = temp_dir("malformed");
    let data = content(300_000, 9);
    let receiver = RunningReceiver::start(receive_options(&dir));
    let shim = Shim::start(receiver.addr, Impairments { seed: 2, loss: 0.05, ..Default::default() });
    let target = receiver.addr;
    let sender = std::thread::spawn(move || {
        let mut o = options("atp-adaptive");
        // A slower rate keeps the transfer running while the junk arrives.
        o.delay = DelaySpec::Fixed(meshbed_core::Duration::from_micros(500));
        send(Payload::from_bytes("m.bin", &data).unwrap(), shim.addr, &o, &mut |_| {}).map(|r| (r, data, shim))
    });
    let junk = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut sent_malformed = 0;
    let mut sent_stray = 0;
    let mut seed = 77u64;
    for i in 0..300 {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let bytes: Vec<u8> = match i % 3 {
            // Random bytes of random length (a random first byte is almost
            // never a valid protocol id and version).
            0 => (0..(seed >> 54) as usize).map(|k| (seed >> (k % 56)) as u8).collect(),
            // A truncated header.
            1 => vec![1, 1, 0, 0, 0, 0, 0, 0, 1, 2, 3],
            // A well-formed ATP data packet for a connection that does not exist.
            _ => {
                let mut p = vec![0u8; 36 + 10];
                p[0] = 1;
                p[1] = 1;
                p[8..12].copy_from_slice(&0x3abc_def0u32.to_be_bytes());
                p[19] = 100;
                p
            }
        };
        if i % 3 == 2 {
            sent_stray += 1;
        } else if bytes.len() < 36 || bytes[0] > 2 || bytes[0] == 0 {
            sent_malformed += 1;
        }
        junk.send_to(&bytes, target).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    let (report, data, _shim) = sender.join().unwrap().unwrap_or_else(|e| panic!("{e}"));
    assert!(report.ok);
    let reports = receiver.wait_for(1, Duration::from_secs(5));
    assert!(reports[0].ok, "{:?}", reports[0].error);
    let counters = receiver.stop();
    assert!(counters.malformed >= sent_malformed, "{counters:?} vs {sent_malformed} malformed sent");
    assert!(counters.stray >= sent_stray, "{counters:?} vs {sent_stray} stray sent");
    assert!(counters.resets_sent >= 1, "a stray data packet is answered with RST");
    assert_identical(&dir, "m.bin", &data);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn two_concurrent_transfers_to_one_receiver_complete() {
    let dir = temp_dir("concurrent");
    let receiver = RunningReceiver::start(receive_options(&dir));
    let files: Vec<(String, Vec<u8>, &str)> = vec![
        ("one.bin".into(), content(250_000, 1), "atp-adaptive"),
        ("two.bin".into(), content(260_000, 2), "tcp-newreno"),
    ];
    let threads: Vec<_> = files
        .iter()
        .cloned()
        .map(|(name, data, protocol)| {
            let addr = receiver.addr;
            std::thread::spawn(move || {
                let shim = Shim::start(addr, Impairments { seed: 4, loss: 0.1, reorder: 0.05, ..Default::default() });
                send(Payload::from_bytes(&name, &data).unwrap(), shim.addr, &options(protocol), &mut |_| {})
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap().unwrap_or_else(|e| panic!("{e}"));
    }
    let reports = receiver.wait_for(2, Duration::from_secs(5));
    assert_eq!(reports.iter().filter(|r| r.ok).count(), 2, "{reports:?}");
    assert_ne!(reports[0].connection_id, reports[1].connection_id);
    assert_eq!(names(&dir), vec!["one.bin".to_string(), "two.bin".to_string()]);
    for (name, data, _) in &files {
        assert!(&std::fs::read(dir.join(name)).unwrap() == data);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn receiver_restarted_mid_transfer_never_leaves_a_wrong_complete_file() {
    for protocol in ["atp-adaptive", "tcp-newreno"] {
        let dir = temp_dir(&format!("restart-{protocol}"));
        let data = content(400_000, 21);
        let first = RunningReceiver::start(receive_options(&dir));
        let addr = first.addr;
        // The shim goes dark for a second half-way, so the receiver is
        // stopped while it holds part of the file, whatever the speed.
        let imp = Impairments { seed: 8, blackout: Some((150_000, Duration::from_secs(1))), ..Default::default() };
        let shim = Shim::start(addr, imp);
        let sender = {
            let data = data.clone();
            let to = shim.addr;
            std::thread::spawn(move || {
                let mut o = options(protocol);
                o.timeout = Duration::from_secs(3);
                o.retries = 3;
                o.retry_delay = Duration::from_millis(300);
                send(Payload::from_bytes("r.bin", &data).unwrap(), to, &o, &mut |_| {})
            })
        };
        let t0 = Instant::now();
        while !shim.blackout_happened() && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(names(&dir).iter().any(|n| is_temporary_name(n)), "{:?}", names(&dir));
        first.stop();
        assert!(!dir.join("r.bin").exists(), "no final name while incomplete");
        let mut o = receive_options(&dir);
        o.listen = addr;
        let second = RunningReceiver::start(o);
        let result = sender.join().unwrap();
        second.wait_for(1, Duration::from_secs(5));
        drop(second);
        drop(shim);
        // The restarted receiver is up long before the sender's retries run
        // out (3 more attempts, 300 ms apart, each with a 3 s timeout): the
        // transfer must complete, from the first byte again, and the file
        // must be the data. A failure here is a failure, not an outcome.
        let report = result.unwrap_or_else(|e| panic!("{protocol}: no completion after the restart: {e}"));
        assert!(report.attempts >= 2, "{protocol}: the first connection cannot have completed: {report:?}");
        assert_identical(&dir, "r.bin", &data);
        assert!(names(&dir).iter().all(|n| !is_temporary_name(n)), "{:?}", names(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn unreachable_peer_fails_loudly_within_the_timeout() {
    // Nothing listening: the kernel's port-unreachable ends it at once.
    let free = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let mut o = options("atp-adaptive");
    o.timeout = Duration::from_secs(1);
    let t0 = Instant::now();
    let err = send(Payload::from_bytes("x", b"abc").unwrap(), free, &o, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("refused") || err.to_string().contains("unreachable"), "{err}");
    assert!(!err.report().unwrap().ok);
    // A black hole (a socket that never answers): the timeout ends it.
    let hole = UdpSocket::bind("127.0.0.1:0").unwrap();
    for protocol in ["atp-default", "tcp-reno"] {
        let mut o = options(protocol);
        o.timeout = Duration::from_millis(800);
        let err =
            send(Payload::from_bytes("x", b"abc").unwrap(), hole.local_addr().unwrap(), &o, &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("unreachable: nothing heard"), "{protocol}: {err}");
    }
    assert!(t0.elapsed() < Duration::from_secs(60), "bounded");
}

#[test]
fn vanished_sender_fails_the_transfer_and_leaves_no_file() {
    let dir = temp_dir("vanished");
    let mut ro = receive_options(&dir);
    ro.timeout = Duration::from_secs(1);
    let receiver = RunningReceiver::start(ro);
    let shim = Shim::start(
        receiver.addr,
        Impairments { seed: 1, blackout: Some((100_000, Duration::from_secs(3600))), ..Default::default() },
    );
    let mut o = options("atp-aggressive");
    o.timeout = Duration::from_secs(1);
    let err =
        send(Payload::from_bytes("v.bin", &content(300_000, 5)).unwrap(), shim.addr, &o, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("unreachable"), "{err}");
    let reports = receiver.wait_for(1, Duration::from_secs(5));
    assert!(!reports[0].ok && reports[0].error.as_deref().unwrap().contains("unreachable"), "{reports:?}");
    assert!(names(&dir).is_empty(), "{:?}", names(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The receiver refuses the file and resets the connection, naming the
/// next byte it expected; the sender takes the reset (at once, or after a
/// challenge when its acknowledgements lag: RFC 5961 §3) and says so well
/// within its timeout, for every protocol family.
#[test]
fn an_existing_name_is_refused_and_the_sender_is_told() {
    for protocol in ["tcp-tahoe", "atp-adaptive", "atp-default", "mtl"] {
        let dir = temp_dir(&format!("exists-{protocol}"));
        std::fs::write(dir.join("e.txt"), b"keep me").unwrap();
        let receiver = RunningReceiver::start(receive_options(&dir));
        let started = std::time::Instant::now();
        let err = send(Payload::from_bytes("e.txt", b"new").unwrap(), receiver.addr, &options(protocol), &mut |_| {})
            .unwrap_err();
        assert!(err.to_string().contains("reset"), "{protocol}: {err}");
        let elapsed = started.elapsed();
        assert!(elapsed < Duration::from_secs(3), "{protocol}: told after {elapsed:?}");
        let reports = receiver.wait_for(1, Duration::from_secs(5));
        assert!(reports[0].error.as_deref().unwrap().contains("already exists"), "{reports:?}");
        assert_eq!(std::fs::read(dir.join("e.txt")).unwrap(), b"keep me");
        assert_eq!(names(&dir), vec!["e.txt".to_string()]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
