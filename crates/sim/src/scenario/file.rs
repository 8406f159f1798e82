//! Reading a scenario (a file, text or an experiment's TOML tree) and
//! drawing the flows of `[random_flows]`.

use super::error::{
    e_path_segments, flow_error, invalid, lookup, read_input_file, typed_value_error, within, ScenarioError,
};
use super::flow_file::FlowFile;
use super::flows::FlowSpec;
use super::limits::MAX_FLOWS;
use super::unknown_key;
use super::Scenario;
use meshbed_core::limits::Bounded;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// `[random_flows]`: `count` flows like the `flow` template, each between a
/// source and a different destination drawn uniformly from the nodes, from
/// the run seed's own stream ([`meshbed_core::StreamKind::FlowPairs`]): two
/// runs with the same seed and nodes draw the same pairs, whatever their
/// routing or protocol, so that protocols are compared on the same traffic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RandomFlows {
    /// How many flows are drawn (with the listed flows, at most 1000).
    #[schemars(range(min = 1, max = MAX_FLOWS))]
    pub count: u32,
    /// Each flow starts at a time drawn uniformly in `[a, b)` seconds, 0 <=
    /// a < b <= duration_s (Broch et al. start their CBR sources at
    /// random); absent: at the template's `start_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_window_s: Option<[f64; 2]>,
    /// The drawn flows' template: any key of a `[[flows]]` table but `src`
    /// and `dst`.
    #[serde(default)]
    #[schemars(schema_with = "super::flow_file::flow_template_schema")]
    pub flow: toml::Table,
    /// How many of `flows`, at the end, were drawn from this (0 until
    /// drawn), and for which seed.
    #[serde(skip)]
    #[schemars(skip)]
    pub drawn: usize,
    #[serde(skip)]
    #[schemars(skip)]
    pub drawn_for_seed: Option<u64>,
}

impl RandomFlows {
    /// `count` flows like `flow` (its `src` and `dst` ignored), starting in
    /// `start_window_s` if given.
    pub fn like(count: u32, start_window_s: Option<[f64; 2]>, flow: &FlowSpec) -> RandomFlows {
        let mut template = toml::Table::try_from(flow).expect("a flow serialises to a TOML table");
        template.remove("src");
        template.remove("dst");
        RandomFlows { count, start_window_s, flow: template, drawn: 0, drawn_for_seed: None }
    }
}

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let name = path.display().to_string();
        let text = read_input_file(path).map_err(|err| ScenarioError::Io { file: name.clone(), err })?;
        let mut s = Scenario::parse(&text).map_err(|e| e.in_file(&name))?;
        let in_file = |e: ScenarioError| e.located(&text).in_file(&name);
        // A movement file is named relative to the scenario file.
        if let Some(
            crate::mobility::MobilitySpec::Ns2 { file } | crate::mobility::MobilitySpec::Bonnmotion { file, .. },
        ) = &mut s.mobility
        {
            if file.is_relative() {
                *file = path.parent().unwrap_or(Path::new("")).join(&*file);
            }
        }
        crate::check_routes(&s).map_err(in_file)?;
        Ok(s)
    }

    /// Parses and validates scenario text, the flows' routes included
    /// ([`crate::check_routes`]); a movement file is named relative to the
    /// working directory.
    pub fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
        let s = Scenario::parse(text)?;
        crate::check_routes(&s).map_err(|e| e.located(text))?;
        Ok(s)
    }

    pub(super) fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        serde_path_to_error::deserialize(toml::Deserializer::new(text)).map_err(|e| {
            let key = e.path().to_string();
            let inner = e.into_inner();
            let value = inner.span().and_then(|span| text.get(span)).map(str::trim);
            // A misspelt key at its own line (the reader of a table read
            // whole knows only the table's).
            if let Some(unknown) = unknown_key::from_message(&key, inner.message()) {
                return unknown.located(text);
            }
            typed_value_error(&key, value, inner.message())
                .or_else(|| flow_error(&key, inner.message()))
                .unwrap_or_else(|| ScenarioError::Parse { file: String::new(), message: inner.to_string() })
        })
    }

    /// Reads a scenario from a TOML tree (an experiment's point), as
    /// [`Scenario::parse`] reads text: a value of the wrong form names its
    /// key.
    pub fn from_tree(tree: toml::Table) -> Result<Scenario, ScenarioError> {
        let value = toml::Value::Table(tree);
        serde_path_to_error::deserialize(value.clone()).map_err(|e: serde_path_to_error::Error<toml::de::Error>| {
            let key = e.path().to_string();
            let inner = e.into_inner();
            let found = lookup(&value, e_path_segments(&key)).map(|v| v.to_string());
            if let Some(unknown) = unknown_key::from_message(&key, inner.message()) {
                return unknown;
            }
            typed_value_error(&key, found.as_deref(), inner.message())
                .or_else(|| flow_error(&key, inner.message()))
                .unwrap_or_else(|| ScenarioError::Parse { file: String::new(), message: inner.message().to_string() })
        })
    }

    /// The flow `[random_flows]` describes, between `src` and `dst`.
    fn random_flow(&self, src: u32, dst: u32) -> Result<FlowSpec, ScenarioError> {
        let Some(r) = &self.random_flows else { unreachable!("called with random flows") };
        if let Some(k) = ["src", "dst"].into_iter().find(|k| r.flow.contains_key(*k)) {
            return Err(invalid(
                format!("random_flows.flow.{k}"),
                r.flow[k].to_string(),
                "no value: sources and destinations are drawn at random",
            ));
        }
        let mut t = r.flow.clone();
        t.insert("src".into(), toml::Value::Integer(src.into()));
        t.insert("dst".into(), toml::Value::Integer(dst.into()));
        let file: FlowFile = t.try_into().map_err(|e: toml::de::Error| {
            unknown_key::from_message("random_flows.flow", e.message()).unwrap_or_else(|| ScenarioError::Parse {
                file: String::new(),
                message: format!("random_flows.flow: {}", e.message()),
            })
        })?;
        file.into_spec().map_err(|e| e.under("random_flows.flow"))
    }

    /// Checks `[random_flows]`: its count (with the listed flows, at most
    /// [`MAX_FLOWS`]), its start window and its template.
    pub(super) fn check_random_flows(&self, listed: usize) -> Result<(), ScenarioError> {
        let Some(r) = &self.random_flows else { return Ok(()) };
        within("random_flows.count", r.count as usize, 1..=MAX_FLOWS - listed.min(MAX_FLOWS), "a number of flows")?;
        if let Some([a, b]) = r.start_window_s {
            if !(a >= 0.0 && a < b && b <= self.duration_s) {
                return Err(invalid(
                    "random_flows.start_window_s",
                    format!("[{}, {}]", a.text(), b.text()),
                    format!("[a, b] in seconds with 0 <= a < b <= duration_s = {}", self.duration_s.text()),
                ));
            }
        }
        self.random_flow(0, 1).map(|_| ())
    }

    /// Draws the flows of `[random_flows]` for the scenario's seed: replaces
    /// those drawn before (for another seed) and appends `count` new ones.
    /// Without `[random_flows]` it does nothing.
    fn draw_random_flows(&mut self) -> Result<(), ScenarioError> {
        use rand::Rng;
        let Some(r) = &self.random_flows else { return Ok(()) };
        let (count, window, drawn) = (r.count, r.start_window_s, r.drawn);
        let listed = self.flows.len() - drawn.min(self.flows.len());
        self.flows.truncate(listed);
        self.check_random_flows(listed)?;
        let nodes = self.node_count();
        let template = self.random_flow(0, 1)?;
        let mut rng =
            meshbed_core::stream_rng(self.seed, meshbed_core::StreamId::new(meshbed_core::StreamKind::FlowPairs, 0));
        // With fewer than two nodes there is no pair; the topology's own
        // check reports it.
        for _ in 0..if nodes >= 2 { count } else { 0 } {
            let src = rng.gen_range(0..nodes);
            let dst = (src + rng.gen_range(1..nodes)) % nodes;
            let mut f = FlowSpec { src, dst, ..template.clone() };
            if let Some([a, b]) = window {
                f.start_s = rng.gen_range(a..b);
            }
            self.flows.push(f);
        }
        if let Some(r) = &mut self.random_flows {
            r.drawn = self.flows.len() - listed;
            r.drawn_for_seed = Some(self.seed);
        }
        Ok(())
    }

    /// The scenario with its random flows drawn for its current seed (a
    /// copy only if they were drawn for another seed or not yet): what a
    /// run uses, so that `--seed` and an experiment's repetitions draw
    /// their own pairs.
    pub fn with_random_flows_drawn(&self) -> Result<std::borrow::Cow<'_, Scenario>, ScenarioError> {
        match &self.random_flows {
            Some(r) if r.drawn_for_seed != Some(self.seed) => {
                let mut s = self.clone();
                s.draw_random_flows()?;
                Ok(std::borrow::Cow::Owned(s))
            }
            _ => Ok(std::borrow::Cow::Borrowed(self)),
        }
    }

    /// How many flows a run of this scenario has: those listed and those
    /// `[random_flows]` draws (the same for every seed).
    pub fn flow_count(&self) -> usize {
        let listed = self.flows.len() - self.random_flows.as_ref().map_or(0, |r| r.drawn.min(self.flows.len()));
        listed + self.random_flows.as_ref().map_or(0, |r| r.count as usize)
    }
}
