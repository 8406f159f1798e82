//! Replays the `control_packets` fuzz target's seed corpus (and anything the
//! fuzzer added to it) through the same code the target runs, so the seeds
//! are checked on stable in every `cargo test` run: nothing may panic and
//! the target's oracles hold.

use std::path::PathBuf;

#[path = "../fuzz/fuzz_targets/drive.rs"]
mod drive;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/control_packets")
}

fn seed(name: &str) -> Vec<u8> {
    std::fs::read(corpus_dir().join(name)).unwrap()
}

#[test]
fn every_corpus_file_replays_with_its_oracles() {
    for path in meshbed_proto::harness::corpus_files(&corpus_dir(), 34) {
        let _ = drive::drive(&std::fs::read(&path).unwrap());
    }
}

/// The bare packet seeds parse, so the fuzzer starts from each format.
#[test]
fn the_packet_seeds_parse() {
    for name in ["aodv_rreq", "aodv_rrep_hello", "aodv_rerr", "dsr_rreq", "dsr_rrep", "dsr_rerr"] {
        assert!(drive::parse_all(&seed(name)) >= 1, "{name}");
    }
    for name in ["dsr_source_route", "olsr_hello", "olsr_tc_probe", "olsr_unknown"] {
        assert!(drive::parse_all(&seed(name)) >= 1, "{name}");
    }
}

/// The honest sessions find routes and deliver every data packet they
/// send, for every engine, so the fuzzer starts from converged networks.
#[test]
fn the_honest_seeds_deliver_their_data_for_every_engine() {
    for (kind, name) in drive::Kind::ALL.into_iter().zip(["aodv", "dsr", "olsr", "olsr-etx"]) {
        for session in ["honest", "variant", "mesh", "star"] {
            let outcome = drive::drive(&seed(&format!("{session}_{name}")));
            assert_eq!(outcome.kind, Some(kind), "{session}_{name}");
            assert!(outcome.sent >= 6, "{session}_{name}: {outcome:?}");
            assert!(outcome.delivered + 1 >= outcome.sent, "{session}_{name}: {outcome:?}");
        }
    }
}

/// Inputs the fuzzer found that once broke an oracle, each fixed at its
/// home; they replay with every oracle holding.
#[test]
fn the_regression_seeds_keep_the_oracles() {
    // A forged TC advertising a link cost below ETX 1: OLSR-ETX reported a
    // path with an ETX of 0.11 (olsr::tables, RoutingTable::compute).
    let outcome = drive::drive(&seed("regression_olsr_etx_below_1"));
    assert_eq!(outcome.kind, Some(drive::Kind::OlsrEtx));
}

/// Byte flips and truncations of the seeds (a cheap stand-in for the fuzzer
/// on stable).
#[test]
fn mutations_of_the_seeds_keep_the_oracles() {
    for name in ["forged_aodv", "forged_dsr", "forged_olsr-etx", "olsr_tc_probe"] {
        let bytes = seed(name);
        for flip in (0..bytes.len()).step_by(bytes.len() / 67 + 1) {
            let mut mutated = bytes.clone();
            mutated[flip] ^= 0x5a;
            let _ = drive::drive(&mutated);
            mutated.truncate(flip);
            let _ = drive::drive(&mutated);
        }
    }
}
