//! The `meshbed` binary as a user meets it.

use std::process::Command;

fn meshbed(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_meshbed")).args(args).output().expect("run meshbed")
}

fn tmp(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("meshbed-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn no_arguments_runs_the_main_comparison_and_leaves_table_and_figures() {
    let dir = std::env::temp_dir().join(format!("meshbed-cli-main-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_meshbed")).current_dir(&dir).output().expect("run meshbed");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("testbed-a-single") && text.contains("goodput Mb/s"), "{text}");
    for p in ["atp-default", "atp-aggressive", "atp-adaptive", "tcp-tahoe", "tcp-reno", "tcp-newreno"] {
        assert!(text.contains(&format!("hops=6 protocol={p}")), "{p} missing: {text}");
    }
    let out = dir.join("results/testbed-a-single");
    for f in ["goodput.png", "goodput.svg", "flows.csv", "summary.csv"] {
        assert!(out.join(f).metadata().map(|m| m.len() > 0).unwrap_or(false), "{f} missing");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn printed_default_scenario_runs_and_json_reports_seed_and_flows() {
    let o = meshbed(&["scenario", "default"]);
    assert!(o.status.success());
    let file = tmp("default.toml", &String::from_utf8(o.stdout).unwrap());
    let o = meshbed(&["sim", file.to_str().unwrap(), "--json", "--seed", "7"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["seed"], 7);
    assert_eq!(v["flows"][0]["hops"], 4);
    assert!(v["flows"][0]["goodput_bps"].as_f64().unwrap() > 1e6);
    // The same scenario and seed give the same trace.
    let again = meshbed(&["sim", file.to_str().unwrap(), "--json", "--seed", "7"]);
    let w: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(v["trace_hash"], w["trace_hash"]);
}

#[test]
fn mistakes_exit_non_zero_naming_file_key_and_expectation() {
    let file = tmp(
        "bad.toml",
        "duration_s = 1\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n[[flows]]\nsrc = 0\ndst = 5\n",
    );
    let o = meshbed(&["sim", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains("bad.toml") && err.contains("flows[0].dst = 5") && err.contains("below 3"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let o = meshbed(&["sim", "/definitely/not/here.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/definitely/not/here.toml"));

    let o = meshbed(&["bench", "--sim-seconds", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--sim-seconds"));
}
