//! Property tests of the TCP engines over the toy channel: whatever the loss,
//! reordering and duplication, the receiver delivers exactly the bytes sent,
//! once and in order, and both sides finish (STYLE.md "Tests").

use meshbed_core::{Duration, Instant};
use meshbed_proto::engine::{Engine, EngineEvent, RouteNotice};
use meshbed_proto::harness::{Pair, ToyChannel};
use meshbed_proto::tcp::{TcpConfig, TcpReceiver, TcpSender, TcpVariant};
use proptest::prelude::*;

/// Virtual time is free: at 30 % loss in each direction an RTO can back off
/// several times in a row, so give the transfer a day.
const VIRTUAL_TIME_LIMIT: Instant = Instant::from_nanos(86_400 * 1_000_000_000);
/// Guards against an engine whose deadline never advances.
const MAX_STEPS: u64 = 5_000_000;

fn case_count() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(32)
}

#[derive(Clone, Debug)]
struct Case {
    len: usize,
    loss: f64,
    delay_ms: u64,
    jitter_ms: u64,
    duplicate: f64,
    delayed_acks: bool,
    mss_bytes: usize,
    initial_cwnd_segments: u32,
    max_cwnd_segments: u32,
    /// RACK-TLP (RFC 8985) or RFC 6675's own loss detection, for the SACK
    /// senders; the others ignore it.
    rack_tlp: bool,
    /// PRR (RFC 6937) or RFC 6675's window in fast recovery, for
    /// `tcp-sack` and `tcp-cubic`; the others ignore it.
    prr: bool,
    seed: u64,
}

fn cases() -> impl Strategy<Value = Case> {
    let channel = (20_000usize..200_000, 0.0f64..0.3, 1u64..20, 0u64..30, 0.0f64..0.1);
    let endpoints = (any::<bool>(), 536usize..=1436, 1u32..=4, 4u32..=64, (any::<bool>(), any::<bool>()), any::<u64>());
    (channel, endpoints).prop_map(
        |(
            (len, loss, delay_ms, jitter_ms, duplicate),
            (delayed_acks, mss_bytes, initial_cwnd_segments, max_cwnd_segments, (rack_tlp, prr), seed),
        )| Case {
            len,
            loss,
            delay_ms,
            jitter_ms,
            duplicate,
            delayed_acks,
            mss_bytes,
            initial_cwnd_segments,
            max_cwnd_segments,
            rack_tlp,
            prr,
            seed,
        },
    )
}

/// A period during which the route may be down (the channel drops
/// everything) and routing may or may not say so (ELFN notices).
#[derive(Clone, Debug)]
struct Outage {
    start: Instant,
    end: Instant,
    route_down: bool,
    notify_failed: bool,
    notify_reestablished: bool,
}

/// Up to three outages of up to 30 s, apart from each other, in the first
/// minute or so. A notice without an outage (a stale one) is allowed, and so
/// is an outage nobody reports.
fn outages() -> impl Strategy<Value = Vec<Outage>> {
    let one = (0u64..20_000, 1u64..30_000, any::<bool>(), any::<bool>(), any::<bool>());
    prop::collection::vec(one, 0..=3).prop_map(|list| {
        let mut at_ms = 0;
        list.into_iter()
            .map(|(gap_ms, length_ms, route_down, notify_failed, notify_reestablished)| {
                let start_ms = at_ms + gap_ms;
                at_ms = start_ms + length_ms;
                Outage {
                    start: Instant::from_nanos(start_ms * 1_000_000),
                    end: Instant::from_nanos(at_ms * 1_000_000),
                    route_down,
                    notify_failed,
                    notify_reestablished,
                }
            })
            .collect()
    })
}

fn run_transfer(variant: TcpVariant, case: &Case) -> Result<(), TestCaseError> {
    run_transfer_across(variant, false, case, &[])
}

/// A transfer through `outages`, with TCP-ELFN on or off.
fn run_transfer_across(variant: TcpVariant, elfn: bool, case: &Case, outages: &[Outage]) -> Result<(), TestCaseError> {
    // A deterministic, non-repeating payload so that a misplaced, duplicated
    // or dropped byte cannot go unnoticed.
    let data: Vec<u8> = (0..case.len).map(|i| (i as u64).wrapping_mul(2_654_435_761).to_le_bytes()[2]).collect();
    let config = TcpConfig {
        delayed_acks: case.delayed_acks,
        mss_bytes: case.mss_bytes,
        initial_cwnd_segments: case.initial_cwnd_segments,
        max_cwnd_segments: case.max_cwnd_segments,
        // Long silences are expected here (backed-off RTOs at 30 % loss);
        // the idle timeout has its own boundary test.
        idle_timeout: Duration::from_secs(3_600),
        elfn,
        sack: variant.uses_sack(),
        timestamps: variant.uses_sack(),
        rack_tlp: case.rack_tlp,
        prr: case.prr,
        ..TcpConfig::default()
    };
    let conn = (case.seed >> 32) as u32;
    let sender = TcpSender::new(config.clone(), variant, conn, data.clone(), Instant::ZERO);
    let receiver = TcpReceiver::new(config, conn, Instant::ZERO);
    let channel = ToyChannel {
        delay: Duration::from_millis(case.delay_ms),
        jitter: Duration::from_millis(case.jitter_ms),
        loss: case.loss,
        duplicate: case.duplicate,
        ..ToyChannel::default()
    };
    let mut pair = Pair::new(sender, receiver, channel, case.seed);
    for outage in outages {
        for (at, down) in [(outage.start, true), (outage.end, false)] {
            while !(pair.a.is_closed() && pair.b.is_closed()) && pair.step(at) {}
            pair.now = pair.now.max(at);
            if outage.route_down {
                pair.channel.loss = if down { 1.0 } else { case.loss };
            }
            let notice = match down {
                true if outage.notify_failed => Some(RouteNotice::Failed),
                false if outage.notify_reestablished => Some(RouteNotice::Reestablished),
                _ => None,
            };
            if let Some(notice) = notice {
                pair.a.handle_route_notice(pair.now, notice);
            }
        }
    }
    let closed = pair.run(VIRTUAL_TIME_LIMIT, MAX_STEPS);
    prop_assert!(closed, "not closed by {:?}: {case:?}", pair.now);
    prop_assert!(pair.events_a.contains(&EngineEvent::Finished), "sender did not finish: {case:?}");
    prop_assert!(pair.events_b.contains(&EngineEvent::Finished), "receiver did not finish: {case:?}");
    let failed = |e: &EngineEvent| matches!(e, EngineEvent::Failed(_));
    prop_assert!(!pair.events_a.iter().chain(&pair.events_b).any(failed));
    let delivered = pair.b.take_delivered();
    prop_assert_eq!(delivered.len(), data.len());
    prop_assert!(delivered == data, "delivered bytes differ: {case:?}");
    prop_assert_eq!(pair.a.stats().bytes_delivered, data.len() as u64);
    prop_assert_eq!(pair.b.stats().bytes_delivered, data.len() as u64);
    prop_assert_eq!(pair.a.stats().bytes_sent, data.len() as u64);
    if std::env::var_os("TCP_PROPS_VERBOSE").is_some() {
        eprintln!("{variant:?} {case:?} t={:?} sender={:?}", pair.now, pair.a.stats());
        eprintln!("  {:?}", pair.a.tcp_stats(pair.now));
    }
    Ok(())
}

proptest! {
    // 32 cases by default; PROPTEST_CASES raises it for a longer soak.
    #![proptest_config(ProptestConfig { cases: case_count(), ..ProptestConfig::default() })]

    /// Whatever the notices say and whether the route is really down, an
    /// ELFN sender neither deadlocks in standby nor corrupts the stream.
    #[test]
    fn tcp_newreno_elfn_delivers_every_byte_across_route_outages(case in cases(), outages in outages()) {
        run_transfer_across(TcpVariant::NewReno, true, &case, &outages)?;
    }

    #[test]
    fn tcp_tahoe_delivers_every_byte_once_in_order(case in cases()) {
        run_transfer(TcpVariant::Tahoe, &case)?;
    }

    #[test]
    fn tcp_reno_delivers_every_byte_once_in_order(case in cases()) {
        run_transfer(TcpVariant::Reno, &case)?;
    }

    #[test]
    fn tcp_newreno_delivers_every_byte_once_in_order(case in cases()) {
        run_transfer(TcpVariant::NewReno, &case)?;
    }

    #[test]
    fn tcp_cubic_delivers_every_byte_once_in_order(case in cases()) {
        run_transfer(TcpVariant::Cubic, &case)?;
    }

    #[test]
    fn tcp_sack_delivers_every_byte_once_in_order(case in cases()) {
        run_transfer(TcpVariant::Sack, &case)?;
    }

    /// BBR paces and keeps its window from delivery rates, not losses; its
    /// recovery still has to repair every hole (RACK-TLP is always on).
    #[test]
    fn tcp_bbr_delivers_every_byte_once_in_order(case in cases()) {
        run_transfer(TcpVariant::Bbr, &case)?;
    }

    /// Arbitrary bytes, including valid headers with arbitrary numbers, never
    /// panic either engine, in any state.
    #[test]
    fn tcp_engines_survive_arbitrary_datagrams(
        garbage in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..120), 1..40),
        fields in prop::collection::vec((any::<u8>(), any::<u64>(), any::<u64>(), 0usize..3000), 1..40),
        variant in prop::sample::select(TcpVariant::ALL.to_vec()),
    ) {
        let config = TcpConfig::default();
        let mut sender = TcpSender::new(config.clone(), variant, 7, vec![1; 10_000], Instant::ZERO);
        let mut receiver = TcpReceiver::new(config, 7, Instant::ZERO);
        let mut buf = vec![0u8; 2_000];
        let mut now = Instant::ZERO;
        let feed = |bytes: &[u8], now: Instant, s: &mut TcpSender, r: &mut TcpReceiver, buf: &mut [u8]| {
            s.handle_input(now, bytes);
            r.handle_input(now, bytes);
            while s.poll_transmit(now, buf).is_some() {}
            while r.poll_transmit(now, buf).is_some() {}
            while s.poll_event().is_some() {}
            while r.poll_event().is_some() {}
        };
        // Bring both through the handshake so the established paths run too.
        while let Some(t) = sender.poll_transmit(now, &mut buf) {
            let syn = buf[..t.len].to_vec();
            receiver.handle_input(now, &syn);
        }
        while let Some(t) = receiver.poll_transmit(now, &mut buf) {
            let synack = buf[..t.len].to_vec();
            sender.handle_input(now, &synack);
        }
        for g in &garbage {
            feed(g, now, &mut sender, &mut receiver, &mut buf);
        }
        for (control, seq, ack, len) in fields {
            now += Duration::from_millis(1);
            let mut bytes = vec![0u8; 36 + len];
            bytes[0] = 2; // TCP
            bytes[1] = 1; // version
            bytes[2] = control & 0x17;
            bytes[8..12].copy_from_slice(&7u32.to_be_bytes());
            bytes[12..20].copy_from_slice(&seq.to_be_bytes());
            bytes[20..28].copy_from_slice(&ack.to_be_bytes());
            feed(&bytes, now, &mut sender, &mut receiver, &mut buf);
            for e in [&mut sender as &mut dyn Engine, &mut receiver] {
                // The deadline always moves forward once handled.
                if let Some(t) = e.poll_timeout().filter(|t| *t <= now + Duration::from_secs(1)) {
                    e.handle_timeout(t);
                    prop_assert!(e.poll_timeout().into_iter().all(|next| next > t));
                }
            }
        }
    }
}
