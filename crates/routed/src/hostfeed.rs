//! A link feed read from Linux on a real mesh host (`meshbed routed
//! --host-link-feed`): the same [`LinkFeed`] records the emulator's medium
//! sends over its socket, taken from what the kernel knows.
//!
//! * **Neighbour reachability**, on any interface: the kernel's neighbour
//!   events (rtnetlink group `RTNLGRP_NEIGH`). An IPv4 entry of the mesh
//!   interface going to `NUD_FAILED` — ARP's probes went unanswered — for
//!   a mesh node's address is [`LinkFeed::Failed`] for that node
//!   ([`neighbour_failure`]). It comes after the kernel's probes, seconds
//!   after the frame that started them, and only for neighbours the host
//!   sends unicast to.
//! * **Station statistics**, on a Wi-Fi interface only ([`stations`]):
//!   nl80211 station dumps every interval, each station's signal as
//!   [`LinkFeed::Heard`] and a rise of its retry-limit failures as
//!   [`LinkFeed::Failed`]. An interface nl80211 does not know gives the
//!   reason once ([`HostFeed::no_stations`]) and the feed runs on
//!   neighbour reachability alone.
//!
//! What the kernel says is turned into records by pure functions
//! ([`neighbour_failure`], [`neighbour_events`],
//! [`stations::StationCounters::map_dump`]), tested on constructed
//! messages; [`HostFeed`] holds the sockets around them and is read from
//! the daemon's one loop (its event socket is in the loop's `ppoll`, its
//! dumps on the loop's timeout), so records reach the engine where the
//! emulator's do. The neighbour half is tested against the kernel
//! (tests/hostfeed.rs, as root); the nl80211 half is not: there is no
//! Wi-Fi hardware or `mac80211_hwsim` on the machine this was written on.

pub mod stations;

use crate::kernel::walk;
use crate::node::{NodeId, NodeMap};
use crate::report::LinkFeedCounters;
use meshbed_net::linkfeed::LinkFeed;
use netlink_packet_core::NetlinkPayload;
use netlink_packet_route::neighbour::{NeighbourAddress, NeighbourAttribute, NeighbourState};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket};
use stations::{Mac, NoStations, Stations};
use std::io;
use std::ops::ControlFlow;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

/// The station dumps' interval when none is given: a few dumps per HELLO
/// interval (AODV's is 1 s), each a single netlink round trip.
pub const DEFAULT_STATION_INTERVAL: Duration = Duration::from_millis(200);

/// The record a neighbour-table message says, if any: an IPv4 entry of
/// interface `ifindex` that went to `NUD_FAILED`, for a node of `nodes`
/// other than `me`.
pub fn neighbour_failure(msg: &RouteNetlinkMessage, ifindex: u32, nodes: &NodeMap, me: NodeId) -> Option<LinkFeed> {
    let RouteNetlinkMessage::NewNeighbour(n) = msg else { return None };
    if n.header.family != AddressFamily::Inet || n.header.ifindex != ifindex || n.header.state != NeighbourState::Failed
    {
        return None;
    }
    let addr = n.attributes.iter().find_map(|a| match a {
        NeighbourAttribute::Destination(NeighbourAddress::Inet(v4)) => Some(*v4),
        _ => None,
    })?;
    let neighbour = nodes.node(addr).filter(|&n| n != me)?;
    Some(LinkFeed::Failed { neighbour })
}

/// Appends the records of one datagram of neighbour events to `out`
/// ([`neighbour_failure`] for each message); returns how many messages did
/// not parse (a broken header ends the datagram and counts once).
pub fn neighbour_events(datagram: &[u8], ifindex: u32, nodes: &NodeMap, me: NodeId, out: &mut Vec<LinkFeed>) -> u64 {
    let mut malformed = 0;
    let walked = walk::<RouteNetlinkMessage>(datagram, |_seq, payload| {
        match payload {
            Ok(NetlinkPayload::InnerMessage(m)) => out.extend(neighbour_failure(&m, ifindex, nodes, me)),
            Ok(_) => {}
            Err(_) => malformed += 1,
        }
        ControlFlow::Continue(())
    });
    if walked.is_err() {
        malformed += 1;
    }
    malformed
}

/// What the interface gives besides neighbour reachability.
enum Radio {
    Wifi(Stations),
    Other(NoStations),
}

/// The host's link feed on one interface.
pub struct HostFeed {
    events: Socket,
    ifindex: u32,
    nodes: NodeMap,
    me: NodeId,
    radio: Radio,
    buf: Vec<u8>,
    last_error: Option<String>,
}

impl HostFeed {
    /// The feed of node `me` of `nodes` on interface `ifname` of the
    /// caller's namespace, station dumps (on a Wi-Fi interface) every
    /// `station_interval`.
    pub fn open(ifname: &str, nodes: NodeMap, me: NodeId, station_interval: Duration) -> io::Result<Self> {
        let ifindex = nix::net::if_::if_nametoindex(ifname)
            .map_err(|e| io::Error::new(io::ErrorKind::NotFound, format!("--interface {ifname}: {e}")))?;
        let mut events = Socket::new(NETLINK_ROUTE)?;
        events.bind_auto()?;
        events.add_membership(libc::RTNLGRP_NEIGH)?;
        events.set_non_blocking(true)?;
        let radio = match Stations::open(ifindex, station_interval, Instant::now()) {
            Ok(s) => Radio::Wifi(s),
            Err(e) => Radio::Other(e),
        };
        Ok(HostFeed { events, ifindex, nodes, me, radio, buf: vec![0u8; 32 << 10], last_error: None })
    }

    /// Why the interface gives no station statistics (no signal strength,
    /// no retry-limit failures), if it does not.
    pub fn no_stations(&self) -> Option<&NoStations> {
        match &self.radio {
            Radio::Wifi(_) => None,
            Radio::Other(e) => Some(e),
        }
    }

    /// The socket to wait on for neighbour events.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.events.as_fd()
    }

    /// When the next station dump is due, on a Wi-Fi interface.
    pub fn next_dump(&self) -> Option<Instant> {
        match &self.radio {
            Radio::Wifi(s) => Some(s.next_dump()),
            Radio::Other(_) => None,
        }
    }

    /// The last error met reading the kernel (which stops nothing), once.
    pub fn take_error(&mut self) -> Option<String> {
        self.last_error.take()
    }

    /// Appends to `out` what the kernel has said since the last call: the
    /// neighbour events waiting on the socket, then a station dump if one
    /// is due at `now`. `node_of_mac` maps a station's MAC to its node.
    /// Never blocks on the event socket; a dump is one netlink round trip.
    pub fn read(
        &mut self,
        now: Instant,
        node_of_mac: &mut dyn FnMut(&[u8]) -> Option<NodeId>,
        counters: &mut LinkFeedCounters,
        out: &mut Vec<LinkFeed>,
    ) {
        loop {
            match self.events.recv(&mut &mut self.buf[..], 0) {
                Ok(n) => {
                    let n = n.min(self.buf.len());
                    counters.malformed += neighbour_events(&self.buf[..n], self.ifindex, &self.nodes, self.me, out);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The socket overflowed: events were lost, the ones after
                // them still come.
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => counters.events_lost += 1,
                Err(e) => {
                    self.last_error = Some(format!("host link feed: neighbour events: {e}"));
                    break;
                }
            }
        }
        if let Radio::Wifi(s) = &mut self.radio {
            let mut node_of = |mac: &Mac| node_of_mac(mac);
            match s.poll(now, &mut node_of, out, &mut counters.malformed) {
                None => {}
                Some(Ok(outcome)) => {
                    counters.station_dumps += 1;
                    counters.stations_unknown += outcome.unknown;
                }
                Some(Err(e)) => {
                    counters.station_dump_errors += 1;
                    self.last_error = Some(format!("host link feed: nl80211 station dump: {e}"));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::{NetlinkHeader, NetlinkMessage};
    use netlink_packet_route::neighbour::NeighbourMessage;
    use std::net::Ipv4Addr;

    const IFINDEX: u32 = 4;

    fn nodes() -> NodeMap {
        NodeMap::new(vec![Ipv4Addr::new(10, 9, 0, 1), Ipv4Addr::new(10, 9, 0, 2), Ipv4Addr::new(10, 9, 0, 3)])
    }

    fn neighbour(addr: NeighbourAddress, ifindex: u32, state: NeighbourState) -> NeighbourMessage {
        let mut m = NeighbourMessage::default();
        m.header.family = match addr {
            NeighbourAddress::Inet6(_) => AddressFamily::Inet6,
            _ => AddressFamily::Inet,
        };
        m.header.ifindex = ifindex;
        m.header.state = state;
        m.attributes.push(NeighbourAttribute::Destination(addr));
        m.attributes.push(NeighbourAttribute::LinkLayerAddress(vec![2, 0, 0, 0, 0, 3]));
        m
    }

    fn v4(last: u8) -> NeighbourAddress {
        NeighbourAddress::Inet(Ipv4Addr::new(10, 9, 0, last))
    }

    fn failure(msg: NeighbourMessage) -> Option<LinkFeed> {
        neighbour_failure(&RouteNetlinkMessage::NewNeighbour(msg), IFINDEX, &nodes(), 0)
    }

    #[test]
    fn a_mesh_neighbour_that_failed_resolution_is_a_link_failure() {
        assert_eq!(failure(neighbour(v4(3), IFINDEX, NeighbourState::Failed)), Some(LinkFeed::Failed { neighbour: 2 }));
    }

    #[test]
    fn other_states_interfaces_addresses_and_messages_are_ignored() {
        for state in
            [NeighbourState::Incomplete, NeighbourState::Reachable, NeighbourState::Stale, NeighbourState::Probe]
        {
            assert_eq!(failure(neighbour(v4(2), IFINDEX, state)), None, "{state:?}");
        }
        assert_eq!(failure(neighbour(v4(2), IFINDEX + 1, NeighbourState::Failed)), None, "another interface");
        assert_eq!(failure(neighbour(v4(9), IFINDEX, NeighbourState::Failed)), None, "not a mesh node");
        assert_eq!(failure(neighbour(v4(1), IFINDEX, NeighbourState::Failed)), None, "the node itself");
        let v6 = NeighbourAddress::Inet6("fe80::1".parse().unwrap());
        assert_eq!(failure(neighbour(v6, IFINDEX, NeighbourState::Failed)), None, "IPv6");
        let mut no_dst = neighbour(v4(2), IFINDEX, NeighbourState::Failed);
        no_dst.attributes.retain(|a| !matches!(a, NeighbourAttribute::Destination(_)));
        assert_eq!(failure(no_dst), None, "no address");
        let deleted = RouteNetlinkMessage::DelNeighbour(neighbour(v4(2), IFINDEX, NeighbourState::Failed));
        assert_eq!(neighbour_failure(&deleted, IFINDEX, &nodes(), 0), None, "a deletion");
    }

    fn datagram(msgs: Vec<NeighbourMessage>) -> Vec<u8> {
        let mut out = Vec::new();
        for m in msgs {
            let mut packet = NetlinkMessage::new(
                NetlinkHeader::default(),
                NetlinkPayload::from(RouteNetlinkMessage::NewNeighbour(m)),
            );
            packet.finalize();
            let mut buf = vec![0u8; packet.buffer_len()];
            packet.serialize(&mut buf);
            out.extend_from_slice(&buf);
        }
        out
    }

    #[test]
    fn a_datagram_of_events_gives_each_failure_in_order() {
        let bytes = datagram(vec![
            neighbour(v4(3), IFINDEX, NeighbourState::Failed),
            neighbour(v4(2), IFINDEX, NeighbourState::Reachable),
            neighbour(v4(2), IFINDEX, NeighbourState::Failed),
        ]);
        let mut out = Vec::new();
        assert_eq!(neighbour_events(&bytes, IFINDEX, &nodes(), 0, &mut out), 0);
        assert_eq!(out, vec![LinkFeed::Failed { neighbour: 2 }, LinkFeed::Failed { neighbour: 1 }]);
    }

    #[test]
    fn malformed_events_are_counted_and_never_panic() {
        let good = datagram(vec![neighbour(v4(2), IFINDEX, NeighbourState::Failed)]);
        // A header whose length runs past the datagram.
        let mut long = good.clone();
        long[0] = 0xff;
        let mut out = Vec::new();
        assert_eq!(neighbour_events(&long, IFINDEX, &nodes(), 0, &mut out), 1);
        // A neighbour message cut short inside its header: that message is
        // refused, the next one still read.
        let mut cut = good.clone();
        cut[..4].copy_from_slice(&20u32.to_ne_bytes());
        cut.truncate(20);
        cut.extend_from_slice(&good);
        assert_eq!(neighbour_events(&cut, IFINDEX, &nodes(), 0, &mut out), 1);
        assert_eq!(out, vec![LinkFeed::Failed { neighbour: 1 }]);
        // Every truncation of a valid datagram, and a run of junk.
        for n in 0..good.len() {
            neighbour_events(&good[..n], IFINDEX, &nodes(), 0, &mut Vec::new());
        }
        neighbour_events(&[0xa5; 200], IFINDEX, &nodes(), 0, &mut Vec::new());
    }
}
