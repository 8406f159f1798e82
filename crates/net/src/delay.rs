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
use meshbed_proto::wire::{Control, Packet, ProtocolId, Repr, WireError};
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
/// the sample is now − its send time. ATP feedback is periodic, so the sample
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
}

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
        }
    }

    /// The same estimator, reporting only the queueing above `resolution`.
    pub fn with_resolution(mut self, resolution: Duration) -> Self {
        self.resolution = resolution;
        self
    }

    /// A data segment `[seq, seq + len)` left at `now`.
    pub fn on_data_sent(&mut self, now: Instant, seq: u64, len: usize) {
        if len == 0 {
            return;
        }
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
    pub fn on_feedback(&mut self, now: Instant, ack: u64, blocks: &[(u64, u64)], hold: Duration) {
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
            let sample = now.saturating_since(sent_at).saturating_sub(hold);
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
        while self.min_window.len() > 1 && self.min_window.front().is_some_and(|&(t, _)| t + MIN_RTT_WINDOW < now) {
            self.min_window.pop_front();
        }
        self.sent = self.sent.split_off(&(latest + 1));
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
                    e.on_data_sent(now, repr.seq, repr.payload_len);
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
                e.on_feedback(now, repr.ack, &repr.sack_blocks, Duration::from_micros(u64::from(repr.d_s_us)))
            }
            // Segments were recorded by sequence number, as TCP acknowledges.
            ProtocolId::Tcp if repr.control.contains(Control::ACK) => e.on_feedback(now, repr.ack, &[], Duration::ZERO),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_proto::wire::HEADER_LEN;

    fn t(us: u64) -> Instant {
        Instant::from_nanos(us * 1000)
    }

    #[test]
    fn parses_specs_and_durations() {
        assert_eq!("e2e".parse::<DelaySpec>().unwrap(), DelaySpec::EndToEnd);
        assert_eq!("fixed:2ms".parse::<DelaySpec>().unwrap(), DelaySpec::Fixed(Duration::from_millis(2)));
        assert_eq!("fixed:250us".parse::<DelaySpec>().unwrap(), DelaySpec::Fixed(Duration::from_micros(250)));
        assert_eq!("fixed:0.5s".parse::<DelaySpec>().unwrap(), DelaySpec::Fixed(Duration::from_millis(500)));
        assert_eq!("file:/proc/ath5k/Da".parse::<DelaySpec>().unwrap(), DelaySpec::File("/proc/ath5k/Da".into()));
        for bad in ["fixed:2parsecs", "fixed:-1ms", "file:", "mac", "fixed:", "fixed:250", "fixed:2h"] {
            assert!(bad.parse::<DelaySpec>().is_err(), "{bad}");
        }
    }

    fn data_packet(seq: u64, len: usize, d_max_us: u32) -> Vec<u8> {
        let repr = Repr {
            protocol: ProtocolId::Atp,
            control: Control(0),
            hop_count: 0,
            connection_id: 9,
            seq,
            ack: 0,
            d_max_us,
            d_s_us: 100,
            sack_blocks: vec![],
            payload_len: len,
        };
        let mut buf = vec![0u8; HEADER_LEN + len];
        repr.emit(&mut buf);
        buf
    }

    #[test]
    fn fixed_source_stamps_eta_when_idle_then_d_and_never_lowers() {
        let mut s = Stamper::new(
            DelaySource::Fixed(Duration::from_micros(400)),
            EtaRule::Fixed(3.0),
            Duration::from_millis(100),
        );
        let mut p = data_packet(0, 10, 0);
        s.stamp(t(0), &mut p).unwrap();
        let v = Packet::new_checked(&p[..]).unwrap();
        assert_eq!((v.d_max_us(), v.hop_count()), (1200, 1), "idle: η·D");
        let mut p = data_packet(10, 10, 0);
        s.stamp(t(50), &mut p).unwrap();
        assert_eq!(Packet::new_checked(&p[..]).unwrap().d_max_us(), 400, "busy: D");
        let mut p = data_packet(20, 10, 900);
        s.stamp(t(60), &mut p).unwrap();
        assert_eq!(Packet::new_checked(&p[..]).unwrap().d_max_us(), 900, "a larger D_max stays");
    }

    /// A plain estimator (α = 0) after a 1 ms sample, then a 3 ms one: 2 ms
    /// over the minimum; bytes [0, 200) sent and acknowledged.
    fn two_ms_over_the_minimum() -> EndToEndEstimator {
        let mut e = EndToEndEstimator::new(0.0);
        e.on_data_sent(t(0), 0, 100);
        e.on_feedback(t(1_000), 100, &[], Duration::ZERO);
        e.on_data_sent(t(2_000), 100, 100);
        e.on_feedback(t(5_000), 200, &[], Duration::ZERO);
        assert_eq!(e.current(), Duration::from_millis(2));
        e
    }

    #[test]
    fn end_to_end_source_is_offered_without_eta_when_idle() {
        let e = two_ms_over_the_minimum();
        let mut s = Stamper::new(DelaySource::EndToEnd(e), EtaRule::Fixed(3.0), Duration::from_millis(100));
        let mut p = data_packet(0, 10, 0);
        let out = s.stamp(t(10_000), &mut p).unwrap();
        assert!(out.idle, "a fresh sender is idle");
        assert_eq!(Packet::new_checked(&p[..]).unwrap().d_max_us(), 2_000, "the estimate as it is, not η·D");
    }

    #[test]
    fn file_source_reads_microseconds_and_keeps_last_value_on_error() {
        let path = std::env::temp_dir().join(format!("meshbed-net-da-{}", std::process::id()));
        std::fs::write(&path, "1500\n").unwrap();
        let mut src = DelaySource::open(&DelaySpec::File(path.clone()), 0.75, Duration::ZERO).unwrap();
        assert_eq!(src.current(t(0)), Duration::from_micros(1500));
        std::fs::write(&path, "garbage").unwrap();
        assert_eq!(src.current(t(20_000)), Duration::from_micros(1500));
        std::fs::write(&path, "300").unwrap();
        assert_eq!(src.current(t(25_000)), Duration::from_micros(1500), "not re-read within 10 ms");
        assert_eq!(src.current(t(40_000)), Duration::from_micros(300));
        std::fs::remove_file(&path).unwrap();
        assert!(DelaySource::open(&DelaySpec::File(path), 0.75, Duration::ZERO).is_err());
    }

    #[test]
    fn a_delay_file_that_never_ends_or_blocks_is_refused_at_once() {
        let t0 = std::time::Instant::now();
        let e = read_delay_file(std::path::Path::new("/dev/zero")).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let dir = std::env::temp_dir().join(format!("meshbed-delay-fifo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = read_delay_file(&fifo).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        // A large file: read 64 bytes of it, and quoted in a short excerpt.
        let big = dir.join("big");
        std::fs::write(&big, "x".repeat(3 << 20)).unwrap();
        let e = read_delay_file(&big).unwrap_err();
        assert!(e.len() < 200 && e.contains("xxx…"), "{e}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(1));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn end_to_end_estimate_is_queueing_over_the_minimum() {
        let mut e = EndToEndEstimator::new(0.0);
        e.on_data_sent(t(0), 0, 100);
        e.on_feedback(t(1_000), 100, &[], Duration::ZERO);
        assert_eq!(e.current(), Duration::ZERO, "one sample is its own minimum");
        e.on_data_sent(t(2_000), 100, 100);
        e.on_data_sent(t(2_100), 200, 100);
        // The SACK block end reports the newest segment: RTT 3 ms.
        e.on_feedback(t(5_100), 100, &[(200, 300)], Duration::ZERO);
        assert_eq!(e.current(), Duration::from_millis(2));
        // A retransmitted segment gives no sample.
        e.on_data_sent(t(6_000), 100, 100);
        e.on_data_sent(t(6_000), 300, 100);
        e.on_data_sent(t(6_100), 300, 100);
        e.on_feedback(t(9_000), 400, &[], Duration::ZERO);
        assert_eq!(e.samples(), 2);
    }

    /// With a resolution, only the queueing above it counts: 3 ms samples
    /// over a 1 ms minimum give 2 ms plain, 1.75 ms with a 250 µs floor and
    /// nothing with a 3 ms one.
    #[test]
    fn end_to_end_estimate_is_what_lies_above_the_hosts_resolution() {
        for (floor_us, want_us) in [(0, 2_000), (250, 1_750), (3_000, 0)] {
            let mut e = EndToEndEstimator::new(0.0).with_resolution(Duration::from_micros(floor_us));
            e.on_data_sent(t(0), 0, 100);
            e.on_feedback(t(1_000), 100, &[], Duration::ZERO);
            assert_eq!(e.current(), Duration::ZERO);
            // Four 3 ms samples: the host's filter (the smallest of four)
            // and the plain estimate (their average) agree on 3 ms.
            for k in 0..4u64 {
                e.on_data_sent(t(2_000 + 10_000 * k), 100 * (k + 1), 100);
                e.on_feedback(t(5_000 + 10_000 * k), 100 * (k + 2), &[], Duration::ZERO);
            }
            assert_eq!(e.current(), Duration::from_micros(want_us), "resolution {floor_us} µs");
        }
    }

    /// On a host one long sample among short ones (a late wake-up) is not
    /// queueing: the estimate is the smallest of the last four samples over
    /// the minimum; a queue that lengthens four samples in a row is.
    #[test]
    fn a_hosts_estimate_ignores_one_long_sample_but_not_a_standing_queue() {
        let mut e = EndToEndEstimator::new(0.75).with_resolution(Duration::from_micros(100));
        let mut at = 0u64;
        let mut seq = 0u64;
        let mut sample = |e: &mut EndToEndEstimator, rtt_us: u64| {
            e.on_data_sent(t(at), seq, 100);
            seq += 100;
            at += rtt_us;
            e.on_feedback(t(at), seq, &[], Duration::ZERO);
            at += 10;
        };
        for rtt in [50, 60, 55, 52] {
            sample(&mut e, rtt);
        }
        assert_eq!(e.current(), Duration::ZERO);
        sample(&mut e, 5_000);
        assert_eq!(e.current(), Duration::ZERO, "one late sample: the smallest of four is 52 µs");
        let plain = EndToEndEstimator::new(0.75);
        assert!(plain.current().is_zero());
        for rtt in [1_050, 1_100, 1_080, 1_060] {
            sample(&mut e, rtt);
        }
        // Smallest of the last four 1,050 µs, less 50 µs minimum, less 100.
        assert_eq!(e.current(), Duration::from_micros(900));
    }

    /// Feedbacks that report nothing new (a window-bound sender repairing
    /// holes) leave the estimate as it was twice, then it is stale and reads
    /// zero; the next fresh sample brings it back.
    #[test]
    fn an_estimate_without_fresh_samples_goes_stale() {
        let mut e = two_ms_over_the_minimum();
        // A retransmission of [100, 200) and feedbacks reporting nothing
        // beyond byte 200: no sample.
        e.on_data_sent(t(6_000), 100, 100);
        e.on_feedback(t(8_000), 200, &[], Duration::ZERO);
        e.on_feedback(t(9_000), 200, &[], Duration::ZERO);
        assert_eq!(e.current(), Duration::from_millis(2), "two feedbacks without a sample");
        e.on_feedback(t(10_000), 200, &[], Duration::ZERO);
        assert_eq!(e.current(), Duration::ZERO, "the third: stale");
        e.on_data_sent(t(11_000), 200, 100);
        e.on_feedback(t(14_000), 300, &[], Duration::ZERO);
        assert_eq!(e.current(), Duration::from_millis(2), "a fresh 3 ms sample");
    }

    /// A route outage with the reverse path back first: the feedback that
    /// crosses reports a byte that arrived 26 s ago. Its D_s (the
    /// receiver's hold) is left out, so the sample is the 10 ms round trip,
    /// not 26 s.
    #[test]
    fn the_receivers_hold_is_not_path_delay() {
        let mut e = EndToEndEstimator::new(0.0);
        e.on_data_sent(t(0), 0, 100);
        e.on_feedback(t(10_000), 100, &[], Duration::ZERO);
        e.on_data_sent(t(20_000), 100, 100);
        e.on_feedback(t(26_030_000), 200, &[], Duration::from_micros(26_000_000));
        assert_eq!(e.srtt(), Some(Duration::from_millis(10)));
        assert_eq!(e.current(), Duration::ZERO);
    }
}
