//! `meshbed experiment run` keeps finished runs in OUT/store and reuses
//! them (issue 16); `--no-store` runs everything.

use std::process::Command;

fn run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_meshbed")).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_rerun_reuses_the_store_and_no_store_runs_again() {
    let dir = std::env::temp_dir().join(format!("meshbed-cli-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("e.toml");
    std::fs::write(
        &file,
        "duration_s = 0.5\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n\
         [[flows]]\nsrc = 0\ndst = 2\n[experiment]\nname = \"t\"\nrepetitions = 2\n",
    )
    .unwrap();
    let out = dir.join("out");
    let args = ["experiment", "run", file.to_str().unwrap(), "--out", out.to_str().unwrap()];
    let store = out.join("store").display().to_string();
    assert!(run(&args).contains(&format!("2 runs executed, 0 reused from the store ({store})")));
    let csv = std::fs::read(out.join("flows.csv")).unwrap();
    assert!(run(&args).contains(&format!("0 runs executed, 2 reused from the store ({store})")));
    assert_eq!(std::fs::read(out.join("flows.csv")).unwrap(), csv);
    assert!(out.join("flows.parquet").exists() && out.join("summary.parquet").exists());
    let three = [&args[..], &["--repetitions", "3"]].concat();
    assert!(run(&three).contains("1 runs executed, 2 reused"));
    let fresh = [&args[..], &["--no-store"]].concat();
    assert!(run(&fresh).contains("2 runs executed (no result store)"));
    let _ = std::fs::remove_dir_all(&dir);
}
