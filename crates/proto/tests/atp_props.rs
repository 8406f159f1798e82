//! Property tests: over a lossy, reordering, duplicating toy channel, every ATP
//! preset delivers exactly the bytes sent, once, in order, and both ends
//! finish (STYLE.md "Tests": invariants as property tests).

use meshbed_core::{Duration, Instant};
use meshbed_proto::atp::{AtpConfig, AtpReceiver, AtpSender};
use meshbed_proto::harness::{Pair, ToyChannel};
use proptest::prelude::*;

fn preset(which: u8) -> AtpConfig {
    let mut config = match which % 3 {
        0 => AtpConfig::default(),
        1 => AtpConfig::aggressive(),
        _ => AtpConfig::adaptive(),
    };
    // At 30% loss per direction a SYN exchange fails half the time; a minute
    // of patience makes a give-up (a correct outcome, but not the property
    // under test) vanishingly unlikely.
    config.idle_timeout = Duration::from_secs(60);
    config.linger = Duration::from_secs(60);
    // Traces are not needed here and would only fill memory.
    config.trace = false;
    config
}

use meshbed_proto::harness::test_bytes as pattern;

fn run_transfer(
    which: u8,
    len: usize,
    loss: f64,
    jitter_ms: u64,
    duplicate: f64,
    seed: u64,
) -> Result<(), TestCaseError> {
    let config = preset(which);
    let data = pattern(len, seed);
    let now = Instant::ZERO;
    let sender = AtpSender::new(config.clone(), 7, data.clone(), now);
    let receiver = AtpReceiver::new(config, 7, now);
    let channel = ToyChannel { jitter: Duration::from_millis(jitter_ms), loss, duplicate, ..ToyChannel::default() };
    let mut pair = Pair::new(sender, receiver, channel, seed);
    let outcome = pair.transfer_exactly_once(&data, Instant::from_nanos(600_000_000_000), 2_000_000);
    prop_assert!(outcome.is_ok(), "{}", outcome.unwrap_err());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn every_preset_delivers_exactly_once_in_order(
        which in 0u8..3,
        len in 20_000usize..200_000,
        loss in 0.0f64..0.3,
        jitter_ms in 0u64..20,
        duplicate in 0.0f64..0.1,
        seed in any::<u64>(),
    ) {
        run_transfer(which, len, loss, jitter_ms, duplicate, seed)?;
    }
}

#[test]
fn each_preset_at_the_worst_corner() {
    for which in 0..3 {
        run_transfer(which, 150_000, 0.3, 19, 0.1, 0xa7a7 + u64::from(which)).unwrap();
    }
}

#[test]
fn empty_and_tiny_transfers_finish() {
    for which in 0..3 {
        for len in [0, 1, 1435, 1436, 1437] {
            run_transfer(which, len, 0.1, 5, 0.05, len as u64 + 11).unwrap();
        }
    }
}
