//! Property tests: over a lossy, reordering, duplicating toy channel, MTL
//! (seed 004 §III.C) delivers exactly the bytes sent, once, in order, and
//! both ends finish.

use meshbed_core::{Duration, Instant};
use meshbed_proto::harness::test_bytes as pattern;
use meshbed_proto::harness::{Pair, ToyChannel};
use meshbed_proto::mtl::{MtlConfig, MtlReceiver, MtlSender};
use meshbed_proto::{Engine, PathInfo};
use proptest::prelude::*;

fn config(send_buffer_bytes: u64) -> MtlConfig {
    MtlConfig {
        // At 30% loss per direction a give-up is a correct outcome but not
        // the property under test: a minute of patience makes it vanish.
        idle_timeout: Duration::from_secs(60),
        linger: Duration::from_secs(60),
        send_buffer_bytes,
        ..MtlConfig::default()
    }
}

fn run_transfer(
    len: usize,
    send_buffer_bytes: u64,
    hops: u32,
    loss: f64,
    jitter_ms: u64,
    duplicate: f64,
    seed: u64,
) -> Result<(), TestCaseError> {
    let data = pattern(len, seed);
    let now = Instant::ZERO;
    let mut sender = MtlSender::new(config(send_buffer_bytes), 7, data.clone(), now);
    // Half the cases run with a routing module's view of the path.
    if hops > 0 {
        sender.handle_path_info(now, PathInfo { hop_count: hops, max_link_loss: loss, link_rate_bps: 11_000_000 });
    }
    let receiver = MtlReceiver::new(config(send_buffer_bytes), 7, now);
    let channel = ToyChannel { jitter: Duration::from_millis(jitter_ms), loss, duplicate, ..ToyChannel::default() };
    let mut pair = Pair::new(sender, receiver, channel, seed);
    let outcome = pair.transfer_exactly_once(&data, Instant::from_nanos(600_000_000_000), 2_000_000);
    prop_assert!(outcome.is_ok(), "{}", outcome.unwrap_err());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn mtl_delivers_exactly_once_in_order(
        len in 20_000usize..200_000,
        // Down to a few packets, so that the full-buffer request runs often.
        send_buffer_bytes in prop_oneof![Just(200_000u64), 3_000u64..20_000],
        hops in 0u32..8,
        loss in 0.0f64..0.3,
        jitter_ms in 0u64..20,
        duplicate in 0.0f64..0.1,
        seed in any::<u64>(),
    ) {
        run_transfer(len, send_buffer_bytes, hops, loss, jitter_ms, duplicate, seed)?;
    }
}

#[test]
fn the_worst_corner_and_tiny_transfers() {
    run_transfer(150_000, 200_000, 6, 0.3, 19, 0.1, 0x3713).unwrap();
    run_transfer(150_000, 3_000, 3, 0.3, 19, 0.1, 0x3714).unwrap();
    for len in [0, 1, 1435, 1436, 1437] {
        run_transfer(len, 200_000, 0, 0.1, 5, 0.05, len as u64 + 11).unwrap();
    }
}
