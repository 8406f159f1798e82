//! The real-time emulator as an experiment backend: the experiment layer
//! takes a [`Runner`] and does not depend on the emulator; the CLI plugs
//! this one in for `meshbed experiment run --backend emu`.

use meshbed_emu::traffic::{self, EmuOptions};
use meshbed_emu::Emulator;
use meshbed_experiment::run::{RunError, Runner};
use meshbed_sim::backend::{Refusal, ScenarioBackend};
use meshbed_sim::{Scenario, SimReport};
use std::path::PathBuf;

/// Runs every point on the emulator, one at a time, in wall-clock time.
#[derive(Debug)]
pub struct EmuRunner {
    /// The `meshbed` binary, started as `meshbed relay` in every node.
    pub daemon_exe: Option<PathBuf>,
    /// Start the relays (`--no-relays` turns them off: `EmuOptions::relays`).
    pub relays: bool,
}

impl Runner for EmuRunner {
    fn max_parallel(&self) -> Option<usize> {
        Some(1)
    }

    /// The emulator's one check ([`Emulator`]): routing engines, moving
    /// nodes and every per-flow setting it would ignore are refused by key.
    fn supports(&self, scenario: &Scenario) -> Result<(), Refusal> {
        if self.relays {
            Emulator.supports(scenario)
        } else {
            Emulator.supports_without_relays(scenario)
        }
    }

    fn run(&self, scenario: &Scenario) -> Result<SimReport, RunError> {
        let options = EmuOptions { daemon_exe: self.daemon_exe.clone(), relays: self.relays, ..Default::default() };
        traffic::run_scenario(scenario, &options)
            .map(|r| r.run)
            .map_err(|e| RunError::Backend(format!("emulator: {e:#}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_experiment::{Experiment, ExperimentError, RunOptions};
    use std::sync::Arc;

    /// `meshbed experiment run FILE --backend emu` refuses, before anything
    /// runs (no root needed: no namespace is made), every key any point
    /// asks for that the emulator would run as something else (DSR, a
    /// transfer's packet size, echo), and runs moving nodes and transfers
    /// that stop at a time.
    #[test]
    fn the_emulator_refuses_an_experiment_naming_every_key_once() {
        let text = "duration_s = 3.0\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n\
            [routing]\nkind = \"dsr\"\n\
            [[flows]]\nsrc = 0\ndst = 2\n\
            [[flows]]\nsrc = 0\ndst = 2\nprotocol = \"atp-default\"\nstop_s = 2.0\npacket_bytes = 512\n\
            [[flows]]\nsrc = 2\ndst = 0\ntraffic = \"echo\"\n\
            [mobility]\nmodel = \"random-waypoint\"\nwidth_m = 500.0\nheight_m = 100.0\nmin_speed_mps = 1.0\nmax_speed_mps = 5.0\n\
            [experiment]\nname = \"t\"\nrepetitions = 1\n[[experiment.sweep]]\nkey = \"hops\"\nvalues = [2, 3]\n";
        let e = Experiment::from_toml(text, "e.toml").unwrap();
        let options =
            RunOptions { runner: Arc::new(EmuRunner { daemon_exe: None, relays: true }), ..RunOptions::default() };
        let err = meshbed_experiment::run::run(&e, &options).unwrap_err();
        let ExperimentError::Refused { file, refusal } = &err else { panic!("{err}") };
        assert_eq!(file, "e.toml");
        let keys: Vec<&str> = refusal.unsupported.iter().map(|u| u.key.as_str()).collect();
        // Moving nodes and `stop_s` run now (the medium's trajectories, a
        // transfer stopped at its time); DSR, a packet size other than the
        // runtime's and echo do not.
        assert_eq!(keys, ["routing.kind", "flows[1].packet_bytes", "flows[2].traffic"]);
        let msg = err.to_string();
        assert!(msg.starts_with("e.toml: the emulator cannot run routing.kind = \"dsr\" ("), "{msg}");
        assert!(msg.ends_with("; nothing was started"), "{msg}");
    }

    /// Without relays (`--no-relays`) an ATP flow, whose rate comes from
    /// the relays' stamps, is refused by its protocol key, with the other
    /// refusals; the TCP engines and UDP run, and with relays the
    /// same file is refused only for what the emulator never runs.
    #[test]
    fn without_relays_the_emulator_refuses_atp_by_its_protocol_key() {
        let text = "duration_s = 3.0\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n\
            [[flows]]\nsrc = 0\ndst = 2\n\
            [[flows]]\nsrc = 0\ndst = 2\nprotocol = \"tcp-cubic\"\nbytes = 1000\n\
            [[flows]]\nsrc = 0\ndst = 2\nprotocol = \"atp-adaptive\"\nbytes = 1000\npacket_bytes = 512\n\
            [experiment]\nname = \"t\"\nrepetitions = 1\n[[experiment.sweep]]\nkey = \"hops\"\nvalues = [2]\n";
        let e = Experiment::from_toml(text, "e.toml").unwrap();
        let refused = |relays: bool| {
            let options =
                RunOptions { runner: Arc::new(EmuRunner { daemon_exe: None, relays }), ..RunOptions::default() };
            let err = meshbed_experiment::run::run(&e, &options).unwrap_err();
            let ExperimentError::Refused { refusal, .. } = &err else { panic!("{err}") };
            let keys: Vec<String> = refusal.unsupported.iter().map(|u| u.key.clone()).collect();
            (keys, err.to_string())
        };
        let (keys, msg) = refused(false);
        assert_eq!(keys, ["flows[2].packet_bytes", "flows[2].protocol"]);
        assert!(
            msg.contains("flows[2].protocol = \"atp-adaptive\" (ATP's rate comes from the D_max the relays stamp"),
            "{msg}"
        );
        assert_eq!(refused(true).0, ["flows[2].packet_bytes"]);
    }
}
