//! `meshbed send` and `meshbed recv` as processes on loopback: a round trip,
//! an unreachable peer, and a receiver killed (SIGKILL) and restarted.

mod common;
use common::{free_port, meshbed, scratch, wait_bounded, Scratch};
use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use meshbed_net::framing::is_temporary_name;
use meshbed_proto::harness::test_bytes as content;

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

fn recv(port: u16, dir: &Path, extra: &[&str]) -> Child {
    meshbed()
        .args(["recv", "--listen", &format!("127.0.0.1:{port}"), "--dir", dir.to_str().unwrap(), "--quiet"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start meshbed recv")
}

/// A receiver on `port` that has had time to bind.
fn listening(port: u16, dir: &Path, extra: &[&str]) -> Child {
    let child = recv(port, dir, extra);
    std::thread::sleep(Duration::from_millis(300));
    child
}

/// A source directory holding `name` (`len` bytes of the test content for
/// `seed`), an empty destination directory, and the content.
fn source_and_destination(tag: &str, name: &str, len: usize, seed: u64) -> (Scratch, Scratch, Vec<u8>) {
    let (src, dst) = (scratch(&format!("{tag}-src")), scratch(&format!("{tag}-dst")));
    let data = content(len, seed);
    std::fs::write(src.join(name), &data).unwrap();
    (src, dst, data)
}

/// Runs `meshbed send ARGS` to its end (at most 30 s): its exit code and stderr.
fn send_failure(args: &[&str]) -> (Option<i32>, String) {
    let child = meshbed().arg("send").args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let o = wait_bounded(child, Duration::from_secs(30));
    (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn send_and_recv_move_a_file_and_report_json() {
    let (src, dst, data) = source_and_destination("rt", "payload.bin", 400_000, 1);
    let port = free_port();
    let receiver = listening(port, &dst, &["--count", "2", "--json", "--linger", "1s"]);
    for (protocol, name) in [("atp-default", "payload.bin"), ("tcp-reno", "payload.bin")] {
        if protocol == "tcp-reno" {
            std::fs::rename(src.join("payload.bin"), src.join("second.bin")).unwrap();
        }
        let file = if protocol == "tcp-reno" { src.join("second.bin") } else { src.join(name) };
        let o = meshbed()
            .args(["send", file.to_str().unwrap(), &format!("127.0.0.1:{port}"), "--protocol", protocol, "--json"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{protocol}: {}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["ok"], true);
        assert_eq!(v["protocol"], protocol);
        assert_eq!(v["file_bytes"], 400_000);
        for key in ["duration_s", "goodput_bps", "retransmissions", "feedback_packets"] {
            assert!(v[key].is_number(), "{key} missing: {v}");
        }
    }
    let o = wait_bounded(receiver, Duration::from_secs(20));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<serde_json::Value> =
        String::from_utf8(o.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    for l in &lines {
        assert_eq!(l["ok"], true);
        assert!(l["receiver"]["malformed"].is_number() && l["receiver"]["stray"].is_number(), "{l}");
    }
    assert_eq!(names(&dst), vec!["payload.bin".to_string(), "second.bin".to_string()]);
    assert!(std::fs::read(dst.join("payload.bin")).unwrap() == data);
    assert!(std::fs::read(dst.join("second.bin")).unwrap() == data);
    let _ = std::fs::remove_dir_all(&src);
    let _ = std::fs::remove_dir_all(&dst);
}

#[test]
fn unreachable_peer_exits_non_zero_with_a_clear_message_within_the_timeout() {
    let dir = scratch("unreach");
    std::fs::write(dir.join("f"), b"data").unwrap();
    let file = dir.join("f");
    // Nothing listening.
    let o = meshbed()
        .args(["send", file.to_str().unwrap(), &format!("127.0.0.1:{}", free_port()), "--timeout", "1s"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("error:") && (err.contains("refused") || err.contains("unreachable")), "{err}");
    // A socket that never answers: the timeout ends it.
    let hole = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (code, err) =
        send_failure(&[file.to_str().unwrap(), &hole.local_addr().unwrap().to_string(), "--timeout", "1s"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("unreachable: nothing heard for"), "{err}");
    // Usage mistakes are named.
    let o = meshbed().args(["send", file.to_str().unwrap(), "127.0.0.1:1", "--delay", "bogus"]).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown delay source `bogus`"));
    let o = meshbed().args(["send", "/nonexistent/x", "127.0.0.1:1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/x"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn keygen_writes_a_key_both_ends_use_and_bad_key_files_are_refused_with_the_reason() {
    use std::os::unix::fs::PermissionsExt;
    let (src, dst, data) = source_and_destination("keygen", "sealed.bin", 100_000, 4);
    let key = src.join("mesh.key");
    let k = key.to_str().unwrap();
    let o = meshbed().args(["keygen", k]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    let written = std::fs::read(&key).unwrap();
    // Never over an existing file.
    let o = meshbed().args(["keygen", k]).output().unwrap();
    assert_ne!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stderr).contains(k));
    assert_eq!(std::fs::read(&key).unwrap(), written);

    // Both ends with the key: the file arrives.
    let port = free_port();
    let target = format!("127.0.0.1:{port}");
    let receiver = listening(port, &dst, &["--count", "1", "--psk", k, "--linger", "1s"]);
    let file = src.join("sealed.bin");
    let o = wait_bounded(
        meshbed()
            .args(["send", file.to_str().unwrap(), &target, "--psk", k, "--quiet"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        Duration::from_secs(30),
    );
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    wait_bounded(receiver, Duration::from_secs(10));
    assert_eq!(std::fs::read(dst.join("sealed.bin")).unwrap(), data);

    // Keys a stranger could read or guess: refused before anything is sent.
    let bad = |name: &str, bytes: &[u8], mode: u32| {
        let p = src.join(name);
        std::fs::write(&p, bytes).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    };
    for (path, says) in [
        (bad("readable.key", &written, 0o644), "mode 0644"),
        (bad("short.key", b"0123456789abcdef\n", 0o600), "16 bytes; expected 32 to 4096"),
        (bad("phrase.key", b"correct horse battery staple and a few more words\n", 0o600), "a passphrase?"),
        (bad("same.key", &[b'a'; 64], 0o600), "use only 1 of the 16"),
    ] {
        let (code, err) = send_failure(&[file.to_str().unwrap(), &target, "--psk", path.to_str().unwrap()]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("--psk") && err.contains(path.to_str().unwrap()) && err.contains(says), "{err}");
    }
    std::fs::remove_dir_all(&src).unwrap();
    std::fs::remove_dir_all(&dst).unwrap();
}

/// Off loopback a key is the default (issue 26): without one and without
/// --insecure nothing is sent or bound. (No test sends to an address that
/// is not loopback: these are refused before any socket exists.)
#[test]
fn off_loopback_send_and_recv_want_a_key_or_insecure() {
    let dir = scratch("insecure");
    let file = dir.join("f.bin");
    std::fs::write(&file, b"data").unwrap();
    let f = file.to_str().unwrap();
    for (args, says) in [
        (&["send", f, "192.0.2.1:9"][..], "meshbed send: 192.0.2.1:9 is not a loopback address and no key was given"),
        (
            &["send", "--reverse", "--time", "1s", "192.0.2.1:9"][..],
            "meshbed send --reverse: 192.0.2.1:9 is not a loopback",
        ),
        (
            &["recv", "--listen", "0.0.0.0:0", "--dir", dir.to_str().unwrap()][..],
            "meshbed recv: 0.0.0.0:0 is not a loopback",
        ),
    ] {
        let o = meshbed().args(args).env_remove("MESHBED_PSK").output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says) && err.contains("--psk") && err.contains("--insecure"), "{args:?}: {err}");
    }
    // A key and --insecure together: which one?
    let key = dir.join("k");
    assert!(meshbed().args(["keygen", key.to_str().unwrap()]).output().unwrap().status.success());
    let o = meshbed().args(["send", f, "192.0.2.1:9", "--psk", key.to_str().unwrap(), "--insecure"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--insecure with a key"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn zero_limits_and_a_delay_file_that_never_ends_are_refused_naming_the_argument() {
    for (args, says) in
        [(&["recv", "--max-active", "0"][..], "--max-active"), (&["recv", "--max-per-peer", "0"][..], "--max-per-peer")]
    {
        let o = meshbed().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says) && err.contains("`0`") && err.contains("at least 1"), "{args:?}: {err}");
    }
    // `--delay file:/dev/zero` once read until the kernel killed it.
    let dir = scratch("delay-zero");
    let file = dir.join("f.bin");
    std::fs::write(&file, b"data").unwrap();
    let t0 = std::time::Instant::now();
    let o =
        meshbed().args(["send", file.to_str().unwrap(), "127.0.0.1:9", "--delay", "file:/dev/zero"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("/dev/zero") && err.contains("not a regular file"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(5), "refused at once");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The receiver's busy refusal is advisory: the sender backs off and asks
/// again while its --timeout allows, once more per --retries, then exits 2
/// saying the receiver was busy.
#[test]
fn a_receiver_at_its_limit_refuses_and_the_sender_backs_off_then_exits_non_zero() {
    let dir = scratch("busy");
    std::fs::write(dir.join("f"), b"data").unwrap();
    let port = free_port();
    let receiver = listening(port, &dir, &["--max-active", "1"]);
    // One transfer in progress takes the only slot: a SYN, a header
    // announcing a large file, then a little more of it every 100 ms, from
    // this process.
    let occupant = UdpSocket::bind("127.0.0.1:0").unwrap();
    occupant.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let id = meshbed_net::conn::connection_id(meshbed_proto::Protocol::AtpDefault, 9);
    let header = meshbed_net::framing::StreamHeader { name: "big".into(), size: 1 << 30, sha256: [0; 32] }.encode();
    let datagram = move |control, seq, payload: &[u8]| {
        meshbed_proto::harness::sender_datagram(meshbed_proto::wire::ProtocolId::Atp, control, id, seq, payload)
    };
    // Where it says it is: it proves its address with the Retry's token.
    occupant.send_to(&datagram(meshbed_proto::wire::Control::SYN, 0, &[]), ("127.0.0.1", port)).unwrap();
    let mut answer = [0u8; 2048];
    let n = occupant.recv(&mut answer).expect("a Retry");
    let (_, payload) = meshbed_proto::wire::parse_datagram(&answer[..n]).unwrap();
    let token = meshbed_proto::wire::retry_token(payload).expect("a Retry with a token");
    occupant.send_to(&datagram(meshbed_proto::wire::Control::SYN, 0, &token), ("127.0.0.1", port)).unwrap();
    occupant.send_to(&datagram(0, 0, &header), ("127.0.0.1", port)).unwrap();
    assert!(occupant.recv(&mut [0u8; 2048]).is_ok(), "the receiver answers the occupant");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let progressing = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut seq = header.len() as u64;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                occupant.send_to(&datagram(0, seq, &[0; 1000]), ("127.0.0.1", port)).unwrap();
                seq += 1000;
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let t0 = std::time::Instant::now();
    let (code, err) = send_failure(&[
        dir.join("f").to_str().unwrap(),
        &format!("127.0.0.1:{port}"),
        "--retries",
        "1",
        "--timeout",
        "2s",
        "--retry-delay",
        "200ms",
        "--quiet",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("receiver busy") && err.contains("try again later"), "{err}");
    // Asked at 0, 0.2, 0.6 and 1.4 s, then (the retry) at about 1.6, 1.8,
    // 2.2 and 3.0 s: more than one attempt, and done well within 30 s.
    assert!(err.contains("attempts"), "{err}");
    assert!(t0.elapsed() >= Duration::from_millis(2_500), "{:?}", t0.elapsed());
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    progressing.join().unwrap();
    let mut receiver = receiver;
    receiver.kill().unwrap();
    receiver.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn receiver_killed_and_restarted_never_shows_a_wrong_complete_file() {
    let (src, dst, data) = source_and_destination("kill", "big.bin", 1_500_000, 7);
    let port = free_port();
    let first = listening(port, &dst, &[]);
    // ATP at a fixed 2 ms node delay: about 500 packets/s, so the transfer
    // takes a few seconds and the kill lands in the middle.
    let sender = meshbed()
        .args(["send", src.join("big.bin").to_str().unwrap(), &format!("127.0.0.1:{port}")])
        .args(["--protocol", "atp-adaptive", "--delay", "fixed:2ms", "--timeout", "2s", "--retries", "5"])
        .args(["--retry-delay", "300ms", "--quiet"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !names(&dst).iter().any(|n| is_temporary_name(n)) && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(200));
    let mut first = first;
    first.kill().unwrap(); // SIGKILL: no clean-up at all
    first.wait().unwrap();
    assert!(!dst.join("big.bin").exists(), "killed mid-transfer: no final name");
    let leftovers = names(&dst);
    assert!(!leftovers.is_empty() && leftovers.iter().all(|n| is_temporary_name(n)), "{leftovers:?}");
    std::thread::sleep(Duration::from_millis(300));
    let second = recv(port, &dst, &["--count", "1", "--linger", "1s"]);
    let o = wait_bounded(sender, Duration::from_secs(40));
    let second = wait_bounded(second, Duration::from_secs(10));
    let _ = second;
    eprintln!("sender after the restart: {:?} {}", o.status.code(), String::from_utf8_lossy(&o.stderr));
    if o.status.success() {
        assert!(std::fs::read(dst.join("big.bin")).unwrap() == data, "complete after the restart");
    } else {
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2));
        assert!(err.contains("error:"), "{err}");
        assert!(!dst.join("big.bin").exists() || std::fs::read(dst.join("big.bin")).unwrap() == data);
    }
    // Whatever the outcome, the killed receiver's temporary files were
    // removed by the second one at its start, and anything else left is a
    // hidden temporary name.
    for n in names(&dst) {
        assert!(!leftovers.contains(&n), "the killed receiver's {n} is still there");
        assert!(n == "big.bin" || is_temporary_name(&n), "{n}");
    }
    let _ = std::fs::remove_dir_all(&src);
    let _ = std::fs::remove_dir_all(&dst);
}

/// Linux's TCP settings on the runtime (issue 27's anchor runs the engine
/// as the kernel is set): a receiver with `--tcp-delayed-acks` acknowledges
/// about every second segment, so the sender hears about half the ACKs,
/// and the file arrives whole; the initial window is TCP's only.
#[test]
fn tcp_delayed_acks_and_initial_window_move_a_file_with_fewer_acks() {
    let (src, dst, data) = source_and_destination("tcp-linux", "f.bin", 600_000, 3);
    let file = src.join("f.bin");
    let mut acks = Vec::new();
    for delayed in [false, true] {
        let port = free_port();
        let extra: &[&str] = if delayed {
            &["--count", "1", "--linger", "1s", "--tcp-delayed-acks", "--overwrite"]
        } else {
            &["--count", "1", "--overwrite"]
        };
        let receiver = listening(port, &dst, extra);
        let o = meshbed()
            .args(["send", file.to_str().unwrap(), &format!("127.0.0.1:{port}"), "--protocol", "tcp-cubic"])
            .args(["--tcp-initial-window", "10", "--json"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!((v["ok"].as_bool(), v["file_bytes"].as_u64()), (Some(true), Some(600_000)), "{v}");
        acks.push(v["feedback_packets"].as_u64().unwrap());
        let r = wait_bounded(receiver, Duration::from_secs(20));
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        assert!(std::fs::read(dst.join("f.bin")).unwrap() == data);
    }
    // 600 kB is 418 segments: one ACK each, or about one per two.
    eprintln!("ACKs heard without and with delayed ACKs: {acks:?}");
    assert!(acks[0] > 350 && (acks[1] as f64) < 0.7 * acks[0] as f64, "ACKs heard without and with: {acks:?}");
    // Not for ATP, and within the runtime's window.
    let (code, err) = send_failure(&[
        file.to_str().unwrap(),
        "127.0.0.1:9",
        "--protocol",
        "atp-default",
        "--tcp-initial-window",
        "10",
    ]);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("--tcp-initial-window 10 with --protocol atp-default") && err.contains("tcp-*"), "{err}");
    for bad in ["0", "65"] {
        let (code, err) = send_failure(&[file.to_str().unwrap(), "127.0.0.1:9", "--tcp-initial-window", bad]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("--tcp-initial-window") && err.contains(bad) && err.contains("1..=64"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&src);
    let _ = std::fs::remove_dir_all(&dst);
}
