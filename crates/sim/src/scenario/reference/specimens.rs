//! Fully populated scenarios: between them every key a scenario file can
//! have, every optional table, every kind of topology, routing, mobility,
//! propagation, fading, error model and flow. They give the reference its
//! reading order (the order in which the types write their keys), and its
//! tests the keys the parser accepts: each reads back as itself, and each
//! of its keys must be in the reference.
//!
//! They need not be valid scenarios (a radio with both a range and a
//! threshold, a walker beyond the topology): only what the file's types
//! read matters here; `Scenario::validate` judges values.

use super::super::*;
use crate::mobility::{MobilitySpec, ScriptedNode};
use meshbed_proto::Protocol;
use meshbed_radio::config::{BatchedCompletion, ErrorModel, MacConfig};
use meshbed_radio::{Fading, Floors, Propagation, RateControl};

/// One specimen per kind of the most varied table (six kinds of flow);
/// specimen i takes kind i (modulo their number) of every other table.
pub fn specimens() -> Vec<Scenario> {
    let flows = flows();
    (0..flows.len())
        .map(|i| Scenario {
            seed: 7,
            duration_s: 60.0,
            radio: radio(i),
            topology: pick(topologies(), i),
            routing: pick(routings(), i),
            flows: flows.clone(),
            mobility: Some(pick(mobilities(), i)),
            random_flows: Some(RandomFlows::like(3, Some([1.0, 5.0]), &flows[i])),
        })
        .collect()
}

/// The specimens as the types write them, and one with `[radio] preset`,
/// which is read but never written (a preset is expanded when read).
pub fn specimen_texts() -> Vec<String> {
    let mut texts: Vec<String> =
        specimens().iter().map(|s| toml::to_string(s).expect("a scenario serialises to TOML")).collect();
    let mut with_preset: toml_edit::DocumentMut = texts[0].parse().expect("TOML");
    let radio = with_preset["radio"].as_table_mut().expect("a specimen has a [radio] table");
    radio.insert("preset", toml_edit::value(meshbed_radio::config::PRESETS[0]));
    radio.sort_values_by(|a, _, b, _| (b.get() == "preset").cmp(&(a.get() == "preset")));
    texts.insert(0, with_preset.to_string());
    texts
}

fn pick<T: Clone>(kinds: Vec<T>, i: usize) -> T {
    kinds[i % kinds.len()].clone()
}

fn radio(i: usize) -> RadioConfig {
    RadioConfig {
        basic_rates_kbps: Some(vec![6_000]),
        propagation: pick(
            vec![
                Propagation::TwoRayGround { antenna_height_m: 1.5 },
                Propagation::Friis,
                Propagation::LogDistance { exponent: 3.0, reference_distance_m: 1.0, reference_loss_db: Some(47.0) },
            ],
            i,
        ),
        floors: Some(Floors { height_m: 3.5, loss_db: 16.0 }),
        tx_range_m: Some(250.0),
        cs_range_m: Some(550.0),
        rx_sensitivity_dbm: Some(-82.0),
        cs_threshold_dbm: Some(-90.0),
        shadowing_sigma_db: 4.0,
        fading: pick(vec![Fading::Rayleigh, Fading::Nakagami { m: 3.0 }, Fading::None], i),
        error_model: pick(vec![ErrorModel::Curve { db_per_decade: 2.0 }, ErrorModel::Threshold], i),
        sinr_threshold_db: [("24000".to_string(), 12.0)].into_iter().collect(),
        mac: MacConfig {
            rts_threshold_bytes: Some(0),
            cw_min: Some(15),
            cw_max: Some(1023),
            batched_completion: Some(BatchedCompletion { max_frames: 4 }),
            feedback_priority: true,
            rate_control: RateControl::Arf,
            ..MacConfig::default()
        },
        ..RadioConfig::default()
    }
}

fn topologies() -> Vec<Topology> {
    let node = |x_m| NodeSpec {
        tx_power_dbm: Some(15.0),
        data_rate_kbps: Some(12_000),
        rate_control: Some("minstrel".into()),
        floor: 1,
        ..NodeSpec::at(x_m, 0.0)
    };
    vec![
        Topology::Chain { nodes: 5, spacing_m: 200.0 },
        Topology::Grid { rows: 3, cols: 3, spacing_m: 200.0 },
        Topology::Explicit { nodes: vec![node(0.0), node(200.0), node(400.0)] },
        Topology::Random { nodes: 10, width_m: 600.0, height_m: 300.0 },
        Topology::Stack { flows: 3, row_spacing_m: 300.0, link_m: 200.0 },
    ]
}

fn routings() -> Vec<Routing> {
    vec![
        Routing::ShortestPath,
        Routing::Static { paths: vec![vec![0, 1, 2]] },
        Routing::dsr(),
        Routing::aodv(Some(-80.0)),
        Routing::Olsr { etx: true, link_layer_notification: true, control_priority: false },
    ]
}

fn mobilities() -> Vec<MobilitySpec> {
    vec![
        MobilitySpec::RandomWaypoint {
            width_m: Some(600.0),
            height_m: Some(300.0),
            min_speed_mps: 1.0,
            max_speed_mps: 5.0,
            pause_s: 2.0,
            warmup_s: 100.0,
        },
        MobilitySpec::Scripted { nodes: vec![ScriptedNode { node: 1, waypoints: vec![[10.0, 300.0, 0.0, 1.0]] }] },
        MobilitySpec::Walk { node: 2, from_x_m: 0.0, from_y_m: 0.0, start_s: 1.0, speed_mps: 1.0 },
        MobilitySpec::Ns2 { file: "scen.tcl".into() },
        MobilitySpec::Bonnmotion { file: "scen.movements".into(), dimensions: 3 },
    ]
}

/// Every kind of flow with every key it takes.
fn flows() -> Vec<FlowSpec> {
    let transport = |protocol, amount, settings, reader| {
        FlowKind::Transport(TransportFlow {
            protocol,
            amount,
            packet_bytes: 1_400,
            trace: true,
            batch_packets: Some(100),
            settings,
            reader,
        })
    };
    let atp = AtpOverrides {
        epoch_s: Some(0.04),
        kappa: Some(0.5),
        phi: Some(0.1),
        alpha: Some(0.75),
        beta: Some(0.75),
        eta: Some(3.0),
        idle_timeout_s: Some(10.0),
        route_failure: Some(RouteFailure::ProbeWhileSending),
        route_outage_timeout_s: Some(20.0),
        delay_read_interval_s: Some(0.01),
        sack_more_fraction: Some(0.5),
        missed_feedback_decrease: Some(0.5),
        relay_forwarding_delay_s: Some(0.0002),
    };
    let tcp = TcpOverrides {
        initial_cwnd_segments: Some(2),
        max_cwnd_segments: Some(64),
        min_rto_s: Some(0.2),
        delayed_acks: Some(true),
        delayed_ack_timeout_s: Some(0.04),
        idle_timeout_s: Some(10.0),
        pacing_v: Some(1.5),
        hystart: Some(false),
        rack_tlp: Some(false),
        prr: Some(true),
        relay_forwarding_delay_s: Some(0.0002),
        endpoint_delay_s: Some(0.0001),
    };
    let reader = SlowReader {
        rate_bps: 1_000_000,
        steps: vec![ReadRateStep { at_s: 5.0, rate_bps: 0 }],
        receive_buffer_bytes: Some(1 << 20),
    };
    let flow = |kind| FlowSpec { src: 0, dst: 1, start_s: 1.0, kind };
    vec![
        flow(FlowKind::Udp(UdpFlow { rate: UdpRate::Saturated, packet_bytes: 1_000, stop_s: Some(9.0) })),
        flow(FlowKind::Udp(UdpFlow { rate: UdpRate::Cbr { rate_kbps: 500.0 }, packet_bytes: 512, stop_s: None })),
        flow(FlowKind::Echo(EchoFlow { packet_bytes: 92, timeout_s: Some(2.0), stop_s: Some(9.0), trace: true })),
        flow(transport(
            Protocol::AtpAdaptive,
            Amount::Bytes(1_000_000),
            TransportSettings::Atp(Box::new(atp)),
            Some(reader),
        )),
        flow(transport(Protocol::TcpRenoPaced, Amount::Until { stop_s: 9.0 }, TransportSettings::Tcp(tcp), None)),
        flow(transport(
            Protocol::Mtl,
            Amount::Bytes(1_000_000),
            TransportSettings::Mtl(MtlOverrides {
                alpha: Some(0.5),
                send_buffer_bytes: Some(200_000),
                idle_timeout_s: Some(10.0),
            }),
            None,
        )),
        flow(FlowKind::KernelTcp(KernelTcpFlow {
            congestion_control: CongestionControl::new("bbr").expect("a kernel name"),
            amount: Amount::Bytes(1_000_000),
        })),
    ]
}
