//! Seed 004's experiments (§IV): a chain, two parallel chains and a 6×6
//! grid, in the paper's setting: ns-2's 802.11g at 54 Mbit/s with 250 m
//! transmission and 550 m carrier-sense/interference ranges and RTS/CTS
//! off (the `ns2-54g` radio preset), OLSR with ETX (§IV: "for routing the
//! standard OLSR protocol with ETX support is adopted"), 1,460-byte
//! transport packets (1,460 bytes of data: meshbed's 36-byte transport
//! header and 28 bytes of IP and UDP come on top), and goodput by batch
//! means over transfers of `batches × batch_packets` packets, the first
//! batch discarded (§IV: "55,000 packets ... 11 batches, each 5,000
//! packets ... The first batch is discarded as initial transient").
//!
//! The chain and the parallel chains use the paper's batches
//! ([`PAPER_BATCH_MEANS`]: a transfer is 55,000 packets, 80 MB). The grid
//! uses [`GRID_BATCH_MEANS`], 11 batches of 1,000 packets, so that a sample
//! of pairs takes minutes on 2 cores; `batch_means = { batch_packets =
//! 5000 }` with `random_flows.flow.bytes` raised to 55,000 × 1,460 in the
//! file `meshbed experiment show seed004-grid` prints gives the paper's.
//!
//! The protocols of each experiment are [`PROTOCOLS`]: MTL, TCP NewReno
//! (the paper's baseline, over the same OLSR-ETX) and the three ATP
//! variants, which the paper never compared with MTL.

use super::{ints, protocols};
use crate::spec::{Axis, BatchMeans, Experiment, ExperimentConfig};
use meshbed_proto::Protocol;
use meshbed_radio::RadioConfig;
use meshbed_sim::scenario::{
    Amount, FlowKind, FlowSpec, NodeSpec, RandomFlows, Routing, Scenario, Topology, TransportFlow,
};

/// The transports compared on every topology.
pub const PROTOCOLS: [Protocol; 5] =
    [Protocol::Mtl, Protocol::TcpNewReno, Protocol::AtpDefault, Protocol::AtpAdaptive, Protocol::AtpAggressive];

/// §IV: "setting the size of transport data packets (both for TCP and MTL)
/// to 1,460 bytes" — the data of a packet, as ns-2's TCP `packetSize_`.
pub const DATA_BYTES: u32 = 1_460;

/// The IP packet that carries [`DATA_BYTES`] of data.
pub const PACKET_BYTES: u32 = DATA_BYTES + 36 + 28;

/// The paper's batch means: 11 batches of 5,000 packets, the first discarded.
pub const PAPER_BATCH_MEANS: BatchMeans = BatchMeans { batch_packets: 5_000, batches: 11, discard: 1 };

/// The grid's batch means: the paper's 11 batches, the first discarded, of
/// 1,000 packets (docs/PROTOCOLS.md gives the wall times).
pub const GRID_BATCH_MEANS: BatchMeans = BatchMeans { batch_packets: 1_000, ..PAPER_BATCH_MEANS };

/// Transfers start once OLSR has converged: ETX needs a window of probes
/// (10 s) and TCs must cross the grid's ten hops ("steady-state simulations
/// starting with an initially idle system", §IV).
pub const START_S: f64 = 30.0;

/// A flow slower than this on average is cut off by the end of the run and
/// reported short of its batches (the run lasts long enough for a transfer
/// at this goodput).
pub const SLOWEST_COUNTED_BPS: f64 = 1e6;

/// Node spacing of every topology (§IV.A, §IV.B: "200m inter-node distance").
pub const SPACING_M: f64 = 200.0;

/// The chain lengths of the chain experiment (Fig. 2's x axis).
pub const CHAIN_HOPS: std::ops::RangeInclusive<i64> = 1..=8;

/// The pairs the grid experiment samples (one pair per repetition).
pub const GRID_PAIRS: u32 = 12;

/// A transfer of every packet `b` needs, from `START_S`.
fn transfer(src: u32, dst: u32, b: &BatchMeans) -> FlowSpec {
    let bytes = b.packets() * u64::from(DATA_BYTES);
    let transfer =
        TransportFlow { packet_bytes: PACKET_BYTES, ..TransportFlow::new(Protocol::TcpNewReno, Amount::Bytes(bytes)) };
    FlowSpec { src, dst, start_s: START_S, kind: FlowKind::Transport(transfer) }
}

/// The run's length: start-up, then every transfer at [`SLOWEST_COUNTED_BPS`].
fn duration_s(b: &BatchMeans) -> f64 {
    START_S + (b.packets() * u64::from(DATA_BYTES) * 8) as f64 / SLOWEST_COUNTED_BPS
}

fn scenario(topology: Topology, flows: Vec<FlowSpec>, b: &BatchMeans) -> Scenario {
    Scenario {
        seed: 1,
        duration_s: duration_s(b),
        radio: RadioConfig::ns2_54g(),
        topology,
        routing: Routing::olsr(true),
        flows,
        mobility: None,
        random_flows: None,
    }
}

fn config(
    name: &str,
    description: &str,
    repetitions: u32,
    sweep: Vec<Axis>,
    x_axis: Option<&str>,
    b: BatchMeans,
) -> ExperimentConfig {
    ExperimentConfig {
        name: name.into(),
        description: description.into(),
        repetitions,
        sweep,
        x_axis: x_axis.map(Into::into),
        series_axis: Some("protocol".into()),
        window_s: None,
        batch_means: Some(b),
        compare_against: None,
    }
}

/// §IV.A, Figs. 2–3: h + 1 nodes 200 m apart, one transfer end to end;
/// goodput (by batch means) and link-layer drops (flows.csv's MAC drop
/// columns) against h.
pub fn chain_experiment(name: &str) -> Experiment {
    let b = PAPER_BATCH_MEANS;
    let hops = 4;
    let s = scenario(Topology::Chain { nodes: hops + 1, spacing_m: SPACING_M }, vec![transfer(0, hops, &b)], &b);
    Experiment::new(
        &s,
        config(
            name,
            "Seed 004 §IV.A Figs. 2-3: one transfer along a 1-8 hop chain, 802.11g 54 Mbit/s (ns-2), OLSR-ETX, 1460-byte packets, goodput by batch means.",
            2,
            vec![ints("hops", CHAIN_HOPS), protocols(&PROTOCOLS)],
            Some("hops"),
            b,
        ),
    )
}

/// §IV.B, Figs. 4–6: two 6-node chains 400 m apart (inside each other's
/// interference range, outside transmission range), one transfer on each
/// from left to right; per-flow and aggregate goodput and fairness, and
/// goodput over time (traced; the paper looks at 100 s to 150 s).
pub fn parallel_experiment(name: &str) -> Experiment {
    let b = PAPER_BATCH_MEANS;
    let node = |x_m: f64, y_m: f64| NodeSpec::at(x_m, y_m);
    let chain = |y_m: f64| (0..6).map(move |i| node(f64::from(i) * SPACING_M, y_m));
    let nodes = chain(0.0).chain(chain(2.0 * SPACING_M)).collect();
    let flows = [(0, 5), (6, 11)]
        .map(|(src, dst)| {
            let mut f = transfer(src, dst, &b);
            if let Some(t) = f.transport_mut() {
                t.trace = true;
            }
            f
        })
        .to_vec();
    let s = scenario(Topology::Explicit { nodes }, flows, &b);
    Experiment::new(
        &s,
        config(
            name,
            "Seed 004 §IV.B Figs. 4-6: two 5-hop chains 400 m apart, one transfer on each, per-flow and aggregate goodput by batch means, fairness, goodput over time.",
            3,
            vec![protocols(&PROTOCOLS)],
            None,
            b,
        ),
    )
}

/// §IV.C, Fig. 7: a 6×6 grid 200 m apart. The paper runs "an FTP
/// connection between each pair in the network ... back to back" (36 × 35
/// transfers); here each repetition is one transfer between a pair drawn
/// from the seed (`[random_flows] count = 1`), the same pair for every
/// protocol under a seed, so the repetitions ([`GRID_PAIRS`] by default;
/// `--repetitions`) are a random sample of the pairs. Fig. 7's CDF is
/// goodput_cdf.png, its averages the summary's batch-means mean.
pub fn grid_experiment(name: &str) -> Experiment {
    let b = GRID_BATCH_MEANS;
    let mut s = scenario(Topology::Grid { rows: 6, cols: 6, spacing_m: SPACING_M }, Vec::new(), &b);
    s.random_flows = Some(RandomFlows::like(1, None, &transfer(0, 1, &b)));
    Experiment::new(
        &s,
        config(
            name,
            "Seed 004 §IV.C Fig. 7: 6x6 grid 200 m apart, one transfer per run between a pair drawn from the seed; CDF and mean of per-pair goodput by batch means.",
            GRID_PAIRS,
            vec![protocols(&PROTOCOLS)],
            None,
            b,
        ),
    )
}
