//! The kernel's routing table and neighbour table, through netlink.
//!
//! The daemon mirrors its engine's routes into the main table as host
//! routes (`dst/32 via next_hop dev IF onlink`, or `dst/32 dev IF` for a
//! neighbour), each a single RTM_NEWROUTE/RTM_DELROUTE request
//! acknowledged by the kernel, and tagged with its own protocol number
//! ([`RTPROT_MESHBED`]) so that `ip route show proto 109` lists exactly
//! what it installed. What it installed it removes when it stops.

use netlink_packet_core::{
    DecodeError, NetlinkBuffer, NetlinkDeserializable, NetlinkHeader, NetlinkMessage, NetlinkPayload,
    NetlinkSerializable, NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_REPLACE, NLM_F_REQUEST,
};
use netlink_packet_route::neighbour::{NeighbourAddress, NeighbourAttribute, NeighbourMessage};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteFlags, RouteHeader, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io;
use std::net::Ipv4Addr;
use std::ops::ControlFlow;
use std::time::Duration;

/// The protocol number of meshbed's routes (`ip route ... proto 109`).
pub const RTPROT_MESHBED: u8 = 109;
/// The metric of the catch-all route, below every host route.
const CATCH_ALL_METRIC: u32 = 10_000;

/// What the table saw.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct KernelCounters {
    pub routes_added: u64,
    pub routes_replaced: u64,
    pub routes_removed: u64,
    pub netlink_errors: u64,
}

/// A host route as installed: its next hop (the destination itself for a
/// neighbour).
pub type NextHop = Ipv4Addr;

/// The routes this daemon put in the kernel.
pub struct KernelRoutes {
    netlink: Requests,
    ifindex: u32,
    installed: BTreeMap<Ipv4Addr, NextHop>,
    catch_all: Option<(Ipv4Addr, u8)>,
    pub counters: KernelCounters,
}

impl KernelRoutes {
    /// Routes through interface `ifname` of the caller's namespace.
    pub fn new(ifname: &str) -> io::Result<Self> {
        let ifindex = nix::net::if_::if_nametoindex(ifname)
            .map_err(|e| io::Error::new(io::ErrorKind::NotFound, format!("interface {ifname}: {e}")))?;
        Ok(KernelRoutes {
            netlink: Requests::open(NETLINK_ROUTE)?,
            ifindex,
            installed: BTreeMap::new(),
            catch_all: None,
            counters: KernelCounters::default(),
        })
    }

    /// The next hop installed for `dst`, if any.
    pub fn next_hop(&self, dst: Ipv4Addr) -> Option<NextHop> {
        self.installed.get(&dst).copied()
    }

    pub fn installed(&self) -> &BTreeMap<Ipv4Addr, NextHop> {
        &self.installed
    }

    /// Routes `dst` through `next_hop` (a no-op when it already is).
    pub fn set(&mut self, dst: Ipv4Addr, next_hop: NextHop) -> io::Result<()> {
        let before = self.installed.get(&dst).copied();
        if before == Some(next_hop) {
            return Ok(());
        }
        let msg = self.host_route(dst, Some(next_hop));
        self.request(RouteNetlinkMessage::NewRoute(msg), NLM_F_CREATE | NLM_F_REPLACE)?;
        self.installed.insert(dst, next_hop);
        match before {
            Some(_) => self.counters.routes_replaced += 1,
            None => self.counters.routes_added += 1,
        }
        Ok(())
    }

    /// Removes the route to `dst` if this daemon installed one.
    pub fn remove(&mut self, dst: Ipv4Addr) -> io::Result<()> {
        if self.installed.remove(&dst).is_none() {
            return Ok(());
        }
        let msg = self.host_route(dst, None);
        self.counters.routes_removed += 1;
        self.request_ignoring_missing(RouteNetlinkMessage::DelRoute(msg))
    }

    /// Installs `prefix/len dev IF` below every host route: packets to a
    /// mesh address without a route still leave the stack (and reach the
    /// daemon's queue, which holds them while a route is discovered)
    /// instead of failing with "network unreachable" at the socket.
    pub fn add_catch_all(&mut self, prefix: Ipv4Addr, len: u8) -> io::Result<()> {
        let msg = self.catch_all_route(prefix, len);
        self.request(RouteNetlinkMessage::NewRoute(msg), NLM_F_CREATE | NLM_F_REPLACE)?;
        self.catch_all = Some((prefix, len));
        Ok(())
    }

    /// Removes every route this daemon installed.
    pub fn flush(&mut self) {
        for dst in self.installed.keys().copied().collect::<Vec<_>>() {
            let _ = self.remove(dst);
        }
        if let Some((prefix, len)) = self.catch_all.take() {
            let msg = self.catch_all_route(prefix, len);
            let _ = self.request_ignoring_missing(RouteNetlinkMessage::DelRoute(msg));
        }
    }

    /// The IPv4 neighbour whose link-layer address is `mac`, from the
    /// kernel's neighbour table (the emulator installs every node's;
    /// on a real host ARP fills it).
    pub fn neighbour_by_mac(&mut self, mac: &[u8]) -> io::Result<Option<Ipv4Addr>> {
        let mut msg = NeighbourMessage::default();
        msg.header.family = AddressFamily::Inet;
        msg.header.ifindex = self.ifindex;
        let mut found = None;
        // A message that does not parse is skipped: it cannot be the one.
        self.netlink.exchange(RouteNetlinkMessage::GetNeighbour(msg), NLM_F_DUMP, |m| {
            if let Ok(RouteNetlinkMessage::NewNeighbour(n)) = m {
                let (mut ip, mut lladdr) = (None, None);
                for a in &n.attributes {
                    match a {
                        NeighbourAttribute::Destination(NeighbourAddress::Inet(v4)) => ip = Some(*v4),
                        NeighbourAttribute::LinkLayerAddress(l) => lladdr = Some(l.as_slice()),
                        _ => {}
                    }
                }
                if lladdr == Some(mac) && found.is_none() {
                    found = ip;
                }
            }
        })?;
        Ok(found)
    }

    fn host_route(&self, dst: Ipv4Addr, next_hop: Option<NextHop>) -> RouteMessage {
        let mut msg = RouteMessage::default();
        msg.header = RouteHeader {
            address_family: AddressFamily::Inet,
            destination_prefix_length: 32,
            table: RouteHeader::RT_TABLE_MAIN,
            protocol: RouteProtocol::Other(RTPROT_MESHBED),
            scope: RouteScope::Universe,
            kind: RouteType::Unicast,
            ..Default::default()
        };
        msg.attributes.push(RouteAttribute::Destination(RouteAddress::Inet(dst)));
        msg.attributes.push(RouteAttribute::Oif(self.ifindex));
        match next_hop {
            Some(gw) if gw != dst => {
                // On-link: the next hop is a neighbour on the radio, whatever
                // the interface's own prefix says.
                msg.header.flags = RouteFlags::Onlink;
                msg.attributes.push(RouteAttribute::Gateway(RouteAddress::Inet(gw)));
            }
            Some(_) => msg.header.scope = RouteScope::Link,
            None => {}
        }
        msg
    }

    fn catch_all_route(&self, prefix: Ipv4Addr, len: u8) -> RouteMessage {
        let mut msg = RouteMessage::default();
        msg.header = RouteHeader {
            address_family: AddressFamily::Inet,
            destination_prefix_length: len,
            table: RouteHeader::RT_TABLE_MAIN,
            protocol: RouteProtocol::Other(RTPROT_MESHBED),
            scope: RouteScope::Link,
            kind: RouteType::Unicast,
            ..Default::default()
        };
        msg.attributes.push(RouteAttribute::Destination(RouteAddress::Inet(prefix)));
        msg.attributes.push(RouteAttribute::Oif(self.ifindex));
        msg.attributes.push(RouteAttribute::Priority(CATCH_ALL_METRIC));
        msg
    }

    fn request_ignoring_missing(&mut self, msg: RouteNetlinkMessage) -> io::Result<()> {
        match self.request(msg, 0) {
            // Already gone (the interface went down, or someone removed it).
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) || e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
            r => r,
        }
    }

    /// Sends one request and waits for its acknowledgement.
    fn request(&mut self, msg: RouteNetlinkMessage, flags: u16) -> io::Result<()> {
        let result = self.netlink.exchange(msg, NLM_F_ACK | flags, |_| {});
        if result.is_err() {
            self.counters.netlink_errors += 1;
        }
        result
    }
}

impl Drop for KernelRoutes {
    fn drop(&mut self) {
        self.flush();
    }
}

/// The longest wait for a reply. The kernel answers a netlink request as it
/// takes it, so a later reply means something is wrong, and the daemon's
/// one loop must not stall on it.
const REPLY_TIMEOUT: Duration = Duration::from_secs(1);

/// A netlink socket spoken to one request at a time: a request, then its
/// replies until the answer is complete. The routing table's requests and
/// the host link feed's (nl80211 station dumps, [`crate::hostfeed`]) go
/// through it.
pub(crate) struct Requests {
    socket: Socket,
    seq: u32,
}

impl Requests {
    /// A socket of netlink protocol `protocol` (`NETLINK_ROUTE`,
    /// `NETLINK_GENERIC`) in the caller's namespace.
    pub(crate) fn open(protocol: isize) -> io::Result<Self> {
        let mut socket = Socket::new(protocol)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        let timeout = nix::sys::time::TimeVal::new(REPLY_TIMEOUT.as_secs() as _, 0);
        nix::sys::socket::setsockopt(&socket, nix::sys::socket::sockopt::ReceiveTimeout, &timeout)?;
        Ok(Requests { socket, seq: 0 })
    }

    /// Sends `msg` with `NLM_F_REQUEST | flags` and hands every message of
    /// the answer to `each` (or why it does not parse), until the answer
    /// ends: a dump's `NLMSG_DONE`, an acknowledgement, or an error, which
    /// is returned.
    pub(crate) fn exchange<T>(
        &mut self,
        msg: T,
        flags: u16,
        mut each: impl FnMut(Result<T, DecodeError>),
    ) -> io::Result<()>
    where
        T: NetlinkSerializable + NetlinkDeserializable,
    {
        let seq = self.send(msg, NLM_F_REQUEST | flags)?;
        let mut result = Ok(());
        let mut buf = vec![0u8; 32 << 10];
        loop {
            let n = self.socket.recv(&mut &mut buf[..], 0).map_err(|e| match e.kind() {
                io::ErrorKind::WouldBlock => {
                    io::Error::new(e.kind(), format!("no netlink reply within {} s", REPLY_TIMEOUT.as_secs()))
                }
                _ => e,
            })?;
            let walked = walk::<T>(&buf[..n.min(buf.len())], |reply_seq, payload| {
                if reply_seq != seq {
                    // A late answer to an earlier request.
                    return ControlFlow::Continue(());
                }
                match payload {
                    Ok(NetlinkPayload::Done(d)) => {
                        // A dump that failed half-way says so in its end.
                        if d.code < 0 {
                            result = Err(io::Error::from_raw_os_error(d.code.saturating_neg()));
                        }
                        ControlFlow::Break(())
                    }
                    Ok(NetlinkPayload::Error(e)) => {
                        if e.code.is_some() {
                            // Not `to_io`, whose `abs` overflows on i32::MIN.
                            result = Err(io::Error::from_raw_os_error(e.raw_code().saturating_abs()));
                        }
                        ControlFlow::Break(())
                    }
                    Ok(NetlinkPayload::InnerMessage(m)) => {
                        each(Ok(m));
                        ControlFlow::Continue(())
                    }
                    Ok(_) => ControlFlow::Continue(()),
                    Err(e) => {
                        each(Err(e));
                        ControlFlow::Continue(())
                    }
                }
            });
            match walked {
                Ok(ControlFlow::Break(())) => return result,
                Ok(ControlFlow::Continue(())) => {}
                Err(e) => return Err(io::Error::other(format!("a netlink reply does not parse: {e}"))),
            }
        }
    }

    fn send<T: NetlinkSerializable>(&mut self, msg: T, flags: u16) -> io::Result<u32> {
        self.seq = self.seq.wrapping_add(1);
        let mut header = NetlinkHeader::default();
        header.flags = flags;
        header.sequence_number = self.seq;
        let mut packet = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(msg));
        packet.finalize();
        let mut buf = vec![0u8; packet.buffer_len()];
        packet.serialize(&mut buf);
        self.socket.send(&buf, 0)?;
        Ok(self.seq)
    }
}

/// Walks the netlink messages of one datagram from the kernel, handing
/// each one's sequence number and payload (or why the payload does not
/// parse) to `each` until it says stop. A header that does not parse is an
/// error: where the next message starts is then unknown.
pub(crate) fn walk<T: NetlinkDeserializable>(
    datagram: &[u8],
    mut each: impl FnMut(u32, Result<NetlinkPayload<T>, DecodeError>) -> ControlFlow<()>,
) -> Result<ControlFlow<()>, DecodeError> {
    let mut offset = 0;
    while offset < datagram.len() {
        let rest = &datagram[offset..];
        // Checked: at least a header long and no longer than `rest`.
        let (seq, len) = {
            let b = NetlinkBuffer::new_checked(rest)?;
            (b.sequence_number(), b.length() as usize)
        };
        let payload = NetlinkMessage::<T>::deserialize(&rest[..len]).map(|m| m.payload);
        if each(seq, payload).is_break() {
            return Ok(ControlFlow::Break(()));
        }
        // Messages start on 4-byte boundaries (NLMSG_ALIGN).
        offset += len.next_multiple_of(4);
    }
    Ok(ControlFlow::Continue(()))
}

/// The smallest prefix that holds every address of `addrs` (the mesh's
/// address block; the catch-all route and the queue's rules cover it).
pub fn covering_prefix(addrs: &[Ipv4Addr]) -> (Ipv4Addr, u8) {
    let Some(first) = addrs.first() else { return (Ipv4Addr::UNSPECIFIED, 0) };
    let first = u32::from(*first);
    let differ = addrs.iter().fold(0u32, |acc, a| acc | (u32::from(*a) ^ first));
    let len = differ.leading_zeros().min(32) as u8;
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) };
    (Ipv4Addr::from(first & mask), len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_covering_prefix_holds_every_address() {
        let a = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        assert_eq!(covering_prefix(&[a("10.0.0.1"), a("10.0.0.4")]), (a("10.0.0.0"), 29));
        assert_eq!(covering_prefix(&[a("10.0.0.1"), a("10.0.1.4")]), (a("10.0.0.0"), 23));
        assert_eq!(covering_prefix(&[a("10.0.0.7")]), (a("10.0.0.7"), 32));
        assert_eq!(covering_prefix(&[a("10.0.0.1"), a("192.168.0.1")]), (a("0.0.0.0"), 0));
    }
}
