//! What the emulator runs, decided in one place ([`Emulator::supports`]):
//! the parts of a scenario it would otherwise silently run as something
//! else are refused before a namespace is made, each named by its key.
//!
//! The emulator's network is the simulator's (`meshbed_sim::build_network`:
//! the same positions, trajectories, radio and route checks), run against
//! the wall clock, so moving nodes move; its kernels get one static route
//! table at start, or with AODV and OLSR a routing daemon per node
//! (`meshbed routed`, the simulator's engines); its flows are real UDP
//! sockets, `meshbed-net` transfers with the runtime's own transport
//! settings, and the kernel's TCP with the congestion controls the host's
//! kernel has. docs/ARCHITECTURE.md ("What the emulator refuses") lists every
//! refusal.

use meshbed_sim::backend::{flow_key, Refusal, ScenarioBackend};
use meshbed_sim::scenario::{Amount, FlowKind, FlowSpec, Routing, TransportSettings, DEFAULT_PACKET_BYTES};
use meshbed_sim::Scenario;

/// The real-time emulator as a [`ScenarioBackend`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Emulator;

impl ScenarioBackend for Emulator {
    fn name(&self) -> &'static str {
        "the emulator"
    }
    fn supports(&self, scenario: &Scenario) -> Result<(), Refusal> {
        let mut refusal = Refusal::new(self.name());
        network(scenario, &mut refusal);
        match scenario.with_random_flows_drawn() {
            Ok(drawn) => {
                for (i, f) in drawn.flows.iter().enumerate() {
                    flow(&flow_key(&drawn, i), f, &mut refusal);
                    backlog(&drawn, i, &mut refusal);
                }
            }
            // An invalid scenario is the validation's to report.
            Err(_) => {
                for (i, f) in scenario.flows.iter().enumerate() {
                    flow(&format!("flows[{i}]"), f, &mut refusal);
                }
            }
        }
        refusal.into_result()
    }
}

impl Emulator {
    /// [`Emulator::supports`] for an emulation whose nodes run no relay
    /// (`EmuOptions::relays` off, `--no-relays`): ATP's D_max is stamped by
    /// the relays (seed 001 §3.2), so an ATP flow would run without the
    /// delays its rate comes from and is refused. The other transports
    /// read nothing a relay writes but the hop count, which no engine's
    /// rule uses (MTL's comes from the route, `PathInfo`).
    pub fn supports_without_relays(&self, scenario: &Scenario) -> Result<(), Refusal> {
        let mut refusal = match self.supports(scenario) {
            Ok(()) => Refusal::new(self.name()),
            Err(r) => r,
        };
        let drawn = scenario.with_random_flows_drawn();
        let (flows, key): (&[FlowSpec], Box<dyn Fn(usize) -> String>) = match &drawn {
            Ok(d) => (&d.flows, Box::new(|i| flow_key(d, i))),
            Err(_) => (&scenario.flows, Box::new(|i| format!("flows[{i}]"))),
        };
        for (i, f) in flows.iter().enumerate() {
            if let Some(t) = f.transport().filter(|t| t.protocol.is_atp()) {
                refusal.add(
                    format!("{}.protocol", key(i)),
                    format!("\"{}\"", t.protocol),
                    "ATP's rate comes from the D_max the relays stamp (seed 001 §3.2); without relays \
                     (--no-relays) only UDP, kernel TCP and the TCP and MTL engines run",
                );
            }
        }
        refusal.into_result()
    }

    /// Whether the emulator can build the scenario's network as written
    /// (`meshbed emu SCENARIO`, which runs no flows: programs run in it).
    pub fn supports_network(&self, scenario: &Scenario) -> Result<(), Refusal> {
        let mut refusal = Refusal::new(self.name());
        network(scenario, &mut refusal);
        refusal.into_result()
    }
}

/// The network: routing, mobility, the MAC's queue discipline.
fn network(scenario: &Scenario, refusal: &mut Refusal) {
    // Moving nodes move: the medium is the simulator's, with the same
    // trajectories, run against the wall clock. Dynamic routing runs as a
    // daemon per node (crate::routers), except DSR.
    if let Routing::Dsr { .. } = scenario.routing {
        refusal.add("routing.kind", "\"dsr\"", meshbed_routed::DSR_REFUSAL);
    }
    if scenario.radio.mac.feedback_priority {
        refusal.add(
            "radio.mac.feedback_priority",
            "true",
            "the emulator cannot tell transport feedback in the TAP frames it carries (simulator only)",
        );
    }
}

/// The most data the emulator holds for a transport flow: a transfer's
/// bytes are generated, hashed and kept in memory before it starts.
pub const MAX_TRANSFER_BYTES: u64 = 1 << 30;

/// A transport flow's data must fit in memory: `bytes`, or for a flow
/// until `stop_s` the simulator's backlog (what the source's link could
/// carry in that time).
fn backlog(scenario: &Scenario, i: usize, refusal: &mut Refusal) {
    let Some(t) = scenario.flows[i].transport() else { return };
    let bytes = scenario.sender_data_bytes(i);
    if bytes <= MAX_TRANSFER_BYTES {
        return;
    }
    let (what, value) = match t.amount {
        Amount::Bytes(b) => ("bytes", b.to_string()),
        Amount::Until { stop_s } => ("stop_s", format!("{stop_s:?}")),
    };
    refusal.add(
        format!("{}.{what}", flow_key(scenario, i)),
        value,
        format!(
            "at most {MAX_TRANSFER_BYTES} bytes of data per transport flow on the emulator, which holds them in \
             memory ({bytes} here{})",
            if what == "stop_s" { ": the source's link rate over the flow's active time" } else { "" }
        ),
    );
}

/// The `[flows.tcp]` keys the emulator's transfers take
/// ([`tcp_tuning`]); the others are refused by name.
const RUNTIME_TCP_KEYS: [&str; 3] = ["initial_cwnd_segments", "delayed_acks", "delayed_ack_timeout_s"];

/// What a transport flow's `[flows.tcp]` asks of the UDP runtime (the keys
/// of [`RUNTIME_TCP_KEYS`]; the rest were refused).
pub(crate) fn tcp_tuning(settings: &TransportSettings) -> meshbed_net::conn::TcpTuning {
    match settings {
        TransportSettings::Tcp(o) => meshbed_net::conn::TcpTuning {
            initial_cwnd_segments: o.initial_cwnd_segments,
            delayed_acks: o.delayed_acks,
            delayed_ack_timeout: o.delayed_ack_timeout_s.map(meshbed_core::Duration::from_secs_f64),
        },
        _ => Default::default(),
    }
}

/// One flow, named by `key`: echo is refused whole; a transport transfer
/// runs as `meshbed send` runs it, so each of its keys the runtime does
/// not take is refused by name.
fn flow(key: &str, f: &FlowSpec, refusal: &mut Refusal) {
    let t = match &f.kind {
        FlowKind::Udp(_) => return,
        FlowKind::Echo(_) => {
            refusal.add(
                format!("{key}.traffic"),
                "\"echo\"",
                "the emulator runs saturated and CBR UDP flows and transport transfers; echo is simulated only \
                 (run ping inside `meshbed emu` instead)",
            );
            return;
        }
        FlowKind::Transport(t) => t,
        // Its keys were checked when it was read; what is left is whether
        // this host's kernel has its congestion control.
        FlowKind::KernelTcp(k) => {
            crate::kernel_tcp::check_congestion_control(key, k, refusal);
            return;
        }
    };
    if t.packet_bytes != DEFAULT_PACKET_BYTES {
        refusal.add(
            format!("{key}.packet_bytes"),
            t.packet_bytes.to_string(),
            format!(
                "the emulator's transfers use the UDP runtime's segment size ({DEFAULT_PACKET_BYTES}-byte packets); \
                 simulator only"
            ),
        );
    }
    match &t.settings {
        TransportSettings::Preset => {}
        TransportSettings::Atp(_) => refusal.add(
            format!("{key}.atp"),
            "(a table)",
            "the emulator's transfers run the UDP runtime's ATP settings (meshbed send); per-flow overrides are \
             simulator only",
        ),
        TransportSettings::Tcp(o) => {
            // Every key set but the two the runtime takes, by name (a key
            // added to `[flows.tcp]` later is refused until it is taken).
            let set = serde_json::to_value(o).expect("plain numbers and flags");
            for (k, v) in set.as_object().into_iter().flatten() {
                if v.is_null() || RUNTIME_TCP_KEYS.contains(&k.as_str()) {
                    continue;
                }
                refusal.add(
                    format!("{key}.tcp.{k}"),
                    v.to_string(),
                    "the emulator's transfers run the UDP runtime's TCP settings: of [flows.tcp] they take \
                     initial_cwnd_segments, delayed_acks and delayed_ack_timeout_s (meshbed send \
                     --tcp-initial-window, meshbed recv --tcp-delayed-acks [--tcp-delayed-ack-timeout]); the \
                     other keys are simulator only",
                );
            }
        }
        TransportSettings::Mtl(_) => refusal.add(
            format!("{key}.mtl"),
            "(a table)",
            "the emulator's transfers run the UDP runtime's MTL settings (meshbed send); per-flow overrides are \
             simulator only",
        ),
    }
    if let Some(b) = t.batch_packets {
        refusal.add(
            format!("{key}.batch_packets"),
            b.to_string(),
            "the emulator records no delivery milestones (batch means are simulator only)",
        );
    }
    let Some(reader) = &t.reader else { return };
    refusal.add(
        format!("{key}.read_rate_bps"),
        reader.rate_bps.to_string(),
        "the emulator's receivers read at full speed (simulator only; on real hosts use meshbed recv --rate)",
    );
    if !reader.steps.is_empty() {
        refusal.add(
            format!("{key}.read_rate_steps"),
            "(a list)",
            "the emulator's receivers read at full speed (simulator only)",
        );
    }
    if let Some(b) = reader.receive_buffer_bytes {
        refusal.add(
            format!("{key}.receive_buffer_bytes"),
            b.to_string(),
            "the emulator's receivers use the UDP runtime's buffers (simulator only)",
        );
    }
}
