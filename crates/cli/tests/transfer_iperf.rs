//! `meshbed send` and `recv` as iperf3 users expect them, on loopback:
//! `--time` (a timed, verified test), `--interval` lines at both ends,
//! `--parallel` streams with a sum, and the combinations refused with the
//! flag named.

mod common;
use common::{free_port, meshbed, scratch, wait_bounded, Scratch};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

/// `meshbed recv` with its default options on a free port, writing into a
/// fresh directory, ending after `count` transfers; it has had time to bind.
fn receiver(tag: &str, count: u32) -> (Child, String, Scratch) {
    receiver_with(tag, count, &[])
}

fn receiver_with(tag: &str, count: u32, extra: &[&str]) -> (Child, String, Scratch) {
    let (port, dir) = (free_port(), scratch(tag));
    let target = format!("127.0.0.1:{port}");
    let child = meshbed()
        .args(["recv", "--listen", &target, "--dir", dir.to_str().unwrap(), "--quiet"])
        .args(["--count", &count.to_string()])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start meshbed recv");
    std::thread::sleep(Duration::from_millis(300));
    (child, target, dir)
}

/// Runs `meshbed send ARGS` to its end (bounded): its output.
fn send(args: &[&str]) -> Output {
    let child = meshbed().arg("send").args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_bounded(child, Duration::from_secs(15))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The interval lines labelled `label` (`1`, `SUM`): (start, end, bytes).
fn interval_lines(stdout: &str, label: &str) -> Vec<(f64, f64, u64)> {
    let prefix = format!("[{label:>3}]");
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        // Not the receiver's announcement of a transfer.
        .filter(|rest| !rest.trim_start().starts_with("connection "))
        .map(|rest| {
            let words: Vec<&str> = rest.split_whitespace().collect();
            let (start, end) = words[0].split_once('-').unwrap();
            assert_eq!(words[1], "s", "{rest}");
            assert_eq!(words[3], "bytes", "{rest}");
            (start.parse().unwrap(), end.parse().unwrap(), words[2].parse().unwrap())
        })
        .collect()
}

#[test]
fn a_timed_run_lasts_its_time_is_verified_and_leaves_no_file() {
    let (rx, target, dir) = receiver("time", 1);
    let t0 = Instant::now();
    let o = send(&["--time", "2s", "--json", &target]);
    let wall = t0.elapsed();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["ok"].as_bool(), v["timed"].as_bool(), v["stopped"].as_bool()), (Some(true), Some(true), Some(true)));
    let secs = v["duration_s"].as_f64().unwrap();
    assert!((1.9..2.5).contains(&secs), "duration {secs} s");
    assert!(wall < Duration::from_secs(5), "{wall:?}");
    let acked = v["acked_file_bytes"].as_u64().unwrap();
    assert!(acked > 100_000, "{v}");
    assert_eq!(v["file_bytes"].as_u64(), Some(acked));
    // The receiver checked at least every acknowledged byte, reports success
    // and exits 0 at once (nothing lingers), with no file and no temporary.
    let r = wait_bounded(rx, Duration::from_secs(5));
    let stdout = text(&r.stdout);
    assert_eq!(r.status.code(), Some(0), "{stdout}{}", text(&r.stderr));
    assert!(
        stdout.starts_with("received a timed test stream") && stdout.contains("every one as generated"),
        "{stdout}"
    );
    let received: u64 = stdout.split(": ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(received >= acked, "received {received}, acknowledged {acked}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the receiver wrote nothing");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn intervals_cover_the_run_and_add_up_to_the_total() {
    let (rx, target, dir) = receiver("interval", 1);
    let o = send(&["--time", "3s", "--interval", "1s", &target]);
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}{}", text(&o.stderr));
    let lines = interval_lines(&stdout, "1");
    assert_eq!(lines.len(), 3, "{stdout}");
    assert_eq!(lines[0].0, 0.0);
    for (w, nominal_end) in lines.windows(2).zip([1.0, 2.0]) {
        assert_eq!(w[0].1, w[1].0, "contiguous: {stdout}");
        assert!((w[0].1 - nominal_end).abs() < 0.15, "{stdout}");
    }
    let total: u64 = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("data"))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no data line: {stdout}"));
    assert_eq!(lines.iter().map(|l| l.2).sum::<u64>(), total, "{stdout}");
    assert!(stdout.contains("Mbit/s") && stdout.contains("retx"), "{stdout}");
    // With --json the intervals are in the report instead.
    let r = wait_bounded(rx, Duration::from_secs(5));
    assert_eq!(r.status.code(), Some(0), "{}", text(&r.stdout));
    let (rx, target, _) = receiver("interval", 1);
    let o = send(&["--time", "1s", "--interval", "500ms", "--json", &target]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let intervals = v["intervals"].as_array().unwrap();
    assert_eq!(intervals.len(), 2, "{v}");
    let sum: u64 = intervals.iter().map(|i| i["bytes"].as_u64().unwrap()).sum();
    assert_eq!(Some(sum), v["acked_file_bytes"].as_u64());
    wait_bounded(rx, Duration::from_secs(5));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_receivers_intervals_cover_the_transfer_and_add_up_to_what_it_received() {
    let (rx, target, dir) = receiver_with("recv-interval", 1, &["--interval", "500ms"]);
    let o = send(&["--time", "2s", &target]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let r = wait_bounded(rx, Duration::from_secs(5));
    let stdout = text(&r.stdout);
    assert_eq!(r.status.code(), Some(0), "{stdout}{}", text(&r.stderr));
    // The transfer is announced with its peer, then its intervals: the
    // receiver's columns, no retransmissions (it cannot count them).
    assert!(stdout.starts_with("[  1] connection ") && stdout.contains(" from 127.0.0.1:"), "{stdout}");
    assert!(stdout.contains("Received") && !stdout.contains("retx"), "{stdout}");
    let lines = interval_lines(&stdout, "1");
    assert!((4..=5).contains(&lines.len()), "2 s in 500 ms intervals: {stdout}");
    assert_eq!(lines[0].0, 0.0);
    for w in lines.windows(2) {
        assert_eq!(w[0].1, w[1].0, "contiguous: {stdout}");
    }
    let received: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("received a timed test stream"))
        .and_then(|l| l.split(": ").nth(1)?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no report line: {stdout}"));
    assert_eq!(lines.iter().map(|l| l.2).sum::<u64>(), received, "{stdout}");
    assert!(lines.iter().filter(|l| l.2 > 0).count() >= 3, "data in most intervals: {stdout}");

    // With --json: in the transfer's report, without a retransmission count.
    let (rx, target, _) = receiver_with("recv-interval", 1, &["--interval", "500ms", "--json"]);
    let o = send(&["--time", "1s", &target]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let r = wait_bounded(rx, Duration::from_secs(5));
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let intervals = v["intervals"].as_array().unwrap_or_else(|| panic!("{v}"));
    assert!((2..=3).contains(&intervals.len()), "{v}");
    let sum: u64 = intervals.iter().map(|i| i["bytes"].as_u64().unwrap()).sum();
    assert_eq!(Some(sum), v["file_bytes"].as_u64(), "{v}");
    assert!(intervals.iter().all(|i| i.get("retransmissions").is_none()), "{v}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn three_parallel_streams_give_three_lines_and_their_sum() {
    let (rx, target, dir) = receiver("parallel", 3);
    let o = send(&["--time", "2s", "--parallel", "3", &target]);
    let stdout = text(&o.stdout);
    // The receiver's side too, should a stream fail.
    let r = wait_bounded(rx, Duration::from_secs(5));
    let received = text(&r.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}{}\nthe receiver: {received}{}", text(&o.stderr), text(&r.stderr));
    let streams: Vec<_> = (1..=3).map(|i| interval_lines(&stdout, &i.to_string())).collect();
    let sum = interval_lines(&stdout, "SUM");
    for s in &streams {
        assert_eq!(s.len(), 1, "one summary line per stream: {stdout}");
        assert!(s[0].2 > 0, "{stdout}");
    }
    assert_eq!(sum.len(), 1, "{stdout}");
    assert_eq!(sum[0].2, streams.iter().map(|s| s[0].2).sum::<u64>(), "{stdout}");
    assert_eq!(r.status.code(), Some(0), "{received}");
    assert_eq!(received.matches("received a timed test stream").count(), 3, "{received}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_reverse_test_receives_a_checked_stream_from_a_receiver_that_allows_it() {
    // --count 1: the request is the receiver's one transfer; it exits once
    // the stream it started has ended.
    let (rx, target, dir) = receiver_with("reverse", 1, &["--allow-reverse"]);
    let o = send(&["--reverse", "--time", "2s", "--interval", "500ms", &target]);
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}{}", text(&o.stderr));
    assert!(stdout.contains(&format!("reverse test from {target}: received a timed test stream")), "{stdout}");
    assert!(stdout.contains("every one as generated"), "{stdout}");
    let lines = interval_lines(&stdout, "1");
    assert!((3..=5).contains(&lines.len()), "the client's intervals: {stdout}");
    let r = wait_bounded(rx, Duration::from_secs(10));
    let served = text(&r.stdout);
    assert_eq!(r.status.code(), Some(0), "{served}{}", text(&r.stderr));
    assert!(served.contains("reverse test requested by 127.0.0.1:") && served.contains("2.000 s to port"), "{served}");
    assert!(served.contains("reverse test to 127.0.0.1:") && served.contains("sent a timed test stream"), "{served}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "nothing written at either end");

    // With --json, the client's report; another protocol.
    let (rx, target, _) = receiver_with("reverse", 1, &["--allow-reverse"]);
    let o = send(&["--reverse", "--time", "1s", "--protocol", "tcp-newreno", "--json", &target]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["ok"].as_bool(), v["reverse"].as_bool(), v["timed"].as_bool()), (Some(true), Some(true), Some(true)));
    assert_eq!(v["protocol"].as_str(), Some("tcp-newreno"), "{v}");
    assert!(v["file_bytes"].as_u64().unwrap() > 10_000, "{v}");
    wait_bounded(rx, Duration::from_secs(10));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_receiver_that_does_not_allow_reverse_tests_refuses_and_the_client_says_how() {
    let (rx, target, dir) = receiver("no-reverse", 1);
    let o = send(&["--reverse", "--time", "1s", &target]);
    let err = text(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("reverse test request") && err.contains("--allow-reverse"), "{err}");
    let r = wait_bounded(rx, Duration::from_secs(10));
    let said = text(&r.stdout);
    assert!(said.contains("FAILED") && said.contains("does not run reverse tests"), "{said}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failed_stream_makes_the_parallel_run_fail() {
    // Nobody listens: every stream is refused, and the run says so.
    let target = format!("127.0.0.1:{}", free_port());
    let o = send(&["--time", "2s", "--parallel", "2", &target]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("2 of 2 streams") && err.contains("stream 1:"), "{err}");
}

#[test]
fn bad_combinations_are_refused_naming_the_flag() {
    let bad = scratch("bad");
    let file = bad.join("f.txt");
    std::fs::write(&file, b"data").unwrap();
    let f = file.to_str().unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        (&["--time", "2s", f, "127.0.0.1:9"], &["--time", "FILE", "exactly one of FILE or --time"]),
        (&["127.0.0.1:9"], &["`127.0.0.1:9` alone", "--time"]),
        (&["--parallel", "9", "--time", "1s", "127.0.0.1:9"], &["--parallel", "`9`", "1 to 8", "--max-per-peer"]),
        (&["--parallel", "0", "--time", "1s", "127.0.0.1:9"], &["--parallel", "`0`", "1 to 8"]),
        (&["--parallel", "2", f, "127.0.0.1:9"], &["--parallel 2 with FILE", "--time"]),
        (&["--interval", "10ms", "--time", "1s", "127.0.0.1:9"], &["--interval", "`10ms`", "at least 100ms"]),
        (&["--time", "0s", "127.0.0.1:9"], &["--time", "`0s`", "expected a duration"]),
        (&["--time", "soon", "127.0.0.1:9"], &["--time", "soon"]),
        (&["--reverse", f, "127.0.0.1:9"], &["--reverse with FILE", "--time"]),
        (
            &["--reverse", "--parallel", "2", "--time", "1s", "127.0.0.1:9"],
            &["--reverse with --parallel 2", "one stream"],
        ),
    ];
    for (args, wanted) in cases {
        let o = send(args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        for w in *wanted {
            assert!(err.contains(w), "{args:?}: `{w}` missing from {err}");
        }
        assert!(!err.contains("panicked"), "{err}");
    }
    std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
}

#[test]
fn a_file_still_goes_as_before_with_intervals() {
    // A committed file lingers (to answer a repeated FIN): briefly here.
    let (rx, target, dir) = receiver_with("file", 1, &["--linger", "500ms"]);
    let src_dir = scratch("file-src");
    let src = src_dir.join("data.bin");
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&src, &data).unwrap();
    let o = send(&["--interval", "1s", src.to_str().unwrap(), &target]);
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}{}", text(&o.stderr));
    let lines = interval_lines(&stdout, "1");
    assert!(!lines.is_empty(), "{stdout}");
    assert_eq!(lines.iter().map(|l| l.2).sum::<u64>(), data.len() as u64, "{stdout}");
    let r = wait_bounded(rx, Duration::from_secs(5));
    assert_eq!(r.status.code(), Some(0), "{}", text(&r.stdout));
    assert_eq!(std::fs::read(dir.join("data.bin")).unwrap(), data);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(src.parent().unwrap()).unwrap();
}
