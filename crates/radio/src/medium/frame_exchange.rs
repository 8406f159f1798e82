//! The frame exchange of one node (ns-3 `FrameExchangeManager` with the
//! queue of `Txop`): the drop-tail queue, the packet at the head of the line,
//! RTS/CTS/DATA/ACK with their timeouts, the retry limits, and the
//! [`TxReport`]/[`Indication::Drop`] that end a packet's life in the MAC.
//!
//! A [`FrameExchange`] owns that state. The [`Medium`] tells it when its
//! node gains access, when its frames end, when frames arrive for it and when
//! a timeout fires; it answers with frames to send, responses to schedule SIFS
//! later, and indications for the layer above.

use super::frame::{Frame, FrameKind};
use super::{
    Addr, DropCause, FrameId, Indication, Medium, NodeId, Payload, RadioEvent, RadioTimer, Scheduler, TxOutcome,
    TxReport,
};
use crate::phy::{self, control_rate_kbps};
use meshbed_core::{Duration, Instant};
use std::collections::VecDeque;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum TxState {
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

/// What the node sends SIFS after a frame that needs an answer.
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

/// The packet at the head of the line.
struct Current<P> {
    q: Queued<P>,
    first_tx_at: Option<Instant>,
    seq: u16,
    short_retries: u32,
    long_retries: u32,
    use_rts: bool,
    /// The DATA rate of the current attempt (RTS, CTS and ACK follow it).
    rate_kbps: u32,
    /// DATA attempts that got no ACK (a missing CTS is not one).
    data_failures: u32,
    /// The rate control has been asked for this frame's first attempt.
    rate_started: bool,
}

impl<P> Current<P> {
    fn retries(&self) -> u32 {
        self.short_retries + self.long_retries
    }
}

/// In this order: what every arrival's carrier-sense update reads first.
#[repr(C)]
pub(super) struct FrameExchange<P> {
    pub state: TxState,
    /// The ACK/CTS timeout fired during a reception: decide at its end.
    pub await_rx_decision: bool,
    pub timeout_gen: u32,
    response: Option<Response>,
    queue: VecDeque<Queued<P>>,
    cur: Option<Current<P>>,
    next_seq: u16,
    /// Reports held back under batched completion reporting.
    batch: Vec<TxReport>,
}

impl<P: Payload> FrameExchange<P> {
    pub fn new() -> Self {
        FrameExchange {
            queue: VecDeque::new(),
            cur: None,
            state: TxState::Idle,
            timeout_gen: 0,
            await_rx_decision: false,
            response: None,
            next_seq: 0,
            batch: Vec::new(),
        }
    }

    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    pub fn has_current(&self) -> bool {
        self.cur.is_some()
    }

    pub fn push(&mut self, dest: Addr, payload: P, now: Instant) {
        let queued = Queued { dest, payload, enqueued_at: now };
        if queued.payload.priority() {
            // Behind the priority packets already waiting, ahead of the rest.
            let at = self.queue.iter().position(|q| !q.payload.priority()).unwrap_or(self.queue.len());
            self.queue.insert(at, queued);
        } else {
            self.queue.push_back(queued);
        }
    }

    /// Whether the exchange holds the medium for itself: a response is
    /// due, or an answer is awaited.
    pub fn holds_medium(&self) -> bool {
        self.response.is_some() || matches!(self.state, TxState::WaitAck | TxState::WaitCts | TxState::CtsReceived)
    }

    /// Takes the next packet off the queue if none is at the head of the
    /// line. Returns whether one was taken.
    fn pull_next(&mut self, rts_threshold_bytes: Option<u32>) -> bool {
        if self.cur.is_some() {
            return false;
        }
        if let Some(q) = self.queue.pop_front() {
            let seq = self.next_seq;
            self.next_seq = (self.next_seq + 1) & 0x0fff;
            let mpdu = q.payload.msdu_bytes() + phy::DATA_OVERHEAD_BYTES;
            let use_rts = matches!(q.dest, Addr::Unicast(_)) && rts_threshold_bytes.is_some_and(|t| mpdu > t);
            self.cur = Some(Current {
                q,
                first_tx_at: None,
                seq,
                short_retries: 0,
                long_retries: 0,
                use_rts,
                rate_kbps: 0,
                data_failures: 0,
                rate_started: false,
            });
            self.state = TxState::Contend;
            true
        } else {
            self.state = TxState::Idle;
            false
        }
    }

    /// The DATA frame of the packet at the head of the line.
    fn data_frame(&self, node: NodeId, rate_kbps: u32, nav_if_unicast: Duration) -> Frame<P> {
        let cur = self.cur.as_ref().expect("sending without a packet");
        let rx = cur.q.dest;
        let nav = if rx == Addr::Broadcast { Duration::ZERO } else { nav_if_unicast };
        let payload = Some(cur.q.payload.clone());
        Frame { kind: FrameKind::Data, tx: node, rx, nav, seq: cur.seq, retry: cur.retries() > 0, rate_kbps, payload }
    }
}

impl<P: Payload> Medium<P> {
    /// Takes `node`'s next packet off its queue and tells the layer above.
    pub(super) fn pull_next(&mut self, node: NodeId) {
        let rts_threshold_bytes = self.config.mac.rts_threshold_bytes;
        if self.nodes[node as usize].fx.pull_next(rts_threshold_bytes) {
            self.out.push_back(Indication::Dequeued { node });
        }
    }

    /// The DATA rate of `node`'s next attempt, kept with the packet so that
    /// the RTS's NAV, the DATA frame and the ACK all follow it: the rate
    /// control's choice for a unicast frame, the node's rate otherwise.
    fn choose_attempt_rate(&mut self, now: Instant, node: NodeId) -> u32 {
        let fixed_kbps = self.links.data_rate_kbps(node);
        let n = &mut self.nodes[node as usize];
        let cur = n.fx.cur.as_mut().expect("contending without a packet");
        cur.rate_kbps = match (&mut n.rates, cur.q.dest) {
            (Some(rates), Addr::Unicast(rx)) => {
                let first = !std::mem::replace(&mut cur.rate_started, true);
                rates.attempt_rate_kbps(now, rx, cur.data_failures, first)
            }
            _ => fixed_kbps,
        };
        cur.rate_kbps
    }

    /// `node` won the channel with a packet to send: RTS or DATA.
    pub(super) fn start_attempt(&mut self, now: Instant, node: NodeId, sched: &mut impl Scheduler) {
        let sifs = self.timing.sifs;
        let data_rate = self.choose_attempt_rate(now, node);
        let ctrl_rate = control_rate_kbps(&self.basic_rates_kbps, data_rate);
        let ack_air = self.standard.frame_duration(phy::ACK_BYTES, ctrl_rate);
        let n = &mut self.nodes[node as usize];
        let cur = n.fx.cur.as_mut().expect("contending without a packet");
        cur.first_tx_at.get_or_insert(now);
        if cur.use_rts {
            let data_bytes = cur.q.payload.msdu_bytes() + phy::DATA_OVERHEAD_BYTES;
            let cts_air = self.standard.frame_duration(phy::CTS_BYTES, ctrl_rate);
            let data_air = self.standard.frame_duration(data_bytes, data_rate);
            let nav = sifs * 3 + cts_air + data_air + ack_air;
            let rts = Frame {
                kind: FrameKind::Rts,
                tx: node,
                rx: cur.q.dest,
                nav,
                seq: cur.seq,
                retry: cur.retries() > 0,
                rate_kbps: ctrl_rate,
                payload: None,
            };
            n.fx.state = TxState::TxRts;
            n.counters.rts_sent += 1;
            self.transmit(now, rts, sched);
        } else {
            self.send_data(now, node, sched);
        }
    }

    fn send_data(&mut self, now: Instant, node: NodeId, sched: &mut impl Scheduler) {
        let sifs = self.timing.sifs;
        let data_rate = self.nodes[node as usize].fx.cur.as_ref().expect("sending without a packet").rate_kbps;
        let ctrl_rate = control_rate_kbps(&self.basic_rates_kbps, data_rate);
        let ack_air = self.standard.frame_duration(phy::ACK_BYTES, ctrl_rate);
        let n = &mut self.nodes[node as usize];
        let data = n.fx.data_frame(node, data_rate, sifs + ack_air);
        n.fx.state = TxState::TxData;
        n.counters.data_tx_attempts += 1;
        self.transmit(now, data, sched);
    }

    /// `node`'s frame of kind `kind` to `rx` has left the air.
    pub(super) fn exchange_tx_end(
        &mut self,
        now: Instant,
        node: NodeId,
        kind: FrameKind,
        rx: Addr,
        sched: &mut impl Scheduler,
    ) {
        let timeout_at = now + self.ack_timeout;
        let n = &mut self.nodes[node as usize];
        match (kind, n.fx.state) {
            (FrameKind::Data, TxState::TxData) if rx == Addr::Broadcast => {
                n.counters.broadcasts_sent += 1;
                self.finish_packet(now, node, TxOutcome::Broadcast);
            }
            (FrameKind::Data, TxState::TxData) => {
                n.fx.state = TxState::WaitAck;
                n.fx.timeout_gen = n.fx.timeout_gen.wrapping_add(1);
                sched.set_timer(timeout_at, RadioEvent::Timeout { node, gen: n.fx.timeout_gen });
            }
            (FrameKind::Rts, TxState::TxRts) => {
                n.fx.state = TxState::WaitCts;
                n.fx.timeout_gen = n.fx.timeout_gen.wrapping_add(1);
                sched.set_timer(timeout_at, RadioEvent::Timeout { node, gen: n.fx.timeout_gen });
            }
            // ACK and CTS responses leave the transmit state machine alone.
            _ => {}
        }
    }

    /// The packet at the head of the line is done (acked, broadcast, or given up).
    fn finish_packet(&mut self, now: Instant, node: NodeId, outcome: TxOutcome) {
        let batched = self.config.mac.batched_completion;
        let n = &mut self.nodes[node as usize];
        let cur = n.fx.cur.take().expect("finishing without a packet");
        if let (Some(rates), Addr::Unicast(rx), true) = (&mut n.rates, cur.q.dest, cur.rate_started) {
            rates.end_frame(rx, cur.data_failures);
        }
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
        n.access.reset_cw(&self.access_params);
        let fx = &mut n.fx;
        fx.state = TxState::Idle;
        fx.await_rx_decision = false;
        match batched {
            None => self.out.push_back(Indication::TxReport(report)),
            Some(b) => {
                // TXEOL when the queue drained, TXDESC after a group of
                // frames: only the frame that raised the interrupt gets a
                // completion time (seed 001 appendix A.6).
                fx.batch.push(TxReport { tx_done_at: None, ..report });
                if fx.queue.is_empty() || fx.batch.len() as u32 >= b.max_frames {
                    if let Some(last) = fx.batch.last_mut() {
                        last.tx_done_at = Some(now);
                    }
                    self.out.extend(fx.batch.drain(..).map(Indication::TxReport));
                }
            }
        }
        // Post-transmission backoff, then the next packet.
        n.access.draw_backoff();
        self.pull_next(node);
    }

    /// The awaited ACK or CTS did not come: retry or give up.
    pub(super) fn tx_failed(&mut self, now: Instant, node: NodeId, sched: &mut impl Scheduler) {
        let mac = &self.config.mac;
        let (short_limit, long_limit) = (mac.short_retry_limit, mac.long_retry_limit);
        let n = &mut self.nodes[node as usize];
        n.fx.await_rx_decision = false;
        let waiting_cts = n.fx.state == TxState::WaitCts;
        if waiting_cts {
            // Not a verdict on the data rate (see crate::rate_control).
            n.counters.cts_timeouts += 1;
        } else {
            n.counters.ack_timeouts += 1;
            n.data_outcome(false);
        }
        let cur = n.fx.cur.as_mut().expect("failing without a packet");
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
            n.access.grow_cw(&self.access_params);
            n.fx.state = TxState::Contend;
            n.access.draw_backoff();
        }
        self.mac_update(node, now, sched);
    }

    /// `node` received `frame` correctly.
    pub(super) fn mac_rx_ok(
        &mut self,
        now: Instant,
        node: NodeId,
        frame: FrameId,
        power_mw: f64,
        sched: &mut impl Scheduler,
    ) {
        let sifs = self.timing.sifs;
        let f = self.frames.get(frame);
        let (kind, tx, rx, nav, seq, retry, rate_kbps) = (f.kind, f.tx, f.rx, f.nav, f.seq, f.retry, f.rate_kbps);
        let n = &mut self.nodes[node as usize];
        n.access.set_eifs(false);
        let for_me = rx == Addr::Unicast(node);
        match kind {
            FrameKind::Data if for_me => {
                if n.dups.is_duplicate(tx, seq, retry) {
                    n.counters.duplicates_dropped += 1;
                } else {
                    n.counters.delivered += 1;
                    let payload = self.frames.get(frame).payload.clone().expect("data frame has a payload");
                    self.out.push_back(Indication::Deliver { node, from: tx, payload, rx_power_mw: power_mw });
                }
                let ctrl = control_rate_kbps(&self.basic_rates_kbps, rate_kbps);
                n.fx.response = Some(Response::Ack { to: tx, rate_kbps: ctrl });
                sched.schedule(now + sifs, RadioEvent::Respond { node });
            }
            FrameKind::Data if rx == Addr::Broadcast => {
                n.counters.delivered += 1;
                let payload = self.frames.get(frame).payload.clone().expect("data frame has a payload");
                self.out.push_back(Indication::Deliver { node, from: tx, payload, rx_power_mw: power_mw });
            }
            FrameKind::Ack if for_me && n.fx.state == TxState::WaitAck => {
                n.fx.timeout_gen = n.fx.timeout_gen.wrapping_add(1);
                sched.cancel_timer(node, RadioTimer::Timeout);
                n.counters.acked += 1;
                n.data_outcome(true);
                self.finish_packet(now, node, TxOutcome::Acked);
            }
            // Answer an RTS only when the NAV is clear (802.11-2016 §10.3.2.7);
            // otherwise stay silent (the arms below do not match a frame for us).
            FrameKind::Rts if for_me && !n.access.nav_busy(now) && n.fx.response.is_none() => {
                let ctrl = control_rate_kbps(&self.basic_rates_kbps, rate_kbps);
                let cts_air = self.standard.frame_duration(phy::CTS_BYTES, ctrl);
                n.fx.response =
                    Some(Response::Cts { to: tx, nav: nav.saturating_sub(sifs + cts_air), rate_kbps: ctrl });
                sched.schedule(now + sifs, RadioEvent::Respond { node });
            }
            FrameKind::Cts if for_me && n.fx.state == TxState::WaitCts => {
                let fx = &mut n.fx;
                fx.timeout_gen = fx.timeout_gen.wrapping_add(1);
                sched.cancel_timer(node, RadioTimer::Timeout);
                fx.await_rx_decision = false;
                fx.state = TxState::CtsReceived;
                fx.response = Some(Response::DataAfterCts);
                sched.schedule(now + sifs, RadioEvent::Respond { node });
            }
            _ if !for_me => n.access.set_nav(node, now, nav, sched),
            _ => {}
        }
        if self.nodes[node as usize].fx.await_rx_decision {
            // The frame that arrived around the timeout was not our answer.
            self.tx_failed(now, node, sched);
        }
    }

    /// `node`'s PHY followed a frame (addressed to it if `for_me`) but
    /// could not decode it.
    pub(super) fn mac_rx_error(&mut self, now: Instant, node: NodeId, for_me: bool, sched: &mut impl Scheduler) {
        let n = &mut self.nodes[node as usize];
        n.access.set_eifs(true);
        if for_me {
            n.counters.rx_collision_or_corruption += 1;
        }
        if n.fx.await_rx_decision {
            self.tx_failed(now, node, sched);
        }
    }

    /// SIFS after a frame that needed an answer: send it.
    pub(super) fn respond(&mut self, now: Instant, node: NodeId, sched: &mut impl Scheduler) {
        let n = &mut self.nodes[node as usize];
        let Some(resp) = n.fx.response.take() else { return };
        if n.tx_frame.is_some() {
            return;
        }
        match resp {
            Response::Ack { to, rate_kbps } => {
                n.counters.acks_sent += 1;
                let ack = Frame::control(FrameKind::Ack, node, to, Duration::ZERO, rate_kbps);
                self.transmit(now, ack, sched);
            }
            Response::Cts { to, nav, rate_kbps } => {
                n.counters.cts_sent += 1;
                self.transmit(now, Frame::control(FrameKind::Cts, node, to, nav, rate_kbps), sched);
            }
            Response::DataAfterCts => {
                if n.fx.state == TxState::CtsReceived {
                    self.send_data(now, node, sched);
                }
            }
        }
        self.mac_update(node, now, sched);
    }
}

impl<P: Payload> super::Node<P> {
    /// The DATA attempt of the packet at the head of the line was
    /// acknowledged (`success`) or its ACK timed out: tell the rate control.
    fn data_outcome(&mut self, success: bool) {
        let Some(cur) = self.fx.cur.as_mut() else { return };
        if let (Some(rates), Addr::Unicast(rx)) = (&mut self.rates, cur.q.dest) {
            rates.report(rx, cur.rate_kbps, success);
        }
        cur.data_failures += u32::from(!success);
    }
}
