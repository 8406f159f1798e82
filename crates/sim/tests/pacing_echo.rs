//! Issue 13 in the simulator: a rate-paced Reno transfer (seed 003 §6)
//! delivers every byte, the echo application (adaptive ping, seed 003 §5.4)
//! measures round trips that grow with the payload and the hop count, and
//! mistakes in their keys name the key.

use meshbed_proto::Protocol;
use meshbed_sim::scenario::{FlowKind, FlowSpec, Scenario, TransportSettings};
use meshbed_sim::TraceKind;
use meshbed_sim::{FlowResult, SimReport};

fn run(s: &Scenario) -> SimReport {
    s.validate().expect("valid scenario");
    meshbed_sim::run(s).expect("valid scenario")
}

fn transfer(protocol: Protocol, hops: u32, bytes: u64) -> Scenario {
    let mut s = Scenario::chain(hops, 200.0, 60.0);
    s.flows = vec![FlowSpec::transfer(0, hops, protocol, bytes)];
    s
}

#[test]
fn paced_reno_delivers_every_byte_over_a_4_hop_chain() {
    let bytes = 1_000_000;
    let paced = run(&transfer(Protocol::TcpRenoPaced, 4, bytes));
    let f = &paced.flows[0];
    assert_eq!(f.protocol, meshbed_sim::report::FlowProtocol::Engine(meshbed_proto::Protocol::TcpRenoPaced));
    assert!(f.completed() && f.verified() && !f.failed(), "{:?}", f.error());
    assert_eq!(f.bytes_delivered, bytes);
    // The same transfer unpaced sends its segments at other times.
    let plain = run(&transfer(Protocol::TcpReno, 4, bytes));
    assert!(plain.flows[0].completed());
    assert_ne!(paced.trace_hash, plain.trace_hash, "pacing changed nothing");
    // V from `[flows.tcp] pacing_v` reaches the engine: another V, another run.
    let mut fast = transfer(Protocol::TcpRenoPaced, 4, bytes);
    fast.flows[0].transport_mut().unwrap().settings =
        TransportSettings::Tcp(meshbed_sim::scenario::TcpOverrides { pacing_v: Some(4.0), ..Default::default() });
    let fast = run(&fast);
    assert!(fast.flows[0].completed() && fast.flows[0].verified());
    assert_ne!(fast.trace_hash, paced.trace_hash, "pacing_v changed nothing");
}

/// One echo flow from node 0 to node `hops` of a chain, `payload` bytes of
/// ping payload (the IP packet is 28 bytes more), for 5 s.
fn ping(hops: u32, payload: u32, trace: bool) -> FlowResult {
    let mut s = Scenario::chain(hops, 200.0, 5.0);
    let mut f = FlowSpec::echo(0, hops, payload + 28);
    if let FlowKind::Echo(e) = &mut f.kind {
        e.trace = trace;
    }
    s.flows = vec![f];
    run(&s).flows.remove(0)
}

#[test]
fn echo_rtts_grow_with_payload_and_hop_count() {
    let mut medians = Vec::new();
    for payload in [64, 1024] {
        let mut row = Vec::new();
        for hops in 1..=3 {
            let f = ping(hops, payload, false);
            let e = f.echo.as_ref().expect("an echo result");
            let rtt = e.rtt_s.as_ref().expect("replies");
            // A clean chain loses nothing; every request but the one still
            // outstanding at the end was answered.
            assert_eq!(e.lost, 0, "{hops} hops, {payload} B");
            assert!(e.requests == rtt.n as u64 || e.requests == rtt.n as u64 + 1, "{e:?}");
            assert!(rtt.n > 100, "{e:?}");
            assert!(rtt.min <= rtt.median && rtt.median <= rtt.max && rtt.sd >= 0.0, "{rtt:?}");
            // Every answered request reached the destination; the last may
            // have reached it without its reply getting back yet.
            assert!(rtt.n as u64 <= f.received_packets && f.received_packets <= e.requests, "{f:?}");
            row.push(rtt.median);
        }
        assert!(row.windows(2).all(|w| w[0] < w[1]), "{payload} B: medians by hop count {row:?}");
        medians.push(row);
    }
    assert!(medians[0].iter().zip(&medians[1]).all(|(small, large)| small < large), "{medians:?}");
}

#[test]
fn echo_rtt_samples_are_traced_when_asked() {
    let f = ping(2, 64, true);
    let rtt = f.echo.as_ref().and_then(|e| e.rtt_s).expect("replies");
    let samples: Vec<f64> = f.trace.iter().filter(|t| t.kind == TraceKind::RttS).map(|t| t.value).collect();
    assert_eq!(samples.len(), rtt.n);
    let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
    assert_eq!(min, rtt.min);
    assert!(ping(2, 64, false).trace.is_empty());
}

/// A 4-node chain with one flow from node 0 to node 3 described by `flow`.
fn parse(flow: &str) -> Result<Scenario, String> {
    let text = format!("duration_s = 10\n[topology]\nkind = \"chain\"\nnodes = 4\nspacing_m = 200\n[[flows]]\nsrc = 0\ndst = 3\n{flow}");
    Scenario::from_toml(&text).map_err(|e| e.in_file("s.toml").to_string())
}

fn err_of(flow: &str) -> String {
    parse(flow).expect_err("refused")
}

#[test]
fn echo_and_pacing_mistakes_name_their_key() {
    let ok = |flow: &str| parse(flow).expect("valid");
    let s = ok("traffic = \"echo\"\npacket_bytes = 92\necho_timeout_s = 0.5\ntrace = true\n");
    let FlowKind::Echo(e) = &s.flows[0].kind else { panic!("an echo flow: {:?}", s.flows[0]) };
    assert_eq!((e.timeout_s, e.trace), (Some(0.5), true));
    let s = ok("protocol = \"tcp-newreno-paced\"\nbytes = 1000\n[flows.tcp]\npacing_v = 2.0\ndelayed_acks = false\n");
    assert_eq!(s.flows[0].transport().and_then(|t| t.tcp()).and_then(|t| t.pacing_v), Some(2.0));

    let e = err_of("traffic = \"echo\"\nrate_kbps = 10\n");
    assert!(e.contains("flows[0].rate_kbps"), "{e}");
    let e = err_of("traffic = \"echo\"\necho_timeout_s = 0\n");
    assert!(e.contains("flows[0].echo_timeout_s = 0"), "{e}");
    let e = err_of("traffic = \"cbr\"\nrate_kbps = 10\necho_timeout_s = 1\n");
    assert!(e.contains("flows[0].echo_timeout_s") && e.contains("echo flows"), "{e}");
    let e = err_of("traffic = \"saturated\"\ntrace = true\n");
    assert!(e.contains("flows[0].trace"), "{e}");
    let e = err_of("protocol = \"tcp-reno\"\nbytes = 1000\ntraffic = \"echo\"\n");
    assert!(e.contains("flows[0].traffic") && e.contains("echo"), "{e}");
    let e = err_of("protocol = \"tcp-reno\"\nbytes = 1000\necho_timeout_s = 1\n");
    assert!(e.contains("flows[0].echo_timeout_s"), "{e}");
    let e = err_of("protocol = \"tcp-reno\"\nbytes = 1000\n[flows.tcp]\npacing_v = 2\n");
    assert!(e.contains("flows[0].tcp.pacing_v = 2") && e.contains("does not pace"), "{e}");
    let e = err_of("protocol = \"tcp-reno-paced\"\nbytes = 1000\n[flows.tcp]\npacing_v = 0\n");
    assert!(e.contains("flows[0].tcp.pacing_v = 0"), "{e}");
}
