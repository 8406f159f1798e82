//! The caption under a figure: how many repetitions with which seeds, the
//! settings every point of the figure shares (the swept ones are on the
//! axes and in the legend), and what the bars mean. A reader of a paper
//! asks these before reading a curve.

use crate::run::Results;
use meshbed_radio::{Fading, Propagation, RadioConfig};
use meshbed_sim::scenario::{Amount, FlowKind, Routing, Topology, UdpRate};
use meshbed_sim::Scenario;
use std::collections::BTreeSet;

/// What the interval bars of the summary figures are.
pub const CI_BARS: &str =
    "Bars: 95% confidence interval of the mean over the repetitions (Student's t), computed in linear space.";

/// `seed 3`, `seeds 1–10`, or a list (`seeds 1, 4, 9`) when they are not
/// consecutive; long lists shortened to their ends.
pub fn seeds_text(seeds: &BTreeSet<u64>) -> String {
    let v: Vec<u64> = seeds.iter().copied().collect();
    match v.as_slice() {
        [] => "no runs".into(),
        [s] => format!("seed {s}"),
        [first, .., last] if last - first + 1 == v.len() as u64 => format!("seeds {first}\u{2013}{last}"),
        [first, second, .., last] if v.len() > 6 => format!("{} seeds: {first}, {second}, \u{2026}, {last}", v.len()),
        _ => format!("seeds {}", v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// "n = 10 repetitions per point (seeds 1–10: repetition r runs with the
/// point's seed + r)", over the runs of `points`.
pub fn sample_line(results: &Results, points: &[usize]) -> String {
    let per_point: BTreeSet<usize> =
        points.iter().map(|&p| results.runs.iter().filter(|r| r.point == p).count()).collect();
    let seeds: BTreeSet<u64> = results.runs.iter().filter(|r| points.contains(&r.point)).map(|r| r.seed).collect();
    let n = match (per_point.first(), per_point.last()) {
        (Some(a), Some(b)) if a == b => format!("n = {a}"),
        (Some(a), Some(b)) => format!("n = {a}\u{2013}{b}"),
        _ => "n = 0".into(),
    };
    let noun = if per_point.last() == Some(&1) { "repetition" } else { "repetitions" };
    format!("{n} {noun} per point ({}; repetition r runs with its point's seed + r).", seeds_text(&seeds))
}

/// The trace figure of one run: which repetition and seed.
pub fn run_line(results: &Results, point: usize, rep: u32) -> String {
    let seed = results.runs.iter().find(|r| r.point == point && r.rep == rep).map(|r| r.seed);
    let seed = seed.map_or(String::new(), |s| format!(", seed {s}"));
    let of = results.runs.iter().filter(|r| r.point == point).count();
    format!("One run: repetition {rep} of {of}{seed}.")
}

/// The kinds of setting a caption names, in the order it names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Setting {
    Phy,
    Retries,
    RtsCts,
    Channel,
    Topology,
    Nodes,
    Routing,
    Mobility,
    Flows,
    Traffic,
    Duration,
}

fn number(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn radio_settings(r: &RadioConfig) -> Vec<(Setting, String)> {
    let standard = serde_json::to_value(r.standard).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
    let mut phy = format!("{standard} at {} Mbit/s", number(f64::from(r.data_rate_kbps) / 1e3));
    if !r.mac.rate_control.is_fixed() {
        phy = format!("{standard}, {} rate control", r.mac.rate_control.name());
    }
    let (short, long) = (r.mac.short_retry_limit, r.mac.long_retry_limit);
    let retries = if short == 0 && long == 0 {
        "MAC retries off".to_string()
    } else {
        format!("MAC retry limits {short}/{long} (short/long)")
    };
    let rts = match r.mac.rts_threshold_bytes {
        None => "no RTS/CTS".to_string(),
        Some(0) => "RTS/CTS on".to_string(),
        Some(b) => format!("RTS/CTS above {b} B"),
    };
    let path_loss = match &r.propagation {
        Propagation::Friis => "free-space path loss".to_string(),
        Propagation::TwoRayGround { .. } => "two-ray ground path loss".to_string(),
        Propagation::LogDistance { exponent, .. } => format!("path-loss exponent {}", number(*exponent)),
    };
    let fading = match r.fading {
        Fading::None => None,
        Fading::Rayleigh => Some("Rayleigh fading".to_string()),
        Fading::Nakagami { m } => Some(format!("Nakagami m = {} fading", number(m))),
    };
    let shadowing =
        (r.shadowing_sigma_db > 0.0).then(|| format!("shadowing \u{3c3} = {} dB", number(r.shadowing_sigma_db)));
    let channel = [Some(format!("{} dBm", number(r.tx_power_dbm))), Some(path_loss), fading, shadowing];
    vec![
        (Setting::Phy, phy),
        (Setting::Retries, retries),
        (Setting::RtsCts, rts),
        (Setting::Channel, channel.into_iter().flatten().collect::<Vec<_>>().join(", ")),
    ]
}

/// The settings of one scenario a caption may name.
fn settings(s: &Scenario) -> Vec<(Setting, String)> {
    let mut out = radio_settings(&s.radio);
    let (topology, nodes) = match &s.topology {
        Topology::Chain { nodes, spacing_m } => (format!("chain, {} m apart", number(*spacing_m)), *nodes),
        Topology::Grid { rows, cols, spacing_m } => {
            (format!("{rows}\u{d7}{cols} grid, {} m apart", number(*spacing_m)), rows * cols)
        }
        Topology::Explicit { nodes } => ("placed nodes".to_string(), nodes.len() as u32),
        Topology::Random { nodes, width_m, height_m } => {
            (format!("random placement in {} \u{d7} {} m", number(*width_m), number(*height_m)), *nodes)
        }
        Topology::Stack { flows, row_spacing_m, link_m } => (
            format!("stack of {flows} {} m links, rows {} m apart", number(*link_m), number(*row_spacing_m)),
            flows * 2,
        ),
    };
    out.push((Setting::Topology, topology));
    out.push((Setting::Nodes, format!("{nodes} nodes")));
    let routing = match &s.routing {
        Routing::Olsr { etx: true, .. } => "OLSR-ETX routing".to_string(),
        Routing::ShortestPath => "shortest-path routes".to_string(),
        Routing::Static { .. } => "static routes".to_string(),
        other => format!("{} routing", other.kind_name().to_uppercase()),
    };
    out.push((Setting::Routing, routing));
    if let Some(m) = &s.mobility {
        let model = serde_json::to_value(m).ok().and_then(|v| v.get("model")?.as_str().map(String::from));
        out.push((Setting::Mobility, format!("mobility: {}", model.unwrap_or_else(|| "moving nodes".into()))));
    }
    let count =
        s.random_flows.as_ref().map_or(s.flows.len(), |r| (r.count as usize + s.flows.len()).saturating_sub(r.drawn));
    out.push((Setting::Flows, if count == 1 { "1 flow".to_string() } else { format!("{count} flows") }));
    let traffic: BTreeSet<String> = s.flows.iter().map(|f| traffic(&f.kind)).collect();
    if traffic.len() == 1 {
        out.extend(traffic.into_iter().map(|t| (Setting::Traffic, t)));
    }
    out.push((Setting::Duration, format!("runs of at most {} s", number(s.duration_s))));
    out
}

/// What a flow sends, in a caption's words.
fn traffic(kind: &FlowKind) -> String {
    let amount = |a: &Amount| match a {
        Amount::Bytes(b) if b % 1_000_000 == 0 => format!("{} MB transfers", b / 1_000_000),
        Amount::Bytes(b) => format!("{} kB transfers", number(*b as f64 / 1e3)),
        Amount::Until { stop_s } => format!("backlogged until {} s", number(*stop_s)),
    };
    match kind {
        FlowKind::Transport(t) => format!("{}, {} B packets", amount(&t.amount), t.packet_bytes),
        FlowKind::Udp(u) => match u.rate {
            UdpRate::Saturated => format!("saturated UDP, {} B packets", u.packet_bytes),
            UdpRate::Cbr { rate_kbps } => format!("UDP at {} kbit/s, {} B packets", number(rate_kbps), u.packet_bytes),
        },
        FlowKind::Echo(e) => format!("echo requests of {} B", e.packet_bytes),
        FlowKind::KernelTcp(_) => "kernel TCP transfers".to_string(),
    }
}

/// "Settings: …" with the settings every one of `points` shares, `None`
/// if they share none.
pub fn settings_line(results: &Results, points: &[usize]) -> Option<String> {
    let per_point: Vec<Vec<(Setting, String)>> =
        points.iter().filter_map(|&p| results.points.get(p)).map(|p| settings(&p.scenario)).collect();
    let first = per_point.first()?;
    let shared: Vec<&str> = first
        .iter()
        .filter(|item| per_point.iter().all(|other| other.contains(item)))
        .map(|(_, text)| text.as_str())
        .collect();
    (!shared.is_empty()).then(|| format!("Settings: {}.", shared.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_read_as_a_range_when_consecutive() {
        let set = |v: &[u64]| v.iter().copied().collect::<BTreeSet<u64>>();
        assert_eq!(seeds_text(&set(&[])), "no runs");
        assert_eq!(seeds_text(&set(&[7])), "seed 7");
        assert_eq!(seeds_text(&set(&[1, 2])), "seeds 1\u{2013}2");
        assert_eq!(seeds_text(&set(&[3, 1, 2, 4])), "seeds 1\u{2013}4");
        assert_eq!(seeds_text(&set(&[1, 4, 9])), "seeds 1, 4, 9");
        assert_eq!(seeds_text(&set(&[1, 3, 5, 7, 9, 11, 13])), "7 seeds: 1, 3, \u{2026}, 13");
    }

    #[test]
    fn the_settings_name_the_testbed_and_retries_off() {
        let e = crate::builtin::get("testbed-a-single").expect("built-in");
        let points = e.points("testbed-a-single").expect("valid");
        let s: Vec<String> = settings(&points[0].scenario).into_iter().map(|(_, t)| t).collect();
        for expected in ["802.11a at 24 Mbit/s", "MAC retries off", "chain, 13 m apart", "static routes", "1 flow"] {
            assert!(s.iter().any(|t| t == expected), "{expected} in {s:?}");
        }
        assert!(s.iter().any(|t| t == "2 MB transfers, 1500 B packets"), "{s:?}");
        assert!(s.iter().any(|t| t.contains("Nakagami m = 2 fading")), "{s:?}");
    }
}
