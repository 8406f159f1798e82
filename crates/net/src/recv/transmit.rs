//! Where the receiver core writes its datagrams.

use crate::udp::Outbox;
use std::net::SocketAddr;

/// Where [`ReceiverCore::poll_transmit`](super::ReceiverCore::poll_transmit)
/// writes datagrams: the socket's [`Outbox`], or a list in tests and the
/// fuzz target.
pub trait Transmitter {
    /// A buffer of at least [`crate::udp::MAX_DATAGRAM`] bytes for the next
    /// datagram; `None` when full.
    fn buffer(&mut self) -> Option<&mut [u8]>;
    /// Sends the first `len` bytes just written into [`Transmitter::buffer`].
    fn commit(&mut self, len: usize, to: SocketAddr);
}

impl Transmitter for Outbox {
    fn buffer(&mut self) -> Option<&mut [u8]> {
        self.next_buf()
    }
    fn commit(&mut self, len: usize, to: SocketAddr) {
        Outbox::commit(self, len, Some(to));
    }
}

/// Datagrams collected in memory, with their destinations.
#[derive(Default, Debug)]
pub struct DatagramList {
    pub datagrams: Vec<(SocketAddr, Vec<u8>)>,
    buf: Vec<u8>,
}

impl Transmitter for DatagramList {
    fn buffer(&mut self) -> Option<&mut [u8]> {
        self.buf.resize(crate::udp::MAX_DATAGRAM, 0);
        Some(&mut self.buf)
    }
    fn commit(&mut self, len: usize, to: SocketAddr) {
        self.datagrams.push((to, self.buf[..len].to_vec()));
    }
}
