//! The receiver core on a UDP socket with the real clock.

use super::{ReceiveOptions, ReceiverCore, ReceiverCounters, ReceiverEvent};
use crate::clock::Clock;
use crate::framing::{remove_stale_temporaries, SinkKind};
use crate::udp::{BatchSocket, IoCounters, Outbox, RecvBatch};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration as StdDuration;

/// A bound receiver. [`Receiver::run`] is its event loop.
pub struct Receiver {
    socket: BatchSocket,
    core: ReceiverCore,
    clock: Clock,
}

impl Receiver {
    /// Binds the socket; for a directory sink, first checks the directory
    /// and removes the temporary files dead receivers left in it.
    pub fn bind(options: ReceiveOptions) -> io::Result<Self> {
        let mut stale = 0;
        if let SinkKind::Directory { dir, .. } = &options.sink {
            if !dir.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("output directory `{}` does not exist", dir.display()),
                ));
            }
            stale = remove_stale_temporaries(dir)?.len() as u64;
        }
        let socket = BatchSocket::bind(options.listen)?;
        let clock = Clock::new();
        let mut core = ReceiverCore::new(options);
        core.counters.stale_temporaries_removed = stale;
        core.trace_origin = clock.to_real(meshbed_core::Instant::ZERO);
        Ok(Receiver { socket, core, clock })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }
    pub fn counters(&self) -> ReceiverCounters {
        self.core.counters()
    }
    pub fn io_counters(&self) -> IoCounters {
        self.socket.counters
    }

    /// Runs until `stop` is set or `max_transfers` transfers have ended and
    /// lingered. Transfers still running at a stop are abandoned: their
    /// temporary files are removed.
    pub fn run(&mut self, stop: &AtomicBool, on_event: &mut dyn FnMut(ReceiverEvent)) -> io::Result<ReceiverCounters> {
        let mut batch = RecvBatch::default();
        let mut outbox = Outbox::default();
        let mut readable = true;
        let mut blocked = false;
        let mut next_progress = std::time::Instant::now();
        while !stop.load(Ordering::Relaxed) && !self.core.is_done() {
            let now = self.clock.now();
            if readable {
                for _ in 0..4 {
                    let n = match self.socket.recv_batch(&mut batch) {
                        Ok(n) => n,
                        // An ICMP error about an earlier send (a vanished
                        // sender); the engines' timeouts handle it.
                        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                        Err(e) => return Err(e),
                    };
                    for i in 0..n {
                        match batch.get(i) {
                            (Some(addr), bytes, truncated) => self.core.handle_datagram(now, addr, bytes, truncated),
                            (None, _, _) => self.core.count_malformed(),
                        }
                    }
                    if !batch.was_full() {
                        break;
                    }
                }
            }
            self.core.poll(now, on_event);
            if blocked {
                blocked = !self.socket.flush(&mut outbox).or_else(ignore_refused)?;
            }
            while !blocked {
                let done = self.core.poll_transmit(now, &mut outbox);
                blocked = !self.socket.flush(&mut outbox).or_else(ignore_refused)?;
                if done {
                    break;
                }
            }

            let real_now = std::time::Instant::now();
            let (active, lingering) = self.core.transfers();
            if real_now >= next_progress && active + lingering > 0 {
                on_event(ReceiverEvent::Progress(&self.core.progress(now)));
                next_progress = real_now + StdDuration::from_millis(100);
            }
            // Sleep until the earliest engine deadline or linger end, at most
            // 100 ms so that `stop` is noticed.
            let mut deadline = real_now + StdDuration::from_millis(100);
            if let Some(t) = self.core.next_deadline() {
                deadline = deadline.min(self.clock.to_real(t));
            }
            if blocked {
                deadline = deadline.max(real_now + StdDuration::from_millis(1));
            }
            readable = self.socket.wait(blocked, Some(deadline))?.readable;
        }
        // Abandon what is still running: Sink::drop removes temporary files.
        self.core.abandon();
        Ok(self.core.counters())
    }
}

fn ignore_refused(e: io::Error) -> io::Result<bool> {
    if e.kind() == io::ErrorKind::ConnectionRefused {
        Ok(true)
    } else {
        Err(e)
    }
}
