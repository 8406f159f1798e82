//! The few Linux system calls the emulator needs, each behind a small safe
//! function: TAP devices, entering a network namespace, waiting on file
//! descriptors with a nanosecond timeout, and stop signals.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// `TUNSETIFF` = `_IOW('T', 202, int)`.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Opens a non-persistent TAP device called `name` (at most 15 bytes) in the
/// caller's network namespace, non-blocking. The device lives as long as the
/// descriptor, wherever it is moved: closing it (or the process dying)
/// removes the interface, which is what makes a crashed emulation leave no
/// interfaces behind.
pub fn open_tap(name: &str) -> io::Result<OwnedFd> {
    if name.is_empty() || name.len() > 15 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("interface name `{name}`: 1 to 15 bytes")));
    }
    let path = CString::new("/dev/net/tun").expect("no NUL");
    // SAFETY: a valid C string; the result is checked.
    let fd = check(unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) })?;
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ifreq is plain data; zeroed is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    ifr.ifr_ifru.ifru_flags = IFF_TAP | IFF_NO_PI;
    // SAFETY: TUNSETIFF takes a pointer to an ifreq that outlives the call.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, &mut ifr as *mut libc::ifreq) })?;
    Ok(fd)
}

/// Moves the calling thread into the network namespace `/run/netns/NAME`
/// (as `ip netns exec` does for a process). Only this thread moves; sockets
/// it opens afterwards, and processes it spawns, belong to that namespace.
pub fn enter_netns(name: &str) -> io::Result<()> {
    let path = format!("/run/netns/{name}");
    let file = std::fs::File::open(&path).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
    // SAFETY: a valid namespace descriptor; the result is checked.
    check(unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) })?;
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
pub fn wait_readable(fds: &[RawFd], timeout_ns: Option<u64>, ready: &mut [bool]) -> io::Result<bool> {
    let mut pfds: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    let ts =
        timeout_ns.map(|ns| libc::timespec { tv_sec: (ns / 1_000_000_000) as _, tv_nsec: (ns % 1_000_000_000) as _ });
    let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: pfds and ts live across the call; the result is checked.
    let r = unsafe { libc::ppoll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ts_ptr, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            ready.iter_mut().for_each(|r| *r = false);
            return Ok(false);
        }
        return Err(e);
    }
    for (r, p) in ready.iter_mut().zip(&pfds) {
        *r = p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0;
    }
    Ok(true)
}

/// Reads one frame; `Ok(None)` when nothing is waiting.
pub fn read_frame(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: buf is valid for writes of its length.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(n as usize))
}

/// Writes one frame; `Ok(false)` when the device would block (frame dropped).
pub fn write_frame(fd: RawFd, frame: &[u8]) -> io::Result<bool> {
    // SAFETY: frame is valid for reads of its length.
    let n = unsafe { libc::write(fd, frame.as_ptr().cast(), frame.len()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock => Ok(false),
            _ => Err(e),
        };
    }
    Ok(true)
}

/// Timer slack of this thread, in nanoseconds: the kernel may delay a
/// timed wake-up by up to this much to batch it with others (default
/// 50 µs). The medium's events are microseconds apart, so it asks for 1 ns.
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long; failure is harmless.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0);
    }
}

static STOP: AtomicBool = AtomicBool::new(false);
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_stop_signal(sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
}

/// Installs handlers for SIGINT, SIGTERM and SIGHUP that only set a flag
/// (see [`stop_requested`]). They are installed without `SA_RESTART`, so a
/// blocking wait returns with `EINTR` and the caller can tear down.
pub fn install_stop_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: sigaction with a handler that only touches atomics.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_stop_signal as *const () as usize;
            sa.sa_flags = 0;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
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
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) }
}

/// Sends `sig` to `pid`, ignoring a process that is already gone.
pub fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: plain kill(2).
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
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
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Chooses the kernel TCP congestion control (`reno`, `cubic`, ...) of a
/// socket (TCP_CONGESTION), before it connects.
pub fn set_tcp_congestion(fd: RawFd, name: &str) -> io::Result<()> {
    // SAFETY: the name buffer outlives the call; the result is checked.
    check(unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// The congestion control a TCP socket uses.
pub fn tcp_congestion(fd: RawFd) -> io::Result<String> {
    let mut buf = [0u8; 32];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf and len outlive the call; the result is checked.
    check(unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, buf.as_mut_ptr().cast(), &mut len) })?;
    let s = &buf[..len as usize];
    Ok(String::from_utf8_lossy(s.split(|&b| b == 0).next().unwrap_or(s)).into_owned())
}

/// Gives the calling thread real-time priority (SCHED_FIFO at `priority`),
/// so that the stacks' softirq work and other processes of the emulation do
/// not delay the medium's wake-ups. The kernel's real-time throttling
/// (95% of each second by default) keeps the machine usable.
pub fn set_realtime_priority(priority: i32) -> io::Result<()> {
    // SAFETY: sched_param is plain data; the result is checked.
    let param = libc::sched_param { sched_priority: priority };
    check(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) })?;
    Ok(())
}

/// Whether `path` is on a tmpfs (memory), where writing a small file never
/// waits for a disk.
pub fn is_tmpfs(path: &std::path::Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_encoded_bytes()) else { return false };
    // SAFETY: statfs is plain data; the path is a valid C string.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    unsafe { libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type as i64 == 0x0102_1994 }
}
