//! Test helpers: an impairment shim (a UDP proxy with seeded loss,
//! reordering, duplication, a blackout and a pause switch) and a receiver
//! running in a thread. Faults are a wrapper around the link, not branches
//! in the code under test (STYLE.md, smoltcp `phy/fault_injector.rs`).

#![allow(dead_code)]

use meshbed_net::{ReceiveOptions, Receiver, SinkKind, TransferReport};
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// xorshift64*: a tiny seeded generator, enough for fault injection.
struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }
}

/// Impairments, applied per datagram and per direction.
#[derive(Clone, Debug, Default)]
pub struct Impairments {
    pub seed: u64,
    pub loss: f64,
    pub duplicate: f64,
    /// Probability that a datagram is held back and sent after the next one.
    pub reorder: f64,
    /// Once this many bytes went towards the receiver, drop everything in
    /// both directions for the given time.
    pub blackout: Option<(u64, Duration)>,
}

#[derive(Debug, Default)]
pub struct ShimCounters {
    pub forwarded: AtomicU64,
    pub dropped: AtomicU64,
    pub duplicated: AtomicU64,
    pub reordered: AtomicU64,
    pub bytes_to_receiver: AtomicU64,
}

struct Shared {
    stop: AtomicBool,
    paused: AtomicBool,
    blackout_until: Mutex<Option<Instant>>,
    blackout_done: AtomicBool,
    client: Mutex<Option<SocketAddr>>,
    counters: ShimCounters,
    forger: Mutex<Option<Forger>>,
    forger_to_receiver: Mutex<Option<Forger>>,
}

/// An attacker on the path: sees each datagram towards the receiver and may
/// answer the sender with a forged one, from the receiver's address as the
/// sender knows it.
pub type Forger = Box<dyn FnMut(&[u8]) -> Option<Vec<u8>> + Send>;

/// A UDP proxy between one sender and a receiver.
pub struct Shim {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl Shim {
    pub fn start(upstream: SocketAddr, imp: Impairments) -> Shim {
        let front = UdpSocket::bind("127.0.0.1:0").unwrap();
        let back = UdpSocket::bind("127.0.0.1:0").unwrap();
        back.connect(upstream).unwrap();
        for s in [&front, &back] {
            s.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
        }
        let addr = front.local_addr().unwrap();
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            paused: AtomicBool::new(false),
            blackout_until: Mutex::new(None),
            blackout_done: AtomicBool::new(false),
            client: Mutex::new(None),
            counters: ShimCounters::default(),
            forger: Mutex::new(None),
            forger_to_receiver: Mutex::new(None),
        });
        let (front2, back2) = (front.try_clone().unwrap(), back.try_clone().unwrap());
        let (s1, s2) = (shared.clone(), shared.clone());
        let (imp1, mut imp2) = (imp.clone(), imp);
        imp2.seed ^= 0xdead_beef;
        let to_receiver = std::thread::spawn(move || pump(&front, &back, true, imp1, &s1));
        let to_sender = std::thread::spawn(move || pump(&back2, &front2, false, imp2, &s2));
        Shim { addr, shared, threads: vec![to_receiver, to_sender] }
    }

    /// Installs an attacker (see [`Forger`]).
    pub fn set_forger(&self, forger: Forger) {
        *self.shared.forger.lock().unwrap() = Some(forger);
    }

    /// Installs an attacker who answers datagrams towards the receiver with
    /// forged ones to the receiver, from the sender's address as the
    /// receiver knows it.
    pub fn set_forger_to_receiver(&self, forger: Forger) {
        *self.shared.forger_to_receiver.lock().unwrap() = Some(forger);
    }

    /// While paused every datagram is dropped.
    pub fn set_paused(&self, paused: bool) {
        self.shared.paused.store(paused, Ordering::SeqCst);
    }
    pub fn counters(&self) -> &ShimCounters {
        &self.shared.counters
    }
    pub fn blackout_happened(&self) -> bool {
        self.shared.blackout_done.load(Ordering::SeqCst)
    }
}

impl Drop for Shim {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn pump(from: &UdpSocket, to: &UdpSocket, towards_receiver: bool, imp: Impairments, shared: &Shared) {
    let mut rng = Rng::new(imp.seed);
    let mut held: Option<Vec<u8>> = None;
    let mut buf = [0u8; 4096];
    let c = &shared.counters;
    let send = |bytes: &[u8]| {
        let r = if towards_receiver {
            to.send(bytes)
        } else {
            match *shared.client.lock().unwrap() {
                Some(client) => to.send_to(bytes, client),
                None => return,
            }
        };
        if r.is_ok() {
            c.forwarded.fetch_add(1, Ordering::Relaxed);
        }
    };
    while !shared.stop.load(Ordering::SeqCst) {
        let got = if towards_receiver {
            from.recv_from(&mut buf).map(|(n, a)| {
                *shared.client.lock().unwrap() = Some(a);
                n
            })
        } else {
            from.recv(&mut buf)
        };
        let n = match got {
            Ok(n) => n,
            Err(_) => {
                // Quiet for 5 ms: release a held datagram.
                if let Some(h) = held.take() {
                    send(&h);
                }
                continue;
            }
        };
        let bytes = &buf[..n];
        if towards_receiver {
            let forged = shared.forger.lock().unwrap().as_mut().and_then(|f| f(bytes));
            let client = *shared.client.lock().unwrap();
            if let (Some(forged), Some(client)) = (forged, client) {
                let _ = from.send_to(&forged, client);
            }
            if let Some(forged) = shared.forger_to_receiver.lock().unwrap().as_mut().and_then(|f| f(bytes)) {
                let _ = to.send(&forged);
            }
            let total = c.bytes_to_receiver.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
            if let Some((after, length)) = imp.blackout {
                if total >= after && !shared.blackout_done.swap(true, Ordering::SeqCst) {
                    *shared.blackout_until.lock().unwrap() = Some(Instant::now() + length);
                }
            }
        }
        let in_blackout = shared.blackout_until.lock().unwrap().is_some_and(|t| Instant::now() < t);
        if in_blackout || shared.paused.load(Ordering::SeqCst) || rng.chance(imp.loss) {
            c.dropped.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let copies = if rng.chance(imp.duplicate) {
            c.duplicated.fetch_add(1, Ordering::Relaxed);
            2
        } else {
            1
        };
        if held.is_none() && rng.chance(imp.reorder) {
            c.reordered.fetch_add(1, Ordering::Relaxed);
            held = Some(bytes.to_vec());
            continue;
        }
        for _ in 0..copies {
            send(bytes);
        }
        if let Some(h) = held.take() {
            send(&h);
        }
    }
}

/// A receiver running in a thread; its reports arrive on `reports`.
pub struct RunningReceiver {
    pub addr: SocketAddr,
    pub stop: Arc<AtomicBool>,
    pub reports: Arc<Mutex<Vec<TransferReport>>>,
    handle: Option<JoinHandle<meshbed_net::ReceiverCounters>>,
}

impl RunningReceiver {
    pub fn start(options: ReceiveOptions) -> RunningReceiver {
        let mut receiver = Receiver::bind(options).expect("bind receiver");
        let addr = receiver.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let reports = Arc::new(Mutex::new(Vec::new()));
        let (stop2, reports2) = (stop.clone(), reports.clone());
        let handle = std::thread::spawn(move || {
            receiver
                .run(&stop2, &mut |event| {
                    if let meshbed_net::ReceiverEvent::Ended(r) = event {
                        reports2.lock().unwrap().push(r.clone());
                    }
                })
                .expect("receiver loop")
        });
        RunningReceiver { addr, stop, reports, handle: Some(handle) }
    }

    /// Stops the loop (transfers in progress are abandoned) and returns its counters.
    pub fn stop(mut self) -> meshbed_net::ReceiverCounters {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.take().unwrap().join().unwrap()
    }

    pub fn reports(&self) -> Vec<TransferReport> {
        self.reports.lock().unwrap().clone()
    }

    /// Waits (bounded) until `n` transfers have ended.
    pub fn wait_for(&self, n: usize, limit: Duration) -> Vec<TransferReport> {
        let t0 = Instant::now();
        while self.reports.lock().unwrap().len() < n && t0.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.reports()
    }
}

impl Drop for RunningReceiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

pub fn receive_options(dir: &Path) -> ReceiveOptions {
    let mut o = ReceiveOptions::new(
        "127.0.0.1:0".parse().unwrap(),
        SinkKind::Directory { dir: dir.to_path_buf(), overwrite: false },
    );
    o.timeout = Duration::from_secs(5);
    o.linger = Duration::from_secs(3);
    o
}

pub use meshbed_proto::harness::ScratchDir as TempDir;

/// A fresh empty directory named after `tag`, removed when dropped.
pub fn temp_dir(tag: &str) -> TempDir {
    TempDir::new(&format!("meshbed-net-{tag}-"))
}

/// Deterministic file contents.
#[allow(unused_imports)]
pub use meshbed_proto::harness::test_bytes as content;

/// File names in `dir`, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// An ATP connection id for test traffic made by hand.
pub fn atp_id(k: u32) -> u32 {
    meshbed_net::conn::connection_id(meshbed_proto::Protocol::AtpDefault, k)
}

/// Sends `stream` (transfer header and file, made by the caller, valid or
/// not) as connection `id` from the loopback address `from`, with the real
/// sender engine of the protocol the id names; returns how it ended. For
/// tests that must choose the connection id or the header bytes.
pub fn send_as(
    target: SocketAddr,
    from: std::net::IpAddr,
    id: u32,
    stream: Vec<u8>,
    timeout: Duration,
) -> Result<(), meshbed_proto::FailReason> {
    use meshbed_net::clock::{from_std, Clock};
    use meshbed_net::conn::{protocol_of, EngineOptions};
    use meshbed_proto::EngineEvent;
    let options = EngineOptions {
        timeout: from_std(timeout),
        linger: from_std(timeout),
        atp_min_delay: None,
        datagram_overhead: 0,
        trace: false,
        tcp_tuning: Default::default(),
        end_to_end_delay: false,
    };
    let clock = Clock::new();
    let mut conn = options.sender(protocol_of(id).expect("a protocol id"), id, clock.now());
    let mut written = 0;
    let socket = UdpSocket::bind((from, 0)).unwrap();
    socket.connect(target).unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
    let mut buf = vec![0u8; 2048];
    // The receiver's address validation, as `meshbed send` follows it.
    let mut proof = meshbed_net::send::AddressProof::default();
    let mut connected = false;
    loop {
        let now = clock.now();
        let engine = conn.engine();
        if engine.poll_timeout().is_some_and(|t| t <= now) {
            engine.handle_timeout(now);
        }
        written += engine.write(&stream[written..]);
        if written == stream.len() {
            engine.finish();
        }
        if let Some(len) = proof.poll_resend(&mut buf) {
            let _ = socket.send(&buf[..len]);
        }
        while let Some(t) = engine.poll_transmit(now, &mut buf) {
            let len = proof.on_transmit(&mut buf, t.len);
            let _ = socket.send(&buf[..len]);
        }
        while let Some(event) = engine.poll_event() {
            match event {
                EngineEvent::Connected => connected = true,
                EngineEvent::Finished => return Ok(()),
                EngineEvent::Failed(reason) => return Err(reason),
                _ => {}
            }
        }
        if let Ok(n) = socket.recv(&mut buf) {
            if !proof.on_received(&buf[..n], id, connected) {
                engine.handle_input(clock.now(), &buf[..n]);
            }
        }
    }
}

/// A hand-made stream: the transfer header for `name` (checked or not) and `data`.
pub fn raw_stream(name: &str, data: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    let header = meshbed_net::framing::StreamHeader {
        name: name.to_string(),
        size: data.len() as u64,
        sha256: sha2::Sha256::digest(data).into(),
    };
    let mut stream = header.encode();
    stream.extend_from_slice(data);
    stream
}

/// The process's peak resident set size in KiB (Linux `VmHWM`), 0 elsewhere.
pub fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
