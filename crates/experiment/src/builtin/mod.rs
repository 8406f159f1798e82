//! Built-in experiments, runnable by name, reproducing the source documents'
//! experiments (seed 001 ch. 5, seed 000 §V, seed 002 §5, seed 003 §5–§6 in
//! [`seed003`]).
//!
//! The two testbeds are modelled, not copied: the thesis gives the data rate,
//! the transmit power, MAC retries off and RTS/CTS off (seed 001 §4.2, §5.1,
//! §5.3), but not the building's path loss. meshbed uses an indoor
//! log-distance path loss (exponent 3.3 — an office with walls):
//!
//! * **Testbed A** (lossy, seed 001 §5.1: 24 Mbit/s, 10 dBm): nodes 13 m
//!   apart; each hop's mean SINR is a few dB above what 24 Mbit/s needs and
//!   Nakagami m = 2 fading takes frames below it: 6.7% of frames are lost on
//!   a single link with MAC retries off (the `testbed_link_quality` test).
//! * **Testbed B** (reliable, seed 001 §5.3: 6 Mbit/s, 17 dBm, "sparser
//!   distribution of nodes"): nodes 20 m apart, milder fading (m = 3): far
//!   under 1% of frames lost on a link.
//!
//! Carrier sense reaches about two hops (−90 dBm), so a chain has both
//! contention with its own neighbouring hops and hidden nodes three hops
//! apart, as a multi-hop testbed does.

use crate::spec::{Axis, Experiment, ExperimentConfig};
use meshbed_proto::Protocol;
use meshbed_radio::{ErrorModel, Fading, Propagation, RadioConfig, Standard};
use meshbed_sim::mobility::MobilitySpec;
use meshbed_sim::scenario::{
    Amount, AtpOverrides, FlowKind, FlowSpec, RandomFlows, Routing, Scenario, Topology, TransportFlow,
    TransportSettings,
};
use toml::Value;

pub mod building;
pub mod modern_tcp;
pub mod seed003;
pub mod seed004;
pub mod stack_sensitivity;

/// The names, in the order `meshbed experiment list` shows them.
pub const NAMES: [&str; 31] = [
    "testbed-a-single",
    "testbed-a-two",
    "testbed-a-five",
    "testbed-b-single",
    "testbed-b-two",
    "testbed-b-five",
    "stack",
    "testbed-random-transfer",
    "testbed-random-streaming",
    "atp-paper-two-flows",
    "atp-paper-mobile",
    "atp-paper-mobile-aodv",
    "atp-paper-mobile-traces",
    "seed003-chain",
    "seed003-walk",
    "seed003-discovery",
    "seed003-rtt",
    "seed003-pacing-sim",
    "seed003-pacing-testbed",
    "seed004-chain",
    "seed004-parallel",
    "seed004-grid",
    "testbed-a-feedback",
    "testbed-a-batching",
    "stack-sensitivity-geometry",
    "stack-sensitivity-geometry-retries",
    "stack-sensitivity-radio",
    modern_tcp::A_SINGLE,
    modern_tcp::A_FIVE,
    modern_tcp::B_SINGLE,
    modern_tcp::B_FIVE,
];

/// The single-flow comparison on testbed A: what `meshbed` runs by default.
pub const DEFAULT: &str = "testbed-a-single";

/// The ATP paper's packets: 512 bytes of data (seed 002 §5.1: "The packets
/// generated are of size 512 bytes"), plus meshbed's 36-byte transport
/// header and 28 bytes of IP and UDP.
pub const ATP_PAPER_PACKET_BYTES: u32 = 512 + 36 + 28;

/// The indoor radio shared by both testbeds.
fn indoor_radio(rate_kbps: u32, tx_power_dbm: f64, nakagami_m: f64) -> RadioConfig {
    let mut r = RadioConfig {
        standard: Standard::A,
        data_rate_kbps: rate_kbps,
        tx_power_dbm,
        propagation: Propagation::LogDistance { exponent: 3.3, reference_distance_m: 1.0, reference_loss_db: None },
        tx_range_m: None,
        cs_range_m: None,
        rx_sensitivity_dbm: Some(-88.0),
        cs_threshold_dbm: Some(-90.0),
        fading: Fading::Nakagami { m: nakagami_m },
        error_model: ErrorModel::default(),
        ..RadioConfig::default()
    };
    // Seed 001 §4.2: "RTS/CTS is disabled and the MAC retransmission retry is
    // set to zero".
    r.mac.short_retry_limit = 0;
    r.mac.long_retry_limit = 0;
    r.mac.rts_threshold_bytes = None;
    r
}

pub fn testbed_a_radio() -> RadioConfig {
    indoor_radio(24_000, 10.0, 2.0)
}

pub fn testbed_b_radio() -> RadioConfig {
    indoor_radio(6_000, 17.0, 3.0)
}

/// Node spacing of the testbed chains.
pub const TESTBED_A_SPACING_M: f64 = 13.0;
pub const TESTBED_B_SPACING_M: f64 = 20.0;

fn protocols(list: &[Protocol]) -> Axis {
    Axis { key: "protocol".into(), values: list.iter().map(|p| Value::String(p.name().into())).collect() }
}

fn ints(key: &str, v: impl IntoIterator<Item = i64>) -> Axis {
    Axis { key: key.into(), values: v.into_iter().map(Value::Integer).collect() }
}

/// The protocols the thesis compares, plus Reno and NewReno: every protocol
/// but TCP-ELFN, which needs routing that reacts (these built-ins' routes
/// are static), the paced TCPs of seed 003 §6, run by their own study,
/// MTL (seed 004), whose experiments are its own (issue 14), and the TCP
/// of today (CUBIC), which these 2003 comparisons did not have and which
/// is compared in its own study (issue 27).
pub fn compared() -> Vec<Protocol> {
    use Protocol::*;
    vec![AtpDefault, AtpAggressive, AtpAdaptive, TcpTahoe, TcpReno, TcpNewReno]
}

/// A 6-hop static chain on a testbed with `flows` 2 MB transfers from the
/// first to the last node (seed 001 §4.2: "we transfer a 2MB text file").
fn testbed_chain(radio: RadioConfig, spacing_m: f64, flows: u32) -> Scenario {
    let mut flow = FlowSpec::transfer(0, 6, Protocol::AtpDefault, 2_000_000);
    if let Some(t) = flow.transport_mut() {
        t.trace = flows == 1;
    }
    Scenario {
        seed: 1,
        duration_s: 300.0,
        radio,
        topology: Topology::Chain { nodes: 7, spacing_m },
        routing: Routing::Static { paths: vec![(0..7).collect()] },
        flows: vec![flow; flows as usize],
        mobility: None,
        random_flows: None,
    }
}

fn testbed(name: &str, description: &str, radio: RadioConfig, flows: u32) -> Experiment {
    let spacing_m = if radio.data_rate_kbps == 6_000 { TESTBED_B_SPACING_M } else { TESTBED_A_SPACING_M };
    Experiment::new(
        &testbed_chain(radio, spacing_m, flows),
        ExperimentConfig {
            name: name.into(),
            description: description.into(),
            repetitions: 10,
            sweep: vec![ints("hops", 1..=6), protocols(&compared())],
            x_axis: Some("hops".into()),
            series_axis: Some("protocol".into()),
            window_s: None,
            batch_means: None,
            compare_against: None,
        },
    )
}

/// The stack topology (seed 001 §5.4, Fig. 5.8/5.9, Table 5.1): three
/// one-hop flows stacked on testbed B's radio, but at 10 dBm so that carrier
/// sense reaches one row (30 m) and not two (60 m): the middle flow senses
/// both outer ones, which cannot sense each other. Flows start 3 s apart;
/// flow 3 is the middle one, as in the thesis. Goodput is counted while all
/// three are active (6 s to 40 s).
fn stack_scenario() -> Scenario {
    let flow = |src: u32, dst: u32, start_s: f64| FlowSpec {
        src,
        dst,
        start_s,
        kind: FlowKind::Transport(TransportFlow {
            trace: true,
            ..TransportFlow::new(Protocol::TcpTahoe, Amount::Until { stop_s: 40.0 })
        }),
    };
    Scenario {
        seed: 1,
        duration_s: 40.0,
        radio: RadioConfig { tx_power_dbm: STACK_TX_POWER_DBM, ..testbed_b_radio() },
        // Senders at x = 0, receivers at x = 15 m; rows at y = 0, 60, 30 m.
        topology: Topology::Stack { flows: 3, row_spacing_m: STACK_ROW_SPACING_M, link_m: STACK_LINK_M },
        routing: Routing::ShortestPath,
        flows: vec![flow(0, 1, 0.0), flow(2, 3, 3.0), flow(4, 5, 6.0)],
        mobility: None,
        random_flows: None,
    }
}

/// The `stack` built-in's geometry and power (invented: the thesis gives
/// neither, seed 001 §5.4; docs/PROTOCOLS.md).
pub const STACK_ROW_SPACING_M: f64 = 30.0;
pub const STACK_LINK_M: f64 = 15.0;
pub const STACK_TX_POWER_DBM: f64 = 10.0;

/// The goodput window of the stack experiments: while all three flows are
/// active (seed 001 §5.4: Table 5.1 "when all three flows are active").
pub const STACK_WINDOW_S: [f64; 2] = [6.0, 40.0];

fn stack() -> Experiment {
    Experiment::new(
        &stack_scenario(),
        ExperimentConfig {
            name: "stack".into(),
            description: "Seed 001 §5.4: three stacked flows started 3 s apart on testbed B; flow 3 is in the middle."
                .into(),
            repetitions: 10,
            sweep: vec![protocols(&compared())],
            x_axis: None,
            series_axis: Some("protocol".into()),
            window_s: Some(STACK_WINDOW_S),
            batch_means: None,
            compare_against: None,
        },
    )
}

/// Seed 002 §5.2.1 Fig. 10: a five-hop chain, F1 in [0, 90] s, F2 in
/// [30, 120] s, in ns-2's setting as the paper ran it (§5.1): 802.11b at
/// 2 Mbit/s, 250 m / 550 m, 200 m spacing, RTS/CTS for every data frame,
/// 512-byte packets (576-byte IP packets with meshbed's 36-byte transport
/// header), and ATP with β = 0.75 (§4.2.1: "We use a value of 0.75 for β in
/// all our simulations").
fn atp_paper_two_flows() -> Experiment {
    let radio = RadioConfig::ns2();
    let flow = |start_s: f64, stop_s: f64| FlowSpec {
        src: 0,
        dst: 5,
        start_s,
        kind: FlowKind::Transport(TransportFlow {
            trace: true,
            packet_bytes: ATP_PAPER_PACKET_BYTES,
            settings: TransportSettings::Atp(Box::new(AtpOverrides { beta: Some(0.75), ..AtpOverrides::default() })),
            ..TransportFlow::new(Protocol::AtpDefault, Amount::Until { stop_s })
        }),
    };
    let scenario = Scenario {
        seed: 1,
        duration_s: 120.0,
        radio,
        topology: Topology::Chain { nodes: 6, spacing_m: 200.0 },
        routing: Routing::ShortestPath,
        flows: vec![flow(0.0, 90.0), flow(30.0, 120.0)],
        mobility: None,
        random_flows: None,
    };
    Experiment::new(
        &scenario,
        ExperimentConfig {
            name: "atp-paper-two-flows".into(),
            description: "Seed 002 §5.2.1 Fig. 10: F1 in [0, 90] s and F2 in [30, 120] s on a 5-hop chain, ns-2's 802.11 (2 Mbit/s, RTS/CTS), 512-byte packets.".into(),
            repetitions: 10,
            sweep: vec![protocols(&compared())],
            x_axis: None,
            series_axis: Some("protocol".into()),
            window_s: Some([30.0, 90.0]),
            batch_means: None,
            compare_against: None,
        },
    )
}

/// The transports of the ATP paper's mobile evaluation (seed 002 §5): ATP
/// with the paper's parameters, default TCP (NewReno, §2: "We use
/// TCP-NewReno for all our simulations") and TCP-ELFN, plus the testbed
/// study's adaptive and aggressive ATP, never run on this network before.
pub const ATP_PAPER_MOBILE: [Protocol; 5] = [
    Protocol::AtpDefault,
    Protocol::AtpAdaptive,
    Protocol::AtpAggressive,
    Protocol::TcpNewReno,
    Protocol::TcpNewRenoElfn,
];

/// Seed 002 §5.1–5.2 (Figs. 11, 12): 100 nodes placed at random in
/// 1000 m × 1000 m, random waypoint at a maximum speed of 1, 10 or 20 m/s,
/// 1, 5, 10 or 25 flows between random pairs (the same pairs for every
/// protocol under one seed), each a backlogged sender for the whole 100 s,
/// 512-byte packets, ns-2's 802.11, with `routing` (DSR in the paper).
/// ATP runs with β = 0.75 (§4.2.1; α = 0.75, κ = 1/k = 0.2 with k = 5,
/// E = 1 s and η = 3 are the default preset already). Speeds are uniform in
/// [0.1 m/s, max] with no pause: the paper gives neither a minimum speed nor
/// a pause time (docs/PROTOCOLS.md).
fn atp_paper_mobile(name: &str, routing: Routing) -> Experiment {
    let backlogged = FlowSpec {
        kind: FlowKind::Transport(TransportFlow {
            packet_bytes: ATP_PAPER_PACKET_BYTES,
            // Both transports give up only after 100 s of silence (TCP's R2,
            // RFC 1122 §4.2.3.5, its default): a partition ATP's 10 s default
            // would end is survived by TCP, and the comparison would be of
            // give-up policies.
            settings: TransportSettings::Atp(Box::new(AtpOverrides {
                beta: Some(0.75),
                idle_timeout_s: Some(100.0),
                ..AtpOverrides::default()
            })),
            ..TransportFlow::new(Protocol::AtpDefault, Amount::Until { stop_s: 100.0 })
        }),
        ..FlowSpec::default()
    };
    let routing_name = if matches!(routing, Routing::Aodv { .. }) { "AODV" } else { "DSR" };
    let scenario = Scenario {
        seed: 1,
        duration_s: 100.0,
        radio: RadioConfig::ns2(),
        topology: Topology::Random { nodes: 100, width_m: 1000.0, height_m: 1000.0 },
        routing,
        flows: Vec::new(),
        mobility: Some(MobilitySpec::random_waypoint(0.1, 20.0, 0.0)),
        // Started within the first second, so that they do not all open at
        // the same instant.
        random_flows: Some(RandomFlows::like(1, Some([0.0, 1.0]), &backlogged)),
    };
    Experiment::new(
        &scenario,
        ExperimentConfig {
            name: name.into(),
            description: format!(
                "Seed 002 §5.1-5.2 Figs. 11-12: 100 moving nodes in 1000 m x 1000 m over {routing_name}, 1-25 backlogged flows between random pairs, max speed 1/10/20 m/s, 100 s."
            ),
            // The paper averages 10 seeds; 5 keep the built-in near ten
            // minutes on 2 cores (`--repetitions 10` for the paper's).
            repetitions: 5,
            sweep: vec![
                Axis { key: "mobility.max_speed_mps".into(), values: [1.0, 10.0, 20.0].map(Value::Float).to_vec() },
                ints("random_flows.count", [1, 5, 10, 25]),
                protocols(&ATP_PAPER_MOBILE),
            ],
            x_axis: Some("random_flows.count".into()),
            series_axis: Some("protocol".into()),
            window_s: None,
            batch_means: None,
            compare_against: None,
        },
    )
}

/// Seed 002 §5.2 Figs. 8–9: the rate (ATP) and window (TCP) over time, with
/// the sender's route failures marked, for 1 and 25 flows at 20 m/s, one
/// run of the `atp-paper-mobile` network.
fn atp_paper_mobile_traces() -> Experiment {
    let mut e = atp_paper_mobile("atp-paper-mobile-traces", Routing::dsr());
    if let Some(toml::Value::Table(r)) = e.base.get_mut("random_flows") {
        if let Some(toml::Value::Table(f)) = r.get_mut("flow") {
            f.insert("trace".into(), Value::Boolean(true));
        }
    }
    e.config.description = "Seed 002 §5.2 Figs. 8-9: rate (ATP) and window (TCP) over time with route failures marked, 1 and 25 flows at 20 m/s over DSR.".into();
    e.config.repetitions = 1;
    e.config.sweep = vec![
        Axis { key: "mobility.max_speed_mps".into(), values: vec![Value::Float(20.0)] },
        ints("random_flows.count", [1, 25]),
        protocols(&[Protocol::AtpDefault, Protocol::TcpNewReno, Protocol::TcpNewRenoElfn]),
    ];
    e.config.x_axis = None;
    e
}

/// The three ATP variants of the testbed study (seed 000 §V.A).
const ATP_VARIANTS: [Protocol; 3] = [Protocol::AtpDefault, Protocol::AtpAdaptive, Protocol::AtpAggressive];

/// Testbed A's one- and two-flow chains (seed 001 Figs. 5.1 and 5.4) with
/// `switch` as one more axis, every flow traced.
fn testbed_a_with(name: &str, description: &str, switch: Axis, protocols_compared: &[Protocol]) -> Experiment {
    let mut scenario = testbed_chain(testbed_a_radio(), TESTBED_A_SPACING_M, 1);
    if let Some(t) = scenario.flows[0].transport_mut() {
        t.trace = true;
    }
    Experiment::new(
        &scenario,
        ExperimentConfig {
            name: name.into(),
            description: description.into(),
            repetitions: 10,
            sweep: vec![ints("flow_count", [1, 2]), ints("hops", 1..=6), switch, protocols(protocols_compared)],
            x_axis: Some("hops".into()),
            series_axis: Some("protocol".into()),
            window_s: None,
            batch_means: None,
            compare_against: None,
        },
    )
}

/// Seed 000 §V.A.2, Fig. 7b: feedback reaching the sender in clusters
/// "because we do not use a priority queue for feedback packets" — testbed
/// A's single- and two-flow ATP runs without and with one
/// (`radio.mac.feedback_priority`).
fn testbed_a_feedback(name: &str) -> Experiment {
    let switch = Axis { key: "radio.mac.feedback_priority".into(), values: vec![false.into(), true.into()] };
    testbed_a_with(
        name,
        "Seed 000 §V.A.2 Fig. 7b: feedback clustering at the sender, testbed A, 1 and 2 flows, without and with a priority queue for feedback.",
        switch,
        &ATP_VARIANTS,
    )
}

/// Seed 001 §3.1 and appendix A.6: ath5k's batched completion interrupts
/// (only the last frame of a batch gets a completion time) on testbed A's
/// single- and two-flow runs. One frame per interrupt is the unbatched
/// driver (every frame timed; the same run as no batching, which the
/// `batching_of_one_frame_is_no_batching` test checks); 4 is the model's
/// default batch, 16 a deep one. TCP Tahoe, whose packets are not stamped,
/// for reference.
fn testbed_a_batching(name: &str) -> Experiment {
    let switch = ints("radio.mac.batched_completion.max_frames", [1, 4, 16]);
    let mut compared = ATP_VARIANTS.to_vec();
    compared.push(Protocol::TcpTahoe);
    testbed_a_with(
        name,
        "Seed 001 §3.1 / A.6: batched TX completion interrupts (1 = every frame timed, 4, 16 frames per interrupt), testbed A, 1 and 2 flows.",
        switch,
        &compared,
    )
}

/// A built-in experiment by name.
pub fn get(name: &str) -> Option<Experiment> {
    Some(match name {
        "testbed-a-single" => testbed(
            name,
            "Seed 001 Fig. 5.1 / seed 000 Fig. 5: one 2 MB transfer over 1-6 hops, testbed A (24 Mbit/s, lossy links).",
            testbed_a_radio(),
            1,
        ),
        "testbed-a-two" => testbed(name, "Seed 001 Fig. 5.4: two simultaneous flows, testbed A.", testbed_a_radio(), 2),
        "testbed-a-five" => {
            testbed(name, "Seed 001 Fig. 5.5: five simultaneous flows, testbed A.", testbed_a_radio(), 5)
        }
        "testbed-b-single" => {
            testbed(name, "Seed 001 Fig. 5.6: one flow, testbed B (6 Mbit/s, reliable links).", testbed_b_radio(), 1)
        }
        "testbed-b-two" => testbed(name, "Seed 001 Fig. 5.6/5.7: two flows, testbed B.", testbed_b_radio(), 2),
        "testbed-b-five" => testbed(name, "Seed 001 Fig. 5.6/5.7: five flows, testbed B.", testbed_b_radio(), 5),
        "stack" => stack(),
        "testbed-random-transfer" => building::transfer_experiment(name),
        "testbed-random-streaming" => building::streaming_experiment(name),
        "atp-paper-two-flows" => atp_paper_two_flows(),
        "atp-paper-mobile" => atp_paper_mobile(name, Routing::dsr()),
        // ns-2's AODV as the ATP paper ran it (seed 002 §5.1; issue 28):
        // AODV_LINK_LAYER_DETECTION (no HELLOs, links break on MAC failures)
        // and its expanding ring search; PROTOCOLS.md "AODV constants".
        "atp-paper-mobile-aodv" => atp_paper_mobile(
            name,
            Routing::Aodv {
                ss_threshold_dbm: None,
                link_layer_feedback: true,
                hello: false,
                expanding_ring_search: true,
                control_priority: true,
            },
        ),
        "atp-paper-mobile-traces" => atp_paper_mobile_traces(),
        "seed003-chain" => seed003::chain_experiment(name),
        "seed003-walk" => seed003::walk_experiment(name),
        "seed003-discovery" => seed003::discovery_experiment(name),
        "seed003-rtt" => seed003::rtt_experiment(name),
        "seed003-pacing-sim" => seed003::pacing_sim_experiment(name),
        "seed003-pacing-testbed" => seed003::pacing_testbed_experiment(name),
        "seed004-chain" => seed004::chain_experiment(name),
        "seed004-parallel" => seed004::parallel_experiment(name),
        "seed004-grid" => seed004::grid_experiment(name),
        "testbed-a-feedback" => testbed_a_feedback(name),
        "testbed-a-batching" => testbed_a_batching(name),
        stack_sensitivity::GEOMETRY => stack_sensitivity::geometry_experiment(name, 0),
        stack_sensitivity::GEOMETRY_RETRIES => stack_sensitivity::geometry_experiment(name, 6),
        stack_sensitivity::RADIO => stack_sensitivity::radio_experiment(name),
        other => return modern_tcp::experiment(other),
    })
}
