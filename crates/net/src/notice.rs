//! What a node's routing daemon (`meshbed routed`) and the transports on
//! the same node tell each other, over a local stream socket, one JSON
//! object per line.
//!
//! In the simulator a node's routing engine and its transports share a
//! process: a lost or found route to a flow's peer becomes a notice to
//! that flow's end (ELFN, seed 002 §2.4, §4.3), and MTL's ends read the
//! path's hop count and worst link (seed 004 §III.B–C). Outside it they
//! are separate programs, and this is how the same information crosses:
//!
//! * a transport connects and [`ToDaemon::Subscribe`]s to its peer;
//! * the daemon answers at once with what it knows of the path
//!   ([`FromDaemon::Path`]), then sends every route notice about that peer
//!   ([`FromDaemon::Route`]) and every change of the path;
//! * a transport whose peer stopped answering says so
//!   ([`ToDaemon::PeerUnresponsive`], MTL's transport module to its routing
//!   module, seed 004 §III.B).
//!
//! Both ends bound what they read ([`MAX_LINE_BYTES`]) and refuse what does
//! not parse: the socket is local (its file's permissions say who may
//! connect) but its peer is still another program.

use meshbed_proto::{PathInfo, RouteNotice};
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::net::Ipv4Addr;
use std::os::unix::net::UnixStream;
use std::path::Path;

/// The longest line either end accepts.
pub const MAX_LINE_BYTES: usize = 4096;

/// A transport to its node's routing daemon.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ToDaemon {
    /// Send me what concerns my route to `peer`.
    Subscribe { peer: Ipv4Addr },
    /// `peer` stopped answering.
    PeerUnresponsive { peer: Ipv4Addr },
}

/// The route to the peer failed or came back.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RouteState {
    Failed,
    Reestablished,
}

impl From<RouteNotice> for RouteState {
    fn from(n: RouteNotice) -> Self {
        match n {
            RouteNotice::Failed => RouteState::Failed,
            RouteNotice::Reestablished => RouteState::Reestablished,
        }
    }
}

impl From<RouteState> for RouteNotice {
    fn from(s: RouteState) -> Self {
        match s {
            RouteState::Failed => RouteNotice::Failed,
            RouteState::Reestablished => RouteNotice::Reestablished,
        }
    }
}

/// [`PathInfo`] on the socket.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathState {
    pub hop_count: u32,
    /// P_max (seed 004 eq. 4).
    pub max_link_loss: f64,
    pub link_rate_bps: u64,
}

impl From<PathInfo> for PathState {
    fn from(p: PathInfo) -> Self {
        PathState { hop_count: p.hop_count, max_link_loss: p.max_link_loss, link_rate_bps: p.link_rate_bps }
    }
}

impl From<PathState> for PathInfo {
    fn from(p: PathState) -> Self {
        PathInfo { hop_count: p.hop_count, max_link_loss: p.max_link_loss, link_rate_bps: p.link_rate_bps }
    }
}

/// The daemon to a transport.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum FromDaemon {
    /// A route notice about `peer`.
    Route { peer: Ipv4Addr, state: RouteState },
    /// What routing now knows of the path to `peer` (`None`: no route).
    Path { peer: Ipv4Addr, path: Option<PathState> },
}

/// A problem with the socket's bytes.
#[derive(Debug, thiserror::Error)]
pub enum NoticeError {
    #[error("a notice line is longer than {MAX_LINE_BYTES} bytes")]
    LineTooLong,
    #[error("a notice line does not parse: {0}")]
    Parse(#[from] serde_json::Error),
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error("the routing daemon closed the notice socket")]
    Closed,
}

/// Lines read from a non-blocking stream, each at most [`MAX_LINE_BYTES`].
#[derive(Debug, Default)]
pub struct LineReader {
    buf: Vec<u8>,
}

impl LineReader {
    /// Reads what `stream` has now and returns the whole lines parsed as
    /// `T`. `Err(Closed)` once the peer has closed and every line is out.
    pub fn read<T: serde::de::DeserializeOwned>(&mut self, stream: &mut impl Read) -> Result<Vec<T>, NoticeError> {
        let mut chunk = [0u8; 2048];
        let mut closed = false;
        loop {
            match stream.read(&mut chunk) {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    if self.buf.len() > 2 * MAX_LINE_BYTES {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
        }
        let mut out = Vec::new();
        while let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
            if end > MAX_LINE_BYTES {
                return Err(NoticeError::LineTooLong);
            }
            let line: Vec<u8> = self.buf.drain(..=end).collect();
            out.push(serde_json::from_slice(&line[..end])?);
        }
        if self.buf.len() > MAX_LINE_BYTES {
            return Err(NoticeError::LineTooLong);
        }
        if closed && out.is_empty() {
            return Err(NoticeError::Closed);
        }
        Ok(out)
    }
}

/// Writes `msg` as one line.
pub fn write_line<T: Serialize>(stream: &mut impl Write, msg: &T) -> io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(io::Error::other)?;
    line.push(b'\n');
    stream.write_all(&line)
}

/// A transport's connection to its node's routing daemon.
#[derive(Debug)]
pub struct NoticeClient {
    stream: UnixStream,
    reader: LineReader,
    peer: Ipv4Addr,
}

impl NoticeClient {
    /// Connects to the daemon's socket at `path` and subscribes to `peer`.
    pub fn connect(path: &Path, peer: Ipv4Addr) -> io::Result<Self> {
        let mut stream = UnixStream::connect(path)
            .map_err(|e| io::Error::new(e.kind(), format!("the routing daemon's socket {}: {e}", path.display())))?;
        write_line(&mut stream, &ToDaemon::Subscribe { peer })?;
        stream.set_nonblocking(true)?;
        Ok(NoticeClient { stream, reader: LineReader::default(), peer })
    }

    /// What the daemon sent since the last call.
    pub fn poll(&mut self) -> Result<Vec<FromDaemon>, NoticeError> {
        self.reader.read(&mut self.stream)
    }

    /// Tells the daemon the peer stopped answering.
    pub fn peer_unresponsive(&mut self) -> io::Result<()> {
        // A short line on a local socket: a full buffer would mean the daemon
        // is stuck, and then the notice is moot.
        match write_line(&mut self.stream, &ToDaemon::PeerUnresponsive { peer: self.peer }) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            r => r,
        }
    }

    pub fn stream(&self) -> &UnixStream {
        &self.stream
    }
}

/// What a transport end heard from its routing daemon (reported by
/// `meshbed send` and `meshbed recv`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RoutingSeen {
    pub route_failed_notices: u64,
    pub route_reestablished_notices: u64,
    pub path_updates: u64,
    /// The last path information (h and P_max, seed 004 §III.C).
    pub path: Option<PathState>,
    /// ATP: quick-start probing begun on a route-failed notice (seed 002
    /// §4.3.3); TCP-ELFN: standbys entered.
    pub route_failure_probes: u64,
    pub standbys: u64,
    pub peer_unresponsive_sent: u64,
}

/// A transport end's link to its node's routing daemon: notices and path
/// information in, handed to the engine as the simulator hands them; the
/// engine's "peer unresponsive" out.
pub struct EngineNotices {
    client: NoticeClient,
    pub seen: RoutingSeen,
}

impl EngineNotices {
    /// Connects to the daemon at `path` for the route to `peer`.
    pub fn connect(path: &Path, peer: std::net::SocketAddr) -> io::Result<Self> {
        let std::net::SocketAddr::V4(v4) = peer else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("--routed: the routing daemon routes IPv4 mesh addresses, and {peer} is not one"),
            ));
        };
        Ok(EngineNotices { client: NoticeClient::connect(path, *v4.ip())?, seen: RoutingSeen::default() })
    }

    /// Hands the engine what the daemon sent since the last call.
    pub fn deliver(
        &mut self,
        engine: &mut dyn meshbed_proto::Engine,
        now: meshbed_core::Instant,
    ) -> Result<(), NoticeError> {
        for msg in self.client.poll()? {
            match msg {
                FromDaemon::Route { state, .. } => {
                    match state {
                        RouteState::Failed => self.seen.route_failed_notices += 1,
                        RouteState::Reestablished => self.seen.route_reestablished_notices += 1,
                    }
                    engine.handle_route_notice(now, state.into());
                }
                FromDaemon::Path { path, .. } => {
                    self.seen.path_updates += 1;
                    self.seen.path = path;
                    // Without a route there is no path to describe; the
                    // engine keeps what it last knew (as in the simulator).
                    if let Some(p) = path {
                        engine.handle_path_info(now, p.into());
                    }
                }
            }
        }
        Ok(())
    }

    /// Counts what the engine did about routing, from its trace.
    pub fn observe(&mut self, event: &meshbed_proto::EngineEvent) -> io::Result<()> {
        use meshbed_proto::engine::TraceSample;
        use meshbed_proto::EngineEvent;
        match event {
            EngineEvent::Trace(TraceSample::Probing { entered: true, route_failure: true, .. }) => {
                self.seen.route_failure_probes += 1
            }
            EngineEvent::Trace(TraceSample::Standby { entered: true, .. }) => self.seen.standbys += 1,
            EngineEvent::PeerUnresponsive => {
                self.seen.peer_unresponsive_sent += 1;
                self.client.peer_unresponsive()?;
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_have_a_stable_shape() {
        let peer: Ipv4Addr = "10.0.0.5".parse().unwrap();
        let m = FromDaemon::Route { peer, state: RouteState::Failed };
        assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"type":"route","peer":"10.0.0.5","state":"failed"}"#);
        let p =
            FromDaemon::Path { peer, path: Some(PathState { hop_count: 4, max_link_loss: 0.25, link_rate_bps: 1 }) };
        let back: FromDaemon = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
        let s: ToDaemon = serde_json::from_str(r#"{"type":"subscribe","peer":"10.0.0.5"}"#).unwrap();
        assert_eq!(s, ToDaemon::Subscribe { peer });
    }

    #[test]
    fn lines_split_across_reads_and_bad_lines_are_errors() {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        let mut r = LineReader::default();
        a.write_all(br#"{"type":"subscribe","peer":"10.0.0.1"}"#).unwrap();
        assert!(r.read::<ToDaemon>(&mut b).unwrap().is_empty(), "no newline yet");
        a.write_all(b"\n{\"type\":\"peer-unresponsive\",\"peer\":\"10.0.0.1\"}\n").unwrap();
        let got: Vec<ToDaemon> = r.read(&mut b).unwrap();
        assert_eq!(got.len(), 2);
        a.write_all(b"{\"type\":\"reboot\"}\n").unwrap();
        assert!(matches!(r.read::<ToDaemon>(&mut b), Err(NoticeError::Parse(_))));
        let mut r = LineReader::default();
        a.write_all(&vec![b'x'; MAX_LINE_BYTES + 10]).unwrap();
        assert!(matches!(r.read::<ToDaemon>(&mut b), Err(NoticeError::LineTooLong)));
        drop(a);
        let mut r = LineReader::default();
        assert!(matches!(r.read::<ToDaemon>(&mut b), Err(NoticeError::Closed)));
    }
}
