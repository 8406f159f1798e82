//! What a backend can run: every backend (the simulator, the real-time
//! emulator, later real hosts) declares it in one function,
//! [`ScenarioBackend::supports`], decided from the typed scenario and called
//! before anything starts. A backend that cannot run part of a scenario
//! refuses the whole of it, naming every key that asked for what it cannot
//! do; it never runs something else under the scenario's name (issue 23:
//! the emulator used to run AODV scenarios with static routes and mobility
//! scenarios with frozen nodes, exit 0).

use crate::scenario::Scenario;
use std::fmt;

/// One part of a scenario a backend cannot run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    /// The key that asks for it, as written in the file (`routing.kind`,
    /// `flows[2].trace`, `random_flows.flow.atp`).
    pub key: String,
    /// Its value, as TOML would write it.
    pub value: String,
    /// Why the backend cannot run it, and what to do instead.
    pub reason: String,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {} ({})", self.key, self.value, self.reason)
    }
}

/// A backend's refusal of a scenario: every [`Unsupported`] part, each once.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Refusal {
    /// The backend's name ("the emulator").
    pub backend: &'static str,
    pub unsupported: Vec<Unsupported>,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} cannot run ", self.backend)?;
        for (i, u) in self.unsupported.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{u}")?;
        }
        f.write_str("; nothing was started")
    }
}

impl Refusal {
    /// No refusal yet, for `backend`.
    pub fn new(backend: &'static str) -> Self {
        Refusal { backend, unsupported: Vec::new() }
    }
    /// Adds `key = value` with its reason, unless the same key is listed.
    pub fn add(&mut self, key: impl Into<String>, value: impl Into<String>, reason: impl Into<String>) {
        let key = key.into();
        if !self.unsupported.iter().any(|u| u.key == key) {
            self.unsupported.push(Unsupported { key, value: value.into(), reason: reason.into() });
        }
    }
    /// Adds every part of `other` not listed yet (a sweep's points refuse
    /// the same keys: each is named once).
    pub fn merge(&mut self, other: Refusal) {
        for u in other.unsupported {
            self.add(u.key, u.value, u.reason);
        }
    }
    /// `Ok` if nothing was refused.
    pub fn into_result(self) -> Result<(), Refusal> {
        if self.unsupported.is_empty() {
            Ok(())
        } else {
            Err(self)
        }
    }
}

/// A backend that runs scenarios.
pub trait ScenarioBackend: Send + Sync {
    /// Its name in messages ("the simulator", "the emulator").
    fn name(&self) -> &'static str;
    /// Whether it can run `scenario` exactly as written (a valid scenario:
    /// [`Scenario::validate`] is the caller's). The refusal lists every
    /// part it cannot run.
    fn supports(&self, scenario: &Scenario) -> Result<(), Refusal>;
}

/// The discrete-event simulator runs every valid scenario: every feature of
/// the scenario files is implemented there first.
#[derive(Clone, Copy, Debug, Default)]
pub struct Simulator;

impl ScenarioBackend for Simulator {
    fn name(&self) -> &'static str {
        "the simulator"
    }
    fn supports(&self, _scenario: &Scenario) -> Result<(), Refusal> {
        Ok(())
    }
}

/// The key of flow `i` of a scenario whose random flows may be drawn: a
/// listed flow is `flows[i]`, a drawn one comes from the template,
/// `random_flows.flow`, which is where its keys were written.
pub fn flow_key(scenario: &Scenario, i: usize) -> String {
    let drawn = scenario.random_flows.as_ref().map_or(0, |r| r.drawn);
    if i + drawn >= scenario.flows.len() && drawn > 0 {
        "random_flows.flow".into()
    } else {
        format!("flows[{i}]")
    }
}
