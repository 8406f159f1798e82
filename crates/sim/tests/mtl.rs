//! MTL (seed 004) in the simulator: its transport module over its routing
//! module (OLSR with ETX) completes a transfer byte for byte, and both ends
//! learn the path's hop count and bottleneck loss from routing.

use meshbed_sim::scenario::Scenario;

fn chain(hops: u32, protocol: &str) -> Scenario {
    let text = format!(
        "seed = 3\nduration_s = 60.0\n[topology]\nkind = \"chain\"\nnodes = {}\nspacing_m = 200.0\n\
         [routing]\nkind = \"olsr\"\nmetric = \"etx\"\n\
         [[flows]]\nsrc = 0\ndst = {hops}\nprotocol = \"{protocol}\"\nbytes = 3000000\nstart_s = 5.0\n",
        hops + 1
    );
    Scenario::from_toml(&text).unwrap()
}

#[test]
fn mtl_over_olsr_etx_delivers_every_byte_and_knows_its_path() {
    for hops in [1, 3, 5] {
        let r = meshbed_sim::run(&chain(hops, "mtl")).unwrap();
        let f = &r.flows[0];
        assert!(f.completed() && f.verified() && !f.failed(), "{hops} hops: {f:?}");
        assert_eq!(f.bytes_delivered, 3_000_000);
        let p = f.transfer.as_ref().and_then(|t| t.path_info.as_ref()).expect("path information reached the ends");
        let sender = p.sender.as_ref().expect("the sender heard from routing");
        assert_eq!(sender.hop_count, hops, "{p:?}");
        assert_eq!(p.receiver.as_ref().map(|r| r.hop_count), Some(hops), "{p:?}");
        // Probes lost to the transfer's own contention raise ETX above 1
        // (what MTL reads as contention, seed 004 §III.C.2.a); a loss
        // probability stays in [0, 1).
        assert!((0.0..1.0).contains(&sender.max_link_loss), "{p:?}");
    }
}

/// MTL's rate follows its path: a transport that ignores path information
/// (NewReno) gets none of its benefit, and the two differ.
#[test]
fn mtl_differs_from_tcp_on_the_same_chain() {
    let mtl = meshbed_sim::run(&chain(4, "mtl")).unwrap();
    let tcp = meshbed_sim::run(&chain(4, "tcp-newreno")).unwrap();
    assert_ne!(mtl.trace_hash, tcp.trace_hash);
    assert!(mtl.flows[0].completed() && tcp.flows[0].completed());
    // MTL's explicit gap notifications: far fewer feedback packets than
    // TCP's per-segment ACKs.
    assert!(
        mtl.flows[0].feedback_packets() * 5 < tcp.flows[0].feedback_packets(),
        "{} vs {}",
        mtl.flows[0].feedback_packets(),
        tcp.flows[0].feedback_packets()
    );
}
