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
//! header with the one stamping rule, `meshbed_proto::relay::Stamper::stamp`
//! (N_h + 1; on ATP data, SYN and FIN packets D_max = max(D_max, D), η·D
//! when the node has forwarded nothing for `idle_after`; by default η is the
//! rule of the flow's own ATP preset, named by its connection id, [`parse_eta`]), with D from the node's delay file
//! (`meshbed_net::delay::DelaySource::File`), fixes the UDP checksum and
//! accepts the packet with its new payload. Other packets pass untouched.
//! The rule is removed on exit, Ctrl-C or SIGTERM.

use crate::sys;
use etherparse::{IpNumber, Ipv4Slice, UdpHeader, UdpSlice};
use meshbed_core::{Duration, Instant};
use meshbed_net::delay::DelaySource;
use meshbed_proto::atp::AtpConfig;
use meshbed_proto::relay::{self, EtaRule};
use meshbed_proto::wire::{Control, Packet, ProtocolId, Repr};
use serde::Serialize;
use std::path::PathBuf;

/// How the daemon runs.
#[derive(Clone, Debug)]
pub struct RelayOptions {
    pub queue_num: u16,
    /// The node's delay file (µs, decimal), re-read at most every 10 ms.
    pub delay_file: PathBuf,
    /// η for an idle node: the flow's own preset ([`EtaRule::ByConnectionId`])
    /// unless told otherwise.
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
        let Some(span) = UdpSpan::of(ip) else { return };
        let Ok(repr) = Packet::new_checked(&ip[span.payload()]).and_then(|p| Repr::parse(&p)) else { return };
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
            eta: EtaRule::ByConnectionId,
            idle_after: Duration::from_millis(100),
            manage_rule: true,
            observe: false,
        }
    }
}

/// Adaptive ATP's per-hop rule, η = 3 + 0.5·(h − 1) (seed 000 §V.A.3), as
/// the simulator's relays apply it to adaptive ATP flows.
pub fn adaptive_eta() -> EtaRule {
    AtpConfig::adaptive().relay_config().eta
}

/// Parses the daemon's η rule: `auto` (the rule of the ATP preset the
/// datagram's connection id names, as the simulator's per-flow relays apply
/// it: adaptive ATP's per-hop η, η = 3 for default and aggressive),
/// `adaptive` ([`adaptive_eta`] for every flow, chosen per datagram from the
/// N_h it carries) or a fixed number ≥ 1 (`3`: default and aggressive ATP,
/// seed 002 §4.1). The header does not say which ATP variant a flow runs;
/// the connection id of a meshbed sender does (docs/PROTOCOLS.md, "The relay
/// stamping rule in every driver").
pub fn parse_eta(s: &str) -> Result<EtaRule, String> {
    match s {
        "auto" => return Ok(EtaRule::ByConnectionId),
        "adaptive" => return Ok(adaptive_eta()),
        _ => {}
    }
    match s.parse::<f64>() {
        Ok(eta) if eta.is_finite() && eta >= 1.0 => Ok(EtaRule::Fixed(eta)),
        _ => Err(format!(
            "`{s}`: expected `auto` (each flow's preset), `adaptive` (η = 3 + 0.5·(h − 1)) or a fixed η, a number ≥ 1"
        )),
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

/// The stamping state: the one stamping rule with the daemon's η and idle
/// detector; the delay comes from the caller.
pub struct Stamper {
    rule: relay::Stamper,
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
        Stamper { rule: relay::Stamper::new(eta, idle_after) }
    }

    /// Stamps the IPv4 packet `ip`, which the node forwards at `now`, in
    /// place with the node's delay from `source`
    /// ([`meshbed_proto::relay::Stamper::stamp`]) and fixes the UDP checksum.
    /// Every packet counts as channel activity, ours or not: the node
    /// transmits it ([`meshbed_proto::relay::ChannelActivity`]).
    pub fn stamp_ip(&mut self, now: Instant, ip: &mut [u8], source: &mut impl relay::DelaySource) -> StampResult {
        let Some(span) = UdpSpan::of(ip) else {
            self.rule.note_channel_busy(now);
            return StampResult::NotOurs;
        };
        match self.rule.stamp(now, &mut ip[span.payload()], source) {
            Ok(outcome) => {
                span.fix_checksum(ip);
                StampResult::Stamped { raised: outcome.raised }
            }
            // Left untouched by the rule.
            Err(_) => StampResult::NotOurs,
        }
    }
}

/// Where the UDP datagram of an IPv4 packet lies, found with etherparse: a
/// whole (unfragmented) datagram directly after the IPv4 header, with a
/// UDP length that fits in the packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct UdpSpan {
    /// The UDP header's offset in the packet.
    pub udp_off: usize,
    /// The UDP length (header + payload).
    pub udp_len: usize,
    source: [u8; 4],
    destination: [u8; 4],
}

impl UdpSpan {
    pub fn of(ip: &[u8]) -> Option<UdpSpan> {
        let packet = Ipv4Slice::from_slice(ip).ok()?;
        let header = packet.header();
        // The protocol field itself (not a UDP behind an authentication
        // header, which a rewrite would break), and a whole datagram.
        if header.protocol() != IpNumber::UDP || packet.is_payload_fragmented() {
            return None;
        }
        let udp = UdpSlice::from_slice(packet.payload().payload).ok()?;
        // A zero length (IPv6 jumbograms only) is no IPv4 datagram.
        if usize::from(udp.length()) < UdpHeader::LEN {
            return None;
        }
        Some(UdpSpan {
            udp_off: header.slice().len(),
            udp_len: udp.slice().len(),
            source: header.source(),
            destination: header.destination(),
        })
    }

    /// The UDP payload's byte range in the packet.
    pub fn payload(&self) -> std::ops::Range<usize> {
        self.udp_off + UdpHeader::LEN..self.udp_off + self.udp_len
    }

    /// The checksum the UDP datagram in `ip` should carry (RFC 768, IPv4
    /// pseudo-header), or `None` when it is sent without one (zero).
    fn expected_checksum(&self, ip: &[u8]) -> Option<u16> {
        let (header, payload) = UdpHeader::from_slice(&ip[self.udp_off..self.udp_off + self.udp_len]).ok()?;
        if header.checksum == 0 {
            return None;
        }
        // The length fits: it came from the UDP header.
        header.calc_checksum_ipv4_raw(self.source, self.destination, payload).ok()
    }

    /// Recomputes the UDP checksum after the payload changed. A datagram
    /// sent without a checksum keeps none.
    pub fn fix_checksum(&self, ip: &mut [u8]) {
        if let Some(c) = self.expected_checksum(ip) {
            ip[self.udp_off + 6..self.udp_off + 8].copy_from_slice(&c.to_be_bytes());
        }
    }
}

/// Whether `ip` is an IPv4/UDP packet whose UDP checksum verifies (zero =
/// none, valid).
pub fn udp_checksum_ok(ip: &[u8]) -> bool {
    let Some(span) = UdpSpan::of(ip) else { return false };
    let stored = u16::from_be_bytes([ip[span.udp_off + 6], ip[span.udp_off + 7]]);
    span.expected_checksum(ip).is_none_or(|c| c == stored)
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
    // Read at first use: the medium may not have written it yet.
    let mut delay =
        DelaySource::File { path: options.delay_file.clone(), value: Duration::ZERO, read_at: None, errors: 0 };
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
        match stamper.stamp_ip(now, &mut ip, &mut delay) {
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
    if let DelaySource::File { errors, .. } = delay {
        counters.delay_read_errors = errors;
    }
    Ok(counters)
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_proto::wire::HEADER_LEN;

    /// An IPv4/UDP packet 10.0.0.1:5000 → 10.0.0.4:6000 around `payload`,
    /// with a valid checksum.
    fn ip_udp(payload: &[u8]) -> Vec<u8> {
        let builder = etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 4], 64).udp(5000, 6000);
        let mut p = Vec::with_capacity(builder.size(payload.len()));
        builder.write(&mut p, payload).unwrap();
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
        // RFC 768 over the pseudo-header, worked by hand for this packet.
        assert_eq!(p[26..28], [0x7d, 0x05]);
        assert!(udp_checksum_ok(&p));
        let mut zeroed = p.clone();
        zeroed[26..28].copy_from_slice(&[0, 0]);
        assert!(udp_checksum_ok(&zeroed), "zero: sent without a checksum");
        let span = UdpSpan::of(&zeroed).unwrap();
        span.fix_checksum(&mut zeroed);
        assert_eq!(zeroed[26..28], [0, 0], "a datagram without a checksum keeps none");
        let mut wrong = zeroed.clone();
        wrong[26] = 0x12;
        span.fix_checksum(&mut wrong);
        assert_eq!(wrong, p);
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
        assert_eq!(s.stamp_ip(t(0), &mut p, &mut Duration::from_micros(500)), StampResult::Stamped { raised: true });
        let r = parse(&p);
        assert_eq!((r.d_max_us, r.hop_count), (1500, 2));
        assert!(udp_checksum_ok(&p));
        // Busy: D; a larger D_max stays.
        let mut p = ip_udp(&atp(Control(0), 900, 2));
        assert_eq!(s.stamp_ip(t(10), &mut p, &mut Duration::from_micros(500)), StampResult::Stamped { raised: false });
        assert_eq!((parse(&p).d_max_us, parse(&p).hop_count), (900, 3));
        let mut p = ip_udp(&atp(Control(0), 100, 0));
        s.stamp_ip(t(20), &mut p, &mut Duration::from_micros(500));
        assert_eq!(parse(&p).d_max_us, 500);
        assert!(udp_checksum_ok(&p));
    }

    #[test]
    fn feedback_keeps_d_max_and_others_pass() {
        let mut s = Stamper::new(EtaRule::Fixed(3.0), Duration::from_millis(100));
        let mut p = ip_udp(&atp(Control(Control::SACK_OPT), 777, 0));
        s.stamp_ip(Instant::ZERO, &mut p, &mut Duration::from_micros(500));
        assert_eq!((parse(&p).d_max_us, parse(&p).hop_count), (777, 1));
        assert!(udp_checksum_ok(&p));
        let mut other = ip_udp(b"not a meshbed header at all, just bytes");
        let before = other.clone();
        assert_eq!(s.stamp_ip(Instant::ZERO, &mut other, &mut Duration::from_nanos(0)), StampResult::NotOurs);
        assert_eq!(other, before);
        let mut truncated = before[..25].to_vec();
        assert_eq!(s.stamp_ip(Instant::ZERO, &mut truncated, &mut Duration::from_nanos(0)), StampResult::NotOurs);
    }

    #[test]
    fn eta_is_auto_adaptive_or_a_fixed_number() {
        assert_eq!(parse_eta("auto"), Ok(EtaRule::ByConnectionId));
        assert_eq!(RelayOptions::new(PathBuf::new()).eta, EtaRule::ByConnectionId, "the default");
        assert_eq!(parse_eta("adaptive"), Ok(EtaRule::ByHopCount { base: 3.0, per_hop: 0.5 }));
        assert_eq!(parse_eta("3"), Ok(EtaRule::Fixed(3.0)));
        assert_eq!(parse_eta("1"), Ok(EtaRule::Fixed(1.0)));
        for bad in ["0.99", "NaN", "inf", "", "per-hop"] {
            assert!(parse_eta(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fragments_and_other_protocols_are_not_ours() {
        let mut s = Stamper::new(EtaRule::Fixed(3.0), Duration::from_millis(100));
        let whole = ip_udp(&atp(Control(0), 0, 0));
        let mut first_fragment = whole.clone();
        first_fragment[6] |= 0x20;
        let mut later_fragment = whole.clone();
        later_fragment[7] = 1;
        let mut icmp = whole.clone();
        icmp[9] = 1;
        for mut p in [first_fragment, later_fragment, icmp] {
            let before = p.clone();
            assert_eq!(s.stamp_ip(Instant::ZERO, &mut p, &mut Duration::from_micros(500)), StampResult::NotOurs);
            assert_eq!(p, before);
        }
    }
}
