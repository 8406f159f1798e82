//! Replays the `movement_files` fuzz target's seed corpus (and anything the
//! fuzzer added to it) through the same code the target runs, so the seeds
//! are checked on stable in every `cargo test` run: nothing may panic and
//! every accepted trajectory stays finite and within its bounds.

use std::path::PathBuf;

#[path = "../fuzz/fuzz_targets/drive.rs"]
mod drive;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/movement_files")
}

fn name_of(path: &std::path::Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn every_corpus_file_replays_with_its_oracles() {
    for path in meshbed_proto::harness::corpus_files(&corpus_dir(), 34) {
        let _ = drive::drive(&std::fs::read(&path).unwrap());
    }
}

/// The seeds say what the readers must do with them: `accepted_*` files
/// are read (and their trajectories evaluated), each `refused_*` file's
/// hostile value (the issue's `setdest 300 0 1e300` among them) is refused
/// at once, naming the file.
#[test]
fn accepted_seeds_are_read_and_hostile_ones_refused_at_once() {
    let mut counts = (0, 0);
    for path in meshbed_proto::harness::corpus_files(&corpus_dir(), 34) {
        let name = name_of(&path);
        let bytes = std::fs::read(&path).unwrap();
        let started = std::time::Instant::now();
        let verdict = drive::drive(&bytes);
        if name.starts_with("accepted_") {
            assert!(verdict.as_ref().is_ok_and(|&nodes| nodes >= 1), "{name}: {verdict:?}");
            counts.0 += 1;
        } else if name.starts_with("refused_") {
            let e = verdict.expect_err(&name);
            assert!(e.file.starts_with("fuzz."), "{name}: {e}");
            assert!(started.elapsed() < std::time::Duration::from_secs(1), "{name}: took {:?}", started.elapsed());
            counts.1 += 1;
        }
    }
    assert!(counts.0 >= 10 && counts.1 >= 20, "{counts:?}");
}

/// Byte flips and truncations of the seeds (a cheap stand-in for the fuzzer
/// on stable).
#[test]
fn mutations_of_the_seeds_keep_the_oracles() {
    for name in ["accepted_ns2_cut_short", "accepted_ns2_example", "accepted_bm_fast", "accepted_ns2_at_the_bounds"] {
        let bytes = std::fs::read(corpus_dir().join(name)).unwrap();
        for flip in 0..bytes.len() {
            for byte in [b'9', b'e', b'-', b'.', b' ', b'\n'] {
                let mut mutated = bytes.clone();
                mutated[flip] = byte;
                let _ = drive::drive(&mutated);
            }
            let _ = drive::drive(&bytes[..flip]);
        }
    }
}
