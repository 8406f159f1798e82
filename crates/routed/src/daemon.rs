//! The daemon's event loop.
//!
//! One thread waits on the control socket, the link feed (the emulator's
//! socket, or the host's neighbour events and station-dump timer), the
//! notice socket and the engine's next timer, and runs the engine for
//! each: every link-feed record reaches the engine in this loop. On-
//! demand routing adds a second thread for the NFQUEUE (the queue's
//! socket cannot join the first thread's wait): it takes each data packet,
//! asks the engine under the same lock, gives the verdict at once, and
//! wakes the first thread, whose next timer the packet may have moved
//! (a discovery starts). Within a wake-up the link feed is read before the
//! control socket: the medium sends a frame's power before the frame.

use crate::control::ControlSocket;
use crate::hostfeed::HostFeed;
use crate::kernel::{covering_prefix, KernelRoutes};
use crate::node::{Node, Verdict};
use crate::notices::NoticeServer;
use crate::queue::{Reinjector, Rules, REROUTE_MARK};
use crate::report::RoutedReport;
use crate::{control_port, LinkFeedSource, RoutedOptions};
use meshbed_net::linkfeed;
use meshbed_sim::scenario::Routing;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Packets the kernel may queue for the daemon before it drops them.
const QUEUE_MAX_LEN: u32 = 4096;

fn lock(node: &Mutex<Node>) -> MutexGuard<'_, Node> {
    // A panic in the other thread is a bug; its state is still the best
    // there is for removing the routes on the way out.
    node.lock().unwrap_or_else(|p| p.into_inner())
}

/// The longest the loop sleeps without looking at its flags: a signal may
/// be taken by the queue thread, whose wait it does not interrupt.
const FLAG_CHECK_NS: u64 = 100_000_000;

/// What tells a running daemon to stop or to report.
#[derive(Clone, Debug, Default)]
pub struct Flags {
    pub stop: Arc<AtomicBool>,
    pub report: Arc<AtomicBool>,
}

impl Flags {
    /// Flags that SIGINT, SIGTERM and SIGHUP (stop) and SIGUSR1 (report)
    /// raise: a daemon writes its counters when asked, as babeld and olsrd
    /// dump their state on a signal.
    pub fn from_signals() -> io::Result<Self> {
        let flags = Flags::default();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
            signal_hook::flag::register(sig, Arc::clone(&flags.stop))?;
        }
        signal_hook::flag::register(signal_hook::consts::SIGUSR1, Arc::clone(&flags.report))?;
        Ok(flags)
    }
}

/// Runs until `flags.stop` is raised. `ready` is called once the daemon's
/// sockets, routes and rules are in place; `on_report` with the counters
/// whenever `flags.report` is raised, and at the end.
pub fn run(
    options: &RoutedOptions,
    flags: &Flags,
    ready: impl FnOnce(),
    on_report: &mut dyn FnMut(&RoutedReport),
) -> io::Result<RoutedReport> {
    options.check().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let port = control_port(&options.routing).expect("checked");
    let me = options.nodes.addr(options.node).expect("checked");
    let control = ControlSocket::bind(&options.ifname, port)?;
    let mut kernel = KernelRoutes::new(&options.ifname)?;
    let on_demand = crate::holds_data_path(&options.routing);
    let mut rules = None;
    let mut queue = None;
    let mut reinjector = None;
    if on_demand {
        let (prefix, len) = covering_prefix(options.nodes.addrs());
        kernel.add_catch_all(prefix, len)?;
        let mut q = nfq::Queue::open()?;
        q.bind(options.queue_num)?;
        q.set_queue_max_len(options.queue_num, QUEUE_MAX_LEN)?;
        // The rules go in only once something listens on the queue.
        rules = Some(Rules::install(&options.ifname, prefix, len, me, port, options.queue_num)?);
        reinjector = Some(Reinjector::new()?);
        queue = Some(q);
    }
    let mut warnings = Vec::new();
    let mut feed = match &options.link_feed {
        LinkFeedSource::None => Feed::None,
        LinkFeedSource::Socket(path) => Feed::Socket(bind_feed(path)?),
        LinkFeedSource::Host { station_interval } => {
            let host = HostFeed::open(&options.ifname, options.nodes.clone(), options.node, *station_interval)?;
            if let Some(why) = host.no_stations() {
                warnings.push(format!(
                    "{}: no nl80211 station statistics, {why}: the host link feed reports neighbour reachability only (no signal strength, no retry-limit failures)",
                    options.ifname
                ));
                // A filter on a power nothing reports would not filter:
                // refused, never run as plain AODV.
                if let Routing::Aodv { ss_threshold_dbm: Some(t), .. } = options.routing {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "routing.ss_threshold_dbm = {t}: expected an interface that reports each neighbour's \
                             signal strength (nl80211), and {} has none ({why})",
                            options.ifname
                        ),
                    ));
                }
            }
            Feed::Host(Box::new(host))
        }
    };
    for w in &warnings {
        eprintln!("meshbed routed: warning: {w}");
    }
    // Without a power per neighbour the engine gets none (and no threshold
    // was set: refused above).
    let feed_power = match &feed {
        Feed::None => false,
        Feed::Socket(_) => true,
        Feed::Host(h) => h.no_stations().is_none(),
    };
    let notices = options.notice_socket.as_deref().map(NoticeServer::bind).transpose()?;
    let engine = options.routing.engine(options.node, options.seed).expect("checked");
    let report = RoutedReport {
        node: options.node,
        address: Some(me),
        protocol: options.protocol_name(),
        warnings,
        ..Default::default()
    };
    let node = Arc::new(Mutex::new(Node::new(
        engine,
        options.nodes.clone(),
        control,
        kernel,
        reinjector,
        notices,
        feed_power,
        options.link_rate_bps,
        report,
    )));
    lock(&node).start()?;
    let (wake_tx, wake_rx) = UnixDatagram::pair()?;
    wake_rx.set_nonblocking(true)?;
    wake_tx.set_nonblocking(true)?;
    if let Some(q) = queue {
        let node = Arc::clone(&node);
        std::thread::Builder::new().name("nfqueue".into()).spawn(move || queue_loop(q, &node, &wake_tx))?;
    }
    ready();
    let result = main_loop(&node, flags, &mut feed, &wake_rx, on_report);
    let mut n = lock(&node);
    n.flush_routes();
    drop(rules);
    let final_report = n.snapshot();
    on_report(&final_report);
    result.map(|_| final_report)
}

/// Where the loop reads link-layer feedback.
enum Feed {
    None,
    /// The emulator's medium.
    Socket(UnixDatagram),
    /// The host's kernel (boxed: its sockets and counters are far larger
    /// than the other kinds).
    Host(Box<HostFeed>),
}

fn bind_feed(path: &Path) -> io::Result<UnixDatagram> {
    let _ = std::fs::remove_file(path);
    let s = UnixDatagram::bind(path)
        .map_err(|e| io::Error::new(e.kind(), format!("the link feed socket {}: {e}", path.display())))?;
    s.set_nonblocking(true)?;
    Ok(s)
}

fn main_loop(
    node: &Mutex<Node>,
    flags: &Flags,
    feed: &mut Feed,
    wake: &UnixDatagram,
    on_report: &mut dyn FnMut(&RoutedReport),
) -> io::Result<()> {
    let mut buf = vec![0u8; 65536];
    // The descriptors to wait on, duplicated once and again only when the
    // notice socket's clients change (the sockets themselves live in the
    // node, behind the lock the queue thread takes too).
    let mut fds: Vec<OwnedFd> = Vec::new();
    let mut fds_generation = None;
    while !flags.stop.load(Ordering::SeqCst) {
        if flags.report.swap(false, Ordering::SeqCst) {
            let r = lock(node).snapshot();
            on_report(&r);
        }
        let timeout_ns = {
            let n = lock(node);
            let generation = n.notices().map(|s| s.generation());
            if fds_generation != Some(generation) {
                fds = wait_fds(&n, feed, wake)?;
                fds_generation = Some(generation);
            }
            let now = n.now();
            let engine_ns =
                n.poll_timeout().map_or(FLAG_CHECK_NS, |t| t.saturating_since(now).as_nanos().min(FLAG_CHECK_NS));
            let dump_ns = match &feed {
                Feed::Host(h) => h.next_dump().map(|t| t.saturating_duration_since(std::time::Instant::now())),
                _ => None,
            };
            dump_ns.map_or(engine_ns, |d| engine_ns.min(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)))
        };
        if !wait_readable(&fds, timeout_ns)? {
            continue;
        }
        let mut n = lock(node);
        match feed {
            Feed::None => {}
            Feed::Socket(f) => {
                while let Ok(len) = f.recv(&mut buf) {
                    match linkfeed::decode(&buf[..len]) {
                        Ok(records) => {
                            for r in records {
                                n.on_feed(r)?;
                            }
                        }
                        Err(_) => n.report.link_feed.malformed += 1,
                    }
                }
            }
            Feed::Host(h) => {
                let mut records = Vec::new();
                let mut counters = std::mem::take(&mut n.report.link_feed);
                h.read(std::time::Instant::now(), &mut |mac| n.node_of_mac(mac), &mut counters, &mut records);
                n.report.link_feed = counters;
                if let Some(e) = h.take_error() {
                    n.report.last_error = Some(e);
                }
                for r in records {
                    n.on_feed(r)?;
                }
            }
        }
        while let Some((len, from)) = n.control().recv(&mut buf)? {
            n.on_control(from, &buf[..len])?;
        }
        while wake.recv(&mut buf).is_ok() {}
        n.on_notice_socket()?;
        n.on_timeout()?;
    }
    Ok(())
}

/// Waits until one of `fds` is readable or `timeout_ns` passes; `false`
/// when a signal interrupted the wait.
fn wait_readable(fds: &[OwnedFd], timeout_ns: u64) -> io::Result<bool> {
    use nix::poll::{PollFd, PollFlags};
    let mut pfds: Vec<PollFd<'_>> = fds.iter().map(|fd| PollFd::new(fd.as_fd(), PollFlags::POLLIN)).collect();
    let timeout = nix::sys::time::TimeSpec::from(std::time::Duration::from_nanos(timeout_ns));
    match nix::poll::ppoll(&mut pfds, Some(timeout), None) {
        Ok(_) => Ok(true),
        Err(nix::errno::Errno::EINTR) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

fn wait_fds(n: &Node, feed: &Feed, wake: &UnixDatagram) -> io::Result<Vec<OwnedFd>> {
    let mut fds = vec![n.control().socket().as_fd().try_clone_to_owned()?, wake.as_fd().try_clone_to_owned()?];
    match feed {
        Feed::None => {}
        Feed::Socket(f) => fds.push(f.as_fd().try_clone_to_owned()?),
        Feed::Host(h) => fds.push(h.fd().try_clone_to_owned()?),
    }
    if let Some(s) = n.notices() {
        fds.push(s.listener().as_fd().try_clone_to_owned()?);
        for c in s.client_streams() {
            fds.push(c.as_fd().try_clone_to_owned()?);
        }
    }
    Ok(fds)
}

/// The NFQUEUE thread: a verdict for every data packet, at once.
fn queue_loop(mut q: nfq::Queue, node: &Mutex<Node>, wake: &UnixDatagram) {
    loop {
        let mut msg = match q.recv() {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                lock(node).report.last_error = Some(format!("nfqueue: {e}"));
                return;
            }
        };
        let hw = msg.get_hw_addr().map(<[u8]>::to_vec);
        let verdict = lock(node).on_packet(msg.get_hook(), hw.as_deref(), msg.get_payload());
        match verdict {
            Ok(Verdict::Accept { reroute }) => {
                if reroute {
                    msg.set_nfmark(REROUTE_MARK);
                }
                msg.set_verdict(nfq::Verdict::Accept);
            }
            Ok(Verdict::Drop) => msg.set_verdict(nfq::Verdict::Drop),
            Err(e) => {
                lock(node).report.last_error = Some(e.to_string());
                msg.set_verdict(nfq::Verdict::Drop);
            }
        }
        if q.verdict(msg).is_err() {
            return;
        }
        let _ = wake.send(&[1]);
    }
}
