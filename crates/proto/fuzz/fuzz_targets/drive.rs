//! What the `wire_decode` fuzz target does with one input; shared with
//! `tests/fuzz_corpus.rs`, which replays the seed corpus through it.
//!
//! 1. The whole input is one datagram: it goes through `wire::parse_datagram`,
//!    `Relay::stamp`, `AtpReceiver::accept` and into a fresh receiver and a
//!    fresh sender.
//! 2. The input is also read as a script for a sender/receiver pair (so the
//!    fuzzer can reach established, probing and finishing states): byte 0
//!    picks the preset, then each op is one byte `op` followed by a big-endian
//!    `u16` and, for inject ops, that many bytes:
//!    * `op % 4 == 0`: inject the bytes into the receiver;
//!    * `op % 4 == 1`: inject into the sender;
//!    * `op % 4 == 2`: advance time by `u16 · 100 us` and run due timers;
//!    * `op % 4 == 3`: stamp the bytes at a relay, then inject into the receiver.
//!
//!    After every op the two engines exchange what they want to send, through
//!    the relay, so a valid seed session plays out.
//!
//! Everything an engine emits must parse: that is the oracle besides "no panic".

#![allow(dead_code)]

use meshbed_core::{Duration, Instant};
use meshbed_proto::atp::{AtpConfig, AtpReceiver, AtpSender};
use meshbed_proto::relay::Relay;
use meshbed_proto::wire;
use meshbed_proto::Engine;

/// The connection id the script's engines use (seed files use it too).
pub const CONN: u32 = 0x0102_0304;

fn config_for(selector: u8) -> AtpConfig {
    let mut config = match selector % 3 {
        0 => AtpConfig::default(),
        1 => AtpConfig::aggressive(),
        _ => AtpConfig::adaptive(),
    };
    config.trace = selector & 0x80 != 0;
    config
}

/// Moves what `from` wants to send into `to` (through `relay` when given),
/// checking every datagram parses.
fn exchange(now: Instant, from: &mut impl Engine, to: &mut impl Engine, mut relay: Option<&mut Relay>, buf: &mut [u8]) {
    for _ in 0..64 {
        let Some(t) = from.poll_transmit(now, buf) else {
            break;
        };
        assert!(t.len <= buf.len());
        let datagram = &mut buf[..t.len];
        if let Err(e) = wire::parse_datagram(datagram) {
            panic!("an engine emitted a malformed datagram: {e}");
        }
        if let Some(relay) = relay.as_deref_mut() {
            relay.stamp(now, datagram).expect("an emitted datagram stamps");
            relay.on_tx_report(now, now, Some(now));
        }
        to.handle_input(now, datagram);
    }
    while from.poll_event().is_some() {}
}

fn run_timers(now: Instant, engine: &mut impl Engine) {
    if engine.poll_timeout().is_some_and(|t| t <= now) {
        engine.handle_timeout(now);
    }
}

/// Runs one input; returns how many bytes the script's receiver delivered.
pub fn drive(data: &[u8]) -> usize {
    let now = Instant::from_nanos(1_000_000);
    // 1. The input as one datagram.
    let _ = wire::parse_datagram(data);
    let mut copy = data.to_vec();
    let mut relay = Relay::new(AtpConfig::adaptive().relay_config());
    let _ = relay.stamp(now, &mut copy);
    let config = config_for(data.first().copied().unwrap_or(0));
    if let Some(mut r) = AtpReceiver::accept(config.clone(), now, data) {
        let mut buf = vec![0u8; 2048];
        while r.poll_transmit(now, &mut buf).is_some() {}
    }
    let mut r = AtpReceiver::new(config.clone(), CONN, now);
    r.handle_input(now, data);
    let mut s = AtpSender::new(config.clone(), CONN, vec![0xa5; 5_000], now);
    s.handle_input(now, data);
    let mut buf = vec![0u8; 2048];
    while s.poll_transmit(now, &mut buf).is_some() {}
    while r.poll_transmit(now, &mut buf).is_some() {}

    // 2. The input as a script.
    let Some((&selector, mut rest)) = data.split_first() else {
        return 0;
    };
    let config = config_for(selector);
    let mut now = Instant::ZERO;
    let mut sender = AtpSender::new(config.clone(), CONN, vec![0x3c; 20_000], now);
    let mut receiver = AtpReceiver::new(config.clone(), CONN, now);
    let mut relay = Relay::new(config.relay_config());
    let mut ops = 0;
    let mut delivered = 0;
    while rest.len() >= 3 && ops < 512 {
        ops += 1;
        let op = rest[0];
        let arg = usize::from(u16::from_be_bytes([rest[1], rest[2]]));
        rest = &rest[3..];
        match op % 4 {
            2 => {
                now += Duration::from_micros(arg as u64 * 100);
                run_timers(now, &mut sender);
                run_timers(now, &mut receiver);
            }
            kind => {
                let n = arg.min(rest.len());
                let mut bytes = rest[..n].to_vec();
                rest = &rest[n..];
                match kind {
                    0 => receiver.handle_input(now, &bytes),
                    1 => sender.handle_input(now, &bytes),
                    _ => {
                        let _ = relay.stamp(now, &mut bytes);
                        receiver.handle_input(now, &bytes);
                    }
                }
            }
        }
        exchange(now, &mut sender, &mut receiver, Some(&mut relay), &mut buf);
        exchange(now, &mut receiver, &mut sender, None, &mut buf);
        let mut out = [0u8; 64];
        delivered += receiver.read(&mut out);
    }
    delivered + receiver.take_delivered().len()
}
