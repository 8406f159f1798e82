//! nl80211 station statistics: what a Wi-Fi driver counts per station
//! (each neighbour it exchanges frames with), dumped every interval and
//! turned into link-feed records.
//!
//! * **Signal.** [`Nl80211StationInfo::Signal`], the power of the last
//!   frame received from the station, as [`LinkFeed::Heard`]. Seed 003
//!   §3.2's filter averages received signal strength itself (the engine's
//!   EWMA, `AodvConfig::ss_alpha`), so it gets samples, not the driver's
//!   own average (`SignalAvg`), which would average twice and lag; the
//!   average is taken only from a driver that reports nothing else. A
//!   sample is given only when the station's received-packet count moved
//!   since the last dump (or, for a station first seen, it was active
//!   within the interval): a station entry outlives its neighbour by
//!   minutes, and a stale signal reported as "heard" would keep a gone
//!   neighbour alive.
//! * **Failures.** [`Nl80211StationInfo::TxFailed`] counts frames to the
//!   station that exhausted their retries — what the emulator's medium
//!   reports frame by frame. A rise since the last dump is one
//!   [`LinkFeed::Failed`]: the engine breaks the link on the first, so a
//!   count would add nothing.
//!
//! The messages are `wl-nl80211`'s, the rust-netlink family's nl80211
//! crate (the same family and `netlink-packet-core` as the routing
//! table's `netlink-packet-route`), which types a station dump's
//! signal, counters and MAC; its async handle is not used — the daemon's
//! loop is synchronous (`ppoll`), so the dump goes through the same
//! request/reply socket as the routing table's ([`Requests`]). The family
//! id (dynamic, like every generic-netlink family's) is resolved through
//! `netlink-packet-generic`'s controller messages.
//!
//! There is no Wi-Fi hardware or `mac80211_hwsim` on the machine this was
//! written on: the mapping ([`StationSample::from_message`],
//! [`StationCounters::map_dump`]) is tested on constructed messages, the
//! dump itself never ran against a driver.

use crate::kernel::Requests;
use crate::node::NodeId;
use meshbed_net::linkfeed::LinkFeed;
use netlink_packet_core::{NLM_F_ACK, NLM_F_DUMP};
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_packet_generic::{GenlFamily, GenlMessage};
use netlink_sys::protocols::NETLINK_GENERIC;
use std::collections::BTreeMap;
use std::io;
use std::time::{Duration, Instant};
use wl_nl80211::{Nl80211Attr, Nl80211Command, Nl80211Message, Nl80211StationInfo, ETH_ALEN};

/// A station's link-layer address.
pub type Mac = [u8; ETH_ALEN];

/// What one station record of a dump says, as far as the feed reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StationSample {
    pub mac: Mac,
    /// The last received frame's signal, or the driver's average when it
    /// reports only that (see the module's doc).
    pub signal_dbm: Option<i8>,
    pub rx_packets: Option<u32>,
    pub tx_failed: Option<u32>,
    /// Time since the station was last active.
    pub inactive_ms: Option<u32>,
}

impl StationSample {
    /// The station a `NL80211_CMD_NEW_STATION` message (a dump's record)
    /// describes; `None` for any other message, or one without a MAC.
    pub fn from_message(msg: &Nl80211Message) -> Option<Self> {
        if msg.cmd != Nl80211Command::NewStation {
            return None;
        }
        let mut mac = None;
        let mut info: &[Nl80211StationInfo] = &[];
        for a in &msg.attributes {
            match a {
                Nl80211Attr::Mac(m) => mac = Some(*m),
                Nl80211Attr::StationInfo(i) => info = i,
                _ => {}
            }
        }
        let mut s = StationSample { mac: mac?, ..Default::default() };
        let mut signal_avg_dbm = None;
        for i in info {
            match i {
                Nl80211StationInfo::Signal(d) => s.signal_dbm = Some(*d),
                Nl80211StationInfo::SignalAvg(d) => signal_avg_dbm = Some(*d),
                Nl80211StationInfo::RxPackets(n) => s.rx_packets = Some(*n),
                Nl80211StationInfo::TxFailed(n) => s.tx_failed = Some(*n),
                Nl80211StationInfo::InactiveTime(ms) => s.inactive_ms = Some(*ms),
                _ => {}
            }
        }
        s.signal_dbm = s.signal_dbm.or(signal_avg_dbm);
        Some(s)
    }
}

/// The counters of a station at the previous dump.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    rx_packets: Option<u32>,
    tx_failed: Option<u32>,
}

/// The state between dumps: each station's counters at the last one.
#[derive(Clone, Debug, Default)]
pub struct StationCounters {
    seen: BTreeMap<Mac, Seen>,
}

/// What one dump added up to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DumpOutcome {
    /// Stations with something to report whose MAC maps to no mesh node
    /// (not in the neighbour table yet, or not a node of the mesh).
    pub unknown: u64,
}

impl StationCounters {
    /// Appends to `out` the records of one dump taken `interval` after the
    /// last: [`LinkFeed::Heard`] for a station heard since (with its
    /// signal), then [`LinkFeed::Failed`] for one whose failed-frame count
    /// rose. `node_of` maps a station's MAC to its node. A station absent
    /// from the dump is forgotten, so one that returns (its counters
    /// restarted) starts from its new counts; a count that fell is a
    /// restart too, not a failure.
    pub fn map_dump(
        &mut self,
        dump: &[StationSample],
        interval: Duration,
        node_of: &mut dyn FnMut(&Mac) -> Option<NodeId>,
        out: &mut Vec<LinkFeed>,
    ) -> DumpOutcome {
        let mut outcome = DumpOutcome::default();
        let mut seen = BTreeMap::new();
        for s in dump {
            let before = self.seen.get(&s.mac);
            let heard = match (before.and_then(|b| b.rx_packets), s.rx_packets) {
                (Some(then), Some(now)) => now != then,
                _ => s.inactive_ms.is_some_and(|ms| u128::from(ms) < interval.as_millis()),
            };
            let failed =
                matches!((before.and_then(|b| b.tx_failed), s.tx_failed), (Some(then), Some(now)) if now > then);
            seen.insert(s.mac, Seen { rx_packets: s.rx_packets, tx_failed: s.tx_failed });
            let heard_dbm = s.signal_dbm.filter(|_| heard);
            if heard_dbm.is_none() && !failed {
                continue;
            }
            let Some(neighbour) = node_of(&s.mac) else {
                outcome.unknown += 1;
                continue;
            };
            if let Some(dbm) = heard_dbm {
                out.push(LinkFeed::Heard { neighbour, rx_power_dbm: f64::from(dbm) });
            }
            if failed {
                out.push(LinkFeed::Failed { neighbour });
            }
        }
        self.seen = seen;
        outcome
    }
}

/// Why an interface gives no station statistics.
#[derive(Debug)]
pub enum NoStations {
    /// The kernel has no nl80211 (no cfg80211: no Wi-Fi at all).
    NoNl80211(io::Error),
    /// nl80211 does not know the interface: not a Wi-Fi interface.
    NotWireless(io::Error),
}

impl std::fmt::Display for NoStations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoStations::NoNl80211(e) => write!(f, "the kernel has no nl80211 family ({e})"),
            NoStations::NotWireless(e) => write!(f, "nl80211 does not know the interface ({e})"),
        }
    }
}

/// An interface's station dumps: the socket, the family and when the next
/// dump is due.
pub struct Stations {
    netlink: Requests,
    family: u16,
    ifindex: u32,
    interval: Duration,
    next_dump: Instant,
    counters: StationCounters,
}

impl Stations {
    /// Station dumps of interface `ifindex` every `interval`, the first
    /// now (which settles whether the interface is a Wi-Fi one).
    pub fn open(ifindex: u32, interval: Duration, now: Instant) -> Result<Self, NoStations> {
        let mut netlink = Requests::open(NETLINK_GENERIC).map_err(NoStations::NoNl80211)?;
        let family = nl80211_family(&mut netlink).map_err(NoStations::NoNl80211)?;
        let mut s =
            Stations { netlink, family, ifindex, interval, next_dump: now, counters: StationCounters::default() };
        s.dump().map_err(NoStations::NotWireless)?;
        Ok(s)
    }

    /// When the next dump is due.
    pub fn next_dump(&self) -> Instant {
        self.next_dump
    }

    /// Dumps the stations if due and appends their records to `out`;
    /// `None` if not due. A record that does not parse is counted in
    /// `malformed` and skipped.
    pub fn poll(
        &mut self,
        now: Instant,
        node_of: &mut dyn FnMut(&Mac) -> Option<NodeId>,
        out: &mut Vec<LinkFeed>,
        malformed: &mut u64,
    ) -> Option<io::Result<DumpOutcome>> {
        if now < self.next_dump {
            return None;
        }
        // The next one an interval after this one, not after the last
        // deadline: a stalled loop does not dump in a burst to catch up.
        self.next_dump = now + self.interval;
        Some(self.dump().map(|(dump, bad)| {
            *malformed += bad;
            self.counters.map_dump(&dump, self.interval, node_of, out)
        }))
    }

    /// One `NL80211_CMD_GET_STATION` dump of the interface, and how many of
    /// its records did not parse.
    fn dump(&mut self) -> io::Result<(Vec<StationSample>, u64)> {
        let mut msg = GenlMessage::from_payload(Nl80211Message {
            cmd: Nl80211Command::GetStation,
            attributes: vec![Nl80211Attr::IfIndex(self.ifindex)],
        });
        msg.set_resolved_family_id(self.family);
        let (mut dump, mut malformed) = (Vec::new(), 0);
        self.netlink.exchange(msg, NLM_F_DUMP, |m| match m {
            Ok(m) => dump.extend(StationSample::from_message(&m.payload)),
            Err(_) => malformed += 1,
        })?;
        Ok((dump, malformed))
    }
}

/// The nl80211 family's id, from the generic-netlink controller.
fn nl80211_family(netlink: &mut Requests) -> io::Result<u16> {
    let mut msg = GenlMessage::from_payload(GenlCtrl {
        cmd: GenlCtrlCmd::GetFamily,
        nlas: vec![GenlCtrlAttrs::FamilyName(Nl80211Message::family_name().into())],
    });
    msg.finalize();
    let mut id = None;
    netlink.exchange(msg, NLM_F_ACK, |m| {
        if let Ok(m) = m {
            id = id.or(m.payload.nlas.iter().find_map(|a| match a {
                GenlCtrlAttrs::FamilyId(i) => Some(*i),
                _ => None,
            }));
        }
    })?;
    id.ok_or_else(|| io::Error::other("the generic-netlink controller gave no id for nl80211"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Mac = [2, 0, 0, 0, 0, 1];
    const B: Mac = [2, 0, 0, 0, 0, 2];
    const STRANGER: Mac = [2, 0, 0, 0, 0, 9];
    const INTERVAL: Duration = Duration::from_millis(200);

    fn station(mac: Mac, info: Vec<Nl80211StationInfo>) -> Nl80211Message {
        Nl80211Message {
            cmd: Nl80211Command::NewStation,
            attributes: vec![Nl80211Attr::IfIndex(3), Nl80211Attr::Mac(mac), Nl80211Attr::StationInfo(info)],
        }
    }

    fn sample(mac: Mac, signal_dbm: i8, rx_packets: u32, tx_failed: u32) -> StationSample {
        StationSample {
            mac,
            signal_dbm: Some(signal_dbm),
            rx_packets: Some(rx_packets),
            tx_failed: Some(tx_failed),
            inactive_ms: Some(10),
        }
    }

    fn node_of(mac: &Mac) -> Option<NodeId> {
        match *mac {
            A => Some(1),
            B => Some(2),
            _ => None,
        }
    }

    fn map(c: &mut StationCounters, dump: &[StationSample]) -> (Vec<LinkFeed>, DumpOutcome) {
        let mut out = Vec::new();
        let outcome = c.map_dump(dump, INTERVAL, &mut node_of, &mut out);
        (out, outcome)
    }

    #[test]
    fn a_station_record_gives_its_last_signal_rather_than_the_average() {
        let msg = station(
            A,
            vec![
                Nl80211StationInfo::InactiveTime(40),
                Nl80211StationInfo::SignalAvg(-70),
                Nl80211StationInfo::Signal(-64),
                Nl80211StationInfo::RxPackets(17),
                Nl80211StationInfo::TxFailed(2),
                Nl80211StationInfo::TxRetries(9),
            ],
        );
        let s = StationSample::from_message(&msg).unwrap();
        assert_eq!(
            s,
            StationSample {
                mac: A,
                signal_dbm: Some(-64),
                rx_packets: Some(17),
                tx_failed: Some(2),
                inactive_ms: Some(40)
            }
        );
        let only_avg = station(A, vec![Nl80211StationInfo::SignalAvg(-70)]);
        assert_eq!(StationSample::from_message(&only_avg).unwrap().signal_dbm, Some(-70));
    }

    #[test]
    fn messages_that_are_not_a_station_give_nothing() {
        let mut no_mac = station(A, vec![Nl80211StationInfo::Signal(-60)]);
        no_mac.attributes.retain(|a| !matches!(a, Nl80211Attr::Mac(_)));
        assert_eq!(StationSample::from_message(&no_mac), None);
        let mut other = station(A, vec![Nl80211StationInfo::Signal(-60)]);
        other.cmd = Nl80211Command::DelStation;
        assert_eq!(StationSample::from_message(&other), None);
        let bare = station(A, vec![]);
        assert_eq!(StationSample::from_message(&bare), Some(StationSample { mac: A, ..Default::default() }));
    }

    #[test]
    fn a_rise_in_failed_frames_is_one_failure() {
        let mut c = StationCounters::default();
        // First dump: a baseline, no failure however high the count.
        let (out, _) = map(&mut c, &[sample(A, -60, 100, 5)]);
        assert_eq!(out, vec![LinkFeed::Heard { neighbour: 1, rx_power_dbm: -60.0 }]);
        // Three more failed frames, nothing received.
        let (out, _) = map(&mut c, &[sample(A, -60, 100, 8)]);
        assert_eq!(out, vec![LinkFeed::Failed { neighbour: 1 }]);
        // Both in one period: heard first, the failure after it.
        let (out, _) = map(&mut c, &[sample(A, -75, 101, 9)]);
        assert_eq!(out, vec![LinkFeed::Heard { neighbour: 1, rx_power_dbm: -75.0 }, LinkFeed::Failed { neighbour: 1 }]);
        // Unchanged counters: nothing.
        let (out, _) = map(&mut c, &[sample(A, -75, 101, 9)]);
        assert_eq!(out, vec![]);
    }

    #[test]
    fn a_count_that_falls_or_a_station_that_returns_is_a_new_baseline() {
        let mut c = StationCounters::default();
        map(&mut c, &[sample(A, -60, 100, 50)]);
        // Restarted counters (re-associated): no failure.
        let (out, _) = map(&mut c, &[sample(A, -60, 100, 1)]);
        assert_eq!(out, vec![]);
        // Gone from a dump, back with a higher count: forgotten, so no failure.
        map(&mut c, &[]);
        let (out, _) = map(&mut c, &[sample(A, -60, 100, 7)]);
        assert_eq!(out, vec![LinkFeed::Heard { neighbour: 1, rx_power_dbm: -60.0 }]);
    }

    #[test]
    fn a_station_is_heard_only_when_it_sent_something() {
        let mut c = StationCounters::default();
        // First seen: active within the interval, or not.
        let mut idle = sample(B, -80, 5, 0);
        idle.inactive_ms = Some(200);
        let (out, _) = map(&mut c, &[sample(A, -60, 100, 0), idle.clone()]);
        assert_eq!(out, vec![LinkFeed::Heard { neighbour: 1, rx_power_dbm: -60.0 }]);
        // Later: by the received-packet count, not by the (stale) signal.
        let (out, _) = map(&mut c, &[sample(A, -61, 100, 0), sample(B, -81, 6, 0)]);
        assert_eq!(out, vec![LinkFeed::Heard { neighbour: 2, rx_power_dbm: -81.0 }]);
        // A driver without packet counts: by the inactive time alone.
        let mut no_counts = sample(A, -62, 0, 0);
        no_counts.rx_packets = None;
        no_counts.inactive_ms = Some(199);
        let (out, _) = map(&mut StationCounters::default(), &[no_counts]);
        assert_eq!(out, vec![LinkFeed::Heard { neighbour: 1, rx_power_dbm: -62.0 }]);
        // Heard, but no signal reported: no record (there is no power to give).
        let mut no_signal = sample(A, 0, 0, 0);
        no_signal.signal_dbm = None;
        let (out, _) = map(&mut StationCounters::default(), &[no_signal]);
        assert_eq!(out, vec![]);
    }

    #[test]
    fn strangers_are_counted_not_reported() {
        let mut c = StationCounters::default();
        let (out, outcome) = map(&mut c, &[sample(STRANGER, -50, 1, 0), sample(A, -60, 1, 0)]);
        assert_eq!(out, vec![LinkFeed::Heard { neighbour: 1, rx_power_dbm: -60.0 }]);
        assert_eq!(outcome, DumpOutcome { unknown: 1 });
        // A stranger with nothing new to say is not even looked up.
        let (_, outcome) = map(&mut c, &[sample(STRANGER, -50, 1, 0)]);
        assert_eq!(outcome, DumpOutcome { unknown: 0 });
    }
}
