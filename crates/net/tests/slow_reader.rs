//! A slow application at a real receiver (`meshbed recv --rate`, seed 002
//! §4.2.3) over loopback: the transfer completes byte-identical at the
//! reader's pace, and ATP's sender, told the read rate, does not keep
//! sending into a full receive buffer. No timing is asserted beyond an
//! upper bound on the rate (the machine is shared and noisy: it can only
//! make things slower).

mod common;

use common::*;
use meshbed_net::{send, Payload, SendOptions};
use meshbed_proto::Protocol;
use std::time::Duration;

const READ_RATE_BPS: u64 = 2_000_000;

fn slow_transfer(protocol: Protocol, len: usize) -> (meshbed_net::SendReport, meshbed_net::TransferReport) {
    let dir = temp_dir(&format!("slow-reader-{protocol}"));
    let mut options = receive_options(&dir);
    options.read_rate_bps = Some(READ_RATE_BPS);
    let receiver = RunningReceiver::start(options);
    let data = content(len, 7);
    let mut o = SendOptions::new(protocol);
    o.timeout = Duration::from_secs(10);
    // A mesh-like rate cap (1 000 packets/s, ~11 Mbit/s) instead of
    // loopback's 10 000: the first epoch's quick-start, before any feedback,
    // stays within a few times the receive buffer.
    o.atp_min_delay = Some(Duration::from_millis(1));
    let sent = send(Payload::from_bytes("slow.bin", &data).unwrap(), receiver.addr, &o, &mut |_| {})
        .unwrap_or_else(|e| panic!("{protocol}: {e}; receiver: {:?}", receiver.reports()));
    let reports = receiver.wait_for(1, Duration::from_secs(10));
    assert_eq!(reports.len(), 1);
    assert!(reports[0].ok, "{protocol}: {:?}", reports[0].error);
    assert_eq!(std::fs::read(dir.join("slow.bin")).unwrap(), data, "{protocol}: content differs");
    (sent, reports[0].clone())
}

#[test]
fn atp_sender_follows_a_2_mbps_reader() {
    for protocol in [Protocol::AtpAggressive, Protocol::AtpAdaptive] {
        let len = 1_500_000;
        let (sent, received) = slow_transfer(protocol, len);
        println!(
            "{protocol}: sender {:.2} Mbit/s in {:.2} s, {} datagrams, {} bytes retransmitted; receiver {:.2} Mbit/s, {} dropped over the buffer",
            sent.goodput_bps / 1e6,
            sent.duration_s,
            sent.datagrams_sent,
            sent.retransmitted_bytes,
            received.goodput_bps / 1e6,
            received.dropped_over_buffer_limit
        );
        // The sender finishes only once the file is committed, i.e. read:
        // its goodput is the reader's, never (much) above it; below it only
        // if the machine is slow.
        let limit = READ_RATE_BPS as f64;
        assert!(sent.goodput_bps < 1.2 * limit, "{protocol}: sender at {} bit/s", sent.goodput_bps);
        assert!(sent.goodput_bps > 0.2 * limit, "{protocol}: sender at {} bit/s", sent.goodput_bps);
        // Told the read rate, the sender does not run into the full buffer:
        // nothing to resend. With the rule switched off it resent 715 kB
        // (aggressive) and 256 kB (adaptive) of this file, the buffer
        // having dropped what the sender sent at its cap.
        assert!(
            sent.retransmitted_bytes < len as u64 / 8,
            "{protocol}: {} bytes retransmitted",
            sent.retransmitted_bytes
        );
    }
}

#[test]
fn tcp_completes_at_a_slow_readers_pace() {
    let (sent, received) = slow_transfer(Protocol::TcpNewReno, 600_000);
    println!(
        "sender {:.2} Mbit/s, {} retransmissions; receiver {} dropped over the buffer",
        sent.goodput_bps / 1e6,
        sent.retransmissions,
        received.dropped_over_buffer_limit
    );
    assert!(sent.goodput_bps < 1.2 * READ_RATE_BPS as f64, "sender at {} bit/s", sent.goodput_bps);
}

/// Issue 26: the receive buffer holds more than the sender's wait for the
/// commit confirmation lets the reader drain (at 8 kbit/s, 12 kB take 12 s
/// to read; the sender waits 2 s; at 200 kbit/s, the 125 kB buffer takes
/// 5 s, the sender waits 1 s). The sender used to report failure ("the
/// acknowledgements may have been forged") for a file its receiver then
/// committed. Now the receiver's drain reports keep it waiting while the
/// reader makes progress: both ends report success, the file committed.
#[test]
fn a_reader_slower_than_the_senders_wait_gets_one_verdict_at_both_ends() {
    for (rate_bps, len, wait_s, protocol) in
        [(8_000, 12_000, 2, Protocol::AtpAdaptive), (200_000, 300_000, 1, Protocol::TcpNewReno)]
    {
        let dir = temp_dir(&format!("drain-{rate_bps}"));
        let mut options = receive_options(&dir);
        options.read_rate_bps = Some(rate_bps);
        let receiver = RunningReceiver::start(options);
        let data = content(len, 11);
        let mut o = SendOptions::new(protocol);
        o.timeout = Duration::from_secs(wait_s);
        o.atp_min_delay = Some(Duration::from_millis(1));
        let sent = send(Payload::from_bytes("drain.bin", &data).unwrap(), receiver.addr, &o, &mut |_| {});
        let reports = receiver.wait_for(1, Duration::from_secs(60));
        let sent = sent.unwrap_or_else(|e| panic!("{rate_bps} bit/s: the sender failed: {e}; receiver: {reports:?}"));
        assert!(sent.ok);
        assert!(reports[0].ok, "{rate_bps} bit/s: {:?}", reports[0].error);
        assert_eq!(std::fs::read(dir.join("drain.bin")).unwrap(), data);
        // The reader's pace, not the network's, set the duration.
        let read_s = len as f64 * 8.0 / rate_bps as f64;
        assert!(sent.duration_s > 0.5 * read_s, "{rate_bps}: {} s for {read_s} s of reading", sent.duration_s);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
