//! Every driver of the relay stamping rule writes the same bytes.
//!
//! The rule (N_h + 1; D_max = max(D_max, D), η·D when idle; seed 002 §4.1,
//! seed 000 §V.A.3) lives once, in `meshbed_proto::relay::Stamper::stamp`.
//! What can still drift is around it: how each driver is configured (its η
//! rule, its idle timeout), where its delay comes from (the simulator's
//! average of tx reports, a delay file, a constant), what counts as channel
//! activity, and the emulator daemon's IPv4/UDP handling. Each case of the
//! table goes through every driver, each set up the way it is set up in
//! use, and all must return the same bytes, which must also match the
//! hand-worked D_max and N_h of the case.

use meshbed_core::{Duration, Instant};
use meshbed_emu::relay::{parse_eta, udp_checksum_ok, RelayOptions, StampResult, Stamper as IpStamper};
use meshbed_net::delay::{DelaySource, Stamper as NetStamper};
use meshbed_proto::atp::AtpConfig;
use meshbed_proto::connection::{connection_id, protocol_of};
use meshbed_proto::relay::{EtaRule, Relay, RelayConfig, Stamper};
use meshbed_proto::wire::{Control, Packet, ProtocolId, Repr, HEADER_LEN};
use meshbed_proto::Protocol;
use std::path::{Path, PathBuf};

/// The channel history before the datagram is stamped.
#[derive(Copy, Clone, Debug, PartialEq)]
enum History {
    /// The node has seen nothing: idle.
    Fresh,
    /// Its last activity was this long before the stamp.
    ActiveAgo(Duration),
}

struct Case {
    name: &'static str,
    datagram: Vec<u8>,
    /// The node's delay D.
    delay: Duration,
    /// The daemon's `--eta` (the simulator's and a sender's relay config
    /// follow from the same choice, see [`sim_config`]).
    eta: &'static str,
    history: History,
    /// Hand-worked D_max (µs) and N_h after stamping; `None`: untouched.
    expect: Option<(u32, u8)>,
}

fn atp(control: u8, hop_count: u8, d_max_us: u32, payload_len: usize) -> Vec<u8> {
    datagram(ProtocolId::Atp, control, hop_count, d_max_us, payload_len, &[])
}

/// An ATP data packet of a `meshbed send` connection running `protocol`
/// (its id names the protocol in its top four bits).
fn atp_of(protocol: Protocol, hop_count: u8) -> Vec<u8> {
    let d = atp(0, hop_count, 0, 100);
    let mut repr = Repr::parse(&Packet::new_checked(&d[..]).unwrap()).unwrap();
    repr.connection_id = connection_id(protocol, 0x5eed);
    let mut buf = vec![0xa5; repr.buffer_len()];
    repr.emit(&mut buf);
    buf
}

fn datagram(
    protocol: ProtocolId,
    control: u8,
    hop_count: u8,
    d_max_us: u32,
    payload_len: usize,
    sack_blocks: &[(u64, u64)],
) -> Vec<u8> {
    let repr = Repr {
        protocol,
        control: Control(control),
        hop_count,
        connection_id: 0x5eed,
        seq: 1436,
        ack: 0,
        d_max_us,
        d_s_us: 700,
        sack_blocks: sack_blocks.to_vec(),
        payload_len,
    };
    let mut buf = vec![0xa5; repr.buffer_len()];
    repr.emit(&mut buf);
    buf
}

const MS: Duration = Duration::from_millis(1);
/// 1234.567 µs: a delay whose scaling and rounding to µs are not trivial.
const D: Duration = Duration::from_nanos(1_234_567);

fn busy() -> History {
    History::ActiveAgo(MS * 50)
}
fn idle() -> History {
    History::ActiveAgo(MS * 101)
}

fn cases() -> Vec<Case> {
    let data = |hop, d_max| atp(0, hop, d_max, 100);
    let case = |name, datagram, delay, eta, history, expect| Case { name, datagram, delay, eta, history, expect };
    let mut truncated = data(0, 0);
    truncated.truncate(HEADER_LEN - 1);
    let mut bad_version = data(0, 0);
    bad_version[1] = 9;
    let tcp_ack = datagram(ProtocolId::Tcp, Control::ACK, 1, 0, 0, &[]);
    vec![
        // Busy: D, rounded to µs; η plays no part.
        case("data, busy, fixed", data(1, 0), D, "3", busy(), Some((1235, 2))),
        case("data, busy, adaptive", data(1, 0), D, "adaptive", busy(), Some((1235, 2))),
        case("data, D_max above D", data(3, 5_000), D, "3", busy(), Some((5_000, 4))),
        case("data, D_max just below D", data(3, 1_234), D, "3", busy(), Some((1235, 4))),
        // Idle: η·D = 3 × 1234.567 µs = 3703.701 µs.
        case("data, idle, fixed", data(1, 0), D, "3", idle(), Some((3704, 2))),
        case("data, fresh node, fixed", data(0, 0), D, "3", History::Fresh, Some((3704, 1))),
        case("data, idle, fixed 4.5", data(2, 0), D, "4.5", idle(), Some((5556, 3))),
        // Adaptive: η = 3 + 0.5·(h − 1) with h after this node's increment.
        case("data, idle, adaptive, h 0→1", data(0, 0), D, "adaptive", idle(), Some((3704, 1))),
        case("data, idle, adaptive, h 1→2", data(1, 0), D, "adaptive", idle(), Some((4321, 2))),
        case("data, idle, adaptive, h 2→3", data(2, 0), D, "adaptive", idle(), Some((4938, 3))),
        case("data, idle, adaptive, h 5→6", data(5, 0), D, "adaptive", idle(), Some((6790, 6))),
        case("data, idle, adaptive, h 254→255", data(254, 0), D, "adaptive", idle(), Some((160_494, 255))),
        case("data, idle, adaptive, h 255 saturates", data(255, 0), D, "adaptive", idle(), Some((160_494, 255))),
        // The idle boundary: exactly idle_after after the last activity is still busy.
        case("data, last activity idle_after ago", data(1, 0), D, "3", History::ActiveAgo(MS * 100), Some((1235, 2))),
        case(
            "data, last activity idle_after + 1 ns ago",
            data(1, 0),
            D,
            "3",
            History::ActiveAgo(MS * 100 + Duration::from_nanos(1)),
            Some((3704, 2)),
        ),
        case(
            "SYN probe, idle, adaptive",
            atp(Control::SYN | Control::SACK_REQ, 1, 0, 0),
            D,
            "adaptive",
            idle(),
            Some((4321, 2)),
        ),
        case("FIN, busy", atp(Control::FIN, 2, 0, 0), D, "3", busy(), Some((1235, 3))),
        case("zero delay, idle", data(1, 7), Duration::ZERO, "3", idle(), Some((7, 2))),
        // η·D past the 32-bit µs field clamps.
        case("huge delay clamps", data(1, 0), Duration::from_secs(3_000), "3", idle(), Some((u32::MAX, 2))),
        // Feedback carries D_avg back: only N_h changes.
        case(
            "ATP feedback, idle",
            datagram(ProtocolId::Atp, Control::SACK_OPT | Control::ACK, 0, 9_999, 0, &[(3000, 4000)]),
            D,
            "adaptive",
            idle(),
            Some((9_999, 1)),
        ),
        case("TCP ACK, idle", tcp_ack, D, "3", idle(), Some((0, 2))),
        // `auto`: the rule of the preset the connection id names.
        case("adaptive flow, idle, auto, h 2→3", atp_of(Protocol::AtpAdaptive, 2), D, "auto", idle(), Some((4938, 3))),
        case("default flow, idle, auto, h 2→3", atp_of(Protocol::AtpDefault, 2), D, "auto", idle(), Some((3704, 3))),
        case("aggressive flow, idle, auto", atp_of(Protocol::AtpAggressive, 4), D, "auto", idle(), Some((3704, 5))),
        case("id without a protocol, idle, auto", data(2, 0), D, "auto", idle(), Some((3704, 3))),
        case("TCP data, busy", datagram(ProtocolId::Tcp, Control::ACK, 4, 3, 500, &[]), D, "3", busy(), Some((3, 5))),
        // Not a meshbed datagram: nobody touches it.
        case("truncated header", truncated, D, "3", idle(), None),
        case("unknown version", bad_version, D, "3", idle(), None),
        case("garbage", b"GET / HTTP/1.1\r\n\r\n and some more bytes to pass 36".to_vec(), D, "3", busy(), None),
    ]
}

/// The relay configuration the simulator (and `meshbed send`) uses for the
/// ATP variant whose relays a daemon runs with `--eta eta`; with `auto`, the
/// variant the datagram's connection id names (default ATP if none).
fn sim_config(eta: &str, datagram: &[u8]) -> RelayConfig {
    match eta {
        "auto" => {
            let id = Packet::new_checked(datagram).map(|p| p.connection_id()).unwrap_or(0);
            protocol_of(id).and_then(AtpConfig::for_protocol).unwrap_or_default().relay_config()
        }
        "adaptive" => AtpConfig::adaptive().relay_config(),
        "3" => AtpConfig::default().relay_config(),
        fixed => RelayConfig { eta: EtaRule::Fixed(fixed.parse().unwrap()), ..AtpConfig::default().relay_config() },
    }
}

/// Late enough that the huge case's tx report can start before it.
const T0: Instant = Instant::from_nanos(10_000_000_000_000);

/// Something the node sends that is not ours: activity for every driver.
const PRIMING: &[u8] = b"not a meshbed datagram";

fn stamp_time(case: &Case) -> Instant {
    match case.history {
        History::Fresh => T0,
        History::ActiveAgo(ago) => T0 + ago,
    }
}

fn primed(case: &Case) -> bool {
    case.history != History::Fresh
}

/// The rule itself, with the delay as a plain value.
fn through_proto(case: &Case) -> Vec<u8> {
    let config = sim_config(case.eta, &case.datagram);
    let mut stamper = Stamper::new(config.eta, config.idle_after);
    if primed(case) {
        assert!(stamper.stamp(T0, &mut PRIMING.to_vec(), &mut case.delay.clone()).is_err());
    }
    let mut out = case.datagram.clone();
    let _ = stamper.stamp(stamp_time(case), &mut out, &mut case.delay.clone());
    out
}

/// The simulator's node: D from a MAC tx report (the first sample seeds the
/// average), or the prior delay on a node that has sent nothing.
fn through_sim(case: &Case) -> Vec<u8> {
    let config = sim_config(case.eta, &case.datagram);
    let mut relay = if primed(case) {
        let mut relay = Relay::new(config);
        relay.on_tx_report(T0, T0 - case.delay, Some(T0));
        relay
    } else {
        Relay::new(RelayConfig { prior_delay: case.delay, ..config })
    };
    assert_eq!(relay.current_delay(), case.delay, "{}", case.name);
    let mut out = case.datagram.clone();
    let _ = relay.stamp(stamp_time(case), &mut out);
    out
}

/// A sender's stamper (`meshbed send --delay fixed:` or `file:`).
fn through_net(case: &Case, source: DelaySource) -> Vec<u8> {
    let config = sim_config(case.eta, &case.datagram);
    let mut stamper = NetStamper::new(source, config.eta, config.idle_after);
    if primed(case) {
        assert!(stamper.stamp(T0, &mut PRIMING.to_vec()).is_err());
    }
    let mut out = case.datagram.clone();
    let _ = stamper.stamp(stamp_time(case), &mut out);
    assert_eq!(stamper.counters.file_errors, 0, "{}", case.name);
    out
}

/// An IPv4/UDP packet around `payload`, with a valid UDP checksum.
fn ip_udp(payload: &[u8]) -> Vec<u8> {
    let builder = etherparse::PacketBuilder::ipv4([10, 0, 1, 2], [10, 0, 1, 7], 63).udp(40_000, 7411);
    let mut p = Vec::with_capacity(builder.size(payload.len()));
    builder.write(&mut p, payload).unwrap();
    p
}

/// The emulator's daemon: its `--eta`, its default idle timeout, the node's
/// delay file, the datagram inside IPv4/UDP; the checksum must verify after.
fn through_emu(case: &Case, delay_file: &Path) -> Vec<u8> {
    let mut options = RelayOptions::new(delay_file.to_path_buf());
    options.eta = parse_eta(case.eta).unwrap();
    let mut stamper = IpStamper::new(options.eta, options.idle_after);
    let mut source =
        DelaySource::File { path: options.delay_file.clone(), value: Duration::ZERO, read_at: None, errors: 0 };
    if primed(case) {
        // A first fragment: UDP the daemon forwards but cannot read whole.
        let mut other = ip_udp(PRIMING);
        other[6] |= 0x20;
        assert_eq!(stamper.stamp_ip(T0, &mut other, &mut source), StampResult::NotOurs);
    }
    let mut packet = ip_udp(&case.datagram);
    let before = packet.clone();
    let result = stamper.stamp_ip(stamp_time(case), &mut packet, &mut source);
    assert!(udp_checksum_ok(&packet), "{}: the UDP checksum no longer verifies", case.name);
    assert_eq!(packet[..26], before[..26], "{}: IPv4 and UDP headers besides the checksum stay", case.name);
    assert_eq!(result == StampResult::NotOurs, case.expect.is_none(), "{}: {result:?}", case.name);
    let DelaySource::File { errors, .. } = source else { unreachable!() };
    assert_eq!(errors, 0, "{}", case.name);
    packet[28..].to_vec()
}

fn write_delay_file(path: &Path, delay: Duration) {
    // As the emulator exports it: microseconds, decimal; with the fraction
    // so that every driver sees the same D to the nanosecond.
    let ns = delay.as_nanos();
    std::fs::write(path, format!("{}.{:03}\n", ns / 1_000, ns % 1_000)).unwrap();
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("meshbed-stamping-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn every_driver_stamps_every_case_alike() {
    let dir = scratch();
    for (i, case) in cases().iter().enumerate() {
        let delay_file = dir.join(format!("delay_us.{i}"));
        write_delay_file(&delay_file, case.delay);
        let outs = [
            ("proto Stamper", through_proto(case)),
            ("simulator Relay", through_sim(case)),
            ("net fixed:", through_net(case, DelaySource::Fixed(case.delay))),
            (
                "net file:",
                through_net(
                    case,
                    DelaySource::File { path: delay_file.clone(), value: Duration::ZERO, read_at: None, errors: 0 },
                ),
            ),
            ("emu relay daemon", through_emu(case, &delay_file)),
        ];
        for (driver, out) in &outs[1..] {
            assert!(
                out == &outs[0].1,
                "{}: {driver} wrote {:02x?}, {} wrote {:02x?}",
                case.name,
                out,
                outs[0].0,
                outs[0].1
            );
        }
        let out = &outs[0].1;
        match case.expect {
            None => assert_eq!(out, &case.datagram, "{}: left untouched", case.name),
            Some((d_max_us, hop_count)) => {
                let packet = Packet::new_checked(&out[..]).unwrap();
                assert_eq!((packet.d_max_us(), packet.hop_count()), (d_max_us, hop_count), "{}", case.name);
                // Nothing else changes.
                let mut rest = out.clone();
                let mut want = case.datagram.clone();
                for b in [&mut rest, &mut want] {
                    let mut p = Packet::new_unchecked(&mut b[..]);
                    p.set_hop_count(0);
                    p.set_d_max_us(0);
                }
                assert_eq!(rest, want, "{}: only N_h and D_max change", case.name);
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The table reaches both sides of every choice it claims to: a case list
/// that lost its idle or adaptive cases would pass the test above vacuously.
#[test]
fn the_table_covers_idle_busy_fixed_adaptive_and_garbage() {
    let cases = cases();
    let has = |f: &dyn Fn(&Case) -> bool| cases.iter().any(f);
    assert!(has(&|c| c.history == idle() && c.eta == "adaptive" && c.expect.is_some_and(|(_, h)| h > 2)));
    assert!(has(&|c| c.history == History::Fresh));
    assert!(has(&|c| c.history == busy() && c.eta == "adaptive"));
    assert!(has(&|c| c.eta != "adaptive" && c.history == idle()));
    assert!(has(&|c| c.eta == "auto" && c.expect.is_some_and(|(d, _)| d == 4938)), "auto applies adaptive's rule");
    assert!(has(&|c| c.eta == "auto" && c.expect.is_some_and(|(d, _)| d == 3704)), "auto applies η = 3");
    assert!(has(&|c| c.expect.is_none()));
    assert!(has(&|c| c.datagram[0] == ProtocolId::Tcp as u8));
}
