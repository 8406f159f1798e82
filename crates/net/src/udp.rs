//! UDP socket I/O in batches.
//!
//! On Linux one `recvmmsg` takes up to [`BATCH`] datagrams and one
//! `sendmmsg` sends up to [`BATCH`], and the wait for readiness is a
//! `ppoll` with a nanosecond timeout (ATP paces packets 100 µs apart, finer
//! than `poll`'s milliseconds) with the thread's timer slack set to 1 ns.
//! Elsewhere on Unix the same calls fall back to one `recv_from`/`send_to`
//! per datagram and `poll`. The socket is non-blocking throughout: the one
//! event loop of a process sleeps only in [`BatchSocket::wait`].
//!
//! We call libc directly rather than through nix or rustix: rustix has no
//! `recvmmsg`, nix's multi-header API allocates per call, and `libc` is
//! already in the workspace's dependency tree. quinn-udp would add GSO/GRO,
//! which needs equal-sized runs of datagrams; paced ATP sends one datagram
//! per wake-up, so it would rarely apply.

use std::io;
use std::net::{SocketAddr, UdpSocket};

/// The largest datagram the runtime sends or accepts. Engine datagrams are at
/// most 36 + 20·16 + 1436 = 1792 bytes; anything longer that arrives is
/// truncated by the kernel and then fails to parse.
pub const MAX_DATAGRAM: usize = 2048;
/// Datagrams per `recvmmsg`/`sendmmsg`.
pub const BATCH: usize = 32;

/// Received datagrams, reused between calls.
pub struct RecvBatch {
    bufs: Vec<[u8; MAX_DATAGRAM]>,
    lens: [usize; BATCH],
    addrs: [Option<SocketAddr>; BATCH],
    truncated: [bool; BATCH],
    n: usize,
}

impl Default for RecvBatch {
    fn default() -> Self {
        RecvBatch {
            bufs: vec![[0u8; MAX_DATAGRAM]; BATCH],
            lens: [0; BATCH],
            addrs: [None; BATCH],
            truncated: [false; BATCH],
            n: 0,
        }
    }
}

impl RecvBatch {
    pub fn len(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// The `i`-th datagram: source address, bytes, and whether the kernel cut
    /// it short (longer than [`MAX_DATAGRAM`]).
    pub fn get(&self, i: usize) -> (Option<SocketAddr>, &[u8], bool) {
        (self.addrs[i], &self.bufs[i][..self.lens[i]], self.truncated[i])
    }
}

/// Datagrams waiting to be sent, in order.
pub struct Outbox {
    bufs: Vec<[u8; MAX_DATAGRAM]>,
    lens: [usize; BATCH],
    dests: [Option<SocketAddr>; BATCH],
    head: usize,
    tail: usize,
}

impl Default for Outbox {
    fn default() -> Self {
        Outbox { bufs: vec![[0u8; MAX_DATAGRAM]; BATCH], lens: [0; BATCH], dests: [None; BATCH], head: 0, tail: 0 }
    }
}

impl Outbox {
    pub fn is_full(&self) -> bool {
        self.tail == BATCH
    }
    pub fn is_empty(&self) -> bool {
        self.head == self.tail
    }
    /// The next free buffer; write a datagram into it, then [`Outbox::commit`].
    /// `None` when full (flush first).
    pub fn next_buf(&mut self) -> Option<&mut [u8]> {
        (self.tail < BATCH).then(|| &mut self.bufs[self.tail][..])
    }
    /// Queues the `len` bytes just written into [`Outbox::next_buf`] for `dest`
    /// (`None` on a connected socket).
    pub fn commit(&mut self, len: usize, dest: Option<SocketAddr>) {
        debug_assert!(self.tail < BATCH && len <= MAX_DATAGRAM);
        self.lens[self.tail] = len;
        self.dests[self.tail] = dest;
        self.tail += 1;
    }
    /// Queues a copy of `bytes`; false when full.
    pub fn push(&mut self, bytes: &[u8], dest: Option<SocketAddr>) -> bool {
        match self.next_buf() {
            Some(buf) if bytes.len() <= buf.len() => {
                buf[..bytes.len()].copy_from_slice(bytes);
                self.commit(bytes.len(), dest);
                true
            }
            _ => false,
        }
    }
    fn consumed(&mut self, n: usize) {
        self.head += n;
        if self.head >= self.tail {
            self.head = 0;
            self.tail = 0;
        }
    }
}

/// What [`BatchSocket::wait`] saw.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Readiness {
    pub readable: bool,
    pub writable: bool,
}

/// Syscall counters, to see how well batching works.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IoCounters {
    pub recv_calls: u64,
    pub datagrams_in: u64,
    pub send_calls: u64,
    pub datagrams_out: u64,
    /// Sends the kernel refused for lack of buffer space (retried later).
    pub send_would_block: u64,
}

/// A non-blocking UDP socket with batched I/O.
pub struct BatchSocket {
    socket: UdpSocket,
    pub counters: IoCounters,
}

impl BatchSocket {
    /// Binds `addr`, non-blocking, with 4 MiB socket buffers (or the
    /// system's cap, `net.core.rmem_max`/`wmem_max`).
    pub fn bind(addr: SocketAddr) -> io::Result<Self> {
        let socket = UdpSocket::bind(addr)?;
        socket.set_nonblocking(true)?;
        let s = BatchSocket { socket, counters: IoCounters::default() };
        s.set_buffer_sizes(4 << 20);
        set_fine_timer_slack();
        Ok(s)
    }

    /// Sends and receives only to and from `peer`; the kernel then reports an
    /// ICMP port-unreachable as `ConnectionRefused` on the next call.
    pub fn connect(&self, peer: SocketAddr) -> io::Result<()> {
        self.socket.connect(peer)
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    pub fn socket(&self) -> &UdpSocket {
        &self.socket
    }

    #[cfg(unix)]
    fn set_buffer_sizes(&self, bytes: libc::c_int) {
        use std::os::fd::AsRawFd;
        let fd = self.socket.as_raw_fd();
        for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
            // SAFETY: a valid fd and a pointer to a c_int of the given size.
            // Failure only leaves the default size, which is not an error.
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    opt,
                    (&bytes as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                );
            }
        }
    }

    /// Takes every datagram waiting, up to [`BATCH`], without blocking.
    /// Returns how many (0 when none).
    pub fn recv_batch(&mut self, batch: &mut RecvBatch) -> io::Result<usize> {
        batch.n = 0;
        let n = sys::recv_batch(&self.socket, batch)?;
        self.counters.recv_calls += 1;
        self.counters.datagrams_in += n as u64;
        batch.n = n;
        Ok(n)
    }

    /// Sends what the outbox holds, as far as the kernel takes it. Returns
    /// whether the outbox is now empty (false: wait until writable).
    pub fn flush(&mut self, outbox: &mut Outbox) -> io::Result<bool> {
        while !outbox.is_empty() {
            self.counters.send_calls += 1;
            match sys::send_batch(&self.socket, outbox) {
                Ok(n) => {
                    self.counters.datagrams_out += n as u64;
                    outbox.consumed(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.counters.send_would_block += 1;
                    return Ok(false);
                }
                Err(e) => {
                    // Drop the datagram that failed (e.g. EMSGSIZE) so one
                    // bad datagram cannot wedge the queue; report the error.
                    outbox.consumed(1);
                    return Err(e);
                }
            }
        }
        Ok(true)
    }

    /// Sleeps until the socket is readable (or writable, if `want_write`),
    /// or until `deadline`; returns at once if the deadline has passed.
    pub fn wait(&self, want_write: bool, deadline: Option<std::time::Instant>) -> io::Result<Readiness> {
        let timeout = deadline.map(|d| d.saturating_duration_since(std::time::Instant::now()));
        sys::wait(&self.socket, want_write, timeout)
    }
}

/// Asks the kernel to wake this thread within 1 ns of a timeout rather than
/// the default 50 µs of slack (Linux `PR_SET_TIMERSLACK`): ATP's pacing
/// deadlines are 100 µs apart at the highest rate.
pub fn set_fine_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with an integer argument; failure leaves the default slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// CPU time (user + system) this process has used so far, all threads.
pub fn process_cpu_time() -> std::time::Duration {
    #[cfg(unix)]
    {
        // SAFETY: getrusage fills a zeroed rusage struct.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_SELF, &mut usage);
            usage
        };
        let tv = |t: libc::timeval| std::time::Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
        tv(usage.ru_utime) + tv(usage.ru_stime)
    }
    #[cfg(not(unix))]
    {
        std::time::Duration::ZERO
    }
}

/// The one `pollfd` both platforms' `wait` poll on: readable always,
/// writable when asked.
#[cfg(unix)]
fn poll_fds(socket: &UdpSocket, want_write: bool) -> [libc::pollfd; 1] {
    use std::os::fd::AsRawFd;
    let events = if want_write { libc::POLLIN | libc::POLLOUT } else { libc::POLLIN };
    [libc::pollfd { fd: socket.as_raw_fd(), events, revents: 0 }]
}

#[cfg(target_os = "linux")]
mod sys {
    use super::*;
    use std::os::fd::AsRawFd;

    fn to_addr(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
        match storage.ss_family as libc::c_int {
            libc::AF_INET => {
                // SAFETY: the family says this is a sockaddr_in.
                let a: &libc::sockaddr_in = unsafe { &*(storage as *const libc::sockaddr_storage).cast() };
                let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
                Some(SocketAddr::from((ip, u16::from_be(a.sin_port))))
            }
            libc::AF_INET6 => {
                // SAFETY: the family says this is a sockaddr_in6.
                let a: &libc::sockaddr_in6 = unsafe { &*(storage as *const libc::sockaddr_storage).cast() };
                let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
                Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                    ip,
                    u16::from_be(a.sin6_port),
                    a.sin6_flowinfo,
                    a.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }

    fn from_addr(addr: &SocketAddr, storage: &mut libc::sockaddr_storage) -> libc::socklen_t {
        match addr {
            SocketAddr::V4(a) => {
                // SAFETY: sockaddr_storage is large enough and suitably aligned for sockaddr_in.
                let s: &mut libc::sockaddr_in = unsafe { &mut *(storage as *mut libc::sockaddr_storage).cast() };
                s.sin_family = libc::AF_INET as libc::sa_family_t;
                s.sin_port = a.port().to_be();
                s.sin_addr = libc::in_addr { s_addr: u32::from(*a.ip()).to_be() };
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t
            }
            SocketAddr::V6(a) => {
                // SAFETY: as above, for sockaddr_in6.
                let s: &mut libc::sockaddr_in6 = unsafe { &mut *(storage as *mut libc::sockaddr_storage).cast() };
                s.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                s.sin6_port = a.port().to_be();
                s.sin6_flowinfo = a.flowinfo();
                s.sin6_addr = libc::in6_addr { s6_addr: a.ip().octets() };
                s.sin6_scope_id = a.scope_id();
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t
            }
        }
    }

    pub(super) fn recv_batch(socket: &UdpSocket, batch: &mut RecvBatch) -> io::Result<usize> {
        // SAFETY (whole function): the iovecs point into `batch.bufs`, the
        // names into `names`, all alive for the call; the kernel writes at
        // most iov_len / msg_namelen bytes and reports lengths we read back.
        let mut names: [libc::sockaddr_storage; BATCH] = unsafe { std::mem::zeroed() };
        let mut iovecs: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for i in 0..BATCH {
            iovecs[i] = libc::iovec { iov_base: batch.bufs[i].as_mut_ptr().cast(), iov_len: MAX_DATAGRAM };
            hdrs[i].msg_hdr.msg_iov = &mut iovecs[i];
            hdrs[i].msg_hdr.msg_iovlen = 1;
            hdrs[i].msg_hdr.msg_name = (&mut names[i] as *mut libc::sockaddr_storage).cast();
            hdrs[i].msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        }
        let n = unsafe {
            libc::recvmmsg(
                socket.as_raw_fd(),
                hdrs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock { Ok(0) } else { Err(e) };
        }
        let n = n as usize;
        for i in 0..n {
            batch.lens[i] = (hdrs[i].msg_len as usize).min(MAX_DATAGRAM);
            batch.addrs[i] = to_addr(&names[i]);
            batch.truncated[i] = hdrs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        }
        Ok(n)
    }

    pub(super) fn send_batch(socket: &UdpSocket, outbox: &mut Outbox) -> io::Result<usize> {
        let count = outbox.tail - outbox.head;
        // SAFETY: as in recv_batch; the kernel only reads these buffers.
        let mut names: [libc::sockaddr_storage; BATCH] = unsafe { std::mem::zeroed() };
        let mut iovecs: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for k in 0..count {
            let i = outbox.head + k;
            iovecs[k] = libc::iovec { iov_base: outbox.bufs[i].as_mut_ptr().cast(), iov_len: outbox.lens[i] };
            hdrs[k].msg_hdr.msg_iov = &mut iovecs[k];
            hdrs[k].msg_hdr.msg_iovlen = 1;
            if let Some(dest) = &outbox.dests[i] {
                hdrs[k].msg_hdr.msg_namelen = from_addr(dest, &mut names[k]);
                hdrs[k].msg_hdr.msg_name = (&mut names[k] as *mut libc::sockaddr_storage).cast();
            }
        }
        let n = unsafe { libc::sendmmsg(socket.as_raw_fd(), hdrs.as_mut_ptr(), count as libc::c_uint, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    pub(super) fn wait(
        socket: &UdpSocket,
        want_write: bool,
        timeout: Option<std::time::Duration>,
    ) -> io::Result<Readiness> {
        let mut fds = super::poll_fds(socket, want_write);
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: t.subsec_nanos() as libc::c_long,
        });
        let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: one valid pollfd, a valid or null timespec, no signal mask.
        let r = unsafe { libc::ppoll(fds.as_mut_ptr(), 1, ts_ptr, std::ptr::null()) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(Readiness::default()) } else { Err(e) };
        }
        let rev = fds[0].revents;
        Ok(Readiness {
            // An error (ICMP unreachable) is reported by the next recv.
            readable: rev & (libc::POLLIN | libc::POLLERR) != 0,
            writable: rev & libc::POLLOUT != 0,
        })
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
mod sys {
    use super::*;
    use std::os::fd::AsRawFd;

    pub(super) fn recv_batch(socket: &UdpSocket, batch: &mut RecvBatch) -> io::Result<usize> {
        let mut n = 0;
        while n < BATCH {
            match socket.recv_from(&mut batch.bufs[n]) {
                Ok((len, addr)) => {
                    batch.lens[n] = len;
                    batch.addrs[n] = Some(addr);
                    batch.truncated[n] = false;
                    n += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if n == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(n)
    }

    pub(super) fn send_batch(socket: &UdpSocket, outbox: &mut Outbox) -> io::Result<usize> {
        let mut n = 0;
        for i in outbox.head..outbox.tail {
            let bytes = &outbox.bufs[i][..outbox.lens[i]];
            let r = match outbox.dests[i] {
                Some(dest) => socket.send_to(bytes, dest),
                None => socket.send(bytes),
            };
            match r {
                Ok(_) => n += 1,
                Err(e) if n == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(n)
    }

    pub(super) fn wait(
        socket: &UdpSocket,
        want_write: bool,
        timeout: Option<std::time::Duration>,
    ) -> io::Result<Readiness> {
        let mut fds = super::poll_fds(socket, want_write);
        // poll has millisecond resolution: round up so a deadline is never missed early.
        let ms = timeout.map_or(-1, |t| t.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int);
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 1, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(Readiness::default()) } else { Err(e) };
        }
        let rev = fds[0].revents;
        Ok(Readiness { readable: rev & (libc::POLLIN | libc::POLLERR) != 0, writable: rev & libc::POLLOUT != 0 })
    }
}
