//! The runtime's protocol settings and one connection's seal.
//!
//! The engines themselves, and the connection id that carries a sender's
//! protocol to the receiver (which must run the same ATP preset: the epoch
//! and adaptive feedback live at the receiver), are in
//! [`meshbed_proto::connection`]; this module only says how the runtime
//! configures them.

use crate::auth::{self, AuthError, Direction, Opener, Psk, Sealer};
use meshbed_core::{Duration, Instant};
use meshbed_proto::atp::AtpConfig;
use meshbed_proto::connection::EngineConfig;
pub use meshbed_proto::connection::{
    connection_id, protocol_code, protocol_of, wire_matches, ReceiverEngine, SenderEngine,
};
use meshbed_proto::tcp::TcpConfig;
use meshbed_proto::Protocol;

/// 32 unpredictable bits for a connection id (std's per-process random hash
/// keys, the clock and the process id; not a simulation seed: ids only need
/// to differ between connections).
pub fn random_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    h.write_u128(now.as_nanos());
    h.write_u32(std::process::id());
    h.finish() as u32
}

/// Engine settings the runtime changes from the presets.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// Silence after which a connection fails (both protocols).
    pub timeout: Duration,
    /// How long a finished ATP receiver answers repeated FINs.
    pub linger: Duration,
    /// ATP's smallest inter-packet delay, a fixed rate cap; `None` keeps the
    /// preset's: 100 µs, raised by what the path delivers
    /// (`AtpConfig::delivery_growth`).
    pub atp_min_delay: Option<Duration>,
    /// Bytes each datagram carries beyond what the engine writes (the
    /// `--psk` seal): the engines' segments shrink by as much, so a sealed
    /// datagram is no larger than a plain one.
    pub datagram_overhead: usize,
    /// ATP's trace samples: on only with a routing daemon (`--routed`),
    /// whose report counts the re-probing on a route-failed notice; at line
    /// rate the samples would cost for nothing.
    pub trace: bool,
    /// TCP settings that differ from the engine's defaults.
    pub tcp_tuning: TcpTuning,
    /// The sender stamps the end-to-end estimate (`--delay e2e`), a D of
    /// queueing only: ATP adds the bottleneck's service time
    /// ([`SERVICE_TIME_PROBE`]).
    pub end_to_end_delay: bool,
}

/// TCP settings a runtime user may change (`meshbed send
/// --tcp-initial-window`, `meshbed recv --tcp-delayed-acks`; the emulator's
/// `[flows.tcp]` keys of the same names): what Linux's TCP does differently
/// from the engine's presets, so that the engine can be run as the kernel
/// is (issue 27's Linux anchor). Absent: the preset's.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpTuning {
    /// The sender's congestion window at the start, segments (the presets'
    /// 1; Linux's 10, RFC 6928).
    pub initial_cwnd_segments: Option<u32>,
    /// The receiver ACKs every second segment or after its delayed-ACK
    /// timer (RFC 1122 §4.2.3.2; the presets ACK every segment).
    pub delayed_acks: Option<bool>,
    /// That timer (the engine's 200 ms; Linux's ATO is 40 ms for a bulk
    /// receiver).
    pub delayed_ack_timeout: Option<meshbed_core::Duration>,
}

impl TcpTuning {
    /// `c` with these settings.
    pub fn apply(&self, c: &mut TcpConfig) {
        if let Some(w) = self.initial_cwnd_segments {
            c.initial_cwnd_segments = w;
        }
        if let Some(d) = self.delayed_acks {
            c.delayed_acks = d;
        }
        if let Some(t) = self.delayed_ack_timeout {
            c.delayed_ack_timeout = t;
        }
    }
}

/// An engine's trace samples over one connection, in engine time from
/// `origin` (the attempt's clock), for a driver that reports them beside the
/// simulator's (the emulator's transfers with `trace = true`).
#[derive(Clone, Debug)]
pub struct EngineTrace {
    pub origin: std::time::Instant,
    pub samples: Vec<meshbed_proto::engine::TraceSample>,
    /// Samples past [`MAX_TRACE_SAMPLES`], not kept.
    pub dropped: u64,
}

/// The most samples one connection keeps (a few per packet at most: about
/// 40 MB, a transfer of some hundred thousand packets).
pub const MAX_TRACE_SAMPLES: usize = 1_000_000;

impl EngineTrace {
    pub fn new(origin: std::time::Instant) -> Self {
        EngineTrace { origin, samples: Vec::new(), dropped: 0 }
    }

    pub fn push(&mut self, sample: &meshbed_proto::engine::TraceSample) {
        if self.samples.len() < MAX_TRACE_SAMPLES {
            self.samples.push(sample.clone());
        } else {
            self.dropped += 1;
        }
    }
}

/// Bytes a sender holds at least (unacknowledged plus written, not yet
/// sent): what `meshbed send` needs in memory whatever the file's size. It
/// must exceed the most a sender has unacknowledged: TCP's 64 segments, and
/// for ATP what its rate cap sends between two feedbacks
/// ([`AtpConfig::send_window_bytes`], 28.7 MB for default ATP's 1 s epoch,
/// which then sets the window).
pub const SEND_WINDOW_BYTES: usize = 8 << 20;
/// The most a sender holds, whatever the ATP settings (`--atp-min-delay`
/// lowers the rate cap's delay and so raises the need; default ATP's window
/// follows its rate up to here, `AtpConfig::max_send_window_bytes`).
pub const MAX_SEND_WINDOW_BYTES: usize = 256 << 20;

/// How late ATP's and MTL's pacing may run on a host before its schedule
/// restarts (`AtpConfig::pacing_burst`, `MtlConfig::pacing_burst`): 1 ms, at
/// 1 Gbit/s about 87 packets, at 100 Mbit/s about 9 — less than TCP's
/// window releases at once.
pub const PACING_BURST: Duration = Duration::from_millis(1);

/// Where the send loop sleeps for a batch of gaps (above 10,000 packets/s,
/// `send::pacing_tick`) the burst also covers twice the batch
/// (`AtpConfig::pacing_burst_gaps`, `pacing_burst_gaps_below`), so that a
/// wake-up late by its own latency still catches up. At 228 Mbit/s that is
/// 3.2 ms; above about 64,000 packets/s (740 Mbit/s) the 1 ms rules, and at
/// 802.11 rates nothing changes.
pub const PACING_BURST_GAPS: u32 = 2 * crate::send::PACING_BATCH;

/// How much queue per epoch an ATP sender whose D is the end-to-end
/// estimate may build by asking for more than the path delivered, once it
/// has seen a hole (`AtpConfig::service_time_probe`): ×1.25 the delivery
/// for adaptive ATP's 40 ms epoch, BBR's probing gain, and ×1.01 for
/// default ATP's 1 s one, whose sender hears of a queue a second late
/// (docs/PROTOCOLS.md §6, "ATP's rate on a host").
pub const SERVICE_TIME_PROBE: Duration = Duration::from_millis(10);

impl EngineOptions {
    pub fn atp(&self, protocol: Protocol) -> Option<AtpConfig> {
        let mut c = AtpConfig::for_protocol(protocol)?;
        c.idle_timeout = self.timeout;
        c.linger = self.linger;
        c.trace = self.trace;
        if let Some(d) = self.atp_min_delay {
            // The user's cap is a cap: no growth past it with delivery
            // (a mesh's known link rate, or a slow reader's first epoch
            // kept within a few times its buffer).
            c.min_delay = d;
            c.delivery_growth = 0.0;
        }
        // A host's timer wakes late (tens of µs, more under load): the
        // packets due meanwhile go at once, up to this much lateness.
        c.pacing_burst = PACING_BURST;
        c.pacing_burst_gaps = PACING_BURST_GAPS;
        c.pacing_burst_gaps_below = crate::clock::from_std(crate::send::BATCH_ABOVE_GAP);
        // The window follows what the cap sends between two feedbacks, up
        // to the most a sender holds: else default ATP's 1 s epoch held it
        // at its first window per epoch, 230 Mbit/s.
        c.max_send_window_bytes = MAX_SEND_WINDOW_BYTES as u64;
        if self.end_to_end_delay {
            c.service_time_probe = SERVICE_TIME_PROBE;
        }
        c.max_payload = c.max_payload.saturating_sub(self.datagram_overhead).max(1);
        Some(c)
    }

    /// `protocol` with the runtime's settings.
    pub fn config(&self, protocol: Protocol) -> EngineConfig {
        let atp = self.atp(protocol);
        let mut config = EngineConfig::new(protocol, |_| atp.expect("ATP"), || self.tcp());
        if let EngineConfig::Mtl(c) = &mut config {
            c.pacing_burst = PACING_BURST;
            c.pacing_burst_gaps = PACING_BURST_GAPS;
            c.pacing_burst_gaps_below = crate::clock::from_std(crate::send::BATCH_ABOVE_GAP);
            // The RTT on a host holds the hosts' own latencies; below the
            // send loop's tick they are not the path's queueing, and b grows
            // with what the path delivers (docs/PROTOCOLS.md §6, "MTL's
            // rate on a host").
            c.host_resolution = crate::clock::from_std(crate::send::PACING_TICK);
            // Its 200 KB buffer lasts about a loopback round trip: ask for
            // the EGN at half, not only when full, so the ends overlap.
            c.early_request_fill = 0.5;
        }
        config
    }

    /// A streaming sender for `protocol`, holding [`SEND_WINDOW_BYTES`] or,
    /// for ATP, what its rate cap sends between two feedbacks, up to
    /// [`MAX_SEND_WINDOW_BYTES`].
    pub fn sender(&self, protocol: Protocol, connection_id: u32, now: Instant) -> SenderEngine {
        let config = self.config(protocol);
        let window = match &config {
            // MTL's own sending buffer (200 KB) lives inside that window.
            EngineConfig::Tcp { .. } | EngineConfig::Mtl(_) => SEND_WINDOW_BYTES,
            EngineConfig::Atp(c) => usize::try_from(c.send_window_bytes())
                .unwrap_or(usize::MAX)
                .clamp(SEND_WINDOW_BYTES, MAX_SEND_WINDOW_BYTES),
        };
        SenderEngine::streaming(&config, connection_id, window, now)
    }

    /// The receiving engine for `protocol`.
    pub fn receiver(&self, protocol: Protocol, connection_id: u32, now: Instant) -> ReceiverEngine {
        ReceiverEngine::new(&self.config(protocol), connection_id, now)
    }

    /// TCP with the unreachable bound equal to `timeout`: no extra
    /// unanswered RTOs, and the RTO capped at a quarter of the timeout so
    /// that a silent peer is asked several times before the sender gives up.
    pub fn tcp(&self) -> TcpConfig {
        let mut c = TcpConfig { idle_timeout: self.timeout, max_unanswered_rtos: 0, ..TcpConfig::default() };
        self.tcp_tuning.apply(&mut c);
        c.mss_bytes = c.mss_bytes.saturating_sub(self.datagram_overhead).max(1);
        c.max_rto = Duration::from_nanos(self.timeout.as_nanos() / 4).max(c.min_rto).min(c.max_rto);
        c
    }
}

/// How one connection's datagrams cross the network: as the engines write
/// them, or sealed with the pre-shared key ([`crate::auth`]).
// One per connection: the sealed variant's size costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub enum Protection {
    Plain,
    Sealed { sealer: Sealer, opener: Opener },
}

impl Protection {
    /// One side of `connection_id`: it seals what it sends `outgoing` and
    /// opens what comes the other way.
    pub fn new(psk: Option<&Psk>, connection_id: u32, outgoing: Direction) -> Result<Self, AuthError> {
        let Some(psk) = psk else { return Ok(Protection::Plain) };
        let incoming = match outgoing {
            Direction::ToReceiver => Direction::ToSender,
            Direction::ToSender => Direction::ToReceiver,
        };
        Ok(Protection::Sealed {
            sealer: psk.sealer(connection_id, outgoing)?,
            opener: psk.opener(connection_id, incoming),
        })
    }

    /// Bytes a datagram grows by when sealed.
    pub fn overhead(psk: Option<&Psk>) -> usize {
        if psk.is_some() {
            auth::OVERHEAD
        } else {
            0
        }
    }

    /// The plain datagram in `buf`: as it is, or opened in place (an error
    /// for anything not sealed by the peer, or seen before).
    pub fn open<'a>(&mut self, buf: &'a mut [u8]) -> Result<&'a [u8], AuthError> {
        match self {
            Protection::Plain => Ok(buf),
            Protection::Sealed { opener, .. } => {
                let n = opener.open(buf)?;
                Ok(&buf[..n])
            }
        }
    }

    /// The peer instance's salt once one of its datagrams was opened (sealed
    /// connections only).
    pub fn peer_salt(&self) -> Option<[u8; 16]> {
        match self {
            Protection::Plain => None,
            Protection::Sealed { opener, .. } => opener.peer_salt(),
        }
    }

    /// Seals the datagram in `buf[..len]` in place; returns its length.
    pub fn seal(&mut self, buf: &mut [u8], len: usize) -> Result<usize, AuthError> {
        match self {
            Protection::Plain => Ok(len),
            Protection::Sealed { sealer, .. } => sealer.seal(buf, len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 4 s timeout, a 1 s linger, nothing else set.
    fn options() -> EngineOptions {
        EngineOptions {
            timeout: Duration::from_secs(4),
            linger: Duration::from_secs(1),
            atp_min_delay: None,
            datagram_overhead: 0,
            trace: false,
            tcp_tuning: TcpTuning::default(),
            end_to_end_delay: false,
        }
    }

    #[test]
    fn tcp_gives_up_at_the_timeout() {
        let o = options();
        let c = o.tcp();
        assert_eq!(
            (c.idle_timeout, c.max_unanswered_rtos, c.max_rto),
            (Duration::from_secs(4), 0, Duration::from_secs(1))
        );
        assert_eq!((c.initial_cwnd_segments, c.delayed_acks), (1, false), "the presets'");
        let tuned = EngineOptions {
            tcp_tuning: TcpTuning { initial_cwnd_segments: Some(10), delayed_acks: Some(true), ..Default::default() },
            ..o
        };
        let c = tuned.tcp();
        assert_eq!((c.initial_cwnd_segments, c.delayed_acks), (10, true));
        assert_eq!(c.idle_timeout, Duration::from_secs(4), "the rest as before");
    }

    /// On a host ATP's cap grows with delivery and its pacing catches up
    /// within a burst; a cap the user gives is fixed.
    #[test]
    fn atp_on_a_host_paces_in_bursts_and_a_given_cap_is_fixed() {
        let o = options();
        let c = o.atp(Protocol::AtpDefault).unwrap();
        assert_eq!((c.delivery_growth, c.pacing_burst), (2.0, PACING_BURST));
        assert_eq!(c.min_delay, AtpConfig::default().min_delay);
        let fixed = EngineOptions { atp_min_delay: Some(Duration::from_millis(1)), ..o };
        let c = fixed.atp(Protocol::AtpAdaptive).unwrap();
        assert_eq!((c.min_delay, c.delivery_growth), (Duration::from_millis(1), 0.0));
        assert!(o.atp(Protocol::TcpCubic).is_none());
    }
}
