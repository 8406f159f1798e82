//! Flow control from the application's read rate (seed 002 §4.2.3): a slow
//! reader at the destination of a chain that carries several Mbit/s. ATP's
//! sender follows the reader's rate (its traced D_s), a step in the
//! reader's rate moves it, a reader that keeps up changes nothing, and TCP
//! (no advertised window on the wire) still completes at the reader's pace.

use meshbed_proto::Protocol;
use meshbed_sim::scenario::{FlowSpec, ReadRateStep, Scenario, SlowReader};
use meshbed_sim::TraceKind;
use meshbed_sim::{FlowResult, SimReport};

const HOPS: u32 = 3;

/// `bytes` from node 0 to node 3 of the default 802.11a chain (200 m), with
/// a reader at `read_rate_bps` (none: it takes everything) and traces on.
fn scenario(protocol: Protocol, bytes: u64, read_rate_bps: Option<u64>, steps: &[(f64, u64)]) -> Scenario {
    let mut s = Scenario::chain(HOPS, 200.0, 90.0);
    let mut f = FlowSpec::transfer(0, HOPS, protocol, bytes);
    let t = f.transport_mut().unwrap();
    t.trace = true;
    t.reader = read_rate_bps.map(|rate_bps| SlowReader {
        rate_bps,
        steps: steps.iter().map(|&(at_s, rate_bps)| ReadRateStep { at_s, rate_bps }).collect(),
        receive_buffer_bytes: None,
    });
    s.flows = vec![f];
    s.validate().expect("valid scenario");
    s
}

fn run(s: &Scenario) -> SimReport {
    meshbed_sim::run(s).expect("valid scenario")
}

fn assert_delivered(f: &FlowResult, bytes: u64) {
    assert!(f.completed() && f.verified() && !f.failed(), "{:?}", f.error());
    assert_eq!(f.bytes_delivered, bytes);
}

/// The ATP sender's rate in bit/s (payload × 8 / D_s), time-weighted over
/// `[from_s, to_s]`, from its traced D_s.
fn sender_rate_bps(f: &FlowResult, payload_bytes: u64, from_s: f64, to_s: f64) -> f64 {
    let samples: Vec<(f64, f64)> = f
        .trace
        .iter()
        .filter(|r| r.kind == TraceKind::DSUs && r.side.name() == "sender")
        .map(|r| (r.t_s, payload_bytes as f64 * 8.0 / (r.value / 1e6)))
        .collect();
    let mut weighted = 0.0;
    for (k, &(t, rate)) in samples.iter().enumerate() {
        let next = samples.get(k + 1).map_or(f64::INFINITY, |s| s.0);
        let (a, b) = (t.max(from_s), next.min(to_s));
        if b > a {
            weighted += rate * (b - a);
        }
    }
    weighted / (to_s - from_s)
}

/// Bytes handed to the application in `[from_s, to_s)`, as bit/s.
fn reader_rate_bps(f: &FlowResult, from_s: f64, to_s: f64) -> f64 {
    let bytes: f64 = f
        .trace
        .iter()
        .filter(|r| r.kind == TraceKind::DeliveredBytes && r.t_s >= from_s && r.t_s < to_s)
        .map(|r| r.value)
        .sum();
    bytes * 8.0 / (to_s - from_s)
}

fn payload(s: &Scenario) -> u64 {
    s.flows[0].transport().unwrap().payload_bytes()
}

#[test]
fn atp_sender_follows_a_200_kbps_reader() {
    // Unlimited, the chain carries several Mbit/s.
    let free = run(&scenario(Protocol::AtpDefault, 1_000_000, None, &[]));
    assert_delivered(&free.flows[0], 1_000_000);
    assert!(free.flows[0].goodput_bps > 1.5e6, "{}", free.flows[0].goodput_bps);

    // 60 s of reading: the quick-start's first epoch alone brings ~700 kB.
    let bytes = 1_500_000;
    let s = scenario(Protocol::AtpDefault, bytes, Some(200_000), &[]);
    let r = run(&s);
    let f = &r.flows[0];
    assert_delivered(f, bytes);
    let sender = sender_rate_bps(f, payload(&s), 5.0, 40.0);
    println!("goodput {:.0} bit/s, sender {sender:.0} bit/s over 5–40 s", f.goodput_bps);
    // The reader's pace is the goodput: within 5 % (the handshake and the
    // last packet's way are the only time it does not read at its rate).
    assert!((f.goodput_bps - 200e3).abs() < 0.05 * 200e3, "goodput {}", f.goodput_bps);
    // The sender runs at the reader's rate, not the path's: the first
    // feedback after the quick-start's epoch carries R_app, and ATP's
    // increase rule (κ of the difference per epoch) closes the rest.
    assert!((sender - 200e3).abs() < 0.15 * 200e3, "sender at {sender} bit/s");
}

#[test]
fn atp_sender_rate_rises_after_the_reader_speeds_up() {
    let bytes = 1_500_000;
    let s = scenario(Protocol::AtpDefault, bytes, Some(200_000), &[(10.0, 1_000_000)]);
    let r = run(&s);
    let f = &r.flows[0];
    assert_delivered(f, bytes);
    let end = f.completion_time_s().expect("completed");
    let before = sender_rate_bps(f, payload(&s), 3.0, 10.0);
    let after = sender_rate_bps(f, payload(&s), 13.0, end - 2.0);
    let read_before = reader_rate_bps(f, 3.0, 10.0);
    let read_after = reader_rate_bps(f, 13.0, end - 2.0);
    println!(
        "sender {before:.0} → {after:.0} bit/s, reader {read_before:.0} → {read_after:.0} bit/s, done at {end:.1} s"
    );
    assert!((before - 200e3).abs() < 0.15 * 200e3, "before the step: {before}");
    // It rises by κ of the difference per epoch (seed 002 §4.3.2), so
    // slower than the step, and never past the reader.
    assert!(after > 3.0 * before, "after the step: {after} (before {before})");
    assert!(after < 1.05e6, "after the step: {after}");
    assert!((read_after - 1e6).abs() < 0.05 * 1e6, "the reader after the step: {read_after}");
}

#[test]
fn a_reader_that_keeps_up_changes_nothing() {
    for protocol in [Protocol::AtpDefault, Protocol::TcpNewReno] {
        let free = run(&scenario(protocol, 1_000_000, None, &[]));
        // 1 Gbit/s: far above the chain's capacity.
        let fast = run(&scenario(protocol, 1_000_000, Some(1_000_000_000), &[]));
        assert_delivered(&fast.flows[0], 1_000_000);
        assert_eq!(fast.flows[0].goodput_bps, free.flows[0].goodput_bps, "{protocol}");
        assert_eq!(fast.trace_hash, free.trace_hash, "{protocol}: the same events");
    }
}

#[test]
fn tcp_completes_at_a_slow_readers_pace() {
    let bytes = 500_000;
    let s = scenario(Protocol::TcpNewReno, bytes, Some(200_000), &[]);
    let r = run(&s);
    let f = &r.flows[0];
    assert_delivered(f, bytes);
    println!("goodput {:.0} bit/s, {} retransmissions", f.goodput_bps, f.retransmissions());
    assert!((f.goodput_bps - 200e3).abs() < 0.05 * 200e3, "goodput {}", f.goodput_bps);
    // No advertised window: the sender learns of the full buffer by loss.
    assert!(f.retransmissions() > 0);
}

#[test]
fn reader_keys_are_checked_and_named() {
    let base =
        "duration_s = 5\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n[[flows]]\nsrc = 0\ndst = 2\n";
    let atp = "protocol = \"atp-default\"\nbytes = 1000\n";
    let tcp = "protocol = \"tcp-reno\"\nbytes = 1000\n";
    let steps = "read_rate_steps = [{ at_s = 2, rate_bps = 5 }, { at_s = 1, rate_bps = 5 }]\n";
    for (extra, want) in [
        (
            format!("{atp}read_rate_bps = 20_000_000_000\n"),
            "flows[0].read_rate_bps = 20000000000: expected a reader rate",
        ),
        (format!("{atp}read_rate_steps = [{{ at_s = 1, rate_bps = 5 }}]\n"), "without read_rate_bps"),
        (format!("{atp}read_rate_bps = 1000\n{steps}"), "flows[0].read_rate_steps[1].at_s = 1: expected a time"),
        ("read_rate_bps = 1000\n".to_string(), "flows[0].read_rate_bps = (given): expected nothing"),
        (format!("{tcp}read_rate_bps = 1000\nreceive_buffer_bytes = 10\n"), "flows[0].receive_buffer_bytes = 10"),
    ] {
        let e = Scenario::from_toml(&format!("{base}{extra}")).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
    assert!(Scenario::from_toml(&format!(
        "{base}protocol = \"tcp-reno\"\nbytes = 1000\nread_rate_bps = 0\nread_rate_steps = [{{ at_s = 1, rate_bps = 5000 }}]\n"
    ))
    .is_ok());
}
