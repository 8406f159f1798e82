//! What the command line says about itself and its files: `--version`
//! with the git revision, shell completions, the man page, the commented
//! default scenario, the key reference and schema, the list of built-in
//! experiments, and a misspelt key reported at its line.

use std::process::Command;

fn meshbed(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_meshbed")).args(args).output().expect("run meshbed")
}

fn stdout(args: &[&str]) -> String {
    let o = meshbed(args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn tmp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("meshbed-cli-reference-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The revision the experiment layer stamps on every result row, in the
/// version line, shortened to 12 digits with its `-dirty` mark.
#[test]
fn version_names_the_package_version_and_the_git_revision_of_the_result_rows() {
    let line = stdout(&["--version"]);
    let revision = meshbed_experiment::store::GIT_REVISION;
    let rest = line
        .strip_prefix(&format!("meshbed {} (", meshbed_experiment::store::MESHBED_VERSION))
        .and_then(|r| r.strip_suffix(")\n"))
        .unwrap_or_else(|| panic!("{line:?}"));
    let (hash, dirty) = rest.strip_suffix("-dirty").map_or((rest, false), |h| (h, true));
    assert_eq!(dirty, revision.ends_with("-dirty"), "{line:?} vs {revision}");
    if revision == "unknown" {
        assert_eq!(rest, "unknown");
    } else {
        assert!(hash.len() == 12 && revision.starts_with(hash), "{line:?} vs {revision}");
    }
}

#[test]
fn completions_for_each_shell_name_the_subcommands() {
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout(&["completions", shell]);
        for sub in ["sim", "experiment", "scenario", "completions", "man"] {
            assert!(script.contains(sub), "{shell}: no {sub}");
        }
    }
    let o = meshbed(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn the_man_page_lists_the_subcommands_and_a_page_per_command_can_be_written() {
    let page = stdout(&["man"]);
    assert!(page.starts_with(".ie") || page.contains(".TH meshbed"), "{}", &page[..200.min(page.len())]);
    for sub in ["sim", "experiment", "scenario", "completions"] {
        assert!(page.contains(&format!("meshbed\\-{sub}")) || page.contains(sub), "no {sub}");
    }
    let dir = tmp_dir("man");
    stdout(&["man", "--dir", dir.to_str().unwrap()]);
    for file in ["meshbed.1", "meshbed-sim.1", "meshbed-experiment.1", "meshbed-scenario.1"] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(text.contains(".TH"), "{file}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn scenario_keys_and_schema_print_the_committed_reference() {
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    assert_eq!(stdout(&["scenario", "keys"]), std::fs::read_to_string(docs.join("KEYS.md")).unwrap());
    assert_eq!(stdout(&["scenario", "schema"]), std::fs::read_to_string(docs.join("scenario.schema.json")).unwrap());
}

/// The commented default and a shown experiment run as they are printed.
#[test]
fn the_printed_default_and_a_shown_experiment_read_back() {
    let dir = tmp_dir("show");
    let text = stdout(&["scenario", "default"]);
    assert!(text.starts_with("# ") && !text.contains("[radio.sinr_threshold_db]"), "{text}");
    let file = dir.join("default.toml");
    std::fs::write(&file, &text).unwrap();
    let s = meshbed_sim::Scenario::from_file(&file).unwrap();
    assert_eq!(s, meshbed_sim::Scenario::builtin_default());
    let text = stdout(&["experiment", "show", "stack"]);
    let file = dir.join("stack.toml");
    std::fs::write(&file, &text).unwrap();
    let e = meshbed_experiment::Experiment::from_file(&file).unwrap();
    assert_eq!(e.config, meshbed_experiment::builtin::get("stack").unwrap().config);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn experiment_list_aligns_the_descriptions_and_names_no_issue() {
    let list = stdout(&["experiment", "list"]);
    // Where each description starts: after the name and its padding.
    let columns: Vec<usize> = list
        .lines()
        .map(|l| {
            let after_name = &l[l.find(' ').unwrap()..];
            l.len() - after_name.trim_start().len()
        })
        .collect();
    assert!(columns.windows(2).all(|w| w[0] == w[1]), "{list}");
    assert!(!list.to_lowercase().contains("issue"), "{list}");
}

#[test]
fn a_misspelt_key_is_reported_at_its_line_with_a_non_zero_exit() {
    let dir = tmp_dir("typo");
    let file = dir.join("typo.toml");
    std::fs::write(&file, "duration_s = 1\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing = 200\n").unwrap();
    let o = meshbed(&["sim", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.starts_with(&format!("error: {}:5:1: topology.spacing: unknown key", file.display()))
            && err.contains("(did you mean `spacing_m`?)")
            && err.contains("5 | spacing = 200"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
