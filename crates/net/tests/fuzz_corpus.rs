//! Replays the `recv_datagrams` fuzz target's seed corpus (and anything the
//! fuzzer added to it) through the same code the target runs, so the seeds
//! are checked on stable in every `cargo test` run: nothing may panic and
//! the target's oracles hold.

use std::path::PathBuf;

#[path = "../fuzz/fuzz_targets/drive.rs"]
mod drive;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/recv_datagrams")
}

fn seed(name: &str) -> Vec<u8> {
    std::fs::read(corpus_dir().join(name)).unwrap()
}

#[test]
fn every_corpus_file_replays() {
    for path in meshbed_proto::harness::corpus_files(&corpus_dir(), 12) {
        let _ = drive::drive(&std::fs::read(&path).unwrap());
    }
    drive::remove_scratch();
}

/// The session seeds really complete a transfer, so the fuzzer starts from
/// deep states (committed files, lingering, repeated FINs), not only from
/// the parser.
#[test]
fn the_session_seeds_complete_their_transfers() {
    for name in ["session_atp", "session_tcp", "template_transfer"] {
        assert_eq!(drive::drive(&seed(name)), 1, "{name}");
    }
    drive::remove_scratch();
}

/// Single-byte flips and truncations of the seeds (a cheap stand-in for the
/// fuzzer on stable).
#[test]
fn mutations_of_the_seeds_keep_the_oracles() {
    for name in ["session_atp", "syn_flood_with_headers", "template_transfer"] {
        let bytes = seed(name);
        for flip in (0..bytes.len()).step_by(bytes.len() / 97 + 1) {
            let mut mutated = bytes.clone();
            mutated[flip] ^= 0x5a;
            let _ = drive::drive(&mutated);
            mutated.truncate(flip);
            let _ = drive::drive(&mutated);
        }
    }
    drive::remove_scratch();
}
