//! Replays the seed corpora of the `experiment_toml` and `store_entry` fuzz
//! targets (and anything the fuzzer added to them) through the same code
//! the targets run, so the seeds are checked on stable in every `cargo
//! test` run: nothing may panic and the targets' oracles hold.
//!
//! The seeds start from what only the code can write (the built-in
//! experiments, a stored run), so a test here makes them, and writes them
//! into the corpora when asked: `MESHBED_WRITE_SEEDS=1 cargo test -p
//! meshbed-experiment --test fuzz_corpus the_seed_corpora`.

use std::path::PathBuf;

#[path = "../fuzz/fuzz_targets/experiment_drive.rs"]
mod experiment_drive;
#[path = "../fuzz/fuzz_targets/store_drive.rs"]
mod store_drive;

use store_drive::Verdict;

fn corpus_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target)
}

fn seed(target: &str, name: &str) -> Vec<u8> {
    std::fs::read(corpus_dir(target).join(name)).unwrap_or_else(|e| panic!("{target}/{name}: {e}"))
}

#[test]
fn every_experiment_corpus_file_replays_with_its_oracles() {
    for path in meshbed_proto::harness::corpus_files(&corpus_dir("experiment_toml"), 50) {
        let _ = experiment_drive::drive(&std::fs::read(&path).unwrap());
    }
}

#[test]
fn every_store_corpus_file_replays_with_its_oracles() {
    for path in meshbed_proto::harness::corpus_files(&corpus_dir("store_entry"), 20) {
        let _ = store_drive::drive(&std::fs::read(&path).unwrap());
    }
    store_drive::remove_scratch();
}

/// The built-in experiments are read and written back; each hostile seed
/// (the small experiment with one hostile value) is refused, naming it.
#[test]
fn the_experiment_seeds_say_what_they_test() {
    for name in RAW_BUILTINS {
        let outcome = experiment_drive::drive(&seed("experiment_toml", &format!("builtin_{name}")));
        assert!(outcome.accepted, "{name}: {outcome:?}");
    }
    assert!(experiment_drive::drive(&seed("experiment_toml", "small")).accepted);
    for (name, _, says) in HOSTILE {
        let outcome = experiment_drive::drive(&seed("experiment_toml", &format!("hostile_{name}")));
        let error = outcome.error.unwrap_or_else(|| panic!("{name}: accepted"));
        assert!(error.contains(says), "{name}: {error}");
    }
}

/// The stored-run seeds: the real run's file and content are hits, the
/// changed runs give hits and refusals, damaged files are refused.
#[test]
fn the_store_seeds_say_what_they_test() {
    let verdict = |name: &str| store_drive::drive(&seed("store_entry", name));
    // Made now, so always of this build's format (the checked-in seeds may
    // lag behind a change of the report; regenerate them then).
    let (file, value) = store_drive::stored_run();
    assert_eq!(store_drive::drive(&[&[0], &file[..]].concat()), Some(Verdict::Hit));
    assert_eq!(store_drive::drive(&[&[1], &store_drive::encode(value)[..]].concat()), Some(Verdict::Hit));
    for name in ["empty", "garbage", "truncated_file", "flipped_byte", "gzip", "snappy_header_only"] {
        assert_eq!(verdict(name), Some(Verdict::Corrupt), "{name}");
    }
    for name in ["cbor_huge_array", "cbor_huge_text", "cbor_deep_nesting", "cbor_empty_map", "wrong_seed"] {
        assert_eq!(verdict(name), Some(Verdict::Corrupt), "{name}");
    }
    for name in ["stale_format", "stale_key"] {
        assert_eq!(verdict(name), Some(Verdict::Stale), "{name}");
    }
    let changed: Vec<_> = (0..CHANGED_SEEDS).map(|k| verdict(&format!("changed_{k}"))).collect();
    assert!(changed.contains(&Some(Verdict::Hit)) && changed.contains(&Some(Verdict::Corrupt)), "{changed:?}");
    store_drive::remove_scratch();
}

/// Byte flips of the stored run's content (a cheap stand-in for the fuzzer
/// on stable).
#[test]
fn mutations_of_the_seeds_keep_the_oracles() {
    let content = store_drive::encode(&store_drive::stored_run().1);
    for flip in (0..content.len()).step_by(content.len() / 97 + 1) {
        let mut mutated = content.clone();
        mutated[flip] ^= 0x5a;
        let _ = store_drive::drive(&[&[1], &mutated[..]].concat());
        let _ = store_drive::drive(&[&[1], &content[..flip]].concat());
    }
    store_drive::remove_scratch();
    let small = seed("experiment_toml", "small");
    for flip in (0..small.len()).step_by(small.len() / 41 + 1) {
        for byte in [b'0', b'-', b'"', b'[', b'\n'] {
            let mut mutated = small.clone();
            mutated[flip] = byte;
            let _ = experiment_drive::drive(&mutated);
        }
    }
}

// What the seeds are (made by `the_seed_corpora_are_made_from_what_the_code_writes`).

/// Built-in experiments whose text is a seed as it is.
const RAW_BUILTINS: [&str; 5] = ["testbed-a-single", "stack", "seed003-walk", "seed004-grid", "atp-paper-two-flows"];

/// A small experiment: a chain, one transfer, two axes.
const SMALL: &str = "duration_s = 5.0\n\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n\n\
[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"atp-default\"\nbytes = 10000\n\n\
[experiment]\nname = \"fuzz\"\nrepetitions = 2\nx_axis = \"hops\"\n\n\
[[experiment.sweep]]\nkey = \"hops\"\nvalues = [1, 2]\n\n\
[[experiment.sweep]]\nkey = \"protocol\"\nvalues = [\"atp-default\", \"tcp-newreno\"]\n";

/// (name, the change to SMALL, what the error says).
const HOSTILE: [(&str, (&str, &str), &str); 20] = [
    ("name_empty", ("name = \"fuzz\"", "name = \"\""), "experiment.name"),
    ("name_path", ("name = \"fuzz\"", "name = \"../../etc\""), "experiment.name"),
    ("repetitions_zero", ("repetitions = 2", "repetitions = 0"), "experiment.repetitions"),
    ("repetitions_huge", ("repetitions = 2", "repetitions = 10001"), "experiment.repetitions"),
    ("repetitions_negative", ("repetitions = 2", "repetitions = -1"), "repetitions"),
    ("repetitions_nan", ("repetitions = 2", "repetitions = nan"), "repetitions"),
    ("values_empty", ("values = [1, 2]", "values = []"), "experiment.sweep[0].values"),
    ("key_twice", ("key = \"protocol\"", "key = \"hops\""), "experiment.sweep[1].key"),
    ("x_axis_not_swept", ("x_axis = \"hops\"", "x_axis = \"nope\""), "experiment.x_axis"),
    ("window_nan", ("x_axis = \"hops\"", "x_axis = \"hops\"\nwindow_s = [nan, 1.0]"), "experiment.window_s"),
    ("window_backwards", ("x_axis = \"hops\"", "x_axis = \"hops\"\nwindow_s = [2.0, 1.0]"), "experiment.window_s"),
    ("window_huge", ("x_axis = \"hops\"", "x_axis = \"hops\"\nwindow_s = [0.0, 1e300]"), "experiment.window_s"),
    ("batches_one", ("x_axis = \"hops\"", "x_axis = \"hops\"\nbatch_means = { batches = 1 }"), "batch"),
    ("sweep_unknown_key", ("key = \"protocol\"", "key = \"radio.nope\""), "radio.nope"),
    ("sweep_missing_flow", ("key = \"protocol\"", "key = \"flows[9].start_s\""), "flows[9]"),
    ("hops_zero", ("values = [1, 2]", "values = [0, 2]"), "hops"),
    ("protocol_nan", ("\"tcp-newreno\"]", "\"nan\"]"), "protocol"),
    ("unknown_experiment_key", ("repetitions = 2", "repetitions = 2\nrepetition = 3"), "experiment.repetition"),
    ("unknown_base_key", ("spacing_m = 200.0", "spacing_m = 200.0\nspacingm = 1"), "topology.spacingm"),
    ("no_experiment", ("[experiment]", "[experimnt]"), "experiment"),
];

/// Generated-mode stored runs in the corpus.
const CHANGED_SEEDS: usize = 12;

/// Fixed pseudo-random bytes (xorshift), the same on every machine.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn experiment_seeds() -> Vec<(String, Vec<u8>)> {
    let text = |t: &str| [&[0u8][..], t.as_bytes()].concat();
    let mut seeds = vec![("small".to_string(), text(SMALL))];
    for name in RAW_BUILTINS {
        let e = meshbed_experiment::builtin::get(name).expect("a built-in");
        seeds.push((format!("builtin_{name}"), text(&e.to_toml())));
    }
    for (name, (old, new), _) in HOSTILE {
        assert!(SMALL.contains(old), "{old}");
        seeds.push((format!("hostile_{name}"), text(&SMALL.replacen(old, new, 1))));
    }
    seeds.push((
        "hostile_too_many_points".into(),
        text(
            &SMALL
                .replace("values = [1, 2]", &format!("values = {:?}", (1..=200).collect::<Vec<_>>()))
                .replace("repetitions = 2", "repetitions = 10000"),
        ),
    ));
    for base in 0..experiment_drive::bases().len() {
        let mode = 1 + 4 * base as u8;
        seeds.push((format!("generated_base{base}"), [&[mode][..], &noise(base as u64, 96)[..]].concat()));
    }
    seeds
}

fn store_seeds() -> Vec<(String, Vec<u8>)> {
    use ciborium::Value;
    let (file, value) = store_drive::stored_run();
    let content = store_drive::encode(value);
    let with_field = |field: &str, new: Value| {
        let Value::Map(mut entries) = value.clone() else { panic!("a stored run is a map") };
        for (k, v) in &mut entries {
            if k.as_text() == Some(field) {
                *v = new.clone();
            }
        }
        store_drive::encode(&Value::Map(entries))
    };
    let mut flipped = file.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    let deep = [vec![0x81u8; 2_000], vec![0x00]].concat();
    let mut seeds: Vec<(String, Vec<u8>)> = vec![
        ("valid_file".into(), [&[0][..], file].concat()),
        ("valid_content".into(), [&[1][..], &content[..]].concat()),
        ("empty".into(), vec![0]),
        ("garbage".into(), [&[0][..], &noise(99, 64)[..]].concat()),
        ("truncated_file".into(), [&[0][..], &file[..file.len() / 2]].concat()),
        ("flipped_byte".into(), [&[0][..], &flipped[..]].concat()),
        ("gzip".into(), vec![0, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0]),
        ("snappy_header_only".into(), [&[0u8][..], b"\xff\x06\x00\x00sNaPpY\x01\x00"].concat()),
        ("cbor_huge_array".into(), vec![1, 0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
        ("cbor_huge_text".into(), vec![1, 0x7b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, b'a']),
        ("cbor_deep_nesting".into(), [&[1][..], &deep[..]].concat()),
        ("cbor_empty_map".into(), vec![1, 0xa0]),
        ("wrong_seed".into(), [&[1][..], &with_field("seed", Value::Integer(8.into()))[..]].concat()),
        ("stale_format".into(), [&[1][..], &with_field("format", Value::Integer(1.into()))[..]].concat()),
        ("stale_key".into(), [&[1][..], &with_field("key", Value::Text("0".repeat(64)))[..]].concat()),
    ];
    for k in 0..CHANGED_SEEDS {
        seeds.push((format!("changed_{k}"), [&[2][..], &noise(1000 + k as u64, 48)[..]].concat()));
    }
    seeds
}

/// Makes both corpora's seeds and replays them through the targets: every
/// experiment seed parses or is refused, no store seed panics. They are
/// written into the checked-in corpora only with `MESHBED_WRITE_SEEDS=1`
/// (by hand, after a change of what they start from; see the file's doc),
/// never by an ordinary test run, which leaves the tree as it was.
#[test]
fn the_seed_corpora_are_made_from_what_the_code_writes() {
    let write = std::env::var_os("MESHBED_WRITE_SEEDS").is_some_and(|v| v == "1");
    for (target, seeds) in [("experiment_toml", experiment_seeds()), ("store_entry", store_seeds())] {
        assert!(!seeds.is_empty(), "{target}");
        for (name, bytes) in &seeds {
            match target {
                "experiment_toml" => {
                    let _ = experiment_drive::drive(bytes);
                }
                _ => {
                    let _ = store_drive::drive(bytes);
                }
            }
            if write {
                let dir = corpus_dir(target);
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join(name), bytes).unwrap();
            }
        }
    }
    store_drive::remove_scratch();
}
