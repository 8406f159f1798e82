//! Transport flows: a sans-IO sender engine at the flow's source, its
//! receiver at the destination, the data they move and what the simulator
//! observes of them.
//!
//! This module builds the engines from a [`TransportFlow`], generates the
//! application data, drives the engines in the [`meshbed_proto::engine`]
//! calling order (input or timeout, then transmit until nothing is left,
//! events, received bytes, next deadline), keeps each side's timer
//! generation, checks what the receiver hands up against the data and
//! decides when a flow has completed or failed. The simulator only carries
//! datagrams (it stamps and routes what [`Transport::on_input`] and
//! [`Transport::on_timeout`] send) and schedules the [`Timer`]s they return.

use crate::driver::RelayClass;
use crate::scenario::{TransportFlow, IP_UDP_HEADER_BYTES};
use crate::trace_kind::TraceKind;
use meshbed_core::{stream_rng, Duration, Instant, StreamId, StreamKind};
use meshbed_proto::atp::AtpConfig;
use meshbed_proto::connection::{connection_id, EngineConfig, ReceiverEngine, SenderEngine};
use meshbed_proto::engine::{Engine, EngineEvent, PathInfo, TraceSample};
use meshbed_proto::mtl::MtlConfig;
use meshbed_proto::stream::{ReadLimit, READ_BURST};
use meshbed_proto::tcp::TcpConfig;
use meshbed_proto::wire::HEADER_LEN;
use rand::RngCore;
use serde::{Deserialize, Serialize};

mod data;
pub(crate) use data::SEND_WINDOW_BYTES;
use data::{ByteStream, Source};

/// Which end of a transport flow.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    Sender = 0,
    Receiver = 1,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Sender => "sender",
            Side::Receiver => "receiver",
        }
    }
}

/// What the destination node saw of the sender's datagrams as they arrived:
/// the header fields the relays wrote on the way.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PathObservation {
    /// Sender datagrams that reached the destination node.
    pub datagrams: u64,
    /// Smallest and largest N_h they carried.
    pub hop_count_min: u32,
    pub hop_count_max: u32,
    /// ATP data packets among them (D_max statistics count only these).
    pub data_packets: u64,
    /// ATP data packets that arrived with D_max = 0.
    pub d_max_zero: u64,
    pub d_max_max_us: u32,
    pub d_max_mean_us: f64,
}

/// One engine trace sample, flattened for the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceRecord {
    pub t_s: f64,
    pub side: Side,
    /// What the sample measures ([`TraceKind`], its unit in the name).
    pub kind: TraceKind,
    pub value: f64,
}

impl TraceRecord {
    pub fn new(side: Side, sample: &TraceSample) -> Self {
        let us = |d: Duration| d.as_nanos() as f64 / 1e3;
        let (at, kind, value) = match *sample {
            TraceSample::DMax { at, d_max } => (at, TraceKind::DMaxUs, us(d_max)),
            TraceSample::DAvgSent { at, d_avg } => (at, TraceKind::DAvgSentUs, us(d_avg)),
            TraceSample::DAvgReceived { at, d_avg } => (at, TraceKind::DAvgReceivedUs, us(d_avg)),
            TraceSample::Ds { at, d_s } => (at, TraceKind::DSUs, us(d_s)),
            TraceSample::Cwnd { at, cwnd_segments } => (at, TraceKind::CwndSegments, cwnd_segments),
            TraceSample::Retransmit { at, seq, .. } => (at, TraceKind::RetransmitSeq, seq as f64),
            TraceSample::Rto { at, rto } => (at, TraceKind::RtoS, rto.as_secs_f64()),
            TraceSample::RttSample { at, rtt } => (at, TraceKind::RttS, rtt.as_secs_f64()),
            TraceSample::SlowStart { at, entered } => (at, TraceKind::SlowStart, f64::from(u8::from(entered))),
            TraceSample::Standby { at, entered } => (at, TraceKind::Standby, f64::from(u8::from(entered))),
            TraceSample::MtlRate { at, rate_pps } => (at, TraceKind::RatePps, rate_pps),
            TraceSample::Fhd { at, fhd } => (at, TraceKind::FhdS, fhd.as_secs_f64()),
            TraceSample::SackRanges { at, ranges } => (at, TraceKind::SackRanges, ranges as f64),
            // 1: probing after missed feedback, 2: after a route failure, 0: ended.
            TraceSample::Probing { at, entered, route_failure } => (
                at,
                TraceKind::Probing,
                if !entered {
                    0.0
                } else if route_failure {
                    2.0
                } else {
                    1.0
                },
            ),
        };
        TraceRecord { t_s: at.as_secs_f64(), side, kind, value }
    }
}

/// Wake-ups of one engine at one instant after which the flow fails: the
/// engine's deadline does not advance (an engine bug; the engine contract
/// says it cannot happen).
const MAX_WAKEUPS_AT_ONE_INSTANT: u32 = 10_000;
/// Buffer the engines write datagrams into: the largest MSDU minus IP + UDP.
const DATAGRAM_BUF_BYTES: usize = (crate::scenario::MAX_PACKET_BYTES - IP_UDP_HEADER_BYTES) as usize;

/// A timer the caller schedules: wake `side` at `at` (or now, if that has
/// passed) with generation `gen`; a wake-up whose generation has moved on
/// since is ignored by [`Transport::on_timeout`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Timer {
    pub side: Side,
    pub at: Instant,
    pub gen: u64,
}

/// Where the engines' datagrams go: called with the side's network-layer
/// sequence number and the datagram; an error (the relay could not stamp
/// it) fails the flow.
pub(crate) type Send<'a> = dyn FnMut(u64, Vec<u8>) -> Result<(), String> + 'a;

/// One transport flow's engines and bookkeeping.
pub(crate) struct Transport {
    pub bytes: u64,
    pub sender: SenderEngine,
    pub receiver: ReceiverEngine,
    /// Index into the simulator's relay classes.
    pub relay_class: usize,
    /// How long each relay holds this flow's packets before it stamps them
    /// and queues them (`[flows.atp] relay_forwarding_delay_s`; zero: at
    /// once).
    pub relay_forwarding_delay: Duration,
    /// How long each end holds this flow's packets that reach it before
    /// its engine takes them (`[flows.tcp] endpoint_delay_s`; zero: at
    /// once).
    pub endpoint_delay: Duration,
    /// Regenerates the data to check the receiver's bytes.
    verifier: ByteStream,
    /// A flow of more than [`SEND_WINDOW_BYTES`]: what its sender has not
    /// been given yet.
    source: Option<Source>,
    /// Bytes the receiver handed up, all equal to the data so far.
    pub bytes_delivered: u64,
    /// Set on the first byte that differs from the data.
    pub mismatch_at: Option<u64>,
    pub sender_finished_at: Option<Instant>,
    pub receiver_finished_at: Option<Instant>,
    /// Sender finished and every byte delivered and verified.
    pub completed_at: Option<Instant>,
    /// Why the flow stopped without completing.
    pub error: Option<String>,
    /// Nothing more is driven (completed or failed).
    pub done: bool,
    /// For a flow that runs for a duration: when it stops.
    pub stop_at: Option<Instant>,
    /// Per side: the deadline a timer event is scheduled for, and its
    /// generation (an event with an older generation is stale).
    pub timer_at: [Option<Instant>; 2],
    pub timer_gen: [u64; 2],
    /// Wake-ups at one instant in a row, a guard against an engine whose
    /// deadline does not advance.
    pub same_instant_wakeups: (Instant, u32),
    pub keep_trace: bool,
    pub trace: Vec<TraceRecord>,
    pub path: PathObservation,
    d_max_sum_us: u64,
    /// Datagrams that left each side (the network-layer sequence number).
    pub next_seq: [u64; 2],
    tx_buf: Vec<u8>,
    /// Per side: the route to the peer was reported failed and not yet
    /// re-established; and the notices delivered (ELFN).
    route_down: [bool; 2],
    pub route_failed_notices: u64,
    pub route_reestablished_notices: u64,
    /// Every notice delivered: when, to which side, and whether the route
    /// came back (`true`) or failed.
    pub route_log: Vec<(Instant, Side, bool)>,
    /// Per side: the path information last delivered (`None` before any,
    /// or after the route was lost), and how many deliveries in all (MTL's
    /// cross-layer input, seed 004 §III.B).
    pub path_info: [Option<PathInfo>; 2],
    pub path_info_updates: u64,
    /// `PeerUnresponsive` events of either side, and whether the side being
    /// driven raised one that routing has not heard of yet.
    pub peer_unresponsive_events: u64,
    peer_unresponsive_pending: bool,
    /// A slow reader at the destination ([`TransportFlow::reader`]): what
    /// it may read when, and when it next wants to read (more is waiting).
    reader: Option<ReadLimit>,
    read_wake: Option<Instant>,
    /// The slow reader wakes when this much may be read: one full packet.
    read_wake_bytes: u64,
}

/// The IP packet size of a datagram (IP and UDP headers added).
pub(crate) const fn datagram_packet_bytes(datagram_len: usize) -> u32 {
    IP_UDP_HEADER_BYTES + datagram_len as u32
}

impl Transport {
    /// Engines for flow `index` of a validated scenario, created at `start`.
    /// `relay_class` is filled in by the caller from [`Transport::relay_class_of`].
    /// `bytes` is the data the sender holds: the transfer size, or for a
    /// flow that runs for a duration more than it could send in that time.
    pub(crate) fn new(seed: u64, index: u32, spec: &TransportFlow, start: Instant, bytes: u64) -> Transport {
        // The connection id and then the data's key come from the flow's
        // own stream. The id's top four bits name the protocol, as a
        // meshbed sender's do on a real network
        // (`proto::connection::connection_id`), so that a capture names each
        // flow's protocol as Wireshark's dissector reads it
        // (contrib/wireshark/meshbed.lua).
        let mut rng = stream_rng(seed, StreamId::new(StreamKind::Transport, index as u64));
        let protocol = spec.protocol;
        let connection_id = connection_id(protocol, rng.next_u32());
        let data_key = rng.next_u64();
        let mut config = EngineConfig::new(protocol, |_| atp_config(spec), || tcp_config(spec));
        if let EngineConfig::Mtl(c) = &mut config {
            apply_mtl_overrides(c, spec);
        }
        let (sender, source) = if bytes <= SEND_WINDOW_BYTES {
            let mut data = vec![0u8; bytes as usize];
            ByteStream::new(data_key).fill(&mut data);
            (SenderEngine::with_data(&config, connection_id, data, start), None)
        } else {
            let sender = SenderEngine::streaming(&config, connection_id, SEND_WINDOW_BYTES as usize, start);
            (sender, Some(Source::new(ByteStream::new(data_key), bytes, Source::lead_for(&config))))
        };
        let verifier = ByteStream::new(data_key);
        let mut receiver = ReceiverEngine::new(&config, connection_id, start);
        // seed 002 §4.2.3: a slow reader, with a bounded receive buffer
        // (validation refuses one for a receiver without flow control).
        let reader = spec.reader.as_ref();
        let buffer =
            receiver.reader_receive_buffer().zip(reader).map(|(default, r)| r.receive_buffer_bytes.unwrap_or(default));
        let reader = reader.zip(buffer).map(|(r, buffer)| {
            let rate = r.rate_bps;
            receiver.set_receive_buffer(buffer);
            let at = |t_s: f64| Instant::ZERO + Duration::from_secs_f64(t_s);
            let steps: Vec<_> = r.steps.iter().map(|s| (at(s.at_s), s.rate_bps)).collect();
            ReadLimit::new(start, rate, &steps, READ_BURST)
        });
        Transport {
            bytes,
            sender,
            receiver,
            relay_class: 0,
            relay_forwarding_delay: spec
                .atp()
                .and_then(|o| o.relay_forwarding_delay_s)
                .or_else(|| spec.tcp().and_then(|o| o.relay_forwarding_delay_s))
                .map_or(Duration::ZERO, Duration::from_secs_f64),
            endpoint_delay: spec.tcp().and_then(|o| o.endpoint_delay_s).map_or(Duration::ZERO, Duration::from_secs_f64),
            verifier,
            source,
            bytes_delivered: 0,
            mismatch_at: None,
            sender_finished_at: None,
            receiver_finished_at: None,
            completed_at: None,
            stop_at: None,
            error: None,
            done: false,
            timer_at: [None; 2],
            timer_gen: [0; 2],
            same_instant_wakeups: (Instant::ZERO, 0),
            keep_trace: spec.trace,
            trace: Vec::new(),
            path: PathObservation::default(),
            d_max_sum_us: 0,
            next_seq: [0; 2],
            tx_buf: vec![0; DATAGRAM_BUF_BYTES],
            route_down: [false; 2],
            route_failed_notices: 0,
            route_reestablished_notices: 0,
            route_log: Vec::new(),
            path_info: [None; 2],
            path_info_updates: 0,
            peer_unresponsive_events: 0,
            peer_unresponsive_pending: false,
            reader,
            read_wake: None,
            read_wake_bytes: spec.payload_bytes().max(1),
        }
    }

    /// What routing at `side`'s node now knows of the path to the peer:
    /// delivered to the engine only when it differs from what it last got
    /// (a lost route is remembered as `None` and not delivered: the route
    /// notice tells of it). The engine's deadline is read again, as after
    /// any input, and a timer returned if it moved: a new rate takes effect
    /// at once. An engine that ignores path information (the default)
    /// keeps its deadline, so nothing is scheduled for it.
    pub(crate) fn path_info(&mut self, now: Instant, side: Side, info: Option<PathInfo>) -> Option<Timer> {
        let i = side as usize;
        if self.done || self.path_info[i] == info {
            return None;
        }
        self.path_info[i] = info;
        let info = info?;
        self.path_info_updates += 1;
        let before = self.engine(side).poll_timeout();
        self.engine(side).handle_path_info(now, info);
        if self.engine(side).poll_timeout() == before {
            return None;
        }
        self.rearm(side)
    }

    /// Whether the side just driven reported its peer unresponsive (the
    /// caller tells that side's routing; taken once).
    pub(crate) fn take_peer_unresponsive(&mut self) -> bool {
        std::mem::take(&mut self.peer_unresponsive_pending)
    }

    /// Routing at `side`'s node lost (`up = false`) or found again the route
    /// to the peer: the engine gets the notice (ELFN), once per change.
    pub(crate) fn route_notice(&mut self, now: Instant, side: Side, up: bool) {
        let i = side as usize;
        if self.done || self.route_down[i] != up {
            return;
        }
        self.route_down[i] = !up;
        self.route_log.push((now, side, up));
        let notice = if up {
            self.route_reestablished_notices += 1;
            meshbed_proto::RouteNotice::Reestablished
        } else {
            self.route_failed_notices += 1;
            meshbed_proto::RouteNotice::Failed
        };
        self.engine(side).handle_route_notice(now, notice);
    }

    /// The sender's first timer: its first `poll_transmit` (the SYN) at the
    /// flow's start.
    pub(crate) fn start(&mut self, start: Instant) -> Timer {
        let i = Side::Sender as usize;
        self.timer_at[i] = Some(start);
        self.timer_gen[i] = 1;
        Timer { side: Side::Sender, at: start, gen: 1 }
    }

    /// A timer event of `side` fired (generation `gen`).
    pub(crate) fn on_timeout(&mut self, now: Instant, side: Side, gen: u64, send: &mut Send) -> Option<Timer> {
        let i = side as usize;
        if self.done || gen != self.timer_gen[i] {
            return None;
        }
        self.timer_at[i] = None;
        if self.same_instant_wakeups.0 == now {
            self.same_instant_wakeups.1 += 1;
        } else {
            self.same_instant_wakeups = (now, 1);
        }
        if self.same_instant_wakeups.1 > MAX_WAKEUPS_AT_ONE_INSTANT {
            self.error.get_or_insert_with(|| {
                format!(
                    "{} woken {MAX_WAKEUPS_AT_ONE_INSTANT} times at {now} without its deadline advancing",
                    side.name()
                )
            });
            self.done = true;
            return None;
        }
        self.engine(side).handle_timeout(now);
        self.drive(now, side, send)
    }

    /// A datagram of this flow reached `side`'s node.
    pub(crate) fn on_input(&mut self, now: Instant, side: Side, datagram: &[u8], send: &mut Send) -> Option<Timer> {
        if self.done {
            return None;
        }
        if side == Side::Receiver {
            self.observe_at_receiver(datagram);
        }
        self.engine(side).handle_input(now, datagram);
        self.drive(now, side, send)
    }

    /// A flow that runs for a duration has reached its stop time: what the
    /// receiver handed up so far must be a verified prefix of the data; the
    /// flow is then complete and nothing more is driven.
    pub(crate) fn on_stop(&mut self, now: Instant) {
        if self.done {
            return;
        }
        self.take_delivered(now);
        if let Some(at) = self.mismatch_at {
            self.error.get_or_insert_with(|| format!("delivered byte {at} differs from the data sent"));
        } else if self.error.is_none() {
            self.completed_at = Some(now);
        }
        self.finish();
    }

    /// A streaming sender's window is topped up from the data stream, to
    /// its lead beyond what it has sent ([`data::REFILL_LEAD_BYTES`]), and
    /// the stream finished once all of it is written.
    fn refill(&mut self) {
        let Some(source) = &mut self.source else { return };
        let engine = self.sender.engine();
        while source.left > 0 {
            // New bytes go out in order: the first-sent count is how far
            // the sender got.
            let unsent = source.written.saturating_sub(engine.stats().bytes_sent);
            let wanted = source.lead.saturating_sub(unsent).min(source.left);
            let room = engine.write_room().min(wanted.min(usize::MAX as u64) as usize);
            if room == 0 {
                return;
            }
            let chunk = source.stream.next_chunk(room);
            let written = engine.write(chunk);
            debug_assert_eq!(written, chunk.len(), "write_room said it fits");
            source.left -= written as u64;
            source.written += written as u64;
        }
        engine.finish();
        self.source = None;
    }

    /// Nothing more is driven: both sides' pending timers are invalidated.
    fn finish(&mut self) {
        self.done = true;
        self.timer_gen[0] += 1;
        self.timer_gen[1] += 1;
        self.timer_at = [None; 2];
    }

    /// Steps 2–4 of the engine calling order (meshbed_proto::engine) for one
    /// side, after its input or timeout: transmit until nothing is left,
    /// collect events, hand up received bytes, decide whether the flow is
    /// over, re-arm the timer.
    fn drive(&mut self, now: Instant, side: Side, send: &mut Send) -> Option<Timer> {
        if side == Side::Sender {
            self.refill();
        }
        let mut buf = std::mem::take(&mut self.tx_buf);
        while let Some(tx) = self.engine(side).poll_transmit(now, &mut buf) {
            let seq = self.next_seq[side as usize];
            self.next_seq[side as usize] += 1;
            if let Err(e) = send(seq, buf[..tx.len].to_vec()) {
                self.error.get_or_insert(e);
            }
        }
        self.tx_buf = buf;

        while let Some(event) = self.engine(side).poll_event() {
            match event {
                EngineEvent::Finished => {
                    let at = match side {
                        Side::Sender => &mut self.sender_finished_at,
                        Side::Receiver => &mut self.receiver_finished_at,
                    };
                    at.get_or_insert(now);
                }
                EngineEvent::Failed(reason) => {
                    self.error.get_or_insert_with(|| format!("{} failed at {now}: {reason}", side.name()));
                }
                EngineEvent::Trace(sample) => {
                    if self.keep_trace {
                        self.trace.push(TraceRecord::new(side, &sample));
                    }
                }
                EngineEvent::PeerUnresponsive => {
                    self.peer_unresponsive_events += 1;
                    self.peer_unresponsive_pending = true;
                }
                EngineEvent::Connected => {}
            }
        }
        if side == Side::Receiver {
            self.take_delivered(now);
        }
        // A flow is complete only when the sender has every byte
        // acknowledged and the receiver handed up exactly the data sent; the
        // receiver's linger is not waited for.
        if let Some(at) = self.mismatch_at {
            self.error.get_or_insert_with(|| format!("delivered byte {at} differs from the data sent"));
        } else if self.bytes_delivered > self.bytes {
            self.error.get_or_insert_with(|| {
                format!("{} bytes delivered of a {}-byte transfer", self.bytes_delivered, self.bytes)
            });
        } else if self.sender_finished_at.is_some() && self.error.is_none() {
            if self.bytes_delivered == self.bytes {
                self.completed_at = Some(now);
            } else if self.reader.is_some() {
                // Every byte is at the receiver; a slow reader is still
                // reading it (its wake-ups drive the receiver).
            } else {
                self.error = Some(format!(
                    "sender finished at {now} but the receiver delivered {} of {} bytes",
                    self.bytes_delivered, self.bytes
                ));
            }
        }
        if self.completed_at.is_some() || self.error.is_some() {
            self.finish();
            return None;
        }
        self.rearm(side)
    }

    /// The timer to schedule for one side at its engine's next deadline,
    /// unless it is already scheduled there.
    pub(crate) fn rearm(&mut self, side: Side) -> Option<Timer> {
        let mut want = self.engine(side).poll_timeout();
        if side == Side::Receiver {
            // A slow reader wakes the receiver when it may read again (an
            // early wake-up is a no-op for the engine).
            want = want.into_iter().chain(self.read_wake).min();
        }
        let i = side as usize;
        if want == self.timer_at[i] {
            return None;
        }
        self.timer_gen[i] += 1;
        self.timer_at[i] = want;
        want.map(|at| Timer { side, at, gen: self.timer_gen[i] })
    }

    /// The stamping parameters of a flow: its ATP preset's, or default ATP's
    /// for TCP (a relay only increments N_h on TCP datagrams, so the choice
    /// does not matter beyond sharing the node's averages).
    pub(crate) fn relay_class_of(spec: &TransportFlow) -> RelayClass {
        let cfg = if spec.protocol.is_atp() { atp_config(spec) } else { AtpConfig::default() };
        RelayClass { config: cfg.relay_config(), packet_bytes: spec.packet_bytes }
    }

    pub(crate) fn engine(&mut self, side: Side) -> &mut dyn Engine {
        match side {
            Side::Sender => self.sender.engine_mut(),
            Side::Receiver => self.receiver.engine_mut(),
        }
    }

    pub(crate) fn sender_stats(&self) -> &meshbed_proto::engine::Stats {
        self.sender.engine_ref().stats()
    }
    pub(crate) fn receiver_stats(&self) -> &meshbed_proto::engine::Stats {
        self.receiver.engine_ref().stats()
    }

    /// What the sender's engine did that only its protocol has: TCP's slow
    /// starts, timeouts and RTOs (seed 002 §2), ELFN standbys, ATP's probes
    /// after route failures.
    pub(crate) fn sender_detail(&self, now: Instant) -> crate::report::SenderDetail {
        use meshbed_proto::connection::SenderEngine;
        match &self.sender {
            SenderEngine::Atp(a) => {
                crate::report::SenderDetail { route_failure_probes: Some(a.route_failure_probes()), tcp: None }
            }
            SenderEngine::Mtl(_) => crate::report::SenderDetail { route_failure_probes: None, tcp: None },
            SenderEngine::Tcp(_) => crate::report::SenderDetail {
                route_failure_probes: None,
                tcp: self.sender.tcp_stats(now).map(|t| crate::report::TcpDetail {
                    slow_start_entries: t.slow_start_entries,
                    slow_start_time_s: t.slow_start_time.as_secs_f64(),
                    timeouts: t.timeouts,
                    rtt_samples: t.rtt_samples,
                    max_rto_s: t.max_rto.as_secs_f64(),
                    elfn_standbys: t.elfn_standbys,
                    elfn_standby_time_s: t.elfn_standby_time.as_secs_f64(),
                    elfn_probes: t.elfn_probes,
                    rack_lost_segments: t.rack_lost_segments,
                    tlp_probes: t.tlp_probes,
                    tlp_repaired_losses: t.tlp_repaired_losses,
                }),
            },
        }
    }

    /// Takes what the receiver handed up and checks it against the data.
    /// Hands the receiver's in-order bytes to the verifier; with tracing on,
    /// records the delivery (`delivered_bytes`) for goodput-over-time plots.
    pub(crate) fn take_delivered(&mut self, now: Instant) {
        let got = match &mut self.reader {
            None => self.receiver.take_delivered(),
            Some(reader) => {
                let (got, more) = reader.read(now, self.receiver.engine());
                self.read_wake = if more { reader.when_allowed(self.read_wake_bytes) } else { None };
                got
            }
        };
        if got.is_empty() {
            return;
        }
        if self.keep_trace {
            self.trace.push(TraceRecord {
                t_s: now.as_secs_f64(),
                side: Side::Receiver,
                kind: TraceKind::DeliveredBytes,
                value: got.len() as f64,
            });
        }
        if self.mismatch_at.is_none() {
            if let Some(k) = self.verifier.first_mismatch(&got) {
                self.mismatch_at = Some(self.bytes_delivered + k as u64);
            }
        }
        self.bytes_delivered += got.len() as u64;
    }

    /// Whether every byte handed up so far equals the data.
    pub(crate) fn verified(&self) -> bool {
        self.mismatch_at.is_none() && self.bytes_delivered <= self.bytes
    }

    /// Records the header of a sender datagram arriving at the destination.
    pub(crate) fn observe_at_receiver(&mut self, datagram: &[u8]) {
        use meshbed_proto::wire::{Control, Packet, ProtocolId};
        let Ok(p) = Packet::new_checked(datagram) else { return };
        let n_h = u32::from(p.hop_count());
        let o = &mut self.path;
        if o.datagrams == 0 {
            o.hop_count_min = n_h;
            o.hop_count_max = n_h;
        }
        o.datagrams += 1;
        o.hop_count_min = o.hop_count_min.min(n_h);
        o.hop_count_max = o.hop_count_max.max(n_h);
        let atp_data = p.protocol_raw() == ProtocolId::Atp as u8
            && !p.control().contains(Control::SACK_OPT)
            && datagram.len() > HEADER_LEN + p.sack_len();
        if atp_data {
            let d = p.d_max_us();
            o.data_packets += 1;
            o.d_max_zero += u64::from(d == 0);
            o.d_max_max_us = o.d_max_max_us.max(d);
            self.d_max_sum_us += u64::from(d);
            o.d_max_mean_us = self.d_max_sum_us as f64 / o.data_packets as f64;
        }
    }
}

/// The ATP configuration of a flow: the preset, the flow's segment size,
/// its overrides, and its trace flag.
fn atp_config(spec: &TransportFlow) -> AtpConfig {
    let mut cfg = AtpConfig::for_protocol(spec.protocol).expect("an ATP protocol");
    cfg.max_payload = (spec.packet_bytes - IP_UDP_HEADER_BYTES) as usize - HEADER_LEN;
    cfg.trace = spec.trace;
    if let Some(o) = spec.atp() {
        if let Some(e) = o.epoch_s {
            cfg.epoch = Duration::from_secs_f64(e);
        }
        if let Some(k) = o.kappa {
            cfg.kappa = k;
        }
        if let Some(p) = o.phi {
            cfg.phi = p;
        }
        if let Some(a) = o.alpha {
            cfg.alpha = a;
        }
        if let Some(b) = o.beta {
            cfg.beta = b;
        }
        if let Some(e) = o.eta {
            cfg.eta = e;
        }
        if let Some(t) = o.idle_timeout_s {
            cfg.idle_timeout = Duration::from_secs_f64(t);
            cfg.linger = cfg.idle_timeout;
        }
        if let Some(r) = o.route_failure {
            use crate::scenario::RouteFailure;
            use meshbed_proto::atp::RouteFailureReaction;
            cfg.route_failure = match r {
                RouteFailure::Probe => RouteFailureReaction::Probe,
                RouteFailure::ProbeWhileSending => RouteFailureReaction::ProbeWhileSending,
                RouteFailure::Ignore => RouteFailureReaction::Ignore,
            };
        }
        if let Some(t) = o.route_outage_timeout_s {
            cfg.route_outage_timeout = Duration::from_secs_f64(t);
        }
        if let Some(t) = o.delay_read_interval_s {
            cfg.relay_delay_read_interval = Duration::from_secs_f64(t);
        }
        if let Some(f) = o.sack_more_fraction {
            cfg.sack_more_fraction = f;
        }
        if let Some(f) = o.missed_feedback_decrease {
            cfg.missed_feedback_decrease = f;
        }
    }
    cfg
}

/// `[flows.mtl]` on the MTL configuration `EngineConfig::new` made from
/// the flow's segment size.
fn apply_mtl_overrides(cfg: &mut MtlConfig, spec: &TransportFlow) {
    let Some(o) = spec.mtl() else { return };
    if let Some(a) = o.alpha {
        cfg.alpha = a;
    }
    if let Some(b) = o.send_buffer_bytes {
        cfg.send_buffer_bytes = b;
    }
    if let Some(t) = o.idle_timeout_s {
        *cfg = cfg.clone().with_idle_timeout(Duration::from_secs_f64(t));
    }
}

fn tcp_config(spec: &TransportFlow) -> TcpConfig {
    let mut cfg = TcpConfig {
        mss_bytes: (spec.packet_bytes - IP_UDP_HEADER_BYTES) as usize - HEADER_LEN,
        ..TcpConfig::default()
    };
    if let Some(o) = spec.tcp() {
        if let Some(w) = o.initial_cwnd_segments {
            cfg.initial_cwnd_segments = w;
        }
        if let Some(w) = o.max_cwnd_segments {
            cfg.max_cwnd_segments = w;
            // The default ssthresh is "the largest window" (RFC 5681 §3.1).
            cfg.initial_ssthresh_segments = w;
        }
        if let Some(r) = o.min_rto_s {
            cfg.min_rto = Duration::from_secs_f64(r);
        }
        if let Some(d) = o.delayed_acks {
            cfg.delayed_acks = d;
        }
        if let Some(t) = o.delayed_ack_timeout_s {
            cfg.delayed_ack_timeout = Duration::from_secs_f64(t);
        }
        if let Some(t) = o.idle_timeout_s {
            cfg.idle_timeout = Duration::from_secs_f64(t);
        }
        if let Some(v) = o.pacing_v {
            cfg.pacing_v = v;
        }
        if let Some(h) = o.hystart {
            cfg.hystart = h;
        }
        if let Some(r) = o.rack_tlp {
            cfg.rack_tlp = r;
        }
        if let Some(p) = o.prr {
            cfg.prr = p;
        }
    }
    cfg
}

#[cfg(test)]
mod tests;
