//! Transport flows over the 802.11 model: every protocol moves a transfer
//! byte for byte over 1–6 hops, relays stamp ATP packets, scenario mistakes
//! name their key, and a run is a function of its seed.

use meshbed_proto::Protocol;
use meshbed_sim::scenario::{FlowKind, FlowSpec, Scenario, TcpOverrides, TransportSettings};
use meshbed_sim::TraceKind;
use meshbed_sim::{FlowResult, SimReport};

const TRANSFER_BYTES: u64 = 2_000_000;

/// A `bytes` transfer with `protocol` from node 0 to node `hops` of an
/// 802.11a 24 Mbit/s chain with 200 m spacing (the default radio), with at
/// most `limit_s` of simulated time. MTL runs over its own routing module,
/// OLSR with ETX (seed 004 §III.B), starting once OLSR has the routes.
fn chain_transfer(protocol: Protocol, hops: u32, bytes: u64, limit_s: f64) -> Scenario {
    let mut s = Scenario::chain(hops, 200.0, limit_s);
    s.flows = vec![FlowSpec::transfer(0, hops, protocol, bytes)];
    if protocol == Protocol::Mtl {
        s.routing = meshbed_sim::scenario::Routing::olsr(true);
        s.flows[0].start_s = 5.0;
        s.duration_s += 5.0;
    }
    s.validate().expect("valid scenario");
    s
}

fn run(s: &Scenario) -> SimReport {
    meshbed_sim::run(s).expect("valid scenario")
}

/// 2 MB over 1–6 hops completes for every protocol, and what the receiver
/// handed up is exactly what the sender sent.
#[test]
fn every_protocol_completes_a_2mb_transfer_over_1_to_6_hops() {
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for protocol in Protocol::ALL {
        let mut row = Vec::new();
        for hops in 1..=6 {
            let r = run(&chain_transfer(protocol, hops, TRANSFER_BYTES, 120.0));
            let f: &FlowResult = &r.flows[0];
            assert_eq!(f.hops, Some(hops));
            if !(f.completed() && f.verified() && !f.failed() && f.bytes_delivered == TRANSFER_BYTES) {
                failures.push(format!("{protocol} over {hops} hops: {:?} ({} bytes)", f.error(), f.bytes_delivered));
            }
            row.push((f.goodput_bps / 1e6, f.duration_s, f.retransmissions()));
        }
        rows.push((protocol, row));
    }
    println!("goodput of a 2 MB transfer, Mbit/s (completion time s, retransmissions)");
    println!(
        "{:<15} {}",
        "protocol",
        (1..=6).map(|h| format!("{:>22}", format!("{h} hop{}", if h > 1 { "s" } else { "" }))).collect::<String>()
    );
    for (protocol, row) in &rows {
        let cells: String = row.iter().map(|(g, d, x)| format!("{:>22}", format!("{g:.3} ({d:.2} s, {x})"))).collect();
        println!("{:<15} {cells}", protocol.name());
    }
    assert!(failures.is_empty(), "incomplete transfers:\n{}", failures.join("\n"));
}

/// Every node on a 3-hop path stamps the ATP packets it queues, the source
/// included: the receiver sees N_h = 3 on every datagram and D_max > 0.
#[test]
fn relays_stamp_atp_packets_along_a_3_hop_chain() {
    for protocol in [Protocol::AtpDefault, Protocol::AtpAdaptive] {
        let r = run(&chain_transfer(protocol, 3, 200_000, 30.0));
        let f = &r.flows[0];
        assert!(f.completed() && f.verified(), "{protocol}: {:?}", f.error());
        let path = f.transfer.as_ref().and_then(|t| t.path.as_ref()).expect("datagrams reached the receiver");
        assert_eq!((path.hop_count_min, path.hop_count_max), (3, 3), "{protocol}: {path:?}");
        assert!(path.data_packets > 0 && path.d_max_zero == 0, "{protocol}: {path:?}");
        assert!(path.d_max_mean_us > 0.0, "{protocol}: {path:?}");
        println!("{protocol}: {path:?}");
    }
    // TCP datagrams get N_h too, but their D_max is left alone.
    let r = run(&chain_transfer(Protocol::TcpNewReno, 3, 200_000, 30.0));
    let path = r.flows[0].transfer.as_ref().and_then(|t| t.path.clone()).expect("datagrams reached the receiver");
    assert_eq!((path.hop_count_min, path.hop_count_max, path.data_packets), (3, 3, 0), "{path:?}");
}

/// With `trace = true` the receiver's D_max samples are kept, and agree with
/// what the destination node saw on the wire.
#[test]
fn trace_samples_are_kept_only_when_asked() {
    let mut s = chain_transfer(Protocol::AtpAggressive, 2, 100_000, 30.0);
    let r = run(&s);
    assert!(r.flows[0].completed() && r.flows[0].trace.is_empty());
    s.flows[0].transport_mut().unwrap().trace = true;
    let r = run(&s);
    let f = &r.flows[0];
    assert!(f.completed());
    let d_max: Vec<f64> = f.trace.iter().filter(|t| t.kind == TraceKind::DMaxUs).map(|t| t.value).collect();
    assert!(!d_max.is_empty() && d_max.iter().all(|&d| d > 0.0), "{d_max:?}");
    assert!(f.trace.iter().any(|t| t.kind == TraceKind::DSUs));
}

/// A run too short for the transfer reports it incomplete, never complete,
/// and charges goodput over the whole run.
#[test]
fn a_transfer_cut_short_by_the_run_is_incomplete() {
    let r = run(&chain_transfer(Protocol::TcpReno, 2, 50_000_000, 2.0));
    let f = &r.flows[0];
    assert!(!f.completed() && f.verified() && !f.failed(), "{f:?}");
    assert!(f.bytes_delivered > 0 && f.bytes_delivered < 50_000_000);
    assert!(f.completion_time_s().is_none());
    assert!(f.error().unwrap_or("").contains("incomplete"), "{:?}", f.error());
    assert!((f.duration_s - 2.0).abs() < 1e-9);
    assert!(r.to_table().contains("tcp-reno"));
}

/// The same seed gives the same numbers; another seed gives others.
#[test]
fn same_seed_same_report() {
    let mut s = chain_transfer(Protocol::AtpAdaptive, 3, 300_000, 30.0);
    s.flows.push(FlowSpec::transfer(3, 0, Protocol::TcpTahoe, 300_000));
    let a = serde_json::to_string(&run(&s)).unwrap();
    let b = serde_json::to_string(&run(&s)).unwrap();
    assert_eq!(a, b);
    s.seed = 2;
    let c = serde_json::to_string(&run(&s)).unwrap();
    assert_ne!(a, c);
}

fn err_of(flow: &str) -> String {
    let text = format!("duration_s = 10\n[topology]\nkind = \"chain\"\nnodes = 4\nspacing_m = 200\n[[flows]]\nsrc = 0\ndst = 3\n{flow}");
    Scenario::from_toml(&text).unwrap_err().in_file("s.toml").to_string()
}

#[test]
fn transport_flows_parse_from_toml() {
    let text = "duration_s = 10\n[topology]\nkind = \"chain\"\nnodes = 4\nspacing_m = 200\n\
                [[flows]]\nsrc = 0\ndst = 3\nprotocol = \"atp-adaptive\"\nbytes = 2_000_000\nstart_s = 1.0\n\
                [flows.atp]\nepoch_s = 0.05\nkappa = 0.4\n\
                [[flows]]\nsrc = 3\ndst = 0\nprotocol = \"tcp-newreno\"\nbytes = 1000\n[flows.tcp]\ndelayed_acks = true\n\
                [[flows]]\nsrc = 1\ndst = 2\ntraffic = \"cbr\"\nrate_kbps = 100\n";
    let s = Scenario::from_toml(text).unwrap();
    assert_eq!(s.flows[0].protocol(), Some(Protocol::AtpAdaptive));
    let t = s.flows[0].transport().unwrap();
    assert_eq!(t.amount, meshbed_sim::scenario::Amount::Bytes(2_000_000));
    assert_eq!(t.atp().unwrap().kappa, Some(0.4));
    assert_eq!(s.flows[1].protocol(), Some(Protocol::TcpNewReno));
    assert_eq!(s.flows[2].protocol(), None);
    // The serialized scenario reads back the same.
    assert_eq!(Scenario::from_toml(&toml::to_string(&s).unwrap()).unwrap(), s);
}

#[test]
fn transport_flow_mistakes_name_their_key() {
    let e = err_of("protocol = \"tcp-vegas\"\nbytes = 1000\n");
    assert!(e.contains("flows[0].protocol") && e.contains("tcp-vegas"), "{e}");
    for p in Protocol::ALL {
        assert!(e.contains(p.name()), "{e}");
    }
    let e = err_of("protocol = \"atp-default\"\n");
    assert!(e.contains("flows[0].bytes") && e.contains("missing"), "{e}");
    let e = err_of("protocol = \"atp-default\"\nbytes = 0\n");
    assert!(e.contains("flows[0].bytes = 0"), "{e}");
    let e = err_of("bytes = 1000\n");
    assert!(e.contains("flows[0].bytes") && e.contains("protocol"), "{e}");
    let e = err_of("protocol = \"tcp-reno\"\nbytes = 1000\ntraffic = \"cbr\"\nrate_kbps = 10\n");
    assert!(e.contains("flows[0].traffic"), "{e}");
    let e = err_of("protocol = \"tcp-reno\"\nbytes = 1000\nrate_kbps = 10\n");
    assert!(e.contains("flows[0].rate_kbps"), "{e}");
    let e = err_of("protocol = \"tcp-reno\"\nbytes = 1000\nstop_s = 5\n");
    assert!(e.contains("flows[0].stop_s"), "{e}");
    let e = err_of("protocol = \"tcp-reno\"\nbytes = 1000\n[flows.atp]\nkappa = 0.5\n");
    assert!(e.contains("flows[0].atp"), "{e}");
    let e = err_of("protocol = \"atp-default\"\nbytes = 1000\n[flows.atp]\nkappa = 1.5\n");
    assert!(e.contains("flows[0].atp.kappa = 1.5"), "{e}");
    let e = err_of("protocol = \"atp-default\"\nbytes = 1000\n[flows.atp]\nsack_more_fraction = 0\n");
    assert!(e.contains("flows[0].atp.sack_more_fraction = 0") && e.contains("epochs"), "{e}");
    let e = err_of("protocol = \"atp-default\"\nbytes = 1000\n[flows.atp]\nmissed_feedback_decrease = 1.5\n");
    assert!(e.contains("flows[0].atp.missed_feedback_decrease = 1.5") && e.contains("a factor on the rate"), "{e}");
    let e = err_of("protocol = \"atp-default\"\nbytes = 1000\n[flows.atp]\nepsilon = 1\n");
    assert!(e.contains("epsilon"), "{e}");
    // Boundary pair: the smallest data packet that still carries a byte.
    assert!(
        err_of("protocol = \"atp-default\"\nbytes = 1000\npacket_bytes = 64\n").contains("flows[0].packet_bytes = 64")
    );
    let ok = "duration_s = 10\n[topology]\nkind = \"chain\"\nnodes = 4\nspacing_m = 200\n[[flows]]\nsrc = 0\ndst = 3\nprotocol = \"atp-default\"\nbytes = 1000\npacket_bytes = 65\n";
    assert!(Scenario::from_toml(ok).is_ok());
}

/// A transport flow can run for a duration instead of moving a byte count:
/// it stops at `stop_s`, and what arrived is a verified prefix of the data.
#[test]
fn duration_flows_stop_on_time_with_a_verified_prefix() {
    use meshbed_sim::scenario::{Amount, FlowKind, FlowSpec, Scenario, TransportFlow};
    for protocol in [Protocol::AtpAdaptive, Protocol::TcpNewReno] {
        let mut s = Scenario::chain(3, 200.0, 12.0);
        s.flows = vec![FlowSpec {
            src: 0,
            dst: 3,
            start_s: 1.0,
            kind: FlowKind::Transport(TransportFlow::new(protocol, Amount::Until { stop_s: 6.0 })),
        }];
        let r = meshbed_sim::run(&s).unwrap();
        let f = &r.flows[0];
        assert!(f.completed() && f.verified() && !f.failed(), "{protocol}: {:?}", f.error());
        assert_eq!(f.completion_time_s(), Some(6.0));
        assert!((f.duration_s - 5.0).abs() < 1e-9);
        assert!(f.bytes_delivered > 100_000, "{protocol}: only {} bytes in 5 s", f.bytes_delivered);
        assert_eq!(f.transfer.as_ref().map(|t| t.size_bytes), Some(None));
        assert!((f.goodput_bps - f.bytes_delivered as f64 * 8.0 / 5.0).abs() < 1e-6);
    }
    // bytes and stop_s together, or neither, are errors naming the key
    // (no `Amount` is either: the file's reader refuses them).
    let e = err_of("protocol = \"atp-default\"\n");
    assert!(e.contains("flows[0].bytes") && e.contains("stop_s"), "{e}");
    let e = err_of("protocol = \"atp-default\"\nbytes = 1000\nstop_s = 2.0\n");
    assert!(e.contains("flows[0].stop_s") && e.contains("not both"), "{e}");
}

/// `[flows.atp] sack_more_fraction` (a sensitivity check of seed 001
/// §3.3's half epoch) reaches the receiver: another silence before
/// SACK-MORE gives another run on a chain without MAC retries, and every
/// byte still arrives.
#[test]
fn the_sack_more_silence_reaches_the_receiver() {
    use meshbed_sim::scenario::{AtpOverrides, FlowKind, TransportSettings};
    let mut s = chain_transfer(Protocol::AtpAdaptive, 4, 400_000, 60.0);
    s.radio.mac.short_retry_limit = 0;
    s.radio.mac.long_retry_limit = 0;
    let hash = |fraction: Option<f64>| {
        let mut s = s.clone();
        if let (Some(f), FlowKind::Transport(t)) = (fraction, &mut s.flows[0].kind) {
            t.settings =
                TransportSettings::Atp(Box::new(AtpOverrides { sack_more_fraction: Some(f), ..Default::default() }));
        }
        let r = run(&s);
        let f = &r.flows[0];
        assert!(f.completed() && f.verified(), "{fraction:?}: {:?}", f.error());
        r.trace_hash
    };
    assert_eq!(hash(None), hash(Some(0.5)), "half an epoch is the preset's");
    assert_ne!(hash(None), hash(Some(10.0)), "the key changes the run");
}

/// `[flows.atp] missed_feedback_decrease` (the counterfactual of seed 001
/// §5.4's "severe penalty for a missed feedback packet") reaches the
/// sender: 0.5 is the engine's own factor; 1 (no decrease on a miss) gives
/// another run of aggressive ATP (40 ms epochs) on a 6-hop chain without MAC
/// retries, where feedback is lost, and every byte still arrives.
#[test]
fn the_missed_feedback_decrease_reaches_the_sender() {
    use meshbed_sim::scenario::{AtpOverrides, FlowKind, TransportSettings};
    let mut s = chain_transfer(Protocol::AtpAggressive, 6, 2_000_000, 60.0);
    s.radio.mac.short_retry_limit = 0;
    s.radio.mac.long_retry_limit = 0;
    let hash = |factor: Option<f64>| {
        let mut s = s.clone();
        if let (Some(f), FlowKind::Transport(t)) = (factor, &mut s.flows[0].kind) {
            t.settings = TransportSettings::Atp(Box::new(AtpOverrides {
                missed_feedback_decrease: Some(f),
                ..Default::default()
            }));
        }
        let r = run(&s);
        let f = &r.flows[0];
        assert!(f.completed() && f.verified(), "{factor:?}: {:?}", f.error());
        r.trace_hash
    };
    assert_eq!(hash(None), hash(Some(0.5)), "halving is the engine's");
    assert_ne!(hash(None), hash(Some(1.0)), "the key changes the run");
}

/// An MTL flow with `trace = true` keeps its engine's samples — the rate R
/// (seed 004 eq. 9), FHD̄ (eq. 10) and its RTT probes — beside its
/// deliveries, and an untraced one keeps none.
#[test]
fn a_traced_mtl_flow_keeps_its_rate_and_fhd_samples() {
    use meshbed_sim::scenario::FlowKind;
    use meshbed_sim::TraceKind;
    let s = chain_transfer(Protocol::Mtl, 3, 300_000, 30.0);
    let kinds = |trace: bool| {
        let mut s = s.clone();
        let FlowKind::Transport(t) = &mut s.flows[0].kind else { unreachable!() };
        t.trace = trace;
        let r = run(&s);
        assert!(r.flows[0].completed() && r.flows[0].verified(), "{:?}", r.flows[0].error());
        let mut k: Vec<TraceKind> = r.flows[0].trace.iter().map(|t| t.kind).collect();
        k.sort_by_key(|k| k.name());
        k.dedup();
        k
    };
    let traced = kinds(true);
    for want in [TraceKind::RatePps, TraceKind::FhdS, TraceKind::RttS, TraceKind::DeliveredBytes] {
        assert!(traced.contains(&want), "{want} missing from {traced:?}");
    }
    assert!(kinds(false).is_empty());
}

/// `[flows.mtl]` reaches MTL's sender: α = 0.7 is the paper's own weight
/// (seed 004 Eq. 10) and gives the default run, another α another run, and
/// a file's `[flows.mtl] alpha` reads back into the same settings.
#[test]
fn the_mtl_alpha_reaches_the_sender() {
    use meshbed_sim::scenario::{FlowKind, MtlOverrides, TransportSettings};
    let s = chain_transfer(Protocol::Mtl, 3, 300_000, 30.0);
    let with = |alpha: Option<f64>| {
        let mut s = s.clone();
        if let (Some(a), FlowKind::Transport(t)) = (alpha, &mut s.flows[0].kind) {
            t.settings = TransportSettings::Mtl(MtlOverrides { alpha: Some(a), ..Default::default() });
        }
        s
    };
    let hash = |s: &Scenario| {
        let r = run(s);
        assert!(r.flows[0].completed() && r.flows[0].verified(), "{:?}", r.flows[0].error());
        r.trace_hash
    };
    assert_eq!(hash(&with(None)), hash(&with(Some(0.7))), "0.7 is the default");
    assert_ne!(hash(&with(None)), hash(&with(Some(0.2))), "the key changes the run");
    let text = toml::to_string(&with(Some(0.2))).expect("writes");
    assert!(text.contains("[flows.mtl]") && text.contains("alpha = 0.2"), "{text}");
    assert_eq!(Scenario::from_toml(&text).expect("reads back"), with(Some(0.2)));
}

/// `[flows.atp] relay_forwarding_delay_s` (issue 24's emulator check): a
/// relay that hands a packet to its MAC a user-space round trip after the
/// frame arrived finds the medium idle for a DIFS and sends without a
/// backoff, so the delay D it stamps falls to one frame's service time on
/// an idle channel (581 µs for a 1500-byte packet at 802.11a 24 Mbit/s):
/// the floor of D_max seen on the emulator. At once (the model's default),
/// the floor includes the backoff. Every byte arrives either way, and an
/// absent key is the model's run.
#[test]
fn a_relay_forwarding_delay_lowers_the_floor_of_the_stamped_delay() {
    use meshbed_sim::scenario::{AtpOverrides, FlowKind, TransportSettings};
    use meshbed_sim::TraceKind;
    let mut s = chain_transfer(Protocol::AtpDefault, 4, 2_000_000, 40.0);
    s.flows[0].start_s = 2.0;
    let FlowKind::Transport(t) = &mut s.flows[0].kind else { unreachable!() };
    t.trace = true;
    let run_with = |delay_s: Option<f64>| {
        let mut s = s.clone();
        if let (Some(d), FlowKind::Transport(t)) = (delay_s, &mut s.flows[0].kind) {
            t.settings = TransportSettings::Atp(Box::new(AtpOverrides {
                relay_forwarding_delay_s: Some(d),
                ..Default::default()
            }));
        }
        let r = run(&s);
        let f = &r.flows[0];
        assert!(f.completed() && f.verified(), "{delay_s:?}: {:?}", f.error());
        let d_max: Vec<f64> = f.trace.iter().filter(|x| x.kind == TraceKind::DMaxUs).map(|x| x.value).collect();
        let at_floor = d_max.iter().filter(|&&d| (575.0..=590.0).contains(&d)).count() as f64 / d_max.len() as f64;
        (r.trace_hash, at_floor)
    };
    let (model, model_floor) = run_with(None);
    assert_eq!(model, run_with(Some(0.0)).0, "zero is the model's run");
    let (held, held_floor) = run_with(Some(0.0002));
    assert_ne!(model, held);
    println!("share of D_max at one frame's idle service time: at once {model_floor:.3}, after 200 us {held_floor:.3}");
    assert!(model_floor < 0.02, "at once, a relay's D includes its backoff: {model_floor}");
    assert!(held_floor > 0.05, "after 200 us, the relays send without a backoff: {held_floor}");
}

/// A CUBIC transfer of 200 kB over `hops` with `[flows.tcp]` holding its
/// packets 5 ms (`set(Some(0.005))`), checked complete and verified, against
/// the same without the key (`set(None)`) and with it at zero, which must
/// be the same run: the held run differs and takes at least `longer_by_s`
/// more.
fn assert_held_tcp_run_is_slower(hops: u32, longer_by_s: f64, set: impl Fn(Option<f64>) -> TcpOverrides) {
    let s = chain_transfer(Protocol::TcpCubic, hops, 200_000, 30.0);
    let run_with = |d: Option<f64>| {
        let mut s = s.clone();
        if let FlowKind::Transport(t) = &mut s.flows[0].kind {
            t.settings = TransportSettings::Tcp(set(d));
        }
        let r = run(&s);
        assert!(r.flows[0].completed() && r.flows[0].verified(), "{d:?}: {:?}", r.flows[0].error());
        r
    };
    let (plain, held) = (run_with(None), run_with(Some(0.005)));
    assert_ne!(plain.trace_hash, held.trace_hash);
    assert_eq!(plain.trace_hash, run_with(Some(0.0)).trace_hash, "a zero hold is no hold");
    let (plain_s, held_s) = (plain.flows[0].duration_s, held.flows[0].duration_s);
    assert!(held_s > plain_s + longer_by_s, "held {held_s} s against {plain_s} s");
}

/// `[flows.tcp] relay_forwarding_delay_s` holds a TCP flow's packets at
/// each relay too: another run, every byte delivered, and the flow takes
/// longer by at least the hold on each of its data packets' relays.
#[test]
fn a_relay_forwarding_delay_holds_tcp_packets_at_each_relay() {
    // 2 relays × 5 ms on each of the handshake's and the data's round
    // trips: the transfer cannot be as fast.
    assert_held_tcp_run_is_slower(3, 0.02, |d| TcpOverrides { relay_forwarding_delay_s: d, ..Default::default() });
    let e = err_of("protocol = \"tcp-cubic\"\nbytes = 1000\n[flows.tcp]\nrelay_forwarding_delay_s = 0.5\n");
    assert!(e.contains("flows[0].tcp.relay_forwarding_delay_s = 0.5") && e.contains("delay in seconds"), "{e}");
}

/// `[flows.tcp] endpoint_delay_s` holds a TCP flow's packets at each end
/// before its engine takes them: at one hop, where no relay could hold
/// them, the run changes, every byte arrives, and each round trip (the
/// handshake's and every window's) is longer by twice the hold.
#[test]
fn an_endpoint_delay_holds_tcp_packets_at_each_end() {
    // 2 × 5 ms on the handshake's round trip and on each of the ~10
    // window round trips of 200 kB from an initial window of one segment.
    assert_held_tcp_run_is_slower(1, 0.05, |d| TcpOverrides { endpoint_delay_s: d, ..Default::default() });
    let e = err_of("protocol = \"tcp-cubic\"\nbytes = 1000\n[flows.tcp]\nendpoint_delay_s = 0.5\n");
    assert!(e.contains("flows[0].tcp.endpoint_delay_s = 0.5") && e.contains("delay in seconds"), "{e}");
}

/// The key's bounds are checked, naming it.
#[test]
fn a_relay_forwarding_delay_out_of_bounds_is_refused_by_name() {
    let e = err_of("protocol = \"atp-default\"\nbytes = 1000\n[flows.atp]\nrelay_forwarding_delay_s = 0.5\n");
    assert!(e.contains("flows[0].atp.relay_forwarding_delay_s = 0.5") && e.contains("delay in seconds"), "{e}");
    let e = err_of("protocol = \"atp-default\"\nbytes = 1000\n[flows.atp]\nrelay_forwarding_delay_s = -1e-3\n");
    assert!(e.contains("flows[0].atp.relay_forwarding_delay_s"), "{e}");
}

/// The window increments of `tcp-cubic`'s first slow start (until the first
/// exit), in segments.
fn first_slow_start_increments(hystart: Option<bool>) -> Vec<f64> {
    let mut s = chain_transfer(Protocol::TcpCubic, 4, 500_000, 30.0);
    let t = s.flows[0].transport_mut().unwrap();
    t.trace = true;
    if let Some(h) = hystart {
        t.settings = meshbed_sim::scenario::TransportSettings::Tcp(meshbed_sim::scenario::TcpOverrides {
            hystart: Some(h),
            ..Default::default()
        });
    }
    let r = run(&s);
    assert!(r.flows[0].completed());
    let trace = &r.flows[0].trace;
    let exit = trace
        .iter()
        .find(|t| t.kind == TraceKind::SlowStart && t.value == 0.0)
        .map(|t| t.t_s)
        .expect("the first slow start ends");
    let cwnd: Vec<f64> =
        trace.iter().filter(|t| t.kind == TraceKind::CwndSegments && t.t_s < exit).map(|t| t.value).collect();
    cwnd.windows(2).map(|w| w[1] - w[0]).collect()
}

/// HyStart++ (RFC 9406) is `tcp-cubic`'s initial slow start: on the 4-hop
/// chain the queues raise the round's RTT, slow start moves into CSS and
/// grows a quarter segment per ACK; with `hystart = false` every step is a
/// whole segment (RFC 5681).
#[test]
fn tcp_cubic_leaves_its_first_slow_start_through_hystart_css() {
    let with = first_slow_start_increments(None);
    assert!(with.contains(&0.25), "no CSS step: {with:?}");
    assert!(with.iter().all(|&d| d == 1.0 || d == 0.25), "{with:?}");
    let without = first_slow_start_increments(Some(false));
    assert!(without.iter().all(|&d| d == 1.0), "{without:?}");
    assert_eq!(first_slow_start_increments(Some(true)), with, "on is the default");
    // Another TCP has no HyStart++ to switch.
    let e = err_of("protocol = \"tcp-sack\"\nbytes = 1000\n[flows.tcp]\nhystart = false\n");
    assert!(e.contains("flows[0].tcp.hystart = false") && e.contains("tcp-cubic"), "{e}");
}

/// The TCP counts of a 2 MB `protocol` transfer over 6 hops (queue drops
/// and MAC retry-limit drops), with RACK-TLP on or off.
fn lossy_chain_tcp(protocol: Protocol, rack_tlp: Option<bool>) -> meshbed_sim::report::TcpDetail {
    let mut s = chain_transfer(protocol, 6, TRANSFER_BYTES, 120.0);
    if let Some(r) = rack_tlp {
        s.flows[0].transport_mut().unwrap().settings =
            meshbed_sim::scenario::TransportSettings::Tcp(meshbed_sim::scenario::TcpOverrides {
                rack_tlp: Some(r),
                ..Default::default()
            });
    }
    let r = run(&s);
    assert!(r.flows[0].completed(), "{protocol} rack_tlp {rack_tlp:?}");
    r.flows[0].tcp().expect("a TCP sender's counts").clone()
}

/// RACK-TLP (RFC 8985) is the SACK senders' loss detection unless the
/// scenario turns it off: with it, RACK marks the losses and tail probes
/// go out; without, neither happens (RFC 6675's DupThresh).
#[test]
fn rack_tlp_detects_the_sack_senders_losses_unless_switched_off() {
    for protocol in [Protocol::TcpSack, Protocol::TcpCubic] {
        let on = lossy_chain_tcp(protocol, None);
        assert!(on.rack_lost_segments > 0 && on.tlp_probes > 0, "{protocol}: {on:?}");
        assert_eq!(lossy_chain_tcp(protocol, Some(true)), on, "{protocol}: on is the default");
        let off = lossy_chain_tcp(protocol, Some(false));
        assert_eq!((off.rack_lost_segments, off.tlp_probes), (0, 0), "{protocol}: {off:?}");
    }
    let e = err_of("protocol = \"tcp-newreno\"\nbytes = 1000\n[flows.tcp]\nrack_tlp = false\n");
    assert!(e.contains("flows[0].tcp.rack_tlp = false") && e.contains("tcp-sack"), "{e}");
}

/// BBR over the lossy 6-hop chain: every byte arrives, RACK (which BBR
/// always runs) marks the losses, and switching RACK off is refused.
#[test]
fn tcp_bbr_crosses_the_lossy_chain_with_rack_and_refuses_to_go_without() {
    let bbr = lossy_chain_tcp(Protocol::TcpBbr, None);
    assert!(bbr.rack_lost_segments > 0, "{bbr:?}");
    assert_eq!(lossy_chain_tcp(Protocol::TcpBbr, Some(true)), bbr);
    let e = err_of("protocol = \"tcp-bbr\"\nbytes = 1000\n[flows.tcp]\nrack_tlp = false\n");
    assert!(e.contains("flows[0].tcp.rack_tlp = false") && e.contains("always runs RACK-TLP"), "{e}");
}

/// A 2 MB `tcp-cubic` transfer over the lossy 6-hop chain with `overrides`;
/// every byte must arrive.
fn lossy_cubic_chain(overrides: meshbed_sim::scenario::TcpOverrides) -> meshbed_sim::SimReport {
    let mut s = chain_transfer(Protocol::TcpCubic, 6, TRANSFER_BYTES, 120.0);
    s.flows[0].transport_mut().unwrap().settings = meshbed_sim::scenario::TransportSettings::Tcp(overrides.clone());
    let r = run(&s);
    assert!(r.flows[0].completed(), "{overrides:?}");
    r
}

/// PRR (RFC 6937) as the SACK senders' window in recovery when the scenario
/// asks: the 2 MB transfer over the lossy 6-hop chain still delivers every
/// byte, and the run differs from RFC 6675's window (off, the default, is
/// the same run as no key); the TCPs without SACK recovery and BBR, which
/// sets its own window, refuse the key by name.
#[test]
fn prr_is_the_sack_senders_window_in_recovery_when_asked() {
    let with = |prr: Option<bool>| {
        let r = lossy_cubic_chain(meshbed_sim::scenario::TcpOverrides { prr, ..Default::default() });
        (r.trace_hash, r.flows[0].tcp().expect("a TCP sender's counts").clone())
    };
    let default = with(None);
    assert_eq!(with(Some(false)), default, "off is the default");
    let prr = with(Some(true));
    assert_ne!(prr.0, default.0, "PRR changes what is sent in recovery");
    for protocol in ["tcp-newreno", "tcp-bbr"] {
        let e = err_of(&format!("protocol = \"{protocol}\"\nbytes = 1000\n[flows.tcp]\nprr = true\n"));
        assert!(e.contains("flows[0].tcp.prr = true") && e.contains("tcp-sack and tcp-cubic do"), "{e}");
    }
}

/// `[flows.tcp] delayed_ack_timeout_s` sets the receiver's delayed-ACK
/// timer: on the lossy 6-hop chain with delayed ACKs, Linux's 40 ms gives
/// another run than the default 200 ms (every byte still delivered), and
/// the key is refused outside RFC 5681's 500 ms or without delayed ACKs.
#[test]
fn the_delayed_ack_timer_is_a_key_within_rfc_5681s_bound() {
    let with = |timeout_s: Option<f64>| {
        lossy_cubic_chain(meshbed_sim::scenario::TcpOverrides {
            delayed_acks: Some(true),
            delayed_ack_timeout_s: timeout_s,
            ..Default::default()
        })
        .trace_hash
    };
    assert_eq!(with(Some(0.2)), with(None), "200 ms is the default");
    assert_ne!(with(Some(0.04)), with(None));
    let e = err_of(
        "protocol = \"tcp-cubic\"\nbytes = 1000\n[flows.tcp]\ndelayed_acks = true\ndelayed_ack_timeout_s = 0.6\n",
    );
    assert!(e.contains("flows[0].tcp.delayed_ack_timeout_s = 0.6") && e.contains("less than 0.5 s"), "{e}");
    let e = err_of("protocol = \"tcp-cubic\"\nbytes = 1000\n[flows.tcp]\ndelayed_ack_timeout_s = 0.04\n");
    assert!(e.contains("flows[0].tcp.delayed_ack_timeout_s = 0.04") && e.contains("delayed_acks = true"), "{e}");
}
