//! `meshbed experiment run` keeps finished runs in OUT/store and reuses
//! them (issue 16); `--no-store` runs everything.

use std::process::Command;

fn run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_meshbed")).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A fresh directory named for `tag` holding the experiment `e.toml`.
fn experiment_dir(tag: &str, text: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("meshbed-cli-store-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("e.toml");
    std::fs::write(&file, text).unwrap();
    (dir, file)
}

#[test]
fn a_rerun_reuses_the_store_and_no_store_runs_again() {
    let (dir, file) = experiment_dir(
        "rerun",
        "duration_s = 0.5\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n\
         [[flows]]\nsrc = 0\ndst = 2\n[experiment]\nname = \"t\"\nrepetitions = 2\n",
    );
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

/// Two `experiment run`s on one store at once compute each run once: the
/// second waits for the store, then reuses what the first kept (issue 26).
#[test]
fn two_runs_on_one_store_compute_each_run_once() {
    // Long enough (seconds) that the two overlap.
    let (dir, file) = experiment_dir(
        "twice",
        "duration_s = 60.0\n[topology]\nkind = \"chain\"\nnodes = 4\nspacing_m = 200.0\n\
         [[flows]]\nsrc = 0\ndst = 3\nprotocol = \"tcp-newreno\"\nbytes = 50000000\n\
         [experiment]\nname = \"t\"\nrepetitions = 6\n",
    );
    let store = dir.join("store");
    let start = |out: &str| {
        Command::new(env!("CARGO_BIN_EXE_meshbed"))
            .args(["experiment", "run", file.to_str().unwrap(), "--out", dir.join(out).to_str().unwrap()])
            .args(["--store", store.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start("a"), start("b"));
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let executed = |o: &std::process::Output| -> usize {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8_lossy(&o.stdout);
        let line = text.lines().find(|l| l.contains("runs executed")).unwrap_or_else(|| panic!("{text}"));
        line.split_whitespace().find_map(|w| w.parse().ok()).unwrap()
    };
    assert_eq!(executed(&a) + executed(&b), 6, "each of the 6 runs computed once");
    let waited = [&a, &b]
        .iter()
        .filter(|o| String::from_utf8_lossy(&o.stderr).contains("another run is using the store"))
        .count();
    assert!(waited <= 1);
    assert_eq!(std::fs::read(dir.join("a/flows.csv")).unwrap(), std::fs::read(dir.join("b/flows.csv")).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}
