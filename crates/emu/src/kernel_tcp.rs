//! A scenario's kernel TCP flow (`protocol = "kernel-tcp"`) on the emulator:
//! the Linux kernel's own TCP between the two end nodes' namespaces, with
//! the flow's congestion control (`TCP_CONGESTION`), its segments crossing
//! the emulated medium like any other traffic (`crate::traffic` runs the
//! scenario around it).
//!
//! The receiver listens in the destination's namespace from the run's
//! start; the sender connects from the source's at `start_s`. The data is
//! the flow's own pseudo-random stream (the one `crate::transfer` draws a
//! transport flow's file from), generated a block at a time by the sender
//! and again by the receiver, which checks every byte as it reads it: a
//! flow until `stop_s` may move more than memory would hold.
//!
//! * `bytes`: the sender writes them and shuts its side down; the flow
//!   completes when the receiver has read every byte, each equal to the
//!   data, and the end of the stream. One not finished by `duration_s`
//!   stops there, as the simulator's flows do, and is reported incomplete
//!   with the bytes read by then (each already checked as it was read, so
//!   running on would verify nothing more: it would only keep a stalled
//!   flow's run waiting out [`IDLE_TIMEOUT`]).
//! * `stop_s`: a backlogged sender until then (the run's end at the
//!   latest). At that instant both ends stop, as the simulator's engines
//!   do: the receiver counts the bytes it read by then and the sender
//!   resets the connection, so that nothing of the flow is on the air
//!   afterwards.
//!
//! Every wait is bounded ([`CONNECT_TIMEOUT`], [`IDLE_TIMEOUT`]): a flow
//! that cannot connect or stops moving fails with an error, never hangs.

use crate::plumbing;
use crate::sys::{self, TcpCounters};
use crate::traffic::Running;
use crate::transfer::TransferOutcome;
use meshbed_sim::backend::{flow_key, Refusal};
use meshbed_sim::scenario::{Amount, CongestionControl, KernelTcpFlow};
use meshbed_sim::Scenario;
use nix::errno::Errno;
use nix::sys::socket::{self as sock, sockopt, AddressFamily, SockFlag, SockType, SockaddrIn};
use nix::sys::time::{TimeVal, TimeValLike};
use rand::RngCore;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Kernel TCP flow `i` listens on port `KERNEL_TCP_PORT_BASE + i`: a range
/// of its own, above the UDP and transport flows' 9000 + i
/// (`crate::traffic::flow_port`, at most `MAX_FLOWS` = 1000 flows) and
/// below Linux's ephemeral ports (32768 and up), so that no two flows of
/// a run ever share a port.
const KERNEL_TCP_PORT_BASE: u16 = 12_000;

/// How long the receiver waits for the connection after `start_s`, and
/// the sender for its handshake: long enough for five SYNs (the kernel
/// sends them 1, 3, 7 and 15 s after the first) and an AODV discovery.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long either end waits without progress before the flow fails:
/// more than TCP's retransmission timeout doubling to 32 s while a route
/// is broken, so that a flow that would recover is not given up.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How often a blocked read or write looks at the clock (a stop time, the
/// run's end, a stop signal).
const POLL: Duration = Duration::from_millis(100);

/// The data is generated and checked in blocks of this size (a multiple
/// of the generator's word, so that both ends draw the same bytes).
const BLOCK_BYTES: usize = 64 << 10;

/// The kernel's list of congestion controls, named in errors.
const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// The TCP port of kernel TCP flow `flow`.
pub(crate) fn kernel_tcp_port(flow: usize) -> u16 {
    KERNEL_TCP_PORT_BASE + flow as u16
}

/// Refuses kernel TCP flow `key` if this host's kernel cannot run its
/// congestion control ([`Emulator`](crate::Emulator)'s check, before any
/// namespace is made). A TCP socket of this process is asked to use it, as
/// the flow's sender will be: the nodes' namespaces share the host's
/// algorithms, and as root the request loads a module that provides one.
pub(crate) fn check_congestion_control(key: &str, flow: &KernelTcpFlow, refusal: &mut Refusal) {
    let cc = &flow.congestion_control;
    let tried = sock::socket(AddressFamily::Inet, SockType::Stream, SockFlag::SOCK_CLOEXEC, None)
        .map_err(|e| format!("a TCP socket to try it on could not be made: {e}"))
        .and_then(|fd| sys::set_tcp_congestion(&fd, cc.as_str()).map_err(|e| unavailable(cc, &e)));
    if let Err(why) = tried {
        refusal.add(format!("{key}.congestion_control"), format!("\"{cc}\""), why);
    }
}

/// Why the kernel would not set `cc` (`err`), with its list of algorithms.
fn unavailable(cc: &CongestionControl, err: &io::Error) -> String {
    let available = std::fs::read_to_string(AVAILABLE)
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(", "))
        .unwrap_or_else(|e| format!("unknown: {e}"));
    match Errno::from_raw(err.raw_os_error().unwrap_or(0)) {
        Errno::ENOENT => format!(
            "this host's kernel has no such TCP congestion control: it has {available} ({AVAILABLE}); \
             another may need its module (modprobe tcp_{cc})"
        ),
        Errno::EPERM => format!(
            "the kernel lets only root use a congestion control outside \
             /proc/sys/net/ipv4/tcp_allowed_congestion_control (available: {available})"
        ),
        _ => format!("the kernel refused it: {err} (available: {available})"),
    }
}

/// Starts kernel TCP flow `index` of `scenario` (the emulation `running`
/// carries it; `t0` is the run's start). The thread's outcome is a
/// transfer's, so that `crate::traffic` reports it as one.
pub(crate) fn start_kernel_tcp(
    running: &Running,
    scenario: &Scenario,
    index: usize,
    flow: &KernelTcpFlow,
    t0: Instant,
) -> std::thread::JoinHandle<TransferOutcome> {
    let f = &scenario.flows[index];
    let run_end = Duration::from_secs_f64(scenario.duration_s);
    let run = Arc::new(FlowRun {
        key: flow_key(scenario, index),
        index,
        seed: scenario.seed,
        src_ns: running.netns(f.src).to_string(),
        dst_ns: running.netns(f.dst).to_string(),
        addr: SocketAddrV4::new(plumbing::node_addr(f.dst), kernel_tcp_port(index)),
        congestion_control: flow.congestion_control.clone(),
        total: flow.amount.bytes(),
        t0,
        start: Duration::from_secs_f64(f.start_s),
        stop: match flow.amount {
            Amount::Until { stop_s } => Some(Duration::from_secs_f64(stop_s).min(run_end)),
            Amount::Bytes(_) => None,
        },
        run_end,
        sender_gave_up: AtomicBool::new(false),
        receiver_ended: AtomicBool::new(false),
    });
    std::thread::spawn(move || {
        let receiver = std::thread::spawn({
            let run = run.clone();
            move || run.receive()
        });
        let sender = std::thread::spawn({
            let run = run.clone();
            move || run.send()
        });
        let sent = sender.join().unwrap_or_else(|_| Err("the sender thread panicked".into()));
        match receiver.join() {
            Ok(received) => run.outcome(received, sent),
            Err(_) => TransferOutcome::failed("the receiver thread panicked"),
        }
    })
}

/// One kernel TCP flow as it runs: where, what and when (times from the
/// run's start `t0`).
struct FlowRun {
    /// `flows[i]`, or `random_flows.flow` for a drawn flow.
    key: String,
    index: usize,
    seed: u64,
    src_ns: String,
    dst_ns: String,
    /// The destination's address and the flow's port.
    addr: SocketAddrV4,
    congestion_control: CongestionControl,
    /// `bytes`; `None` for a flow until `stop_s`.
    total: Option<u64>,
    t0: Instant,
    start: Duration,
    /// A flow until `stop_s`: when both ends stop (the run's end at the
    /// latest). Every flow stops at the run's end ([`FlowRun::stopped`]).
    stop: Option<Duration>,
    run_end: Duration,
    /// Set when the sender failed, so that the receiver stops waiting for it.
    sender_gave_up: AtomicBool,
    /// Set when the receiver is done, so that the sender stops waiting for it.
    receiver_ended: AtomicBool,
}

/// What the receiver saw.
#[derive(Default)]
struct Received {
    /// Bytes read in order, each equal to the data (with `stop_s`: read by then).
    delivered: u64,
    /// With `bytes`: when the last one was read.
    finished: Option<Duration>,
    /// The bytes read when the run's time was up, if it was up before the end.
    at_run_end: Option<u64>,
    /// When the receiver stopped.
    ended: Duration,
    /// Whether a connection came (before one, a failure is the sender's to explain).
    connected: bool,
    counters: TcpCounters,
    error: Option<String>,
}

/// Whether a read or write only timed out (or was interrupted): the loop
/// looks at the clock and tries again.
fn would_block(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted)
}

impl FlowRun {
    fn now(&self) -> Duration {
        self.t0.elapsed()
    }

    /// Whether both ends stop now: at `stop_s`, or at the run's end for a
    /// flow of `bytes` not finished by then.
    fn stopped(&self) -> bool {
        self.now() >= self.stop.unwrap_or(self.run_end)
    }

    /// The receiver, in the destination's namespace.
    fn receive(&self) -> Received {
        let mut r = Received::default();
        if let Err(why) = self.receive_into(&mut r) {
            r.error = Some(why);
        }
        r.ended = self.now();
        self.receiver_ended.store(true, Ordering::SeqCst);
        r
    }

    fn receive_into(&self, r: &mut Received) -> Result<(), String> {
        sys::enter_netns(&self.dst_ns).map_err(|e| format!("entering {}: {e}", self.dst_ns))?;
        let listener = TcpListener::bind(self.addr).map_err(|e| format!("listening on {}: {e}", self.addr))?;
        let mut stream = self.accept(&listener)?;
        r.connected = true;
        stream.set_read_timeout(Some(POLL)).map_err(|e| format!("receiver: {e}"))?;
        let mut data = Data::new(self.seed, self.index);
        let mut buf = vec![0u8; BLOCK_BYTES];
        let mut last_data = Instant::now();
        loop {
            if sys::stop_requested() {
                return Err(format!("stopped by a signal after {} bytes", r.delivered));
            }
            let read = stream.read(&mut buf);
            let now = self.now();
            // What arrives from the stop on is not counted: the flow is over.
            if self.stopped() {
                if now >= self.run_end {
                    r.at_run_end = Some(r.delivered);
                }
                break;
            }
            match read {
                Ok(0) => match self.total {
                    Some(total) if r.delivered == total => break,
                    Some(total) => {
                        return Err(format!("the connection closed after {} of {total} bytes", r.delivered));
                    }
                    None => {
                        return Err(format!(
                            "the sender closed the connection before stop_s, after {} bytes",
                            r.delivered
                        ))
                    }
                },
                Ok(n) => {
                    last_data = Instant::now();
                    if self.total.is_some_and(|total| r.delivered + n as u64 > total) {
                        return Err(format!("more bytes arrived than the {} sent", self.total.unwrap_or(0)));
                    }
                    if let Some(k) = data.check(&buf[..n]) {
                        return Err(format!("byte {} differs from the data sent", r.delivered + k as u64));
                    }
                    r.delivered += n as u64;
                    if self.total == Some(r.delivered) {
                        r.finished = Some(now);
                    }
                }
                Err(e) if would_block(&e) => {
                    if last_data.elapsed() >= IDLE_TIMEOUT {
                        return Err(format!(
                            "no data for {} s after {} bytes (the connection stalled)",
                            IDLE_TIMEOUT.as_secs(),
                            r.delivered
                        ));
                    }
                }
                Err(e) => return Err(format!("receiving after {} bytes: {e}", r.delivered)),
            }
        }
        r.counters = sys::tcp_counters(&stream).unwrap_or_default();
        Ok(())
    }

    /// The flow's connection, within [`CONNECT_TIMEOUT`] of `start_s`.
    fn accept(&self, listener: &TcpListener) -> Result<TcpStream, String> {
        listener.set_nonblocking(true).map_err(|e| format!("receiver: {e}"))?;
        let deadline = self.start + CONNECT_TIMEOUT;
        loop {
            match listener.accept() {
                Ok((stream, _)) => {
                    stream.set_nonblocking(false).map_err(|e| format!("receiver: {e}"))?;
                    return Ok(stream);
                }
                Err(e) if would_block(&e) => {}
                Err(e) => return Err(format!("accepting on {}: {e}", self.addr)),
            }
            if self.sender_gave_up.load(Ordering::SeqCst) {
                return Err("the sender gave up before connecting".into());
            }
            if sys::stop_requested() {
                return Err("stopped by a signal before a connection came".into());
            }
            if self.now() >= deadline {
                return Err(format!(
                    "no connection to {} within {} s of start_s",
                    self.addr,
                    CONNECT_TIMEOUT.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The sender, in the source's namespace from `start_s`: its socket's
    /// counters, or why it failed.
    fn send(&self) -> Result<TcpCounters, String> {
        let sent = self.send_inner();
        if sent.is_err() {
            self.sender_gave_up.store(true, Ordering::SeqCst);
        }
        sent
    }

    fn send_inner(&self) -> Result<TcpCounters, String> {
        // Until `start_s`, in steps, so that a stop signal is not kept waiting.
        while let Some(wait) = self.start.checked_sub(self.now()).filter(|w| !w.is_zero()) {
            if sys::stop_requested() {
                return Err("stopped by a signal before start_s".into());
            }
            std::thread::sleep(wait.min(POLL));
        }
        sys::enter_netns(&self.src_ns).map_err(|e| format!("entering {}: {e}", self.src_ns))?;
        let mut stream = self.connect()?;
        stream.set_write_timeout(Some(POLL)).map_err(|e| format!("sender: {e}"))?;
        let mut data = Data::new(self.seed, self.index);
        let mut left = self.total;
        let mut last_progress = Instant::now();
        while left != Some(0) {
            if self.stopped() {
                return self.abort(stream);
            }
            if sys::stop_requested() {
                return Err("stopped by a signal".into());
            }
            let chunk = data.peek(left.unwrap_or(u64::MAX));
            match stream.write(chunk) {
                Ok(0) => return Err("the connection closed while sending".into()),
                Ok(n) => {
                    data.advance(n);
                    left = left.map(|l| l - n as u64);
                    last_progress = Instant::now();
                }
                Err(e) if would_block(&e) => {
                    if last_progress.elapsed() >= IDLE_TIMEOUT {
                        return Err(format!("nothing could be sent for {} s", IDLE_TIMEOUT.as_secs()));
                    }
                }
                // The receiver closes at the stop, perhaps just before the sender looks.
                Err(_) if self.stopped() => return self.abort(stream),
                Err(e) => return Err(format!("sending: {e}")),
            }
        }
        // Every byte is written: the end of the stream, then the receiver's
        // close once it has read them all (or its own end, which its
        // result explains).
        stream.shutdown(Shutdown::Write).map_err(|e| format!("sender: {e}"))?;
        stream.set_read_timeout(Some(POLL)).map_err(|e| format!("sender: {e}"))?;
        let mut byte = [0u8; 1];
        loop {
            match stream.read(&mut byte) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if would_block(&e) => {
                    if self.receiver_ended.load(Ordering::SeqCst) || sys::stop_requested() {
                        break;
                    }
                }
                // A reset after the receiver's close: the end.
                Err(_) => break,
            }
        }
        sys::tcp_counters(&stream).map_err(|e| format!("sender: TCP_INFO: {e}"))
    }

    /// The stop of a flow until `stop_s`: the connection is reset, its
    /// unsent data discarded, as the simulator's sender stops.
    fn abort(&self, stream: TcpStream) -> Result<TcpCounters, String> {
        let counters = sys::tcp_counters(&stream).unwrap_or_default();
        let _ = sock::setsockopt(&stream, sockopt::Linger, &libc::linger { l_onoff: 1, l_linger: 0 });
        Ok(counters)
    }

    /// A connection from the source's namespace with the flow's congestion
    /// control, chosen before the handshake; a refused attempt (the
    /// receiver still binding) is made again on a new socket until
    /// [`CONNECT_TIMEOUT`].
    fn connect(&self) -> Result<TcpStream, String> {
        let cc = &self.congestion_control;
        let deadline = Instant::now() + CONNECT_TIMEOUT;
        loop {
            let fd = sock::socket(AddressFamily::Inet, SockType::Stream, SockFlag::SOCK_CLOEXEC, None)
                .map_err(|e| format!("sender: a TCP socket: {e}"))?;
            sys::set_tcp_congestion(&fd, cc.as_str())
                .map_err(|e| format!("{}.congestion_control = \"{cc}\": {}", self.key, unavailable(cc, &e)))?;
            // SO_SNDTIMEO bounds a blocking connect too.
            let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
            sock::setsockopt(&fd, sockopt::SendTimeout, &TimeVal::milliseconds(left.as_millis() as i64))
                .map_err(|e| format!("sender: {e}"))?;
            match sock::connect(fd.as_raw_fd(), &SockaddrIn::from(self.addr)) {
                Ok(()) => return Ok(TcpStream::from(fd)),
                Err(Errno::ECONNREFUSED | Errno::EINTR)
                    if Instant::now() < deadline && !self.receiver_ended.load(Ordering::SeqCst) =>
                {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(Errno::EINPROGRESS | Errno::EAGAIN | Errno::ETIMEDOUT) => {
                    return Err(format!("no answer from {} within {} s", self.addr, CONNECT_TIMEOUT.as_secs()));
                }
                Err(e) => return Err(format!("connecting to {}: {e}", self.addr)),
            }
        }
    }

    /// The flow's result as a transfer's (`crate::traffic` fills the
    /// flow's result from it as from a transport transfer's).
    fn outcome(&self, r: Received, sent: Result<TcpCounters, String>) -> TransferOutcome {
        let start_s = self.start.as_secs_f64();
        let sender = sent.as_ref().copied().unwrap_or_default();
        // Before a connection the sender knows why (its congestion
        // control, no route, no answer); after it the receiver does (a
        // byte that differs, a stall), and the sender's error only follows.
        let error = match (r.error, sent) {
            (Some(rx), Err(tx)) if !r.connected => Some(format!("{tx} (receiver: {rx})")),
            (error, _) => error,
        };
        let (verified, bytes, end_s, after_end) = match (&error, self.total, self.stop) {
            (Some(_), ..) => (false, r.delivered, r.ended.as_secs_f64(), None),
            (None, Some(total), _) => match r.finished {
                Some(finished) => (true, total, finished.as_secs_f64(), None),
                // Stopped at the run's end: incomplete, every byte received checked.
                None => {
                    let end_s = self.run_end.as_secs_f64();
                    (true, r.delivered, end_s, Some((r.at_run_end.unwrap_or(r.delivered), None)))
                }
            },
            (None, None, stop) => (true, r.delivered, stop.unwrap_or(self.run_end).as_secs_f64(), None),
        };
        let duration_s = (end_s - start_s).max(0.0);
        TransferOutcome {
            verified,
            after_end,
            error,
            bytes_delivered: bytes,
            goodput_bps: meshbed_sim::report::goodput_bps(bytes, duration_s),
            duration_s,
            retransmissions: sender.retransmissions,
            datagrams_sent: sender.segs_out,
            datagrams_received: r.counters.segs_in,
            feedback_packets: r.counters.segs_out,
            trace: Vec::new(),
            // The kernel's TCP makes one attempt, paced by the kernel.
            failed_attempts: Vec::new(),
            pacing: None,
            // The kernel's TCP hears nothing from the routing daemons.
            routing_sender: None,
            routing_receiver: None,
        }
    }
}

/// A flow's data, the flow's own stream of the run's seed, a block at a
/// time (the sender writes it, the receiver checks against it).
struct Data {
    rng: meshbed_core::StreamRng,
    block: Box<[u8]>,
    /// Bytes of `block` already consumed.
    at: usize,
}

impl Data {
    fn new(seed: u64, index: usize) -> Data {
        let stream = meshbed_core::StreamId::new(meshbed_core::StreamKind::Transport, index as u64);
        Data { rng: meshbed_core::stream_rng(seed, stream), block: vec![0; BLOCK_BYTES].into(), at: BLOCK_BYTES }
    }

    /// The next bytes of the stream, at most `max` (at least one if `max`
    /// is not 0); [`Data::advance`] consumes them.
    fn peek(&mut self, max: u64) -> &[u8] {
        if self.at == self.block.len() {
            self.rng.fill_bytes(&mut self.block);
            self.at = 0;
        }
        let n = (self.block.len() - self.at).min(usize::try_from(max).unwrap_or(usize::MAX));
        &self.block[self.at..self.at + n]
    }

    fn advance(&mut self, n: usize) {
        self.at += n;
    }

    /// Checks `got` against the next bytes of the stream and consumes
    /// them: the offset in `got` of the first that differs, if one does.
    fn check(&mut self, got: &[u8]) -> Option<usize> {
        let mut off = 0;
        while off < got.len() {
            let expected = self.peek((got.len() - off) as u64);
            let n = expected.len();
            if let Some(k) = expected.iter().zip(&got[off..off + n]).position(|(a, b)| a != b) {
                return Some(off + k);
            }
            self.advance(n);
            off += n;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::tests::{refused_keys, CHAIN};

    #[test]
    fn the_data_checked_in_any_pieces_is_the_data_sent_in_blocks() {
        let mut sender = Data::new(7, 3);
        let mut sent = Vec::new();
        while sent.len() < 3 * BLOCK_BYTES + 100 {
            let chunk = sender.peek(5000).to_vec();
            sender.advance(chunk.len());
            sent.extend(chunk);
        }
        // The flow's stream, as `crate::transfer` draws a transfer's file.
        let mut whole = vec![0u8; sent.len() / 4 * 4];
        meshbed_core::stream_rng(7, meshbed_core::StreamId::new(meshbed_core::StreamKind::Transport, 3))
            .fill_bytes(&mut whole);
        assert!(sent.starts_with(&whole));
        let mut receiver = Data::new(7, 3);
        for piece in sent.chunks(1448) {
            assert_eq!(receiver.check(piece), None);
        }
        let mut other = Data::new(7, 4);
        assert!(other.check(&sent[..100]).is_some(), "another flow's stream differs");
        let mut corrupted = sent[..10_000].to_vec();
        corrupted[9_000] ^= 1;
        assert_eq!(Data::new(7, 3).check(&corrupted), Some(9_000));
    }

    #[test]
    fn ports_are_apart_from_the_udp_and_transport_flows_ports() {
        let max = meshbed_sim::scenario::MAX_FLOWS;
        let udp = crate::traffic::flow_port(0)..=crate::traffic::flow_port(max - 1);
        let tcp = kernel_tcp_port(0)..=kernel_tcp_port(max - 1);
        assert!(udp.end() < tcp.start() && *tcp.end() < 32_768, "{udp:?} {tcp:?}");
    }

    #[test]
    fn a_congestion_control_the_kernel_lacks_is_refused_with_the_kernels_list() {
        let flow = |name: &str| {
            let mut k = KernelTcpFlow::new(Amount::Bytes(1000));
            k.congestion_control = CongestionControl::new(name).unwrap();
            k
        };
        // Reno is built into every Linux kernel and always allowed.
        let mut refusal = Refusal::new("the emulator");
        check_congestion_control("flows[0]", &flow("reno"), &mut refusal);
        assert!(refusal.unsupported.is_empty(), "{refusal}");
        check_congestion_control("flows[1]", &flow("no_such_cc"), &mut refusal);
        let u = &refusal.unsupported[0];
        assert_eq!((u.key.as_str(), u.value.as_str()), ("flows[1].congestion_control", "\"no_such_cc\""));
        assert!(u.reason.contains("no such TCP congestion control") && u.reason.contains("reno"), "{u}");
        assert!(u.reason.contains(AVAILABLE), "{u}");
    }

    #[test]
    fn the_emulator_runs_kernel_tcp_of_bytes_or_until_stop_s_and_refuses_a_congestion_control_it_lacks() {
        let text = format!(
            "{CHAIN}[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"kernel-tcp\"\ncongestion_control = \"reno\"\nbytes = 1000\n\
             [[flows]]\nsrc = 2\ndst = 0\nprotocol = \"kernel-tcp\"\ncongestion_control = \"reno\"\nstop_s = 2.0\n"
        );
        assert!(refused_keys(&text).is_empty());
        let text = format!(
            "{CHAIN}[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"kernel-tcp\"\ncongestion_control = \"no_such_cc\"\nbytes = 1000\n\
             [[flows]]\nsrc = 0\ndst = 2\ntraffic = \"echo\"\n"
        );
        assert_eq!(refused_keys(&text), ["flows[0].congestion_control", "flows[1].traffic"]);
        // Refused before the emulation is made (this runs without root).
        let msg = crate::run_scenario(&Scenario::from_toml(&text).unwrap(), &crate::EmuOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(msg.starts_with("the emulator cannot run flows[0].congestion_control = \"no_such_cc\" (this host's kernel has no such TCP congestion control: it has "), "{msg}");
        assert!(msg.ends_with("nothing was started"), "{msg}");
        // A drawn flow by its template's key.
        let text = format!(
            "{CHAIN}[random_flows]\ncount = 2\n[random_flows.flow]\nprotocol = \"kernel-tcp\"\ncongestion_control = \"no_such_cc\"\nbytes = 1000\n"
        );
        assert_eq!(refused_keys(&text), ["random_flows.flow.congestion_control"]);
    }
}
