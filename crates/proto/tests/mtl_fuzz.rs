//! Robustness of the MTL engines (seed 004 §III.C) against bytes no
//! conforming peer sends: arbitrary datagrams, real datagrams with a byte
//! changed or cut short, and well-formed EGNs with wild numbers. Nothing may
//! panic and no deadline may go back (the pattern of `fuzz_corpus.rs`:
//! mutations of a real session).

use meshbed_core::{Duration, Instant};
use meshbed_proto::mtl::{MtlConfig, MtlReceiver, MtlSender};
use meshbed_proto::wire::{Control, ProtocolId, Repr};
use meshbed_proto::Engine;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Arbitrary bytes, and real datagrams with one byte changed, into both
    /// engines at every stage of a transfer: nothing panics and the
    /// deadline never goes back.
    #[test]
    fn malformed_datagrams_never_panic(
        junk in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..20),
        flips in proptest::collection::vec((any::<u16>(), any::<u8>(), any::<u8>()), 0..40),
    ) {
        let mut sender = MtlSender::new(MtlConfig::default(), 7, vec![5; 20_000], Instant::ZERO);
        let mut receiver = MtlReceiver::new(MtlConfig::default(), 7, Instant::ZERO);
        let mut buf = vec![0u8; 2048];
        let mut now = Instant::ZERO;
        for (k, (at, byte, kind)) in flips.iter().enumerate() {
            now += Duration::from_millis(3);
            let mut datagrams = Vec::new();
            while let Some(t) = sender.poll_transmit(now, &mut buf) {
                datagrams.push((true, buf[..t.len].to_vec()));
            }
            while let Some(t) = receiver.poll_transmit(now, &mut buf) {
                datagrams.push((false, buf[..t.len].to_vec()));
            }
            for (to_receiver, mut d) in datagrams {
                if !d.is_empty() && kind % 3 == 0 {
                    let i = usize::from(*at) % d.len();
                    d[i] ^= byte | 1;
                }
                if to_receiver { receiver.handle_input(now, &d) } else { sender.handle_input(now, &d) }
            }
            if let Some(j) = junk.get(k) {
                sender.handle_input(now, j);
                receiver.handle_input(now, j);
            }
            // A well-formed EGN with wild numbers, as a hostile peer sends.
            let wild = Repr {
                protocol: ProtocolId::Tcp,
                control: Control(Control::SACK_OPT | (kind & (Control::FIN | Control::SACK_REQ))),
                hop_count: 0,
                connection_id: 7,
                seq: u64::from(*at) << (kind % 48),
                ack: u64::from(*byte) << (kind % 56),
                d_max_us: 0,
                d_s_us: 0,
                sack_blocks: vec![(u64::from(*at), u64::from(*at) + 1 + u64::from(*byte))],
                payload_len: 0,
            };
            let mut w = vec![0u8; wild.buffer_len()];
            wild.emit(&mut w);
            sender.handle_input(now, &w);
            for engine in [&mut sender as &mut dyn Engine, &mut receiver as &mut dyn Engine] {
                while engine.poll_event().is_some() {}
                if let Some(t) = engine.poll_timeout() {
                    if t <= now {
                        engine.handle_timeout(now);
                    }
                }
            }
        }
    }
}

/// The datagrams of a clean 5-packet session, each side's in order.
fn clean_session() -> Vec<(bool, Vec<u8>)> {
    let c = MtlConfig { max_payload: 100, ..MtlConfig::default() };
    let mut sender = MtlSender::new(c.clone(), 7, vec![9; 450], Instant::ZERO);
    let mut receiver = MtlReceiver::new(c, 7, Instant::ZERO);
    let mut buf = vec![0u8; 2048];
    let mut log = Vec::new();
    let mut now = Instant::ZERO;
    for _ in 0..200 {
        while let Some(t) = sender.poll_transmit(now, &mut buf) {
            log.push((true, buf[..t.len].to_vec()));
            receiver.handle_input(now, &buf[..t.len]);
        }
        while let Some(t) = receiver.poll_transmit(now, &mut buf) {
            log.push((false, buf[..t.len].to_vec()));
            sender.handle_input(now, &buf[..t.len]);
        }
        let next = [sender.poll_timeout(), receiver.poll_timeout()].into_iter().flatten().min();
        let Some(next) = next else { break };
        now = now.max(next);
        sender.handle_timeout(now);
        receiver.handle_timeout(now);
        if sender.is_closed() {
            break;
        }
    }
    assert!(sender.is_closed(), "the clean session finishes");
    log
}

/// Every single-byte change and every truncation of every datagram of a
/// real session, into fresh engines that saw the session up to it.
#[test]
fn mutations_of_a_real_session_do_not_panic() {
    let log = clean_session();
    let mut buf = vec![0u8; 2048];
    for k in 0..log.len() {
        let (to_receiver, original) = &log[k];
        for at in 0..original.len().min(64) {
            for cut in [false, true] {
                let c = MtlConfig { max_payload: 100, ..MtlConfig::default() };
                let mut sender = MtlSender::new(c.clone(), 7, vec![9; 450], Instant::ZERO);
                let mut receiver = MtlReceiver::new(c, 7, Instant::ZERO);
                for (to_r, d) in &log[..k] {
                    if *to_r {
                        receiver.handle_input(Instant::ZERO, d)
                    } else {
                        sender.handle_input(Instant::ZERO, d)
                    }
                }
                let mut d = original.clone();
                if cut {
                    d.truncate(at)
                } else {
                    d[at] ^= 0x5a
                }
                let engine: &mut dyn Engine = if *to_receiver { &mut receiver } else { &mut sender };
                engine.handle_input(Instant::ZERO, &d);
                while engine.poll_transmit(Instant::ZERO, &mut buf).is_some() {}
                while engine.poll_event().is_some() {}
                if let Some(t) = engine.poll_timeout() {
                    engine.handle_timeout(t);
                    while engine.poll_transmit(t, &mut buf).is_some() {}
                    assert!(engine.poll_timeout().is_none_or(|u| u >= t), "a deadline went back");
                }
            }
        }
    }
}
