//! The result store reuses a run only under the same `MODEL_REVISION`, so
//! a change of the model must bump it. The simulator's snapshot
//! (`crates/sim/tests/snapshots/runs.txt`, integer summaries of fixed runs)
//! changes exactly when the model does: this test ties the two together, so
//! a regenerated snapshot without a new model revision fails here.

use sha2::{Digest, Sha256};

#[test]
fn the_model_revision_moves_with_the_simulator_snapshot() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let snapshot = std::fs::read(root.join("../sim/tests/snapshots/runs.txt")).expect("the simulator snapshot");
    let digest: String = Sha256::digest(&snapshot).iter().map(|b| format!("{b:02x}")).collect();
    let recorded: toml::Table =
        toml::from_str(&std::fs::read_to_string(root.join("tests/model_revision.toml")).unwrap()).unwrap();
    let (revision, hash) =
        (recorded["model_revision"].as_str().unwrap(), recorded["snapshot_sha256"].as_str().unwrap());
    assert_eq!(
        hash, digest,
        "the simulator snapshot changed (the model changed): bump MODEL_REVISION in crates/experiment/src/store.rs \
         and record it with the snapshot's new SHA-256 ({digest}) in crates/experiment/tests/model_revision.toml"
    );
    assert_eq!(
        revision,
        meshbed_experiment::store::MODEL_REVISION,
        "crates/experiment/tests/model_revision.toml records another model revision than store::MODEL_REVISION"
    );
}
