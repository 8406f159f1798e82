//! What the command line says about itself and its files: the version
//! with the git revision, `meshbed scenario default|keys|schema` (the
//! commented default scenario, the reference of every key, the JSON
//! schema), shell completions and the man page.

use crate::{out, Cli};
use anyhow::{Context, Result};
use clap::{CommandFactory, Subcommand};
use meshbed_experiment::spec::reference as keys;
use meshbed_experiment::store::{GIT_REVISION, MESHBED_VERSION};
use meshbed_sim::Scenario;

#[derive(Subcommand)]
pub enum ScenarioCommand {
    /// Print the built-in default scenario as a commented file, to copy and edit.
    Default,
    /// Print the reference of every scenario and experiment key as Markdown (docs/KEYS.md).
    Keys,
    /// Print the JSON schema of scenario and experiment files (docs/scenario.schema.json), for editors.
    Schema,
}

/// `meshbed --version`: the package version and the git revision it was
/// built from, shortened as `git rev-parse --short=12` would (`-dirty`
/// kept), from the one rule that also stamps every result row
/// (`meshbed_experiment::store::GIT_REVISION`).
pub fn version() -> &'static str {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    VERSION.get_or_init(|| format!("{MESHBED_VERSION} ({})", short_revision(GIT_REVISION)))
}

/// A revision's first 12 hex digits, its `-dirty` mark kept; `unknown` as it is.
pub fn short_revision(revision: &str) -> String {
    let (hash, dirty) = match revision.strip_suffix("-dirty") {
        Some(hash) => (hash, "-dirty"),
        None => (revision, ""),
    };
    if hash.len() > 12 && hash.chars().all(|c| c.is_ascii_hexdigit()) {
        format!("{}{dirty}", &hash[..12])
    } else {
        revision.to_string()
    }
}

/// `meshbed scenario …`.
pub fn scenario(command: ScenarioCommand) -> Result<()> {
    match command {
        ScenarioCommand::Default => {
            let s = Scenario::builtin_default();
            let tree = toml::Table::try_from(&s).context("serialising the scenario")?;
            let header = "The built-in default scenario: one saturated UDP flow along a 4-hop\n802.11a chain. `meshbed sim FILE` runs it; docs/KEYS.md lists every key\n(the tables left out here: [mobility], [random_flows], [radio.floors], ...).";
            out(&keys::reference().commented_toml(header, &tree))
        }
        ScenarioCommand::Keys => out(&keys::keys_markdown()),
        ScenarioCommand::Schema => out(&keys::schema_json()),
    }
}

/// `meshbed completions SHELL`: the completion script for SHELL.
pub fn completions(shell: clap_complete::Shell) -> Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "meshbed", &mut script);
    out(&String::from_utf8(script).context("the completion script")?)
}

/// `meshbed man [--dir DIR]`: the man page meshbed.1 on standard output
/// (its SUBCOMMANDS section lists every command), or with `dir` a page per
/// command written there (`meshbed.1`, `meshbed-sim.1`, ...).
pub fn man(dir: Option<&std::path::Path>) -> Result<()> {
    let command = Cli::command();
    match dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(command, dir)
                .with_context(|| format!("--dir {}: expected a directory that can be written to", dir.display()))?;
            eprintln!("wrote the man pages to {}", dir.display());
            Ok(())
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command).render(&mut page).context("rendering the man page")?;
            out(&String::from_utf8(page).context("the man page")?)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_is_shortened_to_12_digits_keeping_dirty() {
        let full = "6703b36e1f2a3c4d5e6f708192a3b4c5d6e7f809";
        assert_eq!(short_revision(full), "6703b36e1f2a");
        assert_eq!(short_revision(&format!("{full}-dirty")), "6703b36e1f2a-dirty");
        assert_eq!(short_revision("unknown"), "unknown");
    }
}
