//! Unit tests pinning the ATP relay's rules to the numbers in the documents
//! (seed 002 §4, seed 001 §2–3, seed 000 §V.A): the delay it measures, what
//! it stamps on the datagrams it forwards, and the hop count.

mod common;

use meshbed_core::{Duration, Instant};
use meshbed_proto::atp::{AtpConfig, AtpReceiver, AtpSender};
use meshbed_proto::engine::TraceSample;
use meshbed_proto::relay::{Relay, RelayConfig};
use meshbed_proto::wire::{self, Control, ProtocolId};
use meshbed_proto::{Engine, EngineEvent};

use common::*;

// ---------------------------------------------------------------- relay

fn t(msec: u64) -> Instant {
    ms(msec)
}

#[test]
fn relay_ewma_uses_alpha_three_quarters() {
    let mut relay = Relay::new(RelayConfig::default());
    relay.on_tx_report(t(10), t(6), Some(t(10))); // first sample seeds: 4 ms
    assert_eq!(relay.current_delay(), Duration::from_millis(4));
    relay.on_tx_report(t(20), t(12), Some(t(20))); // 8 ms sample
                                                   // 0.75·4 + 0.25·8 = 5 ms (seed 001 eq. 3.1).
    assert_eq!(relay.current_delay(), Duration::from_millis(5));
    assert_eq!(relay.samples(), 2);
}

#[test]
fn relay_skips_batched_reports_without_a_completion_time() {
    let mut relay = Relay::new(RelayConfig::default());
    relay.on_tx_report(t(10), t(6), Some(t(10)));
    relay.on_tx_report(t(11), t(7), None);
    relay.on_tx_report(t(11), t(8), None);
    assert_eq!(relay.current_delay(), Duration::from_millis(4));
    assert_eq!((relay.samples(), relay.skipped_reports()), (1, 2));
    // The batched report still counts as channel activity.
    assert!(!relay.is_idle(t(12)));
}

#[test]
fn relay_stamps_the_maximum_and_counts_the_hop() {
    let mut relay = Relay::new(RelayConfig::default());
    relay.on_tx_report(t(10), t(5), Some(t(10))); // D = 5 ms, busy
    let mut pkt = data_packet(0, 0, 10, 3_000, 1_000);
    let out = relay.stamp(t(11), &mut pkt).unwrap();
    assert!(!out.idle && out.raised);
    assert_eq!((out.hop_count, out.d_max), (3, Duration::from_millis(5)));
    let (repr, _) = wire::parse_datagram(&pkt).unwrap();
    assert_eq!((repr.d_max_us, repr.hop_count, repr.d_s_us), (5_000, 3, 1_000));
    // A larger D_max upstream stays.
    let mut pkt = data_packet(0, 0, 10, 7_000, 1_000);
    let out = relay.stamp(t(12), &mut pkt).unwrap();
    assert!(!out.raised);
    assert_eq!(wire::parse_datagram(&pkt).unwrap().0.d_max_us, 7_000);
    // N_h saturates.
    let mut pkt = data_packet(0, 0, 10, 7_000, 1_000);
    pkt[3] = 255;
    assert_eq!(relay.stamp(t(12), &mut pkt).unwrap().hop_count, 255);
}

#[test]
fn relay_multiplies_by_eta_when_idle() {
    let mut relay = Relay::new(RelayConfig::default());
    relay.on_tx_report(t(10), t(6), Some(t(10))); // D = 4 ms
                                                  // 100 ms of quiet is still busy; 101 ms is idle.
    let mut pkt = data_packet(Control::SYN, 0, 0, 0, 0);
    assert_eq!(relay.stamp(t(110), &mut pkt).unwrap().d_max, Duration::from_millis(4));
    let mut pkt = data_packet(Control::SYN, 0, 0, 0, 0);
    let out = relay.stamp(t(211), &mut pkt).unwrap();
    assert!(out.idle);
    assert_eq!(out.d_max, Duration::from_millis(12), "η = 3");
    // Adaptive: η = 3 + 0.5·(h − 1); the packet arrives with N_h = 2, leaves with 3: η = 4.
    let mut relay = Relay::new(AtpConfig::adaptive().relay_config());
    relay.on_tx_report(t(10), t(6), Some(t(10)));
    let mut pkt = data_packet(Control::SYN, 0, 0, 0, 0);
    let out = relay.stamp(t(500), &mut pkt).unwrap();
    assert_eq!((out.hop_count, out.d_max), (3, Duration::from_millis(16)));
}

#[test]
fn relay_leaves_feedback_and_tcp_delays_alone_but_counts_hops() {
    let mut relay = Relay::new(RelayConfig::default());
    relay.on_tx_report(t(10), t(0), Some(t(10)));
    let mut fb = feedback(0, 0, 2_000, &[(10, 20)]);
    let out = relay.stamp(t(11), &mut fb).unwrap();
    assert_eq!((out.offered, out.hop_count), (None, 1));
    assert_eq!(wire::parse_datagram(&fb).unwrap().0.d_max_us, 2_000);
    let mut tcp = data_packet(Control::ACK, 0, 10, 0, 0);
    tcp[0] = ProtocolId::Tcp as u8;
    let out = relay.stamp(t(12), &mut tcp).unwrap();
    assert_eq!((out.protocol, out.offered, out.hop_count), (ProtocolId::Tcp, None, 3));
    assert_eq!(wire::parse_datagram(&tcp).unwrap().0.d_max_us, 0);
}

#[test]
fn relay_rejects_malformed_datagrams_untouched() {
    let mut relay = Relay::new(RelayConfig::default());
    let mut short = vec![1u8; 20];
    assert!(relay.stamp(t(1), &mut short).is_err());
    assert_eq!(short, vec![1u8; 20]);
    let mut bad_version = data_packet(0, 0, 0, 0, 0);
    bad_version[1] = 9;
    let copy = bad_version.clone();
    assert!(relay.stamp(t(1), &mut bad_version).is_err());
    assert_eq!(bad_version, copy);
}

#[test]
fn a_stamped_syn_sets_the_first_rate_end_to_end() {
    // Sender → relay → receiver: the relay's D (2 ms, busy channel) reaches the
    // sender through the receiver's immediate answer (seed 002 §4.3.1 Fig. 6).
    let config = AtpConfig::default();
    let mut relay = Relay::new(config.relay_config());
    relay.on_tx_report(ms(1), ms(0), Some(ms(2)));
    let mut s = AtpSender::new(config.clone(), CONN, vec![9; 3000], ms(2));
    let mut r = AtpReceiver::new(config, CONN, ms(2));
    let mut buf = vec![0u8; 2048];
    let t = s.poll_transmit(ms(2), &mut buf).unwrap();
    let stamped = relay.stamp(ms(2), &mut buf[..t.len]).unwrap();
    assert_eq!((stamped.hop_count, stamped.d_max), (1, Duration::from_millis(2)));
    r.handle_input(ms(3), &buf[..t.len]);
    let t = r.poll_transmit(ms(3), &mut buf).unwrap();
    s.handle_input(ms(4), &buf[..t.len]);
    assert!((s.rate_pps() - 500.0).abs() < 1e-9);
    assert!(events(&mut r).iter().any(|e| matches!(e,
        EngineEvent::Trace(TraceSample::DMax { d_max, .. }) if *d_max == Duration::from_millis(2))));
}
