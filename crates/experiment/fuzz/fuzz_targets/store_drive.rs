//! What the `store_entry` fuzz target does with one input; shared with
//! `tests/fuzz_corpus.rs`, which replays the seed corpus through it.
//!
//! The input becomes the file of one stored run in a scratch result store
//! (`meshbed_experiment::store`), which `Store::load` then reads for that
//! run's key. Byte 0 picks what the rest is (`b % 3`):
//! * 0: the file's bytes, as they are;
//! * 1: the decompressed content (CBOR), which the driver compresses in
//!   Snappy's framing format, so the fuzzer gets past the checksums;
//! * 2: changes, drawn with [`arbitrary::Unstructured`], to a real stored
//!   run (a small simulated scenario saved by `Store::save`): values
//!   replaced by hostile ones (NaN, huge and negative integers, long text,
//!   other types), entries removed, lists emptied.
//!
//! Oracles besides "no panic": a file that is there is never `Missing`; a
//! stale or corrupt entry says which file and why; an entry is a `Hit` only
//! if its report round-trips: saved again under the same key and loaded, it
//! is the same report (compared as CBOR, so that NaN compares).

#![allow(dead_code)]

use arbitrary::{Result, Unstructured};
use ciborium::Value;
use meshbed_experiment::store::{Lookup, RunKey, Store};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::OnceLock;

/// A scratch directory for this thread (the replay test runs seeds on
/// several threads of one process).
fn scratch() -> PathBuf {
    meshbed_proto::harness::scratch_dir("store-fuzz", false)
}

/// Removes this thread's scratch directory (the replay test, when done).
pub fn remove_scratch() {
    let _ = std::fs::remove_dir_all(scratch());
}

/// The run every input is stored as.
pub fn key() -> RunKey {
    RunKey {
        address: format!("ab{}", "0123456789abcdef".repeat(4))[..64].to_string(),
        key: "5eed".repeat(16),
        runner: "simulator".into(),
        seed: 7,
        scenario_toml: "duration_s = 0.5".into(),
    }
}

/// A small scenario with a transfer, a UDP flow and an echo flow.
const SCENARIO: &str = "seed = 7\nduration_s = 0.5\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n\
[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"atp-adaptive\"\nbytes = 20000\ntrace = true\n\
[[flows]]\nsrc = 1\ndst = 0\ntraffic = \"cbr\"\nrate_kbps = 100.0\n\
[[flows]]\nsrc = 2\ndst = 1\ntraffic = \"echo\"\n";

/// A real stored run's file (its report saved under [`key`]), and its
/// decompressed content as a CBOR value (made once).
pub fn stored_run() -> &'static (Vec<u8>, Value) {
    static RUN: OnceLock<(Vec<u8>, Value)> = OnceLock::new();
    RUN.get_or_init(|| {
        let scenario = meshbed_sim::Scenario::from_toml(SCENARIO).expect("the scenario reads");
        let report = meshbed_sim::run(&scenario).expect("the scenario runs");
        let dir = std::env::temp_dir().join(format!("meshbed-store-fuzz-base-{}", std::process::id()));
        let store = Store::open(&dir).expect("a scratch store");
        store.save(&key(), &report).expect("a run is kept");
        let file = std::fs::read(store.path(&key())).expect("the stored run");
        let _ = std::fs::remove_dir_all(&dir);
        let mut cbor = Vec::new();
        snap::read::FrameDecoder::new(&file[..]).read_to_end(&mut cbor).expect("it decompresses");
        let value = ciborium::from_reader(&cbor[..]).expect("it decodes");
        (file, value)
    })
}

/// `bytes` in Snappy's framing format.
pub fn compress(bytes: &[u8]) -> Vec<u8> {
    let mut w = snap::write::FrameEncoder::new(Vec::new());
    w.write_all(bytes).expect("in memory");
    w.into_inner().expect("in memory")
}

pub fn encode(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::into_writer(value, &mut out).expect("a value encodes");
    out
}

const HOSTILE_FLOATS: [f64; 7] = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 1e300, -1.0, 5e-324];

fn hostile(u: &mut Unstructured) -> Result<Value> {
    Ok(match u.int_in_range(0..=9u8)? {
        0 => Value::Integer((*u.choose(&[u64::MAX, u64::from(u32::MAX) + 1, 0])?).into()),
        1 => Value::Integer((*u.choose(&[i64::MIN, -1, i64::from(i32::MIN)])?).into()),
        2 => Value::Float(*u.choose(&HOSTILE_FLOATS)?),
        3 => Value::Text("x".repeat(*u.choose(&[0, 1, 100_000])?)),
        4 => Value::Text(u.arbitrary()?),
        5 => Value::Bytes(u.arbitrary()?),
        6 => Value::Bool(u.arbitrary()?),
        7 => Value::Null,
        8 => Value::Array(Vec::new()),
        _ => Value::Map(Vec::new()),
    })
}

/// A change somewhere in `value`: descend into map and array entries as
/// the bytes say, then replace, remove or empty what is there.
fn change(u: &mut Unstructured, value: &mut Value) -> Result<()> {
    let descend = u.ratio(3, 4)?;
    match value {
        Value::Map(entries) if descend && !entries.is_empty() => {
            let i = u.choose_index(entries.len())?;
            if u.ratio(1, 8)? {
                entries.remove(i);
                return Ok(());
            }
            change(u, &mut entries[i].1)
        }
        Value::Array(items) if descend && !items.is_empty() => {
            let i = u.choose_index(items.len())?;
            match u.int_in_range(0..=9u8)? {
                0 => {
                    items.remove(i);
                    Ok(())
                }
                1 => {
                    let copy = items[i].clone();
                    items.push(copy);
                    Ok(())
                }
                _ => change(u, &mut items[i]),
            }
        }
        Value::Tag(_, inner) if descend => change(u, inner),
        _ => {
            *value = if u.ratio(3, 4)? { hostile_like(u, value)? } else { hostile(u)? };
            Ok(())
        }
    }
}

/// A hostile value of the same kind as `old` (so that the run still
/// decodes, with values no simulation reports).
fn hostile_like(u: &mut Unstructured, old: &Value) -> Result<Value> {
    Ok(match old {
        Value::Integer(_) => Value::Integer(
            (*u.choose(&[0, 1, u64::from(u32::MAX), u64::from(u32::MAX) + 1, i64::MAX as u64, u64::MAX])?).into(),
        ),
        Value::Float(_) => Value::Float(*u.choose(&HOSTILE_FLOATS)?),
        Value::Text(t) => Value::Text(match u.int_in_range(0..=2u8)? {
            0 => String::new(),
            // Long, but bounded however often it is lengthened.
            1 => t.repeat(100_000 / t.len().max(1)),
            _ => u.arbitrary()?,
        }),
        Value::Bool(b) => Value::Bool(!b),
        Value::Array(items) if items.len() < 10_000 && u.arbitrary()? => {
            Value::Array([&items[..], items, items].concat())
        }
        Value::Array(_) => Value::Array(Vec::new()),
        Value::Map(_) => Value::Map(Vec::new()),
        Value::Null => Value::Null,
        _ => hostile(u)?,
    })
}

/// What the store said of one input, for the replay test.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Hit,
    Stale,
    Corrupt,
}

/// Runs one input.
pub fn drive(data: &[u8]) -> Option<Verdict> {
    let (&mode, rest) = data.split_first()?;
    let file = match mode % 3 {
        0 => rest.to_vec(),
        1 => compress(rest),
        _ => {
            let mut value = stored_run().1.clone();
            let mut u = Unstructured::new(rest);
            for _ in 0..u.int_in_range(1..=4u8).unwrap_or(1) {
                if change(&mut u, &mut value).is_err() {
                    break;
                }
            }
            compress(&encode(&value))
        }
    };
    let dir = scratch();
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::open(&dir.join("store")).expect("a scratch store");
    let key = key();
    let path = store.path(&key);
    std::fs::create_dir_all(path.parent().expect("in a subdirectory")).expect("a scratch directory");
    std::fs::write(&path, &file).expect("the entry is written");
    Some(match store.load(&key) {
        Lookup::Hit(report, _provenance) => {
            // It round-trips: saved again and loaded, the same report.
            let again = Store::open(&dir.join("again")).expect("a scratch store");
            again.save(&key, &report).expect("a loaded report is saved again");
            let Lookup::Hit(reloaded, _) = again.load(&key) else { panic!("a loaded report saved again is no hit") };
            assert!(encode_report(&reloaded) == encode_report(&report), "a loaded report does not round-trip");
            Verdict::Hit
        }
        Lookup::Missing => panic!("an entry that is there is reported missing"),
        Lookup::Stale(why) => {
            assert!(why.contains(&*path.to_string_lossy()), "a stale entry without its file: {why}");
            Verdict::Stale
        }
        Lookup::Corrupt(why) => {
            assert!(why.contains(&*path.to_string_lossy()), "a corrupt entry without its file: {why}");
            Verdict::Corrupt
        }
    })
}

fn encode_report(report: &meshbed_sim::SimReport) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::into_writer(report, &mut out).expect("a report encodes");
    out
}
