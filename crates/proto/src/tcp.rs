//! TCP Tahoe, Reno and NewReno over the ATP/TCP-over-UDP encapsulation.
//!
//! The thesis compared ATP with its own user-level TCP Tahoe running over UDP
//! with the same header (seed 001 §3.3, Fig. 3.2: protocol id = TCP, byte
//! sequence and acknowledgement numbers, TCP's control flags). meshbed does
//! the same so that both protocols see identical encapsulation overhead and
//! the same radio model; Reno and NewReno are added for context.
//!
//! One connection carries one application transfer from a [`TcpSender`] to a
//! [`TcpReceiver`]:
//!
//! ```text
//! sender                                   receiver
//!   SYN          seq 0 ─────────────────▶
//!            ◀──────────────── SYN|ACK seq 0 ack 1
//!   ACK          seq 1.. data ──────────▶   (the first data segment completes
//!   ...                                      the handshake; no separate ACK)
//!            ◀──────────────── ACK ack n    (cumulative, one per segment or
//!   ACK|FIN      last data ─────────────▶    every second with delayed ACKs)
//!            ◀──────────────── ACK ack len+2
//! ```
//!
//! Sequence numbers follow TCP with an initial sequence number of 0 on both
//! sides (the connection id, drawn by the driver, tells connections apart; the
//! 64-bit byte numbers never wrap, see [`crate::wire`]): the SYN occupies
//! sequence number 0, application byte `i` is sequence number `1 + i`, and the
//! FIN, carried on the last data segment, occupies `1 + len`. The receiver
//! sends no data, so it never sends a FIN of its own and there is no
//! TIME-WAIT: once it has every byte and the FIN it reports
//! [`EngineEvent::Finished`](crate::EngineEvent::Finished) but still
//! acknowledges retransmitted FINs for as long as its driver keeps it.
//!
//! With [`TcpConfig::elfn`] (the `tcp-newreno-elfn` protocol) the sender
//! reacts to route notices as TCP-ELFN does (Holland & Vaidya 1999, seed 002
//! §2.4): see [`TcpSender`]'s "Route failures".
//!
//! Congestion control lives in [`cc`] behind the [`cc::CongestionControl`]
//! trait; RFC 6298's timer in [`rtt`]. Defaults, and the places where the
//! RFCs leave a choice, are documented on [`TcpConfig`].

pub mod bbr;
#[cfg(test)]
mod bbr_sender_tests;
pub mod cc;
pub mod cubic;
pub mod delivery_rate;
#[cfg(test)]
mod elfn_tests;
pub mod hystart;
#[cfg(test)]
mod instrumentation_tests;
#[cfg(test)]
mod pacing_tests;
pub mod prr;
#[cfg(test)]
mod prr_sender_tests;
pub mod rack;
#[cfg(test)]
mod rack_sender_tests;
mod receiver;
#[cfg(test)]
mod receiver_tests;
pub mod rtt;
pub mod sack;
mod sender;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod timestamp_tests;

pub use receiver::{TcpReceiveControl, TcpReceiver};
pub use sender::{TcpSendControl, TcpSender, TcpSenderStats};

use crate::engine::Protocol;
use crate::receiver_core::ReceiverTimer;
use crate::sender_core::SenderTimer;
use crate::timer::TimerId;
use crate::wire::HEADER_LEN;
use meshbed_core::Duration;
#[cfg(test)]
use meshbed_core::Instant;

/// Which loss-recovery algorithm the sender runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TcpVariant {
    /// Slow start, congestion avoidance, fast retransmit; every loss ends in
    /// slow start from one segment (the thesis' baseline, seed 001 ch. 5).
    Tahoe,
    /// Adds fast recovery (RFC 5681 §3.2).
    Reno,
    /// Fast recovery with partial-ACK handling (RFC 6582).
    NewReno,
    /// RFC 5681's window with SACK (RFC 2018) and RFC 6675's loss
    /// recovery ([`sack`]).
    Sack,
    /// CUBIC's window (RFC 9438, [`cubic`]) with SACK and RFC 6675's
    /// recovery: the TCP of today's Linux, as far as meshbed models it.
    Cubic,
    /// BBR v1 ([`bbr`]) with SACK, RACK-TLP and pacing at BBR's rate:
    /// Linux's `tcp_bbr`.
    Bbr,
}

impl TcpVariant {
    pub const ALL: [TcpVariant; 6] = [
        TcpVariant::Tahoe,
        TcpVariant::Reno,
        TcpVariant::NewReno,
        TcpVariant::Sack,
        TcpVariant::Cubic,
        TcpVariant::Bbr,
    ];

    /// The variants whose window reacts to loss (all but BBR): the rules
    /// of RFC 5681 and its successors that their tests share.
    pub const LOSS_BASED: [TcpVariant; 5] =
        [TcpVariant::Tahoe, TcpVariant::Reno, TcpVariant::NewReno, TcpVariant::Sack, TcpVariant::Cubic];

    /// Whether the receiver reports SACK blocks and the sender recovers
    /// from them (RFC 2018, RFC 6675).
    pub fn uses_sack(self) -> bool {
        matches!(self, TcpVariant::Sack | TcpVariant::Cubic | TcpVariant::Bbr)
    }

    /// The variant a scenario's protocol name selects, `None` for ATP.
    pub fn from_protocol(protocol: Protocol) -> Option<TcpVariant> {
        match protocol {
            Protocol::TcpTahoe => Some(TcpVariant::Tahoe),
            // Pacing is not a loss-recovery algorithm either
            // ([`TcpConfig::pacing`]); seed 003 §6 paced Reno.
            Protocol::TcpReno | Protocol::TcpRenoPaced => Some(TcpVariant::Reno),
            // ELFN is not a loss-recovery algorithm but a reaction to route
            // notices on top of one ([`TcpConfig::elfn`]); seed 002 §2: "We
            // use TCP-NewReno for all our simulations".
            Protocol::TcpNewReno | Protocol::TcpNewRenoElfn | Protocol::TcpNewRenoPaced => Some(TcpVariant::NewReno),
            Protocol::TcpSack => Some(TcpVariant::Sack),
            Protocol::TcpCubic => Some(TcpVariant::Cubic),
            Protocol::TcpBbr => Some(TcpVariant::Bbr),
            _ => None,
        }
    }

    /// The plain protocol of this variant (ELFN and pacing off).
    pub fn protocol(self) -> Protocol {
        match self {
            TcpVariant::Tahoe => Protocol::TcpTahoe,
            TcpVariant::Reno => Protocol::TcpReno,
            TcpVariant::NewReno => Protocol::TcpNewReno,
            TcpVariant::Sack => Protocol::TcpSack,
            TcpVariant::Cubic => Protocol::TcpCubic,
            TcpVariant::Bbr => Protocol::TcpBbr,
        }
    }
}

/// Parameters shared by sender and receiver. Every field is public so that a
/// scenario can override it; the defaults are below with the reason for each.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    /// Sender maximum segment size: application bytes per datagram. The
    /// default 1436 fills a 1500-byte IP packet: 1500 − 20 (IPv4) − 8 (UDP)
    /// − 36 (meshbed header).
    pub mss_bytes: usize,
    /// Initial window in segments. Default 1: classic Tahoe (Jacobson 1988)
    /// and the thesis-era user-level TCP start slow start from one segment;
    /// RFC 5681 §3.1 would allow 3 at this MSS (RFC 3390), Linux now uses 10.
    pub initial_cwnd_segments: u32,
    /// Initial slow-start threshold in segments. RFC 5681 §3.1: "arbitrarily
    /// high (e.g., to the size of the largest possible advertised window)",
    /// so the default equals `max_cwnd_segments`.
    pub initial_ssthresh_segments: u32,
    /// The largest window in segments. There is no advertised receiver
    /// window on the wire (the header has no field for it), so this stands in
    /// for it; the receiver accepts out-of-order data this far ahead. Default
    /// 64 segments (≈ 92 KB, the classic 64 KiB window's order of magnitude).
    pub max_cwnd_segments: u32,
    /// Duplicate ACKs that trigger fast retransmit (RFC 5681 §3.2: 3).
    pub dupack_threshold: u32,
    /// RTO before the first RTT sample (RFC 6298 §2.1: 1 s).
    pub initial_rto: Duration,
    /// Lower bound on the RTO. RFC 6298 §2.4 says 1 s; the default is 200 ms
    /// (Linux's `TCP_RTO_MIN`) because mesh round trips are tens of
    /// milliseconds and a 1 s floor makes every timeout-driven recovery
    /// dominate a transfer. Set 1 s for strict RFC behaviour.
    pub min_rto: Duration,
    /// Upper bound on the (backed-off) RTO (RFC 6298 §2.5: at least 60 s).
    pub max_rto: Duration,
    /// Clock granularity G in RFC 6298 (2.2)/(2.3): the smallest variance
    /// term. Default 1 ms, a typical kernel tick; engines see ns time.
    pub clock_granularity: Duration,
    /// Delayed ACKs (RFC 5681 §4.2, RFC 1122 §4.2.3.2): ACK every second
    /// in-order segment or after `delayed_ack_timeout`, at once for anything
    /// out of order, duplicate, filling a hole, or carrying FIN. Default off,
    /// so that every segment is ACKed as in the simple user-level TCP the
    /// thesis measured.
    pub delayed_acks: bool,
    /// The delayed-ACK timer (RFC 5681 §4.2: less than 500 ms; 200 ms is the
    /// common value).
    pub delayed_ack_timeout: Duration,
    /// With nothing heard from the peer for this long the connection fails
    /// with `PeerUnreachable` (a route that broke for good). The sender's
    /// clock starts at construction; the receiver's at the first SYN, since a
    /// listening endpoint waits indefinitely. Default 100 s, RFC 1122
    /// §4.2.3.5's R2 ("at least 100 seconds"): a route that breaks for a few
    /// seconds while nodes move (seed 002 §2.1) must not end the connection;
    /// `meshbed send`/`recv` set their own, shorter, from `--timeout`.
    pub idle_timeout: Duration,
    /// The sender also needs this many retransmission timeouts in a row
    /// without an answer before it gives up: a backed-off RTO can exceed the
    /// idle time, and silence then only means it has not asked again (RFC
    /// 1122 §4.2.3.5 counts retransmissions, R2 of at least 100 s). Default 6.
    /// The receiver waits `idle_timeout + max_unanswered_rtos × max_rto`.
    pub max_unanswered_rtos: u32,
    /// The receiver's memory guard: what it holds out of order beyond
    /// `rcv_nxt` may be charged at most this much, per-piece overhead
    /// included ([`crate::reorder`]; a driver may lower it per connection).
    /// The window (`max_cwnd_segments`) bounds the span a conforming sender
    /// uses; this bounds the memory a hostile one can make it take (many
    /// tiny segments). Default 256 MiB, as ATP's `max_reorder_bytes`: never
    /// reached in simulations; `meshbed recv` sets a mesh-sized limit.
    pub max_reorder_bytes: u64,
    /// TCP-ELFN (Holland & Vaidya 1999, seed 002 §2.4): on a route-failure
    /// notice the sender freezes in standby instead of timing out. Off by
    /// default; [`crate::connection::EngineConfig::new`] sets it from the
    /// protocol name (`tcp-newreno-elfn`), so plain TCP ignores notices.
    pub elfn: bool,
    /// How often a sender in ELFN standby probes for a route. Default 2 s,
    /// the interval Holland & Vaidya used.
    pub elfn_probe_interval: Duration,
    /// Rate-based pacing (seed 003 §6, after Visweswaraiah & Heidemann
    /// 1997): consecutive segments leave at least
    /// `SRTT / (pacing_v · cwnd)` apart, so that one window is spread over
    /// one round trip instead of leaving as a burst. Off by default;
    /// [`crate::connection::EngineConfig::new`] sets it from the protocol
    /// name (`tcp-reno-paced`, `tcp-newreno-paced`). See [`TcpSender`]'s
    /// "Rate-based pacing" for the rule and its choices.
    pub pacing: bool,
    /// V, the aggressiveness of pacing: it multiplies the denominator, so
    /// V > 1 sends faster than one window per RTT and V < 1 slower (seed 003
    /// §6: "V controls the aggressiveness of the pacing by artificially
    /// increasing or decreasing the denominator"). Default 1, the paper's
    /// value in every experiment. Must be finite and positive; another value
    /// is replaced by 1.
    pub pacing_v: f64,
    /// SACK (RFC 2018): the receiver reports up to three blocks of data
    /// held above the cumulative ACK on every ACK. The protocol decides it
    /// ([`crate::connection::EngineConfig::new`]: `tcp-sack`, `tcp-cubic`),
    /// as a SYN's SACK-permitted option would; the connection id's protocol
    /// code stands in for that negotiation.
    pub sack: bool,
    /// RFC 7323's timestamps for round-trip measurement (RTTM): every data
    /// segment carries the sender's clock (TSval) and every ACK echoes the
    /// TSval of the segment that last moved the receiver's left edge
    /// (TSecr), so that an ACK of retransmitted data still gives an RTT
    /// sample (no Karn ambiguity) and a backed-off RTO recovers at the first
    /// ACK. meshbed's header carries them in the two delay fields relays
    /// stamp only on ATP's protocol id (D_max = TSval, D_s = TSecr, µs).
    /// Set from the protocol, as `sack` is: on for `tcp-sack` and
    /// `tcp-cubic` (Linux sends timestamps by default), off for the 2003
    /// TCPs, which had none (seed 001 §3.3).
    pub timestamps: bool,
    /// HyStart++ (RFC 9406) in `tcp-cubic`'s initial slow start (RFC 9438
    /// §4.10 recommends it; [`cubic`] and [`hystart`] say how). Default on;
    /// off gives RFC 5681's slow start. The other variants ignore it.
    pub hystart: bool,
    /// RACK-TLP (RFC 8985, [`rack`]) as the SACK senders' loss detection
    /// (`tcp-sack`, `tcp-cubic`): time-based marking instead of the
    /// duplicate-ACK threshold, and tail loss probes. Default on, as in
    /// Linux since 4.18 (`net.ipv4.tcp_recovery = 1`); off gives RFC 6675's
    /// `IsLost` and DupThresh. The TCPs without SACK ignore it; `tcp-bbr`
    /// always runs it (BBR's window takes the losses RACK marks, as in
    /// Linux, where BBR has no other loss detection).
    pub rack_tlp: bool,
    /// Proportional Rate Reduction (RFC 6937, [`prr`]) as the SACK senders'
    /// window in loss recovery (`tcp-sack`, `tcp-cubic`), as Linux runs it;
    /// off (the default, which every result before issue 27's anchor used):
    /// RFC 6675's cwnd = ssthresh for the whole recovery. `tcp-bbr` sets
    /// its own window and ignores it.
    pub prr: bool,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss_bytes: 1500 - 20 - 8 - HEADER_LEN,
            initial_cwnd_segments: 1,
            initial_ssthresh_segments: 64,
            max_cwnd_segments: 64,
            dupack_threshold: 3,
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(60),
            clock_granularity: Duration::from_millis(1),
            delayed_acks: false,
            delayed_ack_timeout: Duration::from_millis(200),
            idle_timeout: Duration::from_secs(100),
            max_unanswered_rtos: 6,
            max_reorder_bytes: 256 << 20,
            elfn: false,
            elfn_probe_interval: Duration::from_secs(2),
            pacing: false,
            pacing_v: 1.0,
            sack: false,
            timestamps: false,
            hystart: true,
            rack_tlp: true,
            prr: false,
        }
    }
}

impl TcpConfig {
    /// Replaces values that would stall or loop an engine (zero sizes, zero
    /// timeouts) with the smallest workable ones, so that no configuration
    /// can make `poll_timeout` stand still or a window stay shut.
    fn sanitized(&self) -> TcpConfig {
        let one_ns = Duration::from_nanos(1);
        let max_cwnd_segments = self.max_cwnd_segments.max(1);
        let min_rto = self.min_rto.max(one_ns);
        TcpConfig {
            mss_bytes: self.mss_bytes.max(1),
            initial_cwnd_segments: self.initial_cwnd_segments.clamp(1, max_cwnd_segments),
            initial_ssthresh_segments: self.initial_ssthresh_segments.max(1),
            max_cwnd_segments,
            dupack_threshold: self.dupack_threshold.max(1),
            initial_rto: self.initial_rto.max(one_ns),
            min_rto,
            max_rto: self.max_rto.max(min_rto),
            clock_granularity: self.clock_granularity,
            delayed_acks: self.delayed_acks,
            delayed_ack_timeout: self.delayed_ack_timeout.max(one_ns),
            idle_timeout: self.idle_timeout.max(one_ns),
            max_unanswered_rtos: self.max_unanswered_rtos,
            max_reorder_bytes: self.max_reorder_bytes,
            elfn: self.elfn,
            elfn_probe_interval: self.elfn_probe_interval.max(one_ns),
            pacing: self.pacing,
            pacing_v: if self.pacing_v.is_finite() && self.pacing_v > 0.0 { self.pacing_v } else { 1.0 },
            sack: self.sack,
            timestamps: self.timestamps,
            hystart: self.hystart,
            rack_tlp: self.rack_tlp,
            prr: self.prr,
        }
    }

    /// How far beyond the next expected byte the receiver buffers data.
    fn receive_window_bytes(&self) -> u64 {
        self.max_cwnd_segments as u64 * self.mss_bytes as u64
    }
}

/// A TSval (RFC 7323) for `now`: microseconds of engine time, wrapping at
/// 2³², never 0 (an echo of 0 means "none").
pub(crate) fn tsval(now: meshbed_core::Instant) -> u32 {
    ((now.as_nanos() / 1_000) % u64::from(u32::MAX)) as u32 + 1
}

/// The engines' timers (quinn-proto `connection/timer.rs`): each indexes one
/// slot of a [`TimerTable`](crate::timer::TimerTable). The sender uses `Retransmit`, `Idle`,
/// `Confirm`, `ElfnProbe` and `Pace`, the receiver `DelayedAck` and `Idle`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
    /// Checked first so that a connection that has given up does not also
    /// retransmit at the same instant.
    Idle,
    Retransmit,
    DelayedAck,
    /// Everything acknowledged: the commit confirmation is due by now.
    Confirm,
    /// TCP-ELFN standby: the next route probe is due.
    ElfnProbe,
    /// Pacing: the next segment, held back by the pacing rule, may leave.
    Pace,
    /// RACK (RFC 8985 §6.3): a segment's reordering window has passed.
    Rack,
    /// TLP (RFC 8985 §7): the probe timeout.
    Tlp,
}

impl TimerId for Timer {
    const ALL: &'static [Timer] = &[
        Timer::Idle,
        Timer::Retransmit,
        Timer::DelayedAck,
        Timer::Confirm,
        Timer::ElfnProbe,
        Timer::Pace,
        Timer::Rack,
        Timer::Tlp,
    ];
}

impl SenderTimer for Timer {
    const IDLE: Timer = Timer::Idle;
    const CONFIRM: Timer = Timer::Confirm;
}

impl ReceiverTimer for Timer {
    const IDLE: Timer = Timer::Idle;
    /// TCP's receiver does not linger: finished is closed (there is no
    /// TIME-WAIT, see the module doc).
    const LINGER: Option<Timer> = None;
}
