//! The real-time emulator as an experiment backend: the experiment layer
//! takes a [`Runner`] and does not depend on the emulator; the CLI plugs
//! this one in for `meshbed experiment run --backend emu`.

use meshbed_emu::traffic::{self, EmuOptions};
use meshbed_experiment::run::{RunError, Runner};
use meshbed_experiment::spec::Point;
use meshbed_experiment::ExperimentError;
use meshbed_sim::{Scenario, SimReport};
use std::path::PathBuf;

/// Runs every point on the emulator, one at a time, in wall-clock time.
#[derive(Debug)]
pub struct EmuRunner {
    /// The `meshbed` binary, started as `meshbed relay` in every node.
    pub relay_exe: Option<PathBuf>,
}

impl Runner for EmuRunner {
    fn max_parallel(&self) -> Option<usize> {
        Some(1)
    }

    /// Refuses, before anything runs, flows the emulator cannot run as
    /// written ([`traffic::not_emulated`]), naming each once.
    fn check(&self, file: &str, points: &[Point]) -> Result<(), ExperimentError> {
        let mut refused: Vec<String> = Vec::new();
        for p in points {
            let scenario = p.scenario.with_random_flows_drawn().map_err(|error| ExperimentError::Point {
                file: file.into(),
                point: p.label(),
                error: Box::new(error),
            })?;
            for (i, f) in scenario.flows.iter().enumerate() {
                if let Some(why) = traffic::not_emulated(f) {
                    let line = format!("flows[{i}] ({why})");
                    if !refused.contains(&line) {
                        refused.push(line);
                    }
                }
            }
        }
        if refused.is_empty() {
            return Ok(());
        }
        Err(ExperimentError::Backend(format!(
            "{file}: the emulator cannot run {}; nothing was started (give such flows `bytes` instead of `stop_s`, or use --backend sim)",
            refused.join(", ")
        )))
    }

    fn run(&self, scenario: &Scenario) -> Result<SimReport, RunError> {
        let options = EmuOptions { relay_exe: self.relay_exe.clone(), ..Default::default() };
        traffic::run_scenario(scenario, &options)
            .map(|r| r.run)
            .map_err(|e| RunError::Backend(format!("emulator: {e:#}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_experiment::{Experiment, RunOptions};
    use std::sync::Arc;

    #[test]
    fn the_emulator_refuses_flows_it_cannot_run_before_starting() {
        let text = "duration_s = 3.0\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n\
            [[flows]]\nsrc = 0\ndst = 2\n\
            [[flows]]\nsrc = 0\ndst = 2\nprotocol = \"atp-default\"\nstop_s = 2.0\n\
            [[flows]]\nsrc = 2\ndst = 0\nprotocol = \"tcp-reno\"\nstop_s = 2.0\n\
            [experiment]\nname = \"t\"\nrepetitions = 1\n";
        let e = Experiment::from_toml(text, "e.toml").unwrap();
        let options = RunOptions { runner: Arc::new(EmuRunner { relay_exe: None }), ..RunOptions::default() };
        let err = meshbed_experiment::run::run(&e, &options).unwrap_err().to_string();
        assert!(
            err.starts_with("e.toml: the emulator cannot run flows[1] (a transport flow that runs for a duration"),
            "{err}"
        );
        assert!(
            err.contains(", flows[2] (") && !err.contains("flows[0]") && err.contains("nothing was started"),
            "{err}"
        );
    }
}
