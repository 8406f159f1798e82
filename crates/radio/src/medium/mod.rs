//! The shared 802.11 medium: every node's PHY (reception by SINR with
//! cumulative interference, preamble lock-on, energy carrier sense) and DCF
//! MAC (DIFS/SIFS/EIFS, binary exponential backoff, ACKs, retries, NAV,
//! RTS/CTS, duplicate detection, a drop-tail queue).
//!
//! The model is driven by events and never reads a clock: the driver pops a
//! [`RadioEvent`] at its time and calls [`Medium::handle`], and the model
//! schedules its future events through a [`Scheduler`]. The simulator runs
//! this as fast as possible; the emulator runs it against the wall clock.
//! Upper-layer results ([`Indication`]s) are queued for the driver to drain
//! with [`Medium::poll_indication`].
//!
//! [`Medium`] is the façade that wires one component per concern, split as
//! ns-3's wifi module splits its classes:
//! * [`LinkBudget`]: mean received powers and who
//!   hears whom (the channel with its propagation models);
//! * `interference`: the signals on the air at each receiver, SINR and the
//!   reception decision (`InterferenceHelper`);
//! * `channel_access`: DIFS/EIFS, backoff, contention window, NAV
//!   (`ChannelAccessManager`);
//! * `frame_exchange`: queue, RTS/CTS/DATA/ACK, timeouts, retries and the
//!   reports that end a packet (`FrameExchangeManager`);
//! * `duplicates`: the receiver's sequence cache (`MacRxMiddle`);
//! * `rate_selection`: the rate of each unicast DATA attempt when rate
//!   control is on (`WifiRemoteStationManager`), and its histogram per link;
//! * `frame`: the frames on the air.

mod arrivals;
mod channel_access;
mod duplicates;
mod events;
mod frame;
mod frame_exchange;
mod interference;
mod rate_selection;

use crate::config::{ConfigError, RadioConfig};
use crate::link::LinkBudget;
use crate::phy::{self, control_rate_kbps, Standard, Timing};
use arrivals::ArrivalOrders;
use channel_access::{AccessParams, ChannelAccess};
use duplicates::DuplicateCache;
pub use frame::{Frame as AirFrame, FrameKind};
use frame::{Frame, FrameTable};
use frame_exchange::{FrameExchange, TxState};
use interference::{ArrivalFate, Receiver, RxParams, SignalSlots};
use meshbed_core::{stream_rng, Duration, Instant, StreamId, StreamKind, StreamRng};
use rate_selection::NodeRates;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

pub use crate::link::{NodeId, NodeRadio};
pub use events::{RadioEvent, RadioTimer, Scheduler};
pub use rate_selection::{LinkRates, RateCount};

/// A link-layer destination.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Addr {
    Unicast(NodeId),
    Broadcast,
}

/// What the MAC carries. The model only needs the MSDU length (the IP packet).
pub trait Payload: Clone {
    fn msdu_bytes(&self) -> u32;
    /// Queued ahead of every packet without priority (behind earlier
    /// priority ones): routing control packets in ns-2's CMU priority queue.
    fn priority(&self) -> bool {
        false
    }
}

/// Index of a frame in flight.
pub type FrameId = u32;

/// How a packet's life in the MAC ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum TxOutcome {
    Acked,
    /// Broadcast frames are done once sent.
    Broadcast,
    RetryLimit,
}

/// Per-packet MAC timestamps (seed 001 §3.1: ATP's per-node delay is built
/// from the enqueue and completion times).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TxReport {
    pub node: NodeId,
    pub enqueued_at: Instant,
    /// Start of the first transmission attempt (RTS or DATA).
    pub first_tx_at: Option<Instant>,
    /// Completion time (ACK received, broadcast sent, or given up). `None`
    /// under batched completion reporting for all but the last frame of a
    /// batch (seed 001 appendix A.6).
    pub tx_done_at: Option<Instant>,
    /// Retransmissions (attempts − 1).
    pub retries: u32,
    pub outcome: TxOutcome,
}

/// Why the MAC dropped a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum DropCause {
    QueueOverflow,
    RetryLimit,
}

/// What the model tells the layer above.
#[derive(Clone, Debug)]
pub enum Indication<P> {
    /// `node` received `payload` from its neighbour `from` (duplicates
    /// removed) at `rx_power_mw` (the frame's power as received, fading
    /// included: what a driver reports as signal strength; in mW, so that
    /// no delivery pays for a logarithm nobody reads).
    Deliver { node: NodeId, from: NodeId, payload: P, rx_power_mw: f64 },
    /// A packet left the MAC; timestamps for delay estimation.
    TxReport(TxReport),
    /// A packet was dropped.
    Drop { node: NodeId, payload: P, cause: DropCause },
    /// `node` took a packet off its queue (there is room for one more).
    Dequeued { node: NodeId },
}

/// What the radio carried, frame by frame, as each node saw it: the
/// observation a capture is made of (STYLE.md: capture wraps the model,
/// so the model only reports; it is off unless
/// [`Medium::set_observing`] turned it on, and costs one branch per frame
/// when off).
#[derive(Clone, Debug)]
pub enum AirEvent<P> {
    /// `node` put `frame` on the air at `at` (the first bit).
    Sent { node: NodeId, at: Instant, frame: AirFrame<P>, airtime: Duration, tx_power_dbm: f64 },
    /// `node`'s PHY locked onto `frame`, whose first bit arrived at `at`:
    /// `decoded` says whether it was received or lost to interference or
    /// noise (SINR). Frames the PHY never followed (too weak, or arriving
    /// while it was sending or following another) are not reported.
    Heard { node: NodeId, at: Instant, frame: AirFrame<P>, airtime: Duration, rx_power_mw: f64, decoded: bool },
}

/// Counters of one node. Frame-level reception failures count frames
/// addressed to this node; packet drops count packets this node gave up.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MacCounters {
    pub enqueued: u64,
    pub drop_queue_overflow: u64,
    pub drop_retry_limit: u64,
    pub data_tx_attempts: u64,
    pub retransmissions: u64,
    pub acked: u64,
    pub broadcasts_sent: u64,
    pub ack_timeouts: u64,
    pub cts_timeouts: u64,
    pub rts_sent: u64,
    pub cts_sent: u64,
    pub acks_sent: u64,
    pub delivered: u64,
    pub duplicates_dropped: u64,
    /// Frames for this node lost to SINR below threshold (collision or noise).
    pub rx_collision_or_corruption: u64,
    /// Frames for this node that arrived while it was sending or locked onto another frame.
    pub rx_while_busy: u64,
    /// Frames for this node weaker than the receiver sensitivity.
    pub rx_below_sensitivity: u64,
}

impl MacCounters {
    pub fn add(&mut self, o: &MacCounters) {
        macro_rules! sum { ($($f:ident),*) => { $( self.$f += o.$f; )* } }
        sum!(
            enqueued,
            drop_queue_overflow,
            drop_retry_limit,
            data_tx_attempts,
            retransmissions,
            acked,
            broadcasts_sent,
            ack_timeouts,
            cts_timeouts,
            rts_sent,
            cts_sent,
            acks_sent,
            delivered,
            duplicates_dropped,
            rx_collision_or_corruption,
            rx_while_busy,
            rx_below_sensitivity
        );
    }
}

/// Node state above which [`Medium::prefetch`] pays.
const PREFETCH_ABOVE_BYTES: usize = 1 << 20;

/// Whether `nodes` nodes' state outgrows a core's own cache: where asking
/// for what an event will read, ahead of it, pays.
fn state_outgrows_caches<P>(nodes: usize) -> bool {
    nodes * std::mem::size_of::<Node<P>>() > PREFETCH_ABOVE_BYTES
}

/// One node's share of the model, one component per concern.
/// In this order: what every arrival touches first (the reception state,
/// then carrier sense), together, and the random streams out of line, so
/// that a frame's hundreds of receivers cost as few cache lines each as
/// they can (issue 28); from a cache line's start, so that those fields
/// take three lines, not three or four (about 1.05× in the 6,400-node
/// grid).
#[repr(C, align(64))]
struct Node<P> {
    /// The frame this node is putting on the air.
    tx_frame: Option<FrameId>,
    rx: Receiver,
    access: ChannelAccess,
    fx: FrameExchange<P>,
    dups: DuplicateCache,
    counters: MacCounters,
    /// Fading of the frames arriving at this node.
    rng_fading: Box<StreamRng>,
    /// Rate control and the per-link rate histogram; `None` when no node
    /// of the medium runs rate control (every frame at the node's rate).
    rates: Option<NodeRates>,
}

/// The medium and every node on it.
pub struct Medium<P> {
    standard: Standard,
    timing: Timing,
    ack_timeout: Duration,
    basic_rates_kbps: Vec<u32>,
    config: RadioConfig,
    access_params: AccessParams,
    rx_params: RxParams,
    links: LinkBudget,
    nodes: Vec<Node<P>>,
    /// Each node's first signals on the air (`Receiver`), by node.
    signal_slots: Vec<SignalSlots>,
    frames: FrameTable<P>,
    out: VecDeque<Indication<P>>,
    /// Frames sent and heard, kept only while observing.
    observing: bool,
    air: VecDeque<AirEvent<P>>,
    /// The order each sender's frames reach its neighbours in.
    orders: ArrivalOrders,
    /// Timer events handled that a later one had made stale.
    stale_events: u64,
}

impl<P: Payload> Medium<P> {
    /// Builds the medium. Each node's random streams come from `seed` and the
    /// node's index, so adding a node changes nobody else's draws.
    pub fn new(config: &RadioConfig, nodes: &[NodeRadio], seed: u64) -> Result<Self, ConfigError> {
        let resolved = config.resolve()?;
        let standard = config.standard;
        let timing = standard.timing();
        let lowest_basic = *resolved.basic_rates_kbps.iter().min().expect("resolve checks non-empty");
        let difs = timing.difs();
        // EIFS = SIFS + ACK at the lowest basic rate + DIFS (802.11-2016 §10.3.2.3.7).
        let eifs = timing.sifs + standard.frame_duration(phy::ACK_BYTES, lowest_basic) + difs;
        // ACK/CTS timeout: SIFS + slot + the time to detect a preamble
        // (802.11-2016 §10.3.2.9). If a reception has started by then we wait
        // for its end before deciding.
        let ack_timeout = timing.sifs + timing.slot + timing.preamble_header;
        let links = LinkBudget::with_resolved(config, &resolved, nodes, seed)?;
        let is_moving = links.is_moving();
        let kind_of = |i: usize| nodes[i].rate_control.unwrap_or(config.mac.rate_control);
        let rate_control_on = (0..nodes.len()).any(|i| !kind_of(i).is_fixed());
        let node_rates = |i: usize| {
            let kind = kind_of(i);
            let top = links.data_rate_kbps(i as NodeId);
            let rates_kbps: Vec<u32> = standard.rates_kbps().iter().copied().filter(|&r| r <= top).collect();
            // Minstrel's "perfect" transmission: a 1200-byte DATA frame,
            // SIFS and its ACK (Linux `minstrel_rate_init`).
            let perfect_tx_time = rates_kbps
                .iter()
                .map(|&r| {
                    let ack_rate = control_rate_kbps(&resolved.basic_rates_kbps, r);
                    standard.frame_duration(crate::rate_control::MINSTREL_REFERENCE_BYTES, r)
                        + timing.sifs
                        + standard.frame_duration(phy::ACK_BYTES, ack_rate)
                })
                .collect();
            let minstrel = crate::rate_control::MinstrelTiming {
                perfect_tx_time,
                ack_timeout,
                slot: timing.slot,
                cw_min: resolved.cw_min,
                cw_max: resolved.cw_max,
            };
            let rng = stream_rng(seed, StreamId::new(StreamKind::RateControl, i as u64));
            NodeRates::new(kind, rates_kbps, minstrel, rng)
        };
        let mut built: Vec<Node<P>> = (0..nodes.len() as u64)
            .map(|idx| Node {
                tx_frame: None,
                rx: Receiver::new(stream_rng(seed, StreamId::new(StreamKind::Phy, idx))),
                access: ChannelAccess::new(resolved.cw_min, stream_rng(seed, StreamId::new(StreamKind::Mac, idx))),
                fx: FrameExchange::new(),
                dups: DuplicateCache::default(),
                counters: MacCounters::default(),
                rng_fading: Box::new(stream_rng(seed, StreamId::new(StreamKind::Fading, idx))),
                rates: rate_control_on.then(|| node_rates(idx as usize)),
            })
            .collect();
        // On huge pages: a large network's arrivals read its nodes' state
        // all over, each event another node's (issue 28).
        meshbed_core::hint::move_to_huge_pages(&mut built);
        let mut rx_params = RxParams::new(config, &resolved);
        rx_params.prefetch_streams = state_outgrows_caches::<P>(built.len());
        Ok(Medium {
            standard,
            timing,
            ack_timeout,
            access_params: AccessParams {
                slot: timing.slot,
                difs,
                eifs,
                cw_min: resolved.cw_min,
                cw_max: resolved.cw_max,
            },
            rx_params,
            basic_rates_kbps: resolved.basic_rates_kbps,
            config: config.clone(),
            links,
            signal_slots: vec![SignalSlots::default(); nodes.len()],
            nodes: built,
            frames: FrameTable::new(),
            out: VecDeque::new(),
            observing: false,
            air: VecDeque::new(),
            orders: ArrivalOrders::new(nodes.len(), is_moving),
            stale_events: 0,
        })
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
    pub fn standard(&self) -> Standard {
        self.standard
    }
    pub fn timing(&self) -> Timing {
        self.timing
    }
    pub fn config(&self) -> &RadioConfig {
        &self.config
    }
    /// The link budget the medium was built with.
    pub fn links(&self) -> &LinkBudget {
        &self.links
    }

    /// Lets the nodes move along `trajectories`, one per node (see
    /// [`LinkBudget::set_trajectories`]); `seed` must be the medium's.
    pub fn set_trajectories(
        &mut self,
        trajectories: Vec<meshbed_mobility::Trajectory>,
        seed: u64,
    ) -> Result<(), ConfigError> {
        self.links.set_trajectories(&self.config, trajectories, seed)?;
        // Moving nodes' arrival orders change from frame to frame.
        self.orders.set_moving();
        Ok(())
    }
    pub fn counters(&self, node: NodeId) -> &MacCounters {
        &self.nodes[node as usize].counters
    }
    /// Per link (transmitter → receiver, in node order), the DATA attempts
    /// and successes at each rate; empty unless some node runs rate control.
    pub fn rate_histogram(&self) -> Vec<LinkRates> {
        let per_node = self.nodes.iter().enumerate();
        per_node.filter_map(|(i, n)| Some(n.rates.as_ref()?.histogram(i as NodeId))).flatten().collect()
    }
    pub fn queue_len(&self, node: NodeId) -> usize {
        self.nodes[node as usize].fx.queue_len()
    }
    pub fn queue_capacity(&self) -> usize {
        self.config.mac.queue_packets as usize
    }
    pub fn data_rate_kbps(&self, node: NodeId) -> u32 {
        self.links.data_rate_kbps(node)
    }
    pub fn tx_power_dbm(&self, node: NodeId) -> f64 {
        self.links.tx_power_dbm(node)
    }
    /// Mean received power at `to` of a transmission by `from` (no fading).
    pub fn mean_rx_dbm(&self, from: NodeId, to: NodeId) -> f64 {
        self.links.mean_rx_dbm(from, to)
    }
    /// Whether `to` can decode `from`'s data frames without interference and
    /// fading: above the sensitivity and above the SINR threshold of the rate.
    pub fn can_decode(&self, from: NodeId, to: NodeId) -> bool {
        self.links.can_decode(from, to)
    }

    /// The service time of one `packet_bytes` IP packet from `node` on an
    /// idle channel: DIFS, the mean initial backoff (CWmin/2 slots), the DATA
    /// frame at the node's rate, SIFS and the ACK at the control rate for
    /// it. This is the per-node delay a relay reports before it has measured
    /// one (seed 001 §3.1).
    pub fn one_frame_service_time(&self, node: NodeId, packet_bytes: u32) -> Duration {
        let rate = self.data_rate_kbps(node);
        let ack_rate = control_rate_kbps(&self.basic_rates_kbps, rate);
        let slot = self.timing.slot;
        let mean_backoff = Duration::from_nanos(slot.as_nanos() * self.access_params.cw_min as u64 / 2);
        self.access_params.difs
            + mean_backoff
            + self.standard.frame_duration(packet_bytes + phy::DATA_OVERHEAD_BYTES, rate)
            + self.timing.sifs
            + self.standard.frame_duration(phy::ACK_BYTES, ack_rate)
    }

    /// The next indication for the layer above.
    pub fn poll_indication(&mut self) -> Option<Indication<P>> {
        self.out.pop_front()
    }

    /// Access, timeout and NAV-end events handled that a later event of
    /// the same timer had made stale (and that did nothing): none with a
    /// queue that keeps the radio's timers ([`Scheduler::set_timer`]).
    pub fn stale_events(&self) -> u64 {
        self.stale_events
    }

    /// Whether an indication or an air event waits to be polled: most
    /// events leave neither, and a driver can say so with one test.
    #[inline]
    pub fn has_output(&self) -> bool {
        !self.out.is_empty() || !self.air.is_empty()
    }

    /// Turns the report of every frame sent and heard ([`AirEvent`]) on or
    /// off; off by default.
    pub fn set_observing(&mut self, on: bool) {
        self.observing = on;
        if !on {
            self.air.clear();
        }
    }
    pub fn observing(&self) -> bool {
        self.observing
    }

    /// The next frame sent or heard, while observing.
    pub fn poll_air_event(&mut self) -> Option<AirEvent<P>> {
        self.air.pop_front()
    }

    /// Hands a packet to `node`'s MAC for `dest`. Returns `false` (and
    /// reports a drop) when the queue is full.
    pub fn enqueue(&mut self, now: Instant, node: NodeId, dest: Addr, payload: P, sched: &mut impl Scheduler) -> bool {
        let cap = self.config.mac.queue_packets as usize;
        let n = &mut self.nodes[node as usize];
        if n.fx.queue_len() >= cap {
            n.counters.drop_queue_overflow += 1;
            self.out.push_back(Indication::Drop { node, payload, cause: DropCause::QueueOverflow });
            return false;
        }
        n.counters.enqueued += 1;
        n.fx.push(dest, payload, now);
        if !n.fx.has_current() {
            self.pull_next(node);
            if self.medium_busy(node, now) {
                self.nodes[node as usize].access.backoff_if_none_pending();
            }
        }
        self.mac_update(node, now, sched);
        true
    }

    /// Runs one event.
    pub fn handle(&mut self, now: Instant, event: RadioEvent, sched: &mut impl Scheduler) {
        match event {
            RadioEvent::RxStart { node, frame, power_mw } => self.rx_start(now, node, frame, power_mw, sched),
            RadioEvent::RxEnd { node, frame } => self.rx_end(now, node, frame, sched),
            RadioEvent::TxEnd { node } => self.tx_end(now, node, sched),
            RadioEvent::Access { node, gen } => {
                let n = &mut self.nodes[node as usize];
                if !n.access.access_granted(gen) {
                    self.stale_events += 1;
                    return;
                }
                if n.fx.state == TxState::Contend {
                    self.start_attempt(now, node, sched);
                }
                self.mac_update(node, now, sched);
            }
            RadioEvent::Timeout { node, gen } => {
                let n = &mut self.nodes[node as usize];
                if gen != n.fx.timeout_gen || !matches!(n.fx.state, TxState::WaitAck | TxState::WaitCts) {
                    self.stale_events += 1;
                    return;
                }
                if n.rx.is_locked() {
                    // A frame is arriving: it may be the answer.
                    n.fx.await_rx_decision = true;
                    return;
                }
                self.tx_failed(now, node, sched);
            }
            RadioEvent::Respond { node } => self.respond(now, node, sched),
            RadioEvent::NavEnd { node, gen } => {
                if self.nodes[node as usize].access.nav_end_current(gen) {
                    self.mac_update(node, now, sched);
                } else {
                    self.stale_events += 1;
                }
            }
        }
    }

    /// Whether fetching a receiver's state ahead of its arrival
    /// ([`Medium::prefetch`]) pays: only when the nodes' state outgrows a
    /// core's own cache (about 1 MiB on today's x86 cores; 1,000 nodes).
    /// Below that it is all there already, and asking costs up to 6% (the
    /// 100-node runs); a 6400-node grid (6 MB) runs about 1.1–1.2× faster
    /// with it (docs/SPEED.md).
    pub fn prefetch_pays(&self) -> bool {
        state_outgrows_caches::<P>(self.nodes.len())
    }

    /// Asks the CPU to fetch the state an arrival at `node` reads first (its
    /// transmission, reception and carrier-sense state, the first cache
    /// lines of its model) before the event runs: a frame's receivers are
    /// scattered over the nodes and each would otherwise wait on memory.
    /// A hint ([`meshbed_core::hint`]): changes nothing the model computes.
    #[inline]
    pub fn prefetch(&self, node: NodeId) {
        if let Some(n) = self.nodes.get(node as usize) {
            // Its fields up to the frame exchange's state, in this order
            // (`#[repr(C)]`): about 170 bytes, three or four lines.
            let hot_bytes =
                std::mem::offset_of!(Node<P>, fx) + std::mem::offset_of!(FrameExchange<P>, await_rx_decision);
            meshbed_core::hint::prefetch_read(n, hot_bytes);
        }
    }

    /// The same for the first signals on the air at `node`, whose place
    /// follows from the node's number alone ([`SignalSlots`]).
    #[inline]
    pub fn prefetch_signals(&self, node: NodeId) {
        if let Some(slots) = self.signal_slots.get(node as usize) {
            slots.prefetch();
        }
    }

    // ---------------------------------------------------------------- PHY

    /// Puts `frame` on the air from its transmitter now and schedules its
    /// arrival at every neighbour.
    fn transmit(&mut self, now: Instant, frame: Frame<P>, sched: &mut impl Scheduler) {
        let node = frame.tx;
        let airtime = self.standard.frame_duration(frame.mpdu_bytes(), frame.rate_kbps);
        if self.observing {
            let tx_power_dbm = self.tx_power_dbm(node);
            self.air.push_back(AirEvent::Sent { node, at: now, frame: frame.clone(), airtime, tx_power_dbm });
        }
        let neighbours = self.links.neighbours_at(node, now);
        let id = self.frames.insert(frame, neighbours.len() as u32 + 1);
        let n = &mut self.nodes[node as usize];
        // Half duplex: transmitting abandons any reception in progress.
        let mut abandoned_awaited_answer = false;
        if let Some(locked) = n.rx.abandon() {
            if self.frames.get(locked).rx == Addr::Unicast(node) {
                n.counters.rx_while_busy += 1;
            }
            // The ACK/CTS timeout was deferred to this reception's end; it
            // will never end for us now, so the exchange has failed.
            abandoned_awaited_answer = std::mem::take(&mut n.fx.await_rx_decision);
        }
        n.tx_frame = Some(id);
        sched.schedule(now + airtime, RadioEvent::TxEnd { node });
        let fading = self.config.fading;
        // The arrivals in time order, the nearest receiver first and equal
        // times in node order (the order the events always ran in), then
        // the ends in the same order one airtime later: the queue takes
        // them as they come.
        // Handed to the queue as they are made (issue 28: writing them into
        // a vector first was ~1.5% of the ATP paper's 100-node runs).
        let order = self.orders.order(node, neighbours);
        let nodes = &mut self.nodes;
        let starts = order.iter().map(|&k| {
            let nb = &neighbours[k as usize];
            // Fading is drawn from the receiver's own stream; without
            // fading the receiver's state is not touched here but when its
            // arrival runs, which the driver prefetches (issue 28: reading
            // it for every receiver as the frame starts was most of
            // `transmit`'s time in the 6,400-node grid).
            let gain = fading.sample_gain_from(|| &mut nodes[nb.node as usize].rng_fading);
            let power_mw = nb.mean_power_mw * gain;
            (now + nb.propagation_delay, RadioEvent::RxStart { node: nb.node, frame: id, power_mw })
        });
        let ends = order.iter().map(|&k| {
            let nb = &neighbours[k as usize];
            (now + nb.propagation_delay + airtime, RadioEvent::RxEnd { node: nb.node, frame: id })
        });
        sched.schedule_batch(starts.chain(ends));
        if abandoned_awaited_answer {
            self.tx_failed(now, node, sched);
        }
    }

    fn tx_end(&mut self, now: Instant, node: NodeId, sched: &mut impl Scheduler) {
        let id = self.nodes[node as usize].tx_frame.take().expect("TxEnd without a frame");
        let (kind, rx) = {
            let f = self.frames.get(id);
            (f.kind, f.rx)
        };
        self.frames.release(id);
        self.exchange_tx_end(now, node, kind, rx, sched);
        self.mac_update(node, now, sched);
    }

    fn rx_start(&mut self, now: Instant, node: NodeId, frame: FrameId, power_mw: f64, sched: &mut impl Scheduler) {
        let f = self.frames.get(frame);
        let for_me = f.rx == Addr::Unicast(node);
        let n = &mut self.nodes[node as usize];
        let transmitting = n.tx_frame.is_some();
        let slots = &mut self.signal_slots[node as usize];
        match n.rx.signal_start(slots, now, frame, f.rate_kbps, power_mw, transmitting, &self.rx_params) {
            ArrivalFate::Busy if for_me => n.counters.rx_while_busy += 1,
            ArrivalFate::BelowSensitivity if for_me => n.counters.rx_below_sensitivity += 1,
            _ => {}
        }
        self.mac_update(node, now, sched);
    }

    fn rx_end(&mut self, now: Instant, node: NodeId, frame: FrameId, sched: &mut impl Scheduler) {
        let power_mw = self.nodes[node as usize].rx.locked_power_mw().unwrap_or(0.0);
        let slots = &mut self.signal_slots[node as usize];
        let decision = self.nodes[node as usize].rx.signal_end(slots, now, frame, &self.rx_params);
        if let (true, Some(decoded)) = (self.observing, decision) {
            let f = self.frames.get(frame).clone();
            let airtime = self.standard.frame_duration(f.mpdu_bytes(), f.rate_kbps);
            let at = Instant::from_nanos(now.as_nanos().saturating_sub(airtime.as_nanos()));
            self.air.push_back(AirEvent::Heard { node, at, frame: f, airtime, rx_power_mw: power_mw, decoded });
        }
        match decision {
            Some(true) => self.mac_rx_ok(now, node, frame, power_mw, sched),
            Some(false) => {
                let for_me = self.frames.get(frame).rx == Addr::Unicast(node);
                self.mac_rx_error(now, node, for_me, sched);
            }
            None => {}
        }
        self.frames.release(frame);
        self.mac_update(node, now, sched);
    }

    // ---------------------------------------------------------------- MAC

    /// Physical carrier sense, the NAV, and the node's own exchange.
    fn medium_busy(&self, node: NodeId, now: Instant) -> bool {
        let n = &self.nodes[node as usize];
        n.tx_frame.is_some() || n.rx.cca_busy(&self.rx_params) || n.access.nav_busy(now) || n.fx.holds_medium()
    }

    /// Re-evaluates the medium from `node`'s point of view: freezes the
    /// backoff when it turns busy, schedules access when it is idle and the
    /// node has a packet or a post-transmission backoff to count down.
    /// Most calls follow an arrival at a node that found the medium busy
    /// and leaves it so, where nothing changes (`ChannelAccess::update`
    /// returns at once): that test inline in every handler, the rest out
    /// of line (issue 28).
    #[inline(always)]
    fn mac_update(&mut self, node: NodeId, now: Instant, sched: &mut impl Scheduler) {
        let busy = self.medium_busy(node, now);
        if busy && self.nodes[node as usize].access.is_busy() {
            return;
        }
        self.mac_update_changed(node, now, busy, sched);
    }

    fn mac_update_changed(&mut self, node: NodeId, now: Instant, busy: bool, sched: &mut impl Scheduler) {
        let n = &mut self.nodes[node as usize];
        let wants = n.fx.state == TxState::Contend || (n.fx.state == TxState::Idle && n.access.backoff_pending());
        n.access.update(node, now, busy, wants, &self.access_params, sched);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone)]
    struct Ip(u32);
    impl Payload for Ip {
        fn msdu_bytes(&self) -> u32 {
            self.0
        }
    }

    #[test]
    fn a_link_budget_built_without_a_mac_is_the_one_the_medium_uses() {
        let cfg = RadioConfig { shadowing_sigma_db: 6.0, ..Default::default() };
        let nodes: Vec<NodeRadio> = (0..6).map(|i| NodeRadio::at(90.0 * i as f64, 0.0)).collect();
        let m: Medium<Ip> = Medium::new(&cfg, &nodes, 5).unwrap();
        let alone = LinkBudget::new(&cfg, &nodes, 5).unwrap();
        for from in 0..6 {
            assert_eq!(alone.neighbours(from), m.links().neighbours(from));
            for to in 0..6 {
                assert_eq!(alone.mean_rx_dbm(from, to), m.mean_rx_dbm(from, to));
                assert_eq!(alone.can_decode(from, to), m.can_decode(from, to));
            }
        }
    }

    #[test]
    fn one_frame_service_time_at_24_mbit_per_s_matches_hand_computation() {
        // 802.11a: slot 9 µs, SIFS 16 µs, DIFS 34 µs, CWmin 15.
        // Node 0 at 24 Mbit/s (N_DBPS 96), node 1 at 6 Mbit/s (N_DBPS 24).
        let cfg = RadioConfig { standard: Standard::A, data_rate_kbps: 24_000, ..Default::default() };
        let nodes = [NodeRadio::at(0.0, 0.0), NodeRadio { data_rate_kbps: Some(6_000), ..NodeRadio::at(10.0, 0.0) }];
        let m: Medium<Ip> = Medium::new(&cfg, &nodes, 1).unwrap();
        let us = |x: f64| Duration::from_nanos((x * 1000.0) as u64);
        // 1500 B + 36 B MAC framing = 1536 B: (16 + 12288 + 6) bits / 96
        // = 128.2 → 129 symbols = 516 µs + 20 µs preamble = 536 µs. ACK at
        // 24 Mbit/s (the highest basic rate ≤ 24): 134 / 96 → 2 symbols = 28 µs.
        // 34 + 7.5·9 + 536 + 16 + 28 = 681.5 µs.
        assert_eq!(m.one_frame_service_time(0, 1500), us(681.5));
        // 100 B → 136 B: 1110 / 96 → 12 symbols = 48 + 20 = 68 µs.
        // 34 + 67.5 + 68 + 16 + 28 = 213.5 µs.
        assert_eq!(m.one_frame_service_time(0, 100), us(213.5));
        // At 6 Mbit/s: 12310 / 24 → 513 symbols = 2052 + 20 = 2072 µs; the
        // ACK goes at 6 Mbit/s: 134 / 24 → 6 symbols = 24 + 20 = 44 µs.
        // 34 + 67.5 + 2072 + 16 + 44 = 2233.5 µs.
        assert_eq!(m.one_frame_service_time(1, 1500), us(2233.5));
        // A configured CWmin changes the mean backoff: 31 → 15.5 slots.
        let cfg = RadioConfig { mac: crate::MacConfig { cw_min: Some(31), ..cfg.mac.clone() }, ..cfg };
        let m: Medium<Ip> = Medium::new(&cfg, &nodes, 1).unwrap();
        assert_eq!(m.one_frame_service_time(0, 1500), us(681.5 + 8.0 * 9.0));
    }
}
