//! The one network builder: a scenario's radio model, node positions (at
//! time zero, from the trajectories of moving nodes) and route table, with
//! the checks that refuse a scenario that cannot carry its flows. The
//! simulator ([`crate::Sim`]) and the emulator (`emu::traffic::build_medium`)
//! both build their network here.

use crate::routing::RouteTable;
use crate::{mobility, scenario, Packet, Scenario, ScenarioError};
use meshbed_core::Instant;
use meshbed_radio::{Medium, NodeId, Payload};

/// Checks what [`Sim::new`] checks beyond [`Scenario::validate`]: that the
/// routes carry every flow. Costs one radio model and route table, not a run.
pub fn check_routes(scenario: &Scenario) -> Result<(), ScenarioError> {
    let scenario = &*scenario.with_random_flows_drawn()?;
    build_network::<Packet>(scenario, !scenario.routing.is_dynamic()).map(|_| ())
}

/// The radio model and the routes of a valid scenario, with every flow
/// routable: a scenario that cannot carry a flow is refused here rather than
/// reported as a flow with zero goodput. The one network builder: the
/// simulator's medium carries [`Packet`]s, the emulator's Ethernet frames,
/// and both start from the same positions, trajectories and route checks.
pub fn build_network<P: Payload>(
    scenario: &Scenario,
    refuse_unroutable: bool,
) -> Result<(Medium<P>, RouteTable), ScenarioError> {
    scenario.validate()?;
    let radios = scenario.node_radios();
    let invalid = |key: String, value: String, expected: String| -> ScenarioError {
        meshbed_core::InvalidValue::new(key, value, expected).into()
    };
    // Moving nodes: the radio model and the routes start from where the
    // trajectories have the nodes at time zero (a movement file's own start).
    let mut radios = radios;
    let paths = match &scenario.mobility {
        Some(spec) => {
            let starts: Vec<_> = radios.iter().map(|r| meshbed_mobility::Point::new(r.x_m, r.y_m)).collect();
            let paths = mobility::trajectories(scenario, spec, &starts)?;
            for (r, t) in radios.iter_mut().zip(&paths) {
                let p = t.position(Instant::ZERO);
                (r.x_m, r.y_m) = (p.x_m, p.y_m);
            }
            Some(paths)
        }
        None => None,
    };
    let mut medium = Medium::new(&scenario.radio, &radios, scenario.seed).map_err(ScenarioError::from)?;
    if let Some(paths) = paths {
        medium.set_trajectories(paths, scenario.seed).map_err(ScenarioError::from)?;
    }
    let distance = |a: NodeId, b: NodeId| {
        let (a, b) = (&radios[a as usize], &radios[b as usize]);
        libm::hypot(a.x_m - b.x_m, a.y_m - b.y_m)
    };
    if let scenario::Routing::Static { paths } = &scenario.routing {
        for (p, path) in paths.iter().enumerate() {
            for hop in path.windows(2) {
                let (a, b) = (hop[0], hop[1]);
                if !(medium.can_decode(a, b) && medium.can_decode(b, a)) {
                    return Err(invalid(
                        format!("routing.paths[{p}]"),
                        format!("{path:?}"),
                        format!(
                            "consecutive nodes that decode each other's frames: nodes {a} and {b} are {:.0} m apart, out of range",
                            distance(a, b)
                        ),
                    ));
                }
            }
        }
    }
    let routes = RouteTable::build(&scenario.routing, &medium);
    // Shadowing draws each link's loss from the seed: another seed may connect.
    let shadowed = if scenario.radio.shadowing_sigma_db > 0.0 {
        format!(
            "; with radio.shadowing_sigma_db = {} the links depend on the seed, here {}",
            scenario.radio.shadowing_sigma_db, scenario.seed
        )
    } else {
        String::new()
    };
    if !refuse_unroutable {
        return Ok((medium, routes));
    }
    for (i, f) in scenario.flows.iter().enumerate() {
        // Transport and kernel TCP flows need the way back too, for
        // feedback and ACKs.
        let ends = if f.needs_route_back() { vec![(f.src, f.dst), (f.dst, f.src)] } else { vec![(f.src, f.dst)] };
        for (from, to) in ends {
            if routes.hop_count(from, to).is_some() {
                continue;
            }
            let reached: Vec<String> = (0..medium.node_count() as NodeId)
                .filter(|&d| d != from && routes.hop_count(from, d).is_some())
                .map(|d| d.to_string())
                .collect();
            let reached = match reached.len() {
                0 => "no other node".to_string(),
                1..=8 => format!("only node(s) {}", reached.join(", ")),
                k => format!("only {k} nodes"),
            };
            let (end, value) = if to == f.dst { ("dst", to) } else { ("src", to) };
            return Err(invalid(
                format!("flows[{i}].{end}"),
                value.to_string(),
                format!(
                    "a node with a route from node {from} ({} m away): the routes reach {reached} ({})",
                    distance(from, to).round(),
                    match scenario.routing {
                        scenario::Routing::ShortestPath
                        | scenario::Routing::Dsr { .. }
                        | scenario::Routing::Aodv { .. }
                        | scenario::Routing::Olsr { .. } =>
                            "shortest-path routing uses links whose ends decode each other",
                        scenario::Routing::Static { .. } => "routing.paths install the only routes",
                    }
                ) + &shadowed,
            ));
        }
    }
    Ok((medium, routes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sim;
    use scenario::{Routing, Topology};

    fn error_of(s: &Scenario) -> String {
        Sim::new(s).err().expect("refused").to_string()
    }

    #[test]
    fn a_flow_without_a_route_is_refused_naming_the_flow_and_the_nodes() {
        // 5000 m apart: no node hears another.
        let far = Scenario::chain(4, 5000.0, 1.0);
        let e = error_of(&far);
        assert!(e.starts_with("flows[0].dst = 4: expected a node with a route from node 0"), "{e}");
        assert!(e.contains("20000 m away") && e.contains("no other node"), "{e}");
        assert!(check_routes(&far).is_err());
        // In range, the same chain runs.
        assert!(check_routes(&Scenario::chain(4, 200.0, 1.0)).is_ok());

        // A static path through nodes out of range of each other.
        let mut s = Scenario::chain(2, 200.0, 1.0);
        s.topology = Topology::Explicit {
            nodes: [(0.0, 0.0), (200.0, 0.0), (5200.0, 0.0)]
                .map(|(x_m, y_m)| scenario::NodeSpec::at(x_m, y_m))
                .to_vec(),
        };
        s.routing = Routing::Static { paths: vec![vec![0, 1, 2]] };
        let e = error_of(&s);
        assert!(e.starts_with("routing.paths[0] = [0, 1, 2]: expected"), "{e}");
        assert!(e.contains("nodes 1 and 2 are 5000 m apart"), "{e}");

        // A static path that does not cover a flow.
        let mut s = Scenario::chain(2, 200.0, 1.0);
        s.routing = Routing::Static { paths: vec![vec![0, 1]] };
        let e = error_of(&s);
        assert!(e.starts_with("flows[0].dst = 2") && e.contains("only node(s) 1"), "{e}");
    }
}
