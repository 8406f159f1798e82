//! Where a node's delay D comes from, and stamping it into ATP packets.
//!
//! In the simulator every node, the source included, raises an ATP packet's
//! D_max to its own average queueing + transmission delay D as it queues the
//! packet (seed 002 §4.1; [`meshbed_proto::relay`]). On a real host the MAC's
//! delay is not visible to a user-level program, so the value comes from a
//! pluggable [`DelaySource`]:
//!
//! * `file:PATH`: a file holding the node's current average delay in
//!   microseconds as a decimal number, as the thesis' driver exported it in
//!   `/proc/ath5k/Da` (seed 001 §3.1 and appendix A.6). Re-read at most every
//!   10 ms.
//! * `fixed:DURATION` (`fixed:2ms`, `fixed:500us`): a constant D.
//! * `e2e`: an end-to-end estimate for networks that offer no per-hop delay:
//!   the smoothed round-trip time of the connection's own data minus the
//!   smallest one seen in the last 10 s, i.e. the queueing the flow causes
//!   along the path ([`EndToEndEstimator`]). Only a sender can measure it.
//!
//! With `file` and `fixed`, a node whose channel looks idle offers η·D, as a
//! relay does (seed 002 §4.1; seed 000 §V.A.3 for adaptive η); `e2e` already
//! measures the flow's own effect and offers the estimate as it is.
//! [`Stamper`] applies the source to datagrams with the one stamping rule,
//! [`meshbed_proto::relay::Stamper::stamp`]; the emulator's relay daemon
//! reads its node's delay file with the same [`DelaySource::File`].

use meshbed_core::{Duration, Instant};
use meshbed_proto::relay::{self, EtaRule, StampOutcome};
use meshbed_proto::wire::{Control, FeedbackEcho, Packet, ProtocolId, Repr, WireError};
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::str::FromStr;

/// How often a `file:` source is re-read.
pub const FILE_REFRESH: Duration = Duration::from_millis(10);
/// The end-to-end estimator's window for the minimum round trip.
pub const MIN_RTT_WINDOW: Duration = Duration::from_secs(10);

/// A delay source as given on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DelaySpec {
    File(PathBuf),
    Fixed(Duration),
    EndToEnd,
}

impl std::fmt::Display for DelaySpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DelaySpec::File(p) => write!(f, "file:{}", p.display()),
            DelaySpec::Fixed(d) => write!(f, "fixed:{}us", d.as_nanos() / 1000),
            DelaySpec::EndToEnd => f.write_str("e2e"),
        }
    }
}

impl FromStr for DelaySpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "e2e" {
            return Ok(DelaySpec::EndToEnd);
        }
        if let Some(path) = s.strip_prefix("file:") {
            if path.is_empty() {
                return Err("`file:` needs a path, e.g. file:/proc/ath5k/Da".into());
            }
            return Ok(DelaySpec::File(PathBuf::from(path)));
        }
        if let Some(d) = s.strip_prefix("fixed:") {
            // The one duration syntax, a unit required; a node's delay beyond
            // an hour is a typo, not a measurement.
            let delay = meshbed_core::time::parse_duration(d)?;
            if delay > Duration::from_secs(3_600) {
                return Err(format!("`{d}`: expected a delay of at most one hour"));
            }
            return Ok(DelaySpec::Fixed(delay));
        }
        Err(format!("unknown delay source `{s}`; expected `e2e`, `fixed:DURATION` (e.g. fixed:2ms) or `file:PATH`"))
    }
}

/// The most a `file:` source is read: a delay is one number (the
/// driver's `/proc` file holds a few bytes), so `/dev/zero` or a huge file
/// costs no memory.
pub const MAX_DELAY_FILE_BYTES: u64 = 64;

/// Reads a `file:` source: the first whitespace-separated token,
/// microseconds. Only a regular file (procfs files are), opened without
/// blocking: a FIFO or a device is refused at once instead of blocking or
/// being read forever; at most [`MAX_DELAY_FILE_BYTES`] are read, and an
/// error quotes at most a short excerpt.
pub fn read_delay_file(path: &std::path::Path) -> Result<Duration, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let shown = path.display();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| format!("reading `{shown}`: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("reading `{shown}`: {e}"))?;
    if !meta.is_file() {
        return Err(format!(
            "`{shown}` is not a regular file (a device, FIFO or directory); expected a file holding the node's delay in microseconds"
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_DELAY_FILE_BYTES).read_to_end(&mut bytes).map_err(|e| format!("reading `{shown}`: {e}"))?;
    let text = String::from_utf8_lossy(&bytes);
    let token = text.split_whitespace().next().ok_or_else(|| format!("`{shown}` is empty"))?;
    let excerpt: String = if token.chars().count() > 24 {
        token.chars().take(24).chain("…".chars()).collect()
    } else {
        token.to_string()
    };
    let us: f64 =
        token.parse().map_err(|_| format!("`{shown}`: expected the delay in microseconds, found `{excerpt}`"))?;
    if !us.is_finite() || us < 0.0 {
        return Err(format!("`{shown}`: negative or non-finite delay `{excerpt}`"));
    }
    Ok(Duration::from_nanos((us * 1e3).round() as u64))
}

/// The end-to-end queueing estimate: smoothed RTT − windowed minimum RTT.
///
/// RTT samples come from the driver's view of its own datagrams: when a
/// feedback first reports byte `x` held (cumulative ack or the end of a SACK
/// block) and the data segment ending at `x` was sent once (Karn's rule),
/// the sample is now − its send time. A peer that echoes (meshbed's ATP
/// receiver does) gives exact samples instead: the driver numbers each ATP
/// data transmission in the header's `ack` field, which ATP data leaves
/// unused ([`EndToEndEstimator::on_data_sent`] hands out the number), the
/// receiver echoes the number of its newest arrival in the feedback's `seq`
/// with D_s, the time since it, and the sample is now − that transmission's
/// send time − D_s, retransmissions included (QUIC's largest acknowledged
/// and ack delay, RFC 9002 §5.3). Without it a feedback that names only the
/// first 20 ranges (seed 002 §4.2.2) left bytes held above them unnamed
/// until the holes below were repaired, and their first naming timed the
/// repair, not the path: over a 1 Gbit/s link with a 20 ms queue such
/// samples (0.3–1.6 s) held adaptive ATP at a few packets per second for
/// seconds (docs/PROTOCOLS.md §6, "`e2e` estimate").
/// ATP feedback is periodic, so the sample
/// also holds the wait until the feedback went, at most one inter-packet gap
/// D_s for the newest segment; the bias pushes the estimate up by about
/// D_s/2, so a sender on an empty path sees R ≈ 2·S and increases, and
/// settles where the flow keeps about half a packet gap of queue.
///
/// On a host the estimate has a floor it cannot see below, its
/// `resolution`: a sender loop that releases what fell due once per timer
/// tick sends bursts of a tick's packets, and the last of a burst waits
/// behind the others even on a path that keeps up, so up to a tick of
/// queueing is the sender's own; and a sample that a late wake-up of
/// either end lengthened says nothing of the path. With a `resolution`
/// the estimate is therefore the smallest of the last
/// [`HOST_SAMPLE_FILTER`] samples (a standing queue lengthens every
/// sample, a late wake-up one: LEDBAT's current-delay filter, RFC 6817
/// §3.4.2) less the minimum RTT less the resolution, at least zero; a D
/// of zero then asks for ATP's rate cap, which grows with what the path
/// delivers (docs/PROTOCOLS.md §6, "ATP's rate on a host"). Zero
/// resolution (the default) keeps the plain estimate.
#[derive(Clone, Debug)]
pub struct EndToEndEstimator {
    /// Send time of first transmissions by segment end, not yet reported.
    sent: BTreeMap<u64, Instant>,
    highest_sent_end: u64,
    highest_reported: u64,
    srtt_ns: Option<f64>,
    /// Monotonic deque of (time, sample) for the windowed minimum.
    min_window: VecDeque<(Instant, Duration)>,
    alpha: f64,
    samples: u64,
    /// Queueing the host cannot tell from its own bursts (see above).
    resolution: Duration,
    /// The last [`HOST_SAMPLE_FILTER`] samples, newest last.
    recent: VecDeque<Duration>,
    /// Feedbacks in a row that brought no sample (they reported nothing
    /// newer than before: a sender whose window is full of data behind
    /// holes sends only retransmissions, which give no sample).
    feedbacks_without_sample: u32,
    /// The number the next ATP data transmission carries (from 1: zero
    /// means "no echo").
    next_transmission: u64,
    /// (number, send time) of transmissions not yet echoed, oldest first;
    /// at most [`MAX_UNECHOED`].
    transmissions: VecDeque<(u64, Instant)>,
    /// The newest echo taken; an echo at or below it is old news.
    last_echo: u64,
    /// The peer echoes: the `sent` bookkeeping for the ack rule stops.
    peer_echoes: bool,
}

/// Transmissions remembered for an echo: at 100,000 packets/s three
/// seconds' worth, 4 MiB. An echo older than that gives no sample; a peer
/// that never echoes cannot make the list grow.
const MAX_UNECHOED: usize = 1 << 18;

/// After this many feedbacks in a row without a sample the estimate is
/// stale and reads zero. Without the rule a queue that overflowed froze
/// the estimate at its peak: the sender, window-bound behind the holes
/// the overflow left, sent only retransmissions, which give no sample, at
/// the rate 1/D of that peak (loopback, adaptive ATP: 70 packets/s for
/// seconds after a burst of drops). Three feedbacks that report only
/// repaired holes say the path delivers without the queue it had.
const STALE_AFTER_FEEDBACKS: u32 = 3;

/// Samples whose smallest is a host's estimate (RFC 6817 §3.4.2 keeps a
/// few; its reference code four).
pub const HOST_SAMPLE_FILTER: usize = 4;

impl EndToEndEstimator {
    /// `alpha`: the EWMA weight of the old average (the relay's α, 0.75).
    pub fn new(alpha: f64) -> Self {
        EndToEndEstimator {
            sent: BTreeMap::new(),
            highest_sent_end: 0,
            highest_reported: 0,
            srtt_ns: None,
            min_window: VecDeque::new(),
            alpha,
            samples: 0,
            resolution: Duration::ZERO,
            recent: VecDeque::with_capacity(HOST_SAMPLE_FILTER),
            feedbacks_without_sample: 0,
            next_transmission: 1,
            transmissions: VecDeque::new(),
            last_echo: 0,
            peer_echoes: false,
        }
    }

    /// The same estimator, reporting only the queueing above `resolution`.
    pub fn with_resolution(mut self, resolution: Duration) -> Self {
        self.resolution = resolution;
        self
    }

    /// A data segment `[seq, seq + len)` left at `now`; returns the number
    /// its transmission carries for an echo (zero for an empty segment).
    pub fn on_data_sent(&mut self, now: Instant, seq: u64, len: usize) -> u64 {
        if len == 0 {
            return 0;
        }
        let number = self.next_transmission;
        // The echo carries the low 32 bits, and zero there means "none".
        self.next_transmission += if (number + 1) as u32 == 0 { 2 } else { 1 };
        if self.transmissions.len() == MAX_UNECHOED {
            self.transmissions.pop_front();
        }
        self.transmissions.push_back((number, now));
        if !self.peer_echoes {
            self.on_segment_sent(now, seq, len);
        }
        number
    }

    /// The ack rule's bookkeeping: first transmissions by segment end.
    fn on_segment_sent(&mut self, now: Instant, seq: u64, len: usize) {
        let end = seq + len as u64;
        if end > self.highest_sent_end {
            self.highest_sent_end = end;
            self.sent.insert(end, now);
        } else {
            // A retransmission: its acknowledgement would be ambiguous.
            self.sent.remove(&end);
        }
    }

    /// A feedback with cumulative `ack` and SACK `blocks` arrived at `now`;
    /// the receiver had last received data `hold` before it sent it (ATP
    /// feedback's D_s; zero for TCP's ACKs, which leave at once).
    /// `echo`: the low 32 bits of the transmission number the feedback
    /// echoes ([`FeedbackEcho`]; zero: none).
    pub fn on_feedback(&mut self, now: Instant, ack: u64, blocks: &[(u64, u64)], hold: Duration, echo: u32) {
        if echo != 0 {
            let echo = self.unwrap_transmission(echo);
            self.on_echo(now, echo, hold);
            return;
        }
        let latest = blocks.iter().map(|&(_, e)| e).fold(ack, u64::max);
        if latest <= self.highest_reported {
            self.feedbacks_without_sample = self.feedbacks_without_sample.saturating_add(1);
            return;
        }
        self.feedbacks_without_sample = 0;
        self.highest_reported = latest;
        if let Some(&sent_at) = self.sent.get(&latest) {
            // The wait at the receiver is not path delay. Without it the
            // first feedback through after a route outage (sent when the
            // reverse path came back, reporting bytes that arrived before
            // the outage) gave a sample as long as the outage: SRTT rose to
            // tens of seconds, D with it, and ATP's rate 1/D collapsed for
            // minutes (seen with babeld's 26 s repair in the emulator).
            self.take_sample(now, now.saturating_since(sent_at).saturating_sub(hold));
        }
        self.expire_min(now);
        self.sent = self.sent.split_off(&(latest + 1));
    }

    /// The transmission number, at most the newest sent, whose low 32 bits
    /// are `low` (`u64::MAX`, which names nothing sent, when there is none).
    fn unwrap_transmission(&self, low: u32) -> u64 {
        let high = self.next_transmission & !u64::from(u32::MAX);
        let n = high | u64::from(low);
        if n < self.next_transmission {
            n
        } else {
            n.checked_sub(1 << 32).unwrap_or(u64::MAX)
        }
    }

    /// A feedback echoing transmission `echo`, whose packet arrived `hold`
    /// before the feedback left.
    fn on_echo(&mut self, now: Instant, echo: u64, hold: Duration) {
        if !self.peer_echoes {
            self.peer_echoes = true;
            self.sent.clear();
        }
        // An echo not newer than the last (no arrival since), or one that
        // names nothing this sender sent, is no news.
        if echo <= self.last_echo || echo >= self.next_transmission {
            self.feedbacks_without_sample = self.feedbacks_without_sample.saturating_add(1);
            self.expire_min(now);
            return;
        }
        self.last_echo = echo;
        self.feedbacks_without_sample = 0;
        let at = self.transmissions.partition_point(|&(n, _)| n < echo);
        if let Some(&(n, sent_at)) = self.transmissions.get(at) {
            if n == echo {
                self.take_sample(now, now.saturating_since(sent_at).saturating_sub(hold));
            }
        }
        // Older transmissions can no longer be the newest arrival.
        self.transmissions.drain(..at.min(self.transmissions.len()));
        self.expire_min(now);
    }

    fn take_sample(&mut self, now: Instant, sample: Duration) {
        self.samples += 1;
        let s = sample.as_nanos() as f64;
        self.srtt_ns = Some(match self.srtt_ns {
            None => s,
            Some(old) => self.alpha * old + (1.0 - self.alpha) * s,
        });
        if self.recent.len() == HOST_SAMPLE_FILTER {
            self.recent.pop_front();
        }
        self.recent.push_back(sample);
        while self.min_window.back().is_some_and(|&(_, m)| m >= sample) {
            self.min_window.pop_back();
        }
        self.min_window.push_back((now, sample));
    }

    fn expire_min(&mut self, now: Instant) {
        while self.min_window.len() > 1 && self.min_window.front().is_some_and(|&(t, _)| t + MIN_RTT_WINDOW < now) {
            self.min_window.pop_front();
        }
    }

    /// The current estimate (zero before the first sample).
    pub fn current(&self) -> Duration {
        if self.feedbacks_without_sample >= STALE_AFTER_FEEDBACKS {
            return Duration::ZERO;
        }
        match (self.srtt_ns, self.min_window.front()) {
            (Some(srtt), Some(&(_, min))) => {
                let current = if self.resolution.is_zero() {
                    srtt
                } else {
                    self.recent.iter().min().map_or(srtt, |m| m.as_nanos() as f64)
                };
                let above = current - min.as_nanos() as f64 - self.resolution.as_nanos() as f64;
                Duration::from_nanos(above.max(0.0) as u64)
            }
            _ => Duration::ZERO,
        }
    }

    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_window.front().map(|&(_, m)| m)
    }
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt_ns.map(|s| Duration::from_nanos(s as u64))
    }
    pub fn samples(&self) -> u64 {
        self.samples
    }
}

/// A live delay source.
#[derive(Clone, Debug)]
pub enum DelaySource {
    File { path: PathBuf, value: Duration, read_at: Option<Instant>, errors: u64 },
    Fixed(Duration),
    EndToEnd(EndToEndEstimator),
}

impl DelaySource {
    /// Opens a source; a `file:` source must be readable now. `resolution`:
    /// the end-to-end estimate's floor (the sender loop's timer tick, see
    /// [`EndToEndEstimator`]).
    pub fn open(spec: &DelaySpec, alpha: f64, resolution: Duration) -> Result<Self, String> {
        Ok(match spec {
            DelaySpec::File(path) => {
                let value = read_delay_file(path)?;
                DelaySource::File { path: path.clone(), value, read_at: None, errors: 0 }
            }
            DelaySpec::Fixed(d) => DelaySource::Fixed(*d),
            DelaySpec::EndToEnd => DelaySource::EndToEnd(EndToEndEstimator::new(alpha).with_resolution(resolution)),
        })
    }

    /// The node's delay D at `now`.
    pub fn current(&mut self, now: Instant) -> Duration {
        match self {
            DelaySource::Fixed(d) => *d,
            DelaySource::EndToEnd(e) => e.current(),
            DelaySource::File { path, value, read_at, errors } => {
                let due = match *read_at {
                    None => true,
                    Some(t) => t + FILE_REFRESH <= now,
                };
                if due {
                    *read_at = Some(now);
                    // A failed read keeps the last good value (the driver may
                    // be rewriting the file); it is counted.
                    match read_delay_file(path) {
                        Ok(v) => *value = v,
                        Err(_) => *errors += 1,
                    }
                }
                *value
            }
        }
    }
}

/// `file:` and `fixed:` are per-node delays, which an idle node scales by η
/// (seed 002 §4.1); `e2e` already measures the flow's own contention along
/// the path and is offered as it is.
impl relay::DelaySource for DelaySource {
    fn delay(&mut self, now: Instant) -> Duration {
        self.current(now)
    }

    fn idle_delay(&mut self, now: Instant, eta: f64) -> Duration {
        match self {
            DelaySource::EndToEnd(e) => e.current(),
            _ => relay::eta_times(eta, self.current(now).as_nanos() as f64),
        }
    }
}

/// What a [`Stamper`] tells about its work.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct StampCounters {
    pub stamped: u64,
    pub raised: u64,
    /// Datagrams that would not parse and were left alone.
    pub unparsable: u64,
    /// `file:` reads that failed (the last good value was used).
    pub file_errors: u64,
}

/// Applies a node's [`DelaySource`] to the datagrams it sends or forwards,
/// with the one stamping rule, [`meshbed_proto::relay::Stamper::stamp`]
/// (N_h + 1 on every ATP/TCP datagram; on ATP data, SYN and FIN packets
/// D_max = max(D_max, D), η·D when the node's channel is idle), and feeds an
/// end-to-end source the data it sends.
#[derive(Clone, Debug)]
pub struct Stamper {
    pub source: DelaySource,
    rule: relay::Stamper,
    pub counters: StampCounters,
}

impl Stamper {
    pub fn new(source: DelaySource, eta: EtaRule, idle_after: Duration) -> Self {
        Stamper { source, rule: relay::Stamper::new(eta, idle_after), counters: StampCounters::default() }
    }

    /// Stamps `datagram` in place before it is sent at `now`.
    pub fn stamp(&mut self, now: Instant, datagram: &mut [u8]) -> Result<StampOutcome, WireError> {
        let outcome = match self.rule.stamp(now, datagram, &mut self.source) {
            Ok(o) => o,
            Err(e) => {
                self.counters.unparsable += 1;
                return Err(e);
            }
        };
        self.counters.stamped += 1;
        self.counters.raised += u64::from(outcome.raised);
        match &mut self.source {
            DelaySource::EndToEnd(e) => {
                // It parsed a moment ago.
                if let Ok(repr) = Packet::new_checked(&*datagram).and_then(|p| Repr::parse(&p)) {
                    let number = e.on_data_sent(now, repr.seq, repr.payload_len);
                    // ATP data leaves `ack` unused (TCP's carries its ack):
                    // the number rides there for the receiver to echo.
                    if repr.protocol == ProtocolId::Atp && number != 0 {
                        Packet::new_unchecked(&mut *datagram).set_ack(number);
                    }
                }
            }
            DelaySource::File { errors, .. } => self.counters.file_errors = *errors,
            DelaySource::Fixed(_) => {}
        }
        Ok(outcome)
    }

    /// Feeds a datagram received from the peer (feedback/ACKs) to an
    /// end-to-end source; other sources ignore it.
    pub fn on_received(&mut self, now: Instant, datagram: &[u8]) {
        let DelaySource::EndToEnd(e) = &mut self.source else { return };
        let Ok(repr) = Packet::new_checked(datagram).and_then(|p| Repr::parse(&p)) else { return };
        match repr.protocol {
            ProtocolId::Atp if repr.control.contains(Control::SACK_OPT) => {
                let echo = FeedbackEcho::from_seq(repr.seq).transmission;
                e.on_feedback(now, repr.ack, &repr.sack_blocks, Duration::from_micros(u64::from(repr.d_s_us)), echo)
            }
            // Segments were recorded by sequence number, as TCP acknowledges.
            ProtocolId::Tcp if repr.control.contains(Control::ACK) => {
                e.on_feedback(now, repr.ack, &[], Duration::ZERO, 0)
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
