//! On-demand routing's data path: every data packet to a mesh address
//! passes through user space, as AODV-UU's did (seed 003 §3.3–3.4), so the
//! engine sees it and decides — forward (which also keeps an active route
//! alive, RFC 3561 §6.2), hold while a route is discovered, or drop.
//!
//! Netfilter hands the packets over on an NFQUEUE. The rules live in a
//! chain of their own in the mangle table, entered from PREROUTING (a
//! packet to forward, before the kernel looks up its route) and OUTPUT (a
//! packet this node sends; a catch-all route lets it leave the socket
//! without a route, [`crate::kernel::KernelRoutes::add_catch_all`]). The
//! control port, this node's own address and re-injected packets pass.
//!
//! A verdict is given at once: forward is *accept* (an OUTPUT packet gets
//! a mark, so that the kernel routes it again with the host route the
//! engine's events just installed — netfilter re-routes a queued
//! LOCAL_OUT packet whose mark changed); hold keeps a copy of the packet
//! in the daemon and drops the original; a released packet is re-injected
//! through a raw socket carrying [`REINJECT_MARK`], which the chain lets
//! pass. There is no fail-open: without the daemon, mesh data is not
//! forwarded at all, rather than forwarded over stale routes.

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::process::Command;

/// The mark of packets the daemon re-injects (and so lets pass).
pub const REINJECT_MARK: u32 = 0x6d62_0001;
/// The mark given to an accepted OUTPUT packet so that it is routed again.
pub const REROUTE_MARK: u32 = 0x6d62_0002;
/// The netfilter hook numbers nfq reports (linux/netfilter.h).
pub const NF_INET_PRE_ROUTING: u8 = 0;
pub const NF_INET_LOCAL_OUT: u8 = 3;

/// The daemon's chain and the jumps to it; removed when dropped.
pub struct Rules {
    chain: String,
    jumps: Vec<Vec<String>>,
}

fn iptables(args: &[String]) -> io::Result<()> {
    let out = Command::new("iptables")
        .arg("-w")
        .args(args)
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("running iptables (install it): {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("iptables {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim())))
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

impl Rules {
    /// Queues data to `prefix/len` on `queue_num`, except the control
    /// port, `me` and re-injected packets. Installed once, at start (one
    /// command per rule; routes themselves go through netlink).
    pub fn install(
        ifname: &str,
        prefix: Ipv4Addr,
        len: u8,
        me: Ipv4Addr,
        control_port: u16,
        queue_num: u16,
    ) -> io::Result<Self> {
        let chain = format!("MESHBED_ROUTED_{queue_num}");
        let net = format!("{prefix}/{len}");
        // A chain left by a daemon that was killed goes first.
        let _ = Self::remove_all(&chain, &[]);
        let mut rules = Rules { chain: chain.clone(), jumps: Vec::new() };
        iptables(&strings(&["-t", "mangle", "-N", &chain]))?;
        for rule in [
            vec!["-p", "udp", "--dport", &control_port.to_string(), "-j", "RETURN"],
            vec!["-d", &format!("{me}/32"), "-j", "RETURN"],
            vec!["-m", "mark", "--mark", &format!("{REINJECT_MARK:#x}"), "-j", "RETURN"],
            vec!["-j", "NFQUEUE", "--queue-num", &queue_num.to_string()],
        ] {
            let mut args = strings(&["-t", "mangle", "-A", &chain]);
            args.extend(rule.iter().map(|s| s.to_string()));
            iptables(&args)?;
        }
        for (hook, dir) in [("PREROUTING", "-i"), ("OUTPUT", "-o")] {
            let jump = strings(&["-t", "mangle", "-I", hook, dir, ifname, "-d", &net, "-j", &chain]);
            iptables(&jump)?;
            rules.jumps.push(jump);
        }
        Ok(rules)
    }

    fn remove_all(chain: &str, jumps: &[Vec<String>]) -> io::Result<()> {
        for jump in jumps {
            let mut del = jump.clone();
            del[2] = "-D".into();
            let _ = iptables(&del);
        }
        let _ = iptables(&strings(&["-t", "mangle", "-F", chain]));
        iptables(&strings(&["-t", "mangle", "-X", chain]))
    }
}

impl Drop for Rules {
    fn drop(&mut self) {
        let _ = Self::remove_all(&self.chain, &self.jumps);
    }
}

/// Sends held packets again, through the kernel's routing.
pub struct Reinjector {
    socket: Socket,
}

impl Reinjector {
    pub fn new() -> io::Result<Self> {
        // IPPROTO_RAW: the packet is written whole, header included.
        let socket = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(libc::IPPROTO_RAW)))?;
        socket.set_mark(REINJECT_MARK)?;
        Ok(Reinjector { socket })
    }

    pub fn send(&self, ip: &[u8]) -> io::Result<()> {
        let dst = ipv4_dst(ip).ok_or_else(|| io::Error::other("a held packet is not IPv4"))?;
        self.socket.send_to(ip, &SockAddr::from(SocketAddrV4::new(dst, 0)))?;
        Ok(())
    }
}

/// The source and destination of an IPv4 packet.
pub fn ipv4_ends(ip: &[u8]) -> Option<(Ipv4Addr, Ipv4Addr)> {
    if ip.len() < 20 || ip[0] >> 4 != 4 {
        return None;
    }
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    Some((src, Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19])))
}

fn ipv4_dst(ip: &[u8]) -> Option<Ipv4Addr> {
    ipv4_ends(ip).map(|(_, d)| d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_ends_of_an_ipv4_packet_and_nothing_else() {
        let mut p = vec![0u8; 20];
        p[0] = 0x45;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 5]);
        assert_eq!(ipv4_ends(&p), Some((Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 5))));
        assert_eq!(ipv4_ends(&p[..19]), None);
        p[0] = 0x60;
        assert_eq!(ipv4_ends(&p), None);
    }
}
