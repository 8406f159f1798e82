//! `meshbed relay`: the thesis' delay-collection daemon (seed 001 §3.2).
//!
//! On the testbed, a user-level daemon on every forwarding node took the
//! forwarded ATP packets from netfilter, compared each packet's D_max with the
//! node's current delay (which the patched driver exported under `/proc`,
//! seed 001 §3.1 and appendix A.6), wrote the larger one back, and
//! re-injected the packet. This is that daemon: it installs
//! `iptables -I FORWARD -p udp -j NFQUEUE --queue-num N --queue-bypass` in
//! its namespace (so that forwarding continues unstamped if it dies),
//! stamps every forwarded UDP datagram whose payload is a meshbed ATP/TCP
//! header (N_h + 1; on ATP data, SYN and FIN packets D_max = max(D_max, D),
//! η·D when the node has forwarded nothing for `idle_after`, as
//! `meshbed_proto::relay::Relay::stamp` does), fixes the UDP checksum and
//! accepts the packet with its new payload. Other packets pass untouched.
//! The rule is removed on exit, Ctrl-C or SIGTERM.

use crate::sys;
use meshbed_core::{Duration, Instant};
use meshbed_proto::relay::EtaRule;
use meshbed_proto::wire::{Control, Packet, ProtocolId, Repr};
use serde::Serialize;
use std::path::PathBuf;

/// How the daemon runs.
#[derive(Clone, Debug)]
pub struct RelayOptions {
    pub queue_num: u16,
    /// The node's delay file (µs, decimal), re-read at most every 10 ms.
    pub delay_file: PathBuf,
    pub eta: EtaRule,
    pub idle_after: Duration,
    /// Install and remove the iptables rule (off when the caller manages it).
    pub manage_rule: bool,
    /// Observe instead of stamping: queue the UDP datagrams delivered to
    /// this node (INPUT chain) and record the D_max and N_h that ATP data
    /// arrive with, as a receiver sees them; nothing is changed.
    pub observe: bool,
}

/// What an observing daemon saw arrive: ATP data packets' N_h and D_max.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct ObservedPath {
    pub atp_data_packets: u64,
    pub hop_count_min: Option<u8>,
    pub hop_count_max: Option<u8>,
    pub d_max_us_min: Option<u32>,
    pub d_max_us_max: Option<u32>,
    pub d_max_us_sum: u64,
}

impl ObservedPath {
    /// Records one arriving IPv4 packet if it carries ATP data.
    pub fn observe_ip(&mut self, ip: &[u8]) {
        let Some((off, len)) = udp_payload_span(ip) else { return };
        let Ok(repr) = Packet::new_checked(&ip[off + 8..off + len]).and_then(|p| Repr::parse(&p)) else { return };
        if repr.protocol != ProtocolId::Atp || repr.control.contains(Control::SACK_OPT) || repr.payload_len == 0 {
            return;
        }
        self.atp_data_packets += 1;
        self.hop_count_min = Some(self.hop_count_min.map_or(repr.hop_count, |m| m.min(repr.hop_count)));
        self.hop_count_max = Some(self.hop_count_max.map_or(repr.hop_count, |m| m.max(repr.hop_count)));
        self.d_max_us_min = Some(self.d_max_us_min.map_or(repr.d_max_us, |m| m.min(repr.d_max_us)));
        self.d_max_us_max = Some(self.d_max_us_max.map_or(repr.d_max_us, |m| m.max(repr.d_max_us)));
        self.d_max_us_sum += u64::from(repr.d_max_us);
    }
}

impl RelayOptions {
    pub fn new(delay_file: PathBuf) -> Self {
        RelayOptions {
            queue_num: 0,
            delay_file,
            eta: EtaRule::Fixed(3.0),
            idle_after: Duration::from_millis(100),
            manage_rule: true,
            observe: false,
        }
    }
}

/// What the daemon did.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct RelayCounters {
    pub packets: u64,
    /// In observe mode: what arrived.
    pub observed: ObservedPath,
    pub stamped: u64,
    pub raised: u64,
    /// Forwarded UDP datagrams that were not ATP/TCP (passed unchanged).
    pub passed: u64,
    pub delay_read_errors: u64,
}

/// The node's delay as the daemon sees it.
struct DelayFile {
    path: PathBuf,
    value: Duration,
    read_at: Option<std::time::Instant>,
    errors: u64,
}

impl DelayFile {
    fn current(&mut self) -> Duration {
        let now = std::time::Instant::now();
        if self.read_at.map_or(true, |t| now.duration_since(t) >= std::time::Duration::from_millis(10)) {
            self.read_at = Some(now);
            // A failed read keeps the last good value: the medium may be
            // between its write and its rename.
            match std::fs::read_to_string(&self.path).ok().and_then(|t| t.trim().parse::<u64>().ok()) {
                Some(us) => self.value = Duration::from_micros(us),
                None => self.errors += 1,
            }
        }
        self.value
    }
}

/// The stamping state: the node's delay and its idle detector.
pub struct Stamper {
    eta: EtaRule,
    idle_after: Duration,
    last_activity: Option<Instant>,
}

/// What [`Stamper::stamp_ip`] did to a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StampResult {
    /// Not an IPv4/UDP datagram carrying a meshbed header.
    NotOurs,
    /// N_h incremented; D_max raised or not.
    Stamped { raised: bool },
}

impl Stamper {
    pub fn new(eta: EtaRule, idle_after: Duration) -> Self {
        Stamper { eta, idle_after, last_activity: None }
    }

    /// Stamps the IPv4 packet `ip` in place at `now` with the node's delay
    /// `delay` and fixes the UDP checksum.
    pub fn stamp_ip(&mut self, now: Instant, ip: &mut [u8], delay: impl FnOnce() -> Duration) -> StampResult {
        let Some((udp_off, udp_len)) = udp_payload_span(ip) else { return StampResult::NotOurs };
        let payload_off = udp_off + 8;
        let datagram = &mut ip[payload_off..udp_off + udp_len];
        let Ok(repr) = Packet::new_checked(&*datagram).and_then(|p| Repr::parse(&p)) else {
            return StampResult::NotOurs;
        };
        let idle = self.last_activity.map_or(true, |t| now.saturating_since(t) > self.idle_after);
        self.last_activity = Some(now);
        let hop_count = repr.hop_count.saturating_add(1);
        let mut packet = Packet::new_unchecked(&mut *datagram);
        packet.set_hop_count(hop_count);
        let mut raised = false;
        // seed 002 §4.1: data, probes and FINs collect the path's largest
        // delay; feedback carries the receiver's D_avg back and TCP never
        // reads D_max.
        if repr.protocol == ProtocolId::Atp && !repr.control.contains(Control::SACK_OPT) {
            let d = delay();
            let offered = if idle { Duration::from_secs_f64(d.as_secs_f64() * self.eta.eta(hop_count)) } else { d };
            let offered_us = u32::try_from((offered.as_nanos() + 500) / 1_000).unwrap_or(u32::MAX);
            if offered_us > repr.d_max_us {
                packet.set_d_max_us(offered_us);
                raised = true;
            }
        }
        fix_udp_checksum(ip, udp_off, udp_len);
        StampResult::Stamped { raised }
    }
}

/// The UDP header's offset and the UDP length (header + payload) of an
/// IPv4 packet, if it is an unfragmented UDP datagram that fits.
pub fn udp_payload_span(ip: &[u8]) -> Option<(usize, usize)> {
    if ip.len() < 20 || ip[0] >> 4 != 4 || ip[9] != 17 {
        return None;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    let frag = u16::from_be_bytes([ip[6], ip[7]]);
    // More fragments, or a fragment offset: not a whole datagram.
    if ihl < 20 || total > ip.len() || total < ihl + 8 || frag & 0x3fff != 0 {
        return None;
    }
    let udp_len = usize::from(u16::from_be_bytes([ip[ihl + 4], ip[ihl + 5]]));
    if udp_len < 8 || ihl + udp_len > total {
        return None;
    }
    Some((ihl, udp_len))
}

fn sum16(data: &[u8], mut acc: u32) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u32::from(*last) << 8;
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// Recomputes the UDP checksum (RFC 768, with the IPv4 pseudo-header). A
/// datagram sent without a checksum (0) keeps none.
pub fn fix_udp_checksum(ip: &mut [u8], udp_off: usize, udp_len: usize) {
    if ip[udp_off + 6] == 0 && ip[udp_off + 7] == 0 {
        return;
    }
    ip[udp_off + 6] = 0;
    ip[udp_off + 7] = 0;
    let mut acc = sum16(&ip[12..20], 0);
    acc += 17 + udp_len as u32;
    acc = sum16(&ip[udp_off..udp_off + udp_len], acc);
    let mut c = fold(acc);
    if c == 0 {
        c = 0xffff;
    }
    ip[udp_off + 6..udp_off + 8].copy_from_slice(&c.to_be_bytes());
}

/// Whether a UDP checksum verifies (zero = none, valid).
pub fn udp_checksum_ok(ip: &[u8]) -> bool {
    let Some((off, len)) = udp_payload_span(ip) else { return false };
    if ip[off + 6] == 0 && ip[off + 7] == 0 {
        return true;
    }
    let mut acc = sum16(&ip[12..20], 0);
    acc += 17 + len as u32;
    acc = sum16(&ip[off..off + len], acc);
    fold(acc) == 0
}

fn rule_args(op: &str, chain: &str, queue_num: u16) -> Vec<String> {
    let q = queue_num.to_string();
    ["-w", op, chain, "-p", "udp", "-j", "NFQUEUE", "--queue-num", &q, "--queue-bypass"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

fn iptables(args: &[String]) -> std::io::Result<()> {
    let out = std::process::Command::new("iptables").args(args).output()?;
    if !out.status.success() {
        return Err(std::io::Error::other(format!(
            "iptables {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Removes the rule when dropped, however the daemon ends.
struct RuleGuard(Option<(&'static str, u16)>);

impl Drop for RuleGuard {
    fn drop(&mut self) {
        if let Some((chain, q)) = self.0 {
            let _ = iptables(&rule_args("-D", chain, q));
        }
    }
}

/// Runs the daemon in the caller's network namespace until a stop signal.
/// Call [`sys::install_stop_handlers`] first (the CLI does).
pub fn run(options: &RelayOptions, ready: impl FnOnce()) -> std::io::Result<RelayCounters> {
    let mut queue = nfq::Queue::open()?;
    queue.bind(options.queue_num)?;
    // The rule goes in only once something listens on the queue.
    let chain = if options.observe { "INPUT" } else { "FORWARD" };
    let _guard = if options.manage_rule {
        iptables(&rule_args("-I", chain, options.queue_num))?;
        RuleGuard(Some((chain, options.queue_num)))
    } else {
        RuleGuard(None)
    };
    ready();
    let mut delay = DelayFile { path: options.delay_file.clone(), value: Duration::ZERO, read_at: None, errors: 0 };
    let mut stamper = Stamper::new(options.eta, options.idle_after);
    let mut counters = RelayCounters::default();
    let start = std::time::Instant::now();
    while !sys::stop_requested() {
        let mut msg = match queue.recv() {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        counters.packets += 1;
        let now = Instant::from_nanos(start.elapsed().as_nanos() as u64);
        if options.observe {
            counters.observed.observe_ip(msg.get_payload());
            msg.set_verdict(nfq::Verdict::Accept);
            queue.verdict(msg)?;
            continue;
        }
        let mut ip = msg.get_payload().to_vec();
        match stamper.stamp_ip(now, &mut ip, || delay.current()) {
            StampResult::NotOurs => counters.passed += 1,
            StampResult::Stamped { raised } => {
                counters.stamped += 1;
                counters.raised += u64::from(raised);
                msg.set_payload(ip);
            }
        }
        msg.set_verdict(nfq::Verdict::Accept);
        queue.verdict(msg)?;
    }
    counters.delay_read_errors = delay.errors;
    Ok(counters)
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_proto::wire::HEADER_LEN;

    /// An IPv4/UDP packet 10.0.0.1:5000 → 10.0.0.4:6000 around `payload`,
    /// with a valid checksum.
    fn ip_udp(payload: &[u8]) -> Vec<u8> {
        let total = 28 + payload.len();
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[8] = 64;
        p[9] = 17;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 4]);
        p[20..22].copy_from_slice(&5000u16.to_be_bytes());
        p[22..24].copy_from_slice(&6000u16.to_be_bytes());
        p[24..26].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        p[26] = 0xff; // nonzero: a checksum is present
        p[28..].copy_from_slice(payload);
        fix_udp_checksum(&mut p, 20, 8 + payload.len());
        p
    }

    fn atp(control: Control, d_max_us: u32, hop_count: u8) -> Vec<u8> {
        // Feedback carries no data (PROTOCOLS.md §1).
        let payload_len = if control.contains(Control::SACK_OPT) { 0 } else { 11 };
        let repr = Repr {
            protocol: ProtocolId::Atp,
            control,
            hop_count,
            connection_id: 7,
            seq: 0,
            ack: 0,
            d_max_us,
            d_s_us: 0,
            sack_blocks: vec![],
            payload_len,
        };
        let mut b = vec![0u8; HEADER_LEN + payload_len];
        repr.emit(&mut b);
        b
    }

    fn parse(ip: &[u8]) -> Repr {
        Repr::parse(&Packet::new_checked(&ip[28..]).unwrap()).unwrap()
    }

    #[test]
    fn checksum_matches_a_known_packet() {
        let p = ip_udp(b"hello");
        assert!(udp_checksum_ok(&p));
        let mut bad = p.clone();
        bad[30] ^= 1;
        assert!(!udp_checksum_ok(&bad));
    }

    #[test]
    fn stamps_data_raises_d_max_and_fixes_checksum() {
        let mut s = Stamper::new(EtaRule::Fixed(3.0), Duration::from_millis(100));
        let t = |ms: u64| Instant::from_nanos(ms * 1_000_000);
        let mut p = ip_udp(&atp(Control(0), 0, 1));
        // Idle node: η·D.
        assert_eq!(s.stamp_ip(t(0), &mut p, || Duration::from_micros(500)), StampResult::Stamped { raised: true });
        let r = parse(&p);
        assert_eq!((r.d_max_us, r.hop_count), (1500, 2));
        assert!(udp_checksum_ok(&p));
        // Busy: D; a larger D_max stays.
        let mut p = ip_udp(&atp(Control(0), 900, 2));
        assert_eq!(s.stamp_ip(t(10), &mut p, || Duration::from_micros(500)), StampResult::Stamped { raised: false });
        assert_eq!((parse(&p).d_max_us, parse(&p).hop_count), (900, 3));
        let mut p = ip_udp(&atp(Control(0), 100, 0));
        s.stamp_ip(t(20), &mut p, || Duration::from_micros(500));
        assert_eq!(parse(&p).d_max_us, 500);
        assert!(udp_checksum_ok(&p));
    }

    #[test]
    fn feedback_keeps_d_max_and_others_pass() {
        let mut s = Stamper::new(EtaRule::Fixed(3.0), Duration::from_millis(100));
        let mut p = ip_udp(&atp(Control(Control::SACK_OPT), 777, 0));
        s.stamp_ip(Instant::ZERO, &mut p, || Duration::from_micros(500));
        assert_eq!((parse(&p).d_max_us, parse(&p).hop_count), (777, 1));
        assert!(udp_checksum_ok(&p));
        let mut other = ip_udp(b"not a meshbed header at all, just bytes");
        let before = other.clone();
        assert_eq!(s.stamp_ip(Instant::ZERO, &mut other, || Duration::ZERO), StampResult::NotOurs);
        assert_eq!(other, before);
        let mut truncated = before[..25].to_vec();
        assert_eq!(s.stamp_ip(Instant::ZERO, &mut truncated, || Duration::ZERO), StampResult::NotOurs);
    }
}
