//! Packet captures of what the radio carried: one classic pcap file per
//! node, 802.11 frames behind a radiotap header (link type 127), the way a
//! monitor-mode interface at that node would have recorded them.
//!
//! The radio model only reports ([`AirEvent`], off unless observing); this
//! module turns the reports into bytes, as a wrapper around the model and
//! not a branch inside it (STYLE.md, "Time, randomness, determinism";
//! smoltcp `phy/pcap_writer.rs`). Each node's file holds the frames it sent
//! and the frames its PHY followed: decoded ones with a good FCS, lost ones
//! (interference, noise) with the radiotap bad-FCS flag and a wrong FCS.
//! Timestamps are simulated time, at the frame's first bit (radiotap TSFT's
//! definition), in microseconds.
//!
//! What a DATA frame carries: LLC/SNAP, then an IPv4 packet of exactly the
//! MSDU's size built by an [`IpEncoder`]; the simulator's [`SimEncoder`]
//! puts the transport datagram (the meshbed header of
//! `meshbed_proto::wire`, as the engines wrote and the relays stamped it)
//! in UDP, and pads with zeros what the simulator does not materialise.

use crate::Packet;
use meshbed_core::Instant;
use meshbed_radio::{Addr, AirEvent, AirFrame, FrameKind, NodeId, Payload, Standard};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// pcap's link type for 802.11 frames behind a radiotap header.
pub const LINKTYPE_IEEE802_11_RADIOTAP: u32 = 127;
/// The largest record kept whole (more than any MPDU the model sends).
pub const SNAPLEN_BYTES: u32 = 65_535;
/// The UDP port of meshbed's transports (`meshbed recv`'s default listen
/// port); both ends of a simulated flow use it.
pub const MESHBED_UDP_PORT: u16 = 7411;
/// AODV's UDP port (RFC 3561 §1).
pub const AODV_UDP_PORT: u16 = 654;
/// OLSR's UDP port (RFC 3626 §3.1).
pub const OLSR_UDP_PORT: u16 = 698;
/// The discard port (RFC 863): UDP traffic whose payload is not modelled.
pub const DISCARD_UDP_PORT: u16 = 9;
const IPPROTO_UDP: u8 = 17;
/// DSR's IP protocol number (RFC 4728 §6.1).
const IPPROTO_DSR: u8 = 48;
const IPV4_HEADER_BYTES: usize = 20;
const UDP_HEADER_BYTES: usize = 8;
/// RFC 1042 encapsulation in an 802.11 DATA frame: LLC/SNAP, then the EtherType.
const LLC_SNAP: [u8; 6] = [0xaa, 0xaa, 0x03, 0x00, 0x00, 0x00];
pub const ETHERTYPE_IPV4: u16 = 0x0800;

/// Radiotap flags (radiotap.org, "Flags"): the frame ends with its FCS; the
/// FCS failed.
const RADIOTAP_FLAG_FCS_AT_END: u8 = 0x10;
const RADIOTAP_FLAG_BAD_FCS: u8 = 0x40;
/// Radiotap present bits: TSFT, Flags, Rate, Channel, dBm antenna signal,
/// dBm TX power.
const RADIOTAP_TSFT: u32 = 1 << 0;
const RADIOTAP_FLAGS: u32 = 1 << 1;
const RADIOTAP_RATE: u32 = 1 << 2;
const RADIOTAP_CHANNEL: u32 = 1 << 3;
const RADIOTAP_DBM_ANTSIGNAL: u32 = 1 << 5;
const RADIOTAP_DBM_TX_POWER: u32 = 1 << 10;
/// Version, pad, length, one present word, TSFT (8-aligned at offset 8),
/// flags, rate, channel (2-aligned at 18), one signed dBm byte.
pub const RADIOTAP_BYTES: usize = 23;

/// A classic pcap file (microsecond timestamps, little-endian).
pub struct PcapWriter<W: Write> {
    out: W,
    records: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header for `linktype`.
    pub fn new(mut out: W, linktype: u32) -> io::Result<Self> {
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&0i32.to_le_bytes()); // thiszone: UTC
        h.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
        h.extend_from_slice(&SNAPLEN_BYTES.to_le_bytes());
        h.extend_from_slice(&linktype.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out, records: 0 })
    }

    /// Appends one record stamped `at` (simulated time, truncated to µs).
    pub fn write_record(&mut self, at: Instant, data: &[u8]) -> io::Result<()> {
        let us = at.as_nanos() / 1_000;
        let len = u32::try_from(data.len()).map_err(|_| io::Error::other("a pcap record over 4 GiB"))?;
        let kept = len.min(SNAPLEN_BYTES);
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&((us / 1_000_000) as u32).to_le_bytes());
        h[4..8].copy_from_slice(&((us % 1_000_000) as u32).to_le_bytes());
        h[8..12].copy_from_slice(&kept.to_le_bytes());
        h[12..16].copy_from_slice(&len.to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&data[..kept as usize])?;
        self.records += 1;
        Ok(())
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The radiotap fields of one frame.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Radiotap {
    pub tsft_us: u64,
    pub fcs_bad: bool,
    pub rate_kbps: u32,
    pub channel_mhz: u16,
    pub channel_flags: u16,
    /// Signal at the receiver (a heard frame) or power sent (a sent one).
    pub dbm: RadiotapPower,
}

#[derive(Copy, Clone, Debug, PartialEq)]
pub enum RadiotapPower {
    AntennaSignal(i8),
    TxPower(i8),
}

impl Radiotap {
    /// Appends the header (always [`RADIOTAP_BYTES`] long).
    pub fn emit(&self, out: &mut Vec<u8>) {
        let (power_bit, dbm) = match self.dbm {
            RadiotapPower::AntennaSignal(d) => (RADIOTAP_DBM_ANTSIGNAL, d),
            RadiotapPower::TxPower(d) => (RADIOTAP_DBM_TX_POWER, d),
        };
        let present = RADIOTAP_TSFT | RADIOTAP_FLAGS | RADIOTAP_RATE | RADIOTAP_CHANNEL | power_bit;
        let flags = RADIOTAP_FLAG_FCS_AT_END | if self.fcs_bad { RADIOTAP_FLAG_BAD_FCS } else { 0 };
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&(RADIOTAP_BYTES as u16).to_le_bytes());
        out.extend_from_slice(&present.to_le_bytes());
        out.extend_from_slice(&self.tsft_us.to_le_bytes());
        // Radiotap's rate is in 500 kbit/s units (5.5 Mbit/s = 11).
        out.extend_from_slice(&[flags, (self.rate_kbps / 500).min(255) as u8]);
        out.extend_from_slice(&self.channel_mhz.to_le_bytes());
        out.extend_from_slice(&self.channel_flags.to_le_bytes());
        out.push(dbm as u8);
    }
}

/// The channel a standard's network uses and radiotap's flags for it
/// (radiotap.org "Channel": 2 GHz 0x0080, 5 GHz 0x0100, CCK 0x0020, OFDM
/// 0x0040).
pub fn radiotap_channel(standard: Standard) -> (u16, u16) {
    let mhz = (standard.frequency_hz() / 1e6).round() as u16;
    let flags = match standard {
        Standard::A => 0x0100 | 0x0040,
        Standard::B => 0x0080 | 0x0020,
        Standard::G => 0x0080 | 0x0040,
    };
    (mhz, flags)
}

/// A node's MAC address: locally administered, `02:6d`, the network's id,
/// the node's index (the emulator's TAP addresses follow the same rule).
pub fn node_mac(network_id: u16, node: NodeId) -> [u8; 6] {
    let id = network_id.to_be_bytes();
    [0x02, 0x6d, id[0], id[1], (node >> 8) as u8, node as u8]
}

/// A node's IPv4 address, `10.0.<i / 250>.<i % 250 + 1>` (the emulator's plan).
pub fn node_ipv4(node: NodeId) -> [u8; 4] {
    [10, 0, (node / 250) as u8, (node % 250 + 1) as u8]
}

/// The 802.11 MPDU of `frame` (FCS included) around `body` of `ethertype`
/// (the MSDU of a DATA frame, nothing for the others); the FCS is wrong
/// when `fcs_bad`.
pub fn ieee80211_mpdu<P: Payload>(
    network_id: u16,
    frame: &AirFrame<P>,
    ethertype: u16,
    body: &[u8],
    fcs_bad: bool,
    out: &mut Vec<u8>,
) {
    let start = out.len();
    let ra = match frame.rx {
        Addr::Unicast(n) => node_mac(network_id, n),
        Addr::Broadcast => [0xff; 6],
    };
    let ta = node_mac(network_id, frame.tx);
    // Frame control, first byte: subtype << 4 | type << 2 (IEEE 802.11-2016 §9.2.4.1.3).
    let fc0: u8 = match frame.kind {
        FrameKind::Data => 0x08,
        FrameKind::Rts => 0xb4,
        FrameKind::Cts => 0xc4,
        FrameKind::Ack => 0xd4,
    };
    let fc1: u8 = if frame.retry { 0x08 } else { 0 };
    // Duration in µs, rounded up; 15 bits.
    let nav_us = frame.nav.as_nanos().div_ceil(1_000).min(0x7fff) as u16;
    out.extend_from_slice(&[fc0, fc1]);
    out.extend_from_slice(&nav_us.to_le_bytes());
    out.extend_from_slice(&ra);
    match frame.kind {
        FrameKind::Data => {
            out.extend_from_slice(&ta);
            // An IBSS's BSSID: the network's, locally administered.
            out.extend_from_slice(&node_mac(network_id, 0xffff));
            out.extend_from_slice(&((frame.seq & 0x0fff) << 4).to_le_bytes());
            out.extend_from_slice(&LLC_SNAP);
            out.extend_from_slice(&ethertype.to_be_bytes());
            out.extend_from_slice(body);
        }
        FrameKind::Rts => out.extend_from_slice(&ta),
        FrameKind::Ack | FrameKind::Cts => {}
    }
    let fcs = crc32fast::hash(&out[start..]);
    out.extend_from_slice(&(if fcs_bad { !fcs } else { fcs }).to_le_bytes());
}

/// Appends a 20-byte IPv4 header (no options, DF set, checksum computed).
pub fn emit_ipv4_header(src: [u8; 4], dst: [u8; 4], ttl: u8, protocol: u8, id: u16, total_len: u16, out: &mut Vec<u8>) {
    let mut h = [0u8; IPV4_HEADER_BYTES];
    h[0] = 0x45;
    h[2..4].copy_from_slice(&total_len.to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[6] = 0x40;
    h[8] = ttl;
    h[9] = protocol;
    h[12..16].copy_from_slice(&src);
    h[16..20].copy_from_slice(&dst);
    let sum = h.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum::<u32>();
    let folded = (sum & 0xffff) + (sum >> 16);
    let folded = (folded & 0xffff) + (folded >> 16);
    h[10..12].copy_from_slice(&(!(folded as u16)).to_be_bytes());
    out.extend_from_slice(&h);
}

/// Turns a carried packet into the packet a capture shows after LLC/SNAP.
pub trait IpEncoder<P> {
    fn ip_packet(&self, payload: &P, out: &mut Vec<u8>);
    /// The EtherType of what [`IpEncoder::ip_packet`] writes.
    fn ethertype(&self, _payload: &P) -> u16 {
        ETHERTYPE_IPV4
    }
}

/// How routing control packets travel: in UDP to a port (AODV, OLSR) or
/// as DSR's own IP protocol.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ControlCarrier {
    Udp(u16),
    Dsr,
}

/// The simulator's packets as IPv4: transport datagrams in UDP on
/// [`MESHBED_UDP_PORT`], modelled-only UDP traffic on the discard port,
/// routing control packets by `control`; a DSR source route before the UDP
/// header under IP protocol 48. The IP packet is exactly the MSDU the
/// model timed (`Packet::size_bytes`), padded with zeros.
#[derive(Copy, Clone, Debug)]
pub struct SimEncoder {
    pub control: ControlCarrier,
}

impl IpEncoder<Packet> for SimEncoder {
    fn ip_packet(&self, pkt: &Packet, out: &mut Vec<u8>) {
        let start = out.len();
        let src = node_ipv4(pkt.src);
        // A broadcast control packet names its sender as destination.
        let dst = if pkt.control && pkt.dst == pkt.src { [255; 4] } else { node_ipv4(pkt.dst) };
        let (dsr_header, udp_port): (&[u8], Option<u16>) = match (pkt.control, self.control) {
            (true, ControlCarrier::Udp(port)) => (&[], Some(port)),
            (true, ControlCarrier::Dsr) => (&pkt.datagram, None),
            (false, _) if pkt.datagram.is_empty() => (&pkt.routing_header, Some(DISCARD_UDP_PORT)),
            (false, _) => (&pkt.routing_header, Some(MESHBED_UDP_PORT)),
        };
        let udp_payload: &[u8] = if udp_port.is_some() { &pkt.datagram } else { &[] };
        let built = IPV4_HEADER_BYTES + dsr_header.len() + udp_port.map_or(0, |_| UDP_HEADER_BYTES + udp_payload.len());
        let total = built.max(pkt.size_bytes as usize).min(usize::from(u16::MAX));
        let protocol = if dsr_header.is_empty() && udp_port.is_some() { IPPROTO_UDP } else { IPPROTO_DSR };
        emit_ipv4_header(src, dst, pkt.ttl, protocol, pkt.seq as u16, total as u16, out);
        out.extend_from_slice(dsr_header);
        if let Some(port) = udp_port {
            let udp_len = (total - IPV4_HEADER_BYTES - dsr_header.len()) as u16;
            out.extend_from_slice(&port.to_be_bytes());
            out.extend_from_slice(&port.to_be_bytes());
            out.extend_from_slice(&udp_len.to_be_bytes());
            // IPv4 allows a UDP checksum of zero: not computed.
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(udp_payload);
        }
        out.resize(start + total, 0);
    }
}

/// What one capture wrote: frames per node (sent + heard) and how many of
/// the heard ones were lost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaptureCounts {
    pub sent: Vec<u64>,
    pub heard: Vec<u64>,
    pub heard_lost: Vec<u64>,
}

/// Whatever takes the frames sent and heard of an observed run.
pub trait AirObserver<P> {
    fn observe(&mut self, event: &AirEvent<P>) -> io::Result<()>;
    /// Puts out whatever is buffered (the run ended).
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<P: Payload, W: Write, E: IpEncoder<P>> AirObserver<P> for Capture<W, E> {
    fn observe(&mut self, event: &AirEvent<P>) -> io::Result<()> {
        self.record(event)
    }
    fn flush(&mut self) -> io::Result<()> {
        Capture::flush(self)
    }
}

/// One pcap file per node, fed [`AirEvent`]s.
pub struct Capture<W: Write, E> {
    writers: Vec<PcapWriter<W>>,
    encoder: E,
    network_id: u16,
    channel: (u16, u16),
    counts: CaptureCounts,
    buf: Vec<u8>,
    body: Vec<u8>,
}

impl<W: Write, E> Capture<W, E> {
    /// A capture into `outs`, one per node, in node order.
    pub fn new(outs: Vec<W>, encoder: E, network_id: u16, standard: Standard) -> io::Result<Self> {
        let n = outs.len();
        let writers =
            outs.into_iter().map(|o| PcapWriter::new(o, LINKTYPE_IEEE802_11_RADIOTAP)).collect::<io::Result<_>>()?;
        let counts = CaptureCounts { sent: vec![0; n], heard: vec![0; n], heard_lost: vec![0; n] };
        Ok(Capture {
            writers,
            encoder,
            network_id,
            channel: radiotap_channel(standard),
            counts,
            buf: Vec::new(),
            body: Vec::new(),
        })
    }

    pub fn counts(&self) -> &CaptureCounts {
        &self.counts
    }

    /// Writes one frame sent or heard into its node's file.
    pub fn record<P: Payload>(&mut self, event: &AirEvent<P>) -> io::Result<()>
    where
        E: IpEncoder<P>,
    {
        let (node, at, frame, dbm, fcs_bad) = match event {
            AirEvent::Sent { node, at, frame, tx_power_dbm, .. } => {
                self.counts.sent[*node as usize] += 1;
                (*node, *at, frame, RadiotapPower::TxPower(dbm_i8(*tx_power_dbm)), false)
            }
            AirEvent::Heard { node, at, frame, rx_power_mw, decoded, .. } => {
                self.counts.heard[*node as usize] += 1;
                self.counts.heard_lost[*node as usize] += u64::from(!decoded);
                let dbm = dbm_i8(10.0 * libm::log10(*rx_power_mw));
                (*node, *at, frame, RadiotapPower::AntennaSignal(dbm), !decoded)
            }
        };
        self.body.clear();
        let mut ethertype = ETHERTYPE_IPV4;
        if let Some(p) = &frame.payload {
            self.encoder.ip_packet(p, &mut self.body);
            ethertype = self.encoder.ethertype(p);
        }
        self.buf.clear();
        let (channel_mhz, channel_flags) = self.channel;
        let rt = Radiotap {
            tsft_us: at.as_nanos() / 1_000,
            fcs_bad,
            rate_kbps: frame.rate_kbps,
            channel_mhz,
            channel_flags,
            dbm,
        };
        rt.emit(&mut self.buf);
        ieee80211_mpdu(self.network_id, frame, ethertype, &self.body, fcs_bad, &mut self.buf);
        self.writers[node as usize].write_record(at, &self.buf)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.writers.iter_mut().try_for_each(|w| w.flush())
    }
}

/// A power in dBm as radiotap's signed byte.
fn dbm_i8(dbm: f64) -> i8 {
    if dbm.is_finite() {
        dbm.round().clamp(-128.0, 127.0) as i8
    } else {
        -128
    }
}

/// The file of node `node` in a capture directory: `n<node>.pcap`.
pub fn node_file(dir: &Path, node: NodeId) -> PathBuf {
    dir.join(format!("n{node}.pcap"))
}

/// Creates `dir` (and its parents) and one file per node in it.
pub fn create_files(dir: &Path, nodes: usize) -> io::Result<Vec<BufWriter<File>>> {
    std::fs::create_dir_all(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot create the capture directory {}: {e}", dir.display())))?;
    (0..nodes as NodeId)
        .map(|n| {
            let path = node_file(dir, n);
            File::create(&path).map(BufWriter::new).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot create the capture file {}: {e}", path.display()))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_core::Duration;

    #[test]
    fn pcap_header_and_record_layout() {
        let mut w = PcapWriter::new(Vec::new(), LINKTYPE_IEEE802_11_RADIOTAP).unwrap();
        w.write_record(Instant::from_nanos(2_000_123_999), &[1, 2, 3]).unwrap();
        let b = w.out;
        assert_eq!(&b[0..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), 127);
        assert_eq!(u32::from_le_bytes(b[24..28].try_into().unwrap()), 2, "seconds");
        assert_eq!(u32::from_le_bytes(b[28..32].try_into().unwrap()), 123, "µs, truncated");
        assert_eq!(u32::from_le_bytes(b[32..36].try_into().unwrap()), 3);
        assert_eq!(&b[40..], &[1, 2, 3]);
    }

    #[test]
    fn radiotap_fields_sit_at_their_aligned_offsets() {
        let rt = Radiotap {
            tsft_us: 0x0102_0304_0506_0708,
            fcs_bad: true,
            rate_kbps: 5_500,
            channel_mhz: 2412,
            channel_flags: 0x00a0,
            dbm: RadiotapPower::AntennaSignal(-71),
        };
        let mut b = Vec::new();
        rt.emit(&mut b);
        assert_eq!(b.len(), RADIOTAP_BYTES);
        assert_eq!(u16::from_le_bytes([b[2], b[3]]) as usize, RADIOTAP_BYTES);
        assert_eq!(u32::from_le_bytes(b[4..8].try_into().unwrap()), 0b10_1111);
        assert_eq!(u64::from_le_bytes(b[8..16].try_into().unwrap()), 0x0102_0304_0506_0708);
        assert_eq!(b[16], 0x50, "FCS at end + bad FCS");
        assert_eq!(b[17], 11, "5.5 Mbit/s in 500 kbit/s units");
        assert_eq!(u16::from_le_bytes([b[18], b[19]]), 2412);
        assert_eq!(b[22] as i8, -71);
    }

    #[test]
    fn ipv4_header_checksum_verifies() {
        let mut b = Vec::new();
        emit_ipv4_header([10, 0, 0, 1], [10, 0, 0, 3], 64, 17, 7, 1500, &mut b);
        let sum: u32 = b.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
        assert_eq!((sum & 0xffff) + (sum >> 16), 0xffff, "ones' complement sum of a valid header");
    }

    #[test]
    fn an_ack_is_14_bytes_and_its_fcs_is_the_crc_of_the_rest() {
        let ack = AirFrame::<Packet> {
            kind: FrameKind::Ack,
            tx: 1,
            rx: Addr::Unicast(0),
            nav: Duration::ZERO,
            seq: 0,
            retry: false,
            rate_kbps: 6_000,
            payload: None,
        };
        let mut good = Vec::new();
        ieee80211_mpdu(0, &ack, ETHERTYPE_IPV4, &[], false, &mut good);
        assert_eq!(good.len(), ack.mpdu_bytes() as usize);
        assert_eq!(&good[4..10], &node_mac(0, 0));
        assert_eq!(u32::from_le_bytes(good[10..14].try_into().unwrap()), crc32fast::hash(&good[..10]));
        let mut bad = Vec::new();
        ieee80211_mpdu(0, &ack, ETHERTYPE_IPV4, &[], true, &mut bad);
        assert_ne!(bad[10..], good[10..]);
    }

    #[test]
    fn sim_packets_become_ip_packets_of_the_msdu_size() {
        let udp = SimEncoder { control: ControlCarrier::Udp(AODV_UDP_PORT) };
        let dsr = SimEncoder { control: ControlCarrier::Dsr };
        // A broadcast AODV control packet: UDP 654 to the broadcast address.
        let mut hello = Packet::data(4, 4, 0, 0, 28 + 20, Instant::ZERO, vec![7; 20]);
        hello.control = true;
        let mut b = Vec::new();
        udp.ip_packet(&hello, &mut b);
        assert_eq!(b.len(), 48);
        assert_eq!((b[9], &b[12..16], &b[16..20]), (17, &[10, 0, 0, 5][..], &[255, 255, 255, 255][..]));
        assert_eq!(u16::from_be_bytes([b[22], b[23]]), AODV_UDP_PORT);
        assert_eq!(u16::from_be_bytes([b[24], b[25]]), 28, "UDP length");
        assert_eq!(&b[28..], &[7; 20]);
        // UDP traffic without bytes: the discard port, zeros to the size.
        let cbr = Packet::data(0, 300, 1, 9, 512, Instant::ZERO, Vec::new());
        b.clear();
        udp.ip_packet(&cbr, &mut b);
        assert_eq!((b.len(), &b[16..20]), (512, &[10, 0, 1, 51][..]));
        assert_eq!(u16::from_be_bytes([b[22], b[23]]), DISCARD_UDP_PORT);
        assert!(b[28..].iter().all(|&x| x == 0));
        // A DSR data packet: protocol 48, its source route, then UDP 7411.
        let mut routed = Packet::data(0, 2, 1, 9, 28 + 6 + 40, Instant::ZERO, vec![1; 40]);
        routed.routing_header = vec![9; 6].into_boxed_slice();
        b.clear();
        dsr.ip_packet(&routed, &mut b);
        assert_eq!((b.len(), b[9]), (74, IPPROTO_DSR));
        assert_eq!(&b[20..26], &[9; 6]);
        assert_eq!(u16::from_be_bytes([b[26], b[27]]), MESHBED_UDP_PORT);
        assert_eq!(&b[34..], &[1; 40]);
    }
}
