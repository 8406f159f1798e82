//! The `meshbed` binary as a user meets it.

use std::process::Command;

fn meshbed(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_meshbed")).args(args).output().expect("run meshbed")
}

/// A file a test writes, in a scratch directory of its own that goes with
/// it: a run of the tests leaves nothing in the temp directory. Derefs to
/// the file's path.
struct TmpFile {
    path: std::path::PathBuf,
    _dir: meshbed_proto::harness::ScratchDir,
}

impl std::ops::Deref for TmpFile {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.path
    }
}

impl AsRef<std::path::Path> for TmpFile {
    fn as_ref(&self) -> &std::path::Path {
        &self.path
    }
}

fn tmp(name: &str, text: &str) -> TmpFile {
    let dir = meshbed_proto::harness::ScratchDir::new("meshbed-cli-test-");
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    TmpFile { path, _dir: dir }
}

#[test]
fn no_arguments_runs_the_main_comparison_and_leaves_table_and_figures() {
    let dir = std::env::temp_dir().join(format!("meshbed-cli-main-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_meshbed")).current_dir(&dir).output().expect("run meshbed");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("testbed-a-single") && text.contains("goodput Mb/s"), "{text}");
    for p in ["atp-default", "atp-aggressive", "atp-adaptive", "tcp-tahoe", "tcp-reno", "tcp-newreno"] {
        assert!(text.contains(&format!("hops=6 protocol={p}")), "{p} missing: {text}");
    }
    let out = dir.join("results/testbed-a-single");
    for f in ["goodput.png", "goodput.svg", "flows.csv", "summary.csv"] {
        assert!(out.join(f).metadata().map(|m| m.len() > 0).unwrap_or(false), "{f} missing");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn printed_default_scenario_runs_and_json_reports_seed_and_flows() {
    let o = meshbed(&["scenario", "default"]);
    assert!(o.status.success());
    let file = tmp("default.toml", &String::from_utf8(o.stdout).unwrap());
    let o = meshbed(&["sim", file.to_str().unwrap(), "--json", "--seed", "7"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["seed"], 7);
    assert_eq!(v["flows"][0]["hops"], 4);
    assert!(v["flows"][0]["goodput_bps"].as_f64().unwrap() > 1e6);
    // The same scenario and seed give the same trace.
    let again = meshbed(&["sim", file.to_str().unwrap(), "--json", "--seed", "7"]);
    let w: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(v["trace_hash"], w["trace_hash"]);
}

#[test]
fn mistakes_exit_non_zero_naming_file_key_and_expectation() {
    let file = tmp(
        "bad.toml",
        "duration_s = 1\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n[[flows]]\nsrc = 0\ndst = 5\n",
    );
    let o = meshbed(&["sim", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains("bad.toml") && err.contains("flows[0].dst = 5") && err.contains("below 3"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let o = meshbed(&["sim", "/definitely/not/here.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/definitely/not/here.toml"));

    let o = meshbed(&["bench", "--sim-seconds", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--sim-seconds"));
    let o = meshbed(&["bench", "--suite", "--only", "chain-tcp-fast"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("chain-tcp-fast") && err.contains("aodv-cbr-100"), "{err}");
}

/// `meshbed bench --suite` runs the workloads asked for and reports each
/// run's events, wall time and peak memory; the chain's transfer is the
/// simulator's own run of the same file.
#[test]
fn the_bench_suite_reports_each_workload() {
    let o = meshbed(&["bench", "--suite", "--only", "chain-udp", "--only", "chain-tcp", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    // In the suite's order, whatever the order asked.
    let names: Vec<&str> = rows.iter().map(|r| r["workload"].as_str().unwrap()).collect();
    assert_eq!(names, ["chain-tcp", "chain-udp"]);
    for r in rows {
        assert_eq!(r["nodes"], 7, "{r}");
        let (events, wall) = (r["events"].as_u64().unwrap(), r["wall_s"].as_f64().unwrap());
        assert!(events > 100_000 && wall > 0.0, "{r}");
        assert!((r["events_per_s"].as_f64().unwrap() - events as f64 / wall).abs() < 1.0, "{r}");
        // The set-up is part of the wall time, and the time per event is
        // the rest's.
        let setup = r["setup_s"].as_f64().unwrap();
        assert!(setup > 0.0 && setup < wall, "{r}");
        let per_event_ns = r["run_ns_per_event"].as_f64().unwrap();
        assert!((per_event_ns - (wall - setup) * 1e9 / events as f64).abs() < 1e-6, "{r}");
        // The kernel's high-water mark, reset for the run: more than the
        // binary's text, far less than a leak.
        let peak = r["peak_rss_mib"].as_f64().expect("Linux reports a peak");
        assert!(peak > 1.0 && peak < 1024.0, "{r}");
    }
    assert_eq!(rows[1]["simulated_s"], 10.0);
}

/// `--baseline BINARY` runs each workload with another build too, in turn:
/// against itself the speed-up is about 1; a binary that cannot run the
/// scenario is reported by name, not counted; a missing one is refused.
#[test]
fn the_bench_suite_compares_with_a_baseline_binary() {
    let me = env!("CARGO_BIN_EXE_meshbed");
    let o = meshbed(&["bench", "--suite", "--only", "chain-udp", "--repetitions", "3", "--baseline", me, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let b = &rows[0]["baseline"];
    let (this, base, speed_up) =
        (b["this_s"].as_f64().unwrap(), b["baseline_s"].as_f64().unwrap(), b["speed_up"].as_f64().unwrap());
    assert!(this > 0.0 && base > 0.0, "{b}");
    assert!(speed_up > 0.2 && speed_up < 5.0, "the same binary on both sides: {b}");
    assert_eq!(b["same_run"], true, "the same binary simulates the same run: {b}");
    assert_eq!(b["same_results"], true, "and prints the same results: {b}");
    // A build whose run differs (another event count or trace hash) is said to.
    let other = tmp("other-model.sh", "#!/bin/sh\necho 'seed 1  simulated 10.000 s  events 7  trace 00000000'\n");
    std::fs::set_permissions(&other, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let o = meshbed(&["bench", "--suite", "--only", "chain-udp", "--baseline", other.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("NO: the model's numbers changed"), "{text}");
    // One whose summary differs but whose results are this binary's (a
    // build that leaves out events that did nothing) is told apart.
    let fewer_events = tmp(
        "fewer-events.sh",
        &format!("#!/bin/sh\n'{me}' \"$@\" | sed '1s/.*/seed 1  simulated 10.000 s  events 7  trace 00000000/'\n"),
    );
    std::fs::set_permissions(&fewer_events, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let o = meshbed(&["bench", "--suite", "--only", "chain-udp", "--baseline", fewer_events.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("same results; other events or trace hash"), "{text}");

    let false_bin = tmp("not-meshbed.sh", "#!/bin/sh\necho 'no such command: sim' >&2\nexit 3\n");
    std::fs::set_permissions(&false_bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let o = meshbed(&["bench", "--suite", "--only", "chain-udp", "--baseline", false_bin.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("chain-udp") && text.contains("not compared") && text.contains("no such command: sim"),
        "{text}"
    );

    let o = meshbed(&["bench", "--suite", "--only", "chain-udp", "--baseline", "/definitely/not/here"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--baseline /definitely/not/here"));
}

/// Runs meshbed, killing it if it has not ended within `secs`: a hang is a
/// failure of the test, not of the test run.
fn meshbed_within(secs: u64, args: &[&str]) -> (Option<i32>, String) {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_meshbed"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run meshbed");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            return (status.code(), err);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("meshbed {args:?} still running after {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

const CHAIN: &str =
    "duration_s = 1\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n[[flows]]\nsrc = 0\ndst = 2\n";

/// The error of `meshbed sim` on a file: exit code 2, one line naming the file.
fn sim_error(name: &str, text: &str) -> String {
    let file = tmp(name, text);
    let (code, err) = meshbed_within(60, &["sim", file.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.starts_with(&format!("error: {}: ", file.display())), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn inputs_that_used_to_exhaust_memory_or_loop_are_refused_naming_key_value_and_range() {
    let err = sim_error("queue.toml", &format!("{CHAIN}[radio.mac]\nqueue_packets = 4294967295\n"));
    assert!(
        err.contains("radio.mac.queue_packets = 4294967295: expected a queue length in packets from 1 to 10000"),
        "{err}"
    );
    let err = sim_error(
        "epoch.toml",
        &format!("{CHAIN}protocol = \"atp-default\"\nbytes = 100000\n[flows.atp]\nepoch_s = 1e-12\n"),
    );
    assert!(err.contains("flows[0].atp.epoch_s = 1e-12: expected an epoch in seconds from 0.001 to 60"), "{err}");
    let err = sim_error("cbr.toml", &format!("{CHAIN}traffic = \"cbr\"\nrate_kbps = 1e300\n"));
    assert!(err.contains("flows[0].rate_kbps = 1e300: expected") && err.contains("to 24000"), "{err}");
    let err = sim_error(
        "grid.toml",
        "duration_s = 1\n[topology]\nkind = \"grid\"\nrows = 2147483649\ncols = 2\nspacing_m = 200\n",
    );
    assert!(
        err.contains("topology.rows = 2147483649 (cols = 2, 4294967298 nodes): expected a grid of 2 to 10000 nodes"),
        "{err}"
    );
    let err = sim_error("long.toml", &CHAIN.replace("duration_s = 1", "duration_s = 1e6"));
    assert!(err.contains("duration_s = 1000000: expected") && err.contains("at most 86400"), "{err}");
    let err = sim_error("big.toml", &CHAIN.replace("nodes = 3", "nodes = 10001"));
    assert!(err.contains("topology.nodes = 10001: expected a number of nodes from 2 to 10000"), "{err}");

    let o = meshbed(&["bench-transfer", "--size-mib", "100000000"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("100000000 is not in 1..=4096"));
    let o = meshbed(&["bench-transfer", "--size-mib", "17592186044417"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("17592186044417 is not in 1..=4096"));
}

/// `bench-transfer --peers N`: N transfers at once to one receiver, each
/// verified by it byte for byte; the soak's options are its own.
#[test]
fn bench_transfer_peers_soaks_one_receiver_and_verifies_every_transfer() {
    let o = meshbed(&[
        "bench-transfer",
        "--peers",
        "3",
        "--size-mib",
        "2",
        "--protocols",
        "tcp-reno,atp-adaptive",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for r in rows {
        assert_eq!(
            (r["peers"].as_u64(), r["verified"].as_u64(), r["bytes_each"].as_u64()),
            (Some(3), Some(3), Some(2 << 20)),
            "{r}"
        );
        assert!(r["failures"].as_array().unwrap().is_empty(), "{r}");
        assert!(r["goodput_mbps"].as_f64().unwrap() > 0.0 && r["receiver_reorder_peak_bytes"].is_u64(), "{r}");
    }
    for (args, says) in [
        (&["bench-transfer", "--peers", "1"][..], "--peers"),
        (&["bench-transfer", "--peers", "65"][..], "--peers"),
        (&["bench-transfer", "--peers", "3", "--psk"][..], "--peers 3 with --atp-min-delay, --psk or --repeat"),
    ] {
        let o = meshbed(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// `bench-transfer --repeat`: every row runs that many times, the sealed
/// row's cost is paired with its plain twin's run by run, and the interval
/// is there once there are two runs; out-of-range repetitions are refused.
#[test]
fn bench_transfer_repeats_rows_and_pairs_the_seals_cost() {
    let o =
        meshbed(&["bench-transfer", "--size-mib", "1", "--protocols", "tcp-reno", "--psk", "--repeat", "2", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["repeat"], 2);
    let rows = v["results"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["transport"].as_str().unwrap()).collect();
    // (No iperf3 anchor row under 16 MiB.)
    assert_eq!(names, ["tcp-reno", "tcp-reno +psk", "kernel TCP"]);
    for r in rows {
        assert_eq!(r["runs"], 2, "{r}");
        let runs: Vec<f64> = r["goodput_mbps_runs"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert!(runs.len() == 2 && runs.iter().all(|g| *g > 0.0), "{r}");
        let mean = r["goodput_mbps"].as_f64().unwrap();
        assert!((mean - (runs[0] + runs[1]) / 2.0).abs() < 1e-6 * mean, "{r}");
        assert!(r["goodput_mbps_ci95"].as_f64().is_some_and(|c| c >= 0.0), "{r}");
        // The receiving thread's CPU, a part of the process's (0 for a
        // 1 MiB run the kernel counts no tick of).
        let (rx, all) = (r["receiver_cpu_s_per_gib"].as_f64().unwrap(), r["cpu_s_per_gib"].as_f64().unwrap());
        assert!((0.0..=all).contains(&rx), "{r}");
    }
    let plain = rows[0]["goodput_mbps_runs"].as_array().unwrap();
    let sealed = rows[1]["goodput_mbps_runs"].as_array().unwrap();
    let paired: f64 = (0..2).map(|i| sealed[i].as_f64().unwrap() / plain[i].as_f64().unwrap()).sum::<f64>() / 2.0;
    assert!((rows[1]["goodput_ratio_to_plain"].as_f64().unwrap() - paired).abs() < 1e-9, "{}", rows[1]);
    assert!(rows[0].get("goodput_ratio_to_plain").is_none());
    // Without --json each run says its figures as it ends, then the table.
    let o = meshbed(&["bench-transfer", "--size-mib", "1", "--protocols", "tcp-reno"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    for name in ["tcp-reno", "kernel TCP"] {
        let line = err
            .lines()
            .find(|l| l.starts_with(&format!("bench-transfer: {name}: ")))
            .unwrap_or_else(|| panic!("{err}"));
        assert!(line.contains(" Mbit/s, ") && line.contains(" CPU s / GiB (receiver "), "{line}");
    }
    assert!(String::from_utf8_lossy(&o.stdout).contains("receiver's"));
    let o = meshbed(&["bench-transfer", "--repeat", "101"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("101 is not in 1..=100"));
}

#[test]
fn only_regular_files_are_read_and_a_fifo_does_not_block() {
    let (code, err) = meshbed_within(20, &["sim", "/dev/zero"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("/dev/zero: cannot read: a device; expected a regular TOML file"), "{err}");
    let dir = std::env::temp_dir().join(format!("meshbed-cli-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("s.toml");
    let _ = std::fs::remove_file(&fifo);
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for args in [vec!["sim", fifo.to_str().unwrap()], vec!["experiment", "run", fifo.to_str().unwrap()]] {
        let (code, err) = meshbed_within(20, &args);
        assert_eq!(code, Some(2));
        assert!(err.contains("a FIFO; expected a regular TOML file"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn scenarios_that_cannot_work_say_so() {
    // 5000 m apart: no route.
    let err = sim_error("far.toml", &CHAIN.replace("spacing_m = 200", "spacing_m = 5000"));
    assert!(err.contains("flows[0].dst = 2: expected a node with a route from node 0 (10000 m away)"), "{err}");
    // A static path through nodes out of range of each other.
    let err = sim_error(
        "path.toml",
        "duration_s = 1\n[topology]\nkind = \"explicit\"\nnodes = [{ x_m = 0, y_m = 0 }, { x_m = 200, y_m = 0 }, { x_m = 2200, y_m = 0 }]\n[routing]\nkind = \"static\"\npaths = [[0, 1, 2]]\n[[flows]]\nsrc = 0\ndst = 2\n",
    );
    assert!(err.contains("routing.paths[0] = [0, 1, 2]: expected consecutive nodes that decode each other's frames: nodes 1 and 2 are 2000 m apart"), "{err}");
    // A transmission range beyond the carrier-sense range.
    let err = sim_error("ranges.toml", &format!("{CHAIN}[radio]\ntx_range_m = 600\ncs_range_m = 550\n"));
    assert!(err.contains("radio.cs_range_m = 550: expected a carrier-sense reach at least the transmission range radio.tx_range_m = 600"), "{err}");
    assert!(!err.contains("Some("), "{err}");

    // The emulator given flows it cannot run: refused before anything starts.
    let file = tmp(
        "emu.toml",
        &format!("{CHAIN}[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"atp-default\"\nbytes = 1000\npacket_bytes = 600\n[experiment]\nname = \"emu-refused\"\nrepetitions = 1\n"),
    );
    let out = file.with_extension("out");
    let (code, err) = meshbed_within(
        30,
        &["experiment", "run", file.to_str().unwrap(), "--backend", "emu", "--out", out.to_str().unwrap()],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("the emulator cannot run flows[1].packet_bytes = 600 (the emulator's transfers use the UDP runtime's segment size"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn experiments_too_large_to_run_ask_for_force_instead_of_aborting() {
    let axis = |key: &str, n: u32| {
        format!(
            "[[experiment.sweep]]\nkey = \"{key}\"\nvalues = [{}]\n",
            (1..=n).map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
        )
    };
    // 3 axes × 2000 values: 8e9 points, more than any --force can run.
    let huge = tmp(
        "huge.toml",
        &format!(
            "{CHAIN}[experiment]\nname = \"huge\"\n{}{}{}",
            axis("radio.mac.short_retry_limit", 2000),
            axis("radio.mac.long_retry_limit", 2000),
            axis("radio.mac.queue_packets", 2000)
        ),
    );
    let (code, err) = meshbed_within(60, &["experiment", "run", huge.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "experiment.sweep = 2000 × 2000 × 2000 values = 8000000000 points: expected at most 100000 points"
        ),
        "{err}"
    );
    // 50 × 50 points × 10 repetitions = 25 000 runs: asks for --force.
    let large = tmp(
        "large.toml",
        &format!(
            "{CHAIN}[experiment]\nname = \"large\"\n{}{}",
            axis("radio.mac.short_retry_limit", 50),
            axis("radio.mac.queue_packets", 50)
        ),
    );
    let (code, err) = meshbed_within(120, &["experiment", "run", large.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("2500 points × 10 repetitions = 25000 runs") && err.contains("pass --force"), "{err}");
    // Refused before anything is made: no output directory, no store lock.
    assert!(!std::path::Path::new("results/large").exists(), "a refused run left results/large behind");
    let flows = tmp("flows.toml", &format!("{CHAIN}[experiment]\nname = \"flows\"\n[[experiment.sweep]]\nkey = \"flow_count\"\nvalues = [4000000000]\n"));
    let (code, err) = meshbed_within(60, &["experiment", "run", flows.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("flow_count = 4000000000: expected a number of flows from 1 to 1000"), "{err}");
}

#[test]
fn error_messages_name_file_key_value_and_expectation_once() {
    let err = sim_error("three.toml", &CHAIN.replace("nodes = 3", "nodes = \"three\""));
    assert!(err.contains("topology.nodes = \"three\": expected a whole number of nodes"), "{err}");
    let err = sim_error("spacing.toml", &CHAIN.replace("spacing_m = 200", "spacing_m = 1e308"));
    assert!(err.contains("topology.spacing_m = 1e308: expected a positive distance in metres, at most 10000"), "{err}");
    let err = sim_error("vegas.toml", &format!("{CHAIN}protocol = \"tcp-vegas\"\nbytes = 10\n"));
    assert!(err.contains("flows[0].protocol = \"tcp-vegas\": expected one of atp-default,"), "{err}");
    assert_eq!(err.matches("expected").count(), 1, "{err}");

    // A sweep point: no empty file prefix, said once.
    let file = tmp(
        "point.toml",
        &format!("{CHAIN}[experiment]\nname = \"point\"\n[[experiment.sweep]]\nkey = \"flows[0].packet_bytes\"\nvalues = [1500, 9000]\n"),
    );
    let (code, err) = meshbed_within(60, &["experiment", "run", file.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("sweep point `flows[0].packet_bytes=9000`: flows[0].packet_bytes = 9000: expected"), "{err}");
    assert!(!err.contains(": :") && err.matches("expected").count() == 1, "{err}");

    // send: a missing file is named once, with its cause once.
    let missing = std::env::temp_dir().join("meshbed-cli-no-such-file.bin");
    let o = meshbed(&["send", missing.to_str().unwrap(), "127.0.0.1:9"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("meshbed-cli-no-such-file.bin").count(), 1, "{err}");
    assert!(err.matches("os error 2").count() <= 1, "{err}");

    // recv --dir FILE: not a directory (not "does not exist").
    let not_dir = tmp("not-a-dir", "x");
    let (code, err) = meshbed_within(20, &["recv", "--listen", "127.0.0.1:0", "--dir", not_dir.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("not a directory") && !err.contains("does not exist"), "{err}");

    // recv --listen takes host names, as send does.
    let (code, err) = meshbed_within(20, &["recv", "--listen", "localhost:0", "--count", "0"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("listening on"), "{err}");
}

#[test]
fn a_duration_without_its_unit_is_refused_naming_the_argument_the_value_and_the_form() {
    for args in [
        &["send", "f.bin", "127.0.0.1:9", "--timeout", "5"][..],
        &["recv", "--linger", "10"],
        &["send", "f.bin", "127.0.0.1:9", "--delay", "fixed:250"],
        &["bench-transfer", "--atp-min-delay", "5"],
        &["emu", "chain.toml", "--duration", "30"],
    ] {
        let o = meshbed(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        let (flag, value) = (args[args.len() - 2], args[args.len() - 1]);
        let bare = value.trim_start_matches("fixed:");
        assert!(err.contains(flag) && err.contains(&format!("`{bare}`")), "{args:?}: {err}");
        assert!(err.contains("needs its unit") && err.contains("2ms, 500us or 10s"), "{args:?}: {err}");
    }
    // The same values with their unit get past argument parsing (emu then
    // fails on the missing scenario file, not on --duration).
    let o = meshbed(&["emu", "/definitely/not/here.toml", "--duration", "30s"]);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("--duration"));
}

/// The emulator refuses, before it makes a namespace (so as any user), what
/// it would otherwise run as something else: DSR (whose source routes the
/// kernel does not forward), per-flow settings its transfers ignore. Each
/// key is named; exit non-zero.
#[test]
fn the_emulator_refuses_dsr_and_ignored_flow_keys_naming_each() {
    let chain = "duration_s = 3.0\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n";
    let cases = [
        ("dsr.toml", format!("{chain}[routing]\nkind = \"dsr\"\n[[flows]]\nsrc = 0\ndst = 2\n"), "routing.kind = \"dsr\""),
        (
            "atp.toml",
            format!("{chain}[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"atp-default\"\nbytes = 1000\n[flows.atp]\nkappa = 0.5\n"),
            "flows[0].atp",
        ),
        // The simulator streams a sender's data (4 MiB held at a time); the
        // emulator's transfers hold it whole, at most 1 GiB.
        (
            "big.toml",
            format!("{chain}[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"atp-default\"\nbytes = 2147483648\n"),
            "flows[0].bytes = 2147483648 (at most 1073741824 bytes of data per transport flow on the emulator",
        ),
    ];
    for (name, text, key) in cases {
        let file = tmp(name, &text);
        for args in [vec!["emu", "run", file.to_str().unwrap()], vec!["emu", file.to_str().unwrap()]] {
            if name != "dsr.toml" && args.len() == 2 {
                continue; // `meshbed emu FILE` runs programs, not the file's flows
            }
            let o = meshbed(&args);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success(), "{args:?}: exit 0");
            assert!(err.contains(&format!("the emulator cannot run {key}")), "{args:?}: {err}");
            assert!(err.contains("nothing was started"), "{args:?}: {err}");
        }
    }
    // Through the experiment layer as well.
    let file = tmp(
        "aodv-exp.toml",
        &format!("{chain}[routing]\nkind = \"dsr\"\n[[flows]]\nsrc = 0\ndst = 2\n[experiment]\nname = \"x\"\nrepetitions = 1\n"),
    );
    let o = meshbed(&["experiment", "run", file.to_str().unwrap(), "--backend", "emu", "--out", "/nonexistent/x"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("the emulator cannot run routing.kind = \"dsr\""), "{err}");
}

/// `--no-relays` leaves the emulator's relays out: with the simulator it
/// is an error naming the flag, and on the emulator an ATP flow (which
/// needs the relays' stamps) is refused by its key before anything starts
/// (no root needed: no namespace is made).
#[test]
fn no_relays_is_refused_with_the_simulator_and_refuses_atp_on_the_emulator() {
    let file = tmp(
        "no-relays.toml",
        &format!(
            "{CHAIN}[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"atp-default\"\nbytes = 1000\n\
             [experiment]\nname = \"x\"\nrepetitions = 1\n"
        ),
    );
    let out = file.with_extension("out");
    let run = |backend: &str| {
        let args = ["experiment", "run", file.to_str().unwrap(), "--backend", backend, "--no-relays", "--no-store"];
        meshbed_within(60, &[&args[..], &["--out", out.to_str().unwrap()]].concat())
    };
    let (code, err) = run("sim");
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("--no-relays: only with --backend emu"), "{err}");
    let (code, err) = run("emu");
    assert_ne!(code, Some(0), "{err}");
    assert!(
        err.contains("the emulator cannot run flows[1].protocol = \"atp-default\" (ATP's rate comes from"),
        "{err}"
    );
    assert!(!err.contains("panicked") && !out.exists(), "{err}");
}

/// The simulator has no kernel: a kernel TCP flow is refused by its key,
/// whichever way the simulator is asked (`meshbed sim`, with a capture, an
/// experiment with the simulator backend), exit non-zero, nothing run.
#[test]
fn the_simulator_refuses_a_kernel_tcp_flow_naming_its_key_and_the_emulator() {
    let text = format!(
        "{CHAIN}[[flows]]\nsrc = 2\ndst = 0\nprotocol = \"kernel-tcp\"\ncongestion_control = \"reno\"\nbytes = 1000\n"
    );
    let expected = "the simulator cannot run flows[1].protocol = \"kernel-tcp\" (the simulator has no kernel TCP; its TCP engines are tcp-tahoe, tcp-reno,";
    let err = sim_error("kernel.toml", &text);
    assert!(err.contains(expected) && err.contains("(run this flow on the emulator: --backend emu)"), "{err}");
    assert!(err.trim_end().ends_with("nothing was started"), "{err}");
    let file = tmp("kernel-pcap.toml", &text);
    let pcap = file.with_extension("pcap.d");
    let (code, err) = meshbed_within(60, &["sim", "--json", "--pcap", pcap.to_str().unwrap(), file.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(expected) && !err.contains("panicked"), "{err}");
    assert!(!pcap.exists(), "nothing was started");
    let file = tmp("kernel-exp.toml", &format!("{text}[experiment]\nname = \"kernel\"\nrepetitions = 1\n"));
    let out = file.with_extension("out");
    let (code, err) = meshbed_within(
        60,
        &[
            "experiment",
            "run",
            file.to_str().unwrap(),
            "--backend",
            "sim",
            "--no-store",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(expected) && !err.contains("panicked"), "{err}");
    assert!(!out.exists());
}

/// An experiment's terminal output ends with the goodput table and the
/// paths of what it wrote, in a few lines; the diagnostic tables are in
/// summary.txt, and on the terminal (above the goodput table) only with
/// `--verbose`, which changes no file.
#[test]
fn an_experiment_prints_the_goodput_table_and_its_files_and_the_diagnostics_only_when_verbose() {
    let file = tmp(
        "glance.toml",
        &format!(
            "{}[[flows]]\nsrc = 0\ndst = 2\nbytes = 100000\npacket_bytes = 1000\n[experiment]\nname = \"glance\"\n\
             repetitions = 2\n[[experiment.sweep]]\nkey = \"flows[0].protocol\"\nvalues = [\"atp-adaptive\", \"tcp-reno\"]\n",
            CHAIN.split("[[flows]]").next().unwrap().replace("duration_s = 1", "duration_s = 3")
        ),
    );
    let run = |out: &std::path::Path, verbose: bool| {
        let mut args = vec!["experiment", "run", file.to_str().unwrap(), "--no-store", "--out", out.to_str().unwrap()];
        if verbose {
            args.push("--verbose");
        }
        let o = meshbed(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let (quiet_dir, verbose_dir) = (file.with_extension("quiet"), file.with_extension("verbose"));
    let (quiet, verbose) = (run(&quiet_dir, false), run(&verbose_dir, true));
    let diagnostics = ["feedback delay, receiver to sender", "coefficient of variation as sent and at the sender"];
    let summary_txt = std::fs::read_to_string(quiet_dir.join("summary.txt")).unwrap();
    for title in diagnostics {
        assert!(summary_txt.contains(title), "summary.txt lacks {title}: {summary_txt}");
        assert!(!quiet.contains(title), "{title} printed without --verbose: {quiet}");
        assert!(verbose.contains(title), "{title} missing with --verbose: {verbose}");
    }
    // The two feedback-gap tables are one.
    assert_eq!(summary_txt.matches("coefficient of variation").count(), 1, "{summary_txt}");
    assert!(quiet.lines().count() < 30, "{} lines: {quiet}", quiet.lines().count());
    for (text, dir) in [(&quiet, &quiet_dir), (&verbose, &verbose_dir)] {
        let header = text.find("goodput Mb/s").unwrap_or_else(|| panic!("no goodput table: {text}"));
        for title in diagnostics {
            assert!(text.find(title).is_none_or(|at| at < header), "{title} after the goodput table: {text}");
        }
        for row in ["flows[0].protocol=atp-adaptive", "flows[0].protocol=tcp-reno"] {
            assert!(text[header..].contains(row), "{row} missing: {text}");
        }
        // Every table, summary.txt and summary figure written, by its path,
        // after the goodput table.
        let mut listed = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            let listable = [".csv", ".txt", ".toml"].iter().any(|x| name.ends_with(x))
                || (name.ends_with(".png") && !name.starts_with("trace_"));
            if listable {
                let at = text
                    .find(path.to_str().unwrap())
                    .unwrap_or_else(|| panic!("{} not listed: {text}", path.display()));
                assert!(at > header, "{name} listed before the goodput table: {text}");
                listed += 1;
            }
        }
        assert!(text.contains(".png"), "no figure listed: {text}");
        assert!(!text.contains("summary.txt   (and"), "{text}");
        for name in ["flows.csv", "summary.csv", "summary.txt"] {
            assert!(dir.join(name).exists(), "{name} not written");
        }
        assert!(listed >= 5, "{listed} paths: {text}");
    }
    // The verbose run printed the diagnostics as summary.txt has them, and
    // wrote the same files.
    let verbose_txt = std::fs::read_to_string(verbose_dir.join("summary.txt")).unwrap();
    assert_eq!(summary_txt, verbose_txt);
    for line in summary_txt.lines().filter(|l| !l.is_empty()) {
        assert!(verbose.contains(line), "{line:?} not printed with --verbose: {verbose}");
    }
    for name in ["flows.csv", "summary.csv", "network.csv"] {
        let read = |d: &std::path::Path| std::fs::read(d.join(name)).unwrap();
        assert_eq!(read(&quiet_dir), read(&verbose_dir), "{name} differs with --verbose");
    }
    let _ = (std::fs::remove_dir_all(&quiet_dir), std::fs::remove_dir_all(&verbose_dir));
}
