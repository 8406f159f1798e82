//! The daemon's side of the notice socket (`meshbed_net::notice`): the
//! transports on this node subscribe to a peer and hear of its route.

use meshbed_net::notice::{write_line, FromDaemon, LineReader, NoticeError, PathState, RouteState, ToDaemon};
use std::io;
use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// Most transports connected at once (each is a process on this node).
pub const MAX_CLIENTS: usize = 64;

struct Client {
    stream: UnixStream,
    reader: LineReader,
    /// Peers subscribed to, with the path last sent for each.
    peers: Vec<(Ipv4Addr, Option<Option<PathState>>)>,
}

/// What a client asked that the node must act on.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    PeerUnresponsive(Ipv4Addr),
}

#[derive(Clone, Debug, Default, serde::Serialize, PartialEq, Eq)]
pub struct NoticeCounters {
    pub clients_accepted: u64,
    pub clients_refused: u64,
    /// Clients dropped for a bad line or a full socket.
    pub clients_dropped: u64,
    pub route_notices_sent: u64,
    pub path_updates_sent: u64,
}

pub struct NoticeServer {
    listener: UnixListener,
    path: PathBuf,
    clients: Vec<Client>,
    /// Changes whenever a client comes or goes.
    generation: u64,
    pub counters: NoticeCounters,
}

impl NoticeServer {
    /// Listens at `path` (a stale socket file is replaced), readable and
    /// writable by its owner and group only.
    pub fn bind(path: &Path) -> io::Result<Self> {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path)
            .map_err(|e| io::Error::new(e.kind(), format!("the notice socket {}: {e}", path.display())))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))?;
        listener.set_nonblocking(true)?;
        Ok(NoticeServer {
            listener,
            path: path.to_path_buf(),
            clients: Vec::new(),
            generation: 0,
            counters: NoticeCounters::default(),
        })
    }

    /// A number that changes whenever a client comes or goes (the daemon
    /// then waits on another set of sockets).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn listener(&self) -> &UnixListener {
        &self.listener
    }

    pub fn client_streams(&self) -> impl Iterator<Item = &UnixStream> {
        self.clients.iter().map(|c| &c.stream)
    }

    /// Takes new connections.
    pub fn accept(&mut self) {
        while let Ok((stream, _)) = self.listener.accept() {
            if self.clients.len() >= MAX_CLIENTS || stream.set_nonblocking(true).is_err() {
                self.counters.clients_refused += 1;
                continue;
            }
            self.counters.clients_accepted += 1;
            self.generation += 1;
            self.clients.push(Client { stream, reader: LineReader::default(), peers: Vec::new() });
        }
    }

    /// Reads every client's lines; a client that sent a bad line or left is
    /// dropped. Subscriptions are recorded here; what the node must act on
    /// is returned.
    pub fn read(&mut self) -> Vec<Request> {
        let mut requests = Vec::new();
        let mut dropped = 0;
        let before = self.clients.len();
        self.clients.retain_mut(|c| match c.reader.read::<ToDaemon>(&mut c.stream) {
            Ok(msgs) => {
                for m in msgs {
                    match m {
                        ToDaemon::Subscribe { peer } => {
                            if !c.peers.iter().any(|(p, _)| *p == peer) && c.peers.len() < 16 {
                                c.peers.push((peer, None));
                            }
                        }
                        ToDaemon::PeerUnresponsive { peer } => requests.push(Request::PeerUnresponsive(peer)),
                    }
                }
                true
            }
            Err(NoticeError::Closed) => false,
            Err(_) => {
                dropped += 1;
                false
            }
        });
        self.counters.clients_dropped += dropped;
        self.generation += (self.clients.len() != before) as u64;
        requests
    }

    /// A route notice about `peer`, to every client subscribed to it.
    pub fn route(&mut self, peer: Ipv4Addr, state: RouteState) {
        let msg = FromDaemon::Route { peer, state };
        let mut sent = 0;
        self.send_where(|c| c.peers.iter().any(|(p, _)| *p == peer), &msg, &mut sent);
        self.counters.route_notices_sent += sent;
    }

    /// Sends each subscription its path if it changed; `path_of(peer)` is
    /// what routing knows now.
    pub fn update_paths(&mut self, path_of: &mut dyn FnMut(Ipv4Addr) -> Option<PathState>) {
        let mut sent = 0;
        let mut dropped = 0;
        self.clients.retain_mut(|c| {
            for (peer, last) in &mut c.peers {
                let now = path_of(*peer);
                if last.as_ref() == Some(&now) {
                    continue;
                }
                *last = Some(now);
                if write_line(&mut c.stream, &FromDaemon::Path { peer: *peer, path: now }).is_err() {
                    dropped += 1;
                    return false;
                }
                sent += 1;
            }
            true
        });
        self.counters.path_updates_sent += sent;
        self.counters.clients_dropped += dropped;
        self.generation += dropped;
    }

    fn send_where(&mut self, want: impl Fn(&Client) -> bool, msg: &FromDaemon, sent: &mut u64) {
        let mut dropped = 0;
        self.clients.retain_mut(|c| {
            if !want(c) {
                return true;
            }
            // A transport that does not read its notices is not waited for.
            if write_line(&mut c.stream, msg).is_err() {
                dropped += 1;
                return false;
            }
            *sent += 1;
            true
        });
        self.counters.clients_dropped += dropped;
        self.generation += dropped;
    }
}

impl Drop for NoticeServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_net::notice::NoticeClient;

    #[test]
    fn a_subscriber_hears_its_peer_only_and_paths_only_when_they_change() {
        let path = std::env::temp_dir().join(format!("meshbed-notice-{}.sock", std::process::id()));
        let mut server = NoticeServer::bind(&path).unwrap();
        let peer: Ipv4Addr = "10.0.0.5".parse().unwrap();
        let other: Ipv4Addr = "10.0.0.6".parse().unwrap();
        let mut client = NoticeClient::connect(&path, peer).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        server.accept();
        assert!(server.read().is_empty());
        let path4 = PathState { hop_count: 4, max_link_loss: 0.1, link_rate_bps: 11_000_000 };
        let mut lookup = |p: Ipv4Addr| (p == peer).then_some(path4);
        server.update_paths(&mut lookup);
        server.update_paths(&mut lookup);
        server.route(other, RouteState::Failed);
        server.route(peer, RouteState::Failed);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let got = client.poll().unwrap();
        assert_eq!(
            got,
            [FromDaemon::Path { peer, path: Some(path4) }, FromDaemon::Route { peer, state: RouteState::Failed }]
        );
        client.peer_unresponsive().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(server.read(), [Request::PeerUnresponsive(peer)]);
        assert_eq!((server.counters.route_notices_sent, server.counters.path_updates_sent), (1, 1));
    }
}
