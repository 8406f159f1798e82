//! What a backend can run: every backend (the simulator, the real-time
//! emulator, later real hosts) declares it in one function,
//! [`ScenarioBackend::supports`], decided from the typed scenario and called
//! before anything starts. A backend that cannot run part of a scenario
//! refuses the whole of it, naming every key that asked for what it cannot
//! do; it never runs something else under the scenario's name (issue 23:
//! the emulator used to run AODV scenarios with static routes and mobility
//! scenarios with frozen nodes, exit 0).

use crate::scenario::{FlowKind, Scenario, KERNEL_TCP};
use meshbed_proto::Protocol;
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

/// The discrete-event simulator runs every valid scenario but one whose
/// flows ask for the Linux kernel's TCP (`protocol = "kernel-tcp"`): it has
/// no kernel, and running one of its own TCP engines under that name would
/// be running something else. Every other feature of the scenario files is
/// implemented there first. [`crate::Sim::new`] asks this before it builds
/// anything, so `meshbed sim`, `meshbed_sim::run` and the experiments all
/// refuse such a flow by its key.
#[derive(Clone, Copy, Debug, Default)]
pub struct Simulator;

impl ScenarioBackend for Simulator {
    fn name(&self) -> &'static str {
        "the simulator"
    }
    fn supports(&self, scenario: &Scenario) -> Result<(), Refusal> {
        let mut refusal = Refusal::new(self.name());
        // Drawn flows are named by their template (`random_flows.flow`); an
        // invalid scenario is the validation's to report.
        let drawn = scenario.with_random_flows_drawn();
        let (flows, drawn) = match &drawn {
            Ok(d) => (&d.flows, Some(&**d)),
            Err(_) => (&scenario.flows, None),
        };
        for (i, f) in flows.iter().enumerate() {
            if let FlowKind::KernelTcp(_) = f.kind {
                let key = drawn.map_or_else(|| format!("flows[{i}]"), |d| flow_key(d, i));
                refuse_kernel_tcp(&mut refusal, &key);
            }
        }
        refusal.into_result()
    }
}

/// The simulator's refusal of the kernel TCP flow `key` (`flows[i]`).
pub(crate) fn refuse_kernel_tcp(refusal: &mut Refusal, key: &str) {
    let engines: Vec<&str> =
        Protocol::ALL.iter().filter(|p| !p.is_atp() && **p != Protocol::Mtl).map(|p| p.name()).collect();
    refusal.add(
        format!("{key}.protocol"),
        format!("\"{KERNEL_TCP}\""),
        format!(
            "the simulator has no kernel TCP; its TCP engines are {} (run this flow on the emulator: --backend emu)",
            engines.join(", ")
        ),
    );
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

#[cfg(test)]
mod tests {
    use super::*;

    const CHAIN: &str = "duration_s = 2\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n";

    fn scenario(flows: &str) -> Scenario {
        Scenario::from_toml(&format!("{CHAIN}{flows}")).unwrap()
    }

    #[test]
    fn the_simulator_refuses_kernel_tcp_by_its_protocol_key_and_runs_everything_else() {
        let s = scenario(
            "[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"tcp-reno\"\nbytes = 1000\n\
             [[flows]]\nsrc = 2\ndst = 0\nprotocol = \"kernel-tcp\"\ncongestion_control = \"reno\"\nbytes = 1000\n",
        );
        let r = Simulator.supports(&s).unwrap_err();
        assert_eq!(r.backend, "the simulator");
        assert_eq!(r.unsupported.len(), 1, "{r}");
        let u = &r.unsupported[0];
        assert_eq!((u.key.as_str(), u.value.as_str()), ("flows[1].protocol", "\"kernel-tcp\""));
        assert!(
            u.reason.starts_with("the simulator has no kernel TCP; its TCP engines are tcp-tahoe, tcp-reno,"),
            "{u}"
        );
        assert!(u.reason.ends_with("(run this flow on the emulator: --backend emu)"), "{u}");
        assert!(!u.reason.contains("atp") && !u.reason.contains("mtl"), "{u}");
        // Without it the same scenario runs.
        let mut rest = s.clone();
        rest.flows.pop();
        assert_eq!(Simulator.supports(&rest), Ok(()));
        assert!(crate::run(&rest).is_ok());
    }

    #[test]
    fn a_run_of_a_kernel_tcp_flow_is_refused_before_anything_is_built() {
        let s = scenario("[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"kernel-tcp\"\nstop_s = 1.0\n");
        let e = crate::run(&s).expect_err("refused").in_file("k.toml").to_string();
        assert!(
            e.starts_with(
                "k.toml: the simulator cannot run flows[0].protocol = \"kernel-tcp\" (the simulator has no kernel TCP;"
            ),
            "{e}"
        );
        assert!(e.ends_with("nothing was started"), "{e}");
        // With routing engines (`Sim::with_routing`) too.
        let mut aodv = s.clone();
        aodv.routing = crate::scenario::Routing::aodv(None);
        assert!(matches!(crate::run(&aodv).err(), Some(crate::ScenarioError::Refused { .. })));
    }

    #[test]
    fn a_drawn_kernel_tcp_flow_is_refused_by_its_template_key() {
        let s = scenario("[random_flows]\ncount = 2\n[random_flows.flow]\nprotocol = \"kernel-tcp\"\nbytes = 1000\n");
        let r = Simulator.supports(&s).unwrap_err();
        let keys: Vec<&str> = r.unsupported.iter().map(|u| u.key.as_str()).collect();
        assert_eq!(keys, ["random_flows.flow.protocol"]);
    }
}
