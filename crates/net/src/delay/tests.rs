//! The delay sources' rules, each on hand-made datagrams and times.

use super::*;
use meshbed_proto::wire::HEADER_LEN;

fn t(us: u64) -> Instant {
    Instant::from_nanos(us * 1000)
}

#[test]
fn parses_specs_and_durations() {
    assert_eq!("e2e".parse::<DelaySpec>().unwrap(), DelaySpec::EndToEnd);
    assert_eq!("fixed:2ms".parse::<DelaySpec>().unwrap(), DelaySpec::Fixed(Duration::from_millis(2)));
    assert_eq!("fixed:250us".parse::<DelaySpec>().unwrap(), DelaySpec::Fixed(Duration::from_micros(250)));
    assert_eq!("fixed:0.5s".parse::<DelaySpec>().unwrap(), DelaySpec::Fixed(Duration::from_millis(500)));
    assert_eq!("file:/proc/ath5k/Da".parse::<DelaySpec>().unwrap(), DelaySpec::File("/proc/ath5k/Da".into()));
    for bad in ["fixed:2parsecs", "fixed:-1ms", "file:", "mac", "fixed:", "fixed:250", "fixed:2h"] {
        assert!(bad.parse::<DelaySpec>().is_err(), "{bad}");
    }
}

fn data_packet(seq: u64, len: usize, d_max_us: u32) -> Vec<u8> {
    let repr = Repr {
        protocol: ProtocolId::Atp,
        control: Control(0),
        hop_count: 0,
        connection_id: 9,
        seq,
        ack: 0,
        d_max_us,
        d_s_us: 100,
        sack_blocks: vec![],
        payload_len: len,
    };
    let mut buf = vec![0u8; HEADER_LEN + len];
    repr.emit(&mut buf);
    buf
}

#[test]
fn fixed_source_stamps_eta_when_idle_then_d_and_never_lowers() {
    let mut s =
        Stamper::new(DelaySource::Fixed(Duration::from_micros(400)), EtaRule::Fixed(3.0), Duration::from_millis(100));
    let mut p = data_packet(0, 10, 0);
    s.stamp(t(0), &mut p).unwrap();
    let v = Packet::new_checked(&p[..]).unwrap();
    assert_eq!((v.d_max_us(), v.hop_count()), (1200, 1), "idle: η·D");
    let mut p = data_packet(10, 10, 0);
    s.stamp(t(50), &mut p).unwrap();
    assert_eq!(Packet::new_checked(&p[..]).unwrap().d_max_us(), 400, "busy: D");
    let mut p = data_packet(20, 10, 900);
    s.stamp(t(60), &mut p).unwrap();
    assert_eq!(Packet::new_checked(&p[..]).unwrap().d_max_us(), 900, "a larger D_max stays");
}

/// A plain estimator (α = 0) after a 1 ms sample, then a 3 ms one: 2 ms
/// over the minimum; bytes [0, 200) sent and acknowledged.
fn two_ms_over_the_minimum() -> EndToEndEstimator {
    let mut e = EndToEndEstimator::new(0.0);
    e.on_data_sent(t(0), 0, 100);
    e.on_feedback(t(1_000), 100, &[], Duration::ZERO, 0);
    e.on_data_sent(t(2_000), 100, 100);
    e.on_feedback(t(5_000), 200, &[], Duration::ZERO, 0);
    assert_eq!(e.current(), Duration::from_millis(2));
    e
}

#[test]
fn end_to_end_source_is_offered_without_eta_when_idle() {
    let e = two_ms_over_the_minimum();
    let mut s = Stamper::new(DelaySource::EndToEnd(e), EtaRule::Fixed(3.0), Duration::from_millis(100));
    let mut p = data_packet(0, 10, 0);
    let out = s.stamp(t(10_000), &mut p).unwrap();
    assert!(out.idle, "a fresh sender is idle");
    assert_eq!(Packet::new_checked(&p[..]).unwrap().d_max_us(), 2_000, "the estimate as it is, not η·D");
}

#[test]
fn file_source_reads_microseconds_and_keeps_last_value_on_error() {
    let path = std::env::temp_dir().join(format!("meshbed-net-da-{}", std::process::id()));
    std::fs::write(&path, "1500\n").unwrap();
    let mut src = DelaySource::open(&DelaySpec::File(path.clone()), 0.75, Duration::ZERO).unwrap();
    assert_eq!(src.current(t(0)), Duration::from_micros(1500));
    std::fs::write(&path, "garbage").unwrap();
    assert_eq!(src.current(t(20_000)), Duration::from_micros(1500));
    std::fs::write(&path, "300").unwrap();
    assert_eq!(src.current(t(25_000)), Duration::from_micros(1500), "not re-read within 10 ms");
    assert_eq!(src.current(t(40_000)), Duration::from_micros(300));
    std::fs::remove_file(&path).unwrap();
    assert!(DelaySource::open(&DelaySpec::File(path), 0.75, Duration::ZERO).is_err());
}

#[test]
fn a_delay_file_that_never_ends_or_blocks_is_refused_at_once() {
    let t0 = std::time::Instant::now();
    let e = read_delay_file(std::path::Path::new("/dev/zero")).unwrap_err();
    assert!(e.contains("not a regular file"), "{e}");
    let dir = std::env::temp_dir().join(format!("meshbed-delay-fifo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let e = read_delay_file(&fifo).unwrap_err();
    assert!(e.contains("not a regular file"), "{e}");
    // A large file: read 64 bytes of it, and quoted in a short excerpt.
    let big = dir.join("big");
    std::fs::write(&big, "x".repeat(3 << 20)).unwrap();
    let e = read_delay_file(&big).unwrap_err();
    assert!(e.len() < 200 && e.contains("xxx…"), "{e}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(1));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn end_to_end_estimate_is_queueing_over_the_minimum() {
    let mut e = EndToEndEstimator::new(0.0);
    e.on_data_sent(t(0), 0, 100);
    e.on_feedback(t(1_000), 100, &[], Duration::ZERO, 0);
    assert_eq!(e.current(), Duration::ZERO, "one sample is its own minimum");
    e.on_data_sent(t(2_000), 100, 100);
    e.on_data_sent(t(2_100), 200, 100);
    // The SACK block end reports the newest segment: RTT 3 ms.
    e.on_feedback(t(5_100), 100, &[(200, 300)], Duration::ZERO, 0);
    assert_eq!(e.current(), Duration::from_millis(2));
    // A retransmitted segment gives no sample.
    e.on_data_sent(t(6_000), 100, 100);
    e.on_data_sent(t(6_000), 300, 100);
    e.on_data_sent(t(6_100), 300, 100);
    e.on_feedback(t(9_000), 400, &[], Duration::ZERO, 0);
    assert_eq!(e.samples(), 2);
}

/// With a resolution, only the queueing above it counts: 3 ms samples
/// over a 1 ms minimum give 2 ms plain, 1.75 ms with a 250 µs floor and
/// nothing with a 3 ms one.
#[test]
fn end_to_end_estimate_is_what_lies_above_the_hosts_resolution() {
    for (floor_us, want_us) in [(0, 2_000), (250, 1_750), (3_000, 0)] {
        let mut e = EndToEndEstimator::new(0.0).with_resolution(Duration::from_micros(floor_us));
        e.on_data_sent(t(0), 0, 100);
        e.on_feedback(t(1_000), 100, &[], Duration::ZERO, 0);
        assert_eq!(e.current(), Duration::ZERO);
        // Four 3 ms samples: the host's filter (the smallest of four)
        // and the plain estimate (their average) agree on 3 ms.
        for k in 0..4u64 {
            e.on_data_sent(t(2_000 + 10_000 * k), 100 * (k + 1), 100);
            e.on_feedback(t(5_000 + 10_000 * k), 100 * (k + 2), &[], Duration::ZERO, 0);
        }
        assert_eq!(e.current(), Duration::from_micros(want_us), "resolution {floor_us} µs");
    }
}

/// On a host one long sample among short ones (a late wake-up) is not
/// queueing: the estimate is the smallest of the last four samples over
/// the minimum; a queue that lengthens four samples in a row is.
#[test]
fn a_hosts_estimate_ignores_one_long_sample_but_not_a_standing_queue() {
    let mut e = EndToEndEstimator::new(0.75).with_resolution(Duration::from_micros(100));
    let mut at = 0u64;
    let mut seq = 0u64;
    let mut sample = |e: &mut EndToEndEstimator, rtt_us: u64| {
        e.on_data_sent(t(at), seq, 100);
        seq += 100;
        at += rtt_us;
        e.on_feedback(t(at), seq, &[], Duration::ZERO, 0);
        at += 10;
    };
    for rtt in [50, 60, 55, 52] {
        sample(&mut e, rtt);
    }
    assert_eq!(e.current(), Duration::ZERO);
    sample(&mut e, 5_000);
    assert_eq!(e.current(), Duration::ZERO, "one late sample: the smallest of four is 52 µs");
    let plain = EndToEndEstimator::new(0.75);
    assert!(plain.current().is_zero());
    for rtt in [1_050, 1_100, 1_080, 1_060] {
        sample(&mut e, rtt);
    }
    // Smallest of the last four 1,050 µs, less 50 µs minimum, less 100.
    assert_eq!(e.current(), Duration::from_micros(900));
}

/// Feedbacks that report nothing new (a window-bound sender repairing
/// holes) leave the estimate as it was twice, then it is stale and reads
/// zero; the next fresh sample brings it back.
#[test]
fn an_estimate_without_fresh_samples_goes_stale() {
    let mut e = two_ms_over_the_minimum();
    // A retransmission of [100, 200) and feedbacks reporting nothing
    // beyond byte 200: no sample.
    e.on_data_sent(t(6_000), 100, 100);
    e.on_feedback(t(8_000), 200, &[], Duration::ZERO, 0);
    e.on_feedback(t(9_000), 200, &[], Duration::ZERO, 0);
    assert_eq!(e.current(), Duration::from_millis(2), "two feedbacks without a sample");
    e.on_feedback(t(10_000), 200, &[], Duration::ZERO, 0);
    assert_eq!(e.current(), Duration::ZERO, "the third: stale");
    e.on_data_sent(t(11_000), 200, 100);
    e.on_feedback(t(14_000), 300, &[], Duration::ZERO, 0);
    assert_eq!(e.current(), Duration::from_millis(2), "a fresh 3 ms sample");
}

/// A route outage with the reverse path back first: the feedback that
/// crosses reports a byte that arrived 26 s ago. Its D_s (the
/// receiver's hold) is left out, so the sample is the 10 ms round trip,
/// not 26 s.
#[test]
fn the_receivers_hold_is_not_path_delay() {
    let mut e = EndToEndEstimator::new(0.0);
    e.on_data_sent(t(0), 0, 100);
    e.on_feedback(t(10_000), 100, &[], Duration::ZERO, 0);
    e.on_data_sent(t(20_000), 100, 100);
    e.on_feedback(t(26_030_000), 200, &[], Duration::from_micros(26_000_000), 0);
    assert_eq!(e.srtt(), Some(Duration::from_millis(10)));
    assert_eq!(e.current(), Duration::ZERO);
}

/// A full feedback names only the first holes (seed 002 §4.2.2), so
/// bytes held above them were named only after the repair, and the ack
/// rule timed the repair. An echo times the newest arrival exactly, a
/// retransmission's included, less the receiver's hold.
#[test]
fn an_echo_times_the_newest_arrival_whatever_the_blocks_leave_out() {
    let mut e = EndToEndEstimator::new(0.0);
    for k in 0..10u64 {
        assert_eq!(e.on_data_sent(t(k * 1_000), 100 * k, 100), k + 1, "transmissions are numbered from 1");
    }
    // Only [0, 100) is acknowledged, nothing is named above it, and the
    // echo is number 10 (sent at 9 ms), which arrived 2 ms before.
    e.on_feedback(t(15_000), 100, &[], Duration::from_millis(2), 10);
    assert_eq!((e.samples(), e.srtt()), (1, Some(Duration::from_millis(4))));
    // The repair of [100, 200), echoed: its own 5 ms, not 24 ms since
    // the first copy.
    let repair = e.on_data_sent(t(20_000), 100, 100);
    assert_eq!(repair, 11);
    let repair = repair as u32;
    e.on_feedback(t(25_000), 1_000, &[], Duration::ZERO, repair);
    assert_eq!((e.samples(), e.srtt()), (2, Some(Duration::from_millis(5))));
    assert_eq!(e.current(), Duration::from_millis(1), "5 ms over the 4 ms minimum");
    // The same echo again, and a number never sent: no news.
    e.on_feedback(t(26_000), 1_000, &[], Duration::ZERO, repair);
    e.on_feedback(t(27_000), 1_000, &[], Duration::ZERO, 99);
    assert_eq!(e.samples(), 2);
    assert_eq!(e.current(), Duration::from_millis(1));
    e.on_feedback(t(28_000), 1_000, &[], Duration::ZERO, repair);
    assert_eq!(e.current(), Duration::ZERO, "three feedbacks without news: stale");
    // An older number than the newest taken is old news too.
    e.on_feedback(t(29_000), 1_000, &[], Duration::ZERO, 3);
    assert_eq!(e.samples(), 2);
}

/// The number rides in ATP data's unused `ack`; a TCP segment's `ack`
/// is its acknowledgement and stays as the engine wrote it.
#[test]
fn atp_data_carries_its_transmission_number_and_tcp_keeps_its_ack() {
    let e = EndToEndEstimator::new(0.75);
    let mut s = Stamper::new(DelaySource::EndToEnd(e), EtaRule::Fixed(3.0), Duration::from_millis(100));
    let ack_of = |p: &[u8]| Packet::new_checked(p).unwrap().ack();
    let (mut a, mut b) = (data_packet(0, 10, 0), data_packet(10, 10, 0));
    s.stamp(t(0), &mut a).unwrap();
    s.stamp(t(1), &mut b).unwrap();
    assert_eq!((ack_of(&a), ack_of(&b)), (1, 2));
    let mut tcp = data_packet(20, 10, 0);
    tcp[0] = ProtocolId::Tcp as u8;
    Packet::new_unchecked(&mut tcp[..]).set_ack(777);
    s.stamp(t(2), &mut tcp).unwrap();
    assert_eq!(ack_of(&tcp), 777);
}
