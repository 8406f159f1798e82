//! The medium's side of link-layer feedback (`meshbed_net::linkfeed`):
//! what each node's MAC knows, sent to the node's routing daemon.
//!
//! In the simulator every frame a node decodes reaches its routing engine
//! with its power (seed 003 §3.2's signal filter averages it), and a frame
//! that reaches the retry limit is a link break (RFC 3561 §6.11's link-layer
//! feedback). Here the engine runs in `meshbed routed` inside the node's
//! namespace, so the medium sends both to the Unix datagram socket the
//! daemon binds at `n<i>/link.sock` in the emulation's state directory.
//!
//! A frame's record is sent *before* the frame is written to the node's TAP,
//! so that the daemon, which reads its feed before its control socket, has
//! the power of a control packet when the packet itself arrives (the
//! simulator hands both together). Sending never blocks the medium: a
//! record the socket cannot take now (no daemon yet, or a full buffer) is
//! counted and dropped, as a driver under load would.

use meshbed_net::linkfeed::{self, LinkFeed};
use meshbed_radio::NodeId;
use serde::Serialize;
use std::io;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};

/// What the export did.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct LinkFeedCounters {
    pub heard_records: u64,
    pub failed_records: u64,
    /// Records no daemon took (not listening, or its buffer full).
    pub dropped_records: u64,
}

/// The per-node feed sockets.
pub struct LinkFeedExport {
    socket: UnixDatagram,
    paths: Vec<PathBuf>,
    buf: Vec<u8>,
    pub counters: LinkFeedCounters,
}

impl LinkFeedExport {
    /// Feeds for `nodes` nodes, whose daemons bind [`LinkFeedExport::path`]
    /// under `dir`.
    pub fn new(dir: &Path, nodes: usize) -> io::Result<Self> {
        let socket = UnixDatagram::unbound()?;
        socket.set_nonblocking(true)?;
        let paths = (0..nodes as NodeId).map(|n| Self::path(dir, n)).collect();
        Ok(LinkFeedExport { socket, paths, buf: Vec::new(), counters: LinkFeedCounters::default() })
    }

    /// Where node `node`'s daemon listens.
    pub fn path(dir: &Path, node: NodeId) -> PathBuf {
        dir.join(format!("n{node}")).join("link.sock")
    }

    /// Sends `feed` to `node`'s daemon now.
    pub fn send(&mut self, node: NodeId, feed: LinkFeed) {
        match feed {
            LinkFeed::Heard { .. } => self.counters.heard_records += 1,
            LinkFeed::Failed { .. } => self.counters.failed_records += 1,
        }
        self.buf.clear();
        linkfeed::encode(feed, &mut self.buf);
        let Some(path) = self.paths.get(node as usize) else { return };
        if self.socket.send_to(&self.buf, path).is_err() {
            self.counters.dropped_records += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_reach_the_bound_socket_and_missing_daemons_are_counted() {
        let dir = std::env::temp_dir().join(format!("meshbed-linkfeed-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("n1")).unwrap();
        let daemon = UnixDatagram::bind(LinkFeedExport::path(&dir, 1)).unwrap();
        let mut export = LinkFeedExport::new(&dir, 2).unwrap();
        export.send(1, LinkFeed::Heard { neighbour: 0, rx_power_dbm: -60.5 });
        export.send(1, LinkFeed::Failed { neighbour: 0 });
        export.send(0, LinkFeed::Failed { neighbour: 1 });
        let mut buf = [0u8; 64];
        let n = daemon.recv(&mut buf).unwrap();
        assert_eq!(linkfeed::decode(&buf[..n]).unwrap(), [LinkFeed::Heard { neighbour: 0, rx_power_dbm: -60.5 }]);
        let n = daemon.recv(&mut buf).unwrap();
        assert_eq!(linkfeed::decode(&buf[..n]).unwrap(), [LinkFeed::Failed { neighbour: 0 }]);
        assert_eq!(
            export.counters,
            LinkFeedCounters { heard_records: 1, failed_records: 2, dropped_records: 1 },
            "node 0 has no daemon"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
