//! The checks of `[[flows]]` keys ([`super::flows`] holds the types): each
//! flow's endpoints, times and sizes, its slow reader, and the per-protocol
//! settings tables, every refusal naming the key (`flows[i].tcp.prr`), the
//! value and what was expected.

use super::error::{invalid, within, ScenarioError};
use super::flows::*;
use super::limits::*;
use super::Scenario;
use meshbed_proto::wire::HEADER_LEN as TRANSPORT_HEADER_BYTES;
use meshbed_proto::Protocol;

impl Scenario {
    /// Checks of the listed flows (the topology already checked; which keys
    /// go with which kind of flow was decided when they were read).
    pub(super) fn validate_flows(&self) -> Result<(), ScenarioError> {
        if self.flows.len() > MAX_FLOWS {
            return Err(invalid(
                "flows",
                format!("({} flows)", self.flows.len()),
                format!("at most {MAX_FLOWS} flows"),
            ));
        }
        let n = self.node_count();
        for (i, f) in self.flows.iter().enumerate() {
            let key = |k: &str| format!("flows[{i}].{k}");
            if f.src >= n {
                return Err(invalid(key("src"), f.src, format!("a node index below {n}")));
            }
            if f.dst >= n {
                return Err(invalid(key("dst"), f.dst, format!("a node index below {n}")));
            }
            if f.src == f.dst {
                return Err(invalid(key("dst"), f.dst, "a node other than src"));
            }
            if !(f.start_s >= 0.0 && f.start_s < self.duration_s) {
                return Err(invalid(
                    key("start_s"),
                    f.start_s,
                    format!("a start time in [0, duration_s = {})", self.duration_s),
                ));
            }
            if let Some(stop) = f.stop_s() {
                // Finite so that it is a time; beyond duration_s the run's end stops the flow.
                if !(stop > f.start_s && stop.is_finite()) {
                    return Err(invalid(key("stop_s"), stop, "a stop time after start_s"));
                }
            }
            let packet = |packet_bytes| {
                within(
                    key("packet_bytes"),
                    packet_bytes,
                    IP_UDP_HEADER_BYTES + 1..=MAX_PACKET_BYTES,
                    "an IP packet size in bytes",
                )
            };
            match &f.kind {
                FlowKind::Transport(t) => {
                    self.check_path_info_source(i, t.protocol)?;
                    t.validate(i, f.start_s)?;
                }
                FlowKind::Udp(u) => {
                    packet(u.packet_bytes)?;
                    if let UdpRate::Cbr { rate_kbps } = u.rate {
                        let phy = self.data_rate_kbps(f.src) as f64;
                        within(
                            key("rate_kbps"),
                            rate_kbps,
                            MIN_CBR_RATE_KBPS..=phy,
                            "a CBR rate in kbit/s (at most the source's PHY data rate)",
                        )?
                    }
                }
                FlowKind::Echo(e) => {
                    packet(e.packet_bytes)?;
                    if let Some(t) = e.timeout_s {
                        within(key("echo_timeout_s"), t, ENGINE_PERIOD_S, "a timeout in seconds")?
                    }
                }
                FlowKind::KernelTcp(k) => k.validate(i)?,
            }
        }
        Ok(())
    }
}

impl TransportFlow {
    /// Checks of a slow reader's keys (`read_rate_bps`, `read_rate_steps`,
    /// `receive_buffer_bytes`) on transport flow `i` starting at `start_s`.
    fn validate_reader(&self, i: usize, start_s: f64) -> Result<(), ScenarioError> {
        let key = |k: &str| format!("flows[{i}].{k}");
        let Some(reader) = &self.reader else { return Ok(()) };
        let rate = reader.rate_bps;
        if self.protocol == Protocol::Mtl {
            return Err(invalid(
                key("read_rate_bps"),
                rate,
                "no reader rate: mtl's receiver has no flow control (ATP and TCP flows take one)",
            ));
        }
        let rates = "a reader rate in bit/s (0 stalls the reader)";
        within(key("read_rate_bps"), rate, 0..=MAX_READ_RATE_BPS, rates)?;
        let mut previous_s = start_s;
        for (k, step) in reader.steps.iter().enumerate() {
            let k = |field: &str| key(&format!("read_rate_steps[{k}].{field}"));
            if !(step.at_s.is_finite() && step.at_s > previous_s && step.at_s <= MAX_DURATION_S) {
                return Err(invalid(
                    k("at_s"),
                    step.at_s,
                    format!("a time in seconds after the flow's start and the step before ({previous_s})"),
                ));
            }
            previous_s = step.at_s;
            within(k("rate_bps"), step.rate_bps, 0..=MAX_READ_RATE_BPS, rates)?;
        }
        if let Some(b) = reader.receive_buffer_bytes {
            self.check_buffer(key("receive_buffer_bytes"), b, "a receive buffer")?;
        }
        Ok(())
    }

    /// A buffer (`what`) of `bytes` under `key`: at least one full packet's
    /// payload, at most [`MAX_RECEIVE_BUFFER_BYTES`].
    fn check_buffer(&self, key: String, bytes: u64, what: &str) -> Result<(), ScenarioError> {
        let range = self.payload_bytes().max(1)..=MAX_RECEIVE_BUFFER_BYTES;
        within(key, bytes, range, &format!("{what} in bytes, at least one full packet's payload"))
    }

    /// Checks of transport flow `i` starting at `start_s` (endpoints, start
    /// and stop times already checked).
    fn validate(&self, i: usize, start_s: f64) -> Result<(), ScenarioError> {
        let key = |k: &str| format!("flows[{i}].{k}");
        let protocol = self.protocol;
        // The size bounds no memory (a simulated sender holds at most its
        // window of the data, `Scenario::sender_held_bytes`), only what a
        // run could ever carry (MAX_FLOW_BYTES).
        if let Amount::Bytes(bytes) = self.amount {
            within(key("bytes"), bytes, 1..=MAX_FLOW_BYTES, "a transfer size in bytes")?;
        }
        if let Some(n) = self.batch_packets {
            within(key("batch_packets"), n, 1..=MAX_BATCH_PACKETS, "full data packets per batch")?;
        }
        let min_packet = IP_UDP_HEADER_BYTES + TRANSPORT_HEADER_BYTES as u32 + 1;
        within(
            key("packet_bytes"),
            self.packet_bytes,
            min_packet..=MAX_PACKET_BYTES,
            &format!(
                "a full data packet size in bytes (IP, UDP and the {TRANSPORT_HEADER_BYTES}-byte transport header included)"
            ),
        )?;
        let check = |k: &str, v: Option<f64>, range: std::ops::RangeInclusive<f64>, what: &str| match v {
            Some(x) => within(key(k), x, range, what),
            None => Ok(()),
        };
        // Fractions in [0, 1): at 1 an average would never move.
        let fraction = |k: &str, v: Option<f64>| match v {
            Some(x) if !(0.0..1.0).contains(&x) => Err(invalid(key(k), x, "a weight in [0, 1)")),
            _ => Ok(()),
        };
        self.validate_reader(i, start_s)?;
        match &self.settings {
            TransportSettings::Preset => {}
            TransportSettings::Atp(a) => {
                check("atp.epoch_s", a.epoch_s, ENGINE_PERIOD_S, "an epoch in seconds")?;
                check("atp.idle_timeout_s", a.idle_timeout_s, IDLE_TIMEOUT_S, "a timeout in seconds")?;
                check("atp.route_outage_timeout_s", a.route_outage_timeout_s, IDLE_TIMEOUT_S, "a timeout in seconds")?;
                check("atp.eta", a.eta, ATP_ETA, "an idle multiplier")?;
                check(
                    "atp.delay_read_interval_s",
                    a.delay_read_interval_s,
                    DELAY_READ_INTERVAL_S,
                    "an interval in seconds",
                )?;
                check("atp.sack_more_fraction", a.sack_more_fraction, SACK_MORE_FRACTION, "a silence in epochs")?;
                check(
                    "atp.missed_feedback_decrease",
                    a.missed_feedback_decrease,
                    MISSED_FEEDBACK_DECREASE,
                    "a factor on the rate",
                )?;
                check(
                    "atp.relay_forwarding_delay_s",
                    a.relay_forwarding_delay_s,
                    RELAY_FORWARDING_DELAY_S,
                    "a delay in seconds",
                )?;
                fraction("atp.alpha", a.alpha)?;
                fraction("atp.beta", a.beta)?;
                if let Some(k) = a.kappa {
                    if !(k > 0.0 && k <= 1.0) {
                        return Err(invalid(key("atp.kappa"), k, "an increase factor in (0, 1]"));
                    }
                }
                check("atp.phi", a.phi, ATP_PHI, "an increase threshold")?;
            }
            TransportSettings::Tcp(t) => {
                check("tcp.min_rto_s", t.min_rto_s, ENGINE_PERIOD_S, "a minimum RTO in seconds")?;
                check(
                    "tcp.delayed_ack_timeout_s",
                    t.delayed_ack_timeout_s,
                    DELAYED_ACK_TIMEOUT_S,
                    "a delayed-ACK timer in seconds (RFC 5681 §4.2: less than 0.5 s)",
                )?;
                if let (Some(v), false) = (t.delayed_ack_timeout_s, t.delayed_acks.unwrap_or(false)) {
                    return Err(invalid(
                        key("tcp.delayed_ack_timeout_s"),
                        v,
                        "nothing without delayed_acks = true (the receiver ACKs every segment at once)".to_string(),
                    ));
                }
                check(
                    "tcp.relay_forwarding_delay_s",
                    t.relay_forwarding_delay_s,
                    RELAY_FORWARDING_DELAY_S,
                    "a delay in seconds",
                )?;
                check("tcp.endpoint_delay_s", t.endpoint_delay_s, RELAY_FORWARDING_DELAY_S, "a delay in seconds")?;
                check("tcp.idle_timeout_s", t.idle_timeout_s, IDLE_TIMEOUT_S, "a timeout in seconds")?;
                if let Some(v) = t.pacing_v {
                    if !protocol.is_paced() {
                        return Err(invalid(
                            key("tcp.pacing_v"),
                            v,
                            format!("nothing: {protocol} does not pace (tcp-reno-paced and tcp-newreno-paced do)"),
                        ));
                    }
                    check("tcp.pacing_v", Some(v), PACING_V, "a pacing aggressiveness V")?;
                }
                if let Some(h) = t.hystart {
                    if protocol != Protocol::TcpCubic {
                        return Err(invalid(
                            key("tcp.hystart"),
                            h,
                            format!("nothing: {protocol} has no HyStart++ (tcp-cubic does)"),
                        ));
                    }
                }
                if let Some(r) = t.rack_tlp {
                    if protocol == Protocol::TcpBbr && !r {
                        return Err(invalid(
                            key("tcp.rack_tlp"),
                            r,
                            "true or nothing: tcp-bbr always runs RACK-TLP, as Linux's BBR does".to_string(),
                        ));
                    }
                    if !matches!(protocol, Protocol::TcpSack | Protocol::TcpCubic | Protocol::TcpBbr) {
                        return Err(invalid(
                            key("tcp.rack_tlp"),
                            r,
                            format!(
                                "nothing: {protocol} has no SACK, so no RACK-TLP (tcp-sack, tcp-cubic and tcp-bbr do)"
                            ),
                        ));
                    }
                }
                if let Some(p) = t.prr {
                    if !matches!(protocol, Protocol::TcpSack | Protocol::TcpCubic) {
                        return Err(invalid(
                            key("tcp.prr"),
                            p,
                            format!(
                                "nothing: {protocol} has no SACK recovery with a window to reduce (tcp-sack and \
                                 tcp-cubic do; tcp-bbr sets its own)"
                            ),
                        ));
                    }
                }
                for (k, v) in [
                    ("tcp.initial_cwnd_segments", t.initial_cwnd_segments),
                    ("tcp.max_cwnd_segments", t.max_cwnd_segments),
                ] {
                    if let Some(v) = v {
                        within(key(k), v, 1..=MAX_CWND_SEGMENTS, "a window in segments")?;
                    }
                }
            }
            TransportSettings::Mtl(m) => {
                fraction("mtl.alpha", m.alpha)?;
                check("mtl.idle_timeout_s", m.idle_timeout_s, IDLE_TIMEOUT_S, "a timeout in seconds")?;
                if let Some(b) = m.send_buffer_bytes {
                    self.check_buffer(key("mtl.send_buffer_bytes"), b, "a send buffer")?;
                }
            }
        }
        Ok(())
    }
}
