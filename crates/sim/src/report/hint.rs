//! Why a transfer delivered nothing, where the run can tell: its packets
//! found no route. Over OLSR that is a flow started before the protocol
//! had built its routes (a proactive protocol drops what it has no route
//! for; AODV and DSR hold packets while they discover one), and the
//! report says so with OLSR's own timing, instead of a bare "0 of N bytes
//! delivered".

use super::FlowResult;
use crate::scenario::{Routing, Scenario};
use crate::World;
use meshbed_core::Instant;
use meshbed_routing::olsr::Metric;

/// `r` with its transfer's error explaining an empty delivery by its
/// packets' lack of a route, if that is what happened; otherwise `r`.
pub(super) fn no_route(scenario: &Scenario, world: &World, mut r: FlowResult, end: Instant) -> FlowResult {
    let dropped = r.net.drops.no_route;
    let Some(t) = r.transfer.as_mut() else { return r };
    if t.completed || r.bytes_delivered > 0 || dropped == 0 {
        return r;
    }
    let (src, dst, start_s, end_s) = (r.src, r.dst, r.start_s, end.as_secs_f64());
    let route_at_end = world.router.dynamic.as_ref().and_then(|d| d.path_info(src, dst)).is_some();
    let why = match scenario.routing.olsr_config() {
        Some(olsr) => {
            let s = |d: meshbed_core::Duration| d.as_secs_f64();
            let metric = match olsr.metric {
                Metric::Etx { probe_interval, window } => format!(
                    ", and with ETX once each link's probes (every {} s, over a {} s window) have measured it",
                    s(probe_interval),
                    s(window)
                ),
                Metric::HopCount => String::new(),
            };
            let routing = format!(
                "OLSR builds its routes as its HELLO messages (every {} s) and TC messages (every {} s) spread through the network{metric} (RFC 3626 §18.2)",
                s(olsr.hello_interval),
                s(olsr.tc_interval)
            );
            if route_at_end {
                format!(
                    "no route to node {dst} in OLSR's table when the flow started at {start_s} s ({dropped} packets dropped for want of one): {routing}; start the flow later (seed 004's experiments start theirs at 30 s)"
                )
            } else {
                format!(
                    "no route from node {src} to node {dst} in OLSR's table from the flow's start at {start_s} s to the end of the run at {end_s} s ({dropped} packets dropped for want of one): {routing}; start the flow later and run longer (seed 004's experiments start theirs at 30 s)"
                )
            }
        }
        None if matches!(scenario.routing, Routing::ShortestPath | Routing::Static { .. }) => return r,
        None => format!("{dropped} of its packets were dropped for want of a route to node {dst}"),
    };
    t.error = Some(match t.error.take() {
        Some(e) => format!("{e}; {why}"),
        None => why,
    });
    r
}
