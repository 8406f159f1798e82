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
//! Backoff countdowns are never stepped slot by slot: when the medium goes
//! idle a node schedules one access event at `idle + IFS + slots·slot`; when
//! it goes busy before then the elapsed whole slots are subtracted (the
//! countdown freezes) and the event is invalidated by a generation counter.

use crate::config::{ConfigError, ErrorModel, RadioConfig};
use crate::phy::{self, control_rate_kbps, Standard, Timing};
use crate::propagation::{dbm_to_mw, standard_normal, SPEED_OF_LIGHT_M_PER_S};
use meshbed_core::{stream_rng, Duration, Instant, StreamId, StreamKind, StreamRng};
use rand::Rng;
use serde::Serialize;
use std::collections::VecDeque;

pub type NodeId = u32;

/// A link-layer destination.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Addr {
    Unicast(NodeId),
    Broadcast,
}

/// What the MAC carries. The model only needs the MSDU length (the IP packet).
pub trait Payload: Clone {
    fn msdu_bytes(&self) -> u32;
}

/// Where a node is and what it overrides.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeRadio {
    pub x_m: f64,
    pub y_m: f64,
    pub tx_power_dbm: Option<f64>,
    pub data_rate_kbps: Option<u32>,
}

impl NodeRadio {
    pub fn at(x_m: f64, y_m: f64) -> Self {
        NodeRadio { x_m, y_m, tx_power_dbm: None, data_rate_kbps: None }
    }
}

/// Index of a frame in flight.
pub type FrameId = u32;

/// The model's events. The driver stores them and hands each back to
/// [`Medium::handle`] at its time.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum RadioEvent {
    /// The first energy of `frame` reaches `node` at `power_mw` (after fading).
    RxStart { node: NodeId, frame: FrameId, power_mw: f64 },
    /// The last energy of `frame` leaves `node`.
    RxEnd { node: NodeId, frame: FrameId },
    /// `node` finished putting its current frame on the air.
    TxEnd { node: NodeId },
    /// IFS plus the backoff countdown of `node` have elapsed.
    Access { node: NodeId, gen: u32 },
    /// ACK or CTS timeout of `node`.
    Timeout { node: NodeId, gen: u32 },
    /// SIFS after a frame that needs an answer: send it.
    Respond { node: NodeId },
    /// The NAV of `node` may have expired.
    NavEnd { node: NodeId, gen: u32 },
}

impl RadioEvent {
    pub fn node(&self) -> NodeId {
        match *self {
            RadioEvent::RxStart { node, .. }
            | RadioEvent::RxEnd { node, .. }
            | RadioEvent::TxEnd { node }
            | RadioEvent::Access { node, .. }
            | RadioEvent::Timeout { node, .. }
            | RadioEvent::Respond { node }
            | RadioEvent::NavEnd { node, .. } => node,
        }
    }
    /// A small stable code per variant, for trace hashes.
    pub fn code(&self) -> u64 {
        match self {
            RadioEvent::RxStart { .. } => 1,
            RadioEvent::RxEnd { .. } => 2,
            RadioEvent::TxEnd { .. } => 3,
            RadioEvent::Access { .. } => 4,
            RadioEvent::Timeout { .. } => 5,
            RadioEvent::Respond { .. } => 6,
            RadioEvent::NavEnd { .. } => 7,
        }
    }
}

/// Where the model puts its future events.
pub trait Scheduler {
    fn schedule(&mut self, at: Instant, event: RadioEvent);
}

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
    /// `node` received `payload` from its neighbour `from` (duplicates removed).
    Deliver { node: NodeId, from: NodeId, payload: P },
    /// A packet left the MAC; timestamps for delay estimation.
    TxReport(TxReport),
    /// A packet was dropped.
    Drop { node: NodeId, payload: P, cause: DropCause },
    /// `node` took a packet off its queue (there is room for one more).
    Dequeued { node: NodeId },
}

/// Counters of one node. Frame-level reception failures count frames
/// addressed to this node; packet drops count packets this node gave up.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
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

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum FrameKind {
    Data,
    Ack,
    Rts,
    Cts,
}

struct Frame<P> {
    kind: FrameKind,
    tx: NodeId,
    rx: Addr,
    /// NAV duration announced in the frame.
    nav: Duration,
    seq: u16,
    retry: bool,
    rate_kbps: u32,
    payload: Option<P>,
    /// Outstanding references: one per scheduled RxEnd plus one for TxEnd.
    refs: u32,
}

struct Neighbor {
    node: NodeId,
    mean_power_mw: f64,
    delay: Duration,
}

struct Arrival {
    frame: FrameId,
    power_mw: f64,
}

/// A reception in progress: the preamble was detected and the PHY follows it.
struct Lock {
    frame: FrameId,
    power_mw: f64,
    interference_mw: f64,
    since: Instant,
    min_sinr: f64,
    /// ln of the probability that every chunk so far was received.
    ln_success: f64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum TxState {
    /// No packet at the head of the line.
    Idle,
    /// A packet waits for channel access.
    Contend,
    TxRts,
    WaitCts,
    /// CTS received; DATA goes SIFS later.
    CtsReceived,
    TxData,
    WaitAck,
}

enum Response {
    /// ACK at the control rate for the data frame's rate.
    Ack {
        to: NodeId,
        rate_kbps: u32,
    },
    Cts {
        to: NodeId,
        nav: Duration,
        rate_kbps: u32,
    },
    DataAfterCts,
}

struct Queued<P> {
    dest: Addr,
    payload: P,
    enqueued_at: Instant,
}

struct Current<P> {
    q: Queued<P>,
    first_tx_at: Option<Instant>,
    seq: u16,
    short_retries: u32,
    long_retries: u32,
    use_rts: bool,
}

impl<P> Current<P> {
    fn retries(&self) -> u32 {
        self.short_retries + self.long_retries
    }
}

struct Node<P> {
    rate_kbps: u32,
    tx_power_dbm: f64,
    neighbors: Vec<Neighbor>,
    // PHY
    tx_frame: Option<FrameId>,
    arrivals: Vec<Arrival>,
    energy_mw: f64,
    lock: Option<Lock>,
    // MAC
    queue: VecDeque<Queued<P>>,
    cur: Option<Current<P>>,
    state: TxState,
    cw: u32,
    backoff_slots: u32,
    busy: bool,
    idle_since: Instant,
    count_start: Instant,
    access_scheduled: bool,
    access_gen: u32,
    timeout_gen: u32,
    await_rx_decision: bool,
    nav_until: Instant,
    nav_gen: u32,
    use_eifs: bool,
    response: Option<Response>,
    next_seq: u16,
    /// Last sequence number received from each transmitter (duplicate detection).
    last_seq_from: Vec<(NodeId, u16)>,
    batch: Vec<TxReport>,
    counters: MacCounters,
    rng_mac: StreamRng,
    rng_phy: StreamRng,
    rng_fading: StreamRng,
}

struct RateParams {
    rate_kbps: u32,
    threshold_db: f64,
    threshold_linear: f64,
}

/// The medium and every node on it.
pub struct Medium<P> {
    standard: Standard,
    timing: Timing,
    difs: Duration,
    eifs: Duration,
    ack_timeout: Duration,
    basic_rates_kbps: Vec<u32>,
    rx_sensitivity_mw: f64,
    cs_threshold_mw: f64,
    noise_mw: f64,
    rx_sensitivity_dbm: f64,
    noise_dbm: f64,
    cw_min: u32,
    cw_max: u32,
    config: RadioConfig,
    rates: Vec<RateParams>,
    /// Per-bit error rate at the threshold SINR (10% loss of 8000 bits).
    ber_at_threshold: f64,
    mean_rx_dbm: Vec<Vec<f64>>,
    nodes: Vec<Node<P>>,
    frames: Vec<Option<Frame<P>>>,
    free_frames: Vec<FrameId>,
    out: VecDeque<Indication<P>>,
}

impl<P: Payload> Medium<P> {
    /// Builds the medium. Each node's random streams come from `seed` and the
    /// node's index, so adding a node changes nobody else's draws.
    pub fn new(config: &RadioConfig, nodes: &[NodeRadio], seed: u64) -> Result<Self, ConfigError> {
        let resolved = config.resolve()?;
        let standard = config.standard;
        let timing = standard.timing();
        let basic = resolved.basic_rates_kbps.clone();
        let lowest_basic = *basic.iter().min().expect("resolve checks non-empty");
        let difs = timing.difs();
        // EIFS = SIFS + ACK at the lowest basic rate + DIFS (802.11-2016 §10.3.2.3.7).
        let eifs = timing.sifs + standard.frame_duration(phy::ACK_BYTES, lowest_basic) + difs;
        // ACK/CTS timeout: SIFS + slot + the time to detect a preamble
        // (802.11-2016 §10.3.2.9). If a reception has started by then we wait
        // for its end before deciding.
        let ack_timeout = timing.sifs + timing.slot + timing.preamble_header;
        let mut rates = Vec::new();
        for &r in standard.rates_kbps() {
            let thr = config.sinr_threshold_for(r);
            rates.push(RateParams { rate_kbps: r, threshold_db: thr, threshold_linear: libm::pow(10.0, thr / 10.0) });
        }
        for (i, n) in nodes.iter().enumerate() {
            if let Some(r) = n.data_rate_kbps {
                if !standard.rates_kbps().contains(&r) {
                    return Err(ConfigError {
                        key: format!("nodes[{i}].data_rate_kbps"),
                        value: r.to_string(),
                        expected: format!("one of the {} rates {:?}", standard.name(), standard.rates_kbps()),
                    });
                }
            }
            if !(n.x_m.is_finite() && n.y_m.is_finite()) {
                return Err(ConfigError {
                    key: format!("nodes[{i}].position"),
                    value: format!("({}, {})", n.x_m, n.y_m),
                    expected: "finite coordinates in metres".into(),
                });
            }
        }
        let f = standard.frequency_hz();
        let n = nodes.len();
        let mut mean_rx_dbm = vec![vec![f64::NEG_INFINITY; n]; n];
        // Static log-normal shadowing, one draw per unordered link from the
        // link's own stream, so that links are reciprocal and independent.
        let mut shadow_db = vec![vec![0.0; n]; n];
        if config.shadowing_sigma_db > 0.0 {
            for i in 0..n {
                for j in (i + 1)..n {
                    let mut rng = stream_rng(seed, StreamId::pair(StreamKind::Shadowing, i as u32, j as u32));
                    let s = config.shadowing_sigma_db * standard_normal(&mut rng);
                    shadow_db[i][j] = s;
                    shadow_db[j][i] = s;
                }
            }
        }
        let mut built = Vec::with_capacity(n);
        for (i, a) in nodes.iter().enumerate() {
            let tx_power_dbm = a.tx_power_dbm.unwrap_or(config.tx_power_dbm);
            let mut neighbors = Vec::new();
            for (j, b) in nodes.iter().enumerate() {
                if i == j {
                    continue;
                }
                let d = libm::hypot(a.x_m - b.x_m, a.y_m - b.y_m);
                let rx_dbm = tx_power_dbm - config.propagation.loss_db(d, f) - shadow_db[i][j];
                mean_rx_dbm[i][j] = rx_dbm;
                if rx_dbm >= config.interference_floor_dbm {
                    let delay = Duration::from_nanos(libm::round(d / SPEED_OF_LIGHT_M_PER_S * 1e9) as u64);
                    neighbors.push(Neighbor { node: j as NodeId, mean_power_mw: dbm_to_mw(rx_dbm), delay });
                }
            }
            let idx = i as u64;
            built.push(Node {
                rate_kbps: a.data_rate_kbps.unwrap_or(config.data_rate_kbps),
                tx_power_dbm,
                neighbors,
                tx_frame: None,
                arrivals: Vec::new(),
                energy_mw: 0.0,
                lock: None,
                queue: VecDeque::new(),
                cur: None,
                state: TxState::Idle,
                cw: resolved.cw_min,
                backoff_slots: 0,
                busy: false,
                idle_since: Instant::ZERO,
                count_start: Instant::ZERO,
                access_scheduled: false,
                access_gen: 0,
                timeout_gen: 0,
                await_rx_decision: false,
                nav_until: Instant::ZERO,
                nav_gen: 0,
                use_eifs: false,
                response: None,
                next_seq: 0,
                last_seq_from: Vec::new(),
                batch: Vec::new(),
                counters: MacCounters::default(),
                rng_mac: stream_rng(seed, StreamId::new(StreamKind::Mac, idx)),
                rng_phy: stream_rng(seed, StreamId::new(StreamKind::Phy, idx)),
                rng_fading: stream_rng(seed, StreamId::new(StreamKind::Fading, idx)),
            });
        }
        Ok(Medium {
            standard,
            timing,
            difs,
            eifs,
            ack_timeout,
            basic_rates_kbps: basic,
            rx_sensitivity_mw: dbm_to_mw(resolved.rx_sensitivity_dbm),
            cs_threshold_mw: dbm_to_mw(resolved.cs_threshold_dbm),
            noise_mw: dbm_to_mw(resolved.noise_dbm),
            rx_sensitivity_dbm: resolved.rx_sensitivity_dbm,
            noise_dbm: resolved.noise_dbm,
            cw_min: resolved.cw_min,
            cw_max: resolved.cw_max,
            config: config.clone(),
            rates,
            ber_at_threshold: 1.0 - libm::pow(0.9, 1.0 / 8000.0),
            mean_rx_dbm,
            nodes: built,
            frames: Vec::new(),
            free_frames: Vec::new(),
            out: VecDeque::new(),
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
    pub fn counters(&self, node: NodeId) -> &MacCounters {
        &self.nodes[node as usize].counters
    }
    pub fn queue_len(&self, node: NodeId) -> usize {
        self.nodes[node as usize].queue.len()
    }
    pub fn queue_capacity(&self) -> usize {
        self.config.mac.queue_packets as usize
    }
    pub fn data_rate_kbps(&self, node: NodeId) -> u32 {
        self.nodes[node as usize].rate_kbps
    }
    pub fn tx_power_dbm(&self, node: NodeId) -> f64 {
        self.nodes[node as usize].tx_power_dbm
    }
    /// Mean received power at `to` of a transmission by `from` (no fading).
    pub fn mean_rx_dbm(&self, from: NodeId, to: NodeId) -> f64 {
        self.mean_rx_dbm[from as usize][to as usize]
    }
    /// Whether `to` can decode `from`'s data frames without interference and
    /// fading: above the sensitivity and above the SINR threshold of the rate.
    pub fn can_decode(&self, from: NodeId, to: NodeId) -> bool {
        if from == to {
            return false;
        }
        let rx = self.mean_rx_dbm(from, to);
        rx >= self.rx_sensitivity_dbm && rx - self.noise_dbm >= self.rate(self.data_rate_kbps(from)).threshold_db
    }

    fn rate(&self, rate_kbps: u32) -> &RateParams {
        self.rates.iter().find(|r| r.rate_kbps == rate_kbps).unwrap_or(&self.rates[0])
    }

    /// The next indication for the layer above.
    pub fn poll_indication(&mut self) -> Option<Indication<P>> {
        self.out.pop_front()
    }

    /// Hands a packet to `node`'s MAC for `dest`. Returns `false` (and
    /// reports a drop) when the queue is full.
    pub fn enqueue(&mut self, now: Instant, node: NodeId, dest: Addr, payload: P, sched: &mut impl Scheduler) -> bool {
        let cap = self.config.mac.queue_packets as usize;
        let n = &mut self.nodes[node as usize];
        if n.queue.len() >= cap {
            n.counters.drop_queue_overflow += 1;
            self.out.push_back(Indication::Drop { node, payload, cause: DropCause::QueueOverflow });
            return false;
        }
        n.counters.enqueued += 1;
        n.queue.push_back(Queued { dest, payload, enqueued_at: now });
        if n.cur.is_none() {
            self.pull_next(node);
            let busy = self.medium_busy(node, now);
            let n = &mut self.nodes[node as usize];
            // A frame that finds the medium busy and no backoff pending
            // starts a backoff (802.11-2016 §10.3.4.2); one that finds it idle
            // long enough goes at once.
            if busy && n.backoff_slots == 0 && !n.access_scheduled {
                n.backoff_slots = n.rng_mac.gen_range(0..=n.cw);
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
                if gen != n.access_gen || !n.access_scheduled {
                    return;
                }
                n.access_scheduled = false;
                n.backoff_slots = 0;
                if n.state == TxState::Contend {
                    self.start_attempt(now, node, sched);
                }
                self.mac_update(node, now, sched);
            }
            RadioEvent::Timeout { node, gen } => {
                let n = &mut self.nodes[node as usize];
                if gen != n.timeout_gen || !matches!(n.state, TxState::WaitAck | TxState::WaitCts) {
                    return;
                }
                if n.lock.is_some() {
                    // A frame is arriving: it may be the answer.
                    n.await_rx_decision = true;
                    return;
                }
                self.tx_failed(now, node, sched);
            }
            RadioEvent::Respond { node } => self.respond(now, node, sched),
            RadioEvent::NavEnd { node, gen } => {
                if gen == self.nodes[node as usize].nav_gen {
                    self.mac_update(node, now, sched);
                }
            }
        }
    }

    // ---------------------------------------------------------------- PHY

    fn alloc_frame(&mut self, f: Frame<P>) -> FrameId {
        if let Some(id) = self.free_frames.pop() {
            self.frames[id as usize] = Some(f);
            id
        } else {
            self.frames.push(Some(f));
            (self.frames.len() - 1) as FrameId
        }
    }

    fn release_frame(&mut self, id: FrameId) {
        let slot = &mut self.frames[id as usize];
        let f = slot.as_mut().expect("live frame");
        f.refs -= 1;
        if f.refs == 0 {
            *slot = None;
            self.free_frames.push(id);
        }
    }

    fn frame(&self, id: FrameId) -> &Frame<P> {
        self.frames[id as usize].as_ref().expect("live frame")
    }

    fn mpdu_bytes(&self, kind: FrameKind, payload: Option<&P>) -> u32 {
        match kind {
            FrameKind::Data => payload.map_or(0, |p| p.msdu_bytes()) + phy::DATA_OVERHEAD_BYTES,
            FrameKind::Ack => phy::ACK_BYTES,
            FrameKind::Cts => phy::CTS_BYTES,
            FrameKind::Rts => phy::RTS_BYTES,
        }
    }

    /// Puts a frame on the air from `node` now.
    #[allow(clippy::too_many_arguments)]
    fn transmit(
        &mut self,
        now: Instant,
        node: NodeId,
        kind: FrameKind,
        rx: Addr,
        nav: Duration,
        seq: u16,
        retry: bool,
        rate_kbps: u32,
        payload: Option<P>,
        sched: &mut impl Scheduler,
    ) {
        let bytes = self.mpdu_bytes(kind, payload.as_ref());
        let airtime = self.standard.frame_duration(bytes, rate_kbps);
        let refs = self.nodes[node as usize].neighbors.len() as u32 + 1;
        let id = self.alloc_frame(Frame { kind, tx: node, rx, nav, seq, retry, rate_kbps, payload, refs });
        let n = &mut self.nodes[node as usize];
        // Half duplex: transmitting abandons any reception in progress.
        let mut abandoned_awaited_answer = false;
        if let Some(lock) = n.lock.take() {
            let f = self.frames[lock.frame as usize].as_ref().expect("live frame");
            if f.rx == Addr::Unicast(node) {
                n.counters.rx_while_busy += 1;
            }
            // The ACK/CTS timeout was deferred to this reception's end; it
            // will never end for us now, so the exchange has failed.
            abandoned_awaited_answer = std::mem::take(&mut n.await_rx_decision);
        }
        n.tx_frame = Some(id);
        sched.schedule(now + airtime, RadioEvent::TxEnd { node });
        let neighbors = std::mem::take(&mut n.neighbors);
        let fading = self.config.fading;
        for nb in &neighbors {
            // Fading is drawn from the receiver's own stream.
            let gain = fading.sample_gain(&mut self.nodes[nb.node as usize].rng_fading);
            let power_mw = nb.mean_power_mw * gain;
            let at = now + nb.delay;
            sched.schedule(at, RadioEvent::RxStart { node: nb.node, frame: id, power_mw });
            sched.schedule(at + airtime, RadioEvent::RxEnd { node: nb.node, frame: id });
        }
        self.nodes[node as usize].neighbors = neighbors;
        if abandoned_awaited_answer {
            self.tx_failed(now, node, sched);
        }
    }

    fn close_chunk(&mut self, now: Instant, node: NodeId) {
        let noise_mw = self.noise_mw;
        let model = self.config.error_model;
        let ber_thr = self.ber_at_threshold;
        let (rate_kbps, since) = match &self.nodes[node as usize].lock {
            Some(l) => (self.frame(l.frame).rate_kbps, l.since),
            None => return,
        };
        let thr_db = self.rate(rate_kbps).threshold_db;
        let n = &mut self.nodes[node as usize];
        let lock = n.lock.as_mut().expect("checked");
        let dur = now.saturating_since(since);
        lock.since = now;
        if dur.is_zero() {
            return;
        }
        let sinr = lock.power_mw / (noise_mw + lock.interference_mw);
        lock.min_sinr = lock.min_sinr.min(sinr);
        if let ErrorModel::Curve { db_per_decade } = model {
            let sinr_db = 10.0 * libm::log10(sinr);
            let ber = (ber_thr * libm::pow(10.0, -(sinr_db - thr_db) / db_per_decade)).min(0.5);
            let bits = dur.as_nanos() as f64 * rate_kbps as f64 / 1e6;
            lock.ln_success += bits * libm::log1p(-ber);
        }
    }

    fn rx_start(&mut self, now: Instant, node: NodeId, frame: FrameId, power_mw: f64, sched: &mut impl Scheduler) {
        let for_me = self.frame(frame).rx == Addr::Unicast(node);
        self.close_chunk(now, node);
        let sens = self.rx_sensitivity_mw;
        let n = &mut self.nodes[node as usize];
        n.arrivals.push(Arrival { frame, power_mw });
        n.energy_mw += power_mw;
        if n.tx_frame.is_some() {
            if for_me {
                n.counters.rx_while_busy += 1;
            }
        } else if let Some(lock) = &mut n.lock {
            lock.interference_mw += power_mw;
            if for_me {
                n.counters.rx_while_busy += 1;
            }
        } else if power_mw >= sens {
            // Preamble lock-on: the PHY follows the first decodable frame;
            // later frames, however strong, are interference.
            n.lock = Some(Lock {
                frame,
                power_mw,
                interference_mw: (n.energy_mw - power_mw).max(0.0),
                since: now,
                min_sinr: f64::INFINITY,
                ln_success: 0.0,
            });
        } else if for_me {
            n.counters.rx_below_sensitivity += 1;
        }
        self.mac_update(node, now, sched);
    }

    fn rx_end(&mut self, now: Instant, node: NodeId, frame: FrameId, sched: &mut impl Scheduler) {
        self.close_chunk(now, node);
        let n = &mut self.nodes[node as usize];
        if let Some(pos) = n.arrivals.iter().position(|a| a.frame == frame) {
            n.arrivals.swap_remove(pos);
        }
        // Re-sum rather than subtract, so rounding never leaves phantom energy.
        n.energy_mw = n.arrivals.iter().map(|a| a.power_mw).sum();
        let locked_here = n.lock.as_ref().is_some_and(|l| l.frame == frame);
        if locked_here {
            let lock = n.lock.take().expect("checked");
            let ok = match self.config.error_model {
                ErrorModel::Threshold => lock.min_sinr >= self.rate(self.frame(frame).rate_kbps).threshold_linear,
                ErrorModel::Curve { .. } => {
                    let p = libm::exp(lock.ln_success);
                    p >= 1.0 || self.nodes[node as usize].rng_phy.gen::<f64>() < p
                }
            };
            if ok {
                self.mac_rx_ok(now, node, frame, sched);
            } else {
                self.mac_rx_error(now, node, frame, sched);
            }
        } else if let Some(lock) = &mut n.lock {
            lock.interference_mw = (n.energy_mw - lock.power_mw).max(0.0);
        }
        self.release_frame(frame);
        self.mac_update(node, now, sched);
    }

    // ---------------------------------------------------------------- MAC

    fn medium_busy(&self, node: NodeId, now: Instant) -> bool {
        let n = &self.nodes[node as usize];
        n.tx_frame.is_some()
            || n.lock.is_some()
            || n.energy_mw >= self.cs_threshold_mw
            || n.nav_until > now
            || n.response.is_some()
            || matches!(n.state, TxState::WaitAck | TxState::WaitCts | TxState::CtsReceived)
    }

    fn wants_access(&self, node: NodeId) -> bool {
        let n = &self.nodes[node as usize];
        n.state == TxState::Contend || (n.state == TxState::Idle && n.backoff_slots > 0)
    }

    /// Re-evaluates the medium from `node`'s point of view: freezes the
    /// backoff when it turns busy, schedules access when it is idle.
    fn mac_update(&mut self, node: NodeId, now: Instant, sched: &mut impl Scheduler) {
        let busy = self.medium_busy(node, now);
        let wants = self.wants_access(node);
        let slot = self.timing.slot;
        let ifs = if self.nodes[node as usize].use_eifs { self.eifs } else { self.difs };
        let n = &mut self.nodes[node as usize];
        if busy {
            if !n.busy {
                n.busy = true;
                if n.access_scheduled {
                    let elapsed = now.saturating_since(n.count_start).as_nanos() / slot.as_nanos();
                    n.backoff_slots -= (elapsed as u32).min(n.backoff_slots);
                    n.access_scheduled = false;
                    n.access_gen = n.access_gen.wrapping_add(1);
                }
            }
            return;
        }
        if n.busy {
            n.busy = false;
            n.idle_since = now;
        }
        if wants && !n.access_scheduled {
            n.count_start = (n.idle_since + ifs).max(now);
            let at = n.count_start + slot * n.backoff_slots as u64;
            n.access_gen = n.access_gen.wrapping_add(1);
            n.access_scheduled = true;
            sched.schedule(at, RadioEvent::Access { node, gen: n.access_gen });
        }
    }

    fn pull_next(&mut self, node: NodeId) {
        let rts_thr = self.config.mac.rts_threshold_bytes;
        let n = &mut self.nodes[node as usize];
        if n.cur.is_some() {
            return;
        }
        if let Some(q) = n.queue.pop_front() {
            let seq = n.next_seq;
            n.next_seq = (n.next_seq + 1) & 0x0fff;
            let mpdu = q.payload.msdu_bytes() + phy::DATA_OVERHEAD_BYTES;
            let use_rts = matches!(q.dest, Addr::Unicast(_)) && rts_thr.is_some_and(|t| mpdu > t);
            n.cur = Some(Current { q, first_tx_at: None, seq, short_retries: 0, long_retries: 0, use_rts });
            n.state = TxState::Contend;
            self.out.push_back(Indication::Dequeued { node });
        } else {
            n.state = TxState::Idle;
        }
    }

    fn draw_backoff(&mut self, node: NodeId) {
        let n = &mut self.nodes[node as usize];
        n.backoff_slots = n.rng_mac.gen_range(0..=n.cw);
    }

    fn start_attempt(&mut self, now: Instant, node: NodeId, sched: &mut impl Scheduler) {
        let sifs = self.timing.sifs;
        let data_rate = self.nodes[node as usize].rate_kbps;
        let ctrl_rate = control_rate_kbps(&self.basic_rates_kbps, data_rate);
        let ack_air = self.standard.frame_duration(phy::ACK_BYTES, ctrl_rate);
        let n = &mut self.nodes[node as usize];
        let cur = n.cur.as_mut().expect("contending without a packet");
        cur.first_tx_at.get_or_insert(now);
        let (dest, seq, retry, use_rts) = (cur.q.dest, cur.seq, cur.retries() > 0, cur.use_rts);
        if use_rts {
            let data_bytes = cur.q.payload.msdu_bytes() + phy::DATA_OVERHEAD_BYTES;
            let cts_air = self.standard.frame_duration(phy::CTS_BYTES, ctrl_rate);
            let data_air = self.standard.frame_duration(data_bytes, data_rate);
            let nav = sifs * 3 + cts_air + data_air + ack_air;
            n.state = TxState::TxRts;
            n.counters.rts_sent += 1;
            self.transmit(now, node, FrameKind::Rts, dest, nav, seq, retry, ctrl_rate, None, sched);
        } else {
            self.send_data(now, node, sched);
        }
    }

    fn send_data(&mut self, now: Instant, node: NodeId, sched: &mut impl Scheduler) {
        let sifs = self.timing.sifs;
        let data_rate = self.nodes[node as usize].rate_kbps;
        let ctrl_rate = control_rate_kbps(&self.basic_rates_kbps, data_rate);
        let ack_air = self.standard.frame_duration(phy::ACK_BYTES, ctrl_rate);
        let n = &mut self.nodes[node as usize];
        let cur = n.cur.as_ref().expect("sending without a packet");
        let (dest, seq, retry) = (cur.q.dest, cur.seq, cur.retries() > 0);
        let payload = cur.q.payload.clone();
        let nav = if dest == Addr::Broadcast { Duration::ZERO } else { sifs + ack_air };
        n.state = TxState::TxData;
        n.counters.data_tx_attempts += 1;
        self.transmit(now, node, FrameKind::Data, dest, nav, seq, retry, data_rate, Some(payload), sched);
    }

    fn tx_end(&mut self, now: Instant, node: NodeId, sched: &mut impl Scheduler) {
        let id = self.nodes[node as usize].tx_frame.take().expect("TxEnd without a frame");
        let (kind, rx) = {
            let f = self.frame(id);
            (f.kind, f.rx)
        };
        self.release_frame(id);
        let timeout_at = now + self.ack_timeout;
        let n = &mut self.nodes[node as usize];
        match (kind, n.state) {
            (FrameKind::Data, TxState::TxData) if rx == Addr::Broadcast => {
                n.counters.broadcasts_sent += 1;
                self.finish_packet(now, node, TxOutcome::Broadcast);
            }
            (FrameKind::Data, TxState::TxData) => {
                n.state = TxState::WaitAck;
                n.timeout_gen = n.timeout_gen.wrapping_add(1);
                sched.schedule(timeout_at, RadioEvent::Timeout { node, gen: n.timeout_gen });
            }
            (FrameKind::Rts, TxState::TxRts) => {
                n.state = TxState::WaitCts;
                n.timeout_gen = n.timeout_gen.wrapping_add(1);
                sched.schedule(timeout_at, RadioEvent::Timeout { node, gen: n.timeout_gen });
            }
            // ACK and CTS responses leave the transmit state machine alone.
            _ => {}
        }
        self.mac_update(node, now, sched);
    }

    /// The packet at the head of the line is done (acked, broadcast, or given up).
    fn finish_packet(&mut self, now: Instant, node: NodeId, outcome: TxOutcome) {
        let cw_min = self.cw_min;
        let batched = self.config.mac.batched_completion;
        let n = &mut self.nodes[node as usize];
        let cur = n.cur.take().expect("finishing without a packet");
        let report = TxReport {
            node,
            enqueued_at: cur.q.enqueued_at,
            first_tx_at: cur.first_tx_at,
            tx_done_at: Some(now),
            retries: cur.retries(),
            outcome,
        };
        if outcome == TxOutcome::RetryLimit {
            n.counters.drop_retry_limit += 1;
            self.out.push_back(Indication::Drop { node, payload: cur.q.payload, cause: DropCause::RetryLimit });
        }
        let n = &mut self.nodes[node as usize];
        n.cw = cw_min;
        n.state = TxState::Idle;
        n.await_rx_decision = false;
        match batched {
            None => self.out.push_back(Indication::TxReport(report)),
            Some(b) => {
                // TXEOL when the queue drained, TXDESC after a group of
                // frames: only the frame that raised the interrupt gets a
                // completion time (seed 001 appendix A.6).
                n.batch.push(TxReport { tx_done_at: None, ..report });
                if n.queue.is_empty() || n.batch.len() as u32 >= b.max_frames {
                    if let Some(last) = n.batch.last_mut() {
                        last.tx_done_at = Some(now);
                    }
                    self.out.extend(n.batch.drain(..).map(Indication::TxReport));
                }
            }
        }
        // Post-transmission backoff, then the next packet.
        self.draw_backoff(node);
        self.pull_next(node);
    }

    fn tx_failed(&mut self, now: Instant, node: NodeId, sched: &mut impl Scheduler) {
        let mac = &self.config.mac;
        let (short_limit, long_limit) = (mac.short_retry_limit, mac.long_retry_limit);
        let cw_max = self.cw_max;
        let n = &mut self.nodes[node as usize];
        n.await_rx_decision = false;
        let waiting_cts = n.state == TxState::WaitCts;
        if waiting_cts {
            n.counters.cts_timeouts += 1;
        } else {
            n.counters.ack_timeouts += 1;
        }
        let cur = n.cur.as_mut().expect("failing without a packet");
        // Frames sent without RTS and RTS frames count against the short
        // retry limit; DATA sent after a CTS against the long one. A counter
        // only counts retransmissions actually made, so that the report's
        // `retries` is attempts − 1 also for a packet given up.
        let (count, limit) = if waiting_cts || !cur.use_rts {
            (&mut cur.short_retries, short_limit)
        } else {
            (&mut cur.long_retries, long_limit)
        };
        let exhausted = *count >= limit;
        if !exhausted {
            *count += 1;
        }
        if exhausted {
            self.finish_packet(now, node, TxOutcome::RetryLimit);
        } else {
            n.counters.retransmissions += 1;
            n.cw = (2 * n.cw + 1).min(cw_max);
            n.state = TxState::Contend;
            self.draw_backoff(node);
        }
        self.mac_update(node, now, sched);
    }

    fn set_nav(&mut self, now: Instant, node: NodeId, nav: Duration, sched: &mut impl Scheduler) {
        let until = now + nav;
        let n = &mut self.nodes[node as usize];
        if until > n.nav_until {
            n.nav_until = until;
            n.nav_gen = n.nav_gen.wrapping_add(1);
            sched.schedule(until, RadioEvent::NavEnd { node, gen: n.nav_gen });
        }
    }

    fn mac_rx_ok(&mut self, now: Instant, node: NodeId, frame: FrameId, sched: &mut impl Scheduler) {
        let sifs = self.timing.sifs;
        let (kind, tx, rx, nav, seq, retry, rate_kbps) = {
            let f = self.frame(frame);
            (f.kind, f.tx, f.rx, f.nav, f.seq, f.retry, f.rate_kbps)
        };
        let n = &mut self.nodes[node as usize];
        n.use_eifs = false;
        let for_me = rx == Addr::Unicast(node);
        match kind {
            FrameKind::Data if for_me => {
                let dup = retry && n.last_seq_from.iter().any(|&(s, q)| s == tx && q == seq);
                match n.last_seq_from.iter_mut().find(|(s, _)| *s == tx) {
                    Some(e) => e.1 = seq,
                    None => n.last_seq_from.push((tx, seq)),
                }
                if dup {
                    n.counters.duplicates_dropped += 1;
                } else {
                    n.counters.delivered += 1;
                    let payload = self.frame(frame).payload.clone().expect("data frame has a payload");
                    self.out.push_back(Indication::Deliver { node, from: tx, payload });
                }
                let ctrl = control_rate_kbps(&self.basic_rates_kbps, rate_kbps);
                let n = &mut self.nodes[node as usize];
                n.response = Some(Response::Ack { to: tx, rate_kbps: ctrl });
                sched.schedule(now + sifs, RadioEvent::Respond { node });
            }
            FrameKind::Data if rx == Addr::Broadcast => {
                n.counters.delivered += 1;
                let payload = self.frame(frame).payload.clone().expect("data frame has a payload");
                self.out.push_back(Indication::Deliver { node, from: tx, payload });
            }
            FrameKind::Ack if for_me && n.state == TxState::WaitAck => {
                n.timeout_gen = n.timeout_gen.wrapping_add(1);
                n.counters.acked += 1;
                self.finish_packet(now, node, TxOutcome::Acked);
            }
            FrameKind::Rts if for_me => {
                // Answer an RTS only when the NAV is clear (802.11-2016 §10.3.2.7).
                if n.nav_until <= now && n.response.is_none() {
                    let ctrl = control_rate_kbps(&self.basic_rates_kbps, rate_kbps);
                    let cts_air = self.standard.frame_duration(phy::CTS_BYTES, ctrl);
                    let n = &mut self.nodes[node as usize];
                    n.response =
                        Some(Response::Cts { to: tx, nav: nav.saturating_sub(sifs + cts_air), rate_kbps: ctrl });
                    sched.schedule(now + sifs, RadioEvent::Respond { node });
                }
            }
            FrameKind::Cts if for_me && n.state == TxState::WaitCts => {
                n.timeout_gen = n.timeout_gen.wrapping_add(1);
                n.await_rx_decision = false;
                n.state = TxState::CtsReceived;
                n.response = Some(Response::DataAfterCts);
                sched.schedule(now + sifs, RadioEvent::Respond { node });
            }
            _ if !for_me => self.set_nav(now, node, nav, sched),
            _ => {}
        }
        if self.nodes[node as usize].await_rx_decision {
            // The frame that arrived around the timeout was not our answer.
            self.tx_failed(now, node, sched);
        }
    }

    fn mac_rx_error(&mut self, now: Instant, node: NodeId, frame: FrameId, sched: &mut impl Scheduler) {
        let for_me = self.frame(frame).rx == Addr::Unicast(node);
        let n = &mut self.nodes[node as usize];
        n.use_eifs = true;
        if for_me {
            n.counters.rx_collision_or_corruption += 1;
        }
        if n.await_rx_decision {
            self.tx_failed(now, node, sched);
        }
    }

    fn respond(&mut self, now: Instant, node: NodeId, sched: &mut impl Scheduler) {
        let Some(resp) = self.nodes[node as usize].response.take() else { return };
        if self.nodes[node as usize].tx_frame.is_some() {
            return;
        }
        match resp {
            Response::Ack { to, rate_kbps } => {
                self.nodes[node as usize].counters.acks_sent += 1;
                self.transmit(
                    now,
                    node,
                    FrameKind::Ack,
                    Addr::Unicast(to),
                    Duration::ZERO,
                    0,
                    false,
                    rate_kbps,
                    None,
                    sched,
                );
            }
            Response::Cts { to, nav, rate_kbps } => {
                self.nodes[node as usize].counters.cts_sent += 1;
                self.transmit(now, node, FrameKind::Cts, Addr::Unicast(to), nav, 0, false, rate_kbps, None, sched);
            }
            Response::DataAfterCts => {
                if self.nodes[node as usize].state == TxState::CtsReceived {
                    self.send_data(now, node, sched);
                }
            }
        }
        self.mac_update(node, now, sched);
    }
}
