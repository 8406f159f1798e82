//! The files the README and the examples name: every scenario under
//! `examples/` reads, every `.toml` a README command runs exists (or an
//! earlier README command writes it), and `examples/chain.toml`, the
//! README's emulator file, runs in the simulator and on the emulator.

mod common;

use meshbed_emu::support::Emulator;
use meshbed_sim::backend::ScenarioBackend;
use meshbed_sim::{Scenario, SimReport};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).expect("README.md")
}

/// Every `.toml` file under `dir`, recursively.
fn toml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            toml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
}

/// The lines of the README's ```sh blocks, each without its comment.
fn readme_commands(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in readme.lines() {
        match line.trim() {
            "```sh" => in_sh = true,
            l if l.starts_with("```") => in_sh = false,
            l if in_sh => out.push(l.split(" #").next().unwrap_or_default().trim().to_string()),
            _ => {}
        }
    }
    out
}

/// The `examples/….toml` paths the README names anywhere (commands, prose,
/// Python), globs left out.
fn readme_example_paths(readme: &str) -> Vec<String> {
    let mut out: Vec<String> = readme
        .match_indices("examples/")
        .map(|(at, _)| {
            readme[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || "-_./".contains(*c)).collect::<String>()
        })
        .map(|p| p.trim_end_matches('.').to_string())
        .filter(|p| p.ends_with(".toml"))
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn every_scenario_and_experiment_under_examples_reads() {
    let mut files = Vec::new();
    toml_files(&repo().join("examples"), &mut files);
    assert!(files.len() >= 10, "{files:?}");
    let mut experiments = 0;
    for f in &files {
        // An experiment file is a scenario with an `[experiment]` table.
        let text = std::fs::read_to_string(f).unwrap();
        if text.lines().any(|l| l.trim() == "[experiment]") {
            meshbed_experiment::Experiment::from_file(f).unwrap_or_else(|e| panic!("{e}"));
            experiments += 1;
        } else {
            Scenario::from_file(f).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    assert!(experiments >= 1, "the sensitivity experiments are under examples/sensitivity");
}

#[test]
fn every_example_the_readme_names_exists_and_reads() {
    let paths = readme_example_paths(&readme());
    assert!(paths.contains(&"examples/chain.toml".to_string()), "{paths:?}");
    for p in &paths {
        let file = repo().join(p);
        assert!(file.is_file(), "README.md names {p}, which does not exist");
        Scenario::from_file(&file).unwrap_or_else(|e| panic!("README.md names {p}: {e}"));
    }
}

#[test]
fn every_toml_a_readme_command_runs_exists_or_an_earlier_command_writes_it() {
    let mut written: Vec<String> = Vec::new();
    let mut checked = 0;
    for command in readme_commands(&readme()) {
        let words: Vec<&str> = command.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            let w = w.trim_matches(|c| "'\";".contains(c));
            if !w.ends_with(".toml") {
                continue;
            }
            if i > 0 && words[i - 1] == ">" {
                written.push(w.to_string());
            } else {
                checked += 1;
                assert!(
                    repo().join(w).is_file() || written.iter().any(|x| x == w),
                    "README.md runs `{command}`: {w} is neither in the repository nor written by an earlier command"
                );
            }
        }
    }
    assert!(checked >= 5, "{checked} commands with a file");
}

fn chain() -> Scenario {
    Scenario::from_file(&repo().join("examples/chain.toml")).expect("examples/chain.toml")
}

#[test]
fn the_readme_chain_runs_in_the_simulator_and_the_emulator_takes_it() {
    let s = chain();
    let r = meshbed_sim::run(&s).expect("it runs");
    let f = &r.flows[0];
    assert_eq!((f.src, f.dst, f.hops, f.protocol_name()), (0, 3, Some(3), "atp-default"));
    assert!(f.completed() && f.verified(), "{:?}", f.transfer);
    Emulator.supports(&s).unwrap_or_else(|e| panic!("the emulator refuses examples/chain.toml: {e}"));
}

#[test]
#[ignore = "needs root, /dev/net/tun, iproute2 and iptables: run scripts/test as root (CI does)"]
fn the_readme_chain_runs_on_the_emulator_and_shows_a_dash_for_what_it_does_not_measure() {
    let text = std::fs::read_to_string(repo().join("examples/chain.toml")).unwrap();
    let v = common::emu_run_json("chain", &text);
    let f = &v["run"]["flows"][0];
    assert_eq!(f["transfer"]["completed"], true, "{f}");
    assert!(f["mean_delay_s"].is_null(), "the emulator measures no delay: {f}");
    assert_eq!(v["run"]["data_path"], "kernel", "{}", v["run"]);
    // The table of the same report.
    let report: SimReport = serde_json::from_value(v["run"].clone()).unwrap();
    let table = report.to_table();
    let cell = |name: &str| {
        table.lines().find(|l| l.trim_start().starts_with(name)).map(|l| l[name.len() + 2..].trim().to_string())
    };
    assert_eq!(cell("forwarded by relays").as_deref(), Some("-"), "{table}");
    assert_eq!(cell("drop: no route").as_deref(), Some("-"), "{table}");
    let line = table.lines().find(|l| l.split_whitespace().next() == Some("0")).expect("flow 0");
    let words: Vec<&str> = line.split_whitespace().collect();
    // flow src dst hops protocol sent received pdr goodput(2) delay done time retx
    assert_eq!((words[7], words[10], words[11]), ("-", "-", "yes"), "{table}");
}
