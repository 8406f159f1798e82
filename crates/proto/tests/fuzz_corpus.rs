//! Replays the seed corpora of the `wire_decode` and `engines` fuzz targets
//! (and anything the fuzzer added to them) through the same code the
//! targets run, so the seeds are checked on stable in every `cargo test`
//! run: nothing may panic and the targets' oracles hold.

use std::path::PathBuf;

#[path = "../fuzz/fuzz_targets/drive.rs"]
mod drive;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/wire_decode")
}

#[test]
fn every_corpus_file_replays_without_panicking() {
    for path in meshbed_proto::harness::corpus_files(&corpus_dir(), 12) {
        let _ = drive::drive(&std::fs::read(&path).unwrap());
    }
}

/// The session seeds really play a transfer through the script driver, so
/// the fuzzer starts from deep states, not only from the parser.
#[test]
fn the_session_seeds_complete_their_transfer() {
    for name in ["session_default", "session_adaptive_injected"] {
        let bytes = std::fs::read(corpus_dir().join(name)).unwrap();
        assert_eq!(drive::drive(&bytes), 20_000, "{name}");
    }
}

/// Single-byte flips and truncations of the seed session (a cheap stand-in
/// for the fuzzer on stable).
#[test]
fn mutations_of_the_seed_session_do_not_panic() {
    let bytes = std::fs::read(corpus_dir().join("session_default")).unwrap();
    for flip in 0..bytes.len().min(256) {
        let mut mutated = bytes.clone();
        mutated[flip] ^= 0x5a;
        let _ = drive::drive(&mutated);
        mutated.truncate(flip);
        let _ = drive::drive(&mutated);
    }
}

// The `engines` target: every protocol's sender and receiver.

#[path = "../fuzz/fuzz_targets/engines_drive.rs"]
mod engines_drive;

fn engines_corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/engines")
}

#[test]
fn every_engines_corpus_file_replays_with_its_oracles() {
    for path in meshbed_proto::harness::corpus_files(&engines_corpus(), 70) {
        let _ = engines_drive::drive(&std::fs::read(&path).unwrap());
    }
}

/// Every protocol has honest seeds (clean, streaming with the commit
/// confirmation, small buffers and a slow reader, a lossy channel, route
/// notices) that deliver every byte exactly once, in order: the fuzzer
/// starts each protocol from a finished transfer, not from the parser.
#[test]
fn the_honest_engines_seeds_finish_their_transfer_for_every_protocol() {
    use meshbed_proto::Protocol;
    for protocol in Protocol::ALL {
        for kind in ["clean", "streaming_commit", "small_stalled", "lossy", "route_notices"] {
            let name = format!("{kind}_{protocol}");
            let outcome = engines_drive::drive(&std::fs::read(engines_corpus().join(&name)).unwrap());
            assert_eq!(outcome.protocol, Some(protocol), "{name}");
            assert!(!outcome.hostile && outcome.finished && !outcome.failed, "{name}: {outcome:?}");
            assert_eq!(outcome.delivered, engines_drive::DATA_LEN, "{name}");
        }
    }
}

/// Byte flips and truncations of a few engines seeds.
#[test]
fn mutations_of_the_engines_seeds_keep_the_oracles() {
    for name in ["lossy_tcp-newreno", "streaming_commit_atp-adaptive", "hostile_mtl"] {
        let bytes = std::fs::read(engines_corpus().join(name)).unwrap();
        for flip in (0..bytes.len()).step_by(bytes.len() / 61 + 1) {
            let mut mutated = bytes.clone();
            mutated[flip] ^= 0x5a;
            let _ = engines_drive::drive(&mutated);
            mutated.truncate(flip);
            let _ = engines_drive::drive(&mutated);
        }
    }
}
