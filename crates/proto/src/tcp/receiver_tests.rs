//! The receiver's rules: cumulative and duplicate ACKs, when it finishes,
//! the SYN's answers and delayed ACKs (RFC 5681 §4.2). Helpers from
//! [`super::tests`].

use super::tests::*;
use super::*;
use crate::engine::{Engine, EngineEvent};
use crate::wire::Control;

#[test]
fn receiver_buffers_out_of_order_segments_and_acks_cumulatively() {
    let mut r = listening(config());
    r.handle_input(ms(10), &data_segment(2, false));
    r.handle_input(ms(10), &data_segment(1, false));
    assert_eq!(acks_sent(&mut r, ms(10)), vec![seg(0), seg(0)], "a duplicate ACK per out-of-order segment");
    assert_eq!(r.buffered_segments(), 2);
    assert!(events(&mut r).contains(&EngineEvent::Connected));
    r.handle_input(ms(20), &data_segment(0, false));
    assert_eq!(acks_sent(&mut r, ms(20)), vec![seg(3)]);
    let delivered = r.take_delivered();
    assert_eq!(delivered.len(), 3 * MSS as usize);
    assert!(delivered.chunks(MSS as usize).enumerate().all(|(k, c)| c.iter().all(|b| *b == k as u8)));
    // A duplicate is acknowledged again but not delivered twice.
    r.handle_input(ms(30), &data_segment(1, false));
    assert_eq!(acks_sent(&mut r, ms(30)), vec![seg(3)]);
    assert!(r.take_delivered().is_empty());
    assert_eq!(r.stats().dropped_datagrams, 1);
}

#[test]
fn receiver_finishes_when_the_fin_and_every_byte_are_in() {
    let mut r = listening(config());
    r.handle_input(ms(10), &data_segment(1, true)); // last segment, with FIN, early
    assert!(!r.is_closed());
    r.handle_input(ms(20), &data_segment(0, false));
    assert_eq!(acks_sent(&mut r, ms(20)), vec![seg(0), seg(2) + 1], "the FIN takes one sequence number");
    assert!(r.is_closed());
    assert!(events(&mut r).contains(&EngineEvent::Finished));
    let mut buf = [0u8; 1500];
    assert_eq!(r.read(&mut buf), 1500);
    assert_eq!(r.read(&mut buf), 500);
    assert_eq!(r.read(&mut buf), 0);
    // A retransmitted FIN (our ACK was lost) is acknowledged again.
    r.handle_input(ms(30), &data_segment(1, true));
    assert_eq!(acks_sent(&mut r, ms(30)), vec![seg(2) + 1]);
}

#[test]
fn receiver_answers_every_copy_of_the_syn() {
    let mut r = listening(config());
    r.handle_input(ms(1_000), &datagram(Control::SYN, 0, 0, &[]));
    let sent = drain(&mut r, ms(1_000));
    assert_eq!(sent.len(), 1);
    assert!(sent[0].0.control.contains(Control::SYN | Control::ACK));
}

#[test]
fn delayed_acks_ack_every_second_segment_or_after_the_timer() {
    let mut r = listening(TcpConfig { delayed_acks: true, ..config() });
    r.handle_input(ms(10), &data_segment(0, false));
    assert!(acks_sent(&mut r, ms(10)).is_empty());
    assert_eq!(r.poll_timeout(), Some(ms(210)));
    r.handle_input(ms(20), &data_segment(1, false));
    assert_eq!(acks_sent(&mut r, ms(20)), vec![seg(2)], "the second segment is ACKed at once");
    // A lone segment waits for the 200 ms timer.
    r.handle_input(ms(30), &data_segment(2, false));
    assert!(acks_sent(&mut r, ms(30)).is_empty());
    r.handle_timeout(ms(229));
    assert!(acks_sent(&mut r, ms(229)).is_empty());
    r.handle_timeout(ms(230));
    assert_eq!(acks_sent(&mut r, ms(230)), vec![seg(3)]);
    // Out of order: a duplicate ACK at once; the segment that fills the hole
    // is ACKed at once too (RFC 5681 §4.2).
    r.handle_input(ms(240), &data_segment(4, false));
    assert_eq!(acks_sent(&mut r, ms(240)), vec![seg(3)]);
    r.handle_input(ms(250), &data_segment(3, false));
    assert_eq!(acks_sent(&mut r, ms(250)), vec![seg(5)]);
}

#[test]
fn without_delayed_acks_every_segment_is_acked() {
    let mut r = listening(config());
    r.handle_input(ms(10), &data_segment(0, false));
    r.handle_input(ms(10), &data_segment(1, false));
    assert_eq!(acks_sent(&mut r, ms(10)), vec![seg(1), seg(2)]);
}
