//! Reading an experiment file, checking it, and writing it back.

use super::{invalid, Experiment, ExperimentConfig, ExperimentError, MAX_REPETITIONS, MAX_RUNS};
use meshbed_sim::{Scenario, ScenarioError};

impl Experiment {
    /// Reads an experiment file.
    pub fn from_file(path: &std::path::Path) -> Result<Experiment, ExperimentError> {
        let file = path.display().to_string();
        let text = meshbed_sim::scenario::read_input_file(path)
            .map_err(|err| ExperimentError::Io { file: file.clone(), err })?;
        Experiment::from_toml(&text, &file)
    }

    /// Parses experiment text; `file` names it in errors.
    pub fn from_toml(text: &str, file: &str) -> Result<Experiment, ExperimentError> {
        let mut base: toml::Table =
            toml::from_str(text).map_err(|e| ExperimentError::Parse { file: file.into(), message: e.to_string() })?;
        let Some(exp) = base.remove("experiment") else {
            return Err(invalid(file, "experiment", "(missing)", "an [experiment] table with at least a name"));
        };
        let config: ExperimentConfig =
            serde_path_to_error::deserialize(exp).map_err(|e: serde_path_to_error::Error<toml::de::Error>| {
                let table = match e.path().to_string().as_str() {
                    "." => "experiment".to_string(),
                    p => format!("experiment.{p}"),
                };
                let inner = e.into_inner();
                match ScenarioError::unknown_key(&table, inner.message()) {
                    Some(unknown) => ExperimentError::UnknownKey(Box::new(unknown.located(text).in_file(file))),
                    None => ExperimentError::Parse { file: file.into(), message: format!("[experiment]: {inner}") },
                }
            })?;
        let e = Experiment { config, base, file: file.into() };
        e.validate(file).map_err(|e| match e {
            // A misspelt key of the base scenario, wherever the point is,
            // at its line in the file.
            ExperimentError::Point { file: f, point, error } if matches!(*error, ScenarioError::UnknownKey { .. }) => {
                match error.located(text) {
                    located @ ScenarioError::UnknownKey { location: Some(_), .. } => {
                        ExperimentError::UnknownKey(Box::new(located.in_file(file)))
                    }
                    other => ExperimentError::Point { file: f, point, error: Box::new(other) },
                }
            }
            other => other,
        })?;
        Ok(e)
    }

    /// Builds from a scenario and a configuration (for built-in experiments).
    pub fn new(base: &Scenario, config: ExperimentConfig) -> Experiment {
        let base = toml::Table::try_from(base).expect("a scenario serialises to a TOML table");
        let file = format!("built-in experiment {}", config.name);
        Experiment { config, base, file }
    }

    fn validate(&self, file: &str) -> Result<(), ExperimentError> {
        let c = &self.config;
        // NAME_PATTERN, which the schema shows.
        if c.name.is_empty() || !c.name.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_') {
            return Err(invalid(file, "experiment.name", &c.name, "a non-empty name of letters, digits, - and _"));
        }
        if !(1..=MAX_REPETITIONS).contains(&c.repetitions) {
            return Err(invalid(
                file,
                "experiment.repetitions",
                c.repetitions,
                format!("1 to {MAX_REPETITIONS} repetitions"),
            ));
        }
        for (i, a) in c.sweep.iter().enumerate() {
            if a.values.is_empty() {
                return Err(invalid(file, format!("experiment.sweep[{i}].values"), "[]", "at least one value"));
            }
            if c.sweep[..i].iter().any(|b| b.key == a.key) {
                return Err(invalid(file, format!("experiment.sweep[{i}].key"), &a.key, "a key not swept twice"));
            }
        }
        for (k, name) in [(&c.x_axis, "experiment.x_axis"), (&c.series_axis, "experiment.series_axis")] {
            if let Some(k) = k {
                if !c.sweep.iter().any(|a| &a.key == k) {
                    return Err(invalid(file, name, k, "the key of one of the sweep axes"));
                }
            }
        }
        if let Some([a, b]) = c.window_s {
            let longest = meshbed_sim::scenario::MAX_DURATION_S;
            if !(a >= 0.0 && b > a && b <= longest) {
                return Err(invalid(
                    file,
                    "experiment.window_s",
                    format!("[{a}, {b}]"),
                    format!("[from, to] with 0 <= from < to <= {longest} s"),
                ));
            }
        }
        if let Some(b) = &c.batch_means {
            b.validate(file)?;
        }
        if let Some(reference) = &c.compare_against {
            let values = c.compared_axis().and_then(|k| c.sweep.iter().find(|a| a.key == k)).map(|a| &a.values);
            let Some(values) = values.filter(|v| v.iter().any(|v| &super::value_text(v) == reference)) else {
                let expected = match (c.compared_axis(), values) {
                    (Some(k), Some(v)) => format!(
                        "a value of the `{k}` axis: one of {}",
                        v.iter().map(super::value_text).collect::<Vec<_>>().join(", ")
                    ),
                    _ => "a value of the series axis (set `series_axis`, or sweep `protocol`)".to_string(),
                };
                return Err(invalid(file, "experiment.compare_against", reference, expected));
            };
            if values.len() < 2 {
                return Err(invalid(
                    file,
                    "experiment.compare_against",
                    reference,
                    "an axis with another value to compare",
                ));
            }
        }
        // Every point must give a valid scenario whose flows have routes;
        // building them checks that. A sweep too large to build at once is
        // checked by `run` once --force allows it (see `plan`).
        let count = self.point_count(file)?;
        if count <= MAX_RUNS {
            for index in 0..count as usize {
                self.point(file, index)?;
            }
        }
        Ok(())
    }

    /// The experiment as a TOML file (scenario plus `[experiment]`), in
    /// reading order with every key under a comment saying what it is
    /// ([`Experiment::to_commented_toml`]).
    pub fn to_toml(&self) -> String {
        self.to_commented_toml()
    }
}
