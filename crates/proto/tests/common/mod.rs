//! What the ATP rule tests share: connection constants, hand-made
//! datagrams, and engines brought to a known state.

#![allow(dead_code)]

use meshbed_core::Instant;
use meshbed_proto::atp::{AtpConfig, AtpReceiver, AtpSender};
use meshbed_proto::harness::drain;
use meshbed_proto::wire::{Control, ProtocolId, Repr, HEADER_LEN};
use meshbed_proto::{Engine, EngineEvent};

pub const CONN: u32 = 0x00a7_0001;
pub const MSS: u64 = 1436;

pub fn ms(x: u64) -> Instant {
    Instant::from_nanos(x * 1_000_000)
}
pub fn us(x: u64) -> Instant {
    Instant::from_nanos(x * 1_000)
}

pub fn events(engine: &mut impl Engine) -> Vec<EngineEvent> {
    std::iter::from_fn(|| engine.poll_event()).collect()
}

pub fn feedback(control: u8, ack: u64, d_avg_us: u32, blocks: &[(u64, u64)]) -> Vec<u8> {
    let repr = Repr {
        protocol: ProtocolId::Atp,
        control: Control(Control::SACK_OPT | Control::ACK | control),
        hop_count: 0,
        connection_id: CONN,
        seq: 0,
        ack,
        d_max_us: d_avg_us,
        d_s_us: 0,
        sack_blocks: blocks.to_vec(),
        payload_len: 0,
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf);
    buf
}

/// Feedback whose receiver counts `arrivals` data packets received (its
/// [`FeedbackEcho`](meshbed_proto::wire::FeedbackEcho)), the newest having
/// arrived as the feedback left.
pub fn counted_feedback(control: u8, ack: u64, d_avg_us: u32, blocks: &[(u64, u64)], arrivals: u32) -> Vec<u8> {
    let mut buf = feedback(control, ack, d_avg_us, blocks);
    let repr = Repr::parse(&meshbed_proto::wire::Packet::new_checked(&buf[..]).unwrap()).unwrap();
    let seq = meshbed_proto::wire::FeedbackEcho { transmission: 0, arrivals }.to_seq();
    Repr { seq, ..repr }.emit(&mut buf);
    buf
}

pub fn data_packet(control: u8, seq: u64, len: usize, d_max_us: u32, d_s_us: u32) -> Vec<u8> {
    let repr = Repr {
        protocol: ProtocolId::Atp,
        control: Control(control),
        hop_count: 2,
        connection_id: CONN,
        seq,
        ack: 0,
        d_max_us,
        d_s_us,
        sack_blocks: vec![],
        payload_len: len,
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf);
    for (i, b) in buf[HEADER_LEN..].iter_mut().enumerate() {
        *b = (seq as usize + i) as u8;
    }
    buf
}

/// A default-preset sender connected at t = 10 ms with D = 10 ms (S = 100
/// packets/s); its SYN went out at t = 0, so the quick-start RTT is 10 ms.
pub fn connected_sender(config: AtpConfig, len: usize) -> AtpSender {
    let mut s = AtpSender::new(config, CONN, vec![0x5a; len], Instant::ZERO);
    drain(&mut s, Instant::ZERO);
    s.handle_input(ms(10), &feedback(Control::SYN, 0, 10_000, &[]));
    events(&mut s);
    s
}

pub fn established_receiver(config: AtpConfig) -> AtpReceiver {
    let mut r = AtpReceiver::new(config, CONN, Instant::ZERO);
    r.handle_input(Instant::ZERO, &data_packet(Control::SYN | Control::SACK_REQ, 0, 0, 5_000, 0));
    drain(&mut r, Instant::ZERO);
    events(&mut r);
    r
}
