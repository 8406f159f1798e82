//! The surface every transport engine shares (STYLE.md "Sans-IO protocol
//! engines"; quinn-proto `Connection`).
//!
//! A driver calls, in this order, whenever anything happens:
//! 1. [`Engine::handle_input`] for each datagram that arrived, and/or
//!    [`Engine::handle_timeout`] once the time from `poll_timeout` has come;
//! 2. [`Engine::poll_transmit`] repeatedly until it returns `None`, sending
//!    each datagram it writes;
//! 3. [`Engine::poll_event`] until `None`;
//! 4. [`Engine::poll_timeout`] to learn when to wake the engine next.
//!
//! Time is always passed in. A `handle_timeout` that comes early is a no-op,
//! and `poll_timeout` never returns a deadline that has already been handled,
//! so a driver cannot busy-loop.

use crate::wire::{parse_datagram, ResetReason};
use meshbed_core::{Duration, Instant};
use std::fmt;
use std::str::FromStr;

/// A datagram the engine wrote into the caller's buffer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Bytes written at the start of the buffer.
    pub len: usize,
}

/// Why a connection gave up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailReason {
    /// Nothing was heard from the peer for the configured idle time.
    PeerUnreachable { silent_for: Duration },
    /// The peer sent RST.
    Reset,
    /// Every byte was acknowledged, but no commit confirmation came within
    /// the idle time ([`crate::stream`]): the acknowledgements were forged,
    /// or the receiver could not commit. Never a success.
    Unconfirmed { waited: Duration },
    /// The peer refused the connection because it is at its transfer limit
    /// (an RST carrying [`ResetReason::Busy`]).
    Busy,
    /// The peer has no room for the stream (an RST carrying
    /// [`ResetReason::NoSpace`]).
    NoSpace,
    /// The peer holds a key and could not verify ours (an RST carrying
    /// [`ResetReason::KeyMismatch`]).
    KeyMismatch,
}

impl FailReason {
    /// Why a connection ends on the RST `datagram`: [`FailReason::Busy`] when
    /// it carries that reason, else [`FailReason::Reset`].
    pub fn of_reset(datagram: &[u8]) -> FailReason {
        match parse_datagram(datagram).map(|(_, payload)| ResetReason::from_payload(payload)) {
            Ok(Some(ResetReason::Busy)) => FailReason::Busy,
            Ok(Some(ResetReason::NoSpace)) => FailReason::NoSpace,
            Ok(Some(ResetReason::KeyMismatch)) => FailReason::KeyMismatch,
            _ => FailReason::Reset,
        }
    }
}

impl fmt::Display for FailReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailReason::PeerUnreachable { silent_for } => {
                write!(f, "peer unreachable: nothing heard for {silent_for}")
            }
            FailReason::Reset => write!(f, "connection reset by peer"),
            FailReason::Unconfirmed { waited } => {
                write!(f, "every byte was acknowledged but the receiver did not confirm the commit within {waited}")
            }
            FailReason::Busy => write!(f, "receiver busy: the peer is at its transfer limit"),
            FailReason::NoSpace => write!(f, "receiver out of space: the peer has no room for the file"),
            FailReason::KeyMismatch => {
                write!(f, "key mismatch: the peer could not verify this connection with its key")
            }
        }
    }
}

/// What an engine reports to its driver.
#[derive(Clone, Debug, PartialEq)]
pub enum EngineEvent {
    /// The handshake completed.
    Connected,
    /// Every byte was delivered (sender: acknowledged; receiver: received and
    /// the FIN seen). The connection may still linger to answer retransmitted
    /// FINs, but the driver may drop it.
    Finished,
    /// The connection failed; nothing more will happen.
    Failed(FailReason),
    /// A trace sample for the experiment layer's per-packet traces.
    Trace(TraceSample),
    /// The peer stopped answering, but the connection goes on: the routing
    /// module labels it inaccessible until its TC messages settle it (MTL,
    /// seed 004 §III.B). Drivers without such a routing module ignore it.
    PeerUnresponsive,
}

/// Per-packet and per-feedback samples (issue 4's traces: D_max at the
/// receiver, D_s at the sender, D_avg as fed back, rate or cwnd over time).
#[derive(Clone, Debug, PartialEq)]
pub enum TraceSample {
    /// ATP receiver: D_max carried by an arriving data packet.
    DMax { at: Instant, d_max: Duration },
    /// ATP receiver: D_avg put into a feedback packet.
    DAvgSent { at: Instant, d_avg: Duration },
    /// ATP sender: D_avg taken from an arriving feedback packet.
    DAvgReceived { at: Instant, d_avg: Duration },
    /// ATP sender: inter-packet delay D_s now in use.
    Ds { at: Instant, d_s: Duration },
    /// TCP sender: congestion window in segments.
    Cwnd { at: Instant, cwnd_segments: f64 },
    /// Any sender: a segment was sent again.
    Retransmit { at: Instant, seq: u64, len: usize },
    /// TCP sender: the retransmission timeout changed (a new RTT sample, a
    /// backoff, or the value restored after an ELFN standby; the first
    /// computed value always). The largest is the connection's maximum RTO
    /// (seed 002 §2.1, Fig. 2(c)).
    Rto { at: Instant, rto: Duration },
    /// TCP sender: one RTT measurement (seed 002 §2.1, Fig. 2(a)–(b)).
    RttSample { at: Instant, rtt: Duration },
    /// TCP sender: slow start (cwnd < ssthresh) began (`entered`, also on a
    /// restart from the loss window while already in it) or ended (seed 002
    /// §2.2, Fig. 3).
    SlowStart { at: Instant, entered: bool },
    /// TCP-ELFN sender: standby began (route failure notice) or ended
    /// (Holland & Vaidya 1999; seed 002 §2.4).
    Standby { at: Instant, entered: bool },
    /// ATP sender: quick-start probing began again (missed feedback, seed
    /// 002 §4.3.2, or a "route failed" notice, §4.3.3: `route_failure`) or
    /// ended with the answer to a probe.
    Probing { at: Instant, entered: bool, route_failure: bool },
    /// MTL sender: the rate R of seed 004 eq. 9 now in use, packets per second.
    MtlRate { at: Instant, rate_pps: f64 },
    /// MTL sender: FHD̄, the averaged 4-hop delay of seed 004 eq. 10.
    Fhd { at: Instant, fhd: Duration },
    /// ATP receiver: the out-of-order ranges it holds when it sends a
    /// feedback, of which the feedback describes at most 20, the first
    /// (seed 002 §4.2.2: "using 20 SACK blocks, most if not all of the
    /// losses in an epoch can be identified").
    SackRanges { at: Instant, ranges: usize },
}

/// Counters every engine keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    /// Application bytes sent for the first time.
    pub bytes_sent: u64,
    /// Application bytes the peer has confirmed (sender) or that arrived in
    /// order (receiver).
    pub bytes_delivered: u64,
    pub retransmissions: u64,
    pub retransmitted_bytes: u64,
    /// ATP feedback packets (sent by a receiver, received by a sender); ACKs for TCP.
    pub feedback_packets: u64,
    /// Datagrams dropped as malformed, stray (wrong connection) or duplicate.
    pub dropped_datagrams: u64,
    /// Datagrams that no conforming peer sends (also counted as dropped): an
    /// acknowledgement of bytes never sent, a wrong commit token. They are
    /// ignored; a transfer never succeeds on their account.
    pub protocol_violations: u64,
    /// Receiver: data datagrams dropped because holding them out of order
    /// would exceed the reorder limit ([`crate::reorder`]), or because the
    /// receive buffer is full of bytes the application has not read yet (a
    /// slow reader; ATP's `set_receive_buffer`, TCP's window).
    pub dropped_over_buffer_limit: u64,
    /// RSTs ignored because they did not name the sequence this end holds
    /// (RFC 5961 §3; also counted as dropped): a sender takes an RST only at
    /// exactly its oldest unacknowledged sequence, a receiver only within
    /// its window.
    pub resets_ignored: u64,
    /// Sender: RSTs within the window but not exactly at its start, answered
    /// by sending that sequence again (RFC 5961 §3.2's challenge).
    pub reset_challenges: u64,
}

/// The engine surface. See the module doc for the calling order.
pub trait Engine {
    /// Feeds one received datagram. Malformed or stray datagrams are counted
    /// in [`Stats::dropped_datagrams`] and otherwise ignored.
    fn handle_input(&mut self, now: Instant, datagram: &[u8]);
    /// Runs timers due at or before `now`; early calls do nothing.
    fn handle_timeout(&mut self, now: Instant);
    /// Writes the next datagram to send into `buf` (at least `max_datagram`
    /// bytes long), or returns `None` when nothing may be sent now.
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit>;
    /// The next time `handle_timeout` must be called, if any.
    fn poll_timeout(&self) -> Option<Instant>;
    fn poll_event(&mut self) -> Option<EngineEvent>;
    fn stats(&self) -> &Stats;
    /// Whether the connection is over (finished or failed).
    fn is_closed(&self) -> bool;
    /// Explicit link-failure notification (ELFN; Holland & Vaidya 1999,
    /// seed 002 §2.4, §3.1, §4.3.3): the route to the peer failed or was
    /// re-established. The driver delivers the notice; what a protocol does
    /// with it is its own rule: ATP's sender probes again and both ATP
    /// sides wait out the outage, TCP-ELFN's sender stands by, plain TCP
    /// (this default) ignores it.
    fn handle_route_notice(&mut self, _now: Instant, _notice: RouteNotice) {}
    /// What the routing module knows about the path to the peer (MTL's
    /// cross-layer input, seed 004 §III.A–C): delivered whenever the route
    /// or its link qualities change. Only MTL uses it; the default ignores it.
    fn handle_path_info(&mut self, _now: Instant, _info: PathInfo) {}
}

/// The routing module's view of the path to the peer
/// ([`Engine::handle_path_info`]; seed 004 §III.C.2).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct PathInfo {
    /// Links on the route, h (eqs. 5–8).
    pub hop_count: u32,
    /// The route's bottleneck loss probability, P_max = max over its links
    /// of 1 − 1/ETX (eqs. 2–4); 0 where link quality is not measured.
    pub max_link_loss: f64,
    /// The interface bandwidth b of eqs. 7–8, bit/s.
    pub link_rate_bps: u64,
}

/// What routing tells a transport about its path ([`Engine::handle_route_notice`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RouteNotice {
    /// The route to the peer is gone (a link on it broke).
    Failed,
    /// A route to the peer exists again.
    Reestablished,
}

/// The protocols meshbed implements, by their scenario names.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    AtpDefault,
    AtpAggressive,
    AtpAdaptive,
    TcpTahoe,
    TcpReno,
    TcpNewReno,
    /// NewReno with explicit link-failure notification (Holland & Vaidya
    /// 1999): frozen in standby while the route is down (seed 002 §2.4).
    TcpNewRenoElfn,
    /// Reno with rate-based pacing (seed 003 §6; Visweswaraiah & Heidemann
    /// 1997): new segments leave SRTT / (V · cwnd) apart.
    TcpRenoPaced,
    /// NewReno with the same pacing.
    TcpNewRenoPaced,
    /// MTL's transport module (seed 004 §III.C): Explicit Gap Notifications
    /// and the four-hop-delay rate ([`crate::mtl`]).
    Mtl,
    /// CUBIC (RFC 9438) with SACK and RFC 6675's loss recovery: the
    /// congestion control of today's Linux ([`crate::tcp::cubic`],
    /// [`crate::tcp::sack`]).
    TcpCubic,
    /// NewReno's window with SACK and RFC 6675's loss recovery
    /// ([`crate::tcp::sack`]).
    TcpSack,
    /// BBR v1 with SACK, RACK-TLP and pacing ([`crate::tcp::bbr`]): Linux's
    /// `tcp_bbr`.
    TcpBbr,
}

impl Protocol {
    /// Every protocol; new ones go at the end, since a connection id carries
    /// the index ([`crate::connection::protocol_code`]).
    pub const ALL: [Protocol; 13] = [
        Protocol::AtpDefault,
        Protocol::AtpAggressive,
        Protocol::AtpAdaptive,
        Protocol::TcpTahoe,
        Protocol::TcpReno,
        Protocol::TcpNewReno,
        Protocol::TcpNewRenoElfn,
        Protocol::TcpRenoPaced,
        Protocol::TcpNewRenoPaced,
        Protocol::Mtl,
        Protocol::TcpCubic,
        Protocol::TcpSack,
        Protocol::TcpBbr,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Protocol::AtpDefault => "atp-default",
            Protocol::AtpAggressive => "atp-aggressive",
            Protocol::AtpAdaptive => "atp-adaptive",
            Protocol::TcpTahoe => "tcp-tahoe",
            Protocol::TcpReno => "tcp-reno",
            Protocol::TcpNewReno => "tcp-newreno",
            Protocol::TcpNewRenoElfn => "tcp-newreno-elfn",
            Protocol::TcpRenoPaced => "tcp-reno-paced",
            Protocol::TcpNewRenoPaced => "tcp-newreno-paced",
            Protocol::Mtl => "mtl",
            Protocol::TcpCubic => "tcp-cubic",
            Protocol::TcpSack => "tcp-sack",
            Protocol::TcpBbr => "tcp-bbr",
        }
    }
    /// Whether the sender paces its segments ([`crate::tcp::TcpConfig::pacing`]).
    pub fn is_paced(self) -> bool {
        matches!(self, Protocol::TcpRenoPaced | Protocol::TcpNewRenoPaced)
    }
    pub fn is_atp(self) -> bool {
        matches!(self, Protocol::AtpDefault | Protocol::AtpAggressive | Protocol::AtpAdaptive)
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Protocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Protocol::ALL.iter().copied().find(|p| p.name() == s).ok_or_else(|| {
            let names: Vec<_> = Protocol::ALL.iter().map(|p| p.name()).collect();
            format!("unknown protocol `{s}`; expected one of {}", names.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn protocol_names_round_trip_and_reject_unknown() {
        for p in Protocol::ALL {
            assert_eq!(p.name().parse::<Protocol>().unwrap(), p);
        }
        let err = "tcp-vegas".parse::<Protocol>().unwrap_err();
        assert!(err.contains("tcp-vegas") && err.contains("atp-adaptive"), "{err}");
    }
}
