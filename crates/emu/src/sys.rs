//! The few Linux system calls the emulator needs, each behind a small safe
//! function: TAP devices, entering a network namespace, waiting on file
//! descriptors with a nanosecond timeout, and stop signals.
//!
//! They go through nix's safe wrappers and take descriptors as `AsFd`.
//! `unsafe` is left in four places, each with the reason it is sound: the
//! `TUNSETIFF` ioctl (nix's ioctl macros generate `unsafe fn`s),
//! `sched_setscheduler` and `TCP_INFO` (no safe wrapper in nix) and the
//! stop handlers' `sigaction`.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags};
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::unistd::Pid;

const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;

/// `struct ifreq` as `TUNSETIFF` reads it: the name and the flags, and the
/// rest of the union zeroed, so no uninitialised byte reaches the kernel.
#[repr(C)]
struct TunRequest {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _rest: [u8; TUN_REQUEST_REST],
}
const TUN_REQUEST_REST: usize =
    std::mem::size_of::<libc::ifreq>() - libc::IFNAMSIZ - std::mem::size_of::<libc::c_short>();
const _: () = assert!(std::mem::size_of::<TunRequest>() == std::mem::size_of::<libc::ifreq>());

// `TUNSETIFF` = `_IOW('T', 202, int)`; despite the `int` it takes a pointer
// to an ifreq (linux/if_tun.h).
nix::ioctl_write_ptr_bad!(
    tun_set_iff,
    nix::request_code_write!(b'T', 202, std::mem::size_of::<libc::c_int>()),
    TunRequest
);

/// Opens a non-persistent TAP device called `name` (at most 15 bytes) in the
/// caller's network namespace, non-blocking. The device lives as long as the
/// descriptor, wherever it is moved: closing it (or the process dying)
/// removes the interface, which is what makes a crashed emulation leave no
/// interfaces behind.
pub fn open_tap(name: &str) -> io::Result<OwnedFd> {
    if name.is_empty() || name.len() > 15 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("interface name `{name}`: 1 to 15 bytes")));
    }
    // std opens with O_CLOEXEC.
    let tun = std::fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_NONBLOCK).open("/dev/net/tun")?;
    let fd = OwnedFd::from(tun);
    let mut req = TunRequest { name: [0; libc::IFNAMSIZ], flags: IFF_TAP | IFF_NO_PI, _rest: [0; TUN_REQUEST_REST] };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: `fd` is an open /dev/net/tun descriptor and `req` an
    // initialised ifreq-sized struct that outlives the call; TUNSETIFF
    // reads it (and writes back at most the name, within its bounds).
    unsafe { tun_set_iff(fd.as_raw_fd(), &req) }?;
    Ok(fd)
}

/// Moves the calling thread into the network namespace `/run/netns/NAME`
/// (as `ip netns exec` does for a process). Only this thread moves; sockets
/// it opens afterwards, and processes it spawns, belong to that namespace.
pub fn enter_netns(name: &str) -> io::Result<()> {
    let path = format!("/run/netns/{name}");
    let file = std::fs::File::open(&path).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
    nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET)?;
    Ok(())
}

/// Runs `f` on a new thread inside network namespace `name` and returns its
/// result. The calling thread stays where it is.
pub fn in_netns<T: Send + 'static>(name: &str, f: impl FnOnce() -> T + Send + 'static) -> io::Result<T> {
    let name = name.to_string();
    std::thread::spawn(move || -> io::Result<T> {
        enter_netns(&name)?;
        Ok(f())
    })
    .join()
    .map_err(|_| io::Error::other("thread inside the namespace panicked"))?
}

/// Waits until one of `fds` is readable or `timeout_ns` passes (`None`:
/// forever). Fills `ready[i]` with whether `fds[i]` is readable. Returns
/// `Ok(false)` when interrupted by a signal.
pub fn wait_readable(fds: &[impl AsFd], timeout_ns: Option<u64>, ready: &mut [bool]) -> io::Result<bool> {
    let mut pfds: Vec<PollFd<'_>> = fds.iter().map(|fd| PollFd::new(fd.as_fd(), PollFlags::POLLIN)).collect();
    let timeout = timeout_ns.map(|ns| nix::sys::time::TimeSpec::from(std::time::Duration::from_nanos(ns)));
    match nix::poll::ppoll(&mut pfds, timeout, None) {
        Err(Errno::EINTR) => {
            ready.iter_mut().for_each(|r| *r = false);
            return Ok(false);
        }
        Err(e) => return Err(e.into()),
        Ok(_) => {}
    }
    for (r, p) in ready.iter_mut().zip(&pfds) {
        *r = p.revents().is_some_and(|e| e.intersects(PollFlags::POLLIN | PollFlags::POLLERR | PollFlags::POLLHUP));
    }
    Ok(true)
}

/// Reads one frame; `Ok(None)` when nothing is waiting.
pub fn read_frame(fd: impl AsFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    match nix::unistd::read(fd, buf) {
        Ok(n) => Ok(Some(n)),
        Err(Errno::EAGAIN | Errno::EINTR) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Writes one frame; `Ok(false)` when the device would block (frame dropped).
pub fn write_frame(fd: impl AsFd, frame: &[u8]) -> io::Result<bool> {
    match nix::unistd::write(fd, frame) {
        Ok(_) => Ok(true),
        Err(Errno::EAGAIN) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Timer slack of this thread, in nanoseconds: the kernel may delay a
/// timed wake-up by up to this much to batch it with others (default
/// 50 µs). The medium's events are microseconds apart, so it asks for 1 ns.
/// Failure leaves the default, which is harmless.
pub fn set_timer_slack_ns(ns: u64) {
    let _ = nix::sys::prctl::set_timerslack(ns as libc::c_ulong);
}

static STOP: AtomicBool = AtomicBool::new(false);
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_stop_signal(sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
}

/// Installs handlers for SIGINT, SIGTERM and SIGHUP that only set a flag
/// (see [`stop_requested`]). They are installed without `SA_RESTART`, so a
/// blocking wait returns with `EINTR` and the caller can tear down: the
/// relay daemon sits in a blocking netlink `recv` that SIGTERM must end.
/// That is why this is not signal-hook, whose handlers always carry
/// `SA_RESTART` (the kernel would resume the `recv` and the relay would
/// stop only when the next packet arrives).
pub fn install_stop_handlers() {
    let action = SigAction::new(SigHandler::Handler(on_stop_signal), SaFlags::empty(), SigSet::empty());
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only stores to atomics, which is
        // async-signal-safe, and it replaces the default action (nothing
        // else in the process installs these signals' handlers).
        let _ = unsafe { nix::sys::signal::sigaction(sig, &action) };
    }
}

/// Whether a stop signal arrived (or [`request_stop`] was called).
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Asks every loop polling [`stop_requested`] to end.
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// Whether process `pid` exists.
pub fn process_alive(pid: u32) -> bool {
    // Signal 0 (None) only checks for existence; EPERM means it exists.
    matches!(nix::sys::signal::kill(Pid::from_raw(pid as libc::pid_t), None), Ok(()) | Err(Errno::EPERM))
}

/// Sends `sig` to `pid`, ignoring a process that is already gone (and a
/// number that is no signal).
pub fn signal(pid: u32, sig: libc::c_int) {
    if let Ok(sig) = Signal::try_from(sig) {
        let _ = nix::sys::signal::kill(Pid::from_raw(pid as libc::pid_t), sig);
    }
}

/// The start time of process `pid` in clock ticks since boot (field 22 of
/// `/proc/PID/stat`), to tell a live emulation from a reused pid.
pub fn process_start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the caller is root (the emulator needs CAP_NET_ADMIN and
/// CAP_SYS_ADMIN for namespaces, TAP devices and netfilter).
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Chooses the kernel TCP congestion control (`reno`, `cubic`, ...) of a
/// socket (TCP_CONGESTION), before it connects.
pub fn set_tcp_congestion(fd: impl AsFd, name: &str) -> io::Result<()> {
    nix::sys::socket::setsockopt(&fd, nix::sys::socket::sockopt::TcpCongestion, &name.into())?;
    Ok(())
}

/// The congestion control a TCP socket uses.
pub fn tcp_congestion(fd: impl AsFd) -> io::Result<String> {
    let name = nix::sys::socket::getsockopt(&fd, nix::sys::socket::sockopt::TcpCongestion)?;
    Ok(name.to_string_lossy().trim_end_matches('\0').to_string())
}

/// What the kernel counted on a TCP socket (`TCP_INFO`, linux/tcp.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpCounters {
    /// Segments sent, retransmissions included (`tcpi_segs_out`).
    pub segs_out: u64,
    /// Segments received (`tcpi_segs_in`).
    pub segs_in: u64,
    /// Segments retransmitted (`tcpi_total_retrans`).
    pub retransmissions: u64,
    /// Bytes the peer acknowledged (`tcpi_bytes_acked`).
    pub bytes_acked: u64,
}

/// `struct tcp_info` (linux/tcp.h) up to `tcpi_segs_in` (Linux 4.2): the
/// kernel copies at most this much, and a field an older kernel lacks
/// stays zero.
#[repr(C)]
#[derive(Default)]
struct TcpInfo {
    /// `tcpi_state` … the wscale and app-limited bit fields.
    _flags: [u8; 8],
    /// `tcpi_rto` … `tcpi_rcv_space`.
    _u32s: [u32; 23],
    total_retrans: u32,
    /// `tcpi_pacing_rate`, `tcpi_max_pacing_rate`.
    _pacing: [u64; 2],
    bytes_acked: u64,
    _bytes_received: u64,
    segs_out: u32,
    segs_in: u32,
}
const _: () = assert!(std::mem::size_of::<TcpInfo>() == 144);

/// A TCP socket's counters ([`TcpCounters`]).
pub fn tcp_counters(fd: impl AsFd) -> io::Result<TcpCounters> {
    let mut info = TcpInfo::default();
    let mut len = std::mem::size_of::<TcpInfo>() as libc::socklen_t;
    // SAFETY: nix has no TCP_INFO option. `info` is an initialised repr(C)
    // struct of `len` bytes that outlives the call; the kernel writes at
    // most `len` bytes into it and sets `len` to what it wrote.
    Errno::result(unsafe {
        libc::getsockopt(
            fd.as_fd().as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut TcpInfo).cast(),
            &mut len,
        )
    })?;
    Ok(TcpCounters {
        segs_out: info.segs_out.into(),
        segs_in: info.segs_in.into(),
        retransmissions: info.total_retrans.into(),
        bytes_acked: info.bytes_acked,
    })
}

/// Gives the calling thread real-time priority (SCHED_FIFO at `priority`),
/// so that the stacks' softirq work and other processes of the emulation do
/// not delay the medium's wake-ups. The kernel's real-time throttling
/// (95% of each second by default) keeps the machine usable.
pub fn set_realtime_priority(priority: i32) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: nix has no wrapper for sched_setscheduler; `param` is an
    // initialised sched_param that outlives the call, which only reads it.
    Errno::result(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) })?;
    Ok(())
}

/// Whether `path` is on a tmpfs (memory), where writing a small file never
/// waits for a disk.
pub fn is_tmpfs(path: &std::path::Path) -> bool {
    use nix::sys::statfs::{statfs, TMPFS_MAGIC};
    statfs(path).is_ok_and(|st| st.filesystem_type() == TMPFS_MAGIC)
}
