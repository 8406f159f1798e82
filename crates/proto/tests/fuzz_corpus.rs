//! Replays the `wire_decode` fuzz target's seed corpus (and anything the
//! fuzzer added to it) through the same code the target runs, so the seeds are
//! checked on stable in every `cargo test` run: nothing may panic.

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
