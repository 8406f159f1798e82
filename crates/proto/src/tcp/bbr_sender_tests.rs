//! `tcp-bbr` in the sender: pacing at BBR's rate (hand-computed from
//! Linux's `tcp_update_skb_after_send`) and the whole controller over a
//! bottleneck link, where BBR must find the bandwidth and keep the queue
//! short.

use super::bbr::BbrState;
use super::tests::{ack, drain, established, ms, seg, seqs, with_cwnd, MSS};
use super::*;
use crate::engine::{Engine, EngineEvent};
use crate::wire::HEADER_LEN;
use meshbed_core::Instant;
use std::collections::{BTreeMap, VecDeque};

/// The handshake's 100 ms SRTT sets the initial pacing rate: 10 segments
/// per 100 ms at the high gain, 100,000 × 2.885 × 0.99 = 285,615 B/s. A
/// 1036-byte segment (1000 + the 36-byte header) then takes 3,627,260 ns.
/// The first ten segments leave unpaced (the tenth sets the next departure
/// 3,627,260 ns later); the ACK at 200 ms opens cwnd to 11 and frees two
/// segments: the first goes at once, having waited 96 ms beyond its
/// departure time, so the next gap is halved (1,813,630 ns); the second
/// waits for it, and the one after that gets the full gap.
#[test]
fn bbr_paces_at_its_rate_after_the_first_ten_segments() {
    let mut s = established(TcpVariant::Bbr, with_cwnd(10), 100_000);
    let bbr = s.bbr().expect("a BBR sender");
    assert_eq!(bbr.pacing_rate_bytes_per_s(), 285_615.0);
    assert_eq!(seqs(&drain(&mut s, ms(100))).len(), 10, "ten segments unpaced");
    assert_eq!(s.next_paced_send(), Some(ms(100) + Duration::from_nanos(3_627_260)));
    ack(&mut s, ms(200), seg(1));
    assert_eq!(s.cc_metrics().cwnd_segments, 11.0);
    assert_eq!(seqs(&drain(&mut s, ms(200))), [seg(10)]);
    let second = ms(200) + Duration::from_nanos(1_813_630);
    assert_eq!(s.poll_timeout(), Some(second), "the pacing timer");
    assert!(drain(&mut s, second - Duration::from_nanos(1)).is_empty());
    s.handle_timeout(second);
    assert_eq!(seqs(&drain(&mut s, second)), [seg(11)]);
    assert_eq!(s.next_paced_send(), Some(second + Duration::from_nanos(3_627_260)));
    assert_eq!((MSS as usize + HEADER_LEN), 1036);
}

#[test]
fn bbr_is_startup_until_the_pipe_is_full_and_counts_it_as_slow_start() {
    let mut s = established(TcpVariant::Bbr, with_cwnd(10), 100_000);
    assert_eq!(s.bbr().unwrap().state(), BbrState::Startup);
    assert!(s.tcp_stats(ms(100)).slow_start_entries >= 1);
    drain(&mut s, ms(100));
    ack(&mut s, ms(200), seg(1));
    assert_eq!(s.tcp_stats(ms(300)).slow_start_time, Duration::from_millis(200));
}

/// A one-way bottleneck: a FIFO served at `rate_bytes_per_s` holding at
/// most `buffer_packets`, then `delay`; ACKs come back after `delay` with
/// no queue. Returns what the run measured.
struct Bottleneck {
    rate_bytes_per_s: u64,
    delay: Duration,
    buffer_packets: usize,
}

#[derive(Debug, Default)]
struct Run {
    finished_at: Option<Instant>,
    drops: u64,
    /// The largest queue (packets) seen after `settle`.
    max_queue_after_settle: usize,
    probe_rtt_seen: bool,
}

impl Bottleneck {
    /// `variant` moves `data` across the link with SACK and timestamps
    /// (an initial window of 10 segments, at most `max_cwnd_segments`),
    /// for at most 120 s; the queue is watched from 5 s on.
    fn transfer(&self, variant: TcpVariant, max_cwnd_segments: u32, data: Vec<u8>) -> (Run, TcpSender, TcpReceiver) {
        let config = TcpConfig { sack: true, timestamps: true, max_cwnd_segments, ..with_cwnd(10) };
        let mut s = TcpSender::new(config.clone(), variant, super::tests::CONN, data, Instant::ZERO);
        let mut r = TcpReceiver::new(config, super::tests::CONN, Instant::ZERO);
        let run = self.run(&mut s, &mut r, ms(5_000), ms(120_000));
        (run, s, r)
    }

    fn run(&self, s: &mut TcpSender, r: &mut TcpReceiver, settle: Instant, limit: Instant) -> Run {
        let mut run = Run::default();
        let mut buf = vec![0u8; 2048];
        let mut now = Instant::ZERO;
        // Departure times of packets in the FIFO (the link's schedule).
        let mut departures: VecDeque<Instant> = VecDeque::new();
        let mut to_receiver: BTreeMap<(Instant, u64), Vec<u8>> = BTreeMap::new();
        let mut to_sender: BTreeMap<(Instant, u64), Vec<u8>> = BTreeMap::new();
        let mut serial = 0u64;
        while now < limit && run.finished_at.is_none() {
            while let Some(t) = s.poll_transmit(now, &mut buf) {
                while departures.front().is_some_and(|&d| d <= now) {
                    departures.pop_front();
                }
                if departures.len() >= self.buffer_packets {
                    run.drops += 1;
                    continue;
                }
                let start = departures.back().copied().unwrap_or(now).max(now);
                let done = start + Duration::from_nanos(t.len as u64 * 1_000_000_000 / self.rate_bytes_per_s);
                departures.push_back(done);
                if now >= settle {
                    run.max_queue_after_settle = run.max_queue_after_settle.max(departures.len());
                }
                serial += 1;
                to_receiver.insert((done + self.delay, serial), buf[..t.len].to_vec());
            }
            while let Some(t) = r.poll_transmit(now, &mut buf) {
                serial += 1;
                to_sender.insert((now + self.delay, serial), buf[..t.len].to_vec());
            }
            while let Some(e) = s.poll_event() {
                if e == EngineEvent::Finished {
                    run.finished_at = Some(now);
                }
            }
            while r.poll_event().is_some() {}
            run.probe_rtt_seen |= s.bbr().is_some_and(|b| b.state() == BbrState::ProbeRtt);
            let next = [
                s.poll_timeout(),
                r.poll_timeout(),
                to_receiver.keys().next().map(|k| k.0),
                to_sender.keys().next().map(|k| k.0),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next else { break };
            now = next.max(now);
            while let Some(entry) = to_receiver.first_entry().filter(|e| e.key().0 <= now) {
                r.handle_input(now, &entry.remove());
            }
            while let Some(entry) = to_sender.first_entry().filter(|e| e.key().0 <= now) {
                s.handle_input(now, &entry.remove());
            }
            for e in [s as &mut dyn Engine, r as &mut dyn Engine] {
                if e.poll_timeout().is_some_and(|t| t <= now) {
                    e.handle_timeout(now);
                }
            }
        }
        run
    }
}

/// 1 Mbit/s, 20 ms each way, a 100-packet buffer (a deep one: 20 BDPs).
/// BBR must measure the bottleneck (1000 of every 1036 bytes on the wire
/// are payload: 120,656 B/s of goodput at most), keep the queue to a few
/// BDPs where a loss-based TCP fills all 100 packets, lose nothing, and
/// refresh RTprop with ProbeRTT, since a deterministic link never shows
/// an RTT *below* the first one measured.
#[test]
fn bbr_finds_a_bottlenecks_bandwidth_and_keeps_its_queue_short() {
    let link = Bottleneck { rate_bytes_per_s: 125_000, delay: Duration::from_millis(20), buffer_packets: 100 };
    let len = 2_400_000;
    let data: Vec<u8> = (0..len).map(|i| (i * 31) as u8).collect();
    let (run, s, _) = link.transfer(TcpVariant::Bbr, 64, data.clone());
    let finished = run.finished_at.expect("the transfer finishes");
    let goodput = len as f64 / finished.as_secs_f64();
    let ceiling = 125_000.0 * 1000.0 / 1036.0;
    assert!(goodput > 0.9 * ceiling && goodput < ceiling, "goodput {goodput:.0} B/s against {ceiling:.0}");
    let bbr = s.bbr().unwrap();
    let btl_bw = bbr.btl_bw_bytes_per_s();
    assert!(btl_bw > 0.97 * ceiling && btl_bw < 1.03 * ceiling, "BtlBw {btl_bw:.0} against {ceiling:.0}");
    let startup_end = bbr.stats.startup_ended_at.expect("Startup ended");
    assert!(startup_end < ms(2_000), "Startup ended at {startup_end:?}");
    assert_eq!(run.drops, 0);
    // cwnd ≤ 2 BDP + quanta + aggregation: well under the buffer.
    assert!(run.max_queue_after_settle <= 20, "queue of {} packets", run.max_queue_after_settle);
    assert!(run.probe_rtt_seen && bbr.stats.probe_rtt_entries >= 1);

    // Boundary: CUBIC on the same link fills the buffer until it drops.
    let (cubic, _, _) = link.transfer(TcpVariant::Cubic, 200, data);
    assert!(cubic.max_queue_after_settle >= 90 && cubic.drops > 0, "{cubic:?}");
}

/// The same link with a 6-packet buffer (about one BDP): Startup's 2.885
/// overshoot loses packets; recovery repairs them and the transfer ends
/// with every byte, near the link's rate.
#[test]
fn bbr_recovers_its_startup_losses_on_a_shallow_buffer() {
    let link = Bottleneck { rate_bytes_per_s: 125_000, delay: Duration::from_millis(20), buffer_packets: 6 };
    let len = 1_000_000;
    let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
    let (run, _, mut r) = link.transfer(TcpVariant::Bbr, 64, data.clone());
    let finished = run.finished_at.expect("the transfer finishes");
    assert!(run.drops > 0, "a 6-packet buffer overflows in Startup");
    assert_eq!(r.take_delivered(), data);
    let goodput = len as f64 / finished.as_secs_f64();
    assert!(goodput > 0.75 * 120_656.0, "goodput {goodput:.0} B/s");
}
