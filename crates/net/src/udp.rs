//! UDP socket I/O in batches.
//!
//! On Linux one `recvmmsg` takes up to [`BATCH`] messages and one
//! `sendmmsg` sends up to [`BATCH`] datagrams, and the wait for readiness is
//! a `ppoll` with a nanosecond timeout (ATP paces packets microseconds
//! apart, finer than `poll`'s milliseconds) with the thread's timer slack
//! set to 1 ns. Where the kernel offers them (Linux ≥ 4.18 and 5.0), UDP
//! segmentation offload and receive coalescing cut the per-datagram cost:
//! a run of equal-sized datagrams to one destination leaves in one
//! `sendmsg` with `UDP_SEGMENT` (GSO; the kernel, or the NIC, cuts it into
//! the datagrams), and with `UDP_GRO` one received message may hold several
//! datagrams of one size (`stride`), which [`RecvBatch`] hands out one by
//! one. At line rate ATP's and the TCP engines' data are such runs: every
//! data datagram of a transfer but the last has the same length. A kernel
//! that refuses a segmented send (no GSO, or a route whose MTU is smaller
//! than a segment) turns GSO off for that socket and the run goes as
//! separate datagrams. Elsewhere on Unix the same calls fall back to one
//! `recv_from`/`send_to` per datagram and `poll`. The socket is
//! non-blocking throughout: the one event loop of a process sleeps only in
//! [`BatchSocket::wait`].
//!
//! The system calls go through safe wrappers, so this module has no
//! `unsafe`: nix for `recvmmsg`, `sendmsg` with its control messages,
//! `ppoll`, `getrusage`, the socket options and the timer slack, socket2
//! for the buffer sizes, and rustix (already used for the receiver's files)
//! for `sendmmsg`, because nix's `sendmmsg` reports how many datagrams went
//! out only through an iterator that reads receive-side addresses a send
//! never wrote. nix's `MultiHeaders` are built for each call (small
//! allocations beside a system call that moves up to [`BATCH`] messages):
//! kept between calls they would carry the kernel's address length of one
//! call into the next (nix issue 2506) and make the batches `!Send`.

use std::io;
use std::net::{SocketAddr, UdpSocket};

/// The largest datagram the runtime sends or accepts. Engine datagrams are at
/// most 36 + 20·16 + 1436 = 1792 bytes; anything longer that arrives is
/// cut to this length, marked truncated, and then fails to parse.
pub const MAX_DATAGRAM: usize = 2048;
/// Messages per `recvmmsg`, datagrams per `sendmmsg` and per outbox.
pub const BATCH: usize = 32;
/// Bytes of one receive slot: a coalesced (GRO) message is at most an IP
/// packet, 64 KiB.
const SLOT_BYTES: usize = 1 << 16;
/// Most segments in one segmented send (Linux's `UDP_MAX_SEGMENTS` since
/// GSO came, 4.18).
const GSO_MAX_SEGMENTS: usize = 64;
/// Most bytes in one segmented send: an IPv4 packet's 65,535 less its
/// 20-byte header and UDP's 8, with room for IP options.
const GSO_MAX_BYTES: usize = 65_000;

/// One datagram of a [`RecvBatch`]: where in which slot.
#[derive(Copy, Clone, Debug, Default)]
struct Segment {
    slot: usize,
    start: usize,
    len: usize,
    truncated: bool,
}

/// Received datagrams, reused between calls.
pub struct RecvBatch {
    slots: Vec<Box<[u8]>>,
    addrs: [Option<SocketAddr>; BATCH],
    segments: Vec<Segment>,
    /// The last call filled every slot: more may be waiting.
    full: bool,
    /// Messages of the last call that held several datagrams.
    coalesced: usize,
}

impl Default for RecvBatch {
    fn default() -> Self {
        RecvBatch {
            slots: (0..BATCH).map(|_| vec![0u8; SLOT_BYTES].into_boxed_slice()).collect(),
            addrs: [None; BATCH],
            segments: Vec::with_capacity(BATCH),
            full: false,
            coalesced: 0,
        }
    }
}

impl RecvBatch {
    /// Datagrams the last call took.
    pub fn len(&self) -> usize {
        self.segments.len()
    }
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }
    /// Whether the last call filled every slot, so that more may be
    /// waiting (a loop that drains the socket calls again).
    pub fn was_full(&self) -> bool {
        self.full
    }
    /// The `i`-th datagram: source address, bytes, and whether it was cut
    /// short (longer than [`MAX_DATAGRAM`]).
    pub fn get(&self, i: usize) -> (Option<SocketAddr>, &[u8], bool) {
        let s = self.segments[i];
        (self.addrs[s.slot], &self.slots[s.slot][s.start..s.start + s.len], s.truncated)
    }

    /// Records slot `slot`'s message of `bytes` bytes from `addr`: one
    /// datagram, or with a coalescing `stride` one per `stride` bytes (the
    /// last may be shorter).
    fn add_message(&mut self, slot: usize, addr: Option<SocketAddr>, bytes: usize, stride: Option<usize>, cut: bool) {
        self.addrs[slot] = addr;
        match stride.filter(|&s| s > 0 && s < bytes) {
            Some(stride) => {
                self.coalesced += 1;
                for start in (0..bytes).step_by(stride) {
                    let len = stride.min(bytes - start);
                    let truncated = len > MAX_DATAGRAM;
                    self.segments.push(Segment { slot, start, len: len.min(MAX_DATAGRAM), truncated });
                }
            }
            None => {
                let truncated = cut || bytes > MAX_DATAGRAM;
                self.segments.push(Segment { slot, start: 0, len: bytes.min(MAX_DATAGRAM), truncated });
            }
        }
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

    /// How many queued datagrams from slot `from` on can leave as one
    /// segmented send: the same destination, the first's length for all
    /// but the last, which may be shorter (the kernel's rule for
    /// `UDP_SEGMENT`), within [`GSO_MAX_SEGMENTS`] and [`GSO_MAX_BYTES`].
    fn run_at(&self, from: usize) -> usize {
        let size = self.lens[from];
        if size == 0 {
            return 1;
        }
        let most = GSO_MAX_SEGMENTS.min(GSO_MAX_BYTES / size).max(1);
        let mut n = 1;
        while n < most && from + n < self.tail {
            let i = from + n;
            if self.dests[i] != self.dests[from] || self.lens[i] > size || self.lens[i] == 0 {
                break;
            }
            n += 1;
            if self.lens[i] < size {
                break;
            }
        }
        n
    }

    /// Datagrams from the head that do not start a run of two or more: they
    /// go together in one `sendmmsg`.
    fn singles_at_head(&self) -> usize {
        let mut i = self.head;
        while i < self.tail && self.run_at(i) == 1 {
            i += 1;
        }
        i - self.head
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
    /// Received messages that held several datagrams (`UDP_GRO`).
    pub coalesced_in: u64,
    pub send_calls: u64,
    pub datagrams_out: u64,
    /// Sends that carried a run of datagrams as one segmented message
    /// (`UDP_SEGMENT`).
    pub segmented_sends: u64,
    /// Sends the kernel refused for lack of buffer space (retried later).
    pub send_would_block: u64,
    /// Datagrams dropped because the kernel had no route for them, and ICMP
    /// "unreachable" errors (net or host) reported on receive: in a mesh
    /// routes come and go (a routing daemon removes a broken one and installs
    /// the repair), so these are losses the protocol recovers from, not
    /// failures of the transfer. ICMP "port unreachable" stays an error.
    pub no_route: u64,
}

/// Whether `e` says the network has no route now (a loss, in a mesh).
pub(crate) fn is_no_route(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::NetworkUnreachable | io::ErrorKind::HostUnreachable)
}

/// A non-blocking UDP socket with batched I/O.
pub struct BatchSocket {
    socket: UdpSocket,
    /// Runs of equal datagrams leave as one segmented send.
    segmentation: bool,
    pub counters: IoCounters,
}

impl BatchSocket {
    /// Binds `addr`, non-blocking, with 4 MiB socket buffers (or the
    /// system's cap, `net.core.rmem_max`/`wmem_max`), segmentation offload
    /// where the kernel has it and receive coalescing where it allows it.
    pub fn bind(addr: SocketAddr) -> io::Result<Self> {
        let socket = UdpSocket::bind(addr)?;
        socket.set_nonblocking(true)?;
        let segmentation = sys::offload(&socket);
        let s = BatchSocket { socket, segmentation, counters: IoCounters::default() };
        s.set_buffer_sizes(4 << 20);
        set_fine_timer_slack();
        Ok(s)
    }

    /// Sends every datagram on its own (no segmentation offload): what a
    /// kernel without GSO does, for tests.
    pub fn without_segmentation(mut self) -> Self {
        self.segmentation = false;
        self
    }

    /// Whether runs of equal datagrams leave as one segmented send.
    pub fn segments(&self) -> bool {
        self.segmentation
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

    /// Failure only leaves the default size, which is not an error.
    fn set_buffer_sizes(&self, bytes: usize) {
        let socket = socket2::SockRef::from(&self.socket);
        let _ = socket.set_recv_buffer_size(bytes);
        let _ = socket.set_send_buffer_size(bytes);
    }

    /// Takes what is waiting, up to [`BATCH`] messages (each one datagram or
    /// a coalesced run), without blocking. Returns how many datagrams (0
    /// when none); [`RecvBatch::was_full`] says whether to call again.
    pub fn recv_batch(&mut self, batch: &mut RecvBatch) -> io::Result<usize> {
        batch.segments.clear();
        batch.full = false;
        batch.coalesced = 0;
        let messages = match sys::recv_batch(&self.socket, batch) {
            Err(e) if is_no_route(&e) => {
                self.counters.no_route += 1;
                0
            }
            r => r?,
        };
        batch.full = messages == BATCH;
        self.counters.recv_calls += 1;
        self.counters.datagrams_in += batch.len() as u64;
        self.counters.coalesced_in += batch.coalesced as u64;
        Ok(batch.len())
    }

    /// Sends what the outbox holds, as far as the kernel takes it. Returns
    /// whether the outbox is now empty (false: wait until writable).
    pub fn flush(&mut self, outbox: &mut Outbox) -> io::Result<bool> {
        while !outbox.is_empty() {
            self.counters.send_calls += 1;
            let (result, segmented) = if !self.segmentation {
                (sys::send_batch(&self.socket, outbox, outbox.tail - outbox.head), false)
            } else {
                match outbox.singles_at_head() {
                    0 => {
                        let run = outbox.run_at(outbox.head);
                        (sys::send_segmented(&self.socket, outbox, run).map(|()| run), true)
                    }
                    singles => (sys::send_batch(&self.socket, outbox, singles), false),
                }
            };
            match result {
                Ok(n) => {
                    self.counters.datagrams_out += n as u64;
                    self.counters.segmented_sends += u64::from(segmented);
                    outbox.consumed(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.counters.send_would_block += 1;
                    return Ok(false);
                }
                Err(e) if segmented && sys::refuses_segmentation(&e) => {
                    // No GSO here after all, or a route whose MTU is below
                    // a segment: from now on every datagram goes alone
                    // (the kernel may fragment those).
                    self.segmentation = false;
                }
                Err(e) if is_no_route(&e) => {
                    let lost = if segmented { outbox.run_at(outbox.head) } else { 1 };
                    self.counters.no_route += lost as u64;
                    outbox.consumed(lost);
                }
                Err(e) => {
                    // Drop what failed (e.g. EMSGSIZE) so one bad datagram
                    // cannot wedge the queue; report the error.
                    outbox.consumed(if segmented { outbox.run_at(outbox.head) } else { 1 });
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
/// deadlines are 100 µs apart at the highest rate. Failure leaves the
/// default slack.
pub fn set_fine_timer_slack() {
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_timerslack(1);
}

/// CPU time (user + system) this process has used so far, all threads.
pub fn process_cpu_time() -> std::time::Duration {
    cpu_time(nix::sys::resource::UsageWho::RUSAGE_SELF)
}

/// CPU time (user + system) the calling thread has used so far (a
/// benchmark's receiving thread, measured apart from its sender); `None`
/// where the system does not count it per thread.
pub fn thread_cpu_time() -> Option<std::time::Duration> {
    #[cfg(target_os = "linux")]
    return Some(cpu_time(nix::sys::resource::UsageWho::RUSAGE_THREAD));
    #[cfg(not(target_os = "linux"))]
    return None;
}

fn cpu_time(who: nix::sys::resource::UsageWho) -> std::time::Duration {
    use nix::sys::resource::getrusage;
    use nix::sys::time::TimeValLike;
    match getrusage(who) {
        Ok(usage) => {
            let us = usage.user_time().num_microseconds() + usage.system_time().num_microseconds();
            std::time::Duration::from_micros(us.max(0) as u64)
        }
        Err(_) => std::time::Duration::ZERO,
    }
}

/// The one `PollFd` both platforms' `wait` poll on: readable always,
/// writable when asked.
fn poll_fd(socket: &UdpSocket, want_write: bool) -> [nix::poll::PollFd<'_>; 1] {
    use nix::poll::{PollFd, PollFlags};
    use std::os::fd::AsFd;
    let events = if want_write { PollFlags::POLLIN | PollFlags::POLLOUT } else { PollFlags::POLLIN };
    [PollFd::new(socket.as_fd(), events)]
}

/// What `poll` reported, or nothing ready when a signal interrupted it.
fn readiness(r: nix::Result<nix::libc::c_int>, fd: &nix::poll::PollFd<'_>) -> io::Result<Readiness> {
    use nix::poll::PollFlags;
    match r {
        Err(nix::errno::Errno::EINTR) => Ok(Readiness::default()),
        Err(e) => Err(e.into()),
        Ok(_) => {
            let rev = fd.revents().unwrap_or(PollFlags::empty());
            Ok(Readiness {
                // An error (ICMP unreachable) is reported by the next recv.
                readable: rev.intersects(PollFlags::POLLIN | PollFlags::POLLERR),
                writable: rev.contains(PollFlags::POLLOUT),
            })
        }
    }
}

#[cfg(target_os = "linux")]
mod sys {
    use super::*;
    use nix::sys::socket::{
        getsockopt, recvmmsg, sendmsg, setsockopt, sockopt, ControlMessage, ControlMessageOwned, MsgFlags,
        MultiHeaders, SockaddrStorage,
    };
    use rustix::net::addr::SocketAddrArg;
    use rustix::net::{sendmmsg, MMsgHdr, SendAncillaryBuffer, SendFlags, SocketAddrAny};
    use std::io::{IoSlice, IoSliceMut};
    use std::os::fd::AsRawFd;

    fn to_addr(name: &SockaddrStorage) -> Option<SocketAddr> {
        match (name.as_sockaddr_in(), name.as_sockaddr_in6()) {
            (Some(v4), _) => Some(SocketAddr::V4((*v4).into())),
            (None, Some(v6)) => Some(SocketAddr::V6((*v6).into())),
            _ => None,
        }
    }

    /// Turns receive coalescing on (failure: datagrams come one by one)
    /// and says whether the kernel knows `UDP_SEGMENT` (the probe
    /// quinn-udp makes: reading the option).
    pub(super) fn offload(socket: &UdpSocket) -> bool {
        let _ = setsockopt(socket, sockopt::UdpGroSegment, &true);
        getsockopt(socket, sockopt::UdpGsoSegment).is_ok()
    }

    /// Whether a segmented send failed for want of segmentation (no GSO in
    /// this kernel or device path, or a segment above the route's MTU),
    /// so that the same datagrams can go one by one.
    pub(super) fn refuses_segmentation(e: &io::Error) -> bool {
        matches!(
            e.raw_os_error(),
            Some(nix::libc::EIO | nix::libc::EINVAL | nix::libc::ENOPROTOOPT | nix::libc::EOPNOTSUPP)
        )
    }

    /// Returns the messages taken; their datagrams are in `batch`.
    pub(super) fn recv_batch(socket: &UdpSocket, batch: &mut RecvBatch) -> io::Result<usize> {
        let mut headers = MultiHeaders::<SockaddrStorage>::preallocate(BATCH, Some(nix::cmsg_space!(i32)));
        let mut messages: [(Option<SocketAddr>, usize, Option<usize>, bool); BATCH] = [(None, 0, None, false); BATCH];
        let mut n = 0;
        {
            let mut slots = batch.slots.iter_mut();
            let mut iovs: [[IoSliceMut<'_>; 1]; BATCH] =
                std::array::from_fn(|_| [IoSliceMut::new(&mut slots.next().expect("BATCH slots")[..])]);
            let received =
                match recvmmsg(socket.as_raw_fd(), &mut headers, iovs.iter_mut(), MsgFlags::MSG_DONTWAIT, None) {
                    Ok(received) => received,
                    Err(nix::errno::Errno::EAGAIN) => return Ok(0),
                    Err(e) => return Err(e.into()),
                };
            for (i, msg) in received.enumerate() {
                let stride = msg.cmsgs().ok().and_then(|mut c| {
                    c.find_map(|m| match m {
                        ControlMessageOwned::UdpGroSegments(s) => usize::try_from(s).ok(),
                        _ => None,
                    })
                });
                let cut = msg.flags.contains(MsgFlags::MSG_TRUNC);
                messages[i] = (msg.address.as_ref().and_then(to_addr), msg.bytes, stride, cut);
                n = i + 1;
            }
        }
        for (slot, &(addr, bytes, stride, cut)) in messages[..n].iter().enumerate() {
            batch.add_message(slot, addr, bytes, stride, cut);
        }
        Ok(n)
    }

    /// One `sendmmsg` of the first `count` queued datagrams; returns how
    /// many went.
    pub(super) fn send_batch(socket: &UdpSocket, outbox: &Outbox, count: usize) -> io::Result<usize> {
        let queued = |k: usize| (k < count).then_some(outbox.head + k);
        let iovs: [[IoSlice<'_>; 1]; BATCH] =
            std::array::from_fn(|k| [IoSlice::new(queued(k).map_or(&[][..], |i| &outbox.bufs[i][..outbox.lens[i]]))]);
        let names: [Option<SocketAddrAny>; BATCH] =
            std::array::from_fn(|k| queued(k).and_then(|i| outbox.dests[i]).map(|d| d.as_any()));
        let mut controls: [SendAncillaryBuffer<'_, '_, '_>; BATCH] = std::array::from_fn(|_| Default::default());
        let mut controls = controls.iter_mut();
        let mut hdrs: [MMsgHdr<'_>; BATCH] = std::array::from_fn(|k| {
            let control = controls.next().expect("BATCH control buffers");
            match &names[k] {
                Some(name) => MMsgHdr::new_with_addr(name, &iovs[k], control),
                None => MMsgHdr::new(&iovs[k], control),
            }
        });
        Ok(sendmmsg(socket, &mut hdrs[..count], SendFlags::empty())?)
    }

    /// The first `run` queued datagrams (equal sizes but the last, one
    /// destination) as one `sendmsg` with `UDP_SEGMENT`: the kernel cuts
    /// the concatenation of their buffers into the datagrams again.
    pub(super) fn send_segmented(socket: &UdpSocket, outbox: &Outbox, run: usize) -> io::Result<()> {
        let first = outbox.head;
        let iovs: Vec<IoSlice<'_>> =
            (first..first + run).map(|i| IoSlice::new(&outbox.bufs[i][..outbox.lens[i]])).collect();
        let size = u16::try_from(outbox.lens[first]).map_err(|_| io::Error::from_raw_os_error(nix::libc::EINVAL))?;
        let cmsgs = [ControlMessage::UdpGsoSegments(&size)];
        let dest = outbox.dests[first].map(SockaddrStorage::from);
        sendmsg(socket.as_raw_fd(), &iovs, &cmsgs, MsgFlags::empty(), dest.as_ref())?;
        Ok(())
    }

    pub(super) fn wait(
        socket: &UdpSocket,
        want_write: bool,
        timeout: Option<std::time::Duration>,
    ) -> io::Result<Readiness> {
        let mut fds = super::poll_fd(socket, want_write);
        let r = nix::poll::ppoll(&mut fds, timeout.map(nix::sys::time::TimeSpec::from), None);
        super::readiness(r, &fds[0])
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
mod sys {
    use super::*;

    pub(super) fn offload(_socket: &UdpSocket) -> bool {
        false
    }

    pub(super) fn refuses_segmentation(_e: &io::Error) -> bool {
        false
    }

    pub(super) fn send_segmented(_socket: &UdpSocket, _outbox: &Outbox, _run: usize) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }

    pub(super) fn recv_batch(socket: &UdpSocket, batch: &mut RecvBatch) -> io::Result<usize> {
        let mut n = 0;
        while n < BATCH {
            match socket.recv_from(&mut batch.slots[n]) {
                Ok((len, addr)) => {
                    batch.add_message(n, Some(addr), len, None, false);
                    n += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if n == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(n)
    }

    pub(super) fn send_batch(socket: &UdpSocket, outbox: &Outbox, count: usize) -> io::Result<usize> {
        let mut n = 0;
        for i in outbox.head..outbox.head + count {
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
        let mut fds = super::poll_fd(socket, want_write);
        // poll has millisecond resolution: round up so a deadline is never missed early.
        let ms = timeout.map_or(nix::poll::PollTimeout::NONE, |t| {
            let ms = t.as_micros().div_ceil(1000).min(i32::MAX as u128);
            nix::poll::PollTimeout::try_from(ms).unwrap_or(nix::poll::PollTimeout::MAX)
        });
        let r = nix::poll::poll(&mut fds, ms);
        super::readiness(r, &fds[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn recv_all(
        socket: &mut BatchSocket,
        batch: &mut RecvBatch,
        want: usize,
    ) -> Vec<(Option<SocketAddr>, Vec<u8>, bool)> {
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        while got.len() < want && Instant::now() < deadline {
            socket.wait(false, Some(deadline)).unwrap();
            socket.recv_batch(batch).unwrap();
            got.extend((0..batch.len()).map(|i| {
                let (addr, bytes, truncated) = batch.get(i);
                (addr, bytes.to_vec(), truncated)
            }));
        }
        got
    }

    /// One `sendmmsg` carries several datagrams to an explicit destination;
    /// `recvmmsg` returns them with the sender's address; an oversized one
    /// comes back cut to MAX_DATAGRAM and marked truncated.
    fn round_trip(local: SocketAddr) {
        let mut a = BatchSocket::bind(local).unwrap_or_else(|e| panic!("binding {local}: {e}"));
        let mut b = BatchSocket::bind(local).unwrap();
        let (a_addr, b_addr) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        let mut outbox = Outbox::default();
        let sent: Vec<Vec<u8>> = (1..=5u8).map(|k| vec![k; 100 * k as usize]).collect();
        for d in &sent {
            assert!(outbox.push(d, Some(b_addr)));
        }
        assert!(a.flush(&mut outbox).unwrap());
        assert_eq!((a.counters.send_calls, a.counters.datagrams_out), (1, 5));
        assert!(outbox.is_empty());

        let mut batch = RecvBatch::default();
        let got = recv_all(&mut b, &mut batch, sent.len());
        let want: Vec<_> = sent.iter().map(|d| (Some(a_addr), d.clone(), false)).collect();
        assert_eq!(got, want);
        assert!(b.counters.recv_calls < 5, "{:?}", b.counters);

        // Connected: no destination per datagram.
        a.connect(b_addr).unwrap();
        assert!(outbox.push(&[7; 3], None));
        assert!(a.flush(&mut outbox).unwrap());
        b.socket().send_to(&vec![9u8; MAX_DATAGRAM + 100], a_addr).unwrap();
        assert_eq!(recv_all(&mut b, &mut batch, 1), vec![(Some(a_addr), vec![7; 3], false)]);
        assert_eq!(recv_all(&mut a, &mut batch, 1), vec![(Some(b_addr), vec![9; MAX_DATAGRAM], true)]);
    }

    /// Runs of equal datagrams leave as segmented sends where the kernel
    /// offers them and arrive as the same datagrams, in order, whether the
    /// receiver coalesces (GRO) or not; a run ends at a shorter datagram or
    /// another destination. Without segmentation the same datagrams go one
    /// by one.
    #[test]
    fn segmented_runs_arrive_as_the_datagrams_they_were() {
        let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
        for segment in [true, false] {
            let mut a = BatchSocket::bind(local).unwrap();
            if !segment {
                a = a.without_segmentation();
            }
            // Every Linux since 4.18 has UDP GSO: there this test checks it.
            assert_eq!(a.segments(), segment && cfg!(target_os = "linux"));
            let mut b = BatchSocket::bind(local).unwrap();
            let mut c = BatchSocket::bind(local).unwrap();
            let (b_addr, c_addr) = (b.local_addr().unwrap(), c.local_addr().unwrap());
            // To b: 5 × 1472, one 700 (ends the run), 3 × 1472; to c: 2 × 300; to b: 1.
            let mut plan: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
            let mut k = 0u8;
            let mut add = |to: SocketAddr, len: usize, plan: &mut Vec<(SocketAddr, Vec<u8>)>| {
                k = k.wrapping_add(1);
                plan.push((to, (0..len).map(|i| k.wrapping_add(i as u8)).collect()));
            };
            for len in [1472, 1472, 1472, 1472, 1472, 700, 1472, 1472, 1472] {
                add(b_addr, len, &mut plan);
            }
            add(c_addr, 300, &mut plan);
            add(c_addr, 300, &mut plan);
            add(b_addr, 1472, &mut plan);
            let mut outbox = Outbox::default();
            for (to, d) in &plan {
                assert!(outbox.push(d, Some(*to)));
            }
            assert!(a.flush(&mut outbox).unwrap());
            assert!(outbox.is_empty());
            assert_eq!(a.counters.datagrams_out, plan.len() as u64);
            if a.segments() {
                // [6 to b], [3 to b], [2 to c], [1 to b]: three runs of two or
                // more, the lone last datagram in a sendmmsg of its own.
                assert_eq!((a.counters.segmented_sends, a.counters.send_calls), (3, 4), "{:?}", a.counters);
            } else {
                assert_eq!((a.counters.segmented_sends, a.counters.send_calls), (0, 1), "{:?}", a.counters);
            }
            let a_addr = Some(a.local_addr().unwrap());
            let mut batch = RecvBatch::default();
            let want = |to: SocketAddr| -> Vec<_> {
                plan.iter().filter(|(t, _)| *t == to).map(|(_, d)| (a_addr, d.clone(), false)).collect()
            };
            assert_eq!(recv_all(&mut b, &mut batch, 10), want(b_addr), "segmentation {}", a.segments());
            assert_eq!(recv_all(&mut c, &mut batch, 2), want(c_addr));
            assert_eq!(b.counters.datagrams_in, 10);
            if a.segments() {
                // Loopback hands a segmented send to a coalescing socket whole.
                assert!(b.counters.coalesced_in >= 1, "{:?}", b.counters);
            }
        }
    }

    #[test]
    fn batches_carry_addresses_lengths_and_truncation_ipv4() {
        round_trip("127.0.0.1:0".parse().unwrap());
    }

    /// Where the kernel has an IPv6 loopback (`::1` on `lo` in
    /// /proc/net/if_inet6) the same round trip works over it; where it has
    /// none, binding `[::1]` fails with an error, never a panic or a socket
    /// bound elsewhere. Either way something is asserted.
    #[test]
    fn batches_carry_addresses_lengths_and_truncation_ipv6() {
        let loopback6 = std::fs::read_to_string("/proc/net/if_inet6")
            .map(|t| t.lines().any(|l| l.starts_with("00000000000000000000000000000001")))
            .unwrap_or(false);
        let local: SocketAddr = "[::1]:0".parse().unwrap();
        if loopback6 {
            round_trip(local);
        } else {
            eprintln!("no IPv6 loopback on this host: checking that binding [::1] is refused instead");
            assert!(BatchSocket::bind(local).is_err(), "bound [::1] on a host without an IPv6 loopback");
        }
    }

    #[test]
    fn wait_honours_a_nanosecond_deadline_and_reports_readiness() {
        let a = BatchSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let t0 = Instant::now();
        assert_eq!(a.wait(false, Some(t0)).unwrap(), Readiness::default());
        assert_eq!(a.wait(false, Some(t0 + Duration::from_millis(20))).unwrap(), Readiness::default());
        assert!(t0.elapsed() >= Duration::from_millis(20));
        assert!(a.wait(true, None).unwrap().writable);
        a.socket().send_to(b"x", a.local_addr().unwrap()).unwrap();
        assert!(a.wait(false, Some(Instant::now() + Duration::from_secs(5))).unwrap().readable);
    }

    #[test]
    fn cpu_time_moves_forward() {
        let t0 = process_cpu_time();
        let mut x = 0u64;
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0 && process_cpu_time() > t0);
    }
}
