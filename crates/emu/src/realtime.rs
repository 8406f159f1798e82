//! The medium process: the radio model of `meshbed_radio` run against the
//! wall clock, moving Ethernet frames between the nodes' IP stacks.
//!
//! The loop itself is the simulator's ([`meshbed_sim::driver::Driver`]): it
//! runs every radio event due at its own scheduled time (the model never
//! sees the wall clock, so a late wake-up delays what the stacks see but
//! never changes the model's behaviour), feeds every tx report to the node's
//! delay average ([`Relay`], seed 001 §3.1), and waits on the clock. This
//! module is only what is particular to the emulator, the driver's host:
//! * a [`Backend`] gives the clock and carries frames: [`TapBackend`] is the
//!   wall clock and the nodes' TAP devices; [`VirtualBackend`] a clock that
//!   jumps to the next deadline and frames scripted by a test, so the loop is
//!   tested deterministically without root;
//! * a delivered frame is written to the receiving node's TAP (its lateness
//!   against the model's schedule is the emulator's timing error);
//! * frames the stacks sent are handed to the sender's MAC at the current
//!   time, once every event up to that time has run;
//! * the nodes' average delays are exported (at most every 10 ms) for the
//!   relay daemons that stamp ATP packets in the nodes.

use crate::forwarding::ForwardingDelay;
use crate::linkfeed::{LinkFeedCounters, LinkFeedExport};
use crate::sys;
use meshbed_core::{Duration, Instant};
use meshbed_net::linkfeed::LinkFeed;
use meshbed_proto::relay::{Relay, RelayConfig};
use meshbed_radio::propagation::mw_to_dbm;
use meshbed_radio::{Addr, AirEvent, DropCause, Indication, Medium, NodeId, Payload};
use meshbed_sim::capture::{self, AirObserver, IpEncoder, ETHERTYPE_IPV4};
use meshbed_sim::driver::{Clock, Driver, Host, Network, RelayClass, VirtualClock};
use serde::Serialize;
use std::convert::Infallible;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Ethernet header bytes: what a TAP frame has on top of the IP packet.
pub const ETH_HEADER_BYTES: usize = 14;
/// How often the per-node delay files may be rewritten.
pub const DELAY_EXPORT_INTERVAL: Duration = Duration::from_millis(10);

/// An Ethernet frame as the MAC carries it. The model only needs the MSDU
/// length: the IP packet, as in the simulator (802.11's own header and
/// LLC/SNAP are in `phy::DATA_OVERHEAD_BYTES`).
#[derive(Clone, Debug)]
pub struct EthFrame(pub Arc<[u8]>, pub bool);

impl Payload for EthFrame {
    fn msdu_bytes(&self) -> u32 {
        self.0.len().saturating_sub(ETH_HEADER_BYTES) as u32
    }
    /// Routing control ahead of data, as the simulator queues it with
    /// `control_priority` (ns-2's CMU priority queue).
    fn priority(&self) -> bool {
        self.1
    }
}

/// The UDP destination port of an IPv4 frame, if it is one.
pub fn udp_dst_port(frame: &[u8]) -> Option<u16> {
    let ip = frame.get(ETH_HEADER_BYTES..)?;
    if frame.get(12..14)? != ETHERTYPE_IPV4.to_be_bytes() || ip.first()? >> 4 != 4 || *ip.get(9)? != 17 {
        return None;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let port = ip.get(ihl + 2..ihl + 4)?;
    Some(u16::from_be_bytes([port[0], port[1]]))
}

/// The MAC address of `node` in emulation `emu_id`: locally administered
/// unicast `02:6d:ID:ID:NN:NN`, so a frame's destination names its node.
pub fn node_mac(emu_id: u16, node: NodeId) -> [u8; 6] {
    meshbed_sim::capture::node_mac(emu_id, node)
}

/// An Ethernet frame in a capture: the 802.11 frame carries what followed
/// the Ethernet header, under its EtherType.
struct EthEncoder;

impl IpEncoder<EthFrame> for EthEncoder {
    fn ip_packet(&self, frame: &EthFrame, out: &mut Vec<u8>) {
        out.extend_from_slice(frame.0.get(ETH_HEADER_BYTES..).unwrap_or_default());
    }
    fn ethertype(&self, frame: &EthFrame) -> u16 {
        frame.0.get(12..14).map_or(ETHERTYPE_IPV4, |t| u16::from_be_bytes([t[0], t[1]]))
    }
}

/// The link-layer destination of an Ethernet frame: broadcast and
/// multicast go to every node in range; unicast to a node of this
/// emulation; anything else is `None` (dropped).
pub fn frame_dest(emu_id: u16, nodes: usize, frame: &[u8]) -> Option<Addr> {
    let dst = frame.get(..6)?;
    if dst[0] & 1 == 1 {
        return Some(Addr::Broadcast);
    }
    let me = node_mac(emu_id, 0);
    if dst[..4] != me[..4] {
        return None;
    }
    let node = u32::from(dst[4]) << 8 | u32::from(dst[5]);
    ((node as usize) < nodes).then_some(Addr::Unicast(node))
}

/// A clock (whose `wait` also returns when a frame is waiting) plus the
/// nodes' frame I/O.
pub trait Backend: Clock {
    /// Moves the frames the nodes' stacks have sent into `out`.
    fn take_frames(&mut self, out: &mut Vec<(NodeId, Vec<u8>)>) -> io::Result<()>;
    /// Hands `frame` to `node`'s stack; `false` if it had to be dropped.
    fn deliver(&mut self, node: NodeId, frame: &[u8]) -> io::Result<bool>;
}

/// Lateness in 1 µs buckets up to 10 ms, then one overflow bucket.
#[derive(Clone, Debug)]
pub struct Histogram {
    buckets: Vec<u64>,
    count: u64,
    max_ns: u64,
    sum_ns: u128,
}

const HIST_BUCKETS: usize = 10_000;

impl Default for Histogram {
    fn default() -> Self {
        Histogram { buckets: vec![0; HIST_BUCKETS + 1], count: 0, max_ns: 0, sum_ns: 0 }
    }
}

impl Histogram {
    pub fn record(&mut self, d: Duration) {
        let ns = d.as_nanos();
        let b = ((ns / 1_000) as usize).min(HIST_BUCKETS);
        self.buckets[b] += 1;
        self.count += 1;
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns += u128::from(ns);
    }
    pub fn count(&self) -> u64 {
        self.count
    }
    /// The q-quantile in µs (upper edge of its bucket); 0 when empty.
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return if i == HIST_BUCKETS { self.max_ns as f64 / 1e3 } else { (i + 1) as f64 };
            }
        }
        self.max_ns as f64 / 1e3
    }
    pub fn summary(&self) -> LatenessSummary {
        LatenessSummary {
            count: self.count,
            p50_us: self.quantile_us(0.5),
            p99_us: self.quantile_us(0.99),
            p999_us: self.quantile_us(0.999),
            max_us: self.max_ns as f64 / 1e3,
            mean_us: if self.count == 0 { 0.0 } else { (self.sum_ns / u128::from(self.count)) as f64 / 1e3 },
        }
    }
}

/// Quantiles of how late something happened against the model's schedule.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct LatenessSummary {
    pub count: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

/// What the loop counted.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct LoopCounters {
    /// Radio events run.
    pub events: u64,
    /// Frames the stacks sent (read from the TAPs).
    pub frames_in: u64,
    /// Frames with a destination MAC outside the emulation (dropped).
    pub frames_unknown_dest: u64,
    /// Frames delivered to a stack (written to a TAP).
    pub frames_delivered: u64,
    /// Deliveries the TAP refused (its queue full).
    pub frames_write_dropped: u64,
    pub mac_queue_drops: u64,
    pub mac_retry_drops: u64,
}

/// What the loop counted and measured.
#[derive(Clone, Debug, Default)]
pub struct LoopStats {
    pub counters: LoopCounters,
    /// Wall time at handling − scheduled time, every radio event.
    pub event_lateness: Histogram,
    /// Wall time at which a frame reached the receiver's TAP − the time the
    /// model delivered it (the end of its reception).
    pub delivery_lateness: Histogram,
    /// The relays' stacks: a packet's reception end → its forward handed
    /// back to the medium.
    pub forwarding: ForwardingDelay,
    /// Time the loop ran.
    pub elapsed: Duration,
}

/// A serialisable summary of [`LoopStats`].
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct LoopSummary {
    pub elapsed_s: f64,
    #[serde(flatten)]
    pub counters: LoopCounters,
    pub delivered_frames_per_s: f64,
    pub event_lateness: LatenessSummary,
    pub delivery_lateness: LatenessSummary,
    /// How long the relays' stacks took to forward a packet (the
    /// simulator's relays take none; `[flows.atp] relay_forwarding_delay_s`
    /// gives them this).
    #[serde(default)]
    pub forwarding_delay: LatenessSummary,
}

impl LoopStats {
    pub fn summary(&self) -> LoopSummary {
        let s = self.elapsed.as_secs_f64();
        LoopSummary {
            elapsed_s: s,
            counters: self.counters.clone(),
            delivered_frames_per_s: if s > 0.0 { self.counters.frames_delivered as f64 / s } else { 0.0 },
            event_lateness: self.event_lateness.summary(),
            delivery_lateness: self.delivery_lateness.summary(),
            forwarding_delay: self.forwarding.delay.summary(),
        }
    }
}

/// Writes each node's current average delay D (µs, decimal text, as the
/// thesis' driver exported `/proc/ath5k/Da`, seed 001 appendix A.6) to
/// `DIR/n<i>/delay_us`, atomically (temporary file + rename).
pub struct DelayExport {
    dir: PathBuf,
    written_us: Vec<Option<u64>>,
    last_at: Option<Instant>,
}

impl DelayExport {
    pub fn new(dir: PathBuf, nodes: usize) -> io::Result<Self> {
        for i in 0..nodes {
            std::fs::create_dir_all(dir.join(format!("n{i}")))?;
        }
        Ok(DelayExport { dir, written_us: vec![None; nodes], last_at: None })
    }

    /// The file node `node`'s delay is written to.
    pub fn path(dir: &std::path::Path, node: NodeId) -> PathBuf {
        dir.join(format!("n{node}")).join("delay_us")
    }

    fn export(&mut self, now: Instant, net: &Net, force: bool) -> io::Result<()> {
        if !force && self.last_at.is_some_and(|t| now < t + DELAY_EXPORT_INTERVAL) {
            return Ok(());
        }
        self.last_at = Some(now);
        for i in 0..self.written_us.len() {
            let us = (node_relay(net, i as NodeId).current_delay().as_nanos() + 500) / 1_000;
            if self.written_us[i] == Some(us) {
                continue;
            }
            let path = Self::path(&self.dir, i as NodeId);
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, format!("{us}\n"))?;
            std::fs::rename(&tmp, &path)?;
            self.written_us[i] = Some(us);
        }
        Ok(())
    }
}

type Net = Network<EthFrame, Infallible>;

/// The full-size frame of the emulated nodes: their TAP devices' MTU (an
/// IP packet of 1500 bytes). A node's delay before its first tx report is
/// the service time of one such frame on an idle channel.
pub const MTU_BYTES: u32 = 1500;

/// The delay average of `node`: the emulator keeps one relay class, with
/// default ATP's relay parameters (the stamping itself, with the flow's η,
/// happens in the relay daemons, which read the exported average).
fn node_relay(net: &Net, node: NodeId) -> &Relay {
    &net.relays(node)[0]
}

/// The radio model behind the shared driver, the delay export and what the
/// loop counted.
pub struct MediumLoop {
    driver: Driver<EthFrame, Infallible>,
    emu_id: u16,
    export: Option<DelayExport>,
    /// Where frames sent and heard go (`--pcap`).
    air: Option<Box<dyn AirObserver<EthFrame> + Send>>,
    /// Where each node's link-layer feedback goes (routing daemons).
    link_feed: Option<LinkFeedExport>,
    /// UDP destination ports whose frames go ahead of data in the MAC
    /// queue: the routing daemons' control ports when the scenario asks
    /// for `control_priority`.
    priority_ports: Vec<u16>,
    pub stats: LoopStats,
}

impl MediumLoop {
    /// `export_dir`: where the per-node delay files go (`None`: not exported).
    pub fn new(medium: Medium<EthFrame>, emu_id: u16, export_dir: Option<PathBuf>) -> io::Result<Self> {
        let n = medium.node_count();
        let class = RelayClass { config: RelayConfig::default(), packet_bytes: MTU_BYTES };
        let net = Network::new(medium, &[class]);
        let mut export = match export_dir {
            Some(dir) => Some(DelayExport::new(dir, n)?),
            None => None,
        };
        if let Some(e) = &mut export {
            e.export(Instant::ZERO, &net, true)?;
        }
        Ok(MediumLoop {
            driver: Driver::new(net),
            emu_id,
            export,
            air: None,
            link_feed: None,
            priority_ports: Vec::new(),
            stats: LoopStats::default(),
        })
    }

    /// Sends every node's link-layer feedback (frames heard with their
    /// power, retry-limit failures) to its routing daemon's socket under
    /// `dir` ([`crate::linkfeed`]).
    pub fn feed_links_to(&mut self, dir: &Path) -> io::Result<()> {
        self.link_feed = Some(LinkFeedExport::new(dir, self.medium().node_count())?);
        Ok(())
    }

    /// Queues frames to these UDP ports ahead of data (routing control
    /// with `control_priority`).
    pub fn prioritise_udp_ports(&mut self, ports: &[u16]) {
        self.priority_ports = ports.to_vec();
    }

    /// What the link feed did (`None` when it is off).
    pub fn link_feed_counters(&self) -> Option<&LinkFeedCounters> {
        self.link_feed.as_ref().map(|f| &f.counters)
    }

    /// Writes what the radio carries into `dir`, one pcap per node
    /// (`n<i>.pcap`, 802.11 + radiotap, the model's time), as the
    /// simulator's `--pcap` does.
    pub fn capture_to(&mut self, dir: &Path) -> io::Result<()> {
        let files = capture::create_files(dir, self.medium().node_count())?;
        let standard = self.medium().standard();
        self.air = Some(Box::new(capture::Capture::new(files, EthEncoder, self.emu_id, standard)?));
        self.driver.net.set_observing(true);
        Ok(())
    }

    pub fn medium(&self) -> &Medium<EthFrame> {
        self.driver.net.medium()
    }

    /// Node `node`'s current average queueing + transmission delay.
    pub fn node_delay(&self, node: NodeId) -> Duration {
        node_relay(&self.driver.net, node).current_delay()
    }

    /// Runs until `stop()` says so or the backend's clock reaches `until`.
    pub fn run<B: Backend>(&mut self, b: &mut B, until: Option<Instant>, stop: &dyn Fn() -> bool) -> io::Result<()> {
        let t0 = b.now();
        let nodes = self.medium().node_count();
        let mut host = EmuHost {
            backend: b,
            emu_id: self.emu_id,
            nodes,
            stats: &mut self.stats,
            export: &mut self.export,
            stop,
            frames: Vec::new(),
            air: self.air.as_deref_mut(),
            link_feed: self.link_feed.as_mut(),
            priority_ports: &self.priority_ports,
        };
        let ran = self.driver.run(&mut host, until);
        if let Some(air) = &mut self.air {
            air.flush()?;
        }
        ran?;
        let now = b.now();
        if let Some(e) = &mut self.export {
            e.export(now, &self.driver.net, true)?;
        }
        self.stats.elapsed = now.saturating_since(t0);
        Ok(())
    }
}

/// The emulator as the driver's host: it has no events of its own, only
/// frames in and out of the TAP devices.
struct EmuHost<'a, B: Backend> {
    backend: &'a mut B,
    emu_id: u16,
    nodes: usize,
    stats: &'a mut LoopStats,
    export: &'a mut Option<DelayExport>,
    stop: &'a dyn Fn() -> bool,
    frames: Vec<(NodeId, Vec<u8>)>,
    air: Option<&'a mut (dyn AirObserver<EthFrame> + Send + 'static)>,
    link_feed: Option<&'a mut LinkFeedExport>,
    priority_ports: &'a [u16],
}

impl<B: Backend> Clock for EmuHost<'_, B> {
    fn now(&mut self) -> Instant {
        self.backend.now()
    }
    fn wait(&mut self, deadline: Option<Instant>) -> io::Result<()> {
        self.backend.wait(deadline)
    }
}

impl<B: Backend> Host<EthFrame> for EmuHost<'_, B> {
    type Event = Infallible;

    fn trace_code(event: &Infallible) -> u64 {
        match *event {}
    }

    fn on_event(&mut self, _net: &mut Net, _now: Instant, event: Infallible) -> io::Result<()> {
        match event {}
    }

    fn on_air(&mut self, event: AirEvent<EthFrame>) -> io::Result<()> {
        match &mut self.air {
            Some(air) => air.observe(&event),
            None => Ok(()),
        }
    }

    fn on_indication(&mut self, _net: &mut Net, at: Instant, ind: Indication<EthFrame>) -> io::Result<()> {
        match ind {
            Indication::Deliver { node, from, payload, rx_power_mw } => {
                if let Some(feed) = &mut self.link_feed {
                    // Before the frame: the daemon then has its power when
                    // a control packet in it reaches its socket.
                    feed.send(node, LinkFeed::Heard { neighbour: from, rx_power_dbm: mw_to_dbm(rx_power_mw) });
                }
                self.stats.forwarding.delivered(node, crate::plumbing::node_addr(node), at, &payload.0);
                if self.backend.deliver(node, &payload.0)? {
                    self.stats.counters.frames_delivered += 1;
                } else {
                    self.stats.counters.frames_write_dropped += 1;
                }
                let now = self.backend.now();
                self.stats.delivery_lateness.record(now.saturating_since(at));
            }
            Indication::Drop { cause: DropCause::QueueOverflow, .. } => self.stats.counters.mac_queue_drops += 1,
            Indication::Drop { node, payload, cause: DropCause::RetryLimit } => {
                self.stats.counters.mac_retry_drops += 1;
                if let (Some(feed), Some(Addr::Unicast(neighbour))) =
                    (&mut self.link_feed, frame_dest(self.emu_id, self.nodes, &payload.0))
                {
                    feed.send(node, LinkFeed::Failed { neighbour });
                }
            }
            Indication::Dequeued { .. } | Indication::TxReport(_) => {}
        }
        Ok(())
    }

    fn on_turn(&mut self, net: &mut Net, at: Instant) -> io::Result<Option<Instant>> {
        // Frames the stacks sent, at the current time.
        self.backend.take_frames(&mut self.frames)?;
        for (node, frame) in self.frames.drain(..) {
            self.stats.counters.frames_in += 1;
            self.stats.forwarding.sent(node, at, &frame);
            match frame_dest(self.emu_id, self.nodes, &frame) {
                Some(dest) if dest != Addr::Unicast(node) => {
                    let priority = udp_dst_port(&frame).is_some_and(|p| self.priority_ports.contains(&p));
                    net.enqueue(at, node, dest, EthFrame(frame.into(), priority));
                }
                _ => self.stats.counters.frames_unknown_dest += 1,
            }
        }
        // The nodes' delays, where their processes can read them; wake up
        // to publish a pending change.
        let Some(e) = self.export.as_mut() else { return Ok(None) };
        e.export(at, net, false)?;
        Ok(e.last_at.map(|t| t + DELAY_EXPORT_INTERVAL))
    }

    fn stop(&mut self) -> bool {
        (self.stop)()
    }

    fn observe_event(&mut self, at: Instant, now: Instant) {
        self.stats.counters.events += 1;
        self.stats.event_lateness.record(now.saturating_since(at));
    }
}

/// The wall clock and the nodes' TAP devices.
pub struct TapBackend {
    start: std::time::Instant,
    taps: Vec<OwnedFd>,
    ready: Vec<bool>,
    buf: Vec<u8>,
    /// Below this much time to the next event, spin instead of sleeping.
    spin: Duration,
}

impl TapBackend {
    /// `taps[i]` is node i's TAP. `spin`: see [`TapBackend::set_spin`].
    pub fn new(taps: Vec<OwnedFd>) -> Self {
        sys::set_timer_slack_ns(1);
        let n = taps.len();
        TapBackend {
            start: std::time::Instant::now(),
            taps,
            ready: vec![true; n],
            buf: vec![0; 65_536],
            spin: Duration::ZERO,
        }
    }

    /// Waits shorter than `spin` are spun (polling the TAPs) rather than
    /// slept: a sleeping thread wakes tens of µs late on a busy machine,
    /// a spinning one costs a core.
    pub fn set_spin(&mut self, spin: Duration) {
        self.spin = spin;
    }

    /// Gives the TAP descriptors back (closing them removes the devices).
    pub fn into_taps(self) -> Vec<OwnedFd> {
        self.taps
    }
}

impl Clock for TapBackend {
    fn now(&mut self) -> Instant {
        Instant::from_nanos(self.start.elapsed().as_nanos() as u64)
    }

    fn wait(&mut self, deadline: Option<Instant>) -> io::Result<()> {
        let now = self.now();
        let timeout = deadline.map(|d| d.saturating_since(now));
        if timeout.is_some_and(|t| t < self.spin) {
            let deadline = deadline.expect("some");
            loop {
                sys::wait_readable(&self.taps, Some(0), &mut self.ready)?;
                if self.ready.iter().any(|&r| r) || self.now() >= deadline {
                    return Ok(());
                }
                std::hint::spin_loop();
            }
        }
        sys::wait_readable(&self.taps, timeout.map(|t| t.as_nanos()), &mut self.ready)?;
        Ok(())
    }
}

impl Backend for TapBackend {
    fn take_frames(&mut self, out: &mut Vec<(NodeId, Vec<u8>)>) -> io::Result<()> {
        for (i, fd) in self.taps.iter().enumerate() {
            if !self.ready[i] {
                continue;
            }
            self.ready[i] = false;
            // A bounded batch per device per turn, so one busy stack cannot
            // hold the loop away from its events.
            for _ in 0..64 {
                match sys::read_frame(fd, &mut self.buf)? {
                    Some(n) if n >= ETH_HEADER_BYTES => out.push((i as NodeId, self.buf[..n].to_vec())),
                    Some(_) => {}
                    None => break,
                }
            }
        }
        Ok(())
    }

    fn deliver(&mut self, node: NodeId, frame: &[u8]) -> io::Result<bool> {
        sys::write_frame(&self.taps[node as usize], frame)
    }
}

/// A clock that jumps to the next deadline, and frames given by a script:
/// the same loop as fast as possible, for tests.
#[derive(Default)]
pub struct VirtualBackend {
    clock: VirtualClock,
    /// Frames to inject: (time, node, frame), in time order.
    pub script: std::collections::VecDeque<(Instant, NodeId, Vec<u8>)>,
    /// Frames delivered: (time, node, frame).
    pub delivered: Vec<(Instant, NodeId, Vec<u8>)>,
}

impl Clock for VirtualBackend {
    fn now(&mut self) -> Instant {
        self.clock.now()
    }
    /// Jumps to the deadline or the next scripted frame, whichever is first.
    fn wait(&mut self, deadline: Option<Instant>) -> io::Result<()> {
        let next_input = self.script.front().map(|s| s.0);
        self.clock.wait([deadline, next_input].into_iter().flatten().min())
    }
}

impl Backend for VirtualBackend {
    fn take_frames(&mut self, out: &mut Vec<(NodeId, Vec<u8>)>) -> io::Result<()> {
        let now = self.clock.now();
        while self.script.front().is_some_and(|s| s.0 <= now) {
            let (_, node, frame) = self.script.pop_front().expect("checked");
            out.push((node, frame));
        }
        Ok(())
    }
    fn deliver(&mut self, node: NodeId, frame: &[u8]) -> io::Result<bool> {
        let now = self.clock.now();
        self.delivered.push((now, node, frame.to_vec()));
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_radio::{NodeRadio, RadioConfig};

    fn frame(emu: u16, from: NodeId, to: NodeId, len: usize, tag: u8) -> Vec<u8> {
        let mut f = vec![tag; len];
        f[..6].copy_from_slice(&node_mac(emu, to));
        f[6..12].copy_from_slice(&node_mac(emu, from));
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f
    }

    #[test]
    fn macs_name_their_node() {
        let f = frame(0xbeef, 0, 3, 100, 0);
        assert_eq!(frame_dest(0xbeef, 4, &f), Some(Addr::Unicast(3)));
        assert_eq!(frame_dest(0xbeef, 3, &f), None, "node 3 of a 3-node emulation does not exist");
        assert_eq!(frame_dest(0xbeee, 4, &f), None, "another emulation's MAC");
        let mut b = f.clone();
        b[..6].copy_from_slice(&[0xff; 6]);
        assert_eq!(frame_dest(0xbeef, 4, &b), Some(Addr::Broadcast));
        assert_eq!(frame_dest(0xbeef, 4, &f[..5]), None);
    }

    #[test]
    fn histogram_quantiles() {
        let mut h = Histogram::default();
        for us in 0..100 {
            h.record(Duration::from_micros(us));
        }
        assert_eq!(h.quantile_us(0.5), 50.0);
        assert_eq!(h.quantile_us(0.99), 99.0);
        h.record(Duration::from_secs(1));
        assert_eq!(h.quantile_us(1.0), 1e6);
    }

    /// `--pcap` on the emulator: each node's file holds its DATA frames
    /// (as many as the MAC sent) carrying the Ethernet payload under its
    /// EtherType, and the frames it heard.
    #[test]
    fn a_capture_of_the_emulated_medium_holds_the_stacks_frames() {
        let radios: Vec<NodeRadio> = (0..2).map(|i| NodeRadio::at(i as f64 * 200.0, 0.0)).collect();
        let medium = Medium::new(&RadioConfig::default(), &radios, 1).unwrap();
        let dir = std::env::temp_dir().join(format!("meshbed-emu-pcap-{}", std::process::id()));
        let mut lp = MediumLoop::new(medium, 7, None).unwrap();
        lp.capture_to(&dir).unwrap();
        let mut b = VirtualBackend::default();
        for k in 0..5u8 {
            b.script.push_back((Instant::from_nanos(k as u64 * 1_000_000), 0, frame(7, 0, 1, 300, k)));
        }
        lp.run(&mut b, Some(Instant::from_nanos(20_000_000)), &|| false).unwrap();
        let file = std::fs::read(capture::node_file(&dir, 0)).unwrap();
        // Records: 24-byte file header, then 16-byte record headers.
        let mut at = 24;
        let mut data_bodies = Vec::new();
        let mut records = 0;
        while at < file.len() {
            let len = u32::from_le_bytes(file[at + 8..at + 12].try_into().unwrap()) as usize;
            let mpdu = &file[at + 16 + capture::RADIOTAP_BYTES..at + 16 + len];
            if mpdu[0] == 0x08 {
                assert_eq!(&mpdu[10..16], &node_mac(7, 0), "transmitter");
                assert_eq!(&mpdu[30..32], &[0x08, 0x00], "the frame's EtherType");
                data_bodies.push(mpdu[32..mpdu.len() - 4].to_vec());
            }
            records += 1;
            at += 16 + len;
        }
        assert_eq!(data_bodies.len() as u64, lp.medium().counters(0).data_tx_attempts);
        assert_eq!(data_bodies[0], frame(7, 0, 1, 300, 0)[ETH_HEADER_BYTES..]);
        assert_eq!(records, data_bodies.len() as u64 + lp.medium().counters(0).acked, "DATA sent, ACKs heard");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Frames between neighbours arrive after DIFS + backoff + airtime, in
    /// order, and a frame to a node out of range is never delivered.
    #[test]
    fn virtual_clock_moves_frames_between_neighbours() {
        let radios: Vec<NodeRadio> = (0..3).map(|i| NodeRadio::at(i as f64 * 200.0, 0.0)).collect();
        let medium = Medium::new(&RadioConfig::default(), &radios, 1).unwrap();
        let dir = std::env::temp_dir().join(format!("meshbed-emu-test-{}", std::process::id()));
        let mut lp = MediumLoop::new(medium, 7, Some(dir.clone())).unwrap();
        let mut b = VirtualBackend::default();
        for k in 0..20u8 {
            b.script.push_back((Instant::from_nanos(k as u64 * 1_000_000), 0, frame(7, 0, 1, 1000, k)));
        }
        // 0 → 2 is 400 m: out of range, the MAC gives up after its retries.
        b.script.push_back((Instant::from_nanos(30_000_000), 0, frame(7, 0, 2, 500, 99)));
        lp.run(&mut b, Some(Instant::from_nanos(200_000_000)), &|| false).unwrap();
        let tags: Vec<u8> = b
            .delivered
            .iter()
            .map(|(_, n, f)| {
                assert_eq!(*n, 1);
                f[20]
            })
            .collect();
        assert_eq!(tags, (0..20).collect::<Vec<u8>>());
        assert_eq!(lp.stats.counters.frames_delivered, 20);
        assert_eq!(lp.stats.counters.mac_retry_drops, 1);
        // The first frame: at least DIFS (34 µs) + its airtime at 6 Mbit/s... and below 2 ms.
        let first = b.delivered[0].0.as_nanos();
        assert!(first > 34_000 && first < 2_000_000, "{first}");
        // The virtual clock never runs late.
        assert_eq!(lp.stats.event_lateness.summary().max_us, 0.0);
        let d: u64 = std::fs::read_to_string(DelayExport::path(&dir, 0)).unwrap().trim().parse().unwrap();
        assert!(d > 0, "node 0 exported its delay");
        assert_eq!(d, (lp.node_delay(0).as_nanos() + 500) / 1000, "the file holds the node's average");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
