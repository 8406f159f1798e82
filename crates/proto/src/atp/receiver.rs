//! The ATP receiver (seed 002 §4.2; seed 001 §2.2 and §3.3; seed 000
//! §V.A.3 for adaptive feedback): D_avg, epoch feedback with SACK blocks and
//! the application's read rate, as the `ReceiveControl` of the shared
//! [`Receiver`] skeleton.

use super::config::AtpConfig;
use crate::engine::{Engine, RouteNotice, TraceSample, Transmit};
use crate::engine_core::Phase;
use crate::receiver_core::{emit_ack, FinAck, Reassembly, ReceiveControl, Receiver, ReceiverCore, ReceiverTimer};
use crate::relay::duration_to_us;
use crate::reorder::Offer;
use crate::timer::TimerId;
use crate::wire::{self, Control, FeedbackEcho, ProtocolId, Repr};
use meshbed_core::{Duration, Instant};

/// Timers, indexing the receiver's [`TimerTable`](crate::timer::TimerTable).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
    /// Nothing heard from the sender for `idle_timeout`. Checked first, so
    /// that a receiver that gives up does nothing else at that instant.
    Idle,
    /// A finished receiver closes after `linger` without hearing the sender.
    Linger,
    /// Periodic feedback every E (seed 002 §4.2).
    Epoch,
    /// No data for E/2: SACK-MORE (seed 001 §3.3).
    SackMore,
}

impl TimerId for Timer {
    const ALL: &'static [Timer] = &[Timer::Idle, Timer::Linger, Timer::Epoch, Timer::SackMore];
}

impl ReceiverTimer for Timer {
    const IDLE: Timer = Timer::Idle;
    const LINGER: Option<Timer> = Some(Timer::Linger);
}

/// The share of the receive buffer (one in this many) that unread bytes must
/// fill before the application's read rate limits the sender.
pub const FLOW_CONTROL_SHARE: u64 = 4;

/// R_app is averaged over at least this long even when the epoch is shorter
/// (aggressive ATP's 40 ms): a reader takes data in pieces, and at
/// 200 kbit/s one 1436-byte piece every 57 ms makes 40 ms samples swing
/// between 0 and twice the rate.
pub const MIN_READ_WINDOW: Duration = Duration::from_millis(500);

/// The application's read rate R_app (seed 002 §4.2.3), measured by the
/// receiver from what the application takes, in the engine's own time: the
/// bytes read between two feedback instants at least one epoch E (and
/// [`MIN_READ_WINDOW`]) apart.
///
/// An application that reads whatever is there reads at the arrival rate,
/// which says nothing of how fast it could read; feeding that back would pin
/// the sender to its current rate. So R_app limits the feedback only when
/// the application was the bottleneck at the window's end: its last read
/// in the window left bytes behind (or it did not read at all) and the
/// bytes waiting fill at least 1/[`FLOW_CONTROL_SHARE`] of the receive
/// buffer. A reader that keeps up empties the buffer at each read, and one
/// that lags a little leaves less than that share: the feedback is D_avg,
/// as without flow control. (The last read, not any read: a reader that
/// emptied the buffer while data trickled in at the start and fell behind
/// once the sender's quick-start arrived is behind.)
/// With the default buffer (`max_reorder_bytes`, 256 MiB) only a reader
/// hundreds of megabytes behind limits the sender: flow control protects a
/// buffer, and a driver that bounds one sets it
/// ([`AtpReceiver::set_receive_buffer`]).
#[derive(Debug)]
struct ReadMeter {
    window_start: Instant,
    read_at_window_start: u64,
    /// Bytes the application took, in all.
    read_total: u64,
    /// The application's last read in this window left the buffer empty.
    caught_up: bool,
    /// R_app in bytes per second over the last window, if the application
    /// was the bottleneck in it.
    limit_bytes_per_s: Option<f64>,
}

impl ReadMeter {
    fn new(now: Instant) -> Self {
        ReadMeter {
            window_start: now,
            read_at_window_start: 0,
            read_total: 0,
            caught_up: false,
            limit_bytes_per_s: None,
        }
    }

    /// The application took `n` bytes and left `unread`.
    fn on_read(&mut self, n: usize, unread: usize) {
        self.read_total += n as u64;
        self.caught_up = unread == 0;
    }

    /// At a feedback instant: once the window is at least `epoch` (and
    /// [`MIN_READ_WINDOW`]) long,
    /// measures R_app over it, decides whether it limits the next feedbacks,
    /// and opens the next window.
    fn close_window(&mut self, now: Instant, epoch: Duration, unread: usize, receive_buffer_bytes: u64) {
        let elapsed = now.saturating_since(self.window_start);
        if elapsed < epoch.max(MIN_READ_WINDOW) {
            return;
        }
        let read = self.read_total - self.read_at_window_start;
        let filling = unread as u64 >= (receive_buffer_bytes / FLOW_CONTROL_SHARE).max(1);
        let bottleneck = !self.caught_up && filling;
        self.limit_bytes_per_s = bottleneck.then(|| read as f64 / elapsed.as_secs_f64());
        self.window_start = now;
        self.read_at_window_start = self.read_total;
        // Only a read that empties the buffer shows the application keeps
        // up; an empty buffer at the start says nothing of the reader, and
        // no read in a whole window while bytes wait is a stalled one.
        self.caught_up = false;
    }
}

/// The receiving side of one ATP connection.
///
/// Create it with [`AtpReceiver::new`] for a known connection id (it then
/// accepts that connection's SYN) or with [`AtpReceiver::accept`] from the
/// first datagram of an unknown connection. The driver calls the
/// [`Engine`] methods in the order given in [`crate::engine`]; the
/// application takes in-order bytes with [`AtpReceiver::read`] or
/// [`AtpReceiver::take_delivered`]. The receiver reports `Connected` on the
/// SYN and `Finished` once the FIN was seen and every byte before it
/// delivered; it then lingers for `config.linger` after the last packet
/// from the sender, answering repeated FINs, before [`Engine::is_closed`]
/// turns true.
pub type AtpReceiver = Receiver<AtpReceiveControl>;

/// ATP's part of [`AtpReceiver`]: D_avg, the feedback schedule and its
/// triggers, and the application's read rate.
#[derive(Debug)]
pub struct AtpReceiveControl {
    config: AtpConfig,
    /// D_avg in nanoseconds; `None` before the first packet.
    d_avg_ns: Option<f64>,
    /// End of the highest data seen (drop detection).
    highest_end: u64,
    /// Largest payload seen: the packet size for counting drops and for the
    /// flow-control delay.
    packet_size: usize,
    last_data_at: Instant,
    /// The feedback's [`FeedbackEcho`]: the transmission number (the low
    /// half of `ack`) of the data packet that arrived at `last_data_at`, and
    /// the data packets received.
    echo: FeedbackEcho,
    /// The immediate SACK-MORE for the current silence was already sent.
    sack_more_sent: bool,
    epoch_deadline: Option<Instant>,
    pending_feedback: bool,
    pending_syn_ack: bool,
    /// Adaptive triggers (seed 000 §V.A.3).
    drops_since_feedback: u64,
    too_fast_run: u32,
    too_slow_run: u32,
    /// The application's read rate R_app and whether it limits the flow
    /// (seed 002 §4.2.3).
    reads: ReadMeter,
    /// A "route failed" notice not yet followed by "re-established": the
    /// sender's silence is an outage (`AtpConfig::silence_allowed`).
    route_down: bool,
}

impl AtpReceiver {
    /// A receiver listening for the SYN of `connection_id`.
    pub fn new(config: AtpConfig, connection_id: u32, now: Instant) -> Self {
        let stream = Reassembly::new(0, config.max_reorder_bytes);
        let core = ReceiverCore::new(ProtocolId::Atp, connection_id, now, config.trace, stream);
        let control = AtpReceiveControl {
            packet_size: config.payload_per_packet(),
            config,
            d_avg_ns: None,
            highest_end: 0,
            last_data_at: now,
            echo: FeedbackEcho::default(),
            sack_more_sent: false,
            epoch_deadline: None,
            pending_feedback: false,
            pending_syn_ack: false,
            drops_since_feedback: 0,
            too_fast_run: 0,
            too_slow_run: 0,
            reads: ReadMeter::new(now),
            route_down: false,
        };
        Receiver::with_parts(core, control)
    }

    /// A receiver for the connection that `datagram` (a SYN, or any ATP data
    /// packet) opens, with the datagram already handled; `None` if it is not
    /// a valid ATP sender packet.
    pub fn accept(config: AtpConfig, now: Instant, datagram: &[u8]) -> Option<Self> {
        let (repr, _) = wire::parse_datagram(datagram).ok()?;
        if repr.protocol != ProtocolId::Atp
            || repr.control.contains(Control::SACK_OPT)
            || repr.control.contains(Control::RST)
        {
            return None;
        }
        let mut receiver = AtpReceiver::new(config, repr.connection_id, now);
        receiver.handle_input(now, datagram);
        Some(receiver)
    }

    pub fn config(&self) -> &AtpConfig {
        &self.control.config
    }
    /// The current D_avg (zero before any packet).
    pub fn d_avg(&self) -> Duration {
        self.control.d_avg()
    }
    /// The cumulative ack: bytes received in order.
    pub fn ack(&self) -> u64 {
        self.core.stream.next
    }
    /// Bytes held out of order beyond the ack.
    pub fn held_bytes(&self) -> u64 {
        self.core.stream.out_of_order.held_bytes()
    }
    /// Byte ranges held beyond the ack, in order (what SACK blocks report).
    pub fn held_ranges(&self) -> Vec<(u64, u64)> {
        self.core.stream.out_of_order.ranges().collect()
    }

    /// Sets the receive buffer: the bytes the application has not read
    /// (in order) and those held out of order together span at most `bytes`
    /// past the last byte read; data beyond it is dropped and counted in
    /// `Stats::dropped_over_buffer_limit`, and the sender sends it again
    /// after a SACK shows the hole. So a slow or stalled reader cannot make
    /// the receiver hold more than this. Default `config.max_reorder_bytes`
    /// (what an application that reads everything at once always had).
    pub fn set_receive_buffer(&mut self, bytes: u64) {
        self.core.stream.set_receive_buffer(bytes);
    }

    /// The receive buffer ([`AtpReceiver::set_receive_buffer`]).
    pub fn receive_buffer(&self) -> u64 {
        self.core.stream.receive_buffer_bytes
    }

    /// The application's read rate R_app in bytes per second, when the
    /// application was the bottleneck at the end of the last measured window
    /// (its last read left bytes behind); `None` when it kept up (seed 002
    /// §4.2.3).
    pub fn app_read_limit(&self) -> Option<f64> {
        self.control.reads.limit_bytes_per_s
    }
}

type Core = ReceiverCore<Timer>;

impl AtpReceiveControl {
    fn d_avg(&self) -> Duration {
        Duration::from_secs_f64(self.d_avg_ns.unwrap_or(0.0) / 1e9)
    }

    /// The delay the feedback carries: D_avg, or the application's read rate
    /// as a delay (one packet per `packet_size / R_app`) when the
    /// application is the bottleneck and that is longer (seed 002 §4.2.1
    /// and §4.2.3). A stalled reader (R_app = 0) asks for `max_delay`, the
    /// slowest the sender goes: its packets keep the connection alive and
    /// the next feedback tells it when the reader is back.
    fn feedback_delay(&self) -> Duration {
        let d_avg = self.d_avg();
        match self.reads.limit_bytes_per_s {
            None => d_avg,
            Some(rate) => {
                let slowest = self.config.max_delay;
                let app_delay = if rate > 0.0 {
                    Duration::from_secs_f64(self.packet_size as f64 / rate).min(slowest)
                } else {
                    slowest
                };
                d_avg.max(app_delay)
            }
        }
    }

    fn refresh(&mut self, core: &mut Core) {
        let established = core.phase() == Phase::Established;
        let sack_more =
            (established && !self.sack_more_sent).then(|| self.last_data_at + self.config.sack_more_after());
        let idle = established.then(|| core.last_heard + self.config.silence_allowed(self.route_down));
        let linger = (core.phase() == Phase::Finished).then(|| core.last_heard + self.config.linger);
        let timers = &mut core.timers;
        timers.set(Timer::Epoch, if established { self.epoch_deadline } else { None });
        timers.set(Timer::SackMore, sack_more);
        timers.set(Timer::Idle, idle);
        timers.set(Timer::Linger, linger);
    }

    /// seed 000 §V.A.3: the three immediate-feedback triggers of adaptive ATP.
    fn adaptive_triggers(&mut self, d_max: Duration, d_s: Duration, seq: u64, end: u64) {
        let Some(adaptive) = self.config.adaptive.clone() else {
            return;
        };
        // A jump past the highest data seen means the packets in between were
        // dropped (or are late; ATP has no way to tell).
        if seq > self.highest_end {
            let gap = seq - self.highest_end;
            self.drops_since_feedback = self.drops_since_feedback.saturating_add(gap.div_ceil(self.packet_size as u64));
        }
        if self.drops_since_feedback >= u64::from(adaptive.drops) {
            self.pending_feedback = true;
        }
        self.highest_end = self.highest_end.max(end);
        if d_s.is_zero() {
            return;
        }
        // Whole nanoseconds, so that a D_max exactly at (1 − φ)·D_s is "in
        // range" whatever the float rounding of 1 − φ.
        let slow_bound_ns = (d_s.as_nanos() as f64 * (1.0 - self.config.phi)).round();
        if d_max > d_s {
            self.too_fast_run += 1;
            self.too_slow_run = 0;
        } else if (d_max.as_nanos() as f64) < slow_bound_ns {
            self.too_slow_run += 1;
            self.too_fast_run = 0;
        } else {
            self.too_fast_run = 0;
            self.too_slow_run = 0;
        }
        let n = adaptive.consecutive.max(1);
        if self.too_fast_run >= n || self.too_slow_run >= n {
            self.too_fast_run = 0;
            self.too_slow_run = 0;
            self.pending_feedback = true;
        }
    }

    /// What a sender packet says: its D_max, a probe, the FIN, its data.
    fn on_data(&mut self, core: &mut Core, now: Instant, repr: &Repr, payload: &[u8]) {
        let control = repr.control;
        let d_max = Duration::from_micros(u64::from(repr.d_max_us));
        let d_s = Duration::from_micros(u64::from(repr.d_s_us));
        core.trace(TraceSample::DMax { at: now, d_max });
        let d_max_ns = d_max.as_nanos() as f64;
        if control.contains(Control::SYN) || control.contains(Control::SACK_REQ) {
            // seed 002 Fig. 6 line 12, seed 001 §2.3: a probe is answered at
            // once with its own D_max, no averaging.
            self.d_avg_ns = Some(d_max_ns);
            self.pending_feedback = true;
            if control.contains(Control::SYN) {
                self.pending_syn_ack = true;
            }
        } else {
            // seed 002 §4.2.1 / seed 001 eq. 2.1: D_avg = β·D_avg + (1−β)·D_max.
            let beta = self.config.beta;
            self.d_avg_ns = Some(match self.d_avg_ns {
                None => d_max_ns,
                Some(avg) => beta * avg + (1.0 - beta) * d_max_ns,
            });
        }
        let Some(end) = repr.seq.checked_add(payload.len() as u64) else {
            core.stats.dropped_datagrams += 1;
            return;
        };
        if control.contains(Control::FIN) {
            // The FIN sits right after this packet's data. A second FIN at a
            // different place, or one before data already seen, is ignored.
            let after_all_data = end >= self.highest_end.max(core.stream.next)
                && core.stream.out_of_order.end().is_none_or(|held_end| held_end <= end);
            let same_place = match core.stream.fin_seq {
                None => true,
                Some(fin) => fin == end,
            };
            let valid = after_all_data && same_place;
            if valid {
                core.stream.fin_seq = Some(end);
            }
            // Answer at once: the sender learns the holes up to the end.
            self.pending_feedback = true;
        }
        if payload.is_empty() {
            return;
        }
        self.last_data_at = now;
        self.echo = FeedbackEcho { transmission: repr.ack as u32, arrivals: self.echo.arrivals.wrapping_add(1) };
        self.sack_more_sent = false;
        self.packet_size = self.packet_size.max(payload.len());
        let beyond_fin = core.stream.fin_seq.is_some_and(|f| end > f);
        let too_far = end > core.stream.next.saturating_add(self.config.max_reorder_bytes);
        if beyond_fin || too_far {
            core.stats.dropped_datagrams += 1;
            return;
        }
        // Unread bytes count against the receive buffer.
        let stream = &core.stream;
        if end > stream.read_upto().saturating_add(stream.receive_buffer_bytes) {
            core.stats.dropped_over_buffer_limit += 1;
            return;
        }
        self.adaptive_triggers(d_max, d_s, repr.seq, end);
        self.highest_end = self.highest_end.max(end);
        match core.stream.offer(&mut core.stats, repr.seq, payload) {
            Offer::Accepted { .. } => {}
            Offer::Duplicate => core.stats.dropped_datagrams += 1,
            Offer::OverLimit => core.stats.dropped_over_buffer_limit += 1,
        }
    }
}

impl ReceiveControl for AtpReceiveControl {
    type Timer = Timer;

    /// Feedback travels the other way; a receiver never accepts it.
    fn screen(&self, core: &Core, ours: bool, repr: &Repr) -> bool {
        ours && !core.is_closed() && !repr.control.contains(Control::SACK_OPT)
    }

    fn on_packet(&mut self, core: &mut Core, now: Instant, repr: &Repr, payload: &[u8]) {
        if core.phase() == Phase::Connecting {
            core.establish();
            self.epoch_deadline = Some(now + self.config.epoch);
            self.last_data_at = now;
        }
        self.on_data(core, now, repr, payload);
        if core.phase() == Phase::Finished {
            // Lingering: answer whatever the sender repeats.
            self.pending_feedback = true;
        } else if core.stream.fin_seq == Some(core.stream.next) {
            core.finish();
            self.pending_feedback = true;
            self.epoch_deadline = None;
        }
    }

    fn refresh_timers(&mut self, core: &mut Core) {
        self.refresh(core);
    }

    fn on_timer(&mut self, core: &mut Core, _now: Instant, timer: Timer) {
        match timer {
            Timer::Epoch => {
                // Re-armed when the feedback goes out.
                self.epoch_deadline = None;
                self.pending_feedback = true;
            }
            Timer::SackMore => {
                // seed 001 §3.3: no data for E/2, ask for everything unacked.
                self.sack_more_sent = true;
                self.pending_feedback = true;
            }
            Timer::Idle | Timer::Linger => {}
        }
        self.refresh(core);
    }

    fn poll_transmit(&mut self, core: &mut Core, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let sending = matches!(core.phase(), Phase::Established | Phase::Finished);
        if !self.pending_feedback || !sending {
            return None;
        }
        let mut control = Control(Control::SACK_OPT | Control::ACK);
        if self.pending_syn_ack {
            control = control.with(Control::SYN);
        }
        // Every byte and the FIN are here: the feedback that says so carries
        // the commit token, or, while the application has not given it yet,
        // does not claim the FIN (the sender then cannot finish).
        let stream = &core.stream;
        let fin_ack = core.fin_ack(stream.fin_seq == Some(stream.next)).unwrap_or(FinAck::Plain);
        if stream.fin_seq.is_some() && !matches!(fin_ack, FinAck::Held { .. }) {
            control = control.with(Control::FIN);
        }
        if core.phase() == Phase::Established
            && now.saturating_since(self.last_data_at) >= self.config.sack_more_after()
        {
            control = control.with(Control::SACK_MORE);
        }
        let stream = &core.stream;
        self.reads.close_window(now, self.config.epoch, stream.delivered.len(), stream.receive_buffer_bytes);
        let d = self.feedback_delay();
        let mut repr = core.header(control, 0, stream.next);
        repr.d_max_us = duration_to_us(d);
        // D_s, unused on feedback by the documents, carries how long ago
        // data last arrived (QUIC's ack delay), so that a sender timing its
        // newest reported byte can leave out the wait for this feedback: a
        // feedback that crosses first after a route outage reports bytes
        // that arrived before it (docs/PROTOCOLS.md §1).
        repr.d_s_us = duration_to_us(now.saturating_since(self.last_data_at));
        // `seq`, unused on feedback, describes that same newest arrival: its
        // transmission number, which a host sender's driver writes in data's
        // unused `ack` (zero in the simulator), and the packets received.
        // With D_s the sender times that arrival exactly, retransmissions
        // included, and tells the rate packets arrive at, whatever the
        // SACK blocks leave out (QUIC's largest acknowledged and ack delay;
        // docs/PROTOCOLS.md §6, "`e2e` estimate").
        repr.seq = self.echo.to_seq();
        // seed 002 §4.2.2: the blocks always describe the first holes.
        let max_blocks = self.config.max_sack_blocks.min(wire::MAX_SACK_BLOCKS);
        repr.sack_blocks = stream.out_of_order.ranges().take(max_blocks).collect();
        let sack_ranges = if repr.sack_blocks.len() < max_blocks {
            repr.sack_blocks.len()
        } else {
            stream.out_of_order.ranges().count()
        };
        let sent = emit_ack(repr, Some(fin_ack), buf)?;
        self.pending_feedback = false;
        self.pending_syn_ack = false;
        self.drops_since_feedback = 0;
        if core.phase() == Phase::Established {
            // Any feedback starts a new epoch (an immediate one included).
            self.epoch_deadline = Some(now + self.config.epoch);
        }
        core.stats.datagrams_sent += 1;
        core.stats.feedback_packets += 1;
        core.trace(TraceSample::DAvgSent { at: now, d_avg: d });
        core.trace(TraceSample::SackRanges { at: now, ranges: sack_ranges });
        self.refresh(core);
        Some(sent)
    }

    /// The receiver only waits longer while its route is down; feedback
    /// keeps its epoch (the sender's probes ask for it, seed 002 §4.3.3).
    fn on_route_notice(&mut self, core: &mut Core, _now: Instant, notice: RouteNotice) {
        self.route_down = notice == RouteNotice::Failed;
        self.refresh(core);
    }

    fn on_close(&mut self) {
        self.pending_feedback = false;
    }

    /// What the application reads, and whether it empties the buffer, is
    /// its read rate R_app (seed 002 §4.2.3).
    fn on_read(&mut self, n: usize, unread: usize) {
        self.reads.on_read(n, unread);
    }

    fn on_commit_progress(&mut self, core: &mut Core) {
        // Tell the sender at once.
        if core.phase() == Phase::Finished {
            self.pending_feedback = true;
        }
    }
}
