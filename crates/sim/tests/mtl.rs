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

/// MTL's seed 004 grid (ns-2's 802.11g, OLSR with ETX) and one transfer
/// corner to corner, starting at `start_s`, in a run of `duration_s`.
fn grid(start_s: f64, duration_s: f64) -> Scenario {
    let text = format!(
        "duration_s = {duration_s}\n[radio]\npreset = \"ns2-54g\"\n\
         [topology]\nkind = \"grid\"\nrows = 6\ncols = 6\nspacing_m = 200.0\n\
         [routing]\nkind = \"olsr\"\nmetric = \"etx\"\n\
         [[flows]]\nsrc = 0\ndst = 35\nprotocol = \"mtl\"\nbytes = 300000\nstart_s = {start_s}\n"
    );
    Scenario::from_toml(&text).unwrap()
}

/// A flow that starts before OLSR has routes across the grid, in a run that
/// ends before they form, delivers nothing, and its error says why (no
/// route in OLSR's table, OLSR's timing) and what to do; the same flow in a
/// run long enough completes with no error.
#[test]
fn a_transfer_started_before_olsr_has_routes_says_why_it_delivered_nothing() {
    let early = meshbed_sim::run(&grid(1.0, 6.0)).unwrap();
    let f = &early.flows[0];
    assert_eq!((f.bytes_delivered, f.completed()), (0, false), "{f:?}");
    assert!(f.net.drops.no_route > 0, "{f:?}");
    let e = f.error().expect("an incomplete transfer has an error");
    assert!(
        e.starts_with("incomplete: 0 of 300000 bytes delivered when the run ended; no route from node 0 to node 35 in OLSR's table from the flow's start at 1 s to the end of the run at 6 s"),
        "{e}"
    );
    assert!(e.contains("HELLO messages (every 2 s) and TC messages (every 5 s)"), "{e}");
    assert!(e.contains("over a 10 s window") && e.contains("start the flow later"), "{e}");

    let long = meshbed_sim::run(&grid(1.0, 40.0)).unwrap();
    let f = &long.flows[0];
    assert!(f.completed() && f.error().is_none(), "{f:?}");
}
