//! RFC 7323's timestamps (RTTM) for `tcp-sack` and `tcp-cubic`: which TSval
//! the receiver echoes (§4.3), and the sender's samples from ACKs of
//! retransmitted data, which Karn's rule leaves without one otherwise.

use super::tests::{data_segment, datagram, drain, established, listening, ms, seg, with_cwnd};
use super::*;
use crate::engine::Engine;
use crate::wire::{parse_datagram, Control};

fn ts_config() -> TcpConfig {
    TcpConfig { timestamps: true, ..super::tests::config() }
}

/// Segment `k` stamped with TSval `tsval`.
fn stamped(k: u64, tsval: u32) -> Vec<u8> {
    let (mut repr, data) = parse_datagram(&data_segment(k, false)).map(|(r, d)| (r, d.to_vec())).unwrap();
    repr.d_max_us = tsval;
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf);
    buf[repr.header_len()..].copy_from_slice(&data);
    buf
}

fn echoes(r: &mut TcpReceiver, now: Instant) -> Vec<(u64, u32)> {
    drain(r, now).into_iter().map(|(repr, _)| (repr.ack, repr.d_s_us)).collect()
}

/// §4.3: in-order segments set TS.Recent; one beyond a hole does not (its
/// ACK echoes the last in-order segment's TSval); the retransmission that
/// fills the hole does.
#[test]
fn the_receiver_echoes_the_segment_at_its_left_edge() {
    let mut r = listening(ts_config());
    r.handle_input(ms(1), &stamped(0, 100));
    assert_eq!(echoes(&mut r, ms(1)), [(seg(1), 100)]);
    r.handle_input(ms(2), &stamped(2, 300));
    assert_eq!(echoes(&mut r, ms(2)), [(seg(1), 100)], "out of order: the old echo");
    r.handle_input(ms(3), &stamped(1, 500));
    assert_eq!(echoes(&mut r, ms(3)), [(seg(3), 500)], "the hole's retransmission is echoed");
    // Without timestamps nothing is echoed.
    let mut plain = listening(super::tests::config());
    plain.handle_input(ms(1), &stamped(0, 100));
    assert_eq!(echoes(&mut plain, ms(1)), [(seg(1), 0)]);
}

/// After a timeout the RTO is backed off (300 → 600 ms). Karn's rule
/// takes no sample from the ACK of the retransmission, so without
/// timestamps the backoff stays; with them the echo of the
/// retransmission's TSval, 40 ms old, is a sample and the RTO falls back.
#[test]
fn an_ack_of_retransmitted_data_is_timed_with_timestamps_only() {
    for timestamps in [false, true] {
        let config = TcpConfig { timestamps, ..with_cwnd(2) };
        let mut s = established(TcpVariant::Sack, config, 20_000);
        assert_eq!(drain(&mut s, ms(100)).len(), 2);
        let deadline = s.poll_timeout().unwrap();
        s.handle_timeout(deadline);
        let resent = drain(&mut s, deadline);
        assert_eq!(resent[0].0.seq, seg(0));
        assert_eq!(resent[0].0.d_max_us, if timestamps { tsval(deadline) } else { 0 });
        assert_eq!(s.rtt().rto(), Duration::from_millis(600), "backed off");
        let samples = s.tcp_stats(deadline).rtt_samples;
        let at = deadline + Duration::from_millis(40);
        let mut ack = datagram(Control::ACK, 1, seg(1), &[]);
        let (mut repr, _) = parse_datagram(&ack).unwrap();
        repr.d_s_us = resent[0].0.d_max_us;
        ack = vec![0u8; repr.buffer_len()];
        repr.emit(&mut ack);
        s.handle_input(at, &ack);
        let new_samples = s.tcp_stats(at).rtt_samples - samples;
        if timestamps {
            assert_eq!(new_samples, 1);
            assert!(s.rtt().rto() < Duration::from_millis(600), "{:?}", s.rtt().rto());
        } else {
            assert_eq!((new_samples, s.rtt().rto()), (0, Duration::from_millis(600)));
        }
    }
}
