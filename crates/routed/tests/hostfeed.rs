//! The host link feed against the kernel: a neighbour whose ARP resolution
//! fails is a link failure for its node. Needs root and iproute2; only
//! traffic inside a namespace the test makes. The nl80211 half has no test
//! here: there is no Wi-Fi hardware or mac80211_hwsim on the machines this
//! runs on (the mapping is unit-tested on constructed messages).

use meshbed_net::linkfeed::LinkFeed;
use meshbed_routed::hostfeed::HostFeed;
use meshbed_routed::report::LinkFeedCounters;
use meshbed_routed::NodeMap;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::process::Command;
use std::time::{Duration, Instant};

/// The longest the test waits for the failure: the kernel declares it
/// after 3 probes 100 ms apart (set below); the rest is slack for a loaded
/// machine.
const WAIT_LIMIT: Duration = Duration::from_secs(10);

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip (apt-get install iproute2)");
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

/// A network namespace of the test's own, deleted (with its interfaces)
/// when dropped, also when the test fails half-way.
struct Netns(String);

impl Netns {
    fn new(tag: &str) -> Netns {
        let name = format!("mbhf{}-{tag}", std::process::id());
        // A namespace left by an earlier run with the same pid.
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        ip(&["netns", "add", &name]);
        Netns(name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

/// Moves the calling thread (only it) into `ns`.
fn enter(ns: &str) {
    let file = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
    nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
}

#[test]
#[ignore = "needs root and iproute2: run scripts/test as root (CI does)"]
fn a_neighbour_that_does_not_answer_arp_is_a_link_failure() {
    assert!(nix::unistd::geteuid().is_root(), "needs root (network namespaces): run scripts/test as root, as CI does");
    let ns = Netns::new("neigh");
    let n = ns.0.as_str();
    // hf0 is the mesh interface; its peer hf1 has no address, so nobody
    // answers ARP for 10.9.0.2.
    ip(&["-n", n, "link", "add", "hf0", "type", "veth", "peer", "name", "hf1"]);
    ip(&["-n", n, "addr", "add", "10.9.0.1/24", "dev", "hf0"]);
    ip(&["-n", n, "link", "set", "hf0", "up"]);
    ip(&["-n", n, "link", "set", "hf1", "up"]);
    // Probes 100 ms apart instead of 1 s: NUD_FAILED within half a second.
    ip(&["-n", n, "ntable", "change", "name", "arp_cache", "dev", "hf0", "retrans", "100"]);

    let name = ns.0.clone();
    let feeder = std::thread::spawn(move || {
        enter(&name);
        let nodes = NodeMap::new(vec![Ipv4Addr::new(10, 9, 0, 1), Ipv4Addr::new(10, 9, 0, 2)]);
        let mut feed = HostFeed::open("hf0", nodes, 0, Duration::from_millis(200)).unwrap();
        let not_wifi = feed.no_stations().map(|why| why.to_string());
        // Subscribed: now make the kernel resolve 10.9.0.2.
        let udp = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::new(10, 9, 0, 1), 0)).unwrap();
        udp.send_to(b"anyone?", SocketAddrV4::new(Ipv4Addr::new(10, 9, 0, 2), 9)).unwrap();
        let (mut records, mut counters) = (Vec::new(), LinkFeedCounters::default());
        let t0 = Instant::now();
        while !records.contains(&LinkFeed::Failed { neighbour: 1 }) && t0.elapsed() < WAIT_LIMIT {
            let mut fds = [nix::poll::PollFd::new(feed.fd(), nix::poll::PollFlags::POLLIN)];
            let _ = nix::poll::poll(&mut fds, 100u16);
            feed.read(Instant::now(), &mut |_| None, &mut counters, &mut records);
        }
        (not_wifi, records, counters, feed.take_error())
    });
    let (not_wifi, records, counters, error) = feeder.join().expect("the feed's thread failed");

    assert!(not_wifi.is_some(), "a veth is no Wi-Fi interface, yet nl80211 station dumps worked");
    assert_eq!(error, None);
    assert_eq!(counters.malformed, 0);
    assert!(
        records.contains(&LinkFeed::Failed { neighbour: 1 }),
        "no link failure for node 1 (10.9.0.2) within {WAIT_LIMIT:?}: {records:?}"
    );
    assert!(records.iter().all(|r| *r == LinkFeed::Failed { neighbour: 1 }), "{records:?}");
}
