//! Rate-paced TCP (seed 003 §6) end to end over the toy channel: whatever
//! the loss and V, a paced sender delivers every byte once and in order, and
//! its pacing deadlines never stall the pair (the harness would stop at its
//! step limit).

use meshbed_core::{Duration, Instant};
use meshbed_proto::engine::EngineEvent;
use meshbed_proto::harness::{test_bytes, Pair, ToyChannel};
use meshbed_proto::tcp::{TcpConfig, TcpReceiver, TcpSender, TcpVariant};

#[test]
fn paced_senders_deliver_every_byte_through_loss() {
    let data = test_bytes(150_000, 3);
    for variant in [TcpVariant::Reno, TcpVariant::NewReno] {
        for pacing_v in [0.5, 1.0, 2.0] {
            for (seed, loss) in [(1, 0.0), (2, 0.05), (3, 0.15)] {
                let what = format!("{variant:?} V = {pacing_v} loss {loss}");
                let config = TcpConfig {
                    pacing: true,
                    pacing_v,
                    initial_cwnd_segments: 4,
                    idle_timeout: Duration::from_secs(3_600),
                    ..TcpConfig::default()
                };
                let sender = TcpSender::new(config.clone(), variant, 9, data.clone(), Instant::ZERO);
                let receiver = TcpReceiver::new(config, 9, Instant::ZERO);
                let channel = ToyChannel { delay: Duration::from_millis(10), loss, ..ToyChannel::default() };
                let mut pair = Pair::new(sender, receiver, channel, seed);
                assert!(pair.run(Instant::from_nanos(86_400_000_000_000), 1_000_000), "{what}: not closed");
                assert!(pair.events_a.contains(&EngineEvent::Finished), "{what}");
                assert_eq!(pair.b.take_delivered(), data, "{what}");
            }
        }
    }
}
