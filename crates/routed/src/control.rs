//! The routing protocol's own packets: one UDP socket on the protocol's
//! port (AODV 654, RFC 3561 §1; OLSR 698, RFC 3626 §3.1), bound to the
//! mesh interface, IP TTL 1 (a control packet crosses one link; the engine
//! forwards what must go further, as on the simulated medium).

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};

pub struct ControlSocket {
    socket: UdpSocket,
    port: u16,
}

impl ControlSocket {
    pub fn bind(ifname: &str, port: u16) -> io::Result<Self> {
        let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
        s.set_reuse_address(true)?;
        s.set_broadcast(true)?;
        s.bind_device(Some(ifname.as_bytes()))
            .map_err(|e| io::Error::new(e.kind(), format!("binding the control socket to {ifname}: {e}")))?;
        s.set_ttl_v4(1)?;
        s.bind(&SockAddr::from(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port)))
            .map_err(|e| io::Error::new(e.kind(), format!("binding UDP port {port}: {e}")))?;
        s.set_nonblocking(true)?;
        Ok(ControlSocket { socket: s.into(), port })
    }

    /// Sends `bytes` to every neighbour (`None`) or to one.
    pub fn send(&self, to: Option<Ipv4Addr>, bytes: &[u8]) -> io::Result<()> {
        let dst = to.unwrap_or(Ipv4Addr::BROADCAST);
        match self.socket.send_to(bytes, SocketAddrV4::new(dst, self.port)) {
            // A full interface queue loses the packet, as the MAC queue would.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            r => r.map(|_| ()),
        }
    }

    /// The next packet waiting, with its sender's address.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<(usize, Ipv4Addr)>> {
        match self.socket.recv_from(buf) {
            Ok((n, std::net::SocketAddr::V4(a))) => Ok(Some((n, *a.ip()))),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn socket(&self) -> &UdpSocket {
        &self.socket
    }
}
