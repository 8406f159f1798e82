//! The stack topology's sensitivity to its invented geometry (issue 15):
//! seed 001 §5.4 gives no distances, no transmit power for the experiment
//! and says only that the nodes were on the first floor (Fig. 5.8), so the
//! `stack` built-in's 30 m rows, 15 m links and 10 dBm are one plausible
//! point. These built-ins sweep around it, one factor pair at a time, with
//! the two protocols whose observations are at stake (TCP Tahoe and default
//! ATP), and [`report`] says at each point whether seed 001 §5.4's two
//! observations hold ([`crate::metrics::stack`]).
//!
//! * [`GEOMETRY`]: row spacing × link length at 10 dBm, MAC retries off (the
//!   thesis); [`GEOMETRY_RETRIES`]: the same with 802.11's default retries.
//!   (Two built-ins, not one with a retry axis: every run keeps its traces,
//!   and one sweep of both would pass the experiment layer's memory bound.)
//! * [`RADIO`]: transmit power × MAC retry limit, on the built-in's geometry.
//!
//! Every point keeps the `stack` built-in's flows (1 and 2 on the outer
//! rows, the middle flow 3 started last), its goodput window and its
//! seeds, so that points differ only by what the sweep changed.

use super::{ints, protocols, stack_scenario, STACK_WINDOW_S};
use crate::metrics::stack as observations;
use crate::run::{flow_goodput_bps, Results};
use crate::spec::{value_text, Axis, Experiment, ExperimentConfig};
use meshbed_proto::Protocol;
use toml::Value;

/// Row spacing × link length.
pub const GEOMETRY: &str = "stack-sensitivity-geometry";
/// Row spacing × link length, MAC retries at 802.11's default.
pub const GEOMETRY_RETRIES: &str = "stack-sensitivity-geometry-retries";
/// Transmit power × MAC retry limit.
pub const RADIO: &str = "stack-sensitivity-radio";

/// The protocols whose observations seed 001 §5.4 makes: Tahoe starves the
/// middle flow, default ATP gives it a fifth.
pub const PROTOCOLS: [Protocol; 2] = [Protocol::TcpTahoe, Protocol::AtpDefault];

/// Row spacings, m: from rows as close as the links are long to rows two
/// rows' carrier-sense reach apart (carrier sense at 10 dBm reaches about
/// 45 m with the indoor path loss, exponent 3.3).
pub const ROW_SPACINGS_M: [f64; 7] = [15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0];
/// Link lengths, m: from a link far above any rate's threshold to one near
/// 6 Mbit/s' reach at 10 dBm.
pub const LINKS_M: [f64; 5] = [5.0, 10.0, 15.0, 20.0, 25.0];
/// Transmit powers, dBm: the testbeds' cards run 2 to 17 dBm (seed 001
/// §5.1, §5.3, §5.5); 0 and 20 bracket them.
pub const TX_POWERS_DBM: [f64; 5] = [0.0, 5.0, 10.0, 15.0, 20.0];
/// MAC retransmissions: none, as the thesis ran its testbed (seed 001 §4.2),
/// a few, and 802.11's default (dot11ShortRetryLimit = 7 attempts, 6
/// retransmissions; with RTS/CTS off every data frame counts against the
/// short limit).
pub const RETRY_LIMITS: [i64; 4] = [0, 1, 3, 6];

/// Five repetitions: a stack run is 40 simulated seconds, about 0.2 s of
/// wall time on one core in a release build.
pub const REPETITIONS: u32 = 5;

fn floats(key: &str, v: &[f64]) -> Axis {
    Axis { key: key.into(), values: v.iter().map(|&x| Value::Float(x)).collect() }
}

fn sensitivity(name: &str, description: &str, sweep: Vec<Axis>) -> Experiment {
    let x_axis = sweep.first().map(|a| a.key.clone());
    Experiment::new(
        &stack_scenario(),
        ExperimentConfig {
            name: name.into(),
            description: description.into(),
            repetitions: REPETITIONS,
            sweep,
            x_axis,
            series_axis: Some("protocol".into()),
            window_s: Some(STACK_WINDOW_S),
            batch_means: None,
            compare_against: None,
        },
    )
}

/// Row spacing × link length at the built-in's 10 dBm, with MAC retries
/// at `retry_limit`.
pub fn geometry_experiment(name: &str, retry_limit: i64) -> Experiment {
    sensitivity(
        name,
        &format!("Seed 001 §5.4: do the stack's two observations (Tahoe starves the middle flow, default ATP gives it a fifth) hold for other row spacings and link lengths? MAC retry limit {retry_limit}."),
        vec![
            floats("topology.row_spacing_m", &ROW_SPACINGS_M),
            floats("topology.link_m", &LINKS_M),
            ints("radio.mac.short_retry_limit", [retry_limit]),
            protocols(&PROTOCOLS),
        ],
    )
}

/// Transmit power × MAC retry limit, on the built-in's 30 m rows and 15 m links.
pub fn radio_experiment(name: &str) -> Experiment {
    sensitivity(
        name,
        "Seed 001 §5.4: do the stack's two observations (Tahoe starves the middle flow, default ATP gives it a fifth) hold for other transmit powers and MAC retry limits?",
        vec![
            floats("radio.tx_power_dbm", &TX_POWERS_DBM),
            ints("radio.mac.short_retry_limit", RETRY_LIMITS),
            protocols(&PROTOCOLS),
        ],
    )
}

/// What one point of a stack sweep shows.
#[derive(Clone, Debug, PartialEq)]
pub struct PointObservation {
    /// The point's values on every axis but `protocol`, as `key=value`.
    pub setting: String,
    pub protocol: String,
    /// Each flow's goodput over the window, mean over runs, bit/s.
    pub per_flow_mean_bps: Vec<f64>,
    /// The middle flow's mean over the outer flows' (Table 5.1's way: a
    /// ratio of means over runs).
    pub middle_share: Option<f64>,
    /// Share of the window in which the middle flow's instantaneous goodput
    /// was below 1 kbit/s, mean over runs.
    pub middle_starved_time: f64,
    /// The same for the outer flows, mean over flows and runs.
    pub outer_starved_time: f64,
}

impl PointObservation {
    /// Whether seed 001 §5.4's observation about this point's protocol
    /// holds; `None` for a protocol the section makes none about.
    pub fn holds(&self) -> Option<bool> {
        match self.protocol.parse::<Protocol>().ok()? {
            Protocol::TcpTahoe => {
                Some(observations::middle_periodically_starved(self.middle_starved_time, self.outer_starved_time))
            }
            Protocol::AtpDefault => Some(self.middle_share.is_some_and(observations::middle_gets_a_fifth)),
            _ => None,
        }
    }
}

/// The instantaneous goodput of a traced flow (bit/s; 200 ms window, seed
/// 001 §5.1.1, sampled every 100 ms as the trace figures draw it) at the
/// samples in `(from_s, to_s]`.
fn instantaneous_bps(flow: &meshbed_sim::FlowResult, from_s: f64, to_s: f64) -> Vec<f64> {
    crate::figures::instantaneous_goodput(flow, to_s)
        .into_iter()
        .filter(|&(t_s, _)| t_s > from_s)
        .map(|(_, mbps)| mbps * 1e6)
        .collect()
}

/// Every point's observation, in the sweep's order.
pub fn observe(results: &Results) -> Vec<PointObservation> {
    let [from_s, to_s] = results.experiment.config.window_s.unwrap_or(STACK_WINDOW_S);
    results
        .points
        .iter()
        .map(|p| {
            let runs: Vec<_> = results.runs.iter().filter(|r| r.point == p.index).collect();
            let flows = p.scenario.flow_count();
            let mut per_flow_mean_bps = vec![0.0; flows];
            let (mut middle_starved, mut outer_starved) = (0.0, 0.0);
            for r in &runs {
                for (i, f) in r.report.flows.iter().enumerate() {
                    per_flow_mean_bps[i] += flow_goodput_bps(results, f) / runs.len() as f64;
                    let starved = observations::starved_time_share(&instantaneous_bps(f, from_s, to_s));
                    if i + 1 == flows {
                        middle_starved += starved / runs.len() as f64;
                    } else {
                        outer_starved += starved / (runs.len() * (flows - 1)) as f64;
                    }
                }
            }
            let setting = p
                .values
                .iter()
                .filter(|(k, _)| k != "protocol")
                .map(|(k, v)| format!("{}={}", k.rsplit('.').next().unwrap_or(k), value_text(v)))
                .collect::<Vec<_>>()
                .join(" ");
            PointObservation {
                setting,
                protocol: p.value("protocol").map_or_else(|| "-".into(), value_text),
                middle_share: observations::middle_share(&per_flow_mean_bps),
                per_flow_mean_bps,
                middle_starved_time: middle_starved,
                outer_starved_time: outer_starved,
            }
        })
        .collect()
}

/// A Markdown table: one row per setting, for each protocol the middle
/// flow's share of the outer flows' goodput and the share of time it
/// starved, whether the observation holds, and whether both do.
pub fn report(results: &Results) -> String {
    use std::fmt::Write;
    let obs = observe(results);
    let mut protocols: Vec<&str> = Vec::new();
    let mut settings: Vec<&str> = Vec::new();
    for o in &obs {
        if !protocols.contains(&o.protocol.as_str()) {
            protocols.push(&o.protocol);
        }
        if !settings.contains(&o.setting.as_str()) {
            settings.push(&o.setting);
        }
    }
    let yes_no = |h: Option<bool>| match h {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    };
    let mut s = String::new();
    let mut header = String::from("| setting |");
    let mut rule = String::from("|---|");
    for p in &protocols {
        let _ = write!(header, " {p}: middle/outer | {p}: middle starved | {p}: holds |");
        rule.push_str("---:|---:|:---:|");
    }
    let _ = writeln!(s, "{header} both |\n{rule}:---:|");
    for setting in settings {
        let _ = write!(s, "| {setting} |");
        let mut both = Some(true);
        let mut judged = 0;
        for p in &protocols {
            let Some(o) = obs.iter().find(|o| o.setting == setting && o.protocol == *p) else {
                s.push_str(" | | |");
                continue;
            };
            let share = o.middle_share.map_or("-".into(), |x| format!("{x:.2}"));
            let _ = write!(
                s,
                " {share} | {:.0}% (outer {:.0}%) | {} |",
                100.0 * o.middle_starved_time,
                100.0 * o.outer_starved_time,
                yes_no(o.holds())
            );
            if let Some(h) = o.holds() {
                judged += 1;
                both = both.map(|b| b && h);
            }
        }
        let _ = writeln!(s, " {} |", yes_no(both.filter(|_| judged == 2)));
    }
    s
}
