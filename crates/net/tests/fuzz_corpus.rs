//! Replays the seed corpora of the `recv_datagrams` and `sealed_open` fuzz
//! targets (and anything the fuzzer added to them) through the same code
//! the targets run, so the seeds are checked on stable in every `cargo test`
//! run: nothing may panic and the targets' oracles hold.
//!
//! `sealed_open`'s seeds are scripts this file makes; it writes them into
//! the corpus when asked: `MESHBED_WRITE_SEEDS=1 cargo test -p meshbed-net
//! --test fuzz_corpus sealed`.

use std::path::PathBuf;

#[path = "../fuzz/fuzz_targets/drive.rs"]
mod drive;
#[path = "../fuzz/fuzz_targets/sealed_drive.rs"]
mod sealed_drive;

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

/// The session seeds with address validation on (selector bit 7): the
/// real sender's first SYN draws a Retry and its second carries the token,
/// as `meshbed send` does, so the fuzzer reaches the validated path's deep
/// states too. Written into the corpus when asked (`MESHBED_WRITE_SEEDS=1`).
#[test]
fn the_validated_session_seeds_are_the_sessions_with_bit_7_set() {
    for name in ["session_atp", "session_tcp"] {
        let mut bytes = seed(name);
        bytes[0] |= 0x80;
        let path = corpus_dir().join(format!("{name}_validated"));
        if std::env::var_os("MESHBED_WRITE_SEEDS").is_some() {
            std::fs::write(&path, &bytes).unwrap();
        }
        let stored = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (MESHBED_WRITE_SEEDS=1 writes it)", path.display()));
        assert!(stored == bytes, "{} differs from what this test makes", path.display());
    }
}

/// The session seeds really complete a transfer, so the fuzzer starts from
/// deep states (committed files, lingering, repeated FINs), not only from
/// the parser.
#[test]
fn the_session_seeds_complete_their_transfers() {
    for name in ["session_atp", "session_tcp", "template_transfer", "session_atp_validated", "session_tcp_validated"] {
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

fn sealed_corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/sealed_open")
}

/// `sealed_open` scripts (fuzz_targets/sealed_drive.rs): a protocol byte,
/// then ops of one byte and a big-endian u16.
fn op(script: &mut Vec<u8>, op: u8, arg: u16) {
    script.push(op);
    script.extend_from_slice(&arg.to_be_bytes());
}

/// The real sender's session alone, for each protocol; then the same
/// session with an attacker replaying, reflecting, flipping and forging
/// between its rounds.
fn sealed_seeds() -> Vec<(String, Vec<u8>)> {
    let mut seeds = Vec::new();
    for (k, protocol) in meshbed_proto::Protocol::ALL.iter().enumerate() {
        let mut session = vec![k as u8];
        for _ in 0..24 {
            op(&mut session, 2, 63);
        }
        seeds.push((format!("session_{protocol}"), session));
        let mut attacked = vec![k as u8];
        op(&mut attacked, 2, 3);
        for round in 0u16..12 {
            op(&mut attacked, 3, round * 7 + 0x100 * (round % 4)); // replays from every peer
            op(&mut attacked, 3, round | 0x80); // reflections
            op(&mut attacked, 4, round * 5); // a flipped byte
            attacked.extend_from_slice(&(round * 11).to_be_bytes());
            attacked.push(0x41);
            op(&mut attacked, 5, 9); // a plain SYN forged for the connection
            attacked.extend_from_slice(&[0x02, 0, 0, 0, 0, 1, 2, 3, 4]);
            op(&mut attacked, (1 + round % 3) as u8 * 6, 40); // garbage from a stranger
            attacked.extend((0..40u8).map(|b| b.wrapping_mul(round as u8 + 3)));
            op(&mut attacked, 2, 20);
            op(&mut attacked, 1, 50);
        }
        for _ in 0..16 {
            op(&mut attacked, 2, 63);
        }
        seeds.push((format!("attacked_{protocol}"), attacked));
    }
    seeds
}

#[test]
fn the_sealed_seeds_are_written_when_asked_and_are_in_the_corpus() {
    let dir = sealed_corpus_dir();
    let write = std::env::var_os("MESHBED_WRITE_SEEDS").is_some();
    for (name, bytes) in sealed_seeds() {
        if write {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(&name), &bytes).unwrap();
        }
        let stored = std::fs::read(dir.join(&name))
            .unwrap_or_else(|e| panic!("sealed_open seed {name}: {e} (MESHBED_WRITE_SEEDS=1 writes it)"));
        assert!(stored == bytes, "sealed_open seed {name} differs from what this test makes");
    }
}

/// The real sender's file is committed with the key, attacked or not: the
/// seeds reach deep states, and an attacker without the key cannot stop a
/// transfer it can only replay, reflect, flip and forge against.
#[test]
fn the_sealed_sessions_commit_their_file_attacked_or_not() {
    for (name, bytes) in sealed_seeds() {
        let outcome = sealed_drive::drive(&bytes);
        assert!(outcome.committed, "{name}: {outcome:?}");
        if name.starts_with("attacked") {
            // Each round's plain forged SYN and flipped datagram, at least.
            assert!(outcome.unauthenticated >= 12 * 2, "{name}: the forgeries were not all dropped: {outcome:?}");
        } else {
            assert_eq!(outcome.unauthenticated, 0, "{name}");
        }
    }
    sealed_drive::remove_scratch();
}

#[test]
fn every_sealed_corpus_file_replays() {
    for path in meshbed_proto::harness::corpus_files(&sealed_corpus_dir(), 12) {
        let _ = sealed_drive::drive(&std::fs::read(&path).unwrap());
    }
    sealed_drive::remove_scratch();
}

/// Single-byte flips and truncations of the attacked seeds (a cheap
/// stand-in for the fuzzer on stable).
#[test]
fn mutations_of_the_sealed_seeds_keep_the_oracles() {
    for (name, bytes) in
        sealed_seeds().into_iter().filter(|(n, _)| n.starts_with("attacked_atp") || n == "attacked_tcp-newreno")
    {
        for flip in (0..bytes.len()).step_by(bytes.len() / 31 + 1) {
            let mut mutated = bytes.clone();
            mutated[flip] ^= 0x5a;
            let _ = sealed_drive::drive(&mutated);
            mutated.truncate(flip);
            let _ = sealed_drive::drive(&mutated);
        }
        let _ = name;
    }
    sealed_drive::remove_scratch();
}
