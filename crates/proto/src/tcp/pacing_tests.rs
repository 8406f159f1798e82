//! Rate-based pacing (seed 003 §6; [`TcpSender`]'s "Rate-based pacing"):
//! data segments leave SRTT / (V · cwnd) apart. The shared helpers set SRTT
//! to 100 ms (SYN at 0, SYN-ACK at 100 ms), so the gaps below are computed
//! by hand from that and the window.

use super::tests::{ack, cwnd, datagram, drain, established, events, ms, seg, seqs, with_cwnd, MSS};
use super::*;
use crate::connection::EngineConfig;
use crate::engine::Engine;
use crate::wire::Control;

fn paced(initial_cwnd_segments: u32, pacing_v: f64) -> TcpConfig {
    TcpConfig { pacing: true, pacing_v, ..with_cwnd(initial_cwnd_segments) }
}

/// Runs the sender on its own deadlines from `from` until `until`, as a
/// driver does (timeout, then transmit until nothing is left), and returns
/// when each data segment left and its sequence number. Every deadline
/// must lie after the one before it.
fn departures(s: &mut TcpSender, from: Instant, until: Instant) -> Vec<(Instant, u64)> {
    let mut out: Vec<_> = seqs(&drain(s, from)).into_iter().map(|q| (from, q)).collect();
    let mut last = from;
    while let Some(at) = s.poll_timeout().filter(|&at| at <= until) {
        assert!(at > last, "deadline {at} does not advance past {last}");
        last = at;
        s.handle_timeout(at);
        out.extend(seqs(&drain(s, at)).into_iter().map(|q| (at, q)));
    }
    out
}

fn gaps(sent: &[(Instant, u64)]) -> Vec<Duration> {
    sent.windows(2).map(|w| w[1].0.saturating_since(w[0].0)).collect()
}

#[test]
fn new_segments_leave_srtt_over_v_times_cwnd_apart() {
    // cwnd 4, SRTT 100 ms: V = 1 → 25 ms, V = 2 → 12.5 ms, V = 0.5 → 50 ms,
    // V = 3 → 100/12 ms = 8 333 333.3 ns, rounded to the nanosecond.
    for (v, gap_ns) in [(1.0, 25_000_000), (2.0, 12_500_000), (0.5, 50_000_000), (3.0, 8_333_333)] {
        let mut s = established(TcpVariant::Reno, paced(4, v), 20 * MSS as usize);
        assert_eq!(s.pacing_interval(), Some(Duration::from_nanos(gap_ns)), "V = {v}");
        let sent = departures(&mut s, ms(100), ms(399));
        assert_eq!(sent.iter().map(|&(_, q)| q).collect::<Vec<_>>(), vec![seg(0), seg(1), seg(2), seg(3)], "V = {v}");
        assert_eq!(sent[0].0, ms(100));
        assert!(gaps(&sent).iter().all(|&g| g == Duration::from_nanos(gap_ns)), "V = {v}: {sent:?}");
    }
}

#[test]
fn pacing_never_exceeds_the_window() {
    // Four segments fill cwnd 4; the fifth waits for an ACK however long
    // the pacing gap has been over, and then still keeps its gap.
    let mut s = established(TcpVariant::Reno, paced(4, 1.0), 20 * MSS as usize);
    let sent = departures(&mut s, ms(100), ms(399));
    assert_eq!(sent.len(), 4);
    assert_eq!(sent[3].0, ms(175));
    assert!(drain(&mut s, ms(300)).is_empty());
    // The ACK of segment 0 at 200 ms: SRTT (7·100 + 100)/8 = 100 ms,
    // slow start makes cwnd 5, so two segments may be in flight beyond
    // the three outstanding, 20 ms apart.
    ack(&mut s, ms(200), seg(1));
    assert_eq!(cwnd(&s), 5.0);
    assert_eq!(s.pacing_interval(), Some(Duration::from_millis(20)));
    let sent = departures(&mut s, ms(200), ms(299));
    assert_eq!(sent, vec![(ms(200), seg(4)), (ms(220), seg(5))]);
}

#[test]
fn unpaced_reno_bursts_where_paced_reno_spaces() {
    let mut plain = established(TcpVariant::Reno, with_cwnd(4), 20 * MSS as usize);
    assert_eq!(plain.pacing_interval(), None);
    assert_eq!(seqs(&drain(&mut plain, ms(100))), vec![seg(0), seg(1), seg(2), seg(3)]);
    let mut paced = established(TcpVariant::Reno, paced(4, 1.0), 20 * MSS as usize);
    assert_eq!(seqs(&drain(&mut paced, ms(100))), vec![seg(0)]);
    assert_eq!(paced.poll_timeout(), Some(ms(125)));
}

#[test]
fn nothing_is_paced_before_the_first_rtt_sample() {
    // The SYN is lost and resent: its SYN-ACK gives no sample (Karn), so
    // there is no rate to pace at and the window leaves at once.
    let data = vec![7u8; 20 * MSS as usize];
    let mut s = TcpSender::new(paced(4, 1.0), TcpVariant::Reno, super::tests::CONN, data, ms(0));
    assert_eq!(drain(&mut s, ms(0)).len(), 1);
    s.handle_timeout(ms(1000));
    assert_eq!(drain(&mut s, ms(1000)).len(), 1);
    s.handle_input(ms(1100), &datagram(Control::SYN | Control::ACK, 0, 1, &[]));
    events(&mut s);
    assert_eq!(s.rtt().srtt(), None);
    assert_eq!(s.pacing_interval(), None);
    // The resent SYN reset cwnd to one segment (RFC 5681 §3.1).
    assert_eq!(seqs(&drain(&mut s, ms(1100))), vec![seg(0)]);
}

#[test]
fn the_gap_follows_cwnd_and_grows_after_a_loss() {
    // cwnd 8: 12.5 ms apart. Segment 0 is lost; three dupacks halve the
    // window (ssthresh 4) and fast-retransmit at once, unpaced.
    let mut s = established(TcpVariant::Reno, paced(8, 1.0), 40 * MSS as usize);
    let sent = departures(&mut s, ms(100), ms(199));
    assert_eq!(sent.len(), 8);
    assert!(gaps(&sent).iter().all(|&g| g == Duration::from_micros(12_500)), "{sent:?}");
    let t = ms(200);
    for _ in 0..2 {
        ack(&mut s, t, seg(0));
    }
    assert!(drain(&mut s, t).is_empty());
    ack(&mut s, t, seg(0));
    assert_eq!(seqs(&drain(&mut s, t)), vec![seg(0)], "the fast retransmission is not held back");
    // The repair is acknowledged with everything: recovery ends, cwnd is
    // ssthresh = 4. Segment 0's timing was dropped when it was resent
    // (Karn), so SRTT is still 100 ms and the gap is now 25 ms, counted
    // from the retransmission's departure.
    ack(&mut s, ms(210), seg(8));
    assert_eq!(cwnd(&s), 4.0);
    assert_eq!(s.pacing_interval(), Some(Duration::from_millis(25)));
    let sent = departures(&mut s, ms(210), ms(299));
    assert_eq!(sent.first(), Some(&(ms(225), seg(8))));
    assert!(gaps(&sent).iter().all(|&g| g == Duration::from_millis(25)), "{sent:?}");
}

#[test]
fn paced_protocols_are_reno_and_newreno_with_pacing_on() {
    for (protocol, variant, pacing) in [
        (Protocol::TcpReno, TcpVariant::Reno, false),
        (Protocol::TcpRenoPaced, TcpVariant::Reno, true),
        (Protocol::TcpNewReno, TcpVariant::NewReno, false),
        (Protocol::TcpNewRenoPaced, TcpVariant::NewReno, true),
    ] {
        // Whatever the settings say, the protocol name decides.
        let tcp = || TcpConfig { pacing: !pacing, ..TcpConfig::default() };
        let EngineConfig::Tcp { variant: v, config } = EngineConfig::new(protocol, |c| c, tcp) else {
            panic!("{protocol} is TCP");
        };
        assert_eq!((v, config.pacing), (variant, pacing), "{protocol}");
    }
    assert_eq!("tcp-reno-paced".parse::<Protocol>(), Ok(Protocol::TcpRenoPaced));
    assert_eq!("tcp-newreno-paced".parse::<Protocol>(), Ok(Protocol::TcpNewRenoPaced));
}

#[test]
fn an_unusable_v_falls_back_to_one() {
    for v in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let s = established(TcpVariant::Reno, paced(4, v), 10 * MSS as usize);
        assert_eq!(s.pacing_interval(), Some(Duration::from_millis(25)), "V = {v}");
    }
}
