//! Packet captures (`Sim::run_with_pcap_dir`): the files parse back as
//! pcap + radiotap + 802.11, every frame the MAC's counters say was sent or
//! received is in them, lost frames carry the bad-FCS flag, and observing
//! does not change the run. The dissector test runs tshark on the same
//! capture when tshark is installed. Every protocol's connection ids name
//! it as the dissector reads them (`proto::connection::protocol_of`, the
//! Lua table kept equal to it).

use meshbed_proto::connection::{protocol_code, protocol_of, wire_id};
use meshbed_proto::{wire, Protocol};
use meshbed_sim::capture::{node_file, RADIOTAP_BYTES};
use meshbed_sim::{Scenario, Sim, SimReport};
use std::path::{Path, PathBuf};

/// A short ATP transfer over two hops of a 200 m 802.11a chain; Rayleigh
/// fading so that some frames are lost and retried.
fn two_hop_atp(fading: &str) -> Scenario {
    Scenario::from_toml(&format!(
        r#"
seed = 3
duration_s = 3.0
[radio]
standard = "802.11a"
data_rate_kbps = 24000
[radio.fading]
model = "{fading}"
[topology]
kind = "chain"
nodes = 3
spacing_m = 200.0
[routing]
kind = "shortest-path"
[[flows]]
src = 0
dst = 2
protocol = "atp-default"
bytes = 30000
packet_bytes = 1000
start_s = 0.0
"#
    ))
    .expect("a valid scenario")
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("meshbed-capture-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// One record of a capture, its radiotap fields and its 802.11 frame.
#[derive(Debug)]
struct Record {
    ts_us: u64,
    tsft_us: u64,
    bad_fcs: bool,
    rate_500kbps: u8,
    /// Antenna signal (heard) or TX power (sent), by the present bit.
    heard: bool,
    mpdu: Vec<u8>,
}

impl Record {
    fn frame_control(&self) -> u8 {
        self.mpdu[0]
    }
    fn retry(&self) -> bool {
        self.mpdu[1] & 0x08 != 0
    }
    fn ra(&self) -> &[u8] {
        &self.mpdu[4..10]
    }
    /// The UDP payload of a DATA frame: after 24 + 8 (LLC/SNAP) + 20 (IPv4) + 8.
    fn udp_payload(&self) -> &[u8] {
        let end = self.mpdu.len() - 4;
        &self.mpdu[24 + 8 + 20 + 8..end]
    }
    /// The UDP destination port of a DATA frame carrying UDP (IPv4
    /// protocol 17); `None` for other frames.
    fn udp_dst_port(&self) -> Option<u16> {
        let ip = 24 + 8;
        let udp = ip + 20;
        (self.frame_control() == DATA && self.mpdu.len() >= udp + 8 && self.mpdu[ip + 9] == 17)
            .then(|| u16::from_be_bytes([self.mpdu[udp + 2], self.mpdu[udp + 3]]))
    }
}

/// Parses a classic pcap of radiotap frames, checking every header on the way.
fn read_pcap(path: &Path) -> Vec<Record> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(&b[0..4], &0xa1b2_c3d4u32.to_le_bytes(), "pcap magic");
    assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), 127, "LINKTYPE_IEEE802_11_RADIOTAP");
    let mut at = 24;
    let mut out = Vec::new();
    while at < b.len() {
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let ts_us = u64::from(u32_at(at)) * 1_000_000 + u64::from(u32_at(at + 4));
        let (caplen, len) = (u32_at(at + 8) as usize, u32_at(at + 12) as usize);
        assert_eq!(caplen, len, "records are never cut");
        let r = &b[at + 16..at + 16 + caplen];
        assert_eq!(r[0], 0, "radiotap version");
        assert_eq!(u16::from_le_bytes([r[2], r[3]]) as usize, RADIOTAP_BYTES);
        let present = u32::from_le_bytes(r[4..8].try_into().unwrap());
        assert_eq!(present & 0b1111, 0b1111, "TSFT, flags, rate, channel");
        let heard = present & (1 << 5) != 0;
        assert_ne!(heard, present & (1 << 10) != 0, "either antenna signal or TX power");
        let mpdu = r[RADIOTAP_BYTES..].to_vec();
        let fcs = u32::from_le_bytes(mpdu[mpdu.len() - 4..].try_into().unwrap());
        let bad_fcs = r[16] & 0x40 != 0;
        assert_eq!(r[16] & 0x10, 0x10, "FCS at end");
        assert_eq!(fcs == crc32fast::hash(&mpdu[..mpdu.len() - 4]), !bad_fcs, "the FCS agrees with the flag");
        assert_eq!(u16::from_le_bytes([r[18], r[19]]), 5180, "802.11a channel 36");
        out.push(Record {
            ts_us,
            tsft_us: u64::from_le_bytes(r[8..16].try_into().unwrap()),
            bad_fcs,
            rate_500kbps: r[17],
            heard,
            mpdu,
        });
        at += 16 + caplen;
    }
    out
}

const DATA: u8 = 0x08;
const ACK: u8 = 0xd4;

fn mac_of(node: u16) -> [u8; 6] {
    meshbed_sim::capture::node_mac(0, node.into())
}

fn capture(s: &Scenario, name: &str) -> (SimReport, PathBuf) {
    let dir = scratch_dir(name);
    let (report, counts) = Sim::new(s).unwrap().run_with_pcap_dir(&dir, &mut |_| {}).unwrap();
    assert_eq!(counts.sent.len(), 3);
    (report, dir)
}

#[test]
fn a_capture_holds_every_frame_the_mac_counted_and_does_not_change_the_run() {
    let s = two_hop_atp("rayleigh");
    let (report, dir) = capture(&s, "counts");
    let plain = meshbed_sim::run(&s).unwrap();
    assert_eq!(report.trace_hash, plain.trace_hash, "observing changes nothing");
    assert!(report.flows[0].completed(), "{:?}", report.flows[0]);
    let mut lost_total = 0;
    for node in 0..3u16 {
        let recs = read_pcap(&node_file(&dir, node.into()));
        let mac = &report.mac_per_node[node as usize];
        let me = mac_of(node);
        assert!(recs.windows(2).all(|w| w[0].ts_us <= w[1].ts_us), "node {node}: time order");
        assert!(recs.iter().all(|r| r.ts_us == r.tsft_us), "timestamps are the TSFT (first bit)");
        assert!(recs.iter().all(|r| r.rate_500kbps == 48), "24 Mbit/s everywhere (ACKs at 24 too)");
        let sent: Vec<&Record> = recs.iter().filter(|r| !r.heard).collect();
        let heard: Vec<&Record> = recs.iter().filter(|r| r.heard).collect();
        let count = |rs: &[&Record], fc: u8| rs.iter().filter(|r| r.frame_control() == fc).count() as u64;
        assert_eq!(count(&sent, DATA), mac.data_tx_attempts, "node {node}: DATA sent");
        assert_eq!(count(&sent, ACK), mac.acks_sent, "node {node}: ACKs sent");
        let retried = sent.iter().filter(|r| r.frame_control() == DATA && r.retry()).count() as u64;
        assert_eq!(retried, mac.retransmissions, "node {node}: retry flags");
        assert!(sent.iter().all(|r| !r.bad_fcs), "a sender's own frames are good");
        let for_me = |r: &&&Record| r.ra() == me && r.frame_control() == DATA;
        let decoded_for_me = heard.iter().filter(for_me).filter(|r| !r.bad_fcs).count() as u64;
        assert_eq!(decoded_for_me, mac.delivered + mac.duplicates_dropped, "node {node}: DATA received");
        let lost_for_me = heard.iter().filter(for_me).filter(|r| r.bad_fcs).count() as u64;
        let lost_acks = heard.iter().filter(|r| r.ra() == me && r.frame_control() == ACK && r.bad_fcs).count();
        assert!(lost_for_me + lost_acks as u64 <= mac.rx_collision_or_corruption, "node {node}");
        lost_total += heard.iter().filter(|r| r.bad_fcs).count();
    }
    assert_eq!(lost_total as u64, report.mac_total.rx_collision_or_corruption, "every loss shows as a bad FCS");
    assert!(lost_total > 0, "Rayleigh fading at 200 m loses some frames");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn data_frames_carry_the_datagrams_the_relays_stamped() {
    let (report, dir) = capture(&two_hop_atp("none"), "payload");
    let recs = read_pcap(&node_file(&dir, 2));
    let data: Vec<&Record> = recs.iter().filter(|r| r.heard && r.frame_control() == DATA).collect();
    assert!(!data.is_empty());
    for r in &data {
        let repr = wire::parse_datagram(r.udp_payload()).expect("a meshbed header").0;
        assert_eq!(repr.hop_count, 2, "stamped by the source and the relay");
        assert_eq!(r.mpdu[24 + 8 + 9], 17, "UDP");
    }
    let first_data_bytes = data.iter().map(|r| wire::parse_datagram(r.udp_payload()).unwrap().0.payload_len).max();
    assert_eq!(first_data_bytes, Some(1000 - 28 - wire::HEADER_LEN), "the MSDU is the packet size");
    assert!(report.flows[0].completed());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs tshark with the dissector on `file` and returns one line of
/// tab-separated `fields` per meshbed packet.
fn tshark_fields(file: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    let lua = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/wireshark/meshbed.lua");
    let mut cmd = std::process::Command::new("tshark");
    cmd.arg("-r").arg(file).arg("-X").arg(format!("lua_script:{}", lua.display()));
    cmd.args(["-Y", "meshbed", "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=,"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    // Booleans print as 1/0 or True/False depending on tshark's version.
    let norm = |v: &str| match v {
        "True" => "1".to_string(),
        "False" => "0".to_string(),
        v => v.to_string(),
    };
    text.lines().map(|l| l.split('\t').map(norm).collect()).collect()
}

#[test]
#[ignore = "needs tshark (Debian package tshark)"]
fn tshark_opens_the_capture_and_the_dissector_decodes_every_field() {
    let s = two_hop_atp("rayleigh");
    let (_, dir) = capture(&s, "tshark");
    let file = node_file(&dir, 1);
    let recs = read_pcap(&file);
    // tshark sees as many frames as were written.
    let all = std::process::Command::new("tshark").arg("-r").arg(&file).output().expect("tshark runs");
    assert!(all.status.success());
    assert_eq!(String::from_utf8_lossy(&all.stdout).lines().count(), recs.len(), "frame count");
    let bad = std::process::Command::new("tshark")
        .arg("-r")
        .arg(&file)
        .args(["-Y", "radiotap.flags.badfcs == 1"])
        .output()
        .expect("tshark runs");
    assert_eq!(
        String::from_utf8_lossy(&bad.stdout).lines().count(),
        recs.iter().filter(|r| r.bad_fcs).count(),
        "bad-FCS frames"
    );
    // Every meshbed packet that was decoded, field by field, against the
    // wire parser: the expected values come from meshbed's own decoder.
    let fields = [
        "meshbed.protocol_id",
        "meshbed.version",
        "meshbed.control",
        "meshbed.n_h",
        "meshbed.sack_len",
        "meshbed.reserved",
        "meshbed.connection_id",
        "meshbed.seq",
        "meshbed.echo.transmission",
        "meshbed.echo.arrivals",
        "meshbed.ack",
        "meshbed.d_max_us",
        "meshbed.d_avg_us",
        "meshbed.d_s_us",
        "meshbed.sack_block.start",
        "meshbed.sack_block.end",
        "meshbed.data_len",
        "radiotap.flags.badfcs",
    ];
    let decoded = tshark_fields(&file, &fields);
    let expected: Vec<Vec<String>> = recs
        .iter()
        .filter(|r| r.frame_control() == DATA)
        .map(|r| {
            let p = wire::Packet::new_checked(r.udp_payload()).expect("a meshbed header");
            let repr = wire::Repr::parse(&p).unwrap();
            let feedback = repr.control.contains(wire::Control::SACK_OPT);
            let atp = repr.protocol == wire::ProtocolId::Atp;
            let echo = (feedback && atp).then(|| wire::FeedbackEcho::from_seq(repr.seq));
            let (d_max, d_avg) = if feedback {
                (String::new(), repr.d_max_us.to_string())
            } else {
                (repr.d_max_us.to_string(), String::new())
            };
            let join = |f: fn(&(u64, u64)) -> u64| {
                repr.sack_blocks.iter().map(|b| f(b).to_string()).collect::<Vec<_>>().join(",")
            };
            vec![
                (repr.protocol as u8).to_string(),
                "1".into(),
                format!("0x{:02x}", repr.control.0),
                repr.hop_count.to_string(),
                (repr.sack_blocks.len() * wire::SACK_BLOCK_LEN).to_string(),
                "0x0000".into(),
                format!("0x{:08x}", repr.connection_id),
                repr.seq.to_string(),
                // On ATP feedback the dissector shows its echo too.
                echo.map_or(String::new(), |e| e.transmission.to_string()),
                echo.map_or(String::new(), |e| e.arrivals.to_string()),
                repr.ack.to_string(),
                d_max,
                d_avg,
                repr.d_s_us.to_string(),
                join(|b| b.0),
                join(|b| b.1),
                repr.payload_len.to_string(),
                if r.bad_fcs { "1" } else { "0" }.into(),
            ]
        })
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(decoded.len(), expected.len(), "every DATA frame decodes as meshbed");
    for (got, want) in decoded.iter().zip(&expected) {
        assert_eq!(got, want, "fields {fields:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A known feedback packet with two SACK blocks, written through the same
/// capture path, decodes to exactly the values it was built with.
#[test]
#[ignore = "needs tshark (Debian package tshark)"]
fn the_dissector_decodes_a_known_feedback_packet_with_sack_blocks() {
    use meshbed_radio::{Addr, AirEvent, AirFrame, FrameKind, Standard};
    use meshbed_sim::capture::{emit_ipv4_header, Capture, ControlCarrier, IpEncoder, SimEncoder, AODV_UDP_PORT};
    let repr = wire::Repr {
        protocol: wire::ProtocolId::Atp,
        control: wire::Control(wire::Control::SACK_OPT | wire::Control::ACK),
        hop_count: 3,
        connection_id: 0x1234_5678,
        seq: 0,
        ack: 0x0102_0304_0506,
        d_max_us: 4321,
        d_s_us: 987,
        sack_blocks: vec![(9_000, 10_000), (12_000, 15_500)],
        payload_len: 0,
    };
    let mut datagram = vec![0; repr.buffer_len()];
    repr.emit(&mut datagram);
    let size = 28 + datagram.len() as u32;
    let pkt = meshbed_sim::Packet::data(2, 0, 0, 5, size, meshbed_core::Instant::ZERO, datagram);
    let frame = AirFrame {
        kind: FrameKind::Data,
        tx: 1,
        rx: Addr::Unicast(0),
        nav: meshbed_core::Duration::from_micros(44),
        seq: 77,
        retry: true,
        rate_kbps: 12_000,
        payload: Some(pkt),
    };
    let dir = scratch_dir("known");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("known.pcap");
    let out = std::fs::File::create(&file).unwrap();
    let encoder = SimEncoder { control: ControlCarrier::Udp(AODV_UDP_PORT) };
    let mut cap = Capture::new(vec![out], encoder, 0, Standard::A).unwrap();
    let at = meshbed_core::Instant::from_nanos(1_500_000_000);
    let airtime = meshbed_core::Duration::from_micros(100);
    cap.record(&AirEvent::Sent { node: 0, at, frame: frame.clone(), airtime, tx_power_dbm: 20.0 }).unwrap();
    cap.flush().unwrap();
    drop(cap);
    // The same datagram on another UDP port: only the heuristic finds it.
    struct OtherPort;
    impl IpEncoder<meshbed_sim::Packet> for OtherPort {
        fn ip_packet(&self, pkt: &meshbed_sim::Packet, out: &mut Vec<u8>) {
            let total = 28 + pkt.datagram.len() as u16;
            emit_ipv4_header([10, 0, 0, 3], [10, 0, 0, 1], 64, 17, 0, total, out);
            out.extend_from_slice(&[0x9c, 0x40, 0x9c, 0x41]); // 40000 → 40001
            out.extend_from_slice(&(total - 20).to_be_bytes());
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(&pkt.datagram);
        }
    }
    let other = dir.join("other-port.pcap");
    let mut cap = Capture::new(vec![std::fs::File::create(&other).unwrap()], OtherPort, 0, Standard::A).unwrap();
    cap.record(&AirEvent::Sent { node: 0, at, frame, airtime, tx_power_dbm: 20.0 }).unwrap();
    cap.flush().unwrap();
    drop(cap);
    let got = tshark_fields(
        &file,
        &[
            "meshbed.protocol_id",
            "meshbed.control.sack_opt",
            "meshbed.control.ack",
            "meshbed.control.syn",
            "meshbed.n_h",
            "meshbed.sack_len",
            "meshbed.connection_id",
            "meshbed.connection_id.protocol",
            "meshbed.ack",
            "meshbed.d_avg_us",
            "meshbed.d_s_us",
            "meshbed.sack_block.start",
            "meshbed.sack_block.end",
            "meshbed.data_len",
            "wlan.fc.retry",
            "wlan.seq",
            "wlan.duration",
            "radiotap.datarate",
            "ip.src",
            "ip.dst",
            "udp.dstport",
        ],
    );
    let want = [
        "1",
        "1",
        "1",
        "0",
        "3",
        "32",
        "0x12345678",
        "1",
        "1108152157446",
        "4321",
        "987",
        "9000,12000",
        "10000,15500",
        "0",
        "1",
        "77",
        "44",
        "12",
        "10.0.0.3",
        "10.0.0.1",
        "7411",
    ];
    assert_eq!(got, vec![want.map(String::from).to_vec()]);
    let heuristic = tshark_fields(&other, &["meshbed.sack_block.end", "meshbed.d_avg_us", "udp.dstport"]);
    assert_eq!(heuristic, vec![vec!["10000,15500".to_string(), "4321".into(), "40001".into()]]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// One short transfer of `protocol` over one hop of an 802.11a chain: MTL
/// over OLSR with ETX (its routing module, which it needs), the others over
/// shortest-path routes; the flow starts once OLSR has its neighbours.
fn one_transfer(protocol: Protocol) -> Scenario {
    let routing =
        if protocol == Protocol::Mtl { "kind = \"olsr\"\nmetric = \"etx\"" } else { "kind = \"shortest-path\"" };
    Scenario::from_toml(&format!(
        "seed = 5\nduration_s = 8.0\n[radio]\nstandard = \"802.11a\"\ndata_rate_kbps = 24000\n\
         [topology]\nkind = \"chain\"\nnodes = 2\nspacing_m = 100.0\n[routing]\n{routing}\n\
         [[flows]]\nsrc = 0\ndst = 1\nprotocol = \"{}\"\nbytes = 20000\nstart_s = 4.0\n",
        protocol.name()
    ))
    .expect("a valid scenario")
}

/// Captures [`one_transfer`] of `protocol`: the report and the receiving
/// node's capture file (it hears both directions).
fn capture_one_transfer(protocol: Protocol) -> (SimReport, PathBuf, PathBuf) {
    let dir = scratch_dir(&format!("protocol-{}", protocol.name()));
    let (report, _) = Sim::new(&one_transfer(protocol)).unwrap().run_with_pcap_dir(&dir, &mut |_| {}).unwrap();
    let file = node_file(&dir, 1);
    (report, dir, file)
}

/// The meshbed datagrams of a capture (good frames to UDP port 7411),
/// parsed by meshbed's own decoder, each with whether the node heard it
/// (rather than sent it).
fn meshbed_datagrams(recs: &[Record]) -> Vec<(bool, wire::Repr)> {
    recs.iter()
        .filter(|r| !r.bad_fcs && r.udp_dst_port() == Some(meshbed_sim::capture::MESHBED_UDP_PORT))
        .map(|r| (r.heard, wire::parse_datagram(r.udp_payload()).expect("a meshbed header").0))
        .collect()
}

#[test]
fn every_protocols_captured_connection_ids_name_that_protocol() {
    for protocol in Protocol::ALL {
        let (report, dir, file) = capture_one_transfer(protocol);
        assert!(report.flows[0].completed(), "{protocol}: {:?}", report.flows[0]);
        let datagrams = meshbed_datagrams(&read_pcap(&file));
        // Data heard from the sender, feedback (or ACKs) sent back: both
        // ends' datagrams, all on one connection.
        let heard = datagrams.iter().filter(|(heard, _)| *heard).count();
        assert!(heard > 0 && heard < datagrams.len(), "{protocol}: both directions captured");
        let datagrams: Vec<wire::Repr> = datagrams.into_iter().map(|(_, d)| d).collect();
        for d in &datagrams {
            assert_eq!(protocol_of(d.connection_id), Some(protocol), "{protocol}: id {:#010x}", d.connection_id);
            assert_eq!(d.protocol, wire_id(protocol), "{protocol}: the header's protocol id");
        }
        assert!(datagrams.iter().all(|d| d.connection_id == datagrams[0].connection_id), "{protocol}: one id");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The dissector's table of protocol codes (`connection_protocols` in
/// contrib/wireshark/meshbed.lua): code → name, as the file writes it.
fn lua_connection_protocols() -> std::collections::BTreeMap<u32, String> {
    let lua = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/wireshark/meshbed.lua");
    let text = std::fs::read_to_string(&lua).unwrap_or_else(|e| panic!("{}: {e}", lua.display()));
    let start = text.find("local connection_protocols = {").expect("the dissector's connection_protocols table");
    let body = &text[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').expect("the table's end")];
    body.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            // `[1] = "atp-default"`
            let (code, name) = entry.split_once('=').unwrap_or_else(|| panic!("an entry `[code] = \"name\"`: {entry}"));
            let code = code.trim().trim_start_matches('[').trim_end_matches(']');
            let name = name.trim().strip_prefix('"').and_then(|n| n.strip_suffix('"'));
            (code.parse().unwrap_or_else(|_| panic!("a code: {entry}")), name.expect("a quoted name").to_string())
        })
        .collect()
}

#[test]
fn the_dissectors_protocol_names_are_the_connection_id_codes() {
    let lua = lua_connection_protocols();
    let rust: std::collections::BTreeMap<u32, String> =
        Protocol::ALL.iter().map(|&p| (protocol_code(p), p.name().to_string())).collect();
    assert_eq!(lua, rust, "contrib/wireshark/meshbed.lua's connection_protocols against protocol_code/Protocol::name");
}

#[test]
#[ignore = "needs tshark (Debian package tshark)"]
fn tshark_names_each_captured_flows_protocol() {
    for protocol in Protocol::ALL {
        let (_, dir, file) = capture_one_transfer(protocol);
        let want = meshbed_datagrams(&read_pcap(&file));
        // A custom column shows the field's value string, the name the
        // dissector gives the id's top four bits.
        let lua = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/wireshark/meshbed.lua");
        let out = std::process::Command::new("tshark")
            .arg("-X")
            .arg(format!("lua_script:{}", lua.display()))
            .arg("-r")
            .arg(&file)
            .args(["-Y", "meshbed", "-o", "gui.column.format:\"Name\",\"%Cus:meshbed.connection_id.protocol\""])
            .args(["-T", "fields", "-e", "meshbed.connection_id", "-e", "_ws.col.Name"])
            .output()
            .expect("tshark runs");
        assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
        let got: Vec<(String, String)> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let (id, name) = l.split_once('\t').expect("two fields");
                (id.to_string(), name.to_string())
            })
            .collect();
        let want: Vec<(String, String)> =
            want.iter().map(|(_, d)| (format!("0x{:08x}", d.connection_id), protocol.name().to_string())).collect();
        assert!(!want.is_empty());
        assert_eq!(got, want, "{protocol}: tshark's protocol name per datagram");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
