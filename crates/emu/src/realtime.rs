//! The medium process's event loop: the radio model of `meshbed_radio` run
//! against a clock, moving Ethernet frames between the nodes' IP stacks.
//!
//! One loop, two clocks (STYLE.md "one event loop behind a clock
//! abstraction"): a [`Backend`] gives the time, waits, and carries frames.
//! [`TapBackend`] is the wall clock and the nodes' TAP devices;
//! [`VirtualBackend`] is a clock that jumps straight to the next deadline
//! and frames scripted by a test, so the loop itself is tested
//! deterministically without root.
//!
//! Each turn of the loop:
//! 1. every radio event due by now is handed to [`Medium::handle`] **at its
//!    own scheduled time** (the model never sees the wall clock, so a late
//!    wake-up delays what the stacks see but never changes the model's
//!    behaviour); how late it ran is recorded;
//! 2. the model's indications are drained: a delivered frame is written to
//!    the receiving node's TAP (its lateness against the model's schedule is
//!    the emulator's timing error), a transmission report feeds the node's
//!    delay average ([`Relay`], seed 001 §3.1);
//! 3. frames the stacks sent are handed to the sender's MAC at the current
//!    time, once every event up to that time has run, so the model's time
//!    never goes backwards;
//! 4. the node's average delay is exported (at most every 10 ms);
//! 5. the loop sleeps until the next event or the next frame.

use crate::sys;
use meshbed_core::{Duration, EventQueue, Instant};
use meshbed_proto::relay::{Relay, RelayConfig};
use meshbed_radio::{phy, Addr, DropCause, Indication, Medium, NodeId, Payload, RadioEvent, Scheduler};
use serde::Serialize;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;

/// Ethernet header bytes: what a TAP frame has on top of the IP packet.
pub const ETH_HEADER_BYTES: usize = 14;
/// How often the per-node delay files may be rewritten.
pub const DELAY_EXPORT_INTERVAL: Duration = Duration::from_millis(10);

/// An Ethernet frame as the MAC carries it. The model only needs the MSDU
/// length: the IP packet, as in the simulator (802.11's own header and
/// LLC/SNAP are in `phy::DATA_OVERHEAD_BYTES`).
#[derive(Clone, Debug)]
pub struct EthFrame(pub Arc<[u8]>);

impl Payload for EthFrame {
    fn msdu_bytes(&self) -> u32 {
        self.0.len().saturating_sub(ETH_HEADER_BYTES) as u32
    }
}

/// The MAC address of `node` in emulation `emu_id`: locally administered
/// unicast `02:6d:ID:ID:NN:NN`, so a frame's destination names its node.
pub fn node_mac(emu_id: u16, node: NodeId) -> [u8; 6] {
    let id = emu_id.to_be_bytes();
    [0x02, 0x6d, id[0], id[1], (node >> 8) as u8, node as u8]
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

/// A clock plus the nodes' frame I/O.
pub trait Backend {
    /// The current time on this backend's clock (ns since the emulation began).
    fn now(&mut self) -> Instant;
    /// Sleeps until `deadline` (`None`: until input) or until a frame is
    /// waiting, whichever comes first. May return early (signals).
    fn wait(&mut self, deadline: Option<Instant>) -> io::Result<()>;
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
#[derive(Clone, Debug, Default)]
pub struct LoopStats {
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
    /// Wall time at handling − scheduled time, every radio event.
    pub event_lateness: Histogram,
    /// Wall time at which a frame reached the receiver's TAP − the time the
    /// model delivered it (the end of its reception).
    pub delivery_lateness: Histogram,
    /// Time the loop ran.
    pub elapsed: Duration,
}

/// A serialisable summary of [`LoopStats`].
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct LoopSummary {
    pub elapsed_s: f64,
    pub events: u64,
    pub frames_in: u64,
    pub frames_unknown_dest: u64,
    pub frames_delivered: u64,
    pub frames_write_dropped: u64,
    pub mac_queue_drops: u64,
    pub mac_retry_drops: u64,
    pub delivered_frames_per_s: f64,
    pub event_lateness: LatenessSummary,
    pub delivery_lateness: LatenessSummary,
}

impl LoopStats {
    pub fn summary(&self) -> LoopSummary {
        let s = self.elapsed.as_secs_f64();
        LoopSummary {
            elapsed_s: s,
            events: self.events,
            frames_in: self.frames_in,
            frames_unknown_dest: self.frames_unknown_dest,
            frames_delivered: self.frames_delivered,
            frames_write_dropped: self.frames_write_dropped,
            mac_queue_drops: self.mac_queue_drops,
            mac_retry_drops: self.mac_retry_drops,
            delivered_frames_per_s: if s > 0.0 { self.frames_delivered as f64 / s } else { 0.0 },
            event_lateness: self.event_lateness.summary(),
            delivery_lateness: self.delivery_lateness.summary(),
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

    fn export(&mut self, now: Instant, relays: &[Relay], force: bool) -> io::Result<()> {
        if !force && self.last_at.is_some_and(|t| now < t + DELAY_EXPORT_INTERVAL) {
            return Ok(());
        }
        self.last_at = Some(now);
        for (i, relay) in relays.iter().enumerate() {
            let us = (relay.current_delay().as_nanos() + 500) / 1_000;
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

struct QueueScheduler<'a>(&'a mut EventQueue<RadioEvent>);

impl Scheduler for QueueScheduler<'_> {
    fn schedule(&mut self, at: Instant, event: RadioEvent) {
        self.0.schedule(at, event);
    }
}

/// The radio model, its event queue, and the per-node delay averages.
pub struct MediumLoop {
    medium: Medium<EthFrame>,
    queue: EventQueue<RadioEvent>,
    emu_id: u16,
    relays: Vec<Relay>,
    export: Option<DelayExport>,
    pub stats: LoopStats,
}

/// The service time of one full-size (1500-byte) frame on an idle channel
/// at `node`'s rate, the delay a node reports before its first frame (the
/// simulator's relay prior, meshbed_sim `one_frame_service_time`).
fn one_frame_service_time(medium: &Medium<EthFrame>, node: NodeId) -> Duration {
    let resolved = medium.config().resolve().expect("a built medium has a valid config");
    let standard = medium.standard();
    let timing = medium.timing();
    let rate = medium.data_rate_kbps(node);
    let ack_rate = phy::control_rate_kbps(&resolved.basic_rates_kbps, rate);
    let mean_backoff = Duration::from_nanos(timing.slot.as_nanos() * resolved.cw_min as u64 / 2);
    timing.difs()
        + mean_backoff
        + standard.frame_duration(1500 + phy::DATA_OVERHEAD_BYTES, rate)
        + timing.sifs
        + standard.frame_duration(phy::ACK_BYTES, ack_rate)
}

impl MediumLoop {
    /// `export_dir`: where the per-node delay files go (`None`: not exported).
    pub fn new(medium: Medium<EthFrame>, emu_id: u16, export_dir: Option<PathBuf>) -> io::Result<Self> {
        let n = medium.node_count();
        let relays = (0..n as NodeId)
            .map(|node| {
                Relay::new(RelayConfig { prior_delay: one_frame_service_time(&medium, node), ..RelayConfig::default() })
            })
            .collect::<Vec<_>>();
        let mut export = match export_dir {
            Some(dir) => Some(DelayExport::new(dir, n)?),
            None => None,
        };
        if let Some(e) = &mut export {
            e.export(Instant::ZERO, &relays, true)?;
        }
        Ok(MediumLoop { medium, queue: EventQueue::new(), emu_id, relays, export, stats: LoopStats::default() })
    }

    pub fn medium(&self) -> &Medium<EthFrame> {
        &self.medium
    }

    /// Node `node`'s current average queueing + transmission delay.
    pub fn node_delay(&self, node: NodeId) -> Duration {
        self.relays[node as usize].current_delay()
    }

    /// Runs until `stop()` says so or the backend's clock reaches `until`.
    pub fn run<B: Backend>(&mut self, b: &mut B, until: Option<Instant>, stop: &dyn Fn() -> bool) -> io::Result<()> {
        let t0 = b.now();
        let mut frames = Vec::new();
        let nodes = self.medium.node_count();
        loop {
            let now = b.now();
            if stop() || until.is_some_and(|u| now >= u) {
                break;
            }
            // 1–2: every event due, each at its own time.
            while let Some(at) = self.queue.peek_time() {
                if at > now {
                    break;
                }
                let (at, event) = self.queue.pop().expect("peeked");
                self.stats.events += 1;
                self.stats.event_lateness.record(now.saturating_since(at));
                self.medium.handle(at, event, &mut QueueScheduler(&mut self.queue));
                self.drain(at, b)?;
            }
            // 3: frames the stacks sent, at the current time.
            b.take_frames(&mut frames)?;
            if !frames.is_empty() {
                let at = now.max(self.queue.now());
                for (node, frame) in frames.drain(..) {
                    self.stats.frames_in += 1;
                    let Some(dest) = frame_dest(self.emu_id, nodes, &frame) else {
                        self.stats.frames_unknown_dest += 1;
                        continue;
                    };
                    if dest == Addr::Unicast(node) {
                        self.stats.frames_unknown_dest += 1;
                        continue;
                    }
                    let payload = EthFrame(frame.into());
                    self.medium.enqueue(at, node, dest, payload, &mut QueueScheduler(&mut self.queue));
                }
                self.drain(at, b)?;
            }
            // 4: the nodes' delays, where their processes can read them.
            if let Some(e) = &mut self.export {
                e.export(now, &self.relays, false)?;
            }
            // 5: sleep until the next event (or input).
            let mut deadline = self.queue.peek_time();
            if let Some(u) = until {
                deadline = Some(deadline.map_or(u, |d| d.min(u)));
            }
            if let Some(e) = &self.export {
                // Wake up to publish a pending delay change.
                if let Some(t) = e.last_at {
                    let next = t + DELAY_EXPORT_INTERVAL;
                    deadline = Some(deadline.map_or(next, |d| d.min(next)));
                }
            }
            b.wait(deadline)?;
        }
        if let Some(e) = &mut self.export {
            let now = b.now();
            e.export(now, &self.relays, true)?;
        }
        self.stats.elapsed = b.now().saturating_since(t0);
        Ok(())
    }

    fn drain<B: Backend>(&mut self, at: Instant, b: &mut B) -> io::Result<()> {
        while let Some(ind) = self.medium.poll_indication() {
            match ind {
                Indication::Deliver { node, payload, .. } => {
                    if b.deliver(node, &payload.0)? {
                        self.stats.frames_delivered += 1;
                    } else {
                        self.stats.frames_write_dropped += 1;
                    }
                    let now = b.now();
                    self.stats.delivery_lateness.record(now.saturating_since(at));
                }
                // seed 001 §3.1: every frame the MAC finishes feeds the
                // node's average, whatever it carried.
                Indication::TxReport(r) => {
                    self.relays[r.node as usize].on_tx_report(at, r.enqueued_at, r.tx_done_at);
                }
                Indication::Drop { cause: DropCause::QueueOverflow, .. } => self.stats.mac_queue_drops += 1,
                Indication::Drop { cause: DropCause::RetryLimit, .. } => self.stats.mac_retry_drops += 1,
                Indication::Dequeued { .. } => {}
            }
        }
        Ok(())
    }
}

/// The wall clock and the nodes' TAP devices.
pub struct TapBackend {
    start: std::time::Instant,
    taps: Vec<OwnedFd>,
    fds: Vec<i32>,
    ready: Vec<bool>,
    buf: Vec<u8>,
    /// Below this much time to the next event, spin instead of sleeping.
    spin: Duration,
}

impl TapBackend {
    /// `taps[i]` is node i's TAP. `spin`: see [`TapBackend::set_spin`].
    pub fn new(taps: Vec<OwnedFd>) -> Self {
        sys::set_timer_slack_ns(1);
        let fds = taps.iter().map(|t| t.as_raw_fd()).collect::<Vec<_>>();
        let n = fds.len();
        TapBackend {
            start: std::time::Instant::now(),
            taps,
            fds,
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

impl Backend for TapBackend {
    fn now(&mut self) -> Instant {
        Instant::from_nanos(self.start.elapsed().as_nanos() as u64)
    }

    fn wait(&mut self, deadline: Option<Instant>) -> io::Result<()> {
        let now = self.now();
        let timeout = deadline.map(|d| d.saturating_since(now));
        if timeout.is_some_and(|t| t < self.spin) {
            let deadline = deadline.expect("some");
            loop {
                sys::wait_readable(&self.fds, Some(0), &mut self.ready)?;
                if self.ready.iter().any(|&r| r) || self.now() >= deadline {
                    return Ok(());
                }
                std::hint::spin_loop();
            }
        }
        sys::wait_readable(&self.fds, timeout.map(|t| t.as_nanos()), &mut self.ready)?;
        Ok(())
    }

    fn take_frames(&mut self, out: &mut Vec<(NodeId, Vec<u8>)>) -> io::Result<()> {
        for (i, fd) in self.fds.iter().enumerate() {
            if !self.ready[i] {
                continue;
            }
            self.ready[i] = false;
            // A bounded batch per device per turn, so one busy stack cannot
            // hold the loop away from its events.
            for _ in 0..64 {
                match sys::read_frame(*fd, &mut self.buf)? {
                    Some(n) if n >= ETH_HEADER_BYTES => out.push((i as NodeId, self.buf[..n].to_vec())),
                    Some(_) => {}
                    None => break,
                }
            }
        }
        Ok(())
    }

    fn deliver(&mut self, node: NodeId, frame: &[u8]) -> io::Result<bool> {
        sys::write_frame(self.fds[node as usize], frame)
    }
}

/// A clock that jumps to the next deadline, and frames given by a script:
/// the same loop as fast as possible, for tests.
#[derive(Default)]
pub struct VirtualBackend {
    now: Instant,
    /// Frames to inject: (time, node, frame), in time order.
    pub script: std::collections::VecDeque<(Instant, NodeId, Vec<u8>)>,
    /// Frames delivered: (time, node, frame).
    pub delivered: Vec<(Instant, NodeId, Vec<u8>)>,
}

impl Backend for VirtualBackend {
    fn now(&mut self) -> Instant {
        self.now
    }
    fn wait(&mut self, deadline: Option<Instant>) -> io::Result<()> {
        let next_input = self.script.front().map(|s| s.0);
        let to = match (deadline, next_input) {
            (Some(d), Some(i)) => d.min(i),
            (Some(d), None) => d,
            (None, Some(i)) => i,
            (None, None) => return Err(io::Error::other("virtual clock: nothing will ever happen")),
        };
        self.now = self.now.max(to);
        Ok(())
    }
    fn take_frames(&mut self, out: &mut Vec<(NodeId, Vec<u8>)>) -> io::Result<()> {
        while self.script.front().is_some_and(|s| s.0 <= self.now) {
            let (_, node, frame) = self.script.pop_front().expect("checked");
            out.push((node, frame));
        }
        Ok(())
    }
    fn deliver(&mut self, node: NodeId, frame: &[u8]) -> io::Result<bool> {
        self.delivered.push((self.now, node, frame.to_vec()));
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
        assert_eq!(lp.stats.frames_delivered, 20);
        assert_eq!(lp.stats.mac_retry_drops, 1);
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
