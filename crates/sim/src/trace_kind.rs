//! The fixed vocabularies of a run's report, as types: what a flow's trace
//! sample measures ([`TraceKind`]) and what a route-log entry says
//! ([`RouteLogSide`], [`RouteLogEvent`]). A misspelled kind does not compile
//! (it used to give a silently empty figure); files and Python see the same
//! names as before (`d_max_us`, `route-failed`).

use serde::{Deserialize, Serialize};
use std::fmt;

/// What one trace sample of a flow measures (its unit is in the name).
///
/// A misspelled kind does not compile:
///
/// ```compile_fail
/// let kind = meshbed_sim::TraceKind::DmaxUs; // D_max is `DMaxUs`
/// ```
///
/// and a misspelled name in a file is refused (see the tests below):
///
/// ```
/// let e = serde_json::from_str::<meshbed_sim::TraceKind>("\"dmax_us\"").unwrap_err();
/// assert!(e.to_string().contains("unknown variant `dmax_us`"));
/// let k: meshbed_sim::TraceKind = serde_json::from_str("\"d_max_us\"").unwrap();
/// assert_eq!(k, meshbed_sim::TraceKind::DMaxUs);
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceKind {
    /// ATP: the largest per-node delay D_max the receiver saw in an epoch
    /// (seed 001 §3.1), µs.
    DMaxUs,
    /// ATP: the delay average D_avg the receiver fed back, as sent, µs.
    DAvgSentUs,
    /// ATP: D_avg as the sender received it (D_avg′), µs.
    DAvgReceivedUs,
    /// ATP: the sender's smoothed delay D_s, µs.
    DSUs,
    /// TCP: the congestion window, segments.
    CwndSegments,
    /// TCP: a retransmitted segment's sequence number.
    RetransmitSeq,
    /// TCP: the retransmission timeout, s.
    RtoS,
    /// TCP: an RTT sample, s; echo flows: a request's round trip.
    RttS,
    /// TCP: 1 entered slow start, 0 left it.
    SlowStart,
    /// TCP-ELFN: 1 entered standby, 0 left it.
    Standby,
    /// MTL: the sending rate, packets/s.
    RatePps,
    /// MTL: the four-hop delay, s.
    FhdS,
    /// ATP: 1 probing after missed feedback, 2 after a route failure, 0 ended.
    Probing,
    /// In-order bytes handed to the application at the sample's time.
    DeliveredBytes,
    /// ATP: the out-of-order ranges the receiver held at a feedback, of
    /// which the feedback carries at most 20 (seed 002 §4.2.2).
    SackRanges,
}

impl TraceKind {
    /// Every kind, in the order above.
    pub const ALL: [TraceKind; 15] = [
        TraceKind::DMaxUs,
        TraceKind::DAvgSentUs,
        TraceKind::DAvgReceivedUs,
        TraceKind::DSUs,
        TraceKind::CwndSegments,
        TraceKind::RetransmitSeq,
        TraceKind::RtoS,
        TraceKind::RttS,
        TraceKind::SlowStart,
        TraceKind::Standby,
        TraceKind::RatePps,
        TraceKind::FhdS,
        TraceKind::Probing,
        TraceKind::DeliveredBytes,
        TraceKind::SackRanges,
    ];

    /// Its name in files (`d_max_us`).
    pub fn name(self) -> &'static str {
        match self {
            TraceKind::DMaxUs => "d_max_us",
            TraceKind::DAvgSentUs => "d_avg_sent_us",
            TraceKind::DAvgReceivedUs => "d_avg_received_us",
            TraceKind::DSUs => "d_s_us",
            TraceKind::CwndSegments => "cwnd_segments",
            TraceKind::RetransmitSeq => "retransmit_seq",
            TraceKind::RtoS => "rto_s",
            TraceKind::RttS => "rtt_s",
            TraceKind::SlowStart => "slow_start",
            TraceKind::Standby => "standby",
            TraceKind::RatePps => "rate_pps",
            TraceKind::FhdS => "fhd_s",
            TraceKind::Probing => "probing",
            TraceKind::DeliveredBytes => "delivered_bytes",
            TraceKind::SackRanges => "sack_ranges",
        }
    }
}

impl fmt::Display for TraceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a route-log entry was seen.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RouteLogSide {
    /// The flow's sender (its route to the receiver).
    Sender,
    /// The flow's receiver (its route back, for feedback and ACKs).
    Receiver,
    /// The flow's destination, where a change of the data's path is seen.
    Destination,
}

/// What a route-log entry records (seed 002 §2.3).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RouteLogEvent {
    /// Routing lost the route to the other end.
    RouteFailed,
    /// Routing has a route to the other end again.
    RouteReestablished,
    /// The data started to arrive over another path.
    PathChanged,
    /// The flow's feedback now comes back along its data's path, reversed
    /// (the first such entry: when both were first seen; seed 002 §2.5 (ii)).
    PathsSymmetric,
    /// The flow's data and its feedback now take different paths.
    PathsAsymmetric,
}

impl RouteLogSide {
    pub fn name(self) -> &'static str {
        match self {
            RouteLogSide::Sender => "sender",
            RouteLogSide::Receiver => "receiver",
            RouteLogSide::Destination => "destination",
        }
    }
}

impl RouteLogEvent {
    /// Every kind, in the order a legend lists them.
    pub const ALL: [RouteLogEvent; 5] = [
        RouteLogEvent::RouteFailed,
        RouteLogEvent::RouteReestablished,
        RouteLogEvent::PathChanged,
        RouteLogEvent::PathsSymmetric,
        RouteLogEvent::PathsAsymmetric,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RouteLogEvent::RouteFailed => "route-failed",
            RouteLogEvent::RouteReestablished => "route-reestablished",
            RouteLogEvent::PathChanged => "path-changed",
            RouteLogEvent::PathsSymmetric => "paths-symmetric",
            RouteLogEvent::PathsAsymmetric => "paths-asymmetric",
        }
    }
}

impl fmt::Display for RouteLogSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for RouteLogEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names files, figures and Python read are serde's names: one
    /// spelling each, and every kind listed once.
    #[test]
    fn names_are_serde_names_and_each_kind_is_listed_once() {
        for k in TraceKind::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), k.name(), "{k:?}");
            assert_eq!(serde_json::from_value::<TraceKind>(k.name().into()).unwrap(), k);
        }
        let mut names: Vec<_> = TraceKind::ALL.iter().map(|k| k.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), TraceKind::ALL.len());
        for (side, name) in [(RouteLogSide::Sender, "sender"), (RouteLogSide::Destination, "destination")] {
            assert_eq!(serde_json::to_value(side).unwrap(), name);
        }
        for e in RouteLogEvent::ALL {
            assert_eq!(serde_json::to_value(e).unwrap(), e.name());
            assert_eq!(serde_json::from_value::<RouteLogEvent>(e.name().into()).unwrap(), e);
        }
    }

    /// A kind read from a file that is not one of them is refused by name
    /// (a report read back, or a misspelling in Python), never taken as new.
    #[test]
    fn a_misspelled_kind_is_refused() {
        let e = serde_json::from_value::<TraceKind>("d_maxus".into()).unwrap_err().to_string();
        assert!(e.contains("unknown variant `d_maxus`") && e.contains("d_max_us"), "{e}");
    }
}
